"""``airbench-nb import``: corpora and Hugging Face datasets into the kit's data folders, by recipe.

- :mod:`~airbench_nb.importing.tables`: the rows of a source table (Hugging Face parquet or Arrow, JSON, JSON Lines,
  CSV), each with its file and row;
- :mod:`~airbench_nb.importing.writer`: the data folder an import writes (audio, manifests, ``dataset.json``,
  ``rejected.jsonl``), resumable;
- :mod:`~airbench_nb.importing.recipe`: what a recipe declares, their registry and :func:`run_import`;
- :mod:`~airbench_nb.importing.mapping`: declarative recipes (:class:`TableSpec`: columns to item fields), which a
  user writes in YAML for any dataset.

The kit's own recipes are in :mod:`~airbench_nb.importing.corpora`, registered when this package is imported (after
:mod:`airbench_nb.benchmarks`, so that every benchmark's item kinds are known to the recipes).
"""

import airbench_nb.benchmarks  # noqa: F401 - registers every benchmark's item kinds before any recipe names one
from airbench_nb.importing.mapping import RowError, TableRecipe, TableSpec, load_spec
from airbench_nb.importing.recipe import (
    RECIPES,
    ImportContext,
    ImportRequest,
    Recipe,
    RecipeOption,
    SourceSlot,
    recipe_for,
    register_recipe,
    run_import,
)
from airbench_nb.importing.tables import Table, open_table
from airbench_nb.importing.writer import ImportRefused, ImportResult, ImportWriter, WrittenAudio

# isort: split
import airbench_nb.importing.corpora  # noqa: E402, F401 - registers the kit's recipes

__all__ = [
    "RECIPES",
    "ImportContext",
    "ImportRefused",
    "ImportRequest",
    "ImportResult",
    "ImportWriter",
    "Recipe",
    "RecipeOption",
    "RowError",
    "SourceSlot",
    "Table",
    "TableRecipe",
    "TableSpec",
    "WrittenAudio",
    "load_spec",
    "open_table",
    "recipe_for",
    "register_recipe",
    "run_import",
]
