"""The units the quantizer observes in a captured graph, each with its catalog `Observation`.

A unit is one call of a module whose class has a policy in the catalog (`OBSERVATIONS`; a
subclass that keeps its base's `forward` counts as its base): all the nodes the call ran,
observed as a whole. Any other node is a unit on its own: an op computing with a learned
weight (`WEIGHTED_CALLS`: `F.conv2d`, `F.linear` in a forward) is observed as its module
would be, a data-movement op (`DATA_MOVEMENT_OPS`) shares its input's observer; anything else
has no policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from torch.fx import Graph, Node

from migrator.catalog import (
    FLOAT_ARGUMENTS,
    DATA_MOVEMENT_OPS,
    OBSERVATIONS,
    SHARE,
    WEIGHTED_CALLS,
    Observation,
)
from migrator.graph import innermost_call
from migrator.prove.ops import resolve


@dataclass
class Unit:
    """Nodes observed together: one module call, or one op outside any catalog module."""

    module: str
    """Dotted name of the module that ran the nodes ('' for the root module)."""
    nodes: list[Node]
    observation: Observation | None
    """None: the catalog has no policy for it."""
    type_name: str = ""
    """Qualified name of the module's class ('' outside any module)."""

    def inputs(self) -> list[tuple[Node, Node]]:
        """Edges `(producer, consumer)` into the unit from outside it, in graph order."""
        members = set(self.nodes)
        return [
            (producer, node)
            for node in self.nodes
            for producer in node.all_input_nodes
            if producer not in members
        ]

    def outputs(self) -> list[Node]:
        """Nodes of the unit whose value is used outside it."""
        members = set(self.nodes)
        return [node for node in self.nodes if any(user not in members for user in node.users)]

    def owns(self, node: Node) -> bool:
        """Whether `node` reads a parameter or buffer of the unit's own module."""
        return node.op == "get_attr" and str(node.target).rpartition(".")[0] == self.module


def op_name(node: Node) -> str:
    """The ATen op name of a node (`conv2d`), else its target's name (`getitem`)."""
    packet = getattr(node.target, "overloadpacket", None)
    return getattr(packet or node.target, "__name__", str(node.target))


def resolve_class(qualified_name: str) -> type | None:
    """The class a qualified name stands for, when it can be imported."""
    value = resolve(qualified_name)
    return value if isinstance(value, type) else None


@cache
def _by_class() -> dict[type, Observation]:
    classes = {name: resolve_class(name) for name in OBSERVATIONS}
    return {cls: OBSERVATIONS[name] for name, cls in classes.items() if cls is not None}


@cache
def observation_of(type_name: str) -> Observation | None:
    """The policy for a module class, by the qualified name export records for it."""
    cls = resolve_class(type_name)
    for base in cls.__mro__ if cls is not None else ():
        if base in _by_class():
            same = getattr(base, "forward", None) is getattr(cls, "forward", None)
            return _by_class()[base] if same else None
    return None


def _own_observation(node: Node) -> Observation | None:
    """The policy of an op outside any catalog module."""
    weighted = WEIGHTED_CALLS.get(op_name(node))
    if weighted is not None:
        return weighted.observed
    return SHARE if op_name(node) in DATA_MOVEMENT_OPS else None


def weighted_role(producer: Node, consumer: Node) -> str | None:
    """'weight' or 'bias' when `consumer` computes with a learned weight (`WEIGHTED_CALLS`) and
    takes `producer` in that place, else None."""
    weighted = WEIGHTED_CALLS.get(op_name(consumer))
    if weighted is None:
        return None
    for role, position in (("weight", weighted.weight), ("bias", weighted.bias)):
        if position is not None and position < len(consumer.args):
            if consumer.args[position] is producer:
                return role
    return None


def kept_in_float(producer: Node, consumer: Node) -> bool:
    """Whether `consumer` is a norm taking `producer` as its affine weight or bias
    (`FLOAT_ARGUMENTS`): a parameter, kept in float."""
    positions = FLOAT_ARGUMENTS.get(op_name(consumer), ())
    return any(p < len(consumer.args) and consumer.args[p] is producer for p in positions)


def units(graph: Graph) -> list[Unit]:
    """The observed units of `graph`, in the order of their first node."""
    calls: dict[str, Unit] = {}
    result: list[Unit] = []
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        call = innermost_call(node)
        observation = observation_of(call.type_name) if call else None
        if observation is None or call is None:
            name, type_name = (call.name, call.type_name) if call else ("", "")
            result.append(Unit(name, [node], _own_observation(node), type_name))
        elif call.key in calls:
            calls[call.key].nodes.append(node)
        else:
            calls[call.key] = Unit(call.name, [node], observation, call.type_name)
            result.append(calls[call.key])
    return result
