"""One argument binder for a call of a catalog op, whatever the world of the call: `ast`
nodes (the static checker) or fx node arguments (the runtime preparer).

The role rules and the refusal reasons live here; each world supplies `Predicates`, the few
facts about its values only it can tell (is this a constant, is it `self.training`...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Sequence, TypeVar, cast

from migrator.catalog import REQUIRED, Arg, Op, Role
from migrator.refusal import Refusal

NOT_CONSTANT = object()
"""What `Predicates.constant` returns for a value not known before the call runs."""

V = TypeVar("V")
"""A world's argument values: `ast.expr`, or fx node arguments."""


@dataclass(frozen=True)
class Predicates(Generic[V]):
    """What a world tells the binder about one of its argument values."""

    show: Callable[[V], str]
    """The value as people read it (source text, or a repr)."""
    constant: Callable[[V], object]
    """The value itself when it is a constant, else `NOT_CONSTANT`."""
    unfixed: Callable[[V], str | None]
    """Why a hyper-parameter value is not fixed when the module is built (None: it is)."""
    follows_mode: Callable[[V], bool]
    """Whether a `training` value is the caller's `self.training`."""
    unsplittable: Callable[[V], str | None]
    """Why a tensor sequence cannot be passed as separate forward inputs (None: it can)."""
    weight_refused: Callable[[Op, V], str | None]
    """Why a learned weight is no weight of a module of the op's class, which would be called
    instead (None: it is one); such a weight goes at call time to `Op.call_module`."""
    held: Callable[[V], tuple[bool, str] | None]
    """(learned, what holds it) for a tensor a module holds: learned when it is, or may be, a
    parameter, else a buffer; None when no module holds it (a local or computed tensor)."""
    gated: Callable[[V], tuple[V, V] | None] = lambda value: None
    """`(v, d)` when the value is `v if self.training else d` (None: it is not)."""
    literal_mode: Callable[[V], object] = lambda value: None
    """The bool a `training` value is written as (`training=True`), else None: in a trace,
    `self.training` is a constant too, so only the source tells."""


@dataclass(frozen=True)
class Input(Generic[V]):
    """A forward input of the module: an INPUT argument, or the sequence of an INPUTS one."""

    arg: Arg
    value: V
    given: bool
    """False for an optional input the call leaves at its default (`value` is the default)."""


@dataclass(frozen=True)
class Bound(Generic[V]):
    """A call's arguments sorted by role, ready to become a module and its call."""

    inputs: tuple[Input[V], ...]
    ctor: tuple[tuple[str, object], ...]
    """Constructor keywords: `Op.call_extra` when the call becomes `Op.call_module`, then in
    catalog order hyper-parameters the call passes (world values) and defaults the module does
    not share, then, for `Op.module`, `Op.ctor_extra` (plain values), then for an in-place
    twin `Op.inplace_extra`."""
    given: frozenset[str]
    """The constructor keywords whose value is a world value the call passed."""
    module: str
    """The module class the call becomes (`Op.module_for`)."""
    key: str
    """Base name of the attribute created for it."""
    call: tuple[tuple[str, V], ...] = ()
    """Hyper-parameters not fixed at `__init__` time, passed at call time: forward keywords
    (`Arg.at_call`) with the call's values, in catalog order."""
    weight: V | None = None
    """The learned weight the module takes over (prelu), else None."""


def arguments(
    op: Op, positional: Sequence[V], keywords: Sequence[tuple[str, V]]
) -> dict[str, V] | Refusal:
    """The values a call passes, by parameter name; a `Refusal` without code when the call does
    not fit the op's signature."""
    params, rest = _positional(op)
    if rest is not None:  # the tuple of the remaining positional arguments
        variadic = cast(V, tuple(positional[rest:]))
        positional = [*positional[:rest], variadic] if len(positional) > rest else positional
    if len(positional) > len(params):
        return Refusal(
            None, f"{len(positional)} positional arguments, the catalog knows {len(params)}"
        )
    values = {a.name: v for a, v in zip(params, positional)}
    for name, value in keywords:
        if op.arg(name) is None:
            return Refusal(None, f"argument `{name}` is not in the catalog")
        if name in values:
            return Refusal(None, f"argument `{name}` is given twice")
        values[name] = value
    return values


_POSITIONAL: dict[int, tuple[Op, list[Arg], int | None]] = {}
"""By id of an op (held with it): `_positional` of it."""


def _positional(op: Op) -> tuple[list[Arg], int | None]:
    """The op's positional parameters, and the index of its variadic one (None: it has none);
    read once an op, not at each of its calls."""
    found = _POSITIONAL.get(id(op))
    if found is None or found[0] is not op:
        params = [a for a in op.args if not a.keyword_only]
        rest = next((i for i, a in enumerate(params) if a.role is Role.VARIADIC), None)
        found = _POSITIONAL[id(op)] = (op, params, rest)
    return found[1], found[2]


def fits(op: Op, positional: Sequence[V], keywords: Sequence[tuple[str, V]]) -> bool:
    """Whether a call passing these arguments fits `op`'s signature, every required argument
    given: `bind` leaves any other call alone, unreported (`torch.where(condition)`)."""
    values = arguments(op, positional, keywords)
    return not isinstance(values, Refusal) and all(
        a.name in values or a.default is not REQUIRED for a in op.args
    )


def bind(
    op: Op,
    positional: Sequence[V],
    keywords: Sequence[tuple[str, V]],
    predicates: Predicates[V],
    inplace: bool = False,
) -> Bound[V] | Refusal:
    """Sort a call's arguments by the op's roles, or say why the call cannot become
    `op.module` with the same result. `inplace`: the call is an in-place twin on a tensor
    (`x += y`, `x.add_(y)`), whose module takes `Op.inplace_extra` too."""
    values = arguments(op, positional, keywords)
    if isinstance(values, Refusal):
        return values
    inputs: list[Input[V]] = []
    ctor: list[tuple[str, object]] = []
    call: list[tuple[str, V]] = []
    given: set[str] = set()
    weight: V | None = None
    # the first hyper-parameter not fixed at `__init__` time: reported unless an argument
    # that no value of it would make convertible is found too
    unfixed: Refusal | None = None
    own = False  # a hyper-parameter only `op.call_module` takes is passed
    module_defaults = dict(op.module_defaults)
    for arg in op.args:
        passed = arg.name in values
        # a default the call leaves out goes where a world value would
        value = values[arg.name] if passed else cast(V, arg.default)
        if value is REQUIRED:
            return Refusal(None, f"`{arg.name}` is missing")
        if arg.role is Role.VARIADIC:
            inputs += [Input(arg, v, True) for v in cast(tuple, value)]
            continue
        if arg.role is Role.INPUT:
            inputs.append(Input(arg, value, passed))
        elif arg.role is Role.INPUTS:
            reason = predicates.unsplittable(value)
            if reason:
                return Refusal("MIG107", reason)
            inputs.append(Input(arg, value, True))
        elif arg.role is Role.HYPER:
            if passed:
                gated = _gated(arg, value, predicates)
                if gated is not None:
                    ctor += [(arg.ctor_name, gated), (cast(str, arg.gate), True)]
                    given.add(arg.ctor_name)
                    continue
                if arg.call_only and _is_default(arg, value, predicates):
                    continue
                reason = predicates.unfixed(value)
                if reason and arg.at_call:
                    call.append((arg.name, value))
                    own = own or arg.call_only
                    continue
                if reason:
                    unfixed = unfixed or Refusal(
                        "MIG101",
                        f"`{arg.name}={_shown(value, passed, predicates)}` is not fixed at "
                        f"__init__ time: {reason}",
                    )
                    continue
                ctor.append((arg.ctor_name, value))
                given.add(arg.ctor_name)
                own = own or arg.call_only
            elif module_defaults.get(arg.ctor_name, value) != value:
                ctor.append((arg.ctor_name, value))
        elif arg.role is Role.TRAINING:
            literal = predicates.literal_mode(value) if passed else value
            if arg.mode and isinstance(literal, bool):
                ctor.append((arg.mode, literal))
            elif not (passed and predicates.follows_mode(value)):
                return Refusal(
                    "MIG102",
                    f"`training={_shown(value, passed, predicates)}`; the module would follow "
                    "`self.training` instead",
                )
        elif arg.role is Role.AFFINE:
            none = not passed or predicates.constant(value) is None
            inputs.append(Input(arg, value, not none))
            own = own or not none
        elif arg.role is Role.FIXED:
            constant = predicates.constant(value) if passed else value
            if constant is NOT_CONSTANT or not (constant is arg.default or constant == arg.default):
                return Refusal(
                    "MIG107",
                    f"`{arg.name}={_shown(value, passed, predicates)}` is not supported by the "
                    f"module (only {arg.default!r})",
                )
        elif arg.role in (Role.DATA, Role.STATE):
            held = predicates.held(value) if passed else None
            if held and (held[0] or arg.role is Role.STATE):
                return Refusal(
                    "MIG106",
                    f"`{arg.name}={_shown(value, passed, predicates)}` {held[1]}: moving it "
                    f"into a new {op.module_name} "
                    "would change its state_dict key, and as a forward input it would be "
                    "quantized as an activation; left as is",
                )
            inputs.append(Input(arg, value, passed))
        elif arg.role is Role.WEIGHT:
            if predicates.weight_refused(op, value):  # `Op.call_module` takes it at call time
                inputs.append(Input(arg, value, True))
                own = True
            else:
                weight = value
    if unfixed is not None:
        return unfixed
    module, key = op.module_for(bool(call) or own)
    called = module == op.call_module
    return Bound(
        tuple(inputs),
        (op.call_extra + tuple(ctor) if called else tuple(ctor) + op.ctor_extra)
        + (op.inplace_extra if inplace else ()),
        frozenset(given),
        module,
        key,
        tuple(call),
        weight,
    )


def _shown(value: V, passed: bool, predicates: Predicates[V]) -> str:
    """The value as a refusal shows it: read only when the call is refused (most are not)."""
    return predicates.show(value) if passed else f"{value} (default)"


def _is_default(arg: Arg, value: V, predicates: Predicates[V]) -> bool:
    """Whether `value` is the argument's default, as a constant."""
    constant = predicates.constant(value)
    return (
        constant is not NOT_CONSTANT
        and type(constant) is type(arg.default)
        and (constant == arg.default)
    )


def _gated(arg: Arg, value: V, predicates: Predicates[V]) -> V | None:
    """`v` when `value` is `v if self.training else <the argument's default>`, `v` is fixed at
    `__init__` time and the module can apply it in training mode only (`Arg.gate`)."""
    found = predicates.gated(value) if arg.gate else None
    if found is None:
        return None
    inner, otherwise = found
    constant = predicates.constant(otherwise)
    if constant is NOT_CONSTANT or type(constant) not in (int, float) or constant != arg.default:
        return None
    return None if predicates.unfixed(inner) else inner
