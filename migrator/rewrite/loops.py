"""Loops whose trip count is fixed at `__init__` time: an op or a stateless module called in
such a loop gets one copy per iteration, in an `nn.ModuleList` indexed by the loop's index.

A loop qualifies when it is `for i in range(n)` or `for i, ... in enumerate(<containers>)`,
with `n` a hyper-parameter fixed at `__init__` time or `len(self.<container>)`, and a container
an `nn.ModuleList`, `nn.Sequential`, list or tuple assigned in `__init__` that only `__init__`
can grow (also through a local name bound once to it; other iterables zipped with it only
shorten the run). A loop over run-time data qualifies too when every iteration reads such a
container with the loop's index before it can end: an iteration past it fails in the original
as it would in the copies. Its index is not rebound in the body, so each
iteration calls the copy at its own index; `break` and `continue` only leave copies unused
(copies are indistinguishable). A loop over `_` gets a fresh index name; a loop over containers
(`for blk in self.blocks`) gets one from `enumerate`. A `for` clause of a comprehension is such
a loop too (an `if` clause, like `break`, only leaves copies unused).

A loop whose trip count depends on the input (per image, per feature map of a list argument)
can index no copies: one module serves every iteration (`Copies.shared`), which a stateless
module does with the same outputs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TypeGuard

from migrator.refusal import Refusal
from migrator.rewrite.attributes import ClassAttributes, InitAttr
from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.hyper import HyperParameters
from migrator.rewrite.inplace import unnamed_binds
from migrator.rewrite.plan import Replace, ReplaceKind
from migrator.rewrite.project import ClassInfo
from migrator.rewrite.stores import READS, stores_of
from migrator.rewrite.walk import Loop, Visit, all_nodes, child_nodes, header_lines, repeats

_CONTAINERS = frozenset(
    {
        "torch.nn.ModuleList",
        "torch.nn.Sequential",
        "torch.nn.modules.container.ModuleList",
        "torch.nn.modules.container.Sequential",
    }
)
_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
_GROWS = frozenset({"append", "extend", "insert", "add_module", "register_module"})
"""Methods of a container that add modules to it."""
_INDEX_NAMES = ("i", "j", "k", "idx", "n", "m")
_CATCHING = (ast.Try, ast.TryStar, ast.With, ast.AsyncWith)
"""Statements that may catch an exception raised in their body."""
_SEQUENCES = frozenset({"list", "List", "tuple", "Tuple"})
"""Return annotations of a method whose result has a length iterating it gives."""


class _FromInput(Refusal):
    """A loop's trip count depends on the input: no copies can be counted."""


@dataclass(frozen=True)
class Trips:
    """How one loop runs its copies."""

    index: str
    """The loop's index variable."""
    count: str
    """Its trip count, as `__init__` can compute it."""
    over: str
    """What `__init__` iterates to make a copy an iteration: `range(<count>)`, or the
    container itself (`len(...)` would read as handing it to a module: MIG117)."""
    deps: frozenset[str]
    """`self` attributes the count reads."""
    floor: int
    """Top-level `__init__` statement after which the count is final."""
    rename: ast.Name | None = None
    """The `_` target that becomes `index`."""
    enumerates: ast.expr | None = None
    """The target of a loop over a container that becomes `index, <target>`, its iterable
    wrapped in `enumerate`."""
    within: InitAttr | None = None
    """The one assignment of the container that counts the copies, in a block of `__init__`
    (its other assignments give None): the copies go right after it, in that block."""


@dataclass(frozen=True)
class Copies:
    """One copy per iteration of each loop of a nest (outermost first)."""

    trips: tuple[Trips, ...]
    shared: tuple[tuple[Loop, str], ...] = ()
    """The loops of the nest whose trip count depends on the input (with why), which one
    module serves every iteration of."""

    @property
    def subscript(self) -> str:
        return "".join(f"[{t.index}]" for t in self.trips)

    @property
    def deps(self) -> set[str]:
        return set().union(*(t.deps for t in self.trips))

    @property
    def floor(self) -> int:
        return max(t.floor for t in self.trips)

    @property
    def within(self) -> InitAttr | None:
        return next((t.within for t in self.trips if t.within is not None), None)

    def build(self, ctor: str, container: str) -> str:
        """`container([ctor for _ in <what __init__ iterates>])`, nested as the loops are."""
        for trips in reversed(self.trips):
            ctor = f"{container}([{ctor} for _ in {trips.over}])"
        return ctor

    def describe(self) -> str:
        return " x ".join(t.count for t in self.trips)


class LoopCopies:
    """Which loops of one method can index copies, and the loop headers given an index."""

    def __init__(
        self,
        ctx: FileContext,
        method: ast.FunctionDef,
        attributes: ClassAttributes,
        hyper: HyperParameters,
        shadowed: set[str],
    ) -> None:
        self.ctx = ctx
        self.method = method
        self.attributes = attributes
        self.hyper = hyper
        self.shadowed = shadowed
        self._trips: dict[int, Trips | str] = {}
        self._input: set[int] = set()
        """The loops whose trip count depends on the input."""
        self._asked: set[int] = set()
        """The loops `input_only` analysed (its index names are not kept: no copies)."""
        self._indexed: set[int] = set()
        self._used: set[str] | None = None
        self._clauses: dict[int, ast.expr] | None = None
        self._inputs: dict[str, str] | None = None
        self._aliases: dict[str, str] | None = None
        self._via: dict[str, str] = {}
        """Local name -> the value it is bound to from an argument (`len(image_shapes)`)."""
        self._nested: dict[str, InitAttr] = {}
        """Container attribute -> its one assignment in a block of `__init__` (`_container`)."""

    def copies(self, visit: Visit) -> Copies:
        """The copies a call at `visit` needs; raises a MIG105 refusal when it runs repeatedly
        in a way no copies can follow, with why the loop cannot index them."""
        if visit.repeater is not None:
            raise Refusal("MIG105", repeats(visit.repeater))
        found: list[Trips] = []
        shared: list[tuple[Loop, str]] = []
        for loop in visit.loops:
            trips = self._trips.get(id(loop))
            if trips is None:
                try:
                    trips = self._analyse(loop, found)
                except _FromInput as why:
                    self._input.add(id(loop))
                    trips = why.message
                except Refusal as why:
                    trips = why.message
                self._trips[id(loop)] = trips
            if isinstance(trips, str) and id(loop) in self._input:
                shared.append((loop, trips))
            elif isinstance(trips, str):
                raise Refusal("MIG105", shared[0][1] if shared else trips)
            else:
                found.append(trips)
        copies = Copies(tuple(found), tuple(shared))
        within = copies.within
        if within is not None and any(
            t.within is not within and t.floor >= within.top_index for t in found
        ):
            raise Refusal(
                "MIG105",
                f"its copies would go right after `self.{within.name}` is built in a block of "
                "`__init__`, before the other loops' trip counts are known; left as is",
            )
        return copies

    def input_only(self, visit: Visit) -> bool:
        """Whether what repeats `visit`'s node is only loops whose trip count depends on the
        input."""
        if visit.repeater is not None or not visit.loops:
            return False
        for loop in visit.loops:
            if id(loop) not in self._trips and id(loop) not in self._asked:
                self._asked.add(id(loop))
                try:
                    self._analyse(loop, [])
                except _FromInput:
                    self._input.add(id(loop))
                except Refusal:
                    pass
            if id(loop) not in self._input:
                return False
        return True

    def commit(self, copies: Copies) -> None:
        """Give the loops that now index copies their index: rename a `_` target, or
        enumerate a container."""
        for trips in copies.trips:
            headers: list[tuple[ReplaceKind, ast.expr | None]] = [
                ("name", trips.rename),
                ("enumerate", trips.enumerates),
            ]
            for kind, node in headers:
                if node is not None and id(node) not in self._indexed:
                    self._indexed.add(id(node))
                    self.ctx.plan.replaces.append(
                        Replace(kind, self.ctx.positions.span(node), trips.index)
                    )

    def _analyse(self, loop: Loop, outer: list[Trips]) -> Trips:
        """How `loop` runs copies; raises a refusal (without code) saying why it cannot."""
        shown = self.ctx.text(loop.iter)
        call = loop.iter
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id in ("range", "enumerate")
            and self._builtin(call.func.id)
            and len(call.args) == 1
            and not call.keywords
            and not isinstance(call.args[0], ast.Starred)
        ):
            if self._container_iter(loop.iter) and self._builtin("enumerate"):
                self._header_changes(loop)
                count, deps, floor, over = self._length(loop.iter)
                index = self._fresh([t.index for t in outer])
                return Trips(
                    index,
                    count,
                    over,
                    frozenset(deps),
                    floor,
                    enumerates=loop.target,
                    within=self._within(deps),
                )
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id in ("range", "enumerate")
            ):
                raise self._unfixed(
                    loop.iter, f"`{shown}` is not `range(n)` nor `enumerate(x)`, which count from 0"
                )
            if isinstance(loop.iter, (ast.Tuple, ast.List)):
                raise Refusal(None, f"no index picks a copy for each item of `{shown}`")
            raise self._unfixed(
                loop.iter, f"the trip count of `{shown}` is not fixed at `__init__` time"
            )
        target: ast.expr = loop.target
        if call.func.id == "enumerate":
            pair = target
            if not (isinstance(pair, ast.Tuple) and len(pair.elts) == 2):
                raise Refusal(None, f"`{self.ctx.text(target)}` is not `index, item`")
            target, rest = pair.elts[0], [pair.elts[1]]
        else:
            rest = []
        try:
            if call.func.id == "enumerate":
                count, deps, floor, over = self._length(call.args[0])
            else:
                count, deps, floor, over = self._range_count(call.args[0])
        except Refusal as why:
            bound = self._subscript_bound(loop, target)
            if bound is None:
                raise why from None
            count, deps, floor, over = bound
        if not isinstance(target, ast.Name):
            raise Refusal(None, f"its index `{self.ctx.text(target)}` is not a plain name")
        if target.id == "_":
            if any(
                isinstance(n, ast.Name) and n.id == "_" and isinstance(n.ctx, ast.Load)
                for n in ast.walk(self.method)
            ):
                raise Refusal(None, "the method reads `_`")
            self._header_changes(loop)
            index = self._fresh([t.index for t in outer])
            return Trips(
                index, count, over, frozenset(deps), floor, rename=target, within=self._within(deps)
            )
        inside = [*loop.body, *rest] if isinstance(loop, ast.For) else [self._comprehension(loop)]
        if any(
            _binds(n, target.id) and n is not target for s in inside for n in ast.walk(s)
        ) or any(
            isinstance(n, (ast.Global, ast.Nonlocal)) and target.id in n.names
            for n in ast.walk(self.method)
        ):
            raise Refusal(None, f"its index `{target.id}` is rebound in the loop")
        return Trips(target.id, count, over, frozenset(deps), floor, within=self._within(deps))

    def _within(self, deps: set[str]) -> InitAttr | None:
        """The assignment in a block of `__init__` of the container among `deps` that counts
        the copies (`_container` accepted it); a refusal when several such containers, or
        another one made after it, count them."""
        nested = [self._nested[d] for d in deps if d in self._nested]
        if not nested:
            return None
        within = nested[0]
        attrs = self.attributes.attrs
        if len(nested) > 1 or any(
            attrs[d].top_index >= within.top_index for d in deps if d not in self._nested
        ):
            raise Refusal(
                None,
                f"`self.{within.name}` is built in a block of `__init__`, and the other "
                "containers that count the copies are not all built before it",
            )
        return within

    def _header_changes(self, loop: Loop) -> None:
        """Raise a refusal when the loop's header, which must change to give it an index, is
        under `# migrator: skip`."""
        if isinstance(loop, ast.For):
            lines = header_lines(loop)
        else:
            assert loop.iter.end_lineno is not None  # parsed: set
            lines = range(loop.target.lineno, loop.iter.end_lineno + 1)
        if self.ctx.skip.intersection(lines):
            raise Refusal(None, "it needs an index, and its header is under `# migrator: skip`")

    def _comprehension(self, clause: ast.comprehension) -> ast.expr:
        """The comprehension whose `for` clause `clause` is."""
        if self._clauses is None:
            self._clauses = {
                id(c): node
                for node in ast.walk(self.method)
                if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
                for c in node.generators
            }
        return self._clauses[id(clause)]

    def _range_count(self, value: ast.expr) -> tuple[str, set[str], int, str]:
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "len"
            and self._builtin("len")
            and len(value.args) == 1
            and not value.keywords
        ):
            return self._length(value.args[0])
        try:
            text, deps = self.hyper.resolve(value, self.shadowed)
        except Refusal as why:
            raise self._unfixed(
                value,
                f"its trip count `{self.ctx.text(value)}` is not fixed at `__init__` time "
                f"({why.message})",
                counted=True,
            ) from None
        return text, deps, 0, f"range({text})"

    def _length(self, value: ast.expr) -> tuple[str, set[str], int, str]:
        """`len(...)` of a container attribute, or of `zip(...)` of several, as `__init__`
        computes it once it has built them. In a `zip`, other iterables can only shorten
        the run (copies left unused), so the containers bound it."""
        parts = [value]
        if _zip(value) and self._builtin("zip"):
            parts = list(value.args)
        floor = 0
        attrs: list[str] = []
        refused: Refusal | None = None
        for part in parts:
            attr = part.attr if self_attr(part) else self._alias(part)
            if attr is None:
                continue
            try:
                floor = max(floor, self._container(attr))
            except Refusal as why:
                refused = refused or why
                continue
            attrs.append(attr)
        if not attrs:
            raise (
                refused
                or self._from_input(value)
                or Refusal(
                    None, f"the length of `{self.ctx.text(value)}` is not fixed at `__init__` time"
                )
            )
        lengths = [f"len(self.{attr})" for attr in attrs]
        if len(lengths) > 1 and not self._init_builtin("min"):
            raise Refusal(None, "`min` is not the builtin in `__init__`")
        if not self._init_builtin("len"):
            raise Refusal(None, "`len` is not the builtin in `__init__`")
        if len(lengths) == 1:
            return lengths[0], set(attrs), floor, f"self.{attrs[0]}"
        count = f"min({', '.join(lengths)})"
        return count, set(attrs), floor, f"range({count})"

    def _container(self, attr: str) -> int:
        """The top-level `__init__` statement after which `self.<attr>`, an nn.ModuleList or
        nn.Sequential built in `__init__`, keeps its length; raises a refusal when nothing
        proves that it does."""
        info = self.attributes.attrs.get(attr)
        if info is None:
            raise Refusal(None, f"`self.{attr}` is not assigned in this class's `__init__`")
        kept: set[int] = set()
        if info.nested or info.count > 1:
            info, kept = self._conditional(attr)
        if not self._sized(info.value):
            raise Refusal(
                None, f"`self.{attr}` is not a list, tuple, nn.ModuleList or nn.Sequential"
            )
        floor = info.top_index
        init = self.attributes.init
        family = self.attributes.family
        cls = self.attributes.cls
        subclasses = family.subclasses_in_file(cls)
        for sub in subclasses:  # grows while it is walked: their own subclasses too
            subclasses += [s for s in family.subclasses_in_file(sub) if s not in subclasses]
        for sub in [*subclasses, *family.subclasses_elsewhere(cls)]:
            for method in sub.methods().values():
                if any(
                    self_attr(n) and n.attr == attr and not isinstance(n.ctx, ast.Load)
                    for n in all_nodes(method)
                ) or any(_grows(n, attr) for n in all_nodes(method)):
                    raise Refusal(None, f"`self.{attr}` is changed in subclass `{sub.name}`")
        for name, method in self.attributes.methods.items():
            parents = {id(child): node for node in all_nodes(method) for child in child_nodes(node)}
            for node in all_nodes(method):
                if not (self_attr(node) and node.attr == attr):
                    continue
                parent = parents.get(id(node))
                if (
                    isinstance(node.ctx, ast.Store)
                    and node is not _target(info.stmt, attr)
                    and id(node) not in kept
                ):
                    if not (
                        _truncation(parent, attr) or self._emptied(parent) or _remade(parent, attr)
                    ):
                        raise Refusal(None, f"`self.{attr}` is reassigned in `{name}`")
                elif (
                    isinstance(parent, ast.Subscript)
                    and not isinstance(parent.ctx, ast.Load)
                    and isinstance(parent.slice, ast.Slice)
                ):
                    raise Refusal(None, f"`self.{attr}` may grow in `{name}`")
                elif isinstance(parent, ast.Attribute) and parent.attr in _GROWS:
                    if method is not init or kept:
                        raise Refusal(None, f"`self.{attr}` may grow in `{name}`")
                    assert init is not None  # `method` is it
                    floor = max(floor, _top_index(init, node))
                elif isinstance(parent, ast.AugAssign) and parent.target is node:
                    raise Refusal(None, f"`self.{attr}` may grow in `{name}`")
        for sub in [cls, *subclasses, *family.subclasses_elsewhere(cls)]:
            if (store := _indirect_store(sub, attr)) is not None:
                raise Refusal(None, f"`self.{attr}` may change: {store}")
        if kept:
            self._nested[attr] = info
        return floor

    def _conditional(self, attr: str) -> tuple[InitAttr, set[int]]:
        """The one assignment of a container to `self.<attr>` in a block of `__init__` (an
        `if` arm, a loop), when its other assignments there give None, and the ids of their
        targets; raises a refusal otherwise. Copies made right after it exist whenever the
        container does; where it is None or unset, iterating it fails in both models."""
        init = self.attributes.init
        assert init is not None  # it assigns `self.<attr>`
        refused = Refusal(None, f"`self.{attr}` is assigned conditionally or repeatedly")
        cls = self.attributes.cls
        if any(b not in _MODULE for b in cls.bases) or any(
            isinstance(n, ast.Name) and n.id == attr and not isinstance(n.ctx, ast.Load)
            for stmt in cls.node.body
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
            for n in ast.walk(stmt)
        ):
            raise refused  # a base or the class body may give it a value the arm leaves
        stores = [
            n
            for n in all_nodes(init)
            if self_attr(n) and n.attr == attr and not isinstance(n.ctx, ast.Load)
        ]
        assigns = [
            (top, stmt)
            for top, stmt in _block_statements(init)
            if isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and self_attr(stmt.targets[0])
            and stmt.targets[0].attr == attr
        ]
        sized = [
            (top, stmt)
            for top, stmt in assigns
            if not (isinstance(stmt.value, ast.Constant) and stmt.value.value is None)
        ]
        if len(assigns) != len(stores) or len(sized) != 1:
            raise refused
        top, stmt = sized[0]
        info = InitAttr(attr, stmt, stmt.value, top, nested=True)
        return info, {id(s.targets[0]) for _, s in assigns}

    def _sized(self, value: ast.expr) -> bool:
        """Whether `value`, assigned in `__init__`, is a container whose length iterating it
        gives: a list or tuple display or comprehension, `list(...)` or `tuple(...)`, an
        nn.ModuleList or nn.Sequential, or what a method annotated `-> list[...]` (`tuple`)
        returns."""
        if isinstance(value, (ast.List, ast.Tuple, ast.ListComp)):
            return True
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, ast.Name) and func.id in ("list", "tuple"):
            return self._init_builtin(func.id)
        if self_attr(func):
            method = self.attributes.methods.get(func.attr)
            returns = method.returns if method is not None else None
            if isinstance(returns, ast.Subscript):
                returns = returns.value
            return isinstance(returns, ast.Name) and returns.id in _SEQUENCES
        return self.ctx.info.names.resolve(func) in _CONTAINERS

    def _emptied(self, parent: ast.AST | None) -> bool:
        """`self.<attr> = []` (or `()`, `nn.ModuleList()`): what is left is never longer."""
        if not isinstance(parent, ast.Assign) or len(parent.targets) != 1:
            return False
        value = parent.value
        if isinstance(value, (ast.List, ast.Tuple)):
            return not value.elts
        return (
            isinstance(value, ast.Call)
            and not value.args
            and not value.keywords
            and self.ctx.info.names.resolve(value.func) in _CONTAINERS
        )

    def _container_iter(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Call):
            return _zip(value) and any(
                self_attr(a) or self._alias(a) is not None for a in value.args
            )
        return self_attr(value) or self._alias(value) is not None

    def _alias(self, value: ast.expr) -> str | None:
        """`<attr>` when `value` is a local name the method binds once, to `self.<attr>`, and
        never grows (`blocks = self.blocks`)."""
        if not isinstance(value, ast.Name):
            return None
        if self._aliases is None:
            self._aliases = {}
            binders: dict[str, list[ast.AST]] = {}
            assigns: dict[int, ast.expr] = {}
            for node in all_nodes(self.method):
                for name in _bound_names(node):
                    binders.setdefault(name, []).append(node)
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    assigns[id(node.targets[0])] = node.value
            for name, nodes in binders.items():
                bound = assigns.get(id(nodes[0]))
                if (
                    len(nodes) == 1
                    and self_attr(bound)
                    and not any(_grows_name(n, name) for n in all_nodes(self.method))
                ):
                    self._aliases[name] = bound.attr
        return self._aliases.get(value.id)

    def _subscript_bound(
        self, loop: Loop, index: ast.expr
    ) -> tuple[str, set[str], int, str] | None:
        """The length of `self.<attr>` when every iteration of `loop` reads `self.<attr>[i]`
        with its index `i` before anything can end the iteration: an iteration past its length
        fails in the original as it would in the copies (None: no such read). A loop inside a
        `try` or `with` (which may suppress it) could catch that failure after different work,
        so it gets none."""
        if not (isinstance(loop, ast.For) and isinstance(index, ast.Name)):
            return None
        if any(
            isinstance(node, _CATCHING) and _holds(node, loop) for node in ast.walk(self.method)
        ):
            return None
        for stmt in loop.body:
            for node in _always_run(stmt):
                if (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.ctx, ast.Load)
                    and self_attr(node.value)
                    and isinstance(node.slice, ast.Name)
                    and node.slice.id == index.id
                ):
                    try:
                        return self._length(node.value)
                    except Refusal:
                        continue
            if any(isinstance(n, (ast.Break, ast.Continue, ast.Return)) for n in ast.walk(stmt)):
                return None
        return None

    def _unfixed(self, value: ast.expr, message: str, counted: bool = False) -> Refusal:
        """A refusal saying which argument of the method the trip count `value` depends on,
        or else with `message`."""
        return self._from_input(value, counted) or Refusal(None, message)

    def _from_input(self, value: ast.expr, counted: bool = False) -> _FromInput | None:
        """A refusal saying which argument of the method the trip count `value` depends on
        (run-time data: no copies can be counted), if it reads one."""
        if isinstance(value, (ast.Tuple, ast.List)) and not any(
            isinstance(e, ast.Starred) for e in value.elts
        ):
            return None  # `for t in (a, b)`: as many trips as items, whatever they hold
        inputs = self._arguments()
        name = next((name for name in _reads(value) if name in inputs), None)
        if name is None:
            return None
        argument = inputs[name]
        of = f"argument `{argument}` of `{self.method.name}`"
        if name != argument:
            what = f"`{name}` comes from {of} (`{self._via[name]}`)"
        elif counted and isinstance(value, ast.Name):
            what = f"the value of {of}"
        elif not counted and (items := _iterated(value, name)) is not None:
            shown = of if isinstance(items, ast.Name) else f"`{self.ctx.text(items)}`, of {of}"
            what = f"the number of items in {shown}"
        else:
            what = of
        return _FromInput(
            None,
            f"the trip count of `{self.ctx.text(value)}` depends on the input: {what}; no "
            "container fixed at `__init__` bounds it (zipped, enumerated, or indexed with the "
            "loop's index in every iteration)",
        )

    def _arguments(self) -> dict[str, str]:
        """Local name -> the argument of the method its value is computed from (the method's
        arguments, and names assigned from values that read one, in any order)."""
        if self._inputs is None:
            args = self.method.args
            params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
            params += [a for a in (args.vararg, args.kwarg) if a is not None]
            self._inputs = {p.arg: p.arg for p in params if p.arg != "self"}
            bindings = [
                (target, value, node)
                for node in all_nodes(self.method)
                for target, value in _bindings(node)
            ]
            changed = True
            while changed:
                changed = False
                for target, value, node in bindings:
                    inputs = self._inputs
                    source = next((inputs[n] for n in _reads(value) if n in inputs), None)
                    if source is None:
                        continue
                    for name in _stored(target):
                        if name not in inputs:
                            inputs[name] = source
                            self._via[name] = _binding_text(node, target, value)
                            changed = True
        return self._inputs

    def _builtin(self, name: str) -> bool:
        """Whether `name` in this method is the builtin."""
        return name not in self.shadowed and self.ctx.info.names.is_free(name)

    def _init_builtin(self, name: str) -> bool:
        init = self.attributes.init
        local = self.ctx.locals_of(init) if init is not None else set()
        return name not in local and self.ctx.info.names.is_free(name)

    def _fresh(self, taken: list[str]) -> str:
        """An index name the method does not use (nor an enclosing loop's index)."""
        if self._used is None:  # every identifier the method spells, whatever it names
            self._used = {
                value
                for node in all_nodes(self.method)
                for _, value in ast.iter_fields(node)
                if isinstance(value, str)
            }
            self._used |= self.shadowed
        used = self._used | set(taken)
        candidates = [*_INDEX_NAMES, *(f"i{n}" for n in range(1, len(used) + 2))]
        return next(c for c in candidates if c not in used and self.ctx.info.names.is_free(c))


def _zip(value: ast.expr) -> TypeGuard[ast.Call]:
    """`zip(a, b, ...)`, without keywords (`strict=`) nor `*` arguments."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "zip"
        and bool(value.args)
        and not value.keywords
        and not any(isinstance(a, ast.Starred) for a in value.args)
    )


def _reads(value: ast.AST) -> list[str]:
    """The names `value` reads, in a fixed order."""
    return [
        n.id for n in all_nodes(value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    ]


def _iterated(value: ast.expr, name: str) -> ast.expr | None:
    """What the loop over `value` takes the items of one by one, when it is `name` or an
    attribute of it (`name.sizes`): itself, in `zip(...)`, `enumerate(...)` or
    `range(len(...))`; None otherwise."""
    if isinstance(value, (ast.Name, ast.Attribute)):
        root: ast.expr = value
        while isinstance(root, ast.Attribute):
            root = root.value
        return value if isinstance(root, ast.Name) and root.id == name else None
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return None
    func, args = value.func.id, value.args
    if func in ("zip", "enumerate"):
        return next((a for a in args if _iterated(a, name) is not None), None)
    inner = args[0] if func == "range" and len(args) == 1 else None
    if (
        isinstance(inner, ast.Call)
        and isinstance(inner.func, ast.Name)
        and inner.func.id == "len"
        and len(inner.args) == 1
    ):
        return _iterated(inner.args[0], name)
    return None


def _binding_text(node: ast.AST, target: ast.AST, value: ast.AST) -> str:
    """How `node` binds `target` from `value`, as code cut to 60 characters: `n = len(xs)`,
    `xs.append(t)`, `for t in ts`."""
    if isinstance(node, ast.Call):
        text = ast.unparse(node)
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        text = f"for {ast.unparse(target)} in {ast.unparse(value)}"
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        text = f"with {ast.unparse(value)} as {ast.unparse(target)}"
    else:
        text = f"{ast.unparse(target)} = {ast.unparse(value)}"
    return text if len(text) <= 60 else text[:57] + "..."


def _stored(target: ast.AST) -> list[str]:
    return [n.id for n in all_nodes(target) if isinstance(n, ast.Name)]


def _bindings(node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs `node` binds: assignments, loops, `with ... as`, `:=`, and what
    `xs.append(...)` (`extend`, `insert`) adds to `xs`."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("append", "extend", "insert")
        and isinstance(node.func.value, ast.Name)
    ):
        return [(node.func.value, node)]
    if isinstance(node, ast.Assign):
        return [(t, node.value) for t in node.targets]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value:
        return [(node.target, node.value)]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [(node.target, node.iter)]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [(i.optional_vars, i.context_expr) for i in node.items if i.optional_vars]
    return []


def _block_statements(init: ast.FunctionDef) -> list[tuple[int, ast.stmt]]:
    """(top-level index, statement) of every statement of `__init__`, in the blocks of its
    compound statements too, but not in nested functions or classes."""
    found: list[tuple[int, ast.stmt]] = []
    for top, first in enumerate(init.body):
        todo = [first]
        while todo:
            stmt = todo.pop()
            found.append((top, stmt))
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(stmt, field, ()):
                    todo += (
                        child.body
                        if isinstance(child, (ast.ExceptHandler, ast.match_case))
                        else [child]
                    )
    return found


def _target(stmt: ast.stmt, attr: str) -> ast.expr | None:
    """The `self.<attr>` that the `__init__` assignment `stmt` assigns."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return next((t for t in targets if self_attr(t) and t.attr == attr), None)


def _binds(node: ast.AST, name: str) -> bool:
    """Whether `node` binds or deletes `name` in the scope it is in."""
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return node.name == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == name
    return False


def _indirect_store(cls: ClassInfo, attr: str) -> str | None:
    """A store into `self.<attr>` in a method of `cls` that does not read the attribute
    directly (through a local name, `getattr`, `vars(self)`, `self._modules`, `setattr`,
    `add_module`: `stores.stores_of`), which the walks above do not judge, described; not a
    deletion (`delattr(self, "blocks")`)."""
    direct: dict[str, set[tuple[int, int]]] = {}
    for name, method in cls.methods().items():
        direct[name] = {
            (n.lineno, n.col_offset) for n in all_nodes(method) if self_attr(n) and n.attr == attr
        }
    for store in stores_of(cls, attr):
        if (store.kind == "called" and store.call in READS) or store.deletes:
            continue  # iterating a deleted attribute fails in both models
        if (store.line, store.column) not in direct.get(store.method, set()):
            return store.describe(cls)
    return None


def _grows(node: ast.AST, attr: str) -> bool:
    """`self.<attr>.append(...)` and the other methods that add modules to a container."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr in _GROWS
        and self_attr(node.value)
        and node.value.attr == attr
    )


def _truncation(parent: ast.AST | None, attr: str) -> bool:
    """`self.<attr> = self.<attr>[a:b]`: what is left is never longer."""
    if not isinstance(parent, ast.Assign) or len(parent.targets) != 1:
        return False
    value = parent.value
    return (
        isinstance(value, ast.Subscript)
        and self_attr(value.value)
        and value.value.attr == attr
        and isinstance(value.slice, ast.Slice)
    )


def _top_index(init: ast.FunctionDef, node: ast.expr) -> int:
    for i, top in enumerate(init.body):
        assert top.end_lineno is not None  # parsed: set
        if top.lineno <= node.lineno <= top.end_lineno:
            return i
    return len(init.body) - 1


def _remade(parent: ast.AST | None, attr: str) -> bool:
    """`self.<attr> = [f(a) for a in self.<attr>]`: an item for each item, the same length."""
    if not isinstance(parent, ast.Assign) or len(parent.targets) != 1:
        return False
    value = parent.value
    return (
        isinstance(value, ast.ListComp)
        and len(value.generators) == 1
        and not value.generators[0].ifs
        and not value.generators[0].is_async
        and self_attr(value.generators[0].iter)
        and value.generators[0].iter.attr == attr
    )


def _bound_names(node: ast.AST) -> list[str]:
    """The names `node` binds or deletes (an argument, an assignment target, a `def`, ...)."""
    if isinstance(node, ast.Name):
        return [] if isinstance(node.ctx, ast.Load) else [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    return unnamed_binds(node)


def _grows_name(node: ast.AST, name: str) -> bool:
    """`<name>.append(...)` (a method adding items) or `<name>[a:b] = ...`."""
    if isinstance(node, ast.Attribute):
        return node.attr in _GROWS and isinstance(node.value, ast.Name) and node.value.id == name
    return (
        isinstance(node, ast.Subscript)
        and not isinstance(node.ctx, ast.Load)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
    )


def _holds(outer: ast.AST, inner: ast.AST) -> bool:
    return any(node is inner for node in ast.walk(outer))


def _always_run(stmt: ast.stmt) -> list[ast.AST]:
    """The nodes evaluated whenever `stmt` runs (not an arm of `a if c else b`, an operand of
    `and` / `or` after the first, a lambda's body, a comprehension's element or later clauses,
    nor the statements a compound statement holds)."""
    roots: list[ast.AST]
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)):
        roots = [stmt.value] if stmt.value is not None else []
    elif isinstance(stmt, (ast.If, ast.While)):
        roots = [stmt.test]
    elif isinstance(stmt, ast.For):
        roots = [stmt.iter]
    else:
        roots = []
    found: list[ast.AST] = []
    while roots:
        node = roots.pop()
        found.append(node)
        if isinstance(node, ast.IfExp):
            roots.append(node.test)
        elif isinstance(node, ast.BoolOp):
            roots.append(node.values[0])
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            roots.append(node.generators[0].iter)
        elif not isinstance(node, ast.Lambda):
            roots.extend(ast.iter_child_nodes(node))
    return found
