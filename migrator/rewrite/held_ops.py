"""Ops called through a name that holds them, not by their own: `act = F.gelu if c else F.relu`
then `act(x)`, a module-level `relu = F.relu`, `self.fn = F.gelu` set in `__init__`. `fix`
converts an op it sees called by its own name; one called through another is reported (MIG115),
so that none is skipped in silence."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable

from migrator import catalog
from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.settings import SubmoduleSettings
from migrator.rewrite.walk import all_nodes


def report_held_op(
    ctx: FileContext, method: ast.FunctionDef, call: ast.Call, settings: SubmoduleSettings
) -> None:
    """Report `call` when what it calls, `self.<attr>` or a plain name, is bound to a catalog
    op (in `__init__`, in `method`, or at the top of the file)."""
    func = call.func
    if self_attr(func):
        values = settings.init_values(func.attr)
    elif isinstance(func, ast.Name):
        local = func.id in ctx.locals_of(method)  # or a comprehension's: `_bound` has it
        values = _bound(method).get(func.id) or (
            [] if local else _bound(ctx.info.tree).get(func.id, [])
        )
    else:
        return
    top = _bound(ctx.info.tree)

    def container(node: ast.expr) -> list[ast.expr]:
        if self_attr(node):
            return settings.init_values(node.attr)
        return top.get(node.id, []) if isinstance(node, ast.Name) else []

    branches = _branches(values, container)
    held = [v for v in branches if _is_op(ctx, v)]
    if not held:
        return
    ops = ", ".join(dict.fromkeys(f"`{ctx.text(v)}`" for v in held))
    holds = "holds" if len(held) == len(branches) else "may hold"
    ctx.helpers_seen.add(id(call))
    ctx.report(
        call, "MIG115", f"`{ctx.text(func)}` {holds} {ops} (line {held[0].lineno}), {_THROUGH}"
    )


def report_named_op(ctx: FileContext, call: ast.Call, named: ast.Attribute) -> None:
    """Report `call` when what it calls names a catalog op by a string: `named` is the
    `torch.exp` that `getattr(torch, "exp")` or `F.__dict__["elu"]` reads."""
    qualname = ctx.info.names.resolve(named)
    if qualname is None or catalog.by_function(qualname) is None:
        return
    ctx.helpers_seen.add(id(call))
    ctx.report(call, "MIG115", f"`{ctx.text(call.func)}` is `{qualname}`, {_THROUGH}")


_THROUGH = (
    "called here through it, not by its own name: `fix` converts an op called by name; left as is"
)


_BOUND: weakref.WeakKeyDictionary[ast.AST, dict[str, list[ast.expr]]] = weakref.WeakKeyDictionary()


def _bound(scope: ast.FunctionDef | ast.Module) -> dict[str, list[ast.expr]]:
    """Name -> the values a plain assignment binds to it, or a loop over a container (an item
    of it: `for fn in self.acts`, also in a comprehension): anywhere in a method, at the top
    level of a module; worked out once a scope."""
    found = _BOUND.get(scope)
    if found is None:
        statements = all_nodes(scope) if isinstance(scope, ast.FunctionDef) else scope.body
        found = _BOUND[scope] = {}
        for stmt in statements:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
            ):
                found.setdefault(stmt.targets[0].id, []).append(stmt.value)
            elif isinstance(stmt, (ast.For, ast.comprehension)) and isinstance(
                stmt.target, ast.Name
            ):
                item = ast.Subscript(stmt.iter, ast.Constant(0), ast.Load())
                found.setdefault(stmt.target.id, []).append(ast.copy_location(item, stmt.iter))
    return found


def _branches(
    values: list[ast.expr], container: Callable[[ast.expr], list[ast.expr]]
) -> list[ast.expr]:
    """The values, each branch of a conditional expression apart, and for an item of a
    container the file binds at its top or `__init__` sets (`ACTS[kind]`, `ACTS.get(kind,
    F.relu)`, `self.acts[0]`) each item it may be; `container`: the values bound to a name or
    attribute."""
    found: list[ast.expr] = []
    todo = list(values)
    for _ in range(256):  # containers naming each other end
        if not todo:
            break
        value = todo.pop(0)
        if isinstance(value, ast.IfExp):
            todo[:0] = [value.body, value.orelse]
        elif isinstance(value, ast.Subscript):
            todo[:0] = _items(container(value.value)) or [value]
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "get"
        ):
            todo[:0] = (_items(container(value.func.value)) or [value]) + value.args[1:]
        else:
            found.append(value)
    return found


def _items(values: list[ast.expr]) -> list[ast.expr]:
    """The items of the containers written out among `values` (a dict's values)."""
    found: list[ast.expr] = []
    for value in values:
        if isinstance(value, ast.Dict):
            found += value.values
        elif isinstance(value, (ast.List, ast.Tuple)):
            found += [e for e in value.elts if not isinstance(e, ast.Starred)]
    return found


def _is_op(ctx: FileContext, value: ast.expr) -> bool:
    if not isinstance(value, (ast.Name, ast.Attribute)):
        return False
    qualname = ctx.info.names.resolve(value)
    return qualname is not None and catalog.by_function(qualname) is not None
