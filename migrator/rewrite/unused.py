"""Drop the imports a rewrite left unused (`import torch.nn.functional as F` once the last `F.`
call became a module), as a person would.

Conservative: a name goes only when the file used it before the rewrite and its word appears
nowhere else in the rewritten file (code, strings, comments, `__all__`; `.name`, an attribute,
does not count); only module-level import
statements on lines of their own, without comments, are edited, and never in an `__init__.py`
(whose imports may be re-exports).
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePath
from typing import NamedTuple

_WORD = re.compile(r"(?<![\w.])\w+")
"""A word that is not an attribute (`.name`): what a bound name may be read as."""


class Placed(NamedTuple):
    """A top-level statement of a text, at its lines there (its node's may be another text's)."""

    node: ast.stmt
    first: int
    last: int


def drop_unused_imports(
    before: ast.Module, source: str, text: str, path: str, top: list[Placed] | None = None
) -> str:
    """`text` (the rewrite of `source`, which `before` was parsed from) without the imports it
    no longer uses. `top`: the simple statements at the top level of `text` (at least; the
    text is parsed when not given)."""
    if PurePath(path).name == "__init__.py" or re.search(r"\r(?!\n)", text):
        return text
    if top is None:
        top = [Placed(s, s.lineno, _end(s)) for s in ast.parse(text).body]
    imports: list[tuple[Placed, ast.Import | ast.ImportFrom]] = []
    for placed in top:
        if isinstance(placed.node, (ast.Import, ast.ImportFrom)):
            imports.append((placed, placed.node))
    if not imports:
        return text
    lines = text.split("\n")
    import_lines = {i for s, _ in imports for i in range(s.first, s.last + 1)}
    rest = "\n".join(line for i, line in enumerate(lines, 1) if i not in import_lines)
    words = set(_WORD.findall(rest))
    editable = [(s, stmt) for s, stmt in imports if _editable(s, top, lines)]
    gone = {
        id(a): _bound(a, stmt)
        for _, stmt in editable
        for a in stmt.names
        if a.name != "*" and _bound(a, stmt) not in words
    }
    used = _named(before, source, set(gone.values()))
    edits: dict[int, str | None] = {}
    for placed, stmt in editable:
        unused = [a for a in stmt.names if gone.get(id(a)) in used]
        if not unused or (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            continue
        kept = [a for a in stmt.names if a not in unused]
        if not kept:
            edits[placed.first] = None
        elif placed.first == placed.last and "(" not in lines[placed.first - 1]:
            edits[placed.first] = ast.unparse(
                ast.Import(names=kept)
                if isinstance(stmt, ast.Import)
                else ast.ImportFrom(module=stmt.module, names=kept, level=stmt.level)
            ) + ("\r" if lines[placed.first - 1].endswith("\r") else "")
    if not edits:
        return text
    edited_at = {i: s for s, _ in imports if s.first in edits for i in range(s.first, s.last + 1)}
    out: list[str] = []
    skip_blank = False
    for i, line in enumerate(lines, 1):
        edited = edited_at.get(i)
        if edited is not None:
            new = edits[edited.first]
            if new is not None and i == edited.first:
                out.append(new)
            elif new is None and i == edited.last:
                # a statement alone between blank lines takes one of them along
                skip_blank = bool(out) and not out[-1].strip()
            continue
        if skip_blank and not line.strip() and i < len(lines):  # the text's end stays
            skip_blank = False
            continue
        skip_blank = False
        out.append(line)
    return "\n".join(out)


def _named(tree: ast.Module, source: str, names: set[str]) -> set[str]:
    """Those of `names` that `tree` (parsed from `source`) holds as a plain name: only the
    top-level statements whose text holds one of them are walked (any whose text is not ASCII,
    where a name may be spelled otherwise)."""
    if not names:
        return set()
    lines = source.split("\n")
    found: set[str] = set()
    for stmt in tree.body:
        start = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        segment = "\n".join(lines[start - 1 : _end(stmt)])
        wanted = {n for n in names - found if n in segment or not segment.isascii()}
        if wanted:
            found |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id in wanted}
    return found


def _end(stmt: ast.stmt) -> int:
    assert stmt.end_lineno is not None  # parsed: set
    return stmt.end_lineno


def _bound(alias: ast.alias, stmt: ast.Import | ast.ImportFrom) -> str:
    """The name an import alias binds."""
    if alias.asname:
        return alias.asname
    return alias.name.split(".")[0] if isinstance(stmt, ast.Import) else alias.name


def _editable(stmt: Placed, top: list[Placed], lines: list[str]) -> bool:
    """Whether the statement has its lines to itself, starts them, and carries no comment
    (a compound statement never shares a line with a top-level one: `top` need not hold
    them)."""
    own = range(stmt.first, stmt.last + 1)
    return (
        stmt.node.col_offset == 0
        and not any(o is not stmt and (o.first in own or o.last in own) for o in top)
        and not any("#" in lines[i - 1] for i in own)
    )
