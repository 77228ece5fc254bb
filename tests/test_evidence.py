"""`fix --evidence`: the verify targets' built models prove what the static analysis cannot (a
reused module built from a constructor argument is stateless; an in-place op's tensor is
fresh), on the fixture project `fixtures/evidence`; a copy made on that evidence fails loudly
where the module it copies holds weights."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from equivalence import assert_same_outputs, loaded_pair
from fixture_cases import FIXTURES, expected_findings, import_path, tree_copy
from packages import forget

from migrator.cli import main
from migrator.evidence import Evidence, Seen

torch = pytest.importorskip("torch")

TREE = FIXTURES / "evidence"
BEFORE = TREE / "pkg" / "blocks.before.py"
AFTER = TREE / "pkg" / "blocks.after.py"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The fixture project in a temporary folder (the current one), `blocks.py` as before."""
    work = tree_copy(TREE, tmp_path / "evidence")
    monkeypatch.chdir(work)
    return work


def test_fix_with_evidence_rewrites_what_the_targets_prove(project, capsys):
    assert main(["fix", "--evidence", "pkg"]) == 1
    out = capsys.readouterr().out
    assert (project / "pkg" / "blocks.py").read_text(encoding="utf-8") == AFTER.read_text(
        encoding="utf-8"
    )
    printed = [line.strip() for line in out.splitlines()]
    for line in expected_findings(BEFORE):
        assert f"pkg/blocks.py:{line}" in printed


def test_second_fix_with_evidence_changes_nothing(project, capsys):
    assert main(["fix", "--evidence", "pkg"]) == 1
    capsys.readouterr()
    assert main(["fix", "--evidence", "--check", "pkg"]) == 0
    assert (project / "pkg" / "blocks.py").read_text(encoding="utf-8") == AFTER.read_text(
        encoding="utf-8"
    )


def test_without_evidence_reused_and_inplace_stay_refused(project, capsys):
    assert main(["fix", "pkg"]) == 1
    out = capsys.readouterr().out
    text = (project / "pkg" / "blocks.py").read_text(encoding="utf-8")
    assert "stateless_copy" not in text and "out += identity" in text
    assert "pkg/blocks.py:21:15: MIG104 `self.act` is called at 2 sites" in out
    assert "pkg/blocks.py:24:9: MIG108 `+=` on `out`" in out


def test_migrated_model_is_bit_exact():
    before = import_path(BEFORE, "evidence_before")
    after = import_path(AFTER, "evidence_after")
    original, migrated = loaded_pair(before.tiny_net, after.tiny_net)
    x = torch.randn(2, 4, 8, 8)
    for train in (False, True):
        original.train(train)
        migrated.train(train)
        with torch.no_grad():
            expected, got = original(x.clone()), migrated(x.clone())
        assert len(expected) == 2  # the detector's scaled logits and boxes
        assert_same_outputs(expected, got)
    assert torch.equal(original[0].bn2.running_mean, migrated[0].bn2.running_mean)


def test_copy_of_a_module_with_weights_fails_at_construction():
    """An instantiation no target built: the split copy would untie the PReLU's weight."""
    after = import_path(AFTER, "evidence_after_untied")
    with pytest.raises(TypeError, match="this PReLU holds some: a copy would untie its weights"):
        after.Block(4, act_layer=lambda inplace: torch.nn.PReLU())
    assert isinstance(after.Block(4, act_layer=torch.nn.Hardswish).act_1, torch.nn.Hardswish)


def test_ops_module_holds_the_guard(project, capsys):
    """With `ops_module`, the copy's guard comes from the op-module file written in the
    project, and raises there too."""
    config = project / "pyproject.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "[tool.migrator]", '[tool.migrator]\nops_module = "pkg.quant_ops"'
        ),
        encoding="utf-8",
    )
    assert main(["fix", "--evidence", "pkg"]) == 1
    capsys.readouterr()
    text = (project / "pkg" / "blocks.py").read_text(encoding="utf-8")
    assert "from pkg.quant_ops import Add, Mul, Sub, stateless_copy" in text
    forget()  # another test's package of the same name may be imported
    sys.path.insert(0, str(project))
    try:
        blocks = import_path(project / "pkg" / "blocks.py", "pkg.blocks")
        assert blocks.stateless_copy.__module__ == "pkg.quant_ops"
        with pytest.raises(TypeError, match="untie its weights"):
            blocks.Block(4, act_layer=lambda inplace: torch.nn.PReLU())
    finally:
        sys.path.remove(str(project))
        forget()


def test_observe_records_classes_state_and_freshness():
    from migrator.prove.evidence import observe

    blocks = import_path(BEFORE, "evidence_observed")
    evidence = observe(blocks.tiny_net(), "t")
    path = str(Path(blocks.__file__).resolve())
    block = evidence.seen[(path, "Block", "act")]
    assert block == {
        Seen("torch.nn.ReLU", False, False, "tensor"): {"t"},
        Seen("torch.nn.ReLU6", False, False, "tensor"): {"t"},
    }
    assert evidence.stateless(path, "Block", "act") == ["t"]
    assert evidence.output(path, "Block", "bn2") == ("fresh", ["t"])
    assert evidence.output(path, "Block", "act") == ("input", ["t"])  # in place: its input
    assert evidence.output(path, "Gated", "norm") == ("input", ["t"])  # nn.Identity
    assert evidence.output(path, "Residual", "drop_path") == ("", [])  # the models did not run
    assert evidence.stateful(path, "Gated", "gate") == ["torch.nn.PReLU"]
    assert evidence.stateless(path, "Unbuilt", "act") == []
    assert evidence.returns(path, "Detector", "neck") == ("tensor", ["t"])
    assert evidence.returns(path, "Detector", "head") == ("tuple", ["t"])  # a `Predictor`
    assert evidence.returns(path, "Tapped", "tap") == ("", [])  # nn.Identity: its input
    again = Evidence.from_json(evidence.to_json())
    assert again.seen == evidence.seen


def test_observe_records_what_calls_return_in_each_mode():
    """A copy of the model runs once in each mode: the drop path returns its input in eval
    mode (and at rate 0), a new tensor in training; `Kept` returns a tensor it keeps."""
    from migrator.prove.evidence import observe

    blocks = import_path(BEFORE, "evidence_calls")
    model = blocks.tiny_net()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(2, 4, 8, 8)
    evidence = observe(model, "t", inputs=lambda train: (x,))
    path = str(Path(blocks.__file__).resolve())
    assert {seen.calls for seen in evidence.seen[(path, "Residual", "drop_path")]} == {
        "eval:input,train:new",  # rate 0.5
        "eval:input,train:input",  # rate 0
    }
    assert evidence.output(path, "Residual", "drop_path") == ("input", ["t"])
    assert evidence.output(path, "Residual", "conv") == ("fresh", ["t"])
    assert {s.calls for s in evidence.seen[(path, "Residual", "tail")]} == {
        "eval:alias,train:alias"
    }
    assert evidence.output(path, "Residual", "tail") == ("", [])
    assert evidence.output(path, "Residual", "gate") == ("fresh", ["t"])  # None: never called
    assert evidence.stateless(path, "Residual", "gate") == []  # None proves no split
    assert Evidence.from_json(evidence.to_json()).seen == evidence.seen
    assert model.training and all(torch.equal(v, state[k]) for k, v in model.state_dict().items())


def test_a_call_proves_only_in_both_modes():
    evidence = Evidence()
    key = (str(Path("net.py").resolve()), "Net", "drop")
    evidence.add(key, Seen("pkg.Drop", False, False, "", "eval:input"), "a")
    assert evidence.output("net.py", "Net", "drop") == ("", [])  # training never ran
    evidence = Evidence()
    evidence.add(key, Seen("pkg.Drop", False, False, "", "eval:new,train:new"), "a")
    assert evidence.output("net.py", "Net", "drop") == ("fresh", ["a"])
    evidence.add(key, Seen("pkg.Drop", False, False, "", "eval:input,train:new"), "b")
    assert evidence.output("net.py", "Net", "drop") == ("input", ["a", "b"])
    evidence.add(key, Seen("pkg.View", False, False, "", "eval:alias,train:new"), "c")
    assert evidence.output("net.py", "Net", "drop") == ("", [])


def test_a_hooked_module_proves_only_by_its_calls():
    """A forward hook may return anything: the class proves nothing, the calls still do."""
    from migrator.prove.evidence import observe

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.keep = torch.nn.Identity()
            self.keep.kept = torch.ones(2)
            self.keep.register_forward_hook(lambda module, args, out: module.kept)
            self.copy = torch.nn.Identity()
            self.copy.register_forward_hook(lambda module, args, out: out * 2)

        def forward(self, x):
            return self.copy(self.keep(x))

    net = Net()
    path = str(Path(__file__).resolve())
    built = observe(net, "t")
    assert built.output(path, Net.__qualname__, "keep") == ("", [])
    ran = observe(net, "t", inputs=lambda train: (torch.zeros(2),))
    assert ran.output(path, Net.__qualname__, "keep") == ("", [])  # a tensor it keeps
    assert ran.output(path, Net.__qualname__, "copy") == ("fresh", ["t"])


def test_a_sequential_is_fresh_when_its_last_module_is():
    from migrator.prove.evidence import _fresh

    nn = torch.nn
    assert _fresh(nn.Sequential(nn.ReLU(inplace=True), nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1)))
    assert not _fresh(nn.Sequential(nn.Conv2d(1, 1, 1), nn.ReLU(inplace=True)))
    assert not _fresh(nn.Sequential(nn.Conv2d(1, 1, 1), nn.Identity()))
    assert not _fresh(nn.Sequential())
    assert _fresh(nn.Sequential(nn.Conv2d(1, 1, 1), nn.Sequential(nn.ReLU())))

    class ConvNorm(
        nn.Sequential
    ):  # keeps Sequential's forward (torchvision's Conv2dNormActivation)
        pass

    class Reversed(nn.Sequential):
        def forward(self, x):
            return x

    assert _fresh(nn.Sequential(ConvNorm(nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1))))
    assert not _fresh(Reversed(nn.Conv2d(1, 1, 1)))


def test_what_a_module_returns():
    """Only what is proven: torch.nn classes the catalog knows, `nn.Sequential`'s forward by
    its last module, a project class's forward by its source and the modules it holds."""
    from migrator.prove.evidence import returns

    nn = torch.nn
    blocks = import_path(BEFORE, "evidence_returns")

    def of(module: torch.nn.Module) -> str:
        return returns(module, {})

    assert of(nn.Conv2d(1, 1, 1)) == of(nn.ReLU(inplace=True)) == "tensor"
    assert of(nn.Sequential(nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1))) == "tensor"
    assert of(nn.Identity()) == of(nn.Sequential()) == ""
    assert of(nn.Sequential(nn.Conv2d(1, 1, 1), nn.Identity())) == ""
    assert of(nn.LSTM(1, 1)) == ""  # a tuple holding a tuple: not in the sound list
    assert of(blocks.Predictor(4)) == "tuple"
    assert of(blocks.Block(4)) == "tensor"  # its last module is a ReLU there
    assert of(blocks.Block(4, act_layer=lambda inplace: nn.Identity())) == ""
    assert of(blocks.Tapped(nn.Identity())) == ""
    assert of(blocks.Tapped(nn.ReLU())) == "tensor"
    assert of(blocks.Detector(nn.ReLU(), blocks.Predictor(4))) == ""  # a helper's result

    class Passing(nn.Module):
        def forward(self, x):
            return x

    class Odd(nn.Sequential):
        def __iter__(self):
            return iter(())

    assert of(Passing()) == of(Odd(nn.Conv2d(1, 1, 1))) == ""
    replaced = nn.Conv2d(1, 1, 1)
    replaced.forward = lambda x: x  # type: ignore[method-assign]
    assert of(replaced) == ""
    hooked = nn.Conv2d(1, 1, 1)
    hooked.register_forward_hook(lambda module, args, out: (out,))
    assert of(hooked) == ""


def test_one_unproven_instance_types_nothing():
    evidence = Evidence()
    key = (str(Path("net.py").resolve()), "Net", "head")
    evidence.add(key, Seen("pkg.Head", True, False, "tuple"), "a")
    evidence.add(key, Seen("pkg.Head", True, False, "tuple"), "b")
    assert evidence.returns("net.py", "Net", "head") == ("tuple", ["a", "b"])
    evidence.add(key, Seen("torch.nn.Conv2d", True, True, "tensor"), "c")  # not itemwise
    assert evidence.returns("net.py", "Net", "head") == ("", [])
    evidence.add(key, Seen("torch.nn.Identity", False, False, ""), "d")
    assert evidence.returns("net.py", "Net", "head") == ("", [])
    assert evidence.returns("net.py", "Net", "neck") == ("", [])


def test_without_evidence_the_detector_stays(project, capsys):
    assert main(["check", "pkg"]) == 1
    out = capsys.readouterr().out
    assert "pkg/blocks.py:117:16: MIG114 `scale_logits(...)`: its first argument" in out
    assert "pkg/blocks.py:117:43: MIG114 `-` on `boxes`" in out


def test_fix_verify_uses_the_evidence_and_proves_the_rewrite(project, capsys):
    assert main(["fix", "--verify", "pkg"]) == 1  # changed, findings left; the target passes
    out = capsys.readouterr().out
    assert "1 target(s) verified: 1 passed, 0 failed" in out
    assert (project / "pkg" / "blocks.py").read_text(encoding="utf-8") == AFTER.read_text(
        encoding="utf-8"
    )


HELD = """import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

    def loss(self, x):
        return torch.relu(x).sum()


class Net(nn.Module):
    def __init__(self, head=None):
        super().__init__()
        self.head = head if head is not None else Head()

    def forward(self, x):
        return self.head.loss(self.head(x))
"""


def test_a_method_of_a_module_the_built_models_hold_is_reported(tmp_path):
    """`self.head.loss(...)` of a module whose class only the built models know: without
    evidence the call is reported with the ops of the file's `Head.loss`; with it, they become modules of `Head` (the holder alone
    calls the method, once), or, when the holder hands its instance on, the call is reported
    with the ops it runs."""
    from migrator import runner
    from migrator.config import Settings

    source = tmp_path / "net.py"
    source.write_text(HELD, encoding="utf-8")

    def findings(evidence: Evidence) -> list[str]:
        (outcome,) = runner.run([str(source)], Settings(), rewrite=False, evidence=evidence)
        return [f"{f.line}:{f.col + 1}: {f.code} {f.message}" for f in outcome.findings]

    unknown = (
        "23:16: MIG115 `self.head.loss` may run the method of `Head`, 2 op(s) (.sum(), "
        "torch.relu): the class of `self.head` is not known statically (`fix --evidence` reads "
        "it from built models), and a method of another object stays a call of that object; "
        "left as is"
    )
    assert [f for f in findings(Evidence()) if "MIG115" in f] == [unknown]  # before, none
    evidence = Evidence()
    evidence.add((str(source.resolve()), "Net", "head"), Seen("net.Head", True, False), "t")
    assert findings(evidence) == [
        "14:16: MIG001 torch.relu -> `self.relu` = ReLU()",
        "14:16: MIG002 .sum() -> `self.sum` = Sum()",
    ]
    handed = "return self.head.loss(self.head(x)), [self.head]"
    source.write_text(HELD.replace("return self.head.loss(self.head(x))", handed), encoding="utf-8")
    expected = (
        "23:16: MIG115 `self.head.loss` (a method of `Head`, as every built model holds) runs "
        "2 op(s) forward reaches (.sum(), torch.relu): a method of another object stays a call "
        "of that object: the rewrite of `Head` takes a method other modules call on its "
        "instances only when every call of it is known: `Net` hands `self.head` on; left as is"
    )
    assert findings(evidence) == [expected]
    evidence.add((str(source.resolve()), "Net", "head"), Seen("net.Other", True, False), "u")
    # a built model holds a class not found: which class runs `loss` is not known, and the
    # file's `Head.loss` may be it (before, no finding)
    assert [f for f in findings(evidence) if "MIG115" in f] == [unknown]
