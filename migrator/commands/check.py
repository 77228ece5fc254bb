"""`migrator check PATH...`: report findings without rewriting anything (`-`: the source on
stdin)."""

from __future__ import annotations

import argparse
import sys

from migrator.commands.paths import add_path_arguments, outcomes, reads_stdin
from migrator.config import add_config_argument, add_override_arguments, load_for
from migrator.findings import to_json
from migrator.parallel import add_jobs_argument
from migrator.progress import Progress
from migrator.report import to_sarif
from migrator.runner import Failed, Processed

HELP = "report every finding (path:line:col: CODE message) without changing files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_path_arguments(parser)
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                        help="text (default), json, or SARIF 2.1.0 for code-scanning tools")
    add_jobs_argument(parser)
    add_override_arguments(parser)
    add_config_argument(parser)


def run(args: argparse.Namespace) -> int:
    """0: no finding; 1: findings; 2: a path, file or setting that could not be used."""
    stdin = reads_stdin(args)
    settings = load_for(args) if stdin is not None else None
    if settings is None:
        return 2
    found, findings, errors = 0, [], []
    with Progress("check") as bar:
        raw = sys.stdin.buffer.read() if stdin else None
        for outcome in outcomes(args, settings, raw, rewrite=False, progress=bar):
            if isinstance(outcome, Failed):
                bar.print(outcome.error, file=sys.stderr)
                errors.append(outcome.error)
            elif isinstance(outcome, Processed):
                found += len(outcome.findings)
                if args.format == "text":  # streamed; json and sarif need them all
                    for finding in outcome.findings:
                        bar.print(finding.format())
                else:
                    findings += outcome.findings
    if args.format == "json":
        print(to_json(findings))
    elif args.format == "sarif":
        print(to_sarif(findings, errors))
    if errors:
        return 2
    return 1 if found else 0
