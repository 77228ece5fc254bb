import torch.nn as nn
import torch.nn.functional as F

from ..layers import ConvBN


class Gated(nn.Module):
    """Data-dependent control flow: neither torch.fx nor torch.export can capture it."""

    def __init__(self):
        super().__init__()
        self.body = ConvBN(3, 3)

    def forward(self, x):
        y = self.body(x)
        if y.sum() > 0:
            y = F.relu(y)
        return y + x


class ShapeSwitch(nn.Module):
    """Shape-dependent control flow: torch.fx cannot trace it, torch.export can."""

    def __init__(self):
        super().__init__()
        self.body = ConvBN(3, 3)

    def forward(self, x):
        y = self.body(x)
        if x.shape[-1] > 4:
            y = F.hardswish(y)
        return y - x
