"""How much a score moves when the audio is perturbed: codec, reverberation, speed, pitch, clipping, loudness.

A perturbed copy (:mod:`airbench_nb.builders.perturbations`, made and measured by :mod:`airbench_nb.perturb`) asks an
item's question again on its audio coded, reverberated, sped up, pitched, clipped or made louder or quieter; its
``meta`` names the original (``perturbation_of``), the curve (``perturbation``: ``codec:mp3``, ``reverb``, ...), the
requested ``parameter`` and what was ``measured`` on the written file. This module compares, per model, task and
point of a curve, the metric on the perturbed copies with the metric on the same originals, paired by item. It is
pure: it takes per-item outcomes (:class:`PerturbOutcome`) and returns typed results (:class:`PerturbPoint`).

Metrics, each a ratio of sums over the items so that one formula serves both:

``accuracy`` (single-choice items)
    ``sum(correct) / n``: each item's ``value`` is 1 or 0 (its ``weight`` 1). Higher is better.
``wer`` (transcription items)
    Corpus word error rate ``sum(errors) / sum(reference words)`` (SSEU-Bench's WER, as
    :func:`airbench_nb.scoring.wer.utterance_errors` counts them after Whisper's English normaliser): each item's
    ``value`` is its word errors, its ``weight`` its reference words. Lower is better.

What each point gives:

``clean`` and ``perturbed``
    The metric over the items answered both on the original and on this perturbation (the paired items), on each.
``difference``
    ``perturbed - clean`` with a paired bootstrap 95% interval: the paired items are resampled with replacement
    (each keeps both its outcomes), ``reps`` times, seeded, the metric recomputed on each side of every replicate,
    and the interval is the 2.5th and 97.5th percentiles of the replicates' differences. For accuracy a negative
    difference is a loss; for WER a positive one is.
``measured``
    The mean over the paired items of the measured value of the perturbation (``meta.measured.value``: the codec's
    bitrate read from the encoded file, the RT60 of the RIR by Schroeder's method, the duration ratio, the pitch
    ratio, the share of clipped samples, the integrated loudness), beside the requested ``parameter``.

Pooled points (``task`` None) put together every task of one metric of a model (its Foundation tasks, say), as the
controls' analysis does.
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
from airbench_nb.records import PERTURBATION_OF_KEY

if TYPE_CHECKING:
    from airbench_nb.analysis.report import RunAnalysis

logger = logging.getLogger(__name__)

METRICS: dict[str, bool] = {"accuracy": True, "wer": False}
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
    """The item's task."""
    metric: str
    """``accuracy`` or ``wer`` (:data:`METRICS`)."""
    uid: str
    """The original item's uid (a copy's ``meta.perturbation_of``)."""
    curve: str | None
    """The copy's curve (``codec:mp3``, ``reverb``, ...); None for the original."""
    parameter: float | None
    """The copy's requested parameter; None for the original."""
    value: float | None
    """The item's numerator (1/0 when right/wrong; its word errors); None when not answered (the pair is left out)."""
    weight: float = 1.0
    """The item's denominator (1; its reference words)."""
    measured: float | None = None
    """The copy's measured value (``meta.measured.value``); None for the original or when not recorded."""


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
    """``accuracy`` or ``wer``."""
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


def outcome_from_item(
    item: Any, model: str, metric: str, value: float | None, weight: float = 1.0
) -> PerturbOutcome | None:
    """An item's outcome, as an original or as a perturbed copy (read from its ``meta``); None for other derived items.

    Args:
        item: The item (any kind; ``task`` and ``meta`` are read).
        model: The model's spec.
        metric: ``accuracy`` or ``wer``.
        value: Its numerator, or None when not answered.
        weight: Its denominator.
    """
    meta = getattr(item, "meta", None) or {}
    if any(k in meta for k in ("clean_uid", "rotation_of", "control_of")):
        return None
    task = str(getattr(item, "task", getattr(item, "kind", "")))
    if PERTURBATION_OF_KEY not in meta:
        return PerturbOutcome(model, task, metric, str(item.uid), None, None, value, weight)
    measured = (meta.get("measured") or {}).get("value") if isinstance(meta.get("measured"), dict) else None
    return PerturbOutcome(
        model,
        task,
        metric,
        str(meta[PERTURBATION_OF_KEY]),
        str(meta.get("perturbation")),
        float(meta["parameter"]),
        value,
        weight,
        None if measured is None else float(measured),
    )


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
        outcome = outcome_from_item(item, str(model), "accuracy", value)
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


def wer_outcomes(items: Iterable[Any], responses: Mapping[str, Mapping[str, Any]]) -> list[PerturbOutcome]:
    """WER outcomes of every model's transcription answers, for the originals that have a copy and their copies.

    An item the model has no response to is not answered (None); an answer that failed or cannot be read counts as
    all deletions (SSEU-Bench's rule, :func:`~airbench_nb.scoring.wer.utterance_errors`); an item whose reference
    normalises to nothing is left out.

    Args:
        items: The run's items (any kinds: the transcription items are read).
        responses: Per model, its latest response per uid.
    """
    transcription = [i for i in items if getattr(i, "kind", None) == "transcription"]
    originals = {
        str(i.meta[PERTURBATION_OF_KEY])
        for i in transcription
        if PERTURBATION_OF_KEY in (getattr(i, "meta", None) or {})
    }
    wanted = [i for i in transcription if i.uid in originals or PERTURBATION_OF_KEY in (i.meta or {})]
    out: list[PerturbOutcome] = []
    for model, by_uid in responses.items():
        if not any(i.uid in by_uid for i in wanted):
            continue
        for item in wanted:
            response = by_uid.get(item.uid)
            if response is None:
                value, weight = None, 1.0
            else:
                counted = transcript_errors(item, response)
                if counted is None:
                    continue
                value, weight = counted
            outcome = outcome_from_item(item, model, "wer", value, weight)
            if outcome is not None:
                out.append(outcome)
    return out


def _interval(replicates: np.ndarray) -> tuple[float | None, float | None]:
    """The 95% percentile interval of replicates: the kit's :func:`~airbench_nb.scoring.wer.percentile_interval`."""
    from airbench_nb.scoring.wer import percentile_interval

    return percentile_interval(replicates)


def _ratio(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return values.sum(axis=-1) / weights.sum(axis=-1)


@dataclass
class _Pairs:
    clean: np.ndarray
    perturbed: np.ndarray
    weights: np.ndarray
    measured: list[float]


def _point(
    model: str, task: str | None, metric: str, curve: str, parameter: float, pairs: _Pairs, reps: int, seed: int
):
    n = pairs.clean.size
    clean = float(_ratio(pairs.clean, pairs.weights))
    perturbed = float(_ratio(pairs.perturbed, pairs.weights))
    rng = np.random.default_rng([seed, n, int(round(abs(parameter) * 1000))])
    idx = rng.integers(0, n, size=(reps, n))
    w = pairs.weights[idx]
    diffs = _ratio(pairs.perturbed[idx], w) - _ratio(pairs.clean[idx], w)
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
        difference=Estimate(perturbed - clean, *_interval(diffs)),
    )


def perturbation_results(
    outcomes: Iterable[PerturbOutcome], *, reps: int = DEFAULT_REPS, seed: int = 0, pooled: bool = True
) -> list[PerturbPoint]:
    """The points of every curve per model, task and metric (see the module docstring).

    Args:
        outcomes: Per-item outcomes of one or more models, on originals and on their perturbed copies.
        reps: Bootstrap replicates (1 or more).
        seed: Bootstrap seed.
        pooled: Add, per model, metric and point, the pooled point over the metric's tasks (``task`` None) when the
            model has several such tasks.

    Returns:
        Points sorted by model, metric, task (pooled last), curve and parameter; a point without a paired item is
        left out.

    Raises:
        ValueError: For an unknown metric, a negative value or weight, two outcomes of one item and condition, or
            ``reps`` < 1.
    """
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    cells: dict[tuple[str, str, str], dict[str, dict[tuple[str, float] | None, PerturbOutcome]]] = {}
    for o in outcomes:
        if o.metric not in METRICS:
            raise ValueError(
                f"outcome of {o.model} on {o.uid}: unknown metric {o.metric!r}; known: {', '.join(METRICS)}"
            )
        if (o.value is not None and (not math.isfinite(o.value) or o.value < 0)) or not o.weight > 0:
            raise ValueError(f"outcome of {o.model} on {o.uid}: value {o.value} / weight {o.weight} is not a count")
        key = None if o.curve is None else (o.curve, float(o.parameter if o.parameter is not None else math.nan))
        row = cells.setdefault((o.model, o.metric, o.task), {}).setdefault(o.uid, {})
        if key in row:
            raise ValueError(f"two outcomes of {o.model} on {o.uid} under {key or 'the original audio'}")
        row[key] = o
    results: list[PerturbPoint] = []
    for model in sorted({m for m, _, _ in cells}):
        for metric in sorted({x for m, x, _ in cells if m == model}):
            tasks = sorted(t for m, x, t in cells if m == model and x == metric)
            per_point: dict[tuple[str, float], dict[str, _Pairs]] = {}
            for task in tasks:
                rows = cells[(model, metric, task)]
                points = sorted({k for r in rows.values() for k in r if k is not None})
                for curve, parameter in points:
                    clean, perturbed, weights, measured = [], [], [], []
                    for r in rows.values():
                        original, copy = r.get(None), r.get((curve, parameter))
                        if original is None or copy is None or original.value is None or copy.value is None:
                            continue
                        clean.append(original.value)
                        perturbed.append(copy.value)
                        weights.append(original.weight)
                        if copy.measured is not None:
                            measured.append(copy.measured)
                    if clean:
                        per_point.setdefault((curve, parameter), {})[task] = _Pairs(
                            np.array(clean), np.array(perturbed), np.array(weights), measured
                        )
            for task in tasks:
                for (curve, parameter), by_task in sorted(per_point.items()):
                    if task in by_task:
                        results.append(_point(model, task, metric, curve, parameter, by_task[task], reps, seed))
            if pooled and len(tasks) > 1:
                for (curve, parameter), by_task in sorted(per_point.items()):
                    parts = list(by_task.values())
                    joined = _Pairs(
                        np.concatenate([p.clean for p in parts]),
                        np.concatenate([p.perturbed for p in parts]),
                        np.concatenate([p.weights for p in parts]),
                        [m for p in parts for m in p.measured],
                    )
                    results.append(_point(model, None, metric, curve, parameter, joined, reps, seed))
    return results


class PerturbPointRow(Payload):
    """``perturbations[model][i]``: one point of one curve (see :class:`PerturbPoint`)."""

    task: str | None
    """The task; None for every task of the metric together."""
    metric: str
    """``accuracy`` (higher is better) or ``wer`` (lower is better)."""
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
            )
        )
    return PerturbationsPayload(models=models, reps=reps, seed=seed, protocol=protocol, scope=SCOPE)


SCOPE = (
    "single-choice items (accuracy) and transcription items (corpus WER) that have perturbed copies "
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
    outcomes += wer_outcomes(items.values(), analysis.run.responses)
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
