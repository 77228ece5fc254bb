"""Property test of the rewrite: generated model classes mixing functionals, operators, tensor
methods, reused modules, in-place updates, loops, helpers and `# migrator: skip` pragmas. For
each: the output parses, a second run changes nothing, and the migrated model loads the
original's state_dict (strict) and returns bit-identical outputs."""

from __future__ import annotations

import pytest
from equivalence import assert_same_outputs, loaded_pair
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project

torch = pytest.importorskip("torch")

HEADER = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU({inplace})
        self.gelu = nn.GELU()
        self.fc = nn.Linear(4, 4){taken}

    def _block(self, y):{helper_pragma}
        return {helper}

    def forward(self, x):{forward_pragma}
"""

HELPERS = ["F.relu(y) + y", "self.act(y) * y", "self.gelu(y) - F.silu(y)"]
PRAGMA = "  # migrator: skip"
TAKEN_NAMES = [
    "",
    "\n        self.relu = nn.Identity()",
    "\n        self.add = 0.5",
    "\n        self.relu_1 = nn.Hardtanh()",
]
"""Attributes with the names the rewrite would pick first."""

# Each statement kind: (name, a, b) -> lines assigning `name` from earlier values a and b.
# Every value is a float tensor of shape (2, 4).
STATEMENTS = {
    "functional": lambda n, a, b: [f"{n} = F.relu({a})"],
    "functional_args": lambda n, a, b: [f"{n} = F.leaky_relu({a}, 0.1)"],
    "functional_kw": lambda n, a, b: [f"{n} = F.softmax({a}, dim=-1)"],
    "hardtanh": lambda n, a, b: [f"{n} = F.hardtanh({a}, -0.5, 0.5)"],
    "torch_fn": lambda n, a, b: [f"{n} = torch.sigmoid({a})"],
    "dropout": lambda n, a, b: [f"{n} = F.dropout({a}, p=0.5, training=self.training)"],
    "method": lambda n, a, b: [f"{n} = {a}.tanh()"],
    "mean": lambda n, a, b: [f"{n} = {a} - {a}.mean(dim=-1, keepdim=True)"],
    "add": lambda n, a, b: [f"{n} = {a} + {b}"],
    "mul_scalar": lambda n, a, b: [f"{n} = {a} * 0.5"],
    "nested": lambda n, a, b: [f"{n} = F.gelu({a} * torch.tanh({b})) - {b}"],
    "cat": lambda n, a, b: [f"{n} = torch.cat([{a}, {b}], dim=-1)[:, :4]"],
    "reused_act": lambda n, a, b: [f"{n} = self.act({a})"],
    "reused_gelu": lambda n, a, b: [f"{n} = self.gelu({a})"],
    "stateful": lambda n, a, b: [f"{n} = self.fc({a})"],
    "helper": lambda n, a, b: [f"{n} = self._block({a})"],
    "augassign_fresh": lambda n, a, b: [f"{n} = {a} * 2.0", f"{n} += {b}"],
    "augassign_alias": lambda n, a, b: [f"{n} = {a}", f"{n} += {b}"],
    "inplace_method": lambda n, a, b: [f"{n} = {a} * 1.5", f"{n}.mul_({b})"],
    "loop": lambda n, a, b: [f"{n} = {a}", "for _ in range(2):", f"    {n} = F.relu6({n})"],
    "augassign_existing": lambda n, a, b: [f"{a} += {b}", f"{n} = {a}"],
    "inplace_alias": lambda n, a, b: [f"{n} = {a}", f"{n}.add_({b})"],
    "inplace_functional": lambda n, a, b: [f"{n} = F.relu({a}, inplace=True)"],
    "inplace_method_stmt": lambda n, a, b: [f"{a}.sigmoid_()", f"{n} = {a} + 1.0"],
    "scalar_left": lambda n, a, b: [f"{n} = 1.0 - 2.0 * {a}"],
    "pow": lambda n, a, b: [f"{n} = {a} ** 2"],
    "matmul_weight": lambda n, a, b: [f"{n} = {a} @ self.fc.weight"],
    "torch_add_alpha": lambda n, a, b: [f"{n} = torch.add({a}, {b}, alpha=2)"],
    "method_chain": lambda n, a, b: [f"{n} = {a}.relu().sigmoid()"],
    "stack_sum": lambda n, a, b: [f"{n} = torch.stack([{a}, {b}]).sum(0)"],
    "comprehension": lambda n, a, b: [f"{n} = sum(F.relu(t) for t in ({a}, {b}))"],
    "branch": lambda n, a, b: [
        "if self.training:",
        f"    {n} = F.relu({a})",
        "else:",
        f"    {n} = torch.tanh({a}) + {b}",
    ],
}
KINDS = sorted(STATEMENTS) + ["reused_act", "reused_gelu", "stateful", "helper"] * 4
"""Module calls weigh more: a reused module needs two of them in one model."""


@st.composite
def model_sources(draw) -> str:
    names = ["x"]
    body = []
    for k in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(KINDS))
        name = f"v{k}"
        lines = STATEMENTS[kind](name, draw(st.sampled_from(names)), draw(st.sampled_from(names)))
        if draw(st.integers(0, 4)) == 0:
            lines[0] += PRAGMA
        body += lines
        names.append(name)
    body.append(f"return {names[-1]}, {draw(st.sampled_from(names))}")
    header = HEADER.format(
        inplace=draw(st.sampled_from(["", "inplace=True"])),
        taken=draw(st.sampled_from(TAKEN_NAMES)),
        helper=draw(st.sampled_from(HELPERS)),
        helper_pragma=draw(st.sampled_from(["", PRAGMA])),
        forward_pragma=PRAGMA if draw(st.integers(0, 9)) == 0 else "",
    )
    return header + "".join(f"        {line}\n" for line in body)


def _build(source: str) -> torch.nn.Module:
    namespace: dict = {}
    exec(compile(source, "<generated model>", "exec"), namespace)
    return namespace["Net"]().eval()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_sources())
def test_rewrite_parses_is_idempotent_and_equivalent(source):
    migrated = fix_text(source, "generated.py", Project()).text
    compile(migrated, "<migrated model>", "exec")
    again, findings, _ = fix_text(migrated, "generated.py", Project())
    assert again == migrated
    assert not [f for f in findings if f.fixable]

    original_model, migrated_model = loaded_pair(lambda: _build(source), lambda: _build(migrated))
    inputs = torch.randn(2, 4, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        expected = original_model(inputs.clone())
        actual = migrated_model(inputs.clone())
    assert_same_outputs(expected, actual)
