"""Bootstrap resampling that follows the data's clusters, and the design effect it reveals.

Every interval of the kit is a percentile bootstrap: the units (items, utterances, pairs) are drawn with replacement
and the statistic is computed again on each draw. When units come in clusters (:mod:`airbench_nb.records.clusters`:
the mixes of one utterance, the directions of one sentence, the questions about one recording), drawing units one by
one treats them as independent and the interval comes out too narrow. :func:`weight_rows` draws whole clusters
instead: each replicate draws as many clusters as there are, with replacement, and every unit of a drawn cluster
counts as often as its cluster was drawn (the cluster bootstrap of Davison & Hinkley 1997, section 3.8, as
lmms-eval's and inspect_ai's clustered standard errors resample clusters).

A replicate is a row of unit weights (how often each unit counts), so that one function serves any statistic that
takes weights: a ratio of sums (``weights @ numerators / weights @ denominators``), summed BLEU statistics, a
weighted average precision.

When every unit is its own cluster the draws are exactly the unit bootstrap's (the same generator calls, in the same
order), so that an item-level interval keeps its values. When units share clusters, the kit's interval is the union
of the clustered and the unit-level percentile intervals (:func:`union`): never narrower than before. The cluster
bootstrap can come out narrower when there are few clusters (three utterances: ten distinct resamples) or when the
clusters balance each other (every utterance at every SNR, so that each cluster spans the same range); that says it
cannot be trusted there, not that the score is known better.

:func:`design_effect` is the variance of the clustered replicates over the variance of the unit-level ones: how much
the clustering widens the interval (its square root is the ratio of the widths). For a mean over clusters of equal
size ``m`` whose intra-class correlation is ``rho`` it is close to Kish's ``1 + (m - 1) rho``.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from airbench_nb.records.clusters import cluster_unit

logger = logging.getLogger(__name__)

BOOTSTRAP_CHUNK = 1_000_000
"""Upper bound on units x replicates drawn at once by a bootstrap (about 8 MB of indices per chunk)."""

CONFIDENCE = 0.95
"""Coverage of every bootstrap interval of the kit (two-sided percentile interval)."""


def key_rng(seed: int, key: str) -> np.random.Generator:
    """The generator of one bootstrap: seeded by ``seed`` and the CRC-32 of ``key`` (what is resampled)."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def percentile_interval(replicates: np.ndarray) -> tuple[float | None, float | None]:
    """The :data:`CONFIDENCE` percentile interval of bootstrap replicates (NaN ignored; None, None when none)."""
    replicates = np.asarray(replicates, dtype=float)
    finite = replicates[~np.isnan(replicates)]
    if not finite.size:
        return None, None
    tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def cluster_codes(keys: Sequence[str] | None, n: int) -> np.ndarray:
    """Each unit's cluster as an integer, in the order clusters first appear (``arange(n)`` without keys).

    Raises:
        ValueError: When ``keys`` does not hold one key per unit.
    """
    if keys is None:
        return np.arange(n)
    if len(keys) != n:
        raise ValueError(f"{len(keys)} cluster keys for {n} units")
    first: dict[str, int] = {}
    return np.array([first.setdefault(str(k), len(first)) for k in keys], dtype=int)


def weight_rows(
    n: int, reps: int, rng: np.random.Generator, codes: np.ndarray | None = None, *, per_cluster: bool = False
) -> Iterator[np.ndarray]:
    """Chunks of bootstrap weights (rows, n): how often each unit counts in each replicate, ``reps`` rows in all.

    Args:
        n: Units.
        reps: Replicates.
        rng: The generator (each row draws ``rng.integers(0, clusters, clusters)``).
        codes: Each unit's cluster (:func:`cluster_codes`); None: every unit its own cluster.
        per_cluster: Yield how often each cluster is drawn (rows, clusters) instead: the same draws, for a statistic
            summed per cluster first (:func:`resampled_sums`).
    """
    codes = np.arange(n) if codes is None else np.asarray(codes, dtype=int)
    if codes.shape != (n,):
        raise ValueError(f"{codes.shape[0] if codes.ndim else 0} cluster codes for {n} units")
    clusters = int(codes.max()) + 1 if n else 0
    if not n or not reps:
        return
    singletons = clusters == n and bool(np.all(codes == np.arange(n)))
    step = max(1, BOOTSTRAP_CHUNK // max(n, 1))
    for start in range(0, reps, step):
        rows = min(step, reps - start)
        idx = rng.integers(0, clusters, size=(rows, clusters))
        idx += np.arange(0, rows * clusters, clusters)[:, None]  # row r's draws counted in bins r * clusters + ...
        drawn = np.bincount(idx.ravel(), minlength=rows * clusters).reshape(rows, clusters).astype(float)
        yield drawn if singletons or per_cluster else np.take(drawn, codes, axis=1)  # drawn[:, codes], faster


def whole_numbers(values: np.ndarray) -> bool:
    """Whether every value is a whole number small enough that any sum of them is exact in float64."""
    values = np.asarray(values, dtype=float)
    return (
        bool(np.all(np.isfinite(values)))
        and np.array_equal(values, np.rint(values))
        and (
            float(np.abs(values).sum()) * 1e4 < 2.0**53  # a replicate counts a unit at most a few thousand times
        )
    )


def resampled_sums(
    values: np.ndarray, reps: int, rng: np.random.Generator, codes: np.ndarray | None = None
) -> Iterator[np.ndarray]:
    """Chunks of bootstrap replicates' column sums of ``values`` (units x k), from the draws of :func:`weight_rows`.

    Each chunk is ``w @ values`` for a chunk ``w`` of :func:`weight_rows` (the same draws from ``rng``). With
    clusters and whole-number values (:func:`whole_numbers`: counts, errors, right answers), each cluster's units
    are summed first and the draws count clusters, not units: the same sums (exact in any order), without the
    replicates x units weights.
    """
    values = np.asarray(values, dtype=float)
    n = values.shape[0]
    if codes is None or not whole_numbers(values):
        for w in weight_rows(n, reps, rng, codes):
            yield w @ values
        return
    codes = np.asarray(codes, dtype=int)
    clusters = int(codes.max()) + 1 if n else 0
    totals = np.zeros((clusters, values.shape[1]))
    np.add.at(totals, codes, values)
    for drawn in weight_rows(n, reps, rng, codes, per_cluster=True):
        yield drawn @ totals


def design_effect(clustered: np.ndarray, units: np.ndarray) -> float | None:
    """Variance of the clustered replicates over that of the unit-level ones (NaN ignored); None when undefined."""
    a, b = clustered[np.isfinite(clustered)], units[np.isfinite(units)]
    if a.size < 2 or b.size < 2:
        return None
    var_b = float(np.var(b, ddof=1))
    if var_b <= 0:
        return None
    return float(np.var(a, ddof=1)) / var_b


def union(
    clustered: tuple[float | None, float | None], units: tuple[float | None, float | None]
) -> tuple[float | None, float | None]:
    """The smallest interval holding both (an end that is None on one side is the other's)."""
    lows = [x for x in (clustered[0], units[0]) if x is not None]
    highs = [x for x in (clustered[1], units[1]) if x is not None]
    return (min(lows) if lows else None), (max(highs) if highs else None)


@dataclass(frozen=True)
class Clustering:
    """How an interval's units were clustered."""

    units: int
    """Units resampled."""
    clusters: int
    """Clusters they form (equal to ``units`` when none shares a cluster)."""
    unit: str
    """What a cluster is, in words (:func:`~airbench_nb.records.clusters.cluster_unit`)."""
    design_effect: float | None
    """Variance of the clustered bootstrap over that of the unit bootstrap; None when not computed or undefined."""

    @property
    def clustered(self) -> bool:
        """Whether some cluster holds more than one unit."""
        return self.clusters < self.units


def clustering(keys: Sequence[str] | None, n: int) -> tuple[np.ndarray, int, str]:
    """``(codes, clusters, unit)`` of ``n`` units' cluster keys (every unit its own without keys)."""
    codes = cluster_codes(keys, n)
    clusters = int(codes.max()) + 1 if n else 0
    return codes, clusters, cluster_unit(keys or [])


def clustered_interval(
    draw: Callable[[np.ndarray | None], np.ndarray],
    keys: Sequence[str] | None,
    n: int,
    reps: int,
    *,
    units: np.ndarray | None = None,
) -> tuple[float | None, float | None, Clustering]:
    """The kit's interval of one statistic: the unit bootstrap's, widened by the cluster bootstrap's where clustered.

    Without keys, or when every unit is its own cluster, the interval is the unit-level percentile interval and the
    clustering says so (no design effect). Otherwise both bootstraps are drawn, the interval is their :func:`union`
    (never narrower than the units') and the :func:`design_effect` is computed.

    Args:
        draw: The statistic's replicates given the units' cluster codes (None: every unit on its own); it draws its
            own weights (e.g. from :func:`weight_rows` with a :func:`key_rng`), so that the two bootstraps are
            seeded alike.
        keys: Each unit's cluster key (:func:`~airbench_nb.records.clusters.cluster_of`); None: no clusters.
        n: Units.
        reps: Replicates (0: no interval).
        units: The unit-level replicates when the caller has them already (not drawn again).

    Returns:
        ``(low, high, clustering)``; the ends are None without replicates.
    """
    codes, count, unit = clustering(keys, n)
    if not reps or not n:
        return None, None, Clustering(n, count, unit, None)
    if units is None:
        units = draw(None)
    if keys is None or count == n:
        return (*percentile_interval(units), Clustering(n, count, unit, None))
    clustered = draw(codes)
    low, high = union(percentile_interval(clustered), percentile_interval(units))
    return low, high, Clustering(n, count, unit, design_effect(clustered, units))
