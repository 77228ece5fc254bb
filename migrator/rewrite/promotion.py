"""A plain class whose methods its holders' forward paths run becomes an `nn.Module`
(`plain_modules` says when it may): its analysis runs as a module class's, and when that
converts ops the class gets the base `nn.Module` and `super().__init__()` first in `__init__`."""

from __future__ import annotations

import ast
from collections.abc import Callable

from migrator.rewrite.context import FileContext
from migrator.rewrite.family import Family
from migrator.rewrite.held_methods import held_runs, plain_why
from migrator.rewrite.plan import SUPER_INIT, Plan
from migrator.rewrite.project import ClassInfo


def promote(
    ctx: FileContext, cls: ClassInfo, family: Family, analyse: Callable[[], object]
) -> None:
    """Plan the rewrite of the plain class `cls` as a module's (`analyse`), reported (MIG005),
    when it may become one and its holders' forward paths run its methods."""
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
    plan.module_bases[cls.node.lineno] = ctx.module_ref("torch.nn.Module")
    ctx.report(
        cls.node,
        "MIG005",
        f"`{cls.name}` becomes an `nn.Module` (no parameters or buffers: `state_dict` keys do "
        "not change), so that the ops of the methods its holders' forward paths run become its "
        "modules; a holder declaring its attribute of this class for TorchScript "
        "(`__annotations__`) no longer scripts",
        module="torch.nn.Module",
    )


def _size(plan: Plan) -> int:
    """How many edits `plan` holds."""
    inserted = [*plan.inserts.values(), *plan.inserts_before.values()]
    return len(plan.replaces) + sum(map(len, inserted)) + len(plan.helper_classes)
