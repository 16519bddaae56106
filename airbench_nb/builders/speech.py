"""Speech Foundation tasks: grounding, language, gender, intent, entity and number of speakers (espeak-ng voices)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from airbench_nb.builders.core import (
    LEAD_S,
    SR,
    TURN_GAP_S,
    WORD_GAP_S,
    Ctx,
    FoundationDraft,
    _interval,
    _pick,
    _r,
    _silence,
)

logger = logging.getLogger(__name__)


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
