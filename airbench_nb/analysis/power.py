"""Power of a paired comparison: the smallest difference it could detect, and the items a given gap would need.

Two models answered the same items; each item gives a paired difference ``d_i = a_i - b_i`` (1/0 accuracies, or
judge scores). A two-sided paired test at level ``alpha`` detects a true mean difference ``delta`` with probability
``power`` when ``delta`` is at least the **minimal detectable difference**

    MDE = t_power(n - 1, alpha, power) x SE,    SE = sd(d) / sqrt(n) x sqrt(design effect),

``t_power`` being the paired t-test's standardised effect at that power (statsmodels ``TTestPower().solve_power``;
for large ``n`` it tends to ``z_(1 - alpha/2) + z_power`` = 1.96 + 0.84 = 2.80). The **design effect** carries the
clustering (:mod:`airbench_nb.scoring.resample`): when items come in clusters (the questions about one recording,
the mixes of one utterance), the standard error is the cluster-robust one (the clusters' sums of differences about
the mean, ``C / (C - 1)`` corrected), and the effective number of items is ``n / design effect``.

The **items needed** to detect a gap ``g`` at the same level and power, given the observed spread, solve the same
equation for ``n``: ``n = (t_power x sd(d) / g)^2 x design effect`` (rounded up; the t quantile solved exactly).

A difference smaller than the MDE that the test did not find is **not distinguishable at this size**: more items,
not a better model, would be needed to tell.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import math
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

ALPHA = 0.05
"""Two-sided level of the paired test the MDE is for."""
POWER = 0.8
"""Power the MDE is for."""
NOT_DISTINGUISHABLE = "not distinguishable at this size"
"""What a difference below the MDE, not found by the test, is called."""


@dataclass(frozen=True)
class Power:
    """The power of one paired comparison."""

    n: int
    """Paired items."""
    clusters: int
    """Clusters the items form (``n`` when none shares one)."""
    sd: float
    """Standard deviation of the paired differences."""
    standard_error: float
    """Standard error of their mean (cluster-robust when items share clusters)."""
    design_effect: float
    """Cluster-robust over naive variance of the mean (1 without clusters)."""
    mde: float | None
    """Minimal detectable difference at :data:`ALPHA` and :data:`POWER`; None with fewer than 2 effective items or
    no spread."""
    alpha: float = ALPHA
    """The test's two-sided level."""
    power: float = POWER
    """The power."""


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence statsmodels' root finder (its ConvergenceWarning is shown past a warnings filter, on stderr)."""
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


@functools.lru_cache(maxsize=4096)
def standardized_effect(n_effective: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The paired t-test's detectable effect in standard errors' units x sqrt(n): statsmodels' ``solve_power``.

    Returns the multiplier ``k`` with MDE = k x sd / sqrt(n_effective); None below 2 effective items. Kept per
    arguments (a root found by statsmodels, about 40 ms): a comparison's model pairs share their item counts.
    """
    from statsmodels.stats.power import TTestPower

    if n_effective < 2:
        return None
    with _quiet():  # statsmodels warns, and returns NaN, when it finds no root
        effect = float(TTestPower().solve_power(effect_size=None, nobs=n_effective, alpha=alpha, power=power))
    return effect * math.sqrt(n_effective) if math.isfinite(effect) else None


def paired_power(
    differences: Sequence[float] | np.ndarray,
    clusters: Sequence[str] | None = None,
    alpha: float = ALPHA,
    power: float = POWER,
) -> Power:
    """The MDE of a paired comparison from its per-item differences (and their clusters).

    Raises:
        ValueError: When ``clusters`` does not hold one key per difference, or alpha/power are not in (0, 1).
    """
    from airbench_nb.scoring.resample import cluster_codes

    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha} and {power}")
    d = np.asarray(differences, dtype=float)
    n = int(d.size)
    codes = cluster_codes(clusters, n)
    count = int(codes.max()) + 1 if n else 0
    if n < 2:
        return Power(n, count, math.nan, math.nan, 1.0, None, alpha, power)
    sd = float(np.std(d, ddof=1))
    naive = sd**2 / n
    effect = 1.0
    if count < n and count >= 2:
        totals = np.bincount(codes, weights=d - d.mean(), minlength=count)
        robust = count / (count - 1) * float(np.sum(totals**2)) / n**2
        effect = robust / naive if naive > 0 else 1.0
    se = math.sqrt(naive * effect)
    k = standardized_effect(n / effect, alpha, power) if sd > 0 else None
    mde = None if k is None else k * sd / math.sqrt(n / effect)
    return Power(n, count, sd, se, effect, mde, alpha, power)


def items_needed(result: Power, gap: float) -> int | None:
    """Paired items needed to detect ``gap`` at the comparison's level and power, with its spread and clustering.

    None when the spread is unknown or the gap is 0 (at least 2: a paired test needs two items).
    """
    from statsmodels.stats.power import TTestPower

    if not gap or not math.isfinite(result.sd) or result.sd <= 0:
        return None
    effect = abs(gap) / result.sd
    solver = TTestPower()
    with _quiet():  # statsmodels warns, and returns NaN, when its bracket holds no root
        n = float(solver.solve_power(effect_size=effect, nobs=None, alpha=result.alpha, power=result.power))
    if not math.isfinite(n):  # a gap many spreads wide: the solver's bracket starts above it; count up instead
        for small in range(2, 1000):
            if solver.power(effect_size=effect, nobs=small, alpha=result.alpha) >= result.power:
                return int(math.ceil(small * result.design_effect))
        return None
    return max(2, int(math.ceil(n * result.design_effect)))


def size_note(diff: float | None, mde: float | None, found: str) -> str | None:
    """:data:`NOT_DISTINGUISHABLE` for a difference the test did not find that is smaller than the MDE, else None.

    Args:
        diff: The observed difference.
        mde: The comparison's minimal detectable difference (None: unknown).
        found: The comparison's verdict (``no detectable difference`` when the test found nothing).
    """
    from airbench_nb.analysis.compare.common import NO_DIFFERENCE

    if diff is None or mde is None or found != NO_DIFFERENCE:
        return None
    return NOT_DISTINGUISHABLE if abs(diff) < mde else None
