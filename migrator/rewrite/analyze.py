"""Analyse one source file: find every catalog op and reused module on the forward path of each
`nn.Module` subclass, decide what can be rewritten safely, and report what cannot and why.

The result is a `Plan` (applied by the codemod) and a list of `Finding`s. Only `ast` is used
here, so `migrator check` never pays for a LibCST parse.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from migrator.findings import Finding
from migrator.suppress import suppressions
from migrator.rewrite.classes import ClassAnalysis
from migrator.rewrite.context import FileContext
from migrator.rewrite.family import Family
from migrator.rewrite.helper_modules import HelperModules, Twins
from migrator.rewrite.hook_methods import report_global_hooks
from migrator.rewrite.mentions import attributes_stored_elsewhere
from migrator.rewrite.outside_runs import (
    binds_forward,
    report_bound_elsewhere,
    report_without_forward,
)
from migrator.rewrite.plan import Plan, Positions
from migrator.rewrite.promotion import promote
from migrator.rewrite.project import TORCH_MODULE, FileInfo, Project, RunSettings
from migrator.rewrite.shared import find_shared
from migrator.rewrite.walk import header_lines
from migrator.rewrite.walkers import report_children_walks, walks_children
from migrator.rewrite import worked

SKIP_PRAGMA = re.compile(r"#\s*migrator:\s*skip\b(?!\[)")
"""`# migrator: skip`, not `# migrator: skip[CODES]` (a suppression: `migrator.suppress`)."""


def may_have_work(text: str, plain: bool = True) -> bool:
    """Cheap filter: only a class with its own `forward` can hold work, a module-level function
    (a helper other files call), a class of no base (which may become a module, `plain_modules`;
    not with `plain` False: a base class, which never does), code that walks a module's
    children or binds a class's `forward`; migrator's own op modules (and the copies `ops_module` makes of them) are never
    rewritten."""
    return (
        ("class" in text and "def forward" in text)
        or "\ndef " in text
        or walks_children(text)
        or binds_forward(text)
        or (plain and "class" in text and _PLAIN_CLASS.search(text) is not None)
    ) and "\n__migrator_ops__ = True" not in text


_PLAIN_CLASS = re.compile(
    r"^class\s+\w+\s*(?:\(\s*(?:object|(?:torch\.)?nn\.Module)?\s*\))?\s*:", re.MULTILINE
)
"""A class of no base, or of `nn.Module` alone (what a first run makes of one)."""


def skip_lines(source: str) -> set[int]:
    """Line numbers carrying a `# migrator: skip` comment."""
    if "migrator" not in source:
        return set()
    return {
        i
        for i, line in enumerate(source.split("\n"), 1)
        if "#" in line and SKIP_PRAGMA.search(line[line.index("#") :])
    }


def analyze(
    source: str,
    path: str,
    project: Project,
    tree: ast.Module | None = None,
    ops_module: str = "migrator.nn",
    disable: frozenset[str] = frozenset(),
    toolkit: str = "",
    line_length: int = 88,
) -> tuple[Plan, list[Finding]]:
    """Plan the rewrite of one file and list its findings. Raises SyntaxError on bad input.
    With no code disabled, the analysis is kept as the file's work-out (`worked.at_hand`)."""
    analysis = ProjectAnalysis(project, ops_module, toolkit, line_length)
    if disable:
        return analysis.file(source, path, tree, disable)
    return worked.at_hand(analysis, source, path, tree or ast.parse(source))


_TWINS: dict[tuple[str, str, RunSettings], Twins] = {}
"""(path, text, settings) of a file -> its twins, oldest first: each file of a run that calls
a helper of another file asks for the same decision. Bounded by `_TWINS_KEPT`."""
_TWINS_KEPT = 256


class ProjectAnalysis:
    """The analysis of the files of a project: the file at hand, and the files holding its
    family's classes, each worked out once a run so the names created in them are known."""

    def __init__(
        self, project: Project, ops_module: str, toolkit: str = "", line_length: int = 88
    ) -> None:
        self.project = project
        self.ops_module = ops_module
        self.toolkit = toolkit
        self.line_length = line_length
        self._twins: dict[str, Twins | None] = {}

    def file(
        self,
        source: str,
        path: str,
        tree: ast.Module | None = None,
        disable: frozenset[str] = frozenset(),
    ) -> tuple[Plan, list[Finding]]:
        """Plan the rewrite of one file and list its findings."""
        project = self.project
        tree = tree or ast.parse(source)
        stored = attributes_stored_elsewhere(Path(path)) if path else frozenset()
        info = project.add(tree, Path(path) if path else None, source, stored)
        project.mark_analyzed(info.names.module)
        for cls in info.classes.values():  # worked out afresh: forget names from an earlier pass
            project.forget_created(cls.qualname)
        ctx, family = self._context(source, path, info, disable)
        try:
            assert ctx.helper_modules is not None  # set by `_context`
            ctx.helper_modules.add_twins()
            for cls in info.classes.values():
                if ctx.skip.intersection(header_lines(cls.node)):
                    continue
                ctx.helper_modules.in_earlier = cls.name in ctx.helper_modules.earlier
                if project.is_module(cls) and (
                    "forward" in cls.methods() or cls.bases != [TORCH_MODULE]
                ):
                    ClassAnalysis(ctx, cls, family, self).run()
                else:  # a plain class its holders call methods of may become a module
                    promote(ctx, cls, family, lambda: ClassAnalysis(ctx, cls, family, self).run())  # noqa: B023
                    if project.is_module(cls) and cls.qualname not in ctx.promoted:
                        report_without_forward(ctx, cls, family)
            ctx.helper_modules.in_earlier = False
            if "MIG115" not in disable and "register_module_" in source:
                report_global_hooks(ctx, tree)
            if "MIG115" not in disable and binds_forward(source):
                report_bound_elsewhere(ctx, tree)
            if "MIG113" not in disable and walks_children(source):
                report_children_walks(ctx, tree)
            ctx.finish()
        finally:  # the tree is cached: other readers see it as written
            ctx.restore_names()
        ctx.plan.twin_sources = _imported(ctx, ctx.helper_modules.sources)
        ctx.helper_modules = None  # no cycle: reference counting frees the analysis
        return ctx.plan, ctx.findings

    def _context(
        self, source: str, path: str, info: FileInfo, disable: frozenset[str]
    ) -> tuple[FileContext, Family]:
        """The analysis state of one file, before its classes are analysed."""
        ctx = FileContext(
            path,
            source,
            info,
            self.project,
            self.ops_module,
            Positions(source),
            disable=disable,
            toolkit=self.toolkit,
        )
        ctx.plan.line_length = self.line_length
        ctx.skip = skip_lines(source)
        family = Family(self.project, info)
        find_shared(ctx, family)
        ctx.suppress = suppressions(source)
        ctx.helper_modules = HelperModules(ctx, family, self)
        return ctx, family

    def twins_of(self, info: FileInfo) -> Twins | None:
        """The twin classes another file has or gets in this run, as its own analysis decides
        them (`HelperModules.add_twins`, with the settings it is processed with); None for a
        file this run does not process."""
        module = info.names.module
        decided = module not in self._twins
        if decided:
            self._twins[module] = None
            self._twins[module] = self._decide_twins(info)
        for trace in self.project.traces:
            trace.read_twins(module, self._twins[module], decided and info.source is None)
        return self._twins[module]

    def _unchanged(self, dep: tuple[str, str | None, RunSettings | None]) -> bool:
        """Whether another file a kept decision read the twins of (`Twins.deps`) has the
        same text and settings in this run."""
        module, source, settings = dep
        found = self.project.load(module)
        return (
            found is not None
            and found.source == source
            and self.project.processes(found.path) == settings
        )

    def kept_twins(self, module: str) -> tuple[bool, Twins | None]:
        """(whether `twins_of` has decided on `module` in this analysis, its decision)."""
        return module in self._twins, self._twins.get(module)

    def _decide_twins(self, info: FileInfo) -> Twins | None:
        """`twins_of`, decided once a process for a file's text and settings: the decision
        reads only that file, the calls in its package (`mentions`) and the twins of the files
        its helpers call (`Twins.deps`, the same when taken again), the same for every file of
        the run that asks. Not kept when the run has run-time evidence."""
        settings = self.project.processes(info.path)
        if info.source is None or info.path is None or settings is None:
            return None
        key = (str(info.path), info.source, settings)
        kept = not self.project.evidence.seen
        if kept and key in _TWINS and all(map(self._unchanged, _TWINS[key].deps)):
            return _TWINS[key]
        own = ProjectAnalysis(self.project, settings.ops_module, settings.toolkit)
        ctx, _ = own._context(info.source, str(info.path), info, settings.disable)
        modules = ctx.helper_modules
        assert modules is not None  # set by `_context`
        modules.add_twins()
        ctx.helper_modules = None  # no cycle: reference counting frees the analysis
        deps = tuple((module, *read) for module, read in sorted(modules.deps.items()))
        twins = Twins(modules.twins, modules.not_twinned, modules.earlier, deps)
        if kept:
            _TWINS[key] = twins
            while len(_TWINS) > _TWINS_KEPT:
                del _TWINS[next(iter(_TWINS))]
        return twins

    def work_out(self, info: FileInfo) -> None:
        """Work out the rewrite of another file of the project (not torch's own sources), so the
        names it creates in base classes are known to the file at hand; what an earlier file
        of the process worked out is taken when everything it read is the same (`worked`)."""
        module = info.names.module
        if (
            self.project.is_analyzed(module)
            or info.source is None
            or module.split(".")[0] == "torch"
        ):
            return
        if may_have_work(info.source, plain=False):
            worked.work_out(self, info, info.source)


def _imported(ctx: FileContext, sources: dict[str, str]) -> dict[str, str]:
    """The twins of other files met in the analysis that the rewrite may name: their class in a
    `from` import it adds (or extends), their module in a plain one, or an import the file
    has already naming them."""
    return {
        qualname: path
        for qualname, path in sources.items()
        for module, cls in [qualname.rsplit(".", 1)]
        if cls in ctx.from_imports.get(module, ())
        or cls in ctx.plan.import_names.get(module, ())
        or module in ctx.plain_imports
        or ctx.info.names.alias_for(qualname)
    }
