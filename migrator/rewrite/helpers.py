"""Ops in functions that forward reaches but that are not methods of the class: module-level
functions (`eager_attention_forward`, `rotate_half`, `window_partition`) and static or class
methods. They cannot become `self.<module>(...)` where they are: those of the same file may
become modules of their own (`helper_modules`); the ops of every other one a forward-path call
reaches are reported (MIG115) so that none is skipped in silence: in the same file at the op,
in another file of the project at the call that reaches it.
"""

from __future__ import annotations

import ast
from typing import Iterator

from migrator import catalog
from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.project import FileInfo
from migrator.rewrite.tensors import TensorNames, is_container
from migrator.rewrite.walk import walk


def report_helper_ops(
    ctx: FileContext,
    owner: str,
    methods: dict[str, ast.FunctionDef],
    reached: list[ast.FunctionDef],
) -> None:
    """Report the ops of the helpers that the forward-path `reached` methods of class `owner`
    call (and the helpers those call, in the same file), except through the calls that became
    calls of the helper's module (`helper_modules`) and in helpers whose module's analysis
    reported every op already."""
    todo = [
        (f, m)
        for m in reached
        for f, call in _called(ctx, ctx.info, m, methods)
        if id(call) not in ctx.helper_calls
    ]
    modules = ctx.helper_modules
    while todo:
        (info, function), caller = todo.pop()
        if info is not ctx.info:
            _report_elsewhere(ctx, info, function, caller)
            continue
        if id(function) in ctx.helpers_seen or (modules and id(function) in modules.analysed):
            continue
        ctx.helpers_seen.add(id(function))
        reason = modules.reasons.get(id(function)) if modules else None
        if reason:
            why = f"`{function.name}` does not become a module: {reason}"
        elif "MIG004" in ctx.disable or not modules:
            why = "ops in functions outside the class are not rewritten yet"
        else:
            why = "a call on the way stays a call of the function (its finding says why)"
        for label, node in ops_in(ctx.info, function):
            ctx.report(
                node,
                "MIG115",
                f"{label} is in `{function.name}`, which forward reaches from `{owner}`: "
                f"{why}; left as is",
                op=label.strip("`"),
            )
        todo += [(f, function) for f, _ in _called(ctx, ctx.info, function, {})]


def _report_elsewhere(
    ctx: FileContext, info: FileInfo, function: ast.FunctionDef, caller: ast.FunctionDef
) -> None:
    """A helper in another file: one finding at each call of it on the forward path, naming
    the ops it runs itself and through the helpers it calls."""
    found, todo, seen = [], [(info, function)], set()
    while todo:
        where, helper = todo.pop()
        if id(helper) in seen:
            continue
        seen.add(id(helper))
        found += [label for label, _ in ops_in(where, helper)]
        todo += [target for target, _ in _called(ctx, where, helper, {})]
    if not found:
        return
    for node in ctx.calls_in(caller):
        if target_of(ctx, ctx.info, node, caller, {}) == (info, function):
            if id(node) in ctx.helpers_seen:
                continue
            ctx.helpers_seen.add(id(node))
            ctx.report(
                node,
                "MIG115",
                f"`{ctx.text(node.func)}` (in `{info.names.module}`) runs {len(found)} "
                f"op(s) forward reaches ({', '.join(sorted(set(found)))}): ops in "
                "functions outside the class are not rewritten yet; left as is",
            )


def _called(
    ctx: FileContext, info: FileInfo, caller: ast.FunctionDef, methods: dict[str, ast.FunctionDef]
) -> Iterator[tuple[tuple[FileInfo, ast.FunctionDef], ast.Call]]:
    """(helper, call) of each call of a helper in `caller`."""
    for node in ctx.calls_in(caller):
        target = target_of(ctx, info, node, caller, methods)
        if target is not None:
            yield target, node


def called_helpers(
    ctx: FileContext, function: ast.FunctionDef
) -> Iterator[tuple[tuple[FileInfo, ast.FunctionDef], ast.Call]]:
    """(helper, call) of each call of a module-level function of the project in a helper."""
    return _called(ctx, ctx.info, function, {})


def target_of(
    ctx: FileContext,
    info: FileInfo,
    call: ast.Call,
    caller: ast.FunctionDef,
    methods: dict[str, ast.FunctionDef],
) -> tuple[FileInfo, ast.FunctionDef] | None:
    """The helper function a call runs: a static or class method of the class, or a
    module-level function of this file or of another file of the project."""
    func = call.func
    if self_attr(func) and func.attr in methods and unbound(methods[func.attr]):
        return info, methods[func.attr]
    if not isinstance(func, ast.Name):
        return None
    qualname = info.names.resolve(func, ctx.locals_of(caller))
    if not qualname or "." not in qualname or qualname.split(".")[0] == "torch":
        return None
    return ctx.project.find_function(qualname, info)


def unbound(method: ast.FunctionDef) -> bool:
    """A static or class method: it has no `self` to hold modules."""
    return any(
        isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
        for d in method.decorator_list
    )


def ops_in(
    info: FileInfo, function: ast.FunctionDef, first_is_tensor: bool = False
) -> Iterator[tuple[str, ast.Call | ast.BinOp | ast.AugAssign]]:
    """(label, node) of each catalog op in a helper function: functional calls, and tensor
    methods and operators whose operand is a tensor or may be one (an unknown operand beside a
    number, `end + 1`, is taken for a count; the first parameter is a tensor if
    `first_is_tensor`)."""
    nodes = [v.node for v in walk(function)]
    tensors = TensorNames(
        function, nodes, info.names.resolve, set(), set(), first_is_tensor=first_is_tensor
    )
    for node in nodes:
        if isinstance(node, ast.Call):
            qualname = info.names.resolve(node.func)
            if qualname and catalog.by_function(qualname):
                yield qualname.replace("torch.nn.functional.", "F."), node
            elif (
                isinstance(node.func, ast.Attribute)
                and (catalog.by_method(node.func.attr) or catalog.by_inplace_method(node.func.attr))
                and not tensors.is_plain(node.func.value)
            ):
                yield f".{node.func.attr}()", node
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            operator = catalog.operator_of(type(node.op))
            if operator is None:
                continue
            operands = (
                (node.left, node.right)
                if isinstance(node, ast.BinOp)
                else (node.target, node.value)
            )
            symbol = operator.symbol if isinstance(node, ast.BinOp) else operator.inplace_symbol
            found = (
                catalog.by_operator(symbol)
                if isinstance(node, ast.BinOp)
                else catalog.by_inplace_operator(symbol)
            )
            if found and (
                any(tensors.is_tensor(o) for o in operands)
                or (
                    not any(is_container(o) or isinstance(o, ast.Constant) for o in operands)
                    and any(tensors.unknown(o) for o in operands)
                )
            ):
                yield f"`{symbol}`", node
