"""Perturbed copies: derived items whose audio went through a codec, a room, a speed or pitch change, ...

A perturbed copy asks an item's question again of its audio perturbed (:mod:`airbench_nb.perturb`: a codec at a
bitrate, a synthetic reverberation of an RT60, a speed or pitch change, clipping, a loudness target), so that a
curve over a family's parameter can say how a model's answers degrade. Each perturbation of an item is a derived
item, like the SNR-graded copies (:mod:`airbench_nb.builders.snr`) and the audio-reliance controls
(:mod:`airbench_nb.builders.controls`): the same kind, task, question, options and answer (or reference) as its
original, and

- uid ``f"{uid}@p-{tag}"`` (:func:`~airbench_nb.perturb.spec.perturbed_uid`:
  ``Speaker_Gender_Recognition-003@p-mp3-24k``; an SSEU-Bench item's ``clip_id`` gets the same tag, so that its copy
  is not taken for the clean clip);
- ``meta`` the original's plus the keys of :data:`~airbench_nb.perturb.spec.PERTURBATION_META_KEYS`:
  ``perturbation_of`` (:data:`~airbench_nb.records.controls.PERTURBATION_OF_KEY`: the original's uid; its presence
  marks a perturbed copy), ``perturbation`` (the curve's name, ``codec:mp3``, ``reverb``), ``parameter`` (the
  requested value, in the family's unit) and ``measured`` (:meth:`~airbench_nb.perturb.PerturbationRecord.meta`:
  what was measured on the written files, the seed, and the artifacts kept beside the wav, relative to the data
  root). A multi-clip item's ``measured`` is its first clip's; ``perturbation_clips`` lists every clip's;
- its audio written as 16-bit wav under ``audio/perturb/<tag>/<task>/<uid>.wav`` (a slash of the uid as ``_``) by
  :func:`~airbench_nb.perturb.perturb_file`, with its SHA-256, each clip of a multi-clip item in turn
  (``<uid>.<k>.wav`` for clip ``k``); the encoded file of a codec (``.mp3``, ``.opus``) and the RIR of a
  reverberation (``.rir.wav``) are kept beside it;
- ``audio_status`` ok, ``mix`` None (the original's mix is not this audio), and one line more in ``notes``.

Each clip's random draws (the RIR) are seeded by the build seed, the perturbation and the original's uid. The
scoring leaves every item carrying ``perturbation_of`` out of the score tables
(:data:`airbench_nb.scoring.run.PERTURBED_KEY`): a perturbed copy is analysed beside its original, never scored as
an item of its own. Copies of derived items (SNR-graded, rotated, controls, perturbed) are not made: they would
count a question twice. An item whose clip cannot be perturbed (unreadable, silent, an encoder failure) is a counted
failure, never a crash.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airbench_nb.builders.core import item_rng
from airbench_nb.builders.paraphrase import ParaphraseBuild, paraphrase_items
from airbench_nb.builders.parts import BuildContext, PartResult, cleanest_first, whole_number
from airbench_nb.perturb import PERTURBATION_META_KEYS, Perturbation, perturb_file, perturbed_uid
from airbench_nb.perturb.spec import parse_perturbations
from airbench_nb.records import AudioStatus, ItemBase
from airbench_nb.records.controls import CONTROL_OF_KEY, PERTURBATION_OF_KEY

logger = logging.getLogger(__name__)

CLIPS_KEY = "perturbation_clips"
"""Item ``meta`` key of a multi-clip perturbed copy: every clip's ``measured`` record, in clip order."""
DERIVED_KEYS = ("clean_uid", "rotation_of", CONTROL_OF_KEY, PERTURBATION_OF_KEY)
"""``meta`` keys marking a derived item (SNR-graded, rotated, control, perturbed): such items are not perturbed."""
SSEU_CLEAN_TASK = "sseu_transcription"
"""The task of SSEU-Bench's clean transcription items (``snr_db`` None), the SSEU items that are perturbed."""


@dataclass
class PerturbFailure:
    """A perturbed copy that could not be made (an unreadable or silent clip, an encoder failure): counted."""

    uid: str
    """The perturbed copy's uid."""
    perturbation: str
    """The perturbation's text (``codec:mp3:24``)."""
    task: str
    """The original item's task."""
    error: str
    """The error, one line naming the file."""


@dataclass
class PerturbBuild:
    """What :func:`build_perturbations` made."""

    items: list[Any] = field(default_factory=list)
    """The perturbed copies (the originals' kinds), original by original, each one's perturbations in the order
    asked."""
    failures: list[PerturbFailure] = field(default_factory=list)
    """Copies that could not be made."""


def is_derived(item: Any) -> bool:
    """Whether an item is a derived copy (its meta holds one of :data:`DERIVED_KEYS`): it is not perturbed."""
    meta = getattr(item, "meta", None) or {}
    return any(key in meta for key in DERIVED_KEYS)


def _seed(seed: int, spec: Perturbation, uid: str, k: int) -> int:
    """The seed of clip ``k`` of item ``uid`` under ``spec``: from the build seed, the perturbation and the uid."""
    return int(item_rng(seed, f"perturb:{spec.tag}:{uid}", k).integers(2**31))


def _relative(path: str, out: Path) -> str:
    """A written file's path relative to the data root, as a manifest holds it."""
    try:
        return Path(path).relative_to(out).as_posix()
    except ValueError:
        return path


def _perturbed(item: ItemBase, spec: Perturbation, out: Path, seed: int) -> Any:
    """The perturbed copy of an item: every clip perturbed and written, the item derived from the original."""
    clash = sorted((set(PERTURBATION_META_KEYS) | {CLIPS_KEY}) & set(item.meta))  # type: ignore[attr-defined]
    if clash:
        raise ValueError(f"{item.uid}: meta already holds {', '.join(clash)}: a perturbed copy would overwrite it")
    uid = perturbed_uid(item.uid, spec)
    clips = item.clips
    folder = str(getattr(item, "task", None) or getattr(item, "kind", "items"))
    paths: list[str] = []
    hashes: list[str] = []
    metas: list[dict[str, Any]] = []
    for k, clip in enumerate(clips):
        suffix = f".{k}" if len(clips) > 1 else ""
        rel = f"audio/perturb/{spec.tag}/{folder}/{uid.replace('/', '_')}{suffix}.wav"  # a uid's slash makes no folder
        record = perturb_file(out / clip, out / rel, spec, _seed(seed, spec, item.uid, k))
        meta = record.meta(item.uid)
        meta["measured"]["artifacts"] = [_relative(a, out) for a in meta["measured"]["artifacts"]]
        paths.append(rel)
        hashes.append(record.sha256)
        metas.append(meta)
    multi = len(paths) > 1
    extra = {CLIPS_KEY: [m["measured"] for m in metas]} if multi else {}
    update: dict[str, Any] = {
        "uid": uid,
        "audio": paths[0],
        "audio_sha256": hashes[0],
        "audios": list(paths) if multi else [],
        "audios_sha256": list(hashes) if multi else [],
        "meta": {**item.meta, **metas[0], **extra},  # type: ignore[attr-defined]
        "notes": [*item.notes, f"{item.uid} with its audio perturbed: {spec.text}"],
        "audio_status": AudioStatus.ok,  # written just now
    }
    if "mix" in type(item).model_fields:
        update["mix"] = None  # the original's mix is not this audio
    if getattr(item, "clip_id", None):
        update["clip_id"] = perturbed_uid(item.clip_id, spec)  # type: ignore[attr-defined]
    return type(item).model_validate({**item.model_dump(), **update})


def build_perturbations(
    items: Sequence[ItemBase],
    out: str | Path,
    *,
    seed: int,
    perturbations: Sequence[str | Perturbation] | str,
) -> PerturbBuild:
    """Make the perturbed copies of items (see the module docstring).

    Args:
        items: Items with audio (any kind; derived copies, :func:`is_derived`, are skipped).
        out: The data root the items' audio is relative to; perturbed audio is written under it.
        seed: Build seed (each clip's seed is drawn from it, the perturbation and the uid).
        perturbations: Which perturbations (texts such as ``codec:mp3:24`` or :class:`Perturbation`, or one
            comma-separated string: :func:`~airbench_nb.perturb.spec.parse_perturbations`), made in this order for
            each item.

    Returns:
        A :class:`PerturbBuild`: the copies and those that failed.

    Raises:
        PerturbError: For a malformed or repeated perturbation.
        ValueError: For two items of one uid.
    """
    specs = parse_perturbations(perturbations)
    out = Path(out)
    originals = [i for i in items if not is_derived(i)]
    uids = [i.uid for i in originals]
    if len(set(uids)) != len(uids):
        raise ValueError("build_perturbations: two items share a uid")
    result = PerturbBuild()
    for item in originals:
        for spec in specs:
            try:
                result.items.append(_perturbed(item, spec, out, seed))
            except Exception as exc:  # noqa: BLE001 - one copy that cannot be made is counted, never fatal
                uid = perturbed_uid(item.uid, spec)
                logger.error("could not build %s: %s: %s", uid, type(exc).__name__, exc)
                task = str(getattr(item, "task", ""))
                result.failures.append(PerturbFailure(uid, spec.text, task, f"{type(exc).__name__}: {exc}"))
    return result


def _first_per_task(items: Sequence[Any], per_task: int | None) -> list[Any]:
    """The first ``per_task`` original items of each task (all of them for None), in their order."""
    seen: dict[str, int] = {}
    chosen: list[Any] = []
    for item in items:
        if is_derived(item):
            continue
        task = str(getattr(item, "task", ""))
        seen[task] = seen.get(task, 0) + 1
        if per_task is None or seen[task] <= per_task:
            chosen.append(item)
    return chosen


class PerturbPart:
    """A builder part making perturbed copies of the first items of each task of AIR-Bench, SSEU-Bench and UG-Bench.

    Registered last (:data:`airbench_nb.builders.BUILTIN_PARTS`, after the controls), owned by the AIR-Bench
    benchmark: the copies follow every other item in their manifests. It perturbs AIR-Bench's Foundation items (the
    ``airbench`` part's), SSEU-Bench's clean transcription items (the ``sseu`` part's, ``snr_db`` None: the mixed
    clips already carry their noise) and its events items (mAP; cleanest mix first, one per utterance before a second
    SNR: :func:`~airbench_nb.builders.parts.cleanest_first`), and UG-Bench's speech translation items (the
    ``ugbench`` part's; BLEU). Off by default: with
    ``perturb_items_per_task`` 0 (the presets' default) or no ``perturbations`` it makes nothing, and every preset
    builds what it built before the part was registered. ``build(options={"perturbations": "codec:mp3:24,reverb:0.6",
    "perturb_items_per_task": 2})`` (``airbench-nb build --option perturbations=codec:mp3:24,reverb:0.6 --option
    perturb_items_per_task=2``) makes both perturbations of the first 2 items of each task.
    """

    name = "perturb"
    """The part's name."""
    tasks: tuple[str, ...] = ()
    """It perturbs the items the ``airbench`` and ``sseu`` parts built."""
    options: tuple[str, ...] = ("perturbations", "perturb_items_per_task", "paraphrases")
    """Which perturbations (none when not given); items of each task to perturb (0, none, when not given; None for
    all); paraphrased questions per Foundation item perturbed (0, none, when not given:
    :mod:`airbench_nb.builders.paraphrase`)."""
    requires: tuple[str, ...] = ("airbench", "sseu", "ugbench")
    """It perturbs those parts' Foundation, clean transcription, events and speech translation items."""
    manifests: tuple[str, ...] = ()
    """``foundation.jsonl`` is the ``airbench`` part's; ``transcription.jsonl``, ``events.jsonl`` and
    ``translation.jsonl`` are written when they have items."""

    def resolve(self, preset: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """The perturbations (as texts) and ``perturb_items_per_task``: given, else the preset's, else none and 0.

        The perturbations are checked by :func:`~airbench_nb.perturb.spec.parse_perturbations`.

        Raises:
            ValueError: For a bad perturbation (a :class:`~airbench_nb.perturb.PerturbError`), or a per-task count
                that is not a whole number >= 0 or None.
        """
        specs = parse_perturbations(given.get("perturbations", preset.get("perturbations")))
        per_task = given.get("perturb_items_per_task", preset.get("perturb_items_per_task", 0))
        per_task = whole_number("perturb_items_per_task", per_task, none=True)
        paraphrases = whole_number("paraphrases", given.get("paraphrases", preset.get("paraphrases", 0)))
        texts = [s.text for s in specs]
        return {"perturbations": texts, "perturb_items_per_task": per_task, "paraphrases": paraphrases}

    def build(self, context: BuildContext) -> PartResult:
        """The perturbed copies of the first items of each task (a copy that cannot be made is counted, skipped)."""
        texts, per_task = context.options["perturbations"], context.options["perturb_items_per_task"]
        foundation = context.earlier["airbench"].items.get("foundation", [])
        sseu = context.earlier["sseu"].items if "sseu" in context.earlier else {}
        ug = context.earlier["ugbench"].items if "ugbench" in context.earlier else {}
        clean = [i for i in sseu.get("transcription", []) if i.snr_db is None]
        events = cleanest_first(sseu.get("events", []))  # one mix per utterance first: different scenes
        groups = [foundation, clean, events, ug.get("translation", [])]
        chosen = [i for group in groups for i in _first_per_task(group, per_task)] if texts else []
        made = build_perturbations(chosen, context.out, seed=context.seed, perturbations=texts)
        paraphrased = ParaphraseBuild()
        if context.options.get("paraphrases"):
            table = {**context.recipes.phrasings, **(context.recipes.multi or {}).get("phrasings", {})}
            originals = [i for i in _first_per_task(foundation, per_task) if i.kind == "foundation"]
            paraphrased = paraphrase_items(originals, table, context.options["paraphrases"])
        items: dict[str, list[Any]] = {}
        for item in [*made.items, *paraphrased.items]:
            items.setdefault(item.kind, []).append(item)
        failures = [{"task": f.task, "index": -1, "uid": f.uid, "error": f.error} for f in made.failures]
        card = {
            **context.options,
            "perturbed_items": len(made.items),
            "perturbed_originals": len(chosen),
            "paraphrased_items": len(paraphrased.items),
            "paraphrase_not_eligible": len(paraphrased.not_eligible),
        }
        return PartResult(items=items, failures=failures, card=card, report={})
