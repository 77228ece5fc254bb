"""`prepare_model`: trace a model with torch.fx and give every op on its forward path its own
module, as `migrator fix` does to the source.

Catalog ops (found by their resolved target, never by node name) become their catalog module,
attached under the submodule that called them; stateless modules called more than once are
split into copies; modules holding parameters or buffers are never copied, only reported.
"""

from __future__ import annotations

import copy
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypedDict

import torch
from torch import fx
from torch.fx import Node

from migrator import catalog
from migrator.catalog import MODULE_ATTRIBUTES, Op, Role
from migrator.graph import as_tuple, called_module, describe_source, owning_module
from migrator.prove.ops import (
    Match,
    bind,
    build_module,
    forward_inputs,
    resolve,
    runtime_catalog,
    scalar_nodes,
    training_value,
)
from migrator.prove.outputs import difference, run_seeded
from migrator.prove.trace import (
    AUGMENTED,
    READS_SELF_TRAINING,
    SOURCE,
    PrepareError,
    TraceFailure,
    trace,
)
from migrator.refusal import Refusal

REPORT = "migrator_prepare"
"""GraphModule.meta key holding the `PrepareReport`."""


class PrepareWarning(UserWarning):
    """Ops left as functions, or stateful modules called at several sites."""


@dataclass(frozen=True)
class Converted:
    call: str
    module: str
    source: str


@dataclass(frozen=True)
class Left:
    call: str
    owner: str
    source: str
    reason: str


@dataclass(frozen=True)
class Copied:
    original: str
    copy: str
    source: str


@dataclass(frozen=True)
class Shared:
    module: str
    cls: str
    calls: int
    sources: tuple[str, ...]


@dataclass
class PrepareReport:
    """What `prepare_model` did and left; `str()` is a readable summary."""

    converted: list[Converted] = field(default_factory=list)
    copies: list[Copied] = field(default_factory=list)
    left: list[Left] = field(default_factory=list)
    shared: list[Shared] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [
            f"{len(self.converted)} op(s) turned into modules, {len(self.copies)} module "
            f"call(s) given a copy"
        ]
        if self.left:
            lines.append(f"left as functions ({len(self.left)}):")
            lines += [
                f"  {x.source}: {x.call} in `{x.owner or '<root>'}`: {x.reason}" for x in self.left
            ]
        if self.shared:
            lines.append(
                f"modules with parameters or buffers called at several sites, not "
                f"copied (a copy would untie their weights) ({len(self.shared)}):"
            )
            lines += [
                f"  `{x.module}` ({x.cls}) called {x.calls} times: {', '.join(x.sources)}"
                for x in self.shared
            ]
        return "\n".join(lines)


class _TraceOptions(TypedDict):
    """What `trace` is given: tracing again in the other mode must see the same."""

    modules_to_exclude: Iterable[Any]
    module_classes_to_exclude: Iterable[type]
    concrete_args: dict[str, Any] | None


def prepare_model(
    model: torch.nn.Module,
    modules_to_exclude: Iterable[Any] | None = None,
    module_classes_to_exclude: Iterable[type] | None = None,
    concrete_args: dict[str, Any] | None = None,
    example_inputs: Any = None,
) -> fx.GraphModule:
    """A GraphModule computing what `model` computes, with every catalog op a module used once.

    `modules_to_exclude` (qualified names or module objects) and `module_classes_to_exclude`
    (subclasses too) stay leaves; `concrete_args` goes to tracing. The returned module shares its
    leaf modules and weights with `model`, which is not changed. With `example_inputs`, both are
    run (same seed) and their outputs must be `torch.equal`, else `PrepareError`. What could not
    be converted is warned about (`PrepareWarning`) and kept in `gm.meta["migrator_prepare"]`.
    Raises `TraceFailure` when fx cannot trace the model.
    """
    options = _TraceOptions(
        modules_to_exclude=modules_to_exclude or (),
        module_classes_to_exclude=module_classes_to_exclude or (),
        concrete_args=concrete_args,
    )
    gm = _prepare(model, options, code=True)
    report = prepare_report(gm)
    if report.left or report.shared:
        warnings.warn(
            f"prepare_model({type(model).__name__}): {report}", PrepareWarning, stacklevel=2
        )
    if example_inputs is not None:
        _self_check(model, gm, as_tuple(example_inputs))
    return gm


def prepare_graph(model: torch.nn.Module) -> fx.GraphModule:
    """The graph `prepare_model(model)` derives, in a `GraphOnly` module: to compare, never to
    run (no Python code is generated); no warning, the report is in its meta as well."""
    options = _TraceOptions(modules_to_exclude=(), module_classes_to_exclude=(), concrete_args=None)
    return _prepare(model, options, code=False)


def _prepare(model: torch.nn.Module, options: _TraceOptions, code: bool) -> fx.GraphModule:
    gm = trace(model, **options, code=code)
    gm.training = model.training
    report = PrepareReport()
    namer = _Namer(gm, model)
    # a graph to compare is never run: equal new modules holding nothing may be one, and a
    # split module's "copy" is the module itself
    _convert_ops(gm, model, options, namer, report, _new_module if code else _SharedModules())
    _split_reused_modules(gm, namer, report, copy.deepcopy if code else lambda module: module)
    if report.converted or report.copies:  # else the traced graph and its code stand
        gm.graph.lint()
        gm.recompile()
    gm.meta[REPORT] = report
    return gm


def prepare_report(gm: fx.GraphModule) -> PrepareReport:
    """The report of a GraphModule returned by `prepare_model`."""
    return gm.meta[REPORT]


class _Namer:
    """Free attribute names under a module path, avoiding what the original module has too."""

    def __init__(self, gm: fx.GraphModule, model: torch.nn.Module) -> None:
        self.gm, self.model = gm, model
        self.taken: set[str] = set()
        self._used: dict[str, set[str]] = {}
        """owner -> the attribute names its module has in the model or the GraphModule before
        any is added (each name added is in `taken`)."""

    def name(self, owner: str, base: str) -> str:
        used = self._used.get(owner)
        if used is None:
            used = self._used[owner] = set(MODULE_ATTRIBUTES)
            for root in (self.gm, self.model):
                try:
                    used |= _attribute_names(root.get_submodule(owner))
                except AttributeError:
                    pass
        prefix = f"{owner}." if owner else ""
        n = 0
        while True:
            candidate = prefix + (f"{base}_{n}" if n else base)
            if candidate.rpartition(".")[2] not in used and candidate not in self.taken:
                self.taken.add(candidate)
                return candidate
            n += 1


def _attribute_names(module: torch.nn.Module) -> set[str]:
    """`set(dir(module))`, with its class's share read once per class."""
    if type(module).__dir__ is not torch.nn.Module.__dir__:
        return set(dir(module))
    own = (module.__dict__, module._parameters, module._modules, module._buffers)
    names = {name for names in own for name in names if not name[0].isdigit()}
    return names | _class_attributes(type(module))


def _class_attributes(cls: type) -> frozenset[str]:
    if cls not in _CLASS_ATTRIBUTES:
        _CLASS_ATTRIBUTES[cls] = frozenset(dir(cls))
    return _CLASS_ATTRIBUTES[cls]


_CLASS_ATTRIBUTES: dict[type, frozenset[str]] = {}


def _convert_ops(
    gm: fx.GraphModule,
    model: torch.nn.Module,
    options: _TraceOptions,
    namer: _Namer,
    report: PrepareReport,
    modules: Callable[[Op, Any, fx.GraphModule, bool], torch.nn.Module],
) -> None:
    ops = runtime_catalog()
    graph = gm.graph
    scalars = scalar_nodes(graph.nodes)
    matches = [
        (n, m)
        for n in graph.nodes
        if (m := ops.match(n)) is not None and not _on_scalars(n, m, scalars)
    ]
    following = _training_following_mode(model, options, matches)
    for node, match in matches:
        owner = owning_module(node)
        source = describe_source(node.meta.get(SOURCE))
        try:
            readers = _later_readers(gm, node) if match.inplace else []
            inplace = match.inplace or bool(node.meta.get(AUGMENTED))
            bound = bind(match.op, node, lambda _: node in following, model, inplace)
            path = _weight_owner(gm, model, match.op, bound)
            if path is None:
                module = modules(match.op, bound, gm, _submodule(model, owner).training)
                path = namer.name(owner, bound.key)
                gm.add_submodule(path, module)
        except Refusal as why:
            report.left.append(Left(match.call, owner, source, why.message))
            continue
        with graph.inserting_before(node):
            replacement = graph.call_module(path, forward_inputs(bound), dict(bound.call))
        replacement.meta = dict(node.meta)
        node.replace_all_uses_with(replacement)
        for reader in readers:
            reader.replace_input_with(node.args[0], replacement)
        graph.erase_node(node)
        if bound.weight is not None and not bound.weight.users:
            graph.erase_node(bound.weight)
        report.converted.append(Converted(match.call, path, source))


def _new_module(op: Op, bound: Any, gm: fx.GraphModule, training: bool) -> torch.nn.Module:
    """The module a bound call becomes, in the mode of the module that made the call."""
    return build_module(op, bound, gm).train(training)


class _SharedModules:
    """`_new_module` for a graph to compare, never run: calls that build equal modules holding
    nothing (same class, arguments and mode) share one."""

    def __init__(self) -> None:
        self.built: dict[tuple[str, str, bool], torch.nn.Module] = {}

    def __call__(self, op: Op, bound: Any, gm: fx.GraphModule, training: bool) -> torch.nn.Module:
        key = (bound.module, repr(bound.ctor), training)
        module = self.built.get(key) if bound.weight is None else None
        if module is None:
            module = _new_module(op, bound, gm, training)
            if bound.weight is None and not (
                module._parameters or module._buffers or module._modules
            ):
                self.built[key] = module
        return module


def _weight_owner(gm: fx.GraphModule, model: torch.nn.Module, op: Op, bound) -> str | None:
    """For `F.prelu(x, self.act.weight)` where `self.act` is the op's own module class (an
    nn.PReLU): the path of that module, now called instead of a new one being made."""
    if bound.weight is None:
        return None
    path, _, name = bound.weight.target.rpartition(".")
    owner = _submodule(model, path)
    if not path or name != "weight" or type(owner) is not resolve(op.module):
        return None
    parent, _, attribute = path.rpartition(".")
    setattr(gm.get_submodule(parent), attribute, owner)  # fx made a plain container there
    return path


def _on_scalars(node: Node, match: Match, scalars: set[Node]) -> bool:
    """An operator on sizes or other plain numbers, not on tensors."""
    return match.kind == "operator" and all(
        not isinstance(a, Node) or a in scalars for a in node.args
    )


def _has_training(op: Op) -> bool:
    return any(a.role is Role.TRAINING for a in op.args)


def _submodule(model: torch.nn.Module, path: str) -> torch.nn.Module:
    return model.get_submodule(path) if path else model


def _training_following_mode(
    model: torch.nn.Module, options: _TraceOptions, matches: list[tuple[Node, Match]]
) -> set[Node]:
    """Nodes whose `training` argument is `self.training`: the call passes it as written
    (`READS_SELF_TRAINING`), or, traced again in the other mode, the same call (same position
    among such calls) gets the other value."""
    here = [(n, m) for n, m in matches if _has_training(m.op)]
    if not here:
        return set()
    if all(n.meta.get(READS_SELF_TRAINING) for n, _ in here):  # no second trace needed
        return {n for n, m in here if training_value(m.op, n) is model.training}
    modes = {m: m.training for m in model.modules()}
    model.train(not model.training)
    try:
        other = trace(model, **options, code=False)
    except TraceFailure:
        return set()
    finally:
        for module, mode in modes.items():
            module.training = mode
    ops = runtime_catalog()
    there = [
        n for n in other.graph.nodes if (m := ops.match(n)) is not None and _has_training(m.op)
    ]
    if [n.target for n, _ in here] != [n.target for n in there]:
        return set()
    return {
        node
        for (node, match), twin in zip(here, there)
        if training_value(match.op, node) is model.training
        and training_value(match.op, twin) is (not model.training)
    }


def _later_readers(gm: fx.GraphModule, node: Node) -> list[Node]:
    """The nodes after the in-place op `node` that read the tensor it changes, to be given the
    out-of-place result instead. Refuses unless that tensor is the fresh output of a module and
    nothing but such modules read it before (any other reader may hold a view of it)."""
    target = node.args[0] if node.args else None
    if not (isinstance(target, Node) and _made_fresh(gm, target)):
        raise Refusal(
            "MIG108",
            "changes in place a tensor that may be shared (not the fresh output of a module, a "
            "factory, or a module passing on such a tensor that nothing else reads)",
        )
    later = set()
    cursor = node.next
    while cursor.op != "root":
        later.add(cursor)
        cursor = cursor.next
    for reader in target.users:
        if (
            reader is not node
            and reader not in later
            and not (reader.op == "call_module" and _fresh_output(called_module(gm, reader)))
        ):
            raise Refusal(
                "MIG108",
                "changes in place a tensor read before by an op that may hold a view of it",
            )
    return [reader for reader in target.users if reader in later]


def _made_fresh(gm: fx.GraphModule, node: Node) -> bool:
    """Whether `node` gives a tensor nothing else sees, by the static checker's rules: the
    output of a module that always returns a new one (`catalog.output_kind`), a factory
    (`catalog.FRESH_FUNCTIONS`, `FRESH_METHODS`, never with `out=`), or what a module that passes
    its input on, or a fill (`FILLING_METHODS`), gives of such a tensor read by nothing else."""
    if node.op == "call_module":
        module = called_module(gm, node)
        name = _known_classes().get(type(module)) if not _rerouted(module) else None
        inplace = bool(getattr(module, "inplace", False))
        kind = catalog.output_kind(name, inplace) if name is not None else ""
        return kind == "fresh" or (kind == "input" and _passes_fresh(gm, node))
    if "out" in node.kwargs:
        return False
    if node.op == "call_function":
        name = getattr(node.target, "__name__", "")
        return getattr(torch, name, None) is node.target and f"torch.{name}" in (
            catalog.FRESH_FUNCTIONS
        )
    if node.op == "call_method":
        if node.target in catalog.FRESH_METHODS:
            return True
        return node.target in catalog.FILLING_METHODS and _passes_fresh(gm, node)
    return False


def _passes_fresh(gm: fx.GraphModule, node: Node) -> bool:
    """Whether the first input `node` passes on is fresh (`_made_fresh`) and read by it alone."""
    first = node.args[0] if node.args else None
    return isinstance(first, Node) and len(first.users) == 1 and _made_fresh(gm, first)


def _fresh_output(module: torch.nn.Module) -> bool:
    """Whether `module` always returns a new tensor (`catalog.fresh_output`, which the static
    checker asks too)."""
    name = _known_classes().get(type(module)) if not _rerouted(module) else None
    return name is not None and catalog.fresh_output(name, bool(getattr(module, "inplace", False)))


def _rerouted(module: torch.nn.Module) -> bool:
    """Whether calling `module` may give something else than its class's `forward` does: a
    forward hook (which may return a tensor it keeps, or the input), a pre-hook (which may hand
    it another input), of its own or global, or a `forward` of the instance."""
    hooks = torch.nn.modules.module
    return bool(
        module._forward_hooks
        or module._forward_pre_hooks
        or hooks._global_forward_hooks
        or hooks._global_forward_pre_hooks
        or "forward" in vars(module)
    )


@cache
def _known_classes() -> dict[type, str]:
    """Module classes `catalog.fresh_output` knows, with their qualified names there."""
    return {
        cls: name for name in catalog.output_known_modules() if (cls := resolve(name)) is not None
    }


def _split_reused_modules(
    gm: fx.GraphModule,
    namer: _Namer,
    report: PrepareReport,
    copied: Callable[[torch.nn.Module], torch.nn.Module],
) -> None:
    calls: dict[str, list[Node]] = defaultdict(list)
    for node in gm.graph.nodes:
        if node.op == "call_module":
            calls[node.target].append(node)
    for target, nodes in calls.items():
        if len(nodes) < 2:
            continue
        module = gm.get_submodule(target)
        sources = tuple(describe_source(n.meta.get(SOURCE)) for n in nodes)
        if next(module.parameters(), None) is not None or next(module.buffers(), None) is not None:
            report.shared.append(Shared(target, type(module).__name__, len(nodes), sources))
            continue
        owner, _, attribute = target.rpartition(".")
        for node, source in zip(nodes[1:], sources[1:]):
            path = namer.name(owner, attribute)
            gm.add_submodule(path, copied(module))
            node.target = path
            report.copies.append(Copied(target, path, source))


def _self_check(model: torch.nn.Module, gm: fx.GraphModule, inputs: tuple[Any, ...]) -> None:
    expected = run_seeded(model, inputs)
    try:
        actual = run_seeded(gm, inputs)
    except Exception as exc:  # the prepared model's modules may raise anything
        raise PrepareError(
            f"the prepared {type(model).__name__} fails on the example inputs: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    found = difference(expected, actual)
    if found:
        raise PrepareError(
            f"the prepared {type(model).__name__} does not reproduce the original "
            f"on the example inputs: {found}"
        )
