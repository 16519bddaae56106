"""Audio-reliance controls: derived copies of items whose audio is taken away, replaced or described.

A control asks an item's question again with its audio removed or replaced, so that a score can say how much of it
needed the audio (:mod:`airbench_nb.analysis.controls` compares the two). Each control of an item is a derived
item, like the SNR-graded copies (:mod:`airbench_nb.builders.snr`) and the rotated copies
(:mod:`airbench_nb.rotation`): the same kind, task, question, options and answer as its original, and

- uid ``f"{uid}@ctl-{name}"`` (:func:`control_uid`);
- ``meta[CONTROL_OF_KEY]`` (``control_of``): the original's uid; ``meta[CONTROL_KEY]`` (``control``): the control's
  name; the scoring leaves every item carrying ``control_of`` out of the score tables
  (:data:`airbench_nb.scoring.run.CONTROL_WHY`): a control is analysed beside its original, never scored as an item
  of its own;
- its audio written as 16-bit wav under ``audio/controls/<name>/<task>/<uid>.wav`` (a slash of the uid as ``_``)
  with its SHA-256 (the kit's :func:`~airbench_nb.audio.write_wav` and :func:`~airbench_nb.audio.sha256_file`),
  each clip of a multi-clip item in turn (``<uid>.<k>.wav`` for clip ``k``).

The controls (:data:`~airbench_nb.records.controls.CONTROLS`; the ``meta`` keys and what prompts read from them are
in :mod:`airbench_nb.records.controls`, so that prompts, models and scoring read them without this builder):

``silence``
    Every clip replaced by digital silence (all-zero samples) of the same number of samples at the clip's own
    sample rate.
``noise``
    Every clip replaced by white noise (uniform samples, so that the peak stays at sqrt(3) times the RMS) of the
    same number of samples and the same loudness: BS.1770 integrated loudness (pyloudnorm) when the clip can be
    gated (:func:`~airbench_nb.audio.lufs_applicable` and a finite value), else RMS dBFS; ``meta.control_loudness``
    records the unit, the target and the value measured on the written file. Seeded by the build seed and the
    original's uid. A silent clip has no loudness to match: its item is not eligible.
``mismatched``
    The clips of another item of the same task (and kind): a seeded derangement of the task's items
    (:func:`derangement`), so that no item gets its own audio, nor a clip whose bytes are the same as its own
    (same SHA-256 of the file as it is, whatever the manifest says); the donor's file is referenced as it is (no
    copy), and ``meta.control_donor`` names the donor. A task with a single item, or whose items all share one
    clip, has no donor to give: not eligible.
``no_audio``
    The question asked without audio (``meta[WITHOUT_AUDIO_KEY]`` is true: :func:`~.prompt_without_audio`). A
    backend that can prompt text alone sends no audio; one that cannot is ``n/a`` with its reason (never an error).
    The item still names a clip, the silence of the original's length, so that a runner unaware of the marker
    sends nothing of the original.
``description``
    The textual description of the audio in place of the audio (SAKURA's control, and AIR-Bench's own judge
    setting): ``meta[CONTROL_TEXT_KEY]`` holds the text (:func:`audio_description`: a Chat item's ``meta_info``, or
    ``meta["audio_description"]`` of any kind), the prompt goes without audio like ``no_audio`` (the text is put
    before the question by :func:`~.control_question`). An item without a description is not eligible.

Not eligible items are listed, with the reason, in the ``not_eligible`` list :func:`build_controls` returns; an item
whose control could not be made (an unreadable clip) is a counted failure, never a crash.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import singledispatch
from pathlib import Path
from typing import Any

import numpy as np

from airbench_nb.audio import AudioError, load_audio, loudness, sha256_file, write_wav
from airbench_nb.builders.core import item_rng
from airbench_nb.builders.parts import BuildContext, PartResult, cleanest_first
from airbench_nb.records import (  # the control marks live with the records, so that every layer reads them
    CONTROL_KEY,
    CONTROL_OF_KEY,
    CONTROL_TEXT_KEY,
    CONTROLS,
    WITHOUT_AUDIO_KEY,
    AudioStatus,
    ChatItem,
    ItemBase,
    control_uid,
    is_control,
)

logger = logging.getLogger(__name__)

DONOR_KEY = "control_donor"
"""Item ``meta`` key naming the item whose audio a ``mismatched`` control holds."""
LOUDNESS_KEY = "control_loudness"
"""Item ``meta`` key of a ``noise`` control: per clip, the unit, the original's loudness and the noise's measured."""
DESCRIPTION_META_KEY = "audio_description"
"""Item ``meta`` key any kind may carry a textual description of its audio under (read by :func:`audio_description`)."""
CONTROL_META_KEYS = (CONTROL_OF_KEY, CONTROL_KEY, CONTROL_TEXT_KEY, WITHOUT_AUDIO_KEY, DONOR_KEY, LOUDNESS_KEY)
"""Keys a control adds to its original's meta (an original holding one of them cannot be controlled)."""


@dataclass
class NotEligible:
    """An item a control cannot be made of, and why (not a failure: the control does not apply)."""

    uid: str
    """The original item's uid."""
    control: str
    """The control's name."""
    reason: str
    """Why (one line)."""


@dataclass
class ControlFailure:
    """A control that could not be made (an unreadable clip, a file that cannot be written): counted, never fatal."""

    uid: str
    """The control's uid."""
    control: str
    """The control's name."""
    task: str
    """The original item's task."""
    error: str
    """The error, one line naming the file."""


@dataclass
class ControlBuild:
    """What :func:`build_controls` made."""

    items: list[Any] = field(default_factory=list)
    """The control items (the originals' kinds), original by original, each original's controls in the order asked."""
    not_eligible: list[NotEligible] = field(default_factory=list)
    """Controls that do not apply to an item."""
    failures: list[ControlFailure] = field(default_factory=list)
    """Controls that could not be made."""


def parse_controls(names: str | Iterable[str] | None) -> list[str]:
    """Check a list of control names (a sequence, or a comma-separated string; None or ``""`` for none).

    Raises:
        ValueError: For an unknown or repeated name.
    """
    if names is None:
        return []
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip() and n.strip().lower() != "none"]
    chosen: list[str] = []
    for name in names:
        if name not in CONTROLS:
            raise ValueError(f"unknown control {name!r}; choose among {', '.join(CONTROLS)}")
        if name in chosen:
            raise ValueError(f"control {name!r} given twice")
        chosen.append(name)
    return chosen


@singledispatch
def audio_description(item: object) -> str | None:
    """The textual description of an item's audio, or None when it carries none.

    Any kind: ``meta["audio_description"]`` (:data:`DESCRIPTION_META_KEY`); a Chat item: its ``meta_info`` (what
    AIR-Bench's judge reads about the audio). A kind registers its own with ``@audio_description.register(Kind)``.
    A description that names the answer is not one (a caption item's caption is its reference): such kinds keep
    None.
    """
    meta = getattr(item, "meta", None) or {}
    text = meta.get(DESCRIPTION_META_KEY)
    return text.strip() if isinstance(text, str) and text.strip() else None


@audio_description.register(ChatItem)
def _chat_description(item: ChatItem) -> str | None:
    return item.meta_info.strip() or None


def derangement(keys: Sequence[str], seed: int, salt: str = "") -> list[int | None]:
    """A seeded donor for each of ``keys``: a different position whose key differs from its own.

    ``keys`` are the clips' identities (SHA-256 of the audio, or the path when unknown); position ``i`` gets donor
    ``d[i] != i`` with ``keys[d[i]] != keys[i]``. Tries seeded single-cycle permutations (Sattolo's algorithm, a
    derangement by construction) until one also avoids equal keys; when clips repeat too often for that to come by
    chance, falls back to a seeded shift of the items grouped by key (valid whenever the largest group holds at most
    half of the items). Positions of a key held by more than half of the items that cannot get a different key
    (the surplus of the largest group) get None.

    Args:
        keys: One identity per item.
        seed: Seed.
        salt: Mixed into the seed (the task's name), so that tasks get independent derangements.

    Returns:
        The donor position of each position, or None where there is none.
    """
    n = len(keys)
    if n < 2 or len(set(keys)) < 2:
        return [None] * n
    salt_key = int.from_bytes(hashlib.sha256(f"ctl-mismatched:{salt}".encode()).digest()[:8], "big")
    rng = np.random.default_rng([seed, salt_key])
    for _ in range(200):
        perm = list(range(n))
        for i in range(n - 1, 0, -1):  # Sattolo: one cycle through every position, so perm[i] != i
            j = int(rng.integers(i))
            perm[i], perm[j] = perm[j], perm[i]
        if all(keys[perm[i]] != keys[i] for i in range(n)):
            return [int(p) for p in perm]
    groups: dict[str, list[int]] = {}
    for i in rng.permutation(n):
        groups.setdefault(keys[int(i)], []).append(int(i))
    ordered = sorted(groups.values(), key=len, reverse=True)
    largest = ordered[0]
    surplus = max(0, len(largest) - (n - len(largest)))
    dropped = set(largest[:surplus])
    order = [i for group in ordered for i in group if i not in dropped]
    shift = max(len(g) for g in ordered) - surplus
    donors: list[int | None] = [None] * n
    for pos, i in enumerate(order):
        donors[i] = order[(pos + shift) % len(order)]
    return donors


class _NotEligibleError(ValueError):
    """The control does not apply to the item (a silent clip has no loudness for noise to match)."""


def _clip_key(out: Path, clip: str) -> str:
    """A clip's identity for the derangement: the SHA-256 of its bytes now (not the manifest's), else its path."""
    try:
        return sha256_file(out / clip)
    except OSError:
        return f"path:{clip}"


def _read(path: Path) -> tuple[np.ndarray, int]:
    """A clip as mono samples at its own rate, with :func:`~airbench_nb.audio.load_audio`'s checks."""
    import soundfile as sf

    try:
        sr = int(sf.info(str(path)).samplerate)
    except Exception as exc:  # noqa: BLE001 - any decoder failure names the file
        raise AudioError(f"{path}: cannot read the clip ({type(exc).__name__}: {exc})") from None
    return load_audio(path, sr=sr).astype(np.float64), sr


def _noise_like(samples: np.ndarray, sr: int, rng: np.random.Generator, name: str) -> tuple[np.ndarray, dict[str, Any]]:
    """Uniform white noise of the length and loudness of ``samples`` (see the module docstring)."""
    if not np.any(samples):
        raise _NotEligibleError(f"{name}: the clip is silent, there is no loudness to match")
    target = loudness(samples, sr, name=name)
    noise = rng.uniform(-1.0, 1.0, samples.size)
    level = loudness(noise, sr, unit=target.unit, name=f"{name} (noise)")
    noise = noise * 10 ** ((target.value - level.value) / 20)
    peak = float(np.max(np.abs(noise)))
    if peak > 1.0:
        raise ValueError(f"{name}: noise at {target.value:.1f} {target.unit} would clip (peak {peak:.2f})")
    return noise, {"unit": target.unit, "target": target.value}


def _audio_control(
    item: ItemBase, name: str, out: Path, seed: int
) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """Write the ``silence`` or ``noise`` clips of an item; returns their paths, hashes and (noise) loudness."""
    uid = control_uid(item.uid, name)
    clips = item.clips
    paths, hashes, levels = [], [], []
    for k, clip in enumerate(clips):
        samples, sr = _read(out / clip)
        suffix = f".{k}" if len(clips) > 1 else ""
        folder = str(getattr(item, "task", None) or getattr(item, "kind", "items"))
        rel = f"audio/controls/{name}/{folder}/{uid.replace('/', '_')}{suffix}.wav"  # a uid's slash makes no folder
        if name == "silence":
            written = np.zeros(samples.size, dtype=np.float64)
        else:
            rng = item_rng(seed, f"ctl-noise:{item.uid}", k)
            written, level = _noise_like(samples, sr, rng, str(out / clip))
        write_wav(out / rel, written, sr)
        if name == "noise":
            import soundfile as sf

            measured = loudness(sf.read(str(out / rel), dtype="float64")[0], sr, unit=level["unit"])
            levels.append({**level, "measured": measured.value})
        paths.append(rel)
        hashes.append(sha256_file(out / rel))
    return paths, hashes, levels


def _derived(
    item: ItemBase, name: str, paths: list[str], hashes: list[str | None], meta: dict[str, Any], note: str
) -> Any:
    """The control item: the original with the control's uid, clips, hashes, meta and note (validated again)."""
    clash = sorted(set(CONTROL_META_KEYS) & set(item.meta))  # type: ignore[attr-defined]
    if clash:
        raise ValueError(f"{item.uid}: meta already holds {', '.join(clash)}: a control would overwrite it")
    multi = len(paths) > 1
    update: dict[str, Any] = {
        "uid": control_uid(item.uid, name),
        "audio": paths[0],
        "audio_sha256": hashes[0],
        "audios": list(paths) if multi else [],
        "audios_sha256": list(hashes) if multi else [],
        "meta": {**item.meta, CONTROL_OF_KEY: item.uid, CONTROL_KEY: name, **meta},  # type: ignore[attr-defined]
        "notes": [*item.notes, note],
        "audio_status": AudioStatus.ok,  # written (or read, a donor's) just now
    }
    if "mix" in type(item).model_fields:
        update["mix"] = None  # the original's mix is not this audio
    return type(item).model_validate({**item.model_dump(), **update})


def build_controls(
    items: Sequence[ItemBase],
    out: str | Path,
    *,
    seed: int,
    controls: Sequence[str] = CONTROLS,
) -> ControlBuild:
    """Make the controls of items (see the module docstring).

    Args:
        items: Items with audio (any kind; controls of controls and noise-graded or rotated copies are skipped:
            they would count a question twice).
        out: The data root the items' audio is relative to; control audio is written under it.
        seed: Seed of the noise and of the mismatched derangement.
        controls: Which controls (:func:`parse_controls`), made in this order for each item.

    Returns:
        A :class:`ControlBuild`: the items, the controls that do not apply, and those that failed.

    Raises:
        ValueError: For an unknown control, or two items of one uid.
    """
    chosen = parse_controls(controls)
    out = Path(out)
    originals = [
        i
        for i in items
        if not is_control(i)
        and "clean_uid" not in getattr(i, "meta", {})
        and "rotation_of" not in getattr(i, "meta", {})
    ]
    uids = [i.uid for i in originals]
    if len(set(uids)) != len(uids):
        raise ValueError("build_controls: two items share a uid")
    result = ControlBuild()
    donors: dict[str, ItemBase | None] = {}
    if "mismatched" in chosen:
        by_task: dict[tuple[str, str], list[ItemBase]] = {}
        for item in originals:
            by_task.setdefault((item.kind, str(getattr(item, "task", ""))), []).append(item)  # type: ignore[attr-defined]
        for (_, task), group in by_task.items():
            keys = ["|".join(_clip_key(out, c) for c in i.clips) for i in group]
            for item, donor in zip(group, derangement(keys, seed, task), strict=True):
                same_shape = donor is not None and len(group[donor].clips) == len(item.clips)
                donors[item.uid] = group[donor] if same_shape and donor is not None else None
    silence_of: dict[str, tuple[list[str], list[str]]] = {}
    for item in originals:
        for name in chosen:
            uid = control_uid(item.uid, name)
            try:
                made = _one_control(item, name, out, seed, donors, silence_of, result)
            except _NotEligibleError as exc:
                result.not_eligible.append(NotEligible(item.uid, name, str(exc)))
                continue
            except Exception as exc:  # noqa: BLE001 - one control that cannot be made is counted, never fatal
                logger.error("could not build %s: %s: %s", uid, type(exc).__name__, exc)
                task = str(getattr(item, "task", ""))
                result.failures.append(ControlFailure(uid, name, task, f"{type(exc).__name__}: {exc}"))
                continue
            if made is not None:
                result.items.append(made)
    return result


def _one_control(
    item: ItemBase,
    name: str,
    out: Path,
    seed: int,
    donors: dict[str, ItemBase | None],
    silence_of: dict[str, tuple[list[str], list[str]]],
    result: ControlBuild,
) -> Any:
    if name in ("silence", "noise"):
        paths, hashes, levels = _audio_control(item, name, out, seed)
        if name == "silence":
            silence_of[item.uid] = (paths, hashes)
        extra = {LOUDNESS_KEY: levels} if levels else {}
        return _derived(item, name, paths, list(hashes), extra, f"{item.uid} with its audio replaced by {name}")
    if name == "mismatched":
        donor = donors.get(item.uid)
        if donor is None:
            reason = "no other item of its task with a different clip (and as many clips) to take the audio of"
            result.not_eligible.append(NotEligible(item.uid, name, reason))
            return None
        hashes = [sha256_file(out / c) for c in donor.clips]
        own = [sha256_file(out / c) for c in item.clips]
        if set(hashes) & set(own):
            raise ValueError(f"{item.uid}: donor {donor.uid}'s clip has the same bytes as its own")
        note = f"{item.uid} with the audio of {donor.uid}"
        return _derived(item, name, donor.clips, list(hashes), {DONOR_KEY: donor.uid}, note)
    text: str | None = None
    if name == "description":
        text = audio_description(item)
        if text is None:
            result.not_eligible.append(NotEligible(item.uid, name, f"a {item.kind} item carries no description"))
            return None
    if item.uid not in silence_of:  # the clip a runner unaware of the marker would send: silence, never the original
        paths, hashes, _ = _audio_control(item, "silence", out, seed)
        silence_of[item.uid] = (paths, hashes)
    paths, hashes = silence_of[item.uid]
    meta: dict[str, Any] = {WITHOUT_AUDIO_KEY: True, **({CONTROL_TEXT_KEY: text} if text else {})}
    note = f"{item.uid} asked without audio" + (" with a description of it" if text else "")
    return _derived(item, name, paths, list(hashes), meta, note)


class ControlsPart:
    """A builder part making the controls of the first items of each task the earlier parts built (see below).

    Registered last (:data:`airbench_nb.builders.BUILTIN_PARTS`), owned by the AIR-Bench benchmark: the controls
    follow the graded and rotated copies in ``foundation.jsonl`` and ``chat.jsonl``. Off by default: with
    ``controls_items_per_task`` 0 (the presets' default) it makes nothing, and every preset builds what it built
    before the part was registered. ``build(options={"controls_items_per_task": 4})`` (notebook 01's
    ``build_options``, ``airbench-nb build --option controls_items_per_task=4``) makes every control of
    :data:`CONTROLS` of the first 4 items of each Foundation and Chat task, of SSEU-Bench's clean transcription items
    (``snr_db`` None: their transcripts are scored by WER) and events items (mAP; cleanest mix first, so that the first
    ones span different scenes: :func:`~airbench_nb.builders.parts.cleanest_first`), and of UG-Bench's speech
    translation items (BLEU); ``controls`` picks some of them.
    """

    name = "controls"
    """The part's name."""
    tasks: tuple[str, ...] = ()
    """It controls the items the ``airbench`` part built."""
    options: tuple[str, ...] = ("controls", "controls_items_per_task")
    """Which controls (all of :data:`CONTROLS` when not given); items of each task to control (0, none, when not
    given; None for all)."""
    requires: tuple[str, ...] = ("airbench", "sseu", "ugbench")
    """It controls the ``airbench`` part's Foundation and Chat items, the ``sseu`` part's clean transcription items
    (``snr_db`` None; their controls are scored by WER) and events items (mAP), and the ``ugbench`` part's speech
    translation items (BLEU)."""
    manifests: tuple[str, ...] = ()
    """``foundation.jsonl`` and ``chat.jsonl`` are the ``airbench`` part's."""

    def resolve(self, preset: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """The controls and ``controls_items_per_task``: given, else the preset's, else every control and 0 (none).

        The controls are checked by :func:`parse_controls`.

        Raises:
            ValueError: For an unknown control, or a per-task count that is not a whole number >= 0 or None.
        """
        names = parse_controls(given.get("controls", preset.get("controls", CONTROLS)))
        per_task = given.get("controls_items_per_task", preset.get("controls_items_per_task", 0))
        if per_task is not None and (isinstance(per_task, bool) or not isinstance(per_task, int) or per_task < 0):
            raise ValueError(f"controls_items_per_task must be a whole number >= 0 or None, got {per_task!r}")
        return {"controls": names, "controls_items_per_task": per_task}

    def build(self, context: BuildContext) -> PartResult:
        """The controls of the first items of each task (a control that cannot be made is counted and skipped)."""
        names, per_task = context.options["controls"], context.options["controls_items_per_task"]
        earlier = context.earlier["airbench"].items
        sseu = context.earlier["sseu"].items if "sseu" in context.earlier else {}
        ug = context.earlier["ugbench"].items if "ugbench" in context.earlier else {}
        groups = [
            earlier.get("foundation", []),
            earlier.get("chat", []),
            [i for i in sseu.get("transcription", []) if i.snr_db is None],
            cleanest_first(sseu.get("events", [])),  # one mix per utterance first: different scenes
            list(ug.get("translation", [])),
        ]
        chosen: list[ItemBase] = []
        for group in groups:
            seen: dict[str, int] = {}
            for item in group:
                task = str(getattr(item, "task", ""))
                seen[task] = seen.get(task, 0) + 1
                if per_task is None or seen[task] <= per_task:
                    chosen.append(item)
        made = (
            build_controls(chosen, context.out, seed=context.seed, controls=names)
            if names and chosen
            else ControlBuild()
        )
        items: dict[str, list[Any]] = {"foundation": [], "chat": []}
        for item in made.items:
            items.setdefault(item.kind, []).append(item)  # transcription, events, translation: their own manifests
        failures = [{"task": f.task, "index": -1, "uid": f.uid, "error": f.error} for f in made.failures]
        card = {**context.options, "controls_not_eligible": len(made.not_eligible), "control_items": len(made.items)}
        return PartResult(items=items, failures=failures, card=card, report={})
