"""Items about several clips and conversations of several turns (the kit's own tasks, issue 14).

- :func:`clip_accuracy`: Foundation accuracy per model on single-clip items against multi-clip items (the kit's
  ``multi-clip`` tasks: "Which clip has the higher pitch?"), under the **strict** protocol (a failure counts
  wrong, so a model that cannot answer about two clips is not flattered), each with a Wilson 95% interval, and
  per model Fisher's exact test of the 2x2 table (right/wrong x single/multi). Does listening to two clips and
  comparing them cost accuracy?
- :func:`turn_scores`: Chat scores per turn index of the multi-turn conversations (``kit_followup_QA``), per model and
  Chat judge, as :mod:`airbench_nb.scoring` computes them (section ``turns``: the protocol's rules, conversations
  resampled for the bootstrap 95% interval).
- :func:`followup_drop`: does the score fall on follow-ups? Per model and judge, paired by conversation: the mean
  over its follow-up turns of each turn's score (both orders averaged) minus its first turn's score, with the
  Wilcoxon signed-rank test (scipy; zero differences dropped) over the conversations scored at turn 1 and at least
  one follow-up.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats

from airbench_nb.analysis.stats import WILSON, plain, wilson

if TYPE_CHECKING:
    from airbench_nb.score_table import RunScores

logger = logging.getLogger(__name__)

CLIP_KINDS: tuple[str, str] = ("single-clip", "multi-clip")
"""The two groups of Foundation items compared."""

CLIP_COLUMNS: tuple[str, ...] = ("model", "clips", "n", "correct", "failed", "accuracy", "ci_low", "ci_high")
"""Columns of :func:`clip_accuracy`."""

CLIP_TEST = "Fisher's exact test (scipy.stats.fisher_exact, two-sided) of right/wrong x single/multi-clip"
"""Test of the difference between single- and multi-clip accuracy of one model."""

TURN_COLUMNS: tuple[str, ...] = (
    "model",
    "chat_judge",
    "protocol",
    "task",
    "turn",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "failures",
    "conversations",
)
"""Columns of :func:`turn_scores` (``turn`` counts from 1; ``n`` and ``failures`` are (conversation, order) units)."""

DROP_TEST = "Wilcoxon signed-rank (scipy.stats.wilcoxon, two-sided, zeros dropped) of follow-ups minus turn 1"
"""Test of :func:`followup_drop`."""


def clip_accuracy(foundation_strict: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Accuracy of each model on single-clip and on multi-clip Foundation items (strict), with Wilson 95% CIs.

    Args:
        foundation_strict: :meth:`airbench_nb.analysis.data.RunData.foundation_frame` under ``strict`` (plain items:
            no SNR-graded or rotated copies), with its ``clips`` column.

    Returns:
        ``(frame, tests)``: one row per (model, clips) with :data:`CLIP_COLUMNS` (``accuracy`` in 0-1; failures
        count wrong and are also counted in ``failed``), only for models with multi-clip items; and per model
        ``{"odds_ratio", "p_value", "test", "difference"}`` (single minus multi accuracy). Both empty when no model
        answered a multi-clip item.
    """
    if foundation_strict.empty or "clips" not in foundation_strict.columns:
        return pd.DataFrame(columns=list(CLIP_COLUMNS)), {}
    if (foundation_strict["judge"] == "official").any():
        raise ValueError("clip_accuracy reads the strict Foundation frame (foundation_frame('strict'))")
    frame = foundation_strict.assign(
        kind=np.where(foundation_strict["clips"].fillna(1).astype(int) > 1, CLIP_KINDS[1], CLIP_KINDS[0])
    )
    rows: list[dict[str, Any]] = []
    tests: dict[str, Any] = {}
    for model, group in frame.groupby("model", sort=True):
        if not (group["kind"] == CLIP_KINDS[1]).any():
            continue
        counts: dict[str, tuple[int, int]] = {}
        for kind in CLIP_KINDS:
            sub = group[group["kind"] == kind]
            n, right = len(sub), int(sub["correct"].fillna(False).astype(bool).sum())
            low, high = wilson(right, n) if n else (math.nan, math.nan)
            counts[kind] = (right, n)
            rows.append(
                {
                    "model": str(model),
                    "clips": kind,
                    "n": n,
                    "correct": right,
                    "failed": int(sub["failed"].sum()),
                    "accuracy": right / n if n else math.nan,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
        (r1, n1), (r2, n2) = counts[CLIP_KINDS[0]], counts[CLIP_KINDS[1]]
        if n1 and n2:
            odds, p = stats.fisher_exact([[r1, n1 - r1], [r2, n2 - r2]])
            tests[str(model)] = {
                "odds_ratio": plain(odds),
                "p_value": plain(p),
                "difference": r1 / n1 - r2 / n2,
                "test": CLIP_TEST,
                "interval": WILSON,
            }
    return pd.DataFrame(rows, columns=list(CLIP_COLUMNS)), tests


def turn_scores(results: Mapping[str, RunScores], protocol: str, chat_judges: list[str] | None = None) -> pd.DataFrame:
    """Chat scores per turn of the multi-turn tasks, per model and Chat judge, from the score tables.

    Args:
        results: :func:`airbench_nb.scoring.score_run_folder`'s results (``{"<model> | chat judge <j>": ...}``).
        protocol: ``strict`` or ``official``.
        chat_judges: Chat judge specs to keep (default all).

    Returns:
        A frame with :data:`TURN_COLUMNS`, ordered by model, judge, task and turn (empty without multi-turn
        items).
    """
    from airbench_nb.analysis.tables import split_key

    rows: list[dict[str, Any]] = []
    for key, result in results.items():
        model, judge = split_key(key, result)
        if chat_judges is not None and judge not in chat_judges:
            continue
        table = getattr(result, protocol)
        chat = table.chat if table is not None else None
        for entry in ((chat.turns if chat is not None else None) or {}).values():
            rows.append(
                {
                    "model": model,
                    "chat_judge": judge,
                    "protocol": protocol,
                    "task": entry.task,
                    "turn": int(entry.turn or 0) + 1,
                    "value": plain(entry.value),
                    "ci_low": plain(entry.ci_low),
                    "ci_high": plain(entry.ci_high),
                    "n": entry.n,
                    "failures": entry.failures,
                    "conversations": entry.conversations,
                }
            )
    frame = pd.DataFrame(rows, columns=list(TURN_COLUMNS))
    return frame.sort_values(["model", "chat_judge", "task", "turn"], ignore_index=True)


def followup_drop(chat_frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per judge and model: how much lower the follow-ups of a conversation score than its first turn.

    Args:
        chat_frame: :meth:`airbench_nb.analysis.data.RunData.chat_frame` (either protocol), with ``turn`` and
            ``turns``.

    Returns:
        ``{judge: {model: {"conversations", "turn_1", "followups", "mean_diff", "p_value", "test"}}}``:
        ``turn_1`` and ``followups`` are the means over the paired conversations, ``mean_diff`` = followups -
        turn 1 (negative: the score falls), p from :data:`DROP_TEST` (None under 2 conversations; 1.0 when every
        difference is zero). Empty without multi-turn items.
    """
    if chat_frame.empty or "turns" not in chat_frame.columns:
        return {}
    rows = chat_frame[(chat_frame["turns"].fillna(1) > 1) & ~chat_frame["failed"]]
    if rows.empty:
        return {}
    per_turn = rows.groupby(["judge", "model", "uid", "turn"], sort=True)["score_model"].mean().reset_index()
    out: dict[str, dict[str, Any]] = {}
    for (judge, model), group in per_turn.groupby(["judge", "model"], sort=True):
        first = group[group["turn"] == 0].set_index("uid")["score_model"]
        later = group[group["turn"] > 0].groupby("uid")["score_model"].mean()
        paired = first.index.intersection(later.index)
        diffs = (later.loc[paired] - first.loc[paired]).to_numpy(float)
        p: float | None = None
        if diffs.size >= 2:
            p = 1.0 if not np.any(diffs) else float(stats.wilcoxon(diffs, zero_method="wilcox").pvalue)
        out.setdefault(str(judge), {})[str(model)] = {
            "conversations": int(diffs.size),
            "turn_1": plain(first.loc[paired].mean()) if diffs.size else None,
            "followups": plain(later.loc[paired].mean()) if diffs.size else None,
            "mean_diff": plain(diffs.mean()) if diffs.size else None,
            "p_value": plain(p),
            "test": DROP_TEST,
        }
    return out
