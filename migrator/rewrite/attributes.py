"""The attributes of one `nn.Module` subclass: what its `__init__` assigns (modules, tensors,
plain values, other names for modules), what other methods assign, and what its bases create."""

from __future__ import annotations

import ast
from bisect import bisect_left
from dataclasses import dataclass
from functools import partial

from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.facts import class_fact
from migrator.rewrite.family import Family
from migrator.rewrite.project import ClassInfo
from migrator.rewrite.tensors import NOT_TENSOR_TORCH
from migrator.rewrite.walk import all_nodes


@dataclass
class InitAttr:
    """An attribute assigned in `__init__`."""

    name: str
    stmt: ast.stmt
    value: ast.expr
    top_index: int
    """Index of the top-level `__init__` statement holding the assignment."""
    nested: bool
    count: int = 1


class ClassAttributes:
    """The attributes of one class, read from its methods."""

    def __init__(self, ctx: FileContext, cls: ClassInfo, family: Family) -> None:
        self.ctx = ctx
        self.cls = cls
        self.family = family
        self.methods = cls.methods()
        self.init = self.methods.get("__init__")
        self.attrs: dict[str, InitAttr] = {}
        self.assigned_elsewhere: set[str] = set()
        self.tensor_attrs: set[str] = set()
        self.plain_attrs: set[str] = set()
        """Attributes `__init__` sets to a number or string it computes (`float(rate)`)."""
        self.may_hold_tensors: set[str] = set()
        """Attributes some method sets to a container built by calls (`[torch.ones(2)]`, `[make(s)
        for s in sizes]`) or to what one of the class's methods returns: neither they nor their
        items are proven plain."""
        self.state: dict[str, str] = {}
        """Parameters and buffers registered by name: attribute -> "parameter" or "buffer"."""
        self.super_index = self._super_index()
        """Index of the top-level `super().__init__()` statement of `__init__` (None: none)."""
        self._inherited: dict[str, ClassInfo] | None = None
        self._ends: list[int] | None = None
        """Where each top-level statement of `__init__` ends (`_top_level`)."""
        self._collect()
        for attr in self._inherited_tensors():
            self.tensor_attrs.add(attr)
            self.state.setdefault(attr, "parameter")  # as far as moving it goes: learned

    def _super_index(self) -> int | None:
        """The top-level statement of `__init__` after which the module is initialised: a
        `super().__init__(...)` call, or a `try` / `if` every path through which makes one (timm's
        `BatchNormAct2d` retries it in `except TypeError:`)."""
        if self.init is None:
            return None
        promoted = self.cls.qualname in self.ctx.promoted
        if promoted and not self.ctx.project.is_module(self.cls):  # `super().__init__()` added
            return 0
        for i, stmt in enumerate(self.init.body):
            if self._initialises(stmt):
                return i
        return None

    def _initialises(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.Try) and not stmt.finalbody and not stmt.orelse:
            blocks = [stmt.body] + [handler.body for handler in stmt.handlers]
            return all(any(self._initialises(s) for s in block) for block in blocks)
        if isinstance(stmt, ast.If) and stmt.orelse:
            return all(any(self._initialises(s) for s in b) for b in (stmt.body, stmt.orelse))
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return False
        func = stmt.value.func
        if not (isinstance(func, ast.Attribute) and func.attr == "__init__"):
            return False
        owner = func.value
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name):
            return owner.func.id == "super"
        return bool(self.ctx.info.names.resolve(owner)) or (
            isinstance(owner, ast.Name) and owner.id in self.ctx.info.classes
        )

    def _collect(self) -> None:
        resolve = self.ctx.info.names.resolve
        for name, method in self.methods.items():
            for node in (v.node for v in self.ctx.visits_of(method, _SETTING)):
                targets: list[ast.expr] = []
                value = None
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                    targets, value = [node.target], getattr(node, "value", None)
                elif registered := _registered(node):
                    self.tensor_attrs.add(registered[0])
                    self.state.setdefault(*registered)
                for target in targets:
                    if not self_attr(target):
                        continue
                    if value is not None and self._may_hold_tensors(value):
                        self.may_hold_tensors.add(target.attr)
                    if name != "__init__" or value is None or isinstance(node, ast.AugAssign):
                        self.assigned_elsewhere.add(target.attr)
                        if value is not None and _value_kind(value, resolve) == "tensor":
                            self.tensor_attrs.add(target.attr)  # `define_table()` makes one
                        continue
                    assert isinstance(node, ast.stmt)  # the assignment `targets` come from
                    self._record_init_attr(target.attr, node, value)

    def _may_hold_tensors(self, value: ast.expr) -> bool:
        """Whether `value` is a container some item of which a call makes, or the result of a
        method of the class: it may hold tensors, which `_value_kind` does not see."""
        if isinstance(value, ast.Call):
            func = value.func
            if self_attr(func) and func.attr in self.methods:
                return True
            if isinstance(func, ast.Name) and func.id in ("list", "tuple", "dict", "set"):
                return any(self._may_hold_tensors(a) for a in value.args)
            return False
        if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            items = value.elts
        elif isinstance(value, ast.Dict):
            items = value.values
        elif isinstance(value, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            items = [value.elt]
        elif isinstance(value, ast.DictComp):
            items = [value.value]
        else:
            return False
        return any(
            isinstance(node, ast.Call) and _value_kind(node, self.ctx.info.names.resolve) != "plain"
            for item in items
            for node in all_nodes(item)
        )

    def _record_init_attr(self, attr: str, stmt: ast.stmt, value: ast.expr) -> None:
        top_index, nested = self._top_level(stmt)
        if attr in self.attrs:
            self.attrs[attr].count += 1
            self.attrs[attr].nested = True
            self.attrs[attr].top_index = max(self.attrs[attr].top_index, top_index)
        else:
            self.attrs[attr] = InitAttr(attr, stmt, value, top_index, nested)
        kind = _value_kind(value, self.ctx.info.names.resolve)
        if kind == "tensor":
            self.tensor_attrs.add(attr)  # a parameter, buffer, or plain tensor attribute
            made_by = self.ctx.info.names.resolve(
                value.func if isinstance(value, ast.Call) else value
            )
            state = {"torch.nn.Buffer": "buffer"}.get(made_by or "", "parameter")
            if made_by in _STATE_MAKERS:
                self.state.setdefault(attr, state)
        elif kind == "plain":
            self.plain_attrs.add(attr)

    def held(self, attr: str) -> tuple[bool, str] | None:
        """How the module holds `self.<attr>`, a tensor an op reads: (learned, what it is) for a
        parameter or buffer, where learned also covers what may be a parameter (not assigned a
        tensor here); None for a plain tensor attribute, which is in no state_dict."""
        kind = self.state.get(attr)
        if kind == "buffer" and attr not in self.assigned_elsewhere:
            return False, "is a buffer of the module"
        if kind == "parameter":
            return True, "is a parameter of the module"
        if attr in self.tensor_attrs and attr not in self.assigned_elsewhere and kind is None:
            return None
        return True, "may be a parameter of the module"

    def _top_level(self, stmt: ast.stmt) -> tuple[int, bool]:
        """(index of the first top-level statement of `__init__` that is `stmt` or spans its
        line, whether `stmt` is below it), found by bisection on where they end."""
        assert self.init is not None  # `stmt` is one of its statements
        if self._ends is None:
            self._ends = [top.end_lineno or top.lineno for top in self.init.body]
        i = bisect_left(self._ends, stmt.lineno)
        if i < len(self._ends):
            top = self.init.body[i]
            if top is stmt:
                return i, False
            if top.lineno <= stmt.lineno:
                return i, True
        return len(self.init.body) - 1, True

    def unsettled(self, attr: str) -> str | None:
        """Why `__init__`, which assigns `self.<attr>` in a nested statement, may leave it unset
        or set it again (None: it assigns it only within one top-level `if` statement, once on
        each of its paths, `if flatten: self.dim = 1` / `else: self.dim = 2`, and no path
        leaves that statement by `return`: after it, the value is final)."""
        info = self.attrs.get(attr)
        assert info is not None and self.init is not None  # `__init__` assigns it
        top = self.init.body[info.top_index]
        found = sum(
            1
            for node in all_nodes(top)
            if isinstance(node, ast.Assign)
            and any(self_attr(t) and t.attr == attr for t in node.targets)
        )
        if found != info.count:
            return "is assigned by several statements of `__init__`"
        if any(isinstance(n, ast.Return) for n in all_nodes(top)):
            return "is assigned in a statement of `__init__` that may `return`"
        return _once_on_every_path([top], attr)

    def module_attrs(self) -> set[str]:
        """Attributes that hold modules: assigned a call (not a parameter), another name for
        one (`self.b = self.a`), or set elsewhere."""
        attrs = {
            a
            for a, info in self.attrs.items()
            if isinstance(info.value, (ast.Call, ast.IfExp))
            and a not in self.tensor_attrs
            and a not in self.plain_attrs
        }
        attrs |= set(self.aliases()) | set(self.inherited_modules())
        return attrs | (self.assigned_elsewhere - set(self.methods) - self.tensor_attrs)

    def _inherited_tensors(self) -> set[str]:
        """Tensor attributes a base class makes (a parameter, a buffer) that this class's
        `__init__` does not assign."""
        found: set[str] = set()
        for base in self.family.ancestors(self.cls):
            found |= class_fact("tensors", base, partial(self._made_by, base))
        return found - set(self.attrs)

    def _made_by(self, base: ClassInfo) -> frozenset[str]:
        """`_made_tensors` of `base`, once an analysis by node."""
        if id(base.node) not in self.ctx.made_tensors:
            self.ctx.hold(base.node)
            self.ctx.made_tensors[id(base.node)] = frozenset(_made_tensors(base))
        return self.ctx.made_tensors[id(base.node)]

    def inherited_modules(self) -> dict[str, ClassInfo]:
        """Module attributes a base class creates in its `__init__` and this class does not
        assign: attribute -> the nearest base assigning it."""
        if self._inherited is None:
            self._inherited = {}
            for base in self.family.ancestors(self.cls):
                init = base.methods().get("__init__")
                for node in all_nodes(init) if init is not None else ():
                    if isinstance(node, ast.Assign) and isinstance(
                        node.value, (ast.Call, ast.IfExp)
                    ):
                        for target in node.targets:
                            if (
                                self_attr(target)
                                and target.attr not in self.attrs
                                and target.attr not in self.assigned_elsewhere
                                and _value_kind(node.value, base.file.names.resolve) is None
                            ):
                                self._inherited.setdefault(target.attr, base)
        return self._inherited

    def aliases(self) -> dict[str, str]:
        """`self.b = self.a` in `__init__` (b assigned once), where a holds a module: b -> a."""
        return {
            a: info.value.attr
            for a, info in self.attrs.items()
            if self_attr(info.value)
            and info.count == 1
            and info.value.attr in self.attrs
            and isinstance(self.attrs[info.value.attr].value, (ast.Call, ast.IfExp))
            and info.value.attr not in self.tensor_attrs
        }


def _made_tensors(cls: ClassInfo) -> set[str]:
    """The attributes the methods of `cls` set to a tensor or register as state."""
    found: set[str] = set()
    for method in cls.methods().values():
        for node in all_nodes(method):
            if type(node) not in _SETTING:
                continue
            if isinstance(node, ast.Assign) and any(self_attr(t) for t in node.targets):
                if _value_kind(node.value, cls.file.names.resolve) == "tensor":
                    found.update(t.attr for t in node.targets if self_attr(t))
            elif registered := _registered(node):
                found.add(registered[0])
    return found


_SETTING = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Call})
"""The node classes that may set an attribute: assignments, and `register_buffer(...)` calls."""


def _registered(node: ast.AST) -> tuple[str, str] | None:
    """(name, "buffer" or "parameter") for `self.register_buffer("name", ...)` and the like."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("register_buffer", "register_parameter")
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return str(node.args[0].value), node.func.attr.removeprefix("register_")
    return None


_PLAIN_CALLS = frozenset("float int bool str len round".split())
_STATE_MAKERS = frozenset(("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer"))


def _value_kind(value: ast.expr, resolve) -> str | None:
    """'tensor' (a parameter, buffer or tensor made by torch), 'plain' (a number or string
    made by a builtin or `math`) or None (anything else: a module when it is a call)."""
    made_by = resolve(value.func if isinstance(value, ast.Call) else value)
    if made_by in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer") or (
        isinstance(value, ast.Call)
        and made_by
        and made_by.startswith("torch.")
        and not made_by.startswith("torch.nn.")
        and made_by not in NOT_TENSOR_TORCH
    ):
        return "tensor"
    if isinstance(value, ast.Call) and (
        (isinstance(value.func, ast.Name) and made_by is None and value.func.id in _PLAIN_CALLS)
        or (made_by or "").startswith("math.")
    ):
        return "plain"
    return None


def _once_on_every_path(block: list[ast.stmt], attr: str) -> str | None:
    """Why running `block` may not assign `self.<attr>` exactly once (None: it does, whichever
    way it goes: at its top level, or in an `if` whose every branch does)."""
    times = 0
    for stmt in block:
        if isinstance(stmt, ast.Assign) and any(
            self_attr(t) and t.attr == attr for t in stmt.targets
        ):
            times += 1
        elif isinstance(stmt, ast.If) and _assigns_attr(stmt, attr):
            if not stmt.orelse:
                return "is assigned on some paths of `__init__` only"
            why = _once_on_every_path(stmt.body, attr) or _once_on_every_path(stmt.orelse, attr)
            if why:
                return why
            times += 1
        elif _assigns_attr(stmt, attr):
            return "is assigned in a loop or block of `__init__` that may repeat or skip it"
    if times == 0:
        return "is assigned on some paths of `__init__` only"
    return None if times == 1 else "is assigned more than once on a path of `__init__`"


def _assigns_attr(stmt: ast.stmt, attr: str) -> bool:
    return any(
        isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and any(
            self_attr(t) and t.attr == attr
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        for node in ast.walk(stmt)
    )
