"""Ops in functions that forward reaches but that are not methods of the class: module-level
functions (`eager_attention_forward`, `rotate_half`, `window_partition`) and static or class
methods. They cannot become `self.<module>(...)` where they are: those of the same file may
become modules of their own (`helper_modules`); the ops of every other one a forward-path call
reaches are reported (MIG115) so that none is skipped in silence: in the same file at the op,
in another file of the project at the call that reaches it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Iterator, TypeVar

from migrator import catalog
from migrator.binder import fits
from migrator.rewrite.annotations import annotation_kind
from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.project import FileInfo
from migrator.rewrite.tensors import TensorNames, is_container
from migrator.rewrite.walk import all_nodes, walked


def report_helper_ops(
    ctx: FileContext,
    owner: str,
    methods: dict[str, ast.FunctionDef],
    reached: list[ast.FunctionDef],
) -> list[ast.FunctionDef]:
    """Report the ops of the helpers that the forward-path `reached` methods of class `owner`
    call (and the helpers those call, in the same file), except through the calls that became
    calls of the helper's module (`helper_modules`) and in helpers whose module's analysis
    reported every op already; return the helpers of the file so reported."""
    todo = [
        (f, m)
        for m in reached
        for f, call in _called(ctx, ctx.info, m, methods)
        if id(call) not in ctx.helper_calls and id(call) not in ctx.plain_calls
    ]
    _report_rebound(ctx, owner, reached)
    modules = ctx.helper_modules
    reported: list[ast.FunctionDef] = []
    while todo:
        (info, function), caller = todo.pop()
        if info is not ctx.info:
            _report_elsewhere(ctx, info, function, caller, caller not in reached)
            continue
        if id(function) in ctx.helpers_seen or (modules and id(function) in modules.analysed):
            continue
        if modules and function.name in modules.wrapped_twins:
            continue  # a twin's ops are its class's modules; what stays, its class reports
        ctx.helpers_seen.add(id(function))
        reported.append(function)
        reason = None
        if modules:
            static = any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list
            )
            reason = modules.reasons.get(id(function)) or modules.refusal(function, static)
        if reason:
            why = f"`{function.name}` does not become a module: {reason}"
        elif "MIG004" in ctx.disable or not modules:
            why = "ops in functions outside the class are not rewritten yet"
        else:
            why = "a call on the way stays a call of the function (its finding says why)"
        given = ctx.tensor_params.get(id(function), set())
        for label, node in ops_in(ctx.info, function, tensor_params=given):
            ctx.report(
                node,
                "MIG115",
                f"{label} is in `{function.name}`, which forward reaches from `{owner}`: "
                f"{why}; left as is",
                op=label.strip("`"),
            )
        todo += [(f, function) for f, _ in _called(ctx, ctx.info, function, {})]
    return reported


def _report_rebound(ctx: FileContext, owner: str, reached: list[ast.FunctionDef]) -> None:
    """A forward-path call of a module-level function of the file whose name the top level
    binds again (`act = _fast`; `FileInfo.functions` leaves it out): which function it runs
    is not known, so the ops of its `def` are reported at the call (MIG115)."""
    defs = _rebound_defs(ctx)
    if not defs:
        return
    for method in reached:
        for node in ctx.calls_in(method):
            func = node.func
            if not (isinstance(func, ast.Name) and func.id in defs):
                continue
            qualname = ctx.info.names.resolve(func, ctx.locals_of(method))
            if qualname != f"{ctx.info.names.module}.{func.id}":
                continue
            given = ctx.tensor_params.get(id(defs[func.id]), set())
            labels = sorted(
                {label for label, _ in ops_in(ctx.info, defs[func.id], tensor_params=given)}
            )
            if labels:
                ctx.report(
                    node,
                    "MIG115",
                    f"`{func.id}(...)` runs {', '.join(labels)} in `{func.id}` (line "
                    f"{defs[func.id].lineno}), which forward reaches from `{owner}`, but the "
                    "top level binds that name again, so it may run another function; left as is",
                    op=func.id,
                )


def _rebound_defs(ctx: FileContext) -> dict[str, ast.FunctionDef]:
    """The module-level functions of the file whose name the top level binds again."""
    if not ctx.info.rebound:
        return {}
    return {
        s.name: s
        for s in ctx.info.tree.body
        if isinstance(s, ast.FunctionDef) and s.name not in ctx.info.functions
    }


def _report_elsewhere(
    ctx: FileContext,
    info: FileInfo,
    function: ast.FunctionDef,
    caller: ast.FunctionDef,
    from_helper: bool,
) -> None:
    """A helper in another file: one finding at each call of it on the forward path (in a
    helper function if `from_helper`), naming the ops it runs itself and through the helpers
    it calls."""
    found: list[str] = []
    todo, seen = [(info, function)], set()
    while todo:
        where, helper = todo.pop()
        if id(helper) in seen:
            continue
        seen.add(id(helper))
        found += op_labels(where, helper)
        todo += [target for target, _ in _called(ctx, where, helper, {})]
    if not found:
        return
    for node in ctx.calls_in(caller):
        if target_of(ctx, ctx.info, node, caller, {}) == (info, function):
            if id(node) in ctx.helpers_seen or id(node) in ctx.helper_calls:
                continue
            if id(node) in ctx.plain_calls:
                continue
            ctx.helpers_seen.add(id(node))
            why = _why_elsewhere(ctx, info, function, from_helper, node)
            ctx.report(
                node,
                "MIG115",
                f"`{ctx.text(node.func)}` (in `{info.names.module}`) runs {len(found)} "
                f"op(s) forward reaches ({', '.join(sorted(set(found)))}): {why}; left as is",
            )


def _why_elsewhere(
    ctx: FileContext, info: FileInfo, function: ast.FunctionDef, from_helper: bool, call: ast.Call
) -> str:
    """Why `call` of another file's helper stays a call of the function."""
    modules = ctx.helper_modules
    if modules is None or "MIG004" in ctx.disable:
        return "ops in functions outside the class are not rewritten yet"
    if from_helper:
        return "the helper calling it stays a function (its findings say why)"
    if modules.in_earlier:
        return "the class an earlier run made of the helper calling it keeps its calls"
    if modules.in_twin and modules.reaches_back(info):
        return (
            f"a helper of `{info.names.module}` calls, itself or through other files, a "
            "helper of this file: a helper's module uses another file's helper modules only "
            "where the files' helpers call one way"
        )
    if ctx.project.processes(info.path) is None:
        return "its file is not processed in this run (a helper becomes a module with its file)"
    reason = modules.why_not_twinned(info, function)
    if reason:
        return f"`{function.name}` does not become a module: {reason}"
    if modules.has_twin(info, function):
        return "the call stays a call of the function (its finding says why)"
    if not call.args or isinstance(call.args[0], ast.Starred):
        return (
            f"the call passes no first argument that `{function.name}` as a module could take "
            "(a tensor or `self`), and such calls give it none"
        )
    return (
        f"`{function.name}` gets no module: its ops are in helpers of other files, or no other "
        "file of its package calls it from a method or a function methods reach"
    )


def _called(
    ctx: FileContext, info: FileInfo, caller: ast.FunctionDef, methods: dict[str, ast.FunctionDef]
) -> Iterator[tuple[tuple[FileInfo, ast.FunctionDef], ast.Call]]:
    """(helper, call) of each call of a helper in `caller`."""
    for node in ctx.calls_in(caller):
        target = target_of(ctx, info, node, caller, methods)
        if target is not None:
            yield target, node


def modules_made(ctx: FileContext, info: FileInfo, function: ast.FunctionDef) -> frozenset[str]:
    """Every module class the class `fix` writes for the helper `function` (of `info`) may
    hold: the modules (and the toolkit's classes) of each catalog op any call, method or
    operator anywhere in it may be, tensor or not, and those of each helper of the project it
    calls, in any file (a superset of what its analysis creates)."""
    made: set[str] = set()
    seen: set[int] = set()
    todo = [(info, function)]
    while todo:
        file, each = todo.pop()
        if id(each) in seen:
            continue
        seen.add(id(each))
        for node in all_nodes(each):
            if isinstance(node, _SPELLING):
                made.update(m for _, op in spelled_ops(file, node) for m in op.modules)
        todo += [found for found, _ in _called(ctx, file, each, {})]
    kits = (catalog.toolkit_module(m, ctx.toolkit) for m in list(made))
    return frozenset(made | {k.qualname for k in kits if k is not None})


_SPELLING = (ast.Call, ast.BinOp, ast.AugAssign)
"""The nodes that `spelled_ops` may find an op in."""


def spelled_ops(info: FileInfo, node: ast.AST) -> list[tuple[str, catalog.Op]]:
    """(label, op) of each catalog op `node` may be, whatever its operands are."""
    ops: list[tuple[str, catalog.Op | None]] = []
    if isinstance(node, ast.Call):
        qualname = info.names.resolve(node.func)
        if qualname:
            label = qualname.replace("torch.nn.functional.", "F.")
            ops.append((label, catalog.by_any_function(qualname)))
        if isinstance(node.func, ast.Attribute):
            label = f".{node.func.attr}()"
            ops += [
                (label, catalog.by_method(node.func.attr)),
                (label, catalog.by_inplace_method(node.func.attr)),
            ]
    elif isinstance(node, (ast.BinOp, ast.AugAssign)):
        operator = catalog.operator_of(type(node.op))
        if operator is not None and isinstance(node, ast.BinOp):
            ops.append((f"`{operator.symbol}`", catalog.by_operator(operator.symbol)))
        elif operator is not None:
            symbol = operator.inplace_symbol
            ops.append((f"`{symbol}`", catalog.by_inplace_operator(symbol)))
    if unary_operand(info, node) is not None:  # `-y`, `abs(y)`
        neg = isinstance(node, ast.UnaryOp)
        function = catalog.OPERATOR_NEG if neg else catalog.OPERATOR_ABS
        ops.append(("`-x`" if neg else "abs", catalog.by_function(function)))
    return [(label, op) for label, op in ops if op is not None]


def unary_operand(info: FileInfo, node: ast.AST) -> ast.expr | None:
    """`y` of `-y` or of Python's `abs(y)`: `operator.neg` / `operator.abs` when `y` is a
    tensor; None for any other node."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return node.operand
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "abs"
        and info.names.is_free("abs")
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.args[0]
    return None


def called_helpers(
    ctx: FileContext, function: ast.FunctionDef, info: FileInfo
) -> Iterator[tuple[tuple[FileInfo, ast.FunctionDef], ast.Call]]:
    """(helper, call) of each call of a module-level function of the project in a helper of
    the file `info`."""
    return _called(ctx, info, function, {})


def target_of(
    ctx: FileContext,
    info: FileInfo,
    call: ast.Call,
    caller: ast.FunctionDef,
    methods: dict[str, ast.FunctionDef],
) -> tuple[FileInfo, ast.FunctionDef] | None:
    """The helper function a call runs: a static or class method of the class, or a
    module-level function of this file or of another file of the project, the latter also
    through an imported module's name (`box_ops.box_iou(...)`; the name not bound again)."""
    func = call.func
    through = isinstance(func, ast.Attribute)
    if self_attr(func):
        method = methods.get(func.attr)
        return (info, method) if method is not None and unbound(method) else None
    if isinstance(func, ast.Attribute):
        root = imported_root(info, func)
        if root is None or root in info.rebound or _in_torch(info.names.imports[root]):
            return None
    elif not isinstance(func, ast.Name):
        return None
    qualname = info.names.resolve(func, ctx.locals_of(caller))
    if not qualname or "." not in qualname or _in_torch(qualname):
        return None
    found = ctx.project.find_function(qualname, info)
    return None if through and found is not None and found[0] is info else found


def _in_torch(qualname: str) -> bool:
    return qualname.split(".", 1)[0] == "torch"


def imported_root(info: FileInfo, func: ast.Attribute) -> str | None:
    """The name `func` (`box_ops.box_iou`) is an attribute of, when the file imports it."""
    root = func.value
    while isinstance(root, ast.Attribute):
        root = root.value
    return root.id if isinstance(root, ast.Name) and root.id in info.names.imports else None


def return_annotation(
    ctx: FileContext, call: ast.Call, caller: ast.FunctionDef, methods: dict[str, ast.FunctionDef]
) -> ast.expr | None:
    """The return annotation of the method or helper function `call` runs, if found; for a
    function without one, what every `return` of it is proven to give (`_inferred_return`)."""
    if self_attr(call.func) and call.func.attr in methods:
        return methods[call.func.attr].returns
    found = target_of(ctx, ctx.info, call, caller, methods)
    if found is None:
        return None
    info, function = found
    if function.returns is not None:
        return function.returns
    if id(function) not in ctx.inferred_returns:
        ctx.hold(function)
        ctx.inferred_returns[id(function)] = _kept(_RETURNS, info, function, _inferred_return)
    return ctx.inferred_returns[id(function)]


def _inferred_return(info: FileInfo, function: ast.FunctionDef) -> ast.expr | None:
    """`Tensor` when every `return` of `function` (none in a nested function) gives a tensor,
    `int` when each gives a value holding no tensor (`[(h, w), ...]` of sizes), else None;
    its parameters taken for nothing known."""
    nodes = [v.node for v in walked(function)]
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes):
        return None
    tensors = TensorNames(
        function,
        nodes,
        info.names.resolve,
        set(),
        set(),
        first_is_tensor=False,
        unknown_globals=info.names.unknown,
    )
    nested = {
        id(n)
        for node in nodes
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for n in ast.walk(node)
    }
    values = [n.value for n in nodes if isinstance(n, ast.Return) and id(n) not in nested]
    if not values or any(v is None for v in values):
        return None
    if all(v is not None and tensors.is_tensor(v) for v in values):
        return ast.Name("Tensor", ast.Load())
    if all(v is not None and tensors.holds_no_tensor(v) for v in values):
        return ast.Name("int", ast.Load())
    return None


def plain_result(
    ctx: FileContext, call: ast.Call, caller: ast.FunctionDef, methods: dict[str, ast.FunctionDef]
) -> bool:
    """Whether the helper function `call` runs returns a value holding no tensor when it is given
    values holding none (`_plain_result`); the caller proves that of the arguments."""
    return _plain_target(ctx, target_of(ctx, ctx.info, call, caller, methods))


def _plain_target(ctx: FileContext, found: tuple[FileInfo, ast.FunctionDef] | None) -> bool:
    """`_plain_result` of the helper a call runs (`target_of`), worked out once each."""
    if found is None:
        return False
    info, function = found
    if id(function) not in ctx.plain_results:
        ctx.hold(function)
        ctx.plain_results[id(function)] = _plain_result(info, function)
    return ctx.plain_results[id(function)]


def plain_calls(
    ctx: FileContext,
    caller: ast.FunctionDef,
    methods: dict[str, ast.FunctionDef],
    tensors: TensorNames,
) -> Iterator[int]:
    """The ids of the calls in `caller` (a method of a class with `methods`, known by
    `tensors`) that give a helper only values holding no tensor, of a helper that so given
    runs no op (`runs_no_op`): such a call has nothing to convert, nor to report."""
    for target, call in _called(ctx, ctx.info, caller, methods):
        if _given_plain(call, tensors) and runs_no_op(ctx, *target):
            yield id(call)


def record_tensor_params(
    ctx: FileContext,
    caller: ast.FunctionDef,
    methods: dict[str, ast.FunctionDef],
    tensors: TensorNames,
) -> None:
    """Note, in `ctx.tensor_params`, the parameters of the helpers `caller` calls that a call
    gives a proven tensor (`shift(self.conv(x), n)`): the ops on them are tensor ops; also of
    the functions of the file whose name the top level binds again (`_report_rebound`)."""
    rebound = _rebound_defs(ctx)
    called = [
        (function, call)
        for call in (ctx.calls_in(caller) if rebound else ())
        if isinstance(call.func, ast.Name)
        and (function := rebound.get(call.func.id)) is not None
        and ctx.info.names.resolve(call.func, ctx.locals_of(caller))
        == f"{ctx.info.names.module}.{call.func.id}"
    ]
    called += [(f, call) for (_, f), call in _called(ctx, ctx.info, caller, methods)]
    for function, call in called:
        args = function.args
        params = [a.arg for a in [*args.posonlyargs, *args.args]]
        if any(isinstance(d, ast.Name) and d.id == "classmethod" for d in function.decorator_list):
            params = params[1:]
        given = [(p, a) for p, a in zip(params, call.args) if not isinstance(a, ast.Starred)]
        if any(isinstance(a, ast.Starred) for a in call.args[: len(given)]):
            given = []
        given += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
        found = {name for name, value in given if tensors.is_tensor(value)}
        if found:
            ctx.tensor_params.setdefault(id(function), set()).update(found)


def _given_plain(call: ast.Call, tensors: TensorNames) -> bool:
    """Whether every argument of `call` holds no tensor (a starred one included)."""
    values = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
    return all(tensors.holds_no_tensor(v) for v in [*values, *(k.value for k in call.keywords)])


def runs_no_op(ctx: FileContext, info: FileInfo, function: ast.FunctionDef) -> bool:
    """Whether the helper `function` of file `info`, given values holding no tensor, runs no
    op the catalog converts, worked out once each (a helper calling itself is taken to run
    some). Its signature is as `_plain_result` needs (`_plain_signature`); the branches that run only for a tensor (`if isinstance(x,
    torch.Tensor):` on a parameter it never rebinds) are left out, as they are there (timm's
    `get_same_padding`: `torch.clamp(...)` for a tensor, `max(...)` of sizes for sizes); the
    rest calls no catalog function, no catalog method or operator on a value not proven to
    hold no tensor, and helpers only as `plain_calls` allows (timm's `pad_same_arg`)."""
    key = id(function)
    if key not in ctx.no_op_helpers:
        ctx.no_op_helpers[key] = False
        ctx.hold(function)
        ctx.no_op_helpers[key] = _runs_no_op(ctx, info, function)
    return ctx.no_op_helpers[key]


def _runs_no_op(ctx: FileContext, info: FileInfo, function: ast.FunctionDef) -> bool:
    nodes = [v.node for v in walked(function)]
    if not _plain_signature(function, nodes):
        return False
    tensors = TensorNames(
        function,
        nodes,
        info.names.resolve,
        set(),
        set(),
        first_is_tensor=False,
        plain_params=True,
        plain_call=lambda call: _plain_target(ctx, target_of(ctx, info, call, function, {})),
        unknown_globals=info.names.unknown,
    )
    args = function.args
    params = {p.arg for p in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    kept = {p for p in params if tensors.bound_times(p) == 1}
    skipped = {
        id(n)
        for branch in ast.walk(function)
        if isinstance(branch, ast.If) and _tests_tensor(branch.test, kept, info.names.resolve)
        for stmt in branch.body
        for n in ast.walk(stmt)
    }
    for node in nodes:
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Call):
            target = target_of(ctx, info, node, function, {})
            if target is not None:
                if not (_given_plain(node, tensors) and runs_no_op(ctx, *target)):
                    return False
                continue
            qualname = info.names.resolve(node.func)
            if qualname and catalog.by_any_function(qualname):
                return False
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and (catalog.by_method(func.attr) or catalog.by_inplace_method(func.attr))
                and not tensors.is_plain(func.value)
            ):
                return False
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            if catalog.operator_of(type(node.op)) is None:
                continue
            operands = (
                (node.left, node.right)
                if isinstance(node, ast.BinOp)
                else (node.target, node.value)
            )
            if not all(tensors.is_plain(o) for o in operands):
                return False
        if (operand := unary_operand(info, node)) is not None and not tensors.is_plain(operand):
            return False
    return True


def _plain_result(info: FileInfo, function: ast.FunctionDef) -> bool:
    """Whether every `return` of `function` (none in a nested function) gives a value holding no
    tensor, its parameters taken for such values (`_plain_signature`), and a branch that runs
    only for a tensor (`if isinstance(x, torch.Tensor):`, on a parameter it never rebinds) is
    left out (timm's `get_same_padding`: `max(...)` of sizes
    for sizes, `torch.clamp(...)` for tensors). Falling off the end gives None, no tensor."""
    nodes = [v.node for v in walked(function)]
    args = function.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if not _plain_signature(function, nodes):
        return False
    tensors = TensorNames(
        function,
        nodes,
        info.names.resolve,
        set(),
        set(),
        first_is_tensor=False,
        plain_params=True,
        unknown_globals=info.names.unknown,
    )
    rebound = {p.arg for p in params if tensors.bound_times(p.arg) != 1}
    returns = _returns(function.body, {p.arg for p in params} - rebound, info.names.resolve)
    return all(r.value is None or tensors.holds_no_tensor(r.value) for r in returns)


def _plain_signature(function: ast.FunctionDef, nodes: list[ast.AST]) -> bool:
    """Whether `function` may be taken for one given values holding no tensor: no generator,
    no `*args` or `**kwargs`, no parameter annotated to hold a tensor, defaults that are
    constants or tuples and lists of them (`dilation: List[int] = (1, 1)`)."""
    args = function.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    return not (
        any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes)
        or args.vararg
        or args.kwarg
        or any(annotation_kind(p.annotation) not in (None, "plain") for p in params)
        or not all(_constant(d) for d in args.defaults)
        or not all(d is None or _constant(d) for d in args.kw_defaults)
    )


def _constant(node: ast.expr) -> bool:
    """A constant, or a tuple or list of constants."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_constant(e) for e in node.elts)
    return isinstance(node, ast.Constant)


def _returns(
    body: list[ast.stmt], params: set[str], resolve: Callable[[ast.expr], str | None]
) -> Iterator[ast.Return]:
    """The `return` statements of a function body, but those of nested functions and those in
    the body of an `if` testing that one of `params` is a tensor."""
    for stmt in body:
        if isinstance(stmt, ast.Return):
            yield stmt
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        elif isinstance(stmt, ast.If):
            if not _tests_tensor(stmt.test, params, resolve):
                yield from _returns(stmt.body, params, resolve)
            yield from _returns(stmt.orelse, params, resolve)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for part in getattr(stmt, field, ()):
                    inner = (
                        part.body
                        if isinstance(part, (ast.ExceptHandler, ast.match_case))
                        else [part]
                    )
                    yield from _returns(inner, params, resolve)


def _tests_tensor(
    test: ast.expr, params: set[str], resolve: Callable[[ast.expr], str | None]
) -> bool:
    """`isinstance(p, torch.Tensor)` or `torch.is_tensor(p)` of a parameter in `params`."""
    if not (
        isinstance(test, ast.Call)
        and test.args
        and isinstance(test.args[0], ast.Name)
        and test.args[0].id in params
        and not test.keywords
    ):
        return False
    func = resolve(test.func)
    if func == "torch.is_tensor":
        return len(test.args) == 1
    return (
        isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and func is None
        and len(test.args) == 2
        and resolve(test.args[1]) == "torch.Tensor"
    )


def unbound(method: ast.FunctionDef) -> bool:
    """A static or class method: it has no `self` to hold modules."""
    return any(
        isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
        for d in method.decorator_list
    )


_Key = tuple[str, str, int, int]
"""(path, text, line, column) of a function in a file read from disk."""
_LABELS: dict[_Key, tuple[str, ...]] = {}
"""The labels of a function's ops (`op_labels`), oldest first: every file of a run that calls
the helper of another file or uses its class asks the same. Bounded by `_KEPT`."""
_RETURNS: dict[_Key, ast.expr | None] = {}
"""What a function without a return annotation is proven to return (`_inferred_return`),
oldest first: every file of a run that calls it asks the same. Bounded by `_KEPT`."""
_KEPT = 4096
_T = TypeVar("_T")


def _kept(
    kept: dict[_Key, _T],
    info: FileInfo,
    function: ast.FunctionDef,
    work: Callable[[FileInfo, ast.FunctionDef], _T],
) -> _T:
    """`work(info, function)`, worked out once a process, in `kept`, for a function of a file
    read from disk (it depends on the file's text alone)."""
    if info.source is None or info.path is None:
        return work(info, function)
    key = (str(info.path), info.source, function.lineno, function.col_offset)
    if key not in kept:
        kept[key] = work(info, function)
        while len(kept) > _KEPT:
            del kept[next(iter(kept))]
    return kept[key]


def as_function(node: ast.Lambda) -> ast.FunctionDef:
    """A lambda as the `def` returning its body (at its place), which the op searches read."""
    body = ast.copy_location(ast.Return(node.body), node.body)
    function = ast.FunctionDef(name="<lambda>", args=node.args, body=[body], decorator_list=[])
    function.type_params = []  # type: ignore[attr-defined]  # a field from Python 3.12
    return ast.copy_location(function, node)


def op_labels(info: FileInfo, function: ast.FunctionDef) -> tuple[str, ...]:
    """The labels of `ops_in(info, function)`, worked out once a process for a file read from
    disk (they depend on its text alone)."""
    return _kept(_LABELS, info, function, lambda i, f: tuple(label for label, _ in ops_in(i, f)))


def ops_in(
    info: FileInfo,
    function: ast.FunctionDef,
    first_is_tensor: bool = False,
    tensor_params: set[str] | frozenset[str] = frozenset(),
) -> Iterator[tuple[str, ast.Call | ast.BinOp | ast.UnaryOp | ast.AugAssign]]:
    """(label, node) of each catalog op in a helper function: functional calls, and tensor
    methods and operators whose operand is a tensor or may be one (an unknown operand beside a
    number, `end + 1`, is taken for a count; the first parameter is a tensor if
    `first_is_tensor`, and so are the unannotated `tensor_params`, which a call gives one)."""
    nodes = [v.node for v in walked(function)]
    tensors = TensorNames(
        function,
        nodes,
        info.names.resolve,
        set(),
        set(),
        first_is_tensor=first_is_tensor,
        unknown_globals=info.names.unknown,
        tensor_params=tensor_params,
    )
    for node in nodes:
        if isinstance(node, ast.Call):
            qualname = info.names.resolve(node.func)
            if qualname and (op := catalog.by_any_function(qualname)):
                if _fits(op, node):
                    yield qualname.replace("torch.nn.functional.", "F."), node
            elif (
                isinstance(node.func, ast.Attribute)
                and (
                    op := catalog.by_method(node.func.attr)
                    or catalog.by_inplace_method(node.func.attr)
                )
                and not tensors.is_plain(node.func.value)
                and _fits(op, node, node.func.value)
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
        if (
            isinstance(node, (ast.UnaryOp, ast.Call))
            and (operand := unary_operand(info, node)) is not None
            and tensors.is_tensor(operand)
        ):
            yield ("`-x`" if isinstance(node, ast.UnaryOp) else "abs"), node


def _fits(op: catalog.Op, call: ast.Call, receiver: ast.expr | None = None) -> bool:
    """Whether `call` (of a method of `receiver`) passes arguments that fit `op`: a call that
    does not (`torch.where(condition)`) is left alone, unreported. Starred arguments and `out=`
    are reported (MIG107): they count as fitting."""
    positional = [receiver, *call.args] if receiver is not None else list(call.args)
    keywords = [(k.arg, k.value) for k in call.keywords if k.arg != "out"]
    if any(isinstance(v, ast.Starred) for v in positional):
        return True
    named = [(name, value) for name, value in keywords if name is not None]
    return len(named) < len(keywords) or fits(op, positional, named)
