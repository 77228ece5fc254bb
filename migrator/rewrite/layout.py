"""Lay out new lines within the file's line length, the way black does for the simple calls the
rewrite writes: on one line when it fits; else the arguments on one indented line between the
brackets; else one argument per line, with a trailing comma when there are several. A `from`
import that does not fit takes one name a line, as isort wraps it."""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path

DEFAULT_LINE_LENGTH = 88
"""black's and ruff's default."""

INDENT = "    "


def call_text(head: str, args: list[str], column: int, limit: int) -> str:
    """`head(args)` for a statement starting at `column`, wrapped to fit in `limit` columns
    (continuation lines indented relative to the statement)."""
    one = f"{head}({', '.join(args)})"
    if column + len(one) <= limit or not args or "\n" in one:
        return one
    joined = ", ".join(args)
    if column + len(INDENT) + len(joined) <= limit or len(args) == 1:
        return f"{head}(\n{INDENT}{joined}\n)"
    return f"{head}(\n" + "".join(f"{INDENT}{a},\n" for a in args) + ")"


def from_import_text(module: str, names: list[str], column: int, limit: int) -> str:
    """`from module import names`, parenthesised one name a line (as isort and ruff wrap it)
    when it does not fit."""
    one = f"from {module} import {', '.join(names)}"
    if column + len(one) <= limit:
        return one
    return f"from {module} import (\n" + "".join(f"{INDENT}{n},\n" for n in names) + ")"


def line_length(path: str) -> int:
    """The `line-length` of the nearest ruff or black configuration above the file at `path`
    (`ruff.toml`, `.ruff.toml`, `[tool.ruff]` or `[tool.black]` in `pyproject.toml`), else 88."""
    return _for_folder(Path(os.path.abspath(path)).parent)


@lru_cache(maxsize=256)
def _for_folder(folder: Path) -> int:
    """As ruff and black: the first configuration found going up decides (88 when it has no
    `line-length`)."""
    for name, tables in (
        ("ruff.toml", ((),)),
        (".ruff.toml", ((),)),
        ("pyproject.toml", (("tool", "ruff"), ("tool", "black"))),
    ):
        candidate = folder / name
        try:
            data = tomllib.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        for table in tables:
            found: object = data
            for key in table:
                found = found.get(key) if isinstance(found, dict) else None
            if isinstance(found, dict):
                value = found.get("line-length", found.get("line_length"))
                return value if isinstance(value, int) and value > 0 else DEFAULT_LINE_LENGTH
    return DEFAULT_LINE_LENGTH if folder.parent == folder else _for_folder(folder.parent)
