"""Apply a `Plan` to a file's text: each region the plan changes (`regions.py`) is edited as
plain text where that is provably what the LibCST codemod writes (`splice.py`), and rewritten
by the codemod (`codemod.py`) otherwise; new import statements are inserted as text where the
top of the file is laid out plainly (`imports.insertions`), and by the codemod otherwise.
libcst loads only when a region needs it."""

from __future__ import annotations

import ast

from migrator.rewrite.imports import insertions
from migrator.rewrite.plan import Plan, Replace
from migrator.rewrite.regions import STAND_IN, Region, regions
from migrator.rewrite.splice import Spliced, by_line, splice
from migrator.rewrite.unused import Placed


def apply(source: str, plan: Plan, tree: ast.Module | None = None, text_edits: bool = True) -> str:
    """The source with the plan's replacements, inserted statements and imports (`tree`: the
    source's `ast`, parsed again when not given). With `text_edits` false, the codemod
    rewrites every region and inserts the imports."""
    return applied(source, plan, tree or ast.parse(source), text_edits)[0]


def applied(
    source: str, plan: Plan, tree: ast.Module, text_edits: bool = True
) -> tuple[str, list[Placed] | None]:
    """`apply`, and the simple statements at the top level of the new text (None when the
    source does not end with a line break)."""
    lines = source.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    text = text_edits and "\r" not in source  # lines as LibCST and `ast` count them
    added = insertions(tree, lines, plan.imports, plan.package) if text and plan.imports else None
    if "\r" in source:
        parts = [Region(1, len(lines), False, imports=True)]
    else:
        parts = regions(plan, tree, lines, imports=added is None)
        if added and any(r.start < line <= r.end for r in parts for line in added):
            added, parts = None, regions(plan, tree, lines)  # the codemod inserts them
    replaces = by_line(plan)
    spliced: list[Spliced | None]
    if text:
        parts, spliced = _spliced(lines, parts, plan, replaces)
    else:
        spliced = [None] * len(parts)
    rest = [r for r, s in zip(parts, spliced) if s is None]
    codes: list[str] = []
    comments: dict[str, list[str]] = {}
    if rest:
        from migrator.rewrite.codemod import rewrite

        codes, comments = rewrite(source, plan, rest, starts)
        for region, code in zip(rest, codes):
            if region.indented:  # the others are parsed for their statements below
                ast.parse(STAND_IN + code)  # a rewrite that does not parse is not written
    rewritten = iter(codes)
    # (first line, last line, new text, whether it holds top-level statements)
    pieces = [(line, line - 1, new, True) for line, new in (added or {}).items()]
    for region, edited in zip(parts, spliced):
        code = edited.text(comments) if edited is not None else next(rewritten)
        pieces.append((region.start, region.end, code, not region.indented))
    pieces.sort(key=lambda p: p[:2])  # an insertion before the region starting at its line
    out, done = [], 0
    for first, last, code, _ in pieces:
        out += [source[done : starts[first - 1]], code]
        done = starts[last]
    top = _top_level(tree, pieces) if not lines[-1] else None
    return "".join(out) + source[done:], top


def _spliced(
    lines: list[str], parts: list[Region], plan: Plan, replaces: dict[int, list[Replace]]
) -> tuple[list[Region], list[Spliced | None]]:
    """The regions, each with its text edit or None (the codemod rewrites it). A region that
    joins several and cannot be edited whole is split into them: each is edited alone where
    it can be, and each run of those that cannot goes to the codemod as one region (with the
    lines between them)."""
    regions_out: list[Region] = []
    spliced: list[Spliced | None] = []
    for region in parts:
        edited = splice(lines, region, plan, replaces)
        if edited is not None or not region.parts:
            regions_out.append(region)
            spliced.append(edited)
            continue
        run: list[Region] = []
        for part in [*region.parts, None]:
            alone = splice(lines, part, plan, replaces) if part is not None else None
            if part is not None and alone is None:
                run.append(part)
                continue
            if run:
                regions_out.append(Region(run[0].start, run[-1].end, run[0].indented, run[0].block))
                spliced.append(None)
                run = []
            if part is not None:
                regions_out.append(part)
                spliced.append(alone)
    return regions_out, spliced


def _top_level(tree: ast.Module, pieces: list[tuple[int, int, str, bool]]) -> list[Placed]:
    """The simple statements at the top level of the text `pieces` make of the source `tree`
    was parsed from: those of the source they leave, and those of the top-level pieces,
    parsed (an indented piece is inside a compound statement)."""
    simple = [s for s in tree.body if not hasattr(s, "body") and not isinstance(s, ast.Match)]
    found: list[Placed] = []
    shift = i = 0
    for first, last, code, top in pieces:
        while i < len(simple) and _end(simple[i]) < first:
            found.append(Placed(simple[i], simple[i].lineno + shift, _end(simple[i]) + shift))
            i += 1
        while i < len(simple) and simple[i].lineno <= last:
            i += 1  # replaced by the piece
        if top:
            at = first + shift - 1
            found += [Placed(s, s.lineno + at, _end(s) + at) for s in ast.parse(code).body]
        shift += code.count("\n") - (last - first + 1)
    found += [Placed(s, s.lineno + shift, _end(s) + shift) for s in simple[i:]]
    return found


def _end(stmt: ast.stmt) -> int:
    assert stmt.end_lineno is not None  # parsed: set
    return stmt.end_lineno
