"""Stores into `self` attributes: every place a class's methods may change what `self.<attr>`
holds or something reachable from it. One finder for every decision that a value stays as
`__init__` left it (splits of reused modules, hyper-parameters, settings, in-place proofs)."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Iterable
from typing import NamedTuple, cast

from migrator.rewrite.facts import class_fact
from migrator.rewrite.family import Family
from migrator.rewrite.project import ClassInfo
from migrator.rewrite.walk import all_nodes, of_kinds


class Store(NamedTuple):
    """One store into `self.<attr>` (attr None: a name known only at run time, any of them)."""

    attr: str | None
    kind: str
    """"bound" (the attribute itself assigned or deleted), "inner" (something of it:
    `self.drop.p = p`, `self.pad[0] = 1`) or "called" (a method called on it or on something of
    it that may change it: `self.act.register_forward_hook(fn)`, `self.sizes.append(n)`)."""
    part: str | None
    """For "inner" and "called": the attribute of `self.<attr>` the store goes through (`p` of
    `self.drop.p = p`; None: the attribute itself, an item, or a name known only at run
    time)."""
    call: str | None
    """For "called": the method called."""
    method: str
    line: int
    column: int
    deletes: bool
    """`del self.x`, `delattr(self, "x")`, `self.__delattr__("x")`: afterwards reading the
    attribute fails, in the original as in the migrated model."""
    plain: bool
    """A plain assignment `self.<attr> = value` (or annotated with a value): what
    `ClassAttributes` records of `__init__`."""
    prefix: str = ""
    """For attr None: how every name it may store into starts (`setattr(self, f"pos{i}", v)`)."""
    modules_only: bool = False
    """Only a module, a parameter or a buffer can be bound so (`self.add_module(name, m)` raises
    on a name that holds anything else): no plain value changes."""

    def describe(self, cls: ClassInfo) -> str:
        """What the store does and where, for a finding: "`Sub.__init__` stores into
        `self.act.inplace` (line 12)"."""
        shown = f"self.{self.attr}"
        if self.attr is None:
            what = "sets `self` attributes by a name known only at run time"
        elif self.kind == "bound":
            what = f"{'deletes' if self.deletes else 'assigns'} `{shown}`"
        elif self.kind == "called":
            what = f"calls `{shown}{'.' + self.part if self.part else ''}.{self.call}(...)`"
        else:
            what = f"stores into `{shown}{'.' + self.part if self.part else ''}`"
        return f"`{cls.name}.{self.method}` {what} (line {self.line})"


READS = frozenset(
    (
        "forward",
        "parameters",
        "named_parameters",
        "buffers",
        "named_buffers",
        "children",
        "named_children",
        "modules",
        "named_modules",
        "state_dict",
        "extra_repr",
        "size",
        "dim",
        "numel",
        "item",
        "tolist",
        "keys",
        "values",
        "items",
        "get",
        "index",
        "count",
        "copy",
        "startswith",
        "endswith",
        "format",
        "lower",
        "upper",
        "strip",
        "split",
        "join",
        "replace",
    )
)
"""Methods whose call changes nothing of what they are called on."""

_SETTERS = frozenset({"setattr", "delattr"})
_SELF_SETTERS = frozenset(
    {
        "__setattr__",
        "__delattr__",
        "add_module",
        "register_module",
        "register_buffer",
        "register_parameter",
    }
)
"""Methods of `self` binding the attribute their first argument names."""


def stores_of(cls: ClassInfo, attr: str) -> list[Store]:
    """The stores of `cls`'s methods that may touch `self.<attr>` (also those into a name known
    only at run time), in source order."""
    kept = class_fact("stores", cls, lambda: class_stores(cls.node))
    return [s for s in kept if s.attr == attr or (s.attr is None and attr.startswith(s.prefix))]


def first_change(
    classes: Iterable[ClassInfo], attr: str, counts: Callable[[Store], bool] | None = None
) -> str | None:
    """Where a method of `classes` may change `self.<attr>`, described for a finding (None:
    nowhere): its first store that `counts` (every one when not given), but a call of a method
    of `READS`, which changes nothing. torch's own classes are not read: their methods set what
    the code calling them asks for (`nn.Sequential.__setitem__`)."""
    for cls in classes:
        if cls.qualname.startswith("torch."):
            continue
        for store in stores_of(cls, attr):
            if store.kind == "called" and store.call in READS:
                continue
            if counts is None or counts(store):
                return store.describe(cls)
    return None


def changed_after_init(
    family: Family,
    cls: ClassInfo,
    attr: str,
    counts: Callable[[Store], bool] | None = None,
    outside: bool = True,
) -> str | None:
    """Where something may change what `cls`'s `__init__` assigned to `self.<attr>` (None:
    nowhere), described for a finding: a store that `counts` (every one when not given) into
    it or into something of it in `cls` (but the plain assignments its `__init__` makes, which
    `ClassAttributes` counts), in a method of a base other than its `__init__` (which runs
    before), in a subclass (in this file or the package), or, with `outside`, by the code of
    `cls`'s file outside it (`changed_outside`)."""
    keep = counts or (lambda store: True)

    def work_out() -> str | None:
        return (
            first_change([cls], attr, lambda s: beside_init_plain(s) and keep(s))
            or first_change(family.ancestors(cls), attr, lambda s: after_init(s) and keep(s))
            or first_change(subclasses_below(family, cls), attr, keep)
            or (changed_outside(cls, attr) if outside else None)
        )

    what = f"changed {attr} {getattr(counts, '__name__', '')} {outside}"
    return family.kept(what, cls, work_out)


def changed_outside(cls: ClassInfo, attr: str) -> str | None:
    """Where code of `cls`'s file stores through an attribute named `attr` of an object that
    may be an instance of `cls` (None: nowhere), described for a finding: a model-building
    function's `model.head.act.inplace = False` or `model.drop_rate = 0`, another class's
    `self.block.act = nn.GELU()`. Told by the name alone; a name known only at run time
    (`setattr(model, name, m)`) is not read."""
    if cls.qualname.startswith("torch."):
        return None
    file = cls.file
    text = file.source if file.source is not None else file.text
    if file.path is None or text is None:
        names = _outside_names(file.tree)
    else:  # kept a process by the file's path and text
        kept = _OUTSIDE_KEPT.get(str(file.path))
        if kept is None or kept[0] != text:
            kept = _OUTSIDE_KEPT[str(file.path)] = (text, _outside_names(file.tree))
        names = kept[1]
    found = names.get(attr)
    if found is None:
        return None
    where, line = found
    return f"{where} stores through an attribute `{attr}` of another object (line {line})"


def _outside_names(tree: ast.Module) -> dict[str, tuple[str, int]]:
    """Attribute name -> (where, line) of the first store of the file whose target goes
    through an attribute of that name on an object other than `self` (all of
    `model.head.act.inplace`; `act` and `inplace` of `self.head.act.inplace`, where `head` is
    the class's own), or that `setattr(obj, "name", ...)` names."""
    found: dict[str, tuple[str, int]] = {}
    for top in tree.body:
        scopes = [("module-level code", [top, *_statements(top)])]
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scopes = [(f"`{top.name}`", _statements(top))]
        elif isinstance(top, ast.ClassDef):
            scopes = [
                (f"`{top.name}.{m.name}`", _statements(m))
                for m in top.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
        for where, statements in scopes:
            for stmt in statements:
                for node in _targets(stmt):
                    for name in _foreign_names(node):
                        found.setdefault(name, (where, stmt.lineno))
    return found


def _statements(scope: ast.AST) -> list[ast.stmt]:
    """The statements below `scope`, nested ones included (not those of lambdas)."""
    found: list[ast.stmt] = []
    todo = [scope]
    while todo:
        node = todo.pop()
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, field, ()):
                if isinstance(child, ast.stmt):
                    found.append(child)
                todo.append(child)
    return found


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    """What a statement stores into (targets of every store form, each item of a tuple or
    list target), or the `setattr` call it is."""
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Delete):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return [stmt.value]
    else:
        return []
    found: list[ast.expr] = []
    while targets:
        target = targets.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            targets += target.elts
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
        else:
            found.append(target)
    return found


def _foreign_names(node: ast.AST) -> list[str]:
    """The attribute names a store goes through on objects other than `self` (see
    `_outside_names`)."""
    if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
        target: ast.expr = node
        extra: list[str] = []
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _SETTERS
        and len(node.args) >= 2
        and not _is_self(node.args[0])
        and (name := _literal(node.args[1])) is not None
    ):
        target, extra = node.args[0], [name]
    else:
        return []
    names: list[str] = []
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        if isinstance(target, ast.Attribute):
            if _is_self(target.value):
                break  # the class's own attribute: its stores are `class_stores`'
            names.append(target.attr)
        target = target.value
    return names + extra


def plain_value(store: Store) -> bool:
    """A store that may change an attribute holding a plain value (not `add_module`'s)."""
    return not store.modules_only


def subclasses_below(family: Family, cls: ClassInfo) -> list[ClassInfo]:
    """The subclasses of `cls`, in this file or the package."""
    below = family.subclasses_elsewhere(cls)
    todo = [cls, *below]
    while todo:
        for sub in family.subclasses_in_file(todo.pop()):
            if sub not in below:
                below.append(sub)
                todo.append(sub)
    return below


def after_init(store: Store) -> bool:
    """A store a method other than `__init__` makes."""
    return store.method != "__init__"


def beside_init_plain(store: Store) -> bool:
    """A store other than a plain assignment in `__init__` (which `ClassAttributes` judges)."""
    return not (store.plain and store.method == "__init__")


def class_stores(node: ast.ClassDef) -> tuple[Store, ...]:
    """Every store into a `self` attribute in the methods of a class statement (kept while the
    statement lives)."""
    kept = _CLASS_STORES.get(node)
    if kept is None:
        found: list[Store] = []
        for method in node.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += _method_stores(method)
        kept = _CLASS_STORES[node] = tuple(found)
    return kept


_CLASS_STORES: weakref.WeakKeyDictionary[ast.ClassDef, tuple[Store, ...]] = (
    weakref.WeakKeyDictionary()
)
_OUTSIDE_KEPT: dict[str, tuple[str, dict[str, tuple[str, int]]]] = {}
"""Path -> (the file's text, its `_outside_names`)."""


def _method_stores(method: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Store]:
    name = method.name
    head = [*method.decorator_list, method.args, *([method.returns] if method.returns else [])]
    # every node of the method `_STORING` holds, parents first (so an assignment before its
    # targets); the body's from the walk the analysis keeps
    nodes: list[ast.AST] = [method]
    for header in head:
        nodes += all_nodes(header)
    nodes += [v.node for v in of_kinds(method, _STORING)]
    plain: set[int] = set()
    loops: list[dict[str, tuple[str, ...]]] = []

    def loop_names() -> dict[str, tuple[str, ...]]:  # worked out when a setter needs them
        if not loops:
            loops.append(_loop_names(method, [v.node for v in of_kinds(method, _LOOP_NAMES)]))
        return loops[0]

    named = [  # `name = value`: what a name stands for
        n
        for n in nodes
        if type(n) is ast.Assign and len(n.targets) == 1 and type(n.targets[0]) is ast.Name
    ]
    aliases = _aliases(named)
    views = _views(named)
    found: list[Store] = []
    for node in nodes:
        kind = type(node)
        if kind not in _STORING:
            continue
        if isinstance(node, ast.Assign):
            plain.update(map(id, node.targets))
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                plain.add(id(node.target))
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.target, ast.Name):  # `blocks += [...]` after `blocks = self.blocks`
                at = _at(node.target)
                found += [
                    Store(a, "called", None, "__iadd__", name, *at, False)
                    for a in aliases.get(node.target.id, ())
                ]
        elif isinstance(node, ast.Call):
            if type(node.func) is ast.Attribute or type(node.func) is ast.Name:
                found += _call_stores(node, name, loop_names, aliases)
                for func in _through_views(node.func, views):
                    seen = ast.copy_location(ast.Call(func, node.args, node.keywords), node)
                    found += _call_stores(seen, name, loop_names, aliases)
        elif type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
            target = cast(ast.expr, node)
            targets = [target, *_through_views(target, views)]
            for attr, part, whole in (r for t in targets for r in _roots(t, aliases)):
                is_plain = id(node) in plain and _is_self(getattr(node, "value", None))
                how = "bound" if whole else "inner"
                found.append(Store(attr, how, part, None, name, *_at(node), is_plain))  # type: ignore[arg-type]
    found.sort(key=lambda s: (s.line, s.column))
    return found


_STORING = frozenset(
    {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Call, ast.Attribute, ast.Subscript}
)
"""The node classes `_method_stores` reads."""
_LOOP_NAMES = frozenset({ast.Assign, ast.For, ast.AsyncFor})
"""The node classes `_loop_names` reads."""


def _loop_names(
    method: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST]
) -> dict[str, tuple[str, ...]]:
    """Loop variables of `method` (whose nodes of `_LOOP_NAMES` are given) that take string
    literals only: `for n in ("fc", "head")`, also through a local name bound once to such a
    tuple and sliced (`for n in names[i:]`)."""
    literals: dict[str, tuple[str, ...] | None] = {
        a.arg: None for a in ast.walk(method.args) if isinstance(a, ast.arg)
    }
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and _sliced(node.value) == target.id:
                continue  # `names = names[i:]` keeps fewer of the same strings
            if isinstance(target, ast.Name):
                found = _strings(node.value)
                literals[target.id] = None if target.id in literals else found
    loops: dict[str, tuple[str, ...] | None] = {}
    for node in nodes:
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name):
            items, sliced = node.iter, _sliced(node.iter)
            found = literals.get(sliced) if sliced else _strings(items)
            if found is None and isinstance(items, ast.Name):
                found = literals.get(items.id)
            key = node.target.id
            loops[key] = None if key in loops or key in literals else found
    return {k: v for k, v in loops.items() if v is not None}


def _sliced(node: ast.expr) -> str | None:
    """`x` of `x[i:j]`, a slice of a local name."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Slice)
        and isinstance(node.value, ast.Name)
    ):
        return node.value.id
    return None


def _strings(node: ast.expr) -> tuple[str, ...] | None:
    """The strings of a tuple or list display of string literals (None: anything else)."""
    if not isinstance(node, (ast.Tuple, ast.List)):
        return None
    found = tuple(_literal(e) for e in node.elts)
    return None if None in found else found  # type: ignore[return-value]


def _aliases(named: list[ast.Assign]) -> dict[str, list[str]]:
    """Local names a method binds to a `self` attribute (`m = self.act`), of its assignments
    to one name (`named`): a store through the name is a store into the attribute."""
    found: dict[str, list[str]] = {}
    for node in named:
        if isinstance(node.value, ast.Attribute) and _is_self(node.value.value):
            found.setdefault(cast(ast.Name, node.targets[0]).id, []).append(node.value.attr)
    return found


def _views(named: list[ast.Assign]) -> dict[str, list[ast.expr]]:
    """Local names a method binds to a dict of `self` (`d = vars(self)`, `mods =
    self._modules`, `getattr(self, "_modules")`, `self.__dict__["_modules"]`), of its
    assignments to one name (`named`): a store through the name is a store through that
    dict."""
    found: dict[str, list[ast.expr]] = {}
    for node in named:
        value = dict_of(node.value)
        if value is not node.value or _reaches_dict(value):
            found.setdefault(cast(ast.Name, node.targets[0]).id, []).append(value)
    return found


def _reaches_dict(node: ast.expr) -> bool:
    """Whether `node` is a dict of `self`, or reached through one, by attributes and items
    (`self._modules`, `self.__dict__["_modules"]`)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute) and _is_self(node.value):
            return node.attr in _MODULE_DICTS or node.attr == "__dict__"
        node = dict_of(node.value)
    return False


def _through_views(node: ast.expr, views: dict[str, list[ast.expr]]) -> list[ast.expr]:
    """`node` (an attribute or item chain) with its root name, a name of `views`, replaced by
    each value bound to it."""
    chain: list[ast.Attribute | ast.Subscript] = []
    root = node
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        chain.append(root)
        root = root.value
    if not chain or not isinstance(root, ast.Name) or root.id not in views:
        return []
    found = []
    for value in views[root.id]:
        rebuilt: ast.expr = value
        for link in reversed(chain):
            if isinstance(link, ast.Attribute):
                rebuilt = ast.Attribute(rebuilt, link.attr, link.ctx)
            else:
                rebuilt = ast.Subscript(rebuilt, link.slice, link.ctx)
            ast.copy_location(rebuilt, link)
        found.append(rebuilt)
    return found


def _roots(
    node: ast.expr, aliases: dict[str, list[str]]
) -> list[tuple[str | None, str | None, bool]]:
    """`_root` of a store's target, or (attr, part, False) for each attribute a local name
    stands for (`m.inplace = False` after `m = self.act`)."""
    root = _root(node)
    if root is not None:
        return [root]
    chain = node
    part = None
    while isinstance(chain, (ast.Attribute, ast.Subscript)):
        part = chain.attr if isinstance(chain, ast.Attribute) else None
        chain = chain.value
    if isinstance(chain, ast.Name) and chain is not node:
        return [(attr, part, False) for attr in aliases.get(chain.id, ())]
    return []


def _root(node: ast.expr) -> tuple[str | None, str | None, bool] | None:
    """(attr, part, whole) when `node` is `self.<attr>` or reached from it through attributes
    and items (`self.__dict__[...]`, `getattr(self, name)`: any attribute; an item of
    `self._modules`, `_parameters` or `_buffers`, directly or through `__dict__`: the
    attribute it names); None otherwise."""
    chain: list[ast.expr] = []
    node = dict_of(node)
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        chain.append(node)
        if isinstance(node, ast.Attribute) and _is_self(node.value):
            break
        node = dict_of(node.value)
    else:
        return None
    top = chain[-1]
    assert isinstance(top, ast.Attribute)  # the loop ended on `self.<attr>`
    if top.attr == "__dict__":
        if len(chain) == 1:
            return None, None, True
        below = chain[-2]
        key = below.slice if isinstance(below, ast.Subscript) else None
        attr = _literal(key) if key is not None else None
        if attr in _MODULE_DICTS and len(chain) > 2:
            return _module_dict_item(chain[-3], len(chain) == 3)
        if len(chain) > 2:  # `getattr(self, "act").inplace`
            part = chain[-3].attr if isinstance(chain[-3], ast.Attribute) else None
            return attr, part, False
        return attr, None, True
    if top.attr in _MODULE_DICTS and len(chain) > 1:
        return _module_dict_item(chain[-2], len(chain) == 2)
    if len(chain) == 1:
        return top.attr, None, True
    below = chain[-2]
    part = below.attr if isinstance(below, ast.Attribute) else None
    return top.attr, part, False


_MODULE_DICTS = frozenset({"_modules", "_parameters", "_buffers"})
"""The dicts of an `nn.Module` that hold its submodules, parameters and buffers by name."""


_DICT_SETTERS = frozenset(
    {"update", "__setitem__", "__delitem__", "setdefault", "pop", "popitem", "clear", "__ior__"}
)
"""The methods of a dict that bind or delete its items."""


def _module_dict_item(node: ast.expr, whole: bool) -> tuple[str | None, str | None, bool]:
    """`_root` of an item of one of `_MODULE_DICTS`: the attribute its key names (None: any),
    the part below it and whether it is the item itself."""
    if not isinstance(node, ast.Subscript):
        return None, None, whole  # a method of the dict (`update`, `pop`, ...): any
    return _literal(node.slice), None, whole


def dict_of(node: ast.expr) -> ast.expr:
    """`vars(x)` as the `x.__dict__` it returns, `getattr(x, key)` as `x.__dict__[key]` (the
    attribute it reads, for the stores through it); any other node as it is."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) in (2, 3)
        and not node.keywords
    ):
        owner = ast.copy_location(ast.Attribute(node.args[0], "__dict__", ast.Load()), node)
        return ast.copy_location(ast.Subscript(owner, node.args[1], ast.Load()), node)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "vars"
        and len(node.args) == 1
        and not node.keywords
    ):
        return ast.copy_location(ast.Attribute(node.args[0], "__dict__", ast.Load()), node)
    return node


def _setter_args(call: ast.Call) -> tuple[ast.expr, ast.expr] | None:
    """(object, name) of a call setting or deleting an attribute by name: `setattr(obj, name,
    v)`, `object.__setattr__(obj, name, v)` (any class's), `super().__setattr__(name, v)` (on
    `self`)."""
    func, args = call.func, call.args
    if isinstance(func, ast.Name):
        return (args[0], args[1]) if func.id in _SETTERS and len(args) >= 2 else None
    if not (isinstance(func, ast.Attribute) and func.attr in ("__setattr__", "__delattr__")):
        return None
    owner = func.value
    if isinstance(owner, ast.Call) and getattr(owner.func, "id", None) == "super" and args:
        return ast.copy_location(ast.Name("self", ast.Load()), owner), args[0]
    if _is_self(owner) or len(args) < 2:
        return None  # `self.__setattr__(name, v)`: `_SELF_SETTERS`
    return args[0], args[1]


def _call_stores(
    call: ast.Call,
    method: str,
    names: Callable[[], dict[str, tuple[str, ...]]],
    aliases: dict[str, list[str]],
) -> list[Store]:
    """The stores a call makes: `setattr(self..., name, value)`, `delattr`, `self.__setattr__`,
    `self.add_module(name, m)`, or a method called on `self.<attr>` or something of it."""
    func = call.func
    if (setter := _setter_args(call)) is not None:
        owner, key = setter
        if _is_self(owner):
            return _named(key, method, call, names, False)
        if isinstance(owner, ast.Name):  # `setattr(m, "inplace", False)` after `m = self.act`
            at = _at(call)
            return [
                Store(a, "inner", _literal(key), None, method, *at, False)
                for a in aliases.get(owner.id, ())
            ]
        root = _root(owner) if isinstance(owner, (ast.Attribute, ast.Subscript)) else None
        if root is None:
            return []
        attr, part, whole = root
        if whole and attr is not None:  # `setattr(self.act, "inplace", False)`
            part = _literal(key)
        return [Store(attr, "inner", part, None, method, *_at(call), False)]
    if not isinstance(func, ast.Attribute):
        return []
    if _is_self(func.value):
        if func.attr in _SELF_SETTERS and call.args:
            modules = func.attr not in ("__setattr__", "__delattr__")
            return _named(call.args[0], method, call, names, modules)
        return []
    if isinstance(func.value, ast.Name):  # `m.register_forward_hook(fn)` after `m = self.act`
        at = _at(call)
        return [
            Store(a, "called", None, func.attr, method, *at, False)
            for a in aliases.get(func.value.id, ())
        ]
    receiver = dict_of(func.value)  # `vars(self).update(...)` as `self.__dict__.update(...)`
    root = _root(receiver) if isinstance(receiver, (ast.Attribute, ast.Subscript)) else None
    if root is None:
        return []
    attr, part, whole = root
    if attr is None:  # `self.__dict__.update(...)`
        return [Store(None, "bound", None, None, method, *_at(call), False)]
    if attr in _MODULE_DICTS and whole and func.attr in _DICT_SETTERS:  # `_modules.update(...)`
        return [Store(None, "bound", None, None, method, *_at(call), False, "", True)]
    return [Store(attr, "called", part, func.attr, method, *_at(call), False)]


def _named(
    key: ast.expr,
    method: str,
    call: ast.Call,
    names: Callable[[], dict[str, tuple[str, ...]]],
    modules: bool,
) -> list[Store]:
    """`self.<key>` bound by a call: the name a literal or a loop over literals gives; else any
    attribute, or those whose name starts with the literal start of an f-string. `modules`:
    only a module (or a buffer, a parameter) can be bound so (`add_module`)."""
    at = _at(call)
    if isinstance(key, ast.Name) and key.id in names():
        return [
            Store(n, "bound", None, None, method, *at, False, "", modules) for n in names()[key.id]
        ]
    prefix = ""
    if isinstance(key, ast.JoinedStr) and key.values:
        prefix = _literal(key.values[0]) or ""
    return [Store(_literal(key), "bound", None, None, method, *at, False, prefix, modules)]


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_self(node: object) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _at(node: ast.expr) -> tuple[int, int, bool]:
    """(line, column, whether it deletes) of the node a store is read from."""
    return node.lineno, node.col_offset, _deletes(node)


def _deletes(node: ast.AST) -> bool:
    """`del self.x`, `delattr(self, "x")`, `self.__delattr__("x")`."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return name in ("delattr", "__delattr__")
    return isinstance(getattr(node, "ctx", None), ast.Del)
