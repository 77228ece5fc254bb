"""When an in-place op (`a += b`, `a.add_(b)`) can become `a = self.add(a, b)`: the tensor `a`
holds must be fresh (made by an op that allocates) and seen by nothing else."""

from __future__ import annotations

import ast
from typing import Callable

# Reading these from a tensor does not share it.
_BENIGN_ATTRIBUTES = frozenset("shape dtype device ndim size dim numel is_contiguous".split())


Parents = dict[int, tuple[ast.AST, list[ast.stmt]]]
"""id(statement) -> (the node holding it, the block it is in): `block_parents`."""


def inplace_unsafe(
    method: ast.FunctionDef,
    target: ast.expr,
    stmt: ast.stmt,
    fresh: Callable[[ast.expr], bool],
    parents: Parents,
) -> str | None:
    """Why rebinding `target` instead of mutating it could be seen elsewhere (None: it
    cannot). Walks back from `stmt` through its block and the blocks around it to the
    assignment of the current value, which must allocate a new tensor that nothing else
    has read since; a loop it walks out of carries the value round, so nothing else in its
    body may read it either. `parents`: `block_parents(method)`."""
    if not isinstance(target, ast.Name):
        return "only a local name can be rebound"
    name = target.id
    for prior, header_only in _statements_before(method, stmt, parents):
        if header_only:
            if _shares(prior, name, headers_only=True):
                return "the value is read before, so it may be shared"
            if isinstance(prior, (ast.For, ast.AsyncFor, ast.While)) and _used_elsewhere(
                prior, name, stmt
            ):
                return (
                    "the loop around it also reads or assigns it: what that holds would "
                    "see the next iteration's op"
                )
            continue
        if _assigns(prior, name):
            if isinstance(prior.value, ast.BinOp) or fresh(prior.value):
                return None
            return "its value does not provably come from an op that allocates a new tensor"
        if _mutates(prior, name):
            continue  # an in-place op on the same tensor keeps it unshared
        if _shares(prior, name):
            return "the value is read or assigned before, so it may be shared"
    return "its value is not assigned in this method"


def _assigns(stmt: ast.stmt, name: str) -> bool:
    return (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id == name
    )


def block_parents(func: ast.FunctionDef) -> Parents:
    """Each statement (and `except` handler) below `func`: the node and block holding it."""
    parents: Parents = {}
    for node in ast.walk(func):
        for part in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, part, None)
            if isinstance(body, list):
                for child in body:
                    parents[id(child)] = (node, body)
    return parents


def _statements_before(func: ast.FunctionDef, stmt: ast.stmt, parents: Parents):
    """(statement, header only) pairs that run before `stmt`, nearest first: earlier statements
    of its block, then the statement holding that block (only its header runs before), then
    the earlier statements of the block around it, up to the function."""
    current: ast.AST = stmt
    while id(current) in parents:
        holder, body = parents[id(current)]
        index = next(i for i, s in enumerate(body) if s is current)
        for prior in reversed(body[:index]):
            yield prior, False
        if holder is func:
            return
        yield holder, True
        current = holder


def _shares(stmt: ast.AST, name: str, headers_only: bool = False) -> bool:
    """Whether `stmt` reads or stores `name` other than to look at its shape, size or type."""
    nodes = [stmt]
    if headers_only:
        nodes = [
            getattr(stmt, f)
            for f in ("test", "iter", "target", "items", "subject")
            if getattr(stmt, f, None) is not None
        ]
    for root in nodes:
        parents = {id(c): p for p in ast.walk(root) for c in ast.iter_child_nodes(p)}
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and node.id == name:
                parent = parents.get(id(node))
                if (
                    isinstance(parent, ast.Attribute)
                    and isinstance(node.ctx, ast.Load)
                    and parent.attr in _BENIGN_ATTRIBUTES
                ):
                    continue
                return True
    return False


def _used_elsewhere(loop: ast.For | ast.AsyncFor | ast.While, name: str, stmt: ast.stmt) -> bool:
    """Whether the body of `loop`, which carries the value of `name` from one iteration to
    the next, uses `name` anywhere but in `stmt` (the in-place op) and to look at its shape."""
    own = {id(n) for n in ast.walk(stmt)}
    for part in loop.body:
        parents = {id(c): p for p in ast.walk(part) for c in ast.iter_child_nodes(p)}
        for node in ast.walk(part):
            if id(node) in own or not (isinstance(node, ast.Name) and node.id == name):
                continue
            parent = parents.get(id(node))
            if not (
                isinstance(parent, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and parent.attr in _BENIGN_ATTRIBUTES
            ):
                return True
    return False


def _mutates(stmt: ast.stmt, name: str) -> bool:
    """`name op= ...` or `name.op_(...)` as a statement whose arguments do not store `name`."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id == name
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr.endswith("_")
            and not func.attr.endswith("__")
            and isinstance(func.value, ast.Name)
            and func.value.id == name
        )
    return False
