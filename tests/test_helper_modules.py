"""Helper functions that become modules (MIG004): the runtime preparer agrees with the static
rewrite (what it would still convert in the migrated model is exactly what a finding reports),
the new modules hold no state, and a helper with another caller keeps working for it."""

from __future__ import annotations

import warnings

import pytest

from fixture_cases import FIXTURES, after_of, import_path
from migrator.rewrite.engine import check_text, fix_text
from migrator.rewrite.project import Project

torch = pytest.importorskip("torch")

HELPER_CASES = [
    "helper_called_twice",
    "helper_module_passed",
    "helper_name_taken",
    "helper_refused",
    "helpers_in_loops",
    "static_helpers",
]


def _prepared_sources(module) -> tuple[list[int], list[int]]:
    """(lines of the ops `prepare_model` converts, of its stateless modules it splits)."""
    from migrator.prove.prepare import prepare_model, prepare_report

    model = module.Model().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = prepare_report(prepare_model(model, example_inputs=module.example_inputs()))
    return [int(c.source.rsplit(":", 1)[1]) for c in report.converted], list(report.copies)


@pytest.mark.parametrize("name", HELPER_CASES)
def test_preparer_converts_only_what_a_finding_reports(name):
    """In the migrated model `prepare_model` converts an op only where the second `fix`
    reports why it stayed (MIG1xx); in the original it converted the helpers' ops too."""
    before = FIXTURES / "cases" / f"{name}.before.py"
    after = after_of(before)
    original, _ = _prepared_sources(import_path(before, f"helpers_before_{name}"))
    migrated, copies = _prepared_sources(import_path(after, f"helpers_after_{name}"))
    assert not copies
    assert len(migrated) < len(original)
    findings = fix_text(after.read_text(encoding="utf-8"), str(after), Project()).findings
    assert all(not f.fixable for f in findings)
    reported = {f.line for f in findings}
    assert set(migrated) <= reported, (migrated, findings)


def test_helper_modules_hold_no_state_and_the_function_keeps_its_callers():
    after = import_path(FIXTURES / "cases" / "helper_refused.after.py", "helpers_state")
    before = import_path(FIXTURES / "cases" / "helper_refused.before.py", "helpers_state_b")
    assert list(after.Gate().state_dict()) == []
    x = torch.randn(3, 4)
    assert torch.equal(after.score(x), before.score(x))  # the other caller: the function
    assert torch.equal(after.Gate()(x), before.gate(x))


def test_check_reports_what_fix_does():
    """`check` (no LibCST) gives the findings `fix` gives for the helper fixtures."""
    for name in HELPER_CASES:
        before = FIXTURES / "cases" / f"{name}.before.py"
        text = before.read_text(encoding="utf-8")
        assert (
            check_text(text, str(before), Project())
            == fix_text(text, str(before), Project()).findings
        )


STARRED_AND_KEYWORDS = """import torch
from torch import nn


def scale(x, factor=2.0, *, bias):
    return x * factor + bias


class Model(nn.Module):
    def forward(self, x, b: torch.Tensor):
        args = (x,)
        y = scale(x, 3.0, bias=b)
        return scale(*args, bias=y)
"""


def test_keywords_are_passed_on_and_starred_calls_stay():
    new, findings, _ = fix_text(STARRED_AND_KEYWORDS, "m.py", Project())
    assert "y = self.scale(x, 3.0, bias=b)" in new
    assert "return scale(*args, bias=y)" in new
    codes = sorted(f.code for f in findings)
    assert "MIG107" in codes and "MIG004" in codes
    namespace: dict = {}
    exec(compile(new, "m.py", "exec"), namespace)
    original: dict = {}
    exec(compile(STARRED_AND_KEYWORDS, "m.py", "exec"), original)
    x, b = torch.randn(2, 3), torch.randn(2, 3)
    assert torch.equal(namespace["Model"]()(x, b), original["Model"]()(x, b))


OVERRIDDEN_STATIC = """import torch
from torch import nn
import torch.nn.functional as F


class Base(nn.Module):
    @staticmethod
    def _act(x):
        return F.gelu(x)

    def forward(self, x):
        return self._act(x)


class Sub(Base):
    @staticmethod
    def _act(x):
        return F.relu(x)
"""


def test_a_static_method_a_subclass_overrides_stays():
    """`self._act(x)` in `Base` runs `Sub._act` on a `Sub`: it stays a call of the method."""
    new, findings, _ = fix_text(OVERRIDDEN_STATIC, "m.py", Project())
    assert new == OVERRIDDEN_STATIC
    assert [(f.line, f.code) for f in findings] == [(9, "MIG115"), (12, "MIG115")]
    assert "subclass `Sub` overrides `_act`" in findings[1].message


SCALAR_OPERAND = """import torch
from torch import nn


def double(x):
    return x * 2


class Model(nn.Module):
    def forward(self, x):
        return double(x)
"""


def test_an_op_on_the_tensor_first_parameter_and_a_number_converts():
    """`x * 2` in a helper given a tensor first: `x` is a tensor there, as in a forward."""
    new, findings, _ = fix_text(SCALAR_OPERAND, "m.py", Project())
    assert "return self.mul(x, 2)" in new and "return self.double_1(x)" in new
    assert [f.code for f in findings] == ["MIG002", "MIG004"]
