"""Building blocks shared by the example models."""

import torch.nn as nn
import torch.nn.functional as F


class ConvBnAct(nn.Module):
    """Conv + BatchNorm + an activation given by name."""

    def __init__(self, cin, cout, kernel=3, stride=1, groups=1, act="relu"):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = act

    def forward(self, x):
        x = self.bn(self.conv(x))
        if self.act == "relu":
            return F.relu(x, inplace=True)
        if self.act == "hardswish":
            return F.hardswish(x)
        return x


class SqueezeExcite(nn.Module):
    """Channel attention: global pool, two 1x1 convs, hard-sigmoid gate."""

    def __init__(self, channels, reduction=4):
        super().__init__()
        self.reduce = nn.Conv2d(channels, channels // reduction, 1)
        self.expand = nn.Conv2d(channels // reduction, channels, 1)

    def forward(self, x):
        scale = F.adaptive_avg_pool2d(x, 1)
        scale = F.relu(self.reduce(scale))
        scale = F.hardsigmoid(self.expand(scale))
        return x * scale
