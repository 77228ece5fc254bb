"""Load one file's two versions side by side, each in isolation.

A model file usually lives in a package that imports itself (`from .layers import Conv`,
`from zoo.layers import Conv`). Each side is imported afresh with the project's top-level names
removed from `sys.modules` for the duration, and a meta path finder serving that side's text for
the files it overrides (the git revision's, or the text before `migrator fix`). Afterwards the
side's modules are taken out of `sys.modules` again and what was there before is put back, so
neither side sees the other's modules; a file is imported once per side. Code objects are named
`file.py@<side>`, and the text is registered with linecache, so tracebacks show the right lines.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

_OWN_PACKAGE = __name__.partition(".")[0]
_FILE_MODULE = "_migrator_verified_file"
"""Module name of a file imported on its own (its name is not a module name)."""


class LoadError(Exception):
    """A side that cannot be loaded; `str()` says which file, which side and why."""


@dataclass(frozen=True)
class Side:
    """One version of the project: files in `overlay` (absolute path -> source) replace the files
    on disk; every other file is read from disk."""

    label: str
    overlay: Mapping[Path, str | bytes] = field(default_factory=dict)
    imported: dict[Path, tuple[ModuleType, frozenset[Path]] | LoadError] = field(
        default_factory=dict, compare=False, repr=False
    )
    """Each file imported on this side (or why it could not be), with the overlay files used."""
    prebuilt: dict[tuple, Any] = field(default_factory=dict, compare=False, repr=False)
    """Models built on this side ahead of time (`fix --verify` builds the originals for its
    run-time evidence first), by `build_key`: each is handed out once, by `build`."""

    def __post_init__(self) -> None:
        resolved = {Path(path).resolve(): text for path, text in self.overlay.items()}
        object.__setattr__(self, "overlay", resolved)


def import_root(file: Path) -> tuple[Path, str]:
    """(folder to put on sys.path, dotted module name) of a file, climbing out of packages."""
    folder, parts = file.parent, [] if file.name == "__init__.py" else [file.stem]
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return folder, ".".join(parts)


@dataclass(frozen=True)
class Loaded:
    value: Any
    """The attribute asked for."""
    module: ModuleType
    """The module holding it."""
    overridden: frozenset[Path]
    """The side's overlay files this import used."""


def load(file: Path, attribute: str, side: Side) -> Loaded:
    """`attribute` of the module at `file`, imported in isolation for `side`, once: later loads
    on the same side reuse that import (or its failure)."""
    key = Path(file).resolve()
    if key not in side.imported:
        try:
            side.imported[key] = _import(file, side)
        except LoadError as exc:
            side.imported[key] = exc
    imported = side.imported[key]
    if isinstance(imported, LoadError):
        raise imported
    module, served = imported
    value: Any = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise LoadError(f"{file.name} ({side.label}) has no `{attribute}`") from None
    return Loaded(value, module, served)


def _import(file: Path, side: Side) -> tuple[ModuleType, frozenset[Path]]:
    """The module at `file` imported for `side`, and the overlay files the import used.

    A file whose name is not a module name (`model.before.py`) is imported on its own, under a
    private name, with its folder on sys.path."""
    root, module_name = import_root(file)
    importable = (file.name == "__init__.py" or file.stem.isidentifier()) and all(
        part.isidentifier() for part in module_name.split(".")
    )
    top = module_name.partition(".")[0] if importable else _FILE_MODULE
    with _isolated(root, top, side) as finder:
        try:
            module = (
                importlib.import_module(module_name) if importable else _import_file(file, finder)
            )
        except Exception as exc:
            raise LoadError(
                f"cannot import {file.name} ({side.label}): {type(exc).__name__}: {exc}"
            ) from exc
    return module, frozenset(finder.served)


def _import_file(file: Path, finder: _OverlayFinder) -> ModuleType:
    source = finder.source(file)
    loader = (
        importlib.machinery.SourceFileLoader(_FILE_MODULE, str(file))
        if source is None
        else _SourceLoader(source, f"{file}@{finder.side.label}")
    )
    spec = importlib.util.spec_from_file_location(_FILE_MODULE, file, loader=loader)
    assert spec is not None  # a loader is given
    module = importlib.util.module_from_spec(spec)
    sys.modules[_FILE_MODULE] = module
    loader.exec_module(module)
    return module


def _project_names(root: Path, top: str) -> frozenset[str]:
    """Top-level module names importable from `root` that belong to the project there: always the
    target's own `top` package; others unless a module of that name was imported from elsewhere
    (then it is not the project's, and the model does not import it from here either)."""
    names = set()
    for entry in root.iterdir():
        if entry.suffix == ".py":
            names.add(entry.stem)
        elif entry.is_dir() and entry.name.isidentifier():
            names.add(entry.name)
    names -= set(sys.stdlib_module_names) | set(sys.builtin_module_names) | {_OWN_PACKAGE}
    outside = {n for n in names if n in sys.modules and not _lives_in(sys.modules[n], root)}
    return frozenset(names - outside) | {top}


def _lives_in(module: ModuleType, root: Path) -> bool:
    places = [getattr(module, "__file__", None), *getattr(module, "__path__", [])]
    return any(p and Path(p).resolve().is_relative_to(root.resolve()) for p in places)


@contextmanager
def _isolated(root: Path, top: str, side: Side) -> Iterator[_OverlayFinder]:
    names = _project_names(root, top)

    def ours(name: str) -> bool:
        return name.partition(".")[0] in names

    stashed = {name: sys.modules.pop(name) for name in list(sys.modules) if ours(name)}
    finder = _OverlayFinder(side)
    sys.path.insert(0, str(root))
    sys.meta_path.insert(0, finder)
    importlib.invalidate_caches()
    try:
        yield finder
    finally:
        for name in [name for name in sys.modules if ours(name)]:
            del sys.modules[name]
        sys.modules.update(stashed)
        sys.meta_path.remove(finder)
        sys.path.remove(str(root))


class _OverlayFinder(importlib.abc.MetaPathFinder):
    """Serves the side's text for the files it overrides; other files load as usual."""

    def __init__(self, side: Side) -> None:
        self.side = side
        self.served: set[Path] = set()

    def source(self, file: str | Path) -> str | bytes | None:
        """The side's text for `file` (recorded as served), or None to read it from disk."""
        path = Path(file).resolve()
        text = self.side.overlay.get(path)
        if text is not None:
            self.served.add(path)
        return text

    def find_spec(self, fullname, path=None, target=None):
        if not self.side.overlay:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None:
            return self._new_file_spec(fullname, path)
        if not spec.has_location:
            return None
        assert spec.origin is not None  # it has a location
        source = self.source(spec.origin)
        if source is None:
            return None
        loader = _SourceLoader(source, f"{spec.origin}@{self.side.label}")
        return importlib.util.spec_from_file_location(
            fullname,
            spec.origin,
            loader=loader,
            submodule_search_locations=spec.submodule_search_locations,
        )

    def _new_file_spec(self, fullname, path):
        """A module that exists only on this side (a file the rewrite adds)."""
        name = fullname.rsplit(".", 1)[-1]
        for entry in path if path is not None else sys.path:
            origin = Path(entry or ".").resolve() / f"{name}.py"
            source = self.source(origin)
            if source is not None:
                loader = _SourceLoader(source, f"{origin}@{self.side.label}")
                return importlib.util.spec_from_file_location(fullname, origin, loader=loader)
        return None


class _SourceLoader(importlib.abc.Loader):
    def __init__(self, source: str | bytes, filename: str) -> None:
        self.text = importlib.util.decode_source(source) if isinstance(source, bytes) else source
        self.filename = filename

    def create_module(self, spec):
        return None

    def exec_module(self, module: ModuleType) -> None:
        lines = self.text.splitlines(keepends=True)
        linecache.cache[self.filename] = (len(self.text), None, lines, self.filename)
        exec(compile(self.text, self.filename, "exec", dont_inherit=True), module.__dict__)

    def get_source(self, fullname: str) -> str:
        return self.text
