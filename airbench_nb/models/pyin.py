"""librosa's pYIN, decoded faster with the same result: the DSP baseline's pitch tracker.

``librosa.pyin`` spends most of its time (about 85% on the kit's clips) in two places that this module makes
cheaper without changing a single output value:

- its Viterbi decoder takes, for each frame and each of the 2n states (n pitch bins, voiced and unvoiced), the
  maximum over all 2n predecessors, in a (2n x 2n) matrix allocated anew each frame. pYIN's transitions are local
  (a pitch moves at most ``max_transition_rate`` per frame), so :func:`viterbi` scans only the predecessors with
  a non-zero transition, plus the best of all the others: each of those has the transition probability 0, whose
  log is the same constant ``log(tiny)`` (about -708), so the best of them is the first predecessor with the
  highest value and a zero transition. The sums compared are those of ``librosa.sequence._viterbi``, computed the
  same way, and ties go to the first maximum as ``np.argmax`` does: the states are identical, not close.
- it rebuilds the local transition matrix, a Python loop over the pitch bins, on every call;
  :func:`transition_local` returns it from a cache.

:func:`pyin` runs ``librosa.pyin`` itself with these two functions in place of ``librosa.sequence.viterbi`` and
``librosa.sequence.transition_local`` for the duration of the call (under a lock); anything else librosa does is
untouched, and calls those two functions were not written for (other arguments) go to librosa's own.
``tests/test_pyin.py`` checks the identity on voiced, noisy, silent and multi-channel signals, and
``bench/bench_dsp.py`` on every clip of the mini build the DSP baseline measures.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

_LOCK = threading.Lock()
_DECODERS: list[tuple[np.ndarray, _Decoder]] = []
"""The last few transition matrices seen, with what :func:`viterbi` derives from them (pyin builds the same one
for the same fmin, fmax, sample rate and hop on every call)."""
_DECODERS_KEPT = 4


class _Decoder:
    """What :func:`viterbi` needs from one transition matrix: its log (as librosa takes it) and its non-zeros."""

    def __init__(self, transition: np.ndarray, epsilon: float) -> None:
        self.log_trans_t = np.ascontiguousarray(np.log(transition + epsilon).T)
        """``log_trans[k, j]`` at ``[j, k]``: the predecessors of state j in one row."""
        self.floor = float(np.log(0.0 + epsilon))
        """The log of a zero transition (``log(tiny)``), every entry outside the non-zeros."""
        nonzero = self.log_trans_t != self.floor
        self.indptr = np.concatenate([[0], np.cumsum(nonzero.sum(axis=1))]).astype(np.int64)
        """Row pointers of the non-zero predecessors of each state (CSR)."""
        self.indices = np.nonzero(nonzero)[1].astype(np.int64)
        """The non-zero predecessors, ascending within each state."""


def _decoder(transition: np.ndarray, epsilon: float) -> _Decoder:
    for seen, decoder in _DECODERS:
        if seen.shape == transition.shape and np.array_equal(seen, transition):
            return decoder
    decoder = _Decoder(transition, epsilon)
    _DECODERS.insert(0, (transition.copy(), decoder))
    del _DECODERS[_DECODERS_KEPT:]
    return decoder


@functools.cache
def _compiled() -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """The decoding loop, compiled by numba (a dependency of librosa) on first use."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def decode(log_prob, log_trans_t, log_p_init, indptr, indices, floor):  # type: ignore[no-untyped-def]  # pragma: no cover
        n_steps, n_states = log_prob.shape
        state = np.zeros(n_steps, dtype=np.uint16)
        value = np.zeros((n_steps, n_states), dtype=np.float64)
        ptr = np.zeros((n_steps, n_states), dtype=np.uint16)
        value[0] = log_prob[0] + log_p_init
        top = np.zeros(n_states, dtype=np.int64)
        for t in range(1, n_steps):
            prev = value[t - 1]
            # Through a zero transition, predecessor k gives prev[k] + floor: the best of those is reach, reached
            # (after rounding) by the predecessors in top, ascending.
            reach = np.max(prev) + floor
            n_top = 0
            for k in range(n_states):
                if prev[k] + floor == reach:
                    top[n_top] = k
                    n_top += 1
            for j in range(n_states):
                row = log_trans_t[j]
                best = -np.inf
                arg = -1
                for p in range(indptr[j], indptr[j + 1]):  # the non-zero transitions, ascending
                    k = indices[p]
                    v = prev[k] + row[k]
                    if v > best:
                        best = v
                        arg = k
                # A zero transition can only win (or tie) from a predecessor in top; if every one of those has a
                # non-zero transition to j, the scan above saw them and beat reach.
                for i in range(n_top):
                    k = top[i]
                    if row[k] == floor:
                        if reach > best or (reach == best and k < arg):
                            best = reach
                            arg = k
                        break
                ptr[t, j] = arg
                value[t, j] = log_prob[t, j] + best
        state[-1] = np.argmax(value[-1])
        for t in range(n_steps - 2, -1, -1):
            state[t] = ptr[t + 1, state[t + 1]]
        return state, value[-1:, state[-1]]

    return decode


def viterbi(
    prob: np.ndarray, transition: np.ndarray, *, p_init: np.ndarray | None = None, return_logp: bool = False
) -> Any:
    """``librosa.sequence.viterbi``, with the same states, faster for a sparse transition matrix.

    Args:
        prob: ``prob[..., s, t]``, the probability of observation t in state s.
        transition: ``transition[i, j]``, the probability of moving from state i to j.
        p_init: Initial state distribution (default: uniform).
        return_logp: Also return the log-probability of the path (left to librosa's own decoder).

    Returns:
        The most likely state sequence, shape ``prob.shape[:-2] + (t,)``, dtype ``uint16`` as librosa's.
    """
    import librosa

    n_states, n_steps = prob.shape[-2:]
    if return_logp or transition.shape != (n_states, n_states) or n_states > np.iinfo(np.uint16).max:
        return _ORIGINAL["viterbi"](prob, transition, p_init=p_init, return_logp=return_logp)
    epsilon = librosa.util.tiny(prob)
    if p_init is None:
        p_init = np.full(n_states, 1.0 / n_states)
    decoder = _decoder(transition, epsilon)
    log_prob = np.log(prob + epsilon)
    log_p_init = np.log(p_init + epsilon)
    decode = _compiled()
    flat = log_prob.reshape(-1, n_states, n_steps)
    states = np.empty((flat.shape[0], n_steps), dtype=np.uint16)
    for channel, lp in enumerate(flat):
        states[channel], _ = decode(
            np.ascontiguousarray(lp.T), decoder.log_trans_t, log_p_init, decoder.indptr, decoder.indices, decoder.floor
        )
    return states.reshape(prob.shape[:-2] + (n_steps,))


@functools.lru_cache(maxsize=16)
def _transition_local(n_states: int, width: int, window: str, wrap: bool) -> np.ndarray:
    matrix = _ORIGINAL["transition_local"](n_states, width, window=window, wrap=wrap)
    matrix.flags.writeable = False
    return matrix


def transition_local(n_states: int, width: Any, *, window: Any = "triangle", wrap: bool = False) -> np.ndarray:
    """``librosa.sequence.transition_local``, cached for the scalar arguments pyin gives (others go to librosa)."""
    if isinstance(n_states, int | np.integer) and isinstance(width, int | np.integer) and isinstance(window, str):
        return _transition_local(int(n_states), int(width), window, bool(wrap)).copy()
    return _ORIGINAL["transition_local"](n_states, width, window=window, wrap=wrap)


_ORIGINAL: dict[str, Callable[..., Any]] = {}
"""librosa's own ``viterbi`` and ``transition_local``, kept when this module first swaps them."""


@contextmanager
def _faster_sequence() -> Iterator[None]:
    """``librosa.sequence.viterbi`` and ``transition_local`` replaced by this module's while the block runs."""
    import librosa.sequence as sequence

    with _LOCK:
        _ORIGINAL.setdefault("viterbi", sequence.viterbi)
        _ORIGINAL.setdefault("transition_local", sequence.transition_local)
        sequence.viterbi, sequence.transition_local = viterbi, transition_local
        try:
            yield
        finally:
            sequence.viterbi, sequence.transition_local = _ORIGINAL["viterbi"], _ORIGINAL["transition_local"]


def pyin(samples: np.ndarray, *, sr: int, fmin: float, fmax: float, frame_length: int = 2048) -> np.ndarray:
    """The F0 track of ``librosa.pyin(samples, fmin=fmin, fmax=fmax, sr=sr, frame_length=frame_length)``.

    Args:
        samples: Mono (or ``(..., n)`` multi-channel) samples.
        sr: Sample rate in Hz.
        fmin: Lowest F0 searched, in Hz.
        fmax: Highest F0 searched, in Hz.
        frame_length: Frame length in samples.

    Returns:
        F0 in Hz per frame, NaN where unvoiced: the same array librosa returns.
    """
    import librosa

    with _faster_sequence():
        f0, _, _ = librosa.pyin(samples, fmin=fmin, fmax=fmax, sr=sr, frame_length=frame_length)
    return f0


def warm_up() -> float:
    """Compile, and cache on disk, the numba functions pYIN runs (librosa's and :func:`pyin`'s decoder).

    On a fresh install the first pYIN call compiles them for about 40 seconds (librosa's ``guvectorize`` helpers
    compile every signature they list); numba keeps the machine code in ``__pycache__`` folders beside the sources
    (or under ``NUMBA_CACHE_DIR``), so that every later process loads it in a second or two. ``make setup`` calls this
    once; the test suite's controller calls it before its workers start, so that no two processes write one cache
    entry at once.

    Returns:
        The seconds it took (about 40 on a fresh install, 2 to 4 when the cache is warm).
    """
    import time

    import librosa

    started = time.perf_counter()
    sr = 16_000
    tone = (0.5 * np.sin(2 * np.pi * 220.0 * np.arange(sr // 2) / sr)).astype(np.float32)
    pyin(tone, sr=sr, fmin=60.0, fmax=800.0)  # the kit's decoder and librosa's helpers
    librosa.pyin(tone, sr=sr, fmin=60.0, fmax=800.0)  # librosa's own Viterbi decoder
    return time.perf_counter() - started
