"""Walk a function's body in source order, knowing for every node whether it may run more than
once per call (loops, comprehensions, lambdas, nested functions) and which statement holds it."""

from __future__ import annotations

import ast
from dataclasses import dataclass

_REPEATING = (
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.Lambda,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
)


@dataclass(frozen=True, slots=True)
class Visit:
    node: ast.AST
    stmt: ast.stmt
    """The innermost statement holding the node."""
    repeated: bool
    """Inside a loop body, comprehension, lambda or nested function."""


def walk(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Visit]:
    """Every node below `func` (not `func` itself, nor the Load/Store markers), in source order,
    parents first."""
    visits: list[Visit] = []
    stack: list[tuple[ast.AST, ast.stmt, bool]] = [(s, s, False) for s in reversed(func.body)]
    while stack:
        node, stmt, repeated = stack.pop()
        if isinstance(node, ast.stmt):
            stmt = node
        visits.append(Visit(node, stmt, repeated))
        if isinstance(node, (ast.For, ast.AsyncFor)):
            children = [
                (node.target, stmt, True),
                (node.iter, stmt, repeated),
                *((c, c, True) for c in node.body),
                *((c, c, repeated) for c in node.orelse),
            ]
        elif isinstance(node, ast.While):
            children = [
                (node.test, stmt, True),
                *((c, c, True) for c in node.body),
                *((c, c, repeated) for c in node.orelse),
            ]
        else:
            inner = repeated or isinstance(node, _REPEATING)
            children = []
            for field in node._fields:
                value = getattr(node, field, None)
                if isinstance(value, list):
                    children += [(c, stmt, inner) for c in value if isinstance(c, ast.AST)]
                elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
                    children.append((value, stmt, inner))
        stack.extend(reversed(children))
    return visits


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
