"""How many of a set of nodes one call of a function can run: calls in the two arms of an `if`
(or of a conditional expression), or after a `return` in one arm, never run together, so a
module called once in each arm is not reused."""

from __future__ import annotations

import ast
from bisect import bisect_left

from migrator.rewrite.walk import all_nodes, child_nodes


class _Wanted:
    """The nodes to count, and the lines they start on: a part of the function spanning none
    of those lines holds none of them, so it is not walked (one count costs the statements of
    the function and the parts around the wanted nodes, not every node of it)."""

    def __init__(self, nodes: list[ast.AST], weights: dict[int, int] | None = None) -> None:
        self.ids = weights or dict.fromkeys((id(n) for n in nodes), 1)
        self.lines = sorted({getattr(n, "lineno", 0) for n in nodes})

    def weight(self, node: ast.AST) -> int:
        """How much `node` counts (0: not wanted)."""
        return self.ids.get(id(node), 0)

    def may_hold(self, node: ast.AST) -> bool:
        """Whether a wanted node may be `node` or below it."""
        start = getattr(node, "lineno", None)
        if start is None:  # no position (an operator, `arguments`): look inside
            return True
        decorators = getattr(node, "decorator_list", None)
        if decorators:
            start = min(start, *(d.lineno for d in decorators))
        i = bisect_left(self.lines, start)
        return i < len(self.lines) and self.lines[i] <= (getattr(node, "end_lineno", None) or start)


def most_runs(
    func: ast.FunctionDef, nodes: list[ast.AST], weights: dict[int, int] | None = None
) -> int:
    """The most of `nodes` that run on any one path through `func` (a node inside a loop or
    a nested function counts once: callers treat those as repeated anyway), each counting as
    its weight in `weights` (by id; default 1)."""
    through, ended = _block(func.body, _Wanted(nodes, weights))
    return max(through or 0, ended or 0)


def _block(stmts: list[ast.stmt], wanted: _Wanted) -> tuple[int | None, int | None]:
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
        elif isinstance(stmt, (ast.With, ast.AsyncWith)) and not _suppressing(stmt):
            start = through + sum(_expr(item, wanted) for item in stmt.items)
            inner, inner_ended = _block(stmt.body, wanted)
            ended = _most(ended, *([start + inner_ended] if inner_ended is not None else []))
            through = None if inner is None else start + inner
        elif isinstance(stmt, (ast.Return, ast.Raise)):
            ended = _most(ended, through + _expr(stmt, wanted))
            through = None
        elif isinstance(stmt, _COMPOUND):  # every node counted, as if each part ran
            through += (
                sum(wanted.weight(n) for n in all_nodes(stmt)) if wanted.may_hold(stmt) else 0
            )
        else:
            through += _expr(stmt, wanted)
    return through, ended


def _suppressing(stmt: ast.With | ast.AsyncWith) -> bool:
    """Whether a manager of the `with` may be `contextlib.suppress(...)` (any manager named
    `suppress`): what follows the `with` may then run after its body raised, even where the
    body returns, so the statement counts as every part of it ran, and goes on."""
    for item in stmt.items:
        manager = item.context_expr
        func = manager.func if isinstance(manager, ast.Call) else manager
        if (
            func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        ) == "suppress":
            return True
    return False


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
    ast.With,  # a `with` that may suppress (`_suppressing`)
    ast.AsyncWith,
)


def _expr(node: ast.AST, wanted: _Wanted) -> int:
    if not wanted.may_hold(node):
        return 0
    if isinstance(node, ast.IfExp):
        return _expr(node.test, wanted) + max(_expr(node.body, wanted), _expr(node.orelse, wanted))
    return wanted.weight(node) + sum(_expr(c, wanted) for c in child_nodes(node))


def _most(current: int | None, *values: int) -> int | None:
    return max([v for v in (current, *values) if v is not None], default=None)
