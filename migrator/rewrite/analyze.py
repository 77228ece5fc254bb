"""Analyse one source file: find every catalog op and reused module on the forward path of each
`nn.Module` subclass, decide what can be rewritten safely, and report what cannot and why.

The result is a `Plan` (applied by the codemod) and a list of `Finding`s. Only `ast` is used
here, so `migrator check` never pays for a LibCST parse.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from migrator import catalog
from migrator.catalog import FIXED, HYPER, IGNORED, INPUT, INPUTS, REQUIRED, TRAINING, WEIGHT, Op
from migrator.findings import Finding
from migrator.rewrite.names import function_locals, literal
from migrator.rewrite.plan import Plan, Positions, Replace
from migrator.rewrite.project import ClassInfo, FileInfo, Project
from migrator.rewrite.tensors import TensorNames
from migrator.rewrite.walk import Visit, header_lines, walk

SKIP_PRAGMA = re.compile(r"#\s*migrator:\s*skip\b")
MANY = 1 << 30
"""Call count standing for 'runs an unknown number of times' (loops)."""

# Modules whose output may be their input object itself: an in-place op on their result is not
# provably free of effects elsewhere.
_FRESH_OUTPUT = frozenset(f"torch.nn.{c}" for c in """
    Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d Linear Bilinear
    BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm LayerNorm GroupNorm InstanceNorm1d
    InstanceNorm2d InstanceNorm3d RMSNorm Embedding MaxPool1d MaxPool2d MaxPool3d AvgPool1d
    AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d Upsample
""".split())


# Reading these from a tensor does not share it.
_BENIGN_ATTRIBUTES = frozenset("shape dtype device ndim size dim numel is_contiguous".split())
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
class Site:
    """A call of a module attribute (`self.act(x)`) on the forward path."""

    attr: str
    func: ast.Attribute
    times: int
    pending: tuple[Replace, ast.AST, str] | None = None
    """A rewrite that calls this module (prelu's weight owner), applied only if it stays the
    module's single call: (replace, node, message)."""


@dataclass
class FileContext:
    """What one file's analysis shares across its classes."""

    path: str
    source: str
    info: FileInfo
    project: Project
    ops_module: str
    positions: Positions
    plan: Plan = field(default_factory=Plan)
    findings: list[Finding] = field(default_factory=list)
    skip: set[int] = field(default_factory=set)
    class_names: dict[str, set[str]] = field(default_factory=dict)
    from_imports: dict[str, list[str]] = field(default_factory=dict)
    plain_imports: list[str] = field(default_factory=list)

    def report(self, node: ast.AST, code: str, message: str) -> None:
        self.findings.append(Finding(self.path, node.lineno,
                                     self.positions.column(node.lineno, node.col_offset), code,
                                     message))

    def text(self, node: ast.AST) -> str:
        return self.positions.segment(node)

    def block_text(self, node: ast.AST, stmt: ast.stmt) -> str:
        """The node's text for a new statement beside `stmt`: continuation lines lose the
        statement's indentation, which the codemod adds back."""
        lines = self.text(node).split("\n")
        indent = " " * stmt.col_offset
        return "\n".join(lines[:1] + [l.removeprefix(indent) for l in lines[1:]])

    def module_ref(self, qualname: str) -> str:
        """How this file can name a class, adding the fewest imports needed."""
        if qualname.startswith("migrator.nn."):
            qualname = self.ops_module + qualname[len("migrator.nn"):]
        names = self.info.names
        spelled = names.alias_for(qualname)
        if spelled:
            return spelled
        package, cls = qualname.rsplit(".", 1)
        for module, imported in self.from_imports.items():
            if module == package and cls in imported:
                return cls
        if package == "torch.nn":
            if "nn" in self.from_imports.get("torch", ()):
                return f"nn.{cls}"
            if names.is_free("nn") and "nn" not in self._pending_names():
                self.from_imports.setdefault("torch", []).append("nn")
                return f"nn.{cls}"
            if names.is_free("torch"):
                self._add_plain("torch")
                return qualname
        elif names.is_free(cls) and cls not in self._pending_names():
            if any(t.rpartition(".")[0] == package for t in names.imports.values()):
                self.plan.import_names.setdefault(package, []).append(cls)
            else:
                self.from_imports.setdefault(package, []).append(cls)
            return cls
        top = package.split(".")[0]
        if names.is_free(top):
            self._add_plain(package)
            return qualname
        raise _Refusal("MIG109", f"no free name to import `{qualname}` under")

    def _pending_names(self) -> set[str]:
        return {n for table in (self.from_imports, self.plan.import_names)
                for names in table.values() for n in names}

    def _add_plain(self, module: str) -> None:
        if module not in self.plain_imports:
            self.plain_imports.append(module)

    def finish(self) -> None:
        self.plan.imports = [f"import {m}" for m in self.plain_imports] + [
            f"from {module} import {', '.join(sorted(names))}"
            for module, names in self.from_imports.items()]
        self.findings.sort()


class _Refusal(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def may_have_work(text: str) -> bool:
    """Cheap filter: only a class with its own `forward` can hold work."""
    return "class" in text and "def forward" in text


def skip_lines(source: str) -> set[int]:
    """Line numbers carrying a `# migrator: skip` comment."""
    if "migrator" not in source:
        return set()
    return {i for i, line in enumerate(source.split("\n"), 1)
            if "#" in line and SKIP_PRAGMA.search(line[line.index("#"):])}


def analyze(source: str, path: str, project: Project, tree: ast.Module | None = None,
            ops_module: str = "migrator.nn") -> tuple[Plan, list[Finding]]:
    """Plan the rewrite of one file and list its findings. Raises SyntaxError on bad input."""
    tree = tree or ast.parse(source)
    info = project.add(tree, Path(path) if path else None)
    project.analyzed.add(info.names.module)
    ctx = FileContext(path, source, info, project, ops_module, Positions(source))
    ctx.skip = skip_lines(source)
    for cls in info.classes.values():
        if ctx.skip.intersection(header_lines(cls.node)) or not project.is_module(cls):
            continue
        ClassAnalysis(ctx, cls).run()
    ctx.finish()
    return ctx.plan, ctx.findings


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
        self.sites: dict[str, list[Site]] = {}
        self.super_index = self._super_index()
        self.new_init: list[str] = []
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
            for node in ast.walk(method):
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
                    if not _self_attr(target):
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
        if self.ctx.info.names.resolve(value.func if isinstance(value, ast.Call) else value) in (
                "torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer"):
            self.tensor_attrs.add(attr)

    def _top_level(self, stmt: ast.stmt) -> tuple[int, bool]:
        for i, top in enumerate(self.init.body):
            if top is stmt:
                return i, False
            if top.lineno <= stmt.lineno <= top.end_lineno:
                return i, True
        return len(self.init.body) - 1, True

    def module_attrs(self) -> set[str]:
        """Attributes that hold modules: assigned a call (not a parameter) or set elsewhere."""
        attrs = {a for a, info in self.attrs.items()
                 if isinstance(info.value, (ast.Call, ast.IfExp)) and a not in self.tensor_attrs}
        return attrs | (self.assigned_elsewhere - set(self.methods) - self.tensor_attrs)

    def _container(self) -> str | None:
        """The torch.nn container class this class derives from, if any."""
        for cls in [self.cls, *self._ancestors(self.cls)]:
            for base in cls.bases:
                if base in _CONTAINERS:
                    return base.replace("torch.nn.", "nn.")
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
        own = _names_defined(self.cls.node)
        for cls in self._family():
            self._work_out(cls)
            taken |= created.get(cls.qualname, set())
            clash = sorted(own & created.get(cls.qualname, set())) if cls is not self.cls else []
            if clash and cls.file is not self.ctx.info:
                self.ctx.report(self.cls.node, "MIG111",
                                f"`self.{clash[0]}` is also the name of the module migrator creates "
                                f"in base class `{cls.name}`; rename this attribute")
            if cls.qualname not in self.ctx.class_names:
                self.ctx.class_names[cls.qualname] = _names_defined(cls.node)
            taken |= self.ctx.class_names[cls.qualname]
        return taken

    def _work_out(self, cls: ClassInfo) -> None:
        """Make sure the rewrite of a class from another file of the project (not torch) has
        been worked out, so the names it will create are known here."""
        file = cls.file
        module = file.names.module
        if file is self.ctx.info or module in self.ctx.project.analyzed or file.source is None:
            return
        if module.split(".")[0] == "torch" or not may_have_work(file.source):
            return
        analyze(file.source, str(file.path), self.ctx.project, file.tree, self.ctx.ops_module)

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
            for visit in walk(function):
                node = visit.node
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                    continue
                owner, name = node.func.value, node.func.attr
                if _self_attr(node.func):
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
        for name, times in self.reach().items():
            method = self.methods[name]
            if self.ctx.skip.intersection(header_lines(method)):
                continue
            tensors = TensorNames(method, lambda n, s=function_locals(method):
                                  self.ctx.info.names.resolve(n, s), module_attrs, self.tensor_attrs)
            scanner = _Scanner(self, method, times, tensors, module_attrs)
            scanner.scan()
        self._plan_new_init()
        self._split_reused()

    def _check_signature(self, forward: ast.FunctionDef) -> None:
        args = forward.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            if arg.annotation is not None and _is_dict_annotation(arg.annotation):
                self.ctx.report(arg, "MIG201", f"forward input `{arg.arg}` is a dict")
        if forward.returns is not None and _is_dict_annotation(forward.returns):
            self.ctx.report(forward, "MIG201", "forward is annotated to return a dict")
            return
        for node in ast.walk(forward):
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
        init_locals = function_locals(self.init) if self.init else set()
        for part in ast.walk(node):
            if isinstance(part, ast.Name) and part.id != "self":
                if part.id in shadowed:
                    raise _Refusal("MIG101", f"`{part.id}` is a local value of the method")
                if part.id in init_locals and part.id in self.ctx.info.names.constants:
                    replace[part.id] = self.ctx.info.names.constants[part.id]
                elif part.id in init_locals:
                    raise _Refusal("MIG101", f"`{part.id}` means something else in `__init__`")
        reason = self._unfixed(node, deps)
        if reason:
            raise _Refusal("MIG101", reason)
        text = self.ctx.text(node)
        if replace:  # constants shadowed in `__init__` are written out as their values
            names = sorted((n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in replace),
                           key=lambda n: (n.lineno, n.col_offset), reverse=True)
            if any(n.lineno != node.lineno for n in names) or node.lineno != node.end_lineno:
                raise _Refusal("MIG101", "a constant it uses means something else in `__init__`")
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
        if _self_attr(node):
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

    def anchor(self, deps: set[str]) -> int | None:
        """Line of the `__init__` statement after which a module depending on `deps` is made
        (None: the class has no `__init__`; one is created)."""
        container = self._container()
        if container:
            raise _Refusal("MIG109", f"the class derives from `{container}`: a new submodule "
                                     "would join its sequence of modules")
        if self.init is None:
            return None
        if self.super_index is None:
            raise _Refusal("MIG109", "`__init__` has no `super().__init__()` call to create the "
                                     "module after")
        index = max([self.super_index] + [self.attrs[d].top_index for d in deps])
        if self.init.body[index].lineno == self.init.lineno:
            raise _Refusal("MIG109", "`__init__` is written on one line: put its body on lines "
                                     "of its own first")
        return self.init.body[index].lineno

    def create(self, op: Op, ctor: list[str], deps: set[str]) -> str:
        """Plan `self.<name> = <Module>(...)` in `__init__`; return the new attribute name.

        A class without an `__init__` of its own gets one that passes every argument on."""
        line = self.anchor(deps)
        module = self.ctx.module_ref(op.module)
        name = self.new_name(op.key)
        code = f"self.{name} = {module}({', '.join(ctor)})"
        if line is None:
            self.new_init.append(code)
        else:
            self.ctx.plan.insert_after(line, code)
        return name

    def _plan_new_init(self) -> None:
        if not self.new_init:
            return
        body = "".join(f"    {code}\n" for code in self.new_init)
        first = next(s for s in self.cls.node.body
                     if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))
        self.ctx.plan.insert_before(first.lineno,
                                    "def __init__(self, *args, **kwargs):\n"
                                    "    super().__init__(*args, **kwargs)\n" + body)

    # -- reused modules ------------------------------------------------------------------------
    def _split_reused(self) -> None:
        for attr, sites in self.sites.items():
            times = sum(site.times for site in sites)
            if times < 2:
                for site in sites:
                    if site.pending:
                        replace, node, message = site.pending
                        self.ctx.plan.replaces.append(replace)
                        self.ctx.report(node, "MIG001", message)
                continue
            first = sites[0].func
            try:
                kind = self._split_kind(attr, sites)
            except _Refusal as refusal:
                self.ctx.report(first, refusal.code, refusal.message)
                continue
            info = self.attrs[attr]
            for site in sites[1:]:
                name = self.new_name(attr)
                self.ctx.plan.insert_after(info.stmt.lineno,
                                           f"self.{name} = {self.ctx.block_text(info.value, info.stmt)}")
                self.ctx.plan.replaces.append(Replace("rename", self.ctx.positions.span(site.func),
                                                      name))
                self.ctx.report(site.func, "MIG003",
                                f"`self.{attr}` ({kind}) is called at {len(sites)} sites: this one "
                                f"becomes `self.{name}`")

    def _split_kind(self, attr: str, sites: list[Site]) -> str:
        info = self.attrs.get(attr)
        where = f"`self.{attr}` is called {'in a loop' if any(s.times >= MANY for s in sites) else f'at {len(sites)} sites'}"
        if info is None:
            raise _Refusal("MIG104", f"{where} but is not assigned in this class's `__init__`, so "
                                     "its class cannot be known")
        value = info.value
        verdict = self.ctx.project.value_stateless(value, self.ctx.info)
        label = self.ctx.text(value.func) if isinstance(value, ast.Call) else self.ctx.text(value)
        if verdict is False:
            raise _Refusal("MIG103", f"{where} and `{label}` may hold parameters or buffers: copies "
                                     "would untie its weights; give each site its own module")
        if verdict is None:
            raise _Refusal("MIG104", f"{where} and the class of `{self.ctx.text(value)}` cannot be "
                                     "known statically; split it by hand if it is stateless")
        if any(s.times >= MANY for s in sites):
            raise _Refusal("MIG105", f"{where}: one module object serves every iteration; unroll "
                                     "the loop or use an nn.ModuleList")
        if any(s.times > 1 for s in sites):
            raise _Refusal("MIG110", f"{where} inside a helper method that runs more than once per "
                                     "forward")
        if info.count > 1 or info.nested and _one_line_suite(self.init, info.stmt):
            raise _Refusal("MIG104", f"{where} but is assigned at several places in `__init__`")
        return label


class _Scanner:
    """Finds catalog ops and module calls in one forward-path method."""

    def __init__(self, owner: ClassAnalysis, method: ast.FunctionDef, times: int,
                 tensors: TensorNames, module_attrs: set[str]) -> None:
        self.owner = owner
        self.ctx = owner.ctx
        self.method = method
        self.times = times
        self.tensors = tensors
        self.module_attrs = module_attrs
        self.shadowed = function_locals(method)
        self.consumed: set[int] = set()

    def scan(self) -> None:
        for visit in walk(self.method):
            if self.ctx.skip.intersection(header_lines(visit.stmt)) or id(visit.node) in self.consumed:
                continue
            node = visit.node
            try:
                if isinstance(node, ast.Call):
                    self._call(node, visit)
                elif isinstance(node, ast.BinOp):
                    self._binop(node, visit)
                elif isinstance(node, ast.AugAssign):
                    self._augassign(node, visit)
            except _Refusal as refusal:
                self.ctx.report(node, refusal.code, refusal.message)

    def _times(self, visit: Visit) -> int:
        return MANY if visit.repeated else self.times

    def _call(self, node: ast.Call, visit: Visit) -> None:
        func = node.func
        if _self_attr(func) and func.attr in self.module_attrs:
            self.owner.sites.setdefault(func.attr, []).append(Site(func.attr, func,
                                                                   self._times(visit)))
            return
        qualname = self.ctx.info.names.resolve(func, self.shadowed)
        op = catalog.by_function(qualname) if qualname else None
        if op is not None:
            self._convert(op, node, _bind(op, node, None), visit, "MIG001",
                          self.ctx.text(func))
            return
        if isinstance(func, ast.Attribute) and self.tensors.is_tensor(func.value):
            op = catalog.by_method(func.attr)
            if op is not None:
                self._convert(op, node, _bind(op, node, func.value), visit, "MIG002",
                              f".{func.attr}()")
            elif (op := catalog.by_inplace_method(func.attr)) is not None:
                if isinstance(visit.stmt, ast.Expr) and visit.stmt.value is node:
                    self._inplace(op, node, func.value, node.args, node.keywords, visit,
                                  f".{func.attr}()")

    def _binop(self, node: ast.BinOp, visit: Visit) -> None:
        op = catalog.by_operator(_SYMBOLS.get(type(node.op), ""))
        if op is None or not self.tensors.is_tensor(node):
            return
        bound = {op.args[0].name: (node.left, ("left",)), op.args[1].name: (node.right, ("right",))}
        self._convert(op, node, bound, visit, "MIG002", f"`{_SYMBOLS[type(node.op)]}`",
                      kind="binop")

    def _augassign(self, node: ast.AugAssign, visit: Visit) -> None:
        op = catalog.by_inplace_operator(_SYMBOLS.get(type(node.op), "") + "=")
        if op is None or not self.tensors.is_tensor(node.target):
            return
        self._inplace(op, node, node.target, [node.value], [], visit,
                      f"`{_SYMBOLS[type(node.op)]}=`")

    def _inplace(self, op: Op, node: ast.AST, target: ast.expr, args: list[ast.expr],
                 keywords: list[ast.keyword], visit: Visit, label: str) -> None:
        """`a += b` / `a.add_(b)` as a statement: rewrite to `a = self.add(a, b)` when `a`'s
        current value is a fresh tensor that nothing else can see."""
        reason = self._inplace_unsafe(target, visit.stmt)
        if reason:
            raise _Refusal("MIG108", f"{label} on `{self.ctx.text(target)}`: {reason}")
        call = ast.Call(func=ast.Name("_"), args=[target, *args], keywords=keywords)
        bound = _bind(op, call, None)
        if isinstance(bound, str):
            return
        augmented = isinstance(node, ast.AugAssign)
        refs = {op.args[0].name: ("target",) if augmented else ("receiver",),
                op.args[1].name: ("right",) if augmented else ("arg", 0)}
        bound = {k: (v[0], refs.get(k, v[1])) for k, v in bound.items()}
        kind = "augassign" if augmented else "inplace"
        self._convert(op, node, bound, visit, "MIG002", label, kind=kind)

    def _inplace_unsafe(self, target: ast.expr, stmt: ast.stmt) -> str | None:
        """Why rebinding `target` instead of mutating it could be seen elsewhere (None: it
        cannot). Walks back from `stmt` through its block and the blocks around it to the
        assignment of the current value, which must allocate a new tensor that nothing else
        has read since."""
        if not isinstance(target, ast.Name):
            return "only a local name can be rebound"
        name = target.id
        for prior, header_only in _statements_before(self.method, stmt):
            if header_only:
                if _shares(prior, name, headers_only=True):
                    return "the value is read before, so it may be shared"
                continue
            if _assigns(prior, name):
                return self._fresh(prior.value)
            if _mutates(prior, name):
                continue  # an in-place op on the same tensor keeps it unshared
            if _shares(prior, name):
                return "the value is read or assigned before, so it may be shared"
        return "its value is not assigned in this method"

    def _fresh(self, value: ast.expr) -> str | None:
        if isinstance(value, ast.BinOp):
            return None
        if isinstance(value, ast.Call) and _self_attr(value.func):
            info = self.owner.attrs.get(value.func.attr)
            if info and isinstance(info.value, ast.Call):
                if self.ctx.info.names.resolve(info.value.func) in _FRESH_OUTPUT:
                    return None
        return "its value does not provably come from an op that allocates a new tensor"

    def _convert(self, op: Op, node: ast.AST, bound, visit: Visit, code: str, label: str,
                 kind: str = "call") -> None:
        if isinstance(bound, str):
            if bound:
                raise _Refusal("MIG107", f"{label}: {bound}")
            return
        ctor: list[str] = []
        deps: set[str] = set()
        inputs: list[tuple[tuple, str | None]] = []
        weight_module: str | None = None
        for arg in op.args:
            value, ref = bound.get(arg.name, (None, None))
            if arg.role == INPUT:
                if value is None:
                    if arg.default is REQUIRED:
                        return
                    continue
                inputs.append((ref, None if arg.default is REQUIRED else arg.name))
            elif arg.role == INPUTS:
                if value is None:
                    return
                if isinstance(value, (ast.List, ast.Tuple)):
                    if any(isinstance(e, ast.Starred) for e in value.elts):
                        raise _Refusal("MIG107", f"{label}: starred items in the tensor list")
                    inputs.append((("elements", ref), None))
                else:
                    inputs.append((("star", ref), None))
            elif arg.role == HYPER:
                if value is None:
                    default = dict(op.module_defaults).get(arg.ctor_name, arg.default)
                    if default != arg.default:
                        ctor.append(f"{arg.ctor_name}={arg.default!r}")
                    continue
                try:
                    text, sub = self.owner.hyper(value, self.shadowed)
                except _Refusal as refusal:
                    raise _Refusal("MIG101", f"{label}: `{arg.name}={self.ctx.text(value)}` is not "
                                             f"fixed at __init__ time: {refusal.message}") from None
                deps |= sub
                ctor.append(f"{arg.ctor_name}={text}")
            elif arg.role == TRAINING:
                if not (value is not None and _self_attr(value) and value.attr == "training"):
                    shown = self.ctx.text(value) if value is not None else f"{arg.default} (default)"
                    raise _Refusal("MIG102", f"{label}: `training={shown}`; the module would follow "
                                             "`self.training` instead")
            elif arg.role == FIXED:
                if value is not None and not (literal(value) and ast.literal_eval(value) == arg.default):
                    raise _Refusal("MIG107", f"{label}: `{arg.name}={self.ctx.text(value)}` is not "
                                             f"supported by the module (only {arg.default!r})")
            elif arg.role == WEIGHT:
                weight_module = self._weight_owner(op, value, label)
            elif arg.role != IGNORED:
                raise AssertionError(arg.role)
        ctor += [f"{k}={v}" for k, v in op.ctor_extra]
        if visit.repeated:
            raise _Refusal("MIG105", f"{label} runs in a loop or comprehension: one module would "
                                     "serve every iteration; left as is")
        if self.times > 1:
            raise _Refusal("MIG110", f"{label} is in `{self.method.name}`, which runs "
                                     f"{'in a loop' if self.times >= MANY else f'{self.times} times'}"
                                     " per forward; left as is")
        if weight_module is not None:
            replace = Replace(kind, self.ctx.positions.span(node), weight_module, tuple(inputs))
            self.owner.sites.setdefault(weight_module, []).append(Site(
                weight_module, node.func, self.times,
                (replace, node, f"{label} -> `self.{weight_module}`, which owns that weight")))
            return
        name = self.owner.create(op, ctor, deps)
        self.ctx.plan.replaces.append(Replace(kind, self.ctx.positions.span(node), name,
                                              tuple(inputs)))
        self.ctx.report(node, code, f"{label} -> `self.{name}` = {op.module_name}({', '.join(ctor)})")

    def _weight_owner(self, op: Op, value: ast.expr | None, label: str) -> str:
        """The module attribute whose own `weight` the call passes (`self.act.weight` where
        `self.act` is an `nn.PReLU`): calling that module keeps every state_dict key."""
        if (isinstance(value, ast.Attribute) and value.attr == "weight" and _self_attr(value.value)):
            info = self.owner.attrs.get(value.value.attr)
            if (info and isinstance(info.value, ast.Call)
                    and self.ctx.info.names.resolve(info.value.func) == op.module):
                return value.value.attr
        shown = self.ctx.text(value) if value is not None else "?"
        raise _Refusal("MIG106", f"{label}: weight `{shown}` would move into a new "
                                 f"{op.module_name} and change its state_dict key; left as is")


_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
            ast.MatMult: "@", ast.Pow: "**"}


def _bind(op: Op, call: ast.Call, receiver: ast.expr | None):
    """Map the op's parameter names to (value node, input ref), or a reason string ('' for a
    call that does not fit the signature and is better left alone)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return "arguments passed with * or ** cannot be split statically"
    positional: list[tuple[ast.expr, tuple]] = []
    if receiver is not None:
        positional.append((receiver, ("receiver",)))
    positional += [(a, ("arg", i)) for i, a in enumerate(call.args)]
    bound: dict[str, tuple[ast.expr, tuple]] = {}
    for (value, ref), arg in zip(positional, op.args):
        if arg.keyword_only:
            return ""
        bound[arg.name] = (value, ref)
    if len(positional) > len(op.args):
        return ""
    names = {a.name for a in op.args}
    for kw in call.keywords:
        if kw.arg not in names or kw.arg in bound:
            return ""
        bound[kw.arg] = (kw.value, ("kw", kw.arg))
    return bound


def _static(method: ast.FunctionDef) -> bool:
    """A static or class method: it has no `self` to hold modules."""
    return any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
               for d in method.decorator_list)


def _names_defined(cls: ast.ClassDef) -> set[str]:
    """Attribute, method and class-level names a class defines or uses on `self`."""
    names: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and _self_attr(node):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign):
            names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
    return names


def _self_attr(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "self")


def _assigns(stmt: ast.stmt, name: str) -> bool:
    return (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name)


def _statements_before(func: ast.FunctionDef, stmt: ast.stmt):
    """(statement, header only) pairs that run before `stmt`, nearest first: earlier statements
    of its block, then the statement holding that block (only its header runs before), then
    the earlier statements of the block around it, up to the function."""
    parents: dict[int, tuple[ast.AST, list[ast.stmt]]] = {}
    for node in ast.walk(func):
        for part in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, part, None)
            if isinstance(body, list):
                for child in body:
                    parents[id(child)] = (node, body)
    current = stmt
    while id(current) in parents:
        holder, body = parents[id(current)]
        index = next(i for i, s in enumerate(body) if s is current)
        for prior in reversed(body[:index]):
            yield prior, False
        if holder is func:
            return
        yield holder, True
        current = holder


def _shares(stmt: ast.AST, name: str, headers_only: bool = False) -> bool:
    """Whether `stmt` reads or stores `name` other than to look at its shape, size or type."""
    nodes = [stmt]
    if headers_only:
        nodes = [getattr(stmt, f) for f in ("test", "iter", "target", "items", "subject")
                 if getattr(stmt, f, None) is not None]
    for root in nodes:
        parents = {id(c): p for p in ast.walk(root) for c in ast.iter_child_nodes(p)}
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and node.id == name:
                parent = parents.get(id(node))
                if (isinstance(parent, ast.Attribute) and isinstance(node.ctx, ast.Load)
                        and parent.attr in _BENIGN_ATTRIBUTES):
                    continue
                return True
    return False


def _mutates(stmt: ast.stmt, name: str) -> bool:
    """`name op= ...` or `name.op_(...)` as a statement whose arguments do not store `name`."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id == name
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return (isinstance(func, ast.Attribute) and func.attr.endswith("_")
                and not func.attr.endswith("__") and isinstance(func.value, ast.Name)
                and func.value.id == name)
    return False


def _one_line_suite(init: ast.FunctionDef, stmt: ast.stmt) -> bool:
    return any(parent is not stmt and parent.lineno == stmt.lineno
               for parent in ast.walk(init) if isinstance(parent, ast.stmt))


def _is_dict_annotation(node: ast.expr) -> bool:
    head = ast.unparse(node).split("[", 1)[0].split(".")[-1]
    return head in {"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "TypedDict"}
