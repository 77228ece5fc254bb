"""A stateless module a base class creates and a subclass calls at several sites is split in
the subclass (fixture `inherited_split`), but only where a copy of the instance the base built
is what each site would have run."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrator.rewrite.engine import check_text
from migrator.rewrite.project import Project

SOURCE = (Path(__file__).parent.parent / "fixtures/cases/inherited_split.before.py").read_text(
    encoding="utf-8"
)


def codes(source: str) -> list[str]:
    """`CODE message start` of the findings on the subclass's reused module."""
    return [
        f"{f.code} {f.message.split(':')[0]}"
        for f in check_text(source, "m.py", Project())
        if "head_drop" in f.message
    ]


def test_the_second_site_gets_a_copy():
    assert codes(SOURCE) == ["MIG003 `self.head_drop` (nn.Dropout) is called at 2 sites"]


@pytest.mark.parametrize(
    "old, new, expected",
    [
        (  # the subclass changes the instance: a copy taken before would not follow
            "        self.head_dist = nn.Linear(dim, dim)\n",
            "        self.head_dist = nn.Linear(dim, dim)\n        self.head_drop.p = 0.1\n",
            "MIG104",
        ),
        (  # the base may replace it after `__init__`
            "        return self.head(self.head_drop(x))\n",
            (
                "        return self.head(self.head_drop(x))\n\n"
                "    def reset(self):\n        self.head_drop = nn.Identity()\n"
            ),
            "MIG104",
        ),
        (  # not proven stateless: copies would untie weights
            "self.head_drop = nn.Dropout(rate)",
            "self.head_drop = nn.PReLU()",
            "MIG103",
        ),
        (  # no top-level `super().__init__()` to copy it after
            "        super().__init__(dim, rate=0.25)\n",
            "        if dim:\n            super().__init__(dim, rate=0.25)\n",
            "MIG104",
        ),
        (  # set conditionally in the base: it may not exist when the subclass copies it
            "        self.head_drop = nn.Dropout(rate)\n",
            "        if rate:\n            self.head_drop = nn.Dropout(rate)\n",
            "MIG104",
        ),
        (  # a loop over the input: one copy per iteration cannot be indexed
            "        x = self.head(self.head_drop(x))\n",
            "        for _ in range(x.shape[0]):\n            x = self.head(self.head_drop(x))\n",
            "MIG105",
        ),
    ],
)
def test_refused_where_a_copy_would_differ(old, new, expected):
    assert old in SOURCE
    [found] = codes(SOURCE.replace(old, new))
    assert found.startswith(expected)
    assert "created in base class `Base`" in found or expected == "MIG103"
