"""What a reviewer reads: unified diffs, the run summary, the Markdown review report of
`migrator fix --report`, and SARIF 2.1.0 for code-scanning tools (`migrator check --format
sarif`)."""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import quote

from migrator import __version__
from migrator.files import SourceError
from migrator.findings import CODES, Finding


def module_kind(finding: Finding) -> str:
    """The module class a fix creates (MIG001/MIG002/MIG004) or copies (MIG003), as shown to
    people: `nn.ReLU` for torch's, `Add` for migrator's, `RotateHalf (helper)` for a helper's."""
    if finding.code == "MIG003":
        return finding.module or "module"
    if finding.code == "MIG004":  # a class of the file, made of a helper function
        return f"{finding.module.rpartition('.')[2]} (helper)"
    if not finding.module:
        return "existing module"  # the call now goes through a module the class already has
    module = finding.module
    if module.startswith("torch.nn."):
        return "nn." + module.removeprefix("torch.nn.")
    if module.startswith("aimet_torch."):
        return "aimet " + module.rsplit(".", 1)[1]
    return module.removeprefix("migrator.nn.")


def _by_kind(counts: Counter[str]) -> str:
    """`3 x nn.ReLU, 2 x Add`: most frequent first."""
    ranked = sorted(counts.items(), key=lambda kind_count: (-kind_count[1], kind_count[0]))
    return ", ".join(f"{n} x {kind}" for kind, n in ranked)


@dataclass
class Summary:
    """Totals of a `fix` run, for the closing line and the report."""

    files_changed: int = 0
    converted: Counter[str] = field(default_factory=Counter)
    split: Counter[str] = field(default_factory=Counter)
    findings_left: int = 0
    errors: int = 0
    unwritten: int = 0
    """Files `fix --verify` left unwritten: a target using them failed, or none covers them."""

    def add_fixed(self, findings: Iterable[Finding]) -> None:
        self.files_changed += 1
        for finding in findings:
            if finding.code == "MIG005":  # a class made a module: no op of its own
                continue
            (self.split if finding.code == "MIG003" else self.converted)[module_kind(finding)] += 1

    def line(self, verb: str = "changed") -> str:
        """`2 file(s) changed: 5 op(s) converted (3 x nn.ReLU, 2 x Add), ...; 1 finding(s) left`"""
        converted = sum(self.converted.values())
        split = sum(self.split.values())
        text = f"{self.files_changed} file(s) {verb}: {converted} op(s) converted"
        text += f" ({_by_kind(self.converted)})" if converted else ""
        text += f", {split} module call(s) split"
        text += f" ({_by_kind(self.split)})" if split else ""
        text += f"; {self.findings_left} finding(s) left"
        text += f"; {self.unwritten} file(s) not written" if self.unwritten else ""
        return text + (f"; {self.errors} file(s) with errors" if self.errors else "")


_COLORS = {"+": "32", "-": "31", "@": "36"}
"""ANSI colours of diff lines: added green, removed red, hunk headers cyan (file headers bold)."""


def unified_diff(path: Path | str, old: str, new: str, *, color: bool = False) -> str:
    """A `git diff`-style unified diff of one file (3 lines of context), ANSI-coloured if asked."""
    name = Path(path).as_posix()
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{name}", f"b/{name}", n=3
    )
    out = []
    for line in lines:
        text = line.rstrip("\n")
        code = "1" if line.startswith(("+++", "---")) else _COLORS.get(line[0])
        if color and code:
            text = f"\033[{code}m{text}\033[0m"
        out.append(text + "\n" + ("" if line.endswith("\n") else "\\ No newline at end of file\n"))
    return "".join(out)


# -- Markdown review report ------------------------------------------------------------------


class Check(Protocol):
    name: str
    detail: str

    @property
    def status(self) -> str: ...


class Verification(Protocol):
    """One verified target, as `migrator.prove.verify.TargetResult` gives it."""

    target: str
    error: str

    @property
    def checks(self) -> Sequence[Check]: ...

    @property
    def ok(self) -> bool: ...


@dataclass
class _FileSection:
    path: Path
    diff: str = ""
    findings: list[Finding] = field(default_factory=list)
    error: str = ""


class ReviewReport:
    """The Markdown report of a `fix` run: per file its diff, the findings left and any error,
    plus (when `--verify` ran) one row per verified target."""

    def __init__(self, title: str = "migrator review report") -> None:
        self.title = title
        self._sections: list[_FileSection] = []

    def add(
        self,
        path: Path,
        *,
        diff: str = "",
        findings: Sequence[Finding] = (),
        error: SourceError | str | None = None,
    ) -> None:
        """Record one file; files with nothing to show are left out."""
        if diff or findings or error:
            self._sections.append(_FileSection(path, diff, list(findings), str(error or "")))

    def render(
        self, summary: Summary, verb: str = "changed", verification: Sequence[Verification] = ()
    ) -> str:
        out = [f"# {self.title}", "", summary.line(verb), ""]
        if verification:
            out += _verification_table(verification)
        for section in self._sections:
            out += [f"## `{section.path.as_posix()}`", ""]
            if section.error:
                out += [f"**Not processed:** {section.error}", ""]
            if section.diff:
                out += [*_fenced(section.diff, "diff"), ""]
            if section.findings:
                out += ["Findings left:", ""]
                out += [
                    f"- line {f.line}, column {f.col + 1}: **{f.code}** {_escape(f.message)}"
                    for f in section.findings
                ]
                out.append("")
        if not self._sections:
            out += ["Nothing to review: no file changed and no finding is left.", ""]
        return "\n".join(out)


def _verification_table(results: Sequence[Verification]) -> list[str]:
    names = list(dict.fromkeys(check.name for result in results for check in result.checks))
    rows = [
        "## Verification",
        "",
        "| target | " + " | ".join(names) + " | result |",
        "|---" * (len(names) + 2) + "|",
    ]
    for result in results:
        status = {check.name: check.status.upper() for check in result.checks}
        cells = [
            _escape(result.target),
            *(status.get(name, "") for name in names),
            "**PASS**" if result.ok else "**FAIL**",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    details = [
        f"- {_escape(result.target)}, {check.name}: {_escape(check.detail)}"
        for result in results
        for check in result.checks
        if check.status.lower() != "pass" and check.detail
    ]
    details += [
        f"- {_escape(result.target)}: not verified: {_escape(result.error)}"
        for result in results
        if result.error
    ]
    return rows + [""] + (details + [""] if details else [])


def _fenced(text: str, language: str) -> list[str]:
    """A code block whose fence is longer than any backtick run inside `text`."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{language}", text.rstrip("\n"), fence]


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# -- SARIF ---------------------------------------------------------------------------------------

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_RULE_INDEX = {code: i for i, code in enumerate(CODES)}


def to_sarif(findings: Iterable[Finding], errors: Iterable[SourceError] = ()) -> str:
    """A SARIF 2.1.0 log: a rule for every code, a result per finding; files that could not be
    processed become error notifications of the invocation. Paths are kept relative (to the
    directory migrator ran in) so code-scanning tools map them onto the repository."""
    errors = list(errors)
    rules = [
        {
            "id": code,
            "shortDescription": {"text": text},
            "fullDescription": {
                "text": f"{text}. "
                + (
                    "`migrator fix` rewrites it."
                    if code < "MIG100"
                    else "Needs a person: migrator leaves it as is."
                )
            },
            "defaultConfiguration": {"level": "warning"},
            "properties": {"fixable": code < "MIG100"},
        }
        for code, text in CODES.items()
    ]
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": _RULE_INDEX[f.code],
            "level": "warning",
            "message": {"text": f.message},
            "locations": [_location(f.path, f.line, f.col + 1)],
            **({"properties": f.details()} if f.details() else {}),
        }
        for f in findings
    ]
    notifications = [
        {
            "level": "error",
            "message": {"text": e.reason},
            "locations": [_location(e.path, e.line, None)],
        }
        for e in errors
    ]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "migrator", "version": __version__, "rules": rules}},
                "columnKind": "unicodeCodePoints",
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
                "invocations": [
                    {"executionSuccessful": not errors, "toolExecutionNotifications": notifications}
                ],
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2)


def _location(path: str | Path, line: int, column: int | None) -> dict:
    location: dict = {"artifactLocation": _artifact(Path(path))}
    if line > 0:
        location["region"] = {"startLine": line, **({"startColumn": column} if column else {})}
    return {"physicalLocation": location}


def _artifact(path: Path) -> dict:
    if path.is_absolute():
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            return {"uri": path.as_uri()}
    return {"uri": quote(path.as_posix()), "uriBaseId": "%SRCROOT%"}
