"""`migrator fix` and `migrator check` as a user runs them: output, exit codes, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MODEL = """import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)

    def forward(self, x):
        return F.relu(self.conv(x))
"""
FIXED = """import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv(x))
"""
SHARED_CONV = """import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)

    def forward(self, x):
        return self.conv(self.conv(x))
"""


def migrator(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "migrator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "net.py").write_text(MODEL)
    (tmp_path / "models" / "clean.py").write_text(FIXED)
    return tmp_path


def test_fix_rewrites_in_place_and_reports(tree):
    result = migrator("fix", "models", cwd=tree)
    assert result.returncode == 1, result.stderr
    assert (tree / "models" / "net.py").read_text() == FIXED
    assert "fixed models/net.py" in result.stdout
    assert "MIG001" in result.stdout
    assert "1 file(s) changed" in result.stderr
    again = migrator("fix", "models", cwd=tree)
    assert again.returncode == 0 and again.stdout == ""


def test_fix_diff_writes_nothing(tree):
    result = migrator("fix", "--diff", "models", cwd=tree, env={"NO_COLOR": "1"})
    assert result.returncode == 1
    assert (tree / "models" / "net.py").read_text() == MODEL
    assert "--- a/models/net.py\n+++ b/models/net.py\n" in result.stdout
    assert (
        "-        return F.relu(self.conv(x))\n+        return self.relu(self.conv(x))\n"
        in result.stdout
    )
    assert "\033[" not in result.stdout


def test_fix_check_exit_codes(tree):
    assert migrator("fix", "--check", "models", cwd=tree).returncode == 1
    assert (tree / "models" / "net.py").read_text() == MODEL
    assert migrator("fix", "--check", "models/clean.py", cwd=tree).returncode == 0


def test_check_prints_findings_and_json(tree):
    (tree / "models" / "shared.py").write_text(SHARED_CONV)
    result = migrator("check", "models", cwd=tree)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("models/net.py:11:16: MIG001 F.relu -> `self.relu`")
    assert lines[1].startswith("models/shared.py:10:16: MIG103 `self.conv` is called at 2 sites")
    data = json.loads(migrator("check", "--format", "json", "models", cwd=tree).stdout)
    assert [(d["path"], d["line"], d["col"], d["code"], d["fixable"]) for d in data] == [
        ("models/net.py", 11, 16, "MIG001", True),
        ("models/shared.py", 10, 16, "MIG103", False),
    ]
    assert migrator("check", "models/clean.py", cwd=tree).returncode == 0


def test_check_imports_no_other_command_nor_editing_module(tree):
    """`check` compiles only what it runs (bytecode is not always cached): the other commands'
    modules and the editing ones load when a command or a rewrite needs them."""
    code = (
        "import sys; from migrator.cli import main; code = main(['check', 'models']); "
        "print(code, sorted(m for m in sys.modules if m.startswith('migrator.')))"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, env=env, check=True
    ).stdout
    loaded = out.splitlines()[-1]
    assert loaded.startswith("1 [") and "'migrator.rewrite.analyze'" in loaded
    for module in ("commands.fix", "commands.verify", "commands.export", "report"):
        assert f"'migrator.{module}'" not in loaded
    for module in ("edit", "splice", "regions", "imports", "unused", "codemod"):
        assert f"'migrator.rewrite.{module}'" not in loaded


def test_bad_files_are_reported_and_others_still_processed(tree):
    (tree / "models" / "broken.py").write_text("class A(:\n    pass\n")
    (tree / "models" / "latin.py").write_bytes(b"x = '\xe9'\n")
    result = migrator("fix", "models", cwd=tree)
    assert result.returncode == 2
    errors = result.stderr.splitlines()
    assert any(e.startswith("models/broken.py:1: ") for e in errors)
    assert any(e.startswith("models/latin.py:1: ") for e in errors)
    assert (tree / "models" / "broken.py").read_text() == "class A(:\n    pass\n"
    assert (tree / "models" / "net.py").read_text() == FIXED


def test_usage_error_exits_2(tree):
    assert migrator("fix", "--bogus", cwd=tree).returncode == 2


def test_static_commands_never_import_torch(tree):
    code = (
        "import sys; from migrator.cli import main; rc = main(['check', 'models']); "
        "print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "False"
    code = code.replace("'check'", "'fix'")
    result = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "False"


def test_ops_module_writes_the_op_modules_into_the_project(tree):
    (tree / "pyproject.toml").write_text('[tool.migrator]\nops_module = "models.quant_ops"\n')
    (tree / "models" / "__init__.py").write_text("")
    (tree / "models" / "add.py").write_text(
        MODEL.replace("F.relu(self.conv(x))", "self.conv(x) + x")
    )
    result = migrator("fix", "models", cwd=tree)
    assert result.returncode == 1, result.stderr
    text = (tree / "models" / "add.py").read_text()
    assert "from models.quant_ops import Add\n" in text and "migrator" not in text
    ops = tree / "models" / "quant_ops.py"
    assert ops.read_text() == (Path(__file__).parent.parent / "migrator" / "nn.py").read_text()


def test_unknown_config_key_is_reported(tree):
    (tree / "pyproject.toml").write_text('[tool.migrator]\nopsmodule = "x"\n')
    result = migrator("check", "models/clean.py", cwd=tree)
    assert "unknown key `opsmodule` in [tool.migrator]" in result.stderr


# --------------------------------------------------------------------------- paths


@pytest.mark.parametrize("command", [["check"], ["fix"], ["fix", "--check"]])
def test_paths_naming_no_python_file_fail_the_run(tree, command):
    """`migrator check src/modles` must not pass a CI gate; the other paths are still done."""
    (tree / "notes.txt").write_text("not python\n")
    result = migrator(*command, "src/modles", "notes.txt", "models", cwd=tree)
    assert result.returncode == 2, result.stderr
    errors = result.stderr.splitlines()
    assert errors[:2] == [
        "migrator: src/modles: no such file or directory",
        "migrator: notes.txt: not a Python file",
    ]
    assert "models/net.py" in result.stdout
    assert (tree / "models" / "net.py").read_text() == (FIXED if command == ["fix"] else MODEL)


@pytest.mark.parametrize("name", ["x" * 300, "loop"])
def test_paths_that_cannot_be_looked_at_are_one_line(tree, name):
    """A name too long or a symlink loop used to end in a traceback."""
    (tree / "loop").symlink_to(tree / "loop")
    result = migrator("check", name, "models/clean.py", cwd=tree)
    assert result.returncode == 2
    assert result.stderr.startswith(f"migrator: {name}: cannot read: ")
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


def test_unreadable_folder_fails_the_run(tree, monkeypatch, capsys):
    from migrator import files
    from migrator.cli import main

    (tree / "models" / "secret").mkdir()
    (tree / "models" / "secret" / "s.py").write_text(MODEL)
    scandir = os.scandir

    def refuse(path):
        if Path(path).name == "secret":
            raise PermissionError(13, "Permission denied")
        return scandir(path)

    monkeypatch.setattr(files.os, "scandir", refuse)
    monkeypatch.chdir(tree)
    assert main(["check", "models"]) == 2
    out, err = capsys.readouterr()
    assert err == "migrator: models/secret: cannot read folder: Permission denied\n"
    assert out.startswith("models/net.py:11:16: MIG001")


def test_fix_check_fails_only_when_a_file_would_change(tree):
    (tree / "models" / "shared.py").write_text(SHARED_CONV)
    result = migrator("fix", "--check", "models/shared.py", "models/clean.py", cwd=tree)
    assert result.returncode == 0, result.stderr
    assert "models/shared.py:10:16: MIG103" in result.stdout
    assert migrator("fix", "--check", "models", cwd=tree).returncode == 1


# --------------------------------------------------------------------------- stdin


def piped(*args: str, source: bytes, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "migrator", *args], cwd=cwd, input=source, capture_output=True
    )


def test_fix_stdin_prints_the_source_fixed_or_unchanged(tree):
    result = piped("fix", "-", source=MODEL.encode(), cwd=tree)
    assert result.returncode == 1
    assert result.stdout == FIXED.encode()
    assert b"fixed -\n  -:11:16: MIG001 F.relu" in result.stderr
    crlf = FIXED.replace("\n", "\r\n").encode()
    assert piped("fix", "-", source=crlf, cwd=tree).stdout == crlf  # unchanged, byte for byte
    shared = piped("fix", "-", source=SHARED_CONV.encode(), cwd=tree)
    assert shared.returncode == 1 and shared.stdout == SHARED_CONV.encode()
    assert b"-:10:16: MIG103" in shared.stderr  # findings on stderr, never in the source
    broken = piped("fix", "-", source=b"class A(:\n", cwd=tree)
    assert (broken.returncode, broken.stdout) == (2, b"class A(:\n")
    assert broken.stderr.startswith(b"-:1: syntax error")
    diff = piped("fix", "--diff", "-", source=MODEL.encode(), cwd=tree)
    assert diff.stdout.startswith(b"--- a/-\n+++ b/-\n") and diff.returncode == 1
    check = piped("fix", "--check", "-", source=MODEL.encode(), cwd=tree)
    assert (check.returncode, check.stdout) == (1, b"") and b"would fix -" in check.stderr
    assert not (tree / "-").exists()


def test_check_stdin_and_stdin_filename(tree):
    result = piped("check", "-", source=MODEL.encode(), cwd=tree)
    assert result.returncode == 1
    assert result.stdout.startswith(b"-:11:16: MIG001 F.relu")
    named = piped(
        "check", "-", "--stdin-filename", "models/net.py", source=MODEL.encode(), cwd=tree
    )
    assert named.stdout.startswith(b"models/net.py:11:16: MIG001")
    assert piped("check", "-", source=FIXED.encode(), cwd=tree).returncode == 0
    # The name picks the settings (those of its folder) and is matched against their `exclude`.
    (tree / "models" / "pyproject.toml").write_text(
        '[tool.migrator]\ndisable = ["MIG103"]\nexclude = ["legacy"]\n'
    )
    assert piped("check", "-", source=SHARED_CONV.encode(), cwd=tree).returncode == 1
    args = ("-", "--stdin-filename", "models/shared.py")
    assert piped("check", *args, source=SHARED_CONV.encode(), cwd=tree).returncode == 0
    args = ("-", "--stdin-filename", "models/legacy/old.py")
    excluded = piped("fix", *args, source=MODEL.encode(), cwd=tree)
    assert (excluded.returncode, excluded.stdout) == (0, MODEL.encode())
    assert piped("check", *args, source=MODEL.encode(), cwd=tree).stdout == b""


@pytest.mark.parametrize(
    "args", [["-", "models"], ["--stdin-filename", "a.py", "models"], ["--verify", "-"]]
)
def test_stdin_misuse_is_a_usage_error(tree, args):
    command = "fix" if "--verify" in args else "check"
    result = piped(command, *args, source=MODEL.encode(), cwd=tree)
    assert result.returncode == 2 and result.stdout == b""
    assert len(result.stderr.splitlines()) == 1
