"""New imports go where isort (ruff's `I`, black's profile) puts them: their section, in order,
never after relative or first-party imports, the same lines whether LibCST or text insertion
writes them; imports the rewrite left unused go."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from migrator.rewrite.codemod import insert_imports
from migrator.rewrite.imports import insertions
from migrator.rewrite.unused import drop_unused_imports


def _inserted(source: str, codes: list[str], package: str = "") -> str:
    module = cst.parse_module(source)
    return module.with_changes(body=insert_imports(module.body, codes, package)).code


def _inserted_as_text(source: str, codes: list[str], package: str = "") -> str | None:
    lines = source.split("\n")
    added = insertions(ast.parse(source), lines, codes, package)
    if added is None:
        return None
    return "".join(added.get(i, "") + line + "\n" for i, line in enumerate(lines, 1))[:-1]


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
    assert _inserted_as_text(source, codes, package) == expected


WRAPPED = "from migrator.nn import (\n    Add,\n    Mul,\n)"


@pytest.mark.parametrize(
    "source",
    [
        "import torch\n\nX = 1\n",
        "# licence\n\nimport torch\n",  # the module's header stays first
        "# licence\nimport os\n",
        '"""Doc."""\n# about os\n\n# more\nimport os\n\n# about torch\nimport torch\n',
        '"""Doc."""\n\nX = 1\n\n\nclass A:\n    pass\n',  # no import yet: after the docstring
        "X = 1\n\n\ndef f():\n    pass\n",
        "@decorated\ndef f():\n    pass\n",
        "from __future__ import annotations\n\n# local\nfrom . import layers\n",
        "import os\nimport zlib\n\n\n# a comment\n\nclass A:\n    pass\n",
        "import torch  # why\n\nimport pkg.layers\nfrom pkg import zoo\nfrom .x import y\n",
        "import os\n\n\n# end\n",
        "try:\n    import torch\nexcept ImportError:\n    pass\nimport os\n",
        '("""Doc.""")\nimport sys\n',
    ],
)
@pytest.mark.parametrize(
    "codes",
    [
        ["from migrator.nn import Add"],
        [WRAPPED, "from pkg.layers import Mix"],
        ["import aaa", "from zzz import Z", "from . import near", "import os.path"],
        ["from __future__ import annotations"],
    ],
)
def test_text_insertion_writes_what_libcst_writes(source, codes):
    assert _inserted_as_text(source, codes, "pkg") == _inserted(source, codes, "pkg")


@pytest.mark.parametrize(
    "source",
    [
        "import os; import sys\n",  # statements sharing a line
        '"""Doc.""" "more"\nimport os\n',  # a docstring of two strings
        "import torch . nn\n",  # a module spelled otherwise than `ast` gives it
        "import os",  # no line break at the end
    ],
)
def test_text_insertion_leaves_unplain_tops_to_libcst(source):
    assert _inserted_as_text(source, ["from migrator.nn import Add"]) is None


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
