"""`migrator check PATH...`: report findings without rewriting anything."""

from __future__ import annotations

import argparse
import sys

from migrator import runner
from migrator.config import add_config_argument, load_for
from migrator.findings import to_json

HELP = "report every finding (path:line:col: CODE message) without changing files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or folders")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    add_config_argument(parser)


def run(args: argparse.Namespace) -> int:
    config = load_for(args)
    if config is None:
        return 2
    findings, errors = [], 0
    for outcome in runner.run(args.paths, config, rewrite=False):
        if outcome.error:
            print(outcome.error, file=sys.stderr)
            errors += 1
        findings += outcome.findings
    if args.format == "json":
        print(to_json(findings))
    else:
        for finding in findings:
            print(finding.format())
    if errors:
        return 2
    return 1 if findings else 0
