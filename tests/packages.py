"""Packages in tests: written from texts or copied from a fixture tree, fixed in several orders,
and imported afresh."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

from fixture_cases import tree_copy

from migrator.cli import main


def write_package(root: Path, files: dict[str, str], package: str = "pkg") -> Path:
    """The package `root / package`: an empty `__init__.py` and `files` (name: text); its folder."""
    folder = root / package
    folder.mkdir(parents=True)
    for name, text in {"__init__.py": "", **files}.items():
        (folder / name).write_text(text)
    return folder


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
