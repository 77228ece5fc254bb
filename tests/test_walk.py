"""The analysis' walks against plain references: `all_nodes` is `ast.walk` without the
Load/Store markers, `walk` visits in source order (pre-order, fields in order), `post_order`
numbers arguments before the call that takes them and an assignment's value before its
targets. Run over the fixtures, the examples and migrator's own sources."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from migrator.rewrite.order import post_order
from migrator.rewrite.walk import all_nodes, child_nodes, walk

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(
    [
        *(ROOT / "fixtures" / "cases").glob("*.before.py"),
        *(ROOT / "examples" / "models").glob("*.py"),
        *(ROOT / "migrator" / "rewrite").glob("*.py"),
    ]
)


def _pre_order(node: ast.AST) -> list[ast.AST]:
    found = []
    for child in child_nodes(node):
        found += [child, *_pre_order(child)]
    return found


def _post_order(node: ast.AST) -> list[ast.AST]:
    children = [node.value, *node.targets] if isinstance(node, ast.Assign) else child_nodes(node)
    return [n for child in children for n in [*_post_order(child), child]]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_walks_match_their_references(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    plain = [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]
    assert [id(n) for n in all_nodes(tree)] == [id(n) for n in plain]
    for function in (n for n in plain if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        body = [n for s in function.body for n in [s, *_pre_order(s)]]
        assert [id(v.node) for v in walk(function)] == [id(n) for n in body]
        expected: dict[int, int] = {}  # operators (`Eq()`) are one shared node each
        for node in (n for s in function.body for n in [*_post_order(s), s]):
            expected[id(node)] = len(expected)
        assert post_order(function) == expected
