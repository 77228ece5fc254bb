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
    "helper_plain_first_arg",
    "helper_refused",
    "helper_annotated_return",
    "helper_declared_dict",
    "helper_with_return",
    "helper_registered_leaf",
    "helper_type_comments",
    "helpers_in_loops",
    "notrace_helpers",
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


def test_a_timm_notrace_helper_module_traces_as_its_function():
    """A helper decorated with timm's `register_notrace_function` becomes a module: torch.fx
    traces through both, so `verify`'s fx graph check passes, and timm's own tracer, which
    keeps the function a leaf, keeps its module (`register_notrace_module`) a leaf too."""
    from torch import fx

    from migrator.prove.compare import PASS, check_fx_graph

    timm_fx = pytest.importorskip("timm.layers._fx")
    case = FIXTURES / "cases" / "notrace_helpers.before.py"
    before = import_path(case, "notrace_helpers")  # one name, as verify imports each side
    after = import_path(after_of(case), "notrace_helpers")
    torch.manual_seed(0)
    original = before.Model()
    migrated = after.Model()
    migrated.load_state_dict(original.state_dict())
    result = check_fx_graph(original, migrated)
    assert result.status == PASS, result.detail
    assert timm_fx.is_notrace_module(after.Pool)

    class TimmTracer(fx.Tracer):  # as timm's create_feature_extractor traces
        def __init__(self) -> None:
            super().__init__(autowrap_functions=tuple(timm_fx.get_notrace_functions()))

        def is_leaf_module(self, m, qualname):
            return timm_fx.is_notrace_module(type(m)) or super().is_leaf_module(m, qualname)

    def calls(model) -> list[str]:
        graph = TimmTracer().trace(model)
        return [n.op for n in graph.nodes if getattr(n.target, "__name__", n.target) == "pool"]

    assert calls(original) == ["call_function"]
    assert calls(migrated) == ["call_module"]


def test_signature_type_comments_annotate_functions_without_annotations():
    """`# type: (...) -> ...` after the `def` annotates each parameter (a method's `self` may
    be left out) and the return; a function with annotations, `*args`, or a comment whose
    count does not match keeps what it had."""
    import ast

    from migrator.rewrite.type_comments import read_type_comments

    source = (
        "def f(a, b):\n    # type: (Tensor, int) -> Tensor\n    return a\n\n"
        "class C:\n    def m(self, x):  # type: (List[Tensor]) -> Tensor\n        return x\n\n"
        "def g(a: int, b):\n    # type: (Tensor, int) -> Tensor\n    return a\n\n"
        "def h(a, *rest):\n    # type: (Tensor, *int) -> Tensor\n    return a\n\n"
        "def k(a, b):\n    # type: (Tensor) -> Tensor\n    return a\n"
    )
    tree = ast.parse(source)
    read_type_comments(tree, source)
    found = {
        n.name: (
            [ast.unparse(a.annotation) if a.annotation else None for a in n.args.args],
            ast.unparse(n.returns) if n.returns else None,
        )
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef)
    }
    assert found == {
        "f": (["Tensor", "int"], "Tensor"),
        "m": ([None, "List[Tensor]"], "Tensor"),
        "g": (["int", None], None),
        "h": ([None], None),
        "k": ([None, None], None),
    }


def test_a_helper_fx_wraps_stays_a_leaf_fx_traces():
    """`torch.fx.wrap("pad_odd")` makes the function an fx leaf; a module made of it would be
    traced into, and its `if` on a size would stop fx: the migrated model still traces, its
    twin `pad_odd_ops` one node, given the module holding its ops."""
    name = "helper_registered_leaf"
    after = import_path(after_of(FIXTURES / "cases" / f"{name}.before.py"), f"fx_{name}")
    graph = torch.fx.symbolic_trace(after.Model()).graph
    [twin] = [n for n in graph.nodes if n.op == "call_function" and "pad_odd" in n.target.__name__]
    assert twin.target.__name__ == "pad_odd_ops"
    assert twin.args[0].op == "get_attr" and twin.args[0].target == "pad_odd"


def test_script_if_tracing_helper_traces_as_it_scripts():
    """A `@torch.jit._script_if_tracing` helper made a module (straight-line tensor code) records
    under `torch.jit.trace` the program that scripting the function compiles: traced on 3 boxes,
    both sides give the eager outputs on 6."""
    from equivalence import assert_same_outputs

    before = FIXTURES / "cases" / "helper_script_if_tracing.before.py"
    original = import_path(before, "script_if_tracing_before")
    migrated = import_path(after_of(before), "script_if_tracing_after")

    class Wrap(torch.nn.Module):
        def __init__(self, helper):
            super().__init__()
            self.helper = helper

        def forward(self, reference, proposals, weights):
            return self.helper(reference, proposals, weights)

    def boxes(n):
        return torch.randn(n, 4), torch.randn(n, 4), torch.tensor([10.0, 5.0])

    traced = [
        torch.jit.trace(Wrap(helper), boxes(3), check_trace=False)
        for helper in (original.encode, migrated.Encode())
    ]
    assert isinstance(traced[1].helper, torch.jit.ScriptModule)  # the module was traced
    other = boxes(6)
    expected = original.encode(*other)
    assert expected.shape == (6, 2)
    for model in traced:
        assert_same_outputs(model(*other), expected)
