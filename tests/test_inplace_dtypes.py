"""An in-place op keeps its receiver's dtype and shape (or raises); its out-of-place rewrite must
too: the modules built with `as_inplace=True`, the fixture `inplace_dtypes` in fp32, under bf16
autocast and with fp16 / fp64 operands, in eval and train mode, and the preparer's twin."""

from __future__ import annotations

from itertools import product

import pytest
import torch
from equivalence import assert_same_outcome, loaded_pair, outcome
from fixture_cases import FIXTURES, import_path

import migrator.nn as mnn
from migrator.prove.prepare import prepare_model

CASE = FIXTURES / "cases" / "inplace_dtypes"
BF16 = torch.bfloat16


def _ints(*shape: int) -> torch.Tensor:
    return torch.arange(1, 1 + torch.Size(shape).numel()).reshape(shape)


# (module, the in-place op it stands for, its inputs); the receiver comes first
with torch.random.fork_rng():
    torch.manual_seed(0)
    TWINS = [
        (mnn.Add(as_inplace=True), lambda x, y: x.add_(y), (torch.randn(2, 3).to(BF16), torch.randn(3))),
        (mnn.Add(alpha=2, as_inplace=True), lambda x, y: x.add_(y, alpha=2), (torch.randn(3).half(), torch.randn(3).double())),
        (mnn.Sub(as_inplace=True), lambda x, y: x.sub_(y), (torch.randn(3), torch.randn(3).double())),
        (mnn.Mul(as_inplace=True), lambda x, y: x.mul_(y), (torch.randn(2, 3), torch.randn(3).double())),
        (mnn.Mul(as_inplace=True), lambda x, y: x.mul_(y), (torch.randn(3).double(), torch.randn(3))),
        (mnn.Mul(as_inplace=True), lambda x, y: x.mul_(y), (torch.randn(3).to(BF16), torch.tensor(0.3))),
        (mnn.Div(as_inplace=True), lambda x, y: x.div_(y), (_ints(3), 2)),
        (mnn.Div(rounding_mode="floor", as_inplace=True), lambda x, y: x.div_(y, rounding_mode="floor"), (_ints(3), torch.tensor([2.5, 1.0, 3.0]))),
        (mnn.FloorDiv(as_inplace=True), lambda x, y: x.floor_divide_(y), (torch.randn(3).half(), torch.rand(3) + 1)),
        (mnn.Pow(as_inplace=True), lambda x, y: x.pow_(y), (_ints(3), 2.5)),
        (mnn.Add(as_inplace=True), lambda x, y: x.add_(y), (torch.randn(2, 1), torch.randn(2, 3))),
        (mnn.Add(as_inplace=True), lambda x, y: x + y, (0, torch.randn(3).to(BF16))),
        (mnn.Sqrt(as_inplace=True), lambda x: x.sqrt_(), (_ints(3),)),
        (mnn.Exp(as_inplace=True), lambda x: x.exp_(), (torch.randn(3).to(BF16),)),
        (mnn.CumSum(0, as_inplace=True), lambda x: x.cumsum_(0), (_ints(3).int(),)),
        (mnn.CumSum(0, torch.float64, as_inplace=True), lambda x: x.cumsum_(0, dtype=torch.float64), (torch.randn(3),)),
        (mnn.Clamp(as_inplace=True), lambda x, low: x.clamp_(low), (torch.randn(2, 1), torch.zeros(2, 3))),
        (mnn.MaskedFill(0.5, as_inplace=True), lambda x, m: x.masked_fill_(m, 0.5), (torch.randn(2, 1), torch.rand(2, 3) > 0.5)),
        (mnn.MaskedFill(0.5, as_inplace=True), lambda x, m: x.masked_fill_(m, 0.5), (_ints(3), torch.rand(3) > 0.5)),
        (mnn.AddMM(as_inplace=True), lambda x, a, b: x.addmm_(a, b), (torch.randn(2, 3), torch.randn(2, 4), torch.randn(4, 3))),
    ]  # fmt: skip


def _clones(inputs: tuple) -> list:
    return [t.clone() if isinstance(t, torch.Tensor) else t for t in inputs]


@pytest.mark.parametrize("autocast", [False, True], ids=["plain", "bf16_autocast"])
@pytest.mark.parametrize(
    "module, inplace, inputs",
    TWINS,
    ids=[f"{i}-{type(m).__name__}" for i, (m, _, _) in enumerate(TWINS)],
)
def test_module_gives_what_the_inplace_op_leaves(module, inplace, inputs, autocast):
    """Same values and dtype as the in-place op, or the same error (an integer receiver given a
    float result, a broadcast growing the receiver, addmm_ with matrices autocast would cast)."""
    with torch.autocast("cpu", BF16, enabled=autocast):
        expected = outcome(lambda: inplace(*_clones(inputs)))
        actual = outcome(lambda: module(*_clones(inputs)))
    assert_same_outcome(expected, actual)


def test_plain_module_promotes():
    """What `as_inplace` is for: the out-of-place op returns the promoted dtype."""
    x, y = torch.randn(3).to(BF16), torch.randn(3)
    assert mnn.Add()(x, y).dtype == torch.float32
    assert mnn.Add(as_inplace=True)(x, y).dtype == BF16


def test_exported_and_traced_graphs_are_the_plain_ops():
    """The test reads dtypes and shapes only: fp32 graphs do not change."""

    class Block(torch.nn.Module):
        def __init__(self, twin: bool) -> None:
            super().__init__()
            self.add = mnn.Add(as_inplace=twin)
            self.sqrt = mnn.Sqrt(as_inplace=twin)
            self.mm = mnn.AddMM(as_inplace=twin)

        def forward(self, x, y):
            h = self.sqrt(self.add(x * x, y))
            return self.mm(h, h, h)

    x, y = torch.rand(3, 3), torch.rand(3)
    graphs = []
    for twin in (False, True):
        exported = torch.export.export(Block(twin), (x, y)).graph
        traced = torch.fx.symbolic_trace(Block(twin)).graph
        graphs.append([[str(n.target) for n in g.nodes] for g in (exported, traced)])
    assert graphs[0] == graphs[1]
    scripted = torch.jit.script(Block(True))
    assert scripted(x.to(BF16), y).dtype == BF16  # TorchScript runs the twin too


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize(
    "setting", ["fp32", "bf16_autocast", "fp16_input", "fp64_input", "fp64_model"]
)
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_fixture_migrated_model_keeps_dtypes(setting, train, fused):
    before = import_path(CASE.with_suffix(".before.py"), "inplace_dtypes_before")
    after = import_path(CASE.with_suffix(".after.py"), "inplace_dtypes_after")
    original, migrated = loaded_pair(lambda: before.Model(fused), lambda: after.Model(fused))
    if setting == "fp64_model":
        original, migrated = original.double(), migrated.double()
    x = before.example_inputs()[0]
    x = {"fp16_input": x.half(), "fp64_input": x.double(), "fp64_model": x.double()}.get(setting, x)
    results = []
    for model in (original.train(train), migrated.train(train)):
        with torch.no_grad(), torch.autocast("cpu", BF16, enabled=setting == "bf16_autocast"):
            results.append(outcome(lambda: model(x.clone())))
    assert_same_outcome(*results)
    expected = results[0]
    if setting == "fp32":  # the receivers kept their dtype against fp64 / fp16 operands
        assert [t.dtype for t in expected] == [torch.float32] * 5
    if setting == "bf16_autocast":  # `out += x`: a bf16 conv output plus the fp32 input
        assert expected[0].dtype == BF16


def test_preparer_builds_the_twin_for_augmented_assignments():
    """fx traces `x += y` as `operator.add` (its proxies have no in-place operators): the
    preparer reads the augmented assignment off the traced code and builds the module with
    `as_inplace=True`, as `fix` does; `acc = 0; acc += t` is a plain add."""

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(2, 2, 1)

        def forward(self, x):
            out = self.conv(x)
            out += x
            acc = 0
            acc += out
            return acc * 2

    prepared = prepare_model(Model())
    adds = [m for m in prepared.modules() if isinstance(m, mnn.Add)]
    assert [m.as_inplace for m in adds] == [True, False]
    x = torch.randn(1, 2, 3, 3)
    with torch.autocast("cpu", BF16):
        assert prepared(x).dtype == Model()(x).dtype == BF16


@pytest.mark.parametrize("name", ["sigmoid", "tanh"])
def test_float_result_twins_stay_on_integer_tensors(name):
    """`y.sigmoid_()` raises on an integer `y` where `nn.Sigmoid` returns floats: `fix` leaves
    the in-place op (fixture `inplace_unary_int`), whose model still raises as it did."""
    x = _ints(3)
    with pytest.raises(RuntimeError):
        getattr(x.clone(), name + "_")()
    assert getattr(torch.nn, name.capitalize())()(x).dtype == torch.float32
    case = FIXTURES / "cases" / "inplace_unary_int"
    before = import_path(case.with_suffix(".before.py"), "inplace_unary_int_before")
    after = import_path(case.with_suffix(".after.py"), "inplace_unary_int_after")
    original, migrated = loaded_pair(before.Model, after.Model)
    expected = outcome(lambda: original(x))
    assert isinstance(expected, RuntimeError)
    assert_same_outcome(expected, outcome(lambda: migrated(x)))
