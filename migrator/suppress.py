"""Line suppressions, as flake8 and ruff read them: `# noqa` (every code), `# noqa: MIG101` or
`# noqa: MIG101, MIG104`, and migrator's own `# migrator: skip[MIG101]`. A suppression acts on
the findings reported on its line (the line shown in `path:line:col`: for an op spanning several
lines, the line it starts on); a suppressed MIG0xx fix is not made either. `# migrator: skip`
without codes is not one of them: it leaves the code alone (see `rewrite.analyze`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from migrator.findings import Finding

_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_SKIP = re.compile(r"#\s*migrator:\s*skip\[(?P<codes>[^\]]*)\]")
_CODE = re.compile(r"[A-Z]+[0-9]+")


@dataclass(frozen=True)
class Suppression:
    line: int
    col: int
    """Where the comment starts (0-based)."""
    codes: frozenset[str] | None
    """The codes it names; None for a bare `# noqa`, which suppresses every code."""
    text: str
    """The comment as written, from `#`."""

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes


Suppressions = dict[int, list[Suppression]]
"""Line -> the suppressions written on it."""


def suppressions(source: str) -> Suppressions:
    """The suppressions of a file's text (lines split on "\\n")."""
    if "noqa" not in source.lower() and "skip[" not in source:
        return {}
    found: Suppressions = {}
    for number, line in enumerate(source.split("\n"), 1):
        if "#" not in line:
            continue
        for pattern in (_NOQA, _SKIP):
            for match in pattern.finditer(line, line.index("#")):
                codes = match.group("codes")
                named = frozenset(_CODE.findall(codes.upper())) if codes else None
                found.setdefault(number, []).append(
                    Suppression(number, match.start(), named, match.group(0))
                )
    return found


def suppressed(table: Suppressions, line: int, code: str) -> bool:
    """Is `code` suppressed on `line`?"""
    return any(s.covers(code) for s in table.get(line, ()))


def split(findings: list[Finding], table: Suppressions) -> tuple[list[Finding], list[Finding]]:
    """(findings kept, findings suppressed)."""
    kept: list[Finding] = []
    dropped: list[Finding] = []
    for finding in findings:
        (dropped if suppressed(table, finding.line, finding.code) else kept).append(finding)
    return kept, dropped


def unused(path: str, table: Suppressions, dropped: list[Finding]) -> list[Finding]:
    """A MIG100 finding for each suppression naming migrator codes that suppressed none of them
    (like ruff's RUF100). A bare `# noqa`, and codes of other tools, may be another linter's."""
    used = {(f.line, f.code) for f in dropped}
    out = []
    for line, written in sorted(table.items()):
        for suppression in written:
            idle = sorted(
                code
                for code in suppression.codes or ()
                if code.startswith("MIG") and (line, code) not in used
            )
            if idle:
                out.append(
                    Finding(
                        path,
                        line,
                        suppression.col,
                        "MIG100",
                        f"unused suppression `{suppression.text}`: nothing to "
                        f"suppress for {', '.join(idle)}",
                        reason="unused",
                    )
                )
    return out
