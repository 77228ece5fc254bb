"""Apply a plan to one region as plain text edits, without LibCST, when the text written is
provably what the codemod writes (`codemod.py`): the same calls, argument texts and inserted
lines, character for character.

That holds for what dense model code is made of: every replaced expression on one line, no
tabs, non-ASCII text, f-strings or `;` in the region, statements inserted only after simple
statements at the start of their line, no new `__init__` and no import in the region, and
every edited statement within the line length. Anything else (a call spread over lines,
comments to move, layout to keep, a call to lay out again) returns None: the codemod applies
that region. The result must parse, or the codemod applies the region too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from migrator.rewrite.plan import InputRef, Plan, Replace, ReplaceKind, Span
from migrator.rewrite.regions import STAND_IN, Region

_KINDS: dict[ReplaceKind, type[ast.AST]] = {
    "call": ast.Call,
    "inplace": ast.Call,
    "binop": ast.BinOp,
    "unaryop": ast.UnaryOp,
    "augassign": ast.AugAssign,
    "rename": ast.Attribute,
}
_VALUED = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)
"""The statements whose value the codemod may lay out again when a line is too long."""
_BARE = (ast.Call, ast.Name, ast.Attribute, ast.Subscript)
"""Argument values the codemod writes without their parentheses."""
_SIMPLE = (
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Expr,
    ast.Return,
    ast.Pass,
    ast.Raise,
    ast.Assert,
    ast.Delete,
    ast.Global,
    ast.Nonlocal,
    ast.Break,
    ast.Continue,
)


class _Unsure(Exception):
    """The text edit is not proven to be the codemod's: leave the region to it."""


@dataclass
class Spliced:
    """A region rewritten as text; `text` adds the inserted statements (with the comments the
    codemod moved next to them)."""

    lines: list[str]
    """The region's lines, edited, each with its line break."""
    inserts: dict[int, tuple[str, list[str]]]
    """Index in `lines` -> (indentation, statements to insert after that line)."""
    indented: bool

    def parses(self) -> bool:
        """Whether the region's new text parses (the comments `text` adds cannot change that)."""
        text = self.text({})
        try:
            ast.parse(STAND_IN + text if self.indented else text)
        except SyntaxError:
            return False
        return True

    def text(self, comments: dict[str, list[str]]) -> str:
        """The region's new text."""
        out = []
        for i, line in enumerate(self.lines):
            out.append(line)
            indent, codes = self.inserts.get(i, ("", []))
            for code in codes:
                attr = code.split("=", 1)[0].strip().removeprefix("self.")
                if attr in comments:
                    code += "  # " + "; ".join(comments[attr])
                out.append(f"{indent}{code}\n")
        return "".join(out)


def by_line(plan: Plan) -> dict[int, list[Replace]]:
    """The plan's replacements by the line they start on."""
    found: dict[int, list[Replace]] = {}
    for replace in plan.replaces:
        found.setdefault(replace.span[0], []).append(replace)
    return found


def splice(
    lines: list[str], region: Region, plan: Plan, replaces: dict[int, list[Replace]]
) -> Spliced | None:
    """The region (file `lines`, without line breaks) with the plan's changes as text edits;
    None when they are not proven to be the codemod's. `replaces`: `by_line(plan)`."""
    try:
        spliced = _Splicer(lines, region, plan, replaces).run()
    except _Unsure:
        return None
    return spliced if spliced.parses() else None


class _Splicer:
    def __init__(
        self, lines: list[str], region: Region, plan: Plan, replaces: dict[int, list[Replace]]
    ) -> None:
        self.lines = lines
        self.by_line = replaces
        self.region = region
        self.plan = plan
        self.offset = region.start - 1 - region.indented
        """What turns a line of the region's parse into a line of the file."""
        self.parents: dict[int, ast.AST] = {}
        self.edits: dict[int, list[tuple[int, int, ast.AST, Replace]]] = {}
        """File line -> (start column, end column, node, replace), by start column."""

    def run(self) -> Spliced:
        region, plan = self.region, self.plan
        inside = range(region.start, region.end + 1)
        body = self.lines[region.start - 1 : region.end]
        if (
            region.end >= len(self.lines)  # the file's last line, without a line break
            or any(line in plan.inserts_before for line in inside)
            or any(line in plan.helper_classes for line in inside)  # a class added beside
            or any(line in plan.module_bases for line in inside)  # a plain class's new base
            or region.imports
            or any(not line.isascii() or "\t" in line or ";" in line for line in body)
            or (plan.import_names and any("import" in line for line in body))
        ):
            raise _Unsure
        wanted = {(r.kind, r.span): r for line in inside for r in self.by_line.get(line, ())}
        if any(span[0] != span[2] for _, span in wanted):
            raise _Unsure
        if any(r.index or r.via for r in wanted.values()):  # `self.add[i](...)`: the codemod's
            raise _Unsure
        text = "\n".join(body) + "\n"
        try:
            tree = ast.parse(STAND_IN + text if region.indented else text)
        except SyntaxError:
            raise _Unsure from None
        found: dict[tuple[ReplaceKind, Span], ast.AST] = {}
        statements: dict[int, list[ast.stmt]] = {}
        valued: list[ast.stmt] = []
        todo: list[ast.AST] = [tree]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.JoinedStr):
                raise _Unsure  # positions inside f-strings are not the codemod's
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
                todo.append(child)
            if isinstance(node, _VALUED):
                valued.append(node)
            if isinstance(node, ast.stmt) and node.lineno + self.offset in plan.inserts:
                statements.setdefault(node.lineno + self.offset, []).append(node)
            if isinstance(node, (ast.Call, ast.BinOp, ast.AugAssign, ast.Attribute)):
                span = self._span(node)
                for kind, node_type in _KINDS.items():
                    if isinstance(node, node_type) and (kind, span) in wanted:
                        found[kind, span] = node
        if found.keys() != wanted.keys():
            raise _Unsure
        for key, node in found.items():
            self._add_edit(node, wanted[key])
        for edits in self.edits.values():
            edits.sort(key=lambda e: (e[0], -e[1]))
        new = list(body)
        for line in self.edits:
            new[line - region.start] = self._render(line, 0, len(self.lines[line - 1]))
        for stmt in valued:
            self._fits(stmt, new)
        inserts = {}
        for line in (line for line in inside if line in plan.inserts):
            if any("\n" in code or code != code.strip() for code in plan.inserts[line]):
                raise _Unsure  # the codemod lays out the continuation lines
            stmt = self._insert_point(statements.get(line, []))
            assert stmt.end_lineno is not None  # parsed: set
            indent = self.lines[line - 1][: stmt.col_offset]
            inserts[stmt.end_lineno + self.offset - region.start] = (indent, plan.inserts[line])
        return Spliced([line + "\n" for line in new], inserts, region.indented)

    def _span(self, node: ast.expr | ast.stmt) -> Span:
        assert node.end_lineno is not None and node.end_col_offset is not None  # parsed: set
        return (
            node.lineno + self.offset,
            node.col_offset,
            node.end_lineno + self.offset,
            node.end_col_offset,
        )

    def _fits(self, stmt: ast.stmt, new: list[str]) -> None:
        """Raise `_Unsure` when an edited statement has a line past the line length: the codemod
        may lay its call out again (`codemod._wrapped`). A continuation line is measured from
        the statement's column, as the codemod may."""
        first, _, last, _ = self._span(stmt)
        if not any(line in self.edits for line in range(first, last + 1)):
            return
        lines = new[first - self.region.start : last + 1 - self.region.start]
        if len(lines[0]) > self.plan.line_length or any(
            stmt.col_offset + len(line) > self.plan.line_length for line in lines[1:]
        ):
            raise _Unsure

    def _insert_point(self, candidates: list[ast.stmt]) -> ast.stmt:
        """The one simple statement, alone at the start of its line inside a block, that
        statements are inserted after."""
        if len(candidates) != 1 or not isinstance(candidates[0], _SIMPLE):
            raise _Unsure
        stmt = candidates[0]
        parent = self.parents.get(id(stmt))
        text = self.lines[stmt.lineno + self.offset - 1]
        if parent is None or isinstance(parent, ast.Module) or text[: stmt.col_offset].strip():
            raise _Unsure
        return stmt

    def _add_edit(self, node: ast.AST, replace: Replace) -> None:
        assert isinstance(node, (ast.expr, ast.stmt))
        line, start, _, end = self._span(node)
        if isinstance(node, ast.BinOp):  # the call replacing an operation drops its parentheses
            start, end = self._grouped(node)
        elif replace.kind == "inplace":
            statement = self.parents.get(id(node))
            if not isinstance(statement, ast.Expr) or self._span(statement) != self._span(node):
                raise _Unsure
        edits = self.edits.setdefault(line, [])
        if any((first, last) == (start, end) for first, last, *_ in edits):
            raise _Unsure  # two replacements of one text
        edits.append((start, end, node, replace))

    def _render(self, line: int, start: int, end: int) -> str:
        """The text of `line` from `start` to `end` with the edits inside it made."""
        text, out, at = self.lines[line - 1], [], start
        for first, last, node, replace in self.edits.get(line, ()):
            if last <= start or first >= end:
                continue  # outside the range
            if first <= start and end <= last and (first, last) != (start, end):
                continue  # the edit being made, around the range
            if first < start or last > end or first < at < last:
                raise _Unsure  # edits overlapping without nesting
            if first < at:
                continue  # inside an edit made: made by it
            out += [text[at:first], self._replacement(node, replace)]
            at = last
        out.append(text[at:end])
        return "".join(out)

    def _replacement(self, node: ast.AST, replace: Replace) -> str:
        args = []
        for ref, keyword in replace.inputs:
            for value, star in self._resolve(ref, node):
                args.append((f"{keyword}=" if keyword else "") + star + self._value(value))
        call = f"self.{replace.attr}({', '.join(args)})"
        if replace.kind == "call":
            assert isinstance(node, ast.Call)
            func = self._span(node.func)
            if func[2] != func[0] or self.lines[func[2] - 1][func[3] : func[3] + 1] != "(":
                raise _Unsure  # a space before the arguments: the codemod keeps it
            return call
        if replace.kind in ("binop", "unaryop"):
            return call
        if replace.kind == "augassign":
            assert isinstance(node, ast.AugAssign)
            return f"{self._text(node.target)} = {call}"
        if replace.kind == "inplace":  # `x.add_(y)`, `torch.sigmoid_(x)`: x, its first input
            ((target, _),) = self._resolve(replace.inputs[0][0], node)
            if not isinstance(target, ast.Name):
                raise _Unsure
            return f"{self._text(target)} = {call}"
        assert isinstance(node, ast.Attribute)  # "rename"
        line, start, _, end = self._span(node)
        if self.lines[line - 1][end - len(node.attr) : end] != node.attr:
            raise _Unsure
        return self._render(line, start, end - len(node.attr)) + replace.attr

    def _value(self, value: ast.expr) -> str:
        """An argument of the new call: its text, with the parentheses the codemod keeps."""
        if isinstance(value, (ast.Starred, ast.GeneratorExp)):
            raise _Unsure
        if isinstance(value, _BARE):
            line, start, _, end = self._span(value)
            return self._render(line, start, end)
        return self._text(value)

    def _text(self, node: ast.expr) -> str:
        """The node's text with its own parentheses (and the edits inside it)."""
        line = self._span(node)[0]
        return self._render(line, *self._grouped(node))

    def _grouped(self, node: ast.expr) -> tuple[int, int]:
        """The columns of `node` with the parentheses around it that are its own (not those
        of a call it is the only argument of)."""
        line, start, last_line, end = self._span(node)
        if last_line != line:
            raise _Unsure
        text = self.lines[line - 1]
        opening: list[int] = []
        at = start
        while at > 0 and text[at - 1] in " (":
            at -= 1
            if text[at] == "(":
                opening.append(at)
        left_cut = at == 0  # only parentheses before: more may be on the line above
        closing: list[int] = []
        at = end
        while at < len(text) and text[at] in " )":
            if text[at] == ")":
                closing.append(at)
            at += 1
        right_cut = at == len(text) or text[at] in "#\\"
        if (
            (left_cut and right_cut)
            or (left_cut and len(opening) < len(closing))
            or (right_cut and len(closing) < len(opening))
        ):
            raise _Unsure  # parentheses may pair with ones on another line
        pairs = min(len(opening), len(closing))
        parent = self.parents.get(id(node))
        if (
            isinstance(parent, ast.Call)
            and len(parent.args) == 1
            and parent.args[0] is node
            and not parent.keywords
        ):  # the outermost `(` is the call's; its `)` is among these unless a comma follows
            if left_cut:
                raise _Unsure
            pairs = min(len(opening) - 1, len(closing))
        return (opening[pairs - 1], closing[pairs - 1] + 1) if pairs else (start, end)

    def _resolve(self, ref: InputRef, node: ast.AST) -> list[tuple[ast.expr, str]]:
        """The expressions an input reference names in `node`, each with its star."""
        kind = ref.kind
        try:
            if kind == "left" and isinstance(node, ast.BinOp):
                return [(node.left, "")]
            if kind == "right" and isinstance(node, ast.BinOp):
                return [(node.right, "")]
            if kind == "operand" and isinstance(node, ast.UnaryOp):
                return [(node.operand, "")]
            if kind == "right" and isinstance(node, ast.AugAssign):
                return [(node.value, "")]
            if kind == "target" and isinstance(node, ast.AugAssign):
                return [(node.target, "")]
            if (
                kind == "receiver"
                and isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
            ):
                return [(node.func.value, "")]
            if kind == "arg" and isinstance(node, ast.Call):
                return [([a for a in node.args if not isinstance(a, ast.Starred)][ref.index], "")]
            if kind == "kw" and isinstance(node, ast.Call):
                return [(next(k.value for k in node.keywords if k.arg == ref.keyword), "")]
        except (IndexError, StopIteration):
            raise _Unsure from None
        if kind in ("elements", "star") and ref.inner is not None:
            ((value, _),) = self._resolve(ref.inner, node)
            if kind == "star":
                return [(value, "*")]
            if isinstance(value, (ast.List, ast.Tuple)):
                return [(element, "") for element in value.elts]
        raise _Unsure
