"""Time each check of `migrator verify` against the bare torch call it wraps.

    python benchmarks/bench_verify.py [--repeats 3] [--threads 1]

Models: the shipped examples (`examples/models`: resnet_tiny, mobilenet_tiny, vit_tiny), the
original as on disk and the migrated side rewritten in memory by `fix`, both built as verify
builds them. Each check compares two models, so its bare baseline runs the same call on both:

| check | bare call (on the original and the migrated model) |
|---|---|
| state_dict | `migrated.load_state_dict(original.state_dict())` |
| fx graph | `torch.fx.symbolic_trace` |
| export | `torch.export.export` |
| outputs | the forward, in eval and in train mode |

Figures are CPU seconds of this process with torch on one thread, the lowest of `--repeats`
runs after one untimed warm-up, bare and check alternating which goes first; the ratio is
check / bare (the target is at most 1.2).
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

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "models"
TARGETS = (("resnet.py", "resnet_tiny"), ("mobilenet.py", "mobilenet_tiny"), ("vit.py", "vit_tiny"))


def _sides() -> tuple[Side, Side]:
    """The examples as they are (original) and as `fix` rewrites them (migrated)."""
    rewritten = {}
    for path in EXAMPLES.glob("*.py"):
        old = path.read_text(encoding="utf-8")
        new, _ = fix_text(old, str(path), Project())
        if new != old:
            rewritten[path] = new
    return Side("original"), Side("migrated", rewritten)


def _forwards(original: torch.nn.Module, migrated: torch.nn.Module, inputs: tuple) -> None:
    for mode in (False, True):
        for model in (original, migrated):
            model.train(mode)
            with torch.no_grad():
                model(*inputs)
    original.eval()
    migrated.eval()


def _pairs(original, migrated, inputs) -> dict[str, tuple[Callable[[], object], ...]]:
    """check -> (bare call on both models, the check)."""

    def both(call: Callable[[torch.nn.Module], object]) -> Callable[[], object]:
        return lambda: (call(original), call(migrated))

    return {
        "state_dict": (
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


def _best(call: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    original_side, migrated_side = _sides()
    rows = [("model", "check", "bare s", "check s", "x bare")]
    worst = 0.0
    for file, name in TARGETS:
        target = Target(EXAMPLES / file, name)
        original = build(target, original_side, ORIGINAL_SEED)
        migrated = build(target, migrated_side, MIGRATED_SEED).model
        model, inputs = original.model.eval(), original.inputs
        assert inputs is not None
        migrated.eval()
        for check, (bare, wrapped) in _pairs(model, migrated, inputs).items():
            bare(), wrapped()  # warm-up (and the checks must pass)
            result = wrapped()
            assert getattr(result, "status", "pass") == "pass", result
            timed = {"bare": 0.0, "check": 0.0}
            for round_ in range(args.repeats):
                order = [("bare", bare), ("check", wrapped)]
                for key, call in order if round_ % 2 == 0 else order[::-1]:
                    seconds = _best(call, 1)
                    timed[key] = seconds if round_ == 0 else min(timed[key], seconds)
            ratio = timed["check"] / timed["bare"]
            worst = max(worst, ratio)
            rows.append(
                (name, check, f"{timed['bare']:.3f}", f"{timed['check']:.3f}", f"{ratio:.2f}")
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)))
    print(f"worst ratio: {worst:.2f} (target <= 1.2)")
    return 0 if worst <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
