"""What the UG-Bench text metrics share: a model's answer text read as it is, no judge, entries with bootstrap CIs.

Translations and captions are scored on the answer text itself (no verdict decides them, and the output parser of
:mod:`airbench_nb.unify` reads only the SSEU parts): :func:`answer_text` is the response's text, stripped; a
missing response, an error or an empty text is a failure that stays in the corpus as ``""`` (counted with its
reason, never dropped). :class:`NoJudge` is the half of the metric protocol these metrics share (no verdicts).
:func:`interval_entry` turns per-unit values into a :class:`~airbench_nb.score_table.ScoreEntry` with the kit's
percentile bootstrap (:func:`airbench_nb.scoring.wer.bootstrap_ratio`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from airbench_nb.records import Response, Verdict
from airbench_nb.score_table import ScoreEntry
from airbench_nb.scoring.metric_base import BaseMetric
from airbench_nb.scoring.outcomes import failure_text


@dataclass(frozen=True)
class AnswerText:
    """A model's answer to one item as scored: its text, or ``""`` and the reason when there is none."""

    text: str
    """The answer, stripped; ``""`` for a failure (it stays in the corpus)."""
    failure: str | None
    """Why there is no answer (``no response``, ``response error: ...``, ``empty answer``); None when there is one."""


def answer_text(response: Response | None) -> AnswerText:
    """The text scored for a response (see the module docstring)."""
    why = failure_text(response)
    if why is not None or response is None or response.text is None:
        return AnswerText("", why or "no response")
    text = response.text.strip()
    return AnswerText(text, None if text else "empty answer")


class NoJudge(BaseMetric):
    """The verdict half of the metric protocol for metrics that read the answers themselves."""

    protocol_free: ClassVar[bool] = True
    """Its section is the same under both protocols (computed once by ``score_run``)."""

    def select(self, verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None) -> dict[str, Verdict]:
        """No verdict decides these items."""
        return {}

    def judges_used(self, chosen: Mapping[Any, Verdict]) -> list[str]:
        """None: no judge."""
        return []


def interval_entry(
    values: Sequence[float],
    weights: Sequence[float],
    failures: int,
    reps: int,
    seed: int,
    key: str,
    clusters: Sequence[str] | None = None,
) -> ScoreEntry:
    """``sum(values) / sum(weights)`` with its 95% percentile bootstrap interval over the units.

    Args:
        values: One value per unit (a score, a 0/1 outcome, an error count).
        weights: One weight per unit (1 for a mean; reference words for a corpus error rate).
        failures: Units that failed (already inside ``values`` as their failure value).
        reps: Bootstrap replicates (0: no interval).
        seed: Bootstrap seed.
        key: What is resampled (seeds the generator with ``seed``).
        clusters: Each unit's cluster key (:func:`airbench_nb.records.cluster_of`); where units share one, whole
            clusters are drawn too and the interval is the union of both, the entry naming the clusters and the
            design effect (:func:`airbench_nb.scoring.wer.clustered_ratio_interval`). None: units on their own.
    """
    from airbench_nb.scoring.wer import clustered_ratio_interval

    num = np.asarray(values, dtype=float)
    den = np.asarray(weights, dtype=float)
    total = float(den.sum())
    value = float(num.sum()) / total if total > 0 else None
    low, high, grouping = clustered_ratio_interval(num, den, reps, seed, key, clusters)
    entry = ScoreEntry(value=value, n=len(num), failures=failures, ci_low=low, ci_high=high)
    if grouping.clustered:
        entry.clusters, entry.cluster_unit, entry.design_effect = (
            grouping.clusters,
            grouping.unit,
            grouping.design_effect,
        )
    return entry


def empty_entry() -> ScoreEntry:
    """The entry of a group with no unit (nothing scored)."""
    return ScoreEntry(value=None, n=0, failures=0)


__all__ = ["AnswerText", "NoJudge", "answer_text", "empty_entry", "interval_entry"]
