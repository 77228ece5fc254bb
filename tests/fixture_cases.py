"""Loading the before/after fixture pairs under `fixtures/`."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted((FIXTURES / "cases").glob("*.before.py"))
TREES = sorted(p for p in (FIXTURES / "trees").iterdir() if p.is_dir())
TOOLKIT_CASES = sorted((FIXTURES / "toolkits").glob("*/*.before.py"))
"""Fixtures of `fix --for <toolkit>`, one folder per toolkit (tests/test_toolkit.py)."""


def after_of(before: Path) -> Path:
    return before.with_name(before.name.replace(".before.py", ".after.py"))


def findings_of(before: Path) -> Path:
    return before.with_name(before.name.replace(".before.py", ".findings.txt"))


def tree_copy(tree: Path, root: Path, side: str = "before") -> Path:
    """A copy of the fixture tree `tree` as the folder `root`: each `<name>.before.py` as
    `<name>.py` (its `<name>.after.py` on the "after" side when there is one), no findings, the
    other files as they are; `root`."""
    for source in sorted(tree.rglob("*")):
        if source.is_dir() or source.name.endswith((".after.py", ".findings.txt")):
            continue
        after = after_of(source)
        chosen = after if side == "after" and after.exists() else source
        target = root / source.relative_to(tree).with_name(source.name.replace(".before.py", ".py"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(chosen.read_bytes())
    return root


def expected_after(before: Path) -> str:
    """The expected rewrite: the `.after.py` file, or the input itself for refusals."""
    after = after_of(before)
    return (after if after.exists() else before).read_text(encoding="utf-8")


def expected_findings(before: Path) -> list[str]:
    path = findings_of(before)
    if not path.exists():
        return []
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def import_path(path: Path | str, name: str):
    """Import a fixture file as a fresh module under `name` (timm first, through the zoo's
    torchvision shim, when it imports timm)."""
    path = Path(path)
    if "timm" not in sys.modules and re.search(
        r"^(from|import) timm\b", path.read_text(encoding="utf-8"), re.MULTILINE
    ):
        if "torchvision" in sys.modules:  # imported through the shim already
            importlib.import_module("timm")
        else:
            from zoo import _import_zoo

            _import_zoo("timm")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def module_in_fixture(cls: type):
    """(module, the positional and keyword arguments it received) of the first `cls` instance
    that runs, in eval mode on its example inputs, in the first fixture whose migrated model
    creates one; None when no fixture does. Lets tests of op modules take a real use of each class from its fixture."""
    import torch

    pattern = re.compile(rf"\b{cls.__name__}\(")
    for after in sorted((FIXTURES / "cases").glob("*.after.py")):
        if not pattern.search(after.read_text(encoding="utf-8")):
            continue
        fixture = import_path(after, f"module_in_{after.name.removesuffix('.after.py')}")
        model = fixture.Model().eval()
        calls: list = []
        hooks = [
            m.register_forward_hook(
                lambda m, args, kwargs, out: calls.append((m, args, kwargs)), with_kwargs=True
            )
            for m in model.modules()
            if type(m) is cls
        ]
        torch.manual_seed(0)
        with torch.no_grad():
            model(*fixture.example_inputs())
        for hook in hooks:
            hook.remove()
        if calls:
            return calls[0]
    return None
