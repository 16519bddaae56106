"""Display tables of an agreement result: disagreements, the figure-ready frame and the per-category frame."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from airbench_nb.analysis.agreement.constants import (
    CATEGORY_COLUMNS,
    DISAGREEMENT_COLUMNS,
    FRAME_COLUMNS,
    HUMANS,
    KINDS,
    SUFFIX,
)
from airbench_nb.analysis.agreement.judges import majority_label, votes
from airbench_nb.records import LETTERS, AnnotationPair


def _shown_label(label: str, pair: AnnotationPair) -> str:
    if pair.kind == "foundation" and len(label) == 1 and label in LETTERS and LETTERS.index(label) < len(pair.choices):
        return f"{label} ({pair.choices[LETTERS.index(label)]})"
    return label


def disagreements(decisions: pd.DataFrame, labels: pd.DataFrame, pairs: Sequence[AnnotationPair]) -> pd.DataFrame:
    """The (judge, pair) cases where the judge's decision differs from at least one annotator's label.

    Args:
        decisions: :func:`judge_decisions`.
        labels: :func:`resolve_labels`.
        pairs: The sample (for question, answer and audio).

    Returns:
        :data:`DISAGREEMENT_COLUMNS`: ``human_labels`` is ``"annotator: label; ..."`` (Foundation letters with
        their option text), ``majority`` the majority label or None, ``humans_agreeing`` ``"k/m"``, ``answer`` the
        model's answer (Foundation response, or the model's shown Chat answer), ``audio`` the absolute path
        (``data_root/audio``) for a player.
    """
    table = votes(decisions, labels)
    by_id = {p.pair_id: p for p in pairs}
    rows = []
    details = decisions.set_index(["judge", "pair_id"])["detail"] if not decisions.empty else pd.Series(dtype=object)
    for (judge, pair_id), group in table.groupby(["judge", "pair_id"], sort=True):
        if group["agree"].all():
            continue
        pair = by_id[pair_id]
        humans = group["human_label"].tolist()
        answer = pair.response if pair.kind == "foundation" else pair.answers[(pair.model_answer or 1) - 1]
        majority = majority_label(humans)
        rows.append(
            {
                "judge": judge,
                "kind": pair.kind,
                "pair_id": pair_id,
                "uid": pair.uid,
                "model": pair.model,
                "task": pair.task,
                "category": pair.category,
                "judge_decision": _shown_label(str(group["judge_label"].iloc[0]), pair),
                "judge_detail": details.get((judge, pair_id)),
                "human_labels": "; ".join(
                    f"{a}: {_shown_label(h, pair)}" for a, h in zip(group["annotator"], humans, strict=True)
                ),
                "majority": majority,
                "humans_agreeing": f"{int(group['agree'].sum())}/{len(group)}",
                "question": pair.question,
                "answer": answer,
                "audio": str(Path(pair.data_root) / pair.audio),
            }
        )
    out = pd.DataFrame(rows, columns=list(DISAGREEMENT_COLUMNS))
    return out.sort_values(["judge", "kind", "category", "task", "pair_id"], ignore_index=True)


MEASURES: tuple[tuple[str, str, str, str], ...] = (
    ("foundation", "", "agreement", "Foundation"),
    ("foundation", "_clear", "agreement_clear", "Foundation, without unclear"),
    ("chat", "", "agreement", "Chat, ties a class"),
    ("chat", "_no_ties", "agreement_no_ties", "Chat, without ties"),
)
"""Rows of :func:`agreement_frame` per judge: (kind, key suffix, measure, label)."""


def agreement_frame(result: Mapping[str, Any], secondary_foundation: bool = False) -> pd.DataFrame:
    """Figure-ready agreement: one row per judge and measure (and the human-human reference), with 95% CIs.

    Args:
        result: :func:`agreement` (or its JSON read back).
        secondary_foundation: Also give Foundation without unclear labels.

    Returns:
        :data:`FRAME_COLUMNS`: ``measure`` is ``agreement`` or ``agreement_no_ties`` / ``agreement_clear``,
        ``label`` its caption; judges in result order, then :data:`HUMANS` (pairwise human agreement) when there
        are two or more annotators.
    """
    rows = []

    def add(judge: str, kind: str, measure: str, label: str, n: Any, value: Any, low: Any, high: Any) -> None:
        rows.append(
            {
                "judge": judge,
                "kind": kind,
                "measure": measure,
                "label": label,
                "n": n,
                "agreement": value,
                "ci_low": low,
                "ci_high": high,
            }
        )

    for kind, suffix, measure, label in MEASURES:
        if suffix == "_clear" and not secondary_foundation:
            continue
        for judge, blocks in result.get("judges", {}).items():
            block = blocks.get(kind)
            if block and block.get(f"n{suffix}"):
                add(
                    judge,
                    kind,
                    measure,
                    label,
                    block[f"n{suffix}"],
                    block[f"agreement{suffix}"],
                    block[f"ci_low{suffix}"],
                    block[f"ci_high{suffix}"],
                )
        block = result.get("inter_annotator", {}).get(kind)
        if block and block.get(f"n_comparisons{suffix}"):
            add(
                HUMANS,
                kind,
                measure,
                label,
                block[f"n_comparisons{suffix}"],
                block[f"pairwise_agreement{suffix}"],
                block[f"pairwise_ci_low{suffix}"],
                block[f"pairwise_ci_high{suffix}"],
            )
    out = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    for column in ("agreement", "ci_low", "ci_high"):
        out[column] = out[column].astype(float)
    out["n"] = out["n"].astype(int)
    return out


def category_frame(result: Mapping[str, Any]) -> pd.DataFrame:
    """Judge-human agreement per judge, kind and category (the ``by_category`` blocks), for display.

    Args:
        result: :func:`agreement` (or its JSON read back).

    Returns:
        :data:`CATEGORY_COLUMNS`; ``*_secondary`` is without ties (Chat) or without unclear (Foundation).
    """
    rows = []
    for judge, blocks in result.get("judges", {}).items():
        for kind in KINDS:
            for category, block in (blocks.get(kind) or {}).get("by_category", {}).items():
                suffix = SUFFIX[kind]
                rows.append(
                    {
                        "judge": judge,
                        "kind": kind,
                        "category": category,
                        "n": block["n"],
                        "agreement": block["agreement"],
                        "ci_low": block["ci_low"],
                        "ci_high": block["ci_high"],
                        "n_secondary": block[f"n{suffix}"],
                        "agreement_secondary": block[f"agreement{suffix}"],
                    }
                )
    out = pd.DataFrame(rows, columns=list(CATEGORY_COLUMNS))
    for column in ("agreement", "ci_low", "ci_high", "agreement_secondary"):
        out[column] = out[column].astype(float)
    return out
