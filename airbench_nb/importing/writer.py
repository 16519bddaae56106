"""What an import writes: a normal data folder, resumable, with every rejected row counted.

An :class:`ImportWriter` owns the ``--out`` folder of one import. A recipe hands it

- audio (:meth:`ImportWriter.write_audio`): decoded samples, written as a 16-bit wav under ``audio/`` at once (a
  temporary file renamed) and then journalled in ``import-audio.jsonl`` with its SHA-256 (not fsynced file by file:
  a file whose bytes a crash kept from the disk fails the resume's SHA-256 check and is written again);
- items (:meth:`ImportWriter.add`): dicts or records of a registered item kind, validated, the audio's SHA-256 set;
- rejections (:meth:`ImportWriter.reject`): the file, row and field of a row it cannot use, and why.

:meth:`ImportWriter.finish` writes one manifest per kind (``<kind>.jsonl``), ``rejected.jsonl`` and ``dataset.json``
(its ``source`` is ``import:<recipe>``; :class:`~airbench_nb.manifests.DatasetCard.recipe` records the recipe, its
version, the sources and options; ``counts`` the items per kind, the rows read and the rejections by field).

Re-running an import into its own folder resumes: before decoding a row's audio a recipe asks
:meth:`ImportWriter.existing`, which answers with the journalled file when it is still there with the same SHA-256,
so audio already written and verified is not decoded or written again. A folder another tool wrote, or another
recipe's import, is refused: an import never overwrites data it did not make.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import struct
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from airbench_nb.audio import sha256_file
from airbench_nb.manifests import DATASET_CARD, DatasetCard, ImportRecord, read_dataset_card, write_dataset_card
from airbench_nb.manifests import write_manifest as write_manifest_file
from airbench_nb.records import AudioStatus, ItemBase, item_class

logger = logging.getLogger(__name__)

SOURCE_PREFIX = "import:"
"""How ``dataset.json`` records an import's source: this prefix, then the recipe's name."""

AUDIO_JOURNAL = "import-audio.jsonl"
"""The journal of the audio an import wrote (one ``{"path", "sha256", "seconds", "rate"}`` line a file)."""

REJECTED_FILE = "rejected.jsonl"
"""The rejected rows of an import, one ``{"where", "field", "reason", "uid"}`` line each."""

SHOWN_REASONS = 3
"""Rejections quoted in the error of an import whose every row was rejected."""

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class ImportRefused(ValueError):
    """An import that cannot go on: the ``--out`` folder is not the import's, or every row was rejected."""


@dataclass(frozen=True)
class WrittenAudio:
    """An audio file an import wrote (or found already written and verified)."""

    path: str
    """Its path relative to the data folder (``audio/<recipe>/<name>.wav``)."""
    sha256: str
    """SHA-256 of its bytes."""
    seconds: float
    """Its duration."""
    rate: int
    """Its sample rate (Hz)."""
    reused: bool = False
    """Whether it was found written by an earlier run of the import (not decoded again)."""


@dataclass(frozen=True)
class Rejection:
    """A row an import could not use."""

    where: str
    """The file and row (``file.parquet: row 12``, ``meta.jsonl:7``)."""
    field: str
    """The field or column at fault (``audio``, ``answer``, ...)."""
    reason: str
    """Why, in one line."""
    uid: str | None = None
    """The row's id when it has one."""


@dataclass
class ImportResult:
    """What an import did."""

    out: Path
    """The data folder written."""
    recipe: str
    """The recipe's name."""
    items: dict[str, int] = field(default_factory=dict)
    """Items written, per kind."""
    rows: int = 0
    """Rows read from the sources."""
    rejected: list[Rejection] = field(default_factory=list)
    """The rows rejected, in order."""
    audio_written: int = 0
    """Audio files decoded and written by this run."""
    audio_reused: int = 0
    """Audio files found written and verified by an earlier run (resume)."""

    @property
    def imported(self) -> int:
        """Items written, over every kind."""
        return sum(self.items.values())

    def rejected_by_field(self) -> dict[str, int]:
        """Rejections per field, most frequent first."""
        return dict(Counter(r.field for r in self.rejected).most_common())


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    """A mono 16-bit PCM WAV file's bytes (the canonical 44-byte header, then the samples, little-endian).

    Each sample is rounded to the nearest of the 65,536 levels (``x * 32768``) and clipped to them, as libsndfile
    does. Written with numpy rather than soundfile: soundfile writes to memory through Python callbacks,
    which hold the GIL and kept the import's threads from running side by side.
    """
    pcm = np.clip(np.rint(np.asarray(samples, dtype=np.float64) * 32768.0), -32768, 32767).astype("<i2").tobytes()
    header = struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + len(pcm),
        b"WAVE",
        b"fmt ",
        16,
        1,
        1,
        rate,
        2 * rate,
        2,
        16,
        b"data",
        len(pcm),
    )
    return header + pcm


def safe_name(text: str) -> str:
    """A file-name-safe form of an id (letters, digits, ``.``, ``_`` and ``-``; other runs become ``_``)."""
    name = _SAFE_NAME.sub("_", text).strip("._") or "item"
    if name != text:
        name = f"{name[:80]}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    return name


class ImportWriter:
    """Writes one import's data folder (module docstring)."""

    def __init__(self, out: str | Path, recipe: str, version: int) -> None:
        """Open (or resume) the data folder ``out`` for ``recipe``.

        Raises:
            ImportRefused: When ``out`` holds files an import of ``recipe`` did not write.
        """
        self.out = Path(out)
        self.recipe = recipe
        self.version = version
        self._check_out()
        self.out.mkdir(parents=True, exist_ok=True)
        self._journal_path = self.out / AUDIO_JOURNAL
        self._journal: dict[str, WrittenAudio] = self._read_journal()
        self._journal_handle = open(self._journal_path, "a", encoding="utf-8")  # noqa: SIM115 - closed by finish()
        self._items: dict[str, list[ItemBase]] = {}
        self._uids: dict[str, str] = {}
        self._lock = threading.Lock()  # audio is written by several threads: the journal and its counts are shared
        self.result = ImportResult(out=self.out, recipe=recipe)

    # -- the folder -------------------------------------------------------------------------------------------

    def _check_out(self) -> None:
        if not self.out.exists() or (self.out.is_dir() and not any(self.out.iterdir())):
            return
        if not self.out.is_dir():
            raise ImportRefused(f"--out {self.out} is a file; give a folder")
        try:
            card = read_dataset_card(self.out)
        except Exception as exc:  # noqa: BLE001 - any unreadable card means: not ours
            raise ImportRefused(
                f"--out {self.out}: its {DATASET_CARD} cannot be read ({exc}); give a new folder"
            ) from None
        journal = (self.out / AUDIO_JOURNAL).is_file()
        if card is None and journal:
            return  # an import stopped before it wrote dataset.json: resume it
        if card is not None and card.source == f"{SOURCE_PREFIX}{self.recipe}":
            return
        what = f"data from {card.source!r}" if card is not None else "files no import wrote"
        raise ImportRefused(
            f"--out {self.out} holds {what}; an import of {self.recipe!r} writes only into a new folder or its own"
        )

    def _read_journal(self) -> dict[str, WrittenAudio]:
        found: dict[str, WrittenAudio] = {}
        if not self._journal_path.is_file():
            return found
        with open(self._journal_path, "rb") as handle:
            for raw in handle:
                try:
                    entry = json.loads(raw)
                    written = WrittenAudio(
                        path=str(entry["path"]),
                        sha256=str(entry["sha256"]),
                        seconds=float(entry["seconds"]),
                        rate=int(entry["rate"]),
                    )
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a crash: that file is written again
                found[written.path] = written
        return found

    # -- audio --------------------------------------------------------------------------------------------------

    def audio_path(self, name: str) -> str:
        """The relative path an audio file named ``name`` gets (``audio/<recipe>/<safe name>.wav``)."""
        parts = [safe_name(part) for part in name.split("/") if part]
        return "/".join(["audio", safe_name(self.recipe), *parts]) + ".wav"

    def existing(self, name: str) -> WrittenAudio | None:
        """The audio ``name`` as an earlier run wrote it, when still there with the journalled SHA-256; else None."""
        rel = self.audio_path(name)
        with self._lock:
            written = self._journal.get(rel)
        if written is None:
            return None
        path = self.out / rel
        if not path.is_file() or sha256_file(path) != written.sha256:
            logger.warning("%s: changed since the import wrote it; writing it again", path)
            with self._lock:
                self._journal.pop(rel, None)
            return None
        with self._lock:
            self.result.audio_reused += 1
        return WrittenAudio(written.path, written.sha256, written.seconds, written.rate, reused=True)

    def write_audio(self, name: str, samples: np.ndarray, rate: int) -> WrittenAudio:
        """Write mono samples as ``audio/<recipe>/<name>.wav`` (16-bit PCM) at once, and journal it.

        Raises:
            ValueError: For samples that are not 1-D, are empty or hold NaN or infinite values.
        """
        samples = np.asarray(samples, dtype=np.float32)
        if samples.ndim != 1 or samples.size == 0:
            raise ValueError(f"expected mono samples, got shape {samples.shape}")
        if not np.all(np.isfinite(samples)):
            raise ValueError("the audio holds NaN or infinite samples")
        data = wav_bytes(samples, rate)
        rel = self.audio_path(name)
        path = self.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
        written = WrittenAudio(rel, hashlib.sha256(data).hexdigest(), samples.size / rate, int(rate))
        line = json.dumps({"path": rel, "sha256": written.sha256, "seconds": written.seconds, "rate": written.rate})
        with self._lock:
            self._journal[rel] = written
            self._journal_handle.write(line + "\n")
            self._journal_handle.flush()
            self.result.audio_written += 1
        return written

    # -- items and rejections -----------------------------------------------------------------------------------

    def validate(self, fields: dict[str, Any] | ItemBase, *, where: str) -> ItemBase | None:
        """The item of ``fields`` (``kind`` among them), validated, or None when the row is rejected.

        A row is rejected (its field named) when its item is not valid or repeats a uid. Check an item before writing
        its audio, so that a bad row costs no decoding.
        """
        data = fields.model_dump(mode="json") if isinstance(fields, ItemBase) else dict(fields)
        uid = str(data.get("uid") or "")
        try:
            item = item_class(str(data.get("kind"))).model_validate(data)
        except KeyError as exc:
            self.reject(where, "kind", str(exc.args[0]), uid=uid or None)
            return None
        except ValidationError as exc:
            error = exc.errors()[0]
            loc = ".".join(str(p) for p in error["loc"])
            self.reject(where, loc or "item", error["msg"], uid=uid or None)
            return None
        folded = item.uid.casefold()
        if folded in self._uids:
            self.reject(where, "uid", f"uid {item.uid!r} repeats the item of {self._uids[folded]}", uid=item.uid)
            return None
        # Reserved now, not at keep(): a row whose audio is still being written by a worker thread holds its uid, so
        # a later row repeating it is rejected instead of racing it for the same audio file.
        self._uids[folded] = where
        return item

    def keep(self, item: ItemBase, audio: WrittenAudio | None = None, *, where: str) -> ItemBase:
        """Keep a validated item (:meth:`validate`), with its audio's path and SHA-256 when given; return it."""
        if audio is not None:
            item = item.model_copy(
                update={"audio": audio.path, "audio_sha256": audio.sha256, "audio_status": AudioStatus.ok}
            )
        self._uids[item.uid.casefold()] = where
        self._items.setdefault(item.kind, []).append(item)
        return item

    def add(self, fields: dict[str, Any] | ItemBase, audio: WrittenAudio | None = None, *, where: str) -> bool:
        """:meth:`validate` and :meth:`keep` one item whose audio is written; return whether it was kept."""
        data = fields.model_dump(mode="json") if isinstance(fields, ItemBase) else dict(fields)
        if audio is not None:
            data.update(audio=audio.path, audio_sha256=audio.sha256, audio_status=AudioStatus.ok.value)
        item = self.validate(data, where=where)
        if item is None:
            return False
        self.keep(item, where=where)
        return True

    def reject(self, where: str, field_name: str, reason: str, *, uid: str | None = None) -> None:
        """Count a row the import cannot use (file and row, field, why)."""
        reason = " ".join(str(reason).split())[:500]
        self.result.rejected.append(Rejection(where=where, field=field_name, reason=reason, uid=uid))
        logger.info("rejected %s: field %r: %s", where, field_name, reason)

    def count_row(self) -> None:
        """Count one row read from a source."""
        self.result.rows += 1

    # -- the end ------------------------------------------------------------------------------------------------

    def finish(self, record: ImportRecord) -> ImportResult:
        """Write the manifests, ``rejected.jsonl`` and ``dataset.json``.

        Raises:
            ImportRefused: When no item was kept (the count and the first reasons given; no manifest written).
        """
        self.close_journal()
        result = self.result
        if not self._items:
            first = "; ".join(
                f"{r.where}: field {r.field!r}: {r.reason}"[:200] for r in result.rejected[:SHOWN_REASONS]
            )
            raise ImportRefused(
                f"{self.recipe}: no item imported from {result.rows} rows"
                + (f"; all {len(result.rejected)} rejected, first reasons: {first}" if result.rejected else "")
            )
        for kind, items in self._items.items():
            write_manifest_file(self.out / f"{kind}.jsonl", items)
            result.items[kind] = len(items)
        with open(self.out / REJECTED_FILE, "w", encoding="utf-8") as handle:
            for r in result.rejected:
                handle.write(
                    json.dumps(
                        {"where": r.where, "field": r.field, "reason": r.reason, "uid": r.uid}, ensure_ascii=False
                    )
                    + "\n"
                )
        counts: dict[str, Any] = {
            **result.items,
            "rows": result.rows,
            "rejected": len(result.rejected),
            "rejected_by_field": result.rejected_by_field(),
            "audio_written": result.audio_written,
            "audio_reused": result.audio_reused,
        }
        write_dataset_card(
            self.out, DatasetCard(data_root=".", source=f"{SOURCE_PREFIX}{self.recipe}", counts=counts, recipe=record)
        )
        return result

    def close_journal(self) -> None:
        """Close the audio journal (:meth:`finish` closes it too; closing twice is harmless)."""
        if not self._journal_handle.closed:
            self._journal_handle.close()


__all__ = [
    "AUDIO_JOURNAL",
    "REJECTED_FILE",
    "SOURCE_PREFIX",
    "ImportRefused",
    "ImportResult",
    "ImportWriter",
    "Rejection",
    "WrittenAudio",
    "safe_name",
]
