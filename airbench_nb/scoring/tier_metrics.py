"""The tiered sound-source benchmark through the :class:`~airbench_nb.scoring.metrics.Metric` protocol.

Two metrics, one per item kind, score a model's answers with :mod:`airbench_nb.scoring.tiered` (the computations
``analysis.json``'s tiered section rests on) and put them in the score table:

- :class:`ClosedSetTiers` (``tier_closed_set``, ``sound_source`` items): the model's tier is its backend's
  (:func:`~airbench_nb.models.specs.closed_set_tier`: ``classifier:`` B, ``clap:`` C, any other A). Tiers B and C
  rank the options (the prediction list); in tier A the deciding judge's reading is the prediction.
- :class:`OpenVocabularyTier` (``tier_open_vocabulary``, ``sound_source_open`` items): tier D, the deciding judge's
  hits, and the names the ``sources`` rule reads in each answer (tier D's precision).

The deciding judge of tiers A and D comes from the judge registry
(:func:`~airbench_nb.judge.registry.deciding_judges`): an LLM judge that judged the answers decides before the offline
rule (``rule``, ``sources``), as in the analysis; a model answer without a deciding verdict is unanswered. The
per-item readings (:func:`closed_answer`, :func:`open_answer`) are the ones :mod:`airbench_nb.analysis.tiered_run`
uses, so the numbers are the same.

Each section holds, per granularity (``coarse``, ``fine``), the entries ``accuracy``, ``macro_precision``,
``macro_recall``, ``macro_f1``, ``macro_fnr`` and (ranked tiers) ``top-<k> recall``, under ``measures``, named
``"<granularity> <measure>"``; a measure that is n/a in a tier (tier D's F1) is left out. The Average is the fine
accuracy. ``n`` is the items scored and ``failures`` the ones without a usable answer (an error, an abstention, no
deciding verdict, an empty ranking: counted wrong, inside ``n``, as the analysis counts them). The accuracy
entries (and the Average) and, in the closed-set tiers, the macro F1 entries have the kit's bootstrap interval
(:mod:`airbench_nb.scoring.tier_intervals`: clusters drawn whole where items share a recording, with ``clusters``,
``cluster_unit`` and ``design_effect`` on the entry); the other macro measures and top-k recall have none. A
section is keyed ``tier_<tier>`` in ``metric_sections``; the two metrics compute no protocol of their own (both
protocols get the same section).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from airbench_nb.judge.registry import deciding_judges, names_sources
from airbench_nb.judge.sources import named_sources
from airbench_nb.models.specs import closed_set_tier
from airbench_nb.records import OpenSourceItem, Response, SoundSourceItem, Verdict, cluster_of
from airbench_nb.score_table import ScoreEntry, ScoreSection
from airbench_nb.scoring.metric_base import BaseMetric
from airbench_nb.scoring.tier_intervals import TierInterval, accuracy_interval, macro_f1_interval
from airbench_nb.scoring.tiered import (
    RANKED_TIERS,
    GranularityMetrics,
    Hierarchy,
    SystemMetrics,
    closed_predictions,
    score_closed_set,
    score_open_vocabulary,
)

logger = logging.getLogger(__name__)

RANKING_JUDGE = "ranking"
"""What a ranked tier's (B, C) scores rest on, in place of a judge."""

SECTION_PREFIX = "tier_"
"""``metric_sections`` keys of the tiered sections: ``tier_A`` ... ``tier_D``."""


@dataclass(frozen=True)
class ClosedAnswer:
    """A model's answer to one closed-set item as the tiered metrics read it."""

    predicted: str | None
    """The predicted fine class; None when unanswered (no verdict, an abstention, an empty ranking)."""
    ranked: list[str] | None
    """Ranked tiers: the classes in the model's order; None in tier A."""
    judge: str | None
    """Tier A: the judge whose verdict gave the prediction."""


@dataclass(frozen=True)
class OpenAnswer:
    """A model's answer to one open-vocabulary item as the tiered metrics read it."""

    category_hit: bool | None
    """Whether the answer named the gold category (None: no verdict)."""
    subclass_hit: bool | None
    """Whether it named the gold fine class (None: no verdict)."""
    named: list[str]
    """The classes and categories the ``sources`` rule reads in the answer (tier D's precision)."""
    judge: str | None
    """The judge whose verdict gave the hits."""


def closed_answer(item: SoundSourceItem, response: Response | None, verdict: Verdict | None, tier: str) -> ClosedAnswer:
    """The prediction of one closed-set answer: the ranking's first class (tiers B, C) or the judge's reading (A)."""
    if tier in RANKED_TIERS:
        shown = response.ranking if response is not None else []
        order = [item.classes[item.choices.index(r.label)] for r in shown if r.label in item.choices]
        return ClosedAnswer(order[0] if order else None, order, None)
    if verdict is not None and verdict.choice is not None and verdict.choice < len(item.classes):
        return ClosedAnswer(item.classes[verdict.choice], None, verdict.judge)
    return ClosedAnswer(None, None, None)


def open_answer(item: OpenSourceItem, response: Response | None, verdict: Verdict | None) -> OpenAnswer:
    """The hits of one open-vocabulary answer, and the names it gives (stored by ``sources``, else read again)."""
    hits = verdict.hits if verdict is not None else None
    text = response.text if response is not None and response.error is None else None
    if hits is not None and verdict is not None and names_sources(verdict.judge):
        named = list(hits.named)  # what the rule read, stored with its verdict
    else:  # an LLM judge gives hits only: the rule reads the names for precision
        named = [n.name for n in named_sources(text, item)] if text else []
    return OpenAnswer(
        None if hits is None else hits.category,
        None if hits is None else hits.subclass,
        list(dict.fromkeys(named)),
        verdict.judge if verdict is not None else None,
    )


def decided_by(verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str]) -> dict[str, Verdict]:
    """The deciding verdict per uid: the first judge of ``judges`` with one decides (its last record wins)."""
    chosen: dict[str, Verdict] = {}
    by_judge: dict[str, dict[str, Verdict]] = {}
    for verdict in verdicts:
        if verdict.uid in uids:
            by_judge.setdefault(verdict.judge, {})[verdict.uid] = verdict
    for judge in reversed(judges):  # earlier judges overwrite later ones
        chosen.update(by_judge.get(judge, {}))
    return chosen


@dataclass(frozen=True)
class TierOutcome:
    """One item's outcome in a tier: the gold class and what the model's answer gives."""

    system: str
    """The model spec."""
    tier: str
    """The tier of the answer."""
    gold: str
    """The gold fine class."""
    hierarchy: dict[str, str]
    """Fine class -> coarse category of the item."""
    closed: ClosedAnswer | None = None
    """Tiers A, B, C: the answer's prediction."""
    opened: OpenAnswer | None = None
    """Tier D: the answer's hits."""
    cluster: str = ""
    """The item's cluster key (:func:`airbench_nb.records.cluster_of`); empty: the item on its own."""


def _entry(value: float | None, n: int, failures: int, correct: int | None = None) -> ScoreEntry:
    if correct is None:
        return ScoreEntry(value=value, n=n, failures=failures)
    return ScoreEntry(value=value, n=n, failures=failures, correct=correct, accuracy=value)


def _correct(metrics: GranularityMetrics) -> int:
    """Items whose answer was right (closed set: the gold label predicted; tier D: hit), from per-label recall."""
    return round(sum(score.recall * score.support for score in metrics.per_class.values()))


def _with_interval(entry: ScoreEntry, interval: TierInterval | None) -> ScoreEntry:
    """The entry with the interval's ends (and its clusters, where some items share one)."""
    if interval is None:
        return entry
    entry.ci_low, entry.ci_high = interval.low, interval.high
    if interval.clustering.clustered:
        entry.clusters = interval.clustering.clusters
        entry.cluster_unit = interval.clustering.unit
        entry.design_effect = interval.clustering.design_effect
    return entry


def tier_section(
    result: SystemMetrics,
    judges: Sequence[str],
    failures: int,
    intervals: Mapping[str, TierInterval] | None = None,
) -> ScoreSection:
    """A tier's :class:`~airbench_nb.score_table.ScoreSection` from one system's metrics (module docstring).

    Args:
        result: The system's metrics (:func:`~airbench_nb.scoring.tiered.score_closed_set` or
            :func:`~airbench_nb.scoring.tiered.score_open_vocabulary`).
        judges: What its scores rest on (the deciding judges, or ``ranking``).
        failures: Items with no usable answer (counted wrong).
        intervals: Bootstrap intervals by measure name (``"fine accuracy"``, ``"coarse macro_f1"``, ...).
    """
    intervals = intervals or {}
    measures: dict[str, ScoreEntry] = {}
    accuracy: dict[str, ScoreEntry] = {}
    for granularity in ("coarse", "fine"):
        metrics: GranularityMetrics = getattr(result, granularity)
        correct = _correct(metrics)
        accuracy[granularity] = _with_interval(
            _entry(correct / metrics.n if metrics.n else None, metrics.n, failures, correct),
            intervals.get(f"{granularity} accuracy"),
        )
        measures[f"{granularity} accuracy"] = accuracy[granularity]
        for name in ("macro_precision", "macro_recall", "macro_f1", "macro_fnr"):
            value = getattr(metrics, name)
            if value is not None:
                measures[f"{granularity} {name}"] = _with_interval(
                    _entry(float(value), metrics.n, failures), intervals.get(f"{granularity} {name}")
                )
        for k, value in metrics.top_k.items():
            measures[f"{granularity} top-{k} recall"] = _entry(float(value), metrics.n, failures)
    extra = {"reason": result.fine.reason} if result.fine.reason else {}
    return ScoreSection(
        average=accuracy["fine"].model_copy(),
        measures=measures,
        tier=result.tier,
        items=result.fine.n,
        failed=failures,
        source=list(judges),
        **extra,
    )


def _keys(outcomes: Sequence[TierOutcome]) -> list[str]:
    """Each outcome's cluster key (its position when it has none)."""
    return [o.cluster or f"unit:{k}" for k, o in enumerate(outcomes)]


class _TierMetric(BaseMetric):
    """What the two tiered metrics share."""

    name: ClassVar[str] = ""
    section: ClassVar[str] = ""
    protocol_free: ClassVar[bool] = True
    """Tier scores do not depend on the protocol: computed once, the same in both."""
    tiers: ClassVar[tuple[str, ...]] = ()
    """The tiers whose deciding judges select verdicts."""

    def section_of(self, section: ScoreSection | None) -> str:
        """``tier_<tier>`` for a computed section; the metric's section name when the model answered none."""
        return f"{SECTION_PREFIX}{section.tier}" if section is not None and section.tier else self.section

    def select(self, verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None) -> dict[str, Verdict]:
        """The deciding verdict per item, by the registry's deciding judges of the tier.

        ``judges`` is not used: the tiered benchmark's judges are the registry's, as in the analysis.
        """
        relevant = [v for v in verdicts if v.uid in uids]
        present = sorted({v.judge for v in relevant})
        order = [j for tier in self.tiers for j in deciding_judges(tier, present)]
        return decided_by(relevant, uids, list(dict.fromkeys(order)))

    def judges_used(self, chosen: Mapping[Any, Verdict]) -> list[str]:
        """The judges whose verdicts decided items."""
        return sorted({v.judge for v in chosen.values()})


class ClosedSetTiers(_TierMetric):
    """Tiers A, B and C of the tiered benchmark: a closed-set answer's prediction (and ranking) per item."""

    name: ClassVar[str] = "tier_closed_set"
    section: ClassVar[str] = "tier_closed_set"
    tiers: ClassVar[tuple[str, ...]] = ("A",)

    def outcomes(
        self, item: SoundSourceItem, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str
    ) -> list[TierOutcome]:
        """One outcome: the item's gold class and the answer's prediction in the model's tier."""
        tier = closed_set_tier(response.model) if response is not None else "A"
        answer = closed_answer(item, response, chosen.get(item.uid) if tier == "A" else None, tier)
        system = response.model if response else ""
        return [TierOutcome(system, tier, item.fine, item.hierarchy(), closed=answer, cluster=cluster_of(item))]

    def aggregate(self, outcomes: Sequence[TierOutcome], protocol: str, reps: int, seed: int) -> ScoreSection:
        """:func:`~airbench_nb.scoring.tiered.score_closed_set` over the items, as a section."""
        answered = [o for o in outcomes if o.system]
        tier = answered[0].tier if answered else "A"
        system = answered[0].system if answered else "system"
        ranked = tier in RANKED_TIERS
        answers = [o.closed for o in outcomes if o.closed is not None]
        result = score_closed_set(
            outcomes[0].hierarchy,
            [o.gold for o in outcomes],
            [a.predicted for a in answers],
            system=system,
            tier=tier,
            ranked=[a.ranked or [] for a in answers] if ranked else None,
        )
        judges = [RANKING_JUDGE] if ranked else sorted({a.judge for a in answers if a.judge})
        y_fine, y_coarse = closed_predictions(
            outcomes[0].hierarchy, [a.predicted for a in answers], [a.ranked or [] for a in answers] if ranked else None
        )
        h = Hierarchy.of(outcomes[0].hierarchy)
        gold = {"fine": [o.gold for o in outcomes], "coarse": [h.fine_to_coarse[o.gold] for o in outcomes]}
        said = {"fine": y_fine, "coarse": y_coarse}
        keys = _keys(outcomes)
        intervals: dict[str, TierInterval] = {}
        for granularity in ("coarse", "fine"):
            where = f"tier/{system}/{granularity}"
            right = [g == p for g, p in zip(gold[granularity], said[granularity], strict=True)]
            intervals[f"{granularity} accuracy"] = accuracy_interval(right, keys, reps, seed, f"{where}/accuracy")
            intervals[f"{granularity} macro_f1"] = macro_f1_interval(
                h.labels(granularity), gold[granularity], said[granularity], keys, reps, seed, f"{where}/macro_f1"
            )
        return tier_section(result, judges, sum(a.predicted is None for a in answers), intervals)


class OpenVocabularyTier(_TierMetric):
    """Tier D of the tiered benchmark: an open-vocabulary answer's hits per item."""

    name: ClassVar[str] = "tier_open_vocabulary"
    section: ClassVar[str] = "tier_open_vocabulary"
    tiers: ClassVar[tuple[str, ...]] = ("D",)

    def outcomes(
        self, item: OpenSourceItem, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str
    ) -> list[TierOutcome]:
        """One outcome: the item's gold class and the answer's hits."""
        answer = open_answer(item, response, chosen.get(item.uid))
        system = response.model if response else ""
        return [TierOutcome(system, "D", item.fine, item.hierarchy(), opened=answer, cluster=cluster_of(item))]

    def aggregate(self, outcomes: Sequence[TierOutcome], protocol: str, reps: int, seed: int) -> ScoreSection:
        """:func:`~airbench_nb.scoring.tiered.score_open_vocabulary` over the items, as a section."""
        system = next((o.system for o in outcomes if o.system), "system")
        answers = [o.opened for o in outcomes if o.opened is not None]
        result = score_open_vocabulary(
            outcomes[0].hierarchy,
            [o.gold for o in outcomes],
            [a.category_hit for a in answers],
            [a.subclass_hit for a in answers],
            system=system,
            named=[a.named for a in answers],
        )
        judges = sorted({a.judge for a in answers if a.judge})
        fine = [bool(a.subclass_hit) for a in answers]
        hits = {"fine": fine, "coarse": [bool(a.category_hit) or f for a, f in zip(answers, fine, strict=True)]}
        keys = _keys(outcomes)
        intervals = {
            f"{g} accuracy": accuracy_interval(hits[g], keys, reps, seed, f"tier/{system}/{g}/accuracy")
            for g in ("coarse", "fine")
        }
        return tier_section(result, judges, sum(a.category_hit is None for a in answers), intervals)


__all__ = [
    "ClosedAnswer",
    "ClosedSetTiers",
    "OpenAnswer",
    "OpenVocabularyTier",
    "TierOutcome",
    "closed_answer",
    "decided_by",
    "open_answer",
    "tier_section",
]
