"""Ops called through a name that holds them, not by their own: `act = F.gelu if c else F.relu`
then `act(x)`, a module-level `relu = F.relu`, `self.fn = F.gelu` set in `__init__`. `fix`
converts an op it sees called by its own name; one called through another is reported (MIG115),
so that none is skipped in silence."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable

from migrator import catalog
from migrator.rewrite.context import FileContext, own_class, self_attr
from migrator.rewrite.helpers import as_function, op_labels
from migrator.rewrite.settings import SubmoduleSettings
from migrator.rewrite.stores import dict_of
from migrator.rewrite.tensors import is_container
from migrator.rewrite.walk import all_nodes


def report_held_op(
    ctx: FileContext, method: ast.FunctionDef, call: ast.Call, settings: SubmoduleSettings
) -> None:
    """Report `call` when what it calls, `self.<attr>` (`Model.<attr>`, `type(self).<attr>`)
    or a plain name, is bound to a catalog op (in `__init__`, in the class statement or a
    base's, in `method`, or at the top of the file), to a `partial` of one, or, among other
    values, to a function of the project running ops."""
    func = call.func
    cls = settings.attributes.cls
    if isinstance(func, ast.Attribute) and own_class(cls.name, func.value):
        values = settings.init_values(func.attr) if self_attr(func) else []
        for owner in [cls, *settings.attributes.family.ancestors(cls)]:
            values += [  # `act = F.relu`, `act = staticmethod(torch.sigmoid)`
                stmt.value
                for stmt in owner.node.body
                if isinstance(stmt, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == func.attr for t in stmt.targets)
            ]
    elif isinstance(func, ast.NamedExpr):  # `(f := F.relu)(y)`
        values = [func.value]
    elif isinstance(func, ast.Name):
        values = _name_values(ctx, method, func.id)
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        _report_module_alias(ctx, method, call, func)
        return
    else:
        return
    top = _bound(ctx.info.tree)

    def container(node: ast.expr) -> list[ast.expr]:
        if self_attr(node):
            return settings.init_values(node.attr)
        if not isinstance(node, ast.Name):
            return []
        return _bound(method).get(node.id) or top.get(node.id, [])

    branches = _branches(values, container)
    held = [
        v
        for v in branches
        if _is_op(ctx, _wrapped(ctx, v))
        # a `partial` made here is reported where it is handed the op (`indirect_helpers`)
        and not (_wrapped(ctx, v) is not v and _within(method, v))
    ]
    named = {id(v): f"`{ctx.text(_wrapped(ctx, v))}`" for v in held}
    own = isinstance(func, ast.Name) and func.id in ctx.info.names.local  # a helper's own name
    for value in [] if own else branches:  # a function running ops (`for f in (gate, ...)`)
        qualname = ctx.info.names.resolve(value) if isinstance(value, ast.Name) else None
        found = ctx.project.find_function(qualname, ctx.info) if qualname else None
        if isinstance(value, ast.Lambda) and not _within(method, value):  # `act = lambda ...`
            found = (ctx.info, as_function(value))
        if found and (labels := op_labels(*found)):
            held.append(value)
            what = "a lambda" if isinstance(value, ast.Lambda) else f"`{ctx.text(value)}`"
            named[id(value)] = f"{what} (running {', '.join(labels)})"
    if not held:
        return
    ops = ", ".join(dict.fromkeys(named[id(v)] for v in held))
    holds = "holds" if len(held) == len(branches) else "may hold"
    ctx.helpers_seen.add(id(call))
    ctx.report(
        call, "MIG115", f"`{ctx.text(func)}` {holds} {ops} (line {held[0].lineno}), {THROUGH}"
    )


def _report_module_alias(
    ctx: FileContext, method: ast.FunctionDef, call: ast.Call, func: ast.Attribute
) -> None:
    """Report `call` of `G.silu` where `method` or the top level binds `G` to a module whose
    `silu` is a catalog op (`G = F`)."""
    assert isinstance(func.value, ast.Name)
    for value in _name_values(ctx, method, func.value.id):
        qualname = ctx.info.names.resolve(value)
        if qualname and catalog.by_any_function(f"{qualname}.{func.attr}"):
            ctx.helpers_seen.add(id(call))
            held = f"`{func.value.id}` holds `{ctx.text(value)}`, line {value.lineno}"
            what = f"`{ctx.text(func)}` is `{qualname}.{func.attr}` ({held})"
            ctx.report(call, "MIG115", f"{what}, {THROUGH}")
            return


def report_named_op(ctx: FileContext, call: ast.Call) -> None:
    """Report `call` when what it calls names a catalog op by a string: the `torch.exp` that
    `getattr(torch, "exp")`, `F.__dict__["elu"]` or `vars(F)["elu"]` reads, the tensor method
    `y.relu` that `getattr(y, "relu")` reads (`y` not a literal), or a function of torch's
    named at run time (`getattr(F, self.act)`)."""
    named = named_by_getattr(call.func)
    if named is None:
        module = _named_at_run_time(ctx, call.func)
        if module is None:
            return
        what = f"names a function of `{module}` at run time, which may be an op"
    elif (qualname := ctx.info.names.resolve(named)) is not None:
        if catalog.by_any_function(qualname) is None:
            return
        what = f"is `{qualname}`"
    elif is_container(named.value) or not (
        catalog.by_method(named.attr) or catalog.by_inplace_method(named.attr)
    ):
        return
    else:
        what = f"is `.{named.attr}()` if `{ctx.text(named.value)}` is a tensor"
    ctx.helpers_seen.add(id(call))
    ctx.report(call, "MIG115", f"`{ctx.text(call.func)}` {what}, {THROUGH}")


THROUGH = (
    "called here through it, not by its own name: `fix` converts an op called by name; left as is"
)


_BOUND: weakref.WeakKeyDictionary[ast.AST, dict[str, list[ast.expr]]] = weakref.WeakKeyDictionary()


_BINDING = frozenset({ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.comprehension})
"""The node classes `_bound` reads a binding from (no class derives from them)."""


def _bound(scope: ast.FunctionDef | ast.Module) -> dict[str, list[ast.expr]]:
    """Name -> the values an assignment binds to it (plain, annotated, `:=`, or unpacked:
    `f, g = F.relu, F.gelu`), or a loop over a container (an item of it: `for fn in
    self.acts`, also in a comprehension): anywhere in a method, at the top level of a module;
    worked out once a scope."""
    found = _BOUND.get(scope)
    if found is None:
        statements = all_nodes(scope) if isinstance(scope, ast.FunctionDef) else scope.body
        found = _BOUND[scope] = {}
        for stmt in statements:
            if stmt.__class__ not in _BINDING:  # most nodes (one set lookup)
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                pairs = _unpacked(stmt.targets[0], stmt.value)
            elif isinstance(stmt, (ast.AnnAssign, ast.NamedExpr)) and stmt.value is not None:
                pairs = _unpacked(stmt.target, stmt.value)
            elif isinstance(stmt, (ast.For, ast.comprehension)):
                pairs = _unpacked(stmt.target, _item(stmt.iter))
            else:
                continue
            for name, value in pairs:
                found.setdefault(name, []).append(value)
    return found


def _item(iterated: ast.expr) -> ast.expr:
    """An item of what a loop runs over (`acts[0]`); over `enumerate(acts)` or `zip(acts,
    ...)`, the tuple of an item of each (`(0, acts[0])`)."""
    if (
        isinstance(iterated, ast.Call)
        and isinstance(iterated.func, ast.Name)
        and iterated.func.id in ("enumerate", "zip")
        and not iterated.keywords
        and iterated.args
    ):
        given = iterated.args[:1] if iterated.func.id == "enumerate" else iterated.args
        items = [_item(a) for a in given]
        if iterated.func.id == "enumerate":
            items.insert(0, ast.Constant(0))
        return ast.copy_location(ast.Tuple(items, ast.Load()), iterated)
    return ast.copy_location(ast.Subscript(iterated, ast.Constant(0), ast.Load()), iterated)


def _unpacked(target: ast.expr, value: ast.expr) -> list[tuple[str, ast.expr]]:
    """(name, value) for each name `target` binds to `value` or an item of it (an item of a
    literal tuple or list unpacked, else `value[i]`)."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if not isinstance(target, (ast.Tuple, ast.List)) or any(
        isinstance(t, ast.Starred) for t in target.elts
    ):
        return []
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
        items = value.elts
    else:
        items = [
            ast.copy_location(ast.Subscript(value, ast.Constant(i), ast.Load()), value)
            for i in range(len(target.elts))
        ]
    return [pair for t, v in zip(target.elts, items) for pair in _unpacked(t, v)]


def _branches(
    values: list[ast.expr], container: Callable[[ast.expr], list[ast.expr]]
) -> list[ast.expr]:
    """The values, each branch of a conditional expression (or operand of `or` / `and`) apart,
    and for an item of a literal container, or of a container the file binds at its top or
    `__init__` sets (`ACTS[kind]`, `ACTS.get(kind, F.relu)`, `self.acts[0]`), each item it
    may be; `container`: the values bound to a name or attribute."""
    found: list[ast.expr] = []
    todo = list(values)
    for _ in range(256):  # containers naming each other end
        if not todo:
            break
        value = todo.pop(0)
        if isinstance(value, ast.IfExp):
            todo[:0] = [value.body, value.orelse]
        elif isinstance(value, ast.BoolOp):  # `act or F.relu`: either operand
            todo[:0] = value.values
        elif isinstance(value, ast.Subscript) and (
            items := _items([value.value] + container(value.value))
        ):
            todo[:0] = items
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "get"
        ):
            items = _items(container(value.func.value))
            todo[:0] = items + value.args[1:]  # and its default
            found += [] if items else [value]
        else:  # an item of a container not written out is what it is (`F.__dict__["elu"]`)
            found.append(value)
    return found


def _items(values: list[ast.expr]) -> list[ast.expr]:
    """The items of the containers written out among `values` (a dict's values)."""
    found: list[ast.expr] = []
    for value in values:
        if isinstance(value, ast.Dict):
            found += value.values
        elif isinstance(value, (ast.List, ast.Tuple)):
            found += [e for e in value.elts if not isinstance(e, ast.Starred)]
    return found


def _name_values(ctx: FileContext, method: ast.FunctionDef, name: str) -> list[ast.expr]:
    """The values `method` binds to `name`, or else, when it binds none, the top level."""
    local = name in ctx.locals_of(method)  # or a comprehension's: `_bound` has it
    return _bound(method).get(name) or ([] if local else _bound(ctx.info.tree).get(name, []))


def _within(method: ast.FunctionDef, node: ast.expr) -> bool:
    """Whether `node` is written in `method` (whose own analysis reads it)."""
    return method.lineno <= node.lineno <= (method.end_lineno or 0)


def _wrapped(ctx: FileContext, value: ast.expr) -> ast.expr:
    """What `functools.partial(<f>, ...)` or `staticmethod(<f>)` wraps (`<f>`), else
    `value`: a call of it runs `<f>`."""
    while isinstance(value, ast.Call) and value.args:
        func = value.func
        if ctx.info.names.resolve(func) == "functools.partial" or (
            isinstance(func, ast.Name)
            and func.id == "staticmethod"
            and ctx.info.names.is_free("staticmethod")
        ):
            value = value.args[0]
        else:
            break
    return value


def named_by_getattr(func: ast.expr) -> ast.Attribute | None:
    """`<x>.<name>` for a method `getattr(<x>, "<name>"[, default])`, `<x>.__dict__["<name>"]`
    or `vars(<x>)["<name>"]` names (`<x>` not `self`: its methods are the class's own), read
    as that attribute (`getattr(self.head, "loss")(y)`: `object_method_getattr.py`;
    `F.__dict__["elu"]`). A default is not what runs when the name is defined."""
    named = dict_of(func)  # `getattr(x, key)` as `x.__dict__[key]`
    if not isinstance(named, ast.Subscript):
        return None
    held = dict_of(named.value)
    if (
        isinstance(held, ast.Attribute)
        and held.attr == "__dict__"
        and not (isinstance(held.value, ast.Name) and held.value.id == "self")
        and isinstance(named.slice, ast.Constant)
        and isinstance(named.slice.value, str)
    ):
        return ast.copy_location(ast.Attribute(held.value, named.slice.value, ast.Load()), func)
    return None


def _named_at_run_time(ctx: FileContext, value: ast.expr) -> str | None:
    """The module of torch's whose attribute `value` reads by a name known at run time
    (`getattr(F, act)`, `F.__dict__[act]`), else None."""
    named = dict_of(value)  # `getattr(x, key)` as `x.__dict__[key]`
    if not isinstance(named, ast.Subscript):
        return None
    held = dict_of(named.value)
    if not (isinstance(held, ast.Attribute) and held.attr == "__dict__"):
        return None
    module = ctx.info.names.resolve(held.value)
    return module if module is not None and module.split(".")[0] == "torch" else None


def _is_op(ctx: FileContext, value: ast.expr) -> bool:
    """Whether `value` is a catalog op, or may be one: a function of torch's it names by a
    string known only at run time (`getattr(F, name)`)."""
    named = named_by_getattr(value)
    if named is None and _named_at_run_time(ctx, value):
        return True
    value = named or value
    if not isinstance(value, (ast.Name, ast.Attribute)):
        return False
    qualname = ctx.info.names.resolve(value)
    return qualname is not None and catalog.by_any_function(qualname) is not None
