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
    ahead_part: ClassVar[str | None] = None
    """The part of :mod:`airbench_nb.scoring.ahead`'s worker its scores take (``transcripts``, ``translations``);
    None: none. A protocol-free metric's sections are computed last while that part is still being computed."""

    def serves(self, item: Any) -> bool:
        """Every item that names it."""
        return True

    def section_of(self, section: ScoreSection | None) -> str:
        """Its :attr:`section`."""
        return self.section
