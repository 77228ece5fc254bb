"""When a tensor passed through a module that may return its input (`y = self.drop(h)`) is as
fresh as `h`: only when nothing can read `h` after the in-place op on `y`."""

from __future__ import annotations

import pytest

from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project

SOURCE = """import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, n: int):
{body}
"""


def _inplace(body: list[str]) -> str:
    """The code of the in-place op's finding, and its message after the op's label."""
    text = SOURCE.format(body="\n".join("        " + line for line in body))
    findings = fix_text(text, "model.py", Project()).findings
    found = [f for f in findings if f.message.startswith("`+=`")]
    assert len(found) == 1, findings
    return f"{found[0].code} {found[0].message.partition(': ')[2]}"


LOOP_READ = "MIG108 it may be `h` itself, which a loop around it reads before assigning it again"


@pytest.mark.parametrize(
    "body, expected",
    [
        (["h = self.conv(x)", "y = self.drop(h)", "y += 1.0", "return y"], "MIG002 "),
        (
            ["h = self.conv(x)", "y = self.drop(h)", "y += 1.0", "return y * h"],
            "MIG108 it may be `h` itself, which is read again after",
        ),
        (  # the lambda reads `h` when called, after the op
            ["f = lambda: h", "h = self.conv(x)", "y = self.drop(h)", "y += 1.0", "return f()"],
            "MIG108 it may be `h` itself, which a nested function reads",
        ),
        (  # the next iteration reads what the op changed, before `h` is assigned again
            [
                "h = x",
                "for _ in range(2):",
                "    x = x * h",
                "    h = self.conv(x)",
                "    y = self.drop(h)",
                "    y += 1.0",
                "return x",
            ],
            LOOP_READ,
        ),
        (
            [
                "for _ in range(2):",
                "    h = self.conv(x)",
                "    y = self.drop(h)",
                "    y += 1.0",
                "    x = y",
                "return x",
            ],
            "MIG002 ",
        ),
        (  # one branch reads `h` before assigning it: the last assignment of the two counts
            [
                "h = x",
                "for _ in range(2):",
                "    if n > 2:",
                "        h = self.conv(x)",
                "    else:",
                "        x = x + h",
                "        h = self.conv(x)",
                "    y = self.drop(h)",
                "    y += 1.0",
                "return x",
            ],
            LOOP_READ,
        ),
        (
            [
                "if n > 2:",
                "    x = self.conv(x)",
                "else:",
                "    x = self.drop(self.conv(x))",
                "x += 1.0",
                "return x",
            ],
            "MIG002 ",
        ),
        (
            ["y = self.conv(x)", "if n > 2:", "    y = y.view(-1)", "y += 1.0", "return y"],
            "MIG108 its value does not provably come from an op that allocates a new tensor",
        ),
    ],
)
def test_passed_through(body, expected):
    assert _inplace(body).startswith(expected)


def test_an_inplace_op_inside_a_with_block_walks_out_past_its_header():
    """The walk back from an in-place op inside a `with` reads the `with`'s items (a list in
    the tree): the check crashed on torch's `functional.py` before."""
    source = (
        "import torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        y = x * 2\n"
        "        with torch.no_grad(), torch.enable_grad():\n            y += 1\n"
        "        return y\n"
    )
    text = fix_text(source, "m.py", Project()).text
    assert "self.add(y, 1)" in text and "self.mul(x, 2)" in text
