"""A helper whose `training` every caller in its file passes `self.training` keeps its dropout
when another file of the package imports it under another name and passes something else
(`mode_params`, `mentions.PackageCalls.renamed`): migrated, that caller's outputs in training
mode are the original's (main made `Net` call a `Mix` whose dropout follows `Net.training`)."""

from __future__ import annotations

import pytest
from packages import load_sides, write_package

from migrator.cli import main

LAYERS = """import torch
import torch.nn as nn
import torch.nn.functional as F


def mix(x, training: bool):
    return F.dropout(torch.tanh(x), 0.5, training)


class Block(nn.Module):
    def forward(self, x):
        return mix(x, self.training)
"""
NET = """import torch.nn as nn

from .layers import mix as mx


class Net(nn.Module):
    def forward(self, x):
        return mx(x, False)
"""


def test_renamed_caller_keeps_its_training(tmp_path):
    torch = pytest.importorskip("torch")
    for side in ("before", "after"):
        write_package(tmp_path / side, {"layers.py": LAYERS, "net.py": NET}, "modepkg")
    assert main(["fix", str(tmp_path / "after" / "modepkg")]) in (0, 1)
    assert "F.dropout(" in (tmp_path / "after" / "modepkg" / "layers.py").read_text()
    outputs = []
    for side in load_sides(tmp_path / "before", tmp_path / "after", "net", "modepkg"):
        net = side.Net().train()
        torch.manual_seed(0)
        outputs.append(net(torch.ones(2, 4)))
    assert torch.equal(outputs[0], outputs[1])
