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

_WORD = re.compile(r"(?<![\w.])\w+")
"""A word that is not an attribute (`.name`): what a bound name may be read as."""


def drop_unused_imports(before: ast.Module, source: str, text: str, path: str) -> str:
    """`text` (the rewrite of `source`, which `before` was parsed from) without the imports it
    no longer uses."""
    if PurePath(path).name == "__init__.py" or re.search(r"\r(?!\n)", text):
        return text
    tree = ast.parse(text)
    imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    if not imports:
        return text
    lines = text.split("\n")
    import_lines = {i for s in imports for i in range(s.lineno, _end(s) + 1)}
    rest = "\n".join(line for i, line in enumerate(lines, 1) if i not in import_lines)
    words = set(_WORD.findall(rest))
    editable = [s for s in imports if _editable(s, tree.body, lines)]
    gone = {
        id(a): _bound(a, s)
        for s in editable
        for a in s.names
        if a.name != "*" and _bound(a, s) not in words
    }
    used = _named(before, source, set(gone.values()))
    edits: dict[int, str | None] = {}
    for stmt in editable:
        unused = [a for a in stmt.names if gone.get(id(a)) in used]
        if not unused or (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            continue
        kept = [a for a in stmt.names if a not in unused]
        if not kept:
            edits[stmt.lineno] = None
        elif stmt.lineno == _end(stmt) and "(" not in lines[stmt.lineno - 1]:
            edits[stmt.lineno] = ast.unparse(
                ast.Import(names=kept)
                if isinstance(stmt, ast.Import)
                else ast.ImportFrom(module=stmt.module, names=kept, level=stmt.level)
            ) + ("\r" if lines[stmt.lineno - 1].endswith("\r") else "")
    if not edits:
        return text
    edited_at = {i: s for s in imports if s.lineno in edits for i in range(s.lineno, _end(s) + 1)}
    out: list[str] = []
    skip_blank = False
    for i, line in enumerate(lines, 1):
        edited = edited_at.get(i)
        if edited is not None:
            new = edits[edited.lineno]
            if new is not None and i == edited.lineno:
                out.append(new)
            elif new is None and i == _end(edited):
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


def _editable(stmt: ast.stmt, body: list[ast.stmt], lines: list[str]) -> bool:
    """Whether the statement has its lines to itself, starts them, and carries no comment."""
    own = range(stmt.lineno, _end(stmt) + 1)
    return (
        stmt.col_offset == 0
        and not any(o is not stmt and (o.lineno in own or _end(o) in own) for o in body)
        and not any("#" in lines[i - 1] for i in own)
    )
