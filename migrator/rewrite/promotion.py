"""A plain class whose methods its holders' forward paths run becomes an `nn.Module`
(`plain_modules` says when it may): its analysis runs as a module class's, and when that
converts ops the class gets the base `nn.Module` and `super().__init__()` first in `__init__`."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from migrator.rewrite.context import FileContext
from migrator.rewrite.family import Family
from migrator.rewrite.held_methods import callable_why, held_runs, plain_why
from migrator.rewrite.plain_modules import call_subclasses, super_calls
from migrator.rewrite.plan import SUPER_INIT, Plan, Replace, Span
from migrator.rewrite.project import ClassInfo


def promote(
    ctx: FileContext, cls: ClassInfo, family: Family, analyse: Callable[[], object]
) -> None:
    """Plan the rewrite of the plain class `cls` as a module's (`analyse`), reported (MIG005),
    when it may become one and its holders' forward paths run its methods, or its holders call
    it (its `__call__` becomes its `forward`: `_callable`)."""
    if cls.qualname in ctx.promoted:  # a subclass of a class defining `__call__` made a module
        analyse()
        return
    if "__call__" in cls.methods() and not ctx.project.is_module(cls):
        if not callable_why(ctx, cls, family):
            _callable(ctx, cls, analyse)
        return
    if plain_why(ctx, cls) or not held_runs(ctx, cls, family):
        return
    if ctx.project.is_module(cls):  # what a first run made it: its analysis runs the same
        ctx.promoted.add(cls.qualname)
        analyse()
        return
    plan = ctx.plan
    init = cls.methods().get("__init__")
    where: dict[int, list[str]] | None = None
    line = 0
    if init is not None:
        first = init.body[0]
        if first.lineno == init.lineno:  # a one-line `__init__`: no room
            return
        docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
        where, line = (plan.inserts if docstring else plan.inserts_before), first.lineno
    before = _size(plan)
    if where is not None:
        where.setdefault(line, []).append(SUPER_INIT)
    ctx.promoted.add(cls.qualname)
    analyse()
    if _size(plan) == before + (where is not None):  # nothing converted: the class stays
        ctx.promoted.discard(cls.qualname)
        if where is not None:
            where[line].remove(SUPER_INIT)
            if not where[line]:
                del where[line]
        return
    _report(ctx, cls, "the methods its holders' forward paths run")


def _callable(ctx: FileContext, cls: ClassInfo, analyse: Callable[[], object]) -> None:
    """Plan `cls` (a plain class defining `__call__`, held by modules: `callable_why`) as a
    module whose `forward` is its `__call__`, with the subclasses of its file: `nn.Module.__call__`
    runs `forward` as the object's `__call__` ran, and a subclass's `super().__call__(...)`
    becomes `super().forward(...)` (through `nn.Module.__call__` it would run the subclass's
    `forward` again). Made once its holders' calls are known, it stays a module even when
    none of its ops converts: the holders' files read the same decision."""
    plan = ctx.plan
    for each in [cls, *call_subclasses(cls)]:
        entry = each.methods().get("__call__")
        if entry is not None:
            plan.replaces.append(Replace("name", _name_span(ctx, entry), "forward"))
            ctx.renamed.append((entry, entry.name))
            entry.name = "forward"  # the analysis reads the class as it will be
        for node in super_calls(each):
            plan.replaces.append(Replace("rename", ctx.positions.span(node), "forward"))
            ctx.renamed.append((node, node.attr))
            node.attr = "forward"
        ctx.promoted.add(each.qualname)
    init = cls.methods().get("__init__")
    if init is not None:
        first = init.body[0]
        docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
        (plan.inserts if docstring else plan.inserts_before).setdefault(first.lineno, []).append(
            SUPER_INIT
        )
    analyse()
    _report(ctx, cls, "its `__call__`, which becomes its `forward`, and the methods it runs")


def _name_span(ctx: FileContext, function: ast.FunctionDef) -> Span:
    """Where the name of `function` is (`def <name>`)."""
    line = ctx.positions.lines[function.lineno - 1]
    start = re.search(rf"\bdef\s+({re.escape(function.name)})\b", line)
    assert start is not None  # a `def` statement starts its line
    column = ctx.positions.column(function.lineno, len(line[: start.start(1)].encode()))
    return (function.lineno, column, function.lineno, column + len(function.name))


def _report(ctx: FileContext, cls: ClassInfo, what: str) -> None:
    """Give `cls` the base `nn.Module`, and report it (MIG005)."""
    ctx.plan.module_bases[cls.node.lineno] = ctx.module_ref("torch.nn.Module")
    ctx.report(
        cls.node,
        "MIG005",
        f"`{cls.name}` becomes an `nn.Module` (no parameters or buffers: `state_dict` keys do "
        f"not change), so that the ops of {what} become its modules; a holder "
        "declaring its attribute of this class for TorchScript (`__annotations__`) no longer "
        "scripts",
        module="torch.nn.Module",
    )


def _size(plan: Plan) -> int:
    """How many edits `plan` holds."""
    inserted = [*plan.inserts.values(), *plan.inserts_before.values()]
    return len(plan.replaces) + sum(map(len, inserted)) + len(plan.helper_classes)
