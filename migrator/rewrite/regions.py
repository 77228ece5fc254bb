"""The parts of a file a plan changes: ranges of whole lines holding whole statements, each as
small as can be rewritten on its own, so the codemod parses those instead of the whole file.

A statement inside a class or function body makes a region (with the other statements of that
body the plan changes, and those between) when no other statement shares its lines; the comment
and blank lines after it come along (LibCST keeps a block's
trailing comments in that block, before what is inserted after it). Otherwise the region grows
to the enclosing statement, up to a top-level one (top-level statements sharing a line count as
one). A new `__init__` (inserted before a class member, taking its blank lines) and a helper's
new class (added after the top-level statement holding the helper) take the whole top-level
statement, and new imports the codemod inserts the top of the file down to its first compound
statement (where the codemod's search for their place stops at the latest).
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass

from migrator.rewrite.plan import Plan

_BODIES = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)

STAND_IN = "if 1:\n"
"""The block an indented region is parsed in."""


@dataclass(frozen=True)
class Region:
    start: int
    end: int
    """First and last line (1-based, inclusive)."""
    indented: bool
    """A statement inside a block: parsed inside a stand-in block of the same indentation."""
    block: int = 0
    """The body the statements belong to (`id` of the list; 0: the module's): statements of
    one body make one region with the statements between them, which costs less than a parse
    each."""
    imports: bool = False
    """Where the plan's new import statements go (the top of the file)."""
    parts: tuple[Region, ...] = ()
    """The regions of one body this one joins (when more than one): each can be rewritten
    alone, so that only those text edits cannot make go to the codemod."""


def regions(plan: Plan, tree: ast.Module, lines: list[str], imports: bool = True) -> list[Region]:
    """The regions holding every change of `plan`, in file order, none overlapping (with
    `imports`, also the one where its new import statements go)."""
    finder = _Finder(tree, lines)
    found = [
        finder.innermost(line) for line in [r.span[0] for r in plan.replaces] + list(plan.inserts)
    ]
    found += [
        finder.top(line)
        for line in [*plan.inserts_before, *plan.helper_classes, *plan.module_bases]
    ]
    if _named(plan.import_names, lines):
        found += [
            finder.innermost(node.lineno)
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module in plan.import_names
        ]
    if plan.imports and imports:
        compound = next((g for g in finder.groups if not _simple(g)), finder.groups[-1])
        found.append(Region(1, finder.extend(compound[1]), False, imports=True))
    merged: list[Region] = []
    parts: list[list[Region]] = []
    for region in sorted(found, key=lambda r: (r.start, -r.end)):
        if merged and region.start <= merged[-1].end:
            parts[-1][-1] = _joined(parts[-1][-1], region)
        elif merged and region.indented and region.block == merged[-1].block:
            parts[-1].append(region)
        else:
            merged.append(region)
            parts.append([region])
            continue
        merged[-1] = _joined(merged[-1], region)
    merged = [
        Region(r.start, r.end, r.indented, r.block, r.imports, tuple(p) if len(p) > 1 else ())
        for r, p in zip(merged, parts)
    ]
    return merged


def _joined(region: Region, other: Region) -> Region:
    """`region` grown to hold `other`, which starts in it or after it."""
    return Region(
        region.start,
        max(region.end, other.end),
        region.indented,
        region.block,
        region.imports or other.imports,
    )


def _named(modules: dict[str, list[str]], lines: list[str]) -> bool:
    """Whether the text may import from one of `modules`: the last part of its dotted name is
    written in it (cheaper than a walk of the tree)."""
    text = "\n".join(lines) if modules else ""
    return any(module.rsplit(".", 1)[-1] in text for module in modules)


def _simple(group: tuple[int, int, list[ast.stmt]]) -> bool:
    return not any(hasattr(s, "body") or isinstance(s, ast.Match) for s in group[2])


def _end(stmt: ast.stmt) -> int:
    """The last line of a parsed statement."""
    assert stmt.end_lineno is not None  # set on every parsed node
    return stmt.end_lineno


def _start(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0].lineno if decorators else stmt.lineno


class _Finder:
    """The statements of a file by line: top-level groups, and clean members of bodies."""

    def __init__(self, tree: ast.Module, lines: list[str]) -> None:
        self.lines = lines
        self.groups: list[tuple[int, int, list[ast.stmt]]] = []
        for stmt in tree.body:
            if self.groups and _start(stmt) <= self.groups[-1][1]:
                start, end, members = self.groups[-1]
                self.groups[-1] = (start, max(end, _end(stmt)), members + [stmt])
            else:
                self.groups.append((_start(stmt), _end(stmt), [stmt]))
        self._group_starts = [g[0] for g in self.groups]
        self._body_starts: dict[int, list[int]] = {}

    def top(self, line: int) -> Region:
        """The top-level group holding `line`."""
        return self._top_group(line)[0]

    def _top_group(self, line: int) -> tuple[Region, list[ast.stmt]]:
        start, end, members = self.groups[bisect.bisect_right(self._group_starts, line) - 1]
        return Region(start, self.extend(end), False), members

    def innermost(self, line: int) -> Region:
        """The smallest region holding `line`."""
        region, members = self._top_group(line)
        parent = members[0] if len(members) == 1 else None
        while isinstance(parent, _BODIES):
            body = parent.body
            starts = self._body_starts.get(id(body))
            if starts is None:
                starts = self._body_starts[id(body)] = [_start(s) for s in body]
            i = bisect.bisect_right(starts, line) - 1
            if i < 0 or _end(body[i]) < line or not self._alone(body, i):
                break
            parent = body[i]
            region = Region(starts[i], self.extend(_end(parent)), True, id(body))
        return region

    def _alone(self, body: list[ast.stmt], i: int) -> bool:
        """Whether body[i] starts its first line (after the indentation) and shares no line
        with its neighbours."""
        stmt, start = body[i], _start(body[i])
        text = self.lines[start - 1]
        return (
            len(text) - len(text.lstrip(" \t\f")) == stmt.col_offset
            and (i == 0 or _end(body[i - 1]) < start)
            and (i + 1 == len(body) or _start(body[i + 1]) > _end(stmt))
        )

    def extend(self, end: int) -> int:
        """`end` moved over the blank and comment-only lines that follow it."""
        while end < len(self.lines) and (
            not (text := self.lines[end].strip()) or text.startswith("#")
        ):
            end += 1
        return end
