"""Helpers decorated `@torch.jit._script_if_tracing`: when their module may stand for them.

The decorator runs the function as it is, except under `torch.jit.trace`, where it compiles
the function with TorchScript. A module made of the helper would be traced there instead.
Tracing records the ops a run takes, with every Python value it reads fixed: it records the
program scripting compiles only when the body is straight-line code given tensors alone and
reads no Python value off a tensor. `why_not_traced_as_scripted` checks exactly that, by
syntax, admitting only what it knows.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from migrator.rewrite.tensors import NOT_TENSOR_METHODS, TUPLE_METHODS

DECORATORS = frozenset({"torch.jit._script_if_tracing", "torch.jit.script_if_tracing"})

# tensor methods whose result is a Python value (a size, a flag, a dtype), beside those the
# tensor inference knows (`NOT_TENSOR_METHODS`, less the tuples of tensors it lists there)
_VALUE_METHODS = (NOT_TENSOR_METHODS - TUPLE_METHODS) | frozenset(
    """
    is_nonzero is_same_size is_set_to is_pinned is_shared __bool__ __int__ __float__ __index__
    __iter__
""".split()
)
_VALUE_NAMESPACES = ("torch.jit.", "torch._C.", "torch.fx.", "torch.onnx.", "torch.cuda.")

# statements and expressions whose run depends on a Python value, or that may read one
_BRANCHING = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match,
    ast.Assert, ast.Raise, ast.Delete, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.IfExp, ast.BoolOp,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.NamedExpr, ast.Await,
    ast.Yield, ast.YieldFrom, ast.JoinedStr, ast.Dict, ast.Set, ast.Starred,
)  # fmt: skip

_FLOW: dict[type[ast.stmt], str] = {
    ast.If: "an `if`", ast.For: "a `for` loop", ast.While: "a `while` loop", ast.Try: "a `try`",
    ast.With: "a `with`", ast.Assert: "an `assert`", ast.Raise: "a `raise`",
}  # fmt: skip


def is_script_if_tracing(qualname: str | None) -> bool:
    """Whether a decorator is `torch.jit._script_if_tracing` (or its public name)."""
    return qualname in DECORATORS


def why_not_traced_as_scripted(
    function: ast.FunctionDef, resolve: Callable[[ast.expr], str | None]
) -> str | None:
    """Why tracing a module made of `function` may record another program than scripting
    `function` compiles (None: the same one). `resolve` names what an expression refers to."""
    args = function.args
    if args.vararg or args.kwarg or args.defaults or args.kw_defaults and any(args.kw_defaults):
        return "it takes defaults or variadic arguments"
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    for param in params:
        if param.annotation is None or resolve(param.annotation) != "torch.Tensor":
            return f"its parameter `{param.arg}` is not annotated `Tensor`: tracing fixes it"
    if function.returns is None or resolve(function.returns) != "torch.Tensor":
        return "it is not annotated to return `Tensor`"
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[-1], ast.Return):
        return "it does not end in its one `return`"
    local = {p.arg for p in params}
    for stmt in body:
        why = _statement_why(stmt, local, resolve)
        if why:
            return f"{why} (line {stmt.lineno})"
    return None


def _statement_why(
    stmt: ast.stmt, local: set[str], resolve: Callable[[ast.expr], str | None]
) -> str | None:
    if isinstance(stmt, ast.Return) and stmt.value is not None:
        value: ast.expr = stmt.value
        targets: list[ast.expr] = []
    elif isinstance(stmt, ast.Assign):
        value, targets = stmt.value, stmt.targets
    elif isinstance(stmt, ast.AugAssign):
        value, targets = stmt.value, [stmt.target]
    else:
        flow = _FLOW.get(type(stmt))
        if flow:
            return f"{flow}, whose run tracing fixes"
        return "a statement other than an assignment or its `return`"
    why = _expression_why(value, local, resolve)
    if why:
        return why
    for target in targets:
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if not all(isinstance(n, ast.Name) for n in names):
            return "an assignment to something other than a name"
        local.update(n.id for n in names if isinstance(n, ast.Name))
    return None


def _expression_why(
    value: ast.expr, local: set[str], resolve: Callable[[ast.expr], str | None]
) -> str | None:
    callee: set[int] = set()
    dotted: set[int] = set()  # attributes under a torch name: `torch.float32`'s `torch`
    for node in ast.walk(value):
        if isinstance(node, _BRANCHING):
            return f"`{ast.unparse(node)}` branches or reads a Python value"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return f"`{ast.unparse(node)}` reads a Python value"
        if isinstance(node, ast.Compare) and len(node.ops) > 1:
            return f"`{ast.unparse(node)}` reads a Python value"
        if id(node) in dotted:
            continue
        if isinstance(node, ast.Call):
            callee.add(id(node.func))
            why = _call_why(node, resolve)
            if why:
                return why
            if not isinstance(node.func, ast.Attribute) or _torch_name(node.func, resolve):
                dotted.update(id(n) for n in ast.walk(node.func))
        elif isinstance(node, ast.Attribute) and id(node) not in callee:
            if not _torch_name(node, resolve):
                return f"`{ast.unparse(node)}` reads a Python value off a tensor"
            dotted.update(id(n) for n in ast.walk(node))
        elif isinstance(node, ast.Name) and node.id not in local and not _torch_name(node, resolve):
            return f"`{node.id}` is a global: its value is read when it runs"
    return None


def _call_why(call: ast.Call, resolve: Callable[[ast.expr], str | None]) -> str | None:
    func = call.func
    qualname = _torch_name(func, resolve)
    if qualname is not None:
        if qualname.startswith(_VALUE_NAMESPACES) or qualname.rsplit(".", 1)[1] in _VALUE_METHODS:
            return f"`{ast.unparse(func)}` gives a Python value"
        return None
    if isinstance(func, ast.Attribute):
        if func.attr in _VALUE_METHODS:
            return f"`.{func.attr}()` gives a Python value"
        return None  # a tensor method: its receiver is checked as any operand
    return f"`{ast.unparse(func)}` is not torch's: its body may branch"


def _torch_name(node: ast.expr, resolve: Callable[[ast.expr], str | None]) -> str | None:
    """What `node` names in torch (`torch.log`, `torch.float32`, `cat` imported from torch)."""
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    qualname = resolve(node)
    return qualname if qualname is not None and qualname.startswith("torch.") else None
