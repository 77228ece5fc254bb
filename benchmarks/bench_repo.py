"""`migrator check` end to end at repository scale, each figure next to its baseline:

1. speed: the CLI over a large tree of real model code (default: the installed torch package's
   sources), on one process and with `-j 2`, against `ast.parse` over the same files;
2. speed and memory over dense model code: a synthetic tree of copies of the example and
   fixture models, and a tree 10 times larger (100,000+ lines): flat memory means the peak RSS
   is bounded by the largest file, not by the number of files;
3. the pre-commit case: `migrator check` on one model file (an unchanged fixture, or any file
   given, such as one of a large package that its analysis reads) against
   `python -c "import libcst"`.

    python benchmarks/bench_repo.py [TREE] [--rounds N] [--one-file FILE [--only-one-file]]

Every step runs as its own process, timed (wall clock, best of the rounds) and measured (peak
RSS of it and its workers) by a small wrapper process. migrator's modules are byte-compiled first,
as an installed package's are: with `PYTHONDONTWRITEBYTECODE` set (or a fresh checkout) every run
would compile them again. `check`'s ratio to `ast.parse` is printed
beside its ceiling (`bench_scale.CHECK_CEILING`).
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_scale import CHECK_CEILING, within

ROOT = Path(__file__).resolve().parent.parent
ONE_FILE = ROOT / "fixtures" / "cases" / "resnet_blocks.after.py"
"""A migrated model: what pre-commit hands over for a file that needs no change."""
MODEL_FILES = sorted(
    [
        *(ROOT / "examples" / "models").glob("*.py"),
        *(ROOT / "fixtures" / "cases").glob("*.before.py"),
    ]
)

MEASURE = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
seconds = time.perf_counter() - start
print(json.dumps([seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))
"""
"""Run a command; print its wall-clock seconds and the peak RSS (KiB) of it and its children."""

AST_BASELINE = """
import ast, sys
from migrator.files import SourceError, discover, read_source
files = lines = 0
for path in discover(sys.argv[1:]):
    try:
        text = read_source(path).text
        ast.parse(text)
    except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
        continue
    files += 1
    lines += text.count("\\n")
print(files, lines)
"""
"""Discover, read and `ast.parse` every file migrator would look at: the floor for `check`."""


def measure(args: list[str], rounds: int) -> tuple[float, float]:
    """(best seconds, largest peak RSS in MiB) of a command over `rounds` runs."""
    runs = []
    for _ in range(rounds):
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, *args], capture_output=True, text=True, check=True
        ).stdout
        runs.append(json.loads(out))
    return min(s for s, _ in runs), max(kib for _, kib in runs) / 1024


def migrator(*args: str) -> list[str]:
    return [sys.executable, "-m", "migrator", *args]


def synthetic_tree(folder: Path, packages: int) -> Path:
    """`packages` copies of the example and fixture models, each copy a package."""
    for i in range(packages):
        package = folder / f"zoo_{i}"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        for model in MODEL_FILES:
            shutil.copyfile(model, package / model.name.replace(".before", ""))
    return folder


def row(label: str, *cells: str) -> None:
    print(f"{label:<38}" + "".join(f"{c:>12}" for c in cells))


def ast_baseline(tree: Path) -> list[str]:
    return [sys.executable, "-c", AST_BASELINE, str(tree)]


def count(tree: Path) -> tuple[int, int]:
    """(files, lines) that parse, among those migrator would look at."""
    out = subprocess.run(ast_baseline(tree), capture_output=True, text=True, check=True).stdout
    files, lines = out.split()
    return int(files), int(lines)


ZOO_STEPS = {
    "ast.parse (baseline, 1 process)": ast_baseline,
    "migrator check -j 1": lambda tree: migrator("check", "-j", "1", str(tree)),
    "migrator check -j 2": lambda tree: migrator("check", "-j", "2", str(tree)),
    "migrator fix --check -j 1": lambda tree: migrator("fix", "--check", str(tree)),
}


def speed(tree: Path, rounds: int) -> None:
    files, lines = count(tree)
    print(f"\n1. speed over a large tree: {tree} ({files} files, {lines:,} lines)")
    row("step", "seconds", f"x (<={CHECK_CEILING:g})", "peak MiB")
    base, base_rss = measure(ast_baseline(tree), rounds)
    row("ast.parse (baseline, 1 process)", f"{base:.2f}", "1.00", f"{base_rss:.0f}")
    for jobs in ("1", "2"):
        seconds, rss = measure(migrator("check", "-j", jobs, str(tree)), rounds)
        ratio = within(seconds / base, CHECK_CEILING, 2)
        row(f"migrator check -j {jobs}", f"{seconds:.2f}", ratio, f"{rss:.0f}")


def zoo(rounds: int) -> None:
    """Speed and memory over dense model code: a tree and one 10 times larger."""
    with tempfile.TemporaryDirectory() as tmp:
        small = synthetic_tree(Path(tmp, "small"), 5)
        large = synthetic_tree(Path(tmp, "large"), 50)
        (small_files, small_lines), (large_files, large_lines) = count(small), count(large)
        print(
            f"\n2. synthetic model zoo: copies of the example and fixture models, "
            f"{small_files} files ({small_lines:,} lines) and 10x: {large_files} files "
            f"({large_lines:,} lines)"
        )
        row("step", "small s", "10x s", "x ast (10x)", "small MiB", "10x MiB", "10x/small")
        print(f"(check's ceiling: {CHECK_CEILING:g} x ast.parse)")
        base = None
        for label, command in ZOO_STEPS.items():
            s_small, rss_small = measure(command(small), rounds)
            s_large, rss_large = measure(command(large), rounds)
            base = base or s_large
            row(
                label,
                f"{s_small:.2f}",
                f"{s_large:.2f}",
                within(s_large / base, CHECK_CEILING, 2)
                if label.startswith("migrator check")
                else f"{s_large / base:.2f}",
                f"{rss_small:.0f}",
                f"{rss_large:.0f}",
                f"{rss_large / rss_small:.2f}",
            )


def one_file(path: Path, rounds: int) -> None:
    print(f"\n3. pre-commit case: one model file ({path})")
    row("step", "seconds", "x libcst", "peak MiB")
    base, _ = measure([sys.executable, "-c", "import libcst"], rounds)
    seconds, rss = measure(migrator("check", str(path)), rounds)
    row('python -c "import libcst" (baseline)', f"{base:.3f}", "1.00")
    row("migrator check FILE", f"{seconds:.3f}", f"{seconds / base:.2f}", f"{rss:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", help="default: the installed torch package")
    parser.add_argument("--rounds", type=int, default=1, help="runs per step (best is shown)")
    parser.add_argument(
        "--one-file",
        type=Path,
        default=ONE_FILE,
        help="the pre-commit case's file (default: a migrated fixture; a model file of a large "
        "package, such as transformers' models/bert/modeling_bert.py, reads its package)",
    )
    parser.add_argument(
        "--only-one-file", action="store_true", help="run the pre-commit case alone"
    )
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "migrator", quiet=1)
    if not args.only_one_file:
        tree = Path(args.tree or Path(importlib.util.find_spec("torch").origin).parent)
        speed(tree, args.rounds)
        zoo(args.rounds)
    one_file(args.one_file, max(args.rounds, 7) if args.one_file == ONE_FILE else args.rounds)


if __name__ == "__main__":
    main()
