"""Whether a module's `self.training` is the flag of the submodules its `__init__` creates.
`train()` and `eval()` set it on every submodule, so an op given `self.training` (a dropout, a
batch norm) may become a module following its own flag; not when a class overrides `train`
without passing the mode on (`super().train(mode)`), or calls `train`/`eval` on something
there, or overrides `eval` otherwise than as `super().eval()` or `self.train(False)`, or a method
stores into `self.training` itself, or code of its file, or of a file of its package naming the
class, stores into another module's `training` (`self.inner.training = False`, whose class is not
told: any class's; `training_stored_outside.py`): the flags may then differ."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterable

from migrator.rewrite.family import Family
from migrator.rewrite.mentions import PackageCalls
from migrator.rewrite.project import ClassInfo
from migrator.rewrite.stores import READS, Store, class_stores, stores_of, subclasses_below
from migrator.rewrite.walk import all_nodes


def flag_apart(family: Family, cls: ClassInfo) -> str | None:
    """Why `self.training` of a `cls` instance may differ from its submodules' (None: it
    cannot), read in `cls`, its bases and its subclasses."""
    for each in [cls, *family.ancestors(cls), *subclasses_below(family, cls)]:
        if not each.qualname.startswith("torch."):
            found = class_flag_apart(each.node, stores_of(each, "training"))
            if found:
                return found
    return _stored_outside(cls)


def _stored_outside(cls: ClassInfo) -> str | None:
    """Why code of `cls`'s file, or of another file of its package naming it, may store into
    the `training` of a module other than `self` (None: it does not)."""
    tree = cls.file.tree
    text = cls.file.text or cls.file.source
    if text is not None and "setattr" not in text:
        if text.count(".training") == text.count("self.training"):
            _OWN_STORES[tree] = 0  # every `.training` is `self`'s
    if tree not in _OWN_STORES:
        _OWN_STORES[tree] = next(
            (
                node.lineno
                for node in all_nodes(tree)
                if isinstance(node, (ast.Attribute, ast.Call)) and _outside_store(node)
            ),
            0,
        )
    if _OWN_STORES[tree]:
        return f"line {_OWN_STORES[tree]} may store into another module's `training`"
    path = cls.file.path
    other = PackageCalls(path).sets_training(cls.name) if path is not None else None
    return f"`{other.name}` may store into another module's `training`" if other else None


_OWN_STORES: weakref.WeakKeyDictionary[ast.Module, int] = weakref.WeakKeyDictionary()
"""A file's tree -> the line of its first store into another module's `training` (0: none)."""


def _outside_store(node: ast.Attribute | ast.Call) -> bool:
    """Whether `node` stores into `<x>.training` or calls `setattr(<x>, "training", ...)`,
    `<x>` not `self`."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
        self_flag = isinstance(node.value, ast.Name) and node.value.id == "self"
        return node.attr == "training" and not self_flag
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and len(node.args) >= 2
        and not (isinstance(node.args[0], ast.Name) and node.args[0].id == "self")
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value == "training"
    )


def class_flag_apart(node: ast.ClassDef, stores: Iterable[Store] | None = None) -> str | None:
    """Why the methods of the class `node` may set `self.training` apart from its submodules'
    (None: they do not); `stores`: its `class_stores`, when known."""
    for item in node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if item.name == "train" and not _passes_mode_on(item):
            return (
                f"`{node.name}.train` does not only pass its mode on with "
                f"`super().train(...)` (line {item.lineno})"
            )
        if item.name == "eval" and not _evaluates(item):
            return (
                f"`{node.name}.eval` does not only call `super().eval()` or `self.train(False)` "
                f"(line {item.lineno})"
            )
    for store in class_stores(node) if stores is None else stores:
        if store.modules_only or (store.kind == "called" and store.call in READS):
            continue  # `add_module` cannot bind `training`, which every module has
        if store.attr == "training" or (store.attr is None and "training".startswith(store.prefix)):
            what = (
                "stores into `self.training`"
                if store.attr
                else "sets `self` attributes by a name known only at run time"
            )
            return f"`{node.name}.{store.method}` {what} (line {store.line})"
    return None


def _passes_mode_on(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a `train` override calls `super().train(<its mode parameter>)` at its top level
    and calls no other `train` or `eval`."""
    params = [*method.args.posonlyargs, *method.args.args][1:2]
    if not params:
        return False
    mode = params[0].arg
    passes = [
        s.value
        for s in method.body
        if isinstance(s, (ast.Expr, ast.Return))
        and isinstance(s.value, ast.Call)
        and _super_train(s.value, mode)
    ]
    others = [
        n
        for n in all_nodes(method)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("train", "eval")
        and not any(n is p for p in passes)
    ]
    return len(passes) == 1 and not others


def _evaluates(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether an `eval` override calls `super().eval()` or `self.train(False)` at its top level
    and calls no other `train` or `eval`."""
    calls = [
        n
        for n in all_nodes(method)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("train", "eval")
    ]
    top = [
        s.value
        for s in method.body
        if isinstance(s, (ast.Expr, ast.Return)) and isinstance(s.value, ast.Call)
    ]
    return (
        len(calls) == 1
        and any(calls[0] is t for t in top)
        and (super_call(calls[0], "eval") or _self_train_false(calls[0]))
    )


def super_call(call: ast.Call, name: str) -> bool:
    """Whether `call` is `super().<name>()`, given nothing."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == name
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
        and not call.args
        and not call.keywords
    )


def _self_train_false(call: ast.Call) -> bool:
    """Whether `call` is `self.train(False)` (or `mode=False`)."""
    func = call.func
    given = [*call.args, *(k.value for k in call.keywords if k.arg == "mode")]
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "train"
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
        and len(given) == 1
        and len(call.args) + len(call.keywords) == 1
        and isinstance(given[0], ast.Constant)
        and given[0].value is False
    )


def _super_train(call: ast.Call, mode: str) -> bool:
    """Whether `call` is `super().train(mode)` (or `mode=mode`)."""
    func = call.func
    given = [*call.args, *(k.value for k in call.keywords if k.arg == "mode")]
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "train"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
        and len(given) == 1
        and len(call.args) + len(call.keywords) == 1
        and isinstance(given[0], ast.Name)
        and given[0].id == mode
    )
