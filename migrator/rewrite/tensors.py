"""Which expressions in a forward-path function are tensors.

Operators and tensor methods are only rewritten when an operand is known to be a tensor: `h * w`
on two ints from `x.shape` must stay as it is. Knowledge comes from evidence in the function:
the first input of `forward`, annotated parameters (`Tensor`, `List[Tensor]`, `Dict[str, Tensor]`)
and functions (`-> Tensor`), values produced by submodules, torch functions and tensor methods,
arithmetic and comparisons on tensors, and the items of what holds tensors (`for t in
x.unbind(0)`, `a, b = x.chunk(2)`); with run-time evidence, what modules of classes only the
built models know return (`evident`). Sizes, counts and flags (`.shape`, `len()`, `min()` of
them, tuples of them) are proven not to be tensors.
"""

from __future__ import annotations

import ast
from typing import Callable, cast

from migrator import catalog
from migrator.rewrite.annotations import (
    Kind,
    annotation_kind,
    expand_aliases,
    item_kind,
    plainish,
)
from migrator.rewrite.names import parameter_defaults

# Tensor methods and attributes whose result is not a tensor.
TUPLE_METHODS = frozenset("chunk split unbind tensor_split split_with_sizes".split())
NOT_TENSOR_METHODS = (
    catalog.SCALAR_METHODS
    | TUPLE_METHODS
    | frozenset(
        """
    storage_offset data_ptr is_complex is_signed type equal allclose numpy untyped_storage
""".split()
    )
)
NOT_TENSOR_ATTRIBUTES = catalog.SCALAR_ATTRIBUTES | {"grad_fn", "names"}
NOT_TENSOR_TORCH = frozenset(
    """
    torch.is_tensor torch.numel torch.Size torch.device torch.dtype torch.no_grad torch.finfo
    torch.iinfo torch.is_grad_enabled torch.get_default_dtype torch.is_floating_point
    torch.enable_grad torch.set_grad_enabled torch.inference_mode torch.chunk torch.split
    torch.unbind torch.tensor_split torch.broadcast_shapes torch.jit.is_scripting
    torch.jit.is_tracing torch.compiler.is_compiling torch.is_autocast_enabled
""".split()
)
_NOT_TENSOR_LITERALS = (
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.JoinedStr,
)


class TensorNames:
    """Flow-insensitive tensor knowledge for one function."""

    def __init__(
        self,
        func: ast.FunctionDef,
        nodes: list[ast.AST],
        resolve: Callable[[ast.expr], str | None],
        module_attrs: set[str],
        tensor_attrs: set[str],
        first_is_tensor: bool = True,
        helper_call: Callable[[ast.Call, Callable[[ast.expr], bool]], bool] | None = None,
        returns: Callable[[ast.Call], ast.expr | None] | None = None,
        evident: dict[str, tuple[str, list[str]]] | None = None,
        unknown_attrs: frozenset[str] | set[str] = frozenset(),
        plain_setting: Callable[[ast.Attribute], bool] | None = None,
        plain_call: Callable[[ast.Call], bool] | None = None,
        plain_params: bool = False,
        aliases: dict[str, ast.expr] | None = None,
        first_declared: Callable[[ast.Call], bool] | None = None,
        unknown_globals: frozenset[str] | set[str] = frozenset(),
        tensor_params: frozenset[str] | set[str] = frozenset(),
        attr_kinds: dict[str, Kind] | None = None,
    ) -> None:
        """`first_is_tensor`: an unannotated first parameter is a tensor (forward's input).
        `helper_call(call, is_tensor)`: whether a call runs a helper function that becomes a
        module (`helper_modules`): like a module call, it takes and returns tensors.
        `returns(call)`: the return annotation of the function or method `call` runs, when it
        can be found. `evident`: attribute -> ('tensor' or 'tuple', the targets proving it) for
        modules whose class only run-time evidence knows: what calling them returns.
        `unknown_attrs`: attributes neither they nor their items proven plain (containers built by
        calls, results of methods). `plain_setting(node)`: whether `self.<module>.<setting>` and
        its items are proven to hold no tensor (`settings.SubmoduleSettings`). `plain_call(call)`:
        whether the function `call` runs returns no tensor when given none (`helpers.plain_result`).
        `plain_params`: every parameter holds no tensor (the function is so called). `aliases`:
        the file's type aliases (`FileInfo.aliases`), read in annotations.
        `first_declared(call)`: whether the module or helper a call runs annotates its first
        input as something else than a tensor (`size: int`): the call proves nothing of it.
        `unknown_globals`: module-level names that may hold a tensor (`ModuleNames.unknown`);
        other globals hold none. `tensor_params`: unannotated parameters that are tensors, as
        the first is with `first_is_tensor` (a call gives them one). `attr_kinds`: attributes
        holding containers of tensors, by kind (`SubmoduleSettings.tensor_containers`)."""
        self.attr_kinds = attr_kinds or {}
        self.unknown_globals = unknown_globals
        self.tensor_params = tensor_params
        self.resolve = resolve
        self.aliases = aliases or {}
        self.plain_setting = plain_setting
        self.plain_call = plain_call
        self.plain_params = plain_params
        self.first_declared = first_declared
        self.unknown_attrs = unknown_attrs
        self.evident = evident or {}
        self.via: dict[str, list[str]] = {}
        """Names proven tensors (or tuples of them) through `evident`: the targets proving it."""
        self.helper_call = helper_call
        self.returns = returns
        self.module_attrs = module_attrs
        self.tensor_attrs = tensor_attrs
        self.names: set[str] = set()
        self.tuples: set[str] = set()
        self.kinds: dict[str, Kind] = {}
        """Names bound once to a container of tensors (`feats: List[Tensor]`): their kind."""
        self.plain: set[str] = set()
        """Names proven to hold no tensor (sizes, flags, counters)."""
        self.plain_items: set[str] = set()
        """Names whose items hold no tensor either (`padded = (tp, hp, wp)`, `x.shape`)."""
        groups = _grouped(nodes)
        self._nested = {n.name: n for n in cast(list[ast.FunctionDef], groups["def"])}
        self._bindings = [b for node in groups["binding"] for b in _bindings(node)]
        self._stored = [s for node in groups["storing"] for s in _stored_items(node)]
        """(name, what is stored) of each item stored into a named container (`_stored_items`)."""
        self._returned: dict[int, Kind | None] = {}
        """The kind each call returns, by its annotation (worked out once per call)."""
        self._counts: dict[str, int] = {}
        """How many times the function binds each name (parameters included)."""
        self._params = [(p, self._annotation_kind(p.annotation)) for p in _parameters(func)]
        """Each parameter (but `self`) with the kind its annotation declares."""
        for name in (
            [p.arg for p, _ in self._params]
            + [name for name, _ in self._bindings]
            + [cast(ast.arg, n).arg for n in groups["arg"]]
        ):
            self._counts[name] = self._counts.get(name, 0) + 1
        self._passed_values = self._passed(nodes)
        """What the calls of nested functions pass to their parameters, by the name they are
        known by (`_scope`)."""
        for key in self._passed_values:
            self._counts.setdefault(key, 1)
        self._bound = set(self._counts) | set(self._nested)
        """Names the function binds (others are globals: plain)."""
        self._seed(groups, first_is_tensor)
        self._propagate(groups["step"])
        self._find_plain(func, groups["arg"])

    # -- seeding -------------------------------------------------------------------------------
    def _seed(self, groups: dict[str, list[ast.AST]], first_is_tensor: bool) -> None:
        for i, (param, kind) in enumerate(self._params):
            if kind == "tensor" or (
                kind is None and ((i == 0 and first_is_tensor) or param.arg in self.tensor_params)
            ):
                self.names.add(param.arg)
            else:
                self._declare(param.arg, kind)
        for node in groups["declaring"]:  # nested functions' parameters,
            if isinstance(node, ast.arg) and node.arg != "self":  # and annotated assignments
                self._declare(node.arg, self._annotation_kind(node.annotation))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                self._declare(node.target.id, self._annotation_kind(node.annotation))
        evidence = {p.arg for p, kind in self._params if kind is None and not self.plain_params}
        for node in groups["evident"]:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                name = node.value.id
                if name in evidence and (
                    node.attr in NOT_TENSOR_ATTRIBUTES - {"names"}
                    or node.attr
                    in {
                        "view",
                        "reshape",
                        "permute",
                        "transpose",
                        "size",
                        "contiguous",
                        "unsqueeze",
                    }
                ):
                    self.names.add(name)
            elif (
                isinstance(node, ast.Call)
                and self._module_call(node)
                and not (self.first_declared and self.first_declared(node))
            ):
                for arg in node.args[:1]:
                    if isinstance(arg, ast.Name) and arg.id in evidence:
                        self.names.add(arg.id)

    def _annotation_kind(self, annotation: ast.expr | None) -> Kind | None:
        return annotation_kind(expand_aliases(annotation, self.aliases))

    def _declare(self, name: str, kind: Kind | None) -> None:
        """An annotated name: a tensor, or a container of tensors if nothing else binds it."""
        if kind == "tensor":
            self.names.add(name)
        elif kind == ("seq", "tensor"):
            self.tuples.add(name)
        elif (isinstance(kind, tuple) or kind == "tensors") and self._counts.get(name, 1) == 1:
            self.kinds[name] = kind

    def _propagate(self, nodes: list[ast.AST]) -> None:
        """Grow the tensors known from the seeds through `nodes` (`_STEPS`) until nothing
        changes."""
        steps = cast(list[ast.Assign | ast.AnnAssign | ast.For | ast.comprehension], list(nodes))
        steps += [  # a parameter of a nested function takes what each call passes
            ast.Assign(targets=[ast.Name(key, ast.Store())], value=value)
            for key, values in self._passed_values.items()
            if "@" in key
            for value in values
            if value is not None
        ]
        stored: dict[str, list[ast.expr | None]] = {}
        for name, value in self._stored:
            stored.setdefault(name, []).append(value)
        bound: dict[str, list[ast.expr | None]] = {}
        for name, value in self._bindings:
            if name in stored:
                bound.setdefault(name, []).append(value)
        changed = True
        while changed:
            changed = False
            for node in steps:
                if isinstance(node, (ast.For, ast.comprehension)):
                    changed |= self._bind_items(node.target, node.iter)
                    continue
                if node.value is None:
                    continue
                targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
                for target in targets:
                    changed |= self._bind(target, node.value)
            for name, values in bound.items():
                if name not in self.tuples and self._filled_with_tensors(
                    name, values, stored[name]
                ):
                    self.tuples.add(name)  # `sizes = []`, then `sizes.append(t)`
                    changed = True

    def _filled_with_tensors(
        self, name: str, bound: list[ast.expr | None], stored: list[ast.expr | None]
    ) -> bool:
        """Whether the list `name` holds only tensors: bound to lists of them (empty too) or
        to `tuple(name)`, and every value stored into it (`append`, `extend`, `[i] =`) one."""
        for value in bound:
            if isinstance(value, ast.Call) and self._builtin(value) in ("list", "tuple"):
                arg = value.args[0] if len(value.args) == 1 else None
                if not (isinstance(arg, ast.Name) and arg.id == name):
                    return False
            elif not isinstance(value, (ast.List, ast.Tuple)) or not all(
                self.is_tensor(e) for e in value.elts
            ):
                return False
        for value in stored:
            if isinstance(value, ast.Dict):  # `name[i] = v`
                value = value.values[0]
            elif isinstance(value, ast.List) and len(value.elts) == 1:  # `name.append(v)`
                value = value.elts[0]
            elif value is None or not self.is_tuple(value):  # `name.extend(...)`
                return False
            else:
                continue
            if not self.is_tensor(value):
                return False
        return True

    def _bind_items(self, target: ast.expr, iterable: ast.expr) -> bool:
        """Bind a loop's target to the items of `iterable` (`zip` and `enumerate` taken
        apart)."""
        builtin = self._builtin(iterable)
        assert not builtin or isinstance(iterable, ast.Call)  # `_builtin` found a call
        args = iterable.args if isinstance(iterable, ast.Call) else []
        elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else []
        starred = any(isinstance(a, ast.Starred) for a in [*args, *elts])
        if builtin == "zip" and len(elts) == len(args) and not starred:
            changed = False
            for elt, arg in zip(elts, args):
                changed |= self._bind_items(elt, arg)
            return changed
        if builtin == "enumerate" and len(elts) == 2 and args and not starred:
            return self._bind_items(elts[1], args[0])
        if builtin in ("reversed", "list", "tuple", "sorted") and len(args) == 1 and not starred:
            return self._bind_items(target, args[0])
        if builtin:
            return False
        return self._bind(target, _item(iterable))

    def _bind(self, target: ast.expr, value: ast.expr) -> bool:
        before = (len(self.names), len(self.tuples), len(self.kinds))
        if isinstance(target, ast.Name):
            if self.is_tensor(value):
                self.names.add(target.id)
            elif self.is_tuple(value):
                self.tuples.add(target.id)
            else:
                self._declare(target.id, self._kind(value))
            if target.id not in self.via and (proof := self.proof(value)):
                self.via[target.id] = proof
        elif isinstance(target, (ast.Tuple, ast.List)):
            if (
                isinstance(value, (ast.Tuple, ast.List))
                and len(value.elts) == len(target.elts)
                and not any(isinstance(e, ast.Starred) for e in target.elts + value.elts)
            ):
                for elt, part in zip(target.elts, value.elts):  # `q, k = self.a(x), self.b(x)`
                    self._bind(elt, part)
            else:  # `a, b = x.chunk(2)`: each is an item of the value
                for elt, item in _unpacked(target, value):
                    if isinstance(elt, ast.Starred):
                        if isinstance(elt.value, ast.Name) and (
                            self.is_tuple(value) or self.is_tensor(value)
                        ):
                            self.tuples.add(elt.value.id)
                    else:
                        self._bind(elt, item)
        return (len(self.names), len(self.tuples), len(self.kinds)) != before

    def _find_plain(self, func: ast.FunctionDef, args: list[ast.AST]) -> None:
        """Names every binding of which is a plain value (or a parameter annotated or
        defaulted as one), and those whose items are plain too. `args`: the parameters of the
        function's nodes (its nested functions')."""
        bindings: dict[str, list[ast.expr | None]] = {}
        defaults = parameter_defaults(func.args)
        holders: set[str] = set()
        """Parameters declared containers of tensors: no tensor, but their items may be."""
        for param, kind in self._params:
            default = defaults.get(param.arg)
            plain = (
                kind == "plain"
                or self.plain_params
                or (isinstance(default, ast.Constant) and default.value is not None)
            )
            if isinstance(kind, tuple) and not plain:
                holders.add(param.arg)
            bindings[param.arg] = [ast.Constant(0) if plain or param.arg in holders else None]
        for a in (func.args.vararg, func.args.kwarg):
            if a:
                bindings[a.arg] = [None]
        for name, value in self._bindings:
            bindings.setdefault(name, []).append(value)
        for name, value in self._stored:
            bindings.setdefault(name, []).append(value)
        for name, values in self._passed_values.items():
            bindings.setdefault(name, []).extend(values)
        for node in cast(list[ast.arg], args):  # unless the name is bound here
            if node.arg not in bindings:
                plain = self._annotation_kind(node.annotation) == "plain"
                bindings[node.arg] = [ast.Constant(0) if plain else None]
        for name in self._nested:
            bindings.setdefault(name, []).append(None)
        self._bound = set(bindings)
        # the largest consistent sets: `n = 0` then `n += 1` is plain
        candidates = {
            name
            for name, values in bindings.items()
            if name not in self.names and None not in values
        }
        self.plain = set(candidates)
        self.plain_items = candidates - self.tuples - set(self.kinds) - holders
        changed = True
        while changed:
            changed = False
            for name in list(self.plain):
                if not all(v is not None and self.is_plain(v) for v in bindings[name]):
                    self.plain.discard(name)
                    changed = True
            for name in list(self.plain_items):
                if not all(v is not None and self._plain_items(v) for v in bindings[name]):
                    self.plain_items.discard(name)
                    changed = True

    def bound_times(self, name: str) -> int:
        """How many times the function binds `name` (parameters included)."""
        return self._counts.get(name, 0)

    def _passed(self, nodes: list[ast.AST]) -> dict[str, list[ast.expr | None]]:
        """What each call passes to the unannotated parameters of a nested function that is
        only ever called here (its name bound by its `def` alone, never read but as what a call
        calls): parameter -> the arguments (or defaults) it takes, None for what a starred
        argument passes."""
        self._scoped: dict[int, str] = {}
        if not self._nested:
            return {}
        defs: dict[str, int] = {}
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                name = getattr(node, "name", "<lambda>")
                defs[name] = defs.get(name, 0) + 1
        called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        escaping = {
            n.id
            for n in nodes
            if isinstance(n, ast.Name) and (id(n) not in called or not isinstance(n.ctx, ast.Load))
        }
        passed: dict[str, list[ast.expr | None]] = {}
        for name, nested in self._nested.items():
            if defs.get(name) != 1 or self._counts.get(name) or name in escaping:
                continue
            args = nested.args
            positional = [*args.posonlyargs, *args.args]
            defaults = parameter_defaults(args)
            params = [p for p in (*positional, *args.kwonlyargs) if p.annotation is None]
            keys = {p.arg: self._scope(nested, p) for p in params}
            for call in nodes:
                if not (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Name)
                    and call.func.id == name
                ):
                    continue
                unpacked = any(isinstance(a, ast.Starred) for a in call.args) or any(
                    k.arg is None for k in call.keywords
                )
                given: dict[str, ast.expr] = {p.arg: a for p, a in zip(positional, call.args)}
                given.update({k.arg: k.value for k in call.keywords if k.arg is not None})
                for param in params:
                    value = None if unpacked else given.get(param.arg, defaults.get(param.arg))
                    passed.setdefault(keys[param.arg], []).append(value)
        return passed

    def _scope(self, nested: ast.FunctionDef, param: ast.arg) -> str:
        """The name a parameter of a nested function is known by: `param@function` when the
        function never binds that name again nor stores into it (so every read of it in there
        is the parameter, told apart from the enclosing function's name), else the name
        itself."""
        reads = []
        for node in ast.walk(nested):
            if any(name == param.arg for name, _ in _stored_items(node)):
                return param.arg  # `param.append(...)`, `param[i] = ...`: filled in there
            if isinstance(node, ast.Name) and node.id == param.arg:
                if not isinstance(node.ctx, ast.Load):
                    return param.arg
                reads.append(node)
            elif (isinstance(node, ast.arg) and node is not param and node.arg == param.arg) or (
                isinstance(node, (ast.Global, ast.Nonlocal)) and param.arg in node.names
            ):
                return param.arg  # another parameter of that name, or one declared outside
        key = f"{param.arg}@{nested.name}"
        for node in reads:
            self._scoped[id(node)] = key
        return key

    def _key(self, node: ast.Name) -> str:
        """The name `node` reads (`param@function` for a parameter of a nested function)."""
        return self._scoped.get(id(node), node.id)

    # -- queries -------------------------------------------------------------------------------
    def is_plain(self, node: ast.expr) -> bool:
        """Whether `node` is proven not to be a tensor."""
        if isinstance(node, ast.Compare):
            return self._compare(node) == "plain"
        if isinstance(node, (ast.Constant, ast.JoinedStr, ast.BoolOp, ast.Lambda)):
            return True
        if isinstance(node, ast.Name):
            key = self._key(node)
            if key in self.names:
                return False
            return key in self.plain or self._plain_global(key)
        if isinstance(node, _NOT_TENSOR_LITERALS):
            return True
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return (  # settings and submodules
                    node.attr not in self.tensor_attrs and node.attr not in self.unknown_attrs
                )
            if node.attr in NOT_TENSOR_ATTRIBUTES:
                return True
            if self.plain_setting is not None and self.plain_setting(node):
                return True
            qualname = self.resolve(node)
            return bool(qualname) and not self.is_tensor(node) and not self._unknown_root(node)
        if isinstance(node, ast.Call):
            func = node.func
            builtin = self._builtin(node)
            if builtin in ("min", "max", "abs"):  # of sizes: a size
                return all(
                    self.holds_no_tensor(a.value if isinstance(a, ast.Starred) else a)
                    for a in node.args
                ) and not any(self.unknown(k.value) for k in node.keywords)
            if builtin in _PLAIN_BUILTINS:
                return True
            if self.is_tensor(node):
                return False
            if self.is_tuple(node):  # a tuple of tensors is no tensor
                return True
            if isinstance(func, ast.Attribute) and func.attr in catalog.SCALAR_METHODS:
                return True
            if plainish(self._kind(node)):
                return True
            if self._plain_result(node):
                return True
            qualname = self.resolve(func)
            return bool(
                qualname
                and (qualname in NOT_TENSOR_TORCH or qualname.split(".")[0] in _PLAIN_MODULES)
            )
        if isinstance(node, ast.Subscript):
            kind = self._kind(node)
            if kind is not None:
                return plainish(kind)
            return self._plain_items(node.value)
        if isinstance(node, ast.BinOp):
            return self.is_plain(node.left) and self.is_plain(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.is_plain(node.operand)
        if isinstance(node, ast.IfExp):
            return self.is_plain(node.body) and self.is_plain(node.orelse)
        return False

    def _unknown_root(self, node: ast.Attribute) -> bool:
        """Whether an attribute chain starts at a global that may hold a tensor, or a module of
        the package, whose attribute may be one (`tables.TABLE`)."""
        root: ast.expr = node
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and not self._plain_global(self._key(root))

    def _plain_global(self, key: str) -> bool:
        """A name the function does not bind: a global, plain unless an assignment at the top
        level may bind it to a tensor."""
        return key not in self._bound and key not in self.unknown_globals

    def _plain_result(self, node: ast.Call) -> bool:
        """Whether `node` calls a function that returns no tensor, nor items holding one, when
        given none, and is given none (`plain_call`)."""
        return (
            self.plain_call is not None
            and all(
                self.holds_no_tensor(a.value if isinstance(a, ast.Starred) else a)
                for a in node.args
            )
            and all(self.holds_no_tensor(k.value) for k in node.keywords)
            and self.plain_call(node)
        )

    def holds_no_tensor(self, node: ast.expr) -> bool:
        """Whether `node` is proven plain, and so are its items."""
        return self.is_plain(node) and self._plain_items(node)

    def _plain_items(self, node: ast.expr) -> bool:
        """Whether every item of `node` (indexed or iterated) is proven not to be a tensor."""
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            key = self._key(node)
            if key in self.kinds:
                return plainish(item_kind(self.kinds[key]))
            return key in self.plain_items or self._plain_global(key)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return all(
                self.holds_no_tensor(e.value if isinstance(e, ast.Starred) else e)
                for e in node.elts
            )
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.holds_no_tensor(node.elt)
        if isinstance(node, ast.Dict):
            return all(
                k is not None and self.holds_no_tensor(k) and self.holds_no_tensor(v)
                for k, v in zip(node.keys, node.values)
            )
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return (  # settings and submodules
                    node.attr not in self.tensor_attrs and node.attr not in self.unknown_attrs
                )
            return node.attr in NOT_TENSOR_ATTRIBUTES or self.is_plain(node)
        if isinstance(node, ast.Call):
            func = node.func
            builtin = self._builtin(node)
            if builtin in ("list", "tuple", "sorted", "reversed", "zip", "enumerate", "set"):
                return all(self._plain_items(a) for a in node.args)
            if builtin in ("min", "max", "abs") or builtin in _SCALAR_BUILTINS:
                return self.is_plain(node)  # a number (or a string) has no tensor items
            if isinstance(func, ast.Attribute) and func.attr in catalog.SCALAR_METHODS:
                return True  # sizes, numbers, flags: no tensor items (`x.numel()`)
            if isinstance(func, ast.Attribute) and func.attr in ("items", "keys", "values"):
                return not node.args and self._plain_items(func.value)  # of a dict of sizes
            if isinstance(func, ast.Attribute) and func.attr == "copy":  # a list's, a dict's
                return not node.args and not node.keywords and self._plain_items(func.value)
            kind = self._kind(node)
            if kind is not None:
                return plainish(kind)
            if self._plain_result(node):
                return True
            qualname = self.resolve(func)
            return qualname is not None and (
                qualname.split(".")[0] in _PLAIN_MODULES
                or (qualname in NOT_TENSOR_TORCH and qualname not in _TUPLE_TORCH)
            )
        if isinstance(node, ast.Subscript):
            kind = self._kind(node)
            if kind is not None:
                return plainish(kind)
            return self._plain_items(node.value)
        if isinstance(node, ast.BinOp):  # `[B] + sizes`
            return self._plain_items(node.left) and self._plain_items(node.right)
        if isinstance(node, ast.UnaryOp):  # `-1`
            return self._plain_items(node.operand)
        if isinstance(node, ast.IfExp):
            return self._plain_items(node.body) and self._plain_items(node.orelse)
        return False

    def _compare(self, node: ast.Compare) -> str | None:
        """'tensor' (`x > 0`, one comparison with a tensor), 'plain' (`is`, `in`, or of plain
        values) or None."""
        if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            return "plain"
        operands = [node.left, *node.comparators]
        if len(node.ops) == 1 and any(self.is_tensor(o) for o in operands):
            return "tensor"
        if all(self.is_plain(o) or is_container(o) for o in operands):
            return "plain"
        return None

    def _builtin(self, node: ast.expr) -> str | None:
        """The name of the builtin `node` calls (not shadowed), else None."""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id not in self._bound
            and self.resolve(node.func) is None
        ):
            return node.func.id
        return None

    def _kind(self, node: ast.expr) -> Kind | None:
        """The kind of a container of tensors, or of what an annotated function returns."""
        if isinstance(node, ast.Name):
            return self.kinds.get(self._key(node))
        if isinstance(node, ast.Subscript):
            kind = self._kind(node.value)
            return item_kind(kind, None if node.slice is _ITERATED else node.slice)
        if isinstance(node, ast.Attribute):
            owner = node.value
            own = isinstance(owner, ast.Name) and owner.id == "self"
            return self.attr_kinds.get(node.attr) if own else None
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "values" and not node.args:
            kind = self._kind(func.value)
            return ("seq", kind[1]) if isinstance(kind, tuple) and kind[0] == "map" else None
        if self._builtin(node) in ("list", "tuple") and len(node.args) == 1:
            kind = self._kind(node.args[0])
            return kind if isinstance(kind, tuple) and kind[0] == "seq" else None
        if isinstance(func, ast.Name) and func.id in self._bound:  # a nested function's
            nested = self._nested.get(func.id)
            if nested is None or self._counts.get(func.id, 0):
                return None
            return annotation_kind(nested.returns)
        if self.returns is not None:
            if id(node) not in self._returned:
                self._returned[id(node)] = annotation_kind(self.returns(node))
            return self._returned[id(node)]
        return None

    def proof(self, node: ast.expr) -> list[str]:
        """The targets whose evidence `node`'s value comes through (empty: none)."""
        if not self.evident:
            return []
        found: set[str] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                found.update(self.via.get(self._key(sub), ()))
            elif isinstance(sub, ast.Call) and (kind := self._evident(sub)):
                found.update(self.evident[kind][1])
        return sorted(found)

    def _evident(self, node: ast.Call) -> str | None:
        """The attribute of `self.<attr>(...)` when evidence tells what it returns."""
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and func.attr in self.evident
        ):
            return func.attr
        return None

    def unknown(self, node: ast.expr) -> bool:
        """Neither proven a tensor nor proven not to be one."""
        return not self.is_tensor(node) and not self.is_plain(node)

    def _module_call(self, node: ast.Call) -> bool:
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and func.attr in self.module_attrs
        ) or (self.helper_call is not None and self.helper_call(node, self.is_tensor))

    def is_tuple(self, node: ast.expr) -> bool:
        """Whether `node` is a tuple of tensors (chunk/split/unbind results, module outputs)."""
        if isinstance(node, ast.Name):
            key = self._key(node)
            return key in self.tuples or self.kinds.get(key) == ("seq", "tensor")
        if isinstance(node, ast.Subscript):
            if self.is_tuple(node.value) and isinstance(node.slice, ast.Slice):
                return True
            return self._kind(node) == ("seq", "tensor")
        if isinstance(node, ast.ListComp):
            return self.is_tensor(node.elt)
        if isinstance(node, (ast.List, ast.Tuple)):
            return bool(node.elts) and all(self.is_tensor(e) for e in node.elts)
        if isinstance(node, ast.IfExp):
            return self.is_tuple(node.body) and self.is_tuple(node.orelse)
        if isinstance(node, ast.Call):
            func = node.func
            qualname = self.resolve(func)
            if qualname in _TUPLE_TORCH:
                return True
            if isinstance(func, ast.Attribute) and func.attr in TUPLE_METHODS:
                return self.is_tensor(func.value)
            if (attr := self._evident(node)) is not None:
                return self.evident[attr][0] == "tuple"
            kind = self._kind(node)
            if self._module_call(node) and (kind is None or tensor_items(kind)):
                return True
            return kind == ("seq", "tensor")
        return False

    def is_tensor(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return self._key(node) in self.names
        if isinstance(node, ast.Call):
            func = node.func
            if (attr := self._evident(node)) is not None:
                return self.evident[attr][0] == "tensor"
            if self._module_call(node):
                return self._kind(node) in (None, "tensor", "tensors")
            if isinstance(func, ast.Attribute) and not (
                isinstance(func.value, ast.Name) and func.value.id == "self"
            ):
                if self.is_tensor(func.value):
                    return func.attr not in NOT_TENSOR_METHODS
            qualname = self.resolve(func)
            if qualname and qualname.startswith("torch.") and qualname not in NOT_TENSOR_TORCH:
                return not qualname.startswith(
                    (
                        "torch.jit.",
                        "torch.fx.",
                        "torch.cuda.",
                        "torch.distributed.",
                        "torch.compiler.",
                    )
                )
            return self._kind(node) == "tensor"
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return node.attr in self.tensor_attrs
            return node.attr in {"T", "mT", "H", "mH", "data", "real", "imag"} and self.is_tensor(
                node.value
            )
        if isinstance(node, ast.BinOp):
            if any(is_container(side) for side in (node.left, node.right)):
                return False
            return self.is_tensor(node.left) or self.is_tensor(node.right)
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not) and self.is_tensor(node.operand)
        if isinstance(node, ast.Subscript):
            if self.is_tensor(node.value):
                return True
            if self.is_tuple(node.value):
                return not isinstance(node.slice, ast.Slice)
            return self._kind(node) == "tensor"
        if isinstance(node, ast.IfExp):
            return self.is_tensor(node.body) and self.is_tensor(node.orelse)
        if isinstance(node, ast.Compare):
            return self._compare(node) == "tensor"
        return False


def tensor_items(kind: Kind) -> bool:
    """Whether a value of `kind` is a tuple or sequence of tensors (a module's tuple output)."""
    if kind == ("seq", "tensor"):
        return True
    return isinstance(kind, tuple) and kind[0] == "tuple" and all(k == "tensor" for k in kind[1])


_ITERATED = ast.Constant(value=None)
"""The index of `_item(iterable)`: any one of its items."""


def _item(iterable: ast.expr) -> ast.expr:
    """An expression standing for an item of `iterable`."""
    return ast.Subscript(value=iterable, slice=_ITERATED, ctx=ast.Load())


def _unpacked(target: ast.Tuple | ast.List, value: ast.expr):
    """(element, the item of `value` it takes) of a tuple target (a starred element takes
    `value` itself)."""
    elts = target.elts
    star = next((i for i, e in enumerate(elts) if isinstance(e, ast.Starred)), None)
    for i, elt in enumerate(elts):
        if i == star:
            yield elt, value
            continue
        index = i if star is None or i < star else i - len(elts)
        yield elt, ast.Subscript(value=value, slice=ast.Constant(index), ctx=ast.Load())


_TUPLE_TORCH = frozenset(("torch.chunk", "torch.split", "torch.unbind", "torch.tensor_split"))
_MUTATORS = frozenset(("append", "extend", "insert"))


_PLAIN_BUILTINS = frozenset(
    """len int float bool str range round isinstance hasattr id list tuple dict set
    sorted zip enumerate reversed any all
    callable type repr format hash divmod""".split()
)
_SCALAR_BUILTINS = frozenset(
    "range len int float bool str round isinstance hasattr id callable repr format hash any all".split()
)
_PLAIN_MODULES = frozenset("math numbers typing warnings logging collections itertools".split())


def _parameters(func: ast.FunctionDef) -> list[ast.arg]:
    params = [a for a in (*func.args.posonlyargs, *func.args.args) if a.arg != "self"]
    return params + func.args.kwonlyargs


_BINDING = frozenset(
    {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension}
    | {ast.NamedExpr, ast.withitem, ast.ExceptHandler, ast.MatchAs, ast.MatchStar}
    | {ast.MatchMapping}
)
"""The node classes `_bindings` finds bindings in (the others bind nothing)."""


def _bindings(node: ast.AST):
    """(name, value or None when not known) for each name `node` binds; a loop's target takes
    an item of what it iterates."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            yield from _targets(target, node.value)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        yield node.target.id, ast.BinOp(node.target, node.op, node.value)
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        yield from _loop_targets(node.target, node.iter)
    elif isinstance(node, ast.NamedExpr):
        yield node.target.id, node.value
    elif isinstance(node, ast.withitem):
        if node.optional_vars is not None:
            yield from _targets(node.optional_vars, None)
    elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
        yield node.name, None  # `case (p, q)`, `case Box() as b`: any value
    elif isinstance(node, ast.MatchMapping) and node.rest:
        yield node.rest, None


def _loop_targets(target: ast.expr, iterable: ast.expr):
    """`_bindings` of a loop target: `range` gives counts, `zip` and `enumerate` are taken
    apart, anything else gives an item of the iterable."""
    name = (
        iterable.func.id
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)
        else None
    )
    args = iterable.args if isinstance(iterable, ast.Call) else []
    elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else []
    starred = any(isinstance(e, ast.Starred) for e in [*args, *elts])
    if name == "range":
        yield from _targets(target, ast.Constant(0))
    elif name == "zip" and len(elts) == len(args) and not starred:
        for elt, arg in zip(elts, args):
            yield from _loop_targets(elt, arg)
    elif name == "enumerate" and len(elts) == 2 and args and not starred:
        yield from _targets(elts[0], ast.Constant(0))  # `for i, item in enumerate(...)`
        yield from _loop_targets(elts[1], args[0])
    elif name in ("reversed", "list", "tuple", "sorted") and len(args) == 1 and not starred:
        yield from _loop_targets(target, args[0])
    elif name in _PLAIN_BUILTINS or name in ("map", "filter", "iter"):
        yield from _targets(target, None)
    else:
        yield from _targets(target, _item(iterable))


_STORING = frozenset({ast.Call, ast.Assign, ast.AugAssign})
"""The node classes `_stored_items` finds stores in."""
_DECLARING = frozenset({ast.arg, ast.AnnAssign})
"""The node classes `_seed` reads declarations from."""
_EVIDENT = frozenset({ast.Attribute, ast.Call})
"""The node classes `_seed` reads evidence of a tensor from."""
_STEPS = frozenset({ast.Assign, ast.AnnAssign, ast.For, ast.comprehension})
"""The node classes `_propagate` steps through."""
_GROUPS = {
    "binding": _BINDING,
    "storing": _STORING,
    "declaring": _DECLARING,
    "evident": _EVIDENT,
    "step": _STEPS,
    "arg": frozenset({ast.arg}),
    "def": frozenset({ast.FunctionDef}),
}
_ROLES = {
    cls: tuple(group for group, classes in _GROUPS.items() if cls in classes)
    for cls in frozenset().union(*_GROUPS.values())
}
"""Node class -> the groups (`_GROUPS`) its nodes go in."""


def _grouped(nodes: list[ast.AST]) -> dict[str, list[ast.AST]]:
    """The nodes of each group of `_GROUPS`, in their order: one pass over a function's nodes
    (a lookup per node, where a pass per group tested each node again)."""
    groups: dict[str, list[ast.AST]] = {group: [] for group in _GROUPS}
    for node in nodes:
        for group in _ROLES.get(type(node), ()):
            groups[group].append(node)
    return groups


def _stored_items(node: ast.AST):
    """(name, what is stored) for each item stored into a named container: a list of it for
    `sizes.append(n)`, the container itself for `.extend(...)`, a one-key dict for `sizes[i] =
    n` (None: not known, `d.update(...)`)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        root, method = _root(node.func.value), node.func.attr
        if root is not None:
            if method in ("append", "insert") and node.args:
                yield root, ast.List(elts=[node.args[-1]], ctx=ast.Load())
            elif method == "extend" and node.args:
                yield root, node.args[0]
            elif method in ("update", "setdefault", "add", "__setitem__"):
                yield root, None
    elif isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            root = _root(target) if isinstance(target, ast.Subscript) else None
            if root is not None:
                assert isinstance(target, ast.Subscript)  # `_root` of a subscript
                value = (
                    ast.BinOp(target, node.op, node.value)
                    if isinstance(node, ast.AugAssign)
                    else node.value
                )
                yield root, ast.Dict(keys=[target.slice], values=[value])


def _root(node: ast.expr) -> str | None:
    """The name a chain of subscripts starts from (`d` of `d[k][0]`)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _targets(target: ast.expr, value: ast.expr | None):
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        if (
            isinstance(value, (ast.Tuple, ast.List))
            and len(value.elts) == len(target.elts)
            and not any(isinstance(e, ast.Starred) for e in value.elts)
        ):
            for elt, part in zip(target.elts, value.elts):
                yield from _targets(elt, part)
            return
        if value is None:
            for elt in target.elts:
                yield from _targets(elt, None)
            return
        for elt, item in _unpacked(target, value):  # `h, w = x.shape[-2:]`: items of the value
            if isinstance(elt, ast.Starred):
                yield from _targets(elt.value, None)
            else:
                yield from _targets(elt, item)
    elif isinstance(target, ast.Starred):
        yield from _targets(target.value, None)


def is_container(node: ast.expr) -> bool:
    """A literal that is certainly not a tensor (list, tuple, string, ...)."""
    return isinstance(node, _NOT_TENSOR_LITERALS) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )
