"""`migrator fix --verify`: rewrites are verified in memory first; a file is written only when
every configured target using it passes."""

from __future__ import annotations

from pathlib import Path

import pytest
from packages import write_package
from test_cli import migrator

pytest.importorskip("torch")

MODEL = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = F.relu(self.conv(x))
        return y + x.mean(1, keepdim=True)


def example_inputs():
    return (torch.randn(2, 3, 8, 8),)
"""
PYPROJECT = """[tool.migrator]
ops_module = "zoo.quant_ops"

[[tool.migrator.verify]]
target = "zoo/net.py:Net"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_package(tmp_path, {"net.py": MODEL}, "zoo")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    return tmp_path


def test_verified_rewrite_is_written_with_its_ops_module(project):
    result = migrator("fix", "--verify", "zoo", cwd=project)
    assert result.returncode == 1, result.stderr
    assert "zoo/net.py:Net" in result.stdout and "=> PASS" in result.stdout
    for check in ("state_dict  PASS", "fx graph    PASS", "export      PASS", "outputs     PASS"):
        assert f"\n  {check}" in result.stdout
    text = (project / "zoo" / "net.py").read_text()
    assert "from zoo.quant_ops import Add, Mean" in text and "self.relu(self.conv(x))" in text
    assert (project / "zoo" / "quant_ops.py").exists()


def test_failing_target_blocks_the_write(project):
    """A stale or hand-edited op module computes something else: verify fails the target and
    the model file is left untouched."""
    ops = (Path(__file__).parent.parent / "migrator" / "nn.py").read_text()
    broken = ops.replace("out = x + y if", "out = x - y if")
    assert broken != ops
    (project / "zoo" / "quant_ops.py").write_text(broken)
    result = migrator("fix", "--verify", "zoo", cwd=project)
    assert result.returncode == 1
    assert "outputs     FAIL" in result.stdout and "=> FAIL" in result.stdout
    assert "zoo/net.py: not written: a verify target using it failed" in result.stderr
    assert (project / "zoo" / "net.py").read_text() == MODEL
    assert (
        project / "zoo" / "quant_ops.py"
    ).read_text() == broken  # op modules are never rewritten


def test_diff_with_verify_writes_nothing(project):
    result = migrator("fix", "--verify", "--diff", "zoo", cwd=project)
    assert "=> PASS" in result.stdout and "+from zoo.quant_ops import Add, Mean" in result.stdout
    assert (project / "zoo" / "net.py").read_text() == MODEL
    assert not (project / "zoo" / "quant_ops.py").exists()


def test_files_no_target_covers_are_not_written_unless_asked(project):
    (project / "zoo" / "other.py").write_text(MODEL)
    result = migrator("fix", "--verify", "zoo", cwd=project)
    assert result.returncode == 1, result.stderr
    assert "zoo/other.py: not written: no verify target covers it\n" in result.stderr
    assert (project / "zoo" / "other.py").read_text() == MODEL
    assert "self.relu(self.conv(x))" in (project / "zoo" / "net.py").read_text()  # verified
    assert "1 file(s) changed" in result.stderr and "1 file(s) not written" in result.stderr

    result = migrator("fix", "--verify", "--write-unverified", "zoo", cwd=project)
    assert result.returncode == 1, result.stderr
    assert "zoo/other.py: not verified: no verify target covers it\n" in result.stderr
    assert "self.relu(self.conv(x))" in (project / "zoo" / "other.py").read_text()


def test_set_up_errors_exit_2(project):
    """A misspelt target is a set-up error: one line, exit 2; the file it names is not written."""
    (project / "pyproject.toml").write_text(PYPROJECT.replace("net.py:Net", "net.py:Nett"))
    result = migrator("fix", "--verify", "zoo", cwd=project)
    assert result.returncode == 2
    assert (
        "migrator fix --verify: zoo/net.py:Nett: net.py (before fix) has no `Nett`\n"
        in result.stderr
        and "Traceback" not in result.stderr
    )
    assert "zoo/net.py: not written: a verify target using it failed" in result.stderr
    assert (project / "zoo" / "net.py").read_text() == MODEL

    (project / "pyproject.toml").write_text('[tool.migrator]\nops_module = "zoo.quant_ops"\n')
    result = migrator("fix", "--verify", "zoo", cwd=project)
    assert result.returncode == 2
    assert result.stderr == (
        "migrator fix --verify: nothing to verify: add "
        "[[tool.migrator.verify]] entries to pyproject.toml\n"
    )
    assert (project / "zoo" / "net.py").read_text() == MODEL


def test_each_path_is_verified_with_its_own_configuration(tmp_path):
    """Two projects on one command line: each one's [[tool.migrator.verify]] targets are
    verified (not only the first path's), and both files are written."""
    for name in ("first", "second"):
        (tmp_path / name / "models").mkdir(parents=True)
        (tmp_path / name / "models" / "net.py").write_text(MODEL)
        (tmp_path / name / "pyproject.toml").write_text(
            '[tool.migrator]\n\n[[tool.migrator.verify]]\ntarget = "models/net.py:Net"\n'
        )
    result = migrator("fix", "--verify", "first/models", "second/models", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout.count("=> PASS") == 2, result.stdout
    assert "not written" not in result.stderr
    for name in ("first", "second"):
        assert "self.relu(self.conv(x))" in (tmp_path / name / "models" / "net.py").read_text()
