"""Names a new module of a class may not take: those its family defines or uses on `self`, those
migrator creates in its family (across files), and those of its subclasses elsewhere in the
package; and the allocation of free ones."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from functools import partial
from typing import Protocol

from migrator import catalog
from migrator.rewrite.context import FileContext
from migrator.rewrite.defined import GIVEN, SCANNED, names_by_name, names_defined
from migrator.rewrite.facts import class_fact
from migrator.rewrite.mentions import attributes_stored_on_others
from migrator.rewrite.family import Family
from migrator.rewrite.project import ClassInfo, FileInfo
from migrator.rewrite.walk import Visit


_TRIES = 100
"""Suffixes `new` tries against the names f-strings make before it only avoids the others."""


class WorksOut(Protocol):
    def work_out(self, info: FileInfo) -> None:
        """Work out the rewrite of another file of the project, once a run."""


class TakenNames:
    """The names taken in one class, and new ones allocated there."""

    def __init__(
        self, ctx: FileContext, cls: ClassInfo, family: Family, analysis: WorksOut
    ) -> None:
        self.ctx = ctx
        self.cls = cls
        self._family = family
        self._known = self._collect(family, analysis)
        """The names taken in the class's family in the project (the search of the package for
        subclasses elsewhere waits for the first name asked: most classes create nothing)."""
        self._all: set[str] | None = None
        self._patterns: list[re.Pattern[str]] = []
        self._tried: dict[str, int] = {}
        """Base name -> the last suffix found taken: names are never freed, so the search for a
        free one goes on from there."""

    def _collect(self, family: Family, analysis: WorksOut) -> set[str]:
        taken = set(catalog.MODULE_ATTRIBUTES)
        project = self.ctx.project
        own = self._class_names(self.cls)
        for cls in family.related(self.cls):
            if cls.file is not self.ctx.info:
                analysis.work_out(cls.file)
            created = project.names_created(cls.qualname)
            taken |= created
            clash = sorted(own & created) if cls is not self.cls else []
            if clash and cls.file is not self.ctx.info:
                self.ctx.report(
                    self.cls.node,
                    "MIG111",
                    f"`self.{clash[0]}` is also the name of the module migrator creates "
                    f"in base class `{cls.name}`; rename this attribute",
                )
            names = self._class_names(cls)
            if cls.qualname.startswith("torch."):  # torch sets the names of its own state
                names -= {GIVEN}
            taken |= names
        return taken

    @property
    def _taken(self) -> set[str]:
        """Every name taken: the family's, its subclasses' elsewhere in the package (not what
        is created there), those stored on instances by other code, and the ones allocated."""
        if self._all is None:
            elsewhere = self._family.names_elsewhere(self.cls, self._class_names)
            stored = attributes_stored_on_others(self.ctx.info.path, self.ctx.source)
            self._all = self._known | elsewhere | stored
            # the names f-strings make (`setattr(self, f"relu{i}", m)`: `relu`, `relu0`, ...)
            self._patterns = [_made(n) for n in sorted(self._all) if "*" in n]
        return self._all

    def _class_names(self, cls: ClassInfo) -> frozenset[str]:
        if cls.qualname not in self.ctx.class_names:
            self.ctx.class_names[cls.qualname] = _kept_names(cls, self.ctx.visits_of)
        return self.ctx.class_names[cls.qualname]

    def taken(self, name: str) -> bool:
        """Whether a new module cannot take `name`."""
        taken = self._taken  # makes `_patterns` the first time
        return name in taken or any(p.fullmatch(name) for p in self._patterns)

    def new(self, base: str) -> str:
        """A free name `base` or `base_<n>` (past `_TRIES`, one f-strings may make: their
        values would have to be spelled `_<n>`), now taken and known as created in the
        class."""
        n = self._tried.get(base, 0)
        name = f"{base}_{n}" if n else base
        while self.taken(name) if n < _TRIES else name in self._taken:
            n += 1
            name = f"{base}_{n}"
        self._tried[base] = n
        self._taken.add(name)
        self.ctx.project.create(self.cls.qualname, name)
        return name


def _made(pattern: str) -> re.Pattern[str]:
    """The names an f-string's pattern (`relu*`) makes, each value an identifier's letters and
    digits."""
    return re.compile("[A-Za-z0-9]*".join(re.escape(part) for part in pattern.split("*")))


VisitsOf = Callable[[ast.FunctionDef, frozenset[type]], list[Visit]]
"""`FileContext.visits_of`."""


def _kept_names(cls: ClassInfo, visits_of: VisitsOf) -> frozenset[str]:
    """`names_defined` of `cls`: for a class of a file read from disk, from its file's summary
    (`ClassInfo.facts`); else kept a process (`facts.class_fact`), the analysis's walks
    (`visits_of`) serving the classes of the files it analyses."""
    if cls.facts is not None:
        return cls.facts.defined
    file = cls.file
    by_name = names_by_name(file.source if file.source is not None else file.text)
    if file.source is None:
        return class_fact(
            "names",
            cls,
            lambda: frozenset(names_defined(cls.node, partial(_nodes, visits_of), by_name)),
        )
    return class_fact("names", cls, lambda: frozenset(names_defined(cls.node, by_name=by_name)))


def _nodes(visits_of: VisitsOf, method: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of `method` that `names_defined` reads, from its walk."""
    return [v.node for v in visits_of(method, SCANNED)]
