"""`migrator fix PATH...`: rewrite model source in place (or show the diff)."""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections import Counter
from pathlib import Path

from migrator import runner
from migrator.config import Config, add_config_argument, load_for
from migrator.files import SourceError, write_source

HELP = "rewrite functionals, operators and reused modules into named modules, in place"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or folders")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print a unified diff, write nothing")
    mode.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 if any file would change")
    add_config_argument(parser)


def run(args: argparse.Namespace) -> int:
    config = load_for(args)
    if config is None:
        return 2
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    counts: Counter[str] = Counter()
    changed = errors = 0
    left = []
    for outcome in runner.run(args.paths, config, rewrite=True):
        if outcome.error:
            print(outcome.error, file=sys.stderr)
            errors += 1
            continue
        fixed = [f for f in outcome.findings if f.fixable]
        left += [f for f in outcome.findings if not f.fixable]
        if not outcome.changed:
            continue
        changed += 1
        counts.update(f.code for f in fixed)
        if args.diff:
            sys.stdout.write(_diff(outcome.path, outcome.source.text, outcome.new_text, color))
        elif args.check:
            print(f"would fix {outcome.path}")
        else:
            try:
                write_source(outcome.source, outcome.new_text)
            except SourceError as exc:
                print(exc, file=sys.stderr)
                errors += 1
                continue
            print(f"fixed {outcome.path}")
            for finding in fixed:
                print(f"  {finding.format()}")
            _ensure_ops_module(config)
    for finding in left:
        print(finding.format())
    verb = "would change" if args.diff or args.check else "changed"
    print(f"{changed} file(s) {verb}: {counts['MIG001']} functional(s) and "
          f"{counts['MIG002']} operator(s)/method(s) converted, {counts['MIG003']} module "
          f"call(s) split; {len(left)} finding(s) left", file=sys.stderr)
    if errors:
        return 2
    return 1 if changed or left else 0


def _diff(path: Path, old: str, new: str, color: bool) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 f"a/{path}", f"b/{path}", n=3)
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        if color:
            code = {"+": "32", "-": "31", "@": "36"}.get(line[0])
            if line.startswith(("+++", "---")):
                code = "1"
            if code:
                line = f"\033[{code}m{line.rstrip(chr(10))}\033[0m\n"
        out.append(line)
    return "".join(out)


def _ensure_ops_module(config: Config) -> None:
    """With `ops_module` set, write migrator's op modules into the user's project once."""
    if config.ops_module == "migrator.nn":
        return
    parts = config.ops_module.split(".")
    root = config.root / "src" if (config.root / "src" / parts[0]).is_dir() else config.root
    target = root.joinpath(*parts).with_suffix(".py")
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text((Path(__file__).parent.parent / "nn.py").read_text(encoding="utf-8"),
                      encoding="utf-8")
    print(f"wrote {target} (the op modules migrated code imports)")
