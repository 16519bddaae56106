"""AIR-Bench's item kinds: the Foundation single-choice question and the Chat open question."""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from airbench_nb.records.checks import _not_blank
from airbench_nb.records.item import ItemBase, SingleChoiceItem
from airbench_nb.records.mix import MixMeta
from airbench_nb.records.tasks import (
    ALL_CHAT_TASKS,
    ALL_FOUNDATION_TASKS,
    ChatCategory,
    FoundationCategory,
    chat_category,
    foundation_category,
)

logger = logging.getLogger(__name__)


class FoundationItem(SingleChoiceItem):
    """A Foundation single-choice question about one audio clip."""

    METRICS: ClassVar[tuple[str, ...]] = ("choice_accuracy",)
    """The metrics that score this kind of item (names in :data:`airbench_nb.scoring.metrics.METRICS`)."""
    ROTATED: ClassVar[bool] = True
    """Circular evaluation makes rotated copies of its options (:mod:`airbench_nb.rotation`)."""

    kind: Literal["foundation"] = "foundation"
    """Record kind, so that a manifest line says what it holds."""
    task: str
    """Official Foundation task name (e.g. ``Speaker_Gender_Recognition``), or one of the kit's own
    (:data:`KIT_FOUNDATION_TASKS`)."""
    category: FoundationCategory | None = None
    """speech, sound, music (or multi-clip for the kit's tasks); derived from ``task`` when omitted and checked
    against it when given."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        foundation_category(value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> FoundationItem:
        expected = ALL_FOUNDATION_TASKS[self.task]
        if self.category is None:
            object.__setattr__(self, "category", expected)
        elif self.category != expected:
            raise ValueError(f"category {self.category!r} does not match task {self.task!r} (expected {expected!r})")
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"answer {self.answer} is not an index into {len(self.choices)} choices")
        return self


class ChatTurn(BaseModel):
    """One turn of a multi-turn Chat item: a user question and its reference answer."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)

    question: str = Field(min_length=1)
    """The user's question in this turn (the model has seen the earlier questions and its own answers)."""
    reference: str = Field(min_length=1)
    """The reference answer the judge compares this turn's answer with."""

    @field_validator("reference")
    @classmethod
    def _reference_given(cls, value: str) -> str:
        return _not_blank(value, "reference")


class ChatItem(ItemBase):
    """A Chat open question about one audio clip (or several turns), with reference answers and a description."""

    METRICS: ClassVar[tuple[str, ...]] = ("judge_score",)
    """The metrics that score this kind of item (names in :data:`airbench_nb.scoring.metrics.METRICS`)."""
    JUDGE_ORDERS: ClassVar[tuple[str, ...]] = ("reference_first", "hypothesis_first")
    """A judge scores the answer and the reference twice, each order once (the official ``CHAT_ORDERS``)."""

    kind: Literal["chat"] = "chat"
    """Record kind, so that a manifest line says what it holds."""
    task: str
    """Official Chat task name (e.g. ``speech_and_music_QA``), or one of the kit's own (:data:`KIT_CHAT_TASKS`)."""
    category: ChatCategory | None = None
    """speech, sound, music, mixed (or multi-turn for the kit's tasks); derived from ``task`` when omitted and
    checked against it when given."""
    reference: str
    """Reference answer the judge compares with (GPT-4-written in the official release)."""
    meta_info: str
    """Textual description of the audio: all the judge knows about it."""
    mix: MixMeta | None = None
    """How the audio was mixed, for mixed items the kit built; None otherwise."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Ground truth used to make the item (transcript, events, ...); judges read ``meta_info``, not this."""
    turns: list[ChatTurn] = Field(default_factory=list)
    """Every turn of a multi-turn item (2 or more), in order; the first is ``question`` and ``reference``. Empty for
    a one-turn item (every version-1 item)."""

    @model_validator(mode="before")
    @classmethod
    def _first_turn(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("turns") and not (data.get("question") or data.get("reference")):
            first = data["turns"][0]
            if isinstance(first, ChatTurn):
                first = first.model_dump()
            if isinstance(first, dict):
                data = {**data, "question": first.get("question"), "reference": first.get("reference")}
        return data

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        chat_category(value)
        return value

    @field_validator("reference")
    @classmethod
    def _reference_given(cls, value: str) -> str:
        return _not_blank(value, "reference")

    @model_validator(mode="after")
    def _consistent(self) -> ChatItem:
        expected = ALL_CHAT_TASKS[self.task]
        if self.category is None:
            object.__setattr__(self, "category", expected)
        elif self.category != expected:
            raise ValueError(f"category {self.category!r} does not match task {self.task!r} (expected {expected!r})")
        if len(self.turns) == 1:
            raise ValueError("turns lists the turns of a multi-turn item (2 or more); give one turn as question")
        if self.turns and (self.turns[0].question, self.turns[0].reference) != (self.question, self.reference):
            raise ValueError("the first of turns must be the item's question and reference")
        return self

    @property
    def conversation(self) -> list[tuple[str, str]]:
        """Every turn as ``(question, reference)``, in order (one for a one-turn item)."""
        if self.turns:
            return [(t.question, t.reference) for t in self.turns]
        return [(self.question, self.reference)]

    @property
    def multi_turn(self) -> bool:
        """Whether the item has several turns."""
        return len(self.turns) > 1

    @property
    def judged_turns(self) -> tuple[int | None, ...]:
        """Every turn's index for a multi-turn item (a judge scores each turn); ``(None,)`` for a one-turn item."""
        return tuple(range(len(self.turns))) if self.multi_turn else (None,)

    @property
    def mix_meta(self) -> MixMeta | None:
        """How the kit mixed the item's audio (``mix``); None when it did not."""
        return self.mix

    def turn_question(self, turn: int | None) -> str:
        """The question of turn ``turn`` (0 for the first), or the item's question when ``turn`` is None.

        Args:
            turn: Index of the turn; None for the item as a whole.
        """
        return self.question if turn is None else self.conversation[turn][0]

    def turn_reference(self, turn: int | None) -> str:
        """The reference answer of turn ``turn`` (0 for the first), or the item's ``reference`` when ``turn`` is None.

        Args:
            turn: Index of the turn; None for the item as a whole.
        """
        return self.reference if turn is None else self.conversation[turn][1]
