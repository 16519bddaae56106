"""Answer style against correctness: are long answers more often right, and are wrong answers stated confidently?

- :func:`length_accuracy`: accuracy per model and bin of answer length in words, with a Wilson 95% interval
  (:func:`statsmodels.stats.proportion.proportion_confint`, ``method="wilson"``). Rows follow the kit's one
  accuracy rule (non-NA ``correct``), so strict failures count as wrong answers of their length and official
  failures are left out. Bins are right-closed, ``(a, b]``; answers with no text (no response, an error or an
  empty string) that fall in no bin are counted in a ``no text`` row, and any other length outside the bins in an
  ``outside bins`` row.
- :func:`confidence`: among wrong answers (``correct`` False and not ``failed``: the model did choose an option)
  the share stated with confidence, i.e. without a hedge, and among right answers the share hedged, for
  comparison. A hedge is a match of the strict extractor's hedge lexicon
  (:data:`airbench_nb.judge.extract.HEDGES`, its compiled pattern reused), optionally widened with ``extra_hedges``.
  That lexicon is made for non-answers ("not sure", "cannot tell", "none of the above", ...): soft markers such as
  "probably" are not hedges unless added. Fisher's exact test (:func:`scipy.stats.fisher_exact`) asks whether
  wrong answers are hedged at another rate than right ones.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd
from scipy.stats import fisher_exact

from airbench_nb.analysis.stats import WILSON, plain, wilson
from airbench_nb.analysis_report import AnswerConfidence
from airbench_nb.judge.extract import _HEDGE_RE

logger = logging.getLogger(__name__)

DEFAULT_BINS: tuple[float, ...] = (0, 1, 3, 10, 30, math.inf)
"""Edges of the answer-length bins in words: 1, 2-3, 4-10, 11-30, >30."""

NO_TEXT = "no text"
"""Length label of answers with no text that fall in no bin."""

OUTSIDE = "outside bins"
"""Length label of other answers whose length falls in no bin."""

CI_METHOD = WILSON
"""How the intervals of this module are computed."""

FISHER_TEST = "Fisher's exact test (two-sided): hedged share of wrong vs right answers"
"""Name of the test in :attr:`Confidence.test`."""

LENGTH_COLUMNS: tuple[str, ...] = ("model", "bin", "n", "correct", "accuracy", "ci_low", "ci_high")
"""Columns of :func:`length_accuracy`."""


def bin_labels(bins: Sequence[float]) -> list[str]:
    """Labels of right-closed word-count bins: ``(0, 1]`` is "1", ``(1, 3]`` "2-3", ``(30, inf]`` ">30".

    Args:
        bins: Increasing bin edges.

    Returns:
        One label per bin.
    """
    labels = []
    for low, high in zip(bins[:-1], bins[1:], strict=True):
        first = math.floor(low) + 1
        if math.isinf(high):
            labels.append(f">{math.floor(low)}")
        elif first >= math.floor(high):
            labels.append(str(math.floor(high)))
        else:
            labels.append(f"{first}-{math.floor(high)}")
    return labels


def length_accuracy(frame: pd.DataFrame, bins: Sequence[float] = DEFAULT_BINS) -> pd.DataFrame:
    """Accuracy per model and bin of answer length in words, with Wilson 95% intervals.

    Args:
        frame: A Foundation frame.
        bins: Increasing edges of right-closed bins (at least two edges).

    Returns:
        A long frame with :data:`LENGTH_COLUMNS`: every bin for every model (``n`` 0 and NaN accuracy for an empty
        bin), then ``no text`` / ``outside bins`` rows where such answers exist. ``bin`` (the length label) is an
        ordered categorical. ``attrs["ci"]`` names the interval.

    Raises:
        ValueError: If ``bins`` has fewer than two edges or is not increasing.
    """
    bins = tuple(float(b) for b in bins)
    if len(bins) < 2 or any(b >= c for b, c in zip(bins[:-1], bins[1:], strict=True)):
        raise ValueError(f"bins must be at least two increasing edges, got {bins}")
    labels = bin_labels(bins)
    order = labels + [NO_TEXT, OUTSIDE]
    rows: list[dict[str, Any]] = []
    scored = frame[frame["correct"].notna()] if not frame.empty else frame
    for model, group in scored.groupby("model", sort=True):
        words = pd.to_numeric(group["words"], errors="coerce").astype(float)
        binned = pd.cut(words, bins=list(bins), labels=labels, right=True).astype(object)
        no_text = words.isna() | words.eq(0)
        binned = binned.where(binned.notna(), pd.Series(OUTSIDE, index=group.index).where(~no_text, NO_TEXT))
        correct = group["correct"].astype(bool)
        for label in order:
            mask = binned == label
            n = int(mask.sum())
            if n == 0 and label in (NO_TEXT, OUTSIDE):
                continue
            right = int(correct[mask].sum())
            low, high = wilson(right, n)
            rows.append(
                {
                    "model": str(model),
                    "bin": label,
                    "n": n,
                    "correct": right,
                    "accuracy": right / n if n else math.nan,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
    out = pd.DataFrame(rows, columns=list(LENGTH_COLUMNS))
    out["bin"] = pd.Categorical(out["bin"], categories=order, ordered=True)
    for column in ("accuracy", "ci_low", "ci_high"):
        out[column] = out[column].astype(float)
    out.attrs["ci"] = CI_METHOD
    return out


def hedge_pattern(extra_hedges: Sequence[str] = ()) -> re.Pattern[str]:
    """The hedge pattern: the strict extractor's lexicon, widened by ``extra_hedges`` (regexes) when given."""
    if not extra_hedges:
        return _HEDGE_RE
    return re.compile("|".join([_HEDGE_RE.pattern, *extra_hedges]), _HEDGE_RE.flags)


def is_hedged(text: str | None, pattern: re.Pattern[str] | None = None) -> bool:
    """Whether an answer hedges (a match of ``pattern``, by default the extractor's hedge lexicon)."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return False
    return bool((pattern or _HEDGE_RE).search(str(text)))


@dataclass(frozen=True)
class Confidence:
    """How confidently one model states its wrong (and right) answers."""

    model: str
    """The model spec."""
    wrong_n: int
    """Wrong answers that chose an option (``correct`` False, not ``failed``)."""
    wrong_confident: int
    """Wrong answers with no hedge."""
    wrong_hedged: int
    """Wrong answers with a hedge."""
    confident_wrong_rate: float | None
    """``wrong_confident / wrong_n``; None without wrong answers."""
    confident_wrong_ci: tuple[float, float] | None
    """Wilson 95% interval of ``confident_wrong_rate``."""
    right_n: int
    """Right answers."""
    right_hedged: int
    """Right answers with a hedge."""
    right_hedged_rate: float | None
    """``right_hedged / right_n``; None without right answers."""
    odds_ratio: float | None
    """Odds ratio of hedging, wrong vs right (None when undefined or infinite)."""
    p_value: float | None
    """P-value of the test; None when undefined (see ``note``)."""
    test: str = FISHER_TEST
    """The statistical test used."""
    ci: str = CI_METHOD
    """How the interval is computed."""
    note: str | None = None
    """Why the test is undefined, or None."""
    reason: str | None = None
    """Why there was nothing to analyse, or None."""

    def as_dict(self) -> dict[str, Any]:
        """Serializer: a JSON-ready dict (plain numbers, None instead of NaN or infinity)."""
        out = asdict(self)
        out["confident_wrong_ci"] = list(self.confident_wrong_ci) if self.confident_wrong_ci else None
        return out

    def payload(self) -> AnswerConfidence:
        """The result as ``analysis.json`` holds it (``answers.confidence[model]``)."""
        return AnswerConfidence.from_data(self.as_dict())


def _one(model: str, rows: pd.DataFrame, pattern: re.Pattern[str]) -> Confidence:
    answered = rows[~rows["failed"].astype(bool) & rows["correct"].notna()]
    right_mask = answered["correct"].astype(bool)
    hedged = answered["response"].map(lambda t: is_hedged(t, pattern)).astype(bool)
    wrong_n, right_n = int((~right_mask).sum()), int(right_mask.sum())
    wrong_hedged = int((hedged & ~right_mask).sum())
    right_hedged = int((hedged & right_mask).sum())
    wrong_confident = wrong_n - wrong_hedged
    odds: float | None = None
    p_value: float | None = None
    note: str | None = None
    if wrong_n and right_n:
        result = fisher_exact([[wrong_hedged, wrong_confident], [right_hedged, right_n - right_hedged]])
        odds, p_value = plain(result.statistic), plain(result.pvalue)
    else:
        note = "test undefined: needs both wrong and right answers"
    return Confidence(
        model=model,
        wrong_n=wrong_n,
        wrong_confident=wrong_confident,
        wrong_hedged=wrong_hedged,
        confident_wrong_rate=wrong_confident / wrong_n if wrong_n else None,
        confident_wrong_ci=wilson(wrong_confident, wrong_n) if wrong_n else None,
        right_n=right_n,
        right_hedged=right_hedged,
        right_hedged_rate=right_hedged / right_n if right_n else None,
        odds_ratio=odds,
        p_value=p_value,
        note=note,
        reason=None if wrong_n or right_n else "the model chose no option on any item",
    )


def confidence(frame: pd.DataFrame, extra_hedges: Sequence[str] = ()) -> dict[str, Confidence]:
    r"""Share of wrong answers stated with confidence, and of right answers hedged, per model.

    Args:
        frame: A Foundation frame.
        extra_hedges: Regexes added to the extractor's hedge lexicon (e.g. ``r"\bprobably\b"``).

    Returns:
        ``{model: Confidence}``; a model that chose no option gets an empty result with a ``reason``. An empty
        frame gives an empty dict.
    """
    if frame.empty:
        logger.info("confidence: empty frame, nothing to analyse")
        return {}
    pattern = hedge_pattern(extra_hedges)
    return {str(model): _one(str(model), rows, pattern) for model, rows in frame.groupby("model", sort=True)}


def confidence_frame(results: Mapping[str, Confidence]) -> pd.DataFrame:
    """A tidy frame: one row per (model, answers) with answers ``wrong`` or ``right``.

    Args:
        results: The output of :func:`confidence`.

    Returns:
        Columns ``model, answers, n, hedged, confident, hedged_rate`` (NaN rate for no answers).
    """
    rows = []
    for model, r in results.items():
        for answers, n, hedged in (("wrong", r.wrong_n, r.wrong_hedged), ("right", r.right_n, r.right_hedged)):
            rows.append(
                {
                    "model": model,
                    "answers": answers,
                    "n": n,
                    "hedged": hedged,
                    "confident": n - hedged,
                    "hedged_rate": hedged / n if n else math.nan,
                }
            )
    out = pd.DataFrame(rows, columns=["model", "answers", "n", "hedged", "confident", "hedged_rate"])
    out["hedged_rate"] = out["hedged_rate"].astype(float)
    return out
