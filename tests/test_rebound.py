"""The names a module's top level binds more than once (`project._rebound`): a `global`
statement in a function or a method counts as a binding wherever it may start, and a name like
`global_pool` does not make the functions be read; the module-level names that may hold a
tensor (`names.collect`)."""

from __future__ import annotations

import ast

import pytest

from migrator.rewrite.names import collect
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
        ("def g(x):\n    return x\n\nclass M:\n    def f(self):\n        global g\n", {"g"}),
        ("def f():\n    global\\\n        g\n\ng = 1\n", {"g"}),
    ],
)
def test_top_level_names_bound_again(source, rebound):
    assert _rebound(ast.parse(source), source) == rebound
    assert _rebound(ast.parse(source), None) == rebound  # without the text: everything read


@pytest.mark.parametrize(
    ("source", "unknown"),
    [
        ("_T = None\n\ndef f():\n    global _T\n    _T = 1\n", {"_T"}),
        ("_T = None\n\nclass M:\n    def f(self):\n        global _T\n", {"_T"}),
        ("_T = None\nglobal_pool = 1\n", set()),
        (
            "_T = None\ntry:\n    def f():\n        global _T\nexcept ImportError:\n    pass\n",
            {"_T"},
        ),
        (
            "_T = None\nif True:\n    class M:\n        def f(self):\n            global _T\n",
            {"_T"},
        ),
        (
            "from .tables import TABLE\nfrom . import tables\nfrom torch import nn\n",
            {"TABLE", "tables"},
        ),
        ("import pkg.tables as t\nimport os\n", {"t"}),
    ],
)
def test_module_level_names_that_may_hold_a_tensor(source, unknown):
    """A name a function or method declares `global`, and a name imported from the module's
    own package, may hold a tensor (`ModuleNames.unknown`)."""
    assert collect(ast.parse(source), "pkg.net", False, source).unknown == unknown


@pytest.mark.parametrize(
    ("source", "constants"),
    [
        ("_A = 1\n_B = 2\n\ndef f():\n    globals()['_A'] = 3\n", {"_B"}),
        ("_A = 1\n_B = 2\n\ndef f():\n    del globals()['_B']\n", {"_A"}),
        ("_A = 1\n_B = 2\n\ndef f(k):\n    globals()[k] = 3\n", set()),
        ("_A = 1\n_B = 2\n\ndef f():\n    globals().update(_A=3)\n", set()),
        ("_A = 1\n_B = 2\n\ndef f():\n    g = globals()\n    g['_A'] = 3\n", set()),
        ("_A = 1\n_B = 2\n\ndef f():\n    globals().setdefault('_A', 3)\n", set()),
        (
            (
                "_A = 1\n_B = 2\n\ndef f():\n    if '_A' in globals():\n"
                "        return globals()['_A'] + globals().get('_B', 0)\n"
            ),
            {"_A", "_B"},
        ),
        ("_A = 1\n_B = 2\n# globals() is read nowhere\n", {"_A", "_B"}),
        ("import sys\n_A = 1\n_B = 2\n\ndef f():\n    sys.modules[__name__]._A = 3\n", {"_B"}),
        (
            "import sys\n_A = 1\n_B = 2\n\ndef f():\n    setattr(sys.modules[__name__], '_B', 3)\n",
            {"_A"},
        ),
        ("import sys\n_A = 1\n_B = 2\nm = sys.modules[__name__]\nm._A = 3\n", set()),
        ("import sys\n_A = 1\n_B = 2\nprint(sys.modules[__name__].__name__)\n", {"_A", "_B"}),
    ],
)
def test_names_bound_through_globals_are_no_constants(source, constants):
    """A name a `globals()` call or a store into `sys.modules[__name__]` may bind is no
    constant, nor is any when they may bind any name (a computed key, `update`, either handed
    on); reads of them bind nothing."""
    for text in (source, None):
        names = collect(ast.parse(source), "pkg.net", False, text)
        assert set(names.constants) & {"_A", "_B"} == constants
        assert names.unknown & {"_A", "_B"} == {"_A", "_B"} - constants
