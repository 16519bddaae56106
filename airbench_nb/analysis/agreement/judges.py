"""Judge decisions on the pairs of a sample, votes against the annotators, and the majority label.

The judge rules are in the :mod:`airbench_nb.analysis.agreement` docstring.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd

from airbench_nb.analysis.agreement.constants import (
    DECISION_COLUMNS,
    MODEL,
    OFFICIAL_JUDGE,
    REFERENCE,
    STRICT_JUDGE,
    TIE,
    UNCLEAR,
    VOTE_COLUMNS,
)
from airbench_nb.records import LETTERS, AnnotationPair, FoundationItem

logger = logging.getLogger(__name__)


def _foundation_decisions(
    run: Any, pairs: Sequence[AnnotationPair], judges: Sequence[str] | None
) -> list[dict[str, Any]]:
    from airbench_nb.scoring import foundation_verdicts

    rows: list[dict[str, Any]] = []
    wanted: dict[str, dict[str, AnnotationPair]] = {}
    for pair in pairs:
        item = run.items.get(pair.uid)
        if pair.kind == "foundation" and item is not None and item.kind == pair.kind:  # the run's item is the pair's
            wanted.setdefault(pair.model, {})[pair.uid] = pair

    def add(judge: str, pair: AnnotationPair, choice: int | None, detail: str) -> None:
        decision = UNCLEAR if choice is None else (LETTERS[choice] if choice < len(LETTERS) else f"#{choice}")
        rows.append(
            {
                "judge": judge,
                "pair_id": pair.pair_id,
                "kind": "foundation",
                "category": pair.category,
                "decision": decision,
                "detail": detail,
            }
        )

    def text(item: FoundationItem, choice: int | None, judge: str) -> str:
        if choice is None:
            return f"{judge} abstained"
        return item.choices[choice] if choice < len(item.choices) else "a letter past the options"

    several = False
    for model, by_uid in sorted(wanted.items()):
        current = [v for v in run.current_verdicts(model) if v.order == "single" and v.uid in by_uid]
        latest = {(v.judge, v.uid): v for v in current}
        present = sorted({j for j, _ in latest})
        several = several or len(present) > 1
        for (judge, uid), verdict in sorted(latest.items()):
            if judges is None or judge in judges:
                add(judge, by_uid[uid], verdict.choice, text(run.items[uid], verdict.choice, judge))
        if len(present) > 1 and (judges is None or STRICT_JUDGE in judges):
            for uid, verdict in sorted(foundation_verdicts(current, set(by_uid), None).items()):
                item = run.items[uid]
                add(STRICT_JUDGE, by_uid[uid], verdict.choice, f"{verdict.judge}: {text(item, verdict.choice, 'all')}")
    if wanted and (judges is None or OFFICIAL_JUDGE in judges):
        frame = run.foundation_frame("official")
        frame = frame[frame["model"].isin(list(wanted))]
        for model, uid, chosen, reason in zip(
            frame["model"], frame["uid"], frame["chosen"], frame["reason"], strict=True
        ):
            pair = wanted[model].get(uid)
            if pair is None:
                continue
            choice = None if pd.isna(chosen) else int(chosen)
            detail = text(run.items[uid], choice, "official") if choice is not None else f"unread: {reason}"
            add(OFFICIAL_JUDGE, pair, choice, detail)
    if not several:
        logger.info("one Foundation judge: %s not reported (it would repeat that judge)", STRICT_JUDGE)
    return rows


def _chat_decisions(run: Any, pairs: Sequence[AnnotationPair], judges: Sequence[str] | None) -> list[dict[str, Any]]:
    wanted = {(p.model, p.uid): p for p in pairs if p.kind == "chat"}
    if not wanted:
        return []
    frame = run.chat_frame("strict")
    if frame.empty:
        return []
    keys = pd.Series(list(zip(frame["model"], frame["uid"], strict=True)), index=frame.index)
    frame = frame[keys.isin(set(wanted)) & ~frame["failed"]]
    if "turn" in frame.columns:  # an annotation pair shows a conversation's first turn: its verdicts decide
        frame = frame[frame["turn"].fillna(0) == 0]
    if judges is not None:
        frame = frame[frame["judge"].isin(list(judges))]
    rows: list[dict[str, Any]] = []
    for (judge, model, uid), group in frame.groupby(["judge", "model", "uid"], sort=True):
        if group["order"].nunique() < 2:
            continue  # a score in one order only: not decided
        group = group.drop_duplicates("order", keep="last")
        model_mean = float(group["score_model"].mean())
        reference_mean = float(group["score_reference"].mean())
        decision = MODEL if model_mean > reference_mean else REFERENCE if model_mean < reference_mean else TIE
        pair = wanted[(model, uid)]
        rows.append(
            {
                "judge": str(judge),
                "pair_id": pair.pair_id,
                "kind": "chat",
                "category": pair.category,
                "decision": decision,
                "detail": f"model {model_mean:g} vs reference {reference_mean:g} (mean of both orders)",
            }
        )
    return rows


def judge_decisions(run: Any, pairs: Sequence[AnnotationPair], judges: Sequence[str] | None = None) -> pd.DataFrame:
    """What each judge decided on each pair of the sample (see the module docstring).

    Args:
        run: :class:`airbench_nb.analysis.data.RunData` of the run the sample was drawn from.
        pairs: The sample.
        judges: Judge specs to keep, pseudo-judges included (default all).

    Returns:
        One row per (judge, decided pair), :data:`DECISION_COLUMNS`: ``decision`` is a letter or ``unclear``
        (Foundation) or ``model`` / ``reference`` / ``tie`` (Chat); ``detail`` says why in words.
    """
    rows = _foundation_decisions(run, pairs, judges) + _chat_decisions(run, pairs, judges)
    return pd.DataFrame(rows, columns=list(DECISION_COLUMNS))


def majority_label(labels: Sequence[str]) -> str | None:
    """The unique most frequent label, or None when two or more labels tie for the most (or there is none)."""
    top = Counter(labels).most_common()
    if not top or (len(top) > 1 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def votes(decisions: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Every (judge, pair, annotator) where both the judge and the annotator decided, with ``agree``.

    Args:
        decisions: :func:`judge_decisions`.
        labels: :func:`resolve_labels`.

    Returns:
        :data:`VOTE_COLUMNS`, sorted by judge, pair and annotator.
    """
    if decisions.empty or labels.empty:
        return pd.DataFrame(columns=list(VOTE_COLUMNS)).astype({"agree": bool})
    joined = decisions.merge(labels[["pair_id", "annotator", "label"]], on="pair_id", how="inner")
    joined = joined.rename(columns={"decision": "judge_label", "label": "human_label"})
    joined["agree"] = joined["judge_label"] == joined["human_label"]
    return joined[list(VOTE_COLUMNS)].sort_values(["judge", "pair_id", "annotator"], ignore_index=True)
