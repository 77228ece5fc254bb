"""The original side of `migrator verify`: the project's files as they are at a git revision.

Per repository, a fixed number of git processes however many targets and changed files: the
top-level folder (once per import root), the revision's commit, one `git diff --name-only` for
every import root, and one `git cat-file --batch` that reads every changed file and every
target's file at once. Targets in the same repository share one side, so each original file is
imported once.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

from migrator.prove.load import LoadError, Side, import_root

_GIT_TIMEOUT = 60.0


def git_sides(files: Iterable[Path], rev: str) -> dict[Path, Side | LoadError]:
    """For each file (resolved), the side holding the files under its import root as they are
    at git revision `rev`, or why there is none (no repository, unknown revision, the file does
    not exist at `rev`)."""
    files = sorted({Path(file).resolve() for file in files})
    roots = {file: import_root(file)[0].resolve() for file in files}
    tops: dict[Path, Path | LoadError] = {}
    for root in sorted(set(roots.values())):
        try:
            tops[root] = Path(_git(root, "rev-parse", "--show-toplevel").decode().strip()).resolve()
        except LoadError as exc:
            tops[root] = LoadError(
                f"no git revision to take the original from (--base {rev}): {exc}"
            )
    sides: dict[Path, Side | LoadError] = {}
    for repository in {top for top in tops.values() if isinstance(top, Path)}:
        own = [file for file in files if tops[roots[file]] == repository]
        sides.update(_repository_sides(repository, own, sorted({roots[f] for f in own}), rev))
    for file in files:
        failure = tops[roots[file]]
        if isinstance(failure, LoadError):
            sides[file] = failure
    return sides


def _repository_sides(
    top: Path, files: list[Path], roots: list[Path], rev: str
) -> dict[Path, Side | LoadError]:
    """The sides of `files`, all in the repository at `top`: one side shared by all of them."""
    try:
        commit = _git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").decode().strip()
    except LoadError:
        return dict.fromkeys(files, LoadError(f"unknown git revision {rev!r}"))
    changed = _git(top, "diff", "--name-only", "-z", commit, "--", *map(str, roots)).decode()
    wanted = [path for path in changed.split("\0") if path.endswith(".py")]
    relative = {file: file.relative_to(top).as_posix() for file in files}
    blobs = read_blobs(top, commit, [*wanted, *relative.values()])
    # a changed file missing at `rev` was added since: the original side has it from disk
    side = Side(rev, {top / path: blobs[path] for path in wanted if path in blobs})
    return {
        file: side if path in blobs else LoadError(f"{path} does not exist at {rev}")
        for file, path in relative.items()
    }


def read_blobs(top: Path, commit: str, paths: Iterable[str]) -> dict[str, bytes]:
    """The content at `commit` of each of `paths` (relative to `top`) that is a file there, read
    by one `git cat-file --batch`."""
    paths = list(dict.fromkeys(path for path in paths if "\n" not in path))
    if not paths:
        return {}
    request = "".join(f"{commit}:{path}\n" for path in paths).encode()
    out = _git(top, "cat-file", "--batch", stdin=request)
    blobs, position = {}, 0
    for path in paths:  # each answer: `<oid> <type> <size>\n<content>\n` or `<name> missing\n`
        end = out.index(b"\n", position)
        header = out[position:end].split()
        position = end + 1
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            if header[1] == b"blob":
                blobs[path] = out[position : position + size]
            position += size + 1
    return blobs


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        result = subprocess.run(
            ["git", "-C", str(cwd), *args],
            capture_output=True,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise LoadError(f"git {args[0]} failed: {exc}") from None
    if result.returncode != 0:
        message = " ".join(result.stderr.decode(errors="replace").split())
        raise LoadError(f"git {' '.join(args)}: {message}")
    return result.stdout
