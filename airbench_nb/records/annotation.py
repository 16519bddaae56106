"""Human annotation of model answers: the pairs of a sample and the annotators' labels."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from airbench_nb.records.base import Record, _now
from airbench_nb.records.checks import Seconds, StrictBoolean

logger = logging.getLogger(__name__)


class AnnotationPair(Record):
    """One (item, model response) pair of an annotation sample (``airbench-nb sample-annotation``)."""

    pair_id: str = Field(min_length=1)
    """Unique key of the pair in its sample (``<model>|<uid>``); labels refer to it."""
    kind: Literal["foundation", "chat"]
    """Foundation (single choice) or Chat (open question)."""
    uid: str = Field(min_length=1)
    """The item's uid."""
    model: str
    """Spec of the model whose response is labelled."""
    task: str
    """The item's task."""
    category: str
    """The item's category (speech, sound, music, mixed)."""
    stratum: str
    """The stratum the pair was drawn from (a category or a task, per ``--stratify``)."""
    question: str
    """The question as the model saw it."""
    audio: str
    """Audio path relative to ``data_root``."""
    data_root: str
    """Folder the audio path is relative to (absolute at sampling time)."""
    choices: list[str] = Field(default_factory=list)
    """Foundation: the options in the item's order (A, B, ...); empty for Chat."""
    response: str | None = None
    """Foundation: the model's answer text; None for Chat (see ``answers``)."""
    answers: list[str] = Field(default_factory=list)
    """Chat: the two answers shown as "Answer 1" and "Answer 2" (the model's and the reference, in a seeded random
    order); empty for Foundation."""
    model_answer: int | None = None
    """Chat: which shown answer (1 or 2) is the model's; hidden from the annotator. None for Foundation."""
    judge_verdicts: dict[str, Any] = Field(default_factory=dict)
    """What each judge decided (Foundation: chosen option; Chat: both scores per order), shown to the annotator
    only when the sample was drawn with ``--show-judge``."""
    show_judge: StrictBoolean = False
    """Whether the annotation tool shows ``judge_verdicts``."""
    seed: int = 0
    """Seed of the sample (and of the Chat answer order)."""


class Label(Record):
    """One action of a human annotator on one pair: a label, a skip or an undo (label files are append-only)."""

    pair_id: str = Field(min_length=1)
    """The :class:`AnnotationPair` labelled."""
    annotator: str = Field(min_length=1)
    """Who labelled (an id the annotator chose)."""
    action: Literal["label", "skip", "undo"] = "label"
    """``label``: a decision; ``skip``: passed over (may be labelled later); ``undo``: retracts this annotator's
    latest label of the pair. The latest ``label`` not undone is the annotator's label of the pair."""
    choice: int | None = None
    """Foundation: index of the option the answer picks; None with ``unclear``."""
    unclear: StrictBoolean = False
    """Foundation: the annotator judged the answer to pick no option, or not clearly one ("none / unclear")."""
    preference: Literal["1", "2", "tie"] | None = None
    """Chat: which shown answer is better, or a tie."""
    score_1: float | None = None
    """Chat: optional 1-10 score of Answer 1."""
    score_2: float | None = None
    """Chat: optional 1-10 score of Answer 2."""
    comment: str = ""
    """Free-text comment."""
    seconds: Seconds | None = None
    """Seconds spent on the pair before this action (finite, 0 or more)."""
    created: datetime = Field(default_factory=_now)
    """When the action was taken (UTC)."""
