"""What is known across files: module names, classes, which classes are `nn.Module`s and which
hold no parameters or buffers.

Files are parsed with `ast` on demand (and cached), so a base class defined in a sibling file of
the same package is found without the caller naming that file.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import re
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection, NamedTuple, Sequence, TypeVar

from migrator.catalog import STATELESS_TORCH_MODULES, replacing_modules
from migrator.evidence import Evidence
from migrator.rewrite import real_paths
from migrator.rewrite.defined import StatementFacts, names_by_name, statement_facts
from migrator.rewrite.names import (
    ModuleNames,
    collect,
    literal,
    may_declare_global,
    parameter_defaults,
)
from migrator.rewrite.type_comments import read_type_comments
from migrator.rewrite.walk import all_nodes, child_nodes

if TYPE_CHECKING:
    from migrator.rewrite.lookups import Lookups
    from migrator.rewrite.worked import Trace

TORCH_MODULE = "torch.nn.Module"
_NOT_MODULES = {
    "torch.nn.Parameter",
    "torch.nn.Buffer",
    "torch.nn.UninitializedParameter",
    "torch.nn.UninitializedBuffer",
    "torch.nn.parameter.Parameter",
}
_PARAMETER = {"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer"}
_REGISTERS_STATE = {"register_buffer", "register_parameter"}


@dataclass(frozen=True)
class RunSettings:
    """What a file is processed with: the codes disabled in it, and its op-module settings."""

    disable: frozenset[str]
    ops_module: str
    toolkit: str


class ClassInfo:
    """A class of a parsed file. It refers to its file weakly (the project that registered the
    file keeps it), so a file and its classes hold no reference cycle and are freed by
    reference counting: no garbage collection has to walk their trees. A class of a file read
    from disk knows its bases from the file's summary (`summarized`), and reads its node from
    the file's tree, parsed when first needed."""

    def __init__(
        self,
        name: str,
        qualname: str,
        node: ast.ClassDef | None,
        file: FileInfo,
        *,
        index: int = -1,
        line: int = 0,
        bases: tuple[str | None, ...] | None = None,
        facts: StatementFacts | None = None,
    ) -> None:
        self.name = name
        self.qualname = qualname
        self._node = node
        self._index = index
        """The position of its statement in the file's body (when `node` is not given)."""
        self._line = line
        self._bases = bases
        self.facts = facts
        """What its statement alone tells (`defined.statement_facts`), for a class of a file
        read from disk: read with its summary, from the same tree."""
        self._file = weakref.ref(file)

    def __repr__(self) -> str:
        return f"ClassInfo({self.qualname!r})"

    @property
    def file(self) -> FileInfo:
        file = self._file()
        assert file is not None, "the project keeps the files of the classes it found"
        return file

    @property
    def node(self) -> ast.ClassDef:
        if self._node is None:
            stmt = self.file.tree.body[self._index]
            assert isinstance(stmt, ast.ClassDef)
            self._node = stmt
        return self._node

    @property
    def lineno(self) -> int:
        """The line of its `class` statement."""
        return self._line if self._node is None else self._node.lineno

    @property
    def bases(self) -> list[str | None]:
        if self._bases is not None:
            return list(self._bases)
        return [self.file.names.resolve(b) for b in self.node.bases]

    def methods(self) -> dict[str, ast.FunctionDef]:
        return {s.name: s for s in self.node.body if isinstance(s, ast.FunctionDef)}


@dataclass(eq=False)
class FileInfo:
    path: Path | None
    parsed: ast.Module | None
    """Its tree; None until first needed, for a file read from disk (`tree`)."""
    names: ModuleNames
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    source: str | None = None
    """The text, for files loaded from disk (so their own rewrite can be worked out)."""
    text: str | None = None
    """The text the tree was parsed from, when it was given (`Project.add`)."""
    rebound: frozenset[str] = frozenset()
    """Names the module's top level binds more than once (`_rebound`): a class or function
    of such a name may not be what the name holds when it is called (`Proj = Pass`)."""
    function_names: frozenset[str] | None = None
    """The names of `functions`, when known without the tree (from the file's summary)."""

    @property
    def tree(self) -> ast.Module:
        """The file's tree, parsed once the first time it is needed (and kept: its nodes are
        the same objects whoever asks)."""
        if self.parsed is None:
            assert self.text is not None, "a file registered without its tree has its text"
            self.parsed = parse_cached(self.text)
            read_type_comments(self.parsed, self.text)
        return self.parsed

    def function(self, name: str) -> ast.FunctionDef | None:
        """`functions.get(name)`, without parsing the file when its summary tells that it
        defines no such function (`find_function` follows re-exports through files that only
        import the name)."""
        if self.function_names is not None and name not in self.function_names:
            return None
        return self.functions.get(name)

    @functools.cached_property
    def functions(self) -> dict[str, ast.FunctionDef]:
        """The module-level functions whose name nothing else binds at the top level
        (`rebound`: `act = _fast`, a second `def` under an `if`: a call may then run something
        else); worked out once: the tree does not change."""
        return _module_functions(self.tree, self.rebound)

    @functools.cached_property
    def aliases(self) -> dict[str, ast.expr]:
        """Type aliases: names the module binds once, by a top-level assignment of a subscripted
        type (`Size_ = Tuple[int, int]`), and nothing else binds (no import, definition,
        parameter or other assignment)."""
        candidates = {
            s.targets[0].id: s.value
            for s in self.tree.body
            if isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and isinstance(s.value, ast.Subscript)
        }
        if not candidates:
            return {}
        stored: dict[str, int] = {}
        for node in all_nodes(self.tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                name = node.id
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = node.name
            elif isinstance(node, ast.alias):
                name = node.asname or node.name.split(".")[0]
            elif isinstance(node, ast.arg):
                name = node.arg
            else:
                continue
            stored[name] = stored.get(name, 0) + 1
        return {name: value for name, value in candidates.items() if stored.get(name) == 1}

    @functools.cached_property
    def real_path(self) -> str:
        """`os.path.realpath` of its path, worked out once (a project's lookups ask often)."""
        assert self.path is not None
        return real_paths.real_path(self.path)


def _rebound(tree: ast.Module, text: str | None) -> frozenset[str]:
    """The names the module's top level binds more than once (not inside a function, lambda
    or class, but a `global` declaration there): assignment and loop targets, `def`, `class`,
    imports, `except ... as`, `match` captures, `:=`. Values are not walked when `text` (the
    source) holds no `:=`, functions and classes (whose methods may declare a name `global`) not
    when no statement of it may be `global` (`may_declare_global`)."""
    walrus = text is None or ":=" in text
    declared = may_declare_global(text)
    counts: dict[str, int] = {}
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        names: list[str] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
            if declared:
                names += [g for n in all_nodes(node) if isinstance(n, ast.Global) for g in n.names]
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names = [node.id]
        elif isinstance(node, ast.alias):
            names = [(node.asname or node.name).split(".")[0]]
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            names = [node.name]
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names = [node.rest]
        value = isinstance(node, ast.expr) and type(getattr(node, "ctx", None)) in (
            ast.Load,
            type(None),
        )
        if not isinstance(node, _SCOPES) and (walrus or not value):
            todo += child_nodes(node)  # no Load/Store markers: they bind nothing
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    return frozenset(name for name, count in counts.items() if count > 1)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
"""Nodes whose body binds names of its own scope."""


def first_file(rel: Path, roots: Sequence[Path | None]) -> Path | None:
    """The file of the module at `rel` under the first of `roots` that holds one. A module
    missing (`typing`, a package not installed there) is looked for under every root, hundreds
    in a large package: a root whose entries (`_entries`) hold neither the module's first
    name nor that name `.py` is passed over with one `stat` (`RootIndex`: with none)."""
    tail = os.fspath(rel)
    first = rel.parts[0] if rel.parts else ""
    for root in roots:
        if root is None:
            continue
        entries = _entries(os.fspath(root))
        if entries is not None and first not in entries and f"{first}.py" not in entries:
            continue
        found = _in_root(os.fspath(root), tail)
        if found is not None:
            return found
    return None


def _in_root(root: str, tail: str) -> Path | None:
    base = os.path.join(root, tail)
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return path_of(candidate)
    return None


def path_of(name: str) -> Path:
    """`Path(name)`, made once a process (`_PATHS`): each kept search or work-out checked
    (`lookups.check`) finds its hundreds of files and their folders again, and building a
    `Path` cost more than finding the file."""
    found = _PATHS.get(name)
    if found is None:
        if len(_PATHS) >= _PATHS_KEPT:
            _PATHS.clear()
        found = _PATHS[name] = Path(name)
    return found


_PATHS: dict[str, Path] = {}
"""Name -> its `Path`; started afresh past `_PATHS_KEPT`."""
_PATHS_KEPT = 16_384


class RootIndex:
    """Folders modules are looked for in, in order, indexed by the names each holds (listed
    once): `first_file` for many lookups (a project's, `lookups.check`'s), trying only the
    folders whose entries hold the module's first name (or that name `.py`) or cannot be
    listed, where a missing module (`typing`) was a `stat` of each of hundreds of folders.
    Its folders come after those of `base`, which it reads as it is when asked."""

    def __init__(self, roots: Sequence[Path] = (), base: RootIndex | None = None) -> None:
        self._base = base
        self.roots: list[Path] = []
        """Its own folders, after the base's."""
        self._holding: dict[str, list[int]] = {}
        """Entry name -> the positions in `roots` of the folders holding it, in order."""
        self._unlisted: list[int] = []
        self._folders: set[str] = set()
        for root in roots:
            self.append(root)

    def all_roots(self) -> list[Path]:
        return [*(self._base.all_roots() if self._base else ()), *self.roots]

    def __contains__(self, folder: str) -> bool:
        return folder in self._folders or (self._base is not None and folder in self._base)

    def append(self, root: Path) -> None:
        position = len(self.roots)
        self.roots.append(root)
        self._folders.add(os.fspath(root))
        entries = _entries(os.fspath(root))
        if entries is None:
            self._unlisted.append(position)
            return
        for name in entries:
            self._holding.setdefault(name, []).append(position)

    def first_file(self, module: str) -> Path | None:
        """`first_file` of the dotted `module`."""
        found = self._base.first_file(module) if self._base is not None else None
        if found is not None:
            return found
        first = module.split(".", 1)[0]
        positions = {
            *self._holding.get(first, ()),
            *self._holding.get(f"{first}.py", ()),
            *self._unlisted,
        }
        tail = module.replace(".", os.sep)
        for position in sorted(positions):
            found = _in_root(os.fspath(self.roots[position]), tail)
            if found is not None:
                return found
        return None


_READ: OrderedDict[Path, list] = OrderedDict()
"""Path -> [its modification time and size, `module_name` of it, its text, its real folder;
None: not asked yet]: in a large package every file of a run loads the same files (each a
`stat` of every folder up to its import root, and a read; its summary is then found by the
text). As for `lookups._ON_DISK`, a file rewritten with the same size within the file system's
time resolution, or a package's `__init__.py` added or removed (or a symlink on its path
changed) while the process runs, is not seen (a run does none of these to the files it
reads). Oldest first, bounded by `_READ_KEPT`."""
_READ_KEPT = 16_384


def _read_entry(path: Path) -> list:
    """`_READ`'s entry for `path`, afresh when the file's modification time or size changed
    (raises OSError as `stat` does)."""
    stat = os.stat(path)
    stamp = (stat.st_mtime_ns, stat.st_size)
    kept = _READ.get(path)
    if kept is None or kept[0] != stamp:
        kept = _READ[path] = [stamp, None, None, None]
        while len(_READ) > _READ_KEPT:
            del _READ[next(iter(_READ))]
    return kept


def kept_module_name(path: Path) -> tuple[str, bool, Path]:
    """`module_name(path)`, worked out once while the file stays the same (`_READ`): every file
    of a run asks for the package of the files it reads, and its own."""
    return _kept(path, 1, module_name)


def _real_folder(path: Path) -> Path:
    """The real path of the folder of the file `path` (`resolved(path).parent`), worked out
    once while the file stays the same (`_READ`): each file registered adds its own."""
    return _kept(path, 3, lambda file: real_paths.resolved(file).parent)


_T = TypeVar("_T")


def _kept(path: Path, slot: int, work: Callable[[Path], _T]) -> _T:
    """`work(path)`, kept in `slot` of the file's entry in `_READ` (by its absolute path: a
    relative one names another file once the working directory changes); worked out each time
    for a file that cannot be `stat`-ed."""
    if not path.is_absolute():
        path = Path(os.path.abspath(path))
    try:
        kept = _read_entry(path)
    except OSError:
        return work(path)
    if kept[slot] is None:
        kept[slot] = work(path)
    return kept[slot]


def _text(path: Path) -> str:
    """The file's text (raises what `read_text` raises), read once while the file stays the
    same (`_READ`): the same string for every project, whose hash the summaries' table
    keeps."""
    kept = _read_entry(path)
    if kept[2] is None:
        kept[2] = path.read_text(encoding="utf-8")
    return kept[2]


_ENTRIES: dict[str, tuple[int, frozenset[str]]] = {}
"""Folder -> (its modification time, the names in it): a name added to or removed from a
folder changes its modification time (an entry made within its file system's time resolution
of the listing is not seen). Oldest first, bounded by `_ENTRIES_KEPT`."""
_ENTRIES_KEPT = 4096


def _entries(folder: str) -> frozenset[str] | None:
    """The names in `folder` (empty: it is not a folder; None: it cannot be listed)."""
    try:
        stamp = os.stat(folder).st_mtime_ns
    except OSError:
        return frozenset()
    kept = _ENTRIES.get(folder)
    if kept is None or kept[0] != stamp:
        try:
            names = frozenset(os.listdir(folder))
        except NotADirectoryError:
            names = frozenset()
        except OSError:
            return None
        kept = _ENTRIES[folder] = (stamp, names)
        while len(_ENTRIES) > _ENTRIES_KEPT:
            del _ENTRIES[next(iter(_ENTRIES))]
    return kept[1]


def module_name(path: Path, resolved: bool = False) -> tuple[str, bool, Path]:
    """(dotted module name, is a package `__init__`, import root) of a source file (`resolved`:
    `path` is already its real path)."""
    path = path if resolved else real_paths.resolved(path)
    is_package = path.name == "__init__.py"
    parts = [] if is_package else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts), is_package, folder


class Project:
    """Cache of parsed files, keyed by module name, resolved against the files' import roots."""

    def __init__(
        self,
        in_run: Callable[[Path], RunSettings | None] | None = None,
        evidence: Evidence | None = None,
    ) -> None:
        self.in_run = in_run
        """The settings another file is processed with in this run, None when it is not (no
        `in_run`: only the file at hand is): another file's helper becomes a module only if
        its own file gets the class in the same run."""
        self.evidence = evidence or Evidence()
        """Run-time evidence from built models (`fix --evidence`); empty without."""
        self._by_module: dict[str, FileInfo | None] = {}
        self._files: list[FileInfo] = []
        """Every file registered, kept for the classes that refer to it."""
        self._modules: dict[Path, str] = {}
        """Path -> its module name, worked out once (each looks for `__init__.py` files)."""
        self._roots: list[Path] = []
        self._index: RootIndex | None = None
        """`_roots`, indexed (`root_index`)."""
        self._root_set: set[Path] = set()
        self._stateless: dict[str, bool | None] = {}
        self.created: dict[str, set[str]] = {}
        """Class qualname -> attribute names the rewrite creates in it (across files)."""
        self.analyzed: set[str] = set()
        """Modules whose rewrite has been worked out in this run."""
        self.generation = 0
        """How many files have been registered: what was found before may be found otherwise
        after a change (a file worked out afresh registers new `ClassInfo`s)."""
        self.replacements = 0
        """How many registrations took a module name that was already looked up or
        registered (a file worked out afresh, one registered under a name found otherwise):
        only these change what a name was found to be (a module is looked for once a project,
        and a file loaded registers a name not looked up yet), so what was found through the
        names (`Family`'s ancestors) holds until the next one."""
        self.lookups: Lookups | None = None
        """While set, every module and file looked up is recorded there (`lookups`)."""
        self.traces: list[Trace] = []
        self.captures: list[list[tuple[tuple[str, str | Path], FileInfo | None] | None]] = []
        """While not empty, each lookup (None: one read something another project could read
        otherwise) also goes to each list, innermost last: what a `Family` keeps records again
        when it serves it (`seen_again`), as working it out again would."""
        """The work-outs of other files being recorded, innermost last (`worked`): each
        lookup, and each read and write of what the analysis keeps across files, goes to all."""
        self._classes: dict[
            tuple[str, FileInfo | None],
            tuple[
                int, ClassInfo | None, list[tuple[tuple[str, str | Path], FileInfo | None] | None]
            ],
        ] = {}
        """(qualified name, the file asking when of that module) -> (`replacements` then, the
        class `find_class` found, the lookups it made): the bases of a package's classes are
        asked for again and again (each class's ancestors walk them), and while no module name
        is registered again, the modules of the chain (all looked up: found for good) give the
        same, looked up again as recorded (`seen_again`). One that read something another
        project could read otherwise (`_unusable`) is not kept: the next lookup reads no more."""
        self.on_disk: dict[Path, tuple[str, str, Path, str | None]] = {}
        """Path -> (real path, module name, import root, text; None: unreadable), read once a
        project by `lookups.check` (which asks about the same files for each class)."""

    def add(
        self,
        tree: ast.Module,
        path: Path | None,
        source: str | None = None,
        stored: Collection[str] = (),
    ) -> FileInfo:
        """Register a parsed file (the one being processed) and return its info; its
        signature type comments, in `source`, become annotations (`type_comments`); `stored`:
        the names other files may store into through its module (`names.collect`)."""
        self.generation += 1
        if source is not None:
            read_type_comments(tree, source)
        module, is_package, root = kept_module_name(path) if path else ("", False, None)
        self._add_roots(path, root)
        names = collect(tree, module, is_package, source, stored)
        info = FileInfo(path, tree, names, text=source, rebound=_rebound(tree, source))
        self._files.append(info)
        if module in self._by_module:
            self.replacements += 1
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef):
                qual = f"{module}.{stmt.name}" if module else stmt.name
                info.classes[stmt.name] = ClassInfo(stmt.name, qual, stmt, info)
        if module:
            self._by_module[module] = info
        for trace in self.traces:
            trace.added.append((path, source))
        return info

    def _add_read(
        self,
        path: Path,
        source: str,
        looked_up: str | None = None,
        named: tuple[str, bool, Path] | None = None,
        facts: bool = True,
    ) -> FileInfo:
        """Register a file read from disk, as `add` would, from its summary (`summarized`;
        raises SyntaxError as the parse does): its tree is parsed only when needed.
        `looked_up`: the module being loaded (`_load`), whose name is taken as it is read;
        `named`: `module_name(path)`, when known; `facts`: whether the summary reads what each
        class statement tells (else worked out for the classes asked about)."""
        module, is_package, root = named or module_name(path)
        summary, tree = summarized(source, module, is_package, facts)
        self.generation += 1
        if module in self._by_module and module != looked_up:
            self.replacements += 1
        self._add_roots(path, root)
        info = FileInfo(
            path,
            tree,
            summary.names,
            source=summary.text,
            text=summary.text,
            rebound=summary.rebound,
            function_names=summary.functions,
        )
        self._files.append(info)
        for name, index, line, bases, told in summary.classes:
            qual = f"{module}.{name}" if module else name
            info.classes[name] = ClassInfo(
                name, qual, None, info, index=index, line=line, bases=bases, facts=told
            )
        if module:
            self._by_module[module] = info
        return info

    def add_text(self, path: Path, text: str) -> FileInfo:
        """Register a file as `add` registers the one being processed, from its text (its tree
        parsed only when needed): a file whose rewrite was worked out (`worked`)."""
        info = self._add_read(path, text)
        info.source = None
        for trace in self.traces:
            trace.added.append((path, text))
        return info

    def _add_roots(self, path: Path | None, root: Path | None) -> None:
        """Add a registered file's import root and folder to the folders searched."""
        if path is not None and root is not None:
            for folder in (root, _real_folder(path)):
                if folder not in self._root_set:
                    self._root_set.add(folder)
                    self._roots.append(folder)
                    if self._index is not None:
                        self._index.append(folder)

    def load_file(self, path: Path) -> FileInfo | None:
        """The parsed file at `path` (None: not parsable)."""
        if path not in self._modules:
            self._modules[path] = kept_module_name(path)[0]
        module = self._modules[path]
        if module in self._by_module:
            return self._seen(("file", path), self._by_module[module])
        try:
            info = self._add_read(path, _text(path), named=kept_module_name(path))
        except (SyntaxError, ValueError, OSError):
            self._unusable()  # another process may read it otherwise
            return None
        return self._seen(("file", path), info)

    def _seen(self, key: tuple[str, str | Path], found: FileInfo | None) -> FileInfo | None:
        """`found`, recorded in `lookups` when set, and in each trace."""
        if self.lookups is not None:
            self.lookups.record(key, found)
        for trace in self.traces:
            trace.lookups.record(key, found)
        for capture in self.captures:
            capture.append((key, found))
        return found

    def recording(self) -> bool:
        """Whether lookups are being recorded (a search, a work-out, a capture)."""
        return self.lookups is not None or bool(self.traces) or bool(self.captures)

    def seen_again(self, seen: list[tuple[tuple[str, str | Path], FileInfo | None] | None]) -> None:
        """Record the lookups of `seen` (captured) as if they were made again: in each
        recorder in turn (each records the same in the same order as `_seen` one by one)."""
        for lookups in [self.lookups, *(trace.lookups for trace in self.traces)]:
            if lookups is not None:
                known, record = lookups.seen, lookups.record
                for each in seen:
                    if each is None:
                        lookups.usable = False
                    elif each[0] not in known:
                        record(*each)
        for capture in self.captures:
            capture.extend(seen)

    def _unusable(self) -> None:
        """What is being recorded read something another project could read otherwise."""
        if self.lookups is not None:
            self.lookups.usable = False
        for trace in self.traces:
            trace.lookups.usable = False
        for capture in self.captures:
            capture.append(None)

    def load(self, module: str) -> FileInfo | None:
        """The parsed file of a module (None: not found or not parsable)."""
        if self.lookups is None and not self.traces and not self.captures:
            return self._load(module)
        replacements = self.replacements
        found = self._load(module)
        if found is not None and self._by_module.get(module) is not found:
            if replacements != self.replacements or not found.names.module:
                self._unusable()  # it replaced a file registered under its own name
        return self._seen(("module", module), found)

    def _load(self, module: str) -> FileInfo | None:
        if module in self._by_module:
            return self._by_module[module]
        rel = Path(*module.split("."))
        if rel.parts[0] == "torch":  # torch's sources do not change: keep the last few used
            if module in _TORCH_FILES:
                _TORCH_FILES.move_to_end(module)
            else:
                _TORCH_FILES[module] = Project()._read(module, rel, [_torch_root()])
                while len(_TORCH_FILES) > _TORCH_FILES_KEPT:
                    _TORCH_FILES.popitem(last=False)
            self._by_module[module] = _TORCH_FILES[module]
            return _TORCH_FILES[module]
        self._by_module[module] = None
        return self._read_file(module, self.root_index().first_file(module))

    def _read(self, module: str, rel: Path, roots: Sequence[Path | None]) -> FileInfo | None:
        """A torch file: most of its classes are never asked about (`activation.py` holds
        dozens), so what their statements tell is worked out for those asked about."""
        return self._read_file(module, first_file(rel, roots), facts=False)

    def _read_file(
        self, module: str, candidate: Path | None, facts: bool = True
    ) -> FileInfo | None:
        if candidate is None:
            return None
        try:
            return self._add_read(
                candidate, _text(candidate), module, kept_module_name(candidate), facts
            )
        except (SyntaxError, ValueError, OSError):
            self._unusable()  # another process may read it otherwise
            return None

    @property
    def roots(self) -> list[Path]:
        """The folders modules are looked for in, in order (each file registered adds its
        import root and its folder)."""
        return self._roots

    def root_index(self) -> RootIndex:
        """`roots`, indexed by the names each folder holds (listed once a project: a file's
        analysis takes a fraction of a second, while nothing changes the folders)."""
        if self._index is None:
            self._index = RootIndex(self._roots)
        return self._index

    def registered(self, module: str) -> tuple[bool, FileInfo | None]:
        """(whether `module` has been looked up or registered, what was found)."""
        return module in self._by_module, self._by_module.get(module)

    def replay(self, roots: list[Path], not_found: list[str]) -> None:
        """Take the state a search would have left (`lookups.check`): the folders its files
        would have added, and the modules it found missing (never looked for again)."""
        if self._index is not None:
            if roots[: len(self._roots)] == self._roots:
                for folder in roots[len(self._roots) :]:
                    self._index.append(folder)
            else:
                self._index = None
        self._roots = roots
        self._root_set = set(roots)
        for module in not_found:
            self._by_module.setdefault(module, None)

    def processes(self, path: Path | None) -> RunSettings | None:
        """The settings the file at `path` is processed with in this run (None: it is not)."""
        settings = self.in_run(path) if path is not None and self.in_run is not None else None
        for trace in self.traces:
            trace.processes.setdefault(path, settings)
        return settings

    def names_created(self, qualname: str) -> set[str]:
        """The attribute names the rewrite creates in a class (`created`), read."""
        names = self.created.get(qualname, set())
        for trace in self.traces:
            if qualname not in trace.written:
                trace.created.setdefault(qualname, frozenset(names))
        return names

    def create(self, qualname: str, name: str) -> None:
        """Note `name` as created in the class `qualname`."""
        self.created.setdefault(qualname, set()).add(name)
        for trace in self.traces:
            trace.written.add(qualname)

    def forget_created(self, qualname: str) -> None:
        """Forget the names created in a class (its file is worked out afresh)."""
        self.created.pop(qualname, None)
        for trace in self.traces:
            trace.written.add(qualname)

    def is_analyzed(self, module: str) -> bool:
        """Whether the rewrite of `module` has been worked out in this run."""
        analyzed = module in self.analyzed
        for trace in self.traces:
            if module not in trace.analyzed_here:
                trace.analyzed.setdefault(module, analyzed)
        return analyzed

    def mark_analyzed(self, module: str) -> None:
        self.analyzed.add(module)
        for trace in self.traces:
            trace.analyzed_here[module] = None

    def find_class(self, qualname: str | None, within: FileInfo | None = None) -> ClassInfo | None:
        """The class named by a qualified name, from the given file or a file on disk."""
        if not qualname or "." not in qualname:
            found = within.classes.get(qualname) if within and qualname else None
            return found if found is not None and found.name not in found.file.rebound else None
        if qualname in (TORCH_MODULE, "torch.nn.modules.module.Module"):
            return None  # its attribute names are catalog.MODULE_ATTRIBUTES
        if within is not None and within.names.module != qualname.rsplit(".", 1)[0]:
            within = None  # `_find` reads it only for a name of its own module
        kept = self._classes.get((qualname, within))
        if kept is not None and kept[0] == self.replacements:
            if kept[2] and self.recording():
                self.seen_again(kept[2])
            return kept[1]
        replacements = self.replacements
        seen: list[tuple[tuple[str, str | Path], FileInfo | None] | None] = []
        self.captures.append(seen)
        try:
            found = self._find(qualname, within, _class_named)
        finally:
            self.captures.pop()
        cls = found[1] if found else None
        if replacements == self.replacements and None not in seen:
            self._classes[qualname, within] = (replacements, cls, seen)
        return cls

    def find_function(
        self, qualname: str, within: FileInfo | None = None
    ) -> tuple[FileInfo, ast.FunctionDef] | None:
        """The module-level function named by a qualified name and the file that defines it,
        following re-exports (`from .pool1d import global_pool_nlc` in a package)."""
        return self._find(qualname, within, FileInfo.function)

    def _find(self, qualname: str, within: FileInfo | None, pick, _depth: int = 0):
        """(file, what `pick(file, name)` finds there) for `module.name`, following imports and
        star imports of the defining module; None when not found."""
        if _depth > 8 or "." not in qualname:  # import cycles
            return None
        module, name = qualname.rsplit(".", 1)
        if within is not None and within.names.module == module:
            info: FileInfo | None = within
        elif (
            module not in self._by_module
            and module.split(".", 1)[0] == "torch"
            and _torch_lacks(module, name)
        ):
            return None  # what `load` would read: torch's own file, which cannot hold it
        else:
            info = self.load(module)
        if info is None:
            return None
        if (found := pick(info, name)) is not None:
            return info, found
        if name in info.names.imports:
            return self._find(info.names.imports[name], None, pick, _depth + 1)
        return next(
            (
                f
                for star in info.names.stars
                if (f := self._find(f"{star}.{name}", None, pick, _depth + 1))
            ),
            None,
        )

    def is_module(self, cls: ClassInfo, _seen: frozenset[str] = frozenset()) -> bool:
        """Whether `cls` derives from `torch.nn.Module`, through classes that can be found."""
        for base in cls.bases:
            if base is None or base in _seen:
                continue
            if is_torch_module(base):
                return True
            parent = self.find_class(base, cls.file)
            if parent is not None and self.is_module(parent, _seen | {cls.qualname}):
                return True
        return False

    def stateless(self, qualname: str | None, within: FileInfo | None = None) -> bool | None:
        """True if instances of the class hold no parameters or buffers whatever their
        arguments, False if they may, None when that cannot be known statically."""
        if qualname is None:
            return None
        if qualname.startswith("torch.nn."):
            return qualname in STATELESS_TORCH_MODULES or qualname == TORCH_MODULE
        if qualname.startswith("migrator.nn."):  # migrator's op modules never hold state
            return qualname in OP_MODULES or None
        cls = self.find_class(qualname, within)
        if cls is None:
            return None
        if cls.qualname in self._stateless:
            verdict = self._stateless[cls.qualname]
            for trace in self.traces:
                if cls.qualname not in trace.stateless_here:
                    trace.stateless.setdefault(cls.qualname, verdict)
            return verdict
        self._stateless[cls.qualname] = None  # cycles are unknown
        for trace in self.traces:
            trace.stateless_here.add(cls.qualname)
        result = self._class_stateless(cls)
        self._stateless[cls.qualname] = result
        return result

    def _class_stateless(self, cls: ClassInfo) -> bool | None:
        verdicts = [self.stateless(base, cls.file) for base in cls.bases]
        registers, assigned = _state_scan(cls)
        for value, plain in assigned:
            verdicts.append(self.value_stateless(value, cls.file, plain))
        if registers:
            return False
        if False in verdicts:
            return False
        return None if None in verdicts else True

    def value_stateless(
        self, value: ast.expr, file: FileInfo, plain: frozenset[str] = frozenset()
    ) -> bool | None:
        """Whether assigning `value` to an attribute adds no parameters or buffers (None:
        unknown). `plain` names hold plain values (parameters with literal defaults)."""
        if isinstance(value, ast.IfExp):
            a = self.value_stateless(value.body, file, plain)
            b = self.value_stateless(value.orelse, file, plain)
            return False if False in (a, b) else (None if None in (a, b) else True)
        if isinstance(value, ast.Call):
            return self.stateless(file.names.resolve(value.func), file)
        if isinstance(value, ast.Name):
            return True if value.id in plain or value.id in file.names.constants else None
        if isinstance(
            value,
            (
                ast.Constant,
                ast.Tuple,
                ast.List,
                ast.BinOp,
                ast.UnaryOp,
                ast.Compare,
                ast.BoolOp,
                ast.JoinedStr,
            ),
        ):
            return True
        return None


def _class_named(info: FileInfo, name: str) -> ClassInfo | None:
    """The class `name` of `info`, unless the module binds the name again (`rebound`)."""
    return info.classes.get(name) if name not in info.rebound else None


OP_MODULES = frozenset(m for m in replacing_modules() if m.startswith("migrator.nn."))


def is_torch_module(qualname: str) -> bool:
    """Whether a qualified name is `torch.nn.Module` or one of torch.nn's module classes."""
    if qualname == TORCH_MODULE or qualname == "torch.nn.modules.module.Module":
        return True
    parts = qualname.split(".")
    return (
        len(parts) == 3
        and parts[:2] == ["torch", "nn"]
        and parts[2][:1].isupper()
        and qualname not in _NOT_MODULES
    )


_StateScan = tuple[bool, tuple[tuple[ast.expr, frozenset[str]], ...]]
_STATE_SCANS: weakref.WeakKeyDictionary[ast.ClassDef, tuple[ModuleNames, _StateScan]] = (
    weakref.WeakKeyDictionary()
)
"""Class statement -> (the names it was read with, its `_state_scan`): every file of a run asks
about the same bases (`PreTrainedModel`: each project walks its methods again), and the tree of
a file read from disk and its summary's names are shared while they are kept."""


def _state_scan(cls: ClassInfo) -> _StateScan:
    """(whether a method registers state, by `register_buffer` / `register_parameter` or a
    parameter made, the values assigned to `self` attributes before the first such call, each
    with its method's `_plain_parameters`), in the order `_class_stateless` weighs them: the
    statement's and its names' alone, so kept by statement (`_STATE_SCANS`)."""
    node, names = cls.node, cls.file.names
    kept = _STATE_SCANS.get(node)
    if kept is not None and kept[0] is names:
        return kept[1]
    scan = _scan_state(cls.methods().values(), names)
    _STATE_SCANS[node] = (names, scan)
    return scan


def _scan_state(methods: Collection[ast.FunctionDef], names: ModuleNames) -> _StateScan:
    assigned: list[tuple[ast.expr, frozenset[str]]] = []
    for method in methods:
        plain = _plain_parameters(method)
        for node in all_nodes(method):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in _REGISTERS_STATE:
                    return True, tuple(assigned)
                if names.resolve(func) in _PARAMETER:
                    return True, tuple(assigned)
            elif isinstance(node, ast.Assign) and any(_is_self_attr(t) for t in node.targets):
                assigned.append((node.value, plain))
    return False, tuple(assigned)


def _is_self_attr(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _plain_parameters(method: ast.FunctionDef) -> frozenset[str]:
    """Parameters that hold plain values: a literal default or a scalar annotation."""
    args = method.args
    positional = [*args.posonlyargs, *args.args]
    plain = {name for name, default in parameter_defaults(args).items() if literal(default)}
    plain |= {
        a.arg
        for a in (*positional, *args.kwonlyargs)
        if a.annotation is not None and ast.unparse(a.annotation) in ("int", "float", "bool", "str")
    }
    return frozenset(plain)


_TORCH_FILES: OrderedDict[str, FileInfo | None] = OrderedDict()
"""torch's own source files most recently needed (for the attributes of its classes), least
recently used first: a bounded cache, so memory stays flat however many files a run reads."""
_TORCH_FILES_KEPT = 32


@functools.cache
def _torch_root() -> Path | None:
    """The folder holding the installed torch package's sources (found, never imported), so
    that the attributes of torch.nn base classes are known."""
    spec = importlib.util.find_spec("torch")
    locations = spec.submodule_search_locations if spec else None
    return Path(locations[0]).parent if locations else None


_STAR_IMPORT = re.compile(r"import[\s\\]*\*")


@functools.lru_cache(maxsize=4096)
def _torch_lacks(module: str, name: str) -> bool:
    """Whether torch's module `module` provably neither defines nor imports `name`: its text
    (all ASCII, so no identifier is spelled otherwise) never holds the name and imports nothing
    with `*`, so `_find` need not parse it (`torch.ao.quantization.QuantStub` is found through
    ten star imports of its package, seven of modules that never name it: 155 k characters).
    torch's sources do not change during a run (`_TORCH_FILES`)."""
    root = _torch_root()
    path = first_file(Path(*module.split(".")), [root]) if root is not None else None
    if path is None:
        return False
    try:
        text = _text(path)
    except (OSError, ValueError):
        return False
    return text.isascii() and name not in text and _STAR_IMPORT.search(text) is None


_PARSED: OrderedDict[str, ast.Module] = OrderedDict()
"""Source text -> its `ast`, for the files the analysis reads besides the one at hand, most
recently used last: each file of a run reads the same siblings and bases, and a text parses to
the same tree (which nothing changes) whatever reads it. Bounded by `_PARSED_CHARS`, and the
trees of files at hand no other file has read yet (`_ALONE`) by `_ALONE_CHARS`: in transformers
the bases every model file reads (`modeling_utils.py`, `generation/utils.py`, ...) are 1.5 M
characters, which a single bound of 1 M dropped and parsed again for every file."""
_PARSED_CHARS = 3_000_000
_ALONE: set[str] = set()
_ALONE_CHARS = 1_000_000
_parsed_chars = 0
_alone_chars = 0
"""The characters of the texts in `_PARSED` and in `_ALONE`, kept as they change."""


def parse_cached(source: str, *, at_hand: bool = False) -> ast.Module:
    """`ast.parse(source)`, from the cache when the same text was parsed lately. The tree of
    the file at hand (`at_hand`), parsed for the first time, is kept as the first to drop: most
    files are read by no other, while the bases and siblings one reads are read by the next (on
    timm, parsing again falls from a quarter of the parse to 3 %, at the same bound)."""
    global _parsed_chars, _alone_chars
    tree = _PARSED.pop(source, None)
    first = tree is None
    if tree is None:
        tree = ast.parse(source)
        _parsed_chars += len(source)
    _PARSED[source] = tree
    if at_hand and first:
        _PARSED.move_to_end(source, last=False)
        _ALONE.add(source)
        _alone_chars += len(source)
    elif not at_hand and source in _ALONE:
        _ALONE.discard(source)
        _alone_chars -= len(source)
    while (_parsed_chars > _PARSED_CHARS or _alone_chars > _ALONE_CHARS) and len(_PARSED) > 1:
        if _alone_chars > _ALONE_CHARS:
            oldest = next(text for text in _PARSED if text in _ALONE)
        else:
            oldest = next(iter(_PARSED))
        _parsed_chars -= len(oldest)
        if oldest in _ALONE:
            _alone_chars -= len(oldest)
            _ALONE.discard(oldest)
        del _PARSED[oldest]
    return tree


class Summary(NamedTuple):
    """What registering a file read from disk takes from its tree."""

    text: str
    """The text summarized (one copy, shared by every project that reads the file)."""
    names: ModuleNames
    """Its module-level bindings (`names.collect`; read only)."""
    classes: tuple[tuple[str, int, int, tuple[str | None, ...], StatementFacts | None], ...]
    """(name, position in the body, line, resolved bases, what its statement alone tells) of
    each class of the module body, by name as `Project.add` registers them (a later class of
    the same name replaces the earlier). The facts cost a tenth of the parse: read later, they
    would cost the file's parse again (a search reads some 1,100 files of transformers, the
    next files ask about their classes after the trees were dropped)."""
    rebound: frozenset[str]
    """`FileInfo.rebound`."""
    functions: frozenset[str]
    """The names of `FileInfo.functions`."""


_SUMMARIES: OrderedDict[tuple[str, str, bool, bool], Summary] = OrderedDict()
"""(text, module name, is a package, with facts) -> its summary, most recently used last: in a
large package each file of a run reads most of the package in its searches, and a summary
depends on nothing else. Bounded by `_SUMMARY_CHARS`."""
_SUMMARY_CHARS = 64_000_000
_summary_chars = 0


def summarized(
    source: str, module: str, is_package: bool, facts: bool = True
) -> tuple[Summary, ast.Module | None]:
    """The summary of a file's text under its module name, from one parse (raises what
    `ast.parse` raises), and the tree when it was parsed for it (None: the summary was kept);
    without `facts`, its classes' statement facts are None (`ClassInfo.facts`). The summary
    kept with facts (or without) gives the other's all but the facts: files a search reads
    without (`mentions`) are loaded with them, and the bases every file reads with (torch's
    are read without), each a parse again once the tree was dropped."""
    global _summary_chars
    key = (source, module, is_package, facts)
    summary, tree = _SUMMARIES.pop(key, None), None
    if summary is None:
        other = _SUMMARIES.get((source, module, is_package, not facts))
        if other is not None and not facts:
            summary = other._replace(classes=tuple((*c[:4], None) for c in other.classes))
        else:
            summary, tree = _summary(source, module, is_package, facts, other)
        _summary_chars += len(source)
    _SUMMARIES[key] = summary
    while _summary_chars > _SUMMARY_CHARS and len(_SUMMARIES) > 1:
        _summary_chars -= len(_SUMMARIES.popitem(last=False)[0][0])
    return summary, tree


def _summary(
    source: str, module: str, is_package: bool, facts: bool, other: Summary | None
) -> tuple[Summary, ast.Module]:
    """The summary of `summarized` from a parse, and the tree; the names and the names bound
    again taken from `other`, the same text's summary under the same module name, if any."""
    tree = parse_cached(source)
    read_type_comments(tree, source)
    names = other.names if other is not None else collect(tree, module, is_package, source)
    classes: dict[str, tuple[int, int, tuple[str | None, ...], StatementFacts | None]] = {}
    for index, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.ClassDef):
            bases = tuple(names.resolve(b) for b in stmt.bases)
            told = statement_facts(stmt, names_by_name(source)) if facts else None
            classes[stmt.name] = (index, stmt.lineno, bases, told)
    rebound = other.rebound if other is not None else _rebound(tree, source)
    summary = Summary(
        source,
        names,
        tuple((n, *rest) for n, rest in classes.items()),
        rebound,
        frozenset(_module_functions(tree, rebound)),
    )
    return summary, tree


def _module_functions(tree: ast.Module, rebound: frozenset[str]) -> dict[str, ast.FunctionDef]:
    """`FileInfo.functions` of a tree whose names bound again are `rebound`."""
    return {
        s.name: s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name not in rebound
    }
