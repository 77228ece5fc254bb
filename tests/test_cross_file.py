"""Names across files: a subclass in another file never takes, or silently keeps, the name of a
module that migrator creates in its base class."""

from __future__ import annotations

from pathlib import Path

from migrator.config import Settings
from migrator.runner import run

TREE = Path(__file__).resolve().parent.parent / "fixtures" / "trees" / "base_in_other_package"
BASE = (TREE / "pkg" / "base.before.py").read_text(encoding="utf-8")
CLASHING = (TREE / "app" / "net.before.py").read_text(encoding="utf-8")
"""A base class creating `self.gelu`, and a subclass (importing it from `pkg.base`) that has a
`self.gelu` of its own."""


def test_base_never_takes_a_name_a_subclass_elsewhere_in_its_package_uses(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(BASE)
    (pkg / "net.py").write_text(CLASHING.replace("from pkg.base", "from .base"))
    outcomes = {o.path.name: o for o in run([str(pkg)], Settings(), rewrite=True)}
    assert "self.gelu_1 = nn.GELU()" in outcomes["base.py"].new_text
    assert "return self.gelu_1(self.fc(x))" in outcomes["base.py"].new_text
    assert outcomes["net.py"].findings == [] and not outcomes["net.py"].changed


def test_attribute_clashing_with_a_base_module_from_another_package_is_reported(tmp_path):
    for name in ("pkg", "app"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "pkg" / "base.py").write_text(BASE)
    (tmp_path / "app" / "net.py").write_text(CLASHING)
    outcomes = {
        o.path.name: o for o in run([str(tmp_path / "app" / "net.py")], Settings(), rewrite=False)
    }
    [finding] = outcomes["net.py"].findings
    assert (finding.line, finding.code) == (8, "MIG111")
    assert (
        "`self.gelu` is also the name of the module migrator creates in base class `Base`"
        in finding.message
    )


def test_an_instance_of_another_files_class_handed_to_several_modules_is_reported(tmp_path):
    """`PosEnc` lives in another file, whose analysis cannot see that this file hands one
    instance to every block: the hand-over is reported here (MIG117)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    source = (TREE.parent.parent / "cases" / "shared_instance.before.py").read_text()
    head, _, model = source.partition("class Model(nn.Module):")
    (pkg / "layers.py").write_text(head)
    (pkg / "net.py").write_text(
        "import torch.nn as nn\nfrom .layers import Block, PosEnc\n\n\n"
        "class Model(nn.Module):" + model
    )
    outcomes = {o.path.name: o for o in run([str(pkg / "net.py")], Settings(), rewrite=False)}
    [finding] = outcomes["net.py"].findings
    assert (finding.line, finding.code) == (9, "MIG117")
    assert finding.message.startswith(
        "`self.pos` of `Model` is handed to modules built in a "
        "loop at line 9: ops migrator turns into modules inside "
        "`pkg.layers.PosEnc`"
    )
