"""The ONNX round trip and the whole chain: files, onnxruntime vs torch, failures, report."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper
from quant_models import MysteryNet, ResNetish, ViTish, randomize_batchnorm

from migrator.chain import STEPS, ChainReport, run_chain, summary_table, write_export
from migrator.confirm.divergence import first_divergence
from migrator.confirm.failure import ConfirmFailure
from migrator.confirm.onnx_export import export_float, export_qdq
from migrator.confirm.roundtrip import float_round_trip, qdq_round_trip, run_onnx
from migrator.observe.calibrate import calibrate, calibration_batches
from migrator.observe.capture import capture
from migrator.observe.pt2e import convert_pt2e, prepare_pt2e
from migrator.observe.quantizer import ModuleQuantizer


@pytest.fixture(scope="module")
def resnet(tmp_path_factory):
    """ResNetish taken through the chain piece by piece, keeping every intermediate."""
    torch.manual_seed(0)
    model = randomize_batchnorm(ResNetish()).eval()
    captured = capture(model, torch.randn(2, 3, 16, 16))
    prepared = prepare_pt2e(captured.graph_module, ModuleQuantizer())
    calibrate(prepared, calibration_batches(captured.example_inputs, 4))
    converted = convert_pt2e(prepared)
    out = tmp_path_factory.mktemp("resnet")
    float_file = export_float(captured, out / "resnet.float.onnx")
    qdq_file = export_qdq(converted, captured, out / "resnet.qdq.onnx")
    return model, captured, converted, float_file, qdq_file


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """`write_export` of ResNetish, as `migrator export` runs it."""
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("export")
    report = write_export(
        randomize_batchnorm(ResNetish()), torch.randn(2, 3, 16, 16), out, calibration=3
    )
    return report, out


def _ops(path: Path) -> Counter:
    return Counter(node.op_type for node in onnx.load(str(path)).graph.node)


def _node_names(path: Path) -> list[str]:
    return [node.name for node in onnx.load(str(path)).graph.node]


def test_float_onnx_matches_torch_on_example_and_other_batch_sizes(resnet):
    model, captured, _, float_file, _ = resnet
    trip = float_round_trip(model, captured.example_inputs, float_file.path)
    assert trip.ok and trip.max_abs <= 1e-5
    other = torch.randn(5, 3, 16, 16)
    (got,) = run_onnx(float_file.path, [other]).values()
    with torch.no_grad():
        np.testing.assert_allclose(got, model(other).numpy(), rtol=1e-5, atol=1e-6)


def test_qdq_onnx_holds_qdq_nodes_and_matches_within_one_step(resnet):
    _, captured, converted, _, qdq_file = resnet
    ops = _ops(qdq_file.path)
    assert ops["QuantizeLinear"] > 0 and ops["DequantizeLinear"] > 0
    assert qdq_file.qdq_node_count == ops["QuantizeLinear"] + ops["DequantizeLinear"]
    for inputs in (captured.example_inputs, (torch.randn(3, 3, 16, 16),)):
        trip = qdq_round_trip(converted, inputs, qdq_file.path)
        assert trip.ok, trip.outputs
        assert trip.max_steps is not None and trip.max_steps <= 1


def test_onnx_nodes_are_named_after_their_modules(resnet):
    model, _, _, float_file, qdq_file = resnet
    float_names, qdq_names = _node_names(float_file.path), _node_names(qdq_file.path)
    leaves = [
        name for name, module in model.named_modules() if name and not list(module.children())
    ]
    for name in leaves:
        assert any(n.startswith(f"{name}/") for n in float_names), name
    for name in leaves:
        if "bn" not in name and "downsample.1" not in name:  # BatchNorm is folded into conv
            assert any(n.startswith(f"{name}/") for n in qdq_names), name
    assert "layer1.0.relu_1/Relu" in qdq_names
    assert "layer1.0.relu_1/QuantizeLinear" in qdq_names


def _with_wrong_scale(path: Path, node_name: str, factor: float) -> Path:
    """A copy of the model whose `node_name` quantizes with its scale times `factor`."""
    model = onnx.load(str(path))
    node = next(n for n in model.graph.node if n.name == node_name)
    constants = {n.output[0]: n for n in model.graph.node if n.op_type == "Constant"}
    scale = numpy_helper.to_array(constants[node.input[1]].attribute[0].t)
    model.graph.initializer.append(
        numpy_helper.from_array(scale * np.float32(factor), "wrong_scale")
    )
    node.input[1] = "wrong_scale"
    broken = path.with_name("broken.onnx")
    onnx.save(model, str(broken))
    return broken


def test_a_wrong_scale_in_the_export_is_caught(resnet):
    _, captured, converted, _, qdq_file = resnet
    broken = _with_wrong_scale(qdq_file.path, "layer1.0.relu_1/QuantizeLinear", 2.0)
    trip = qdq_round_trip(converted, captured.example_inputs, broken)
    assert not trip.ok
    assert trip.max_steps > 1


def test_onnxruntime_failure_names_op_and_module(resnet):
    _, captured, _, _, qdq_file = resnet
    model = onnx.load(str(qdq_file.path))
    next(n for n in model.graph.node if n.name == "layer1.0.relu_1/Relu").op_type = "NoSuchOp"
    broken = qdq_file.path.with_name("unknown_op.onnx")
    onnx.save(model, str(broken))
    with pytest.raises(ConfirmFailure) as failure:
        run_onnx(broken, captured.example_inputs)
    assert (failure.value.op, failure.value.module) == ("NoSuchOp", "layer1.0.relu_1")
    assert "Traceback" not in str(failure.value)


def test_export_failure_is_reported_with_op_and_module():
    torch.manual_seed(0)
    report = run_chain(MysteryNet(), torch.randn(3, 4))
    assert not report.ok
    assert report.observers is not None and report.observers.ok  # the torch side still ran
    float_failure, qdq_failure = report.failures
    assert float_failure.startswith("onnx_float: ONNX export failed at op migrator_tests.mystery")
    assert qdq_failure.startswith("onnx_qdq: ONNX export failed at op migrator_tests.mystery")
    assert all("in module odd:" in f and "\n" not in f for f in report.failures)
    assert "failure: onnx_float" in report.to_table()


def test_write_export_writes_onnx_files_and_observer_report(exported):
    report, out = exported
    assert report.ok, report.failures
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        f"ResNetish.{suffix}"
        for suffix in ("float.onnx", "qdq.onnx", "observers.json", "observers.txt", "chain.json")
    )  # no external weight files: small models keep weights inside the .onnx
    observers = json.loads((out / "ResNetish.observers.json").read_text())
    assert observers["observer_count"] == observers["group_count"] == report.observer_count
    assert len(observers["observers"]) == report.observer_count
    assert report.files == [str(out / "ResNetish.float.onnx"), str(out / "ResNetish.qdq.onnx")]
    assert report.calibration_batches == 3


def test_chain_report_renders_timings_errors_and_observers(exported):
    report, out = exported
    data = json.loads((out / "ResNetish.chain.json").read_text())
    assert set(data["timings"]) == set(STEPS) and all(t >= 0 for t in data["timings"].values())
    assert data["float_onnx"]["outputs"][0]["max_abs"] <= 1e-5
    assert data["qdq_onnx"]["outputs"][0]["steps"] <= 1
    assert data["qdq_node_count"] > 0
    table = report.to_table()
    for step in STEPS:
        assert step in table
    assert "layer1.0.relu_1" in table and "max abs" in table


def test_vit_chain_with_per_module_dtypes_and_exclusions():
    torch.manual_seed(0)
    report = run_chain(
        ViTish(),
        torch.randn(1, 3, 16, 16),
        exclude=("blocks.0.fc2",),
        module_dtypes={"head": "int16", "blocks.0.attn": "uint8"},
        calibration=lambda: (torch.randn(b, 3, 16, 16) for b in (2, 3)),
    )
    assert report.ok, report.failures
    assert report.files == []  # no out_dir: the ONNX files lived in a removed temporary folder
    assert report.calibration_batches == 2
    dtypes = {label: r.dtype for r in report.observers.observers for label in r.observes}
    assert dtypes["head"] == "int16" and dtypes["blocks.0.attn.softmax"] == "uint8"
    assert "blocks.0.fc1.weight" in dtypes and "blocks.0.fc2.weight" not in dtypes
    assert report.qdq_onnx.max_steps <= 1
    row = report.summary_row()
    assert row["observers"] == f"{report.observer_count}/{report.observer_count} groups"
    table = summary_table([{"target": "vit", "equivalence": "ok", **row}])
    assert table.splitlines()[0].split()[:3] == ["target", "equivalence", "observers"]


def test_target_names_become_safe_file_names():
    assert ChainReport("models/net.py:Net").file_stem == "models_net.py_Net"


def test_first_divergence_names_the_first_quantized_tensor_that_differs(resnet, tmp_path):
    _, captured, converted, _, qdq_file = resnet
    assert first_divergence(converted, captured.example_inputs, qdq_file.path) is None
    model = onnx.load(str(qdq_file.path))
    quantizes = [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    scale = quantizes[3].input[1]  # the 4th quantize's scale, halved in a copy of it
    halved = onnx.helper.make_node("Mul", [scale, "two"], ["halved_scale"])
    two = onnx.helper.make_tensor("two", onnx.TensorProto.FLOAT, [], [0.5])
    model.graph.initializer.append(two)
    model.graph.node.insert(list(model.graph.node).index(quantizes[3]), halved)
    quantizes[3].input[1] = "halved_scale"
    broken = tmp_path / "broken.onnx"
    onnx.save(model, str(broken))
    found = first_divergence(converted, captured.example_inputs, broken)
    assert found is not None and found.agreeing == 3 and found.total == len(quantizes)
    assert found.max_steps >= 1 and found.float_gap == 0  # same float values, rounded apart
    assert "equal float results round apart" in found.describe()


class Branchy(torch.nn.Module):
    """A forward that branches on a tensor's value: torch.export cannot capture it."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        if y.sum() > 0:  # the line the failure names
            return y * 2
        return y


def test_a_capture_failure_is_one_line_naming_the_source_line_and_the_reason():
    report = run_chain(Branchy().eval(), torch.randn(2, 3, 4, 4))
    (failure,) = report.failures
    line = next(
        number
        for number, text in enumerate(Path(__file__).read_text().splitlines(), 1)
        if "the line the failure names" in text
    )
    assert "\n" not in failure and failure.startswith("capture: CaptureFailure: ")
    assert f"{__file__}:{line} (if y.sum() > 0:" in failure
    assert "data-dependent" in failure
