"""`migrator check` and `migrator fix` against the `ast.parse` floor, over real trees and as
files grow:

1. timm and torchvision's models, every file read once, then `ast.parse`, `check` and `fix`
   (the rewritten text is computed, nothing is written) of all of them in this process;
2. one generated file with 500 / 1,000 / 2,000 model classes, and one with a single forward of
   2,500 / 5,000 / 10,000 ops: seconds, ratio to the parse, and the factor from the previous
   size (linear: 2.0);
3. peak RSS of `migrator fix` on a generated 50,000-line file, in a process of its own, next to
   one that only reads and parses it.

    python benchmarks/bench_scale.py [--rounds N]

Figures are the best of `--rounds` runs in CPU seconds of the process (`time.process_time`: on a
busy machine, the time spent waiting for a core does not count), each after a garbage
collection; the floor is measured in the same run. Each ratio is printed beside
its ceiling (issue 12): `check` within `CHECK_CEILING` x `ast.parse`, and a doubled size at most
`DOUBLING_CEILING` x the time (linear); `ok` says whether the figure is within it.
"""

from __future__ import annotations

import argparse
import ast
import gc
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from migrator.config import Config
from migrator.files import SourceError, discover, read_source
from migrator.runner import Processed, process

CHECK_CEILING = 3.0
"""`check` should take at most this many times `ast.parse` of the same files."""
DOUBLING_CEILING = 2.0
"""Doubling the classes of a file or the ops of a forward should at most double the time."""


def within(value: float, ceiling: float, digits: int = 1) -> str:
    """`value` beside its ceiling: `4.2 > 3` or `2.8 ok`."""
    shown = f"{value:.{digits}f}"
    return f"{shown} ok" if value <= ceiling else f"{shown} > {ceiling:g}"


CLASS = '''

class Block{i}({base}):
    """Block {i}."""

    def __init__(self, dim):
        super().__init__(dim)
        self.fc{i} = nn.Linear(dim, dim)

    def forward(self, x):
        y = F.relu(self.fc{i}(x))
        y = torch.sigmoid(y) * x
        return x + F.dropout(y, 0.1)
'''
"""One model class of the generated many-class file: three functional ops and two operators."""

HEAD = '''"""Generated model file."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block0(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc0 = nn.Linear(dim, dim)

    def forward(self, x):
        return F.relu(self.fc0(x))
'''

OPS = (
    "x = F.relu(x)",
    "x = x + y",
    "y = torch.sigmoid(x) * y",
    "x = torch.cat([x, y], 1)",
    "x = F.gelu(x)",
)


def many_classes(count: int) -> str:
    """A file with `count` model classes in families of four: a subclass of `nn.Module`, and
    three subclasses each of the one before."""
    return HEAD + "".join(
        CLASS.format(i=i, base="nn.Module" if i % 4 == 1 else f"Block{i - 1}")
        for i in range(1, count)
    )


def long_forward(ops: int) -> str:
    """A file with one model whose forward runs `ops` ops."""
    body = "\n".join(f"        {OPS[i % len(OPS)]}" for i in range(ops))
    return (
        HEAD + "\n\nclass Long(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n\n    def forward(self, x, y):\n"
        f"{body}\n        return x\n"
    )


def best(function: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        gc.collect()
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return min(times)


def parse_all(paths: list[Path]) -> None:
    for path in paths:
        ast.parse(read_source(path).text)


def run_all(paths: list[Path], rewrite: bool) -> int:
    """Check or fix every file in this process; the number of files fix would change."""
    changed = 0
    for path in paths:
        outcome = process(path, Config(), rewrite)
        changed += isinstance(outcome, Processed) and outcome.changed
    return changed


def parseable(folder: Path) -> list[Path]:
    paths = []
    for path in discover([str(folder)]):
        try:
            ast.parse(read_source(path).text)
        except (SourceError, SyntaxError, ValueError):
            continue
        paths.append(path)
    return paths


def row(label: str, *cells: object) -> None:
    print(f"{label:<22}" + "".join(f"{c:>12}" for c in cells))


def trees(rounds: int) -> None:
    print("\n1. real trees (seconds; x = ratio to ast.parse of the same files)")
    row(
        "tree",
        "files",
        "lines",
        "ast.parse",
        "check",
        f"x (<={CHECK_CEILING:g})",
        "fix",
        "x",
        "changed",
    )
    for name, sub in (("timm", ""), ("torchvision", "models")):
        spec = importlib.util.find_spec(name)  # found, not imported
        folder = Path(spec.origin).parent / sub
        paths = parseable(folder)
        lines = sum(read_source(p).text.count("\n") for p in paths)
        floor = best(lambda: parse_all(paths), rounds)
        check = best(lambda: run_all(paths, False), rounds)
        fix = best(lambda: run_all(paths, True), rounds)
        changed = run_all(paths, True)
        row(
            f"{name} {sub}".strip(),
            len(paths),
            f"{lines:,}",
            f"{floor:.2f}",
            f"{check:.2f}",
            within(check / floor, CHECK_CEILING),
            f"{fix:.2f}",
            f"{fix / floor:.1f}",
            changed,
        )


def series(
    label: str, make: Callable[[int], str], sizes: tuple[int, ...], rounds: int, folder: Path
) -> None:
    print(f"\n2. {label} (seconds; x = ratio to ast.parse; 2x = factor from the previous size)")
    row(
        "size",
        "lines",
        "ast.parse",
        "check",
        f"x (<={CHECK_CEILING:g})",
        f"2x (<={DOUBLING_CEILING:g})",
        "fix",
        "x",
        "2x",
    )
    previous = None
    for size in sizes:
        path = folder / f"gen_{size}.py"
        path.write_text(make(size))
        text = path.read_text()
        floor = best(lambda: ast.parse(text), rounds)
        check = best(lambda: process(path, Config(), False), rounds)
        fix = best(lambda: process(path, Config(), True), rounds)
        factor = (
            ("", "")
            if previous is None
            else (within(check / previous[0], DOUBLING_CEILING, 2), f"{fix / previous[1]:.2f}")
        )
        row(
            f"{size:,}",
            f"{text.count(chr(10)):,}",
            f"{floor:.3f}",
            f"{check:.3f}",
            within(check / floor, CHECK_CEILING),
            factor[0],
            f"{fix:.3f}",
            f"{fix / floor:.1f}",
            factor[1],
        )
        previous = (check, fix)


PEAK = """
import ast, json, resource, sys, time
from pathlib import Path
from migrator.config import Config
from migrator.runner import process
path = Path(sys.argv[2])
start = time.process_time()
if sys.argv[1] == "parse":
    ast.parse(path.read_text())
else:
    assert process(path, Config(), True).changed
seconds = time.process_time() - start
print(json.dumps([seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]))
"""
"""Parse or fix one file in a fresh process; print seconds and peak RSS (MiB)."""


def peak(folder: Path) -> None:
    path = folder / "gen_50k.py"
    path.write_text(many_classes(3850))
    lines = path.read_text().count("\n")
    print(
        f"\n3. one generated file of {lines:,} lines, {path.stat().st_size / 2**20:.1f} MiB, "
        "each step in a fresh process"
    )
    row("step", "seconds", "peak MiB")
    for step in ("parse", "fix"):
        out = subprocess.run(
            [sys.executable, "-c", PEAK, step, str(path)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        seconds, mib = json.loads(out)
        row("ast.parse" if step == "parse" else "migrator fix", f"{seconds:.2f}", f"{mib:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs per figure (best is shown)")
    args = parser.parse_args()
    trees(args.rounds)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        series("one file, many classes", many_classes, (500, 1000, 2000), args.rounds, folder)
        series("one forward, many ops", long_forward, (2500, 5000, 10000), args.rounds, folder)
        peak(folder)


if __name__ == "__main__":
    main()
