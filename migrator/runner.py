"""Run the static engine over files: discovery, reading, analysis/rewrite, error isolation.

A file that cannot be read or parsed yields an outcome with an error; the others go on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from migrator.config import Config
from migrator.files import SourceError, SourceFile, discover, read_source, syntax_error
from migrator.findings import Finding
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


def run(paths: list[str], config: Config, *, rewrite: bool) -> Iterator[Outcome]:
    """One outcome per discovered file, in a stable order."""
    project = Project()
    for path in discover(paths, include=config.include, exclude=config.exclude):
        outcome = Outcome(path)
        try:
            outcome.source = read_source(path)
            text = outcome.source.text
            if rewrite:
                outcome.new_text, findings = fix_text(text, str(path), project, config.ops_module)
            else:
                findings = check_text(text, str(path), project, config.ops_module)
        except SourceError as exc:
            outcome.error = exc
        except SyntaxError as exc:
            outcome.error = syntax_error(path, exc)
        else:
            outcome.findings = [f for f in findings if f.code not in config.disable]
        yield outcome
