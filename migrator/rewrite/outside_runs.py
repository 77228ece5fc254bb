"""Methods of a class that run besides the calls forward makes, where no run can be counted: a
hook (`self.register_forward_hook(self._post)`, registered by a method of the class, of a base
or of a subclass in the file, or by a function of the project a method hands `self`), an
override of `__call__` (calling the module runs it, not forward), what `self.forward = ...` or
`setattr(self, "forward", ...)` binds in forward's place, and the methods those run on `self`.
An op of such a method that forward runs as well would become a module called more than once
per forward: `Scanner` refuses it (MIG110, `hook_forward_called.py`, `call_override.py`,
`forward_rebound.py`, `trees/hook_registered_elsewhere`), as does the split of a module both
call; the ops of those not on forward's path are reported where they start (MIG115,
`report_outside`)."""

from __future__ import annotations

import ast
import functools
import re
import weakref
from collections.abc import Iterator
from typing import NamedTuple

from migrator.rewrite.context import ATTRIBUTES, FileContext, self_attr
from migrator.rewrite.defined import anchored_matches
from migrator.rewrite.family import Family
from migrator.rewrite.helpers import as_function
from migrator.rewrite.hook_methods import Found, registrations
from migrator.rewrite.object_methods import ops_from, self_assignments
from migrator.rewrite.project import ClassInfo, FileInfo
from migrator.rewrite.runs import runs_per_call
from migrator.rewrite.walk import all_nodes


class Outside(NamedTuple):
    """How a method runs besides forward's calls."""

    start: str
    """The method whose run starts it (itself, or one that runs it)."""
    why: str
    """What starts it, for a finding."""
    instead: bool
    """Bound in forward's place (`self.forward = ...`): forward does not run beside it."""
    unreported: bool
    """A hook that `report_hooks` does not report (registered by a function the class hands
    `self`, by a base or by a subclass): `report_outside` does, at the method."""


def outside_runs(ctx: FileContext, cls: ClassInfo, family: Family) -> dict[str, Outside]:
    """The methods of `cls` that the starts above run, directly or through the methods they
    name on `self` (but `forward`, whose runs are counted, unless it is such a start); the
    first start found names each."""
    methods = cls.methods()
    found: dict[str, Outside] = {}
    for start, how, instead, unreported in _starts(ctx, cls, family):
        todo = [start] if start in methods else []
        while todo:
            name = todo.pop()
            if name in found or name == "__init__" or (name == "forward" != start):
                continue
            why = f"`{start}`{', which runs it,' if name != start else ''} {how}"
            found[name] = Outside(start, why, instead, unreported)
            todo += [
                n.attr
                for v in ctx.visits_of(methods[name], ATTRIBUTES)
                if self_attr(n := v.node) and n.attr in methods
            ]
    return found


def _starts(
    ctx: FileContext, cls: ClassInfo, family: Family
) -> Iterator[tuple[str, str, bool, bool]]:
    """(method name, how it runs, whether in forward's place, whether `report_hooks` leaves it
    unreported) of each method of `cls` or its family that a hook (registered by a method, or
    by a function of the project a method hands `self`), `__call__` or `self.forward = ...`
    starts."""
    for owner in [*family.ancestors(cls), cls, *family.subclasses_in_file(cls)]:
        where = "" if owner is cls else f" in `{owner.name}`"
        where += "" if owner.file is ctx.info else f" of `{owner.file.names.module}`"
        starts = _class_starts(ctx, owner)
        for name, call, direct in starts.hooks:
            how = f"is registered as a hook by `{ast.unparse(call.func)}(...)`"
            yield name, f"{how} (line {call.lineno}{where})", False, owner is not cls or not direct
        for value in starts.bound:
            how = f"is bound as `self.forward` (line {value.lineno}{where})"
            for part in all_nodes(value):
                if (attr := _on_class(part, owner.name)) is not None:
                    yield attr, how, True, False
        override = owner.methods().get("__call__")
        if override is not None:
            how = f"overrides `nn.Module.__call__` (line {override.lineno}{where})"
            yield "__call__", how, False, False
            runs = runs_per_call(ctx, owner, "__call__").get("forward", 0)
            if runs + _module_calls(ctx, override) > 1:
                how = f"runs more than once per call of `__call__`, which {how}"
                yield "forward", how, False, False


_CALLS = frozenset({"__call__", "_call_impl", "_wrapped_call_impl"})
"""`nn.Module`'s methods running forward (with its hooks)."""


def _module_calls(ctx: FileContext, override: ast.FunctionDef) -> int:
    """How many times `override` (a `__call__`) runs `nn.Module.__call__` on `self`
    (`super().__call__(x)`, `nn.Module.__call__(self, x)`, `self._call_impl(x)`): 2 for many."""
    found = 0
    for call, visit in ctx.call_visits(override):
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in _CALLS:
            continue
        owner = func.value
        on_self = (
            self_attr(func)
            or (
                isinstance(owner, ast.Call)
                and isinstance(owner.func, ast.Name)
                and owner.func.id == "super"
            )
            or bool(call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == "self")
        )
        if on_self:
            found += 2 if visit.repeated else 1
    return found


def report_without_forward(ctx: FileContext, cls: ClassInfo, family: Family) -> None:
    """`report_outside` of a module class with no `forward` of its own nor a base's of the
    project, which overrides `__call__` or binds something in forward's place (timm's
    `fasternet.Partial_conv3`): calling the module runs only that."""
    if "MIG115" in ctx.disable:
        return
    if "__call__" in cls.methods() or _class_starts(ctx, cls).bound:
        report_outside(ctx, cls, set(), outside_runs(ctx, cls, family))


class _ClassStarts(NamedTuple):
    hooks: list[tuple[str, ast.Call, bool]]
    """(name, registering call, whether a method registers it itself) of each `self.<name>`
    that the class's methods register as a hook, or a function of the project they hand `self`
    to registers on it (`add_hooks(self)`: `model.register_forward_hook(model._post)`)."""
    bound: list[ast.expr]
    """What the methods bind in forward's place: `self.forward = v`, `setattr(self,
    "forward", v)`, and the class statement's `forward = v`."""


_STARTS: weakref.WeakKeyDictionary[ClassInfo, _ClassStarts] = weakref.WeakKeyDictionary()
"""`_class_starts` of a class, kept while it is alive: a base's serves each subclass."""


def _class_starts(ctx: FileContext, owner: ClassInfo) -> _ClassStarts:
    found = _STARTS.get(owner)
    if found is None:
        found = _STARTS[owner] = _read_starts(ctx, owner)
    return found


def _read_starts(ctx: FileContext, owner: ClassInfo) -> _ClassStarts:
    """`_ClassStarts` of `owner`, read in one pass over its methods' calls."""
    methods = owner.methods().values()
    hooked, binds = _spells(owner.file)
    hooks = [
        (part.attr, call, True)
        for _, call, node in (registrations(ctx, methods) if hooked else ())
        for part in all_nodes(node)
        if self_attr(part)
    ]
    bound = list(self_assignments(owner).get("forward", [])) if binds else []
    bound += [  # `forward = _impl` in the class statement
        stmt.value
        for stmt in owner.node.body
        if isinstance(stmt, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "forward" for t in stmt.targets)
    ]
    bound += _bound_outside(owner)
    for method in methods:
        for call in ctx.calls_in(method):
            args = call.args
            if not args:
                continue
            given = [i for i, a in enumerate(args) if type(a) is ast.Name and a.id == "self"]
            if not given:
                continue
            if isinstance(call.func, ast.Name) and call.func.id == "setattr":
                if (
                    binds
                    and len(args) == 3
                    and given == [0]
                    and isinstance(args[1], ast.Constant)
                    and args[1].value == "forward"
                ):
                    bound.append(args[2])
                continue
            hooks += [(name, call, False) for name in _helper_hooks(ctx, owner, call, given)]
    return _ClassStarts(hooks, bound)


def _bound_outside(owner: ClassInfo) -> list[ast.expr]:
    """What the class's file binds in forward's place from outside the class statement:
    `Model.forward = v`, `setattr(Model, "forward", v)`."""
    text = owner.file.source or owner.file.text
    name = owner.name
    if text is not None:
        before, after = _words_at_forward(text)
        if not any(word.endswith(name) for word in before) and not any(
            word.startswith(name) for word in after
        ):
            return []  # the text spells neither `<name>.forward` nor `setattr(<name>`
    return [value for on, value in _file_bindings(owner.file.tree) if on in ("self", name)]


@functools.lru_cache(maxsize=16)
def _words_at_forward(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(the name characters just before each `.forward`, those just after each `setattr(`) of
    a text: a class's name is spelled `<name>.forward` in it exactly when it ends one of the
    first, and `setattr(<name>` when it starts one of the second (read once a file, not once a
    class: a file of 2,000 classes searched its text 2,000 times)."""
    before, after = set(), set()
    at = text.find(".forward")
    while at != -1:
        start = at
        while start and _name_char(text[start - 1]):
            start -= 1
        before.add(text[start:at])
        at = text.find(".forward", at + 1)
    at = text.find("setattr(")
    while at != -1:
        end = at = at + len("setattr(")
        while end < len(text) and _name_char(text[end]):
            end += 1
        after.add(text[at:end])
        at = text.find("setattr(", at)
    return frozenset(before), frozenset(after)


def _name_char(char: str) -> bool:
    """Whether `char` may continue a Python name."""
    return f"a{char}".isidentifier()


_BINDINGS: weakref.WeakKeyDictionary[ast.Module, list[tuple[str, ast.expr]]] = (
    weakref.WeakKeyDictionary()
)
"""`_file_bindings` of a tree, while it lives."""


def _file_bindings(tree: ast.Module) -> list[tuple[str, ast.expr]]:
    """(`x`, `v`) of each `x.forward = v` and `setattr(x, "forward", v)` of a tree where `x`
    is a name, in the order of the tree's nodes: walked once a tree, not once a class."""
    found = _BINDINGS.get(tree)
    if found is None:
        found = _BINDINGS[tree] = [
            (on.id, value)
            for node in all_nodes(tree)
            for on, value in _forward_bindings(node)
            if isinstance(on, ast.Name)
        ]
    return found


def _forward_bindings(node: ast.AST) -> list[tuple[ast.expr, ast.expr]]:
    """(`x`, `v`) of `x.forward = v` or `setattr(x, "forward", v)`."""
    if isinstance(node, ast.Assign):
        return [
            (t.value, node.value)
            for t in node.targets
            if isinstance(t, ast.Attribute) and t.attr == "forward"
        ]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and len(node.args) == 3
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value == "forward"
    ):
        return [(node.args[0], node.args[2])]
    return []


def _method_named(ctx: FileContext, node: ast.expr, cls: ClassInfo) -> str | None:
    """`<attr>` of `node`, `self.<attr>` or `<C>.<attr>` where `<C>` names `cls` (in its file
    or imported), else None."""
    if (attr := _on_class(node, cls.name)) is not None or not isinstance(node, ast.Attribute):
        return attr
    named = ctx.project.find_class(ctx.info.names.resolve(node.value), ctx.info)
    return node.attr if named is cls else None


def _on_class(node: ast.AST, name: str) -> str | None:
    """`<attr>` of `node`, `self.<attr>` or `<name>.<attr>` (the class named `name`), else
    None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id in ("self", name) else None
    return None


_BINDS = re.compile(r"self\.forward[ \t]*=(?!=)")
_BINDS_ANY = re.compile(r"\w\.forward[ \t]*=(?!=)|[\"']forward[\"'][ \t]*,")
_BINDS_ANY_AT = [("forward", 2), ("forward", 1)]
"""Where a match of `_BINDS_ANY` starts, before `forward` (`anchored_matches`)."""


def binds_forward(text: str) -> bool:
    """Whether a file's text may bind some class's `forward` (`Model.forward = f`,
    `setattr(Model, "forward", f)`): cheap, for `report_bound_elsewhere`."""
    return next(anchored_matches(_BINDS_ANY, text, _BINDS_ANY_AT), None) is not None


_SPELLS: weakref.WeakKeyDictionary[FileInfo, tuple[bool, bool]] = weakref.WeakKeyDictionary()


def _spells(info: FileInfo) -> tuple[bool, bool]:
    """Whether a file's text (when known) may register a hook and bind forward: it spells
    `_hook`, and `self.forward = ` or `setattr(self`; read once a file."""
    found = _SPELLS.get(info)
    if found is None:
        text = info.source or info.text
        binds = text is None or bool(_BINDS.search(text)) or "setattr(self" in text
        found = _SPELLS[info] = (text is None or "_hook" in text, binds)
    return found


def _helper_hooks(
    ctx: FileContext, owner: ClassInfo, call: ast.Call, given: list[int]
) -> list[str]:
    """The `<param>.<name>` that the function of the project `call` runs registers as a hook,
    where `<param>` is one of the parameters at the positions `given` (those it hands `self`)."""
    qualname = owner.file.names.resolve(call.func)
    found = ctx.project.find_function(qualname, owner.file) if qualname else None
    if found is None or not _spells(found[0])[0]:
        return []
    params = [a.arg for a in [*found[1].args.posonlyargs, *found[1].args.args]]
    named = {params[i] for i in given if i < len(params)}
    return [
        part.attr
        for _, _, node in registrations(ctx, [found[1]])
        for part in all_nodes(node)
        if isinstance(part, ast.Attribute)
        and isinstance(part.value, ast.Name)
        and part.value.id in named
    ]


def report_outside(
    ctx: FileContext, cls: ClassInfo, reached: set[str], outside: dict[str, Outside]
) -> None:
    """Report (MIG115) the ops of an override of `__call__` and of the methods it runs that
    forward does not (`outside`, from `outside_runs`), and of what `self.forward = ...` binds
    in `cls`, when forward does not run it: calling the module runs them instead; and of each
    hook method forward does not run that `report_hooks` leaves unreported."""
    methods = cls.methods()
    for name, run in outside.items():
        if run.unreported and run.start == name and name not in reached:
            _report(ctx, methods[name], [(cls, ctx.info, methods[name])], run.why, hook=True)
    call = methods.get("__call__")
    if call is not None:
        ran = [n for n, run in outside.items() if run.start == "__call__" and n not in reached]
        runs: list[Found] = [(None, ctx.info, methods[n]) for n in ran if n != "forward"]
        _report(ctx, call, runs, "`__call__` overrides `nn.Module.__call__`")
    for value in _class_starts(ctx, cls).bound:
        _report_bound(ctx, cls, value, reached)


def report_bound_elsewhere(ctx: FileContext, tree: ast.Module) -> None:
    """Report (MIG115) what the file binds in forward's place of a module class of another
    file (`Model.forward = _forward`, `setattr(Model, "forward", f)`, `Model` imported), when
    it runs ops: the class's own file does not see it (`trees/forward_bound_elsewhere`)."""
    for node in all_nodes(tree):
        for on, value in _forward_bindings(node):
            cls = ctx.project.find_class(ctx.info.names.resolve(on), ctx.info)
            if cls is not None and cls.file is not ctx.info and ctx.project.is_module(cls):
                _report_bound(ctx, cls, value, set())


def _report_bound(ctx: FileContext, cls: ClassInfo, value: ast.expr, reached: set[str]) -> None:
    """Report the ops of what `value` names, bound in forward's place of `cls`: a lambda, a
    method of `cls` (`self._run`, `Model._run`, `_run` in the class statement) forward does not
    run (`reached`), or a function of the project."""
    methods = cls.methods()
    todo: list[ast.expr] = [value]
    while todo:
        node = todo.pop()
        found: Found | None = None
        if isinstance(node, ast.Lambda):
            found = (cls, ctx.info, as_function(node))
        elif (attr := _method_named(ctx, node, cls)) in methods and attr not in reached:
            found = (cls, cls.file, methods[attr])
        elif isinstance(node, ast.Name) and node.id in methods and cls.file is ctx.info:
            found = (cls, ctx.info, methods[node.id]) if node.id not in reached else None
            if found is None:
                continue  # `forward = _body`
        elif isinstance(node, ast.Name) and (qualname := ctx.info.names.resolve(node)):
            target = ctx.project.find_function(qualname, ctx.info)
            found = (None, *target) if target else None
        if found is not None:
            _report(ctx, node, [found], f"`{ctx.text(node)}` is bound as `self.forward`")
        else:
            todo += [n for n in ast.iter_child_nodes(node) if isinstance(n, ast.expr)]


def _report(
    ctx: FileContext, node: ast.expr | ast.stmt, found: list[Found], named: str, hook: bool = False
) -> None:
    labels = ops_from(ctx, list(found))  # it empties the list it is given
    if not labels or id(node) in ctx.helpers_seen:
        return
    ctx.helpers_seen.add(id(node))
    ctx.report(
        node,
        "MIG115",
        f"{named} and runs {len(labels)} op(s) ({', '.join(sorted(set(labels)))}): "
        + (
            "torch calls it on each forward of that module"
            if hook
            else "calling the module runs it in forward's place"
        )
        + ", where its calls cannot be counted; left as is",
        op=found[0][2].name,
    )
