"""A held module built by a module-level function for its holder (torchvision's
`retinanet_resnet50_fpn_v2`: `head = RetinaNetHead(...)`, `head.regression_head._loss_type =
"giou"`, `RetinaNet(..., head=head)`, whose `__init__` stores its `head` argument once): with
the run-time evidence that every built `Net` holds a `Head` there, the builder's instance counts
as made for its holder, so `Head.loss`, which `Net`'s forward calls, is on `Head`'s forward path,
and the plain `Coder` its `loss` hands to a helper becomes a module (MIG005). A builder that
keeps its instance too refuses it, as before."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from migrator import runner
from migrator.config import Settings
from migrator.evidence import Evidence, Seen

torch = pytest.importorskip("torch")

SOURCE = """import torch
import torch.nn as nn
from torch import Tensor


class Coder:
    def __init__(self, scale: float):
        self.scale = scale

    def encode(self, x: Tensor) -> Tensor:
        return torch.log1p(x.abs()) * self.scale


def box_loss(x: Tensor, coder: Coder) -> Tensor:
    return coder.encode(x)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.coder = Coder(0.5)
        self.kind = "l1"

    def forward(self, x):
        return self.fc(x)

    def loss(self, x):
        return box_loss(torch.relu(x), self.coder)


class Net(nn.Module):
    def __init__(self, head=None):
        super().__init__()
        if head is None:
            head = Head()
        self.head = head

    def forward(self, x):
        return self.head.loss(self.head(x))


def build():
    head = Head()
    head.coder.scale = 2.0
    return Net(head=head)
"""


def _run(tmp_path, source: str, rewrite: bool):
    path = tmp_path / "net.py"
    path.write_text(source, encoding="utf-8")
    evidence = Evidence()
    evidence.add((str(path.resolve()), "Net", "head"), Seen("net.Head", True, False), "t")
    (outcome,) = runner.run([str(path)], Settings(), rewrite=rewrite, evidence=evidence)
    return outcome


def _load(tmp_path, name: str, text: str):
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_a_builder_handing_its_instance_to_the_holder_alone_counts_as_the_holder(tmp_path):
    outcome = _run(tmp_path, SOURCE, rewrite=True)
    codes = sorted({f.code for f in outcome.findings})
    assert codes == ["MIG001", "MIG002", "MIG005"], outcome.findings
    new = outcome.new_text
    assert "class Coder(nn.Module):" in new
    assert "return self.mul(torch.log1p(self.abs(x)), self.scale)" in new
    before = _load(tmp_path, "held_builder_before", SOURCE)
    after = _load(tmp_path, "held_builder_after", new)
    torch.manual_seed(0)
    original = before.build()
    migrated = after.build()
    migrated.load_state_dict(original.state_dict())
    assert list(migrated.state_dict()) == list(original.state_dict())
    x = torch.randn(3, 4)
    assert torch.equal(original(x), migrated(x))


def test_a_builder_keeping_its_instance_refuses_it(tmp_path):
    kept = SOURCE.replace("    return Net(head=head)\n", "    return Net(head=head), head\n")
    findings = _run(tmp_path, kept, rewrite=False).findings
    reported = [f.message for f in findings if f.code == "MIG115"]
    assert any("names `Head` outside its holders' `__init__`" in m for m in reported), reported
    assert not [f for f in findings if f.code == "MIG005"]


CODERS = """import torch
from torch import Tensor


class Coder:
    def __init__(self, scale: float):
        self.scale = scale

    def encode(self, x: Tensor) -> Tensor:
        return torch.sigmoid(x) * self.scale


def loss(x: Tensor, coder: Coder) -> Tensor:
    return coder.encode(x)
"""

ONE = """import torch.nn as nn

from .coders import Coder


class One(nn.Module):
    def __init__(self):
        super().__init__()
        self.coder = Coder(0.5)

    def forward(self, x):
        return self.coder.encode(x)
"""

TWO = """import torch.nn as nn

from .coders import Coder, loss


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.coder = Coder(2.0)

    def forward(self, x):
        return loss(loss(x, self.coder), self.coder)
"""


def test_a_holder_of_another_file_that_only_hands_its_instance_on_is_counted(tmp_path):
    """`two.py` never calls a method of its `Coder`, but hands it twice to `loss`, which calls
    `encode`: read as a holder, its instance runs `encode` twice per forward (MIG110), so
    `encode`'s ops are not made modules that would run twice (unread, the call in `loss` was
    one on an unknown object, and the class stayed plain, `one.py`'s call reported)."""
    package = tmp_path / "pkg"
    package.mkdir()
    for name, text in {"__init__": "", "coders": CODERS, "one": ONE, "two": TWO}.items():
        (package / f"{name}.py").write_text(text, encoding="utf-8")
    outcomes = runner.run([str(package)], Settings(), rewrite=False)
    coders = [o for o in outcomes if o.path.name == "coders.py"]
    assert coders, outcomes
    found = [(f.line, f.code) for f in coders[0].findings]
    assert found == [(10, "MIG110"), (10, "MIG110")], coders[0].findings
    assert (package / "two.py").read_text(encoding="utf-8") == TWO
