"""Rewrite or check one file's text: analysis, then (for `fix`) the edits."""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from contextlib import contextmanager

from migrator.findings import Finding
from migrator.rewrite.analyze import analyze, may_have_work
from migrator.rewrite.edit import applied
from migrator.rewrite.layout import DEFAULT_LINE_LENGTH
from migrator.rewrite.plan import Plan
from migrator.rewrite.project import Project, parse_cached
from migrator.rewrite.unused import drop_unused_imports


def plan_text(
    text: str,
    path: str,
    project: Project,
    ops_module: str = "migrator.nn",
    disable: frozenset[str] = frozenset(),
    toolkit: str = "",
) -> tuple[Plan, list[Finding]]:
    """The rewrite plan and findings for one file's text (raises SyntaxError, also for a file
    with no work). Fixes whose code is in `disable` are neither planned nor reported."""
    return _planned(text, path, project, ops_module, disable, toolkit)[1:]


def _planned(
    text: str,
    path: str,
    project: Project,
    ops_module: str,
    disable: frozenset[str],
    toolkit: str = "",
    line_length: int = DEFAULT_LINE_LENGTH,
) -> tuple[ast.Module, Plan, list[Finding]]:
    """`plan_text` with the file's `ast`."""
    with gc_paused():
        tree = parse_cached(text)  # the tree other files of the run may read again
        if not may_have_work(text):
            return tree, Plan(), []
        return tree, *analyze(text, path, project, tree, ops_module, disable, toolkit, line_length)


def check_text(
    text: str,
    path: str,
    project: Project,
    ops_module: str = "migrator.nn",
    disable: frozenset[str] = frozenset(),
    toolkit: str = "",
) -> list[Finding]:
    """Findings for one file's text (raises SyntaxError)."""
    return plan_text(text, path, project, ops_module, disable, toolkit)[1]


def fix_text(
    text: str,
    path: str,
    project: Project,
    ops_module: str = "migrator.nn",
    disable: frozenset[str] = frozenset(),
    toolkit: str = "",
    line_length: int = DEFAULT_LINE_LENGTH,
) -> tuple[str, list[Finding]]:
    """(rewritten text, findings) for one file's text (raises SyntaxError); new lines keep
    within `line_length`."""
    new_text, findings, _ = rewrite_text(
        text, path, project, ops_module, disable, toolkit, line_length
    )
    return new_text, findings


def rewrite_text(
    text: str,
    path: str,
    project: Project,
    ops_module: str = "migrator.nn",
    disable: frozenset[str] = frozenset(),
    toolkit: str = "",
    line_length: int = DEFAULT_LINE_LENGTH,
) -> tuple[str, list[Finding], dict[str, str]]:
    """`fix_text`, with the twin classes the new text imports that other files' rewrites add
    (`Plan.twin_sources`)."""
    tree, plan, findings = _planned(text, path, project, ops_module, disable, toolkit, line_length)
    if not plan:
        return text, findings, {}

    with gc_paused():
        new_text, top = applied(text, plan, tree)
        new_text = drop_unused_imports(tree, text, new_text, path, top)
    return new_text, findings, plan.twin_sources


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection in the block: each would walk every node of the trees alive
    (half of the time on a big file), and what the block makes is freed by reference counting
    or at the next collection after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
