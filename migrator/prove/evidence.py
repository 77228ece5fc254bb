"""Collect run-time evidence from built models: for every module whose class (or a base of it)
is defined in a Python file outside torch, what each of its attributes holds (see
`migrator.evidence`), and, when the models run, what each module's calls return in each mode.
`fix --evidence` builds the configured verify targets for it."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from pathlib import Path

import torch

from migrator import catalog
from migrator.evidence import MODES, NONE, Evidence, Seen
from migrator.prove.build import ORIGINAL_SEED, build, build_key
from migrator.prove.load import LoadError, Side
from migrator.prove.targets import Target
from migrator.rewrite.forward_returns import forward_returns


def observe(
    model: torch.nn.Module,
    target: str,
    evidence: Evidence | None = None,
    inputs: Callable[[bool], tuple] | None = None,
) -> Evidence:
    """Add what `model`'s modules hold to `evidence` (a new one if None), as seen in `target`;
    with `inputs` (the forward arguments in training mode or not), also what their calls
    return when a copy of the model runs in each mode (`calls`)."""
    evidence = evidence if evidence is not None else Evidence()
    kinds: dict[int, Seen] = {}
    returned: dict[int, str] = {}
    ran = calls(model, inputs) if inputs is not None else {}
    for module in model.modules():
        owners = [(file, c.__qualname__) for c in type(module).__mro__ if (file := _file_of(c))]
        if not owners:
            continue
        for attr, value in vars(module).items():  # an attribute set to None: never called
            if value is None:
                for file, owner in owners:
                    evidence.add((file, owner, attr), NONE, target)
        for attr, child in module._modules.items():
            if child is None:
                for file, owner in owners:
                    evidence.add((file, owner, attr), NONE, target)
                continue
            if id(child) not in kinds:
                kinds[id(child)] = _seen(child, returns(child, returned), ran.get(id(child), ""))
            for file, owner in owners:
                evidence.add((file, owner, attr), kinds[id(child)], target)
    return evidence


def from_targets(targets: list[Target], side: Side | None = None) -> tuple[Evidence, list[str]]:
    """The evidence of the targets' models built from the files on disk (on `side`, which keeps
    each model for the one build of it that follows: verify's original), and one line for each
    target that could not be built."""
    evidence, errors = Evidence(), []
    side = side if side is not None else Side("evidence")
    for target in targets:
        try:
            built = build(target, side, ORIGINAL_SEED)
        except LoadError as exc:
            errors.append(str(exc))
            continue
        inputs = None if built.inputs is None else _in_both_modes(built.inputs)
        observe(built.model, target.label, evidence, inputs)
        side.prebuilt[build_key(target, ORIGINAL_SEED)] = built
    return evidence, errors


def _in_both_modes(inputs: tuple) -> Callable[[bool], tuple]:
    """A target's example inputs, the same in training mode and not."""
    return lambda _: inputs


def _file_of(cls: type) -> str | None:
    """The resolved source file of a module class defined outside torch (None: torch's own,
    `nn.Module` itself, or no file)."""
    if not issubclass(cls, torch.nn.Module) or cls.__module__.split(".")[0] == "torch":
        return None
    for value in vars(cls).values():  # its module may be gone from sys.modules (`load`)
        code = getattr(value, "__code__", None)
        if code is not None and Path(code.co_filename).is_file():
            return str(Path(code.co_filename).resolve())
    return None


def _seen(module: torch.nn.Module, returned: str, ran: str) -> Seen:
    stateful = any(True for _ in module.parameters()) or any(True for _ in module.buffers())
    name = _public_name(module)
    kind = name or f"{type(module).__module__}.{type(module).__qualname__}"
    if module._forward_hooks or module._forward_pre_hooks or "forward" in vars(module):
        # what it returns is not its class's: only its calls say
        return Seen(f"{kind} (hooked)", stateful, False, returned, ran)
    return Seen(kind, stateful, _fresh(module), returned, ran)


def calls(model: torch.nn.Module, inputs: Callable[[bool], tuple]) -> dict[int, str]:
    """What each module's calls return (`Seen.calls`) when a copy of `model` runs once in each
    mode on `inputs(training)`, without gradients and with the random state put back; by the
    id of the module in `model`. A mode whose run fails adds nothing, nor does a model that
    cannot be copied."""
    try:
        twin = copy.deepcopy(model)
    except Exception:  # noqa: BLE001 - a model that cannot be copied only proves less
        return {}
    originals = dict(zip(map(id, twin.modules()), map(id, model.modules()), strict=True))
    found: dict[int, set[str]] = {}
    for mode in MODES:
        seen: dict[int, set[str]] = {}

        def hook(module, args, kwargs, output, mode=mode, seen=seen) -> None:
            kind = _call_kind(module, args, kwargs, output)
            seen.setdefault(id(module), set()).add(f"{mode}:{kind}")

        handles = [m.register_forward_hook(hook, with_kwargs=True) for m in twin.modules()]
        try:
            twin.train(mode == "train")
            with torch.no_grad(), torch.random.fork_rng(devices=[]):
                twin(*inputs(mode == "train"))
        except Exception:  # noqa: BLE001 - a mode that does not run proves nothing
            seen.clear()
        finally:
            for handle in handles:
                handle.remove()
        for key, kinds in seen.items():
            found.setdefault(originals[key], set()).update(kinds)
    return {key: ",".join(sorted(kinds)) for key, kinds in found.items()}


def _call_kind(module: torch.nn.Module, args: tuple, kwargs: dict, output) -> str:
    """`Seen.calls`' kind of one call: 'new', 'input', 'alias' or 'other'."""
    if not isinstance(output, torch.Tensor) or module._forward_pre_hooks:
        return "other"  # a pre-hook may have replaced what the caller passed
    held = [*args[1:], *kwargs.values(), *module.parameters(), *module.buffers()]
    for sub in module.modules():
        for value in vars(sub).values():
            held += _tensors(value)
    made = _memory(output)
    if made is None or any(_memory(t) in (made, None) for t in _flat(held)):
        return "alias"
    first = args[0] if args else None
    if isinstance(first, torch.Tensor) and _memory(first) in (made, None):
        return "input"
    return "new"


def _tensors(value) -> list:
    """The tensors `value` is or directly holds (a list, tuple or dict of them)."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return [value] if isinstance(value, torch.Tensor) else []


def _flat(values: list) -> list[torch.Tensor]:
    return [t for v in values for t in _tensors(v)]


def _memory(tensor: torch.Tensor) -> int | None:
    """The address of the memory `tensor` views (None: it has none to compare)."""
    try:
        address = tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None
    return address or None


def returns(module: torch.nn.Module, known: dict[int, str]) -> str:
    """What calling `module` is proven to return: 'tensor', 'tuple' (of tensors) or ''. A
    torch.nn class (exactly) that the catalog knows to return a new tensor when built out of
    place (conv, linear, the norms, activations even in place); `nn.Sequential`'s own forward
    what its last module returns; the `forward` of a class of the project what its source
    proves from what the modules it holds return (`forward_returns`); nothing for a module with
    a forward hook. `known`: what modules
    worked out before return, by id."""
    if id(module) not in known:
        known[id(module)] = _returns(module, known)
    return known[id(module)]


def _returns(module: torch.nn.Module, known: dict[int, str]) -> str:
    owner = next((c for c in type(module).__mro__ if "forward" in vars(c)), None)
    if owner is None or "forward" in vars(module) or module._forward_hooks:
        return ""  # a forward hook may return something else
    if owner is torch.nn.Sequential and isinstance(module, torch.nn.Sequential):
        mro = type(module).__mro__
        if any("__iter__" in vars(c) for c in mro[: mro.index(torch.nn.Sequential)]):
            return ""
        return returns(module[-1], known) if len(module) else ""
    name = _public_name(module)
    if name is not None:
        return "tensor" if catalog.fresh_output(name, False) else ""
    forward = vars(owner)["forward"]
    code = getattr(forward, "__code__", None)
    if _file_of(owner) is None or code is None or not Path(code.co_filename).is_file():
        return ""
    held = [*module._modules.items(), *module._parameters.items(), *module._buffers.items()]
    shadowed = {attr for attr, _ in held if hasattr(type(module), attr)}  # a method, a property
    children = {
        attr: returns(child, known)
        for attr, child in module._modules.items()
        if child is not None and attr not in shadowed
    }
    tensors = {
        attr
        for attr, value in [*module._parameters.items(), *module._buffers.items()]
        if value is not None and attr not in shadowed
    }
    return forward_returns(
        str(Path(code.co_filename).resolve()),
        owner.__module__,
        owner.__qualname__,
        children,
        tensors,
    )


def _fresh(module: torch.nn.Module) -> bool:
    """Whether `module` always returns a new tensor nothing else sees: its exact class says so
    in the catalog, or it runs `nn.Sequential`'s own forward (an `nn.Sequential`, or a
    subclass that keeps its `forward` and `__iter__`) and its last module does: it returns
    that module's output."""
    mro = type(module).__mro__
    if isinstance(module, torch.nn.Sequential) and not any(
        "forward" in vars(c) or "__iter__" in vars(c) for c in mro[: mro.index(torch.nn.Sequential)]
    ):
        return len(module) > 0 and _fresh(module[-1])
    name = _public_name(module)
    inplace = getattr(module, "inplace", False)
    return name is not None and catalog.fresh_output(name, bool(inplace))


def _public_name(module: torch.nn.Module) -> str | None:
    """`torch.nn.BatchNorm2d` for torch.nn's own classes (exactly: a subclass may override
    forward), `migrator.nn.Add` for migrator's op modules; None for any other class."""
    cls = type(module)
    if getattr(torch.nn, cls.__name__, None) is cls:
        return f"torch.nn.{cls.__name__}"
    if getattr(sys.modules.get(cls.__module__), "__migrator_ops__", False):
        return f"migrator.nn.{cls.__name__}"
    return None
