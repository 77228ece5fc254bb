"""The analysis' walks against plain references: `all_nodes` is `ast.walk` without the
Load/Store markers, `walk` visits in source order (pre-order, fields in order), `post_order`
numbers arguments before the call that takes them and an assignment's value before its
targets. Run over the fixtures, the examples and migrator's own sources. A function's walk is
kept while the function lives, and only then."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from migrator.rewrite.order import post_order
from migrator.rewrite.walk import _WALKED, all_nodes, child_nodes, walk, walked

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


def test_a_walk_is_kept_while_its_function_lives():
    tree = ast.parse("def f(x):\n    return g(x) + 1\n\ndef h():\n    pass\n")
    f, h = tree.body
    assert isinstance(f, ast.FunctionDef) and isinstance(h, ast.FunctionDef)
    first = walked(f)
    assert walked(f) is first and walked(h) is not first
    assert [id(v.node) for v in first] == [id(v.node) for v in walk(f)]
    kept = len(_WALKED)
    del f, h, tree, first  # reference counting frees the tree, and its walks go with it
    assert len(_WALKED) == kept - 2
