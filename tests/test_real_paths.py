"""`real_paths` gives what `os.path.realpath` and `Path.resolve` give, symlinks included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from migrator.rewrite.project import kept_module_name
from migrator.rewrite.real_paths import real_path, resolved


def test_same_as_realpath_and_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real" / "pkg"
    real.mkdir(parents=True)
    (real / "a.py").write_text("x = 1\n")
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    (real / "b.py").symlink_to(real / "a.py")
    (real / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    monkeypatch.chdir(tmp_path / "linked")
    paths = [
        real / "a.py",
        real / "b.py",
        real / "dangling.py",
        real / "missing.py",
        tmp_path / "linked" / "pkg" / "a.py",
        tmp_path / "linked" / "pkg" / "b.py",
        tmp_path / "linked" / "pkg" / ".." / "pkg" / "a.py",
        tmp_path / "linked" / "pkg" / "..",
        tmp_path / "nowhere" / "x.py",
        Path("pkg/a.py"),
        Path("pkg"),
        Path("."),
    ]
    for path in paths:
        assert real_path(path) == os.path.realpath(path), path
        assert real_path(str(path)) == os.path.realpath(path), path
        assert resolved(path) == path.resolve(), path
    assert resolved(tmp_path / "linked" / "pkg" / "b.py") == real / "a.py"


def test_a_changed_link_is_followed(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text("")
    (tmp_path / "two.py").write_text("")
    link = tmp_path / "link.py"
    link.symlink_to(tmp_path / "one.py")
    assert real_path(link) == str(tmp_path.resolve() / "one.py")
    link.unlink()
    link.symlink_to(tmp_path / "two.py")
    assert real_path(link) == str(tmp_path.resolve() / "two.py")


def test_a_symlink_loop_raises_as_resolve_does(tmp_path: Path) -> None:
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    with pytest.raises(RuntimeError):
        (tmp_path / "a.py").resolve()
    with pytest.raises(RuntimeError):
        resolved(tmp_path / "a.py")
    assert real_path(tmp_path / "a.py") == os.path.realpath(tmp_path / "a.py")


def test_kept_module_name_follows_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same relative path, with the same size and modification time, in another working
    directory names another module: `kept_module_name` keeps what it found by absolute path."""
    inside, outside = tmp_path / "a" / "pkg", tmp_path / "b"
    inside.mkdir(parents=True)
    outside.mkdir()
    (inside / "__init__.py").write_text("")
    for folder in (inside, outside):
        (folder / "m.py").write_text("x = 1\n")
        os.utime(folder / "m.py", ns=(1_000_000_000, 1_000_000_000))
    monkeypatch.chdir(inside)
    assert kept_module_name(Path("m.py"))[0] == "pkg.m"
    monkeypatch.chdir(outside)
    assert kept_module_name(Path("m.py"))[0] == "m"
