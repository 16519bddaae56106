"""Per-class metrics of Foundation tasks, as the tiered sound-source benchmark reports them.

For each task whose options form a closed label set, the option TEXTS are the labels: ``y_true`` is the gold text,
``y_pred`` the chosen text, or :data:`NO_ANSWER` when the model chose no option (a failure, or under ``official`` a
letter past the item's options). Metrics come from scikit-learn:

- macro precision, recall and F1 (:func:`sklearn.metrics.precision_recall_fscore_support`, ``average="macro"``
  over the gold labels present, ``zero_division=0``): an unanswered item, or an answer naming a text that is never
  gold, is a false negative of its gold label and a false positive of none;
- macro false-negative rate: the mean over gold labels of ``1 - recall``;
- the confusion matrix (:func:`sklearn.metrics.confusion_matrix`) over ``labels``, every option text that is gold
  or chosen at least once (numbers by value, then text; :func:`label_order`): rows are those labels as gold (a
  chosen text that is never gold has a row of zeros, so the matrix stays square), columns the same labels as
  predicted, then :data:`NO_ANSWER`;
- the top confusions: ``gold -> predicted`` pairs of different option texts, with their count and share of the
  gold label's items (unanswered items are in the matrix, not in this list).

Which tasks (:func:`task_label_sets`): a task is analysed when it has at least two distinct gold labels, at most
:data:`MAX_LABELS` of them, and every gold label is the gold of at least :data:`MIN_SUPPORT` items. Open-ended
options (Speech_Grounding's time intervals, counts or descriptions of AQA items) fail the last rule, since nearly
every gold text is unique. Skipped tasks are listed with the reason, which tells options that never recur across
items (an open label set) from a closed set with too few items. Circular-evaluation copies count once: only
rotation 0 (or unrotated rows) is used.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from airbench_nb.analysis_report import Classification

logger = logging.getLogger(__name__)

NO_ANSWER = "(no answer)"
"""Predicted label of items where no option was chosen."""

MAX_LABELS = 20
"""Most distinct gold labels a task may have to be analysed as a classification."""

MIN_SUPPORT = 2
"""Fewest items each gold label must be the gold of."""

TOP_CONFUSIONS = 5
"""Confusions listed per task."""


@dataclass(frozen=True)
class ClassMetrics:
    """Per-class metrics of one model on one task (or why the task was skipped)."""

    model: str
    """The model spec."""
    task: str
    """The Foundation task."""
    n: int
    """Items of the task (one per original item)."""
    macro_precision: float | None
    """Macro-averaged precision over the gold labels (None when skipped)."""
    macro_recall: float | None
    """Macro-averaged recall over the gold labels (None when skipped)."""
    macro_f1: float | None
    """Macro-averaged F1 over the gold labels (None when skipped)."""
    macro_fnr: float | None
    """Mean over the gold labels of the false-negative rate ``1 - recall`` (None when skipped)."""
    unanswered: int = 0
    """Items where no option was chosen (the :data:`NO_ANSWER` column)."""
    labels: list[str] = field(default_factory=list)
    """Option texts that are gold or chosen at least once, sorted: the rows of ``confusion``."""
    gold_labels: list[str] = field(default_factory=list)
    """The labels that are gold at least once (the classes the macro averages run over)."""
    columns: list[str] = field(default_factory=list)
    """Columns of ``confusion``: ``labels`` then :data:`NO_ANSWER`."""
    confusion: list[list[int]] = field(default_factory=list)
    """Confusion counts, rows = ``labels`` as gold, columns = ``labels`` as predicted + :data:`NO_ANSWER`."""
    per_class: dict[str, dict[str, float | int]] = field(default_factory=dict)
    """Per gold label: precision, recall, f1, fnr and support."""
    top_confusions: list[dict[str, Any]] = field(default_factory=list)
    """Most frequent ``gold -> predicted`` pairs of different texts: gold, predicted, count, share (of gold)."""
    reason: str | None = None
    """Why the task was skipped, or None."""

    def as_dict(self) -> dict[str, Any]:
        """Serializer: a JSON-ready dict."""
        return asdict(self)

    def payload(self) -> Classification:
        """The result as ``analysis.json`` holds it (``classification[model][task]``)."""
        return Classification.from_data(self.as_dict())


def label_order(label: str) -> tuple[int, float, str]:
    """Sort key of labels: numbers by value ("20" before "100"), then text alphabetically."""
    try:
        return (0, float(label), label)
    except ValueError:
        return (1, 0.0, label.casefold())


def _originals(frame: pd.DataFrame) -> pd.DataFrame:
    if "rotation" not in frame.columns or frame.empty:
        return frame
    rotation = frame["rotation"]
    return frame[rotation.isna() | rotation.eq(0).fillna(False).astype(bool)]


def _gold_text(frame: pd.DataFrame) -> pd.Series:
    return pd.Series(
        [choices[gold] for choices, gold in zip(frame["choices"], frame["gold"], strict=True)],
        index=frame.index,
        dtype=object,
    )


def task_label_sets(
    frame: pd.DataFrame, max_labels: int = MAX_LABELS, min_support: int = MIN_SUPPORT
) -> dict[str, str | None]:
    """Decide which tasks are closed-label classifications (see the module docstring for the rule).

    Args:
        frame: A Foundation frame.
        max_labels: Most distinct gold labels allowed.
        min_support: Fewest items per gold label.

    Returns:
        ``{task: None}`` for a task to analyse, ``{task: reason}`` for a skipped one, sorted by task.
    """
    rows = _originals(frame)
    if rows.empty:
        return {}
    items = rows.drop_duplicates("uid")
    out: dict[str, str | None] = {}
    for task, group in items.groupby("task", sort=True):
        support = _gold_text(group).value_counts()
        if len(support) < 2:
            out[str(task)] = f"only {len(support)} distinct gold label"
        elif len(support) > max_labels:
            out[str(task)] = f"{len(support)} distinct gold labels (more than {max_labels}): not a closed label set"
        elif support.min() < min_support:
            rare = int((support < min_support).sum())
            texts = pd.Series([t for choices in group["choices"] for t in set(choices)]).value_counts()
            why = (
                "option texts never recur across items: not a closed label set"
                if len(group) > 1 and texts.max() < 2
                else f"too few items ({len(group)})"
            )
            out[str(task)] = (
                f"{rare} of {len(support)} gold labels are the gold of fewer than {min_support} items: {why}"
            )
        else:
            out[str(task)] = None
    return out


def _metrics(model: str, task: str, rows: pd.DataFrame, top: int) -> ClassMetrics:
    y_true = _gold_text(rows).tolist()
    y_pred = [NO_ANSWER if pd.isna(t) else str(t) for t in rows["chosen_text"]]
    gold_labels = sorted(set(y_true), key=label_order)
    labels = sorted(set(y_true) | {p for p in y_pred if p != NO_ANSWER}, key=label_order)
    columns = labels + [NO_ANSWER]
    # scikit-learn given each label's index in ``columns``: the same metrics, without sorting strings
    code = {label: k for k, label in enumerate(columns)}
    true_codes = np.array([code[t] for t in y_true], dtype=np.int64)
    pred_codes = np.array([code[p] for p in y_pred], dtype=np.int64)
    gold_codes = [code[g] for g in gold_labels]
    precision, recall, f1, _ = precision_recall_fscore_support(
        true_codes, pred_codes, labels=gold_codes, average="macro", zero_division=0
    )
    p_each, r_each, f_each, support = precision_recall_fscore_support(
        true_codes, pred_codes, labels=gold_codes, average=None, zero_division=0
    )
    matrix = confusion_matrix(true_codes, pred_codes, labels=list(range(len(columns))))[: len(labels)]
    row = {label: i for i, label in enumerate(labels)}
    per_class = {
        label: {
            "precision": float(p_each[i]),
            "recall": float(r_each[i]),
            "f1": float(f_each[i]),
            "fnr": float(1.0 - r_each[i]),
            "support": int(support[i]),
        }
        for i, label in enumerate(gold_labels)
    }
    confusions = [
        {
            "gold": gold,
            "predicted": predicted,
            "count": int(matrix[row[gold], j]),
            "share": float(matrix[row[gold], j] / support[i]),
        }
        for i, gold in enumerate(gold_labels)
        for j, predicted in enumerate(labels)
        if predicted != gold and matrix[row[gold], j] > 0
    ]
    confusions.sort(key=lambda c: (-c["count"], -c["share"], c["gold"], c["predicted"]))
    return ClassMetrics(
        model=model,
        task=task,
        n=len(rows),
        macro_precision=float(precision),
        macro_recall=float(recall),
        macro_f1=float(f1),
        macro_fnr=float(sum(1.0 - r for r in r_each) / len(gold_labels)),
        unanswered=y_pred.count(NO_ANSWER),
        labels=labels,
        gold_labels=gold_labels,
        columns=columns,
        confusion=[[int(v) for v in row] for row in matrix],
        per_class=per_class,
        top_confusions=confusions[:top],
    )


def classification(
    frame: pd.DataFrame,
    max_labels: int = MAX_LABELS,
    min_support: int = MIN_SUPPORT,
    top: int = TOP_CONFUSIONS,
) -> dict[str, dict[str, ClassMetrics]]:
    """Per-class metrics for every closed-label Foundation task, per model.

    Args:
        frame: A Foundation frame (either protocol: unanswered items are the :data:`NO_ANSWER` prediction).
        max_labels: Most distinct gold labels a task may have.
        min_support: Fewest items per gold label.
        top: Confusions listed per task.

    Returns:
        ``{model: {task: ClassMetrics}}`` for every task of the frame; a skipped task has None metrics and a
        ``reason``. An empty frame gives an empty dict.
    """
    rows = _originals(frame)
    if rows.empty:
        logger.info("classification: empty frame, nothing to analyse")
        return {}
    eligible = task_label_sets(rows, max_labels=max_labels, min_support=min_support)
    out: dict[str, dict[str, ClassMetrics]] = {}
    for (model, task), group in rows.groupby(["model", "task"], sort=True):
        reason = eligible.get(str(task))
        if reason is None:
            result = _metrics(str(model), str(task), group, top)
        else:
            result = ClassMetrics(
                model=str(model),
                task=str(task),
                n=len(group),
                macro_precision=None,
                macro_recall=None,
                macro_f1=None,
                macro_fnr=None,
                reason=reason,
            )
        out.setdefault(str(model), {})[str(task)] = result
    skipped = sorted(t for t, r in eligible.items() if r)
    if skipped:
        logger.info("classification: skipped %d task(s): %s", len(skipped), ", ".join(skipped))
    return out


def classification_frame(results: Mapping[str, Mapping[str, ClassMetrics]], skipped: bool = False) -> pd.DataFrame:
    """A tidy frame: one row per (model, task) with the macro metrics.

    Args:
        results: The output of :func:`classification`.
        skipped: Keep skipped tasks (NaN metrics, with their ``reason``).

    Returns:
        Columns ``model, task, macro_precision, macro_recall, macro_f1, macro_fnr, n, unanswered, reason``.
    """
    columns = [
        "model",
        "task",
        "macro_precision",
        "macro_recall",
        "macro_f1",
        "macro_fnr",
        "n",
        "unanswered",
        "reason",
    ]
    rows = [
        {c: getattr(m, c) for c in columns}
        for by_task in results.values()
        for m in by_task.values()
        if skipped or m.reason is None
    ]
    out = pd.DataFrame(rows, columns=columns)
    for column in ("macro_precision", "macro_recall", "macro_f1", "macro_fnr"):
        out[column] = out[column].astype(float)
    return out


def confusion_frame(metrics: ClassMetrics) -> pd.DataFrame:
    """The confusion matrix of one (model, task) as a labelled frame, for a heatmap.

    Args:
        metrics: One entry of :func:`classification`'s output.

    Returns:
        Rows indexed by gold label (``gold``), columns by predicted label (``predicted``); empty for a skipped task.
    """
    out = pd.DataFrame(
        metrics.confusion,
        index=pd.Index(metrics.labels, name="gold"),
        columns=pd.Index(metrics.columns, name="predicted"),
        dtype=int,
    )
    return out
