"""SSEU-style items (SSEU-Bench, Yin & Choi, ICASSP 2026): speech over a synthesized scene at a grid of SNRs.

SSEU-Bench mixes clean speech with real scene recordings at SNRs from -10 to 10 dB in 7 steps and asks three
things about the same audio: the transcript (WER), the acoustic scene (mACC) and the sound events (mAP), one task
per prompt ("independent") or all three in one ("joint", or its five-step chain of thought). The offline kit builds
the same structure from synthesized audio (recipe ``sseu.json``; sizes from the preset's ``sseu_utterances``):

Utterance
    Utterance ``k`` (``sseu-<k:03d>``) says sentence ``k`` of the recipe (cycled) with voice and rate ``k`` (cycled)
    through espeak-ng, padded with ``pad_s`` of silence at both ends and to at least ``min_duration_s``. Its clean
    speech is written once, ``audio/sseu/<utterance>/clean.wav``.

Background
    One scene per utterance (:func:`airbench_nb.synth.scenes.make_scene`), as long as the speech clip and shared by
    all its SNRs, so that a curve over the grid varies only the SNR. Scene classes cycle over a seeded order of the
    recipe's ``scenes`` (all of :data:`~airbench_nb.synth.scenes.SCENES` when null), so they are balanced over a
    preset. The background (bed plus events) is written as ``background.wav`` and the isolated events as
    ``events.wav`` beside the clean speech, so that :class:`~airbench_nb.records.MixMeta` names and hashes both
    sources, :func:`airbench_nb.mix.remix` redoes every mix and the tests measure onsets on the event track.

Mixed clip
    For each SNR of the grid (``snr_grid_db``, or the preset's ``sseu_snr_grid_db``), :func:`airbench_nb.mix.mix`
    mixes the clean file (A) over the background file (B) in SNR mode: ``10 log10(sum a**2 / sum b**2)`` over the
    whole clip, the speech against the WHOLE background, bed and events together. Its clip id is
    ``<utterance>@snr<snr:+g>`` (``sseu-002@snr-6.67``) and its audio ``audio/sseu/<utterance>/snr<snr:+g>.wav``.
    Every mixed clip gets five items sharing the clip id (uid ``<clip id>-<suffix>``): ``transcription``,
    ``scene``, ``events`` (the independent prompts), ``joint`` (:class:`~airbench_nb.records.JointItem`,
    prompting ``joint``) and ``cot`` (prompting ``sseu-cot``), so that one run holds independent, joint and
    chain-of-thought answers about the same audio.

Clean copy
    The clean speech is a reference point for WER (clip id ``<utterance>@clean``, ``snr_db`` None, no ``mix``). It
    gets a transcription item only: it has no background, so its scene and its events are undefined, and a scene,
    events or joint item about it would have no gold answer.

Meta
    Every item's ``meta`` holds ``utterance``, ``sentence_id``, ``voice``, ``gender``, ``rate_wpm``, ``clean`` (the
    clean speech's path) and ``mixed`` (False for the clean copy); a mixed clip's items add ``scene``, ``events``
    (``[{"event", "onset_s", "offset_s"}]`` on the clip's timeline), ``event_levels_db``, ``scene_scale``,
    ``background``, ``events_stem`` and ``snr_db_measured``. Keys that the scoring reads as SNR-graded or rotated
    copies (``clean_uid``, ``rotation_of``) are never used: these items are scored as they are, by their own
    ``snr_db``.

Failures
    An utterance whose speech or scene cannot be made fails all its items; a mix that fails fails its clip's items.
    Each is one counted failure ``{"task": "sseu", "index", "uid", "snr_db", "error"}`` (``uid`` the clip id),
    never a crash.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from airbench_nb.audio import sha256_file, write_wav
from airbench_nb.builders.core import DATASET, SR, RecipeError, Recipes, cycle_value, item_rng
from airbench_nb.builders.parts import BuildContext, PartResult
from airbench_nb.mix import MAX_LEVEL_DB, Clip, mix
from airbench_nb.records import (
    AudioStatus,
    EventsItem,
    JointItem,
    ReferenceItem,
    SceneItem,
    TranscriptionItem,
)
from airbench_nb.synth.scenes import EVENT_CLASSES, SCENES, make_scene
from airbench_nb.synth.speech import speak, voice_gender

logger = logging.getLogger(__name__)

SSEU_BUILDER_VERSION = 1
"""Version of the rules above; recorded in ``dataset.json``. The data cache keys on the builder's source, so any
change to this module (this number included) gives a new cache entry."""

SSEU_TASKS: dict[str, str] = {
    "transcription": "sseu_transcription",
    "scene": "sseu_scene",
    "events": "sseu_events",
    "joint": "sseu_joint",
}
"""Task name of each item kind (:data:`airbench_nb.records.REFERENCE_TASKS`)."""

ITEM_SUFFIXES: tuple[str, ...] = ("transcription", "scene", "events", "joint", "cot")
"""Uid suffixes of a mixed clip's items, in manifest order (``cot``: the joint item with prompting ``sseu-cot``)."""

SSEU_DATASET = DATASET
"""``dataset`` of every SSEU item (``synthetic``, like the rest of the offline build)."""


@dataclass(frozen=True)
class SseuRecipe:
    """``sseu.json``, checked."""

    snr_grid_db: tuple[float, ...]
    """SNRs in dB of speech over the whole background."""
    voices: tuple[str, ...]
    """espeak-ng voices ``<language>+<variant>``, cycled over utterances."""
    rates_wpm: tuple[int, ...]
    """Speaking rates in words per minute, cycled over utterances."""
    pad_s: float
    """Silence before and after the speech (seconds)."""
    min_duration_s: float
    """Shortest clip (seconds); shorter speech is padded evenly to it."""
    event_level_db: tuple[float, float]
    """Range of each event's RMS above the bed's, in dB."""
    scenes: tuple[str, ...]
    """Scene classes cycled over utterances (all of :data:`~airbench_nb.synth.scenes.SCENES` by default)."""
    sentences: tuple[tuple[str, str], ...]
    """``(id, text)`` of each sentence, in order."""
    questions: dict[str, str]
    """Question text of each kind (``transcription``, ``scene``, ``events``, ``joint``, ``sseu-cot``)."""


def parse_sseu_grid(values: Iterable[float | int | str]) -> tuple[float, ...]:
    """Check an SSEU SNR grid: finite numbers of dB within ±:data:`~airbench_nb.mix.MAX_LEVEL_DB`, distinct labels.

    Raises:
        ValueError: Naming the bad value.
    """
    grid: list[float] = []
    for value in values:
        try:
            snr = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"SSEU SNR {value!r} is not a number of dB") from None
        if not math.isfinite(snr) or abs(snr) > MAX_LEVEL_DB:
            raise ValueError(f"SSEU SNR {value!r} must be a finite number of dB within ±{MAX_LEVEL_DB:g}")
        if snr_tag(snr) in {snr_tag(s) for s in grid}:
            raise ValueError(f"SSEU SNR {snr:g} dB is given twice")
        grid.append(snr)
    return tuple(grid)


def snr_tag(snr_db: float) -> str:
    """The SNR part of a clip id: ``snr-6.67``, ``snr+0``, ``snr+10``."""
    return f"snr{snr_db:+g}"


def clip_id(utterance: str, snr_db: float | None) -> str:
    """Clip id of an utterance at an SNR (``sseu-002@snr-6.67``), or of its clean copy (``sseu-002@clean``)."""
    return f"{utterance}@{'clean' if snr_db is None else snr_tag(snr_db)}"


def sseu_recipe(recipes: Recipes) -> SseuRecipe:
    """Read and check ``sseu.json``.

    Raises:
        RecipeError: Naming the file and the field that is missing or wrong.
    """
    path = recipes.folder / "sseu.json"
    cfg = recipes.sseu
    try:
        grid = parse_sseu_grid(cfg["snr_grid_db"])
        voices = tuple(str(v) for v in cfg["voices"])
        for voice in voices:
            language, _, variant = voice.partition("+")
            if not language or not variant:
                raise ValueError(f"voice {voice!r} must be <language>+<variant>, e.g. en-us+f2")
            voice_gender(variant)
        rates = tuple(int(r) for r in cfg["rates_wpm"])
        level = tuple(float(v) for v in cfg["event_level_db"])
        scenes = tuple(cfg.get("scenes") or SCENES)
        unknown = [s for s in scenes if s not in SCENES]
        if unknown:
            raise ValueError(f"unknown scene(s) {unknown!r}; scenes: {', '.join(SCENES)}")
        sentences = tuple((str(s["id"]), str(s["text"])) for s in cfg["sentences"])
        questions = {k: str(v) for k, v in cfg["questions"].items()}
        missing = {*SSEU_TASKS, "sseu-cot"} - set(questions)
        if missing:
            raise ValueError(f"questions lacks {', '.join(sorted(missing))}")
        if not (voices and rates and sentences and grid):
            raise ValueError("snr_grid_db, voices, rates_wpm and sentences must be non-empty")
        if len(level) != 2 or level[0] > level[1]:
            raise ValueError(f"event_level_db must be [low, high], got {cfg['event_level_db']!r}")
        if len({i for i, _ in sentences}) != len(sentences):
            raise ValueError("sentence ids repeat")
        return SseuRecipe(
            snr_grid_db=grid,
            voices=voices,
            rates_wpm=rates,
            pad_s=float(cfg["pad_s"]),
            min_duration_s=float(cfg["min_duration_s"]),
            event_level_db=(level[0], level[1]),
            scenes=scenes,
            sentences=sentences,
            questions=questions,
        )
    except KeyError as exc:
        raise RecipeError(f"{path}: missing field {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise RecipeError(f"{path}: {exc}") from None


@dataclass
class SseuBuild:
    """What :func:`build_sseu` wrote."""

    transcription: list[TranscriptionItem] = field(default_factory=list)
    """Transcription items: per utterance, its clean copy then its mixed clips in grid order."""
    scene: list[SceneItem] = field(default_factory=list)
    """Scene items, one per mixed clip."""
    events: list[EventsItem] = field(default_factory=list)
    """Events items, one per mixed clip."""
    joint: list[JointItem] = field(default_factory=list)
    """Joint items, two per mixed clip: prompting ``joint`` then ``sseu-cot``."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """One ``{"task": "sseu", "index", "uid", "snr_db", "error"}`` per clip that could not be made."""
    snr_grid_db: list[float] = field(default_factory=list)
    """SNRs in dB the mixed clips were asked for."""
    utterances: int = 0
    """Utterances asked for."""

    @property
    def by_kind(self) -> dict[str, list[ReferenceItem]]:
        """The items of each manifest kind (``transcription``, ``scene``, ``events``, ``joint``), in order."""
        return {"transcription": self.transcription, "scene": self.scene, "events": self.events, "joint": self.joint}

    def cache_fields(self) -> dict[str, Any]:
        """What the build cache's key file keeps of this part besides its items and failures (see :meth:`reloaded`)."""
        return {"sseu_snr_grid_db": self.snr_grid_db, "sseu_utterances": self.utterances}

    @classmethod
    def reloaded(cls, items: Mapping[str, list[Any]], stored: Mapping[str, Any]) -> SseuBuild:
        """The part as a cached build holds it: its kinds' manifest items and the key file's fields.

        Args:
            items: The items of each manifest of the cache entry, by kind (a kind without a manifest may be absent).
            stored: The entry's key file (its ``failures`` and the fields of :meth:`cache_fields`).
        """
        return cls(
            transcription=list(items.get("transcription", [])),
            scene=list(items.get("scene", [])),
            events=list(items.get("events", [])),
            joint=list(items.get("joint", [])),
            failures=[f for f in stored.get("failures", []) if f.get("task") == "sseu"],
            snr_grid_db=list(stored.get("sseu_snr_grid_db", [])),
            utterances=int(stored.get("sseu_utterances", 0)),
        )

    @property
    def items(self) -> list[ReferenceItem]:
        """Every item, kind by kind."""
        return [i for items in self.by_kind.values() for i in items]

    def counts(self) -> dict[str, Any]:
        """Items per kind, clips per SNR (``"clean"`` for the clean copies), scenes of the mixed clips, failures."""
        snrs = Counter("clean" if i.snr_db is None else f"{i.snr_db:g}" for i in self.transcription)
        return {
            "utterances": self.utterances,
            "items": {kind: len(items) for kind, items in self.by_kind.items()},
            "clips_by_snr": dict(snrs),
            "scenes": dict(Counter(i.label for i in self.scene)),
            "snr_grid_db": list(self.snr_grid_db),
            "failures": len(self.failures),
            "builder_version": SSEU_BUILDER_VERSION,
        }


def _speech(recipe: SseuRecipe, k: int) -> tuple[np.ndarray, dict[str, Any]]:
    sentence_id, text = recipe.sentences[k % len(recipe.sentences)]
    voice = recipe.voices[k % len(recipe.voices)]
    rate = recipe.rates_wpm[k % len(recipe.rates_wpm)]
    language, _, variant = voice.partition("+")
    speech = speak(text, language, variant, rate=rate)
    pad = int(round(recipe.pad_s * SR))
    short = max(0, int(round(recipe.min_duration_s * SR)) - speech.size - 2 * pad)
    before = pad + short // 2
    after = pad + short - short // 2
    samples = np.concatenate([np.zeros(before, np.float32), speech, np.zeros(after, np.float32)])
    info = {
        "sentence_id": sentence_id,
        "text": text,
        "voice": voice,
        "gender": voice_gender(variant),
        "rate_wpm": rate,
        "speech_onset_s": before / SR,
        "speech_offset_s": (before + speech.size) / SR,
    }
    return samples, info


def build_sseu(
    out: str | Path,
    *,
    seed: int,
    recipes: Recipes,
    utterances: int,
    snr_grid_db: Sequence[float] | None = None,
    kinds: Iterable[str] | None = None,
    progress: bool = False,
) -> SseuBuild:
    """Build the SSEU-style clips and items (see the module docstring); the caller writes the manifests.

    Args:
        out: Data root; audio goes under ``out/audio/sseu/``.
        seed: Build seed (scene order, events, levels).
        recipes: Recipes (``sseu.json``).
        utterances: How many utterances (0: none).
        snr_grid_db: SNRs in dB; None: the recipe's ``snr_grid_db``.
        kinds: Item kinds to make (``transcription``, ``scene``, ``events``, ``joint``); None: all. The audio is
            the same whichever are made.
        progress: Show a tqdm progress bar.

    Returns:
        An :class:`SseuBuild`.

    Raises:
        RecipeError: For a bad ``sseu.json``.
        ValueError: For a negative ``utterances``, a bad grid or an unknown kind.
    """
    from tqdm.auto import tqdm

    if isinstance(utterances, bool) or not isinstance(utterances, int) or utterances < 0:
        raise ValueError(f"sseu_utterances must be a whole number >= 0, got {utterances!r}")
    wanted = set(SSEU_TASKS) if kinds is None else set(kinds)
    if wanted - set(SSEU_TASKS):
        unknown = sorted(wanted - set(SSEU_TASKS))
        raise ValueError(f"unknown SSEU item kind(s) {unknown}; kinds: {', '.join(SSEU_TASKS)}")
    result = SseuBuild(utterances=utterances)
    if utterances == 0 or not wanted:
        return result
    recipe = sseu_recipe(recipes)
    grid = parse_sseu_grid(snr_grid_db) if snr_grid_db is not None else recipe.snr_grid_db
    result.snr_grid_db = list(grid)
    out = Path(out)
    scene_classes = list(SCENES)
    event_classes = list(EVENT_CLASSES)
    q = recipe.questions
    for k in tqdm(range(utterances), desc="SSEU clips", disable=not progress):
        utterance = f"sseu-{k:03d}"
        folder = f"audio/sseu/{utterance}"
        try:
            samples, info = _speech(recipe, k)
            clean_rel = f"{folder}/clean.wav"
            write_wav(out / clean_rel, samples, SR)
            scene_name = str(cycle_value(recipe.scenes, seed, "sseu:scene", k))
            scene = make_scene(scene_name, samples.size / SR, item_rng(seed, "sseu", k), level_db=recipe.event_level_db)
            background_rel, events_rel = f"{folder}/background.wav", f"{folder}/events.wav"
            write_wav(out / background_rel, scene.background, SR)
            write_wav(out / events_rel, scene.events_track, SR)
            speech_clip = Clip.from_file(clean_rel, root=out)
            background_clip = Clip.from_file(background_rel, root=out)
        except Exception as exc:  # noqa: BLE001 - one failed utterance is counted, never fatal
            logger.error("could not make SSEU utterance %s: %s: %s", utterance, type(exc).__name__, exc)
            error = f"{type(exc).__name__}: {exc}"
            result.failures += [
                {"task": "sseu", "index": k, "uid": clip_id(utterance, s), "snr_db": s, "error": error}
                for s in (None, *grid)
            ]
            continue
        base_meta = {"utterance": utterance, **info, "clean": clean_rel}
        common = {"dataset": SSEU_DATASET, "audio_status": AudioStatus.ok}
        if "transcription" in wanted:
            cid = clip_id(utterance, None)
            result.transcription.append(
                TranscriptionItem(
                    uid=f"{cid}-transcription",
                    task=SSEU_TASKS["transcription"],
                    audio=clean_rel,
                    audio_sha256=speech_clip.sha256,
                    question=q["transcription"],
                    reference=info["text"],
                    clip_id=cid,
                    snr_db=None,
                    meta={**base_meta, "mixed": False},
                    notes=["clean speech (reference point): transcription only, it has no scene and no events"],
                    **common,
                )
            )
        labels = scene.labels()
        gold_events = list(dict.fromkeys(e.event for e in scene.events))
        for snr in grid:
            cid = clip_id(utterance, snr)
            try:
                rel = f"{folder}/{snr_tag(snr)}.wav"
                mixed = mix(speech_clip, background_clip, snr_db=snr, offset_s=0.0)
                write_wav(out / rel, mixed.mix, SR)
                digest = sha256_file(out / rel)
                meta = {
                    **base_meta,
                    "mixed": True,
                    "scene": scene.scene,
                    "events": labels,
                    "event_levels_db": list(scene.levels_db),
                    "scene_scale": scene.scale,
                    "background": background_rel,
                    "events_stem": events_rel,
                    "snr_db_measured": mixed.meta.snr_db_measured,
                }
                shared = {
                    **common,
                    "audio": rel,
                    "audio_sha256": digest,
                    "clip_id": cid,
                    "snr_db": float(snr),
                    "mix": mixed.meta,
                    "meta": meta,
                    "notes": [f"{utterance} mixed over a synthesized {scene.scene} scene at {snr:+g} dB SNR"],
                }
                made: dict[str, list[ReferenceItem]] = {kind: [] for kind in SSEU_TASKS}
                made["transcription"].append(
                    TranscriptionItem(
                        uid=f"{cid}-transcription",
                        task=SSEU_TASKS["transcription"],
                        question=q["transcription"],
                        reference=info["text"],
                        **shared,
                    )
                )
                made["scene"].append(
                    SceneItem(
                        uid=f"{cid}-scene",
                        task=SSEU_TASKS["scene"],
                        question=q["scene"],
                        classes=scene_classes,
                        label=scene.scene,
                        **shared,
                    )
                )
                made["events"].append(
                    EventsItem(
                        uid=f"{cid}-events",
                        task=SSEU_TASKS["events"],
                        question=q["events"],
                        classes=event_classes,
                        labels=gold_events,
                        **shared,
                    )
                )
                for prompting, suffix in (("joint", "joint"), ("sseu-cot", "cot")):
                    made["joint"].append(
                        JointItem(
                            uid=f"{cid}-{suffix}",
                            task=SSEU_TASKS["joint"],
                            question=q[prompting],
                            prompting=prompting,
                            reference=info["text"],
                            scene_classes=scene_classes,
                            scene_label=scene.scene,
                            event_classes=event_classes,
                            event_labels=gold_events,
                            **shared,
                        )
                    )
            except Exception as exc:  # noqa: BLE001 - one failed mix is a counted failure of its clip
                logger.error("could not build SSEU clip %s: %s: %s", cid, type(exc).__name__, exc)
                result.failures.append(
                    {"task": "sseu", "index": k, "uid": cid, "snr_db": snr, "error": f"{type(exc).__name__}: {exc}"}
                )
                continue
            for kind in wanted:
                getattr(result, kind).extend(made[kind])
    return result


class SseuPart:
    """SSEU-Bench's clips and items (``transcription.jsonl``, ``scene.jsonl``, ``events.jsonl``, ``joint.jsonl``)."""

    name = "sseu"
    """The part's name."""
    tasks: tuple[str, ...] = tuple(SSEU_TASKS.values())
    """``sseu_transcription``, ``sseu_scene``, ``sseu_events``, ``sseu_joint``."""
    options: tuple[str, ...] = ("sseu_utterances", "sseu_snr_grid_db")
    """Utterances (0 when the preset has none); the SNR grid in dB replacing ``sseu.json``'s."""
    requires: tuple[str, ...] = ()
    """It reads no other part."""
    manifests: tuple[str, ...] = ()
    """Its manifests are written when they have items."""

    def resolve(self, preset: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """``sseu_utterances`` and ``sseu_snr_grid_db``: given, else the preset's (0 and None when it has none).

        Raises:
            ValueError: For utterances that are not a whole number >= 0.
        """
        n = given.get("sseu_utterances", preset.get("sseu_utterances", 0))
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"sseu_utterances must be a whole number >= 0, got {n!r}")
        return {"sseu_utterances": n, "sseu_snr_grid_db": given.get("sseu_snr_grid_db", preset.get("sseu_snr_grid_db"))}

    def build(self, context: BuildContext) -> PartResult:
        """The clips and the items of the kinds whose task is asked for (:func:`build_sseu`)."""
        sseu = build_sseu(
            context.out,
            seed=context.seed,
            recipes=context.recipes,
            utterances=context.options["sseu_utterances"],
            snr_grid_db=context.options["sseu_snr_grid_db"],
            kinds=[kind for kind, task in SSEU_TASKS.items() if task in context.tasks],
            progress=context.progress,
        )
        return PartResult(
            items={kind: list(items) for kind, items in sseu.by_kind.items()},
            failures=sseu.failures,
            card={"sseu_utterances": context.options["sseu_utterances"]},
            report={"sseu": sseu},
        )
