"""Reading, discovering and safely writing Python source files.

`read_source` decodes a file the way Python does (PEP 263 cookie or BOM) and remembers how to put
it back: `encode_source` restores the encoding, BOM and line endings, and `write_source` replaces
the file atomically, only if it is still exactly what was read. `discover` expands command line
paths into the Python files to process, and a `PathError` for each path that names none.
Standard library only: this is on the fast static path.
"""

from __future__ import annotations

import codecs
import fnmatch
import os
import re
import stat
import subprocess
import tempfile
import tokenize
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "PathError",
    "Rules",
    "SourceError",
    "SourceFile",
    "decode_source",
    "discover",
    "encode_source",
    "read_source",
    "syntax_error",
    "write_source",
]

_BOM = codecs.BOM_UTF8
_NEWLINE_RE = re.compile(rb"\r\n|\r|\n")
_COOKIE_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.ASCII)
_GIT_TIMEOUT = 30.0

#: Folder names never walked into (in addition to hidden folders and folders holding pyvenv.cfg).
SKIP_DIRS = frozenset(
    "venv .venv env .env site-packages __pycache__ node_modules build dist".split()
)


class SourceError(Exception):
    """A file that cannot be read, decoded or written; `str()` is one line: `path:line: reason`."""

    def __init__(self, path: str | os.PathLike[str], line: int | None, reason: str) -> None:
        super().__init__(path, line, reason)  # args match the signature: picklable
        self.path = Path(path)
        self.line = line or 0
        self.reason = " ".join(str(reason).split())

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


class PathError(SourceError):
    """A given path that names no Python file to process (missing, not Python, a folder that
    cannot be listed); `str()` is `migrator: path: reason`."""

    def __str__(self) -> str:
        return f"migrator: {self.path}: {self.reason}"


@dataclass(frozen=True)
class SourceFile:
    """A decoded source file plus what is needed to write it back byte-faithfully."""

    path: Path
    text: str  # decoded, BOM removed, every line ending turned into "\n"
    encoding: str  # codec name as `tokenize.detect_encoding` gives it: "utf-8", "iso-8859-1", ...
    bom: bool  # the file starts with a UTF-8 byte order mark
    newline: str  # dominant line ending of the file: "\n", "\r\n" or "\r"
    mode: int  # permission bits (stat.S_IMODE) at read time
    raw: bytes = field(repr=False)  # the exact bytes read, to detect changes on disk


@dataclass(frozen=True)
class Rules:
    """Which files a configuration takes: `include` globs match file names; `exclude` globs match
    the path relative to `root` (the configuration's folder; without one, the walked folder, or
    the current folder for a file given explicitly), or any part of it from a folder boundary
    on: `legacy/*` excludes `legacy/a.py` and `sub/legacy/a.py`, `gen` any folder named gen."""

    include: tuple[str, ...] = ("*.py",)
    exclude: tuple[str, ...] = ()
    root: Path | None = None

    def includes(self, name: str) -> bool:
        return _matches(name, self.include)

    def excludes(self, path: str | os.PathLike[str], rel: str | None = None) -> bool:
        """Does `path` match an `exclude` glob? `rel`: its path relative to the walked folder."""
        patterns = tuple(p.strip("/") for p in self.exclude if p.strip("/"))
        if not patterns:
            return False
        under_root = _relative_to(Path(os.path.abspath(path)), self.root) if self.root else None
        return _excluded(under_root or rel or _explicit_relpath(Path(path)), patterns)


def read_source(path: str | os.PathLike[str]) -> SourceFile:
    """Read and decode a Python source file; raise `SourceError` if it cannot be used.

    Syntax is not checked here; see `syntax_error` for reporting the parser's errors.
    """
    path = Path(path)
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise SourceError(path, 0, "is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(path, 0, "not a regular file")
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise SourceError(path, 0, f"cannot read: {_os_reason(exc)}") from None
    return decode_source(path, raw, stat.S_IMODE(st.st_mode))


def decode_source(path: str | os.PathLike[str], raw: bytes, mode: int = 0o644) -> SourceFile:
    """Decode the bytes of a source file (read from `path`, or from stdin shown as `path`);
    raise `SourceError` if they cannot be used."""
    path = Path(path)
    nul = raw.find(b"\0")
    if nul >= 0:
        raise SourceError(path, _line_at(raw, nul), "contains a NUL byte (binary file?)")

    encoding, bom = _detect_encoding(path, raw)
    body = raw[len(_BOM) :] if bom else raw
    try:
        decoded = body.decode(encoding)
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.end].hex(" ")
        raise SourceError(
            path, _line_at(body, exc.start), f"cannot decode byte(s) {bad} as {encoding}"
        ) from None
    except LookupError:  # unreachable in practice: detect_encoding validates the codec
        raise SourceError(path, 1, f"unknown encoding {encoding!r}") from None

    return SourceFile(
        path=path,
        text=decoded.replace("\r\n", "\n").replace("\r", "\n"),
        encoding=encoding,
        bom=bom,
        newline=_dominant_newline(decoded),
        mode=mode,
        raw=raw,
    )


def syntax_error(path: str | os.PathLike[str], exc: SyntaxError) -> SourceError:
    """Turn a `SyntaxError` (or libcst `ParserSyntaxError`) into a one-line `SourceError`."""
    line = getattr(exc, "lineno", None) or getattr(exc, "raw_line", None) or 0
    message = getattr(exc, "msg", None) or getattr(exc, "message", None) or str(exc)
    return SourceError(path, line, f"syntax error: {message}")


def encode_source(source: SourceFile, new_text: str) -> bytes:
    """Encode rewritten text like the original: same encoding, BOM and (dominant) line ending.

    Unchanged text gives back the original bytes exactly, even for files with mixed line endings.
    Raises `SourceError` when the text holds a character the file's encoding cannot represent.
    """
    if new_text == source.text:
        return source.raw
    nl = source.newline
    text = new_text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", nl)
    try:
        data = text.encode(source.encoding)
    except UnicodeEncodeError as exc:
        char = text[exc.start]
        raise SourceError(
            source.path,
            text.count(nl, 0, exc.start) + 1,
            f"rewritten text has {char!r} (U+{ord(char):04X}), not encodable in {source.encoding}",
        ) from None
    return _BOM + data if source.bom else data


def write_source(source: SourceFile, new_text: str) -> bool:
    """Atomically replace the file with `new_text`; return False (writing nothing) if unchanged.

    Refuses with `SourceError`, leaving the file untouched, when the path is a symlink, the file is
    not writable, or it was deleted or changed since `read_source` read it.
    """
    data = encode_source(source, new_text)
    if data == source.raw:
        return False
    path = source.path
    st = _check_writable(path)

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".migrator-tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if hasattr(os, "geteuid") and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass  # best effort: only root can give a file away
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        _check_unchanged(source)  # as late as possible, right before the swap
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise SourceError(path, 0, f"cannot write: {_os_reason(exc)}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _fsync_dir(path.parent)
    return True


def discover(
    paths: Iterable[str | os.PathLike[str]],
    rules: Callable[[Path], Rules] = lambda folder: Rules(),
    *,
    respect_gitignore: bool = True,
) -> Iterator[Path | PathError]:
    """Yield the Python files named by `paths`, each once, in a deterministic order, and a
    `PathError` for each path that names none: a path that does not exist, a file given
    explicitly that is not Python, a folder that cannot be listed.

    `rules(folder)` are the `Rules` for the entries of a folder. Files given explicitly are
    yielded if they end in .py/.pyi (or match `include`) and are not excluded. Folders are walked
    in sorted order, skipping hidden folders, virtual environments, build/cache folders,
    symlinked folders, symlinked files pointing outside the folder, excluded paths and (inside a
    git work tree) files ignored by git.
    """
    seen: set[str] = set()
    links: list[Path] = []  # symlinked files, yielded last unless their target was yielded already

    def fresh(p: Path, key: str | None = None) -> bool:
        key = os.path.normcase(key or os.path.realpath(p))
        if key in seen:
            return False
        seen.add(key)
        return True

    for arg in paths:
        arg = Path(arg)
        try:
            is_dir = stat.S_ISDIR(os.stat(arg).st_mode)
        except OSError as exc:
            yield PathError(arg, 0, _missing_reason(exc))
            continue
        if is_dir:
            for p, key in _walk(arg, rules, respect_gitignore):
                if isinstance(p, PathError):
                    yield p
                elif key is None:
                    links.append(p)
                elif fresh(p, key):
                    yield p
            continue
        arg_rules = rules(Path(os.path.dirname(os.path.abspath(arg))))
        if arg_rules.excludes(arg):
            continue
        elif not (arg.suffix in (".py", ".pyi") or arg_rules.includes(arg.name)):
            yield PathError(arg, 0, "not a Python file")
        elif arg.is_symlink():
            links.append(arg)
        elif fresh(arg):
            yield arg
    for p in links:
        if fresh(p):
            yield p


# -- helpers -------------------------------------------------------------------------------------


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _missing_reason(exc: OSError) -> str:
    """Why a given path cannot be looked at: `no such file or directory`, or `cannot read: ...`."""
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return "no such file or directory"
    return f"cannot read: {_os_reason(exc)}"


def _line_at(data: bytes, offset: int) -> int:
    """1-based line number of byte `offset`, counting \\n, \\r\\n and \\r as line endings."""
    return len(_NEWLINE_RE.findall(data, 0, offset)) + 1


def _dominant_newline(text: str) -> str:
    crlf = text.count("\r\n")
    counts = {"\n": text.count("\n") - crlf, "\r\n": crlf, "\r": text.count("\r") - crlf}
    return max(counts, key=lambda nl: counts[nl])  # ties: first in dict order, "\n" wins


def _detect_encoding(path: Path, raw: bytes) -> tuple[str, bool]:
    """(codec name, has BOM) from the BOM or PEP 263 cookie, as Python itself would decide."""
    lines = iter(raw.splitlines(keepends=True)[:2])
    try:
        encoding, _ = tokenize.detect_encoding(lambda: next(lines, b""))
    except SyntaxError as exc:
        cookie_line = next(
            (n for n, line in enumerate(raw.splitlines()[:2], 1) if _COOKIE_RE.match(line)), None
        )
        if cookie_line is None:
            # No cookie, first line not valid UTF-8: decode as UTF-8 to report the exact position.
            return "utf-8", raw.startswith(_BOM)
        raise SourceError(path, cookie_line, f"bad encoding declaration: {exc.msg}") from None
    if encoding == "utf-8-sig":
        return "utf-8", True
    if not _ascii_compatible(encoding):
        raise SourceError(path, 1, f"encoding {encoding} is not ASCII compatible")
    return encoding, False


def _ascii_compatible(encoding: str) -> bool:
    probe = "#\r\n x=1"
    try:
        return probe.encode(encoding) == probe.encode("ascii")
    except (LookupError, UnicodeError):
        return False


def _check_writable(path: Path) -> os.stat_result:
    """The file's lstat if migrator may replace it, else `SourceError`."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise SourceError(path, 0, "file was deleted since it was read; not written") from None
    except OSError as exc:
        raise SourceError(path, 0, f"cannot write: {_os_reason(exc)}") from None
    if stat.S_ISLNK(st.st_mode):
        raise SourceError(path, 0, "is a symbolic link; migrator does not write through links")
    if not stat.S_ISREG(st.st_mode):
        raise SourceError(path, 0, "no longer a regular file; not written")
    # os.access alone says yes to root for any file: honour the mode bits, never chmod to force.
    if not (st.st_mode & 0o222) or not os.access(path, os.W_OK):
        raise SourceError(path, 0, "file is read-only; not written")
    return st


def _check_unchanged(source: SourceFile) -> None:
    path = source.path
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
            raise SourceError(path, 0, "file was replaced since it was read; not written")
        with open(path, "rb") as f:
            current = f.read(len(source.raw) + 1)
    except FileNotFoundError:
        raise SourceError(path, 0, "file was deleted since it was read; not written") from None
    if current != source.raw:
        raise SourceError(path, 0, "file changed on disk since it was read; not written")


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable (best effort; not possible on every platform)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _excluded(relpath: str, patterns: tuple[str, ...]) -> bool:
    """Does a part of `relpath` (posix) that starts and ends at folder boundaries match an
    exclude pattern?"""
    parts = relpath.split("/")
    return any(
        _matches("/".join(parts[start:end]), patterns)
        for start in range(len(parts))
        for end in range(start + 1, len(parts) + 1)
    )


def _relative_to(path: Path, root: Path) -> str | None:
    """Posix path of `path` relative to `root`, None when it is not under it."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def _explicit_relpath(path: Path) -> str:
    """Posix path of an explicit argument, relative to the current directory when under it."""
    if path.is_absolute():
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            pass
    return path.as_posix().removeprefix("./")


def _is_skipped_dir(entry: os.DirEntry[str]) -> bool:
    name = entry.name
    return (
        name.startswith(".")
        or name in SKIP_DIRS
        or name.endswith(".egg-info")
        or os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))
    )


def _walk(
    root: Path, rules: Callable[[Path], Rules], respect_gitignore: bool
) -> Iterator[tuple[Path | PathError, str | None]]:
    """(path, real path) of candidate files under `root`, depth first, entries sorted by name.

    The real path is None for symlinks (resolved by the caller); no other links are followed. A
    folder that cannot be listed gives `(PathError, None)`.
    """
    ignored = _git_ignored(root) if respect_gitignore else frozenset()
    real_root = os.path.realpath(root)
    stack: list[Iterator[tuple[os.DirEntry[str], str]]] = []

    def listing(folder: str, rel: str) -> PathError | None:
        """Push the folder's entries on the stack, or say why it cannot be listed."""
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            return PathError(folder, 0, f"cannot read folder: {_os_reason(exc)}")
        stack.append((e, f"{rel}{e.name}") for e in entries)
        return None

    error = listing(str(root), "")
    if error:
        yield error, None
    while stack:
        try:
            entry, rel = next(stack[-1])
        except StopIteration:
            stack.pop()
            continue
        kind = _kind(
            entry,
            rel,
            ignored,
            rules(Path(os.path.abspath(os.path.dirname(entry.path)))),
            real_root,
        )
        if kind == "folder":
            error = listing(entry.path, f"{rel}/")
            if error:
                yield error, None
        elif kind is not None:
            yield root / rel, None if kind == "link" else os.path.join(real_root, rel)


def _kind(
    entry: os.DirEntry[str],
    rel: str,
    ignored: frozenset[str],
    rules: Rules,
    real_root: str,
) -> str | None:
    """What a folder entry is to the walk: "folder" to walk into, "file" or "link" (a symlinked
    file inside the root) to yield, or None to skip."""
    try:
        if entry.is_dir(follow_symlinks=False):  # never true for a link: links are not walked
            skipped = (
                _is_skipped_dir(entry) or f"{rel}/" in ignored or rules.excludes(entry.path, rel)
            )
            return None if skipped else "folder"
        # is_file follows links: dangling links, link loops and links to folders are skipped.
        if not entry.is_file() or not rules.includes(entry.name):
            return None
        if rel in ignored or rules.excludes(entry.path, rel):
            return None
        if not entry.is_symlink():
            return "file"
        return "link" if _inside(os.path.realpath(entry.path), real_root) else None
    except OSError:
        return None


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives
        return False


def _git_ignored(root: Path) -> frozenset[str]:
    """Paths under `root` (posix, relative to it; folders end in "/") that git ignores.

    Empty when git is missing, fails, or `root` is not inside a work tree. When `root` itself is
    ignored it was asked for explicitly, so nothing is filtered.
    """
    try:
        result = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "ls-files",
                "--others",
                "--ignored",
                "--exclude-standard",
                "--directory",
                "-z",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    if result.returncode != 0:
        return frozenset()
    ignored = frozenset(os.fsdecode(p) for p in result.stdout.split(b"\0") if p)
    return frozenset() if "./" in ignored else ignored
