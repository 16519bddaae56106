"""Import a user's own sound-source data into the tiered benchmark's two manifests.

The input is a hierarchy file (the format of ``data_manifests/tiered/hierarchy.json``, see
:mod:`airbench_nb.synth.sources.hierarchy`: categories, and classes each with its ``coarse`` category; ranges,
properties, synonyms, labels and prompts optional) and the clips, given either way:

- a **CSV** with a header and the columns ``audio`` (a path, relative to the CSV's folder or absolute) and ``label``
  (a fine class, by its name or its label), e.g. ``clips/0001.wav,police_siren``;
- a **folder** holding one sub-folder per fine class (named by the class's name or label), each with audio files
  (``.wav``, ``.flac``, ``.ogg``, ``.mp3``, ``.m4a``).

Every clip is checked (:func:`~airbench_nb.audio.probe_audio`), copied byte for byte under ``<out>/audio/tiered/``
and asked twice, as the built data is (:func:`~airbench_nb.builders.tiered.source_items`): a closed-set
``sound_source`` item (one option per fine class, at most 26) and an open ``sound_source_open`` item. A row naming
an unknown class, a missing or unreadable clip, or a duplicate is one counted rejection with the file, line and
field named; it never stops the import. ``dataset.json`` records the source, the hierarchy and the rejections.
"""

from __future__ import annotations

import csv
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airbench_nb.audio import AudioStatus, probe_audio
from airbench_nb.builders.tiered import TieredBuild, source_items
from airbench_nb.manifests import DatasetCard, write_dataset_card, write_manifest
from airbench_nb.records import MAX_CHOICES
from airbench_nb.synth.sources.hierarchy import Hierarchy, load_hierarchy

logger = logging.getLogger(__name__)

AUDIO_SUFFIXES: frozenset[str] = frozenset({".wav", ".flac", ".ogg", ".mp3", ".m4a"})
"""Files a class folder's clips may be."""

CSV_COLUMNS: tuple[str, str] = ("audio", "label")
"""The columns a CSV of clips must have."""


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
        ValueError: When the file has no header with the columns :data:`CSV_COLUMNS`.
    """
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}:1: the header lacks column(s) {', '.join(missing)} (has {reader.fieldnames})")
        rows = []
        for row in reader:
            audio, label = (row.get("audio") or "").strip(), (row.get("label") or "").strip()
            where = f"{path}:{reader.line_num}"
            rows.append((where, (path.parent / audio) if audio else Path(""), label))
    return rows


def _rows_from_folder(folder: Path) -> list[tuple[str, Path, str]]:
    """``(where, audio path, label)`` per audio file of each class sub-folder, sorted."""
    rows = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        for clip in sorted(p for p in sub.iterdir() if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES):
            rows.append((str(clip), clip, sub.name))
    return rows


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
        ValueError: For a bad hierarchy (file, entry and field named), one with more than 26 fine classes, a CSV
            without its columns, or a source with no clip at all.
    """
    source, out = Path(source), Path(out)
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
            result.rejected.append({"where": where, "field": "label", "error": f"{label!r} is no class ({known})"})
            continue
        probe = probe_audio(path)
        if probe.status != AudioStatus.ok or probe.sha256 is None:
            result.rejected.append({"where": where, "field": "audio", "error": f"{probe.status}: {probe.detail}"})
            continue
        if probe.sha256 in seen:
            result.rejected.append(
                {"where": where, "field": "audio", "error": f"the same audio as {seen[probe.sha256]}"}
            )
            continue
        seen[probe.sha256] = where
        k = counts[fine] = counts.get(fine, -1) + 1
        uid = f"source-{fine}-{k:03d}"
        rel = f"audio/tiered/{fine}/{uid}{path.suffix.lower()}"
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out / rel)
        meta = {"source_file": str(path), "duration_s": probe.duration_s}
        closed, opened = source_items(
            tree, fine, uid=uid, audio=rel, audio_sha256=probe.sha256, meta=meta, dataset=f"import:{source.name}"
        )
        result.build.sound_source.append(closed)
        result.build.sound_source_open.append(opened)
    for where in (r["where"] for r in result.rejected):
        logger.warning("rejected %s", where)
    if result.imported:
        for kind, items in result.build.by_kind.items():
            write_manifest(out / f"{kind}.jsonl", items)
    write_dataset_card(
        out,
        DatasetCard(
            data_root=".",
            source=f"import-sources:{source}",
            counts={
                **result.build.counts(),
                "hierarchy": str(hierarchy_file),
                "rejected": len(result.rejected),
                "rejected_detail": result.rejected,
            },
        ),
    )
    return result
