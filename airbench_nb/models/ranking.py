"""What the ranked-list backends share (``classifier:`` for tier B, ``clap:`` for tier C).

A ranked-list model does not write text: it scores the item's candidate classes (the choices of a closed-set item)
and answers with the best one's text, keeping the whole ranking in
:attr:`~airbench_nb.models.base.Generation.ranking`. This module holds the parts both backends need: the kinds they
serve (:func:`kinds_option`), the checks of a prompt and its clip (:func:`prompt_choices`, :func:`clip_at`), sorting
scores into a ranking (:func:`ranked`), where a checkpoint is read from (:func:`checkpoint_source`) and the bundled
data files (:data:`TIERED_DATA`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from airbench_nb.models.base import Prompt
from airbench_nb.models.specs import SpecError
from airbench_nb.records import RankedLabel

logger = logging.getLogger(__name__)

TIERED_DATA = Path(__file__).resolve().parents[2] / "data_manifests" / "tiered"
"""The tiered benchmark's data files: ``audioset_mapping.csv`` (AudioSet labels to task classes) and
``clap_prompts.json`` (CLAP's prompt templates)."""

SOUND_SOURCE_KINDS: frozenset[str] = frozenset({"sound_source"})
"""The item kinds a ranked-list model serves by default: the tiered benchmark's closed-set sound-source items."""


def kinds_option(spec: str, kinds: str | Iterable[str] | None) -> frozenset[str]:
    """The kinds a ranked-list backend serves: :data:`SOUND_SOURCE_KINDS`, or the ones the ``kinds`` option names.

    The option lets a classifier or CLAP answer other closed-set items (``kinds="foundation"``: AIR-Bench's sound
    classification questions, or a test manifest); each item still needs choices the model can rank.

    Args:
        spec: The model spec (for the error message).
        kinds: None (the default), a comma-separated string, or an iterable of kind names.

    Raises:
        SpecError: For an empty list of kinds.
    """
    if kinds is None:
        return SOUND_SOURCE_KINDS
    names = kinds.split(",") if isinstance(kinds, str) else list(kinds)
    chosen = frozenset(str(name).strip() for name in names if str(name).strip())
    if not chosen:
        raise SpecError(f"{spec}: kinds={kinds!r} names no item kind (e.g. kinds='sound_source,foundation')")
    return chosen


def prompt_choices(spec: str, prompt: Prompt) -> list[str] | str:
    """The candidate classes of a prompt's item (its choices), or why the item cannot be ranked."""
    choices = getattr(prompt.item, "choices", None)
    if not choices:
        return f"{spec} ranks the choices of closed-set items; {prompt.uid} ({prompt.item.kind}) has none"
    return list(choices)


def clip_at(spec: str, prompt: Prompt, rate: int, *, verb: str = "takes") -> np.ndarray | str:
    """The prompt's one clip as float32 at ``rate`` Hz, or why it cannot be used.

    ``verb`` says, in the message about a multi-clip item, what the model does with one clip (``takes``,
    ``transcribes``).
    """
    if len(prompt.audios) > 1:
        return f"{spec} {verb} one clip per prompt; this item has {len(prompt.audios)}"
    audio = prompt.audio
    if not isinstance(audio, np.ndarray) or audio.ndim != 1:
        return f"audio of {prompt.uid} is not a mono numpy array"
    if audio.size == 0:
        return f"audio of {prompt.uid} is empty"
    if not np.all(np.isfinite(audio)):
        return f"audio of {prompt.uid} contains NaN or infinite samples"
    audio = audio.astype(np.float32, copy=False)
    if prompt.sample_rate != rate:
        import soxr

        audio = soxr.resample(audio, prompt.sample_rate, rate, quality="HQ").astype(np.float32)
    return audio


def ranked(labels: Sequence[str], scores: Sequence[float]) -> list[RankedLabel]:
    """Labels sorted by score, best first; equal scores keep the order given (the item's choice order)."""
    if len(labels) != len(scores):
        raise ValueError(f"{len(labels)} labels for {len(scores)} scores")
    order = sorted(range(len(labels)), key=lambda i: -float(scores[i]))
    return [RankedLabel(label=labels[i], score=float(scores[i])) for i in order]


@dataclass(frozen=True)
class CheckpointSource:
    """Where a transformers checkpoint is read from."""

    name: str
    """What ``from_pretrained`` gets: the expanded local folder, or the hub id."""
    local: bool
    """Whether it is a local folder (then nothing is read from the network)."""


def checkpoint_source(spec: str, rest: str) -> CheckpointSource:
    """The folder (or hub id) of a ``classifier:`` / ``clap:`` spec, refusing a hub id when offline.

    Raises:
        SpecError: For a hub id while ``HF_HUB_OFFLINE`` is set and the id is not cached (left to transformers,
            which raises; the caller turns it into one line).
    """
    local = Path(rest).expanduser()
    if local.is_dir():
        return CheckpointSource(str(local), True)
    if not rest.strip():
        raise SpecError(f"{spec}: give a checkpoint folder or hub id")
    return CheckpointSource(rest, False)


def offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` forbids the network."""
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (at most 200 characters), or its type when it has none."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def torch_device(device: str | None) -> str:
    """``cuda`` when torch sees a GPU and no device is named, else the one named (``cpu`` by default)."""
    import torch

    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device
