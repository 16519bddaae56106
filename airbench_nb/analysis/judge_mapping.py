"""A substitute Chat judge's scores mapped onto a reference judge's scale, fitted where both judged the same answers.

AIR-Bench's Chat judge (``gpt-4-0125-preview``) is retired; a newer or an open judge scores the same answers on its own
scale (more lenient, compressed, ...). Given both judges' verdicts on a shared set of answers (an old and a new judge
on a calibration run; or any reference judge and a substitute), the kit fits a monotone mapping from the substitute's
score to the reference's and applies it to the substitute's scores elsewhere:

- **isotonic** (:class:`sklearn.isotonic.IsotonicRegression`, increasing, scores outside the fitted range clipped to
  its ends): any monotone relation, no shape assumed; a step function between the fitted points, interpolated
  linearly;
- **linear** (least squares, :func:`scipy.stats.linregress`): ``reference = intercept + slope * substitute``; exact
  when the relation is linear, and the readable summary (a slope below 1: the substitute spreads scores wider).

A unit is an answer (one item, or one turn of a multi-turn item, of one model): the judge's Chat score averaged over
the two orders, first judgements only (:func:`~airbench_nb.run_records.current_verdicts`), read as the run's protocol
reads it. Only answers both judges scored in both orders are paired.

**Bands**: 95% percentile bootstrap over the shared answers, whole clusters drawn together
(:func:`~airbench_nb.scoring.resample.weight_rows`; the clusters of :func:`~airbench_nb.records.cluster_of`): each
replicate refits both mappings with the draw's counts as sample weights and evaluates them on a grid of substitute
scores (1 to 10 by 0.25) and on every mapped score, so a mapped score's interval is the mapping's uncertainty (the
answer's own judgement is taken as given). A mapped model score (the mean of its mapped answers) gets its interval from
the same replicates.

Every mapped score is flagged ``mapped=True`` and names both judges: it is the substitute's judgement expressed on the
reference's scale, never the reference judge's own (and, with any judge but AIR-Bench's as reference, still not
comparable with the published table: :mod:`airbench_nb.scoring.provenance`).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from airbench_nb.analysis.judge_panel import ChatReader
from airbench_nb.analysis_report import Interval, Number, Payload
from airbench_nb.records import Response, Verdict, cluster_of
from airbench_nb.scoring.resample import clustering, percentile_interval, weight_rows
from airbench_nb.scoring.resample import key_rng as _key_rng

logger = logging.getLogger(__name__)

Method = Literal["isotonic", "linear"]
"""How a mapping is fitted."""
METHODS: tuple[Method, Method] = ("isotonic", "linear")
"""Both, in the order reported."""
GRID = np.round(np.arange(1.0, 10.0 + 1e-9, 0.25), 2)
"""Substitute scores the mappings and their bands are tabulated at."""
DEFAULT_REPS = 1000
"""Bootstrap replicates when none are given."""
MIN_SHARED = 10
"""Fewest shared answers a mapping is fitted on."""
CHAT_ORDERS: tuple[str, str] = ("reference_first", "hypothesis_first")
"""The two orders a Chat answer is judged in."""

Unit = tuple[str, str, int | None]
"""An answer: ``(model, uid, turn)``."""


class MappingError(ValueError):
    """Two judges that cannot be mapped (too few shared answers, a judge with no Chat verdicts)."""


@dataclass(frozen=True)
class JudgeScores:
    """One judge's Chat score per answer (mean of both orders, first judgements)."""

    judge: str
    """The judge's spec."""
    scores: dict[Unit, float]
    """Score per answer."""
    clusters: dict[Unit, str]
    """Each answer's cluster key."""


def judge_scores(
    judge: str,
    items: Mapping[str, Any],
    responses: Mapping[str, Mapping[str, Response]],
    verdicts: Mapping[str, Sequence[Verdict]],
    read: ChatReader,
) -> JudgeScores:
    """One judge's Chat score of every answer it scored in both orders.

    Args:
        judge: The judge's spec.
        items: Items by uid (Chat items are read).
        responses: Per model, the latest response per uid.
        verdicts: Per model, the verdicts that count (first judgements: repeats are not read).
        read: How a verdict is read (:func:`~airbench_nb.scoring.strict_chat` or ``official_chat``).
    """
    orders: dict[Unit, dict[str, float]] = {}
    for model, mine in verdicts.items():
        for verdict in mine:
            item = items.get(verdict.uid)
            if verdict.judge != judge or verdict.repeat is not None or verdict.order not in CHAT_ORDERS:
                continue
            if item is None or tuple(item.JUDGE_ORDERS) != tuple(CHAT_ORDERS):
                continue
            score, _, _ = read(responses.get(model, {}).get(verdict.uid), verdict, verdict.turn)
            if score is not None:
                orders.setdefault((model, verdict.uid, verdict.turn), {})[verdict.order] = float(score)
    scores = {unit: sum(by.values()) / 2.0 for unit, by in orders.items() if len(by) == 2}
    return JudgeScores(judge, scores, {unit: cluster_of(items[unit[1]]) for unit in scores})


@dataclass(frozen=True)
class ScoreMap:
    """One fitted mapping and its bootstrap band (see the module docstring)."""

    method: Method
    """``isotonic`` or ``linear``."""
    x: np.ndarray
    """Substitute scores the fit is known at (the sorted distinct fitted scores; for linear, their ends)."""
    y: np.ndarray
    """The fitted reference scores at ``x``."""
    slope: float | None = None
    """Linear: the slope."""
    intercept: float | None = None
    """Linear: the intercept."""

    def __call__(self, scores: np.ndarray) -> np.ndarray:
        """Map substitute scores (outside the fitted range: clipped to its ends, isotonic; extrapolated, linear)."""
        values = np.asarray(scores, dtype=float)
        if self.method == "linear":
            assert self.slope is not None and self.intercept is not None
            return self.intercept + self.slope * values
        return np.interp(values, self.x, self.y)


def fit(substitute: np.ndarray, reference: np.ndarray, method: Method, weights: np.ndarray | None = None) -> ScoreMap:
    """Fit one mapping from ``substitute`` to ``reference`` scores (``weights``: counts per answer, or None).

    Raises:
        MappingError: When fewer than two distinct substitute scores carry weight.
    """
    x, y = np.asarray(substitute, dtype=float), np.asarray(reference, dtype=float)
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=float)
    keep = w > 0
    x, y, w = x[keep], y[keep], w[keep]
    if np.unique(x).size < 2:
        raise MappingError("the substitute judge gives fewer than two distinct scores: no mapping can be fitted")
    if method == "linear":
        mean_x, mean_y = np.average(x, weights=w), np.average(y, weights=w)
        slope = float(np.sum(w * (x - mean_x) * (y - mean_y)) / np.sum(w * (x - mean_x) ** 2))
        intercept = float(mean_y - slope * mean_x)
        ends = np.array([x.min(), x.max()])
        return ScoreMap("linear", ends, intercept + slope * ends, slope, intercept)
    from sklearn.isotonic import IsotonicRegression

    model = IsotonicRegression(increasing=True, out_of_bounds="clip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x, y, sample_weight=w)
    return ScoreMap("isotonic", np.asarray(model.X_thresholds_, dtype=float), np.asarray(model.y_thresholds_, float))


@dataclass(frozen=True)
class FittedMapping:
    """A mapping with its band, on :data:`GRID` and on the answers mapped."""

    mapping: ScoreMap
    """The fit on every shared answer."""
    grid: np.ndarray
    """:data:`GRID`."""
    band: np.ndarray
    """``(2, len(grid))``: the 95% bootstrap band of the mapping on the grid."""
    replicates: list[ScoreMap]
    """The bootstrap refits (used to give mapped scores their intervals)."""
    slope_ci: tuple[float | None, float | None] = (None, None)
    """Linear: the 95% bootstrap interval of the slope."""
    intercept_ci: tuple[float | None, float | None] = (None, None)
    """Linear: the 95% bootstrap interval of the intercept."""


def fit_with_band(
    substitute: np.ndarray,
    reference: np.ndarray,
    method: Method,
    clusters: Sequence[str] | None = None,
    *,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
) -> FittedMapping:
    """Fit ``method`` on the shared answers and its cluster-bootstrap band (module docstring).

    Raises:
        MappingError: For fewer than :data:`MIN_SHARED` answers or a substitute that gives one score only.
    """
    n = len(substitute)
    if n < MIN_SHARED:
        raise MappingError(f"{n} shared answers: at least {MIN_SHARED} are needed to fit a mapping")
    mapping = fit(substitute, reference, method)
    replicates: list[ScoreMap] = []
    if reps:
        codes, _, _ = clustering(list(clusters) if clusters is not None else None, n)
        for rows in weight_rows(n, reps, _key_rng(seed, f"judge_mapping:{method}"), codes):
            for w in rows:
                try:
                    replicates.append(fit(substitute, reference, method, w))
                except MappingError:
                    continue  # a draw of one distinct score: no mapping, left out of the band
    curves = np.array([r(GRID) for r in replicates]) if replicates else np.empty((0, GRID.size))
    band = (
        np.array([percentile_interval(curves[:, k]) for k in range(GRID.size)], dtype=float).T
        if replicates
        else np.full((2, GRID.size), np.nan)
    )
    slope_ci: tuple[float | None, float | None] = (None, None)
    intercept_ci: tuple[float | None, float | None] = (None, None)
    if method == "linear" and replicates:
        slope_ci = percentile_interval(np.array([r.slope for r in replicates], dtype=float))
        intercept_ci = percentile_interval(np.array([r.intercept for r in replicates], dtype=float))
    return FittedMapping(mapping, GRID, band, replicates, slope_ci, intercept_ci)


# --------------------------------------------------------------------------------------------------- results


class MappingCurve(Payload):
    """One fitted mapping: the curve and its band on the grid of substitute scores."""

    method: str
    """``isotonic`` or ``linear``."""
    grid: list[Number]
    """Substitute scores (1-10 by 0.25)."""
    mapped: list[Number]
    """The mapping at each grid score (reference judge's scale)."""
    band: list[Interval]
    """The 95% bootstrap band at each grid score."""
    slope: Number | None = None
    """Linear: the slope."""
    slope_ci: Interval = None
    """Linear: its 95% bootstrap interval."""
    intercept: Number | None = None
    """Linear: the intercept."""
    intercept_ci: Interval = None
    """Linear: its 95% bootstrap interval."""


class MappedModelScore(Payload):
    """A model's Chat score by the substitute judge, mapped onto the reference judge's scale."""

    model: str
    """The model."""
    method: str
    """The mapping used (``isotonic`` or ``linear``)."""
    substitute_score: Number
    """The substitute judge's own mean score of the model's answers."""
    mapped_score: Number
    """The mean of the mapped answers (on the reference judge's scale)."""
    ci: Interval
    """95% interval of the mapped score from the mapping's bootstrap."""
    reference_score: Number | None
    """The reference judge's own mean score of the same answers, where it judged all of them; None otherwise."""
    n: int
    """Answers mapped."""
    mapped: bool = True
    """Always True: this score is mapped, not judged by the reference judge."""
    label: str
    """How the score is named wherever it is shown."""


class MappedAnswer(Payload):
    """One answer's substitute score mapped onto the reference judge's scale."""

    model: str
    """The model."""
    uid: str
    """The item."""
    turn: int | None
    """The turn (multi-turn items); None for a one-turn item."""
    substitute_score: Number
    """The substitute judge's score (mean of both orders)."""
    isotonic: Number
    """Mapped by the isotonic fit."""
    linear: Number
    """Mapped by the linear fit."""
    reference_score: Number | None
    """The reference judge's own score, where it judged the answer (a shared answer); None otherwise."""
    mapped: bool = True
    """Always True: the mapped values are not the reference judge's judgement."""


class JudgeMappingResult(Payload):
    """A substitute judge mapped onto a reference judge (``airbench-nb judge-map``; ``judge-mapping.json``)."""

    reference_judge: str
    """The judge whose scale the scores are mapped onto."""
    substitute_judge: str
    """The judge whose scores are mapped."""
    shared: int
    """Answers both judges scored in both orders (the fit's units)."""
    clusters: int
    """Clusters the bootstrap drew."""
    protocol: str
    """How verdicts were read (``strict`` or ``official``)."""
    reps: int
    """Bootstrap replicates."""
    seed: int
    """Bootstrap seed."""
    curves: list[MappingCurve]
    """The isotonic and the linear mapping."""
    models: list[MappedModelScore]
    """Per model and method, the substitute's score mapped."""
    answers: list[MappedAnswer]
    """Every answer the substitute scored, mapped by both methods."""
    note: str
    """What the mapped scores are."""


def _interval(pair: tuple[float | None, float | None]) -> Interval:
    low, high = pair
    if low is None or high is None or not np.isfinite(low) or not np.isfinite(high):
        return None
    return [round(float(low), 4), round(float(high), 4)]


def map_judges(
    reference: JudgeScores, substitute: JudgeScores, *, protocol: str, reps: int = DEFAULT_REPS, seed: int = 0
) -> tuple[JudgeMappingResult, dict[Method, FittedMapping]]:
    """Fit both mappings on the answers both judges scored and map every answer the substitute scored.

    Raises:
        MappingError: When the two judges share fewer than :data:`MIN_SHARED` answers.
    """
    shared = [u for u in substitute.scores if u in reference.scores]
    if len(shared) < MIN_SHARED:
        raise MappingError(
            f"judges {reference.judge} and {substitute.judge} scored {len(shared)} answers in common (both orders): "
            f"at least {MIN_SHARED} are needed; judge the same responses with both"
        )
    x = np.array([substitute.scores[u] for u in shared])
    y = np.array([reference.scores[u] for u in shared])
    keys = [substitute.clusters[u] for u in shared]
    fits = {m: fit_with_band(x, y, m, keys, reps=reps, seed=seed) for m in METHODS}
    curves = [
        MappingCurve(
            method=m,
            grid=[float(g) for g in GRID],
            mapped=[round(float(v), 4) for v in f.mapping(GRID)],
            band=[_interval((lo, hi)) for lo, hi in f.band.T],
            slope=None if f.mapping.slope is None else round(f.mapping.slope, 6),
            slope_ci=_interval(f.slope_ci) if m == "linear" else None,
            intercept=None if f.mapping.intercept is None else round(f.mapping.intercept, 6),
            intercept_ci=_interval(f.intercept_ci) if m == "linear" else None,
        )
        for m, f in fits.items()
    ]
    units = list(substitute.scores)
    values = np.array([substitute.scores[u] for u in units])
    mapped = {m: f.mapping(values) for m, f in fits.items()}
    answers = [
        MappedAnswer(
            model=u[0],
            uid=u[1],
            turn=u[2],
            substitute_score=round(float(values[k]), 4),
            isotonic=round(float(mapped["isotonic"][k]), 4),
            linear=round(float(mapped["linear"][k]), 4),
            reference_score=reference.scores.get(u),
        )
        for k, u in enumerate(units)
    ]
    models: list[MappedModelScore] = []
    for model in dict.fromkeys(u[0] for u in units):
        index = np.array([k for k, u in enumerate(units) if u[0] == model])
        own = [reference.scores.get(units[k]) for k in index]
        for method, f in fits.items():
            draws = np.array([r(values[index]).mean() for r in f.replicates]) if f.replicates else np.empty(0)
            models.append(
                MappedModelScore(
                    model=model,
                    method=method,
                    substitute_score=round(float(values[index].mean()), 4),
                    mapped_score=round(float(mapped[method][index].mean()), 4),
                    ci=_interval(percentile_interval(draws)) if draws.size else None,
                    reference_score=None if None in own else round(float(np.mean(own)), 4),  # type: ignore[arg-type]
                    n=int(index.size),
                    label=f"{substitute.judge} mapped onto {reference.judge}'s scale ({method}): mapped, not judged "
                    f"by {reference.judge}",
                )
            )
    _, clusters, _ = clustering(keys, len(shared))
    result = JudgeMappingResult(
        reference_judge=reference.judge,
        substitute_judge=substitute.judge,
        shared=len(shared),
        clusters=clusters,
        protocol=protocol,
        reps=reps,
        seed=seed,
        curves=curves,
        models=models,
        answers=answers,
        note=f"scores of {substitute.judge} mapped onto the scale of {reference.judge}, fitted on {len(shared)} "
        "answers both judged; every mapped score is flagged mapped=True and is not the reference judge's judgement",
    )
    return result, fits


MAPPING_GLOB = "judge-mapping.*-onto-*.json"
"""The files :func:`map_run_judges` writes into a run's ``analysis/`` folder (read back by the landing page)."""


def read_mappings(folder: str | Path) -> list[JudgeMappingResult]:
    """The judge mappings written into ``folder`` (a run's ``analysis/``), sorted by file name.

    An unreadable one is skipped with a warning naming the file.
    """
    out = []
    for path in sorted(Path(folder).glob(MAPPING_GLOB)):
        try:
            out.append(JudgeMappingResult.model_validate_json(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            logger.warning("%s: not a judge mapping (%s); left out", path, str(exc).splitlines()[0])
    return out


def mapping_figure(result: JudgeMappingResult, pairs: tuple[np.ndarray, np.ndarray]) -> Any:
    """The shared answers (substitute vs reference score) with both mappings and their 95% bands (seaborn)."""
    from airbench_nb import plots

    sns = plots._sns()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.2), dpi=plots.DPI)
    x, y = pairs
    sns.scatterplot(x=x, y=y, ax=ax, color="0.55", s=14, alpha=0.6, edgecolor=None, label="shared answers")
    for curve, colour in zip(result.curves, ("C0", "C3"), strict=True):
        grid = np.asarray(curve.grid, dtype=float)
        low = np.array([b[0] if b else np.nan for b in curve.band], dtype=float)
        high = np.array([b[1] if b else np.nan for b in curve.band], dtype=float)
        ax.plot(grid, curve.mapped, color=colour, label=f"{curve.method} mapping")
        ax.fill_between(grid, low, high, color=colour, alpha=0.2, label=f"{curve.method} 95% band")
    ax.plot([1, 10], [1, 10], color="0.3", lw=0.8, ls=":", label="identity")
    ax.set(xlim=(0.8, 10.2), ylim=(0.8, 10.2))
    ax.set_xlabel(f"{result.substitute_judge}: Chat score (1-10, mean of both orders)")
    ax.set_ylabel(f"{result.reference_judge}: Chat score (1-10)")
    ax.set_title(f"Substitute judge mapped onto the reference judge's scale\n(n = {result.shared} shared answers)")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


def map_run_judges(
    run_dir: str | Path,
    reference: str,
    substitute: str,
    *,
    protocol: str = "strict",
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    out: str | Path | None = None,
) -> tuple[JudgeMappingResult, dict[str, Path]]:
    """Map ``substitute``'s Chat scores of a run onto ``reference``'s scale; write the JSON, a CSV and the figure.

    Args:
        run_dir: The run folder (both judges' verdicts in ``verdicts/``).
        reference: The reference judge's spec.
        substitute: The substitute judge's spec.
        protocol: ``strict`` (fenced readings) or ``official`` (verbatim replies).
        reps: Bootstrap replicates.
        seed: Bootstrap seed.
        out: Output folder (default ``<run_dir>/analysis``).

    Returns:
        The result and the files written (``json``, ``csv``, ``figure``).

    Raises:
        MappingError: When a judge has no Chat verdict in the run, or they share too few answers.
        ValueError: For an unknown protocol.
    """
    import matplotlib.pyplot as plt
    import pandas as pd

    from airbench_nb.analysis.data import load_run
    from airbench_nb.run_folder import RunFolder, file_slug
    from airbench_nb.scoring import official_chat, strict_chat

    if protocol not in ("strict", "official"):
        raise ValueError(f"unknown protocol {protocol!r}: use 'strict' or 'official'")
    run = load_run(run_dir)
    read = official_chat if protocol == "official" else strict_chat
    verdicts = {m: run.current_verdicts(m) for m in run.models}
    scored = {}
    for judge in (reference, substitute):
        scored[judge] = judge_scores(judge, run.items, run.responses, verdicts, read)
        if not scored[judge].scores:
            present = sorted({v.judge for vs in verdicts.values() for v in vs if v.order in CHAT_ORDERS})
            raise MappingError(
                f"judge {judge} has no Chat score in {run_dir} (Chat judges present: {', '.join(present) or 'none'})"
            )
    result, _ = map_judges(scored[reference], scored[substitute], protocol=protocol, reps=reps, seed=seed)
    folder = Path(out) if out is not None else RunFolder(run_dir).analysis_dir
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"judge-mapping.{file_slug(substitute)}-onto-{file_slug(reference)}"  # matches MAPPING_GLOB
    files = {"json": folder / f"{stem}.json", "csv": folder / f"{stem}.csv", "figure": folder / f"{stem}.png"}
    files["json"].write_text(result.model_dump_json(indent=1), encoding="utf-8")
    pd.DataFrame([a.model_dump() for a in result.answers]).to_csv(files["csv"], index=False)
    shared = [u for u in scored[substitute].scores if u in scored[reference].scores]
    pairs = (
        np.array([scored[substitute].scores[u] for u in shared]),
        np.array([scored[reference].scores[u] for u in shared]),
    )
    fig = mapping_figure(result, pairs)
    fig.savefig(files["figure"])
    plt.close(fig)
    logger.info("mapped %s onto %s (%d shared answers) into %s", substitute, reference, result.shared, folder)
    return result, files
