"""The quantization chain on real architectures after migration: a ResNet, a MobileNetV3, an
EfficientNet, a ConvNeXt, a ViT, a Swin and a segmentation model from the installed timm and
torchvision sources, migrated by `migrator fix` and built from the migrated copy (see
tests/zoo.py, `CHAIN_SAMPLES`)."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

from zoo import CHAIN_SAMPLES, run_chains


@pytest.fixture(scope="module")
def summaries(tmp_path_factory):
    for zoo in {case.zoo for case in CHAIN_SAMPLES}:
        if find_spec(zoo) is None:
            pytest.skip(f"{zoo} is not installed (pip install -e '.[dev]')")
    found, _ = run_chains(CHAIN_SAMPLES, tmp_path_factory.mktemp("chains"))
    return {summary["name"]: summary for summary in found}


@pytest.mark.slow
@pytest.mark.parametrize("case", CHAIN_SAMPLES, ids=lambda case: case.spec.name)
def test_migrated_model_goes_through_the_chain(summaries, case):
    summary = summaries[case.spec.name]
    assert summary["error"] is None, summary["error"]
    # capture, prepare, calibrate, convert and both exports ran: any failure is one line
    assert summary["failures"] == [], summary["failures"]
    assert all("\n" not in failure for failure in summary["failures"])
    # every module has its observers: one per sharing group, none idle, every weighted
    # module that ran (conv, linear, ... also called as functionals) has its weight observed
    assert summary["observers"] == summary["groups"] > 0
    assert summary["problems"] == []
    assert summary["unobserved"] == []
    # float ONNX in onnxruntime within 1e-5 of the largest output; QDQ within its steps
    assert summary["float_rel"] <= 1e-5
    assert summary["float_ok"]
    steps = summary["qdq_steps"]  # None: the model's outputs are not quantized (float tail)
    assert summary["qdq_ok"], (steps, summary["divergence"])
    assert steps is None or steps <= case.qdq_steps * (1 + 1e-5), summary["divergence"]
