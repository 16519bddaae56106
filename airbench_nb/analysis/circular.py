"""Circular evaluation (MMBench CircularEval): is a model right whatever the order of the options?

Each Foundation item is asked once per cyclic rotation of its options (:func:`rotate_items`,
:func:`rotate_manifest`). Rotation ``k`` of an item with ``n`` options moves the option at position ``i`` to
position ``(i + k) % n``: the new options are ``new[j] = old[(j - k) % n]`` and the gold index becomes
``(gold + k) % n``, so the correct option TEXT stays correct. Rotation 0 is the original order. A rotated copy has
uid ``f"{uid}@r{k}"`` and keeps the original's meta plus ``rotation_of`` (the original uid) and ``rotation`` (k).

:func:`circular` reads a run of rotated items. Per model and original item, a group is *complete* when the model
has a scored answer (``correct`` not missing) for every rotation present in the frame for that item. Under
``strict`` a failed answer is scored (wrong, and inconsistent: it names no option); under ``official`` it is dropped,
which makes its item incomplete. Incomplete groups are counted apart and left out of every rate, so plain and
circular accuracy are measured on the same items:

- ``accuracy``: plain accuracy over all rotations of the complete groups;
- ``consistent_rate``: share of items answered with the same option TEXT in every rotation (an option letter past
  the item's options, possible under ``official``, has no text and makes the item inconsistent);
- ``circular_accuracy``: share of items answered right in every rotation (with a Wilson 95% interval).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from airbench_nb.analysis.stats import WILSON, wilson
from airbench_nb.analysis_report import Circular as CircularPayload
from airbench_nb.rotation import (  # noqa: F401 - re-exported: rotation is a data operation, analysed here
    ROTATION_SEPARATOR,
    rotate_item,
    rotate_items,
    rotate_manifest,
    rotated_uid,
)

logger = logging.getLogger(__name__)

CI_METHOD = WILSON
"""How :attr:`Circular.circular_accuracy_ci` is computed."""


@dataclass(frozen=True)
class Circular:
    """Plain and circular accuracy of one model over complete groups of rotated items."""

    model: str
    """The model spec."""
    items: int
    """Original items whose every rotation the model answered (complete groups)."""
    incomplete: int
    """Original items with a rotation the model lacks or whose answer was dropped (left out of every rate)."""
    rotations: int
    """Rotated copies in the complete groups (the denominator of ``accuracy``)."""
    accuracy: float | None
    """Plain accuracy over all rotations of the complete groups."""
    consistent_rate: float | None
    """Share of complete items answered with the same option text in every rotation."""
    circular_accuracy: float | None
    """Share of complete items answered right in every rotation."""
    circular_accuracy_ci: tuple[float, float] | None = None
    """Wilson 95% interval of ``circular_accuracy``."""
    ci: str = CI_METHOD
    """How the interval is computed."""
    reason: str | None = None
    """Why there was nothing to analyse, or None."""

    def as_dict(self) -> dict[str, Any]:
        """Serializer: a JSON-ready dict (plain numbers, None where undefined)."""
        out = asdict(self)
        out["circular_accuracy_ci"] = list(self.circular_accuracy_ci) if self.circular_accuracy_ci else None
        return out

    def payload(self) -> CircularPayload:
        """The result as ``analysis.json`` holds it (``circular[model]``)."""
        return CircularPayload.from_data(self.as_dict())


def _consistent(texts: pd.Series) -> bool:
    return bool(texts.notna().all() and texts.nunique() == 1)


def _one(model: str, rows: pd.DataFrame, expected: Mapping[Any, frozenset[int]]) -> Circular:
    # strict: a failure is a wrong, inconsistent answer (its row has correct False); official: dropped (NA), so its
    # item is incomplete, as the official protocol drops unreadable answers
    answered = rows[rows["correct"].notna()]
    seen = answered.groupby("rotation_of", sort=True)["rotation"].agg(lambda r: frozenset(int(x) for x in r.dropna()))
    originals = sorted(rows["rotation_of"].unique())
    complete = [o for o in originals if seen.get(o, frozenset()) >= expected[o]]
    incomplete = len(originals) - len(complete)
    if not complete:
        return Circular(
            model=model,
            items=0,
            incomplete=incomplete,
            rotations=0,
            accuracy=None,
            consistent_rate=None,
            circular_accuracy=None,
            reason=f"no item answered in every rotation ({incomplete} incomplete)",
        )
    all_rows = answered[answered["rotation_of"].isin(complete)]
    groups = all_rows.groupby("rotation_of", sort=True)
    right_everywhere = int(groups["correct"].agg(lambda c: bool(c.astype(bool).all())).sum())
    consistent = int(groups["chosen_text"].agg(_consistent).sum())
    n_items = len(complete)
    low, high = wilson(right_everywhere, n_items)
    return Circular(
        model=model,
        items=n_items,
        incomplete=incomplete,
        rotations=len(all_rows),
        accuracy=float(all_rows["correct"].astype(bool).mean()),
        consistent_rate=consistent / n_items,
        circular_accuracy=right_everywhere / n_items,
        circular_accuracy_ci=(float(low), float(high)),
    )


def circular(frame: pd.DataFrame) -> dict[str, Circular]:
    """Plain accuracy, consistency and circular accuracy per model over rotated items.

    Args:
        frame: A Foundation frame of a run on a rotated manifest (rows with ``rotation_of`` set are used; others
            are ignored).

    Returns:
        ``{model: Circular}``; a model with no complete group gets an empty result with a ``reason``. A frame
        with no rotated rows gives an empty dict (logged).
    """
    rows = frame[frame["rotation_of"].notna()] if not frame.empty else frame
    if rows.empty:
        logger.info("circular: no rotated items in the frame (make them with rotate_manifest)")
        return {}
    expected = {
        original: frozenset(int(r) for r in group["rotation"].dropna())
        for original, group in rows.groupby("rotation_of")
    }
    return {str(model): _one(str(model), group, expected) for model, group in rows.groupby("model", sort=True)}


def circular_frame(results: Mapping[str, Circular]) -> pd.DataFrame:
    """A tidy frame for a plot of plain vs circular accuracy: one row per model.

    Args:
        results: The output of :func:`circular`.

    Returns:
        Columns ``model, items, incomplete, rotations, accuracy, consistent_rate, circular_accuracy, ci_low,
        ci_high`` (the interval is that of ``circular_accuracy``; NaN where undefined). Melt it on the three rates
        for a grouped bar plot.
    """
    columns = [
        "model",
        "items",
        "incomplete",
        "rotations",
        "accuracy",
        "consistent_rate",
        "circular_accuracy",
        "ci_low",
        "ci_high",
    ]
    rows = []
    for model, result in results.items():
        low, high = result.circular_accuracy_ci or (None, None)
        rows.append(
            {
                "model": model,
                "items": result.items,
                "incomplete": result.incomplete,
                "rotations": result.rotations,
                "accuracy": result.accuracy,
                "consistent_rate": result.consistent_rate,
                "circular_accuracy": result.circular_accuracy,
                "ci_low": low,
                "ci_high": high,
            }
        )
    out = pd.DataFrame(rows, columns=columns)
    for column in columns[4:]:
        out[column] = out[column].astype(float)
    return out
