"""AIR-Bench's builder parts: the Foundation and Chat items, their SNR-graded copies and their circular rotations.

:class:`AirbenchPart` (``airbench``) makes the clean Foundation and Chat items of every task of
:data:`FOUNDATION_MAKERS` and :data:`CHAT_MAKERS` asked for (the preset's ``foundation_per_task`` and
``chat_per_task`` of each), and with ``reference_model`` rewrites the Chat references with an LLM
(:func:`llm_references`). :class:`~airbench_nb.builders.snr.SnrPart` (``snr``) grades speech items over noise or
music; :class:`CircularPart` (``circular``) writes the first items of each Foundation task once per rotation of
their choices. The three write ``foundation.jsonl`` in that order (clean, graded, rotated) and ``chat.jsonl``.
Seeding and choice order are described in :mod:`airbench_nb.builders.core`.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from airbench_nb.audio import sha256_file, write_wav
from airbench_nb.builders.chat import (
    make_chat_dialogue,
    make_chat_mixed,
    make_chat_music,
    make_chat_sound,
    make_chat_speech,
)
from airbench_nb.builders.core import (
    DATASET,
    SR,
    ChatDraft,
    Ctx,
    FoundationDraft,
    arrange,
    gold_position,
    item_rng,
)
from airbench_nb.builders.multi import (
    make_followup,
    make_louder_clip,
    make_more_events,
    make_pitch_compare,
    make_same_speaker,
)
from airbench_nb.builders.music import make_instrument, make_mood, make_music_aqa, make_pitch, make_velocity
from airbench_nb.builders.parts import BuildContext, Failure, PartResult, whole_number
from airbench_nb.builders.sounds import make_audio_grounding, make_sound_aqa
from airbench_nb.builders.speech import (
    make_entity,
    make_gender,
    make_intent,
    make_language_id,
    make_speaker_number,
    make_speech_grounding,
)
from airbench_nb.records import AudioStatus, ChatItem, ChatTurn, FoundationItem

logger = logging.getLogger(__name__)

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
    "kit_pitch_compare": make_pitch_compare,
    "kit_same_speaker": make_same_speaker,
    "kit_more_events": make_more_events,
    "kit_louder_clip": make_louder_clip,
}
"""Foundation tasks the builder makes: official names, then the kit's own about two clips
(:data:`~airbench_nb.records.KIT_FOUNDATION_TASKS`, :mod:`airbench_nb.builders.multi`)."""

NOT_BUILT: dict[str, str] = {
    "Speaker_Emotion_Recontion": "espeak-ng has no emotional prosody: labels would not be audible",
    "Speaker_Age_Prediction": "espeak-ng voices have no age; pitch alone would be a caricature of age",
    "Synthesized_Voice_Detection": "every offline voice is synthetic: there is no real speech to contrast",
    "vocal_sound_classification": "laughs, coughs and sneezes cannot be synthesized convincingly offline",
    "Acoustic_Scene_Classification": "real acoustic scenes need recordings; noise colours are not scenes",
    "Music_Genre_Recognition": "genres need real recordings; synthetic notes carry no genre",
}
"""Foundation tasks left out of the offline build, with the reason (import the official release for them)."""


CHAT_MAKERS: dict[str, Callable[[Ctx], ChatDraft]] = {
    "speech_QA": make_chat_speech,
    "speech_dialogue_QA": make_chat_dialogue,
    "sound_QA": lambda ctx: make_chat_sound(ctx, "sound_QA"),
    "sound_generation_QA": lambda ctx: make_chat_sound(ctx, "sound_generation_QA"),
    "music_QA": lambda ctx: make_chat_music(ctx, "music_QA"),
    "music_generation_analysis_QA": lambda ctx: make_chat_music(ctx, "music_generation_analysis_QA"),
    "speech_and_sound_QA": lambda ctx: make_chat_mixed(ctx, "speech_and_sound_QA"),
    "speech_and_music_QA": lambda ctx: make_chat_mixed(ctx, "speech_and_music_QA"),
    "kit_followup_QA": make_followup,
}
"""Chat tasks the builder makes: all eight official ones, then the kit's own with several turns
(:data:`~airbench_nb.records.KIT_CHAT_TASKS`)."""


def _rotations(items: Sequence[FoundationItem], per_task: int) -> list[FoundationItem]:
    """Every rotation of the first ``per_task`` items of each task (the audio is shared, nothing is written)."""
    from airbench_nb.rotation import rotate_items

    if per_task <= 0:
        return []
    taken: Counter[str] = Counter()
    chosen = []
    for item in items:
        if taken[item.task] < per_task:
            taken[item.task] += 1
            chosen.append(item)
    return rotate_items(chosen)


def _write_audio(out: Path, rel: str, samples: np.ndarray) -> str:
    samples = np.asarray(samples, dtype=np.float32)
    peak = float(np.max(np.abs(samples))) if samples.size else 0.0
    if peak > 1.0:
        samples = samples / peak
    write_wav(out / rel, samples, SR)
    return sha256_file(out / rel)


def _write_clips(out: Path, rel: str, draft: FoundationDraft) -> dict[str, Any]:
    """Write a draft's clip (``rel``) or clips (``<uid>-1.wav``, ``<uid>-2.wav``, ...): the item's audio fields."""
    if not draft.clips:
        digest = _write_audio(out, rel, draft.audio)
        return {"audio": rel, "audio_sha256": digest, "audios": [], "audios_sha256": []}
    if len(draft.clips) < 2 or draft.clips[0] is not draft.audio:
        raise ValueError(f"a draft's clips must be 2 or more with audio the first, got {len(draft.clips)}")
    stem = rel.removesuffix(".wav")
    paths = [f"{stem}-{k}.wav" for k in range(1, len(draft.clips) + 1)]
    digests = [_write_audio(out, path, clip) for path, clip in zip(paths, draft.clips, strict=True)]
    return {"audio": paths[0], "audio_sha256": digests[0], "audios": paths, "audios_sha256": digests}


def llm_references(
    items: Sequence[ChatItem],
    spec: str,
    *,
    cache: str | Path | None = None,
    concurrency: int = 8,
    api_key_env: str | None = None,
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
        api_key_env: Environment variable holding the key; None: the kit's rule (``OPENAI_API_KEY`` for OpenAI's
            endpoint only, no key for any other server; see :mod:`airbench_nb.api_client.endpoints`).
        max_tokens: Length bound of each answer.

    Returns:
        ``(items, failures)``: new items in order, and one ``{"uid", "error"}`` per failed call.

    Raises:
        ValueError: For a spec that is not ``openai:...`` (``EndpointError``, a ValueError, for a bad URL).
    """
    from airbench_nb.api_client import APIClient, ChatRequest
    from airbench_nb.api_client.endpoints import parse_openai_spec
    from airbench_nb.prompts import REFERENCE_TEMPLATE

    kind, _, rest = spec.partition(":")
    if kind != "openai" or not rest:
        raise ValueError(f"reference model {spec!r}: use openai:<model>[@<base_url>]")
    model, base_url = parse_openai_spec(rest)
    client = APIClient(base_url=base_url, api_key_env=api_key_env, concurrency=concurrency, cache_path=cache)
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


class AirbenchPart:
    """AIR-Bench's clean Foundation and Chat items (``foundation.jsonl``, ``chat.jsonl``).

    With ``reference_model``, the Chat references are rewritten by an LLM (:func:`llm_references`).
    """

    name = "airbench"
    """The part's name."""
    tasks: tuple[str, ...] = (*FOUNDATION_MAKERS, *CHAT_MAKERS)
    """Every Foundation task, then every Chat task, it builds."""
    options: tuple[str, ...] = ("foundation_per_task", "chat_per_task", "reference_model", "reference_cache")
    """Items per Foundation and Chat task (the preset's); the LLM writing Chat references and its cache (none)."""
    requires: tuple[str, ...] = ()
    """It reads no other part."""
    manifests: tuple[str, ...] = ("foundation", "chat")
    """Written even when empty."""

    def resolve(self, preset: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """Items per task (given, else the preset's) and the reference model and cache (given, else None)."""
        return {
            "foundation_per_task": whole_number(
                "foundation_per_task", given.get("foundation_per_task", preset["foundation_per_task"])
            ),
            "chat_per_task": whole_number("chat_per_task", given.get("chat_per_task", preset["chat_per_task"])),
            "reference_model": given.get("reference_model"),
            "reference_cache": given.get("reference_cache"),
        }

    def build(self, context: BuildContext) -> PartResult:
        """Build the clean items of the tasks asked for (a failing item is counted and skipped)."""
        from tqdm.auto import tqdm

        out, seed, wanted = context.out, context.seed, context.tasks
        n_foundation, n_chat = context.options["foundation_per_task"], context.options["chat_per_task"]
        jobs = [("foundation", t, i) for t in FOUNDATION_MAKERS if t in wanted for i in range(n_foundation)]
        jobs += [("chat", t, i) for t in CHAT_MAKERS if t in wanted for i in range(n_chat)]
        foundation: list[FoundationItem] = []
        chat: list[ChatItem] = []
        failures: list[Failure] = []
        for kind, task, index in tqdm(jobs, desc=f"build {context.preset}", disable=not context.progress):
            uid = f"{task}-{index:03d}"
            rel = f"audio/{kind}/{task}/{uid}.wav"
            ctx = Ctx(
                recipes=context.recipes,
                seed=seed,
                task=task,
                index=index,
                rng=item_rng(seed, task, index),
                out=out,
                stem=rel.removesuffix(".wav"),
            )
            try:
                if kind == "foundation":
                    foundation.append(_foundation_item(ctx, uid, rel))
                else:
                    chat.append(_chat_item(ctx, uid, rel))
            except Exception as exc:  # noqa: BLE001 - one bad item never stops a build; counted in the report
                logger.error("could not build %s #%d: %s: %s", task, index, type(exc).__name__, exc)
                failures.append({"task": task, "index": index, "error": f"{type(exc).__name__}: {exc}"})
        model = context.options["reference_model"]
        if model and chat:
            chat, reference_failures = llm_references(chat, model, cache=context.options["reference_cache"])
            failures += [{"task": "reference", "index": -1, **f} for f in reference_failures]
        return PartResult(
            items={"foundation": list(foundation), "chat": list(chat)},
            failures=failures,
            card={"not_built": NOT_BUILT},
            report={"foundation": foundation, "chat": chat},
        )


def _foundation_item(ctx: Ctx, uid: str, rel: str) -> FoundationItem:
    draft = FOUNDATION_MAKERS[ctx.task](ctx)
    position = gold_position(len(draft.distractors) + 1, ctx.seed, ctx.task, ctx.index)
    choices, answer = arrange(draft.gold, draft.distractors, position, ctx.rng)
    clips = _write_clips(ctx.out, rel, draft)
    return FoundationItem(
        uid=uid,
        task=ctx.task,
        dataset=DATASET,
        audio=clips["audio"],
        question=draft.question,
        choices=choices,
        answer=answer,
        meta=draft.meta,
        audio_status=AudioStatus.ok,
        audio_sha256=clips["audio_sha256"],
        audios=clips["audios"],
        audios_sha256=clips["audios_sha256"],
    )


def _chat_item(ctx: Ctx, uid: str, rel: str) -> ChatItem:
    draft = CHAT_MAKERS[ctx.task](ctx)
    digest = _write_audio(ctx.out, rel, draft.audio)
    return ChatItem(
        uid=uid,
        task=ctx.task,
        dataset=DATASET,
        audio=rel,
        question=draft.question,
        reference=draft.reference,
        meta_info=draft.meta_info,
        mix=draft.mix,
        meta=draft.meta,
        audio_status=AudioStatus.ok,
        audio_sha256=digest,
        turns=[ChatTurn(question=q, reference=r) for q, r in draft.turns],
    )


class CircularPart:
    """Circular-evaluation copies of the first clean items of each Foundation task.

    They follow the graded copies in ``foundation.jsonl``.
    """

    name = "circular"
    """The part's name."""
    tasks: tuple[str, ...] = ()
    """It rotates the items the ``airbench`` part built."""
    options: tuple[str, ...] = ("circular_items_per_task",)
    """Items of each task to rotate (0 when the preset has none)."""
    requires: tuple[str, ...] = ("airbench",)
    """It rotates that part's clean Foundation items."""
    manifests: tuple[str, ...] = ()
    """``foundation.jsonl`` is the ``airbench`` part's."""

    def resolve(self, preset: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """``circular_items_per_task``: given, else the preset's, else 0.

        Raises:
            ValueError: For a value that is not a whole number >= 0.
        """
        value = given.get("circular_items_per_task", preset.get("circular_items_per_task", 0))
        return {"circular_items_per_task": whole_number("circular_items_per_task", value)}

    def build(self, context: BuildContext) -> PartResult:
        """Every rotation of the first items of each task (the audio is shared, nothing is written)."""
        clean = cast(list[FoundationItem], context.earlier["airbench"].items["foundation"])  # the part makes only those
        rotated = _rotations(clean, context.options["circular_items_per_task"])
        return PartResult(items={"foundation": list(rotated)}, card=dict(context.options), report={"rotated": rotated})
