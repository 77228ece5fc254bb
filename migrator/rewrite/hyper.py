"""Hyper-parameters of a new module: a forward-path call's argument written so that it means the
same in `__init__`, where the module is created."""

from __future__ import annotations

import ast

from migrator import catalog
from migrator.rewrite.attributes import ClassAttributes
from migrator.refusal import Refusal
from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.names import literal
from migrator.rewrite.stores import (
    Store,
    after_init,
    beside_init_plain,
    changed_after_init,
    changed_outside,
    first_change,
    plain_value,
    subclasses_below,
)
from migrator.rewrite.defined import class_level_names
from migrator.rewrite.walk import all_nodes


class HyperParameters:
    """Resolves the hyper-parameters of one class's new modules."""

    def __init__(self, ctx: FileContext, attributes: ClassAttributes) -> None:
        self.ctx = ctx
        self.attributes = attributes
        self._changes: dict[str, str | None] = {}

    def resolve(self, node: ast.expr, shadowed: set[str]) -> tuple[str, set[str]]:
        """(source text valid in `__init__`, `self` attributes it depends on) of a
        hyper-parameter; raises a refusal when its value is not fixed at `__init__` time.
        `shadowed`: the names the calling method binds itself."""
        deps: set[str] = set()
        replace: dict[str, ast.expr] = {}
        init = self.attributes.init
        init_locals = self.ctx.locals_of(init) if init else set()
        for part in all_nodes(node):
            if isinstance(part, ast.Name) and part.id != "self":
                if part.id in shadowed:
                    raise Refusal("MIG101", f"`{part.id}` is a local value of the method")
                if part.id in init_locals and part.id in self.ctx.info.names.constants:
                    replace[part.id] = self.ctx.info.names.constants[part.id]
                elif part.id in init_locals:
                    raise Refusal("MIG101", f"`{part.id}` means something else in `__init__`")
        reason = self._unfixed(node, deps)
        if reason:
            raise Refusal("MIG101", reason)
        text = self.ctx.text(node)
        if replace:  # constants shadowed in `__init__` are written out as their values
            names = sorted(
                (n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in replace),
                key=lambda n: (n.lineno, n.col_offset),
                reverse=True,
            )
            if any(n.lineno != node.lineno for n in names) or node.lineno != node.end_lineno:
                raise Refusal("MIG101", "a constant it uses means something else in `__init__`")
            start = self.ctx.positions.column(node.lineno, node.col_offset)
            for name in names:
                a = self.ctx.positions.column(name.lineno, name.col_offset) - start
                assert name.end_col_offset is not None  # parsed: set
                b = self.ctx.positions.column(name.lineno, name.end_col_offset) - start
                text = text[:a] + self.ctx.text(replace[name.id]) + text[b:]
        return text, deps

    def _unfixed(self, node: ast.expr, deps: set[str]) -> str | None:
        """Why `node` is not fixed at `__init__` time (None: it is); collects `self` deps."""
        if literal(node):
            return None
        if isinstance(node, ast.Name):
            return (
                None
                if node.id in self.ctx.info.names.constants
                else f"`{node.id}` is not a module-level constant"
            )
        if self_attr(node):
            attributes = self.attributes
            info = attributes.attrs.get(node.attr)
            if info is None and self._inherited_setting(node):
                return None
            if info is None or node.attr in attributes.assigned_elsewhere:
                return f"`self.{node.attr}` is not assigned only in `__init__`"
            changed = self._changed(node.attr)
            if changed:
                return f"`self.{node.attr}` may change after `__init__` set it: {changed}"
            unsettled = info.nested and attributes.unsettled(node.attr)
            if unsettled:
                return f"`self.{node.attr}` {unsettled}"
            if node.attr in attributes.module_attrs() or node.attr in attributes.tensor_attrs:
                return f"`self.{node.attr}` is a module or a tensor"
            deps.add(node.attr)
            return None
        if isinstance(node, ast.Attribute) and self_attr(node.value):
            return self._setting(node, deps)
        if isinstance(node, ast.Attribute) and self.ctx.info.names.resolve(node):
            return None
        if _float_of_string(node) and self.ctx.info.names.is_free("float"):
            return None
        if isinstance(node, ast.Call) and self._pure_function(node):
            parts = list(node.args)
        elif isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            parts = [node.operand]
        elif isinstance(node, (ast.Tuple, ast.List)):
            parts = list(node.elts)
        else:
            return "it is computed at run time"
        return next((r for r in (self._unfixed(p, deps) for p in parts) if r), None)

    def _setting(self, node: ast.Attribute, deps: set[str]) -> str | None:
        """Why `self.<module>.<setting>` is not fixed at `__init__` time (None: it is): the
        module is built once in `__init__` by a class that keeps that constructor argument as
        it is (`catalog.KEPT_SETTINGS`), and no method, nor a subclass, assigns either."""
        assert isinstance(node.value, ast.Attribute)  # a `self` attribute
        owner = node.value.attr
        shown = f"`self.{owner}.{node.attr}`"
        info = self.attributes.attrs.get(owner)
        if info is None or info.nested or owner in self.attributes.assigned_elsewhere:
            return f"{shown}: `self.{owner}` is not assigned once, only in `__init__`"
        made_by = (
            self.ctx.info.names.resolve(info.value.func)
            if isinstance(info.value, ast.Call)
            else None
        )
        if node.attr not in catalog.KEPT_SETTINGS.get(made_by or "", ()):
            return f"{shown} is not known to be a constructor argument of `self.{owner}`"
        cls, family = self.attributes.cls, self.attributes.family
        setting = node.attr

        def counts(store: Store) -> bool:  # a store that may set the setting
            if store.kind == "called":
                return (store.call or "").startswith("__")  # `__setattr__`, ...
            return store.kind == "bound" or store.part in (setting, None, "__dict__")

        changed = (
            first_change([cls], owner, lambda s: beside_init_plain(s) and counts(s))
            or first_change(family.ancestors(cls), owner, lambda s: after_init(s) and counts(s))
            or first_change(subclasses_below(family, cls), owner, counts)
            or changed_outside(cls, owner)
        )
        if changed:
            return f"{shown} may change after `__init__` set it: {changed}"
        deps.add(owner)
        return None

    def _changed(self, attr: str) -> str | None:
        """`changed_after_init` of `self.<attr>`, once per attribute."""
        if attr not in self._changes:
            cls, family = self.attributes.cls, self.attributes.family
            self._changes[attr] = changed_after_init(family, cls, attr, plain_value)
        return self._changes[attr]

    def _inherited_setting(self, node: ast.Attribute) -> bool:
        """Whether `self.<setting>` is set by the constructor of a torch.nn base class that
        keeps it (`catalog.KEPT_SETTINGS`: `self.kernel_size` of an `nn.AvgPool2d` subclass) and
        no class of the project in the family assigns it or defines it at class level (a
        property): fixed once `super().__init__()` ran."""
        cls, family = self.attributes.cls, self.attributes.family
        lineage = [cls, *family.ancestors(cls)]
        kept = any(
            node.attr in catalog.KEPT_SETTINGS.get(base or "", ())
            for each in lineage
            for base in each.bases
        )
        known = {each.qualname for each in lineage}
        if not kept or any(
            base is None or not (base.startswith("torch.nn.") or base in known)
            for each in lineage
            for base in each.bases
        ):
            return False  # or a base of unknown source may assign it
        related = [  # torch's own: the test of the table
            each
            for each in lineage + subclasses_below(family, cls)
            if not each.qualname.startswith("torch.")
        ]
        return (
            not first_change(related, node.attr, plain_value)
            and not changed_outside(cls, node.attr)
            and not any(node.attr in class_level_names(each.node) for each in related)
        )

    def _pure_function(self, node: ast.Call) -> bool:
        """Whether `node` calls a function whose result depends only on its positional
        arguments: a `math` function of `catalog.PURE_FUNCTIONS`, or the builtin `float`/`int`."""
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return False
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("float", "int"):
            return self.ctx.info.names.is_free(func.id)
        return self.ctx.info.names.resolve(func) in catalog.PURE_FUNCTIONS


def _float_of_string(node: ast.expr) -> bool:
    """`float("-inf")`, `float("nan")`: the builtin on a string literal it accepts, a constant."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "float"
        and len(node.args) == 1
        and not node.keywords
    ):
        return False
    arg = node.args[0]
    if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
        return False
    try:
        float(arg.value)
    except ValueError:
        return False
    return True
