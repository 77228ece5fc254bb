"""Time `migrator.chain.run_chain` step by step against the bare calls it wraps.

    python benchmarks/bench_quant.py [--repeats 3] [--image-size 224] [--calibration-batches 4]
                                     [--clock cpu|wall] [--threads 1]

Models: a ResNet-18-sized `ResNetish` (widths 64..512, two basic blocks per stage, 7x7 stem)
and a ViT-Tiny-sized `ViTish` (dim 192, depth 12, 3 heads, 16x16 patches), both from
`tests/quant_models.py`. The bare pipeline makes the same torch / torchao / onnxruntime calls
by hand: torch.export, prepare_pt2e with the same annotations (without migrator's sharing-group
bookkeeping), the calibration loop, convert_pt2e, torch.onnx.export + save, and onnxruntime
session + run next to the torch reference run it is compared with.

Figures are CPU seconds of this process (all its threads), so that other work on a shared
machine counts less, with torch on one thread: on a busy machine, idle torch worker threads
spin waiting for each other and that spinning would count as CPU time (`--threads` changes
it). `--clock wall` measures elapsed time instead. Each is the lowest of
`--repeats` runs after one untimed warm-up round, bare and migrator alternating which goes
first, each after a garbage collection. The overhead column is what migrator adds. Under the
timings: the chain's own result per model.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from quant_models import ResNetish, ViTish, randomize_batchnorm  # noqa: E402

import migrator.chain  # noqa: E402
from migrator.chain import STEPS, ChainReport, run_chain, summary_table  # noqa: E402
from migrator.confirm.onnx_export import OPSET  # noqa: E402
from migrator.observe.calibrate import calibration_batches  # noqa: E402
from migrator.observe.capture import batch_dynamic_shapes  # noqa: E402
from migrator.observe.pt2e import convert_pt2e, prepare_pt2e  # noqa: E402
from migrator.observe.quantizer import ModuleQuantizer  # noqa: E402
from migrator.observe.report import render_table  # noqa: E402


class AnnotateOnlyQuantizer(ModuleQuantizer):
    """The same annotations, without the sharing groups migrator records during prepare."""

    def prepare_obs_or_fq_callback(self, model, edge_or_node_to_obs_or_fq) -> None:
        return None


def _ort_run(path: Path, inputs: tuple[torch.Tensor, ...]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs)})


def _onnx_save(program: torch.export.ExportedProgram, inputs: tuple, path: Path) -> None:
    torch.onnx.export(
        program, inputs, dynamo=True, opset_version=OPSET, optimize=False, verbose=False
    ).save(path)


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
RESULT_COLUMNS = ("observers", "float ONNX err", "QDQ ONNX err", "status")


def bare_chain(
    model: torch.nn.Module, inputs: tuple, batches: int, out: Path, clock: Callable[[], float]
) -> dict[str, float]:
    """The chain's steps as plain torch / torchao / onnxruntime calls; seconds per step."""
    timings: dict[str, float] = {}

    def timed(step: str, function: Callable, *args):
        start = clock()
        result = function(*args)
        timings[step] = clock() - start
        return result

    shapes = batch_dynamic_shapes(inputs)

    def capture():
        program = torch.export.export(model, inputs, dynamic_shapes=shapes)
        return program, program.module()

    program, graph_module = timed("capture", capture)
    prepared = timed("prepare", prepare_pt2e, graph_module, AnnotateOnlyQuantizer())

    def calibrate():
        with torch.no_grad():
            for batch in calibration_batches(inputs, batches):
                prepared(*batch)

    timed("calibrate", calibrate)
    converted = timed("convert", convert_pt2e, prepared)
    timed("onnx_float", _onnx_save, program, inputs, out / "float.onnx")

    def export_qdq():
        qdq_program = torch.export.export(converted, inputs, dynamic_shapes=shapes)
        _onnx_save(qdq_program, inputs, out / "qdq.onnx")

    timed("onnx_qdq", export_qdq)
    for step, reference, path in (
        ("ort_float", model, "float.onnx"),
        ("ort_qdq", converted, "qdq.onnx"),
    ):

        def run_and_compare(reference=reference, path=path):
            with torch.no_grad():
                expected = reference(*inputs).numpy()
            np.abs(_ort_run(out / path, inputs)[0] - expected).max()

        timed(step, run_and_compare)
    return timings


def migrator_chain(model: torch.nn.Module, inputs: tuple, batches: int, out: Path) -> ChainReport:
    report = run_chain(model, inputs, out_dir=out, calibration=batches)
    if report.failures:
        raise SystemExit(f"the chain failed:\n{report.to_table()}")
    return report


def measure(
    model: torch.nn.Module, inputs: tuple, batches: int, repeats: int, clock: Callable[[], float]
):
    """Lowest seconds per step, bare and migrator, and the last migrator report.

    A first, untimed round warms caches (kernels for these shapes, lazy imports); then the
    order of bare and migrator alternates from round to round.
    """
    runs: dict[str, list[dict[str, float]]] = {"bare": [], "migrator": []}
    for round_ in range(repeats + 1):
        for kind in ("bare", "migrator") if round_ % 2 else ("migrator", "bare"):
            gc.collect()
            with tempfile.TemporaryDirectory() as out:
                start = clock()
                if kind == "bare":
                    timings = bare_chain(model, inputs, batches, Path(out), clock)
                else:
                    report = migrator_chain(model, inputs, batches, Path(out))
                    timings = dict(report.timings)
                timings["total"] = clock() - start
            if round_:
                runs[kind].append(timings)
    fastest = {
        kind: {step: min(run.get(step, 0.0) for run in kind_runs) for step in (*STEPS, "total")}
        for kind, kind_runs in runs.items()
    }
    return fastest["bare"], fastest["migrator"], report


def _overhead(bare: float, ours: float) -> str:
    return f"{100 * (ours - bare) / bare:+.1f}%" if bare else "(migrator only)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--calibration-batches", type=int, default=4)
    parser.add_argument("--clock", choices=CLOCKS, default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    clock = CLOCKS[args.clock]
    migrator.chain.perf_counter = clock  # the chain times its steps with the same clock
    logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=FutureWarning)
    torch.manual_seed(0)
    size = args.image_size
    models = {
        "ResNet-18-sized": randomize_batchnorm(
            ResNetish(widths=(64, 128, 256, 512), blocks=2, num_classes=1000, stem_kernel=7)
        ).eval(),
        "ViT-Tiny-sized": ViTish(
            image=size, patch=16, dim=192, depth=12, heads=3, num_classes=1000
        ).eval(),
    }
    print(
        f"clock: {args.clock}, torch threads: {args.threads}, "
        f"load average before measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    timing_rows, result_rows = [], []
    for name, model in models.items():
        params = sum(p.numel() for p in model.parameters()) / 1e6
        print(
            f"measuring {name} ({params:.1f} M parameters, input 2x3x{size}x{size}) ...", flush=True
        )
        inputs = (torch.randn(2, 3, size, size),)
        bare, ours, report = measure(model, inputs, args.calibration_batches, args.repeats, clock)
        for step in (*STEPS, "total"):
            figures = [f"{bare[step]:.3f}", f"{ours[step]:.3f}", _overhead(bare[step], ours[step])]
            timing_rows.append([name, step, *figures])
        summary = report.summary_row()
        result_rows.append(
            {"model": name, **{column: summary[column] for column in RESULT_COLUMNS}}
        )
    print(render_table(["model", "step", "bare s", "migrator s", "overhead"], timing_rows))
    print()
    print(summary_table(result_rows))


if __name__ == "__main__":
    main()
