"""Does the model listen? Scores with the audio and under the audio-reliance controls, paired by item.

The controls (:mod:`airbench_nb.builders.controls`) ask each question again with its audio silenced, replaced by
noise of its loudness, swapped for another item's (``mismatched``), left out (``no_audio``) or described in text
(``description``). This module compares, per model and task (and over all tasks, ``task`` None), the outcome of each
original item with the outcomes of its controls. It is pure: it takes per-item outcomes
(:class:`ControlOutcome`, one per model and item asked, paired by the original's uid; :func:`outcomes_of` makes
them from items and a per-uid correctness) and returns typed results (:class:`ControlsResult`).

What it gives, with what it means:

Score with the audio, score under each control
    The mean of ``correct`` over the original items (with the audio) and over the items whose control was answered
    (under the control). ``correct`` is 1 or 0 (True or False) for a single-choice item, or any score in [0, 1]; an
    outcome of None (not answered, or ``n/a``: a backend that cannot prompt without audio) leaves the pair out.
Difference under a control
    The mean over the paired items of ``control - with audio`` (negative: the control costs score), with a paired
    bootstrap 95% interval: the original items are resampled with replacement (each keeps its own pair), ``reps``
    times, seeded, and the interval is the 2.5th and 97.5th percentiles of the replicates' means.
Audio-needed share
    The share of the items (among those with an outcome with the audio and under every control of ``needed_under``
    that was run) that are right with the audio and wrong under every one of those controls (default ``silence``
    and ``mismatched``): the items the audio decided. "Right" is ``correct >= 0.5``. An item right under either
    control (a lucky guess on silence, an answer the other clip happens to share) is not counted, so the share is a
    lower bound of what needed the audio; ``audio_needed_of_right`` is the same count over the items right with the
    audio. Its interval is the percentile bootstrap of the same resampling (a share of exactly 0 gives [0, 0]).
Text-prior score
    The best score under the controls that give no information about the item's audio (``silence``,
    ``mismatched``, ``no_audio``): what the question and its options alone are worth to the model. Not ``noise``:
    it keeps each clip's length and loudness, which answer a loudness question (the DSP baseline stays right under
    it on the kit's louder-clip task); not ``description``: it tells the audio in words. The best of several is an
    upward-biased estimate of each, so the prior is if anything overestimated.
Corrected score
    ``(score - prior) / (1 - prior)``, the score with the audio taken over the same items as the prior (those with the
    control that gave it: a run may control only some of its items): the share of the headroom above the text prior that
    the audio adds, the chance correction of Cohen's kappa with the text prior in place of chance. 0 when the audio adds
    nothing (the text-prior model), 1 for a model right on every item whose prior is below 1, negative when the controls
    score higher than the audio; undefined (None, with the reason) when the prior is 1 (the oracle, unchanged under
    every control by construction: nothing is left to correct). Chosen over the plain difference ``score - prior``
    because it is comparable across tasks of different priors (a 2-option task's prior sits near 0.5, a 4-option task's
    near 0.25). Its interval recomputes prior and score in each bootstrap replicate (replicates with a prior of 1 are
    left out, and counted).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from airbench_nb.analysis_report import ControlEstimate, ControlScoreRow, ControlsDetail, ControlsRow
from airbench_nb.builders.controls import CONTROL_KEY, CONTROL_OF_KEY, CONTROLS
from airbench_nb.records import PERTURBATION_OF_KEY

logger = logging.getLogger(__name__)

NEEDED_UNDER = ("silence", "mismatched")
"""Controls an item must be wrong under (all of those run) to count as needing the audio."""
PRIOR_CONTROLS = ("silence", "mismatched", "no_audio")
"""Controls that give no information about the item's audio: the text-prior score is the best of them. Not ``noise``:
it keeps each clip's length and loudness, which answer some questions (the DSP baseline stays right under it on the
kit's louder-clip task); not ``description``: it tells the audio in words."""
RIGHT_AT = 0.5
"""An outcome at or over this is right."""
DEFAULT_REPS = 2000
"""Bootstrap replicates."""
CORRECTED_FORMULA = "(score - prior) / (1 - prior)"
"""The corrected score (see the module docstring)."""


@dataclass(frozen=True)
class ControlOutcome:
    """One model's outcome on one item, with its audio or under one control."""

    model: str
    """The model's spec."""
    task: str
    """The item's task."""
    uid: str
    """The original item's uid (a control's ``meta.control_of``)."""
    control: str | None
    """The control's name; None for the original, with its audio."""
    correct: float | None
    """1 (right) or 0 (wrong), or a score in [0, 1]; None when not answered or ``n/a`` (the pair is left out)."""


@dataclass(frozen=True)
class Estimate:
    """A value with its bootstrap 95% interval."""

    value: float | None
    """The value (None when it cannot be computed: no item, or a prior of 1 for the corrected score)."""
    low: float | None
    """2.5th percentile of the bootstrap replicates (None without replicates)."""
    high: float | None
    """97.5th percentile of the bootstrap replicates (None without replicates)."""
    n: int
    """Items it is computed over."""

    def excludes(self, value: float) -> bool:
        """Whether the interval is known and leaves ``value`` out."""
        return self.low is not None and self.high is not None and not self.low <= value <= self.high


@dataclass(frozen=True)
class ControlScore:
    """A model's score under one control, against its score with the audio on the same items."""

    control: str
    """The control's name."""
    n: int
    """Items answered both with the audio and under the control."""
    with_audio: float
    """Score with the audio over these items."""
    score: float
    """Score under the control over these items."""
    difference: Estimate
    """``score - with_audio`` with its paired bootstrap interval."""


@dataclass(frozen=True)
class ControlsResult:
    """What the controls say of one model on one task (or on all its tasks, ``task`` None)."""

    model: str
    """The model's spec."""
    task: str | None
    """The task; None for all the model's tasks together."""
    n: int
    """Original items answered with the audio."""
    score: Estimate
    """Score with the audio (bootstrap interval over the items)."""
    controls: list[ControlScore]
    """Each control run, in :data:`~airbench_nb.builders.controls.CONTROLS` order."""
    audio_needed: Estimate | None
    """Share of the items right with the audio and wrong under every control of ``needed_under`` run; None when
    none of them was run."""
    audio_needed_of_right: float | None
    """The same items as a share of those right with the audio; None when no item was right or none was run."""
    needed_under: list[str]
    """The controls the audio-needed share used (those of :data:`NEEDED_UNDER` that were run)."""
    text_prior: Estimate | None
    """Best score under the controls of :data:`PRIOR_CONTROLS` run (each over its own paired items); None when none
    was run."""
    text_prior_control: str | None
    """The control that gave the text-prior score."""
    corrected: Estimate | None
    """``(score - prior) / (1 - prior)`` (:data:`CORRECTED_FORMULA`); None without a text prior."""
    corrected_why: str | None = None
    """Why the corrected score has no value (a prior of 1), or how many replicates were left out; None otherwise."""
    not_answered: dict[str, str] = field(default_factory=dict)
    """Controls the run holds for these items that the model answered none of, with why (:func:`not_answered_why`):
    a backend that cannot be prompted without audio is ``n/a`` on ``no_audio`` and ``description``."""
    metric: str = "accuracy"
    """What ``score`` is: ``accuracy`` (Foundation), ``judge score / 10`` (Chat), ``wer`` (transcripts: corpus WER, a
    rise under a control is a loss), ``bleu`` (translations: corpus BLEU as a fraction) or ``map`` (event lists); the
    last three have no audio-needed share, text prior or corrected score (:data:`REFERENCE_METRICS`)."""
    reps: int = DEFAULT_REPS
    """Bootstrap replicates."""
    seed: int = 0
    """Bootstrap seed."""


@dataclass
class _Table:
    """One group's outcomes: a row per original item, a column per condition (NaN where not answered)."""

    uids: list[str]
    audio: np.ndarray
    controls: dict[str, np.ndarray] = field(default_factory=dict)
    unanswered: list[str] = field(default_factory=list)
    """Controls the items have that no outcome answered (in :data:`CONTROLS` order)."""


def outcomes_of(items: Iterable[Any], correct: Mapping[str, float | bool | None], model: str) -> list[ControlOutcome]:
    """Outcomes of one model from items (originals and controls) and a correctness per item uid.

    Args:
        items: Items of a manifest: originals and their controls (``meta.control_of``), others (SNR-graded, rotated
            and perturbed copies) are skipped.
        correct: Per item uid, 1/0 (True/False), a score in [0, 1], or None (not answered, ``n/a``); an item
            missing from it is not answered.
        model: The model's spec.

    Returns:
        One outcome per item, the controls' under their original's uid.
    """
    out = []
    for item in items:
        meta = getattr(item, "meta", None) or {}
        if "clean_uid" in meta or "rotation_of" in meta or PERTURBATION_OF_KEY in meta:
            continue
        uid = str(item.uid)
        value = correct.get(uid)
        task = str(getattr(item, "task", getattr(item, "kind", "")))
        original, control = (meta[CONTROL_OF_KEY], meta.get(CONTROL_KEY)) if CONTROL_OF_KEY in meta else (uid, None)
        out.append(ControlOutcome(model, task, original, control, None if value is None else float(value)))
    return out


def outcomes_from_frame(frame: Any, items: Mapping[str, Any]) -> list[ControlOutcome]:
    """Outcomes from a per-(model, item) frame (notebook 05's Foundation frame: ``model``, ``uid``, ``correct``).

    Args:
        frame: A pandas DataFrame with those columns (``correct`` True/False, a score in [0, 1], or NA when the
            protocol drops the answer).
        items: The run's items by uid (originals and controls), for ``meta.control_of`` and the task.

    Returns:
        The outcomes of every model in the frame (:func:`outcomes_of`), rows of uids not in ``items`` left out; a
        control in ``items`` of an original the model answered, with no row of its own (a backend that cannot be
        prompted without audio is not asked ``no_audio``), is an outcome of None: not answered.

    Raises:
        ValueError: When a column is missing (naming it).
    """
    import pandas as pd

    missing = [c for c in ("model", "uid", "correct") if c not in frame.columns]
    if missing:
        raise ValueError(f"outcomes_from_frame: the frame has no column {', '.join(missing)}")
    out: list[ControlOutcome] = []
    for model, rows in frame.groupby("model", sort=True):
        correct = {
            str(u): (None if pd.isna(c) else float(c)) for u, c in zip(rows["uid"], rows["correct"], strict=True)
        }
        asked = [items[u] for u in correct if u in items]
        answered = {str(i.uid) for i in asked}
        unasked = [
            i
            for u, i in items.items()
            if u not in answered and (getattr(i, "meta", None) or {}).get(CONTROL_OF_KEY) in answered
        ]
        out += outcomes_of([*asked, *unasked], correct, str(model))
    return out


WITHOUT_AUDIO_CONTROLS = ("no_audio", "description")
"""Controls asked without audio: a backend that cannot prompt text alone is ``n/a`` on them (never asked)."""


def not_answered_why(control: str) -> str:
    """Why a model has no outcome under a control its items have (shown as ``n/a`` with this reason)."""
    if control in WITHOUT_AUDIO_CONTROLS:
        return "n/a: not asked, the model cannot be prompted without audio (or every answer failed)"
    return "no answer: the control was not run for this model (or every answer failed)"


CHAT_SCALE = 10.0
"""A Chat answer's judge score (1-10) is divided by this to be an outcome in [0, 1] (right at 5 and over)."""


REFERENCE_METRICS: tuple[str, ...] = ("wer", "bleu", "map")
"""The reference-scored metrics of the controls' rows (:func:`reference_controls_results`)."""
REFERENCE_LABELS: dict[str, str] = {
    "wer": "transcripts, WER",
    "bleu": "translations, BLEU",
    "map": "events, mAP",
}
"""What the controls' results add to a model's name for its reference-scored rows (:func:`reference_label`):
SSEU-Bench's clean transcripts (corpus WER), UG-Bench's translations (corpus BLEU per language pair) and SSEU-Bench's
event lists (mAP)."""
WER_LABEL = REFERENCE_LABELS["wer"]
"""What the controls' results add to a model's name for its transcription rows."""
REFERENCE_WHY = (
    "{metric}: no audio-needed share, text prior or corrected score (a reference-scored answer is not right or wrong "
    "item by item; each control's change of the metric is the measure)"
)
"""Why the reference-scored rows have no audio-needed share, text prior or corrected score."""
WER_WHY = REFERENCE_WHY.format(metric="WER")
"""Why the WER rows have no audio-needed share, text prior or corrected score."""


def reference_label(model: str, metric: str) -> str:
    """What the controls' results call a model's reference-scored answers (``<model> (transcripts, WER)``, ...)."""
    return f"{model} ({REFERENCE_LABELS[metric]})"


def wer_label(model: str) -> str:
    """What the controls' results call a model's transcripts (``<model> (transcripts, WER)``)."""
    return reference_label(model, "wer")


def reference_controls_results(
    items: Iterable[Any],
    responses: Mapping[str, Mapping[str, Any]],
    *,
    embedder: str | None = None,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
) -> list[ControlsResult]:
    """The controls of reference-scored items: transcripts (corpus WER), translations (BLEU) and event lists (mAP).

    Per model, metric and task (a translation's with its language pair), and over all the metric's tasks when they
    pool (``task`` None: one BLEU tokenizer, one class list): the metric with the audio over the
    controlled originals (percentile bootstrap interval), and under each control the metric over the items answered
    both ways with the paired bootstrap interval of the difference (control - audio: for WER a rise is a loss, for
    BLEU and mAP a fall is), as :func:`airbench_nb.analysis.perturbations.perturbation_results` computes a point.
    The items' statistics are read as the perturbation curves read them
    (:func:`~airbench_nb.analysis.perturbations.reference_outcomes`: a failed transcript counts as all deletions, a
    failed translation as ``""``, a failed event list scores every class 0); an item without a response is not
    answered (a transcriber is not asked ``no_audio``: :func:`not_answered_why`). Keyed by :func:`reference_label`.

    Args:
        items: The run's items.
        responses: Per model, its latest response per uid.
        embedder: The embedding backend's spec for event lists (None: the default offline model).
        reps: Bootstrap replicates.
        seed: Bootstrap seed.
    """
    from airbench_nb.analysis.perturbations import perturbation_results, reference_outcomes

    items = list(items)
    outcomes = reference_outcomes(items, responses, embedder, sort="control")
    present: dict[tuple[str, str], set[str]] = {}
    for o in outcomes:
        if o.curve is not None:
            present.setdefault((o.metric, o.task), set()).add(o.curve)
    results: list[ControlsResult] = []
    for model in sorted({o.model for o in outcomes}):
        own_outcomes = [o for o in outcomes if o.model == model]
        points = perturbation_results(own_outcomes, reps=reps, seed=seed)
        for metric in sorted({o.metric for o in own_outcomes}):
            tasks = sorted({o.task for o in own_outcomes if o.metric == metric})
            pooled = len(tasks) > 1 and any(p.metric == metric and p.task is None for p in points)
            for task in [*tasks, *([None] if pooled else [])]:
                originals = [
                    o
                    for o in own_outcomes
                    if o.metric == metric and (task is None or o.task == task) and o.curve is None
                ]
                result = _reference_result(model, metric, task, originals, points, present, reps, seed)
                if result is not None:
                    results.append(result)
    return results


def _reference_result(
    model: str,
    metric: str,
    task: str | None,
    originals: Sequence[Any],
    points: Sequence[Any],
    present: Mapping[tuple[str, str], set[str]],
    reps: int,
    seed: int,
) -> ControlsResult | None:
    """One reference-scored row (a task's, or all the metric's tasks' for ``task`` None); None without an answer."""
    from airbench_nb.analysis.perturbations import metric_estimate

    answered = [o for o in originals if o.stats is not None]
    if not answered:
        return None
    stats = np.array([o.stats for o in answered], float)
    with_audio = metric_estimate(metric, stats, reps, [seed, len(answered), 7], [o.cluster for o in answered])
    own = {p.curve: p for p in points if (p.metric, p.task) == (metric, task)}
    scores = [
        ControlScore(
            control=name,
            n=own[name].n,
            with_audio=own[name].clean,
            score=own[name].perturbed,
            difference=Estimate(
                own[name].difference.value, own[name].difference.low, own[name].difference.high, own[name].n
            ),
        )
        for name in CONTROLS
        if name in own
    ]
    tasks = {o.task for o in originals}
    run = set().union(*(present.get((metric, t), set()) for t in tasks))
    return ControlsResult(
        model=reference_label(model, metric),
        task=task,
        n=len(answered),
        score=Estimate(with_audio.value, with_audio.low, with_audio.high, len(answered)),
        controls=scores,
        audio_needed=None,
        audio_needed_of_right=None,
        needed_under=[],
        text_prior=None,
        text_prior_control=None,
        corrected=None,
        corrected_why=REFERENCE_WHY.format(metric={"wer": "WER", "bleu": "BLEU", "map": "mAP"}[metric]),
        not_answered={c: not_answered_why(c) for c in CONTROLS if c in run and c not in own},
        metric=metric,
        reps=reps,
        seed=seed,
    )


def wer_controls_results(
    items: Iterable[Any], responses: Mapping[str, Mapping[str, Any]], *, reps: int = DEFAULT_REPS, seed: int = 0
) -> list[ControlsResult]:
    """The controls of transcription items, scored by corpus WER (:func:`reference_controls_results`' WER rows)."""
    return [r for r in reference_controls_results(items, responses, reps=reps, seed=seed) if r.metric == "wer"]


def chat_label(model: str, judge: str) -> str:
    """What the controls' results call a model's Chat answers as one judge scored them."""
    return f"{model} (Chat, judged by {judge})"


def chat_outcomes(
    frame: Any, items: Mapping[str, Any], answered: Mapping[str, Iterable[str]], protocol: str = "strict"
) -> list[ControlOutcome]:
    """Outcomes of the Chat items and their controls from notebook 05's Chat frame, one set per model and judge.

    Each item's outcome is the model's judge score over both orders and every turn, divided by :data:`CHAT_SCALE`
    (in [0, 1]; an answer scored 5 or more is "right" for the audio-needed share). Under ``strict`` a score that
    could not be read counts 0; under ``official`` it is left out (None when nothing is left). An item the model has
    no response to (a backend not asked ``no_audio``) is not answered. The results are keyed by
    :func:`chat_label` (``<model> (Chat, judged by <judge>)``): judge scores are never pooled with accuracies.

    Args:
        frame: The Chat frame with its controls (``RunData.chat_frame(protocol, controls=True)``: ``model``,
            ``judge``, ``uid``, ``score_model``).
        items: The run's items by uid.
        answered: Per model, the uids it has a response to.
        protocol: ``strict`` or ``official``.

    Raises:
        ValueError: When a column is missing (naming it).
    """
    missing = [c for c in ("model", "judge", "uid", "score_model") if c not in frame.columns]
    if missing:
        raise ValueError(f"chat_outcomes: the frame has no column {', '.join(missing)}")
    out: list[ControlOutcome] = []
    for (model, judge), rows in frame.groupby(["model", "judge"], sort=True):
        got = set(answered.get(str(model), ()))
        values: dict[str, float | None] = {}
        for uid, sub in rows.groupby("uid", sort=True):
            if str(uid) not in got or str(uid) not in items:
                continue
            scores = sub["score_model"].astype(float)
            scores = scores.fillna(0.0) if protocol == "strict" else scores.dropna()
            values[str(uid)] = None if scores.empty else min(1.0, max(0.0, float(scores.mean()) / CHAT_SCALE))
        unasked = [
            i
            for u, i in items.items()
            if u not in values and (getattr(i, "meta", None) or {}).get(CONTROL_OF_KEY) in values
        ]
        out += outcomes_of([*(items[u] for u in values), *unasked], values, chat_label(str(model), str(judge)))
    return out


def _tables(outcomes: Iterable[ControlOutcome]) -> dict[tuple[str, str], _Table]:
    cells: dict[tuple[str, str], dict[str, dict[str | None, float | None]]] = {}
    for o in outcomes:
        if o.control is not None and o.control not in CONTROLS:
            raise ValueError(f"outcome of {o.model} on {o.uid}: unknown control {o.control!r}")
        if o.correct is not None and not 0.0 <= o.correct <= 1.0:
            raise ValueError(
                f"outcome of {o.model} on {o.uid} ({o.control or 'audio'}): correct {o.correct} not in [0, 1]"
            )
        row = cells.setdefault((o.model, o.task), {}).setdefault(o.uid, {})
        if o.control in row:
            raise ValueError(f"two outcomes of {o.model} on {o.uid} under {o.control or 'the audio'}")
        row[o.control] = o.correct
    tables = {}
    for key, rows in cells.items():
        uids = sorted(u for u, r in rows.items() if r.get(None) is not None)
        if not uids:
            continue
        audio = np.array([rows[u][None] for u in uids], dtype=float)
        table = _Table(uids, audio)
        for name in CONTROLS:
            if any(rows[u].get(name) is not None for u in uids):
                table.controls[name] = np.array(
                    [np.nan if rows[u].get(name) is None else rows[u][name] for u in uids], dtype=float
                )
            elif any(name in rows[u] for u in uids):
                table.unanswered.append(name)
        tables[key] = table
    return tables


def _pooled(tables: Sequence[_Table]) -> _Table:
    audio = np.concatenate([t.audio for t in tables])
    names = [c for c in CONTROLS if any(c in t.controls for t in tables)]
    controls = {c: np.concatenate([t.controls.get(c, np.full(t.audio.size, np.nan)) for t in tables]) for c in names}
    unanswered = [c for c in CONTROLS if c not in names and any(c in t.unanswered for t in tables)]
    return _Table([u for t in tables for u in t.uids], audio, controls, unanswered)


def _interval(replicates: np.ndarray) -> tuple[float | None, float | None]:
    """The 95% percentile interval of replicates: the kit's :func:`~airbench_nb.scoring.wer.percentile_interval`."""
    from airbench_nb.scoring.wer import percentile_interval

    return percentile_interval(replicates)


def _nanmean(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a replicate without a known pair is NaN
        return np.nanmean(x, axis=axis)


def _needed(audio: np.ndarray, controls: Sequence[np.ndarray]) -> np.ndarray:
    """Per row: 1 when right with the audio and wrong under every control, 0 otherwise, NaN when one is unknown."""
    known = np.all([np.isfinite(c) for c in controls], axis=0)
    wrong = np.all([c < RIGHT_AT for c in controls], axis=0)
    return np.where(known, ((audio >= RIGHT_AT) & wrong).astype(float), np.nan)


def _analyse(model: str, task: str | None, table: _Table, reps: int, seed: int) -> ControlsResult:
    n = table.audio.size
    rng = np.random.default_rng([seed, n])
    idx = rng.integers(0, n, size=(reps, n))
    audio_reps = table.audio[idx]
    score = Estimate(float(np.mean(table.audio)), *_interval(np.mean(audio_reps, axis=1)), n)

    scores: list[ControlScore] = []
    control_reps: dict[str, np.ndarray] = {}
    for name, values in table.controls.items():
        known = np.isfinite(values)
        diff = values - table.audio
        diff_reps = _nanmean(diff[idx], axis=1)
        control_reps[name] = _nanmean(values[idx], axis=1)
        scores.append(
            ControlScore(
                control=name,
                n=int(known.sum()),
                with_audio=float(np.mean(table.audio[known])),
                score=float(np.mean(values[known])),
                difference=Estimate(float(np.mean(diff[known])), *_interval(diff_reps), int(known.sum())),
            )
        )

    needed_under = [c for c in NEEDED_UNDER if c in table.controls]
    audio_needed: Estimate | None = None
    of_right: float | None = None
    if needed_under:
        needed = _needed(table.audio, [table.controls[c] for c in needed_under])
        known = np.isfinite(needed)
        if known.any():
            audio_needed = Estimate(
                float(np.mean(needed[known])), *_interval(_nanmean(needed[idx], axis=1)), int(known.sum())
            )
            right = known & (table.audio >= RIGHT_AT)
            of_right = float(np.mean(needed[right])) if right.any() else None

    priors = [s for s in scores if s.control in PRIOR_CONTROLS]
    text_prior: Estimate | None = None
    prior_control: str | None = None
    corrected: Estimate | None = None
    why: str | None = None
    if priors:
        best = max(priors, key=lambda s: s.score)
        prior_control = best.control
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a replicate without a known pair is NaN
            prior_reps = np.nanmax(np.stack([control_reps[s.control] for s in priors]), axis=0)
        text_prior = Estimate(best.score, *_interval(prior_reps), best.n)
        # The score corrected is the one on the items the prior was measured on (those with the best control): a
        # model's items without controls would otherwise be set against a prior from other items.
        paired = np.isfinite(table.controls[best.control])
        score_reps = _nanmean(np.where(paired, table.audio, np.nan)[idx], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            corrected_reps = np.where(prior_reps < 1.0, (score_reps - prior_reps) / (1.0 - prior_reps), np.nan)
        left_out = int(np.sum(~np.isfinite(corrected_reps)))
        if best.score >= 1.0:
            why = "the text prior is 1: nothing above it to correct (a model unchanged under every control)"
            corrected = Estimate(None, None, None, best.n)
        else:
            value = (best.with_audio - best.score) / (1.0 - best.score)
            corrected = Estimate(float(value), *_interval(corrected_reps), best.n)
            if left_out:
                why = f"{left_out} of {reps} bootstrap replicates had a text prior of 1 and were left out"
    return ControlsResult(
        model=model,
        task=task,
        n=n,
        score=score,
        controls=scores,
        audio_needed=audio_needed,
        audio_needed_of_right=of_right,
        needed_under=needed_under,
        text_prior=text_prior,
        text_prior_control=prior_control,
        corrected=corrected,
        corrected_why=why,
        not_answered={name: not_answered_why(name) for name in table.unanswered},
        reps=reps,
        seed=seed,
    )


def controls_results(
    outcomes: Iterable[ControlOutcome], *, reps: int = DEFAULT_REPS, seed: int = 0, pooled: bool = True
) -> list[ControlsResult]:
    """The controls' analysis per model and task (see the module docstring).

    Args:
        outcomes: Per-item outcomes of one or more models, with the audio and under the controls.
        reps: Bootstrap replicates (1 or more).
        seed: Bootstrap seed.
        pooled: Add, per model, a result over all its tasks (``task`` None) after its tasks.

    Returns:
        One result per model and task (models and tasks sorted), each model's pooled result after its tasks. A task
        whose originals have no outcome with the audio gives none.

    Raises:
        ValueError: For an unknown control, an outcome outside [0, 1], two outcomes of one item and condition, or
            ``reps`` < 1.
    """
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    tables = _tables(outcomes)
    results: list[ControlsResult] = []
    for model in sorted({m for m, _ in tables}):
        tasks = sorted(t for m, t in tables if m == model)
        results += [_analyse(model, task, tables[model, task], reps, seed) for task in tasks]
        if pooled and len(tasks) > 1:
            results.append(_analyse(model, None, _pooled([tables[model, t] for t in tasks]), reps, seed))
    return results


SCOPE = (
    "Foundation items with their audio-reliance controls (meta.control_of) and the controls, read as the section's "
    "protocol reads them; Chat items and their controls per judge, the judge score over both orders and every turn "
    "divided by 10 (rows '<model> (Chat, judged by <judge>)'); SNR-graded, rotated and perturbed copies left out"
)
"""Which items the ``controls`` section of ``analysis.json`` reads."""


def _estimate(estimate: Estimate) -> ControlEstimate:
    return ControlEstimate(value=estimate.value, ci=[estimate.low, estimate.high], n=estimate.n)


def _optional(estimate: Estimate | None) -> ControlEstimate | None:
    return None if estimate is None else _estimate(estimate)


def controls_payload(results: Iterable[ControlsResult]) -> dict[str, list[ControlsRow]]:
    """The ``controls`` section of ``analysis.json``: per model, its results in order (each task, then all tasks)."""
    out: dict[str, list[ControlsRow]] = {}
    for r in results:
        out.setdefault(r.model, []).append(
            ControlsRow(
                task=r.task,
                n=r.n,
                score=_estimate(r.score),
                controls=[
                    ControlScoreRow(
                        control=c.control,
                        n=c.n,
                        with_audio=c.with_audio,
                        score=c.score,
                        difference=_estimate(c.difference),
                    )
                    for c in r.controls
                ],
                audio_needed=_optional(r.audio_needed),
                audio_needed_of_right=r.audio_needed_of_right,
                needed_under=list(r.needed_under),
                text_prior=_optional(r.text_prior),
                text_prior_control=r.text_prior_control,
                corrected=_optional(r.corrected),
                corrected_why=r.corrected_why,
                not_answered=dict(r.not_answered),
                metric=r.metric,
            )
        )
    return out


def controls_detail(protocol: str, reps: int, seed: int) -> ControlsDetail:
    """The ``controls_detail`` of ``analysis.json``: how the section was computed."""
    return ControlsDetail(
        protocol=protocol,
        reps=reps,
        seed=seed,
        needed_under=list(NEEDED_UNDER),
        prior_controls=list(PRIOR_CONTROLS),
        corrected=CORRECTED_FORMULA,
        scope=SCOPE,
    )


def _cell(estimate: Estimate | None) -> str:
    if estimate is None or estimate.value is None:
        return ""
    if estimate.low is None or estimate.high is None:
        return f"{estimate.value:.3f}"
    return f"{estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]"


def controls_frame(results: Iterable[ControlsResult]) -> Any:
    """A display table: one row per model and task (``all`` for the model's tasks together).

    Each cell is ``value [95% CI]``: the score with the audio, each control's difference from it (control - audio),
    the audio-needed share, the text-prior score and the corrected score.
    """
    import pandas as pd

    rows = []
    for r in results:
        row: dict[str, Any] = {"model": r.model, "task": r.task or "all", "n": r.n, "with audio": _cell(r.score)}
        row.update({f"{c.control} - audio": _cell(c.difference) for c in r.controls})
        row["audio needed"] = _cell(r.audio_needed)
        row["text prior"] = _cell(r.text_prior)
        row["corrected"] = _cell(r.corrected)
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.fillna("") if not frame.empty else frame


def controls_plot_frame(results: Iterable[ControlsResult]) -> Any:
    """The tidy rows :func:`airbench_nb.plots.controls_chart` draws, one model's over all its tasks (or its only task).

    Each control's difference and the audio-needed share, as fractions with their intervals. Columns ``model,
    measure, value, ci_low, ci_high, n``; ``measure`` is a control's name (a difference, control - audio) or
    ``audio needed`` (a share).
    """
    import pandas as pd

    results = list(results)
    rows = []
    for model in dict.fromkeys(r.model for r in results):
        own = [r for r in results if r.model == model]
        overall = next((r for r in own if r.task is None), own[0] if len(own) == 1 else None)
        if overall is None:
            continue
        for c in overall.controls:
            rows.append(
                {
                    "model": model,
                    "measure": c.control,
                    "value": c.difference.value,
                    "ci_low": c.difference.low,
                    "ci_high": c.difference.high,
                    "n": c.n,
                }
            )
        if overall.audio_needed is not None:
            a = overall.audio_needed
            rows.append(
                {
                    "model": model,
                    "measure": "audio needed",
                    "value": a.value,
                    "ci_low": a.low,
                    "ci_high": a.high,
                    "n": a.n,
                }
            )
    return pd.DataFrame(rows, columns=["model", "measure", "value", "ci_low", "ci_high", "n"])
