"""Music Foundation tasks: instrument, MIDI pitch and velocity, melody questions and mood (synthesized notes)."""

from __future__ import annotations

import logging

import numpy as np

from airbench_nb.builders.core import Ctx, FoundationDraft, Recipes, _pick, _r

logger = logging.getLogger(__name__)


def _instrument_label(recipes: Recipes, name: str) -> str:
    return recipes.music["instruments"][name]["label"]


def make_instrument(ctx: Ctx) -> FoundationDraft:
    """Which instrument plays a note; distractors are the recipe's confusable neighbours."""
    from airbench_nb.synth.music import note

    cfg = ctx.recipes.music
    name = ctx.cycle(sorted(cfg["instruments"]))
    midi = int(ctx.rng.integers(55, 73))
    velocity = int(_pick(ctx.rng, [80, 100, 120]))
    audio = note(midi, velocity, name, cfg["note_duration_s"], rng=ctx.rng)
    return FoundationDraft(
        audio=audio,
        question=ctx.phrase("Music_Instruments_Classfication"),
        gold=_instrument_label(ctx.recipes, name),
        distractors=[_instrument_label(ctx.recipes, n) for n in cfg["instruments"][name]["similar"]],
        meta={"instrument": name, "midi": midi, "velocity": velocity},
    )


def make_pitch(ctx: Ctx) -> FoundationDraft:
    """The MIDI pitch of a note of a pitched instrument; distractors are neighbouring pitches and octaves."""
    from airbench_nb.synth.music import note, pitched_instruments

    cfg = ctx.recipes.music
    low, high = cfg["pitch_range"]
    midi = int(ctx.rng.integers(low, high + 1))
    name = str(_pick(ctx.rng, pitched_instruments()))
    steps = [s for s in cfg["pitch_distractor_steps"] if 21 <= midi + s <= 108]
    chosen = [int(s) for s in ctx.rng.choice(steps, size=3, replace=False)]
    audio = note(midi, 100, name, cfg["note_duration_s"], rng=ctx.rng)
    return FoundationDraft(
        audio,
        ctx.phrase("Music_Midi_Pitch_Analysis"),
        str(midi),
        [str(midi + s) for s in chosen],
        {"midi": midi, "instrument": name, "velocity": 100},
    )


def make_velocity(ctx: Ctx) -> FoundationDraft:
    """The MIDI velocity of a note; distractors are the nearest velocities of the recipe's grid."""
    from airbench_nb.synth.music import note, pitched_instruments

    cfg = ctx.recipes.music
    velocities = [int(v) for v in cfg["velocities"]]
    velocity = int(ctx.cycle(velocities))
    midi = int(ctx.rng.integers(55, 73))
    name = str(_pick(ctx.rng, pitched_instruments()))
    near = sorted((v for v in velocities if v != velocity), key=lambda v: (abs(v - velocity), v))[:3]
    audio = note(midi, velocity, name, cfg["note_duration_s"], rng=ctx.rng)
    return FoundationDraft(
        audio,
        ctx.phrase("Music_Midi_Velocity_Analysis"),
        str(velocity),
        [str(v) for v in near],
        {"velocity": velocity, "midi": midi, "instrument": name},
    )


def _melody(ctx: Ctx, n_notes: int, direction: str, tempo: int, name: str) -> tuple[np.ndarray, list[float], list[int]]:
    from airbench_nb.synth.music import melody, scale_midis

    start = int(ctx.rng.integers(55, 68)) if direction == "ascending" else int(ctx.rng.integers(67, 80))
    midis = scale_midis(start, n_notes, direction=direction)
    audio, onsets = melody(midis, tempo_bpm=tempo, instrument=name, velocity=100, rng=ctx.rng)
    return audio, onsets, midis


def make_music_aqa(ctx: Ctx) -> FoundationDraft:
    """Questions on a short melody, rotating: number of notes, direction, tempo."""
    from airbench_nb.synth.music import pitched_instruments

    cfg = ctx.recipes.music
    subtask = ("count", "direction", "tempo")[ctx.index % 3]
    name = str(_pick(ctx.rng, pitched_instruments()))
    low, high = cfg["melody_notes"]
    tempos = [int(t) for t in cfg["tempos_bpm"]]
    n_notes = int(ctx.cycle(list(range(low, high + 1)), "n")) if subtask == "count" else int(ctx.rng.integers(4, 7))
    direction = (
        str(ctx.cycle(["ascending", "descending"], "dir"))
        if subtask == "direction"
        else str(_pick(ctx.rng, ["ascending", "descending"]))
    )
    tempo = int(ctx.cycle(tempos, "tempo")) if subtask == "tempo" else 120
    audio, onsets, midis = _melody(ctx, n_notes, direction, tempo, name)
    meta = {
        "subtask": subtask,
        "midis": midis,
        "onsets_s": [_r(o) for o in onsets],
        "tempo_bpm": tempo,
        "direction": direction,
        "instrument": name,
        "n_notes": n_notes,
    }
    question = ctx.phrase(f"Music_AQA_{subtask}")
    if subtask == "count":
        near = sorted(
            (n for n in range(max(1, n_notes - 3), n_notes + 4) if n != n_notes), key=lambda n: (abs(n - n_notes), n)
        )[:3]
        return FoundationDraft(audio, question, str(n_notes), [str(n) for n in near], meta)
    if subtask == "direction":
        return FoundationDraft(
            audio, question, direction, ["descending" if direction == "ascending" else "ascending"], meta
        )
    near = sorted((t for t in tempos if t != tempo), key=lambda t: (abs(t - tempo), t))[:3]
    return FoundationDraft(audio, question, f"{tempo} BPM", [f"{t} BPM" for t in near], meta)


def make_mood(ctx: Ctx) -> FoundationDraft:
    """Major chord as happy, minor chord as sad (the only mood contrast that can be made honestly offline)."""
    from airbench_nb.synth.music import chord, pitched_instruments

    moods = ctx.recipes.music["moods"]
    quality = str(ctx.cycle(sorted(moods)))
    root = int(ctx.rng.integers(55, 68))
    name = str(_pick(ctx.rng, [n for n in pitched_instruments() if n != "sine"]))
    audio = chord(root, quality, name, 2.0, velocity=100, rng=ctx.rng)
    other = next(m for q, m in moods.items() if q != quality)
    return FoundationDraft(
        audio,
        ctx.phrase("Music_Mood_Recognition"),
        moods[quality],
        [other],
        {"quality": quality, "root_midi": root, "instrument": name, "mood": moods[quality]},
    )
