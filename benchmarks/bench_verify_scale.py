"""Wall seconds of `pytest --migrator-verify` on 12 targets, on one worker and on two.

    python benchmarks/bench_verify_scale.py [--targets 12] [--workers 1 2] [--depth 80]

Makes a temporary project: a git repository holding `--targets` models (convolutions,
functionals, residual blocks with a `+` and a reused ReLU; widths vary, depths from `--depth`:
80 blocks make a target a few seconds of work, as a small real model is), committed as written and
migrated by `fix` in the work tree, one `[[tool.migrator.verify]]` entry each. Then times, as
separate processes: `migrator verify` (one process, the baseline), `pytest --migrator-verify`
alone and with `-n N` (pytest-xdist) for each N; every run must pass every target. Wall
seconds show the speed-up on an idle machine; CPU seconds (the runs and their workers) what
the workers cost.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from migrator.rewrite.engine import fix_text
from migrator.rewrite.project import Project

REPO = Path(__file__).resolve().parents[1]
MODEL = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv = nn.Conv2d(width, width, 3, padding=1)
        self.bn = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()

    def forward(self, x):
        y = self.relu(self.bn(self.conv(x)))
        return self.relu(y + x)


class Net(nn.Module):
    def __init__(self, width={width}, depth={depth}):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.blocks = nn.Sequential(*[Block(width) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = self.blocks(x)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return F.softmax(self.head(x), dim=1)


def example_inputs():
    return (torch.randn(2, 3, 16, 16),)
"""


def make_project(root: Path, count: int, depth: int) -> None:
    """`count` models committed as written, migrated in the work tree."""
    zoo = root / "zoo"
    zoo.mkdir()
    (zoo / "__init__.py").write_text("")
    sources = {
        f"m{i:02d}.py": MODEL.format(width=8 + 4 * (i % 4), depth=depth + i % 3)
        for i in range(count)
    }
    for name, text in sources.items():
        (zoo / name).write_text(text)
    (root / "pyproject.toml").write_text(
        "".join(f'[[tool.migrator.verify]]\ntarget = "zoo/{name}:Net"\n\n' for name in sources)
    )
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "models"]):
        subprocess.run([*git, *args], cwd=root, check=True)
    for name, text in sources.items():
        migrated = fix_text(text, str(zoo / name), Project()).text
        assert migrated != text
        (zoo / name).write_text(migrated)


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system of the run and its workers)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before, start = os.times(), time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds, after = time.perf_counter() - start, os.times()
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    cpu = after.children_user + after.children_system - before.children_user
    return seconds, cpu - before.children_system


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=12)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--depth", type=int, default=80, help="fewest residual blocks a model has")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        make_project(root, args.targets, args.depth)
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        plugin = ["--migrator-verify", "-p", "migrator.pytest_plugin"]
        rows = [
            (
                "`migrator verify` (one process)",
                timed([sys.executable, "-m", "migrator", "verify"], root),
            )
        ]
        rows.append(("`pytest --migrator-verify` (no xdist)", timed([*pytest, *plugin], root)))
        for workers in args.workers:
            rows.append(
                (
                    f"`pytest --migrator-verify -n {workers}`",
                    timed([*pytest, *plugin, "-n", str(workers)], root),
                )
            )
    base = rows[0][1][0]
    load = ", ".join(f"{n:.1f}" for n in os.getloadavg())
    print(f"{args.targets} targets, {os.cpu_count()} CPUs, load average {load}")
    print("| run | wall s | x one process | CPU s |")
    print("|---|---:|---:|---:|")
    for name, (seconds, cpu) in rows:
        print(f"| {name} | {seconds:.1f} | {seconds / base:.2f} | {cpu:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
