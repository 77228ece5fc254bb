"""New modules of one class: an op's module, or a copy of a reused module, each under a free
name, planned for `__init__` once it is known that `__init__` can hold it."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TypeVar

from migrator.rewrite.attributes import ClassAttributes, InitAttr
from migrator.refusal import Refusal
from migrator.rewrite.context import FileContext
from migrator.rewrite.defined import GIVEN
from migrator.rewrite.family import Family
from migrator.rewrite.loops import Copies
from migrator.rewrite.order import Key
from migrator.rewrite.placement import Registration
from migrator.rewrite.project import ClassInfo
from migrator.rewrite.submodule_walks import MODULE_LIST, Walk, Written, submodule_walks
from migrator.rewrite.taken import TakenNames

T = TypeVar("T")

_CONTAINERS = frozenset(
    f"torch.nn.{c}" for c in "Sequential ModuleList ModuleDict ParameterList ParameterDict".split()
)


class ModuleCreator:
    """Plans the new modules of one class."""

    def __init__(
        self, ctx: FileContext, attributes: ClassAttributes, family: Family, names: TakenNames
    ) -> None:
        self.ctx = ctx
        self.attributes = attributes
        self.family = family
        self.names = names
        self.registrations: list[Registration] = []
        self._walks: list[Walk] | None = None
        """The methods going through the class's submodules (None: not looked yet)."""
        self._found: dict[tuple[str, str], object] = {}
        """What `_looked_up` worked out, while the project is as `_state` says."""
        self._state: tuple[object, ...] = ()

    def reference(self, module: str, written: Written | None = None, listed: bool = False) -> str:
        """How `__init__` names a new module of class `module` (qualified; imported as needed;
        a class `fix` writes, as `written` says, when given; `listed`: in an nn.ModuleList of
        copies), once it can hold one that is not this class nor a subclass (which would
        recurse)."""
        self.can_create(written or module, listed)
        cls = self.attributes.cls
        made = self._looked_up(("made", module), lambda: self.ctx.project.find_class(module))
        if made is not None and (
            made is cls
            or self._looked_up(("derives", module), lambda: self.family.derives(made, cls))
        ):
            raise Refusal(
                "MIG116",
                f"the module it would become, `{module.rsplit('.', 1)[1]}`, is this "
                f"class{'' if made is cls else ' or a subclass of it'}: "
                "creating it in `__init__` would recurse; left as is",
            )
        return self.ctx.module_ref(module)

    def create(
        self,
        module: str,
        base: str,
        ctor: list[str],
        deps: set[str],
        key: Key,
        copies: Copies | None = None,
        ceiling: int | None = None,
    ) -> str:
        """Plan `self.<base or a free variant> = <module>(...)`, `module` as the file names it
        (`reference`, or a class `fix` adds to the file; an nn.ModuleList of them for the
        `copies` of a loop; before top-level statement `ceiling` when given), once
        `can_create` has passed; return the new attribute name."""
        name = self.names.new(base)
        if copies is None:
            registration = Registration(
                key, f"self.{name} = {module}", deps, args=tuple(ctor), ceiling=ceiling
            )
        else:
            value = copies.build(
                f"{module}({', '.join(ctor)})", self.ctx.module_ref("torch.nn.ModuleList")
            )
            registration = Registration(
                key,
                f"self.{name} = {value}",
                deps | copies.deps,
                floor=copies.floor,
                ceiling=ceiling,
                within=copies.within,
            )
        self.registrations.append(registration)
        return name

    def copy(
        self, original: InitAttr, key: Key, copies: Copies | None = None, guarded: bool = False
    ) -> str:
        """Plan a copy of the module `__init__` assigns to `original` (its constructor call
        again, `guarded` by `stateless_copy` when only run-time evidence proved it stateless;
        an nn.ModuleList of such copies for the `copies` of a loop); return the new attribute
        name."""
        value = self.ctx.block_text(original.value, original.stmt)
        if guarded:
            value = f"{self.ctx.module_ref('migrator.nn.stateless_copy')}({value})"
        deps: set[str] = set()
        floor = 0
        if copies is not None:
            deps, floor = copies.deps, copies.floor
            value = copies.build(value, self.ctx.module_ref("torch.nn.ModuleList"))
        name = self.names.new(original.name)
        self.registrations.append(
            Registration(key, f"self.{name} = {value}", deps, original, floor)
        )
        return name

    def copy_inherited(self, attr: str, key: Key, guarded: bool = False) -> str:
        """Plan a copy of the module a base class's `__init__` assigns to `self.<attr>`, made
        after `super().__init__()` from the instance it built (`copy.deepcopy`, `guarded` by
        `stateless_copy` when only run-time evidence proved it stateless); return the new
        attribute name."""
        value = f"{self.ctx.module_ref('copy.deepcopy')}(self.{attr})"
        if guarded:
            value = f"{self.ctx.module_ref('migrator.nn.stateless_copy')}({value})"
        name = self.names.new(attr)
        floor = self.attributes.super_index or 0
        self.registrations.append(Registration(key, f"self.{name} = {value}", set(), None, floor))
        return name

    def can_copy(self, original: InitAttr, listed: bool) -> None:
        """Raise a refusal when a copy of the module `__init__` assigns to `original` (`listed`:
        copies in an nn.ModuleList) would change what the class does: it would join a
        container's modules, or a walk of them."""
        container = self._container()
        if container:
            raise Refusal("MIG109", f"{container}: a copy would join the modules it goes through")
        value = original.value
        made = self.ctx.info.names.resolve(value.func) if isinstance(value, ast.Call) else None
        self._walked_by(made, listed)

    def can_create(self, made: str | Written | None = None, listed: bool = False) -> None:
        """Raise a refusal when `__init__` has no safe place for a new module of class `made`
        (qualified name, or a class `fix` writes; None: not known; `listed`: copies of it in an
        nn.ModuleList)."""
        shared = self.ctx.shared.get(self.attributes.cls.qualname)
        if shared:
            raise Refusal(
                "MIG117",
                f"{shared}: a module made here would run at each of their call sites; left as is",
            )
        container = self._container()
        if container:
            raise Refusal(
                "MIG109", f"{container}: a new submodule would join the modules it goes through"
            )
        self._walked_by(made, listed)
        if self.names.taken(GIVEN):
            raise Refusal(
                "MIG109",
                "the class sets an attribute by a name its caller gives (`setattr(self, name, "
                "m)`): a new module's name may be that one",
            )
        init, super_index = self.attributes.init, self.attributes.super_index
        if init is None:
            return
        if super_index is None:
            raise Refusal(
                "MIG109",
                "`__init__` makes no `super().__init__()` call (on every path) to create the module after",
            )
        if init.body[super_index].lineno == init.lineno:
            raise Refusal(
                "MIG109",
                "`__init__` is written on one line: put its body on lines of its own first",
            )

    def _container(self) -> str | None:
        return self._looked_up(
            ("container", ""), lambda: container_base(self.family, self.attributes.cls)
        )

    def _looked_up(self, key: tuple[str, str], work_out: Callable[[], T]) -> T:
        """`work_out()`, a fact of the project's classes (asked at each op of the class), worked
        out again only when its lookups could find or record something new: the project has
        registered a file, or records lookups elsewhere than when it was worked out (each
        recorder keeps the first of each lookup: the same lookups again add nothing)."""
        project = self.ctx.project
        if project.captures:  # a capture keeps every lookup
            return work_out()
        # recorders compare by identity (they define no `==`)
        state = (project.generation, project.replacements, project.lookups, *project.traces)
        if state != self._state:
            self._found.clear()
            self._state = state
        if key not in self._found:
            self._found[key] = work_out()
        return self._found[key]  # type: ignore[return-value]

    def _walked_by(self, made: str | Written | None, listed: bool) -> None:
        """Refuse when a method going through the class's submodules may act on a new one of
        class `made` (qualified name; None: not known), or on the nn.ModuleList of copies of it
        when `listed`."""
        if self._walks is None:
            self._walks = own_walks(self.ctx, self.family, self.attributes.cls)
        for walk in self._walks:
            for each in [made, MODULE_LIST] if listed else [made]:
                why = walk.touches(each, self.names.taken)
                if why:
                    raise Refusal("MIG109", why)


def own_walks(ctx: FileContext, family: Family, cls: ClassInfo) -> list[Walk]:
    """The walks of an instance's own submodules by the methods of `cls`, its ancestors and
    subclasses found in the project (torch's containers aside: `_container`)."""
    related = [
        c
        for c in [*family.ancestors(cls), *family.subclasses_in_file(cls)]
        + family.subclasses_elsewhere(cls)
        if not c.qualname.startswith("torch.")
    ]
    return submodule_walks(ctx, cls, [cls, *related])


def container_base(family: Family, cls: ClassInfo) -> str | None:
    """Why a new submodule of `cls` would change behaviour: the class is a torch.nn container
    (None: it is not)."""
    for each in [cls, *family.ancestors(cls)]:
        for base in each.bases:
            if base in _CONTAINERS:
                return f"the class derives from `{base.replace('torch.nn.', 'nn.')}`"
    return None
