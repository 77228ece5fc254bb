"""`migrator.validate`: reused leaf modules (with call counts and every path) and ops without a
module (with their source line), from one forward run and one trace."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from migrator import validate  # noqa: E402
from migrator.nn import Add  # noqa: E402


def _line_of(marker: str) -> int:
    return next(i for i, text in enumerate(open(__file__, encoding="utf-8"), 1) if marker in text)


class Block(nn.Module):
    def __init__(self, act: nn.Module):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 1)
        self.bn = nn.BatchNorm2d(2)
        self.act = act

    def forward(self, x):
        y = self.act(self.bn(self.conv(x)))
        return F.relu(y + x)  # marker: functional ops


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        shared = nn.ReLU()
        self.blocks = nn.Sequential(Block(shared), Block(shared))
        self.head = nn.Conv2d(2, 2, 1)

    def forward(self, x):
        x = self.head(self.blocks(x))
        return self.head(x).softmax(1)  # marker: head again


def test_reused_modules_and_functional_ops_are_reported(capsys):
    result = validate(Net(), torch.randn(2, 2, 3, 3))
    reused = {m.paths: (m.cls, m.calls, m.stateful) for m in result.reused_modules}
    assert reused == {
        ("blocks.0.act", "blocks.1.act"): ("ReLU", 2, False),
        ("head",): ("Conv2d", 2, True),
    }
    line = _line_of("marker: functional ops")
    ops = [(op.call, op.module, op.owner, op.source) for op in result.functional_ops]
    assert ops == [
        ("+", "Add", "blocks.0", f"tests/test_validate.py:{line}"),
        ("torch.nn.functional.relu", "ReLU", "blocks.0", f"tests/test_validate.py:{line}"),
        ("+", "Add", "blocks.1", f"tests/test_validate.py:{line}"),
        ("torch.nn.functional.relu", "ReLU", "blocks.1", f"tests/test_validate.py:{line}"),
        (".softmax()", "Softmax", "", f"tests/test_validate.py:{_line_of('marker: head again')}"),
    ]
    assert result.functional_ops[0].code == "return F.relu(y + x)  # marker: functional ops"
    assert not result.ok
    printed = capsys.readouterr().out
    assert "`blocks.0.act`, `blocks.1.act` (ReLU) called 2 times" in printed
    assert f"tests/test_validate.py:{line}: + in `blocks.0` -> Add" in printed
    assert json.loads(result.to_json())["ok"] is False


class Migrated(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 1)
        self.act = nn.ReLU()
        self.add = Add()

    def forward(self, x):
        return self.add(self.act(self.conv(x)), x)


def test_migrated_model_is_ok(capsys):
    result = validate(Migrated(), torch.randn(1, 2, 2, 2), verbose=False)
    assert result.ok and result.modules_called == 3 and result.graph_nodes == 5
    assert capsys.readouterr().out == ""
    assert "ok: every op" in str(result)


def test_validate_changes_no_state():
    model = Net().train()
    x = torch.randn(2, 2, 3, 3)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    validate(model, x, verbose=False)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert torch.equal(rng, torch.get_rng_state())


class DataDependent(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()

    def forward(self, x):
        if x.sum() > 0:
            x = self.act(x)
        return self.act(x)


def test_untraceable_model_still_reports_reused_modules():
    result = validate(DataDependent(), torch.ones(3), verbose=False)
    assert [(m.paths, m.calls) for m in result.reused_modules] == [(("act",), 2)]
    assert "control flow" in result.trace_error and "concrete_args" in result.trace_error
    assert "ops not listed" in str(result)
