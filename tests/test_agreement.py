"""The static checker and the runtime preparer give the same answer from the same catalog rules:
what `migrator check` would rewrite, `prepare_model` converts, and what one refuses, so does the
other."""

from __future__ import annotations

import warnings

import pytest

from migrator.prove.prepare import prepare_model, prepare_report
from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project

torch = pytest.importorskip("torch")

INPLACE_ON_MODULE_OUTPUT = """import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = {module}

    def forward(self, x):
        y = self.act(x)
        y.add_(1)
        return y
"""


def _static_converts(source: str) -> bool:
    findings = fix_text(source, "model.py", Project()).findings
    codes = {f.code for f in findings}
    assert codes in ({"MIG002"}, {"MIG108"}), findings
    return codes == {"MIG002"}


def _runtime_converts(source: str) -> bool:
    namespace: dict = {}
    exec(compile(source, "model.py", "exec"), namespace)
    model = namespace["Model"]().eval()
    x = torch.randn(2, 4, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = prepare_report(prepare_model(model, example_inputs=(x,)))
    calls = [c.call for c in report.converted] + [c.call for c in report.left]
    assert calls == [".add_()"], report
    return bool(report.converted)


@pytest.mark.parametrize(
    "module, fresh",
    [
        ("nn.ReLU()", True),  # statically MIG108 before the one catalog rule: prepare converted it
        ("nn.LeakyReLU(0.2)", True),
        ("nn.Hardtanh(-1.0, 1.0, False)", True),
        ("nn.Conv2d(4, 4, 1)", True),
        ("nn.MaxPool2d(1)", True),
        ("nn.ReLU(inplace=True)", False),
        ("nn.ReLU(True)", False),
        ("nn.LeakyReLU(0.2, True)", False),
        ("nn.Flatten()", False),
        ("nn.Dropout()", False),
        ("nn.Identity()", False),
    ],
)
def test_inplace_op_on_module_output(module, fresh):
    source = INPLACE_ON_MODULE_OUTPUT.format(module=module)
    assert _static_converts(source) is fresh
    assert _runtime_converts(source) is fresh


@pytest.mark.parametrize(
    "name",
    [
        "loops_range",
        "loops_enumerate",
        "loops_nested",
        "loops_comprehension",
        "helpers_in_loops",
    ],
)
def test_loop_copies_leave_the_preparer_nothing(name):
    """fx unrolls a loop: the preparer gives each iteration's op, or each iteration's call of a
    reused stateless module, a module of its own. The static rewrite's nn.ModuleList of copies
    gives the same graph, so on the migrated model the preparer has nothing left to do."""
    from fixture_cases import FIXTURES, import_path

    case = FIXTURES / "cases" / f"{name}.before.py"
    before = import_path(case, f"agreement_before_{name}").Model().eval()
    after = import_path(case.with_name(f"{name}.after.py"), f"agreement_after_{name}")
    migrated = after.Model().eval()
    x = after.example_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        original = prepare_report(prepare_model(before, example_inputs=x))
        left = prepare_report(prepare_model(migrated, example_inputs=x))
    assert original.converted or original.copies
    assert (left.converted, left.copies, left.left) == ([], [], [])
    assert [s.module for s in left.shared] == [s.module for s in original.shared]
