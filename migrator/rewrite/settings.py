"""Settings of a submodule proven to hold no tensor: `self.<module>.<setting>` of a module that
`__init__` alone builds, from classes known statically, when each keeps the setting as a
number, a string or a tuple of them (`self.conv.kernel_size` of an `nn.Conv2d`, the
`self.attn.resolution` that every method of the class sets to a size); and the classes such a
module is built from (`made_by`: what calling it returns)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable

from migrator import catalog
from migrator.rewrite.annotations import Kind, annotation_kind
from migrator.rewrite.attributes import ClassAttributes
from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.defined import class_level_names
from migrator.rewrite.family import Family
from migrator.rewrite.project import ClassInfo, FileInfo
from migrator.rewrite.stores import Store, beside_init_plain, changed_after_init, first_change
from migrator.rewrite.tensors import TensorNames
from migrator.rewrite.walk import walked

NAMES = (ast.Name, ast.Attribute)
"""Values naming something (a function held by an attribute)."""


class SubmoduleSettings:
    """Which `self.<module>.<setting>` of one class hold no tensor."""

    def __init__(self, ctx: FileContext, attributes: ClassAttributes) -> None:
        self.ctx = ctx
        self.attributes = attributes
        self._known: dict[tuple[str, str], bool] = {}
        self._made: dict[str, tuple[str, ...]] = {}
        self._alone: dict[str, bool] = {}
        self._family: tuple[int, list[ClassInfo]] | None = None

    def plain(self, node: ast.Attribute) -> bool:
        """Whether `node`, `self.<module>.<setting>`, and its items hold no tensor."""
        owner = node.value
        if not self_attr(owner):
            return False
        key = (owner.attr, node.attr)
        if key not in self._known:
            self._known[key] = self._plain(owner.attr, node.attr)
        return self._known[key]

    def _plain(self, owner: str, setting: str) -> bool:
        def kept(made: str) -> bool:
            if setting in catalog.KEPT_SETTINGS.get(made, ()):
                return True
            cls = self.ctx.project.find_class(made, self.ctx.info)
            return cls is not None and _kept_plain(self.attributes.family, cls, setting)

        return bool(self.made_by(owner, kept))

    def made_by(self, owner: str, wanted: Callable[[str], bool]) -> tuple[str, ...]:
        """The classes `self.<owner>` may be built from when it holds a module, if `wanted` of
        each (empty: not so): every assignment of it, all in `__init__`, is a call of a class
        resolved statically or `None` (reading or calling `None` fails before anything else);
        no other class of the family assigns it, nor anything of it."""
        if owner not in self._made:
            self._made[owner] = self._made_by(owner)
        made = self._made[owner]
        if not made or not all(wanted(each) for each in made):
            return ()
        if owner not in self._alone:
            self._alone[owner] = self._alone_in_family(owner)
        return made if self._alone[owner] else ()

    def tensor_containers(self, methods: dict[str, ast.FunctionDef]) -> dict[str, Kind]:
        """`self.<attr>` -> the kind of the container of tensors it holds: `__init__` assigns
        it once, nothing else assigns or stores into it or anything of it, and that is a call
        `self.<method>(...)` of a method of the class annotated to return a sequence of tensors
        (torchvision's `self._wh_pairs = self._generate_wh_pairs(n)`, `-> list[Tensor]`)."""
        attributes = self.attributes
        found: dict[str, Kind] = {}
        if attributes.init is None:
            return {}
        for attr in sorted(attributes.may_hold_tensors - attributes.tensor_attrs):
            values = self._init_assignments.get(attr, [])
            value = values[0] if len(values) == 1 else None
            if (
                attr in attributes.assigned_elsewhere
                or not isinstance(value, ast.Call)
                or not self_attr(value.func)
                or value.func.attr not in methods
            ):
                continue
            kind = annotation_kind(methods[value.func.attr].returns)
            if kind != ("seq", "tensor"):
                continue
            if changed_after_init(attributes.family, attributes.cls, attr, _may_untensor) is None:
                found[attr] = kind
        return found

    def held_function(
        self, owner: str, seen: frozenset[str] = frozenset()
    ) -> tuple[FileInfo, ast.FunctionDef, bool] | None:
        """(its file, the function, whether it is all `self.<owner>` may hold) when an
        `__init__` assignment of `self.<owner>` gives a module-level function of the project
        (`self.box_similarity = box_ops.box_iou`; `f if c else nn.Identity()`,
        `functools.partial(f, ...)` and `self.<other>` holding `f` may hold `f`);
        all it holds when every assignment of it, all in `__init__`, gives that function
        (`seen`: the attributes of an alias's chain, each followed once)."""
        values = self.init_values(owner)
        if not values:
            return None
        parts = [
            part
            for v in values
            for part in ((v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,))
        ]
        resolve = self.ctx.info.names.resolve
        partial = [  # `functools.partial(f, ...)` runs `f`
            v.args[0]
            for v in parts
            if isinstance(v, ast.Call) and v.args and resolve(v.func) == "functools.partial"
        ]
        names = {resolve(v) for v in parts + partial if isinstance(v, NAMES)}
        found = [
            f
            for qualname in sorted(n for n in names if n and n.split(".")[0] != "torch")
            if (f := self.ctx.project.find_function(qualname, self.ctx.info))
        ]
        if not found:
            seen = seen | {owner}
            aliased = (v.attr for v in parts if self_attr(v) and v.attr not in seen)
            held = next(filter(None, (self.held_function(a, seen) for a in aliased)), None)
            return held and (held[0], held[1], False)  # `self.sim2 = self.sim`
        only = (
            len(names) == 1
            and not partial
            and all(isinstance(v, NAMES) for v in values)
            and owner not in self.attributes.assigned_elsewhere
        )
        return found[0][0], found[0][1], only

    def init_values(self, owner: str) -> list[ast.expr]:
        """The values `__init__` assigns to `self.<owner>` (none when it does not)."""
        if self.attributes.init is None or owner not in self.attributes.attrs:
            return []
        return [v for v in self._init_assignments.get(owner, []) if v is not None]

    def held_helper(self, owner: str) -> tuple[FileInfo, ast.FunctionDef] | None:
        """(its file, the function) when `self.<owner>` holds that project function and
        nothing else (`held_function`), and nothing changes it after `__init__`, here, in the
        family or in the file's other code (`changed_after_init`): a call of it runs the
        function, as a direct call does. Not when `__init__` may leave it unset (`if c: self.f
        = fn`) or the class or a base defines the name at class level (a method the call would
        run then, or a property, also a subclass's, storing the function elsewhere)."""
        held = self.held_function(owner)
        if held is None or not held[2] or not self.settled(owner):
            return None
        if changed_after_init(self.attributes.family, self.attributes.cls, owner) is not None:
            return None
        return held[0], held[1]

    def settled(self, owner: str) -> bool:
        """Whether `__init__` sets `self.<owner>` on every path (`if c: self.f = fn` may leave
        it unset) and neither the class nor a relative defines the name at class level."""
        attributes = self.attributes
        if attributes.attrs[owner].nested and attributes.unsettled(owner):
            return False
        return not any(
            owner in class_level_names(each.node) for each in [attributes.cls, *self._related()]
        )

    def _made_by(self, owner: str) -> tuple[str, ...]:
        init = self.attributes.init
        if init is None or owner not in self.attributes.attrs:
            return ()
        if owner in self.attributes.assigned_elsewhere:
            return ()
        made = set()
        values = self._init_assignments.get(owner, [])
        while any(isinstance(v, ast.IfExp) for v in values):  # `A(...) if c else B(...)`
            values = [
                part
                for v in values
                for part in ((v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,))
            ]
        for value in values:
            if isinstance(value, ast.Constant) and value.value is None:
                continue
            found = self.ctx.info.names.resolve(value.func) if isinstance(value, ast.Call) else None
            if found is None:
                return ()
            made.add(found)
        return tuple(sorted(made))

    @functools.cached_property
    def _init_assignments(self) -> dict[str, list[ast.expr | None]]:
        """`_assignments` of `__init__` (which `_made_by` has)."""
        assert self.attributes.init is not None  # `_made_by` returns first without one
        return _assignments([v.node for v in self.ctx.visits_of(self.attributes.init, _ASSIGNING)])

    def _related(self) -> list[ClassInfo]:
        """The other classes of the family: ancestors, subclasses in this file and elsewhere in
        the package; found again when a file was registered since (`Project.generation`)."""
        generation = self.ctx.project.generation
        if self._family is None or self._family[0] != generation:
            cls, family = self.attributes.cls, self.attributes.family
            related = [
                *family.ancestors(cls),
                *family.subclasses_in_file(cls),
                *family.subclasses_elsewhere(cls),
            ]
            self._family = (generation, related)
        return self._family[1]

    def _alone_in_family(self, owner: str) -> bool:
        """Whether no class of the family but this one assigns `self.<owner>`, and none
        assigns anything of it."""
        cls, related = self.attributes.cls, self._related()
        return not first_change([cls], owner, _beside_init) and not first_change(
            related, owner, _stored
        )


def _may_untensor(store: Store) -> bool:
    """Whether a store may make a list of tensors hold something else: all but a catalog tensor
    method called on an item (`self._wh_pairs[k].clamp(...)`; a list has no such method)."""
    return not (
        store.kind == "called"
        and store.call is not None
        and store.call not in dir(list)
        and bool(catalog.by_method(store.call) or catalog.by_inplace_method(store.call))
    )


def _kept_plain(family: Family, cls: ClassInfo, setting: str) -> bool:
    """Whether an instance of exactly `cls` holds no tensor in `self.<setting>`: `cls` and its
    bases are classes of the project deriving from `nn.Module` alone, none defines the name at
    class level (a property), sets attributes by name (`setattr`), and every assignment of
    `self.<setting>` in their methods, at least one, gives a value holding no tensor, built from
    the method's parameters and constants alone (`resolution: int`), not from other
    attributes."""
    lineage = [cls, *family.ancestors(cls)]
    known = {each.qualname for each in lineage}
    if any(
        base not in known and base not in ("torch.nn.Module", "torch.nn.modules.module.Module")
        for each in lineage
        for base in each.bases
    ):
        return False
    if first_change(lineage, setting, lambda s: _stored(s) and not s.plain):
        return False  # `for self.x in ...`, `with ... as self.x`, `self.x.y = ...`
    found = False
    for each in lineage:
        if setting in class_level_names(each.node):
            return False
        for method in each.methods().values():
            nodes = [v.node for v in walked(method)]
            if any(isinstance(n, ast.Name) and n.id == "setattr" for n in nodes):
                return False
            values = _assignments(nodes).get(setting, [])
            if not values:
                continue
            if any(value is None for value in values):
                return False
            tensors = TensorNames(
                method,
                nodes,
                each.file.names.resolve,
                set(),
                set(),
                first_is_tensor=False,
                unknown_globals=each.file.names.unknown,
            )
            for value in values:
                assert value is not None  # tested above
                if any(self_attr(n) for n in ast.walk(value)) or not tensors.holds_no_tensor(value):
                    return False
            found = True
    return found


def _assignments(nodes: list[ast.AST]) -> dict[str, list[ast.expr | None]]:
    """`self.<setting>` -> the value of each assignment of it among `nodes`, in their order
    (None when it is not assigned whole: `self.x += 1`, `self.x, self.y = ...`)."""
    found: dict[str, list[ast.expr | None]] = {}
    for node in nodes:
        kind = type(node)
        if kind not in _ASSIGNING:
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if self_attr(target):
                    found.setdefault(target.attr, []).append(node.value)
                elif isinstance(target, (ast.Tuple, ast.List)):
                    for setting in dict.fromkeys(n.attr for n in ast.walk(target) if self_attr(n)):
                        found.setdefault(setting, []).append(None)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            target = node.target
            if self_attr(target):
                value = node.value if isinstance(node, ast.AnnAssign) else None
                found.setdefault(target.attr, []).append(value)
    return found


_ASSIGNING = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign})
"""The node classes `_assignments` reads: a set lookup is cheaper than `isinstance`."""


def _stored(store: Store) -> bool:
    """A store that binds the attribute or something of it (not a method called on it)."""
    return store.kind != "called"


def _beside_init(store: Store) -> bool:
    """`_stored`, but the plain assignments of `__init__` (`_made_by` reads them)."""
    return _stored(store) and beside_init_plain(store)
