"""A tiny release in the official AIR-Bench layout, with the defects the real one has.

:func:`write_official_sample` writes a few Foundation and Chat rows with synthesized audio (tones, noise; no
speech engine needed) plus one of each problem the importer must survive: an mp3, an ``Audio_Grounding`` row
whose ``path`` says ``.wav`` while the file is ``.flac``, an empty file, a corrupt file, a missing file, binary
rows without ``choice_c``/``choice_d``, an ``answer_gt`` that matches no choice, rows missing a field and a
misspelt task name. The tutorial imports it; the tests use it as their fixture tree.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

logger = logging.getLogger(__name__)

SR = 16000
"""Sample rate of the synthesized clips."""


@dataclass(frozen=True)
class SampleExpectation:
    """What importing the sample must give: the counts the tests and the tutorial check."""

    foundation_rows: int
    """Rows in Foundation_meta.json."""
    foundation_imported: int
    """Foundation rows that become items."""
    chat_rows: int
    """Rows in Chat_meta.json."""
    chat_imported: int
    """Chat rows that become items."""
    audio_status: dict[str, int]
    """Imported items (both benchmarks) per audio status."""


def _tone(freq: float, seconds: float, rng: np.random.Generator, level: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    fade = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.01)
    return (level * np.sin(2 * np.pi * freq * t) * fade + 0.001 * rng.standard_normal(t.size)).astype(np.float32)


def _buzz(f0: float, seconds: float, rng: np.random.Generator) -> np.ndarray:
    """A voice-like harmonic buzz at fundamental ``f0`` (not speech: a stand-in with a known pitch)."""
    t = np.arange(int(seconds * SR)) / SR
    wave = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 8))
    envelope = 0.5 * (1 - np.cos(2 * np.pi * 3 * t)) * 0.15
    return (wave * envelope + 0.001 * rng.standard_normal(t.size)).astype(np.float32)


def _events(onsets: list[float], seconds: float, rng: np.random.Generator) -> np.ndarray:
    out = 0.01 * rng.standard_normal(int(seconds * SR))
    for onset in onsets:
        start = int(onset * SR)
        burst = _tone(1000.0, 0.15, rng, level=0.5)
        out[start : start + burst.size] += burst[: out.size - start]
    return out.astype(np.float32)


def _write(root: Path, rel: str, samples: np.ndarray, fmt: str | None = None) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "MP3":
        sf.write(str(path), samples, SR, format="MP3")
    elif fmt == "FLAC":
        sf.write(str(path), samples, SR, format="FLAC", subtype="PCM_16")
    else:
        sf.write(str(path), samples, SR, subtype="PCM_16")


def _foundation(
    task: str, dataset: str, path: str, question: str, choices: list[str], answer: str, uid: int, **extra: Any
) -> dict[str, Any]:
    row: dict[str, Any] = {"path": path, "question": question}
    for letter, choice in zip("abcd", choices, strict=False):
        row[f"choice_{letter}"] = choice
    row.update(answer_gt=answer, task_name=task, dataset_name=dataset, uniq_id=uid)
    row.update(extra)
    return row


def write_official_sample(root: str | Path, seed: int = 0) -> SampleExpectation:
    """Write the sample release under ``root`` (created if needed).

    Args:
        root: Folder to write ``Foundation/`` and ``Chat/`` into.
        seed: Seed of the noise in the clips (the layout and labels do not depend on it).

    Returns:
        The counts an import of this tree must produce.
    """
    root = Path(root)
    rng = np.random.default_rng(seed)
    F = "Foundation"
    rows: list[dict[str, Any]] = []

    # 1. a good 4-choice wav: A4 = 440 Hz = MIDI 69
    _write(root, f"{F}/Music_Midi_Pitch_Analysis_nsynth/pitch_69.wav", _tone(440.0, 1.0, rng))
    rows.append(
        _foundation(
            "Music_Midi_Pitch_Analysis",
            "nsynth",
            "pitch_69.wav",
            "What is the MIDI pitch of the note?",
            ["67", "68", "69", "70"],
            "69",
            101,
        )
    )
    # 2. a binary task without choice_c/choice_d: a low harmonic buzz
    _write(root, f"{F}/Speaker_Gender_Recognition_synthetic/low_voice.wav", _buzz(110.0, 1.5, rng))
    rows.append(
        _foundation(
            "Speaker_Gender_Recognition",
            "synthetic",
            "low_voice.wav",
            "Is the fundamental frequency of this voice typical of a male or a female speaker?",
            ["male", "female"],
            "male",
            102,
        )
    )
    # 3. an mp3 file: three beeps
    _write(root, f"{F}/Sound_AQA_clotho/three_beeps.mp3", _events([0.2, 0.8, 1.4], 2.0, rng), fmt="MP3")
    rows.append(
        _foundation(
            "Sound_AQA",
            "clotho",
            "three_beeps.mp3",
            "How many beeps do you hear?",
            ["two", "three", "four", "five"],
            "three",
            103,
        )
    )
    # 4. Audio_Grounding: path says .wav, the file on disk is .flac
    _write(root, f"{F}/Audio_Grounding_AudioGrounding/beep_at_1s.flac", _events([1.0], 2.0, rng), fmt="FLAC")
    rows.append(
        _foundation(
            "Audio_Grounding",
            "AudioGrounding",
            "beep_at_1s.wav",
            "When does the beep sound?",
            ["[0.0, 0.5]", "[1.0, 1.15]", "[1.5, 2.0]", "[0.5, 1.0]"],
            "[1.0, 1.15]",
            104,
        )
    )
    # 5. an empty (0-byte) file
    (root / f"{F}/Music_Genre_Recognition_GTZAN").mkdir(parents=True, exist_ok=True)
    (root / f"{F}/Music_Genre_Recognition_GTZAN/empty.wav").write_bytes(b"")
    rows.append(
        _foundation(
            "Music_Genre_Recognition",
            "GTZAN",
            "empty.wav",
            "What is the genre of this music?",
            ["jazz", "rock", "blues", "pop"],
            "jazz",
            105,
        )
    )
    # 6. a corrupt file: not audio at all
    (root / f"{F}/Acoustic_Scene_Classification_CochlScene").mkdir(parents=True, exist_ok=True)
    (root / f"{F}/Acoustic_Scene_Classification_CochlScene/corrupt.wav").write_bytes(
        b"RIFF\x24\x00\x00\x00WAVEjunk" + rng.integers(0, 256, 200, dtype=np.uint8).tobytes()
    )
    rows.append(
        _foundation(
            "Acoustic_Scene_Classification",
            "CochlScene",
            "corrupt.wav",
            "Where was this recorded?",
            ["street", "park", "kitchen", "bus"],
            "street",
            106,
        )
    )
    # 7. a missing file
    rows.append(
        _foundation(
            "vocal_sound_classification",
            "VocalSound",
            "missing.wav",
            "What vocal sound is this?",
            ["cough", "laugh", "sneeze", "sigh"],
            "cough",
            107,
        )
    )
    # 8. answer_gt that matches no choice (rejected)
    _write(root, f"{F}/Music_Mood_Recognition_MTJ/major.wav", _tone(261.63, 1.0, rng))
    rows.append(
        _foundation(
            "Music_Mood_Recognition",
            "MTJ",
            "major.wav",
            "What is the mood of this music?",
            ["happy", "sad", "angry", "calm"],
            "joyful",
            108,
        )
    )
    # 9. a row missing `question` (rejected)
    row = _foundation("Speaker_Number_Verification", "VoxCeleb1", "two_voices.wav", "", ["1", "2", "3", "4"], "2", 109)
    del row["question"]
    rows.append(row)
    # 10. binary with choice_c "" and choice_d null: imported with two choices
    _write(root, f"{F}/Synthesized_Voice_Detection_FoR/buzz.wav", _buzz(180.0, 1.0, rng))
    rows.append(
        _foundation(
            "Synthesized_Voice_Detection",
            "FoR",
            "buzz.wav",
            "Is this voice synthesized?",
            ["yes", "no"],
            "yes",
            110,
            choice_c="",
            choice_d=None,
        )
    )
    # 11. a task name spelt correctly, which the official data does not do (rejected, with the valid names)
    rows.append(
        _foundation(
            "Speaker_Emotion_Recognition",
            "IEMOCAP",
            "emo.wav",
            "What emotion is expressed?",
            ["happy", "sad", "neutral", "angry"],
            "neutral",
            111,
        )
    )
    # 12. answer_gt differing from its choice only by case and a final period: imported, with a note
    _write(root, f"{F}/Music_Instruments_Classfication_nsynth/organ.wav", _buzz(220.0, 1.0, rng))
    rows.append(
        _foundation(
            "Music_Instruments_Classfication",
            "nsynth",
            "organ.wav",
            "Which instrument plays?",
            ["organ", "guitar", "flute", "piano"],
            "Organ.",
            112,
        )
    )
    (root / F / "Foundation_meta.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")

    C = "Chat"
    chat: list[dict[str, Any]] = []
    _write(root, f"{C}/speech_QA_synthetic/buzz_question.wav", _buzz(120.0, 2.0, rng))
    chat.append(
        {
            "path": "buzz_question.wav",
            "question": "What is the pitch of the voice like?",
            "answer_gt": "The voice is low-pitched, around 120 Hz, typical of an adult male.",
            "meta_info": "A low harmonic voice-like buzz at 120 Hz lasting two seconds.",
            "task_name": "speech_QA",
            "dataset_name": "synthetic",
            "uniq_id": 201,
        }
    )
    _write(root, f"{C}/speech_and_music_QA_synthetic/mix.wav", _buzz(200.0, 2.0, rng) + _tone(440.0, 2.0, rng, 0.1))
    chat.append(
        {
            "path": "mix.wav",
            "question": "Which is louder, the voice or the music?",
            "answer_gt": "The voice is louder than the music.",
            "meta_info": [{"speaker": "voice", "text": "a 200 Hz buzz"}, {"music": "A4 sine, 10 dB lower"}],
            "task_name": "speech_and_music_QA",
            "dataset_name": "synthetic",
            "uniq_id": 202,
        }
    )
    chat.append(
        {
            "path": "song.wav",
            "question": "Describe the music.",
            "answer_gt": "A calm piano piece.",
            "task_name": "music_QA",
            "dataset_name": "MusicCaps",
            "uniq_id": 203,
        }
    )
    _write(root, f"{C}/sound_QA_clotho/beeps.mp3", _events([0.3, 1.1], 2.0, rng), fmt="MP3")
    chat.append(
        {
            "path": "beeps.mp3",
            "question": "What do you hear?",
            "answer_gt": "Two short beeps over hiss.",
            "meta_info": "Two 1 kHz beeps at 0.3 s and 1.1 s over faint white noise.",
            "task_name": "sound_QA",
            "dataset_name": "clotho",
            "uniq_id": 204,
        }
    )
    (root / C / "Chat_meta.json").write_text(json.dumps(chat, indent=1), encoding="utf-8")
    return SampleExpectation(
        foundation_rows=12,
        foundation_imported=9,
        chat_rows=4,
        chat_imported=3,
        audio_status={"ok": 9, "missing": 1, "empty": 1, "corrupt": 1},
    )
