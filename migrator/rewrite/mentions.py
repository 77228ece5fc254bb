"""Which files of a package name a function: what decides, for a helper function's own file and
for its callers alike, whether `fix` gives it a module twin (`helper_modules`).

The answer must not change while `fix` rewrites the package file by file: a caller's
`resample_abs_pos_embed(x)` becomes `self.resample_abs_pos_embed(x)` (or `..._1`), so a word is
counted without a trailing `_<digits>`, and the file holding the function is never counted.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from migrator.rewrite.project import module_name

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SUFFIX = re.compile(r"_\d+$")
_SKIPPED = frozenset({"__pycache__", "node_modules"})

_WORDS: dict[Path, tuple[tuple[int, int], frozenset[str]]] = {}
"""File -> ((mtime_ns, size), its words without `_<digits>` suffixes): each file is read once
a process while it does not change."""


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


def mentioned_elsewhere(name: str, path: Path, files: list[Path]) -> bool:
    """Whether a file of `files` other than `path` names `name` (as a word, maybe `name_<n>`)."""
    own = path.resolve()
    return any(name in _words(f) for f in files if f.resolve() != own)


def _words(path: Path) -> frozenset[str]:
    try:
        stat = path.stat()
    except OSError:
        return frozenset()
    key = (stat.st_mtime_ns, stat.st_size)
    cached = _WORDS.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    words = frozenset(_SUFFIX.sub("", w) for w in set(_WORD.findall(text)))
    _WORDS[path] = (key, words)
    return words
