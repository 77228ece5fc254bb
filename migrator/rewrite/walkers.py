"""Code that walks another module's children in registration order (MIG113).

`IntermediateLayerGetter`, `nn.Sequential(*list(model.children())[:-1])` and feature extractors
run a model's children one after another. The modules migrator creates are registered where
forward runs them, so such a walk still follows forward where it did before; but the children
list grows, so a slice of it or a walk that stops at a given child may take them in. A walk of
all its submodules (`model.modules()`, `named_modules()`) meets them too, unless it acts only on
classes none of them is (`submodule_walks.meets_no_new_module`). Each walk is reported with
where the walked module comes from, for a person to check.
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator

from migrator.rewrite.context import FileContext, self_attr
from migrator.rewrite.defined import lines_spelling
from migrator.rewrite.submodule_walks import applies_to_no_new_module, meets_no_new_module

_VIEWS = frozenset({"children", "named_children"})
_ALL = frozenset({"modules", "named_modules"})
_LIBRARY_WALKERS = {
    "IntermediateLayerGetter": ("torchvision.models._utils",),
    "BackboneWithFPN": ("torchvision.models.detection.backbone_utils",),
    **{
        name: ("timm.models._features", "timm.models")
        for name in ("FeatureDictNet", "FeatureListNet", "FeatureHookNet")
    },
}
"""Classes of torchvision and timm whose constructor runs the children of the model it is
given (its first argument) in registration order: the call is the walk."""


def walks_children(text: str) -> bool:
    """Cheap filter: the text may walk a module's children or submodules."""
    return (
        "children(" in text
        or "_modules" in text
        or ".modules(" in text
        or ".apply(" in text
        or any(name in text for name in _LIBRARY_WALKERS)
    )


def report_children_walks(ctx: FileContext, tree: ast.Module) -> None:
    """Report every walk of the children of a module other than `self`."""
    seen: set[int] = set()  # a nested function's nodes are also below the function around it
    libraries = any(name in ctx.source for name in _LIBRARY_WALKERS)
    for scope in _scopes(tree, _lines_naming_walks(ctx.source)):
        for visit in ctx.visits(scope):
            node = visit.node
            library = _library_walker(ctx, node) if libraries else None
            if library is not None:
                walked = library
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and (node.func.attr in _VIEWS | _ALL and not node.args and not node.keywords)
                or _applies(ctx, node)
            ):
                walked = node.func.value  # type: ignore[attr-defined]
            elif (
                isinstance(node, ast.Attribute)
                and node.attr == "_modules"
                and isinstance(node.ctx, ast.Load)
            ):
                walked = node.value
            else:
                continue
            assert isinstance(node, (ast.Call, ast.Attribute))
            if (isinstance(walked, ast.Name) and walked.id == "self") or id(node) in seen:
                continue
            seen.add(id(node))
            shown = ctx.text(walked)
            origin = _origin(ctx, scope, walked, visit.stmt)
            if library is not None and isinstance(node, ast.Call):
                message = (
                    f"`{ctx.text(node.func)}(...)` runs the children of `{shown}` in "
                    f"registration order{origin}: modules migrator creates in it are "
                    "registered where its forward runs them, but one of them before the last "
                    "child it takes may now run there, as it did not before"
                )
            elif not isinstance(node, ast.Call) or node.func.attr in _VIEWS:  # type: ignore[attr-defined]
                message = (
                    f"`{ctx.text(node)}` runs the children of `{shown}` in registration order"
                    f"{origin}: modules migrator creates in it are registered where its "
                    "forward runs them, but a slice of its children or a walk that stops at "
                    "a given child may now take them in"
                )
            elif _filtered(ctx, scope, node, visit.stmt):
                continue
            elif node.func.attr == "apply":  # type: ignore[attr-defined]
                message = (
                    f"`{ctx.text(node)}` runs a function on every submodule of `{shown}`"
                    f"{origin}: the modules migrator creates in it are among them now"
                )
            else:
                message = (
                    f"`{ctx.text(node)}` goes through every submodule of `{shown}`{origin}: "
                    "the modules migrator creates in it are among them now"
                )
            ctx.report(node, "MIG113", message)


def _library_walker(ctx: FileContext, node: ast.AST) -> ast.expr | None:
    """The model a call of a `_LIBRARY_WALKERS` class of another package walks (None: `node`
    is no such call)."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    qualname = ctx.info.names.resolve(node.func)
    if qualname is None or "." not in qualname:
        return None
    module, name = qualname.rsplit(".", 1)
    own = ctx.info.names.module.split(".")[0]
    if module not in _LIBRARY_WALKERS.get(name, ()) or module.split(".")[0] == own:
        return None
    return node.args[0]


def _applies(ctx: FileContext, node: ast.AST) -> bool:
    """Whether `node` is `<module>.apply(f)` (a module held by `self` or named by a local name,
    `f` a function, lambda or `partial`: not an autograd Function's `apply`) and `f` may act on
    a new module."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "apply"
        and len(node.args) == 1
        and not node.keywords
    ):
        return False
    walked, applied = node.func.value, node.args[0]
    if not (
        self_attr(walked)
        or isinstance(walked, ast.Name)
        and walked.id != "self"
        and ctx.info.names.resolve(walked) is None
    ):
        return False
    if not (
        isinstance(applied, ast.Lambda)
        or isinstance(applied, ast.Call)
        and ctx.info.names.resolve(applied.func) == "functools.partial"
        or isinstance(applied, ast.Name)
        and applied.id in ctx.info.functions
    ):
        return False
    return not applies_to_no_new_module(ctx, ctx.info, applied)


def _filtered(
    ctx: FileContext, scope: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.Call, stmt: ast.stmt
) -> bool:
    """Whether `node` is the iterable of loop `stmt` acting only on classes no new module is."""
    return (
        isinstance(stmt, ast.For)
        and stmt.iter is node
        and isinstance(scope, ast.FunctionDef)
        and meets_no_new_module(ctx, ctx.info, scope, stmt)
    )


def _scopes(tree: ast.Module, lines: list[int]) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions of `ast.walk(tree)`, in its order, whose text spans one of `lines` (the
    parts of the tree spanning none are not walked)."""
    todo: deque[ast.AST] = deque([tree])
    while todo:
        node = todo.popleft()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        todo.extend(c for c in ast.iter_child_nodes(node) if _spans(c, lines))


def _spans(node: ast.AST, lines: list[int]) -> bool:
    """Whether `node` (or one of its parts, for a node with no position) may be on `lines`."""
    start = getattr(node, "lineno", None)
    if start is None:
        return True
    first = bisect_left(lines, start)
    return first < len(lines) and lines[first] <= (getattr(node, "end_lineno", None) or start)


def _lines_naming_walks(source: str) -> list[int]:
    """The numbers of the lines whose text holds `children`, `modules`, `.apply(` (where a
    walk's attribute is) or the name of a `_LIBRARY_WALKERS` class, in order."""
    return lines_spelling(source, ("children", "modules", ".apply(", *_LIBRARY_WALKERS))


def _origin(
    ctx: FileContext,
    scope: ast.FunctionDef | ast.AsyncFunctionDef,
    walked: ast.expr,
    stmt: ast.stmt,
) -> str:
    """Where the walked module comes from: ` (<how>, line N)`, or '' when not known."""
    if isinstance(walked, ast.Name):
        name = walked.id
        assigned = [
            v.stmt
            for v in ctx.visits(scope)
            if isinstance(v.node, ast.Name)
            and v.node.id == name
            and isinstance(v.node.ctx, ast.Store)
            and v.stmt.lineno < stmt.lineno
        ]
        if assigned:
            return f" (`{name}` is assigned at line {assigned[-1].lineno})"
        args = scope.args
        if any(a.arg == name for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)):
            return f" (`{name}` is a parameter of `{scope.name}`, line {scope.lineno})"
    elif self_attr(walked):
        return f" (`self.{walked.attr}` is set in this class)"
    return ""
