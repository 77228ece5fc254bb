"""The one argument binder, with plain Python values standing for either world's."""

from __future__ import annotations

import pytest

from migrator import catalog
from migrator.binder import NOT_CONSTANT, Bound, Predicates, bind
from migrator.refusal import Refusal

COMPUTED = object()
"""A value known only when the call runs."""

PLAIN = Predicates(
    show=lambda v: "<computed>" if v is COMPUTED else repr(v),
    constant=lambda v: NOT_CONSTANT if v is COMPUTED else v,
    unfixed=lambda v: "it is computed" if v is COMPUTED else None,
    follows_mode=lambda v: v == "self.training",
    unsplittable=lambda v: None if isinstance(v, list) else "not a list",
    weight_refused=lambda op, v: None if v == "owned" else "is not owned",
    held=lambda v: {"param": (True, "is a parameter"), "buf": (False, "is a buffer")}.get(v),
)


def _bind(function: str, *args, **kwargs) -> Bound | Refusal:
    return bind(catalog.by_function(function), args, list(kwargs.items()), PLAIN)


def test_roles_sorted():
    bound = _bind("torch.nn.functional.leaky_relu", "x", 0.2)
    assert [(i.arg.name, i.value, i.given) for i in bound.inputs] == [("input", "x", True)]
    assert bound.ctor == (("negative_slope", 0.2),) and bound.given == {"negative_slope"}
    assert _bind("torch.nn.functional.relu_", "x").ctor == (("inplace", True),)
    assert _bind("torch.flatten", "x").ctor == (("start_dim", 0),)  # nn.Flatten's default is 1
    sdpa = _bind("torch.nn.functional.scaled_dot_product_attention", "q", "k", "v")
    assert [i.given for i in sdpa.inputs] == [True, True, True, False]
    assert _bind("torch.cat", ["a", "b"], 1).inputs[0].value == ["a", "b"]
    assert _bind("torch.nn.functional.prelu", "x", "owned").weight == "owned"
    slopes = _bind("torch.nn.functional.prelu", "x", "w")  # no module of its class owns it
    assert (slopes.module, slopes.weight) == ("migrator.nn.PReLU", None)
    assert [i.value for i in slopes.inputs] == ["x", "w"]


@pytest.mark.parametrize(
    "function, args, kwargs, code, message",
    [
        (
            "torch.nn.functional.softmax",
            ("x", COMPUTED),
            {},
            "MIG101",
            "`dim=<computed>` is not fixed at __init__ time: it is computed",
        ),
        (
            "torch.nn.functional.dropout",
            ("x", 0.5, True),
            {},
            "MIG102",
            "`training=True`; the module would follow `self.training` instead",
        ),
        (
            "torch.nn.functional.dropout",
            ("x",),
            {},
            "MIG102",
            "`training=True (default)`; the module would follow `self.training` instead",
        ),
        (
            "torch.sum",
            ("x",),
            {"dtype": "float64"},
            "MIG107",
            "`dtype='float64'` is not supported by the module (only None)",
        ),
        ("torch.cat", (COMPUTED,), {}, "MIG107", "not a list"),
        (
            "torch.nn.functional.relu",
            ("x", False, 1),
            {},
            None,
            "3 positional arguments, the catalog knows 2",
        ),
        (
            "torch.nn.functional.relu",
            ("x",),
            {"out": 1},
            None,
            "argument `out` is not in the catalog",
        ),
        ("torch.nn.functional.relu", ("x",), {"input": 1}, None, "argument `input` is given twice"),
        ("torch.nn.functional.threshold", ("x",), {}, None, "`threshold` is missing"),
    ],
)
def test_refusals(function, args, kwargs, code, message):
    refusal = _bind(function, *args, **kwargs)
    assert isinstance(refusal, Refusal)
    assert (refusal.code, refusal.message) == (code, message)


def test_follows_mode_and_fixed_default_accepted():
    bound = _bind("torch.nn.functional.dropout", "x", 0.1, "self.training")
    assert bound.ctor == (("p", 0.1),)
    assert isinstance(_bind("torch.sum", "x", dtype=None), Bound)


def test_unfixed_hyper_parameter_passed_at_call_time():
    """A run-time value of a hyper-parameter the module also takes in forward (`Arg.at_call`)
    becomes a forward keyword; a constant next to it stays a constructor argument."""
    bound = _bind("torch.nn.functional.pad", "x", COMPUTED, mode="reflect")
    assert bound.call == (("pad", COMPUTED),) and bound.ctor == (("mode", "reflect"),)
    assert (bound.module, bound.key) == ("migrator.nn.Pad", "pad")
    mean = _bind("torch.mean", "x", COMPUTED, True)
    assert mean.call == (("dim", COMPUTED),) and mean.ctor == (("keepdim", True),)


def test_interpolate_at_call_time_becomes_interpolate():
    """nn.Upsample takes no size in forward: a run-time size makes the call migrator's
    Interpolate; constant ones stay an nn.Upsample."""
    fn = "torch.nn.functional.interpolate"
    bound = _bind(fn, "x", size=COMPUTED, mode="bilinear")
    assert (bound.module, bound.key) == ("migrator.nn.Interpolate", "interpolate")
    assert bound.call == (("size", COMPUTED),) and bound.ctor == (("mode", "bilinear"),)
    constant = _bind(fn, "x", scale_factor=2)
    assert (constant.module, constant.key, constant.call) == ("torch.nn.Upsample", "upsample", ())


GATED = Predicates(
    **{**vars(PLAIN), "gated": lambda v: v[1:] if isinstance(v, tuple) and v[0] == "if" else None}
)
"""`("if", v, d)` stands for `v if self.training else d`."""


@pytest.mark.parametrize(
    "value, ctor, call",
    [
        (("if", 0.25, 0.0), (("dropout_p", 0.25), ("dropout_train_only", True)), ()),
        (("if", 0.25, 0), (("dropout_p", 0.25), ("dropout_train_only", True)), ()),
        # the eval-mode value is not the default, or the training one is not fixed: passed as is
        (("if", 0.25, 0.1), (), (("dropout_p", ("if", 0.25, 0.1)),)),
        (("if", 0.25, False), (), (("dropout_p", ("if", 0.25, False)),)),
        (("if", COMPUTED, 0.0), (), (("dropout_p", ("if", COMPUTED, 0.0)),)),
    ],
)
def test_training_gated_dropout(value, ctor, call):
    """`p if self.training else 0.0` is what a module applying `p` in training mode only does."""
    unfixed = GATED.unfixed
    predicates = Predicates(
        **{**vars(GATED), "unfixed": lambda v: "gated" if isinstance(v, tuple) else unfixed(v)}
    )
    fn = catalog.by_function("torch.nn.functional.scaled_dot_product_attention")
    bound = bind(fn, ["q", "k", "v"], [("dropout_p", value)], predicates)
    assert (bound.ctor, bound.call) == (ctor, call)


def test_hyper_parameter_without_call_form_still_refused():
    refusal = _bind("torch.nn.functional.softmax", "x", dim=COMPUTED)
    assert isinstance(refusal, Refusal) and refusal.code == "MIG101"


def test_variadic_operands_are_each_an_input():
    bound = _bind("torch.einsum", "ij,jk->ik", "a", "b")
    assert [(i.arg.name, i.value) for i in bound.inputs] == [("operands", "a"), ("operands", "b")]
    assert bound.ctor == (("equation", "ij,jk->ik"),)
    assert _bind("torch.einsum", "ii").message == "`operands` is missing"


def test_data_refuses_parameters_and_state_refuses_buffers_too():
    embedding = "torch.nn.functional.embedding"
    assert [i.value for i in _bind(embedding, "ids", "buf").inputs] == ["ids", "buf"]
    refusal = _bind(embedding, "ids", "param")
    assert refusal.code == "MIG106" and "'param'` is a parameter" in refusal.message
    batch_norm = "torch.nn.functional.batch_norm"
    bound = _bind(batch_norm, "x", "mean", "var", training="self.training")
    assert [i.value for i in bound.inputs if i.given] == ["x", "mean", "var"]
    for held in ("buf", "param"):
        refusal = _bind(batch_norm, "x", held, "var", training="self.training")
        assert refusal.code == "MIG106", refusal


def test_affine_tensors_go_at_call_time_and_pick_the_call_module():
    """A norm's weight and bias, a parameter too, are forward inputs; passing one makes a layer
    norm migrator's LayerNorm (nn.LayerNorm takes none at call time), `None` leaves it out."""
    layer_norm = "torch.nn.functional.layer_norm"
    bound = _bind(layer_norm, "x", (8,), "param", None, 1e-6)
    assert bound.module == "migrator.nn.LayerNorm" and bound.key == "layer_norm"
    assert [(i.arg.name, i.value, i.given) for i in bound.inputs] == [
        ("input", "x", True),
        ("weight", "param", True),
        ("bias", None, False),
    ]
    assert bound.ctor == (("normalized_shape", (8,)), ("eps", 1e-6))
    plain = _bind(layer_norm, "x", (8,), None, None)
    assert plain.module == "torch.nn.LayerNorm"
    assert plain.ctor == (("normalized_shape", (8,)), ("elementwise_affine", False))
    group_norm = _bind("torch.nn.functional.group_norm", "x", COMPUTED, bias="param")
    assert group_norm.call == (("num_groups", COMPUTED),)
    assert [i.value for i in group_norm.inputs if i.given] == ["x", "param"]


def test_a_literal_training_is_kept_only_where_the_world_reads_it():
    """`training=True` written in the source becomes BatchNorm's `training_mode`; a world that
    cannot tell it from `self.training` (a trace) keeps MIG102."""
    batch_norm = "torch.nn.functional.batch_norm"
    written = Predicates(**{**PLAIN.__dict__, "literal_mode": lambda v: v})
    bound = bind(catalog.by_function(batch_norm), ("x", None, None), [("training", True)], written)
    assert bound.ctor == (("training_mode", True),)
    assert bind(catalog.by_function(batch_norm), ("x", "m", "v"), [], written).ctor == (
        ("training_mode", False),
    )
    refusal = _bind(batch_norm, "x", None, None, training=True)
    assert refusal.code == "MIG102", refusal
