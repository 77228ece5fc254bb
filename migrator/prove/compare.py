"""The four equivalence checks of `migrator verify`, each comparing an original model with its
migrated twin (same weights) and returning a `CheckResult` with figures.

Graphs are compared in a canonical form where names do not matter: every node becomes its kind,
its target (function, method, or module class with its hyper-parameters and the names of the
weights it holds) and its arguments, with references to earlier nodes as positions.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from itertools import pairwise
from typing import Any, Literal

import torch
from torch import fx
from torch.fx.node import map_arg
from torch.utils._pytree import tree_leaves

from migrator.catalog import CATALOG, Op, Role
from migrator.prove.ops import resolve
from migrator.prove.outputs import count_tensors, difference, run_seeded
from migrator.prove.prepare import prepare_graph, prepare_report
from migrator.graph import called_module, describe_source, last_model_frame
from migrator.prove.trace import SOURCE, TraceFailure
from migrator.rewrite.plan import TWIN_DOC

Status = Literal["pass", "fail", "skip"]
PASS: Status = "pass"
FAIL: Status = "fail"
SKIP: Status = "skip"
_STRIDE_IS_KERNEL = frozenset(
    f"{kind}_pool{n}d{suffix}"
    for kind, suffix in (("max", ""), ("max", "_with_indices"), ("avg", ""))
    for n in (1, 2, 3)
)


@dataclass
class CheckResult:
    name: str
    status: Status
    """PASS, FAIL, or SKIP (did not run: never counted as a pass)."""
    detail: str
    figures: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """One line per item the check names (each op the preparer still had to convert)."""


@dataclass(frozen=True)
class _Ref:
    """A reference to the node at this position of the graph."""

    position: int

    def __repr__(self) -> str:
        return f"%{self.position}"


# --------------------------------------------------------------------------- (1) state_dict


def check_state_dict(original: torch.nn.Module, migrated: torch.nn.Module) -> CheckResult:
    """Load the original's weights into the migrated model with strict=True, then compare keys
    (in order), shapes and values. When `load_state_dict` copied every value as it is (see
    `_copied_as_they_are`), they are equal by that copy and not read again; otherwise every
    one is compared."""
    expected = original.state_dict(keep_vars=True)
    try:
        migrated.load_state_dict(expected, strict=True)
    except RuntimeError as exc:
        reason = " ".join(str(exc).split())
        return CheckResult("state_dict", FAIL, f"strict load fails: {reason}")
    actual = migrated.state_dict(keep_vars=True)
    figures: dict[str, Any] = {"tensors": len(expected)}
    if list(expected) != list(actual):
        figures["values"] = sum(t.numel() for t in expected.values())
        return CheckResult("state_dict", FAIL, "keys differ in order after loading", figures)
    copied = _copied_as_they_are(migrated, expected.values(), actual.values())
    figures["values"] = sum(t.numel() for t in expected.values()) if copied is None else copied
    if copied is None:
        for key, tensor in expected.items():
            loaded = actual[key]
            if tensor.shape != loaded.shape or not torch.equal(tensor, loaded):
                return CheckResult("state_dict", FAIL, f"`{key}` differs after loading", figures)
    figures["compared"] = len(expected) if copied is None else 0
    return CheckResult(
        "state_dict",
        PASS,
        f"{figures['tensors']} tensors "
        f"({figures['values']} values): keys, order, shapes and values equal "
        f"after a strict load ({figures['compared']} compared, the others copied as they are)",
        figures,
    )


def _copied_as_they_are(
    model: torch.nn.Module, sources: Iterable[Any], targets: Iterable[Any]
) -> int | None:
    """How many values `model.load_state_dict` wrote (`sources`, into `targets`: the values of
    the two state_dicts, keys in the same order), when it wrote every one of them with a plain
    `copy_` of the same shape, dtype, device and layout into memory no other value uses; None
    when one may not be: a module of `model` loads in its own way (its own
    `_load_from_state_dict`, or load hooks), a value is not a plain dense contiguous tensor
    (no subclass, lazy or meta one), or memory is shared."""
    if torch.__future__.get_swap_module_params_on_conversion() or not _loads_plainly(model):
        return None
    values = 0
    spans = []
    strided = torch.strided
    for source, target in zip(sources, targets):
        if not (
            type(source) in _PLAIN_TENSORS
            and type(target) in _PLAIN_TENSORS
            and source.shape == target.shape
            and source.dtype == target.dtype
            and source.device == target.device
            and source.layout == target.layout == strided
            and not target.is_meta
            and source.is_contiguous()
            and target.is_contiguous()
        ):
            return None
        values += source.numel()
        start = target.data_ptr()
        spans.append((start, start + target.nbytes))
        if source is not target:
            start = source.data_ptr()
            spans.append((start, start + source.nbytes))
    spans.sort()
    return values if all(end <= start for (_, end), (start, _) in pairwise(spans)) else None


def _loads_plainly(model: torch.nn.Module) -> bool:
    """Whether `model.load_state_dict` writes each value into the tensor its `state_dict` then
    returns under that key, as `torch.nn.Module` does: neither the model's `load_state_dict`
    nor a module's loader or `_SAVERS` is its own (on its class or the instance), and no
    module has load or state_dict hooks. Modules held twice are looked at twice, as
    `load_state_dict` loads them."""
    if (
        "load_state_dict" in vars(model)
        or type(model).load_state_dict is not _MODULE.load_state_dict
    ):
        return False
    classes: dict[type, bool] = {}
    stack: list[torch.nn.Module | None] = [model]
    while stack:
        module = stack.pop()
        if module is None:
            continue
        cls = type(module)
        plain = classes.get(cls)
        if plain is None:
            plain = classes[cls] = cls._load_from_state_dict in _COPYING_LOADERS and all(
                getattr(cls, name) is getattr(_MODULE, name) for name in _SAVERS
            )
        own = module.__dict__  # read as a dict: a third of the time of attribute reads
        if (
            not plain
            or own.get("_load_state_dict_pre_hooks")
            or own.get("_load_state_dict_post_hooks")
            or own.get("_state_dict_pre_hooks")
            or own.get("_state_dict_hooks")
            or "_load_from_state_dict" in own
            or "_save_to_state_dict" in own
            or "state_dict" in own
            or "get_extra_state" in own
            or "set_extra_state" in own
        ):
            return False
        stack.extend(module._modules.values())
    return True


_MODULE = torch.nn.Module
_COPYING_LOADERS = (
    _MODULE._load_from_state_dict,
    # adds `num_batches_tracked` when a state_dict of before version 2 lacks it, then as Module
    torch.nn.modules.batchnorm._NormBase._load_from_state_dict,
)
_SAVERS = ("_save_to_state_dict", "state_dict", "get_extra_state", "set_extra_state")
"""The methods besides the loader through which a module saves or loads its values."""
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


# --------------------------------------------------------------------------- (2) fx graph


def check_fx_graph(original: torch.nn.Module, migrated: torch.nn.Module) -> CheckResult:
    """The migrated model traces, and (prepared, so what its source still calls as functions
    counts as converted) equals the graph `prepare_model` derives from the original."""
    try:
        expected = prepare_graph(original)
    except TraceFailure as exc:
        return CheckResult(
            "fx graph", SKIP, f"fx cannot trace the original: {exc.reason} (at {exc.location})"
        )
    try:
        actual = prepare_graph(migrated)
    except TraceFailure as exc:
        return CheckResult(
            "fx graph",
            FAIL,
            f"the original traces, the migrated model does not: {exc.reason} (at {exc.location})",
        )
    expected_rows, actual_rows = _fx_rows(expected), _fx_rows(actual)
    report = prepare_report(actual)
    figures = {
        "nodes": len(actual_rows),
        "modules": sum(1 for n in actual.graph.nodes if n.op == "call_module"),
        "prepared_at_runtime": len(report.converted) + len(report.copies),
    }
    mismatch = _first_mismatch(expected_rows, actual_rows)
    if mismatch is not None:
        detail = (
            f"node {mismatch} differs: prepared original has "
            f"{_describe_fx(expected, mismatch)}, migrated has {_describe_fx(actual, mismatch)}"
        )
        return CheckResult("fx graph", FAIL, detail, figures)
    detail = f"{figures['nodes']} nodes ({figures['modules']} module calls) equal"
    if figures["prepared_at_runtime"]:
        detail += (
            f"; {figures['prepared_at_runtime']} op(s) or reused module(s) the migrated "
            "source leaves (see its findings) were prepared at runtime:"
        )
    return CheckResult("fx graph", PASS, detail, figures, _prepared_notes(report))


def _prepared_notes(report) -> list[str]:
    """Where the migrated source still needed the preparer: file:line, op, module."""
    notes = [
        f"{c.source}: {c.call} in `{c.module.rpartition('.')[0] or '<root>'}` -> module "
        f"`{c.module}`"
        for c in report.converted
    ]
    notes += [f"{c.source}: `{c.original}` called again -> copy `{c.copy}`" for c in report.copies]
    notes += [
        f"{x.source}: {x.call} in `{x.owner or '<root>'}` left as a function: {x.reason}"
        for x in report.left
    ]
    return notes


def _fx_rows(gm: fx.GraphModule) -> list[tuple]:
    state = gm.state_dict(keep_vars=True)
    names = _tensor_names(state)
    held = _held_names(state, names)
    modules = dict(gm.named_modules(remove_duplicate=False))
    positions: dict[fx.Node, int] = {}
    rows: list[tuple] = []
    twins = _wrapped_twins(gm)
    holders = {holder for holder, _ in twins.values()}
    for node in gm.graph.nodes:
        if node in holders:
            continue  # the module of a twin's ops: read as the helper it stands for
        positions[node] = len(rows)
        given = node.args[1:] if node in twins else node.args
        # map_arg maps nodes to any value; its types allow only fx arguments
        args, kwargs = map_arg((given, node.kwargs), lambda n: _Ref(positions[n]))  # type: ignore[arg-type, return-value]
        if node in twins:
            rows.append((node.op, twins[node][1], args, kwargs))
            continue
        if node.op == "call_module":
            assert isinstance(node.target, str)  # fx keeps the module's path there
            module = modules[node.target]
            args, kwargs = _bound(module, args, kwargs)
            qualname = _class_name(type(module))
            receiver = args[0] if args else next(iter(kwargs.values()), None)
            hyper = _effective(module, qualname, dict(_hyper_parameters(module)), kwargs, receiver)
            canonical = _as_module(qualname, hyper)
            if canonical is not None:  # its inputs, left in `kwargs`, rebound to its forward
                qualname, hyper = _class_name(type(canonical)), _hyper_parameters(canonical)
                args, kwargs = _bound(canonical, tuple(kwargs.values()), {})
            target: Any = (qualname, hyper, tuple(sorted(held.get(node.target, ()))))
        else:
            target = _fx_target(gm, node, names)
        rows.append((node.op, target, args, kwargs))
    return rows


def _wrapped_twins(gm: fx.GraphModule) -> dict[fx.Node, tuple[fx.Node, str]]:
    """The calls of a twin function `<helper>_ops(ops, ...)` that `fix` made of a helper fx
    keeps a leaf (`torch.fx.wrap`), whose first argument is a get_attr of the module holding
    its ops (its class's docstring names the helper; used by nothing else): each reads as a call of
    the helper, without that argument. The body of the twin fx never looks into; export and
    the outputs compare it. Call node -> (holder's get_attr node, `_qualname` of the helper)."""
    found: dict[fx.Node, tuple[fx.Node, str]] = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or not node.args:
            continue
        holder = node.args[0]
        name = getattr(node.target, "__name__", "")
        if (
            not isinstance(holder, fx.Node)
            or holder.op != "get_attr"
            or len(holder.users) != 1
            or not name.endswith("_ops")
            or any(holder is a for a in [*node.args[1:], *node.kwargs.values()])
        ):
            continue
        module: Any = gm
        for part in str(holder.target).split("."):
            module = getattr(module, part, None)
        helper_name = name.removesuffix("_ops")
        helper = getattr(node.target, "__globals__", {}).get(helper_name)
        if helper is not None and type(module).__doc__ == TWIN_DOC.format(helper_name):
            found[node] = (holder, _qualname(helper))
    return found


def _held_names(state: Mapping[str, Any], names: dict[int, str]) -> dict[str, list[str]]:
    """Module path -> the names (as in `names`) of the tensors its state_dict holds, read off
    the root's state_dict (a module's keys are those under its path)."""
    held: dict[str, list[str]] = {}
    for key, tensor in state.items():
        path = key
        while "." in path:
            path = path.rpartition(".")[0]
            held.setdefault(path, []).append(names.get(id(tensor), "?"))
    return held


def _effective(
    module: torch.nn.Module, qualname: str, hyper: dict, arguments: dict, receiver: Any
) -> tuple:
    """A catalog module's hyper-parameters as the call applies them: one it takes at call time
    (`Arg.at_call`) is the value the call passes, when it passes one (`arguments` loses it),
    and one applied in training mode only (`Arg.gate`) is its default in eval mode. So
    `Mean(dim=1)(x)` and `Mean()(x, dim=1)` are one call. `Op.inplace_extra` acts on a tensor
    `receiver` (its first input) only: `Add(as_inplace=True)(0, t)` is `Add()(0, t)`, as fx
    traces `acc += t` on `acc = 0` (an earlier iteration may have made `acc` a tensor)."""
    for op in _ops_by_module().get(qualname, ()):
        if not isinstance(receiver, _Ref):
            for name, _ in op.inplace_extra:
                hyper.pop(name, None)
        for arg in op.args:
            if arg.gate and hyper.pop(arg.gate, False) and not module.training:
                hyper[arg.ctor_name] = arg.default
            if arg.at_call and arg.name in arguments:
                value = arguments.pop(arg.name)
                if value is not None:
                    hyper[arg.ctor_name] = _plain(value)
    return tuple(sorted(hyper.items()))


def _as_module(qualname: str, hyper: tuple) -> torch.nn.Module | None:
    """The `op.module` a `call_module` (`Op.call_module`) stands for when its settings, those
    given at call time included, are all constants that module takes (None: they are not):
    `MaxPool(dims=2)` called with `kernel_size=3` is `nn.MaxPool2d(3)`, as the preparer makes
    of a size it sees as a constant."""
    for op in _ops_by_call_module().get(qualname, ()):
        values = dict(hyper)
        if any(values.pop(name, None) != value for name, value in op.call_extra):
            continue
        names = {a.ctor_name for a in op.args if a.role is Role.HYPER and not a.call_only}
        only = [a for a in op.args if a.call_only]
        if any(values.pop(a.ctor_name, a.default) != a.default for a in only):
            return None
        if any(v is not None for k, v in values.items() if k not in names) or _holds_ref(values):
            return None
        try:
            return resolve(op.module)(**{k: v for k, v in values.items() if k in names})
        except (TypeError, ValueError):
            return None
    return None


def _holds_ref(value: Any) -> bool:
    if isinstance(value, _Ref):
        return True
    if isinstance(value, dict):
        return any(map(_holds_ref, value.values()))
    return isinstance(value, (tuple, list)) and any(map(_holds_ref, value))


@cache
def _ops_by_call_module() -> dict[str, list[Op]]:
    """Qualified `Op.call_module` name -> the ops whose `module` it stands in for."""
    ops: dict[str, list[Op]] = {}
    for op in CATALOG:
        if op.call_module and op.call_module != op.module:
            ops.setdefault(op.call_module, []).append(op)
    return ops


@cache
def _ops_by_module() -> dict[str, list[Op]]:
    """Qualified module name -> the catalog ops that become it."""
    ops: dict[str, list[Op]] = {}
    for op in CATALOG:
        ops.setdefault(op.module_for(True)[0], []).append(op)
    return ops


def _bound(module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A module call's arguments as `forward` receives them: `(q, k, v, mask)` and
    `(q, k, v, attn_mask=mask)` are one call."""
    cls, names = type(module), tuple(kwargs)
    if "forward" in vars(module) or _forward_signature(cls) is None:
        plan = _binding(lambda: inspect.signature(module.forward), len(args), names)
    else:  # one binding per class and shape of call
        key = (cls, len(args), names)
        if key not in _BINDINGS:
            _BINDINGS[key] = _binding(lambda: _forward_signature(cls), len(args), names)
        plan = _BINDINGS[key]
    if plan is None:
        return args, kwargs
    given = {**dict(enumerate(args)), **kwargs}
    return (), {name: _filled(value, given) for name, value in plan.items()}


class _Slot:
    """Where a call's argument goes in a binding: its position, or its keyword."""

    __slots__ = ("key",)

    def __init__(self, key: int | str) -> None:
        self.key = key


def _binding(
    signature: Callable[[], Any], count: int, names: tuple[str, ...]
) -> dict[str, Any] | None:
    """`signature()` bound to `count` positional and `names` keyword arguments, defaults
    applied: parameter -> the `_Slot` of the argument it takes (a tuple or dict of them for
    `*args` and `**kwargs`) or its default; None when the call does not bind."""
    try:
        bound = signature().bind(*map(_Slot, range(count)), **{n: _Slot(n) for n in names})
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


def _filled(value: Any, given: dict) -> Any:
    """A binding's entry with the call's arguments in place of their slots."""
    if isinstance(value, _Slot):
        return given[value.key]
    if isinstance(value, tuple) and any(isinstance(v, _Slot) for v in value):
        return tuple(given[v.key] for v in value)
    if isinstance(value, dict) and any(isinstance(v, _Slot) for v in value.values()):
        return {k: given[v.key] for k, v in value.items()}
    return value


_BINDINGS: dict[tuple[type, int, tuple[str, ...]], dict[str, Any] | None] = {}


def _forward_signature(cls: type[torch.nn.Module]) -> inspect.Signature | None:
    """The signature of a module class's `forward` without `self` (as bound to an instance),
    read once per class; None when its first parameter does not take the instance alone."""
    if cls not in _SIGNATURES:
        _SIGNATURES[cls] = None
        with contextlib.suppress(TypeError, ValueError):
            signature = inspect.signature(cls.forward)
            parameters = list(signature.parameters.values())
            positional = (
                inspect.Parameter.POSITIONAL_ONLY,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
            )
            if parameters and parameters[0].kind in positional:
                _SIGNATURES[cls] = signature.replace(parameters=parameters[1:])
    return _SIGNATURES[cls]


_SIGNATURES: dict[type[torch.nn.Module], inspect.Signature | None] = {}


def _tensor_names(state: Mapping[str, Any]) -> dict[int, str]:
    """id(tensor) -> the first name it has in a module's `state_dict(keep_vars=True)` (tied
    weights share one name)."""
    names: dict[int, str] = {}
    for name, tensor in state.items():
        names.setdefault(id(tensor), name)
    return names


def _fx_target(gm: fx.GraphModule, node: fx.Node, names: dict[int, str]) -> Any:
    """A node other than a module call: the tensor or function it names."""
    if node.op == "get_attr":
        value = gm
        assert isinstance(node.target, str)  # fx keeps the attribute's path there
        for part in node.target.split("."):
            value = getattr(value, part)
        return names.get(id(value), type(value).__name__)
    if node.op == "call_function":
        return _qualname(node.target)
    if node.op == "call_method":
        return node.target
    return None  # placeholder, output: names aside


def _qualname(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)
    if getattr(getattr(obj, "forward", None), "__globals__", {}).get("__migrator_ops__"):
        return f"migrator.nn.{name}"  # a copy made by `ops_module` is migrator's own op module
    return f"{getattr(obj, '__module__', None) or ''}.{name}"


def _class_name(cls: type) -> str:
    """`_qualname` of a module class, worked out once per class."""
    if cls not in _CLASS_NAMES:
        _CLASS_NAMES[cls] = _qualname(cls)
    return _CLASS_NAMES[cls]


_CLASS_NAMES: dict[type, str] = {}


def _hyper_parameters(module: torch.nn.Module) -> tuple:
    """The module's public plain attributes (`negative_slope`, `dim`, `inplace`...)."""
    return tuple(
        sorted(
            (k, _plain(v))
            for k, v in vars(module).items()
            if not k.startswith("_") and k != "training"
        )
    )


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str, _Ref)):
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(map(_plain, value))
    if isinstance(value, (torch.dtype, torch.device)):
        return str(value)
    return type(value).__name__


def _first_mismatch(expected: list, actual: list) -> int | None:
    for i, (e, a) in enumerate(zip(expected, actual)):
        if e != a:
            return i
    return None if len(expected) == len(actual) else min(len(expected), len(actual))


def _describe_fx(gm: fx.GraphModule, position: int) -> str:
    nodes = list(gm.graph.nodes)
    if position >= len(nodes):
        return "no node (the graph ends)"
    node = nodes[position]
    held = ""
    if node.op == "call_module":
        module = called_module(gm, node)
        what = " ".join(repr(module).split())
        names = _tensor_names(gm.state_dict(keep_vars=True))
        weights = [names.get(id(t), "?") for t in module.state_dict(keep_vars=True).values()]
        held = f" holding {', '.join(weights)}" if weights else ""
    else:
        what = _qualname(node.target) if node.op == "call_function" else str(node.target)
    # map_arg maps nodes to any value; its types allow only fx arguments
    args = map_arg(node.args, lambda n: _Ref(nodes.index(n)))  # type: ignore[arg-type, return-value]
    source = node.meta.get(SOURCE)
    where = f" at {describe_source(source)}" if source else ""
    return f"`{node.op} {what}{tuple(args)!r}`{held}{where}"


# --------------------------------------------------------------------------- (3) export


def check_export(
    original: torch.nn.Module, migrated: torch.nn.Module, inputs: tuple[Any, ...]
) -> CheckResult:
    """Both export with torch.export.export (eval mode) to the same ATen graph, names aside.

    Graphs equal as exported (an in-place call on an unshared intermediate read as its
    out-of-place twin) are equal decomposed too: decomposing is a function of the graph, so
    the decompositions run only when the exported graphs differ."""
    expected, expected_error = _export(original, inputs)
    actual, actual_error = _export(migrated, inputs)
    if expected is None:
        return CheckResult(
            "export", SKIP, f"torch.export cannot export the original: {expected_error}"
        )
    if actual is None:
        return CheckResult(
            "export", FAIL, f"the original exports, the migrated model does not: {actual_error}"
        )
    how = "as exported"
    twins = _out_of_place_twins(expected), _out_of_place_twins(actual)
    if _aten_rows(expected, twins[0]) == _aten_rows(actual, twins[1]):
        if twins[0] or twins[1]:
            how += ", in-place ops on unshared intermediates as their out-of-place twins"
        expected_rows = actual_rows = _aten_rows(actual, twins[1])
    else:
        expected, expected_error = _decomposed(expected)
        actual, actual_error = _decomposed(actual)
        if expected is None or actual is None:
            return CheckResult(
                "export",
                FAIL,
                f"the exported graphs differ and do not decompose: "
                f"{expected_error or actual_error}",
            )
        how = "functional, implicit ops decomposed"
        expected_rows, actual_rows = _aten_rows(expected), _aten_rows(actual)
    figures = {"aten_nodes": sum(1 for n in actual.graph.nodes if n.op == "call_function")}
    mismatch = _first_mismatch(expected_rows, actual_rows)
    if mismatch is not None:
        return CheckResult(
            "export",
            FAIL,
            f"ATen node {mismatch} differs: original has "
            f"{_describe_aten(expected, mismatch)}, migrated has "
            f"{_describe_aten(actual, mismatch)}",
            figures,
        )
    return CheckResult("export", PASS, f"{figures['aten_nodes']} ATen ops equal ({how})", figures)


def _export(model: torch.nn.Module, inputs: tuple[Any, ...]):
    """(program, None) or (None, why). A failing export's partial graph and warnings (printed
    and logged by torch) stay out of the report."""
    with _quiet():
        try:
            return torch.export.export(model, inputs), None
        except Exception as exc:  # export fails with many exception types
            return None, _first_error_line(exc)


def _decomposed(program: torch.export.ExportedProgram):
    """(program, None) or (None, why): `program` made functional (in-place ops out of place)
    with its CompositeImplicitAutograd ops decomposed. Such ops run exactly that decomposition
    in eager mode, so aliases (`subtract`, `concat`) and spellings (`relu6` is `hardtanh(0, 6)`)
    compare equal while real kernels (`silu`) stay as they are."""
    with _quiet():
        try:
            return program.run_decompositions(_implicit_decompositions()), None
        except Exception as exc:  # decomposing fails with many exception types
            return None, _first_error_line(exc)


@contextlib.contextmanager
def _quiet():
    """torch's warnings, logging below ERROR and stderr kept out of the output."""
    disabled = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        logging.disable(disabled)


def _first_error_line(exc: Exception) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first[:300]}"


def _implicit_decompositions():
    """torch.export's default decompositions, kept to the CompositeImplicitAutograd ops."""
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if not torch._C._dispatch_has_kernel_for_dispatch_key(
            op.name(), torch._C.DispatchKey.CompositeImplicitAutograd
        ):
            del table[op]
    return table


def _aten_args(node: fx.Node, args: tuple) -> tuple:
    """Pooling's stride defaults to the kernel size: `max_pool2d(x, [2, 2])` (stride left out)
    is `max_pool2d(x, [2, 2], [2, 2])` (stride given, as nn.MaxPool2d does)."""
    packet = getattr(node.target, "overloadpacket", None)
    if (
        getattr(packet, "__name__", "") in _STRIDE_IS_KERNEL
        and len(args) > 1
        and (len(args) == 2 or args[2] == [])
    ):
        return (args[0], args[1], args[1], *args[3:])
    return args


def _out_of_place_twins(program: torch.export.ExportedProgram) -> dict[fx.Node, str]:
    """In-place ATen calls (`add_`) that compute what their out-of-place twin (`add`) computes
    and may be compared as it: the tensor written is the fresh result of a call that aliases
    nothing (or a view of one that nothing else reads: `_view_of_fresh`), read before only by
    such calls and never after (nor viewed), and every tensor
    argument has the result's dtype (so no type promotion tells them apart). A call read as its
    twin returns a fresh tensor, so `relu_(add_(y, x))` reads as `relu(add(y, x))`."""
    order = {node: position for position, node in enumerate(program.graph.nodes)}
    twins = {}
    for node in program.graph.nodes:
        twin = _twin(node)
        written = node.args[0] if node.args else None
        if twin is None or not isinstance(written, fx.Node):
            continue
        if not (_aliases_nothing(written) or written in twins or _view_of_fresh(written)):
            continue  # a twin's result is fresh
        readers = [user for user in written.users if user is not node]
        if any(order[user] > order[node] or not _aliases_nothing(user) for user in readers):
            continue
        dtype = _dtype(node)
        if dtype is None or any(_dtype(arg) != dtype for arg in node.all_input_nodes):
            continue
        twins[node] = twin
    return twins


def _twin(node: fx.Node) -> str | None:
    """The out-of-place overload of an in-place ATen call writing its first argument only."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return None
    name = target.overloadpacket.__name__
    written = [
        arg.name for arg in target._schema.arguments if arg.alias_info and arg.alias_info.is_write
    ]
    if not name.endswith("_") or written != [target._schema.arguments[0].name]:
        return None
    packet = getattr(getattr(torch.ops, target.namespace), name[:-1], None)
    twin = getattr(packet, target._overloadname, None)
    if not isinstance(twin, torch._ops.OpOverload) or _schema_aliases(twin):
        return None
    return str(twin)


def _aliases_nothing(node: fx.Node) -> bool:
    """A call of an ATen op that writes no argument and returns new tensors (no view)."""
    target = node.target
    return (
        node.op == "call_function"
        and isinstance(target, torch._ops.OpOverload)
        and not _schema_aliases(target)
    )


def _view_of_fresh(node: fx.Node) -> bool:
    """A view, through ATen view calls, of the fresh result of a call that aliases nothing, each
    tensor on the way read by its view alone: writing through it changes nothing else read."""
    while _is_view(node):
        base = node.args[0]
        if not isinstance(base, fx.Node) or len(base.users) != 1:
            return False
        if _aliases_nothing(base):
            return True
        node = base
    return False


def _is_view(node: fx.Node) -> bool:
    """A call of an ATen op returning a view of its first argument, writing nothing."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return False
    schema = target._schema
    returns = schema.returns
    return (
        len(returns) == 1
        and returns[0].alias_info is not None
        and not returns[0].alias_info.is_write
        and not any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)
    )


def _schema_aliases(op: torch._ops.OpOverload) -> bool:
    return any(item.alias_info is not None for item in (*op._schema.arguments, *op._schema.returns))


def _dtype(node: fx.Node) -> torch.dtype | None:
    value = node.meta.get("val")
    return value.dtype if isinstance(value, torch.Tensor) else None


def _aten_rows(
    program: torch.export.ExportedProgram, twins: Mapping[fx.Node, str] | None = None
) -> list[tuple]:
    signature = program.graph_signature
    weights = {"PARAMETER", "BUFFER"}
    inputs = {
        spec.arg.name: (spec.kind.name, spec.target if spec.kind.name in weights else None)
        for spec in signature.input_specs
        if hasattr(spec.arg, "name")
    }
    outputs = tuple(
        (spec.kind.name, spec.target if spec.kind.name == "BUFFER_MUTATION" else None)
        for spec in signature.output_specs
    )
    positions: dict[fx.Node, int] = {}
    rows: list[tuple] = []
    target: object
    for node in program.graph.nodes:
        positions[node] = len(rows)
        if node.op == "placeholder":
            target = inputs.get(node.name)
        elif node.op == "output":
            target = outputs
        else:
            target = (twins or {}).get(node) or (
                str(node.target) if node.op == "call_function" else node.op
            )
        args, kwargs = map_arg((node.args, node.kwargs), lambda n: _Ref(positions[n]))  # type: ignore[arg-type, return-value]
        rows.append((node.op, target, _aten_args(node, args), kwargs))
    return rows


def _describe_aten(program: torch.export.ExportedProgram, position: int) -> str:
    nodes = list(program.graph.nodes)
    if position >= len(nodes):
        return "no node (the graph ends)"
    node = nodes[position]
    if node.op == "placeholder":
        kind, target = _aten_rows(program)[position][1] or ("?", None)
        return f"input {kind.lower()} `{target or node.name}`"
    # map_arg maps nodes to any value; its types allow only fx arguments
    args = map_arg(node.args, lambda n: _Ref(nodes.index(n)))  # type: ignore[arg-type, return-value]
    frame = last_model_frame(node.meta.get("stack_trace"))
    where = f" at {describe_source(frame)}" if frame else ""
    return f"`{node.target}{tuple(args)!r}`{where}"


# --------------------------------------------------------------------------- (4) outputs


def check_outputs(
    original: torch.nn.Module, migrated: torch.nn.Module, inputs: tuple[Any, ...]
) -> CheckResult:
    """Bit-identical outputs (torch.equal, same dtypes) in eval mode, in train mode with the
    same seed, and in eval mode under bf16 autocast, whose mixed dtypes show what one dtype
    cannot (an in-place op keeps its receiver's dtype, the out-of-place op promotes); buffers
    (running statistics) are left as they were."""
    parts: list[str] = []
    figures: dict[str, Any] = {}
    for mode, seed, autocast in (("eval", 0, False), ("train", 1, False), ("autocast", 0, True)):
        original.train(mode == "train")
        migrated.train(mode == "train")
        expected, expected_error = _run(original, inputs, seed, autocast)
        actual, actual_error = _run(migrated, inputs, seed, autocast)
        if expected_error or actual_error:
            if expected_error and actual_error and expected_error == actual_error:
                parts.append(f"{mode}: not compared, both raise {expected_error}")
                continue
            return CheckResult(
                "outputs",
                FAIL,
                f"{mode} mode: original "
                f"{'raises ' + expected_error if expected_error else 'runs'}, "
                f"migrated {'raises ' + actual_error if actual_error else 'runs'}",
                figures,
            )
        figures[f"{mode}_tensors"] = count_tensors(expected)
        found = difference(expected, actual)
        if found:
            return CheckResult("outputs", FAIL, f"{mode} mode (seed {seed}): {found}", figures)
        parts.append(
            f"{mode}: {figures[f'{mode}_tensors']} tensor(s) bit-identical"
            + (f" (seed {seed})" if mode == "train" else " (eval, bf16)" if autocast else "")
        )
    original.eval()
    migrated.eval()
    if not figures:
        return CheckResult("outputs", FAIL, "no output compared: " + "; ".join(parts), figures)
    return CheckResult("outputs", PASS, "; ".join(parts), figures)


def _run(model: torch.nn.Module, inputs: tuple[Any, ...], seed: int, autocast: bool):
    """(outputs, None) or (None, the error) of `model(*inputs)`, under bf16 autocast on the
    inputs' device when `autocast`."""
    leaves = tree_leaves(inputs)
    device = next((t.device.type for t in leaves if isinstance(t, torch.Tensor)), "cpu")
    try:
        with torch.autocast(device, torch.bfloat16, enabled=autocast):
            return run_seeded(model, inputs, seed), None
    except Exception as exc:  # a forward may raise anything
        return None, f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
