"""`check --output-format`: one finding a line whatever source a message quotes, GitHub Actions
annotations in GitHub's documented syntax, ruff's grouped layout, JSON with the files that failed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

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


SARIF_SUBSET = Path(__file__).with_name("sarif-2.1.0-subset.json")


def _sarif(tmp_path) -> dict:
    (tmp_path / "a, b%c.py").write_text(MODEL)
    (tmp_path / "net.py").write_text(MULTILINE)
    (tmp_path / "broken.py").write_text("def (:\n")
    result = migrator("check", "--output-format", "sarif", ".", cwd=tmp_path)
    assert result.returncode == 2  # a file could not be parsed: still a full log
    return json.loads(result.stdout)


def test_sarif_validates_against_the_sarif_2_1_0_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SARIF_SUBSET.read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(
        schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )
    jsonschema.Draft7Validator.check_schema(schema)
    log = _sarif(tmp_path)
    assert sorted(e.message for e in validator.iter_errors(log)) == []
    run = log["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["MIG001", "MIG104"]
    assert run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "a%2C%20b%25c.py",
        "uriBaseId": "%SRCROOT%",
    }
    # the schema is not a formality: what breaks the specification is caught
    broken = json.loads(json.dumps(log))
    broken["runs"][0]["results"][0]["level"] = "fatal"
    del broken["runs"][0]["results"][1]["message"]
    broken["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"] = {"startLine": 0}
    del broken["runs"][0]["tool"]["driver"]["name"]
    assert len(list(validator.iter_errors(broken))) == 4


def _parse_github(line: str) -> tuple[str, dict[str, str], str]:
    """A workflow command read back as GitHub documents it: `::command key=value,...::message`,
    `%25`, `%0D`, `%0A` escaped in both parts and `%3A`, `%2C` in property values."""
    match = re.fullmatch(r"::(\w+) ([^:]*)::(.*)", line)
    assert match, line
    command, listed, message = match.groups()

    def unescape(text: str) -> str:
        for escaped, raw in (
            ("%0D", "\r"),
            ("%0A", "\n"),
            ("%3A", ":"),
            ("%2C", ","),
            ("%25", "%"),
        ):
            text = text.replace(escaped, raw)
        return text

    escapes = re.compile(r"%(25|0D|0A|3A|2C)")
    properties = {}
    for item in listed.split(","):
        key, _, value = item.partition("=")
        assert re.fullmatch(r"[a-z]+", key), item
        assert not re.search(r"[%:,\r\n]", escapes.sub("", value)), item
        properties[key] = unescape(value)
    assert not re.search(r"[%\r\n]", escapes.sub("", message)), message
    return command, properties, unescape(message)


def test_github_format_reads_back_as_github_parses_it():
    finding = Finding("dir/a,b:100%\r\n.py", 7, 3, "MIG101", "50% of x,y: z\r\nmore")
    command, properties, message = _parse_github(github(finding))
    assert command == "error"
    assert properties == {
        "file": "dir/a,b:100%\r\n.py",
        "line": "7",
        "col": "4",
        "title": "migrator (MIG101)",
    }
    assert message == "MIG101 50% of x,y: z more"  # a finding's message is one line
    assert github(finding).startswith("::error file=dir/a%2Cb%3A100%25%0D%0A.py,line=7,col=4,")
