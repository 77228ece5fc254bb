"""The edit plan: what the analysis decided, located by source position, for the codemod to apply.

Positions are (line, column) with columns counted in characters, as LibCST counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

Span = tuple[int, int, int, int]
"""(start line, start column, end line, end column) of an expression, parentheses excluded."""

RefKind = Literal["arg", "kw", "receiver", "left", "right", "operand", "target", "elements", "star"]
ReplaceKind = Literal[
    "call", "binop", "unaryop", "augassign", "inplace", "rename", "name", "enumerate"
]


class Located(Protocol):
    """A parsed `ast` node that has a source position (any `expr`, `stmt`, `arg`, `keyword`)."""

    lineno: int
    col_offset: int
    end_lineno: int | None
    end_col_offset: int | None


@dataclass(frozen=True)
class InputRef:
    """Where a forward input of the new call comes from, relative to the replaced node.

    "arg" (`index`) / "kw" (`keyword`): an argument of the original call; "receiver": the object
    of a method call; "left" / "right": binary operands; "operand": a unary one (`-y`); "target": an augmented assignment's
    target; "elements" / "star": the items of the list argument `inner`, or `*inner`.
    """

    kind: RefKind
    index: int = 0
    keyword: str = ""
    inner: InputRef | None = None


@dataclass(frozen=True)
class Replace:
    """Replace the node at `span` by `self.<attr>(<inputs>)`.

    kind: "call" (a call or method call), "binop", "unaryop" (`-y`), "augassign" (the statement `a += b` becomes
    `a = self.add(a, b)`), "inplace" (the statement `a.add_(b)` becomes `a = self.add(a, b)`),
    "rename" (the attribute `self.act` at span becomes `self.<attr>`), "name" (the name at span
    becomes `<attr>`: a loop's `_` turned into its index), "enumerate" (the `for` loop whose
    target is at span runs over `enumerate(<its iterable>)`, with `<attr>` as the index).
    """

    kind: ReplaceKind
    span: Span
    attr: str
    inputs: tuple[tuple[InputRef, str | None], ...] = ()
    """Each input with the keyword to pass it by (None: positional)."""
    index: str = ""
    """Subscripts after `self.<attr>` (`[i]`): the copy an iteration of a loop calls."""
    via: str = ""
    """A "call" of a helper registered with `torch.fx.wrap`: `<via>(self.<attr>, <inputs>)`,
    its twin function given the module holding its ops ('' for `self.<attr>(<inputs>)`)."""


SUPER_INIT = "super().__init__()"
"""What a plain class becoming a module gets first in `__init__` (`promotion`)."""

TWIN_DOC = "`{}` as a module: its ops are submodules."
"""The docstring of a helper function's class, by which a later run knows it."""


@dataclass(frozen=True)
class HelperClass:
    """A helper function that forward reaches, added as an `nn.Module` beside it: the function
    stays as written (other callers, public API); the class's `forward` is its body with the
    plan's replacements, and its `__init__` creates the modules they call."""

    name: str
    base: str
    """How the file names `torch.nn.Module`."""
    function: str
    init: tuple[str, ...]
    """`self.<attr> = <Module>(...)` statements, in forward's order."""
    decorator: str = ""
    """The class's decorator ('' for none): timm's `register_notrace_module`, for a helper
    decorated `register_notrace_function`."""
    wrap: str = ""
    """For a helper registered with `torch.fx.wrap` (how the file names it): a twin function
    `<function>_ops(ops, ...)`, its body the helper's with its ops called on `ops` (the
    class's modules), is added after the class and registered the same way: calls in the
    helper's file, which fx keeps leaves, go through it; calls from other files, which fx
    traces through, call the class."""
    wrap_decorates: bool = False
    """Whether the helper is decorated with `torch.fx.wrap` (else registered by a call)."""

    @property
    def twin(self) -> str:
        """The name of the twin function of a helper registered with `torch.fx.wrap`."""
        return f"{self.function}_ops"


@dataclass
class Plan:
    replaces: list[Replace] = field(default_factory=list)
    inserts: dict[int, list[str]] = field(default_factory=dict)
    """Statement start line -> statements (source text) to insert right after it."""
    inserts_before: dict[int, list[str]] = field(default_factory=dict)
    """Statement start line -> statements to insert right before it (a new `__init__`)."""
    imports: list[str] = field(default_factory=list)
    """Import statements to add at the top of the module."""
    package: str = ""
    line_length: int = 88
    """The longest line new code may write (the file's ruff or black `line-length`)."""
    """The top-level package of the file ('' when unknown): its imports are first party."""
    import_names: dict[str, list[str]] = field(default_factory=dict)
    """Module -> names to add to the file's existing `from <module> import ...` statement."""
    helper_classes: dict[int, HelperClass] = field(default_factory=dict)
    """`def` line of a helper function -> the class to add after the top-level statement
    holding it."""
    module_bases: dict[int, str] = field(default_factory=dict)
    """`class` line of a plain class that becomes a module -> how the file names
    `torch.nn.Module`, its new base (`plain_modules`)."""
    twin_sources: dict[str, str] = field(default_factory=dict)
    """Qualified name of a twin class the rewrite imports that another file's rewrite in this
    run adds -> that file: this file must not be written unless that one is."""

    def insert_after(self, line: int, code: str) -> None:
        self.inserts.setdefault(line, []).append(code)

    def insert_before(self, line: int, code: str) -> None:
        self.inserts_before.setdefault(line, []).append(code)

    def __bool__(self) -> bool:
        return bool(
            self.replaces
            or self.inserts
            or self.inserts_before
            or self.imports
            or self.import_names
            or self.helper_classes
            or self.module_bases
        )


class Positions:
    """Convert `ast` positions (UTF-8 byte columns) to character columns."""

    def __init__(self, source: str) -> None:
        self.lines = source.split("\n")

    def column(self, line: int, byte_col: int) -> int:
        text = self.lines[line - 1]
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def segment(self, node: Located) -> str:
        """The source text of a node (what `ast.get_source_segment` returns, without re-splitting
        the source on every call)."""
        assert node.end_lineno is not None and node.end_col_offset is not None  # parsed: set
        first, last = node.lineno - 1, node.end_lineno - 1
        if first == last:
            line = self.lines[first]
            if line.isascii():
                return line[node.col_offset : node.end_col_offset]
            return line.encode()[node.col_offset : node.end_col_offset].decode()
        head = self.lines[first].encode()[node.col_offset :].decode()
        tail = self.lines[last].encode()[: node.end_col_offset].decode()
        return "\n".join([head, *self.lines[first + 1 : last], tail])

    def span(self, node: Located) -> Span:
        assert node.end_lineno is not None and node.end_col_offset is not None  # parsed: set
        return (
            node.lineno,
            self.column(node.lineno, node.col_offset),
            node.end_lineno,
            self.column(node.end_lineno, node.end_col_offset),
        )
