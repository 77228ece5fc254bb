"""Module instances an `__init__` hands to several modules (CoaT's `shared_cpe=self.cpe1` given
to every block of a stage): each receiver calls the same instance, so a module migrator created
inside its class would run at every one of their call sites — a reused module the original did
not have. Ops of such a class are left as is (MIG117)."""

from __future__ import annotations

import ast

from migrator.rewrite.context import FileContext, self_attr


def find_shared(ctx: FileContext) -> None:
    """Record in `ctx.shared` why each class of this file is shared (by qualified name), and
    report an instance of a class of another file handed around here (MIG117 at the hand-over:
    that file's analysis cannot see it)."""
    for cls in ctx.info.classes.values():
        init = cls.methods().get("__init__")
        if init is None:
            continue
        made: dict[str, str] = {}
        passed: dict[str, list[tuple[ast.Attribute, bool]]] = {}
        for visit in ctx.visits(init):
            node = visit.node
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and self_attr(node.targets[0])
                and isinstance(node.value, ast.Call)
                and (qualname := ctx.info.names.resolve(node.value.func))
                and ctx.project.find_class(qualname, ctx.info) is not None
            ):
                made[node.targets[0].attr] = qualname
            elif isinstance(node, ast.Call) and not _reads_only(ctx, node.func, init):
                for value in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(value, ast.Attribute) and self_attr(value):
                        passed.setdefault(value.attr, []).append((value, visit.repeated))
        for attr, qualname in made.items():
            uses = passed.get(attr, [])
            if not uses or (len(uses) == 1 and not uses[0][1]):
                continue
            node = uses[0][0]
            how = "to modules built in a loop" if uses[0][1] else f"to {len(uses)} modules"
            why = f"`self.{attr}` of `{cls.name}` is handed {how} at line {node.lineno}"
            if qualname.rsplit(".", 1)[0] == ctx.info.names.module:
                ctx.shared.setdefault(qualname, why)
            else:
                ctx.report(
                    node,
                    "MIG117",
                    f"{why}: ops migrator turns into modules inside "
                    f"`{qualname}` would run at each of their call sites; "
                    "give each its own instance",
                )


_READERS = frozenset({"len", "isinstance", "enumerate", "zip", "iter", "min", "max", "range"})
"""Builtins that read what they are given and keep none of it."""


def _reads_only(ctx: FileContext, func: ast.expr, init: ast.FunctionDef) -> bool:
    """Whether `func` is such a builtin (`len(self.blocks)` hands the blocks to no module)."""
    return (
        isinstance(func, ast.Name)
        and func.id in _READERS
        and ctx.info.names.is_free(func.id)
        and func.id not in ctx.locals_of(init)
    )
