"""Methods of a module class that other modules of its file call on an instance they hold
(`self.head.compute_loss(...)`, as torchvision's retinanet and fcos do): they are on the class's
forward path too, and run as many times per forward as their holders' forward paths call them.

Only when every call of such a method is known: each instance made once, in a holder's
`__init__` (`self.head = Head(...)`), and handed to nothing; the holders' calls on their forward
paths; no other call of a method of that name in the file, nor in another file of its package,
on anything but `self` or an attribute holding an instance of another class; no subclass of the
class. Otherwise the calls stay as they are, each reported at its holder (MIG115).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from pathlib import Path

from migrator.rewrite.context import MANY, FileContext, self_attr
from migrator.rewrite.family import Family
from migrator.rewrite.helpers import unbound
from migrator.rewrite.paths import most_runs
from migrator.rewrite.project import ClassInfo, module_name
from migrator.rewrite.runs import reach, runs_per_call
from migrator.rewrite.walk import header_lines


def forward_runs(
    ctx: FileContext, cls: ClassInfo, family: Family, stack: tuple[ClassInfo, ...] = ()
) -> dict[str, int]:
    """`runs.reach` of `cls`, with the methods its holders call (`held_runs`) and the methods
    those run added, each as many more times as they run per forward."""
    runs = dict(reach(ctx, cls, family))
    for inner, count in _held_reach(ctx, cls, family, stack).items():
        runs[inner] = min(runs.get(inner, 0) + count, MANY)
    return runs


def held_reach(ctx: FileContext, cls: ClassInfo, family: Family) -> set[str]:
    """The methods of `cls` that its holders' calls run (`held_runs`), directly or not."""
    return set(_held_reach(ctx, cls, family, ()))


def _held_reach(
    ctx: FileContext, cls: ClassInfo, family: Family, stack: tuple[ClassInfo, ...]
) -> dict[str, int]:
    """Method name -> how many times the holders' calls run it per forward."""
    methods = cls.methods()
    found: dict[str, int] = {}
    for name, times in held_runs(ctx, cls, family, stack).items():
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
        return _held_runs(ctx, cls, family, stack)
    return family.kept("held_runs", cls, lambda: _held_runs(ctx, cls, family, ()))


def _held_runs(
    ctx: FileContext, cls: ClassInfo, family: Family, stack: tuple[ClassInfo, ...]
) -> dict[str, int]:
    methods = cls.methods()
    names = {
        name
        for name, method in methods.items()
        if name != "forward" and not name.startswith("__") and not unbound(method)
    }
    file = _file_facts(ctx)
    if (
        not names & file.called
        or "forward" not in methods
        or cls in stack
        or cls.qualname in ctx.shared
        or ctx.skip.intersection(header_lines(cls.node))
        or family.subclasses_in_file(cls)
    ):
        return {}
    made = {h: attrs for h, attrs in file.holders(ctx).items() if h is not cls}
    instances = [(h, a) for h, attrs in made.items() for a, q in attrs.items() if q == cls.qualname]
    if not instances:
        return {}
    counts: dict[str, int] = {}
    counted: set[int] = set()
    for holder, attr in instances:
        if (
            holder.qualname in ctx.shared  # its calls would run at each of its call sites
            or family.subclasses_in_file(holder)
            or _escapes(ctx, holder, attr)
            or any(set(sub.methods()) - {"__init__"} for sub in family.subclasses_elsewhere(holder))
        ):
            return {}  # a subclass may call it otherwise
        runs = forward_runs(ctx, holder, family, (*stack, cls))
        per: dict[str, int] = {}
        for caller, method in holder.methods().items():
            calls: dict[str, list[ast.Call]] = {}
            repeated: set[str] = set()
            for node, visit in ctx.call_visits(method):
                func = node.func
                if (
                    isinstance(func, ast.Attribute)
                    and _reads(func.value, attr)
                    and func.attr in names
                ):
                    calls.setdefault(func.attr, []).append(node)
                    repeated.update([func.attr] if visit.repeated else [])
            for name, found in calls.items():
                if not runs.get(caller):
                    return {}  # called off the forward path: how often is unknown
                counted.update(id(call.func) for call in found)
                times = MANY if name in repeated else runs[caller] * most_runs(method, [*found])
                per[name] = min(per.get(name, 0) + times, MANY)
        for name, times in per.items():
            counts[name] = max(counts.get(name, 0), times)
    if (
        not counts
        or _made_elsewhere(ctx, cls, [h for h, _ in instances])  # its other instances' calls
        or _other_calls(ctx, set(counts), counted, made, cls)
    ):
        return {}
    return {} if _called_elsewhere(ctx, family, cls, set(counts)) else counts


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


class _FileFacts:
    """What `held_runs` reads of a file, worked out once for all its classes."""

    def __init__(self, ctx: FileContext) -> None:
        self.called = _called_on_attributes(ctx.source)
        """The names of the methods called on an attribute of `self` (`self.head.loss(...)`),
        read from the text (a call spread otherwise over lines is not counted: not taken)."""
        self._holders: dict[ClassInfo, dict[str, str]] | None = None

    def holders(self, ctx: FileContext) -> dict[ClassInfo, dict[str, str]]:
        if self._holders is None:
            self._holders = _holders(ctx)
        return self._holders


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
            for visit in ctx.visits(method):
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


def _escapes(ctx: FileContext, holder: ClassInfo, attr: str) -> bool:
    """Whether a method of `holder` uses `self.<attr>` otherwise than by calling it or reading
    an attribute of it (handing it on, binding it to a name, returning it)."""
    for method in holder.methods().values():
        used: set[int] = set()
        for visit in ctx.visits(method):
            node = visit.node
            if isinstance(node, ast.Attribute) and _reads(node.value, attr):
                used.add(id(node.value))
            elif isinstance(node, ast.Call) and _reads(node.func, attr):
                used.add(id(node.func))
        for visit in ctx.visits(method):
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
    source = ctx.source
    lines = {
        source.count("\n", 0, found.start()) + 1
        for found in re.finditer(rf"\b{re.escape(cls.name)}\b", source)
    }
    spans = [range(init.lineno, (init.end_lineno or init.lineno) + 1) for init in inits]
    if lines <= {cls.node.lineno} | {line for span in spans for line in span}:
        nodes: Iterable[ast.AST] = [visit.node for init in inits for visit in ctx.visits(init)]
    else:  # only the whole tree tells whether the other lines (docstrings) name the class
        nodes = ast.walk(ctx.info.tree)
    seen: list[int] = []
    for node in nodes:
        if (
            isinstance(node, (ast.Name, ast.Attribute))
            and isinstance(node.ctx, ast.Load)
            and (node.id if isinstance(node, ast.Name) else node.attr) == cls.name
            and resolve(node) == cls.qualname
        ):
            if id(node) not in inside:
                return True
            seen.append(inside[id(node)])
    return len(seen) != len(set(seen))


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
        isinstance(visit.node, ast.Attribute) and visit.node.attr in names
        for function in ctx.info.functions.values()
        for visit in ctx.visits(function)
    )


_RECEIVER = re.compile(r"(?<![\w.])((?:\w+\.)*\w+)$")
_CLASS = re.compile(r"^class +(\w+)", re.MULTILINE)


def _called_elsewhere(ctx: FileContext, family: Family, cls: ClassInfo, names: set[str]) -> bool:
    """Whether `cls` has subclasses in other files of its package, or one of those files reads
    (calls) a method named as one of `names` of something that may be an instance of `cls`
    (found from the text): of anything but `self`, or `self.<attr>` that the file sets once, to
    a call of a class named otherwise, or that every built model the run-time evidence saw
    holds an instance of another class in."""
    path = ctx.info.path
    if path is None or not path.is_file():  # source from stdin: no package to look at
        return False
    if family.subclasses_elsewhere(cls):
        return True
    calls = re.compile(rf"\.(?:{'|'.join(map(re.escape, sorted(names)))})\b")
    own = path.resolve()
    for file, text in _package_texts(_package_top(path)):
        if file == own:
            continue
        for match in calls.finditer(text):
            found = _RECEIVER.search(text, max(0, match.start() - 200), match.start())
            receiver = found.group(1) if found else ""
            if receiver != "self" and not _other_class(
                ctx, cls, file, text, receiver, match.start()
            ):
                return True
    return False


def _other_class(
    ctx: FileContext, cls: ClassInfo, file: Path, text: str, receiver: str, at: int
) -> bool:
    """Whether `receiver` (read at `at` in the text of `file`) is `self.<attr>` holding an
    instance of a class other than `cls` (see `_called_elsewhere`)."""
    if not receiver.startswith("self.") or receiver.count(".") != 1:
        return False
    attr = re.escape(receiver[5:])
    stores = re.findall(rf"\bself\.{attr}\s*=(?!=)\s*([\w.]+)(\s*\()?", text)
    if len(stores) == 1 and stores[0][1]:
        return stores[0][0].rsplit(".", 1)[-1] != cls.name
    holders = _CLASS.findall(text, 0, at)
    if len(stores) != 1 or not holders:
        return False
    held = ctx.project.evidence.classes(str(file), holders[-1], receiver[5:])
    return bool(held) and cls.qualname not in held


def _package_top(path: Path) -> tuple[Path, bool]:
    """The top-level package folder of `path` and True, or its own folder and False outside a
    package."""
    module, _, root = module_name(path)
    if "." in module:
        return (root / module.split(".")[0]).resolve(), True
    return path.parent.resolve(), False


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
