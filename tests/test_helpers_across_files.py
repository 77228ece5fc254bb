"""A helper's module uses the modules of the helpers it calls in other files, as it does its own
file's (fixture tree `helper_calls_across_files`: torchvision's `_box_loss` ->
`generalized_box_iou_loss` -> `_loss_inter_union`), and a private helper imported by its name
gets its class as a public one does; files whose helpers call each other's keep those calls."""

from __future__ import annotations

from pathlib import Path

import pytest
from equivalence import assert_bit_exact
from fixture_cases import tree_copy
from packages import assert_fixed_alike_in_any_order, load_tree_sides, write_package

from migrator.config import Settings
from migrator.runner import run

TREE = Path(__file__).resolve().parent.parent / "fixtures" / "trees" / "helper_calls_across_files"


def test_the_same_classes_come_out_in_any_order_and_with_workers(tmp_path):
    orders = {
        "callers first": [
            "net.py",
            "coder.py",
            "loss.py",
            "_utils.py",
            "ping.py",
            "pong.py",
            "pool.py",
        ],
        "helpers first": [
            "pool.py",
            "pong.py",
            "ping.py",
            "_utils.py",
            "loss.py",
            "coder.py",
            "net.py",
        ],
    }
    assert_fixed_alike_in_any_order(TREE, tmp_path, orders)


def test_the_migrated_package_is_bit_exact(tmp_path):
    pytest.importorskip("torch")
    before, after = load_tree_sides(TREE, tmp_path, "net")
    b = assert_bit_exact(before.Model, after.Model, before.example_inputs)
    names = [type(m).__name__ for m in b.modules()]
    assert names.count("BoxLoss") == 2 and names.count("IouLoss") == 2
    assert names.count("InterUnion") == 2 and names.count("Ping") == 1
    assert names.count("Pool") == 1  # `from pkg.pool import Pool`: `pkg.pool` is a function


def test_calls_in_functions_methods_reach_count_also_once_rewritten(tmp_path):
    """`_inter_union` is called in `iou_loss`, which `_box_loss` calls, which a method calls:
    on both sides of the tree (the callers rewritten or not); a function no method reaches
    gives nothing."""
    from migrator.rewrite.mentions import PackageCalls

    for side in ("before", "after"):
        pkg = tree_copy(TREE, tmp_path / side, side) / "pkg"
        (pkg / "_utils.py").write_text((TREE / "pkg" / "_utils.before.py").read_text())
        assert PackageCalls(pkg / "_utils.py").from_methods("_inter_union"), side
        assert PackageCalls(pkg / "coder.py").from_methods("_box_loss"), side
    pkg = tree_copy(TREE, tmp_path / "unreached") / "pkg"
    coder = (pkg / "coder.py").read_text()
    (pkg / "coder.py").write_text(coder.replace("iou_loss(a, b)", "(a * b)"))
    assert not PackageCalls(pkg / "_utils.py").from_methods("_inter_union")


RELAY = "from .layers import halves\n\n\ndef relay(x):\n    return halves(x)\n"
LAYERS = "import torch\n\n\ndef halves(x):\n    return torch.tanh(x)\n"
NET = (
    "import torch.nn as nn\n\nfrom .mid import relay\n\n\n"
    "class Net(nn.Module):\n    def forward(self, x):\n        return relay(x)\n"
)


def test_a_decision_kept_for_its_text_is_read_again_when_a_file_it_read_changed(tmp_path):
    """`relay` has work only through `halves` of another file: decorated there, it gets no
    class, and `relay` none either; a run in the same process reads that, though `mid.py` is
    as before, and leaves `relay(x)` a call (the kept decision would import `Relay`, which
    `mid.py` no longer gets)."""
    pkg = write_package(tmp_path, {"layers.py": LAYERS, "mid.py": RELAY, "net.py": NET})
    paths = [str(pkg / name) for name in ("net.py", "mid.py", "layers.py")]
    first = {o.path.name: o for o in run(paths, Settings(), rewrite=True)}
    assert "self.relay(x)" in first["net.py"].new_text
    assert "self.halves(x)" in first["mid.py"].new_text
    (pkg / "layers.py").write_text(LAYERS.replace("def halves", "@torch.no_grad()\ndef halves"))
    again = {o.path.name: o for o in run(paths, Settings(), rewrite=True)}
    assert not again["mid.py"].changed and not again["net.py"].changed
