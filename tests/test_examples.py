"""The shipped example models: migrated source is equivalent to the original."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

from migrator.config import Settings
from migrator.runner import Processed, run

torch = pytest.importorskip("torch")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "models"
FACTORIES = [("resnet", "resnet_tiny"), ("mobilenet", "mobilenet_tiny"), ("vit", "vit_tiny")]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    """The examples as two packages: `ex_before` (as shipped) and `ex_after` (migrated)."""
    root = tmp_path_factory.mktemp("examples")
    before, after = root / "ex_before", root / "ex_after"
    shutil.copytree(EXAMPLES, before)
    shutil.copytree(EXAMPLES, after)
    outcomes = list(run([str(after)], Settings(), rewrite=True))
    assert all(isinstance(o, Processed) for o in outcomes), outcomes
    assert sum(o.changed for o in outcomes) == 4
    for outcome in outcomes:
        assert not [f for f in outcome.findings if not f.fixable], outcome.findings
        outcome.path.write_text(outcome.new_text, encoding="utf-8")
    sys.path.insert(0, str(root))
    yield
    sys.path.remove(str(root))


@pytest.mark.parametrize("module, factory", FACTORIES)
def test_example_migration_is_equivalent(packages, module, factory):
    make_before = getattr(importlib.import_module(f"ex_before.{module}"), factory)
    make_after = getattr(importlib.import_module(f"ex_after.{module}"), factory)
    torch.manual_seed(0)
    original, inputs = make_before()
    torch.manual_seed(1)
    migrated, _ = make_after()
    migrated.load_state_dict(original.state_dict(), strict=True)
    original.eval()
    migrated.eval()
    with torch.no_grad():
        assert torch.equal(original(*inputs), migrated(*inputs))
    # Every op now lives in a module: the migrated model has more modules, the same weights.
    assert len(list(migrated.modules())) > len(list(original.modules()))
    assert list(migrated.state_dict()) == list(original.state_dict())
