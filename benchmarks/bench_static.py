"""Speed of the static path: `check` and `fix` over a large tree of real model code (the installed
torch package's own sources), side by side with the `ast.parse` baseline over the same files.

    python benchmarks/bench_static.py [TREE]
"""

from __future__ import annotations

import ast
import subprocess
import sys
import time
from pathlib import Path

from migrator.files import SourceError, read_source
from migrator.rewrite.engine import check_text, fix_text
from migrator.rewrite.project import Project


def _tree() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    import importlib.util

    return Path(importlib.util.find_spec("torch").origin).parent


def _sources(tree: Path) -> list[tuple[str, str]]:
    sources = []
    for path in sorted(tree.rglob("*.py")):
        try:
            text = read_source(path).text
            ast.parse(text)
        except (SourceError, SyntaxError, ValueError):
            continue
        sources.append((str(path), text))
    return sources


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _startup(args: list[str]) -> float:
    best = min(_time(lambda: subprocess.run(args, check=False, capture_output=True))
               for _ in range(5))
    return best


def main() -> None:
    sources = _sources(_tree())
    lines = sum(text.count("\n") for _, text in sources)
    parse = min(_time(lambda: [ast.parse(t) for _, t in sources]) for _ in range(2))
    check = min(_time(lambda: [check_text(t, p, Project()) for p, t in sources]) for _ in range(2))
    fix = _time(lambda: [fix_text(t, p, Project()) for p, t in sources])
    print(f"tree: {len(sources)} files, {lines} lines")
    print(f"{'step':<34}{'seconds':>10}{'x ast.parse':>14}")
    print(f"{'ast.parse (baseline)':<34}{parse:>10.2f}{1:>14.2f}")
    print(f"{'check (analysis, no rewrite)':<34}{check:>10.2f}{check / parse:>14.2f}")
    print(f"{'fix (analysis + LibCST rewrite)':<34}{fix:>10.2f}{fix / parse:>14.2f}")
    example = str(Path(__file__).resolve().parent.parent / "examples" / "models" / "resnet.py")
    base = _startup([sys.executable, "-c", "import libcst"])
    one = _startup([sys.executable, "-m", "migrator", "check", example])
    label = 'python -c "import libcst" (baseline)'
    print(f"{label:<34}{base:>10.3f}")
    print(f"{'migrator check on one model file':<34}{one:>10.3f}{one / base:>14.2f}  (x import libcst)")


if __name__ == "__main__":
    main()
