"""Map a function over items in worker processes, streaming results in input order.

Only a few items per worker are in flight at once, so memory is bounded by the largest results
of a few items, not by the number of items; the items themselves are consumed lazily. The
process pool's modules are imported only when one starts.
"""

from __future__ import annotations

import argparse
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future
    from multiprocessing.context import BaseContext

Item = TypeVar("Item")
Result = TypeVar("Result")

IN_FLIGHT_PER_WORKER = 4
"""Items submitted ahead per worker: enough to keep workers busy while the consumer catches up."""


def worker_count(jobs: int) -> int:
    """The number of processes `-j jobs` asks for: 0 means one per CPU."""
    return jobs if jobs > 0 else os.cpu_count() or 1


def ordered_map(fn: Callable[[Item], Result], items: Iterable[Item], jobs: int) -> Iterator[Result]:
    """`map(fn, items)` over `jobs` processes (in this process when jobs is 1); `fn` must be
    picklable (a module-level function or a `functools.partial` of one)."""
    items = iter(items)
    head = list(islice(items, 2))
    if jobs <= 1 or len(head) < 2:  # no pool to start for a single item
        yield from map(fn, chain(head, items))
        return
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(jobs, mp_context=_context(), initializer=_ignore_interrupts)
    pending: deque[Future[Result]] = deque()
    try:
        for item in chain(head, items):
            pending.append(pool.submit(fn, item))
            if len(pending) >= jobs * IN_FLIGHT_PER_WORKER:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _ignore_interrupts() -> None:
    """Ctrl-C is for the parent: it stops submitting and shuts the pool down."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _context() -> BaseContext:
    """`fork` where available: workers start at once, without importing migrator again."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else methods[0])


def add_jobs_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=1,
        metavar="N",
        help="analyse files in N processes (0: one per CPU; default: 1)",
    )


def _jobs(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a number of processes, got {text!r}")
    return int(text)
