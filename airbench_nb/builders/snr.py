"""SNR-graded Foundation items (SSEU-Bench style): built speech items again, mixed over a background at a grid of SNRs.

For each speech task of the recipe (``snr.json``: tasks whose answer survives an additive background — gender,
language, number of speakers, intent, entity, word intervals), the first ``N`` built items are mixed with a
background at every SNR of the grid by :func:`airbench_nb.mix.mix` (SNR mode). The rules, which the tests check by
measuring the audio:

Background
    One background per clean item, shared by all its SNRs (so that a curve over the grid varies only the SNR).
    Half of a task's graded items get ``noise`` (coloured noise from :mod:`airbench_nb.synth.noise`) and half
    ``music`` (a melody of random scale notes from :mod:`airbench_nb.synth.music`): the kinds alternate along a
    seeded random order of the items, from a seeded first kind (:func:`background_kinds`). Alternating in item
    order would tie the kind to the class, since the builder cycles classes in item order too (every female
    voice over music, every male one over noise). The background is exactly as long as the clean clip and starts
    with it, so it covers the whole clip (leading and trailing silences and pauses between turns included). It is
    written as a file of its own, ``audio/foundation/<task>/snr/<clean uid>.background.wav``, so that ``MixMeta``
    names and hashes both sources and :func:`airbench_nb.mix.remix` can redo every mix.

SNR
    The mixer's definition: ``10 log10(sum(a**2) / sum(b**2))`` over the overlap (here the whole clip) of the
    speech and background components as placed and scaled in the mix. Source A is the clean item's audio file
    itself, so the speech in the mixture is the clean clip times one gain.

Graded item
    Same task, dataset, question, choices and answer as its clean item; uid ``f"{clean_uid}@snr{snr:+03.0f}"``
    (``Speaker_Gender_Recognition-003@snr-05``); audio ``audio/foundation/<task>/snr/<uid>.wav``; ``meta`` is the
    clean item's meta plus ``snr_db`` (requested), ``snr_db_measured``, ``clean_uid``, ``background``
    (``noise`` or ``music``), ``background_detail`` (colour, or instrument, tempo and notes) and ``mix`` (the
    :class:`~airbench_nb.records.MixMeta` as a dict). A mix that fails is a counted failure of that graded item.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from airbench_nb.audio import sha256_file, write_wav
from airbench_nb.builders.core import SR, RecipeError, Recipes, _pick, item_rng
from airbench_nb.builders.parts import BuildContext, PartResult
from airbench_nb.mix import Clip, mix
from airbench_nb.records import FOUNDATION_TASKS, AudioStatus, FoundationItem

logger = logging.getLogger(__name__)

BACKGROUND_KINDS = ("noise", "music")
"""Kinds of background a graded item can have."""
GRADED_META_KEYS = ("snr_db", "snr_db_measured", "clean_uid", "background", "background_detail", "mix")
"""Keys a graded item adds to its clean item's meta (a clean meta holding one of them cannot be graded)."""
FADE_S = 0.01
"""Raised-cosine fade at both ends of a background (seconds), so that the mix starts and ends without a click."""


def parse_snr_grid(values: str | Iterable[float | int | str] | None) -> list[float]:
    """Check an SNR grid and return it as floats, in the order given.

    Args:
        values: SNRs in dB: a sequence of numbers, or a comma-separated string (``"-10,-5,0,5,10"``; ``""`` or
            ``"none"`` for no grid). None gives an empty grid.

    Returns:
        The SNRs as floats.

    Raises:
        ValueError: For a value that is not a finite number, or two values that give the same uid label
            (``{snr:+03.0f}``, e.g. 2.4 and 2.0).
    """
    if values is None:
        return []
    if isinstance(values, str):
        text = values.strip()
        values = [] if text.lower() in ("", "none") else text.split(",")
    grid = []
    for value in values:
        try:
            snr = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"SNR grid value {value!r} is not a number (give dB values, e.g. -10,-5,0,5,10)") from None
        if not math.isfinite(snr):
            raise ValueError(f"SNR grid value {value!r} is not a finite number of dB")
        grid.append(snr)
    labels: dict[str, float] = {}
    for snr in grid:
        label = snr_label(snr)
        if label in labels:
            raise ValueError(
                f"SNR grid values {labels[label]:g} and {snr:g} dB both give the uid label 'snr{label}'; "
                "give distinct whole numbers of dB"
            )
        labels[label] = snr
    return grid


def snr_label(snr_db: float) -> str:
    """The SNR part of a graded uid: sign and at least two digits (``-05``, ``+10``, ``+00``)."""
    return f"{snr_db:+03.0f}"


def graded_uid(clean_uid: str, snr_db: float) -> str:
    """Uid of the graded copy of ``clean_uid`` at ``snr_db`` (``Speaker_Gender_Recognition-003@snr-05``)."""
    return f"{clean_uid}@snr{snr_label(snr_db)}"


def snr_tasks(recipes: Recipes) -> list[str]:
    """Tasks of ``snr.json`` that get graded items, checked.

    Raises:
        RecipeError: If the list is missing or names a task that is not an official speech Foundation task.
    """
    path = recipes.folder / "snr.json"
    tasks = recipes.snr.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise RecipeError(f"{path}: 'tasks' must be a non-empty list of speech Foundation task names")
    for task in tasks:
        if FOUNDATION_TASKS.get(task) != "speech":
            raise RecipeError(f"{path}: task {task!r} is not a speech Foundation task; only speech can be graded")
    return list(tasks)


def background_kinds(n_items: int, seed: int, task: str) -> list[str]:
    """Background kind of each of a task's ``n_items`` graded clean items, in item order.

    The kinds alternate along a seeded permutation of the items (so each kind goes to half of them, within one),
    starting from a seeded kind (so that a single item per task is not always ``noise``). The assignment depends
    on ``n_items``: grading more items of a task may give an item the other kind.
    """
    rng = item_rng(seed, f"{task}@snr-kinds", n_items)
    first = int(rng.integers(len(BACKGROUND_KINDS)))
    kinds = [""] * n_items
    for position, item in enumerate(rng.permutation(n_items)):
        kinds[int(item)] = BACKGROUND_KINDS[(first + position) % len(BACKGROUND_KINDS)]
    return kinds


def _fade(samples: np.ndarray) -> np.ndarray:
    n = min(int(round(FADE_S * SR)), samples.size // 2)
    if n > 0:
        ramp = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, n))
        samples[:n] *= ramp
        samples[-n:] *= ramp[::-1]
    return samples


def make_background(
    kind: str, n_samples: int, rng: np.random.Generator, recipes: Recipes
) -> tuple[np.ndarray, dict[str, Any]]:
    """A background of ``n_samples`` samples: coloured noise, or a melody of random notes of a major scale.

    Args:
        kind: ``noise`` or ``music``.
        n_samples: Length in samples (the clean clip's).
        rng: The clean item's background generator.
        recipes: Recipes (``snr.json``: noise colours; music instruments, tempos and note range).

    Returns:
        ``(samples, detail)``: float32 samples with faded ends, and what was made (``colour``, or
        ``instrument``, ``tempo_bpm`` and ``midis``).

    Raises:
        ValueError: For an unknown kind or a clip too short to hold a note.
    """
    from airbench_nb.synth.music import SCALE_STEPS, melody
    from airbench_nb.synth.noise import coloured_noise

    cfg = recipes.snr
    if kind == "noise":
        colour = str(_pick(rng, cfg["noise_colours"]))
        return _fade(coloured_noise(colour, n_samples, rng, rms=0.1, sr=SR)), {"colour": colour}
    if kind != "music":
        raise ValueError(f"unknown background kind {kind!r}; choose one of {', '.join(BACKGROUND_KINDS)}")
    music = cfg["music"]
    instrument = str(_pick(rng, music["instruments"]))
    tempo = float(_pick(rng, music["tempos_bpm"]))
    low, high = (int(v) for v in music["midi_range"])
    tonic = int(rng.integers(low, low + 12))
    steps = np.cumsum((0, *SCALE_STEPS["major"] * 4))
    scale = [int(tonic + s) for s in steps if tonic + s <= high]
    note_s = 60.0 / tempo
    n_notes = int(math.ceil(n_samples / (note_s * SR))) + 1
    midis = [int(scale[int(rng.integers(len(scale)))]) for _ in range(n_notes)]
    samples, _ = melody(midis, tempo_bpm=tempo, instrument=instrument, velocity=100, rng=rng)
    if samples.size < n_samples:
        raise ValueError(f"melody of {samples.size} samples is shorter than the clip ({n_samples})")
    return _fade(samples[:n_samples].copy()), {"instrument": instrument, "tempo_bpm": tempo, "midis": midis}


def _graded_item(
    clean: FoundationItem, out: Path, snr_db: float, speech: Clip, background: Clip, kind: str, detail: dict[str, Any]
) -> FoundationItem:
    clash = sorted(set(GRADED_META_KEYS) & set(clean.meta))
    if clash:
        raise ValueError(f"clean item meta already holds {', '.join(clash)}: a graded copy would overwrite it")
    uid = graded_uid(clean.uid, snr_db)
    rel = f"audio/foundation/{clean.task}/snr/{uid}.wav"
    result = mix(speech, background, snr_db=snr_db, offset_s=0.0)
    write_wav(out / rel, result.mix, SR)
    meta = {
        **clean.meta,
        "snr_db": float(snr_db),
        "snr_db_measured": result.meta.snr_db_measured,
        "clean_uid": clean.uid,
        "background": kind,
        "background_detail": detail,
        "mix": result.meta.model_dump(mode="json"),
    }
    return FoundationItem(
        uid=uid,
        task=clean.task,
        dataset=clean.dataset,
        audio=rel,
        question=clean.question,
        choices=list(clean.choices),
        answer=clean.answer,
        meta=meta,
        audio_status=AudioStatus.ok,
        audio_sha256=sha256_file(out / rel),
        notes=[*clean.notes, f"{clean.uid} mixed over {kind} at {snr_db:+g} dB SNR"],
    )


def build_graded(
    clean_items: Sequence[FoundationItem],
    out: str | Path,
    *,
    seed: int,
    recipes: Recipes,
    snr_grid: Sequence[float],
    items_per_task: int | None = None,
    progress: bool = False,
) -> tuple[list[FoundationItem], list[dict[str, Any]]]:
    """Make the SNR-graded copies of built items (see the module docstring).

    Args:
        clean_items: The built Foundation items, in build order; those of :func:`snr_tasks` are graded.
        out: The data root the items' audio is relative to (graded audio is written under it).
        seed: Build seed (background kinds and backgrounds are seeded by it and the clean uid).
        recipes: Recipes (``snr.json``).
        snr_grid: SNRs in dB (checked by :func:`parse_snr_grid`).
        items_per_task: Grade the first N built items of each task; None grades all.
        progress: Show a tqdm progress bar.

    Returns:
        ``(graded, failures)``: the graded items, task by task, each clean item's SNRs in grid order; and one
        ``{"task", "index", "uid", "snr_db", "error"}`` per graded item that could not be made (``index`` is the
        clean item's rank in its task; a background that cannot be made fails all the SNRs of its clean item).

    Raises:
        RecipeError: For a bad ``snr.json``.
        ValueError: For a bad grid or a negative ``items_per_task``.
    """
    from tqdm.auto import tqdm

    grid = parse_snr_grid(snr_grid)
    if items_per_task is not None and items_per_task < 0:
        raise ValueError(f"snr_items_per_task must be >= 0 or None (all items), got {items_per_task}")
    if not grid or items_per_task == 0:
        return [], []
    out = Path(out)
    tasks = snr_tasks(recipes)
    chosen: list[tuple[int, FoundationItem, str]] = []
    for task in tasks:
        of_task = [i for i in clean_items if i.task == task]
        of_task = of_task[:items_per_task] if items_per_task is not None else of_task
        kinds = background_kinds(len(of_task), seed, task)
        chosen += [(rank, item, kinds[rank]) for rank, item in enumerate(of_task)]
    graded: list[FoundationItem] = []
    failures: list[dict[str, Any]] = []
    for rank, clean, kind in tqdm(chosen, desc="SNR-graded items", disable=not progress):
        try:
            speech = Clip.from_file(clean.audio, root=out)
            samples, detail = make_background(kind, speech.samples.size, item_rng(seed, f"snr:{clean.uid}", 0), recipes)
            background_rel = f"audio/foundation/{clean.task}/snr/{clean.uid}.background.wav"
            write_wav(out / background_rel, samples, SR)
            background = Clip.from_file(background_rel, root=out)
        except Exception as exc:  # noqa: BLE001 - a failed background fails that item's graded copies, counted
            logger.error("could not make the %s background of %s: %s: %s", kind, clean.uid, type(exc).__name__, exc)
            error = f"background: {type(exc).__name__}: {exc}"
            failures += [
                {"task": clean.task, "index": rank, "uid": graded_uid(clean.uid, s), "snr_db": s, "error": error}
                for s in grid
            ]
            continue
        for snr_db in grid:
            try:
                graded.append(_graded_item(clean, out, snr_db, speech, background, kind, detail))
            except Exception as exc:  # noqa: BLE001 - one failing mix is a counted failure, never a crash
                uid = graded_uid(clean.uid, snr_db)
                logger.error("could not build %s: %s: %s", uid, type(exc).__name__, exc)
                failures.append(
                    {
                        "task": clean.task,
                        "index": rank,
                        "uid": uid,
                        "snr_db": snr_db,
                        "error": f"{type(exc).__name__}: {exc}",
                    }
                )
    return graded, failures


class SnrPart:
    """AIR-Bench's SNR-graded copies of clean speech items (after the clean items in ``foundation.jsonl``)."""

    name = "snr"
    """The part's name."""
    tasks: tuple[str, ...] = ()
    """It grades the items the ``airbench`` part built (those of :func:`snr_tasks`)."""
    options: tuple[str, ...] = ("snr_grid", "snr_items_per_task")
    """SNRs in dB (none when the preset has none); items of each task to grade (all when the preset says none)."""
    requires: tuple[str, ...] = ("airbench",)
    """It grades that part's clean Foundation items."""
    manifests: tuple[str, ...] = ()
    """``foundation.jsonl`` is the ``airbench`` part's."""

    def resolve(self, preset: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """The grid (:func:`parse_snr_grid`) and ``snr_items_per_task``: given, else the preset's.

        Raises:
            ValueError: For a bad grid, or an ``snr_items_per_task`` that is not a whole number >= 0 or None.
        """
        grid = parse_snr_grid(given.get("snr_grid", preset.get("snr_grid")))
        per_task = given.get("snr_items_per_task", preset.get("snr_items_per_task"))
        if per_task is not None and (isinstance(per_task, bool) or not isinstance(per_task, int)):
            raise ValueError(f"snr_items_per_task must be a whole number or None, got {per_task!r}")
        if per_task is not None and per_task < 0:
            raise ValueError(f"snr_items_per_task must be >= 0 or None (all items), got {per_task}")
        return {"snr_grid": grid, "snr_items_per_task": per_task}

    def build(self, context: BuildContext) -> PartResult:
        """The graded copies of the ``airbench`` part's clean items (a failing copy is counted and skipped)."""
        clean = cast(list[FoundationItem], context.earlier["airbench"].items["foundation"])  # the part makes only those
        graded, failures = build_graded(
            clean,
            context.out,
            seed=context.seed,
            recipes=context.recipes,
            snr_grid=context.options["snr_grid"],
            items_per_task=context.options["snr_items_per_task"],
            progress=context.progress,
        )
        return PartResult(
            items={"foundation": list(graded)},
            failures=failures,
            card=dict(context.options),
            report={"graded": graded, "snr_grid": context.options["snr_grid"]},
        )
