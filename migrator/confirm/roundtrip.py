"""Run an .onnx file in onnxruntime (CPU) and compare its outputs with torch's.

Graph optimisations are disabled (`ORT_DISABLE_ALL`): onnxruntime's default ones fuse QDQ
patterns into integer kernels whose results differ from fake-quant arithmetic.

A float output passes within `FLOAT_RTOL` of its largest magnitude (plus `FLOAT_ATOL`): an
elementwise relative bound fails on values near zero at the end of long float accumulations,
which onnxruntime and torch sum in different orders. A quantized output passes
within one quantisation step (the scale of the output's last dequantize) by default. Deep
models may need more: a value inside the network that lies on a rounding boundary can be
quantized one step apart, and that step can grow on its way to the output. Two causes were
seen (`migrator.confirm.divergence` tells which): onnxruntime and torch accumulate a conv or
linear in different orders (float results an ulp apart), and torch's `quantize_per_tensor`
rounds `x * (1 / scale)` where QuantizeLinear rounds `x / scale` (equal floats, rounded apart).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch.fx import GraphModule, Node
from torch.utils import _pytree

from migrator.confirm.failure import ConfirmFailure
from migrator.observe.capture import eval_mode

FLOAT_RTOL = 1e-5
FLOAT_ATOL = 1e-6
_STEP_SLACK = 1e-5
"""Relative slack on one step, for the float rounding of `step = (q1 - q2) * scale`."""
_ORT_PREFIX = re.compile(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ")


@dataclass(frozen=True)
class Tolerance:
    """`|onnx - torch| <= atol + rtol * max |torch|` (over the output), for every element;
    `step` is the quantisation step."""

    rtol: float
    atol: float
    step: float | None = None

    @classmethod
    def for_float(cls) -> Tolerance:
        return cls(FLOAT_RTOL, FLOAT_ATOL)

    @classmethod
    def for_steps(cls, scale: float, steps: float = 1.0) -> Tolerance:
        return cls(0.0, steps * scale * (1 + _STEP_SLACK), scale)

    def describe(self) -> str:
        if self.step is not None:
            return f"{self.atol / self.step:.3g} step ({self.step:.3g})"
        return f"rtol {self.rtol:g}, atol {self.atol:g}"


@dataclass
class OutputComparison:
    """One output: largest absolute error; that error over the output's largest magnitude;
    for quantized outputs, that error in quantisation steps."""

    name: str
    max_abs: float
    max_rel: float
    tolerance: str
    steps: float | None
    ok: bool


@dataclass
class RoundTrip:
    """An .onnx file run in onnxruntime against torch, output by output."""

    path: str
    outputs: list[OutputComparison]

    @property
    def ok(self) -> bool:
        return all(output.ok for output in self.outputs)

    @property
    def max_abs(self) -> float:
        return max((o.max_abs for o in self.outputs), default=0.0)

    @property
    def max_steps(self) -> float | None:
        steps = [o.steps for o in self.outputs if o.steps is not None]
        return max(steps) if steps else None

    def to_dict(self) -> dict:
        return {"path": self.path, "ok": self.ok, "outputs": [asdict(o) for o in self.outputs]}


def flat_tensors(outputs: Any) -> list[torch.Tensor]:
    """The tensors of a model's (possibly nested) outputs, in ONNX output order."""
    return [leaf for leaf in _pytree.tree_leaves(outputs) if isinstance(leaf, torch.Tensor)]


def output_tolerances(converted: GraphModule, steps: float = 1.0) -> list[Tolerance]:
    """`steps` steps of each quantized output's scale; the float tolerance for float outputs."""
    output = next(n for n in converted.graph.nodes if n.op == "output")
    tolerances = []
    for node in _pytree.tree_leaves(output.args[0]):
        scale = _dequantize_scale(node) if isinstance(node, Node) else None
        tolerances.append(
            Tolerance.for_float() if scale is None else Tolerance.for_steps(scale, steps)
        )
    return tolerances


def _dequantize_scale(node: Node) -> float | None:
    if node.target != torch.ops.quantized_decomposed.dequantize_per_tensor.default:
        return None
    scale = node.args[1]
    assert isinstance(scale, (int, float))  # the per-tensor overload takes a number
    return float(scale)


def run_onnx(path: Path | str, inputs: Sequence[Any]) -> dict[str, np.ndarray]:
    """Outputs by name of the model at `path` run on CPU with graph optimisations off.

    Failures name the node, op and module they happened at.
    """
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    arrays = [x.detach().numpy() for x in inputs if isinstance(x, torch.Tensor)]
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        feeds = {arg.name: array for arg, array in zip(session.get_inputs(), arrays)}
        names = [output.name for output in session.get_outputs()]
        return dict(zip(names, session.run(None, feeds)))
    except Exception as error:  # onnxruntime raises its own pybind types
        raise _runtime_failure(error, path) from None


def compare(
    path: Path | str,
    inputs: Sequence[Any],
    expected: Sequence[torch.Tensor],
    tolerances: Sequence[Tolerance],
) -> RoundTrip:
    """Run `path` on `inputs` and compare every output with `expected` under its tolerance."""
    actual = run_onnx(path, inputs)
    if len(actual) != len(expected):
        raise ValueError(f"the ONNX model has {len(actual)} outputs, torch {len(expected)}")
    comparisons = []
    for (name, got), tensor, tolerance in zip(actual.items(), expected, tolerances):
        want = tensor.detach().numpy().astype(np.float64)
        if got.shape != want.shape:
            raise ValueError(f"output {name} has shape {got.shape} in ONNX, {want.shape} in torch")
        error = np.abs(got.astype(np.float64) - want)
        max_abs = float(error.max(initial=0.0))
        magnitude = float(np.abs(want).max(initial=0.0))
        comparisons.append(
            OutputComparison(
                name=name,
                max_abs=max_abs,
                max_rel=max_abs / magnitude if magnitude else max_abs,
                tolerance=tolerance.describe(),
                steps=max_abs / tolerance.step if tolerance.step else None,
                ok=max_abs <= tolerance.atol + tolerance.rtol * magnitude,
            )
        )
    return RoundTrip(str(path), comparisons)


def float_round_trip(model: torch.nn.Module, inputs: Sequence[Any], path: Path | str) -> RoundTrip:
    """Compare the float ONNX model at `path` with `model` (in eval mode) on `inputs`."""
    with eval_mode(model), torch.no_grad():
        expected = flat_tensors(model(*inputs))
    return compare(path, inputs, expected, [Tolerance.for_float()] * len(expected))


def qdq_round_trip(
    converted: GraphModule, inputs: Sequence[Any], path: Path | str, steps: float = 1.0
) -> RoundTrip:
    """Compare the QDQ ONNX model at `path` with the converted torch model on `inputs`."""
    with torch.no_grad():
        expected = flat_tensors(converted(*inputs))
    return compare(path, inputs, expected, output_tolerances(converted, steps))


def _runtime_failure(error: Exception, path: Path | str) -> ConfirmFailure:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    message = _ORT_PREFIX.sub("", lines[0] if lines else type(error).__name__)
    graph = onnx.load(str(path), load_external_data=False).graph
    named = [node for node in graph.node if node.name and node.name in message]
    if not named:
        return ConfirmFailure("onnxruntime", "?", "?", message)
    node = max(named, key=lambda n: len(n.name))
    return ConfirmFailure("onnxruntime", node.op_type, node.name.rpartition("/")[0], message)
