"""Real zoos before and after `migrator fix`: torchvision's and timm's model code, side by side.

A copy of each installed package is migrated (torchvision/models; timm/models and timm/layers)
and a sample of its models is built from the original and from the copy (tests/zoo.py does the
work; the slow test tests/test_zoo.py runs the same sample). Printed per zoo, before and after
the fix:

- models built, and bit-exact with the original (state_dict; eval and train outputs; gradients
  and buffers after a train step), out of the models sampled;
- convertible calls converted: calls `fix` converted out of those plus the ones `check` still
  reports (MIG0xx) or refuses (MIG1xx about a call; not the MIG105 of a module `fix` made to
  serve every iteration of a loop whose trip count depends on the input, a call it converted,
  counted in a row of its own), then every code; the same count from the
  first fix's findings, all of them and those on lines the sampled original models run (their
  eval and train forwards, traced), with what is left there by code;
- what `migrator.prepare_model` still does at run time on the models fx can trace: ops it turns
  into modules, reused stateless module calls it gives a copy, ops it leaves as functions;
- files changed by the first fix, and by a second fix on the migrated copy (must be 0).

    python benchmarks/zoo.py [--zoo timm|torchvision] [--models N|all] [--max-params M]
        [--jobs 2] [--evidence] [--left]

`--models N` takes the first N of the fixed sample, then a seeded random sample of the zoo's
other models (their default input sizes) with at most `--max-params` million parameters
(default 50, counted on the meta device; 0: no limit); `all` every model the zoo lists within
that limit. Default: the fixed sample. `--evidence` builds the sampled models from the copy first and gives `fix` their run-time
evidence, as `fix --evidence` does with verify targets. `--left` also lists, site by site, the
convertible calls the first fix left on lines the sampled models run.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import zoo  # noqa: E402  (tests/zoo.py, not this script)

from migrator.findings import CODES, Finding, serves_every_iteration  # noqa: E402
from migrator.rewrite.reuse import WEIGHTS_SHARED  # noqa: E402

NOTICES = frozenset({"MIG005", "MIG111", "MIG113", "MIG201"})
"""Codes not about one call (a plain class made a module, an attribute name, a walk of
children, a dict forward)."""


def sample(name: str, models: str, max_params: int = 0) -> list[zoo.Spec]:
    """The specs to run: the fixed sample, its first N plus a seeded random sample of the other
    models, or all; the other models with at most `max_params` parameters (0: any)."""
    fixed = zoo.SAMPLES[name]
    if models != "all" and int(models) <= len(fixed):
        return fixed[: int(models)]
    chosen = {s.name for s in fixed}
    rest = [s for s in zoo.list_specs(name) if s.name not in chosen]
    count = len(rest)
    if models != "all":
        random.Random(0).shuffle(rest)
        count = min(count, int(models) - len(fixed))
    return fixed + (zoo.within(name, rest, max_params, count) if max_params else rest[:count])


def figures(run: zoo.ZooRun, codes: list[str]) -> dict[str, tuple[str, str]]:
    """Row label -> (before fix, after fix); a row for each of `codes`."""
    comparable = [m for m in run.models if m.comparable]
    rows = {
        "models built": (
            f"{len(comparable)}/{len(run.models)}",
            f"{sum(m.built for m in comparable)}/{len(run.models)}",
        ),
        "models bit-exact with the original": (
            "-",
            f"{sum(m.problem is None for m in comparable)}/{len(run.models)}",
        ),
    }
    converted = Counter(f.code for f in run.first.fixed)
    before = Counter(f.code for f in run.first.fixed + run.first.left)
    serving = {id(f) for f in _serving_loops(run)}
    after = Counter(f.code for f in run.second.fixed + run.second.left if id(f) not in serving)
    calls_before = sum(n for code, n in before.items() if code not in NOTICES)
    done = sum(n for code, n in converted.items() if code not in NOTICES)
    calls_after = done + sum(n for code, n in after.items() if code not in NOTICES)
    rows["convertible calls converted"] = (
        f"0/{calls_before} (0.0 %)",
        f"{done}/{calls_after} ({_percent(done, calls_after)})",
    )
    rows["  of those, one module serving every iteration of an input-dependent loop"] = (
        "-",
        str(sum(serves_every_iteration(f) for f in run.first.fixed)),
    )
    for code in codes:
        label = f"  {code} {CODES[code]}" + (" (not a call)" if code in NOTICES else "")
        left = str(after[code]) + (f" ({converted[code]} converted)" if code < "MIG100" else "")
        rows[label] = (str(before[code]), left)
    rows.update(_run_lines_rows(run))
    rows.update(_prepare_rows(comparable))
    rows["  of those, with no finding at their source lines (silent skips)"] = (
        "-",
        str(len(run.silent)),
    )
    rows["files changed by fix: first run / second run"] = (
        str(len(run.first.changed)),
        str(len(run.second.changed)),
    )
    return rows


def _serving_loops(run: zoo.ZooRun) -> list[Finding]:
    """The second fix's MIG105 findings on the modules the first made to serve every
    iteration of a loop whose trip count depends on the input: calls converted (counted by
    the first fix), not left."""
    made = Counter((f.path, f.attr) for f in run.first.fixed if serves_every_iteration(f))
    found = []
    for f in run.second.left:
        if f.code != "MIG105" or not f.message.startswith("`self."):
            continue
        key = (f.path, f.message.split("`")[1].removeprefix("self."))
        if made[key] > 0:
            made[key] -= 1
            found.append(f)
    return found


def _on_run_lines(run: zoo.ZooRun, calls: list[Finding]) -> list[Finding]:
    """Those of `calls` on lines the comparable sampled models' forwards ran."""
    ran = {
        (path, line)
        for m in run.models
        if m.comparable
        for path, lines in m.original.get("lines", {}).items()
        for line in lines
    }
    root = run.package.parent.resolve()
    return [
        f for f in calls if (Path(f.path).resolve().relative_to(root).as_posix(), f.line) in ran
    ]


def left_on_run_lines(run: zoo.ZooRun) -> list[str]:
    """`path:line:col: CODE message` for each convertible call the first fix left on run lines."""
    root = run.package.parent.resolve()
    left = _on_run_lines(run, [f for f in run.first.left if f.code not in NOTICES])
    return sorted(
        f"{Path(f.path).resolve().relative_to(root).as_posix()}:{f.line}:{f.col}: "
        f"{f.code} {f.message}"
        for f in left
    )


def _run_lines_rows(run: zoo.ZooRun) -> dict[str, tuple[str, str]]:
    """The first fix's convertible calls: all, and those on lines the models' forwards ran."""
    calls = [f for f in run.first.fixed + run.first.left if f.code not in NOTICES]
    done = {id(f) for f in run.first.fixed if f.code not in NOTICES}
    on = _on_run_lines(run, calls)
    converted = sum(id(f) in done for f in on)
    left = Counter(f.code for f in on if id(f) not in done)
    shared = sum(f.code == "MIG103" and WEIGHTS_SHARED in f.message for f in on)
    return {
        "convertible calls converted, by the first fix's findings": (
            f"0/{len(calls)}",
            f"{len(done)}/{len(calls)} ({_percent(len(done), len(calls))})",
        ),
        "  of those, on lines the sampled models run": (
            f"0/{len(on)}",
            f"{converted}/{len(on)} ({_percent(converted, len(on))})",
        ),
        "  left on lines they run, by code": (
            "-",
            ", ".join(f"{code} {n}" for code, n in left.most_common()) or "0",
        ),
        "  of those left, calls of a module holding weights in every model built (MIG103 "
        "with evidence: its sites share them by design, no split is right)": ("-", str(shared)),
        "  converted on lines run, those left out": (
            f"0/{len(on) - shared}",
            f"{converted}/{len(on) - shared} ({_percent(converted, len(on) - shared)})",
        ),
    }


def _prepare_rows(models: list[zoo.ModelResult]) -> dict[str, tuple[str, str]]:
    traced = [
        m
        for m in models
        if m.built and "error" not in m.original["prepare"] and "error" not in m.migrated["prepare"]
    ]
    rows = {"prepare_model at run time: models fx traces": (f"{len(traced)}/{len(models)}",) * 2}
    for key, label in (
        ("converted", "ops it turns into modules"),
        ("copies", "reused stateless module calls it splits"),
        ("left", "ops it leaves as functions"),
        ("shared", "stateful modules called at several sites"),
    ):
        rows[f"  {label}"] = (
            str(sum(m.original["prepare"][key] for m in traced)),
            str(sum(m.migrated["prepare"][key] for m in traced)),
        )
    return rows


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def table(runs: list[zoo.ZooRun]) -> str:
    """One Markdown table, two columns (before, after fix) per zoo."""
    codes = sorted(
        {
            f.code
            for run in runs
            for f in run.first.fixed + run.first.left + run.second.fixed + run.second.left
        }
    )
    columns = [figures(run, codes) for run in runs]
    head = "| figure | " + " | ".join(f"{r.zoo} before fix | {r.zoo} after fix" for r in runs)
    lines = [head + " |", "|---|" + "---:|---:|" * len(runs)]
    for label in columns[0]:
        cells = [cell for rows in columns for cell in rows[label]]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def failures(run: zoo.ZooRun) -> list[str]:
    """One line per model that is not bit-exact or whose original fails, and fix problems."""
    lines = [
        f"{run.zoo} {m.name}: original fails: {_first_line(m.original['error'])}"
        for m in run.models
        if not m.comparable
    ]
    lines += [
        f"{run.zoo} {name}: {_first_line(problem)}" for name, problem in run.problems().items()
    ]
    lines += [f"{run.zoo} silent skip: {line}" for line in run.silent]
    return lines


def _first_line(text: str) -> str:
    """The stage and the exception line of a saved traceback (or the text's first line)."""
    lines = text.strip().splitlines()
    return lines[0] if len(lines) < 2 else f"{lines[0]} ... {lines[-1]}"


def _models(text: str) -> str:
    if text != "all" and not (text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"expected a number of models or `all`, got {text!r}")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--zoo", choices=list(zoo.ZOOS), action="append", help="one zoo (repeatable); default both"
    )
    parser.add_argument(
        "--models",
        type=_models,
        default=None,
        metavar="N|all",
        help="models per zoo (default: the fixed sample)",
    )
    parser.add_argument(
        "--max-params",
        type=float,
        default=50,
        metavar="M",
        help="with --models, leave out the models beyond the fixed sample that have more than M "
        "million parameters (default 50; 0: no limit)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="fix worker processes")
    parser.add_argument(
        "--evidence",
        action="store_true",
        help="give fix the run-time evidence of the sampled models (as `fix --evidence`)",
    )
    parser.add_argument(
        "--left",
        action="store_true",
        help="list the convertible calls left on lines the sampled models run, site by site",
    )
    args = parser.parse_args()
    runs, seconds = [], []
    for name in args.zoo or list(zoo.ZOOS):
        start = time.perf_counter()
        specs = (
            sample(name, args.models, int(args.max_params * 1e6))
            if args.models
            else zoo.SAMPLES[name]
        )
        with tempfile.TemporaryDirectory(prefix=f"zoo-{name}-") as workdir:
            runs.append(
                zoo.run_zoo(
                    name,
                    specs,
                    Path(workdir),
                    jobs=args.jobs,
                    prepare=True,
                    evidence=args.evidence,
                    lines=True,
                )
            )
        seconds.append(time.perf_counter() - start)
    print(table(runs))
    print()
    for run, total in zip(runs, seconds):
        steps = ", ".join(f"{step} {s:.1f}" for step, s in run.seconds.items())
        print(
            f"{run.zoo}: {total:.1f} s wall ({steps}: both sides built, run and compared, "
            f"while the second fix ran)"
        )
    if args.left:
        for run in runs:
            print(
                f"\n{run.zoo}: left on lines the sampled models run:",
                *left_on_run_lines(run),
                sep="\n",
            )
    problems = [line for run in runs for line in failures(run)]
    print(
        "\n".join(
            ["", "not bit-exact or failing:", *problems]
            if problems
            else ["", "every sampled model is bit-exact"]
        )
    )


if __name__ == "__main__":
    main()
