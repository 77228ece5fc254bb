"""Command line entry point: `migrator fix|check|verify|export`.

Each subcommand lives in `migrator.commands.<name>` and exposes `HELP`, `add_arguments(parser)`
and `run(args) -> int`. Command modules must not import torch at import time: only `run` of the
runtime commands may.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from migrator import __version__

COMMANDS = ("fix", "check", "verify", "export")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="migrator", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"migrator {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"migrator.commands.{name}")
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("migrator: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
