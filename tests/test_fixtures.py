"""Every fixture pair: the codemod turns `before` into `after` exactly, reports the expected
findings, is idempotent, and the migrated model is equivalent to the original."""

from __future__ import annotations

from itertools import product

import pytest
from equivalence import assert_same_outcome, assert_same_outputs, loaded_pair, outcome
from fixture_cases import (
    CASES,
    TOOLKIT_CASES,
    TREES,
    expected_after,
    expected_findings,
    import_path,
    tree_copy,
)

from migrator.cli import main
from migrator.config import Settings
from migrator.findings import CODES, serves_every_iteration
from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project
from migrator.runner import Processed, run

IDS = [c.name.removesuffix(".before.py") for c in CASES]


def _lines(findings) -> list[str]:
    return [f"{f.line}:{f.col + 1}: {f.code} {f.message}" for f in findings]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rewrite_matches_after(case):
    new, findings, _ = fix_text(case.read_text(encoding="utf-8"), str(case), Project())
    assert new == expected_after(case)
    assert _lines(findings) == expected_findings(case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_second_run_changes_nothing(case):
    after = expected_after(case)
    new, findings, _ = fix_text(after, str(case), Project())
    assert new == after
    assert all(not f.fixable for f in findings)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_second_run_finds_what_the_first_left(case):
    """What `fix` writes raises no finding of its own (`len(self.blocks)` in a new module's
    constructor is no hand-over of the blocks: MIG117): a second run reports what the first
    left, code for code, and the module made to serve every iteration of a loop whose trip
    count depends on the input, called in that loop (MIG105)."""
    first = fix_text(case.read_text(encoding="utf-8"), str(case), Project()).findings
    second = fix_text(expected_after(case), str(case), Project()).findings
    shared = [f.attr for f in first if serves_every_iteration(f)]
    left = [f.code for f in first if not f.fixable] + ["MIG105"] * len(shared)
    assert sorted(f.code for f in second) == sorted(left)
    looped = {f.message.split("`")[1] for f in second if f.code == "MIG105"}
    assert {f"self.{attr}" for attr in shared} <= looped


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_migrated_model_is_equivalent(case):
    torch = pytest.importorskip("torch")
    name = case.name.removesuffix(".before.py")
    before = import_path(case, f"fixture_before_{name}")
    after_text = expected_after(case)
    after_path = (
        case
        if after_text == case.read_text(encoding="utf-8")
        else case.with_name(f"{name}.after.py")
    )
    after = import_path(after_path, f"fixture_after_{name}")
    for train, autocast in product((False, True), (False, True)):
        original, migrated = loaded_pair(before.Model, after.Model)
        original.train(train)
        migrated.train(train)
        torch.manual_seed(2)
        inputs = before.example_inputs()
        results = []
        for model in (original, migrated):
            torch.manual_seed(3)
            clones = [i.clone() for i in inputs]
            with torch.no_grad(), torch.autocast("cpu", torch.bfloat16, enabled=autocast):
                results.append(outcome(lambda: model(*clones)))
        if autocast:  # mixed dtypes: the same outputs, or the same error
            assert_same_outcome(*results)
        else:
            assert_same_outputs(*results)


@pytest.mark.parametrize("tree", TREES, ids=[t.name for t in TREES])
def test_tree_rewrite(tree, tmp_path):
    """Multi-file fixtures (packages, cross-file base classes): `*.before.py` files are copied
    as `*.py`, the whole tree is fixed, and each is compared with its `*.after.py`."""
    work = tree_copy(tree, tmp_path / tree.name)
    outcomes = list(run([str(work)], Settings(), rewrite=True))
    assert all(isinstance(o, Processed) for o in outcomes), outcomes
    for outcome in outcomes:
        rel = outcome.path.relative_to(work)
        source = tree / rel.with_name(rel.name.replace(".py", ".before.py"))
        if source.exists():
            expected = expected_after(source)
            assert outcome.new_text == expected, rel
            got = [f"{rel}:{line}" for line in _lines(outcome.findings)]
            assert got == [f"{rel}:{line}" for line in expected_findings(source)]
        else:
            assert not outcome.changed, rel


@pytest.mark.parametrize("tree", TREES, ids=[t.name for t in TREES])
def test_tree_fix_written_file_by_file(tree, tmp_path):
    """`fix` writes each file before it reads the next: what a file becomes must not depend on
    whether the files it imports were rewritten already."""
    work = tree_copy(tree, tmp_path / tree.name)
    assert main(["fix", str(work)]) in (0, 1)
    for path in work.rglob("*.py"):
        source = tree / path.relative_to(work).with_name(path.name.replace(".py", ".before.py"))
        if source.exists():
            assert path.read_text(encoding="utf-8") == expected_after(source), path


def test_every_finding_code_has_a_fixture():
    """Each code migrator reports is shown, with its message, by some fixture's findings."""
    expected = [line for case in CASES + TOOLKIT_CASES for line in expected_findings(case)]
    expected += [
        line
        for tree in TREES
        for before in tree.rglob("*.before.py")
        for line in expected_findings(before)
    ]
    shown = {line.split(": ", 1)[1].split(" ", 1)[0] for line in expected}
    runner_only = {"MIG100"}  # unused suppressions: tests/test_suppress.py
    assert shown >= set(CODES) - runner_only, sorted(set(CODES) - runner_only - shown)
