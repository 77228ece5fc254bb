"""`migrator check --add-noqa`: write a `# noqa: CODES` comment for the findings of today on
their lines, as ruff offers, to adopt migrator on an existing codebase. A line that already has
a `# noqa: ...` gets the new codes added to it; running it again changes nothing."""

from __future__ import annotations

import ast
import re

from migrator.findings import Finding

_NOQA_CODES = re.compile(r"(#\s*noqa:\s*[A-Za-z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Za-z]+[0-9]+)*)")


def with_noqa(text: str, findings: list[Finding]) -> str | None:
    """`text` with the suppressions for `findings`; None when a comment cannot go on one of
    their lines without changing the code (a line ending inside a string, or continued)."""
    codes: dict[int, set[str]] = {}
    for finding in findings:
        codes.setdefault(finding.line, set()).add(finding.code)
    lines = text.split("\n")
    for number, new in codes.items():
        line = lines[number - 1]
        listed = ", ".join(sorted(new))
        if _NOQA_CODES.search(line):
            lines[number - 1] = _NOQA_CODES.sub(lambda m: f"{m.group(1)}, {listed}", line, 1)
        else:
            lines[number - 1] = f"{line.rstrip()}  # noqa: {listed}"
    edited = "\n".join(lines)
    try:
        unchanged = ast.dump(ast.parse(edited)) == ast.dump(ast.parse(text))
    except SyntaxError:
        unchanged = False
    return edited if unchanged else None
