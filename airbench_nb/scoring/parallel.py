"""Per-item statistics of a large run spread over the machine's cores, in worker processes.

Scoring a run's translations (sacrebleu's sentence statistics) and transcripts (normalised word alignments) is
pure-Python work per item, the same whatever the order, and most of a large analysis's time. When a run has at least
:data:`PARALLEL_MIN` such items and the machine more than one core, chunks of them go to a pool of worker processes
(:func:`parallel_map`) while this process waits; below that, or with ``AIRBENCH_NB_WORKERS=1``, everything stays in
this process. Either way each item's statistics come from the same functions on the same text, so every number is
the same (``tests/test_scoring_parallel.py``).

The pool is forked from a small server process that imported the scoring modules once (``forkserver``), never from
this process: its memory (a run's records) is not copied, and no thread of this process is forked. The pool starts
on the first large call and stays for the next (:func:`shutdown_pool` ends it; it ends with the process anyway).
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

logger = logging.getLogger(__name__)

WORKERS_ENV = "AIRBENCH_NB_WORKERS"
"""Environment variable: worker processes for large runs' statistics (1: none, everything in this process)."""
MAX_WORKERS = 8
"""Workers at most when :data:`WORKERS_ENV` is not set (one per core up to this)."""
PARALLEL_MIN = 5_000
"""Items below which the statistics are computed in this process (starting workers would cost more than it saves)."""
PRELOAD = ("airbench_nb.scoring.translation", "airbench_nb.scoring.wer")
"""Modules the pool's server imports once, so that each worker starts with them."""

T = TypeVar("T")
R = TypeVar("R")

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None
_pool_workers = 0


def workers() -> int:
    """Worker processes to use: :data:`WORKERS_ENV` when set (at least 1), else the cores this process may use.

    Raises:
        ValueError: :data:`WORKERS_ENV` is not a whole number.
    """
    value = os.environ.get(WORKERS_ENV, "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise ValueError(f"{WORKERS_ENV}={value!r}: expected a whole number of worker processes") from None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, MAX_WORKERS))


def _pool_of(count: int) -> ProcessPoolExecutor:
    global _pool, _pool_workers
    with _lock:
        if _pool is None or _pool_workers != count:
            if _pool is not None:
                _pool.shutdown(wait=True)
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(list(PRELOAD))
            _pool, _pool_workers = ProcessPoolExecutor(max_workers=count, mp_context=context), count
            logger.info("statistics spread over %d worker processes (%s=1: none)", count, WORKERS_ENV)
        return _pool


def shutdown_pool() -> None:
    """End the worker processes, if any were started."""
    global _pool, _pool_workers
    with _lock:
        if _pool is not None:
            _pool.shutdown(wait=True, cancel_futures=True)
        _pool, _pool_workers = None, 0


atexit.register(shutdown_pool)


def chunked(values: Sequence[T], parts: int) -> list[Sequence[T]]:
    """``values`` cut into about ``parts`` pieces of consecutive values (none empty)."""
    if not values:
        return []
    size = max(1, -(-len(values) // max(1, parts)))
    return [values[start : start + size] for start in range(0, len(values), size)]


def parallel_map(function: Callable[[T], R], tasks: Sequence[T], items: int) -> list[R]:
    """``[function(task) for task in tasks]``, in worker processes when ``items`` is large enough.

    Args:
        function: A module-level function (it is sent to the workers by name).
        tasks: Its arguments, one per call.
        items: How many items the tasks hold in all (compared with :data:`PARALLEL_MIN`).

    Returns:
        The results, in the order of ``tasks``. A worker's exception is raised here.
    """
    count = workers()
    if count < 2 or items < PARALLEL_MIN or len(tasks) < 2:
        return [function(task) for task in tasks]
    return list(_pool_of(count).map(function, tasks))


def pool_started() -> bool:
    """Whether worker processes are running (for tests and logs)."""
    return _pool is not None
