"""Build an offline benchmark in AIR-Bench's shape from synthesized audio with known ground truth.

``build(preset, seed, out)`` writes ``out/foundation.jsonl``, ``out/chat.jsonl``, ``out/dataset.json`` and the audio
under ``out/audio/``. What varies (texts, voices, pools, phrasings, sizes) is read from recipe files under
``data_manifests/mini/``; seeding and choice order are described in :mod:`airbench_nb.builders.core`. With an SNR
grid (the preset's ``snr_grid``, or the ``snr_grid`` argument), speech items are also built again mixed over noise
or music at each SNR (:mod:`airbench_nb.builders.snr`); they follow the clean items in ``foundation.jsonl``.
The kit's own tasks (:mod:`airbench_nb.builders.multi`) are built with the official ones: their Foundation items have
two clips each (``<uid>-1.wav``, ``<uid>-2.wav``), their Chat items several turns; SNR-graded copies are made of
official speech tasks only, so never of them, while circular rotations are made of them as of every task.
With ``sseu_utterances`` (the preset's, or the argument), SSEU-style clips are built too, speech over synthesized
scenes at SSEU-Bench's 7 SNRs plus the clean speech (:mod:`airbench_nb.builders.sseu`), and their items written to
``transcription.jsonl``, ``scene.jsonl``, ``events.jsonl`` and ``joint.jsonl``. Their task names
(``sseu_transcription``, ...) may be given in ``tasks`` like the others. With ``ugbench_items`` (the preset's, merged
under the argument's), UG-Bench's open-ended items are built too (:mod:`airbench_nb.builders.ugbench`): speech
translation, audio and music captioning, text to speech and spoken answers, written to ``translation.jsonl``,
``caption.jsonl`` and ``speech_generation.jsonl``; their task names may be given in ``tasks`` too. With
``tiered_clips_per_class`` (the preset's, or the argument), the tiered sound-source benchmark's clips are synthesized
(:mod:`airbench_nb.builders.tiered`) and asked closed-set and open-vocabulary, written to ``sound_source.jsonl`` and
``sound_source_open.jsonl`` (task ``sound_source`` in ``tasks`` selects them).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    RECIPE_DIR,
    SR,
    ChatDraft,
    Ctx,
    FoundationDraft,
    RecipeError,
    arrange,
    gold_position,
    item_rng,
    load_recipes,
)
from airbench_nb.builders.multi import (
    make_followup,
    make_louder_clip,
    make_more_events,
    make_pitch_compare,
    make_same_speaker,
)
from airbench_nb.builders.music import make_instrument, make_mood, make_music_aqa, make_pitch, make_velocity
from airbench_nb.builders.snr import build_graded, parse_snr_grid
from airbench_nb.builders.sounds import make_audio_grounding, make_sound_aqa
from airbench_nb.builders.speech import (
    make_entity,
    make_gender,
    make_intent,
    make_language_id,
    make_speaker_number,
    make_speech_grounding,
)
from airbench_nb.builders.sseu import SSEU_TASKS, SseuBuild, build_sseu
from airbench_nb.builders.tiered import TieredBuild, build_tiered
from airbench_nb.builders.ugbench import UGBENCH_TASKS, UgbenchBuild, build_ugbench, parse_ugbench_items
from airbench_nb.manifests import DatasetCard, write_dataset_card, write_manifest
from airbench_nb.records import (
    LETTERS,
    SOUND_SOURCE_TASK,
    AudioStatus,
    ChatItem,
    ChatTurn,
    FoundationItem,
    ReferenceItem,
)

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
    """Clean Foundation items written (the SNR-graded copies are in ``graded``)."""
    chat: list[ChatItem]
    """Chat items written."""
    failures: list[dict[str, Any]]
    """Items that could not be made: task, index and error, plus uid and snr_db for graded items (counted, never
    fatal)."""
    seconds: float
    """Wall-clock build time."""
    graded: list[FoundationItem] = field(default_factory=list)
    """SNR-graded copies of clean items (``meta.clean_uid`` set), written after them in ``foundation.jsonl``."""
    snr_grid: list[float] = field(default_factory=list)
    """SNRs in dB the graded items were asked for (empty: none)."""
    rotated: list[FoundationItem] = field(default_factory=list)
    """Circular-evaluation copies (``meta.rotation_of`` set, uid ``<uid>@r<k>``), written after the graded items."""
    sseu: SseuBuild = field(default_factory=SseuBuild)
    """SSEU-style items (:mod:`airbench_nb.builders.sseu`), written to ``transcription.jsonl``, ``scene.jsonl``,
    ``events.jsonl`` and ``joint.jsonl``; empty when the preset has no ``sseu_utterances``."""
    ugbench: UgbenchBuild = field(default_factory=UgbenchBuild)
    """UG-Bench's open-ended items (:mod:`airbench_nb.builders.ugbench`), written to ``translation.jsonl``,
    ``caption.jsonl`` and ``speech_generation.jsonl``; empty when the preset has no ``ugbench_items``."""
    tiered: TieredBuild = field(default_factory=TieredBuild)
    """The tiered sound-source items (:mod:`airbench_nb.builders.tiered`), written to ``sound_source.jsonl`` and
    ``sound_source_open.jsonl``; empty when the preset has no ``tiered_clips_per_class``."""

    @property
    def reference_items(self) -> dict[str, list[ReferenceItem]]:
        """The SSEU-style and UG-Bench items of each reference manifest kind, in the manifests' order (empty: none)."""
        return {**self.sseu.by_kind, **self.ugbench.by_kind}

    @property
    def foundation_written(self) -> list[FoundationItem]:
        """Every Foundation item of ``foundation.jsonl``, in its order: clean, then graded, then rotated copies."""
        return [*self.foundation, *self.graded, *self.rotated]

    def counts(self) -> dict[str, Any]:
        """Counts per task and category (clean Foundation items), SNR-graded items per task and SNR, and failures.

        Keys: ``foundation``, ``chat``, ``foundation_categories``, ``chat_categories`` (``{name: n}``),
        ``graded`` (``{task: n}``), ``graded_by_snr`` (``{"-5": n, ...}``), ``graded_items``, ``graded_failures``
        ``rotated_items``, ``sseu`` (:meth:`~airbench_nb.builders.sseu.SseuBuild.counts`), ``ugbench``
        (:meth:`~airbench_nb.builders.ugbench.UgbenchBuild.counts`), ``tiered``
        (:meth:`~airbench_nb.builders.tiered.TieredBuild.counts`) and ``failures`` (all failures, graded, SSEU,
        UG-Bench and tiered ones included).
        """
        graded_failures = sum(1 for f in self.failures if "snr_db" in f)
        return {
            "foundation": dict(Counter(i.task for i in self.foundation)),
            "chat": dict(Counter(i.task for i in self.chat)),
            "foundation_categories": dict(Counter(i.category for i in self.foundation)),
            "chat_categories": dict(Counter(i.category for i in self.chat)),
            "graded": dict(Counter(i.task for i in self.graded)),
            "graded_by_snr": {f"{k:g}": n for k, n in Counter(i.meta["snr_db"] for i in self.graded).items()},
            "graded_items": len(self.graded),
            "graded_failures": graded_failures,
            "rotated_items": len(self.rotated),
            "sseu": self.sseu.counts(),
            "ugbench": self.ugbench.counts(),
            "tiered": self.tiered.counts(),
            "failures": len(self.failures),
        }

    def letter_balance(self) -> dict[str, dict[str, float]]:
        """Share of each gold letter per number of choices (e.g. ``{"4": {"A": 0.25, ...}}``)."""
        out: dict[str, dict[str, float]] = {}
        for k in sorted({len(i.choices) for i in self.foundation}):  # 2 to 4 for AIR-Bench's tasks, up to 26
            letters = [i.answer_letter for i in self.foundation if len(i.choices) == k]
            out[str(k)] = {letter: round(letters.count(letter) / len(letters), 4) for letter in LETTERS[:k]}
        return out


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
    snr_grid: Sequence[float] | None = None,
    snr_items_per_task: int | None = None,
    circular_items_per_task: int | None = None,
    sseu_utterances: int | None = None,
    ugbench_items: dict[str, int | str] | None = None,
    tiered_clips_per_class: int | None = None,
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
        snr_grid: SNRs in dB at which speech items of ``snr.json``'s tasks are built again, mixed over noise or
            music (:mod:`airbench_nb.builders.snr`); None: the preset's ``snr_grid`` (none when it has none); empty:
            no graded items.
        snr_items_per_task: Grade the first N built items of each such task; None: the preset's
            ``snr_items_per_task`` (all items when it has none).
        circular_items_per_task: Also write the first N clean items of each Foundation task once per rotation of
            their choices (MMBench CircularEval, :func:`airbench_nb.rotation.rotate_items`); None: the
            preset's ``circular_items_per_task`` (0 when it has none).
        sseu_utterances: How many SSEU-style utterances to build, each over a synthesized scene at every SNR of
            the grid plus its clean copy (:mod:`airbench_nb.builders.sseu`); None: the preset's ``sseu_utterances``
            (0 when it has none). The preset's ``sseu_snr_grid_db``, when given, replaces ``sseu.json``'s grid.
        ugbench_items: UG-Bench items per task (``{"speech_translation": 4, "tts": "all", ...}``,
            :mod:`airbench_nb.builders.ugbench`), merged over the preset's ``ugbench_items`` (a task not named keeps
            the preset's count; none when the preset has none).
        tiered_clips_per_class: Clips of each fine class of the tiered sound-source benchmark, each asked
            closed-set and open-vocabulary (:mod:`airbench_nb.builders.tiered`); None: the preset's
            ``tiered_clips_per_class`` (0 when it has none).

    Returns:
        A :class:`BuildReport`. An item (clean or graded) that fails to build is counted in ``failures`` and
        skipped.

    Raises:
        RecipeError: For a bad recipe folder or unknown preset.
        ValueError: For an unknown task name in ``tasks``, or a bad SNR grid or ``snr_items_per_task``.
    """
    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    recipes = load_recipes(recipe_dir)
    if preset not in recipes.presets or preset.startswith("_"):
        valid = ", ".join(k for k in recipes.presets if not k.startswith("_"))
        raise RecipeError(f"unknown preset {preset!r}; presets in {recipes.folder / 'presets.json'}: {valid}")
    sizes = recipes.presets[preset]
    grid = parse_snr_grid(snr_grid if snr_grid is not None else sizes.get("snr_grid"))
    graded_per_task = snr_items_per_task if snr_items_per_task is not None else sizes.get("snr_items_per_task")
    if graded_per_task is not None and (isinstance(graded_per_task, bool) or not isinstance(graded_per_task, int)):
        raise ValueError(f"snr_items_per_task must be a whole number or None, got {graded_per_task!r}")
    if graded_per_task is not None and graded_per_task < 0:
        raise ValueError(f"snr_items_per_task must be >= 0 or None (all items), got {graded_per_task}")
    circular_per_task = (
        circular_items_per_task if circular_items_per_task is not None else sizes.get("circular_items_per_task", 0)
    )
    if isinstance(circular_per_task, bool) or not isinstance(circular_per_task, int) or circular_per_task < 0:
        raise ValueError(f"circular_items_per_task must be a whole number >= 0, got {circular_per_task!r}")
    n_sseu = sseu_utterances if sseu_utterances is not None else sizes.get("sseu_utterances", 0)
    if isinstance(n_sseu, bool) or not isinstance(n_sseu, int) or n_sseu < 0:
        raise ValueError(f"sseu_utterances must be a whole number >= 0, got {n_sseu!r}")
    ug_items = {**parse_ugbench_items(sizes.get("ugbench_items")), **parse_ugbench_items(ugbench_items)}
    n_tiered = tiered_clips_per_class if tiered_clips_per_class is not None else sizes.get("tiered_clips_per_class", 0)
    sseu_tasks = set(SSEU_TASKS.values())
    own = {SOUND_SOURCE_TASK}
    wanted = set(tasks) if tasks else set(FOUNDATION_MAKERS) | set(CHAT_MAKERS) | sseu_tasks | set(UGBENCH_TASKS) | own
    unknown = wanted - set(FOUNDATION_MAKERS) - set(CHAT_MAKERS) - sseu_tasks - set(UGBENCH_TASKS) - own
    if unknown:
        raise ValueError(
            f"cannot build task(s) {', '.join(sorted(unknown))}; buildable: "
            f"{', '.join([*FOUNDATION_MAKERS, *CHAT_MAKERS, *SSEU_TASKS.values(), *UGBENCH_TASKS, *own])}"
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
                clips = _write_clips(out, rel, draft)
                foundation.append(
                    FoundationItem(
                        uid=uid,
                        task=task,
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
                        turns=[ChatTurn(question=q, reference=r) for q, r in chat_draft.turns],
                    )
                )
        except Exception as exc:  # noqa: BLE001 - one bad item never stops a build; counted in the report
            logger.error("could not build %s #%d: %s: %s", task, index, type(exc).__name__, exc)
            failures.append({"task": task, "index": index, "error": f"{type(exc).__name__}: {exc}"})
    graded, graded_failures = build_graded(
        foundation,
        out,
        seed=seed,
        recipes=recipes,
        snr_grid=grid,
        items_per_task=graded_per_task,
        progress=progress,
    )
    failures += graded_failures
    sseu = build_sseu(
        out,
        seed=seed,
        recipes=recipes,
        utterances=n_sseu,
        snr_grid_db=sizes.get("sseu_snr_grid_db"),
        kinds=[kind for kind, task in SSEU_TASKS.items() if task in wanted],
        progress=progress,
    )
    failures += sseu.failures
    ugbench = build_ugbench(out, seed=seed, recipes=recipes, items=ug_items, tasks=wanted, progress=progress)
    failures += ugbench.failures
    tiered = build_tiered(
        out, seed=seed, clips_per_class=n_tiered if SOUND_SOURCE_TASK in wanted else 0, progress=progress
    )
    failures += tiered.failures
    if reference_model and chat:
        chat, reference_failures = llm_references(chat, reference_model, cache=reference_cache)
        failures += [{"task": "reference", "index": -1, **f} for f in reference_failures]
    rotated = _rotations(foundation, circular_per_task)
    write_manifest(out / "foundation.jsonl", [*foundation, *graded, *rotated])
    write_manifest(out / "chat.jsonl", chat)
    for kind, items in {**sseu.by_kind, **ugbench.by_kind, **tiered.by_kind}.items():
        if items:
            write_manifest(out / f"{kind}.jsonl", items)
        elif (out / f"{kind}.jsonl").is_file():  # left by an earlier build into the same folder: not this dataset's
            logger.warning("removing %s: this build has no %s items", out / f"{kind}.jsonl", kind)
            (out / f"{kind}.jsonl").unlink()
    report = BuildReport(
        out=out,
        preset=preset,
        seed=seed,
        foundation=foundation,
        chat=chat,
        failures=failures,
        seconds=round(time.perf_counter() - t0, 2),
        graded=graded,
        snr_grid=grid,
        rotated=rotated,
        sseu=sseu,
        ugbench=ugbench,
        tiered=tiered,
    )
    card = DatasetCard(
        data_root=".",
        source=f"build:{preset}",
        counts={
            **report.counts(),
            "seed": seed,
            "recipes_sha256": recipes.sha256,
            "snr_grid": grid,
            "snr_items_per_task": graded_per_task,
            "circular_items_per_task": circular_per_task,
            "sseu_utterances": n_sseu,
            "ugbench_items": ug_items,
            "tiered_clips_per_class": n_tiered,
            "failures_detail": failures,
            "not_built": NOT_BUILT,
        },
    )
    write_dataset_card(out, card)
    return report
