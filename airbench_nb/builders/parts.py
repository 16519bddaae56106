"""Builder parts: :func:`~airbench_nb.builders.build` loops over them, one registered part per source of items.

A part is one thing the offline build makes: AIR-Bench's Foundation and Chat items, their SNR-graded copies, their
circular rotations, SSEU-Bench's clips, UG-Bench's items, the tiered benchmark's clips. It declares

- ``name``: unique among the parts (the key of :data:`PARTS`);
- ``tasks``: the task names it builds (``build(tasks=...)`` picks among the tasks of every part; a part with no
  task, such as the SNR-graded copies, follows the parts it ``requires``);
- ``options``: the preset options it reads (keys of the preset in ``presets.json``); ``build`` takes each also as a
  keyword argument or in its ``options`` mapping, which wins over the preset;
- ``requires``: the parts whose results it reads (:attr:`BuildContext.earlier`), registered before it;
- ``manifests``: the item kinds it writes; their manifests are written even when empty (``foundation.jsonl`` and
  ``chat.jsonl``: every reader expects them); another kind's manifest is written when it has items and removed
  when it has none (a file left by an earlier build into the same folder is not this dataset's).

and two steps. ``resolve(preset, given)`` checks its options and returns their values, before any audio is made: a
bad option stops the build before it starts. ``build(context)`` makes its items and returns a :class:`PartResult`:
its items by kind, in manifest order, its failures (one dict per item that could not be made: counted, never fatal)
and what ``dataset.json`` records of it.

``build`` runs the parts in registration order and writes each kind's manifest with the items of every part that
made that kind, in that order (``foundation.jsonl``: the clean items, then the graded copies, then the rotations).
A new part is registered with :func:`register_part`; no core module is edited (see ``docs/extending.md``,
"Add a builder part").
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from airbench_nb.builders.core import Recipes
from airbench_nb.records import AnyItem
from airbench_nb.registries import lookup

logger = logging.getLogger(__name__)

Failure = dict[str, Any]
"""One item that could not be made: ``task``, ``index`` and ``error``, plus ``uid`` (and ``snr_db``) where known."""


@dataclass
class PartResult:
    """What one builder part made."""

    items: dict[str, list[AnyItem]] = field(default_factory=dict)
    """Its items by kind (manifest name), in manifest order; a kind of its ``manifests`` may map to an empty list."""
    failures: list[Failure] = field(default_factory=list)
    """Items that could not be made (counted in the build report and ``dataset.json``, never fatal)."""
    card: dict[str, Any] = field(default_factory=dict)
    """What ``dataset.json``'s counts record of the part (its resolved options, e.g. ``{"snr_grid": [...]}``)."""
    report: dict[str, Any] = field(default_factory=dict)
    """Fields of :class:`~airbench_nb.builders.BuildReport` the part fills (AIR-Bench's ``foundation`` and ``chat``,
    ``sseu``, ...); a new part leaves it empty and its items are read from :attr:`BuildReport.parts`."""


@dataclass(frozen=True)
class BuildContext:
    """What a part's :meth:`BuilderPart.build` is given."""

    out: Path
    """The data root: manifests go here, audio under ``out/audio/``."""
    preset: str
    """The preset's name."""
    seed: int
    """The build seed."""
    recipes: Recipes
    """The recipe files."""
    tasks: frozenset[str]
    """The tasks asked for (every part's tasks when ``build`` was given none)."""
    options: Mapping[str, Any]
    """This part's options, as its :meth:`BuilderPart.resolve` returned them."""
    earlier: Mapping[str, PartResult] = field(default_factory=lambda: MappingProxyType({}))
    """The results of the parts that ran before this one, by name (those of ``requires`` among them)."""
    progress: bool = False
    """Show progress (a tqdm bar or log lines)."""


@runtime_checkable
class BuilderPart(Protocol):
    """One source of built items (see the module docstring)."""

    name: str
    """Unique name of the part."""
    tasks: tuple[str, ...]
    """Task names it builds (may be empty)."""
    options: tuple[str, ...]
    """Preset options it reads (also ``build``'s keyword arguments of those names)."""
    requires: tuple[str, ...]
    """Parts whose results it reads, registered before it."""
    manifests: tuple[str, ...]
    """Item kinds whose manifest it always writes, even empty."""

    def resolve(self, preset: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """Check and return the part's option values.

        Args:
            preset: The preset's entry of ``presets.json``.
            given: Options passed to ``build`` (only those of :attr:`options`, None values left out).

        Raises:
            ValueError: Naming the bad option.
        """
        ...

    def build(self, context: BuildContext) -> PartResult:
        """Make the part's items (audio written under ``context.out``); ``build`` writes the manifests."""
        ...


PARTS: dict[str, BuilderPart] = {}
"""Registered builder parts by name, in the order ``build`` runs them."""


def register_part(part: BuilderPart) -> BuilderPart:
    """Register a builder part (replacing one of that name, in its place), and return it.

    Raises:
        TypeError: When the object does not implement :class:`BuilderPart`.
        ValueError: When a part it requires is not registered, or one of its tasks belongs to another part.
    """
    if not isinstance(part, BuilderPart):
        raise TypeError(f"{type(part).__name__} is not a BuilderPart (name, tasks, options, requires, manifests, ...)")
    missing = [name for name in part.requires if name not in PARTS or name == part.name]
    if missing:
        raise ValueError(f"builder part {part.name!r} requires {missing}, not registered before it")
    for other in PARTS.values():
        shared = set(part.tasks) & set(other.tasks)
        if other.name != part.name and shared:
            raise ValueError(f"builder part {part.name!r}: task(s) {sorted(shared)} already built by {other.name!r}")
    PARTS[part.name] = part
    return part


def part_for(name: str) -> BuilderPart:
    """The registered part of a name.

    Raises:
        KeyError: For a name no part is registered under (the message lists the known ones).
    """
    return lookup(PARTS, name, "builder part")


def whole_number(name: str, value: Any, *, none: bool = False) -> int | None:
    """``value`` checked as a whole number >= 0 (or None when ``none``), for a part's :meth:`~BuilderPart.resolve`.

    Raises:
        ValueError: ``<name> must be a whole number >= 0, got <value>``.
    """
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    return value


__all__ = [
    "PARTS",
    "BuildContext",
    "BuilderPart",
    "Failure",
    "PartResult",
    "part_for",
    "register_part",
    "whole_number",
]


def cleanest_first(items: Sequence[Any]) -> list[Any]:
    """Mixed items ordered cleanest mix first (highest ``snr_db``; None, unmixed, before any), in order otherwise.

    SSEU-Bench writes each utterance's mixes one after the other (same scene, same gold events at every SNR), so that
    its first N event items are one scene's: an mAP over them is 1 for any answer. Taken cleanest first, the first N
    are one mix per utterance (different scenes) before a second SNR of any of them, as the controls and perturbed
    copies of the events items need.
    """
    return sorted(items, key=lambda i: -math.inf if getattr(i, "snr_db", None) is None else -float(i.snr_db))
