"""Apply a `Plan` to a file's text: each region the plan changes (`regions.py`) is edited as
plain text where that is provably what the LibCST codemod writes (`splice.py`), and rewritten
by the codemod (`codemod.py`) otherwise; new import statements are inserted as text where the
top of the file is laid out plainly (`imports.insertions`), and by the codemod otherwise.
libcst loads only when a region needs it."""

from __future__ import annotations

import ast

from migrator.rewrite.imports import insertions
from migrator.rewrite.plan import Plan
from migrator.rewrite.regions import Region, regions
from migrator.rewrite.splice import Spliced, by_line, splice


def apply(source: str, plan: Plan, tree: ast.Module | None = None, text_edits: bool = True) -> str:
    """The source with the plan's replacements, inserted statements and imports (`tree`: the
    source's `ast`, parsed again when not given). With `text_edits` false, the codemod
    rewrites every region and inserts the imports."""
    lines = source.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    tree = tree or ast.parse(source)
    text = text_edits and "\r" not in source  # lines as LibCST and `ast` count them
    added = insertions(tree, lines, plan.imports, plan.package) if text and plan.imports else None
    if "\r" in source:
        parts = [Region(1, len(lines), False, imports=True)]
    else:
        parts = regions(plan, tree, lines, imports=added is None)
        if added and any(r.start < line <= r.end for r in parts for line in added):
            added, parts = None, regions(plan, tree, lines)  # the codemod inserts them
    replaces = by_line(plan)
    spliced: list[Spliced | None] = [
        splice(lines, r, plan, replaces) if text else None for r in parts
    ]
    rest = [r for r, s in zip(parts, spliced) if s is None]
    codes: list[str] = []
    comments: dict[str, list[str]] = {}
    if rest:
        from migrator.rewrite.codemod import rewrite

        codes, comments = rewrite(source, plan, rest, starts)
    rewritten = iter(codes)
    edits = [(starts[line - 1], starts[line - 1], new) for line, new in (added or {}).items()]
    for region, edited in zip(parts, spliced):
        code = edited.text(comments) if edited is not None else next(rewritten)
        edits.append((starts[region.start - 1], starts[region.end], code))
    out, done = [], 0
    for start, end, code in sorted(edits, key=lambda e: e[:2]):  # an insertion before a region
        out += [source[done:start], code]
        done = end
    return "".join(out) + source[done:]
