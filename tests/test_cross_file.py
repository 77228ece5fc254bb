"""Names across files: a subclass in another file never takes, or silently keeps, the name of a
module that migrator creates in its base class."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrator.cli import main
from migrator.config import Settings
from migrator.runner import run

TREE = Path(__file__).resolve().parent.parent / "fixtures" / "trees" / "base_in_other_package"
BASE = (TREE / "pkg" / "base.before.py").read_text(encoding="utf-8")
CLASHING = (TREE / "app" / "net.before.py").read_text(encoding="utf-8")
"""A base class creating `self.gelu`, and a subclass (importing it from `pkg.base`) that has a
`self.gelu` of its own."""


def test_base_never_takes_a_name_a_subclass_elsewhere_in_its_package_uses(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(BASE)
    (pkg / "net.py").write_text(CLASHING.replace("from pkg.base", "from .base"))
    outcomes = {o.path.name: o for o in run([str(pkg)], Settings(), rewrite=True)}
    assert "self.gelu_1 = nn.GELU()" in outcomes["base.py"].new_text
    assert "return self.gelu_1(self.fc(x))" in outcomes["base.py"].new_text
    assert outcomes["net.py"].findings == [] and not outcomes["net.py"].changed


def test_attribute_clashing_with_a_base_module_from_another_package_is_reported(tmp_path):
    for name in ("pkg", "app"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "pkg" / "base.py").write_text(BASE)
    (tmp_path / "app" / "net.py").write_text(CLASHING)
    outcomes = {
        o.path.name: o for o in run([str(tmp_path / "app" / "net.py")], Settings(), rewrite=False)
    }
    [finding] = outcomes["net.py"].findings
    assert (finding.line, finding.code) == (8, "MIG111")
    assert (
        "`self.gelu` is also the name of the module migrator creates in base class `Base`"
        in finding.message
    )


def test_an_instance_of_another_files_class_handed_to_several_modules_is_reported(tmp_path):
    """`PosEnc` lives in another file, whose analysis cannot see that this file hands one
    instance to every block: the hand-over is reported here (MIG117)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    source = (TREE.parent.parent / "cases" / "shared_instance.before.py").read_text()
    head, _, model = source.partition("class Model(nn.Module):")
    (pkg / "layers.py").write_text(head)
    (pkg / "net.py").write_text(
        "import torch.nn as nn\nfrom .layers import Block, PosEnc\n\n\n"
        "class Model(nn.Module):" + model
    )
    outcomes = {o.path.name: o for o in run([str(pkg / "net.py")], Settings(), rewrite=False)}
    [finding] = outcomes["net.py"].findings
    assert (finding.line, finding.code) == (9, "MIG117")
    assert finding.message.startswith(
        "`self.pos` of `Model` is handed to modules built in a "
        "loop at line 9: ops migrator turns into modules inside "
        "`pkg.layers.PosEnc`"
    )


HELPERS = TREE.parent / "helper_in_other_file"
"""`pkg/net.py` calls helpers of `pkg/layers.py` from its forward; `Gate` in `layers.py` calls
one of them too."""


def _helper_tree(root: Path) -> Path:
    """A copy of the helper tree's originals under `root`; its package folder."""
    work = root / "pkg"
    work.mkdir(parents=True)
    for before in (HELPERS / "pkg").glob("*.before.py"):
        (work / before.name.replace(".before.py", ".py")).write_text(before.read_text())
    (work / "__init__.py").write_text("")
    return work


def _texts(pkg: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(pkg.glob("*.py"))}


def test_a_helper_of_another_file_gets_the_same_twin_in_any_order_and_with_workers(tmp_path):
    """The helper's file decides its twin alone: the caller first, the helper first, both in
    two worker processes, give the same files; a second run changes nothing."""
    expected = {
        "__init__.py": "",
        "layers.py": (HELPERS / "pkg" / "layers.after.py").read_text(),
        "net.py": (HELPERS / "pkg" / "net.after.py").read_text(),
    }
    orders = {
        "caller first": ["net.py", "layers.py"],
        "helper first": ["layers.py", "net.py"],
        "-j 2": ["-j", "2", "."],
    }
    for name, args in orders.items():
        pkg = _helper_tree(tmp_path / name.replace(" ", "_"))
        paths = [a if a.startswith("-") or a == "2" else str(pkg / a) for a in args]
        assert main(["fix", *paths]) == 1, name
        assert _texts(pkg) == expected, name
        assert main(["fix", "--check", str(pkg)]) == 0, name


def test_a_helper_whose_file_the_run_leaves_out_stays_a_call(tmp_path):
    """Fixing only the caller would import a class its helper's file never gets: the call
    stays, reported (MIG115)."""
    pkg = _helper_tree(tmp_path)
    [outcome] = run([str(pkg / "net.py")], Settings(), rewrite=True)
    # the helper's result is a proven tensor: the `+` of two calls becomes a module, the calls stay
    assert "Mix" not in outcome.new_text
    assert "self.add(mix(h, x)[:, :4], mix(x, h, 0.5)[:, 4:])" in outcome.new_text
    messages = [f.message for f in outcome.findings if f.code == "MIG115"]
    assert len(messages) == 6  # 3 x mix, halves, wrapped, _shift
    assert all("its file is not processed in this run" in m for m in messages)


def test_helpers_of_another_file_as_modules_are_bit_exact(tmp_path):
    """The migrated package (twins in `layers.py`, instances in `net.py`) loads the original's
    weights and gives the same outputs in eval and train mode."""
    torch = pytest.importorskip("torch")
    import importlib
    import sys

    original = _helper_tree(tmp_path / "before").parent
    migrated = _helper_tree(tmp_path / "after").parent
    assert main(["fix", str(migrated / "pkg")]) == 1

    def forget() -> None:
        for name in [n for n in sys.modules if n == "pkg" or n.startswith("pkg.")]:
            del sys.modules[name]

    def load(root: Path):
        forget()
        sys.path.insert(0, str(root))
        try:
            return importlib.import_module("pkg.net")
        finally:
            sys.path.remove(str(root))

    before, after = load(original), load(migrated)
    forget()  # the modules stay reachable through `before` and `after`
    assert "Mix" in after.__dict__ and "Mix" not in before.__dict__
    for train in (False, True):
        torch.manual_seed(0)
        a = before.Model().train(train)
        b = after.Model().train(train)
        b.load_state_dict(a.state_dict(), strict=True)
        assert list(a.state_dict()) == list(b.state_dict())
        x = torch.randn(2, 4)
        assert torch.equal(a(x), b(x))
    # two call sites, and one instance an iteration of the `range(2)` loop
    assert sum(type(m).__name__ == "Mix" for m in b.modules()) == 5


def test_only_calls_in_methods_that_run_the_module_count_for_a_twin(tmp_path):
    """What decides a helper's twin: calls in a method body (also `self.mix_1(...)`, which
    `fix` makes of `mix(...)`), not in a module-level function, `__init__`, `init_weights`,
    a function nested in a method, a class body, another object's method or a twin class."""
    from migrator.rewrite.mentions import _calls_in_methods

    source = tmp_path / "net.py"
    source.write_text(
        "def top(x):\n    return a(x)\n\n\n"
        "class Net(nn.Module):\n"
        '    """Doc\nat column 0: b(x)\n    """\n'
        "    y = c(1)\n\n"
        "    def __init__(self):\n        d(self.w)\n\n"
        "    def init_weights(self):\n        d(self.w)\n\n"
        "    def forward(self, x):\n"
        "        def inner(z):\n            return e(z)\n"
        "        x = self.mix_1(x) + other.g(x)\n"
        "        return f(inner(x))\n\n\n"
        "class Mix(nn.Module):\n"
        '    """`mix` as a module: its ops are submodules."""\n\n'
        "    def forward(self, x):\n        return h(x)\n"
    )
    assert sorted(_calls_in_methods(source)) == ["f", "inner", "mix"]


def test_what_a_run_keeps_of_another_file_follows_its_text(tmp_path):
    """The twins of another file's helpers and the ops it holds are kept for the rest of the
    process, by its text: a helper decorated between two runs gets no twin in the second, and
    another file's helper runs other ops; the first run's findings come back with the first
    text."""
    pkg = _helper_tree(tmp_path)
    layers = pkg / "layers.py"
    original = layers.read_text()

    def findings() -> list[str]:
        outcome = next(run([str(pkg / "net.py"), str(layers)], Settings(), rewrite=False))
        return [f"{f.line}: {f.code} {f.message}" for f in outcome.findings]

    before = findings()
    assert not any("`halves` does not become a module" in m for m in before)
    shift = "def _shift(x):\n    return torch.tanh(x)"
    assert shift in original
    layers.write_text(original.replace(shift, shift.replace("tanh", "sigmoid")))
    assert [m for m in before if "`_shift`" in m and "(torch.tanh)" in m]
    assert [m for m in findings() if "`_shift`" in m and "(torch.sigmoid)" in m]
    layers.write_text(original.replace("def halves(x):", "@torch.fx.wrap\ndef halves(x):"))
    assert any(
        "`halves` does not become a module: it is decorated (`@torch.fx.wrap`)" in m
        for m in findings()
    )
    layers.write_text(original)
    assert findings() == before
