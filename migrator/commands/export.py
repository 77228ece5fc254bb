"""`migrator export FILE.py:NAME -o out/`: write the float and QDQ ONNX files of a (migrated)
model and its observer report, after running them in onnxruntime."""

from __future__ import annotations

import argparse
import sys

from migrator.config import ConfigError, add_config_argument, load
from migrator.prove.targets import TargetError
from migrator.commands.options import (
    add_chain_arguments,
    add_target_arguments,
    chain_options,
    targets_from_args,
)

HELP = "write the float and QDQ ONNX models and the observer report of a model"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="FILE.py:NAME",
        help="a model class or a callable returning a model or (model, example_inputs)",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="folder for <name>.float.onnx, <name>.qdq.onnx and the reports",
    )
    add_target_arguments(parser)
    add_chain_arguments(parser)
    add_config_argument(parser)


def run(args: argparse.Namespace) -> int:
    try:
        [target] = targets_from_args(args, [args.target])
        options = chain_options(args, load(["."], args.config).quantization)
    except (TargetError, ConfigError) as exc:
        print(f"migrator export: {exc}", file=sys.stderr)
        return 2

    from migrator.chain import write_export
    from migrator.prove.build import MIGRATED_SEED, build
    from migrator.prove.load import LoadError, Side

    try:
        built = build(target, Side("working tree"), MIGRATED_SEED)
    except LoadError as exc:
        print(f"migrator export: {exc}", file=sys.stderr)
        return 2
    if built.inputs is None:
        print(
            f"migrator export: {target.label}: no example inputs: pass --input SHAPE, return "
            "(model, example_inputs), or define example_inputs()",
            file=sys.stderr,
        )
        return 2
    report = write_export(built.model, built.inputs, args.output, name=target.label, **options)
    print(report.to_table())
    for path in report.files:
        print(f"wrote {path}")
    return 0 if report.ok else 1
