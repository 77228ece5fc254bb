"""What a type annotation says a value holds, as a `Kind`.

A kind is "tensor", "plain" (numbers, strings, flags and containers of them), "tensors"
(a tensor or a sequence of tensors: `Union[Tensor, List[Tensor]]`), `("seq", item)` (a list,
tuple or sequence of one kind), `("tuple", (a, b))` (a tuple of fixed kinds) or `("map", value)`
(a dict from plain keys); None when the annotation says nothing certain.
"""

from __future__ import annotations

import ast
import copy

Kind = str | tuple

_TENSORS = frozenset(
    """Tensor Parameter FloatTensor DoubleTensor HalfTensor BFloat16Tensor ByteTensor
    CharTensor ShortTensor IntTensor LongTensor BoolTensor""".split()
)
_SCALARS = frozenset("int float bool str bytes complex".split())
_SEQUENCES = frozenset("List list Sequence Iterable Iterator Set set FrozenSet frozenset".split())
_TUPLES = frozenset(("Tuple", "tuple"))
_MAPS = frozenset("Dict dict Mapping MutableMapping OrderedDict".split())
_OPAQUE = frozenset("Callable Type type".split())
"""Containers of what never holds a tensor for the ops in question (a callable, a class)."""


def annotation_kind(annotation: ast.expr | None) -> Kind | None:
    """The kind of value `annotation` declares (None: unknown)."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    kinds = [k for k in _alternatives(annotation) if k != "none"]
    if not kinds or None in kinds:
        return None
    if all(plainish(k) for k in kinds):
        return "plain"
    if all(k == kinds[0] for k in kinds):
        return kinds[0]
    if set(kinds) <= {"tensor", ("seq", "tensor"), "tensors"}:
        return "tensors"
    return None


def expand_aliases(annotation: ast.expr | None, aliases: dict[str, ast.expr]) -> ast.expr | None:
    """`annotation` with each name of a type alias replaced by what it stands for."""
    if annotation is None or not aliases:
        return annotation
    if isinstance(annotation, ast.Name):
        return aliases.get(annotation.id, annotation)
    if not any(isinstance(n, ast.Name) and n.id in aliases for n in ast.walk(annotation)):
        return annotation

    class Expand(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            return aliases.get(node.id, node)

    return Expand().visit(copy.deepcopy(annotation))


def plainish(kind: Kind | None) -> bool:
    """Whether a value of `kind` holds no tensor at all."""
    if kind == "plain":
        return True
    if isinstance(kind, tuple):
        inner = kind[1]
        return all(plainish(k) for k in inner) if kind[0] == "tuple" else plainish(inner)
    return False


def item_kind(kind: Kind | None, index: ast.expr | None = None) -> Kind | None:
    """The kind of an item of a value of `kind`: iterated (`index` None) or subscripted."""
    if kind in ("tensor", "tensors"):
        return None if isinstance(index, ast.Slice) and kind == "tensors" else "tensor"
    if not isinstance(kind, tuple):
        return "plain" if kind == "plain" else None
    shape, inner = kind
    if shape == "map":
        return inner if index is not None else None  # iterating a dict gives its keys
    if isinstance(index, ast.Slice):
        return kind if shape == "seq" else _union(inner)
    if shape == "seq":
        return inner
    if isinstance(index, ast.Constant) and isinstance(index.value, int):
        return inner[index.value] if -len(inner) <= index.value < len(inner) else None
    return _union(inner)


def _union(kinds: tuple) -> Kind | None:
    if kinds and all(k == kinds[0] for k in kinds):
        return kinds[0]
    return "plain" if kinds and all(plainish(k) for k in kinds) else None


def _alternatives(node: ast.expr) -> list[Kind | None]:
    """The kinds of each alternative of a union annotation ("none" for None)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _alternatives(node.left) + _alternatives(node.right)
    if isinstance(node, ast.Constant) and node.value is None:
        return ["none"]
    if isinstance(node, ast.Subscript):
        base = _last(node.value)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base == "Optional":
            return _alternatives(args[0]) + ["none"]
        if base == "Union":
            return [k for a in args for k in _alternatives(a)]
        if base in _SEQUENCES:
            return [_container("seq", annotation_kind(args[0]))]
        if base in _TUPLES:
            if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is ...:
                return [_container("seq", annotation_kind(args[0]))]
            kinds = tuple(annotation_kind(a) for a in args)
            return [("tuple", kinds) if None not in kinds else None]
        if base in _MAPS and len(args) == 2:
            return [_container("map", annotation_kind(args[1]))]
        return ["plain" if base in _OPAQUE else None]
    name = _last(node)
    if name in _TENSORS:
        return ["tensor"]
    if name in _SCALARS or name in _SEQUENCES or name in _TUPLES or name in _MAPS:
        return ["plain" if name in _SCALARS else None]
    return ["plain" if name in _OPAQUE else None]


def _container(shape: str, inner: Kind | None) -> Kind | None:
    if inner is None:
        return None
    return "plain" if plainish(inner) else (shape, inner)


def _last(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None
