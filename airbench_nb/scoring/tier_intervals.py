"""Bootstrap intervals of the tiered benchmark's accuracy and macro F1 (clusters drawn whole where items share one).

The tiered scores (:mod:`airbench_nb.scoring.tiered`) are computed once over all items; their intervals come from
the kit's percentile bootstrap (:mod:`airbench_nb.scoring.resample`): each replicate weights the items (whole
clusters, :func:`airbench_nb.records.cluster_of`, where some share one: the interval is then the union with the
item-level one, with the design effect) and recomputes

- **accuracy**: the weighted share of items answered right (closed set: the gold class predicted; tier D: a hit);
- **macro F1** (closed-set tiers): per class ``2 TP / (2 TP + FP + FN)`` of the weighted confusion counts, 0 for a
  class with none of them (scikit-learn's ``zero_division=0``), averaged over every class of the label set as
  :func:`sklearn.metrics.f1_score` with ``average="macro"`` and ``labels`` does (equal to it with unit weights).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from airbench_nb.scoring.resample import Clustering, clustered_interval, key_rng, weight_rows

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TierInterval:
    """One tiered measure's bootstrap interval."""

    low: float | None
    """Lower end (None without replicates)."""
    high: float | None
    """Upper end."""
    clustering: Clustering
    """How the items were clustered (a design effect only where some share a cluster)."""


def _interval(
    statistic: Callable[[np.ndarray], np.ndarray], n: int, keys: Sequence[str] | None, reps: int, seed: int, key: str
) -> TierInterval:
    def draw(codes: np.ndarray | None) -> np.ndarray:
        parts = [statistic(w) for w in weight_rows(n, reps, key_rng(seed, key), codes)]
        return np.concatenate(parts) if parts else np.array([])

    low, high, grouping = clustered_interval(draw, keys, n, reps)
    return TierInterval(low, high, grouping)


def accuracy_interval(
    correct: Sequence[bool], keys: Sequence[str] | None, reps: int, seed: int, key: str
) -> TierInterval:
    """The interval of the share of items right.

    Args:
        correct: Per item, whether it was answered right.
        keys: Each item's cluster key; None: items on their own.
        reps: Replicates (0: no interval).
        seed: The seed.
        key: What is resampled (seeds the generator with ``seed``).
    """
    right = np.asarray(correct, dtype=float)
    n = right.size

    def statistic(weights: np.ndarray) -> np.ndarray:
        total = weights.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (weights @ right) / total

    return _interval(statistic, n, keys, reps, seed, key)


def weighted_macro_f1(
    labels: Sequence[str], y_true: Sequence[str], y_pred: Sequence[str], weights: np.ndarray
) -> np.ndarray:
    """Macro F1 over ``labels`` per row of ``weights`` (rows, items); a prediction outside ``labels`` is no class."""
    index = {label: j for j, label in enumerate(labels)}
    n, k = len(y_true), len(labels)
    truth = np.zeros((n, k))
    said = np.zeros((n, k))
    for i, (t, p) in enumerate(zip(y_true, y_pred, strict=True)):
        if t in index:
            truth[i, index[t]] = 1.0
        if p in index:
            said[i, index[p]] = 1.0
    tp = weights @ (truth * said)
    fp = weights @ (said * (1.0 - truth))
    fn = weights @ (truth * (1.0 - said))
    denominator = 2.0 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(denominator > 0, 2.0 * tp / np.where(denominator > 0, denominator, 1.0), 0.0)
    return f1.mean(axis=1)


def macro_f1_interval(
    labels: Sequence[str],
    y_true: Sequence[str],
    y_pred: Sequence[str],
    keys: Sequence[str] | None,
    reps: int,
    seed: int,
    key: str,
) -> TierInterval:
    """The interval of the macro F1 over ``labels`` (:func:`weighted_macro_f1`)."""
    return _interval(lambda w: weighted_macro_f1(labels, y_true, y_pred, w), len(y_true), keys, reps, seed, key)


__all__ = ["TierInterval", "accuracy_interval", "macro_f1_interval", "weighted_macro_f1"]
