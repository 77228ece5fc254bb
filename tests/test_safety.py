"""`migrator fix` end to end on what real trees hold: bad inputs get one clear line and stay
untouched, good files keep their bytes' conventions, discovery and [tool.migrator] decide what
is touched at all."""

from __future__ import annotations

import codecs
import os
import re
import shutil
import stat
import subprocess

import pytest

from migrator import runner
from migrator.cli import main
from test_cli import FIXED, MODEL, SHARED_CONV, migrator

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and symlinks")

NOT_TORCH = """import torch.nn.functional as F


class Module:
    def __call__(self, x):
        return self.forward(x)


class Net(Module):
    def forward(self, x):
        return F.relu(x)
"""

BAD_INPUTS = {
    "syntax_error": (b"class Net(:\n    pass\n", r"1: syntax error: "),
    "non_utf8": (b"x = 1\ny = '\xe9'\n", r"2: cannot decode byte\(s\) e9 as utf-8"),
    "bad_cookie": (b"# -*- coding: klingon -*-\nx = 1\n", r"1: bad encoding declaration: "),
    "nul_byte": (b"x = 1\0\n", r"1: contains a NUL byte"),
    "inconsistent_tabs": (
        MODEL.replace("        self.conv", "\tself.conv").encode(),
        r"8: syntax error: inconsistent use of tabs and spaces",
    ),
    "too_deep": (b"x = " + b"-" * 100_000 + b"1\n", r"0: too deeply nested to parse"),
}


@pytest.mark.parametrize("name", BAD_INPUTS)
def test_bad_input_gets_one_line_and_stays_untouched(tmp_path, name):
    data, message = BAD_INPUTS[name]
    (tmp_path / "bad.py").write_bytes(data)
    (tmp_path / "net.py").write_text(MODEL)
    result = migrator("fix", ".", cwd=tmp_path)
    assert result.returncode == 2
    about_bad = [line for line in result.stderr.splitlines() if "bad.py" in line]
    assert len(about_bad) == 1 and re.fullmatch(rf"bad\.py:{message}.*", about_bad[0]), about_bad
    assert (tmp_path / "bad.py").read_bytes() == data
    assert (tmp_path / "net.py").read_text() == FIXED  # the others are still processed


GOOD_NO_WORK = {
    "empty": b"",
    "bom_only": codecs.BOM_UTF8,
    "blank_lines": b"\n\n   \n",
    "not_torch_module": NOT_TORCH.encode(),
}


@pytest.mark.parametrize("name", GOOD_NO_WORK)
def test_file_without_work_is_left_alone_quietly(tmp_path, name):
    path = tmp_path / "model.py"
    path.write_bytes(GOOD_NO_WORK[name])
    before = os.stat(path)
    result = migrator("fix", "model.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr.startswith("0 file(s) changed")
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def _filler(lines: int) -> str:
    return "".join(f"CONSTANT_{i} = {i}\n" for i in range(lines))


def test_huge_file_is_checked_and_fixed(tmp_path):
    """Checked at 200,000 lines; fixed at 20,000 (LibCST takes ~0.3 ms a line to rewrite)."""
    (tmp_path / "huge.py").write_text(_filler(200_000) + MODEL)
    checked = migrator("check", "huge.py", cwd=tmp_path)
    assert checked.stdout.startswith("huge.py:200011:16: MIG001 F.relu"), checked.stderr
    (tmp_path / "big.py").write_text(_filler(20_000) + MODEL)
    result = migrator("fix", "big.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert (tmp_path / "big.py").read_text() == _filler(20_000) + FIXED


def _reindent(source: str, body: str) -> str:
    """Methods indented by a tab, their bodies by `body`."""
    return source.replace("        ", body).replace("    def", "\tdef")


@pytest.mark.parametrize("body", ["\t\t", "\t    "], ids=["tabs", "tab_then_spaces"])
def test_tab_indented_model_keeps_its_indentation(tmp_path, body):
    (tmp_path / "net.py").write_text(_reindent(MODEL, body))
    assert migrator("fix", "net.py", cwd=tmp_path).returncode == 1
    assert (tmp_path / "net.py").read_text() == _reindent(FIXED, body)


CONVENTIONS = {
    "crlf": (lambda t: t.replace("\n", "\r\n").encode(), None),
    "bom": (lambda t: codecs.BOM_UTF8 + t.encode(), None),
    "latin1_cookie": (
        lambda t: ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + t).encode("latin-1"),
        None,
    ),
    "no_final_newline": (lambda t: t.rstrip("\n").encode(), None),
    "executable": (lambda t: t.encode(), 0o755),
    "private": (lambda t: t.encode(), 0o600),
}


@pytest.mark.parametrize("name", CONVENTIONS)
def test_fix_keeps_the_file_conventions(tmp_path, name):
    encode, mode = CONVENTIONS[name]
    path = tmp_path / "net.py"
    path.write_bytes(encode(MODEL))
    if mode is not None:
        path.chmod(mode)
    result = migrator("fix", "net.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert path.read_bytes() == encode(FIXED)
    if mode is not None:
        assert stat.S_IMODE(path.stat().st_mode) == mode
    assert os.listdir(tmp_path) == ["net.py"]  # no temporary file left behind


@pytest.mark.parametrize("race", ["deleted", "edited"])
def test_file_touched_between_read_and_write(tmp_path, monkeypatch, capsys, race):
    path = tmp_path / "net.py"
    path.write_text(MODEL)
    read = runner.read_source

    def read_then_race(p):
        source = read(p)
        if race == "deleted":
            os.unlink(p)
        else:
            p.write_text(MODEL + "# edited meanwhile\n")
        return source

    monkeypatch.setattr(runner, "read_source", read_then_race)
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "net.py"]) == 2
    errors = capsys.readouterr().err.splitlines()
    reason = "deleted since it was read" if race == "deleted" else "changed on disk since"
    assert errors[0].startswith("net.py:0: file was " if race == "deleted" else "net.py:0: file ")
    assert reason in errors[0]
    if race == "deleted":
        assert not path.exists()
    else:
        assert path.read_text() == MODEL + "# edited meanwhile\n"
    assert os.listdir(tmp_path) == ([] if race == "deleted" else ["net.py"])


@posix_only
def test_read_only_file_is_reported_not_forced(tmp_path):
    path = tmp_path / "net.py"
    path.write_text(MODEL)
    path.chmod(0o444)
    result = migrator("fix", "net.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == "net.py:0: file is read-only; not written"
    assert path.read_text() == MODEL and stat.S_IMODE(path.stat().st_mode) == 0o444


@posix_only
def test_symlinks_are_not_followed_out_of_the_tree(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text(MODEL)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link.py").symlink_to(outside)
    (tree / "linked_dir").symlink_to(tmp_path, target_is_directory=True)
    result = migrator("fix", "tree", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert outside.read_text() == MODEL
    explicit = migrator("fix", "tree/link.py", cwd=tmp_path)
    assert explicit.returncode == 2
    assert (
        "tree/link.py:0: is a symbolic link; migrator does not write through links"
        in explicit.stderr
    )
    assert outside.read_text() == MODEL


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_discovery_skips_ignored_hidden_and_virtualenv_folders(tmp_path):
    for rel in (
        "models/net.py",
        "generated/net.py",
        ".cache/net.py",
        "venv/lib/net.py",
        "myenv/net.py",
        "models/out/net.py",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(MODEL)
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / ".gitignore").write_text("generated/\nout/\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    result = migrator("fix", ".", cwd=tmp_path)
    assert result.stdout.splitlines()[0] == "fixed models/net.py"
    assert result.stderr.startswith("1 file(s) changed")
    for rel in (
        "generated/net.py",
        ".cache/net.py",
        "venv/lib/net.py",
        "myenv/net.py",
        "models/out/net.py",
    ):
        assert (tmp_path / rel).read_text() == MODEL, rel


def test_config_exclude_and_disable_and_their_flags(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.migrator]\nexclude = ["legacy"]\ndisable = ["MIG103"]\n'
    )
    for rel in ("src/models/net.py", "src/legacy/net.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(MODEL)
    (tmp_path / "src" / "models" / "shared.py").write_text(SHARED_CONV)

    def found(result: subprocess.CompletedProcess) -> list[str]:
        return [
            re.sub(r":\d+:\d+: (MIG\d+) .*", r" \1", line).replace(os.sep, "/")
            for line in result.stdout.splitlines()
        ]

    # Found by walking up from the path, whatever the working directory.
    checked = migrator("check", str(tmp_path / "src"), cwd=tmp_path / "src" / "models")
    assert found(checked) == [f"{tmp_path.as_posix()}/src/models/net.py MIG001"]

    # Flags replace the settings.
    flagged = migrator("check", "--exclude", "nothing", "--disable", "mig201", "src", cwd=tmp_path)
    assert found(flagged) == [
        "src/legacy/net.py MIG001",
        "src/models/net.py MIG001",
        "src/models/shared.py MIG103",
    ]
    assert flagged.stderr == ""
    unknown = migrator("check", "--disable", "MIG999", "src/models/net.py", cwd=tmp_path)
    assert unknown.stderr.startswith("--disable: unknown code `MIG999` in `disable`")


def test_disabled_fix_is_left_out_and_the_others_are_made(tmp_path):
    source = MODEL.replace("return F.relu(self.conv(x))", "return F.relu(self.conv(x)) + x")
    assert source != MODEL
    (tmp_path / "net.py").write_text(source)
    result = migrator("fix", "--disable", "MIG001", "net.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    text = (tmp_path / "net.py").read_text()
    assert "return self.add(F.relu(self.conv(x)), x)" in text
    assert "MIG001" not in result.stdout and "MIG002" in result.stdout
