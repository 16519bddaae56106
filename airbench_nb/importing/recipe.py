"""Import recipes: what a recipe declares, their registry, and :func:`run_import`, which runs one.

A recipe turns the rows of one corpus (a Hugging Face dataset, a release's meta file, a corpus's own folders) into
the kit's items. It declares its name, version, the item kinds it writes, the sources it reads (one positional
``SOURCE`` or several named ones, ``--vctk DIR``) and its options (``--option NAME=VALUE``), and does its work in
:meth:`Recipe.run` through an :class:`ImportContext` and its :class:`~airbench_nb.importing.writer.ImportWriter`.

Most recipes are declarative (:class:`~airbench_nb.importing.mapping.TableSpec`: columns to item fields, like an
lmms-eval task YAML); a user adds one for any dataset with ``--recipe-file my_recipe.yaml`` or registers one with
:func:`register_recipe` from a plugin (:mod:`airbench_nb.plugins`).
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from airbench_nb.importing.writer import ImportResult, ImportWriter
from airbench_nb.manifests import ImportRecord
from airbench_nb.registries import lookup

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceSlot:
    """One source a recipe reads."""

    name: str
    """Its name: ``source`` for the positional SOURCE, else the option that gives it (``vctk``: ``--vctk DIR``)."""
    help: str
    """What to give (``VCTK 0.92's folder, holding txt/ and wav48_silence_trimmed/``)."""
    required: bool = True
    """Whether the import needs it."""
    many: bool = False
    """Whether it may be given several times (several parquet shards, several CSV files)."""


@dataclass(frozen=True)
class RecipeOption:
    """One option of a recipe (``--option NAME=VALUE``)."""

    name: str
    """Its name."""
    default: Any
    """Its value when not given (its type is the type a given value is read as)."""
    help: str
    """What it does."""

    def parse(self, text: str) -> Any:
        """The option's value from its text, of its default's type.

        Raises:
            ValueError: For text that is not of the type (the option named).
        """
        kind = type(self.default)
        try:
            if kind is bool:
                if text.lower() in {"1", "true", "yes", "on"}:
                    return True
                if text.lower() in {"0", "false", "no", "off"}:
                    return False
                raise ValueError(text)
            if kind in (int, float):
                value = kind(text)
                if value != value or value in (float("inf"), float("-inf")):
                    raise ValueError(text)
                return value
            if kind in (list, tuple):
                return [part.strip() for part in text.split(",") if part.strip()]
            return text if self.default is None else kind(text)
        except ValueError:
            raise ValueError(f"option {self.name!r}: {text!r} is not a {kind.__name__}") from None


@dataclass
class ImportContext:
    """What a recipe's :meth:`Recipe.run` works with."""

    sources: dict[str, list[Path]]
    """The sources given, by slot name (an absent optional slot: an empty list)."""
    options: dict[str, Any]
    """Every option's value (given, or its default)."""
    writer: ImportWriter
    """Where items, audio and rejections go."""
    limit: int | None = None
    """Import at most this many rows (a quick look at a big corpus); None for all."""
    config: str | None = None
    """The Hugging Face config to read, for a source holding several."""
    split: str | None = None
    """The Hugging Face split to read, for a source holding several."""
    encoding: str | None = None
    """The encoding of text tables, when the user named one (else the recipe's own)."""
    workers: int = field(default_factory=lambda: default_workers())
    """Threads that decode, resample, write and hash audio."""

    def source(self, name: str = "source") -> Path:
        """The one path of a slot (the first, for a slot given several times)."""
        return self.sources[name][0]

    def done(self) -> bool:
        """Whether ``limit`` rows have been read."""
        return self.limit is not None and self.writer.result.rows >= self.limit


class Recipe(ABC):
    """How one corpus becomes items (module docstring)."""

    name: ClassVar[str]
    """Its name on the command line (``airbench-nb import NAME``)."""
    title: ClassVar[str]
    """What it imports, for people."""
    version: ClassVar[int] = 1
    """Its version, recorded in ``dataset.json``: bump it when the same rows would give other items."""
    kinds: ClassVar[tuple[str, ...]]
    """The item kinds it writes."""
    slots: ClassVar[tuple[SourceSlot, ...]] = (SourceSlot("source", "the dataset: a parquet file or folder, ..."),)
    """The sources it reads."""
    options: ClassVar[tuple[RecipeOption, ...]] = ()
    """Its options."""
    about: ClassVar[str] = ""
    """Where to get the corpus, in one line (``docs/data.md`` has the commands)."""

    @abstractmethod
    def run(self, ctx: ImportContext) -> None:
        """Read the sources and hand items, audio and rejections to ``ctx.writer``."""

    def spec_file(self) -> str | None:
        """The user's recipe file this recipe was read from; None for the kit's own."""
        return None


RECIPES: dict[str, Recipe] = {}
"""Registered recipes by name, in registration order."""


def register_recipe(recipe: Recipe) -> Recipe:
    """Register a recipe under its name (replacing one of that name), and return it."""
    RECIPES[recipe.name] = recipe
    return recipe


def recipe_for(name: str) -> Recipe:
    """The registered recipe of a name.

    Raises:
        KeyError: For a name no recipe is registered under (the message lists the known ones).
    """
    return lookup(RECIPES, name, "import recipe")


@dataclass
class ImportRequest:
    """An import as the command line gives it."""

    recipe: Recipe
    """The recipe."""
    out: Path
    """The data folder to write."""
    positional: list[Path] = field(default_factory=list)
    """SOURCE arguments: they go to the recipe's first slot."""
    named: dict[str, list[Path]] = field(default_factory=dict)
    """``--NAME PATH`` sources, by slot name."""
    options: dict[str, str] = field(default_factory=dict)
    """``--option NAME=VALUE`` texts."""
    limit: int | None = None
    """At most this many rows."""
    config: str | None = None
    """The Hugging Face config."""
    split: str | None = None
    """The Hugging Face split."""
    encoding: str | None = None
    """The encoding of text tables."""
    workers: int | None = None
    """Threads for audio (None: :func:`default_workers`)."""


def default_workers() -> int:
    """Threads an import uses for audio by default: the CPUs this process may use, at most 8."""
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def _sources(recipe: Recipe, positional: Sequence[Path], named: Mapping[str, Sequence[Path]]) -> dict[str, list[Path]]:
    slots = {slot.name: slot for slot in recipe.slots}
    unknown = sorted(set(named) - set(slots))
    if unknown:
        known = ", ".join(f"--{s}" for s in slots if s != "source") or "none"
        raise ValueError(f"recipe {recipe.name!r} takes no source {', '.join('--' + u for u in unknown)} ({known})")
    sources: dict[str, list[Path]] = {name: list(paths) for name, paths in named.items()}
    if positional:
        first = recipe.slots[0].name
        if first in sources:
            raise ValueError(f"recipe {recipe.name!r}: give {first} either as SOURCE or as --{first}, not both")
        sources[first] = list(positional)
    for slot in recipe.slots:
        given = sources.setdefault(slot.name, [])
        if slot.required and not given:
            how = "SOURCE" if slot is recipe.slots[0] else f"--{slot.name} PATH"
            raise ValueError(f"recipe {recipe.name!r} needs {how}: {slot.help}")
        if len(given) > 1 and not slot.many:
            raise ValueError(f"recipe {recipe.name!r}: {slot.name} is given {len(given)} times; it takes one")
        for path in given:
            if not path.exists():
                raise FileNotFoundError(f"{path}: no such file or folder ({slot.name})")
    return sources


def _options(recipe: Recipe, given: Mapping[str, str]) -> dict[str, Any]:
    known = {option.name: option for option in recipe.options}
    unknown = sorted(set(given) - set(known))
    if unknown:
        listed = ", ".join(known) or "none"
        raise ValueError(f"recipe {recipe.name!r} has no option {', '.join(map(repr, unknown))} (options: {listed})")
    return {name: (option.parse(given[name]) if name in given else option.default) for name, option in known.items()}


def run_import(request: ImportRequest) -> ImportResult:
    """Run one import: check the sources and options, run the recipe, write the folder.

    Raises:
        ValueError: For a source the recipe does not take or a missing one, an unknown option or a bad value, a
            folder that is not the import's (:class:`~airbench_nb.importing.writer.ImportRefused`), or an import
            whose every row was rejected.
        FileNotFoundError: For a source that does not exist.
    """
    recipe = request.recipe
    sources = _sources(recipe, request.positional, request.named)
    options = _options(recipe, request.options)
    writer = ImportWriter(request.out, recipe.name, recipe.version)
    ctx = ImportContext(
        sources=sources,
        options=options,
        writer=writer,
        limit=request.limit,
        config=request.config,
        split=request.split,
        encoding=request.encoding,
        workers=request.workers or default_workers(),
    )
    try:
        recipe.run(ctx)
    finally:
        writer.close_journal()
    record = ImportRecord(
        recipe=recipe.name,
        version=recipe.version,
        sources={name: [str(p.resolve()) for p in paths] for name, paths in sources.items() if paths},
        options={**options, **({"config": request.config} if request.config else {})}
        | ({"split": request.split} if request.split else {})
        | ({"limit": request.limit} if request.limit else {}),
        spec_file=recipe.spec_file(),
    )
    result = writer.finish(record)
    logger.info(
        "%s: %d items from %d rows, %d rejected", recipe.name, result.imported, result.rows, len(result.rejected)
    )
    return result


__all__ = [
    "RECIPES",
    "ImportContext",
    "ImportRequest",
    "Recipe",
    "RecipeOption",
    "SourceSlot",
    "recipe_for",
    "register_recipe",
    "run_import",
]
