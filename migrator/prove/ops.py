"""The op catalog resolved to runtime objects; matching fx nodes against it and binding their
arguments by role (`migrator.binder`, with what only fx values can tell).

Nodes are matched by their target only: the function object (resolved from the catalog's
qualified names with importlib), the tensor method name of a `call_method` node, or the
`operator` function of a Python operator. Node names never matter.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable

import torch
from torch.fx import Node
from torch.fx.node import map_aggregate

from migrator import binder, catalog
from migrator.binder import NOT_CONSTANT, Bound, Predicates
from migrator.catalog import CATALOG, Op, Role
from migrator.refusal import Refusal

# Functions computing sizes and other plain values: operators on them are not tensor ops.
_SCALAR_FUNCTIONS = frozenset({len, int, float, bool, math.floor, math.ceil, math.sqrt})


IN_FUNCTIONAL_MODULE = "migrator_in_functional_module"
"""node.meta key the tracer sets on ops run inside an eager-mode quantization `FloatFunctional`
method (`self.skip_add.add(a, b)`): such an op already runs in a module of its own."""
LITERAL_TRAINING = "migrator_literal_training"
"""node.meta key of an op taking `training`: whether its call passes `True` or `False` as
written (`training=True`), which the static path builds into the module (`Arg.mode`)."""


@dataclass(frozen=True)
class Match:
    op: Op
    call: str
    """How the op was called, for people: `torch.nn.functional.relu`, `.softmax()`, `+`."""
    kind: str
    """"function", "method" or "operator"."""
    inplace: bool = False
    """An in-place op (`add_`, `+=`) that only becomes its out-of-place module when safe."""


class RuntimeCatalog:
    """Catalog lookups by runtime object: function identity, method name, operator function."""

    def __init__(self, ops: tuple[Op, ...] = CATALOG) -> None:
        self._functions: dict[int, tuple[object, Match]] = {}
        self._methods: dict[str, Match] = {}
        self._operators: dict[int, Match] = {}
        for op in ops:
            for name in op.functions:  # `operator.neg` (`-y`) is an operator, also on sizes
                kind = "operator" if name.split(".")[0] == "operator" else "function"
                for target in _runtime_functions(resolve(name)):
                    self._add_function(target, Match(op, name, kind))
            for name in op.inplace_functions:
                for target in _runtime_functions(resolve(name)):
                    self._add_function(target, Match(op, name, "function", inplace=True))
            for name in op.methods:
                self._methods[name] = Match(op, f".{name}()", "method")
            for name in op.inplace_methods:
                self._methods[name] = Match(op, f".{name}()", "method", inplace=True)
        for operator in catalog.OPERATORS:
            if (found := catalog.by_operator(operator.symbol)) is not None:
                self._operators[id(operator.function)] = Match(found, operator.symbol, "operator")
            if (found := catalog.by_inplace_operator(operator.inplace_symbol)) is not None:
                self._operators[id(operator.inplace_function)] = Match(
                    found, operator.inplace_symbol, "operator", inplace=True
                )

    def _add_function(self, target: object, match: Match) -> None:
        known = self._functions.get(id(target))
        if known is not None and known[1].op.args != match.op.args:
            raise ValueError(
                f"{match.call} and {known[1].call} are one function with two "
                "signatures in the catalog"
            )
        if known is None:
            self._functions[id(target)] = (target, match)

    def match(self, node: Node) -> Match | None:
        """The catalog entry `node` calls, or None (also for an op that runs inside an
        eager-mode `FloatFunctional`, which is its module already)."""
        if node.meta.get(IN_FUNCTIONAL_MODULE):
            return None
        if node.op == "call_method":
            assert isinstance(node.target, str)  # fx keeps the method's name there
            return self._methods.get(node.target)
        if node.op == "call_function":
            return self.function(node.target) or self._operators.get(id(node.target))
        return None

    def function(self, target: object) -> Match | None:
        """The catalog entry of a function object (not an operator's), or None."""
        found = self._functions.get(id(target))
        return found[1] if found else None


def _runtime_functions(function: Any) -> list[Any]:
    """The objects fx may record for a call of `function`: itself and, for functions torch builds
    with `boolean_dispatch` (`F.max_pool2d` picks `max_pool2d_with_indices` when
    `return_indices=True`), both of its branches."""
    if function is None:
        return []
    branches = getattr(torch._jit_internal, "boolean_dispatched", {}).get(function, {})
    return [function, *(branches[key] for key in ("if_true", "if_false") if key in branches)]


@cache
def runtime_catalog() -> RuntimeCatalog:
    return RuntimeCatalog()


def resolve(qualname: str) -> Any:
    """The object a qualified name refers to (`torch.nn.functional.relu`, or a nested class
    `pkg.module.Outer.Inner`), or None when it cannot be imported."""
    parts = qualname.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:split]))
            for attribute in parts[split:]:
                value = getattr(value, attribute)
        except (ImportError, AttributeError):
            continue
        return value
    return None


@cache
def op_module_classes() -> tuple[frozenset[type], frozenset[str]]:
    """(every class the catalog creates, names of the migrator.nn ones)."""
    names = list(catalog.replacing_modules())
    classes = frozenset(c for c in map(resolve, names) if c is not None)
    return classes, frozenset(n.rsplit(".", 1)[1] for n in names if n.startswith(catalog.OPS))


def scalar_nodes(nodes) -> set[Node]:
    """Nodes (in graph order) that compute sizes or other non-tensor values, not tensors."""
    scalars: set[Node] = set()
    for node in nodes:
        if node.op == "call_method":
            scalar = node.target in catalog.SCALAR_METHODS
        elif node.op != "call_function":
            scalar = False
        elif node.target is getattr:
            scalar = node.args[1] in catalog.SCALAR_ATTRIBUTES or node.args[0] in scalars
        elif node.target in _SCALAR_FUNCTIONS:
            scalar = True
        elif getattr(node.target, "__module__", None) in ("_operator", "operator"):
            operands = [a for a in node.args if isinstance(a, Node)]
            scalar = all(a in scalars for a in operands)
        else:
            scalar = False
        if scalar:
            scalars.add(node)
    return scalars


def _holds_node(value: Any) -> bool:
    found = []
    map_aggregate(value, lambda v: found.append(v) if isinstance(v, Node) else None)
    return bool(found)


def bind(
    op: Op,
    node: Node,
    follows_mode: Callable[[Any], bool],
    root: torch.nn.Module,
    inplace: bool = False,
) -> Bound[Any]:
    """Sort the arguments of `node` (a call of `op`) by role; raise the `Refusal` when the call
    cannot become `op.module` with the same result. `follows_mode`: whether a `training` value
    follows the model's mode (fx records only the value of the mode it traced in); `root`: the
    traced model, which holds the parameters and buffers the graph reads; `inplace`: `node` is
    an in-place twin (`operator.iadd`, `.add_()`), whose module takes `Op.inplace_extra`."""
    bound = binder.bind(
        op,
        node.args,
        list(node.kwargs.items()),
        Predicates(
            show=repr,
            constant=lambda v: NOT_CONSTANT if _holds_node(v) else v,
            unfixed=lambda v: "it is computed while tracing" if _holds_node(v) else None,
            follows_mode=lambda v: isinstance(v, bool) and follows_mode(v),
            unsplittable=lambda v: (
                None
                if isinstance(v, (list, tuple))
                else ("the tensor sequence is not a literal one: its length is unknown")
            ),
            weight_refused=lambda op, v: (
                None
                if isinstance(v, Node) and v.op == "get_attr"
                else ("is not an attribute of the model")
            ),
            held=lambda v: _held(v, root),
            literal_mode=lambda v: v if node.meta.get(LITERAL_TRAINING) else None,
        ),
        inplace,
    )
    if isinstance(bound, Refusal):
        raise bound
    return bound


def _held(value: Any, root: torch.nn.Module) -> tuple[bool, str] | None:
    """(learned, what it is) for a parameter or buffer of `root` the graph reads; None for
    anything else (a computed tensor, or a plain tensor attribute fx keeps as a constant)."""
    if not (isinstance(value, Node) and value.op == "get_attr"):
        return None
    path, _, name = str(value.target).rpartition(".")
    try:
        owner = root.get_submodule(path)
    except AttributeError:
        return None
    if name in owner._parameters:
        return True, "is a parameter of the module"
    if name in owner._buffers:
        return False, "is a buffer of the module"
    return None


def training_value(op: Op, node: Node) -> bool | None:
    """The constant bool `node` passes for the op's `training` argument, else None."""
    values = binder.arguments(op, node.args, list(node.kwargs.items()))
    arg = next((a for a in op.args if a.role is Role.TRAINING), None)
    if arg is None or isinstance(values, Refusal):
        return None
    value = values.get(arg.name, arg.default)
    return value if isinstance(value, bool) else None


def forward_inputs(bound: Bound[Any]) -> tuple[Any, ...]:
    """The module's positional forward inputs: the items of a tensor list spread out, optional
    inputs the call leaves at their default dropped from the end."""
    inputs = list(bound.inputs)
    while inputs and not inputs[-1].given:
        inputs.pop()
    return tuple(
        v
        for item in inputs
        for v in (item.value if item.arg.role is Role.INPUTS else (item.value,))
    )


def build_module(op: Op, bound: Bound[Any], root: torch.nn.Module) -> torch.nn.Module:
    """A new `bound.module` computing the bound call (a learned weight is shared, not
    copied)."""
    cls = resolve(bound.module)
    if cls is None:
        raise Refusal(None, f"cannot import {bound.module}")
    module = cls(**dict(bound.ctor))
    if bound.weight is None:
        return module
    try:
        weight = root.get_parameter(bound.weight.target)
    except AttributeError:
        raise Refusal("MIG106", f"`{bound.weight.target}` is not a parameter") from None
    module.weight = weight  # the same Parameter: tied, trained and saved as before
    module.num_parameters = weight.numel()
    return module
