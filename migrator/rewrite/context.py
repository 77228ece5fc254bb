"""What the analysis of one file shares: the file's facts, the plan and findings being built,
and how the file can name the classes it creates."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar, cast

from migrator.findings import Finding
from migrator.refusal import Refusal
from migrator.rewrite.layout import from_import_text
from migrator.rewrite.plan import Located, Plan, Positions, Replace
from migrator.rewrite.names import BINDERS, function_locals
from migrator.rewrite.order import post_order
from migrator.rewrite.project import FileInfo, Project
from migrator.rewrite.walk import Visit, all_nodes, of_kinds, walked
from migrator.suppress import Suppressions, suppressed

if TYPE_CHECKING:
    from migrator.rewrite.helper_modules import HelperModules
    from migrator.rewrite.loops import Copies

MANY = 1 << 30
"""Call count standing for 'runs an unknown number of times' (loops)."""


@dataclass
class Site:
    """A call of a module attribute (`self.act(x)`) on the forward path."""

    attr: str
    func: ast.expr
    times: int
    key: tuple[int, ...]
    """When forward runs it (see `order`)."""
    pending: tuple[Replace, ast.Call, str, str] | None = None
    """A rewrite that calls this module (prelu's weight owner), applied only if it stays the
    module's single call: (replace, node, message, op as called)."""
    skipped: bool = False
    """Under a `# migrator: skip` pragma: counts as a call, but its code is never changed."""
    method: ast.FunctionDef | None = None
    """The method holding the call."""
    loop: Copies | str | None = None
    """In a loop: the copies it can index, or why none can be (None: not in a loop)."""


_T = TypeVar("_T")
_CALLS: weakref.WeakKeyDictionary[ast.AST, list[ast.Call]] = weakref.WeakKeyDictionary()
_CALL_VISITS: weakref.WeakKeyDictionary[ast.AST, list[tuple[ast.Call, Visit]]] = (
    weakref.WeakKeyDictionary()
)
_POSITIONS: weakref.WeakKeyDictionary[ast.AST, dict[int, int]] = weakref.WeakKeyDictionary()
_LOCALS: weakref.WeakKeyDictionary[ast.AST, set[str]] = weakref.WeakKeyDictionary()
"""What `calls_in`, `call_visits`, `positions_of` and `locals_of` found for a function, kept a
process while the function is alive (as its walk, `walk.walked`; `visits_of` is
`walk.of_kinds`): they depend on the function alone, and the files of a run read the same bases
and siblings. Shared: never changed."""
ATTRIBUTES = frozenset({ast.Attribute})
"""The node classes of `visits_of` attributes."""
_CALL_KINDS = frozenset({ast.Call})
_ALIASING = frozenset({ast.Name, ast.arg, ast.Assign})
"""The node classes `aliases` reads."""


def _once(
    table: weakref.WeakKeyDictionary[ast.AST, _T], func: ast.AST, find: Callable[[], _T]
) -> _T:
    found = table.get(func)
    if found is None:
        found = table[func] = find()
    return found


@dataclass
class FileContext:
    """What one file's analysis shares across its classes."""

    path: str
    source: str
    info: FileInfo
    project: Project
    ops_module: str
    positions: Positions
    plan: Plan = field(default_factory=Plan)
    disable: frozenset[str] = frozenset()
    """Finding codes whose fixes are not made (nor reported)."""
    toolkit: str = ""
    """The toolkit whose op-module classes replace migrator's where the catalog names one."""
    findings: list[Finding] = field(default_factory=list)
    skip: set[int] = field(default_factory=set)
    suppress: Suppressions = field(default_factory=dict)
    """`# noqa: CODE` and `# migrator: skip[CODE]` comments, by line."""
    class_names: dict[str, frozenset[str]] = field(default_factory=dict)
    helpers_seen: set[int] = field(default_factory=set)
    """Helper functions (and calls of helpers in other files) already reported."""
    helper_modules: HelperModules | None = None
    """The helper functions of the file that become modules."""
    helper_calls: set[int] = field(default_factory=set)
    """Calls of helper functions that become calls of their modules."""
    plain_calls: set[int] = field(default_factory=set)
    """Calls of helper functions that run no op: given values holding no tensor, they run
    none (`helpers.plain_calls`)."""
    tensor_params: dict[int, set[str]] = field(default_factory=dict)
    """id(helper function) -> its parameters a forward-path call gives a proven tensor
    (`helpers.record_tensor_params`)."""
    shared: dict[str, str] = field(default_factory=dict)
    """Classes of this file whose instances are handed to several modules, and where (MIG117)."""
    _visits: dict[int, list[Visit]] = field(default_factory=dict)
    _locals: dict[int, set[str]] = field(default_factory=dict)
    _calls: dict[int, list[ast.Call]] = field(default_factory=dict)
    _call_visits: dict[int, list[tuple[ast.Call, Visit]]] = field(default_factory=dict)
    _of_kinds: dict[tuple[int, frozenset[type]], list[Visit]] = field(default_factory=dict)
    _positions: dict[int, dict[int, int]] = field(default_factory=dict)
    patches: dict[int, tuple[object, tuple[str, tuple[str, int]] | None]] = field(
        default_factory=dict
    )
    """By id of a catalog op (held with it): where the project stores into a callable of it,
    and that store (`scan._patch_of`); it depends on the op and the file alone."""
    _held: dict[int, object] = field(default_factory=dict)
    """Everything a cache keyed by `id` holds results of, by id (`hold`)."""
    inferred_returns: dict[int, ast.expr | None] = field(default_factory=dict)
    """What each function without a return annotation is proven to return, by id (held)."""
    plain_results: dict[int, bool] = field(default_factory=dict)
    """Whether each function returns no tensor when given none (`helpers.plain_result`), by id
    (held)."""
    no_op_helpers: dict[int, bool] = field(default_factory=dict)
    """Whether each function runs no op when given values holding no tensor
    (`helpers.runs_no_op`), by id (held)."""
    made_tensors: dict[int, frozenset[str]] = field(default_factory=dict)
    """The tensor attributes each class makes in its methods, by id of its node (held)."""
    from_imports: dict[str, list[str]] = field(default_factory=dict)
    plain_imports: list[str] = field(default_factory=list)
    held_facts: Any = None
    promoted: set[str] = field(default_factory=set)
    """Plain classes whose analysis runs as a module's, to become one (`plain_modules`)."""
    renamed: list[tuple[ast.FunctionDef | ast.Attribute, str]] = field(default_factory=list)
    """Nodes of the file's tree renamed `forward` while it is analysed, each with its name:
    the `__call__` of a plain class that becomes a module (`promotion`). The tree is cached
    for other readers: `restore_names` puts the names back."""

    def restore_names(self) -> None:
        """Give the nodes of `renamed` their names back."""
        for node, name in self.renamed:
            if isinstance(node, ast.FunctionDef):
                node.name = name
            else:
                node.attr = name
        self.renamed.clear()

    """What `held_methods` reads of the file, worked out once for all its classes."""

    def hold(self, thing: object) -> None:
        """Keep `thing` alive as long as the file's analysis: its caches are keyed by `id` of
        nodes, and a node made for a while (a helper's stand-in class and its `forward`) must
        never leave its id to another one."""
        self._held[id(thing)] = thing

    def visits(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Visit]:
        """`walk(func)`, computed once per function (`walked`)."""
        if id(func) not in self._visits:
            self.hold(func)
            self._visits[id(func)] = walked(func)
        return self._visits[id(func)]

    def aliases(
        self, func: ast.FunctionDef, held: Callable[[ast.expr], str | None]
    ) -> dict[str, str]:
        """Local names `func` binds once, each to what `held` reads of the value it is bound
        to (`act = self.act`: `act` -> `act`; None: not an alias)."""
        bound: dict[str, int] = {}
        found: dict[str, str] = {}
        for node in (visit.node for visit in self.visits_of(func, _ALIASING)):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                bound[node.id] = bound.get(node.id, 0) + 1
            elif isinstance(node, ast.arg):
                bound[node.arg] = bound.get(node.arg, 0) + 1
            elif (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and (attr := held(node.value)) is not None
            ):
                found[node.targets[0].id] = attr
        return {name: attr for name, attr in found.items() if bound.get(name) == 1}

    def visits_of(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, kinds: frozenset[type]
    ) -> list[Visit]:
        """The visits of `func` (`visits`) whose node is of one of the node classes `kinds`, in
        their order, found once per function and `kinds`: the passes reading a few classes of
        nodes (assignments, attributes) need not go over every node again."""
        found = self._of_kinds.get((id(func), kinds))
        if found is None:
            self.visits(func)
            found = self._of_kinds[id(func), kinds] = of_kinds(func, kinds)
        return found

    def call_visits(self, func: ast.FunctionDef) -> list[tuple[ast.Call, Visit]]:
        """(call, its visit) of each call in `func`'s body (in the order of `visits`), found
        once per function: the loops that read calls alone need not pass over every node."""
        if id(func) not in self._call_visits:
            calls = self.visits_of(func, _CALL_KINDS)
            self._call_visits[id(func)] = _once(
                _CALL_VISITS,
                func,
                lambda: [(cast(ast.Call, v.node), v) for v in calls],
            )
        return self._call_visits[id(func)]

    def calls_in(self, func: ast.FunctionDef) -> list[ast.Call]:
        """The calls in `func`: its body's (from `visits`), then those of its decorators,
        parameters and return annotation; found once per function."""
        if id(func) not in self._calls:
            head = [*func.decorator_list, func.args, *([func.returns] if func.returns else [])]
            self._calls[id(func)] = _once(
                _CALLS,
                func,
                lambda: [
                    *(node for node, _ in self.call_visits(func)),
                    *(n for part in head for n in all_nodes(part) if isinstance(n, ast.Call)),
                ],
            )
        return self._calls[id(func)]

    def positions_of(self, func: ast.FunctionDef) -> dict[int, int]:
        """`post_order(func)`, computed once per function."""
        if id(func) not in self._positions:
            self.hold(func)
            self._positions[id(func)] = _once(_POSITIONS, func, lambda: post_order(func))
        return self._positions[id(func)]

    def locals_of(self, func: ast.FunctionDef) -> set[str]:
        """`function_locals(func)`, computed once per function."""
        if id(func) not in self._locals:
            self.hold(func)
            self._locals[id(func)] = _once(
                _LOCALS,
                func,
                lambda: function_locals(func, (v.node for v in self.visits_of(func, BINDERS))),
            )
        return self._locals[id(func)]

    def report(
        self,
        node: Located,
        code: str,
        message: str,
        *,
        op: str = "",
        module: str = "",
        attr: str = "",
        reason: str = "",
    ) -> None:
        """A finding at `node`; the keywords are `Finding`'s structured fields."""
        self.findings.append(
            Finding(
                self.path,
                node.lineno,
                self.positions.column(node.lineno, node.col_offset),
                code,
                message,
                op,
                module,
                attr,
                reason,
            )
        )

    def suppressed(self, node: Located, code: str) -> bool:
        """Is `code` suppressed on the line of `node` (where its finding would be)?"""
        return suppressed(self.suppress, node.lineno, code)

    def refuse(self, node: Located, refusal: Refusal) -> None:
        """A finding at `node` for a rewrite that was not made: the refusal is its reason."""
        assert refusal.code is not None  # the static checker refuses only with a finding code
        self.report(node, refusal.code, refusal.message, reason=refusal.message)

    def text(self, node: Located) -> str:
        return self.positions.segment(node)

    def block_text(self, node: Located, stmt: ast.stmt) -> str:
        """The node's text for a new statement beside `stmt`: continuation lines lose the
        statement's indentation, which the codemod adds back."""
        lines = self.text(node).split("\n")
        indent = " " * stmt.col_offset
        return "\n".join(lines[:1] + [l.removeprefix(indent) for l in lines[1:]])

    def module_ref(self, qualname: str) -> str:
        """How this file can name a class, adding the fewest imports needed."""
        if qualname.startswith("migrator.nn."):
            qualname = self.ops_module + qualname[len("migrator.nn") :]
        names = self.info.names
        package, cls = qualname.rsplit(".", 1)
        dotted = not self._shadowed(package)
        spelled = names.alias_for(qualname) if dotted else None
        if spelled:
            return spelled
        for table in (self.from_imports, self.plan.import_names):
            if cls in table.get(package, ()):
                return cls
        if package == "torch.nn":
            if "nn" in self.from_imports.get("torch", ()):
                return f"nn.{cls}"
            if names.is_free("nn") and "nn" not in self.pending_names():
                self.from_imports.setdefault("torch", []).append("nn")
                return f"nn.{cls}"
            if names.is_free("torch"):
                self._add_plain("torch")
                return qualname
        elif names.is_free(cls) and cls not in self.pending_names():
            if any(  # the codemod adds names to absolute imports only
                isinstance(s, ast.ImportFrom) and s.level == 0 and s.module == package
                for s in self.info.tree.body
            ):
                self.plan.import_names.setdefault(package, []).append(cls)
            else:
                self.from_imports.setdefault(package, []).append(cls)
            return cls
        top = package.split(".")[0]
        if names.is_free(top) and dotted:
            self._add_plain(package)
            return qualname
        raise Refusal("MIG109", f"no free name to import `{qualname}` under")

    def _shadowed(self, module: str) -> bool:
        """Whether a package of the project on the way to `module` binds the name of the next
        part to something else (torchvision's `ops/__init__.py` binds `roi_align` to the
        function of `ops/roi_align.py`): `torchvision.ops.roi_align.RoiAlign`, or
        `roi_align.RoiAlign` after `from torchvision.ops import roi_align`, is then no class;
        only `from torchvision.ops.roi_align import RoiAlign` names it."""
        parts = module.split(".")
        if parts[0] in ("torch", self.ops_module.split(".")[0]):
            return False
        for at in range(1, len(parts)):
            found = self.project.load(".".join(parts[:at]))
            if found is None:
                continue
            bound = found.names.imports.get(parts[at])
            if (bound is not None and bound != ".".join(parts[: at + 1])) or (
                parts[at] in found.names.local
            ):
                return True
        return False

    def pending_names(self) -> set[str]:
        """Names this run adds to the file: imported classes, and helper functions' classes."""
        return {
            n
            for table in (self.from_imports, self.plan.import_names)
            for names in table.values()
            for n in names
        } | {helper.name for helper in self.plan.helper_classes.values()}

    def _add_plain(self, module: str) -> None:
        if module not in self.plain_imports:
            self.plain_imports.append(module)

    def finish(self) -> None:
        self.plan.imports = [f"import {m}" for m in sorted(self.plain_imports)] + [
            from_import_text(module, sorted(names), 0, self.plan.line_length)
            for module, names in sorted(self.from_imports.items())
        ]
        self.plan.package = self.info.names.module.split(".")[0]
        self.findings.sort()


def self_attr(node: object) -> TypeGuard[ast.Attribute]:
    return (  # `type(...) is`: no class derives from these (cheaper than `isinstance`)
        type(node) is ast.Attribute and type(value := node.value) is ast.Name and value.id == "self"
    )


def own_class(name: str, node: ast.expr) -> bool:
    """Whether `node` is the instance or its class (named `name`): `self`, `type(self)`,
    `self.__class__`, or the class by its name."""
    if isinstance(node, ast.Name):
        return node.id in ("self", name)
    if isinstance(node, ast.Attribute):
        return node.attr == "__class__" and own_class(name, node.value)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
        and own_class(name, node.args[0])
    )


def named_attribute(node: ast.expr) -> str | None:
    """The attribute `getattr(self, "<name>")` reads, None for anything else."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) == 2
        and not node.keywords
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "self"
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None
