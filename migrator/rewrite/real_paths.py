"""Real paths of source files, as `os.path.realpath` and `Path.resolve` give them, with each
folder's real path worked out once a process: the analysis asks for the real path of the same
files and folders thousands of times, and `realpath` examines every component of a path each
time (a sixth of a `check` of torchvision's models went there). Only the file's own name is
examined each time (it may be a symlink)."""

from __future__ import annotations

import errno
import functools
import os
from pathlib import Path


def real_path(path: str | os.PathLike[str]) -> str:
    """`os.path.realpath(path)`."""
    text = os.path.join(os.getcwd(), os.fspath(path))  # a relative path is from the cwd
    folder, name = os.path.split(text)
    if name in ("", ".", ".."):
        return os.path.realpath(text)
    joined = os.path.join(_real_folder(folder), name)
    return os.path.realpath(joined) if os.path.islink(joined) else joined


def resolved(path: Path) -> Path:
    """`path.resolve()`: also raises `RuntimeError` on a symlink loop."""
    found = Path(real_path(path))
    try:
        os.stat(found)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise RuntimeError(f"Symlink loop from {str(found)!r}") from error
    return found


@functools.lru_cache(maxsize=4096)
def _real_folder(folder: str) -> str:
    return os.path.realpath(folder)
