"""Tests for migrator.files: byte-faithful reading/writing and file discovery."""

from __future__ import annotations

import os
import pickle
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrator import files
from migrator.files import (
    Rules,
    SourceError,
    discover,
    encode_source,
    read_source,
    syntax_error,
    write_source,
)


def rules(**settings):
    """A `discover` rules callback: the same `Rules` in every folder."""
    return lambda folder: Rules(**settings)


posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and symlinks")


def make(path: Path, data: bytes, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mode is not None:
        path.chmod(mode)
    return path


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "migrator-tmp" in p.name)


# -- reading and round trips ---------------------------------------------------------------------

ROUND_TRIPS = {
    "utf8": (b"def foo():\n    return 'h\xc3\xa9llo \xe2\x82\xac'\n", "utf-8", False, "\n"),
    "utf8_bom": (b"\xef\xbb\xbfdef foo():\n    return '\xc3\xa9'\n", "utf-8", True, "\n"),
    "latin1_cookie": (
        b"# -*- coding: latin-1 -*-\ndef foo():\n    return 'caf\xe9 \xb5'\n",
        "iso-8859-1",
        False,
        "\n",
    ),
    "crlf": (b"def foo():\r\n    return 1\r\n\r\nfoo()\r\n", "utf-8", False, "\r\n"),
    "cr": (b"def foo():\r    return 1\r", "utf-8", False, "\r"),
    "tabs": (b"def foo():\n\tif x:\n\t    return 1\n  \t# mixed\n", "utf-8", False, "\n"),
    "no_trailing_newline": (b"def foo():\n    return 1", "utf-8", False, "\n"),
    "empty": (b"", "utf-8", False, "\n"),
    "cookie_line2_crlf": (
        b"#!/usr/bin/env python\r\n# coding: cp1252\r\nfoo = '\x80'\r\n",
        "cp1252",
        False,
        "\r\n",
    ),
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_round_trip_keeps_bytes(tmp_path: Path, name: str) -> None:
    raw, encoding, bom, newline = ROUND_TRIPS[name]
    path = make(tmp_path / f"{name}.py", raw)
    src = read_source(path)

    assert (src.encoding, src.bom, src.newline) == (encoding, bom, newline)
    assert "\r" not in src.text and not src.text.startswith("\ufeff")
    assert src.raw == raw
    assert encode_source(src, src.text) == raw
    # A real edit goes through the encoding path, not the "unchanged" shortcut.
    assert encode_source(src, src.text.replace("foo", "bar")) == raw.replace(b"foo", b"bar")
    assert write_source(src, src.text) is False
    assert path.read_bytes() == raw


def test_text_is_decoded_and_normalised(tmp_path: Path) -> None:
    src = read_source(make(tmp_path / "a.py", ROUND_TRIPS["latin1_cookie"][0]))
    assert src.text == "# -*- coding: latin-1 -*-\ndef foo():\n    return 'café µ'\n"
    src = read_source(make(tmp_path / "b.py", b"a = 1\r\nb = 2\r\n"))
    assert src.text == "a = 1\nb = 2\n"


def test_mixed_line_endings(tmp_path: Path) -> None:
    raw = b"a = 1\r\nb = 2\r\nc = 3\n"
    src = read_source(make(tmp_path / "m.py", raw))
    assert src.newline == "\r\n"
    assert encode_source(src, src.text) == raw  # untouched file stays byte identical
    assert encode_source(src, src.text + "d = 4\n") == b"a = 1\r\nb = 2\r\nc = 3\r\nd = 4\r\n"


def test_new_text_with_crlf_is_not_doubled(tmp_path: Path) -> None:
    src = read_source(make(tmp_path / "a.py", b"x = 1\r\n"))
    assert encode_source(src, "x = 2\r\n") == b"x = 2\r\n"


LINE_STYLE = st.sampled_from(["\n", "\r\n", "\r"])
LINES = st.lists(
    st.text(st.characters(blacklist_characters="\r\n\x00\ufeff", blacklist_categories=("Cs",))),
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(lines=LINES, newline=LINE_STYLE, bom=st.booleans(), trailing=st.booleans())
def test_round_trip_property(tmp_path_factory, lines, newline, bom, trailing) -> None:
    text = "\n".join(lines) + ("\n" if trailing and lines else "")
    raw = (b"\xef\xbb\xbf" if bom else b"") + text.replace("\n", newline).encode("utf-8")
    path = make(tmp_path_factory.mktemp("prop") / "p.py", raw)
    try:
        src = read_source(path)
    except SourceError as exc:  # random text may contain a coding cookie
        assert "encoding" in exc.reason
        return
    assert src.text == text
    assert encode_source(src, src.text + "#") == raw + b"#"


# -- read errors ---------------------------------------------------------------------------------


def test_source_error_is_one_line_and_picklable(tmp_path: Path) -> None:
    err = SourceError(tmp_path / "a.py", 3, "something\nbad")
    assert str(err) == f"{tmp_path / 'a.py'}:3: something bad"
    assert str(SourceError("a.py", None, "x")) == "a.py:0: x"
    copy = pickle.loads(pickle.dumps(err))
    assert str(copy) == str(err) and copy.line == 3


def test_invalid_utf8_names_line_and_encoding(tmp_path: Path) -> None:
    path = make(tmp_path / "bad.py", b"a = 1\r\nb = 2\r\nc = '\xff'\r\n")
    with pytest.raises(SourceError) as info:
        read_source(path)
    assert info.value.line == 3
    assert str(info.value).startswith(f"{path}:3: ")
    assert "utf-8" in str(info.value) and "ff" in str(info.value)
    assert "\n" not in str(info.value)


def test_invalid_utf8_on_first_line(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as info:
        read_source(make(tmp_path / "bad.py", b"x = '\xe9'\n"))
    assert info.value.line == 1 and "utf-8" in info.value.reason


def test_unknown_cookie(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as info:
        read_source(make(tmp_path / "c.py", b"#!/usr/bin/python\n# coding: klingon\nx = 1\n"))
    assert info.value.line == 2 and "klingon" in info.value.reason


def test_nul_byte(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as info:
        read_source(make(tmp_path / "nul.py", b"x = 1\ny = '\x00'\n"))
    assert info.value.line == 2 and "NUL" in info.value.reason


def test_directory_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "pkg.py").mkdir()
    with pytest.raises(SourceError, match="directory"):
        read_source(tmp_path / "pkg.py")
    with pytest.raises(SourceError, match="No such file"):
        read_source(tmp_path / "missing.py")


@posix_only
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path: Path) -> None:
    path = make(tmp_path / "secret.py", b"x = 1\n", mode=0o000)
    with pytest.raises(SourceError, match="Permission denied"):
        read_source(path)


def test_syntax_error_helper(tmp_path: Path) -> None:
    try:
        compile("x = 1\ny = (\n", "f.py", "exec")
    except SyntaxError as exc:
        err = syntax_error(tmp_path / "f.py", exc)
    assert str(err) == f"{tmp_path / 'f.py'}:2: syntax error: '(' was never closed"


# -- writing -------------------------------------------------------------------------------------


def test_unchanged_content_is_not_written(tmp_path: Path) -> None:
    path = make(tmp_path / "a.py", b"x = 1\n")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    src = read_source(path)
    assert write_source(src, "x = 1\n") is False
    assert path.stat().st_mtime_ns == 1_000_000_000
    assert leftovers(tmp_path) == []


@posix_only
def test_change_is_written_keeping_mode_encoding_and_newlines(tmp_path: Path) -> None:
    raw = b"\xef\xbb\xbf#!/usr/bin/env python\r\nx = '\xc3\xa9'\r\n"
    path = make(tmp_path / "tool.py", raw, mode=0o755)
    src = read_source(path)
    assert src.mode == 0o755
    assert write_source(src, src.text.replace("x", "y")) is True
    assert path.read_bytes() == raw.replace(b"x =", b"y =")
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tool.py"]


def test_unencodable_text_is_refused(tmp_path: Path) -> None:
    raw = b"# coding: latin-1\nx = 'caf\xe9'\n"
    path = make(tmp_path / "l.py", raw)
    src = read_source(path)
    with pytest.raises(SourceError) as info:
        write_source(src, src.text + "y = '\u20ac'\n")
    assert info.value.line == 3
    assert "iso-8859-1" in info.value.reason and "U+20AC" in info.value.reason
    assert path.read_bytes() == raw
    assert leftovers(tmp_path) == []


@posix_only
def test_read_only_file_is_refused(tmp_path: Path) -> None:
    path = make(tmp_path / "ro.py", b"x = 1\n", mode=0o444)
    src = read_source(path)
    with pytest.raises(SourceError, match="read-only"):
        write_source(src, "x = 2\n")
    assert path.read_bytes() == b"x = 1\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert leftovers(tmp_path) == []


def test_deleted_file_is_refused(tmp_path: Path) -> None:
    path = make(tmp_path / "gone.py", b"x = 1\n")
    src = read_source(path)
    path.unlink()
    with pytest.raises(SourceError, match="deleted"):
        write_source(src, "x = 2\n")
    assert not path.exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("new_bytes", [b"x = 3\n", b"x = 1\n# appended\n", b""])
def test_modified_file_is_refused(tmp_path: Path, new_bytes: bytes) -> None:
    path = make(tmp_path / "a.py", b"x = 1\n")
    src = read_source(path)
    path.write_bytes(new_bytes)
    with pytest.raises(SourceError, match="changed"):
        write_source(src, "x = 2\n")
    assert path.read_bytes() == new_bytes
    assert leftovers(tmp_path) == []


@posix_only
def test_symlink_is_refused(tmp_path: Path) -> None:
    target = make(tmp_path / "real.py", b"x = 1\n")
    link = tmp_path / "link.py"
    link.symlink_to(target)
    src = read_source(link)  # reading through a link is fine
    with pytest.raises(SourceError, match="symbolic link"):
        write_source(src, "x = 2\n")
    assert link.is_symlink() and target.read_bytes() == b"x = 1\n"
    assert leftovers(tmp_path) == []


@posix_only
def test_file_replaced_by_symlink_after_read_is_refused(tmp_path: Path) -> None:
    path = make(tmp_path / "a.py", b"x = 1\n")
    other = make(tmp_path / "other.py", b"x = 1\n")
    src = read_source(path)
    path.unlink()
    path.symlink_to(other)
    with pytest.raises(SourceError, match="symbolic link"):
        write_source(src, "x = 2\n")
    assert other.read_bytes() == b"x = 1\n"


@pytest.mark.parametrize("failing", ["replace", "fsync", "chmod"])
def test_failed_write_leaves_original_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = make(tmp_path / "a.py", b"x = 1\n")
    src = read_source(path)

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, failing, boom)
    with pytest.raises(SourceError, match="No space left"):
        write_source(src, "x = 2\n")
    monkeypatch.undo()
    assert path.read_bytes() == b"x = 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_interrupted_write_cleans_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make(tmp_path / "a.py", b"x = 1\n")
    src = read_source(path)

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_source(src, "x = 2\n")
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_temp_file_is_created_next_to_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make(tmp_path / "sub" / "a.py", b"x = 1\n")
    src = read_source(path)
    seen = []
    real_replace = os.replace

    def spy(src_path, dst_path):
        seen.append(Path(src_path).parent)
        real_replace(src_path, dst_path)

    monkeypatch.setattr(files.os, "replace", spy)
    assert write_source(src, "x = 2\n") is True
    assert seen == [path.parent]
    assert path.read_bytes() == b"x = 2\n"


# -- discovery -----------------------------------------------------------------------------------


def rel(paths, root: Path) -> list[str]:
    return [Path(p).relative_to(root).as_posix() for p in paths]


def tree(root: Path, names: list[str]) -> None:
    for name in names:
        make(root / name, b"x = 1\n")


def test_discover_sorted_and_skips_hidden_venvs_and_build_dirs(tmp_path: Path) -> None:
    tree(
        tmp_path,
        [
            "b.py", "a.py", "z/c.py", "m/n/d.py", "notes.txt", "stub.pyi",
            ".hidden/h.py", ".tox/t.py", "myenv/lib/v.py", "venv/v.py", ".venv/v.py", "env/v.py",
            "build/b.py", "dist/d.py", "pkg.egg-info/e.py", "__pycache__/c.py",
            "node_modules/n.py", "lib/site-packages/s.py", ".hidden_file.py",
        ],
    )  # fmt: skip
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    found = rel(discover([tmp_path]), tmp_path)
    assert found == [".hidden_file.py", "a.py", "b.py", "m/n/d.py", "z/c.py"]
    assert rel(discover([tmp_path]), tmp_path) == found  # deterministic
    assert rel(discover([tmp_path], rules(include=("*.py", "*.pyi"))), tmp_path) == [
        ".hidden_file.py", "a.py", "b.py", "m/n/d.py", "stub.pyi", "z/c.py",
    ]  # fmt: skip


def test_discover_explicit_files(tmp_path: Path) -> None:
    tree(tmp_path, ["a.py", "b.pyi", "README.md", ".venv/x.py"])
    args = [tmp_path / n for n in ["a.py", "b.pyi", ".venv/x.py"]]
    assert rel(discover(args), tmp_path) == ["a.py", "b.pyi", ".venv/x.py"]


def test_discover_reports_paths_that_name_no_python_file(tmp_path: Path) -> None:
    """A missing path or an explicit non-Python file is an error, never silently skipped; the
    other paths are still yielded."""
    tree(tmp_path, ["a.py", "README.md"])
    args = ["missing.py", "src/modles", "README.md", "a.py", "a.py/x.py", "x" * 300]
    found = list(discover([tmp_path / name for name in args]))
    assert [str(item) for item in found] == [
        f"migrator: {tmp_path}/missing.py: no such file or directory",
        f"migrator: {tmp_path}/src/modles: no such file or directory",
        f"migrator: {tmp_path}/README.md: not a Python file",
        str(tmp_path / "a.py"),
        f"migrator: {tmp_path}/a.py/x.py: no such file or directory",
        f"migrator: {tmp_path}/{'x' * 300}: cannot read: File name too long",
    ]
    assert all(isinstance(item, files.PathError) for i, item in enumerate(found) if i != 3)
    assert (
        list(discover([tmp_path / "README.md"], rules(exclude=("*.md",)))) == []
    )  # excluded: skipped


def test_discover_reports_folders_it_cannot_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree(tmp_path, ["a.py", "secret/s.py", "z.py"])
    scandir = os.scandir

    def refuse(path):
        if Path(path).name == "secret":
            raise PermissionError(13, "Permission denied")
        return scandir(path)

    monkeypatch.setattr(files.os, "scandir", refuse)
    found = [str(item) for item in discover([tmp_path, tmp_path / "secret"])]
    assert found == [
        str(tmp_path / "a.py"),
        f"migrator: {tmp_path}/secret: cannot read folder: Permission denied",
        str(tmp_path / "z.py"),
        f"migrator: {tmp_path}/secret: cannot read folder: Permission denied",
    ]


def test_discover_yields_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree(tmp_path, ["pkg/a.py", "pkg/b.py"])
    monkeypatch.chdir(tmp_path)
    args = ["pkg/a.py", "pkg", "./pkg/a.py", tmp_path / "pkg", tmp_path / "pkg/b.py"]
    found = list(discover(args))
    assert found == [Path("pkg/a.py"), Path("pkg/b.py")]


def test_discover_exclude_globs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree(
        tmp_path,
        ["a.py", "a_test.py", "tests/fixtures/f.py", "tests/t.py", "gen/x.py", "src/gen/y.py"],
    )
    found = rel(
        discover([tmp_path], rules(exclude=("*_test.py", "tests/fixtures", "gen/"))), tmp_path
    )
    assert found == ["a.py", "tests/t.py"]
    assert rel(discover([tmp_path], rules(exclude=("src/*",))), tmp_path) == [
        "a.py", "a_test.py", "gen/x.py", "tests/fixtures/f.py", "tests/t.py",
    ]  # fmt: skip
    monkeypatch.chdir(tmp_path)  # explicit files are matched relative to the current folder
    assert list(
        discover(["tests/fixtures/f.py", "tests/t.py"], rules(exclude=("tests/fixtures",)))
    ) == [Path("tests/t.py")]
    assert list(discover(["gen/x.py", "a.py"], rules(exclude=("gen",)))) == [Path("a.py")]


@posix_only
def test_discover_symlinks(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    root = tmp_path / "root"
    tree(outside, ["o.py"])
    tree(root, ["pkg/real.py", ".private/p.py"])
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "self.py").symlink_to(root / "self.py")  # dangling loop
    (root / "linked_dir").symlink_to(outside, target_is_directory=True)
    (root / "out.py").symlink_to(outside / "o.py")
    (root / "a_alias.py").symlink_to(root / "pkg" / "real.py")
    (root / "b_private.py").symlink_to(root / ".private" / "p.py")
    (root / "dangling.py").symlink_to(root / "nowhere.py")

    found = rel(discover([root]), root)
    # Real files first; a link inside the root is only yielded if its target was not.
    assert found == ["pkg/real.py", "b_private.py"]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_discover_respects_gitignore(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text("generated/\n*_pb2.py\n")
    tree(
        tmp_path,
        ["a.py", "msg_pb2.py", "generated/g.py", "sub/b.py", "sub/out/o.py", "sub/keep_pb2.py"],
    )
    (tmp_path / "sub" / ".gitignore").write_text("out/\n")
    git(tmp_path, "add", "-f", "sub/keep_pb2.py")  # tracked files are never ignored

    assert rel(discover([tmp_path]), tmp_path) == ["a.py", "sub/b.py", "sub/keep_pb2.py"]
    assert rel(discover([tmp_path / "sub"]), tmp_path) == ["sub/b.py", "sub/keep_pb2.py"]
    assert rel(discover([tmp_path], respect_gitignore=False), tmp_path) == [
        "a.py", "generated/g.py", "msg_pb2.py", "sub/b.py", "sub/keep_pb2.py", "sub/out/o.py",
    ]  # fmt: skip
    # Explicit arguments win: an explicitly named ignored file or folder is processed.
    assert rel(discover([tmp_path / "msg_pb2.py", tmp_path / "generated"]), tmp_path) == [
        "msg_pb2.py", "generated/g.py",
    ]  # fmt: skip


def test_discover_without_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree(tmp_path, ["a.py", "generated/g.py"])
    (tmp_path / ".gitignore").write_text("generated/\n")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # git cannot be found
    assert rel(discover([tmp_path]), tmp_path) == ["a.py", "generated/g.py"]


def test_files_module_does_not_import_torch() -> None:
    code = "import sys, migrator.files; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
