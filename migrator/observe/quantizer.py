"""A pt2e `Quantizer` that annotates the captured graph per module, by the catalog's policy.

Each node belongs to the module that ran it, so `exclude` and `module_dtypes` address ops by
module name: `exclude=("layer1.0.relu_1",)`, `module_dtypes={"head": "int16"}`. A name also
covers every module under it (`layer1` covers `layer1.0.conv1`).

How a module is observed is its class's `Observation` in `migrator.catalog` (see there and
`migrator.observe.policy`); with which dtype and scheme, its `Choices`
(`migrator.observe.choices`). Defaults: weights int8 per-channel symmetric; activations int8
per-tensor affine. What stays in float, and why, is in `left_in_float` after `annotate`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import torch
from torch.fx import GraphModule, Node

from migrator.catalog import Observe
from migrator.graph import source_location
from migrator.observe.choices import Choices, Override, Quantization
from migrator.observe.groups import SharingGroup, sharing_groups
from migrator.observe.policy import (
    Unit,
    kept_in_float,
    op_name,
    resolve_class,
    units,
    weighted_role,
)
from migrator.observe.pt2e import (
    FixedQParamsQuantizationSpec,
    MinMaxObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
    Q_ANNOTATION_KEY,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
)

DTYPES = {"int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16}
"""Activation dtypes a module may ask for. Weights stay signed: int16 for int16, else int8."""

EXCLUDED = "excluded by the user"
INTEGER_TENSORS = "integer tensors"
SHAPE_ARITHMETIC = "shape arithmetic"
SEVERAL_VALUES = "returns several values (e.g. return_indices): observed where they are used"
NO_POLICY = "no catalog module runs it"
NO_SHARED_INPUT = "no float input to share an observer with"


@dataclass(frozen=True)
class LeftInFloat:
    """An op that no observer quantizes, and why."""

    module: str
    op: str
    source: str
    reason: str


def activation_spec(dtype: torch.dtype, symmetric: bool = False) -> QuantizationSpec:
    """Per-tensor spec over the full range of `dtype`: affine, or symmetric (zero point 0, or
    127 for uint8)."""
    info = torch.iinfo(dtype)
    return QuantizationSpec(
        dtype=dtype,
        quant_min=info.min,
        quant_max=info.max,
        qscheme=torch.per_tensor_symmetric if symmetric else torch.per_tensor_affine,
        observer_or_fake_quant_ctr=MinMaxObserver,
    )


def weight_spec(dtype: torch.dtype, axis: int = 0, per_channel: bool = True) -> QuantizationSpec:
    """Symmetric spec with a range symmetric around zero: per output channel (along `axis`),
    or one scale for the whole weight."""
    info = torch.iinfo(dtype)
    return QuantizationSpec(
        dtype=dtype,
        quant_min=-info.max,
        quant_max=info.max,
        qscheme=torch.per_channel_symmetric if per_channel else torch.per_tensor_symmetric,
        ch_axis=axis if per_channel else None,
        observer_or_fake_quant_ctr=PerChannelMinMaxObserver if per_channel else MinMaxObserver,
    )


def fixed_spec(
    dtype: torch.dtype, low: float, high: float, symmetric: bool = False
) -> FixedQParamsQuantizationSpec:
    """Per-tensor spec with fixed qparams spanning [low, high] over the range of `dtype`; when
    `symmetric`, with the symmetric zero point, spanning the larger of |low| and |high| on
    either side of it."""
    info = torch.iinfo(dtype)
    if symmetric:
        zero_point = 0 if info.min < 0 else (info.min + info.max) // 2  # torchao's choice
        scale = max(abs(low), abs(high)) / ((info.max - info.min + 1) // 2)
    else:
        scale = (high - low) / (info.max - info.min + 1)
        zero_point = info.min - round(low / scale)
    return FixedQParamsQuantizationSpec(
        dtype=dtype,
        scale=scale,
        zero_point=zero_point,
        quant_min=info.min,
        quant_max=info.max,
        qscheme=torch.per_tensor_symmetric if symmetric else torch.per_tensor_affine,
    )


def _covers(name: str, module: str) -> bool:
    return module == name or module.startswith(name + ".")


def _is_float_tensor(node: object) -> bool:
    value = node.meta.get("val") if isinstance(node, Node) else None
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _value_reason(outputs: list[Node]) -> str | None:
    """Why a unit whose outputs are not float tensors stays in float (None: they are)."""
    values = [node.meta.get("val") for node in outputs]
    if any(isinstance(value, torch.Tensor) and value.is_floating_point() for value in values):
        return None
    if any(isinstance(value, (tuple, list)) for value in values):
        return SEVERAL_VALUES
    if any(isinstance(value, torch.Tensor) for value in values):
        return INTEGER_TENSORS
    return SHAPE_ARITHMETIC


def _input_spec(producer: Node, act: QuantizationSpec) -> object:
    """An activation input's spec: the producer's fixed qparams when it has them in `act`'s
    dtype (torchao would not share them implicitly), else `act`."""
    annotation = producer.meta.get(Q_ANNOTATION_KEY)
    fixed = getattr(annotation, "output_qspec", None)
    if isinstance(fixed, FixedQParamsQuantizationSpec) and fixed.dtype == act.dtype:
        return SharedQuantizationSpec(producer)
    return act


def _specs(unit: Unit, choices: Choices) -> tuple[dict, dict]:
    """The specs of the unit's input edges and output nodes by its policy and choices."""
    dtype = DTYPES[choices.activation_dtype]
    symmetric = choices.activation_scheme == "symmetric"
    observation, act = unit.observation, activation_spec(dtype, symmetric)
    assert observation is not None  # units without a policy are left in float, not annotated
    floats = [edge for edge in unit.inputs() if _is_float_tensor(edge[0])]
    weighted = observation.how is Observe.WEIGHTED  # a data table (migrator's Embedding) is input
    roles = {edge: weighted_role(*edge) if weighted else None for edge in floats}
    activations = [
        edge for edge in floats if not (roles[edge] or unit.owns(edge[0]) or kept_in_float(*edge))
    ]
    outputs = [node for node in unit.outputs() if _is_float_tensor(node)]
    inputs = {edge: _input_spec(edge[0], act) for edge in activations}
    if observation.how is Observe.WEIGHTED:
        weight = weight_spec(
            torch.int16 if dtype == torch.int16 else torch.int8,
            observation.weight_axis,
            choices.weights == "per-channel",
        )
        inputs |= {edge: weight for edge in floats if roles[edge] == "weight"}
    if observation.how in (Observe.OWN_OUTPUT, Observe.WEIGHTED):
        return inputs, dict.fromkeys(outputs, act)
    if observation.how is Observe.FIXED_RANGE:
        assert observation.range is not None  # every FIXED_RANGE row gives its range
        return inputs, dict.fromkeys(outputs, fixed_spec(dtype, *observation.range, symmetric))
    if not activations:
        return {}, {}
    first = activations[0]
    shared = SharedQuantizationSpec(first)
    if observation.how is Observe.SHARED_ACROSS:
        inputs = {first: act} | {edge: shared for edge in activations[1:]}
    return inputs, dict.fromkeys(outputs, shared)


def _annotate(unit: Unit, choices: Choices) -> bool:
    """Annotate the unit's nodes by its policy; whether any of its outputs is observed."""
    inputs, outputs = _specs(unit, choices)
    for node in unit.nodes:
        edges = {
            producer: spec for (producer, consumer), spec in inputs.items() if consumer is node
        }
        if edges or node in outputs:
            node.meta[Q_ANNOTATION_KEY] = QuantizationAnnotation(
                edges, outputs.get(node), _annotated=True
            )
    return bool(outputs)


class ModuleQuantizer(Quantizer):
    """Annotates every supported op with specs chosen by the name of the module that ran it.

    After `prepare_pt2e`, `groups` holds the observer sharing groups worked out from the
    annotations, `observer_of` maps every annotated edge or node to its observer and
    `left_in_float` lists the ops no observer quantizes.
    """

    def __init__(
        self,
        exclude: Iterable[str] = (),
        module_dtypes: Mapping[str, str] | None = None,
        quantization: Quantization | None = None,
    ) -> None:
        super().__init__()
        self.exclude = tuple(exclude)
        self.module_dtypes = dict(module_dtypes or {})
        unknown = sorted(set(self.module_dtypes.values()) - DTYPES.keys())
        if unknown:
            raise ValueError(
                f"unsupported dtype {', '.join(unknown)}; choose from {', '.join(DTYPES)}"
            )
        by_depth = sorted(self.module_dtypes.items(), key=lambda item: len(item[0]))
        self.quantization = (quantization or Quantization()).with_(
            {},
            tuple(Override({"activation_dtype": dtype}, module=name) for name, dtype in by_depth),
        )
        self.groups: list[SharingGroup] = []
        self.observer_of: dict = {}
        self.left_in_float: list[LeftInFloat] = []

    def _choices(self, unit: Unit) -> Choices:
        cls = resolve_class(unit.type_name) if unit.type_name else None

        def is_a(name: str) -> bool:
            base = resolve_class(name)
            return cls is not None and base is not None and issubclass(cls, base)

        return self.quantization.for_module(unit.module, is_a)

    def annotate(self, model: GraphModule) -> GraphModule:
        observed = units(model.graph)
        for name in (*self.exclude, *self.module_dtypes):
            if not any(_covers(name, unit.module) for unit in observed):
                raise ValueError(f"no op of the model runs in a module named {name!r}")
        for override in self.quantization.overrides:
            if override.cls is not None and resolve_class(override.cls) is None:
                raise ValueError(f"quantization override: no class named {override.cls!r}")
        self.left_in_float = []
        for unit in observed:
            outputs = [node for node in unit.outputs() if node.meta.get("val") is not None]
            if not outputs:
                continue  # nothing to observe: unused, or run for its effect (a shape assertion)
            reason = self._float_reason(unit, outputs)
            if reason is None and not _annotate(unit, self._choices(unit)):
                reason = NO_SHARED_INPUT
            if reason is not None:
                self.left_in_float.append(
                    LeftInFloat(
                        unit.module, op_name(outputs[0]), source_location(outputs[0]), reason
                    )
                )
        return model

    def _float_reason(self, unit: Unit, outputs: list[Node]) -> str | None:
        """Why the unit stays in float, or None when its policy observes it."""
        if any(_covers(name, unit.module) for name in self.exclude):
            return EXCLUDED
        value_reason = _value_reason(outputs)
        if value_reason or unit.observation is None:
            return value_reason or NO_POLICY
        return unit.observation.reason if unit.observation.how is Observe.NOT_QUANTIZED else None

    def validate(self, model: GraphModule) -> None:
        """Refuse observers outside torchao: torchao's convert would silently skip them."""
        for node in model.graph.nodes:
            annotation = node.meta.get(Q_ANNOTATION_KEY)
            if annotation is None:
                continue
            for spec in (*annotation.input_qspec_map.values(), annotation.output_qspec):
                maker = getattr(spec, "observer_or_fake_quant_ctr", None)
                observer = getattr(getattr(maker, "p", None), "func", maker)
                if observer is not None and not issubclass(observer, ObserverBase):
                    raise TypeError(f"{node.name}: {observer.__name__} is not a torchao observer")

    def prepare_obs_or_fq_callback(
        self, model: GraphModule, edge_or_node_to_obs_or_fq: dict
    ) -> None:
        """Record the sharing groups and the observer torchao made for every edge and node."""
        self.groups = sharing_groups(model)
        self.observer_of = dict(edge_or_node_to_obs_or_fq)
