"""A MobileNetV3-style network: inverted residuals with hardswish and squeeze-excite."""

import torch
from torch import nn
import torch.nn.functional as F

from .layers import ConvBnAct, SqueezeExcite


class InvertedResidual(nn.Module):
    def __init__(self, cin, hidden, cout, stride, use_se):
        super().__init__()
        self.use_res = stride == 1 and cin == cout
        self.expand = ConvBnAct(cin, hidden, 1, act="hardswish")
        self.depthwise = ConvBnAct(hidden, hidden, 3, stride, groups=hidden, act="hardswish")
        self.se = SqueezeExcite(hidden) if use_se else nn.Identity()
        self.project = ConvBnAct(hidden, cout, 1, act="none")

    def forward(self, x):
        out = self.project(self.se(self.depthwise(self.expand(x))))
        if self.use_res:
            return x + out
        return out


class MobileNetV3(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = ConvBnAct(3, 16, 3, 2, act="hardswish")
        self.blocks = nn.Sequential(
            InvertedResidual(16, 32, 16, 1, True),
            InvertedResidual(16, 48, 24, 2, False),
            InvertedResidual(24, 72, 24, 1, True),
        )
        self.head = nn.Linear(24, num_classes)
        self.dropout_p = 0.2

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = x.mean((2, 3))
        x = F.hardswish(x)
        x = F.dropout(x, p=self.dropout_p, training=self.training)
        return self.head(x)


def mobilenet_tiny():
    """The model and an example input, for `migrator verify`."""
    return MobileNetV3(), (torch.randn(2, 3, 32, 32),)
