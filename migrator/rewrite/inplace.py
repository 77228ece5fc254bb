"""When an in-place op (`a += b`, `a.add_(b)`) can become `a = self.add(a, b)`: the tensor `a`
holds must be fresh (made by an op that allocates) and seen by nothing else."""

from __future__ import annotations

import ast
from typing import Callable

from migrator.rewrite.walk import all_nodes, parents_of

# Reading these from a tensor does not share it.
_BENIGN_ATTRIBUTES = frozenset("shape dtype device ndim size dim numel is_contiguous".split())


Parents = dict[int, tuple[ast.AST, list[ast.stmt]]]
"""id(statement) -> (the node holding it, the block it is in): `block_parents`."""

Made = Callable[[ast.expr], "bool | ast.expr"]
"""What a value is made by: True for a call that returns a new tensor nothing else sees; for a
call that returns that or (a view of) its first input (`self.drop_path(x)`, an `nn.Identity`),
the expression of that input: the value is as fresh as it when nothing reads it afterwards;
False otherwise."""

Place = tuple[int, int]
"""(line, column) of a node."""

_Step = tuple[str, "Place | str | None"]
"""('safe', where the fresh value is assigned: the last such place when branches assign it),
('open', None): not decided by the statements walked, look further back; ('unsafe', why)."""


def inplace_unsafe(
    method: ast.FunctionDef,
    target: ast.expr,
    stmt: ast.stmt,
    made: Made,
    parents: Parents,
    in_place: Callable[[ast.expr], bool],
) -> str | None:
    """Why rebinding `target` instead of mutating it could be seen elsewhere (None: it
    cannot). Walks back from `stmt` through its block and the blocks around it to the
    assignment of the current value, which must allocate a new tensor that nothing else
    has read since (in each branch of an `if` that may assign it); a loop it walks out of
    carries the value round, so nothing else in its body may read it either. A value passed
    through a module that may return its input is as fresh as that input, when nothing reads
    the input afterwards. `parents`: `block_parents(method)`; `in_place`: whether a function
    changes its first argument in place (`torch.sigmoid_`), as an in-place method does."""
    if not isinstance(target, ast.Name):
        return "only a local name can be rebound"
    summed = isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, (ast.Add, ast.Mult))
    walk = _Walk(method, made, parents, summed, in_place)
    return walk.back(target.id, stmt, stmt)[1]


class _Walk:
    """The walk back of one in-place op."""

    def __init__(
        self,
        method: ast.FunctionDef,
        made: Made,
        parents: Parents,
        augmented: bool,
        in_place: Callable[[ast.expr], bool],
    ) -> None:
        self.method = method
        self.made = made
        self.parents = parents
        self.in_place = in_place
        self.augmented = augmented
        """The op is `x += y` or `x *= y`: on a number it rebinds `x` whatever the rewrite
        (and every toolkit's module takes a number first there)."""

    def back(self, name: str, start: ast.stmt, op: ast.stmt | None) -> tuple[Place | None, str]:
        """(where `name` was assigned its fresh value, '') walking back from `start`, or
        (None, why not). `op`: the in-place op, whose own uses of `name` a loop around it may
        hold (None: every use in such a loop counts)."""
        for prior, header_only in _statements_before(self.method, start, self.parents):
            if header_only:
                if _shares(prior, name, headers_only=True):
                    return None, "the value is read before, so it may be shared"
                if isinstance(prior, (ast.For, ast.AsyncFor, ast.While)) and _used_elsewhere(
                    prior, name, op
                ):
                    return None, (
                        "the loop around it also reads or assigns it: what that holds would "
                        "see the next iteration's op"
                    )
                continue
            verdict, found = self.step(prior, name, op)
            if verdict == "safe":
                assert isinstance(found, tuple)
                return found, ""
            if verdict == "unsafe":
                return None, str(found)
        return None, "its value is not assigned in this method"

    def step(self, prior: ast.stmt, name: str, op: ast.stmt | None) -> _Step:
        """What one statement before the op, run as a whole, tells of `name`'s value."""
        if _assigns(prior, name):
            assert isinstance(prior, ast.Assign)
            return self.value(prior, prior.value, name)
        if _mutation(prior, name, self.in_place) is not None:
            return "open", None  # an in-place op on the same tensor keeps it unshared
        if isinstance(prior, ast.If) and not _shares(prior.test, name):
            return self.branches(prior, name, op)
        if isinstance(prior, (ast.For, ast.AsyncFor, ast.While)) and _mutated_only(
            prior, name, self.in_place
        ):
            return "open", None  # changed in place at each iteration: the same tensor
        if _shares(prior, name):
            return "unsafe", "the value is read or assigned before, so it may be shared"
        return "open", None

    def branches(self, stmt: ast.If, name: str, op: ast.stmt | None) -> _Step:
        """An `if` before the op: safe when every branch proves the value fresh, open when
        the others leave it as it was."""
        places = []
        for body in (stmt.body, stmt.orelse):
            verdict: _Step = ("open", None)
            for prior in reversed(body):
                verdict = self.step(prior, name, op)
                if verdict[0] != "open":
                    break
            if verdict[0] == "unsafe":
                return verdict
            if isinstance(verdict[1], tuple):
                places.append(verdict[1])
        return ("safe", max(places)) if len(places) == 2 else ("open", None)

    def value(self, stmt: ast.Assign, value: ast.expr, name: str) -> _Step:
        """`name = value`: safe when it allocates; a module that may return its input passes
        on that input's freshness."""
        if isinstance(value, ast.BinOp) or (self.augmented and _number(value)):
            return "safe", _place(stmt)
        made = value if isinstance(value, ast.Name) else self.made(value)  # `y = x`: as `x`
        if made is True:
            return "safe", _place(stmt)
        if not isinstance(made, ast.expr):
            return "unsafe", (
                "its value does not provably come from an op that allocates a new tensor"
            )
        if not isinstance(made, ast.Name):
            return self.value(stmt, made, name)
        if made.id == name:
            return "open", None  # `x = self.drop_path(x)`: as fresh as `x` was
        found, why = self.back(made.id, stmt, None)
        if found is None:
            return "unsafe", f"it may be `{made.id}` itself, for which {why[:1].lower()}{why[1:]}"
        if read := _read_after(self.method, made, stmt, found, self.parents):
            return "unsafe", f"it may be `{made.id}` itself, which {read}"
        return "safe", _place(stmt)


def holds_number(
    method: ast.FunctionDef, target: ast.expr, stmt: ast.stmt, parents: Parents
) -> bool:
    """Whether `target` holds a number at `stmt` whatever ran before: the last statement before
    it that uses `target`, in no loop it walks out of, is `target = <int or float literal>`
    (`acc = 0` before `acc += m(x)`), so `+=` there rebinds it and the plain op is exact."""
    if not isinstance(target, ast.Name):
        return False
    for prior, header_only in _statements_before(method, stmt, parents):
        if header_only and isinstance(prior, (ast.For, ast.AsyncFor, ast.While)):
            return False  # an earlier iteration may have made it a tensor
        if _assigns(prior, target.id) and not header_only:
            assert isinstance(prior, ast.Assign)
            return _number(prior.value)
        if _shares(prior, target.id, headers_only=header_only):
            return False
    return False


def _number(value: ast.expr) -> bool:
    """An int or float literal (`acc = 0` before `acc += m(x)` in a loop)."""
    return isinstance(value, ast.Constant) and type(value.value) in (int, float)


def _place(node: ast.stmt | ast.expr) -> Place:
    return node.lineno, node.col_offset


def _read_after(
    method: ast.FunctionDef,
    passed: ast.Name,
    stmt: ast.stmt,
    assigned: Place,
    parents: Parents,
) -> str | None:
    """Why the tensor `passed` names may be read after `stmt` passes it on (None: it cannot):
    every other use of the name must come before `stmt` in the text, in no nested function,
    and within a loop around `stmt` not before `assigned`, where it was set."""
    loops = []
    current: ast.AST = stmt
    while id(current) in parents and current is not method:
        current = parents[id(current)][0]
        if isinstance(current, (ast.For, ast.AsyncFor, ast.While)):
            if (
                not _place(current)
                <= assigned
                <= (current.end_lineno or 0, current.end_col_offset or 0)
            ):
                return "a loop around it passes on again"
            loops.append({id(n) for n in all_nodes(current)})
    at = _place(stmt)
    nested = {
        id(n)
        for scope in all_nodes(method)
        if scope is not method
        and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        for n in all_nodes(scope)
    }
    for node in all_nodes(method):
        if not isinstance(node, ast.Name) or node.id != passed.id or node is passed:
            continue
        if id(node) in nested:
            return "a nested function reads"
        where = _place(node)
        if where >= at:
            return "is read again after"
        if where < assigned and any(id(node) in loop for loop in loops):
            return "a loop around it reads before assigning it again"
    return None


def _assigns(stmt: ast.stmt, name: str) -> bool:
    return (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id == name
    )


def block_parents(func: ast.FunctionDef) -> Parents:
    """Each statement (and `except` handler) below `func`: the node and block holding it."""
    parents: Parents = {}
    for node in all_nodes(func):
        for part in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, part, None)
            if isinstance(body, list):
                for child in body:
                    parents[id(child)] = (node, body)
    return parents


def _statements_before(func: ast.FunctionDef, stmt: ast.stmt, parents: Parents):
    """(statement, header only) pairs that run before `stmt`, nearest first: earlier statements
    of its block, then the statement holding that block (only its header runs before), then
    the earlier statements of the block around it, up to the function."""
    current: ast.AST = stmt
    while id(current) in parents:
        holder, body = parents[id(current)]
        index = next(i for i, s in enumerate(body) if s is current)
        for prior in reversed(body[:index]):
            yield prior, False
        if holder is func:
            return
        yield holder, True
        current = holder


def _shares(stmt: ast.AST, name: str, headers_only: bool = False) -> bool:
    """Whether `stmt` reads or stores `name` other than to look at its shape, size or type."""
    nodes = [stmt]
    if headers_only:  # a `with`'s `items` are a list of its items
        nodes = []
        for field in ("test", "iter", "target", "items", "subject"):
            value = getattr(stmt, field, None)
            nodes += value if isinstance(value, list) else [] if value is None else [value]
    for root in nodes:
        parents = parents_of(root)
        for node in all_nodes(root):
            if name in unnamed_binds(node):
                return True
            if isinstance(node, ast.Name) and node.id == name:
                parent = parents.get(id(node))
                if (
                    isinstance(parent, ast.Attribute)
                    and isinstance(node.ctx, ast.Load)
                    and parent.attr in _BENIGN_ATTRIBUTES
                ):
                    continue
                return True
    return False


def unnamed_binds(node: ast.AST) -> list[str]:
    """The names `node` binds with no `Name` node: a `def` or `class`, `except ... as e`, a
    `match` capture (`case Box() as b`, `*rest`, `**rest`), an import."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[0]]
    return []


def _used_elsewhere(
    loop: ast.For | ast.AsyncFor | ast.While, name: str, stmt: ast.stmt | None
) -> bool:
    """Whether the body of `loop`, which carries the value of `name` from one iteration to
    the next, uses `name` anywhere but in `stmt` (the in-place op, if given) and to look at
    its shape."""
    own = {id(n) for n in all_nodes(stmt)} if stmt is not None else set()
    for part in loop.body:
        parents = parents_of(part)
        for node in all_nodes(part):
            if id(node) not in own and name in unnamed_binds(node):
                return True
            if id(node) in own or not (isinstance(node, ast.Name) and node.id == name):
                continue
            parent = parents.get(id(node))
            if not (
                isinstance(parent, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and parent.attr in _BENIGN_ATTRIBUTES
            ):
                return True
    return False


def _mutated_only(
    loop: ast.For | ast.AsyncFor | ast.While, name: str, in_place: Callable[[ast.expr], bool]
) -> bool:
    """Whether the loop uses `name` only in statements of its body that change it in place
    and read it nowhere else (`for ck in self.convs: out += ck(x)`): the value after it is
    the value before it, and nothing else holds it."""
    if _shares(loop, name, headers_only=True) or any(_shares(s, name) for s in loop.orelse):
        return False
    for stmt in loop.body:
        if not _shares(stmt, name):
            continue
        read = _mutation(stmt, name, in_place)
        if read is None or any(_shares(n, name) for n in read):
            return False
    return True


def _mutation(
    stmt: ast.stmt, name: str, in_place: Callable[[ast.expr], bool]
) -> list[ast.expr] | None:
    """What else than `name` the statement reads when it is `name op= ...`, `name.op_(...)`
    or `f(name, ...)` for a function `f` changing its first argument in place (`in_place`:
    `torch.sigmoid_`); None for another statement."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.value] if stmt.target.id == name else None
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    func, keywords = call.func, [k.value for k in call.keywords]
    if (
        isinstance(func, ast.Attribute)
        and func.attr.endswith("_")
        and not func.attr.endswith("__")
        and isinstance(func.value, ast.Name)
        and func.value.id == name
    ):
        return [*call.args, *keywords]
    if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == name:
        return [*call.args[1:], *keywords] if in_place(func) else None
    return None
