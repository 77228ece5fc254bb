"""Forward-path calls of a helper function through another name: an attribute of the module
of the file itself (`import pkg.net`, then `pkg.net.mix(x)` in `pkg/net.py`) or of a module
name the top level imports twice (`try: from . import fast as impl`, `except ImportError: from
. import slow as impl`), or a name bound once to it (`mix2 = mix`, at the top level or in the
method); through other module names, another file's helper is called as directly
(`helpers.target_of`). `fix` follows none of these, so they stay calls; each is reported
(MIG115) with the ops the helper runs, itself and through the helpers it calls: none is skipped
in silence.
"""

from __future__ import annotations

import ast
import weakref
from typing import Callable

from migrator import catalog
from migrator.rewrite.context import FileContext
from migrator.rewrite.helpers import imported_root, spelled_ops
from migrator.rewrite.object_methods import ops_from
from migrator.rewrite.names import ModuleNames
from migrator.rewrite.project import FileInfo
from migrator.rewrite.walk import all_nodes


def report_indirect_helpers(ctx: FileContext, owner: str, reached: list[ast.FunctionDef]) -> None:
    """Report each call of a helper function through its module or an alias in the
    forward-path `reached` methods of class `owner`, when the helper runs ops."""
    for method in reached:
        bound: dict[str, ast.expr] | None = None  # the method's aliases, found when needed
        for call in ctx.calls_in(method):
            if id(call) in ctx.helpers_seen or id(call) in ctx.helper_calls:
                continue
            func = call.func
            if isinstance(func, ast.Attribute):
                found, how = _through_module(ctx, func, method)
            elif isinstance(func, ast.Name):
                if bound is None and func.id in ctx.locals_of(method):
                    bound = _bound_once(method)
                found, how = _through_alias(ctx, func, method, bound or {})
            else:
                continue
            _report(
                ctx,
                call,
                found,
                owner,
                lambda named, ran: (
                    f"`{ctx.text(func)}` {named} runs {ran}: a call through {how} "
                    "stays a call of the function; left as is"
                ),
            )
        _report_handed_on(ctx, owner, method)
        _report_decorators(ctx, owner, method)


def _report_decorators(ctx: FileContext, owner: str, method: ast.FunctionDef) -> None:
    """Report (MIG115) each function of the project decorating `method` (`@doubled`,
    `@scaled(2)`) that may run ops, whatever their operands (the method's result, unknown to
    it): what it returns runs in the method's place, where its calls cannot be counted."""
    for decorator in method.decorator_list:
        named = decorator.func if isinstance(decorator, ast.Call) else decorator
        qualname = ctx.info.names.resolve(named)
        if qualname is None or qualname.split(".")[0] == "torch":
            continue
        found = ctx.project.find_function(qualname, ctx.info)
        if found is None:
            continue
        info, function = found
        labels = _labels(info, function)
        if not labels:
            continue
        ctx.report(
            decorator,
            "MIG115",
            f"`@{ctx.text(decorator)}` (`{function.name}`, line {function.lineno}) decorates "
            f"`{method.name}`, which forward reaches from `{owner}`, and may run {len(labels)} "
            f"op(s) ({', '.join(labels)}): what it returns runs in the method's place, where "
            "its calls cannot be counted; left as is",
            op=function.name,
        )


def _labels(info: FileInfo, function: ast.FunctionDef) -> list[str]:
    """The sorted labels of the ops `function` of `info` may run (`spelled_ops`), kept by
    function with the names they were read with (`_LABELS`): a decorator (`@auto_docstring`)
    decorates a method of nearly every class of every file of a package."""
    kept = _LABELS.get(function)
    if kept is None or kept[0] is not info.names:
        labels = sorted({label for n in ast.walk(function) for label, _ in spelled_ops(info, n)})
        kept = _LABELS[function] = (info.names, labels)
    return kept[1]


_LABELS: weakref.WeakKeyDictionary[ast.FunctionDef, tuple[ModuleNames, list[str]]] = (
    weakref.WeakKeyDictionary()
)
"""A function -> (the names of its file, its `_labels`), kept while it is alive."""


def _report_handed_on(ctx: FileContext, owner: str, method: ast.FunctionDef) -> None:
    """Report each helper function of the project that `method` hands on uncalled to what calls
    it (`map(scale, xs)`, `functools.partial`, checkpoint), when it runs ops: it runs where its
    calls cannot be counted, as the function."""
    calls = ctx.calls_in(method)
    called = {id(call.func) for call in calls}
    shadowed = ctx.locals_of(method)
    for call in calls:
        func, names = call.func, ctx.info.names
        if isinstance(func, ast.Name) and func.id not in names.imports:  # a builtin, unless bound
            bound = func.id in shadowed or func.id in names.local
            name = None if bound else func.id
        else:
            name = names.resolve(func, shadowed)
        project = None if name in _CALLING else _project_function(ctx, func, shadowed)
        if name not in _CALLING and project is None:
            continue  # a callable handed to anything else may only be read (its name logged)
        given = [*enumerate(call.args), *((k.arg, k.value) for k in call.keywords)]
        for position, value in given:
            if project is not None and not _calls_parameter(project, position):
                continue  # `_log_api_usage_once(fn)`: a function of the project only reading it
            for node in _outside_calls(value):
                if name in _CALLING and _report_handed_op(ctx, node, call, shadowed, called):
                    continue
                if (
                    not isinstance(node, ast.Name)
                    or id(node) in called
                    or id(node) in ctx.helpers_seen
                    or node.id in shadowed
                ):
                    continue
                qualname = ctx.info.names.resolve(node, shadowed)
                if not qualname or qualname.split(".")[0] == "torch":
                    continue
                _report(
                    ctx,
                    node,
                    ctx.project.find_function(qualname, ctx.info),
                    owner,
                    lambda named, ran: (
                        f"`{node.id}` {named} is handed on uncalled to "
                        f"`{ctx.text(call.func)}(...)` and runs {ran}: it runs where its calls "
                        "cannot be counted, as the function; left as is"
                    ),
                )


def _report_handed_op(
    ctx: FileContext, node: ast.AST, call: ast.Call, shadowed: set[str], called: set[int]
) -> bool:
    """Report (MIG115) a catalog op handed uncalled to what calls it (`map(torch.relu, xs)`,
    `functools.reduce(operator.add, xs)`); whether `node` is one."""
    if not isinstance(node, (ast.Name, ast.Attribute)) or id(node) in called:
        return False
    qualname = ctx.info.names.resolve(node, shadowed)
    if qualname is None or catalog.by_any_function(qualname) is None:
        return False
    ctx.helpers_seen.add(id(node))
    ctx.report(
        node,
        "MIG115",
        f"`{ctx.text(node)}`{'' if ctx.text(node) == qualname else f' (`{qualname}`)'} is "
        f"handed on uncalled to `{ctx.text(call.func)}"
        "(...)`, which calls it where its calls cannot be counted: `fix` converts an op called "
        "by name; left as is",
    )
    return True


def _report(
    ctx: FileContext,
    node: ast.expr,
    found: tuple[FileInfo, ast.FunctionDef] | None,
    owner: str,
    message: Callable[[str, str], str],
) -> None:
    """Report (MIG115) the helper function `found` that `node` reaches from class `owner`,
    when it runs ops: `message(named, ran)` is the finding, given the function's name and
    place and the ops it runs."""
    labels = ops_from(ctx, [(None, *found)]) if found else []
    if not found or not labels:
        return
    info, function = found
    ctx.helpers_seen.add(id(node))
    where = "" if info is ctx.info else f" in `{info.names.module}`"
    named = f"(`{function.name}`{where}, line {function.lineno})"
    ran = f"{len(labels)} op(s) forward reaches from `{owner}` ({', '.join(sorted(set(labels)))})"
    ctx.report(node, "MIG115", message(named, ran), op=function.name)


_CALLING = frozenset(
    {
        "map",
        "filter",
        "sorted",
        "min",
        "max",
        "functools.partial",
        "functools.reduce",
        "itertools.starmap",
        "itertools.accumulate",
        "torch.utils.checkpoint.checkpoint",
        "torch.vmap",
        "torch.func.vmap",
    }
)
"""What calls the functions handed to it (`map` and `filter` as builtins: not bound again)."""


def _project_function(
    ctx: FileContext, func: ast.expr, shadowed: set[str]
) -> ast.FunctionDef | None:
    """The function of the project a call's `func` names (`apply` of `apply(halve, x)`)."""
    qualname = ctx.info.names.resolve(func, shadowed)
    if not qualname or qualname.split(".")[0] == "torch":
        return None
    found = ctx.project.find_function(qualname, ctx.info)
    return found[1] if found else None


def _calls_parameter(function: ast.FunctionDef, position: int | str | None) -> bool:
    """Whether `function` calls the parameter an argument at `position` (an index, or a
    keyword; None for `**kwargs`) binds: `fn(...)` of `def apply(fn, x)`. Unsure (`*args`,
    `**kwargs` given): it may."""
    args = function.args
    params = [*args.posonlyargs, *args.args]
    if isinstance(position, int):
        named = params[position] if position < len(params) else args.vararg
    elif position is None:
        return True
    else:
        named = next((p for p in [*params, *args.kwonlyargs] if p.arg == position), args.kwarg)
    if named is None:
        return True
    if function not in _CALLED_NAMES:
        _CALLED_NAMES[function] = frozenset(
            n.func.id
            for n in all_nodes(function)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        )
    return named.arg in _CALLED_NAMES[function]


_CALLED_NAMES: weakref.WeakKeyDictionary[ast.FunctionDef, frozenset[str]] = (
    weakref.WeakKeyDictionary()
)
"""A function -> the plain names it calls (`name(...)`), kept while it is alive."""


def _outside_calls(value: ast.expr) -> list[ast.AST]:
    """The nodes of `value` but those of the calls in it (each read as a call of its own)."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = [value]
    while todo:
        node = todo.pop()
        if not isinstance(node, ast.Call):
            found.append(node)
            todo += ast.iter_child_nodes(node)
    return found


def _through_module(
    ctx: FileContext, func: ast.Attribute, method: ast.FunctionDef
) -> tuple[tuple[FileInfo, ast.FunctionDef] | None, str]:
    """The helper `pkg.net.mix` names, where `pkg` is an imported module (not bound in the
    method), when it is a helper of this file or the top level binds `pkg` again; and how the
    call reaches it."""
    root = imported_root(ctx.info, func)
    qualname = root and ctx.info.names.resolve(func, ctx.locals_of(method))
    if not qualname or qualname.split(".")[0] == "torch":
        return None, ""
    found = ctx.project.find_function(qualname, ctx.info)
    if found is not None and root in ctx.info.rebound:
        return found, f"its module's name `{root}`, which the top level binds again,"
    return (found, "its module's name") if found and found[0] is ctx.info else (None, "")


def _through_alias(
    ctx: FileContext, func: ast.Name, method: ast.FunctionDef, bound: dict[str, ast.expr]
) -> tuple[tuple[FileInfo, ast.FunctionDef] | None, str]:
    """The helper a name bound once to it calls, in the method (`bound`) or at the top level,
    and how the call reaches it."""
    if func.id in ctx.locals_of(method):
        value = bound.get(func.id)
        shadowed: set[str] = ctx.locals_of(method)
    else:
        value = _top_level_alias(ctx.info, func.id)
        shadowed = set()
    if value is None:
        return None, ""
    qualname = ctx.info.names.resolve(value, shadowed)
    if not qualname or qualname.split(".")[0] == "torch":
        return None, ""
    found = ctx.project.find_function(qualname, ctx.info)
    return found, f"the name `{func.id}` bound to it (`{func.id} = {ast.unparse(value)}`)"


def _top_level_alias(info: FileInfo, name: str) -> ast.expr | None:
    """What the top level binds `name` to, once (`mix2 = mix`), when it binds it nowhere
    else: a name or dotted name."""
    if name in info.rebound or name in info.functions or name in info.names.imports:
        return None
    for stmt in info.tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name
            and isinstance(stmt.value, (ast.Name, ast.Attribute))
        ):
            return stmt.value
    return None


def _bound_once(method: ast.FunctionDef) -> dict[str, ast.expr]:
    """The local names the method (with its nested functions) binds once, by `name = value`
    where the value is a name or dotted name (`mix3 = mix`), to that value."""
    counts: dict[str, int] = {}
    found: dict[str, ast.expr] = {}
    for node in all_nodes(method):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.arg):
            counts[node.arg] = counts.get(node.arg, 0) + 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts[node.name] = counts.get(node.name, 0) + (node is not method)
        elif isinstance(node, ast.alias):
            name = (node.asname or node.name).split(".")[0]
            counts[name] = counts.get(name, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            counts.update({n: 2 for n in node.names})
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, (ast.Name, ast.Attribute))
        ):
            found[node.targets[0].id] = node.value
    return {name: value for name, value in found.items() if counts.get(name) == 1}
