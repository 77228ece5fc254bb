"""Flags `fix` and `check` share, spelled as ruff spells them."""

from __future__ import annotations

import argparse
import sys

from migrator import runner


def add_noise_arguments(parser: argparse.ArgumentParser) -> None:
    noise = parser.add_mutually_exclusive_group()
    noise.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print the findings and errors only: no summary, no per-file notes",
    )
    noise.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also name each file processed and the configuration governing it",
    )
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when findings are reported or files change (2 still "
        "means something could not be used)",
    )


def say_verbose(args: argparse.Namespace, outcome: runner.Outcome, bar) -> None:
    """With --verbose, on stderr: the file processed and where its settings come from."""
    if args.verbose and isinstance(outcome, runner.Processed):
        bar.print(
            f"{outcome.path}: settings from {outcome.config.path or 'the defaults'}",
            file=sys.stderr,
        )


def exit_status(args: argparse.Namespace, status: int) -> int:
    """The status to exit with: --exit-zero turns 1 into 0."""
    return 0 if args.exit_zero and status == 1 else status
