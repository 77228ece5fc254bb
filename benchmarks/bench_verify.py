"""Time each check of `migrator verify` against the bare torch call it wraps.

    python benchmarks/bench_verify.py [--repeats 3] [--threads 1] [--no-resnet18]

Models: the shipped examples (`examples/models`: resnet_tiny, mobilenet_tiny, vit_tiny), the
original as on disk and the migrated side rewritten in memory by `fix`, both built as verify
builds them; and a ResNet-18-sized `ResNetish` of `tests/quant_models.py` (widths 64..512, 7x7
stem, input 2x3x224x224; already in migrated form: two instances of different seeds). Each
check compares two models, so its bare baseline runs the same call on both:

| check | bare call (on the original and the migrated model) |
|---|---|
| state_dict | `migrated.load_state_dict(original.state_dict())`, `migrated.state_dict()` |
| fx graph | `torch.fx.symbolic_trace` |
| export | `torch.export.export` |
| outputs | the forward, in eval and in train mode, and in eval under bf16 autocast |

Figures are CPU seconds per call of this process with torch on one thread, the lowest of
`--repeats` rounds after one untimed warm-up, bare and check alternating which goes first; a
round repeats a call that takes less than about 50 ms. The ratio is check / bare (the target is
at most 1.2). The state_dict check reads the migrated keys again, in their order, after the
load, so its bare calls do too; a row `state_dict, to the load alone` shows it beside the load
alone, for information.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

from migrator.prove import compare
from migrator.prove.build import MIGRATED_SEED, ORIGINAL_SEED, build
from migrator.prove.load import Side
from migrator.prove.targets import Target
from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "models"
TARGETS = (("resnet.py", "resnet_tiny"), ("mobilenet.py", "mobilenet_tiny"), ("vit.py", "vit_tiny"))
LOAD_ALONE = "state_dict, to the load alone"
"""A row for information, not held to the target: the check reads the keys again, as it must."""


def _sides() -> tuple[Side, Side]:
    """The examples as they are (original) and as `fix` rewrites them (migrated)."""
    rewritten = {}
    for path in EXAMPLES.glob("*.py"):
        old = path.read_text(encoding="utf-8")
        new = fix_text(old, str(path), Project()).text
        if new != old:
            rewritten[path] = new
    return Side("original"), Side("migrated", rewritten)


def _resnet18() -> tuple[torch.nn.Module, torch.nn.Module, tuple]:
    """Two ResNet-18-sized models of different seeds (original, migrated) and an input."""
    sys.path.insert(0, str(ROOT / "tests"))
    from quant_models import ResNetish

    models = []
    for seed in (ORIGINAL_SEED, MIGRATED_SEED):
        torch.manual_seed(seed)
        models.append(
            ResNetish(widths=(64, 128, 256, 512), blocks=2, num_classes=1000, stem_kernel=7).eval()
        )
    return models[0], models[1], (torch.randn(2, 3, 224, 224),)


def _models(resnet18: bool):
    """(name, original, migrated, inputs) of each benchmarked model."""
    original_side, migrated_side = _sides()
    for file, name in TARGETS:
        target = Target(EXAMPLES / file, name)
        original = build(target, original_side, ORIGINAL_SEED)
        assert original.inputs is not None
        migrated = build(target, migrated_side, MIGRATED_SEED).model
        yield name, original.model.eval(), migrated.eval(), original.inputs
    if resnet18:
        yield ("ResNet-18-sized", *_resnet18())


def _forwards(original: torch.nn.Module, migrated: torch.nn.Module, inputs: tuple) -> None:
    for mode, autocast in ((False, False), (True, False), (False, True)):
        for model in (original, migrated):
            model.train(mode)
            with torch.no_grad(), torch.autocast("cpu", torch.bfloat16, enabled=autocast):
                model(*inputs)
    original.eval()
    migrated.eval()


def _pairs(original, migrated, inputs) -> dict[str, tuple[Callable[[], object], ...]]:
    """check -> (bare call on both models, the check)."""

    def both(call: Callable[[torch.nn.Module], object]) -> Callable[[], object]:
        return lambda: (call(original), call(migrated))

    return {
        "state_dict": (
            lambda: (migrated.load_state_dict(original.state_dict()), migrated.state_dict()),
            lambda: compare.check_state_dict(original, migrated),
        ),
        LOAD_ALONE: (
            lambda: migrated.load_state_dict(original.state_dict()),
            lambda: compare.check_state_dict(original, migrated),
        ),
        "fx graph": (
            both(torch.fx.symbolic_trace),
            lambda: compare.check_fx_graph(original, migrated),
        ),
        "export": (
            both(lambda model: torch.export.export(model, inputs)),
            lambda: compare.check_export(original, migrated, inputs),
        ),
        "outputs": (
            lambda: _forwards(original, migrated, inputs),
            lambda: compare.check_outputs(original, migrated, inputs),
        ),
    }


def _per_call(call: Callable[[], object], count: int) -> float:
    """CPU seconds per call, over `count` calls in a row after a garbage collection."""
    gc.collect()
    start = time.process_time()
    for _ in range(count):
        call()
    return (time.process_time() - start) / count


def _count(call: Callable[[], object]) -> int:
    """Calls in a row that take about 50 ms (at least one), so short checks time reliably."""
    return max(1, round(0.05 / max(_per_call(call, 1), 1e-6)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-resnet18", dest="resnet18", action="store_false")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    rows = [("model", "check", "bare s", "check s", "x bare")]
    worst = 0.0
    for name, model, migrated, inputs in _models(args.resnet18):
        for check, (bare, wrapped) in _pairs(model, migrated, inputs).items():
            bare(), wrapped()  # warm-up (and the checks must pass)
            result = wrapped()
            assert getattr(result, "status", "pass") == "pass", result
            count = _count(bare)
            timed = {"bare": 0.0, "check": 0.0}
            for round_ in range(args.repeats):
                order = [("bare", bare), ("check", wrapped)]
                for key, call in order if round_ % 2 == 0 else order[::-1]:
                    seconds = _per_call(call, count)
                    timed[key] = seconds if round_ == 0 else min(timed[key], seconds)
            ratio = timed["check"] / timed["bare"]
            worst = max(worst, ratio) if check != LOAD_ALONE else worst
            rows.append(
                (name, check, f"{timed['bare']:.4f}", f"{timed['check']:.4f}", f"{ratio:.2f}")
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)))
    print(f"worst ratio: {worst:.2f} (target <= 1.2)")
    return 0 if worst <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
