"""Build an offline benchmark in AIR-Bench's shape from synthesized audio with known ground truth.

``build(preset, seed, out)`` runs every registered builder part (:mod:`airbench_nb.builders.parts`) in turn and
writes what they made: one manifest per item kind (``foundation.jsonl``, ``chat.jsonl``, ...), ``dataset.json`` and
the audio under ``out/audio/``. What varies (texts, voices, pools, phrasings, sizes) is read from recipe files under
``data_manifests/mini/``; the preset in ``presets.json`` gives each part its options. The parts, in build order
(:data:`BUILTIN_PARTS`):

- ``airbench`` (:mod:`airbench_nb.builders.airbench`): AIR-Bench's Foundation and Chat items, the kit's own tasks
  (:mod:`airbench_nb.builders.multi`: two clips ``<uid>-1.wav``, ``<uid>-2.wav`` or several turns) among them;
  ``reference_model`` rewrites the Chat references with an LLM;
- ``snr`` (:mod:`airbench_nb.builders.snr`): with an SNR grid (``snr_grid``), official speech items built again
  mixed over noise or music at each SNR, after the clean items in ``foundation.jsonl``;
- ``circular``: with ``circular_items_per_task``, rotations of the first items of each Foundation task, last in
  ``foundation.jsonl``;
- ``sseu`` (:mod:`airbench_nb.builders.sseu`): with ``sseu_utterances``, speech over synthesized scenes at
  SSEU-Bench's 7 SNRs plus the clean speech, written to ``transcription.jsonl``, ``scene.jsonl``, ``events.jsonl``
  and ``joint.jsonl``;
- ``ugbench`` (:mod:`airbench_nb.builders.ugbench`): with ``ugbench_items``, speech translation, audio and music
  captioning, text to speech and spoken answers, written to ``translation.jsonl``, ``caption.jsonl`` and
  ``speech_generation.jsonl``;
- ``tiered`` (:mod:`airbench_nb.builders.tiered`): with ``tiered_clips_per_class``, the tiered sound-source
  benchmark's clips asked closed-set and open-vocabulary, written to ``sound_source.jsonl`` and
  ``sound_source_open.jsonl`` (task ``sound_source``);
- ``controls`` (:mod:`airbench_nb.builders.controls`): with ``controls_items_per_task`` (0, none, by default), the
  audio-reliance controls (``controls``: silence, noise, mismatched, no_audio, description) of the first N Foundation
  and Chat items of each task, last in ``foundation.jsonl`` and ``chat.jsonl``;
- ``perturb`` (:mod:`airbench_nb.builders.perturbations`): with ``perturbations`` and ``perturb_items_per_task``
  (none and 0 by default), perturbed copies (codec, reverberation, speed, pitch, clipping, loudness) of the first N
  Foundation items and clean SSEU transcription items of each task, last in ``foundation.jsonl`` and
  ``transcription.jsonl``.

Every part's task names may be given in ``tasks``. A part registered later with
:func:`~airbench_nb.builders.parts.register_part` is built the same way; its options come from the preset or
``build(options=...)``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from airbench_nb.builders.airbench import (
    CHAT_MAKERS,
    FOUNDATION_MAKERS,
    NOT_BUILT,
    AirbenchPart,
    CircularPart,
    llm_references,
)
from airbench_nb.builders.controls import ControlsPart
from airbench_nb.builders.core import RECIPE_DIR, RecipeError, load_recipes
from airbench_nb.builders.parts import PARTS, BuildContext, BuilderPart, PartResult, register_part
from airbench_nb.builders.perturbations import PerturbPart
from airbench_nb.builders.snr import SnrPart
from airbench_nb.builders.sseu import SseuBuild, SseuPart
from airbench_nb.builders.tiered import TieredBuild, TieredPart
from airbench_nb.builders.ugbench import UgbenchBuild, UgbenchPart
from airbench_nb.manifests import DatasetCard, write_dataset_card, write_manifest
from airbench_nb.records import LETTERS, AnyItem, ChatItem, FoundationItem, ReferenceItem

logger = logging.getLogger(__name__)

BUILTIN_PARTS: tuple[BuilderPart, ...] = (
    AirbenchPart(),
    SnrPart(),
    CircularPart(),
    SseuPart(),
    UgbenchPart(),
    TieredPart(),
    ControlsPart(),
    PerturbPart(),
)
"""The kit's builder parts, registered in this order when the module is imported: AIR-Bench's three, then
SSEU-Bench's, UG-Bench's and the tiered benchmark's, then AIR-Bench's audio-reliance controls and the perturbed
copies (both off by default)."""

for _part in BUILTIN_PARTS:
    register_part(_part)


@dataclass
class BuildReport:
    """What :func:`build` wrote."""

    out: Path
    """Output folder."""
    preset: str
    """Preset name."""
    seed: int
    """Seed."""
    foundation: list[FoundationItem] = field(default_factory=list)
    """Clean Foundation items written (the SNR-graded copies are in ``graded``)."""
    chat: list[ChatItem] = field(default_factory=list)
    """Chat items written."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """Items that could not be made: task, index and error, plus uid and snr_db for graded items (counted, never
    fatal), part by part in build order."""
    seconds: float = 0.0
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
    parts: dict[str, PartResult] = field(default_factory=dict)
    """What each builder part returned, by name in build order (:mod:`airbench_nb.builders.parts`); the fields above
    are filled from it. Empty for a report re-read from the data cache."""

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
    options: Mapping[str, Any] | None = None,
) -> BuildReport:
    """Build the offline benchmark: every registered builder part, then the manifests and ``dataset.json``.

    The keyword arguments from ``reference_model`` on (``progress`` aside) are options of the built-in parts, passed
    to the part that reads each as ``options`` are; a None leaves the preset's value.

    Args:
        preset: ``tiny`` (2 items per task, for tests) or ``mini`` (20 per Foundation task, 12 per Chat task), or
            any preset of ``presets.json``.
        seed: Build seed; the same seed gives byte-identical manifests.
        out: Output folder (manifests, ``dataset.json`` and ``audio/``).
        tasks: Task names to build (of any part); default all.
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
        options: Options of any part by name (``{"sseu_snr_grid_db": [0, 10]}``, a registered part's own); they win
            over the keyword arguments above and over the preset.

    Returns:
        A :class:`BuildReport`. An item (clean or graded) that fails to build is counted in ``failures`` and
        skipped.

    Raises:
        RecipeError: For a bad recipe folder or unknown preset.
        ValueError: For an unknown task name in ``tasks``, an option no part reads, or a bad option value (a bad
            SNR grid, ``snr_items_per_task``, ...), before anything is built.
    """
    t0 = time.perf_counter()
    recipes = load_recipes(recipe_dir)
    if preset not in recipes.presets or preset.startswith("_"):
        valid = ", ".join(k for k in recipes.presets if not k.startswith("_"))
        raise RecipeError(f"unknown preset {preset!r}; presets in {recipes.folder / 'presets.json'}: {valid}")
    sizes = recipes.presets[preset]
    named = {
        "reference_model": reference_model,
        "reference_cache": reference_cache,
        "snr_grid": snr_grid,
        "snr_items_per_task": snr_items_per_task,
        "circular_items_per_task": circular_items_per_task,
        "sseu_utterances": sseu_utterances,
        "ugbench_items": ugbench_items,
        "tiered_clips_per_class": tiered_clips_per_class,
    }
    given = {k: v for k, v in {**named, **(options or {})}.items() if v is not None}
    parts = list(PARTS.values())
    unread = sorted(set(given) - {name for part in parts for name in part.options})
    if unread:
        raise ValueError(f"no builder part reads option(s) {', '.join(unread)}; parts: {', '.join(PARTS)}")
    resolved = {p.name: p.resolve(sizes, {k: v for k, v in given.items() if k in p.options}) for p in parts}
    buildable = [task for part in parts for task in part.tasks]
    wanted = set(tasks) if tasks else set(buildable)
    unknown = wanted - set(buildable)
    if unknown:
        raise ValueError(f"cannot build task(s) {', '.join(sorted(unknown))}; buildable: {', '.join(buildable)}")
    out = Path(out)
    results: dict[str, PartResult] = {}
    for part in parts:
        context = BuildContext(
            out=out,
            preset=preset,
            seed=seed,
            recipes=recipes,
            tasks=frozenset(wanted),
            options=MappingProxyType(resolved[part.name]),
            earlier=MappingProxyType(dict(results)),
            progress=progress,
        )
        results[part.name] = part.build(context)
    failures = [failure for result in results.values() for failure in result.failures]
    _write_manifests(out, parts, results)
    report = BuildReport(
        out=out,
        preset=preset,
        seed=seed,
        failures=failures,
        seconds=round(time.perf_counter() - t0, 2),
        parts=results,
        **{name: value for result in results.values() for name, value in result.report.items()},
    )
    counts: dict[str, Any] = {**report.counts(), "seed": seed, "recipes_sha256": recipes.sha256}
    for result in results.values():
        counts.update(result.card)
    write_dataset_card(
        out, DatasetCard(data_root=".", source=f"build:{preset}", counts={**counts, "failures_detail": failures})
    )
    return report


def _write_manifests(out: Path, parts: Sequence[BuilderPart], results: Mapping[str, PartResult]) -> None:
    """One manifest per kind: the items of every part that made it, in build order (see the parts' ``manifests``)."""
    by_kind: dict[str, list[AnyItem]] = {kind: [] for part in parts for kind in part.manifests}
    for result in results.values():
        for kind, items in result.items.items():
            by_kind.setdefault(kind, []).extend(items)
    always = {kind for part in parts for kind in part.manifests}
    for kind, items in by_kind.items():
        if items or kind in always:
            write_manifest(out / f"{kind}.jsonl", items)
        elif (out / f"{kind}.jsonl").is_file():  # left by an earlier build into the same folder: not this dataset's
            logger.warning("removing %s: this build has no %s items", out / f"{kind}.jsonl", kind)
            (out / f"{kind}.jsonl").unlink()


__all__ = [
    "BUILTIN_PARTS",
    "CHAT_MAKERS",
    "FOUNDATION_MAKERS",
    "NOT_BUILT",
    "BuildReport",
    "build",
    "llm_references",
]
