"""A helper whose `training` every caller in its file passes `self.training` keeps its dropout
when another file of the package imports it under another name and passes something else
(`mode_params`, `mentions.PackageCalls.renamed`): migrated, that caller's outputs in training
mode are the original's (main made `Net` call a `Mix` whose dropout follows `Net.training`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from equivalence import load_sides

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


def _write(root: Path) -> None:
    package = root / "modepkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "layers.py").write_text(LAYERS)
    (package / "net.py").write_text(NET)


def test_renamed_caller_keeps_its_training(tmp_path):
    torch = pytest.importorskip("torch")
    for side in ("before", "after"):
        _write(tmp_path / side)
    assert main(["fix", str(tmp_path / "after" / "modepkg")]) in (0, 1)
    assert "F.dropout(" in (tmp_path / "after" / "modepkg" / "layers.py").read_text()
    outputs = []
    for side in load_sides(tmp_path / "before", tmp_path / "after", "net", "modepkg"):
        net = side.Net().train()
        torch.manual_seed(0)
        outputs.append(net(torch.ones(2, 4)))
    assert torch.equal(outputs[0], outputs[1])
