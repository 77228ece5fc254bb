"""Another file's rewrite, worked out for the file at hand (`ProjectAnalysis.work_out`: the
names it creates in base classes), kept a process and taken by a later file's project when
everything it read there is the same. In transformers each model file works out the same base
files (`modeling_utils.py`, `generation/utils.py`, ...).

A `Trace` records, while the work-out runs (nested ones included), what it read from the
project: each module and file looked up and what was found (`lookups`), the names created in
classes of other files, whether a file was already worked out, the settings of the files it
asked about, the package indexes, the verdicts on stateless classes known before, the twin
decisions; and what it left: the files it registered (as the one at hand is), the files worked
out and the names created in their classes. Another project takes it when each read gives the
same there; it then registers those files, notes the names and takes the folders and missing
modules the lookups would have left (`Project.replay`)."""

from __future__ import annotations

import ast
import os
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from migrator.rewrite.family import index_of
from migrator.rewrite.lookups import Key, Lookups, Seen, check
from migrator.rewrite.project import FileInfo, Project, RunSettings

if TYPE_CHECKING:
    from migrator.findings import Finding
    from migrator.rewrite.analyze import ProjectAnalysis
    from migrator.rewrite.helper_modules import Twins
    from migrator.rewrite.plan import Plan


class Trace:
    """What one work-out read and left in its project."""

    def __init__(self) -> None:
        self.lookups = Lookups(None, None)
        self.created: dict[str, frozenset[str]] = {}
        """Names created in classes it did not work out, as read."""
        self.written: set[str] = set()
        """Classes whose created names it set."""
        self.analyzed: dict[str, bool] = {}
        """Whether a module it did not work out was worked out, as asked."""
        self.analyzed_here: dict[str, None] = {}
        """Modules it worked out, in order."""
        self.processes: dict[Path | None, RunSettings | None] = {}
        self.indexes: dict[Path | None, dict[str, frozenset[Path]]] = {}
        self.stateless: dict[str, bool | None] = {}
        """Verdicts known before it started (`Project.stateless`), as read."""
        self.stateless_here: set[str] = set()
        self.twins: dict[str, Twins | None] = {}
        self.twins_worked: set[str] = set()
        """Modules of `twins` it decided on itself, for a file registered as worked out (whose
        text is not kept: no twins, `ProjectAnalysis._decide_twins`)."""
        self.added: list[tuple[Path | None, str | None]] = []
        """The files it registered as the file at hand is, in order."""
        self.left: dict[str, frozenset[str] | None] = {}
        """The names created in each class of `written` when it ended (None: none)."""

    def take(self, seen: dict[Key, Seen | None]) -> None:
        """Record the lookups of a search or work-out taken instead of being made."""
        for key, was in seen.items():
            if key not in self.lookups.seen:
                plain = was._replace(asking=False, searched=False) if was is not None else None
                self.lookups.seen[key] = plain

    def read_twins(self, module: str, twins: Twins | None, worked: bool) -> None:
        """Note a twin decision read (`worked`: decided then, on a file worked out)."""
        if module not in self.twins:
            self.twins[module] = twins
            if worked:
                self.twins_worked.add(module)

    def usable(self) -> bool:
        """Whether another project can tell it would read the same: its lookups can be made
        again there, and each twin decision it read about a file it worked out was its own,
        on that file registered as worked out (that file is registered otherwise before it
        is taken: the decision is told from the analysis's alone, `replay`)."""
        return (
            self.lookups.usable
            and all(path is not None and text is not None for path, text in self.added)
            and all(m in self.twins_worked for m in self.twins if m in self.analyzed_here)
        )

    def end(self, project: Project) -> None:
        """Note what it left: the names created in the classes it set."""
        self.left = {
            qualname: frozenset(project.created[qualname]) if qualname in project.created else None
            for qualname in self.written
        }

    def replay(self, analysis: ProjectAnalysis) -> bool:
        """Take it in `analysis`'s project when each read gives the same there (False: it
        does not, and nothing was taken)."""
        project = analysis.project
        if (
            any(project.is_analyzed(module) != was for module, was in self.analyzed.items())
            or any(project.names_created(q) != set(was) for q, was in self.created.items())
            or any(project.processes(path) != was for path, was in self.processes.items())
            or not all(_same_index(path, was, project) for path, was in self.indexes.items())
        ):
            return False
        state = check(self.lookups.seen, project, None, None)
        if state is None:
            return False
        if any(project.stateless(q) != was for q, was in self.stateless.items()):
            return False
        worked_out: list[tuple[str, bool]] = []
        for module, was in self.twins.items():
            if module in self.analyzed_here:  # decided on it worked out: none (`usable`)
                kept, twins = analysis.kept_twins(module)
                if twins is not None:
                    return False  # decided earlier in the analysis: kept, read instead
                worked_out.append((module, not kept))
                continue
            known, info = project.registered(module)
            info = info if known else project.load(module)
            if info is None or analysis.twins_of(info) != was:
                return False
        project.replay(*state)
        for trace in project.traces:
            trace.take(self.lookups.seen)
            for module, decided in worked_out:  # read as the work-out read them (once taken)
                trace.read_twins(module, None, decided)
        for path, text in self.added:
            assert path is not None and text is not None  # `usable`
            project.add_text(path, text)
        for module in self.analyzed_here:
            project.mark_analyzed(module)
        for qualname, names in self.left.items():
            project.forget_created(qualname)
            for name in names or ():
                project.create(qualname, name)
        project.generation += 1
        return True


def _same_index(path: Path | None, was: dict[str, frozenset[Path]], project: Project) -> bool:
    """Whether the package index of `path` is still the one read (the same object: indexes are
    kept a process, `subclasses.package_index`)."""
    now = index_of(path)
    for trace in project.traces:
        trace.indexes.setdefault(path, now)
    return now is was or (not now and not was)


_KEPT: OrderedDict[tuple[str, str, str, str, str, int], list[Trace]] = OrderedDict()
"""(path, module, text of the file worked out, op-module settings, line length) -> its traces,
most recent first (a file worked out where its bases were already worked out reads other
things than where they were not), the most recently used file last. Bounded by
`_KEPT_FILES` and `_TRACES_A_FILE`."""
_KEPT_FILES = 64
_TRACES_A_FILE = 4
_AT_HAND: OrderedDict[tuple[str, str, str, str, str, int], Trace] = OrderedDict()
"""The same key -> the trace of the file's own analysis (`at_hand`), the most recent last:
kept apart, so that the files of a run do not push the work-outs of `_KEPT` out. Bounded by
`_KEPT_FILES`."""


def at_hand(
    analysis: ProjectAnalysis, source: str, path: str, tree: ast.Module
) -> tuple[Plan, list[Finding]]:
    """`analysis.file` of the file at hand, whose trace is kept as its work-out would be: a
    later file of the run that works it out takes what this analysis left (the work-out is
    the same analysis, findings aside). Recorded under the path a lookup gives, absolute."""
    project = analysis.project
    trace = Trace()
    project.traces.append(trace)
    try:
        found = analysis.file(source, path, tree)
    finally:
        project.traces.pop()
    trace.end(project)
    absolute = Path(os.path.abspath(path))
    if trace.added and trace.added[0] == (Path(path), source):
        trace.added[0] = (absolute, source)
    module = next(iter(trace.analyzed_here), "")  # `file` marks the file's own module first
    if trace.usable() and module and not project.evidence.seen:
        key = _key(analysis, absolute, module, source)
        _AT_HAND.pop(key, None)  # the most recent last
        _AT_HAND[key] = trace
        while len(_AT_HAND) > _KEPT_FILES:
            del _AT_HAND[next(iter(_AT_HAND))]
    return found


def _key(
    analysis: ProjectAnalysis, path: Path | None, module: str, source: str
) -> tuple[str, str, str, str, str, int]:
    return (str(path), module, source, analysis.ops_module, analysis.toolkit, analysis.line_length)


def work_out(analysis: ProjectAnalysis, info: FileInfo, source: str) -> None:
    """Work out the rewrite of `info` (whose text is `source`) in `analysis`, or take what an
    earlier project of the process worked out when it would read the same here. Not kept when
    the run has run-time evidence."""
    project = analysis.project
    key = _key(analysis, info.path, info.names.module, source)
    kept = _KEPT.pop(key, []) if not project.evidence.seen else []
    if kept:
        _KEPT[key] = kept
    own = _AT_HAND.get(key) if not project.evidence.seen else None
    for trace in [own] + kept if own is not None else kept:
        if trace.replay(analysis):
            return
    trace = Trace()
    project.traces.append(trace)
    try:
        analysis.file(source, str(info.path), info.tree)
    finally:
        project.traces.pop()
    trace.end(project)
    if trace.usable() and not project.evidence.seen:
        _KEPT[key] = [trace, *kept][:_TRACES_A_FILE]
        while len(_KEPT) > _KEPT_FILES:
            del _KEPT[next(iter(_KEPT))]
