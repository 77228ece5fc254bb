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
import os
import re
from pathlib import Path

from migrator.rewrite.project import module_name

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SUFFIX = re.compile(r"_\d+$")
_SKIPPED = frozenset({"__pycache__", "node_modules"})

_CALLS: dict[Path, tuple[tuple[int, int], frozenset[str], frozenset[str] | None]] = {}
"""File -> ((mtime_ns, size), its words, the names its methods call (None: not parsed yet)),
all without `_<digits>` suffixes: each file is read (and parsed) once a process while it does
not change."""


def package_files(path: Path) -> list[Path]:
    """The Python files of the top-level package holding `path`; none for a module outside a
    package."""
    if not (path.resolve().parent / "__init__.py").exists():
        return []
    module, _, root = module_name(path)
    top = root / module.split(".")[0]
    files = []
    for folder, subfolders, names in os.walk(top):
        subfolders[:] = sorted(d for d in subfolders if d not in _SKIPPED and d[:1] != ".")
        files += [Path(folder, n) for n in sorted(names) if n.endswith(".py")]
    return files


def called_elsewhere(name: str, path: Path, files: list[Path]) -> bool:
    """Whether a method in a file of `files` other than `path` calls `name` (see above)."""
    own = path.resolve()
    return any(f.resolve() != own and name in _method_calls(f, name) for f in files)


def _method_calls(path: Path, name: str) -> frozenset[str]:
    """The names the methods of the file at `path` call, parsed only if it names `name`."""
    try:
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        cached = _CALLS.get(path)
        if cached is None or cached[0] != key:
            text = path.read_text(encoding="utf-8", errors="replace")
            cached = (key, frozenset(_SUFFIX.sub("", w) for w in set(_WORD.findall(text))), None)
        if name in cached[1] and cached[2] is None:
            text = path.read_text(encoding="utf-8", errors="replace")
            cached = (key, cached[1], _calls_in_methods(text))
    except OSError:
        return frozenset()
    _CALLS[path] = cached
    return cached[2] if name in cached[1] and cached[2] is not None else frozenset()


def _calls_in_methods(text: str) -> frozenset[str]:
    try:
        tree = ast.parse(text)
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
