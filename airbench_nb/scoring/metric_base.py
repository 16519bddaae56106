"""The defaults of a metric's optional members (:class:`~airbench_nb.scoring.metrics.Metric`), for metric classes.

A module of its own: the metric modules import it, and :mod:`airbench_nb.scoring.metrics` imports them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airbench_nb.score_table import ScoreSection


class BaseMetric:
    """The defaults of a metric's optional members: per protocol, every item that names it, one section."""

    section: ClassVar[str] = ""
    protocol_free: ClassVar[bool] = False
    """Scores computed per protocol."""

    def serves(self, item: Any) -> bool:
        """Every item that names it."""
        return True

    def section_of(self, section: ScoreSection | None) -> str:
        """Its :attr:`section`."""
        return self.section
