"""Results being computed elsewhere, offered to the caches of this process that will want them.

A worker that scores ahead (:mod:`airbench_nb.scoring.ahead`) offers each part of its work here under a name
(``transcripts``, ``translations``); a cache that misses (:func:`~airbench_nb.scoring.wer.many_utterance_errors`,
:func:`~airbench_nb.scoring.translation.score_translations`) takes the part once (:func:`take`: waiting for it)
and adds it to what it keeps, keyed as the cache keys its own. This module imports nothing of the kit: the caches
need not import the worker that fills them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_OFFERED: dict[str, Callable[[], Any]] = {}
_LOCK = threading.Lock()


def offer(part: str, result: Callable[[], Any]) -> None:
    """Offer a part: ``result()`` waits for it and returns it (None: it failed, and the taker computes it itself)."""
    with _LOCK:
        _OFFERED[part] = result


def waiting(part: str) -> bool:
    """Whether a part is offered and not taken yet."""
    return part in _OFFERED


def take(part: str) -> Any:
    """The part, waited for (once: a second call returns None); None when none is offered or it failed."""
    with _LOCK:
        result = _OFFERED.pop(part, None)
    return result() if result is not None else None


def withdraw(parts: tuple[str, ...] | None = None) -> None:
    """Withdraw offered parts (all of them by default): nothing will take them."""
    with _LOCK:
        for part in list(_OFFERED) if parts is None else parts:
            _OFFERED.pop(part, None)
