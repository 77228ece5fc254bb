"""Walk a function's body in source order, knowing for every node whether it may run more than
once per call (loops, comprehensions, lambdas, nested functions) and which statement holds it."""

from __future__ import annotations

import ast
from typing import NamedTuple

_REPEATING = (
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.Lambda,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
)


class Visit(NamedTuple):
    node: ast.AST
    stmt: ast.stmt
    """The innermost statement holding the node."""
    repeated: bool
    """Inside a loop body, comprehension, lambda or nested function."""
    loops: tuple[ast.For, ...] = ()
    """The `for` statements whose body holds the node, outermost first."""
    other: bool = False
    """Repeated by something else than those loops' bodies (a comprehension, lambda, nested
    function, `while` or `async for` loop, a `for` target)."""


def walk(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Visit]:
    """Every node below `func` (not `func` itself, nor the Load/Store markers), in source order,
    parents first."""
    visits: list[Visit] = []
    Loops = tuple[ast.For, ...]
    stack: list[tuple[ast.AST, ast.stmt, Loops, bool]] = [
        (s, s, (), False) for s in reversed(func.body)
    ]
    while stack:
        node, stmt, loops, other = stack.pop()
        if isinstance(node, ast.stmt):
            stmt = node
        visits.append(Visit(node, stmt, bool(loops) or other, loops, other))
        children: list[tuple[ast.AST, ast.stmt, Loops, bool]]
        if isinstance(node, ast.For):
            children = [
                (node.target, stmt, loops, True),
                (node.iter, stmt, loops, other),
                *((c, c, (*loops, node), other) for c in node.body),
                *((c, c, loops, other) for c in node.orelse),
            ]
        elif isinstance(node, (ast.AsyncFor, ast.While)):
            head = node.target if isinstance(node, ast.AsyncFor) else node.test
            children = [
                (head, stmt, loops, True),
                *([(node.iter, stmt, loops, other)] if isinstance(node, ast.AsyncFor) else []),
                *((c, c, loops, True) for c in node.body),
                *((c, c, loops, other) for c in node.orelse),
            ]
        else:
            inner = other or isinstance(node, _REPEATING)
            children = []
            for field in _node_fields(type(node)):
                value = getattr(node, field, None)
                if isinstance(value, list):
                    children += [(c, stmt, loops, inner) for c in value if isinstance(c, ast.AST)]
                elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
                    children.append((value, stmt, loops, inner))
        stack.extend(reversed(children))
    return visits


_LEAF_FIELDS = frozenset(
    {"ctx", "id", "attr", "arg", "name", "module", "level", "type_comment", "kind", "conversion"}
)
"""Fields that never hold a node (names, numbers, strings, Load/Store markers)."""
_FIELDS: dict[type, tuple[str, ...]] = {}


def _node_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes."""
    if kind not in _FIELDS:
        leaves = _LEAF_FIELDS | ({"value"} if kind is ast.Constant else set())
        _FIELDS[kind] = tuple(f for f in kind._fields if f not in leaves)  # type: ignore[attr-defined]
    return _FIELDS[kind]


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes(node)` without the Load/Store markers, as a list (faster)."""
    children: list[ast.AST] = []
    for field in _node_fields(type(node)):
        value = getattr(node, field, None)
        if isinstance(value, list):
            children += [c for c in value if isinstance(c, ast.AST)]
        elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
            children.append(value)
    return children


def header_lines(stmt: ast.stmt) -> range:
    """Lines a `# migrator: skip` pragma on which applies to the statement's own expressions."""
    if isinstance(
        stmt,
        (
            ast.If,
            ast.For,
            ast.AsyncFor,
            ast.While,
            ast.With,
            ast.AsyncWith,
            ast.Try,
            ast.FunctionDef,
            ast.AsyncFunctionDef,
            ast.ClassDef,
        ),
    ):
        first = stmt.body[0].lineno if stmt.body else stmt.lineno + 1
        return range(stmt.lineno, max(first, stmt.lineno + 1))
    assert stmt.end_lineno is not None  # parsed: set
    return range(stmt.lineno, stmt.end_lineno + 1)
