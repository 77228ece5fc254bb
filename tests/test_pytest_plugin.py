"""The pytest plugin: `pytest --migrator-verify` runs one item per configured verify target, in
pytest's report and JUnit XML, alone or under pytest-xdist."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project
from test_fix_verify import MODEL

pytest.importorskip("torch")
pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parent.parent
PLUGIN = ("-p", "migrator.pytest_plugin")
IDS = {
    "pyproject.toml::zoo/a.py:Net": "passed",
    "pyproject.toml::zoo/b.py:build": "passed",
    "pyproject.toml::zoo/c.py:Net": "failed",
}
PYPROJECT = "".join(
    f'[[tool.migrator.verify]]\ntarget = "{node.partition("::")[2]}"\n\n' for node in IDS
)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three models committed unmigrated, migrated in the work tree; c.py's migration is wrong
    (the mean's dim changed)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    root = pytester.path
    (root / "zoo").mkdir()
    (root / "zoo" / "__init__.py").write_text("")
    sources = {
        "a.py": MODEL,
        "b.py": MODEL + "\n\ndef build():\n    return Net()\n",
        "c.py": MODEL,
    }
    for name, text in sources.items():
        (root / "zoo" / name).write_text(text)
    (root / "pyproject.toml").write_text(PYPROJECT)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "models"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True
        )
    for name, text in sources.items():
        migrated = fix_text(text, str(root / "zoo" / name), Project()).text
        assert migrated != text
        if name == "c.py":
            assert "Mean(dim=1" in migrated
            migrated = migrated.replace("Mean(dim=1", "Mean(dim=2")
        (root / "zoo" / name).write_text(migrated)
    return root


def _junit(path: Path) -> dict[str, tuple[str, str, dict[str, str]]]:
    """name -> (outcome, failure message, properties) of each testcase."""
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        failure = case.find("failure")
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        outcome = "failed" if failure is not None else "passed"
        text = "" if failure is None else (failure.text or "")
        cases[f"{case.get('classname')}::{case.get('name')}"] = (outcome, text, properties)
    return cases


def test_one_item_per_target_with_outcomes_in_the_report_and_junit(project, pytester):
    collected = pytester.runpytest("--migrator-verify", *PLUGIN, "--collect-only", "-q")
    assert [line for line in collected.outlines if "::" in line] == list(IDS)
    marked = pytester.runpytest(
        "--migrator-verify", *PLUGIN, "--collect-only", "-q", "-m", "migrator_verify", "-k", "build"
    )
    assert [line for line in marked.outlines if "::" in line] == ["pyproject.toml::zoo/b.py:build"]

    result = pytester.runpytest("--migrator-verify", *PLUGIN, "-rA", "--junitxml=out.xml")
    result.assert_outcomes(passed=2, failed=1)
    outcomes = {
        report.nodeid: report.outcome
        for report in result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
        if report.when == "call"
    }
    assert outcomes == IDS
    failure = result.stdout.str()
    assert "zoo/c.py:Net  (original: HEAD, migrated: working tree" in failure
    assert "=> FAIL" in failure and "fx graph    FAIL" in failure

    cases = _junit(project / "out.xml")
    assert {name: case[0] for name, case in cases.items()} == IDS
    assert cases["pyproject.toml::zoo/a.py:Net"][2] == {
        "state_dict": "pass",
        "fx graph": "pass",
        "export": "pass",
        "outputs": "pass",
    }
    _, message, properties = cases["pyproject.toml::zoo/c.py:Net"]
    assert properties["fx graph"] == "fail" and properties["outputs"] == "fail"
    assert "fx graph    FAIL" in message and "=> FAIL" in message


def test_items_distribute_over_xdist_workers(project, pytester):
    result = pytester.runpytest_subprocess(
        "--migrator-verify", *PLUGIN, "-n", "2", "-v", "--junitxml=out.xml"
    )
    result.assert_outcomes(passed=2, failed=1)
    workers = {line.split()[0] for line in result.outlines if line.startswith("[gw")}
    assert workers == {"[gw0]", "[gw1]"}  # 3 items over 2 workers: each ran one at least
    cases = _junit(project / "out.xml")
    assert {name: case[0] for name, case in cases.items()} == IDS
    assert "fx graph    FAIL" in cases["pyproject.toml::zoo/c.py:Net"][1]


def test_set_up_errors_fail_with_one_line_and_without_the_flag_nothing_runs(project, pytester):
    (project / "zoo" / "d.py").write_text(MODEL)  # not committed: no original
    (project / "pyproject.toml").write_text(
        PYPROJECT + '[[tool.migrator.verify]]\ntarget = "zoo/d.py:Net"\n'
    )
    result = pytester.runpytest("--migrator-verify", *PLUGIN, "-k", "d.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["zoo/d.py:Net: cannot be verified: zoo/d.py does not exist at HEAD"]
    )
    assert pytester.runpytest(*PLUGIN).ret == pytest.ExitCode.NO_TESTS_COLLECTED
    (project / "pyproject.toml").write_text("[tool.migrator]\n")
    result = pytester.runpytest("--migrator-verify", *PLUGIN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no [[tool.migrator.verify]] entries" in result.stderr.str()
