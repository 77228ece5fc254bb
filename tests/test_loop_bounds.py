"""Loops bounded by a list `__init__` fixes: the copies follow the original while the run stays
within the list, and a run past it fails in the migrated model as it does in the original (an
`IndexError`, never a silent result); what could let a loop run past its copies is refused."""

from __future__ import annotations

import pytest
from fixture_cases import import_path

from migrator.findings import serves_every_iteration
from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project

INDEXED = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [torch.full((4,), 0.5 * k) for k in range(3)]
        self.bias = (1.0, 2.0, 3.0)

    def forward(self, x, parts: int):
        outs = []
        for k, t in enumerate(torch.chunk(x, parts, dim=0)):
            s = self.scales[k]
            outs.append(torch.sigmoid(t) * s)
        for t, b in zip(torch.chunk(x, parts, dim=0), self.bias):
            outs.append(torch.tanh(t) + b)
        return torch.cat(outs, dim=0)
"""


def _migrate(tmp_path, source: str, name: str):
    new, findings, _ = fix_text(source, f"{name}.py", Project())
    (tmp_path / f"{name}_before.py").write_text(source)
    (tmp_path / f"{name}_after.py").write_text(new)
    before = import_path(tmp_path / f"{name}_before.py", f"{name}_before")
    after = import_path(tmp_path / f"{name}_after.py", f"{name}_after")
    return new, findings, before, after


def test_copies_follow_the_original_and_a_longer_run_fails_loudly(tmp_path):
    torch = pytest.importorskip("torch")
    new, findings, before, after = _migrate(tmp_path, INDEXED, "indexed")
    assert "self.sigmoid[k](t)" in new and "self.add[i](self.tanh[i](t), b)" in new
    assert not [f for f in findings if f.code == "MIG105"]
    original, migrated = before.Net(), after.Net()
    x = torch.randn(6, 4)
    for parts in (1, 2, 3):
        for train in (True, False):
            original.train(train)
            migrated.train(train)
            assert torch.equal(original(x, parts), migrated(x, parts))
    with pytest.raises(IndexError):
        original(x, 6)
    with pytest.raises(IndexError):
        migrated(x, 6)


REFUSED = """
import contextlib

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [0.5, 1.0]
        self.grown = [0.5, 1.0]
        self.sliced = [0.5, 1.0]

    def more(self):
        self.grown.append(2.0)
        self.sliced[2:] = [3.0]

    def forward(self, x, parts: int):
        outs = []
        for k, t in enumerate(torch.chunk(x, parts, dim=0)):
            if k > 5:
                continue
            outs.append(torch.sigmoid(t) * self.scales[k])
        for t, s in zip(torch.chunk(x, parts, dim=0), self.grown):
            outs.append(torch.tanh(t))
        for t, s in zip(torch.chunk(x, parts, dim=0), self.sliced):
            outs.append(torch.exp(t))
        with contextlib.suppress(IndexError):
            for k, t in enumerate(torch.chunk(x, parts, dim=0)):
                outs.append(torch.sigmoid(t) * self.scales[k])
        scales = self.scales
        scales = list(scales)
        for t, s in zip(torch.chunk(x, parts, dim=0), scales):
            outs.append(torch.relu(t))
        return outs
"""


def test_what_could_outrun_the_copies_is_refused():
    """No loop here gets copies: those zipped with a list that may grow keep MIG105, and those
    over run-time data alone get one module serving every iteration, which the finding says."""
    new, findings, _ = fix_text(REFUSED, "refused.py", Project())
    loops = sorted(
        f.message.split("cannot index copies: ")[1] for f in findings if f.code == "MIG105"
    )
    assert loops == [
        "`self.grown` may grow in `more`; left as is",
        "`self.sliced` may grow in `more`; left as is",
    ]
    for op in ("torch.tanh(t)", "torch.exp(t)"):
        assert op in new  # each loop left as it was
    assert "ModuleList" not in new
    shared = sorted(f.op for f in findings if serves_every_iteration(f))
    assert shared == ["*", "*", "torch.relu", "torch.sigmoid", "torch.sigmoid"]


RUN_TIME = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x, batch, steps: int):
        for t in batch.tensors:
            x = torch.tanh(t)
        for _ in range(steps):
            x = torch.sigmoid(x)
        n = len(batch.sizes)
        for k in range(n):
            x = torch.exp(x)
        return x
"""


def test_a_run_time_trip_count_says_what_it_depends_on():
    """Each op becomes one module serving every iteration, and `check` reports its calls in
    the loop (MIG105) with what the trip count depends on."""
    new, first, _ = fix_text(RUN_TIME, "run_time.py", Project())
    assert [f.op for f in first if serves_every_iteration(f)] == [
        "torch.tanh",
        "torch.sigmoid",
        "torch.exp",
    ]
    findings = fix_text(new, "run_time.py", Project()).findings
    assert [f.code for f in findings] == ["MIG105"] * 3
    why = [f.message.split("depends on the input: ")[1].split(";")[0] for f in findings]
    assert why == [
        "the number of items in `batch.tensors`, of argument `batch` of `forward`",
        "the value of argument `steps` of `forward`",
        "`n` comes from argument `batch` of `forward` (`n = len(batch.sizes)`)",
    ]
