"""New imports go where isort (ruff's `I`, black's profile) puts them: their section, in order,
never after relative or first-party imports; imports the rewrite left unused go."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from migrator.rewrite.imports import insert_imports
from migrator.rewrite.unused import drop_unused_imports


def _inserted(source: str, codes: list[str], package: str = "") -> str:
    module = cst.parse_module(source)
    return module.with_changes(body=insert_imports(module.body, codes, package, 0)).code


@pytest.mark.parametrize(
    ("source", "codes", "package", "expected"),
    [
        (  # a third-party section of its own between the standard library and local imports
            '"""Doc."""\nimport os\n\nfrom .base import Base\n\nX = 1\n',
            ["from migrator.nn import Add"],
            "",
            (
                '"""Doc."""\nimport os\n\nfrom migrator.nn import Add\n\nfrom .base import Base\n\n'
                "X = 1\n"
            ),
        ),
        (  # in order inside the section: `import x` first, then `from` imports by module
            "import torch\nimport torch.nn as nn\nfrom torch import Tensor\n\nfrom pkg import a\n",
            ["import timm", "from migrator.nn import Mul", "from torch import nn"],
            "pkg",
            (
                "import timm\nimport torch\nimport torch.nn as nn\nfrom migrator.nn import Mul\n"
                "from torch import Tensor\nfrom torch import nn\n\nfrom pkg import a\n"
            ),
        ),
        (  # a project's own ops module is first party
            "import torch\n\nfrom pkg.layers import Swish\nfrom pkg.zoo import net\n",
            ["from pkg.quant_ops import Add"],
            "pkg",
            (
                "import torch\n\nfrom pkg.layers import Swish\nfrom pkg.quant_ops import Add\n"
                "from pkg.zoo import net\n"
            ),
        ),
        (  # only local imports: the new section comes first, a blank line between
            "from __future__ import annotations\n\nfrom . import layers\n",
            ["from torch import nn"],
            "",
            "from __future__ import annotations\n\nfrom torch import nn\n\nfrom . import layers\n",
        ),
    ],
)
def test_new_imports_take_their_isort_place(source, codes, package, expected):
    assert _inserted(source, codes, package) == expected


BEFORE = (
    "import math\n\nimport torch.nn.functional as F\n\nfrom torch.nn.functional import gelu, relu\n"
)


def _dropped(after: str, path: str = "net.py", before: str = BEFORE) -> str:
    source = before + "F.relu(x)\ngelu(relu(x))\n"
    return drop_unused_imports(ast.parse(source), source, after, path)


def test_imports_the_rewrite_left_unused_are_dropped():
    assert (
        _dropped(BEFORE + "gelu(y)\n")
        == "import math\n\nfrom torch.nn.functional import gelu\n" + "gelu(y)\n"
    )


def test_imports_still_named_anywhere_are_kept():
    kept_f = "import math\n\nimport torch.nn.functional as F\n\n"
    assert _dropped(BEFORE + "F.relu(y)\n") == kept_f + "F.relu(y)\n"  # `.relu`: an attribute
    assert _dropped(BEFORE + "'see F'\n") == kept_f + "'see F'\n"
    all_relu = "__all__ = ['relu']\n"
    assert _dropped(BEFORE + all_relu) == (
        "import math\n\nfrom torch.nn.functional import relu\n" + all_relu
    )
    assert _dropped(BEFORE, "pkg/__init__.py") == BEFORE  # may be re-exports
    noqa = BEFORE.replace("as F\n", "as F  # noqa: F401\n")
    assert _dropped(noqa) == "import math\n\nimport torch.nn.functional as F  # noqa: F401\n\n"
    crlf = BEFORE.replace("\n", "\r\n")
    assert _dropped(crlf) == "import math\r\n\r\n"
