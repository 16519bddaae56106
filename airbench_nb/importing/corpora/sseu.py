"""``airbench-nb import sseu``: SSEU-Bench's clips made from its real source corpora (VCTK, DESED, MAESTRO-Real).

SSEU-Bench (Yin & Choi, ICASSP 2026) mixes VCTK speech over DESED and MAESTRO-Real backgrounds at 7 SNRs, all at
44.1 kHz mono. This recipe makes the same items as the kit's synthetic build (:mod:`airbench_nb.builders.sseu`: the
same kinds, tasks, questions, clip ids, ``snr_db`` and ``mix``) from the corpora as released
(:mod:`~airbench_nb.importing.corpora.sseu_sources` reads them):

Utterances
    The usable VCTK utterances (text and audio) sorted by id; ``utterances`` of them (0: all) drawn by a seeded
    permutation (option ``seed``), then taken in id order. Each is downmixed, resampled to 44.1 kHz and padded with
    ``margin_s`` of silence at both ends (the synthetic build's ``pad_s``): the clean file ``<utt>/clean.wav``, also
    a transcription item of its own (clip id ``<utt>@clean``, ``snr_db`` None, no ``mix``).

Background
    One segment per utterance, as long as its clean file and shared by all its SNRs. Its scene is drawn by cycling a
    seeded order of the scenes that have recordings (the cycle moves on with each utterance given a background, so
    that scenes are balanced, as in the synthetic build), its recording
    uniformly among that scene's recordings long enough (any scene's when none is), its start uniformly inside the
    recording; an utterance longer than every recording is rejected (field ``background``). The segment is read,
    downmixed, resampled to 44.1 kHz and written as ``<utt>/background.wav``. Its scene: the MAESTRO folder
    (``cafe_restaurant`` is the class ``cafe restaurant``: underscores become spaces) or ``desed_scene`` for DESED
    (``home``). Its events: the DESED strong labels, or the MAESTRO soft labels with a confidence at or above
    ``confidence``, that overlap the segment (cut to it, on the clip's timeline, in ``meta["events"]``); labels are
    mapped by :data:`LABEL_MAP` (plus the option ``label_map``) onto ``event_classes``, and a recording holding a
    label outside them is rejected, never guessed.

Mixed clips
    At each SNR of ``snr_grid_db`` (the synthetic build's grid; ``snrs_per_utterance`` draws that many per
    utterance instead), :func:`airbench_nb.mix.mix` mixes the clean file over the background file in SNR mode, speech
    against the whole background. Clip id ``<utt>@snr<snr:+g>``, audio ``<utt>/snr_<p|m><|snr|>.wav``; five items
    per clip (``transcription``, ``scene``, ``events``, ``joint`` and ``cot``), as the synthetic build makes.

Resume
    ``import-sseu.jsonl`` records what each audio file was made from (the VCTK file and margin; the recording, its
    start and length; the two sources' SHA-256 and the SNR, with the mix's metadata). Re-running into the folder
    reuses a file (:meth:`~airbench_nb.importing.writer.ImportWriter.existing`) only when it was made from the same,
    so neither decoding nor mixing is done again; other options or sources write it anew.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from airbench_nb.builders.core import cycle_value, item_rng, load_recipes
from airbench_nb.builders.sseu import SSEU_TASKS, clip_id, parse_sseu_grid, sseu_recipe
from airbench_nb.importing.corpora.sseu_sources import (
    MICS,
    Background,
    Utterance,
    read_desed,
    read_maestro,
    read_vctk,
    scenes_of,
)
from airbench_nb.importing.mapping import resample
from airbench_nb.importing.recipe import ImportContext, Recipe, RecipeOption, SourceSlot, register_recipe
from airbench_nb.importing.writer import ImportWriter, WrittenAudio
from airbench_nb.mix import Clip, mix
from airbench_nb.records import MixMeta

logger = logging.getLogger(__name__)

SSEU_RATE = 44100
"""SSEU-Bench's sample rate: every source is converted to it (mono)."""
DATASET_NAME = "sseu-bench"
"""The items' ``dataset``."""
JOURNAL = "import-sseu.jsonl"
"""What each audio file of the import was made from (module docstring, Resume)."""
SNR_GRID_DB: tuple[float, ...] = (-10.0, -6.67, -3.33, 0.0, 3.33, 6.67, 10.0)
"""The synthetic build's grid (``data_manifests/mini/sseu.json``), SSEU-Bench's 7 steps from -10 to 10 dB."""
MARGIN_S = 0.2
"""Silence before and after the speech: the synthetic build's ``pad_s``."""
DESED_LABELS: dict[str, str] = {
    "Alarm_bell_ringing": "alarm bell ringing",
    "Blender": "blender",
    "Cat": "cat",
    "Dishes": "dishes",
    "Dog": "dog",
    "Electric_shaver_toothbrush": "electric shaver toothbrush",
    "Frying": "frying",
    "Running_water": "running water",
    "Speech": "speech",
    "Vacuum_cleaner": "vacuum cleaner",
}
"""DESED's 10 classes as released, and their event class."""
MAESTRO_LABELS: dict[str, str] = {
    "birds_singing": "birds singing",
    "car": "car",
    "people talking": "people talking",
    "footsteps": "footsteps",
    "children voices": "children voices",
    "wind_blowing": "wind blowing",
    "brakes_squeaking": "brakes squeaking",
    "large_vehicle": "large vehicle",
    "cutlery and dishes": "cutlery and dishes",
    "furniture dragging": "furniture dragging",
    "coffee machine": "coffee machine",
    "metro approaching": "metro approaching",
    "metro leaving": "metro leaving",
    "door opens/closes": "door opens/closes",
    "announcement": "announcement",
    "shopping cart": "shopping cart",
    "cash register beeping": "cash register beeping",
}
"""MAESTRO-Real's 17 soft-label classes as released (some with underscores, some with spaces), and their class."""
LABEL_MAP: dict[str, str] = {**DESED_LABELS, **MAESTRO_LABELS}
"""Released label to event class: underscores become spaces and DESED's capitals go (the option ``label_map`` adds
or replaces entries); a label neither here nor among ``event_classes`` is a rejection."""
EVENT_CLASSES: tuple[str, ...] = tuple(dict.fromkeys(LABEL_MAP.values()))
"""Default event classes: DESED's 10 and MAESTRO-Real's 17, as :data:`LABEL_MAP` names them."""
MAESTRO_SCENES: tuple[str, ...] = (
    "cafe_restaurant",
    "city_center",
    "grocery_store",
    "metro_station",
    "residential_area",
)
"""MAESTRO-Real's scene folders."""
DESED_SCENE = "home"
"""The scene of DESED's domestic recordings."""
SCENE_CLASSES: tuple[str, ...] = (*(s.replace("_", " ") for s in MAESTRO_SCENES), DESED_SCENE)
"""Default scene classes: MAESTRO-Real's 5 folders (underscores as spaces) and ``home``."""
GUARD_FRAMES = 2
"""Source samples read beyond a segment's end, so that resampling never leaves it a sample short."""


class SseuImportError(ValueError):
    """An utterance or clip the import cannot make: the file, the field and why."""

    def __init__(self, where: str, field_name: str, reason: str) -> None:
        super().__init__(reason)
        self.where = where
        self.field_name = field_name
        self.reason = reason


@dataclass(frozen=True)
class Settings:
    """The recipe's options, checked."""

    seed: int
    """Seed of every draw."""
    utterances: int
    """Utterances to import (0: all)."""
    grid: tuple[float, ...]
    """SNRs in dB."""
    per_utterance: int
    """SNRs of the grid each utterance is mixed at (the whole grid when 0 or more than its size)."""
    margin_s: float
    """Silence before and after the speech (s)."""
    mic: str
    """The VCTK microphone used when there."""
    threshold: float
    """Lowest MAESTRO confidence that makes a soft label an event."""
    scene_classes: tuple[str, ...]
    """The scene classes."""
    event_classes: tuple[str, ...]
    """The event classes."""
    label_map: dict[str, str]
    """Released label to event class."""
    desed_scene: str
    """The scene of DESED recordings."""

    def label_of(self, label: str) -> str | None:
        """The class of a released label (mapped, else itself), or None when it is not among the classes."""
        mapped = self.label_map.get(label, label)
        return mapped if mapped in self.event_classes else None

    def scene_of(self, folder: str) -> str | None:
        """The scene class of a MAESTRO folder, or None when it is not among the classes."""
        scene = folder.replace("_", " ")
        return scene if scene in self.scene_classes else None


def settings_of(options: dict[str, Any]) -> Settings:
    """The checked settings of a recipe's options.

    Raises:
        ValueError: Naming the option that is wrong.
    """
    grid = parse_sseu_grid(options["snr_grid_db"])
    if not grid:
        raise ValueError("option snr_grid_db: give at least one SNR")
    for name in ("utterances", "snrs_per_utterance"):
        if options[name] < 0:
            raise ValueError(f"option {name}: {options[name]} is below 0")
    margin = float(options["margin_s"])
    if not 0.0 <= margin <= 10.0:
        raise ValueError(f"option margin_s: {margin} is not within [0, 10] s")
    threshold = float(options["confidence"])
    if not 0.0 < threshold or not math.isfinite(threshold):
        raise ValueError(f"option confidence: {threshold} is not a confidence above 0")
    label_map = dict(LABEL_MAP)
    for entry in options["label_map"]:
        label, sep, target = entry.partition("=")
        if not sep or not label.strip() or not target.strip():
            raise ValueError(f"option label_map: {entry!r} is not LABEL=CLASS")
        label_map[label.strip()] = target.strip()
    if options["mic"] not in MICS:
        raise ValueError(f"option mic: {options['mic']!r} is not one of {', '.join(MICS)}")
    scenes, events = tuple(options["scene_classes"]), tuple(options["event_classes"])
    for name, classes in (("scene_classes", scenes), ("event_classes", events)):
        if len(classes) < 2 or len(set(classes)) != len(classes):
            raise ValueError(f"option {name}: give at least two distinct classes, got {list(classes)!r}")
    return Settings(
        seed=int(options["seed"]),
        utterances=int(options["utterances"]),
        grid=grid,
        per_utterance=int(options["snrs_per_utterance"]),
        margin_s=margin,
        mic=str(options["mic"]),
        threshold=threshold,
        scene_classes=scenes,
        event_classes=events,
        label_map=label_map,
        desed_scene=str(options["desed_scene"]),
    )


def snr_file_tag(snr_db: float) -> str:
    """The SNR part of a mixed file's name: ``snr_m6.67``, ``snr_p0``, ``snr_p10`` (file-name safe)."""
    return f"snr_{'m' if snr_db < 0 else 'p'}{abs(snr_db):g}"


class _Journal:
    """``import-sseu.jsonl``: the key each audio file was made from, and a mix's metadata (module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").split("\n"):  # JSON Lines end at "\n" only
                try:
                    entry = json.loads(line)
                    self.entries[str(entry["name"])] = entry
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a crash: that file is made again
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def reuse(self, writer: ImportWriter, name: str, key: str) -> tuple[WrittenAudio, dict[str, Any]] | None:
        """The audio ``name`` and its entry, when made from ``key`` and still there unchanged; else None."""
        entry = self.entries.get(name)
        if entry is None or entry.get("key") != key:
            return None
        written = writer.existing(name)
        return None if written is None else (written, entry)

    def record(self, name: str, key: str, mix_meta: MixMeta | None = None) -> None:
        """Journal the audio ``name`` made from ``key`` (with its mix's metadata)."""
        entry: dict[str, Any] = {"name": name, "key": key}
        if mix_meta is not None:
            entry["mix"] = mix_meta.model_dump(mode="json")
        self.entries[name] = entry
        self._handle.write(json.dumps(entry) + "\n")
        self._handle.flush()

    def close(self) -> None:
        """Close the journal."""
        self._handle.close()


def _clean_speech(utt: Utterance, margin_s: float) -> np.ndarray:
    import soundfile as sf

    try:
        data, rate = sf.read(utt.audio, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        raise SseuImportError(utt.audio_rel, "audio", f"cannot be decoded: {exc}") from None
    speech = data.mean(axis=1)
    if speech.size == 0 or not np.all(np.isfinite(speech)) or not np.any(speech):
        raise SseuImportError(utt.audio_rel, "audio", "empty, silent, or holding NaN or infinite samples")
    speech, _ = resample(np.ascontiguousarray(speech), int(rate), SSEU_RATE)
    pad = np.zeros(int(round(margin_s * SSEU_RATE)), dtype=np.float32)
    return np.concatenate([pad, speech, pad])


def _needed(bg: Background, samples: int) -> int:
    """Source samples to read for ``samples`` at 44.1 kHz."""
    return math.ceil(samples * bg.rate / SSEU_RATE) + GUARD_FRAMES


class SseuRecipe(Recipe):
    """SSEU-Bench from VCTK, DESED and MAESTRO-Real (module docstring)."""

    name: ClassVar[str] = "sseu"
    title: ClassVar[str] = "SSEU-Bench: VCTK 0.92 speech over DESED and MAESTRO-Real backgrounds at 7 SNRs"
    version: ClassVar[int] = 1
    kinds: ClassVar[tuple[str, ...]] = tuple(SSEU_TASKS)
    slots: ClassVar[tuple[SourceSlot, ...]] = (
        SourceSlot("vctk", "VCTK 0.92's folder, holding txt/ and wav48_silence_trimmed/"),
        SourceSlot("desed", "DESED's folder, holding metadata/ (strong-label .tsv) and audio/", required=False),
        SourceSlot(
            "maestro", "MAESTRO-Real's folder, holding development_audio/ and development_annotation/", required=False
        ),
    )
    options: ClassVar[tuple[RecipeOption, ...]] = (
        RecipeOption("seed", 0, "seed of every draw (utterances, backgrounds, segments, SNRs)"),
        RecipeOption("utterances", 1000, "VCTK utterances to import, drawn by the seed (0: all of them)"),
        RecipeOption("snr_grid_db", list(SNR_GRID_DB), "SNRs in dB of speech over the whole background"),
        RecipeOption("snrs_per_utterance", 0, "SNRs of the grid drawn per utterance (0: every SNR)"),
        RecipeOption("margin_s", MARGIN_S, "silence before and after the speech, background included (s)"),
        RecipeOption("mic", "mic1", "VCTK microphone (mic1 or mic2; the other where a file is missing)"),
        RecipeOption("confidence", 0.5, "lowest MAESTRO soft-label confidence that makes an event"),
        RecipeOption("scene_classes", list(SCENE_CLASSES), "scene classes (MAESTRO folders, underscores as spaces)"),
        RecipeOption("event_classes", list(EVENT_CLASSES), "event classes (released labels after label_map)"),
        RecipeOption("label_map", [], "extra LABEL=CLASS entries over the built-in map of released labels"),
        RecipeOption("desed_scene", DESED_SCENE, "the scene class of DESED's recordings"),
    )
    about: ClassVar[str] = (
        "VCTK 0.92 (Edinburgh DataShare), DESED (github.com/turpaultn/DESED, Zenodo) and MAESTRO-Real (Zenodo "
        "7244360); docs/data.md"
    )

    def run(self, ctx: ImportContext) -> None:
        """Read the three corpora, draw, mix and write (module docstring).

        Raises:
            ValueError: For bad options, no background source, or no usable background recording.
        """
        settings = settings_of(ctx.options)
        desed, maestro = ctx.sources.get("desed", []), ctx.sources.get("maestro", [])
        if not desed and not maestro:
            raise ValueError("recipe 'sseu' needs a background source: --desed DIR and/or --maestro DIR")
        if desed and settings.desed_scene not in settings.scene_classes:
            raise ValueError(f"option desed_scene: {settings.desed_scene!r} is not among scene_classes")
        writer = ctx.writer
        backgrounds: list[Background] = []
        if desed:
            backgrounds += read_desed(desed[0], settings.desed_scene, settings.label_of, writer.reject)
        if maestro:
            backgrounds += read_maestro(
                maestro[0], settings.scene_of, settings.label_of, settings.threshold, writer.reject
            )
        if not backgrounds:
            first = "; ".join(f"{r.where}: {r.field}: {r.reason}" for r in writer.result.rejected[:3])
            raise ValueError(f"sseu: no usable background recording ({first or 'none found'})")
        utterances = read_vctk(ctx.source("vctk"), settings.mic, writer.reject, writer.count_row)
        if settings.utterances and settings.utterances < len(utterances):
            order = np.random.default_rng([settings.seed, 0x55E0]).permutation(len(utterances))
            utterances = [utterances[i] for i in sorted(order[: settings.utterances])]
        questions = sseu_recipe(load_recipes()).questions
        journal = _Journal(writer.out / JOURNAL)
        by_scene = scenes_of(backgrounds)
        logger.info(
            "sseu: %d utterances over %d recordings (%s)",
            len(utterances),
            len(backgrounds),
            ", ".join(f"{scene} {len(bgs)}" for scene, bgs in by_scene.items()),
        )
        placed = 0  # utterances given a background so far: the scene cycle's index
        try:
            for k, utt in enumerate(utterances):
                if ctx.limit is not None and k >= ctx.limit:
                    break
                writer.count_row()
                one = _Utterance(writer, journal, settings, questions, utt)
                try:
                    one.make(placed, by_scene)
                except SseuImportError as exc:
                    writer.reject(exc.where, exc.field_name, exc.reason, uid=utt.uid)
                placed += int(one.drawn)
        finally:
            journal.close()


class _Utterance:
    """One utterance's clean file, background segment, mixes and items."""

    def __init__(
        self, writer: ImportWriter, journal: _Journal, settings: Settings, questions: dict[str, str], utt: Utterance
    ) -> None:
        self.writer, self.journal, self.settings, self.q, self.utt = writer, journal, settings, questions, utt
        self.drawn = False
        """Whether a background was drawn for it."""

    def _audio(self, name: str, key: str, make: Callable[[], np.ndarray]) -> WrittenAudio:
        found = self.journal.reuse(self.writer, name, key)
        if found is not None:
            return found[0]
        written = self.writer.write_audio(name, make(), SSEU_RATE)
        self.journal.record(name, key)
        return written

    def _draw(self, k: int, samples: int, by_scene: dict[str, list[Background]]) -> tuple[Background, int]:
        s = self.settings
        rng = item_rng(s.seed, f"sseu-import:{self.utt.uid}", 0)
        preferred = str(cycle_value(sorted(by_scene), s.seed, "sseu-import:scene", k))
        fits = [bg for bg in by_scene[preferred] if _needed(bg, samples) <= bg.frames]
        if not fits:
            fits = [bg for bgs in by_scene.values() for bg in bgs if _needed(bg, samples) <= bg.frames]
        if not fits:
            longest = max(bg.seconds for bgs in by_scene.values() for bg in bgs)
            raise SseuImportError(
                self.utt.audio_rel,
                "background",
                f"no background recording is as long as the utterance with its margins ({samples / SSEU_RATE:.2f} s;"
                f" the longest is {longest:.2f} s)",
            )
        bg = fits[int(rng.integers(len(fits)))]
        start = int(rng.integers(0, bg.frames - _needed(bg, samples) + 1))
        self.drawn = True
        return bg, start

    def _snrs(self) -> list[float]:
        s = self.settings
        if not s.per_utterance or s.per_utterance >= len(s.grid):
            return list(s.grid)
        rng = item_rng(s.seed, f"sseu-import:snr:{self.utt.uid}", 0)
        return [s.grid[i] for i in sorted(rng.choice(len(s.grid), s.per_utterance, replace=False))]

    def make(self, k: int, by_scene: dict[str, list[Background]]) -> None:
        """Write the utterance's audio and items (``k``: how many utterances were given a background before it)."""
        utt, s, writer = self.utt, self.settings, self.writer
        clean_name, clean_key = f"{utt.uid}/clean", f"{utt.audio_rel}|{s.margin_s!r}"
        found = self.journal.reuse(writer, clean_name, clean_key)
        speech = None if found is not None else _clean_speech(utt, s.margin_s)
        samples = round(found[0].seconds * found[0].rate) if found is not None else len(speech)
        bg, start = self._draw(k, samples, by_scene)  # before writing: an utterance no background fits leaves nothing
        if found is not None:
            clean = found[0]
        else:
            clean = writer.write_audio(clean_name, speech, SSEU_RATE)
            self.journal.record(clean_name, clean_key)

        def segment() -> np.ndarray:
            try:
                raw = bg.read(start, _needed(bg, samples))
            except ValueError as exc:
                raise SseuImportError(bg.rel, "audio", str(exc)) from None
            out, _ = resample(raw, bg.rate, SSEU_RATE)
            if out.size < samples or not np.any(out[:samples]):
                raise SseuImportError(bg.rel, "audio", f"segment from sample {start} is short or silent")
            return out[:samples]

        background = self._audio(f"{utt.uid}/background", f"{bg.corpus}:{bg.rel}|{start}|{samples}", segment)
        start_s = start / bg.rate
        events = bg.events_in(start_s, start_s + samples / SSEU_RATE)
        gold = list(dict.fromkeys(e["event"] for e in events))
        base = {"utterance": utt.uid, "speaker": utt.speaker, "text": utt.text, "vctk": utt.audio_rel, "mic": utt.mic}
        base["clean"] = clean.path
        common = {"dataset": DATASET_NAME, "source_id": utt.uid}
        cid = clip_id(utt.uid, None)
        writer.add(
            {
                "kind": "transcription",
                "uid": f"{cid}-transcription",
                "task": SSEU_TASKS["transcription"],
                "question": self.q["transcription"],
                "reference": utt.text,
                "clip_id": cid,
                "snr_db": None,
                "meta": {**base, "mixed": False},
                "notes": ["clean speech (reference point): transcription only, it has no scene and no events"],
                **common,
            },
            clean,
            where=utt.audio_rel,
        )
        clips: list[Clip] = []
        for snr in self._snrs():
            cid = clip_id(utt.uid, snr)
            name, key = f"{utt.uid}/{snr_file_tag(snr)}", f"{clean.sha256}|{background.sha256}|{snr!r}"
            found = self.journal.reuse(writer, name, key)
            if found is not None and "mix" in found[1]:
                written, meta = found[0], MixMeta.model_validate(found[1]["mix"])
            else:
                if not clips:
                    clips = [Clip.from_file(w.path, root=writer.out, sr=SSEU_RATE) for w in (clean, background)]
                try:
                    mixed = mix(clips[0], clips[1], sr=SSEU_RATE, snr_db=snr, offset_s=0.0)
                except ValueError as exc:
                    writer.reject(f"{utt.audio_rel} over {bg.rel}", "mix", f"{cid}: {exc}", uid=cid)
                    continue
                written, meta = writer.write_audio(name, mixed.mix, SSEU_RATE), mixed.meta
                self.journal.record(name, key, meta)
            scene_meta = {
                **base,
                "mixed": True,
                "scene": bg.scene,
                "events": events,
                "background": background.path,
                "background_source": {
                    "corpus": bg.corpus,
                    "file": bg.rel,
                    "labels": bg.labels,
                    "start_s": round(start_s, 6),
                    "end_s": round(start_s + samples / SSEU_RATE, 6),
                    "rate": bg.rate,
                },
                "snr_db_measured": meta.snr_db_measured,
            }
            shared = {
                **common,
                "clip_id": cid,
                "snr_db": float(snr),
                "mix": meta.model_dump(mode="json"),
                "meta": scene_meta,
                "notes": [
                    f"{utt.uid} (VCTK) over {bg.corpus} {bg.rel} ({start_s:.2f} s on, {bg.scene}) at {snr:+g} dB SNR"
                ],
            }
            scenes, classes = list(s.scene_classes), list(s.event_classes)
            made: list[dict[str, Any]] = [
                {"kind": "transcription", "uid": f"{cid}-transcription", "reference": utt.text},
                {"kind": "scene", "uid": f"{cid}-scene", "classes": scenes, "label": bg.scene},
                {"kind": "events", "uid": f"{cid}-events", "classes": classes, "labels": gold},
            ]
            for prompting, suffix in (("joint", "joint"), ("sseu-cot", "cot")):
                made.append(
                    {
                        "kind": "joint",
                        "uid": f"{cid}-{suffix}",
                        "prompting": prompting,
                        "reference": utt.text,
                        "scene_classes": scenes,
                        "scene_label": bg.scene,
                        "event_classes": classes,
                        "event_labels": gold,
                        "question": self.q[prompting],
                    }
                )
            for fields in made:
                kind = fields["kind"]
                fields.setdefault("question", self.q[kind])
                writer.add({**shared, **fields, "task": SSEU_TASKS[kind]}, written, where=f"{utt.audio_rel} ({cid})")


register_recipe(SseuRecipe())

__all__ = [
    "EVENT_CLASSES",
    "LABEL_MAP",
    "SCENE_CLASSES",
    "SNR_GRID_DB",
    "SSEU_RATE",
    "SseuRecipe",
    "settings_of",
    "snr_file_tag",
]
