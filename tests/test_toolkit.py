"""`fix --for aimet` (`toolkit = "aimet"`): the rewrite uses AIMET's own op-module classes where
one takes the call, leaves the other ops with a finding (MIG120), and is idempotent. The slow
tests install aimet-torch (pure Python, `--no-deps`) and hand the migrated code to AIMET."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_cases import TOOLKIT_CASES, after_of, expected_findings
from migrator.cli import main
from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project

ROOT = Path(__file__).resolve().parent.parent
CASES = [c for c in TOOLKIT_CASES if c.parent.name == "aimet"]
IDS = [c.name.removesuffix(".before.py") for c in CASES]


def _fix(text: str, path: Path) -> tuple[str, list[str]]:
    new, findings, _ = fix_text(text, str(path), Project(), toolkit="aimet")
    return new, [f"{f.line}:{f.col + 1}: {f.code} {f.message}" for f in findings]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rewrite_for_aimet_matches_after(case):
    new, findings = _fix(case.read_text(encoding="utf-8"), case)
    assert new == after_of(case).read_text(encoding="utf-8")
    assert findings == expected_findings(case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_second_run_for_aimet_changes_nothing(case):
    after = after_of(case).read_text(encoding="utf-8")
    new, findings = _fix(after, case)
    assert new == after
    assert [f for f in findings if " MIG0" in f] == []


def test_for_flag_and_toolkit_setting_agree(tmp_path, capsys):
    case = CASES[0]
    flagged = tmp_path / "flag" / "model.py"
    configured = tmp_path / "config" / "model.py"
    for path in (flagged, configured):
        path.parent.mkdir()
        path.write_text(case.read_text(encoding="utf-8"), encoding="utf-8")
    (configured.parent / "pyproject.toml").write_text('[tool.migrator]\ntoolkit = "aimet"\n')
    main(["fix", "--for", "aimet", str(flagged)])
    main(["fix", str(configured)])
    expected = after_of(case).read_text(encoding="utf-8")
    assert flagged.read_text(encoding="utf-8") == expected
    assert configured.read_text(encoding="utf-8") == expected


def test_unknown_toolkit_is_an_error(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.migrator]\ntoolkit = "qnn"\n')
    (tmp_path / "model.py").write_text("x = 1\n")
    assert main(["check", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert "`toolkit` must be one of: aimet (got `qnn`)" in err
    assert len(err.strip().splitlines()) == 1


# -- with AIMET installed ------------------------------------------------------------------


@pytest.fixture(scope="session")
def aimet(tmp_path_factory):
    sys.path.insert(0, str(ROOT / "tests"))
    import zoo

    return zoo.install_aimet(tmp_path_factory.mktemp("aimet"))


_HANDOVER = r"""
import json, logging, sys, warnings
sys.path.insert(0, sys.argv[1])
import zoo  # tests/zoo.py: torchvision (which AIMET imports) through its CPU shim
zoo._import_zoo("torchvision")
import torch
from fixture_cases import import_path
from aimet_torch.model_preparer import prepare_model
from aimet_torch.model_validator.model_validator import ModelValidator
from aimet_torch.quantsim import QuantizationSimModel
logging.disable(logging.ERROR)
warnings.simplefilter("ignore")
before, after = import_path(sys.argv[2], "before"), import_path(sys.argv[3], "after")
result = {"equal": []}
for train in (False, True):
    torch.manual_seed(0)
    original, migrated = before.Model(), after.Model()
    migrated.load_state_dict(original.state_dict(), strict=True)
    original.train(train), migrated.train(train)
    inputs = before.example_inputs()
    torch.manual_seed(3)
    expected = original(*inputs)
    torch.manual_seed(3)
    actual = migrated(*inputs)
    result["equal"].append(all(torch.equal(e, a) for e, a in zip(expected, actual)))
original.eval(), migrated.eval()
result["valid"] = [ModelValidator.validate_model(m, model_input=inputs) for m in (original, migrated)]
ops = list({type(m) for m in migrated.modules() if type(m).__module__.startswith("aimet_torch")})
names = {n for n, _ in migrated.named_modules()}
prepared = prepare_model(migrated, module_classes_to_exclude=ops)
result["added"] = sorted(n for n, _ in prepared.named_modules() if n not in names)
sim = QuantizationSimModel(migrated, dummy_input=inputs)
sim.compute_encodings(lambda model: model(*inputs))
quantized = {type(m).__name__.removeprefix("Quantized") for m in sim.model.modules()}
result["quantized"] = sorted(quantized & {"Add", "Concat", "Mean"})
print(json.dumps(result))
"""


EXPECTED = {
    "block": {"valid": [False, True], "added": [], "quantized": ["Add", "Concat", "Mean"]},
    # what stays for AIMET: the MIG120 ops, and `x.shape[-1] // 2` (shape arithmetic)
    "refused": {
        "valid": [False, False],
        "added": [
            "module_add",
            "module_add_1",
            "module_floordiv",
            "module_scaled_dot_product_attention",
            "module_sub",
            "module_where",
        ],
        "quantized": ["Add"],
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_aimet_takes_the_migrated_model(case, aimet):
    """Bit-exact in train and eval; AIMET's validator passes after migration when every op
    became a module; `prepare_model`, told that AIMET's op modules are leaves, adds only what
    was left (MIG120, shape arithmetic); QuantSim builds, calibrates and quantizes the AIMET
    modules the rewrite created."""
    out = subprocess.run(
        [sys.executable, "-c", _HANDOVER, str(ROOT / "tests"), str(case), str(after_of(case))],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(aimet)},
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result.pop("equal") == [True, True]
    assert result == EXPECTED[case.name.removesuffix(".before.py")]


ZOO_SAMPLE = {
    "timm": ("aimet", ["resnet18", "convnext_atto", "efficientnet_b0", "dla34"]),
    # aimet-torch imports torchvision: torchvision's own sources cannot import AIMET's classes
    # (a circular import), so they are migrated with migrator's (and QuantSim is not asked)
    "torchvision": ("", ["resnet18", "mobilenet_v3_small", "shufflenet_v2_x0_5"]),
}
"""Models of each zoo handed to AIMET before and after `fix` (with the toolkit named), small
and CPU-quick."""


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ZOO_SAMPLE))
def test_aimet_on_real_zoo_models(name, aimet, tmp_path):
    """On real migrated models: bit-exact, and AIMET never sees a model get worse — its
    validator passes wherever it passed before and finds fewer ops with no module (never more
    of a kind), no leaf module is newly reused, QuantSim (with `--for aimet`) builds wherever it
    built before, and `prepare_model` (told that the op modules are leaves) adds no more
    modules of any kind than before, fewer in all."""
    import zoo  # tests/zoo.py, on the path since the `aimet` fixture

    toolkit, names = ZOO_SAMPLE[name]
    specs = [s for s in zoo.SAMPLES[name] if s.name in names]
    assert len(specs) == len(names)
    run = zoo.run_zoo(name, specs, tmp_path, aimet=aimet, toolkit=toolkit)
    assert run.problems() == {}
    before = {m.name: m.original["aimet"] for m in run.models}
    after = {m.name: m.migrated["aimet"] for m in run.models}
    assert [n for n in after if before[n]["valid"] and not after[n]["valid"]] == []
    for model in after:
        assert ("validator error" in after[model]) <= ("validator error" in before[model]), model
        assert set(after[model].get("reused", [])) <= set(before[model].get("reused", [])), model
        if toolkit:
            assert before[model]["quantsim"] != "ok" or after[model]["quantsim"] == "ok", model
    for key in ("missing", "added excluding op modules"):
        total = {side: 0 for side in ("before", "after")}
        for model in after:
            found_before, found_after = before[model].get(key, {}), after[model].get(key, {})
            for kind, count in found_after.items():
                assert count <= found_before.get(kind, 0), (key, model, kind)
            total["before"] += sum(found_before.values())
            total["after"] += sum(found_after.values())
        assert total["after"] < total["before"], key
