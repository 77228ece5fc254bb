"""Resolve names in a module to qualified names by following its imports and aliases.

`F.relu`, `torch.nn.functional.relu` and `from torch.nn.functional import relu as r; r` all
resolve to `torch.nn.functional.relu`. A name that the module (or the function at hand) binds to
anything other than an import resolves to nothing, so a local `def relu` is never mistaken for
torch's.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field
from typing import Collection, Iterable

from migrator.rewrite.walk import all_nodes, child_nodes


@dataclass
class ModuleNames:
    """Module-level bindings of one source file."""

    module: str
    """Qualified name of the module itself (`pkg.models.resnet`), or '' when unknown."""
    is_package: bool = False
    imports: dict[str, str] = field(default_factory=dict)
    """Local name -> qualified name, for names bound only by imports."""
    local: set[str] = field(default_factory=set)
    """Names bound by anything else at module level (def, class, assignment)."""
    constants: dict[str, ast.expr] = field(default_factory=dict)
    """Module-level names assigned exactly once, to a literal."""
    patched: dict[str, int] = field(default_factory=dict)
    """Qualified names of attributes of imports (or of module-level aliases of them) that the
    file's code assigns, anywhere, with the line of the first store seen
    (`torch.backends.cudnn.benchmark = True`, `F.relu = f`, `torch.Tensor.relu = f` in a
    function, `setattr(F, "gelu", f)`; `setattr(F, name, f)`: `F` itself): they, and what is
    under them, resolve to nothing (`resolve`); the import itself still resolves."""
    stars: list[str] = field(default_factory=list)
    """Modules imported with `from <module> import *`."""
    dotted: set[str] = field(default_factory=set)
    """Modules imported whole by `import a.b.c` (binding `a`, through which `a.b.c` reaches
    them)."""
    unknown: set[str] = field(default_factory=set)
    """Module-level names an assignment may bind to a tensor (`_TABLE = torch.arange(4)`):
    a value other than literals, strings, containers and arithmetic of them, or a name or
    subscript of such a name; also names imported from the module's own package (`from
    .tables import TABLE`, `from . import tables`), whose file may build one."""

    def absolute(self, level: int, module: str | None) -> str:
        """The absolute module named by a (possibly relative) `from` import."""
        if level == 0:
            return module or ""
        parts = self.module.split(".") if self.module else []
        drop = level - 1 if self.is_package else level
        base = parts[: len(parts) - drop] if drop <= len(parts) else []
        return ".".join(base + ([module] if module else []))

    def resolve(
        self,
        node: ast.expr,
        shadowed: frozenset[str] | set[str] = frozenset(),
        patched: bool = False,
    ) -> str | None:
        """Qualified name of `node` (a Name or dotted Attribute chain), or None; with
        `patched`, also a name the file assigns (`patch_among` then names the store)."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in shadowed:
            return None
        if node.id in self.imports:
            base = self.imports[node.id]
        elif node.id in self.local and self.module:
            base = f"{self.module}.{node.id}"
        else:
            return None
        found = ".".join([base, *reversed(parts)]) if parts else base
        if (
            not patched
            and self.patched  # most files patch none: no generator to make
            and any(found == p or found.startswith(p + ".") for p in self.patched)
        ):
            return None
        return found

    def alias_for(self, qualname: str) -> str | None:
        """The shortest local spelling of `qualname` through existing imports (`nn.ReLU`)."""
        best: str | None = None
        for local, target in self.imports.items():
            if qualname == target or qualname.startswith(target + "."):
                spelled = local + qualname[len(target) :]
                if best is None or len(spelled) < len(best):
                    best = spelled
        return best

    def is_free(self, name: str) -> bool:
        return name not in self.imports and name not in self.local


def patch_among(patched: dict[str, int], spellings: Iterable[str]) -> tuple[str, int] | None:
    """(name, line) of the first store of `patched` (`ModuleNames.patched`) into one of
    `spellings` (the names torch reaches an op by: `catalog.spellings`), into what holds one
    (`torch.Tensor` given `setattr(torch.Tensor, name, f)`) or into what is under one
    (`torch.nn.ReLU.forward`); None when there is none."""
    for name, line in patched.items():
        if any(
            s == name or s.startswith(name + ".") or name.startswith(s + ".") for s in spellings
        ):
            return name, line
    return None


def literal(node: ast.expr) -> bool:
    """Whether `node` is a literal: a constant, a signed number, or a tuple/list of literals."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return literal(node.operand)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(literal(e) for e in node.elts)
    return False


def collect(
    tree: ast.Module,
    module: str = "",
    is_package: bool = False,
    text: str | None = None,
    stored_elsewhere: Collection[str] = (),
) -> ModuleNames:
    """Module-level imports, other bindings and literal constants of `tree`.

    Imports anywhere at module level count, including inside `if`/`try` blocks; a name bound
    both by an import and by something else is treated as unknown, and so is one a function
    declares `global` (it may bind it to anything; functions are walked only when `text`, the
    source, may hold such a statement), or that a `globals()` call may bind (every name assigned
    at module level when it may bind any: `_stored_through_globals`), or that other files may
    store into through the module, `stored_elsewhere` (`layers._SLOPE = 0.5`: `constant_stored_elsewhere`).
    """
    names = ModuleNames(module, is_package)
    assigned: dict[str, list[ast.expr | None]] = {}
    dotted: list[ast.Attribute | ast.Name] = []

    _visit(tree.body, names, assigned, dotted)
    aliases = {root: _alias(names, assigned.get(root, [])) for root, _ in map(_dotted, dotted)}
    for target in dotted:  # `torch.backends.cudnn.benchmark = True` leaves `torch` torch's
        root, spelled = _dotted(target)
        if root in names.imports and root not in assigned:
            _patch(names, names.imports[root] + spelled, target)
            continue
        if (alias := aliases[root]) is not None:  # `T = torch.Tensor; T.relu = f`
            _patch(names, alias + spelled, target)
        assigned.setdefault(root, []).append(None)
    torch_names = {
        n for n, q in names.imports.items() if q.split(".")[0] == "torch" and n not in assigned
    }
    if torch_names and _may_patch_in_functions(text, torch_names):
        _patches_in_functions(tree, names, torch_names)
    if may_declare_global(text):  # also in a function defined in an `if`, `try` or `with`
        for node in all_nodes(tree):
            if isinstance(node, ast.Global):
                for name in node.names:
                    assigned.setdefault(name, []).append(None)
    if text is None or _may_store_through_globals(text):
        stored = _stored_through_globals(tree)
        for name in list(assigned) if stored is None else stored:
            assigned.setdefault(name, []).append(None)
    for name in stored_elsewhere:
        if name in assigned:
            assigned[name].append(None)
    for name, values in assigned.items():
        names.local.add(name)
        if len(values) == 1 and values[0] is not None and literal(values[0]):
            names.constants[name] = values[0]
    for name in names.local & set(names.imports):
        del names.imports[name]
    names.unknown |= {n for n, values in assigned.items() if not all(map(_holds_none, values))}
    reads = {n: _reads(values) for n, values in assigned.items() if n not in names.unknown}
    while grown := {n for n, read in reads.items() if any(r in names.unknown for r in read)}:
        names.unknown |= grown
        for name in grown:
            del reads[name]
    return names


class StarredUnknown(set[str]):
    """`ModuleNames.unknown` of a file importing `*` from its own package, whose file may build
    a tensor: it also holds every name the file neither binds nor imports by name, nor Python
    does (`trees/star_imported_tensor`)."""

    names: ModuleNames | None = None

    def __contains__(self, key: object) -> bool:
        names = self.names
        return super().__contains__(key) or (
            names is not None
            and isinstance(key, str)
            and key not in names.local
            and key not in names.imports
            and not hasattr(builtins, key)
        )


def may_declare_global(text: str | None) -> bool:
    """Whether a source (None: unknown) may hold a `global` statement: the word starts a line,
    or follows `;` or `:` (`if c: global g`), but for spaces, tabs and form feeds; `global_pool`
    is not one."""
    if text is None:
        return True
    for match in _GLOBAL.finditer(text):
        start = match.start()
        before = text[text.rfind("\n", 0, start) + 1 : start].rstrip(" \t\f")
        if not before or before[-1] in ";:":
            return True
    return False


_GLOBAL = re.compile(r"global\b")
"""The word `global` (a pattern starting with a word is searched for as that word; one starting
with `^` or a character class is tried at every position: 20 to 130 times slower on timm and
torchvision)."""


_GLOBALS = re.compile(r"globals\b|sys\.modules\b")
"""The word `globals` or `sys.modules`, which a source that may call `globals()` or store into
`sys.modules[__name__]` holds."""


def _may_store_through_globals(text: str) -> bool:
    """Whether `text` holds `_GLOBALS`, searched for only after its words are found: a pattern
    of alternatives is tried at every position (14 ms against 2 over torchvision's files)."""
    return ("globals" in text or "sys.modules" in text) and _GLOBALS.search(text) is not None


_GLOBALS_READS = frozenset(
    {"get", "keys", "values", "items", "copy", "__contains__", "__getitem__"}
)
"""Methods of the dict `globals()` returns that change nothing."""


def _stored_through_globals(tree: ast.Module) -> set[str] | None:
    """The module-level names a `globals()` call of `tree` may bind (`globals()["_SLOPE"] =
    slope`), or a store into `sys.modules[__name__]` (`.<name> = `, `setattr(..., "<name>",
    ...)`); None when one may bind any name (a computed key, `globals().update(...)`, either
    handed on). Reads (`globals()["_EPS"]`, `.get(...)`, `in globals()`) bind nothing."""
    nodes = all_nodes(tree)
    if not any(map(_globals_or_own_module, nodes)):
        return set()  # the words only (`globals` in a comment): no need for the parents
    parents = {id(c): node for node in nodes for c in child_nodes(node)}
    stored: set[str] = set()
    for node in nodes:
        if _own_module(node):
            parent = parents.get(id(node))
            if isinstance(parent, ast.Attribute) and parent.attr != "__dict__":
                if not isinstance(parent.ctx, ast.Load):
                    stored.add(parent.attr)
                continue
            key = parent.args[1] if isinstance(parent, ast.Call) and parent.args[1:] else None
            if not (
                isinstance(parent, ast.Call)
                and isinstance(parent.func, ast.Name)
                and parent.func.id in ("setattr", "delattr", "getattr", "hasattr")
                and parent.args[0] is node
                and isinstance(key, ast.Constant)
                and isinstance(key.value, str)
            ):
                return None
            if parent.func.id in ("setattr", "delattr"):
                stored.add(key.value)
            continue
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "globals"
        ):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Subscript) and parent.value is node:
            key = parent.slice
            if isinstance(parent.ctx, ast.Load):
                continue
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            stored.add(key.value)
        elif isinstance(parent, ast.Attribute) and parent.attr in _GLOBALS_READS:
            call = parents.get(id(parent))
            if not (isinstance(call, ast.Call) and call.func is parent):
                return None
        elif not (isinstance(parent, ast.Compare) and node in parent.comparators):
            return None
    return stored


def _globals_or_own_module(node: ast.AST) -> bool:
    """Whether `node` is a call of `globals` or `sys.modules[__name__]`."""
    return _own_module(node) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals"
    )


def _own_module(node: ast.AST) -> bool:
    """Whether `node` is `sys.modules[__name__]`."""
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "modules"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "sys"
        and isinstance(node.slice, ast.Name)
        and node.slice.id == "__name__"
    )


def _holds_none(value: ast.expr | None) -> bool:
    """Whether a module-level value holds no tensor but through the names it reads
    (`_reads`): literals, strings, containers and arithmetic of them, a function."""
    if value is None:
        return False
    if isinstance(value, (ast.Constant, ast.JoinedStr, ast.Name, ast.Lambda, ast.Subscript)):
        return True
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return all(_holds_none(e) for e in value.elts)
    if isinstance(value, ast.Dict):
        return all(k is not None and _holds_none(k) for k in value.keys) and all(
            _holds_none(v) for v in value.values
        )
    if isinstance(value, ast.BinOp):
        return _holds_none(value.left) and _holds_none(value.right)
    if isinstance(value, ast.UnaryOp):
        return _holds_none(value.operand)
    return False


def _reads(values: list[ast.expr | None]) -> set[str]:
    """The names `values` read (outside a lambda's body)."""
    return {
        n.id
        for value in values
        if value is not None and not isinstance(value, ast.Lambda)
        for n in ast.walk(value)
        if isinstance(n, ast.Name)
    }


_TENSOR_BASES = ("torch._C.TensorBase", "torch._C._TensorBase")
"""Where torch defines `torch.Tensor`'s methods: a store there is one into `torch.Tensor`."""


def _patch(names: ModuleNames, qualname: str, store: ast.AST) -> None:
    """Record a store into `qualname` at `store`'s line (`ModuleNames.patched`)."""
    for base in _TENSOR_BASES:
        if qualname == base or qualname.startswith(base + "."):
            qualname = "torch.Tensor" + qualname[len(base) :]
    names.patched.setdefault(qualname, getattr(store, "lineno", 0))


def _alias(names: ModuleNames, values: list[ast.expr | None]) -> str | None:
    """What a module-level name assigned once to a dotted name of an import names
    (`T = torch.Tensor`), or None."""
    value = values[0] if len(values) == 1 else None
    if not isinstance(value, (ast.Attribute, ast.Name)) or not _is_dotted(value):
        return None
    root, spelled = _dotted(value)
    return names.imports[root] + spelled if root in names.imports else None


_DOTTED_STORE_TAIL = re.compile(r"(?:\.\w+)+[^\S\n]*(?:[-+*/@%&|^]|//|\*\*|<<|>>)?=(?!=)")
"""`.b = `, `.b.c += ` (after a name, `_may_patch_in_functions`)."""
_SETATTR_OWNER = re.compile(r"\s*([A-Za-z_]\w*)")
"""The name a `setattr(` call's first argument starts with."""


def _may_patch_in_functions(text: str | None, torch_names: Collection[str]) -> bool:
    """Whether a source (None: unknown) may store into an attribute of torch in a function or
    class body: it assigns an attribute of one of `torch_names`, or calls `setattr` on one."""
    if text is None:
        return True
    at = text.find("setattr(")
    while at != -1:
        owner = _SETATTR_OWNER.match(text, at + len("setattr("))
        if owner and owner.group(1) in torch_names:
            return True
        at = text.find("setattr(", at + 1)
    for name in torch_names:
        at = text.find(name + ".")
        while at != -1:
            before = text[at - 1] if at else "\n"
            alone = not (before.isalnum() or before in "_.")
            if (
                alone
                and _DOTTED_STORE_TAIL.match(text, at + len(name))
                and not _annotation(text, at)
            ):
                return True
            at = text.find(name + ".", at + 1)
    return False


def _annotation(text: str, at: int) -> bool:
    """Whether the name at `at` follows a `:` that no block statement on its line ends: an
    annotation (`dtype: torch.dtype = x`), not `if c: torch.relu = f`."""
    before = text[text.rfind("\n", 0, at) + 1 : at].rstrip()
    return before.endswith(":") and not before.lstrip().startswith(_BLOCK_WORDS)


_BLOCK_WORDS = ("if", "elif", "else", "for", "while", "with", "try", "except", "finally")


def _patches_in_functions(tree: ast.Module, names: ModuleNames, torch_names: set[str]) -> None:
    """Stores into attributes of torch (imported as one of `torch_names`) anywhere in the file
    (`def install(): torch.Tensor.relu = f`, `setattr(F, "gelu", f)` in a method):
    `ModuleNames.patched`. Names a function binds are not told apart: a store into an
    attribute of a local `F` counts too."""
    stored: list[ast.Attribute | ast.Name] = []
    for node in all_nodes(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_dotted(node):
            stored.append(node)
        elif isinstance(node, ast.Call):
            _setattr(node, stored)
    for target in stored:
        root, spelled = _dotted(target)
        if root in torch_names:
            _patch(names, names.imports[root] + spelled, target)


def _dotted(node: ast.Attribute | ast.Name) -> tuple[str, str]:
    """(`a`, `.b.c`) of `a.b.c` (a dotted name: `_visit` made sure)."""
    parts: list[str] = []
    value: ast.expr = node
    while isinstance(value, ast.Attribute):
        parts.append(value.attr)
        value = value.value
    assert isinstance(value, ast.Name)
    return value.id, "".join(f".{p}" for p in reversed(parts))


def _is_dotted(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _visit(
    body: list[ast.stmt],
    names: ModuleNames,
    assigned: dict[str, list[ast.expr | None]],
    stored: list[ast.Attribute | ast.Name],
) -> None:
    """`collect`'s walk of one block of module-level statements; `stored`: the dotted names
    assigned (`a.b = v`)."""
    for stmt in body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    names.imports[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names.imports[top] = top
                    names.dotted.add(alias.name)
                if names.module and alias.name.split(".")[0] == names.module.split(".")[0]:
                    names.unknown.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(stmt, ast.ImportFrom):
            base = names.absolute(stmt.level, stmt.module)
            own = stmt.level > 0 or (
                bool(names.module) and base.split(".")[0] == names.module.split(".")[0]
            )
            for alias in stmt.names:
                if own and alias.name != "*":
                    names.unknown.add(alias.asname or alias.name)
                if alias.name == "*":
                    names.stars.append(base)
                    if own and not isinstance(names.unknown, StarredUnknown):
                        names.unknown = StarredUnknown(names.unknown)
                        names.unknown.names = names
                else:
                    names.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.local.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = None if isinstance(stmt, ast.AugAssign) else stmt.value
            for target in targets:
                if isinstance(target, ast.Attribute) and _is_dotted(target):
                    stored.append(target)
                    continue
                for node in all_nodes(target):
                    if isinstance(node, ast.Name):
                        assigned.setdefault(node.id, []).append(
                            value if isinstance(target, ast.Name) else None
                        )
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            _setattr(stmt.value, stored)
        elif isinstance(stmt, (ast.If, ast.Try, ast.With)):
            for part in ("body", "orelse", "finalbody"):
                _visit(getattr(stmt, part, []), names, assigned, stored)
            for handler in getattr(stmt, "handlers", []):
                _visit(handler.body, names, assigned, stored)
        elif isinstance(stmt, (ast.For, ast.While)):
            for node in all_nodes(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    assigned.setdefault(node.id, []).append(None)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    if _is_dotted(node):
                        stored.append(node)
                elif isinstance(node, ast.Call):
                    _setattr(node, stored)


def _setattr(call: ast.Call, stored: list[ast.Attribute | ast.Name]) -> None:
    """`setattr(F, "gelu", f)` read as `F.gelu = f` (`_visit`); given a name not written out,
    as a store into any attribute of `F` (`F` itself stored)."""
    if not (
        isinstance(call.func, ast.Name)
        and call.func.id == "setattr"
        and len(call.args) == 3
        and _is_dotted(call.args[0])
    ):
        return
    owner, name = call.args[0], call.args[1]
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        stored.append(ast.copy_location(ast.Attribute(owner, name.value, ast.Store()), call))
    elif isinstance(owner, (ast.Attribute, ast.Name)):
        stored.append(owner)


def parameter_defaults(args: ast.arguments) -> dict[str, ast.expr]:
    """Parameter name -> its default, for the parameters that have one."""
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    defaults = dict(zip(reversed(positional), reversed(args.defaults)))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return defaults


def function_locals(
    func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
    nodes: Iterable[ast.AST] | None = None,
) -> set[str]:
    """Names a function binds itself (parameters, assignments, imports, nested defs).
    `nodes`: the nodes below `func` (those of `BINDERS` suffice), when the caller has them
    already."""
    args = func.args
    bound = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    bound |= {a.arg for a in (args.vararg, args.kwarg) if a}
    for node in nodes if nodes is not None else ast.walk(func):
        if type(node) not in BINDERS or node is func:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound


BINDERS = frozenset(
    {ast.Name, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom}
    | {ast.arg}
)
"""The node classes `function_locals` reads a bound name from."""
