"""Helpers the fx and export graphs share (`migrator.prove`, `migrator.observe`,
`migrator.confirm`): example inputs as call arguments, the module that ran a node, the model
source line behind a node, and muting loggers."""

from __future__ import annotations

import contextlib
import linecache
import logging
import os
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import torch
from torch.fx import Node

_LIBRARY_DIRS = (
    os.path.dirname(torch.__file__) + os.sep,
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
)
"""torch's and migrator's own files (migrator.nn included): not model code."""
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in \S+\n(?P<code>[^\n]*))?')


class Frame(NamedTuple):
    """A source line: file, line number and (when known) its code."""

    file: str
    line: int
    code: str = ""


def as_tuple(example_inputs: Any) -> tuple[Any, ...]:
    """Example inputs as the positional arguments a model is called with."""
    return example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)


_OUTSIDE_MODULES = "_empty_nn_module_stack_from_metadata_hook"
"""The `nn_module_stack` entry torch.export gives nodes it made outside any module (sizes)."""


class ModuleCall(NamedTuple):
    """One call of a module, as an exported node's `nn_module_stack` records it."""

    key: str
    """Unique per call: a module called twice has two keys (`L__self__relu`, `...@1`)."""
    name: str
    """Dotted name of the module ('' for the root module)."""
    type_name: str
    """Qualified name of its class (`torch.nn.modules.activation.ReLU`)."""


def innermost_call(node: Node) -> ModuleCall | None:
    """The call of the innermost module that ran `node`, or None outside any module."""
    stack = {
        k: v for k, v in (node.meta.get("nn_module_stack") or {}).items() if k != _OUTSIDE_MODULES
    }
    if not stack:
        return None
    key, (name, type_name) = next(reversed(stack.items()))
    return ModuleCall(key, name, str(type_name))


def owning_module(node: Node) -> str:
    """Dotted name of the innermost module that ran `node` ('' for the root module)."""
    call = innermost_call(node)
    return call.name if call else ""


def last_model_frame(stack_trace: str | None) -> Frame | None:
    """The innermost frame of a formatted stack trace (as torch.export records them) that is
    neither torch's nor migrator's."""
    frames = [
        Frame(m["file"], int(m["line"]), m["code"] or "")
        for m in _FRAME.finditer(stack_trace or "")
        if not m["file"].startswith(_LIBRARY_DIRS)
    ]
    return frames[-1] if frames else None


def describe_source(source: tuple[str, int] | Frame | None, with_code: bool = False) -> str:
    """`path:line` (relative to the working directory when under it), optionally with the code;
    `?` when unknown."""
    if source is None:
        return "?"
    filename, line = source[0], source[1]
    cwd = os.getcwd() + os.sep
    text = f"{filename.removeprefix(cwd)}:{line}"
    code = linecache.getline(filename, line).strip() if with_code else ""
    return f"{text}: `{code}`" if code else text


def called_module(root: torch.nn.Module, node: Node) -> torch.nn.Module:
    """The submodule of `root` that a `call_module` node calls."""
    assert isinstance(node.target, str)  # fx keeps the module's path there
    return root.get_submodule(node.target)


def source_location(node: Node) -> str:
    """`path:line` of the model code that ran an exported node ('' when unknown)."""
    frame = last_model_frame(node.meta.get("stack_trace"))
    return describe_source(frame) if frame else ""


@contextlib.contextmanager
def quiet_loggers(logger_names: tuple[str, ...]) -> Iterator[None]:
    """Raise the named loggers to ERROR for the duration of the block."""
    loggers = [logging.getLogger(name) for name in logger_names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
