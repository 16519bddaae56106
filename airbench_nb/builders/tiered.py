"""The tiered sound-source benchmark's offline items: synthesized clips, one closed-set and one open question each.

Every fine class of the hierarchy (``data_manifests/tiered/hierarchy.json``, :mod:`airbench_nb.synth.sources`) gets
``clips_per_class`` clips, each written once under ``audio/tiered/<class>/`` and asked two ways:

- a :class:`~airbench_nb.records.SoundSourceItem` (``sound_source.jsonl``): "What made the sound in this audio
  clip?" with one lettered option per fine class, in hierarchy order (the option texts are the classes' labels);
  the options carry their fine classes and coarse categories, so the item carries the hierarchy. Tier A LALMs
  choose a letter, tier B classifiers and tier C CLAP rank the options;
- an :class:`~airbench_nb.records.OpenSourceItem` (``sound_source_open.jsonl``): the benchmark's open-vocabulary
  question "Enumerate the sound occurrences in the audio clip." (tier D), with the hierarchy's synonyms as the
  names the offline rule judge reads.

Both share the clip's ``clip_id`` (``source-<class>-<k>``); the item's ``meta`` keeps what the synthesizer drew (rates,
durations, level) and the seed, so the defining property can be measured again on the file.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airbench_nb.audio import sha256_file, write_wav
from airbench_nb.builders.parts import BuildContext, PartResult, whole_number
from airbench_nb.records import SOUND_SOURCE_TASK, AudioStatus, OpenSourceItem, SoundSourceItem
from airbench_nb.synth.sources import Hierarchy, hierarchy, render

logger = logging.getLogger(__name__)

TIERED_BUILDER_VERSION = "1"
"""Version of this builder (recorded in ``dataset.json``): bump it when the same seed would give other items."""

CLOSED_QUESTION = "What made the sound in this audio clip?"
"""The closed-set question (the options follow it in the prompt)."""

OPEN_QUESTION = "Enumerate the sound occurrences in the audio clip."
"""The benchmark's open-vocabulary question (tier D), word for word."""

DATASET = "synthetic-tiered"
"""``dataset`` of the built items."""


@dataclass
class TieredBuild:
    """What :func:`build_tiered` made."""

    sound_source: list[SoundSourceItem] = field(default_factory=list)
    """Closed-set items, class by class in hierarchy order."""
    sound_source_open: list[OpenSourceItem] = field(default_factory=list)
    """Open-vocabulary items, in the same order (one per clip)."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """One ``{"task", "index", "uid", "error"}`` per clip that could not be made."""

    @property
    def by_kind(self) -> dict[str, list[Any]]:
        """The items of each manifest kind (``sound_source``, ``sound_source_open``)."""
        return {"sound_source": self.sound_source, "sound_source_open": self.sound_source_open}

    def cache_fields(self) -> dict[str, Any]:
        """What the build cache's key file keeps of this part besides its items and failures: nothing."""
        return {}

    @classmethod
    def reloaded(cls, items: Mapping[str, list[Any]], stored: Mapping[str, Any]) -> TieredBuild:
        """The part as a cached build holds it: its kinds' manifest items and its failures from the key file.

        Args:
            items: The items of each manifest of the cache entry, by kind (a kind without a manifest may be absent).
            stored: The entry's key file (its ``failures``).
        """
        return cls(
            sound_source=list(items.get("sound_source", [])),
            sound_source_open=list(items.get("sound_source_open", [])),
            failures=[f for f in stored.get("failures", []) if f.get("task") == "sound_source"],
        )

    def counts(self) -> dict[str, Any]:
        """Clips per coarse category, failures and the builder's version."""
        return {
            "clips": len(self.sound_source),
            "categories": dict(Counter(i.coarse for i in self.sound_source)),
            "failures": len(self.failures),
            "builder_version": TIERED_BUILDER_VERSION,
        }


def source_names(tree: Hierarchy) -> dict[str, list[str]]:
    """The names of every fine class (its label, then its synonyms) and category (its synonyms), for tier D."""
    names: dict[str, list[str]] = {}
    for fine in tree.classes:
        names[fine.name] = list(dict.fromkeys([fine.shown, *fine.synonyms]))
    for category in tree.categories:
        if category.synonyms:
            names[category.name] = list(category.synonyms)
    return names


def source_items(
    tree: Hierarchy, fine: str, *, uid: str, audio: str, audio_sha256: str | None, meta: dict[str, Any], dataset: str
) -> tuple[SoundSourceItem, OpenSourceItem]:
    """The closed-set and open-vocabulary items about one clip of ``fine`` (see the module docstring)."""
    classes = list(tree.fine_names)
    categories = [c.coarse for c in tree.classes]
    common: dict[str, Any] = {
        "dataset": dataset,
        "audio": audio,
        "audio_sha256": audio_sha256,
        "audio_status": AudioStatus.ok if audio_sha256 else None,
        "meta": meta,
    }
    closed = SoundSourceItem(
        uid=uid,
        question=CLOSED_QUESTION,
        choices=[c.shown for c in tree.classes],
        answer=classes.index(fine),
        classes=classes,
        categories=categories,
        **common,
    )
    opened = OpenSourceItem(
        uid=f"{uid}-open",
        question=OPEN_QUESTION,
        classes=classes,
        categories=categories,
        label=fine,
        names=source_names(tree),
        clip_id=uid,
        **common,
    )
    return closed, opened


def build_tiered(
    out: str | Path, *, seed: int, clips_per_class: int, tree: Hierarchy | None = None, progress: bool = False
) -> TieredBuild:
    """Synthesize ``clips_per_class`` clips of every fine class and their two items (the caller writes manifests).

    Args:
        out: Data root; audio goes under ``out/audio/tiered/<class>/``.
        seed: Build seed: clip ``k`` of a class is :func:`~airbench_nb.synth.sources.render` of seed
            ``seed * 100_000 + k`` (so a larger count keeps the clips of a smaller one).
        clips_per_class: Clips of each class (0: none).
        tree: The hierarchy (the kit's own by default; every class needs a synthesizer).
        progress: Log the counts when done.

    Returns:
        A :class:`TieredBuild`; a clip that cannot be made is counted in its failures and skipped.

    Raises:
        ValueError: For a negative count.
    """
    if isinstance(clips_per_class, bool) or not isinstance(clips_per_class, int) or clips_per_class < 0:
        raise ValueError(f"tiered_clips_per_class must be a whole number >= 0, got {clips_per_class!r}")
    tree = tree or hierarchy()
    result = TieredBuild()
    root = Path(out)
    for fine in tree.fine_names:
        for k in range(clips_per_class):
            uid = f"source-{fine}-{k:03d}"
            try:
                clip = render(fine, seed=seed * 100_000 + k)
                rel = f"audio/tiered/{fine}/{uid}.wav"
                write_wav(root / rel, clip.samples, clip.sr)
                meta = {"seed": clip.seed, "duration_s": round(clip.duration_s, 3), "params": clip.params}
                closed, opened = source_items(
                    tree, fine, uid=uid, audio=rel, audio_sha256=sha256_file(root / rel), meta=meta, dataset=DATASET
                )
            except Exception as exc:  # noqa: BLE001 - one clip that cannot be made is counted, never fatal
                logger.error("could not build tiered clip %s: %s: %s", uid, type(exc).__name__, exc)
                result.failures.append(
                    {"task": "sound_source", "index": k, "uid": uid, "error": f"{type(exc).__name__}: {exc}"}
                )
                continue
            result.sound_source.append(closed)
            result.sound_source_open.append(opened)
    if progress:
        logger.info("tiered items: %s", result.counts())
    return result


class TieredPart:
    """The tiered sound-source benchmark's clips, asked closed-set and open-vocabulary.

    Written to ``sound_source.jsonl`` and ``sound_source_open.jsonl``.
    """

    name = "tiered"
    """The part's name."""
    tasks: tuple[str, ...] = (SOUND_SOURCE_TASK,)
    """``sound_source`` selects both kinds."""
    options: tuple[str, ...] = ("tiered_clips_per_class",)
    """Clips of each fine class (0 when the preset has none)."""
    requires: tuple[str, ...] = ()
    """It reads no other part."""
    manifests: tuple[str, ...] = ()
    """Its manifests are written when they have items."""

    def resolve(self, preset: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """``tiered_clips_per_class``: given, else the preset's, else 0.

        Raises:
            ValueError: For a value that is not a whole number >= 0.
        """
        value = given.get("tiered_clips_per_class", preset.get("tiered_clips_per_class", 0))
        return {"tiered_clips_per_class": whole_number("tiered_clips_per_class", value)}

    def build(self, context: BuildContext) -> PartResult:
        """The clips and items (none unless ``sound_source`` is asked for), :func:`build_tiered`."""
        n = context.options["tiered_clips_per_class"] if SOUND_SOURCE_TASK in context.tasks else 0
        tiered = build_tiered(context.out, seed=context.seed, clips_per_class=n, progress=context.progress)
        return PartResult(
            items={kind: list(items) for kind, items in tiered.by_kind.items()},
            failures=tiered.failures,
            card=dict(context.options),
            report={"tiered": tiered},
        )
