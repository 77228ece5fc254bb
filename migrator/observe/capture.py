"""Capture a model with `torch.export` (dynamic batch) and read back where each graph node came from.

After migration every op runs inside its own named module, so a node's owning module (the last
entry of its `nn_module_stack`) names the op: `layer1.0.relu_1`, `cat`, `blocks.0.attn.matmul`.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import Node

BATCH_DIM_NAME = "batch"
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in \S+\n(?P<code>[^\n]*)')
_LIBRARY_DIRS = (
    os.path.dirname(torch.__file__) + os.sep,
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # migrator, migrator.nn
)


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


def as_input_tuple(example_inputs: Any) -> tuple[Any, ...]:
    """`example_inputs` as the positional-argument tuple a model is called with."""
    return example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)


def batch_dynamic_shapes(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Mark dim 0 of every tensor input as one shared dynamic batch dimension."""
    batch = torch.export.Dim(BATCH_DIM_NAME)
    return tuple({0: batch} if isinstance(x, torch.Tensor) and x.dim() > 0 else None for x in inputs)


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


def capture(model: torch.nn.Module, example_inputs: Any) -> Captured:
    """Export `model` (in eval mode) with a dynamic batch dimension on every tensor input."""
    inputs = as_input_tuple(example_inputs)
    trace_inputs = _trace_inputs(inputs)
    dynamic_shapes = batch_dynamic_shapes(inputs)
    with eval_mode(model):
        program = torch.export.export(model, trace_inputs, dynamic_shapes=dynamic_shapes)
    return Captured(program, program.module(), inputs, trace_inputs, dynamic_shapes)


def owning_module(node: Node) -> str:
    """Dotted name of the innermost module that ran `node` ('' for the root module)."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return ""
    path, _ = list(stack.values())[-1]
    return path


def _innermost_model_frame(node: Node) -> re.Match | None:
    """The innermost frame of the node's stack trace that is model code, not torch or migrator."""
    frames = _FRAME.finditer(node.meta.get("stack_trace") or "")
    return next((f for f in reversed(list(frames)) if not f["file"].startswith(_LIBRARY_DIRS)), None)


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
    frame = _innermost_model_frame(node)
    if module and frame and f"self.{module.rpartition('.')[2]}(" in frame["code"]:
        return module
    op = getattr(getattr(node.target, "overloadpacket", None), "__name__", node.name)
    return f"{module or 'model'} ({op})"


def source_location(node: Node) -> str:
    """`file:line` of the model code that ran the node ('' when unknown).

    Paths under the working directory are shown relative to it.
    """
    frame = _innermost_model_frame(node)
    if frame is None:
        return ""
    path = frame["file"]
    cwd = os.getcwd() + os.sep
    return f"{path[len(cwd):] if path.startswith(cwd) else path}:{frame['line']}"
