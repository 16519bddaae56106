"""The MOS listening test of spoken answers: the playlist's presentations and the listeners' ratings."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Literal

from pydantic import Field, model_validator

from airbench_nb.records.base import Record, _now
from airbench_nb.records.checks import Seconds, StrictBoolean, StrictInteger

logger = logging.getLogger(__name__)

ACR_LABELS: dict[int, str] = {1: "Bad", 2: "Poor", 3: "Fair", 4: "Good", 5: "Excellent"}
"""The absolute category rating scale of a MOS listening test (ITU-T P.800): score and label."""


class ListeningEntry(Record):
    """One presentation of one (clip, system) pair to one listener of the MOS listening test (a playlist line).

    The listener sees the position and :attr:`prompt` only; :attr:`model` is the key that unblinds the system,
    kept in the playlist file for the analysis (``airbench-nb mos``) and never shown by the tool.
    """

    listener: str = Field(min_length=1)
    """The listener slot this presentation belongs to (``L1``, ``L2``, ...; it names the ratings file)."""
    position: StrictInteger = Field(ge=1)
    """Position in the listener's order (1 first)."""
    entry_id: str = Field(min_length=1)
    """Key of the presentation in the listener's list (:attr:`stimulus_id`, with ``~2`` for a repeat); ratings
    refer to it."""
    stimulus_id: str = Field(min_length=1)
    """Opaque id of the (item, system) pair: the same for every listener and for a repeat."""
    system_id: str = Field(min_length=1)
    """Opaque id of the system (model) that spoke the clip."""
    model: str
    """The model spec behind :attr:`system_id` (the blinding key; never shown to the listener)."""
    uid: str = Field(min_length=1)
    """Uid of the item answered aloud."""
    task: str
    """The item's task (``tts`` or ``spoken_answer``)."""
    prompt: str
    """What the listener reads beside the clip: the text asked for (``tts``) or the question (``spoken_answer``)."""
    prompt_kind: Literal["text", "question"]
    """Whether :attr:`prompt` is the text the system was asked to speak, or the question it answered aloud."""
    audio: str
    """The clip: :attr:`ResponseAudio.path`, relative to the model's responses folder."""
    audio_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the clip's bytes when the playlist was drawn (a changed file is refused by the tool)."""
    duration_s: float = Field(ge=0)
    """Duration of the clip in seconds."""
    repeat: StrictBoolean = False
    """True for the second presentation of a stimulus (a consistency check): the analysis uses it only to measure
    the listener's consistency, never in the MOS."""
    seed: int = 0
    """Seed of the playlist."""


class Rating(Record):
    """One action of a listener on one playlist entry: a 1-5 rating, a skip or an undo (append-only ratings file)."""

    entry_id: str = Field(min_length=1)
    """The :class:`ListeningEntry` rated."""
    listener: str = Field(min_length=1)
    """The listener slot who rated."""
    action: Literal["label", "skip", "undo"] = "label"
    """``label``: a rating (:attr:`score`); ``skip``: passed over (may be rated later); ``undo``: retracts the
    listener's latest rating of the entry. The latest ``label`` not undone is the listener's rating."""
    score: StrictInteger | None = None
    """The naturalness rating, 1 (Bad) to 5 (Excellent) (:data:`ACR_LABELS`); None for a skip or an undo."""
    comment: str = ""
    """Free-text comment."""
    seconds: Seconds | None = None
    """Seconds spent on the entry before this action (finite, 0 or more)."""
    created: datetime = Field(default_factory=_now)
    """When the action was taken (UTC)."""

    @model_validator(mode="after")
    def _score_fits_action(self) -> Rating:
        if self.action == "label" and (self.score is None or self.score not in ACR_LABELS):
            raise ValueError(f"a rating needs a score from 1 to 5 (score), got {self.score!r}")
        if self.action != "label" and self.score is not None:
            raise ValueError(f"a {self.action} carries no score")
        return self
