"""Methods of a class that go through its own submodules (`for m in self.modules(): ...`,
`self.apply(self._init_weights)`), `__init__` too, and whether a module migrator creates would
change what they do."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from migrator import catalog
from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.defined import VIEWS, reads_views, view_word_lines
from migrator.rewrite.facts import class_fact
from migrator.rewrite.project import ClassInfo, FileInfo
from migrator.rewrite.walk import all_nodes

_NAMED = frozenset({"named_children", "named_modules"})


MODULE_LIST = "torch.nn.ModuleList"
"""The class of a new module that holds the copies of another made for each iteration of a
loop."""


@dataclass(frozen=True)
class Written:
    """The class of a new module that is a class `fix` writes (a helper function's or a twin):
    it derives from nn.Module alone, has no `reset_parameters` and holds modules of the catalog
    only: of `held` (qualified names, `helpers.modules_made`; None: not known)."""

    held: frozenset[str] | None = None


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
    asked: frozenset[str] = frozenset()
    """Attributes tested by `hasattr(m, "reset_parameters")`: it touches the submodules
    having one."""

    def touches(self, made: str | Written | None, taken: Callable[[str], bool]) -> str | None:
        """Why a new submodule of class `made` (qualified name, or a class `fix` writes; None:
        not known), under a name not `taken` now, may change the walk (None: it provably does
        not)."""
        where = f"`{self.method}` goes through `self.{self.view}`"
        if self.filters is None:
            return f"{where}: a new submodule would join the modules it goes through"
        free = next((n for n in sorted(self.names) if not taken(n)), None)
        if free is not None:
            return f"{where} and acts on its submodule named `{free}`: a new one may take the name"
        hit = next(
            (f for f in sorted(self.filters) if not _never_instance(made, f, self.project)),
            next((c for c in sorted(self.exact) if _may_be_exactly(made, c)), None),
        )
        if hit is None:
            attr = next((a for a in sorted(self.asked) if not _never_has(made, a)), None)
            if attr is not None:
                return (
                    f"{where} and acts on its submodules that have `{attr}`: "
                    f"a new {_shown(made)} is not proven not to have one"
                )
            return None
        acts = f"{where} and acts on its `{_short(hit)}` submodules"
        if made == hit:
            return f"{acts}: it would act on the new one"
        return f"{acts}: a new {_shown(made)} is not proven not to be one"


def submodule_walks(ctx: FileContext, owner: ClassInfo, classes: list[ClassInfo]) -> list[Walk]:
    """Every walk of an instance's own submodules by a method of `classes` (`owner`, the
    classes of the project it derives from and those deriving from it), with what it touches
    (one in `__init__` is counted wherever it is: a new module may be registered before it).
    What a class's methods do is read from its statement and its file's names alone, so it is
    kept a process (`facts.class_fact`: in a large package every file asks about the same
    bases); which tested classes the project's sources hold is asked each time."""
    walks: list[Walk] = []
    for cls in classes:
        facts = cls.facts
        if not (facts.views if facts else class_fact("views", cls, partial(_views, cls))):
            continue  # no view read (in a large package, most subclasses elsewhere)
        for method, view, tested, exact, names, asked in class_fact(
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
            walks.append(Walk(label, view, frozenset(tested), project, exact, names, asked))
    return walks


_Found = tuple[str, str, "tuple[str, ...] | None", frozenset[str], frozenset[str], frozenset[str]]
"""(method, view, classes tested by `isinstance` in the order found, or None: it may touch
any submodule; classes tested by `type(m) is`, names tested, attributes asked by `hasattr`)
of one walk."""


def _class_walks(ctx: FileContext, cls: ClassInfo) -> tuple[_Found, ...]:
    """The walks of the methods of `cls`, in order."""
    return tuple(
        found for method in cls.methods().values() for found in _walks_in(ctx, cls, method)
    )


def _views(cls: ClassInfo) -> bool:
    file, node = cls.file, cls.node
    text = file.source if file.source is not None else file.text
    lines = view_word_lines(text) if text is not None else None
    if lines is not None and file.classes.get(cls.name) is cls:  # its node is of that text
        return reads_views(node, lines)  # only its methods spanning a line spelling a view
    return reads_views(node)


def _walks_in(ctx: FileContext, cls: ClassInfo, method: ast.FunctionDef) -> list[_Found]:
    file = cls.file
    walks: list[_Found] = []
    proven: set[int] = set()  # the `self.<view>` of each loop whose reach is known
    for visit in ctx.visits(method):
        node = visit.node
        applied = _applied(cls, node)
        if applied is not None:
            function, module = applied
            proven.add(id(node.func))  # type: ignore[attr-defined]
            tests = _guarded(ctx, file, function, function.body, module, None) if function else None
            walks.append(_found(method.name, "apply", tests))
        elif isinstance(node, ast.For):
            filtered = _filtered_loop(ctx, file, method, node)
            if filtered is not None:
                view, tests = filtered
                func = node.iter.func  # type: ignore[attr-defined]
                proven.add(id(func if _self_view(func) else func.value))
                walks.append(_found(method.name, view, tests))
        elif _self_view(node) and id(node) not in proven:
            walks.append(_found(method.name, node.attr, None))  # type: ignore[attr-defined]
    return walks


def _found(method: str, view: str, tests: _Tests | None) -> _Found:
    if tests is None:
        return (method, view, None, frozenset(), frozenset(), frozenset())
    classes, exact, names = tuple(tests.classes), frozenset(tests.exact), frozenset(tests.names)
    return (method, view, classes, exact, names, frozenset(tests.asked))


def _self_view(node: ast.AST) -> bool:
    return _view(node) and isinstance(node.value, ast.Name) and node.value.id == "self"  # type: ignore[attr-defined]


def _view(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in VIEWS


@dataclass
class _Tests:
    """What the tests guarding a walk's actions accept."""

    classes: set[str]
    """Classes tested by `isinstance`."""
    exact: set[str]
    """Classes tested by `type(m) is`."""
    names: set[str]
    """Attribute names tested by `name in ("conv1", "conv5")` or `name == "conv1"`."""
    asked: set[str]
    """Attributes tested by `hasattr(m, "reset_parameters")`."""

    def add(self, other: _Tests) -> None:
        self.classes |= other.classes
        self.exact |= other.exact
        self.names |= other.names
        self.asked |= other.asked


def meets_no_new_module(
    ctx: FileContext, file: FileInfo, function: ast.FunctionDef, loop: ast.For
) -> bool:
    """Whether `loop`, of `function`, going through another module's submodules
    (`for m in backbone.modules():`), acts only on submodules passing an `isinstance` or
    `type(m) is` test no module migrator creates passes: a torch.nn class with weights no op
    module derives from, or a class of the project."""
    filtered = _filtered_loop(ctx, file, function, loop, own=False)
    return filtered is not None and _no_new_module_passes(ctx, file, filtered[1])


def applies_to_no_new_module(ctx: FileContext, file: FileInfo, applied: ast.expr) -> bool:
    """Whether the function `<module>.apply(applied)` runs on each submodule (a function of the
    file, also through `partial`) acts only on classes no module migrator creates is
    (`meets_no_new_module`)."""
    if (
        isinstance(applied, ast.Call)
        and file.names.resolve(applied.func) == "functools.partial"
        and len(applied.args) == 1
        and all(k.arg is not None for k in applied.keywords)
    ):
        applied = applied.args[0]
    function = file.functions.get(applied.id) if isinstance(applied, ast.Name) else None
    if function is None or not (function.args.posonlyargs + function.args.args):
        return False
    param = (function.args.posonlyargs + function.args.args)[0].arg
    tests = _guarded(ctx, file, function, function.body, param, None)
    return tests is not None and _no_new_module_passes(ctx, file, tests)


def _no_new_module_passes(ctx: FileContext, file: FileInfo, tests: _Tests) -> bool:
    return (
        not tests.names
        and not tests.asked
        and all(
            c in catalog.OTHER_MODULES
            or not c.startswith("torch.")
            and ctx.project.find_class(c, file) is not None
            for c in tests.classes
        )
        and not any(catalog.is_catalog_module(c) or c.startswith("torch.") for c in tests.exact)
    )


def _filtered_loop(
    ctx: FileContext, file: FileInfo, method: ast.FunctionDef, loop: ast.For, own: bool = True
) -> tuple[str, _Tests] | None:
    """(view, tests) of `for m in self.modules(): if isinstance(m, C): ...` (also
    `for name, m in self.named_modules()` or `self._modules.items()`, an `elif` chain,
    `type(m) is D`, `name in ("a", "b")`, tests joined by `or`, or by `and` to other
    conditions) whose every action is guarded by such a test; None for any other loop. Not
    `own`: of any module's submodules, not `self`'s."""
    view = _iterated(loop.iter, own)
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
        for each in all_nodes(method)
        if each is loop
        or isinstance(each, ast.For)
        and bound & {t.id for t in all_nodes(each.target) if isinstance(t, ast.Name)}
        for n in all_nodes(each)
    }
    if any(
        isinstance(n, ast.Name) and n.id in bound and id(n) not in inside for n in all_nodes(method)
    ):
        return None  # the last submodule the loop took is read after it
    tests = _guarded(ctx, file, method, loop.body, target.id, name)
    return None if tests is None else (view, tests)


def _guarded(
    ctx: FileContext,
    file: FileInfo,
    method: ast.FunctionDef,
    body: list[ast.stmt],
    module: str,
    name: ast.Name | None,
) -> _Tests | None:
    """What the tests of the submodule `module` (and its `name`) guarding every statement of
    `body` (of `method`; a docstring first aside) accept (None: a statement is not guarded). A
    body that only hands the submodule to a function of the file (`_weight_init(m)`) is that
    function's."""
    tests = _Tests(set(), set(), set(), set())
    shadowed = ctx.locals_of(method)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    handed = _handed_to(file, body, module, shadowed)
    if handed is not None and handed is not method:
        params = handed.args.posonlyargs + handed.args.args
        return _guarded(ctx, file, handed, handed.body, params[0].arg, None) if params else None
    for stmt in body:
        chain: ast.stmt | None = stmt
        while chain is not None:
            if not isinstance(chain, ast.If):
                return None
            tested = _tested(file, chain.test, module, name, shadowed)
            if tested is None or (name is not None and _reads(chain.body, name.id)):
                return None
            tests.add(tested)
            if not chain.orelse:
                chain = None
            elif len(chain.orelse) == 1:
                chain = chain.orelse[0]
            else:
                return None
    return tests


def _handed_to(
    file: FileInfo, body: list[ast.stmt], module: str, shadowed: set[str]
) -> ast.FunctionDef | None:
    """The function of the file `body` only calls with `module` (`_weight_init(m)`), if so."""
    if len(body) != 1 or not isinstance(body[0], ast.Expr):
        return None
    call = body[0].value
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id not in shadowed
        and not call.keywords
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Name)
        and call.args[0].id == module
    ):
        return None
    return file.functions.get(call.func.id)


def _applied(cls: ClassInfo, node: ast.AST) -> tuple[ast.FunctionDef | None, str] | None:
    """For `self.apply(f)`: (the function `f` runs on each submodule, the name of its
    parameter taking it) when `f` is a method of `cls` (`self._init_weights`, also through
    `partial`) or a function of its file, else (None, ''); None for any other node."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "apply"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    ):
        return None
    unknown: tuple[ast.FunctionDef | None, str] = (None, "")
    if len(node.args) != 1 or node.keywords:
        return unknown
    applied = node.args[0]
    if (
        isinstance(applied, ast.Call)
        and cls.file.names.resolve(applied.func) == "functools.partial"
        and applied.args
    ):
        if len(applied.args) > 1 or any(k.arg is None for k in applied.keywords):
            return unknown
        applied = applied.args[0]
    if isinstance(applied, ast.Attribute) and self_attr(applied):
        function = cls.methods().get(applied.attr)
        first = 1  # after `self`
        if function is not None and any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list
        ):
            first = 0
    elif isinstance(applied, ast.Name):
        function, first = cls.file.functions.get(applied.id), 0
    else:
        return unknown
    if function is None or len(function.args.posonlyargs + function.args.args) <= first:
        return unknown
    return function, (function.args.posonlyargs + function.args.args)[first].arg


def _iterated(node: ast.expr, own: bool = True) -> str | None:
    """Which view of `self`'s submodules (not `own`: any module's) `node` iterates (`modules`,
    `_modules.items`), or None: another iterable, or a view with arguments."""
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return None
    view = _self_view if own else _view
    if view(node.func):
        return node.func.attr  # type: ignore[attr-defined]
    func = node.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr in ("items", "values")
        and view(func.value)
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
        tests = _Tests(set(), set(), set(), set())
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
    asked = _builtin_on(file, test, "hasattr", module, shadowed)
    if isinstance(asked, ast.Constant) and isinstance(asked.value, str):
        return _Tests(set(), set(), set(), {asked.value})
    if name is not None:
        names = _names_tested(test, name.id)
        if names is not None:
            return _Tests(set(), set(), names, set())
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
        return _Tests(set(), {exact}, set(), set()) if exact else None
    classes = _isinstance_of(file, test, module, shadowed)
    return None if classes is None else _Tests(classes, set(), set(), set())


def _builtin_on(
    file: FileInfo, test: ast.expr, builtin: str, module: str, shadowed: set[str]
) -> ast.expr | None:
    """`X` when `test` is `<builtin>(<module>, X)`, the builtin not rebound (None: not)."""
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == builtin
        and builtin not in shadowed
        and file.names.is_free(builtin)
        and len(test.args) == 2
        and not test.keywords
        and isinstance(test.args[0], ast.Name)
        and test.args[0].id == module
    ):
        return test.args[1]
    return None


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
    spec = _builtin_on(file, test, "isinstance", name, shadowed)
    if spec is None:
        return None
    parts = spec.elts if isinstance(spec, ast.Tuple) else [spec]
    classes = {file.names.resolve(p, shadowed) for p in parts}
    if None in classes:
        return None
    return {c for c in classes if c is not None}


def _reads(body: list[ast.stmt], name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for s in body for n in ast.walk(s))


def _never_instance(made: str | Written | None, cls: str, project: frozenset[str]) -> bool:
    """Whether a module of class `made` (qualified name), a class of the catalog, is provably
    not an instance of `cls`: one of the torch.nn classes no catalog class derives from, another
    catalog class it does not derive from (tests/test_catalog.py), or a class of the project's
    sources, from which none can. A class `fix` writes and the nn.ModuleList of copies derive
    from nn.Module alone (the modules the list holds are judged on their own; those the class
    holds decide a catalog class)."""
    unrelated = cls in catalog.OTHER_MODULES or cls in project
    if made == MODULE_LIST:
        return unrelated or catalog.is_catalog_module(cls)
    if isinstance(made, Written):
        if made.held is None or not catalog.is_catalog_module(cls):
            return unrelated
        return all(_never_instance(m, cls, project) for m in made.held)
    if made is None or made == cls or not catalog.is_catalog_module(made):
        return False
    if unrelated:
        return True
    made, cls = catalog.catalog_origin(made), catalog.catalog_origin(cls)
    return (
        catalog.is_catalog_module(cls)
        and made != cls
        and made not in catalog.CATALOG_SUBCLASSES.get(cls, ())
    )


def _may_be_exactly(made: str | Written | None, cls: str) -> bool:
    """Whether a new module of class `made` (or one it holds) may be of class `cls` exactly."""
    if isinstance(made, Written):
        if made.held is None:
            return catalog.is_catalog_module(cls) or cls.startswith("torch.")
        return cls in made.held
    return made is None or made == cls


def _never_has(made: str | Written | None, attr: str) -> bool:
    """Whether a module of class `made`, a class of the catalog, has no attribute `attr`: no
    `reset_parameters` but on a `RESETTABLE` class, else none of the names `catalog.has_attribute`
    may find (a class `fix` writes, whose attributes are named after its ops and helpers: no
    `reset_parameters`, nor any module it holds)."""
    if isinstance(made, Written):
        held = made.held
        return (
            attr == "reset_parameters"
            and held is not None
            and all(_never_has(m, attr) for m in held)
        )
    if made == MODULE_LIST:
        return not catalog.has_attribute(made, attr)
    if made is None or not catalog.is_catalog_module(made):
        return False
    if attr == "reset_parameters":
        return catalog.catalog_origin(made) not in catalog.RESETTABLE
    return not catalog.has_attribute(made, attr)


def _shown(made: str | Written | None) -> str:
    return f"`{_short(made)}`" if isinstance(made, str) else "module"


def _short(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]
