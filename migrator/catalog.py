"""The op catalog: the single table of every op migrator turns into a module.

Each `Op` says which callables it covers (by qualified name), which tensor methods and Python
operators, which module replaces it, and how the call's arguments split into constructor
hyper-parameters and forward inputs. The codemods, the static checker, the runtime preparer and
the equivalence check all read this table. It is plain data: importing it never imports torch.

Each row also says how the quantizer observes its module (`Observation`, read by
`migrator.observe`), and `OTHER_MODULES` says it for the quantizable `torch.nn` classes the
catalog does not create. A module is observed as a unit: the tensors it receives, and what it
returns; its own parameters stay in float except a WEIGHTED module's `weight`.

- OWN_OUTPUT: each float input, and the output, get their own activation observer. Ops that
  compute new values: add, sub, mul, div, matmul, bmm, addmm, baddbmm, einsum, pow, exp, log,
  sqrt, rsqrt, erf, abs, neg, square (each maps the input's range onto another), cumsum, sdpa,
  mean, sum, norm, vector_norm, functional batch_norm (its statistics are computed in forward:
  module-held ones are refused, so they are activations too; its weight and bias stay in
  float, `FLOAT_ARGUMENTS`), gelu, silu,
  mish, hardswish, elu, celu, selu, leaky_relu, rrelu, prelu, glu, softplus, softsign,
  logsigmoid, softshrink, tanhshrink, threshold, log_softmax, avg/adaptive-avg/lp pools,
  norms (their affine weight and bias stay in float).
  log_softmax is not FIXED_RANGE: its output is unbounded below and its spread follows the
  logits'. softsign saturates too slowly for [-1, 1] to be the range seen.
- SHARE_INPUT: the output shares its first float input's observer (others get their own).
  Every output value is an input value, zero (always representable), a clamp of one to a bound
  inside the input's range, or (linear upsampling) a convex mix of input values: relu, relu6,
  hardtanh, hardshrink, max and adaptive-max pools, dropouts (identity in eval mode), flatten,
  unflatten, pixel (un)shuffle, channel shuffle, upsample, interpolate and grid_sample (bicubic
  may overshoot: clamped to the input's range), pad (a non-zero constant fill outside the
  input's range is clamped), embedding lookup in a data table (rows, or rows scaled towards
  zero by max_norm).
- SHARED_ACROSS: cat, stack, maximum, minimum, where: every float input and the output share
  one observer (every output value is an input value).
- FIXED_RANGE: the output has fixed qparams spanning the known range: sigmoid, hardsigmoid,
  softmax, softmin [0, 1]; tanh [-1, 1].
- WEIGHTED: conv, transposed conv, linear, bilinear, embedding: the weight per-channel
  symmetric (along `weight_axis`, its output channels), activations and output per-tensor;
  the bias stays in float (torchao's convert takes it as float).
- NOT_QUANTIZED, with a reason: floor division (floor turns an operand's rounding error into
  a whole unit), masked_fill (its fill value, -inf in attention masks, is outside any observed
  range).

Outside these modules, ops a model's own forward runs that only move values
(`DATA_MOVEMENT_OPS`: reshape, permute, ...) share their input's observer; any other op stays
in float and the observer report lists it with the reason.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Iterator

REQUIRED = object()
"""Marks a parameter without a default."""


class Role(Enum):
    """What a call's argument becomes in the module that replaces the call."""

    INPUT = "input"
    """A forward input (tensor or scalar operand)."""
    INPUTS = "inputs"
    """A sequence of tensors, passed to forward as separate inputs (cat/stack)."""
    VARIADIC = "variadic"
    """The remaining positional arguments (`*operands`), each passed to forward as it came."""
    HYPER = "hyper"
    """A constructor hyper-parameter: must be constant or fixed at __init__ time."""
    TRAINING = "training"
    """Must be `self.training`: the module already behaves that way."""
    FIXED = "fixed"
    """Only the default is supported (e.g. dtype=None); anything else is refused."""
    IGNORED = "ignored"
    """Has no effect on the result (e.g. softmax's _stacklevel)."""
    WEIGHT = "weight"
    """A learned tensor a module of the op's class owns (prelu's `self.act.weight` of an
    nn.PReLU): that module is called instead; any other tensor goes at call time to
    `Op.call_module`, kept in float as a norm's affine tensors are (`FLOAT_ARGUMENTS`)."""
    DATA = "data"
    """A tensor the op reads as data (F.embedding's table): a forward input, unless it is (or
    may be) a learned parameter, which is refused: it would be observed as an activation."""
    AFFINE = "affine"
    """A norm's affine weight or bias (None: none), a forward input of a module that holds
    none: a parameter passed there stays where it is, so state_dict keys do not change, and
    the quantizer keeps it in float as a norm module's own (`FLOAT_ARGUMENTS`). A call passing
    one becomes `Op.call_module` when the op has one."""
    STATE = "state"
    """A tensor the op reads as module state (F.batch_norm's running stats, weight and bias):
    a forward input only when no module holds it; a parameter or buffer is refused."""


class Observe(Enum):
    """How the quantizer observes a module (see the module docstring)."""

    OWN_OUTPUT = "own output"
    SHARE_INPUT = "share input"
    SHARED_ACROSS = "shared across"
    FIXED_RANGE = "fixed range"
    WEIGHTED = "weighted"
    NOT_QUANTIZED = "not quantized"


@dataclass(frozen=True)
class Observation:
    """An `Observe` policy with what it needs: a FIXED_RANGE's range, a WEIGHTED module's
    weight channel axis, a NOT_QUANTIZED module's reason."""

    how: Observe
    range: tuple[float, float] | None = None
    weight_axis: int = 0
    reason: str = ""


AS_INPLACE = (("as_inplace", True),)
"""`Op.inplace_extra` of migrator's op modules (`migrator.nn._InPlaceTwin`)."""

OWN = Observation(Observe.OWN_OUTPUT)
SHARE = Observation(Observe.SHARE_INPUT)
ACROSS = Observation(Observe.SHARED_ACROSS)
UNIT_RANGE = Observation(Observe.FIXED_RANGE, (0.0, 1.0))
SYMMETRIC_RANGE = Observation(Observe.FIXED_RANGE, (-1.0, 1.0))
WEIGHTED = Observation(Observe.WEIGHTED)


@dataclass(frozen=True)
class Arg:
    """One parameter of a catalogued callable, in signature order."""

    name: str
    role: Role
    default: object = REQUIRED
    ctor: str | None = None
    """Constructor keyword for a HYPER argument (defaults to `name`)."""
    keyword_only: bool = False
    at_call: bool = False
    """A HYPER argument the module (`Op.call_module` when set) also takes as a forward keyword
    of the same name: a value not fixed at `__init__` time is passed at call time."""
    gate: str | None = None
    """For a HYPER argument: the module's constructor flag that applies it in training mode only
    (its default in eval mode), so `v if self.training else <default>` becomes `v` and the flag."""
    call_only: bool = False
    """A HYPER argument only `Op.call_module` takes (`antialias`: nn.Upsample has none): a call
    passing another value than the default becomes `call_module`."""
    mode: str | None = None
    """For a TRAINING argument: the module's constructor keyword that fixes the mode the op
    computes in, whatever the module's own: a literal bool written there (`training=True` in
    timm's weight standardisation, or the default) becomes that keyword."""

    @property
    def ctor_name(self) -> str:
        return self.ctor or self.name


@dataclass(frozen=True)
class Op:
    """One catalogued op: the callables sharing one signature and the module that replaces them."""

    key: str
    """Base name of the attribute created for it (`relu` -> `self.relu`, `self.relu_1`)."""
    module: str
    """Qualified name of the replacing module class."""
    args: tuple[Arg, ...]
    functions: tuple[str, ...] = ()
    """Qualified names of functions with this signature (`torch.nn.functional.relu`)."""
    methods: tuple[str, ...] = ()
    """Tensor method names; the receiver binds to the first argument."""
    operators: tuple[str, ...] = ()
    """Python binary operator symbols (`+`) whose result this op computes."""
    inplace_operators: tuple[str, ...] = ()
    """Augmented assignments (`+=`) that are rewritten out-of-place when that is provably safe."""
    inplace_methods: tuple[str, ...] = ()
    """In-place tensor methods (`add_`) rewritten out-of-place when that is provably safe."""
    inplace_functions: tuple[str, ...] = ()
    """Qualified names of functions doing to their first argument what an in-place method does
    to its receiver (`torch.sigmoid_(x)` is `x.sigmoid_()`): rewritten alike."""
    ctor_extra: tuple[tuple[str, object], ...] = ()
    """Constructor keywords `module` always takes, with their values (`inplace=True` for
    `relu_`)."""
    inplace_extra: tuple[tuple[str, object], ...] = ()
    """Constructor keywords `module` takes where it replaces an in-place twin on a tensor
    (`AS_INPLACE`: what the twin leaves in its receiver, in the receiver's dtype and shape, or
    its error); empty when the twin rebinds (`@=`: tensors have no in-place matmul)."""
    module_defaults: tuple[tuple[str, object], ...] = ()
    """Constructor defaults that differ from the callable's: such hyper-parameters are always
    passed, even when the call leaves them at their default."""
    aliases: bool = False
    """The module's output may be its input or a view of it even when not built in place
    (flatten, dropout in eval mode): an in-place op on that output is seen elsewhere."""
    observed: Observation = field(kw_only=True)
    """How the quantizer observes the module."""
    call_module: str | None = None
    """The module used instead of `module` when a call passes a hyper-parameter at call time
    (`Arg.at_call`) that `module` cannot take (`nn.Upsample` takes no `size` in forward)."""
    call_key: str | None = None
    """`key` for `call_module`."""
    call_extra: tuple[tuple[str, object], ...] = ()
    """Constructor keywords `call_module` always takes, with their values (`dims=2`)."""

    @property
    def modules(self) -> tuple[str, ...]:
        """`module`, and `call_module` when set."""
        return (self.module,) + ((self.call_module,) if self.call_module else ())

    def module_for(self, at_call: bool) -> tuple[str, str]:
        """(module, key) of the module a call becomes: `call_module` when it passes
        hyper-parameters at call time and has one."""
        if at_call and self.call_module:
            return self.call_module, self.call_key or self.key
        return self.module, self.key

    @property
    def module_name(self) -> str:
        return self.module.rsplit(".", 1)[1]

    @property
    def package(self) -> str:
        return self.module.rsplit(".", 1)[0]

    def arg(self, name: str) -> Arg | None:
        return next((a for a in self.args if a.name == name), None)


@dataclass(frozen=True)
class Operator:
    """A Python binary operator as the catalog, `ast` and the `operator` module know it."""

    symbol: str
    """As written and as `Op.operators` lists it (`+`); `Op.inplace_operators` adds `=`."""
    node: type[ast.operator]
    function: Callable[[object, object], object]
    """What fx records for `a + b` (`operator.add`)."""
    inplace_function: Callable[[object, object], object]
    """What fx records for `a += b` (`operator.iadd`)."""

    @property
    def inplace_symbol(self) -> str:
        return self.symbol + "="


OPERATORS: tuple[Operator, ...] = (
    Operator("+", ast.Add, operator.add, operator.iadd),
    Operator("-", ast.Sub, operator.sub, operator.isub),
    Operator("*", ast.Mult, operator.mul, operator.imul),
    Operator("/", ast.Div, operator.truediv, operator.itruediv),
    Operator("//", ast.FloorDiv, operator.floordiv, operator.ifloordiv),
    Operator("@", ast.MatMult, operator.matmul, operator.imatmul),
    Operator("**", ast.Pow, operator.pow, operator.ipow),
)


def operator_of(node: type[ast.operator]) -> Operator | None:
    """The operator an `ast` operator class stands for (`ast.Add` -> `+`), or None."""
    return next((o for o in OPERATORS if o.node is node), None)


def operator_named(name: str) -> Operator | None:
    """The operator whose function in the `operator` module is `name` (`add` -> `+`):
    `operator.add(a, b)` and `a.__add__(b)` compute `a + b`; or None."""
    return next((o for o in OPERATORS if o.function.__name__ == name), None)


# --- signature helpers -------------------------------------------------------------------------


def _x() -> Arg:
    return Arg("input", Role.INPUT)


def _h(
    name: str,
    default: object = REQUIRED,
    ctor: str | None = None,
    kw: bool = False,
    at_call: bool = False,
    gate: str | None = None,
    call_only: bool = False,
) -> Arg:
    return Arg(name, Role.HYPER, default, ctor, kw, at_call, gate, call_only=call_only)


def _inplace() -> Arg:
    return _h("inplace", False)


F = "torch.nn.functional."
NN = "torch.nn."
OPERATOR_ABS = "operator.abs"
"""What Python's `abs(y)` runs on a tensor, as the catalog lists it."""
OPERATOR_NEG = "operator.neg"
"""What `-y` runs, as the catalog lists it."""
OPS = "migrator.nn."


def _activation(
    key: str,
    cls: str,
    *hyper: Arg,
    observed: Observation,
    torch_fn: bool = False,
    method: bool = False,
) -> list[Op]:
    """An activation `F.<key>(input, *hyper, inplace=False)`, optionally also `torch.<key>`."""
    functions = [F + key] + ([f"torch.{key}"] if torch_fn else [])
    return [
        Op(
            key,
            NN + cls,
            (_x(), *hyper, _inplace()),
            tuple(functions),
            (key,) if method else (),
            observed=observed,
        )
    ]


def _inplace_variant(
    key: str,
    cls: str,
    *hyper: Arg,
    functions: tuple[str, ...],
    observed: Observation,
    methods: tuple[str, ...] = (),
) -> Op:
    """`F.relu_(x)`-style calls: the module is built with `inplace=True`."""
    return Op(
        key,
        NN + cls,
        (_x(), *hyper),
        functions,
        methods,
        ctor_extra=(("inplace", True),),
        observed=observed,
    )


def _dim_op(key: str, cls: str, observed: Observation) -> list[Op]:
    """softmax / softmin / log_softmax: F form (with _stacklevel) and torch/method form."""
    f_args = (
        _x(),
        _h("dim", None),
        Arg("_stacklevel", Role.IGNORED, 3),
        Arg("dtype", Role.FIXED, None),
    )
    t_args = (_x(), _h("dim"), Arg("dtype", Role.FIXED, None))
    ops = [Op(key, NN + cls, f_args, (F + key,), observed=observed)]
    if key != "softmin":
        ops.append(Op(key, NN + cls, t_args, (f"torch.{key}",), (key,), observed=observed))
    return ops


def _pool(kind: str, n: int) -> Op:
    """`F.<kind>_pool<n>d`. A kernel size, stride, padding or output size known only at run
    time is passed at call time to migrator's pool of that kind (`dims=n`): torch.nn's pools
    take them only in their constructor."""
    key = f"{kind}_pool{n}d"
    args: tuple[Arg, ...]
    if kind == "lp":
        args = (
            _x(),
            _h("norm_type"),
            _h("kernel_size"),
            _h("stride", None),
            _h("ceil_mode", False),
        )
        return Op(key, f"{NN}LPPool{n}d", args, (F + key,), observed=OWN)
    window = (
        _x(),
        _h("kernel_size", at_call=True),
        _h("stride", None, at_call=True),
        _h("padding", 0, at_call=True),
    )
    output_size = _h("output_size", at_call=True)
    if kind == "max":
        name, observed = "MaxPool", SHARE
        args = window + (_h("dilation", 1), _h("ceil_mode", False), _h("return_indices", False))
    elif kind == "avg":
        name, observed = "AvgPool", OWN
        args = window + (_h("ceil_mode", False), _h("count_include_pad", True))
        if n > 1:
            args += (_h("divisor_override", None),)
    elif kind == "adaptive_avg":
        name, observed, args = "AdaptiveAvgPool", OWN, (_x(), output_size)
    else:
        name, observed = "AdaptiveMaxPool", SHARE
        args = (_x(), output_size, _h("return_indices", False))
    return Op(
        key,
        f"{NN}{name}{n}d",
        args,
        (F + key,),
        observed=observed,
        call_module=OPS + name,
        call_extra=(("dims", n),),
    )


def _dropout(key: str, cls: str, training_default: bool, call_module: str | None = None) -> Op:
    p = _h("p", 0.5, at_call=call_module is not None)
    args = (_x(), p, Arg("training", Role.TRAINING, training_default), _inplace())
    return Op(
        key,
        NN + cls,
        args,
        (F + key,),
        aliases=True,  # eval mode returns the input
        observed=SHARE,
        call_module=call_module,
    )


def _binary(
    key: str,
    cls: str,
    symbol: str | None,
    torch_names: tuple[str, ...],
    methods: tuple[str, ...],
    *hyper: Arg,
    second: str = "other",
    inplace_methods: bool = True,
    observed: Observation = OWN,
) -> Op:
    args = (_x(), Arg(second, Role.INPUT), *hyper)
    return Op(
        key,
        OPS + cls,
        args,
        tuple(f"torch.{n}" for n in torch_names),
        methods,
        operators=(symbol,) if symbol else (),
        inplace_operators=(symbol + "=",) if symbol else (),
        inplace_methods=tuple(m + "_" for m in methods) if inplace_methods else (),
        inplace_extra=AS_INPLACE if inplace_methods else (),
        observed=observed,
    )


def _reduction(key: str, cls: str) -> Op:
    args = (
        _x(),
        _h("dim", None, at_call=True),
        _h("keepdim", False),
        Arg("dtype", Role.FIXED, None, keyword_only=True),
    )
    return Op(key, OPS + cls, args, (f"torch.{key}",), (key,), observed=OWN)


def _unary(
    key: str,
    cls: str,
    *names: str,
    special: tuple[str, ...] = (),
    inplace_functions: tuple[str, ...] | None = None,
) -> Op:
    """An elementwise `torch.<name>(input)` with its `.<name>()` and in-place `.<name>_()` and
    `torch.<name>_(input)` forms (`out=` does not fit and is left alone); `inplace_functions`:
    the names whose `torch.<name>_` exists, when not all. The output is observed on its own:
    none of these ops keeps its input's range."""
    names = names or (key,)
    return Op(
        key,
        OPS + cls,
        (_x(),),
        tuple(f"torch.{n}" for n in names) + special,
        names,
        inplace_methods=tuple(n + "_" for n in names),
        inplace_functions=tuple(f"torch.{n}_" for n in inplace_functions or names),
        inplace_extra=AS_INPLACE,
        observed=OWN,
    )


def _build() -> tuple[Op, ...]:
    ops: list[Op] = []
    # Activations with a torch.nn class.
    ops += _activation("relu", "ReLU", observed=SHARE, torch_fn=True, method=True)
    ops.append(
        _inplace_variant(
            "relu",
            "ReLU",
            functions=(F + "relu_", "torch.relu_"),
            methods=("relu_",),
            observed=SHARE,
        )
    )
    ops += _activation("relu6", "ReLU6", observed=SHARE)
    ops += _activation(
        "hardtanh", "Hardtanh", _h("min_val", -1.0), _h("max_val", 1.0), observed=SHARE
    )
    ops.append(
        _inplace_variant(
            "hardtanh",
            "Hardtanh",
            _h("min_val", -1.0),
            _h("max_val", 1.0),
            functions=(F + "hardtanh_",),
            observed=SHARE,
        )
    )
    ops += _activation("hardswish", "Hardswish", observed=OWN)
    ops += _activation("hardsigmoid", "Hardsigmoid", observed=UNIT_RANGE)
    ops += _activation("elu", "ELU", _h("alpha", 1.0), observed=OWN)
    ops.append(
        _inplace_variant("elu", "ELU", _h("alpha", 1.0), functions=(F + "elu_",), observed=OWN)
    )
    ops += _activation("selu", "SELU", observed=OWN, torch_fn=True)
    ops.append(
        _inplace_variant("selu", "SELU", functions=(F + "selu_", "torch.selu_"), observed=OWN)
    )
    ops += _activation("celu", "CELU", _h("alpha", 1.0), observed=OWN, torch_fn=True)
    ops.append(
        _inplace_variant(
            "celu", "CELU", _h("alpha", 1.0), functions=(F + "celu_", "torch.celu_"), observed=OWN
        )
    )
    ops += _activation("leaky_relu", "LeakyReLU", _h("negative_slope", 0.01), observed=OWN)
    ops.append(
        _inplace_variant(
            "leaky_relu",
            "LeakyReLU",
            _h("negative_slope", 0.01),
            functions=(F + "leaky_relu_",),
            observed=OWN,
        )
    )
    ops.append(
        Op(
            "prelu",
            NN + "PReLU",
            (_x(), Arg("weight", Role.WEIGHT)),
            (F + "prelu", "torch.prelu"),
            ("prelu",),
            observed=OWN,
            call_module=OPS + "PReLU",
        )
    )
    rrelu = (
        _x(),
        _h("lower", 1.0 / 8),
        _h("upper", 1.0 / 3),
        Arg("training", Role.TRAINING, False),
    )
    ops.append(Op("rrelu", NN + "RReLU", (*rrelu, _inplace()), (F + "rrelu",), observed=OWN))
    generator = Arg("generator", Role.FIXED, None)
    ops.append(Op("rrelu", NN + "RReLU", (*rrelu, generator), ("torch.rrelu",), observed=OWN))
    ops.append(
        Op(
            "rrelu",
            NN + "RReLU",
            rrelu,
            (F + "rrelu_", "torch.rrelu_"),
            ctor_extra=(("inplace", True),),
            observed=OWN,
        )
    )
    ops.append(Op("glu", NN + "GLU", (_x(), _h("dim", -1)), (F + "glu",), observed=OWN))
    ops.append(
        Op(
            "gelu",
            NN + "GELU",
            (_x(), _h("approximate", "none", kw=True)),
            (F + "gelu",),
            observed=OWN,
        )
    )
    ops += _activation("silu", "SiLU", observed=OWN)
    ops += _activation("mish", "Mish", observed=OWN)
    ops.append(
        Op(
            "sigmoid",
            NN + "Sigmoid",
            (_x(),),
            (F + "sigmoid", "torch.sigmoid"),
            ("sigmoid",),
            inplace_methods=("sigmoid_",),
            inplace_functions=("torch.sigmoid_",),
            observed=UNIT_RANGE,
        )
    )
    ops.append(
        Op(
            "tanh",
            NN + "Tanh",
            (_x(),),
            (F + "tanh", "torch.tanh"),
            ("tanh",),
            inplace_methods=("tanh_",),
            inplace_functions=("torch.tanh_",),
            observed=SYMMETRIC_RANGE,
        )
    )
    ops.append(Op("logsigmoid", NN + "LogSigmoid", (_x(),), (F + "logsigmoid",), observed=OWN))
    ops.append(
        Op(
            "softplus",
            NN + "Softplus",
            (_x(), _h("beta", 1.0), _h("threshold", 20.0)),
            (F + "softplus",),
            observed=OWN,
        )
    )
    ops.append(Op("softsign", NN + "Softsign", (_x(),), (F + "softsign",), observed=OWN))
    ops.append(
        Op(
            "softshrink",
            NN + "Softshrink",
            (_x(), _h("lambd", 0.5)),
            (F + "softshrink",),
            observed=OWN,
        )
    )
    ops.append(
        Op(
            "hardshrink",
            NN + "Hardshrink",
            (_x(), _h("lambd", 0.5)),
            (F + "hardshrink", "torch.hardshrink"),
            ("hardshrink",),
            observed=SHARE,
        )
    )
    ops.append(Op("tanhshrink", NN + "Tanhshrink", (_x(),), (F + "tanhshrink",), observed=OWN))
    ops += _activation("threshold", "Threshold", _h("threshold"), _h("value"), observed=OWN)
    ops.append(
        _inplace_variant(
            "threshold",
            "Threshold",
            _h("threshold"),
            _h("value"),
            functions=(F + "threshold_", "torch.threshold_"),
            observed=OWN,
        )
    )
    for key, cls, observed in (
        ("softmax", "Softmax", UNIT_RANGE),
        ("softmin", "Softmin", UNIT_RANGE),
        ("log_softmax", "LogSoftmax", OWN),
    ):
        ops += _dim_op(key, cls, observed)
    # Pooling.
    for kind in ("max", "avg", "adaptive_avg", "adaptive_max", "lp"):
        ops += [_pool(kind, n) for n in (1, 2, 3)]
    # Dropout: the module follows self.training, so only `training=self.training` is rewritten.
    ops.append(_dropout("dropout", "Dropout", True, OPS + "Dropout"))
    ops += [_dropout(f"dropout{n}d", f"Dropout{n}d", True) for n in (1, 2, 3)]
    ops.append(_dropout("alpha_dropout", "AlphaDropout", False))
    ops.append(_dropout("feature_alpha_dropout", "FeatureAlphaDropout", False))
    # Shape ops.
    flatten = (_x(), _h("start_dim", 0, at_call=True), _h("end_dim", -1, at_call=True))
    ops.append(
        Op(
            "flatten",
            NN + "Flatten",
            flatten,
            ("torch.flatten",),
            ("flatten",),
            module_defaults=(("start_dim", 1),),
            aliases=True,
            observed=SHARE,
            call_module=OPS + "Flatten",
        )
    )
    ops.append(
        Op(
            "unflatten",
            NN + "Unflatten",
            (_x(), _h("dim"), _h("sizes", ctor="unflattened_size")),
            ("torch.unflatten",),
            ("unflatten",),
            aliases=True,
            observed=SHARE,
        )
    )
    ops.append(
        Op(
            "pixel_shuffle",
            NN + "PixelShuffle",
            (_x(), _h("upscale_factor", at_call=True)),
            (F + "pixel_shuffle", "torch.pixel_shuffle"),
            observed=SHARE,
            call_module=OPS + "PixelShuffle",
        )
    )
    ops.append(
        Op(
            "pixel_unshuffle",
            NN + "PixelUnshuffle",
            (_x(), _h("downscale_factor")),
            (F + "pixel_unshuffle", "torch.pixel_unshuffle"),
            observed=SHARE,
        )
    )
    ops.append(
        Op(
            "channel_shuffle",
            NN + "ChannelShuffle",
            (_x(), _h("groups")),
            (F + "channel_shuffle", "torch.channel_shuffle"),
            observed=SHARE,
        )
    )
    # A size or scale factor known only at run time (read from another tensor) is passed to
    # migrator's Interpolate at call time: nn.Upsample takes it only in its constructor, and
    # has no antialias at all.
    resize = (
        _x(),
        _h("size", None, at_call=True),
        _h("scale_factor", None, at_call=True),
        _h("mode", "nearest", at_call=True),
        _h("align_corners", None, at_call=True),
        _h("recompute_scale_factor", None, at_call=True),
    )
    ops.append(
        Op(
            "upsample",
            NN + "Upsample",
            resize + (_h("antialias", False, at_call=True, call_only=True),),
            (F + "interpolate",),
            observed=SHARE,
            call_module=OPS + "Interpolate",
            call_key="interpolate",
        )
    )
    ops.append(
        Op(
            "upsample",
            NN + "Upsample",
            resize,
            (F + "upsample",),
            observed=SHARE,
            call_module=OPS + "Interpolate",
            call_key="interpolate",
        )
    )
    # Each output value samples the input at a grid point: as upsampling, a mix of input values.
    ops.append(
        Op(
            "grid_sample",
            OPS + "GridSample",
            (
                _x(),
                Arg("grid", Role.INPUT),
                _h("mode", "bilinear", at_call=True),
                _h("padding_mode", "zeros", at_call=True),
                _h("align_corners", None, at_call=True),
            ),
            (F + "grid_sample",),
            observed=SHARE,
        )
    )
    ops.append(
        Op(
            "pad",
            OPS + "Pad",
            (
                _x(),
                _h("pad", at_call=True),
                _h("mode", "constant"),
                _h("value", None, at_call=True),
            ),
            (F + "pad",),
            observed=SHARE,
        )
    )
    # Normalisation: without affine tensors an nn.LayerNorm; with them (the caller's own
    # parameters, or arguments) a module taking them at call time, as it takes settings not
    # fixed at `__init__` time.
    ops.append(
        Op(
            "layer_norm",
            NN + "LayerNorm",
            (
                _x(),
                _h("normalized_shape", at_call=True),
                Arg("weight", Role.AFFINE, None),
                Arg("bias", Role.AFFINE, None),
                _h("eps", 1e-5, at_call=True),
            ),
            (F + "layer_norm",),
            ctor_extra=(("elementwise_affine", False),),
            observed=OWN,
            call_module=OPS + "LayerNorm",
        )
    )
    ops.append(
        Op(
            "group_norm",
            OPS + "GroupNorm",
            (
                _x(),
                _h("num_groups", at_call=True),
                Arg("weight", Role.AFFINE, None),
                Arg("bias", Role.AFFINE, None),
                _h("eps", 1e-5, at_call=True),
            ),
            (F + "group_norm",),
            observed=OWN,
        )
    )
    # F.batch_norm as a function of its tensors: the module holds none of them, so only
    # statistics no module holds (a local, an argument, None) can be its forward inputs; the
    # affine weight and bias go as a norm's do.
    ops.append(
        Op(
            "batch_norm",
            OPS + "BatchNorm",
            (
                _x(),
                Arg("running_mean", Role.STATE),
                Arg("running_var", Role.STATE),
                Arg("weight", Role.AFFINE, None),
                Arg("bias", Role.AFFINE, None),
                Arg("training", Role.TRAINING, False, mode="training_mode"),
                _h("momentum", 0.1),
                _h("eps", 1e-5),
            ),
            (F + "batch_norm",),
            observed=OWN,
        )
    )
    # A lookup in a table that is data, not a learned weight (a buffer, an argument): each
    # output value is a table value (max_norm rescales rows towards zero).
    ops.append(
        Op(
            "embedding",
            OPS + "Embedding",
            (
                _x(),
                Arg("weight", Role.DATA),
                _h("padding_idx", None),
                _h("max_norm", None),
                _h("norm_type", 2.0),
                _h("scale_grad_by_freq", False),
                _h("sparse", False),
            ),
            (F + "embedding",),
            observed=SHARE,
        )
    )
    ops.append(
        Op(
            "normalize",
            OPS + "Normalize",
            (_x(), _h("p", 2.0), _h("dim", 1), _h("eps", 1e-12), Arg("out", Role.FIXED, None)),
            (F + "normalize",),
            observed=OWN,
        )
    )
    # Elementwise and tensor-combining ops: small stateless modules in migrator.nn.
    alpha = _h("alpha", 1, kw=True)
    ops.append(_binary("add", "Add", "+", ("add",), ("add",), alpha))
    ops.append(_binary("sub", "Sub", "-", ("sub", "subtract"), ("sub", "subtract"), alpha))
    ops.append(_binary("mul", "Mul", "*", ("mul", "multiply"), ("mul", "multiply")))
    ops.append(
        _binary(
            "div",
            "Div",
            "/",
            ("div", "divide"),
            ("div", "divide"),
            _h("rounding_mode", None, kw=True),
        )
    )
    ops.append(_binary("div", "Div", None, ("true_divide",), ("true_divide",)))
    ops.append(
        _binary(
            "floordiv",
            "FloorDiv",
            "//",
            ("floor_divide",),
            ("floor_divide",),
            observed=Observation(
                Observe.NOT_QUANTIZED,
                reason=(
                    "floor division: an operand's rounding error moves the result a whole unit"
                ),
            ),
        )
    )
    ops.append(_binary("matmul", "MatMul", "@", ("matmul",), ("matmul",), inplace_methods=False))
    ops.append(
        _binary("bmm", "BMM", None, ("bmm",), ("bmm",), second="mat2", inplace_methods=False)
    )
    ops.append(_binary("pow", "Pow", "**", ("pow",), ("pow",), second="exponent"))
    # input * beta + (mat1 @ mat2) * alpha, and its batched form.
    for key, cls, first, second in (
        ("addmm", "AddMM", "mat1", "mat2"),
        ("baddbmm", "BAddBMM", "batch1", "batch2"),
    ):
        ops.append(
            Op(
                key,
                OPS + cls,
                (
                    _x(),
                    Arg(first, Role.INPUT),
                    Arg(second, Role.INPUT),
                    _h("beta", 1, kw=True),
                    _h("alpha", 1, kw=True),
                    Arg("out", Role.FIXED, None, keyword_only=True),
                ),
                (f"torch.{key}",),
                (key,),
                inplace_methods=(key + "_",),
                inplace_extra=AS_INPLACE,
                observed=OWN,
            )
        )
    # Stack also takes `dim` at call time; Concat does not (AIMET's Concat, which replaces it
    # with `--for aimet`, takes its axis in its constructor only).
    for key, cls in (("cat", "Concat"), ("stack", "Stack")):
        names = ("cat", "concat") if key == "cat" else ("stack",)
        ops.append(
            Op(
                key,
                OPS + cls,
                (Arg("tensors", Role.INPUTS), _h("dim", 0, at_call=key == "stack")),
                tuple(f"torch.{n}" for n in names),
                observed=ACROSS,
            )
        )
    ops.append(
        Op(
            "cat",
            OPS + "Concat",
            (Arg("tensors", Role.INPUTS), _h("axis", 0, ctor="dim")),
            ("torch.concatenate",),
            observed=ACROSS,
        )
    )
    ops.append(
        Op(
            "clamp",
            OPS + "Clamp",
            (
                _x(),
                _h("min", None, at_call=True),
                _h("max", None, at_call=True),
            ),
            ("torch.clamp", "torch.clip"),
            ("clamp", "clip"),
            inplace_methods=("clamp_", "clip_"),
            inplace_functions=("torch.clamp_", "torch.clip_"),
            inplace_extra=AS_INPLACE,
            observed=OWN,
        )
    )
    # Unary elementwise ops: exp/log/sqrt/rsqrt/erf compute new values, abs/neg/square map
    # the input's range onto another one (neg flips it, abs and square fold it at zero).
    ops.append(_unary("exp", "Exp"))
    ops.append(_unary("log", "Log"))
    ops.append(_unary("sqrt", "Sqrt"))
    ops.append(_unary("rsqrt", "Rsqrt"))
    # `abs(y)` and `-y` are `operator.abs(y)` and `operator.neg(y)` (what fx records for them),
    # converted on a proven tensor only (`Scanner._operand`).
    abs_ = _unary(
        "abs", "Abs", "abs", "absolute", special=(OPERATOR_ABS,), inplace_functions=("abs",)
    )
    ops.append(abs_)
    ops.append(_unary("neg", "Neg", "neg", "negative", special=(OPERATOR_NEG,)))
    ops.append(_unary("erf", "Erf", special=("torch.special.erf",)))
    ops.append(_unary("square", "Square"))
    # Every output value of maximum / minimum is one of the inputs' values: one observer for
    # both inputs and the output loses nothing.
    for key, cls in (("maximum", "Maximum"), ("minimum", "Minimum")):
        ops.append(_binary(key, cls, None, (key,), (key,), inplace_methods=False, observed=ACROSS))
    # Only the three-argument where: `torch.where(condition)` does not fit and is left alone, and
    # `x.where(condition, y)` is not listed (its receiver is `input`, not the first argument).
    # Its output values are `input`'s or `other`'s: one observer for both and the output.
    ops.append(
        Op(
            "where",
            OPS + "Where",
            (Arg("condition", Role.INPUT), _x(), Arg("other", Role.INPUT)),
            ("torch.where",),
            observed=ACROSS,
        )
    )
    ops.append(
        Op(
            "masked_fill",
            OPS + "MaskedFill",
            (_x(), Arg("mask", Role.INPUT), _h("value", at_call=True)),
            ("torch.masked_fill",),
            ("masked_fill",),
            inplace_methods=("masked_fill_",),
            inplace_extra=AS_INPLACE,
            observed=Observation(
                Observe.NOT_QUANTIZED,
                reason="masked_fill: the fill value (-inf in attention masks) is outside any "
                "observed range",
            ),
        )
    )
    ops.append(
        Op(
            "cumsum",
            OPS + "CumSum",
            (_x(), _h("dim"), _h("dtype", None, kw=True)),
            ("torch.cumsum",),
            ("cumsum",),
            inplace_methods=("cumsum_",),
            inplace_extra=AS_INPLACE,
            observed=OWN,
        )
    )
    # Norms: `torch.norm` / `.norm()` (p may be "fro", "nuc" or a number) and the vector norm.
    ops.append(
        Op(
            "norm",
            OPS + "Norm",
            (
                _x(),
                _h("p", "fro"),
                _h("dim", None),
                _h("keepdim", False),
                Arg("out", Role.FIXED, None),
                Arg("dtype", Role.FIXED, None),
            ),
            ("torch.norm",),
            ("norm",),
            observed=OWN,
        )
    )
    ops.append(
        Op(
            "vector_norm",
            OPS + "VectorNorm",
            (
                _x(),
                _h("ord", 2),
                _h("dim", None),
                _h("keepdim", False),
                Arg("dtype", Role.FIXED, None, keyword_only=True),
                Arg("out", Role.FIXED, None, keyword_only=True),
            ),
            ("torch.linalg.vector_norm",),
            observed=OWN,
        )
    )
    # The equation is a hyper-parameter; the operands, as many as given, are forward inputs
    # (a sole literal list of operands is spread, as torch.einsum unwraps it).
    ops.append(
        Op(
            "einsum",
            OPS + "Einsum",
            (_h("equation"), Arg("operands", Role.VARIADIC)),
            ("torch.einsum",),
            aliases=True,  # "ij->ji" returns a view of its operand
            observed=OWN,
        )
    )
    ops.append(_reduction("mean", "Mean"))
    ops.append(_reduction("sum", "Sum"))
    ops.append(
        Op(
            "sdpa",
            OPS + "ScaledDotProductAttention",
            (
                Arg("query", Role.INPUT),
                Arg("key", Role.INPUT),
                Arg("value", Role.INPUT),
                Arg("attn_mask", Role.INPUT, None),
                _h("dropout_p", 0.0, at_call=True, gate="dropout_train_only"),
                _h("is_causal", False, at_call=True),
                _h("scale", None, kw=True),
                _h("enable_gqa", False, kw=True),
            ),
            (F + "scaled_dot_product_attention",),
            observed=OWN,
        )
    )
    return tuple(ops)


CATALOG: tuple[Op, ...] = _build()


@dataclass(frozen=True)
class _Index:
    functions: dict[str, Op] = field(default_factory=dict)
    methods: dict[str, Op] = field(default_factory=dict)
    operators: dict[str, Op] = field(default_factory=dict)
    inplace_operators: dict[str, Op] = field(default_factory=dict)
    inplace_methods: dict[str, Op] = field(default_factory=dict)
    inplace_functions: dict[str, Op] = field(default_factory=dict)


def _index() -> _Index:
    index = _Index()
    for op in CATALOG:
        for table, names in (
            (index.functions, op.functions),
            (index.methods, op.methods),
            (index.operators, op.operators),
            (index.inplace_operators, op.inplace_operators),
            (index.inplace_methods, op.inplace_methods),
            (index.inplace_functions, op.inplace_functions),
        ):
            for name in names:
                if name in table:
                    raise ValueError(f"catalog lists {name!r} twice")
                table[name] = op
    return index


INDEX = _index()


def by_function(qualname: str) -> Op | None:
    """The op for a function's qualified name (`torch.nn.functional.relu`)."""
    return INDEX.functions.get(qualname)


def by_inplace_function(qualname: str) -> Op | None:
    """The op whose in-place method a function is (`torch.sigmoid_`: `torch.sigmoid_(x)` is
    `x.sigmoid_()`)."""
    return INDEX.inplace_functions.get(qualname)


def by_any_function(qualname: str) -> Op | None:
    """The op a function computes, in place of its first argument or not; also a tensor
    method through its class (`torch.Tensor.add`) and an operator's function
    (`operator.add`)."""
    found = by_function(qualname) or by_inplace_function(qualname)
    module, _, name = qualname.rpartition(".")
    if found is None and module == "torch.Tensor":
        found = by_method(name) or by_inplace_method(name)
    if found is None and module == "operator" and (operator := operator_named(name)):
        found = by_operator(operator.symbol)
    return found


def by_method(name: str) -> Op | None:
    """The op for a tensor method name (`relu`, `softmax`)."""
    return INDEX.methods.get(name)


def by_operator(symbol: str) -> Op | None:
    """The op for a binary operator symbol (`+`)."""
    return INDEX.operators.get(symbol)


def by_inplace_operator(symbol: str) -> Op | None:
    """The op for an augmented assignment symbol (`+=`)."""
    return INDEX.inplace_operators.get(symbol)


def by_inplace_method(name: str) -> Op | None:
    """The op for an in-place tensor method (`add_`)."""
    return INDEX.inplace_methods.get(name)


def spellings(op: Op) -> frozenset[str]:
    """The qualified names torch reaches `op` by: the functions, tensor methods and operators'
    dunders on `torch.Tensor` (`torch.Tensor.__add__`, `__radd__`, `__iadd__`) of every op
    replaced by one of its modules (`nn.ReLU(inplace=True)` of `.relu_()` runs `F.relu`), and
    those modules; a store into one changes what the op or its module computes."""
    return frozenset().union(*(_SPELLINGS[m] for m in op.modules))


def _spellings() -> dict[str, frozenset[str]]:
    """Module class -> the names of the ops it replaces (`spellings`)."""
    found: dict[str, set[str]] = {}
    for op in CATALOG:
        dunders = [
            f"__{prefix}{o.function.__name__}__"
            for o in OPERATORS
            if o.symbol in op.operators or o.inplace_symbol in op.inplace_operators
            for prefix in ("", "r", "i")
        ]
        methods = (*op.methods, *op.inplace_methods, *dunders)
        names = {*op.functions, *op.inplace_functions, *(f"torch.Tensor.{m}" for m in methods)}
        for module in op.modules:
            found.setdefault(module, {module}).update(names)
    return {module: frozenset(names) for module, names in found.items()}


_SPELLINGS = _spellings()
PATCHABLE: frozenset[str] = frozenset(
    {name.rsplit(".", 1)[1] for names in _SPELLINGS.values() for name in names} | {"forward"}
)
"""The attribute names a store into which may change an op (`spellings`, and a module's
`forward`)."""


def replacing_modules() -> Iterator[str]:
    """Qualified names of every module class the catalog creates."""
    return iter(sorted({m for op in CATALOG for m in op.modules}))


_REPLACING = frozenset(replacing_modules())

# torch.nn classes that hold no parameters or buffers whatever their arguments: copies of such a
# module are indistinguishable from the original, so a module of this class that is called at
# several sites can be split safely. Built from the catalog plus the stateless classes it does
# not create.
STATELESS_TORCH_MODULES: frozenset[str] = frozenset(
    {
        m
        for m in replacing_modules()
        if m.startswith(NN) and m not in {NN + "PReLU", NN + "LayerNorm"}
    }
    | {
        NN + name
        for name in (
            "Identity",
            "Softmax2d",
            "UpsamplingNearest2d",
            "UpsamplingBilinear2d",
            "ZeroPad1d",
            "ZeroPad2d",
            "ZeroPad3d",
            "ConstantPad1d",
            "ConstantPad2d",
            "ConstantPad3d",
            "ReflectionPad1d",
            "ReflectionPad2d",
            "ReflectionPad3d",
            "ReplicationPad1d",
            "ReplicationPad2d",
            "ReplicationPad3d",
            "CircularPad1d",
            "CircularPad2d",
            "CircularPad3d",
            "MaxUnpool1d",
            "MaxUnpool2d",
            "MaxUnpool3d",
            "Fold",
            "Unfold",
            "CosineSimilarity",
            "PairwiseDistance",
            "FractionalMaxPool2d",
            "FractionalMaxPool3d",
        )
    }
)

# torch.nn classes the catalog does not create that run a quantizable op, and how each is
# observed. Each forward always returns a new tensor, never its input or a view of it (the
# catalog's own classes say so in their rows: `Op.aliases`).
OTHER_MODULES: dict[str, Observation] = {
    **{f"{NN}{c}": WEIGHTED for c in "Conv1d Conv2d Conv3d Linear Bilinear Embedding".split()},
    **{f"{NN}ConvTranspose{n}d": Observation(Observe.WEIGHTED, weight_axis=1) for n in (1, 2, 3)},
    **{
        f"{NN}{c}": OWN
        for c in """BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm GroupNorm
        InstanceNorm1d InstanceNorm2d InstanceNorm3d RMSNorm""".split()
    },
}

# Ops a model's own forward may run outside any catalog module that only move or select
# values (ATen names): each shares its input's observer.
DATA_MOVEMENT_OPS: frozenset[str] = frozenset(
    """
    view _unsafe_view reshape permute transpose t flatten unflatten squeeze unsqueeze contiguous
    select slice expand clone
""".split()
)


@dataclass(frozen=True)
class WeightedCall:
    """Where an ATen op that computes with a learned weight takes the weight and the bias, and
    how it is observed."""

    weight: int
    bias: int | None
    observed: Observation


# ATen ops' arguments that stay in float, by position, never observed as activations: a norm's
# affine weight and bias (`Role.AFFINE`) and prelu's slopes, as a norm's or nn.PReLU's own
# parameters do, and clamp's tensor bounds (a parameter or buffer passed at call time).
FLOAT_ARGUMENTS: dict[str, tuple[int, ...]] = {
    "layer_norm": (2, 3),
    "group_norm": (2, 3),
    "batch_norm": (1, 2),
    "prelu": (1,),
    "clamp": (1, 2),
}


# ATen ops that compute with a learned weight, wherever they run: inside the WEIGHTED modules
# above, or called as functionals (`F.conv2d(x, self.weight)` in a forward, a subclass's own
# forward): observed as those modules are, the weight per channel, the bias in float.
WEIGHTED_CALLS: dict[str, WeightedCall] = {
    **{f"conv{n}d": WeightedCall(1, 2, WEIGHTED) for n in (1, 2, 3)},
    **{
        f"conv_transpose{n}d": WeightedCall(1, 2, Observation(Observe.WEIGHTED, weight_axis=1))
        for n in (1, 2, 3)
    },
    "linear": WeightedCall(1, 2, WEIGHTED),
    "bilinear": WeightedCall(2, 3, WEIGHTED),
    "embedding": WeightedCall(0, None, WEIGHTED),
}


def _observations() -> dict[str, Observation]:
    observations = dict(OTHER_MODULES)
    for op in CATALOG:
        for module in op.modules:
            if observations.setdefault(module, op.observed) != op.observed:
                raise ValueError(f"catalog rows of {module} are observed differently")
    return observations


OBSERVATIONS: dict[str, Observation] = _observations()
"""How each module class (qualified name) is observed: catalog rows and `OTHER_MODULES`."""


def _rows_by_module() -> dict[str, tuple[Op, ...]]:
    rows: dict[str, list[Op]] = {}
    for op in CATALOG:
        for module in set(op.modules):
            rows.setdefault(module, []).append(op)
    return {module: tuple(ops) for module, ops in rows.items()}


ROWS_OF: dict[str, tuple[Op, ...]] = _rows_by_module()
"""Module class (qualified name) -> the catalog rows making it, in catalog order."""


def inplace_position(module: str) -> int | None:
    """Where a catalog module class takes `inplace` among its constructor's positional
    parameters (its hyper-parameters, in catalog order), or None when it takes none."""
    for op in CATALOG:
        hyper = [a.ctor_name for a in op.args if a.role is Role.HYPER]
        if module in op.modules and "inplace" in hyper:
            return hyper.index("inplace")
    return None


def output_known_modules() -> frozenset[str]:
    """Qualified names of the module classes `fresh_output` may answer yes for."""
    return frozenset(OTHER_MODULES) | set(replacing_modules())


def fresh_output(module: str, inplace: bool | None) -> bool:
    """Whether a module of class `module` (qualified name), built with `inplace` (None: not
    known), always returns a new tensor that nothing else sees: an in-place op on its output may
    then be rewritten out of place. Read by the static checker and the runtime preparer alike."""
    module = _TOOLKIT_ORIGINS.get(module, module)
    if module in OTHER_MODULES:
        return True
    rows = ROWS_OF.get(module, ())
    if not rows or any(op.aliases for op in rows):
        return False
    return inplace is False or inplace_position(module) is None


def output_kind(module: str, inplace: bool | None) -> str:
    """What a module of class `module` (qualified name), built with `inplace` (None: not
    known), returns: 'fresh', always a new tensor nothing else sees (`fresh_output`); 'input',
    that or its input itself or a view of it (`nn.Identity`, dropouts, flatten: `Op.aliases`;
    an activation that may be built in place), so what it returns is as fresh as its input;
    '' when not known. Read by the static checker and the run-time evidence alike."""
    if fresh_output(module, inplace):
        return "fresh"
    module = _TOOLKIT_ORIGINS.get(module, module)
    if module == NN + "Identity":
        return "input"
    rows = ROWS_OF.get(module, ())
    if rows and (all(op.aliases for op in rows) or inplace_position(module) is not None):
        return "input"
    return ""


# torch.nn classes whose constructor sets these attributes, from its arguments, to plain values
# (not tensors) that nothing but the constructor sets: `self.attn_drop.p` of an `nn.Dropout`
# built once in `__init__` is fixed there, as is `self.kernel_size` in a subclass of
# `nn.AvgPool2d` after `super().__init__(...)`.
KEPT_SETTINGS: dict[str, frozenset[str]] = {
    **{
        NN + cls: frozenset({"p"})
        for cls in (
            "Dropout",
            "Dropout1d",
            "Dropout2d",
            "Dropout3d",
            "AlphaDropout",
            "FeatureAlphaDropout",
        )
    },
    **{
        f"{NN}AvgPool{n}d": frozenset(
            {"kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"}
            | ({"divisor_override"} if n > 1 else set())
        )
        for n in (1, 2, 3)
    },
    **{
        f"{NN}MaxPool{n}d": frozenset(
            {"kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"}
        )
        for n in (1, 2, 3)
    },
    **{
        f"{NN}{kind}{n}d": frozenset(
            {"in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation"}
            | {"output_padding", "groups", "padding_mode"}
        )
        for kind in ("Conv", "ConvTranspose")
        for n in (1, 2, 3)
    },
    NN + "Linear": frozenset({"in_features", "out_features"}),
    NN + "LayerNorm": frozenset({"normalized_shape", "eps", "elementwise_affine"}),
    NN + "GroupNorm": frozenset({"num_groups", "num_channels", "eps", "affine"}),
}

# Functions of the standard library whose result depends only on their arguments: a call of
# one on values fixed at `__init__` time is fixed too (`math.log(1. / 0.01)`).
PURE_FUNCTIONS: frozenset[str] = frozenset(
    "math." + f
    for f in (
        "log",
        "log2",
        "log10",
        "log1p",
        "exp",
        "expm1",
        "sqrt",
        "pow",
        "ceil",
        "floor",
        "fabs",
        "trunc",
        "sin",
        "cos",
        "tan",
        "atan",
        "radians",
        "degrees",
    )
)


@dataclass(frozen=True)
class ToolkitModule:
    """A quantization toolkit's own class for one of the catalog's modules: the toolkit's
    quantizer knows it (AIMET's QuantSim rejects a module class it has no quantized form of)."""

    qualname: str
    renames: tuple[tuple[str, str], ...] | None = None
    """None: the class wraps the function and takes the call's own arguments when called
    (`self.mean(x, 1, keepdim=True)`), hyper-parameters included; else it takes the catalog
    module's constructor arguments, these renamed (`dim` -> `axis`)."""
    tensor_first: bool = False
    """The wrapped function needs a tensor first (`torch.sub(1, x)` fails where `1 - x` works):
    an operator whose left operand is not known to be a tensor keeps migrator's module."""
    inputs_only: bool = False
    """Its forward takes the op's inputs and nothing else: a call that passes a
    hyper-parameter (`x.add(y, alpha=2)`) keeps migrator's module."""


_AIMET = "aimet_torch.nn.modules.custom."
TOOLKITS: dict[str, dict[str, ToolkitModule]] = {
    "aimet": {
        OPS + "Add": ToolkitModule(_AIMET + "Add", inputs_only=True),
        OPS + "Sub": ToolkitModule(_AIMET + "Subtract", tensor_first=True),
        OPS + "Mul": ToolkitModule(_AIMET + "Multiply", inputs_only=True),
        OPS + "Div": ToolkitModule(_AIMET + "Divide", tensor_first=True),
        OPS + "FloorDiv": ToolkitModule(_AIMET + "FloorDivide", tensor_first=True),
        OPS + "MatMul": ToolkitModule(_AIMET + "MatMul"),
        OPS + "BMM": ToolkitModule(_AIMET + "Bmm"),
        OPS + "Pow": ToolkitModule(_AIMET + "Pow", inputs_only=True),
        OPS + "Concat": ToolkitModule(_AIMET + "Concat", renames=(("dim", "axis"),)),
        OPS + "Exp": ToolkitModule(_AIMET + "Exponential"),
        OPS + "Log": ToolkitModule(_AIMET + "Log"),
        OPS + "Sqrt": ToolkitModule(_AIMET + "Sqrt"),
        OPS + "Rsqrt": ToolkitModule(_AIMET + "RSqrt"),
        OPS + "Abs": ToolkitModule(_AIMET + "Abs"),
        OPS + "Neg": ToolkitModule(_AIMET + "Neg"),
        OPS + "Erf": ToolkitModule(_AIMET + "Erf"),
        OPS + "Square": ToolkitModule(_AIMET + "Square"),
        OPS + "Maximum": ToolkitModule(_AIMET + "Maximum"),
        OPS + "Minimum": ToolkitModule(_AIMET + "Minimum"),
        OPS + "CumSum": ToolkitModule(_AIMET + "CumSum"),
        OPS + "Mean": ToolkitModule(_AIMET + "Mean"),
        OPS + "Sum": ToolkitModule(_AIMET + "Sum"),
        OPS + "Pad": ToolkitModule(_AIMET + "Pad"),
        OPS + "Interpolate": ToolkitModule(_AIMET + "Interpolate"),
        OPS + "AddMM": ToolkitModule(_AIMET + "Addmm"),
        OPS + "BAddBMM": ToolkitModule(_AIMET + "Baddbmm"),
        OPS + "Norm": ToolkitModule(_AIMET + "Norm"),
        OPS + "GridSample": ToolkitModule(_AIMET + "GridSample"),
        OPS + "BatchNorm": ToolkitModule(_AIMET + "BatchNorm"),
        OPS + "GroupNorm": ToolkitModule(_AIMET + "GroupNorm"),
        OPS + "Normalize": ToolkitModule(_AIMET + "Normalize"),
        # Not mapped: AIMET's MaskedFill runs `masked_fill_` (in place) where the catalog's op is
        # out of place; its Where and ScaledDotProductAttention have no quantized form QuantSim
        # knows (aimet-torch 2.42); Clamp, Stack, Einsum, VectorNorm and Embedding have no AIMET
        # class.
    }
}
"""Toolkit name -> catalog module (qualified name) -> that toolkit's class (`--for aimet`)."""

TOOLKIT_REJECTS: dict[str, frozenset[str]] = {"aimet": frozenset({NN + "LPPool3d"})}
"""torch.nn classes the catalog creates that a toolkit's quantizer has no quantized form of."""

_TOOLKIT_ORIGINS = {t.qualname: m for table in TOOLKITS.values() for m, t in table.items()}


CATALOG_SUBCLASSES: dict[str, frozenset[str]] = {
    NN + "Hardtanh": frozenset({NN + "ReLU6"}),
    NN + "Upsample": frozenset({NN + "UpsamplingNearest2d", NN + "UpsamplingBilinear2d"}),
    **{NN + f"ConstantPad{n}d": frozenset({NN + f"ZeroPad{n}d"}) for n in (1, 2, 3)},
}
"""Catalog module classes (`is_catalog_module`) -> the others deriving from them: no other
catalog class is an instance of another (tests/test_catalog.py)."""

RESETTABLE: frozenset[str] = frozenset({NN + "LayerNorm", NN + "PReLU"})
"""The catalog module classes that have a `reset_parameters` method (tests/test_catalog.py):
a walk calling it where `hasattr(m, "reset_parameters")` acts on no other new module."""


def catalog_origin(module: str) -> str:
    """The catalog class a toolkit's class stands for (`module` itself for any other)."""
    return _TOOLKIT_ORIGINS.get(module, module)


def is_catalog_module(module: str) -> bool:
    """Whether `module` (qualified name) is a class the catalog creates (also as a toolkit's
    class) or a stateless torch.nn class a split copies: none derives from an `OTHER_MODULES`
    class (tests/test_catalog.py)."""
    module = _TOOLKIT_ORIGINS.get(module, module)
    return module in STATELESS_TORCH_MODULES or module in _REPLACING


def toolkit_module(module: str, toolkit: str) -> ToolkitModule | None:
    """The class `toolkit` has for the catalog module `module` (None: none, or no toolkit)."""
    return TOOLKITS.get(toolkit, {}).get(module)


def toolkit_classes() -> Iterator[str]:
    """Qualified names of every toolkit class the catalog may create."""
    return iter(_TOOLKIT_ORIGINS)


def toolkit_takes(module: str, toolkit: str) -> bool:
    """Whether `toolkit`'s quantizer takes a module of class `module` (every class does
    when no toolkit is set)."""
    if not toolkit or module in _TOOLKIT_ORIGINS:
        return True
    return module.startswith(NN) and module not in TOOLKIT_REJECTS.get(toolkit, frozenset())


# Tensor methods and attributes whose result is a size, dtype or other plain value, not a tensor:
# operators on them are not tensor ops (read by the static inference and the runtime preparer).
SCALAR_METHODS: frozenset[str] = frozenset(
    """
    size dim ndimension numel nelement element_size stride item tolist get_device is_contiguous
    is_floating_point __len__
""".split()
)
SCALAR_ATTRIBUTES: frozenset[str] = frozenset(
    "shape ndim dtype device layout is_cuda requires_grad".split()
)

# Factories: each call returns a new tensor nothing else sees (without `out=`), so an in-place op
# on it may be rewritten out of place. Not ops to convert: they take no tensor input to observe.
FRESH_FUNCTIONS: frozenset[str] = frozenset(
    f"torch.{name}"
    for name in """
    zeros ones empty full zeros_like ones_like empty_like full_like rand randn randint
    rand_like randn_like randint_like arange linspace logspace eye tensor
""".split()
)
FRESH_METHODS: frozenset[str] = frozenset(
    "new_zeros new_ones new_empty new_full new_tensor clone".split()
)
# In-place fills that return their receiver: as fresh as the tensor they fill
# (`x.new_empty(shape).bernoulli_(p)`).
FILLING_METHODS: frozenset[str] = frozenset(
    "bernoulli_ normal_ uniform_ fill_ zero_ random_ exponential_ geometric_ cauchy_".split()
)

# Attribute names every nn.Module already has: a created module must never shadow one.
MODULE_ATTRIBUTES: frozenset[str] = frozenset(
    """
    T_destination add_module apply bfloat16 buffers call_super_init children compile cpu cuda
    double dump_patches eval extra_repr float forward get_buffer get_extra_state get_parameter
    get_submodule half ipu load_state_dict modules mtia named_buffers named_children named_modules
    named_parameters parameters register_backward_hook register_buffer register_forward_hook
    register_forward_pre_hook register_full_backward_hook register_full_backward_pre_hook
    register_load_state_dict_post_hook register_load_state_dict_pre_hook register_module
    register_parameter register_state_dict_post_hook register_state_dict_pre_hook requires_grad_
    set_extra_state set_submodule share_memory state_dict to to_empty train training type xpu
    zero_grad
""".split()
)


CATALOG_ATTRIBUTES: frozenset[str] = frozenset(
    """
    align_corners alpha antialias approximate as_inplace beta bias ceil_mode count_include_pad
    dilation dim dims divisor_override downscale_factor dropout_p dropout_train_only dtype
    elementwise_affine enable_gqa end_dim eps equation groups init inplace is_causal keepdim
    kernel_size lambd lower max max_norm max_val min min_val mode momentum name negative_slope
    norm norm_type normalized_shape num_groups num_parameters ord output_ratio output_size p pad
    padding padding_idx padding_mode recompute_scale_factor reset_parameters return_indices
    rounding_mode scale scale_factor scale_grad_by_freq size sparse start_dim stride threshold
    training_mode unflattened_size upper upscale_factor value weight
""".split()
)
"""The public attributes the classes the catalog creates have beyond `MODULE_ATTRIBUTES`:
their classes' and those their constructors set (tests/test_catalog.py)."""


LIST_ATTRIBUTES: frozenset[str] = frozenset({"append", "extend", "insert", "pop"})
"""The public attributes nn.ModuleList has beyond `MODULE_ATTRIBUTES`, and its modules'
names (`"0"`)."""


def has_attribute(module: str, attr: str) -> bool:
    """Whether a module of class `module` (qualified name: a class the catalog creates, or the
    nn.ModuleList holding copies of one) may have attribute `attr`: a private name,
    nn.Module's, one of `CATALOG_ATTRIBUTES` (`LIST_ATTRIBUTES`), or any on a toolkit's
    class."""
    if module == NN + "ModuleList":
        return (
            attr.startswith("_")
            or attr in MODULE_ATTRIBUTES
            or attr in LIST_ATTRIBUTES
            or attr.isdigit()
        )
    return (
        attr.startswith("_")
        or attr in MODULE_ATTRIBUTES
        or attr in CATALOG_ATTRIBUTES
        or catalog_origin(module) != module
    )


def markdown_table() -> str:
    """The catalog as the Markdown table shown in the README."""
    rows = [
        "| module | callables | tensor methods / operators | hyper-parameters |",
        "|---|---|---|---|",
    ]
    for module in replacing_modules():
        ops = ROWS_OF.get(module, ())
        functions = sorted(
            {
                f.replace("torch.nn.functional.", "F.")
                for op in ops
                for f in op.functions + op.inplace_functions
            }
        )
        methods = sorted(
            {f".{m}()" for op in ops for m in op.methods + op.inplace_methods}
            | {f"`{s}`" for op in ops for s in op.operators + op.inplace_operators}
            | {f"`{_WRITTEN[f]}`" for op in ops for f in op.functions if f in _WRITTEN}
        )
        hyper = sorted(
            {
                a.ctor_name + (" (or at call)" if _at_call(op, a, module) else "")
                for op in ops
                for a in op.args
                if a.role is Role.HYPER and (module == op.call_module or not a.call_only)
            }
            | {a.gate for op in ops for a in op.args if a.gate}
        )
        rows.append(
            f"| `{module.replace('torch.nn.', 'nn.')}` | {', '.join(functions)} | "
            f"{', '.join(methods)} | {', '.join(hyper)} |"
        )
    return "\n".join(rows)


_WRITTEN = {OPERATOR_ABS: "abs(x)", OPERATOR_NEG: "-x"}
"""How Python code writes the `operator` functions the catalog lists."""


def _at_call(op: Op, arg: Arg, module: str) -> bool:
    """Whether `module` takes `arg` of `op` at call time too."""
    return arg.at_call and op.module_for(True)[0] == module
