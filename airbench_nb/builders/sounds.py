"""Sound Foundation tasks: when an event occurs (grounding) and sound questions (count, order) on scenes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from airbench_nb.builders.core import SR, Ctx, FoundationDraft, Recipes, _interval, _pick

logger = logging.getLogger(__name__)


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
