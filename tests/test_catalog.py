"""The op catalog agrees with the torch it describes."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import subprocess
import textwrap

import pytest

from migrator import catalog

torch = pytest.importorskip("torch")


def _resolve(qualname: str):
    module, name = qualname.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("op", catalog.CATALOG, ids=lambda op: f"{op.key}:{op.module_name}")
def test_every_callable_module_and_method_exists(op):
    assert isinstance(_resolve(op.module), type)
    for qualname in op.functions:
        assert callable(_resolve(qualname)), qualname
    for method in op.methods + op.inplace_methods:
        assert hasattr(torch.Tensor, method), method


def test_inplace_functions_are_listed():
    """Each in-place function of torch (`torch.sigmoid_`, `F.selu_`) of a listed function's
    name with `_` is listed, as such a function or as an in-place function, whose method the
    catalog lists too: none is left with no finding."""
    for op in catalog.CATALOG:
        for qualname in op.inplace_functions:
            assert callable(_resolve(qualname)), qualname
            assert catalog.by_function(qualname) is None, qualname
            assert qualname.rsplit(".", 1)[1] in op.inplace_methods, qualname
    for op in catalog.CATALOG:
        for qualname in op.functions:
            module, name = qualname.rsplit(".", 1)
            if hasattr(importlib.import_module(module), name + "_"):
                assert catalog.by_any_function(qualname + "_"), qualname + "_"


@pytest.mark.parametrize("op", catalog.CATALOG, ids=lambda op: f"{op.key}:{op.module_name}")
def test_signatures_match_torch(op):
    """Where Python can see a function's signature, the catalog lists its parameters in order."""
    for qualname in op.functions:
        try:
            parameters = inspect.signature(_resolve(qualname)).parameters.values()
            if all(p.kind is p.POSITIONAL_ONLY for p in parameters):
                continue  # `operator.neg(a, /)`: no name a call can pass
            names = [p.name for p in parameters]
            if names == ["args", "kwargs"]:  # boolean_dispatch: its twin shows the signature
                names = list(inspect.signature(_resolve(qualname + "_with_indices")).parameters)
        except (TypeError, ValueError):
            continue  # a builtin without a visible signature
        if names == ["args"]:
            continue  # `*args` (torch.einsum): Python shows no names
        assert names[: len(op.args)] == [a.name for a in op.args][: len(names)], qualname


@pytest.mark.parametrize("op", catalog.CATALOG, ids=lambda op: f"{op.key}:{op.module_name}")
def test_hyper_parameters_are_constructor_arguments(op):
    """Every hyper-parameter is a constructor argument of the module, or of `call_module` only
    (`Arg.call_only`), which takes `call_extra` too (the module alone `ctor_extra`) and shares
    the module's defaults."""
    accepted = inspect.signature(_resolve(op.module).__init__).parameters
    called = inspect.signature(_resolve(op.module_for(True)[0]).__init__).parameters
    for arg in op.args:
        if arg.role is catalog.Role.HYPER:
            assert arg.ctor_name in (called if arg.call_only else accepted), arg.ctor_name
            assert arg.ctor_name in called, (op.call_module, arg.ctor_name)
        if arg.call_only:
            assert op.call_module and arg.at_call and arg.role is catalog.Role.HYPER
    for name, _ in op.ctor_extra:
        assert name in accepted
    for name, _ in op.module_defaults:
        assert name in accepted and name in called
    for name, value in op.call_extra:
        assert called[name].default is inspect.Parameter.empty, (op.call_module, name)
    for name, default in op.module_defaults:
        assert accepted[name].default == called[name].default == default, name


def test_stateless_modules_hold_no_state():
    for qualname in catalog.STATELESS_TORCH_MODULES:
        cls = _resolve(qualname)
        required = [
            p
            for p in list(inspect.signature(cls.__init__).parameters.values())[1:]
            if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD
        ]
        args = {"Threshold": (0.1, 0.0), "Unflatten": (1, (2, 2)), "Fold": ((4, 4), 2)}.get(
            cls.__name__, tuple(2 for _ in required)
        )
        if cls.__name__.startswith("FractionalMaxPool"):
            args = (2,)
            module = cls(*args, output_ratio=0.5)
        else:
            module = cls(*args)
        assert not list(module.state_dict()), qualname


def test_no_created_module_is_an_instance_of_an_other_module_class():
    """A walk of a model's submodules that acts only on these classes never meets a module
    `fix` creates (migrator/rewrite/submodule_walks.py)."""
    created = set(catalog.replacing_modules()) | catalog.STATELESS_TORCH_MODULES
    assert all(catalog.is_catalog_module(m) for m in created)
    assert not catalog.is_catalog_module("torch.nn.Conv2d")
    for made in created:
        for other in catalog.OTHER_MODULES:
            assert not issubclass(_resolve(made), _resolve(other)), (made, other)


def test_catalog_classes_derive_from_one_another_as_listed():
    """`CATALOG_SUBCLASSES` and `RESETTABLE` are what torch says (a walk filtered by
    `isinstance(m, nn.LayerNorm)` or `hasattr(m, "reset_parameters")` meets no new `Add`)."""
    created = set(catalog.replacing_modules()) | catalog.STATELESS_TORCH_MODULES
    derived = {
        base: {
            made for made in created if made != base and issubclass(_resolve(made), _resolve(base))
        }
        for base in created
    }
    assert {b: frozenset(d) for b, d in derived.items() if d} == catalog.CATALOG_SUBCLASSES
    resettable = {m for m in created if hasattr(_resolve(m), "reset_parameters")}
    assert resettable == catalog.RESETTABLE


def _set_attributes(cls: type) -> set[str]:
    """The attributes of `cls` and those its classes' code sets on `self` (`self.p = p`,
    `self.register_buffer("weight", ...)`), below nn.Module."""
    found = set(dir(cls))
    for each in cls.__mro__[: cls.__mro__.index(torch.nn.Module)]:
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(each)))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                found.add(node.attr)  # any store of an attribute: of `self` and more
            elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                assert name != "setattr" or isinstance(node.args[1], ast.Constant), each
                if name.startswith("register_") or name in ("add_module", "setattr"):
                    given = node.args[1 if name == "setattr" else 0] if node.args else None
                    assert isinstance(given, ast.Constant), (each, name)
                    found.add(given.value)
    return found


def test_catalog_attributes_cover_the_created_classes():
    """`has_attribute` finds every public attribute a created class, or the nn.ModuleList of its
    copies, may have (a walk acting on modules with a `local_init`, timm's convit, meets no new
    `Add`)."""
    created = set(catalog.replacing_modules()) | catalog.STATELESS_TORCH_MODULES
    for made in created:
        public = {a for a in _set_attributes(_resolve(made)) if not a.startswith("_")}
        assert all(catalog.has_attribute(made, a) for a in public), (made, public)
    listed = {a for a in dir(torch.nn.ModuleList([torch.nn.ReLU()])) if not a.startswith("_")}
    assert all(catalog.has_attribute("torch.nn.ModuleList", a) for a in listed)
    assert not catalog.has_attribute("migrator.nn.Add", "local_init")


def test_kept_settings_are_plain_attributes_the_forward_keeps():
    built = {"LayerNorm": (4,), "GroupNorm": (2, 4), "Linear": (8, 8)}
    built |= {f"{kind}{n}d": (4, 4, 3) for kind in ("Conv", "ConvTranspose") for n in (1, 2, 3)}
    shapes = {"1d": (2, 4, 8), "2d": (2, 4, 8, 8), "3d": (2, 4, 4, 4, 4), "LayerNorm": (2, 8, 4)}
    for qualname, settings in catalog.KEPT_SETTINGS.items():
        cls = _resolve(qualname)
        module = cls(*built.get(cls.__name__, (2,) if "Pool" in cls.__name__ else ()))
        before = {s: module.__dict__[s] for s in settings}  # plain: not a tensor nor a module
        assert not any(isinstance(v, (torch.Tensor, torch.nn.Module)) for v in before.values())
        shape = next((v for k, v in shapes.items() if cls.__name__.endswith(k)), (2, 4, 8, 8))
        for training in (True, False):
            module.train(training)(torch.randn(*shape))
        assert {s: module.__dict__[s] for s in settings} == before, qualname


def test_module_attributes_cover_nn_module():
    public = {n for n in dir(torch.nn.Module) if not n.startswith("_")} | {"training"}
    assert public <= catalog.MODULE_ATTRIBUTES


def test_catalog_import_does_not_import_torch():
    code = "import sys, migrator.catalog; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_inplace_position_is_the_constructor_parameter():
    """The static checker reads `inplace` from a positional constructor argument there."""
    for qualname in catalog.replacing_modules():
        position = catalog.inplace_position(qualname)
        parameters = list(inspect.signature(_resolve(qualname).__init__).parameters)[1:]
        assert position == (parameters.index("inplace") if "inplace" in parameters else None), (
            qualname
        )


def _shares_storage(output, tensor) -> bool:
    return output.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.nn.Flatten(),
        lambda: torch.nn.Unflatten(1, (2, 2)),
        lambda: torch.nn.Dropout().eval(),
        lambda: torch.nn.AlphaDropout().eval(),
        lambda: torch.nn.ReLU(inplace=True),
        lambda: torch.nn.Hardtanh(-1.0, 1.0, True),
    ],
)
def test_modules_returning_their_input_are_not_fresh(make):
    module = make()
    x = torch.randn(2, 4, 3, 3)
    assert _shares_storage(module(x), x)
    name = next(n for n in catalog.output_known_modules() if _resolve(n) is type(module))
    assert not catalog.fresh_output(name, bool(getattr(module, "inplace", False)))


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.nn.ReLU(),
        lambda: torch.nn.Upsample(scale_factor=1),
        lambda: torch.nn.MaxPool2d(1),
        lambda: torch.nn.AdaptiveAvgPool2d(3),
        lambda: torch.nn.PixelShuffle(1),
        lambda: torch.nn.Conv2d(4, 4, 1),
    ],
)
def test_fresh_modules_return_a_new_tensor_even_when_it_could_be_the_input(make):
    module = make()
    x = torch.randn(2, 4, 3, 3)
    with torch.no_grad():
        assert not _shares_storage(module(x), x)
    name = next(n for n in catalog.output_known_modules() if _resolve(n) is type(module))
    assert catalog.fresh_output(name, False)


def test_operator_table_matches_ast_and_operator():
    import ast
    import operator

    for op in catalog.OPERATORS:
        assert isinstance(ast.parse(f"a {op.symbol} b", mode="eval").body.op, op.node)
        assert isinstance(ast.parse(f"a {op.inplace_symbol} b").body[0].op, op.node)
        a, b = torch.tensor([[6.0]]), torch.tensor([[4.0]])
        expected = eval(f"a {op.symbol} b")
        assert torch.equal(op.function(a, b), expected)
        assert torch.equal(op.inplace_function(a.clone(), b), expected)
        assert op.inplace_function.__name__ == "i" + op.function.__name__
        assert catalog.operator_of(op.node) is op
    listed = {s for o in catalog.CATALOG for s in o.operators}
    assert listed <= {o.symbol for o in catalog.OPERATORS}
    assert {s for o in catalog.CATALOG for s in o.inplace_operators} <= {
        o.inplace_symbol for o in catalog.OPERATORS
    }


AIMET_FUNCTIONALS = """
relu relu6 hardtanh hardswish elu selu celu leaky_relu prelu rrelu glu gelu logsigmoid hardshrink
tanhshrink softsign softplus softmin softmax softshrink log_softmax tanh sigmoid hardsigmoid silu
add subtract mul div matmul
""".split()
"""The 30 functional and elementwise op names AIMET's run-time `prepare_model` turns into
modules (its `functional_to_module_map`), matched there by name in fx call targets."""


@pytest.mark.parametrize("name", AIMET_FUNCTIONALS)
def test_catalog_covers_what_aimet_prepares(name):
    """Every spelling of the name the catalog could meet is covered: `F.<name>`, `torch.<name>`
    and the tensor method, wherever torch has one."""
    spellings = [q for q in (f"torch.nn.functional.{name}", f"torch.{name}") if _exists(q)]
    assert spellings, name
    assert [q for q in spellings if catalog.by_function(q) is None] == []
    if hasattr(torch.Tensor, name):
        assert catalog.by_method(name) is not None, f".{name}()"


def _exists(qualname: str) -> bool:
    try:
        return callable(_resolve(qualname))
    except (ImportError, AttributeError):
        return False


@pytest.mark.parametrize(
    "op",
    [op for op in catalog.CATALOG if any(a.role is catalog.Role.AFFINE for a in op.args)],
    ids=lambda op: op.key,
)
def test_affine_tensors_are_forward_keywords(op):
    """A norm's weight and bias (`Role.AFFINE`) go to the module a call passing them becomes, as
    forward keywords of their own names, and the observer finds them where the ATen op takes
    them (`FLOAT_ARGUMENTS`: the ATen op's positions)."""
    forward = inspect.signature(_resolve(op.module_for(True)[0]).forward).parameters
    affine = [i for i, a in enumerate(op.args) if a.role is catalog.Role.AFFINE]
    assert all(op.args[i].name in forward for i in affine)
    assert len(catalog.FLOAT_ARGUMENTS[op.key]) == len(affine)
    if op.key != "batch_norm":  # aten.batch_norm takes them before the statistics
        assert catalog.FLOAT_ARGUMENTS[op.key] == tuple(affine)


def test_a_weight_not_owned_goes_to_a_call_module():
    """A `Role.WEIGHT` no module of the op's class owns goes at call time to `call_module`,
    whose forward takes it under the argument's name, and is kept in float there."""
    for op in catalog.CATALOG:
        weights = [a for a in op.args if a.role is catalog.Role.WEIGHT]
        if weights:
            forward = inspect.signature(_resolve(op.module_for(True)[0]).forward).parameters
            assert op.call_module and all(a.name in forward for a in weights), op.key
            assert op.key in catalog.FLOAT_ARGUMENTS
