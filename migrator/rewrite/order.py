"""The order in which a class's forward path runs its ops and modules.

Code that walks a model's children (`named_children()`, `nn.Sequential(*model.children())`)
runs them in registration order. A module migrator creates must therefore be registered where
forward runs it: right after the existing module that runs before it. Keys compare in execution
order: a node's key is its method's entry key plus its post-order position in that method
(arguments run before the call that takes them), and a helper method's entry key is the key of
its first call from the forward path.
"""

from __future__ import annotations

import ast
from typing import Callable

from migrator.rewrite.walk import child_nodes

Key = tuple[int, ...]

LAST: Key = (1 << 30,)
"""Key of code whose place on the forward path is not known (runs through a subclass)."""


def post_order(func: ast.FunctionDef) -> dict[int, int]:
    """id(node) -> position in evaluation order, for every node below `func`."""
    positions: dict[int, int] = {}
    stack: list[tuple[ast.AST, bool]] = [(s, False) for s in reversed(func.body)]
    pop, push = stack.pop, stack.append
    while stack:
        node, expanded = pop()
        if expanded:
            positions[id(node)] = len(positions)
            continue
        children: list[ast.AST]
        if isinstance(node, ast.Assign):  # the value runs before the targets
            children = [node.value, *node.targets]
        else:
            children = child_nodes(node)
            if not children:  # a leaf: its place comes now
                positions[id(node)] = len(positions)
                continue
        push((node, True))
        stack += [(c, False) for c in reversed(children)]
    return positions


def entry_keys(
    methods: dict[str, ast.FunctionDef],
    calls: Callable[[ast.FunctionDef], list[tuple[str, ast.AST]]],
    positions: Callable[[ast.FunctionDef], dict[int, int]],
) -> dict[str, Key]:
    """Method name -> key of its first run on the forward path (forward: the empty key).
    `calls(method)`: the (method name, call node) of the class's own methods it calls."""
    keys: dict[str, Key] = {"forward": ()} if "forward" in methods else {}
    todo = list(keys)  # none for a plain class becoming a module: its held methods run last
    while todo:
        name = todo.pop()
        method = methods[name]
        order = positions(method)
        for callee, node in calls(method):
            key = keys[name] + (order[id(node)],)
            if callee in methods and (callee not in keys or key < keys[callee]):
                keys[callee] = key
                todo.append(callee)
    return keys


class ForwardOrder:
    """When the nodes of a class's methods run on its forward path."""

    def __init__(
        self,
        methods: dict[str, ast.FunctionDef],
        calls: Callable[[ast.FunctionDef], list[tuple[str, ast.AST]]],
        positions: Callable[[ast.FunctionDef], dict[int, int]],
    ) -> None:
        self._entries = entry_keys(methods, calls, positions)
        self._positions = positions

    def key(self, method: ast.FunctionDef, node: ast.AST) -> Key:
        """When `node` of `method` runs on the forward path."""
        entry = self._entries.get(method.name)
        return LAST if entry is None else entry + (self._positions(method)[id(node)],)
