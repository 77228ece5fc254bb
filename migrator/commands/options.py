"""What the runtime commands (`verify`, `export`, `fix --verify`) share: the options naming
the models to build and how to run the quantization chain on them, and the chain runner.
torch is imported only inside the functions that run models."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from migrator.observe.choices import ALLOWED, Quantization, parse_override_text
from migrator.prove.targets import Target, TargetError, parse_input, parse_kwargs, parse_target


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="SHAPE",
        help="example input shape such as 1x3x224x224, or 1x128:int64 with its "
        "own dtype; repeat for several inputs",
    )
    parser.add_argument(
        "--dtype", default="float32", help="dtype of the --input tensors (default: float32)"
    )
    parser.add_argument(
        "--kwargs",
        default="{}",
        metavar="JSON",
        help="keyword arguments for the class or callable, as a JSON object",
    )


def targets_from_args(args: argparse.Namespace, specs: list[str]) -> list[Target]:
    """`FILE.py:NAME` specs with the --input/--dtype/--kwargs options (raises TargetError)."""
    inputs = tuple(parse_input(text, args.dtype) for text in args.input)
    kwargs = parse_kwargs(args.kwargs)
    return [parse_target(spec, Path.cwd(), inputs, kwargs) for spec in specs]


def add_chain_arguments(parser: argparse.ArgumentParser, exclude_flag: str = "--exclude") -> None:
    parser.add_argument(
        exclude_flag,
        dest="exclude_modules",
        action="append",
        default=[],
        metavar="MODULE",
        help="leave this module (and the modules under it) in float, e.g. "
        "layer1.0.relu_1; repeatable",
    )
    parser.add_argument(
        "--module-dtype",
        action="append",
        default=[],
        metavar="MODULE=DTYPE",
        help="activation dtype for one module: int8 (default), uint8 or int16",
    )
    for name, values in ALLOWED.items():
        parser.add_argument(
            "--" + name.replace("_", "-"),
            choices=values,
            default=None,
            help=f"for every module (default: [tool.migrator.quantization], else {values[0]})",
        )
    parser.add_argument(
        "--quantize",
        action="append",
        default=[],
        metavar="SELECTOR,KEY=VALUE",
        help="choices for some modules, as an override of [tool.migrator.quantization]: "
        "'module=head.*,activation-dtype=int16' or 'class=torch.nn.Linear,weights=per-tensor'; "
        "repeatable, a later one wins",
    )
    parser.add_argument(
        "--calibration-batches",
        type=int,
        default=None,
        metavar="N",
        help="calibrate on N random batches shaped like the example inputs "
        "(default: the example inputs themselves)",
    )
    parser.add_argument(
        "--qdq-steps",
        type=float,
        default=1.0,
        metavar="S",
        help="allowed QDQ ONNX error, in quantisation steps of each output's scale (default: 1)",
    )


def chain_options(args: argparse.Namespace, configured: Quantization | None = None) -> dict:
    """run_chain keyword arguments from the chain options, the quantization choices on top of
    the `configured` ones (raises TargetError)."""
    try:
        overrides = tuple(parse_override_text(text) for text in args.quantize)
    except ValueError as exc:
        raise TargetError(str(exc)) from None
    defaults = {name: getattr(args, name) for name in ALLOWED if getattr(args, name) is not None}
    quantization = (configured or Quantization()).with_(defaults, overrides)
    dtypes = {}
    for item in args.module_dtype:
        module, sep, dtype = item.partition("=")
        if not sep or not module or not dtype:
            raise TargetError(f"--module-dtype {item!r}: expected MODULE=DTYPE")
        dtypes[module] = dtype
    return {
        "exclude": tuple(args.exclude_modules),
        "module_dtypes": dtypes,
        "quantization": quantization,
        "calibration": args.calibration_batches,
        "qdq_steps": args.qdq_steps,
    }


def add_observer_arguments(
    parser: argparse.ArgumentParser, exclude_flag: str = "--exclude"
) -> None:
    """`--observers` / `--onnx` (run the chain after verifying) and the chain options."""
    parser.add_argument(
        "--observers",
        action="store_true",
        help="then run the quantization chain on each migrated model: pt2e "
        "observers, calibration, conversion to QDQ ...",
    )
    parser.add_argument(
        "--onnx",
        action="store_true",
        help="... and the float and QDQ ONNX round trip under onnxruntime "
        "(either flag runs the whole chain and prints one table)",
    )
    add_chain_arguments(parser, exclude_flag)


def report_setup_errors(results, prefix: str) -> None:
    """One line on stderr per target that could not be set up."""
    for result in results:
        if result.error:
            print(f"{prefix}: {result.target}: {result.error}", file=sys.stderr)


def run_chains(results, options: dict) -> tuple[str, bool]:
    """Run the chain on the migrated model each verified result kept (`TargetResult.built`:
    the model verify built and checked, not a second one) and render one table: equivalence,
    observers, float and QDQ ONNX errors, total seconds, after a table of the seconds per step;
    a target is named by its factory where that is unique (imports torch)."""
    from migrator.chain import run_chain, summary_table

    names = [result.target.rpartition(":")[2] for result in results]
    rows, timings, ok = [], [], True
    for result in results:
        equivalence = _equivalence_cell(result)
        built = result.built
        short = result.target.rpartition(":")[2]
        if names.count(short) > 1:
            short = result.target
        if built is None or built.inputs is None:
            problem = next(
                (check.detail for check in result.checks if check.name == "load"), "not built"
            )
            rows.append({"target": result.target, "equivalence": equivalence, "observers": problem})
            ok = False
            continue
        report = run_chain(built.model, built.inputs, name=short, **options)
        ok = ok and report.ok
        row = report.summary_row()
        rows.append({"target": row.pop("target"), "equivalence": equivalence, **row})
        rows += [{"target": f"  {failure}"} for failure in report.failures]
        timings.append(report.timing_row())
    steps = f"seconds per step\n{summary_table(timings)}\n\n" if timings else ""
    return steps + summary_table(rows), ok


def _equivalence_cell(result) -> str:
    """PASS, or FAIL with the names of the failed checks."""
    from migrator.prove.compare import FAIL

    failed = [check.name for check in result.checks if check.status == FAIL]
    return "PASS" if not failed else "FAIL: " + ", ".join(failed)
