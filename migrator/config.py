"""`[tool.migrator]` settings from the nearest `pyproject.toml` above the given paths."""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from migrator.findings import CODES

KNOWN_KEYS = {"ops_module", "include", "exclude", "disable", "verify"}


class ConfigError(Exception):
    """A `[tool.migrator]` table that cannot be used; `str()` is one line."""


@dataclass
class Config:
    path: Path | None = None
    ops_module: str = "migrator.nn"
    """Module the created elementwise/combining op modules are imported from."""
    include: tuple[str, ...] = ("*.py",)
    exclude: tuple[str, ...] = ()
    disable: frozenset[str] = frozenset()
    """Finding codes not reported (and, for MIG0xx, not fixed: `fix` leaves a file that would
    need such a fix untouched, since it cannot leave one kind of fix out of a rewrite)."""
    verify: list[object] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.path.parent if self.path else Path.cwd()


def find_pyproject(paths: list[str]) -> Path | None:
    start = _folder_of(paths[0] if paths else ".")
    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _folder_of(path: str) -> Path:
    """The folder a path is, or is in; for a path that cannot be looked at (reported when it
    is processed), the folder it names."""
    try:
        resolved = Path(path).resolve()
        return resolved if resolved.is_dir() else resolved.parent
    except (OSError, RuntimeError):  # a name too long, a symlink loop (RuntimeError on 3.11)
        return Path(os.path.abspath(path)).parent


def load(paths: list[str], explicit: str | None = None) -> Config:
    """The settings for a run over `paths` (or from an explicit pyproject file)."""
    path = Path(explicit) if explicit else find_pyproject(paths)
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read [tool.migrator]: {exc}") from None
    table = data.get("tool", {}).get("migrator", {})
    config = Config(path=path, unknown=sorted(set(table) - KNOWN_KEYS))
    try:
        if "ops_module" in table:
            config.ops_module = _string(table["ops_module"], "ops_module")
        for key in ("include", "exclude"):
            if key in table:
                setattr(config, key, tuple(_strings(table[key], key)))
        if "disable" in table:
            config.disable = frozenset(_strings(table["disable"], "disable"))
        verify = table.get("verify", [])
        config.verify = verify if isinstance(verify, list) else [verify]
    except TypeError as exc:
        raise ConfigError(f"{path}: [tool.migrator] {exc}") from None
    return config


def _string(value: object, key: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"`{key}` must be a string")
    return value


def _strings(value: object, key: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"`{key}` must be a list of strings")
    return value


def add_config_argument(parser) -> None:
    parser.add_argument("--config", metavar="PYPROJECT",
                        help="pyproject.toml to read [tool.migrator] from (default: nearest)")


def add_override_arguments(parser) -> None:
    """Flags that replace the `exclude` and `disable` settings of [tool.migrator]."""
    parser.add_argument("--exclude", action="append", metavar="GLOB",
                        help="skip paths matching GLOB (repeatable; replaces `exclude`)")
    parser.add_argument("--disable", action="append", metavar="CODES",
                        help="finding codes not to report or fix, comma-separated (repeatable; "
                             "replaces `disable`)")


def load_for(args) -> Config | None:
    """Settings for a command's paths, with its command-line overrides; prints the problem and
    returns None when unusable. Unknown keys and codes are reported, not fatal. Source read
    from stdin takes the settings for its --stdin-filename."""
    paths = [args.stdin_filename] if getattr(args, "stdin_filename", None) else args.paths
    try:
        config = load(paths, args.config)
    except ConfigError as exc:
        print(f"migrator: {exc}", file=sys.stderr)
        return None
    for key in config.unknown:
        print(f"{config.path}: unknown key `{key}` in [tool.migrator] (known: "
              f"{', '.join(sorted(KNOWN_KEYS))})", file=sys.stderr)
    disable_source: Path | str | None = config.path
    if getattr(args, "exclude", None) is not None:
        config.exclude = tuple(args.exclude)
    if getattr(args, "disable", None) is not None:
        config.disable = frozenset(code.strip().upper() for codes in args.disable
                                   for code in codes.split(",") if code.strip())
        disable_source = "--disable"
    for code in sorted(config.disable - CODES.keys()):
        print(f"{disable_source}: unknown code `{code}` in `disable` (known: "
              f"{', '.join(CODES)})", file=sys.stderr)
    return config
