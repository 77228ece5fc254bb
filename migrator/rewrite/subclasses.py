"""Subclasses in other files of a class's package. A module created in a base class must not
take a name that a subclass anywhere in its package assigns or calls: the subclass would
overwrite it (or be shadowed by it) after `super().__init__()`. Files are found by a cheap text
scan of the package, done once per package and process; only candidates are parsed."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path

from migrator.rewrite.project import kept_module_name
from migrator.rewrite.real_paths import resolved

_CLASS = re.compile(r"class[ \t]+\w+[ \t]*\(([^)]*)\)")
"""`class Name(bases)`: `_bases_spelled` keeps those that start their line (but for the
indentation). Starting with a word, it is searched for as a word (a pattern starting with
`^` is tried at every position: four times slower)."""


def subclass_files(path: Path, base_names: set[str]) -> list[Path]:
    """Files of the package of `path` (its folder, outside a package) that declare a class
    with a base spelled with one of `base_names` (last dotted part)."""
    return files_naming(package_index(path), base_names)


def package_index(path: Path) -> dict[str, frozenset[Path]]:
    """Base name -> files of the package of `path` declaring a class with a base of that name."""
    return _index(_package_folder(path))


def files_naming(index: dict[str, frozenset[Path]], base_names: set[str]) -> list[Path]:
    """The files of `index` declaring a class with a base spelled with one of `base_names`."""
    return sorted({f for name in base_names for f in index.get(name, ())})


def _package_folder(path: Path) -> tuple[Path, bool]:
    """(folder to scan, recursively?): the top package's folder, or the file's own folder."""
    module, _, root = kept_module_name(path)
    if "." in module:
        return resolved(root / module.split(".")[0]), True
    return resolved(path).parent, False


@functools.lru_cache(maxsize=8)
def _index(folder: tuple[Path, bool]) -> dict[str, frozenset[Path]]:
    """Base name -> files declaring a class with a base of that name."""
    where, recursive = folder
    found: dict[str, set[Path]] = {}
    for path in where.rglob("*.py") if recursive else where.glob("*.py"):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        real: Path | None = None
        for bases in _bases_spelled(text):
            for base in bases.split(","):
                name = base.split("[", 1)[0].strip().rsplit(".", 1)[-1]
                if name.isidentifier():
                    real = real or resolved(path)
                    found.setdefault(name, set()).add(real)
    return {name: frozenset(files) for name, files in found.items()}


def _bases_spelled(text: str) -> Iterator[str]:
    """The bases between the parentheses of each class statement starting its line (but for
    spaces and tabs), in order."""
    at = 0
    while match := _CLASS.search(text, at):
        start = match.start()
        if text[text.rfind("\n", 0, start) + 1 : start].strip(" \t"):
            at = start + 1  # not the first word of its line
            continue
        yield match.group(1)
        at = match.end()
