"""Operators are rewritten only where an operand is known to be a tensor."""

from __future__ import annotations

import textwrap

import pytest

from migrator.rewrite.engine import check_text
from migrator.rewrite.project import Project

TEMPLATE = """
import torch
import torch.nn as nn
from typing import Dict, List, Optional, Tuple, Union


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


def findings(signature: str, body: str) -> list[str]:
    """`CODE label` of each op finding (converted, in a loop, or unproven) in `forward`."""
    source = TEMPLATE.format(
        signature=signature, body=textwrap.indent(textwrap.dedent(body), " " * 8)
    )
    return sorted(
        f"{f.code} {f.message.split(' -> ')[0].split(' runs ')[0].split(' on ')[0]}"
        for f in check_text(source, "m.py", Project())
        if f.code in ("MIG002", "MIG105", "MIG114")
    )


# Each proof beside the same text on sizes: an op on tensors is converted (or, in a loop,
# reported as such), the same op on ints is left alone with no finding at all.
@pytest.mark.parametrize(
    "signature, body, expected",
    [
        ("self, x, fs: List[torch.Tensor]", "return fs[0] * 2", ["MIG002 `*`"]),
        ("self, x, fs: List[int]", "return x[: fs[0] * 2]", []),
        ("self, x, d: Dict[str, torch.Tensor]", "return d['a'] + 1", ["MIG002 `+`"]),
        ("self, x, d: Dict[str, int]", "return x[: d['a'] + 1]", []),
        (
            "self, x, f: Union[torch.Tensor, List[torch.Tensor]]",
            "return f[:, 1:] - 1",
            ["MIG002 `-`"],
        ),
        (
            "self, x, f: Tuple[torch.Tensor, int]",
            "a, n = f\nreturn a * 2, x[: n * 2]",
            ["MIG002 `*`"],
        ),
        ("self, x, f: Tuple[torch.Tensor, int]", "f = (f[0], 2)\nreturn f[0] * 2", ["MIG114 `*`"]),
        ("self, x", "for t in x.unbind(0):\n    x = t + 1\nreturn x", ["MIG002 `+`"]),
        ("self, x", "for s in x.shape:\n    n = s + 1\nreturn x[:n]", []),
        ("self, x", "for i, t in enumerate(x.chunk(2)):\n    y = t * i\nreturn y", ["MIG002 `*`"]),
        ("self, x", "for i, s in enumerate(x.shape):\n    y = s * i\nreturn x[:y]", []),
        (
            "self, x",
            "for a, b in zip(x.chunk(2), x.chunk(2)):\n    y = a - b\nreturn y",
            ["MIG002 `-`"],
        ),
        ("self, x", "for a, b in zip(x.shape, (1, 2)):\n    y = a - b\nreturn x[:y]", []),
        ("self, x", "ys = [t.sum() for t in x.unbind(1)]\nreturn ys", ["MIG002 .sum()"]),
        ("self, x", "ys = [s // 2 for s in x.shape]\nreturn x[: ys[0]]", []),
        ("self, x", "a, b = x.chunk(2)\nreturn a + b", ["MIG002 `+`"]),
        ("self, x", "a, b = x.shape[:2]\nreturn x[: a + b]", []),
        ("self, x", "m = x > 0\nreturn m * 2", ["MIG002 `*`"]),
        ("self, x", "m = x.shape[0] > 0\nreturn x[: m * 2]", []),
        ("self, x", "return x[: x.shape[0] + 1]", []),
        ("self, x", "n = len(x) + int(x.size(1))\nreturn x[: n - 1]", []),
        ("self, x", "h = max(x.shape[-1], 7)\nreturn x[: h - 1]", []),
        ("self, x, h: torch.Tensor", "return max(h, x) - 1", ["MIG114 `-`"]),
        ("self, x", "s = (x.shape[0], 2)\nreturn x[: s[0] // s[1]]", []),
        ("self, x", "s = (x, 2)\nreturn s[0] // s[1]", ["MIG114 `//`"]),
        (
            "self, x",
            "ps = []\nps.append(x.sum(0))\nreturn ps[0] * 2",
            ["MIG002 .sum()", "MIG002 `*`"],
        ),
        ("self, x", "ps = []\nps.append(x.shape[0])\nreturn x[: ps[0] * 2]", []),
        ("self, x", "ps = [x.shape[0]]\nps.append(x)\nreturn ps[0] * 2", ["MIG114 `*`"]),
        ("self, x", "def f(t) -> int:\n    return t.shape[0]\nreturn x[: f(x) + 1]", []),
        (
            "self, x",
            "def f(t) -> torch.Tensor:\n    return t\nreturn f(x.sum(0)) + 1",
            ["MIG002 .sum()", "MIG002 `+`"],
        ),
        # a nested function only ever called here takes what its calls pass (its parameters
        # told apart from the enclosing function's names); given a tensor, its op is one
        # module for every call (MIG105)
        ("self, x", "def f(n):\n    return n * 2\nreturn x[: f(x.shape[0])]", []),
        (
            "self, x",
            "def f(n):\n    return n * 2\nreturn f(x.shape[0]) + f(x)",
            ["MIG105 `*`", "MIG114 `+`"],
        ),
        (
            "self, x",
            "def f(n):\n    return n * 2\ng = f\nreturn x[: g(x.shape[0])]",
            ["MIG114 `*`"],
        ),
        ("self, x", "def f(n):\n    return n * 2\nreturn x[: f(*x.shape[:1])]", ["MIG114 `*`"]),
        ("self, x", "def f(n, k=2):\n    return n * k\nreturn x[: f(x.shape[0])]", []),
        (
            "self, x",
            "n = x.sum()\ndef f(n):\n    return n * 2\nreturn x[: f(x.shape[0])] * n",
            ["MIG002 .sum()", "MIG002 `*`"],
        ),
        (
            "self, x",
            "def f(ps):\n    ps.append(x.sum())\n    return ps[-1] * 2\nreturn x + f([])",
            ["MIG002 `+`", "MIG105 .sum()", "MIG114 `*`"],
        ),
        ("self, x", "n = -1\nm = min(n + 1, x.shape[0])\nreturn x[: m * 2]", []),
        # settings of submodules built once in `__init__`
        ("self, x", "kh, kw = self.conv.kernel_size\nreturn x[: kh * kw]", []),
        ("self, x", "return x[: self.conv.out_channels - 1]", []),
        ("self, x", "return x[: self.conv.weight - 1]", ["MIG114 `-`"]),
    ],
)
def test_proofs_beside_sizes(signature, body, expected):
    assert findings(signature, body) == sorted(expected)


def test_sizes_kept_in_a_dict_are_sizes():
    """Keys and items of a dict filled with sizes are sizes (timm's NaFlexViT groups samples by
    grid size); a dict also filled with a tensor is not."""
    body = """
    groups = {}
    for i, size in enumerate(x.shape[-2:]):
        if size not in groups:
            groups[size] = []
        groups[size].append(i)
    for h, members in groups.items():
        x = x[: h * len(members)]
    return x
    """
    assert findings("self, x", body) == []
    assert findings("self, x", body.replace("append(i)", "append(x)")) == ["MIG114 `*`"]


def test_unannotated_function_returns_what_its_returns_are():
    """A function of the file without a return annotation returns a tensor when every `return`
    gives one, sizes when none holds a tensor (`h * w` stays), or when given sizes none of its
    returns holds one (`either(x.shape) * 3` stays), else nothing known (MIG114,
    `test_helper_result_given_sizes`)."""
    source = """
import torch
import torch.nn as nn


def sizes(c):
    return [(int(h), int(w)) for h, w in zip(c[0], c[1])]


def ramp(n):
    return torch.arange(n).float()


def either(c):
    return c


class M(nn.Module):
    def forward(self, x):
        for h, w in sizes(x):
            x = x[: h * w]
        return x + ramp(4) * 2 + either(x.shape) * 3
"""
    found = sorted(
        f"{f.line}: {f.code} {f.message.split(' -> ')[0].split(' on ')[0]}"
        for f in check_text(source, "m.py", Project())
        if f.code in ("MIG002", "MIG105", "MIG114")
    )
    assert found == ["22: MIG002 `*`", "22: MIG002 `+`", "22: MIG002 `+`"]


HELPER = """
import torch
import torch.nn as nn


def padding(x: int, k: int):
    if isinstance(x, torch.Tensor):
        return torch.clamp(k - x, min=0)
    return max(k - x, 0)


def rebound(x: int, k: int):
    x = x * 1
    if isinstance(x, torch.Tensor):
        return torch.clamp(k - x, min=0)
    return max(k - x, 0)


def made(x, k=torch.ones(1)):
    return k


class M(nn.Module):
    def forward(self, x):
        h = x.shape[-1]
        return x + {call} * 2
"""


@pytest.mark.parametrize(
    "call, expected",
    [
        ("padding(h, 3)", ["MIG002 `+`"]),  # the branch for a tensor does not run for a size
        ("padding(x, 3)", ["MIG002 `+`", "MIG114 `*`"]),  # given a tensor, it may run
        ("rebound(h, 3)", ["MIG002 `+`", "MIG114 `*`"]),  # `x` rebound: the test proves nothing
        ("made(h)", ["MIG002 `+`", "MIG114 `*`"]),  # a default that is no constant
    ],
)
def test_helper_result_given_sizes(call, expected):
    """A helper without a return annotation returns a size when given sizes and every `return`
    that may then run gives one (timm's `get_same_padding`)."""
    found = sorted(
        f"{f.code} {f.message.split(' -> ')[0].split(' on ')[0]}"
        for f in check_text(HELPER.format(call=call), "m.py", Project())
        if f.code in ("MIG002", "MIG114")
    )
    assert found == sorted(expected)


def test_helper_call_asked_again_as_its_argument_is_typed():
    """A helper call whose first argument is proven a tensor only by a later pass of the
    fixpoint (`z`, bound after the call) counts as a module call then: what it returns is a
    tensor, so `y - 1` converts (the helper each call runs is looked up once, its argument asked
    each time)."""
    source = textwrap.dedent(
        """
        import torch.nn as nn


        def double(t):
            return t * 2


        class M(nn.Module):
            def forward(self, x):
                for i in range(2):
                    if i:
                        y = double(z)
                    z = x.relu()
                return y - 1
        """
    )
    found = [(f.line, f.code) for f in check_text(source, "m.py", Project()) if f.line in (13, 15)]
    assert found == [(13, "MIG004"), (15, "MIG002")]
