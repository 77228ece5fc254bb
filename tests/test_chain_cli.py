"""The quantization chain from the command line: `verify --observers --onnx`, `export`, and
`fix --verify --observers --onnx` on a migrated model."""

from __future__ import annotations

from pathlib import Path

import pytest
from packages import write_package
from test_cli import migrator
from test_fix_verify import MODEL

onnx = pytest.importorskip("onnx")
REPO = Path(__file__).resolve().parent.parent


def _row(stdout: str, target: str) -> list[str]:
    """The target's row of the chain table (printed after its verification block)."""
    return [line.split() for line in stdout.splitlines() if line.startswith(target)][-1]


def test_export_writes_float_and_qdq_onnx_and_the_observer_report(tmp_path):
    (tmp_path / "net.py").write_text(MODEL)
    result = migrator("export", "net.py:Net", "-o", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "out"
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "net.py_Net.chain.json",
        "net.py_Net.float.onnx",
        "net.py_Net.observers.json",
        "net.py_Net.observers.txt",
        "net.py_Net.qdq.onnx",
    ]
    ops = {node.op_type for node in onnx.load(str(out / "net.py_Net.qdq.onnx")).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    assert "wrote" in result.stdout


def test_verify_with_observers_and_onnx_prints_one_table():
    result = migrator(
        "verify", "--observers", "--onnx", "examples/models/resnet.py:resnet_tiny", cwd=REPO
    )
    assert result.returncode == 0, result.stdout + result.stderr
    row = _row(result.stdout, "resnet_tiny ")
    assert row[1] == "PASS" and row[3] == "groups" and row[-1] == "ok"
    tables = result.stdout[result.stdout.index("seconds per step") :]
    assert max(map(len, tables.splitlines())) <= 100  # the final tables fit 100 columns


def test_fix_verify_runs_the_chain_on_the_migrated_model(tmp_path):
    write_package(tmp_path, {"net.py": MODEL}, "zoo")
    (tmp_path / "pyproject.toml").write_text(
        '[[tool.migrator.verify]]\ntarget = "zoo/net.py:Net"\n'
    )
    result = migrator("fix", "--diff", "--verify", "--observers", "--onnx", "zoo", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert lines[-1].startswith("Net ") and lines[-1].split()[-1] == "ok", result.stdout
    assert "+        return self.add(y, self.mean(x))" in result.stdout
    assert _row(result.stdout, "Net ")[1] == "PASS"


def test_fix_verify_with_the_chain_imports_and_builds_each_side_once(tmp_path):
    """The original and the migrated model file each run once, and each side's model is built
    once: the chain runs on the migrated model verify built and checked."""
    counted = MODEL + (
        '\nwith open(__file__ + ".runs", "a") as _runs:\n    _runs.write("ran\\n")\n'
        "\n\ndef build():\n"
        '    with open(__file__ + ".builds", "a") as builds:\n'
        '        builds.write("built\\n")\n'
        "    return Net()\n"
    )
    write_package(tmp_path, {"net.py": counted}, "zoo")
    (tmp_path / "pyproject.toml").write_text(
        '[[tool.migrator.verify]]\ntarget = "zoo/net.py:build"\n'
    )
    result = migrator("fix", "--diff", "--verify", "--observers", "--onnx", "zoo", cwd=tmp_path)
    assert _row(result.stdout, "build ")[-1] == "ok", result.stdout + result.stderr
    assert _row(result.stdout, "build ")[1] == "PASS"
    assert (tmp_path / "zoo" / "net.py.runs").read_text() == "ran\nran\n"
    assert (tmp_path / "zoo" / "net.py.builds").read_text() == "built\nbuilt\n"
