"""Where new import statements go: in isort's order (ruff's and black's profile), so the added
lines look written by hand. Sections come in the order `__future__`, standard library, third
party, first party (the file's own package), local (relative); within a section, `import x`
statements come before `from x import y` ones, each sorted by module name."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import libcst as cst

FUTURE, STDLIB, THIRD_PARTY, FIRST_PARTY, LOCAL = range(5)


def section(module: str, relative: bool, package: str) -> int:
    """isort's section of an import of `module` in a file of `package` (its top-level name)."""
    top = module.split(".")[0]
    if relative:
        return LOCAL
    if top == "__future__":
        return FUTURE
    if package and top == package:
        return FIRST_PARTY
    return STDLIB if top in sys.stdlib_module_names else THIRD_PARTY


def sort_key(module: str, is_from: bool) -> tuple[bool, str]:
    """isort's order inside a section."""
    return is_from, module.lower()


def _described(stmt: cst.CSTNode, package: str) -> tuple[int, tuple[bool, str]] | None:
    """(section, sort key) of a statement that holds only imports (None for anything else)."""
    if not isinstance(stmt, cst.SimpleStatementLine) or not stmt.body:
        return None
    first = stmt.body[0]
    if not all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
        return None
    empty = cst.Module([])
    if isinstance(first, cst.Import):
        module = empty.code_for_node(first.names[0].name)
        return section(module, False, package), sort_key(module, False)
    assert isinstance(first, cst.ImportFrom)
    module = empty.code_for_node(first.module) if first.module is not None else ""
    return section(module, bool(first.relative), package), sort_key(module, True)


def _top_block(body: Sequence[cst.CSTNode], package: str) -> list[tuple[int, int, tuple]]:
    """(index, section, sort key) of the import statements at the top of a module: after its
    docstring, up to the first statement that is not an import once imports began."""
    found: list[tuple[int, int, tuple]] = []
    for i, stmt in enumerate(body):
        described = _described(stmt, package)
        if described is not None:
            found.append((i, *described))
        elif found or not isinstance(stmt, cst.SimpleStatementLine):
            break
    return found


def insert_imports(
    statements: Sequence[cst.BaseStatement], codes: list[str], package: str, fallback: int
) -> list[cst.BaseStatement]:
    """`statements` with the import statements `codes` inserted where isort would put them
    (`fallback`: the place when the module has no import yet)."""
    body = list(statements)
    for code in codes:
        new = cst.parse_statement(code + "\n")
        described = _described(new, package)
        assert described is not None  # `codes` are import statements
        sect, key = described
        block = _top_block(body, package)
        same = [(i, k) for i, s, k in block if s == sect]
        after_it = [i for i, k in same if k > key]
        lower = [i for i, s, _ in block if s < sect]
        higher = [i for i, s, _ in block if s > sect]
        if after_it:
            at = after_it[0]
            lines = list(body[at].leading_lines)  # type: ignore[attr-defined]
            blank = next((j for j, line in enumerate(lines) if line.comment), len(lines))
            new = new.with_changes(leading_lines=lines[:blank])
            body[at] = body[at].with_changes(leading_lines=lines[blank:])
        elif same:
            at = same[-1][0] + 1
        elif lower:
            at = lower[-1] + 1
            new = new.with_changes(leading_lines=[cst.EmptyLine()])
        elif higher:
            at = higher[0]
            lines = list(body[at].leading_lines)  # type: ignore[attr-defined]
            blank = next((j for j, line in enumerate(lines) if line.comment), len(lines))
            new = new.with_changes(leading_lines=lines[:blank])
            body[at] = body[at].with_changes(leading_lines=[cst.EmptyLine()] + lines[blank:])
        else:
            at = fallback
        body.insert(at, new)
    return body
