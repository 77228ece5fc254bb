"""`validate`: what still stands between a model and "every op is a module used once".

Two cheap passes: one forward run with a single global forward hook counts calls per leaf
module (on meta tensors when the model allows it, so nothing is computed), and one fx trace
lists the catalog ops that run as functions, operators or methods, each with the source line
that made it. Both are linear in the size of the model.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_map

from migrator.prove.ops import runtime_catalog, scalar_nodes
from migrator.graph import as_tuple, describe_source, owning_module
from migrator.prove.outputs import run_seeded
from migrator.prove.trace import SOURCE, TraceFailure, trace


@dataclass(frozen=True)
class ReusedModule:
    """A leaf module called more than once per forward."""

    paths: tuple[str, ...]
    """Every name the module has in the model."""
    cls: str
    calls: int
    stateful: bool
    """Holds parameters or buffers: copies would untie them."""


@dataclass(frozen=True)
class FunctionalOp:
    """A catalog op that runs without a module of its own."""

    call: str
    """How it is called: `torch.nn.functional.relu`, `.softmax()`, `+`."""
    module: str
    """The catalog module that would replace it."""
    owner: str
    """The module whose forward calls it ('' for the root)."""
    source: str
    code: str


@dataclass
class ValidationResult:
    model: str
    reused_modules: list[ReusedModule] = field(default_factory=list)
    functional_ops: list[FunctionalOp] = field(default_factory=list)
    trace_error: str | None = None
    """Why ops could not be listed (fx could not trace the model)."""
    modules_called: int = 0
    graph_nodes: int = 0

    @property
    def ok(self) -> bool:
        return not (self.reused_modules or self.functional_ops or self.trace_error)

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        lines = [
            f"validate {self.model}: {self.modules_called} leaf module(s) called, "
            f"{self.graph_nodes} graph node(s)"
        ]
        if self.reused_modules:
            lines.append(f"  leaf modules called more than once ({len(self.reused_modules)}):")
            for m in self.reused_modules:
                fix = (
                    "has parameters or buffers: share it on purpose or create one per call"
                    if m.stateful
                    else "stateless: give each call its own copy"
                )
                lines.append(
                    f"    `{'`, `'.join(m.paths)}` ({m.cls}) called {m.calls} times; {fix}"
                )
        if self.functional_ops:
            lines.append(f"  ops without a module ({len(self.functional_ops)}):")
            for op in self.functional_ops:
                where = f" in `{op.owner}`" if op.owner else ""
                code = f"  `{op.code}`" if op.code else ""
                lines.append(f"    {op.source}: {op.call}{where} -> {op.module}{code}")
        if self.trace_error:
            lines.append("  ops not listed: " + self.trace_error.replace("\n", "\n    "))
        if self.ok:
            lines.append("  ok: every op on the forward path is a module called once")
        return "\n".join(lines)


def validate(
    model: torch.nn.Module,
    example_inputs: Any,
    *,
    verbose: bool = True,
    modules_to_exclude: Iterable[Any] | None = None,
    module_classes_to_exclude: Iterable[type] | None = None,
    concrete_args: dict[str, Any] | None = None,
) -> ValidationResult:
    """Report leaf modules called more than once (by running `model` once on `example_inputs`:
    on meta tensors, or for real with its buffers and the RNG left as they were) and catalog ops
    without a module (from the fx graph). Prints the report unless `verbose=False`."""
    result = ValidationResult(type(model).__name__)
    _count_calls(model, as_tuple(example_inputs), result)
    try:
        gm = trace(model, modules_to_exclude or (), module_classes_to_exclude or (), concrete_args)
    except TraceFailure as exc:
        result.trace_error = str(exc)
    else:
        _list_functional_ops(gm, result)
    if verbose:
        print(result)
    return result


def _count_calls(model: torch.nn.Module, inputs: tuple[Any, ...], result: ValidationResult) -> None:
    counts: Counter[int] = Counter()

    def count(module, args, output):
        counts[id(module)] += 1

    handle = torch.nn.modules.module.register_module_forward_hook(count)
    try:
        try:
            _run_on_meta(model, inputs)
        except Exception:  # data-dependent control flow, an op without a meta kernel...
            counts.clear()
            run_seeded(model, inputs)
    finally:
        handle.remove()
    paths: dict[int, list[str]] = {}
    leaves: dict[int, torch.nn.Module] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        if not module._modules:
            paths.setdefault(id(module), []).append(path)
            leaves[id(module)] = module
    result.modules_called = sum(1 for key in leaves if counts[key])
    for key, module in leaves.items():
        if counts[key] > 1:
            stateful = bool(module._parameters or module._buffers)
            result.reused_modules.append(
                ReusedModule(tuple(paths[key]), type(module).__name__, counts[key], stateful)
            )


def _run_on_meta(model: torch.nn.Module, inputs: tuple[Any, ...]) -> None:
    """Run the model's own modules with weights, buffers and inputs swapped for meta tensors:
    every module call happens (and is hooked) but nothing is computed or changed."""
    state = {
        name: t.to("meta")
        for name, t in itertools.chain(model.named_parameters(), model.named_buffers())
    }
    meta_inputs = tree_map(lambda x: x.to("meta") if isinstance(x, torch.Tensor) else x, inputs)
    with torch.no_grad():
        torch.func.functional_call(model, state, meta_inputs)


def _list_functional_ops(gm: torch.fx.GraphModule, result: ValidationResult) -> None:
    catalog = runtime_catalog()
    nodes = list(gm.graph.nodes)
    result.graph_nodes = len(nodes)
    scalars = scalar_nodes(nodes)
    for node in nodes:
        match = catalog.match(node)
        if match is None:
            continue
        if match.kind == "operator" and all(
            not isinstance(a, torch.fx.Node) or a in scalars for a in node.args
        ):
            continue
        source = node.meta.get(SOURCE)
        located = describe_source(source, with_code=True)
        location, _, code = located.partition(": `")
        result.functional_ops.append(
            FunctionalOp(
                match.call, match.op.module_name, owning_module(node), location, code.rstrip("`")
            )
        )
