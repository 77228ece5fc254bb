"""Apply a `Plan` to a file's text: each region the plan changes (`regions.py`) is edited as
plain text where that is provably what the LibCST codemod writes (`splice.py`), and rewritten
by the codemod (`codemod.py`) otherwise. libcst loads only when a region needs it."""

from __future__ import annotations

import ast

from migrator.rewrite.plan import Plan
from migrator.rewrite.regions import Region, regions
from migrator.rewrite.splice import Spliced, by_line, splice


def apply(source: str, plan: Plan, tree: ast.Module | None = None, text_edits: bool = True) -> str:
    """The source with the plan's replacements, inserted statements and imports (`tree`: the
    source's `ast`, parsed again when not given). With `text_edits` false, the codemod
    rewrites every region."""
    lines = source.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    parts = (
        regions(plan, tree or ast.parse(source), lines)
        if "\r" not in source
        else [Region(1, len(lines), False)]
    )  # lines as LibCST and `ast` count them
    replaces = by_line(plan)
    spliced: list[Spliced | None] = [
        splice(lines, r, plan, replaces) if text_edits and "\r" not in source else None
        for r in parts
    ]
    rest = [r for r, s in zip(parts, spliced) if s is None]
    codes: list[str] = []
    comments: dict[str, list[str]] = {}
    if rest:
        from migrator.rewrite.codemod import rewrite

        codes, comments = rewrite(source, plan, rest, starts)
    rewritten = iter(codes)
    out, done = [], 0
    for region, edited in zip(parts, spliced):
        code = edited.text(comments) if edited is not None else next(rewritten)
        out += [source[done : starts[region.start - 1]], code]
        done = starts[region.end]
    return "".join(out) + source[done:]
