"""Capture a model with `torch.export` (dynamic batch) and label the tensors its nodes produce.

After migration every op runs inside its own named module, so a node's owning module (the last
entry of its `nn_module_stack`) names the op: `layer1.0.relu_1`, `cat`, `blocks.0.attn.matmul`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import Node

from migrator.confirm.failure import first_line
from migrator.graph import as_tuple, last_model_frame, owning_module

BATCH_DIM_NAME = "batch"


@dataclass
class Captured:
    """A model exported with a dynamic batch dimension.

    `graph_module` is the program as a module, for `prepare_pt2e` (which changes it in place).
    """

    program: torch.export.ExportedProgram
    graph_module: torch.fx.GraphModule
    example_inputs: tuple[Any, ...]
    trace_inputs: tuple[Any, ...]
    dynamic_shapes: tuple[Any, ...]


def batch_dynamic_shapes(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Mark dim 0 of every tensor input as one shared dynamic batch dimension."""
    batch = torch.export.Dim(BATCH_DIM_NAME)
    return tuple(
        {0: batch} if isinstance(x, torch.Tensor) and x.dim() > 0 else None for x in inputs
    )


def _trace_inputs(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Inputs to trace with: a batch of one is doubled, since export specialises size-1 dims."""
    if any(isinstance(x, torch.Tensor) and x.dim() > 0 and x.shape[0] == 1 for x in inputs):
        return tuple(
            torch.cat([x, x]) if isinstance(x, torch.Tensor) and x.dim() > 0 else x for x in inputs
        )
    return inputs


@contextlib.contextmanager
def eval_mode(model: torch.nn.Module):
    """Put `model` in eval mode for the block, then back in the mode it was in."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


class CaptureFailure(Exception):
    """torch.export failed: one line with the model source line it failed at, and why."""


def capture(model: torch.nn.Module, example_inputs: Any) -> Captured:
    """Export `model` (in eval mode) with a dynamic batch dimension on every tensor input."""
    inputs = as_tuple(example_inputs)
    trace_inputs = _trace_inputs(inputs)
    dynamic_shapes = batch_dynamic_shapes(inputs)
    with eval_mode(model):
        try:
            program = torch.export.export(model, trace_inputs, dynamic_shapes=dynamic_shapes)
        except Exception as error:  # export raises many types; all become one line
            frame = last_model_frame(str(error))
            where = f" at {frame.file}:{frame.line} ({frame.code.strip()})" if frame else ""
            raise CaptureFailure(f"torch.export failed{where}: {first_line(error)}") from None
    return Captured(program, program.module(), inputs, trace_inputs, dynamic_shapes)


def tensor_label(node: Node) -> str:
    """What tensor `node` produces, for people: a model input, a weight, or the module of the op.

    An op written in a module's own `forward` (`x.flatten(2)`) rather than run by a module
    call (`self.flatten(x)`) is labelled with its op too: `blocks.0.attn (permute)`.
    """
    if node.op == "placeholder":
        return f"input {node.target}"
    if node.op == "get_attr":
        return str(node.target)
    module = owning_module(node)
    frame = last_model_frame(node.meta.get("stack_trace"))
    if module and frame and f"self.{module.rpartition('.')[2]}(" in frame.code:
        return module
    op = getattr(getattr(node.target, "overloadpacket", None), "__name__", node.name)
    return f"{module or 'model'} ({op})"
