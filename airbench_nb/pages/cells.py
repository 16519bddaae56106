"""Cells of the landing page's tables: a value with its interval, scaled and rounded for reading."""

from __future__ import annotations

import logging
from collections.abc import Sequence

logger = logging.getLogger(__name__)

DASH = "–"
"""What a cell without a value shows."""


def interval_cell(value: float | None, ci: Sequence[float | None] | None, scale: float = 1.0, digits: int = 1) -> str:
    """``value [low, high]`` scaled, or a dash when there is no value.

    Args:
        value: The estimate, or None.
        ci: Its interval ``(low, high)``, or None (either end None: no interval shown).
        scale: Factor applied to the value and the interval (100 for percentages of fractions).
        digits: Decimals shown.

    Returns:
        The cell's text.
    """
    if value is None:
        return DASH
    text = f"{value * scale:.{digits}f}"
    if ci and ci[0] is not None and ci[1] is not None:
        text += f" [{ci[0] * scale:.{digits}f}, {ci[1] * scale:.{digits}f}]"
    return text
