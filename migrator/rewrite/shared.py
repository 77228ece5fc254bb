"""Module instances an `__init__` hands to several modules (CoaT's `shared_cpe=self.cpe1` given
to every block of a stage), or that the class calls at several sites or in a loop (a block
applied twice, its weights shared on purpose): the same instance runs at each of those sites,
so a module migrator created inside its class would run at every one of them — a reused module
the original did not have. Ops of such a class are left as is (MIG117)."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from migrator.rewrite.context import MANY, FileContext, self_attr
from migrator.rewrite.family import Family
from migrator.rewrite.helper_modules import existing_twins
from migrator.rewrite.helpers import op_labels
from migrator.rewrite.paths import most_runs
from migrator.rewrite.project import ClassInfo
from migrator.rewrite.runs import reach
from migrator.rewrite.walk import Visit, all_nodes


_ASSIGNS_AND_CALLS = frozenset({ast.Assign, ast.Call})
_HANDING = frozenset(
    {
        ast.Name,
        ast.Call,
        ast.Assign,
        ast.AnnAssign,
        ast.List,
        ast.Tuple,
        ast.Set,
        ast.BinOp,
        ast.Dict,
    }
)
"""The node classes `_handed_locals` reads how names are bound and handed on from."""
_PRODUCTS = frozenset({ast.BinOp})
_ASSIGNS = frozenset({ast.Assign})


def find_shared(ctx: FileContext, family: Family) -> None:
    """Record in `ctx.shared` why each class of this file is shared (by qualified name), and
    report an instance of a class of another file handed around here (MIG117 at the hand-over:
    that file's analysis cannot see it)."""
    for cls in ctx.info.classes.values():
        init = cls.methods().get("__init__")
        if init is None:
            continue
        made: dict[str, str] = {}
        values: dict[str, ast.Call] = {}
        passed: dict[str, list[tuple[ast.Attribute, str]]] = {}
        """Attribute -> where it is handed on, each with how it repeats there ('': it does not)."""
        for visit in ctx.visits_of(init, _ASSIGNS_AND_CALLS):
            node = visit.node
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and self_attr(node.targets[0])
                and isinstance(node.value, ast.Call)
                and (qualname := ctx.info.names.resolve(node.value.func))
                and not qualname.startswith("torch.")
                and ctx.project.find_class(qualname, ctx.info) is not None
            ):
                made[node.targets[0].attr] = qualname
                values[node.targets[0].attr] = node.value
            elif isinstance(node, ast.Call) and not _reads_only(ctx, node.func, init):
                for value, again in _items([*node.args, *(k.value for k in node.keywords)]):
                    if isinstance(value, ast.Attribute) and self_attr(value):
                        passed.setdefault(value.attr, []).append(
                            (value, _repeats(visit.repeated, again))
                        )
        stateless = {a for a in made if ctx.project.value_stateless(values[a], ctx.info)}
        called = _called(ctx, cls, family, set(made), stateless) if made else {}
        for name, (qualname, node, how) in _handed_locals(ctx, init).items():
            why = f"`{name}` of `{cls.name}.__init__` is handed {how} at line {node.lineno}"
            _note(ctx, qualname, node, why)
        for qualname, node in _repeated_in_literals(ctx, init):
            why = f"`{cls.name}.__init__` repeats one instance in a sequence at line {node.lineno}"
            _note(ctx, qualname, node, why)
        for attr, qualname in made.items():
            uses = passed.get(attr, [])
            if uses and (len(uses) > 1 or uses[0][1]):
                node = uses[0][0]
                how = uses[0][1] or f"to {len(uses)} modules"
                why = f"`self.{attr}` of `{cls.name}` is handed {how} at line {node.lineno}"
            elif attr in called and (
                called[attr][1] >= MANY or attr not in stateless
            ):  # a stateless module called at several sites is split: each gets its own
                node, times = called[attr]
                if times >= MANY and _twin_elsewhere(ctx, qualname):
                    continue  # one module serving every iteration of an input-dependent loop
                how = "in a loop" if times >= MANY else f"{times} times per forward"
                why = f"`self.{attr}` of `{cls.name}` is called {how} (line {node.lineno})"
            else:
                continue
            _note(ctx, qualname, node, why)
    _share_held(ctx)


def _twin_elsewhere(ctx: FileContext, qualname: str) -> bool:
    """Whether `qualname` is a class `fix` made of another file's helper: an instance of it
    called in a loop is one `fix` made to serve every iteration of an input-dependent loop (a
    loop of fixed trips gets one an iteration, `self.<name>[i]`), as for a helper of this file."""
    cls = ctx.project.find_class(qualname, ctx.info)
    return (
        cls is not None
        and cls.file is not ctx.info
        and cls.name in existing_twins(cls.file).values()
    )


def _share_held(ctx: FileContext) -> None:
    """Mark shared, in turn, the classes of this file whose instances a shared class's
    `__init__` builds (`self.head = Head()`): they run wherever it runs."""
    todo = list(ctx.shared)
    while todo:
        holder = ctx.project.find_class(todo.pop(), ctx.info)
        init = holder.methods().get("__init__") if holder is not None else None
        if holder is None or init is None:
            continue
        for node in all_nodes(init):
            qualname = ctx.info.names.resolve(node.func) if isinstance(node, ast.Call) else None
            if (
                qualname
                and qualname not in ctx.shared
                and qualname.rsplit(".", 1)[0] == ctx.info.names.module
                and qualname in {c.qualname for c in ctx.info.classes.values()}
            ):
                ctx.shared[qualname] = (
                    f"{ctx.shared[holder.qualname]}, and `{holder.name}` holds it"
                )
                todo.append(qualname)


def _note(ctx: FileContext, qualname: str, node: ast.expr, why: str) -> None:
    """Record that instances of `qualname` are shared (`why`), or report it at `node` when
    the class is in another file."""
    if qualname.rsplit(".", 1)[0] == ctx.info.names.module:
        ctx.shared.setdefault(qualname, why)
    elif _has_ops(ctx, ctx.project.find_class(qualname, ctx.info)):
        ctx.report(
            node,
            "MIG117",
            f"{why}: ops migrator turns into modules inside "
            f"`{qualname}` would run at each of their call sites; "
            "give each its own instance",
        )


def _repeats(looped: bool, again: bool) -> str:
    """How a hand-over repeats ('': it does not)."""
    if looped:
        return "to modules built in a loop"
    return "repeated in a sequence" if again else ""


def _items(values: list[ast.expr]) -> list[tuple[ast.expr, bool]]:
    """`values`, with the items of the lists and tuples among them (`[self.a, self.b]`), each
    with whether a multiplication repeats it (`[self.a] * 3`)."""
    found: list[tuple[ast.expr, bool]] = []
    for value in values:
        value = value.value if isinstance(value, ast.Starred) else value
        again = isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult)
        sides = [value.left, value.right] if isinstance(value, ast.BinOp) and again else [value]
        found.append((value, False))
        for side in sides:
            for item in side.elts if isinstance(side, (ast.List, ast.Tuple)) else []:
                found += [(each, again or repeats) for each, repeats in _items([item])]
    return found


def _handed_locals(ctx: FileContext, init: ast.FunctionDef) -> dict[str, tuple[str, ast.Name, str]]:
    """The local names `init` binds once, outside loops, to an instance of a class of the
    project (`head = Head()`) and then hands on more than once, or in a loop or a repeated
    sequence (`[head] * 3`), as an argument (but to `_READERS`), a value assigned or an element
    of a literal (`Mid(head)` twice, or `self.head = head` and `Mid(head)`): name -> (the
    class's qualified name, the first hand-over, how it is handed on)."""
    made: dict[str, str] = {}
    for visit in ctx.visits_of(init, _ASSIGNS):
        node = visit.node
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(target := node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and not visit.repeated
            and (qualname := ctx.info.names.resolve(node.value.func))
            and not qualname.startswith("torch.")
            and ctx.project.find_class(qualname, ctx.info) is not None
        ):
            made[target.id] = qualname
    if not made:
        return {}  # most `__init__`s: no need to read how each name is bound and handed on
    visits = ctx.visits_of(init, _HANDING)
    bound: dict[str, int] = {}
    handed: set[int] = set()
    repeated: set[int] = set()
    for visit in visits:
        node = visit.node
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound[node.id] = bound.get(node.id, 0) + 1
        elif isinstance(node, ast.Call) and not _reads_only(ctx, node.func, init):
            handed.update(id(value) for value in [*node.args, *(k.value for k in node.keywords)])
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            handed.add(id(node.value))
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            handed.update(map(id, node.elts))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # `[head] * 3`
            for side in (node.left, node.right):
                repeated.update(
                    map(id, side.elts if isinstance(side, (ast.List, ast.Tuple)) else [])
                )
        elif isinstance(node, ast.Dict):
            handed.update(map(id, node.values))
    uses: dict[str, list[tuple[ast.Name, bool]]] = {}
    for visit in visits:
        node = visit.node
        if (
            isinstance(node, ast.Name)
            and node.id in made
            and bound[node.id] == 1
            and id(node) in handed
        ):
            uses.setdefault(node.id, []).append((node, visit.repeated or id(node) in repeated))
    return {
        name: (made[name], found[0][0], "in a loop" if found[0][1] else f"{len(found)} times")
        for name, found in uses.items()
        if len(found) > 1 or found[0][1]
    }


def _repeated_in_literals(ctx: FileContext, init: ast.FunctionDef) -> list[tuple[str, ast.expr]]:
    """The classes of the project whose instance `init` repeats by multiplying a list or
    tuple holding it (`[Mid()] * 3`: one instance, three items), with the element."""
    found = []
    for visit in ctx.visits_of(init, _PRODUCTS):
        node = visit.node
        if not isinstance(node, ast.BinOp) or not isinstance(node.op, ast.Mult):
            continue
        for side in (node.left, node.right):
            for item in side.elts if isinstance(side, (ast.List, ast.Tuple)) else []:
                value = item.value if isinstance(item, ast.Starred) else item
                if not isinstance(value, ast.Call):  # a class itself (`[Block] * 3`) or a name
                    continue
                qualname = ctx.info.names.resolve(value.func)
                if (
                    qualname
                    and not qualname.startswith("torch.")
                    and ctx.project.find_class(qualname, ctx.info) is not None
                ):
                    found.append((qualname, item))
    return found


def _has_ops(ctx: FileContext, cls: ClassInfo | None, depth: int = 0) -> bool:
    """Whether a method of `cls` (in another file), or of a class of the project its `__init__`
    builds a submodule of (`self.head = Head()`, three levels deep), has an op migrator would
    turn into a module (migrator's own op modules are never rewritten)."""
    if cls is None or "\n__migrator_ops__ = True" in (cls.file.source or ""):
        return False
    if any(
        op_labels(cls.file, method) for name, method in cls.methods().items() if name != "__init__"
    ):
        return True
    init = cls.methods().get("__init__")
    if init is None or depth >= 3:
        return False
    return any(
        isinstance(node, ast.Call)
        and (qualname := cls.file.names.resolve(node.func))
        and not qualname.startswith("torch.")
        and _has_ops(ctx, ctx.project.find_class(qualname, cls.file), depth + 1)
        for node in all_nodes(init)
    )


def _called(
    ctx: FileContext, cls: ClassInfo, family: Family, attrs: set[str], stateless: set[str]
) -> dict[str, tuple[ast.Attribute, int]]:
    """Each of `attrs` that the methods on the forward path of `cls` call more than once on one
    path through them (calls in exclusive branches count once) or in a loop, with its first
    call and how many times it runs. One call of a `stateless` one that only loops whose trip
    count depends on the input repeat, in a method run once per forward, counts once: one
    module serves every iteration of them, as an op there does (`input_iterations`)."""
    runs = reach(ctx, cls, family)
    methods = cls.methods()
    calls: dict[str, dict[str, list[tuple[ast.Attribute, Visit]]]] = {}
    for name in runs:
        for node, visit in ctx.call_visits(methods[name]):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("forward", "__call__"):
                func = func.value  # `self.block.forward(x)` runs the block too
            if self_attr(func) and func.attr in attrs:
                calls.setdefault(func.attr, {}).setdefault(name, []).append((func, visit))
    counted: dict[str, tuple[ast.Attribute, int]] = {}
    for attr, by_method in calls.items():
        sites = [(name, func, visit) for name, each in by_method.items() for func, visit in each]
        name, func, visit = sites[0]
        if (
            attr in stateless
            and len(sites) == 1
            and runs[name] == 1
            and input_iterations(ctx, family, cls, methods[name], 1, [(func, visit)]) == 1
        ):
            continue
        looped = [func for _, func, visit in sites if visit.repeated]
        times = MANY if looped else 0
        for name, each in by_method.items():
            times += most_runs(methods[name], [func for func, _ in each])
        if times > 1:
            counted[attr] = (looped[0] if looped else func, min(times, MANY))
    return counted


def input_iterations(
    ctx: FileContext,
    family: Family,
    holder: ClassInfo,
    method: ast.FunctionDef,
    times: int,
    found: Sequence[tuple[ast.AST, Visit]],
) -> int:
    """How many times the calls `found` in `method` of `holder` (which runs `times` per
    forward) run per forward, each iteration of a loop whose trip count depends on the input
    counted as one: `times` for one call that only such loops repeat (`LoopCopies.input_only`),
    else many."""
    from migrator.rewrite.attributes import ClassAttributes  # which reads the class analysis
    from migrator.rewrite.hyper import HyperParameters
    from migrator.rewrite.loops import LoopCopies

    if len(found) != 1:
        return MANY
    attributes = ClassAttributes(ctx, holder, family)
    hyper = HyperParameters(ctx, attributes)
    loops = LoopCopies(ctx, method, attributes, hyper, ctx.locals_of(method))
    return times if loops.input_only(found[0][1]) else MANY


_READERS = frozenset(
    {"len", "isinstance", "enumerate", "zip", "iter", "min", "max", "range", "type", "hasattr"}
)
"""Builtins that read what they are given and keep none of it."""


def _reads_only(ctx: FileContext, func: ast.expr, init: ast.FunctionDef) -> bool:
    """Whether `func` is such a builtin (`len(self.blocks)` hands the blocks to no module)."""
    return (
        isinstance(func, ast.Name)
        and func.id in _READERS
        and ctx.info.names.is_free(func.id)
        and func.id not in ctx.locals_of(init)
    )
