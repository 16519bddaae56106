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
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from airbench_nb.analysis.stats import WILSON, wilson
from airbench_nb.manifests import (
    DATASET_CARD,
    DatasetCard,
    data_root,
    mark_data_root,
    read_dataset_card,
    read_manifest,
    write_dataset_card,
    write_manifest,
)
from airbench_nb.records import FoundationItem

logger = logging.getLogger(__name__)

ROTATION_SEPARATOR = "@r"
"""Between the original uid and the rotation number in a rotated copy's uid."""

CI_METHOD = WILSON
"""How :attr:`Circular.circular_accuracy_ci` is computed."""


def rotated_uid(uid: str, k: int) -> str:
    """The uid of rotation ``k`` of the item ``uid``."""
    return f"{uid}{ROTATION_SEPARATOR}{k}"


def rotate_item(item: FoundationItem, k: int) -> FoundationItem:
    """Rotation ``k`` of one item: the option at position ``i`` moves to position ``(i + k) % n``.

    Args:
        item: An original (not yet rotated) Foundation item.
        k: The rotation, any integer (taken modulo the number of options).

    Returns:
        A new, validated item with uid ``f"{uid}@r{k}"`` and ``meta`` extended by ``rotation_of`` and ``rotation``.

    Raises:
        ValueError: If the item is itself a rotated copy.
    """
    if "rotation_of" in (item.meta or {}):
        raise ValueError(f"item {item.uid!r} is already a rotation of {item.meta['rotation_of']!r}")
    n = len(item.choices)
    k %= n
    choices = [item.choices[(j - k) % n] for j in range(n)]
    data = item.model_dump()
    data.update(
        uid=rotated_uid(item.uid, k),
        choices=choices,
        answer=(item.answer + k) % n,
        meta={**(item.meta or {}), "rotation_of": item.uid, "rotation": k},
    )
    return FoundationItem.model_validate(data)


def rotate_items(items: Sequence[FoundationItem], rotations: int | None = None) -> list[FoundationItem]:
    """Every Foundation item once per cyclic rotation of its options (see the module docstring for the direction).

    Args:
        items: Original Foundation items.
        rotations: Rotations per item, ``k = 0 .. rotations - 1``, capped at the item's number of options
            (default: all of them, so a 4-choice item gives 4 copies and a binary item 2).

    Returns:
        The rotated copies, item by item, rotation by rotation.

    Raises:
        ValueError: If an item is already a rotated copy (its uid is named), or ``rotations`` is under 1.
        TypeError: If an item is not a Foundation item.
    """
    if rotations is not None and rotations < 1:
        raise ValueError(f"rotations must be at least 1, got {rotations}")
    out: list[FoundationItem] = []
    for item in items:
        if not isinstance(item, FoundationItem):
            raise TypeError(f"item {getattr(item, 'uid', item)!r} is not a Foundation item: only those are rotated")
        n = len(item.choices)
        count = n if rotations is None else min(rotations, n)
        out.extend(rotate_item(item, k) for k in range(count))
    return out


def rotate_manifest(path: str | Path, out: str | Path, rotations: int | None = None) -> dict[str, Any]:
    """Write the rotated Foundation items of a manifest to a new manifest whose audio still resolves.

    Audio paths stay as they are (relative to a data root); the rotated manifest's folder gets a ``dataset.json``
    whose ``data_root`` points at the original manifest's data root (as a path relative to the new folder), the
    way :func:`airbench_nb.manifests.data_root` resolves audio. When the new folder already has a ``dataset.json``
    that resolves to the same data root it is kept; one that resolves elsewhere is refused, since rewriting it would
    break the manifests beside it. A card may point out of its folder only at a data root of the kit's
    (:func:`airbench_nb.manifests.is_data_root`): when the source's root is not one (a source folder without a
    ``dataset.json``), it gets a ``dataset.json`` with ``data_root: "."``.

    Args:
        path: The source manifest.
        out: The rotated manifest to write (e.g. ``<folder>/foundation.jsonl``); not the source itself.
        rotations: As in :func:`rotate_items`.

    Returns:
        Counts: ``foundation`` (items read), ``written`` (rotated copies), ``skipped_chat`` (Chat items, which are
        not rotated), ``by_n_choices`` (``{n: items}``), and the ``out`` and ``data_root`` paths as strings.

    Raises:
        ValueError: If ``out`` is the source manifest, an item is already rotated, or the destination folder has a
            ``dataset.json`` pointing at another data root.
    """
    path, out = Path(path), Path(out)
    if out.resolve() == path.resolve():
        raise ValueError(f"{out}: the rotated manifest must not overwrite its source")
    root = data_root(path)
    items = read_manifest(path)
    foundation = [i for i in items if isinstance(i, FoundationItem)]
    skipped = len(items) - len(foundation)
    rotated = rotate_items(foundation, rotations)
    folder = out.resolve().parent
    folder.mkdir(parents=True, exist_ok=True)
    existing = read_dataset_card(folder)
    if existing is not None:
        if data_root(out) != root:
            raise ValueError(
                f"{folder / DATASET_CARD}: data_root resolves to {data_root(out)}, not {root} (the source's); "
                "write the rotated manifest to another folder"
            )
    else:
        source = read_dataset_card(path.resolve().parent)
        if not root.is_relative_to(folder):
            # data_root() accepts a card pointing out of its folder only at a data root of the kit's: make the
            # source's root one (a card-less source folder gets a dataset.json with data_root ".").
            mark_data_root(root, source=f"data root of {path.name}, marked by rotate")
        card = DatasetCard(
            data_root=os.path.relpath(root, folder),
            source=f"circular-rotation of {path.name} ({source.source if source else 'unknown'})",
            counts={"foundation": len(rotated), "originals": len(foundation), "skipped_chat": skipped},
        )
        write_dataset_card(folder, card)
    write_manifest(out, rotated)
    counts = Counter(len(i.choices) for i in foundation)
    logger.info(
        "rotated %d items into %d copies (%d chat items skipped) -> %s", len(foundation), len(rotated), skipped, out
    )
    return {
        "foundation": len(foundation),
        "written": len(rotated),
        "skipped_chat": skipped,
        "by_n_choices": {str(n): c for n, c in sorted(counts.items())},
        "out": str(out),
        "data_root": str(root),
    }


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
        """A JSON-serialisable dict (plain numbers, None where undefined)."""
        out = asdict(self)
        out["circular_accuracy_ci"] = list(self.circular_accuracy_ci) if self.circular_accuracy_ci else None
        return out


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
