"""Which expressions in a forward-path function are tensors.

Operators and tensor methods are only rewritten when an operand is known to be a tensor: `h * w`
on two ints from `x.shape` must stay as it is. Knowledge comes from evidence in the function:
the first input of `forward`, parameters annotated `Tensor`, values produced by submodules,
torch functions and tensor methods, and arithmetic on tensors.
"""

from __future__ import annotations

import ast
from typing import Callable

from migrator import catalog

# Tensor methods and attributes whose result is not a tensor.
TUPLE_METHODS = frozenset("chunk split unbind tensor_split split_with_sizes".split())
NOT_TENSOR_METHODS = (
    catalog.SCALAR_METHODS
    | TUPLE_METHODS
    | frozenset(
        """
    storage_offset data_ptr is_complex is_signed type equal allclose numpy untyped_storage
""".split()
    )
)
NOT_TENSOR_ATTRIBUTES = catalog.SCALAR_ATTRIBUTES | {"grad_fn", "names"}
NOT_TENSOR_TORCH = frozenset(
    """
    torch.is_tensor torch.numel torch.Size torch.device torch.dtype torch.no_grad torch.finfo
    torch.iinfo torch.is_grad_enabled torch.get_default_dtype torch.is_floating_point
    torch.enable_grad torch.set_grad_enabled torch.inference_mode torch.chunk torch.split
    torch.unbind torch.tensor_split torch.broadcast_shapes torch.jit.is_scripting
    torch.jit.is_tracing torch.compiler.is_compiling torch.is_autocast_enabled
""".split()
)
_SCALAR_ANNOTATIONS = frozenset(
    """int float bool str bytes list tuple dict set List Tuple Dict Set
    Sequence Mapping Iterable Iterator Callable Any""".split()
)
_TYPED_TENSORS = frozenset(
    """FloatTensor DoubleTensor HalfTensor BFloat16Tensor ByteTensor CharTensor
    ShortTensor IntTensor LongTensor BoolTensor""".split()
)
_NOT_TENSOR_LITERALS = (
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.JoinedStr,
)


class TensorNames:
    """Flow-insensitive tensor knowledge for one function."""

    def __init__(
        self,
        func: ast.FunctionDef,
        nodes: list[ast.AST],
        resolve: Callable[[ast.expr], str | None],
        module_attrs: set[str],
        tensor_attrs: set[str],
        first_is_tensor: bool = True,
        helper_call: Callable[[ast.Call, Callable[[ast.expr], bool]], bool] | None = None,
    ) -> None:
        """`first_is_tensor`: an unannotated first parameter is a tensor (forward's input).
        `helper_call(call, is_tensor)`: whether a call runs a helper function that becomes a
        module (`helper_modules`): like a module call, it takes and returns tensors."""
        self.resolve = resolve
        self.helper_call = helper_call
        self.module_attrs = module_attrs
        self.tensor_attrs = tensor_attrs
        self.names: set[str] = set()
        self.tuples: set[str] = set()
        self.plain: set[str] = set()
        """Names proven to hold no tensor (sizes, flags, counters)."""
        self.containers: set[str] = set()
        """Names bound to a list, tuple or dict built here: their items are not known."""
        self._bound: set[str] = set()
        """Names the function binds (others are globals: plain)."""
        self._seed(func, nodes, first_is_tensor)
        self._propagate(nodes)
        self._find_plain(func, nodes)

    # -- seeding -------------------------------------------------------------------------------
    def _seed(self, func: ast.FunctionDef, nodes: list[ast.AST], first_is_tensor: bool) -> None:
        params = _parameters(func)
        for i, param in enumerate(params):
            kind = _annotation_kind(param.annotation)
            if kind == "tensor" or (kind is None and i == 0 and first_is_tensor):
                self.names.add(param.arg)
        evidence = {p.arg for p in params if _annotation_kind(p.annotation) is None}
        for node in nodes:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                name = node.value.id
                if name in evidence and (
                    node.attr in NOT_TENSOR_ATTRIBUTES - {"names"}
                    or node.attr
                    in {
                        "view",
                        "reshape",
                        "permute",
                        "transpose",
                        "size",
                        "contiguous",
                        "unsqueeze",
                    }
                ):
                    self.names.add(name)
            elif isinstance(node, ast.Call) and self._module_call(node):
                for arg in node.args[:1]:
                    if isinstance(arg, ast.Name) and arg.id in evidence:
                        self.names.add(arg.id)

    def _propagate(self, nodes: list[ast.AST]) -> None:
        assigns = [n for n in nodes if isinstance(n, (ast.Assign, ast.AnnAssign, ast.For))]
        changed = True
        while changed:
            changed = False
            for node in assigns:
                value = node.iter if isinstance(node, ast.For) else node.value
                if value is None:
                    continue
                targets = (
                    [node.target] if isinstance(node, (ast.AnnAssign, ast.For)) else node.targets
                )
                for target in targets:
                    changed |= self._bind(target, value, iterating=isinstance(node, ast.For))

    def _bind(self, target: ast.expr, value: ast.expr, iterating: bool = False) -> bool:
        before = (len(self.names), len(self.tuples))
        if isinstance(target, ast.Name):
            if iterating:
                if self.is_tuple(value) or self.is_tensor(value):
                    self.names.add(target.id)
            elif self.is_tensor(value):
                self.names.add(target.id)
            elif self.is_tuple(value):
                self.tuples.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)) and not iterating:
            if (
                isinstance(value, (ast.Tuple, ast.List))
                and len(value.elts) == len(target.elts)
                and not any(isinstance(e, ast.Starred) for e in target.elts + value.elts)
            ):
                for elt, part in zip(target.elts, value.elts):  # `q, k = self.a(x), self.b(x)`
                    self._bind(elt, part)
            elif self.is_tuple(value) or self.is_tensor(value):
                for elt in target.elts:
                    elt = elt.value if isinstance(elt, ast.Starred) else elt
                    if isinstance(elt, ast.Name):
                        self.names.add(elt.id)
        return (len(self.names), len(self.tuples)) != before

    def _find_plain(self, func: ast.FunctionDef, nodes: list[ast.AST]) -> None:
        """Names every binding of which is a plain value (or a parameter annotated or
        defaulted as one)."""
        bindings: dict[str, list[ast.expr | None]] = {}
        params = _parameters(func)
        positional = params[
            : len(func.args.posonlyargs) + len(func.args.args) - (1 if _has_self(func) else 0)
        ]
        defaults = dict(zip(reversed([p.arg for p in positional]), reversed(func.args.defaults)))
        defaults.update(
            {a.arg: d for a, d in zip(func.args.kwonlyargs, func.args.kw_defaults) if d is not None}
        )
        for param in params:
            default = defaults.get(param.arg)
            plain = _annotation_kind(param.annotation) == "other" or (
                isinstance(default, ast.Constant) and default.value is not None
            )
            bindings[param.arg] = [ast.Constant(0) if plain else None]
        for a in (func.args.vararg, func.args.kwarg):
            if a:
                bindings[a.arg] = [None]
        for node in nodes:
            for name, value in _bindings(node):
                bindings.setdefault(name, []).append(value)
                if isinstance(value, (ast.List, ast.Tuple, ast.Dict, ast.ListComp, ast.DictComp)):
                    self.containers.add(name)
        self._bound = set(bindings)
        # the largest consistent set: `n = 0` then `n += 1` is plain
        self.plain = {
            name
            for name, values in bindings.items()
            if name not in self.names and None not in values
        }
        changed = True
        while changed:
            changed = False
            for name in list(self.plain):
                if not all(v is not None and self.is_plain(v) for v in bindings[name]):
                    self.plain.discard(name)
                    changed = True

    # -- queries -------------------------------------------------------------------------------
    def is_plain(self, node: ast.expr) -> bool:
        """Whether `node` is proven not to be a tensor."""
        if isinstance(node, (ast.Constant, ast.JoinedStr, ast.Compare, ast.BoolOp, ast.Lambda)):
            return True
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return False
            return node.id in self.plain or node.id not in self._bound
        if isinstance(node, _NOT_TENSOR_LITERALS):
            return True
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return node.attr not in self.tensor_attrs  # settings and submodules
            if node.attr in NOT_TENSOR_ATTRIBUTES:
                return True
            qualname = self.resolve(node)
            return bool(qualname) and not self.is_tensor(node)
        if isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Name)
                and func.id in _PLAIN_BUILTINS
                and func.id not in self._bound
            ):
                return True
            if isinstance(func, ast.Attribute) and func.attr in catalog.SCALAR_METHODS:
                return True
            qualname = self.resolve(func)
            return bool(
                qualname
                and (qualname in NOT_TENSOR_TORCH or qualname.split(".")[0] in _PLAIN_MODULES)
            )
        if isinstance(node, ast.Subscript):
            value = node.value
            if isinstance(value, ast.Name) and value.id in self.containers:
                return False
            return self.is_plain(value) and not isinstance(value, _NOT_TENSOR_LITERALS)
        if isinstance(node, ast.BinOp):
            return self.is_plain(node.left) and self.is_plain(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.is_plain(node.operand)
        if isinstance(node, ast.IfExp):
            return self.is_plain(node.body) and self.is_plain(node.orelse)
        return False

    def unknown(self, node: ast.expr) -> bool:
        """Neither proven a tensor nor proven not to be one."""
        return not self.is_tensor(node) and not self.is_plain(node)

    def _module_call(self, node: ast.Call) -> bool:
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and func.attr in self.module_attrs
        ) or (self.helper_call is not None and self.helper_call(node, self.is_tensor))

    def is_tuple(self, node: ast.expr) -> bool:
        """Whether `node` is a tuple of tensors (chunk/split/unbind results, module outputs)."""
        if isinstance(node, ast.Name):
            return node.id in self.tuples
        if isinstance(node, ast.Call):
            func = node.func
            qualname = self.resolve(func)
            if qualname in {"torch.chunk", "torch.split", "torch.unbind", "torch.tensor_split"}:
                return True
            if isinstance(func, ast.Attribute) and func.attr in TUPLE_METHODS:
                return self.is_tensor(func.value)
            return self._module_call(node)
        return False

    def is_tensor(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Call):
            func = node.func
            if self._module_call(node):
                return True
            if isinstance(func, ast.Attribute) and not (
                isinstance(func.value, ast.Name) and func.value.id == "self"
            ):
                if self.is_tensor(func.value):
                    return func.attr not in NOT_TENSOR_METHODS
            qualname = self.resolve(func)
            if qualname and qualname.startswith("torch.") and qualname not in NOT_TENSOR_TORCH:
                return not qualname.startswith(
                    (
                        "torch.jit.",
                        "torch.fx.",
                        "torch.cuda.",
                        "torch.distributed.",
                        "torch.compiler.",
                    )
                )
            return False
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return node.attr in self.tensor_attrs
            return node.attr in {"T", "mT", "H", "mH", "data", "real", "imag"} and self.is_tensor(
                node.value
            )
        if isinstance(node, ast.BinOp):
            if any(is_container(side) for side in (node.left, node.right)):
                return False
            return self.is_tensor(node.left) or self.is_tensor(node.right)
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not) and self.is_tensor(node.operand)
        if isinstance(node, ast.Subscript):
            return self.is_tensor(node.value) or self.is_tuple(node.value)
        if isinstance(node, ast.IfExp):
            return self.is_tensor(node.body) and self.is_tensor(node.orelse)
        return False


_PLAIN_BUILTINS = frozenset(
    """len int float bool str range round isinstance hasattr id list tuple dict set
    sorted zip enumerate reversed any all
    callable type repr format hash divmod""".split()
)
_PLAIN_MODULES = frozenset("math numbers typing warnings logging collections itertools".split())


def _has_self(func: ast.FunctionDef) -> bool:
    args = [*func.args.posonlyargs, *func.args.args]
    return bool(args) and args[0].arg == "self"


def _parameters(func: ast.FunctionDef) -> list[ast.arg]:
    params = [a for a in (*func.args.posonlyargs, *func.args.args) if a.arg != "self"]
    return params + func.args.kwonlyargs


def _bindings(node: ast.AST):
    """(name, value or None when not known) for each name `node` binds."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            yield from _targets(target, node.value)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        yield node.target.id, ast.BinOp(node.target, node.op, node.value)
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        iterable = node.iter
        builtin = (
            iterable.func.id
            if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)
            else None
        )
        if builtin == "range":
            yield from _targets(node.target, ast.Constant(0))
        elif (
            builtin == "enumerate"
            and isinstance(node.target, ast.Tuple)
            and len(node.target.elts) == 2
        ):  # `for i, item in enumerate(...)`: the index is plain
            yield from _targets(node.target.elts[0], ast.Constant(0))
            yield from _targets(node.target.elts[1], None)
        else:
            yield from _targets(node.target, None)
    elif isinstance(node, ast.NamedExpr):
        yield node.target.id, node.value
    elif isinstance(node, (ast.withitem, ast.comprehension)):
        bound = node.optional_vars if isinstance(node, ast.withitem) else node.target
        if bound is not None:
            yield from _targets(bound, None)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name, None


def _targets(target: ast.expr, value: ast.expr | None):
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        if (
            isinstance(value, (ast.Tuple, ast.List))
            and len(value.elts) == len(target.elts)
            and not any(isinstance(e, ast.Starred) for e in value.elts)
        ):
            for elt, part in zip(target.elts, value.elts):
                yield from _targets(elt, part)
            return
        for elt in target.elts:  # items of a plain value (`h, w = x.shape[-2:]`) are plain
            item = value if value is not None and not isinstance(elt, ast.Starred) else None
            yield from _targets(elt.value if isinstance(elt, ast.Starred) else elt, item)
    elif isinstance(target, ast.Starred):
        yield from _targets(target.value, None)


def _annotation_kind(annotation: ast.expr | None) -> str | None:
    """'tensor' (Tensor, Optional[Tensor], `torch.BoolTensor | None`), 'other' (scalars,
    containers) or None (unknown)."""
    if annotation is None:
        return None
    text = ast.unparse(annotation).replace(" ", "")
    separator = "|"
    for prefix, between in (
        ("Optional[", "|"),
        ("typing.Optional[", "|"),
        ("Union[", ","),
        ("typing.Union[", ","),
    ):
        if text.startswith(prefix) and text.endswith("]"):
            text, separator = text[len(prefix) : -1], between
    alternatives = set(text.split(separator)) - {"None"}
    if len(alternatives) == 1:
        text = alternatives.pop()
    if text.split(".")[-1] in {"Tensor", "Parameter", *_TYPED_TENSORS}:
        return "tensor"
    if text.split("[", 1)[0].split(".")[-1] in _SCALAR_ANNOTATIONS or "[" in text or text == "None":
        return "other"
    return None


def is_container(node: ast.expr) -> bool:
    """A literal that is certainly not a tensor (list, tuple, string, ...)."""
    return isinstance(node, _NOT_TENSOR_LITERALS) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )
