"""The op catalog resolved to runtime objects; matching fx nodes against it and binding their
arguments by role.

Nodes are matched by their target only: the function object (resolved from the catalog's
qualified names with importlib), the tensor method name of a `call_method` node, or the
`operator` function of a Python operator. Node names never matter.
"""

from __future__ import annotations

import ast
import importlib
import math
import operator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch
from torch.fx import Node
from torch.fx.node import map_aggregate

from migrator import catalog
from migrator.catalog import (CATALOG, FIXED, HYPER, IGNORED, INPUT, INPUTS, REQUIRED, TRAINING,
                              WEIGHT, Op)

_OPERATOR_NAMES = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv",
                   "@": "matmul", "**": "pow"}
"""Operator symbol -> name of its function in the `operator` module (`+=` -> `iadd`)."""

# Functions computing sizes and other plain values: operators on them are not tensor ops.
_SCALAR_FUNCTIONS = frozenset({len, int, float, bool, math.floor, math.ceil, math.sqrt})


class Refused(Exception):
    """A catalog op that cannot become its module; `str()` says why."""


@dataclass(frozen=True)
class Match:
    op: Op
    call: str
    """How the op was called, for people: `torch.nn.functional.relu`, `.softmax()`, `+`."""
    kind: str
    """"function", "method" or "operator"."""
    inplace: bool = False
    """An in-place op (`add_`, `+=`) that only becomes its out-of-place module when safe."""


@dataclass
class Binding:
    """A call's arguments sorted by role."""

    inputs: list[Any] = field(default_factory=list)
    """Forward inputs, in order (the items of a list argument spread out)."""
    ctor: dict[str, Any] = field(default_factory=dict)
    """Constructor keywords: every hyper-parameter, given or defaulted, plus ctor_extra."""
    training: Any = None
    """The value passed for a TRAINING argument (it must follow the module's mode)."""
    weight: Node | None = None
    """The `get_attr` node of a learned weight the module takes over (prelu)."""


class RuntimeCatalog:
    """Catalog lookups by runtime object: function identity, method name, operator function."""

    def __init__(self, ops: tuple[Op, ...] = CATALOG) -> None:
        self._functions: dict[int, tuple[object, Match]] = {}
        self._methods: dict[str, Match] = {}
        self._operators: dict[int, Match] = {}
        for op in ops:
            for name in op.functions:
                for target in _runtime_functions(resolve(name)):
                    self._add_function(target, Match(op, name, "function"))
            for name in op.methods:
                self._methods[name] = Match(op, f".{name}()", "method")
            for name in op.inplace_methods:
                self._methods[name] = Match(op, f".{name}()", "method", inplace=True)
            for symbol in op.operators:
                self._operators[id(getattr(operator, _OPERATOR_NAMES[symbol]))] = Match(
                    op, symbol, "operator")
            for symbol in op.inplace_operators:
                function = getattr(operator, "i" + _OPERATOR_NAMES[symbol.removesuffix("=")])
                self._operators[id(function)] = Match(op, symbol, "operator", inplace=True)

    def _add_function(self, target: object, match: Match) -> None:
        known = self._functions.get(id(target))
        if known is not None and known[1].op.args != match.op.args:
            raise ValueError(f"{match.call} and {known[1].call} are one function with two "
                             "signatures in the catalog")
        if known is None:
            self._functions[id(target)] = (target, match)

    def match(self, node: Node) -> Match | None:
        """The catalog entry `node` calls, or None."""
        if node.op == "call_method":
            return self._methods.get(node.target)
        if node.op == "call_function":
            found = self._functions.get(id(node.target))
            return found[1] if found else self._operators.get(id(node.target))
        return None


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
    """The object a qualified name refers to (`torch.nn.functional.relu`), or None."""
    module_name, _, attribute = qualname.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError):
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


def bind(op: Op, node: Node) -> Binding:
    """Sort the arguments of `node` (a call of `op`) by role; raise `Refused` when the call cannot
    become `op.module` with the same result."""
    positional = [a for a in op.args if not a.keyword_only]
    if len(node.args) > len(positional):
        raise Refused(f"{len(node.args)} positional arguments, the catalog knows {len(positional)}")
    values = {a.name: v for a, v in zip(positional, node.args)}
    for name, value in node.kwargs.items():
        if op.arg(name) is None:
            raise Refused(f"argument `{name}` is not in the catalog")
        values[name] = value
    binding = Binding()
    inputs: list[tuple[Any, bool]] = []
    for arg in op.args:
        value = values.get(arg.name, arg.default)
        if value is REQUIRED:
            raise Refused(f"`{arg.name}` is missing")
        if arg.role == INPUT:
            inputs.append((value, arg.name in values))
        elif arg.role == INPUTS:
            if not isinstance(value, (list, tuple)):
                raise Refused(f"`{arg.name}` is not a literal sequence: its length is unknown")
            inputs += [(item, True) for item in value]
        elif arg.role == HYPER:
            if _holds_node(value):
                raise Refused(f"`{arg.name}` is computed while tracing, not a constant")
            binding.ctor[arg.ctor_name] = value
        elif arg.role == TRAINING:
            if not isinstance(value, bool):
                raise Refused(f"`{arg.name}` is not a constant bool")
            binding.training = value
        elif arg.role == FIXED:
            if _holds_node(value) or not (value is arg.default or value == arg.default):
                raise Refused(f"`{arg.name}={value!r}` is not supported by {op.module_name}")
        elif arg.role == WEIGHT:
            if not (isinstance(value, Node) and value.op == "get_attr"):
                raise Refused(f"`{arg.name}` is not an attribute of the model")
            binding.weight = value
        else:
            assert arg.role == IGNORED, arg.role
    while inputs and not inputs[-1][1]:
        inputs.pop()
    binding.inputs = [value for value, _ in inputs]
    binding.ctor.update((name, ast.literal_eval(text)) for name, text in op.ctor_extra)
    return binding


def build_module(op: Op, binding: Binding, root: torch.nn.Module) -> torch.nn.Module:
    """A new `op.module` computing the bound call (a learned weight is shared, not copied)."""
    cls = resolve(op.module)
    if cls is None:
        raise Refused(f"cannot import {op.module}")
    if binding.weight is None:
        return cls(**binding.ctor)
    try:
        weight = root.get_parameter(binding.weight.target)
    except AttributeError:
        raise Refused(f"`{binding.weight.target}` is not a parameter") from None
    module = cls(**binding.ctor)
    module.weight = weight  # the same Parameter: tied, trained and saved as before
    module.num_parameters = weight.numel()
    return module
