"""How much a score moves when the audio is perturbed: codec, reverberation, speed, pitch, clipping, loudness.

A perturbed copy (:mod:`airbench_nb.builders.perturbations`, made and measured by :mod:`airbench_nb.perturb`) asks an
item's question again on its audio coded, reverberated, sped up, pitched, clipped or made louder or quieter; its
``meta`` names the original (``perturbation_of``), the curve (``perturbation``: ``codec:mp3``, ``reverb``, ...), the
requested ``parameter`` and what was ``measured`` on the written file. This module compares, per model, task and
point of a curve, the metric on the perturbed copies with the metric on the same originals, paired by item. It is
pure: it takes per-item outcomes (:class:`PerturbOutcome`) and returns typed results (:class:`PerturbPoint`).

Metrics (:data:`CURVE_METRICS`), each computed from per-item sufficient statistics (an outcome's ``stats``), so that
one bootstrap serves all of them:

``accuracy`` (single-choice items)
    ``sum(correct) / n``: each item's statistics are ``(1 or 0, 1)``. Higher is better.
``wer`` (transcription items)
    Corpus word error rate ``sum(errors) / sum(reference words)`` (SSEU-Bench's WER, as
    :func:`airbench_nb.scoring.wer.utterance_errors` counts them after Whisper's English normaliser): each item's
    statistics are ``(word errors, reference words)``. Lower is better.
``bleu`` (speech translation items, UG-Bench)
    Corpus BLEU as sacrebleu computes it (:mod:`airbench_nb.scoring.translation`: the target language's tokenizer,
    exponential smoothing), as a fraction (sacrebleu's 0-100 divided by 100): each item's statistics are sacrebleu's
    sentence statistics (hypothesis and closest reference length, matched and total 1- to 4-grams), summed over the
    items and turned into BLEU by sacrebleu itself, so that BLEU over any resample is a corpus BLEU, never a mean of
    sentence BLEUs. Items are grouped by language pair (task ``speech_translation (de-en)``); pairs pool only when
    their targets share a tokenizer (the n-gram counts of two tokenizations do not add up). Higher is better.
``map`` (event tagging items, SSEU-Bench)
    Mean average precision over the classes with a positive among the paired items (SSEU-Bench's mAP, as
    :func:`airbench_nb.scoring.tagging.score_events` computes it: the answer's events mapped onto the classes by text
    embeddings, or a tagger's own class scores): each item's statistics are its 0/1 gold label and its score per
    class. Not a sum over items: each resample's mAP is computed again on the resampled items. Higher is better.

What each point gives:

``clean`` and ``perturbed``
    The metric over the items answered both on the original and on this perturbation (the paired items), on each.
``difference``
    ``perturbed - clean`` with a paired bootstrap 95% interval: the paired items are resampled with replacement
    (each keeps both its outcomes), ``reps`` times, seeded, the metric recomputed on each side of every replicate,
    and the interval is the 2.5th and 97.5th percentiles of the replicates' differences. For accuracy, BLEU and mAP
    a negative difference is a loss; for WER a positive one is.
``measured``
    The mean over the paired items of the measured value of the perturbation (``meta.measured.value``: the codec's
    bitrate read from the encoded file, the RT60 of the RIR by Schroeder's method, the duration ratio, the pitch
    ratio, the share of clipped samples, the integrated loudness), beside the requested ``parameter``.

Pooled points (``task`` None) put together every task of one metric of a model (its Foundation tasks, say), as the
controls' analysis does, when the tasks share an outcome ``group`` (BLEU: one tokenizer; mAP: one class list).
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from airbench_nb.analysis.registry import register_analysis_section
from airbench_nb.analysis.section import Section
from airbench_nb.analysis_report import Interval, Number, Payload
from airbench_nb.records import CONTROL_KEY, CONTROL_OF_KEY, PERTURBATION_OF_KEY, cluster_of

if TYPE_CHECKING:
    from airbench_nb.analysis.report import RunAnalysis

logger = logging.getLogger(__name__)


def _ratio(stats: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum(w * numerator) / sum(w * denominator)`` per row of ``weights`` (accuracy, WER)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (weights @ stats[:, 0]) / (weights @ stats[:, 1])


def _bleu(stats: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Corpus BLEU (sacrebleu's, as a fraction) of the weighted sums of its sentence statistics, per row."""
    from sacrebleu.metrics import BLEU

    bleu = BLEU()  # the statistics are already tokenized: only the smoothing and the brevity penalty are used
    sums = np.rint(weights @ stats).astype(int)
    return np.array([bleu._compute_score_from_stats(row.tolist()).score / 100.0 for row in sums])


def _map(stats: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Mean over the classes with a positive of the weighted average precision, per row (NaN: no positive drawn)."""
    from airbench_nb.scoring.tagging import weighted_average_precision

    k = stats.shape[1] // 2
    truth, scores = stats[:, :k], stats[:, k:]
    columns = [j for j in range(k) if truth[:, j].any()]
    if not columns:
        return np.full(weights.shape[0], np.nan)
    aps = np.stack([weighted_average_precision(truth[:, j], scores[:, j], weights) for j in columns], axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a replicate that drew no positive of any class
        return np.nanmean(aps, axis=1)


@dataclass(frozen=True)
class CurveMetric:
    """A metric a point can be of: how it reads an item's statistics and whether higher is better."""

    name: str
    """``accuracy``, ``wer``, ``bleu`` or ``map``."""
    higher_is_better: bool
    """Whether a rise is a gain."""
    statistics: str
    """What an item's ``stats`` hold."""
    combine: Any
    """``(stats (n, s), weights (rows, n)) -> (rows,)``: the metric over the items weighted by each row (a bootstrap
    row counts how often each item was drawn; a row of ones is the metric itself)."""

    def of(self, stats: np.ndarray) -> float:
        """The metric over every item once."""
        return float(self.combine(stats, np.ones((1, stats.shape[0])))[0])


CURVE_METRICS: dict[str, CurveMetric] = {
    "accuracy": CurveMetric("accuracy", True, "(1 when right else 0, 1)", _ratio),
    "wer": CurveMetric("wer", False, "(word errors, reference words)", _ratio),
    "bleu": CurveMetric("bleu", True, "sacrebleu's sentence statistics (lengths, matched and total 1-4-grams)", _bleu),
    "map": CurveMetric("map", True, "the gold label (0/1) per class, then the score per class", _map),
}
"""The metrics a point can be of (see the module docstring)."""
METRICS: dict[str, bool] = {name: m.higher_is_better for name, m in CURVE_METRICS.items()}
"""The metrics a point can be of, and whether higher is better."""
DEFAULT_REPS = 2000
"""Bootstrap replicates."""
UNITS: dict[str, str] = {
    "codec:mp3": "kbit/s",
    "codec:opus": "kbit/s",
    "reverb": "s RT60",
    "speed": "x playback rate",
    "pitch": "x frequency",
    "clipping": "x peak",
    "loudness": "LUFS",
    "paraphrase": "rewrite no.",
}
"""Unit of each curve's parameter (for axes and tables); ``paraphrase``: the question asked in another phrasing of
its task (:mod:`airbench_nb.builders.paraphrase`), numbered."""


@dataclass(frozen=True)
class PerturbOutcome:
    """One model's outcome on one item: the original, or one perturbed copy of it."""

    model: str
    """The model's spec."""
    task: str
    """The item's task (a translation item's with its language pair: ``speech_translation (de-en)``)."""
    metric: str
    """``accuracy``, ``wer``, ``bleu`` or ``map`` (:data:`CURVE_METRICS`)."""
    uid: str
    """The original item's uid (a copy's ``meta.perturbation_of``)."""
    curve: str | None
    """The copy's curve (``codec:mp3``, ``reverb``, ...); None for the original."""
    parameter: float | None
    """The copy's requested parameter; None for the original."""
    stats: tuple[float, ...] | None
    """The item's statistics for the metric (:attr:`CurveMetric.statistics`: ``(1, 1)`` right, ``(errors, words)``,
    ...); None when not answered (the pair is left out)."""
    measured: float | None = None
    """The copy's measured value (``meta.measured.value``); None for the original or when not recorded."""
    group: str = ""
    """Tasks of one metric pool only when their outcomes share it (BLEU: the tokenizer; mAP: the class list)."""
    cluster: str = ""
    """The item's cluster (:func:`airbench_nb.records.cluster_of`); a pair is resampled with its original's cluster
    (the pairs of one utterance or sentence together); empty: the item on its own."""


def ratio_stats(value: float | None, weight: float = 1.0) -> tuple[float, float] | None:
    """The statistics of a ratio metric (accuracy, WER): ``(value, weight)``, or None when not answered."""
    return None if value is None else (float(value), float(weight))


@dataclass(frozen=True)
class Estimate:
    """A value with its bootstrap 95% interval."""

    value: float | None
    """The value (None without paired items)."""
    low: float | None
    """2.5th percentile of the bootstrap replicates (None without replicates)."""
    high: float | None
    """97.5th percentile of the bootstrap replicates (None without replicates)."""

    def excludes(self, value: float) -> bool:
        """Whether the interval is known and leaves ``value`` out."""
        return self.low is not None and self.high is not None and not self.low <= value <= self.high


@dataclass(frozen=True)
class PerturbPoint:
    """One point of one curve for one model and task (or all its tasks of the metric, ``task`` None)."""

    model: str
    """The model's spec."""
    task: str | None
    """The task; None for every task of the metric together."""
    metric: str
    """``accuracy``, ``wer``, ``bleu`` or ``map``."""
    curve: str
    """The curve (``codec:mp3``, ``reverb``, ...)."""
    parameter: float
    """The requested parameter (:data:`UNITS`)."""
    measured: float | None
    """Mean measured value over the paired items; None when none was recorded."""
    n: int
    """Paired items: answered on the original and on this perturbation."""
    clean: float
    """The metric on the originals of the paired items."""
    perturbed: float
    """The metric on their perturbed copies."""
    difference: Estimate
    """``perturbed - clean`` with its paired bootstrap interval."""
    clusters: int | None = None
    """Clusters the interval resampled when pairs share one (the union of the clustered and the pair-level intervals:
    :mod:`airbench_nb.scoring.resample`); None when every pair is its own."""
    design_effect: float | None = None
    """Variance of the clustered bootstrap of the difference over the pair-level one; None without clusters."""


DERIVED_KEYS = ("clean_uid", "rotation_of", CONTROL_OF_KEY, PERTURBATION_OF_KEY)
"""``meta`` keys of a derived item (graded, rotated, control, perturbed copy)."""


def derived_from(item: Any, sort: str = "perturbation") -> tuple[str, str | None, float | None, float | None] | None:
    """``(original uid, curve, parameter, measured)`` of an original (curve None) or a copy of ``sort``; else None.

    Args:
        item: The item (its ``uid`` and ``meta`` are read).
        sort: ``perturbation``: a perturbed copy (``meta.perturbation_of``; curve ``meta.perturbation``, its
            ``parameter`` and ``measured.value``); ``control``: an audio-reliance control (``meta.control_of``; curve
            the control's name, parameter 0). Any other derived item (graded, rotated, the other sort) is None.
    """
    meta = getattr(item, "meta", None) or {}
    key = PERTURBATION_OF_KEY if sort == "perturbation" else CONTROL_OF_KEY
    if key in meta:
        if sort == "control":
            return str(meta[key]), str(meta.get(CONTROL_KEY)), 0.0, None
        measured = (meta.get("measured") or {}).get("value") if isinstance(meta.get("measured"), dict) else None
        return str(meta[key]), str(meta.get("perturbation")), float(meta["parameter"]), _float_or_none(measured)
    if any(k in meta for k in DERIVED_KEYS):
        return None
    return str(item.uid), None, None, None


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def outcome_from_item(
    item: Any, model: str, metric: str, stats: tuple[float, ...] | None, group: str = "", task: str | None = None
) -> PerturbOutcome | None:
    """An item's outcome, as an original or as a perturbed copy (read from its ``meta``); None for other derived items.

    Args:
        item: The item (any kind; ``task`` and ``meta`` are read).
        model: The model's spec.
        metric: A metric of :data:`CURVE_METRICS`.
        stats: Its statistics (:func:`ratio_stats` for accuracy and WER), or None when not answered.
        group: The outcome's pooling group.
        task: The task to file it under (the item's ``task`` when None).
    """
    of = derived_from(item, "perturbation")
    if of is None:
        return None
    uid, curve, parameter, measured = of
    task = task if task is not None else str(getattr(item, "task", getattr(item, "kind", "")))
    return PerturbOutcome(model, task, metric, uid, curve, parameter, stats, measured, group, cluster_of(item))


def accuracy_outcomes(frame: pd.DataFrame, items: Mapping[str, Any]) -> list[PerturbOutcome]:
    """Accuracy outcomes of the originals that have a perturbed copy, and of their copies.

    Args:
        frame: A per-(model, item) frame with ``model``, ``uid`` and ``correct`` (notebook 05's Foundation frame with
            its perturbed copies kept).
        items: The run's items by uid.

    Raises:
        ValueError: When a column is missing (naming it).
    """
    missing = [c for c in ("model", "uid", "correct") if c not in frame.columns]
    if missing:
        raise ValueError(f"accuracy_outcomes: the frame has no column {', '.join(missing)}")
    perturbed_of = {
        str((getattr(i, "meta", None) or {})[PERTURBATION_OF_KEY])
        for i in items.values()
        if PERTURBATION_OF_KEY in (getattr(i, "meta", None) or {})
    }
    out: list[PerturbOutcome] = []
    for model, uid, correct in zip(frame["model"], frame["uid"], frame["correct"], strict=True):
        item = items.get(str(uid))
        if item is None:
            continue
        meta = getattr(item, "meta", None) or {}
        if PERTURBATION_OF_KEY not in meta and str(uid) not in perturbed_of:
            continue
        value = None if pd.isna(correct) else float(bool(correct))
        outcome = outcome_from_item(item, str(model), "accuracy", ratio_stats(value))
        if outcome is not None:
            out.append(outcome)
    return out


def transcript_errors(item: Any, response: Any) -> tuple[float, float] | None:
    """A transcription answer's word errors and its reference's words; None when the reference normalises to nothing.

    SSEU-Bench's rule: an answer that failed or cannot be read counts as all deletions.
    """
    from airbench_nb.scoring.reference import read_part
    from airbench_nb.scoring.wer import SkippedUtterance, utterance_errors

    part = read_part(item, response, "transcript")
    answer = part.answer if isinstance(part.answer, str) else None
    u = utterance_errors(part.reference or "", answer, part.language, item.uid)
    if isinstance(u, SkippedUtterance):
        return None
    return float(u.errors), float(u.ref_words)


def _wanted(items: Iterable[Any], kind: str, sort: str) -> list[Any]:
    """The items of ``kind`` that are originals with a copy of ``sort``, or such copies, in order."""
    key = PERTURBATION_OF_KEY if sort == "perturbation" else CONTROL_OF_KEY
    own = [i for i in items if getattr(i, "kind", None) == kind]
    originals = {str(i.meta[key]) for i in own if key in (getattr(i, "meta", None) or {})}
    return [i for i in own if (i.uid in originals or key in (i.meta or {})) and derived_from(i, sort) is not None]


def _outcome(item: Any, model: str, metric: str, stats: Any, sort: str, group: str = "", task: str | None = None):
    uid, curve, parameter, measured = derived_from(item, sort)  # type: ignore[misc]
    task = task if task is not None else str(item.task)
    return PerturbOutcome(model, task, metric, uid, curve, parameter, stats, measured, group, cluster_of(item))


def wer_outcomes(
    items: Iterable[Any], responses: Mapping[str, Mapping[str, Any]], sort: str = "perturbation"
) -> list[PerturbOutcome]:
    """WER outcomes of every model's transcription answers, for the originals that have a copy and their copies.

    An item the model has no response to is not answered (None); an answer that failed or cannot be read counts as
    all deletions (SSEU-Bench's rule, :func:`~airbench_nb.scoring.wer.utterance_errors`); an item whose reference
    normalises to nothing is left out.

    Args:
        items: The run's items (any kinds: the transcription items are read).
        responses: Per model, its latest response per uid.
        sort: The copies: ``perturbation`` or ``control`` (:func:`derived_from`).
    """
    wanted = _wanted(items, "transcription", sort)
    out: list[PerturbOutcome] = []
    for model, by_uid in responses.items():
        if not any(i.uid in by_uid for i in wanted):
            continue
        for item in wanted:
            response = by_uid.get(item.uid)
            counted = transcript_errors(item, response) if response is not None else None
            if response is not None and counted is None:
                continue  # the reference normalises to nothing
            out.append(_outcome(item, model, "wer", counted, sort))
    return out


def translation_task(item: Any) -> str:
    """The task a translation item's outcomes are filed under: its task with its language pair."""
    from airbench_nb.scoring.wer import language_code

    pair = f"{language_code(item.source_language)}-{language_code(item.target_language)}"
    return f"{item.task} ({pair})"


def bleu_outcomes(
    items: Iterable[Any], responses: Mapping[str, Mapping[str, Any]], sort: str = "perturbation"
) -> list[PerturbOutcome]:
    """BLEU outcomes of every model's translations, for the originals that have a copy and their copies.

    Each answered item's statistics are sacrebleu's sentence statistics of its answer (as written, stripped; a failed
    or empty answer is ``""``, as :mod:`airbench_nb.scoring.translation` keeps it) against its references, with the
    target language's tokenizer (:func:`~airbench_nb.scoring.translation.tokenizer_for`, the outcome's ``group``); an
    item the model has no response to is not answered. A target whose tokenizer is not installed (``ja-mecab``) is
    left out with a warning.

    Args:
        items: The run's items (the translation items are read).
        responses: Per model, its latest response per uid.
        sort: The copies: ``perturbation`` or ``control``.
    """
    from sacrebleu.metrics import BLEU

    from airbench_nb.scoring.text_answers import answer_text
    from airbench_nb.scoring.translation import MissingTokenizerError, tokenizer_for

    wanted = _wanted(items, "translation", sort)
    tokenizers: dict[str, Any] = {}
    kept = []
    for item in wanted:
        try:
            name = tokenizer_for(item.target_language)
        except MissingTokenizerError as exc:
            logger.warning("%s: left out of the BLEU curves: %s", item.uid, exc)
            continue
        if name not in tokenizers:
            tokenizers[name] = BLEU(tokenize=name)
        kept.append((item, name))
    out: list[PerturbOutcome] = []
    for model, by_uid in responses.items():
        if not any(i.uid in by_uid for i, _ in kept):
            continue
        for item, name in kept:
            response = by_uid.get(item.uid)
            stats = None
            if response is not None:
                hypothesis = answer_text(response).text or ""
                refs = [[r] for r in item.references]
                (row,) = tokenizers[name]._extract_corpus_statistics([hypothesis], refs)
                stats = tuple(float(x) for x in row)
            out.append(_outcome(item, model, "bleu", stats, sort, group=name, task=translation_task(item)))
    return out


def map_outcomes(
    items: Iterable[Any], responses: Mapping[str, Mapping[str, Any]], embedder: Any, sort: str = "perturbation"
) -> list[PerturbOutcome]:
    """The mAP outcomes of every model's event lists, for the originals that have a copy and their copies.

    Each answered item's statistics are its gold label per class, then its score per class, as SSEU-Bench's mAP reads
    them (:func:`~airbench_nb.scoring.tagging.score_events`: the listed events mapped onto the classes by
    ``embedder``, or a tagger's own class scores; a failed answer scores every class 0); the class list is the
    outcome's ``group``. An item the model has no response to is not answered.

    Args:
        items: The run's items (the events items are read).
        responses: Per model, its latest response per uid.
        embedder: The embedding backend (:func:`airbench_nb.embeddings.load_embedder`).
        sort: The copies: ``perturbation`` or ``control``.
    """
    from airbench_nb.scoring.reference import read_part
    from airbench_nb.scoring.tagging import score_events

    wanted = _wanted(items, "events", sort)
    out: list[PerturbOutcome] = []
    for model, by_uid in responses.items():
        answered = [i for i in wanted if i.uid in by_uid]
        if not answered:
            continue
        parts = [read_part(i, by_uid[i.uid], "events") for i in answered]
        by_classes: dict[tuple[str, ...], list[int]] = {}
        for k, part in enumerate(parts):
            by_classes.setdefault(tuple(part.classes), []).append(k)
        rows: dict[str, tuple[float, ...]] = {}
        for classes, ks in by_classes.items():
            answers = [list(parts[k].answer) if isinstance(parts[k].answer, tuple) else None for k in ks]
            golds = [list(parts[k].gold or ()) for k in ks]
            ranked = [dict(parts[k].class_scores) if parts[k].class_scores else None for k in ks]
            result = score_events(answers, golds, classes, embedder, reps=0, class_scores=ranked)
            for row, k, gold in zip(np.asarray(result.scores, float), ks, golds, strict=True):
                truth = [1.0 if c in gold else 0.0 for c in classes]
                rows[answered[k].uid] = (*truth, *(float(x) for x in row))
        for item in wanted:
            classes = tuple(item.classes)
            out.append(_outcome(item, model, "map", rows.get(item.uid), sort, group="\x1f".join(classes)))
    return out


def reference_outcomes(
    items: Iterable[Any], responses: Mapping[str, Mapping[str, Any]], embedder: str | None, sort: str = "perturbation"
) -> list[PerturbOutcome]:
    """WER, BLEU and mAP outcomes of the transcription, translation and events items with copies of ``sort``.

    Args:
        items: The run's items.
        responses: Per model, its latest response per uid.
        embedder: The embedding backend's spec for events (:func:`airbench_nb.embeddings.load_embedder`; None: the
            default offline model), loaded only when events items have copies.
        sort: ``perturbation`` or ``control`` (:func:`derived_from`).
    """
    items = list(items)
    out = wer_outcomes(items, responses, sort) + bleu_outcomes(items, responses, sort)
    if _wanted(items, "events", sort):
        from airbench_nb.embeddings import load_embedder

        out += map_outcomes(items, responses, load_embedder(embedder), sort)
    return out


def _interval(replicates: np.ndarray) -> tuple[float | None, float | None]:
    """The 95% percentile interval of replicates: the kit's :func:`~airbench_nb.scoring.wer.percentile_interval`."""
    from airbench_nb.scoring.wer import percentile_interval

    return percentile_interval(replicates)


def metric_estimate(
    metric: str, stats: np.ndarray, reps: int, seed: Sequence[int], clusters: Sequence[str] | None = None
) -> Estimate:
    """A metric over items with its percentile bootstrap interval.

    Items are resampled; with ``clusters`` whole clusters too, and the interval is the union of both
    (:mod:`airbench_nb.scoring.resample`).

    Args:
        metric: A metric of :data:`CURVE_METRICS`.
        stats: The items' statistics (items, statistics).
        reps: Replicates.
        seed: The generator's seed (each bootstrap starts from it).
        clusters: Each item's cluster key; None: items on their own.
    """
    from airbench_nb.scoring.resample import clustered_interval, weight_rows

    m = CURVE_METRICS[metric]
    n = stats.shape[0]

    def draw(codes: np.ndarray | None) -> np.ndarray:
        rng = np.random.default_rng(list(seed))
        return np.concatenate([m.combine(stats, w) for w in weight_rows(n, reps, rng, codes)])

    low, high, _ = clustered_interval(draw, clusters if clusters and all(clusters) else None, n, reps)
    return Estimate(m.of(stats), low, high)


@dataclass
class _Pairs:
    clean: np.ndarray
    perturbed: np.ndarray
    measured: list[float]
    clusters: list[str]


def _point(
    model: str, task: str | None, metric: str, curve: str, parameter: float, pairs: _Pairs, reps: int, seed: int
):
    m = CURVE_METRICS[metric]
    n = pairs.clean.shape[0]
    clean = m.of(pairs.clean)
    perturbed = m.of(pairs.perturbed)
    from airbench_nb.scoring.resample import clustered_interval, weight_rows

    def diffs(codes: np.ndarray | None) -> np.ndarray:
        rng = np.random.default_rng([seed, n, int(round(abs(parameter) * 1000))])
        return np.concatenate(
            [m.combine(pairs.perturbed, w) - m.combine(pairs.clean, w) for w in weight_rows(n, reps, rng, codes)]
        )

    # pairs sharing clusters: whole clusters drawn too, the interval never narrower than the pairs'
    low, high, grouping = clustered_interval(diffs, pairs.clusters if all(pairs.clusters) else None, n, reps)
    count, effect = grouping.clusters, grouping.design_effect
    measured = float(np.mean(pairs.measured)) if pairs.measured else None
    return PerturbPoint(
        model=model,
        task=task,
        metric=metric,
        curve=curve,
        parameter=parameter,
        measured=measured,
        n=n,
        clean=clean,
        perturbed=perturbed,
        difference=Estimate(perturbed - clean, low, high),
        clusters=count if count < n else None,
        design_effect=effect,
    )


def _check(o: PerturbOutcome) -> None:
    if o.metric not in CURVE_METRICS:
        raise ValueError(
            f"outcome of {o.model} on {o.uid}: unknown metric {o.metric!r}; known: {', '.join(CURVE_METRICS)}"
        )
    if o.stats is None:
        return
    if not o.stats or any(not math.isfinite(x) or x < 0 for x in o.stats):
        raise ValueError(f"outcome of {o.model} on {o.uid}: statistics {o.stats} are not counts")
    if o.metric in ("accuracy", "wer") and (len(o.stats) != 2 or not o.stats[1] > 0):
        raise ValueError(f"outcome of {o.model} on {o.uid}: statistics {o.stats} are not a count and a weight > 0")


def perturbation_results(
    outcomes: Iterable[PerturbOutcome], *, reps: int = DEFAULT_REPS, seed: int = 0, pooled: bool = True
) -> list[PerturbPoint]:
    """The points of every curve per model, task and metric (see the module docstring).

    Args:
        outcomes: Per-item outcomes of one or more models, on originals and on their perturbed copies.
        reps: Bootstrap replicates (1 or more).
        seed: Bootstrap seed.
        pooled: Add, per model, metric and point, the pooled point over the metric's tasks (``task`` None) when the
            model has several such tasks and they share one ``group``.

    Returns:
        Points sorted by model, metric, task (pooled last), curve and parameter; a point without a paired item is
        left out.

    Raises:
        ValueError: For an unknown metric, statistics that are not counts, two outcomes of one item and condition,
            or ``reps`` < 1.
    """
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    cells: dict[tuple[str, str, str], dict[str, dict[tuple[str, float] | None, PerturbOutcome]]] = {}
    groups: dict[tuple[str, str], set[str]] = {}
    for o in outcomes:
        _check(o)
        key = None if o.curve is None else (o.curve, float(o.parameter if o.parameter is not None else math.nan))
        row = cells.setdefault((o.model, o.metric, o.task), {}).setdefault(o.uid, {})
        if key in row:
            raise ValueError(f"two outcomes of {o.model} on {o.uid} under {key or 'the original audio'}")
        row[key] = o
        groups.setdefault((o.model, o.metric), set()).add(o.group)
    results: list[PerturbPoint] = []
    for model in sorted({m for m, _, _ in cells}):
        for metric in sorted({x for m, x, _ in cells if m == model}):
            tasks = sorted(t for m, x, t in cells if m == model and x == metric)
            per_point: dict[tuple[str, float], dict[str, _Pairs]] = {}
            for task in tasks:
                rows = cells[(model, metric, task)]
                points = sorted({k for r in rows.values() for k in r if k is not None})
                for curve, parameter in points:
                    clean, perturbed, measured, clusters = [], [], [], []
                    for r in rows.values():
                        original, copy = r.get(None), r.get((curve, parameter))
                        if original is None or copy is None or original.stats is None or copy.stats is None:
                            continue
                        if len(original.stats) != len(copy.stats):
                            raise ValueError(f"outcomes of {model} on {original.uid}: statistics of other lengths")
                        clean.append(original.stats)
                        perturbed.append(copy.stats)
                        clusters.append(original.cluster)
                        if copy.measured is not None:
                            measured.append(copy.measured)
                    if clean:
                        per_point.setdefault((curve, parameter), {})[task] = _Pairs(
                            np.array(clean, float), np.array(perturbed, float), measured, clusters
                        )
            for task in tasks:
                for (curve, parameter), by_task in sorted(per_point.items()):
                    if task in by_task:
                        results.append(_point(model, task, metric, curve, parameter, by_task[task], reps, seed))
            if pooled and len(tasks) > 1 and len(groups[(model, metric)]) == 1:
                for (curve, parameter), by_task in sorted(per_point.items()):
                    parts = list(by_task.values())
                    joined = _Pairs(
                        np.concatenate([p.clean for p in parts]),
                        np.concatenate([p.perturbed for p in parts]),
                        [m for p in parts for m in p.measured],
                        [c for p in parts for c in p.clusters],
                    )
                    results.append(_point(model, None, metric, curve, parameter, joined, reps, seed))
    return results


class PerturbPointRow(Payload):
    """``perturbations[model][i]``: one point of one curve (see :class:`PerturbPoint`)."""

    task: str | None
    """The task; None for every task of the metric together."""
    metric: str
    """``accuracy``, ``bleu``, ``map`` (higher is better) or ``wer`` (lower is better)."""
    curve: str
    """The curve: ``codec:mp3``, ``codec:opus``, ``reverb``, ``speed``, ``pitch``, ``clipping``, ``loudness``."""
    parameter: Number
    """The requested parameter, in the curve's unit (``unit``)."""
    unit: str
    """The parameter's unit."""
    measured: Number | None
    """Mean measured value over the paired items (bitrate from the file, RT60 from the RIR, ...)."""
    n: int
    """Paired items."""
    clean: Number
    """The metric on the originals, as a fraction."""
    perturbed: Number
    """The metric on the perturbed copies, as a fraction."""
    difference: Number | None
    """``perturbed - clean``, as a fraction."""
    ci: Interval
    """Paired bootstrap 95% interval of the difference."""
    clusters: int | None = None
    """Clusters the interval resampled when pairs share one (a sentence's directions, an utterance's mixes); None
    when every pair is its own."""
    design_effect: Number | None = None
    """Variance of the clustered bootstrap of the difference over the pair-level one; None without clusters."""


class PerturbationsPayload(Payload):
    """The ``perturbations`` section of ``analysis.json``: per model, its points in order."""

    models: dict[str, list[PerturbPointRow]]
    """Per model, every point (each task, then all tasks of the metric)."""
    reps: int
    """Bootstrap replicates."""
    seed: int
    """Bootstrap seed."""
    protocol: str
    """How Foundation answers were read (``strict``: a failure is wrong; ``official``: it is left out)."""
    scope: str
    """Which items are analysed."""


def perturbations_payload(
    points: Sequence[PerturbPoint], *, reps: int, seed: int, protocol: str
) -> PerturbationsPayload:
    """The section's data."""
    models: dict[str, list[PerturbPointRow]] = {}
    for p in points:
        models.setdefault(p.model, []).append(
            PerturbPointRow(
                task=p.task,
                metric=p.metric,
                curve=p.curve,
                parameter=p.parameter,
                unit=UNITS.get(p.curve, ""),
                measured=p.measured,
                n=p.n,
                clean=p.clean,
                perturbed=p.perturbed,
                difference=p.difference.value,
                ci=[p.difference.low, p.difference.high],
                clusters=p.clusters,
                design_effect=p.design_effect,
            )
        )
    return PerturbationsPayload(models=models, reps=reps, seed=seed, protocol=protocol, scope=SCOPE)


SCOPE = (
    "single-choice items (accuracy), transcription items (corpus WER), speech translation items (corpus BLEU, per "
    "language pair) and event tagging items (mAP) that have perturbed copies "
    "(meta.perturbation_of), each copy paired with its original; SNR-graded, rotated and control copies left out"
)
"""Which items the ``perturbations`` section reads."""

FRAME_COLUMNS = (
    "model",
    "task",
    "metric",
    "curve",
    "parameter",
    "unit",
    "measured",
    "n",
    "clean",
    "perturbed",
    "difference",
    "ci_low",
    "ci_high",
)
"""Columns of :func:`perturbations_frame`."""


def perturbations_frame(points: Sequence[PerturbPoint]) -> pd.DataFrame:
    """One row per point (values as fractions; ``task`` ``(all)`` for a pooled point)."""
    rows = [
        {
            "model": p.model,
            "task": p.task if p.task is not None else "(all)",
            "metric": p.metric,
            "curve": p.curve,
            "parameter": p.parameter,
            "unit": UNITS.get(p.curve, ""),
            "measured": p.measured,
            "n": p.n,
            "clean": p.clean,
            "perturbed": p.perturbed,
            "difference": p.difference.value,
            "ci_low": p.difference.low,
            "ci_high": p.difference.high,
        }
        for p in points
    ]
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))


def headline_points(frame: pd.DataFrame) -> pd.DataFrame:
    """The points a figure and the page show: per model and metric, its pooled rows, else its only task's."""
    if frame.empty:
        return frame
    keep = []
    for (_, _), rows in frame.groupby(["model", "metric"], sort=False):
        pooled = rows[rows["task"] == "(all)"]
        keep.append(pooled if not pooled.empty else rows[rows["task"] == rows["task"].iloc[0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return pd.concat(keep, ignore_index=True)


def perturbations_section(analysis: RunAnalysis) -> Section:
    """The ``perturbations`` section of a run: every model's curves (:func:`perturbation_results`).

    Computed with the run's ``reps``, ``seed`` and protocol; empty with the reason (and so left out of
    ``analysis.json``) when the run holds no perturbed copy.
    """
    from airbench_nb import plots

    items = analysis.run.items
    if not any(PERTURBATION_OF_KEY in (getattr(i, "meta", None) or {}) for i in items.values()):
        return Section(
            "perturbations",
            {},
            reason="no perturbed copies in the run: build them with notebook 01's build_options "
            '{"perturbations": ["codec:mp3:24", "reverb:0.6"], "perturb_items_per_task": 4} (docs/data.md, '
            '"Perturbations")',
        )
    frame = analysis.run.foundation_frame(analysis.protocol, perturbations=True)
    outcomes = accuracy_outcomes(frame, items) if not frame.empty else []
    outcomes += reference_outcomes(items.values(), analysis.run.responses, analysis.embedder)
    points = perturbation_results(outcomes, reps=analysis.reps, seed=analysis.seed)
    if not points:
        return Section("perturbations", {}, reason="no model answered an item and one of its perturbed copies")
    table = perturbations_frame(points)
    payload = perturbations_payload(points, reps=analysis.reps, seed=analysis.seed, protocol=analysis.protocol)
    return Section(
        "perturbations",
        payload.model_dump(mode="json"),
        frame=table,
        figure=plots.perturbation_curves(headline_points(table)),
        figure_key="perturbations",
    )


register_analysis_section("perturbations", perturbations_section, PerturbationsPayload, optional=True)
