"""Symbolic tracing with migrator's leaf policy, source lines on nodes, and readable failures."""

from __future__ import annotations

import dis
import inspect
import os
import sys
from functools import cache
from types import CodeType, FrameType
from collections.abc import Iterable
from typing import Any

import torch
from torch import fx

from migrator.graph import describe_source
from migrator.catalog import Role
from migrator.prove.ops import (
    IN_FUNCTIONAL_MODULE,
    LITERAL_TRAINING,
    op_module_classes,
    runtime_catalog,
)
from migrator.prove.training_arg import literal_training, reads_self_training

SOURCE = "migrator_source"
"""node.meta key: (filename, line) of the user code that created the node."""
READS_SELF_TRAINING = "migrator_reads_self_training"
"""node.meta key of an op taking `training`: whether its call passes `self.training`."""
AUGMENTED = "migrator_augmented"
"""node.meta key of an operator node an augmented assignment on a traced value made (`x +=
y`): fx proxies have no in-place operators, so Python falls back to `x = x + y` and fx
records `operator.add`; the user's code changed `x` in place."""

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(__file__) + os.sep


class PrepareError(RuntimeError):
    """A model migrator cannot prepare, or a prepared model that does not match its original."""


class TraceFailure(PrepareError):
    """torch.fx could not trace the model; the message names the module, the line and the way out."""

    def __init__(self, message: str, module: str, location: str, reason: str) -> None:
        super().__init__(message)
        self.module = module
        self.location = location
        self.reason = reason


def is_op_module(module: torch.nn.Module) -> bool:
    """A catalog op module: `nn.ReLU`, `migrator.nn.Add`, or a class of the same name from a copy
    of migrator.nn (the `ops_module` setting) that holds no submodules, parameters or buffers."""
    classes, copied_names = op_module_classes()
    cls = type(module)
    if cls in classes:
        return True
    return (
        cls.__name__ in copied_names
        and not module._modules
        and not module._parameters
        and not module._buffers
    )


def _is_user_file(filename: str) -> bool:
    return not filename.startswith((_TORCH_DIR, _OWN_DIR, "<frozen", "<eval_with_key"))


def _caller() -> tuple[FrameType | None, bool]:
    """The innermost frame of the model's code making the call being recorded, and whether
    that call runs inside a method of an eager-mode quantization `FloatFunctional`
    (`self.skip_add.add(a, b)`): then the op already has a module of its own."""
    frame: FrameType | None = sys._getframe(2)
    functional = False
    while frame is not None and not _is_user_file(frame.f_code.co_filename):
        if frame.f_code in _functional_methods() and isinstance(
            frame.f_locals.get("self"), torch.ao.nn.quantized.FloatFunctional
        ):
            functional = True
        frame = frame.f_back
    return frame, functional


@cache
def _augmented_offsets(code: CodeType) -> frozenset[int]:
    """Where `code` runs the operator of an augmented assignment (`x += y`: `BINARY_OP +=`)."""
    return frozenset(
        i.offset
        for i in dis.get_instructions(code)
        if i.opname == "BINARY_OP" and i.argrepr.endswith("=")
    )


@cache
def _functional_methods() -> frozenset[CodeType]:
    """The code of `FloatFunctional`'s own methods, the frames in which its ops run."""
    cls = torch.ao.nn.quantized.FloatFunctional
    return frozenset(f.__code__ for f in vars(cls).values() if inspect.isfunction(f))


class Tracer(fx.Tracer):
    """fx tracer keeping catalog op modules and excluded modules as leaves, and recording, per
    node, the user source line that created it."""

    def __init__(
        self, modules_to_exclude: Iterable[Any] = (), module_classes_to_exclude: Iterable[type] = ()
    ) -> None:
        super().__init__()
        excluded = list(modules_to_exclude or ())
        self.excluded_names = {m for m in excluded if isinstance(m, str)}
        self.excluded_ids = {id(m) for m in excluded if isinstance(m, torch.nn.Module)}
        self.excluded_classes = tuple(module_classes_to_exclude or ())
        self.calls: list[tuple[str, type]] = []
        """Modules being traced through, outermost first (left as is when tracing fails)."""
        self.module_ids: set[int] | None = None

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        if (
            module_qualified_name in self.excluded_names
            or id(m) in self.excluded_ids
            or isinstance(m, self.excluded_classes)
            or is_op_module(m)
        ):
            return True
        return super().is_leaf_module(m, module_qualified_name)

    def call_module(self, m, forward, args, kwargs):
        self.calls.append((self.path_of_module(m), type(m)))
        result = super().call_module(m, forward, args, kwargs)
        self.calls.pop()
        return result

    def create_proxy(self, kind, target, args, kwargs, *rest, **options):
        proxy = super().create_proxy(kind, target, args, kwargs, *rest, **options)
        if kind not in ("placeholder", "output"):
            frame, functional = _caller()
            node = proxy.node
            node.meta[SOURCE] = (frame.f_code.co_filename, frame.f_lineno) if frame else None
            if kind in ("call_function", "call_method") and functional:
                node.meta[IN_FUNCTIONAL_MODULE] = True
            if (
                kind == "call_function"
                and frame is not None
                and node.args
                and isinstance(node.args[0], fx.Node)
                and frame.f_lasti in _augmented_offsets(frame.f_code)
            ):
                node.meta[AUGMENTED] = True
            match = runtime_catalog().match(node) if kind == "call_function" else None
            if frame and match and any(a.role is Role.TRAINING for a in match.op.args):
                node.meta[READS_SELF_TRAINING] = reads_self_training(
                    match.op, frame, self._model_modules()
                )
                node.meta[LITERAL_TRAINING] = literal_training(match.op, frame)
        return proxy

    def _model_modules(self) -> set[int]:
        """The ids of the traced model's modules."""
        if self.module_ids is None:
            self.module_ids = {id(m) for m in self.root.modules()}
        return self.module_ids


class GraphOnly(fx.GraphModule):
    """A GraphModule without Python code: its graph and modules are read, it is never run.
    fx's code generation is a third of tracing a small model, and a graph compared needs none."""

    def recompile(self) -> Any:
        return None


def trace(
    model: torch.nn.Module,
    modules_to_exclude: Iterable[Any] = (),
    module_classes_to_exclude: Iterable[type] = (),
    concrete_args: dict[str, Any] | None = None,
    code: bool = True,
) -> fx.GraphModule:
    """`model` as a GraphModule (leaves shared with `model`), a `GraphOnly` one unless `code`;
    raises `TraceFailure`."""
    tracer = Tracer(modules_to_exclude, module_classes_to_exclude)
    try:
        graph = tracer.trace(model, concrete_args)
    except Exception as exc:  # fx reports with many exception types
        raise _failure(model, tracer, exc) from exc
    return (fx.GraphModule if code else GraphOnly)(tracer.root, graph, type(model).__name__)


def _failure(model: torch.nn.Module, tracer: Tracer, exc: Exception) -> TraceFailure:
    path, cls = tracer.calls[-1] if tracer.calls else ("", type(model))
    module = f"`{path}` ({cls.__name__})" if path else f"the root module ({cls.__name__})"
    source = None
    tb = exc.__traceback__
    while tb is not None:
        if _is_user_file(tb.tb_frame.f_code.co_filename):
            source = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    location = describe_source(source)
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())
    exclude = f'modules_to_exclude=["{path}"] or ' if path else ""
    message = (
        f"torch.fx cannot trace {module} at {describe_source(source, with_code=True)}\n"
        f"  fx says: {reason}\n"
        f"  ways out: pass the value that decides it with concrete_args={{...}}; keep the "
        f"module as a leaf with {exclude}module_classes_to_exclude=[{cls.__name__}]; or "
        f"move the code into a function registered with torch.fx.wrap"
    )
    return TraceFailure(message, path, location, reason)
