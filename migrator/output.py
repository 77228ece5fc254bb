"""How `migrator check` prints its findings, with ruff's format names: `text` (one finding a
line), `grouped` (by file), `json`, `sarif`, `github` (GitHub Actions workflow commands), and
`--statistics` (a count per code)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

from migrator.files import SourceError
from migrator.findings import CODES, Finding

FORMATS = ("text", "grouped", "json", "sarif", "github")
STREAMED = "text"
"""The format printed as findings come; the others need them all."""


def render(output_format: str, findings: list[Finding], errors: list[SourceError]) -> str:
    """The findings (and the files that could not be processed) in a format other than text."""
    if output_format == "grouped":
        return grouped(findings)
    if output_format == "json":
        return to_json(findings, errors)
    if output_format == "sarif":
        from migrator.report import to_sarif  # with `fix`'s review report (difflib)

        return to_sarif(findings, errors)
    return "\n".join(github(finding) for finding in findings)


def grouped(findings: Iterable[Finding]) -> str:
    """Per file, its name and then `  line:col CODE message` lines, as ruff groups them."""
    out: list[str] = []
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    for path, found in by_path.items():
        out += [f"{path}:"] + [f"  {f.line}:{f.col + 1} {f.code} {f.message}" for f in found] + [""]
    return "\n".join(out).rstrip("\n")


def to_json(findings: Iterable[Finding], errors: Iterable[SourceError] = ()) -> str:
    """A list: a record per finding, then one per file that could not be processed (`code`
    null, `error` true), as ruff lists syntax errors."""
    records = [{**f.to_dict(), "error": False} for f in findings]
    records += [
        {
            "path": str(e.path),
            "line": e.line,
            "col": None,
            "code": None,
            "message": e.reason,
            "fixable": False,
            "error": True,
        }
        for e in errors
    ]
    return json.dumps(records, indent=2)


def github(finding: Finding) -> str:
    """A GitHub Actions `::error` workflow command, escaped as GitHub documents it."""
    properties = {
        "file": finding.path,
        "line": finding.line,
        "col": finding.col + 1,
        "title": f"migrator ({finding.code})",
    }
    listed = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
    return f"::error {listed}::{_escape_data(f'{finding.code} {finding.message}')}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def statistics(findings: Iterable[Finding]) -> str:
    """A line per code, most frequent first: count, code, `[*]` when `fix` fixes it, meaning."""
    counts = Counter(f.code for f in findings)
    ranked = sorted(counts.items(), key=lambda code_count: (-code_count[1], code_count[0]))
    return "\n".join(
        f"{count:>5}\t{code}\t{'[*]' if code < 'MIG100' else '   '} {CODES[code]}"
        for code, count in ranked
    )
