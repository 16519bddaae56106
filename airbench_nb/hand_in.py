"""When work was handed in: one sequence of numbers shared by the runner and the API client.

A fatal API error (a rejected key) stops the requests of every run handed in before it, while a run handed in after
it starts afresh (a new run, after a fix; see :meth:`airbench_nb.api_client.APIClient.run`). "Handed in" is the
moment the caller decided to ask, not the moment a thread got round to it: the runner asks a batch in a second thread
while the batch before is in flight (:func:`airbench_nb.runner.models.run_model`), and on a loaded machine that
thread may reach the client only after the batch before failed, or the runner may hand the next batch over only
then. So the runner takes one number when its batch loop starts (:func:`next_number`) and runs every batch in a
context carrying it (:func:`handed_in_at`): a fatal error in any batch stops every later batch of the same run. The
client reads the number with :func:`hand_in_number` (outside such a context, a fresh number: the moment of the call).
"""

from __future__ import annotations

import contextvars
import itertools
import threading

_NUMBERS = itertools.count(1)
_LOCK = threading.Lock()
_HANDED_IN: contextvars.ContextVar[int | None] = contextvars.ContextVar("airbench_nb_handed_in", default=None)


def next_number() -> int:
    """The next number of the sequence (thread-safe): larger than every number given before."""
    with _LOCK:
        return next(_NUMBERS)


def handed_in_at(number: int) -> contextvars.Context:
    """A copy of the current context in which :func:`hand_in_number` is ``number`` (one per thread that runs in it).

    Example:
        >>> run = next_number()
        >>> handed_in_at(run).run(hand_in_number) == run < hand_in_number()
        True
    """
    context = contextvars.copy_context()
    context.run(_HANDED_IN.set, number)
    return context


def hand_in_number() -> int:
    """The number of the moment the work running now was handed in: its context's (:func:`handed_in_at`), or now."""
    number = _HANDED_IN.get()
    return number if number is not None else next_number()
