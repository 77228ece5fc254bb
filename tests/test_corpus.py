"""Run the engine over real code written by others: the installed torch package's sources."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from migrator.files import SourceError, read_source
from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project

torch = pytest.importorskip("torch")
TORCH_SOURCES = Path(torch.__file__).parent


@pytest.mark.slow
def test_torch_sources_survive_the_engine():
    project = Project()
    parsed = changed = patched = 0
    problems = []
    for path in sorted(TORCH_SOURCES.rglob("*.py")):
        try:
            text = read_source(path).text
            ast.parse(text)
        except (SourceError, SyntaxError, ValueError):
            continue
        parsed += 1
        try:
            result = fix_text(text, str(path), project)
        except Exception as exc:  # noqa: BLE001 - any crash is the failure we look for
            problems.append(f"{path}: crash {exc!r}")
            continue
        new = result.text
        patched += any(f.code == "MIG118" for f in result.findings)
        if new == text:
            continue
        changed += 1
        try:
            ast.parse(new)
        except SyntaxError as exc:
            problems.append(f"{path}: output does not parse: {exc}")
            continue
        again = fix_text(new, str(path), Project()).text
        if again != new:
            problems.append(f"{path}: second run changed the file")
    # torch stores into itself by computed names (`setattr(torch, name, wrapper)` in
    # torch/fx/experimental/meta_tracer.py), so most of its ops are refused (MIG118)
    assert parsed > 1500 and changed >= 1 and changed + patched > 10
    assert problems == []
