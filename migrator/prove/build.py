"""Build a verify target's model and example inputs on one side of a comparison: the one place
`verify`, `export` and `fix --verify` make models."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

from migrator.graph import as_tuple
from migrator.prove.load import LoadError, Side, load
from migrator.prove.targets import InputSpec, Target

ORIGINAL_SEED, MIGRATED_SEED = 0, 1
"""Different seeds to build each side: the migrated weights only match if loading works."""


@dataclass(frozen=True)
class Built:
    model: torch.nn.Module
    inputs: tuple | None
    """The example inputs, or None when the target gives none."""
    overridden: frozenset[Path]
    """The side's overlay files the model's import used."""


def build(target: Target, side: Side, seed: int) -> Built:
    """`target`'s model (its weights drawn with `seed`) and example inputs on `side`; the
    target's file is imported once per side however often it is built (raises LoadError)."""
    ahead = side.prebuilt.pop(build_key(target, seed), None)
    if ahead is not None:
        return ahead
    loaded = load(target.file, target.attribute, side)
    factory, module = loaded.value, loaded.module
    where = f"{target.label} ({side.label})"
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        try:
            made = factory(**target.kwargs)
        except Exception as exc:  # user code
            raise LoadError(f"{where}: calling it raised {type(exc).__name__}: {exc}") from exc
        inputs = None
        if isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module):
            made, inputs = made
        if not isinstance(made, torch.nn.Module):
            raise LoadError(
                f"{where}: gives {type(made).__name__}, expected a model or (model, example_inputs)"
            )
        if target.inputs:
            inputs = make_inputs(target.inputs)
        elif inputs is None and callable(getattr(module, "example_inputs", None)):
            inputs = module.example_inputs()
    return Built(made, None if inputs is None else as_tuple(inputs), loaded.overridden)


def build_key(target: Target, seed: int) -> tuple:
    """What tells one build of a target from another on a side."""
    return (target.label, repr(target.kwargs), target.inputs, seed)


def make_inputs(specs: Iterable[InputSpec], seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Random tensors of the given shapes: normal floats, 0/1 integers, random booleans."""
    tensors = []
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for spec in specs:
            dtype = getattr(torch, spec.dtype, None)
            if not isinstance(dtype, torch.dtype):
                raise LoadError(
                    f"unknown dtype {spec.dtype!r} (use a torch dtype name: float32, "
                    "int64, bool...)"
                )
            if dtype == torch.bool:
                tensors.append(torch.rand(spec.shape) < 0.5)
            elif dtype.is_floating_point or dtype.is_complex:
                tensors.append(torch.randn(spec.shape, dtype=dtype))
            else:
                tensors.append(torch.randint(0, 2, spec.shape, dtype=dtype))
    return tuple(tensors)
