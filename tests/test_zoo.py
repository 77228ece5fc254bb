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
