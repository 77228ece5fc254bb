"""`[tool.migrator]` settings. As with ruff and black, the nearest `pyproject.toml` above a file
that has a `[tool.migrator]` table governs it (`--config FILE` overrides the search), and its
globs are matched relative to that file's folder. Keys may be spelled with `-` or `_`."""

from __future__ import annotations

import dataclasses
import os
import sys
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from migrator.files import Rules
from migrator.findings import CODES
from migrator.observe.choices import Quantization, parse_quantization

TOOLKITS = ("aimet",)
"""Quantization toolkits whose own op-module classes `toolkit` can make the rewrite use."""

KNOWN_KEYS = {
    "ops_module",
    "toolkit",
    "include",
    "exclude",
    "extend_exclude",
    "select",
    "disable",
    "per_file_ignores",
    "quantization",
    "verify",
}


class ConfigError(Exception):
    """A `[tool.migrator]` table that cannot be used; `str()` is one line."""


@dataclass
class Config:
    path: Path | None = None
    ops_module: str = "migrator.nn"
    """Module the created elementwise/combining op modules are imported from."""
    toolkit: str = ""
    """The quantization toolkit whose op-module classes the rewrite uses where the catalog
    names one (`aimet`); "" for migrator's own (`ops_module`)."""
    include: tuple[str, ...] = ("*.py",)
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    """Excluded as well as `exclude` (which the command line may replace)."""
    select: frozenset[str] | None = None
    """The only finding codes reported (None: every code)."""
    disable: frozenset[str] = frozenset()
    """Finding codes not reported (and, for MIG0xx, not fixed)."""
    per_file_ignores: dict[str, frozenset[str]] = field(default_factory=dict)
    """Glob -> codes disabled in the files it matches."""
    verify: list[object] = field(default_factory=list)
    quantization: Quantization = field(default_factory=Quantization)
    """How the quantization chain quantizes each module (`[tool.migrator.quantization]`)."""
    unknown: list[str] = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    def rules(self) -> Rules:
        """The files this configuration takes."""
        return Rules(
            self.include,
            self.exclude + self.extend_exclude,
            Path(os.path.abspath(self.root)) if self.path else None,
        )

    def disabled(self, path: str | os.PathLike[str]) -> frozenset[str]:
        """The codes neither reported nor fixed in the file at `path`."""
        off = set(self.disable)
        if self.select is not None:
            off |= CODES.keys() - self.select
        for glob, codes in self.per_file_ignores.items():
            if Rules(exclude=(glob,), root=self.rules().root).excludes(path):
                off |= codes
        return frozenset(off)


def expand_codes(
    values: Iterable[str], where: str, key: str, warn: Callable[[str], None]
) -> frozenset[str]:
    """The codes `values` name: full codes or prefixes (`MIG1` is every MIG1xx, as in ruff); each
    value naming no code is reported through `warn`."""
    codes = set()
    for value in values:
        named = {code for code in CODES if code.startswith(value.strip().upper())}
        if not named or not value.strip():
            warn(f"{where}: unknown code `{value}` in `{key}` (known: {', '.join(CODES)})")
        codes |= named
    return frozenset(codes)


def read(path: Path, warn: Callable[[str], None]) -> Config | None:
    """The configuration in a `pyproject.toml`; None when it has no `[tool.migrator]` table."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read [tool.migrator]: {exc}") from None
    table = data.get("tool", {}).get("migrator")
    if table is None:
        return None
    table = {key.replace("-", "_"): value for key, value in table.items()}
    config = Config(path=Path(os.path.abspath(path)), unknown=sorted(set(table) - KNOWN_KEYS))
    for key in config.unknown:
        warn(
            f"{path}: unknown key `{key}` in [tool.migrator] (known: "
            f"{', '.join(sorted(KNOWN_KEYS))})"
        )
    try:
        if "ops_module" in table:
            config.ops_module = _string(table["ops_module"], "ops_module")
        if "toolkit" in table:
            config.toolkit = _toolkit(_string(table["toolkit"], "toolkit"))
        for key in ("include", "exclude", "extend_exclude"):
            if key in table:
                setattr(config, key, tuple(_strings(table[key], key)))
        for key in ("select", "disable"):
            if key in table:
                setattr(config, key, expand_codes(_strings(table[key], key), str(path), key, warn))
        ignores = table.get("per_file_ignores", {})
        if not isinstance(ignores, dict):
            raise TypeError("`per-file-ignores` must be a table of glob = [codes]")
        config.per_file_ignores = {
            glob: expand_codes(
                _strings(codes, "per-file-ignores"), str(path), "per-file-ignores", warn
            )
            for glob, codes in ignores.items()
        }
        verify = table.get("verify", [])
        config.verify = verify if isinstance(verify, list) else [verify]
        if "quantization" in table:
            where = f"{path}: [tool.migrator.quantization]"
            config.quantization = parse_quantization(table["quantization"], where)
    except TypeError as exc:
        raise ConfigError(f"{path}: [tool.migrator] {exc}") from None
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return config


def _toolkit(value: str) -> str:
    if value not in TOOLKITS:
        raise TypeError(f"`toolkit` must be one of: {', '.join(TOOLKITS)} (got `{value}`)")
    return value


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


def _warn(message: str) -> None:
    print(message, file=sys.stderr)


class Settings:
    """The configuration of each file of a run: from `--config`, or the nearest `pyproject.toml`
    with a `[tool.migrator]` table above the file, with the command line's overrides. Each file
    is read once; its warnings (unknown keys and codes) are printed then."""

    def __init__(
        self,
        explicit: str | None = None,
        overrides: dict | None = None,
        warn: Callable[[str], None] = _warn,
    ) -> None:
        self.overrides = overrides or {}
        self.warn = warn
        self._files: dict[Path, Config | ConfigError | None] = {}
        self._folders: dict[Path, Config] = {}
        self.explicit = None
        if explicit:  # a file without the table gives the defaults, rooted at its folder
            config = self._read(Path(explicit)) or Config(path=Path(os.path.abspath(explicit)))
            self.explicit = self._with_overrides(config)

    def for_folder(self, folder: Path) -> Config:
        """The configuration of the files in `folder` (raises ConfigError)."""
        if self.explicit is not None:
            return self.explicit
        folder = Path(os.path.abspath(folder))
        if folder not in self._folders:
            candidate = folder / "pyproject.toml"
            config = self._read(candidate) if candidate.is_file() else None
            if config is not None:
                self._folders[folder] = self._with_overrides(config)
            elif folder.parent == folder:
                self._folders[folder] = self._with_overrides(Config())
            else:
                self._folders[folder] = self.for_folder(folder.parent)
        return self._folders[folder]

    def for_path(self, path: str | os.PathLike[str]) -> Config:
        """The configuration of a file, or of the files a folder holds (raises ConfigError)."""
        return self.for_folder(_folder_of(path))

    def rules(self, folder: Path) -> Rules:
        """The `Rules` of a folder's entries; a folder whose configuration cannot be read is
        walked with the default rules (each of its files then fails with the reason)."""
        try:
            return self.for_folder(folder).rules()
        except ConfigError:
            return Rules()

    def _read(self, path: Path) -> Config | None:
        """The configuration in a file, read once (so is its error)."""
        if path not in self._files:
            try:
                self._files[path] = read(path, self.warn)
            except ConfigError as exc:
                self._files[path] = exc
        found = self._files[path]
        if isinstance(found, ConfigError):
            raise found
        return found

    def _with_overrides(self, config: Config) -> Config:
        """The configuration with the command line's settings (--extend-exclude adds to it)."""
        overrides = dict(self.overrides)
        if "extend_exclude" in overrides:
            overrides["extend_exclude"] = config.extend_exclude + overrides["extend_exclude"]
        return dataclasses.replace(config, **overrides)


def _folder_of(path: str | os.PathLike[str]) -> Path:
    """The folder a path is, or is in; for a path that cannot be looked at (reported when it
    is processed), the folder it names."""
    try:
        return Path(path) if os.path.isdir(path) else Path(os.path.abspath(path)).parent
    except (OSError, ValueError):  # a name too long, a NUL byte
        return Path(os.path.abspath(path)).parent


def load(paths: list[str], explicit: str | None = None) -> Config:
    """The settings governing the first of `paths` (or from an explicit pyproject file)."""
    return Settings(explicit, warn=lambda message: None).for_path(paths[0] if paths else ".")


def add_config_argument(parser) -> None:
    parser.add_argument(
        "--config",
        metavar="PYPROJECT",
        help="pyproject.toml to read [tool.migrator] from for every path "
        "(default: the nearest one with that table above each file)",
    )


def add_override_arguments(parser) -> None:
    """Flags that replace settings of [tool.migrator] for one run."""
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="skip paths matching GLOB (repeatable; replaces `exclude`)",
    )
    parser.add_argument(
        "--extend-exclude",
        action="append",
        metavar="GLOB",
        help="skip paths matching GLOB as well (repeatable; adds to `extend-exclude`)",
    )
    parser.add_argument(
        "--for",
        dest="toolkit",
        choices=TOOLKITS,
        help="use this quantization toolkit's own op-module classes where it has them "
        "(replaces `toolkit`)",
    )
    parser.add_argument(
        "--select",
        action="append",
        metavar="CODES",
        help="report and fix only these codes or prefixes, comma-separated "
        "(repeatable; replaces `select`)",
    )
    parser.add_argument(
        "--disable",
        "--ignore",
        dest="disable",
        action="append",
        metavar="CODES",
        help="codes or prefixes not to report or fix, comma-separated "
        "(repeatable; replaces `disable`)",
    )


def _overrides(args, warn: Callable[[str], None]) -> dict:
    """The settings the command line replaces."""
    overrides: dict[str, object] = {}
    if getattr(args, "toolkit", None) is not None:
        overrides["toolkit"] = args.toolkit
    for key in ("exclude", "extend_exclude"):
        if getattr(args, key, None) is not None:
            overrides[key] = tuple(args.__dict__[key])
    for key, flag in (("select", "--select"), ("disable", "--disable")):
        if getattr(args, key, None) is not None:
            values = [
                code for codes in args.__dict__[key] for code in codes.split(",") if code.strip()
            ]
            overrides[key] = expand_codes(values, flag, key, warn)
    return overrides


def load_for(args) -> Settings | None:
    """The settings of a command's run, with its command-line overrides; prints the problem and
    returns None when the configuration of a path given (or of --stdin-filename) is unusable.
    Unknown keys and codes are reported, not fatal."""
    paths = [args.stdin_filename] if getattr(args, "stdin_filename", None) else args.paths
    try:
        settings = Settings(args.config, _overrides(args, _warn))
        for path in paths:
            settings.for_path(path)
    except ConfigError as exc:
        print(f"migrator: {exc}", file=sys.stderr)
        return None
    return settings
