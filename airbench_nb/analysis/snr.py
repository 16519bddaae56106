"""Accuracy against signal-to-noise ratio, the SSEU-Bench way: how fast does a model degrade in noise?

SNR-graded Foundation items are copies of a clean item with a background (noise or music) mixed in at a given SNR;
their ``snr_db`` is set and ``clean_uid`` names the clean original. For each model this module gives one point per
SNR, plus a ``clean`` point over the clean originals of the graded copies (the items with no background at all;
they have no dB value, so they are plotted apart, not at infinity). Every point has its n, the number of correct
answers and a Wilson 95% interval (:func:`statsmodels.stats.proportion.proportion_confint`, ``method="wilson"``),
which behaves at accuracies near 0 or 1 and at small n where the normal interval does not. The same curves are
given per model and task, and per model and background: the clean point of a group is made of the originals of
that group's graded copies.

Accuracy is the mean of ``correct`` over the rows where it is known, so the protocol of the frame decides what a
failure means: counted wrong (``strict``) or dropped (``official``; the dropped rows are counted in ``dropped``).

Trend per model: a logistic regression of ``correct`` on ``snr_db`` over the graded rows
(:class:`statsmodels.discrete.discrete_model.Logit` with an intercept); the slope is the change in log-odds per dB
(positive: better in less noise) with its Wald 95% interval and p-value. When the logit cannot be estimated
(perfect separation, no convergence) the trend is Spearman's rank correlation (:func:`scipy.stats.spearmanr`)
instead, and ``test`` says which was used.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.discrete.discrete_model import Logit
from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning

from airbench_nb.analysis.stats import plain, wilson
from airbench_nb.analysis_report import SnrDetail, SnrPoint, SnrTrend

logger = logging.getLogger(__name__)

CI_METHOD = "Wilson"
"""Interval of every accuracy (statsmodels ``proportion_confint(method="wilson")``)."""
LOGIT_TEST = "logistic regression (Logit, correct ~ snr_db), Wald z test of the slope"
"""Name of the trend test when the logit can be estimated."""
SPEARMAN_TEST = "Spearman rank correlation (logit not estimable)"
"""Name of the trend test when the logit cannot be estimated."""
ALPHA = 0.05
"""1 - coverage of every interval."""

FRAME_COLUMNS: tuple[str, ...] = (
    "level",
    "model",
    "task",
    "background",
    "snr_db",
    "clean",
    "n",
    "correct",
    "dropped",
    "accuracy",
    "ci_low",
    "ci_high",
)
"""Columns of :func:`snr_frame`."""


Curve = tuple[SnrPoint, ...]


@dataclass(frozen=True)
class SnrCurves:
    """Accuracy-against-SNR curves per model, per model and task, per model and background, and trend tests."""

    curves: dict[str, Curve]
    """``{model: points}``: SNRs ascending, the clean point last."""
    by_task: dict[str, dict[str, Curve]]
    """``{model: {task: points}}``."""
    by_background: dict[str, dict[str, Curve]]
    """``{model: {background: points}}`` (graded copies that name no background are only in ``curves``)."""
    trends: dict[str, SnrTrend]
    """``{model: trend test}``."""
    ci_method: str = CI_METHOD
    """Interval of every point."""
    reason: str | None = None
    """Why the result is empty; None when it is not."""

    def points(self) -> dict[str, list[SnrPoint]]:
        """``{model: points}``: what ``analysis.json`` holds under ``snr``."""
        return {m: list(c) for m, c in self.curves.items()}

    def detail(self) -> SnrDetail:
        """Everything but the per-model curves: what ``analysis.json`` holds under ``snr_detail``."""
        return SnrDetail(
            by_task={m: {t: list(c) for t, c in g.items()} for m, g in self.by_task.items()},
            by_background={m: {b: list(c) for b, c in g.items()} for m, g in self.by_background.items()},
            trends=dict(self.trends),
            ci_method=self.ci_method,
            reason=self.reason,
        )

    def as_dict(self) -> dict[str, Any]:
        """Serializer: ``{"curves": {model: [point]}, "by_task", "by_background", "trends", "ci_method", "reason"}``."""

        def points(curve: Curve) -> list[dict[str, Any]]:
            return [p.model_dump() for p in curve]

        return {
            "curves": {m: points(c) for m, c in self.curves.items()},
            "by_task": {m: {t: points(c) for t, c in g.items()} for m, g in self.by_task.items()},
            "by_background": {m: {b: points(c) for b, c in g.items()} for m, g in self.by_background.items()},
            "trends": {m: t.model_dump() for m, t in self.trends.items()},
            "ci_method": self.ci_method,
            "reason": self.reason,
        }


def _point(rows: pd.DataFrame, snr_db: float | None) -> SnrPoint:
    known = rows["correct"].dropna()
    n = len(known)
    correct = int(known.astype(bool).sum())
    low = high = accuracy = None
    if n:
        accuracy = correct / n
        low, high = wilson(correct, n)
    return SnrPoint(
        snr_db=snr_db,
        clean=snr_db is None,
        n=n,
        correct=correct,
        dropped=len(rows) - n,
        accuracy=accuracy,
        ci_low=low,
        ci_high=high,
    )


def _curve(graded: pd.DataFrame, model_rows: pd.DataFrame) -> Curve:
    """Points of the graded rows per SNR, then the clean point over their originals among ``model_rows``."""
    points = [_point(graded[graded["snr_db"] == snr], float(snr)) for snr in sorted(graded["snr_db"].unique())]
    originals = set(graded["clean_uid"].dropna().astype(str))
    clean = model_rows[model_rows["uid"].isin(originals) & model_rows["snr_db"].isna()]
    if not clean.empty:
        points.append(_point(clean, None))
    return tuple(points)


def _trend(model: str, graded: pd.DataFrame) -> SnrTrend:
    known = graded[graded["correct"].notna()]
    x = known["snr_db"].to_numpy(float)
    y = known["correct"].astype(bool).to_numpy(float)
    levels = int(np.unique(x).size)
    base: dict[str, Any] = {"model": model, "n": len(y), "levels": levels}
    empty: dict[str, Any] = {"slope": None, "slope_ci_low": None, "slope_ci_high": None, "rho": None, "p_value": None}
    if levels < 2:
        return SnrTrend(**base, **empty, test=None, note="fewer than two SNR levels: no trend to test")
    if y.min() == y.max():
        outcome = "right" if y[0] else "wrong"
        return SnrTrend(**base, **empty, test=None, note=f"every graded answer is {outcome}: no trend to test")
    design = np.column_stack([np.ones_like(x), x])
    problem: str | None = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = Logit(y, design).fit(disp=0)
        except (np.linalg.LinAlgError, ValueError) as error:
            fit, problem = None, f"logit failed: {error}"
    if fit is not None:
        if any(issubclass(w.category, PerfectSeparationWarning) for w in caught):
            problem = "perfect separation"
        elif any(issubclass(w.category, ConvergenceWarning) for w in caught) or not fit.mle_retvals.get("converged"):
            problem = "logit did not converge"
    if fit is not None and problem is None:
        slope, p = plain(fit.params[1]), plain(fit.pvalues[1])
        ci = fit.conf_int(alpha=ALPHA)[1]
        if slope is not None and p is not None:
            return SnrTrend(
                **base,
                test=LOGIT_TEST,
                slope=slope,
                slope_ci_low=plain(ci[0]),
                slope_ci_high=plain(ci[1]),
                rho=None,
                p_value=p,
                note=None,
            )
        problem = "logit gave no finite slope"
    rho, p = stats.spearmanr(x, y)
    return SnrTrend(
        **base,
        test=SPEARMAN_TEST,
        slope=None,
        slope_ci_low=None,
        slope_ci_high=None,
        rho=plain(rho),
        p_value=plain(p),
        note=f"{problem}: Spearman instead",
    )


def snr_curves(foundation_frame: pd.DataFrame) -> SnrCurves:
    """Accuracy per SNR (and clean) per model, per model and task, per model and background, with trend tests.

    Args:
        foundation_frame: :meth:`airbench_nb.analysis.data.RunData.foundation_frame` (either protocol).

    Returns:
        The :class:`SnrCurves`; empty, with a ``reason``, when no row is SNR-graded.
    """
    empty = SnrCurves(curves={}, by_task={}, by_background={}, trends={})
    if foundation_frame.empty or "snr_db" not in foundation_frame:
        return replace(empty, reason="no Foundation rows")
    snr = pd.to_numeric(foundation_frame["snr_db"], errors="coerce")
    graded_all = foundation_frame[snr.notna()]
    if graded_all.empty:
        return replace(empty, reason="no SNR-graded Foundation items (snr_db is never set)")
    curves: dict[str, Curve] = {}
    by_task: dict[str, dict[str, Curve]] = {}
    by_background: dict[str, dict[str, Curve]] = {}
    trends: dict[str, SnrTrend] = {}
    for model in sorted(graded_all["model"].astype(str).unique()):
        model_rows = foundation_frame[foundation_frame["model"] == model]
        graded = graded_all[graded_all["model"] == model]
        curves[model] = _curve(graded, model_rows)
        by_task[model] = {str(t): _curve(g, model_rows) for t, g in graded.groupby("task", sort=True)}
        named = graded[graded["background"].notna()]
        by_background[model] = {str(b): _curve(g, model_rows) for b, g in named.groupby("background", sort=True)}
        trends[model] = _trend(model, graded)
        logger.info(
            "SNR trend of %s: %s p=%s (%s)", model, trends[model].slope, trends[model].p_value, trends[model].test
        )
    return SnrCurves(curves=curves, by_task=by_task, by_background=by_background, trends=trends)


def snr_frame(curves: SnrCurves) -> pd.DataFrame:
    """The curves as one long frame for plotting.

    Args:
        curves: The output of :func:`snr_curves`.

    Returns:
        Columns :data:`FRAME_COLUMNS`: ``level`` is ``model`` (task and background None), ``task`` or
        ``background``; ``snr_db`` is NaN and ``clean`` True for the clean point.
    """
    rows: list[dict[str, Any]] = []

    def add(level: str, model: str, task: str | None, background: str | None, curve: Curve) -> None:
        for point in curve:
            row = point.model_dump()
            rows.append({"level": level, "model": model, "task": task, "background": background, **row})

    for model, curve in curves.curves.items():
        add("model", model, None, None, curve)
    for model, groups in curves.by_task.items():
        for task, curve in groups.items():
            add("task", model, task, None, curve)
    for model, groups in curves.by_background.items():
        for background, curve in groups.items():
            add("background", model, None, background, curve)
    frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    frame["snr_db"] = frame["snr_db"].astype(float)
    return frame
