"""A base file's work-out kept in the process (`rewrite/worked.py`) and replayed for a later
file gives what working it out again gives: two or three files sharing a base, one of them
taking names in the family (its own `__init__`, a mixin of a file the base's work-out never
reads, a middle class of a third file), fixed in every order, with and without kept
work-outs."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from pathlib import Path

import pytest
from packages import write_package

from migrator.config import Settings
from migrator.rewrite import worked
from migrator.runner import Processed, run

BASE = """import torch.nn as nn


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)
        self.act = nn.ReLU()

    def forward(self, x):
        y = self.act(self.conv(x))
        return self.act(y) + x
"""

TREES = {
    "shadowing_subclass": {
        "a.py": (
            "from pkg.base import Base\n\n\nclass A(Base):\n"
            "    def forward(self, x):\n        return super().forward(x) * x\n"
        ),
        "b.py": (
            "import torch.nn as nn\n\nfrom pkg.base import Base\n\n\nclass B(Base):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.add = nn.Identity()\n        self.act_1 = nn.Sigmoid()\n\n"
            "    def forward(self, x):\n        return self.add(super().forward(x)) - self.act_1(x)\n"
        ),
    },
    "mixin_elsewhere": {
        "a.py": (
            "from pkg.base import Base\n\n\nclass A(Base):\n"
            "    def forward(self, x):\n        return super().forward(x) * x\n"
        ),
        "mix.py": (
            "import torch.nn as nn\n\n\nclass Mix:\n    def build(self):\n"
            "        self.add = nn.Identity()\n        self.act_1 = nn.Sigmoid()\n"
        ),
        "b.py": (
            "from pkg.base import Base\nfrom pkg.mix import Mix\n\n\nclass B(Base, Mix):\n"
            "    def __init__(self):\n        super().__init__()\n        self.build()\n\n"
            "    def forward(self, x):\n        return self.add(super().forward(x)) - x\n"
        ),
    },
    "three_files": {
        "mid.py": (
            "import torch.nn as nn\n\nfrom pkg.base import Base\n\n\nclass Mid(Base):\n"
            "    def __init__(self):\n        super().__init__()\n        self.gate = nn.Sigmoid()\n\n"
            "    def forward(self, x):\n        h = super().forward(x)\n"
            "        return self.gate(h) * self.gate(x)\n"
        ),
        "a.py": (
            "from pkg.mid import Mid\n\n\nclass A(Mid):\n"
            "    def forward(self, x):\n        return super().forward(x) + x\n"
        ),
        "b.py": (
            "import torch.nn as nn\n\nfrom pkg.mid import Mid\n\n\nclass B(Mid):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.mul = nn.Identity()\n        self.gate_1 = nn.Tanh()\n\n"
            "    def forward(self, x):\n        return self.mul(super().forward(x)) - x\n"
        ),
    },
    "module_found_by_folder": {  # `extra` found as `pkg/extra.py` (`pkg` searched as a root)
        "mid.py": (
            "from extra import helper\nfrom pkg.base import Base\n\n\nclass Mid(Base):\n"
            "    def forward(self, x):\n        return helper(super().forward(x))\n"
        ),
        "extra.py": "import torch\n\n\ndef helper(x):\n    return torch.sigmoid(x) * x\n",
        "a.py": (
            "from pkg.mid import Mid\n\n\nclass A(Mid):\n"
            "    def forward(self, x):\n        return super().forward(x) + x\n"
        ),
        "b.py": (
            "import torch.nn as nn\n\nfrom pkg.mid import Mid\n\n\nclass B(Mid):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.mul = nn.Identity()\n\n"
            "    def forward(self, x):\n        return self.mul(super().forward(x)) - x\n"
        ),
    },
}


class _NothingKept(OrderedDict):
    def __setitem__(self, key, value):
        pass


def _outcomes(files: list[Path], monkeypatch, keep: bool, rewrite: bool = True) -> dict[str, tuple]:
    monkeypatch.setattr(worked, "_KEPT", OrderedDict() if keep else _NothingKept())
    monkeypatch.setattr(worked, "_AT_HAND", OrderedDict() if keep else _NothingKept())
    found = {}
    for outcome in run([str(f) for f in files], Settings(), rewrite=rewrite):
        assert isinstance(outcome, Processed), outcome
        codes = [(f.line, f.col, f.code, f.message) for f in outcome.findings]
        found[outcome.path.name] = (outcome.new_text, codes)
    return found


@pytest.mark.parametrize("name", sorted(TREES))
def test_kept_work_outs_change_nothing(name, tmp_path, monkeypatch):
    package = write_package(tmp_path, {"base.py": BASE, **TREES[name]})
    files = sorted(package.glob("*.py"))
    fresh = _outcomes(files, monkeypatch, keep=False)
    assert "Add()" in fresh["base.py"][0]  # the base's rewrite is worked out for the others
    replayed = []
    replay = worked.Trace.replay
    monkeypatch.setattr(
        worked.Trace, "replay", lambda trace, a: replayed.append(replay(trace, a)) or replayed[-1]
    )
    for order in itertools.islice(itertools.permutations(files), 0, None, 9):
        assert _outcomes(list(order), monkeypatch, keep=True) == fresh, [f.name for f in order]
    assert any(replayed)  # kept work-outs were taken


@pytest.mark.parametrize("name", sorted(TREES))
def test_file_at_hand_serves_as_later_work_out(name, tmp_path, monkeypatch):
    """The base's own analysis, run first under a path relative to the working folder, is
    taken as its work-out by the one later file of the run, a subclass's."""
    monkeypatch.chdir(tmp_path)
    write_package(tmp_path, {"base.py": BASE, **TREES[name]})
    files = [Path("pkg/base.py"), Path("pkg") / next(iter(TREES[name]))]  # a subclass of Base
    fresh = _outcomes(files, monkeypatch, keep=False)
    taken = []
    replay = worked.Trace.replay
    monkeypatch.setattr(
        worked.Trace,
        "replay",
        lambda trace, a: taken.append((trace.added[0][0], replay(trace, a))) or taken[-1][1],
    )
    assert _outcomes(files, monkeypatch, keep=True) == fresh
    assert (tmp_path / "pkg" / "base.py", True) in taken


ROOT_WITH_HELPER = {
    "root.py": (
        "import torch\nimport torch.nn as nn\n\n\ndef mix(x):\n    return torch.sigmoid(x) * x\n\n\n"
        "class Root(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.act = nn.ReLU()\n\n    def forward(self, x):\n"
        "        return self.act(x) + x\n"
    ),
    "mid.py": (
        "from pkg.root import Root, mix\n\n\nclass Mid(Root):\n"
        "    def forward(self, x):\n        return mix(super().forward(x))\n"
    ),
    "a.py": (
        "from pkg.mid import Mid\n\n\nclass A(Mid):\n"
        "    def forward(self, x):\n        return super().forward(x) - x\n"
    ),
    "b.py": (
        "from pkg.mid import Mid\n\n\nclass B(Mid):\n"
        "    def forward(self, x):\n        return super().forward(x) * x\n"
    ),
}


def test_work_out_reading_twins_of_a_base_it_worked_out_is_taken(tmp_path, monkeypatch):
    """`check`: `mid.py`'s work-out works out `root.py` and then asks about the twin of its
    helper `mix` (none: a file worked out keeps no text); the later subclass file takes it,
    where it was worked out again: `mid.py` is analysed in `a.py`'s turn and its own only."""
    package = write_package(tmp_path, ROOT_WITH_HELPER)
    files = [package / name for name in ("a.py", "b.py", "mid.py", "root.py")]
    analysed = []
    end = worked.Trace.end
    monkeypatch.setattr(
        worked.Trace,
        "end",
        lambda trace, project: (
            analysed.append(next(iter(trace.analyzed_here))) or end(trace, project)
        ),
    )
    kept = _outcomes(files, monkeypatch, keep=True, rewrite=False)
    assert analysed.count("pkg.mid") == 2, analysed
    assert "MIG115" in {code for _, _, code, _ in kept["mid.py"][1]}  # `mix` asked about
    assert kept == _outcomes(files, monkeypatch, keep=False, rewrite=False)
