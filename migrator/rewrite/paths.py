"""How many of a set of nodes one call of a function can run: calls in the two arms of an `if`
(or of a conditional expression), or after a `return` in one arm, never run together, so a
module called once in each arm is not reused."""

from __future__ import annotations

import ast


def most_runs(func: ast.FunctionDef, nodes: list[ast.AST]) -> int:
    """The most of `nodes` that run on any one path through `func` (a node inside a loop or
    a nested function counts once: callers treat those as repeated anyway)."""
    wanted = {id(n) for n in nodes}
    through, ended = _block(func.body, wanted)
    return max(through or 0, ended or 0)


def _block(stmts: list[ast.stmt], wanted: set[int]) -> tuple[int | None, int | None]:
    """(most on paths that run to the end of `stmts`, most on paths that return or raise
    in them); None where there is no such path."""
    through: int | None = 0
    ended: int | None = None
    for stmt in stmts:
        if through is None:
            break
        if isinstance(stmt, ast.If):
            test = _expr(stmt.test, wanted)
            arms = [_block(stmt.body, wanted), _block(stmt.orelse, wanted)]
            ended = _most(ended, *(through + test + e for _, e in arms if e is not None))
            ends = [t for t, _ in arms if t is not None]
            through = through + test + max(ends) if ends else None
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            start = through + sum(_expr(item, wanted) for item in stmt.items)
            inner, inner_ended = _block(stmt.body, wanted)
            ended = _most(ended, *([start + inner_ended] if inner_ended is not None else []))
            through = None if inner is None else start + inner
        elif isinstance(stmt, (ast.Return, ast.Raise)):
            ended = _most(ended, through + _expr(stmt, wanted))
            through = None
        elif isinstance(stmt, _COMPOUND):  # every node counted, as if each part ran
            through += sum(id(n) in wanted for n in ast.walk(stmt))
        else:
            through += _expr(stmt, wanted)
    return through, ended


_COMPOUND = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    ast.TryStar,
    ast.Match,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
)


def _expr(node: ast.AST, wanted: set[int]) -> int:
    if isinstance(node, ast.IfExp):
        return _expr(node.test, wanted) + max(_expr(node.body, wanted), _expr(node.orelse, wanted))
    return (id(node) in wanted) + sum(_expr(c, wanted) for c in ast.iter_child_nodes(node))


def _most(current: int | None, *values: int) -> int | None:
    return max([v for v in (current, *values) if v is not None], default=None)
