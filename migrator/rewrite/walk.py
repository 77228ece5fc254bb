"""Walk a function's body in source order, knowing for every node whether it may run more than
once per call (loops, comprehensions, lambdas, nested functions) and which statement holds it."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator

_REPEATING = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda,
              ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Visit:
    node: ast.AST
    stmt: ast.stmt
    """The innermost statement holding the node."""
    repeated: bool
    """Inside a loop body, comprehension, lambda or nested function."""


def walk(func: ast.FunctionDef) -> Iterator[Visit]:
    """Every node below `func` (not `func` itself), in source order, parents first."""
    for stmt in func.body:
        yield from _walk(stmt, stmt, False)


def _walk(node: ast.AST, stmt: ast.stmt, repeated: bool) -> Iterator[Visit]:
    if isinstance(node, ast.stmt):
        stmt = node
    yield Visit(node, stmt, repeated)
    if isinstance(node, (ast.For, ast.AsyncFor)):
        yield from _walk(node.target, stmt, True)
        yield from _walk(node.iter, stmt, repeated)
        for child in node.body:
            yield from _walk(child, child, True)
        for child in node.orelse:
            yield from _walk(child, child, repeated)
        return
    if isinstance(node, ast.While):
        yield from _walk(node.test, stmt, True)
        for child in node.body:
            yield from _walk(child, child, True)
        for child in node.orelse:
            yield from _walk(child, child, repeated)
        return
    inner = repeated or isinstance(node, _REPEATING)
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, stmt, inner)


def header_lines(stmt: ast.stmt) -> range:
    """Lines a `# migrator: skip` pragma on which applies to the statement's own expressions."""
    if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
                         ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        first = stmt.body[0].lineno if stmt.body else stmt.lineno + 1
        return range(stmt.lineno, max(first, stmt.lineno + 1))
    return range(stmt.lineno, stmt.end_lineno + 1)
