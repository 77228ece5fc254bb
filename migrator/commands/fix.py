"""`migrator fix PATH...`: rewrite model source in place (or show the diff); `-`: from stdin to
stdout."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from migrator import runner
from migrator.commands.flags import add_noise_arguments, exit_status, say_verbose
from migrator.commands.paths import add_path_arguments, outcomes, stdin_and_settings
from migrator.config import (
    Config,
    ConfigError,
    add_config_argument,
    add_override_arguments,
)
from migrator.evidence import Evidence
from migrator.files import SourceError, encode_source, write_source
from migrator.findings import Finding
from migrator.parallel import add_jobs_argument
from migrator.progress import Progress
from migrator.commands.options import add_observer_arguments, chain_options
from migrator.report import ReviewReport, Summary, unified_diff

if TYPE_CHECKING:
    from migrator.prove.load import Side
    from migrator.prove.verify import RewriteVerification

HELP = "rewrite functionals, operators and reused modules into named modules, in place"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_path_arguments(parser)
    parser.add_argument("--diff", action="store_true", help="print a unified diff, write nothing")
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if any file would change (findings left do "
        "not count); with --diff, print the diff too",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="before writing, verify every [[tool.migrator.verify]] target that "
        "uses a changed file (state_dict, fx graph, export, outputs); write "
        "only the files passing targets cover",
    )
    parser.add_argument(
        "--evidence",
        action="store_true",
        help="build every [[tool.migrator.verify]] target first (imports torch) and split "
        "reused modules, or rewrite in-place ops, that only the built models prove safe "
        "(implied by --verify)",
    )
    parser.add_argument(
        "--write-unverified",
        action="store_true",
        help="with --verify, also write the changed files no verify target "
        "covers (left unwritten otherwise)",
    )
    add_observer_arguments(parser, exclude_flag="--exclude-module")
    parser.add_argument(
        "--report",
        metavar="FILE.md",
        help="also write a Markdown review report: each file's diff and the findings left",
    )
    add_noise_arguments(parser)
    add_jobs_argument(parser)
    add_override_arguments(parser)
    add_config_argument(parser)


def run(args: argparse.Namespace) -> int:
    """0: nothing changed or left; 1: changes or findings (--check: changes only); 2: a path,
    file, setting or verify target that could not be used."""
    used = stdin_and_settings(args, "--verify verifies files" if args.verify else None)
    if used is None:
        return 2
    stdin, settings = used
    raw = sys.stdin.buffer.read() if stdin else None
    evidence, before = None, None
    if args.evidence or args.verify:
        if stdin:
            print("migrator fix: --evidence builds files, not stdin", file=sys.stderr)
            return 2
        from migrator.prove.load import Side

        before = Side("before fix")  # verify's original side: the files as they are on disk
        try:
            evidence = _evidence([settings.for_path(p) for p in args.paths], before)
        except ConfigError as exc:
            print(f"migrator fix: {exc}", file=sys.stderr)
            return 2
        if evidence is None:
            return 2
    with Progress("fix") as bar:
        fixer = Fixer(args, bar) if raw is None else StdinFixer(args, bar, raw)
        found = outcomes(args, settings, raw, rewrite=True, progress=bar, evidence=evidence)
        if args.verify:
            found = list(found)  # every rewrite is known before any file is written
            configs = {id(c): c for c in map(settings.for_path, args.paths)}  # each path's own
            verified = _verify(found, list(configs.values()), args, before)
            if verified is None:
                return 2
            fixer.verified, fixer.chain_ok, fixer.verify_text = verified
        for outcome in found:
            say_verbose(args, outcome, bar)
            fixer.apply(outcome)
    return exit_status(args, fixer.finish())


def _evidence(configs: list[Config], before: Side) -> Evidence | None:
    """The run-time evidence of the models the paths' verify targets build from the files as
    they are (imports torch); None, the problem printed, when a target cannot be used. A target
    that cannot be built only gives no evidence (--verify reports it)."""
    from migrator.prove.evidence import from_targets
    from migrator.prove.targets import TargetError, config_targets

    unique = {id(c): c for c in configs}.values()
    try:
        targets = [target for config in unique for target in config_targets(config)]
    except TargetError as exc:
        print(f"migrator fix --evidence: {exc}", file=sys.stderr)
        return None
    evidence, errors = from_targets(targets, before)
    for error in errors:
        print(f"migrator fix --evidence: {error}", file=sys.stderr)
    return evidence


def _verify(
    outcomes: list[runner.Outcome],
    configs: list[Config],
    args: argparse.Namespace,
    before: Side | None,
):
    """Verify the targets the configurations of the paths given name against the in-memory
    rewrites, then (with --observers or --onnx) run the quantization chain on the migrated models
    (imports torch)."""
    from migrator.prove.targets import TargetError, config_targets

    try:
        targets = [target for config in configs for target in config_targets(config)]
        options = chain_options(args, configs[0].quantization)
    except TargetError as exc:
        print(f"migrator fix --verify: {exc}", file=sys.stderr)
        return None
    if not targets:
        print(
            "migrator fix --verify: nothing to verify: add [[tool.migrator.verify]] entries to "
            "pyproject.toml",
            file=sys.stderr,
        )
        return None
    from migrator.commands.options import report_setup_errors, run_chains
    from migrator.prove.verify import format_text, verify_rewrites

    rewrites = {
        o.path: (o.source.text, o.new_text)
        for o in outcomes
        if isinstance(o, runner.Processed) and o.changed and o.new_text is not None
    }
    for config in configs:
        ops_file = _ops_module_file(config)
        if rewrites and ops_file is not None and not ops_file.exists():
            rewrites[ops_file] = ("", _OPS_SOURCE.read_text(encoding="utf-8"))  # as fix writes it
    verified = verify_rewrites(rewrites, targets, keep=args.observers or args.onnx, original=before)
    report_setup_errors(verified.results, "migrator fix --verify")
    compared = [result for result in verified.results if not result.error]
    text, chained = format_text(compared) if compared else "", True
    if compared and (args.observers or args.onnx):
        table, chained = run_chains(compared, options)
        text += "\n" + table
    return verified, chained, text


class Fixer:
    """Applies each file's outcome (write it, print its diff, or say it would change) and keeps
    the totals for the closing summary and the review report."""

    def __init__(self, args: argparse.Namespace, bar: Progress) -> None:
        self.args, self.bar = args, bar
        self.dry_run = args.diff or args.check
        self.out = sys.stdout
        """Where the files fixed and the findings left are listed."""
        self.color = args.diff and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        self.summary = Summary()
        self.report = ReviewReport() if args.report else None
        self.left: list[Finding] = []
        self.verified: RewriteVerification | None = None
        """With --verify: the RewriteVerification; only files passing targets cover are
        written."""
        self.chain_ok = True
        """False when the quantization chain (--observers/--onnx) failed for a target."""
        self.verify_text = ""
        """The verification (and chain) tables, printed last."""
        self.landed: dict[Path, frozenset[str]] = {}
        """Each file applied -> the classes it defines on disk once applied (written or not)."""
        self.held: list[runner.Processed] = []
        """Rewrites importing a twin class another file's rewrite adds, that file not applied
        yet: applied when it is."""

    def apply(self, outcome: runner.Outcome) -> None:
        """Apply the outcome, unless it waits for a file whose twin classes it imports (then
        once that file is applied); then the outcomes that waited for it."""
        if isinstance(outcome, runner.Processed) and self._waits(outcome):
            self.held.append(outcome)
            return
        pending = [outcome]
        while pending:
            current = pending.pop(0)
            written = self._apply(current)
            self.landed[Path(current.path).resolve()] = _classes(current, written)
            ready = [o for o in self.held if not self._waits(o)]
            self.held = [o for o in self.held if all(o is not r for r in ready)]
            pending += ready

    def _waits(self, outcome: runner.Processed) -> bool:
        return not self.dry_run and any(
            Path(path).resolve() not in self.landed for path in outcome.twin_sources.values()
        )

    def _apply(self, outcome: runner.Outcome) -> bool:
        """Apply one outcome; whether its file is (or would be) on disk as rewritten."""
        say = self.bar.print
        if isinstance(outcome, runner.Failed):
            self._error(outcome.path, outcome.error)
            return False
        if isinstance(outcome, runner.Excluded):
            return True
        fixed = [f for f in outcome.findings if f.fixable and outcome.changed]
        left = [f for f in outcome.findings if not (f.fixable and outcome.changed)]
        self.left += left
        self.summary.findings_left += len(left)
        diff = ""
        if outcome.changed:
            old, new = outcome.source.text, outcome.new_text
            assert new is not None  # it changed
            diff = unified_diff(outcome.path, old, new) if self.report else ""
            refusal = self._refusal(outcome.path) or self._missing_twin(outcome)
            if self.args.diff:
                say(unified_diff(outcome.path, old, new, color=self.color), end="")
            elif self.args.check:
                if not self.args.quiet:
                    say(f"would fix {outcome.path}", file=self.out)
            elif refusal:
                say(f"{outcome.path}: not written: {refusal}", file=sys.stderr)
                self.summary.unwritten += 1
                return False
            elif not self._write(outcome, fixed):
                return False
            self.summary.add_fixed(fixed)
        if self.report:
            self.report.add(outcome.path, diff=diff, findings=left)
        return True

    def _missing_twin(self, outcome: runner.Processed) -> str | None:
        """Why the rewrite must not be written: it imports a twin class that another file's
        rewrite adds, and that file is not on disk with it (None: all are)."""
        if self.dry_run:
            return None
        for qualname, path in sorted(outcome.twin_sources.items()):
            cls = qualname.rsplit(".", 1)[1]
            if cls not in self.landed.get(Path(path).resolve(), frozenset()):
                return (
                    f"it imports `{cls}`, which the rewrite of {path} adds, and that file is "
                    "not written with it"
                )
        return None

    def finish(self) -> int:
        """Print the findings left and the summary, write the report (with the verified
        targets' table, if any); the exit status."""
        verification = self.verified.results if self.verified is not None else ()
        while self.held:  # files waiting on each other, or on one never processed: not written
            first = self.held.pop(0)
            for path in first.twin_sources.values():
                self.landed.setdefault(Path(path).resolve(), frozenset())
            self.apply(first)
        for finding in self.left:
            print(finding.format(), file=self.out)
        if self.verify_text:
            print(self.verify_text)
        verb = "would change" if self.dry_run else "changed"
        if not self.args.quiet:
            print(self.summary.line(verb), file=sys.stderr)
        if self.report and not self._write_report(
            self.report.render(self.summary, verb, verification)
        ):
            return 2
        if self.summary.errors or any(result.error for result in verification):
            return 2
        if self.args.check:
            return 1 if self.summary.files_changed else 0
        failed = any(not result.ok for result in verification) or not self.chain_ok
        changed = self.summary.files_changed or self.summary.unwritten
        return 1 if changed or self.left or failed else 0

    def _refusal(self, path: Path) -> str | None:
        """With --verify, why a changed file is not to be written (None: write it). A file no
        target covers is noted instead when nothing is written or --write-unverified is given."""
        if self.verified is None:
            return None
        refusal = self.verified.refusal(path)
        uncovered = Path(path).resolve() in self.verified.unverified
        if uncovered and (self.dry_run or self.args.write_unverified):
            self.bar.print(f"{path}: not verified: {refusal}", file=sys.stderr)
            return None
        return refusal

    def _write(self, outcome: runner.Processed, fixed: list[Finding]) -> bool:
        assert outcome.new_text is not None  # only a changed file is written
        try:
            write_source(outcome.source, outcome.new_text)
        except SourceError as exc:
            self._error(outcome.path, exc)
            return False
        self._fixed(outcome, fixed)
        return True

    def _fixed(self, outcome: runner.Processed, fixed: list[Finding]) -> None:
        """List the fixes made to a file; write the op modules it may now import."""
        if not self.args.quiet:
            self.bar.print(f"fixed {outcome.path}", file=self.out)
            for finding in fixed:
                self.bar.print(f"  {finding.format()}", file=self.out)
        _ensure_ops_module(outcome.config, self.bar, self.out)

    def _error(self, path: Path, error: SourceError) -> None:
        self.bar.print(error, file=sys.stderr)
        self.summary.errors += 1
        if self.report:
            self.report.add(path, error=error)

    def _write_report(self, text: str) -> bool:
        try:
            Path(self.args.report).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(
                f"migrator: cannot write the report {self.args.report}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return False
        return True


class StdinFixer(Fixer):
    """`fix -`: the source read from stdin goes to stdout, fixed or as it came (with --diff the
    diff instead, with --check nothing); the fixes and findings are listed on stderr."""

    def __init__(self, args: argparse.Namespace, bar: Progress, raw: bytes) -> None:
        super().__init__(args, bar)
        self.out = sys.stderr
        self.raw = raw
        """What goes to stdout: the bytes read, until the fixed source replaces them."""

    def finish(self) -> int:
        if not self.dry_run:
            sys.stdout.buffer.write(self.raw)
            sys.stdout.flush()
        return super().finish()

    def _write(self, outcome: runner.Processed, fixed: list[Finding]) -> bool:
        assert outcome.new_text is not None  # only a changed file is written
        try:
            self.raw = encode_source(outcome.source, outcome.new_text)
        except SourceError as exc:
            self._error(outcome.path, exc)
            return False
        self._fixed(outcome, fixed)
        return True


def _classes(outcome: runner.Outcome, written: bool) -> frozenset[str]:
    """The top-level classes of the outcome's file on disk, once applied (`written`: with its
    rewrite); none for a file that failed."""
    if not isinstance(outcome, runner.Processed):
        return frozenset()
    text = outcome.new_text if written and outcome.new_text is not None else outcome.source.text
    return frozenset(_CLASS.findall(text))


_CLASS = re.compile(r"^class\s+(\w+)", re.MULTILINE)

_OPS_SOURCE = Path(__file__).parent.parent / "nn.py"


def _ops_module_file(config: Config) -> Path | None:
    """Where the `ops_module` setting puts migrator's op modules in the user's project."""
    if config.ops_module == "migrator.nn":
        return None
    parts = config.ops_module.split(".")
    root = config.root / "src" if (config.root / "src" / parts[0]).is_dir() else config.root
    return root.joinpath(*parts).with_suffix(".py")


def _ensure_ops_module(config: Config, bar: Progress, out) -> None:
    """With `ops_module` set, write migrator's op modules into the user's project once."""
    target = _ops_module_file(config)
    if target is None or target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_OPS_SOURCE.read_text(encoding="utf-8"), encoding="utf-8")
    bar.print(f"wrote {target} (the op modules migrated code imports)", file=out)
