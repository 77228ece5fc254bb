"""How many times each method of a class runs per forward call."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from migrator.rewrite.context import ATTRIBUTES, MANY, FileContext, named_attribute, self_attr
from migrator.rewrite.family import Family
from migrator.rewrite.helpers import unbound
from migrator.rewrite.paths import most_runs
from migrator.rewrite.project import ClassInfo
from migrator.rewrite.walk import Visit, child_nodes

CALLS_ONCE = frozenset({"torch.utils.checkpoint.checkpoint"})
"""Functions that call the function handed to them first once per call (torch's checkpoint
runs it once in forward; its recomputation in backward replays the same calls)."""


def reach(ctx: FileContext, cls: ClassInfo, family: Family) -> dict[str, int]:
    """Method name -> how many times it runs per forward call, for the methods forward reaches
    (not `__init__`, static or class methods): the most over `cls` and its subclasses in the
    same file, whose overrides and `super()` calls can make a helper run more often. Worked
    out once per class (`Family.kept`: MIG117's search asks before the class's analysis)."""
    return family.kept("reach", cls, lambda: _reach(ctx, cls, family))


def _reach(ctx: FileContext, cls: ClassInfo, family: Family) -> dict[str, int]:
    methods = cls.methods()
    most: dict[str, int] = {}
    overriding = [_overrides(cls, sub, family) for sub in family.subclasses_in_file(cls)]
    for overrides in [{}, *overriding]:
        for name, times in _counts(ctx, methods, overrides, aliases=aliases(cls)).items():
            most[name] = max(most.get(name, 0), times)
    return {
        name: times
        for name, times in most.items()
        if times > 0 and name != "__init__" and not unbound(methods[name])
    }


def once_an_iteration(
    ctx: FileContext,
    cls: ClassInfo,
    family: Family,
    input_only: Callable[[ast.FunctionDef, Visit], bool],
) -> set[str]:
    """The methods forward reaches that run in loops whose trip count depends on the input,
    once an iteration of them (`input_only`: whether a repeated call in a function repeats
    only by such loops; counted once, such a call leaves the method running once)."""
    times = reach(ctx, cls, family)
    methods = cls.methods()
    most: dict[str, int] = {}
    overriding = [_overrides(cls, sub, family) for sub in family.subclasses_in_file(cls)]
    for overrides in [{}, *overriding]:
        for name, count in _counts(
            ctx, methods, overrides, input_only, aliases=aliases(cls)
        ).items():
            most[name] = max(most.get(name, 0), count)
    return {name for name, count in times.items() if count >= MANY and most.get(name) == 1}


def inherited_reach(
    ctx: FileContext, cls: ClassInfo, family: Family
) -> tuple[dict[str, ast.FunctionDef], dict[str, int]]:
    """For a class that inherits `forward`: the methods its forward path runs through (its own
    over those of its ancestors that can be found), and how many times each of its own methods
    that forward reaches (`forward_head` overriding a base's) runs per forward call. Empty when
    no ancestor's `forward` can be found."""
    own = cls.methods()
    methods: dict[str, ast.FunctionDef] = {}
    for ancestor in reversed(family.ancestors(cls)):  # the nearest base's methods win
        methods.update(ancestor.methods())
    methods.update(own)
    named: dict[str, str] = {}
    for each in [*reversed(family.ancestors(cls)), cls]:
        named.update(aliases(each))
    if "forward" not in methods:
        return {}, {}
    counts = _counts(ctx, methods, {}, aliases=named)
    return methods, {
        name: counts[name]
        for name, method in own.items()
        if counts[name] > 0 and name != "__init__" and not unbound(method)
    }


def runs_per_call(ctx: FileContext, cls: ClassInfo, name: str) -> dict[str, int]:
    """How many times each method of `cls` runs per call of its method `name`."""
    return _counts(ctx, cls.methods(), {}, start=name, aliases=aliases(cls))


def aliases(cls: ClassInfo) -> dict[str, str]:
    """Other names the class statement binds to its methods (`body = _body`): a call of one runs
    the method."""
    methods = cls.methods()
    return {
        target.id: stmt.value.id
        for stmt in cls.node.body
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name)
        for target in stmt.targets
        if isinstance(target, ast.Name) and stmt.value.id in methods and target.id not in methods
    }


@dataclass(frozen=True)
class InitRun:
    """How `__init__` runs a method on the forward path."""

    via: str
    """The `__init__` that runs it (the class's own or a base's), as shown in findings."""
    before: int | None
    """The top-level statement of the class's own `__init__` that first runs it: modules
    created before that statement exist then; None when a base's `__init__` runs it (no new
    module exists yet)."""


def init_reach(ctx: FileContext, cls: ClassInfo, family: Family) -> dict[str, InitRun]:
    """Method name -> how `__init__` runs it (maybe through other methods), for the methods
    the class's `__init__` or a base's runs."""
    chain = [cls, *family.ancestors(cls)]
    methods: dict[str, ast.FunctionDef] = {}
    for each in reversed(chain):  # the nearest class's methods win
        methods.update(each.methods())

    direct: dict[str, list[str]] = {}
    """Method name -> the names it calls on `self`."""

    def closure(called: list[str]) -> list[str]:
        """The methods that calling `called` runs, directly or through others."""
        found: list[str] = []
        todo = [called]
        while todo:
            for name in todo.pop():
                if name in methods and name != "__init__" and name not in found:
                    found.append(name)
                    if name not in direct:
                        direct[name] = [n for part in _self_calls(ctx, methods[name]) for n in part]
                    todo.append(direct[name])
        return found

    runs: dict[str, InitRun] = {}
    for base in chain[1:]:
        init = base.methods().get("__init__")
        called = [n for part in _self_calls(ctx, init) for n in part] if init is not None else []
        for name in closure(called):
            runs.setdefault(name, InitRun(f"`{base.name}.__init__`", None))
    own = cls.methods().get("__init__")
    for index, called in enumerate(_self_calls(ctx, own) if own is not None else []):
        for name in closure(called):
            runs.setdefault(name, InitRun(f"`{cls.name}.__init__`", index))
    return runs


def _self_calls(ctx: FileContext, func: ast.FunctionDef) -> list[list[str]]:
    """The names of the `self.<name>(...)` calls in each top-level statement of `func`'s body,
    found once per function (each class's `init_reach` reads its bases' `__init__` again)."""
    found = _SELF_CALLS.get(func)
    if found is None:
        found = _SELF_CALLS[func] = _find_self_calls(ctx, func)
    return found


_SELF_CALLS: weakref.WeakKeyDictionary[ast.AST, list[list[str]]] = weakref.WeakKeyDictionary()
"""`_find_self_calls` of a function, kept while it is alive: it depends on the function alone."""


def _find_self_calls(ctx: FileContext, func: ast.FunctionDef) -> list[list[str]]:
    """`_self_calls`, read from the function's walk (which visits a statement before what it
    holds)."""
    top = {id(stmt): index for index, stmt in enumerate(func.body)}
    calls: list[list[str]] = [[] for _ in func.body]
    at = 0
    for visit in ctx.visits(func):
        node = visit.node
        at = top.get(id(node), at)
        if isinstance(node, ast.Call) and self_attr(node.func):
            calls[at].append(node.func.attr)
    return calls


Method = tuple[str, str]


def _counts(
    ctx: FileContext,
    methods: dict[str, ast.FunctionDef],
    overrides: dict[str, ast.FunctionDef],
    once: Callable[[ast.FunctionDef, Visit], bool] | None = None,
    start: str = "forward",
    aliases: dict[str, str] | None = None,
) -> dict[str, int]:
    """Run counts of a class's `methods` per call of `start` when `overrides` replace some of
    them (a repeated call that `once` accepts counts as one); a call of one of `aliases` (other
    names of methods, `body = _body`) runs the method it names."""
    named = aliases or {}

    def target(name: str) -> tuple[str, str] | None:
        if name in overrides:
            return ("sub", name)
        name = named.get(name, name)
        return ("own", name) if name in methods else None

    names = set(methods) | set(overrides) | set(named)
    functions = {("own", n): f for n, f in methods.items()}
    functions.update({("sub", n): f for n, f in overrides.items()})
    calls: dict[Method, dict[Method, tuple[list[ast.AST], bool]]] = {}
    for key, function in functions.items():
        for node, visit in ctx.call_visits(function):
            if not isinstance(node.func, ast.Attribute):
                continue
            owner, name = node.func.value, node.func.attr
            if self_attr(node.func):
                callee = target(name)
            elif (
                key[0] == "sub"
                and isinstance(owner, ast.Call)
                and isinstance(owner.func, ast.Name)
                and owner.func.id == "super"
            ):
                callee = ("own", name) if name in methods else None
            else:
                continue
            if callee:  # a method calling itself (`callee == key`) runs many times
                nodes, repeated = calls.setdefault(callee, {}).get(key, ([], False))
                again = (
                    visit.repeated
                    and not _once_in_nested(ctx, function, visit)
                    and not (once is not None and once(function, visit))
                )
                calls[callee][key] = ([*nodes, node], repeated or again)
        for read in _handed_on(ctx, function, names):  # `map(self.step, xs)`: runs any times
            callee = target(read.attr)
            if callee:
                nodes, _ = calls.setdefault(callee, {}).get(key, ([], False))
                calls[callee][key] = ([*nodes, read], True)
    entry = target(start)
    counts: dict[tuple[str, str], int] = {}
    runs = {name: _count(("own", name), (), entry, calls, functions, counts) for name in methods}
    by_caller: dict[Method, dict[Method, list[ast.AST]]] = {}
    for name, times in runs.items():
        if 1 < times < MANY and entry is not None:  # callers' exclusive branches may not add up
            if not by_caller:
                for callee, callers in calls.items():
                    for caller, (nodes, _) in callers.items():
                        by_caller.setdefault(caller, {})[callee] = nodes
            exact = _per_call(entry, ("own", name), (), by_caller, functions, {})
            runs[name] = min(times, exact)
    return runs


def _handed_on(ctx: FileContext, function: ast.FunctionDef, names: set[str]) -> list[ast.Attribute]:
    """The `self.<name>` of a method of `names` that `function` hands on uncalled, in an
    argument of a call (`map(self.step, xs)`, `zip([self.step] * 3, xs)`) or in an assigned or
    returned value (`fn = self.step`): a method so handed on runs where its calls cannot be
    counted."""
    found = _HANDED.get(function)
    if found is None:
        found = _HANDED[function] = _self_reads(ctx, function)
    return [read for read in found if read.attr in names]


_HANDED: weakref.WeakKeyDictionary[ast.AST, list[ast.Attribute]] = weakref.WeakKeyDictionary()
"""`_self_reads` of a function, kept while it is alive: it depends on the function alone."""


def _self_reads(ctx: FileContext, function: ast.FunctionDef) -> list[ast.Attribute]:
    """The `self.<name>` read, but not called, in `function`'s call arguments and assigned
    values, and each `getattr(self, "<name>")`, read as `self.<name>` (`method_getattr.py`)."""
    call_visits = ctx.call_visits(function)
    named = [
        ast.copy_location(ast.Attribute(ast.Name("self", ast.Load()), name, ast.Load()), node)
        for node, _ in call_visits
        if (name := named_attribute(node))
    ]
    called = {id(node.func) for node, _ in call_visits}
    holding = {  # the statements holding an uncalled `self.<name>`: the others hand on none
        id(visit.stmt): visit.stmt
        for visit in ctx.visits_of(function, ATTRIBUTES)
        if self_attr(visit.node) and id(visit.node) not in called
    }
    if not holding:
        return named
    values = [
        v
        for node, visit in call_visits
        if id(visit.stmt) in holding
        for v in [*node.args, *(k.value for k in node.keywords)]
    ]
    values += [  # what is found does not depend on the order (nor do the run counts)
        stmt.value
        for stmt in holding.values()
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Return)) and stmt.value is not None
    ]
    found: list[ast.Attribute] = []
    seen: set[int] = set()  # a call's arguments hold the calls whose arguments are read too
    for value in values:
        todo_nodes: list[ast.AST] = [value]
        while todo_nodes:
            node = todo_nodes.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if self_attr(node) and id(node) not in called:
                found.append(node)
            todo_nodes += child_nodes(node)
    return [*found, *named]


def _once_in_nested(ctx: FileContext, function: ast.FunctionDef, visit: Visit) -> bool:
    """Whether `visit`'s node, repeated only by being in a function nested in `function`, runs
    once per call of `function`: not repeated in the nested function (undecorated, no
    generator), whose name `function` uses once, as the first argument of a call of one of
    `CALLS_ONCE` that runs once."""
    nested = visit.repeater
    if visit.loops or not isinstance(nested, ast.FunctionDef) or nested.decorator_list:
        return False  # a decorator's wrapper may call it any number of times
    inner = ctx.visits(nested)
    if any(isinstance(v.node, (ast.Yield, ast.YieldFrom)) for v in inner):
        return False  # a generator runs when iterated, not when called
    if any(v.node is visit.node and v.repeated for v in inner):
        return False
    named = [
        v
        for v in ctx.visits(function)
        if (isinstance(v.node, ast.Name) and v.node.id == nested.name)
        or (
            isinstance(v.node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and v.node.name == nested.name
        )
    ]
    uses = [v.node for v in named if isinstance(v.node, ast.Name)]
    if len(named) != 2 or len(uses) != 1:
        return False
    shadowed = ctx.locals_of(function)
    return any(
        isinstance(v.node, ast.Call)
        and not v.repeated
        and v.node.args
        and v.node.args[0] is uses[0]
        and ctx.info.names.resolve(v.node.func, shadowed) in CALLS_ONCE
        for v in ctx.visits(function)
    )


def _count(
    key: Method,
    stack: tuple,
    entry: Method | None,
    calls: dict[Method, dict[Method, tuple[list[ast.AST], bool]]],
    functions: dict[Method, ast.FunctionDef],
    counts: dict[Method, int],
) -> int:
    """How many times `key` runs per call of `entry`, given who `calls` whom (the call nodes,
    and whether one repeats) and the callers' `functions` (memo: `counts`)."""
    if key == entry:  # many times when it calls itself, directly or not
        if key in stack:
            return 1
        if key not in counts:
            again = any(
                _count(caller, (key,), entry, calls, functions, {}) for caller in calls.get(key, {})
            )
            counts[key] = MANY if again else 1
        return counts[key]
    if key in stack:
        return MANY
    if key not in counts:
        total = 0
        for caller, (nodes, repeated) in calls.get(key, {}).items():
            times = _count(caller, stack + (key,), entry, calls, functions, counts)
            if repeated and times:
                total += MANY
            elif times:  # calls in exclusive branches of the caller do not add up
                total += times * most_runs(functions[caller], nodes)
        counts[key] = min(total, MANY)
    return counts[key]


def _per_call(
    method: Method,
    key: Method,
    stack: tuple,
    calls: dict[Method, dict[Method, list[ast.AST]]],
    functions: dict[Method, ast.FunctionDef],
    memo: dict[Method, int],
) -> int:
    """How many times `key` runs per call of `method`, on its most running path: a call of a
    method counts as the times `key` runs per call of that one, so calls in exclusive branches
    of `method` never add up, however deep `key` is below them (`calls`: by caller, the call
    nodes of each callee, none repeated; recursion counts as many)."""
    if method == key:
        return 1
    if method in stack:
        return MANY
    if method not in memo:
        weights: dict[int, int] = {}
        nodes: list[ast.AST] = []
        for callee, called in calls.get(method, {}).items():
            times = _per_call(callee, key, stack + (method,), calls, functions, memo)
            if times:
                nodes += called
                weights.update(dict.fromkeys(map(id, called), times))
        memo[method] = min(most_runs(functions[method], nodes, weights), MANY) if nodes else 0
    return memo[method]


def _overrides(cls: ClassInfo, sub: ClassInfo, family: Family) -> dict[str, ast.FunctionDef]:
    """Methods a subclass (and the classes between) define over those of `cls`."""
    chain: list[ClassInfo] = []
    current: ClassInfo | None = sub
    while current is not None and current is not cls:
        chain.append(current)
        current = next(
            (
                p
                for b in current.bases
                if (p := family.project.find_class(b, current.file))
                and (p is cls or family.derives(p, cls))
            ),
            None,
        )
    overrides: dict[str, ast.FunctionDef] = {}
    for link in reversed(chain):
        overrides.update(link.methods())
    return overrides
