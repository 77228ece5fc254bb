"""Walk a function's body in source order, knowing for every node whether it may run more than
once per call (loops, comprehensions, lambdas, nested functions) and which statement holds it.
A comprehension's `for` clauses are loops like `for` statements: its first iterable runs once,
in the enclosing scope."""

from __future__ import annotations

import ast
import weakref
from typing import NamedTuple

_REPEATING = frozenset({ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef})
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

_LOOPING = frozenset({ast.For, ast.AsyncFor, ast.While, ast.comprehension, *_COMPREHENSIONS})
"""Node classes whose children `walk` marks as repeated or looped; every other node's children
inherit its own marks."""
_STATEMENTS = frozenset(ast.stmt.__subclasses__())
"""The statement classes (each a direct subclass of `ast.stmt`): a set lookup is cheaper than
`isinstance`."""

Loop = ast.For | ast.comprehension
"""A `for` statement, or a `for` clause of a comprehension."""


class Visit(NamedTuple):
    node: ast.AST
    stmt: ast.stmt
    """The innermost statement holding the node."""
    repeated: bool
    """Inside a loop body, comprehension, lambda or nested function."""
    loops: tuple[Loop, ...] = ()
    """The `for` statements whose body, and comprehension clauses whose element or later
    clauses, hold the node, outermost first."""
    repeater: ast.AST | None = None
    """What repeats the node besides those loops (a lambda, nested function, `while` or
    `async` loop or clause; a loop whose target holds it), the outermost; None if nothing."""

    @property
    def other(self) -> bool:
        """Repeated by something else than `loops`."""
        return self.repeater is not None


_new = tuple.__new__
"""Builds a `Visit` from all its fields without the Python-level `__new__` a `NamedTuple`
has (a sixth of a walk)."""


def walk(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Visit]:
    """Every node below `func` (not `func` itself, nor the Load/Store markers), in source order,
    parents first."""
    visits: list[Visit] = []
    stack = [_visit(s, s, (), None) for s in reversed(func.body)]  # the visits to come
    pop, push, visit, node_class = stack.pop, stack.append, visits.append, ast.AST
    while stack:
        this = pop()
        visit(this)
        node, stmt, repeated, loops, other = this
        kind = node.__class__
        if kind not in _LOOPING:  # most nodes: their children in field order, pushed last first
            inner: ast.AST | None = other
            if kind in _REPEATING:
                inner, repeated = other or node, True
            for field in _REVERSED_FIELDS[kind]:
                value = getattr(node, field, None)
                if value.__class__ is list:
                    for child in reversed(value):
                        if isinstance(child, node_class):
                            held = child if child.__class__ in _STATEMENTS else stmt
                            push(_new(Visit, (child, held, repeated, loops, inner)))
                elif isinstance(value, node_class):  # a statement is always in a list
                    push(_new(Visit, (value, stmt, repeated, loops, inner)))
            continue
        children: list[Visit]
        if isinstance(node, ast.For):
            children = [
                _visit(node.target, stmt, loops, other or node),
                _visit(node.iter, stmt, loops, other),
                *(_visit(c, c, (*loops, node), other) for c in node.body),
                *(_visit(c, c, loops, other) for c in node.orelse),
            ]
        elif isinstance(node, (ast.AsyncFor, ast.While)):
            head = node.target if isinstance(node, ast.AsyncFor) else node.test
            children = [
                _visit(head, stmt, loops, other or node),
                *(
                    [_visit(node.iter, stmt, loops, other)]
                    if isinstance(node, ast.AsyncFor)
                    else []
                ),
                *(_visit(c, c, loops, other or node) for c in node.body),
                *(_visit(c, c, loops, other) for c in node.orelse),
            ]
        elif isinstance(node, _COMPREHENSIONS):
            children = []
            inner_loops, inner_other = loops, other
            for clause in node.generators:  # each clause runs once an iteration of the former
                children.append(_visit(clause, stmt, inner_loops, inner_other))
                if clause.is_async:
                    inner_other = inner_other or clause
                else:
                    inner_loops = (*inner_loops, clause)
            elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            children = [_visit(e, stmt, inner_loops, inner_other) for e in elements] + children
        else:
            assert isinstance(node, ast.comprehension)  # the last of `_LOOPING`
            looped = (*loops, node) if not node.is_async else loops
            children = [
                _visit(node.target, stmt, loops, other or node),
                _visit(node.iter, stmt, loops, other),
                *(
                    _visit(c, stmt, looped, other or (node if node.is_async else None))
                    for c in node.ifs
                ),
            ]
        stack.extend(reversed(children))
    return visits


def _visit(node: ast.AST, stmt: ast.stmt, loops: tuple[Loop, ...], other: ast.AST | None) -> Visit:
    """The visit of `node`, a child of a node held by `stmt` (or the statement `node` itself)."""
    held = node if node.__class__ in _STATEMENTS else stmt
    return _new(Visit, (node, held, bool(loops) or other is not None, loops, other))


_WALKED: weakref.WeakKeyDictionary[ast.AST, list[Visit]] = weakref.WeakKeyDictionary()
"""Function -> `walk` of it, while the function's tree is alive: the analyses of the files of a
run walk the same methods of the bases and siblings they read (the parse cache keeps their
trees). A walk holds the function's descendants, never the function itself, so an entry goes
with its tree."""


def walked(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Visit]:
    """`walk(func)`, once a process while `func` is alive (the list is shared: never change
    it)."""
    visits = _WALKED.get(func)
    if visits is None:
        visits = _WALKED[func] = walk(func)
    return visits


_INDEX: weakref.WeakKeyDictionary[ast.AST, dict[type, list[int]]] = weakref.WeakKeyDictionary()
"""Function -> node class -> where in `walked(func)` its nodes are, kept as `_WALKED`."""
_OF_KINDS: weakref.WeakKeyDictionary[ast.AST, dict[frozenset[type], list[Visit]]] = (
    weakref.WeakKeyDictionary()
)
"""Function -> node classes -> `of_kinds` of them, kept as `_WALKED`."""


def of_kinds(func: ast.FunctionDef | ast.AsyncFunctionDef, kinds: frozenset[type]) -> list[Visit]:
    """The visits of `walked(func)` whose node is of one of the classes `kinds`, in their order,
    found once a process per function and `kinds` while `func` is alive, from one pass over
    its walk sorting the visits by class: each pass reading a few classes of nodes
    (assignments, calls) goes over those alone (the list is shared: never change it)."""
    kept = _OF_KINDS.get(func)
    if kept is None:
        kept = _OF_KINDS[func] = {}
    found = kept.get(kinds)
    if found is None:
        visits = walked(func)
        index = _INDEX.get(func)
        if index is None:
            index = _INDEX[func] = {}
            for at, visit in enumerate(visits):
                kind = visit.node.__class__
                if kind in index:
                    index[kind].append(at)
                else:
                    index[kind] = [at]
        places = [index[kind] for kind in kinds if kind in index]
        if len(places) > 1:  # sorted runs: `sorted` merges them
            places = [sorted(at for each in places for at in each)]
        found = kept[kinds] = [visits[at] for at in places[0]] if places else []
    return found


def repeats(node: ast.AST) -> str:
    """Why a node that `node` repeats can run any number of times per call."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"it is in nested function `{node.name}`, which can run any number of times"
    if isinstance(node, ast.Lambda):
        return "it is in a lambda, which can run any number of times"
    if isinstance(node, ast.While):
        return "the trip count of a `while` loop is not fixed at `__init__` time"
    if isinstance(node, ast.AsyncFor) or isinstance(node, ast.comprehension) and node.is_async:
        return "the trip count of an `async for` is not fixed at `__init__` time"
    return "it is in a loop's target"


_LEAF_FIELDS = frozenset(
    {"ctx", "id", "attr", "arg", "name", "module", "level", "type_comment", "kind", "conversion"}
)
"""Fields that never hold a node (names, numbers, strings, Load/Store markers)."""


class _Fields(dict[type, tuple[str, ...]]):
    """Node class -> its fields that may hold nodes, worked out at the first lookup."""

    def __missing__(self, kind: type) -> tuple[str, ...]:
        leaves = _LEAF_FIELDS | ({"value"} if kind is ast.Constant else set())
        fields = self[kind] = tuple(f for f in kind._fields if f not in leaves)  # type: ignore[attr-defined]
        return fields


_FIELDS = _Fields()
_MIXED = frozenset({"names", "keys", "kw_defaults", "kwd_attrs"})
"""The list fields that may hold other things than nodes: names (`global a`), None (a `**`
in a dict, a keyword-only parameter without a default); every other list holds nodes alone."""


class _ReversedFields(dict[type, tuple[str, ...]]):
    """Node class -> `_FIELDS` of it, last first (`walk` pushes a node's children so)."""

    def __missing__(self, kind: type) -> tuple[str, ...]:
        fields = self[kind] = _FIELDS[kind][::-1]
        return fields


_REVERSED_FIELDS = _ReversedFields()


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes(node)` without the Load/Store markers, as a list (faster)."""
    children: list[ast.AST] = []
    for field in _FIELDS[type(node)]:
        value = getattr(node, field, None)
        if value.__class__ is list:
            children += (
                value if field not in _MIXED else [c for c in value if isinstance(c, ast.AST)]
            )
        elif isinstance(value, ast.AST):  # never a Load/Store marker: `ctx` is no field read
            children.append(value)
    return children


def all_nodes(root: ast.AST) -> list[ast.AST]:
    """`ast.walk(root)` as a list, in its order, without the Load/Store markers (twice as
    fast)."""
    found = [root]
    for node in found:  # grows while it is read: breadth first, as `ast.walk`
        for field in _FIELDS[type(node)]:
            value = getattr(node, field, None)
            if value.__class__ is list:
                found += (
                    value if field not in _MIXED else [c for c in value if isinstance(c, ast.AST)]
                )
            elif isinstance(value, ast.AST):  # never a Load/Store marker (see `child_nodes`)
                found.append(value)
    return found


def parents_of(root: ast.AST) -> dict[int, ast.AST]:
    """id(node) -> the node holding it, for each node under `root` (Load/Store markers aside)."""
    return {id(c): p for p in all_nodes(root) for c in child_nodes(p)}


def header_lines(stmt: ast.stmt) -> range:
    """Lines a `# migrator: skip` pragma on which applies to the statement's own expressions."""
    if isinstance(
        stmt,
        (
            ast.If,
            ast.For,
            ast.AsyncFor,
            ast.While,
            ast.With,
            ast.AsyncWith,
            ast.Try,
            ast.FunctionDef,
            ast.AsyncFunctionDef,
            ast.ClassDef,
        ),
    ):
        first = stmt.body[0].lineno if stmt.body else stmt.lineno + 1
        return range(stmt.lineno, max(first, stmt.lineno + 1))
    assert stmt.end_lineno is not None  # parsed: set
    return range(stmt.lineno, stmt.end_lineno + 1)
