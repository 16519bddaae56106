"""The kit's own tasks beyond AIR-Bench (issue 14): questions about two clips, and follow-up turns about one mix.

Foundation, category ``multi-clip``: every item has two clips, written as ``<uid>-1.wav`` and ``<uid>-2.wav``
(``audios``; ``audio`` is the first), and two choices naming them (``the first clip``, ``the second clip``, from
``multi.json``'s ``clip_names``), always in clip order. Which clip is the gold one is the builder's balanced gold
position (:func:`~airbench_nb.builders.core.gold_position`): the maker puts the higher note, the more events or the
louder clip there, so gold letters stay balanced and the choices still read in order.

- ``kit_pitch_compare``: one note of one pitched instrument per clip, at MIDI pitches 2 semitones or more apart.
- ``kit_same_speaker``: two different espeak-ng sentences, by one voice (same variant and pitch) or by two voices
  whose median F0 differ by a factor of ``min_f0_ratio`` or more (half the items each, cycled).
- ``kit_more_events``: one event kind repeated over quiet coloured noise, at least ``min_gap_s`` apart, so each
  event has its own onset; counts differ by 2 or more; both clips equally long, so length tells nothing.
- ``kit_louder_clip``: two clips of the same kind of content (speech, music or a sound scene, cycled), normalised
  to integrated loudnesses (ITU-R BS.1770, :func:`airbench_nb.audio.loudness`) 6 LU or more apart; the loudness
  measured after scaling goes into ``meta``.

Chat, category ``multi-turn``: ``kit_followup_QA`` mixes speech with a sound or with music by the same path as the
mixed Chat tasks (:func:`~airbench_nb.builders.chat.make_chat_mixed`: sources, stems and ``MixMeta``) and asks 2 or
3 turns: what is said first, then follow-ups on what plays behind the voice, which is louder (the mix's Louder)
and which starts first (its Ahead), each with a reference written from that ground truth. ``meta_info`` is the
mixed tasks' description of the audio.

Ground truth goes into ``meta`` with one entry per clip where it is per clip (``midis``, ``voices``,
``counts``, ``loudness_lufs``), and the gold clip as ``gold_clip`` (1 or 2).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from airbench_nb.builders.core import (
    LEAD_S,
    ChatDraft,
    Ctx,
    FoundationDraft,
    RecipeError,
    _pick,
    _r,
    _silence,
    gold_position,
)

logger = logging.getLogger(__name__)

PEAK_LIMIT = 0.99
"""Peak the louder clip of ``kit_louder_clip`` is kept under (both clips are scaled alike, so the gap holds)."""


def _phrase(ctx: Ctx, task: str) -> str:
    return str(_pick(ctx.rng, ctx.recipes.multi["phrasings"][task]))


def _gold_clip(ctx: Ctx) -> int:
    """Index (0 or 1) of the clip that answers the question: the builder's balanced gold position."""
    return gold_position(2, ctx.seed, ctx.task, ctx.index)


def _clip_choices(ctx: Ctx, gold: int) -> tuple[str, list[str]]:
    names = [str(n) for n in ctx.recipes.multi["clip_names"]]
    if len(names) != 2:
        raise RecipeError(f"{ctx.recipes.folder / 'multi.json'}: clip_names must name 2 clips, got {names!r}")
    return names[gold], [n for i, n in enumerate(names) if i != gold]


def _pad(samples: np.ndarray) -> np.ndarray:
    return np.concatenate([_silence(LEAD_S), samples, _silence(LEAD_S)]).astype(np.float32)


def make_pitch_compare(ctx: Ctx) -> FoundationDraft:
    """Two notes of one instrument, 2 semitones or more apart: which clip has the higher pitch."""
    from airbench_nb.synth.music import note, pitched_instruments

    cfg = ctx.recipes.multi["kit_pitch_compare"]
    low, high = (int(v) for v in cfg["midi_range"])
    steps = [int(s) for s in cfg["semitone_differences"] if 2 <= int(s) <= high - low]
    if not steps:
        raise RecipeError(f"{ctx.recipes.folder / 'multi.json'}: no semitone difference of 2 or more fits midi_range")
    step = int(_pick(ctx.rng, steps))
    lower = int(ctx.rng.integers(low, high - step + 1))
    gold = _gold_clip(ctx)
    midis = [lower, lower]
    midis[gold] = lower + step
    name = str(_pick(ctx.rng, pitched_instruments()))
    velocity = int(cfg["velocity"])
    clips = [note(m, velocity, name, float(cfg["note_duration_s"]), rng=ctx.rng) for m in midis]
    answer, distractors = _clip_choices(ctx, gold)
    return FoundationDraft(
        audio=clips[0],
        question=_phrase(ctx, "kit_pitch_compare"),
        gold=answer,
        distractors=distractors,
        meta={"midis": midis, "semitones": step, "instrument": name, "velocity": velocity, "gold_clip": gold + 1},
        clips=clips,
    )


def _voice_pairs(ctx: Ctx, same: bool) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    cfg = ctx.recipes.multi["kit_same_speaker"]
    voices = list(cfg["voices"])
    if same:
        return [(v, v) for v in voices]
    ratio = float(cfg["min_f0_ratio"])
    pairs = [
        (a, b) for a in voices for b in voices if max(a["f0_hz"], b["f0_hz"]) >= ratio * min(a["f0_hz"], b["f0_hz"])
    ]
    if not pairs:
        raise RecipeError(f"{ctx.recipes.folder / 'multi.json'}: no two voices have F0 {ratio} times apart")
    return pairs


def make_same_speaker(ctx: Ctx) -> FoundationDraft:
    """Two sentences by one voice, or by two voices with clearly different F0 (half the items each)."""
    from airbench_nb.builders.speech import _peak_normalise, _speak, _trim
    from airbench_nb.synth.speech import voice_gender

    cfg = ctx.recipes.multi["kit_same_speaker"]
    kind = str(ctx.cycle(["same", "different"]))
    voices = _pick(ctx.rng, _voice_pairs(ctx, kind == "same"))
    sentences = [str(s) for s in ctx.rng.choice(cfg["sentences"], size=2, replace=False)]
    clips = [
        _pad(_peak_normalise(_trim(_speak(text, "en-us", v["variant"], pitch=int(v["pitch"])))))
        for text, v in zip(sentences, voices, strict=True)
    ]
    answers = cfg["answers"]
    return FoundationDraft(
        audio=clips[0],
        question=_phrase(ctx, "kit_same_speaker"),
        gold=answers[kind],
        distractors=[answers["different" if kind == "same" else "same"]],
        meta={
            "same_speaker": kind == "same",
            "voices": [
                {"variant": v["variant"], "pitch": int(v["pitch"]), "gender": voice_gender(v["variant"])}
                for v in voices
            ],
            "f0_hz": [v["f0_hz"] for v in voices],
            "transcripts": sentences,
            "language": "en-us",
        },
        clips=clips,
    )


def make_more_events(ctx: Ctx) -> FoundationDraft:
    """Two scenes of one event kind with counts 2 or more apart: which clip has more sound events."""
    from airbench_nb.builders.sounds import _scene_onsets
    from airbench_nb.synth.sounds import scene

    cfg = ctx.recipes.multi["kit_more_events"]
    sounds = ctx.recipes.sounds
    low, high = (int(v) for v in cfg["count_range"])
    gap = int(cfg["min_difference"])
    if high - low < gap or gap < 1:
        raise RecipeError(f"{ctx.recipes.folder / 'multi.json'}: count_range is too narrow for min_difference {gap}")
    event = str(ctx.cycle(list(cfg["events"]), "event"))
    more = int(ctx.rng.integers(low + gap, high + 1))
    fewer = int(ctx.rng.integers(low, more - gap + 1))
    gold = _gold_clip(ctx)
    counts = [fewer, fewer]
    counts[gold] = more
    background = str(_pick(ctx.rng, cfg["backgrounds"]))
    if background not in sounds["backgrounds"]:
        raise RecipeError(f"{ctx.recipes.folder / 'multi.json'}: background {background!r} is not one of sounds.json's")
    snr = float(_pick(ctx.rng, cfg["snr_db"]))
    min_gap = float(cfg["min_gap_s"])
    # the longer scene sets the length of both, so that the length of a clip does not tell its count
    _, duration = _scene_onsets(ctx, [event] * more, float(cfg["duration_s"]), min_gap)
    clips, onsets = [], []
    for count in counts:
        times, _ = _scene_onsets(ctx, [event] * count, duration, min_gap)
        samples, labels = scene([(event, t) for t in times], duration, ctx.rng, background=background, snr_db=snr)
        clips.append(samples)
        onsets.append([_r(lab["onset_s"]) for lab in labels])
    answer, distractors = _clip_choices(ctx, gold)
    return FoundationDraft(
        audio=clips[0],
        question=_phrase(ctx, "kit_more_events"),
        gold=answer,
        distractors=distractors,
        meta={
            "event": event,
            "counts": counts,
            "onsets_s": onsets,
            "background": background,
            "snr_db": snr,
            "duration_s": _r(duration),
            "gold_clip": gold + 1,
        },
        clips=clips,
    )


def _louder_content(ctx: Ctx, kind: str) -> tuple[list[np.ndarray], dict[str, Any]]:
    """Two clips of one kind of content, at whatever level the synthesizers give."""
    if kind == "speech":
        from airbench_nb.builders.speech import _random_voice, _speak, _trim

        gender, variant = _random_voice(ctx)
        lines = [str(s) for s in ctx.rng.choice(ctx.recipes.speech["distinct_voices"]["lines"], size=2, replace=False)]
        clips = [_pad(_trim(_speak(line, "en-us", variant))) for line in lines]
        return clips, {"voice": variant, "gender": gender, "transcripts": lines}
    if kind == "music":
        from airbench_nb.builders.music import _melody
        from airbench_nb.synth.music import pitched_instruments

        name = str(_pick(ctx.rng, pitched_instruments()))
        n_notes = int(ctx.recipes.multi["kit_louder_clip"]["melody_notes"])
        clips, melodies = [], []
        for _ in range(2):
            direction = str(_pick(ctx.rng, ["ascending", "descending"]))
            samples, _, midis = _melody(ctx, n_notes, direction, 120, name)
            clips.append(samples)
            melodies.append({"direction": direction, "midis": midis})
        return clips, {"instrument": name, "melodies": melodies}
    if kind == "sound":
        from airbench_nb.builders.sounds import _scene

        events = sorted(ctx.recipes.sounds["events"])
        clips, scenes = [], []
        for _ in range(2):
            names = [str(x) for x in ctx.rng.choice(events, size=2, replace=False)]
            samples, labels, background, snr = _scene(ctx, names)
            clips.append(samples)
            scenes.append({"events": [lab["name"] for lab in labels], "background": background, "snr_db": snr})
        return clips, {"scenes": scenes}
    raise RecipeError(f"{ctx.recipes.folder / 'multi.json'}: unknown content {kind!r}; use speech, music or sound")


def make_louder_clip(ctx: Ctx) -> FoundationDraft:
    """Two clips of the same kind of content, 6 LU or more apart by ITU-R BS.1770: which clip is louder."""
    from airbench_nb.audio import loudness

    cfg = ctx.recipes.multi["kit_louder_clip"]
    kind = str(ctx.cycle(list(cfg["contents"]), "content"))
    raw, detail = _louder_content(ctx, kind)
    low, high = (float(v) for v in cfg["louder_lufs"])
    louder = round(float(ctx.rng.uniform(low, high)), 1)
    difference = float(_pick(ctx.rng, [d for d in cfg["differences_lu"] if float(d) >= 6]))
    gold = _gold_clip(ctx)
    targets = [louder - difference, louder - difference]
    targets[gold] = louder
    clips = []
    for samples, target in zip(raw, targets, strict=True):
        measured = loudness(samples, unit="LUFS", name=f"{ctx.task} #{ctx.index}").value
        clips.append((samples * 10.0 ** ((target - measured) / 20.0)).astype(np.float32))
    peak = max(float(np.max(np.abs(c))) for c in clips)
    if peak > PEAK_LIMIT:  # scale both alike: the gap between them is what the question is about
        clips = [(c * (PEAK_LIMIT / peak)).astype(np.float32) for c in clips]
    measured = [loudness(c, unit="LUFS").value for c in clips]
    answer, distractors = _clip_choices(ctx, gold)
    return FoundationDraft(
        audio=clips[0],
        question=_phrase(ctx, "kit_louder_clip"),
        gold=answer,
        distractors=distractors,
        meta={
            "content": kind,
            "loudness_lufs": [_r(v) for v in measured],
            "difference_lu": _r(abs(measured[0] - measured[1])),
            "gold_clip": gold + 1,
            **detail,
        },
        clips=clips,
    )


def _other_description(ctx: Ctx, meta: dict[str, Any]) -> str:
    """What plays behind the voice, from the mix's ground truth (the words the mixed tasks' meta_info uses)."""
    from airbench_nb.builders.chat import _a
    from airbench_nb.builders.music import _instrument_label

    if "event" in meta:
        return f"{ctx.recipes.sounds['events'][meta['event']]['answer']} heard three times"
    return f"{_a(meta['direction'])} melody on {_a(_instrument_label(ctx.recipes, meta['instrument']))}"


def make_followup(ctx: Ctx) -> ChatDraft:
    """Speech mixed with a sound or music; 2-3 turns: what is said, then follow-ups on the mix's ground truth."""
    from airbench_nb.builders.chat import _ahead_sentence, _louder_sentence, make_chat_mixed

    cfg = ctx.recipes.multi["kit_followup_QA"]
    mix_task = str(ctx.cycle(list(cfg["mixes"]), "mix"))
    mixed = make_chat_mixed(ctx, mix_task)
    if mixed.mix is None:
        raise ValueError(f"{mix_task} gave no mix metadata")
    other = "sound" if "event" in mixed.meta else "music"
    n_turns = int(ctx.cycle(list(cfg["turns"]), "turns"))
    follow_ups = [str(k) for k in cfg["follow_ups"]]
    if not 2 <= n_turns <= len(follow_ups) + 1:
        raise RecipeError(f"{ctx.recipes.folder / 'multi.json'}: {n_turns} turns need {n_turns - 1} follow_ups")
    kinds = ["transcript", *(follow_ups[int(i)] for i in ctx.rng.permutation(len(follow_ups))[: n_turns - 1])]
    fields = {
        "text": mixed.meta["transcript"],
        "other": other,
        "other_desc": _other_description(ctx, mixed.meta),
        "louder_sentence": _louder_sentence(mixed.mix.louder, other),
        "ahead_sentence": _ahead_sentence(mixed.mix.ahead, other),
    }
    turns = [
        (str(_pick(ctx.rng, cfg[kind]["questions"])).format(**fields), str(cfg[kind]["reference"]).format(**fields))
        for kind in kinds
    ]
    return ChatDraft(
        audio=mixed.audio,
        question=turns[0][0],
        reference=turns[0][1],
        meta_info=mixed.meta_info,
        mix=mixed.mix,
        meta={**mixed.meta, "mixed_with": other, "other": fields["other_desc"], "turn_kinds": kinds},
        turns=turns,
    )
