"""Where new import statements go: in isort's order (ruff's and black's profile), so the added
lines look written by hand. Sections come in the order `__future__`, standard library, third
party, first party (the file's own package), local (relative); within a section, `import x`
statements come before `from x import y` ones, each sorted by module name.

One rule (`place`) for both ways of writing them: the codemod inserts them in a LibCST module
(`codemod.insert_imports`), and `insertions` computes the same lines as text, without LibCST,
when the top of the file is laid out plainly (it says None otherwise)."""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

FUTURE, STDLIB, THIRD_PARTY, FIRST_PARTY, LOCAL = range(5)

Described = tuple[int, tuple[bool, str]]
"""An import statement's section and sort key."""
Kind = Literal["imports", "docstring", "simple", "compound"]
"""A top-level statement: a line of imports only, a string alone (the module's docstring when
first), another simple statement, or a compound one."""
How = Literal["before", "after", "after_blank", "before_blank"]
"""How a new import is inserted at its place: before a statement, taking the blank lines above
it up to its first comment; right after one; after one with a blank line between (a new
section after a lower one); before one, taking its blank lines, with a blank line between (a
new section before a higher one)."""


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


def top_block(statements: Iterable[tuple[Kind, Described | None]]) -> list[tuple[int, Described]]:
    """(index, description) of the import statements at the top of a module: after its
    docstring, up to the first statement that is not an import once imports began."""
    found: list[tuple[int, Described]] = []
    for i, (kind, described) in enumerate(statements):
        if described is not None:
            found.append((i, described))
        elif found or kind == "compound":
            break
    return found


def place(block: list[tuple[int, Described]], new: Described) -> tuple[int, How] | None:
    """Where isort puts the import statement described `new` among the module's top `block`
    of imports: (index of the statement it goes before or after, how); None when the block is
    empty (`import_position` then says where)."""
    sect, key = new
    same = [(i, k) for i, (s, k) in block if s == sect]
    after_it = [i for i, k in same if k > key]
    lower = [i for i, (s, _) in block if s < sect]
    higher = [i for i, (s, _) in block if s > sect]
    if after_it:
        return after_it[0], "before"
    if same:
        return same[-1][0], "after"
    if lower:
        return lower[-1], "after_blank"
    if higher:
        return higher[0], "before_blank"
    return None


def import_position(kinds: Sequence[Kind]) -> int:
    """The index a module's first import goes at: after its leading docstring, `__future__`
    imports and top import block."""
    at = 0
    for i, kind in enumerate(kinds):
        if kind == "imports":
            at = i + 1
        elif i == 0 and kind == "docstring":
            at = 1
        elif at or kind == "compound":
            break
    return at


Line = int | str
"""A line of the file (its number), or a new line (its text)."""


@dataclass
class _Statement:
    """A top-level statement of the text: its leading blank and comment lines, its own lines
    (line numbers of the file, or the text of a new import)."""

    kind: Kind
    described: Described | None
    leading: list[Line]
    own: list[Line]
    """A statement of the file: its first line; a new import: its lines."""


def insertions(
    tree: ast.Module, lines: list[str], codes: list[str], package: str
) -> dict[int, str] | None:
    """The text to insert before lines of the file (`lines`, split at its line breaks, which
    `tree` was parsed from; `len(lines)`: after its last line break) so that the import
    statements `codes` land where the codemod puts them; None when the text before the first
    compound statement is not laid out plainly (statements sharing lines, lines between
    statements that are neither blank nor a comment, a module spelled otherwise than `ast`
    gives it, a string that may be the docstring and is not one string, no line break at the
    end)."""
    if lines[-1] or not tree.body:
        return None
    try:
        body, end = _top(tree, lines, package)
    except _Unplain:
        return None
    fallback = import_position([s.kind for s in body])
    for code in codes:
        kind, described = _describe(ast.parse(code).body[0], code.split("\n"), package)
        assert described is not None  # `codes` are import statements
        own: list[Line] = [*code.split("\n")]
        new = _Statement(kind, described, [], own)
        placed = place(top_block((s.kind, s.described) for s in body), described)
        if placed is None:
            body.insert(fallback, new)
            continue
        at, how = placed
        if how in ("before", "before_blank"):
            leading = body[at].leading
            blank = next((j for j, n in enumerate(leading) if _comment(n, lines)), len(leading))
            new.leading = leading[:blank]
            above: list[Line] = [""] if how == "before_blank" else []
            body[at].leading = above + leading[blank:]
        else:
            new.leading = [""] if how == "after_blank" else []
            at += 1
        body.insert(at, new)
    return _inserted(body, end)


def _top(tree: ast.Module, lines: list[str], package: str) -> tuple[list[_Statement], int]:
    """The module's statements up to its first compound one, and the line after the last."""
    body: list[_Statement] = []
    last = 0
    for stmt in tree.body:
        first = _first_line(stmt)
        if first <= last or any(
            (text := lines[n - 1].strip()) and not text.startswith("#")
            for n in range(last + 1, first)
        ):
            raise _Unplain
        between: list[Line] = list(range(last + 1, first))
        kind, described = _describe(stmt, lines, package)
        if kind == "docstring" and not body and not _one_string(stmt, lines):
            raise _Unplain
        # the lines before the first statement are the module's header, not its own
        body.append(_Statement(kind, described, between if body else [], [first]))
        assert stmt.end_lineno is not None  # parsed: set
        last = stmt.end_lineno
        if kind == "compound":
            break
    return body, last + 1


def _inserted(body: list[_Statement], end: int) -> dict[int, str]:
    """The new lines of `body` by the file line they go before (`end`: the line after the last
    statement)."""
    order = [item for statement in body for item in (*statement.leading, *statement.own)]
    found: dict[int, str] = {}
    pending: list[str] = []
    following = end
    for item in reversed(order):
        if isinstance(item, str):
            pending.insert(0, item + "\n")
            continue
        if pending:
            found[following] = "".join(pending)
            pending = []
        following = item
    if pending:
        found[following] = "".join(pending)
    return found


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0].lineno if decorators else stmt.lineno


def _comment(item: Line, lines: list[str]) -> bool:
    return isinstance(item, int) and lines[item - 1].strip().startswith("#")


def _describe(stmt: ast.stmt, lines: list[str], package: str) -> tuple[Kind, Described | None]:
    """The statement's kind, and its section and sort key when it is an import (as the codemod
    reads them: the module as written)."""
    if hasattr(stmt, "body") or isinstance(stmt, ast.Match):
        return "compound", None
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return ("docstring" if isinstance(stmt.value.value, (str, bytes)) else "simple"), None
    if isinstance(stmt, ast.Import):
        module = stmt.names[0].name
        described = section(module, False, package), sort_key(module, False)
    elif isinstance(stmt, ast.ImportFrom):
        module = stmt.module or ""
        described = section(module, bool(stmt.level), package), sort_key(module, True)
    else:
        return "simple", None
    assert stmt.end_lineno is not None  # parsed: set
    if module not in "\n".join(lines[stmt.lineno - 1 : stmt.end_lineno]):
        raise _Unplain  # `torch . nn`: the codemod sorts the module as written
    return "imports", described


def _one_string(stmt: ast.stmt, lines: list[str]) -> bool:
    """Whether the string statement is one string token (not `"a" "b"`), as LibCST's
    docstring test requires."""
    assert stmt.end_lineno is not None  # parsed: set
    text = "\n".join(lines[stmt.lineno - 1 : stmt.end_lineno]) + "\n"
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return sum(t.type == tokenize.STRING for t in tokens) == 1


class _Unplain(Exception):
    """The text is not laid out plainly enough to place imports without LibCST."""
