"""What the `forward` of a module class of the project is proven to return, given what the
modules an instance holds return (run-time evidence, `migrator.prove.evidence`): read from its
source with `ast`, never by running it."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from migrator.rewrite.names import ModuleNames, collect
from migrator.rewrite.tensors import TensorNames
from migrator.rewrite.walk import walk


def forward_returns(
    path: str, module: str, qualname: str, children: dict[str, str], tensor_attrs: set[str]
) -> str:
    """'tensor' when every `return` of the `forward` of class `qualname` (defined in file
    `path` of module `module`) gives a tensor, 'tuple' when each gives a tuple of tensors,
    else ''. `children`: attribute -> what the module held there returns ('tensor', 'tuple'
    or ''); `tensor_attrs`: its parameters and buffers. Its inputs are taken for nothing known
    (a module may be given a list), methods and helpers it calls for unknown."""
    parsed = _parsed(path, module)
    if parsed is None:
        return ""
    tree, names = parsed
    forward = _forward(tree, qualname)
    if forward is None or forward.decorator_list:
        return ""
    nodes = [v.node for v in walk(forward)]
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Lambda)) for n in nodes):
        return ""
    tensors = TensorNames(
        forward,
        nodes,
        names.resolve,
        {attr for attr, kind in children.items() if kind == "tensor"},
        tensor_attrs,
        first_is_tensor=False,
        evident={attr: (kind, []) for attr, kind in children.items() if kind == "tuple"},
        unknown_globals=names.unknown,
    )
    nested = {
        id(n)
        for node in nodes
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for n in ast.walk(node)
    }
    values = [n.value for n in nodes if isinstance(n, ast.Return) and id(n) not in nested]
    if not values or any(v is None for v in values):
        return ""
    if all(v is not None and tensors.is_tensor(v) for v in values):
        return "tensor"
    if all(isinstance(v, ast.Tuple) and tensors.is_tuple(v) for v in values):
        return "tuple"
    return ""


@functools.lru_cache(maxsize=256)
def _parsed(path: str, module: str) -> tuple[ast.Module, ModuleNames] | None:
    try:
        data = Path(path).read_bytes()
        tree = ast.parse(data)
    except (OSError, SyntaxError, ValueError):
        return None
    text = data.decode(
        "utf-8", "replace"
    )  # `collect` walks functions only when it may hold `global`
    return tree, collect(tree, module, Path(path).name == "__init__.py", text)


def _forward(tree: ast.Module, qualname: str) -> ast.FunctionDef | None:
    """The `forward` defined in the body of class `qualname` (`Outer.Inner`), if found."""
    body: list[ast.stmt] = tree.body
    for part in qualname.split("."):
        found = [s for s in body if isinstance(s, ast.ClassDef) and s.name == part]
        if len(found) != 1:  # not found, or defined twice: which one ran is not known
            return None
        body = found[0].body
    return next((s for s in body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
