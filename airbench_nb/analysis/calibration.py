"""Is a model's confidence worth anything? Calibration of single-choice answers from option probabilities.

Where a backend gives the option letters' probabilities at the answer's first position
(:attr:`~airbench_nb.records.Response.option_probs`: ``hf:`` models by default, ``openai:`` models asked with
``logprobs=True``; :mod:`airbench_nb.models.option_probs`), this module asks whether they mean what they say, per
model and task and pooled over a model's tasks (``task`` None). It is pure: :func:`calibration_answers` turns items
and responses into :class:`CalibrationAnswer` rows, :func:`calibration_results` returns typed results
(:class:`CalibrationResult`); :func:`calibration_section` is the ``calibration`` section of ``analysis.json``
(optional: left out of a run whose models gave no option probabilities).

Which answer, which confidence
    The option an answer chose is the one the kit's rule extractor reads in its text
    (:func:`airbench_nb.judge.extract.extract_choice`, the strict protocol's reading); its **confidence** is that
    option's renormalised probability, and it is **correct** when that option is the item's gold. So the calibrated
    quantity is the score the kit reports, not a classifier the model never used. An answer the extractor cannot
    read (it names no option, or several) has no chosen option: it is left out and counted (``unread``). How often
    the chosen option is also the most probable one is reported (``argmax_agreement``: near 1 for greedy decoding of
    a model that answers with the letter; lower when sampling, or when the answer does not begin with its letter).
Which answers
    Single-choice items asked for a letter (Foundation, the tiered benchmark's tier A, MMSU-style lettered items; not
    those asked for an option's text), answered with probabilities; audio-reliance controls and perturbed copies are
    left out (rotations and SNR copies stay: their clusters keep them from counting as independent). Answers made
    under the ``cot`` prompt set are left out and counted (``reasoning_first``): their first token begins the
    reasoning, not the answer, so the letters' probabilities there are not the answer's.
Metrics (:mod:`airbench_nb.analysis.calibration_metrics` states the formulas)
    ECE over :data:`~airbench_nb.analysis.calibration_metrics.BINS` equal-width bins weighted by bin counts, the
    multi-class Brier score, the risk-coverage curve and its area (AURC), accuracy and mean confidence, each with a
    95% percentile bootstrap interval: answers are resampled, and where they share clusters
    (:func:`airbench_nb.records.cluster_of`: the questions about one recording) whole clusters are too and the
    interval is the union of both (:mod:`airbench_nb.scoring.resample`). Also the mean letter mass before
    renormalising (:attr:`~airbench_nb.records.OptionProbs.mass`): a low mass says the model seldom begins with a
    letter, and its option probabilities describe a rarely taken path.

The tiered sound-source benchmark's confident/hedged wording is the text-only proxy of calibration for models that
give no probabilities: :mod:`airbench_nb.analysis.calibration_proxy`, reported in the same section as a separate
table, never as a probability.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from airbench_nb.analysis.calibration_metrics import (
    BINS,
    ReliabilityBin,
    aurc,
    brier_terms,
    ece,
    reliability_bins,
    risk_coverage,
    weighted_mean,
)
from airbench_nb.analysis.calibration_proxy import ProxyRow, proxy_frame, tiered_proxy
from airbench_nb.analysis.registry import register_analysis_section
from airbench_nb.analysis.section import Section
from airbench_nb.judge.extract import extract_choice
from airbench_nb.records import (
    CONTROL_OF_KEY,
    LETTERS,
    PERTURBATION_OF_KEY,
    Response,
    cluster_of,
)

if TYPE_CHECKING:
    from airbench_nb.analysis.report import RunAnalysis

logger = logging.getLogger(__name__)

REASONING_FIRST_PROMPT_SETS = frozenset({"cot"})
"""Prompt sets whose answers reason before they give the letter: their first-token probabilities are left out."""
DEFAULT_REPS = 1000
"""Bootstrap replicates when none are given."""
STATISTICS = ("accuracy", "confidence", "ece", "brier", "aurc")
"""The statistics every bootstrap replicate computes, in order."""


@dataclass(frozen=True)
class CalibrationAnswer:
    """One answer with option probabilities: what it chose, how sure it was, whether it was right."""

    model: str
    """The model's spec."""
    task: str
    """The item's task."""
    uid: str
    """The item's uid."""
    cluster: str
    """The item's cluster key (:func:`airbench_nb.records.cluster_of`)."""
    confidence: float
    """The renormalised probability of the chosen option."""
    correct: bool
    """Whether the chosen option is the gold."""
    probs: list[float]
    """Every option's renormalised probability, in option order."""
    gold: int
    """The gold option's index."""
    argmax_agrees: bool
    """Whether the chosen option is also the most probable one."""
    mass: float
    """The letters' probability before renormalising."""


@dataclass
class AnswerCounts:
    """Per model, what happened to its single-choice answers on the way to the calibration table."""

    used: int = 0
    """Answers with option probabilities and a chosen option (the rows)."""
    without_probs: int = 0
    """Answered without option probabilities (the backend gives none, or none could be read)."""
    unread: int = 0
    """With probabilities, but the rule extractor read no option in the text (left out)."""
    reasoning_first: int = 0
    """Asked under a prompt set that reasons first (:data:`REASONING_FIRST_PROMPT_SETS`; left out)."""
    failed: int = 0
    """No answer (an error)."""


def _eligible(item: Any) -> bool:
    meta = getattr(item, "meta", None) or {}
    return item.option_letters() is not None and CONTROL_OF_KEY not in meta and PERTURBATION_OF_KEY not in meta


def calibration_answers(
    items: Mapping[str, Any], responses: Mapping[str, Mapping[str, Response]]
) -> tuple[list[CalibrationAnswer], dict[str, AnswerCounts]]:
    """The answers with option probabilities, and per model what was left out and why.

    Args:
        items: Items by uid (those that are not single-choice items asked for a letter are passed over).
        responses: ``{model: {uid: latest response}}``.

    Returns:
        The answers (models in the order given, items in uid order) and ``{model: AnswerCounts}`` for every model
        that answered an eligible item.
    """
    answers: list[CalibrationAnswer] = []
    counts: dict[str, AnswerCounts] = {}
    for model, mine in responses.items():
        for uid in sorted(mine):
            item = items.get(uid)
            if item is None or not _eligible(item):
                continue
            response = mine[uid]
            count = counts.setdefault(model, AnswerCounts())
            if response.error is not None or response.text is None:
                count.failed += 1
                continue
            if response.option_probs is None:
                count.without_probs += 1
                continue
            if response.prompt_set in REASONING_FIRST_PROMPT_SETS:
                count.reasoning_first += 1
                continue
            letters = list(LETTERS[: len(item.choices)])
            if sorted(response.option_probs.probs) != letters:
                logger.warning(
                    "%s: %s: option probabilities for %s, but the item has options %s: left out",
                    model,
                    uid,
                    "".join(sorted(response.option_probs.probs)),
                    "".join(letters),
                )
                count.without_probs += 1
                continue
            chosen = extract_choice(response.text, list(item.choices)).choice
            if chosen is None:
                count.unread += 1
                continue
            probs = [response.option_probs.probs[k] for k in letters]
            count.used += 1
            answers.append(
                CalibrationAnswer(
                    model=model,
                    task=item.task,
                    uid=uid,
                    cluster=cluster_of(item),
                    confidence=probs[chosen],
                    correct=chosen == item.answer,
                    probs=probs,
                    gold=int(item.answer),
                    argmax_agrees=int(np.argmax(probs)) == chosen,
                    mass=response.option_probs.mass,
                )
            )
    return answers, {m: c for m, c in counts.items() if c.used or c.without_probs or c.unread or c.reasoning_first}


@dataclass(frozen=True)
class Estimate:
    """A statistic with its bootstrap 95% interval."""

    value: float | None
    """The statistic over the answers (None when undefined)."""
    low: float | None
    """Lower end of the interval (None without one)."""
    high: float | None
    """Upper end of the interval."""

    def contains(self, value: float) -> bool:
        """Whether the interval is known and holds ``value``."""
        return self.low is not None and self.high is not None and self.low <= value <= self.high


@dataclass(frozen=True)
class CalibrationResult:
    """Calibration of one model on one task (``task`` None: all its tasks together)."""

    model: str
    """The model's spec."""
    task: str | None
    """The task; None for the model's tasks pooled."""
    n: int
    """Answers."""
    accuracy: Estimate
    """Share of correct answers."""
    confidence: Estimate
    """Mean confidence (the chosen option's probability)."""
    ece: Estimate
    """Expected calibration error."""
    brier: Estimate
    """Multi-class Brier score."""
    aurc: Estimate
    """Area under the risk-coverage curve."""
    argmax_agreement: float
    """Share of answers whose chosen option is the most probable."""
    mean_mass: float
    """Mean letter mass before renormalising."""
    clusters: int
    """Clusters the answers form."""
    cluster_unit: str
    """What a cluster is, in words."""
    design_effect: float | None
    """Variance of the clustered ECE replicates over the item-level ones (None when no answers share a cluster)."""
    bins: list[ReliabilityBin] = field(default_factory=list)
    """The reliability diagram's bins."""
    curve: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))
    """The risk-coverage curve: ``(coverage, selective risk)``."""


@dataclass(frozen=True)
class _Arrays:
    """The answers' per-answer values, computed once for every bootstrap replicate."""

    confidence: np.ndarray
    correct: np.ndarray
    brier: np.ndarray

    @classmethod
    def of(cls, answers: Sequence[CalibrationAnswer]) -> _Arrays:
        return cls(
            confidence=np.array([a.confidence for a in answers], dtype=float),
            correct=np.array([a.correct for a in answers], dtype=float),
            brier=brier_terms([a.probs for a in answers], [a.gold for a in answers]),
        )

    def statistics(self, weights: np.ndarray | None) -> np.ndarray:
        """(rows, :data:`STATISTICS`) under the weight rows (one row of ones when None)."""
        c, y = self.confidence, self.correct
        return np.column_stack(
            [
                weighted_mean(y, weights),
                weighted_mean(c, weights),
                ece(c, y, weights),
                weighted_mean(self.brier, weights),
                aurc(c, y, weights),
            ]
        )


def _percentiles(replicates: np.ndarray) -> list[tuple[float | None, float | None]]:
    out: list[tuple[float | None, float | None]] = []
    for column in replicates.T:
        finite = column[np.isfinite(column)]
        if not finite.size:
            out.append((None, None))
            continue
        out.append((float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5))))
    return out


def calibration_result(
    answers: Sequence[CalibrationAnswer], model: str, task: str | None, *, reps: int, seed: int
) -> CalibrationResult:
    """One model's calibration over ``answers`` (its answers to one task, or to all), with intervals.

    Answers are resampled ``reps`` times (seeded); where they share clusters whole clusters are too and each
    interval is the union of both (:func:`airbench_nb.scoring.resample.union`).
    """
    from airbench_nb.scoring.resample import clustering, design_effect, union, weight_rows

    n = len(answers)
    arrays = _Arrays.of(answers)
    point = arrays.statistics(None)[0]
    codes, count, unit = clustering([a.cluster for a in answers], n)

    def draw(clustered: bool) -> np.ndarray:
        rng = np.random.default_rng([seed, n, len(task or "")])
        rows = [arrays.statistics(w) for w in weight_rows(n, reps, rng, codes if clustered else None)]
        return np.concatenate(rows) if rows else np.zeros((0, len(STATISTICS)))

    units = draw(False)
    intervals = _percentiles(units)
    effect = None
    if count < n:
        clustered = draw(True)
        intervals = [union(c, u) for c, u in zip(_percentiles(clustered), intervals, strict=True)]
        effect = design_effect(clustered[:, 2], units[:, 2])
    estimates = {
        name: Estimate(float(point[k]) if np.isfinite(point[k]) else None, *intervals[k])
        for k, name in enumerate(STATISTICS)
    }
    c, y = arrays.confidence, arrays.correct
    coverage, risk = risk_coverage(c, y)
    return CalibrationResult(
        model=model,
        task=task,
        n=n,
        argmax_agreement=float(np.mean([a.argmax_agrees for a in answers])),
        mean_mass=float(np.mean([a.mass for a in answers])),
        clusters=count,
        cluster_unit=unit,
        design_effect=effect,
        bins=reliability_bins(c, y),
        curve=([float(x) for x in coverage], [float(x) for x in risk]),
        **estimates,
    )


def calibration_results(
    answers: Iterable[CalibrationAnswer], *, reps: int = DEFAULT_REPS, seed: int = 0
) -> list[CalibrationResult]:
    """Per model, a result per task (sorted) then the pooled result (``task`` None) when it has several tasks."""
    by_model: dict[str, list[CalibrationAnswer]] = {}
    for a in answers:
        by_model.setdefault(a.model, []).append(a)
    out = []
    for model, mine in by_model.items():
        tasks = sorted({a.task for a in mine})
        for task in tasks:
            out.append(calibration_result([a for a in mine if a.task == task], model, task, reps=reps, seed=seed))
        if len(tasks) > 1:
            out.append(calibration_result(mine, model, None, reps=reps, seed=seed))
    return out


# ------------------------------------------------------------------------------------------------ payload


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class CalibrationBinRow(_Payload):
    """One bin of a reliability diagram in ``analysis.json``."""

    low: float
    """Lower edge."""
    high: float
    """Upper edge."""
    n: int
    """Answers in the bin."""
    confidence: float | None
    """Their mean confidence."""
    accuracy: float | None
    """Their accuracy."""


class CalibrationRow(_Payload):
    """One model and task (``task`` None: pooled) of the ``calibration`` section."""

    task: str | None
    """The task; None for the model's tasks pooled."""
    n: int
    """Answers."""
    accuracy: float | None
    """Share correct."""
    accuracy_ci: list[float | None]
    """Its 95% interval."""
    confidence: float | None
    """Mean confidence of the chosen option."""
    confidence_ci: list[float | None]
    """Its 95% interval."""
    ece: float | None
    """Expected calibration error (10 equal-width bins, weighted by counts)."""
    ece_ci: list[float | None]
    """Its 95% interval."""
    brier: float | None
    """Multi-class Brier score."""
    brier_ci: list[float | None]
    """Its 95% interval."""
    aurc: float | None
    """Area under the risk-coverage curve."""
    aurc_ci: list[float | None]
    """Its 95% interval."""
    argmax_agreement: float
    """Share of answers whose chosen option is the most probable."""
    mean_mass: float
    """Mean letter mass before renormalising."""
    clusters: int
    """Clusters resampled."""
    cluster_unit: str
    """What a cluster is."""
    design_effect: float | None
    """Clustered over item-level variance of the ECE (None: no shared clusters)."""
    bins: list[CalibrationBinRow]
    """The reliability diagram."""


class CalibrationCounts(_Payload):
    """Per model, its single-choice answers used and left out."""

    used: int
    """Answers in the table."""
    without_probs: int
    """Answered without option probabilities."""
    unread: int
    """No option read in the text (left out)."""
    reasoning_first: int
    """Asked under a reasoning-first prompt set (left out)."""
    failed: int
    """No answer."""


class CalibrationPayload(_Payload):
    """``analysis.json["calibration"]``."""

    models: dict[str, list[CalibrationRow]]
    """Per model with option probabilities, a row per task then the pooled row."""
    counts: dict[str, CalibrationCounts]
    """Per model, answers used and left out."""
    proxy: list[ProxyRow]
    """The tiered benchmark's text-only proxy (confident/hedged wording), per system: not a probability."""
    proxy_label: str
    """How the proxy must be read."""
    confidence: str
    """What the confidence is."""
    bins: int
    """Equal-width bins of the ECE."""
    reps: int
    """Bootstrap replicates."""
    seed: int
    """Bootstrap seed."""


CONFIDENCE = (
    "the renormalised probability of the option the rule extractor read in the answer, at the answer's first "
    "token (option letters' probabilities: hf: logits, openai: top_logprobs)"
)
"""What the ``confidence`` of the section is."""


def _ci(e: Estimate) -> list[float | None]:
    return [e.low, e.high]


def calibration_payload(
    results: Sequence[CalibrationResult],
    counts: Mapping[str, AnswerCounts],
    proxy: Sequence[ProxyRow],
    *,
    reps: int,
    seed: int,
) -> CalibrationPayload:
    """The section's data."""
    from airbench_nb.analysis.calibration_proxy import PROXY_LABEL

    models: dict[str, list[CalibrationRow]] = {}
    for r in results:
        models.setdefault(r.model, []).append(
            CalibrationRow(
                task=r.task,
                n=r.n,
                accuracy=r.accuracy.value,
                accuracy_ci=_ci(r.accuracy),
                confidence=r.confidence.value,
                confidence_ci=_ci(r.confidence),
                ece=r.ece.value,
                ece_ci=_ci(r.ece),
                brier=r.brier.value,
                brier_ci=_ci(r.brier),
                aurc=r.aurc.value,
                aurc_ci=_ci(r.aurc),
                argmax_agreement=r.argmax_agreement,
                mean_mass=r.mean_mass,
                clusters=r.clusters,
                cluster_unit=r.cluster_unit,
                design_effect=r.design_effect,
                bins=[CalibrationBinRow(**vars(b)) for b in r.bins],
            )
        )
    return CalibrationPayload(
        models=models,
        counts={m: CalibrationCounts(**vars(c)) for m, c in counts.items()},
        proxy=list(proxy),
        proxy_label=PROXY_LABEL,
        confidence=CONFIDENCE,
        bins=BINS,
        reps=reps,
        seed=seed,
    )


FRAME_COLUMNS = (
    "model",
    "task",
    "n",
    "accuracy",
    "confidence",
    "ece",
    "ece_low",
    "ece_high",
    "brier",
    "aurc",
    "argmax_agreement",
    "mean_mass",
    "clusters",
)
"""Columns of :func:`calibration_frame`."""


def calibration_frame(results: Sequence[CalibrationResult]) -> pd.DataFrame:
    """One row per result (``task`` ``(all)`` for a pooled one), values as fractions."""
    rows = [
        {
            "model": r.model,
            "task": r.task if r.task is not None else "(all)",
            "n": r.n,
            "accuracy": r.accuracy.value,
            "confidence": r.confidence.value,
            "ece": r.ece.value,
            "ece_low": r.ece.low,
            "ece_high": r.ece.high,
            "brier": r.brier.value,
            "aurc": r.aurc.value,
            "argmax_agreement": r.argmax_agreement,
            "mean_mass": r.mean_mass,
            "clusters": r.clusters,
        }
        for r in results
    ]
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))


def headline(results: Sequence[CalibrationResult]) -> list[CalibrationResult]:
    """Per model, its pooled result when it has one, else its only task's."""
    out: dict[str, CalibrationResult] = {}
    for r in results:
        if r.task is None or r.model not in out:
            out[r.model] = r
    return list(out.values())


NO_PROBS_REASON = (
    "no model gave option probabilities (hf: models do for single-choice items; openai: models with "
    "--model-option logprobs=true) and the run has no tiered tier A answers for the confident/hedged proxy"
)
"""Why the section is empty (and so left out of ``analysis.json``)."""


def _run_answers(analysis: RunAnalysis) -> tuple[dict[str, Any], dict[str, dict[str, Response]]]:
    """A run's items and latest responses: the analysis's own, and the tiered closed-set (tier A) ones it keeps apart.

    A tiered manifest that cannot be read is logged and left out: the other answers are still analysed.
    """
    from airbench_nb.manifests import read_manifest

    items: dict[str, Any] = dict(analysis.run.items)
    responses = {model: dict(mine) for model, mine in analysis.run.responses.items()}
    path = analysis.folder.manifest("sound_source")
    if not path.is_file():
        return items, responses
    try:
        tiered = {i.uid: i for i in read_manifest(path) if i.option_letters() is not None}
        latest = analysis.records.lenient().latest_by_model(["sound_source"])
    except (OSError, ValueError) as exc:
        logger.warning("calibration: %s left out: %s", path, exc)
        return items, responses
    items.update(tiered)
    for model, mine in latest.items():
        responses.setdefault(model, {}).update(mine.by_uid)
    return items, responses


def calibration_section(analysis: RunAnalysis) -> Section:
    """The ``calibration`` section of a run: results per model and task, the tiered proxy, the figures.

    Empty with the reason (and so left out of ``analysis.json``) when no model gave option probabilities and the run
    has no tiered answers.
    """
    from airbench_nb import plots_calibration

    items, responses = _run_answers(analysis)
    answers, counts = calibration_answers(items, responses)
    results = calibration_results(answers, reps=analysis.reps, seed=analysis.seed)
    proxy = tiered_proxy(analysis, reps=analysis.reps, seed=analysis.seed)
    if not results and not proxy:
        return Section("calibration", {}, reason=NO_PROBS_REASON)
    payload = calibration_payload(
        results, {m: c for m, c in counts.items() if c.used}, proxy, reps=analysis.reps, seed=analysis.seed
    )
    shown = headline(results)
    extra = {}
    curves = plots_calibration.risk_coverage_curves(shown)
    if curves is not None:
        extra[plots_calibration.FIGURE_NAMES["risk_coverage"]] = curves
    frames = {}
    if proxy:
        frames["Text-only proxy (confident/hedged wording), not a probability: tiered tier A"] = proxy_frame(proxy)
    return Section(
        "calibration",
        payload.model_dump(mode="json"),
        frame=calibration_frame(results),
        figure=plots_calibration.reliability_diagrams(shown),
        figure_key=plots_calibration.FIGURE_NAMES["calibration"],
        extra_figures=extra,
        extra_frames=frames,
    )


register_analysis_section("calibration", calibration_section, CalibrationPayload, optional=True)

__all__ = [
    "CONFIDENCE",
    "REASONING_FIRST_PROMPT_SETS",
    "AnswerCounts",
    "CalibrationAnswer",
    "CalibrationPayload",
    "CalibrationResult",
    "CalibrationRow",
    "Estimate",
    "calibration_answers",
    "calibration_frame",
    "calibration_payload",
    "calibration_result",
    "calibration_results",
    "calibration_section",
    "headline",
]
