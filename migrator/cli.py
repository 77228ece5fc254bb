"""Command line entry point: `migrator fix|check|verify|export`.

Each subcommand lives in `migrator.commands.<name>` and exposes `HELP`, `add_arguments(parser)`
and `run(args) -> int`. Command modules must not import torch at import time: only `run` of the
runtime commands may.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import sys

from migrator import __version__

COMMANDS = ("fix", "check", "verify", "export")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of command `only` (the one the arguments name: the
    others' modules are not imported)."""
    parser = argparse.ArgumentParser(prog="migrator", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"migrator {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        module = importlib.import_module(f"migrator.commands.{name}")
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    atexit.unregister(_no_collection_at_exit)  # registered once however often `main` runs
    atexit.register(_no_collection_at_exit)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("migrator: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


def _no_collection_at_exit() -> None:
    """Run at exit: the interpreter's shutdown would walk every object still alive in its last
    garbage collections (the trees the parse cache keeps: a fifth of a `check` of torchvision's
    models), which reference counting frees anyway. Objects alive now are left out of them, so
    a cycle among them is not collected, as after `os._exit`; temporary folders are removed by
    their own exit hooks."""
    gc.freeze()
