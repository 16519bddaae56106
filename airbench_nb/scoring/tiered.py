"""Metrics of the tiered sound-source benchmark (Abdoli et al.): every metric at both granularities, per tier.

The rules, stated once:

- **Hierarchy.** A :class:`Hierarchy` maps every fine class to its coarse category (a plain ``dict[str, str]`` is
  accepted everywhere). A fine prediction implies its coarse category: gold coarse = ``hierarchy[gold fine]``,
  predicted coarse = ``hierarchy[predicted fine]``. The label list of a granularity is the hierarchy's full list of
  classes (fine) or categories (coarse), in the hierarchy's order.
- **Unanswered items.** A prediction that is None, empty, or names no class of the hierarchy is an unanswered
  item: it is given the label :data:`NO_ANSWER`, which lies outside the label set, so it is a false negative of
  its gold class and a false positive of none. Predictions naming an unknown class are counted apart
  (:attr:`GranularityMetrics.outside_label_set`) and logged.
- **Macro metrics** (tiers A, B, C): :func:`sklearn.metrics.precision_recall_fscore_support` with ``labels=`` the
  full label list of the granularity and ``zero_division=0``, ``average=None``, then the unweighted mean over the
  labels. A class never predicted has precision 0 and still counts in the mean; a class with no gold item has
  recall 0 and also counts (it is listed in :attr:`GranularityMetrics.classes_without_items`, with a warning).
  Macro FNR is the mean over labels of ``1 - recall`` (= ``1 - macro recall``).
- **Top-k recall** (ranked tiers B and C, k in :data:`TOP_K`): fine, the share of a class's items whose gold class
  is among the first k of the ranked list; coarse, the ranked list is mapped to categories and deduplicated in
  order (the first occurrence of each category keeps its place), and the gold category must be among the first
  k categories of that list. Both are macro averages over the same labels as the macro metrics, so top-1 recall
  equals the macro recall of the first-ranked class. Ranked entries that name no class are dropped.
- **Confusion matrices**: counts and row-normalised shares, rows the gold labels, columns the labels then
  :data:`NO_ANSWER`; a row with no gold item is all NaN when normalised.
- **Coarse-to-fine F1 drop**: ``coarse macro F1 - fine macro F1`` per system (positive: the fine task is harder).
- **Tier D** (open vocabulary): per item only a hit or miss on the category and on the subclass, judged by an
  LLM (or the offline rule judge). Recall per class is the hit rate of its items; macro recall and FNR as above. A
  subclass hit implies a category hit. An answer may name any number of classes, so recall alone rewards naming
  them all: when the names each answer gives are known (``named``: what the ``sources`` rule reads in it), precision
  stands beside recall, per class the share of the answers naming the class whose gold class it is (a category is
  named by its own name or by naming one of its classes; a class never named has precision 0, as in the macro
  metrics above), and :attr:`GranularityMetrics.named_share` is the mean over answers of the share of the labels
  each names (1.0: every answer names every class). There is no single predicted class, so no confusion matrix and
  no F1 (:data:`TIER_D_NAMED_REASON`); without ``named``, precision is None too (:data:`TIER_D_REASON`).

Systems of different tiers received the task differently; the results carry their tier so that tables are made
per tier (:func:`tiers_json`), never one mixed ranking.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

logger = logging.getLogger(__name__)

NO_ANSWER = "(no answer)"
"""Label of unanswered items (no prediction, or one naming no class): outside every label set."""

TOP_K: tuple[int, ...] = (1, 3, 5)
"""The k of top-k recall for ranked systems."""

TIERS: tuple[str, ...] = ("A", "B", "C", "D")
"""The tiers: A LALMs choosing a letter, B AudioSet taggers mapped to the classes, C zero-shot CLAP, D open
vocabulary."""

RANKED_TIERS: frozenset[str] = frozenset({"B", "C"})
"""Tiers whose systems give a ranked list of classes per item."""

TIER_D_REASON = (
    "n/a: open-vocabulary answers are judged hit or miss per item; with no predicted class there are no false "
    "positives, so no precision or F1"
)
"""Why Tier D has no precision and F1 when the names each answer gives are unknown."""

TIER_D_NAMED_REASON = (
    "n/a: open-vocabulary answers are judged hit or miss per item (recall); an answer may name several classes, so "
    "precision counts the answers naming a class that is not theirs, and there is no F1 or confusion matrix"
)
"""Why Tier D has no F1 (its precision comes from the names each answer gives)."""

NOT_RANKED_REASON = "n/a: the system gives one answer per item, not a ranked list"
"""Why a system has no top-k recall."""

Granularity = Literal["coarse", "fine"]
"""The two granularities: coarse categories and fine classes."""


@dataclass(frozen=True)
class Hierarchy:
    """The class hierarchy: every fine class and its coarse category."""

    fine_to_coarse: dict[str, str]
    """Fine class -> coarse category, in the order the classes are listed."""

    def __post_init__(self) -> None:
        if not self.fine_to_coarse:
            raise ValueError("hierarchy is empty: give at least one fine class -> coarse category")
        for fine, coarse in self.fine_to_coarse.items():
            for what, value in (("fine class", fine), (f"coarse category of {fine!r}", coarse)):
                if not isinstance(value, str) or not value.strip():
                    raise ValueError(f"hierarchy: {what} must be a non-empty string, got {value!r}")
                if value == NO_ANSWER:
                    raise ValueError(f"hierarchy: {what} may not be {NO_ANSWER!r}, the label of unanswered items")

    @classmethod
    def of(cls, hierarchy: Hierarchy | Mapping[str, str]) -> Hierarchy:
        """A :class:`Hierarchy` from itself or from a ``fine -> coarse`` mapping."""
        return hierarchy if isinstance(hierarchy, Hierarchy) else cls(dict(hierarchy))

    @property
    def fine(self) -> list[str]:
        """The fine classes, in order."""
        return list(self.fine_to_coarse)

    @property
    def coarse(self) -> list[str]:
        """The coarse categories, in order of first appearance."""
        return list(dict.fromkeys(self.fine_to_coarse.values()))

    def labels(self, granularity: Granularity) -> list[str]:
        """The label list of a granularity."""
        return self.coarse if granularity == "coarse" else self.fine

    def coarse_of(self, fine: str | None) -> str | None:
        """The category of a fine class; None for None or a string that is no class."""
        return None if fine is None else self.fine_to_coarse.get(fine)


@dataclass(frozen=True)
class ClassScore:
    """Metrics of one class (fine) or category (coarse)."""

    precision: float | None
    """Precision (Tier D: of the answers naming the class, the share whose gold it is; None without names)."""
    recall: float
    """Recall: the share of the class's items predicted (or, in Tier D, hit) as the class; 0 without items."""
    f1: float | None
    """F1 (None in Tier D)."""
    fnr: float
    """False-negative rate ``1 - recall``."""
    support: int
    """Items whose gold label is the class."""


@dataclass(frozen=True)
class GranularityMetrics:
    """One system's metrics at one granularity."""

    granularity: Granularity
    """``coarse`` or ``fine``."""
    labels: list[str]
    """The label list the macro averages run over (the hierarchy's full list at this granularity)."""
    n: int
    """Items scored."""
    macro_precision: float | None
    """Mean precision over ``labels`` (None in Tier D without the names each answer gives: see ``reason``)."""
    macro_recall: float
    """Mean recall over ``labels``."""
    macro_f1: float | None
    """Mean F1 over ``labels`` (None in Tier D: see ``reason``)."""
    macro_fnr: float
    """Mean false-negative rate over ``labels`` (``1 - macro_recall``)."""
    per_class: dict[str, ClassScore]
    """Per label: precision, recall, F1, FNR and support."""
    unanswered: int = 0
    """Items labelled :data:`NO_ANSWER` (no prediction, or one naming no class)."""
    outside_label_set: int = 0
    """Of ``unanswered``, the predictions that named a string that is no class."""
    classes_without_items: list[str] = field(default_factory=list)
    """Labels with no gold item: their recall is 0 and still counts in the macro averages."""
    confusion: list[list[int]] | None = None
    """Counts, rows ``labels`` as gold, columns ``labels`` then :data:`NO_ANSWER`; None in Tier D."""
    top_k: dict[int, float] = field(default_factory=dict)
    """Macro top-k recall per k (ranked systems only; empty otherwise)."""
    reason: str | None = None
    """Why precision and F1 are n/a, or None."""
    named_share: float | None = None
    """Tier D: the mean over answers of the share of ``labels`` each answer names (1.0: every answer names every
    label; recall is then 1.0 whatever the model heard); None for the closed-set tiers or without names."""

    @property
    def columns(self) -> list[str]:
        """Columns of ``confusion``: the labels, then :data:`NO_ANSWER`."""
        return [*self.labels, NO_ANSWER]

    def confusion_frame(self, normalise: bool = True) -> pd.DataFrame:
        """The confusion matrix as a labelled frame (rows ``gold``, columns ``predicted``).

        Args:
            normalise: Divide each row by its gold count (rows sum to 1; a row without items is NaN).

        Returns:
            The frame; empty in Tier D (no confusion matrix).
        """
        if self.confusion is None:
            return pd.DataFrame(index=pd.Index([], name="gold"), columns=pd.Index([], name="predicted"))
        counts = np.asarray(self.confusion, dtype=float)
        if normalise:
            totals = counts.sum(axis=1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                counts = np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0), np.nan)
        return pd.DataFrame(
            counts if normalise else counts.astype(int),
            index=pd.Index(self.labels, name="gold"),
            columns=pd.Index(self.columns, name="predicted"),
        )

    def to_json(self) -> dict[str, Any]:
        """``{macro_precision, macro_recall, macro_f1, macro_fnr, n}`` plus unanswered, top_k and a reason when n/a."""
        out: dict[str, Any] = {
            "macro_precision": _plain(self.macro_precision),
            "macro_recall": _plain(self.macro_recall),
            "macro_f1": _plain(self.macro_f1),
            "macro_fnr": _plain(self.macro_fnr),
            "n": self.n,
            "unanswered": self.unanswered,
            "top_k": {str(k): _plain(v) for k, v in self.top_k.items()},
        }
        if self.reason:
            out["reason"] = self.reason
        if self.named_share is not None:
            out["named_share"] = _plain(self.named_share)
        if self.classes_without_items:
            out["classes_without_items"] = list(self.classes_without_items)
        return out


@dataclass(frozen=True)
class SystemMetrics:
    """One system's metrics at both granularities."""

    system: str
    """The system (model spec)."""
    tier: str
    """Its tier, one of :data:`TIERS`."""
    coarse: GranularityMetrics
    """Metrics over the coarse categories."""
    fine: GranularityMetrics
    """Metrics over the fine classes."""

    @property
    def f1_drop(self) -> float | None:
        """Coarse macro F1 minus fine macro F1 (None in Tier D)."""
        if self.coarse.macro_f1 is None or self.fine.macro_f1 is None:
            return None
        return self.coarse.macro_f1 - self.fine.macro_f1

    @property
    def ranked(self) -> bool:
        """Whether top-k recall was computed."""
        return bool(self.fine.top_k)

    def to_json(self) -> dict[str, Any]:
        """``{coarse: {...}, fine: {...}, top_k: {"1", "3", "5"}}`` (top_k of the fine classes), as issue 21 asks.

        ``top_k`` is empty with ``top_k_reason`` for a system that gives one answer per item.
        """
        out: dict[str, Any] = {
            "tier": self.tier,
            "coarse": self.coarse.to_json(),
            "fine": self.fine.to_json(),
            "top_k": {str(k): _plain(v) for k, v in self.fine.top_k.items()},
            "f1_drop": _plain(self.f1_drop),
        }
        if not self.fine.top_k:
            out["top_k_reason"] = NOT_RANKED_REASON
        return out


def _plain(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _check_tier(tier: str) -> str:
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {', '.join(TIERS)}, got {tier!r}")
    return tier


def _check_gold(hierarchy: Hierarchy, gold: Sequence[str]) -> None:
    unknown = [(i, g) for i, g in enumerate(gold) if g not in hierarchy.fine_to_coarse]
    if unknown:
        i, g = unknown[0]
        raise ValueError(
            f"gold label {g!r} of item {i} is no fine class of the hierarchy ({len(unknown)} item(s) in all); "
            f"classes: {', '.join(hierarchy.fine)}"
        )


def _without_items(labels: Sequence[str], y_true: Sequence[str], system: str, granularity: str) -> list[str]:
    present = set(y_true)
    missing = [label for label in labels if label not in present]
    if missing:
        logger.warning(
            "%s (%s): %d label(s) have no gold item and count as recall 0 in the macro averages: %s",
            system,
            granularity,
            len(missing),
            ", ".join(missing),
        )
    return missing


def _top_k(
    labels: Sequence[str], y_true: Sequence[str], ranked: Sequence[Sequence[str]], ks: Sequence[int]
) -> dict[int, float]:
    out = {}
    for k in ks:
        per_class = []
        for label in labels:
            rows = [r for t, r in zip(y_true, ranked, strict=True) if t == label]
            per_class.append(sum(label in r[:k] for r in rows) / len(rows) if rows else 0.0)
        out[int(k)] = float(np.mean(per_class))
    return out


def _closed_set(
    system: str,
    granularity: Granularity,
    labels: list[str],
    y_true: list[str],
    y_pred: list[str],
    outside: int,
    ranked: list[list[str]] | None,
    ks: Sequence[int],
) -> GranularityMetrics:
    precision, recall, f1, support = precision_recall_fscore_support(
        y_true, y_pred, labels=labels, average=None, zero_division=0
    )
    matrix = confusion_matrix(y_true, y_pred, labels=[*labels, NO_ANSWER])[: len(labels)]
    per_class = {
        label: ClassScore(
            precision=float(precision[i]),
            recall=float(recall[i]),
            f1=float(f1[i]),
            fnr=float(1.0 - recall[i]),
            support=int(support[i]),
        )
        for i, label in enumerate(labels)
    }
    return GranularityMetrics(
        granularity=granularity,
        labels=list(labels),
        n=len(y_true),
        macro_precision=float(np.mean(precision)),
        macro_recall=float(np.mean(recall)),
        macro_f1=float(np.mean(f1)),
        macro_fnr=float(np.mean(1.0 - recall)),
        per_class=per_class,
        unanswered=y_pred.count(NO_ANSWER),
        outside_label_set=outside,
        classes_without_items=_without_items(labels, y_true, system, granularity),
        confusion=[[int(v) for v in row] for row in matrix],
        top_k=_top_k(labels, y_true, ranked, ks) if ranked is not None else {},
    )


def _dedup(values: Iterable[str | None]) -> list[str]:
    return [v for v in dict.fromkeys(values) if v is not None]


def _taken(predicted: Sequence[str | None], fine_ranked: Sequence[Sequence[str]] | None) -> list[str | None]:
    """The predictions, a ranked system's None taking the first class of its (deduplicated) ranking."""
    if fine_ranked is None:
        return list(predicted)
    return [p if p is not None else (row[0] if row else None) for p, row in zip(predicted, fine_ranked, strict=True)]


def closed_predictions(
    hierarchy: Hierarchy | Mapping[str, str],
    predicted: Sequence[str | None],
    ranked: Sequence[Sequence[str]] | None = None,
) -> tuple[list[str], list[str]]:
    """Each item's fine and coarse prediction as :func:`score_closed_set` reads them (:data:`NO_ANSWER` for none).

    A ranked system's None takes the first class of its ranking; a string that is no class is unanswered.
    """
    h = Hierarchy.of(hierarchy)
    fine_ranked = None
    if ranked is not None:
        fine_ranked = [_dedup(c if c in h.fine_to_coarse else None for c in row) for row in ranked]
    taken = _taken(list(predicted) if predicted else [None] * len(ranked or []), fine_ranked)
    y_fine = [p if p in h.fine_to_coarse else NO_ANSWER for p in taken]
    return y_fine, [h.coarse_of(p) or NO_ANSWER for p in y_fine]


def score_closed_set(
    hierarchy: Hierarchy | Mapping[str, str],
    gold: Sequence[str],
    predicted: Sequence[str | None],
    *,
    system: str = "system",
    tier: str = "A",
    ranked: Sequence[Sequence[str]] | None = None,
    ks: Sequence[int] = TOP_K,
) -> SystemMetrics:
    """Macro P/R/F1/FNR, confusion matrices and (ranked systems) top-k recall at both granularities.

    Args:
        hierarchy: Fine class -> coarse category.
        gold: The gold fine class per item.
        predicted: The predicted fine class per item; None, "" or a string that is no class is unanswered. For a
            ranked system, None takes the first entry of its ranked list.
        system: The system's name.
        tier: One of A, B, C (Tier D is :func:`score_open_vocabulary`).
        ranked: Per item, the classes in the system's order (tiers B and C); None for a system with one answer.
        ks: The k of top-k recall.

    Returns:
        The system's metrics.

    Raises:
        ValueError: On an empty input, lengths that differ, a gold label that is no class, Tier D, or a k < 1.
    """
    h = Hierarchy.of(hierarchy)
    if _check_tier(tier) == "D":
        raise ValueError("Tier D is scored by score_open_vocabulary (hits per item), not score_closed_set")
    if not gold:
        raise ValueError(f"{system}: no items to score (gold is empty)")
    if ranked is None and len(predicted) != len(gold):
        raise ValueError(f"{system}: {len(predicted)} predictions for {len(gold)} gold labels")
    if ranked is not None and len(ranked) != len(gold):
        raise ValueError(f"{system}: {len(ranked)} ranked lists for {len(gold)} gold labels")
    if any(int(k) < 1 for k in ks):
        raise ValueError(f"every k of top-k recall must be at least 1, got {list(ks)}")
    _check_gold(h, gold)
    predicted = list(predicted) if predicted else [None] * len(gold)
    if len(predicted) != len(gold):
        raise ValueError(f"{system}: {len(predicted)} predictions for {len(gold)} gold labels")
    fine_ranked = None
    coarse_ranked = None
    if ranked is not None:
        fine_ranked = [_dedup(c if c in h.fine_to_coarse else None for c in row) for row in ranked]
        coarse_ranked = [_dedup(h.coarse_of(c) for c in row) for row in fine_ranked]
    outside = sum(1 for p in _taken(predicted, fine_ranked) if p and p not in h.fine_to_coarse)
    if outside:
        logger.warning("%s: %d prediction(s) name no class of the hierarchy: counted as unanswered", system, outside)
    y_fine, y_coarse = closed_predictions(h, predicted, ranked)
    gold_coarse = [h.fine_to_coarse[g] for g in gold]
    return SystemMetrics(
        system=system,
        tier=tier,
        coarse=_closed_set(system, "coarse", h.coarse, gold_coarse, y_coarse, outside, coarse_ranked, ks),
        fine=_closed_set(system, "fine", h.fine, list(gold), y_fine, outside, fine_ranked, ks),
    )


def _named_precision(label: str, y_true: Sequence[str], named: Sequence[set[str]]) -> float:
    """Of the answers naming ``label``, the share whose gold label it is (0 when no answer names it)."""
    naming = [t for t, names in zip(y_true, named, strict=True) if label in names]
    return sum(t == label for t in naming) / len(naming) if naming else 0.0


def _hits_only(
    system: str,
    granularity: Granularity,
    labels: list[str],
    y_true: list[str],
    hits: list[bool],
    named: list[set[str]] | None,
) -> GranularityMetrics:
    per_class = {}
    for label in labels:
        rows = [h for t, h in zip(y_true, hits, strict=True) if t == label]
        recall = sum(rows) / len(rows) if rows else 0.0
        precision = _named_precision(label, y_true, named) if named is not None else None
        per_class[label] = ClassScore(precision=precision, recall=recall, f1=None, fnr=1.0 - recall, support=len(rows))
    recalls = [c.recall for c in per_class.values()]
    share = None
    if named is not None:
        share = float(np.mean([len(names & set(labels)) / len(labels) for names in named]))
    return GranularityMetrics(
        granularity=granularity,
        labels=list(labels),
        n=len(y_true),
        macro_precision=float(np.mean([c.precision for c in per_class.values()])) if named is not None else None,
        macro_recall=float(np.mean(recalls)),
        macro_f1=None,
        macro_fnr=float(np.mean([1.0 - r for r in recalls])),
        per_class=per_class,
        classes_without_items=_without_items(labels, y_true, system, granularity),
        reason=TIER_D_NAMED_REASON if named is not None else TIER_D_REASON,
        named_share=share,
    )


def score_open_vocabulary(
    hierarchy: Hierarchy | Mapping[str, str],
    gold: Sequence[str],
    category_hit: Sequence[bool | None],
    subclass_hit: Sequence[bool | None],
    *,
    system: str = "system",
    named: Sequence[Sequence[str]] | None = None,
) -> SystemMetrics:
    """Tier D: macro recall and FNR at both granularities from per-item hits; precision from the names given; no F1.

    Args:
        hierarchy: Fine class -> coarse category.
        gold: The gold fine class per item.
        category_hit: Per item, whether the answer named the gold category (None: not judged, a miss).
        subclass_hit: Per item, whether the answer named the gold fine class (None: a miss). A subclass hit
            implies a category hit.
        system: The system's name.
        named: Per item, the fine classes and categories the answer names (other strings are ignored; a class
            names its category too); None when unknown (precision is then None).

    Returns:
        The system's metrics with ``reason`` :data:`TIER_D_NAMED_REASON` at both granularities and ``named_share``
        when ``named`` is given; without it, :data:`TIER_D_REASON` and precision None.

    Raises:
        ValueError: On an empty input, lengths that differ, or a gold label that is no class.
    """
    h = Hierarchy.of(hierarchy)
    if not gold:
        raise ValueError(f"{system}: no items to score (gold is empty)")
    if not len(gold) == len(category_hit) == len(subclass_hit):
        raise ValueError(
            f"{system}: {len(gold)} gold labels, {len(category_hit)} category hits, {len(subclass_hit)} subclass hits"
        )
    if named is not None and len(named) != len(gold):
        raise ValueError(f"{system}: {len(named)} lists of names for {len(gold)} gold labels")
    _check_gold(h, gold)
    fine_hits = [bool(s) for s in subclass_hit]
    coarse_hits = [bool(c) or s for c, s in zip(category_hit, fine_hits, strict=True)]
    inconsistent = sum(1 for c, s in zip(category_hit, fine_hits, strict=True) if s and not c)
    if inconsistent:
        logger.warning("%s: %d subclass hit(s) without a category hit: counted as category hits", system, inconsistent)
    gold_coarse = [h.fine_to_coarse[g] for g in gold]
    fine_named = coarse_named = None
    if named is not None:
        categories = set(h.coarse)
        fine_named = [{n for n in names if n in h.fine_to_coarse} for names in named]
        coarse_named = [
            {h.fine_to_coarse[n] for n in fine} | {n for n in names if n in categories}
            for fine, names in zip(fine_named, named, strict=True)
        ]
    return SystemMetrics(
        system=system,
        tier="D",
        coarse=_hits_only(system, "coarse", h.coarse, gold_coarse, coarse_hits, coarse_named),
        fine=_hits_only(system, "fine", h.fine, list(gold), fine_hits, fine_named),
    )


def tiers_json(results: Iterable[SystemMetrics]) -> dict[str, Any]:
    """``{tiers: {A|B|C|D: {system: SystemMetrics.to_json()}}, reasons: {tier: why it is empty}}``.

    Every tier is present; a tier without systems is empty and has a reason.

    Raises:
        ValueError: If one system appears twice in a tier.
    """
    tiers: dict[str, dict[str, Any]] = {t: {} for t in TIERS}
    for result in results:
        if result.system in tiers[_check_tier(result.tier)]:
            raise ValueError(f"system {result.system!r} appears twice in tier {result.tier}")
        tiers[result.tier][result.system] = result.to_json()
    reasons = {t: f"no system of tier {t} in this run" for t, systems in tiers.items() if not systems}
    return {"tiers": tiers, "reasons": reasons}
