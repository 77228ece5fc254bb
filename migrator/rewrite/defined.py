"""What a class statement alone tells: the names it defines or uses on `self` (a new module of
the class, or of a class of its family, may not take them: `taken`), and whether a method reads
a view of its submodules (`submodule_walks`). Read with a file's summary (`project.summarized`)
for every class of a file read from disk: a tenth of the parse then, a parse again later."""

from __future__ import annotations

import ast
import functools
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple, cast

from migrator.rewrite.walk import all_nodes

VIEWS = frozenset({"children", "named_children", "modules", "named_modules", "_modules", "apply"})
"""Reading these in a method means the class's behaviour may depend on its set of submodules."""
_VIEW_WORDS = ("children", "modules", ".apply")
"""One of them is in the text of each read of `VIEWS` (`self.modules`, `self.apply`)."""


class StatementFacts(NamedTuple):
    defined: frozenset[str]
    """`names_defined`."""
    views: bool
    """`reads_views`."""


def statement_facts(cls: ast.ClassDef, by_name: bool = True) -> StatementFacts:
    """`names_defined` and `reads_views` of `cls`, in one pass over its nodes."""
    names: set[str] = set()
    views = _scan(cls, all_nodes, names, True, by_name)
    return StatementFacts(frozenset(names), views)


def names_defined(
    cls: ast.ClassDef,
    nodes_of: Callable[[ast.FunctionDef], Iterable[ast.AST]] = all_nodes,
    by_name: bool = True,
) -> set[str]:
    """Attribute, method and class-level names a class defines or uses on `self` (`nodes_of`:
    the nodes of a method, or those of `SCANNED` from its walk when one is kept), also by name (`setattr(self, "relu",
    m)`, `self.add_module(...)`); the names an f-string naming one can make, as a glob pattern
    (`relu*`); with a name not known statically, every identifier the class spells as a
    string. Not `by_name`: its text names no attribute by name (`names_by_name`)."""
    names: set[str] = set()
    _scan(cls, nodes_of, names, False, by_name)
    return names


_BY_NAME_WORDS = (
    "setattr(",
    "getattr(",
    "hasattr(",
    "delattr(",
    "setattr__(",
    "getattr__(",
    "getattribute__(",
    "delattr__(",
    "vars(",
    "add_module(",
    "register_",
    "get_submodule(",
    "__dict__",
    "_modules",
    "_parameters",
    "_buffers",
)


@functools.lru_cache(maxsize=64)
def names_by_name(text: str | None) -> bool:
    """Whether `text` (None: not known) may name an attribute of `self` by a string."""
    return text is None or any(word in text for word in _BY_NAME_WORDS)


def reads_views(cls: ast.ClassDef, lines: Sequence[int] | None = None) -> bool:
    """Whether a method reads a view of `self`'s submodules (`self.modules`, `self.apply`,
    ...), which every walk of them does (`lines`, in order: those spelling a view word, when
    known; a method spanning none is passed over)."""
    methods = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef)}  # the last def
    for stmt in methods.values():
        if lines is not None:
            first = bisect_left(lines, stmt.lineno)
            if first == len(lines) or lines[first] > (stmt.end_lineno or stmt.lineno):
                continue
        for node in all_nodes(stmt):
            if isinstance(node, ast.Attribute) and node.attr in VIEWS and _self_attr(node):
                return True
    return False


@functools.lru_cache(maxsize=64)
def view_word_lines(text: str) -> tuple[int, ...] | None:
    """The numbers of the lines of `text` spelling a part of a view's name (`_VIEW_WORDS`), in
    order: a class none of whose lines does reads no view (None: not known, the text is not
    all ASCII, where an identifier may be spelled otherwise, or breaks lines with `\\r`)."""
    if not text.isascii() or "\r" in text:
        return None
    return tuple(lines_spelling(text, _VIEW_WORDS))


def lines_spelling(text: str, words: Sequence[str]) -> list[int]:
    """The numbers of the lines of `text` holding one of `words`, in order, each once."""
    starts = [at for word in words for at in occurrences(text, word)]
    lines: list[int] = []
    line, last = 1, 0
    for start in sorted(starts):
        line += text.count("\n", last, start)
        last = start
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def occurrences(text: str, literal: str) -> Iterator[int]:
    """Where `literal` starts in `text`, in order, overlapping ones too (`str.find` runs faster
    than a pattern of alternatives, or one not starting with a literal)."""
    at = text.find(literal)
    while at != -1:
        yield at
        at = text.find(literal, at + 1)


def word_start(text: str, end: int, floor: int = 0) -> int:
    """Where the run of word characters (`\\w*`) of `text` ending at `end` starts, not before
    `floor`."""
    start = end
    while start > floor and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    return start


def anchored_matches(
    pattern: re.Pattern[str], text: str, anchors: Sequence[tuple[str, int]]
) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)` for a pattern that never matches empty and whose every match
    starts `back` characters before an occurrence of `literal`, for one of its (`literal`,
    `back`) `anchors`: tried only there, where `str.find` finds them (a pattern starting with
    `\\b`, a lookbehind or alternatives is tried at every position of the text)."""
    starts = {at - back for literal, back in anchors for at in occurrences(text, literal)}
    end = 0
    for start in sorted(starts):
        if 0 <= start and start >= end and (found := pattern.match(text, start)) is not None:
            yield found
            end = found.end()


SCANNED = frozenset({ast.Attribute, ast.FunctionDef, ast.AsyncFunctionDef, ast.Call, ast.Subscript})
"""The node classes `names_defined` reads in a method (its `nodes_of` may give those alone)."""


def _scan(cls: ast.ClassDef, nodes_of, names: set[str], views: bool, by_name: bool = True) -> bool:
    """Add `names_defined` of `cls` to `names`; with `views`, whether it `reads_views`."""
    names |= class_level_names(cls)
    methods = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef)}  # the last def
    found = dynamic = False
    for stmt in cls.body:
        method = isinstance(stmt, ast.FunctionDef)
        nodes = nodes_of(stmt) if method else all_nodes(stmt)
        counts = views and isinstance(stmt, ast.FunctionDef) and methods[stmt.name] is stmt
        for node in nodes:
            kind = type(node)
            if kind is ast.Attribute and _self_attr(cast(ast.Attribute, node)):
                attr = cast(ast.Attribute, node).attr
                names.add(attr)
                found = found or (counts and attr in VIEWS)
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                names.add(cast(ast.FunctionDef, node).name)
            elif by_name and (kind is ast.Call or kind is ast.Subscript) and _may_name(node):
                for named in _named_attributes(node):
                    if isinstance(named, ast.Constant) and isinstance(named.value, str):
                        names.add(named.value)
                    elif _pattern(named).strip("*"):
                        names.add(_pattern(named))
                    else:
                        dynamic = True
                        if method and _given(cast(ast.FunctionDef, stmt), named, cls):
                            names.add(GIVEN)
    if dynamic:  # a name may be any of the class's strings (`for n in self.layer_names`)
        names |= {
            n.value
            for n in all_nodes(cls)
            if type(n) is ast.Constant and isinstance(n.value, str) and n.value.isidentifier()
        }
    return found


_NAMING_FUNCTIONS = frozenset({"setattr", "getattr", "hasattr", "delattr"})
_NAMING_METHODS = frozenset(
    {"add_module", "register_module", "register_buffer", "register_parameter", "get_submodule"}
)
_NAMING_DUNDERS = frozenset({"__setattr__", "__getattr__", "__getattribute__", "__delattr__"})
_NAMING_DICTS = frozenset({"__dict__", "_modules", "_parameters", "_buffers"})


def _may_name(node: ast.AST) -> bool:
    """A quick test before `_named_attributes`: the call's or subscript's name may be one."""
    func = node.func if type(node) is ast.Call else node.value  # type: ignore[attr-defined]
    kind = type(func)
    if kind is ast.Name:
        return cast(ast.Name, func).id in _NAMING_FUNCTIONS
    if kind is ast.Call:  # `vars(self)[<name>]`
        return _naming_dict(func)
    if kind is not ast.Attribute:
        return False
    attr = cast(ast.Attribute, func).attr
    return (
        attr in _NAMING_METHODS
        or attr in _NAMING_DICTS
        or attr in _NAMING_DUNDERS
        or _naming_dict(cast(ast.Attribute, func).value)
    )


def _naming_dict(node: ast.AST) -> bool:
    """Whether `node` is a dict of `self`'s attributes: `self.__dict__`, `self._modules`,
    `vars(self)`."""
    if isinstance(node, ast.Attribute):
        return node.attr in _NAMING_DICTS and _self_attr(node)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "vars"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "self"
    )


def _named_attributes(node: ast.AST) -> list[ast.expr]:
    """What names the attributes of `self` that `node` sets, reads or tests by name
    (`setattr(self, <name>, m)`, `object.__setattr__(self, <name>, m)`,
    `self.add_module(<name>, m)`, `self._modules[<name>]`, `self.__dict__.update(<name>=m)`);
    an expression other than a string (a dict, `**kw`) when they are not known; none for
    another node."""
    if isinstance(node, ast.Subscript):
        return [node.slice] if _naming_dict(node.value) else []
    assert isinstance(node, ast.Call)
    func, args = node.func, node.args
    if isinstance(func, ast.Name) and func.id in _NAMING_FUNCTIONS:
        return args[1:2] if args and isinstance(args[0], ast.Name) and args[0].id == "self" else []
    if not isinstance(func, ast.Attribute):
        return []
    if func.attr in _NAMING_METHODS:
        return args[:1] if _self_attr(func) else []
    if func.attr in _NAMING_DUNDERS:  # `self.__setattr__(n, m)`, `super().__setattr__(n, m)`
        on_self = _self_attr(func) or (
            isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
        )
        if on_self:
            return args[:1]
        return args[1:2] if args and isinstance(args[0], ast.Name) and args[0].id == "self" else []
    if not _naming_dict(func.value):
        return []
    named: list[ast.expr] = [  # `.update(relu=m)`, `.update({"relu": m})`, `.pop("relu")`
        ast.Constant(k.arg) if k.arg else k.value for k in node.keywords
    ]
    for arg in args[:1]:
        if isinstance(arg, ast.Dict):
            named += [k if k is not None else arg for k in arg.keys]
        else:
            named.append(arg)
    return named


def _pattern(name: ast.expr) -> str:
    """The names an f-string or a sum of strings can make, as a glob pattern (`f"relu{i}"`,
    `"relu" + str(i)`: `relu*`); `*` when no part is a string literal."""
    if isinstance(name, ast.JoinedStr):
        parts = name.values
    elif isinstance(name, ast.BinOp) and isinstance(name.op, ast.Add):
        return _pattern(name.left) + _pattern(name.right)
    else:
        parts = [name]
    return "".join(
        v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "*" for v in parts
    )


GIVEN = "<given>"
"""Taken by a class that sets an attribute by a name its caller gives
(`setattr(self, name, m)` with `name` a parameter, or read from one): any name may be."""


def _given(method: ast.FunctionDef, named: ast.expr, cls: ast.ClassDef) -> bool:
    """Whether the name `named`, in `method`, may come from a parameter of `method`, or from an
    attribute some method of `cls` sets from one of its parameters: read directly, through the
    method's local names and loop variables (`for n in self.names`), or through what those
    iterate; an index or slice of a container only picks among its items."""
    args = method.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} - {"self"}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    bound: dict[str, list[ast.expr]] = {}
    for node in ast.walk(method):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            bound.setdefault(node.target.id, []).append(node.iter)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
    todo, seen = [named], set()
    while todo:
        for read in _read(todo.pop()):
            if isinstance(read, ast.Attribute):
                if _set_from_parameters(cls, read.attr):
                    return True
            elif read.id in params:
                return True
            elif read.id not in seen:
                seen.add(read.id)
                todo += bound.get(read.id, [])
    return False


def _read(value: ast.expr) -> list[ast.Name | ast.Attribute]:
    """The names and `self.<attr>` that `value` reads, but in indices and slices and in
    `range(...)` and `len(...)`, which give numbers."""
    found: list[ast.Name | ast.Attribute] = []
    todo: list[ast.AST] = [value]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            found.append(node)
        elif isinstance(node, ast.Attribute) and _self_attr(node):
            found.append(node)
        elif isinstance(node, ast.Subscript):
            todo.append(node.value)
        elif not (  # numbers: a name made of digits is no identifier
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("range", "len")
        ):
            todo += ast.iter_child_nodes(node)
    return found


def _set_from_parameters(cls: ast.ClassDef, attr: str) -> bool:
    """Whether a method of `cls` sets `self.<attr>` to a value reading one of its parameters."""
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef):
            continue
        args = method.args
        params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} - {"self"}
        for node in ast.walk(method):
            if isinstance(node, ast.Assign) and any(
                _self_attr(t) and t.attr == attr
                for t in node.targets
                if isinstance(t, ast.Attribute)
            ):
                if any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(node.value)):
                    return True
    return False


def class_level_names(cls: ast.ClassDef) -> set[str]:
    """The methods, properties and class attributes a class statement defines."""
    names: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
    return names


def _self_attr(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id == "self"
