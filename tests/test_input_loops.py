"""Ops run once an iteration of a loop whose trip count depends on the input become one module
serving every iteration; a helper method that runs more often than that keeps MIG110."""

from __future__ import annotations

import pytest

from migrator.findings import serves_every_iteration
from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project

NET = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Identity() for _ in range(2)])

    def forward(self, xs):
{body}
        return xs

    def helper(self, t):
        return torch.sigmoid(t)
"""


def _helper_findings(body: str) -> list[str]:
    source = NET.format(body="\n".join(" " * 8 + line for line in body.splitlines()))
    findings = fix_text(source, "net.py", Project()).findings
    return [
        f"{f.code} {'shared' if serves_every_iteration(f) else ''}".strip()
        for f in findings
        if f.message.startswith("torch.sigmoid")
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("for x in xs:\n    self.helper(x)", ["MIG001 shared"]),
        ("ys = [self.helper(x) for x in xs]", ["MIG001 shared"]),
        ("for x in xs:\n    for y in x.unbind(0):\n        self.helper(y)", ["MIG001 shared"]),
        # twice an iteration, or once more outside the loop: two runs an iteration
        ("for x in xs:\n    self.helper(x)\n    self.helper(x)", ["MIG110"]),
        ("self.helper(xs[0])\nfor x in xs:\n    self.helper(x)", ["MIG110"]),
        # a loop with a constant trip count, alone or around the run-time one
        ("for blk in self.blocks:\n    self.helper(blk(xs[0]))", ["MIG110"]),
        ("for blk in self.blocks:\n    for x in xs:\n        self.helper(blk(x))", ["MIG110"]),
        # a nested function or a `while` loop: any number of runs
        ("def f(t):\n    return self.helper(t)\n\nf(xs[0])", ["MIG110"]),
        ("while len(xs) > 3:\n    xs = xs[1:]\n    self.helper(xs[0])", ["MIG110"]),
    ],
)
def test_a_helper_method_in_a_run_time_loop(body, expected):
    assert _helper_findings(body) == expected


def test_once_an_iteration_holds_through_a_chain_of_methods():
    source = NET.replace(
        "    def helper(self, t):",
        "    def middle(self, t):\n        return self.helper(t)\n\n    def helper(self, t):",
    ).format(body=" " * 8 + "for x in xs:\n" + " " * 12 + "self.middle(x)")
    [finding] = fix_text(source, "net.py", Project()).findings
    assert finding.code == "MIG001" and "the loops that run `helper`" in finding.message
