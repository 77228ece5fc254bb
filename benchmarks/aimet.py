"""AIMET on real zoos, before and after `migrator fix --for aimet`.

A copy of installed torchvision's and timm's model code is migrated with `--for aimet` (AIMET's
own op-module classes where it has them), a sample of their models is built from the original
and from the copy (bit-exact check as in tests/zoo.py), and on both sides AIMET (aimet-torch
2.42.0, installed with `--no-deps` into a cache folder: tests/zoo.py `install_aimet`) is asked:

- `ModelValidator.validate_model`: passes or not (reused leaf modules; ops with no module);
- `prepare_model`: the modules it adds, by class, plain and with the op-module classes in
  `module_classes_to_exclude` (so that it does not trace into them and re-wrap their op).

    python benchmarks/aimet.py [--zoo timm|torchvision] [--models N] [--cache DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import zoo  # noqa: E402  (tests/zoo.py)


def tally(models: list[zoo.ModelResult], side: str, key: str) -> Counter[str]:
    """Modules `prepare_model` added on `side` over `models`, by class."""
    total: Counter[str] = Counter()
    for model in models:
        total.update(getattr(model, side).get("aimet", {}).get(key, {}))
    return total


def report(run: zoo.ZooRun) -> list[str]:
    models = [m for m in run.models if m.comparable]
    lines = [f"## {run.zoo}: {len(models)} models", ""]
    exact = sum(m.problem is None for m in models)
    after = "after `fix --for aimet`" if run.zoo != "torchvision" else "after `fix`"
    lines += [f"| figure | before fix | {after} |", "|---|---:|---:|"]
    lines.append(f"| models bit-exact with the original | - | {exact}/{len(models)} |")
    valid = [
        sum(getattr(m, s).get("aimet", {}).get("valid", False) for m in models)
        for s in ("original", "migrated")
    ]
    lines.append(
        f"| AIMET validator passes | {valid[0]}/{len(models)} | {valid[1]}/{len(models)} |"
    )
    sims = [
        sum(getattr(m, s).get("aimet", {}).get("quantsim") == "ok" for m in models)
        for s in ("original", "migrated")
    ]
    lines.append(
        f"| AIMET QuantSim builds and calibrates | {sims[0]}/{len(models)} | {sims[1]}/{len(models)} |"
    )
    reused = [
        sum(bool(getattr(m, s).get("aimet", {}).get("reused")) for m in models)
        for s in ("original", "migrated")
    ]
    lines.append(f"| models with reused leaf modules | {reused[0]} | {reused[1]} |")
    for key in ("added", "added excluding op modules"):
        before, after = tally(models, "original", key), tally(models, "migrated", key)
        lines.append(
            f"| prepare_model: modules {key} | {sum(before.values())} | {sum(after.values())} |"
        )
        for kind in sorted(before.keys() | after.keys(), key=lambda k: -before[k] - after[k]):
            lines.append(f"|   {kind} | {before[kind]} | {after[kind]} |")
    missing = [tally(models, s, "missing") for s in ("original", "migrated")]
    lines.append(
        f"| validator: ops with no module | {sum(missing[0].values())} | "
        f"{sum(missing[1].values())} |"
    )
    for kind in sorted(missing[0].keys() | missing[1].keys(), key=lambda k: -missing[0][k]):
        lines.append(f"|   {kind} | {missing[0][kind]} | {missing[1][kind]} |")
    for model in models:
        for side in ("original", "migrated"):
            found = getattr(model, side).get("aimet", {})
            if found.get("reused") or found.get("quantsim", "ok") != "ok":
                lines.append(
                    f"- {model.name} {side}: reused {found.get('reused')}, "
                    f"QuantSim {found.get('quantsim')}"
                )
    problems = run.problems()
    if problems:
        lines += ["", "problems:"] + [f"- {k}: {v[:300]}" for k, v in problems.items()]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zoo", choices=list(zoo.ZOOS), action="append")
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "aimet")
    args = parser.parse_args()
    aimet = zoo.install_aimet(args.cache)
    for name in args.zoo or list(zoo.ZOOS):
        with tempfile.TemporaryDirectory() as work:
            specs = zoo.SAMPLES[name][: args.models]
            # aimet-torch imports torchvision: torchvision's own sources cannot import AIMET's
            # classes (a circular import), so they are migrated with migrator's
            toolkit = "" if name == "torchvision" else "aimet"
            run = zoo.run_zoo(name, specs, Path(work), aimet=aimet, toolkit=toolkit)
            print("\n".join(report(run)), flush=True)


if __name__ == "__main__":
    main()
