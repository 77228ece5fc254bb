"""Run the static engine over files: discovery, reading, analysis/rewrite, error isolation.

A file that cannot be read or parsed, or a path that names no Python file, yields an outcome with
an error; the others go on. `-` stands for source read from stdin (`run_stdin`). Each
file is analysed with its own `Project` cache, so its outcome does not depend on which files
were processed before it (the same with `-j N`) and memory stays bounded by the largest file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Iterator

from migrator.config import Config
from migrator.files import (PathError, SourceError, SourceFile, decode_source, discover, excluded,
                            read_source, syntax_error)
from migrator.findings import Finding
from migrator.parallel import ordered_map, worker_count
from migrator.progress import Progress
from migrator.rewrite.engine import check_text, fix_text
from migrator.rewrite.project import Project


@dataclass
class Outcome:
    path: Path
    source: SourceFile | None = None
    new_text: str | None = None
    findings: list[Finding] = field(default_factory=list)
    error: SourceError | None = None

    @property
    def changed(self) -> bool:
        return self.source is not None and self.new_text is not None and self.new_text != self.source.text


STDIN = "-"
"""The path that stands for source read from stdin."""


def run(paths: list[str], config: Config, *, rewrite: bool, jobs: int = 1,
        progress: Progress | None = None) -> Iterator[Outcome]:
    """One outcome per discovered file (or path naming none), in a stable order (whatever `jobs`
    is)."""
    files: Iterable[Path | PathError] = discover(paths, include=config.include,
                                                 exclude=config.exclude)
    if progress is not None and progress.enabled:
        files = list(files)  # the bar needs the total; otherwise files are found as they go
        progress.start(len(files))
    work = partial(process, config=config, rewrite=rewrite)
    for outcome in ordered_map(work, files, worker_count(jobs)):
        if progress is not None:
            progress.advance(str(outcome.path))
        yield outcome


def run_stdin(raw: bytes, name: str | None, config: Config, *, rewrite: bool) -> Outcome:
    """The outcome of source read from stdin, shown as `name` (default `-`). A name matching
    `exclude` is left alone: an outcome without source, findings or error."""
    path = Path(name or STDIN)
    if name and excluded(name, config.exclude):
        return Outcome(path)
    return process(path, config, rewrite, read=lambda _: decode_source(path, raw))


def process(path: Path | PathError, config: Config, rewrite: bool,
            read: Callable[[Path], SourceFile] | None = None) -> Outcome:
    """Read (with `read_source`, unless given `read`) and analyse (or rewrite) one file;
    problems become the outcome's error."""
    if isinstance(path, PathError):
        return Outcome(path.path, error=path)
    outcome = Outcome(path)
    try:
        outcome.source = (read or read_source)(path)
        text = outcome.source.text
        if rewrite:
            outcome.new_text, findings = fix_text(text, str(path), Project(), config.ops_module,
                                                  config.disable)
        else:
            findings = check_text(text, str(path), Project(), config.ops_module, config.disable)
    except SourceError as exc:
        outcome.error = exc
    except SyntaxError as exc:
        outcome.error = syntax_error(path, exc)
    except (RecursionError, MemoryError):  # what the parser raises for pathological nesting
        outcome.error = SourceError(path, 0, "too deeply nested to parse; left as is")
    except Exception as exc:  # an engine bug: keep going with the other files
        outcome.error = SourceError(path, 0, f"internal error, left as is (please report): "
                                             f"{type(exc).__name__}: {exc}")
    else:
        outcome.findings = [f for f in findings if f.code not in config.disable]
    return outcome
