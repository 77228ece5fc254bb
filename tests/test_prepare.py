"""`migrator.prepare_model`: each known fault of naive runtime preparers has a test here that such
a preparer fails (matching by node name, dropping positional or keyword arguments, swapping in
another formula, copying modules with weights, losing learned weights, trusting itself)."""

from __future__ import annotations

import operator
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from migrator import prepare_model  # noqa: E402
from migrator.prove import prepare  # noqa: E402
from migrator.prove.ops import runtime_catalog  # noqa: E402
from migrator.prove.prepare import PrepareWarning, prepare_report  # noqa: E402
from migrator.prove.trace import PrepareError, TraceFailure  # noqa: E402
from migrator.nn import Add, ScaledDotProductAttention  # noqa: E402


def norm(x):
    """A user function whose node is named like the catalog's `norm` ops."""
    return x / (x.abs().sum() + 1)


def add_1x1(x, y):
    return x * 2 + y


torch.fx.wrap("norm")
torch.fx.wrap("add_1x1")


def _prepared(model, *inputs, **options):
    """prepare_model with its self-check on `inputs`, warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrepareWarning)
        return prepare_model(model, example_inputs=inputs, **options)


def _created(gm, cls):
    return {name: m for name, m in gm.named_modules() if type(m) is cls}


def _equal(model, gm, *inputs):
    with torch.no_grad():
        return torch.equal(model(*[x.clone() for x in inputs]), gm(*[x.clone() for x in inputs]))


class Fn(nn.Module):
    """A model whose forward is the given function of one input."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


class Fn2(Fn):
    def forward(self, x, y):
        return self.fn(x, y)


class Fn4(Fn):
    def forward(self, q, k, v, mask):
        return self.fn(q, k, v, mask)


def _children(gm):
    return [type(m).__name__ for _, m in gm.named_children()]


# --------------------------------------------------------------------------- matching


def test_wrapped_functions_named_like_ops_stay_untouched():
    model = Fn2(lambda x, y: F.relu(add_1x1(norm(x), y)))
    gm = _prepared(model, torch.randn(4, 5), torch.randn(4, 5))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == [norm, add_1x1]
    assert _children(gm) == ["ReLU"]


def test_each_catalog_function_resolves_to_one_signature():
    catalog = runtime_catalog()
    node = torch.fx.Graph().call_function(torch.nn.functional.relu, (1,))
    assert catalog.match(node).op.module == "torch.nn.ReLU"
    assert catalog.match(torch.fx.Graph().call_function(operator.add, (1, 2))).op.key == "add"


def test_operators_on_sizes_are_not_tensor_ops():
    model = Fn(lambda x: x.flatten(1) * (x.shape[0] * 2) + 1)
    gm = _prepared(model, torch.randn(2, 3, 4))
    assert _children(gm) == ["Flatten", "Mul", "Add"]
    mul = next(n for n in gm.graph.nodes if n.op == "call_function" and n.target is operator.mul)
    assert mul.args[1] == 2


# --------------------------------------------------------------------------- arguments


def test_positional_hyper_parameters():
    model = Fn(lambda x: torch.softmax(x, 1) + x.softmax(1) + F.leaky_relu(x, 0.2))
    x = torch.randn(2, 3, 4)  # 3-D: a dropped dim would silently become dim 0
    gm = _prepared(model, x)
    assert [m.dim for m in _created(gm, nn.Softmax).values()] == [1, 1]
    assert [m.negative_slope for m in _created(gm, nn.LeakyReLU).values()] == [0.2]
    assert _equal(model, gm, x)


def test_every_hyper_parameter_is_kept():
    model = Fn(
        lambda x: (
            F.gelu(F.hardswish(x), approximate="tanh")
            + F.hardtanh(x, -0.5, 0.25)
            + F.max_pool1d(x, 3, 1, 1)
        )
    )
    x = torch.randn(2, 3, 8)
    gm = _prepared(model, x)
    assert list(_created(gm, nn.Hardswish)) and not _created(gm, nn.Hardsigmoid)
    assert [m.approximate for m in _created(gm, nn.GELU).values()] == ["tanh"]
    [hardtanh] = _created(gm, nn.Hardtanh).values()
    assert (hardtanh.min_val, hardtanh.max_val) == (-0.5, 0.25)
    [pool] = _created(gm, nn.MaxPool1d).values()
    assert (pool.kernel_size, pool.stride, pool.padding) == (3, 1, 1)
    assert _equal(model, gm, x)


def test_attention_gets_every_argument():
    def attend(q, k, v, mask):
        masked = F.scaled_dot_product_attention(q, k, v, mask)
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5)
        return masked + causal

    q, k, v = (torch.randn(1, 2, 5, 4) for _ in range(3))
    mask = torch.randn(5, 5)
    model = Fn4(attend)
    gm = _prepared(model, q, k, v, mask)
    modules = _created(gm, ScaledDotProductAttention)
    assert [(m.is_causal, m.scale) for m in modules.values()] == [(False, None), (True, 0.5)]
    calls = [n for n in gm.graph.nodes if n.op == "call_module" and n.target in modules]
    assert [len(n.args) for n in calls] == [4, 3]  # the mask is forwarded
    assert _equal(model, gm, q, k, v, mask)


def test_hyper_parameters_computed_while_tracing_are_passed_at_call_time():
    """A size read from another tensor, a padding computed from the input's size: the module
    (Interpolate beside nn.Upsample, Pad) takes the traced value in forward."""

    def resize(x, y):
        up = F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)
        return (
            F.pad(up, (0, x.shape[-1] % 3, 0, 1)) + F.interpolate(y, scale_factor=2.0)[..., :1, :1]
        )

    from migrator.nn import Interpolate, Pad

    x, y = torch.randn(1, 2, 7, 5), torch.randn(1, 2, 3, 4)
    model = Fn2(resize)
    gm = _prepared(model, x, y)
    [interpolate] = _created(gm, Interpolate).values()
    assert (interpolate.size, interpolate.mode, interpolate.align_corners) == (
        None,
        "bilinear",
        False,
    )
    [pad] = _created(gm, Pad).values()
    assert pad.pad is None
    calls = {n.target: n for n in gm.graph.nodes if n.op == "call_module"}
    assert set(calls[next(iter(_created(gm, Interpolate)))].kwargs) == {"size"}
    assert set(calls[next(iter(_created(gm, Pad)))].kwargs) == {"pad"}
    assert [m.scale_factor for m in _created(gm, nn.Upsample).values()] == [2.0]
    assert _equal(model, gm, x, y)


def test_sizes_computed_while_tracing_go_to_migrators_modules_at_call_time():
    """A kernel size, an output size, a factor or a dim computed from the input's size: torch.nn's
    classes take none in forward, so migrator's pool, PixelShuffle and Flatten take them; the
    same settings as constants keep torch.nn's classes."""
    from migrator.nn import AdaptiveAvgPool, Flatten, MaxPool, PixelShuffle

    def pools(x):
        h, w = x.shape[-2:]
        a = F.max_pool2d(x, kernel_size=(h // 4, w // 4), stride=1, padding=(h // 8, w // 8))
        b = F.adaptive_avg_pool2d(x, (h // 2, w // 2)) + F.adaptive_avg_pool2d(x, 4)
        c = F.pixel_shuffle(x, x.shape[1] // 2).flatten(0, x.dim() - 2)
        return a.sum() + b.sum() + c.sum() + F.max_pool2d(x, 3).sum()

    x = torch.randn(2, 4, 8, 8)
    model = Fn(pools)
    gm = _prepared(model, x)
    calls = {n.target: n for n in gm.graph.nodes if n.op == "call_module"}
    [max_pool] = _created(gm, MaxPool).items()
    assert (max_pool[1].dims, max_pool[1].stride, max_pool[1].kernel_size) == (2, 1, None)
    assert set(calls[max_pool[0]].kwargs) == {"kernel_size", "padding"}
    [adaptive] = _created(gm, AdaptiveAvgPool)
    assert set(calls[adaptive].kwargs) == {"output_size"}
    [shuffle] = _created(gm, PixelShuffle)
    assert set(calls[shuffle].kwargs) == {"upscale_factor"}
    [flatten] = _created(gm, Flatten)
    assert gm.get_submodule(flatten).start_dim == 0 and set(calls[flatten].kwargs) == {"end_dim"}
    assert [m.kernel_size for m in _created(gm, nn.MaxPool2d).values()] == [3]
    assert [m.output_size for m in _created(gm, nn.AdaptiveAvgPool2d).values()] == [4]
    assert _equal(model, gm, x)


def test_clamp_bound_held_by_the_module_goes_at_call_time():
    """A bound that is a buffer, like one that is an input, is passed to Clamp at call time (the
    quantizer keeps it in float, `FLOAT_ARGUMENTS`), as `fix` passes it."""

    class Bounded(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("low", torch.tensor(-0.5))

        def forward(self, x, high):
            return torch.clamp(x, self.low) + torch.clamp(x, max=high)

    from migrator.nn import Clamp

    model = Bounded()
    x, high = torch.randn(2, 3), torch.tensor(0.25)
    gm = _prepared(model, x, high)
    assert prepare_report(gm).left == []
    clamps = _created(gm, Clamp)
    calls = [n for n in gm.graph.nodes if n.op == "call_module" and n.target in clamps]
    assert sorted(name for call in calls for name in call.kwargs) == ["max", "min"]
    assert _equal(model, gm, x, high)


def test_silu_stays_silu():
    model = Fn(lambda x: F.silu(x))
    x = torch.randn(64, 64) * 10
    gm = _prepared(model, x)
    assert _children(gm) == ["SiLU"]
    assert not [n for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
    assert _equal(model, gm, x)


def test_concat_of_a_list_and_constants_as_operands():
    model = Fn2(lambda x, y: torch.cat([x, 2 - y, x / 3], dim=1))
    gm = _prepared(model, torch.randn(2, 3), torch.randn(2, 3))
    cat = next(n for n in gm.graph.nodes if n.op == "call_module" and "cat" in n.target)
    assert len(cat.args) == 3 and gm.get_submodule(cat.target).dim == 1


# --------------------------------------------------------------------------- weights and reuse


class SharedConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.conv(self.act(self.conv(x))))


def test_module_with_weights_called_twice_is_reported_not_copied():
    model = SharedConv()
    with pytest.warns(PrepareWarning, match="untie"):
        gm = prepare_model(model, example_inputs=torch.randn(1, 3, 4, 4))
    report = prepare_report(gm)
    assert [(s.module, s.calls) for s in report.shared] == [("conv", 2)]
    assert _created(gm, nn.Conv2d) == {"conv": model.conv}
    assert {id(p) for p in gm.parameters()} == {id(p) for p in model.parameters()}
    assert [(c.original, c.copy) for c in report.copies] == [("act", "act_1")]
    assert gm.act_1 is not gm.act and isinstance(gm.act_1, nn.ReLU)


class LearnedPReLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.tensor([0.7, -0.3, 0.1]))

    def forward(self, x):
        return F.prelu(x, self.weight)


def test_learned_prelu_weight_is_kept():
    model = LearnedPReLU()
    x = torch.randn(2, 3, 4)
    gm = _prepared(model, x)
    [prelu] = _created(gm, nn.PReLU).values()
    assert prelu.weight is model.weight
    assert _equal(model, gm, x)


def test_prelu_on_the_weight_of_a_prelu_module_calls_that_module():
    class OwnedWeight(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = nn.PReLU(3, init=0.1)

        def forward(self, x):
            return torch.prelu(x, self.act.weight)

    model = OwnedWeight()
    x = torch.randn(2, 3)
    gm = _prepared(model, x)
    assert _created(gm, nn.PReLU) == {"act": model.act}
    assert list(gm.state_dict()) == list(model.state_dict())


def test_max_pool_returning_indices():
    model = Fn(lambda x: F.max_pool2d(x, 2, 1, return_indices=True)[1])
    x = torch.randn(1, 2, 5, 5)
    gm = _prepared(model, x)
    [pool] = _created(gm, nn.MaxPool2d).values()
    assert (pool.kernel_size, pool.stride, pool.return_indices) == (2, 1, True)


# --------------------------------------------------------------------------- training


class Dropouts(nn.Module):
    def forward(self, x):
        follows = F.dropout(x, 0.5, training=self.training)
        never = F.dropout(x, 0.5, training=False)
        always = F.dropout(x, 0.5)
        return follows + never + always


@pytest.mark.parametrize("mode", [True, False], ids=["train", "eval"])
def test_only_dropout_following_self_training_becomes_a_module(mode):
    model = Dropouts().train(mode)
    gm = _prepared(model, torch.randn(8, 8))
    assert len(_created(gm, nn.Dropout)) == 1
    left = prepare_report(gm).left
    assert len(left) == 2 and all("self.training" in x.reason for x in left)


def _drop(x, training):
    return F.dropout(x, 0.5, training=training)


class ReadsSelfTraining(nn.Module):
    def forward(self, x):
        y = F.dropout(x, 0.5, training=self.training)
        return torch.nn.functional.dropout(y, p=0.25, training=self.training) + _drop(
            x, self.training
        )


class ConstantMode(nn.Module):
    """`self.training` is a property that never follows `train()`."""

    @property
    def training(self):
        return False

    @training.setter
    def training(self, value):
        pass

    def forward(self, x):
        return F.dropout(x, 0.5, training=self.training)


def _traces(monkeypatch):
    calls = []
    trace = prepare.trace
    monkeypatch.setattr(prepare, "trace", lambda *a, **k: calls.append(1) or trace(*a, **k))
    return calls


@pytest.mark.parametrize("mode", [True, False], ids=["train", "eval"])
def test_training_read_off_the_call_or_traced_again(monkeypatch, mode):
    model, x = ReadsSelfTraining().train(mode), torch.randn(8, 8)
    traces = _traces(monkeypatch)
    gm = _prepared(model, x)
    # the helper's `training=training` cannot be read off its call: a second trace decides
    assert len(traces) == 2
    assert sorted(m.p for m in _created(gm, nn.Dropout).values()) == [0.25, 0.5, 0.5]
    assert all(m.training is mode for m in _created(gm, nn.Dropout).values())

    class Direct(ReadsSelfTraining):
        def forward(self, x):
            return F.dropout(x, 0.5, training=self.training) * torch.nn.functional.dropout(
                x, p=0.25, training=self.training
            )

    traces.clear()
    gm = _prepared(Direct().train(mode), x)
    assert len(traces) == 1  # both calls pass `self.training` as written: no second trace
    assert sorted(m.p for m in _created(gm, nn.Dropout).values()) == [0.25, 0.5]
    if mode:
        torch.manual_seed(0)
        expected = Direct().train(mode)(x)
        torch.manual_seed(0)
        assert torch.equal(gm(x), expected)


def test_self_training_that_does_not_follow_the_mode_stays_a_function(monkeypatch):
    traces = _traces(monkeypatch)
    gm = _prepared(ConstantMode(), torch.randn(4, 4))
    assert len(traces) == 2 and not _created(gm, nn.Dropout)
    [left] = prepare_report(gm).left
    assert "self.training" in left.reason


def test_inplace_method_becomes_out_of_place_only_when_safe():
    class Inplace(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 2, 1)

        def forward(self, x):
            y = self.conv(x)
            y.add_(1)  # a statement: later reads of `y` get the new value
            z = self.conv(x)
            view = z[0]
            z.mul_(2)  # `view` shares z's memory and sees the change: stays in place
            x.sub_(1)  # changes the caller's input: stays in place
            return y + view

    model = Inplace()
    x = torch.randn(1, 2, 3, 3)
    gm = _prepared(model, x)
    assert [n.target for n in gm.graph.nodes if n.op == "call_method"] == ["mul_", "sub_"]
    reasons = [x.reason for x in prepare_report(gm).left]
    assert "may hold a view" in reasons[0] and "not the fresh output" in reasons[1]
    assert len(_created(gm, Add)) == 2
    assert _equal(model, gm, x)


def test_inplace_on_the_output_of_a_hooked_module_stays_in_place():
    """A forward hook may make a conv return something else than a new tensor (here its
    input): `add_` on that output stays in place, and the prepared model, prepared without
    example inputs (no self-check), computes what the model does."""

    class Hooked(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 2, 1)

        def forward(self, x):
            y = self.conv(x)
            y.add_(1)
            return y * x

    model = Hooked().eval()
    model.conv.register_forward_hook(lambda module, inputs, output: inputs[0])
    x = torch.randn(1, 2, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrepareWarning)
        gm = prepare_model(model)
    assert [n.target for n in gm.graph.nodes if n.op == "call_method"] == ["add_"]
    assert "not the fresh output" in prepare_report(gm).left[0].reason
    assert _equal(model, gm, x)


# --------------------------------------------------------------------------- self-check


def test_self_check_rejects_a_wrong_module(monkeypatch):
    build = prepare.build_module
    monkeypatch.setattr(
        prepare,
        "build_module",
        lambda op, binding, root: nn.ReLU6() if op.key == "relu" else build(op, binding, root),
    )
    model = Fn(lambda x: F.relu(x) * 10)
    x = torch.randn(16) * 10
    prepare_model(model)  # without example inputs nothing is run
    with pytest.raises(PrepareError, match="does not reproduce"):
        prepare_model(model, example_inputs=x)
    monkeypatch.setattr(prepare, "build_module", lambda op, binding, root: nn.Softmax(dim=5))
    with pytest.raises(PrepareError, match="fails on the example inputs: IndexError"):
        prepare_model(model, example_inputs=x)


# --------------------------------------------------------------------------- options


class Base(nn.Module):
    def forward(self, x):
        return F.relu(x)


class Derived(Base):
    pass


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.derived = Derived()
        self.named = Base()
        self.blocks = nn.Sequential(Base(), Base())

    def forward(self, x, double=False):
        y = self.blocks(self.named(self.derived(x)))
        if double:
            y = y + y
        return y


def test_exclusions_concrete_args_and_placement():
    model = Holder()
    gm = _prepared(
        model,
        torch.randn(3),
        module_classes_to_exclude=[Derived],
        modules_to_exclude=["named"],
        concrete_args={"double": False},
    )
    leaves = [n.target for n in gm.graph.nodes if n.op == "call_module"]
    assert leaves == ["derived", "named", "blocks.0.relu", "blocks.1.relu"]
    assert gm.derived is model.derived  # kept whole, its F.relu untouched
    assert not _created(gm, Add)


def test_original_model_is_not_changed():
    model = SharedConv()
    before = [(n, type(m)) for n, m in model.named_modules()]
    _prepared(model, torch.randn(1, 3, 2, 2))
    assert [(n, type(m)) for n, m in model.named_modules()] == before


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent: fx cannot trace this
            return F.relu(x)
        return x


def test_trace_failure_names_module_line_reason_and_ways_out():
    model = nn.Sequential(nn.Identity(), Gate())
    with pytest.raises(TraceFailure) as caught:
        prepare_model(model)
    message = str(caught.value)
    line = next(
        i
        for i, text in enumerate(open(__file__, encoding="utf-8"), 1)
        if "data-dependent: fx cannot" in text
    )
    assert "`1` (Gate)" in message
    assert f"test_prepare.py:{line}: `if x.sum() > 0:" in message
    assert "control flow" in message
    for way_out in (
        "concrete_args",
        'modules_to_exclude=["1"]',
        "module_classes_to_exclude=[Gate]",
        "torch.fx.wrap",
    ):
        assert way_out in message


class _EagerQuantBlock(nn.Module):
    """torchvision's quantizable blocks: `FloatFunctional` methods instead of `+` and `*`."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)
        self.skip_add = nn.quantized.FloatFunctional()

    def forward(self, x):
        return self.skip_add.add(self.conv(x), x) * 2


def test_ops_inside_float_functional_are_its_own():
    """The add inside `FloatFunctional.add` already runs in a module: only the `*` is converted."""
    x = torch.randn(1, 3, 4, 4)
    model = _EagerQuantBlock().eval()
    gm = prepare_model(model, example_inputs=(x,))
    assert [c.call for c in prepare_report(gm).converted] == ["*"]
    assert torch.equal(gm(x), model(x))


# ------------------------------------------------------------------ the fx graph check


class _Reduce(nn.Module):
    """`x.mean(self.dim)` and attention dropout gated on the mode, as written (`module=None`)
    or migrated into the given modules."""

    def __init__(self, mean=None, attend=None, dim=(2, 3)):
        super().__init__()
        self.dim = dim
        self.attn_drop = nn.Dropout(0.25)
        self.m, self.a = mean, attend

    def forward(self, x):
        p = self.attn_drop.p if self.training else 0.0
        if self.m is None:
            return F.scaled_dot_product_attention(x, x, x, dropout_p=p).mean(self.dim)
        return self.m(self.a(x, x, x), dim=self.dim)


@pytest.mark.parametrize("train", [False, True])
def test_fx_check_compares_call_time_hyper_parameters_as_the_modules_own(train):
    """`Mean()(x, dim=d)` is `Mean(dim=d)(x)`, and `SDPA(p, dropout_train_only=True)` is
    `SDPA(p)` in training mode and `SDPA(0.0)` in eval mode; another value is not."""
    from migrator.nn import Mean
    from migrator.prove.compare import check_fx_graph

    original = _Reduce().train(train)
    gated = ScaledDotProductAttention(dropout_p=0.25, dropout_train_only=True)
    assert check_fx_graph(original, _Reduce(Mean(), gated).train(train)).status == "pass"
    other_dim = _Reduce(Mean(), gated, dim=(1,)).train(train)
    assert check_fx_graph(original, other_dim).status == "fail"
    always = _Reduce(Mean(), ScaledDotProductAttention(dropout_p=0.25)).train(train)
    assert check_fx_graph(original, always).status == ("pass" if train else "fail")
