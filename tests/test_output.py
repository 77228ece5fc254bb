"""`check --output-format`: one finding a line whatever source a message quotes, GitHub Actions
annotations in GitHub's documented syntax, ruff's grouped layout, JSON with the files that failed."""

from __future__ import annotations

import json
import re

from migrator.findings import Finding
from migrator.output import github
from test_cli import MODEL, migrator

MULTILINE = """import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = make_act(
            "relu",
        )

    def forward(self, x):
        return self.act(self.act(x))
"""
# ::error file=...,line=...,col=...,title=...::message, properties escaped (no raw : , % CR LF)
GITHUB = re.compile(r"::error file=[^:,\r\n]+,line=\d+,col=\d+,title=[^:,\r\n]+::[^\r\n]*")


def test_messages_quoting_multiline_source_stay_on_one_line(tmp_path):
    (tmp_path / "net.py").write_text(MULTILINE)
    text = migrator("check", "net.py", cwd=tmp_path).stdout
    assert text.count("\n") == 1 and 'make_act( "relu", )' in text
    sarif = json.loads(migrator("check", "--output-format", "sarif", "net.py", cwd=tmp_path).stdout)
    assert all("\n" not in r["message"]["text"] for r in sarif["runs"][0]["results"])


def test_github_annotations(tmp_path):
    (tmp_path / "a, b:c.py").write_text(MODEL)
    (tmp_path / "net.py").write_text(MULTILINE)
    result = migrator("check", "--output-format", "github", ".", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all(GITHUB.fullmatch(line) for line in lines), lines
    assert lines[0].startswith("::error file=a%2C b%3Ac.py,line=11,col=16,title=migrator (MIG001)")
    escaped = github(Finding("p.py", 1, 0, "MIG101", "100% of\r\nit"))
    assert escaped.endswith("::MIG101 100%25 of it")  # messages are one line already
    assert GITHUB.fullmatch(escaped)


def test_grouped_and_json_with_failed_files(tmp_path):
    (tmp_path / "a.py").write_text(MODEL)
    (tmp_path / "b.py").write_text("def (:\n")
    grouped = migrator("check", "--output-format", "grouped", ".", cwd=tmp_path)
    assert grouped.stdout.startswith("a.py:\n  11:16 MIG001 F.relu -> ")
    data = json.loads(migrator("check", "--format", "json", ".", cwd=tmp_path).stdout)
    assert [(d["path"], d["code"], d["error"]) for d in data] == [
        ("a.py", "MIG001", False),
        ("b.py", None, True),
    ]
    assert data[1]["message"].startswith("syntax error")
