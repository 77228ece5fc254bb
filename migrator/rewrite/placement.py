"""Where new modules go in `__init__`: in forward's order, each right after the existing module
that runs before it (and after what its arguments read); a class without an `__init__` of its
own gets one."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from migrator.rewrite.attributes import ClassAttributes, InitAttr
from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.layout import INDENT, call_text
from migrator.rewrite.order import ForwardOrder, Key


_RUNNING = frozenset({ast.Call, ast.For, ast.AsyncFor})
"""The node classes `record_runs` reads."""


@dataclass
class Registration:
    """A module the rewrite creates in `__init__`, placed where forward runs it."""

    key: Key
    """When forward first runs it (see `order`)."""
    code: str
    deps: set[str]
    """`self` attributes its constructor arguments read: it must come after them."""
    copy_of: InitAttr | None = None
    """The module it copies (a split): it must come after it, in the same block."""
    floor: int = 0
    """Top-level `__init__` statement it must follow (where a container it counts is final)."""
    args: tuple[str, ...] | None = None
    """The constructor's arguments, when `code` is the statement up to the call's `(`."""
    ceiling: int | None = None
    """Top-level `__init__` statement it must precede (that statement runs the method using
    it); what it reads and `floor` come before it (`Scanner` checks)."""
    within: InitAttr | None = None
    """The assignment, in a block of `__init__`, of the container that counts its copies: it
    goes right after it (what it reads comes before it: `Scanner` checks)."""

    def text(self, column: int, limit: int) -> str:
        """The statement, for a line indented by `column`, within `limit` columns."""
        return self.code if self.args is None else call_text(self.code, [*self.args], column, limit)


class Placement:
    """The existing modules' runs on one class's forward path, and the new modules placed
    among them."""

    def __init__(self, ctx: FileContext, attributes: ClassAttributes, order: ForwardOrder) -> None:
        self.ctx = ctx
        self.attributes = attributes
        self.order = order
        self.runs: list[tuple[Key, str]] = []
        """(key, attribute) of every call of a module attribute on the forward path."""

    def record_runs(self, method: ast.FunctionDef, module_attrs: set[str]) -> None:
        """Calls of module attributes (`self.conv(x)`, `self.blocks[i](x)`, `for b in
        self.blocks`) in `method`, also of attributes holding what `__init__` was given."""
        for visit in self.ctx.visits_of(method, _RUNNING):
            node = visit.node
            if isinstance(node, ast.Call):
                owner = node.func.value if isinstance(node.func, ast.Subscript) else node.func
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                owner = node.iter
            else:
                continue
            if self_attr(owner) and (
                owner.attr in module_attrs or owner.attr in self.attributes.attrs
            ):
                self.runs.append((self.order.key(method, node), owner.attr))

    def place(self, registrations: list[Registration]) -> None:
        """Insert the new modules in `__init__` in forward's order."""
        if not registrations:
            return
        registrations = sorted(registrations, key=lambda r: r.key)
        init, cls = self.attributes.init, self.attributes.cls
        if init is None:
            first = next(
                s for s in cls.node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            )
            column = first.col_offset + len(INDENT)
            body = "".join(
                f"{INDENT}{line}\n"
                for r in registrations
                for line in r.text(column, self.ctx.plan.line_length).split("\n")
            )
            self.ctx.plan.insert_before(
                first.lineno,
                "def __init__(self, *args, **kwargs):\n"
                "    super().__init__(*args, **kwargs)\n" + body,
            )
            return
        attrs = self.attributes.attrs
        runs = sorted((key, attrs[attr].top_index) for key, attr in self.runs if attr in attrs)
        floor = self.attributes.super_index
        assert floor is not None  # modules are created only after `super().__init__()`
        for registration in registrations:
            line, floor = self._line_for(registration, runs, floor)
            self.ctx.plan.insert_after(
                line, registration.text(init.body[0].col_offset, self.ctx.plan.line_length)
            )

    def _line_for(
        self, registration: Registration, runs: list[tuple[Key, int]], floor: int
    ) -> tuple[int, int]:
        """(line of the `__init__` statement the registration goes after, the top-level index
        the next registration may not precede): after the existing module that runs before it,
        what its arguments read, and the modules created before it."""
        init, attrs = self.attributes.init, self.attributes.attrs
        assert init is not None  # `place` inserts into it
        if registration.within is not None:
            return registration.within.stmt.lineno, floor
        needs = [registration.floor] + [attrs[d].top_index for d in registration.deps]
        index = max([floor, *needs])
        before = [top for key, top in runs if key < registration.key]
        preceding = max(before[-1], index) if before else index
        ceiling = registration.ceiling
        if ceiling is not None and preceding >= ceiling:  # out of forward's order, in time
            assert self.attributes.super_index is not None  # `place` starts after it
            preceding = max([self.attributes.super_index, *needs])
            assert preceding < ceiling  # `Scanner._ceiling` checked it
            return init.body[preceding].lineno, floor
        original = registration.copy_of
        if original is None:
            return init.body[preceding].lineno, preceding
        if original.nested or not _unchanged_between(init, original, preceding):
            return original.stmt.lineno, floor
        index = max(preceding, original.top_index)
        return init.body[index].lineno, index


def copy_can_follow(
    attributes: ClassAttributes, original: InitAttr, deps: set[str], floor: int
) -> bool:
    """Whether a copy of `original` whose constructor also reads `deps` (and what is final
    after top-level statement `floor`) can be placed after all of them: `_line_for` keeps a
    copy beside its original when the names it reads change later."""
    init = attributes.init
    assert init is not None  # it assigns `original`
    needed = max([floor] + [attributes.attrs[d].top_index for d in deps])
    if needed < original.top_index or (needed == original.top_index and not original.nested):
        return True
    return not original.nested and _unchanged_between(init, original, len(init.body) - 1)


def _unchanged_between(init: ast.FunctionDef, original: InitAttr, index: int) -> bool:
    """Whether the names a module's constructor reads keep their values from its own
    statement to the end of top-level statement `index` of `__init__`."""
    names = {n.id for n in ast.walk(original.value) if isinstance(n, ast.Name)} - {"self"}
    attrs = {n.attr for n in ast.walk(original.value) if self_attr(n)}
    for stmt in init.body[original.top_index + 1 : index + 1]:
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Name)
                and not isinstance(node.ctx, ast.Load)
                and (node.id in names)
            ):
                return False
            if self_attr(node) and not isinstance(node.ctx, ast.Load) and node.attr in attrs:
                return False
    return True
