"""The classes related to a class of the file at hand: its ancestors that can be found, its
subclasses in the file, and its subclasses elsewhere in its package."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from migrator.rewrite.lookups import Key, Lookups, Seen, check
from migrator.rewrite.project import ClassInfo, FileInfo, Project
from migrator.rewrite.real_paths import real_path
from migrator.rewrite.subclasses import files_naming, package_index

T = TypeVar("T")

_FOUND: dict[
    tuple[str, str], tuple[dict[str, frozenset[Path]], dict[Key, Seen | None], frozenset[str]]
] = {}
"""(class qualname, real path of the asking file) -> (the package index searched, the lookups
of the search, the names its subclasses elsewhere take): in a large package each
file of a run asks about the same base classes (`transformers`' `PreTrainedModel`), whose
subclasses are most of the package. Most recently used last, bounded by `_FOUND_KEPT`."""
_FOUND_KEPT = 256


class Family:
    """Family relations of the classes of one file.

    Each class's ancestors, and the file's subclasses of each class, are worked out once while
    the project replaces no module name (`Project.replacements`: a file worked out afresh, one
    registered under a name found otherwise can make a base be found otherwise), so a
    replacement empties those caches, and a result computed while one happened is not kept;
    a file loaded leaves them (it takes a name not looked up yet). Other facts (`kept`) are
    kept while the project registers no file at all."""

    def __init__(self, project: Project, info: FileInfo) -> None:
        self.project = project
        self.info = info
        self._generation = project.generation
        self._replacements = project.replacements
        self._ancestors: dict[ClassInfo, tuple[list[ClassInfo], set[ClassInfo], list]] = {}
        self._subclasses: dict[FileInfo, tuple[dict[ClassInfo, list[ClassInfo]], list]] = {}
        """Both with the lookups their working out made (`Project.captures`), recorded again
        when they are served to a search or a work-out being recorded."""
        self._order = {cls: i for i, cls in enumerate(info.classes.values())}
        self._package: dict[str, frozenset[Path]] | None = None
        """The index of this file's package (`subclasses.package_index`), read once."""
        self._kept: dict[tuple[str, ClassInfo], Any] = {}

    def _current(self) -> int:
        """The project's generation, `kept`'s cache emptied if it has changed."""
        if self._generation != self.project.generation:
            self._generation = self.project.generation
            self._kept.clear()
        return self._generation

    def _found(self) -> int:
        """The project's replacements, the caches of ancestors and subclasses emptied if they
        have changed."""
        if self._replacements != self.project.replacements:
            self._replacements = self.project.replacements
            self._ancestors.clear()
            self._subclasses.clear()
        return self._replacements

    def kept(self, what: str, cls: ClassInfo, work_out: Callable[[], T]) -> T:
        """`work_out()`, a fact `what` about `cls` that depends on its family, worked out once
        while the project registers no file (as the caches above)."""
        generation = self._current()
        if (what, cls) in self._kept:
            return self._kept[what, cls]
        value = work_out()
        if generation == self.project.generation:
            self._kept[what, cls] = value
        return value

    def _lineage(self, cls: ClassInfo) -> tuple[list[ClassInfo], set[ClassInfo]]:
        """The ancestors of `cls` that can be found, as a list and as a set."""
        replacements = self._found()
        if cls in self._ancestors:
            kept = self._ancestors[cls]
            if self.project.recording():
                self.project.seen_again(kept[2])
            return kept[0], kept[1]
        found: list[ClassInfo] = []
        todo = [cls]
        seen: list = []
        self.project.captures.append(seen)
        try:
            while todo:
                current = todo.pop()
                for base in current.bases:
                    parent = self.project.find_class(base, current.file)
                    if parent is not None and parent not in found:
                        found.append(parent)
                        todo.append(parent)
        finally:
            self.project.captures.pop()
        if replacements == self.project.replacements:
            self._ancestors[cls] = (found, set(found), seen)
        return found, set(found)

    def ancestors(self, cls: ClassInfo) -> list[ClassInfo]:
        """The classes `cls` derives from that can be found."""
        return list(self._lineage(cls)[0])

    def derives(self, cls: ClassInfo, base: ClassInfo) -> bool:
        """Whether `cls` is a subclass of `base` (not `base` itself)."""
        return base in self._lineage(cls)[1]

    def _subclasses_of(self, info: FileInfo | None = None) -> dict[ClassInfo, list[ClassInfo]]:
        """Class -> the classes of `info` (default: this file) deriving from it, in file
        order."""
        info = info or self.info
        replacements = self._found()
        if info in self._subclasses:
            kept, seen = self._subclasses[info]
            if self.project.recording():
                self.project.seen_again(seen)
            return kept
        subclasses: dict[ClassInfo, list[ClassInfo]] = {}
        seen = []
        self.project.captures.append(seen)
        try:
            for other in info.classes.values():
                for ancestor in self._lineage(other)[0]:
                    if ancestor is not other:
                        subclasses.setdefault(ancestor, []).append(other)
        finally:
            self.project.captures.pop()
        if replacements == self.project.replacements:
            self._subclasses[info] = (subclasses, seen)
        return subclasses

    def related(self, cls: ClassInfo) -> list[ClassInfo]:
        """`cls`, its ancestors that can be found, and the classes of this file that derive
        from any of them."""
        family, todo = [], [cls]
        while todo:
            current = todo.pop()
            if current in family:
                continue
            family.append(current)
            todo += [c for b in current.bases if (c := self.project.find_class(b, current.file))]
        members, subclasses = set(family), self._subclasses_of()
        derived = {
            other
            for member in family
            for other in subclasses.get(member, ())
            if other not in members
        }
        return family + sorted(derived, key=self._order.__getitem__)

    def subclasses_in_file(self, cls: ClassInfo) -> list[ClassInfo]:
        return list(self._subclasses_of().get(cls, ()))

    def _index(self) -> dict[str, frozenset[Path]]:
        if self._package is None:
            self._package = index_of(self.info.path)
        for trace in self.project.traces:
            trace.indexes.setdefault(self.info.path, self._package)
        return self._package

    def names_elsewhere(
        self, cls: ClassInfo, names_of: Callable[[ClassInfo], frozenset[str]]
    ) -> frozenset[str]:
        """The union of `names_of` the subclasses of `cls` in other files of its package: the
        same as from `subclasses_elsewhere`, kept a process (`_FOUND`) with the lookups the
        search made, and taken while each lookup finds the same here."""
        index, path = self._index(), self.info.path
        key = (cls.qualname, real_path(path)) if path is not None else None
        kept = _FOUND.pop(key, None) if key is not None else None
        if key is not None and kept is not None and kept[0] is index:
            _FOUND[key] = kept  # the most recently used is the last to drop
            state = check(kept[1], self.project, self.info, cls.file)
            if state is not None:
                self.project.replay(*state)
                for trace in self.project.traces:
                    trace.take(kept[1])
                return kept[2]
        lookups = self.project.lookups = Lookups(self.info, cls.file)
        try:
            found = self.subclasses_elsewhere(cls)  # what is kept records its lookups again
        finally:
            self.project.lookups = None
        names = frozenset().union(*map(names_of, found))
        if key is not None and lookups.usable:
            _FOUND[key] = (index, lookups.seen, names)
            while len(_FOUND) > _FOUND_KEPT:
                del _FOUND[next(iter(_FOUND))]
        return names

    def subclasses_elsewhere(self, cls: ClassInfo) -> list[ClassInfo]:
        """Subclasses of `cls` in other files of its package."""
        index = self._index()
        found: dict[ClassInfo, None] = {}
        names, todo = {cls.name}, [cls.name]
        while todo:
            for file in files_naming(index, {todo.pop()}):
                info = self.project.load_file(file)
                if info is None or info is self.info:
                    continue
                for other in self._subclasses_of(info).get(cls, ()):
                    if other not in found:
                        found[other] = None
                        if other.name not in names:
                            names.add(other.name)
                            todo.append(other.name)
        return list(found)


def index_of(path: Path | None) -> dict[str, frozenset[Path]]:
    """The index of the package of the file at `path` (`subclasses.package_index`; empty for
    a file not on disk)."""
    return package_index(path) if path is not None and path.exists() else {}
