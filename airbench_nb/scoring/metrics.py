"""Metrics: how an item kind is scored, as classes behind one protocol, like models and judges.

A :class:`Metric` does three things for the items that name it (``item.METRICS``):

1. :meth:`~Metric.select` picks, from one model's current verdicts, the ones that decide its items (a metric that
   needs no judge returns an empty index);
2. :meth:`~Metric.outcomes` turns one (item, response, verdicts) into typed outcome records under a protocol
   (``official`` or ``strict``): a value, or a failure with its reason;
3. :meth:`~Metric.aggregate` turns the outcomes of every item into a section of
   :class:`~airbench_nb.score_table.ScoreEntry` values (per subset, task, category and the Average), each with n,
   failures and a 95% bootstrap interval.

:func:`~airbench_nb.scoring.run.score_run` runs every registered metric over the items that name it; a new kind of
answer (a transcript scored by WER, a translation by BLEU) is a new metric class registered with
:func:`register_metric`, not a new branch there. The two metrics of AIR-Bench:

- :class:`ChoiceAccuracy` (``choice_accuracy``, Foundation): official reads the letter as the official script does
  and drops failures; strict takes the deciding judge's verdict and counts failures wrong.
- :class:`JudgeScore` (``judge_score``, Chat): the Chat judge's 1-10 scores in both orders; official parses the raw
  reply as ``cal_score.py`` does, strict takes the parsed scores; failures are left out and counted.

And the three of the items scored against references (:mod:`airbench_nb.scoring.reference`): ``wer``,
``scene_macc`` and ``event_map``. UG-Bench's: ``bleu`` and ``chrf`` (:mod:`airbench_nb.scoring.translation`),
``cider_d`` and ``caption_similarity`` (:mod:`airbench_nb.scoring.captioning`, with ``spider`` and ``fense`` run only
when asked for: :func:`optional_metrics`), ``speech_output`` and ``spoken_answer``
(:mod:`airbench_nb.scoring.speech_output`). The tiered sound-source benchmark's: ``tier_closed_set`` and
``tier_open_vocabulary`` (:mod:`airbench_nb.scoring.tier_metrics`, one section per tier). MMAU's, MMAR's and
MMSU's: ``mmau_accuracy``, ``mmar_accuracy`` and ``mmsu_accuracy`` (:mod:`airbench_nb.scoring.choice_qa`).

A metric that takes options (the embedding backend) has
``configured(options)``; :func:`~airbench_nb.scoring.run.score_run` applies its ``metric_options`` through it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

from airbench_nb.records import ChatItem, FoundationItem, Response, Verdict, cluster_of
from airbench_nb.registries import lookup
from airbench_nb.score_table import ScoreSection
from airbench_nb.scoring.aggregate import ValueOutcome, _chat_section, _foundation_section, mean_section
from airbench_nb.scoring.captioning import CaptionSimilarity, CiderD, Fense, Spider, require_metric
from airbench_nb.scoring.choice_qa import CHOICE_QA_METRICS
from airbench_nb.scoring.metric_base import BaseMetric
from airbench_nb.scoring.outcomes import (
    CHAT_ORDERS,
    RULE_JUDGE,
    ChatOutcome,
    FoundationOutcome,
    chat_outcomes_of,
    failure_text,
    foundation_verdicts,
    injection_counts,
    official_foundation_correct,
    screened,
    strict_foundation,
)
from airbench_nb.scoring.reference import EventTagging, SceneAccuracy, WordErrorRate
from airbench_nb.scoring.speech_output import SpeechOutputWer, SpokenAnswerAccuracy
from airbench_nb.scoring.tier_metrics import ClosedSetTiers, OpenVocabularyTier
from airbench_nb.scoring.translation import Bleu, Chrf

logger = logging.getLogger(__name__)


@runtime_checkable
class Metric(Protocol):
    """How the items that name a metric are scored (see the module docstring)."""

    name: ClassVar[str]
    """The name items use in ``METRICS``."""
    section: ClassVar[str]
    """The section of a protocol's scores it fills (``foundation``, ``chat``, ...)."""

    def select(
        self, verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None
    ) -> Mapping[Any, Verdict]:
        """The verdicts that decide the items ``uids``, keyed as :meth:`outcomes` looks them up."""
        ...

    def judges_used(self, chosen: Mapping[Any, Verdict]) -> list[str]:
        """The judges of the chosen verdicts, sorted (what the scores rest on)."""
        ...

    def outcomes(self, item: Any, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str) -> list[Any]:
        """The outcome records of one item under ``protocol``."""
        ...

    def aggregate(self, outcomes: Sequence[Any], protocol: str, reps: int, seed: int) -> ScoreSection:
        """The section of every item's outcomes: entries with n, failures and a CI."""
        ...

    protocol_free: ClassVar[bool]
    """Whether its scores do not depend on the protocol (every reference metric): computed once, the same section in
    both protocols' scores."""

    def serves(self, item: Any) -> bool:
        """Whether it scores this item (of those that name it, or every item for an optional metric)."""
        ...

    def section_of(self, section: ScoreSection | None) -> str:
        """The key of a section in ``metric_sections`` (None: the model answered none of its items).

        Its :attr:`section`, or a name per computed section (the tiered benchmark's ``tier_<tier>``).
        """
        ...


@runtime_checkable
class _CoreMetric(Protocol):
    """The members a metric must have; :class:`BaseMetric` gives the others their defaults."""

    name: ClassVar[str]
    section: ClassVar[str]

    def select(
        self, verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None
    ) -> Mapping[Any, Verdict]: ...

    def judges_used(self, chosen: Mapping[Any, Verdict]) -> list[str]: ...

    def outcomes(
        self, item: Any, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str
    ) -> list[Any]: ...

    def aggregate(self, outcomes: Sequence[Any], protocol: str, reps: int, seed: int) -> ScoreSection: ...


class _WithDefaults(BaseMetric):
    """A metric written without the optional members, with :class:`BaseMetric`'s defaults for them."""

    def __init__(self, metric: Any) -> None:
        self._metric = metric
        self.name = metric.name
        self.section = metric.section  # type: ignore[misc] - the wrapped metric's, per instance
        self.protocol_free = bool(getattr(metric, "protocol_free", False))  # type: ignore[misc]

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._metric, attribute)

    def serves(self, item: Any) -> bool:
        """The wrapped metric's ``serves`` when it has one, else every item."""
        own = getattr(self._metric, "serves", None)
        return True if own is None else bool(own(item))

    def select(
        self, verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None
    ) -> Mapping[Any, Verdict]:
        """The wrapped metric's."""
        return self._metric.select(verdicts, uids, judges)

    def judges_used(self, chosen: Mapping[Any, Verdict]) -> list[str]:
        """The wrapped metric's."""
        return self._metric.judges_used(chosen)

    def outcomes(self, item: Any, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str) -> list[Any]:
        """The wrapped metric's."""
        return self._metric.outcomes(item, response, chosen, protocol)

    def aggregate(self, outcomes: Sequence[Any], protocol: str, reps: int, seed: int) -> ScoreSection:
        """The wrapped metric's."""
        return self._metric.aggregate(outcomes, protocol, reps, seed)


def as_metric(metric: Any) -> Metric:
    """The metric itself when it has every member of :class:`Metric`, else it with the defaults of the optional ones.

    :class:`BaseMetric`'s ``protocol_free``, ``serves`` and ``section_of`` for a metric written before they were
    declared.

    Raises:
        TypeError: When the object lacks a member every metric needs (name, section, select, outcomes, ...).
    """
    if isinstance(metric, Metric):
        return metric
    if not isinstance(metric, _CoreMetric):
        raise TypeError(f"{type(metric).__name__} is not a Metric (name, section, select, outcomes, aggregate, ...)")
    return _WithDefaults(metric)


METRICS: dict[str, Metric] = {}
"""Registered metrics by name."""


def register_metric(metric: Metric) -> Metric:
    """Register a metric under its name (replacing one of that name), and return it.

    A metric without ``protocol_free``, ``serves`` or ``section_of`` is registered with their defaults
    (:func:`as_metric`).

    Raises:
        TypeError: When the object does not implement :class:`Metric`'s required members.
    """
    METRICS[metric.name] = as_metric(metric)
    return metric


def metric_for(name: str) -> Metric:
    """The registered metric of a name.

    Raises:
        KeyError: For a name no metric is registered under (the message lists the known ones).
    """
    return lookup(METRICS, name, "metric", sort=True)


def metrics_of(items: Iterable[Any]) -> list[Metric]:
    """The metrics the items name, in first-named order."""
    names = dict.fromkeys(name for item in items for name in getattr(item, "METRICS", ()))
    return [metric_for(name) for name in names]


class ChoiceAccuracy(BaseMetric):
    """Accuracy of single-choice answers (AIR-Bench Foundation), official and strict."""

    name: ClassVar[str] = "choice_accuracy"
    section: ClassVar[str] = "foundation"

    def select(self, verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None) -> dict[str, Verdict]:
        """The deciding verdict of each item (see :func:`~airbench_nb.scoring.run.foundation_verdicts`)."""
        return foundation_verdicts(verdicts, uids, judges)

    def judges_used(self, chosen: Mapping[Any, Verdict]) -> list[str]:
        """The judges whose verdicts decided items."""
        return sorted({v.judge for v in chosen.values()})

    def outcomes(
        self, item: FoundationItem, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str
    ) -> list[FoundationOutcome]:
        """One outcome: correct, wrong, or a failure with its reason."""
        if protocol == "strict":
            correct, reason = strict_foundation(response, chosen.get(item.uid))
        else:
            failed = failure_text(response)
            if failed is not None or response is None:
                correct, reason = None, failed or "no response"
            else:
                correct, reason = official_foundation_correct(response.text, len(item.choices), item.answer)
        screen = screened(chosen.get(item.uid))
        return [FoundationOutcome(item.task, item.dataset, correct, reason, **screen, cluster=cluster_of(item))]

    def aggregate(self, outcomes: Sequence[FoundationOutcome], protocol: str, reps: int, seed: int) -> ScoreSection:
        """Subsets, tasks, categories and the Average (see :mod:`airbench_nb.scoring`)."""
        section = _foundation_section(outcomes, protocol, reps, seed)
        return ScoreSection.model_validate({**section, "injection": injection_counts(outcomes)})


class JudgeScore(BaseMetric):
    """A Chat judge's 1-10 scores of the answer and the reference, in both orders (AIR-Bench Chat)."""

    name: ClassVar[str] = "judge_score"
    section: ClassVar[str] = "chat"

    def select(
        self, verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None
    ) -> dict[tuple[str, str, int | None], Verdict]:
        """The Chat judge's verdicts by ``(uid, order, turn)``: one judge, the first of ``judges`` present.

        Raises:
            ValueError: When ``judges`` is None and several Chat judges are present.
        """
        relevant = [v for v in verdicts if v.uid in uids and v.order in CHAT_ORDERS]
        present = sorted({v.judge for v in relevant})
        if not present:
            return {}
        if judges is None:
            if len(present) > 1:
                raise ValueError(f"Chat verdicts of several judges ({', '.join(present)}): pass judges= to choose one")
            judge = present[0]
        else:
            usable = [j for j in judges if j in present]
            if not usable:
                logger.warning("no Chat verdicts by %s (present: %s)", list(judges), present)
                return {}
            judge = usable[0]
        return {(v.uid, v.order, v.turn): v for v in relevant if v.judge == judge}

    def judges_used(self, chosen: Mapping[Any, Verdict]) -> list[str]:
        """The Chat judge (one at most)."""
        return sorted({v.judge for v in chosen.values()})

    def outcomes(
        self, item: ChatItem, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str
    ) -> list[ChatOutcome]:
        """One outcome per order, or per (turn, order) (see :func:`~airbench_nb.scoring.run.chat_outcomes_of`)."""
        return chat_outcomes_of(item, response, chosen, protocol)

    def aggregate(self, outcomes: Sequence[ChatOutcome], protocol: str, reps: int, seed: int) -> ScoreSection:
        """Tasks, per-turn entries, categories (Mixed from its two tasks) and the Average."""
        section = _chat_section(outcomes, protocol, reps, seed)
        return ScoreSection.model_validate({**section, "injection": injection_counts(outcomes)})


register_metric(ChoiceAccuracy())
register_metric(JudgeScore())
register_metric(WordErrorRate())
register_metric(SceneAccuracy())
register_metric(EventTagging())
register_metric(Bleu())
register_metric(Chrf())
register_metric(CiderD())
register_metric(CaptionSimilarity())
register_metric(SpeechOutputWer())
register_metric(SpokenAnswerAccuracy())
register_metric(ClosedSetTiers())
register_metric(OpenVocabularyTier())
for _choice_qa in CHOICE_QA_METRICS:  # MMAU, MMAR, MMSU (mmau_accuracy, mmar_accuracy, mmsu_accuracy)
    register_metric(_choice_qa)

OPTIONAL: dict[str, Metric] = {"spider": Spider(), "fense": Fense()}
"""Metrics no item names by default, run only when asked for (``metric_options={"metrics": [...]}``), by name."""


def optional_metrics(options: Mapping[str, Any] | None) -> list[Metric]:
    """The optional metrics asked for in ``options["metrics"]``, each checked to run here.

    Each scores the items its ``serves(item)`` accepts (SPIDEr and FENSE: caption items), though no item names it.

    Args:
        options: ``score_run``'s ``metric_options``; ``{"metrics": ["spider", "fense"]}`` asks for both.

    Raises:
        KeyError: For a name that is not an optional metric.
        airbench_nb.scoring.captioning.CaptionMetricUnavailable: When one cannot run here (one line: why).
    """
    asked = list((options or {}).get("metrics", ()))
    unknown = [name for name in asked if name not in OPTIONAL]
    if unknown:
        raise KeyError(f"no optional metric {', '.join(map(repr, unknown))}; optional: {', '.join(OPTIONAL)}")
    for name in asked:
        require_metric(name)
    return [OPTIONAL[name] for name in asked]


__all__ = [
    "METRICS",
    "RULE_JUDGE",
    "BaseMetric",
    "ClosedSetTiers",
    "OpenVocabularyTier",
    "as_metric",
    "ChoiceAccuracy",
    "ValueOutcome",
    "mean_section",
    "OPTIONAL",
    "optional_metrics",
    "JudgeScore",
    "EventTagging",
    "SceneAccuracy",
    "WordErrorRate",
    "Metric",
    "metric_for",
    "metrics_of",
    "register_metric",
]
