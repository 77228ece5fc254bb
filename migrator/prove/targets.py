"""What `migrator verify` checks: `path/to/file.py:ClassOrFactory` specs, `--input` shapes and the
`[[tool.migrator.verify]]` entries of pyproject.toml. Plain parsing: no torch here."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from migrator.config import Config

_SHAPE = re.compile(r"^\d+(x\d+)*$")
_ATTRIBUTE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
ENTRY_KEYS = frozenset({"target", "inputs", "dtype", "kwargs"})


class TargetError(ValueError):
    """A target, input or config entry that cannot be used; `str()` is one line."""


@dataclass(frozen=True)
class InputSpec:
    """One example input: a random tensor of this shape and dtype (a torch dtype name)."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __str__(self) -> str:
        text = "x".join(map(str, self.shape)) or "scalar"
        return text if self.dtype == "float32" else f"{text}:{self.dtype}"


@dataclass
class Target:
    """A model to verify: `attribute` of `file`, a class constructed with `kwargs` or a callable
    returning a model or `(model, example_inputs)`."""

    file: Path
    attribute: str
    inputs: tuple[InputSpec, ...] = ()
    kwargs: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        try:
            shown = self.file.relative_to(Path.cwd())
        except ValueError:
            shown = self.file
        return f"{shown.as_posix()}:{self.attribute}"


def parse_input(text: str, dtype: str = "float32") -> InputSpec:
    """`1x3x224x224`, or `1x128:int64` with its own dtype."""
    shape, _, own_dtype = text.strip().partition(":")
    if not _SHAPE.match(shape):
        raise TargetError(f"input {text!r}: expected a shape like 1x3x224x224 (optionally :dtype)")
    return InputSpec(tuple(int(n) for n in shape.split("x")), own_dtype or dtype)


def parse_target(
    spec: str, root: Path, inputs: tuple[InputSpec, ...] = (), kwargs: dict | None = None
) -> Target:
    """`path/to/file.py:Name` (path relative to `root`)."""
    path, sep, attribute = spec.rpartition(":")
    if not sep or not path.endswith(".py") or not _ATTRIBUTE.match(attribute):
        raise TargetError(f"target {spec!r}: expected path/to/file.py:ClassOrFactory")
    file = (root / path).resolve()
    if not file.is_file():
        raise TargetError(f"target {spec!r}: {file} is not a file")
    return Target(file, attribute, inputs, dict(kwargs or {}))


def parse_kwargs(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TargetError(f"--kwargs: not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise TargetError("--kwargs: expected a JSON object")
    return value


def config_targets(config: Config) -> list[Target]:
    """The `[[tool.migrator.verify]]` entries, paths relative to the pyproject's folder."""
    targets = []
    for number, entry in enumerate(config.verify, 1):
        where = f"{config.path}: [[tool.migrator.verify]] entry {number}"
        if not isinstance(entry, dict) or not isinstance(entry.get("target"), str):
            raise TargetError(f'{where}: needs `target = "path/to/file.py:Name"`')
        unknown = set(entry) - ENTRY_KEYS
        if unknown:
            raise TargetError(
                f"{where}: unknown key(s) {', '.join(sorted(unknown))} (known: "
                f"{', '.join(sorted(ENTRY_KEYS))})"
            )
        shapes = entry.get("inputs", [])
        shapes = [shapes] if isinstance(shapes, str) else shapes
        dtype = entry.get("dtype", "float32")
        kwargs = entry.get("kwargs", {})
        if not (
            isinstance(shapes, list)
            and all(isinstance(s, str) for s in shapes)
            and isinstance(dtype, str)
            and isinstance(kwargs, dict)
        ):
            raise TargetError(
                f"{where}: `inputs` must be shape strings, `dtype` a string and `kwargs` a table"
            )
        try:
            inputs = tuple(parse_input(s, dtype) for s in shapes)
            targets.append(parse_target(entry["target"], config.root, inputs, kwargs))
        except TargetError as exc:
            raise TargetError(f"{where}: {exc}") from None
    return targets
