"""Miniature copies of SSEU-Bench's source corpora in their release layouts, with their quirks (a helper, not a test).

- VCTK 0.92: ``txt/<spk>/<spk>_<utt>.txt`` and ``wav48_silence_trimmed/<spk>/<spk>_<utt>_mic{1,2}.flac`` at 48 kHz;
  p315 has audio and no text, p280 has no mic2 file; p226 holds an utterance longer than every background, a text
  without audio and a FLAC file that is not one.
- DESED: ``metadata/validation/validation.tsv`` (strong labels: a clip with two events, one without any, one with a
  label outside the classes, one whose audio is missing), a durations table and a weak table (not strong labels),
  audio at 16 kHz in ``audio/validation/validation_16k/``.
- MAESTRO-Real: ``development_audio/<scene>/<scene>_01.wav`` (44.1 kHz stereo) with soft labels
  ``development_annotation/soft_labels_<scene>/<scene>_01.txt`` (no header; confidences above 1 and below 0.5), and
  a soft-label file whose audio is missing.

Durations are seconds, not minutes, to keep the tests fast; the truths the tests compare with are returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

VCTK_TEXTS: dict[str, str] = {
    "p225_001": "Please call Stella.",
    "p225_002": "Ask her to bring these things with her from the store.",
    "p226_001": "Six spoons of fresh snow peas, five thick slabs of blue cheese.",
    "p226_002": "We also need a small plastic snake.",
    "p226_003": "She can scoop these things into three red bags.",
    "p280_001": "The rainbow is a division of white light.",
}
"""Transcripts as written to ``txt/`` (p315 has none)."""

VCTK_SECONDS: dict[str, float] = {"p225_001": 0.8, "p225_002": 1.1, "p226_001": 3.6, "p280_001": 0.9, "p315_001": 0.7}
"""Speech durations of the utterances with audio."""

DESED_ROWS: list[tuple[str, str, str, str]] = [
    ("Y0dog_speech_30.000_40.000.wav", "0.20", "1.10", "Dog"),
    ("Y0dog_speech_30.000_40.000.wav", "1.50", "2.30", "Speech"),
    ("Y1quiet_10.000_20.000.wav", "", "", ""),
    ("Y2toaster_0.000_10.000.wav", "0.50", "1.00", "Toaster"),
    ("Y3missing_0.000_10.000.wav", "0.10", "0.90", "Cat"),
]
"""DESED strong-label rows (filename, onset, offset, event_label), in the table's order from its line 2."""

MAESTRO_LABELS: dict[str, list[tuple[float, float, str, float]]] = {
    "cafe_restaurant": [
        (0.0, 1.0, "people talking", 1.2),
        (1.0, 2.0, "people talking", 0.9),
        (0.5, 1.5, "cutlery and dishes", 0.3),
        (1.5, 3.0, "coffee machine", 0.6),
    ],
    "city_center": [
        (0.0, 1.0, "birds_singing", 1.0),
        (1.0, 3.0, "car", 0.55),
        (2.0, 3.0, "brakes_squeaking", 0.49),
    ],
}
"""Soft-label rows (onset, offset, label, confidence) of each scene's recording."""

BACKGROUND_SECONDS = {"desed": 2.5, "maestro": 3.0}
"""Lengths of the background recordings (shorter than p226_001 with its margins)."""


@dataclass
class SseuMinis:
    """Where the miniatures are, and their truths."""

    vctk: Path
    """VCTK's folder."""
    desed: Path
    """DESED's folder."""
    maestro: Path
    """MAESTRO-Real's folder."""
    events: dict[str, list[tuple[str, float, float, float]]] = field(default_factory=dict)
    """Per background file (relative to its corpus): its labelled (label as released, onset, offset, confidence)."""
    scenes: dict[str, str] = field(default_factory=dict)
    """Per background file: its scene folder (``home`` for DESED)."""


def speech_like(seconds: float, rate: int, f0: float, seed: int) -> np.ndarray:
    """A voiced, syllabic signal: harmonics of ``f0`` gated at 4 Hz with a little noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    voice = sum(np.sin(2 * np.pi * f0 * h * t + rng.uniform(0, 6.3)) / h for h in range(1, 6))
    gate = 0.5 * (1 + np.sin(2 * np.pi * 4 * t - np.pi / 2))
    return (0.3 * voice * gate + 0.01 * rng.standard_normal(t.size)).astype(np.float32)


def noise(seconds: float, rate: int, seed: int, channels: int = 1) -> np.ndarray:
    """Brownish noise with a few tonal bursts, ``channels`` columns when more than one."""
    rng = np.random.default_rng(seed)
    n = int(seconds * rate)
    white = rng.standard_normal((n, channels))
    brown = np.cumsum(white, axis=0)
    brown -= np.linspace(brown[0], brown[-1], n)
    brown /= np.max(np.abs(brown)) + 1e-9
    t = np.arange(n) / rate
    bursts = (np.sin(2 * np.pi * 700 * t) * (np.sin(2 * np.pi * 1.3 * t) > 0.6))[:, None]
    out = 0.3 * brown + 0.1 * bursts
    return (out[:, 0] if channels == 1 else out).astype(np.float32)


def write_vctk(root: Path) -> Path:
    """VCTK 0.92 in miniature (module docstring)."""
    for uid, text in VCTK_TEXTS.items():
        spk = uid.split("_")[0]
        (root / "txt" / spk).mkdir(parents=True, exist_ok=True)
        (root / "txt" / spk / f"{uid}.txt").write_text(text + "\n", encoding="utf-8")
    for k, (uid, seconds) in enumerate({**VCTK_SECONDS, "p315_002": 0.6}.items()):
        spk = uid.split("_")[0]
        folder = root / "wav48_silence_trimmed" / spk
        folder.mkdir(parents=True, exist_ok=True)
        mics = ("mic1",) if spk == "p280" else ("mic1", "mic2")
        for m, mic in enumerate(mics):
            audio = speech_like(seconds, 48000, 110 + 20 * k, seed=10 * k + m) * (1.0 - 0.2 * m)
            sf.write(folder / f"{uid}_{mic}.flac", audio, 48000, subtype="PCM_16")
    (root / "wav48_silence_trimmed" / "p226" / "p226_003_mic1.flac").write_bytes(b"fLaC but not really a FLAC file")
    (root / "speaker-info.txt").write_text("ID  AGE  GENDER  ACCENTS  REGION COMMENTS\n", encoding="utf-8")
    return root


def write_desed(root: Path, minis: SseuMinis) -> Path:
    """DESED in miniature (module docstring)."""
    meta = root / "metadata" / "validation"
    meta.mkdir(parents=True)
    lines = ["filename\tonset\toffset\tevent_label"] + ["\t".join(row) for row in DESED_ROWS]
    (meta / "validation.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    names = list(dict.fromkeys(row[0] for row in DESED_ROWS))
    (meta / "validation_durations.tsv").write_text(
        "filename\tduration\n" + "".join(f"{n}\t10.0\n" for n in names), encoding="utf-8"
    )
    (root / "metadata" / "train").mkdir()
    (root / "metadata" / "train" / "weak.tsv").write_text("filename\tevent_labels\nYw.wav\tDog,Cat\n", "utf-8")
    audio = root / "audio" / "validation" / "validation_16k"
    audio.mkdir(parents=True)
    for k, name in enumerate(names):
        if "missing" in name:
            continue
        sf.write(audio / name, noise(BACKGROUND_SECONDS["desed"], 16000, seed=100 + k), 16000, subtype="PCM_16")
        rel = f"audio/validation/validation_16k/{name}"
        minis.scenes[rel] = "home"
        minis.events[rel] = [(r[3], float(r[1]), float(r[2]), 1.0) for r in DESED_ROWS if r[0] == name and r[3]]
    return root


def write_maestro(root: Path, minis: SseuMinis) -> Path:
    """MAESTRO-Real in miniature (module docstring)."""
    for k, (scene, rows) in enumerate(MAESTRO_LABELS.items()):
        audio = root / "development_audio" / scene
        labels = root / "development_annotation" / f"soft_labels_{scene}"
        audio.mkdir(parents=True)
        labels.mkdir(parents=True)
        stereo = noise(BACKGROUND_SECONDS["maestro"], 44100, seed=200 + k, channels=2)
        sf.write(audio / f"{scene}_01.wav", stereo, 44100, subtype="PCM_16")
        text = "".join(f"{on:.3f}\t{off:.3f}\t{label}\t{conf:.3f}\n" for on, off, label, conf in rows)
        (labels / f"{scene}_01.txt").write_text(text, encoding="utf-8")
        rel = f"development_audio/{scene}/{scene}_01.wav"
        minis.scenes[rel] = scene
        minis.events[rel] = [(label, on, off, conf) for on, off, label, conf in rows]
    orphan = root / "development_annotation" / "soft_labels_grocery_store"
    orphan.mkdir(parents=True)
    (orphan / "grocery_store_01.txt").write_text("0.000\t1.000\tshopping cart\t0.800\n", encoding="utf-8")
    return root


def write_minis(root: Path) -> SseuMinis:
    """The three corpora under ``root`` (``vctk/``, ``desed/``, ``maestro/``)."""
    minis = SseuMinis(root / "vctk", root / "desed", root / "maestro")
    write_vctk(minis.vctk)
    write_desed(minis.desed, minis)
    write_maestro(minis.maestro, minis)
    return minis
