"""Build an offline benchmark in AIR-Bench's shape from synthesized audio with known ground truth.

``build(preset, seed, out)`` writes ``out/foundation.jsonl``, ``out/chat.jsonl``, ``out/dataset.json`` and the audio
under ``out/audio/``. Every item is made from its own random generator seeded by ``(seed, task, index)``, so a
task filter does not change the other items, and the same seed gives byte-identical manifests. What varies
(texts, voices, pools, phrasings, sizes) is read from recipe files under ``data_manifests/mini/``.

Choice order: for each task, the position of the gold answer cycles through the letters in a seeded shuffled
order, so that over a preset every letter is gold equally often (within one item); the gold *values* cycle too
(genders, speaker counts, instruments, ...), so classes are balanced.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from airbench_nb.audio import TARGET_SR, sha256_file, write_wav
from airbench_nb.manifests import DatasetCard, write_dataset_card, write_manifest
from airbench_nb.records import AudioStatus, ChatItem, FoundationItem, MixMeta

logger = logging.getLogger(__name__)

SR = TARGET_SR
"""Sample rate of every built clip."""
RECIPE_DIR = Path(__file__).resolve().parent.parent / "data_manifests" / "mini"
"""Default folder of the recipe files."""
RECIPE_FILES = ("presets.json", "phrasings.json", "speech.json", "sounds.json", "music.json", "chat.json")
"""Recipe files read by the builder."""
DATASET = "synthetic"
"""``dataset`` of every built item."""
WORD_GAP_S = 0.3
"""Silence between words in grounding items (seconds): each word is synthesized alone, so its interval is exact."""
TURN_GAP_S = 0.5
"""Silence between speaker turns (seconds)."""
LEAD_S = 0.3
"""Silence before the first and after the last sound of speech items (seconds)."""


class RecipeError(ValueError):
    """A recipe file that is missing, not JSON, or lacks what the builder needs."""


@dataclass(frozen=True)
class Recipes:
    """The recipe files of a preset folder, parsed."""

    folder: Path
    """Where they were read from."""
    presets: dict[str, Any]
    """Sizes per preset."""
    phrasings: dict[str, list[str]]
    """Question phrasings per task (and subtask)."""
    speech: dict[str, Any]
    """Languages, voices, sentences, commands, dialogues."""
    sounds: dict[str, Any]
    """Events, backgrounds, scene settings."""
    music: dict[str, Any]
    """Instruments, ranges."""
    chat: dict[str, Any]
    """Chat questions, reference templates and the mixing grid."""
    sha256: str
    """Hash of the recipe files' bytes, recorded in ``dataset.json``."""


def load_recipes(folder: str | Path = RECIPE_DIR) -> Recipes:
    """Read and check the recipe files.

    Raises:
        RecipeError: Naming the file and what is wrong.
    """
    folder = Path(folder)
    parsed: dict[str, Any] = {}
    digest = hashlib.sha256()
    for name in RECIPE_FILES:
        path = folder / name
        if not path.is_file():
            raise RecipeError(f"{path}: recipe file missing")
        data = path.read_bytes()
        digest.update(name.encode() + b"\0" + data)
        try:
            parsed[name.removesuffix(".json")] = json.loads(data)
        except json.JSONDecodeError as exc:
            raise RecipeError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    for task, phrasings in parsed["phrasings"].items():
        if task.startswith("_"):
            continue
        if not isinstance(phrasings, list) or len(phrasings) < 5:
            raise RecipeError(f"{folder / 'phrasings.json'}: task {task!r} needs at least 5 phrasings")
    return Recipes(folder=folder, sha256=digest.hexdigest(), **parsed)


def item_rng(seed: int, task: str, index: int) -> np.random.Generator:
    """The generator of one item: independent of the other tasks and items."""
    task_key = int.from_bytes(hashlib.sha256(task.encode()).digest()[:8], "big")
    return np.random.default_rng([seed, task_key, index])


def _pick(rng: np.random.Generator, seq: Sequence[Any]) -> Any:
    return seq[int(rng.integers(len(seq)))]


def cycle_value(values: Sequence[Any], seed: int, task: str, index: int) -> Any:
    """The ``index``-th value of a seeded permutation of ``values``, cycled: balanced classes over a preset."""
    order = np.random.default_rng([seed, 7, int.from_bytes(hashlib.sha256(task.encode()).digest()[:4], "big")])
    perm = order.permutation(len(values))
    return values[int(perm[index % len(values)])]


def gold_position(n_choices: int, seed: int, task: str, index: int) -> int:
    """Letter index of the gold answer for item ``index``: each letter equally often over consecutive items."""
    block, offset = divmod(index, n_choices)
    rng = np.random.default_rng([seed, 11, n_choices, block, int.from_bytes(task.encode()[:8].ljust(8, b"_"), "big")])
    return int(rng.permutation(n_choices)[offset])


def arrange(gold: str, distractors: Sequence[str], position: int, rng: np.random.Generator) -> tuple[list[str], int]:
    """Put ``gold`` at ``position`` and the distractors, shuffled, around it.

    Raises:
        ValueError: If a distractor equals the gold answer or repeats.
    """
    distractors = list(distractors)
    if gold in distractors or len(set(distractors)) != len(distractors):
        raise ValueError(f"distractors {distractors!r} must be distinct and differ from the gold {gold!r}")
    rng.shuffle(distractors)
    choices = distractors[:position] + [gold] + distractors[position:]
    return choices, position


@dataclass
class FoundationDraft:
    """What a Foundation task maker returns: audio, question and the gold answer with its distractors."""

    audio: np.ndarray
    """16 kHz mono samples."""
    question: str
    """The question."""
    gold: str
    """Text of the correct choice."""
    distractors: list[str]
    """Texts of the wrong choices (1 to 3)."""
    meta: dict[str, Any]
    """Ground truth used to make the item."""


@dataclass
class ChatDraft:
    """What a Chat task maker returns."""

    audio: np.ndarray
    """16 kHz mono samples."""
    question: str
    """The question."""
    reference: str
    """Reference answer written from the meta by a template."""
    meta_info: str
    """Textual description of the audio (what the judge reads)."""
    mix: MixMeta | None = None
    """Mix metadata for mixed items."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Ground truth used to make the item (judges read ``meta_info``, not this)."""


@dataclass
class Ctx:
    """What a task maker needs: recipes, seed, index and the item's generator."""

    recipes: Recipes
    """The parsed recipes."""
    seed: int
    """Build seed."""
    task: str
    """Task (or subtask) name, for seeding cycles."""
    index: int
    """Item index within the task."""
    rng: np.random.Generator
    """The item's generator."""
    out: Path = Path(".")
    """Output folder (the data root), for makers that write extra files (mix sources and stems)."""
    stem: str = ""
    """Path of the item's audio relative to ``out``, without the ``.wav`` suffix."""

    def cycle(self, values: Sequence[Any], key: str = "") -> Any:
        """Balanced value for this item (see :func:`cycle_value`)."""
        return cycle_value(values, self.seed, self.task + key, self.index)

    def phrase(self, key: str, **fields: Any) -> str:
        """A phrasing of task ``key`` picked by the item's generator, with ``fields`` filled in."""
        return _pick(self.rng, self.recipes.phrasings[key]).format(**fields)


def _r(x: float) -> float:
    return round(float(x), 3)


def _interval(start: float, end: float) -> str:
    return f"[{start:.2f}, {end:.2f}]"


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * SR)), dtype=np.float32)


# ---------------------------------------------------------------------------------------------- speech


def _speak(text: str, language: str, variant: str, pitch: int = 50, rate: int = 160) -> np.ndarray:
    from airbench_nb.synth.speech import speak

    return speak(text, language=language, variant=variant, pitch=pitch, rate=rate)


def _trim(samples: np.ndarray) -> np.ndarray:
    import librosa

    trimmed, _ = librosa.effects.trim(samples, top_db=40)
    return trimmed


def _peak_normalise(samples: np.ndarray, peak: float = 0.7) -> np.ndarray:
    top = float(np.max(np.abs(samples)))
    return (samples * (peak / top)).astype(np.float32) if top > 0 else samples


def _random_voice(ctx: Ctx, gender: str | None = None) -> tuple[str, str]:
    voices = ctx.recipes.speech["gender_voices"]
    gender = gender or _pick(ctx.rng, ["male", "female"])
    return gender, _pick(ctx.rng, voices[gender])


def _concat_turns(turns: Sequence[np.ndarray], gap_s: float) -> tuple[np.ndarray, list[tuple[float, float]]]:
    pieces = [_silence(LEAD_S)]
    spans = []
    cursor = len(pieces[0])
    for i, turn in enumerate(turns):
        if i:
            pieces.append(_silence(gap_s))
            cursor += pieces[-1].size
        spans.append((cursor / SR, (cursor + turn.size) / SR))
        pieces.append(turn)
        cursor += turn.size
    pieces.append(_silence(LEAD_S))
    return np.concatenate(pieces).astype(np.float32), spans


def make_speech_grounding(ctx: Ctx) -> FoundationDraft:
    """Which interval holds a word: words synthesized one by one, so every word's interval is exact."""
    sentence = ctx.cycle(ctx.recipes.speech["grounding_sentences"])
    words = sentence.split()
    gender, variant = _random_voice(ctx)
    clips = [_trim(_speak(w, "en-us", variant)) for w in words]
    audio, spans = _concat_turns(clips, WORD_GAP_S)
    lowered = [w.lower() for w in words]
    candidates = [i for i, w in enumerate(lowered) if lowered.count(w) == 1 and len(w) >= 3]
    target = int(_pick(ctx.rng, candidates))
    others = sorted((i for i in range(len(words)) if i != target), key=lambda i: (abs(i - target), i))[:3]
    return FoundationDraft(
        audio=_peak_normalise(audio),
        question=ctx.phrase("Speech_Grounding", word=words[target]),
        gold=_interval(*spans[target]),
        distractors=[_interval(*spans[i]) for i in others],
        meta={
            "transcript": sentence,
            "word": words[target],
            "word_index": target,
            "language": "en-us",
            "voice": variant,
            "gender": gender,
            "word_intervals": [[w, _r(s), _r(e)] for w, (s, e) in zip(words, spans, strict=True)],
        },
    )


def make_language_id(ctx: Ctx) -> FoundationDraft:
    """Spoken language identification over the recipe's languages; distractors prefer the same family."""
    languages = ctx.recipes.speech["languages"]
    code = ctx.cycle(sorted(languages))
    spec = languages[code]
    sentence = _pick(ctx.rng, spec["sentences"])
    gender, variant = _random_voice(ctx)
    same = [c for c in sorted(languages) if c != code and languages[c]["group"] == spec["group"]]
    other = [c for c in sorted(languages) if c != code and languages[c]["group"] != spec["group"]]
    ctx.rng.shuffle(same)
    ctx.rng.shuffle(other)
    distractors = [languages[c]["name"] for c in (same + other)[:3]]
    audio = _speak(sentence, code, variant)
    return FoundationDraft(
        audio=_peak_normalise(audio),
        question=ctx.phrase("Spoken_Language_Identification"),
        gold=spec["name"],
        distractors=distractors,
        meta={"transcript": sentence, "language": code, "voice": variant, "gender": gender},
    )


def make_gender(ctx: Ctx) -> FoundationDraft:
    """Male or female espeak-ng variant at default pitch (male F0 about 89-111 Hz, female 173-221 Hz)."""
    spec = ctx.recipes.speech
    gender = ctx.cycle(["male", "female"])
    variant = _pick(ctx.rng, spec["gender_voices"][gender])
    language = _pick(ctx.rng, spec["gender_voices"]["languages"])
    sentence = _pick(ctx.rng, spec["languages"][language]["sentences"])
    return FoundationDraft(
        audio=_peak_normalise(_speak(sentence, language, variant)),
        question=ctx.phrase("Speaker_Gender_Recognition"),
        gold=gender,
        distractors=["female" if gender == "male" else "male"],
        meta={"transcript": sentence, "language": language, "voice": variant, "gender": gender},
    )


def _command(ctx: Ctx) -> tuple[dict[str, Any], str, str, np.ndarray]:
    command = ctx.cycle(ctx.recipes.speech["commands"])
    gender, variant = _random_voice(ctx)
    return command, gender, variant, _peak_normalise(_speak(command["text"], "en-us", variant))


def _command_meta(command: dict[str, Any], variant: str, gender: str) -> dict[str, Any]:
    return {
        "transcript": command["text"],
        "intent": command["intent"],
        "entity_type": command["entity_type"],
        "entity": command["entity"],
        "voice": variant,
        "gender": gender,
        "language": "en-us",
    }


def make_intent(ctx: Ctx) -> FoundationDraft:
    """The intent of a spoken command; distractors are other intents of the recipe."""
    command, gender, variant, audio = _command(ctx)
    intents = sorted({c["intent"] for c in ctx.recipes.speech["commands"]} - {command["intent"]})
    distractors = [str(x) for x in ctx.rng.choice(intents, size=3, replace=False)]
    return FoundationDraft(
        audio=audio,
        question=ctx.phrase("Speaker_Intent_Classification"),
        gold=command["intent"],
        distractors=distractors,
        meta=_command_meta(command, variant, gender),
    )


def make_entity(ctx: Ctx) -> FoundationDraft:
    """The entity named in a spoken command; distractors are other entities of the same type."""
    command, gender, variant, audio = _command(ctx)
    pool = [e for e in ctx.recipes.speech["entity_pools"][command["entity_type"]] if e != command["entity"]]
    distractors = [str(x) for x in ctx.rng.choice(pool, size=3, replace=False)]
    return FoundationDraft(
        audio=audio,
        question=ctx.phrase("Speech_Entity_Reconition", entity_type=command["entity_type"]),
        gold=command["entity"],
        distractors=distractors,
        meta=_command_meta(command, variant, gender),
    )


NUMBER_WORDS = ("1", "2", "3", "4")
"""Choices of Speaker_Number_Verification."""


def make_speaker_number(ctx: Ctx) -> FoundationDraft:
    """1-4 voices with clearly different F0 take four turns; the number of turns never tells the answer."""
    spec = ctx.recipes.speech["distinct_voices"]
    n_voices = int(ctx.cycle([1, 2, 3, 4]))
    chosen = [spec["voices"][i] for i in sorted(ctx.rng.choice(len(spec["voices"]), size=n_voices, replace=False))]
    n_turns = 4
    assignment = list(range(n_voices)) + [int(ctx.rng.integers(n_voices)) for _ in range(n_turns - n_voices)]
    ctx.rng.shuffle(assignment)
    lines = [str(x) for x in ctx.rng.choice(spec["lines"], size=n_turns, replace=False)]
    clips = [
        _trim(_speak(line, "en-us", chosen[v]["variant"], pitch=chosen[v]["pitch"]))
        for line, v in zip(lines, assignment, strict=True)
    ]
    audio, spans = _concat_turns(clips, TURN_GAP_S)
    gold = str(n_voices)
    return FoundationDraft(
        audio=_peak_normalise(audio),
        question=ctx.phrase("Speaker_Number_Verification"),
        gold=gold,
        distractors=[n for n in NUMBER_WORDS if n != gold],
        meta={
            "n_speakers": n_voices,
            "voices": chosen,
            "turns": [
                {"voice": v, "text": t, "start_s": _r(s), "end_s": _r(e)}
                for v, t, (s, e) in zip(assignment, lines, spans, strict=True)
            ],
        },
    )


# ---------------------------------------------------------------------------------------------- sounds


def _event_label(recipes: Recipes, name: str) -> str:
    return recipes.sounds["events"][name]["label"]


def _scene_onsets(
    ctx: Ctx, names: Sequence[str], duration_s: float, min_gap_s: float = 0.4
) -> tuple[list[float], float]:
    """Onsets for events in order, at least ``min_gap_s`` of background apart, and the scene's duration.

    The duration is the recipe's, lengthened when the events and gaps would not fit in it.
    """
    from airbench_nb.synth.sounds import EVENTS

    lengths = [EVENTS[n].render(rng=np.random.default_rng(0)).size / SR for n in names]
    needed = sum(lengths) + min_gap_s * (len(names) + 1)
    duration_s = max(duration_s, float(np.ceil(needed + 0.5)))
    slack = duration_s - needed
    cuts = np.sort(ctx.rng.uniform(0, slack, size=len(names)))
    onsets, cursor = [], min_gap_s
    previous_cut = 0.0
    for cut, length in zip(cuts, lengths, strict=True):
        cursor += cut - previous_cut
        previous_cut = cut
        onsets.append(round(cursor, 3))
        cursor += length + min_gap_s
    return onsets, duration_s


def _scene(ctx: Ctx, names: Sequence[str]) -> tuple[np.ndarray, list[dict[str, Any]], str, float]:
    from airbench_nb.synth.sounds import scene

    cfg = ctx.recipes.sounds
    background = str(_pick(ctx.rng, sorted(cfg["backgrounds"])))
    snr = float(_pick(ctx.rng, cfg["snr_db"]))
    onsets, duration = _scene_onsets(ctx, names, float(cfg["scene_duration_s"]))
    audio, labels = scene(list(zip(names, onsets, strict=True)), duration, ctx.rng, background=background, snr_db=snr)
    return audio, labels, background, snr


def make_audio_grounding(ctx: Ctx) -> FoundationDraft:
    """When does an event occur: a target event among 1-2 others of different kinds in a 4 s scene."""
    events = sorted(ctx.recipes.sounds["events"])
    target = ctx.cycle(events)
    others = [str(x) for x in ctx.rng.choice([e for e in events if e != target], size=2, replace=False)]
    names = [target, *others]
    ctx.rng.shuffle(names)
    audio, labels, background, snr = _scene(ctx, names)
    spans = {lab["name"]: (lab["onset_s"], lab["offset_s"]) for lab in labels}
    gold = _interval(*spans[target])
    distractors = [_interval(*spans[o]) for o in others]
    # a third distractor: the target's length shifted into background before or after it
    start, end = spans[target]
    length = end - start
    shift = start + length + 0.5 if end + length + 0.5 <= audio.size / SR else start - length - 0.5
    shift = max(0.0, shift)
    distractors.append(_interval(shift, shift + length))
    if len(set(distractors + [gold])) < 4:
        distractors[-1] = _interval(max(0.0, start - 1.0), max(0.0, start - 1.0) + length)
    return FoundationDraft(
        audio=audio,
        question=ctx.phrase("Audio_Grounding", event=_event_label(ctx.recipes, target)),
        gold=gold,
        distractors=distractors,
        meta={"target": target, "events": labels, "background": background, "snr_db": snr},
    )


def make_sound_aqa(ctx: Ctx) -> FoundationDraft:
    """Count the repetitions of an event, or name the event that comes first (alternating items)."""
    cfg = ctx.recipes.sounds
    events = sorted(cfg["events"])
    if ctx.index % 2 == 0:
        target = ctx.cycle(events, "count")
        low, high = cfg["count_range"]
        count = int(ctx.cycle(list(range(low, high + 1)), "n"))
        audio, labels, background, snr = _scene(ctx, [target] * count)
        pool = [str(n) for n in range(max(1, count - 3), count + 4) if n != count]
        near = sorted(pool, key=lambda n: (abs(int(n) - count), int(n)))[:3]
        label = cfg["events"][target]
        question = ctx.phrase("Sound_AQA_count", event=label["label"], event_plural=label["plural"])
        return FoundationDraft(
            audio,
            question,
            str(count),
            near,
            {
                "subtask": "count",
                "target": target,
                "count": count,
                "events": labels,
                "background": background,
                "snr_db": snr,
            },
        )
    names = [str(x) for x in ctx.rng.choice(events, size=3, replace=False)]
    audio, labels, background, snr = _scene(ctx, names)
    first = labels[0]["name"]
    present = [lab["name"] for lab in labels[1:]]
    absent = [e for e in events if e not in names]
    distractors = [cfg["events"][n]["answer"] for n in [*present, str(_pick(ctx.rng, absent))]]
    return FoundationDraft(
        audio,
        ctx.phrase("Sound_AQA_order"),
        cfg["events"][first]["answer"],
        distractors,
        {"subtask": "order", "first": first, "events": labels, "background": background, "snr_db": snr},
    )


# ---------------------------------------------------------------------------------------------- music


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


FOUNDATION_MAKERS: dict[str, Callable[[Ctx], FoundationDraft]] = {
    "Speech_Grounding": make_speech_grounding,
    "Spoken_Language_Identification": make_language_id,
    "Speaker_Gender_Recognition": make_gender,
    "Speaker_Intent_Classification": make_intent,
    "Speech_Entity_Reconition": make_entity,
    "Speaker_Number_Verification": make_speaker_number,
    "Audio_Grounding": make_audio_grounding,
    "Sound_AQA": make_sound_aqa,
    "Music_Instruments_Classfication": make_instrument,
    "Music_Midi_Pitch_Analysis": make_pitch,
    "Music_Midi_Velocity_Analysis": make_velocity,
    "Music_AQA": make_music_aqa,
    "Music_Mood_Recognition": make_mood,
}
"""Foundation tasks the builder makes, by official name."""

NOT_BUILT: dict[str, str] = {
    "Speaker_Emotion_Recontion": "espeak-ng has no emotional prosody: labels would not be audible",
    "Speaker_Age_Prediction": "espeak-ng voices have no age; pitch alone would be a caricature of age",
    "Synthesized_Voice_Detection": "every offline voice is synthetic: there is no real speech to contrast",
    "vocal_sound_classification": "laughs, coughs and sneezes cannot be synthesized convincingly offline",
    "Acoustic_Scene_Classification": "real acoustic scenes need recordings; noise colours are not scenes",
    "Music_Genre_Recognition": "genres need real recordings; synthetic notes carry no genre",
}
"""Foundation tasks left out of the offline build, with the reason (import the official release for them)."""


# ---------------------------------------------------------------------------------------------- chat


def _join(parts: Sequence[str]) -> str:
    parts = list(parts)
    return parts[0] if len(parts) == 1 else ", then ".join(parts[:-1]) + ", then " + parts[-1]


def _pick_template(ctx: Ctx, task: str) -> dict[str, str]:
    return ctx.cycle(ctx.recipes.chat[task], "template")


def _a(phrase: str) -> str:
    """``phrase`` with its indefinite article: ``an organ``, ``a bell``."""
    return f"an {phrase}" if phrase[:1].lower() in "aeiou" else f"a {phrase}"


def _voice_phrase(gender: str) -> str:
    return f"a {gender} voice"


def make_chat_speech(ctx: Ctx) -> ChatDraft:
    """A spoken sentence with a question on its content (reference from the recipe)."""
    spec = ctx.cycle(ctx.recipes.speech["chat_sentences"])
    gender, variant = _random_voice(ctx)
    audio = _peak_normalise(_speak(spec["text"], "en-us", variant))
    meta_info = f'Speech: {_voice_phrase(gender)} says in English: "{spec["text"]}"'
    return ChatDraft(
        audio,
        spec["question"],
        spec["answer"],
        meta_info,
        meta={"transcript": spec["text"], "voice": variant, "gender": gender},
    )


def make_chat_dialogue(ctx: Ctx) -> ChatDraft:
    """A two-voice dialogue (one male, one female voice); meta_info lists the turns as AIR-Bench does."""
    spec = ctx.cycle(ctx.recipes.speech["dialogues"])
    first = str(ctx.cycle(["male", "female"], "first"))
    genders = [first, "female" if first == "male" else "male"]
    variants = [_pick(ctx.rng, ctx.recipes.speech["gender_voices"][g]) for g in genders]
    clips = [_trim(_speak(t, "en-us", variants[i % 2])) for i, t in enumerate(spec["turns"])]
    audio, spans = _concat_turns(clips, TURN_GAP_S)
    turns = [{"speaker": f"speaker {i % 2 + 1} ({genders[i % 2]})", "text": t} for i, t in enumerate(spec["turns"])]
    return ChatDraft(
        _peak_normalise(audio),
        spec["question"],
        spec["answer"],
        json.dumps(turns, ensure_ascii=False),
        meta={"turns": turns, "voices": variants, "spans": [[_r(s), _r(e)] for s, e in spans]},
    )


def _scene_fields(ctx: Ctx, labels: list[dict[str, Any]], background: str) -> dict[str, Any]:
    events = ctx.recipes.sounds["events"]
    answers = [f"{events[lab['name']]['answer']} at {lab['onset_s']:.1f} s" for lab in labels]
    return {
        "events_in_order": _join(answers),
        "n_events": len(labels),
        "background": ctx.recipes.sounds["backgrounds"][background],
        "first_answer": events[labels[0]["name"]]["answer"],
        "first_source": events[labels[0]["name"]]["source"],
        "sources": " and ".join(dict.fromkeys(events[lab["name"]]["source"] for lab in labels)),
    }


def make_chat_sound(ctx: Ctx, task: str) -> ChatDraft:
    """A scene of 2-3 distinct events; questions on what, when and what made them."""
    events = sorted(ctx.recipes.sounds["events"])
    names = [str(x) for x in ctx.rng.choice(events, size=int(ctx.rng.integers(2, 4)), replace=False)]
    audio, labels, background, snr = _scene(ctx, names)
    fields = _scene_fields(ctx, labels, background)
    template = _pick_template(ctx, task)
    meta_info = f"Sound: {fields['events_in_order']}, over {fields['background']}."
    return ChatDraft(
        audio,
        template["question"],
        template["reference"].format(**fields),
        meta_info,
        meta={"events": labels, "background": background, "snr_db": snr},
    )


def make_chat_music(ctx: Ctx, task: str) -> ChatDraft:
    """A melody (music_QA) or a chord (music_generation_analysis_QA) described by templates."""
    from airbench_nb.synth.music import chord, pitched_instruments

    template = _pick_template(ctx, task)
    name = str(_pick(ctx.rng, pitched_instruments()))
    label = _instrument_label(ctx.recipes, name)
    if task == "music_QA":
        direction = str(_pick(ctx.rng, ["ascending", "descending"]))
        tempo = int(_pick(ctx.rng, ctx.recipes.music["tempos_bpm"]))
        n_notes = int(ctx.rng.integers(3, 7))
        audio, onsets, midis = _melody(ctx, n_notes, direction, tempo, name)
        fields = {
            "direction": direction,
            "a_direction": _a(direction),
            "n_notes": n_notes,
            "instrument": label,
            "a_instrument": _a(label),
            "A_instrument": _a(label).capitalize(),
            "tempo": tempo,
        }
        meta_info = (
            f"Music: {_a(direction)} melody of {n_notes} notes (MIDI {', '.join(map(str, midis))}) played on "
            f"{_a(label)} at {tempo} beats per minute."
        )
        meta = {
            "midis": midis,
            "onsets_s": [_r(o) for o in onsets],
            "direction": direction,
            "n_notes": n_notes,
            "instrument": name,
            "tempo_bpm": tempo,
        }
    else:
        quality = str(_pick(ctx.rng, ["major", "minor"]))
        root = int(ctx.rng.integers(55, 68))
        audio = chord(root, quality, name, 2.0, velocity=100, rng=ctx.rng)
        mood = ctx.recipes.music["moods"][quality]
        fields = {"quality": quality, "root": root, "instrument": label, "a_instrument": _a(label), "mood": mood}
        meta_info = f"Music: a {quality} triad rooted on MIDI note {root}, played on {_a(label)} for 2 seconds."
        meta = {"quality": quality, "root_midi": root, "instrument": name, "mood": mood}
    return ChatDraft(audio, template["question"], template["reference"].format(**fields), meta_info, meta=meta)


def _louder_sentence(louder: str, other: str) -> str:
    if louder == "A":
        return f"The speech is louder than the {other}."
    if louder == "B":
        return f"The {other} is louder than the speech."
    return f"The speech and the {other} are about equally loud."


def _ahead_sentence(ahead: str, other: str) -> str:
    return {
        "before": f"The speech starts first; the {other} starts after it.",
        "after": f"The {other} starts first; the speech starts after it.",
        "meanwhile": f"The speech and the {other} start at the same time.",
    }[ahead]


def make_chat_mixed(ctx: Ctx, task: str) -> ChatDraft:
    """Speech mixed with a sound scene or a melody by the mixer, AIR-Bench style (gains and an offset)."""
    from airbench_nb import mix as mixer

    spec = _pick(ctx.rng, ctx.recipes.speech["chat_sentences"])
    gender, variant = _random_voice(ctx)
    speech = _trim(_speak(spec["text"], "en-us", variant))
    if task == "speech_and_sound_QA":
        from airbench_nb.synth.sounds import EVENTS, scene

        name = str(_pick(ctx.rng, sorted(ctx.recipes.sounds["events"])))
        # The event itself starts source B (no noise bed before it), so that Ahead is about the sound one hears.
        length = EVENTS[name].render(rng=np.random.default_rng(0)).size / SR
        # Three repetitions at least 1 s apart: B lasts over 2 s, so every offset of the recipe keeps an overlap.
        gap = round(max(length + 0.3, 1.0), 3)
        onsets = [0.0, gap, 2 * gap]
        background, _ = scene([(name, t) for t in onsets], 2 * gap + length + 0.05, ctx.rng, background="silence")
        other_word = "sound"
        other_desc = f"{ctx.recipes.sounds['events'][name]['answer']} heard three times"
        b_meta: dict[str, Any] = {"event": name, "event_onsets_s": onsets}
    else:
        from airbench_nb.synth.music import pitched_instruments

        name = str(_pick(ctx.rng, pitched_instruments()))
        direction = str(_pick(ctx.rng, ["ascending", "descending"]))
        background, _, midis = _melody(ctx, 5, direction, 120, name)
        other_word = "music"
        other_desc = f"{_a(direction)} melody on {_a(_instrument_label(ctx.recipes, name))}"
        b_meta = {"instrument": name, "direction": direction, "midis": midis}
    gains = ctx.cycle(ctx.recipes.chat["mix"]["gain_pairs_db"], "gains")
    offset = float(ctx.cycle(ctx.recipes.chat["mix"]["offsets_s"], "offset"))
    # The sources are files of their own, so that MixMeta names and hashes them and mix.remix() can redo the mix;
    # the components as placed and scaled in the mix are written too (stems), for listening and for checking.
    sources = {}
    for key, samples in (("source_a", speech), ("source_b", background)):
        rel = f"{ctx.stem}.{key}.wav"
        write_wav(ctx.out / rel, samples, SR)
        sources[key] = mixer.Clip.from_file(rel, root=ctx.out)
    result = mixer.mix(
        sources["source_a"], sources["source_b"], gain_a_db=float(gains[0]), gain_b_db=float(gains[1]), offset_s=offset
    )
    stems = {}
    for key, samples in (("a", result.a), ("b", result.b)):
        stems[key] = f"{ctx.stem}.stem_{key}.wav"
        write_wav(ctx.out / stems[key], samples, SR)
    meta = result.meta
    fields = {
        "text": spec["text"],
        "other": other_desc,
        "louder_sentence": _louder_sentence(meta.louder, other_word),
        "ahead_sentence": _ahead_sentence(meta.ahead, other_word),
    }
    template = _pick_template(ctx, task)
    meta_info = (
        f'Speech: {_voice_phrase(gender)} says in English: "{spec["text"]}" '
        f"{other_word.capitalize()}: {other_desc}. Louder: {fields['louder_sentence']} "
        f"Ahead: {fields['ahead_sentence']}"
    )
    return ChatDraft(
        result.mix,
        template["question"],
        template["reference"].format(**fields),
        meta_info,
        mix=meta,
        meta={"transcript": spec["text"], "voice": variant, "gender": gender, "stems": stems, **b_meta},
    )


CHAT_MAKERS: dict[str, Callable[[Ctx], ChatDraft]] = {
    "speech_QA": make_chat_speech,
    "speech_dialogue_QA": make_chat_dialogue,
    "sound_QA": lambda ctx: make_chat_sound(ctx, "sound_QA"),
    "sound_generation_QA": lambda ctx: make_chat_sound(ctx, "sound_generation_QA"),
    "music_QA": lambda ctx: make_chat_music(ctx, "music_QA"),
    "music_generation_analysis_QA": lambda ctx: make_chat_music(ctx, "music_generation_analysis_QA"),
    "speech_and_sound_QA": lambda ctx: make_chat_mixed(ctx, "speech_and_sound_QA"),
    "speech_and_music_QA": lambda ctx: make_chat_mixed(ctx, "speech_and_music_QA"),
}
"""Chat tasks the builder makes (all eight official ones)."""


# ---------------------------------------------------------------------------------------------- build


@dataclass
class BuildReport:
    """What :func:`build` wrote."""

    out: Path
    """Output folder."""
    preset: str
    """Preset name."""
    seed: int
    """Seed."""
    foundation: list[FoundationItem]
    """Foundation items written."""
    chat: list[ChatItem]
    """Chat items written."""
    failures: list[dict[str, Any]]
    """Items that could not be made: task, index and error (counted, never fatal)."""
    seconds: float
    """Wall-clock build time."""

    def counts(self) -> dict[str, Any]:
        """Counts per task and category, and failures."""
        return {
            "foundation": dict(Counter(i.task for i in self.foundation)),
            "chat": dict(Counter(i.task for i in self.chat)),
            "foundation_categories": dict(Counter(i.category for i in self.foundation)),
            "chat_categories": dict(Counter(i.category for i in self.chat)),
            "failures": len(self.failures),
        }

    def letter_balance(self) -> dict[str, dict[str, float]]:
        """Share of each gold letter per number of choices (e.g. ``{"4": {"A": 0.25, ...}}``)."""
        out: dict[str, dict[str, float]] = {}
        for k in (2, 3, 4):
            letters = [i.answer_letter for i in self.foundation if len(i.choices) == k]
            if letters:
                out[str(k)] = {letter: round(letters.count(letter) / len(letters), 4) for letter in "ABCD"[:k]}
        return out


def _write_audio(out: Path, rel: str, samples: np.ndarray) -> str:
    samples = np.asarray(samples, dtype=np.float32)
    peak = float(np.max(np.abs(samples))) if samples.size else 0.0
    if peak > 1.0:
        samples = samples / peak
    write_wav(out / rel, samples, SR)
    return sha256_file(out / rel)


def llm_references(
    items: Sequence[ChatItem],
    spec: str,
    *,
    cache: str | Path | None = None,
    concurrency: int = 8,
    api_key_env: str = "OPENAI_API_KEY",
    max_tokens: int = 200,
) -> tuple[list[ChatItem], list[dict[str, Any]]]:
    """Rewrite Chat reference answers with an LLM from each item's meta-information and question.

    The template reference is kept in ``meta["template_reference"]``; an item whose call fails keeps its template
    reference, with a note, and is counted.

    Args:
        items: Chat items (built or imported).
        spec: ``openai:<model>[@<base_url>]`` (the shared API client: cached, retried, concurrent).
        cache: SQLite cache of the calls (a rebuild with it makes no request and gives the same references).
        concurrency: Requests in flight.
        api_key_env: Environment variable holding the key.
        max_tokens: Length bound of each answer.

    Returns:
        ``(items, failures)``: new items in order, and one ``{"uid", "error"}`` per failed call.

    Raises:
        ValueError: For a spec that is not ``openai:...``.
    """
    from airbench_nb.api_client import APIClient, ChatRequest
    from airbench_nb.prompts import REFERENCE_TEMPLATE

    kind, _, rest = spec.partition(":")
    if kind != "openai" or not rest:
        raise ValueError(f"reference model {spec!r}: use openai:<model>[@<base_url>]")
    model, _, base_url = rest.partition("@")
    client = APIClient(base_url=base_url or None, api_key_env=api_key_env, concurrency=concurrency, cache_path=cache)
    requests = [
        ChatRequest(
            model,
            [{"role": "user", "content": REFERENCE_TEMPLATE.format(meta_info=i.meta_info, question=i.question)}],
            {"temperature": 0.0, "max_tokens": max_tokens},
        )
        for i in items
    ]
    try:
        results = client.run_sync(requests)
    finally:
        client.close()
    out, failures = [], []
    for item, result in zip(items, results, strict=True):
        if result.ok and result.text and result.text.strip():
            meta = {**item.meta, "template_reference": item.reference}
            out.append(
                item.model_copy(
                    update={
                        "reference": result.text.strip(),
                        "meta": meta,
                        "notes": [*item.notes, f"reference written by {spec} from meta_info"],
                    }
                )
            )
        else:
            failures.append({"uid": item.uid, "error": result.error or "empty answer"})
            out.append(
                item.model_copy(
                    update={
                        "notes": [*item.notes, f"reference by {spec} failed ({result.error}); template reference kept"],
                    }
                )
            )
    return out, failures


def build(
    preset: str = "mini",
    seed: int = 0,
    out: str | Path = "data/mini",
    *,
    tasks: Sequence[str] | None = None,
    recipe_dir: str | Path = RECIPE_DIR,
    reference_model: str | None = None,
    reference_cache: str | Path | None = None,
    progress: bool = True,
) -> BuildReport:
    """Build the offline benchmark.

    Args:
        preset: ``tiny`` (2 items per task, for tests) or ``mini`` (20 per Foundation task, 12 per Chat task), or
            any preset of ``presets.json``.
        seed: Build seed; the same seed gives byte-identical manifests.
        out: Output folder (manifests, ``dataset.json`` and ``audio/``).
        tasks: Task names to build (Foundation and/or Chat); default all.
        recipe_dir: Folder of the recipe files.
        reference_model: ``openai:<model>[@<base_url>]`` to write Chat references from the meta-information with an
            LLM instead of templates (see :func:`llm_references`); None keeps the offline templates.
        reference_cache: SQLite cache for those calls.
        progress: Show a tqdm progress bar.

    Returns:
        A :class:`BuildReport`. An item that fails to build is counted in ``failures`` and skipped.

    Raises:
        RecipeError: For a bad recipe folder or unknown preset.
        ValueError: For an unknown task name in ``tasks``.
    """
    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    recipes = load_recipes(recipe_dir)
    if preset not in recipes.presets or preset.startswith("_"):
        valid = ", ".join(k for k in recipes.presets if not k.startswith("_"))
        raise RecipeError(f"unknown preset {preset!r}; presets in {recipes.folder / 'presets.json'}: {valid}")
    sizes = recipes.presets[preset]
    wanted = set(tasks) if tasks else set(FOUNDATION_MAKERS) | set(CHAT_MAKERS)
    unknown = wanted - set(FOUNDATION_MAKERS) - set(CHAT_MAKERS)
    if unknown:
        raise ValueError(
            f"cannot build task(s) {', '.join(sorted(unknown))}; buildable: "
            f"{', '.join([*FOUNDATION_MAKERS, *CHAT_MAKERS])}"
        )
    out = Path(out)
    jobs = [("foundation", t, i) for t in FOUNDATION_MAKERS if t in wanted for i in range(sizes["foundation_per_task"])]
    jobs += [("chat", t, i) for t in CHAT_MAKERS if t in wanted for i in range(sizes["chat_per_task"])]
    foundation: list[FoundationItem] = []
    chat: list[ChatItem] = []
    failures: list[dict[str, Any]] = []
    for kind, task, index in tqdm(jobs, desc=f"build {preset}", disable=not progress):
        uid = f"{task}-{index:03d}"
        rel = f"audio/{kind}/{task}/{uid}.wav"
        ctx = Ctx(
            recipes=recipes,
            seed=seed,
            task=task,
            index=index,
            rng=item_rng(seed, task, index),
            out=out,
            stem=rel.removesuffix(".wav"),
        )
        try:
            if kind == "foundation":
                draft = FOUNDATION_MAKERS[task](ctx)
                position = gold_position(len(draft.distractors) + 1, seed, task, index)
                choices, answer = arrange(draft.gold, draft.distractors, position, ctx.rng)
                digest = _write_audio(out, rel, draft.audio)
                foundation.append(
                    FoundationItem(
                        uid=uid,
                        task=task,
                        dataset=DATASET,
                        audio=rel,
                        question=draft.question,
                        choices=choices,
                        answer=answer,
                        meta=draft.meta,
                        audio_status=AudioStatus.ok,
                        audio_sha256=digest,
                    )
                )
            else:
                chat_draft = CHAT_MAKERS[task](ctx)
                digest = _write_audio(out, rel, chat_draft.audio)
                chat.append(
                    ChatItem(
                        uid=uid,
                        task=task,
                        dataset=DATASET,
                        audio=rel,
                        question=chat_draft.question,
                        reference=chat_draft.reference,
                        meta_info=chat_draft.meta_info,
                        mix=chat_draft.mix,
                        meta=chat_draft.meta,
                        audio_status=AudioStatus.ok,
                        audio_sha256=digest,
                    )
                )
        except Exception as exc:  # noqa: BLE001 - one bad item never stops a build; counted in the report
            logger.error("could not build %s #%d: %s: %s", task, index, type(exc).__name__, exc)
            failures.append({"task": task, "index": index, "error": f"{type(exc).__name__}: {exc}"})
    if reference_model and chat:
        chat, reference_failures = llm_references(chat, reference_model, cache=reference_cache)
        failures += [{"task": "reference", "index": -1, **f} for f in reference_failures]
    write_manifest(out / "foundation.jsonl", foundation)
    write_manifest(out / "chat.jsonl", chat)
    report = BuildReport(
        out=out,
        preset=preset,
        seed=seed,
        foundation=foundation,
        chat=chat,
        failures=failures,
        seconds=round(time.perf_counter() - t0, 2),
    )
    card = DatasetCard(
        data_root=".",
        source=f"build:{preset}",
        counts={
            **report.counts(),
            "seed": seed,
            "recipes_sha256": recipes.sha256,
            "failures_detail": failures,
            "not_built": NOT_BUILT,
        },
    )
    write_dataset_card(out, card)
    return report
