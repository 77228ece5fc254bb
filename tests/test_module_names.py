"""The module-level names that may hold a tensor (`names.collect`'s `unknown`): those assigned
anything but literals, strings, containers and arithmetic of them, and those whose value reads
one of them, however long the chain and whatever the order of the assignments."""

from __future__ import annotations

import ast

from migrator.rewrite.names import collect

SOURCE = """
import torch
_TABLE = torch.arange(4)
_ALIAS = _TABLE
_NESTED = {"t": [_ALIAS]}
_LATE = _LATER
_LATER = _NESTED
_SCALE = 2.0
_BOTH = _SCALE * 2
_FN = lambda: _TABLE
_CALLS = [lambda: _TABLE]
_TWICE = 1
_TWICE = _SCALE
"""


def test_names_reading_a_tensor_may_hold_one():
    names = collect(ast.parse(SOURCE))
    assert names.unknown == {"_TABLE", "_ALIAS", "_NESTED", "_LATE", "_LATER", "_CALLS"}
