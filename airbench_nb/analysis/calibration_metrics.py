"""Calibration metrics over per-answer confidences: ECE, reliability bins, Brier, risk-coverage and AURC, weighted.

Every function takes each answer's ``confidence`` (in [0, 1]) and whether it was ``correct``, and optional bootstrap
``weights`` (rows of :func:`airbench_nb.scoring.resample.weight_rows`: how often each answer counts in a replicate),
so that one definition serves the point value (weights all 1) and every replicate of an interval. The formulas:

Expected calibration error (ECE)
    Confidences fall into :data:`BINS` equal-width bins, ``[0, 0.1), [0.1, 0.2), ..., [0.9, 1.0]`` (1.0 in the last).
    ``ECE = sum_b (n_b / n) * |acc_b - conf_b|``, where ``acc_b`` is the share of correct answers in bin ``b`` and
    ``conf_b`` their mean confidence (Naeini et al. 2015; Guo et al. 2017): the gap between stated confidence and
    accuracy, weighted by bin counts. 0 for a calibrated model; an overconfident model whose confidence exceeds its
    accuracy by ``g`` in every bin has ECE ``g``. Empty bins count 0. With finite samples it is biased upwards (a
    calibrated model of ``n`` answers shows an ECE of order ``sqrt(1/n)``), which the bootstrap interval shows.
Brier score
    The mean over answers of ``sum_k (p_k - y_k)^2`` over the item's options, ``p`` the option probabilities and ``y``
    the one-hot gold (Brier 1950; 0 is perfect, 2 the worst; a uniform guess over ``K`` options scores ``1 - 1/K``).
    Per answer it is computed once (:func:`brier_terms`) and averaged here.
Risk-coverage curve and AURC
    Answers are ordered by confidence, most confident first; accepting the top share ``c`` of them (the coverage),
    the selective risk is the share of errors among the accepted (Geifman & El-Yaniv 2017). Answers of equal
    confidence are accepted together (a threshold cannot split them), so the curve has a point per distinct
    confidence. AURC is the area under it: ``sum_i w_i * risk(i) / sum_i w_i``, ``risk(i)`` the risk at the point
    where answer ``i`` is accepted; with distinct confidences and unit weights, the mean of the risks at coverages
    ``1/n, 2/n, ..., 1``. Lower is better; a model whose confidence does not rank its errors scores its error rate.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

BINS = 10
"""Equal-width confidence bins of the ECE and the reliability diagram."""


def _weights(n: int, weights: np.ndarray | None) -> np.ndarray:
    """``weights`` as (rows, n) floats; one row of ones when None."""
    if weights is None:
        return np.ones((1, n))
    w = np.asarray(weights, dtype=float)
    if w.ndim == 1:
        w = w[None, :]
    if w.shape[1] != n:
        raise ValueError(f"{w.shape[1]} weights per row for {n} answers")
    return w


def _checked(confidence: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(confidence, dtype=float)
    y = np.asarray(correct, dtype=float)
    if c.shape != y.shape or c.ndim != 1:
        raise ValueError(f"confidence {c.shape} and correct {y.shape} must be 1-D and of one length")
    if c.size and (not np.all(np.isfinite(c)) or c.min() < 0 or c.max() > 1 + 1e-9):
        raise ValueError("confidences must be finite and lie in [0, 1]")
    return np.clip(c, 0.0, 1.0), y


def bin_of(confidence: np.ndarray, bins: int = BINS) -> np.ndarray:
    """Each confidence's bin, ``0 .. bins - 1`` (``[k/bins, (k+1)/bins)``; 1.0 in the last bin)."""
    c = np.asarray(confidence, dtype=float)
    return np.minimum((c * bins).astype(int), bins - 1)


def ece(confidence: np.ndarray, correct: np.ndarray, weights: np.ndarray | None = None, bins: int = BINS) -> np.ndarray:
    """Expected calibration error per weight row (one value without weights; see the module docstring)."""
    c, y = _checked(confidence, correct)
    w = _weights(c.size, weights)
    onehot = np.zeros((c.size, bins))
    onehot[np.arange(c.size), bin_of(c, bins)] = 1.0
    conf_sums = w @ (onehot * c[:, None])
    acc_sums = w @ (onehot * y[:, None])
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(acc_sums - conf_sums).sum(axis=1) / total


def weighted_mean(values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """The mean of per-answer values per weight row (accuracy, mean confidence, Brier)."""
    v = np.asarray(values, dtype=float)
    w = _weights(v.size, weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ v) / w.sum(axis=1)


def brier_terms(probs: list[list[float]], gold: list[int]) -> np.ndarray:
    """Each answer's multi-class Brier term ``sum_k (p_k - y_k)^2`` (its options' probabilities, the gold index)."""
    out = np.empty(len(probs))
    for i, (p, g) in enumerate(zip(probs, gold, strict=True)):
        target = np.zeros(len(p))
        target[g] = 1.0
        out[i] = float(np.sum((np.asarray(p, dtype=float) - target) ** 2))
    return out


def aurc(confidence: np.ndarray, correct: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Area under the risk-coverage curve per weight row (ties accepted together; see the module docstring)."""
    c, y = _checked(confidence, correct)
    w = _weights(c.size, weights)
    if not c.size:
        return np.full(w.shape[0], np.nan)
    order = np.argsort(-c, kind="stable")
    cs, errors = c[order], 1.0 - y[order]
    ws = w[:, order]
    # the last position of each run of equal confidences: the point at which the whole run is accepted
    last = np.r_[np.nonzero(np.diff(cs))[0], cs.size - 1]
    end = np.repeat(last, np.diff(np.r_[-1, last]))
    accepted = np.cumsum(ws, axis=1)[:, end]
    wrong = np.cumsum(ws * errors, axis=1)[:, end]
    with np.errstate(invalid="ignore", divide="ignore"):
        risk = np.where(accepted > 0, wrong / np.where(accepted > 0, accepted, 1.0), 0.0)
        return (ws * risk).sum(axis=1) / ws.sum(axis=1)


@dataclass(frozen=True)
class ReliabilityBin:
    """One confidence bin of a reliability diagram."""

    low: float
    """Lower edge of the bin."""
    high: float
    """Upper edge (included for the last bin only)."""
    n: int
    """Answers in the bin."""
    confidence: float | None
    """Their mean confidence (None for an empty bin)."""
    accuracy: float | None
    """Their share of correct answers (None for an empty bin)."""


def reliability_bins(confidence: np.ndarray, correct: np.ndarray, bins: int = BINS) -> list[ReliabilityBin]:
    """Every bin's count, mean confidence and accuracy, in order (empty bins included)."""
    c, y = _checked(confidence, correct)
    index = bin_of(c, bins)
    out = []
    for b in range(bins):
        inside = index == b
        n = int(inside.sum())
        out.append(
            ReliabilityBin(
                low=b / bins,
                high=(b + 1) / bins,
                n=n,
                confidence=float(c[inside].mean()) if n else None,
                accuracy=float(y[inside].mean()) if n else None,
            )
        )
    return out


def risk_coverage(confidence: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The risk-coverage curve: ``(coverage, selective risk)`` at each distinct confidence, most confident first."""
    c, y = _checked(confidence, correct)
    if not c.size:
        return np.zeros(0), np.zeros(0)
    order = np.argsort(-c, kind="stable")
    cs, errors = c[order], 1.0 - y[order]
    last = np.r_[np.nonzero(np.diff(cs))[0], cs.size - 1]
    accepted = np.arange(1, c.size + 1)[last]
    return accepted / c.size, np.cumsum(errors)[last] / accepted


__all__ = [
    "BINS",
    "ReliabilityBin",
    "aurc",
    "bin_of",
    "brier_terms",
    "ece",
    "reliability_bins",
    "risk_coverage",
    "weighted_mean",
]
