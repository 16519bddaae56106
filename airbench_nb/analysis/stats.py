"""Small numeric helpers shared by the analyses: plain JSON numbers and clamped Wilson intervals."""

from __future__ import annotations

import math
from typing import Any

from statsmodels.stats.proportion import proportion_confint

WILSON = "Wilson 95% interval (statsmodels proportion_confint)"
"""How every accuracy interval of the analyses is computed."""


def plain(value: Any) -> float | None:
    """``value`` as a plain float, or None for None, NaN and infinities (JSON has neither)."""
    if value is None:
        return None
    out = float(value)
    return out if math.isfinite(out) else None


def wilson(count: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson interval of ``count / n``, clamped to contain the estimate; ``(nan, nan)`` when ``n`` is 0.

    statsmodels' floating point puts 9/9's upper bound at 0.9999999999999999 and 0/9's lower bound at 3e-17; the
    clamp makes them 1.0 and 0.0, so an interval never excludes its own estimate (and error bars never go negative).

    Args:
        count: Successes.
        n: Trials.
        alpha: 1 - coverage.

    Returns:
        ``(low, high)``.
    """
    if n == 0:
        return math.nan, math.nan
    low, high = proportion_confint(count, n, alpha=alpha, method="wilson")
    share = count / n
    return max(0.0, min(float(low), share)), min(1.0, max(float(high), share))
