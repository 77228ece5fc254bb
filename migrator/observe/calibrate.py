"""Feed batches through a prepared model so its observers record value ranges.

`calibration` is one of:
- `None`: the example inputs, once;
- an `int` N: N random batches shaped like the example inputs, each float tensor drawn from
  a normal distribution with the example's mean and standard deviation (seeded: reproducible);
- a callable returning an iterable of batches (a tensor or a tuple of positional inputs each).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Union

import torch

from migrator.graph import as_tuple

Calibration = Union[None, int, Callable[[], Iterable[Any]]]
RANDOM_SEED = 0


def _random_like(inputs: tuple[Any, ...], generator: torch.Generator) -> tuple[Any, ...]:
    def draw(x: Any) -> Any:
        if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
            return x
        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype)
        return noise * x.std(correction=0) + x.mean()

    return tuple(draw(x) for x in inputs)


def calibration_batches(
    example_inputs: tuple[Any, ...], calibration: Calibration
) -> Iterator[tuple[Any, ...]]:
    """The batches `calibration` stands for, each as a tuple of positional inputs."""
    if calibration is None:
        yield example_inputs
    elif isinstance(calibration, int) and not isinstance(calibration, bool):
        if calibration < 1:
            raise ValueError(f"calibration batches must be at least 1, got {calibration}")
        generator = torch.Generator().manual_seed(RANDOM_SEED)
        for _ in range(calibration):
            yield _random_like(example_inputs, generator)
    elif callable(calibration):
        for batch in calibration():
            yield as_tuple(batch)
    else:
        raise TypeError(
            f"calibration must be None, an int or a callable, not {type(calibration).__name__}"
        )


def calibrate(prepared: torch.nn.Module, batches: Iterable[tuple[Any, ...]]) -> int:
    """Run `prepared` on every batch without gradients; return how many batches ran."""
    count = 0
    with torch.no_grad():
        for batch in batches:
            prepared(*batch)
            count += 1
    if count == 0:
        raise ValueError("calibration yielded no batch: the observers would record nothing")
    return count
