"""The pre-commit hooks, installed by the real `pre-commit` from a snapshot of this checkout into
a temporary git repository: the fixing hook rewrites a staged model and fails the commit, the
next commit passes, and commits without Python files or with other files never crash it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_cli import FIXED, MODEL, SHARED_CONV

pytest.importorskip("pre_commit")
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

CHECKOUT = Path(__file__).resolve().parent.parent
CONFIG = """repos:
  - repo: {repo}
    rev: {rev}
    hooks:
      - id: migrator-fix
      - id: migrator-check
"""


def git(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )


def snapshot_checkout(target: Path, env: dict) -> str:
    """Commit what a pip install of this checkout needs into a new repository; its revision."""
    target.mkdir()
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(CHECKOUT / name, target / name)
    shutil.copytree(
        CHECKOUT / "migrator",
        target / "migrator",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    git("init", "-q", cwd=target, env=env)
    git("add", "-A", cwd=target, env=env)
    git("commit", "-q", "-m", "snapshot", cwd=target, env=env)
    return git("rev-parse", "HEAD", cwd=target, env=env).stdout.strip()


def test_hooks_fix_then_pass_and_never_crash(tmp_path):
    (tmp_path / "gitconfig").write_text("")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "NO_COLOR": "1",
    }
    rev = snapshot_checkout(tmp_path / "hooks", env)
    repo = tmp_path / "project"
    repo.mkdir()
    git("init", "-q", cwd=repo, env=env)
    (repo / ".pre-commit-config.yaml").write_text(CONFIG.format(repo=tmp_path / "hooks", rev=rev))
    subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )

    def commit(*files: str) -> tuple[int, str]:
        """Stage and commit; the exit status and what git and the hooks printed."""
        git("add", *files, cwd=repo, env=env)
        done = subprocess.run(
            ["git", "commit", "-m", "change"], cwd=repo, env=env, capture_output=True, text=True
        )
        return done.returncode, done.stdout + done.stderr

    # No Python file staged: the hooks are skipped (this first run builds their venv). They are
    # never given other files, which migrator would refuse (exit 2: not a Python file).
    status, out = commit(".pre-commit-config.yaml")
    assert status == 0, out
    assert out.count("(no files to check)Skipped") == 2

    # A model with F.relu: the fixing hook rewrites it and fails the commit.
    (repo / "net.py").write_text(MODEL)
    (repo / "notes.txt").write_text("not python\n")
    status, out = commit("net.py", "notes.txt")
    assert status == 1, out
    assert "files were modified by this hook" in out and "fixed net.py" in out
    assert (repo / "net.py").read_text() == FIXED

    # The rewrite, staged: every hook passes.
    status, out = commit("net.py", "notes.txt")
    assert status == 0, out
    assert "Failed" not in out and out.count("Passed") == 2

    # Nothing staged at all.
    idle = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert idle.returncode == 0, idle.stdout + idle.stderr

    # A finding no fix can resolve: the fixing hook passes, the checking one fails and says why;
    # the file is untouched.
    (repo / "shared.py").write_text(SHARED_CONV)
    status, out = commit("shared.py")
    assert status == 1
    assert "migrator fix....." in out and out.count("Passed") == 1, out
    assert out.count("shared.py:10:16: MIG103") == 1, out
    assert (repo / "shared.py").read_text() == SHARED_CONV

    # The baseline workflow: today's findings suppressed with `# noqa`, every hook passes.
    subprocess.run(
        [sys.executable, "-m", "migrator", "check", "--add-noqa", "shared.py"],
        cwd=repo,
        env=env,
        check=True,
    )
    assert "# noqa: MIG103" in (repo / "shared.py").read_text()
    status, out = commit("shared.py")
    assert status == 0, out
