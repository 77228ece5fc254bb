"""Find catalog ops and module calls in one forward-path method and plan their rewrite."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from pathlib import Path
from typing import TypeGuard

from migrator import catalog
from migrator.binder import NOT_CONSTANT, Bound, Input, Predicates, bind
from migrator.catalog import REQUIRED, Op, Role, ToolkitModule
from migrator.evidence import proved_by
from migrator.findings import SERVES_EVERY_ITERATION
from migrator.refusal import Refusal
from migrator.rewrite.attributes import InitAttr
from migrator.rewrite.mode_flag import flag_apart
from migrator.rewrite.context import MANY, FileContext, Site, named_attribute, self_attr
from migrator.rewrite.creation import ModuleCreator
from migrator.rewrite.helper_modules import first_is_tensor
from migrator.rewrite.hyper import HyperParameters
from migrator.rewrite.inplace import (
    _BENIGN_ATTRIBUTES,
    Parents,
    block_parents,
    holds_number,
    inplace_unsafe,
    unnamed_binds,
)
from migrator.rewrite.loops import Copies, LoopCopies
from migrator.rewrite.held_ops import THROUGH
from migrator.rewrite.mentions import patched_elsewhere
from migrator.rewrite.names import literal, patch_among
from migrator.rewrite.order import ForwardOrder, Key
from migrator.rewrite.outputs import FRESH, OutputKinds, is_none, op_inplace
from migrator.rewrite.plan import InputRef, RefKind, Replace, ReplaceKind
from migrator.rewrite.project import ClassInfo, FileInfo
from migrator.rewrite.reuse import ReusedModules
from migrator.rewrite.runs import InitRun
from migrator.rewrite.stores import Store, after_init, changed_after_init, first_change
from migrator.rewrite.tensors import TensorNames, is_container
from migrator.rewrite.walk import Loop, Visit, all_nodes, header_lines, parents_of


_SCANNED = (ast.Call, ast.BinOp, ast.UnaryOp, ast.AugAssign)
"""The node classes `Scanner.scan` reads."""


class Scanner:
    """Finds catalog ops and module calls in one forward-path method: module calls go to
    `sites`, ops become modules that `creator` plans, with hyper-parameters that `hyper`
    resolves, at the places in forward's run that `order` tells."""

    def __init__(
        self,
        ctx: FileContext,
        method: ast.FunctionDef,
        times: int,
        tensors: TensorNames,
        module_attrs: set[str],
        *,
        attrs: dict[str, InitAttr],
        held: Callable[[str], tuple[bool, str] | None],
        order: ForwardOrder,
        sites: ReusedModules,
        hyper: HyperParameters,
        creator: ModuleCreator,
        methods: dict[str, ast.FunctionDef],
        owner: ClassInfo,
        loops: LoopCopies,
        init_run: InitRun | None = None,
        once_an_iteration: bool = False,
        outside: str | None = None,
        held_helper: Callable[[str], tuple[FileInfo, ast.FunctionDef] | None] = lambda a: None,
    ) -> None:
        self.ctx = ctx
        self.method = method
        self._parents: Parents | None = None
        """Where each statement of the method sits (`block_parents`), read once."""
        self.times = times
        self.tensors = tensors
        self.module_attrs = module_attrs
        self.attrs = attrs
        """The attributes `__init__` assigns."""
        self.held = held
        """How the module holds a tensor attribute (`ClassAttributes.held`)."""
        self.order = order
        self.sites = sites
        self.hyper = hyper
        self.creator = creator
        self.methods = methods
        """The class's methods (its static methods are helpers)."""
        self.owner = owner
        self.loops = loops
        self.init_run = init_run
        """How `__init__` runs the method (a module created there may not exist yet then), if
        it does."""
        self.once_an_iteration = once_an_iteration
        """Whether the method runs in loops whose trip count depends on the input, once an
        iteration: one module made for its op serves every run."""
        self.outside = outside
        """How the method runs besides forward's calls (`outside_runs`), if it does."""
        self.held_helper = held_helper
        """The project function an attribute holds, and nothing else, for good
        (`SubmoduleSettings.held_helper`)."""
        self.shadowed = self.ctx.locals_of(method)
        self._fresh_proof: list[str] = []
        """The targets whose run-time evidence proved the in-place op at hand's tensor fresh."""
        self._passed_proof = False
        """Whether that evidence proved a module to return a new tensor or its input."""
        self._outputs = OutputKinds(self.ctx.project)
        """What the modules `__init__` builds return (`catalog.output_kind`, project classes)."""
        self._later: dict[str, bool] = {}
        """`_changed_later` of each attribute asked about."""
        self._aliases: dict[str, str] | None = None
        """`_module_aliases`, worked out when a call of a local name asks."""
        self._hyper: dict[int, tuple[str, set[str]]] = {}
        """Each hyper-parameter value the binder found fixed, by node id (`_predicates`): an
        op's binding writes those of its constructor before `_convert` reads them."""
        self._binding: Predicates[ast.expr] | None = None

    def steps(self) -> list[tuple[Key, int, Visit]]:
        """The method's nodes, each with when it runs on the forward path (and its place in the
        method's run, for methods whose place is not known): `scan` takes them in that order,
        arguments before the call that takes them, so created modules are named as they run."""
        runs = self.ctx.positions_of(self.method)
        return [
            (self.order.key(self.method, v.node), runs[id(v.node)], v)
            for v in self.ctx.visits(self.method)
            if isinstance(v.node, _SCANNED)
        ]

    def scan(self, visit: Visit) -> None:
        """Read one node of `_SCANNED` (`steps` gives no other: the others change nothing)."""
        node = visit.node
        if self.ctx.skip and self.ctx.skip.intersection(header_lines(visit.stmt)):
            # still a call of the module: reuse is counted
            if isinstance(node, ast.Call) and self._module_call(node.func):
                self.sites.add(
                    Site(
                        node.func.attr,
                        node.func,
                        self._times(visit),
                        self.order.key(self.method, node),
                        skipped=True,
                        method=self.method,
                    )
                )
            return
        try:
            if isinstance(node, ast.Call):
                self._call(node, visit)
            elif isinstance(node, ast.BinOp):
                self._binop(node, visit)
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                op = catalog.by_function(catalog.OPERATOR_NEG)
                assert op is not None
                self._on_tensor(op, node, (node.operand, InputRef("operand")), visit, "`-x`")
            elif isinstance(node, ast.AugAssign):
                self._augassign(node, visit)
        except Refusal as refusal:
            assert isinstance(node, (ast.expr, ast.stmt))  # only the ops above refuse
            self.ctx.refuse(node, refusal)

    def _times(self, visit: Visit) -> int:
        return MANY if visit.repeated else self.times

    def _loop(self, visit: Visit) -> Copies | str | None:
        """The copies a module call at `visit` would need, or why a loop allows none (None:
        it runs once per run of the method)."""
        if not visit.repeated:
            return None
        if self.times > 1:
            return "the loop is in a method that runs more than once per forward"
        if self.init_run:
            return f"the loop is in a method that {self.init_run.via} runs"
        try:
            copies = self.loops.copies(visit)
        except Refusal as why:
            return why.message
        return copies.shared[0][1] if copies.shared else copies

    def _copies(self, visit: Visit, label: str, copyable: bool = True) -> tuple[Copies | None, str]:
        """The copies of the module an op at `visit` becomes, one an iteration of the loops
        around it (None: it runs once per run of the method, or one module serves every
        iteration of loops whose trip count depends on the input), and what the finding says
        of such a module; raises a MIG105 refusal when it repeats in a way no copies can
        follow, or is not `copyable`."""
        if not visit.repeated:
            return None, self._serves_every_run()
        try:
            if not copyable:
                raise Refusal("MIG105", "")
            copies = self.loops.copies(visit)
            if copies.shared and copies.trips:  # copies shared by iterations: none reported
                raise Refusal("MIG105", copies.shared[0][1])
            if self.once_an_iteration and copies.trips:
                raise Refusal(
                    "MIG105", "the loop is in a method that runs more than once per forward"
                )
        except Refusal as why:
            raise Refusal(
                "MIG105",
                f"{label} runs in a loop or comprehension: one module would serve every "
                f"iteration{_no_copies(why.message)}; left as is",
            ) from None
        if copies.shared:
            note = _serves_every_iteration([loop for loop, _ in copies.shared])
            return None, note + self._serves_every_run().replace(SERVES_EVERY_ITERATION, ", and ")
        return copies, ""

    def _serves_every_run(self) -> str:
        """What the finding of an op of a method that runs once an iteration of loops whose
        trip count depends on the input says ('' for another method)."""
        if not self.once_an_iteration:
            return ""
        return (
            f"{SERVES_EVERY_ITERATION}the loops that run `{self.method.name}`, whose trip counts "
            "depend on the input"
        )

    def _module_aliases(self) -> dict[str, str]:
        """Local names the method binds once, to a module attribute (`act = self.act`)."""
        if self._aliases is None:
            self._aliases = self.ctx.aliases(
                self.method, lambda value: value.attr if self._module_call(value) else None
            )
        return self._aliases

    def _module_call(self, func: ast.expr) -> TypeGuard[ast.Attribute]:
        """Whether a call of `func` calls a module attribute."""
        return self_attr(func) and func.attr in self.module_attrs

    def _call(self, node: ast.Call, visit: Visit) -> None:
        func = node.func
        held = self._held_of(node)
        if held is not None:  # refused, it is reported as a helper call, not as a held one
            self.ctx.helpers_seen.add(id(node))
            self._helper(node, *held, visit)
            return
        if self._module_call(func):  # a call whose split is suppressed is left as a skipped one
            self.sites.add(
                Site(
                    func.attr,
                    func,
                    self._times(visit),
                    self.order.key(self.method, node),
                    method=self.method,
                    skipped=self.ctx.suppressed(func, "MIG003") or self.init_run is not None,
                    loop=self._loop(visit),
                )
            )
            return
        attr = None
        if isinstance(func, ast.Name) and func.id in self.shadowed:
            attr = self._module_aliases().get(func.id)  # `act(y)` after `act = self.act`
        elif named_attribute(func) in self.module_attrs:  # `getattr(self, "act")(y)`
            attr = named_attribute(func)
        if attr is not None:  # a call of the module, counted, never changed
            key = self.order.key(self.method, node)
            site = Site(attr, func, self._times(visit), key, skipped=True, method=self.method)
            self.sites.add(site)
            return
        helper = self._helper_of(node)
        if helper is not None:
            self._helper(node, *helper, visit)
            return
        qualname = self.ctx.info.names.resolve(func, self.shadowed, patched=True)
        if qualname is None and _builtin(func, "abs", self.ctx.info, self.shadowed):
            qualname = catalog.OPERATOR_ABS
        op = catalog.by_function(qualname) if qualname else None
        if op is not None and qualname in (catalog.OPERATOR_ABS, catalog.OPERATOR_NEG):
            if len(node.args) == 1 and not node.keywords:  # `abs(y)`, `operator.neg(y)`
                operand = (node.args[0], InputRef("arg", 0))
                self._on_tensor(op, node, operand, visit, self.ctx.text(func))
            return
        if op is not None:
            self._convert(op, node, *_arguments(node), visit, "MIG001", self.ctx.text(func))
            return
        inplace = catalog.by_inplace_function(qualname) if qualname else None
        if inplace is not None:  # `torch.sigmoid_(y)`: as `y.sigmoid_()`
            positional, keywords = _arguments(node)
            label = self.ctx.text(func)
            self._inplace_call(inplace, node, positional, keywords, visit, "MIG001", label)
            return
        if qualname in ("torch.max", "torch.min"):
            self._pairwise(node, qualname[6:], [], visit, "MIG001", self.ctx.text(func))
            return
        if _builtin(func, "sum", self.ctx.info, self.shadowed) and node.args:
            self._summed(node.args[0])
        elif self._spelled(node, qualname or "", visit):
            return
        self._called_through(func, qualname or "")
        if isinstance(func, ast.Attribute) and func.attr in ("max", "min"):
            receiver = [(func.value, InputRef("receiver"))]
            self._pairwise(node, func.attr, receiver, visit, "MIG002", f".{func.attr}()")
        if (
            isinstance(func, ast.Attribute)
            and self.tensors.unknown(func.value)
            and (catalog.by_method(func.attr) or catalog.by_inplace_method(func.attr))
        ):
            self._unproven(f".{func.attr}()", func.value)
        if isinstance(func, ast.Attribute) and self.tensors.is_tensor(func.value):
            positional, keywords = _arguments(node)
            positional = [(func.value, InputRef("receiver"))] + positional
            label = f".{func.attr}()"
            op = catalog.by_method(func.attr)
            inplace = catalog.by_inplace_method(func.attr) if op is None else None
            if inplace is not None:
                self._inplace_call(inplace, node, positional, keywords, visit, "MIG002", label)
            elif op is not None:
                self._convert(op, node, positional, keywords, visit, "MIG002", label)

    def _spelled(self, node: ast.Call, qualname: str, visit: Visit) -> bool:
        """Convert an op spelled through another callable: a method through `torch.Tensor`
        (`torch.Tensor.add(a, b)`, `torch.Tensor.add_(a, b)`) as `a.add(b)` / `a.add_(b)`; an
        operator's function or method (`_operator`). Whether it was one."""
        func, label = node.func, self.ctx.text(node.func)
        positional, keywords = _arguments(node)
        module, _, name = qualname.rpartition(".")
        if module == "torch.Tensor" and (op := catalog.by_method(name)) is not None:
            self._convert(op, node, positional, keywords, visit, "MIG002", label)
        elif module == "torch.Tensor" and (op := catalog.by_inplace_method(name)) is not None:
            self._inplace_call(op, node, positional, keywords, visit, "MIG002", label)
        elif module == "operator" or _builtin(func, "pow", self.ctx.info, self.shadowed):
            return self._operator(node, name or "pow", positional, keywords, visit)
        elif isinstance(func, ast.Attribute) and func.attr[:2] == func.attr[-2:] == "__":
            receiver = [(func.value, InputRef("receiver"))]
            return self._operator(node, func.attr[2:-2], receiver + positional, keywords, visit)
        else:
            return False
        return True

    def _called_through(self, func: ast.expr, qualname: str) -> None:
        """Refuse an op called through another callable (MIG115): a tensor's class
        (`type(y).relu(y)`, `y.__class__.relu(y)`), the op's `__call__` (`y.relu.__call__()`,
        `torch.relu.__call__(y)`), or a method of a tensor named at run time (`getattr(y,
        self.name)()`); `qualname`: what `func` resolves to. A tensor here may also be one not
        proven either way."""
        what = None
        if isinstance(func, ast.Attribute) and _method_op(func.attr):
            of = _class_of(func.value, self.ctx.info, self.shadowed)
            if of is not None and not self.tensors.is_plain(of) and ast.unparse(of) != "self":
                what = f"is `.{func.attr}()` if `{self.ctx.text(of)}` is a tensor"
        elif isinstance(func, ast.Attribute) and func.attr == "__call__":
            called = func.value
            if catalog.by_any_function(qualname.removesuffix(".__call__")):
                what = f"is `{qualname.removesuffix('.__call__')}`"
            elif isinstance(called, ast.Attribute) and _method_op(called.attr):
                if not self.tensors.is_plain(called.value):
                    what = f"is `.{called.attr}()` if `{self.ctx.text(called.value)}` is a tensor"
        elif (
            isinstance(func, ast.Call)
            and _builtin(func.func, "getattr", self.ctx.info, self.shadowed)
            and len(func.args) > 1
            and not isinstance(func.args[1], ast.Constant)
            and self.tensors.is_tensor(func.args[0])
        ):
            shown = self.ctx.text(func.args[0])
            what = f"names a method of the tensor `{shown}` at run time, which may be an op"
        if what is not None:
            raise Refusal("MIG115", f"`{self.ctx.text(func)}` {what}, {THROUGH}")

    def _operator(
        self,
        node: ast.Call,
        spelled: str,
        operands: list[tuple[ast.expr, InputRef]],
        keywords: list[tuple[str | None, ast.expr, InputRef]],
        visit: Visit,
    ) -> bool:
        """`operator.add(a, b)`, `pow(a, b)`, `a.__add__(b)` (`spelled`: `add`, `pow`) as `a +
        b`; reflected, `b.__radd__(a)` (`radd`); in place, `operator.iadd(a, b)` and
        `a.__iadd__(b)` (`iadd`) as `a.add_(b)`. Whether it was one."""
        label = self.ctx.text(node.func)
        operator = catalog.operator_named(spelled)
        inplace = operator is None and spelled[:1] == "i"
        if operator is None and spelled[:1] in ("r", "i"):
            operator = catalog.operator_named(spelled[1:])
            if spelled[0] == "r" and isinstance(node.func, ast.Attribute):
                operands = operands[1:] + operands[:1]  # `a.__rsub__(b)` is `b - a`
                _check_order([v for v, _ in operands], label)
        if operator is None or len(operands) != 2 or keywords:
            return False
        values = [v for v, _ in operands]
        if inplace:
            op = catalog.by_inplace_operator(operator.inplace_symbol)
            if op is not None and self.tensors.is_tensor(values[0]):
                self._inplace_call(op, node, operands, [], visit, "MIG002", label)
            elif op is not None:
                self._unproven(label, values[0])
            return op is not None
        op = catalog.by_operator(operator.symbol)
        if op is not None and any(self.tensors.is_tensor(v) for v in values):
            self._convert(op, node, operands, [], visit, "MIG002", label)
        elif op is not None:
            self._unproven(label, *values)
        return op is not None

    def _summed(self, items: ast.expr) -> None:
        """`sum(items)` adds them with `+` in Python's `sum`, where no module can run it:
        reported when they are tensors (MIG115); items written out (`sum([a, b])`, `sum(t
        for ...)`) that may be, MIG114. A container not proven to hold tensors is taken for
        numbers (`sum(sizes)`)."""
        values: list[ast.expr] = []
        if isinstance(items, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            values = [items.elt]
        elif isinstance(items, (ast.List, ast.Tuple, ast.Set)):
            values = items.elts
        if self.tensors.is_tuple(items) or any(self.tensors.is_tensor(v) for v in values):
            raise Refusal(
                "MIG115",
                "`sum(...)` adds tensors with `+` inside Python's `sum`, where no module runs "
                "it; left as is",
            )
        self._unproven("`sum(...)`", *values)

    def _inplace_call(
        self,
        op: Op,
        node: ast.Call,
        positional: list[tuple[ast.expr, InputRef]],
        keywords: list[tuple[str | None, ast.expr, InputRef]],
        visit: Visit,
        code: str,
        label: str,
    ) -> None:
        """`y.sigmoid_()` or `torch.sigmoid_(y)` (`positional`: `y` first): standing as a
        statement, rewritten as `y = self.sigmoid(y)` when that is safe (`_inplace`); its
        result used, out of place when `y` is a new tensor nothing else holds; else MIG108."""
        target = positional[0][0] if positional else None
        if target is None or isinstance(target, ast.Starred):
            raise Refusal("MIG108", f"{label}: the tensor it changes is not given first")
        if isinstance(visit.stmt, ast.Expr) and visit.stmt.value is node:
            self._inplace(op, node, positional, keywords, visit, code, label)
            return
        if not self._temporary(target):
            raise Refusal(
                "MIG108",
                f"{label} on `{self.ctx.text(target)}`: what it returns is "
                "used, and only an in-place op standing as a statement is rewritten",
            )
        whose = "its receiver" if positional[0][1].kind == "receiver" else "the tensor it changes"
        note = f"; {whose} is a new tensor nothing else holds" + self._fresh_note(target)
        self._convert(op, node, positional, keywords, visit, code, label, note=note, twin=True)

    def _pairwise(
        self,
        node: ast.Call,
        name: str,
        receiver: list[tuple[ast.expr, InputRef]],
        visit: Visit,
        code: str,
        label: str,
    ) -> None:
        """`torch.max(a, b)` / `a.max(b)` given two tensors is `torch.maximum(a, b)` (`min`:
        `minimum`); given a dim it reduces (a named tuple), given one tensor, to a scalar tensor,
        neither of which it becomes. Operands not proven either way are reported (MIG114)."""
        positional, keywords = _arguments(node)
        positional = receiver + positional
        operands = [v for v, _ in positional] + [v for k, v, _ in keywords if k == "other"]
        if len(operands) != 2 or any(k in ("dim", "keepdim") for k, _, _ in keywords):
            return
        if not all(self.tensors.is_tensor(o) for o in operands):
            if not any(self.tensors.is_plain(o) for o in operands):
                self._unproven(label, *operands)
            return
        op = catalog.by_function(f"torch.{name}imum")
        assert op is not None
        self._convert(op, node, positional, keywords, visit, code, label)

    def _ceiling(self, label: str, deps: set[str], copies: Copies | None) -> int | None:
        """The top-level `__init__` statement a module created for an op of this method must
        precede, because `__init__` runs the method there (None: anywhere); raises a MIG109
        refusal when a base's `__init__` runs it, or what the module needs comes later."""
        run = self.init_run
        within = copies.within if copies else None
        if within is not None and (
            run is not None or any(self.attrs[d].top_index >= within.top_index for d in deps)
        ):
            raise Refusal(
                "MIG105",
                f"{label} runs in a loop over `self.{within.name}`, built in a block of "
                "`__init__`: its copies, made right after it, would come before what they read "
                "or after what runs them; left as is",
            )
        if run is None:
            return None
        needs = [self.attrs[d].top_index for d in deps | (copies.deps if copies else set())]
        needs += [copies.floor] if copies else []
        super_index = self.creator.attributes.super_index
        if run.before is None or super_index is None:
            raise Refusal(
                "MIG109",
                f"{label} is in `{self.method.name}`, which {run.via} runs before a module "
                "created for it would exist; left as is",
            )
        if max([super_index, *needs]) >= run.before:
            raise Refusal(
                "MIG109",
                f"{label} is in `{self.method.name}`, which {run.via} runs before what a "
                "module created for it reads is set; left as is",
            )
        return run.before

    def _runs_once(self, label: str) -> None:
        """Refuse an op in a helper method that runs more than once per forward (MIG110), but
        once an iteration of loops whose trip count depends on the input; or one in a method
        that runs besides forward's calls as well (`outside_runs`)."""
        if self.outside:
            raise Refusal(
                "MIG110",
                f"{label} is in `{self.method.name}`, which runs besides forward's calls, where "
                f"its runs cannot be counted: {self.outside}; left as is",
            )
        if self.times > 1 and not self.once_an_iteration:
            raise Refusal(
                "MIG110",
                f"{label} is in `{self.method.name}`, which runs "
                f"{'in a loop' if self.times >= MANY else f'{self.times} times'}"
                " per forward; left as is",
            )

    def _helper_of(self, call: ast.Call) -> tuple[ast.FunctionDef, str, FileInfo] | None:
        """(helper function, the qualified name of its class when it is another file's twin,
        else '', its file) when `call` runs a helper that may become a module."""
        modules = self.ctx.helper_modules
        if modules is None or "MIG004" in self.ctx.disable:
            return None
        function = modules.target(call, self.method, self.methods)
        if function is None:
            twin = modules.twin_elsewhere(call, self.method, self.methods)
            return (twin[1], f"{twin[0].names.module}.{twin[2]}", twin[0]) if twin else None
        if not modules.has_work(function, first_is_tensor(call, self.tensors.is_tensor, None)):
            return None
        static = function in self.methods.values()
        return (function, "", self.ctx.info) if modules.refusal(function, static) is None else None

    def _held_of(self, call: ast.Call) -> tuple[ast.FunctionDef, str, FileInfo] | None:
        """`_helper_of` a call `self.<attr>(...)` of an attribute that holds a helper function
        for good (torchvision's `self.box_similarity = box_ops.box_iou`): it runs the helper,
        as a direct call does."""
        modules = self.ctx.helper_modules
        func = call.func
        if modules is None or "MIG004" in self.ctx.disable or not self_attr(func):
            return None
        held = self.held_helper(func.attr)
        if held is None:
            return None
        info, function = held
        if info is not self.ctx.info:
            twin = modules.twin_of(info, function)
            return (function, f"{info.names.module}.{twin}", info) if twin else None
        if not modules.has_work(function, first_is_tensor(call, self.tensors.is_tensor, None)):
            return None
        return (function, "", info) if modules.refusal(function, False) is None else None

    def _helper(
        self, node: ast.Call, function: ast.FunctionDef, twin: str, info: FileInfo, visit: Visit
    ) -> None:
        """`rotate_half(x)` -> `self.rotate_half(x)`, an instance of the class the helper
        (of `info`) becomes (`helper_modules`; `twin`: the qualified name of another file's
        twin class), when this call runs once per forward."""
        modules = self.ctx.helper_modules
        assert modules is not None  # `_helper_of` found the helper
        label = f"`{self.ctx.text(node.func)}(...)`"
        if _starred(node.args, [k.arg for k in node.keywords]):
            raise Refusal("MIG107", f"{label}: arguments passed with * or ** are not passed on")
        if not first_is_tensor(node, self.tensors.is_tensor, function):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.expr) and self.tensors.is_plain(first):
                raise Refusal(
                    "MIG115",
                    f"{label}: its first argument `{self.ctx.text(first)}` is not a tensor, "
                    f"which `{function.name}` as a module would take it for; left as is",
                )
            raise Refusal(
                "MIG114",
                f"{label}: its first argument is not proven to be a tensor (nor `self`), "
                f"which `{function.name}` as a module would take it for; left as is",
            )
        copies, shared = self._copies(visit, label)
        self._runs_once(label)
        _module_methods(function, node, label)
        owner = self.owner if function in self.methods.values() else None
        overriding = owner and modules.overriding(owner, function.name)
        if overriding:
            raise Refusal(
                "MIG115",
                f"{label}: subclass `{overriding}` overrides `{function.name}`, so the call may "
                "run its version; left as is",
            )
        if self.ctx.suppressed(node, "MIG004"):
            self.ctx.report(node, "MIG004", f"{label}: suppressed", op=function.name)
            return
        written = modules.written(info, function, twin)
        self.creator.can_create(written, copies is not None)
        key = self.order.key(self.method, node)
        base = function.name.strip("_") or "helper"
        ceiling = self._ceiling(label, set(), copies)
        via = ""
        if twin:
            module, cls, where = twin, twin.rsplit(".", 1)[1], f" in `{twin.rsplit('.', 1)[0]}`"
            name = self.creator.create(
                self.creator.reference(twin, written, copies is not None),
                base,
                [],
                set(),
                key,
                copies,
                ceiling,
            )
        else:
            made = modules.module_for(function, owner)
            if made is None:
                return
            module_name = self.ctx.info.names.module
            cls, where = made.name, ""
            module = f"{module_name}.{cls}" if module_name else cls
            name = self.creator.create(cls, base, [], set(), key, copies, ceiling)
            if made.wrap:
                via = made.twin
                where = (
                    f", its twin `{via}` (registered with `{made.wrap}`, so fx keeps it a leaf) "
                    "given it"
                )
        inputs: list[tuple[InputRef, str | None]] = [
            (InputRef("arg", i), None) for i in range(len(node.args))
        ]
        inputs += [(InputRef("kw", keyword=k.arg or ""), k.arg) for k in node.keywords]
        made_as = f"`self.{name}` = {cls}()"
        index = ""
        if copies is not None:
            self.loops.commit(copies)
            index = copies.subscript
            made_as = (
                f"`self.{name}{index}`, one {cls}() an iteration ({copies.describe()}) "
                "in an nn.ModuleList"
            )
        self.ctx.plan.replaces.append(
            Replace("call", self.ctx.positions.span(node), name, tuple(inputs), index, via)
        )
        self.ctx.helper_calls.add(id(node))
        self.ctx.report(
            node,
            "MIG004",
            f"{label} -> {made_as}: `{function.name}`"
            + (" ops as a module" if via else " as a module")
            + f", added beside it{where}"
            + self._typed_note(node.args[:1])
            + shared,
            op=function.name,
            module=module,
            attr=name,
        )

    def _binop(self, node: ast.BinOp, visit: Visit) -> None:
        operator = catalog.operator_of(type(node.op))
        if operator is None or (op := catalog.by_operator(operator.symbol)) is None:
            return
        label = f"`{operator.symbol}`"
        if not self.tensors.is_tensor(node):
            self._unproven(label, node.left, node.right)
            return
        operands = [(node.left, InputRef("left")), (node.right, InputRef("right"))]
        self._convert(op, node, operands, [], visit, "MIG002", label, kind="binop")

    def _augassign(self, node: ast.AugAssign, visit: Visit) -> None:
        operator = catalog.operator_of(type(node.op))
        if operator is None or (op := catalog.by_inplace_operator(operator.inplace_symbol)) is None:
            return
        label = f"`{operator.inplace_symbol}`"
        if not self.tensors.is_tensor(node.target):
            self._unproven(label, node.target, node.value)
            return
        operands = [(node.target, InputRef("target")), (node.value, InputRef("right"))]
        self._inplace(op, node, operands, [], visit, "MIG002", label)

    def _on_tensor(
        self,
        op: Op,
        node: ast.Call | ast.UnaryOp,
        operand: tuple[ast.expr, InputRef],
        visit: Visit,
        label: str,
    ) -> None:
        """`-y`, `abs(y)` (`operator.neg`, `operator.abs`): an op when `y` is a tensor, converted
        when that is proven, as a binary operator is (`_binop`)."""
        if not self.tensors.is_tensor(operand[0]):
            self._unproven(label, operand[0])
            return
        kind: ReplaceKind = "unaryop" if isinstance(node, ast.UnaryOp) else "call"
        self._convert(op, node, [operand], [], visit, "MIG002", label, kind=kind)

    def _unproven(self, label: str, *operands: ast.expr) -> None:
        """An op that is a tensor op if an operand is a tensor, which cannot be proven either
        way (MIG114); operands proven plain, or strings and literals, are not tensor ops."""
        if any(is_container(o) for o in operands) or not any(
            self.tensors.unknown(o) for o in operands
        ):
            return
        shown = next(self.ctx.text(o) for o in operands if self.tensors.unknown(o))
        raise Refusal(
            "MIG114",
            f"{label} on `{shown}`: it cannot be proven to be a tensor (nor "
            "not to be one), so it is left as is; annotate it `Tensor` to "
            "convert it",
        )

    def _inplace(
        self,
        op: Op,
        node: ast.Call | ast.AugAssign,
        positional: list[tuple[ast.expr, InputRef]],
        keywords: list[tuple[str | None, ast.expr, InputRef]],
        visit: Visit,
        code: str,
        label: str,
    ) -> None:
        """`a += b` / `a.add_(b)` / `torch.sigmoid_(a)` as a statement (`positional`: `a`
        first): rewrite to `a = self.add(a, b)` when `a`'s current value is a fresh tensor that
        nothing else can see."""
        self._fresh_proof, self._passed_proof = [], False
        if self._parents is None:
            self._parents = block_parents(self.method)
        target = positional[0][0]
        reason = inplace_unsafe(
            self.method, target, visit.stmt, self._made, self._parents, self._inplace_function
        )
        operands = [v for v, _ in positional[1:]] + [v for _, v, _ in keywords]
        reason = reason or self._kept(target, operands) or self._overlaps(target, operands)
        if reason:
            raise Refusal("MIG108", f"{label} on `{self.ctx.text(target)}`: {reason}")
        self._convert(
            op,
            node,
            positional,
            keywords,
            visit,
            code,
            label,
            kind="augassign" if isinstance(node, ast.AugAssign) else "inplace",
            note=self._fresh_note(target),
            twin=not holds_number(self.method, target, visit.stmt, self._parents),
        )

    def _inplace_function(self, func: ast.expr) -> bool:
        """Whether `func` is a function changing its first argument in place (`torch.sigmoid_`)."""
        qualname = self.ctx.info.names.resolve(func, self.shadowed)
        return bool(qualname and catalog.by_inplace_function(qualname))

    def _overlaps(self, target: ast.expr, operands: list[ast.expr]) -> str | None:
        """Why an operand of the in-place op on `target` may be a view of it (`y += y.t()`,
        `z.mul_(z[:, :1])`: the in-place op reads what it writes, or raises; out of place it
        does neither); None when each operand is `target` itself or may view no part of it."""
        if not isinstance(target, ast.Name):
            return None
        proof = self._fresh_proof, self._passed_proof
        try:
            for value in operands:
                if isinstance(value, ast.Name) and value.id == target.id:
                    continue
                if self._may_view(value, target.id):
                    return (
                        f"`{self.ctx.text(value)}` may be a view of it, which the in-place op "
                        "would read while writing it"
                    )
            return None
        finally:
            self._fresh_proof, self._passed_proof = proof

    def _may_view(self, value: ast.expr, name: str) -> bool:
        """Whether `value` may share memory with the tensor `name` holds: it is `name`, or
        reaches it through subscripts, attributes, calls and their arguments with no new
        tensor between (an operator's result, a call `_made` proves fresh, an item of a
        container of such modules: `attn.sum(-1).unsqueeze(-1)` is none of `attn`'s)."""
        if isinstance(value, ast.Name):
            return value.id == name
        if isinstance(value, ast.BinOp) or not _reads(value, name):
            return False
        if isinstance(value, ast.Call):
            if self._made(value) is True or self._item_output(value) == FRESH:
                return False
            parts = [value.func, *value.args, *(k.value for k in value.keywords)]
            return any(self._may_view(p, name) for p in parts)
        if isinstance(value, (ast.Subscript, ast.Attribute, ast.Starred)):
            return self._may_view(value.value, name)
        return True

    def _item_output(self, value: ast.expr) -> str:
        """What a call of an item of a container `__init__` alone builds returns (`ck(x)` in
        `for ck in self.convs`): `OutputKinds.items_either`, '' for anything else."""
        held = self._held_by(value.func) if isinstance(value, ast.Call) else None
        built = self._attr_values(held[0]) if held is not None and held[1] else None
        return "" if built is None else self._outputs.items_either(built, self.ctx.info)

    def _temporary(self, value: ast.expr) -> bool:
        """Whether `value`, the receiver of an in-place op whose result is used, is a new tensor
        nothing else holds: an operator expression, a call `_made` proves fresh (not one that
        may return its input: `.to()`, a view), or an in-place op of the catalog on such a
        tensor (`t.mul_(2)` in `t.mul_(2).add_(1)`, `torch.sigmoid_(t)`). Changing it in place
        or not then differs in nothing anyone sees."""
        self._fresh_proof, self._passed_proof = [], False
        if isinstance(value, ast.BinOp):
            return True
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if (
            isinstance(func, ast.Attribute)
            and catalog.by_inplace_method(func.attr)
            and self.tensors.is_tensor(func.value)
        ):
            return self._temporary(func.value)
        if self._inplace_function(func) and value.args:
            return self._temporary(value.args[0])  # `torch.sigmoid_(t)`, as `t.sigmoid_()`
        return self._made(value) is True

    def _kept(self, target: ast.expr, values: list[ast.expr]) -> str | None:
        """Why a call in the operands of an in-place op on `target` may keep the tensor it is
        given (`out += ck(out)`: a module storing its input would see the original's change,
        not the rewrite's); None when each call given `target` is a torch function, a tensor
        method or a module of torch classes built in `__init__` alone."""
        if not isinstance(target, ast.Name):
            return None
        for value in values:
            for call in all_nodes(value):
                if not isinstance(call, ast.Call) or not any(
                    _reads(a, target.id) for a in [*call.args, *(k.value for k in call.keywords)]
                ):
                    continue
                func = call.func
                held = self._held_by(func)
                if held is not None:
                    attr, items = held
                    built = self._attr_values(attr)
                    if built is not None and self._outputs.keep_nothing(
                        built, self.ctx.info, items
                    ):
                        continue
                elif isinstance(func, ast.Attribute) and self.tensors.is_tensor(func.value):
                    continue
                else:
                    qualname = self.ctx.info.names.resolve(func, self.shadowed)
                    if qualname and catalog.by_function(qualname):
                        continue
                return (
                    f"`{self.ctx.text(call.func)}` is given it and may keep it (only modules "
                    "of torch classes built in `__init__` are known not to): what it keeps would see "
                    "the original's change, not the rewrite's"
                )
        return None

    def _held_by(self, func: ast.expr) -> tuple[str, bool] | None:
        """(attr, False) for `self.<attr>`; (attr, True) for an item of it: `self.<attr>[i]`,
        or a name that only a `for` over `self.<attr>` in this method binds."""
        if self_attr(func):
            return func.attr, False
        if isinstance(func, ast.Subscript) and self_attr(func.value):
            return func.value.attr, True
        if not isinstance(func, ast.Name):
            return None
        binds = [
            n
            for n in all_nodes(self.method)
            if (isinstance(n, ast.Name) and n.id == func.id and not isinstance(n.ctx, ast.Load))
            or func.id in unnamed_binds(n)
            or (isinstance(n, ast.arg) and n.arg == func.id)
        ]
        loops = [
            n
            for n in all_nodes(self.method)
            if isinstance(n, ast.For) and binds and n.target is binds[0] and self_attr(n.iter)
        ]
        if len(binds) != 1 or not loops:
            return None
        iterated = loops[0].iter
        assert isinstance(iterated, ast.Attribute)
        return iterated.attr, True

    def _fresh_note(self, target: ast.expr) -> str:
        """The end of a finding for an in-place op whose tensor run-time evidence proved
        fresh."""
        if not self._fresh_proof:
            return ""
        made = (
            "the modules it comes from return a new tensor or their input, read by nothing else"
            if self._passed_proof
            else "the module that made it returns a new tensor"
        )
        return (
            f"; `{self.ctx.text(target)}` is fresh: in every model built from "
            f"{proved_by(self._fresh_proof)}, {made}"
        )

    def _made(self, value: ast.expr) -> bool | ast.expr:
        """`inplace.Made`: True when `value` is a call of a module, or of a catalog op (which
        `fix` turns into that module), known to return a new tensor nothing else sees
        (`catalog.output_kind`, which the run-time evidence asks too); its first input when
        it returns that or its input. Ops and their modules answer alike, so a second `fix`
        decides as the first did."""
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        first = value.args[0] if value.args else None
        if self_attr(func):
            kind = self._attr_output(func.attr)
            if kind != "fresh" and not self._changed_later(func.attr):
                owner = self.owner
                found, proof = self.ctx.project.evidence.output(
                    str(owner.file.path), owner.name, func.attr
                )
                if found == "fresh" or (found and not kind):
                    kind = found
                    self._fresh_proof = sorted(set(self._fresh_proof) | set(proof))
                    self._passed_proof |= found == "input"
        else:
            qualname = self.ctx.info.names.resolve(func, self.shadowed)
            factory = _factory(value, qualname, self.tensors)
            if factory is not None:
                return factory
            op, receiver = (catalog.by_function(qualname) if qualname else None), []
            if (
                op is None
                and isinstance(func, ast.Attribute)
                and self.tensors.is_tensor(func.value)
            ):
                op, receiver = catalog.by_method(func.attr), [func.value]
            if op is None:
                return False
            kind = catalog.output_kind(op.module, op_inplace(op, value, receiver))
            if kind == "input" and op.args[0].role is not Role.INPUT:
                # what it passes on is not its first argument (einsum's equation): its one
                # operand, which its module takes first
                operands = value.args[1:]
                if len(operands) != 1 or isinstance(operands[0], ast.Starred):
                    return False
                first = operands[0]
            first = receiver[0] if receiver else first
        if kind == "input" and first is not None and not isinstance(first, ast.Starred):
            return first
        return kind == "fresh"

    def _attr_output(self, attr: str) -> str:
        """What the modules `__init__` assigns to `self.<attr>` return, statically, as the arms
        of a conditional expression (`OutputKinds.built`; '' when not known, or when another
        method, a base or a subclass assigns it too, or the class or one of them may change
        what it holds)."""
        values = self._attr_values(attr)
        return "" if values is None else self._outputs.either(values, self.ctx.info)

    def _attr_values(self, attr: str) -> list[ast.expr] | None:
        """The values `__init__` alone assigns to `self.<attr>` (None when another method, a
        base or a subclass assigns it too, or the class or one of them may change what it
        holds)."""
        init = self.sites.attributes.init
        if attr not in self.attrs or init is None or self._changed_later(attr):
            return None
        assigns = [
            node
            for node in all_nodes(init)
            if isinstance(node, ast.Assign)
            and any(self_attr(t) and t.attr == attr for t in node.targets)
        ]
        inits = [c.methods().get("__init__") for c in self._family]
        if (
            _changes(init, attr, assigns)
            or any(_changes(other, attr, []) for other in inits if other is not None)
            or first_change([self.owner], attr, lambda s: _in_init(s) and not s.plain)
            or first_change(self._family, attr, _in_init)
        ):
            return None
        return [a.value for a in assigns]

    @functools.cached_property
    def _family(self) -> list[ClassInfo]:
        """The class's bases and subclasses that can be found."""
        return [*self.sites.attributes.family.ancestors(self.owner), *self.sites.below()]

    def _reads_only(self, call: ast.Call, arg: ast.expr) -> bool:
        """Whether `self.<method>(..., arg, ...)` only reads the module given as `arg` (timm's
        `self._fuse_bn_tensor(self.conv_scale)`): each class of the family that defines the
        method takes it, at that place, in a parameter `_reads_param` accepts."""
        func = call.func
        if not self_attr(func):
            return False
        place = next((i for i, a in enumerate(call.args) if a is arg), None)
        if place is None or any(isinstance(a, ast.Starred) for a in call.args[:place]):
            return False
        found = [c.methods().get(func.attr) for c in [self.owner, *self._family]]
        defined = [m for m in found if m is not None]
        return bool(defined) and all(_reads_param(m, place + 1) for m in defined)

    def _changed_later(self, attr: str) -> bool:
        """Whether a method other than an `__init__`, of the class, a base or a subclass, may
        change what `self.<attr>` holds: run-time evidence sees the models as built."""
        if attr not in self._later:
            classes = [self.owner, *self._family]
            self._later[attr] = (
                attr in self.sites.attributes.assigned_elsewhere
                or any(
                    _changes(method, attr, [], self._reads_only)
                    for c in classes
                    for name, method in c.methods().items()
                    if name != "__init__"
                )
                or first_change(classes, attr, _changes_call) is not None
            )
        return self._later[attr]

    def _typed_note(self, values: list[ast.expr]) -> str:
        """The end of a finding for an op whose tensors run-time evidence alone proves (every
        tensor among `values` comes from a module of a class only the built models know)."""
        tensors = [v for v in values if self.tensors.is_tensor(v)]
        proofs = [self.tensors.proof(v) for v in tensors]
        if not tensors or not all(proofs):
            return ""
        return (
            f"; `{self.ctx.text(tensors[0])}` is a tensor: in every model built from "
            f"{proved_by(sorted(set().union(*proofs)))}, the module it comes from returns one"
        )

    def _convert(
        self,
        op: Op,
        node: ast.Call | ast.BinOp | ast.UnaryOp | ast.AugAssign,
        positional: list[tuple[ast.expr, InputRef]],
        keywords: list[tuple[str | None, ast.expr, InputRef]],
        visit: Visit,
        code: str,
        label: str,
        kind: ReplaceKind = "call",
        note: str = "",
        twin: bool = False,
    ) -> None:
        """Plan `node`'s rewrite into a call of a new `op.module`: the arguments as
        (value, how the codemod finds it) pairs, keywords with their names; `note` ends the
        finding; `twin`: `node` is an in-place twin on a tensor, whose module then takes
        `Op.inplace_extra`."""
        if code in self.ctx.disable:
            return
        if code == "MIG002":
            note = self._typed_note([v for v, _ in positional]) + note
        if self.ctx.suppressed(node, code):  # reported to mark the suppression used; not made
            self.ctx.report(node, code, f"{label}: suppressed", op=label.strip("`"))
            return
        if _starred([v for v, _ in positional], [k for k, _, _ in keywords]):
            raise Refusal(
                "MIG107", f"{label}: arguments passed with * or ** cannot be split statically"
            )
        self._unpatched(op, label)
        if twin and op.inplace_methods and not op.inplace_extra:
            raise Refusal(
                "MIG108",
                f"{label}: `{op.module_name}` returns a float tensor where the in-place op keeps "
                "its tensor's dtype, or raises (an integer tensor), which is not proven floating "
                "here; left as is",
            )
        if any(k == "out" and not is_none(v) for k, v, _ in keywords):
            raise Refusal(
                "MIG107",
                f"{label}: `out=` writes into the tensor given, a module returns a new one",
            )
        if op.arg("out") is None:  # `out=None` is the op's default, whether listed or not
            keywords = [(k, v, ref) for k, v, ref in keywords if k != "out"]
        self._mode_kept(op, [v for v, _ in positional] + [v for _, v, _ in keywords], label)
        refs = {id(v): ref for v, ref in positional} | {id(v): ref for _, v, ref in keywords}
        hyper = self._hyper
        bound = bind(
            op,
            [v for v, _ in positional],
            [(k, v) for k, v, _ in keywords if k],
            self._predicates(),
            twin,
        )
        if isinstance(bound, Refusal) and bound.code is None:
            return
        toolkit = self._toolkit(op, bound, kind, positional)
        if toolkit is not None and twin and op.inplace_extra:
            raise Refusal(
                "MIG120",
                f"{label}: {self.ctx.toolkit}'s {toolkit.qualname.rsplit('.', 1)[1]} returns "
                "its operands' promoted dtype where the in-place op keeps its receiver's (a "
                "bf16 tensor plus an fp32 one stays bf16); left as is",
            )
        weight_module, at_call = None, ""
        if toolkit is not None and toolkit.renames is None:
            # the toolkit's class wraps the function: the call keeps its arguments as written
            key = op.key if isinstance(bound, Refusal) else bound.key
            module, ctor, deps = toolkit.qualname, [], set()
            inputs: list[tuple[InputRef, str | None]] = [(ref, None) for _, ref in positional]
            inputs += [(ref, k) for k, _, ref in keywords]
        elif isinstance(bound, Refusal):
            raise Refusal(bound.code, f"{label}: {bound.message}")
        else:
            given = [item for item in bound.inputs if item.given]
            sole = len([item for item in bound.inputs if item.arg.role is Role.VARIADIC]) == 1
            inputs = [_input(item, refs[id(item.value)], sole) for item in given]
            inputs += [(refs[id(v)], name) for name, v in bound.call]
            if bound.call:
                _check_order([item.value for item in given] + [v for _, v in bound.call], label)
            module, key = bound.module, bound.key
            at_call = ", ".join(f"`{k}`" for k, _ in bound.call)
            ctor = [
                f"{k}={hyper[id(v)][0] if k in bound.given else repr(v)}" for k, v in bound.ctor
            ]
            deps = set().union(*(hyper[id(v)][1] for k, v in bound.ctor if k in bound.given))
            if bound.weight is not None:
                weight_module = self._weight_owner(op, bound.weight)
            if toolkit is not None and toolkit.renames is not None:
                module, renames = toolkit.qualname, dict(toolkit.renames)
                ctor = [f"{renames.get(k, k)}={v}" for k, _, v in (c.partition("=") for c in ctor)]
        copies, shared = self._copies(visit, label, weight_module is None)
        self._runs_once(label)
        if weight_module is not None:
            assert isinstance(node, ast.Call)  # only a call passes a weight
            replace = Replace(kind, self.ctx.positions.span(node), weight_module, tuple(inputs))
            self.sites.add(
                Site(
                    weight_module,
                    node.func,
                    self.times,
                    self.order.key(self.method, node),
                    (
                        replace,
                        node,
                        f"{label} -> `self.{weight_module}`, which owns that weight",
                        label.strip("`"),
                    ),
                    method=self.method,
                )
            )
            return
        if not catalog.toolkit_takes(module, self.ctx.toolkit):
            raise Refusal(
                "MIG120",
                f"{label}: {self.ctx.toolkit} has no module class that takes this call (its "
                f"quantizer would reject {module.rsplit('.', 1)[1]}); left as is",
            )
        when = self.order.key(self.method, node)
        ceiling = self._ceiling(label, deps, copies)  # may refuse: before any import is added
        name = self.creator.create(
            self.creator.reference(module, listed=copies is not None),
            key,
            ctor,
            deps,
            when,
            copies,
            ceiling,
        )
        index = ""
        short = module.rsplit(".", 1)[1]
        made = f"`self.{name}` = {short}({', '.join(ctor)})"
        if copies is not None:
            self.loops.commit(copies)
            index = copies.subscript
            made = (
                f"`self.{name}{index}`, one {short}({', '.join(ctor)}) an "
                f"iteration ({copies.describe()}) in an nn.ModuleList"
            )
        self.ctx.plan.replaces.append(
            Replace(kind, self.ctx.positions.span(node), name, tuple(inputs), index)
        )
        self.ctx.report(
            node,
            code,
            f"{label} -> {made}"
            + (f", taking {at_call} at call time" if at_call else "")
            + note
            + shared,
            op=label.strip("`"),
            module=module,
            attr=name,
        )

    def _unpatched(self, op: Op, label: str) -> None:
        """Refuse an op the project replaces a callable of (`torch.Tensor.relu = f`, `F.relu =
        f`, `setattr(torch.Tensor, name, f)`): the call runs the replacement, a module would
        not (MIG118)."""
        held = self.ctx.patches.get(id(op))
        if held is None or held[0] is not op:  # asked once a file and op (each of its calls)
            held = self.ctx.patches[id(op)] = (op, _patch_of(op, self.ctx))
        if held[1] is not None:
            where, patch = held[1]
            raise Refusal(
                "MIG118",
                f"{label}: {where} stores into `{patch[0]}` at line {patch[1]}, so the call may "
                "run the project's replacement, which a module would not; left as is",
            )

    def _toolkit(
        self,
        op: Op,
        bound: Bound | Refusal,
        kind: ReplaceKind,
        positional: list[tuple[ast.expr, InputRef]],
    ) -> ToolkitModule | None:
        """The configured toolkit's class for the module `op` becomes (for this call) where it
        can take this call."""
        module = op.module if isinstance(bound, Refusal) else bound.module
        toolkit = catalog.toolkit_module(module, self.ctx.toolkit)
        if toolkit is None:
            return None
        if toolkit.tensor_first and kind != "call":
            if not self.tensors.is_tensor(positional[0][0]):
                return None
        if toolkit.inputs_only and (isinstance(bound, Refusal) or bound.given):
            return None
        return toolkit

    def release(self) -> None:
        """Drop the binder's predicates once the scan is over: their functions hold the scanner,
        a cycle that would keep the class's analysis alive until a collection (the analysis
        runs with the collector paused: reference counting frees it)."""
        self._binding = None

    def _predicates(self) -> Predicates[ast.expr]:
        """What the binder asks about `ast` values, made once a method; each fixed
        hyper-parameter's (text valid in `__init__`, `self` attributes it reads) goes to
        `_hyper`, by node id."""
        if self._binding is None:
            self._binding = self._make_predicates(self._hyper)
        return self._binding

    def _make_predicates(self, hyper: dict[int, tuple[str, set[str]]]) -> Predicates[ast.expr]:
        def unfixed(value: ast.expr) -> str | None:
            try:
                hyper[id(value)] = self.hyper.resolve(value, self.shadowed)
            except Refusal as refusal:
                return refusal.message
            return None

        def weight_refused(op: Op, value: ast.expr) -> str | None:
            if self._weight_owner(op, value):
                return None
            return f"is no weight of a module of class {op.module_name}"

        def unsplittable(value: ast.expr) -> str | None:
            starred = isinstance(value, (ast.List, ast.Tuple)) and any(
                isinstance(e, ast.Starred) for e in value.elts
            )
            return "starred items in the tensor list" if starred else None

        def held(value: ast.expr) -> tuple[bool, str] | None:
            if self_attr(value):
                return self.held(value.attr)
            owner = value
            while isinstance(owner, ast.Attribute):
                owner = owner.value
            if (
                isinstance(value, ast.Attribute)
                and isinstance(owner, ast.Name)
                and owner.id == "self"
            ):
                return True, f"belongs to `{self.ctx.text(value.value)}`"
            return None

        return Predicates(
            show=self.ctx.text,
            constant=lambda v: ast.literal_eval(v) if literal(v) else NOT_CONSTANT,
            unfixed=unfixed,
            follows_mode=self._follows_mode,
            unsplittable=unsplittable,
            weight_refused=weight_refused,
            held=held,
            gated=_training_gated,
            literal_mode=lambda v: v.value if isinstance(v, ast.Constant) else None,
        )

    def _mode_kept(self, op: Op, values: list[ast.expr], label: str) -> None:
        """Refuse an op given `self.training` (its `training`, or a value gated by it) in a class
        whose flag may differ from the submodules' (`mode_flag`): the module would follow its
        own."""
        if not any(a.role is Role.TRAINING or a.gate for a in op.args):
            return
        if not any(self_attr(n) and n.attr == "training" for v in values for n in ast.walk(v)):
            return
        apart = flag_apart(self.creator.attributes.family, self.owner)
        if apart:
            raise Refusal(
                "MIG102",
                f"{label}: `self.training` of `{self.owner.name}` may differ from the flag of "
                f"the modules its `__init__` creates: {apart}; left as is",
            )

    def _follows_mode(self, value: ast.expr) -> bool:
        """Whether a `training` value is `self.training`, or, in a helper's module, a parameter
        every call of the helper passes its caller's `self.training`."""
        if self_attr(value):
            return value.attr == "training"
        modules = self.ctx.helper_modules
        return modules is not None and modules.follows_mode(self.method, value)

    def _weight_owner(self, op: Op, value: ast.expr) -> str | None:
        """The module attribute whose own `weight` the call passes (`self.act.weight` where
        `self.act` is an `nn.PReLU`): calling that module keeps every state_dict key; not when
        anything may change it after `__init__` (a hook registered on it would run, another
        module bound there would run its own `forward`)."""
        if isinstance(value, ast.Attribute) and value.attr == "weight" and self_attr(value.value):
            info = self.attrs.get(value.value.attr)
            if (
                info
                and isinstance(info.value, ast.Call)
                and self.ctx.info.names.resolve(info.value.func) == op.module
                and not changed_after_init(
                    self.creator.attributes.family, self.owner, value.value.attr
                )
            ):
                return value.value.attr
        return None


def _module_methods(function: ast.FunctionDef, call: ast.Call, label: str) -> None:
    """Refuse a call that passes `self` to a helper calling a catalog tensor method on it
    (`module.add(...)`): in the helper's module that parameter may be taken for a tensor."""
    params = [*function.args.posonlyargs, *function.args.args]
    passed = {
        params[i].arg
        for i, a in enumerate(call.args[: len(params)])
        if isinstance(a, ast.Name) and a.id == "self"
    }
    passed |= {
        k.arg
        for k in call.keywords
        if k.arg and isinstance(k.value, ast.Name) and k.value.id == "self"
    }
    for node in all_nodes(function) if passed else ():
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in passed
            and (catalog.by_method(node.func.attr) or catalog.by_inplace_method(node.func.attr))
        ):
            raise Refusal(
                "MIG114",
                f"{label} passes `self` as `{node.func.value.id}`, whose "
                f"`.{node.func.attr}()` could be taken for a tensor method; left as is",
            )


def _serves_every_iteration(loops: list[Loop]) -> str:
    """What the finding of an op converted in loops whose trip count depends on the input
    says: one module serves every iteration."""
    places = [
        f"the loop at line {loop.lineno}"
        if isinstance(loop, ast.For)
        else f"the comprehension at line {loop.target.lineno}"
        for loop in loops
    ]
    where = " and ".join([", ".join(places[:-1]), places[-1]] if len(places) > 1 else places)
    counts = "whose trip counts depend" if len(loops) > 1 else "whose trip count depends"
    return f"{SERVES_EVERY_ITERATION}{where}, {counts} on the input"


def _no_copies(reason: str) -> str:
    """Why a loop cannot index copies, as the end of a MIG105 message ('' when not a loop
    that could)."""
    return f", and the loop cannot index copies: {reason}" if reason else ""


def _arguments(
    call: ast.Call,
) -> tuple[list[tuple[ast.expr, InputRef]], list[tuple[str | None, ast.expr, InputRef]]]:
    """A call's positional and keyword arguments, each with how the codemod finds it."""
    return (
        [(a, InputRef("arg", i)) for i, a in enumerate(call.args)],
        [(k.arg, k.value, InputRef("kw", keyword=k.arg or "")) for k in call.keywords],
    )


def _method_op(name: str) -> bool:
    """Whether `name` is a tensor method the catalog converts."""
    return bool(catalog.by_method(name) or catalog.by_inplace_method(name))


def _class_of(node: ast.expr, info: FileInfo, shadowed: set[str]) -> ast.expr | None:
    """`y` of `type(y)` or `y.__class__`, else None."""
    if isinstance(node, ast.Attribute) and node.attr == "__class__":
        return node.value
    if (
        isinstance(node, ast.Call)
        and _builtin(node.func, "type", info, shadowed)
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.args[0]
    return None


def _training_gated(value: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    """`(v, d)` of `v if self.training else d`, else None."""
    if isinstance(value, ast.IfExp) and self_attr(value.test) and value.test.attr == "training":
        return value.body, value.orelse
    return None


def _check_order(values: list[ast.expr], label: str) -> None:
    """Refuse when the new call, which passes `values` (its inputs, then the hyper-parameters it
    takes at call time) in this order, would evaluate a call among them (which may have side
    effects) in another order than the original did."""
    order = [(v.lineno, v.col_offset) for v in values]
    if order != sorted(order) and any(isinstance(n, ast.Call) for v in values for n in ast.walk(v)):
        raise Refusal(
            "MIG101",
            f"{label}: its arguments passed at call time would be evaluated in another order",
        )


def _builtin(func: ast.expr, name: str, info: FileInfo, shadowed: set[str]) -> bool:
    """Whether `func` is Python's builtin `name`, bound by nothing else."""
    return (
        isinstance(func, ast.Name)
        and func.id == name
        and name not in shadowed
        and info.names.is_free(name)
    )


def _patch_of(op: Op, ctx: FileContext) -> tuple[str, tuple[str, int]] | None:
    """(where, (name, line)) of the first store into a callable of `op` (`catalog.spellings`):
    in the file, else in another file of its package; None when there is none."""
    spellings = catalog.spellings(op)
    patch = patch_among(ctx.info.names.patched, spellings)
    if patch is not None:
        return "this file", patch
    elsewhere = patched_elsewhere(Path(ctx.path), spellings) if ctx.path else None
    if elsewhere is not None:
        return f"module `{elsewhere[0]}`", elsewhere[1:]
    return None


def _starred(args: list[ast.expr], keyword_names: list[str | None]) -> bool:
    """Whether arguments are passed with `*` or `**` (a keyword without a name)."""
    return any(isinstance(a, ast.Starred) for a in args) or None in keyword_names


def _input(item: Input, ref: InputRef, sole: bool) -> tuple[InputRef, str | None]:
    """A forward input as the codemod writes it: (ref, keyword name for an optional input);
    a tensor list spreads its elements, or the sequence itself with `*`. A literal list that
    is the `sole` variadic operand spreads too (`torch.einsum(eq, [a, b])` unwraps it)."""
    literal_list = isinstance(item.value, (ast.List, ast.Tuple))
    if item.arg.role is Role.VARIADIC and sole and literal_list:
        return InputRef("elements", inner=ref), None
    if item.arg.role is Role.INPUTS:
        spread: RefKind = "elements" if literal_list else "star"
        return InputRef(spread, inner=ref), None
    return ref, None if item.arg.default is REQUIRED else item.arg.name


def _changes_call(store: Store) -> bool:
    """A store after `__init__` that may change what calling the attribute returns (deleting
    it makes the call fail in both models)."""
    return after_init(store) and not store.deletes


def _in_init(store: Store) -> bool:
    return store.method == "__init__" and not store.deletes


_READERS = frozenset({"isinstance", "len", "type", "id", "hasattr", "getattr"})
"""Builtins that only look at what they are given."""


def _changes(
    method: ast.FunctionDef,
    attr: str,
    assigned: list[ast.Assign],
    reads: Callable[[ast.Call, ast.expr], bool] = lambda call, arg: False,
) -> bool:
    """Whether `method` may change the module `self.<attr>` holds, other than by calling it:
    a method called on it (`self.blocks.append(m)`), an item stored or deleted, the module
    handed to a call (`setattr(self.proj, ...)`, `fuse(self.proj)`) but one that `reads`
    only reads it, or an assignment other than those `assigned`."""
    for node, parent, above in _self_attr_uses(method).get(attr, ()):
        if not isinstance(node.ctx, ast.Load):
            if not any(parent is a for a in assigned):
                return True
        elif isinstance(parent, ast.Attribute):  # `self.proj.fc = ...`, `self.proj.append(m)`
            if not isinstance(parent.ctx, ast.Load) or (
                isinstance(above, ast.Call) and above.func is parent
            ):
                return True
        elif isinstance(parent, ast.Subscript):
            if not isinstance(parent.ctx, ast.Load):
                return True
        elif isinstance(parent, ast.Call) and parent.func is not node:
            if not (
                (isinstance(parent.func, ast.Name) and parent.func.id in _READERS)
                or reads(parent, node)
            ):
                return True
        elif isinstance(parent, (ast.keyword, ast.Starred)):
            return True
    return False


_LEAVES = frozenset(
    "weight bias running_mean running_var num_batches_tracked eps momentum in_channels "
    "out_channels kernel_size stride padding dilation groups".split()
)
"""Attributes of a module that hold a tensor or a setting, not a module."""


def _reads_param(method: ast.FunctionDef, index: int) -> bool:
    """Whether the undecorated `method` only reads the module it is given as parameter
    `index`: each use of it is given to `isinstance`, `len`, ... (`_READERS`) or loads a chain
    of attributes that reaches a tensor or a setting (`branch.bn.running_var`, `_LEAVES`), so
    no module below it is called, stored into, bound or handed on."""
    params = [*method.args.posonlyargs, *method.args.args]
    if method.decorator_list or index >= len(params):
        return False
    name = params[index].arg
    parents = parents_of(method)
    for node in all_nodes(method):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return False
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        if not isinstance(node.ctx, ast.Load):
            return False
        parent = parents.get(id(node))
        if (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id in _READERS
            and any(a is node for a in parent.args)
        ):
            continue
        link: ast.AST = node
        while isinstance(above := parents.get(id(link)), ast.Attribute):
            if not isinstance(above.ctx, ast.Load):
                return False
            link = above
            if above.attr in _LEAVES:
                break
        else:
            return False
    return True


def _factory(call: ast.Call, qualname: str | None, tensors: TensorNames) -> bool | ast.expr | None:
    """`Scanner._made` of a tensor factory: True for `torch.zeros(...)`, `x.new_empty(...)`,
    `x.clone()` (`catalog.FRESH_FUNCTIONS`, `FRESH_METHODS`; never with `out=`), the tensor
    filled for `t.bernoulli_(p)` (`FILLING_METHODS`); None for any other call."""
    if any(k.arg == "out" for k in call.keywords):
        return None
    if qualname in catalog.FRESH_FUNCTIONS:
        return True
    func = call.func
    if isinstance(func, ast.Attribute) and tensors.is_tensor(func.value):
        if func.attr in catalog.FRESH_METHODS:
            return True
        if func.attr in catalog.FILLING_METHODS:
            return func.value
    return None


Use = tuple[ast.Attribute, ast.AST | None, ast.AST | None]
"""A `self.<attr>` node, its parent and its parent's parent."""


@functools.lru_cache(maxsize=512)
def _self_attr_uses(method: ast.FunctionDef) -> dict[str, list[Use]]:
    """Attribute name -> each `self.<name>` in `method` (`_changes`), found in one walk per
    method: `_changes` is asked about every attribute of a class, in the methods of its family."""
    parents = parents_of(method)
    uses: dict[str, list[Use]] = {}
    for node in all_nodes(method):
        if self_attr(node):
            parent = parents.get(id(node))
            uses.setdefault(node.attr, []).append((node, parent, parents.get(id(parent))))
    return uses


def _reads(node: ast.expr, name: str) -> bool:
    """Whether `node` holds `name` other than to read its size, dtype or device."""
    parents = parents_of(node)
    return any(
        isinstance(n, ast.Name)
        and n.id == name
        and not (
            isinstance(parent := parents.get(id(n)), ast.Attribute)
            and parent.attr in _BENIGN_ATTRIBUTES
        )
        for n in ast.walk(node)
    )
