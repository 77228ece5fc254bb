"""The quantization chain on real architectures after migration: a ResNet, a MobileNetV3, an
EfficientNet, a ConvNeXt, a ViT, a Swin and a segmentation model from the installed timm and
torchvision sources, migrated by `migrator fix` and built from the migrated copy (see
tests/zoo.py, `CHAIN_SAMPLES`). One test, so that xdist runs the chains once."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

from zoo import CHAIN_SAMPLES, ChainCase, run_chains


def problems(case: ChainCase, summary: dict) -> list[str]:
    """What is wrong with one model's chain (nothing: an empty list)."""
    if summary["error"] is not None:
        return [summary["error"]]
    found = [f"failure: {failure}" for failure in summary["failures"]]
    found += [f"multi-line failure: {f!r}" for f in summary["failures"] if "\n" in f]
    # every module has its observers: one per sharing group, none idle, every weighted
    # module that ran (conv, linear, ... also called as functionals) has its weight observed
    if not summary["observers"] or summary["observers"] != summary["groups"]:
        found.append(f"{summary['observers']} observers for {summary['groups']} groups")
    found += [f"observer problem: {problem}" for problem in summary["problems"]]
    found += [f"weight not observed: {name}" for name in summary["unobserved"]]
    # float ONNX within 1e-5 of the largest output; QDQ within the case's steps
    if not summary["float_ok"] or summary["float_rel"] > 1e-5:
        found.append(f"float ONNX error {summary['float_rel']:.3g}")
    steps = summary["qdq_steps"]  # None: the model's outputs are not quantized (float tail)
    too_far = steps is not None and steps > case.qdq_steps * (1 + 1e-5)
    if not summary["qdq_ok"] or too_far:
        found.append(f"QDQ ONNX {steps} steps: {summary['divergence']}")
    return found


@pytest.mark.slow
def test_migrated_models_go_through_the_chain(tmp_path):
    for zoo in {case.zoo for case in CHAIN_SAMPLES}:
        if find_spec(zoo) is None:
            pytest.skip(f"{zoo} is not installed (pip install -e '.[dev]')")
    summaries, _ = run_chains(CHAIN_SAMPLES, tmp_path)
    assert [s["name"] for s in summaries] == [case.spec.name for case in CHAIN_SAMPLES]
    found = {
        case.spec.name: wrong
        for case, summary in zip(CHAIN_SAMPLES, summaries)
        if (wrong := problems(case, summary))
    }
    assert found == {}
