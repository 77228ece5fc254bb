"""A pt2e `Quantizer` that annotates the captured graph per module.

Each node belongs to the module that ran it, so `exclude` and `module_dtypes` address ops by
module name: `exclude=("layer1.0.relu_1",)`, `module_dtypes={"head": "int16"}`. A name also
covers every module under it (`layer1` covers `layer1.0.conv1`).

Defaults: weights of conv/linear int8 per-channel symmetric; activations int8 per-tensor
affine. `cat`/`stack` inputs and output share one observer; ops that keep the value range
(relu, max-pool, flatten, reshape, ...) share their input's observer; add/mul/matmul inputs
and the ops listed in `_OWN_OBSERVERS_*` each get their own. Other ops stay in float.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch
from torch.fx import GraphModule, Node

from migrator.graph import owning_module
from migrator.observe.groups import SharingGroup, sharing_groups
from migrator.observe.pt2e import (
    MinMaxObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
    Q_ANNOTATION_KEY,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
)

aten = torch.ops.aten
DTYPES = {"int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16}
"""Activation dtypes a module may ask for. Weights stay signed: int16 for int16, else int8."""

_WEIGHTED = {aten.conv1d, aten.conv2d, aten.conv3d, aten.linear}
_CONCATENATING = {aten.cat, aten.stack}
_RANGE_KEEPING = {
    aten.relu, aten.relu_, aten.max_pool1d, aten.max_pool2d, aten.max_pool3d,
    aten.flatten, aten.reshape, aten.view, aten.permute, aten.transpose,
    aten.squeeze, aten.unsqueeze, aten.contiguous, aten.select, aten.slice,
}  # fmt: skip
_OWN_OBSERVERS_ALL_INPUTS = {
    aten.add, aten.sub, aten.mul, aten.div, aten.matmul, aten.bmm, aten.scaled_dot_product_attention,
}  # fmt: skip
_OWN_OBSERVERS_FIRST_INPUT = {
    aten.softmax, aten.gelu, aten.silu, aten.sigmoid, aten.tanh, aten.hardswish,
    aten.layer_norm, aten.group_norm, aten.mean, aten.sum,
    aten.avg_pool2d, aten.adaptive_avg_pool2d, aten.pad, aten.constant_pad_nd,
}  # fmt: skip
"""Norms and the like: their other tensor inputs (weight, bias) stay in float."""


def activation_spec(dtype: torch.dtype) -> QuantizationSpec:
    """Per-tensor affine spec over the full range of `dtype`."""
    info = torch.iinfo(dtype)
    return QuantizationSpec(
        dtype=dtype,
        quant_min=info.min,
        quant_max=info.max,
        qscheme=torch.per_tensor_affine,
        observer_or_fake_quant_ctr=MinMaxObserver,
    )


def weight_spec(dtype: torch.dtype) -> QuantizationSpec:
    """Per-output-channel symmetric spec with a range symmetric around zero."""
    info = torch.iinfo(dtype)
    return QuantizationSpec(
        dtype=dtype,
        quant_min=-info.max,
        quant_max=info.max,
        qscheme=torch.per_channel_symmetric,
        ch_axis=0,
        observer_or_fake_quant_ctr=PerChannelMinMaxObserver,
    )


def _covers(name: str, module: str) -> bool:
    return module == name or module.startswith(name + ".")


def _is_float_tensor(node: object) -> bool:
    value = node.meta.get("val") if isinstance(node, Node) else None
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _annotation(node: Node, dtype: torch.dtype) -> QuantizationAnnotation | None:
    """How to observe `node` by the default rules, with activations in `dtype`."""
    packet = getattr(node.target, "overloadpacket", None)
    act = activation_spec(dtype)
    first = node.args[0] if node.args else None
    if packet in _WEIGHTED:
        inputs = {first: act}
        if _is_float_tensor(node.args[1]):
            inputs[node.args[1]] = weight_spec(torch.int16 if dtype == torch.int16 else torch.int8)
        return QuantizationAnnotation(inputs, act, _annotated=True)
    if packet in _CONCATENATING:
        assert isinstance(first, (list, tuple))  # the tensor sequence
        tensors = [t for t in first if _is_float_tensor(t)]
        if not tensors:
            return None
        shared = SharedQuantizationSpec((tensors[0], node))
        inputs = {t: shared for t in tensors[1:]}
        return QuantizationAnnotation({tensors[0]: act, **inputs}, shared, _annotated=True)
    if packet in _OWN_OBSERVERS_ALL_INPUTS:
        inputs = {a: act for a in node.args if _is_float_tensor(a)}
        return QuantizationAnnotation(inputs, act, _annotated=True)
    if not _is_float_tensor(first):
        return None
    if packet in _RANGE_KEEPING:
        shared = SharedQuantizationSpec((first, node))
        return QuantizationAnnotation({first: act}, shared, _annotated=True)
    if packet in _OWN_OBSERVERS_FIRST_INPUT:
        return QuantizationAnnotation({first: act}, act, _annotated=True)
    return None


class ModuleQuantizer(Quantizer):
    """Annotates every supported op with specs chosen by the name of the module that ran it.

    After `prepare_pt2e`, `groups` holds the observer sharing groups worked out from the
    annotations and `observer_of` maps every annotated edge or node to its observer.
    """

    def __init__(
        self, exclude: Iterable[str] = (), module_dtypes: Mapping[str, str] | None = None
    ) -> None:
        super().__init__()
        self.exclude = tuple(exclude)
        self.module_dtypes = dict(module_dtypes or {})
        unknown = sorted(set(self.module_dtypes.values()) - DTYPES.keys())
        if unknown:
            raise ValueError(f"unsupported dtype {', '.join(unknown)}; choose from {', '.join(DTYPES)}")
        self.groups: list[SharingGroup] = []
        self.observer_of: dict = {}

    def _activation_dtype(self, module: str) -> torch.dtype:
        names = [name for name in self.module_dtypes if _covers(name, module)]
        return DTYPES[self.module_dtypes[max(names, key=len)]] if names else torch.int8

    def annotate(self, model: GraphModule) -> GraphModule:
        modules = {owning_module(n) for n in model.graph.nodes if n.op == "call_function"}
        for name in (*self.exclude, *self.module_dtypes):
            if not any(_covers(name, module) for module in modules):
                raise ValueError(f"no op of the model runs in a module named {name!r}")
        for node in model.graph.nodes:
            if node.op != "call_function" or not _is_float_tensor(node):
                continue
            module = owning_module(node)
            if any(_covers(name, module) for name in self.exclude):
                continue
            annotation = _annotation(node, self._activation_dtype(module))
            if annotation is not None:
                node.meta[Q_ANNOTATION_KEY] = annotation
        return model

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

    def prepare_obs_or_fq_callback(self, model: GraphModule, edge_or_node_to_obs_or_fq: dict) -> None:
        """Record the sharing groups and the observer torchao made for every edge and node."""
        self.groups = sharing_groups(model)
        self.observer_of = dict(edge_or_node_to_obs_or_fq)
