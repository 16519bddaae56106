"""The interface every model backend implements, and what flows through it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from airbench_nb.records import ChatItem, FoundationItem

logger = logging.getLogger(__name__)


@dataclass
class GenerationParams:
    """Decoding parameters shared by all backends."""

    max_new_tokens: int = 256
    """Upper bound on generated tokens."""
    temperature: float = 0.0
    """0 means greedy decoding (the default: deterministic answers)."""
    top_p: float = 1.0
    """Nucleus sampling mass (used only when ``temperature > 0``)."""
    seed: int | None = None
    """Sampling seed, where the backend supports one."""

    @property
    def greedy(self) -> bool:
        """Whether decoding is greedy."""
        return self.temperature <= 0.0


@dataclass
class Prompt:
    """One item as a backend sees it."""

    item: FoundationItem | ChatItem
    """The item (baselines read its choices; the oracle its answer)."""
    text: str
    """The full user text (instruction, question, options)."""
    audio: np.ndarray
    """Mono float32 samples at ``sample_rate``."""
    audio_path: Path
    """The audio file, for backends that send files."""
    sample_rate: int = 16000
    """Sample rate of ``audio`` in Hz."""
    system: str | None = None
    """Optional system text."""

    @property
    def uid(self) -> str:
        """The item's uid."""
        return self.item.uid


@dataclass
class Generation:
    """A backend's output for one prompt: text, or an error for this item alone."""

    text: str | None = None
    """Generated text; None on failure."""
    error: str | None = None
    """Why this item failed; None on success."""
    input_tokens: int | None = None
    """Prompt tokens, when known."""
    output_tokens: int | None = None
    """Generated tokens, when known."""


@runtime_checkable
class AudioLM(Protocol):
    """A model under test: turns a batch of prompts into one :class:`Generation` each, in order.

    A failure that concerns one item is returned as ``Generation(error=...)`` for that item; an exception means
    the whole batch failed (the runner records it for every item of the batch and goes on).
    """

    spec: str
    """The spec string the model was made from (``hf:...``, ``openai:...``, ``baseline:...``)."""
    batch_size: int
    """How many prompts the backend takes per call."""

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        """Answer a batch of prompts."""
        ...

    def close(self) -> None:
        """Release resources (GPU memory, HTTP sessions)."""
        ...
