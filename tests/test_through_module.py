"""Calls of another file's helper through its module's name (`layers.mix(...)`,
`det_utils._scale(...)`, fixture tree `helper_through_module`): the helper's file decides its
class from the text of its callers, in any order and with workers, and the migrated package is
bit-exact."""

from __future__ import annotations

from pathlib import Path

import pytest
from equivalence import assert_bit_exact
from fixture_cases import tree_copy
from packages import assert_fixed_alike_in_any_order, load_sides, load_tree_sides

from migrator.cli import main

TREE = Path(__file__).resolve().parent.parent / "fixtures" / "trees" / "helper_through_module"


def _tree(root: Path, side: str = "before") -> Path:
    """A copy of the tree's `side` under `root`; its package folder."""
    return tree_copy(TREE, root, side) / "pkg"


def test_the_same_classes_come_out_in_any_order_and_with_workers(tmp_path):
    orders = {
        "callers first": ["net.py", "layers.py", "_utils.py"],
        "helpers first": ["_utils.py", "layers.py", "net.py"],
    }
    assert_fixed_alike_in_any_order(TREE, tmp_path, orders)


def test_a_private_helper_imported_by_its_name_gets_its_class_too(tmp_path):
    """`_scale` gets its class for `det_utils._scale(...)`, and as well for a direct call of it
    imported by its name (`from ._utils import _scale`), which names it from another file on
    purpose as a call through its module does."""
    pkg = _tree(tmp_path)
    net = (pkg / "net.py").read_text()
    (pkg / "net.py").write_text(
        net.replace("from . import _utils as det_utils", "from ._utils import _scale").replace(
            "det_utils._scale(", "_scale("
        )
    )
    main(["fix", str(pkg)])
    assert "class Scale" in (pkg / "_utils.py").read_text()
    assert "s = self.scale(h, x)" in (pkg / "net.py").read_text()


def test_the_migrated_package_is_bit_exact(tmp_path):
    pytest.importorskip("torch")
    before, after = load_tree_sides(TREE, tmp_path, "net")
    b = assert_bit_exact(before.Model, after.Model, before.example_inputs)
    names = [type(m).__name__ for m in b.modules()]
    assert names.count("Mix") == 3 and names.count("Scale") == 1  # one in `Blend`


def test_the_decision_reads_the_same_from_the_callers_rewritten_text(tmp_path):
    """With `-j N` a helper's file may read a caller already rewritten: `self.scale(...)` in a
    file importing `_utils` counts as `det_utils._scale(...)` did; a file that does not import
    the module gives a private helper nothing."""
    from migrator.rewrite.mentions import PackageCalls

    for side in ("before", "after"):
        pkg = _tree(tmp_path / side)
        (pkg / "_utils.py").write_text((TREE / "pkg" / "_utils.before.py").read_text())
        (pkg / "net.py").write_text((TREE / "pkg" / f"net.{side}.py").read_text())
        calls = PackageCalls(pkg / "_utils.py")
        assert calls.through_module("_scale") and not calls.through_module("_unused"), side
        assert PackageCalls(pkg / "layers.py").from_methods("mix"), side
    pkg = _tree(tmp_path / "unimported", "after")
    (pkg / "_utils.py").write_text((TREE / "pkg" / "_utils.before.py").read_text())
    net = (pkg / "net.py").read_text()
    (pkg / "net.py").write_text(net.replace("from . import _utils as det_utils\n", ""))
    assert not PackageCalls(pkg / "_utils.py").through_module("_scale")


def test_an_instance_serving_every_iteration_is_not_reported_shared_by_the_next_run(tmp_path):
    """A call of another file's helper in a loop whose trip count depends on the input gets one
    module serving every iteration; the next run reads that instance as the first run made
    it (no MIG117 "called in a loop"), and changes nothing."""
    from migrator.config import Settings
    from migrator.runner import run

    pkg = _tree(tmp_path)
    layers = (pkg / "layers.py").read_text()  # `torch.cat` given `dim` at call time stays
    (pkg / "layers.py").write_text(
        layers.replace("def mix(x, y):", "def mix(x, y, dim=1):").replace("dim=1)", "dim=dim)")
    )
    net = (pkg / "net.py").read_text()
    (pkg / "net.py").write_text(
        net.replace(
            "        h = self.fc(x)\n",
            "        h = self.fc(x)\n        for row in x.unbind(0):\n"
            "            h = h + layers.mix(h, row)[:, :4]\n",
        )
    )
    first = {o.path.name: o for o in run([str(pkg)], Settings(), rewrite=True)}
    messages = [f.message for f in first["net.py"].findings if f.code == "MIG004"]
    assert any("`layers.mix(...)` -> `self.mix` = Mix()" in m for m in messages)
    assert any("one module serves every iteration" in m for m in messages)
    assert main(["fix", str(pkg)]) == 1
    again = {o.path.name: o for o in run([str(pkg)], Settings(), rewrite=True)}
    assert not any(o.changed for o in again.values())
    assert [f.code for f in again["net.py"].findings if f.code == "MIG117"] == []


SAME_NAMED = TREE.parent / "same_named_module"


def test_a_module_of_the_same_file_name_in_another_folder_is_another_module(tmp_path):
    """`from . import _utils` in `pkg/detection/net.py` imports `pkg.detection._utils`: the
    `self.cat(...)` the first `fix` made there is no call of `pkg.ops._utils._cat`, nor, in a
    file importing nothing of `pkg.ops.misc`, of its public `cat`; a second `fix` leaves both
    without a module (it gave each one, changing `ops/`)."""
    from migrator.config import Settings
    from migrator.runner import run

    pkg = tree_copy(SAME_NAMED, tmp_path, "after") / "pkg"  # a fresh copy: read afresh
    again = {o.path.relative_to(pkg): o for o in run([str(pkg)], Settings(), rewrite=True)}
    assert not [str(path) for path, o in again.items() if o.changed]
    assert "class Cat" not in (pkg / "ops" / "_utils.py").read_text()
    assert "class Cat" not in (pkg / "ops" / "misc.py").read_text()


@pytest.mark.parametrize(
    ("where", "imports", "module"),
    [
        ("detection/net.py", "from . import _utils as u", "detection/_utils.py"),
        ("detection/net.py", "from .. import _utils as u", "_utils.py"),
        ("detection/net.py", "from ..ops import _utils as u", "ops/_utils.py"),
        ("detection/net.py", "from pkg.ops import _utils as u", "ops/_utils.py"),
        ("detection/net.py", "import pkg.ops._utils as u", "ops/_utils.py"),
        ("detection/__init__.py", "from . import _utils as u", "detection/_utils.py"),
        ("net.py", "from .ops import _utils as u", "ops/_utils.py"),
    ],
)
def test_a_call_through_a_module_is_of_the_module_its_import_resolves_to(
    tmp_path, where, imports, module
):
    """`u._cat(...)` in a method calls the `_cat` of the module `u` is bound to, relative
    imports resolved against the importing file's package; of no other `_utils.py`."""
    from migrator.rewrite.mentions import PackageCalls

    pkg = tmp_path / "pkg"
    helpers = ["_utils.py", "ops/_utils.py", "detection/_utils.py"]
    for path in ["__init__.py", "ops/__init__.py", "detection/__init__.py", *helpers]:
        (pkg / path).parent.mkdir(parents=True, exist_ok=True)
        (pkg / path).write_text("def _cat(x, y):\n    return x\n" if path in helpers else "")
    (pkg / where).write_text(
        f"{imports}\n\n\nclass Net:\n    def forward(self, x):\n        return u._cat(x, x)\n"
    )
    called = {path for path in helpers if PackageCalls(pkg / path).through_module("_cat")}
    assert called == {module}


def test_a_call_through_a_dotted_module_name_is_a_call_of_another_file(tmp_path):
    """`pkg.a.drop(h, False)` in `c.py` calls `drop` from another file: its helper's module
    keeps its `training` parameter (it followed its own mode, and `Model` dropped in train
    mode), and a second `fix` changes nothing."""
    pytest.importorskip("torch")
    from migrator.config import Settings
    from migrator.runner import run

    tree = TREE.parent / "helper_dotted_call"
    original, fixed = tree_copy(tree, tmp_path / "before"), tree_copy(tree, tmp_path / "fixed")
    assert main(["fix", str(fixed / "pkg")]) == 1
    before, after = load_sides(original, fixed, "c")
    assert_bit_exact(before.Model, after.Model, before.example_inputs)
    pkg = tree_copy(tree, tmp_path / "again", "after") / "pkg"
    assert not [o.path for o in run([str(pkg)], Settings(), rewrite=True) if o.changed]
