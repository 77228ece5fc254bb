"""What a module built in `__init__` returns, statically: a catalog class by
`catalog.output_kind`, a class of the project by the `return`s of its `forward` and of the
helpers it returns through ("input or new": timm's `DropPath`, torchvision's
`StochasticDepth`)."""

from __future__ import annotations

import ast

from migrator import catalog
from migrator.catalog import Op, Role
from migrator.rewrite.context import self_attr
from migrator.rewrite.inplace import _BENIGN_ATTRIBUTES, unnamed_binds
from migrator.rewrite.names import literal
from migrator.rewrite.project import TORCH_MODULE, ClassInfo, FileInfo, Project
from migrator.rewrite.walk import all_nodes, parents_of

FRESH, INPUT = "fresh", "input"

_READS = _BENIGN_ATTRIBUTES | {"new_empty", "new_zeros", "new_ones", "new_full"}
"""Attributes of the input a forward may read without sharing it (its size, a new tensor like
it)."""

_REPLACING = frozenset(
    {
        "__call__",
        "__getattr__",
        "__getattribute__",
        "__setattr__",
        "_call_impl",
        "_wrapped_call_impl",
    }
)
"""Methods that change what calling the module runs or what its attributes hold."""

_BOUND = _REPLACING | {"forward"}
"""Names a class body may not bind other than by `def`."""

_UNSEEN = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "_forward_hooks",
        "_forward_pre_hooks",
        "add_module",
        "register_module",
        "_modules",
        "__dict__",
        "setattr",
        "delattr",
        "__setattr__",
        "vars",
    }
)
"""Names through which a class may hook its calls or change its modules unseen
(`object.__setattr__(self, "proj", m)`, `vars(self)["_modules"]`)."""


class OutputKinds:
    """What a module of a class returns: 'fresh', always a new tensor nothing else sees; 'input',
    that or its first input; '' not known. A class of the project (not of torch) is worked out
    from its `forward`, which must be its own or a base's (bases up to `nn.Module`, one each),
    with no hook, `__call__` or `__getattr__` of its own: every `return` gives its first
    input unchanged (never bound again, modified, stored nor read but for its size or as an
    operand), an operator's result, a catalog op's (its input, when that passes it on), or a
    call of a helper function or of a module `__init__` assigns with the same property."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._classes: dict[str, str] = {}
        self._functions: dict[int, str] = {}

    def either(self, values: list[ast.expr], file: FileInfo) -> str:
        """What a module built by one of `values` (in `file`) returns (one that is None is
        never called): 'fresh' when each is, 'input' when each is that or 'input'."""
        kinds = {self.built(v, file) for v in values if not is_none(v)}
        if not kinds or "" in kinds:
            return ""
        return FRESH if kinds == {FRESH} else INPUT

    def built(self, value: ast.expr, file: FileInfo) -> str:
        """What a module built by `value` returns: each arm of a conditional expression (one
        that is None is never called); an `nn.Sequential` what its last module returns, or
        its input when every module passes it on; a class of the project by its `forward`."""
        if isinstance(value, ast.IfExp):
            return self.either([value.body, value.orelse], file)
        if not isinstance(value, ast.Call):
            return ""
        cls = file.names.resolve(value.func)
        if not cls:
            return ""
        if cls == "torch.nn.Sequential":
            if value.keywords or any(isinstance(a, ast.Starred) for a in value.args):
                return ""
            for module in reversed(value.args):
                kind = self.built(module, file)
                if kind != INPUT:
                    return kind
            return INPUT if value.args else ""
        kind = catalog.output_kind(cls, inplace_flag(cls, value))
        return kind or self.of_class(cls, file)

    def items_either(self, values: list[ast.expr], file: FileInfo) -> str:
        """`either` of the items of the containers `values` build (an `nn.ModuleList` of a
        list, an `nn.Sequential`); '' when one holds items not known."""
        held = [_held(v, file) for v in values if not is_none(v)]
        if any(h is None for h in held):
            return ""
        return self.either([item for h in held if h is not None for item in h], file)

    def keep_nothing(self, values: list[ast.expr], file: FileInfo, items: bool = False) -> bool:
        """Whether every module built by one of `values` (in `file`) is of a torch class the
        catalog knows, or an `nn.Sequential` of them, which keeps no reference to its input
        (one that is None is never called). `items`: the modules are the items of each value,
        an `nn.ModuleList` of a list, or an `nn.Sequential`."""
        for value in values:
            if isinstance(value, ast.IfExp):
                if not self.keep_nothing([value.body, value.orelse], file, items):
                    return False
                continue
            if items:
                held = _held(value, file)
                if held is None or not self.keep_nothing(held, file):
                    return False
                continue
            if is_none(value):
                continue
            cls = file.names.resolve(value.func) if isinstance(value, ast.Call) else None
            if not cls or cls.split(".")[0] not in ("torch", "migrator"):
                return False
            assert isinstance(value, ast.Call)
            if cls == "torch.nn.Sequential":
                if value.keywords or any(isinstance(a, ast.Starred) for a in value.args):
                    return False
                if not self.keep_nothing(value.args, file):
                    return False
            elif not catalog.output_kind(cls, inplace_flag(cls, value)):
                return False
        return True

    def of_class(self, qualname: str, within: FileInfo) -> str:
        """What a module of the project's class `qualname` returns ('' for torch's and
        migrator's own classes, which the catalog answers for)."""
        if qualname.split(".")[0] in ("torch", "migrator"):
            return ""
        if qualname not in self._classes:
            self._classes[qualname] = ""  # a class reached again while worked out proves nothing
            self._classes[qualname] = self._class_kind(qualname, within)
        return self._classes[qualname]

    def _class_kind(self, qualname: str, within: FileInfo) -> str:
        cls = self.project.find_class(qualname, within)
        chain = self._chain(cls) if cls is not None else None
        if not chain or any(_hooked(c) for c in chain):
            return ""
        owner = next((c for c in chain if "forward" in c.methods()), None)
        if owner is None:
            return ""
        return self._returns(owner.methods()["forward"], 1, owner.file, chain)

    def _chain(self, cls: ClassInfo) -> list[ClassInfo] | None:
        """`cls` and its bases, each with one base, up to `nn.Module` (None otherwise)."""
        chain = [cls]
        while True:
            node = chain[-1].node
            if len(node.bases) != 1 or node.keywords or node.decorator_list:
                return None
            base = chain[-1].bases[0]
            if base in (TORCH_MODULE, "torch.nn.modules.module.Module"):
                return chain
            found = self.project.find_class(base, chain[-1].file) if base else None
            if found is None or any(found.qualname == c.qualname for c in chain):
                return None
            chain.append(found)

    def _function_kind(self, function: ast.FunctionDef, file: FileInfo) -> str:
        if id(function) not in self._functions:
            self._functions[id(function)] = ""
            self._functions[id(function)] = self._returns(function, 0, file, None)
        return self._functions[id(function)]

    def _returns(
        self, function: ast.FunctionDef, skip: int, file: FileInfo, chain: list[ClassInfo] | None
    ) -> str:
        """What `function` returns, its first input the positional parameter after `skip`
        (`self`); `chain`: the classes of a `forward`, whose modules it may return through."""
        positional = [*function.args.posonlyargs, *function.args.args][skip:]
        if function.decorator_list or not positional:
            return ""
        name = positional[0].arg
        own = _own_nodes(function)
        if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in own):
            return ""
        returns = [n for n in own if isinstance(n, ast.Return)]
        if not returns:
            return ""
        bound = _returned_locals(function, own, returns)
        kinds = {self._returned(r.value, name, file, chain, bound) for r in returns}
        if "" in kinds:
            return ""
        if kinds == {FRESH}:
            return FRESH  # a new tensor, whatever else the input is given to
        return INPUT if _unshared(function, name, own) else ""

    def _returned(
        self,
        value: ast.expr | None,
        name: str,
        file: FileInfo,
        chain: list[ClassInfo] | None,
        bound: dict[str, ast.expr],
    ) -> str:
        """What one `return value` gives, the input being `name`; `bound`: the locals only a
        `return` reads (`_returned_locals`), a slice of which is as fresh as their value."""
        if isinstance(value, ast.Name) and value.id == name:
            return INPUT
        local = value.value if isinstance(value, ast.Subscript) else value
        if isinstance(local, ast.Name) and local.id in bound:
            kind = self._returned(bound[local.id], name, file, chain, bound)
            return FRESH if kind == FRESH else ""
        if isinstance(value, ast.BinOp):
            return FRESH
        if not isinstance(value, ast.Call):
            return ""
        func, first = value.func, value.args[0] if value.args else None
        passes_input = isinstance(first, ast.Name) and first.id == name
        if self_attr(func) and chain is not None:
            kind = self._attr_kind(func.attr, chain)
        elif isinstance(func, ast.Attribute) and _is_name(func.value, name):
            op = catalog.by_method(func.attr)
            kind = _op_kind(op, value, [func.value]) if op else ""
            passes_input = True
        elif (qualname := file.names.resolve(func)) is None:
            return ""
        elif op := catalog.by_function(qualname):
            kind = _op_kind(op, value, [])
        elif found := self.project.find_function(qualname, file):
            kind = self._function_kind(found[1], found[0])
        else:
            return ""
        return kind if kind == FRESH or passes_input else ""

    def _attr_kind(self, attr: str, chain: list[ClassInfo]) -> str:
        """What the module at `self.<attr>` returns: every assignment of it an `__init__`'s
        `self.<attr> = ...` in one of `chain`, every other use a call of it."""
        values: list[tuple[ast.expr, FileInfo]] = []
        for cls in chain:
            for method_name, method in cls.methods().items():
                parents = parents_of(method)
                for node in ast.walk(method):
                    if not (self_attr(node) and node.attr == attr):
                        continue
                    parent = parents.get(id(node))
                    if isinstance(node.ctx, ast.Load):
                        if not (isinstance(parent, ast.Call) and parent.func is node):
                            return ""
                    elif (
                        method_name == "__init__"
                        and isinstance(parent, ast.Assign)
                        and parent.targets == [node]
                    ):
                        values.append((parent.value, cls.file))
                    else:
                        return ""
        if not values:
            return ""
        kinds = {self.either([value], file) for value, file in values}
        if "" in kinds:
            return ""
        return FRESH if kinds == {FRESH} else INPUT


def _held(value: ast.expr, file: FileInfo) -> list[ast.expr] | None:
    """What builds the items of the container `value` builds: an `nn.Sequential`'s arguments,
    an `nn.ModuleList`'s list or comprehension (None otherwise)."""
    if not isinstance(value, ast.Call) or value.keywords:
        return None
    if any(isinstance(a, ast.Starred) for a in value.args):
        return None
    cls = file.names.resolve(value.func)
    if cls == "torch.nn.Sequential":
        return value.args
    if cls != "torch.nn.ModuleList" or len(value.args) != 1:
        return None
    listed = value.args[0]
    if isinstance(listed, (ast.List, ast.Tuple)):
        starred = any(isinstance(e, ast.Starred) for e in listed.elts)
        return None if starred else listed.elts
    if isinstance(listed, ast.ListComp) and len(listed.generators) == 1:
        return [listed.elt]
    return None


def _op_kind(op: Op, call: ast.Call, receiver: list[ast.expr]) -> str:
    """What a catalog op returns; passing its input on only from its first argument."""
    kind = catalog.output_kind(op.module, op_inplace(op, call, receiver))
    return "" if kind == INPUT and op.args[0].role is not Role.INPUT else kind


def _hooked(cls: ClassInfo) -> bool:
    """Whether `cls` may run something other than its `forward` when called, or change its
    modules unseen: hooks, `__call__`, a `forward` or attribute bound otherwise."""
    if _REPLACING & cls.methods().keys():
        return True
    for statement in cls.node.body:
        targets = getattr(statement, "targets", [getattr(statement, "target", None)])
        if any(isinstance(t, ast.Name) and t.id in _BOUND for t in targets):
            return True
    for node in all_nodes(cls.node):
        if isinstance(node, ast.Attribute) and (
            node.attr in _UNSEEN
            or (
                node.attr in ("forward", "__call__", "__class__")
                and not isinstance(node.ctx, ast.Load)
            )
        ):
            return True
        if isinstance(node, ast.Name) and node.id in _UNSEEN:
            return True
    return False


def _returned_locals(
    function: ast.FunctionDef, own: list[ast.AST], returns: list[ast.Return]
) -> dict[str, ast.expr]:
    """Local name -> its value, for each name `function` binds once (in nothing nested in it,
    `own`), by `name = value` (no `def`, `except ... as`, `match` capture nor import binds it), and reads only in what its `return`s give (GhostModule's `out =
    torch.cat(...)` before `return out[:, :n]`): nothing else holds what it names, nor a view of
    it."""
    returned = {id(n) for r in returns if r.value is not None for n in ast.walk(r.value)}
    values: dict[str, ast.expr] = {}
    for node in own:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                values[target.id] = node.value
    stores: dict[str, int] = {}
    loads: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                stores[node.id] = stores.get(node.id, 0) + 1
            elif id(node) not in returned:
                loads.add(node.id)
        elif isinstance(node, ast.arg):
            stores[node.arg] = stores.get(node.arg, 0) + 2
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            loads.update(node.names)
        for bound in unnamed_binds(node):  # `case Box() as out:` binds it too
            stores[bound] = stores.get(bound, 0) + 2
    return {k: v for k, v in values.items() if stores.get(k) == 1 and k not in loads}


def _own_nodes(function: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of `function` outside the functions, lambdas and classes nested in it."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _unshared(function: ast.FunctionDef, name: str, own: list[ast.AST]) -> bool:
    """Whether the input `name` is never bound again, modified or kept: each use reads its size,
    is an operand, is returned, or is the first argument of (or the tensor calling) what a
    `return` gives, which is worked out itself."""
    owned = {id(n) for n in own}
    parents = parents_of(function)
    for node in ast.walk(function):
        if isinstance(node, ast.arg) and node.arg == name and node is not _first(function, name):
            return False  # a nested function's own parameter of that name
        if not isinstance(node, ast.Name) or node.id != name:
            continue
        if not isinstance(node.ctx, ast.Load) or id(node) not in owned:
            return False
        parent = parents.get(id(node))
        above = parents.get(id(parent))
        if isinstance(parent, ast.Attribute) and parent.attr in _READS:
            continue
        if isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Return)):
            continue
        if (
            isinstance(above, ast.Return)
            and isinstance(parent, ast.Call)
            and parent.args[:1] == [node]
        ):
            continue
        if (
            isinstance(parent, ast.Attribute)
            and isinstance(above, ast.Call)
            and above.func is parent
            and isinstance(parents.get(id(above)), ast.Return)
        ):
            continue
        return False
    return True


def _first(function: ast.FunctionDef, name: str) -> ast.arg | None:
    return next(
        (a for a in [*function.args.posonlyargs, *function.args.args] if a.arg == name), None
    )


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def op_inplace(op: Op, call: ast.Call, receiver: list[ast.expr]) -> bool | None:
    """Whether a call of `op` works in place (`F.relu(x, inplace=True)`, `F.relu_(x)`): None
    when that is not known statically."""
    if dict(op.ctor_extra).get("inplace"):
        return True
    names = [a.name for a in op.args]
    return _inplace_at(call, names.index("inplace"), receiver) if "inplace" in names else False


def inplace_flag(cls: str, ctor: ast.Call) -> bool | None:
    """The `inplace` a module is built with by `ctor` (a call of `cls`): False when it cannot be
    in place, None when that is not known statically."""
    position = catalog.inplace_position(cls)
    return False if position is None else _inplace_at(ctor, position, [])


def _inplace_at(call: ast.Call, position: int, leading: list[ast.expr]) -> bool | None:
    """The `inplace` argument of `call`, by keyword or at `position` among `leading` and the
    positional arguments: False when not given, its truth when a literal, else None."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    given = [k.value for k in call.keywords if k.arg == "inplace"]
    given += [*leading, *call.args][position : position + 1]
    if not given:
        return False
    return bool(ast.literal_eval(given[0])) if literal(given[0]) else None
