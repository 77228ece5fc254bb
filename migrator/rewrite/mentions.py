"""Which files of a package call a function from a method: what decides, for a helper
function's own file and for its callers alike, whether `fix` gives it a module twin
(`helper_modules`).

A call counts when it is `name(...)` in a method of a class that sets nothing up (not
`__init__`, nor a method named `*init*` or `*reset*`, where weights are initialised), or in a
module-level function such methods may reach (`_reached`: a helper's module holds modules of
the helpers it calls, in any file), in a file importing that name (from any module: a package
may re-export it) or `*` (not a function of its own of that name; a private name only imported
by name), or the call `self.name(...)` / `self.name_<n>(...)` that `fix` makes of
it in a file importing the function's module or anything of it (not the `self.cat(...)` made
of `torch.cat` in a file importing nothing of that module); calls in the twin classes `fix`
adds do not count, nor calls whose line shows they pass no first argument a module could take
(`name()`, `name(*args)`, `name(flow=...)`: the caller refuses those whatever else it finds,
and `fix` never makes them). A call through the function's module counts too
(`through_module`): `q.name(...)` in a file whose top level imports that module as `q` (`from .
import boxes as box_ops`, `from . import layers`), and, in a file importing the module, the
`self.<name without leading or trailing _>(...)` that `fix` makes of it; imports are resolved
against the importing file's package, so a module of the same file name in another folder
(`from . import _utils` in `detection/`, not `ops/_utils.py`) is another module. So the answer
does not change while `fix` rewrites the package file by file. The file holding the function is
never counted. Methods are found from the text, by indentation (no parse; the imports of a file
making such a call, from its parse), and each file is read once a process.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Callable, Collection
from pathlib import Path

from migrator import catalog
from migrator.rewrite.defined import anchored_matches, word_start
from migrator.rewrite.names import ModuleNames, patch_among
from migrator.rewrite.plan import TWIN_DOC
from migrator.rewrite.project import kept_module_name, module_name, summarized
from migrator.rewrite.real_paths import resolved

_CALL_IN_LINE = re.compile(
    r"(?<![\w.])(?:((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\.)?([A-Za-z_]\w*)[^\S\n]*\("
    r"(?=[^\S\n]*(\S?)(\w*[^\S\n]*=?=?))"
)
"""`name(` or `q.name(` (`q` a name or dotted name: `self`, `box_ops`, `pkg.layers`, read
apart), not after a call or subscript (`f(x).name(`); then what the arguments start with on
its line."""
_SUFFIX = re.compile(r"_\d+$")
_SKIPPED = frozenset({"__pycache__", "node_modules"})


class PackageCalls:
    """The calls made in the other files of the top-level package of one file."""

    def __init__(self, path: Path) -> None:
        self.own = resolved(path)
        self.module = module_name(self.own, resolved=True)[0]
        self.index, self.qualified = _index(_package_top(self.own))

    def from_methods(self, name: str) -> bool:
        """Whether a method in another file of the package, or a function methods reach, calls
        `name` (see above); a private name only as imported by its name (no `*` brings it)."""
        private = name.startswith("_")
        return (
            any(
                path != self.own
                and (name in _names(path).imports if private else _imports_name(_names(path), name))
                for path in self.index.get(name, ())
            )
            or self._through_self(name.strip("_") or "helper", _imports_from)
            or self.through_module(name)
        )

    def through_module(self, name: str) -> bool:
        """Whether a method in another file of the package calls `name` through this file's
        module, `q.name(...)` where that file imports the module as `q`, or calls the
        `self.<name without leading or trailing _>(...)` that `fix` makes of such a call in a
        file that imports the module."""
        return any(
            path != self.own and q != "self" and _names(path).resolve(_dotted(q)) == self.module
            for path, q in self.qualified.get(name, ())
        ) or self._through_self(
            name.strip("_") or "helper",
            lambda names, module: module in names.imports.values() or module in names.dotted,
        )

    def _through_self(self, attr: str, imports: Callable[[ModuleNames, str], bool]) -> bool:
        """Whether a method in another file of the package, whose imports of this file's
        module pass `imports`, calls `self.<attr>(...)` or `self.<attr>_<n>(...)`."""
        return any(
            path != self.own and q == "self" and imports(_names(path), self.module)
            for path, q in self.qualified.get(attr, ())
        )

    def renamed(self, name: str) -> bool:
        """Whether another file of the package may import `name` under another name (`from .a
        import mix as mx`), whose calls `from_methods` does not see: `<name> as` in its text."""
        top = _package_top(self.own)
        return any(path != self.own for path in _renamed(top).get(name, ()))

    def sets_training(self, name: str) -> Path | None:
        """A file of the package, this one aside, whose text names the class `name` and may
        store into the `training` of a module other than `self` (`outside_training_store`)."""
        named = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
        return next(
            (
                path
                for path, text in _training_stores(_package_top(self.own))
                if path != self.own
                and next(anchored_matches(named, text, [(name, 0)]), None) is not None
            ),
            None,
        )


@functools.lru_cache(maxsize=8)
def _training_stores(top: Path | None) -> tuple[tuple[Path, str], ...]:
    """The files under `top` (with their text) that may store into the `training` of a module
    other than `self` (`outside_training_store`), read once a process."""
    return tuple(
        (path, text) for path in _files(top) if outside_training_store(text := _read(path))
    )


def attributes_stored_elsewhere(path: Path) -> frozenset[str]:
    """The names the other files of `path`'s top-level package store as an attribute of
    something but `self` or `cls` (`layers._SLOPE = 0.5`, `pkg.layers.EPS += 1`): a global of
    `path` of such a name may be changed through its module after a constructor read it."""
    own = resolved(path)
    found = _stored_attributes(_package_top(own))  # each file once a name
    return frozenset(name for name, paths in found.items() if len(paths) > 1 or paths[0] != own)


@functools.lru_cache(maxsize=4)
def attributes_stored_on_others(path: Path | None, source: str) -> frozenset[str]:
    """The names `source`, and the files of `path`'s top-level package, store as an attribute
    of something but plain `self` or `cls` (`self.block.relu = m`, `model.head.act = m`,
    `setattr(block, "relu", m)`): a module `fix` creates under such a name may be replaced from
    outside its class. Kept for the classes of the file at hand; in a package, its files are read
    once a process (the text at hand as it is on disk)."""
    top = _package_top(resolved(path)) if path is not None else None
    if top is None:
        return frozenset(_stores(source)[1])
    return _package_stores(top)[1]  # the file's own text among them


def patched_elsewhere(path: Path, spellings: Collection[str]) -> tuple[str, str, int] | None:
    """A store another file of `path`'s top-level package makes, anywhere in it, into an op's
    `spellings` (`names.patch_among`): (that file's module, the name stored into, its line);
    None when none does."""
    for other, patched in _others_patches(path):
        if (found := patch_among(patched, spellings)) is not None:
            return _names(other).module, *found
    return None


@functools.lru_cache(maxsize=4)
def _others_patches(path: Path) -> tuple[tuple[Path, dict[str, int]], ...]:
    """`_package_patches` of `path`'s package but `path`'s own (asked at each op: kept)."""
    own = resolved(path)
    return tuple(found for found in _package_patches(_package_top(own)) if found[0] != own)


@functools.lru_cache(maxsize=8)
def _package_patches(top: Path | None) -> tuple[tuple[Path, dict[str, int]], ...]:
    """The files under `top` storing into attributes of torch (`ModuleNames.patched`), with
    those stores: of the files calling `setattr(` or storing an attribute of a name an op runs
    (`catalog.PATCHABLE`), each parsed once a process."""
    stored, _, setattrs = _package_stores(top)
    found = []
    for path in sorted({p for n in catalog.PATCHABLE for p in stored.get(n, ())} | set(setattrs)):
        patched = _names(path).patched
        torch_stores = {n: line for n, line in patched.items() if n.split(".")[0] == "torch"}
        if torch_stores:
            found.append((path, torch_stores))
    return tuple(found)


_ATTRIBUTE_STORE = re.compile(r"\.([A-Za-z_]\w*)[^\S\n]*(?:\*\*|//|<<|>>|[-+*/%&|^@])?=(?!=)")
"""`.<name> = ` (or an augmented assignment), searched from its literal start (fast); the
receiver before it is read apart (`_stores`)."""
_RECEIVER = re.compile(r"(?<![\w.\])])[A-Za-z_][\w.]*$")
"""A dotted name ending the text before `.<name>`."""
_SETATTR = re.compile(r"setattr\([^\S\n]*([^,\n]+?)[^\S\n]*,[^\S\n]*[\"']([A-Za-z_]\w*)[\"']")
"""`setattr(<receiver>, "<name>"` (matched where `str.find` finds `setattr(`: fast)."""


def _stores(text: str) -> tuple[set[str], set[str]]:
    """(the names `text` stores as an attribute of a dotted name not starting `self.` or `cls.`
    (nor being `self` or `cls`), those it stores as an attribute of anything but plain `self`
    or `cls`, also by `setattr`)."""
    dotted: set[str] = set()
    others: set[str] = set()
    for match in _ATTRIBUTE_STORE.finditer(text):
        start = match.start()
        if _ends_alone(text, start, "self") or _ends_alone(text, start, "cls"):
            continue
        others.add(match.group(1))
        receiver = _RECEIVER.search(text, text.rfind("\n", 0, start) + 1, start)
        if receiver and receiver.group(0).split(".")[0] not in ("self", "cls"):
            dotted.add(match.group(1))
    at = text.find("setattr(")
    while at != -1:
        call = _SETATTR.match(text, at)
        if call and call.group(1) not in ("self", "cls") and text[at - 1 : at] != ".":
            others.add(call.group(2))
        at = text.find("setattr(", at + 1)
    for word in _NAMING_WORDS:
        at = text.find(word)
        while at != -1:
            named = _NAMED_ON.match(text, at - 1)
            if named and not any(_ends_alone(text, at - 1, o) for o in ("self", "cls", "super()")):
                others.add(named.group(1) or named.group(2))
            elif (call := _SETATTR_ON.match(text, at - 1)) and call.group(1) not in ("self", "cls"):
                others.add(call.group(2))
            at = text.find(word, at + 1)
    return dotted, others


_NAMING_WORDS = ("__setattr__(", "add_module(", "register_module(", "_modules[", "__dict__[")
"""Where a name is stored on a receiver by a string (`_NAMED_ON`, `_SETATTR_ON`)."""
_NAMED_ON = re.compile(
    r"\.(?:__setattr__|add_module|register_module)\([^\S\n]*[\"']([A-Za-z_]\w*)[\"']"
    r"|\.(?:_modules|__dict__)\[[^\S\n]*[\"']([A-Za-z_]\w*)[\"'][^\S\n]*\][^\S\n]*=(?!=)"
)
"""`<receiver>.add_module("<name>"`, `<receiver>._modules["<name>"] =` (matched from the dot)."""
_SETATTR_ON = re.compile(
    r"\.__setattr__\([^\S\n]*([^,\n]+?)[^\S\n]*,[^\S\n]*[\"']([A-Za-z_]\w*)[\"']"
)
"""`object.__setattr__(<receiver>, "<name>"` (matched from the dot)."""


def _ends_alone(text: str, end: int, name: str) -> bool:
    """Whether `text` before `end` ends in `name` alone (not `a.self`, `myself`)."""
    start = end - len(name)
    if start < 0 or not text.startswith(name, start):
        return False
    before = text[start - 1] if start else "\n"
    return not (before.isalnum() or before in "_.])")


def _stored_attributes(top: Path | None) -> dict[str, tuple[Path, ...]]:
    """Name -> the files under `top` storing an attribute of a dotted name not starting `self.`
    or `cls.` of that name (`_stores`)."""
    return _package_stores(top)[0]


@functools.lru_cache(maxsize=8)
def _package_stores(
    top: Path | None,
) -> tuple[dict[str, tuple[Path, ...]], frozenset[str], tuple[Path, ...]]:
    """(`_stored_attributes`, the names stored on anything but plain `self` or `cls`, the files
    calling `setattr(`) of the files under `top`, each read once a process."""
    dotted: dict[str, list[Path]] = {}
    others: set[str] = set()
    setattrs: list[Path] = []
    for path in _files(top):
        names, stored = _stores(text := _read(path))
        for name in names:
            dotted.setdefault(name, []).append(path)
        others |= stored
        if "setattr(" in text:
            setattrs.append(path)
    return (
        {name: tuple(paths) for name, paths in dotted.items()},
        frozenset(others),
        tuple(setattrs),
    )


_TRAINING_STORE = re.compile(r"\.training[^\S\n]*=(?!=)")
"""`.training = ` (searched from its literal start: fast)."""
_SETATTR_TRAINING = re.compile(r"setattr\(([^\n]*)[\"']training[\"']")
"""`setattr(<x>, "training"`, `setattr` to be told apart from a longer name."""
_PLAIN_SELF = re.compile(r"(?:^|[^\w.\])])self$")
"""The text before `.training` ending in `self` alone (not `a.self`, `x[0].self`)."""


def outside_training_store(text: str) -> bool:
    """Whether `text` may store into the `training` flag of a module other than `self`
    (`inner.training = False`, `self.head.training = False`, `setattr(m, "training", v)`):
    that module's flag then differs from its submodules'."""
    for match in _SETATTR_TRAINING.finditer(text) if "setattr(" in text else ():
        start = match.start()
        if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
            continue  # `mysetattr(`
        if not match.group(1).lstrip().startswith(("self,", "self ")):
            return True
    for match in _TRAINING_STORE.finditer(text):
        start = match.start()
        before = text[text.rfind("\n", 0, start) + 1 : start]
        if not _PLAIN_SELF.search(before):
            return True
    return False


def _package_top(path: Path) -> Path | None:
    """The folder of the top-level package holding `path` (None: no package)."""
    if not (path.parent / "__init__.py").exists():
        return None
    module, _, root = kept_module_name(path)
    return root / module.split(".")[0]


@functools.lru_cache(maxsize=8)
def _index(
    top: Path | None,
) -> tuple[dict[str, tuple[Path, ...]], dict[str, tuple[tuple[Path, str], ...]]]:
    """Name -> the files under `top` whose methods, or module-level functions that methods
    reach (`_reached`), call it alone, and name -> (file, `q`) of their calls `q.name(...)`,
    listed and read once a process (as `subclasses` indexes a package)."""
    found: dict[str, list[Path]] = {}
    qualified: dict[str, list[tuple[Path, str]]] = {}
    bodies = [(path, *_calls_by_body(path)) for path in _files(top)]
    for path, names, through in _reached(bodies):
        for name in names:
            found.setdefault(name, []).append(path)
        for q, name in through:
            qualified.setdefault(name, []).append((path, q))
    return (
        {name: tuple(paths) for name, paths in found.items()},
        {name: tuple(pairs) for name, pairs in qualified.items()},
    )


def _reached(
    bodies: list[tuple[Path, _Calls, dict[str, _Calls]]],
) -> list[tuple[Path, frozenset[str], frozenset[tuple[str, str]]]]:
    """(file, calls) of the methods of each file, and of each module-level function some method
    may reach, by name alone (any file's): one whose name, or the attribute `fix` makes of it
    (`self.<name without leading or trailing _>`, `<name>_ops(...)`), methods call, or a
    function so reached calls. A helper's module holds modules of the helpers it calls, in
    any file; the function stays as written, so the answer does not change while `fix` runs."""
    reached = [(path, *methods) for path, methods, _ in bodies]
    called = {name for _, names, through in reached for name in {*names, *(c for _, c in through)}}
    todo = [
        (path, name, calls) for path, _, functions in bodies for name, calls in functions.items()
    ]
    while True:
        more: list[tuple[Path, str, _Calls]] = []
        rest: list[tuple[Path, str, _Calls]] = []
        for each in todo:
            name = each[1]
            (more if {name, name.strip("_"), f"{name}_ops"} & called else rest).append(each)
        if not more:
            return reached
        todo = rest
        for path, _, (names, through) in more:
            reached.append((path, names, through))
            called |= names | {c for _, c in through}


@functools.lru_cache(maxsize=64)
def _names(path: Path) -> ModuleNames:
    """The top-level bindings of `path`, its imports resolved against its package (`from .
    import _utils as det_utils` in `pkg/detection/rpn.py` binds `pkg.detection._utils`);
    none when it does not parse."""
    module, is_package, _ = kept_module_name(path)
    try:
        return summarized(_read(path), module, is_package, facts=False)[0].names
    except SyntaxError:
        return ModuleNames(module, is_package)


def _imports_name(names: ModuleNames, name: str) -> bool:
    """Whether `names` bind `name` by an import alone (`from .layers import mix`, or through a
    module re-exporting it), or import `*`: a call of a function of a file's own (`def mix`,
    `mix = ...`) is no call of another file's."""
    return name in names.imports or bool(names.stars)


def _imports_from(names: ModuleNames, module: str) -> bool:
    """Whether `names` import the module `module`, or anything of it (`from .layers import
    mix`, or the twin `fix` imports in its place, `from pkg.layers import Mix`; `import
    pkg.layers`, through which `fix` names it, `pkg.layers.Mix()`)."""
    return module in names.stars or any(
        value == module or value.startswith(f"{module}.")
        for value in (*names.imports.values(), *names.dotted)
    )


def _dotted(name: str) -> ast.expr:
    """The expression of the dotted name `name` (`pkg.layers`), for `ModuleNames.resolve`."""
    head, *rest = name.split(".")
    node: ast.expr = ast.Name(head)
    for part in rest:
        node = ast.Attribute(node, part)
    return node


_RENAMED = re.compile(r"(?<![\w.])(\w+)(?:\s|\\)+as(?:\s|\\)+\w")
"""`name as alias` (an import's, or a `with`'s: counted too)."""
_AS = re.compile(r"as(?:\s|\\)+\w")
"""The tail of `_RENAMED`, which `re` searches for as the word `as`: a pattern starting with a
lookbehind is tried at every position (on torchvision's package, 84 ms against 9)."""


def _renamed_in(text: str) -> set[str]:
    """`set(_RENAMED.findall(text))`, trying `_RENAMED` only before each `_AS`: where a match
    of it would start (the word before the blanks before `as`), from where the last one ended."""
    names: set[str] = set()
    done = at = 0
    while (tail := _AS.search(text, at)) is not None:
        end = tail.start()
        while end > done and (text[end - 1].isspace() or text[end - 1] == "\\"):
            end -= 1
        start = word_start(text, end, done)
        found = _RENAMED.match(text, start) if start < end < tail.start() else None
        if found is None:
            at = tail.start() + 1
        else:
            names.add(found.group(1))
            done = at = found.end()
    return names


@functools.lru_cache(maxsize=8)
def _renamed(top: Path | None) -> dict[str, tuple[Path, ...]]:
    """Name -> the files under `top` whose text holds `<name> as <alias>`, read once a
    process."""
    found: dict[str, list[Path]] = {}
    for path in _files(top):
        for name in _renamed_in(_read(path)):
            found.setdefault(name, []).append(path)
    return {name: tuple(paths) for name, paths in found.items()}


def _files(top: Path | None) -> list[Path]:
    """The Python files under `top`, in a fixed order."""
    files: list[Path] = []
    for folder, subfolders, names in os.walk(top) if top else ():
        subfolders[:] = sorted(d for d in subfolders if d not in _SKIPPED and d[:1] != ".")
        files += [Path(folder, file) for file in sorted(n for n in names if n.endswith(".py"))]
    return files


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


_LINE = re.compile(r"\n(( *+)(?:(?:async +)?(def|class) +(\w+)|(?!#)(?=[^\n]*\())[^\n]*)")
"""A line (after its line break): a `def` or `class` line (kind, name), or another line holding
`(` that is no comment. The lines that count are among them; the others (blank, comment, no
call) change nothing. Starting with a line break, the pattern is searched for as a character
(one starting with `^` is tried at every position)."""
_TWIN_DOC = TWIN_DOC.split("`")[-1]
"""The tail of a twin class's docstring: calls in the twins `fix` adds do not count."""


def _calls_in_methods(path: Path) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    """The names called on the lines of method bodies, found from the text by indentation:
    a line counts when the nearest `def` or `class` line above it that is indented less is a
    `def` directly in a class that is no twin (and sets nothing up): the names called alone
    (`name(...)`), and the (`q`, name) of their calls `q.name(...)` (`self.name_<n>(...)` as
    `self.name(...)`)."""
    return _calls_by_body(path)[0]


_Calls = tuple[frozenset[str], frozenset[tuple[str, str]]]
"""The names called alone, and the (`q`, name) of the calls `q.name(...)`, on some lines."""


def _calls_by_body(path: Path) -> tuple[_Calls, dict[str, _Calls]]:
    """(`_calls_in_methods`, module-level function name -> the calls on the lines of its body,
    those of functions nested in it aside)."""
    lines_of: dict[str | None, list[str]] = {None: []}
    headers: list[tuple[int, bool | None, str | None]] = []
    """The `def` and `class` lines above the line at hand, outermost first: (indent, whether
    the lines of its body count; None for a class, whose own `def`s may; the name of a
    module-level function, whose lines are listed apart)."""
    text = "\n" + _read(path)
    for line in _LINE.finditer(text):
        spaces, kind, name = line.group(2, 3, 4)
        indent = len(spaces)
        if kind:
            while headers and headers[-1][0] >= indent:
                headers.pop()
            in_class = bool(headers) and headers[-1][1] is None
            if kind == "class":
                twin = _TWIN_DOC in _two_lines_after(text, line.end())
                headers.append((indent, False if twin else None, None))
            else:
                top = name if not headers else None
                headers.append((indent, in_class and not _sets_up(name), top))
                if top:
                    lines_of.setdefault(top, [])
            continue
        for at, counts, top in reversed(headers):  # the innermost header indented less
            if at < indent:
                if counts or top:
                    lines_of[None if counts else top].append(line.group(1))
                break
    calls = {key: _calls_on(lines) for key, lines in lines_of.items()}
    return calls.pop(None), {key: value for key, value in calls.items() if key}


def _calls_on(counted: list[str]) -> _Calls:
    """The calls on `counted` lines that may pass a first argument (`_takes`)."""
    lines = "\n".join(counted)  # one search of the lines that count, never read across
    calls = [found for found in set(_CALL_IN_LINE.findall(lines)) if _takes(*found[2:])]
    direct = frozenset(c for q, c, *_ in calls if not q)
    return direct, frozenset(
        (q, _SUFFIX.sub("", c) if q == "self" else c) for q, c, *_ in calls if q
    )


def _two_lines_after(text: str, end: int) -> str:
    """The two lines after the line ending at `end`, joined without their line breaks."""
    if end >= len(text):
        return ""
    second = text.find("\n", end + 1)
    if second == -1:
        return text[end + 1 :]
    third = text.find("\n", second + 1)
    return text[end + 1 : second] + text[second + 1 : third if third != -1 else len(text)]


def _takes(start: str, rest: str) -> bool:
    """Whether a call whose arguments start with `start` + `rest` may pass a first argument (the
    line ending after `(` may)."""
    keyword = rest.endswith("=") and not rest.endswith("==")
    return start not in (")", "*") and not (start.isidentifier() and keyword)


def _sets_up(method: str) -> bool:
    """A method that initialises the module rather than runs it."""
    return "init" in method or "reset" in method
