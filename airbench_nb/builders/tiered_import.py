"""Import a user's own sound-source data into the tiered benchmark's two manifests.

The input is a hierarchy file (the format of ``data_manifests/tiered/hierarchy.json``, see
:mod:`airbench_nb.synth.sources.hierarchy`: categories, and classes each with its ``coarse`` category; ranges,
properties, synonyms, labels and prompts optional) and the clips, given either way:

- a **CSV** with a header and the columns ``audio`` (a path, relative to the CSV's folder or absolute) and ``label``
  (a fine class, by its name or its label), e.g. ``clips/0001.wav,police_siren``;
- a **folder** holding one sub-folder per fine class (named by the class's name or label), each with audio files
  (``.wav``, ``.flac``, ``.ogg``, ``.mp3``, ``.m4a``).

Every clip is checked before it is copied: its size (:data:`MAX_CLIP_BYTES`) from the file system and its duration
(:data:`MAX_CLIP_SECONDS`) from its header, before anything is decoded; then :func:`~airbench_nb.audio.probe_audio`
(hash, head and tail decoded); then its samples, an all-silent clip being left out. It is copied byte for byte under
``<out>/audio/tiered/`` and asked twice, as the built data is (:func:`~airbench_nb.builders.tiered.source_items`): a
closed-set ``sound_source`` item (one option per fine class, at most 26) and an open ``sound_source_open`` item. A
row naming an unknown class, a missing, unreadable, too big, too long or silent clip, or a duplicate is one counted
rejection with the file, line and field named; it never stops the import. ``dataset.json`` records the source, the
hierarchy and the rejections.

The import refuses (``ValueError``, nothing written) an ``out`` folder that holds anything unless an earlier import
of the same source wrote it (a build's manifests are never overwritten), a CSV it cannot read (not UTF-8, a field
over the CSV reader's limit: file and line named), and an import in which every clip was rejected.
"""

from __future__ import annotations

import csv
import io
import logging
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airbench_nb.audio import AudioProbe, AudioStatus, probe_audio
from airbench_nb.builders.tiered import TieredBuild, source_items
from airbench_nb.manifests import (
    DATASET_CARD,
    DatasetCard,
    ManifestError,
    read_dataset_card,
    read_utf8,
    write_dataset_card,
    write_manifest,
)
from airbench_nb.records import MAX_CHOICES
from airbench_nb.synth.sources.hierarchy import Hierarchy, load_hierarchy

logger = logging.getLogger(__name__)

AUDIO_SUFFIXES: frozenset[str] = frozenset({".wav", ".flac", ".ogg", ".mp3", ".m4a"})
"""Files a class folder's clips may be."""

CSV_COLUMNS: tuple[str, str] = ("audio", "label")
"""The columns a CSV of clips must have."""

MAX_CSV_BYTES = 64 * 1024 * 1024
"""Largest CSV of clips read (a million rows of paths and labels fit)."""

MAX_CLIP_BYTES = 128 * 1024 * 1024
"""Largest clip imported, in bytes (10 minutes of 48 kHz stereo 16-bit PCM are 115 MB)."""

MAX_CLIP_SECONDS = 600.0
"""Longest clip imported, in seconds (a sound source is heard in seconds; the kit's clips last 1-5 s)."""

SOURCE_PREFIX = "import-sources:"
"""How ``dataset.json`` records an import's source: this prefix, then the source's resolved path."""

SHOWN_REASONS = 3
"""Rejections quoted when every clip was rejected."""


@dataclass
class TieredImport:
    """What :func:`import_sources` wrote."""

    out: Path
    """The manifest folder (also the data root: the clips are copied into it)."""
    build: TieredBuild = field(default_factory=TieredBuild)
    """The items, closed-set and open."""
    rejected: list[dict[str, Any]] = field(default_factory=list)
    """One ``{"where", "field", "error"}`` per clip left out (``where``: file and line, or the clip's path)."""

    @property
    def imported(self) -> int:
        """Clips imported."""
        return len(self.build.sound_source)


def _class_names(tree: Hierarchy) -> dict[str, str]:
    """Every way a clip may name a fine class (its name, its label; case-insensitive) -> the class's name."""
    names: dict[str, str] = {}
    for fine in tree.classes:
        for text in (fine.name, fine.shown):
            names.setdefault(text.strip().casefold(), fine.name)
    return names


def _rows_from_csv(path: Path) -> list[tuple[str, Path, str]]:
    """``(where, audio path, label)`` per data row of a CSV (``where``: ``file:line``).

    Raises:
        ValueError: When the file is not UTF-8, has no header with the columns :data:`CSV_COLUMNS`, or a row the CSV
            reader refuses (a field longer than its limit): the file and line named.
    """
    reader = csv.DictReader(io.StringIO(read_utf8(path, MAX_CSV_BYTES, "a CSV of clips"), newline=""))
    rows = []
    try:
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}:1: the header lacks column(s) {', '.join(missing)} (has {reader.fieldnames})")
        for row in reader:
            audio, label = (row.get("audio") or "").strip(), (row.get("label") or "").strip()
            where = f"{path}:{reader.line_num}"
            rows.append((where, (path.parent / audio) if audio else Path(""), label))
    except csv.Error as exc:
        limit = csv.field_size_limit()
        why = f"a field is longer than {limit} characters" if "field limit" in str(exc) else f"not a CSV row: {exc}"
        raise ValueError(f"{path}:{reader.reader.line_num}: {why}") from None
    return rows


def _rows_from_folder(folder: Path) -> list[tuple[str, Path, str]]:
    """``(where, audio path, label)`` per audio file of each class sub-folder, sorted."""
    rows = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        for clip in sorted(p for p in sub.iterdir() if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES):
            rows.append((str(clip), clip, sub.name))
    return rows


def _check_out(out: Path, source: Path) -> None:
    """Refuse an ``out`` folder that holds anything, unless an import of ``source`` wrote it.

    Raises:
        ValueError: Naming the file the import would overwrite (or the folder) and who wrote it.
    """
    if not out.is_dir() or not any(out.iterdir()):
        return
    ours = {_printable(f"{SOURCE_PREFIX}{source}"), _printable(f"{SOURCE_PREFIX}{source.resolve()}")}
    try:
        card = read_dataset_card(out)
    except (ManifestError, OSError) as exc:
        raise ValueError(f"{out / DATASET_CARD}: the --out folder holds an unreadable dataset card ({exc}); give an "
                         "empty or new --out folder") from None  # fmt: skip
    if card is None:
        raise ValueError(
            f"{out}: the --out folder is not empty and no import-sources wrote it; give an empty or new --out folder"
        )
    if card.source in ours:
        return
    written = [out / f"{kind}.jsonl" for kind in TieredBuild().by_kind] + [out / DATASET_CARD]
    hit = next(p for p in written if p.exists())
    raise ValueError(
        f"{hit}: the --out folder holds data written by {card.source}, which the import would overwrite; "
        "give an empty or new --out folder"
    )


def _clip_problem(path: Path) -> str | None:
    """Why a clip cannot be imported from its size or its header's duration (nothing decoded), or None."""
    import soundfile as sf

    try:
        size = path.stat().st_size
    except (OSError, ValueError):
        return None  # probe_audio names it
    if size > MAX_CLIP_BYTES:
        return f"the clip has {size} bytes, over the {MAX_CLIP_BYTES} bytes a clip may have"
    try:
        duration = sf.info(str(path)).duration
    except Exception:  # noqa: BLE001 - not a format libsndfile reads: probe_audio decides, its duration is checked
        return None
    return _too_long(duration)


def _too_long(duration: float | None) -> str | None:
    if duration is not None and duration > MAX_CLIP_SECONDS:
        return f"the clip lasts {duration:.0f} s, over the {MAX_CLIP_SECONDS:.0f} s a clip may last"
    return None


def _silent(path: Path) -> bool:
    """Whether every sample of a clip (probed ``ok``, at most :data:`MAX_CLIP_SECONDS` long) is zero."""
    import numpy as np
    import soundfile as sf

    try:
        return not any(np.any(block) for block in sf.blocks(str(path), blocksize=1 << 16, dtype="float32"))
    except Exception:  # noqa: BLE001 - not a format libsndfile reads (mp3, m4a): librosa, as probe_audio does
        import librosa

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            samples, _ = librosa.load(str(path), sr=None, mono=True, duration=MAX_CLIP_SECONDS)
        return not np.any(samples)


def _check_clip(path: Path) -> tuple[str | None, AudioProbe | None]:
    """Why a clip cannot be imported (None when it can), and its probe once probed.

    The checks that read no samples come first (a file name that is not UTF-8, :func:`_clip_problem`), then
    :func:`~airbench_nb.audio.probe_audio`, then the duration it found and the samples (:func:`_silent`).
    """
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return "the file name is not valid UTF-8; rename the file", None
    problem = _clip_problem(path)
    if problem is not None:
        return problem, None
    probe = probe_audio(path)
    if probe.status != AudioStatus.ok or probe.sha256 is None:
        return f"{probe.status}: {probe.detail}", probe
    silent = "the clip is all silent (every sample is zero)" if _silent(path) else None
    return _too_long(probe.duration_s) or silent, probe


def _printable(text: str | None) -> str:
    """``text`` as it can be written to JSON and a terminal: bytes of a file name that were not UTF-8 escaped."""
    return (text or "").encode("utf-8", "backslashreplace").decode("utf-8")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def import_sources(source: str | Path, hierarchy_file: str | Path, out: str | Path) -> TieredImport:
    """Import clips and a hierarchy as ``sound_source.jsonl`` and ``sound_source_open.jsonl`` (module docstring).

    Args:
        source: A CSV of ``audio,label`` rows, or a folder of class sub-folders.
        hierarchy_file: The hierarchy (categories and fine classes).
        out: The manifest folder to write (created; its ``audio/tiered/`` receives the copies).

    Returns:
        A :class:`TieredImport`.

    Raises:
        FileNotFoundError: When ``source`` or the hierarchy file does not exist.
        ValueError: For an ``out`` folder that holds anything an import of ``source`` did not write, a bad hierarchy
            (file, entry and field named), one with more than 26 fine classes, a CSV that is not UTF-8, lacks its
            columns or holds a row the CSV reader refuses (file and line named), a source with no clip at all, or
            one whose every clip was rejected (the count and the first reasons given; nothing written).
    """
    source, out = Path(source), Path(out)
    _check_out(out, source)
    tree = load_hierarchy(hierarchy_file)
    if len(tree.classes) > MAX_CHOICES:
        raise ValueError(
            f"{hierarchy_file}: {len(tree.classes)} fine classes; a closed-set item has at most {MAX_CHOICES} options"
        )
    if source.is_dir():
        rows = _rows_from_folder(source)
    elif source.is_file():
        rows = _rows_from_csv(source)
    else:
        raise FileNotFoundError(f"{source}: no such CSV file or folder of class sub-folders")
    if not rows:
        raise ValueError(f"{source}: no clip found (a CSV with audio,label rows, or class folders of audio files)")
    names = _class_names(tree)
    result = TieredImport(out=out)
    seen: dict[str, str] = {}
    counts: dict[str, int] = {}
    for where, path, label in rows:
        fine = names.get(label.casefold())
        if fine is None:
            known = ", ".join(tree.fine_names)
            error = _printable(f"{label!r} is no class ({known})")
            result.rejected.append({"where": _printable(where), "field": "label", "error": error})
            continue
        problem, probe = _check_clip(path)
        if probe is not None and probe.sha256 in seen:
            problem = problem or f"the same audio as {seen[probe.sha256]}"
        if problem is not None or probe is None or probe.sha256 is None:
            result.rejected.append({"where": _printable(where), "field": "audio", "error": _printable(problem)})
            continue
        seen[probe.sha256] = where
        k = counts[fine] = counts.get(fine, -1) + 1
        uid = f"source-{fine}-{k:03d}"
        rel = f"audio/tiered/{fine}/{uid}{path.suffix.lower()}"
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out / rel)
        meta = {"source_file": str(path), "duration_s": probe.duration_s}
        closed, opened = source_items(
            tree,
            fine,
            uid=uid,
            audio=rel,
            audio_sha256=probe.sha256,
            meta=meta,
            dataset=_printable(f"import:{source.name}"),
        )
        result.build.sound_source.append(closed)
        result.build.sound_source_open.append(opened)
    for where in (r["where"] for r in result.rejected):
        logger.warning("rejected %s", where)
    if not result.imported:
        first = "; ".join(
            _one_line(f"{r['where']}: field {r['field']!r}: {r['error']}") for r in result.rejected[:SHOWN_REASONS]
        )
        raise ValueError(
            f"{source}: all {len(result.rejected)} clips rejected, nothing written; first reasons: {first}"
        )
    for kind, items in result.build.by_kind.items():
        write_manifest(out / f"{kind}.jsonl", items)
    write_dataset_card(
        out,
        DatasetCard(
            data_root=".",
            source=_printable(f"{SOURCE_PREFIX}{source.resolve()}"),
            counts={
                **result.build.counts(),
                "hierarchy": str(hierarchy_file),
                "rejected": len(result.rejected),
                "rejected_detail": result.rejected,
            },
        ),
    )
    return result
