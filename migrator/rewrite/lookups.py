"""What a search through a project read: each module and file it looked up, and what was found,
so that another project of the process can tell, without parsing, that the same search would
find the same there (`check`), and take the state the search would have left (`Project.replay`).

A file found is known by its real path and text, and by whether it is one of the two files the
search tells apart by identity (the asking file, the file of the class searched for)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from migrator.rewrite.project import FileInfo, Project, RootIndex, module_name, path_of
from migrator.rewrite.real_paths import real_path


class Seen(NamedTuple):
    """A file a lookup found."""

    path: str
    text: str
    asking: bool
    searched: bool
    alias: str | None = None
    """The module name the file registered under, when not the one looked up (found by a
    folder searched as a root: `import accelerate` finding `integrations/accelerate.py`)."""


Key = tuple[str, "str | Path"]
"""("module", dotted name) or ("file", path)."""


class Lookups:
    """The lookups of one search, first of each only, in order."""

    def __init__(self, asking: FileInfo | None, searched: FileInfo | None) -> None:
        self._asking = asking
        self._searched = searched
        self.seen: dict[Key, Seen | None] = {}
        self.usable = True
        """False when a lookup read something another project could read otherwise (a file
        that does not parse, one registered under another module name, a text not known)."""

    def record(self, key: Key, found: FileInfo | None) -> None:
        if key in self.seen:
            return
        if len(_TEXTS) > _INTERNED_KEPT or len(_POOL) > 8 * _INTERNED_KEPT:
            _TEXTS.clear()  # the searches kept hold their own references: only sharing is lost
            _POOL.clear()
        key = _POOL.setdefault(key, key)
        if found is None:
            self.seen[key] = None
        elif found.path is None or found.text is None:
            self.usable = False
        else:
            named = found.names.module
            seen = Seen(
                found.real_path,
                _TEXTS.setdefault(found.text, found.text),
                found is self._asking,
                found is self._searched,
                named if key[0] == "module" and named != key[1] else None,
            )
            self.seen[key] = _POOL.setdefault(seen, seen)


_TEXTS: dict[str, str] = {}
"""One copy of each text recorded, shared by the searches kept."""
_POOL: dict = {}
"""One copy of each key and each `Seen` recorded: the searches kept share most of them."""
_INTERNED_KEPT = 4096
"""Texts interned before both tables start afresh (a long-lived process records ever more)."""


def check(
    seen: dict[Key, Seen | None],
    project: Project,
    asking: FileInfo | None,
    searched: FileInfo | None,
) -> tuple[list[Path], list[str]] | None:
    """Whether each lookup of `seen`, made again in order in `project`, finds the same: then
    (the folders the files it would load add to the project's, the modules it would find
    missing, or found under another name: never looked for again); None otherwise. Files not
    registered in `project` are read from disk."""
    roots = RootIndex(base=project.root_index())
    loaded: dict[str, Seen | None] = {}
    """Modules the search would register (None: found missing)."""
    for (kind, key), was in seen.items():
        module = _on_disk(project, key)[1] if isinstance(key, Path) else key
        known, now = project.registered(module)
        if known:
            if not _same(now, was, asking, searched):
                return None
            continue
        if module in loaded:
            if loaded[module] != was:
                return None
            continue
        if kind == "module" and module.split(".", 1)[0] == "torch":
            continue  # torch's own files: kept apart, the same for every project
        path = key if isinstance(key, Path) else roots.first_file(module)
        if path is None:
            if was is not None:
                return None
            loaded[module] = None
            continue
        if was is None or was.asking or was.searched:
            return None
        real, name, root, text = _on_disk(project, path)
        if real != was.path or name != (was.alias or module) or text != was.text:
            return None
        if was.alias is not None and (project.registered(name)[0] or name in loaded):
            return None  # registered before: the read would have replaced it
        if os.fspath(root) not in roots:
            roots.append(root)
        folder = os.path.dirname(real)
        if folder not in roots:
            roots.append(path_of(folder))
        if kind == "file":  # found by name (roots only grow: a module's first match stays)
            again = roots.first_file(module)
            if again is None or (again != path and _real(again) != real):
                return None  # looked up by name later, the module would be another file
        loaded[module] = was
    return roots.all_roots(), [m for m, was in loaded.items() if was is None or was.alias]


def _on_disk(project: Project, path: Path) -> tuple[str, str, Path, str | None]:
    """(real path, module name, import root, text) of a file, read once a project, and from
    disk once a process while the file's modification time and size stay the same
    (`_ON_DISK`)."""
    if path not in project.on_disk:
        try:
            stat = os.stat(path)
            stamp: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            stamp = None
        kept = _ON_DISK.get(path)
        if stamp is None or kept is None or kept[0] != stamp:
            real = _real(path)
            name, _, root = module_name(Path(real), resolved=True)
            try:
                text: str | None = path.read_text(encoding="utf-8")
            except (OSError, ValueError):
                text = None
            if text is not None:
                text = _TEXTS.get(text, text)  # the copy the searches kept hold, when one does
            kept = _ON_DISK[path] = (stamp, (real, name, root, text))
            while len(_ON_DISK) > _ON_DISK_KEPT:
                del _ON_DISK[next(iter(_ON_DISK))]
        project.on_disk[path] = kept[1]
    return project.on_disk[path]


_ON_DISK: dict[Path, tuple[tuple[int, int] | None, tuple[str, str, Path, str | None]]] = {}
"""Path -> (its modification time and size, what `_on_disk` read): the files a kept search or
work-out found are checked again for every file of a run. A file rewritten with the same size
within the file system's time resolution, a symbolic link pointed elsewhere or a package's
`__init__.py` added or removed while the process runs is not seen (a run does none of these
to the files it reads). Oldest first, bounded by `_ON_DISK_KEPT`."""
_ON_DISK_KEPT = 16_384


def _same(
    now: FileInfo | None, was: Seen | None, asking: FileInfo | None, searched: FileInfo | None
) -> bool:
    if now is None or was is None:
        return now is None and was is None
    return (
        now.path is not None
        and now.text == was.text
        and (now is asking) == was.asking
        and (now is searched) == was.searched
        and now.real_path == was.path
    )


def _real(path: Path) -> str:
    return real_path(path)
