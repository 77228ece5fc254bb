"""Methods of a class that go through its own submodules (`for m in self.modules(): ...`), and
whether a module migrator creates would change what they do."""

from __future__ import annotations

import ast
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from migrator import catalog
from migrator.rewrite.context import FileContext
from migrator.rewrite.defined import VIEWS, reads_views, view_word_lines
from migrator.rewrite.facts import class_fact
from migrator.rewrite.project import ClassInfo, FileInfo

_NAMED = frozenset({"named_children", "named_modules"})


@dataclass(frozen=True)
class Walk:
    """One method's way through the class's submodules."""

    method: str
    view: str
    filters: frozenset[str] | None
    """Qualified names of the classes every submodule the walk touches is an instance of, by
    `isinstance` tests guarding all it does (None: it may touch any submodule)."""
    project: frozenset[str] = frozenset()
    """Those of `filters` that are classes of the project's sources."""
    exact: frozenset[str] = frozenset()
    """Classes tested by `type(m) is C`: it touches their instances only, not a subclass's."""
    names: frozenset[str] = frozenset()
    """Attribute names tested (`name in ("conv1", "conv5")`): it touches those only."""

    def touches(self, made: str | None, taken: Callable[[str], bool]) -> str | None:
        """Why a new submodule of class `made` (qualified name; None: not known), under a name
        not `taken` now, may change the walk (None: it provably does not)."""
        where = f"`{self.method}` goes through `self.{self.view}`"
        if self.filters is None:
            return f"{where}: a new submodule would join the modules it goes through"
        free = next((n for n in sorted(self.names) if not taken(n)), None)
        if free is not None:
            return f"{where} and acts on its submodule named `{free}`: a new one may take the name"
        hit = next(
            (f for f in sorted(self.filters) if not _never_instance(made, f, self.project)),
            next((c for c in sorted(self.exact) if made is None or made == c), None),
        )
        if hit is None:
            return None
        acts = f"{where} and acts on its `{_short(hit)}` submodules"
        if made == hit:
            return f"{acts}: it would act on the new one"
        made = f"`{_short(made)}`" if made else "module"
        return f"{acts}: a new {made} is not proven not to be one"


def submodule_walks(ctx: FileContext, owner: ClassInfo, classes: list[ClassInfo]) -> list[Walk]:
    """Every walk of an instance's own submodules by a method of `classes` (`owner`, the
    classes of the project it derives from and those deriving from it) other than `__init__`,
    with what it touches. What a class's methods do is read from its statement and its file's
    names alone, so it is kept a process (`facts.class_fact`: in a large package every file
    asks about the same bases); which tested classes the project's sources hold is asked each
    time."""
    walks: list[Walk] = []
    for cls in classes:
        facts = cls.facts
        if not (facts.views if facts else class_fact("views", cls, partial(_views, cls))):
            continue  # no view read (in a large package, most subclasses elsewhere)
        for method, view, tested, exact, names in class_fact(
            "walks", cls, partial(_class_walks, ctx, cls)
        ):
            label = method if cls is owner else f"{cls.name}.{method}"
            if tested is None:
                walks.append(Walk(label, view, None))
                continue
            project = frozenset(
                c
                for c in tested
                if not c.startswith("torch.") and ctx.project.find_class(c, cls.file)
            )
            walks.append(Walk(label, view, frozenset(tested), project, exact, names))
    return walks


_Found = tuple[str, str, "tuple[str, ...] | None", frozenset[str], frozenset[str]]
"""(method, view, classes tested by `isinstance` in the order found, or None: it may touch
any submodule; classes tested by `type(m) is`, attribute names tested) of one walk."""


def _class_walks(ctx: FileContext, cls: ClassInfo) -> tuple[_Found, ...]:
    """The walks of the methods of `cls` other than `__init__`, in order."""
    return tuple(
        found
        for method in cls.methods().values()
        if method.name != "__init__"
        for found in _walks_in(ctx, cls.file, method)
    )


def _views(cls: ClassInfo) -> bool:
    file, node = cls.file, cls.node
    text = file.source if file.source is not None else file.text
    lines = view_word_lines(text) if text is not None else None
    if lines is not None and file.classes.get(cls.name) is cls:  # its node is of that text
        first = bisect_left(lines, node.lineno)
        if first == len(lines) or lines[first] > (node.end_lineno or node.lineno):
            return False  # no line of the class spells a view: no need to walk it
    return reads_views(node)


def _walks_in(ctx: FileContext, file: FileInfo, method: ast.FunctionDef) -> list[_Found]:
    walks: list[_Found] = []
    proven: set[int] = set()  # the `self.<view>` of each loop whose reach is known
    for visit in ctx.visits(method):
        node = visit.node
        if isinstance(node, ast.For):
            filtered = _filtered_loop(ctx, file, method, node)
            if filtered is not None:
                view, tests = filtered
                func = node.iter.func  # type: ignore[attr-defined]
                proven.add(id(func if _self_view(func) else func.value))
                walks.append(
                    (
                        method.name,
                        view,
                        tuple(tests.classes),
                        frozenset(tests.exact),
                        frozenset(tests.names),
                    )
                )
        elif _self_view(node) and id(node) not in proven:
            walks.append((method.name, node.attr, None, frozenset(), frozenset()))  # type: ignore[attr-defined]
    return walks


def _self_view(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr in VIEWS
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


@dataclass
class _Tests:
    """What the tests guarding a walk's actions accept."""

    classes: set[str]
    """Classes tested by `isinstance`."""
    exact: set[str]
    """Classes tested by `type(m) is`."""
    names: set[str]
    """Attribute names tested by `name in ("conv1", "conv5")` or `name == "conv1"`."""

    def add(self, other: _Tests) -> None:
        self.classes |= other.classes
        self.exact |= other.exact
        self.names |= other.names


def _filtered_loop(
    ctx: FileContext, file: FileInfo, method: ast.FunctionDef, loop: ast.For
) -> tuple[str, _Tests] | None:
    """(view, tests) of `for m in self.modules(): if isinstance(m, C): ...` (also
    `for name, m in self.named_modules()` or `self._modules.items()`, an `elif` chain,
    `type(m) is D`, `name in ("a", "b")`, tests joined by `or`, or by `and` to other
    conditions) whose every action is guarded by such a test; None for any other loop."""
    view = _iterated(loop.iter)
    if view is None or loop.orelse:
        return None
    target, name = loop.target, None
    if view in _NAMED or view == "_modules.items":
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return None
        first, target = target.elts
        if not isinstance(first, ast.Name):
            return None
        name = first
    if not isinstance(target, ast.Name):
        return None
    bound = {target.id, name.id if name else target.id}
    inside = {  # the nodes of this loop and of loops binding the same names again
        id(n)
        for each in ast.walk(method)
        if each is loop
        or isinstance(each, ast.For)
        and bound & {t.id for t in ast.walk(each.target) if isinstance(t, ast.Name)}
        for n in ast.walk(each)
    }
    if any(
        isinstance(n, ast.Name) and n.id in bound and id(n) not in inside for n in ast.walk(method)
    ):
        return None  # the last submodule the loop took is read after it
    tests = _Tests(set(), set(), set())
    shadowed = ctx.locals_of(method)
    for stmt in loop.body:
        chain: ast.stmt | None = stmt
        while chain is not None:
            if not isinstance(chain, ast.If):
                return None
            tested = _tested(file, chain.test, target.id, name, shadowed)
            if tested is None or (name is not None and _reads(chain.body, name.id)):
                return None
            tests.add(tested)
            if not chain.orelse:
                chain = None
            elif len(chain.orelse) == 1:
                chain = chain.orelse[0]
            else:
                return None
    return view, tests


def _iterated(node: ast.expr) -> str | None:
    """Which view of `self`'s submodules `node` iterates (`modules`, `_modules.items`), or
    None: another iterable, or a view with arguments."""
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return None
    if _self_view(node.func):
        return node.func.attr  # type: ignore[attr-defined]
    func = node.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr in ("items", "values")
        and _self_view(func.value)
        and func.value.attr == "_modules"  # type: ignore[attr-defined]
    ):
        return f"_modules.{func.attr}"
    return None


def _tested(
    file: FileInfo, test: ast.expr, module: str, name: ast.Name | None, shadowed: set[str]
) -> _Tests | None:
    """What a test of the walked `module` (or its `name`) accepts: `isinstance`, `type(m) is`
    or a name in literals, joined by `or`; of `and`, its first such part, which runs first
    on every submodule (None: none)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        tests = _Tests(set(), set(), set())
        for value in test.values:
            part = _tested(file, value, module, name, shadowed)
            if part is None:
                return None
            tests.add(part)
        return tests
    if isinstance(test, ast.BoolOp):  # `and`: the first filtering part, if nothing before it
        for value in test.values:  # calls anything or reads the module or its name
            part = _tested(file, value, module, name, shadowed)
            if part is not None:
                return part
            if any(
                isinstance(n, ast.Call)
                or isinstance(n, ast.Name)
                and n.id in (module, name.id if name else module)
                for n in ast.walk(value)
            ):
                return None
        return None
    if name is not None:
        names = _names_tested(test, name.id)
        if names is not None:
            return _Tests(set(), set(), names)
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.Eq))
        and isinstance(test.left, ast.Call)
        and isinstance(test.left.func, ast.Name)
        and test.left.func.id == "type"
        and "type" not in shadowed
        and file.names.is_free("type")
        and len(test.left.args) == 1
        and not test.left.keywords
        and isinstance(test.left.args[0], ast.Name)
        and test.left.args[0].id == module
    ):
        exact = file.names.resolve(test.comparators[0], shadowed)
        return _Tests(set(), {exact}, set()) if exact else None
    classes = _isinstance_of(file, test, module, shadowed)
    return None if classes is None else _Tests(classes, set(), set())


def _names_tested(test: ast.expr, name: str) -> set[str] | None:
    """The strings `name == "a"` or `name in ("a", "b")` accepts (None: another test)."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.left, ast.Name)
        and test.left.id == name
    ):
        return None
    right = test.comparators[0]
    if isinstance(test.ops[0], ast.Eq):
        values = [right]
    elif isinstance(test.ops[0], ast.In) and isinstance(right, (ast.List, ast.Tuple, ast.Set)):
        values = list(right.elts)
    else:
        return None
    if not all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values):
        return None
    return {str(v.value) for v in values}  # type: ignore[attr-defined]


def _isinstance_of(
    file: FileInfo, test: ast.expr, name: str, shadowed: set[str]
) -> set[str] | None:
    """The classes `isinstance(<name>, C)` or `isinstance(<name>, (C, D))` tests (None: the
    test is something else, or a class is not known by its qualified name)."""
    if not (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and "isinstance" not in shadowed
        and file.names.is_free("isinstance")
        and len(test.args) == 2
        and not test.keywords
        and isinstance(test.args[0], ast.Name)
        and test.args[0].id == name
    ):
        return None
    spec = test.args[1]
    parts = spec.elts if isinstance(spec, ast.Tuple) else [spec]
    classes = {file.names.resolve(p, shadowed) for p in parts}
    if None in classes:
        return None
    return {c for c in classes if c is not None}


def _reads(body: list[ast.stmt], name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for s in body for n in ast.walk(s))


def _never_instance(made: str | None, cls: str, project: frozenset[str]) -> bool:
    """Whether a module of class `made` (qualified name), a class of the catalog, is provably
    not an instance of `cls`: one of the torch.nn classes no catalog class derives from
    (tests/test_catalog.py), or a class of the project's sources, from which none can."""
    if made is None or made == cls or not catalog.is_catalog_module(made):
        return False
    return cls in catalog.OTHER_MODULES or cls in project


def _short(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]
