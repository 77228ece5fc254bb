"""Analysis of one `nn.Module` subclass: its attributes, the methods on its forward path and
how often they run, the names it may take, where new modules are created, and which reused
modules can be split."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from migrator import catalog
from migrator.catalog import Op
from migrator.refusal import Refusal
from migrator.rewrite.context import MANY, FileContext, Site, self_attr
from migrator.rewrite.helpers import report_helper_ops
from migrator.rewrite.names import literal
from migrator.rewrite.order import LAST, Key, entry_keys
from migrator.rewrite.paths import most_runs
from migrator.rewrite.plan import Replace
from migrator.rewrite.project import ClassInfo
from migrator.rewrite.scan import Scanner
from migrator.rewrite.subclasses import subclass_files
from migrator.rewrite.tensors import NOT_TENSOR_TORCH, TensorNames
from migrator.rewrite.walk import header_lines

# Reading these in a method means the class's behaviour depends on its set of submodules.
_SUBMODULE_VIEWS = frozenset("children named_children modules named_modules _modules".split())
_CONTAINERS = frozenset(f"torch.nn.{c}" for c in
                       "Sequential ModuleList ModuleDict ParameterList ParameterDict".split())


@dataclass
class InitAttr:
    """An attribute assigned in `__init__`."""

    name: str
    stmt: ast.stmt
    value: ast.expr
    top_index: int
    """Index of the top-level `__init__` statement holding the assignment."""
    nested: bool
    count: int = 1


@dataclass
class Registration:
    """A module the rewrite creates in `__init__`, placed where forward runs it."""

    key: Key
    """When forward first runs it (see `order`)."""
    code: str
    deps: set[str]
    """`self` attributes its constructor arguments read: it must come after them."""
    copy_of: InitAttr | None = None
    """The module it copies (a split): it must come after it, in the same block."""


class ClassAnalysis:
    """Analysis of one `nn.Module` subclass."""

    def __init__(self, ctx: FileContext, cls: ClassInfo) -> None:
        self.ctx = ctx
        self.cls = cls
        self.methods = cls.methods()
        self.init = self.methods.get("__init__")
        self.attrs: dict[str, InitAttr] = {}
        self.assigned_elsewhere: set[str] = set()
        self.tensor_attrs: set[str] = set()
        self.plain_attrs: set[str] = set()
        """Attributes `__init__` sets to a number or string it computes (`float(rate)`)."""
        self.sites: dict[str, list[Site]] = {}
        self.super_index = self._super_index()
        self.registrations: list[Registration] = []
        self.runs: list[tuple[Key, str]] = []
        """(key, attribute) of every call of a module attribute on the forward path."""
        self._entries: dict[str, Key] = {}
        self._inherited: dict[str, ClassInfo] | None = None
        self._collect_attributes()
        self.taken = self._taken_names()

    # -- class facts ---------------------------------------------------------------------------
    def _super_index(self) -> int | None:
        if self.init is None:
            return None
        for i, stmt in enumerate(self.init.body):
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                func = stmt.value.func
                if isinstance(func, ast.Attribute) and func.attr == "__init__":
                    owner = func.value
                    if (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name)
                            and owner.func.id == "super"):
                        return i
                    if self.ctx.info.names.resolve(owner) or (
                            isinstance(owner, ast.Name) and owner.id in self.ctx.info.classes):
                        return i
        return None

    def _collect_attributes(self) -> None:
        for name, method in self.methods.items():
            for node in (v.node for v in self.ctx.visits(method)):
                targets: list[ast.expr] = []
                value = None
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                    targets, value = [node.target], getattr(node, "value", None)
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr in ("register_buffer", "register_parameter")
                      and node.args and isinstance(node.args[0], ast.Constant)):
                    self.tensor_attrs.add(str(node.args[0].value))
                for target in targets:
                    if not self_attr(target):
                        continue
                    if name != "__init__" or value is None or isinstance(node, ast.AugAssign):
                        self.assigned_elsewhere.add(target.attr)
                        continue
                    self._record_init_attr(target.attr, node, value)

    def _record_init_attr(self, attr: str, stmt: ast.stmt, value: ast.expr) -> None:
        top_index, nested = self._top_level(stmt)
        if attr in self.attrs:
            self.attrs[attr].count += 1
            self.attrs[attr].nested = True
            self.attrs[attr].top_index = max(self.attrs[attr].top_index, top_index)
        else:
            self.attrs[attr] = InitAttr(attr, stmt, value, top_index, nested)
        kind = _value_kind(value, self.ctx.info.names.resolve)
        if kind == "tensor":
            self.tensor_attrs.add(attr)  # a parameter, buffer, or plain tensor attribute
        elif kind == "plain":
            self.plain_attrs.add(attr)

    def _top_level(self, stmt: ast.stmt) -> tuple[int, bool]:
        for i, top in enumerate(self.init.body):
            if top is stmt:
                return i, False
            if top.lineno <= stmt.lineno <= top.end_lineno:
                return i, True
        return len(self.init.body) - 1, True

    def module_attrs(self) -> set[str]:
        """Attributes that hold modules: assigned a call (not a parameter), another name for
        one (`self.b = self.a`), or set elsewhere."""
        attrs = {a for a, info in self.attrs.items()
                 if isinstance(info.value, (ast.Call, ast.IfExp))
                 and a not in self.tensor_attrs and a not in self.plain_attrs}
        attrs |= set(self._aliases()) | set(self.inherited_modules())
        return attrs | (self.assigned_elsewhere - set(self.methods) - self.tensor_attrs)

    def inherited_modules(self) -> dict[str, ClassInfo]:
        """Module attributes a base class creates in its `__init__` and this class does not
        assign: attribute -> the nearest base assigning it."""
        if self._inherited is None:
            self._inherited = {}
            for base in self._ancestors(self.cls):
                init = base.methods().get("__init__")
                for node in ast.walk(init) if init is not None else ():
                    if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Call, ast.IfExp)):
                        for target in node.targets:
                            if (self_attr(target) and target.attr not in self.attrs
                                    and target.attr not in self.assigned_elsewhere
                                    and _value_kind(node.value, base.file.names.resolve) is None):
                                self._inherited.setdefault(target.attr, base)
        return self._inherited

    def _aliases(self) -> dict[str, str]:
        """`self.b = self.a` in `__init__` (b assigned once), where a holds a module: b -> a."""
        return {a: info.value.attr for a, info in self.attrs.items()
                if self_attr(info.value) and info.count == 1 and info.value.attr in self.attrs
                and isinstance(self.attrs[info.value.attr].value, (ast.Call, ast.IfExp))
                and info.value.attr not in self.tensor_attrs}

    def _container(self) -> str | None:
        """Why a new submodule would change behaviour: the class is a torch.nn container, or
        it iterates over its own submodules (None: neither)."""
        for cls in [self.cls, *self._ancestors(self.cls)]:
            for base in cls.bases:
                if base in _CONTAINERS:
                    return f"the class derives from `{base.replace('torch.nn.', 'nn.')}`"
        for method in self.methods.values():
            for visit in self.ctx.visits(method):
                node = visit.node
                if (isinstance(node, ast.Attribute) and node.attr in _SUBMODULE_VIEWS
                        and isinstance(node.value, ast.Name) and node.value.id == "self"
                        and method.name != "__init__"):
                    return f"`{method.name}` goes through `self.{node.attr}`"
        return None

    def _family(self) -> list[ClassInfo]:
        """This class, its ancestors that can be found, and its subclasses in the same file."""
        family, todo = [], [self.cls]
        while todo:
            cls = todo.pop()
            if cls in family:
                continue
            family.append(cls)
            todo += [c for b in cls.bases if (c := self.ctx.project.find_class(b, cls.file))]
        for other in self.ctx.info.classes.values():
            if other not in family and any(anc in family for anc in self._ancestors(other)):
                family.append(other)
        return family

    def _ancestors(self, cls: ClassInfo) -> list[ClassInfo]:
        found, todo = [], [cls]
        while todo:
            current = todo.pop()
            for base in current.bases:
                parent = self.ctx.project.find_class(base, current.file)
                if parent is not None and parent not in found:
                    found.append(parent)
                    todo.append(parent)
        return found

    def _taken_names(self) -> set[str]:
        taken = set(catalog.MODULE_ATTRIBUTES)
        created = self.ctx.project.created
        own = self._class_names(self.cls)
        for cls in self._family():
            if cls.file is not self.ctx.info:
                self.ctx.work_out(cls.file)
            taken |= created.get(cls.qualname, set())
            clash = sorted(own & created.get(cls.qualname, set())) if cls is not self.cls else []
            if clash and cls.file is not self.ctx.info:
                self.ctx.report(self.cls.node, "MIG111",
                                f"`self.{clash[0]}` is also the name of the module migrator creates "
                                f"in base class `{cls.name}`; rename this attribute")
            taken |= self._class_names(cls)
        for sub in self._subclasses_elsewhere():  # their names, not what migrator creates there
            taken |= self._class_names(sub)
        return taken

    def _subclasses_elsewhere(self) -> list[ClassInfo]:
        """Subclasses of this class in other files of its package."""
        path = self.ctx.info.path
        if path is None or not path.exists():
            return []
        found: list[ClassInfo] = []
        names, todo = {self.cls.name}, [self.cls.name]
        while todo:
            for file in subclass_files(path, {todo.pop()}):
                info = self.ctx.project.load_file(file)
                if info is None or info is self.ctx.info:
                    continue
                for other in info.classes.values():
                    if other not in found and self.cls in self._ancestors(other):
                        found.append(other)
                        if other.name not in names:
                            names.add(other.name)
                            todo.append(other.name)
        return found

    def _class_names(self, cls: ClassInfo) -> set[str]:
        if cls.qualname not in self.ctx.class_names:
            self.ctx.class_names[cls.qualname] = _names_defined(cls.node, self.ctx.visits)
        return self.ctx.class_names[cls.qualname]

    def new_name(self, base: str) -> str:
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        self.ctx.project.created.setdefault(self.cls.qualname, set()).add(name)
        return name

    # -- forward path --------------------------------------------------------------------------
    def reach(self) -> dict[str, int]:
        """How many times each method of this class runs per forward call: the most over this
        class and its subclasses in the same file, whose overrides and `super()` calls can make
        a helper run more often."""
        most: dict[str, int] = {}
        for overrides in [{}, *(self._overrides(sub) for sub in self._subclasses_in_file())]:
            for name, times in self._counts(overrides).items():
                most[name] = max(most.get(name, 0), times)
        return {name: times for name, times in most.items()
                if times > 0 and name != "__init__" and not _static(self.methods[name])}

    def _counts(self, overrides: dict[str, ast.FunctionDef]) -> dict[str, int]:
        """Run counts of this class's methods when `overrides` replace some of them."""
        def target(name: str) -> tuple[str, str] | None:
            if name in overrides:
                return ("sub", name)
            return ("own", name) if name in self.methods else None

        functions = {("own", n): f for n, f in self.methods.items()}
        functions.update({("sub", n): f for n, f in overrides.items()})
        calls: dict[tuple[str, str], list[tuple[tuple[str, str], bool]]] = {}
        for key, function in functions.items():
            for visit in self.ctx.visits(function):
                node = visit.node
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                    continue
                owner, name = node.func.value, node.func.attr
                if self_attr(node.func):
                    callee = target(name)
                elif (key[0] == "sub" and isinstance(owner, ast.Call)
                      and isinstance(owner.func, ast.Name) and owner.func.id == "super"):
                    callee = ("own", name) if name in self.methods else None
                else:
                    continue
                if callee and callee != key:
                    calls.setdefault(callee, []).append((key, visit.repeated))
        entry = target("forward")
        counts: dict[tuple[str, str], int] = {}

        def count(key: tuple[str, str], stack: tuple) -> int:
            if key == entry:
                return 1
            if key in stack:
                return MANY
            if key not in counts:
                total = 0
                for caller, repeated in calls.get(key, []):
                    times = count(caller, stack + (key,))
                    total += MANY if (repeated and times) else times
                counts[key] = min(total, MANY)
            return counts[key]

        return {name: count(("own", name), ()) for name in self.methods}

    def _subclasses_in_file(self) -> list[ClassInfo]:
        return [c for c in self.ctx.info.classes.values()
                if c is not self.cls and self.cls in self._ancestors(c)]

    def _overrides(self, sub: ClassInfo) -> dict[str, ast.FunctionDef]:
        """Methods a subclass (and the classes between) define over this class's."""
        chain, current = [], sub
        while current is not None and current is not self.cls:
            chain.append(current)
            current = next((p for b in current.bases
                            if (p := self.ctx.project.find_class(b, current.file))
                            and (p is self.cls or self.cls in self._ancestors(p))), None)
        overrides: dict[str, ast.FunctionDef] = {}
        for cls in reversed(chain):
            overrides.update(cls.methods())
        return overrides

    def run(self) -> None:
        forward = self.methods.get("forward")
        if forward is None:
            return
        self._check_signature(forward)
        module_attrs = self.module_attrs()
        reached = self.reach()
        self._entries = entry_keys(self.methods, self._method_calls, self.ctx.positions_of)
        for name, times in reached.items():
            method = self.methods[name]
            self._record_runs(method, module_attrs)
            if self.ctx.skip.intersection(header_lines(method)):
                continue
            tensors = TensorNames(method, [v.node for v in self.ctx.visits(method)],
                                  lambda n, s=self.ctx.locals_of(method):
                                  self.ctx.info.names.resolve(n, s), module_attrs, self.tensor_attrs)
            scanner = Scanner(self, method, times, tensors, module_attrs)
            scanner.scan()
        if "MIG115" not in self.ctx.disable:
            report_helper_ops(self.ctx, self.cls.name, self.methods,
                              [self.methods[name] for name in reached])
        self._split_reused()
        self._place_registrations()

    def key(self, method: ast.FunctionDef, node: ast.AST) -> Key:
        """When `node` of `method` runs on the forward path (see `order`)."""
        entry = self._entries.get(method.name)
        return LAST if entry is None else entry + (self.ctx.positions_of(method)[id(node)],)

    def _method_calls(self, method: ast.FunctionDef) -> list[tuple[str, ast.AST]]:
        return [(v.node.func.attr, v.node) for v in self.ctx.visits(method)
                if isinstance(v.node, ast.Call) and self_attr(v.node.func)
                and v.node.func.attr in self.methods]

    def _record_runs(self, method: ast.FunctionDef, module_attrs: set[str]) -> None:
        """Calls of module attributes (`self.conv(x)`, `self.blocks[i](x)`, `for b in
        self.blocks`) in `method`, also of attributes holding what `__init__` was given."""
        for visit in self.ctx.visits(method):
            node, owner = visit.node, None
            if isinstance(node, ast.Call):
                owner = node.func.value if isinstance(node.func, ast.Subscript) else node.func
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                owner = node.iter
            if self_attr(owner) and (owner.attr in module_attrs or owner.attr in self.attrs):
                self.runs.append((self.key(method, node), owner.attr))

    def _check_signature(self, forward: ast.FunctionDef) -> None:
        args = forward.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            if arg.annotation is not None and _is_dict_annotation(arg.annotation):
                self.ctx.report(arg, "MIG201", f"forward input `{arg.arg}` is a dict")
        if forward.returns is not None and _is_dict_annotation(forward.returns):
            self.ctx.report(forward, "MIG201", "forward is annotated to return a dict")
            return
        for node in (v.node for v in self.ctx.visits(forward)):
            if isinstance(node, ast.Return) and (isinstance(node.value, ast.Dict) or (
                    isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                    and node.value.func.id == "dict")):
                self.ctx.report(node, "MIG201", "forward returns a dict")

    # -- creating modules ----------------------------------------------------------------------
    def hyper(self, node: ast.expr, shadowed: set[str]) -> tuple[str, set[str]]:
        """(source text valid in `__init__`, `self` attributes it depends on) of a
        hyper-parameter; raises a refusal when its value is not fixed at `__init__` time.
        `shadowed`: the names the calling method binds itself."""
        deps: set[str] = set()
        replace: dict[str, ast.expr] = {}
        init_locals = self.ctx.locals_of(self.init) if self.init else set()
        for part in ast.walk(node):
            if isinstance(part, ast.Name) and part.id != "self":
                if part.id in shadowed:
                    raise Refusal("MIG101", f"`{part.id}` is a local value of the method")
                if part.id in init_locals and part.id in self.ctx.info.names.constants:
                    replace[part.id] = self.ctx.info.names.constants[part.id]
                elif part.id in init_locals:
                    raise Refusal("MIG101", f"`{part.id}` means something else in `__init__`")
        reason = self._unfixed(node, deps)
        if reason:
            raise Refusal("MIG101", reason)
        text = self.ctx.text(node)
        if replace:  # constants shadowed in `__init__` are written out as their values
            names = sorted((n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in replace),
                           key=lambda n: (n.lineno, n.col_offset), reverse=True)
            if any(n.lineno != node.lineno for n in names) or node.lineno != node.end_lineno:
                raise Refusal("MIG101", "a constant it uses means something else in `__init__`")
            start = self.ctx.positions.column(node.lineno, node.col_offset)
            for name in names:
                a = self.ctx.positions.column(name.lineno, name.col_offset) - start
                b = self.ctx.positions.column(name.lineno, name.end_col_offset) - start
                text = text[:a] + self.ctx.text(replace[name.id]) + text[b:]
        return text, deps

    def _unfixed(self, node: ast.expr, deps: set[str]) -> str | None:
        """Why `node` is not fixed at `__init__` time (None: it is); collects `self` deps."""
        if literal(node):
            return None
        if isinstance(node, ast.Name):
            return (None if node.id in self.ctx.info.names.constants
                    else f"`{node.id}` is not a module-level constant")
        if self_attr(node):
            info = self.attrs.get(node.attr)
            if info is None or node.attr in self.assigned_elsewhere:
                return f"`self.{node.attr}` is not assigned only in `__init__`"
            if info.nested:
                return f"`self.{node.attr}` is assigned conditionally or repeatedly in `__init__`"
            if node.attr in self.module_attrs() or node.attr in self.tensor_attrs:
                return f"`self.{node.attr}` is a module or a tensor"
            deps.add(node.attr)
            return None
        if isinstance(node, ast.Attribute) and self.ctx.info.names.resolve(node):
            return None
        if isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            parts = [node.operand]
        elif isinstance(node, (ast.Tuple, ast.List)):
            parts = list(node.elts)
        else:
            return "it is computed at run time"
        return next((r for r in (self._unfixed(p, deps) for p in parts) if r), None)

    def _can_create(self) -> None:
        """Raise a refusal when `__init__` has no safe place for a new module."""
        container = self._container()
        if container:
            raise Refusal("MIG109", f"{container}: a new submodule would join the modules it "
                                    "goes through")
        if self.init is None:
            return
        if self.super_index is None:
            raise Refusal("MIG109", "`__init__` has no `super().__init__()` call to create the "
                                     "module after")
        if self.init.body[self.super_index].lineno == self.init.lineno:
            raise Refusal("MIG109", "`__init__` is written on one line: put its body on lines "
                                     "of its own first")

    def create(self, op: Op, ctor: list[str], deps: set[str], key: Key) -> str:
        """Plan `self.<name> = <Module>(...)` in `__init__`; return the new attribute name.

        A class without an `__init__` of its own gets one that passes every argument on."""
        self._can_create()
        made = self.ctx.project.find_class(op.module)
        if made is not None and (made is self.cls or self.cls in self._ancestors(made)):
            raise Refusal("MIG116", f"the module it would become, `{op.module_name}`, is this "
                                     f"class{'' if made is self.cls else ' or a subclass of it'}: "
                                     "creating it in `__init__` would recurse; left as is")
        module = self.ctx.module_ref(op.module)
        name = self.new_name(op.key)
        self.registrations.append(Registration(key, f"self.{name} = {module}({', '.join(ctor)})",
                                               deps))
        return name

    def _place_registrations(self) -> None:
        """Insert the new modules in `__init__` in forward's order: each right after the
        existing module that runs before it (and after what its arguments read)."""
        if not self.registrations:
            return
        registrations = sorted(self.registrations, key=lambda r: r.key)
        if self.init is None:
            body = "".join(f"    {r.code}\n" for r in registrations)
            first = next(s for s in self.cls.node.body
                         if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))
            self.ctx.plan.insert_before(first.lineno,
                                        "def __init__(self, *args, **kwargs):\n"
                                        "    super().__init__(*args, **kwargs)\n" + body)
            return
        runs = sorted((key, self.attrs[attr].top_index) for key, attr in self.runs
                      if attr in self.attrs)
        floor = self.super_index
        for registration in registrations:
            line, floor = self._line_for(registration, runs, floor)
            self.ctx.plan.insert_after(line, registration.code)

    def _line_for(self, registration: Registration, runs: list[tuple[Key, int]],
                  floor: int) -> tuple[int, int]:
        """(line of the `__init__` statement the registration goes after, the top-level index
        the next registration may not precede): after the existing module that runs before it,
        what its arguments read, and the modules created before it."""
        index = max([floor] + [self.attrs[d].top_index for d in registration.deps])
        before = [top for key, top in runs if key < registration.key]
        preceding = max(before[-1], index) if before else index
        original = registration.copy_of
        if original is None:
            return self.init.body[preceding].lineno, preceding
        if original.nested or not self._unchanged_between(original, preceding):
            return original.stmt.lineno, floor
        index = max(preceding, original.top_index)
        return self.init.body[index].lineno, index

    def _unchanged_between(self, original: InitAttr, index: int) -> bool:
        """Whether the names a module's constructor reads keep their values from its own
        statement to the end of top-level statement `index` of `__init__`."""
        names = {n.id for n in ast.walk(original.value) if isinstance(n, ast.Name)} - {"self"}
        attrs = {n.attr for n in ast.walk(original.value) if self_attr(n)}
        for stmt in self.init.body[original.top_index + 1:index + 1]:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and (
                        node.id in names):
                    return False
                if self_attr(node) and not isinstance(node.ctx, ast.Load) and node.attr in attrs:
                    return False
        return True

    # -- reused modules ------------------------------------------------------------------------
    def _split_reused(self) -> None:
        for alias, target in self._aliases().items():  # `self.b = self.a`: calls of b are a's
            if alias in self.sites:
                merged = self.sites.setdefault(target, []) + self.sites.pop(alias)
                self.sites[target] = sorted(merged, key=lambda s: (s.func.lineno, s.func.col_offset))
        for attr, sites in self.sites.items():
            times = _runs(sites)
            if times < 2:
                for site in sites:
                    if site.pending:
                        replace, node, message, op = site.pending
                        self.ctx.plan.replaces.append(replace)
                        self.ctx.report(node, "MIG001", message, op=op, attr=replace.attr)
                continue
            first = sites[0].func
            try:
                kind = self._split_kind(attr, sites)
            except Refusal as refusal:
                self.ctx.refuse(first, refusal)
                continue
            if "MIG003" in self.ctx.disable:
                continue
            sites = sorted(sites, key=lambda s: not s.skipped)  # a skipped call keeps the name
            info = self.attrs[attr]
            for site in sites[1:]:
                name = self.new_name(attr)
                code = f"self.{name} = {self.ctx.block_text(info.value, info.stmt)}"
                self.registrations.append(Registration(site.key, code, set(), info))
                self.ctx.plan.replaces.append(Replace("rename", self.ctx.positions.span(site.func),
                                                      name))
                self.ctx.report(site.func, "MIG003",
                                f"`self.{attr}` ({kind}) is called at {len(sites)} sites: this one "
                                f"becomes `self.{name}`", op=f"self.{attr}", module=kind, attr=name)

    def _split_kind(self, attr: str, sites: list[Site]) -> str:
        info = self.attrs.get(attr)
        where = f"`self.{attr}` is called {'in a loop' if any(s.times >= MANY for s in sites) else f'at {len(sites)} sites'}"
        if info is None and attr in self.inherited_modules():
            raise Refusal("MIG104", f"{where} but is created in base class "
                                     f"`{self.inherited_modules()[attr].name}`: give this class "
                                     "its own module for each site")
        if info is None:
            raise Refusal("MIG104", f"{where} but is not assigned in this class's `__init__`, so "
                                     "its class cannot be known")
        value = info.value
        verdict = self.ctx.project.value_stateless(value, self.ctx.info)
        label = self.ctx.text(value.func) if isinstance(value, ast.Call) else self.ctx.text(value)
        if verdict is False:
            raise Refusal("MIG103", f"{where} and `{label}` may hold parameters or buffers: copies "
                                     "would untie its weights; give each site its own module")
        if verdict is None:
            raise Refusal("MIG104", f"{where} and the class of `{self.ctx.text(value)}` cannot be "
                                     "known statically; split it by hand if it is stateless")
        if any(s.times >= MANY for s in sites):
            raise Refusal("MIG105", f"{where}: one module object serves every iteration; unroll "
                                     "the loop or use an nn.ModuleList")
        if any(s.times > 1 for s in sites):
            raise Refusal("MIG110", f"{where} inside a helper method that runs more than once per "
                                     "forward")
        if info.count > 1 or info.nested and _one_line_suite(self.init, info.stmt):
            raise Refusal("MIG104", f"{where} but is assigned at several places in `__init__`")
        if sum(s.skipped for s in sites) > 1:
            raise Refusal("MIG112", f"{where}, several of them under `# migrator: skip`")
        return label


def _runs(sites: list[Site]) -> int:
    """How many times one forward runs the module the sites call: the sum over methods of the
    most calls on one path through each (calls in exclusive branches do not add up)."""
    by_method: dict[int, list[Site]] = {}
    for site in sites:
        by_method.setdefault(id(site.method), []).append(site)
    total = 0
    for group in by_method.values():
        method, times = group[0].method, max(s.times for s in group)
        if method is None or times >= MANY:
            total += sum(s.times for s in group)
        else:
            total += times * most_runs(method, [s.func for s in group])
    return min(total, MANY)


_PLAIN_CALLS = frozenset("float int bool str len round".split())


def _value_kind(value: ast.expr, resolve) -> str | None:
    """'tensor' (a parameter, buffer or tensor made by torch), 'plain' (a number or string
    made by a builtin or `math`) or None (anything else: a module when it is a call)."""
    made_by = resolve(value.func if isinstance(value, ast.Call) else value)
    if made_by in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer") or (
            isinstance(value, ast.Call) and made_by and made_by.startswith("torch.")
            and not made_by.startswith("torch.nn.") and made_by not in NOT_TENSOR_TORCH):
        return "tensor"
    if isinstance(value, ast.Call) and ((isinstance(value.func, ast.Name) and made_by is None
                                         and value.func.id in _PLAIN_CALLS)
                                        or (made_by or "").startswith("math.")):
        return "plain"
    return None


def _static(method: ast.FunctionDef) -> bool:
    """A static or class method: it has no `self` to hold modules."""
    return any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
               for d in method.decorator_list)


def _names_defined(cls: ast.ClassDef, visits) -> set[str]:
    """Attribute, method and class-level names a class defines or uses on `self`."""
    names: set[str] = set()
    for stmt in cls.body:
        nodes = (v.node for v in visits(stmt)) if isinstance(stmt, ast.FunctionDef) else ast.walk(stmt)
        for node in nodes:
            if isinstance(node, ast.Attribute) and self_attr(node):
                names.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
    return names


def _one_line_suite(init: ast.FunctionDef, stmt: ast.stmt) -> bool:
    return any(parent is not stmt and parent.lineno == stmt.lineno
               for parent in ast.walk(init) if isinstance(parent, ast.stmt))


def _is_dict_annotation(node: ast.expr) -> bool:
    head = ast.unparse(node).split("[", 1)[0].split(".")[-1]
    return head in {"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "TypedDict"}
