"""Order bias of a Chat judge: does it favour whichever answer it reads first?

AIR-Bench's Chat judge rates the reference answer and the model's answer in one call, and does so twice with
the order swapped (``reference_first``: the reference is shown first, the model's answer second;
``hypothesis_first``: the model's answer first). A judge free of order bias gives the model's answer the same
score in both orders. For each judge and model this module pairs, item by item, the model's score when its answer
is shown first with its score when shown second, and reports:

- ``mean_diff``: the mean of (shown first - shown second) over the paired items, with a *percentile* bootstrap 95%
  confidence interval (:func:`scipy.stats.bootstrap`, seeded; percentile as in :mod:`airbench_nb.scoring`, so
  that a degenerate sample gives a point interval instead of NaN) and the Wilcoxon signed-rank p-value
  (:func:`scipy.stats.wilcoxon`, zero differences dropped, two-sided). When every difference is zero there is no
  evidence of a bias: p is 1.0 and a note says so.
- ``flip_rate``: in each order the judge prefers the model (its score is higher), the reference (lower) or neither
  (a tie). An item *flips* when the preferred answer differs between the two orders; items with a tie in either
  order are counted apart (``tie_rate``) and left out of the flip rate's denominator.
- ``prefers_longer``: AlpacaEval's length preference. Over the scored (item, order) judgments that are not ties
  and whose two answers differ in length (words), the share in which the longer answer got the higher score, with
  a two-sided exact binomial test against 0.5 (:func:`scipy.stats.binomtest`).

Items missing a score in either order (not judged, or the judge reply unparsed) are left out of the pairing and
counted in ``unpaired``.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from airbench_nb.analysis.stats import plain
from airbench_nb.analysis_report import OrderBias

logger = logging.getLogger(__name__)

SHOWN_FIRST = "hypothesis_first"
"""The order in which the model's answer is shown first."""
SHOWN_SECOND = "reference_first"
"""The order in which the model's answer is shown second (the reference first)."""

TEST = "Wilcoxon signed-rank"
"""Name of the paired test of (shown first - shown second)."""
CI_METHOD = "percentile bootstrap"
"""How the confidence interval of ``mean_diff`` is computed."""
LENGTH_TEST = "exact binomial"
"""Name of the test of ``prefers_longer`` against 0.5."""
CONFIDENCE = 0.95
"""Coverage of the bootstrap interval."""

PAIR_COLUMNS: tuple[str, ...] = ("judge", "model", "uid", "task", "category", "shown_first", "shown_second")
"""Columns of :func:`order_pairs`."""


class OrderBiasResults(dict[str, dict[str, OrderBias]]):
    """``{judge: {model: OrderBias}}``, with ``reason`` set when there was nothing to analyse."""

    reason: str | None = None
    """Why the result is empty; None when it is not."""

    def as_dict(self) -> dict[str, Any]:
        """``{"by_judge": {judge: {model: dict}}, "reason": str | None}``, JSON-serialisable."""
        by_judge = {j: {m: r.model_dump() for m, r in models.items()} for j, models in self.items()}
        return {"by_judge": by_judge, "reason": self.reason}


def _scored(chat_frame: pd.DataFrame) -> pd.DataFrame:
    """Rows with both scores, the last row per (judge, model, uid, turn, order).

    A multi-turn item's turns are paired apart; a frame without ``turn`` is read as one-turn items.
    """
    frame = chat_frame[chat_frame["order"].isin((SHOWN_FIRST, SHOWN_SECOND))]
    if "turn" not in frame.columns:
        frame = frame.assign(turn=0)
    frame = frame.drop_duplicates(["judge", "model", "uid", "turn", "order"], keep="last")
    both = frame["score_model"].notna() & frame["score_reference"].notna()
    return frame[both]


def order_pairs(chat_frame: pd.DataFrame) -> pd.DataFrame:
    """The model's score with its answer shown first and shown second, one row per paired item.

    Args:
        chat_frame: :meth:`airbench_nb.analysis.data.RunData.chat_frame` (either protocol).

    Returns:
        A DataFrame with :data:`PAIR_COLUMNS`: ``shown_first`` is the model's score in ``hypothesis_first``,
        ``shown_second`` in ``reference_first``. Items missing a score in either order are left out.
    """
    scored = _scored(chat_frame)
    keys = ["judge", "model", "uid", "turn"]
    first = scored[scored["order"] == SHOWN_FIRST].set_index(keys)
    second = scored[scored["order"] == SHOWN_SECOND].set_index(keys)
    shown_first = first[["task", "category", "score_model"]].rename(columns={"score_model": "shown_first"})
    shown_second = second[["score_model"]].rename(columns={"score_model": "shown_second"})
    out = shown_first.join(shown_second, how="inner").reset_index()
    out["shown_first"] = out["shown_first"].astype(float)
    out["shown_second"] = out["shown_second"].astype(float)
    return out.sort_values(keys, ignore_index=True)[list(PAIR_COLUMNS)]


def _preference(model: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``"model"``, ``"reference"`` or ``"tie"`` per judgment."""
    return np.where(model > reference, "model", np.where(model < reference, "reference", "tie"))


def _length_preference(rows: pd.DataFrame) -> tuple[int, int, float | None]:
    """(judgments, longer answer won, binomial p) over non-tied judgments with answers of different lengths."""
    model = rows["score_model"].to_numpy(float)
    reference = rows["score_reference"].to_numpy(float)
    response_words = rows["response_words"].astype("Float64").to_numpy(float, na_value=np.nan)
    reference_words = rows["reference_words"].astype("Float64").to_numpy(float, na_value=np.nan)
    usable = (
        (model != reference)
        & ~np.isnan(response_words)
        & ~np.isnan(reference_words)
        & (response_words != reference_words)
    )
    model_longer = response_words[usable] > reference_words[usable]
    model_higher = model[usable] > reference[usable]
    pairs = int(usable.sum())
    wins = int((model_longer == model_higher).sum())
    p = float(stats.binomtest(wins, pairs, 0.5).pvalue) if pairs else None
    return pairs, wins, p


def _one(judge: str, model: str, rows: pd.DataFrame, uids: int, seed: int, reps: int) -> OrderBias:
    """Order bias of one (judge, model) from its scored rows; ``uids`` is the number of items it has rows for."""
    first = rows[rows["order"] == SHOWN_FIRST].set_index(["uid", "turn"])
    second = rows[rows["order"] == SHOWN_SECOND].set_index(["uid", "turn"])
    paired = first.index.intersection(second.index)
    first, second = first.loc[paired], second.loc[paired]
    n = len(paired)
    notes: list[str] = []
    diffs = first["score_model"].to_numpy(float) - second["score_model"].to_numpy(float)
    mean_diff = float(diffs.mean()) if n else None
    ci_low = ci_high = wilcoxon_p = None
    if n == 0:
        notes.append("no item scored in both orders")
    elif not np.any(diffs):
        ci_low = ci_high = 0.0
        wilcoxon_p = 1.0
        notes.append("every difference is zero: Wilcoxon p set to 1.0")
    else:
        wilcoxon_p = float(stats.wilcoxon(diffs, zero_method="wilcox", alternative="two-sided").pvalue)
        if n >= 2:
            boot = stats.bootstrap(
                (diffs,),
                np.mean,
                n_resamples=reps,
                confidence_level=CONFIDENCE,
                method="percentile",
                rng=np.random.default_rng(seed),
            )
            ci_low, ci_high = plain(boot.confidence_interval.low), plain(boot.confidence_interval.high)
        else:
            notes.append("one pair: no bootstrap interval")

    first_pref = _preference(first["score_model"].to_numpy(float), first["score_reference"].to_numpy(float))
    second_pref = _preference(second["score_model"].to_numpy(float), second["score_reference"].to_numpy(float))
    tied = (first_pref == "tie") | (second_pref == "tie")
    ties = int(tied.sum())
    flips = int(((first_pref != second_pref) & ~tied).sum())
    decided = n - ties
    length_pairs, longer_wins, length_p = _length_preference(rows)
    return OrderBias(
        judge=judge,
        model=model,
        n_pairs=n,
        unpaired=uids - n,
        mean_diff=plain(mean_diff),
        ci_low=ci_low,
        ci_high=ci_high,
        ci_method=CI_METHOD,
        wilcoxon_p=wilcoxon_p,
        test=TEST,
        flips=flips,
        ties=ties,
        flip_rate=flips / decided if decided else None,
        tie_rate=ties / n if n else None,
        length_pairs=length_pairs,
        longer_wins=longer_wins,
        prefers_longer=longer_wins / length_pairs if length_pairs else None,
        length_p=length_p,
        length_test=LENGTH_TEST,
        note="; ".join(notes) or None,
    )


def order_bias(chat_frame: pd.DataFrame, seed: int = 0, reps: int = 2000) -> OrderBiasResults:
    """Per judge and model: mean score difference shown first - shown second, flips, ties and length preference.

    Args:
        chat_frame: :meth:`airbench_nb.analysis.data.RunData.chat_frame` (either protocol).
        seed: Seed of the bootstrap.
        reps: Bootstrap resamples.

    Returns:
        ``{judge: {model: OrderBias}}`` (see the module docstring); empty, with ``reason`` set, when no item of
        any model was judged in both orders.
    """
    results = OrderBiasResults()
    if chat_frame.empty:
        results.reason = "no Chat verdicts"
        return results
    scored = _scored(chat_frame)
    items = chat_frame.groupby(["judge", "model"], sort=True)["uid"].nunique()
    for (judge, model), uids in items.items():
        rows = scored[(scored["judge"] == judge) & (scored["model"] == model)]
        result = _one(str(judge), str(model), rows, int(uids), seed, reps)
        results.setdefault(str(judge), {})[str(model)] = result
        logger.info(
            "order bias %s on %s: %d pairs, mean diff %s, p %s",
            judge,
            model,
            result.n_pairs,
            result.mean_diff,
            result.wilcoxon_p,
        )
    if not any(r.n_pairs for models in results.values() for r in models.values()):
        results.reason = "no Chat item was scored in both orders"
    return results


def order_bias_frame(results: dict[str, dict[str, OrderBias]]) -> pd.DataFrame:
    """One row per (judge, model) with every field of :class:`~airbench_nb.analysis_report.OrderBias`.

    Args:
        results: The output of :func:`order_bias`.

    Returns:
        A tidy DataFrame (empty, with the columns, when there are no results).
    """
    columns = list(OrderBias.model_fields)
    rows = [r.model_dump() for models in results.values() for r in models.values()]
    return pd.DataFrame(rows, columns=columns)
