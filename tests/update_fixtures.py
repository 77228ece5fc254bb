"""Regenerate the expected outputs of every fixture (`*.after.py`, `*.findings.txt`) with the
migrator being tested, exactly as tests/test_fixtures.py runs it, and list what changed:

    PYTHONPATH=$PWD python tests/update_fixtures.py

Read every change before committing it: the tests then only check that nothing moves again.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fixture_cases import CASES, TOOLKIT_CASES, TREES, after_of, findings_of, tree_copy
from migrator.config import Settings
from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project
from migrator.runner import Processed, run


def _write(before: Path, new_text: str, findings: list) -> list[Path]:
    """Write the fixture's expected rewrite and findings; the paths that changed."""
    source = before.read_text(encoding="utf-8")
    after, listed = after_of(before), findings_of(before)
    lines = "".join(f"{f.line}:{f.col + 1}: {f.code} {f.message}\n" for f in findings)
    changed = []
    if new_text != (after.read_text(encoding="utf-8") if after.exists() else source):
        if new_text == source:  # a refusal: the input itself is the expected output
            after.unlink()
        else:
            after.write_text(new_text, encoding="utf-8")
        changed.append(after)
    if lines != (listed.read_text(encoding="utf-8") if listed.exists() else ""):
        listed.write_text(lines, encoding="utf-8")
        changed.append(listed)
    return changed


def main() -> None:
    changed = []
    for case in CASES:
        new_text, findings, _ = fix_text(case.read_text(encoding="utf-8"), str(case), Project())
        changed += _write(case, new_text, findings)
    for case in TOOLKIT_CASES:  # fixtures/toolkits/<toolkit>/
        text = case.read_text(encoding="utf-8")
        new_text, findings, _ = fix_text(text, str(case), Project(), toolkit=case.parent.name)
        changed += _write(case, new_text, findings)
    for tree in TREES:
        with tempfile.TemporaryDirectory() as tmp:
            work = tree_copy(tree, Path(tmp) / tree.name)
            for outcome in run([str(work)], Settings(), rewrite=True):
                assert isinstance(outcome, Processed), outcome
                rel = outcome.path.relative_to(work)
                source = tree / rel.with_name(rel.name.replace(".py", ".before.py"))
                if source.exists():
                    assert outcome.new_text is not None  # a rewrite run
                    changed += _write(source, outcome.new_text, outcome.findings)
    print("\n".join(str(path) for path in changed) or "no fixture changed")


if __name__ == "__main__":
    main()
