"""Methods and helper functions a class registers as hooks (`self.register_forward_hook(
self._hook)`, on itself or a submodule, in `__init__` or anywhere): torch calls them on each
forward of the module they are registered on, where no call of theirs can be counted. `fix`
rewrites none of their ops, so one finding at each registration (MIG115) names them: none is
skipped in silence (`hook_registered.py`).
"""

from __future__ import annotations

import ast

from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.object_methods import ops_from
from migrator.rewrite.project import ClassInfo, FileInfo

REGISTRARS = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
    }
)
"""`nn.Module`'s methods registering a function to run around each forward (or backward)."""


def report_hooks(ctx: FileContext, cls: ClassInfo, methods: dict[str, ast.FunctionDef]) -> None:
    """Report each method of `cls` (`self.<name>`) or helper function of the project that a
    method of `cls` hands to one of `REGISTRARS`, when it runs ops."""
    for method in methods.values():
        for call in ctx.calls_in(method):
            func = call.func
            if not isinstance(func, ast.Attribute) or func.attr not in REGISTRARS:
                continue
            for value in [*call.args, *(k.value for k in call.keywords)]:
                for node in ast.walk(value):
                    if not isinstance(node, (ast.Attribute, ast.Name)):
                        continue
                    found = _hook(ctx, cls, methods, method, node)
                    if found is not None:
                        _report(ctx, cls.name, call, node, found)


def _hook(
    ctx: FileContext,
    cls: ClassInfo,
    methods: dict[str, ast.FunctionDef],
    method: ast.FunctionDef,
    node: ast.Attribute | ast.Name,
) -> tuple[ClassInfo | None, FileInfo, ast.FunctionDef] | None:
    """The method or project function `node` names (`self._hook`, `_hook`), if any."""
    if self_attr(node) and node.attr in methods:
        return cls, ctx.info, methods[node.attr]
    if not isinstance(node, ast.Name) or node.id in ctx.locals_of(method):
        return None
    qualname = ctx.info.names.resolve(node)
    if not qualname or qualname.split(".")[0] == "torch":
        return None
    found = ctx.project.find_function(qualname, ctx.info)
    return (None, *found) if found else None


def _report(
    ctx: FileContext,
    owner: str,
    call: ast.Call,
    node: ast.Attribute | ast.Name,
    found: tuple[ClassInfo | None, FileInfo, ast.FunctionDef],
) -> None:
    labels = ops_from(ctx, [found])
    if not labels or id(node) in ctx.helpers_seen:
        return
    ctx.helpers_seen.add(id(node))
    function = found[2]
    ctx.report(
        node,
        "MIG115",
        f"`{ctx.text(node)}` (`{function.name}`, line {function.lineno}) is registered as a hook "
        f"by `{ctx.text(call.func)}(...)` in `{owner}` and runs {len(labels)} op(s) "
        f"({', '.join(sorted(set(labels)))}): torch calls it on each forward of that module, "
        "where its calls cannot be counted; left as is",
        op=function.name,
    )
