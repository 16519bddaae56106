"""Circular evaluation's rotated copies of Foundation items (MMBench CircularEval), made from manifests.

Rotation ``k`` of an item with ``n`` options moves the option at position ``i`` to position ``(i + k) % n``: the new
options are ``new[j] = old[(j - k) % n]`` and the gold index becomes ``(gold + k) % n``, so the correct option TEXT
stays correct. Rotation 0 is the original order. Where options repeat (MMAU and MMAR keep their releases' repeated
options), the gold of a copy is the first of its options whose stripped text is the gold's, wherever the rotation put
it (:func:`rotate_item`). A rotated copy has uid ``f"{uid}@r{k}"`` and keeps the original's
meta plus ``rotation_of`` (the original uid) and ``rotation`` (k). The builder and ``airbench-nb rotate`` make them;
:mod:`airbench_nb.analysis.circular` reads the answers.

How many rotations (:func:`rotation_offsets`). An item of two to four options (AIR-Bench's) gets every rotation,
``k = 0 .. n - 1``, or the first ``rotations`` of them when a cap is given, as always. An item of more options (up to
26: the tiered benchmark's 23 classes) would cost ``n`` model calls per item; it gets ``rotations`` rotations
(default :data:`MANY_OPTIONS_ROTATIONS`, at most ``n``) spread evenly over the cycle, ``k_j = floor(j * n / m)`` for
``j = 0 .. m - 1`` (23 options, 4 rotations: 0, 5, 11, 17), so the gold option visits every part of the list rather
than the next few letters. Circular accuracy then means "right in every rotation asked", and the rotations asked are
recorded in each copy's ``meta.rotation``.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


MANY_OPTIONS_ROTATIONS = 4
"""Rotations asked of an item of more than four options when none is given (see the module docstring)."""

SMALL_ITEM_OPTIONS = 4
"""Up to this many options an item gets every rotation by default (AIR-Bench's items: 2 to 4 options)."""


NOT_ROTATED_WHY = (
    "rotate makes circular-evaluation copies of AIR-Bench's Foundation items (kind 'foundation') and of MMAU, MMAR and "
    "MMSU items only: the tiered analysis scores sound_source items per tier and reads no rotated copy, and other "
    "kinds have no options to rotate"
)
"""Why items of a kind other than ``foundation`` are not rotated (said when a manifest has nothing to rotate)."""


def rotation_offsets(n_choices: int, rotations: int | None = None) -> list[int]:
    """The rotations ``k`` asked of an item of ``n_choices`` options (see the module docstring).

    Args:
        n_choices: The item's number of options (2 to 26).
        rotations: How many rotations; None for the default (all for up to four options,
            :data:`MANY_OPTIONS_ROTATIONS` beyond). Capped at ``n_choices``.

    Returns:
        The distinct offsets, ascending, starting at 0 (the original order).

    Raises:
        ValueError: If ``rotations`` is under 1 or ``n_choices`` under 2.
    """
    if n_choices < 2:
        raise ValueError(f"an item to rotate has 2 or more options, got {n_choices}")
    if rotations is not None and rotations < 1:
        raise ValueError(f"rotations must be at least 1, got {rotations}")
    if n_choices <= SMALL_ITEM_OPTIONS:
        return list(range(n_choices if rotations is None else min(rotations, n_choices)))
    count = min(MANY_OPTIONS_ROTATIONS if rotations is None else rotations, n_choices)
    return [j * n_choices // count for j in range(count)]


def rotated_uid(uid: str, k: int) -> str:
    """The uid of rotation ``k`` of the item ``uid``."""
    return f"{uid}{ROTATION_SEPARATOR}{k}"


def rotate_item(item: FoundationItem, k: int) -> FoundationItem:
    """Rotation ``k`` of one item: the option at position ``i`` moves to position ``(i + k) % n``.

    Args:
        item: An original (not yet rotated) Foundation item.
        k: The rotation, any integer (taken modulo the number of options).

    Returns:
        A new, validated item with uid ``f"{uid}@r{k}"`` and ``meta`` extended by ``rotation_of`` and ``rotation``;
        its gold is the first option whose stripped text is the original gold's (``(answer + k) % n`` when the
        options are distinct). ``notes`` are the original's (counting the options in release order).

    Raises:
        ValueError: If the item is itself a rotated copy.
    """
    if "rotation_of" in (item.meta or {}):
        raise ValueError(f"item {item.uid!r} is already a rotation of {item.meta['rotation_of']!r}")
    n = len(item.choices)
    k %= n
    choices = [item.choices[(j - k) % n] for j in range(n)]
    gold = item.choices[item.answer].strip()
    data = item.model_dump()
    data.update(
        uid=rotated_uid(item.uid, k),
        choices=choices,
        answer=next(j for j, choice in enumerate(choices) if choice.strip() == gold),
        meta={**(item.meta or {}), "rotation_of": item.uid, "rotation": k},
    )
    return type(item).model_validate(data)


def rotate_items(items: Sequence[FoundationItem], rotations: int | None = None) -> list[FoundationItem]:
    """Every Foundation item once per cyclic rotation of its options (see the module docstring for the direction).

    Args:
        items: Original Foundation items.
        rotations: Rotations per item, capped at the item's number of options: ``k = 0 .. rotations - 1`` for an
            item of up to four options, evenly spread offsets beyond (:func:`rotation_offsets`). Default: all of
            them up to four options (a 4-choice item gives 4 copies, a binary item 2), and
            :data:`MANY_OPTIONS_ROTATIONS` for an item of more.

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
        if not getattr(item, "ROTATED", False):  # the kinds declare it (ROTATED); a non-item has none
            kind = getattr(item, "kind", type(item).__name__)
            raise TypeError(f"item {getattr(item, 'uid', item)!r} is of kind {kind!r}: {NOT_ROTATED_WHY}")
        out.extend(rotate_item(item, k) for k in rotation_offsets(len(item.choices), rotations))
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
        not rotated), ``skipped`` (the items of every kind not rotated, by kind), ``by_n_choices``
        (``{n: items}``), and the ``out`` and ``data_root`` paths as strings.

    Raises:
        ValueError: If ``out`` is the source manifest, it holds no Foundation item (kind ``foundation``; nothing is
            written), an item is already rotated, or the destination folder has a ``dataset.json`` pointing at
            another data root.
    """
    path, out = Path(path), Path(out)
    if out.resolve() == path.resolve():
        raise ValueError(f"{out}: the rotated manifest must not overwrite its source")
    root = data_root(path)
    items = read_manifest(path)
    foundation = [i for i in items if i.ROTATED]  # the kinds that declare it (AIR-Bench's Foundation items)
    by_kind = Counter(i.kind for i in items if not i.ROTATED)
    if not foundation:
        held = ", ".join(f"{n} {kind}" for kind, n in sorted(by_kind.items())) or "no item"
        raise ValueError(f"{path}: no Foundation item to rotate (it holds {held}): {NOT_ROTATED_WHY}")
    skipped = sum(by_kind.values())
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
            counts={"foundation": len(rotated), "originals": len(foundation), "skipped": skipped},
        )
        write_dataset_card(folder, card)
    write_manifest(out, rotated)
    counts = Counter(len(i.choices) for i in foundation)
    logger.info(
        "rotated %d items into %d copies (%d others skipped) -> %s", len(foundation), len(rotated), skipped, out
    )
    return {
        "foundation": len(foundation),
        "written": len(rotated),
        "skipped_chat": by_kind.get("chat", 0),
        "skipped": dict(sorted(by_kind.items())),
        "by_n_choices": {str(n): c for n, c in sorted(counts.items())},
        "out": str(out),
        "data_root": str(root),
    }
