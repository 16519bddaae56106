"""Per-item statistics of a large run spread over the machine's cores, in worker processes.

Scoring a run's translations (sacrebleu's sentence statistics) and transcripts (normalised word alignments) is
pure-Python work per item, the same whatever the order, and much of a large analysis's time. When a run has at least
:data:`PARALLEL_MIN` such items and ``AIRBENCH_NB_WORKERS`` asks for workers (a number, or ``auto``: one per core),
chunks of them go to worker processes (:func:`parallel_map`) while this process waits; below that, or with the
variable unset, everything stays in this process. Either way each item's statistics come from the same functions on
the same text, so every number is the same (``tests/test_scoring_parallel.py``).

The workers are joblib's loky processes: fresh interpreters that import what they run, never a fork of this process
(its memory, a run's records, is not copied; none of its threads is forked), and they do not run the script that
started them again (a script need not guard its analysis with ``if __name__ == "__main__"``). They are started on the
first large call and kept for the next while they are busy at least every five minutes; :func:`shutdown_pool` ends
them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import TypeVar

logger = logging.getLogger(__name__)

WORKERS_ENV = "AIRBENCH_NB_WORKERS"
"""Environment variable: worker processes for large runs' statistics (unset or 1: none, everything in this process;
``auto``: one per core)."""
MAX_WORKERS = 8
"""Workers at most for ``auto`` (one per core up to this)."""
PARALLEL_MIN = 5_000
"""Items below which the statistics are computed in this process (starting workers would cost more than it saves)."""

T = TypeVar("T")
R = TypeVar("R")

_started = False


def workers() -> int:
    """Worker processes to use: :data:`WORKERS_ENV` (at least 1; ``auto``: one per core, at most :data:`MAX_WORKERS`).

    Unset, it is 1: each worker is a second Python with the texts it is sent (with pandas and scikit-learn too, before
    :mod:`airbench_nb.scoring` imported its names on first use, about 0.25 GB a worker: on 2 cores, two workers then
    shortened a 150,000-item analysis by under a tenth and added about 0.55 GB, docs/scaling.md), which a small
    machine may not spare; a machine with cores and memory to spare sets it.

    Raises:
        ValueError: :data:`WORKERS_ENV` is neither a whole number nor ``auto``.
    """
    value = os.environ.get(WORKERS_ENV, "").strip()
    if not value:
        return 1
    if value == "auto":
        return max(1, min(cores(), MAX_WORKERS))
    try:
        return max(1, int(value))
    except ValueError:
        raise ValueError(f"{WORKERS_ENV}={value!r}: expected a whole number of worker processes or 'auto'") from None


def cores() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def shutdown_pool() -> None:
    """End the worker processes, if any were started."""
    global _started
    if _started:
        from joblib.externals.loky import get_reusable_executor

        get_reusable_executor().shutdown(wait=True)
    _started = False


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
    global _started
    count = workers()
    if count < 2 or items < PARALLEL_MIN or len(tasks) < 2:
        return [function(task) for task in tasks]
    from joblib import Parallel, delayed

    if not _started:
        logger.info("statistics of %d items spread over %d worker processes (%s=1: none)", items, count, WORKERS_ENV)
    _started = True
    return list(Parallel(n_jobs=count, backend="loky")(delayed(function)(task) for task in tasks))


def pool_started() -> bool:
    """Whether worker processes are running (for tests and logs)."""
    return _started
