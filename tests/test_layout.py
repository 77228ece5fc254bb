"""New lines keep within the file's line length (its ruff or black `line-length`, else 88),
laid out as black lays out a call."""

from __future__ import annotations

import pytest

from migrator.cli import main
from migrator.rewrite.layout import call_text, line_length

MODEL = """import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.avg_pool2d(x, kernel_size=3, stride=2, padding=1, ceil_mode=True)
"""


def test_call_text_as_black_lays_it_out():
    assert call_text("self.a = M", ["x=1", "y=2"], 8, 88) == "self.a = M(x=1, y=2)"
    assert call_text("self.a = M", ["x=1", "y=2"], 8, 24) == "self.a = M(\n    x=1, y=2\n)"
    assert call_text("self.a = M", ["x=1", "y=2"], 8, 18) == "self.a = M(\n    x=1,\n    y=2,\n)"
    assert call_text("self.a = M", ["long_argument"], 8, 20) == "self.a = M(\n    long_argument\n)"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("[tool.ruff]\nline-length = 60\n", 60),
        ("[tool.black]\nline-length = 120\n", 120),
        ("[tool.ruff]\n[tool.black]\nline-length = 120\n", 88),  # ruff's table decides
        ("[tool.migrator]\n", 88),
    ],
)
def test_line_length_from_the_nearest_formatter_configuration(tmp_path, config, expected):
    (tmp_path / "pyproject.toml").write_text(config, encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    assert line_length(str(tmp_path / "pkg" / "net.py")) == expected


def test_ruff_toml_wins_over_a_pyproject_above(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n", encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "ruff.toml").write_text("line-length = 70\n", encoding="utf-8")
    assert line_length(str(tmp_path / "pkg" / "net.py")) == 70


@pytest.mark.parametrize(
    ("length", "created"),
    [
        (
            100,
            (
                "        self.avg_pool2d = nn.AvgPool2d(kernel_size=3, stride=2, padding=1, "
                "ceil_mode=True)\n"
            ),
        ),
        (
            88,
            (
                "        self.avg_pool2d = nn.AvgPool2d(\n"
                "            kernel_size=3, stride=2, padding=1, ceil_mode=True\n"
                "        )\n"
            ),
        ),
        (
            60,
            (
                "        self.avg_pool2d = nn.AvgPool2d(\n"
                "            kernel_size=3,\n"
                "            stride=2,\n"
                "            padding=1,\n"
                "            ceil_mode=True,\n"
                "        )\n"
            ),
        ),
    ],
)
def test_fix_wraps_created_lines_to_the_line_length(tmp_path, length, created):
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.ruff]\nline-length = {length}\n", encoding="utf-8"
    )
    path = tmp_path / "net.py"
    path.write_text(MODEL, encoding="utf-8")
    assert main(["fix", "-q", str(path)]) == 1
    assert path.read_text(encoding="utf-8") == (
        "import torch.nn as nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        + created
        + "\n    def forward(self, x):\n        return self.avg_pool2d(x)\n"
    )


def test_fix_splits_a_rewritten_call_that_grew_too_long(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 50\n", encoding="utf-8")
    path = tmp_path / "net.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, left: torch.Tensor, right: torch.Tensor):\n"
        "        return left * right + right  # sum\n",
        encoding="utf-8",
    )
    assert main(["fix", "-q", str(path)]) == 1
    assert path.read_text(encoding="utf-8").endswith(
        "    def forward(self, left: torch.Tensor, right: torch.Tensor):\n"
        "        return self.add(\n"
        "            self.mul(left, right), right\n"
        "        )  # sum\n"
    )


def test_fix_lays_out_again_a_rewritten_multiline_call_past_the_line_length(tmp_path):
    path = tmp_path / "net.py"
    head = (
        "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.left_branch = nn.ReLU()\n        self.right_branch = nn.ReLU()\n"
    )
    path.write_text(
        head + "\n    def forward(self, x):\n"
        "        return torch.cat(\n"
        "            [self.left_branch(x) * 2.0, self.right_branch(x) * 3.0, x * 4.0, x * 5.0], 1\n"
        "        )\n",
        encoding="utf-8",
    )
    assert main(["fix", "-q", str(path)]) == 1
    assert path.read_text(encoding="utf-8").endswith(
        "    def forward(self, x):\n"
        "        return self.cat(\n"
        "            self.mul(self.left_branch(x), 2.0),\n"
        "            self.mul_1(self.right_branch(x), 3.0),\n"
        "            self.mul_2(x, 4.0),\n"
        "            self.mul_3(x, 5.0),\n"
        "        )\n"
    )


OPS = """import torch
{imports}

class Net(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor):
        return (a + b) * (a - b) / a
"""


@pytest.mark.parametrize(
    ("imports", "expected"),
    [
        ("", "from migrator.nn import (\n    Add,\n    Div,\n    Mul,\n    Sub,\n)\n"),
        (  # an existing import the names join
            "from migrator.nn import Add\n",
            "from migrator.nn import (\n    Add,\n    Div,\n    Mul,\n    Sub,\n)\n",
        ),
    ],
)
def test_imports_that_do_not_fit_take_one_name_a_line(tmp_path, imports, expected):
    (tmp_path / "ruff.toml").write_text("line-length = 40\n", encoding="utf-8")
    path = tmp_path / "net.py"
    path.write_text(OPS.format(imports=imports), encoding="utf-8")
    assert main(["fix", "-q", str(path)]) == 1
    assert path.read_text(encoding="utf-8").startswith("import torch\n" + expected)
