"""What a reviewer sees: the `fix` summary by op kind, `--diff` colours, the Markdown review
report, SARIF from `check --format sarif`, the progress bar, and `-j N` output."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from migrator import progress
from migrator.cli import main
from migrator.findings import CODES, Finding
from migrator.report import ReviewReport, Summary, module_kind
from test_cli import FIXED, MODEL, SHARED_CONV, migrator

RESIDUAL = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, y):
        y = self.act(x) + F.relu(y) * torch.sigmoid(y)
        return self.act(self.fc(y)) - self.fc(x)
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    models = tmp_path / "models"
    models.mkdir()
    (models / "net.py").write_text(MODEL)
    (models / "residual.py").write_text(RESIDUAL)
    (models / "shared.py").write_text(SHARED_CONV)
    (models / "clean.py").write_text(FIXED)
    return tmp_path


def test_summary_counts_ops_by_module_kind(tree):
    result = migrator("fix", "models", cwd=tree)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "2 file(s) changed: 6 op(s) converted (2 x nn.ReLU, 1 x Add, 1 x Mul, 1 x Sub, "
        "1 x nn.Sigmoid), 1 module call(s) split (1 x nn.ReLU); 2 finding(s) left"
    )


@pytest.mark.parametrize(
    "code, message, module, kind",
    [
        ("MIG001", "F.relu -> `self.relu` = ReLU()", "torch.nn.ReLU", "nn.ReLU"),
        ("MIG002", "`+=` -> `self.add` = Add()", "migrator.nn.Add", "Add"),
        ("MIG001", "torch.cat -> `self.cat_1` = Concat(dim=1)", "migrator.nn.Concat", "Concat"),
        ("MIG001", "F.prelu -> `self.act`, which owns that weight", "", "existing module"),
        (
            "MIG003",
            "`self.drop` (nn.Dropout) is called at 2 sites: this one becomes `self.drop_1`",
            "nn.Dropout",
            "nn.Dropout",
        ),
    ],
)
def test_module_kind_of_a_fix(code, message, module, kind):
    assert module_kind(Finding("a.py", 1, 0, code, message, module=module)) == kind


def test_fixes_carry_their_op_module_and_attribute(tree):
    """The structured fields `module_kind` reads are filled where the analysis reports."""
    data = json.loads(migrator("check", "--format", "json", "models/residual.py", cwd=tree).stdout)
    fields = {(d["code"], d["op"], d["module"], d["attr"]) for d in data}
    assert ("MIG001", "F.relu", "torch.nn.ReLU", "relu") in fields
    assert ("MIG002", "+", "migrator.nn.Add", "add") in fields
    assert ("MIG003", "self.act", "nn.ReLU", "act_1") in fields
    assert all(d["reason"] == "" for d in data if d["fixable"])


def test_diff_is_coloured_on_a_terminal_only(tree, monkeypatch, capsys):
    monkeypatch.chdir(tree)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["fix", "--diff", "models/net.py"]) == 1
    out = capsys.readouterr().out
    assert out.count("\033[1m--- a/models/net.py\033[0m\n") == 1
    assert "\033[31m-        return F.relu(self.conv(x))\033[0m\n" in out
    assert "\033[32m+        return self.relu(self.conv(x))\033[0m\n" in out
    monkeypatch.setenv("NO_COLOR", "1")
    main(["fix", "--diff", "models/net.py"])
    assert "\033[" not in capsys.readouterr().out


def test_report_has_diffs_findings_and_errors(tree):
    (tree / "models" / "broken.py").write_text("class A(:\n")
    result = migrator("fix", "--report", "review.md", "models", cwd=tree)
    assert result.returncode == 2
    text = (tree / "review.md").read_text()
    assert text.startswith("# migrator review report\n\n2 file(s) changed: 6 op(s) converted")
    sections = text.split("\n## ")[1:]
    assert [s.splitlines()[0] for s in sections] == [
        "`models/broken.py`",
        "`models/net.py`",
        "`models/residual.py`",
        "`models/shared.py`",
    ]
    broken, net, residual, shared = sections
    assert "**Not processed:** models/broken.py:1: syntax error" in broken
    assert "```diff\n--- a/models/net.py\n+++ b/models/net.py\n" in net
    assert "+        return self.relu(self.conv(x))\n" in net
    assert "Findings left" not in net
    assert "- line 14, column 25: **MIG103** `self.fc` is called at 2 sites" in residual
    assert "```diff" not in shared and "**MIG103**" in shared
    assert "\033[" not in text


def test_report_of_a_dry_run_writes_no_source(tree):
    result = migrator("fix", "--check", "--report", "review.md", "models/net.py", cwd=tree)
    assert result.returncode == 1
    assert (tree / "models" / "net.py").read_text() == MODEL
    assert "1 file(s) would change" in (tree / "review.md").read_text()


def test_report_with_nothing_to_review(tree):
    assert migrator("fix", "--report", "r.md", "models/clean.py", cwd=tree).returncode == 0
    assert "Nothing to review" in (tree / "r.md").read_text()


class _Check:
    def __init__(self, name: str, status: str, detail: str = "") -> None:
        self.name, self.status, self.detail = name, status, detail


class _Target:
    def __init__(self, target: str, *checks: _Check, error: str = "") -> None:
        self.target, self.checks, self.error = target, checks, error
        self.ok = not error and all(c.status != "fail" for c in checks)


def test_report_verification_table():
    verification = [
        _Target("models/net.py:Net", _Check("state_dict", "pass"), _Check("outputs", "pass")),
        _Target(
            "models/a.py:A",
            _Check("state_dict", "pass"),
            _Check("outputs", "fail", "max abs difference 0.5 | at out[0]"),
        ),
        _Target("models/b.py:B", error="b.py (before fix) has no `B`"),
    ]
    text = ReviewReport().render(Summary(), verification=verification)
    assert (
        "## Verification\n\n| target | state_dict | outputs | result |\n|---|---|---|---|\n"
        "| models/net.py:Net | PASS | PASS | **PASS** |\n"
        "| models/a.py:A | PASS | FAIL | **FAIL** |\n"
        "| models/b.py:B |  |  | **FAIL** |\n\n"
        "- models/a.py:A, outputs: max abs difference 0.5 \\| at out[0]\n"
        "- models/b.py:B: not verified: b.py (before fix) has no `B`\n"
    ) in text


def test_report_fences_survive_backticks_in_the_diff():
    report = ReviewReport()
    report.add(Path("a.py"), diff="-x = '```'\n+x = 1\n")
    assert "````diff\n-x = '```'\n+x = 1\n````" in report.render(Summary())


def test_sarif_has_every_rule_and_located_results(tree):
    (tree / "models" / "broken.py").write_text("class A(:\n")
    result = migrator("check", "--format", "sarif", "models", cwd=tree)
    assert result.returncode == 2
    log = json.loads(result.stdout)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(CODES)
    assert all(r["shortDescription"]["text"] for r in rules)
    results = run["results"]
    assert len(results) == 9
    first = results[0]
    assert first["ruleId"] == "MIG001" and rules[first["ruleIndex"]]["id"] == "MIG001"
    assert first["message"]["text"].startswith("F.relu -> `self.relu`")
    assert first["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "models/net.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 11, "startColumn": 16},
    }
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tree.as_uri() + "/"
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and note["message"]["text"].startswith("syntax error")
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "models/broken.py"


def test_sarif_of_a_clean_tree(tree):
    result = migrator("check", "--format", "sarif", "models/clean.py", cwd=tree)
    assert result.returncode == 0
    run = json.loads(result.stdout)["runs"][0]
    assert run["results"] == [] and run["invocations"][0]["executionSuccessful"] is True


def test_parallel_output_matches_one_process(tree):
    for i in range(12):
        (tree / "models" / f"copy{i}.py").write_text(RESIDUAL if i % 2 else MODEL)
    for args in (["check"], ["check", "--format", "json"], ["fix", "--diff"]):
        one = migrator(*args, "-j", "1", "models", cwd=tree, env={"NO_COLOR": "1"})
        two = migrator(*args, "-j", "2", "models", cwd=tree, env={"NO_COLOR": "1"})
        assert (two.returncode, two.stdout, two.stderr) == (one.returncode, one.stdout, one.stderr)
    assert migrator("check", "-j", "x", "models", cwd=tree).returncode == 2


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    stream = _Terminal()
    with progress.Progress("fix", stream=stream, delay=0) as bar:
        bar.start(4)
        bar.advance("a.py")
        assert stream.getvalue() == "\rfix [#####...............] 1/4 a.py\033[K"
        bar.print("fixed a.py", file=stream)  # erases the bar first
        assert stream.getvalue().endswith("\033[K\r\033[Kfixed a.py\n")
    assert stream.getvalue().endswith("fixed a.py\n")  # nothing left to erase
    with progress.Progress("check", stream=stream, delay=0) as bar:
        bar.start(1)
        bar.advance("c.py")
    assert stream.getvalue().endswith("1/1 c.py\033[K\r\033[K")  # erased at the end


@pytest.mark.parametrize("case", ["ci", "pipe", "short"])
def test_progress_bar_stays_quiet(monkeypatch, case):
    monkeypatch.setenv("TERM", "xterm")
    if case == "ci":
        monkeypatch.setenv("CI", "true")
    else:
        monkeypatch.delenv("CI", raising=False)
    stream = io.StringIO() if case == "pipe" else _Terminal()
    with progress.Progress("fix", stream=stream, delay=0 if case != "short" else 60) as bar:
        bar.start(2)
        bar.advance("a.py")
        bar.print("fixed a.py", file=io.StringIO())
        bar.advance("b.py")
    assert stream.getvalue() == ""
