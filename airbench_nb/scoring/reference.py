"""Metrics of the items scored against references (schema 3): WER, scene mACC and event mAP, per prompting mode.

Three metrics plug into the registry of :mod:`airbench_nb.scoring.metrics`; each needs no judge (its
:meth:`~ReferenceMetric.select` picks no verdict) and reads the model's free text through the output parser
(:func:`airbench_nb.unify.unify`):

- :class:`WordErrorRate` (``wer``, section ``transcription``): the transcript of a transcription item, or the
  transcript part of a joint item, against the reference (:mod:`airbench_nb.scoring.wer`: Whisper normalisation,
  jiwer's alignment, corpus WER with a bootstrap over utterances). Lower is better.
- :class:`SceneAccuracy` (``scene_macc``, section ``scene``): the scene answer mapped onto the item's classes by
  text embeddings, SSEU-Bench's way (:func:`airbench_nb.scoring.tagging.score_scenes`): balanced accuracy (mACC).
- :class:`EventTagging` (``event_map``, section ``events``): the event list mapped onto the classes
  (:func:`airbench_nb.scoring.tagging.score_events`): mean average precision (mAP).

A section's ``tasks`` are the prompting modes (:data:`MODES`): ``independent`` (the transcription, scene and events
items, one task per prompt), ``joint`` (joint items asked in SSEU-Bench's single prompt) and ``sseu-cot`` (joint
items asked in its five-step chain of thought). Its ``average`` pools every answer of every mode (each mode is the
number to read; :mod:`airbench_nb.analysis.sseu` compares them on the same clips).

Failures. An item the model answered with an error, or whose part the parser could not find, is a failure kept in
the denominator: an empty transcript (all deletions), no scene class (wrong), all-zero event scores. A mode in which
the model answered no item at all is absent from the section: a model that does not serve a kind (an ASR model
asked for scenes) is "not applicable" there, never failing. A reference that normalises to nothing is skipped and
counted (``skipped`` reasons in ``failure_reasons``). Both protocols score these items the same way (SSEU-Bench
has no official script to reproduce); the section is written under each protocol asked for.

The embedding backend of the scene and event metrics is the default offline sentence-transformer unless
:func:`~airbench_nb.scoring.run.score_run` is given ``metric_options={"embedder": spec}``; it is recorded in the
section (``source``).
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from airbench_nb.records import ReferenceItem, Response, Verdict, cluster_of
from airbench_nb.score_table import ScoreEntry, ScoreSection
from airbench_nb.scoring.metric_base import BaseMetric
from airbench_nb.unify import UnifiedAnswer, unify

logger = logging.getLogger(__name__)

MODES: tuple[str, ...] = ("independent", "joint", "sseu-cot")
"""Prompting modes, in report order (see :data:`airbench_nb.records.PROMPTINGS`)."""

PART_OF_METRIC: dict[str, str] = {"wer": "transcript", "scene_macc": "scene", "event_map": "events"}
"""The part of an answer each metric reads."""


def item_mode(item: ReferenceItem) -> str:
    """How an item's task was asked: ``independent`` (transcription, scene, events) or the joint item's prompting."""
    return item.prompting_mode


@dataclass(frozen=True, slots=True)
class ReferenceOutcome:
    """One item's answer to one part (transcript, scene or events), read and ready to score."""

    uid: str
    """The item's uid."""
    task: str
    """The item's task."""
    kind: str
    """The item's kind (``transcription``, ``scene``, ``events``, ``joint``)."""
    mode: str
    """The prompting mode (:data:`MODES`)."""
    part: str
    """The part scored: ``transcript``, ``scene`` or ``events``."""
    clip_id: str | None
    """The clip the item is about (shared by the items of one clip)."""
    snr_db: float | None
    """The SNR the clip was mixed at; None for clean speech."""
    answered: bool
    """Whether the model has a response for the item (False: not asked, e.g. a kind it does not serve)."""
    answer: str | tuple[str, ...] | None
    """The part as the parser read it (events: a tuple); None when it failed."""
    failure: str | None
    """Why there is no answer (``no response: ...``, the parser's reason); None when there is one."""
    removed: tuple[str, ...]
    """What the parser removed from the answer (think blocks, preambles, quotes, ...)."""
    reference: str | None = None
    """Transcript part: the reference transcript."""
    language: str | None = None
    """Transcript part: the language."""
    gold: str | tuple[str, ...] | None = None
    """Scene part: the gold class; events part: the gold classes (a tuple)."""
    class_scores: tuple[tuple[str, float], ...] | None = None
    """Events part of a ranked-list model (a tagger: :attr:`~airbench_nb.records.Response.ranking`): its own score
    of each class it ranks, which mAP reads instead of the text's embedding similarities; None for a text answer."""
    classes: tuple[str, ...] = ()
    """Scene and events parts: the class list."""
    cluster: str = ""
    """The item's cluster (:func:`airbench_nb.records.cluster_of`: its utterance), which the intervals resample."""


def _part_gold(item: ReferenceItem, part: str) -> dict[str, Any]:
    """The gold of one part of an item's answer, as the item's kind declares it (``gold_parts``)."""
    return item.gold_parts()[part]  # type: ignore[union-attr]


PARTS_KEPT = 1 << 18
"""Parts :func:`read_part` keeps (the score table and the SSEU analysis read the same answers)."""

_PARTS: dict[tuple[int, int, str], tuple[Any, Any, ReferenceOutcome]] = {}


def read_part(item: ReferenceItem, response: Response | None, part: str) -> ReferenceOutcome:
    """Read one part of an item's answer (see :class:`ReferenceOutcome`).

    The part read from the very same item and response objects is kept (:data:`PARTS_KEPT`, the oldest go first;
    :func:`forget_parts` drops them): the score table and the SSEU analysis read each answer once.

    Args:
        item: The item.
        response: The model's latest response to it, None when there is none.
        part: ``transcript``, ``scene`` or ``events``.
    """
    key = (id(item), id(response), part)
    kept = _PARTS.get(key)
    if kept is not None and kept[0] is item and kept[1] is response:  # the objects themselves, never a reused id
        return kept[2]
    outcome = _read_part(item, response, part)
    if len(_PARTS) >= PARTS_KEPT:
        for old in list(itertools.islice(_PARTS, PARTS_KEPT // 4)):
            _PARTS.pop(old, None)
    _PARTS[key] = (item, response, outcome)
    return outcome


def forget_parts() -> None:
    """Drop the parts :func:`read_part` keeps (and the records they hold)."""
    _PARTS.clear()


def _read_part(item: ReferenceItem, response: Response | None, part: str) -> ReferenceOutcome:
    base = {
        "uid": item.uid,
        "task": item.task,
        "kind": item.kind,
        "mode": item_mode(item),
        "part": part,
        "clip_id": item.clip_id,
        "snr_db": item.snr_db,
        "cluster": cluster_of(item),
        **_part_gold(item, part),
    }
    if response is None:
        return ReferenceOutcome(**base, answered=False, answer=None, failure="no response", removed=())
    if response.error is not None or response.text is None:
        why = f"no response: {response.error}" if response.error else "no response: empty record"
        return ReferenceOutcome(**base, answered=True, answer=None, failure=why, removed=())
    read: UnifiedAnswer = unify(response.text, item.kind)
    value = read.part(part)
    answer = tuple(value) if isinstance(value, list) else value
    ranked = tuple((r.label, float(r.score)) for r in response.ranking) if part == "events" else ()
    return ReferenceOutcome(
        **base,
        answered=True,
        answer=answer,
        failure=read.failures.get(part),
        removed=tuple(read.removed),
        class_scores=ranked or None,
    )


def _entry(
    value: float | None, n: int, failures: int, low: float | None, high: float | None, grouping: Any = None
) -> ScoreEntry:
    entry = ScoreEntry(value=value, n=n, failures=failures, ci_low=low, ci_high=high)
    if grouping is not None and grouping.clustered:  # set only when clustered: the JSON keeps its keys otherwise
        entry.clusters, entry.cluster_unit = grouping.clusters, grouping.unit
        entry.design_effect = grouping.design_effect
    return entry


class ReferenceMetric(BaseMetric):
    """What the three reference metrics share: no judge, one part read per item, one entry per prompting mode."""

    name: ClassVar[str] = ""
    section: ClassVar[str] = ""
    part: ClassVar[str] = ""
    protocol_free: ClassVar[bool] = True
    """Its section is the same under both protocols (computed once by ``score_run``)."""

    def __init__(self, embedder: str | None = None) -> None:
        """A metric reading answers with the given embedding backend.

        Args:
            embedder: Spec of the embedding backend (scene and event metrics; None: the default offline model).
        """
        self.embedder = embedder

    def configured(self, options: Mapping[str, Any]) -> ReferenceMetric:
        """A copy of the metric with ``options`` applied (``embedder``); options it does not take are ignored."""
        if "embedder" in options and options["embedder"] != self.embedder:
            return type(self)(embedder=options["embedder"])
        return self

    def select(self, verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None) -> dict[str, Verdict]:
        """No verdict decides these items: the metric reads the answers themselves."""
        return {}

    def judges_used(self, chosen: Mapping[Any, Verdict]) -> list[str]:
        """None: no judge."""
        return []

    def outcomes(
        self, item: ReferenceItem, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str
    ) -> list[ReferenceOutcome]:
        """The item's part, read (the same under both protocols)."""
        return [read_part(item, response, self.part)]

    def aggregate(self, outcomes: Sequence[ReferenceOutcome], protocol: str, reps: int, seed: int) -> ScoreSection:
        """One entry per prompting mode the model answered, and every answer pooled as the ``average``."""
        answered_modes = {p.mode for p in outcomes if p.answered}  # once, not per outcome: linear in the outcomes
        asked = [o for o in outcomes if o.mode in answered_modes]
        by_mode: dict[str, list[ReferenceOutcome]] = defaultdict(list)
        for outcome in asked:
            by_mode[outcome.mode].append(outcome)
        tasks = {mode: self.score(by_mode[mode], reps, seed, mode) for mode in MODES if mode in by_mode}
        reasons = Counter(o.failure for o in asked if o.failure is not None)
        reasons.update(self.skipped(asked))
        return ScoreSection(
            tasks=tasks,
            categories={},
            average=self.score(asked, reps, seed, "all"),
            n_items=len(asked),
            failed=sum(o.failure is not None for o in asked),
            failure_reasons=dict(reasons.most_common()),
            source=self.source(),
        )

    def score(self, outcomes: Sequence[ReferenceOutcome], reps: int, seed: int, key: str) -> ScoreEntry:
        """The entry of a group of outcomes."""
        raise NotImplementedError

    def skipped(self, outcomes: Sequence[ReferenceOutcome]) -> Counter[str]:
        """Outcomes left out of the value, by reason (none but for WER's empty references)."""
        return Counter()

    def source(self) -> str | None:
        """What the scores rest on besides the answers (the embedding backend), for the section's ``source``."""
        return None


def utterance_key(outcome: ReferenceOutcome) -> tuple[str, str | None, str | None, str]:
    """The arguments of :func:`~airbench_nb.scoring.wer.utterance_errors` for a transcript outcome.

    Returns:
        ``(reference, hypothesis, language, uid)``; the hypothesis is None for a failure.
    """
    answer = outcome.answer if isinstance(outcome.answer, str) else None
    return (outcome.reference or "", answer, outcome.language, outcome.uid)


class WordErrorRate(ReferenceMetric):
    """Corpus word error rate of transcripts (character error rate for languages written without spaces)."""

    name: ClassVar[str] = "wer"
    section: ClassVar[str] = "transcription"
    part: ClassVar[str] = "transcript"
    ahead_part: ClassVar[str | None] = "transcripts"

    def utterances(self, outcomes: Sequence[ReferenceOutcome]) -> list[Any]:
        """Each outcome's :func:`~airbench_nb.scoring.wer.utterance_errors` (a failure: an empty hypothesis)."""
        from airbench_nb.scoring.wer import many_utterance_errors

        return many_utterance_errors([utterance_key(o) for o in outcomes])

    def score(self, outcomes: Sequence[ReferenceOutcome], reps: int, seed: int, key: str) -> ScoreEntry:
        """Corpus WER (a fraction) with its bootstrap interval over utterances."""
        from airbench_nb.scoring.wer import corpus_wer

        summary = corpus_wer(self.utterances(outcomes), reps=reps, seed=seed, clusters=[o.cluster for o in outcomes])
        entry = _entry(summary.wer, summary.n, summary.failed, summary.ci_low, summary.ci_high)
        if summary.clusters is not None:
            entry.clusters, entry.cluster_unit = summary.clusters, summary.cluster_unit
            entry.design_effect = summary.design_effect
        return entry

    def skipped(self, outcomes: Sequence[ReferenceOutcome]) -> Counter[str]:
        """References that normalise to nothing, by reason."""
        from airbench_nb.scoring.wer import SkippedUtterance

        return Counter(f"skipped: {u.reason}" for u in self.utterances(outcomes) if isinstance(u, SkippedUtterance))


class _Tagging(ReferenceMetric):
    def embedding_backend(self) -> Any:
        from airbench_nb.embeddings import load_embedder

        return load_embedder(self.embedder)

    def source(self) -> str | None:
        from airbench_nb.embeddings import DEFAULT_EMBEDDER

        return f"embeddings: {self.embedder or DEFAULT_EMBEDDER}"

    @staticmethod
    def groups(outcomes: Sequence[ReferenceOutcome]) -> dict[tuple[str, ...], list[ReferenceOutcome]]:
        """Outcomes by class list (each list is scored on its own; SSEU-Bench's are fixed per task)."""
        out: dict[tuple[str, ...], list[ReferenceOutcome]] = defaultdict(list)
        for outcome in outcomes:
            out[outcome.classes].append(outcome)
        return out

    @staticmethod
    def pooled(values: list[tuple[float | None, int, float | None, float | None]]) -> tuple[Any, ...]:
        """One value from the class lists' values: weighted by their items (the only one when there is one)."""
        scored = [(v, n, lo, hi) for v, n, lo, hi in values if v is not None]
        if len(scored) == 1:
            return scored[0][0], scored[0][2], scored[0][3]
        if not scored:
            return None, None, None
        total = sum(n for _, n, _, _ in scored)
        return sum(v * n for v, n, _, _ in scored) / total, None, None


class SceneAccuracy(_Tagging):
    """Balanced accuracy (mACC) of scene answers mapped onto the classes by text embeddings (SSEU-Bench)."""

    name: ClassVar[str] = "scene_macc"
    section: ClassVar[str] = "scene"
    part: ClassVar[str] = "scene"

    def score(self, outcomes: Sequence[ReferenceOutcome], reps: int, seed: int, key: str) -> ScoreEntry:
        """MACC with its bootstrap interval (one class list; several are weighted by their items, without CI)."""
        from airbench_nb.scoring.tagging import score_scenes

        embedder = self.embedding_backend()
        values = []
        groupings: list[Any] = []
        for classes, group in self.groups(outcomes).items():
            answers = [o.answer if isinstance(o.answer, str) else None for o in group]
            golds = [str(o.gold) for o in group]
            clusters = [o.cluster for o in group]
            result = score_scenes(answers, golds, classes, embedder, reps=reps, seed=seed, clusters=clusters)
            values.append((result.macc, result.n, result.ci_low, result.ci_high))
            groupings.append(result.clustering)
        value, low, high = self.pooled(values)
        failures = sum(o.failure is not None for o in outcomes)
        return _entry(value, len(outcomes), failures, low, high, groupings[0] if len(groupings) == 1 else None)


class EventTagging(_Tagging):
    """Mean average precision (mAP) of event lists mapped onto the classes by text embeddings (SSEU-Bench)."""

    name: ClassVar[str] = "event_map"
    section: ClassVar[str] = "events"
    part: ClassVar[str] = "events"

    def score(self, outcomes: Sequence[ReferenceOutcome], reps: int, seed: int, key: str) -> ScoreEntry:
        """MAP with its bootstrap interval (classes without positives left out)."""
        from airbench_nb.scoring.tagging import score_events

        embedder = self.embedding_backend()
        values = []
        groupings: list[Any] = []
        for classes, group in self.groups(outcomes).items():
            answers = [list(o.answer) if isinstance(o.answer, tuple) else None for o in group]
            golds = [list(o.gold or ()) for o in group]
            ranked = [dict(o.class_scores) if o.class_scores else None for o in group]
            clusters = [o.cluster for o in group]
            result = score_events(
                answers, golds, classes, embedder, reps=reps, seed=seed, class_scores=ranked, clusters=clusters
            )
            values.append((result.map, result.n, result.ci_low, result.ci_high))
            groupings.append(result.clustering)
        value, low, high = self.pooled(values)
        failures = sum(o.failure is not None for o in outcomes)
        return _entry(value, len(outcomes), failures, low, high, groupings[0] if len(groupings) == 1 else None)


def with_options(metric: Any, options: Mapping[str, Any] | None) -> Any:
    """The metric configured with ``options`` when it takes any (``configured``), else the metric itself."""
    if options and hasattr(metric, "configured"):
        return metric.configured(options)
    return metric


__all__ = [
    "MODES",
    "EventTagging",
    "ReferenceMetric",
    "ReferenceOutcome",
    "SceneAccuracy",
    "WordErrorRate",
    "item_mode",
    "read_part",
    "with_options",
]
