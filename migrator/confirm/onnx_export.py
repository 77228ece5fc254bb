"""Export float and quantize/dequantize (QDQ) models with `torch.onnx.export(..., dynamo=True)`.

ONNX nodes are named after the module they came from (`layer1.0.relu_1/Relu`), QDQ nodes after
the op whose tensor they carry (`layer1.0.relu_1/QuantizeLinear`), so a reviewer can find a
module in the graph. The exporter's graph optimiser is off: every module keeps its own nodes
(it would fold a float BatchNorm into the conv before it). Weights are kept inside the
.onnx file unless they pass `SINGLE_FILE_LIMIT_BYTES` (protobuf files stop at 2 GiB).
"""

from __future__ import annotations

import ast
import contextlib
import re
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.fx import GraphModule, Node

from migrator.confirm.failure import ConfirmFailure, first_line
from migrator.graph import owning_module, quiet_loggers
from migrator.observe.capture import Captured
from migrator.observe import pt2e  # noqa: F401  torchao registers the quantized_decomposed ops

OPSET = 21
"""int16 QuantizeLinear / DequantizeLinear need opset 21."""
SINGLE_FILE_LIMIT_BYTES = 1 << 30
_EXPORTER_LOGGERS = ("torch.onnx._internal.exporter._registration",)
_NAME_SCOPES = "pkg.torch.onnx.name_scopes"
_NOT_A_MODULE = "_empty_nn_module_stack_from_metadata_hook"
"""Scope the exporter gives nodes it adds without a module (shape reads of dynamic dims)."""
_FX_NODE_IN_MESSAGE = re.compile(r"%(\w+) : ")
_REASON_IN_SUMMARY = re.compile(r"## Exception summary\s+<class '[^']+'>: ([^\n]+)")
_qd = torch.ops.quantized_decomposed
QDQ_OPS = {
    _qd.quantize_per_tensor.default, _qd.quantize_per_tensor.tensor,
    _qd.dequantize_per_tensor.default, _qd.dequantize_per_tensor.tensor,
    _qd.quantize_per_channel.default, _qd.dequantize_per_channel.default,
}  # fmt: skip


@dataclass
class OnnxFile:
    """An exported .onnx file and how many nodes of each op type it holds."""

    path: Path
    op_counts: Counter

    @property
    def qdq_node_count(self) -> int:
        return self.op_counts["QuantizeLinear"] + self.op_counts["DequantizeLinear"]


def export_float(captured: Captured, path: Path) -> OnnxFile:
    """Export the captured float model."""
    return export_program(captured.program, captured.trace_inputs, path)


def export_qdq(converted: GraphModule, captured: Captured, path: Path) -> OnnxFile:
    """Export the output of `convert_pt2e`, with the dynamic batch of the capture."""
    attribute_qdq_to_modules(converted)
    with _quiet_exporter():
        program = torch.export.export(
            converted, captured.trace_inputs, dynamic_shapes=captured.dynamic_shapes
        )
    return export_program(program, captured.trace_inputs, path)


def export_program(
    program: torch.export.ExportedProgram, inputs: tuple[Any, ...], path: Path
) -> OnnxFile:
    """Write `program` to `path` as ONNX with module-named nodes; failures name op and module."""
    with _quiet_exporter():
        try:
            onnx_program = torch.onnx.export(
                program, inputs, dynamo=True, opset_version=OPSET, optimize=False, verbose=False
            )
        except Exception as error:  # the exporter raises many types; all become one failure
            raise _export_failure(error, program) from None
    assert onnx_program is not None  # the dynamo exporter returns its program
    name_nodes_after_modules(onnx_program.model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx_program.save(path, external_data=_weight_bytes(program) > SINGLE_FILE_LIMIT_BYTES)
    return OnnxFile(path, Counter(node.op_type for node in onnx_program.model.graph))


def attribute_qdq_to_modules(graph_module: GraphModule) -> None:
    """Give each quantize/dequantize node the module and stack trace of the op it serves.

    That op produces its input, or, for model inputs and weights, consumes its output.
    """
    for node in graph_module.graph.nodes:
        if node.target not in QDQ_OPS or node.meta.get("nn_module_stack"):
            continue
        producer = node.args[0]
        served = producer if producer.meta.get("nn_module_stack") else _consuming_op(node)
        if served is not None:
            node.meta["nn_module_stack"] = dict(served.meta["nn_module_stack"])
            node.meta["stack_trace"] = served.meta.get("stack_trace")


def _consuming_op(node: Node) -> Node | None:
    for user in node.users:
        if user.meta.get("nn_module_stack"):
            return user
        if user.target in QDQ_OPS and (op := _consuming_op(user)) is not None:
            return op
    return None


def name_nodes_after_modules(model: Any) -> None:
    """Rename the nodes of an `onnx_ir` model `<module>/<OpType>`, numbered when repeated."""
    seen: Counter = Counter()
    for node in model.graph:
        scopes = ast.literal_eval(node.metadata_props.get(_NAME_SCOPES, "[]"))
        module = scopes[-2] if len(scopes) >= 2 and scopes[-2] != _NOT_A_MODULE else ""
        base = f"{module or 'model'}/{node.op_type}"
        node.name = f"{base}_{seen[base]}" if seen[base] else base
        seen[base] += 1


def _export_failure(error: Exception, program: torch.export.ExportedProgram) -> ConfirmFailure:
    messages = []
    cause: BaseException | None = error
    while cause is not None:
        messages.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    text = "\n".join(messages)
    nodes = {node.name: node for node in program.graph.nodes}
    node = next((nodes[n] for n in _FX_NODE_IN_MESSAGE.findall(text) if n in nodes), None)
    reason = _REASON_IN_SUMMARY.search(text)
    detail = reason.group(1) if reason else first_line(error)
    if node is None:
        return ConfirmFailure("ONNX export", "?", "?", detail)
    return ConfirmFailure("ONNX export", str(node.target), owning_module(node), detail)


def _weight_bytes(program: torch.export.ExportedProgram) -> int:
    tensors = [*program.state_dict.values(), *program.constants.values()]
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


@contextlib.contextmanager
def _quiet_exporter():
    """Mute what the exporter says on every call that is not about this model."""
    with quiet_loggers(_EXPORTER_LOGGERS), warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, message=".*LeafSpec")
        warnings.filterwarnings("ignore", message="Exporting a model while it is in training mode")
        yield
