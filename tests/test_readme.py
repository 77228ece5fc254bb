"""The README's catalog and code tables are generated from the code; they must be current.

Regenerate with `UPDATE_README=1 python -m pytest tests/test_readme.py`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from migrator import catalog, findings

README = Path(__file__).resolve().parent.parent / "README.md"
SECTIONS = {"catalog": catalog.markdown_table, "codes": findings.markdown_table}


def _render(text: str) -> str:
    for name, table in SECTIONS.items():
        text = re.sub(
            rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)",
            lambda m, t=table(): f"{m.group(1)}{t}\n{m.group(2)}",
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
