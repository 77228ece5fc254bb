"""The PATH arguments of the static commands (`fix`, `check`): files and folders, or `-` for
source read from stdin (with `--stdin-filename`, as ruff has it)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from migrator import runner
from migrator.config import Settings, load_for
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


def stdin_and_settings(
    args: argparse.Namespace, refused: str | None
) -> tuple[bool, Settings] | None:
    """Whether the source comes from stdin, and the settings; None (the problem printed) when
    either cannot be used, or when stdin comes with an option that does not take it
    (`refused`: what that option does instead, `--verify verifies files`)."""
    stdin = reads_stdin(args)
    if stdin and refused:
        print(f"migrator {args.command}: {refused}, not stdin", file=sys.stderr)
        return None
    settings = load_for(args) if stdin is not None else None
    return None if settings is None else (bool(stdin), settings)


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
