"""UG-Bench's recipe files, read and checked: ``translation.json``, ``captions.json`` and ``speech_generation.json``.

Each reader returns a frozen dataclass or raises :class:`~airbench_nb.builders.core.RecipeError` with one line that
names the file, the line of the JSON text where the bad entry is, the entry (a sentence's or text's ``id``, a scene,
an instrument) and the field: ``translation.json:17: sentence 't07': field 'fr': empty text``. The builder
(:mod:`airbench_nb.builders.ugbench`) reads nothing else.
"""

from __future__ import annotations

import logging
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airbench_nb.builders.core import RecipeError, Recipes
from airbench_nb.synth.music import pitched_instruments
from airbench_nb.synth.scenes import EVENT_CLASSES, SCENES
from airbench_nb.synth.speech import voice_gender

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Voice:
    """One espeak-ng voice of a recipe."""

    name: str
    """``<language>+<variant>`` as espeak-ng takes it (``de+f2``)."""
    language: str
    """espeak-ng language (``de``, ``en-us``)."""
    variant: str
    """Voice variant (``m1``..``m7``, ``f1``..``f5``)."""
    gender: str
    """``male`` or ``female`` (from the variant)."""


@dataclass(frozen=True)
class TranslationRecipe:
    """``translation.json``, checked."""

    voices: dict[str, tuple[Voice, ...]]
    """espeak-ng voices of each language (ISO 639-1 code), cycled over a direction's items."""
    rates_wpm: dict[str, int]
    """Speaking rate of each language in words per minute."""
    pad_s: float
    """Silence before and after the speech (seconds)."""
    directions: tuple[tuple[str, str], ...]
    """``(source, target)`` language pairs, in build order."""
    sentences: tuple[dict[str, str], ...]
    """Each sentence's ``id`` and its text in every language (a multi-way parallel set)."""


@dataclass(frozen=True)
class SceneCaptions:
    """The audio part of ``captions.json``, checked."""

    duration_s: float
    """Length of a scene clip (seconds)."""
    event_level_db: tuple[float, float]
    """Range of each event's RMS above the bed's, in dB."""
    n_events: tuple[int, ...]
    """Numbers of events asked for, cycled over items (fewer are placed when they do not fit)."""
    scenes: dict[str, dict[str, str]]
    """Per scene class: ``place``, ``at_place``, ``bed`` phrases."""
    events: dict[str, dict[str, str]]
    """Per event class: ``noun`` and ``clause`` phrases."""
    sequence: dict[str, dict[str, str]]
    """How events are joined in order, per form (``noun``, ``clause``): ``two``, ``middle``, ``last``."""
    templates: tuple[str, ...]
    """Caption templates (fields of the module docstring of :mod:`airbench_nb.builders.ugbench`)."""


@dataclass(frozen=True)
class MusicCaptions:
    """The music part of ``captions.json``, checked."""

    pad_s: float
    """Silence before and after a melody (seconds)."""
    velocity: int
    """MIDI velocity of every note."""
    n_notes: tuple[int, int]
    """Least and most notes of a melody."""
    number_words: dict[int, str]
    """How a caption writes each number of notes."""
    instruments: dict[str, str]
    """Instrument (key of :data:`airbench_nb.synth.music.INSTRUMENTS`, pitched only) -> noun phrase with article."""
    tempos_bpm: dict[str, int]
    """Tempo word -> beats (quarter notes) per minute."""
    registers: dict[str, dict[str, Any]]
    """Register -> ``midi`` ([low, high], every note within), ``adjective`` and ``phrase``."""
    directions: dict[str, dict[str, str]]
    """``ascending`` / ``descending`` -> ``verb``, ``verb_s``, ``adverb``."""
    scales: tuple[str, ...]
    """Scales melodies are drawn from (keys of :data:`airbench_nb.synth.music.SCALE_STEPS`)."""
    templates: tuple[str, ...]
    """Caption templates."""


@dataclass(frozen=True)
class CaptionRecipe:
    """``captions.json``, checked."""

    references_per_item: int
    """Captions per item: one per template, the same number for audio and music."""
    audio: SceneCaptions
    """Scenes and their phrases."""
    music: MusicCaptions
    """Melodies and their phrases."""


@dataclass(frozen=True)
class SpeechGenerationRecipe:
    """``speech_generation.json``, checked."""

    language: str
    """Language of the texts and questions (ISO 639-1)."""
    voices: tuple[Voice, ...]
    """espeak-ng voices speaking the questions, cycled."""
    rate_wpm: int
    """Speaking rate of the questions in words per minute."""
    silence_s: float
    """Length of a tts item's clip of digital silence (seconds)."""
    pad_s: float
    """Silence before and after a spoken question (seconds)."""
    texts: tuple[dict[str, str], ...]
    """Texts to speak: ``id``, ``kind``, ``text`` and ``language`` (the file's :attr:`language` unless the entry
    names another)."""
    spoken_answers: tuple[dict[str, Any], ...]
    """Questions to answer aloud: ``id``, ``question``, ``answers`` (a list)."""
    tts_language_cycle: tuple[str, ...] = ()
    """The languages of successive ``tts`` items (``["en", "en", "en", "de"]``: every fourth item German), each
    language's texts in its own seeded order; empty: the texts in one seeded order, whatever their language."""


AUDIO_FIELDS = frozenset({"place", "at_place", "bed", "events_noun", "events_clause"})
"""Fields an audio caption template may use."""
MUSIC_FIELDS = frozenset(
    {
        "instrument",
        "n_notes",
        "direction",
        "direction_verb",
        "direction_verb_s",
        "direction_adverb",
        "scale",
        "tempo",
        "register_adjective",
        "register_phrase",
    }
)
"""Fields a music caption template may use."""
SEQUENCE = ("two", "middle", "last")
"""Joiners of a sequence of events: between two, between the first ones of three or more, before the last one."""
TEXT_KINDS = frozenset({"number", "name", "date", "question", "sentence"})
"""Kinds of texts to speak."""


class _Reader:
    """Raises one-line errors that point at a recipe file's line, entry and field."""

    def __init__(self, recipes: Recipes, name: str) -> None:
        self.path = recipes.folder / name
        try:
            self.lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            self.lines = []

    def line(self, *needles: str) -> int:
        """The first line holding every needle (1-based; 1 when none does)."""
        for number, text in enumerate(self.lines, 1):
            if all(n in text for n in needles):
                return number
        return 1

    def error(self, entry: str, field: str, problem: str, *needles: str) -> RecipeError:
        """``<file>:<line>: <entry>: field '<field>': <problem>``; the line is the first holding ``needles``."""
        line = self.line(*(needles or (f'"{field}"',)))
        return RecipeError(f"{self.path}:{line}: {entry}: field {field!r}: {problem}")

    def get(self, data: Any, key: str, entry: str, kind: type | tuple[type, ...], *needles: str) -> Any:
        """``data[key]``, checked to be of ``kind`` (a missing key or another type is a :class:`RecipeError`)."""
        if not isinstance(data, Mapping) or key not in data:
            raise self.error(entry, key, "missing", *needles)
        value = data[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.error(entry, key, f"expected {names}, got {type(value).__name__} {value!r}", *needles)
        return value

    def text(self, data: Any, key: str, entry: str, *needles: str) -> str:
        """A non-empty string field."""
        value = self.get(data, key, entry, str, *needles)
        if not value.strip():
            raise self.error(entry, key, "empty text", *needles)
        return value

    def voices(self, values: Any, entry: str, field: str) -> tuple[Voice, ...]:
        """espeak-ng voices ``<language>+<variant>`` (at least one)."""
        if not isinstance(values, list) or not values:
            raise self.error(entry, field, "needs a list of voices <language>+<variant>")
        out = []
        for value in values:
            language, _, variant = str(value).partition("+")
            try:
                if not language or not variant:
                    raise ValueError(f"voice {value!r} must be <language>+<variant>, e.g. de+f2")
                gender = voice_gender(variant)
            except ValueError as exc:
                raise self.error(entry, field, str(exc), f'"{value}"') from None
            out.append(Voice(str(value), language, variant, gender))
        return tuple(out)

    def rate(self, data: Any, key: str, entry: str, *needles: str) -> int:
        """A speaking rate espeak-ng takes (80-450 words per minute)."""
        rate = self.get(data, key, entry, int, *needles)
        if not 80 <= rate <= 450:
            raise self.error(entry, key, f"rate must be 80-450 words per minute, got {rate}", *needles)
        return int(rate)

    def seconds(self, data: Any, key: str, entry: str, *, positive: bool = False) -> float:
        """A duration in seconds (>= 0, or > 0 when ``positive``)."""
        value = float(self.get(data, key, entry, (int, float)))
        if value < 0 or (positive and value == 0):
            raise self.error(entry, key, f"must be {'> 0' if positive else '>= 0'} seconds, got {value:g}")
        return value

    def unique_ids(self, rows: Sequence[Mapping[str, Any]], section: str) -> None:
        """Refuse an id given twice in a list."""
        seen: set[str] = set()
        for row in rows:
            if row["id"] in seen:
                raise self.error(f"{section} {row['id']!r}", "id", "given twice", f'"id": "{row["id"]}"')
            seen.add(row["id"])

    def templates(self, data: Any, entry: str, allowed: frozenset[str], count: int) -> tuple[str, ...]:
        """``count`` caption templates using only ``allowed`` fields."""
        values = self.get(data, "templates", entry, list)
        if len(values) != count:
            raise self.error(entry, "templates", f"needs references_per_item ({count}) templates, has {len(values)}")
        for value in values:
            if not isinstance(value, str) or not value.strip():
                raise self.error(entry, "templates", f"template {value!r} is not a non-empty text")
            fields = {f for _, f, _, _ in string.Formatter().parse(value) if f}
            if fields - allowed:
                unknown = ", ".join(sorted(fields - allowed))
                known = ", ".join(sorted(allowed))
                raise self.error(entry, "templates", f"unknown field(s) {unknown}; fields: {known}", value)
        return tuple(values)


def translation_recipe(recipes: Recipes) -> TranslationRecipe:
    """Read and check ``translation.json``.

    Raises:
        RecipeError: Naming the file, line, entry and field that is missing or wrong.
    """
    r = _Reader(recipes, "translation.json")
    cfg = recipes.translation
    languages = r.get(cfg, "languages", "translation.json", dict)
    voices, rates = {}, {}
    for code, spec in languages.items():
        entry = f"language {code!r}"
        voices[code] = r.voices(r.get(spec, "voices", entry, list, f'"{code}"'), entry, "voices")
        rates[code] = r.rate(spec, "rate_wpm", entry, f'"{code}"')
    directions = []
    for pair in r.get(cfg, "directions", "translation.json", list):
        if not (isinstance(pair, list) and len(pair) == 2 and all(p in languages for p in pair) and pair[0] != pair[1]):
            raise r.error(
                "translation.json", "directions", f"{pair!r} must be [source, target], two different languages"
            )
        directions.append((str(pair[0]), str(pair[1])))
    if not directions:
        raise r.error("translation.json", "directions", "needs at least one [source, target] pair")
    needed = sorted({code for pair in directions for code in pair})
    sentences = []
    for k, row in enumerate(r.get(cfg, "sentences", "translation.json", list)):
        sid = row.get("id") if isinstance(row, dict) else None
        entry = f"sentence {sid!r}" if isinstance(sid, str) else f"sentence #{k + 1}"
        needle = f'"id": "{sid}"' if isinstance(sid, str) else '"sentences"'
        r.text(row, "id", entry, needle)
        sentences.append({"id": sid, **{code: r.text(row, code, entry, needle) for code in needed}})
    if not sentences:
        raise r.error("translation.json", "sentences", "needs at least one sentence")
    r.unique_ids(sentences, "sentence")
    return TranslationRecipe(
        voices=voices,
        rates_wpm=rates,
        pad_s=r.seconds(cfg, "pad_s", "translation.json"),
        directions=tuple(directions),
        sentences=tuple(sentences),
    )


def _phrases(r: _Reader, table: Any, entry: str, field: str, keys: Sequence[str], known: Sequence[str]) -> dict:
    """A table of phrases for every name of ``known`` (each with every key of ``keys``)."""
    if not isinstance(table, dict):
        raise r.error(entry, field, "must be an object")
    missing = [name for name in known if name not in table]
    if missing:
        raise r.error(entry, field, f"lacks {', '.join(missing)}")
    unknown = [name for name in table if name not in known]
    if unknown:
        raise r.error(entry, field, f"unknown {', '.join(unknown)}; known: {', '.join(known)}")
    return {name: {k: r.text(table[name], k, f"{field} {name!r}", f'"{name}"') for k in keys} for name in known}


def caption_recipe(recipes: Recipes) -> CaptionRecipe:
    """Read and check ``captions.json``.

    Raises:
        RecipeError: Naming the file, line, entry and field that is missing or wrong.
    """
    r = _Reader(recipes, "captions.json")
    cfg = recipes.captions
    count = r.get(cfg, "references_per_item", "captions.json", int)
    if not 3 <= count <= 5:
        raise r.error("captions.json", "references_per_item", f"must be 3-5 (as in Clotho and AudioCaps), got {count}")
    audio = r.get(cfg, "audio", "captions.json", dict)
    level = r.get(audio, "event_level_db", "audio", list)
    n_events = r.get(audio, "n_events", "audio", list)
    if len(level) != 2 or not all(isinstance(v, int | float) for v in level) or level[0] > level[1]:
        raise r.error("audio", "event_level_db", f"must be [low, high] in dB, got {level!r}")
    if not n_events or not all(isinstance(n, int) and 1 <= n <= 3 for n in n_events):
        raise r.error("audio", "n_events", f"must list numbers of events 1-3, got {n_events!r}")
    sequence = r.get(audio, "sequence", "audio", dict)
    scenes = SceneCaptions(
        duration_s=r.seconds(audio, "duration_s", "audio", positive=True),
        event_level_db=(float(level[0]), float(level[1])),
        n_events=tuple(int(n) for n in n_events),
        scenes=_phrases(r, audio.get("scenes"), "audio", "scenes", ("place", "at_place", "bed"), list(SCENES)),
        events=_phrases(r, audio.get("events"), "audio", "events", ("noun", "clause"), list(EVENT_CLASSES)),
        sequence={
            form: {k: r.get(r.get(sequence, form, "sequence", dict), k, f"sequence {form!r}", str) for k in SEQUENCE}
            for form in ("noun", "clause")
        },
        templates=r.templates(audio, "audio", AUDIO_FIELDS, count),
    )
    music = r.get(cfg, "music", "captions.json", dict)
    notes = r.get(music, "n_notes", "music", list)
    if len(notes) != 2 or not all(isinstance(n, int) for n in notes) or not 2 <= notes[0] <= notes[1]:
        raise r.error("music", "n_notes", f"must be [least, most] notes (at least 2), got {notes!r}")
    words = r.get(music, "number_words", "music", dict)
    missing_words = [n for n in range(notes[0], notes[1] + 1) if str(n) not in words]
    if missing_words:
        raise r.error("music", "number_words", f"lacks {', '.join(map(str, missing_words))}")
    instruments = r.get(music, "instruments", "music", dict)
    unpitched = [name for name in instruments if name not in pitched_instruments()]
    if unpitched or not instruments:
        pitched = ", ".join(pitched_instruments())
        needles = (f'"{unpitched[0]}"',) if unpitched else ()
        raise r.error("music", "instruments", f"{unpitched or 'none'}: use pitched instruments ({pitched})", *needles)
    tempos = r.get(music, "tempos_bpm", "music", dict)
    if not tempos or not all(isinstance(v, int) and 30 <= v <= 240 for v in tempos.values()):
        raise r.error("music", "tempos_bpm", f"must map tempo words to 30-240 beats per minute, got {tempos!r}")
    registers = r.get(music, "registers", "music", dict)
    for name, spec in registers.items():
        midi = r.get(spec, "midi", f"register {name!r}", list, f'"{name}"')
        if len(midi) != 2 or not all(isinstance(m, int) and 21 <= m <= 108 for m in midi) or midi[1] - midi[0] < 9:
            raise r.error(f"register {name!r}", "midi", f"must be [low, high] MIDI notes 9+ apart, got {midi!r}")
        for key in ("adjective", "phrase"):
            r.text(spec, key, f"register {name!r}", f'"{name}"')
    directions = _phrases(
        r, music.get("directions"), "music", "directions", ("verb", "verb_s", "adverb"), ("ascending", "descending")
    )
    scales = r.get(music, "scales", "music", list)
    if not scales or not all(s in ("major", "minor") for s in scales):
        raise r.error("music", "scales", f"must list major and/or minor, got {scales!r}")
    velocity = r.get(music, "velocity", "music", int)
    if not 1 <= velocity <= 127:
        raise r.error("music", "velocity", f"must be a MIDI velocity 1-127, got {velocity}")
    melodies = MusicCaptions(
        pad_s=r.seconds(music, "pad_s", "music"),
        velocity=velocity,
        n_notes=(notes[0], notes[1]),
        number_words={int(k): r.text(words, k, "number_words", f'"{k}"') for k in words},
        instruments={name: r.text(instruments, name, "instruments", f'"{name}"') for name in instruments},
        tempos_bpm={str(k): int(v) for k, v in tempos.items()},
        registers=registers,
        directions=directions,
        scales=tuple(scales),
        templates=r.templates(music, "music", MUSIC_FIELDS, count),
    )
    return CaptionRecipe(references_per_item=count, audio=scenes, music=melodies)


def speech_generation_recipe(recipes: Recipes) -> SpeechGenerationRecipe:
    """Read and check ``speech_generation.json``.

    Raises:
        RecipeError: Naming the file, line, entry and field that is missing or wrong.
    """
    r = _Reader(recipes, "speech_generation.json")
    cfg = recipes.speech_generation
    name = "speech_generation.json"
    texts = []
    for k, row in enumerate(r.get(cfg, "texts", name, list)):
        tid = row.get("id") if isinstance(row, dict) else None
        entry, needle = (f"text {tid!r}", f'"id": "{tid}"') if isinstance(tid, str) else (f"text #{k + 1}", '"texts"')
        r.text(row, "id", entry, needle)
        kind = r.text(row, "kind", entry, needle)
        if kind not in TEXT_KINDS:
            raise r.error(entry, "kind", f"{kind!r} is not one of {', '.join(sorted(TEXT_KINDS))}", needle)
        language = r.text(row, "language", entry, needle) if "language" in row else None
        texts.append({"id": tid, "kind": kind, "text": r.text(row, "text", entry, needle), "language": language})
    answers = []
    for k, row in enumerate(r.get(cfg, "spoken_answers", name, list)):
        aid = row.get("id") if isinstance(row, dict) else None
        entry = f"spoken answer {aid!r}" if isinstance(aid, str) else f"spoken answer #{k + 1}"
        needle = f'"id": "{aid}"' if isinstance(aid, str) else '"spoken_answers"'
        r.text(row, "id", entry, needle)
        accepted = r.get(row, "answers", entry, list, needle)
        if not accepted or not all(isinstance(a, str) and a.strip() for a in accepted):
            raise r.error(entry, "answers", f"needs one or more non-empty accepted answers, got {accepted!r}", needle)
        answers.append({"id": aid, "question": r.text(row, "question", entry, needle), "answers": list(accepted)})
    if not texts or not answers:
        raise r.error(name, "texts" if not texts else "spoken_answers", "needs at least one entry")
    r.unique_ids(texts, "text")
    r.unique_ids(answers, "spoken answer")
    language = r.text(cfg, "language", name)
    for text in texts:
        text["language"] = text["language"] or language
    cycle = r.get(cfg, "tts_language_cycle", name, list) if "tts_language_cycle" in cfg else []
    known = {t["language"] for t in texts}
    for code in cycle:
        if not isinstance(code, str) or code not in known:
            raise r.error(name, "tts_language_cycle", f"{code!r} is not the language of any text ({sorted(known)})")
    return SpeechGenerationRecipe(
        language=language,
        voices=r.voices(r.get(cfg, "voices", name, list), name, "voices"),
        rate_wpm=r.rate(cfg, "rate_wpm", name),
        silence_s=r.seconds(cfg, "silence_s", name, positive=True),
        pad_s=r.seconds(cfg, "pad_s", name),
        texts=tuple(texts),
        spoken_answers=tuple(answers),
        tts_language_cycle=tuple(cycle),
    )
