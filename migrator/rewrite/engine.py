"""Rewrite or check one file's text: analysis, then (for `fix`) the edits."""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from contextlib import contextmanager

from migrator.findings import Finding
from migrator.rewrite.analyze import analyze, may_have_work
from migrator.rewrite.edit import apply
from migrator.rewrite.plan import Plan
from migrator.rewrite.project import Project


def plan_text(
    text: str,
    path: str,
    project: Project,
    ops_module: str = "migrator.nn",
    disable: frozenset[str] = frozenset(),
) -> tuple[Plan, list[Finding]]:
    """The rewrite plan and findings for one file's text (raises SyntaxError, also for a file
    with no work). Fixes whose code is in `disable` are neither planned nor reported."""
    return _planned(text, path, project, ops_module, disable)[1:]


def _planned(
    text: str, path: str, project: Project, ops_module: str, disable: frozenset[str]
) -> tuple[ast.Module, Plan, list[Finding]]:
    """`plan_text` with the file's `ast`."""
    with gc_paused():
        tree = ast.parse(text)
        if not may_have_work(text):
            return tree, Plan(), []
        return tree, *analyze(text, path, project, tree, ops_module, disable)


def check_text(
    text: str,
    path: str,
    project: Project,
    ops_module: str = "migrator.nn",
    disable: frozenset[str] = frozenset(),
) -> list[Finding]:
    """Findings for one file's text (raises SyntaxError)."""
    return plan_text(text, path, project, ops_module, disable)[1]


def fix_text(
    text: str,
    path: str,
    project: Project,
    ops_module: str = "migrator.nn",
    disable: frozenset[str] = frozenset(),
) -> tuple[str, list[Finding]]:
    """(rewritten text, findings) for one file's text (raises SyntaxError)."""
    tree, plan, findings = _planned(text, path, project, ops_module, disable)
    if not plan:
        return text, findings

    with gc_paused():
        return apply(text, plan, tree), findings


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
