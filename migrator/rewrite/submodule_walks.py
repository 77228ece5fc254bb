"""Methods of a class that go through its own submodules (`for m in self.modules(): ...`), and
whether a module migrator creates would change what they do."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from migrator import catalog
from migrator.rewrite.context import FileContext

# Reading these in a method means the class's behaviour may depend on its set of submodules.
VIEWS = frozenset({"children", "named_children", "modules", "named_modules", "_modules"})
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

    def touches(self, made: str | None) -> str | None:
        """Why a new submodule of class `made` (qualified name; None: not known) may change
        the walk (None: it provably does not)."""
        where = f"`{self.method}` goes through `self.{self.view}`"
        if self.filters is None:
            return f"{where}: a new submodule would join the modules it goes through"
        hit = next(
            (f for f in sorted(self.filters) if not _never_instance(made, f, self.project)), None
        )
        if hit is None:
            return None
        acts = f"{where} and acts on its `{_short(hit)}` submodules"
        if made == hit:
            return f"{acts}: it would act on the new one"
        made = f"`{_short(made)}`" if made else "module"
        return f"{acts}: a new {made} is not proven not to be one"


def submodule_walks(ctx: FileContext, methods: dict[str, ast.FunctionDef]) -> list[Walk]:
    """Every walk of the class's own submodules by a method other than `__init__`, with what
    it touches."""
    walks: list[Walk] = []
    for method in methods.values():
        if method.name == "__init__":
            continue
        proven: set[int] = set()  # the `self.<view>` of each loop whose reach is known
        for visit in ctx.visits(method):
            node = visit.node
            if isinstance(node, ast.For):
                filtered = _filtered_loop(ctx, method, node)
                if filtered is not None:
                    proven.add(id(node.iter.func))  # type: ignore[attr-defined]
                    view, classes = filtered
                    project = frozenset(
                        c
                        for c in classes
                        if not c.startswith("torch.") and ctx.project.find_class(c, ctx.info)
                    )
                    walks.append(Walk(method.name, view, classes, project))
            elif _self_view(node) and id(node) not in proven:
                walks.append(Walk(method.name, node.attr, None))  # type: ignore[attr-defined]
    return walks


def _self_view(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr in VIEWS
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _filtered_loop(
    ctx: FileContext, method: ast.FunctionDef, loop: ast.For
) -> tuple[str, frozenset[str]] | None:
    """(view, classes) of `for m in self.modules(): if isinstance(m, C): ...` (also
    `for name, m in self.named_modules()`, an `elif isinstance(m, D)` chain) whose body acts
    only on submodules of the classes tested; None for any other loop."""
    call = loop.iter
    if not (
        isinstance(call, ast.Call)
        and not call.args
        and not call.keywords
        and _self_view(call.func)
        and not loop.orelse
    ):
        return None
    view = call.func.attr  # type: ignore[attr-defined]
    target = loop.target
    if view in _NAMED:
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return None
        name, target = target.elts
        if not isinstance(name, ast.Name) or _reads(loop.body, name.id):
            return None
    if not isinstance(target, ast.Name):
        return None
    classes: set[str] = set()
    shadowed = ctx.locals_of(method)
    for stmt in loop.body:
        chain: ast.stmt | None = stmt
        while chain is not None:
            if not isinstance(chain, ast.If):
                return None
            tested = _isinstance_of(ctx, chain.test, target.id, shadowed)
            if tested is None:
                return None
            classes |= tested
            if not chain.orelse:
                chain = None
            elif len(chain.orelse) == 1:
                chain = chain.orelse[0]
            else:
                return None
    return view, frozenset(classes)


def _isinstance_of(
    ctx: FileContext, test: ast.expr, name: str, shadowed: set[str]
) -> set[str] | None:
    """The classes `isinstance(<name>, C)` or `isinstance(<name>, (C, D))` tests (None: the
    test is something else, or a class is not known by its qualified name)."""
    if not (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and "isinstance" not in shadowed
        and len(test.args) == 2
        and not test.keywords
        and isinstance(test.args[0], ast.Name)
        and test.args[0].id == name
    ):
        return None
    spec = test.args[1]
    parts = spec.elts if isinstance(spec, ast.Tuple) else [spec]
    classes = {ctx.info.names.resolve(p, shadowed) for p in parts}
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
