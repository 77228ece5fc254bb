"""`migrator verify [FILE.py:NAME ...]`: prove migrated model source equivalent to the original.

The original is each file as it is at a git revision (`--base`, default HEAD); the migrated
version is the working tree. With no target, the `[[tool.migrator.verify]]` entries of
pyproject.toml are verified. torch is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from migrator.check.targets import (TargetError, config_targets, parse_input, parse_kwargs,
                                    parse_target)
from migrator.config import ConfigError, add_config_argument, load

HELP = ("prove migrated source equivalent to the original at a git revision: state_dict, fx "
        "graph, exported ATen graph and bit-identical outputs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("targets", nargs="*", metavar="FILE.py:NAME",
                        help="a model class (constructed without arguments, or with --kwargs) or "
                             "a callable returning a model or (model, example_inputs); default: "
                             "the [[tool.migrator.verify]] entries of pyproject.toml")
    parser.add_argument("--input", action="append", default=[], metavar="SHAPE",
                        help="example input shape such as 1x3x224x224, or 1x128:int64 with its "
                             "own dtype; repeat for several inputs")
    parser.add_argument("--dtype", default="float32",
                        help="dtype of the --input tensors (default: float32)")
    parser.add_argument("--kwargs", default="{}", metavar="JSON",
                        help="keyword arguments for the class or callable, as a JSON object")
    parser.add_argument("--base", default="HEAD", metavar="REV",
                        help="git revision holding the original source (default: HEAD)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    add_config_argument(parser)


def run(args: argparse.Namespace) -> int:
    try:
        if args.targets:
            inputs = tuple(parse_input(text, args.dtype) for text in args.input)
            kwargs = parse_kwargs(args.kwargs)
            targets = [parse_target(spec, Path.cwd(), inputs, kwargs) for spec in args.targets]
        else:
            config = load(["."], args.config)
            targets = config_targets(config)
    except (TargetError, ConfigError) as exc:
        print(f"migrator verify: {exc}", file=sys.stderr)
        return 2
    if not targets:
        print("migrator verify: nothing to verify: name a target (path/to/file.py:Model) or add "
              "[[tool.migrator.verify]] entries to pyproject.toml", file=sys.stderr)
        return 2

    from migrator.check.verify import format_json, format_text, verify_base

    results = verify_base(targets, args.base)
    print(format_json(results) if args.format == "json" else format_text(results))
    return 0 if all(result.ok for result in results) else 1
