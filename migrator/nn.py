"""Stateless modules for PyTorch ops that have no ``torch.nn`` class.

migrator rewrites model source so that every op in ``forward`` is a named
``nn.Module`` used exactly once: ``x + y`` becomes ``self.add(x, y)`` with
``self.add = Add()`` created in ``__init__``.  The classes below are those
modules.  None of them has parameters or buffers, and each ``forward``
evaluates the very expression it replaced (same ATen op, bit-identical
output), so the rewritten model is numerically unchanged.

This file is SELF-CONTAINED on purpose: it imports nothing but ``torch``
(plus ``typing``), so a migrator option can copy its text verbatim into the
user's project and migrated code does not depend on migrator at run time.
Keep it that way: no relative imports, no migrator imports, and no
``from __future__ import annotations`` (TorchScript must read the
annotations).

Every module works in eager mode, under ``torch.fx.symbolic_trace`` (inlined
or as a leaf), ``torch.export.export`` and ``torch.onnx.export(dynamo=True)``.

TorchScript (``torch.jit.script``) is supported with two limits, both due to
TorchScript's static typing:

* Binary ops (``Add`` ... ``Pow``, ``Maximum``, ``Minimum``) and ``Where`` take
  only tensors there.  Python-number operands (``2 + t``, ``t * 0.5``,
  ``torch.where(c, t, 0.0)``) work everywhere else.
* TorchScript has no ``*args``.  ``Concat``, ``Stack`` and ``Einsum`` take any number of
  tensors in eager / fx / export; when scripted they are swapped (through the
  ``__prepare_scriptable__`` hook) for a twin taking 1 to 8 positional tensors,
  so a scripted caller may use ``self.cat(a, b)`` but not ``self.cat(*feats)``
  with a list.  As with every ``__prepare_scriptable__`` user, ``torch.jit.script``
  puts the twin into the scripted model's Python parent too (it edits
  ``_modules`` in place); the twin computes the same thing, up to 8 tensors.
* Hyper-parameters given at call time (``self.pad(x, pad=p)``) are typed as lists there
  (``pad``, ``size``, ``dim``): a scripted caller passes lists, not tuples.
* ``MaxPool`` and ``AvgPool`` do not compile: a size may be an int or a list, from the
  constructor or the call, which TorchScript cannot hold in one variable. migrator creates them
  only where a call passes a size at run time (``torch.nn``'s pools take constants).
  ``AdaptiveAvgPool`` and ``AdaptiveMaxPool`` compile as migrator builds them (without
  ``output_size``, which the call gives).
"""

from typing import List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F

__migrator_ops__ = True
"""Marks this file, and the verbatim copies `ops_module` makes of it, as migrator's op modules."""

__all__ = [
    "Add",
    "Clamp",
    "Sub",
    "Mul",
    "Div",
    "FloorDiv",
    "MatMul",
    "BMM",
    "AddMM",
    "BAddBMM",
    "Pow",
    "Concat",
    "Stack",
    "Exp",
    "Log",
    "Sqrt",
    "Rsqrt",
    "Abs",
    "Neg",
    "Erf",
    "Square",
    "Maximum",
    "Minimum",
    "Where",
    "MaskedFill",
    "CumSum",
    "Mean",
    "Sum",
    "Einsum",
    "Norm",
    "VectorNorm",
    "ScaledDotProductAttention",
    "Pad",
    "Interpolate",
    "MaxPool",
    "AvgPool",
    "AdaptiveAvgPool",
    "AdaptiveMaxPool",
    "PixelShuffle",
    "Flatten",
    "Dropout",
    "PReLU",
    "LayerNorm",
    "GroupNorm",
    "Normalize",
    "GridSample",
    "BatchNorm",
    "Embedding",
]


# ----------------------------------------------------------------- split copies


def stateless_copy(module: Optional[torch.nn.Module]) -> Optional[torch.nn.Module]:
    """``module`` as built again by ``migrator fix`` for a call site of its own.

    The module it copies is built from a constructor argument (``act_layer(inplace=True)``), so
    only the models built from the verify targets proved it to hold no parameters or buffers.
    A copy of one that does would untie its weights: raise at construction instead.
    """
    if module is not None and (
        any(True for _ in module.parameters()) or any(True for _ in module.buffers())
    ):
        raise TypeError(
            f"migrator split a module reused at several call sites into copies, on evidence "
            f"that it holds no parameters or buffers, but this {type(module).__name__} holds "
            "some: a copy would untie its weights; give each call site its own module"
        )
    return module


# ----------------------------------------------------------------- arithmetic


class _InPlaceTwin(torch.nn.Module):
    """An op that has an in-place twin (``x += y``, ``x.add_(y)``, ``x.sqrt_()``).

    ``as_inplace=True``, which ``migrator fix`` writes where it rewrote the twin on a tensor
    ``x`` nothing else holds, gives what the twin leaves in ``x``: the out-of-place result
    when it has ``x``'s dtype and shape, which is then the twin's, else the twin itself run on
    ``x``, which casts back to ``x``'s dtype (a bf16 ``x`` plus an fp32 tensor, or an op
    autocast runs in another dtype) or raises as the original did (a float result for an
    integer ``x``, a broadcast that would grow ``x``). The test reads dtypes and shapes only,
    which ``torch.export``, ONNX and TorchScript know while compiling: their graphs are the
    plain op's where the dtypes agree. A number ``x`` (``acc = 0`` then ``acc += t``: ``+=``
    rebinds it) and ``torch.fx.symbolic_trace``, which sees no dtypes, get the plain op.
    """

    def __init__(self, as_inplace: bool = False) -> None:
        super().__init__()
        self.as_inplace = as_inplace

    def _twin(
        self, x: torch.Tensor, out: torch.Tensor, autocast: Optional[List[torch.Tensor]] = None
    ) -> bool:
        """Whether the twin must run on ``x``: ``out``, computed out of place, is not what it
        leaves there. ``autocast``: operands autocast may bring to ``x``'s dtype out of place
        but not in place (addmm's matrices), which must then have it already."""
        if not self.as_inplace or not isinstance(x, torch.Tensor):
            return False
        if out.dtype != x.dtype or out.shape != x.shape:
            return True
        if autocast is not None:
            for operand in autocast:
                if operand.dtype != x.dtype:
                    return True
        return False

    def extra_repr(self) -> str:
        return "as_inplace=True" if self.as_inplace else ""

    def _repr(self, settings: str) -> str:
        """``settings``, followed by ``as_inplace=True`` when set."""
        return f"{settings}, as_inplace=True" if self.as_inplace else settings


class Add(_InPlaceTwin):
    """``x + y``, or ``torch.add(x, y, alpha=alpha)`` when ``alpha != 1``; its twins
    ``x += y`` and ``x.add_(y, alpha=alpha)``."""

    def __init__(self, alpha: Union[int, float] = 1, as_inplace: bool = False) -> None:
        super().__init__(as_inplace)
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = x + y if self.alpha == 1 else torch.add(x, y, alpha=self.alpha)
        return x.add_(y, alpha=self.alpha) if self._twin(x, out) else out

    def extra_repr(self) -> str:
        return self._repr(f"alpha={self.alpha!r}")


class Sub(_InPlaceTwin):
    """``x - y``, or ``torch.sub(x, y, alpha=alpha)`` when ``alpha != 1``; its twins ``x -= y``
    and ``x.sub_(y, alpha=alpha)``."""

    def __init__(self, alpha: Union[int, float] = 1, as_inplace: bool = False) -> None:
        super().__init__(as_inplace)
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = x - y if self.alpha == 1 else torch.sub(x, y, alpha=self.alpha)
        return x.sub_(y, alpha=self.alpha) if self._twin(x, out) else out

    def extra_repr(self) -> str:
        return self._repr(f"alpha={self.alpha!r}")


class Mul(_InPlaceTwin):
    """``x * y``; its twins ``x *= y`` and ``x.mul_(y)``."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = x * y
        return x.mul_(y) if self._twin(x, out) else out


class Div(_InPlaceTwin):
    """``x / y``, or ``torch.div(x, y, rounding_mode=...)`` when a mode is given; its twins
    ``x /= y`` and ``x.div_(y, rounding_mode=...)``."""

    def __init__(self, rounding_mode: Optional[str] = None, as_inplace: bool = False) -> None:
        super().__init__(as_inplace)
        self.rounding_mode = rounding_mode

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.rounding_mode is None:
            out = x / y
        else:
            out = torch.div(x, y, rounding_mode=self.rounding_mode)
        return x.div_(y, rounding_mode=self.rounding_mode) if self._twin(x, out) else out

    def extra_repr(self) -> str:
        return self._repr(f"rounding_mode={self.rounding_mode!r}")


class FloorDiv(_InPlaceTwin):
    """``x // y``; its twins ``x //= y`` and ``x.floor_divide_(y)``."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = x // y
        return x.floor_divide_(y) if self._twin(x, out) else out


class MatMul(torch.nn.Module):
    """``x @ y`` (and ``x @= y``, which rebinds ``x``: tensors have no in-place matmul)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x @ y


class BMM(torch.nn.Module):
    """``torch.bmm(x, y)``."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.bmm(x, y)


class AddMM(_InPlaceTwin):
    """``torch.addmm(x, mat1, mat2, beta=beta, alpha=alpha)``; its twin ``x.addmm_(...)``, which
    autocast leaves alone."""

    def __init__(
        self, beta: Union[int, float] = 1, alpha: Union[int, float] = 1, as_inplace: bool = False
    ) -> None:
        super().__init__(as_inplace)
        self.beta = beta
        self.alpha = alpha

    def forward(self, x: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
        out = torch.addmm(x, mat1, mat2, beta=self.beta, alpha=self.alpha)
        if self._twin(x, out, [mat1, mat2]):
            return x.addmm_(mat1, mat2, beta=self.beta, alpha=self.alpha)
        return out

    def extra_repr(self) -> str:
        return self._repr(f"beta={self.beta!r}, alpha={self.alpha!r}")


class BAddBMM(_InPlaceTwin):
    """``torch.baddbmm(x, batch1, batch2, beta=beta, alpha=alpha)``; its twin
    ``x.baddbmm_(...)``, which autocast leaves alone."""

    def __init__(
        self, beta: Union[int, float] = 1, alpha: Union[int, float] = 1, as_inplace: bool = False
    ) -> None:
        super().__init__(as_inplace)
        self.beta = beta
        self.alpha = alpha

    def forward(self, x: torch.Tensor, batch1: torch.Tensor, batch2: torch.Tensor) -> torch.Tensor:
        out = torch.baddbmm(x, batch1, batch2, beta=self.beta, alpha=self.alpha)
        if self._twin(x, out, [batch1, batch2]):
            return x.baddbmm_(batch1, batch2, beta=self.beta, alpha=self.alpha)
        return out

    def extra_repr(self) -> str:
        return self._repr(f"beta={self.beta!r}, alpha={self.alpha!r}")


class Pow(_InPlaceTwin):
    """``x ** y``; its twins ``x **= y`` and ``x.pow_(y)``."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = x**y
        return x.pow_(y) if self._twin(x, out) else out


# ------------------------------------------------------------ concat / stack


def _present(first: torch.Tensor, rest: List[Optional[torch.Tensor]]) -> List[torch.Tensor]:
    """``[first]`` followed by the tensors of ``rest`` that are not None."""
    out = [first]
    for t in rest:
        if t is not None:
            out.append(t)
    return out


class Concat(torch.nn.Module):
    """``torch.cat(tensors, dim)`` over the positional args: ``self.cat(a, b)``, ``self.cat(*feats)``."""

    def __init__(self, dim: int = 0) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        return torch.cat(tensors, dim=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim!r}"

    def __prepare_scriptable__(self) -> torch.nn.Module:
        # TorchScript cannot compile ``*tensors``; it compiles this twin instead.
        return _ScriptableConcat(dim=self.dim).train(self.training)


class _ScriptableConcat(Concat):
    """TorchScript form of ``Concat``: 1 to 8 positional tensors."""

    def forward(  # type: ignore[override]
        self,
        t0: torch.Tensor,
        t1: Optional[torch.Tensor] = None,
        t2: Optional[torch.Tensor] = None,
        t3: Optional[torch.Tensor] = None,
        t4: Optional[torch.Tensor] = None,
        t5: Optional[torch.Tensor] = None,
        t6: Optional[torch.Tensor] = None,
        t7: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        return torch.cat(_present(t0, [t1, t2, t3, t4, t5, t6, t7]), dim=self.dim)

    def __prepare_scriptable__(self) -> torch.nn.Module:
        return self


class Stack(torch.nn.Module):
    """``torch.stack(tensors, dim)`` over the positional args: ``self.stack(a, b)``, ``self.stack(*xs)``.

    ``dim`` may also be given at call time (``self.stack(a, b, dim=d)``), then it replaces the
    constructor's.
    """

    def __init__(self, dim: int = 0) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, *tensors: torch.Tensor, dim: Optional[int] = None) -> torch.Tensor:
        return torch.stack(tensors, dim=self.dim if dim is None else dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim!r}"

    def __prepare_scriptable__(self) -> torch.nn.Module:
        # TorchScript cannot compile ``*tensors``; it compiles this twin instead.
        return _ScriptableStack(dim=self.dim).train(self.training)


class _ScriptableStack(Stack):
    """TorchScript form of ``Stack``: 1 to 8 positional tensors."""

    def forward(  # type: ignore[override]
        self,
        t0: torch.Tensor,
        t1: Optional[torch.Tensor] = None,
        t2: Optional[torch.Tensor] = None,
        t3: Optional[torch.Tensor] = None,
        t4: Optional[torch.Tensor] = None,
        t5: Optional[torch.Tensor] = None,
        t6: Optional[torch.Tensor] = None,
        t7: Optional[torch.Tensor] = None,
        dim: Optional[int] = None,
    ) -> torch.Tensor:
        tensors = _present(t0, [t1, t2, t3, t4, t5, t6, t7])
        return torch.stack(tensors, dim=self.dim if dim is None else dim)

    def __prepare_scriptable__(self) -> torch.nn.Module:
        return self


# ---------------------------------------------------------------- elementwise


class Exp(_InPlaceTwin):
    """``torch.exp(x)``; its twin ``x.exp_()``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.exp(x)
        return x.exp_() if self._twin(x, out) else out


class Log(_InPlaceTwin):
    """``torch.log(x)``; its twin ``x.log_()``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.log(x)
        return x.log_() if self._twin(x, out) else out


class Sqrt(_InPlaceTwin):
    """``torch.sqrt(x)``; its twin ``x.sqrt_()``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.sqrt(x)
        return x.sqrt_() if self._twin(x, out) else out


class Rsqrt(_InPlaceTwin):
    """``torch.rsqrt(x)``; its twin ``x.rsqrt_()``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.rsqrt(x)
        return x.rsqrt_() if self._twin(x, out) else out


class Abs(_InPlaceTwin):
    """``torch.abs(x)`` (also ``torch.absolute``); its twin ``x.abs_()``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.abs(x)
        return x.abs_() if self._twin(x, out) else out


class Neg(_InPlaceTwin):
    """``torch.neg(x)`` (also ``torch.negative``); its twin ``x.neg_()``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.neg(x)
        return x.neg_() if self._twin(x, out) else out


class Erf(_InPlaceTwin):
    """``torch.erf(x)`` (also ``torch.special.erf``); its twin ``x.erf_()``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.erf(x)
        return x.erf_() if self._twin(x, out) else out


class Square(_InPlaceTwin):
    """``torch.square(x)``; its twin ``x.square_()``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.square(x)
        return x.square_() if self._twin(x, out) else out


class Maximum(torch.nn.Module):
    """``torch.maximum(x, y)``."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.maximum(x, y)


class Minimum(torch.nn.Module):
    """``torch.minimum(x, y)``."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.minimum(x, y)


class Where(torch.nn.Module):
    """``torch.where(condition, x, y)`` (the three-argument form)."""

    def forward(self, condition: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.where(condition, x, y)


class MaskedFill(_InPlaceTwin):
    """``x.masked_fill(mask, value)``; ``value`` may also be given at call time (a dtype's
    minimum, ``torch.finfo(dtype).min``), then replacing the constructor's. Its twin
    ``x.masked_fill_(mask, value)``."""

    def __init__(
        self, value: Optional[Union[int, float, bool]] = None, as_inplace: bool = False
    ) -> None:
        super().__init__(as_inplace)
        self.value = value

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, value: Optional[float] = None
    ) -> torch.Tensor:
        if value is None:
            assert self.value is not None, "MaskedFill built without `value` takes it at call"
            out = x.masked_fill(mask, self.value)
            return x.masked_fill_(mask, self.value) if self._twin(x, out) else out
        out = x.masked_fill(mask, value)
        return x.masked_fill_(mask, value) if self._twin(x, out) else out

    def extra_repr(self) -> str:
        return self._repr(f"value={self.value!r}")


class CumSum(_InPlaceTwin):
    """``torch.cumsum(x, dim, dtype=dtype)``; its twin ``x.cumsum_(dim, dtype=dtype)``."""

    def __init__(
        self, dim: int, dtype: Optional[torch.dtype] = None, as_inplace: bool = False
    ) -> None:
        super().__init__(as_inplace)
        self.dim = dim
        self.dtype = dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.cumsum(x, self.dim, dtype=self.dtype)
        return x.cumsum_(self.dim, dtype=self.dtype) if self._twin(x, out) else out

    def extra_repr(self) -> str:
        shown = f"dim={self.dim!r}" + (f", dtype={self.dtype}" if self.dtype is not None else "")
        return self._repr(shown)


# ---------------------------------------------------------------- reductions


class Clamp(_InPlaceTwin):
    """``torch.clamp(x, min, max)`` (also ``x.clamp``, ``torch.clip``); ``min`` and ``max`` may
    also be given at call time (``self.clamp(x, min=lo)``), each then replacing the
    constructor's. Its twin ``x.clamp_(min, max)``."""

    def __init__(
        self, min: Optional[float] = None, max: Optional[float] = None, as_inplace: bool = False
    ) -> None:
        super().__init__(as_inplace)
        self.min = min
        self.max = max

    def forward(
        self, x: torch.Tensor, min: Optional[float] = None, max: Optional[float] = None
    ) -> torch.Tensor:
        if min is None and max is None:
            return self._clamp(x, self.min, self.max)
        if min is None:
            return self._clamp(x, self.min, max)
        if max is None:
            return self._clamp(x, min, self.max)
        return self._clamp(x, min, max)

    def _clamp(
        self, x: torch.Tensor, low: Optional[Union[int, float]], high: Optional[Union[int, float]]
    ) -> torch.Tensor:
        out = torch.clamp(x, low, high)
        return x.clamp_(low, high) if self._twin(x, out) else out

    def extra_repr(self) -> str:
        return self._repr(f"min={self.min!r}, max={self.max!r}")


class Mean(torch.nn.Module):
    """``x.mean()`` when ``dim`` is None (and not ``keepdim``), else ``x.mean(dim, keepdim)``.

    ``dim`` may also be given at call time (``self.mean(x, dim=d)``), then it replaces the
    constructor's.
    """

    def __init__(
        self, dim: Union[None, int, List[int], Tuple[int, ...]] = None, keepdim: bool = False
    ) -> None:
        super().__init__()
        self.dim = dim
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor, dim: Optional[List[int]] = None) -> torch.Tensor:
        if dim is not None:
            return x.mean(dim, self.keepdim)
        if self.dim is None and not self.keepdim:
            return x.mean()
        return x.mean(self.dim, self.keepdim)

    def extra_repr(self) -> str:
        return f"dim={self.dim!r}, keepdim={self.keepdim!r}"


class Sum(torch.nn.Module):
    """``x.sum()`` when ``dim`` is None (and not ``keepdim``), else ``x.sum(dim, keepdim)``.

    ``dim`` may also be given at call time (``self.sum(x, dim=d)``), then it replaces the
    constructor's.
    """

    def __init__(
        self, dim: Union[None, int, List[int], Tuple[int, ...]] = None, keepdim: bool = False
    ) -> None:
        super().__init__()
        self.dim = dim
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor, dim: Optional[List[int]] = None) -> torch.Tensor:
        if dim is not None:
            return x.sum(dim, self.keepdim)
        if self.dim is None and not self.keepdim:
            return x.sum()
        return x.sum(self.dim, self.keepdim)

    def extra_repr(self) -> str:
        return f"dim={self.dim!r}, keepdim={self.keepdim!r}"


class Einsum(torch.nn.Module):
    """``torch.einsum(equation, *operands)`` over the positional args: ``self.einsum(a, b)``."""

    def __init__(self, equation: str) -> None:
        super().__init__()
        self.equation = equation

    def forward(self, *operands: torch.Tensor) -> torch.Tensor:
        return torch.einsum(self.equation, *operands)

    def extra_repr(self) -> str:
        return f"equation={self.equation!r}"

    def __prepare_scriptable__(self) -> torch.nn.Module:
        # TorchScript cannot compile ``*operands``; it compiles this twin instead.
        return _ScriptableEinsum(self.equation).train(self.training)


class _ScriptableEinsum(Einsum):
    """TorchScript form of ``Einsum``: 1 to 8 positional tensors."""

    def forward(  # type: ignore[override]
        self,
        t0: torch.Tensor,
        t1: Optional[torch.Tensor] = None,
        t2: Optional[torch.Tensor] = None,
        t3: Optional[torch.Tensor] = None,
        t4: Optional[torch.Tensor] = None,
        t5: Optional[torch.Tensor] = None,
        t6: Optional[torch.Tensor] = None,
        t7: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        return torch.einsum(self.equation, _present(t0, [t1, t2, t3, t4, t5, t6, t7]))

    def __prepare_scriptable__(self) -> torch.nn.Module:
        return self


class Norm(torch.nn.Module):
    """``torch.norm(x, p, dim, keepdim)`` (also ``x.norm``); ``p`` a number, "fro" or "nuc"."""

    def __init__(
        self,
        p: Union[str, float, int] = "fro",
        dim: Union[None, int, List[int], Tuple[int, ...]] = None,
        keepdim: bool = False,
    ) -> None:
        super().__init__()
        self.p = p
        self.dim = dim
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.norm(x, self.p, self.dim, self.keepdim)

    def extra_repr(self) -> str:
        return f"p={self.p!r}, dim={self.dim!r}, keepdim={self.keepdim!r}"


class VectorNorm(torch.nn.Module):
    """``torch.linalg.vector_norm(x, ord, dim, keepdim)``."""

    def __init__(
        self,
        ord: Union[int, float] = 2,
        dim: Union[None, int, List[int], Tuple[int, ...]] = None,
        keepdim: bool = False,
    ) -> None:
        super().__init__()
        self.ord = ord
        self.dim = dim
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(x, self.ord, self.dim, self.keepdim)

    def extra_repr(self) -> str:
        return f"ord={self.ord!r}, dim={self.dim!r}, keepdim={self.keepdim!r}"


# ---------------------------------------------------------- functional ops


class ScaledDotProductAttention(torch.nn.Module):
    """``F.scaled_dot_product_attention`` with fixed options.

    Like the function, it applies ``dropout_p`` whatever ``self.training`` is, unless
    ``dropout_train_only`` (``dropout_p=p if self.training else 0.0``: 0 in eval mode).
    ``dropout_p`` and ``is_causal`` may also be given at call time; then they are used as
    they are.
    """

    def __init__(
        self,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: Optional[float] = None,
        enable_gqa: bool = False,
        dropout_train_only: bool = False,
    ) -> None:
        super().__init__()
        self.dropout_p = dropout_p
        self.is_causal = is_causal
        self.scale = scale
        self.enable_gqa = enable_gqa
        self.dropout_train_only = dropout_train_only

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attn_mask: Optional[torch.Tensor] = None,
        dropout_p: Optional[float] = None,
        is_causal: Optional[bool] = None,
    ) -> torch.Tensor:
        p = self.dropout_p if self.training or not self.dropout_train_only else 0.0
        if dropout_p is not None:
            p = dropout_p
        causal = self.is_causal
        if is_causal is not None:
            causal = is_causal
        return F.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=attn_mask,
            dropout_p=p,
            is_causal=causal,
            scale=self.scale,
            enable_gqa=self.enable_gqa,
        )

    def extra_repr(self) -> str:
        return (
            f"dropout_p={self.dropout_p!r}, is_causal={self.is_causal!r}, "
            f"scale={self.scale!r}, enable_gqa={self.enable_gqa!r}"
            + (", dropout_train_only=True" if self.dropout_train_only else "")
        )


class Pad(torch.nn.Module):
    """``F.pad(x, pad, mode, value)``; ``pad`` and ``value`` may also be given at call time
    (``self.pad(x, pad=p)``, a padding computed from the input's size), each then replacing the
    constructor's."""

    def __init__(
        self,
        pad: Optional[Sequence[int]] = None,
        mode: str = "constant",
        value: Optional[float] = None,
    ) -> None:
        super().__init__()
        self.pad = pad
        self.mode = mode
        self.value = value

    def forward(
        self, x: torch.Tensor, pad: Optional[List[int]] = None, value: Optional[float] = None
    ) -> torch.Tensor:
        fill = self.value if value is None else value
        if pad is not None:
            return F.pad(x, pad, self.mode, fill)
        own = self.pad
        assert own is not None, "Pad built without `pad` takes it at call time"
        return F.pad(x, own, self.mode, fill)

    def extra_repr(self) -> str:
        return f"pad={self.pad!r}, mode={self.mode!r}, value={self.value!r}"


class Interpolate(torch.nn.Module):
    """``F.interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor,
    antialias)``: ``nn.Upsample`` with ``antialias``, whose ``size``, ``scale_factor``,
    ``mode``, ``align_corners``, ``antialias`` and ``recompute_scale_factor`` may also be given
    at call time (``self.interpolate(x, size=y.shape[-2:])``), each then replacing the
    constructor's."""

    def __init__(
        self,
        size: Optional[Union[int, Sequence[int]]] = None,
        scale_factor: Optional[Union[float, Sequence[float]]] = None,
        mode: str = "nearest",
        align_corners: Optional[bool] = None,
        recompute_scale_factor: Optional[bool] = None,
        antialias: bool = False,
    ) -> None:
        super().__init__()
        self.size = size
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor
        self.antialias = antialias

    def forward(
        self,
        x: torch.Tensor,
        size: Optional[List[int]] = None,
        scale_factor: Optional[List[float]] = None,
        mode: Optional[str] = None,
        align_corners: Optional[bool] = None,
        antialias: Optional[bool] = None,
        recompute_scale_factor: Optional[bool] = None,
    ) -> torch.Tensor:
        recompute = (
            self.recompute_scale_factor
            if recompute_scale_factor is None
            else recompute_scale_factor
        )
        if mode is None:
            mode = self.mode
        corners = self.align_corners if align_corners is None else align_corners
        smooth = self.antialias if antialias is None else antialias
        if size is None and scale_factor is None:
            return F.interpolate(x, self.size, self.scale_factor, mode, corners, recompute, smooth)
        if scale_factor is None:
            return F.interpolate(x, size, self.scale_factor, mode, corners, recompute, smooth)
        if size is None:
            return F.interpolate(x, self.size, scale_factor, mode, corners, recompute, smooth)
        return F.interpolate(x, size, scale_factor, mode, corners, recompute, smooth)

    def extra_repr(self) -> str:
        return (
            f"size={self.size!r}, scale_factor={self.scale_factor!r}, mode={self.mode!r}, "
            f"align_corners={self.align_corners!r}, "
            f"recompute_scale_factor={self.recompute_scale_factor!r}"
            + (", antialias=True" if self.antialias else "")
        )


# ------------------------------------------------- settings given at call time
#
# torch.nn's pools, PixelShuffle and Flatten take their settings only in their constructor;
# these take them at call time as well (a size computed from the input), each then replacing
# the constructor's. `dims` picks the function of that many spatial dimensions. MaxPool and
# AvgPool do not compile with TorchScript (see the module docstring). torch's type stubs take
# narrower sizes than the functions do (`return_indices` a literal): hence the ignores.


_Size = Union[int, List[int], Tuple[int, ...]]
"""A pool's kernel size, stride, padding or dilation: one int, or one per dimension."""


class MaxPool(torch.nn.Module):
    """``F.max_pool<dims>d(x, kernel_size, stride, padding, dilation, ceil_mode,
    return_indices)``; ``kernel_size``, ``stride`` and ``padding`` may be given at call time."""

    __constants__ = ("dims", "return_indices")

    def __init__(
        self,
        dims: int,
        kernel_size: Optional[_Size] = None,
        stride: Optional[_Size] = None,
        padding: _Size = 0,
        dilation: _Size = 1,
        ceil_mode: bool = False,
        return_indices: bool = False,
    ) -> None:
        super().__init__()
        self.dims = dims
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.ceil_mode = ceil_mode
        self.return_indices = return_indices

    def forward(
        self,
        x: torch.Tensor,
        kernel_size: Optional[List[int]] = None,
        stride: Optional[List[int]] = None,
        padding: Optional[List[int]] = None,
    ):
        kernel = self.kernel_size if kernel_size is None else kernel_size
        assert kernel is not None, "MaxPool built without `kernel_size` takes it at call time"
        step = self.stride if stride is None else stride
        pad = self.padding if padding is None else padding
        dilation, ceil, indices = self.dilation, self.ceil_mode, self.return_indices
        if self.dims == 1:
            return F.max_pool1d(x, kernel, step, pad, dilation, ceil, indices)  # type: ignore[call-overload]
        if self.dims == 2:
            return F.max_pool2d(x, kernel, step, pad, dilation, ceil, indices)  # type: ignore[call-overload]
        return F.max_pool3d(x, kernel, step, pad, dilation, ceil, indices)  # type: ignore[call-overload]

    def extra_repr(self) -> str:
        return (
            f"dims={self.dims}, kernel_size={self.kernel_size!r}, stride={self.stride!r}, "
            f"padding={self.padding!r}, dilation={self.dilation!r}, "
            f"ceil_mode={self.ceil_mode!r}, return_indices={self.return_indices!r}"
        )


class AvgPool(torch.nn.Module):
    """``F.avg_pool<dims>d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
    divisor_override)``; ``kernel_size``, ``stride`` and ``padding`` may be given at call time
    (``divisor_override`` is not taken for ``dims=1``, as ``F.avg_pool1d`` has none)."""

    def __init__(
        self,
        dims: int,
        kernel_size: Optional[_Size] = None,
        stride: Optional[_Size] = None,
        padding: _Size = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: Optional[int] = None,
    ) -> None:
        super().__init__()
        self.dims = dims
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(
        self,
        x: torch.Tensor,
        kernel_size: Optional[List[int]] = None,
        stride: Optional[List[int]] = None,
        padding: Optional[List[int]] = None,
    ) -> torch.Tensor:
        kernel = self.kernel_size if kernel_size is None else kernel_size
        assert kernel is not None, "AvgPool built without `kernel_size` takes it at call time"
        step = self.stride if stride is None else stride
        pad = self.padding if padding is None else padding
        ceil, count = self.ceil_mode, self.count_include_pad
        if self.dims == 1:
            return F.avg_pool1d(x, kernel, step, pad, ceil, count)  # type: ignore[arg-type]
        if self.dims == 2:
            return F.avg_pool2d(x, kernel, step, pad, ceil, count, self.divisor_override)
        return F.avg_pool3d(x, kernel, step, pad, ceil, count, self.divisor_override)

    def extra_repr(self) -> str:
        return (
            f"dims={self.dims}, kernel_size={self.kernel_size!r}, stride={self.stride!r}, "
            f"padding={self.padding!r}, ceil_mode={self.ceil_mode!r}, "
            f"count_include_pad={self.count_include_pad!r}, "
            f"divisor_override={self.divisor_override!r}"
        )


class AdaptiveAvgPool(torch.nn.Module):
    """``F.adaptive_avg_pool<dims>d(x, output_size)``; ``output_size`` may be given at call
    time."""

    def __init__(
        self, dims: int, output_size: Optional[Union[int, Sequence[Optional[int]]]] = None
    ) -> None:
        super().__init__()
        self.dims = dims
        self.output_size = output_size

    def forward(self, x: torch.Tensor, output_size: Optional[List[int]] = None) -> torch.Tensor:
        size = self.output_size if output_size is None else output_size
        assert size is not None, "AdaptiveAvgPool built without `output_size` takes it at call"
        if self.dims == 1:
            return F.adaptive_avg_pool1d(x, size)  # type: ignore[arg-type]
        if self.dims == 2:
            return F.adaptive_avg_pool2d(x, size)  # type: ignore[arg-type]
        return F.adaptive_avg_pool3d(x, size)  # type: ignore[arg-type]

    def extra_repr(self) -> str:
        return f"dims={self.dims}, output_size={self.output_size!r}"


class AdaptiveMaxPool(torch.nn.Module):
    """``F.adaptive_max_pool<dims>d(x, output_size, return_indices)``; ``output_size`` may be
    given at call time."""

    __constants__ = ("dims", "return_indices")

    def __init__(
        self,
        dims: int,
        output_size: Optional[Union[int, Sequence[Optional[int]]]] = None,
        return_indices: bool = False,
    ) -> None:
        super().__init__()
        self.dims = dims
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, x: torch.Tensor, output_size: Optional[List[int]] = None):
        size = self.output_size if output_size is None else output_size
        assert size is not None, "AdaptiveMaxPool built without `output_size` takes it at call"
        if self.dims == 1:
            return F.adaptive_max_pool1d(x, size, self.return_indices)  # type: ignore[call-overload]
        if self.dims == 2:
            return F.adaptive_max_pool2d(x, size, self.return_indices)  # type: ignore[call-overload]
        return F.adaptive_max_pool3d(x, size, self.return_indices)  # type: ignore[call-overload]

    def extra_repr(self) -> str:
        return (
            f"dims={self.dims}, output_size={self.output_size!r}, "
            f"return_indices={self.return_indices!r}"
        )


class PixelShuffle(torch.nn.Module):
    """``F.pixel_shuffle(x, upscale_factor)``; ``upscale_factor`` may be given at call time."""

    def __init__(self, upscale_factor: Optional[int] = None) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x: torch.Tensor, upscale_factor: Optional[int] = None) -> torch.Tensor:
        factor = self.upscale_factor if upscale_factor is None else upscale_factor
        assert factor is not None, "PixelShuffle built without `upscale_factor` takes it at call"
        return F.pixel_shuffle(x, factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor!r}"


class Flatten(torch.nn.Module):
    """``x.flatten(start_dim, end_dim)`` (``nn.Flatten``'s defaults); ``start_dim`` and
    ``end_dim`` may be given at call time."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(
        self, x: torch.Tensor, start_dim: Optional[int] = None, end_dim: Optional[int] = None
    ) -> torch.Tensor:
        start = self.start_dim if start_dim is None else start_dim
        end = self.end_dim if end_dim is None else end_dim
        return x.flatten(start, end)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim!r}, end_dim={self.end_dim!r}"


class Dropout(torch.nn.Module):
    """``F.dropout(x, p, self.training, inplace)`` (``nn.Dropout``'s defaults); ``p`` may be
    given at call time."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        self.p = p
        self.inplace = inplace

    def forward(self, x: torch.Tensor, p: Optional[float] = None) -> torch.Tensor:
        return F.dropout(x, self.p if p is None else p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p!r}, inplace={self.inplace!r}"


class PReLU(torch.nn.Module):
    """``F.prelu(x, weight)`` with the slopes given at call time: the caller's own parameter
    stays where it is, so its ``state_dict`` keys do not change."""

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.prelu(x, weight)


class LayerNorm(torch.nn.Module):
    """``F.layer_norm(x, normalized_shape, weight, bias, eps)`` with the affine ``weight`` and
    ``bias`` given at call time: the caller's own parameters stay where they are, so its
    ``state_dict`` keys do not change. ``normalized_shape`` and ``eps`` may be given at call
    time too, then replacing the constructor's."""

    normalized_shape: Optional[List[int]]

    def __init__(
        self, normalized_shape: Optional[Union[int, Sequence[int]]] = None, eps: float = 1e-5
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = [normalized_shape]
        self.normalized_shape = None if normalized_shape is None else list(normalized_shape)
        self.eps = eps

    def forward(
        self,
        x: torch.Tensor,
        weight: Optional[torch.Tensor] = None,
        bias: Optional[torch.Tensor] = None,
        normalized_shape: Optional[List[int]] = None,
        eps: Optional[float] = None,
    ) -> torch.Tensor:
        shape = self.normalized_shape if normalized_shape is None else normalized_shape
        assert shape is not None, "LayerNorm built without `normalized_shape` takes it at call"
        return F.layer_norm(x, shape, weight, bias, self.eps if eps is None else eps)

    def extra_repr(self) -> str:
        return f"normalized_shape={self.normalized_shape!r}, eps={self.eps!r}"


class GroupNorm(torch.nn.Module):
    """``F.group_norm(x, num_groups, weight, bias, eps)``; the affine ``weight`` and ``bias``,
    when there are some, are given at call time (the caller's own parameters stay where they
    are), and ``num_groups`` and ``eps`` may be, then replacing the constructor's."""

    def __init__(self, num_groups: Optional[int] = None, eps: float = 1e-5) -> None:
        super().__init__()
        self.num_groups = num_groups
        self.eps = eps

    def forward(
        self,
        x: torch.Tensor,
        weight: Optional[torch.Tensor] = None,
        bias: Optional[torch.Tensor] = None,
        num_groups: Optional[int] = None,
        eps: Optional[float] = None,
    ) -> torch.Tensor:
        groups = self.num_groups if num_groups is None else num_groups
        assert groups is not None, "GroupNorm built without `num_groups` takes it at call"
        return F.group_norm(x, groups, weight, bias, self.eps if eps is None else eps)

    def extra_repr(self) -> str:
        return f"num_groups={self.num_groups!r}, eps={self.eps!r}"


class Normalize(torch.nn.Module):
    """``F.normalize(x, p, dim, eps)``: Lp-normalise along ``dim``."""

    def __init__(self, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> None:
        super().__init__()
        self.p = p
        self.dim = dim
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, self.p, self.dim, self.eps)

    def extra_repr(self) -> str:
        return f"p={self.p!r}, dim={self.dim!r}, eps={self.eps!r}"


class GridSample(torch.nn.Module):
    """``F.grid_sample(x, grid, mode, padding_mode, align_corners)``; each setting may also be
    given at call time, then replacing the constructor's."""

    def __init__(
        self,
        mode: str = "bilinear",
        padding_mode: str = "zeros",
        align_corners: Optional[bool] = None,
    ) -> None:
        super().__init__()
        self.mode = mode
        self.padding_mode = padding_mode
        self.align_corners = align_corners

    def forward(
        self,
        x: torch.Tensor,
        grid: torch.Tensor,
        mode: Optional[str] = None,
        padding_mode: Optional[str] = None,
        align_corners: Optional[bool] = None,
    ) -> torch.Tensor:
        if mode is None:
            mode = self.mode
        if padding_mode is None:
            padding_mode = self.padding_mode
        corners = self.align_corners if align_corners is None else align_corners
        return F.grid_sample(x, grid, mode, padding_mode, corners)

    def extra_repr(self) -> str:
        return (
            f"mode={self.mode!r}, padding_mode={self.padding_mode!r}, "
            f"align_corners={self.align_corners!r}"
        )


class BatchNorm(torch.nn.Module):
    """``F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)``:
    the statistics and affine tensors are forward inputs (the module holds none); ``training``
    is the module's mode, or ``training_mode`` when that is set (a call that passed a literal
    ``training=True``: weight standardisation normalises with the batch statistics in eval
    mode too)."""

    def __init__(
        self, momentum: float = 0.1, eps: float = 1e-5, training_mode: Optional[bool] = None
    ) -> None:
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.training_mode = training_mode

    def forward(
        self,
        x: torch.Tensor,
        running_mean: Optional[torch.Tensor],
        running_var: Optional[torch.Tensor],
        weight: Optional[torch.Tensor] = None,
        bias: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        mode = self.training_mode
        training = self.training if mode is None else mode
        return F.batch_norm(
            x, running_mean, running_var, weight, bias, training, self.momentum, self.eps
        )

    def extra_repr(self) -> str:
        mode = "" if self.training_mode is None else f", training_mode={self.training_mode!r}"
        return f"momentum={self.momentum!r}, eps={self.eps!r}{mode}"


class Embedding(torch.nn.Module):
    """``F.embedding(indices, table, ...)`` with the table a forward input (data, not a
    learned weight: ``nn.Embedding`` is the module that owns one)."""

    def __init__(
        self,
        padding_idx: Optional[int] = None,
        max_norm: Optional[float] = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> None:
        super().__init__()
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse

    def forward(self, indices: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        return F.embedding(
            indices,
            table,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.sparse,
        )

    def extra_repr(self) -> str:
        return (
            f"padding_idx={self.padding_idx!r}, max_norm={self.max_norm!r}, "
            f"norm_type={self.norm_type!r}, scale_grad_by_freq={self.scale_grad_by_freq!r}, "
            f"sparse={self.sparse!r}"
        )
