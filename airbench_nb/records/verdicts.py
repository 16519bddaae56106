"""A judge's decision on one response (:class:`Verdict`) and what it carries: screen, fenced reading, hits."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from airbench_nb.records.base import Record, _now
from airbench_nb.records.checks import StrictBoolean, StrictInteger, check_uid

logger = logging.getLogger(__name__)


class ScreenFlag(BaseModel):
    """One pattern of the injection screen that matched an answer (:mod:`airbench_nb.judge.screen`)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)

    pattern: str
    """Name of the pattern (``overrides_instructions``, ``demands_score``, ...)."""
    span: str
    """The matched text (stripped, at most 80 characters)."""
    start: StrictInteger
    """Offset of the match in the answer."""
    end: StrictInteger
    """Offset just past the match."""


class AnswerScreen(BaseModel):
    """What the injection screen found in the answer a verdict judged (the screen never changes a score)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)

    version: str
    """Version of the screen's patterns (:data:`airbench_nb.judge.screen.SCREEN_VERSION`)."""
    flags: list[ScreenFlag] = Field(default_factory=list)
    """One flag per pattern that matched; empty when the answer looks honest."""

    @property
    def flagged(self) -> bool:
        """Whether any pattern matched."""
        return bool(self.flags)


class FencedReading(BaseModel):
    """An LLM judge's reading of the same task under the fenced prompt (the ``strict`` protocol reads it)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)

    raw: str | None = None
    """The judge's raw reply to the fenced prompt."""
    choice: StrictInteger | None = None
    """Foundation: index of the option the answer was read as; None when the judge abstained."""
    correct: StrictBoolean | None = None
    """Foundation: whether the chosen option is the gold one; None when unparsed."""
    score_reference: float | None = None
    """Chat: score given to the reference answer (1-10); None when unparsed."""
    score_hypothesis: float | None = None
    """Chat: score given to the model's answer (1-10); None when unparsed."""
    parse_error: str | None = None
    """Why the reply could not be parsed, or why the call failed; None when it was parsed."""
    prompt_hash: str | None = None
    """SHA-256 of the fenced prompt."""


class SourceHits(BaseModel):
    """Tier D: what a judge found in an open-vocabulary answer about a sound's source."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    category: StrictBoolean
    """The answer names the gold coarse category (naming its fine class counts: a fine hit implies it)."""
    subclass: StrictBoolean
    """The answer names the gold fine class."""
    named: list[str] = Field(default_factory=list)
    """The classes and categories the judge read in the answer, in the order found."""


class ReasoningLabel(BaseModel):
    """An LLM classifier's reading of one answer's reasoning (the tiered benchmark's strategy analysis)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    strategy: str
    """The primary reasoning strategy (one of :data:`airbench_nb.prompts.REASONING_STRATEGIES`)."""
    confidence: Literal["confident", "hedged"]
    """Whether the answer states its conclusion confidently or hedges it."""


class Verdict(Record):
    """A judge's decision on one response."""

    uid: str
    """Uid of the item judged."""

    @field_validator("uid")
    @classmethod
    def _uid_clean(cls, value: str) -> str:
        return check_uid(value)

    model: str
    """Model spec whose response was judged."""
    judge: str
    """Judge spec (``rule``, ``proxy``, ``openai:gpt-4o``, ...)."""
    order: Literal["single", "reference_first", "hypothesis_first"] = "single"
    """For Chat, which answer the judge saw first; ``single`` for Foundation."""
    raw: str | None = None
    """The judge's raw reply (or the rule's explanation)."""
    choice: StrictInteger | None = None
    """Foundation: index of the option the response was read as; None when the judge abstained."""
    correct: StrictBoolean | None = None
    """Foundation: whether the chosen option is the gold one; None when unparsed."""
    score_reference: float | None = None
    """Chat: score given to the reference answer (1-10); None when unparsed."""
    score_hypothesis: float | None = None
    """Chat: score given to the model's answer (1-10); None when unparsed."""
    parse_error: str | None = None
    """Why the reply could not be parsed; None when it was."""
    prompt_hash: str | None = None
    """SHA-256 of the judge prompt."""
    input_tokens: StrictInteger | None = None
    """Judge prompt tokens, when reported."""
    output_tokens: StrictInteger | None = None
    """Judge reply tokens, when reported."""
    cached: StrictBoolean = False
    """True when the reply came from the judge cache rather than a new request."""
    turn: StrictInteger | None = None
    """Multi-turn Chat: index of the turn judged (0 for the first); None for one-turn items and Foundation."""
    repeat: StrictInteger | None = None
    """Which judgement of the same (uid, model, judge, order, turn) this is, when the judge was asked several times
    (``judge --judge-repeats R``): None for the first (or only) one, as in every file written before repeats
    existed; 1 .. R-1 for the repeats. Scores read the first judgement only; the judge-panel analysis
    (:mod:`airbench_nb.analysis.judge_panel`) reads them all."""

    @field_validator("repeat")
    @classmethod
    def _repeat_counts_from_one(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"repeat must be None (the first judgement) or 1, 2, ... (a repeat), got {value}")
        return value

    response_hash: str | None = None
    """:meth:`Response.content_hash` of the response judged; a verdict whose hash is not that of the model's
    latest response for the item is stale (re-judged, never scored). None in files written before the field
    existed: such verdicts still count."""
    screen: AnswerScreen | None = None
    """The injection screen's result on the answer judged (:mod:`airbench_nb.judge.screen`), for every judge; None
    when there was no answer, and in files written before the screen existed."""
    fenced: FencedReading | None = None
    """LLM judges: the reading under the fenced prompt (:func:`airbench_nb.prompts.fenced_judge_messages`); the
    fields above are the verbatim prompt's. ``strict`` scores this reading, ``official`` the verbatim one. None for
    the rule and proxy judges, and in files written before the fenced prompt existed (``strict`` then reads the
    verbatim fields)."""
    reasoning: ReasoningLabel | None = None
    """The ``strategy:`` judge (:mod:`airbench_nb.judge.strategy`): the answer's reasoning strategy and confidence;
    None for every other judge and when the reply could not be read."""
    hits: SourceHits | None = None
    """Tier D (:class:`OpenSourceItem`): the hit on the gold category and on its fine class; None for every other
    kind and when the judge could not read the answer."""
    created: datetime = Field(default_factory=_now)
    """When the verdict was recorded (UTC)."""
