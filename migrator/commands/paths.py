"""The PATH arguments of the static commands (`fix`, `check`): files and folders, or `-` for
source read from stdin (with `--stdin-filename`, as ruff has it)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from migrator import runner
from migrator.config import Settings
from migrator.evidence import Evidence
from migrator.progress import Progress
from migrator.runner import STDIN


def add_path_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        default=["."],
        metavar="PATH",
        help="files or folders; `-` reads the source from stdin",
    )
    parser.add_argument(
        "--stdin-filename",
        metavar="NAME",
        help="with `-`: the file name shown in messages and matched against the "
        "settings and `exclude`",
    )


def reads_stdin(args: argparse.Namespace) -> bool | None:
    """Whether the source comes from stdin; None (the problem printed) when `-` comes with other
    paths, or --stdin-filename without `-`."""
    if STDIN not in args.paths:
        if args.stdin_filename is None:
            return False
        problem = "--stdin-filename needs `-` as the path"
    elif len(args.paths) > 1:
        problem = "`-` (stdin) cannot be combined with other paths"
    else:
        return True
    print(f"migrator {args.command}: {problem}", file=sys.stderr)
    return None


def outcomes(
    args: argparse.Namespace,
    settings: Settings,
    raw: bytes | None,
    *,
    rewrite: bool,
    progress: Progress,
    report_unused: bool = False,
    evidence: Evidence | None = None,
) -> Iterable[runner.Outcome]:
    """The run's outcomes: of `raw`, the source read from stdin, or of the paths (with the
    run-time `evidence` of `fix --evidence`)."""
    if raw is not None:
        return [
            runner.run_stdin(
                raw, args.stdin_filename, settings, rewrite=rewrite, report_unused=report_unused
            )
        ]
    return runner.run(
        args.paths,
        settings,
        rewrite=rewrite,
        jobs=args.jobs,
        progress=progress,
        report_unused=report_unused,
        evidence=evidence,
    )
