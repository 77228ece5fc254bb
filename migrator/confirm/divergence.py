"""Where a QDQ model first differs between torch and onnxruntime.

Every activation quantize of the converted graph (`quantize_per_tensor`) is exported as one
QuantizeLinear, in graph order. Both runtimes are run keeping every quantized tensor; the
first one whose integers differ names the op whose float result rounded the other way (the op
that produces the quantize's input), and how many steps apart the two runtimes are there.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from torch.fx import GraphModule, Interpreter, Node

from migrator.confirm.roundtrip import run_onnx
from migrator.graph import source_location
from migrator.observe import pt2e  # noqa: F401  torchao registers the quantized_decomposed ops
from migrator.observe.capture import tensor_label

_QUANTIZE = {
    torch.ops.quantized_decomposed.quantize_per_tensor.default,
    torch.ops.quantized_decomposed.quantize_per_tensor.tensor,
}


@dataclass(frozen=True)
class Divergence:
    """The first quantized tensor whose integers differ: the op producing the quantize's input,
    its source line, how many of the tensors quantized before it agree, the differences there
    (in steps, and how many elements), and how far apart the float values quantized were (0:
    the two runtimes rounded equal floats differently)."""

    op: str
    source: str
    agreeing: int
    total: int
    max_steps: int
    elements: int
    float_gap: float

    def describe(self) -> str:
        why = (
            f"the op's float results differ by up to {self.float_gap:.2g} and round apart"
            if self.float_gap
            else "equal float results round apart"
        )
        return (
            f"first diverges at {self.op} ({self.source}): quantized tensor "
            f"{self.agreeing + 1} of {self.total}, {self.elements} value(s) up to "
            f"{self.max_steps} step(s) apart ({why})"
        )


class _Quantized(Interpreter):
    """Runs the converted graph, keeping each activation quantize's input and output in order."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.kept: list[tuple[Node, torch.Tensor, torch.Tensor]] = []

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        if n.target in _QUANTIZE:
            self.kept.append((n, self.env[n.args[0]], result))  # type: ignore[index]
        return result


def _onnx_quantized(path: Path | str, inputs: Sequence[Any]) -> list[tuple[np.ndarray, ...]]:
    """The input and output of every QuantizeLinear of the model at `path`, in graph order."""
    model = onnx.load(str(path))
    pairs = [
        (node.input[0], node.output[0])
        for node in model.graph.node
        if node.op_type == "QuantizeLinear"
    ]
    known = {output.name for output in model.graph.output}
    wanted = dict.fromkeys(name for pair in pairs for name in pair if name not in known)
    model.graph.output.extend(onnx.ValueInfoProto(name=name) for name in wanted)
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / "probe.onnx"
        onnx.save(model, str(probe))
        outputs = run_onnx(probe, inputs)
    return [(outputs[a], outputs[b]) for a, b in pairs]


def first_divergence(
    converted: GraphModule, inputs: Sequence[Any], path: Path | str
) -> Divergence | None:
    """The first quantized tensor that differs between `converted` and the QDQ ONNX model at
    `path` on `inputs`; None when every one agrees. Raises ValueError when the two graphs do
    not quantize the same tensors (counts or shapes differ)."""
    interpreter = _Quantized(converted)
    with torch.no_grad():
        interpreter.run(*inputs)
    ours = interpreter.kept
    theirs = _onnx_quantized(path, inputs)
    if len(ours) != len(theirs):
        raise ValueError(f"torch quantizes {len(ours)} tensors, the ONNX model {len(theirs)}")
    for index, ((node, value, expected), (got_value, got)) in enumerate(zip(ours, theirs)):
        want = expected.numpy()
        if want.shape != got.shape:
            raise ValueError(f"quantized tensor {index + 1} is {want.shape} in torch, {got.shape}")
        gap = np.abs(want.astype(np.int64) - got.astype(np.int64))
        if gap.any():
            float_gap = np.abs(value.numpy().astype(np.float64) - got_value)
            producer = node.args[0]
            assert isinstance(producer, Node)  # a quantize reads a tensor
            return Divergence(
                op=tensor_label(producer),
                source=source_location(producer),
                agreeing=index,
                total=len(ours),
                max_steps=int(gap.max()),
                elements=int(np.count_nonzero(gap)),
                float_gap=float(float_gap[gap > 0].max()),
            )
    return None
