"""`migrator verify [FILE.py:NAME ...]`: prove migrated model source equivalent to the original.

The original is each file as it is at a git revision (`--base`, default HEAD); the migrated
version is the working tree. With no target, the `[[tool.migrator.verify]]` entries of
pyproject.toml are verified. `--observers` / `--onnx` then run the quantization chain on each
migrated model. torch is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import sys

from migrator.prove.targets import TargetError, config_targets
from migrator.commands.options import (
    add_observer_arguments,
    add_target_arguments,
    chain_options,
    report_setup_errors,
    run_chains,
    targets_from_args,
)
from migrator.config import ConfigError, add_config_argument, load

HELP = (
    "prove migrated source equivalent to the original at a git revision: state_dict, fx "
    "graph, exported ATen graph and bit-identical outputs"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="FILE.py:NAME",
        help="a model class (constructed without arguments, or with --kwargs) or "
        "a callable returning a model or (model, example_inputs); default: "
        "the [[tool.migrator.verify]] entries of pyproject.toml",
    )
    add_target_arguments(parser)
    parser.add_argument(
        "--base",
        default="HEAD",
        metavar="REV",
        help="git revision holding the original source (default: HEAD)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    add_observer_arguments(parser)
    add_config_argument(parser)


def run(args: argparse.Namespace) -> int:
    """0: every target passes; 1: a target is not equivalent; 2: a target could not be set up."""
    try:
        config = load(["."], args.config)
        targets = targets_from_args(args, args.targets) if args.targets else config_targets(config)
        options = chain_options(args, config.quantization)
    except (TargetError, ConfigError) as exc:
        print(f"migrator verify: {exc}", file=sys.stderr)
        return 2
    if not targets:
        print(
            "migrator verify: nothing to verify: name a target (path/to/file.py:Model) or add "
            "[[tool.migrator.verify]] entries to pyproject.toml",
            file=sys.stderr,
        )
        return 2

    from migrator.prove.load import Side
    from migrator.prove.verify import format_json, format_text, verify_base

    migrated = Side("working tree")
    results = verify_base(targets, migrated, args.base, keep=args.observers or args.onnx)
    compared = [result for result in results if not result.error]
    report_setup_errors(results, "migrator verify")
    if args.format == "json":
        print(format_json(results))
    elif compared:
        print(format_text(compared))
    ok = all(result.ok for result in compared)
    if compared and (args.observers or args.onnx):
        table, chained = run_chains(compared, options)
        print(table)
        ok = ok and chained
    if len(compared) < len(results):
        return 2
    return 0 if ok else 1
