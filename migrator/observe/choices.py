"""The quantization choices a back-end needs, by default and per module name or class.

Read from `[tool.migrator.quantization]` and the command line (`--activation-dtype`, ...,
`--quantize 'module=head.*,activation-dtype=int16'`); torch is not imported here.

    [tool.migrator.quantization]
    activation-dtype = "int8"        # int8 (default), uint8, int16
    activation-scheme = "affine"     # affine (default) or symmetric (zero point 0; 127 for uint8)
    weights = "per-channel"          # per-channel (default) or per-tensor, always symmetric
    overrides = [
        { module = "head.*", activation-dtype = "int16" },
        { class = "torch.nn.Linear", weights = "per-tensor" },
    ]

An override applies to the modules its `module` glob names (a name also covers the modules
under it) or to the instances of its `class` (subclasses included); a later one wins.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

ALLOWED = {
    "activation_dtype": ("int8", "uint8", "int16"),
    "activation_scheme": ("affine", "symmetric"),
    "weights": ("per-channel", "per-tensor"),
}
"""Each choice (its key with `_` for `-`) and the values it takes; the first is the default."""
SELECTORS = ("module", "class")


@dataclass(frozen=True)
class Choices:
    """How one module's activations and weight are quantized."""

    activation_dtype: str = "int8"
    activation_scheme: str = "affine"
    weights: str = "per-channel"


@dataclass(frozen=True)
class Override:
    """Choices for the modules named by a glob (`module`) or of a class (`cls`)."""

    settings: Mapping[str, str]
    module: str | None = None
    cls: str | None = None

    def applies(self, module: str, is_a: Callable[[str], bool]) -> bool:
        if self.module is not None:
            pattern = self.module
            return fnmatch.fnmatchcase(module, pattern) or module.startswith(pattern + ".")
        return self.cls is not None and is_a(self.cls)


@dataclass(frozen=True)
class Quantization:
    """The defaults and the overrides, in order."""

    defaults: Choices = field(default_factory=Choices)
    overrides: tuple[Override, ...] = ()

    def for_module(self, module: str, is_a: Callable[[str], bool]) -> Choices:
        """The choices for `module`; `is_a(name)` says whether it is an instance of the class
        with that qualified name."""
        choices = self.defaults
        for override in self.overrides:
            if override.applies(module, is_a):
                choices = replace(choices, **override.settings)
        return choices

    def with_(self, defaults: Mapping[str, str], overrides: tuple[Override, ...]) -> Quantization:
        """These choices with other defaults and more overrides (which win)."""
        return Quantization(replace(self.defaults, **defaults), self.overrides + overrides)


def choice_settings(table: Mapping[str, object], where: str) -> dict[str, str]:
    """The choices a table sets, checked (raises ValueError, one line, naming `where`)."""
    settings = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        if name not in ALLOWED:
            known = ", ".join(k.replace("_", "-") for k in ALLOWED)
            raise ValueError(f"{where}: unknown key `{key}` (known: {known})")
        if value not in ALLOWED[name]:
            raise ValueError(
                f"{where}: `{key}` is {value!r}; choose from {', '.join(ALLOWED[name])}"
            )
        settings[name] = str(value)
    return settings


def parse_override(table: Mapping[str, object], where: str) -> Override:
    """One override: exactly one of `module` (a glob) or `class`, and choices."""
    selectors = [key for key in SELECTORS if key in table]
    if len(selectors) != 1:
        raise ValueError(f"{where}: an override names exactly one of `module` or `class`")
    (selector,) = selectors
    target = table[selector]
    if not isinstance(target, str) or not target:
        raise ValueError(f"{where}: `{selector}` must be a non-empty string")
    rest = {key: value for key, value in table.items() if key != selector}
    if not rest:
        raise ValueError(f"{where}: the override for {selector} {target!r} sets nothing")
    settings = choice_settings(rest, where)
    if selector == "module":
        return Override(settings, module=target)
    return Override(settings, cls=target)


def parse_quantization(table: object, where: str) -> Quantization:
    """The `[tool.migrator.quantization]` table (raises ValueError, one line)."""
    if not isinstance(table, dict):
        raise ValueError(f"{where}: must be a table")
    overrides = table.get("overrides", [])
    if not isinstance(overrides, list) or not all(isinstance(o, dict) for o in overrides):
        raise ValueError(f"{where}: `overrides` must be a list of tables")
    defaults = choice_settings({k: v for k, v in table.items() if k != "overrides"}, where)
    return Quantization(
        Choices(**defaults),
        tuple(parse_override(o, f"{where} overrides[{i}]") for i, o in enumerate(overrides)),
    )


def parse_override_text(text: str) -> Override:
    """An override from the command line: `module=GLOB,KEY=VALUE,...` or `class=NAME,...`."""
    table = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"--quantize {text!r}: expected module=GLOB|class=NAME,KEY=VALUE,...")
        table[key.strip()] = value.strip()
    return parse_override(table, f"--quantize {text!r}")
