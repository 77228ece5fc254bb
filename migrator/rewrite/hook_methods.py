"""Methods, helper functions and lambdas a class registers as hooks (`self.register_forward_hook(
self._hook)`, `lambda m, i, o: F.relu(o)`, `partial(_scale, k=2)`, on itself or a submodule, in
`__init__` or anywhere): torch calls them on each forward of the module they are registered on,
where no call of theirs can be counted. `fix` rewrites none of their ops, so one finding at
each registration (MIG115) names them: none is skipped in silence (`hook_registered.py`,
`hook_lambda.py`); so are those a file registers as hooks of every module
(`register_module_forward_hook(fn)`, `hook_global.py`)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from migrator.rewrite.context import FileContext, own_class
from migrator.rewrite.helpers import as_function
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

GLOBAL_REGISTRARS = frozenset(
    {
        "register_module_forward_hook",
        "register_module_forward_pre_hook",
        "register_module_full_backward_hook",
        "register_module_full_backward_pre_hook",
        "register_module_backward_hook",
    }
)
"""`torch.nn.modules.module`'s functions registering a function to run around the forward (or
backward) of every module."""

Found = tuple[ClassInfo | None, FileInfo, ast.FunctionDef]
"""A function and where it is: the class whose method it is (None: a function), its file."""


def registrations(
    ctx: FileContext, methods: Iterable[ast.FunctionDef]
) -> Iterator[tuple[ast.FunctionDef, ast.Call, ast.Attribute | ast.Name | ast.Lambda]]:
    """(method, call of one of `REGISTRARS`, each part of what it registers that names a function or
    is a lambda: `self._hook`, `_scale` of `partial(_scale, k=2)`), in `methods`; what a lambda
    holds is the lambda's."""
    for method in methods:
        for call in ctx.calls_in(method):
            func = call.func
            if not isinstance(func, ast.Attribute) or func.attr not in REGISTRARS:
                continue
            todo: list[ast.AST] = [*call.args, *(k.value for k in call.keywords)]
            while todo:
                node = todo.pop()
                if isinstance(node, (ast.Attribute, ast.Name, ast.Lambda)):
                    yield method, call, node
                if not isinstance(node, ast.Lambda):
                    todo += ast.iter_child_nodes(node)


def report_hooks(ctx: FileContext, cls: ClassInfo, methods: dict[str, ast.FunctionDef]) -> None:
    """Report each method of `cls` (`self.<name>`), helper function of the project or lambda
    that a method of `cls` hands to one of `REGISTRARS`, when it runs ops."""
    for method, call, node in registrations(ctx, methods.values()):
        if isinstance(node, ast.Lambda):
            found: Found | None = (cls, ctx.info, as_function(node))
        else:
            found = _hook(ctx, cls, methods, method, node)
        if found is not None:
            _report(ctx, cls.name, call, node, found)


def _hook(
    ctx: FileContext,
    cls: ClassInfo,
    methods: dict[str, ast.FunctionDef],
    method: ast.FunctionDef,
    node: ast.Attribute | ast.Name,
) -> Found | None:
    """The method or project function `node` names (`self._hook`, `Block._hook`,
    `type(self)._hook`, `_hook`), if any."""
    if isinstance(node, ast.Attribute) and node.attr in methods and own_class(cls.name, node.value):
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
    node: ast.Attribute | ast.Name | ast.Lambda,
    found: Found,
) -> None:
    function = found[2]
    labels = ops_from(ctx, [found])
    proven = bool(labels)
    if not proven:  # what torch hands the hook after the module is a tensor, or may be one,
        # and so is what the hook hands the methods and helpers it calls
        labels = ops_from(ctx, [found], lambda f: _given(f, skip=int(f is function)))
    if not labels or id(node) in ctx.helpers_seen:
        return
    ctx.helpers_seen.add(id(node))
    named = (
        "a lambda"
        if isinstance(node, ast.Lambda)
        else f"`{ctx.text(node)}` (`{function.name}`, line {function.lineno})"
    )
    ctx.report(
        node,
        "MIG115",
        f"{named} is registered as a hook by `{ctx.text(call.func)}(...)`"
        + (f" in `{owner}`" if owner else "")
        + f" and {'runs' if proven else 'may run'} {len(labels)} op(s) "
        + f"({', '.join(sorted(set(labels)))}): torch calls it on "
        + ("each forward of that module" if owner else "each forward of every module")
        + ", where its calls cannot be counted; left as is",
        op=function.name,
    )


def _given(function: ast.FunctionDef, skip: int) -> frozenset[str]:
    """The parameters of `function` but `self` and the `skip` first others (a hook's module)."""
    params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    return frozenset([p for p in params if p != "self"][skip:])


def report_global_hooks(ctx: FileContext, tree: ast.Module) -> None:
    """Report (MIG115) each helper function of the project or lambda that the file registers
    as a hook of every module (`register_module_forward_hook(fn)`), when it runs ops: torch
    calls it on each forward of each module (`hook_global.py`)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        qualname = ctx.info.names.resolve(node.func) or ""
        if (
            not qualname.startswith("torch.")
            or qualname.rsplit(".", 1)[-1] not in GLOBAL_REGISTRARS
        ):
            continue
        for value in [*node.args, *(k.value for k in node.keywords)]:
            found: Found | None = None
            if isinstance(value, ast.Lambda):
                found = (None, ctx.info, as_function(value))
            elif isinstance(value, ast.Name) and (name := ctx.info.names.resolve(value)):
                target = ctx.project.find_function(name, ctx.info)
                found = (None, *target) if target else None
            if found is not None:
                assert isinstance(value, (ast.Lambda, ast.Name))  # what finds one
                _report(ctx, "", node, value, found)
