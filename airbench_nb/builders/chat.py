"""Chat tasks: open questions on speech, dialogues, sound scenes, music, and speech mixed with sound or music."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from airbench_nb.audio import write_wav
from airbench_nb.builders.core import SR, TURN_GAP_S, ChatDraft, Ctx, _pick, _r
from airbench_nb.builders.music import _instrument_label, _melody
from airbench_nb.builders.sounds import _scene
from airbench_nb.builders.speech import _concat_turns, _peak_normalise, _random_voice, _speak, _trim

logger = logging.getLogger(__name__)


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
