"""Find catalog ops and module calls in one forward-path method and plan their rewrite."""

from __future__ import annotations

import ast

from migrator import catalog
from migrator.catalog import FIXED, HYPER, IGNORED, INPUT, INPUTS, REQUIRED, TRAINING, WEIGHT, Op
from migrator.rewrite.attributes import InitAttr
from migrator.rewrite.context import MANY, FileContext, Refusal, Site, self_attr
from migrator.rewrite.creation import ModuleCreator
from migrator.rewrite.hyper import HyperParameters
from migrator.rewrite.inplace import inplace_unsafe
from migrator.rewrite.names import literal
from migrator.rewrite.operators import SYMBOLS
from migrator.rewrite.order import ForwardOrder
from migrator.rewrite.plan import Replace
from migrator.rewrite.reuse import ReusedModules
from migrator.rewrite.tensors import TensorNames, is_container
from migrator.rewrite.walk import Visit, header_lines


class Scanner:
    """Finds catalog ops and module calls in one forward-path method: module calls go to
    `sites`, ops become modules that `creator` plans, with hyper-parameters that `hyper`
    resolves, at the places in forward's run that `order` tells."""

    def __init__(self, ctx: FileContext, method: ast.FunctionDef, times: int,
                 tensors: TensorNames, module_attrs: set[str], *, attrs: dict[str, InitAttr],
                 order: ForwardOrder, sites: ReusedModules, hyper: HyperParameters,
                 creator: ModuleCreator) -> None:
        self.ctx = ctx
        self.method = method
        self.times = times
        self.tensors = tensors
        self.module_attrs = module_attrs
        self.attrs = attrs
        """The attributes `__init__` assigns."""
        self.order = order
        self.sites = sites
        self.hyper = hyper
        self.creator = creator
        self.shadowed = self.ctx.locals_of(method)

    def scan(self) -> None:
        for visit in self.ctx.visits(self.method):
            node = visit.node
            if self.ctx.skip and self.ctx.skip.intersection(header_lines(visit.stmt)):
                if self._module_call(node):  # still a call of the module: reuse is counted
                    self.sites.add(
                        Site(node.func.attr, node.func, self._times(visit),
                             self.order.key(self.method, node), skipped=True,
                             method=self.method))
                continue
            try:
                if isinstance(node, ast.Call):
                    self._call(node, visit)
                elif isinstance(node, ast.BinOp):
                    self._binop(node, visit)
                elif isinstance(node, ast.AugAssign):
                    self._augassign(node, visit)
            except Refusal as refusal:
                self.ctx.report(node, refusal.code, refusal.message)

    def _times(self, visit: Visit) -> int:
        return MANY if visit.repeated else self.times

    def _module_call(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Call) and self_attr(node.func)
                and node.func.attr in self.module_attrs)

    def _call(self, node: ast.Call, visit: Visit) -> None:
        func = node.func
        if self._module_call(node):
            self.sites.add(
                Site(func.attr, func, self._times(visit), self.order.key(self.method, node),
                     method=self.method))
            return
        qualname = self.ctx.info.names.resolve(func, self.shadowed)
        op = catalog.by_function(qualname) if qualname else None
        if op is not None:
            self._convert(op, node, _bind(op, node, None), visit, "MIG001",
                          self.ctx.text(func))
            return
        if isinstance(func, ast.Attribute) and self.tensors.unknown(func.value) and (
                catalog.by_method(func.attr) or catalog.by_inplace_method(func.attr)):
            self._unproven(f".{func.attr}()", func.value)
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
        op = catalog.by_operator(SYMBOLS.get(type(node.op), ""))
        if op is None:
            return
        if not self.tensors.is_tensor(node):
            self._unproven(f"`{SYMBOLS[type(node.op)]}`", node.left, node.right)
            return
        bound = {op.args[0].name: (node.left, ("left",)), op.args[1].name: (node.right, ("right",))}
        self._convert(op, node, bound, visit, "MIG002", f"`{SYMBOLS[type(node.op)]}`",
                      kind="binop")

    def _augassign(self, node: ast.AugAssign, visit: Visit) -> None:
        op = catalog.by_inplace_operator(SYMBOLS.get(type(node.op), "") + "=")
        if op is None:
            return
        if not self.tensors.is_tensor(node.target):
            self._unproven(f"`{SYMBOLS[type(node.op)]}=`", node.target, node.value)
            return
        self._inplace(op, node, node.target, [node.value], [], visit,
                      f"`{SYMBOLS[type(node.op)]}=`")

    def _unproven(self, label: str, *operands: ast.expr) -> None:
        """An op that is a tensor op if an operand is a tensor, which cannot be proven either
        way (MIG114); operands proven plain, or strings and literals, are not tensor ops."""
        if any(is_container(o) for o in operands) or not any(self.tensors.unknown(o)
                                                           for o in operands):
            return
        shown = next(self.ctx.text(o) for o in operands if self.tensors.unknown(o))
        raise Refusal("MIG114", f"{label} on `{shown}`: it cannot be proven to be a tensor (nor "
                                 "not to be one), so it is left as is; annotate it `Tensor` to "
                                 "convert it")

    def _inplace(self, op: Op, node: ast.AST, target: ast.expr, args: list[ast.expr],
                 keywords: list[ast.keyword], visit: Visit, label: str) -> None:
        """`a += b` / `a.add_(b)` as a statement: rewrite to `a = self.add(a, b)` when `a`'s
        current value is a fresh tensor that nothing else can see."""
        reason = inplace_unsafe(self.method, target, visit.stmt, self._fresh)
        if reason:
            raise Refusal("MIG108", f"{label} on `{self.ctx.text(target)}`: {reason}")
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

    def _fresh(self, value: ast.expr) -> bool:
        """Whether `value` is a call of a module known to return a new tensor."""
        if isinstance(value, ast.Call) and self_attr(value.func):
            info = self.attrs.get(value.func.attr)
            if info and isinstance(info.value, ast.Call):
                cls = self.ctx.info.names.resolve(info.value.func)
                return cls in catalog.FRESH_OUTPUT_MODULES
        return False

    def _convert(self, op: Op, node: ast.AST, bound, visit: Visit, code: str, label: str,
                 kind: str = "call") -> None:
        if code in self.ctx.disable:
            return
        if isinstance(bound, str):
            if bound:
                raise Refusal("MIG107", f"{label}: {bound}")
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
                        raise Refusal("MIG107", f"{label}: starred items in the tensor list")
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
                    text, sub = self.hyper.resolve(value, self.shadowed)
                except Refusal as refusal:
                    raise Refusal("MIG101", f"{label}: `{arg.name}={self.ctx.text(value)}` is not "
                                             f"fixed at __init__ time: {refusal.message}") from None
                deps |= sub
                ctor.append(f"{arg.ctor_name}={text}")
            elif arg.role == TRAINING:
                if not (value is not None and self_attr(value) and value.attr == "training"):
                    shown = self.ctx.text(value) if value is not None else f"{arg.default} (default)"
                    raise Refusal("MIG102", f"{label}: `training={shown}`; the module would follow "
                                             "`self.training` instead")
            elif arg.role == FIXED:
                if value is not None and not (literal(value) and ast.literal_eval(value) == arg.default):
                    raise Refusal("MIG107", f"{label}: `{arg.name}={self.ctx.text(value)}` is not "
                                             f"supported by the module (only {arg.default!r})")
            elif arg.role == WEIGHT:
                weight_module = self._weight_owner(op, value, label)
            elif arg.role != IGNORED:
                raise AssertionError(arg.role)
        ctor += [f"{k}={v}" for k, v in op.ctor_extra]
        if visit.repeated:
            raise Refusal("MIG105", f"{label} runs in a loop or comprehension: one module would "
                                     "serve every iteration; left as is")
        if self.times > 1:
            raise Refusal("MIG110", f"{label} is in `{self.method.name}`, which runs "
                                     f"{'in a loop' if self.times >= MANY else f'{self.times} times'}"
                                     " per forward; left as is")
        if weight_module is not None:
            replace = Replace(kind, self.ctx.positions.span(node), weight_module, tuple(inputs))
            self.sites.add(Site(
                weight_module, node.func, self.times, self.order.key(self.method, node),
                (replace, node, f"{label} -> `self.{weight_module}`, which owns that weight"),
                method=self.method))
            return
        name = self.creator.create(op, ctor, deps, self.order.key(self.method, node))
        self.ctx.plan.replaces.append(Replace(kind, self.ctx.positions.span(node), name,
                                              tuple(inputs)))
        self.ctx.report(node, code, f"{label} -> `self.{name}` = {op.module_name}({', '.join(ctor)})")

    def _weight_owner(self, op: Op, value: ast.expr | None, label: str) -> str:
        """The module attribute whose own `weight` the call passes (`self.act.weight` where
        `self.act` is an `nn.PReLU`): calling that module keeps every state_dict key."""
        if (isinstance(value, ast.Attribute) and value.attr == "weight" and self_attr(value.value)):
            info = self.attrs.get(value.value.attr)
            if (info and isinstance(info.value, ast.Call)
                    and self.ctx.info.names.resolve(info.value.func) == op.module):
                return value.value.attr
        shown = self.ctx.text(value) if value is not None else "?"
        raise Refusal("MIG106", f"{label}: weight `{shown}` would move into a new "
                                 f"{op.module_name} and change its state_dict key; left as is")


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
