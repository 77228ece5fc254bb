"""Configuration discovery as ruff and black do it, on real folder trees: the nearest
`pyproject.toml` with a `[tool.migrator]` table governs each file, globs are matched relative to
its folder, `--config` overrides the search, and the code selection settings."""

from __future__ import annotations

from pathlib import Path

from test_cli import MODEL, SHARED_CONV, migrator


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def reported(result) -> list[str]:
    """`path CODE` of each finding printed."""
    return sorted(f"{line.split(':')[0]} {line.split()[1]}" for line in result.stdout.splitlines())


def test_nested_pyproject_without_table_keeps_the_roots_settings(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.migrator]\ndisable = ["MIG001"]\n',
            "pkg/pyproject.toml": '[project]\nname = "pkg"\n',
            "pkg/net.py": MODEL,
        },
    )
    assert migrator("check", ".", cwd=tmp_path).returncode == 0
    assert migrator("check", "pkg/net.py", cwd=tmp_path).returncode == 0
    assert migrator("check", ".", cwd=tmp_path / "pkg").returncode == 0


def test_nearest_table_governs_each_file_of_one_walk(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.migrator]\ndisable = ["MIG001"]\n',
            "a/net.py": MODEL,
            "a/shared.py": SHARED_CONV,
            "b/pyproject.toml": '[tool.migrator]\ndisable = ["MIG103"]\n',
            "b/net.py": MODEL,
            "b/shared.py": SHARED_CONV,
        },
    )
    expected = ["a/shared.py MIG103", "b/net.py MIG001"]
    assert reported(migrator("check", ".", cwd=tmp_path)) == expected
    # each path given gets its own configuration, whichever comes first
    assert reported(migrator("check", "b", "a", cwd=tmp_path)) == expected
    assert reported(migrator("check", "b/net.py", "a/net.py", cwd=tmp_path)) == ["b/net.py MIG001"]


def test_explicit_config_overrides_discovery(tmp_path):
    write(
        tmp_path,
        {
            "b/pyproject.toml": '[tool.migrator]\ndisable = ["MIG103"]\n',
            "b/net.py": MODEL,
            "b/shared.py": SHARED_CONV,
            "other.toml": '[tool.migrator]\ndisable = ["MIG001"]\nexclude = ["x*"]\n',
            "b/x.py": MODEL,
        },
    )
    result = migrator("check", "--config", "other.toml", "b", cwd=tmp_path)
    assert reported(result) == ["b/shared.py MIG103"]


def test_readme_exclude_example_matches_at_any_depth(tmp_path):
    """The README's `exclude = ["legacy/*"]` leaves out sub/legacy/old.py on `check .` from the
    root, and globs are matched relative to the configuration's folder, wherever migrator runs."""
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.migrator]\nexclude = ["legacy/*", "sub/gen/*"]\n',
            "sub/legacy/old.py": MODEL,
            "legacy/old.py": MODEL,
            "sub/gen/g.py": MODEL,
            "gen/g.py": MODEL,
            "sub/net.py": MODEL,
        },
    )
    assert reported(migrator("check", ".", cwd=tmp_path)) == [
        "gen/g.py MIG001",
        "sub/net.py MIG001",
    ]
    assert reported(migrator("check", ".", cwd=tmp_path / "sub")) == ["net.py MIG001"]
    assert migrator("check", "gen/g.py", cwd=tmp_path / "sub").returncode == 0  # excluded
    assert reported(migrator("check", str(tmp_path / "sub"), cwd=tmp_path.parent)) == [
        f"{tmp_path / 'sub' / 'net.py'} MIG001"
    ]


def test_nested_configuration_excludes_relative_to_its_folder(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.migrator]\n",
            "pkg/pyproject.toml": '[tool.migrator]\nexclude = ["/gen"]\n',
            "pkg/gen/g.py": MODEL,
            "gen/g.py": MODEL,
        },
    )
    assert reported(migrator("check", ".", cwd=tmp_path)) == ["gen/g.py MIG001"]


def test_extend_exclude_adds_to_exclude(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.migrator]\nexclude = ["a.py"]\nextend-exclude = ["b.py"]\n',
            "a.py": MODEL,
            "b.py": MODEL,
            "c.py": MODEL,
        },
    )
    assert reported(migrator("check", ".", cwd=tmp_path)) == ["c.py MIG001"]
    # --exclude replaces `exclude` only
    assert reported(migrator("check", ".", "--exclude", "c.py", cwd=tmp_path)) == ["a.py MIG001"]
    assert reported(migrator("check", ".", "--extend-exclude", "c.py", cwd=tmp_path)) == []


def test_per_file_ignores(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.migrator.per-file-ignores]\n"
            '"legacy/*" = ["MIG0"]\n"shared.py" = ["MIG103"]\n',
            "legacy/net.py": MODEL,
            "legacy/shared.py": SHARED_CONV,
            "legacy/other.py": SHARED_CONV,
            "net.py": MODEL,
            "shared.py": SHARED_CONV,
        },
    )
    assert reported(migrator("check", ".", cwd=tmp_path)) == [
        "legacy/other.py MIG103",
        "net.py MIG001",
    ]
    fixed = migrator("fix", ".", cwd=tmp_path)
    assert (tmp_path / "legacy/net.py").read_text() == MODEL  # ignored fixes are not made
    assert (tmp_path / "net.py").read_text() != MODEL and fixed.returncode == 1


def test_select_and_ignore(tmp_path):
    write(tmp_path, {"net.py": MODEL, "shared.py": SHARED_CONV})
    assert reported(migrator("check", ".", "--select", "MIG1", cwd=tmp_path)) == [
        "shared.py MIG103"
    ]
    assert reported(migrator("check", ".", "--ignore", "MIG103", cwd=tmp_path)) == ["net.py MIG001"]
    write(tmp_path, {"pyproject.toml": '[tool.migrator]\nselect = ["MIG001"]\n'})
    assert reported(migrator("check", ".", cwd=tmp_path)) == ["net.py MIG001"]
    unknown = migrator("check", ".", "--select", "MIG9", cwd=tmp_path)
    assert "--select: unknown code `MIG9`" in unknown.stderr


def test_unreadable_nested_configuration_fails_its_files_only(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.migrator]\n",
            "net.py": MODEL,
            "pkg/pyproject.toml": "[tool.migrator\n",
            "pkg/net.py": MODEL,
        },
    )
    result = migrator("check", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert reported(result) == ["net.py MIG001"]
    assert "pkg/net.py:0: not processed:" in result.stderr
    assert (tmp_path / "pkg/net.py").read_text() == MODEL
