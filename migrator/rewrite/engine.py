"""Rewrite or check one file's text: analysis, then (for `fix`) the edits."""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from migrator.findings import Finding
from migrator.rewrite.analyze import analyze, may_have_work
from migrator.rewrite.layout import DEFAULT_LINE_LENGTH
from migrator.rewrite.plan import Plan
from migrator.rewrite.project import Project, parse_cached


def plan_text(
    text: str,
    path: str,
    project: Project,
    ops_module: str = "migrator.nn",
    disable: frozenset[str] = frozenset(),
    toolkit: str = "",
    line_length: int = DEFAULT_LINE_LENGTH,
) -> tuple[ast.Module, Plan, list[Finding]]:
    """The file's `ast`, and the rewrite plan and findings for its text (raises SyntaxError,
    also for a file with no work). Fixes whose code is in `disable` are neither planned nor
    reported."""
    with gc_paused():
        tree = parse_cached(text, at_hand=True)  # other files of the run may read it
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
    return plan_text(text, path, project, ops_module, disable, toolkit)[2]


class Fixed(NamedTuple):
    """One file's rewrite."""

    text: str
    findings: list[Finding]
    twin_sources: dict[str, str]
    """The twin classes the new text imports that other files' rewrites add
    (`Plan.twin_sources`)."""


def fix_text(
    text: str,
    path: str,
    project: Project,
    ops_module: str = "migrator.nn",
    disable: frozenset[str] = frozenset(),
    toolkit: str = "",
    line_length: int = DEFAULT_LINE_LENGTH,
) -> Fixed:
    """The rewrite of one file's text (raises SyntaxError); new lines keep within
    `line_length`."""
    tree, plan, findings = plan_text(text, path, project, ops_module, disable, toolkit, line_length)
    if not plan:
        return Fixed(text, findings, {})
    from migrator.rewrite.edit import applied  # `check` never loads the editing modules
    from migrator.rewrite.unused import drop_unused_imports

    with gc_paused():
        new_text, top = applied(text, plan, tree)
        new_text = drop_unused_imports(tree, text, new_text, path, top)
    return Fixed(new_text, findings, plan.twin_sources)


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection in the block: each would walk every node of the trees alive
    (half of the time on a big file), and what the block makes is freed by reference counting
    or at a full collection after it. What the block keeps alive (the parse cache's trees) goes
    to the oldest generation unexamined (`freeze`, then `unfreeze`): the young collection
    the next allocation would start walks all of it (a tenth of a second on timm)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
