"""Modules called more than once per forward: each call site of a module attribute is recorded,
and a stateless module that runs at several sites is split into one copy a site."""

from __future__ import annotations

import ast
from collections.abc import Callable

from migrator.evidence import proved_by
from migrator.rewrite.attributes import ClassAttributes
from migrator.rewrite.project import ClassInfo
from migrator.refusal import Refusal
from migrator.rewrite.context import MANY, FileContext, Site
from migrator.rewrite.creation import ModuleCreator
from migrator.rewrite.loops import Copies, LoopCopies
from migrator.rewrite.paths import most_runs
from migrator.rewrite.placement import copy_can_follow
from migrator.rewrite.stores import (
    after_init,
    changed_after_init,
    changed_outside,
    first_change,
    subclasses_below,
)
from migrator.rewrite.plan import Replace
from migrator.rewrite.walk import all_nodes

WEIGHTS_SHARED = "holds parameters or buffers in every model built"
"""What MIG103 says of a module the run-time evidence proves holds weights: its sites share
them by design, so no split could be right (`benchmarks/zoo.py` counts such calls apart)."""


class ReusedModules:
    """The call sites of one class's module attributes, and the splitting of reused ones."""

    def __init__(
        self,
        ctx: FileContext,
        attributes: ClassAttributes,
        creator: ModuleCreator,
        holds_function: Callable[[str], tuple[object, object, bool] | None] = lambda a: None,
        holds_object: Callable[[str], bool] = lambda a: False,
    ) -> None:
        self.ctx = ctx
        self.attributes = attributes
        self.creator = creator
        self.holds_function = holds_function
        """(file, function, whether that is all it holds) of an attribute that may hold a
        function, no module (`SubmoduleSettings.held_function`): `object_methods` reports its
        calls."""
        self.holds_object = holds_object
        """Whether an attribute holds a plain object that no run makes a module
        (`object_methods.holds_plain_object`): its calls reuse no module."""
        self.sites: dict[str, list[Site]] = {}
        self.loops: dict[int, LoopCopies] = {}
        """The loops of each scanned method (by `id`)."""

    def add(self, site: Site) -> None:
        """Record a call of a module attribute on the forward path."""
        self.sites.setdefault(site.attr, []).append(site)

    def split(self) -> None:
        """Apply the rewrites pending on modules called once; split those called more often,
        or report why they cannot be."""
        # `self.b = self.a`: calls of b are a's
        for alias, target in self.attributes.aliases().items():
            if alias in self.sites:
                merged = self.sites.setdefault(target, []) + self.sites.pop(alias)
                self.sites[target] = sorted(
                    merged, key=lambda s: (s.func.lineno, s.func.col_offset)
                )
        for attr, sites in self.sites.items():
            times = _runs(sites)
            if times < 2:
                for site in sites:
                    if site.pending:
                        replace, node, message, op = site.pending
                        self.ctx.plan.replaces.append(replace)
                        self.ctx.report(node, "MIG001", message, op=op, attr=replace.attr)
                continue
            held = self.holds_function(attr)
            if isinstance(held, tuple) and held[2] or self.holds_object(attr):
                continue
            first = min(sites, key=lambda s: (s.func.lineno, s.func.col_offset)).func
            try:
                kind, proof = self._split_kind(attr, sites)
            except Refusal as refusal:
                self.ctx.refuse(first, refusal)
                continue
            if "MIG003" in self.ctx.disable:
                continue
            sites = sorted(sites, key=lambda s: not s.skipped)  # a skipped call keeps the name
            for site in sites:
                if self.ctx.suppressed(site.func, "MIG003"):  # marks the suppression used
                    self.ctx.report(
                        site.func, "MIG003", f"`self.{attr}`: split suppressed", op=f"self.{attr}"
                    )
            info = self.attributes.attrs.get(attr)
            keeps = not isinstance(sites[0].loop, Copies)  # the original serves one site
            for site in sites[int(keeps) :]:
                copies = site.loop if isinstance(site.loop, Copies) else None
                if info is None:  # created by a base class (`_inherited_kind`)
                    name = self.creator.copy_inherited(attr, site.key, guarded=bool(proof))
                else:
                    name = self.creator.copy(info, site.key, copies, guarded=bool(proof))
                index = ""
                where = f"at {len(sites)} sites: this one becomes `self.{name}`"
                if copies is not None:
                    assert site.method is not None  # scanned in a method
                    self.loops[id(site.method)].commit(copies)
                    index = copies.subscript
                    where = (
                        f"in a loop: this site becomes `self.{name}{index}`, one copy an "
                        f"iteration ({copies.describe()}) in an nn.ModuleList"
                    )
                self.ctx.plan.replaces.append(
                    Replace("rename", self.ctx.positions.span(site.func), name, index=index)
                )
                self.ctx.report(
                    site.func,
                    "MIG003",
                    f"`self.{attr}` ({kind}) is called {where}" + _proof_note(proof),
                    op=f"self.{attr}",
                    module=kind,
                    attr=name,
                )

    def _inherited_kind(
        self, attr: str, sites: list[Site], base: ClassInfo, where: str
    ) -> tuple[str, list[str]]:
        """`_split_kind` of a module a base class creates: each further site gets a copy of
        the instance the base built, made right after `super().__init__()` of this class's
        `__init__`. The base must assign it once, at the top level of its `__init__`, and
        nothing else may assign it or anything of it (in the base, this class or the classes
        between, nor a subclass); it must be proven stateless by its class or by run-time
        evidence; it must not run in a loop or in a method that runs several times."""
        created = f"{where} but is created in base class `{base.name}`"
        cls, family = self.attributes.cls, self.attributes.family
        if self.attributes.init is None or self.attributes.super_index is None:
            raise Refusal(
                "MIG104",
                f"{created}, and this class's `__init__` makes no top-level "
                "`super().__init__()` call to copy it after: give this class its own module "
                "for each site",
            )
        value = _created_once(base, attr)
        if value is None:
            raise Refusal(
                "MIG104",
                f"{created}, which does not assign it once, at the top level of its "
                "`__init__`: give this class its own module for each site",
            )
        above = [base, *family.ancestors(base)]
        between = [c for c in family.ancestors(cls) if c not in above]
        changed = (  # `__init__`s of the classes above `cls` run before the copy is made
            first_change([*above, *between], attr, after_init)
            or first_change([cls], attr)
            or first_change(self.below(), attr)
            or changed_outside(cls, attr)
            or changed_outside(base, attr)
        )
        if changed is not None:
            raise Refusal("MIG104", f"{created}, and {changed}: a copy would not follow")
        verdict = self.ctx.project.value_stateless(value, base.file)
        label = base.file.names.resolve(value.func) if isinstance(value, ast.Call) else None
        shown = ast.unparse(value.func if isinstance(value, ast.Call) else value)
        if verdict is False:
            raise Refusal(
                "MIG103",
                f"{created} and `{shown}` may hold parameters or buffers: copies would untie "
                "its weights; give each site its own module",
            )
        path = str(cls.file.path)
        proof = [] if verdict else self.ctx.project.evidence.stateless(path, cls.name, attr)
        if verdict is None and not proof:
            raise Refusal(
                "MIG104",
                f"{created} and the class of `{ast.unparse(value)}` cannot be known "
                "statically; split it by hand if it is stateless",
            )
        if any(s.times >= MANY or s.loop is not None for s in sites):
            raise Refusal(
                "MIG105",
                f"{created}: one module object serves every iteration, and copies of a "
                "module of a base class are not made in loops; left as is",
            )
        if any(1 < s.times < MANY for s in sites):
            raise Refusal(
                "MIG110", f"{where} inside a helper method that runs more than once per forward"
            )
        _refuse_aliased(sites, where)
        if sum(s.skipped for s in sites) > 1:
            raise Refusal("MIG112", f"{where}, several of them under `# migrator: skip`")
        self.creator.can_create(label)
        self.ctx.module_ref("copy.deepcopy")
        return shown, proof

    def below(self) -> list[ClassInfo]:
        """The class's subclasses, in this file or the package."""
        return subclasses_below(self.attributes.family, self.attributes.cls)

    def _changed(self, attr: str) -> str | None:
        """`changed_after_init` of the module `self.<attr>` holds, also through the other names
        `__init__` gives it (`self.b = self.a`: a store into `self.b.p` changes `self.a`)."""
        aliases = [a for a, target in self.attributes.aliases().items() if target == attr]
        family, cls = self.attributes.family, self.attributes.cls
        for name in [attr, *aliases]:
            changed = changed_after_init(family, cls, name)
            if changed:
                return changed
        return None

    def _split_kind(self, attr: str, sites: list[Site]) -> tuple[str, list[str]]:
        """The label of the module a reused attribute holds, and the targets whose run-time
        evidence proved it stateless (empty: proven statically); raises a refusal when it
        cannot be split."""
        info = self.attributes.attrs.get(attr)
        inherited = self.attributes.inherited_modules()
        where = f"`self.{attr}` is called {_where(sites)}"
        if info is None and attr in inherited:
            return self._inherited_kind(attr, sites, inherited[attr], where)
        if info is None:
            raise Refusal(
                "MIG104",
                f"{where} but is not assigned in this class's `__init__`, so "
                "its class cannot be known",
            )
        value = info.value
        verdict = self.ctx.project.value_stateless(value, self.ctx.info)
        label = self.ctx.text(value.func) if isinstance(value, ast.Call) else self.ctx.text(value)
        cls = self.attributes.cls
        if verdict is False:
            held = self.ctx.project.evidence.weighted(str(cls.file.path), cls.name, attr)
            raise Refusal(
                "MIG103",
                f"{where} and `{label}` "
                + (
                    f"{WEIGHTS_SHARED} ({', '.join(held)}): "
                    "copies would untie the weights its sites share; left as is"
                    if held
                    else "may hold parameters or buffers: copies would untie its weights; "
                    "give each site its own module"
                ),
            )
        proof = (
            []
            if verdict
            else self.ctx.project.evidence.stateless(str(cls.file.path), cls.name, attr)
        )
        if verdict is None and not proof:
            held = self.ctx.project.evidence.stateful(str(cls.file.path), cls.name, attr)
            raise Refusal(
                "MIG104",
                f"{where} and the class of `{self.ctx.text(value)}` cannot be "
                "known statically"
                + (
                    f"; the models built hold parameters or buffers there ({', '.join(held)})"
                    if held
                    else "; split it by hand if it is stateless"
                ),
            )
        looped = [s for s in sites if s.times >= MANY and not isinstance(s.loop, Copies)]
        if looped:
            why, method = looped[0].loop, looped[0].method
            raise Refusal(
                "MIG105",
                f"{where}: one module object serves every iteration"
                + (
                    f", and the loop cannot index copies: {why}; left as is"
                    if why
                    else f" (`{method.name if method else '?'}`, which calls it, runs in a loop "
                    "per forward); left as is"
                ),
            )
        # a loop no copies can follow says more than why a copy would not follow
        if (verdict or proof) and (changed := self._changed(attr)):
            raise Refusal(
                "MIG104",
                f"{where} but {changed}: a copy built in this `__init__` would not follow",
            )
        if any(1 < s.times < MANY for s in sites):
            raise Refusal(
                "MIG110", f"{where} inside a helper method that runs more than once per forward"
            )
        init = self.attributes.init
        assert init is not None  # it assigns `info`
        if info.count > 1 or info.nested and _one_line_suite(init, info.stmt):
            raise Refusal("MIG104", f"{where} but is assigned at several places in `__init__`")
        self.creator.can_copy(info, any(isinstance(s.loop, Copies) for s in sites))
        _refuse_aliased(sites, where)
        if sum(s.skipped for s in sites) > 1:
            raise Refusal("MIG112", f"{where}, several of them under `# migrator: skip`")
        for site in sites:
            if isinstance(site.loop, Copies) and site.loop.within is not None:
                raise Refusal(
                    "MIG105",
                    f"{where}, and its copies would have to be made in the block of `__init__` "
                    f"that builds `self.{site.loop.within.name}`",
                )
            if isinstance(site.loop, Copies) and not copy_can_follow(
                self.attributes, info, site.loop.deps, site.loop.floor
            ):
                raise Refusal(
                    "MIG109",
                    f"{where}, and its copies would have to be made before the loop's trip "
                    f"count ({site.loop.describe()}) is known in `__init__`",
                )
        return label, proof


def _refuse_aliased(sites: list[Site], where: str) -> None:
    """Refuse a split when several calls go through a local name bound to the module (`act =
    self.act; act(x)`) or `getattr(self, "act")`, which keep calling it: one could keep the
    name, not two."""
    aliased = [s.func for s in sites if isinstance(s.func, (ast.Name, ast.Call))]
    if aliased and sum(s.skipped for s in sites) > 1:
        shown = ast.unparse(aliased[0])
        raise Refusal(
            "MIG104",
            f"{where}, through `{shown}` (line {aliased[0].lineno}), which keeps calling it: "
            "split it by hand",
        )


def _created_once(base: ClassInfo, attr: str) -> ast.expr | None:
    """The value of `self.<attr>` when the only assignment of it, or of something of it, in
    the `__init__` of `base` is one of its top-level statements (None: anything else; what its
    other methods store is `_inherited_kind`'s to judge)."""
    init = base.methods().get("__init__")
    if init is None:
        return None
    found = [
        stmt
        for stmt in all_nodes(init)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and _assigns_in(stmt, attr)
    ]
    if len(found) != 1 or found[0] not in init.body:
        return None
    stmt = found[0]
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    return stmt.value


def _assigns_in(scope: ast.AST, attr: str) -> bool:
    """Whether `scope` stores into `self.<attr>` or into something of it (`self.<attr>.p =`)."""
    for node in all_nodes(scope):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
            while isinstance(node, (ast.Attribute, ast.Subscript)):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr == attr
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                ):
                    return True
                node = node.value
    return False


def _proof_note(proof: list[str]) -> str:
    """What a finding says of a split that run-time evidence proved safe."""
    if not proof:
        return ""
    return (
        f"; its class is known only at run time: every instance built from {proved_by(proof)} "
        "holds no parameters or buffers, and the copy raises at construction if one does"
    )


def _where(sites: list[Site]) -> str:
    """How a reused module runs more than once: in a loop, at several sites, or at one site of
    a method that runs several times."""
    if any(s.times >= MANY for s in sites):
        return "in a loop"
    if len(sites) > 1:
        return f"at {len(sites)} sites"
    method = sites[0].method
    return (
        f"once in `{method.name if method else '?'}`, which runs {_runs(sites)} times per forward"
    )


def _runs(sites: list[Site]) -> int:
    """How many times one forward runs the module the sites call: the sum over methods of the
    most calls on one path through each (calls in exclusive branches do not add up)."""
    by_method: dict[int, list[Site]] = {}
    for site in sites:
        by_method.setdefault(id(site.method), []).append(site)
    total = 0
    for group in by_method.values():
        method, times = group[0].method, max(s.times for s in group)
        if method is None or times >= MANY:
            total += sum(s.times for s in group)
        else:
            total += times * most_runs(method, [s.func for s in group])
    return min(total, MANY)


def _one_line_suite(init: ast.FunctionDef, stmt: ast.stmt) -> bool:
    return any(
        parent is not stmt and parent.lineno == stmt.lineno
        for parent in ast.walk(init)
        if isinstance(parent, ast.stmt)
    )
