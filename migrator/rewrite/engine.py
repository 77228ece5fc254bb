"""Rewrite or check one file's text: analysis, then (for `fix`) the codemod."""

from __future__ import annotations

import ast

from migrator.findings import Finding
from migrator.rewrite.analyze import analyze, may_have_work
from migrator.rewrite.codemod import apply
from migrator.rewrite.project import Project


def check_text(text: str, path: str, project: Project,
               ops_module: str = "migrator.nn") -> list[Finding]:
    """Findings for one file's text (raises SyntaxError, also for files with no work)."""
    tree = ast.parse(text)
    if not may_have_work(text):
        return []
    return analyze(text, path, project, tree, ops_module)[1]


def fix_text(text: str, path: str, project: Project,
             ops_module: str = "migrator.nn") -> tuple[str, list[Finding]]:
    """(rewritten text, findings) for one file's text (raises SyntaxError)."""
    tree = ast.parse(text)
    if not may_have_work(text):
        return text, []
    plan, findings = analyze(text, path, project, tree, ops_module)
    return (apply(text, plan) if plan else text), findings
