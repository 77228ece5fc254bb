"""Ops that forward runs through a method of an object the class holds: `self.box_coder.decode(
...)` of a plain class, `self.transform.postprocess(...)` of a module whose own forward never
runs it. Neither class rewrites them, so one finding at each such call on the forward path
(MIG115) names them: none is skipped in silence.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Sequence
from functools import partial

from migrator import catalog
from migrator.rewrite.context import FileContext, named_attribute, self_attr
from migrator.rewrite.family import Family
from migrator.rewrite.held_methods import (
    NOT_REWRITTEN,
    called_as_module,
    held_by_holders,
    plain_why,
)
from migrator.rewrite.held_ops import named_by_getattr, report_held_op, report_named_op
from migrator.rewrite.helpers import as_function, op_labels, ops_in, target_of
from migrator.rewrite.project import ClassInfo, FileInfo
from migrator.rewrite.settings import SubmoduleSettings
from migrator.rewrite.stores import stores_of
from migrator.rewrite.walk import all_nodes


def report_object_methods(
    ctx: FileContext,
    owner: ClassInfo,
    reached: list[ast.FunctionDef],
    settings: SubmoduleSettings,
    family: Family,
) -> None:
    """Report each call `self.<attr>.<method>(...)` in the forward-path `reached` methods of
    `owner`, where `__init__` alone builds `self.<attr>` from classes found outside torch (or,
    else, every module the run-time evidence saw there is of such a class), whose `<method>` (not
    `forward`, nor a dunder) runs ops, itself or through the methods and helpers it calls; not
    when the class's own analysis takes the method on its forward path (`held_methods`)."""
    for method in reached:
        aliases: list[dict[str, str]] = []  # worked out when a call on a local name needs them
        walked: set[str] | None = None  # likewise, the names walking the children
        for call in ctx.calls_in(method):
            func = named_by_getattr(call.func) or call.func
            if self_attr(func) and id(call) not in ctx.helpers_seen:
                _report_held_function(ctx, call, func.attr, settings)
                if id(call) not in ctx.helpers_seen:
                    report_held_op(ctx, method, call, settings)
                if id(call) not in ctx.helpers_seen:
                    _report_called_object(ctx, owner, call, settings)
                continue
            if isinstance(func, ast.Name) and id(call) not in ctx.helpers_seen:
                if not aliases and func.id in ctx.locals_of(method):
                    aliases.append(_aliases(ctx, method))
                if (attr := (aliases[0] if aliases else {}).get(func.id)) is not None:
                    _report_held_function(ctx, call, attr, settings)  # `f = self.sim; f(x)`
            if (
                isinstance(func, (ast.Name, ast.NamedExpr, ast.Attribute))
                and id(call) not in ctx.helpers_seen
            ):
                report_held_op(ctx, method, call, settings)
            if (
                isinstance(call.func, (ast.Call, ast.Subscript))
                and id(call) not in ctx.helpers_seen
            ):
                report_named_op(ctx, call)  # `getattr(torch, "exp")(y)`
            if id(call) not in ctx.helpers_seen:
                _report_passed_object(ctx, method, call)
            if not isinstance(func, ast.Attribute):
                continue
            if (
                not aliases
                and isinstance(func.value, ast.Name)
                and func.value.id != "self"
                and not catalog.by_method(func.attr)  # `x.view(...)` on a tensor: no object's
                and func.value.id in ctx.locals_of(method)
            ):
                aliases.append(_aliases(ctx, method))
            if isinstance(func.value, ast.Name) and id(call) not in ctx.helpers_seen:
                if walked is None:
                    walked = _walk_targets(ctx, method)
                if func.value.id in walked:
                    _report_walked_child(ctx, call, func)
            if (
                (attr := _held(func.value, aliases[0] if aliases else {})) is None
                or func.attr == "forward"
                or func.attr.startswith("__")
                or id(call) in ctx.helpers_seen
            ):
                continue
            name = func.attr
            made = settings.made_by(attr, partial(_defines, ctx, name))
            source = ""
            if not made:
                path = str(owner.file.path)
                held = ctx.project.evidence.classes(path, owner.name, attr)
                if held and all(_defines(ctx, name, each) for each in held):
                    made, source = tuple(held), ", as every built model holds"
            if not made:
                assigned = _assigned(ctx, owner, attr, set())
                if assigned and all(_defines(ctx, name, each) for each in assigned):
                    made, source = assigned, ", as every assignment of it gives"
            classes = [c for qualname in made if (c := ctx.project.find_class(qualname, ctx.info))]
            if not classes:
                _report_unknown_holder(ctx, call, func)
                continue
            decided = [
                held_by_holders(ctx, c, family)
                if ctx.project.is_module(c) or not plain_why(ctx, c)
                else ({}, "")
                for c in classes
            ]
            if classes and all(name in counts for counts, _ in decided):
                continue  # the class's own rewrite covers the method
            found = [label for cls in classes for label in _ops_of(ctx, cls, name)]
            if not found:
                continue
            ctx.helpers_seen.add(id(call))
            owners = ", ".join(f"`{c.name}`" for c in classes)
            labels = ", ".join(sorted(set(found)))
            ctx.report(
                call,
                "MIG115",
                f"`{ctx.text(func)}` (a method of {owners}{source}) runs {len(found)} op(s) forward "
                f"reaches ({labels}): a method of another object stays a call of that object: "
                f"{_why(ctx, classes, owner, attr, [why for _, why in decided])}; left as is",
            )


def _report_unknown_holder(ctx: FileContext, call: ast.Call, func: ast.Attribute) -> None:
    """Report a call `self.<attr>.<name>(...)` whose object's class is not known statically
    (`self.head = head`, a constructor argument or a default built in `__init__`), when a
    class of the file defines `<name>` running ops (fcos's `self.head.compute_loss(...)`):
    which class runs it is not known, and no class rewrites it (`object_method_unknown.py`)."""
    _report_file_definers(
        ctx,
        call,
        func,
        "",
        f"the class of `{ctx.text(func.value)}` is not known statically (`fix --evidence` reads "
        "it from built models)",
    )


def _report_walked_child(ctx: FileContext, call: ast.Call, func: ast.Attribute) -> None:
    """Report a call `c.<name>(...)` of a name bound walking `self.children()` or
    `self.modules()` (`for c in self.children()`, a comprehension), when a class of the file
    defines `<name>` (not `forward`, nor a dunder) running ops: which child runs it is not
    known, and no class rewrites it (`object_method_walked.py`)."""
    if not isinstance(func.value, ast.Name) or func.attr == "forward" or func.attr[:2] == "__":
        return
    aside = f" (`{func.value.id}` walking the children)"
    _report_file_definers(ctx, call, func, aside, "which child runs it is not known")


def _report_file_definers(
    ctx: FileContext, call: ast.Call, func: ast.Attribute, aside: str, unknown: str
) -> None:
    """Report `call` of `func`, a method of an object `unknown` says is of no class known,
    with the ops of that method in each class of the file defining it (none: no report)."""
    found = {
        cls.name: labels
        for cls in ctx.info.classes.values()
        if func.attr in cls.methods() and (labels := _ops_of(ctx, cls, func.attr))
    }
    if not found:
        return
    ctx.helpers_seen.add(id(call))
    labels = sorted({label for each in found.values() for label in each})
    owners = ", ".join(f"`{name}`" for name in found)
    ctx.report(
        call,
        "MIG115",
        f"`{ctx.text(func)}`{aside} may run the method of {owners}, {len(labels)} op(s) "
        f"({', '.join(labels)}): {unknown}, and a method of another object stays a call of "
        "that object; left as is",
    )


def _walk_targets(ctx: FileContext, method: ast.FunctionDef) -> set[str]:
    """The names `method` binds as the target of a loop or comprehension over
    `self.children()` or `self.modules()`."""
    found: set[str] = set()
    if not any(
        self_attr(c.func) and c.func.attr in ("children", "modules") for c in ctx.calls_in(method)
    ):
        return found
    for node in all_nodes(method):
        if isinstance(node, (ast.For, ast.comprehension)) and (
            isinstance(node.iter, ast.Call)
            and self_attr(node.iter.func)
            and node.iter.func.attr in ("children", "modules")
            and isinstance(node.target, ast.Name)
        ):
            found.add(node.target.id)
    return found


def _report_called_object(
    ctx: FileContext, owner: ClassInfo, call: ast.Call, settings: SubmoduleSettings
) -> None:
    """Report a call `self.<attr>(...)` of an object of a plain class (no module) that
    `__init__` alone builds (or that every assignment of it gives), its `__call__` (torchvision's
    `self.fg_bg_sampler(labels)`), when it runs ops: neither class rewrites them."""
    assert isinstance(call.func, ast.Attribute)
    attr = call.func.attr
    wanted = partial(_defines, ctx, "__call__")
    made = settings.made_by(attr, wanted)
    if not made:
        assigned = _assigned(ctx, owner, attr, set())
        made = assigned if assigned and all(wanted(each) for each in assigned) else ()
    classes = [c for qualname in made if (c := ctx.project.find_class(qualname, ctx.info))]
    if not classes or _any_module(ctx, classes):  # its `forward`, analysed with its class
        return
    found = [label for cls in classes for label in _ops_of(ctx, cls, "__call__")]
    if not found:
        return
    ctx.helpers_seen.add(id(call))
    owners = ", ".join(f"`{c.name}`" for c in classes)
    ctx.report(
        call,
        "MIG115",
        f"`{ctx.text(call.func)}(...)` (`__call__` of {owners}) runs {len(found)} op(s) forward "
        f"reaches ({', '.join(sorted(set(found)))}): a method of another object stays a call of "
        f"that object: {_why(ctx, classes, owner, attr)}; left as is",
    )


def holds_plain_object(ctx: FileContext, settings: SubmoduleSettings, attr: str) -> bool:
    """Whether `self.<attr>` holds, whatever `__init__` assignment gave it (`made_by`), an
    instance of a plain class of the project defining `__call__` that no run makes a module
    (neither an `nn.Module` nor `called_as_module`: torchvision's `Matcher`, whose `__call__`
    runs no op): calling it runs that object, no module, so its calls reuse none."""
    made = settings.made_by(attr, partial(_defines, ctx, "__call__"))
    classes = [c for qualname in made if (c := ctx.project.find_class(qualname, ctx.info))]
    return bool(made) and len(classes) == len(made) and not _any_module(ctx, classes)


def _any_module(ctx: FileContext, classes: list[ClassInfo]) -> bool:
    """Whether one of `classes` is a module, or becomes one (`called_as_module`)."""
    return any(ctx.project.is_module(c) or called_as_module(ctx, c) for c in classes)


def report_passed_in_helpers(ctx: FileContext, helpers: list[ast.FunctionDef]) -> None:
    """Report in the `helpers` that stay functions each call of a parameter annotated with a
    class of the project, as in a forward-path method (`helper_object_passed_in.py`)."""
    for helper in helpers:
        for call in ctx.calls_in(helper):
            if id(call) not in ctx.helpers_seen:
                _report_passed_object(ctx, helper, call)


def _report_passed_object(ctx: FileContext, method: ast.FunctionDef, call: ast.Call) -> None:
    """Report a call of a parameter annotated with a class of the project that is no module,
    `mapper(boxes)` of torchvision's `mapper: Optional[LevelMapper]` (its `__call__`), or of a
    method of one, `coder.decode(...)` (also of a module's other methods), when it runs ops:
    neither class rewrites them."""
    func = call.func
    if isinstance(func, ast.Name):
        param, name = func.id, "__call__"
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        param, name = func.value.id, func.attr
        if name == "forward" or name.startswith("__"):
            return
    else:
        return
    cls = _parameter_class(ctx, method, param)
    if cls is None or (
        name == "__call__" and (ctx.project.is_module(cls) or called_as_module(ctx, cls))
    ):
        return
    if name != "__call__" and name in held_by_holders(ctx, cls, Family(ctx.project, ctx.info))[0]:
        return  # a hand-over its holders' counts take in: the class's own rewrite covers it
    found = _ops_of(ctx, cls, name)
    if not found:
        return
    ctx.helpers_seen.add(id(call))
    labels = ", ".join(sorted(set(found)))
    ctx.report(
        call,
        "MIG115",
        f"`{ctx.text(func)}` (`{cls.name}.{name}`, `{param}` being annotated `{cls.name}`) runs "
        f"{len(found)} op(s) forward reaches ({labels}): a method of an object passed in stays "
        "a call of that object, which neither class rewrites; left as is",
    )


def _parameter_class(ctx: FileContext, method: ast.FunctionDef, name: str) -> ClassInfo | None:
    """The class of the project (not torch's) that the parameter `name` of `method`, never
    bound again there, is annotated with (`LevelMapper`, `Optional[LevelMapper]`)."""
    params = [*method.args.posonlyargs, *method.args.args, *method.args.kwonlyargs]
    arg = next((a for a in params if a.arg == name), None)
    if arg is None or arg.annotation is None:
        return None
    if any(
        isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
        for n in all_nodes(method)
    ):
        return None
    annotation = arg.annotation
    if isinstance(annotation, ast.Subscript) and ctx.info.names.resolve(annotation.value) in (
        "typing.Optional",
        "Optional",
    ):
        annotation = annotation.slice
    elif isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        parts = [annotation.left, annotation.right]
        kept = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        annotation = kept[0] if len(kept) == 1 else annotation
    qualname = ctx.info.names.resolve(annotation)
    if qualname is None or qualname.split(".")[0] == "torch":
        return None
    return ctx.project.find_class(qualname, ctx.info)


def _held(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The attribute `node` reads of `self`: `self.<attr>`, `getattr(self, "<attr>")`,
    `self._modules["<attr>"]`, or a local name bound once to one of them (`aliases`)."""
    if self_attr(node):
        return node.attr
    if (
        isinstance(node, ast.Subscript)
        and self_attr(node.value)
        and node.value.attr == "_modules"
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    return named_attribute(node)


def _aliases(ctx: FileContext, method: ast.FunctionDef) -> dict[str, str]:
    """Local names the method binds once, to an attribute of `self` (`coder = self.coder`)."""
    return ctx.aliases(method, lambda value: _held(value, {}))


def _report_held_function(
    ctx: FileContext, call: ast.Call, attr: str, settings: SubmoduleSettings
) -> None:
    """Report a call of `self.<attr>` (or of a local name bound to it) holding a module-level
    function that `__init__` stores there (torchvision's `self.box_similarity =
    box_ops.box_iou`), when it runs ops."""
    held = settings.held_function(attr)
    if held is None:
        _report_held_lambda(ctx, call, attr, settings)
        return
    info, function, only = held
    only = only and settings.settled(attr)  # `if c: self.sim = iou` may leave it unset
    found = ops_from(ctx, [(None, info, function)])
    if not found:
        return
    ctx.helpers_seen.add(id(call))
    labels = ", ".join(sorted(set(found)))
    where = "" if info is ctx.info else f" (in `{info.names.module}`)"
    ctx.report(
        call,
        "MIG115",
        f"{_holder(ctx, call, attr)} {'holds' if only else 'may hold'} the function "
        f"`{function.name}`{where}, no module, which runs {len(found)} op(s) forward reaches "
        f"({labels}): they run outside any module; left as is",
    )


def _holder(ctx: FileContext, call: ast.Call, attr: str) -> str:
    """What the finding of a call of a held function names: `self.sim`, `f` (`self.sim`)."""
    shown = f"`{ctx.text(call.func)}`"
    return f"{shown} (`self.{attr}`)" if isinstance(call.func, ast.Name) else shown


def _report_held_lambda(
    ctx: FileContext, call: ast.Call, attr: str, settings: SubmoduleSettings
) -> None:
    """Report a call of `self.<attr>` holding a lambda that `__init__` stores there
    (`self.gate = lambda x: torch.sigmoid(x)`), when it runs ops."""
    lambdas = [v for v in settings.init_values(attr) if isinstance(v, ast.Lambda)]
    found = ops_from(ctx, [(None, ctx.info, as_function(each)) for each in lambdas])
    if not found:
        return
    ctx.helpers_seen.add(id(call))
    ctx.report(
        call,
        "MIG115",
        f"{_holder(ctx, call, attr)} holds a lambda (line {lambdas[0].lineno}), no module, which "
        f"runs {len(found)} op(s) forward reaches ({', '.join(sorted(set(found)))}): they run "
        "outside any module; left as is",
    )


def _why(
    ctx: FileContext,
    classes: list[ClassInfo],
    owner: ClassInfo,
    attr: str,
    whys: Sequence[str] = (),
) -> str:
    """Why the ops of a method of an object of `classes`, held in `owner.<attr>`, cannot become
    modules of its own (`whys`: why the rewrite of each module class does not take it)."""
    kept = [
        (c, why) for c in classes if not ctx.project.is_module(c) and (why := plain_why(ctx, c))
    ]
    if kept:
        names = ", ".join(f"`{c.name}`" for c, _ in kept)
        return (
            f"{names} is no `nn.Module`, and `fix` makes it one only when nothing but its "
            f"holders' `__init__` makes one and nothing tells it from an object: {kept[0][1]}"
        )
    names = ", ".join(f"`{c.name}`" for c in classes)
    elsewhere = [why for why in whys if why.endswith(NOT_REWRITTEN)]
    if elsewhere:
        return elsewhere[0]
    reasons = "; ".join(sorted({why for why in whys if why})) or "one is not"
    if not all(ctx.project.is_module(c) for c in classes):
        return (
            f"{names} is no `nn.Module`, and `fix` makes it one only when every call of the "
            f"methods its holders call is known: {reasons}"
        )
    return (
        f"the rewrite of {names} takes a method other modules call on its instances only "
        f"when every call of it is known: {reasons}"
    )


def _defines(ctx: FileContext, name: str, qualname: str) -> bool:
    """Whether the class `qualname` is found outside torch (an eager-mode `FloatFunctional`'s
    methods are a module's own ops) and has the method `name`."""
    if qualname.split(".")[0] == "torch":
        return False
    found = ctx.project.find_class(qualname, ctx.info)
    return found is not None and _method(ctx, found, name) is not None


def _ops_of(ctx: FileContext, cls: ClassInfo, name: str) -> list[str]:
    """The labels of the ops the method `name` of `cls` (or of a base) runs: its own, those of
    the methods of the class it calls on `self` and of the helper functions it calls."""
    method = _method(ctx, cls, name)
    return ops_from(ctx, [(cls, method[0].file, method[1])] if method else [])


def ops_from(
    ctx: FileContext,
    todo: list[tuple[ClassInfo | None, FileInfo, ast.FunctionDef]],
    given: Callable[[ast.FunctionDef], frozenset[str]] | None = None,
) -> list[str]:
    """The labels of the ops the functions of `todo` run (each a method of its class, or a
    function): their own, those of the methods of the class they call on `self` and of the
    helper functions they call; `given`: the parameters of each that may be tensors, when not
    only those proven so (what torch hands a hook)."""
    found: list[str] = []
    seen: set[int] = set()
    while todo:
        owner, info, function = todo.pop()
        if id(function) in seen:
            continue
        seen.add(id(function))
        if given is None:
            found += op_labels(info, function)
        else:
            found += [label for label, _ in ops_in(info, function, tensor_params=given(function))]
        for node in ctx.calls_in(function):
            target = target_of(ctx, info, node, function, {})
            if target is not None:
                todo.append((None, *target))
            elif owner is not None and self_attr(node.func):
                inner = _method(ctx, owner, node.func.attr)
                if inner is not None:
                    todo.append((owner, inner[0].file, inner[1]))
            elif (
                owner is not None
                and isinstance(node.func, ast.Attribute)
                and self_attr(node.func.value)
                and (held := _built(ctx, owner, node.func.value.attr)) is not None
                and (inner := _method(ctx, held, node.func.attr)) is not None
            ):  # a method of an object the class holds (retinanet's heads' `compute_loss`)
                todo.append((held, inner[0].file, inner[1]))
    return found


_ASSIGNMENTS: weakref.WeakKeyDictionary[ClassInfo, dict[str, list[ast.expr]]] = (
    weakref.WeakKeyDictionary()
)


def self_assignments(cls: ClassInfo) -> dict[str, list[ast.expr]]:
    """`attr` -> the values the methods of `cls` assign `self.<attr>` (`self.a = v`, and each
    item of `self.a, self.b = u, v`); one walk of the statements a class."""
    found = _ASSIGNMENTS.get(cls)
    if found is None:
        found = _ASSIGNMENTS[cls] = {}
        statements: list[ast.AST] = list(cls.methods().values())
        for node in statements:  # grows while it is read: only statements hold assignments
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                statements += getattr(node, field, ())
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                pairs = (
                    zip(target.elts, value.elts)
                    if isinstance(target, ast.Tuple)
                    and isinstance(value, ast.Tuple)
                    and len(target.elts) == len(value.elts)
                    else [(target, value)]
                )
                for t, v in pairs:
                    if self_attr(t):
                        found.setdefault(t.attr, []).append(v)
    return found


def _assigned(ctx: FileContext, cls: ClassInfo, attr: str, seen: set[str]) -> tuple[str, ...]:
    """For a report only, where `made_by` proves nothing: the classes of the project (not
    torch's) of what every assignment of `self.<attr>` in `cls`'s methods gives, a call of one,
    `copy.deepcopy(self.<other>)` or `self.<other>` of another such attribute (a copy or an alias
    of it, also swapped: `self.a, self.b = self.b, self.a`), or `None`; empty when one gives
    anything else, or another store binds it by its name (one by a name known at run time,
    `setattr(self, name, v)` or `vars(self)`, may bind anything: the classes assigned are those
    a report names)."""
    if attr in seen or len(seen) > 8:
        return ()
    seen.add(attr)
    values = self_assignments(cls).get(attr, [])
    binds = [s for s in stores_of(cls, attr) if s.kind == "bound" and s.attr == attr]
    if not values or len(binds) != len(values):
        return ()
    found: set[str] = set()
    for value in values:
        if isinstance(value, ast.Constant) and value.value is None:
            continue
        qualname = cls.file.names.resolve(value.func) if isinstance(value, ast.Call) else None
        if isinstance(value, ast.Call) and qualname == "copy.deepcopy" and len(value.args) == 1:
            value = value.args[0]
        elif qualname is not None and qualname.split(".")[0] != "torch":
            if ctx.project.find_class(qualname, cls.file) is None:
                return ()
            found.add(qualname)
            continue
        if not self_attr(value):
            return ()
        if value.attr not in seen:
            inner = _assigned(ctx, cls, value.attr, seen)
            if not inner:
                return ()
            found.update(inner)
    return tuple(sorted(found))


def _built(ctx: FileContext, cls: ClassInfo, attr: str) -> ClassInfo | None:
    """The class of the project (not torch's) whose call `__init__` of `cls` alone sets
    `self.<attr>` to, once (`self.classification_head = Head(...)`)."""
    init = cls.methods().get("__init__")
    values = [
        node.value
        for node in (all_nodes(init) if init is not None else ())
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and self_attr(node.targets[0])
        and node.targets[0].attr == attr
    ]
    if len(values) != 1 or not isinstance(values[0], ast.Call):
        return None
    qualname = cls.file.names.resolve(values[0].func)
    if qualname is None or qualname.split(".")[0] == "torch":
        return None
    return ctx.project.find_class(qualname, cls.file)


def _method(
    ctx: FileContext, cls: ClassInfo, name: str, depth: int = 0
) -> tuple[ClassInfo, ast.FunctionDef] | None:
    """The method `name` of `cls` or of its first base of the project defining it."""
    if name in cls.methods():
        return cls, cls.methods()[name]
    for base in cls.bases if depth < 8 else []:
        found = ctx.project.find_class(base, cls.file)
        inner = _method(ctx, found, name, depth + 1) if found else None
        if inner:
            return inner
    return None
