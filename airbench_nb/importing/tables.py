"""The rows of a source table, whatever it is stored as: Hugging Face files, JSON, JSON Lines or CSV.

A recipe reads its rows through :func:`open_table`, which tells the formats apart by what the path is:

- a Hugging Face source (a ``.parquet`` file, a folder of shards, a ``save_to_disk`` folder, a hub cache folder;
  :func:`airbench_nb.hf_data.resolve_source`), streamed one record batch at a time;
- a ``.json`` file holding a list of objects (MMAU's ``mmau-test-mini.json``), read whole (a release's meta file);
- a ``.jsonl`` file, one object a line (MMAR's ``MMAR-meta.jsonl``, SLURP's ``test.jsonl``), streamed;
- a ``.csv`` or ``.tsv`` file with a header line (Clotho's captions, AudioCaps), streamed, in the encoding the recipe
  names (Clotho's files are ISO-8859-1).

Every row comes as a :class:`~airbench_nb.hf_data.SourceRow`: its values, the file and the row number (0-based for
tables, the 1-based line for text files), so that a bad row is named in its rejection.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airbench_nb.hf_data import DatasetSource, SourceError, SourceRow, iter_rows, resolve_source

logger = logging.getLogger(__name__)

TEXT_SUFFIXES: frozenset[str] = frozenset({".json", ".jsonl", ".csv", ".tsv"})
"""Suffixes of the plain-text tables :func:`open_table` reads itself (anything else goes to ``hf_data``)."""

MAX_CSV_FIELD = 16 * 1024 * 1024
"""Longest CSV field read (characters); a longer one is refused with the file and line (the csv default is 128 KiB)."""


@dataclass(frozen=True)
class Table:
    """One opened source table: where its rows are and how to read them."""

    path: Path
    """The path the user gave."""
    root: Path
    """The folder audio paths in its rows are relative to (the file's folder, or a dataset's snapshot folder)."""
    format: str
    """``hf`` (parquet or Arrow through :mod:`airbench_nb.hf_data`), ``json``, ``jsonl``, ``csv`` or ``tsv``."""
    encoding: str = "utf-8"
    """Encoding of a text table."""
    dataset: DatasetSource | None = None
    """The Hugging Face source, for ``hf`` tables."""
    features: dict[str, Any] = field(default_factory=dict)
    """The dataset's features (``datasets``' description, ``ClassLabel`` names included); empty for text tables."""

    @property
    def audio_columns(self) -> list[str]:
        """Columns the dataset's schema says hold audio (``hf`` tables only; empty for text tables)."""
        return self.dataset.audio_columns if self.dataset is not None else []

    def class_names(self, column: str) -> list[str] | None:
        """The names of a ``ClassLabel`` column (index order), or None when the column is not one."""
        spec = self.features.get(column)
        if isinstance(spec, dict) and spec.get("_type") == "ClassLabel" and isinstance(spec.get("names"), list):
            return [str(name) for name in spec["names"]]
        return None

    def rows(self, columns: Sequence[str] | None = None) -> Iterator[SourceRow]:
        """The table's rows in order (see the module docstring).

        Raises:
            SourceError: For a file that is not the format its suffix says, a line that is not a JSON object, or a
                CSV line the csv reader refuses (the file and line named).
        """
        if self.format == "hf":
            assert self.dataset is not None
            yield from iter_rows(self.dataset, columns)
        elif self.format == "json":
            yield from _json_rows(self.path, self.encoding)
        elif self.format == "jsonl":
            yield from _jsonl_rows(self.path, self.encoding)
        else:
            yield from _csv_rows(self.path, self.encoding, "\t" if self.format == "tsv" else ",")


def open_table(
    path: str | Path, *, config: str | None = None, split: str | None = None, encoding: str = "utf-8"
) -> Table:
    """Open a source table (module docstring).

    Args:
        path: A ``.json``, ``.jsonl``, ``.csv`` or ``.tsv`` file, or any Hugging Face source.
        config: The dataset config, for a Hugging Face folder holding several.
        split: The split, for a Hugging Face folder holding several.
        encoding: Encoding of a text table.

    Raises:
        FileNotFoundError: When nothing is at ``path``.
        SourceError: For a Hugging Face source that cannot be read (:func:`airbench_nb.hf_data.resolve_source`).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    suffix = path.suffix.lower()
    if path.is_file() and suffix in TEXT_SUFFIXES:
        return Table(path=path, root=path.parent, format=suffix.lstrip("."), encoding=encoding)
    dataset = resolve_source(path, config=config, split=split)
    return Table(path=path, root=dataset.root, format="hf", dataset=dataset, features=dict(dataset.features))


def _decode(raw: bytes, path: Path, encoding: str, line: int | None = None) -> str:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        where = f"{path}:{line}" if line is not None else str(path)
        raise SourceError(
            f"{where}: not {encoding} text (byte {exc.start}); give the file's encoding (e.g. --encoding latin-1)"
        ) from None


def _json_rows(path: Path, encoding: str) -> Iterator[SourceRow]:
    text = _decode(path.read_bytes(), path, encoding)
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise SourceError(f"{path}: not JSON: {exc}") from None
    if isinstance(data, dict):  # a mapping of id -> row (some releases): the id becomes the row's "id" if absent
        data = [{"id": key, **value} if isinstance(value, dict) else value for key, value in data.items()]
    if not isinstance(data, list):
        raise SourceError(f"{path}: expected a JSON list of objects, got {type(data).__name__}")
    for index, row in enumerate(data):
        if not isinstance(row, dict):
            raise SourceError(f"{path}: entry {index}: expected an object, got {type(row).__name__}")
        yield SourceRow(path, index, row)


def _jsonl_rows(path: Path, encoding: str) -> Iterator[SourceRow]:
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            text = _decode(raw, path, encoding, lineno).strip()
            if not text:
                continue
            try:
                row = json.loads(text)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise SourceError(f"{path}:{lineno}: not JSON: {exc}") from None
            if not isinstance(row, dict):
                raise SourceError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            yield SourceRow(path, lineno, row)


def _csv_rows(path: Path, encoding: str, delimiter: str) -> Iterator[SourceRow]:
    csv.field_size_limit(MAX_CSV_FIELD)
    with open(path, "rb") as raw_handle:
        raw = raw_handle.read()
    text = _decode(raw, path, encoding)
    # newline="": the csv reader splits rows itself, at line ends only (str.splitlines would also cut a row at
    # U+2028, U+2029 or U+0085 inside a caption)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader, None)
        if not header:
            raise SourceError(f"{path}: empty (no header line)")
        names = [name.strip().lstrip("\ufeff") for name in header]
        for values in reader:
            if not any(v.strip() for v in values):
                continue
            row = {name: (values[i] if i < len(values) else "") for i, name in enumerate(names)}
            yield SourceRow(path, reader.line_num, row)
    except csv.Error as exc:
        raise SourceError(f"{path}:{reader.line_num}: {exc}") from None


__all__ = ["MAX_CSV_FIELD", "TEXT_SUFFIXES", "Table", "open_table"]
