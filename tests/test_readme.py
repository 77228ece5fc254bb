"""The README's catalog and code tables, and its diff of a real timm block, are generated from
the code; they must be current.

Regenerate with `UPDATE_README=1 python -m pytest tests/test_readme.py`.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import tempfile
from importlib.util import find_spec
from pathlib import Path

from migrator import catalog, findings
from test_cli import migrator

README = Path(__file__).resolve().parent.parent / "README.md"
TIMM_FILE = "timm/models/_efficientnet_blocks.py"
TIMM_CLASSES = ("SqueezeExcite", "InvertedResidual")
"""The blocks of `TIMM_FILE` the README shows the rewrite of (with the file's new imports)."""


def timm_diff() -> str | None:
    """`migrator fix --diff` of a copy of the installed timm's MobileNet/EfficientNet blocks, cut
    to the import hunk and the hunks of `TIMM_CLASSES` (None when timm is not installed)."""
    spec = find_spec("timm")
    if spec is None or not spec.submodule_search_locations:
        return None
    source = Path(next(iter(spec.submodule_search_locations))).parent / TIMM_FILE
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / TIMM_FILE
        copy.parent.mkdir(parents=True)
        shutil.copyfile(source, copy)
        result = migrator("fix", "--diff", "-q", TIMM_FILE, cwd=Path(tmp), env={"NO_COLOR": "1"})
    assert result.returncode == 1, result.stderr
    classes = [
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.parse(source.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ClassDef) and node.name in TIMM_CLASSES
    ]
    first_class = min(
        n.lineno
        for n in ast.parse(source.read_text(encoding="utf-8")).body
        if isinstance(n, ast.ClassDef)
    )
    header, *hunks = re.split(r"(?m)^(?=@@ )", result.stdout)
    kept = []
    for hunk in hunks:
        start = int(re.match(r"@@ -(\d+)", hunk).group(1))
        if start < first_class or any(low - 3 <= start <= high for low, high in classes):
            kept.append(hunk)
    return f"```diff\n{header}{''.join(kept).rstrip()}\n```"


SECTIONS = {
    "catalog": catalog.markdown_table,
    "codes": findings.markdown_table,
    "timm-diff": timm_diff,
}


def _render(text: str) -> str:
    for name, make in SECTIONS.items():
        table = make()
        if table is None:  # what generates it is not installed: left as it is
            continue
        text = re.sub(
            rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)",
            lambda m, t=table: f"{m.group(1)}{t}\n{m.group(2)}",
            text,
            flags=re.S,
        )
    return text


def test_readme_tables_are_current():
    text = README.read_text(encoding="utf-8")
    for name in SECTIONS:  # a lost marker would leave its table unchecked
        assert text.count(f"<!-- {name}:start -->\n") == text.count(f"<!-- {name}:end -->") == 1
    rendered = _render(text)
    if os.environ.get("UPDATE_README") and rendered != text:
        README.write_text(rendered, encoding="utf-8")
        text = rendered
    assert text == rendered


def test_readme_test_command_is_what_ci_runs():
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert f"```sh\n{ci}\n```" in README.read_text(encoding="utf-8")
