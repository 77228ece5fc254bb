"""A helper's parameter that every call passes the calling module's `self.training`
(torchvision's `shifted_window_attention(..., training=self.training)`): in the helper's
module, created in that caller's `__init__`, `self.training` is the same flag (`train()` and
`eval()` set it on every submodule, unless the caller's class sets its own apart: `mode_flag`),
so a dropout given the parameter may become a module.
"""

from __future__ import annotations

import ast
import re
import weakref
from collections.abc import Callable
from pathlib import Path

from migrator.rewrite.mentions import PackageCalls
from migrator.rewrite.mode_flag import class_flag_apart
from migrator.rewrite.walk import all_nodes


def mode_parameters(
    function: ast.FunctionDef,
    tree: ast.Module,
    path: Path | None,
    apart: Callable[[ast.ClassDef], str | None] = class_flag_apart,
) -> set[str]:
    """The parameters of the module-level `function` that its body never binds again and that
    every call of it in `tree` passes as `self.training` of the method it is in (positionally
    or by keyword; `*args` or `**kwargs` prove nothing): the call as written, `self.<name>(...)`
    or `self.<name>_<n>(...)` as `fix` makes it, or `<name>_ops(ops, ...)`, the twin function of
    a `torch.fx.wrap`'d helper. None when there is no such call, or a method of another file of
    the package calls it, or another file may import it under another name (`from .a import mix
    as mx`: its callers there are not read), or `apart` tells why a calling class's flag may
    differ from its submodules' (`mode_flag`)."""
    params = [*function.args.posonlyargs, *function.args.args]
    names = {p.arg for p in params}
    own = {id(a) for a in ast.walk(function.args)}
    for node in all_nodes(function):
        if node is function or id(node) in own:
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.discard(node.id)
        elif isinstance(node, ast.arg):  # a nested function's or lambda's own
            names.discard(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.difference_update(node.names)
    if not names:
        return set()
    if path is not None:
        package = PackageCalls(path)
        if package.from_methods(function.name) or package.renamed(function.name):
            return set()
    calls = 0
    for method, call, shift, owner_class in _calls(function.name, tree):
        calls += 1
        if owner_class is not None and apart(owner_class):
            return set()  # that caller's `self.training` may not be its submodules' flag
        first = [*method.args.posonlyargs, *method.args.args][:1]
        plain = not any(_named(d, ("staticmethod", "classmethod")) for d in method.decorator_list)
        owner = "self" if plain and first and first[0].arg == "self" else None
        for index, param in enumerate(params):
            if param.arg in names and not _passes_mode(call, index + shift, param.arg, owner):
                names.discard(param.arg)
    return names if calls else set()


_Call = tuple[ast.FunctionDef, ast.Call, ast.ClassDef | None]
"""A call, the method it is in and that method's class (`_calls`)."""
_OUTSIDE = ast.FunctionDef("", ast.arguments([], [], None, [], [], None, []), [], [])
"""The method standing for code outside the methods of classes: it has no `self`."""
_Index = tuple[dict[str, list[_Call]], dict[str, list[_Call]]]
_INDEX: weakref.WeakKeyDictionary[ast.Module, _Index] = weakref.WeakKeyDictionary()
"""A tree's calls of a name and of an attribute of `self`, by the name (`_named_calls`)."""


def _calls(
    name: str, tree: ast.Module
) -> list[tuple[ast.FunctionDef, ast.Call, int, ast.ClassDef | None]]:
    """(the method it is in, the call, how many arguments come before the function's own, the
    method's class) for each call of the helper `name` in `tree`; a call outside a method of a
    class stands for one that passes nothing (its method is `_OUTSIDE`, of no class)."""
    names, attrs = _named_calls(tree)
    own = re.compile(rf"{re.escape(name)}(_\d+)?")
    return [
        *((method, call, 0, cls) for method, call, cls in names.get(name, [])),
        *((method, call, 1, cls) for method, call, cls in names.get(f"{name}_ops", [])),
        *(
            (method, call, 0, cls)
            for attr, found in attrs.items()
            if own.fullmatch(attr)
            for method, call, cls in found
        ),
    ]


def _named_calls(tree: ast.Module) -> _Index:
    """The calls in `tree` of a name (`mix(...)`) and of an attribute of `self` (`self.mix(...)`),
    each by the name called, found in one walk a tree (kept while the tree lives): every helper
    whose parameters may follow the mode asks for its own."""
    if tree in _INDEX:
        return _INDEX[tree]
    names: dict[str, list[_Call]] = {}
    attrs: dict[str, list[_Call]] = {}
    owners = {
        id(m): c
        for c in all_nodes(tree)
        if isinstance(c, ast.ClassDef)
        for m in c.body
        if isinstance(m, ast.FunctionDef)
    }
    stack: list[tuple[ast.AST, ast.FunctionDef]] = [(tree, _OUTSIDE)]
    while stack:
        node, method = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            method = node if id(node) in owners else _OUTSIDE  # type: ignore[assignment]
        if isinstance(node, ast.Call):
            func = node.func
            found = (method, node, owners.get(id(method)))
            if isinstance(func, ast.Name):
                names.setdefault(func.id, []).append(found)
            elif (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
            ):
                attrs.setdefault(func.attr, []).append(found)
        stack += [(child, method) for child in ast.iter_child_nodes(node)]
    _INDEX[tree] = names, attrs
    return names, attrs


def _passes_mode(call: ast.Call, index: int, name: str, owner: str | None) -> bool:
    """Whether `call` passes `<owner>.training` as the parameter `name` at `index`."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return False
    if index < len(call.args):
        value: ast.expr | None = call.args[index]
    else:
        value = next((k.value for k in call.keywords if k.arg == name), None)
    return (
        owner is not None
        and isinstance(value, ast.Attribute)
        and value.attr == "training"
        and isinstance(value.value, ast.Name)
        and value.value.id == owner
    )


def _named(decorator: ast.expr, names: tuple[str, ...]) -> bool:
    """Whether the decorator is one of `names` (also called, or as an attribute)."""
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")) in names
