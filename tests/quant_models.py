"""Small models written the way migrator leaves them: every op in `forward` is a named module.

Sizes are parameters: the tests use tiny ones, `benchmarks/bench_quant.py` builds a
ResNet-18-sized `ResNetish` and a ViT-Tiny-sized `ViTish` from the same classes.
"""

from __future__ import annotations

import torch
from torch import nn

from migrator.nn import Add, Concat, MatMul, Mean, Mul


class BasicBlock(nn.Module):
    """ResNet basic block: conv+bn+relu, conv+bn, residual `self.add`, relu."""

    def __init__(self, in_channels: int, channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.add = Add()
        self.relu_1 = nn.ReLU()
        self.downsample = None
        if stride != 1 or in_channels != channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, channels, 1, stride, bias=False), nn.BatchNorm2d(channels)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu_1(self.add(out, shortcut))


class CatHead(nn.Module):
    """Two 1x1 branches joined by `self.cat`, whose result `self.cat_1` joins with the input."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.branch_a = nn.Conv2d(channels, channels // 2, 1)
        self.branch_b = nn.Conv2d(channels, channels // 2, 1)
        self.cat = Concat(dim=1)
        self.cat_1 = Concat(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cat_1(self.cat(self.branch_a(x), self.branch_b(x)), x)


class ResNetish(nn.Module):
    """Stem, `len(widths)` stages of `blocks` basic blocks, a nested-cat head, pool and fc."""

    def __init__(
        self,
        widths: tuple[int, ...] = (8,),
        blocks: int = 2,
        num_classes: int = 10,
        stem_kernel: int = 3,
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(
            3, widths[0], stem_kernel, 2 if stem_kernel > 3 else 1, stem_kernel // 2, bias=False
        )
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        in_channels = widths[0]
        for index, width in enumerate(widths, start=1):
            stride = 1 if index == 1 else 2
            stage = [BasicBlock(in_channels, width, stride)]
            stage += [BasicBlock(width, width) for _ in range(blocks - 1)]
            setattr(self, f"layer{index}", nn.Sequential(*stage))
            in_channels = width
        self.stages = len(widths)
        self.head = CatHead(in_channels)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(2 * in_channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for index in range(1, self.stages + 1):
            x = getattr(self, f"layer{index}")(x)
        return self.fc(self.flatten(self.avgpool(self.head(x))))


class Attention(nn.Module):
    """Multi-head self-attention with `self.matmul`, `self.mul` and `nn.Softmax` modules."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.matmul = MatMul()
        self.mul = Mul()
        self.softmax = nn.Softmax(dim=-1)
        self.matmul_1 = MatMul()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, dim = x.shape
        qkv = (
            self.qkv(x)
            .reshape(batch, tokens, 3, self.heads, dim // self.heads)
            .permute(2, 0, 3, 1, 4)
        )
        q, k, v = qkv[0], qkv[1], qkv[2]
        attention = self.softmax(self.mul(self.matmul(q, k.transpose(-2, -1)), self.scale))
        out = self.matmul_1(attention, v).transpose(1, 2).reshape(batch, tokens, dim)
        return self.proj(out)


class ViTBlock(nn.Module):
    """Pre-norm transformer block: attention and MLP, each with a residual `self.add`."""

    def __init__(self, dim: int, heads: int, mlp_ratio: int = 2) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.add = Add()
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.gelu = nn.GELU()
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)
        self.add_1 = Add()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.add(x, self.attn(self.norm1(x)))
        return self.add_1(x, self.fc2(self.gelu(self.fc1(self.norm2(x)))))


class ViTish(nn.Module):
    """Patch embedding, learned position embedding, `depth` blocks, mean-pooled linear head."""

    def __init__(
        self,
        image: int = 16,
        patch: int = 4,
        dim: int = 32,
        depth: int = 1,
        heads: int = 2,
        num_classes: int = 10,
    ) -> None:
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, (image // patch) ** 2, dim))
        self.add = Add()
        self.blocks = nn.Sequential(*[ViTBlock(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.mean = Mean(dim=1)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.add(self.patch_embed(x).flatten(2).transpose(1, 2), self.pos_embed)
        return self.head(self.mean(self.norm(self.blocks(tokens))))


@torch.library.custom_op("migrator_tests::mystery", mutates_args=())
def mystery(x: torch.Tensor) -> torch.Tensor:
    """An op torch.export can capture but the ONNX exporter has no translation for."""
    return x * 2


@mystery.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class Mystery(nn.Module):
    """Runs `mystery`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return mystery(x)


class MysteryNet(nn.Module):
    """A linear layer followed by `self.odd`, a module running an op ONNX cannot express."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.odd = Mystery()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.odd(self.fc(x))


def randomize_batchnorm(model: nn.Module, seed: int = 0) -> nn.Module:
    """Give every BatchNorm non-trivial statistics, so folding it into conv is visible."""
    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            shape = module.running_mean.shape
            module.running_mean.copy_(0.1 * torch.randn(shape, generator=generator))
            module.running_var.copy_(0.5 + torch.rand(shape, generator=generator))
            module.weight.data.copy_(0.5 + torch.rand(shape, generator=generator))
            module.bias.data.copy_(0.1 * torch.randn(shape, generator=generator))
    return model
