"""Judge panels and repeats: the variance of judged Chat scores split into answers, judges, repeats and the rest.

A run judged by several judges (``airbench-nb judge --judge J`` once per judge, or ``run`` with a list of judges) and
/ or several times per judge (``--judge-repeats R``, :attr:`~airbench_nb.records.Verdict.repeat`) gives, per model,
scores ``y[i, j, r]``: answer ``i`` (one item, or one turn of a multi-turn item), judge ``j``, repeat ``r``. Each
``y`` is AIR-Bench's Chat score of the answer: the judge's 1-10 score of the model's answer, averaged over the two
orders (read as the run's protocol reads it: ``strict`` the fenced reading, ``official`` the verbatim reply).

**The model.** ``y[i, j, r] = mu + a[i] + b[j] + ab[i, j] + e[i, j, r]``: ``a`` the answers' own quality
(variance ``item``), ``b`` each judge's leniency (``judge``), ``ab`` how a judge rates this answer beyond its
leniency (``item_x_judge``: the judges' disagreement about answers), ``e`` what changes when the same judge is asked
again (``repeat``).

**The estimate** is the balanced two-way crossed ANOVA with replication (method of moments; Searle, Casella &
McCulloch 1992, ch. 4), on the answers every judge scored ``R`` times (``I`` answers, ``J`` judges)::

    MS_item  = J R sum_i (ybar_i.. - ybar)^2 / (I - 1)            E = s2_rep + R s2_ixj + J R s2_item
    MS_judge = I R sum_j (ybar_.j. - ybar)^2 / (J - 1)            E = s2_rep + R s2_ixj + I R s2_judge
    MS_ixj   = R sum_ij (ybar_ij. - ybar_i.. - ybar_.j. + ybar)^2 / ((I - 1)(J - 1))   E = s2_rep + R s2_ixj
    MS_rep   = sum_ijr (y_ijr - ybar_ij.)^2 / (I J (R - 1))       E = s2_rep

    s2_rep = MS_rep; s2_ixj = (MS_ixj - MS_rep) / R; s2_item = (MS_item - MS_ixj) / (J R);
    s2_judge = (MS_judge - MS_ixj) / (I R)

A negative estimate (sampling noise around a component near 0) is set to 0 and said so (``truncated``). With one
judgement per judge (``R = 1``) the repeat noise cannot be told from ``item_x_judge``: the two are reported together
as ``item_x_judge`` (``repeat`` None). With one judge (``J = 1``), ``judge`` and ``item_x_judge`` do not exist (the
judge's view of each answer is in ``item``). ``judge`` is the spread of *these* judges' leniencies (a fixed panel:
the variance of their offsets with ``J - 1`` in the denominator), not a statement about judges at large: with 3 or 4
judges nothing more can be said.

**Deterministic judges** (the proxy, ``hf:``: :attr:`~airbench_nb.judge.base.BaseJudge.deterministic`) are judged
once whatever ``R``; asked again they would answer the same, so their one judgement stands for each of the ``R``
repeats (their repeat variance is 0, shown as ``deterministic``). A judge that is not deterministic but was asked
fewer times than the others limits ``R`` to its count (the extra repeats of the others are left out, counted).

**Intervals**: 95% percentile bootstrap over answers, whole clusters drawn together
(:func:`~airbench_nb.scoring.resample.weight_rows`: the questions about one recording, the turns of one
conversation), each replicate's estimates truncated at 0 as the point estimate is.

Besides the breakdown, per model: each judge's mean score, the panel's **mean** (per answer the mean over judges,
then over answers: the mean of the judges' means) and **median** (per answer the median over judges, then the mean
over answers), with intervals from the same bootstrap; and the answers on which the judges disagree most (range of
the judges' scores, each averaged over repeats), for annotation (notebook 06) or a second look.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from airbench_nb.analysis.registry import register_analysis_section
from airbench_nb.analysis.section import Section
from airbench_nb.analysis_report import Interval, Number, Payload
from airbench_nb.records import Response, Verdict, cluster_of
from airbench_nb.scoring.resample import clustering, percentile_interval, weight_rows
from airbench_nb.scoring.resample import key_rng as _key_rng

if TYPE_CHECKING:
    from airbench_nb.analysis.report import RunAnalysis

logger = logging.getLogger(__name__)

COMPONENTS: tuple[str, ...] = ("item", "judge", "item_x_judge", "repeat")
"""The variance components, in the order reported (see the module docstring)."""
TOP_DISAGREEMENTS = 20
"""Answers listed as those the judges disagree on most, per run."""
DEFAULT_REPS = 1000
"""Bootstrap replicates when none are given."""
METHOD = (
    "balanced two-way crossed ANOVA with replication (method of moments), negative estimates set to 0; 95% percentile "
    "bootstrap over answers, whole clusters drawn together"
)
"""How the breakdown is estimated, in words (written into ``analysis.json``)."""
CHAT_ORDERS: tuple[str, str] = ("reference_first", "hypothesis_first")
"""The two orders a Chat answer is judged in (:data:`airbench_nb.judge.base.CHAT_ORDERS`)."""


@dataclass(frozen=True)
class PanelScores:
    """One model's judged Chat scores as a complete array (answers every judge scored ``R`` times)."""

    model: str
    """The model whose answers were judged."""
    judges: list[str]
    """The judges (specs), in the order of the array's second axis."""
    scores: np.ndarray
    """``y[answer, judge, repeat]``: the Chat score (mean of the two orders), shape ``(I, J, R)``."""
    units: list[tuple[str, int | None]]
    """``(uid, turn)`` of each answer (turn None for a one-turn item)."""
    tasks: list[str]
    """Each answer's task."""
    clusters: list[str]
    """Each answer's cluster key (:func:`~airbench_nb.records.cluster_of`)."""
    deterministic: list[str]
    """The judges whose one judgement stands for each repeat (deterministic judges)."""
    dropped: int = 0
    """Answers left out because a judge or a repeat had no score for them (a failed call, an unparsed reply)."""
    extra_repeats: int = 0
    """Judgements left out because their judge was asked more often than the panel's ``R``."""


@dataclass(frozen=True)
class Component:
    """One variance component with its interval."""

    name: str
    """``item``, ``judge``, ``item_x_judge`` or ``repeat``."""
    variance: float | None
    """The estimate (score points squared); None when the design cannot estimate it."""
    low: float | None
    """Lower end of the 95% bootstrap interval."""
    high: float | None
    """Upper end of the 95% bootstrap interval."""
    truncated: bool = False
    """Whether the raw estimate was negative and set to 0."""
    note: str = ""
    """What the component holds, when not the plain reading (pooled with another, deterministic judges)."""


def _moments(stats: tuple[np.ndarray, np.ndarray, np.ndarray], weights: np.ndarray, judges: int, repeats: int) -> Any:
    """The raw (untruncated) components for each row of ``weights`` (answers' counts), shape ``(rows, 4)``.

    Args:
        stats: Per answer: its mean ``ybar_i..``, its judges' deviations ``ybar_ij. - ybar_i..`` (I, J) and its
            within-cell sum of squares ``sum_jr (y_ijr - ybar_ij.)^2``.
        weights: ``(rows, I)`` counts of each answer (ones for the estimate, bootstrap draws for the replicates).
        judges: ``J``.
        repeats: ``R``.
    """
    mean_i, dev, within = stats
    w = np.atleast_2d(weights).astype(float)
    n = w.sum(axis=1)
    grand = (w @ mean_i) / n
    ss_item = judges * repeats * (w @ mean_i**2 - n * grand**2)
    col = (w @ dev) / n[:, None]  # ybar_.j. - ybar
    ss_judge = n * repeats * (col**2).sum(axis=1)
    ss_ixj = repeats * (w @ (dev**2).sum(axis=1) - n * (col**2).sum(axis=1))
    ss_rep = w @ within
    with np.errstate(invalid="ignore", divide="ignore"):
        ms_item = ss_item / (n - 1)
        ms_judge = ss_judge / (judges - 1) if judges > 1 else np.full_like(n, np.nan)
        ms_ixj = ss_ixj / ((n - 1) * (judges - 1)) if judges > 1 else np.full_like(n, np.nan)
        ms_rep = ss_rep / (n * judges * (repeats - 1)) if repeats > 1 else np.full_like(n, np.nan)
    out = np.full((w.shape[0], 4), np.nan)
    if judges > 1:
        out[:, 0] = (ms_item - ms_ixj) / (judges * repeats)
        out[:, 1] = (ms_judge - ms_ixj) / (n * repeats)
        out[:, 2] = (ms_ixj - ms_rep) / repeats if repeats > 1 else ms_ixj
        out[:, 3] = ms_rep if repeats > 1 else np.nan
    elif repeats > 1:
        out[:, 0] = (ms_item - ms_rep) / repeats
        out[:, 3] = ms_rep
    return out


def _stats(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cell = scores.mean(axis=2)
    mean_i = cell.mean(axis=1)
    return mean_i, cell - mean_i[:, None], ((scores - cell[:, :, None]) ** 2).sum(axis=(1, 2))


def decompose(
    scores: np.ndarray,
    clusters: Sequence[str] | None = None,
    *,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    key: str = "judge_panel",
    deterministic: Sequence[int] = (),
) -> list[Component]:
    """The variance components of ``scores[answer, judge, repeat]`` with bootstrap intervals (module docstring).

    Args:
        scores: A complete ``(I, J, R)`` array (no NaN), ``I >= 2`` and ``J >= 2`` or ``R >= 2``.
        clusters: Each answer's cluster key (None: every answer its own).
        reps: Bootstrap replicates (0: no intervals).
        seed: Bootstrap seed.
        key: What is resampled (seeds the generator with ``seed``).
        deterministic: Indices of deterministic judges (named in the ``repeat`` component's note).

    Returns:
        One :class:`Component` per name of :data:`COMPONENTS`.

    Raises:
        ValueError: For an array that is not complete, or too small to split.
    """
    y = np.asarray(scores, dtype=float)
    if y.ndim != 3 or not np.all(np.isfinite(y)):
        raise ValueError(f"scores must be a complete (answers, judges, repeats) array, got shape {y.shape} with gaps")
    units, judges, repeats = y.shape
    if units < 2 or (judges < 2 and repeats < 2):
        raise ValueError(f"nothing to split: {units} answers, {judges} judges, {repeats} repeats")
    stats = _stats(y)
    point = _moments(stats, np.ones((1, units)), judges, repeats)[0]
    draws = np.empty((0, 4))
    if reps:
        codes, _, _ = clustering(list(clusters) if clusters is not None else None, units)
        rng = _key_rng(seed, key)
        draws = np.concatenate([_moments(stats, w, judges, repeats) for w in weight_rows(units, reps, rng, codes)])
    notes = {
        "judge": "spread of these judges' leniencies (a fixed panel of J judges, J - 1 in the denominator)",
        "item_x_judge": "" if repeats > 1 else "item x judge and repeat noise together (one judgement per judge)",
        "repeat": "" if not deterministic else f"{len(deterministic)} deterministic judge(s) counted with 0",
    }
    if judges < 2:
        notes["judge"] = notes["item_x_judge"] = "one judge: not defined"
    out = []
    for index, name in enumerate(COMPONENTS):
        raw = point[index]
        if math.isnan(raw):
            out.append(Component(name, None, None, None, note=notes.get(name, "") or "not estimable here"))
            continue
        low, high = percentile_interval(np.maximum(draws[:, index], 0.0)) if draws.size else (None, None)
        out.append(Component(name, max(float(raw), 0.0), low, high, truncated=raw < 0, note=notes.get(name, "")))
    return out


@dataclass(frozen=True)
class ScoreInterval:
    """A mean score with its bootstrap interval."""

    value: float
    """The score (1-10)."""
    low: float | None
    """Lower end of the 95% bootstrap interval."""
    high: float | None
    """Upper end of the 95% bootstrap interval."""


def panel_means(
    panel: PanelScores, *, reps: int = DEFAULT_REPS, seed: int = 0
) -> tuple[dict[str, ScoreInterval], dict[str, ScoreInterval]]:
    """Each judge's mean score and the panel's mean and median (module docstring), with cluster-bootstrap intervals.

    Returns:
        ``({judge: its mean}, {"mean": ..., "median": ...})``; one bootstrap draw serves them all.
    """
    per_judge = panel.scores.mean(axis=2)  # (I, J): each judge's score of the answer, averaged over repeats
    columns = {j: per_judge[:, k] for k, j in enumerate(panel.judges)}
    columns["mean"] = per_judge.mean(axis=1)
    columns["median"] = np.median(per_judge, axis=1)
    matrix = np.column_stack(list(columns.values()))
    units = matrix.shape[0]
    draws = np.empty((0, matrix.shape[1]))
    if reps:
        codes, _, _ = clustering(panel.clusters, units)
        rng = _key_rng(seed, f"judge_panel:{panel.model}:scores")
        draws = np.concatenate([(w @ matrix) / w.sum(axis=1)[:, None] for w in weight_rows(units, reps, rng, codes)])
    out: dict[str, ScoreInterval] = {}
    for index, name in enumerate(columns):
        low, high = percentile_interval(draws[:, index]) if draws.size else (None, None)
        out[name] = ScoreInterval(float(matrix[:, index].mean()), low, high)
    return {j: out[j] for j in panel.judges}, {"mean": out["mean"], "median": out["median"]}


@dataclass(frozen=True)
class Disagreement:
    """An answer on which the judges disagree."""

    model: str
    """The model that gave the answer."""
    uid: str
    """The item."""
    turn: int | None
    """The turn (multi-turn items); None for a one-turn item."""
    task: str
    """The item's task."""
    spread: float
    """Highest minus lowest judge's score (each averaged over repeats and orders)."""
    scores: dict[str, float]
    """Each judge's score of the answer."""


def disagreements(panel: PanelScores, top: int = TOP_DISAGREEMENTS) -> list[Disagreement]:
    """The ``top`` answers of ``panel`` whose judges' scores are furthest apart (none for a single judge)."""
    if len(panel.judges) < 2:
        return []
    per_judge = panel.scores.mean(axis=2)
    spread = per_judge.max(axis=1) - per_judge.min(axis=1)
    order = sorted(range(len(spread)), key=lambda i: (-spread[i], panel.units[i][0], panel.units[i][1] or 0))
    return [
        Disagreement(
            panel.model,
            panel.units[i][0],
            panel.units[i][1],
            panel.tasks[i],
            round(float(spread[i]), 6),
            {j: round(float(per_judge[i, k]), 6) for k, j in enumerate(panel.judges)},
        )
        for i in order[:top]
        if spread[i] > 0
    ]


ChatReader = Callable[[Response | None, Verdict | None, int | None], tuple[float | None, float | None, str]]
"""``(response, verdict, turn) -> (model score, reference score, reason)``: :func:`~airbench_nb.scoring.strict_chat`
or :func:`~airbench_nb.scoring.official_chat`."""


def panel_scores(
    model: str,
    items: Mapping[str, Any],
    responses: Mapping[str, Response],
    verdicts: Sequence[Verdict],
    read: ChatReader,
    deterministic: Sequence[str] = (),
) -> PanelScores | None:
    """The complete ``(answers, judges, repeats)`` array of one model's Chat verdicts, repeats included.

    Args:
        model: The model.
        items: Items by uid (Chat items are read; others ignored).
        responses: The model's latest response per uid.
        verdicts: The model's verdicts that count, repeats included
            (:meth:`~airbench_nb.analysis.data.RunData.repeated_verdicts`).
        read: How a verdict is read (the protocol's :data:`ChatReader`).
        deterministic: Judge specs that are deterministic (their one judgement stands for every repeat).

    Returns:
        None when there is not one answer every judge scored (or fewer than two judges and two repeats).
    """
    cells: dict[tuple[str, int | None], dict[str, dict[int, dict[str, float]]]] = {}
    for verdict in verdicts:
        item = items.get(verdict.uid)
        if item is None or tuple(item.JUDGE_ORDERS) != tuple(CHAT_ORDERS) or verdict.order not in CHAT_ORDERS:
            continue
        score, _, _ = read(responses.get(verdict.uid), verdict, verdict.turn)
        if score is None:
            continue
        by_judge = cells.setdefault((verdict.uid, verdict.turn), {}).setdefault(verdict.judge, {})
        by_judge.setdefault(verdict.repeat or 0, {})[verdict.order] = float(score)
    judges = sorted({j for by_judge in cells.values() for j in by_judge})
    if not judges:
        return None
    counts: Counter[str] = Counter()
    for by_judge in cells.values():
        for judge, by_repeat in by_judge.items():
            counts[judge] = max(counts[judge], len(by_repeat))
    varying = [counts[j] for j in judges if j not in deterministic]
    repeats = min(varying) if varying else 1
    if len(judges) < 2 and repeats < 2:
        return None
    rows, units, tasks, clusters = [], [], [], []
    dropped = extra = 0
    for (uid, turn), by_judge in cells.items():
        row = []
        for judge in judges:
            by_repeat = by_judge.get(judge, {})
            values = [
                (orders["reference_first"] + orders["hypothesis_first"]) / 2.0
                for _, orders in sorted(by_repeat.items())
                if len(orders) == 2
            ]
            if judge in deterministic and values:
                values = values[:1] * repeats
            extra += max(0, len(values) - repeats)
            row.append(values[:repeats])
        if any(len(values) < repeats for values in row):
            dropped += 1
            continue
        rows.append(row)
        units.append((uid, turn))
        tasks.append(items[uid].task)
        clusters.append(cluster_of(items[uid]))
    if len(rows) < 2:
        return None
    return PanelScores(
        model,
        judges,
        np.asarray(rows, dtype=float),
        units,
        tasks,
        clusters,
        [j for j in judges if j in deterministic],
        dropped,
        extra,
    )


# --------------------------------------------------------------------------------------------------- the section


class ComponentRow(Payload):
    """``judge_panel.models[model].components[i]``: one variance component."""

    name: str
    """``item``, ``judge``, ``item_x_judge`` or ``repeat`` (see :mod:`airbench_nb.analysis.judge_panel`)."""
    variance: Number | None
    """The estimate in score points squared (1-10 scale); None when the design cannot estimate it."""
    share: Number | None
    """Its share of the components' sum; None when not estimated."""
    ci: Interval
    """95% cluster-bootstrap interval."""
    truncated: bool
    """Whether the raw estimate was negative and set to 0."""
    note: str
    """What it holds when not the plain reading."""


class ScoreRowCI(Payload):
    """A mean Chat score (1-10) with its interval."""

    value: Number
    """The score."""
    ci: Interval
    """95% cluster-bootstrap interval."""


class DisagreementRow(Payload):
    """An answer on which the judges disagree (:class:`Disagreement`)."""

    model: str
    """The model that gave the answer."""
    uid: str
    """The item."""
    turn: int | None
    """The turn (multi-turn items); None for a one-turn item."""
    task: str
    """The item's task."""
    spread: Number
    """Highest minus lowest judge's score."""
    scores: dict[str, Number]
    """Each judge's score of the answer (averaged over orders and repeats)."""


class ModelPanel(Payload):
    """One model's panel: the breakdown, each judge's score, the panel's mean and median."""

    judges: list[str]
    """The judges of the panel."""
    repeats: int
    """Judgements per judge and answer used (``R``)."""
    deterministic: list[str]
    """Judges whose one judgement stands for each repeat."""
    answers: int
    """Answers every judge scored ``R`` times (the ``I`` of the breakdown)."""
    clusters: int
    """Clusters the bootstrap drew."""
    dropped: int
    """Answers left out (a judge or a repeat without a score)."""
    extra_repeats: int
    """Judgements left out (their judge was asked more often than ``R``)."""
    components: list[ComponentRow]
    """The variance components."""
    judge_scores: dict[str, ScoreRowCI]
    """Each judge's mean score of the model."""
    panel_mean: ScoreRowCI
    """The mean over judges, then answers."""
    panel_median: ScoreRowCI
    """The median over judges per answer, then the mean over answers."""


class JudgePanelPayload(Payload):
    """The ``judge_panel`` section of ``analysis.json``."""

    models: dict[str, ModelPanel]
    """Per model, its panel."""
    disagreements: list[DisagreementRow]
    """The answers on which the judges disagree most, over every model (largest spread first)."""
    method: str
    """How the breakdown was estimated."""
    protocol: str
    """How verdicts were read (``strict``: the fenced reading; ``official``: the verbatim reply)."""
    reps: int
    """Bootstrap replicates."""
    seed: int
    """Bootstrap seed."""


def _interval(low: float | None, high: float | None) -> Interval:
    return None if low is None and high is None else [low, high]


def model_panel(panel: PanelScores, *, reps: int, seed: int) -> ModelPanel:
    """The section's entry of one model."""
    deterministic = [panel.judges.index(j) for j in panel.deterministic]
    components = decompose(
        panel.scores,
        panel.clusters,
        reps=reps,
        seed=seed,
        key=f"judge_panel:{panel.model}",
        deterministic=deterministic,
    )
    total = sum(c.variance for c in components if c.variance is not None)
    judge_scores, summary = panel_means(panel, reps=reps, seed=seed)
    _, clusters, _ = clustering(panel.clusters, len(panel.units))
    return ModelPanel(
        judges=panel.judges,
        repeats=int(panel.scores.shape[2]),
        deterministic=panel.deterministic,
        answers=len(panel.units),
        clusters=clusters,
        dropped=panel.dropped,
        extra_repeats=panel.extra_repeats,
        components=[
            ComponentRow(
                name=c.name,
                variance=None if c.variance is None else round(c.variance, 6),
                share=None if c.variance is None or total <= 0 else round(c.variance / total, 4),
                ci=_interval(c.low, c.high),
                truncated=c.truncated,
                note=c.note,
            )
            for c in components
        ],
        judge_scores={j: ScoreRowCI(value=s.value, ci=_interval(s.low, s.high)) for j, s in judge_scores.items()},
        panel_mean=ScoreRowCI(value=summary["mean"].value, ci=_interval(summary["mean"].low, summary["mean"].high)),
        panel_median=ScoreRowCI(
            value=summary["median"].value, ci=_interval(summary["median"].low, summary["median"].high)
        ),
    )


def components_frame(payload: JudgePanelPayload) -> pd.DataFrame:
    """One row per (model, component): variance, share, interval, truncated, note."""
    rows = [
        {
            "model": model,
            "component": c.name,
            "variance": c.variance,
            "share": c.share,
            "ci_low": c.ci[0] if c.ci else None,
            "ci_high": c.ci[1] if c.ci else None,
            "truncated": c.truncated,
            "note": c.note,
        }
        for model, entry in payload.models.items()
        for c in entry.components
    ]
    return pd.DataFrame(rows)


def disagreements_frame(payload: JudgePanelPayload) -> pd.DataFrame:
    """One row per answer of :attr:`JudgePanelPayload.disagreements` (a column per judge)."""
    return pd.DataFrame(
        [{k: v for k, v in row.model_dump().items() if k != "scores"} | row.scores for row in payload.disagreements]
    )


def disagreement_pairs(run_dir: str | Path) -> list[str]:
    """The answers the judges of a run disagree on most, as annotation pair ids (``model|uid``), largest spread first.

    Read from the run's ``analysis.json`` (``judge_panel.disagreements``); multi-turn answers are left out (an
    annotation pair shows one answer). For ``airbench-nb sample-annotation --disagreements``.

    Raises:
        FileNotFoundError: When the run has no readable ``analysis.json`` or it holds no judge panel (analyse the run
            first, with two judges or judge repeats).
    """
    from airbench_nb.run_folder import RunFolder

    folder = RunFolder(run_dir)
    report = folder.read_analysis()
    try:
        payload = report.extra_section("judge_panel", JudgePanelPayload) if report is not None else None
    except KeyError:
        payload = None
    if payload is None:
        raise FileNotFoundError(
            f"{folder.analysis_json}: no judge panel (analyse the run after judging its Chat answers with two judges "
            "or with --judge-repeats)"
        )
    return list(dict.fromkeys(f"{d.model}|{d.uid}" for d in payload.disagreements if d.turn is None))


def deterministic_judges(specs: Sequence[str]) -> list[str]:
    """The specs among ``specs`` whose registered judge is deterministic (:attr:`BaseJudge.deterministic`)."""
    from airbench_nb.judge.registry import registered_judges

    classes = registered_judges()
    return [s for s in specs if getattr(classes.get(s.partition(":")[0]), "deterministic", False)]


def judge_panel_section(analysis: RunAnalysis) -> Section:
    """The ``judge_panel`` section of a run: per model its panel (left out when no model has two judges or repeats).

    The Chat judges are the run's, or those ``analyze --judge`` chose.
    """
    from airbench_nb.scoring import official_chat, strict_chat

    run = analysis.run
    read = official_chat if analysis.protocol == "official" else strict_chat
    reps = analysis.reps
    models: dict[str, ModelPanel] = {}
    found: list[Disagreement] = []
    chosen = set(analysis.judges) if getattr(analysis, "judges_given", False) else None  # analyze --judge J ...
    for model in run.models:
        verdicts = [v for v in run.repeated_verdicts(model) if chosen is None or v.judge in chosen]
        deterministic = deterministic_judges(sorted({v.judge for v in verdicts}))
        panel = panel_scores(model, run.items, run.responses.get(model, {}), verdicts, read, deterministic)
        if panel is None:
            continue
        models[model] = model_panel(panel, reps=reps, seed=analysis.seed)
        found += disagreements(panel)
    if not models:
        return Section(
            "judge_panel",
            {},
            reason="no model's Chat answers were judged by two judges or twice by one (airbench-nb judge with "
            "another --judge, or --judge-repeats 3)",
        )
    found.sort(key=lambda d: (-d.spread, d.model, d.uid, d.turn or 0))
    payload = JudgePanelPayload(
        models=models,
        disagreements=[
            DisagreementRow(model=d.model, uid=d.uid, turn=d.turn, task=d.task, spread=d.spread, scores=d.scores)
            for d in found[:TOP_DISAGREEMENTS]
        ],
        method=METHOD,
        protocol=analysis.protocol,
        reps=reps,
        seed=analysis.seed,
    )
    return Section(
        "judge_panel",
        payload.model_dump(mode="json"),
        frame=components_frame(payload),
        extra_frames={"Answers the judges disagree on most": disagreements_frame(payload)},
    )


register_analysis_section("judge_panel", judge_panel_section, JudgePanelPayload, optional=True)
