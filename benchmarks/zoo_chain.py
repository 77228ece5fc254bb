"""The quantization chain on real architectures after migration, one row per model.

    python benchmarks/zoo_chain.py [--jobs 2]

Migrates copies of the installed timm and torchvision sources, builds the models of
`CHAIN_SAMPLES` (tests/zoo.py) from the migrated copies and runs `migrator.chain.run_chain` on
each (batch 2, 64x64 images, torch on one thread per worker). Prints the observers and sharing
groups, the float ONNX error relative to the largest output, the QDQ ONNX error in
quantisation steps (and where the QDQ model first diverges in onnxruntime), then the seconds
of each chain step: wall clock on a shared machine, so compare rows, not runs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from zoo import CHAIN_SAMPLES, run_chains  # noqa: E402

from migrator.chain import STEPS  # noqa: E402
from migrator.observe.report import render_table  # noqa: E402


def _steps(summary: dict) -> str:
    steps = summary["qdq_steps"]
    if steps is None:
        return "float out" if summary["qdq_ok"] else "FAILED"
    return f"{steps:.0f}" + ("" if summary["qdq_ok"] else " FAILED")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        summaries, seconds = run_chains(CHAIN_SAMPLES, Path(folder), jobs=args.jobs)
    print(f"migrating timm and torchvision: {seconds:.1f} s\n")
    rows, timings, diagnoses = [], [], []
    for summary in summaries:
        name = summary["name"]
        if summary["error"]:
            rows.append([name, "error: " + summary["error"]])
            continue
        rows.append(
            [
                name,
                f"{summary['parameters'] / 1e6:.1f} M",
                f"{summary['observers']} / {summary['groups']}",
                f"{summary['float_rel']:.1e}",
                _steps(summary),
                f"{sum(summary['timings'].values()):.1f}",
            ]
        )
        timings.append([name, *(f"{summary['timings'].get(step, 0):.1f}" for step in STEPS)])
        if summary["divergence"]:
            diagnoses.append(f"{name}: {summary['divergence']}")
    headers = ["model", "params", "observers / groups", "float err", "QDQ steps", "total s"]
    print(render_table(headers, rows))
    print()
    print(render_table(["model", *STEPS], timings))
    if diagnoses:
        print()
        print("\n".join(diagnoses))


if __name__ == "__main__":
    main()
