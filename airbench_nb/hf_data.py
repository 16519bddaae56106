"""Hugging Face datasets read offline: where a dataset's rows are, the rows streamed, and their audio decoded.

The field's data comes as Hugging Face datasets. ``datasets.load_dataset("org/name")`` fails offline even when the
files are in the local hub cache, and ``datasets`` >= 4 decodes audio through torchcodec, which the kit does not
need; so the kit reads the files themselves with pyarrow. A source (:func:`resolve_source`) is any of

- one ``.parquet`` file;
- a folder of parquet shards in any of the Hub's naming schemes: ``data/test-00000-of-00001.parquet``,
  ``<config>/<split>/0000.parquet``, ``<config>/test-00000-of-00002.parquet`` (the config and split pick the
  shards; a folder holding several configs or splits needs them named);
- a ``save_to_disk`` folder (``state.json`` and Arrow stream files; of a ``DatasetDict``, its split's sub-folder);
- a hub cache folder (``$HF_HOME/hub/datasets--org--name``), resolved through ``refs/main`` to its snapshot.

:func:`iter_rows` streams the rows one record batch at a time (a parquet row group, an Arrow stream batch), never
the whole table, each with the file and row it came from so that a bad row can be named. Audio columns (the
``Audio`` feature of the dataset's schema, or any ``{bytes, path}`` struct) are read undecoded; :func:`decode_audio`
decodes one cell with soundfile, from its bytes or from its path under the source's folder.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

logger = logging.getLogger(__name__)

HF_METADATA_KEY = b"huggingface"
"""Key of a parquet schema's metadata under which ``datasets`` writes the dataset's features."""


class SourceError(ValueError):
    """A dataset source that cannot be read: the message names the path and what is wrong."""


class AudioCellError(ValueError):
    """An audio cell that cannot be decoded: the message names the file, row and column."""


@dataclass(frozen=True)
class DatasetSource:
    """Where the rows of one split of a dataset are."""

    format: Literal["parquet", "arrow"]
    """``parquet`` shards, or the Arrow stream files of a ``save_to_disk`` folder."""
    files: tuple[Path, ...]
    """The files holding the rows, in row order."""
    root: Path
    """The folder the files were found in (a hub cache's snapshot folder): audio paths are resolved under it."""
    features: dict[str, Any] = field(default_factory=dict)
    """The dataset's features as ``datasets`` describes them (``{"audio": {"_type": "Audio", ...}, ...}``); empty
    when the files carry none."""
    revision: str | None = None
    """The hub cache's commit (``refs/main``) the snapshot belongs to; None for other sources."""
    config: str | None = None
    """The config the shards were picked for, when the folder names configs."""
    split: str | None = None
    """The split the shards were picked for, when the folder names splits."""

    @property
    def audio_columns(self) -> list[str]:
        """Columns holding audio: ``Audio`` features, else every column whose values are ``{bytes, path}`` structs."""
        named = [
            name for name, spec in self.features.items() if isinstance(spec, dict) and spec.get("_type") == "Audio"
        ]
        if named or self.features:
            return named
        schema = _schema(self)
        return [f.name for f in schema if _is_audio_struct(f.type)]

    @property
    def columns(self) -> list[str]:
        """Every column, in schema order."""
        return list(_schema(self).names)

    def num_rows(self) -> int:
        """Rows in the split (from the parquet footers; an Arrow stream is counted batch by batch)."""
        import pyarrow.parquet as pq

        if self.format == "parquet":
            return sum(pq.ParquetFile(path).metadata.num_rows for path in self.files)
        return sum(batch.num_rows for path in self.files for batch in _arrow_batches(path, None))


@dataclass(frozen=True)
class SourceRow:
    """One row of a dataset, with where it came from."""

    file: Path
    """The file it was read from."""
    row: int
    """Its 0-based row number in that file."""
    values: dict[str, Any]
    """Column name to value (an audio cell undecoded: ``{"bytes": ..., "path": ...}``)."""

    @property
    def where(self) -> str:
        """``<file>: row <n>``, for messages."""
        return f"{self.file}: row {self.row}"


def _is_audio_struct(arrow_type: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_struct(arrow_type) and {arrow_type.field(i).name for i in range(arrow_type.num_fields)} == {
        "bytes",
        "path",
    }


def _schema(source: DatasetSource) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = source.files[0]
    if source.format == "parquet":
        return pq.read_schema(path)
    with pa.memory_map(str(path)) as stream:
        return pa.ipc.open_stream(stream).schema


def _features_of_parquet(path: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    metadata = pq.read_schema(path).metadata or {}
    raw = metadata.get(HF_METADATA_KEY)
    if raw is None:
        return {}
    try:
        info = json.loads(raw)
    except ValueError:
        logger.warning("%s: the huggingface schema metadata is not JSON; features unknown", path)
        return {}
    features = (info.get("info") or {}).get("features") or {}
    return features if isinstance(features, dict) else {}


def hub_snapshot(folder: Path) -> tuple[Path, str]:
    """The snapshot folder of a hub cache folder (``datasets--org--name``) that ``refs/main`` names, and its commit.

    Raises:
        SourceError: When the folder has no ``refs/main``, or it names no snapshot folder.
    """
    ref = folder / "refs" / "main"
    if not ref.is_file():
        raise SourceError(f"{folder}: a hub cache folder without refs/main (was the dataset downloaded?)")
    revision = ref.read_text(encoding="utf-8").strip()
    snapshot = folder / "snapshots" / revision
    if not re.fullmatch(r"[0-9a-f]{7,64}", revision) or not snapshot.is_dir():
        raise SourceError(f"{folder}: refs/main names {revision!r}, which has no snapshot folder")
    return snapshot, revision


def _save_to_disk(folder: Path, split: str | None) -> DatasetSource:
    splits_file = folder / "dataset_dict.json"
    if splits_file.is_file():
        splits = json.loads(splits_file.read_text(encoding="utf-8")).get("splits", [])
        chosen = split or (splits[0] if len(splits) == 1 else None)
        if chosen not in splits:
            raise SourceError(f"{folder}: a DatasetDict with splits {', '.join(splits)}; name one (got {split!r})")
        return _save_to_disk(folder / chosen, None)
    state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    names = [entry.get("filename") for entry in state.get("_data_files", [])]
    files = tuple(folder / name for name in names if isinstance(name, str))
    if not files or any(not f.is_file() or f.resolve().parent != folder.resolve() for f in files):
        raise SourceError(f"{folder}: state.json names data files that are not in the folder: {names}")
    info_file = folder / "dataset_info.json"
    info = json.loads(info_file.read_text(encoding="utf-8")) if info_file.is_file() else {}
    features = info.get("features") if isinstance(info.get("features"), dict) else {}
    return DatasetSource("arrow", files, folder, features, split=state.get("_split") or split)


_SPLIT_STEM = re.compile(r"^(?P<split>[A-Za-z0-9_.]+?)-\d{5}-of-\d{5}(?:-[0-9a-f]{16})?$")
"""A shard's stem: ``<split>-00000-of-00002``, with the 16-hex-digit hash older ``push_to_hub`` uploads add
(``data/session1-00000-of-00001-04e11ca668d90573.parquet``, ``Zahra99/IEMOCAP_Audio``)."""


def split_of(relative: Path) -> str | None:
    """The split a shard's path names.

    ``test-00000-of-00002.parquet`` (an upload's ``-<hash>`` after it allowed), or a ``<split>/`` folder above a plain
    name.
    """
    match = _SPLIT_STEM.match(relative.stem)
    if match:
        return match.group("split")
    if len(relative.parts) >= 2 and relative.parts[-2] != "data":
        return relative.parts[-2]
    return relative.stem  # test.parquet, data/test.parquet


def config_of(relative: Path) -> str | None:
    """The config a shard's path names: its first folder, unless that is ``data`` or the split's own folder."""
    if len(relative.parts) < 2 or relative.parts[0] == "data":
        return None
    if len(relative.parts) == 2 and not _SPLIT_STEM.match(relative.stem):
        return None  # <split>/0000.parquet
    return relative.parts[0]


def _parquet_folder(folder: Path, config: str | None, split: str | None) -> DatasetSource:
    shards = sorted(p for p in folder.rglob("*.parquet") if p.is_file() and ".cache" not in p.parts)
    if not shards:
        raise SourceError(f"{folder}: no parquet file, state.json or hub cache in it")
    rel = [p.relative_to(folder) for p in shards]
    configs = sorted({c for r in rel if (c := config_of(r)) is not None})
    if config is None and len(configs) > 1:
        raise SourceError(f"{folder}: several configs ({', '.join(configs)}): name one")
    chosen_config = config if config is not None else (configs[0] if configs else None)
    if chosen_config is not None and chosen_config not in configs:
        raise SourceError(f"{folder}: no config {chosen_config!r}; configs: {', '.join(configs) or 'none'}")
    kept = [(p, r) for p, r in zip(shards, rel, strict=True) if config_of(r) == chosen_config]
    splits = sorted({s for _, r in kept if (s := split_of(r)) is not None})
    if split is None and len(splits) > 1:
        raise SourceError(f"{folder}: several splits ({', '.join(splits)}): name one")
    chosen_split = split if split is not None else (splits[0] if splits else None)
    files = tuple(p for p, r in kept if split_of(r) == chosen_split)
    if not files:
        raise SourceError(f"{folder}: no split {chosen_split!r}; splits: {', '.join(splits) or 'none'}")
    return DatasetSource(
        "parquet", files, folder, _features_of_parquet(files[0]), config=chosen_config, split=chosen_split
    )


def resolve_source(source: str | Path, *, config: str | None = None, split: str | None = None) -> DatasetSource:
    """Where the rows of a dataset split are (see the module docstring for the sources understood).

    Args:
        source: A parquet file, a folder of shards, a ``save_to_disk`` folder or a hub cache folder.
        config: The config, when the folder holds several (``de_en``, ``Foundation``, ...).
        split: The split (``test``, ...), when the folder holds several.

    Raises:
        FileNotFoundError: When ``source`` does not exist.
        SourceError: When it holds no dataset, or several configs or splits and none is named (the message lists
            them), or names files that are not there.
    """
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if path.is_file():
        if path.suffix != ".parquet":
            raise SourceError(f"{path}: not a parquet file (give a .parquet file or a dataset folder)")
        return DatasetSource("parquet", (path,), path.parent, _features_of_parquet(path))
    revision = None
    if (path / "refs").is_dir() and (path / "snapshots").is_dir():
        path, revision = hub_snapshot(path)
    if (path / "state.json").is_file() or (path / "dataset_dict.json").is_file():
        found = _save_to_disk(path, split)
    else:
        found = _parquet_folder(path, config, split)
    if revision is not None:
        found = DatasetSource(
            found.format, found.files, found.root, found.features, revision, found.config, found.split
        )
    logger.info("dataset source %s: %d %s file(s)", source, len(found.files), found.format)
    return found


def _arrow_batches(path: Path, columns: Sequence[str] | None) -> Iterator[Any]:
    import pyarrow as pa

    with pa.memory_map(str(path)) as stream:
        for batch in pa.ipc.open_stream(stream):
            yield batch.select(list(columns)) if columns else batch


def iter_rows(
    source: DatasetSource, columns: Sequence[str] | None = None, *, batch_rows: int = 64
) -> Iterator[SourceRow]:
    """The rows of a source in order, one record batch in memory at a time.

    Args:
        source: From :func:`resolve_source`.
        columns: Columns to read (None: all).
        batch_rows: Rows per parquet batch (at most a row group's).

    Raises:
        SourceError: For a column the files do not have (the message lists those they have).
    """
    import pyarrow.parquet as pq

    wanted = list(columns) if columns else None
    if wanted:
        missing = [c for c in wanted if c not in source.columns]
        if missing:
            raise SourceError(f"{source.files[0]}: no column(s) {missing}; columns: {', '.join(source.columns)}")
    for path in source.files:
        row = 0
        if source.format == "parquet":
            # pre_buffer=False: pyarrow otherwise buffers column chunks ahead, and its pool grows with the file
            # (an audio dataset's whole size); without it the pool stays at about one batch
            reader = pq.ParquetFile(path, pre_buffer=False)
            batches: Iterator[Any] = reader.iter_batches(batch_size=batch_rows, columns=wanted)
        else:
            batches = _arrow_batches(path, wanted)
        for batch in batches:
            for values in batch.to_pylist():
                yield SourceRow(path, row, values)
                row += 1


def decode_audio(row: SourceRow, column: str, root: Path) -> tuple[np.ndarray, int]:
    """Decode one audio cell (``{bytes, path}``) with soundfile: mono float32 samples and their rate.

    The bytes are decoded when there are any; otherwise the path, relative to ``root`` (the source's folder), never
    outside it.

    Raises:
        AudioCellError: For an empty cell, a path outside ``root`` or missing, or bytes soundfile cannot decode; the
            message names the file, row and column.
    """
    import soundfile as sf

    cell = row.values.get(column)
    where = f"{row.where}: column {column!r}"
    if not isinstance(cell, dict) or not (cell.get("bytes") or cell.get("path")):
        raise AudioCellError(f"{where}: no audio (neither bytes nor a path)")
    try:
        if cell.get("bytes"):
            samples, sr = sf.read(io.BytesIO(cell["bytes"]), dtype="float32", always_2d=True)
        else:
            base = root.resolve()
            path = (base / cell["path"]).resolve()
            if not path.is_relative_to(base):
                raise AudioCellError(f"{where}: audio path {cell['path']!r} is outside {root}")
            if not path.is_file():
                raise AudioCellError(f"{where}: audio path {cell['path']!r} not found under {root}")
            samples, sr = sf.read(path, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        raise AudioCellError(f"{where}: audio cannot be decoded: {exc}") from exc
    if samples.size == 0:
        raise AudioCellError(f"{where}: the audio is empty")
    return samples.mean(axis=1), int(sr)


__all__ = [
    "HF_METADATA_KEY",
    "AudioCellError",
    "DatasetSource",
    "SourceError",
    "SourceRow",
    "config_of",
    "decode_audio",
    "hub_snapshot",
    "iter_rows",
    "resolve_source",
    "split_of",
]
