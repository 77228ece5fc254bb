"""The searches that look for a literal first find what the patterns they stand for find
(`check` output must not change with them), and torch modules that cannot hold a name are
passed over without changing what a lookup finds."""

from __future__ import annotations

import re
from importlib.util import find_spec
from pathlib import Path

import pytest

from migrator.rewrite import defined, held_methods, mentions, names, outside_runs
from migrator.rewrite.project import Project, _torch_lacks

ROOT = Path(__file__).resolve().parent.parent
TRICKY = [
    "import a.b as c\nfrom x import (y as z, w  as  v)\n",
    "a as b as c",
    "x \\\n  as y",
    ".hidden as y",
    "é as f, _1 as g",
    "with open(p) as f, q as\\\nr: pass",
    "self.head.loss(x)\nmyself.a.b(y)\nself.a.b (z)\nself.x.y.z(1)\nself.p.q\n(2)",
    "xself.a.b(self.c.d(e))",
    "m = self.modules()\nfor c in self.named_children(): pass  # children\n",
    "globals()['A'] = 1",
    "register_globals = 1\nsys.modules\n",
    "x = 'sys.modules[__name__]'",
    "a.forward.forward\nsetattr(Block1, 'forward', f); setattr(Foo.forward)\nMyBlock.forward",
    "Bé.forward = f\nsetattr(Z‿1, 'forward', g)\nsetattr(",
    "",
]


def _texts() -> list[str]:
    files = sorted((ROOT / "migrator").rglob("*.py")) + sorted(
        (ROOT / "fixtures" / "cases").glob("*.py")
    )
    return TRICKY + [f.read_text(encoding="utf-8") for f in files]


def test_renamed_index_finds_what_the_pattern_finds():
    for text in _texts():
        assert mentions._renamed_in(text) == set(mentions._RENAMED.findall(text)), text[:80]


def test_attribute_calls_find_what_the_pattern_finds():
    for text in _texts():
        found = set(held_methods._ATTRIBUTE_CALL.findall(text))
        assert held_methods._called_on_attributes(text) == found, text[:80]


def test_globals_words_find_what_the_pattern_finds():
    for text in _texts():
        found = names._GLOBALS.search(text) is not None
        assert names._may_store_through_globals(text) == found, text[:80]


def test_words_at_forward_tell_which_names_are_spelled_bound():
    for text in _texts():
        before, after = outside_runs._words_at_forward(text)
        names_ = {w for w in re.findall(r"\w+", text)} | {"forward", "Block", "lock", "Z", "B"}
        for name in names_:
            spelled = f"{name}.forward" in text or f"setattr({name}" in text
            found = any(w.endswith(name) for w in before) or any(w.startswith(name) for w in after)
            assert found == spelled, (name, text[:80])


def test_view_word_lines_are_the_lines_spelling_a_view_word():
    pattern = re.compile(r"children|modules|\.apply")
    for text in _texts():
        lines = sorted({text.count("\n", 0, m.start()) + 1 for m in pattern.finditer(text)})
        known = text.isascii() and "\r" not in text
        assert defined.view_word_lines(text) == (tuple(lines) if known else None), text[:80]
    assert defined.view_word_lines("x = 1\r\nself.modules()\n") is None  # \r: not counted
    assert defined.view_word_lines("é = self.modules()\n") is None  # not ASCII


@pytest.mark.skipif(find_spec("torch") is None, reason="torch's sources are read")
def test_torch_modules_that_cannot_hold_a_name_are_passed_over():
    assert _torch_lacks("torch.ao.quantization.observer", "QuantStub")
    assert not _torch_lacks("torch.ao.quantization", "QuantStub")  # star imports
    assert not _torch_lacks("torch.ao.quantization.stubs", "QuantStub")  # defines it
    found = Project().find_class("torch.ao.quantization.QuantStub")
    assert found is not None and found.qualname == "torch.ao.quantization.stubs.QuantStub"
    assert Project().find_class("torch.ao.quantization.NoSuchStub") is None
