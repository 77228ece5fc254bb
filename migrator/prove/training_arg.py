"""Whether a traced op's `training` argument is `self.training`, read off the call that made
it (`F.dropout(x, self.p, training=self.training)`): such an op follows the mode of the
model, so the preparer needs no second trace in the other mode to see it."""

from __future__ import annotations

import ast
import linecache
import types
from functools import lru_cache
from types import FrameType
from typing import Any

import torch

from migrator import binder
from migrator.catalog import Op, Role
from migrator.prove.ops import runtime_catalog
from migrator.refusal import Refusal

Positions = tuple[int | None, int | None, int | None, int | None]


def reads_self_training(op: Op, frame: FrameType, modules: set[int]) -> bool:
    """Whether the call `frame` is making is one of `op`'s functions passing `self.training`
    as its `training` argument, `self` being a module of the model (`modules`: their ids)
    whose `training` is the plain attribute `train()` sets."""
    value = _training_written(op, frame)
    module = frame.f_locals.get("self")
    return (
        isinstance(value, ast.Attribute)
        and value.attr == "training"
        and isinstance(value.value, ast.Name)
        and value.value.id == "self"
        and isinstance(module, torch.nn.Module)
        and id(module) in modules
        and "training" in vars(module)
        and not any("training" in vars(cls) for cls in type(module).__mro__)
    )


def literal_training(op: Op, frame: FrameType) -> bool:
    """Whether the call `frame` is making is one of `op`'s functions passing a literal
    `True` or `False` as its `training` argument (`training=True`), as the static path reads it:
    a trace records `self.training` as a constant too, so only the source tells them apart."""
    value = _training_written(op, frame)
    return isinstance(value, ast.Constant) and isinstance(value.value, bool)


def _training_written(op: Op, frame: FrameType) -> ast.expr | None:
    """The `training` argument as written in the call `frame` is making, when that call is one
    of `op`'s functions with plain arguments (None otherwise, or when it is not passed)."""
    call = _call_at(frame)
    arg = next((a for a in op.args if a.role is Role.TRAINING), None)
    if call is None or arg is None or any(isinstance(n, ast.NamedExpr) for n in ast.walk(call)):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    callee = runtime_catalog().function(_resolved(call.func, frame))
    values = binder.arguments(op, call.args, [(str(k.arg), k.value) for k in call.keywords])
    if callee is None or callee.op is not op or isinstance(values, Refusal):
        return None
    value = values.get(arg.name)
    return value if isinstance(value, ast.expr) else None


def _call_at(frame: FrameType) -> ast.Call | None:
    """The call expression `frame` is running, found by its source positions."""
    positions = list(frame.f_code.co_positions())
    if frame.f_lasti // 2 >= len(positions):
        return None
    text = "".join(linecache.getlines(frame.f_code.co_filename))
    return _calls(text).get(positions[frame.f_lasti // 2]) if text else None


@lru_cache(maxsize=16)
def _calls(text: str) -> dict[Positions, ast.Call]:
    """Every call of a source text by its (line, end line, column, end column)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    return {
        (n.lineno, n.end_lineno, n.col_offset, n.end_col_offset): n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
    }


def _resolved(func: ast.expr, frame: FrameType) -> Any:
    """What a name or a dotted path of module attributes (`F.dropout`) refers to in `frame`;
    None for anything else (nothing is evaluated beyond a module's attributes)."""
    if isinstance(func, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, frame.f_builtins):
            if func.id in scope:
                return scope[func.id]
        return None
    if isinstance(func, ast.Attribute):
        owner = _resolved(func.value, frame)
        if isinstance(owner, types.ModuleType):
            return vars(owner).get(func.attr)
    return None
