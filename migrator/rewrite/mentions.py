"""Which files of a package call a function from a method: what decides, for a helper
function's own file and for its callers alike, whether `fix` gives it a module twin
(`helper_modules`).

A call counts when it is `name(...)` in a method of a class that sets nothing up (not
`__init__`, nor a method named `*init*` or `*reset*`, where weights are initialised), or the
call `self.name(...)` / `self.name_<n>(...)` that `fix` makes of it: the answer does not change
while `fix` rewrites the package file by file. The file holding the function is never counted.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from pathlib import Path

from migrator.rewrite.project import module_name

_CALLED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_SUFFIX = re.compile(r"_\d+$")
_SKIPPED = frozenset({"__pycache__", "node_modules"})

_FILES: dict[Path, tuple[tuple[int, int], frozenset[str], frozenset[str] | None]] = {}
"""File -> ((mtime_ns, size), the names it calls anywhere, the names its methods call (None:
not parsed yet)), without `_<digits>` suffixes: each file is read and parsed at most once a
process while it does not change."""


class PackageCalls:
    """The calls made in the other files of the top-level package of one file."""

    def __init__(self, path: Path) -> None:
        self.own = path.resolve()
        self.files = [f for f in _package_files(self.own) if f != self.own]
        self._entries: dict[Path, list] = {}

    def from_methods(self, name: str) -> bool:
        """Whether a method in another file of the package calls `name` (see above)."""
        for path in self.files:
            entry = self._entry(path)
            if entry is None or name not in entry[1]:
                continue
            if entry[2] is None:
                entry[2] = _calls_in_methods(path)
                _FILES[path] = (entry[0], entry[1], entry[2])
            if name in entry[2]:
                return True
        return False

    def _entry(self, path: Path) -> list | None:
        """The file's cache entry, checked against the file once for this file at hand."""
        if path not in self._entries:
            try:
                stat = path.stat()
            except OSError:
                return None
            key = (stat.st_mtime_ns, stat.st_size)
            cached = _FILES.get(path)
            if cached is None or cached[0] != key:
                text = _read(path)
                called = frozenset(_SUFFIX.sub("", w) for w in _CALLED.findall(text))
                cached = _FILES[path] = (key, called, None)
            self._entries[path] = list(cached)
        return self._entries[path]


def _package_files(path: Path) -> tuple[Path, ...]:
    """The Python files of the top-level package holding `path`; none for a module outside a
    package."""
    if not (path.parent / "__init__.py").exists():
        return ()
    module, _, root = module_name(path)
    return _listing(root / module.split(".")[0])


@functools.lru_cache(maxsize=8)
def _listing(top: Path) -> tuple[Path, ...]:
    """The Python files under `top`, listed once a process (as `subclasses` lists them)."""
    files = []
    for folder, subfolders, names in os.walk(top):
        subfolders[:] = sorted(d for d in subfolders if d not in _SKIPPED and d[:1] != ".")
        files += [Path(folder, n) for n in sorted(names) if n.endswith(".py")]
    return tuple(files)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _calls_in_methods(path: Path) -> frozenset[str]:
    try:
        tree = ast.parse(_read(path))
    except (SyntaxError, ValueError):
        return frozenset()
    found = set()
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for method in cls.body:
            if not isinstance(method, ast.FunctionDef) or _sets_up(method.name):
                continue
            for node in ast.walk(method):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                if isinstance(func, ast.Name):
                    found.add(func.id)
                elif (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.value.id == "self"
                ):
                    found.add(_SUFFIX.sub("", func.attr))
    return frozenset(found)


def _sets_up(method: str) -> bool:
    """A method that initialises the module rather than runs it."""
    return "init" in method or "reset" in method
