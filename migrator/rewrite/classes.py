"""Analysis of one `nn.Module` subclass: the methods on its forward path are scanned for ops
and module calls, then reused modules are split and the new modules placed in `__init__`."""

from __future__ import annotations

import ast
from functools import partial
from typing import Callable

from migrator import catalog
from migrator.catalog import MODULE_ATTRIBUTES
from migrator.rewrite.annotations import annotation_kind
from migrator.rewrite.attributes import ClassAttributes
from migrator.rewrite.context import MANY, FileContext, Site, self_attr
from migrator.rewrite.creation import ModuleCreator
from migrator.rewrite.family import Family
from migrator.rewrite.held_methods import forward_runs, held_iterations
from migrator.rewrite.helpers import (
    plain_calls,
    plain_result,
    record_tensor_params,
    report_helper_ops,
    return_annotation,
    target_of,
)
from migrator.rewrite.hook_methods import report_hooks
from migrator.rewrite.hyper import HyperParameters
from migrator.rewrite.indirect_helpers import report_indirect_helpers
from migrator.rewrite.loops import LoopCopies
from migrator.rewrite.object_methods import (
    holds_plain_object,
    report_object_methods,
    report_passed_in_helpers,
)
from migrator.rewrite.order import ForwardOrder
from migrator.rewrite.outside_runs import outside_runs, report_outside, report_without_forward
from migrator.rewrite.placement import Placement, Registration
from migrator.rewrite.project import ClassInfo
from migrator.rewrite.reuse import ReusedModules
from migrator.rewrite.runs import inherited_reach, init_reach, once_an_iteration, reach
from migrator.rewrite.scan import Scanner
from migrator.rewrite.settings import SubmoduleSettings
from migrator.rewrite.stores import Store, changed_after_init, stores_of
from migrator.rewrite.taken import TakenNames, WorksOut
from migrator.rewrite.tensors import TensorNames
from migrator.rewrite.walk import Visit, header_lines


class ClassAnalysis:
    """Analysis of one `nn.Module` subclass."""

    def __init__(
        self, ctx: FileContext, cls: ClassInfo, family: Family, analysis: WorksOut
    ) -> None:
        self.ctx = ctx
        self.cls = cls
        self.family = family
        self.attributes = ClassAttributes(ctx, cls, family)
        self.names = TakenNames(ctx, cls, family, analysis)
        self.settings = SubmoduleSettings(ctx, self.attributes)

    def run(self, place: bool = True) -> list[Registration]:
        """Plan the class's rewrite; the modules it creates (placed in `__init__` unless
        `place` is False: a helper's stand-in class, whose `__init__` is written whole)."""
        methods = self.attributes.methods
        forward = methods.get("forward")
        if forward is not None or self.cls.qualname in self.ctx.promoted:
            if forward is not None:
                self._check_signature(forward)
            path, reached = methods, forward_runs(self.ctx, self.cls, self.family)
        else:  # an inherited forward may run methods this class overrides
            path, reached = inherited_reach(self.ctx, self.cls, self.family)
            if not reached:
                report_without_forward(self.ctx, self.cls, self.family)
                return []
        module_attrs = self.attributes.module_attrs()
        called = module_attrs | self._unknown_callees([methods[name] for name in reached], path)
        order = ForwardOrder(path, self._method_calls(path), self.ctx.positions_of)
        creator = ModuleCreator(self.ctx, self.attributes, self.family, self.names)
        hyper = HyperParameters(self.ctx, self.attributes)
        reused = ReusedModules(
            self.ctx,
            self.attributes,
            creator,
            self.settings.held_function,
            partial(holds_plain_object, self.ctx, self.settings),
        )
        placement = Placement(self.ctx, self.attributes, order)
        steps = []
        init_runs = init_reach(self.ctx, self.cls, self.family)
        evident = self._evident(called - module_attrs)
        loops_of = {
            name: LoopCopies(
                self.ctx, methods[name], self.attributes, hyper, self.ctx.locals_of(methods[name])
            )
            for name in reached
        }
        inherited = forward is None and self.cls.qualname not in self.ctx.promoted
        per_iteration = self._once_an_iteration(inherited, reached, loops_of)
        containers = self.settings.tensor_containers(methods)
        outside = outside_runs(self.ctx, self.cls, self.family)
        for index, (name, times) in enumerate(reached.items()):
            method = methods[name]
            placement.record_runs(method, module_attrs)
            if self.ctx.skip.intersection(header_lines(method)):
                continue
            tensors = TensorNames(
                method,
                [v.node for v in self.ctx.visits(method)],
                partial(self.ctx.info.names.resolve, shadowed=self.ctx.locals_of(method)),
                module_attrs,
                self.attributes.tensor_attrs,
                helper_call=self._helper_call(method),
                returns=partial(self._returns, method, methods),
                evident=evident,
                unknown_attrs=self.attributes.may_hold_tensors - self.attributes.tensor_attrs,
                plain_setting=self.settings.plain,
                aliases=self.ctx.info.aliases,
                plain_call=partial(plain_result, self.ctx, caller=method, methods=methods),
                first_declared=partial(self._first_declared, method, methods),
                unknown_globals=self.ctx.info.names.unknown,
                attr_kinds=containers,
                tensor_params=self._given_tensors(method),
            )
            self.ctx.plain_calls.update(plain_calls(self.ctx, method, methods, tensors))
            record_tensor_params(self.ctx, method, methods, tensors)
            loops = loops_of[name]
            scanner = Scanner(
                self.ctx,
                method,
                max(times, 2) if name in outside else times,
                tensors,
                called,
                attrs=self.attributes.attrs,
                held=self.attributes.held,
                order=order,
                sites=reused,
                hyper=hyper,
                creator=creator,
                methods=methods,
                owner=self.cls,
                loops=loops,
                init_run=init_runs.get(name),
                once_an_iteration=name in per_iteration,
                outside=outside[name].why if name in outside else None,
                held_helper=self.settings.held_helper,
            )
            reused.loops[id(method)] = loops
            steps += [(key, index, at, scanner, visit) for key, at, visit in scanner.steps()]
        # the nodes of all methods in the order forward runs them: created modules are named so
        try:
            for *_, scanner, visit in sorted(steps, key=lambda step: step[:3]):
                scanner.scan(visit)
        finally:
            for *_, scanner, _ in steps:
                scanner.release()
        if "MIG115" not in self.ctx.disable:
            helpers = report_helper_ops(
                self.ctx, self.cls.name, methods, [methods[name] for name in reached]
            )
            report_passed_in_helpers(self.ctx, helpers)
            report_indirect_helpers(self.ctx, self.cls.name, [methods[name] for name in reached])
            report_object_methods(
                self.ctx, self.cls, [methods[name] for name in reached], self.settings, self.family
            )
            report_hooks(self.ctx, self.cls, methods)
            report_outside(self.ctx, self.cls, set(reached), outside)
        beside = [methods[n] for n, run in outside.items() if not run.instead and n not in reached]
        self._outside_calls(beside, reused, order)
        reused.split()
        if place:
            placement.place(creator.registrations)
        return creator.registrations

    def _outside_calls(
        self, outside: list[ast.FunctionDef], reused: ReusedModules, order: ForwardOrder
    ) -> None:
        """Count the calls that methods forward does not run but a hook (or `__call__`, ...)
        does (`outside_runs`) make of a module forward calls: each runs where no call can be
        counted, so that module is not split, and is reported (MIG110)."""
        for method in outside:
            for call, _ in self.ctx.call_visits(method):
                func = call.func
                if self_attr(func) and func.attr in reused.sites:
                    key = order.key(method, call)
                    reused.add(Site(func.attr, func, 2, key, skipped=True, method=method))

    def _returns(
        self, method: ast.FunctionDef, methods: dict[str, ast.FunctionDef], call: ast.Call
    ) -> ast.expr | None:
        """`TensorNames.returns`: the return annotation of the method or helper a call runs,
        or of the `forward` of the module `self.<attr>(...)` calls when `__init__` builds it
        once from a class found and nothing changes it after (`self.part = Part()`;
        `Part.forward -> Tuple[Tensor, int]`);
        `Tensor` when `__init__` sets it only to `None` or to a `torch.nn` class that always
        returns a new tensor (`catalog.fresh_output`: `nn.Linear`); of the method
        `self.<attr>.<name>(...)` calls, a method of that class itself, undecorated (fcos's
        `self.box_coder.encode(...)`, `BoxLinearCoder.encode -> Tensor`)."""
        found = return_annotation(self.ctx, call, method, methods)
        func = call.func
        if found is None and isinstance(func, ast.Attribute) and self_attr(func.value):
            called = self._method_of(func.value.attr, func.attr)
            return called.returns if called is not None else None
        if found is not None or not self_attr(func) or func.attr in methods:
            return found
        if self.settings.made_by(func.attr, lambda made: catalog.fresh_output(made, False)):
            return ast.Name("Tensor", ast.Load())  # `nn.Linear(...)` where not `None`
        forward = self._forward_of(func.attr, lambda f: f.returns is not None)
        return forward.returns if forward is not None else None

    def _method_of(self, attr: str, name: str) -> ast.FunctionDef | None:
        """The method `name` of the class of the project `__init__` builds `self.<attr>` from
        once, undecorated, when nothing binds `self.<attr>` again nor stores into it after
        (calls of its methods may: they change no method of the class), nor does the class
        store into its own attribute `name`: `self.<attr>.<name>(...)` runs that method."""
        cls = self._built_class(attr)
        method = cls.methods().get(name) if cls is not None else None
        if cls is None or method is None or method.decorator_list:
            return None
        lineage = [cls, *self.family.ancestors(cls)]
        if any(
            len(self.family.ancestors(c)) < len(c.node.bases) or stores_of(c, name)
            for c in lineage
            if not c.qualname.startswith("torch.")
        ):
            return None  # a base not found, or an instance attribute hiding the method
        return method if self._unchanged(attr, _rebinds) else None

    def _forward_of(
        self, attr: str, told: Callable[[ast.FunctionDef], bool]
    ) -> ast.FunctionDef | None:
        """The `forward` of the class of the project `__init__` builds `self.<attr>` from, once
        (`self.part = Part()`), when `told(forward)` and nothing changes `self.<attr>` after:
        that is asked only of a `forward` telling what the caller asks (the first call of each
        attribute works it out)."""
        cls = self._built_class(attr)
        forward = cls.methods().get("forward") if cls is not None else None
        if forward is None or not told(forward) or not self._unchanged(attr):
            return None
        return forward

    def _built_class(self, attr: str) -> ClassInfo | None:
        """The class of the project `__init__` builds `self.<attr>` from, once (whether anything
        changes it after is `_unchanged`)."""
        found = self.attributes.attrs.get(attr)
        if found is None or found.count != 1 or attr in self.attributes.assigned_elsewhere:
            return None
        value = found.value
        if not isinstance(value, ast.Call):
            return None
        return self.ctx.project.find_class(self.ctx.info.names.resolve(value.func), self.ctx.info)

    def _unchanged(self, attr: str, counts: Callable[[Store], bool] | None = None) -> bool:
        """Whether nothing changes `self.<attr>` after `__init__` (no store that `counts`:
        `changed_after_init`)."""
        owner, family = self.attributes.cls, self.attributes.family
        return not changed_after_init(family, owner, attr, counts, outside=False)

    def _first_declared(
        self, method: ast.FunctionDef, methods: dict[str, ast.FunctionDef], call: ast.Call
    ) -> bool:
        """`TensorNames.first_declared`: whether the module `self.<attr>(...)` calls (its class's
        `forward`), or the helper a call runs, annotates its first input with a known kind other
        than a tensor (`size: int`, as the modules `fix` makes of such helpers do): it takes that
        argument so, and the call proves nothing of it."""
        func = call.func
        if self_attr(func) and func.attr not in methods:
            told = self._forward_of(
                func.attr, lambda f: _declared([*f.args.posonlyargs, *f.args.args][1:])
            )
            return told is not None
        found = target_of(self.ctx, self.ctx.info, call, method, methods)
        return found is not None and _declared([*found[1].args.posonlyargs, *found[1].args.args])

    def _given_tensors(self, method: ast.FunctionDef) -> set[str]:
        """`HelperModules.given_tensors` of a helper's stand-in `forward` (none for a method)."""
        modules = self.ctx.helper_modules
        return modules.given_tensors(method) if modules is not None else set()

    def _helper_call(
        self, method: ast.FunctionDef
    ) -> Callable[[ast.Call, Callable[[ast.expr], bool]], bool] | None:
        """`TensorNames.helper_call` for the calls in one method."""
        modules = self.ctx.helper_modules
        if modules is None or "MIG004" in self.ctx.disable:
            return None
        return modules.helper_calls(method, self.attributes.methods, elsewhere=True)

    def _evident(self, attrs: set[str]) -> dict[str, tuple[str, list[str]]]:
        """What calling each of `attrs` (modules of classes not known statically) returns, with
        the targets proving it, where every instance the run-time evidence saw proves it."""
        path = str(self.cls.file.path)
        found = {}
        for attr in attrs:
            kind, proof = self.ctx.project.evidence.returns(path, self.cls.name, attr)
            if kind:
                found[attr] = (kind, proof)
        return found

    def _once_an_iteration(
        self, inherited: bool, reached: dict[str, int], loops_of: dict[str, LoopCopies]
    ) -> set[str]:
        """The methods that run once an iteration of loops whose trip count depends on the
        input: of forward's (`runs.once_an_iteration`; none for an inherited forward), or of
        the class's holders' (`held_iterations`), not both."""
        if inherited or all(times < MANY for times in reached.values()):
            return set()
        methods = self.attributes.methods
        by_function = {id(methods[name]): loops for name, loops in loops_of.items()}

        def input_only(function: ast.FunctionDef, visit: Visit) -> bool:
            loops = by_function.get(id(function))
            return loops is not None and loops.input_only(visit)

        found = once_an_iteration(self.ctx, self.cls, self.family, input_only)
        held = held_iterations(self.ctx, self.cls, self.family)
        own = reach(self.ctx, self.cls, self.family)
        return {name for name in found if name not in held} | {
            name
            for name, times in held.items()
            if times == 1 and reached.get(name, 0) >= MANY and name not in own
        }

    def _unknown_callees(
        self, reached: list[ast.FunctionDef], path: dict[str, ast.FunctionDef]
    ) -> set[str]:
        """Attributes called as `self.x(...)` on the forward path that are neither methods (of
        this class or a base found) nor known values: modules made elsewhere (a subclass's
        `__init__`, a setter), whose calls count as reuse all the same (MIG104 when several)."""
        methods = set(path).union(*(base.methods() for base in self.family.ancestors(self.cls)))
        known = (
            methods | MODULE_ATTRIBUTES | self.attributes.tensor_attrs | self.attributes.plain_attrs
        )
        return {
            call.func.attr
            for method in reached
            for call, _ in self.ctx.call_visits(method)
            if self_attr(call.func) and call.func.attr not in known
        }

    def _method_calls(
        self, methods: dict[str, ast.FunctionDef]
    ) -> Callable[[ast.FunctionDef], list[tuple[str, ast.AST]]]:
        """The (method name, call node) of each call of one of `methods` in a method."""

        def calls(method: ast.FunctionDef) -> list[tuple[str, ast.AST]]:
            return [
                (call.func.attr, call)
                for call, _ in self.ctx.call_visits(method)
                if self_attr(call.func) and call.func.attr in methods
            ]

        return calls

    def _check_signature(self, forward: ast.FunctionDef) -> None:
        args = forward.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            if arg.annotation is not None and _is_dict_annotation(arg.annotation):
                self.ctx.report(arg, "MIG201", f"forward input `{arg.arg}` is a dict")
        if forward.returns is not None and _is_dict_annotation(forward.returns):
            self.ctx.report(forward, "MIG201", "forward is annotated to return a dict")
            return
        for node in (v.node for v in self.ctx.visits_of(forward, _RETURNS)):
            if isinstance(node, ast.Return) and (
                isinstance(node.value, ast.Dict)
                or (
                    isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Name)
                    and node.value.func.id == "dict"
                )
            ):
                self.ctx.report(node, "MIG201", "forward returns a dict")


_RETURNS = frozenset({ast.Return})


def _is_dict_annotation(node: ast.expr) -> bool:
    head = ast.unparse(node).split("[", 1)[0].split(".")[-1]
    return head in {"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "TypedDict"}


def _declared(params: list[ast.arg]) -> bool:
    """Whether the first of `params` is annotated with a known kind other than a tensor."""
    return bool(params) and annotation_kind(params[0].annotation) not in (None, "tensor")


def _rebinds(store: Store) -> bool:
    """Whether a store binds the attribute again, or anything of it (not a method's call)."""
    return store.kind != "called" or store.call in ("__setattr__", "__delattr__")
