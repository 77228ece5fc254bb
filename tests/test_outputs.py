"""What a module of a class of the project returns, worked out from its `forward`: an in-place
op after it is rewritten only when every `return` gives its input unchanged or a new tensor."""

from __future__ import annotations

import textwrap

import pytest

from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project

SOURCE = """import torch
from torch import nn

CACHE = []


def passes(x, scale: float = 1.0):
    if scale == 1.0:
        return x
    return x * scale


def keeps(x):
    CACHE.append(x)
    return x


class Part(nn.Module):
{part}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)
        self.part = Part()

    def forward(self, x):
        y = self.part(self.conv(x))
        y += 1.0
        return y
"""


def _code(part: str) -> str:
    """The code of the finding on `y += 1.0` after `Part` (its class body given)."""
    text = SOURCE.format(part=textwrap.indent(textwrap.dedent(part).strip("\n"), "    "))
    findings = fix_text(text, "model.py", Project()).findings
    found = [f for f in findings if f.message.startswith("`+=`")]
    assert len(found) == 1, findings
    return found[0].code


FORWARD = "def forward(self, x):\n"


@pytest.mark.parametrize(
    "part",
    [
        FORWARD + "    return x",
        FORWARD + "    return x * 2.0",
        FORWARD + "    if not self.training:\n        return x\n    return x * 2.0",
        FORWARD + "    return torch.relu(x)",
        FORWARD + "    return x.relu()",
        FORWARD + "    return passes(x, 0.5)",
        FORWARD + "    n = x.shape[0] + x.ndim\n    return x * n",
        """
        def __init__(self):
            super().__init__()
            self.inner = nn.Identity()

        def forward(self, x):
            return self.inner(x)
        """,
    ],
)
def test_input_or_new_is_rewritten(part):
    assert _code(part) == "MIG002"


@pytest.mark.parametrize(
    "part",
    [
        FORWARD + "    return x[:, :2]",  # a view
        FORWARD + "    x.mul_(2.0)\n    return x",  # modified in place
        FORWARD + "    x = x * 2.0\n    return x",  # bound again
        FORWARD + "    self.last = x\n    return x",  # kept
        FORWARD + "    return keeps(x)",  # kept by the helper
        FORWARD + "    return torch.nn.functional.pad(x, [1, 1])[..., 1:-1, 1:-1]",
        FORWARD + "    return x.t()",
        FORWARD + "    y = x\n    return y",
        FORWARD + "    return (lambda: x)()",
        """
        def __init__(self):
            super().__init__()
            self.inner = nn.Identity()

        def forward(self, x):
            return self.inner(x)

        def swap(self, module):
            self.inner = module
        """,
        """
        def __init__(self):
            super().__init__()
            self.register_forward_hook(lambda module, args, out: args[0][:, :2])

        def forward(self, x):
            return x * 2.0
        """,
        """
        def forward(self, x):
            return x * 2.0

        def __call__(self, x):
            return x
        """,
        """
        forward = lambda self, x: x[:, :2]
        """,
    ],
)
def test_anything_else_stays(part):
    assert _code(part) == "MIG108"
