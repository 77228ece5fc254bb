"""The runner's garbage collection during a run: paused, with a collection every
`FILES_PER_COLLECTION` files, only every `FULL_COLLECTION_EVERY`-th of them walking everything."""

from __future__ import annotations

import gc
import weakref

from migrator import runner
from migrator.config import Settings


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_collections_between_full_ones_walk_only_what_is_new(tmp_path, monkeypatch):
    for i in range(4):
        (tmp_path / f"m{i}.py").write_text("x = 1\n")
    monkeypatch.setattr(runner, "FILES_PER_COLLECTION", 1)
    monkeypatch.setattr(runner, "FULL_COLLECTION_EVERY", 2)
    monkeypatch.setattr(runner, "_processed", 0)
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    cycle = weakref.ref(a)
    frozen, alive = [], []
    for n, _ in enumerate(runner.run([str(tmp_path)], Settings(), rewrite=False), 1):
        frozen.append(gc.get_freeze_count() > 0)
        alive.append(cycle() is not None)
        if n == 2:  # the cycle, alive at the full collection, becomes garbage
            del a, b
    assert frozen == [True, True, True, True]  # what lived through a collection is left out
    assert alive == [True, True, True, False]  # until the next full collection, after file 4
    assert gc.get_freeze_count() == 0  # the run leaves the collector as it found it


def test_a_run_with_the_collector_disabled_leaves_nothing_frozen(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text("x = 1\n")
    monkeypatch.setattr(runner, "FILES_PER_COLLECTION", 1)
    monkeypatch.setattr(runner, "_processed", 0)
    gc.disable()
    try:
        list(runner.run([str(tmp_path)], Settings(), rewrite=False))
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
