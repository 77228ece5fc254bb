"""A one-line progress bar on stderr for long runs.

It is drawn only when stderr is a terminal, `CI` is not set and `TERM` is not `dumb`, and only
once a run has lasted `delay` seconds: short runs (the pre-commit case) never show it.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import TextIO

REDRAW_EVERY = 0.1
"""Seconds between redraws."""


def wanted(stream: TextIO) -> bool:
    """Whether a progress bar belongs on `stream`."""
    return stream.isatty() and not os.environ.get("CI") and os.environ.get("TERM", "") != "dumb"


class Progress:
    """Counts finished items out of a total and shows `label [####....] 12/40 item`."""

    def __init__(self, label: str, *, stream: TextIO | None = None, delay: float = 0.5) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = wanted(self.stream)
        self.total = self.done = 0
        self._start = time.monotonic()
        self._drawn_at = float("-inf")
        self._delay = delay
        self._shown = False

    def start(self, total: int) -> None:
        self.total, self.done = total, 0
        self._start = time.monotonic()

    def advance(self, item: str = "") -> None:
        """One more item done; redraw if the bar is due."""
        self.done += 1
        now = time.monotonic()
        if (
            self.enabled
            and now - self._start >= self._delay
            and now - self._drawn_at >= REDRAW_EVERY
        ):
            self._draw(item)
            self._drawn_at = now

    def print(self, *args: object, file: TextIO | None = None, end: str = "\n") -> None:
        """`print` without garbling the bar: when the text goes to the bar's terminal, the bar is
        erased first and redrawn on a later advance."""
        file = file or sys.stdout
        if file is self.stream or file.isatty():
            self.clear()
        print(*args, file=file, end=end)

    def clear(self) -> None:
        if self._shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._shown = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.clear()

    def _draw(self, item: str) -> None:
        width = shutil.get_terminal_size().columns
        count = f"{self.done}/{self.total}"
        cells = 20
        filled = cells * self.done // self.total if self.total else cells
        line = f"{self.label} [{'#' * filled}{'.' * (cells - filled)}] {count} {item}"
        self.stream.write(f"\r{line[: width - 1]}\033[K")
        self.stream.flush()
        self._shown = True
