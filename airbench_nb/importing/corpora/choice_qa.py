"""Import recipes of MMAU (test-mini), MMAR and MMSU: their release files or their Hugging Face copies.

Each reads one table (MMAU's ``mmau-test-mini.json``, MMAR's ``MMAR-meta.jsonl``, MMSU's JSON Lines or JSON; or a
Hugging Face copy: a parquet file or folder, a ``save_to_disk`` folder, a hub cache folder) and makes each row an
item with the benchmark's own row reader (:mod:`airbench_nb.records.choice_qa_rows`: the gold must be the text of
exactly one option; nothing is guessed). The clip is the row's ``audio`` cell when the table has one (``{bytes,
path}``, the Hugging Face copies), else the file its path field names (``audio_id`` for MMAU, ``audio_path`` for
MMAR and MMSU), relative to the table's folder and never outside it; ``--option audio_dir=DIR`` names another folder
(relative to the table's) that the paths are relative to.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ClassVar

import numpy as np

from airbench_nb.hf_data import SourceRow
from airbench_nb.importing.mapping import RowError, TableRecipe, TableSpec, read_audio_bytes, read_audio_file
from airbench_nb.importing.recipe import ImportContext, RecipeOption, register_recipe
from airbench_nb.importing.tables import Table
from airbench_nb.records import CLUSTER_META_KEY, ItemBase
from airbench_nb.records.choice_qa_rows import mmar_item, mmau_item, mmsu_item

logger = logging.getLogger(__name__)

_FIELD = re.compile(r"field '([^']+)'")

AUDIO_COLUMN = "audio"
"""The column of a Hugging Face copy that holds the clip (``{bytes, path}``)."""


class ChoiceQARecipe(TableRecipe):
    """One single-choice audio QA benchmark's rows into items by its row reader (module docstring)."""

    options: ClassVar[tuple[RecipeOption, ...]] = (
        RecipeOption("audio_dir", "", "folder, relative to the table's, that the rows' audio paths are relative to"),
    )

    def __init__(
        self,
        spec: TableSpec,
        reader: Callable[..., ItemBase],
        path_field: str,
    ) -> None:
        """A recipe reading rows with ``reader`` (``mmau_item``, ...), clips by ``path_field`` or the audio column."""
        super().__init__(spec)
        self.reader = reader
        self.path_field = path_field

    def check_row(self, ctx: ImportContext, table: Table, row: SourceRow) -> ItemBase | None:
        """The row's item by the benchmark's reader (its refusal names the field), checked by the writer."""
        values = {k: v for k, v in row.values.items() if k != AUDIO_COLUMN}
        raw = values.get("id")
        uid = self.spec.uid_prefix + str(raw) if raw is not None else ""
        try:
            item = self.reader(values, ctx.writer.audio_path(uid or "item"), uid=uid or None)
        except ValueError as exc:
            found = _FIELD.search(str(exc))
            raise RowError(found.group(1) if found else "item", str(exc)) from None
        source = self.source_clip(row)
        if source is not None and CLUSTER_META_KEY not in item.meta:
            item = item.model_copy(update={"meta": {**item.meta, CLUSTER_META_KEY: source}})
        return ctx.writer.validate(item, where=row.where)

    def source_clip(self, row: SourceRow) -> str | None:
        """The name of the row's clip in its release (its path field, else the audio cell's path), or None.

        Every item is written with a clip of its own, so that questions about one recording would look independent:
        this name, in ``meta["cluster"]``, keeps them together for the bootstrap (:mod:`airbench_nb.records.clusters`).
        """
        path = row.values.get(self.path_field)
        if isinstance(path, str) and path.strip():
            return path.strip()
        cell = row.values.get(AUDIO_COLUMN)
        if isinstance(cell, Mapping) and isinstance(cell.get("path"), str) and cell["path"].strip():
            return str(cell["path"]).strip()
        return None

    def decode(self, table: Table, row: SourceRow) -> tuple[np.ndarray, int]:
        """The row's clip: its ``audio`` cell, else the file its path field names."""
        cell = row.values.get(AUDIO_COLUMN)
        if isinstance(cell, Mapping) and cell.get("bytes"):
            return read_audio_bytes(cell["bytes"], f"{row.where}: column {AUDIO_COLUMN!r}")
        root = table.root / self._audio_dir
        if isinstance(cell, Mapping) and cell.get("path"):
            return read_audio_file(root / str(cell["path"]), root)
        path = row.values.get(self.path_field)
        if not isinstance(path, str) or not path.strip():
            raise RowError(self.path_field, "no audio: neither an audio cell nor a path")
        return read_audio_file(root / path.strip(), root)

    def run(self, ctx: ImportContext) -> None:
        """Read the table (the option ``audio_dir`` kept for :meth:`decode`)."""
        self._audio_dir = Path(str(ctx.options.get("audio_dir") or ""))
        super().run(ctx)

    _audio_dir: Path = Path()


def _spec(name: str, title: str, kind: str, about: str) -> TableSpec:
    return TableSpec(name=name, title=title, kind=kind, dataset=name, uid="id", audio=AUDIO_COLUMN, about=about)


MMAU = register_recipe(
    ChoiceQARecipe(
        _spec(
            "mmau",
            "MMAU test-mini (mmau-test-mini.json and test-mini-audios/, or the lmms-lab/mmau parquet)",
            "mmau",
            "github.com/Sakshi113/MMAU (test-mini JSON and audio archive) or huggingface.co/datasets/lmms-lab/mmau",
        ),
        mmau_item,
        "audio_id",
    )
)
"""MMAU's test-mini: ``import mmau mmau-test-mini.json --out DIR`` (the clips beside it in ``test-mini-audios/``)."""

MMAR = register_recipe(
    ChoiceQARecipe(
        _spec(
            "mmar",
            "MMAR (MMAR-meta.jsonl and its audio/ folder)",
            "mmar",
            "github.com/ddlBoJack/MMAR (MMAR-meta.jsonl) and huggingface.co/datasets/BoJack/MMAR (the audio)",
        ),
        mmar_item,
        "audio_path",
    )
)
"""MMAR: ``import mmar MMAR-meta.jsonl --out DIR`` (``audio_path`` relative to the file's folder)."""

MMSU = register_recipe(
    ChoiceQARecipe(
        _spec(
            "mmsu",
            "MMSU (its question file with choice_a..choice_d and answer_gt, and the audio)",
            "mmsu",
            "huggingface.co/datasets/ddwang2000/MMSU (question file and audio)",
        ),
        mmsu_item,
        "audio_path",
    )
)
"""MMSU: ``import mmsu mmsu.jsonl --out DIR`` (``audio_path`` relative to the file's folder)."""
