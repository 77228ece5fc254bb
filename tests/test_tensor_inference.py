"""Operators are rewritten only where an operand is known to be a tensor."""

from __future__ import annotations

import textwrap

import pytest

from migrator.rewrite.engine import check_text
from migrator.rewrite.project import Project

TEMPLATE = """
import torch
import torch.nn as nn
from typing import List, Optional


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)
        self.scale = 0.5

    def forward({signature}):
{body}
"""


def converted(signature: str, body: str) -> list[str]:
    source = TEMPLATE.format(
        signature=signature, body=textwrap.indent(textwrap.dedent(body), " " * 8)
    )
    return [
        f.message.split(" -> ")[0]
        for f in check_text(source, "m.py", Project())
        if f.code == "MIG002"
    ]


@pytest.mark.parametrize(
    "signature, body, expected",
    [
        ("self, x", "return x + 1", ["`+`"]),
        ("self, x", "h, w = x.shape[-2:]\nreturn x.view(h * w)", []),
        ("self, x", "n = x.size(0) * 2\nreturn x[:n]", []),
        ("self, x", "return self.conv(x) * self.scale", ["`*`"]),
        ("self, x, H: int, W: int", "return x.reshape(H * W)", []),
        ("self, x, H, W", "return x.reshape(H * W)", []),
        ("self, feats: List[torch.Tensor]", "return feats + [feats[0]]", []),
        ("self, x", "xs = [x]\nreturn xs + xs", []),
        ("self, x, y: torch.Tensor", "return 2 * y", ["`*`"]),
        ("self, x, mask: Optional[torch.Tensor] = None", "return self.conv(x) + mask", ["`+`"]),
        ("self, x, mask: Optional[torch.Tensor] = None", "return mask * 2", ["`*`"]),
        ("self, x", "a, b = x.chunk(2, dim=1)\nreturn a * b", ["`*`"]),
        ("self, x", "name = 'a' + 'b'\nreturn x", []),
        ("self, x", "return x.sum() / x.numel()", ["`/`", ".sum()"]),
        ("self, x", "q = x.numel() // 2\nreturn x[q:]", []),
        ("self, x", "y = torch.zeros(3) + x\nreturn y.mean(-1)", ["`+`", ".mean()"]),
    ],
)
def test_tensor_operands(signature, body, expected):
    assert sorted(converted(signature, body)) == sorted(expected)


def test_constant_defaults_are_plain():
    """A parameter defaulted to a constant is a plain value, positional or keyword-only."""
    source = TEMPLATE.format(
        signature="self, x, scale=2, *, shift=1",
        body=" " * 8 + "return x * (scale + 1) + (shift + 1)",
    )
    assert [f.code for f in check_text(source, "m.py", Project()) if f.code == "MIG114"] == []
