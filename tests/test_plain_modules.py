"""Plain classes becoming `nn.Module`s (fixture tree `plain_class_across_files`, torchvision's
box coders): the class's file decides in any order and with workers, a holder's file alone
reports its call, the migrated package is bit-exact, and the names `nn.Module` defines are
those of the installed torch."""

from __future__ import annotations

from pathlib import Path

import pytest
from equivalence import assert_bit_exact
from fixture_cases import tree_copy
from packages import assert_fixed_alike_in_any_order, load_tree_sides, texts

from migrator.cli import main

TREE = Path(__file__).resolve().parent.parent / "fixtures" / "trees" / "plain_class_across_files"


def _tree(root: Path, side: str = "before") -> Path:
    """A copy of the tree's `side` under `root`; its package folder."""
    return tree_copy(TREE, root, side) / "pkg"


def test_the_same_files_come_out_in_any_order_and_with_workers(tmp_path):
    orders = {
        "holders first": ["model.py", "loss.py", "coders.py"],
        "class first": ["coders.py", "model.py", "loss.py"],
    }
    assert_fixed_alike_in_any_order(TREE, tmp_path, orders)


def test_a_holder_alone_reports_its_call(tmp_path, capsys):
    """`fix model.py` does not rewrite coders.py: the call of `decode` is reported."""
    pkg = _tree(tmp_path)
    main(["fix", str(pkg / "model.py")])
    out = capsys.readouterr().out
    assert "model.py:18:16: MIG115 `self.box_coder.decode`" in out
    assert texts(pkg) == texts(_tree(tmp_path / "again"))


def test_the_migrated_package_is_bit_exact(tmp_path):
    torch = pytest.importorskip("torch")
    before, after = load_tree_sides(TREE, tmp_path, "model")
    b = assert_bit_exact(before.Model, after.Model, before.example_inputs)
    assert isinstance(b.box_coder, torch.nn.Module) and b.box_coder.training is True
    names = [type(m).__name__ for m in b.box_coder.modules()]
    assert names == ["LinearCoder", "Add", "Mul", "Sub", "Add", "Stack"]


def test_the_names_nn_module_defines_are_torchs():
    torch = pytest.importorskip("torch")
    from migrator.rewrite.plain_modules import NN_MODULE_NAMES

    module = torch.nn.Module()
    names = set(dir(torch.nn.Module)) | set(vars(module))
    assert {n for n in names if not (n.startswith("__") and n.endswith("__"))} <= NN_MODULE_NAMES


def test_a_method_called_elsewhere_keeps_the_class_plain_only_if_it_may_be_an_instance(
    tmp_path, capsys
):
    """`line.decode()` in a file naming neither `LinearCoder` nor an attribute holding one,
    and `codecs.decode(...)` on an imported module, call no method of an instance; a file
    reading `model.box_coder.decode(...)` may, and the class stays plain, its call reported."""
    expected = texts(_tree(tmp_path / "expected", "after"))
    pkg = _tree(tmp_path / "elsewhere")
    text = 'import codecs\n\n\ndef read(line):\n    return codecs.decode(line.decode("ascii"))\n'
    (pkg / "io.py").write_text(text)
    main(["fix", str(pkg)])
    assert texts(pkg) == {**expected, "io.py": text}
    pkg = _tree(tmp_path / "peeked")
    (pkg / "peek.py").write_text("def peek(model, x):\n    return model.box_coder.decode(x, x)\n")
    before = (pkg / "coders.py").read_text()
    capsys.readouterr()
    main(["fix", str(pkg)])
    assert (pkg / "coders.py").read_text() == before
    out = capsys.readouterr().out
    assert "model.py:18:16: MIG115 `self.box_coder.decode`" in out
    assert "peek.py:2 calls `model.box_coder.decode`" in out


def test_a_number_default_declares_a_number_only_where_every_construction_passes_one(
    tmp_path, capsys
):
    """`normalize=True` without annotation: `LinearCoder` becomes a module while every
    construction passes a literal (its holder's `__annotations__` naming it makes none), and
    stays plain, the parameter and the construction named, once one passes anything else."""
    for side in ("literal", "passed"):  # a package's files are read once a process
        pkg = _tree(tmp_path / side)
        coders = pkg / "coders.py"
        coders.write_text(coders.read_text().replace("normalize: bool = True", "normalize=True"))
    main(["check", str(tmp_path / "literal")])
    assert "MIG005 `LinearCoder` becomes an `nn.Module`" in capsys.readouterr().out
    model = pkg / "model.py"
    model.write_text(model.read_text().replace("(normalize=True)", "(normalize=bool(1))"))
    main(["check", str(pkg)])
    out = capsys.readouterr().out
    assert "MIG005" not in out
    assert (
        "`LinearCoder` sets `self.normalize` to what may be a module or a parameter: its "
        "parameter `normalize` is a number by its default alone, and model.py:15 passes "
        "`bool(1)`" in out
    )
