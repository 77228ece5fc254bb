"""The op catalog agrees with the torch it describes."""

from __future__ import annotations

import importlib
import inspect
import sys
import subprocess

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


@pytest.mark.parametrize("op", catalog.CATALOG, ids=lambda op: f"{op.key}:{op.module_name}")
def test_signatures_match_torch(op):
    """Where Python can see a function's signature, the catalog lists its parameters in order."""
    for qualname in op.functions:
        try:
            names = list(inspect.signature(_resolve(qualname)).parameters)
            if names == ["args", "kwargs"]:  # boolean_dispatch: its twin shows the signature
                names = list(inspect.signature(_resolve(qualname + "_with_indices")).parameters)
        except (TypeError, ValueError):
            continue  # a builtin without a visible signature
        assert names[:len(op.args)] == [a.name for a in op.args][:len(names)], qualname


@pytest.mark.parametrize("op", catalog.CATALOG, ids=lambda op: f"{op.key}:{op.module_name}")
def test_hyper_parameters_are_constructor_arguments(op):
    cls = _resolve(op.module)
    accepted = inspect.signature(cls.__init__).parameters
    for arg in op.args:
        if arg.role == catalog.HYPER:
            assert arg.ctor_name in accepted, (op.module, arg.ctor_name)
    for name, _ in op.ctor_extra + op.module_defaults:
        assert name in accepted


def test_stateless_modules_hold_no_state():
    for qualname in catalog.STATELESS_TORCH_MODULES:
        cls = _resolve(qualname)
        required = [p for p in list(inspect.signature(cls.__init__).parameters.values())[1:]
                    if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
        args = {"Threshold": (0.1, 0.0), "Unflatten": (1, (2, 2)), "Fold": ((4, 4), 2)}.get(
            cls.__name__, tuple(2 for _ in required))
        if cls.__name__.startswith("FractionalMaxPool"):
            args = (2,)
            module = cls(*args, output_ratio=0.5)
        else:
            module = cls(*args)
        assert not list(module.state_dict()), qualname


def test_module_attributes_cover_nn_module():
    public = {n for n in dir(torch.nn.Module) if not n.startswith("_")} | {"training"}
    assert public <= catalog.MODULE_ATTRIBUTES


def test_catalog_import_does_not_import_torch():
    code = "import sys, migrator.catalog; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
