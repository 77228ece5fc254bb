"""Running a model reproducibly and comparing what two runs returned."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import torch


def clone(value: Any) -> Any:
    """A deep copy of the tensors in `value` (so in-place ops in a run touch nothing shared)."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(clone(v) for v in value)
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    return value


@contextmanager
def preserved_buffers(model: torch.nn.Module) -> Iterator[None]:
    """Put every buffer (BatchNorm running statistics...) back as it was afterwards."""
    with torch.no_grad():
        saved = [(b, b.clone()) for b in model.buffers()]
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, value in saved:
                buffer.copy_(value)


def run_seeded(model: torch.nn.Module, inputs: tuple[Any, ...], seed: int = 0) -> Any:
    """`model(*inputs)` without gradients, the global RNG seeded with `seed` and left as found,
    and the model's buffers put back as they were."""
    with torch.random.fork_rng(), torch.no_grad(), preserved_buffers(model):
        manual_seed(seed)
        return model(*clone(inputs))


def manual_seed(seed: int) -> None:
    """`torch.manual_seed`, but only the CPU generator while no accelerator is in use (then
    no tensor lives on one): queueing a seed for each device kind not initialised formats a
    stack trace, a sixth of a small model's forward."""
    if (
        torch.cuda.is_initialized()
        or torch.xpu.is_initialized()
        or torch.mtia.is_initialized()
        or torch.backends.mps.is_available()
    ):
        torch.manual_seed(seed)
    else:
        torch.default_generator.manual_seed(seed)


def difference(expected: Any, actual: Any, where: str = "output") -> str | None:
    """Where and how `actual` differs from `expected` (tensors compared with `torch.equal`), or
    None when they are identical."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return f"{where}: expected a tensor, got {type(actual).__name__}"
        if expected.shape != actual.shape or expected.dtype != actual.dtype:
            return (
                f"{where}: expected {expected.dtype} {tuple(expected.shape)}, got "
                f"{actual.dtype} {tuple(actual.shape)}"
            )
        if torch.equal(expected, actual):
            return None
        delta = (expected.double() - actual.double()).abs().nan_to_num(float("inf"))
        return (
            f"{where}: {int((expected != actual).sum())} of {expected.numel()} values differ "
            f"(max abs diff {delta.max().item():.3g})"
        )
    if isinstance(expected, (list, tuple)):
        if type(expected) is not type(actual) or len(expected) != len(actual):
            return f"{where}: expected {type(expected).__name__} of {len(expected)}, got {actual!r:.80}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            found = difference(e, a, f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or list(expected) != list(actual):
            return f"{where}: expected keys {list(expected)}, got {actual!r:.80}"
        for key in expected:
            found = difference(expected[key], actual[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    return None if expected == actual else f"{where}: expected {expected!r:.80}, got {actual!r:.80}"


def count_tensors(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return 1
    if isinstance(value, (list, tuple)):
        return sum(map(count_tensors, value))
    if isinstance(value, dict):
        return sum(map(count_tensors, value.values()))
    return 0
