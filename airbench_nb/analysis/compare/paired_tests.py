"""The paired tests of model comparisons: McNemar exact, Wilcoxon signed-rank, Holm correction, verdicts.

See :mod:`airbench_nb.analysis.compare`.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from airbench_nb.analysis.compare.common import A_BETTER, ALPHA, B_BETTER, NO_DIFFERENCE

logger = logging.getLogger(__name__)


def mcnemar_exact(a_correct: Sequence[bool] | np.ndarray, b_correct: Sequence[bool] | np.ndarray) -> float:
    """McNemar's exact test of paired right/wrong outcomes (statsmodels ``mcnemar(exact=True)``).

    Args:
        a_correct: Model A right (True) or wrong per item.
        b_correct: Model B on the same items, in the same order.

    Returns:
        The two-sided p-value: a binomial test of the discordant pairs at 0.5; 1.0 with no discordant pair.
    """
    a = np.asarray(a_correct, dtype=bool)
    b = np.asarray(b_correct, dtype=bool)
    table = [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
    if table[0][1] + table[1][0] == 0:
        return 1.0
    return float(mcnemar(table, exact=True).pvalue)


def wilcoxon_signed_rank(differences: Sequence[float] | np.ndarray) -> float:
    """Wilcoxon signed-rank test of paired differences (scipy, two-sided, zero differences dropped).

    As R's ``wilcox.test``: the exact null distribution for up to 50 nonzero differences without ties, else the
    normal approximation with the tie correction. (scipy's default falls back to a permutation test when there are
    ties, which takes seconds per test and adds nothing at the sizes where ties occur: judge scores are integers.)

    Args:
        differences: Per-item ``a - b``.

    Returns:
        The p-value; 1.0 when no difference is nonzero.
    """
    d = np.asarray(differences, dtype=float)
    d = d[~np.isnan(d)]
    if not np.any(d != 0):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a single nonzero difference: normal approximation warns
        nonzero = np.abs(d[d != 0])
        exact = nonzero.size <= 50 and np.unique(nonzero).size == nonzero.size
        method = "exact" if exact else "approx"
        return float(stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided", method=method).pvalue)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-corrected p-values (statsmodels ``multipletests(method="holm")``); None stays None and is not counted.

    Args:
        p_values: Raw p-values, None where a row has no test.

    Returns:
        Corrected p-values in the same order.
    """
    present = [k for k, p in enumerate(p_values) if p is not None and not math.isnan(p)]
    out: list[float | None] = [None] * len(p_values)
    if present:
        _, corrected, _, _ = multipletests([p_values[k] for k in present], alpha=ALPHA, method="holm")
        for k, p in zip(present, corrected, strict=True):
            out[k] = float(p)
    return out


def verdict(diff: float | None, p_holm: float | None, alpha: float = ALPHA, direction: float | None = None) -> str:
    """``"A better"``, ``"B better"`` or ``"no detectable difference"`` from the difference and corrected p.

    Args:
        diff: ``a - b`` as the table shows it.
        p_holm: The Holm-corrected p-value (None: no test).
        alpha: Level.
        direction: Mean per-item difference of the items the test pooled; when its sign disagrees with ``diff``
            (a category whose unweighted mean of tasks and pooled items point different ways) there is no verdict.

    Returns:
        One of :data:`A_BETTER`, :data:`B_BETTER`, :data:`NO_DIFFERENCE`.
    """
    if diff is None or p_holm is None or not p_holm < alpha or diff == 0:
        return NO_DIFFERENCE
    if direction is not None and direction * diff <= 0:
        return NO_DIFFERENCE
    return A_BETTER if diff > 0 else B_BETTER
