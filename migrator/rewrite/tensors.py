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
NOT_TENSOR_METHODS = catalog.SCALAR_METHODS | TUPLE_METHODS | frozenset("""
    storage_offset data_ptr is_complex is_signed type equal allclose numpy untyped_storage
""".split())
NOT_TENSOR_ATTRIBUTES = catalog.SCALAR_ATTRIBUTES | {"grad_fn", "names"}
NOT_TENSOR_TORCH = frozenset("""
    torch.is_tensor torch.numel torch.Size torch.device torch.dtype torch.no_grad torch.finfo
    torch.iinfo torch.is_grad_enabled torch.get_default_dtype torch.is_floating_point
    torch.enable_grad torch.set_grad_enabled torch.inference_mode torch.chunk torch.split
    torch.unbind torch.tensor_split torch.broadcast_shapes torch.jit.is_scripting
    torch.jit.is_tracing torch.compiler.is_compiling torch.is_autocast_enabled
""".split())
_SCALAR_ANNOTATIONS = frozenset("""int float bool str bytes list tuple dict set List Tuple Dict Set
    Sequence Mapping Iterable Iterator Callable Any""".split())
_NOT_TENSOR_LITERALS = (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.SetComp,
                        ast.DictComp, ast.GeneratorExp, ast.JoinedStr)


class TensorNames:
    """Flow-insensitive tensor knowledge for one function."""

    def __init__(self, func: ast.FunctionDef, nodes: list[ast.AST],
                 resolve: Callable[[ast.expr], str | None],
                 module_attrs: set[str], tensor_attrs: set[str]) -> None:
        self.resolve = resolve
        self.module_attrs = module_attrs
        self.tensor_attrs = tensor_attrs
        self.names: set[str] = set()
        self.tuples: set[str] = set()
        self._seed(func, nodes)
        self._propagate(nodes)

    # -- seeding -------------------------------------------------------------------------------
    def _seed(self, func: ast.FunctionDef, nodes: list[ast.AST]) -> None:
        params = [a for a in (*func.args.posonlyargs, *func.args.args) if a.arg != "self"]
        params += func.args.kwonlyargs
        for i, param in enumerate(params):
            kind = _annotation_kind(param.annotation)
            if kind == "tensor" or (kind is None and i == 0):
                self.names.add(param.arg)
        evidence = {p.arg for p in params if _annotation_kind(p.annotation) is None}
        for node in nodes:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                name = node.value.id
                if name in evidence and (node.attr in NOT_TENSOR_ATTRIBUTES - {"names"}
                                         or node.attr in {"view", "reshape", "permute", "transpose",
                                                          "size", "contiguous", "unsqueeze"}):
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
                targets = ([node.target] if isinstance(node, (ast.AnnAssign, ast.For))
                           else node.targets)
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
            if self.is_tuple(value) or self.is_tensor(value):
                for elt in target.elts:
                    elt = elt.value if isinstance(elt, ast.Starred) else elt
                    if isinstance(elt, ast.Name):
                        self.names.add(elt.id)
        return (len(self.names), len(self.tuples)) != before

    # -- queries -------------------------------------------------------------------------------
    def _module_call(self, node: ast.Call) -> bool:
        func = node.func
        return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == "self" and func.attr in self.module_attrs)

    def is_tuple(self, node: ast.expr) -> bool:
        """Whether `node` is a tuple of tensors (chunk/split/unbind results, module outputs)."""
        if isinstance(node, ast.Name):
            return node.id in self.tuples
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in TUPLE_METHODS:
                return self.is_tensor(func.value)
            qualname = self.resolve(func)
            if qualname in {"torch.chunk", "torch.split", "torch.unbind", "torch.tensor_split"}:
                return True
            return self._module_call(node)
        return False

    def is_tensor(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Call):
            func = node.func
            if self._module_call(node):
                return True
            if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name)
                                                        and func.value.id == "self"):
                if self.is_tensor(func.value):
                    return func.attr not in NOT_TENSOR_METHODS
            qualname = self.resolve(func)
            if qualname and qualname.startswith("torch.") and qualname not in NOT_TENSOR_TORCH:
                return not qualname.startswith(("torch.jit.", "torch.fx.", "torch.cuda.",
                                                "torch.distributed.", "torch.compiler."))
            return False
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return node.attr in self.tensor_attrs
            return node.attr in {"T", "mT", "H", "mH", "data", "real", "imag"} and self.is_tensor(node.value)
        if isinstance(node, ast.BinOp):
            if any(_container(side) for side in (node.left, node.right)):
                return False
            return self.is_tensor(node.left) or self.is_tensor(node.right)
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not) and self.is_tensor(node.operand)
        if isinstance(node, ast.Subscript):
            return self.is_tensor(node.value) or self.is_tuple(node.value)
        if isinstance(node, ast.IfExp):
            return self.is_tensor(node.body) and self.is_tensor(node.orelse)
        return False


def _annotation_kind(annotation: ast.expr | None) -> str | None:
    """'tensor' (Tensor, Optional[Tensor]), 'other' (scalars, containers) or None (unknown)."""
    if annotation is None:
        return None
    text = ast.unparse(annotation).replace(" ", "")
    for prefix in ("Optional[", "typing.Optional["):
        if text.startswith(prefix) and text.endswith("]"):
            text = text[len(prefix):-1]
    alternatives = set(text.split("|")) - {"None"}
    if len(alternatives) == 1:
        text = alternatives.pop()
    if text.split(".")[-1] in {"Tensor", "Parameter"}:
        return "tensor"
    if text.split("[", 1)[0].split(".")[-1] in _SCALAR_ANNOTATIONS or "[" in text or text == "None":
        return "other"
    return None


def _container(node: ast.expr) -> bool:
    """A literal that is certainly not a tensor (list, tuple, string, ...)."""
    return isinstance(node, _NOT_TENSOR_LITERALS) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)))
