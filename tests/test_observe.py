"""Observers on the prepared graph: per-module annotation, sharing groups, calibration, report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import quant_models
import torch
from quant_models import ResNetish, ViTish, randomize_batchnorm

from migrator.observe import quantizer as quantizer_module
from migrator.observe.calibrate import calibrate, calibration_batches
from migrator.graph import owning_module
from migrator.observe.capture import capture
from migrator.observe.pt2e import ObserverBase, prepare_pt2e
from migrator.observe.quantizer import ModuleQuantizer
from migrator.observe.report import observer_report

WEIGHTS = {
    "conv1.weight", "layer1.0.conv1.weight", "layer1.0.conv2.weight", "layer1.1.conv1.weight",
    "layer1.1.conv2.weight", "head.branch_a.weight", "head.branch_b.weight", "fc.weight",
}  # fmt: skip
ACTIVATION_GROUPS = [
    {"input x"},
    {"conv1", "relu", "maxpool"},  # bn1 folded into conv1; relu and max-pool share its observer
    {"layer1.0.conv1", "layer1.0.relu"},
    {"layer1.0.conv2"},  # an add input keeps its own observer
    {"layer1.0.add", "layer1.0.relu_1"},
    {"layer1.1.conv1", "layer1.1.relu"},
    {"layer1.1.conv2"},
    # the nested cats share one observer, and cat_1 also takes layer1.1's output: all one group
    {"layer1.1.add", "layer1.1.relu_1", "head.branch_a", "head.branch_b", "head.cat", "head.cat_1"},
    {"avgpool", "flatten"},
    {"fc"},
]
"""The sharing groups of `ResNetish()` worked out by hand from the annotation rules."""


def _prepared(model, inputs, calibration=None, **options):
    captured = capture(model, inputs)
    quantizer = ModuleQuantizer(**options)
    prepared = prepare_pt2e(captured.graph_module, quantizer)
    calibrate(prepared, calibration_batches(captured.example_inputs, calibration))
    return prepared, quantizer


@pytest.fixture(scope="module")
def resnet():
    torch.manual_seed(0)
    model = randomize_batchnorm(ResNetish()).eval()
    inputs = (torch.randn(2, 3, 16, 16),)
    prepared, quantizer = _prepared(model, inputs)
    return model, inputs, prepared, quantizer, observer_report(prepared, quantizer)


def _distinct_observers(prepared: torch.nn.Module) -> int:
    return len(
        {
            id(m)
            for _, m in prepared.named_modules(remove_duplicate=False)
            if isinstance(m, ObserverBase)
        }
    )


def test_observer_count_equals_hand_derived_sharing_groups(resnet):
    _, _, prepared, quantizer, report = resnet
    expected = [*ACTIVATION_GROUPS, *({weight} for weight in WEIGHTS)]
    assert sorted(sorted(r.observes) for r in report.observers) == sorted(
        sorted(g) for g in expected
    )
    assert len(quantizer.groups) == len(expected)
    assert _distinct_observers(prepared) == len(expected)
    assert report.observer_count == report.group_count == len(expected)
    assert report.ok, report.problems


def test_each_group_is_served_by_the_one_observer_torchao_made(resnet):
    _, _, _, quantizer, _ = resnet
    for group in quantizer.groups:
        assert len({id(quantizer.observer_of[member]) for member in group.members}) == 1


def test_default_specs_weights_per_channel_activations_per_tensor(resnet):
    _, _, _, _, report = resnet
    for record in report.observers:
        is_weight = record.observes[0].endswith(".weight")
        assert record.qscheme == ("per_channel_symmetric" if is_weight else "per_tensor_affine")
        assert record.dtype == "int8"
        if is_weight:
            assert set(record.zero_point) == {0} and len(record.scale) > 1
        else:
            assert len(record.scale) == 1 and -128 <= record.zero_point[0] <= 127


def test_batchnorm_is_folded_before_observation(resnet):
    model, inputs, prepared, _, _ = resnet
    targets = {str(node.target) for node in prepared.graph.nodes}
    assert not any("batch_norm" in target for target in targets)
    with torch.no_grad():
        assert torch.allclose(prepared(*inputs), model(*inputs), atol=1e-5)


def test_sources_point_at_the_module_calls(resnet):
    _, _, _, _, report = resnet
    lines = Path(quant_models.__file__).read_text().splitlines()
    for record in report.observers:
        assert record.sources, record
        assert all(
            source.rsplit(":", 1)[0].endswith("quant_models.py") for source in record.sources
        )
        if len(record.sources) == 1 and not record.observes[0].startswith("input"):
            module = record.observes[-1].removesuffix(".weight")
            code = lines[int(record.sources[0].rsplit(":", 1)[1]) - 1]
            assert f"self.{module.rpartition('.')[2]}(" in code, (record.observes, code)


def test_report_renders_as_table_and_json(resnet):
    _, _, _, _, report = resnet
    data = json.loads(report.to_json())
    assert data["observer_count"] == len(data["observers"]) == report.observer_count
    assert {"group", "observes", "sources", "dtype", "scale", "zero_point"} <= data["observers"][
        0
    ].keys()
    table = report.to_table()
    for group in ACTIVATION_GROUPS:
        for label in group:
            assert label in table


def test_observers_that_saw_no_data_are_problems():
    captured = capture(ResNetish().eval(), torch.randn(2, 3, 16, 16))
    quantizer = ModuleQuantizer()
    report = observer_report(prepare_pt2e(captured.graph_module, quantizer), quantizer)
    assert not report.ok
    assert len(report.problems) == report.observer_count
    assert all("saw no data" in problem for problem in report.problems)
    assert all(not record.calibrated and record.scale == [] for record in report.observers)


def test_exclude_leaves_a_module_in_float():
    torch.manual_seed(0)
    model, inputs = ResNetish().eval(), (torch.randn(2, 3, 16, 16),)
    prepared, quantizer = _prepared(model, inputs, exclude=("layer1.0.relu_1",))
    report = observer_report(prepared, quantizer)
    relu_1 = next(
        n
        for n in prepared.graph.nodes
        if n.op == "call_function" and owning_module(n) == "layer1.0.relu_1"
    )
    assert "quantization_annotation" not in relu_1.meta
    # {add, relu_1} splits: add keeps its output observer; relu_1's float output is observed
    # only where layer1.1 reads it. One group more than by default.
    groups = [record.observes for record in report.observers]
    assert ["layer1.0.add"] in groups and ["layer1.0.relu_1"] in groups
    assert report.observer_count == report.group_count == len(ACTIVATION_GROUPS) + len(WEIGHTS) + 1


def test_module_dtype_applies_to_the_module_and_below():
    torch.manual_seed(0)
    model, inputs = ResNetish().eval(), (torch.randn(2, 3, 16, 16),)
    prepared, quantizer = _prepared(model, inputs, module_dtypes={"fc": "int16", "layer1": "uint8"})
    report = observer_report(prepared, quantizer)
    dtypes = {label: record.dtype for record in report.observers for label in record.observes}
    assert dtypes["fc"] == dtypes["fc.weight"] == "int16"
    assert dtypes["layer1.0.conv1"] == "uint8" and dtypes["layer1.0.conv1.weight"] == "int8"
    assert dtypes["conv1"] == "int8"
    assert report.ok, report.problems


def test_unknown_module_names_are_refused():
    model, inputs = ResNetish().eval(), (torch.randn(2, 3, 16, 16),)
    with pytest.raises(ValueError, match="layer9"):
        _prepared(model, inputs, exclude=("layer9",))
    with pytest.raises(ValueError, match="float8"):
        ModuleQuantizer(module_dtypes={"fc": "float8"})


def test_core_torch_ao_observers_are_refused(monkeypatch):
    def torch_ao_spec(dtype, symmetric=False):
        observer = torch.ao.quantization.observer.MinMaxObserver
        return quantizer_module.QuantizationSpec(dtype=dtype, observer_or_fake_quant_ctr=observer)

    monkeypatch.setattr(quantizer_module, "activation_spec", torch_ao_spec)
    with pytest.raises(TypeError, match="not a torchao observer"):
        _prepared(ResNetish().eval(), (torch.randn(2, 3, 16, 16),))


def test_calibration_from_a_callable_with_other_batch_sizes():
    torch.manual_seed(0)
    batches = [torch.randn(3, 3, 16, 16) * 4, torch.randn(5, 3, 16, 16) + 2]
    prepared, quantizer = _prepared(
        ResNetish().eval(), (torch.randn(1, 3, 16, 16),), calibration=lambda: iter(batches)
    )
    report = observer_report(prepared, quantizer)
    seen = torch.cat([b.flatten() for b in batches])
    low, high = min(seen.min().item(), 0.0), max(seen.max().item(), 0.0)
    (record,) = [r for r in report.observers if r.observes == ["input x"]]
    assert record.scale[0] == pytest.approx((high - low) / 255, rel=1e-6)
    assert record.zero_point[0] == round(-128 - low / record.scale[0])


def test_random_calibration_batches_follow_the_examples():
    example = (torch.randn(2, 3, 8, 8) * 3 + 1,)
    batches = list(calibration_batches(example, 4))
    assert len(batches) == 4 and all(b[0].shape == example[0].shape for b in batches)
    assert not torch.equal(batches[0][0], batches[1][0])
    pooled = torch.cat([b[0].flatten() for b in batches])
    assert pooled.mean().item() == pytest.approx(example[0].mean().item(), abs=0.3)
    assert pooled.std().item() == pytest.approx(example[0].std().item(), rel=0.1)
    assert torch.equal(batches[0][0], list(calibration_batches(example, 1))[0][0])
    with pytest.raises(ValueError):
        list(calibration_batches(example, 0))


def test_vit_block_annotations():
    torch.manual_seed(0)
    prepared, quantizer = _prepared(ViTish().eval(), (torch.randn(2, 3, 16, 16),))
    report = observer_report(prepared, quantizer)
    observed = {label for record in report.observers for label in record.observes}
    assert {
        "blocks.0.attn.matmul",
        "blocks.0.attn.softmax",
        "blocks.0.attn.matmul_1",
        "blocks.0.add",
    } <= observed
    assert not any(
        label.startswith("blocks.0.norm1.") for label in observed
    )  # LayerNorm affine stays float
    assert report.observer_count == report.group_count == _distinct_observers(prepared)
    assert report.ok, report.problems


def test_the_ops_a_wrapped_helpers_twin_calls_are_named_by_their_module_and_call():
    """The modules of a `torch.fx.wrap` helper's holder run inside its twin function: each
    observer names the holder's module (`window_attention.softmax`) and the line of forward
    calling the twin (torch.export records no frame of a plain function)."""
    from fixture_cases import FIXTURES, import_path

    path = FIXTURES / "cases" / "helper_fx_wrap_attention.after.py"
    after = import_path(path, "observe_fx_wrap_attention")
    prepared, quantizer = _prepared(after.Model().eval(), after.example_inputs())
    report = observer_report(prepared, quantizer)
    lines = path.read_text(encoding="utf-8").splitlines()
    named = {
        label: record.sources
        for record in report.observers
        for label in record.observes
        if label.startswith("window_attention.")
    }
    assert set(named) == {
        f"window_attention.{op}"
        for op in ("matmul (matmul)", "mul (mul)", "add (add)", "softmax (softmax)")
    } | {"window_attention.matmul_1 (matmul)", "window_attention.dropout (dropout)"}
    for sources in named.values():
        [source] = sources
        code = lines[int(source.rsplit(":", 1)[1]) - 1]
        assert "window_attention_ops(self.window_attention," in code
