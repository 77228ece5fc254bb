"""`migrator check PATH...`: report findings without rewriting anything (`-`: the source on
stdin)."""

from __future__ import annotations

import argparse
import sys

from migrator import runner
from migrator.add_noqa import with_noqa
from migrator.commands.flags import add_noise_arguments, exit_status, say_verbose
from migrator.commands.paths import add_path_arguments, outcomes, stdin_and_settings
from migrator.config import add_config_argument, add_override_arguments
from migrator.files import SourceError, write_source
from migrator.output import FORMATS, STREAMED, render, statistics
from migrator.parallel import add_jobs_argument
from migrator.progress import Progress

HELP = "report every finding (path:line:col: CODE message) without changing files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_path_arguments(parser)
    parser.add_argument(
        "--output-format",
        "--format",
        dest="format",
        choices=FORMATS,
        default="text",
        help="text (default: path:line:col: CODE message), grouped (by file), "
        "json, sarif (SARIF 2.1.0) or github (GitHub Actions annotations)",
    )
    parser.add_argument(
        "--statistics",
        action="store_true",
        help="print a count of the findings per code instead of each finding",
    )
    parser.add_argument(
        "--report-unused-noqa",
        action="store_true",
        help="report each suppression comment that suppresses nothing (MIG100)",
    )
    parser.add_argument(
        "--add-noqa",
        action="store_true",
        help="write `# noqa: CODE` on the line of every finding reported, to "
        "adopt migrator on existing code; exit 0 unless a file fails",
    )
    add_noise_arguments(parser)
    add_jobs_argument(parser)
    add_override_arguments(parser)
    add_config_argument(parser)


def run(args: argparse.Namespace) -> int:
    """0: no finding; 1: findings; 2: a path, file or setting that could not be used."""
    used = stdin_and_settings(args, "--add-noqa writes files" if args.add_noqa else None)
    if used is None:
        return 2
    stdin, settings = used
    streamed = args.format == STREAMED and not args.statistics
    found, findings, errors, noqa = 0, [], [], NoqaWriter(args)
    with Progress("check") as bar:
        raw = sys.stdin.buffer.read() if stdin else None
        for outcome in outcomes(
            args, settings, raw, rewrite=False, progress=bar, report_unused=args.report_unused_noqa
        ):
            say_verbose(args, outcome, bar)
            if isinstance(outcome, runner.Failed):
                bar.print(outcome.error, file=sys.stderr)
                errors.append(outcome.error)
            elif isinstance(outcome, runner.Processed):
                found += len(outcome.findings)
                if args.add_noqa:
                    noqa.add(outcome, bar, errors)
                elif streamed:
                    for finding in outcome.findings:
                        bar.print(finding.format())
                else:
                    findings += outcome.findings
    if args.add_noqa:
        return noqa.finish(errors)
    if args.statistics and findings:
        print(statistics(findings))
    elif not streamed and not args.statistics:
        print(render(args.format, findings, errors))
    if errors:
        return 2
    return exit_status(args, 1 if found else 0)


class NoqaWriter:
    """`--add-noqa`: writes each file's suppressions, counts them for the closing line."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.added = self.files = 0

    def add(self, outcome: runner.Processed, bar: Progress, errors: list[SourceError]) -> None:
        if not outcome.findings:
            return
        text = with_noqa(outcome.source.text, outcome.findings)
        try:
            if text is None:
                raise SourceError(
                    outcome.path,
                    outcome.findings[0].line,
                    "a `# noqa` comment would change the code here; add it by hand",
                )
            write_source(outcome.source, text)
        except SourceError as exc:
            bar.print(exc, file=sys.stderr)
            errors.append(exc)
            return
        self.added += len({(f.line, f.code) for f in outcome.findings})
        self.files += 1

    def finish(self, errors: list[SourceError]) -> int:
        if not self.args.quiet:
            print(f"added {self.added} noqa code(s) to {self.files} file(s)", file=sys.stderr)
        return 2 if errors else 0
