"""Quantization choices (`[tool.migrator.quantization]`, `--activation-dtype`, ...,
`--quantize`): each changes the observers actually inserted and the exported QDQ ONNX, the
ONNX round trip still matches, and bad keys or values fail with one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper
from quant_models import ResNetish, randomize_batchnorm
from test_cli import migrator
from test_fix_verify import MODEL

from migrator.chain import run_chain
from migrator.config import ConfigError, read
from migrator.graph import owning_module
from migrator.observe.calibrate import calibrate, calibration_batches
from migrator.observe.capture import capture
from migrator.observe.choices import Choices, Override, Quantization, parse_quantization
from migrator.observe.pt2e import MinMaxObserver, PerChannelMinMaxObserver, prepare_pt2e
from migrator.observe.quantizer import ModuleQuantizer

SYMMETRIC_UINT8 = Quantization(Choices(activation_dtype="uint8", activation_scheme="symmetric"))
PER_TENSOR = Quantization(Choices(weights="per-tensor"))


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return randomize_batchnorm(ResNetish()).eval()


def _inputs() -> tuple[torch.Tensor]:
    return (torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1)),)


def _prepared(quantization: Quantization | None) -> tuple[torch.fx.GraphModule, ModuleQuantizer]:
    captured = capture(_model(), _inputs())
    quantizer = ModuleQuantizer(quantization=quantization)
    prepared = prepare_pt2e(captured.graph_module, quantizer)
    calibrate(prepared, calibration_batches(captured.example_inputs, None))
    return prepared, quantizer


def _observers(quantizer: ModuleQuantizer) -> tuple[list, list]:
    """The weight observers and the activation observers (each once)."""
    weights, activations = {}, {}
    for member, observer in quantizer.observer_of.items():
        producer = member[0] if isinstance(member, tuple) else member
        kind = weights if producer.op == "get_attr" else activations
        kind[id(observer)] = observer
    return list(weights.values()), list(activations.values())


def test_default_is_int8_affine_activations_and_per_channel_weights():
    _, quantizer = _prepared(None)
    weights, activations = _observers(quantizer)
    assert weights and all(type(o) is PerChannelMinMaxObserver for o in weights)
    assert all(o.qscheme == torch.per_channel_symmetric for o in weights)
    assert all(o.dtype == torch.int8 for o in activations)
    assert all(o.qscheme == torch.per_tensor_affine for o in activations)
    assert any(o.calculate_qparams()[1].item() != 0 for o in activations)


def test_symmetric_uint8_activations():
    _, quantizer = _prepared(SYMMETRIC_UINT8)
    weights, activations = _observers(quantizer)
    assert all(o.dtype == torch.int8 for o in weights)  # weights stay signed
    assert all(o.dtype == torch.quint8 or o.dtype == torch.uint8 for o in activations)
    assert all(o.qscheme == torch.per_tensor_symmetric for o in activations)
    assert {o.calculate_qparams()[1].item() for o in activations} == {127}


def test_per_tensor_weights():
    _, quantizer = _prepared(PER_TENSOR)
    weights, _ = _observers(quantizer)
    assert weights and all(type(o) is MinMaxObserver for o in weights)
    assert all(o.qscheme == torch.per_tensor_symmetric for o in weights)
    assert all(o.calculate_qparams()[0].numel() == 1 for o in weights)


def test_overrides_by_module_and_class_apply_there_only():
    quantization = Quantization(
        overrides=(
            Override({"activation_dtype": "int16"}, module="layer2*"),
            Override({"weights": "per-tensor"}, cls="torch.nn.Linear"),
        )
    )
    _, quantizer = _prepared(quantization)
    for member, observer in quantizer.observer_of.items():
        node = member[1] if isinstance(member, tuple) else member
        producer = member[0] if isinstance(member, tuple) else member
        module = owning_module(node)
        if producer.op == "get_attr":
            expected = MinMaxObserver if module == "fc" else PerChannelMinMaxObserver
            assert type(observer) is expected, (module, observer)
        elif member is node and module.startswith("layer2"):
            assert observer.dtype == torch.int16, module
        elif member is node and not module.startswith(("layer3", "layer4")):
            assert observer.dtype == torch.int8, module


def test_an_override_naming_no_class_fails():
    with pytest.raises(ValueError, match="no class named 'torch.nn.Nothing'"):
        _prepared(
            Quantization(overrides=(Override({"weights": "per-tensor"}, cls="torch.nn.Nothing"),))
        )


def _constants(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    """Initializers and Constant nodes' tensors by name, also through a Cast (to the dtype
    the Cast makes)."""
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        for attribute in node.attribute if node.op_type == "Constant" else ():
            if attribute.name == "value":
                constants[node.output[0]] = numpy_helper.to_array(attribute.t)
        if node.op_type == "Cast" and node.input[0] in constants:
            to = onnx.helper.tensor_dtype_to_np_dtype(node.attribute[0].i)
            constants[node.output[0]] = constants[node.input[0]].astype(to)
    return constants


def _quantize_linear_zero_points(path: Path) -> list[np.ndarray]:
    graph = onnx.load(str(path)).graph
    constants = _constants(graph)
    return [constants[n.input[2]] for n in graph.node if n.op_type == "QuantizeLinear"]


def _weight_scales(path: Path) -> list[np.ndarray]:
    """The scales of the DequantizeLinear nodes that read a constant integer weight."""
    graph = onnx.load(str(path)).graph
    constants = _constants(graph)
    return [
        constants[n.input[1]]
        for n in graph.node
        if n.op_type == "DequantizeLinear" and constants.get(n.input[0], np.zeros(0)).ndim == 4
    ]


@pytest.mark.parametrize(
    "quantization, dtype, zero_points, weight_scale_dims",
    [
        (None, np.int8, None, {1}),
        (SYMMETRIC_UINT8, np.uint8, {127}, {1}),
        (Quantization(Choices(activation_scheme="symmetric")), np.int8, {0}, {1}),
        (PER_TENSOR, np.int8, None, {0}),
    ],
)
def test_exported_qdq_onnx_follows_the_choices(
    tmp_path, quantization, dtype, zero_points, weight_scale_dims
):
    report = run_chain(_model(), _inputs(), out_dir=tmp_path, quantization=quantization)
    assert report.ok, report.to_table()
    assert report.qdq_onnx.max_steps <= 1
    found = _quantize_linear_zero_points(Path(report.onnx_files["qdq"]))
    assert found and {z.dtype for z in found} == {np.dtype(dtype)}
    if zero_points is not None:
        assert {int(z) for z in found} == zero_points
    else:
        assert len({int(z) for z in found}) > 1  # affine: zero points follow the ranges
    scales = _weight_scales(Path(report.onnx_files["qdq"]))
    assert scales and {s.ndim for s in scales} == weight_scale_dims


def _pyproject(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.migrator.quantization]\n" + table)
    return path


def test_the_table_is_read():
    table = {
        "activation-dtype": "uint8",
        "activation_scheme": "symmetric",
        "weights": "per-tensor",
        "overrides": [
            {"module": "head.*", "activation-dtype": "int16"},
            {"class": "torch.nn.Linear", "weights": "per-channel"},
        ],
    }
    quantization = parse_quantization(table, "here")
    assert quantization.defaults == Choices("uint8", "symmetric", "per-tensor")
    assert quantization.for_module("head.fc", lambda name: False).activation_dtype == "int16"
    assert quantization.for_module("head", lambda name: False).activation_dtype == "uint8"
    linear = quantization.for_module("body", lambda name: name == "torch.nn.Linear")
    assert linear == Choices("uint8", "symmetric", "per-channel")


@pytest.mark.parametrize(
    "table, message",
    [
        (
            'activation-dtype = "int4"\n',
            "`activation-dtype` is 'int4'; choose from int8, uint8, int16",
        ),
        ('weight = "per-tensor"\n', "unknown key `weight` (known: activation-dtype,"),
        ('overrides = [{ module = "a", class = "b", weights = "per-tensor" }]\n', "exactly one of"),
        ('overrides = [{ module = "a" }]\n', "the override for module 'a' sets nothing"),
        ('overrides = [{ module = "a", scheme = "x" }]\n', "overrides[0]: unknown key `scheme`"),
        ("overrides = 3\n", "`overrides` must be a list of tables"),
    ],
)
def test_bad_keys_and_values_fail_with_one_line(tmp_path, table, message):
    path = _pyproject(tmp_path, table)
    with pytest.raises(ConfigError) as error:
        read(path, lambda message: None)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).startswith(f"{path}: [tool.migrator.quantization]")


def test_the_command_line_refuses_bad_values_and_reads_the_table(tmp_path):
    (tmp_path / "net.py").write_text(MODEL)
    bad = migrator("export", "net.py:Net", "-o", "out", "--weights", "per-row", cwd=tmp_path)
    assert bad.returncode == 2 and "invalid choice: 'per-row'" in bad.stderr
    bad = migrator("export", "net.py:Net", "-o", "out", "--quantize", "module=a,b=c", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "migrator export: --quantize 'module=a,b=c': unknown key `b` "
        "(known: activation-dtype, activation-scheme, weights)"
    ]
    _pyproject(tmp_path, 'activation-scheme = "symmetric"\nactivation-dtype = "banana"\n')
    bad = migrator("export", "net.py:Net", "-o", "out", cwd=tmp_path)
    assert bad.returncode == 2 and "`activation-dtype` is 'banana'" in bad.stderr
    _pyproject(tmp_path, 'activation-scheme = "symmetric"\n')
    good = migrator(
        "export", "net.py:Net", "-o", "out", "--activation-dtype", "uint8", cwd=tmp_path
    )
    assert good.returncode == 0, good.stdout + good.stderr
    zero_points = _quantize_linear_zero_points(tmp_path / "out" / "net.py_Net.qdq.onnx")
    assert {(z.dtype, int(z)) for z in zero_points} == {(np.dtype(np.uint8), 127)}
