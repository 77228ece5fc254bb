"""Names across files: a subclass in another file never takes, or silently keeps, the name of a
module that migrator creates in its base class."""

from __future__ import annotations

from pathlib import Path

import pytest
from equivalence import assert_bit_exact
from fixture_cases import tree_copy
from packages import (
    assert_fixed_alike_in_any_order,
    load_sides,
    load_tree_sides,
    texts,
    write_package,
)

from migrator.cli import main
from migrator.config import Settings
from migrator.runner import run

TREE = Path(__file__).resolve().parent.parent / "fixtures" / "trees" / "base_in_other_package"
BASE = (TREE / "pkg" / "base.before.py").read_text(encoding="utf-8")
CLASHING = (TREE / "app" / "net.before.py").read_text(encoding="utf-8")
"""A base class creating `self.gelu`, and a subclass (importing it from `pkg.base`) that has a
`self.gelu` of its own."""


def test_base_never_takes_a_name_a_subclass_elsewhere_in_its_package_uses(tmp_path):
    pkg = write_package(
        tmp_path, {"base.py": BASE, "net.py": CLASHING.replace("from pkg.base", "from .base")}
    )
    outcomes = {o.path.name: o for o in run([str(pkg)], Settings(), rewrite=True)}
    assert "self.gelu_1 = nn.GELU()" in outcomes["base.py"].new_text
    assert "return self.gelu_1(self.fc(x))" in outcomes["base.py"].new_text
    assert outcomes["net.py"].findings == [] and not outcomes["net.py"].changed


def test_names_a_subclass_elsewhere_takes_follow_its_text_in_one_process(tmp_path):
    """The names of another file's classes, and what a subclass search found, are kept a
    process by the texts read: once the subclass no longer uses `self.gelu`, the base takes
    the name in the next run."""
    pkg = write_package(tmp_path, {"base.py": BASE})
    net = pkg / "net.py"
    net.write_text(CLASHING.replace("from pkg.base", "from .base"))

    def base_text() -> str:
        [outcome] = run([str(pkg / "base.py")], Settings(), rewrite=True)
        return outcome.new_text

    assert "self.gelu_1 = nn.GELU()" in base_text()
    net.write_text(net.read_text().replace("self.gelu", "self.act"))
    assert "self.gelu = nn.GELU()" in base_text()
    assert "self.gelu_1" not in base_text()


def test_a_subclass_elsewhere_follows_its_bases_text_in_one_process(tmp_path):
    """What a file read in a search summarizes (its classes and their bases) is kept a process
    by its text: a class that stops deriving from the base no longer protects its names, and
    protects them again once it derives from it again."""
    pkg = write_package(tmp_path, {"base.py": BASE})
    net = pkg / "net.py"
    subclass = CLASHING.replace("from pkg.base", "from .base")
    net.write_text(subclass)

    def base_text() -> str:
        [outcome] = run([str(pkg / "base.py")], Settings(), rewrite=True)
        return outcome.new_text

    assert "self.gelu_1 = nn.GELU()" in base_text()
    net.write_text(subclass.replace("class Net(Base):", "class Net(nn.Module):"))
    assert "self.gelu = nn.GELU()" in base_text()
    net.write_text(subclass)
    assert "self.gelu_1 = nn.GELU()" in base_text()


def test_a_walk_a_subclass_elsewhere_gains_refuses_the_next_run_in_one_process(tmp_path):
    """Whether a class of another file walks its submodules is kept a process by its file's
    text: once the subclass goes through `self.modules()`, the base makes no module."""
    pkg = write_package(tmp_path, {"base.py": BASE})
    net = pkg / "net.py"
    quiet = CLASHING.replace("from pkg.base", "from .base").replace("self.gelu", "self.act")
    net.write_text(quiet)

    def base_outcome():
        [outcome] = run([str(pkg / "base.py")], Settings(), rewrite=True)
        return outcome

    assert "self.gelu = nn.GELU()" in base_outcome().new_text
    walking = "    def show(self):\n        for m in self.modules():\n            print(m)\n"
    net.write_text(quiet + "\n" + walking)
    outcome = base_outcome()
    assert not outcome.changed
    assert [
        (f.code, "`Net.show` goes through `self.modules`" in f.message) for f in outcome.findings
    ] == [("MIG109", True)]
    net.write_text(quiet)
    assert "self.gelu = nn.GELU()" in base_outcome().new_text


def test_what_a_walk_of_a_subclass_elsewhere_tests_is_read_again_when_its_file_changes(tmp_path):
    """The walks of another file's class (`facts.class_fact`) are kept a process by its file's
    text: a walk acting on `nn.Conv2d` submodules leaves the base's new `nn.GELU` alone, one
    acting on `nn.GELU` submodules refuses it, and back."""
    pkg = write_package(tmp_path, {"base.py": BASE})
    net = pkg / "net.py"
    quiet = CLASHING.replace("from pkg.base", "from .base").replace("self.gelu", "self.act")
    walking = (
        "    def show(self):\n        for m in self.modules():\n"
        "            if isinstance(m, nn.Conv2d):\n                print(m)\n"
    )
    net.write_text(quiet + "\n" + walking)

    def base_outcome():
        [outcome] = run([str(pkg / "base.py")], Settings(), rewrite=True)
        return outcome

    assert "self.gelu = nn.GELU()" in base_outcome().new_text
    net.write_text(quiet + "\n" + walking.replace("nn.Conv2d", "nn.GELU"))
    outcome = base_outcome()
    assert not outcome.changed
    assert [(f.code, "acts on its `GELU` submodules" in f.message) for f in outcome.findings] == [
        ("MIG109", True)
    ]
    net.write_text(quiet + "\n" + walking)
    assert "self.gelu = nn.GELU()" in base_outcome().new_text


def test_attribute_clashing_with_a_base_module_from_another_package_is_reported(tmp_path):
    write_package(tmp_path, {"base.py": BASE})
    write_package(tmp_path, {"net.py": CLASHING}, "app")
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
    source = (TREE.parent.parent / "cases" / "shared_instance.before.py").read_text()
    head, _, model = source.partition("class Model(nn.Module):")
    net = "import torch.nn as nn\nfrom .layers import Block, PosEnc\n\n\nclass Model(nn.Module):"
    pkg = write_package(tmp_path, {"layers.py": head, "net.py": net + model})
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
    return tree_copy(HELPERS, root) / "pkg"


def test_a_helper_of_another_file_gets_the_same_twin_in_any_order_and_with_workers(tmp_path):
    """The helper's file decides its twin alone: the caller first, the helper first, both in
    two worker processes, give the same files; a second run changes nothing."""
    orders = {"caller first": ["net.py", "layers.py"], "helper first": ["layers.py", "net.py"]}
    assert_fixed_alike_in_any_order(HELPERS, tmp_path, orders)


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
    original = _helper_tree(tmp_path / "before").parent
    migrated = _helper_tree(tmp_path / "after").parent
    assert main(["fix", str(migrated / "pkg")]) == 1
    before, after = load_sides(original, migrated, "net")
    assert "Mix" in after.__dict__ and "Mix" not in before.__dict__
    b = assert_bit_exact(before.Model, after.Model, lambda: (torch.randn(2, 4),))
    # two call sites, and one instance an iteration of the `range(2)` loop
    assert sum(type(m).__name__ == "Mix" for m in b.modules()) == 5


def test_only_calls_in_methods_that_run_the_module_count_for_a_twin(tmp_path):
    """What decides a helper's twin: calls in a method body (also `self.mix_1(...)`, which
    `fix` makes of `mix(...)`), not in a module-level function, `__init__`, `init_weights`,
    a function nested in a method, a class body, another object's method or a twin class;
    calls through another name, `other.g(...)`, `pkg.layers.g(...)`, `self.mix_1(...)` (as
    `self.mix(...)`), are listed apart, not after a call (`f(x).k(...)`)."""
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
        "        x = self.mix_1(x) + other.g(x) + pkg.layers.g(x) + f(x).k(x)\n"
        "        return f(inner(x))\n\n\n"
        "class Mix(nn.Module):\n"
        '    """`mix` as a module: its ops are submodules."""\n\n'
        "    def forward(self, x):\n        return h(x)\n"
    )
    names, through_module = _calls_in_methods(source)
    assert sorted(names) == ["f", "inner"]
    assert through_module == {("other", "g"), ("pkg.layers", "g"), ("self", "mix")}


def _failing_helper_file(monkeypatch, how: str) -> None:
    """Make `layers.py` fail after its twins are decided: its rewrite raises (an engine error),
    or writing it fails."""
    from migrator import runner
    from migrator.commands import fix
    from migrator.files import SourceError

    if how == "engine error":
        rewrite = runner.fix_text

        def failing(text, path, *args, **kwargs):
            if path.endswith("layers.py"):
                raise RuntimeError("boom")
            return rewrite(text, path, *args, **kwargs)

        monkeypatch.setattr(runner, "fix_text", failing)
    else:
        write = fix.write_source

        def refused(source, text):
            if source.path.name == "layers.py":
                raise SourceError(source.path, 0, "cannot write")
            write(source, text)

        monkeypatch.setattr(fix, "write_source", refused)


@pytest.mark.parametrize("how", ["engine error", "write error"])
@pytest.mark.parametrize("order", [["net.py", "layers.py"], ["layers.py", "net.py"], ["-j2", ""]])
def test_a_caller_is_not_written_when_the_file_adding_its_twin_is_not(
    tmp_path, monkeypatch, capsys, how, order
):
    """`net.py`'s rewrite imports `Mix` and `Halves`, which the rewrite of `layers.py` adds: when
    that file fails, `net.py` stays as it is (an ImportError otherwise), one line saying why,
    whichever file comes first."""
    pkg = _helper_tree(tmp_path)
    before = texts(pkg)
    _failing_helper_file(monkeypatch, how)
    assert main(["fix", *(a if a.startswith("-") else str(pkg / a) for a in order)]) == 2
    assert texts(pkg) == before
    err = capsys.readouterr().err
    assert (
        f"{pkg / 'net.py'}: not written: it imports `Halves`, which the rewrite of "
        f"{pkg / 'layers.py'} adds, and that file is not written with it"
    ) in err.splitlines()


def test_a_caller_waits_for_the_file_adding_its_twin_and_is_written_with_it(tmp_path, capsys):
    """The caller first: it is held until the helper's file is written, then written too."""
    pkg = _helper_tree(tmp_path)
    assert main(["fix", str(pkg / "net.py"), str(pkg / "layers.py")]) == 1
    assert texts(pkg)["net.py"] == (HELPERS / "pkg" / "net.after.py").read_text()
    out = capsys.readouterr().out
    assert out.index(f"fixed {pkg / 'layers.py'}") < out.index(f"fixed {pkg / 'net.py'}")


def test_a_caller_is_not_written_when_verify_refuses_the_file_adding_its_twin(tmp_path, capsys):
    """With --verify, a failing target using `layers.py` leaves it unwritten; `net.py`, which a
    passing target covers, is not written either: it would import a class `layers.py` lacks."""
    import argparse

    from migrator.commands.fix import Fixer
    from migrator.progress import Progress

    pkg = _helper_tree(tmp_path)
    before = texts(pkg)

    class Verified:
        results = ()
        unverified: frozenset = frozenset()

        def refusal(self, path):
            return "a verify target using it failed" if Path(path).name == "layers.py" else None

    args = argparse.Namespace(diff=False, check=False, report=None, quiet=False)
    with Progress("fix") as bar:
        fixer = Fixer(args, bar)
        fixer.verified = Verified()  # type: ignore[assignment]
        for outcome in run([str(pkg / "net.py"), str(pkg / "layers.py")], Settings(), rewrite=True):
            fixer.apply(outcome)
        fixer.finish()
    assert texts(pkg) == before
    missing = (
        f"{pkg / 'net.py'}: not written: it imports `Halves`, which the rewrite of "
        f"{pkg / 'layers.py'} adds, and that file is not written with it"
    )
    assert capsys.readouterr().err.splitlines()[:2] == [
        f"{pkg / 'layers.py'}: not written: a verify target using it failed",
        missing,
    ]


def test_a_rewrite_knows_the_twins_it_imports_from_files_of_the_run(tmp_path):
    """Only twins another file's rewrite adds in this run count; a second run imports none."""
    pkg = _helper_tree(tmp_path)
    outcomes = {o.path.name: o for o in run([str(pkg)], Settings(), rewrite=True)}
    layers = str(pkg / "layers.py")
    assert outcomes["net.py"].twin_sources == {
        "pkg.layers.Halves": layers,
        "pkg.layers.Mix": layers,
        "pkg.layers.Shift": layers,
        "pkg.layers.Wrapped": layers,
    }
    assert outcomes["layers.py"].twin_sources == {}
    assert main(["fix", str(pkg)]) == 1
    again = {o.path.name: o for o in run([str(pkg)], Settings(), rewrite=True)}
    assert again["net.py"].twin_sources == {} and not again["net.py"].changed


def test_calls_passing_no_first_argument_give_a_helper_no_twin(tmp_path):
    """A call whose line shows it passes no first argument a module could take (`flow()`,
    `flow(*a)`, `flow(x=...)`) is refused by its caller whatever else it finds: alone, it gives
    the helper no twin (which nothing would use); a line ending after `(` still counts."""
    from migrator.rewrite.mentions import _calls_in_methods

    source = tmp_path / "net.py"
    source.write_text(
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        a(x=x) + b() + c(*x) + d(**x) + e(x == 1) + f(x, y=2) + g(1)\n"
        "        return h(\n            x=x\n        )\n"
    )
    assert sorted(_calls_in_methods(source)[0]) == ["e", "f", "g", "h"]


def _flow_package(root: Path, call: str) -> Path:
    """`pkg/layers.py` with a public helper `flow`, `pkg/net.py` calling it as `call`."""
    net = (
        "import torch.nn as nn\n\nfrom pkg.layers import flow\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n\n"
        f"    def forward(self, x):\n        return {call}\n"
    )
    return write_package(root, {"layers.py": FLOW, "net.py": net})


FLOW = "import torch\n\n\ndef flow(x, scale: float = 2.0):\n    return torch.relu(x) * scale\n"


def test_a_helper_only_called_with_keywords_from_another_file_stays_a_function(tmp_path, capsys):
    """`flow(x=h)` from `net.py`: `layers.py` gets no `Flow` class, the call is reported (MIG115)
    saying why; a positional call does give it one, used by the caller."""
    pkg = _flow_package(tmp_path / "keyword", "flow(x=self.fc(x))")
    net = (pkg / "net.py").read_text()
    assert main(["fix", str(pkg)]) == 1
    assert (pkg / "layers.py").read_text() == FLOW and (pkg / "net.py").read_text() == net
    finding = (
        f"{pkg / 'net.py'}:12:16: MIG115 `flow` (in `pkg.layers`) runs 2 op(s) forward reaches "
        "(`*`, torch.relu): the call passes no first argument that `flow` as a module could take "
        "(a tensor or `self`), and such calls give it none; left as is"
    )
    assert capsys.readouterr().out.splitlines() == [finding]
    pkg = _flow_package(tmp_path / "positional", "flow(self.fc(x))")
    assert main(["fix", str(pkg)]) == 1
    assert "class Flow(torch.nn.Module):" in (pkg / "layers.py").read_text()
    assert "return self.flow(self.fc(x))" in (pkg / "net.py").read_text()


def test_a_caller_whose_twins_file_never_comes_is_not_written(tmp_path, capsys):
    """The run ends with the caller still waiting (its helper's file never applied): it is not
    written, one line saying why."""
    import argparse

    from migrator.commands.fix import Fixer
    from migrator.progress import Progress

    pkg = _helper_tree(tmp_path)
    before = texts(pkg)
    outcomes = {o.path.name: o for o in run([str(pkg)], Settings(), rewrite=True)}
    args = argparse.Namespace(diff=False, check=False, report=None, quiet=False)
    with Progress("fix") as bar:
        fixer = Fixer(args, bar)
        fixer.apply(outcomes["net.py"])
        assert texts(pkg) == before  # held
        assert fixer.finish() == 1
    assert texts(pkg) == before
    assert capsys.readouterr().err.splitlines()[0] == (
        f"{pkg / 'net.py'}: not written: it imports `Halves`, which the rewrite of "
        f"{pkg / 'layers.py'} adds, and that file is not written with it"
    )


def test_what_a_run_keeps_of_another_file_follows_its_text(tmp_path):
    """The twins of another file's helpers and the ops it holds are kept for the rest of the
    process, by its text: a helper decorated between two runs gets no twin in the second, and
    another file's helper runs other ops; the first run's findings come back with the first
    text."""
    pkg = _helper_tree(tmp_path)
    layers = pkg / "layers.py"
    original = layers.read_text()

    def findings(*others: Path) -> list[str]:
        outcome = next(run([str(pkg / "net.py"), *map(str, others)], Settings(), rewrite=False))
        return [f"{f.line}: {f.code} {f.message}" for f in outcome.findings]

    before = findings(layers)
    assert not any("`halves` does not become a module" in m for m in before)
    shift = "def _shift(x):\n    return torch.tanh(x)"
    assert shift in original
    alone = findings()  # `layers.py` not processed: its helpers' calls stay, their ops listed
    layers.write_text(original.replace(shift, shift.replace("tanh", "sigmoid")))
    assert [m for m in alone if "`_shift`" in m and "(torch.tanh)" in m]
    assert [m for m in findings() if "`_shift`" in m and "(torch.sigmoid)" in m]
    layers.write_text(original.replace("def halves(x):", "@torch.no_grad()\ndef halves(x):"))
    assert any(
        "`halves` does not become a module: it is decorated (`@torch.no_grad()`)" in m
        for m in findings(layers)
    )
    layers.write_text(original)
    assert findings(layers) == before and findings() == alone


HALVES = "import torch\n\n\ndef halves(x):\n    return torch.tanh(x)\n"


@pytest.mark.parametrize("names", [["halves"], ["halves", "torch"]])
def test_a_twin_joins_a_parenthesised_import_one_name_a_line(tmp_path, names):
    """The twin's name goes into the caller's `from ... import (` list, one name a line at the
    list's indentation, as its other names (one or several) are."""
    listed = "".join(f"    {n},\n" for n in names)
    net = (
        f"import torch.nn as nn\n\nfrom pkg.layers import (\n{listed})\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return halves(x)\n"
    )
    pkg = write_package(tmp_path, {"layers.py": HALVES, "net.py": net})
    assert main(["fix", str(pkg)]) == 1
    text = (pkg / "net.py").read_text()
    expected = "".join(f"    {n},\n" for n in ["Halves", *names])
    assert f"from pkg.layers import (\n{expected})\n" in text, text


def test_a_helper_class_holds_the_modules_of_another_files_helpers_in_a_second_run(tmp_path):
    """A helper's calls of another file's helpers become calls of their modules, an instance
    each in its class; a second run reads its class (made by the first) as it is: nothing
    changes."""
    net = (
        "import torch\nimport torch.nn as nn\n\nfrom pkg.layers import halves\n\n\n"
        "def mix(x):\n    return halves(x) * torch.sigmoid(x)\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return mix(x)\n\n\n"
        "class Half(nn.Module):\n    def forward(self, x):\n        return halves(x)\n"
    )
    pkg = write_package(tmp_path, {"layers.py": HALVES, "net.py": net})
    assert main(["fix", str(pkg)]) == 1
    first = texts(pkg)
    assert "class Halves(" in first["layers.py"] and "self.halves(x)" in first["net.py"]
    assert "class Mix(" in first["net.py"] and "return self.mul(self.halves(x)" in first["net.py"]
    assert main(["fix", str(pkg)]) == 0
    assert texts(pkg) == first


GRID = (
    "import torch\n\n\n"
    "def grid(size: int, table: torch.Tensor) -> torch.Tensor:\n"
    "    coords = torch.arange(size)[:, None] - torch.arange(size)[None, :]\n"
    "    return table[coords + size - 1]\n"
)


def test_a_helper_of_another_file_annotated_to_take_a_size_first_becomes_a_module(tmp_path):
    """`grid(size: int, table)`: its module reads `size` as annotated, so a call passing a size
    first (`grid(x.shape[-1], ...)`) uses it, as one instance per call site; the package is
    bit-exact."""
    torch = pytest.importorskip("torch")
    net = (
        "import torch\nimport torch.nn as nn\n\nfrom pkg.layers import grid\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.table = nn.Parameter(torch.randn(7, 2))\n\n"
        "    def forward(self, x):\n"
        "        n = x.shape[-1]\n"
        "        return x * grid(n, self.table).sum(-1) + grid(n, self.table)[0, 0, 0]\n"
    )
    trees = {
        s: write_package(tmp_path / s, {"layers.py": GRID, "net.py": net})
        for s in ("before", "after")
    }
    assert main(["fix", str(trees["after"])]) == 1
    net = (trees["after"] / "net.py").read_text()
    assert "from pkg.layers import Grid" in net
    assert "self.grid(n, self.table)" in net and "self.grid_1(n, self.table)" in net
    assert "class Grid(torch.nn.Module):" in (trees["after"] / "layers.py").read_text()
    assert main(["fix", "--check", str(trees["after"])]) == 0
    before, after = load_sides(trees["before"].parent, trees["after"].parent, "net")
    b = assert_bit_exact(before.Model, after.Model, lambda: (torch.randn(2, 4, 4),))
    assert sum(type(m).__name__ == "Grid" for m in b.modules()) == 2


MIXIN = "class Mixin:\n    def setup(self):\n        self.relu = None\n"
WORKED_BASE = """import torch.nn as nn
import torch.nn.functional as F

from .mixin import Mixin


class Base(Mixin, nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return F.relu(self.fc(x))
"""
SUBCLASS = """import torch.nn as nn
import torch.nn.functional as F

from .base import Base


class NAME(Base):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        return F.relu(self.head(x))
"""


def test_a_worked_out_base_is_taken_again_only_while_what_it_read_is_the_same(
    tmp_path, monkeypatch
):
    """The names a base file's rewrite creates (`Base` is worked out for each subclass's file)
    are kept a process with what that work-out read: its mixin's file changed between two
    files, the base is worked out afresh (its module is `relu` once the mixin stops using
    `self.relu`, so the next subclass takes `relu_1`); unchanged, it is taken as it was."""
    from migrator.rewrite.analyze import ProjectAnalysis

    pkg = write_package(tmp_path, {"mixin.py": MIXIN, "base.py": WORKED_BASE})
    for name in ("NetA", "NetB", "NetC"):
        (pkg / f"{name.lower()}.py").write_text(SUBCLASS.replace("NAME", name))
    analysed: list[str] = []
    file = ProjectAnalysis.file

    def counting(self, source, path, tree=None, disable=frozenset()):
        analysed.append(Path(path).name)
        return file(self, source, path, tree, disable)

    monkeypatch.setattr(ProjectAnalysis, "file", counting)

    def fixed(name: str) -> str:
        analysed.clear()
        [outcome] = run([str(pkg / name)], Settings(), rewrite=True)
        return outcome.new_text

    assert "self.relu_2 = nn.ReLU()" in fixed("neta.py")  # `relu` the mixin's, `relu_1` Base's
    assert analysed == ["neta.py", "base.py"]
    (pkg / "mixin.py").write_text(MIXIN.replace("self.relu", "self.act"))
    netb = fixed("netb.py")
    assert analysed == ["netb.py", "base.py"]  # what Base's work-out read has changed
    assert "self.relu_1 = nn.ReLU()" in netb and "self.relu = nn.ReLU()" not in netb
    netc = fixed("netc.py")
    assert analysed == ["netc.py"]  # nothing it read changed: taken as it was
    assert netc == netb.replace("NetB", "NetC")


def test_a_search_served_ancestors_found_by_an_earlier_one_still_reads_their_files(tmp_path):
    """The ancestors `Family` found for one class's search are served to the next search of
    the file with the lookups that found them (`Project.captures`): `B`'s search, kept, is
    taken again only while `mid.py`, through which `SubB` derives from `B`, is the same."""
    net = (
        "import torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "class A(nn.Module):\n    def forward(self, x):\n        return x\n\n\n"
        "class B(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        "    def forward(self, x):\n        return F.gelu(x)\n"
    )
    sub = (
        "import torch.nn as nn\n\nfrom .mid import Mid\nfrom .net import A, B\n\n\n"
        "class SubA(A):\n    pass\n\n\n"
        "class SubB(Mid):\n    def __init__(self):\n        super().__init__()\n"
        "        self.gelu = nn.Identity()\n\n\n"
        "class Other(B):\n    pass\n"
    )
    pkg = write_package(tmp_path, {"net.py": net, "sub.py": sub})
    mid = pkg / "mid.py"

    def net_text() -> str:
        [outcome] = run([str(pkg / "net.py")], Settings(), rewrite=True)
        return outcome.new_text

    mid.write_text("from .net import B as Mid\n")
    assert "self.gelu_1 = nn.GELU()" in net_text()
    mid.write_text("from .net import A as Mid  # SubB derives from A now\n")
    assert "self.gelu = nn.GELU()" in net_text()


HELD_ACROSS = TREE.parent / "held_method_across_files"


@pytest.mark.parametrize("module, cls", [("model", "Model"), ("pair", "Pair")])
def test_a_method_other_files_call_converts_bit_exact(tmp_path, module, cls):
    """Tree `held_method_across_files` as its fixtures expect it (the `.after.py` files, the
    `.before.py` ones where nothing changes): each holder's outputs are equal to the
    original's, in eval and training mode, with the state_dict unchanged; `Head.loss` of the
    migrated side calls modules of `Head`."""
    torch = pytest.importorskip("torch")
    before, after = load_tree_sides(HELD_ACROSS, tmp_path, module)
    b = assert_bit_exact(getattr(before, cls), getattr(after, cls), lambda: (torch.randn(2, 4),))
    kinds = {type(m).__name__ for m in b.modules()}
    assert ({"Abs", "Mean", "Sub", "Sum"} <= kinds) == (cls == "Model")


def test_a_holder_alone_reports_the_call_its_class_file_would_take(tmp_path):
    """`fix model.py` alone leaves `Head.loss` as it is (heads.py is not rewritten), so the
    holder reports the call; given both files, the call is the class's to convert."""
    pkg = tree_copy(HELD_ACROSS, tmp_path) / "pkg"
    alone = list(run([str(pkg / "model.py")], Settings(), rewrite=True))
    assert [(f.code, f.message.split(": ")[-1]) for f in alone[0].findings] == [
        ("MIG115", "`Head` is in another file, which this run does not rewrite; left as is")
    ]
    both = {o.path.name: o for o in run([str(pkg)], Settings(), rewrite=True)}
    assert both["model.py"].findings == [] and not both["model.py"].changed
    assert "self.abs = Abs()" in both["heads.py"].new_text
