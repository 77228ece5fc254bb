"""Every module class the catalog knows is observed exactly as its `Observation` says.

A tiny model runs one module of each class, built as the fixture that runs it builds it
(migrator's op modules) or from the catalog row's defaults plus the few constructor arguments
below; it is captured, prepared, calibrated, and its observers are
compared with the policy: the module's own output observer, or its input's observer object,
one observer across a cat, fixed qparams, a per-channel weight observer, or none at all.
"""

from __future__ import annotations

import copy
import json

import pytest
import torch
from torch import nn
from torch.fx import Node

from fixture_cases import module_in_fixture
from migrator.catalog import CATALOG, OBSERVATIONS, OPS, REQUIRED, Observe, Role
from migrator.graph import owning_module
from migrator.nn import Clamp, FloorDiv, GroupNorm, LayerNorm, Mul
from migrator.observe.calibrate import calibrate, calibration_batches
from migrator.observe.capture import capture
from migrator.observe.policy import observation_of, resolve_class
from migrator.observe.pt2e import (
    FixedQParamsObserver,
    MinMaxObserver,
    PerChannelMinMaxObserver,
    prepare_pt2e,
)
from migrator.observe.quantizer import EXCLUDED, INTEGER_TENSORS, ModuleQuantizer
from migrator.observe.report import observer_report

NN = "torch.nn."
CTOR: dict[str, dict] = {
    **{f"{NN}{kind}Pool{n}d": {"kernel_size": 2} for kind in ("Max", "Avg") for n in (1, 2, 3)},
    **{f"{NN}LPPool{n}d": {"norm_type": 2.0, "kernel_size": 2} for n in (1, 2, 3)},
    **{
        f"{NN}Adaptive{kind}Pool{n}d": {"output_size": 2}
        for kind in ("Max", "Avg")
        for n in (1, 2, 3)
    },
    **{
        f"{NN}{kind}{n}d": {"in_channels": 4, "out_channels": 4, "kernel_size": 3}
        for kind in ("Conv", "ConvTranspose")
        for n in (1, 2, 3)
    },
    **{
        f"{NN}{kind}{n}d": {"num_features": 4}
        for kind in ("BatchNorm", "InstanceNorm")
        for n in (1, 2, 3)
    },
    f"{NN}SyncBatchNorm": {"num_features": 4},
    f"{NN}Threshold": {"threshold": 0.7, "value": 2.0},
    f"{NN}Softmax": {"dim": -1},
    f"{NN}Softmin": {"dim": -1},
    f"{NN}LogSoftmax": {"dim": -1},
    f"{NN}PixelShuffle": {"upscale_factor": 2},
    f"{NN}PixelUnshuffle": {"downscale_factor": 2},
    f"{NN}ChannelShuffle": {"groups": 2},
    f"{NN}Unflatten": {"dim": 1, "unflattened_size": (2, 2)},
    f"{NN}Upsample": {"scale_factor": 2},
    f"{NN}LayerNorm": {"normalized_shape": 8},
    f"{NN}RMSNorm": {"normalized_shape": 8},
    f"{NN}GroupNorm": {"num_groups": 2, "num_channels": 4},
    f"{NN}Linear": {"in_features": 8, "out_features": 4},
    f"{NN}Bilinear": {"in1_features": 8, "in2_features": 8, "out_features": 4},
    f"{NN}Embedding": {"num_embeddings": 10, "embedding_dim": 4},
    "migrator.nn.Pad": {"pad": (1, 1)},
    "migrator.nn.Interpolate": {"scale_factor": 2},
    "migrator.nn.GroupNorm": {"num_groups": 2},
    "migrator.nn.LayerNorm": {"normalized_shape": 8},
    **{f"migrator.nn.{kind}Pool": {"dims": 2, "kernel_size": 2} for kind in ("Max", "Avg")},
    **{f"migrator.nn.Adaptive{kind}Pool": {"dims": 2, "output_size": 2} for kind in ("Max", "Avg")},
    "migrator.nn.PixelShuffle": {"upscale_factor": 2},
}
"""Constructor arguments the catalog rows have no default for (or classes without a row)."""

SHAPES: dict[str, list[tuple[int, ...]]] = {
    f"{NN}Linear": [(2, 8)],
    f"{NN}Bilinear": [(2, 8), (2, 8)],
    "migrator.nn.BMM": [(2, 8, 8), (2, 8, 8)],
    "migrator.nn.AddMM": [(2, 8), (2, 8), (8, 8)],
    "migrator.nn.BAddBMM": [(2, 4, 8), (2, 4, 8), (2, 8, 8)],
    "migrator.nn.GridSample": [(2, 4, 8, 8), (2, 5, 5, 2)],
}
"""Input shapes other than one or two (N, 4, 8, 8) tensors, or the rank the class name says."""

UNBATCHED = ("migrator.nn.AddMM", "migrator.nn.BatchNorm", "migrator.nn.PReLU")
"""Classes whose inputs cannot all share a dynamic batch dimension (a matrix operand):
captured with static shapes."""


BOOLEAN_INPUTS = ("condition", "mask")
"""Forward inputs that are boolean tensors (where's condition, masked_fill's mask)."""


class Unary(nn.Module):
    """Runs `self.m` on its input (export wants a fixed number of inputs: hence three classes)."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.m = module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.m(x)


class Binary(Unary):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.m(x, y)


class Ternary(Unary):
    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.m(x, y, z)


class Quaternary(Unary):
    def forward(
        self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, w: torch.Tensor
    ) -> torch.Tensor:
        return self.m(x, y, z, w)


def _ctor_kwargs(module: str) -> dict:
    rows = [op for op in CATALOG if op.module == module and not op.ctor_extra] or [
        op for op in CATALOG if op.module == module
    ]
    kwargs = {}
    if rows:
        hyper = [
            a
            for a in rows[0].args
            if a.role is Role.HYPER and a.default is not REQUIRED and not a.call_only
        ]
        kwargs = {a.ctor_name: a.default for a in hyper}
        kwargs |= dict(rows[0].module_defaults) | dict(rows[0].ctor_extra)
    return kwargs | CTOR.get(module, {})


def _module(module: str) -> nn.Module:
    """A module of the class: as the fixture that runs it builds it, for migrator's op modules
    (so a new op needs no entry here), else from the row's defaults and `CTOR`."""
    cls = resolve_class(module)
    found = module_in_fixture(cls) if module.startswith(OPS) and module not in CTOR else None
    return copy.deepcopy(found[0]) if found else cls(**_ctor_kwargs(module))


def _inputs(module: str) -> tuple[torch.Tensor, ...]:
    if module == f"{NN}Embedding":
        return (torch.randint(0, 10, (2, 5)),)
    if module == "migrator.nn.Embedding":  # indices into a table that is a forward input
        return torch.randint(0, 10, (10, 5)), torch.randn(10, 4)
    if module == "migrator.nn.BatchNorm":  # statistics computed in forward: activations too
        return torch.randn(2, 4, 8, 8), torch.rand(4), torch.rand(4) + 0.5
    if module == "migrator.nn.PReLU":  # the slopes, given at call time, stay in float
        return torch.randn(2, 4, 8, 8), torch.rand(4)
    rows = [op for op in CATALOG if op.module == module]
    required = [a for a in rows[0].args if a.default is REQUIRED] if rows else []
    roles = [a.role for a in required] if rows else [Role.INPUT]
    count = 2 if {Role.INPUTS, Role.VARIADIC} & set(roles) else roles.count(Role.INPUT)
    boolean = [a.name in BOOLEAN_INPUTS for a in required if a.role is Role.INPUT]
    rank = {"1d": 3, "3d": 5}.get(module[-2:], 4)
    shapes = SHAPES.get(
        module, [(2, 4) + (8,) * (rank - 2) if rank < 5 else (2, 4, 4, 4, 4)] * count
    )
    generator = torch.Generator().manual_seed(0)
    return tuple(
        torch.rand(shape, generator=generator) > 0.5
        if i < len(boolean) and boolean[i]
        else torch.rand(shape, generator=generator) + 0.5
        for i, shape in enumerate(shapes)
    )


def _observe(module: str):
    torch.manual_seed(0)
    inputs = _inputs(module)
    wrapper = (Unary, Binary, Ternary, Quaternary)[len(inputs) - 1]
    model = wrapper(_module(module)).eval()
    if module in UNBATCHED:
        graph_module = torch.export.export(model, inputs).module()
    else:
        graph_module = capture(model, inputs).graph_module
    quantizer = ModuleQuantizer()
    prepared = prepare_pt2e(graph_module, quantizer)
    calibrate(prepared, calibration_batches(inputs, None))
    kept = 1 if module == "migrator.nn.PReLU" else 0  # its slopes (`FLOAT_ARGUMENTS`)
    return prepared, quantizer, sum(x.is_floating_point() for x in inputs) - kept


def _observers_of_m(quantizer: ModuleQuantizer) -> tuple[dict[Node, object], list[object]]:
    """Observers of what module `m` receives (by producer) and of what it returns."""
    observer_of = quantizer.observer_of
    inputs = {
        edge[0]: observer_of[edge]
        for edge in observer_of
        if isinstance(edge, tuple) and owning_module(edge[1]) == "m" != owning_module(edge[0])
    }
    outputs = [
        observer_of[n] for n in observer_of if isinstance(n, Node) and owning_module(n) == "m"
    ]
    return inputs, outputs


def _is_calibrated_min_max(observer: object) -> bool:
    return type(observer) is MinMaxObserver and bool(torch.isfinite(observer.min_val).all())


@pytest.mark.parametrize("module", sorted(OBSERVATIONS))
def test_every_module_class_is_observed_as_its_policy_says(module):
    observation = OBSERVATIONS[module]
    prepared, quantizer, float_inputs = _observe(module)
    inputs, outputs = _observers_of_m(quantizer)
    activations = [
        observer for producer, observer in inputs.items() if producer.op == "placeholder"
    ]
    how = observation.how
    if how is Observe.NOT_QUANTIZED:
        assert outputs == [] and activations == []
        assert [(r.module, r.reason) for r in quantizer.left_in_float] == [
            ("m", observation.reason)
        ]
        return
    assert len(outputs) == 1, outputs
    assert len(activations) == float_inputs
    (output,) = outputs
    assert all(r.module != "m" for r in quantizer.left_in_float)
    if how is Observe.SHARE_INPUT:  # the first float input's observer; others their own
        assert activations[0] is output and _is_calibrated_min_max(output)
        assert all(_is_calibrated_min_max(o) and o is not output for o in activations[1:])
    elif how is Observe.SHARED_ACROSS:
        assert len(activations) == 2 and all(observer is output for observer in activations)
    elif how is Observe.FIXED_RANGE:
        low, high = observation.range
        assert type(output) is FixedQParamsObserver
        assert output.scale.item() == pytest.approx((high - low) / 256)
        assert output.zero_point.item() == round(-128 - low / output.scale.item())
        assert all(_is_calibrated_min_max(o) and o is not output for o in activations)
    else:
        assert all(_is_calibrated_min_max(o) and o is not output for o in activations)
        assert _is_calibrated_min_max(output)
        weights = {str(p.target): o for p, o in inputs.items() if p.op == "get_attr"}
        if how is Observe.WEIGHTED:
            assert set(weights) == {"m.weight"}
            assert type(weights["m.weight"]) is PerChannelMinMaxObserver
            assert weights["m.weight"].ch_axis == observation.weight_axis
        else:
            assert weights == {}  # a norm's affine weight and bias stay in float
    assert observer_report(prepared, quantizer).ok


class AffineOfTheCaller(nn.Module):
    """Calls `m` with its own weight and bias, as migrated code calls migrator's LayerNorm and
    GroupNorm (`Role.AFFINE`), or Clamp with bounds the module holds."""

    def __init__(self, m: nn.Module, channels: int) -> None:
        super().__init__()
        self.m = m
        self.weight = nn.Parameter(torch.rand(channels) + 0.5)
        self.bias = nn.Parameter(torch.rand(channels))

    def forward(self, x):
        return self.m(x, self.weight, self.bias)


@pytest.mark.parametrize(
    "make, channels", [(lambda: LayerNorm(8), 8), (lambda: GroupNorm(2), 4), (Clamp, 8)]
)
def test_affine_tensors_of_the_caller_stay_in_float(make, channels):
    """The caller's tensors reach the norm (or clamp) as forward inputs: kept in float, as a
    norm module's own, not observed as activations; the input and the output are observed."""
    torch.manual_seed(0)
    inputs = (torch.rand(2, 4, 8, 8),)
    model = AffineOfTheCaller(make(), channels).eval()
    quantizer = ModuleQuantizer()
    prepared = prepare_pt2e(capture(model, inputs).graph_module, quantizer)
    calibrate(prepared, calibration_batches(inputs, None))
    received, outputs = _observers_of_m(quantizer)
    assert [producer.op for producer in received] == ["placeholder"] and len(outputs) == 1
    assert observer_report(prepared, quantizer).ok


def test_every_policy_is_exercised():
    assert {o.how for o in OBSERVATIONS.values()} == set(Observe)


class Leftovers(nn.Module):
    """A model with ops the quantizer leaves in float: an integer argmax, shape arithmetic,
    an excludable relu, a floor division and a functional op no catalog module runs."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.relu = nn.ReLU()
        self.floordiv = FloorDiv()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.relu(self.conv(x))
        index = y.argmax(1)
        exp = torch.exp(y)
        return self.floordiv(y, exp), index, y.reshape(x.shape[0] * 2, -1)


@pytest.fixture(scope="module")
def leftovers():
    inputs = (torch.randn(2, 3, 8, 8),)
    captured = capture(Leftovers().eval(), inputs)
    quantizer = ModuleQuantizer(exclude=("relu",))
    prepared = prepare_pt2e(captured.graph_module, quantizer)
    calibrate(prepared, calibration_batches(captured.example_inputs, None))
    return observer_report(prepared, quantizer)


def test_left_in_float_lists_each_op_with_its_reason(leftovers):
    rows = {(r.module, r.op): r.reason for r in leftovers.left_in_float}
    assert rows[("relu", "relu")] == EXCLUDED
    assert rows[("floordiv", "floor_divide")] == OBSERVATIONS["migrator.nn.FloorDiv"].reason
    assert rows[("", "argmax")] == INTEGER_TENSORS
    assert rows[("", "exp")] == "no catalog module runs it"
    assert rows[("", "mul")] == "shape arithmetic"
    for record in leftovers.left_in_float:
        if record.reason != "shape arithmetic":
            assert record.source.rsplit(":", 1)[0].endswith("test_observe_policy.py"), record
    observed = {label for record in leftovers.observers for label in record.observes}
    assert "conv" in observed and "floordiv" not in observed


def test_left_in_float_in_table_and_json(leftovers):
    table = leftovers.to_table()
    section = table.split("left in float:", 1)[1]
    assert section.startswith(f" {len(leftovers.left_in_float)} ops")
    for record in leftovers.left_in_float:
        assert record.reason in section and record.op in section
    data = json.loads(leftovers.to_json())
    assert data["left_in_float"] == [
        {"module": r.module, "op": r.op, "source": r.source, "reason": r.reason}
        for r in leftovers.left_in_float
    ]


class KeptForward(nn.Conv2d):
    """A conv subclass that keeps nn.Conv2d's forward: observed as nn.Conv2d."""


class OwnForward(nn.Conv2d):
    """A conv subclass with its own forward: the catalog cannot know what it runs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) * 2


def test_a_subclass_is_observed_as_its_base_only_when_it_keeps_the_forward():
    def name(cls: type) -> str:
        return f"{cls.__module__}.{cls.__qualname__}"

    assert observation_of(name(KeptForward)) is OBSERVATIONS[f"{NN}Conv2d"]
    assert observation_of(name(OwnForward)) is None
    assert observation_of("no.such.Module") is None


class Gate(nn.Module):
    """x * sigmoid(x), as migrator leaves it."""

    def __init__(self) -> None:
        super().__init__()
        self.sigmoid = nn.Sigmoid()
        self.mul = Mul()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mul(x, self.sigmoid(x))


def test_a_fixed_range_output_is_read_through_its_own_fixed_observer():
    captured = capture(Gate().eval(), (torch.randn(2, 8),))
    quantizer = ModuleQuantizer()
    prepared = prepare_pt2e(captured.graph_module, quantizer)
    calibrate(prepared, calibration_batches(captured.example_inputs, None))
    (sigmoid,) = [
        n for n in quantizer.observer_of if isinstance(n, Node) and owning_module(n) == "sigmoid"
    ]
    (edge,) = [e for e in quantizer.observer_of if isinstance(e, tuple) and e[0] is sigmoid]
    assert type(quantizer.observer_of[sigmoid]) is FixedQParamsObserver
    assert quantizer.observer_of[edge] is quantizer.observer_of[sigmoid]
    assert observer_report(prepared, quantizer).ok


class FunctionalWeights(nn.Module):
    """Convs and linears called as functionals with learned weights: in the module's own
    forward, in a subclass's own forward (timm's `Linear`), with another module's weight, and
    with a weight computed at run time (weight standardisation)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 3, 3, 3))
        self.bias = nn.Parameter(torch.randn(4))
        self.head = OwnLinear(4, 5)
        self.other = nn.Conv2d(4, 4, 1)
        self.std = nn.Parameter(torch.randn(4, 4, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.conv2d(x, self.weight, self.bias)
        y = torch.nn.functional.conv2d(y, self.other.weight, self.other.bias)
        y = torch.nn.functional.conv2d(y, self.std - self.std.mean((1, 2, 3), keepdim=True))
        return self.head(y.mean((2, 3)))


class OwnLinear(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.weight, self.bias)


def test_functional_convs_and_linears_are_observed_as_their_modules():
    captured = capture(FunctionalWeights().eval(), (torch.randn(2, 3, 8, 8),))
    quantizer = ModuleQuantizer()
    prepared = prepare_pt2e(captured.graph_module, quantizer)
    calibrate(prepared, calibration_batches(captured.example_inputs, None))
    weighted = [
        n
        for n in prepared.graph.nodes
        if n.target in (torch.ops.aten.conv2d.default, torch.ops.aten.linear.default)
    ]
    assert len(weighted) == 4
    for node in weighted:
        weight, bias = node.args[1], node.args[2] if len(node.args) > 2 else None
        observer = getattr(prepared, weight.target)  # the weight's observer
        assert type(observer) is PerChannelMinMaxObserver and observer.ch_axis == 0
        assert bias is None or bias.op == "get_attr"  # the bias stays in float
        (output,) = node.users
        assert type(getattr(prepared, output.target)) is MinMaxObserver
    assert {r.op for r in quantizer.left_in_float}.isdisjoint({"conv2d", "linear"})
    assert observer_report(prepared, quantizer).ok
