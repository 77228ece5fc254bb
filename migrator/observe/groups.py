"""Observer sharing groups of an annotated graph, by union-find over its edges and nodes.

Members are what annotations quantize: a node's output (`Node`) or one of its inputs, the
edge `(producer, consumer)`. Two members share an observer when a `SharedQuantizationSpec`
joins them, or implicitly when they hold the same tensor (a producer's output and the inputs
it feeds) with equal quantization parameters. These are the rules `prepare_pt2e` applies;
working them out here lets the report check that torchao built one observer per group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from torch.fx import GraphModule, Node

from migrator.observe.pt2e import (
    FixedQParamsQuantizationSpec,
    Q_ANNOTATION_KEY,
    QuantizationSpec,
    SharedQuantizationSpec,
)

Member = Union[Node, tuple[Node, Node]]
_SPEC_FIELDS = (
    "dtype",
    "is_dynamic",
    "quant_min",
    "quant_max",
    "qscheme",
    "ch_axis",
    "scale",
    "zero_point",
)
"""What torchao compares before sharing implicitly: equal in both specs, or in neither."""
_MISSING = object()


@dataclass(frozen=True)
class SharingGroup:
    """Edges and nodes observed by one observer, and the spec that observer is built from."""

    members: tuple[Member, ...]
    spec: QuantizationSpec | FixedQParamsQuantizationSpec


def annotated_members(model: GraphModule) -> dict[Member, object]:
    """Every annotated edge and node of `model`, in graph order, with its spec."""
    specs: dict[Member, object] = {}
    for node in model.graph.nodes:
        annotation = node.meta.get(Q_ANNOTATION_KEY)
        if annotation is None:
            continue
        for producer, spec in annotation.input_qspec_map.items():
            if spec is not None:
                specs[(producer, node)] = spec
        if annotation.output_qspec is not None:
            specs[node] = annotation.output_qspec
    return specs


def sharing_groups(model: GraphModule) -> list[SharingGroup]:
    """The observer sharing groups of the annotated `model`, in graph order."""
    specs = annotated_members(model)
    parent = {member: member for member in specs}

    def find(member: Member) -> Member:
        while parent[member] != member:
            parent[member] = parent[parent[member]]
            member = parent[member]
        return member

    def union(a: Member, b: Member) -> None:
        parent[find(b)] = find(a)

    def concrete(member: Member) -> QuantizationSpec | FixedQParamsQuantizationSpec:
        spec = specs[member]
        while isinstance(spec, SharedQuantizationSpec):
            spec = specs[spec.edge_or_node]
        return spec

    def same_parameters(a: Member, b: Member) -> bool:
        return all(
            getattr(concrete(a), f, _MISSING) == getattr(concrete(b), f, _MISSING)
            for f in _SPEC_FIELDS
        )

    for member, spec in specs.items():
        if isinstance(spec, SharedQuantizationSpec):
            union(spec.edge_or_node, member)
        if isinstance(member, tuple) and member[1].meta[Q_ANNOTATION_KEY].allow_implicit_sharing:
            producer = member[0]
            same_tensor = [producer, *((producer, user) for user in producer.users)]
            for other in same_tensor:
                if other != member and other in specs and same_parameters(member, other):
                    union(other, member)

    grouped: dict[Member, list[Member]] = {}
    for member in specs:
        grouped.setdefault(find(member), []).append(member)
    return [SharingGroup(tuple(members), concrete(members[0])) for members in grouped.values()]
