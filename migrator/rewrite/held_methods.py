"""Methods of a module class that other modules of its package call on an instance they hold
(`self.head.compute_loss(...)`, as torchvision's retinanet and fcos do;
`self.transform.postprocess(...)` from other files): they are on the class's forward path too,
and run as many times per forward as their holders' forward paths call them.

Only when every call of such a method is known: each instance made once, in a holder's
`__init__` (`self.head = Head(...)`), and handed to nothing; the holders' calls on their forward
paths; no other call of a method of that name in the file, nor in another file of its package,
on anything but `self` or an attribute holding an instance of another class; no subclass of the
class. Otherwise the calls stay as they are, each reported at its holder (MIG115). The class's
file decides alone, from the files of its package as they read, and each holder's file reads
the same decision (`held_by_holders`).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from pathlib import Path

from migrator.rewrite.context import ATTRIBUTES, MANY, FileContext, self_attr
from migrator.rewrite.defined import anchored_matches, word_start
from migrator.rewrite.family import Family
from migrator.rewrite.helper_modules import existing_twins
from migrator.rewrite.helpers import target_of, unbound
from migrator.rewrite.paths import most_runs
from migrator.rewrite.plain_modules import (
    call_subclasses,
    passed_otherwise,
    stored_once,
    super_calls,
    why_plain,
)
from migrator.rewrite.plan import Positions
from migrator.rewrite.project import ClassInfo, FileInfo, kept_module_name
from migrator.rewrite.real_paths import resolved
from migrator.rewrite.runs import reach, runs_per_call
from migrator.rewrite.shared import find_shared, input_iterations
from migrator.rewrite.walk import Visit, all_nodes, header_lines


def forward_runs(
    ctx: FileContext, cls: ClassInfo, family: Family, stack: tuple[ClassInfo, ...] = ()
) -> dict[str, int]:
    """`runs.reach` of `cls`, with the methods its holders call (`held_runs`) and the methods
    those run added, each as many more times as they run per forward."""
    runs = dict(reach(ctx, cls, family))
    for inner, count in _held_reach(ctx, cls, family, stack).items():
        runs[inner] = min(runs.get(inner, 0) + count, MANY)
    return runs


def held_iterations(ctx: FileContext, cls: ClassInfo, family: Family) -> dict[str, int]:
    """Method name -> how many times the holders' calls run it per forward, each iteration of
    a loop whose trip count depends on the input counted as one run (1 for FCOS's
    `self.box_coder.decode(...)` per image and per level), for the methods of `cls` that its
    holders' calls run (`held_runs`), directly or not."""
    return _kept(ctx, cls, family)[3]


def _held_reach(
    ctx: FileContext, cls: ClassInfo, family: Family, stack: tuple[ClassInfo, ...]
) -> dict[str, int]:
    """Method name -> how many times the holders' calls run it per forward, directly or not
    (the most over the instances)."""
    return (_held_runs(ctx, cls, family, stack) if stack else _kept(ctx, cls, family))[2]


def _through_calls(ctx: FileContext, cls: ClassInfo, held: dict[str, int]) -> dict[str, int]:
    """Method name -> how many times the methods the holders call `held` times run it."""
    methods = cls.methods()
    found: dict[str, int] = {}
    for name, times in held.items():
        for inner, count in runs_per_call(ctx, cls, name).items():
            if count and inner != "__init__" and not unbound(methods[inner]):
                found[inner] = min(found.get(inner, 0) + times * count, MANY)
    return found


def held_runs(
    ctx: FileContext, cls: ClassInfo, family: Family, stack: tuple[ClassInfo, ...] = ()
) -> dict[str, int]:
    """Method name -> how many times the forward paths of the modules holding instances of
    `cls` call it per forward (the most over the instances), when every call of the methods
    called so is known (see above); empty otherwise."""
    if stack:  # a holder's own count, asked while working out another class's
        return _held_runs(ctx, cls, family, stack)[0]
    return _kept(ctx, cls, family)[0]


_Held = tuple[dict[str, int], str, dict[str, int], dict[str, int]]
"""`held_runs`, why it is empty, and for each method the held ones run, directly or not, how
many times per forward (`_held_reach`) and so with each iteration of an input-dependent loop
counted once (`held_iterations`), the most over the instances: one holder's calls of two
methods that run a third add up, two holders' do not."""


def _kept(ctx: FileContext, cls: ClassInfo, family: Family) -> _Held:
    return family.kept("held_runs", cls, lambda: _held_runs(ctx, cls, family, ()))


NOT_REWRITTEN = "in another file, which this run does not rewrite"


def held_by_holders(ctx: FileContext, cls: ClassInfo, family: Family) -> tuple[dict[str, int], str]:
    """`held_runs` of `cls`, a class of this file or of another file that this run processes
    (worked out as that file's own analysis does), and when empty why; empty for a file the
    run leaves alone."""
    if cls.file is ctx.info:
        return _kept(ctx, cls, family)[:2]
    if ctx.project.processes(cls.file.path) is None:
        return {}, f"`{cls.name}` is {NOT_REWRITTEN}"
    other = _context_of(ctx, cls.file)
    return _kept(other[0], cls, other[1])[:2] if other is not None else ({}, "its file has no text")


def plain_why(ctx: FileContext, cls: ClassInfo) -> str:
    """Why `cls`, a class that is no module, may not become one (`plain_modules`), read from
    the files of its package ('' when it may)."""
    return why_plain(cls, _texts_with(cls.file))


def _texts_with(info: FileInfo) -> tuple[tuple[Path, str], ...]:
    """The files of the package of `info` with their texts, its own among them."""
    path = info.path
    top = _package_top(path) if path is not None and path.is_file() else None
    texts = _package_texts(top) if top is not None else ()
    own = resolved(path) if path is not None else Path("<stdin>")
    if top is None or own not in _package_text_of(top):  # stdin, or a file it does not list
        source = info.source if info.source is not None else info.text
        texts = ((own, source or ""), *texts)
    return texts


def callable_why(ctx: FileContext, cls: ClassInfo, family: Family) -> str:
    """Why `cls`, a plain class defining `__call__`, may not become a module whose `forward`
    is its `__call__` (with the subclasses of its file: `call_subclasses`), read from the files
    of its package ('' when it may): `plain_why`; it or a subclass may hold state; no module of
    the package holds one (`self.<attr> = [mod.]Cls(...)`, read as text); or a holder would
    change (`_walked`). Its file decides; a holder's file reads the same (`called_as_module`)."""
    return family.kept("callable_why", cls, lambda: _callable_why(ctx, cls, family))


def _callable_why(ctx: FileContext, cls: ClassInfo, family: Family) -> str:
    subs = call_subclasses(cls)
    init = cls.methods().get("__init__")
    if init is not None and init.body[0].lineno == init.lineno:
        return f"`{cls.name}.__init__` is one line: no room for `super().__init__()`"
    if super_calls(cls):  # `object` has no `__call__`; `nn.Module`'s would run `forward`
        return f"`{cls.name}` calls `super().__call__`"
    why = plain_why(ctx, cls)
    for each in [cls, *subs]:
        why = why or _may_hold_state(ctx, each, family)
    if why:
        return why
    path = ctx.info.path
    if path is None:
        return f"`{cls.name}` is read from stdin: its holders are not known"
    from migrator.rewrite.object_methods import ops_from  # which reads `held_runs`

    entries = [
        (c, c.file, c.methods()["__call__"]) for c in [cls, *subs] if "__call__" in c.methods()
    ]
    if not ops_from(ctx, list(entries)):
        return f"`{cls.name}.__call__` runs no op"
    names = {c.name for c in [cls, *subs]}
    qualnames = {c.qualname for c in [cls, *subs]}
    files = [
        file
        for file, text in _texts_with(ctx.info)
        if any(names & called for called in _assigned_calls(text)[0].values())
    ]
    if not files:
        return f"no module of its package holds a `{cls.name}`"
    for file in files:
        place = (ctx, family, _file_facts(ctx).holders(ctx)) if file == resolved(path) else None
        place = place or _place(ctx, file)
        if place is None:
            return f"{file.name}, which holds one, cannot be read"
        there, kin, holders = place
        for holder, attrs in holders.items():
            for attr in [a for a, qualname in attrs.items() if qualname in qualnames]:
                if walked := _walked(there, kin, holder, attr, cls):
                    return walked
    return ""


def called_as_module(ctx: FileContext, cls: ClassInfo) -> bool:
    """Whether `cls`, a plain class defining `__call__` of this file or of another that this
    run processes, becomes a module whose `forward` is its `__call__` (`callable_why`, as its
    file decides), or derives from one of its file that does."""
    if ctx.project.is_module(cls):
        return False
    if cls.file is not ctx.info:
        if ctx.project.processes(cls.file.path) is None:
            return False
        other = _context_of(ctx, cls.file)
        return other is not None and called_as_module(other[0], cls)
    root = next((c for c in ctx.info.classes.values() if cls in call_subclasses(c)), cls)
    if "__call__" not in root.methods():
        return False
    facts = _file_facts(ctx)
    if root not in facts.callable:
        facts.callable[root] = not callable_why(ctx, root, Family(ctx.project, ctx.info))
    return facts.callable[root]


def _may_hold_state(ctx: FileContext, cls: ClassInfo, family: Family) -> str:
    """Why `cls`, made a module, might change its holders' `state_dict` (an attribute set to a
    call, which may make a module or a parameter), or ''."""
    from migrator.rewrite.attributes import ClassAttributes  # which reads the class analysis

    attributes = ClassAttributes(ctx, cls, family)
    made = attributes.module_attrs()
    if ctx.project.is_module(cls):  # a second run: the stateless modules the first made stay
        made = {attr for attr in made if not _stateless(ctx, attributes.attrs.get(attr))}
    unproven = _unproven_plain(cls)
    held = sorted(made | set(attributes.state) | set(unproven))
    if held:
        why = unproven.get(held[0])
        return f"`{cls.name}` sets `self.{held[0]}` to what may be a module or a parameter" + (
            f": {why}" if why else ""
        )
    return ""


def _walked(ctx: FileContext, family: Family, holder: ClassInfo, attr: str, cls: ClassInfo) -> str:
    """Why `holder` would change once `self.<attr>`, an instance of `cls`, is a module, or '':
    a torch container runs or counts its submodules, a module cannot be assigned before
    `super().__init__()`, a walk of its own submodules (`self.children()`, `self._modules`)
    would meet it."""
    from migrator.rewrite.attributes import ClassAttributes  # which read the class analysis
    from migrator.rewrite.creation import container_base, own_walks

    container = container_base(family, holder)
    if container:
        return f"`{holder.name}` holds it and {container[len('the class ') :]}"
    attributes = ClassAttributes(ctx, holder, family)
    made = attributes.attrs.get(attr)
    if made is not None and (
        attributes.super_index is None or made.top_index <= attributes.super_index
    ):
        return f"`{holder.name}.__init__` sets `self.{attr}` before `super().__init__()`"
    for walk in own_walks(ctx, family, holder):
        why = walk.touches(cls.qualname, lambda name: name != attr)
        if why:
            return f"`{holder.name}.{why[1:]}"
    return ""


def _unproven_plain(cls: ClassInfo) -> dict[str, str]:
    """The attributes a method of `cls` sets to a value other than a call that is not built
    from constants and parameters declared numbers or strings (`clip: float`) alone, or numbers
    by their default alone (`scale=2.0`) where nothing may pass them another value (parameters
    of `__init__` that every construction of `cls` passes a literal or nothing:
    `passed_otherwise`), each with what may pass such a parameter something else ('' for
    another value): `self.owner = owner` may be given a module, or the holder itself, and a
    module would register it (its parameters would join the holder's `state_dict`, the
    holder would be its own submodule)."""
    found: dict[str, str] = {}
    for method in cls.methods().values():
        args = method.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        defaults: list[ast.expr | None] = [None] * (
            len(args.posonlyargs) + len(args.args) - len(args.defaults)
        )
        defaults += [*args.defaults, *args.kw_defaults]
        declared = {a.arg for a in params if _plain_annotation(a.annotation)}
        by_default = [
            a.arg
            for a, default in zip(params, defaults)
            if a.annotation is None and _number(default)
        ]
        if method.name != "__init__":
            unproven = {p: f"the calls of `{method.name}` may pass anything" for p in by_default}
        elif by_default:
            unproven = passed_otherwise(cls, by_default, _texts_with(cls.file))
        else:
            unproven = {}
        plain = declared | set(by_default) - set(unproven)
        for node in all_nodes(method):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            if isinstance(value, (ast.Call, ast.IfExp)):
                continue  # `module_attrs`
            for target in targets:
                parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                stored = [t.attr for t in parts if self_attr(t)]
                if stored and not _built_plain(value, plain):
                    why = _unproven_why(value, plain, unproven)
                    found.update({attr: found.get(attr) or why for attr in stored})
    return found


def _unproven_why(value: ast.expr, plain: set[str], unproven: dict[str, str]) -> str:
    """What may pass a parameter that `value` holds, declared a number by its default alone,
    something else, when `value` would be built from numbers were it one ('' otherwise)."""
    if not _built_plain(value, plain | set(unproven)):
        return ""
    param = next(n.id for n in ast.walk(value) if isinstance(n, ast.Name) and n.id in unproven)
    return f"its parameter `{param}` is a number by its default alone, and {unproven[param]}"


_PLAIN_TYPES = frozenset(
    {"int", "float", "bool", "str", "None", "tuple", "Tuple", "list", "List", "Optional", "Union"}
)


def _plain_annotation(annotation: ast.expr | None) -> bool:
    """Whether `annotation` declares numbers, strings or containers of them (no `Callable`,
    which a module is)."""
    if annotation is None:
        return False
    names = [n for n in ast.walk(annotation) if isinstance(n, (ast.Name, ast.Attribute))]
    return all(getattr(n, "id", getattr(n, "attr", "")) in _PLAIN_TYPES for n in names)


def _number(node: ast.expr | None) -> bool:
    """Whether `node` is a number, a string or a boolean literal."""
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str))


def _built_plain(value: ast.expr, plain: set[str]) -> bool:
    """Whether `value` holds constants and the `plain` names alone, combined by operators,
    containers, subscripts and comparisons."""
    for node in ast.walk(value):
        if isinstance(node, ast.Name):
            if node.id not in plain:
                return False
        elif not isinstance(node, _PLAIN_NODES):
            return False
    return True


_PLAIN_NODES = (
    ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Tuple, ast.List,
    ast.Subscript, ast.Slice, ast.Starred, ast.expr_context, ast.operator, ast.unaryop,
    ast.boolop, ast.cmpop,
)  # fmt: skip


def _stateless(ctx: FileContext, attr: object) -> bool:
    """Whether an attribute `__init__` sets (an `InitAttr`) holds a module of a class that
    never holds parameters or buffers."""
    value = getattr(attr, "value", None)
    if not isinstance(value, ast.Call):
        return False
    return ctx.project.stateless(ctx.info.names.resolve(value.func), ctx.info) is True


def _held_runs(
    ctx: FileContext, cls: ClassInfo, family: Family, stack: tuple[ClassInfo, ...]
) -> _Held:
    through: tuple[dict[str, int], dict[str, int]] = ({}, {})
    counts, why = _holders_calls(ctx, cls, family, stack, through)
    return (counts, why, *through) if counts else ({}, why, {}, {})


def _holders_calls(
    ctx: FileContext,
    cls: ClassInfo,
    family: Family,
    stack: tuple[ClassInfo, ...],
    through: tuple[dict[str, int], dict[str, int]],
) -> tuple[dict[str, int], str]:
    """`held_runs`, and when it is empty why (what the refused MIG115 at a holder's call
    says); `through` gets the counts of `_held_reach` and `held_iterations`."""
    methods = cls.methods()
    names = {
        name
        for name, method in methods.items()
        if name != "forward" and not name.startswith("__") and not unbound(method)
    }
    file = _file_facts(ctx)
    here = names & file.called or names & file.handed(ctx)
    if not (here or names & file.package_called(ctx)):
        return {}, "no module calls it as `self.<attribute>.<method>(` on one line"
    if "forward" not in methods:
        why = plain_why(ctx, cls) or _may_hold_state(ctx, cls, family)
        if why:
            module = ctx.project.is_module(cls)
            return {}, f"`{cls.name}` has no `forward`" if module else why
    if cls in stack:
        return {}, f"`{cls.name}` holds, through its holders, an instance of itself"
    if cls.qualname in _shared(ctx, family):
        return {}, f"its instances are handed to several modules ({ctx.shared[cls.qualname]})"
    if ctx.skip.intersection(header_lines(cls.node)):
        return {}, f"`{cls.name}` is under `# migrator: skip`"
    if family.subclasses_in_file(cls):
        return {}, f"`{cls.name}` has a subclass"
    files = _candidates(ctx, cls, names)
    if not files and not here:
        return {}, _NO_HOLDER
    mine = file.holders(ctx) if here else {}  # no call here: no holder
    made = {h: attrs for h, attrs in mine.items() if h is not cls}
    places: list[_Place] = [(ctx, family, made)]
    counts: dict[str, int] = {}
    counted: set[int] = set()
    held = False
    for index in range(1 + len(files)):
        if index:  # another file's holders, read only while none has failed
            place = _place(ctx, files[index - 1])
            if place is None:
                return {}, f"{files[index - 1].name}, which calls such a method, cannot be read"
            places.append(place)
        there, kin, holders = places[index]
        for holder, attrs in holders.items():
            for attr in [a for a, qualname in attrs.items() if qualname == cls.qualname]:
                found = _holder_counts(there, kin, holder, attr, names, (*stack, cls), counted)
                if isinstance(found, str):
                    return {}, found
                if walked := _walked(there, kin, holder, attr, cls):
                    return {}, walked
                held = True
                for name, (times, _) in found.items():
                    counts[name] = max(counts.get(name, 0), times)
                for index, into in enumerate(through):
                    ran = _through_calls(ctx, cls, {n: each[index] for n, each in found.items()})
                    for inner, times in ran.items():
                        into[inner] = max(into.get(inner, 0), times)
    elsewhere = places[1:]
    if not held or not counts:
        return {}, _NO_HOLDER
    for there, _, holders in places:
        held_by = [h for h, attrs in holders.items() if cls.qualname in attrs.values()]
        name = Path(there.path).name
        if (held_by or there is ctx) and _made_elsewhere(there, cls, held_by):
            return {}, f"{name} names `{cls.name}` outside its holders' `__init__`"
        every = _file_facts(there).holders(there)  # `cls` among them: its own attributes
        if _other_calls(there, set(counts), counted, every, cls):
            return {}, f"{name} calls a method of that name on another object"
    read = {resolved(Path(there.path)) for there, _, _ in elsewhere}
    why = _called_elsewhere(ctx, family, cls, set(counts), read)
    return ({}, why) if why else (counts, "")


_NO_HOLDER = (
    "no module's forward path calls it on an instance its `__init__` sets once, by a call of "
    "the class (or, with run-time evidence, where every built model holds one)"
)


def _holder_counts(
    ctx: FileContext,
    family: Family,
    holder: ClassInfo,
    attr: str,
    names: set[str],
    stack: tuple[ClassInfo, ...],
    counted: set[int],
) -> dict[str, tuple[int, int]] | str:
    """Method name -> how many times the forward path of `holder` calls it on `self.<attr>`
    per forward (the calls added to `counted`), and how many with each iteration of a loop
    whose trip count depends on the input counted as one call (`input_iterations`); why not, when
    that is not known: `holder` hands the instance on, may be subclassed, is shared, or calls
    such a method off its forward path."""
    if family.subclasses_in_file(holder) or any(
        set(sub.methods()) - {"__init__"} for sub in family.subclasses_elsewhere(holder)
    ):
        return f"`{holder.name}` has a subclass, which may call it otherwise"
    handed = _hand_overs(ctx, holder, attr)
    if handed is None:
        return f"`{holder.name}` hands `self.{attr}` on"
    runs = forward_runs(ctx, holder, family, stack)
    per: dict[str, tuple[int, int]] = {}
    for caller, method in holder.methods().items():
        calls: dict[str, list[tuple[ast.Call, Visit]]] = {}
        weights: dict[str, dict[int, int]] = {}
        """Method name -> id of a call handing `self.<attr>` to a helper -> how many times the
        helper calls that method per call."""
        for node, visit in ctx.call_visits(method):
            func = node.func
            if isinstance(func, ast.Attribute) and _reads(func.value, attr) and func.attr in names:
                calls.setdefault(func.attr, []).append((node, visit))
            helper, made, every = handed.get(id(node), (method, {}, {}))
            for name in sorted(set(made) & names):
                calls.setdefault(name, []).append((node, visit))
                weights.setdefault(name, {})[id(node)] = _helper_runs(ctx, helper, made[name])
                counted.update(id(each.func) for each in every[name])
        for name, found in calls.items():
            if not runs.get(caller):
                return f"`{holder.name}.{caller}`, off the forward path, calls `{name}`"
            counted.update(id(call.func) for call, _ in found)
            weight = weights.get(name, {})
            times = (
                MANY
                if any(visit.repeated for _, visit in found)
                else runs[caller] * most_runs(method, [call for call, _ in found], weight)
            )
            iterations = times
            if times >= MANY:
                iterations = input_iterations(ctx, family, holder, method, runs[caller], found)
            before = per.get(name, (0, 0))
            per[name] = (min(before[0] + times, MANY), min(before[1] + iterations, MANY))
    if holder.qualname in _shared(ctx, family):
        return f"`{holder.name}` itself is handed to several modules"
    return per


_GIVEN = re.compile(r"[(,=]\s*self\.\w+\s*[,)]")
_NAMED_CALL = re.compile(r"(?<![\w.])(?!self\.)[A-Za-z_]\w*\.(\w+)\s*\(")
_NAMED_CALL_TAIL = re.compile(r"\.\w+\s*\(")
"""`_NAMED_CALL` from its dot: searched for as the character `.` (a pattern starting with a
lookbehind is tried at every position)."""
_ATTRIBUTE_CALL = re.compile(r"\bself\.\w+\.(\w+)\s*\(")
_FROM_SELF = re.compile(r"self\.\w+\.(\w+)\s*\(")
"""`_ATTRIBUTE_CALL` but its `\\b`: searched for as the word `self` (a pattern starting with
`\\b` is tried at every position, 18 times slower)."""


def _called_on_attributes(text: str) -> set[str]:
    """`set(_ATTRIBUTE_CALL.findall(text))`, trying it only where `_FROM_SELF` is found."""
    names: set[str] = set()
    at = 0
    while (hit := _FROM_SELF.search(text, at)) is not None:
        found = _ATTRIBUTE_CALL.match(text, hit.start())
        if found is None:
            at = hit.start() + 1
        else:
            names.add(found.group(1))
            at = found.end()
    return names


def _named_calls(text: str) -> set[str]:
    """`set(_NAMED_CALL.findall(text))`, trying `_NAMED_CALL` only at the word before each
    `_NAMED_CALL_TAIL` (where its matches start: none holds another's dot)."""
    names: set[str] = set()
    for tail in _NAMED_CALL_TAIL.finditer(text):
        found = _NAMED_CALL.match(text, word_start(text, tail.start()))
        if found is not None:
            names.add(found.group(1))
    return names


class _FileFacts:
    """What `held_runs` reads of a file, worked out once for all its classes."""

    def __init__(self, ctx: FileContext) -> None:
        self.called = _called_on_attributes(ctx.source)
        """The names of the methods called on an attribute of `self` (`self.head.loss(...)`),
        read from the text (a call spread otherwise over lines is not counted: not taken)."""
        self._handed: frozenset[str] | None = None
        self._holders: dict[ClassInfo, dict[str, str]] | None = None
        self._reads: tuple[dict[str, list[ast.AST]], set[int]] | None = None
        self._package_called: frozenset[str] | None = None
        self._top: tuple[Path, bool] | None = None
        self.shared_known = True
        """Whether `ctx.shared` is worked out (not yet for another file's state, `_shared`)."""
        self.callable: dict[ClassInfo, bool] = {}
        """`called_as_module` of the plain classes defining `__call__` of the file."""
        self.contexts: dict[Path, tuple[FileContext, Family] | None] = {}
        """The analysis state of other files of the package, as their holders are read."""

    def reads(self, ctx: FileContext) -> tuple[dict[str, list[ast.AST]], set[int]]:
        """`_reads_of` the file's tree."""
        if self._reads is None:
            self._reads = _reads_of(ctx.info.tree)
        return self._reads

    def handed(self, ctx: FileContext) -> frozenset[str]:
        """The names of the methods called on a name other than `self` (`coder.encode(x)`),
        when the file hands an attribute of `self` to a call (`f(self.coder)`): a helper given
        an instance may call them for its holder (`_hand_overs`); read from the text."""
        if self._handed is None:
            given = _GIVEN.search(ctx.source) is not None
            self._handed = frozenset(_named_calls(ctx.source) if given else ())
        return self._handed

    def holders(self, ctx: FileContext) -> dict[ClassInfo, dict[str, str]]:
        if self._holders is None:
            self._holders = _holders(ctx)
        return self._holders

    def package_called(self, ctx: FileContext) -> frozenset[str]:
        """The names of the methods called on an attribute of `self` in the files of the
        package (none for source from stdin)."""
        if self._package_called is None:
            path = ctx.info.path
            calls = _package_calls(self.top(ctx)) if path and path.is_file() else {}
            self._package_called = frozenset(calls)
        return self._package_called

    def top(self, ctx: FileContext) -> tuple[Path, bool]:
        """`_package_top` of the file (which has a path)."""
        if self._top is None:
            assert ctx.info.path is not None
            self._top = _package_top(ctx.info.path)
        return self._top


_Place = tuple[FileContext, Family, dict[ClassInfo, dict[str, str]]]
"""A file's analysis state, and its holders (`_holders`)."""


def _candidates(ctx: FileContext, cls: ClassInfo, names: set[str]) -> list[Path]:
    """The other files of the package that call a method of one of `names` on an attribute of
    `self` and may hold an instance of `cls` there (`_may_hold`), when such a method runs ops
    (read from the text)."""
    path = ctx.info.path
    if path is None or not path.is_file():  # source from stdin: no package to look at
        return []
    top = _file_facts(ctx).top(ctx)
    calls = _package_calls(top)
    given = _package_given(top)  # a holder may hand its instance to a helper calling them
    files = ({file for name in names for file in calls.get(name, ())} | set(given)) - {
        resolved(path)
    }
    seen = ctx.project.evidence.holding(cls.qualname) if files else {}
    texts = _package_text_of(top) if files else {}
    holding = _package_holding(top).get(cls.name, frozenset())  # where `_may_hold` may hold
    if seen:
        holding = holding | {file for file in files if str(file) in seen}
    candidates = sorted(
        file
        for file in files & holding
        if _may_hold(
            texts.get(file, ""),
            cls,
            {attr for name in names for attr in calls.get(name, {}).get(file, ())}
            | given.get(file, frozenset()),
            seen.get(str(file), set()),
        )
    )
    called = {
        name
        for name in names
        for file in candidates
        if file in calls.get(name, {}) or file in given
    }
    if not candidates or not _runs_ops(ctx, cls, called):
        return []  # nothing for other files to convert: their calls are read as text
    return candidates


def _place(ctx: FileContext, file: Path) -> _Place | None:
    """Another file's analysis state and holders; None when it cannot be read."""
    info = ctx.project.load_file(file)
    other = _context_of(ctx, info) if info is not None else None
    if other is None:
        return None
    return (*other, _file_facts(other[0]).holders(other[0]))


def _runs_ops(ctx: FileContext, cls: ClassInfo, names: set[str]) -> bool:
    """Whether a method of `cls` of one of `names` runs ops, itself or through the methods and
    helpers it calls, or calls a module attribute (as it does once `fix` converted them: a
    second run decides as the first)."""
    from migrator.rewrite.object_methods import ops_from  # which reads `held_runs`

    methods = cls.methods()
    for name in sorted(names):
        ran = [methods[inner] for inner, times in runs_per_call(ctx, cls, name).items() if times]
        if any(
            self_attr(call.func) and call.func.attr not in methods
            for method in ran
            for call in ctx.calls_in(method)
        ) or ops_from(ctx, [(cls, cls.file, methods[name])]):
            return True
    return False


def _may_hold(text: str, cls: ClassInfo, attrs: set[str], seen: set[str]) -> bool:
    """Whether a file's text may hold an instance of `cls` in one of `attrs`, attributes of
    `self` it calls a method of: the run-time evidence saw one there, or the file sets one to
    a call of the class (`self.head = Head(...)`, or of any name when it imports the class
    under another, `Head as H`). The calls of the other files are read as text by
    `_called_elsewhere`."""
    if attrs & seen:
        return True
    assigned, renamed = _assigned_calls(text)
    called = set().union(*(assigned.get(attr, ()) for attr in attrs))
    return cls.name in called or (bool(called) and cls.name in renamed)


_ASSIGNED_CALL = re.compile(r"self\.(\w++)\s*+=\s*+(?:\w++\.)*+(\w++)\s*+\(")
_RENAMED = re.compile(r"(\w+)\s+as\s+\w")


@functools.lru_cache(maxsize=4096)
def _assigned_calls(text: str) -> tuple[dict[str, frozenset[str]], frozenset[str]]:
    """Attribute -> the names called to set `self.<attr>` in a file's text (`self.head =
    heads.Head(...)`: `Head`), and the names it may import under another (`Head as H`)."""
    found: dict[str, set[str]] = {}
    for attr, name in _ASSIGNED_CALL.findall(text):
        found.setdefault(attr, set()).add(name)
    renamed = frozenset(
        name for line in text.split("\n") if " as " in line for name in _RENAMED.findall(line)
    )
    return {attr: frozenset(names) for attr, names in found.items()}, renamed


def _context_of(ctx: FileContext, info: FileInfo) -> tuple[FileContext, Family] | None:
    """The analysis state of another file, made once for the analysis of `ctx`'s file (its
    shared classes worked out when first needed: `_shared`); None for a file without text or
    path."""
    from migrator.rewrite.analyze import skip_lines  # analyze imports the class analysis

    facts = _file_facts(ctx)
    source = info.source if info.source is not None else info.text
    if info.path is None or source is None:
        return None
    if info.path not in facts.contexts:
        other = FileContext(
            str(info.path), source, info, ctx.project, ctx.ops_module, Positions(source)
        )
        other.skip = skip_lines(source)
        _file_facts(other).shared_known = False
        facts.contexts[info.path] = (other, Family(ctx.project, info))
    return facts.contexts[info.path]


def _shared(ctx: FileContext, family: Family) -> dict[str, str]:
    """`ctx.shared`, worked out first for another file's state (`_context_of`)."""
    facts = _file_facts(ctx)
    if not facts.shared_known:
        find_shared(ctx, family)
        facts.shared_known = True
    return ctx.shared


def _file_facts(ctx: FileContext) -> _FileFacts:
    if ctx.held_facts is None:
        ctx.held_facts = _FileFacts(ctx)
    return ctx.held_facts


def _holders(ctx: FileContext) -> dict[ClassInfo, dict[str, str]]:
    """The module classes of the file -> each attribute their `__init__` sets once to an
    instance of a class of the project, and no method sets again, with that class's qualified
    name: a call of the class (`self.head = Head(...)`), or else the one class every built model
    the run-time evidence saw holds there (`self.head = head`)."""
    found: dict[ClassInfo, dict[str, str]] = {}
    for holder in ctx.info.classes.values():
        init = holder.methods().get("__init__")
        if init is None or not ctx.project.is_module(holder):
            continue
        stores: dict[str, int] = {}
        for method in holder.methods().values():
            for visit in ctx.visits_of(method, ATTRIBUTES):
                node = visit.node
                if (
                    isinstance(node, ast.Attribute)
                    and self_attr(node)
                    and not isinstance(node.ctx, ast.Load)
                ):
                    stores[node.attr] = stores.get(node.attr, 0) + 1
        made: dict[str, str] = {}
        for visit in ctx.visits(init):
            node = visit.node
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and self_attr(target := node.targets[0])
                and stores.get(target.attr) == 1
                and not visit.repeated
                and (qualname := _made_of(ctx, holder, target.attr, node.value))
            ):
                made[target.attr] = qualname
        found[holder] = made
    return found


def _made_of(ctx: FileContext, holder: ClassInfo, attr: str, value: ast.expr) -> str | None:
    """The qualified name of the class of the project `holder.<attr>` holds, set to `value`."""
    if isinstance(value, ast.Call):
        cls = ctx.project.find_class(ctx.info.names.resolve(value.func), ctx.info)
        return cls.qualname if cls is not None else None
    held = ctx.project.evidence.classes(str(holder.file.path), holder.name, attr)
    cls = ctx.project.find_class(held[0], ctx.info) if len(held) == 1 else None
    return cls.qualname if cls is not None else None


def _reads(node: ast.expr, attr: str) -> bool:
    return self_attr(node) and node.attr == attr


_ATTRIBUTES_AND_CALLS = frozenset({ast.Attribute, ast.Call})


_Handed = dict[int, tuple[ast.FunctionDef, dict[str, list[ast.Call]], dict[str, list[ast.Call]]]]
"""Id of a call handing an attribute to a helper -> the helper that runs, its calls of the
object's methods by name, and those of its other form (the helper and the class `fix` made
of it: the latter runs, the former stays and calls them too)."""


def _twin_of(
    ctx: FileContext, holder: ClassInfo, call: ast.Call
) -> list[tuple[ast.FunctionDef, int]]:
    """For a call of `self.<attr>` holding an instance that `holder.__init__` makes of a class
    an earlier run made of a helper function (`existing_twins`): its `forward` and the function,
    each with how many parameters come before the call's arguments."""
    init = holder.methods().get("__init__")
    func = call.func
    if not self_attr(func) or init is None:
        return []
    values = [
        n.value
        for n in all_nodes(init)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(target := n.targets[0], ast.Attribute)
        and self_attr(target)
        and target.attr == func.attr
    ]
    if len(values) != 1 or not isinstance(values[0], ast.Call):
        return []
    cls = ctx.project.find_class(ctx.info.names.resolve(values[0].func), ctx.info)
    made = {c: f for f, c in existing_twins(cls.file).items()} if cls is not None else {}
    forward = cls.methods().get("forward") if cls is not None else None
    if cls is None or forward is None or cls.name not in made:
        return []
    return [(forward, 1), (cls.file.functions[made[cls.name]], 0)]


def _hand_overs(ctx: FileContext, holder: ClassInfo, attr: str) -> _Handed | None:
    """The calls in the methods of `holder` handing `self.<attr>` to a module-level function of
    the project that only calls methods of it (`_box_loss(kind, self.box_coder, ...)` calling
    `box_coder.encode_single(...)`), by id, each with those calls by method name; None when a
    method uses `self.<attr>` otherwise than by calling it, reading an attribute of it or so
    handing it on (binding it to a name, returning it, handing it to anything else)."""
    found: _Handed = {}
    methods = holder.methods()
    for method in methods.values():
        for call in ctx.calls_in(method):
            given = [a for a in call.args if _reads(a, attr)]
            given += [k.value for k in call.keywords if k.arg and _reads(k.value, attr)]
            if not given:
                continue
            target = target_of(ctx, ctx.info, call, method, methods)
            helpers = [(target[1], 0)] if target is not None else _twin_of(ctx, holder, call)
            made = [_param_calls(call, helper, attr, skip) for helper, skip in helpers]
            if not helpers or any(each is None for each in made):
                return None
            merged: dict[str, list[ast.Call]] = {}
            for each in made:
                for name, calls in (each or {}).items():
                    merged.setdefault(name, []).extend(calls)
            first = made[0] or {}
            found[id(call)] = (helpers[0][0], {n: first.get(n, []) for n in merged}, merged)
    return None if _escapes(ctx, holder, attr, set(found)) else found


def _param_calls(
    call: ast.Call, helper: ast.FunctionDef, attr: str, skip: int
) -> dict[str, list[ast.Call]] | None:
    """The calls of methods of the parameter of `helper` that `call` gives `self.<attr>`, by
    method name, when that parameter is used for nothing else and never bound again (None
    otherwise, or when which parameter takes it is not known: `*args`, `**kwargs`)."""
    args = helper.args
    if args.vararg or args.kwarg or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    positional = [*args.posonlyargs, *args.args][skip:]
    names = [
        positional[i].arg if i < len(positional) else ""
        for i, a in enumerate(call.args)
        if _reads(a, attr)
    ]
    names += [k.arg or "" for k in call.keywords if _reads(k.value, attr)]
    if len(names) != 1 or not names[0]:
        return None
    param = names[0]
    calls = {
        id(n.func.value): n
        for n in all_nodes(helper)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == param
    }
    made: dict[str, list[ast.Call]] = {}
    for node in all_nodes(helper):
        if isinstance(node, ast.Name) and node.id == param:
            if id(node) not in calls:
                return None
            found = calls[id(node)]
            assert isinstance(found.func, ast.Attribute)
            made.setdefault(found.func.attr, []).append(found)
        elif isinstance(node, (ast.Global, ast.Nonlocal, ast.Lambda, ast.FunctionDef)) and (
            node is not helper
        ):
            return None  # a closure or a declaration may reach the name otherwise
    return made


def _helper_runs(ctx: FileContext, helper: ast.FunctionDef, made: list[ast.Call]) -> int:
    """How many times a `helper`'s calls `made` of one method of the object it is given run
    per call of the helper, at most (`MANY` in a loop)."""
    if any(visit.repeated for node, visit in ctx.call_visits(helper) if node in made):
        return MANY
    return most_runs(helper, list(made))


def _escapes(ctx: FileContext, holder: ClassInfo, attr: str, handed: set[int]) -> bool:
    """Whether a method of `holder` uses `self.<attr>` otherwise than by calling it, reading
    an attribute of it or handing it to one of the `handed` calls (binding it to a name,
    returning it)."""
    for method in holder.methods().values():
        used: set[int] = set()
        for visit in ctx.visits_of(method, _ATTRIBUTES_AND_CALLS):
            node = visit.node
            if isinstance(node, ast.Attribute) and _reads(node.value, attr):
                used.add(id(node.value))
            elif isinstance(node, ast.Call) and _reads(node.func, attr):
                used.add(id(node.func))
            elif isinstance(node, ast.Call) and id(node) in handed:
                used.update(id(a) for a in [*node.args, *(k.value for k in node.keywords)])
        for visit in ctx.visits_of(method, ATTRIBUTES):
            node = visit.node
            if (
                _reads(node, attr)  # type: ignore[arg-type]
                and isinstance(node.ctx, ast.Load)  # type: ignore[attr-defined]
                and id(node) not in used
            ):
                return True
    return False


def _made_elsewhere(ctx: FileContext, cls: ClassInfo, holders: list[ClassInfo]) -> bool:
    """Whether the file names `cls` (a call of it, or a mention) outside the `__init__` of the
    `holders` of its instances, or one such `__init__` names it more than once."""
    resolve = ctx.info.names.resolve
    inits = [holder.methods()["__init__"] for holder in holders]
    inside: dict[int, int] = {}
    for index, init in enumerate(inits):
        for visit in ctx.visits(init):
            inside[id(visit.node)] = index
    lines = _word_lines(ctx.source, cls.name)
    spans = [range(init.lineno, (init.end_lineno or init.lineno) + 1) for init in inits]
    reads, declared = _file_facts(ctx).reads(ctx)
    if lines <= {cls.node.lineno} | {line for span in spans for line in span}:
        nodes: Iterable[ast.AST] = [visit.node for init in inits for visit in ctx.visits(init)]
    else:  # only the whole tree tells whether the other lines (docstrings) name the class
        nodes = reads.get(cls.name, ())
    seen: list[int] = []
    for node in nodes:
        if (
            isinstance(node, (ast.Name, ast.Attribute))
            and _read_name(node) == cls.name
            and id(node) not in declared
            and resolve(node) == cls.qualname
        ):
            if id(node) not in inside:
                if _built_for_holder(ctx, cls, node, holders):
                    continue
                return True
            seen.append(inside[id(node)])
    return len(seen) != len(set(seen))


def _built_for_holder(
    ctx: FileContext, cls: ClassInfo, node: ast.AST, holders: list[ClassInfo]
) -> bool:
    """Whether `node`, naming `cls`, is the class called in a module-level function to bind a
    name that the function only hands to a call of one of the `holders` (and sets attributes
    of to constants: retinanet's `head.regression_head._loss_type = "giou"`), whose `__init__`
    stores that argument in the attribute holding `cls` (`stored_once`): torchvision's
    `retinanet_resnet50_fpn_v2` making a `RetinaNetHead` for `RetinaNet(..., head=head)`."""
    for function in ctx.info.functions.values():
        if not function.lineno <= getattr(node, "lineno", 0) <= (function.end_lineno or 0):
            continue
        nodes = all_nodes(function)
        made = [
            n.targets[0].id
            for n in nodes
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.Call)
            and n.value.func is node
        ]
        if len(made) != 1:
            return False
        name = made[0]
        uses = [n for n in nodes if isinstance(n, ast.Name) and n.id == name]
        set_on = {
            id(root)
            for n in nodes
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Constant)
            and all(isinstance(t, ast.Attribute) for t in n.targets)
            for root in map(_root, n.targets)
        }
        handed = [
            (call, index, keyword)
            for call in nodes
            if isinstance(call, ast.Call)
            for index, keyword, value in [
                *((i, None, a) for i, a in enumerate(call.args)),
                *((None, k.arg, k.value) for k in call.keywords),
            ]
            if isinstance(value, ast.Name) and value.id == name
        ]
        loads = [n for n in uses if isinstance(n.ctx, ast.Load) and id(n) not in set_on]
        if len([n for n in uses if not isinstance(n.ctx, ast.Load)]) != 1 or len(loads) != 1:
            return False
        if len(handed) != 1:
            return False
        call, index, keyword = handed[0]
        holder = next((h for h in holders if ctx.info.names.resolve(call.func) == h.qualname), None)
        init = holder.methods().get("__init__") if holder is not None else None
        if holder is None or init is None:
            return False
        params = [a.arg for a in [*init.args.posonlyargs, *init.args.args][1:]]
        param = keyword or (params[index] if index is not None and index < len(params) else None)
        attr = stored_once(init, param, None) if param else None
        return (
            attr is not None
            and _file_facts(ctx).holders(ctx).get(holder, {}).get(attr) == cls.qualname
        )
    return False


def _root(node: ast.expr) -> ast.expr:
    """The name an attribute chain starts from (`head` of `head.regression_head._loss_type`)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _word_lines(source: str, word: str) -> set[int]:
    """The lines of `source` holding `word` as a word, `\\b<word>\\b`."""
    lines: set[int] = set()
    line, last = 1, 0
    for found in anchored_matches(re.compile(rf"\b{re.escape(word)}\b"), source, [(word, 0)]):
        line += source.count("\n", last, found.start())
        last = found.start()
        lines.add(line)
    return lines


def _read_name(node: ast.Name | ast.Attribute) -> str | None:
    """The name `node` reads (None: it stores or deletes)."""
    if not isinstance(node.ctx, ast.Load):
        return None
    return node.id if isinstance(node, ast.Name) else node.attr


def _reads_of(tree: ast.Module) -> tuple[dict[str, list[ast.AST]], set[int]]:
    """The nodes of `tree` reading a name or attribute, by the name read, but those of
    `_declared`; and `_declared`."""
    nodes = all_nodes(tree)
    declared = _declared(nodes)
    reads: dict[str, list[ast.AST]] = {}
    for node in nodes:
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = _read_name(node)
            if name is not None and id(node) not in declared:
                reads.setdefault(name, []).append(node)
    return reads, declared


def _declared(nodes: list[ast.AST]) -> set[int]:
    """The nodes of class-level declarations of attributes' types (`__annotations__ = {...}`,
    `box_coder: BoxCoder`) and of functions' annotations (`_box_loss(type: str, box_coder:
    BoxCoder, ...)`) among `nodes` (a whole tree's), which name a class without making or
    using an instance."""
    found: set[int] = set()
    for function in (node for node in nodes if isinstance(node, ast.FunctionDef)):
        args = function.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        annotations = [a.annotation for a in every if a is not None] + [function.returns]
        found.update(id(n) for each in annotations if each is not None for n in ast.walk(each))
    for cls in (node for node in nodes if isinstance(node, ast.ClassDef)):
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
                found.update(id(n) for n in ast.walk(stmt.annotation))
            elif (
                isinstance(stmt, ast.Assign)
                and [ast.unparse(t) for t in stmt.targets] == ["__annotations__"]
                and isinstance(stmt.value, ast.Dict)
            ):
                found.update(id(n) for value in stmt.value.values for n in ast.walk(value))
    return found


def _other_calls(
    ctx: FileContext,
    names: set[str],
    counted: set[int],
    made: dict[ClassInfo, dict[str, str]],
    cls: ClassInfo,
) -> bool:
    """Whether the file reads (calls, or binds to call later) a method named as one of `names`
    of something that may be an instance of `cls`, other than the `counted` calls: not of
    `self` (a class's own method), nor of an attribute its holder sets to an instance of
    another class."""
    for holder in ctx.info.classes.values():
        attrs = made.get(holder, {})
        for method in holder.methods().values():
            for visit in ctx.visits(method):
                node = visit.node
                if not isinstance(node, ast.Attribute) or node.attr not in names:
                    continue
                owner = node.value
                if id(node) in counted or (isinstance(owner, ast.Name) and owner.id == "self"):
                    continue
                if self_attr(owner) and attrs.get(owner.attr, cls.qualname) != cls.qualname:
                    continue
                return True
    return any(
        isinstance(visit.node, ast.Attribute)
        and visit.node.attr in names
        and id(visit.node) not in counted
        for function in ctx.info.functions.values()
        for visit in ctx.visits(function)
    )


_RECEIVER = re.compile(r"(?<![\w.])((?:\w+\.)*\w+)$")
_CLASS = re.compile(r"^class +(\w+)", re.MULTILINE)


def _called_elsewhere(
    ctx: FileContext, family: Family, cls: ClassInfo, names: set[str], read: set[Path]
) -> str:
    """Whether (why, or '') `cls` has subclasses in other files of its package, or one of those
    files but the ones `read` already (their holders' calls counted) reads (calls) a method
    named as one of `names` of something that may be an instance of `cls` (found from the
    text): of anything but `self`, or `self.<attr>` that the file sets once, to a call of a
    class named otherwise, or that every built model the run-time evidence saw holds an
    instance of another class in."""
    path = ctx.info.path
    if path is None or not path.is_file():  # source from stdin: no package to look at
        return ""
    if family.subclasses_elsewhere(cls):
        return f"`{cls.name}` has a subclass in another file"
    calls = re.compile(rf"\.(?:{'|'.join(map(re.escape, sorted(names)))})\b")
    own = resolved(path)
    texts = _package_texts(_package_top(path))
    reaching = _reaching(cls, texts) if "forward" not in cls.methods() else None
    for file, text in texts:
        if file == own or file in read:
            continue
        if reaching is not None and reaching.search(text) is None:
            continue
        for match in calls.finditer(text):
            found = _RECEIVER.search(text, max(0, match.start() - 200), match.start())
            receiver = found.group(1) if found else ""
            if (
                receiver != "self"
                and not _a_module(text, receiver)
                and not _other_class(ctx, cls, file, text, receiver, match.start())
            ):
                line = text.count("\n", 0, match.start()) + 1
                return (
                    f"{file.name}:{line} calls `{receiver or '...'}{match.group()}` on something "
                    f"not proven to be an instance set once in a holder's `__init__`"
                )
    return ""


def _reaching(cls: ClassInfo, texts: tuple[tuple[Path, str], ...]) -> re.Pattern[str]:
    """The names through which a file can reach an instance of `cls`, a class without
    `forward` (a plain one, or one a first run made a module): its own, and those of the
    attributes set to a call of it (`self.box_coder = BoxCoder(...)`), which its holders
    never hand on; a file naming none of them calls no method of an instance."""
    attrs = {
        attr
        for _, text in texts
        for attr, called in _assigned_calls(text)[0].items()
        if cls.name in called
    }
    return re.compile(rf"\b(?:{'|'.join(map(re.escape, sorted({cls.name, *attrs})))})\b")


def _a_module(text: str, receiver: str) -> bool:
    """Whether `receiver` is a name the file's text binds by an `import` statement alone
    (`import codecs`, then `codecs.encode(...)`): a module, no instance of a class."""
    if not receiver.isidentifier():
        return False
    name = re.escape(receiver)
    imported = re.search(
        rf"^[ \t]*import[ \t]+(?:{name}|[\w.]+[ \t]+as[ \t]+{name})[ \t]*(?:#.*)?$", text, re.M
    )
    bound = re.search(rf"(?<![\w.]){name}\s*(?:=(?!=)|:[^\n]*=)|\bas\s+{name}\b(?![ \t]*$)", text)
    return imported is not None and bound is None


def _other_class(
    ctx: FileContext, cls: ClassInfo, file: Path, text: str, receiver: str, at: int
) -> bool:
    """Whether `receiver` (read at `at` in the text of `file`) is `self.<attr>` holding an
    instance of a class other than `cls` (see `_called_elsewhere`)."""
    if not receiver.startswith("self.") or receiver.count(".") != 1:
        return False
    attr = re.escape(receiver[5:])
    starts = [found.start() for found in _CLASS.finditer(text)]
    begin = max((start for start in starts if start <= at), default=0)
    end = min((start for start in starts if start > at), default=len(text))
    stores = re.findall(rf"\bself\.{attr}\s*=(?!=)\s*([\w.]+)(\s*\()?", text[begin:end])
    if len(stores) == 1 and stores[0][1]:  # the class `at` is in sets it once, to a call
        return stores[0][0].rsplit(".", 1)[-1] != cls.name
    holders = _CLASS.findall(text, 0, at)
    if len(stores) != 1 or not holders:
        return False
    held = ctx.project.evidence.classes(str(file), holders[-1], receiver[5:])
    return bool(held) and cls.qualname not in held


def _package_top(path: Path) -> tuple[Path, bool]:
    """The top-level package folder of `path` and True, or its own folder and False outside a
    package."""
    module, _, root = kept_module_name(path)
    if "." in module:
        return resolved(root / module.split(".")[0]), True
    return resolved(path.parent), False


_RECEIVED_CALL = re.compile(r"self\.(\w++)\.(\w++)\s*+\(")
"""`self.<attr>.<name>(` (also inside a longer name, `myself.a.b(`: more calls, never fewer)."""


@functools.lru_cache(maxsize=4)
def _package_calls(top: tuple[Path, bool]) -> dict[str, dict[Path, frozenset[str]]]:
    """Method name -> the files of a package folder that call a method of that name on an
    attribute of `self` (`self.head.loss(`), each with those attributes; read once a
    process."""
    found: dict[str, dict[Path, set[str]]] = {}
    for file, text in _package_texts(top):
        for attr, name in _RECEIVED_CALL.findall(text):
            found.setdefault(name, {}).setdefault(file, set()).add(attr)
    return {
        name: {file: frozenset(attrs) for file, attrs in files.items()}
        for name, files in found.items()
    }


_GIVEN_ATTRIBUTE = re.compile(r"[(,=]\s*self\.(\w+)\s*[,)]")


@functools.lru_cache(maxsize=4)
def _package_given(top: tuple[Path, bool]) -> dict[Path, frozenset[str]]:
    """The files of a package folder that hand an attribute of `self` to a call (`f(x,
    self.coder)`), each with those attributes; read once a process."""
    found = {}
    for file, text in _package_texts(top):
        attrs = frozenset(_GIVEN_ATTRIBUTE.findall(text))
        if attrs:
            found[file] = attrs
    return found


@functools.lru_cache(maxsize=4)
def _package_holding(top: tuple[Path, bool]) -> dict[str, frozenset[Path]]:
    """Name -> the files of a package folder that set an attribute of `self` to a call of it
    or may import it under another name (`_assigned_calls`); read once a process."""
    found: dict[str, set[Path]] = {}
    for file, text in _package_texts(top):
        assigned, renamed = _assigned_calls(text)
        for name in renamed.union(*assigned.values()):
            found.setdefault(name, set()).add(file)
    return {name: frozenset(files) for name, files in found.items()}


@functools.lru_cache(maxsize=4)
def _package_text_of(top: tuple[Path, bool]) -> dict[Path, str]:
    """`_package_texts` by file."""
    return dict(_package_texts(top))


@functools.lru_cache(maxsize=4)
def _package_texts(top: tuple[Path, bool]) -> tuple[tuple[Path, str], ...]:
    """Every `.py` file of a package folder (of the folder alone: False), with its text, read
    once a process."""
    folder, recursive = top
    found = []
    for file in sorted(folder.rglob("*.py") if recursive else folder.glob("*.py")):
        try:
            found.append((file.resolve(), file.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return tuple(found)
