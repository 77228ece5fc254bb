"""The names a module's top level binds more than once (`project._rebound`): a `global`
statement in a function counts as a binding wherever it may start, and a name like
`global_pool` does not make the functions be read."""

from __future__ import annotations

import ast

import pytest

from migrator.rewrite.project import _rebound


@pytest.mark.parametrize(
    ("source", "rebound"),
    [
        ("def act(x):\n    return x\n\nact = abs\n", {"act"}),
        ("def f():\n    global g\n    g = 2\n\ng = 1\n", {"g"}),
        ("def f():\n    if True: global g\n    g = 2\n\ng = 1\n", {"g"}),
        ("def f():\n    x = 1; global g\n    g = 2\n\ng = 1\n", {"g"}),
        ("global_pool = 'avg'\n\ndef f():\n    global_pool = 2\n", set()),
        ("def f():\n    pass\n\ng = 1\n", set()),
        ("x = 'global_pool'  # global g\n\ndef f():\n\tglobal g\n\tg = 2\n\ng = 1\n", {"g"}),
        ("def f():\n    if True:\t global g\n    g = 2\n\ng = 1\n", {"g"}),
    ],
)
def test_top_level_names_bound_again(source, rebound):
    assert _rebound(ast.parse(source), source) == rebound
    assert _rebound(ast.parse(source), None) == rebound  # without the text: everything read
