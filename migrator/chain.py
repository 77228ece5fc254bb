"""The whole quantization chain on one model, timed step by step, as one report.

capture (torch.export, dynamic batch) -> prepare (per-module quantizer, observers) ->
calibrate -> convert (QDQ) -> ONNX export of the float and the QDQ model -> onnxruntime run
of both, compared with torch. `run_chain` returns a `ChainReport`; `write_export` also writes
the observer report next to the ONNX files. A failing step is recorded as one line naming
what failed; the steps that do not depend on it still run.
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any, Callable, Literal

import torch

from migrator.confirm.divergence import first_divergence
from migrator.confirm.failure import ConfirmFailure, first_line
from migrator.confirm.onnx_export import export_float, export_qdq
from migrator.confirm.roundtrip import RoundTrip, float_round_trip, qdq_round_trip
from migrator.observe.calibrate import Calibration, calibrate, calibration_batches
from migrator.observe.choices import Quantization
from migrator.observe.capture import Captured, capture
from migrator.observe.pt2e import convert_pt2e, prepare_pt2e
from migrator.observe.quantizer import ModuleQuantizer
from migrator.observe.report import ObserverReport, observer_report, render_table

STEPS = (
    "capture",
    "prepare",
    "calibrate",
    "report",
    "convert",
    "onnx_float",
    "onnx_qdq",
    "ort_float",
    "ort_qdq",
)
"""Timed steps, in table order. ort_* include the torch reference run, the onnxruntime
session and run, and the comparison."""


class _StepFailed(Exception):
    """Raised after a step's failure is recorded, to skip the steps that need its result."""


@dataclass
class ChainReport:
    """Timings, observers, ONNX files and onnxruntime errors of one model's chain."""

    name: str
    timings: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    calibration_batches: int = 0
    observers: ObserverReport | None = None
    float_onnx: RoundTrip | None = None
    qdq_onnx: RoundTrip | None = None
    qdq_node_count: int = 0
    onnx_files: dict[Literal["float", "qdq"], str] = field(default_factory=dict)
    """Written .onnx paths by model kind."""
    divergence: str = ""
    """When the QDQ model is not exact in onnxruntime: the op where it first diverges."""

    @property
    def ok(self) -> bool:
        parts = (self.observers, self.float_onnx, self.qdq_onnx)
        return not self.failures and all(part is not None and part.ok for part in parts)

    @property
    def observer_count(self) -> int | None:
        return self.observers.observer_count if self.observers else None

    @property
    def file_stem(self) -> str:
        """`name` made safe as a file name: what the written files start with."""
        return re.sub(r"[^\w.-]+", "_", self.name)

    @property
    def files(self) -> list[str]:
        return list(self.onnx_files.values())

    def _run(self, step: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        start = perf_counter()
        try:
            return function(*args, **kwargs)
        except ConfirmFailure as failure:
            self.failures.append(f"{step}: {failure}")
        except Exception as error:  # any tool error becomes one line in the report
            self.failures.append(f"{step}: {first_line(error)}")
        finally:
            self.timings[step] = perf_counter() - start
        raise _StepFailed(step)

    def summary_row(self) -> dict[str, str]:
        """One line for a table of many targets: observers, ONNX errors, total seconds."""
        observers = "-"
        if self.observers:
            observers = f"{self.observers.observer_count}/{self.observers.group_count} groups"
        row = {
            "target": self.name,
            "observers": observers,
            "float ONNX err": _error_cell(self.float_onnx),
            "QDQ ONNX err": _error_cell(self.qdq_onnx),
        }
        row["total s"] = _seconds(sum(self.timings.values()))
        row["status"] = "ok" if self.ok else "FAILED"
        return row

    def timing_row(self) -> dict[str, str]:
        """The seconds of each step, for a table of many targets (short step names)."""
        return {
            "target": self.name,
            **{
                step.replace("_float", "-f").replace("_qdq", "-q"): _seconds(self.timings.get(step))
                for step in STEPS
            },
        }

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "ok": self.ok,
            "failures": self.failures,
            "timings": self.timings,
            "calibration_batches": self.calibration_batches,
            "observer_count": self.observer_count,
            "qdq_node_count": self.qdq_node_count,
            "onnx_files": self.onnx_files,
            "float_onnx": self.float_onnx.to_dict() if self.float_onnx else None,
            "qdq_onnx": self.qdq_onnx.to_dict() if self.qdq_onnx else None,
            "observers": self.observers.to_dict() if self.observers else None,
            "divergence": self.divergence,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_table(self) -> str:
        parts = [f"{self.name}: {'OK' if self.ok else 'FAILED'}"]
        parts.append(
            render_table(["step", "seconds"], [[s, _seconds(self.timings.get(s))] for s in STEPS])
        )
        rows = [
            [
                model,
                o.name,
                f"{o.max_abs:.3g}",
                f"{o.max_rel:.3g}",
                o.tolerance,
                "ok" if o.ok else "FAILED",
            ]
            for model, trip in (("float", self.float_onnx), ("QDQ", self.qdq_onnx))
            if trip
            for o in trip.outputs
        ]
        if rows:
            parts.append(
                render_table(["onnx", "output", "max abs", "max rel", "tolerance", "result"], rows)
            )
        if self.divergence:
            parts.append(f"QDQ in onnxruntime {self.divergence}")
        if self.observers:
            parts.append(self.observers.to_table())
        parts += [f"file: {path}" for path in self.files]
        parts += [f"failure: {failure}" for failure in self.failures]
        return "\n\n".join(parts)


def summary_table(rows: Iterable[Mapping[str, str]]) -> str:
    """Render `summary_row()` dicts (extended with any extra columns) as one table."""
    rows = list(rows)
    headers = list(dict.fromkeys(key for row in rows for key in row))
    return render_table(headers, [[row.get(h, "") for h in headers] for row in rows])


def run_chain(
    model: torch.nn.Module,
    example_inputs: Any,
    *,
    name: str | None = None,
    out_dir: str | Path | None = None,
    exclude: Iterable[str] = (),
    module_dtypes: Mapping[str, str] | None = None,
    quantization: Quantization | None = None,
    calibration: Calibration = None,
    qdq_steps: float = 1.0,
) -> ChainReport:
    """Run the chain on `model`, writing the ONNX files to `out_dir`.

    Without `out_dir` the files go to a temporary folder removed on return, and
    `onnx_files` stays empty. `exclude` and `module_dtypes` address modules by name, and
    `quantization` chooses dtypes and schemes per module (see `ModuleQuantizer`);
    `calibration` is None (example inputs), a number of random batches, or a callable
    returning batches (see `migrator.observe.calibrate`). QDQ outputs pass within `qdq_steps`
    quantisation steps of onnxruntime (see `migrator.confirm.roundtrip`).
    """
    report = ChainReport(name or type(model).__name__)
    with contextlib.ExitStack() as stack:
        out = (
            Path(out_dir)
            if out_dir is not None
            else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        )
        with contextlib.suppress(_StepFailed):
            captured = report._run("capture", capture, model, example_inputs)
            options = {"exclude": exclude, "module_dtypes": module_dtypes}
            converted = _observe(
                report, captured, options | {"quantization": quantization}, calibration
            )
            _confirm_float(report, model, captured, out)
            if converted is not None:
                _confirm_qdq(report, converted, captured, out, qdq_steps)
    if out_dir is None:
        report.onnx_files.clear()
    return report


def _confirm_float(
    report: ChainReport, model: torch.nn.Module, captured: Captured, out: Path
) -> None:
    """Export the float model and compare it in onnxruntime with `model`."""
    with contextlib.suppress(_StepFailed):
        float_file = report._run(
            "onnx_float", export_float, captured, out / f"{report.file_stem}.float.onnx"
        )
        report.onnx_files["float"] = str(float_file.path)
        report.float_onnx = report._run(
            "ort_float", float_round_trip, model, captured.example_inputs, float_file.path
        )


def _confirm_qdq(
    report: ChainReport,
    converted: torch.fx.GraphModule,
    captured: Captured,
    out: Path,
    qdq_steps: float,
) -> None:
    """Export the converted model and compare it in onnxruntime with `converted`."""
    with contextlib.suppress(_StepFailed):
        qdq_file = report._run(
            "onnx_qdq", export_qdq, converted, captured, out / f"{report.file_stem}.qdq.onnx"
        )
        report.onnx_files["qdq"] = str(qdq_file.path)
        report.qdq_node_count = qdq_file.qdq_node_count
        if not report.qdq_node_count:
            report.failures.append(
                "onnx_qdq: the QDQ model has no QuantizeLinear/DequantizeLinear node"
            )
        report.qdq_onnx = report._run(
            "ort_qdq", qdq_round_trip, converted, captured.example_inputs, qdq_file.path, qdq_steps
        )
        if report.qdq_onnx.max_abs > 0:
            report.divergence = _divergence(converted, captured, qdq_file.path)


def _divergence(converted: torch.fx.GraphModule, captured: Captured, path: Path) -> str:
    """Where the QDQ model first diverges in onnxruntime, as one line."""
    try:
        found = first_divergence(converted, captured.example_inputs, path)
    except Exception as error:  # a diagnosis that cannot run says why, it fails nothing
        return f"cannot locate the first divergence: {first_line(error)}"
    return found.describe() if found else "every quantized tensor agrees; the float tail differs"


def _observe(
    report: ChainReport, captured: Captured, options: dict[str, Any], calibration: Calibration
) -> torch.fx.GraphModule | None:
    """Prepare with a quantizer made with `options`, calibrate, report the observers and
    convert; None if a step failed."""
    try:
        prepared, quantizer = report._run("prepare", _prepare, captured.graph_module, options)
        batches = calibration_batches(captured.example_inputs, calibration)
        report.calibration_batches = report._run("calibrate", calibrate, prepared, batches)
        report.observers = report._run("report", observer_report, prepared, quantizer)
        return report._run("convert", convert_pt2e, prepared)
    except _StepFailed:
        return None


def _prepare(
    graph_module: torch.fx.GraphModule, options: dict[str, Any]
) -> tuple[torch.fx.GraphModule, ModuleQuantizer]:
    quantizer = ModuleQuantizer(**options)
    return prepare_pt2e(graph_module, quantizer), quantizer


def write_export(
    model: torch.nn.Module, example_inputs: Any, out_dir: str | Path, **options: Any
) -> ChainReport:
    """`run_chain` into `out_dir`, then write `<stem>.observers.json|txt` and `<stem>.chain.json`.

    `options` are those of `run_chain`. Files are written even when a step failed, so the
    report says what went wrong.
    """
    out = Path(out_dir)
    report = run_chain(model, example_inputs, out_dir=out, **options)
    out.mkdir(parents=True, exist_ok=True)
    if report.observers:
        (out / f"{report.file_stem}.observers.json").write_text(report.observers.to_json() + "\n")
        (out / f"{report.file_stem}.observers.txt").write_text(report.observers.to_table() + "\n")
    (out / f"{report.file_stem}.chain.json").write_text(report.to_json() + "\n")
    return report


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _error_cell(trip: RoundTrip | None) -> str:
    if trip is None:
        return "-"
    steps = trip.max_steps
    text = f"{trip.max_abs:.2g}" + (f" ({steps:.2g} step)" if steps is not None else "")
    return text + ("" if trip.ok else " FAILED")
