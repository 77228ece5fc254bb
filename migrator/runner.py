"""Run the static engine over files: discovery, reading, analysis/rewrite, error isolation.

Each path gives an `Outcome`: `Processed`, or `Failed` for a file that cannot be read or parsed
or a path that names no Python file (the others go on), or `Excluded`. `-` stands for source
read from stdin (`run_stdin`). Each file is analysed with its own `Project` cache, so its outcome does not depend on which files
were processed before it (the same with `-j N`) and memory stays bounded by the largest file.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Iterator

from migrator.config import Config, ConfigError, Settings
from migrator.evidence import Evidence
from migrator.files import (
    PathError,
    SourceError,
    SourceFile,
    decode_source,
    discover,
    read_source,
    syntax_error,
)
from migrator.findings import Finding
from migrator.parallel import ordered_map, worker_count
from migrator.progress import Progress
from migrator.rewrite.engine import check_text, fix_text, gc_paused
from migrator.rewrite.layout import line_length
from migrator.rewrite.project import Project, RunSettings
from migrator.suppress import split, suppressions, unused


@dataclass
class Processed:
    """A file read and analysed (and, for `fix`, rewritten: `new_text`)."""

    path: Path
    source: SourceFile
    findings: list[Finding]
    config: Config
    """The configuration that governs the file."""
    new_text: str | None = None
    twin_sources: dict[str, str] = field(default_factory=dict)
    """Twin classes `new_text` imports that other files' rewrites in this run add -> those
    files (`fix` writes this file only when they are written)."""

    @property
    def changed(self) -> bool:
        return self.new_text is not None and self.new_text != self.source.text


@dataclass
class Failed:
    """A path naming no Python file, or a file that could not be read or analysed."""

    path: Path
    error: SourceError


@dataclass
class Excluded:
    """Source read from stdin under a name the `exclude` setting matches: left alone."""

    path: Path


Outcome = Processed | Failed | Excluded


STDIN = "-"
"""The path that stands for source read from stdin."""


def run(
    paths: list[str],
    settings: Settings,
    *,
    rewrite: bool,
    jobs: int = 1,
    progress: Progress | None = None,
    report_unused: bool = False,
    evidence: Evidence | None = None,
) -> Iterator[Outcome]:
    """One outcome per discovered file (or path naming none), each under its own configuration,
    in a stable order (whatever `jobs` is); `evidence` from built models proves what the static
    analysis cannot (`fix --evidence`)."""
    files: Iterable[tuple[Path | PathError, Config | ConfigError]] = (
        (path, _config_of(path, settings)) for path in discover(paths, settings.rules)
    )
    if progress is not None and progress.enabled:
        files = list(files)  # the bar needs the total; otherwise files are found as they go
        progress.start(len(files))
    scope = RunScope(tuple(Path(os.path.abspath(p)) for p in paths), settings)
    work = partial(
        _process_with,
        rewrite=rewrite,
        report_unused=report_unused,
        scope=scope,
        evidence=evidence,
    )
    with gc_paused():  # workers fork with it paused too
        try:
            for outcome in ordered_map(work, files, worker_count(jobs)):
                if progress is not None:
                    progress.advance(str(outcome.path))
                yield outcome
        finally:
            gc.unfreeze()  # what `_collect` left out is walked by the collections after the run


FILES_PER_COLLECTION = 500
"""During a run the cyclic garbage collector is paused: a file's analysis holds no reference
cycle and is freed by reference counting, while each collection would walk the trees the parse
cache keeps (a tenth of `check`'s time on timm). A collection after every this many files (in
each process) bounds whatever cycles there are (`_collect`)."""
FULL_COLLECTION_EVERY = 4
"""Of those collections, every this many is full; the others walk only what was made since the
one before (`gc.freeze`: what lived through it is mostly the caches, which reference counting
frees): on transformers' 2,600 model files each full one walked 1.5 GB of kept trees and
summaries, some 1.5 s."""
_processed = 0


@dataclass(frozen=True)
class RunScope:
    """The files a run processes, for a file's analysis to ask about another: under a path
    given and not excluded; with the settings it is processed with."""

    roots: tuple[Path, ...]
    settings: Settings

    def __call__(self, path: Path) -> RunSettings | None:
        path = Path(os.path.abspath(path))
        if not any(path == root or root in path.parents for root in self.roots):
            return None
        try:
            config = self.settings.for_path(path)
        except ConfigError:
            return None
        if config.rules().excludes(path):
            return None
        return RunSettings(config.disabled(path), config.ops_module, config.toolkit)


def _config_of(path: Path | PathError, settings: Settings) -> Config | ConfigError:
    try:
        return settings.for_path(path.path if isinstance(path, PathError) else path)
    except ConfigError as exc:
        return exc


def _process_with(
    item: tuple[Path | PathError, Config | ConfigError],
    rewrite: bool,
    report_unused: bool,
    scope: RunScope | None = None,
    evidence: Evidence | None = None,
) -> Outcome:
    global _processed
    _processed += 1
    if _processed % FILES_PER_COLLECTION == 0:
        _collect(_processed // FILES_PER_COLLECTION % FULL_COLLECTION_EVERY == 0)
    path, config = item
    if isinstance(config, ConfigError):
        if not isinstance(path, PathError):
            return Failed(path, SourceError(path, 0, f"not processed: {config}"))
        config = Config()  # a path that cannot be used is reported whatever its settings
    return process(
        path, config, rewrite, report_unused=report_unused, scope=scope, evidence=evidence
    )


def _collect(full: bool) -> None:
    """Collect the cycles made since the last collection (`full`: all of them), then leave what
    is alive out of the next collections."""
    if full:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


def run_stdin(
    raw: bytes, name: str | None, settings: Settings, *, rewrite: bool, report_unused: bool = False
) -> Outcome:
    """The outcome of source read from stdin, shown as `name` (default `-`), under the settings
    of that name. A name its configuration excludes is left alone (`Excluded`)."""
    path = Path(name or STDIN)
    config = settings.for_path(path)
    if name and config.rules().excludes(name):
        return Excluded(path)
    return process(
        path, config, rewrite, read=lambda _: decode_source(path, raw), report_unused=report_unused
    )


def process(
    path: Path | PathError,
    config: Config,
    rewrite: bool,
    read: Callable[[Path], SourceFile] | None = None,
    report_unused: bool = False,
    scope: Callable[[Path], RunSettings | None] | None = None,
    evidence: Evidence | None = None,
) -> Outcome:
    """Read (with `read_source`, unless given `read`) and analyse (or rewrite) one file;
    problems make it `Failed`. Suppressed findings are left out; with `report_unused`, each
    suppression that suppressed nothing is a MIG100 finding. `scope`: the other files the run
    processes (helpers of theirs may become modules)."""
    if isinstance(path, PathError):
        return Failed(path.path, path)
    disable = config.disabled(path)
    twin_sources: dict[str, str] = {}
    try:
        source = (read or read_source)(path)
        if rewrite:
            new_text, findings, twin_sources = fix_text(
                source.text,
                str(path),
                Project(scope, evidence),
                config.ops_module,
                disable,
                toolkit=config.toolkit,
                line_length=line_length(str(path)),
            )
        else:
            new_text = None
            findings = check_text(
                source.text,
                str(path),
                Project(scope, evidence),
                config.ops_module,
                disable,
                config.toolkit,
            )
    except SourceError as exc:
        return Failed(path, exc)
    except SyntaxError as exc:
        return Failed(path, syntax_error(path, exc))
    except (RecursionError, MemoryError):  # what the parser raises for pathological nesting
        return Failed(path, SourceError(path, 0, "too deeply nested to parse; left as is"))
    except Exception as exc:  # an engine bug: keep going with the other files
        return Failed(
            path,
            SourceError(
                path, 0, f"internal error, left as is (please report): {type(exc).__name__}: {exc}"
            ),
        )
    table = suppressions(source.text)
    kept, dropped = split(findings, table)
    if report_unused:
        kept = sorted(kept + unused(str(path), table, dropped))
    kept = [f for f in kept if f.code not in disable]
    return Processed(path, source, kept, config, new_text, twin_sources)
