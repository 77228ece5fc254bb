"""The text edits (`splice.py`) write exactly what the LibCST codemod writes: every fixture and
a set of layouts around parentheses, comments and line breaks give the same text both ways,
and the plain cases are indeed edited as text."""

from __future__ import annotations

import ast

import pytest
from fixture_cases import CASES

from migrator.rewrite import codemod
from migrator.rewrite.edit import applied, apply
from migrator.rewrite.engine import plan_text
from migrator.rewrite.project import Project
from migrator.rewrite.regions import regions
from migrator.rewrite.splice import by_line, splice

MODEL = """import torch
import torch.nn as nn
import torch.nn.functional as F

from migrator.nn import Add, Mul


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)  # a comment (with parentheses)
        # a comment line after the last statement

    def forward(self, x):
        y = self.fc(x)
{body}
        return y
"""

BODIES = {
    "plain": "        y = F.relu(y)",
    "grouped_arg": "        y = F.relu((y))",
    "grouped_arg_spaced": "        y = F.relu(( y ))",
    "grouped_binop": "        y = (y + x) * x",
    "double_grouped_binop": "        y = ((y + x))",
    "binop_sole_arg": "        y = torch.sigmoid((y + x))",
    "binop_plain_arg": "        y = torch.sigmoid(y + x)",
    "space_before_args": "        y = F.relu (y)",
    "grouped_call": "        y = (F.relu(y))",
    "grouped_receiver": "        y = (y).relu()",
    "binop_receiver": "        y = (y + x).sigmoid()",
    "list_items": "        y = torch.cat([(y), y + x], dim=1)",
    "tuple_items": "        y = torch.cat((y, (x)), 1)",
    "grouped_hyper_parameter": "        y = F.leaky_relu(y, negative_slope=(0.1))",
    "keyword_input": "        y = F.softmax(input=y, dim=-1) * (x)",
    "nested": "        y = F.gelu(y * torch.tanh(x)) - x",
    "chain": "        y = y.relu().sigmoid()",
    "trailing_comment": "        y = F.relu(y)  # relu (kept) )",
    "conditional": "        y = F.relu(y) if self.training else F.gelu(y)",
    "multiline_call": "        y = F.relu(\n            y\n        )",
    "multiline_grouped_binop": "        y = torch.sigmoid(\n            (y + x)\n        )",
    "parentheses_on_other_lines": "        y = torch.sigmoid((\n            y + x\n        ))",
    "multiline_list": "        y = torch.cat([\n            y,  # first\n            x,\n        ], 1)",
    "semicolon": "        z = x; y = F.relu(z)",
    "f_string": '        y = F.relu(y) if f"{x}" else y',
    "augassign": "        y += F.relu(x)",
    "augassign_grouped": "        y += (x * x)",
    "inplace_method": "        y = y * 1.5\n        y.mul_(x)",
    "in_branch": "        if self.training:\n            y = F.relu(y)\n        else:\n            y = y + x",
    "in_loop_header": "        for _ in range(2):\n            y = self.fc(y)\n        y = F.relu(y)",
    "backslash": "        y = F.relu(y) + \\\n            x",
    "module_grouped_binop": "        y = self.fc((y + x))",
    "module_binop": "        y = self.fc(y + x)",
    "module_binop_and_keyword": "        y = self.fc((y + x), )",
    "module_parentheses_on_other_lines": "        y = self.fc((\n            y + x\n        ))",
    "module_parenthesis_on_next_line": "        y = self.fc((y + x\n        ))",
    "module_parenthesis_on_line_before": "        y = self.fc((\n            y + x))",
    "module_grouped_binop_own_line": "        y = self.fc(\n            (y + x)\n        )",
    "comment_line_after": "        y = F.relu(y)\n        # a comment\n\n        y = y * x",
    # copies indexed by the loop, its header unchanged: `self.relu[i](y)`
    "loop_copies": "        for i in range(2):\n            y = F.relu(y)",
    # past the line length once rewritten: the codemod lays the call out again
    "long_line": "        y = F.relu(y) * torch.sigmoid(x) + F.gelu(y) * torch.tanh(x) - F.silu(y)",
    "long_line_comment": "        y = F.relu(y) * x  # a comment taking the line past the line length",
}


def _both(source: str) -> tuple[str, str]:
    _, plan, _ = plan_text(source, "net.py", Project())
    tree = ast.parse(source)
    return apply(source, plan, tree), apply(source, plan, tree, text_edits=False)


@pytest.mark.parametrize("name", sorted(BODIES))
def test_text_edits_write_what_the_codemod_writes(name):
    edited, rewritten = _both(MODEL.format(body=BODIES[name]))
    assert edited == rewritten
    assert edited != MODEL.format(body=BODIES[name])


def test_every_layout_in_one_file():
    body = "\n".join(BODIES.values())
    edited, rewritten = _both(MODEL.format(body=body))
    assert edited == rewritten


@pytest.mark.parametrize("case", CASES, ids=[c.name.removesuffix(".before.py") for c in CASES])
def test_fixtures_edited_as_the_codemod_does(case):
    edited, rewritten = _both(case.read_text(encoding="utf-8"))
    assert edited == rewritten


def test_plain_regions_are_text_edits():
    source = MODEL.format(body=BODIES["plain"] + "\n        y = torch.sigmoid((y))")
    _, plan, _ = plan_text(source, "net.py", Project())
    lines = source.split("\n")
    parts = regions(plan, ast.parse(source), lines)
    spliced = [splice(lines, r, plan, by_line(plan)) for r in parts]
    assert parts and all(s is not None for s in spliced)
    assert "        y = self.relu(y)\n        y = self.sigmoid(y)\n" in "".join(
        s.text({}) for s in spliced if s is not None
    )


def test_multiline_call_is_left_to_the_codemod():
    source = MODEL.format(body=BODIES["multiline_call"])
    _, plan, _ = plan_text(source, "net.py", Project())
    lines = source.split("\n")
    forward = [r for r in regions(plan, ast.parse(source), lines) if r.start > 12]
    assert forward and all(splice(lines, r, plan, by_line(plan)) is None for r in forward)


def test_new_imports_of_a_plain_file_need_no_libcst(monkeypatch):
    source = MODEL.replace("from migrator.nn import Add, Mul\n", "").format(
        body="        y = y + x"
    )
    _, plan, _ = plan_text(source, "net.py", Project())
    tree = ast.parse(source)
    rewritten = apply(source, plan, tree, text_edits=False)

    def no_codemod(*args):
        raise AssertionError("the codemod rewrote a region")

    monkeypatch.setattr("migrator.rewrite.codemod.rewrite", no_codemod)
    edited = apply(source, plan, tree)
    assert edited == rewritten
    assert "import torch.nn.functional as F\nfrom migrator.nn import Add\n" in edited


@pytest.mark.parametrize("case", CASES, ids=[c.name.removesuffix(".before.py") for c in CASES])
def test_top_level_statements_are_those_of_the_new_text(case):
    """What `applied` says of the new text's top-level statements (read by the unused-import
    step instead of parsing the whole text) is what parsing it gives."""
    source = case.read_text(encoding="utf-8")
    _, plan, _ = plan_text(source, "net.py", Project())
    text, top = applied(source, plan, ast.parse(source))
    assert top is not None
    parsed = [s for s in ast.parse(text).body if not hasattr(s, "body")]
    placed = [p for p in top if not hasattr(p.node, "body")]
    assert [(type(p.node), p.first, p.last) for p in placed] == [
        (type(s), s.lineno, s.end_lineno) for s in parsed
    ]


def test_only_the_statements_text_edits_cannot_make_go_to_the_codemod(monkeypatch):
    body = BODIES["plain"] + "\n" + BODIES["multiline_call"] + "\n        y = torch.sigmoid(y)"
    source = MODEL.format(body=body)
    _, plan, _ = plan_text(source, "net.py", Project())
    tree = ast.parse(source)
    given = []
    rewrite = codemod.rewrite

    def recorded(source, plan, parts, starts):
        given.append([(r.start, r.end) for r in parts])
        return rewrite(source, plan, parts, starts)

    monkeypatch.setattr(codemod, "rewrite", recorded)
    assert apply(source, plan, tree) == apply(source, plan, tree, text_edits=False)
    call = source.index("y = F.relu(\n")
    first = source[:call].count("\n") + 1
    assert given[0] == [(first, first + 2)]  # the call alone, not the statements around it
