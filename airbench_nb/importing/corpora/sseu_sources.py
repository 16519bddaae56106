"""The source corpora of SSEU-Bench as released: VCTK 0.92, DESED's strong labels, MAESTRO-Real's soft labels.

:mod:`airbench_nb.importing.corpora.sseu` mixes them; this module only reads them, every problem a counted rejection
naming the file, the row and the field:

VCTK 0.92
    ``txt/<speaker>/<speaker>_<utt>.txt`` holds the transcript of ``wav48_silence_trimmed/<speaker>/<speaker>_<utt>
    _mic1.flac`` (and ``_mic2.flac``; 48 kHz). An utterance without text (speaker p315 has none in the release) is
    rejected (field ``transcript``), one whose text has no audio too (field ``audio``). The recipe's microphone is
    used when its file is there, else the other one (p280 has no ``mic2`` files).

DESED
    Every ``*.tsv`` under ``metadata/`` whose header holds ``filename onset offset event_label`` (strong labels:
    ``validation.tsv``, ``public.tsv``, synthetic ``soundscapes.tsv``; weak and unlabelled tables are skipped). A clip
    listed with empty onset, offset and label has no event. Its audio is found by file name anywhere under
    ``audio/`` (``audio/validation/validation_16k/``, ``audio/eval/public/``, ...); where a name is there more than
    once, the copy of the highest sample rate, then the first path in sorted order, is used. A clip with a row that
    cannot be read or a label outside the event classes is not used (nothing guessed about its events).

MAESTRO-Real
    ``development_audio/<scene>/<scene>_NN.wav`` (3-5 min, 44.1 kHz stereo) with its soft labels
    ``development_annotation/soft_labels_<scene>/<scene>_NN.txt``: no header, ``onset offset label confidence``
    separated by tabs, confidences possibly above 1. Rows at or above the confidence threshold are the recording's
    events; a recording with an unreadable row, or a label outside the classes among those rows, is not used.
"""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

logger = logging.getLogger(__name__)

VCTK_AUDIO = "wav48_silence_trimmed"
"""VCTK 0.92's folder of silence-trimmed 48 kHz FLAC files."""
VCTK_TEXT = "txt"
"""VCTK 0.92's folder of transcripts."""
MICS: tuple[str, ...] = ("mic1", "mic2")
"""VCTK 0.92's two microphones (file suffixes)."""
DESED_COLUMNS: tuple[str, ...] = ("filename", "onset", "offset", "event_label")
"""The header of a DESED strong-label table."""
AUDIO_SUFFIXES: tuple[str, ...] = (".wav", ".flac")
"""Audio files looked for under DESED's ``audio/``."""


class Rejecter(Protocol):
    """Where rejections go (:meth:`airbench_nb.importing.writer.ImportWriter.reject`)."""

    def __call__(self, where: str, field_name: str, reason: str, *, uid: str | None = None) -> None:
        """Count one rejection."""


@dataclass(frozen=True)
class Utterance:
    """One VCTK utterance with its transcript and audio file."""

    uid: str
    """``<speaker>_<utt>`` (``p225_001``)."""
    speaker: str
    """The speaker (``p225``)."""
    text: str
    """The transcript, stripped."""
    audio: Path
    """The FLAC file used."""
    audio_rel: str
    """That file relative to the VCTK folder (``wav48_silence_trimmed/p225/p225_001_mic1.flac``)."""
    mic: str
    """The microphone of that file (``mic1`` or ``mic2``)."""


@dataclass(frozen=True)
class Event:
    """One labelled event of a background recording, on the recording's timeline."""

    event: str
    """Its class (after the label map)."""
    label: str
    """Its label as released."""
    onset_s: float
    """Start (s)."""
    offset_s: float
    """End (s)."""
    confidence: float | None = None
    """MAESTRO's soft-label confidence (None for DESED's strong labels)."""


@dataclass(frozen=True)
class Background:
    """A background recording with its scene and its events."""

    corpus: str
    """``desed`` or ``maestro``."""
    path: Path
    """The audio file."""
    rel: str
    """The audio file relative to its corpus's folder."""
    labels: str
    """The table and row, or the file, its labels come from."""
    scene: str
    """Its scene class."""
    rate: int
    """Its sample rate (Hz)."""
    frames: int
    """Its length in samples."""
    events: tuple[Event, ...]
    """Its labelled events."""

    @property
    def seconds(self) -> float:
        """Its duration (s)."""
        return self.frames / self.rate

    def events_in(self, start_s: float, end_s: float) -> list[dict[str, Any]]:
        """The events overlapping ``[start_s, end_s)``, cut to it, on its timeline (0 at ``start_s``), by onset."""
        found = []
        for e in self.events:
            onset, offset = max(e.onset_s, start_s), min(e.offset_s, end_s)
            if offset > onset:
                entry: dict[str, Any] = {
                    "event": e.event,
                    "label": e.label,
                    "onset_s": round(onset - start_s, 4),
                    "offset_s": round(offset - start_s, 4),
                }
                if e.confidence is not None:
                    entry["confidence"] = e.confidence
                found.append(entry)
        return sorted(found, key=lambda x: (x["onset_s"], x["event"]))

    def read(self, start: int, frames: int) -> np.ndarray:
        """``frames`` samples from sample ``start``, downmixed to mono float32 at the file's rate.

        Raises:
            ValueError: For audio that cannot be decoded, comes short, or holds NaN or infinite samples.
        """
        import soundfile as sf

        try:
            data, _ = sf.read(self.path, start=start, frames=frames, dtype="float32", always_2d=True)
        except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
            raise ValueError(f"{self.path}: cannot be decoded: {exc}") from None
        mono = data.mean(axis=1)
        if mono.size < frames or not np.all(np.isfinite(mono)):
            raise ValueError(f"{self.path}: {mono.size} of {frames} samples from {start}, or NaN or infinite ones")
        return np.ascontiguousarray(mono, dtype=np.float32)


def _info(path: Path) -> tuple[int, int]:
    """Sample rate and length of an audio file, from its header (nothing decoded)."""
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        raise ValueError(f"cannot be read: {exc}") from None
    if info.frames <= 0 or info.samplerate <= 0:
        raise ValueError(f"holds no audio ({info.frames} frames at {info.samplerate} Hz)")
    return int(info.samplerate), int(info.frames)


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


# -- VCTK -------------------------------------------------------------------------------------------------------------


def read_vctk(root: Path, mic: str, reject: Rejecter, count_row: Callable[[], None]) -> list[Utterance]:
    """The usable utterances of VCTK 0.92, sorted by id; the others rejected (each a row counted).

    Raises:
        ValueError: For a folder without ``txt/`` and ``wav48_silence_trimmed/`` (not VCTK 0.92), or an unknown mic.
    """
    if mic not in MICS:
        raise ValueError(f"option mic: {mic!r} is not one of {', '.join(MICS)}")
    audio_root, text_root = root / VCTK_AUDIO, root / VCTK_TEXT
    for folder in (audio_root, text_root):
        if not folder.is_dir():
            raise ValueError(f"--vctk {root}: no {folder.name}/ folder (VCTK 0.92 holds txt/ and {VCTK_AUDIO}/)")
    audio: dict[str, dict[str, Path]] = {}
    for path in sorted(audio_root.glob("*/*.flac")):
        stem, _, which = path.stem.rpartition("_")
        if which in MICS and stem:
            audio.setdefault(stem, {})[which] = path
    texts = {path.stem: path for path in sorted(text_root.glob("*/*.txt"))}
    speakers_with_text = {path.parent.name for path in texts.values()}
    found: list[Utterance] = []
    for uid in sorted(set(audio) | set(texts)):
        files = audio.get(uid, {})
        chosen = files.get(mic) or next((files[m] for m in MICS if m in files), None)
        speaker = uid.split("_")[0]
        if uid not in texts:
            assert chosen is not None
            count_row()
            why = (
                f"speaker {speaker} has no {VCTK_TEXT}/{speaker}/ folder (VCTK 0.92 ships no text for it)"
                if speaker not in speakers_with_text
                else f"no {VCTK_TEXT}/{speaker}/{uid}.txt"
            )
            reject(_rel(chosen, root), "transcript", why, uid=uid)
            continue
        text_path = texts[uid]
        if chosen is None:
            count_row()
            reject(_rel(text_path, root), "audio", f"no {VCTK_AUDIO}/{speaker}/{uid}_mic1.flac or _mic2.flac", uid=uid)
            continue
        try:
            text = " ".join(text_path.read_text(encoding="utf-8").split())
        except (OSError, UnicodeDecodeError) as exc:
            count_row()
            reject(_rel(text_path, root), "transcript", f"cannot be read as UTF-8 text: {exc}", uid=uid)
            continue
        if not text:
            count_row()
            reject(_rel(text_path, root), "transcript", "empty transcript", uid=uid)
            continue
        used = chosen.stem.rpartition("_")[2]
        found.append(Utterance(uid, speaker, text, chosen, _rel(chosen, root), used))
    return found


# -- DESED ------------------------------------------------------------------------------------------------------------


def _desed_audio(root: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    audio_root = root / "audio"
    if audio_root.is_dir():
        for path in sorted(audio_root.rglob("*")):
            if path.suffix.lower() in AUDIO_SUFFIXES and path.is_file():
                found.setdefault(path.name, []).append(path)
    return found


def _pick_copy(copies: list[Path]) -> tuple[Path, int, int]:
    """The copy of the highest sample rate (then the first path); its rate and length."""
    best: tuple[Path, int, int] | None = None
    problems = []
    for path in copies:
        try:
            rate, frames = _info(path)
        except ValueError as exc:
            problems.append(f"{path.name}: {exc}")
            continue
        if best is None or rate > best[1]:
            best = (path, rate, frames)
    if best is None:
        raise ValueError("; ".join(problems))
    return best


def _number(text: str, field_name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{field_name}: {text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{field_name}: {text!r} is not a time >= 0")
    return value


class _BadRow(ValueError):
    def __init__(self, field_name: str, reason: str) -> None:
        super().__init__(reason)
        self.field_name = field_name


def _event(label: str, onset: str, offset: str, label_of: Callable[[str], str | None]) -> tuple[str, float, float]:
    try:
        start, end = _number(onset, "onset"), _number(offset, "offset")
    except ValueError as exc:
        raise _BadRow(str(exc).split(":")[0], str(exc)) from None
    if end <= start:
        raise _BadRow("offset", f"offset {end:g} s is not after onset {start:g} s")
    mapped = label_of(label)
    if mapped is None:
        raise _BadRow("event_label", f"label {label!r} is not among the event classes (after the label map)")
    return mapped, start, end


def read_desed(root: Path, scene: str, label_of: Callable[[str], str | None], reject: Rejecter) -> list[Background]:
    """DESED's strong-labelled clips with their audio (module docstring), sorted by table and file name.

    Raises:
        ValueError: For a folder without ``metadata/`` or without any strong-label table.
    """
    meta_root = root / "metadata"
    if not meta_root.is_dir():
        raise ValueError(f"--desed {root}: no metadata/ folder (DESED holds audio/ and metadata/)")
    audio = _desed_audio(root)
    found: list[Background] = []
    tables = 0
    for table in sorted(meta_root.rglob("*.tsv")):
        rel_table = _rel(table, root)
        with open(table, encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle, delimiter="\t"))
        if not rows or not set(DESED_COLUMNS) <= {c.strip() for c in rows[0]}:
            logger.debug("%s: not a strong-label table (header %s); skipped", rel_table, rows[:1])
            continue
        tables += 1
        header = [c.strip() for c in rows[0]]
        col = {name: header.index(name) for name in DESED_COLUMNS}
        clips: dict[str, tuple[int, list[Event]]] = {}
        bad: dict[str, str] = {}
        for number, row in enumerate(rows[1:], start=2):
            where = f"{rel_table}:{number}"
            cells = [row[col[name]].strip() if col[name] < len(row) else "" for name in DESED_COLUMNS]
            name, onset, offset, label = cells
            if not any(cells):
                continue
            if not name:
                reject(where, "filename", "empty file name")
                continue
            clips.setdefault(name, (number, []))
            if name in bad:
                continue
            if not (onset or offset or label):
                continue  # a clip without any event
            try:
                event, start, end = _event(label, onset, offset, label_of)
            except _BadRow as exc:
                reject(where, exc.field_name, f"{exc} (clip {name} not used)", uid=name)
                bad[name] = where
                continue
            clips[name][1].append(Event(event, label, start, end))
        for name, (number, events) in clips.items():
            if name in bad:
                continue
            where = f"{rel_table}:{number}"
            if name not in audio:
                reject(where, "audio", f"no audio file {name} under {root / 'audio'}", uid=name)
                continue
            try:
                path, rate, frames = _pick_copy(audio[name])
            except ValueError as exc:
                reject(where, "audio", str(exc), uid=name)
                continue
            found.append(Background("desed", path, _rel(path, root), where, scene, rate, frames, tuple(events)))
    if not tables:
        raise ValueError(f"--desed {root}: no strong-label table (header {' '.join(DESED_COLUMNS)}) under metadata/")
    return found


# -- MAESTRO-Real -----------------------------------------------------------------------------------------------------


def read_maestro(
    root: Path,
    scene_of: Callable[[str], str | None],
    label_of: Callable[[str], str | None],
    threshold: float,
    reject: Rejecter,
) -> list[Background]:
    """MAESTRO-Real's development recordings with their soft labels (module docstring), sorted by path.

    Raises:
        ValueError: For a folder without ``development_audio/`` and ``development_annotation/``.
    """
    audio_root, labels_root = root / "development_audio", root / "development_annotation"
    for folder in (audio_root, labels_root):
        if not folder.is_dir():
            raise ValueError(
                f"--maestro {root}: no {folder.name}/ folder (MAESTRO-Real holds development_audio/ and "
                "development_annotation/)"
            )
    found: list[Background] = []
    recordings = sorted(audio_root.glob("*/*.wav"))
    labelled = {p.stem: p for p in sorted(labels_root.glob("soft_labels_*/*.txt"))}
    used = set()
    for path in recordings:
        folder = path.parent.name
        rel = _rel(path, root)
        scene = scene_of(folder)
        if scene is None:
            reject(rel, "scene", f"scene folder {folder!r} is not among the scene classes")
            continue
        labels_path = labels_root / f"soft_labels_{folder}" / f"{path.stem}.txt"
        used.add(path.stem)
        if not labels_path.is_file():
            reject(rel, "annotation", f"no {_rel(labels_path, root)}: its events are unknown")
            continue
        events = _maestro_events(labels_path, root, label_of, threshold, reject)
        if events is None:
            continue
        try:
            rate, frames = _info(path)
        except ValueError as exc:
            reject(rel, "audio", str(exc))
            continue
        found.append(Background("maestro", path, rel, _rel(labels_path, root), scene, rate, frames, events))
    for stem, labels_path in labelled.items():
        if stem not in used:
            reject(_rel(labels_path, root), "audio", f"no development_audio/*/{stem}.wav for these labels")
    return found


def _maestro_events(
    path: Path, root: Path, label_of: Callable[[str], str | None], threshold: float, reject: Rejecter
) -> tuple[Event, ...] | None:
    events = []
    rel = _rel(path, root)
    # split on "\n" only: str.splitlines would also cut a row at U+2028, U+2029 or U+0085 inside a label
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{rel}:{number}"
        cells = line.rstrip("\r\n").split("\t")
        if len(cells) != 4:
            reject(where, "row", f"{len(cells)} tab-separated fields, not 4 (onset offset label confidence)")
            return None
        onset, offset, label, confidence = (c.strip() for c in cells)
        try:
            weight = float(confidence)
        except ValueError:
            reject(where, "confidence", f"{confidence!r} is not a number (recording not used)")
            return None
        if not math.isfinite(weight) or weight < 0:
            reject(where, "confidence", f"{confidence!r} is not a confidence >= 0 (recording not used)")
            return None
        if weight < threshold:
            continue
        try:
            event, start, end = _event(label, onset, offset, label_of)
        except _BadRow as exc:
            reject(where, exc.field_name, f"{exc} (recording not used)")
            return None
        events.append(Event(event, label, start, end, weight))
    return tuple(events)


def scenes_of(backgrounds: Iterable[Background]) -> dict[str, list[Background]]:
    """The backgrounds of each scene, scenes in sorted order."""
    by_scene: dict[str, list[Background]] = {}
    for bg in backgrounds:
        by_scene.setdefault(bg.scene, []).append(bg)
    return dict(sorted(by_scene.items()))


__all__ = [
    "MICS",
    "Background",
    "Event",
    "Rejecter",
    "Utterance",
    "read_desed",
    "read_maestro",
    "read_vctk",
    "scenes_of",
]
