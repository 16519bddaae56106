"""Declarative recipes: a table's columns mapped onto an item kind's fields (:class:`TableSpec`).

A spec is a small mapping, written in YAML or JSON by a user (``airbench-nb import --recipe-file my.yaml SOURCE``) or
declared in Python by the kit's own recipes. For example, MMAU's test-mini as the Hub's ``lmms-lab/mmau`` stores it::

    name: mmau-hub
    title: MMAU test-mini (lmms-lab/mmau parquet)
    kind: mmau
    dataset: mmau
    uid: id
    audio: audio                 # a {bytes, path} column
    question: question
    choices: choices             # a list column, or a JSON string of one
    answer: answer               # the text of the right choice
    fields: {task: task, category: category, sub_category: sub-category, difficulty: difficulty}

Where the parts come from:

- ``uid``: a column (its text), else ``<name>-<row>``; ``uid_prefix`` goes before it.
- ``audio``: a column holding ``{bytes, path}`` (a Hugging Face ``Audio`` column) or a path string, relative to the
  table's folder joined with ``audio_dir`` (which may name columns: ``clotho_audio_files/{split}``), never outside
  it; ``audio_suffix`` is added to a path without one. Audio is decoded with soundfile, downmixed to mono, resampled
  to ``sample_rate`` when given, and written by the import as a 16-bit wav.
- ``question`` a column, or ``question_text`` one text for every item.
- ``choices``: a column holding a list or a JSON string of one, a list of columns (``[choice_a, choice_b, choice_c,
  choice_d]``: empty cells dropped), or ``choices_feature``: the names of a ``ClassLabel`` column.
- ``answer``: the gold, read as ``answer_format`` ``text`` (the text of one choice, matched exactly after trimming),
  ``index`` (0 for the first) or ``letter`` (``A``...). A gold that is not one of the choices is a rejection, never a
  guess.
- ``fields``: item field to column (a list of columns makes a list: ``references: [caption_1, ..., caption_5]``),
  ``values``: item field to a constant, ``list_fields``: fields whose single value becomes a one-element list,
  ``meta``: columns copied into the item's ``meta``.
- ``cluster``: a column naming the item's cluster, the unit the bootstrap resamples (its source recording, its
  conversation, its sentence: :mod:`airbench_nb.records.clusters`), written to ``meta["cluster"]``. Imported clips
  are written one file per item, so without it every item is its own cluster; an empty cell leaves the item alone.

Every row the spec cannot map is rejected with its file, row and field, and the import goes on.
"""

from __future__ import annotations

import io
import json
import logging
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from airbench_nb.hf_data import AudioCellError, SourceRow
from airbench_nb.importing.recipe import ImportContext, Recipe, RecipeOption, SourceSlot
from airbench_nb.importing.tables import Table, open_table
from airbench_nb.importing.writer import WrittenAudio
from airbench_nb.records import LETTERS, ItemBase, item_class

logger = logging.getLogger(__name__)

MAX_AUDIO_BYTES = 512 * 1024 * 1024
"""Largest audio file or cell an import decodes (bytes); a bigger one is that row's rejection."""


class RowError(ValueError):
    """A row a recipe cannot use: the field at fault and why (the row is rejected, the import goes on)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"field {field!r}: {reason}")
        self.field = field
        self.reason = reason


class TableSpec(BaseModel):
    """A declarative recipe (module docstring)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """The recipe's name (lowercase letters, digits, ``_``, ``.``, ``-``)."""
    title: str = ""
    """What it imports, for people."""
    version: int = Field(default=1, ge=1)
    """Its version (recorded in ``dataset.json``)."""
    about: str = ""
    """Where to get the corpus."""
    kind: str
    """The item kind it writes (a registered kind: ``foundation``, ``transcription``, ``mmau``, ...)."""
    dataset: str = Field(min_length=1)
    """The items' ``dataset`` (the corpus's name)."""
    config: str | None = None
    """The Hugging Face config to read when none is given on the command line."""
    split: str | None = None
    """The Hugging Face split to read when none is given on the command line."""
    encoding: str = "utf-8"
    """Encoding of a text table (CSV, JSON)."""
    uid: str | None = None
    """Column holding the item's id; None: ``<name>-<row>``."""
    uid_prefix: str = ""
    """Text put before every uid."""
    audio: str
    """Column holding the audio: ``{bytes, path}`` or a path string."""
    audio_dir: str = ""
    """Folder, relative to the table's folder, that path strings are relative to; ``{column}`` placeholders allowed."""
    audio_suffix: str = ""
    """Suffix added to an audio path that has none (``.wav``)."""
    sample_rate: int | None = Field(default=None, ge=1000, le=384_000)
    """Resample every clip to this rate (Hz); None keeps each file's rate."""
    question: str | None = None
    """Column holding the question."""
    question_text: str | None = None
    """One question for every item (when there is no question column)."""
    choices: str | list[str] | None = None
    """Column holding the choices (a list, or a JSON string of one), or the list of choice columns."""
    choices_feature: str | None = None
    """A ``ClassLabel`` column whose names are the choices."""
    answer: str | None = None
    """Column holding the gold answer."""
    answer_format: Literal["text", "index", "letter"] = "text"
    """How the gold is given: the choice's text, its index (0 first) or its letter."""
    fields: dict[str, str | list[str]] = Field(default_factory=dict)
    """Item field to column (a list of columns: a list)."""
    values: dict[str, Any] = Field(default_factory=dict)
    """Item field to a constant."""
    list_fields: list[str] = Field(default_factory=list)
    """Fields whose single value becomes a one-element list (``references`` from one column)."""
    meta: list[str] = Field(default_factory=list)
    """Columns copied into the item's ``meta``."""
    cluster: str | None = None
    """Column naming the item's cluster (its source recording, conversation or sentence), written to
    ``meta["cluster"]`` (:data:`airbench_nb.records.CLUSTER_META_KEY`); None: the kind's rule."""

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        item_class(value)  # KeyError lists the known kinds
        return value


def load_spec(path: str | Path) -> TableSpec:
    """Read a recipe file (YAML or JSON).

    Raises:
        ValueError: For a file that is not a mapping, or a spec that is not valid (the file and field named).
    """
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the recipe: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a recipe is a mapping of keys (name, kind, audio, ...)")
    try:
        return TableSpec.model_validate(data)
    except KeyError as exc:
        raise ValueError(f"{path}: field 'kind': {exc.args[0]}") from None
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ".".join(str(p) for p in error["loc"]) or "recipe"
        raise ValueError(f"{path}: field {loc!r}: {error['msg']}") from None


def _text(value: Any, field: str) -> str:
    if value is None:
        raise RowError(field, "empty")
    if isinstance(value, bytes):
        raise RowError(field, "holds bytes, not text")
    if isinstance(value, (dict, list)):
        raise RowError(field, f"holds a {type(value).__name__}, not text")
    return str(value).strip()


def _column(row: SourceRow, column: str) -> Any:
    if column not in row.values:
        raise RowError(column, f"no such column (columns: {', '.join(map(str, row.values))})")
    return row.values[column]


def _choices_of(value: Any, field: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise RowError(field, f"neither a list nor a JSON list: {value[:80]!r}") from None
    if not isinstance(value, list):
        raise RowError(field, f"expected a list of choices, got {type(value).__name__}")
    return [_text(v, field) for v in value]


def gold_index(gold: Any, choices: list[str], answer_format: str, field: str = "answer") -> int:
    """The index of the gold answer among ``choices``.

    Raises:
        RowError: When the gold is empty or not one of the choices (nothing is guessed: no case folding, no partial
            match), or an index or letter out of range.
    """
    if answer_format == "index":
        try:
            index = int(gold)
        except (TypeError, ValueError):
            raise RowError(field, f"{gold!r} is not an index") from None
        if isinstance(gold, bool) or not 0 <= index < len(choices):
            raise RowError(field, f"index {gold!r} is not one of the {len(choices)} choices")
        return index
    text = _text(gold, field)
    if answer_format == "letter":
        letter = text.upper()
        if len(letter) != 1 or letter not in LETTERS[: len(choices)]:
            raise RowError(field, f"{text!r} is not a letter of the {len(choices)} choices")
        return LETTERS.index(letter)
    matches = [i for i, choice in enumerate(choices) if choice == text]
    if not matches:
        raise RowError(field, f"gold {text[:80]!r} is not among the choices {choices}")
    return matches[0]


def read_audio_bytes(data: bytes, where: str) -> tuple[np.ndarray, int]:
    """Decode an audio file's bytes with soundfile: mono float32 samples and their rate.

    Raises:
        RowError: For bytes soundfile cannot decode, empty audio, or NaN or infinite samples (field ``audio``).
    """
    import soundfile as sf

    if len(data) > MAX_AUDIO_BYTES:
        raise RowError("audio", f"{len(data)} bytes, over the {MAX_AUDIO_BYTES} an import decodes ({where})")
    try:
        samples, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        raise RowError("audio", f"cannot be decoded ({where}): {exc}") from None
    return check_decoded(samples.mean(axis=1), int(rate), where)


def check_decoded(samples: np.ndarray, rate: int, where: str) -> tuple[np.ndarray, int]:
    """Refuse empty audio and NaN or infinite samples (field ``audio``, the file named)."""
    if samples.size == 0:
        raise RowError("audio", f"empty ({where})")
    if not np.all(np.isfinite(samples)):
        raise RowError("audio", f"NaN or infinite samples ({where})")
    return np.ascontiguousarray(samples, dtype=np.float32), rate


def read_audio_file(path: Path, root: Path) -> tuple[np.ndarray, int]:
    """Decode an audio file under ``root`` (never outside it).

    Raises:
        RowError: For a path outside ``root``, a missing, oversized or undecodable file (field ``audio``).
    """
    base = root.resolve()
    resolved = path.resolve()
    if not resolved.is_relative_to(base):
        raise RowError("audio", f"path {str(path)!r} is outside the source folder {root}")
    if not resolved.is_file():
        raise RowError("audio", f"no file {path}")
    size = resolved.stat().st_size
    if size > MAX_AUDIO_BYTES:
        raise RowError("audio", f"{path}: {size} bytes, over the {MAX_AUDIO_BYTES} an import decodes")
    return read_audio_bytes(resolved.read_bytes(), str(path))


def resample(samples: np.ndarray, rate: int, target: int | None) -> tuple[np.ndarray, int]:
    """Samples at ``target`` Hz (soxr, high quality), or as they are when ``target`` is None or their rate."""
    if target is None or target == rate:
        return samples, rate
    import soxr

    return np.asarray(soxr.resample(samples, rate, target, quality="HQ"), dtype=np.float32), target


class AudioJobs:
    """Clips written by ``ctx.workers`` threads a few items ahead, their items then kept in order.

    :meth:`TableRecipe.run` and the recipes that read their rows themselves write audio through it: a clip that raises
    :class:`RowError` (or :class:`~airbench_nb.hf_data.AudioCellError`, field ``audio_field``) rejects its row. Use it
    as a context: leaving it settles every pending item.
    """

    def __init__(self, ctx: ImportContext, audio_field: str = "audio") -> None:
        """Start the threads of an import (``audio_field``: the field a cell that cannot be decoded is named by)."""
        self.ctx = ctx
        self.audio_field = audio_field
        self._pool = ThreadPoolExecutor(max_workers=max(1, ctx.workers), thread_name_prefix="import")
        self._pending: deque[tuple[str, ItemBase, Future[WrittenAudio]]] = deque()
        self._ahead = 4 * max(1, ctx.workers)

    def __enter__(self) -> AudioJobs:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if error is None:
                while self._pending:
                    self._settle(*self._pending.popleft())
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, where: str, item: ItemBase, clip: Callable[[], WrittenAudio]) -> None:
        """Write ``item``'s clip (``clip()``, in a thread), then keep the item; a :class:`RowError` rejects its row."""
        self._pending.append((where, item, self._pool.submit(clip)))
        while len(self._pending) > self._ahead:
            self._settle(*self._pending.popleft())

    def _settle(self, where: str, item: ItemBase, job: Future[WrittenAudio]) -> None:
        try:
            written = job.result()
        except RowError as exc:
            self.ctx.writer.reject(where, exc.field, exc.reason, uid=item.uid)
            return
        except AudioCellError as exc:
            self.ctx.writer.reject(where, self.audio_field, str(exc), uid=item.uid)
            return
        self.ctx.writer.keep(item, written, where=where)


class TableRecipe(Recipe):
    """A recipe run from a :class:`TableSpec` (module docstring); subclasses add fields a spec cannot say."""

    slots: ClassVar[tuple[SourceSlot, ...]] = (
        SourceSlot(
            "source",
            "the table: a parquet file or folder, a save_to_disk folder, a hub cache folder, or a "
            ".json, .jsonl or .csv file",
        ),
    )
    options: ClassVar[tuple[RecipeOption, ...]] = ()

    def __init__(self, spec: TableSpec, spec_path: Path | None = None) -> None:
        """Make the recipe of a spec (``spec_path``: the user's file it was read from)."""
        self.spec = spec
        self._spec_path = spec_path

    # Recipe's class attributes, from the spec
    @property  # type: ignore[override]
    def name(self) -> str:  # noqa: D102 - Recipe.name
        return self.spec.name

    @property  # type: ignore[override]
    def title(self) -> str:  # noqa: D102 - Recipe.title
        return self.spec.title or self.spec.name

    @property  # type: ignore[override]
    def version(self) -> int:  # noqa: D102 - Recipe.version
        return self.spec.version

    @property  # type: ignore[override]
    def kinds(self) -> tuple[str, ...]:  # noqa: D102 - Recipe.kinds
        return (self.spec.kind,)

    @property  # type: ignore[override]
    def about(self) -> str:  # noqa: D102 - Recipe.about
        return self.spec.about

    def spec_file(self) -> str | None:
        """The user's recipe file, or None for the kit's own."""
        return str(self._spec_path.resolve()) if self._spec_path is not None else None

    # -- the rows -------------------------------------------------------------------------------------------------

    def tables(self, ctx: ImportContext) -> Iterator[Table]:
        """The tables to read: each path of the ``source`` slot."""
        for path in ctx.sources["source"]:
            yield open_table(
                path,
                config=ctx.config or self.spec.config,
                split=ctx.split or self.spec.split,
                encoding=ctx.encoding or self.spec.encoding,
            )

    def run(self, ctx: ImportContext) -> None:
        """Map every row of every table onto an item (rejecting what cannot be mapped).

        Rows are read and their fields checked in order; their audio is decoded, resampled, written and hashed by
        ``ctx.workers`` threads (soundfile, soxr and hashlib release the GIL), at most a few rows ahead, so memory
        stays flat in the number of rows and items keep the source's order.
        """
        with AudioJobs(ctx, self.spec.audio) as jobs:
            for table in self.tables(ctx):
                for row in table.rows():
                    if ctx.done():
                        return
                    ctx.writer.count_row()
                    try:
                        item = self.check_row(ctx, table, row)
                    except RowError as exc:
                        ctx.writer.reject(row.where, exc.field, exc.reason, uid=self._uid_or_none(row))
                        continue
                    if item is not None:
                        jobs.submit(row.where, item, partial(self.audio, ctx, table, row, item.uid))

    def _uid_or_none(self, row: SourceRow) -> str | None:
        try:
            return self.uid(row)
        except RowError:
            return None

    def uid(self, row: SourceRow) -> str:
        """The item's uid (the ``uid`` column's text, or ``<name>-<row>``), after ``uid_prefix``."""
        spec = self.spec
        if spec.uid is None:
            return f"{spec.uid_prefix}{spec.name}-{row.row:06d}"
        text = _text(_column(row, spec.uid), spec.uid)
        if not text:
            raise RowError(spec.uid, "empty id")
        return f"{spec.uid_prefix}{text}"

    def audio(self, ctx: ImportContext, table: Table, row: SourceRow, name: str) -> WrittenAudio:
        """The row's audio, written (or found written by an earlier run) under the name ``name``."""
        written = ctx.writer.existing(name)
        if written is not None:
            return written
        samples, rate = self.decode(table, row)
        samples, rate = resample(samples, rate, self.spec.sample_rate)
        return ctx.writer.write_audio(name, samples, rate)

    def audio_root(self, table: Table, row: SourceRow) -> Path:
        """The folder the row's audio paths are relative to (the table's folder joined with ``audio_dir``)."""
        if not self.spec.audio_dir:
            return table.root
        try:
            folder = self.spec.audio_dir.format(**{k: v for k, v in row.values.items() if isinstance(v, str | int)})
        except (KeyError, IndexError, ValueError) as exc:
            raise RowError("audio_dir", f"{self.spec.audio_dir!r} names a column the row lacks ({exc})") from None
        return table.root / folder

    def decode(self, table: Table, row: SourceRow) -> tuple[np.ndarray, int]:
        """Decode the row's audio cell: ``{bytes, path}`` or a path string (module docstring)."""
        column = self.spec.audio
        cell = _column(row, column)
        root = self.audio_root(table, row)
        if isinstance(cell, dict):
            if cell.get("bytes"):
                return read_audio_bytes(cell["bytes"], f"{row.where}: column {column!r}")
            if cell.get("path"):
                return read_audio_file(root / str(cell["path"]), root)
            raise RowError(column, "no audio (neither bytes nor a path)")
        text = _text(cell, column)
        if not text:
            raise RowError(column, "empty audio path")
        path = Path(text)
        if self.spec.audio_suffix and not path.suffix:
            path = path.with_name(path.name + self.spec.audio_suffix)
        return read_audio_file(root / path, root)

    def choices(self, table: Table, row: SourceRow) -> list[str] | None:
        """The row's choices (module docstring), or None when the spec names none."""
        spec = self.spec
        if spec.choices_feature is not None:
            names = table.class_names(spec.choices_feature)
            if names is None:
                raise RowError(spec.choices_feature, "is not a ClassLabel column (no names in the dataset's features)")
            return names
        if spec.choices is None:
            return None
        if isinstance(spec.choices, str):
            return _choices_of(_column(row, spec.choices), spec.choices)
        found = []
        for column in spec.choices:
            value = _column(row, column)
            if value is not None and str(value).strip():
                found.append(_text(value, column))
        return found

    def fields(self, ctx: ImportContext, table: Table, row: SourceRow) -> dict[str, Any]:
        """The item's fields but its audio.

        Its uid, kind, dataset, question, choices and answer, then ``fields``, ``values`` and ``meta``; subclasses add
        to them.
        """
        spec = self.spec
        data: dict[str, Any] = {"kind": spec.kind, "dataset": spec.dataset, "uid": self.uid(row)}
        if spec.uid is not None:
            data["source_id"] = _text(_column(row, spec.uid), spec.uid)
        if spec.question is not None:
            data["question"] = _text(_column(row, spec.question), spec.question)
        elif spec.question_text is not None:
            data["question"] = spec.question_text
        choices = self.choices(table, row)
        if choices is not None:
            data["choices"] = choices
            if spec.answer is not None:
                data["answer"] = gold_index(_column(row, spec.answer), choices, spec.answer_format, spec.answer)
        for name, columns in spec.fields.items():
            if isinstance(columns, list):
                data[name] = [_text(_column(row, c), c) for c in columns]
            else:
                value = _column(row, columns)
                data[name] = value if isinstance(value, list) or value is None else _text(value, columns)
        data.update(spec.values)
        for name in spec.list_fields:
            if name in data and not isinstance(data[name], list):
                data[name] = [data[name]]
        if spec.meta:
            data["meta"] = {c: _jsonable(row.values.get(c)) for c in spec.meta}
        if spec.cluster is not None:
            value = _column(row, spec.cluster)
            if value is not None and str(value).strip():
                from airbench_nb.records import CLUSTER_META_KEY

                data.setdefault("meta", {})[CLUSTER_META_KEY] = _text(value, spec.cluster)
        return data

    def check_row(self, ctx: ImportContext, table: Table, row: SourceRow) -> ItemBase | None:
        """The row's item, its fields checked before any audio is decoded; None when the writer rejected it."""
        data = self.fields(ctx, table, row)
        data["audio"] = ctx.writer.audio_path(data["uid"])
        return ctx.writer.validate(data, where=row.where)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


__all__ = [
    "MAX_AUDIO_BYTES",
    "AudioJobs",
    "RowError",
    "TableRecipe",
    "TableSpec",
    "check_decoded",
    "gold_index",
    "load_spec",
    "read_audio_bytes",
    "read_audio_file",
    "resample",
]
