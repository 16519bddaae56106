"""UG-Bench's open-ended items built offline: speech translation, audio and music captioning, speech generation.

UG-Bench (Interspeech 2026) weighs a model's ears and its mouth. The kit builds the tasks it can make honestly from
synthesized audio, from three recipe files (checked by :mod:`airbench_nb.builders.ugbench_recipes`); sizes come from
the preset's ``ugbench_items`` (``{task: count or "all"}``, tasks of :data:`UGBENCH_TASKS`; absent: none):

Speech translation (``speech_translation``, :class:`~airbench_nb.records.TranslationItem`)
    ``translation.json`` is multi-way parallel, like FLORES: every sentence in English, German, French, Spanish and
    Italian. Item ``k`` takes direction ``k % D`` of the recipe's ``directions`` and, within it, the ``k // D``-th
    sentence of a seeded order of the sentences (so a smaller preset holds the first items of a larger one). Its
    audio is the source sentence spoken by espeak-ng (voice ``k // D`` of the source language's voices, cycled; the
    language's rate), resampled to 16 kHz and padded with ``pad_s`` of silence at both ends; its one reference is
    the sentence in the target language. Uid ``ugb-st-<source>-<target>-<sentence id>``.

Audio captioning (``audio_captioning``, :class:`~airbench_nb.records.CaptionItem`)
    Clip ``k`` is a synthesized scene (:func:`airbench_nb.synth.scenes.make_scene`): scene class and number of events
    cycled over seeded orders, so classes are balanced over a preset. Uid ``ugb-ac-<k:03d>``.

Music captioning (``music_captioning``)
    Clip ``k`` is a melody (:func:`airbench_nb.synth.music.melody`): a run of 4-6 notes up or down a major or minor
    scale on one pitched instrument, at a tempo named by a word (slow, moderate, fast), every note within one
    register's MIDI range; instrument, register, direction, tempo and scale are cycled over seeded orders. Uid
    ``ugb-mc-<k:03d>``.

Reference captions
    One caption per template of ``captions.json`` (the same number for every item), filled from the clip's meta:
    a scene's place, its bed and its events in the order they sound; a melody's instrument, notes, direction, scale,
    tempo word and register. Nothing else is said (no mood words: a few notes of a scale carry none).

Text to speech (``tts``, :class:`~airbench_nb.records.SpeechGenerationItem`)
    The ``k``-th text of a seeded order of ``speech_generation.json``'s texts. The request is in the prompt's text,
    but every item carries a clip: all tts items share one file of digital silence (``silence_s``, 16 kHz,
    ``audio/ugbench/silence.wav``). Uid ``ugb-tts-<text id>``.

Spoken answers (``spoken_answer``)
    The ``k``-th question of a seeded order, spoken by espeak-ng (English voices cycled) as the item's audio; the
    item holds the accepted answers. Uid ``ugb-sa-<question id>``.

Every item's ``question`` is its prompt (:func:`airbench_nb.prompts.reference_prompt`); its ``meta`` says how it was
made (voice, gender, rate, sentence or text id; scene and events with their times; melody notes and tempo). An item
that cannot be made is one counted failure ``{"task", "index", "uid", "error"}``, never a crash.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from airbench_nb.audio import sha256_file, write_wav
from airbench_nb.builders.core import DATASET, SR, Recipes, cycle_value, item_rng
from airbench_nb.builders.parts import BuildContext, PartResult
from airbench_nb.builders.ugbench_recipes import (
    CaptionRecipe,
    SpeechGenerationRecipe,
    TranslationRecipe,
    Voice,
    caption_recipe,
    speech_generation_recipe,
    translation_recipe,
)
from airbench_nb.prompts import reference_prompt
from airbench_nb.records import AudioStatus, CaptionItem, ReferenceItem, SpeechGenerationItem, TranslationItem

logger = logging.getLogger(__name__)

UGBENCH_BUILDER_VERSION = 1
"""Version of the rules above; recorded in ``dataset.json``."""

UGBENCH_TASKS: dict[str, str] = {
    "speech_translation": "translation",
    "audio_captioning": "caption",
    "music_captioning": "caption",
    "tts": "speech_generation",
    "spoken_answer": "speech_generation",
}
"""UG-Bench's tasks the builder makes, with the manifest kind (file ``<kind>.jsonl``) each is written to."""

UGBENCH_KINDS: tuple[str, ...] = ("translation", "caption", "speech_generation")
"""Manifest kinds of UG-Bench's items, in order."""

AUDIO_DIR = "audio/ugbench"
"""Folder of UG-Bench's clips under the data root."""
SILENCE_FILE = f"{AUDIO_DIR}/silence.wav"
"""The clip every tts item carries (digital silence)."""

Count = int | str
"""A number of items, or ``"all"``."""


def parse_ugbench_items(value: Mapping[str, Any] | None) -> dict[str, Count]:
    """Check a preset's (or the caller's) ``ugbench_items``: ``{task: whole number >= 0 or "all"}``.

    Raises:
        ValueError: Naming the bad task or count.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"ugbench_items must map UG-Bench tasks to counts, got {value!r}")
    out: dict[str, Count] = {}
    for task, count in value.items():
        if task not in UGBENCH_TASKS:
            raise ValueError(f"ugbench_items: unknown task {task!r}; tasks: {', '.join(UGBENCH_TASKS)}")
        if count != "all" and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise ValueError(f"ugbench_items: {task} must be a whole number >= 0 or 'all', got {count!r}")
        out[task] = count
    return out


def parse_ugbench_option(text: str) -> dict[str, Count]:
    """``speech_translation=4,tts=all`` (the CLI's ``--ugbench-items``) as a dict, checked.

    Raises:
        ValueError: For a part that is not ``task=count``, or a bad task or count.
    """
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        task, sep, count = part.partition("=")
        if not sep:
            raise ValueError(f"--ugbench-items: {part!r} must be task=count (e.g. tts=12 or tts=all)")
        out[task.strip()] = count.strip() if count.strip() == "all" else _whole(count.strip(), task.strip())
    return parse_ugbench_items(out)


def _whole(text: str, task: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--ugbench-items: {task} must be a whole number or 'all', got {text!r}") from None


@dataclass
class UgbenchBuild:
    """What :func:`build_ugbench` wrote."""

    translation: list[TranslationItem] = field(default_factory=list)
    """Translation items, direction by direction in turn."""
    caption: list[CaptionItem] = field(default_factory=list)
    """Caption items: audio captioning, then music captioning."""
    speech_generation: list[SpeechGenerationItem] = field(default_factory=list)
    """Speech generation items: tts, then spoken answers."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """One ``{"task", "index", "uid", "error"}`` per item that could not be made."""
    requested: dict[str, int] = field(default_factory=dict)
    """Items asked for per task (``"all"`` resolved to a number)."""

    @property
    def by_kind(self) -> dict[str, list[ReferenceItem]]:
        """The items of each manifest kind (``translation``, ``caption``, ``speech_generation``), in order."""
        return {"translation": self.translation, "caption": self.caption, "speech_generation": self.speech_generation}

    @property
    def items(self) -> list[ReferenceItem]:
        """Every item, kind by kind."""
        return [i for items in self.by_kind.values() for i in items]

    def cache_fields(self) -> dict[str, Any]:
        """What the build cache's key file keeps of this part besides its items and failures (see :meth:`reloaded`)."""
        return {"ugbench_requested": self.requested}

    @classmethod
    def reloaded(cls, items: Mapping[str, list[Any]], stored: Mapping[str, Any]) -> UgbenchBuild:
        """The part as a cached build holds it: its kinds' manifest items and the key file's fields.

        Args:
            items: The items of each manifest of the cache entry, by kind (a kind without a manifest may be absent).
            stored: The entry's key file (its ``failures`` and the fields of :meth:`cache_fields`).
        """
        return cls(
            translation=list(items.get("translation", [])),
            caption=list(items.get("caption", [])),
            speech_generation=list(items.get("speech_generation", [])),
            failures=[f for f in stored.get("failures", []) if f.get("task") in UGBENCH_TASKS],
            requested={str(k): int(v) for k, v in stored.get("ugbench_requested", {}).items()},
        )

    def counts(self) -> dict[str, Any]:
        """Items per task, translation items per direction, failures and the builder's version."""
        return {
            "requested": dict(self.requested),
            "items": dict(Counter(i.task for i in self.items)),
            "directions": dict(Counter(f"{i.source_language}-{i.target_language}" for i in self.translation)),
            "failures": len(self.failures),
            "builder_version": UGBENCH_BUILDER_VERSION,
        }


def _order(n: int, seed: int, key: str) -> list[int]:
    """A seeded order of ``range(n)`` (the same for every preset, so a smaller one holds the first of a larger)."""
    return [int(i) for i in np.random.default_rng([seed, 20, *key.encode()]).permutation(n)]


def _resolve(task: str, count: Count, available: int | None) -> int:
    """A task's count as a number: ``"all"`` is every entry; more than there are is an error."""
    if count == "all":
        if available is None:
            raise ValueError(f"ugbench_items: {task} is made from synthesized clips: give a number, not 'all'")
        return available
    if available is not None and int(count) > available:
        raise ValueError(f"ugbench_items: {task} asks for {count} items; the recipe has {available} ('all')")
    return int(count)


def _peak_safe(samples: np.ndarray) -> np.ndarray:
    peak = float(np.max(np.abs(samples))) if samples.size else 0.0
    return samples / peak * 0.99 if peak > 0.99 else samples


class _Writer:
    """Writes clips under the data root and turns drafts into items with their prompt as ``question``."""

    def __init__(self, out: Path, result: UgbenchBuild) -> None:
        self.out = out
        self.result = result

    def clip(self, rel: str, samples: np.ndarray) -> str:
        """Write ``samples`` (16 kHz, scaled under full scale if they exceed it) at ``rel``; their file's SHA-256."""
        write_wav(self.out / rel, _peak_safe(np.asarray(samples, np.float32)), SR)
        return sha256_file(self.out / rel)

    def speech(self, rel: str, text: str, voice: Voice, rate: int, pad_s: float) -> tuple[str, dict[str, Any]]:
        """Write espeak-ng speech of ``text`` (16 kHz, ``pad_s`` of silence at both ends) at ``rel``.

        Returns:
            The file's SHA-256 and what the item's meta says of the speech (voice, gender, rate, length).
        """
        from airbench_nb.synth.speech import speak

        speech = speak(text, voice.language, voice.variant, rate=rate)
        pad = np.zeros(int(round(pad_s * SR)), np.float32)
        meta = {"voice": voice.name, "gender": voice.gender, "rate_wpm": rate, "speech_s": round(speech.size / SR, 3)}
        return self.clip(rel, np.concatenate([pad, speech, pad])), meta

    def attempt(self, task: str, index: int, uid: str, make: Callable[[], ReferenceItem]) -> ReferenceItem | None:
        """``make()`` with its prompt as question, or None and one counted failure."""
        try:
            item = make()
            return item.model_copy(update={"question": reference_prompt(item)})
        except Exception as exc:  # noqa: BLE001 - one item that cannot be made is counted, never fatal
            logger.error("could not build UG-Bench item %s: %s: %s", uid, type(exc).__name__, exc)
            self.result.failures.append(
                {"task": task, "index": index, "uid": uid, "error": f"{type(exc).__name__}: {exc}"}
            )
            return None


COMMON: dict[str, Any] = {"dataset": DATASET, "audio_status": AudioStatus.ok, "question": ""}
"""Fields every built item shares (``question`` is replaced by the item's prompt)."""


def _translation_item(
    w: _Writer, recipe: TranslationRecipe, direction: tuple[str, str], sentence: dict[str, str], uid: str, voice: Voice
) -> TranslationItem:
    source, target = direction
    rel = f"{AUDIO_DIR}/translation/{uid}.wav"
    digest, meta = w.speech(rel, sentence[source], voice, recipe.rates_wpm[source], recipe.pad_s)
    return TranslationItem(
        uid=uid,
        task="speech_translation",
        audio=rel,
        audio_sha256=digest,
        source_language=source,
        target_language=target,
        source_text=sentence[source],
        references=[sentence[target]],
        meta={"sentence_id": sentence["id"], "direction": f"{source}-{target}", **meta},
        **COMMON,
    )


def _translations(w: _Writer, recipe: TranslationRecipe, n: int, seed: int) -> None:
    directions = recipe.directions
    orders = {d: _order(len(recipe.sentences), seed, f"translation:{d[0]}-{d[1]}") for d in directions}
    for k in range(n):
        direction = directions[k % len(directions)]
        rank = k // len(directions)
        sentence = recipe.sentences[orders[direction][rank]]
        uid = f"ugb-st-{direction[0]}-{direction[1]}-{sentence['id']}"
        voices = recipe.voices[direction[0]]
        make = partial(_translation_item, w, recipe, direction, sentence, uid, voices[rank % len(voices)])
        if (item := w.attempt("speech_translation", k, uid, make)) is not None:
            w.result.translation.append(item)  # type: ignore[arg-type]


def join_sequence(parts: list[str], joiners: Mapping[str, str]) -> str:
    """Phrases in order, joined by ``joiners``: ``a``; ``a<two>b``; ``a<middle>b<last>c``.

    Raises:
        ValueError: For no phrases.
    """
    if not parts:
        raise ValueError("a sequence needs at least one phrase")
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return parts[0] + joiners["two"] + parts[1]
    return joiners["middle"].join(parts[:-1]) + joiners["last"] + parts[-1]


def fill_captions(templates: Iterable[str], fields: Mapping[str, str]) -> list[str]:
    """Every template filled with ``fields``, its first letter capitalised."""
    out = []
    for template in templates:
        text = template.format(**fields)
        out.append(text[:1].upper() + text[1:])
    return out


def scene_caption_fields(recipe: CaptionRecipe, scene: str, events: list[str]) -> dict[str, str]:
    """The fields of an audio caption: the scene's phrases and its events (class names, in order) joined."""
    phrases = recipe.audio.scenes[scene]
    seq = recipe.audio.sequence
    return {
        **phrases,
        "events_noun": join_sequence([recipe.audio.events[e]["noun"] for e in events], seq["noun"]),
        "events_clause": join_sequence([recipe.audio.events[e]["clause"] for e in events], seq["clause"]),
    }


def _audio_caption_item(w: _Writer, recipe: CaptionRecipe, seed: int, k: int, uid: str) -> CaptionItem:
    from airbench_nb.synth.scenes import SCENES, make_scene

    spec = recipe.audio
    scene_name = str(cycle_value(list(SCENES), seed, "ugbench:scene", k))
    wanted = int(cycle_value(spec.n_events, seed, "ugbench:n_events", k))
    rng = item_rng(seed, "audio_captioning", k)
    scene = make_scene(scene_name, spec.duration_s, rng, n_events=wanted, level_db=spec.event_level_db)
    events = [e.event for e in scene.events]
    rel = f"{AUDIO_DIR}/caption/{uid}.wav"
    return CaptionItem(
        uid=uid,
        task="audio_captioning",
        audio=rel,
        audio_sha256=w.clip(rel, scene.background),
        references=fill_captions(spec.templates, scene_caption_fields(recipe, scene_name, events)),
        meta={
            "scene": scene_name,
            "events": scene.labels(),
            "event_levels_db": list(scene.levels_db),
            "scene_scale": scene.scale,
            "n_events_asked": wanted,
        },
        **COMMON,
    )


def melody_caption_fields(recipe: CaptionRecipe, meta: Mapping[str, Any]) -> dict[str, str]:
    """The fields of a music caption, from a melody's meta (``instrument``, ``n_notes``, ``direction``, ...)."""
    spec = recipe.music
    direction = spec.directions[meta["direction"]]
    register = spec.registers[meta["register"]]
    return {
        "instrument": spec.instruments[meta["instrument"]],
        "n_notes": spec.number_words[int(meta["n_notes"])],
        "direction": meta["direction"],
        "direction_verb": direction["verb"],
        "direction_verb_s": direction["verb_s"],
        "direction_adverb": direction["adverb"],
        "scale": meta["scale"],
        "tempo": meta["tempo"],
        "register_adjective": register["adjective"],
        "register_phrase": register["phrase"],
    }


def _melody_notes(low: int, high: int, n_notes: int, direction: str, scale: str, rng: np.random.Generator) -> list[int]:
    """``n_notes`` of a scale going ``direction`` from a random tonic, every note within ``[low, high]``."""
    from airbench_nb.synth.music import scale_midis

    span = abs(scale_midis(0, n_notes, direction, scale)[-1])
    if high - low < span:
        raise ValueError(f"{n_notes} notes of a {scale} scale span {span} semitones, more than MIDI {low}-{high}")
    start = int(rng.integers(low, high - span + 1)) + (span if direction == "descending" else 0)
    return scale_midis(start, n_notes, direction, scale)


def _music_caption_item(w: _Writer, recipe: CaptionRecipe, seed: int, k: int, uid: str) -> CaptionItem:
    from airbench_nb.synth.music import melody

    spec = recipe.music
    rng = item_rng(seed, "music_captioning", k)

    def cycle(values: Iterable[str], key: str) -> str:
        return str(cycle_value(list(values), seed, f"ugbench:{key}", k))

    meta: dict[str, Any] = {
        "instrument": cycle(spec.instruments, "instrument"),
        "register": cycle(spec.registers, "register"),
        "direction": cycle(spec.directions, "direction"),
        "tempo": cycle(spec.tempos_bpm, "tempo"),
        "scale": cycle(spec.scales, "scale"),
        "n_notes": int(rng.integers(spec.n_notes[0], spec.n_notes[1] + 1)),
    }
    low, high = spec.registers[meta["register"]]["midi"]
    midis = _melody_notes(low, high, meta["n_notes"], meta["direction"], meta["scale"], rng)
    bpm = spec.tempos_bpm[meta["tempo"]]
    samples, onsets = melody(midis, tempo_bpm=bpm, instrument=meta["instrument"], velocity=spec.velocity, rng=rng)
    pad = np.zeros(int(round(spec.pad_s * SR)), np.float32)
    rel = f"{AUDIO_DIR}/caption/{uid}.wav"
    meta |= {
        "tempo_bpm": bpm,
        "midis": midis,
        "velocity": spec.velocity,
        "onsets_s": [round(spec.pad_s + t, 4) for t in onsets],
    }
    return CaptionItem(
        uid=uid,
        task="music_captioning",
        audio=rel,
        audio_sha256=w.clip(rel, np.concatenate([pad, samples, pad])),
        references=fill_captions(spec.templates, melody_caption_fields(recipe, meta)),
        meta=meta,
        **COMMON,
    )


def _captions(w: _Writer, recipe: CaptionRecipe, task: str, n: int, seed: int) -> None:
    """``n`` items of a captioning task (``audio_captioning``: ``ugb-ac-<k>``, ``music_captioning``: ``ugb-mc-<k>``)."""
    make_item, prefix = CAPTION_MAKERS[task]
    for k in range(n):
        uid = f"{prefix}-{k:03d}"
        if (item := w.attempt(task, k, uid, partial(make_item, w, recipe, seed, k, uid))) is not None:
            w.result.caption.append(item)  # type: ignore[arg-type]


CAPTION_MAKERS: dict[str, tuple[Callable[[_Writer, CaptionRecipe, int, int, str], CaptionItem], str]] = {
    "audio_captioning": (_audio_caption_item, "ugb-ac"),
    "music_captioning": (_music_caption_item, "ugb-mc"),
}
"""Item maker and uid prefix of each captioning task."""


def _tts_item(w: _Writer, recipe: SpeechGenerationRecipe, k: int, entry: dict[str, Any]) -> SpeechGenerationItem:
    silence = w.out / SILENCE_FILE
    if not silence.is_file() or k == 0:  # one clip of digital silence, shared by every tts item (written anew)
        w.clip(SILENCE_FILE, np.zeros(int(round(recipe.silence_s * SR)), np.float32))
    return SpeechGenerationItem(
        uid=f"ugb-tts-{entry['id']}",
        task="tts",
        audio=SILENCE_FILE,
        audio_sha256=sha256_file(silence),
        text=entry["text"],
        language=entry["language"],
        meta={"text_id": entry["id"], "text_kind": entry["kind"], "clip": "digital silence"},
        notes=["the text to speak is in the prompt; the clip is digital silence (every item carries a clip)"],
        **COMMON,
    )


def _spoken_answer_item(
    w: _Writer, recipe: SpeechGenerationRecipe, k: int, entry: dict[str, Any]
) -> SpeechGenerationItem:
    uid = f"ugb-sa-{entry['id']}"
    rel = f"{AUDIO_DIR}/speech_generation/{uid}.wav"
    voice = recipe.voices[k % len(recipe.voices)]
    digest, meta = w.speech(rel, entry["question"], voice, recipe.rate_wpm, recipe.pad_s)
    return SpeechGenerationItem(
        uid=uid,
        task="spoken_answer",
        audio=rel,
        audio_sha256=digest,
        answers=list(entry["answers"]),
        language=recipe.language,
        meta={"question_id": entry["id"], "spoken_question": entry["question"], **meta},
        **COMMON,
    )


def _speech_generation(w: _Writer, recipe: SpeechGenerationRecipe, task: str, n: int, seed: int) -> None:
    """``n`` items of ``tts`` (texts) or ``spoken_answer`` (questions), in a seeded order."""
    entries = recipe.texts if task == "tts" else recipe.spoken_answers
    make_item, prefix = (_tts_item, "ugb-tts") if task == "tts" else (_spoken_answer_item, "ugb-sa")
    if task == "tts" and recipe.tts_language_cycle:
        chosen = _cycled_texts(recipe, n, seed)
    else:
        chosen = [entries[i] for i in _order(len(entries), seed, task)[:n]]
    for k, entry in enumerate(chosen):
        uid = f"{prefix}-{entry['id']}"
        if (item := w.attempt(task, k, uid, partial(make_item, w, recipe, k, entry))) is not None:
            w.result.speech_generation.append(item)  # type: ignore[arg-type]


def _cycled_texts(recipe: SpeechGenerationRecipe, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` texts whose languages follow :attr:`SpeechGenerationRecipe.tts_language_cycle`.

    Each language's texts come in their own seeded order (the recipe's language under the key ``tts``, as without a
    cycle, so its first texts stay the same; another under ``tts-<language>``); a language whose texts are used up
    gives its turn to the next one of the cycle that has texts left (``"all"`` takes every text).
    """
    by_language: dict[str, list[dict[str, Any]]] = {}
    for text in recipe.texts:
        by_language.setdefault(text["language"], []).append(text)
    queues = {
        code: [texts[i] for i in _order(len(texts), seed, "tts" if code == recipe.language else f"tts-{code}")]
        for code, texts in by_language.items()
    }
    cycle = recipe.tts_language_cycle
    fallback = list(dict.fromkeys([*cycle, *queues]))  # the cycle's languages, then any other, when one runs out
    chosen: list[dict[str, Any]] = []
    for k in range(n):
        turn = cycle[k % len(cycle)]
        code = turn if queues[turn] else next((c for c in fallback if queues[c]), None)
        if code is None:
            raise ValueError(f"ugbench_items: tts asks for {n} items; the recipe has {len(recipe.texts)} ('all')")
        chosen.append(queues[code].pop(0))
    return chosen


def planned_counts(
    recipes: Recipes, items: Mapping[str, Count] | None, tasks: Iterable[str] | None = None
) -> dict[str, int]:
    """How many items of each task a build makes (``"all"`` resolved against the recipes), in build order.

    Args:
        recipes: Recipes (only the files of the tasks asked for are read).
        items: ``{task: count or "all"}``.
        tasks: Tasks to make; None: all that ``items`` asks for.

    Returns:
        ``{task: n}`` for every task asked for with a count above 0.

    Raises:
        RecipeError: For a bad recipe file.
        ValueError: For a bad count, more items than a recipe holds, or ``"all"`` for a captioning task.
    """
    counts = parse_ugbench_items(items)
    wanted = set(UGBENCH_TASKS) if tasks is None else set(tasks) & set(UGBENCH_TASKS)
    asked = {t: counts[t] for t in UGBENCH_TASKS if t in wanted and counts.get(t)}
    available: dict[str, int | None] = {"audio_captioning": None, "music_captioning": None}
    if "speech_translation" in asked:
        recipe = translation_recipe(recipes)
        available["speech_translation"] = len(recipe.sentences) * len(recipe.directions)
    if {"tts", "spoken_answer"} & set(asked):
        speech = speech_generation_recipe(recipes)
        available |= {"tts": len(speech.texts), "spoken_answer": len(speech.spoken_answers)}
    if {"audio_captioning", "music_captioning"} & set(asked):
        caption_recipe(recipes)  # checked before any audio is made
    return {task: _resolve(task, count, available[task]) for task, count in asked.items()}


def build_ugbench(
    out: str | Path,
    *,
    seed: int,
    recipes: Recipes,
    items: Mapping[str, Count] | None,
    tasks: Iterable[str] | None = None,
    progress: bool = False,
) -> UgbenchBuild:
    """Build UG-Bench's items (see the module docstring); the caller writes the manifests.

    Args:
        out: Data root; audio goes under ``out/audio/ugbench/``.
        seed: Build seed (orders, scenes, melodies).
        recipes: Recipes (``translation.json``, ``captions.json``, ``speech_generation.json``).
        items: ``{task: count or "all"}`` (:func:`parse_ugbench_items`); absent tasks get none.
        tasks: Tasks to make (names of :data:`UGBENCH_TASKS`); None: all that ``items`` asks for.
        progress: Log each task as it is built.

    Returns:
        An :class:`UgbenchBuild`.

    Raises:
        RecipeError: For a bad recipe file (only the files of the tasks asked for are read).
        ValueError: For a bad count, an unknown task, or ``"all"`` for a captioning task.
    """
    result = UgbenchBuild(requested=planned_counts(recipes, items, tasks))
    w = _Writer(Path(out), result)
    n = result.requested
    if n.get("speech_translation"):
        _translations(w, translation_recipe(recipes), n["speech_translation"], seed)
    for task in CAPTION_MAKERS:
        if n.get(task):
            _captions(w, caption_recipe(recipes), task, n[task], seed)
    for task in ("tts", "spoken_answer"):
        if n.get(task):
            _speech_generation(w, speech_generation_recipe(recipes), task, n[task], seed)
    if progress:
        logger.info("UG-Bench items: %s", result.counts())
    return result


class UgbenchPart:
    """UG-Bench's items (``translation.jsonl``, ``caption.jsonl``, ``speech_generation.jsonl``)."""

    name = "ugbench"
    """The part's name."""
    tasks: tuple[str, ...] = tuple(UGBENCH_TASKS)
    """Speech translation, audio and music captioning, text to speech, spoken answers."""
    options: tuple[str, ...] = ("ugbench_items",)
    """Items per task (``{task: count or "all"}``)."""
    requires: tuple[str, ...] = ()
    """It reads no other part."""
    manifests: tuple[str, ...] = ()
    """Its manifests are written when they have items."""

    def resolve(self, preset: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """``ugbench_items``: the given counts merged over the preset's (a task not given keeps the preset's).

        Raises:
            ValueError: For an unknown task or a bad count (:func:`parse_ugbench_items`).
        """
        items = {**parse_ugbench_items(preset.get("ugbench_items")), **parse_ugbench_items(given.get("ugbench_items"))}
        return {"ugbench_items": items}

    def build(self, context: BuildContext) -> PartResult:
        """The items of the tasks asked for (:func:`build_ugbench`)."""
        ugbench = build_ugbench(
            context.out,
            seed=context.seed,
            recipes=context.recipes,
            items=context.options["ugbench_items"],
            tasks=context.tasks,
            progress=context.progress,
        )
        return PartResult(
            items={kind: list(items) for kind, items in ugbench.by_kind.items()},
            failures=ugbench.failures,
            card=dict(context.options),
            report={"ugbench": ugbench},
        )
