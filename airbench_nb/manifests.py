"""JSONL manifests: read, write, validate, and check their audio.

A manifest is a JSONL file, one record a line (:class:`~airbench_nb.records.FoundationItem` or
:class:`~airbench_nb.records.ChatItem`, told apart by ``kind``). Audio paths are relative to the manifest's
*data root*: the folder named by ``data_root`` in a ``dataset.json`` beside the manifest, else the manifest's own
folder. Errors name the file, the line, the item uid and the field.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from airbench_nb.audio import probe_audio
from airbench_nb.records import AudioStatus, ChatItem, FoundationItem, Item, Record

logger = logging.getLogger(__name__)

DATASET_CARD = "dataset.json"
"""Name of the sidecar file that records a manifest folder's data root and provenance."""

AnyItem = FoundationItem | ChatItem
M = TypeVar("M", bound=BaseModel)
_ITEM_ADAPTER: TypeAdapter[AnyItem] = TypeAdapter(Item)


@dataclass
class ManifestError(ValueError):
    """A problem with one line of a manifest, located precisely."""

    file: str
    """The manifest file."""
    line: int | None
    """1-based line number, or None for a file-level problem."""
    message: str
    """What is wrong."""
    uid: str | None = None
    """Uid of the item on that line, when it could be read."""
    field: str | None = None
    """Dotted name of the offending field, when one is to blame."""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        parts = [where]
        if self.uid is not None:
            parts.append(f"item {self.uid!r}")
        if self.field is not None:
            parts.append(f"field {self.field!r}")
        return ": ".join(parts) + f": {self.message}"


class DatasetCard(Record):
    """The ``dataset.json`` beside a manifest: where its audio lives and where it came from."""

    data_root: str = "."
    """Folder that audio paths are relative to: absolute, or relative to the card's folder."""
    source: str = "unknown"
    """How the manifests were made: ``official-import``, ``build:<preset>``, ..."""
    created: datetime = Field(default_factory=lambda: datetime.now(UTC))
    """When the manifests were written (UTC)."""
    counts: dict[str, Any] = Field(default_factory=dict)
    """Summary counts written by the tool that made the manifests."""


def _validation_errors(exc: ValidationError, file: str, line: int, uid: str | None) -> list[ManifestError]:
    errors = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"] if p not in ("foundation", "chat")]
        field = ".".join(loc) or None
        errors.append(ManifestError(file, line, err["msg"], uid=uid, field=field))
    return errors


def _iter_json_lines(path: Path) -> Iterable[tuple[int, Any, ManifestError | None]]:
    with open(path, encoding="utf-8") as handle:
        for lineno, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                yield lineno, json.loads(text), None
            except json.JSONDecodeError as exc:
                yield lineno, None, ManifestError(str(path), lineno, f"invalid JSON: {exc.msg} (column {exc.colno})")


def _parse_lines(path: Path, parse: Any, key: str | None) -> tuple[list[Any], list[ManifestError]]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such manifest file")
    items: list[Any] = []
    errors: list[ManifestError] = []
    seen: dict[str, int] = {}
    for lineno, obj, err in _iter_json_lines(path):
        if err is not None:
            errors.append(err)
            continue
        if not isinstance(obj, dict):
            errors.append(ManifestError(str(path), lineno, f"expected a JSON object, got {type(obj).__name__}"))
            continue
        uid = obj.get("uid") if isinstance(obj.get("uid"), str) else None
        try:
            record = parse(obj)
        except ValidationError as exc:
            errors.extend(_validation_errors(exc, str(path), lineno, uid))
            continue
        if key is not None:
            value = getattr(record, key)
            if value in seen:
                errors.append(
                    ManifestError(
                        str(path), lineno, f"duplicate uid (first on line {seen[value]})", uid=value, field=key
                    )
                )
                continue
            seen[value] = lineno
        items.append(record)
    return items, errors


@overload
def read_manifest(path: str | Path, *, strict: Literal[True] = True) -> list[AnyItem]: ...


@overload
def read_manifest(path: str | Path, *, strict: Literal[False]) -> tuple[list[AnyItem], list[ManifestError]]: ...


def read_manifest(
    path: str | Path, *, strict: bool = True
) -> list[AnyItem] | tuple[list[AnyItem], list[ManifestError]]:
    """Read a JSONL manifest of Foundation and/or Chat items.

    Args:
        path: The manifest file.
        strict: When True (default) the first bad line raises; when False, bad lines are skipped and returned
            as errors next to the good items.

    Returns:
        The items in file order; with ``strict=False``, ``(items, errors)``.

    Raises:
        ManifestError: On invalid JSON, a record that fails validation, or a duplicate uid (strict mode). The
            message names file, line, uid and field.
        FileNotFoundError: If the manifest does not exist.
    """
    items, errors = _parse_lines(Path(path), _ITEM_ADAPTER.validate_python, key="uid")
    if strict:
        if errors:
            raise errors[0]
        return items
    return items, errors


def read_records(path: str | Path, model: type[M], *, strict: bool = True) -> list[M]:
    """Read a JSONL file of one record type (responses, verdicts, ...).

    Args:
        path: The JSONL file.
        model: The pydantic model of each line.
        strict: Raise on the first bad line (True) or skip bad lines with a logged warning (False).

    Returns:
        The records in file order.

    Raises:
        ManifestError: On a bad line in strict mode.
    """
    records, errors = _parse_lines(Path(path), model.model_validate, key=None)
    if errors and strict:
        raise errors[0]
    for err in errors:
        logger.warning("skipping bad line: %s", err)
    return records


def _atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dumps_record(record: BaseModel) -> str:
    """Serialise a record to one deterministic JSON line (no trailing newline)."""
    return json.dumps(record.model_dump(mode="json"), ensure_ascii=False, sort_keys=False)


def write_records(path: str | Path, records: Iterable[BaseModel]) -> Path:
    """Write records to a JSONL file atomically (a crash never leaves half a file).

    Args:
        path: Destination file; parent folders are created.
        records: Records to write, one per line, in order.

    Returns:
        The path written.
    """
    path = Path(path)
    _atomic_write_text(path, "".join(dumps_record(r) + "\n" for r in records))
    return path


def write_manifest(path: str | Path, items: Sequence[AnyItem]) -> Path:
    """Write items to a JSONL manifest atomically, refusing duplicate uids.

    Args:
        path: Destination file.
        items: Foundation and/or Chat items.

    Returns:
        The path written.

    Raises:
        ValueError: If two items share a uid.
    """
    seen: set[str] = set()
    for item in items:
        if item.uid in seen:
            raise ValueError(f"{path}: duplicate uid {item.uid!r}")
        seen.add(item.uid)
    return write_records(path, items)


def write_dataset_card(folder: str | Path, card: DatasetCard) -> Path:
    """Write ``dataset.json`` into a manifest folder."""
    path = Path(folder) / DATASET_CARD
    _atomic_write_text(path, card.model_dump_json(indent=2) + "\n")
    return path


def read_dataset_card(folder: str | Path) -> DatasetCard | None:
    """Read ``dataset.json`` from a manifest folder, or None when there is none."""
    path = Path(folder) / DATASET_CARD
    if not path.is_file():
        return None
    try:
        return DatasetCard.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise ManifestError(str(path), None, f"invalid dataset card: {exc}") from exc


def data_root(manifest: str | Path) -> Path:
    """Return the folder that a manifest's audio paths are relative to.

    It is ``data_root`` of the ``dataset.json`` beside the manifest (relative to that folder unless absolute),
    else the manifest's own folder.
    """
    folder = Path(manifest).resolve().parent
    card = read_dataset_card(folder)
    if card is None:
        return folder
    root = Path(card.data_root)
    return root if root.is_absolute() else (folder / root).resolve()


def resolve_audio(root: str | Path, relative: str) -> Path:
    """Join a record's audio path to its data root, refusing anything that lands outside the root.

    Args:
        root: The data root.
        relative: The record's relative audio path.

    Returns:
        The absolute path of the audio file (which may not exist).

    Raises:
        ValueError: If the path is absolute, contains ``..``, or resolves (through symlinks) outside ``root``.
    """
    from airbench_nb.records import check_relative_audio_path

    relative = check_relative_audio_path(relative)
    root = Path(root).resolve()
    full = (root / relative).resolve()
    if not full.is_relative_to(root):
        raise ValueError(f"audio path {relative!r} resolves to {full}, outside the data root {root}")
    return full


_STATUS_NOTE = re.compile(r"audio (?:missing|empty|corrupt): ")


def check_audio(items: Sequence[AnyItem], root: str | Path, workers: int = 4) -> list[AnyItem]:
    """Probe every item's audio file and record its status and SHA-256. Never raises for a bad file.

    Args:
        items: Items to check.
        root: Their data root.
        workers: Threads used for hashing and decoding.

    Returns:
        New items with ``audio_status`` and ``audio_sha256`` filled in (and a note explaining a bad status).
    """

    def one(item: AnyItem) -> AnyItem:
        # Drop the status note of an earlier check (only that one: other notes may also mention audio).
        notes = [n for n in item.notes if not _STATUS_NOTE.match(n)]
        try:
            path = resolve_audio(root, item.audio)
        except ValueError as exc:
            notes.append(f"audio missing: {exc}")
            return item.model_copy(update={"audio_status": AudioStatus.missing, "audio_sha256": None, "notes": notes})
        probe = probe_audio(path)
        if probe.detail:
            # Name the file by its manifest path: absolute paths differ between machines.
            notes.append(f"audio {probe.status.value}: {probe.detail.replace(str(path), item.audio)}")
        return item.model_copy(update={"audio_status": probe.status, "audio_sha256": probe.sha256, "notes": notes})

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, items))


def items_frame(items: Sequence[AnyItem]) -> Any:
    """A pandas DataFrame with one row per item, for display: uid, task, category, question, answer, audio.

    Args:
        items: Foundation and/or Chat items.

    Returns:
        A ``pandas.DataFrame``.
    """
    import pandas as pd

    rows = []
    for item in items:
        row: dict[str, Any] = {
            "uid": item.uid,
            "kind": item.kind,
            "task": item.task,
            "category": item.category,
            "question": item.question,
        }
        if isinstance(item, FoundationItem):
            row["choices"] = " | ".join(f"{'ABCD'[i]}. {c}" for i, c in enumerate(item.choices))
            row["answer"] = item.answer_letter
        else:
            row["choices"] = ""
            row["answer"] = item.reference
        row["audio"] = item.audio
        row["audio_status"] = item.audio_status.value if item.audio_status else None
        rows.append(row)
    return pd.DataFrame(rows)
