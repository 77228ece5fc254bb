"""Real zoos: `migrator fix` on copies of the installed torchvision and timm model code, then a
fixed sample of their models built from both and compared bit for bit, and what
`prepare_model` still does on the migrated models checked against the findings: nothing is
skipped in silence (see tests/zoo.py)."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

from zoo import SAMPLES, ZOOS, run_zoo


@pytest.mark.slow
@pytest.mark.parametrize("zoo", list(ZOOS))
def test_migrated_zoo_is_bit_exact(zoo, tmp_path):
    if find_spec(zoo) is None:
        pytest.skip(f"{zoo} is not installed (pip install -e '.[dev]')")
    run = run_zoo(zoo, SAMPLES[zoo], tmp_path, jobs=2, prepare=True)
    assert len(run.first.changed) > 20 and len(run.first.fixed) > 100  # the fix did real work
    unusable = {m.name: m.original["error"] for m in run.models if not m.comparable}
    assert unusable == {}, "the original of these sampled models fails (fix the sample)"
    assert len(run.models) == len(SAMPLES[zoo])
    assert run.problems() == {}
    # every op prepare_model still converts, and every reuse it still splits, has a finding
    assert run.silent == []


@pytest.mark.slow
def test_evidence_splits_the_reused_modules_statics_cannot_type(tmp_path):
    """With the sampled models as run-time evidence (`fix --evidence`), timm's reused stateless
    modules built from constructor arguments (res2net's `act_layer(inplace=True)` called in and
    around its loop) are split too: the migrated models stay bit-exact, nothing is skipped in
    silence, and prepare_model splits at most a fifth of the reused calls it split before."""
    if find_spec("timm") is None:
        pytest.skip("timm is not installed (pip install -e '.[dev]')")
    run = run_zoo("timm", SAMPLES["timm"], tmp_path, jobs=2, prepare=True, evidence=True)
    assert run.problems() == {}  # also: a second fix with the same evidence changes nothing
    assert run.silent == []

    def copies(side: str) -> int:
        return sum(getattr(m, side).get("prepare", {}).get("copies", 0) for m in run.models)

    before, after = copies("original"), copies("migrated")
    assert before > 100 and after * 5 <= before, (before, after)


@pytest.mark.slow
def test_evidence_types_what_the_rcnn_predictors_return(tmp_path):
    """With the sampled Mask and Keypoint R-CNNs as evidence, the outputs of their predictors
    (modules given to the RoI heads' constructor) are proven tensors, so the loss and
    inference helpers they feed become modules: the models stay bit-exact (trained on masks
    and keypoints too), nothing is skipped in silence, and each such finding names the
    models that proved it."""
    if find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed (pip install -e '.[dev]')")
    specs = [s for s in SAMPLES["torchvision"] if s.name.endswith("rcnn_resnet50_fpn")]
    assert len(specs) == 2
    run = run_zoo("torchvision", specs, tmp_path, jobs=2, prepare=True, evidence=True)
    assert run.problems() == {} and run.silent == []
    typed = {f.op: f.message for f in run.first.fixed if f.code == "MIG004"}
    for helper in ("fastrcnn_loss", "maskrcnn_loss", "maskrcnn_inference", "keypointrcnn_loss"):
        assert "in every model built from `torchvision " in typed[helper], helper


def test_lines_run_records_only_the_package_lines_a_call_runs(tmp_path, monkeypatch):
    """The zoo benchmark's lens on what runs: the lines of the package's files executed inside
    the block (a branch not taken is absent), by path from the package's parent; other files'
    lines, and lines run after the block, are not recorded."""
    from zoo import _LinesRun

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text(
        "def f(x):\n    if x > 0:\n        return x + 1\n    return x - 1\n\n\ndef g(x):\n    return x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from pkg import ops

    ran = _LinesRun(package)
    with ran:
        ops.f(1)
    ops.g(1)
    assert ran.found() == {"pkg/ops.py": [2, 3]}


def test_within_keeps_the_first_models_under_the_parameter_limit():
    """The size filter of `benchmarks/zoo.py --max-params`: each model's parameters counted on
    the meta device (ViT-H/14's 632 million cost no memory), the first `count` within the limit
    kept in order, the rest not built."""
    if find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed (pip install -e '.[dev]')")
    from zoo import Spec, within

    names = ("vit_h_14", "resnet18", "resnet50", "mobilenet_v2", "alexnet")
    kept = within("torchvision", [Spec(name) for name in names], 20_000_000, 2)
    assert [spec.name for spec in kept] == ["resnet18", "mobilenet_v2"]
