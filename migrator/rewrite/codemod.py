"""Apply a `Plan` to regions of source text with LibCST, so everything the plan does not touch
keeps its exact formatting and comments.

Only the regions of the file the plan changes (`regions.py`) that are not plain text edits
(`splice.py`) are parsed and rewritten (`edit.py` decides): the rest of the text is kept as it
is, without a LibCST tree.
"""

from __future__ import annotations

import io
import textwrap
import tokenize
from collections.abc import Sequence
from typing import Literal, TypeVar

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from migrator.rewrite.imports import (
    Described,
    Kind,
    import_position,
    place,
    section,
    sort_key,
    top_block,
)
from migrator.rewrite.layout import call_text, from_import_text
from migrator.rewrite.plan import (
    SUPER_INIT,
    TWIN_DOC,
    HelperClass,
    InputRef,
    Plan,
    Replace,
    ReplaceKind,
    Span,
)
from migrator.rewrite.regions import STAND_IN, Region


def rewrite(
    source: str, plan: Plan, parts: list[Region], starts: list[int]
) -> tuple[list[str], dict[str, list[str]]]:
    """The new text of each of the regions `parts` (in file order; `starts`: the offset of
    each line of `source`), and the comments moved next to the statements creating modules,
    by attribute (for inserts made elsewhere too)."""
    config = cst.PartialParserConfig(default_indent=_default_indent(source))
    wrappers = [_parse(source[starts[r.start - 1] : starts[r.end]], r, config) for r in parts]
    replaces = {(r.kind, r.span): r for r in plan.replaces}
    comments: dict[str, list[str]] = {}
    for region, wrapper in zip(parts, wrappers):
        if _commented(source, starts, region, plan):
            wrapper.visit(_MoveComments(replaces, comments, _offset(region)))
    import_names = dict(plan.import_names)
    codes = [
        wrapper.visit(
            _Apply(
                plan,
                replaces,
                comments,
                import_names,
                _offset(region),
                imports=region.imports,
            )
        ).code.removeprefix(STAND_IN)
        for region, wrapper in zip(parts, wrappers)
    ]
    return codes, comments


def _commented(source: str, starts: list[int], region: Region, plan: Plan) -> bool:
    """Whether a call the plan replaces in `region` may hold a comment (a `#` on its lines):
    otherwise there is none for `_MoveComments` to find."""
    return any(
        "#" in source[starts[r.span[0] - 1] : starts[r.span[2]]]
        for r in plan.replaces
        if r.kind == "call" and region.start <= r.span[0] <= region.end
    )


def _parse(text: str, region: Region, config: cst.PartialParserConfig) -> MetadataWrapper:
    module = cst.parse_module(STAND_IN + text if region.indented else text, config)
    return MetadataWrapper(module, unsafe_skip_copy=True)


def _offset(region: Region) -> int:
    """What turns a line of the region's parse into a line of the file."""
    return region.start - 1 - region.indented


def _default_indent(source: str) -> str:
    """The file's first indentation: what LibCST indents new blocks with, in the whole file."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.INDENT:
            return token.string
    return "    "


class _MoveComments(cst.CSTVisitor):
    """Collect the comments written among the arguments a rewrite drops (the hyper-parameters):
    they move to the line that creates the module, next to the values they describe."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(
        self,
        replaces: dict[tuple[ReplaceKind, Span], Replace],
        comments: dict[str, list[str]],
        offset: int,
    ) -> None:
        super().__init__()
        self.replaces = replaces
        self.comments = comments
        self.offset = offset

    def visit_Call(self, node: cst.Call) -> None:
        replace = self.replaces.get(
            ("call", _span(self.get_metadata(PositionProvider, node), self.offset))
        )
        if replace is None:
            return
        kept = {id(arg) for ref, _ in replace.inputs for *_, arg in _resolve(ref, node) if arg}
        kept |= {
            id(_resolve(ref.inner, node)[0][2])
            for ref, _ in replace.inputs
            if ref.inner is not None
        }
        found: list[str] = []
        for arg in node.args:
            if id(arg) not in kept:
                arg.visit(_CommentCollector(found))
        if found:
            self.comments[replace.attr] = found


def _span(pos: CodeRange, offset: int) -> Span:
    """The plan's span of a region's node at `pos`, the region starting `offset` lines in."""
    return (pos.start.line + offset, pos.start.column, pos.end.line + offset, pos.end.column)


class _CommentCollector(cst.CSTVisitor):
    def __init__(self, found: list[str]) -> None:
        super().__init__()
        self.found = found

    def visit_Comment(self, node: cst.Comment) -> None:
        self.found.append(node.value.lstrip("#").strip())


class _Apply(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(
        self,
        plan: Plan,
        replaces: dict[tuple[ReplaceKind, Span], Replace],
        comments: dict[str, list[str]],
        import_names: dict[str, list[str]],
        offset: int,
        imports: bool,
    ) -> None:
        super().__init__()
        self.plan = plan
        self.comments = comments
        self.import_names = import_names
        """Shared by the regions, so the first matching import statement takes the names."""
        self.offset = offset
        self.imports = imports
        """Whether the region is where new import statements go."""
        self.replaces = replaces
        self.depth = 0
        """How many functions and classes the node being visited is in."""
        self.pending: list[cst.BaseStatement] = []
        """Helpers' new classes, added after the top-level statement being left."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return True

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.depth += 1
        return True

    def leave_FunctionDef(
        self, original: cst.FunctionDef, updated: cst.FunctionDef
    ) -> cst.FunctionDef | cst.FlattenSentinel[cst.BaseStatement]:
        made = self.plan.helper_classes.get(self._span(original.name)[0])
        if made is None:
            return self._after_top(updated)
        self.pending.append(_helper_class(made, updated))
        if made.wrap and any(r.via == made.twin for r in self.replaces.values()):
            self.pending += _twin_function(made, updated)  # for the calls of its own file
        return self._after_top(original)  # the function stays as it was, for its other callers

    def leave_ClassDef(
        self, original: cst.ClassDef, updated: cst.ClassDef
    ) -> cst.ClassDef | cst.FlattenSentinel[cst.BaseStatement]:
        base = self.plan.module_bases.get(self._span(original.name)[0])
        if base is not None:  # a plain class becomes a module: its only base was `object`
            updated = updated.with_changes(
                bases=[cst.Arg(cst.parse_expression(base))],
                lpar=cst.LeftParen(),
                rpar=cst.RightParen(),
            )
        return self._after_top(updated)

    def _after_top(self, node: cst.FunctionDef | cst.ClassDef):
        """`node`, followed by the pending helper classes when it is a top-level statement."""
        self.depth -= 1
        if self.depth or not self.pending:
            return node
        classes, self.pending = self.pending, []
        blank = [cst.EmptyLine(indent=False)] * 2
        return cst.FlattenSentinel([node, *(c.with_changes(leading_lines=blank) for c in classes)])

    def _span(self, node: cst.CSTNode) -> Span:
        return _span(self.get_metadata(PositionProvider, node), self.offset)

    def _take(self, kind: ReplaceKind, node: cst.CSTNode) -> Replace | None:
        return self.replaces.get((kind, self._span(node)))

    # -- expressions ---------------------------------------------------------------------------
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        replace = self._take("call", original)
        if replace is None:
            return updated
        return _call(replace, updated).with_changes(lpar=updated.lpar, rpar=updated.rpar)

    def leave_BinaryOperation(
        self, original: cst.BinaryOperation, updated: cst.BinaryOperation
    ) -> cst.BaseExpression:
        return self._operation("binop", original, updated)

    def leave_UnaryOperation(
        self, original: cst.UnaryOperation, updated: cst.UnaryOperation
    ) -> cst.BaseExpression:
        return self._operation("unaryop", original, updated)

    def _operation(
        self, kind: ReplaceKind, original: cst.BaseExpression, updated: cst.BaseExpression
    ) -> cst.BaseExpression:
        """`a + b` or `-a` as the call the plan replaces it by, if any."""
        replace = self._take(kind, original)
        if replace is None:
            return updated
        return _call(replace, updated)  # a call is atomic: the operation's parentheses can go

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute
    ) -> cst.BaseExpression:
        replace = self._take("rename", original)
        if replace is None:
            return updated
        renamed = updated.with_changes(attr=cst.Name(replace.attr))
        return _indexed(renamed, replace.index) if replace.index else renamed

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        replace = self._take("name", original)
        return updated if replace is None else updated.with_changes(value=replace.attr)

    # -- statements ----------------------------------------------------------------------------
    def leave_For(self, original: cst.For, updated: cst.For) -> cst.For:
        replace = self._take("enumerate", original.target)
        return updated if replace is None else _enumerated(updated, replace.attr)

    def leave_CompFor(self, original: cst.CompFor, updated: cst.CompFor) -> cst.CompFor:
        replace = self._take("enumerate", original.target)
        return updated if replace is None else _enumerated(updated, replace.attr)

    def leave_AugAssign(
        self, original: cst.AugAssign, updated: cst.AugAssign
    ) -> cst.BaseSmallStatement:
        replace = self._take("augassign", original)
        if replace is None:
            return updated
        return cst.Assign(
            targets=[cst.AssignTarget(updated.target.deep_clone())],
            value=_call(replace, updated),
            semicolon=updated.semicolon,
        )

    def leave_Expr(self, original: cst.Expr, updated: cst.Expr) -> cst.BaseSmallStatement:
        if not isinstance(original.value, cst.Call):
            return updated
        replace = self._take("inplace", original.value)
        if replace is None:
            return updated
        call = updated.value
        # `x.add_(y)`, `torch.sigmoid_(x)`: only a local name, the first input, is rebound
        assert isinstance(call, cst.Call)
        ((target, _, _),) = _resolve(replace.inputs[0][0], call)
        assert isinstance(target, cst.Name)
        return cst.Assign(
            targets=[cst.AssignTarget(target.deep_clone())],
            value=_call(replace, call),
            semicolon=updated.semicolon,
        )

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        column = self.get_metadata(PositionProvider, original).start.column
        return _wrapped(updated, column, self.plan.line_length, original)

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = self._with_inserts(original.body, updated.body)
        return updated.with_changes(body=body) if body is not None else updated

    def _with_inserts(self, original, updated) -> list | None:
        if not (self.plan.inserts or self.plan.inserts_before):
            return None
        body, changed = [], False
        for old, new in zip(original, updated):
            for code in self.plan.inserts_before.get(self._span(old)[0], ()):
                # the new statement takes the blank lines above (comments stay with their
                # statement); one blank line follows it, none a `super().__init__()` made first
                lines = list(new.leading_lines)
                blank = next((i for i, line in enumerate(lines) if line.comment), len(lines))
                body.append(cst.parse_statement(code).with_changes(leading_lines=lines[:blank]))
                gap = [] if code == SUPER_INIT else [cst.EmptyLine(indent=False)]
                new = new.with_changes(leading_lines=gap + lines[blank:])
                changed = True
            body.append(new)
            for code in self.plan.inserts.get(self._span(old)[0], ()):
                attr = code.split("=", 1)[0].strip().removeprefix("self.")
                if attr in self.comments:
                    code += "  # " + "; ".join(self.comments[attr])
                body.append(cst.parse_statement(code + "\n"))
                changed = True
        return body if changed else None

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        if updated.relative or updated.module is None or isinstance(updated.names, cst.ImportStar):
            return updated
        module = cst.Module([]).code_for_node(updated.module)
        names = self.import_names.pop(module, None)
        if not names:
            return updated
        last = updated.names[-1]
        empty = cst.Module([])
        added = [cst.ImportAlias(cst.Name(n)) for n in sorted(names)]
        old = list(updated.names)
        spelled = [empty.code_for_node(a.name) for a in old]
        if spelled == sorted(spelled):  # a sorted list stays sorted, as isort keeps it
            every = sorted(old + added, key=lambda a: empty.code_for_node(a.name))
        else:
            every = old + added
        if isinstance(last.comma, cst.Comma):  # a parenthesised list with a trailing comma
            inner = old[-2].comma if len(old) > 1 else last.comma  # the last's breaks before `)`
            if len(old) == 1 and updated.lpar:  # `(` breaks before the first name
                inner = cst.Comma(whitespace_after=updated.lpar.whitespace_after)
            return updated.with_changes(
                names=[a.with_changes(comma=inner) for a in every[:-1]]
                + [every[-1].with_changes(comma=last.comma)]
            )
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        aliases = [a.with_changes(comma=comma) for a in every[:-1]] + [
            every[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        ]
        extended = updated.with_changes(names=aliases)
        column = self.get_metadata(PositionProvider, original).start.column
        if column + len(empty.code_for_node(extended)) <= self.plan.line_length or updated.lpar:
            return extended
        listed = [
            empty.code_for_node(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in aliases
        ]
        line = cst.parse_statement(
            from_import_text(module, listed, column, self.plan.line_length) + "\n"
        )
        assert isinstance(line, cst.SimpleStatementLine)  # an import statement
        wrapped = line.body[0]
        assert isinstance(wrapped, cst.ImportFrom)
        return wrapped.with_changes(semicolon=updated.semicolon)

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if not (self.imports and self.plan.imports):
            return updated
        return updated.with_changes(
            body=insert_imports(updated.body, self.plan.imports, self.plan.package)
        )


def _wrapped(
    line: cst.SimpleStatementLine, column: int, limit: int, original: cst.SimpleStatementLine
) -> cst.SimpleStatementLine:
    """A rewritten statement that ends in a call of a created module (`y = self.add(a, b)`,
    `return self.relu(x)`) and has a line past the line length, laid out again at that call's
    brackets (when the statement holds no comment and each argument is on one line); any other
    statement as it is."""
    empty = cst.Module([])
    if len(line.body) != 1:
        return line
    small = line.body[0]
    value = getattr(small, "value", None)
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and isinstance(value.func.value, cst.Name)
        and value.func.value.value == "self"
        and value.args
        and not value.lpar
    ):
        return line
    text = empty.code_for_node(small)
    # continuation lines are shown without the block's indentation, which is `column`
    if max(column + len(part) for part in text.split("\n")) <= limit or "#" in text:
        return line
    call = empty.code_for_node(value)
    if not text.endswith(call) or original.deep_equals(line):
        return line
    head = text[: -len(call)] + empty.code_for_node(value.func)
    args = [
        empty.code_for_node(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip()
        for a in value.args
    ]
    if any("\n" in part for part in [head, *args]):
        return line
    try:
        split = cst.parse_statement(call_text(head, args, column, limit) + "\n")
    except cst.ParserSyntaxError:
        return line
    assert isinstance(split, cst.SimpleStatementLine)  # a statement of one line
    return split.with_changes(
        leading_lines=line.leading_lines, trailing_whitespace=line.trailing_whitespace
    )


def _helper_class(made: HelperClass, function: cst.FunctionDef) -> cst.ClassDef:
    """The class a helper function becomes: `__init__` creates its modules, `forward` is the
    function (its replacements made) with `self` first."""
    init = "".join(textwrap.indent(code, " " * 8) + "\n" for code in made.init)
    template = cst.parse_statement(
        (f"@{made.decorator}\n" if made.decorator else "") + f"class {made.name}({made.base}):\n"
        f'    """{TWIN_DOC.format(made.function)}"""\n\n'
        + (f"    def __init__(self):\n        super().__init__()\n{init}\n" if init else "")
        + "    def forward(self):\n        pass\n"
    )
    assert isinstance(template, cst.ClassDef) and isinstance(template.body, cst.IndentedBlock)
    *head, stub = template.body.body
    assert isinstance(stub, cst.FunctionDef)
    forward = function.with_changes(
        name=cst.Name("forward"),
        decorators=[],
        params=_with_first(function.params, "self"),
        leading_lines=stub.leading_lines,
    )
    return template.with_changes(body=template.body.with_changes(body=[*head, forward]))


def _with_first(params: cst.Parameters, name: str) -> cst.Parameters:
    """`params` with a parameter `name` put first (one parameter a line stays so)."""
    first = cst.Param(cst.Name(name))
    following = [*params.posonly_params, *params.params]
    if following and isinstance(following[0].comma, cst.Comma):
        first = first.with_changes(
            comma=cst.Comma(whitespace_after=following[0].comma.whitespace_after)
        )
    if params.posonly_params:
        return params.with_changes(posonly_params=[first, *params.posonly_params])
    return params.with_changes(params=[first, *params.params])


def _twin_function(made: HelperClass, function: cst.FunctionDef) -> list[cst.BaseStatement]:
    """For a helper registered with `torch.fx.wrap`: its twin function (the helper, its
    replacements made, calling them on a first parameter `ops`, an instance of its class),
    and the twin's registration, as the helper's is made."""
    params = _with_first(function.params, "ops")
    decorators = [
        d for d in function.decorators if made.wrap_decorates and _code(d.decorator) == made.wrap
    ]
    twin = function.with_changes(
        name=cst.Name(made.twin), params=params, decorators=decorators, leading_lines=[]
    ).visit(_SelfToOps())
    assert isinstance(twin, cst.FunctionDef)
    if made.wrap_decorates:
        return [twin]
    return [twin, cst.parse_statement(f'{made.wrap}("{made.twin}")\n')]


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


class _SelfToOps(cst.CSTTransformer):
    """`self.<attr>` of the replacements -> `ops.<attr>` (a helper using neither name)."""

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value="ops") if updated.value == "self" else updated


def insert_imports(
    statements: Sequence[cst.BaseStatement], codes: list[str], package: str
) -> list[cst.BaseStatement]:
    """`statements` (a module's) with the import statements `codes` inserted where isort would
    put them (`imports.place`)."""
    body = list(statements)
    fallback = import_position([_kind(s) for s in body])
    for code in codes:
        new = cst.parse_statement(code + "\n")
        described = _described(new, package)
        assert described is not None  # `codes` are import statements
        placed = place(
            top_block((_kind(s), _described(s, package)) for s in body),
            described,
        )
        if placed is None:
            body.insert(fallback, new)
            continue
        at, how = placed
        if how in ("before", "before_blank"):
            lines = list(body[at].leading_lines)  # type: ignore[attr-defined]
            blank = next((j for j, line in enumerate(lines) if line.comment), len(lines))
            new = new.with_changes(leading_lines=lines[:blank])
            above = [cst.EmptyLine()] if how == "before_blank" else []
            body[at] = body[at].with_changes(leading_lines=above + lines[blank:])
        else:
            if how == "after_blank":
                new = new.with_changes(leading_lines=[cst.EmptyLine()])
            at += 1
        body.insert(at, new)
    return body


def _kind(stmt: cst.CSTNode) -> Kind:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return "compound"
    if stmt.body and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
        return "imports"
    first = stmt.body[0] if stmt.body else None
    if isinstance(first, cst.Expr) and isinstance(first.value, cst.SimpleString):
        return "docstring"
    return "simple"


def _described(stmt: cst.CSTNode, package: str) -> Described | None:
    """(section, sort key) of a statement that holds only imports (None for anything else)."""
    if _kind(stmt) != "imports":
        return None
    assert isinstance(stmt, cst.SimpleStatementLine)
    first = stmt.body[0]
    empty = cst.Module([])
    if isinstance(first, cst.Import):
        module = empty.code_for_node(first.names[0].name)
        return section(module, False, package), sort_key(module, False)
    assert isinstance(first, cst.ImportFrom)
    module = empty.code_for_node(first.module) if first.module is not None else ""
    return section(module, bool(first.relative), package), sort_key(module, True)


def _call(replace: Replace, node: cst.CSTNode) -> cst.Call:
    args: list[cst.Arg] = []
    for ref, keyword in replace.inputs:
        for value, star, source in _resolve(ref, node):
            if isinstance(value, (cst.Call, cst.Name, cst.Attribute, cst.Subscript)):
                value = value.with_changes(lpar=[], rpar=[])
            arg = cst.Arg(value=value, star=star)
            if source is not None and _multiline(source.comma):
                # keep the line break and comment that follow a kept argument
                arg = arg.with_changes(
                    comma=source.comma,
                    whitespace_after_arg=getattr(
                        source, "whitespace_after_arg", arg.whitespace_after_arg
                    ),
                )
            if keyword:
                arg = arg.with_changes(
                    keyword=cst.Name(keyword),
                    equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
                )
            args.append(arg)
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if isinstance(node, cst.BinaryOperation):  # a line break (and comment) at the operator stays
        # libcst's BaseBinaryOp declares no whitespace, though every operator has both
        op = node.operator
        for space in (op.whitespace_before, op.whitespace_after):  # type: ignore[attr-defined]
            if isinstance(space, cst.ParenthesizedWhitespace):
                comma = cst.Comma(whitespace_after=space)
                break
    args = [
        a if isinstance(a.comma, cst.Comma) else a.with_changes(comma=comma) for a in args[:-1]
    ] + args[-1:]
    if (
        isinstance(node, cst.Call)
        and args
        and isinstance(args[-1].comma, cst.Comma)
        and isinstance(node.args[-1].comma, cst.Comma)
    ):
        closing = node.args[-1].comma.whitespace_after  # the indent before `)` stays
        kept = args[-1].comma.whitespace_after
        if isinstance(closing, cst.ParenthesizedWhitespace) and isinstance(
            kept, cst.ParenthesizedWhitespace
        ):
            kept = kept.with_changes(indent=closing.indent, last_line=closing.last_line)
            args[-1] = args[-1].with_changes(
                comma=args[-1].comma.with_changes(whitespace_after=kept)
            )
    func: cst.BaseExpression = cst.Attribute(cst.Name("self"), cst.Name(replace.attr))
    if replace.index:
        func = _indexed(func, replace.index)
    if replace.via:  # a helper fx keeps a leaf: its twin function, given the module of its ops
        args = [cst.Arg(func, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), *args]
        func = cst.Name(replace.via)
    call = cst.Call(func=func, args=args)
    if isinstance(node, cst.Call):
        call = call.with_changes(whitespace_before_args=node.whitespace_before_args)
    if len(replace.inputs) == 1 and replace.inputs[0][0].kind == "elements" and args:
        inner = replace.inputs[0][0].inner
        assert inner is not None  # "elements" are those of an argument
        call = _list_layout(call, _resolve(inner, node)[0][0])
    return call


def _indexed(func: cst.BaseExpression, index: str) -> cst.BaseExpression:
    """`func` followed by the subscripts `index` (`[i][j]`)."""
    subscript = cst.parse_expression(f"_{index}")
    assert isinstance(subscript, cst.Subscript)  # `index` is subscripts only
    return _replace_base(subscript, func)


def _replace_base(node: cst.Subscript, base: cst.BaseExpression) -> cst.Subscript:
    inner = node.value
    if isinstance(inner, cst.Subscript):
        return node.with_changes(value=_replace_base(inner, base))
    return node.with_changes(value=base)


def _list_layout(call: cst.Call, items: cst.BaseExpression) -> cst.Call:
    """`torch.cat([a, b])` written over several lines: the brackets' line breaks (and the
    comments in them) become the new call's."""
    if isinstance(items, cst.List):
        opening, closing = items.lbracket.whitespace_after, items.rbracket.whitespace_before
    elif items.lpar:
        opening, closing = items.lpar[0].whitespace_after, items.rpar[-1].whitespace_before
    else:
        return call
    if not isinstance(closing, cst.ParenthesizedWhitespace):
        return call
    last = call.args[-1]
    comma = last.comma if isinstance(last.comma, cst.Comma) else cst.Comma()
    args = [*call.args[:-1], last.with_changes(comma=comma.with_changes(whitespace_after=closing))]
    return call.with_changes(whitespace_before_args=opening, args=args)


def _multiline(comma: cst.Comma | cst.MaybeSentinel) -> bool:
    return isinstance(comma, cst.Comma) and isinstance(
        comma.whitespace_after, cst.ParenthesizedWhitespace
    )


def _resolve(
    ref: InputRef, node: cst.CSTNode
) -> list[tuple[cst.BaseExpression, Literal["", "*"], cst.Arg | cst.BaseElement | None]]:
    """The expressions an input reference names in `node`, each with its star ('' or '*') and
    the argument or list element it came from (None for operands and receivers)."""
    kind = ref.kind
    if kind == "left":
        assert isinstance(node, cst.BinaryOperation)
        return [(node.left, "", None)]
    if kind == "operand":
        assert isinstance(node, cst.UnaryOperation)
        return [(node.expression, "", None)]
    if kind == "right":
        assert isinstance(node, (cst.BinaryOperation, cst.AugAssign))
        return [(node.right if isinstance(node, cst.BinaryOperation) else node.value, "", None)]
    if kind == "target":
        assert isinstance(node, cst.AugAssign)
        return [(node.target, "", None)]
    if kind == "receiver":
        assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
        return [(node.func.value, "", None)]
    if kind == "arg":
        assert isinstance(node, cst.Call)
        arg = [a for a in node.args if a.keyword is None and not a.star][ref.index]
        return [(arg.value, "", arg)]
    if kind == "kw":
        assert isinstance(node, cst.Call)
        arg = next(a for a in node.args if a.keyword and a.keyword.value == ref.keyword)
        return [(arg.value, "", arg)]
    assert ref.inner is not None  # "elements" and "star" are those of an argument
    ((value, _, source),) = _resolve(ref.inner, node)
    if kind == "elements":
        assert isinstance(value, (cst.List, cst.Tuple))
        return [(element.value, "", element) for element in value.elements]
    if kind == "star":
        return [(value, "*", source)]
    raise ValueError(ref)


_Loop = TypeVar("_Loop", cst.For, cst.CompFor)


def _enumerated(loop: _Loop, index: str) -> _Loop:
    """`for <target> in <items>` -> `for <index>, <target> in enumerate(<items>)`."""
    target = loop.target
    if isinstance(target, cst.Tuple) and not target.lpar:
        target = target.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    pair = cst.Tuple(
        [cst.Element(cst.Name(index), comma=comma), cst.Element(target)],
        lpar=[],
        rpar=[],
    )
    items = loop.iter
    if isinstance(items, (cst.Name, cst.Attribute, cst.Call)):
        items = items.with_changes(lpar=[], rpar=[])
    return loop.with_changes(target=pair, iter=cst.Call(cst.Name("enumerate"), [cst.Arg(items)]))
