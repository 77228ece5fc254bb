"""Fixture trees and migrated models in tests: a package fixed in several orders, a tree's sides
imported afresh, and original and migrated models proven bit-exact in eval and train mode."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from fixture_cases import tree_copy

from migrator.cli import main


def texts(pkg: Path) -> dict[str, str]:
    """The text of each Python file of the folder `pkg`, by name."""
    return {p.name: p.read_text() for p in sorted(pkg.glob("*.py"))}


def assert_fixed_alike_in_any_order(tree: Path, root: Path, orders: dict[str, list[str]]) -> None:
    """`fix` of a fresh copy of the fixture tree's originals under `root`, given the files of its
    package `pkg` in each of `orders`, then the whole package with `-j 2`, exits 1 and writes
    the tree's after side; `fix --check` of it then exits 0 and leaves it so."""
    expected = texts(tree_copy(tree, root / "expected", "after") / "pkg")
    for name, args in {**orders, "-j 2": ["-j", "2", "."]}.items():
        pkg = tree_copy(tree, root / name.replace(" ", "_")) / "pkg"
        paths = [a if a.startswith("-") or a == "2" else str(pkg / a) for a in args]
        assert main(["fix", *paths]) == 1, name
        assert texts(pkg) == expected, name
        assert main(["fix", "--check", str(pkg)]) == 0, name
        assert texts(pkg) == expected, name


def forget(package: str = "pkg") -> None:
    """Drop `package` and its submodules from `sys.modules` (the next import reads them anew)."""
    for name in [n for n in sys.modules if n.split(".")[0] == package]:
        del sys.modules[name]


def load_package(root: Path, module: str, package: str = "pkg") -> ModuleType:
    """`<package>.<module>` imported afresh from the folder `root`."""
    forget(package)
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(f"{package}.{module}")
    finally:
        sys.path.remove(str(root))


def load_sides(
    before: Path, after: Path, module: str, package: str = "pkg"
) -> tuple[ModuleType, ModuleType]:
    """`<package>.<module>` from the folders `before` and `after`; neither stays in
    `sys.modules` (each stays reachable through its module)."""
    sides = load_package(before, module, package), load_package(after, module, package)
    forget(package)
    return sides


def load_tree_sides(tree: Path, root: Path, module: str) -> tuple[ModuleType, ModuleType]:
    """`pkg.<module>` of `tree`'s before and after sides, copied under `root`."""
    return load_sides(
        tree_copy(tree, root / "before"), tree_copy(tree, root / "after", "after"), module
    )


def loaded_pair(original: Callable[[], Any], migrated: Callable[[], Any]) -> tuple[Any, Any]:
    """The original model built after `torch.manual_seed(0)`, and the migrated one built after
    `torch.manual_seed(1)` then given the original's state_dict (strictly: the same keys in the
    same order), so that what it computes owes nothing to its own initialisation."""
    import torch

    torch.manual_seed(0)
    a = original()
    torch.manual_seed(1)
    b = migrated()
    b.load_state_dict(a.state_dict(), strict=True)
    assert list(a.state_dict()) == list(b.state_dict())
    return a, b


def assert_same_outputs(expected: Any, actual: Any) -> None:
    """`torch.equal` tensor for tensor: tuples and lists of the same type and length, element by
    element; anything else `==`."""
    import torch

    if isinstance(expected, (tuple, list)):
        assert type(expected) is type(actual) and len(expected) == len(actual)
        for e, a in zip(expected, actual):
            assert_same_outputs(e, a)
    elif isinstance(expected, torch.Tensor):
        assert torch.equal(expected, actual)
    else:
        assert expected == actual


def assert_bit_exact(
    original: Callable[[], Any], migrated: Callable[[], Any], inputs: Callable[[], Sequence[Any]]
) -> Any:
    """In eval then train mode: after `torch.manual_seed(0)` the two models are built, the
    migrated one takes the original's state_dict (strictly: the same keys in the same order),
    `inputs()` are made, and both models' outputs on them are the same (`assert_same_outputs`).
    The migrated model of the last (train) mode."""
    import torch

    for train in (False, True):
        torch.manual_seed(0)
        a = original().train(train)
        b = migrated().train(train)
        b.load_state_dict(a.state_dict(), strict=True)
        assert list(a.state_dict()) == list(b.state_dict())
        x = inputs()
        assert_same_outputs(a(*x), b(*x))
    return b
