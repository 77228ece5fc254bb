"""The classes related to a class of the file at hand: its ancestors that can be found, its
subclasses in the file, and its subclasses elsewhere in its package."""

from __future__ import annotations

from migrator.rewrite.project import ClassInfo, FileInfo, Project
from migrator.rewrite.subclasses import subclass_files


class Family:
    """Family relations of the classes of one file."""

    def __init__(self, project: Project, info: FileInfo) -> None:
        self.project = project
        self.info = info

    def ancestors(self, cls: ClassInfo) -> list[ClassInfo]:
        """The classes `cls` derives from that can be found."""
        found, todo = [], [cls]
        while todo:
            current = todo.pop()
            for base in current.bases:
                parent = self.project.find_class(base, current.file)
                if parent is not None and parent not in found:
                    found.append(parent)
                    todo.append(parent)
        return found

    def derives(self, cls: ClassInfo, base: ClassInfo) -> bool:
        """Whether `cls` is a subclass of `base` (not `base` itself)."""
        return base in self.ancestors(cls)

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
        for other in self.info.classes.values():
            if other not in family and any(anc in family for anc in self.ancestors(other)):
                family.append(other)
        return family

    def subclasses_in_file(self, cls: ClassInfo) -> list[ClassInfo]:
        return [c for c in self.info.classes.values() if c is not cls and self.derives(c, cls)]

    def subclasses_elsewhere(self, cls: ClassInfo) -> list[ClassInfo]:
        """Subclasses of `cls` in other files of its package."""
        path = self.info.path
        if path is None or not path.exists():
            return []
        found: list[ClassInfo] = []
        names, todo = {cls.name}, [cls.name]
        while todo:
            for file in subclass_files(path, {todo.pop()}):
                info = self.project.load_file(file)
                if info is None or info is self.info:
                    continue
                for other in info.classes.values():
                    if other not in found and self.derives(other, cls):
                        found.append(other)
                        if other.name not in names:
                            names.add(other.name)
                            todo.append(other.name)
        return found
