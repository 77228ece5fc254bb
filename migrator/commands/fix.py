"""`migrator fix PATH...`: rewrite model source in place (or show the diff)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from migrator import runner
from migrator.config import Config, add_config_argument, add_override_arguments, load_for
from migrator.files import SourceError, write_source
from migrator.findings import Finding
from migrator.parallel import add_jobs_argument
from migrator.progress import Progress
from migrator.commands.options import chain_options
from migrator.commands.verify import add_observer_arguments
from migrator.report import ReviewReport, Summary, unified_diff

HELP = "rewrite functionals, operators and reused modules into named modules, in place"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or folders")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print a unified diff, write nothing")
    mode.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 if any file would change")
    parser.add_argument("--verify", action="store_true",
                        help="before writing, verify every [[tool.migrator.verify]] target that "
                             "uses a changed file (state_dict, fx graph, export, outputs); files "
                             "a failing target uses are left untouched")
    add_observer_arguments(parser, exclude_flag="--exclude-module")
    parser.add_argument("--report", metavar="FILE.md",
                        help="also write a Markdown review report: each file's diff and the "
                             "findings left")
    add_jobs_argument(parser)
    add_override_arguments(parser)
    add_config_argument(parser)


def run(args: argparse.Namespace) -> int:
    config = load_for(args)
    if config is None:
        return 2
    with Progress("fix") as bar:
        fixer = Fixer(args, config, bar)
        outcomes = runner.run(args.paths, config, rewrite=True, jobs=args.jobs, progress=bar)
        if args.verify:
            outcomes = list(outcomes)  # every rewrite is known before any file is written
            verified = _verify(outcomes, config, args)
            if verified is None:
                return 2
            fixer.verified, fixer.chain_ok, fixer.verify_text = verified
        for outcome in outcomes:
            fixer.apply(outcome)
    return fixer.finish()


def _verify(outcomes: list[runner.Outcome], config: Config, args: argparse.Namespace):
    """Verify the configured targets against the in-memory rewrites, then (with --observers or
    --onnx) run the quantization chain on the migrated models (imports torch)."""
    from migrator.check.targets import TargetError, config_targets

    try:
        targets = config_targets(config)
        options = chain_options(args)
    except TargetError as exc:
        print(f"migrator fix --verify: {exc}", file=sys.stderr)
        return None
    from migrator.check.load import Side
    from migrator.check.verify import format_text, verify_rewrites
    from migrator.commands.verify import run_chains

    rewrites = {o.path: (o.source.text, o.new_text) for o in outcomes if o.changed}
    ops_file = _ops_module_file(config)
    if rewrites and ops_file is not None and not ops_file.exists():
        rewrites[ops_file] = ("", _OPS_SOURCE.read_text(encoding="utf-8"))  # as fix will write it
    verified = verify_rewrites(rewrites, targets)
    for path in sorted(verified.unverified):
        print(f"{path}: no verify target uses this file: its rewrite is not verified",
              file=sys.stderr)
    text, chained = format_text(verified.results) if verified.results else "", True
    if verified.results and (args.observers or args.onnx):
        migrated = Side("after fix", {path: new for path, (_, new) in rewrites.items()})
        table, chained = run_chains(targets, verified.results, migrated, options)
        text += "\n" + table
    return verified, chained, text


class Fixer:
    """Applies each file's outcome (write it, print its diff, or say it would change) and keeps
    the totals for the closing summary and the review report."""

    def __init__(self, args: argparse.Namespace, config: Config, bar: Progress) -> None:
        self.args, self.config, self.bar = args, config, bar
        self.dry_run = args.diff or args.check
        self.color = args.diff and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        self.summary = Summary()
        self.report = ReviewReport() if args.report else None
        self.left: list[Finding] = []
        self.verified = None
        """With --verify: the RewriteVerification; files a failing target uses are not written."""
        self.chain_ok = True
        """False when the quantization chain (--observers/--onnx) failed for a target."""
        self.verify_text = ""
        """The verification (and chain) tables, printed last."""

    def apply(self, outcome: runner.Outcome) -> None:
        say = self.bar.print
        if outcome.error:
            self._error(outcome.path, outcome.error)
            return
        fixed = [f for f in outcome.findings if f.fixable and outcome.changed]
        left = [f for f in outcome.findings if not (f.fixable and outcome.changed)]
        self.left += left
        self.summary.findings_left += len(left)
        diff = ""
        if outcome.changed:
            old, new = outcome.source.text, outcome.new_text
            diff = unified_diff(outcome.path, old, new) if self.report else ""
            if self.args.diff:
                say(unified_diff(outcome.path, old, new, color=self.color), end="")
            elif self.args.check:
                say(f"would fix {outcome.path}")
            elif self.verified is not None and not self.verified.may_write(outcome.path):
                say(f"{outcome.path}: not written: a verify target using it failed",
                    file=sys.stderr)
                self.summary.errors += 1
                return
            elif not self._write(outcome, fixed):
                return
            self.summary.add_fixed(fixed)
        if self.report:
            self.report.add(outcome.path, diff=diff, findings=left)

    def finish(self) -> int:
        """Print the findings left and the summary, write the report (with the verified
        targets' table, if any); the exit status."""
        verification = self.verified.results if self.verified is not None else ()
        for finding in self.left:
            print(finding.format())
        if self.verify_text:
            print(self.verify_text)
        verb = "would change" if self.dry_run else "changed"
        print(self.summary.line(verb), file=sys.stderr)
        if self.report and not self._write_report(
                self.report.render(self.summary, verb, verification)):
            return 2
        blocked = self.verified is not None and bool(self.verified.blocked)
        if self.summary.errors and not blocked:
            return 2
        failed = any(not result.ok for result in verification) or not self.chain_ok
        return 1 if self.summary.files_changed or self.left or failed or blocked else 0

    def _write(self, outcome: runner.Outcome, fixed: list[Finding]) -> bool:
        try:
            write_source(outcome.source, outcome.new_text)
        except SourceError as exc:
            self._error(outcome.path, exc)
            return False
        self.bar.print(f"fixed {outcome.path}")
        for finding in fixed:
            self.bar.print(f"  {finding.format()}")
        _ensure_ops_module(self.config, self.bar)
        return True

    def _error(self, path: Path, error: SourceError) -> None:
        self.bar.print(error, file=sys.stderr)
        self.summary.errors += 1
        if self.report:
            self.report.add(path, error=error)

    def _write_report(self, text: str) -> bool:
        try:
            Path(self.args.report).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"migrator: cannot write the report {self.args.report}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return False
        return True


_OPS_SOURCE = Path(__file__).parent.parent / "nn.py"


def _ops_module_file(config: Config) -> Path | None:
    """Where the `ops_module` setting puts migrator's op modules in the user's project."""
    if config.ops_module == "migrator.nn":
        return None
    parts = config.ops_module.split(".")
    root = config.root / "src" if (config.root / "src" / parts[0]).is_dir() else config.root
    return root.joinpath(*parts).with_suffix(".py")


def _ensure_ops_module(config: Config, bar: Progress) -> None:
    """With `ops_module` set, write migrator's op modules into the user's project once."""
    target = _ops_module_file(config)
    if target is None or target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_OPS_SOURCE.read_text(encoding="utf-8"), encoding="utf-8")
    bar.print(f"wrote {target} (the op modules migrated code imports)")
