"""The bases every item kind builds on.

The clips, uid and provenance of :class:`ItemBase`, the lettered options of :class:`SingleChoiceItem`, the
reference-scored task of :class:`ReferenceItemBase`.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator, model_validator

from airbench_nb.records.base import AudioStatus, Record
from airbench_nb.records.checks import StrictInteger, check_relative_audio_path, check_uid
from airbench_nb.records.mix import MixMeta
from airbench_nb.records.tasks import LETTERS, MAX_CHOICES, REFERENCE_TASKS, _unknown_task

logger = logging.getLogger(__name__)


class ItemBase(Record):
    """What every item kind holds: its uid, provenance, question and clips (one, or several in order)."""

    uid: str = Field(min_length=1)
    """Identifier of the item, unique within its manifest."""
    source_id: str | None = None
    """Identifier in the source dataset (the official ``uniq_id`` for imported items)."""
    dataset: str
    """Source dataset name (the official ``dataset_name``; ``synthetic`` for built items)."""
    audio: str
    """Path of the audio file, relative to the manifest's data root, with forward slashes (the first clip of an
    item with several)."""
    question: str
    """The question asked about the audio."""
    audio_status: AudioStatus | None = None
    """What the last audio check found (the worst over all clips); None when the audio has not been checked."""
    audio_sha256: str | None = None
    """SHA-256 of the audio file's bytes (the first clip's); None when missing or unchecked."""
    notes: list[str] = Field(default_factory=list)
    """Remarks made while importing or building the item (e.g. an extension rule applied)."""
    audios: list[str] = Field(default_factory=list)
    """Every clip of an item about several (2 or more), in the order the question names them ("the first clip",
    ...), each checked like ``audio``, whose value is the first; empty for a one-clip item (every version-1 item)."""
    audios_sha256: list[str | None] = Field(default_factory=list)
    """SHA-256 of each clip of ``audios``, in its order (None for a missing one); empty when ``audios`` is."""

    @model_validator(mode="before")
    @classmethod
    def _first_clip(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("audios") and not data.get("audio"):
            clips = data["audios"]
            if isinstance(clips, list) and clips and isinstance(clips[0], str):
                data = {**data, "audio": clips[0]}
        return data

    @field_validator("audio")
    @classmethod
    def _audio_relative(cls, value: str) -> str:
        return check_relative_audio_path(value)

    @field_validator("audios")
    @classmethod
    def _audios_relative(cls, value: list[str]) -> list[str]:
        if not value:
            return value
        if len(value) == 1:
            raise ValueError("audios lists the clips of an item about several (2 or more); give one clip as audio")
        return [check_relative_audio_path(v) for v in value]

    @model_validator(mode="after")
    def _clips_consistent(self) -> Any:
        if self.audios:
            if self.audios[0] != self.audio:
                raise ValueError(f"audio {self.audio!r} must be the first of audios {self.audios!r}")
            if self.audios_sha256 and len(self.audios_sha256) != len(self.audios):
                raise ValueError(f"audios_sha256 has {len(self.audios_sha256)} entries for {len(self.audios)} clips")
            if self.audios_sha256 and self.audio_sha256 is not None and self.audios_sha256[0] != self.audio_sha256:
                raise ValueError("audio_sha256 must be the first of audios_sha256")
        elif self.audios_sha256:
            raise ValueError("audios_sha256 given without audios")
        return self

    @property
    def clips(self) -> list[str]:
        """Every clip's path in order: ``audios``, or ``[audio]`` for a one-clip item."""
        return list(self.audios) if self.audios else [self.audio]

    @property
    def clips_sha256(self) -> list[str | None]:
        """SHA-256 of every clip in order (``audios_sha256``, or ``[audio_sha256]``; None entries when unknown)."""
        if self.audios:
            return list(self.audios_sha256) if self.audios_sha256 else [None] * len(self.audios)
        return [self.audio_sha256]

    @property
    def multi_clip(self) -> bool:
        """Whether the item is about several clips."""
        return len(self.audios) > 1

    @field_validator("uid")
    @classmethod
    def _uid_clean(cls, value: str) -> str:
        return check_uid(value)

    JUDGE_ORDERS: ClassVar[tuple[str, ...]] = ("single",)
    """The orders in which a judge reads an answer of this kind (``Verdict.order`` values): ``single`` (the answer
    alone) unless the kind compares the answer with a reference both ways round."""
    ROTATED: ClassVar[bool] = False
    """Whether circular evaluation makes rotated copies of this kind's options (:mod:`airbench_nb.rotation`)."""

    def option_letters(self) -> list[str] | None:
        """The letters the options are asked by (``A``, ``B``, ...); None when the item is not asked for a letter."""
        return None

    @property
    def category_label(self) -> str:
        """The category the item is reported under: its ``category``, or ``other`` for a kind or item without one."""
        category = getattr(self, "category", None)
        return str(category) if category else "other"

    @property
    def multi_turn(self) -> bool:
        """Whether the item has several turns (only a kind of conversation has)."""
        return False

    @property
    def judged_turns(self) -> tuple[int | None, ...]:
        """The turns a judge scores one by one (indices, 0 for the first), or ``(None,)``: the answer as a whole."""
        return (None,)

    @property
    def mix_meta(self) -> MixMeta | None:
        """How the kit mixed the item's audio from its sources; None when it did not (or the kind is never mixed)."""
        return None

    @property
    def text_to_speak(self) -> str | None:
        """The text the model is asked to read aloud; None for an item that asks a question."""
        return None

    def turn_question(self, turn: int | None) -> str:
        """The question of turn ``turn`` (0 for the first), or the item's question when ``turn`` is None.

        Args:
            turn: Index of the turn; None for the item as a whole.
        """
        return self.question

    def turn_reference(self, turn: int | None) -> str | None:
        """The reference answer a judge compares turn ``turn``'s answer with; None for a kind judged without one.

        Args:
            turn: Index of the turn (0 for the first); None for the item as a whole.
        """
        return None


class SingleChoiceItem(ItemBase):
    """A single-choice question: lettered options, one of them right (the shared base of the closed-set kinds).

    AIR-Bench's Foundation items (:class:`~airbench_nb.records.airbench.FoundationItem`) and the tiered benchmark's
    closed set (:class:`~airbench_nb.records.tiered.SoundSourceItem`) are single-choice items: prompted with their
    lettered options, answered by a letter, judged by which option the answer chose. Each kind names its own
    ``kind``, ``task`` and ``category`` and checks them (and ``answer`` against ``choices``) in its own validator.
    """

    kind: str
    """Record kind, so that a manifest line says what it holds."""
    task: str
    """The task the question belongs to."""
    category: str | None = None
    """The task's category."""
    choices: Annotated[list[str], Field(min_length=2, max_length=MAX_CHOICES)]
    """The 2 to 26 answer options, in the order shown to the model (A, B, C, ...; AIR-Bench's items have 2 to 4)."""
    answer: StrictInteger
    """Index into ``choices`` of the correct option (0 for A)."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Ground truth and provenance of the item (transcript, pitch, event times, ...)."""

    ANSWERED_BY_TEXT: ClassVar[bool] = False
    """Whether the kind asks for the text of an option rather than its letter (MMAU, MMAR): it is prompted with its
    options unlettered (:func:`airbench_nb.prompts.text_answer_prompt`), the baselines answer options' texts, and the
    rule judge reads an answer naming exactly one option's text as that option before it looks for letters."""

    @field_validator("choices")
    @classmethod
    def _choices_distinct(cls, value: list[str]) -> list[str]:
        if any(not c.strip() for c in value):
            raise ValueError("choices may not be empty strings")
        if len({c.strip().casefold() for c in value}) != len(value):
            raise ValueError(f"choices must be distinct, got {value!r}")
        return value

    @property
    def answer_letter(self) -> str:
        """The letter (A-Z, within the item's options) of the correct choice."""
        return LETTERS[self.answer]

    def option_letters(self) -> list[str] | None:
        """The option letters (``A``, ``B``, ...), or None for a kind asked for an option's text (MMAU, MMAR)."""
        return None if self.ANSWERED_BY_TEXT else list(LETTERS[: len(self.choices)])

    def answer_option(self, index: int) -> int:
        """The option an answer choosing option ``index`` stands for: the first option of the same text.

        Options are distinct in every kind but the two answered by text (MMAU, MMAR), whose releases repeat an
        option now and then (``["four", "nine", "fourteen", "fourteen"]``): there the options of one text (compared
        as :func:`option_key` says) are one answer, the first of them, as their official word match reads them. Any
        other kind, or an index outside the options, gets ``index`` back.

        Args:
            index: Index of the option an answer chose (0 for A).
        """
        if not self.ANSWERED_BY_TEXT or not 0 <= index < len(self.choices):
            return index
        key = option_key(self.choices[index])
        return next(k for k, choice in enumerate(self.choices) if option_key(choice) == key)

    def chose_gold(self, index: int) -> bool:
        """Whether choosing option ``index`` is the right answer (an option of the gold's text counts as the gold)."""
        return self.answer_option(index) == self.answer_option(self.answer)


def option_key(text: str) -> str:
    """An option's text as options are compared: stripped of spaces, enclosing quotes and a final period, case folded.

    Two options of one key are the same answer to a kind answered by text (:meth:`SingleChoiceItem.answer_option`),
    and the rule judge reads an answer of that key as that option (:func:`airbench_nb.judge.rule.exact_option`).
    """
    return text.strip().strip("\"'`").strip().removesuffix(".").strip().casefold()


class ReferenceItemBase(ItemBase):
    """An open-ended item scored against a reference (schema 3).

    Its answer is free text, read by the output parser (:mod:`airbench_nb.unify`) and scored by the metrics the kind
    names.
    """

    task: str
    """Task name (one of :data:`REFERENCE_TASKS`, e.g. ``sseu_transcription``)."""
    category: str | None = None
    """Category of the task (speech, sound, joint); derived from ``task`` when omitted and checked against it."""
    clip_id: str | None = None
    """Identifier of the clip the item asks about; the transcription, scene, events and joint items of one clip share
    it, so that independent and joint answers are compared on the same audio. None when the item stands alone."""
    snr_db: float | None = None
    """SNR in dB of the speech over the whole background the clip was mixed at (as asked; the measured value is in
    ``mix``); None for clean speech and for items without a background."""
    mix: MixMeta | None = None
    """How the audio was mixed, for items the kit built; None otherwise."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Ground truth and provenance of the item (voice, sentence, event times, ...)."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        if value not in REFERENCE_TASKS:
            raise _unknown_task(value, REFERENCE_TASKS, "reference-scored")
        return value

    @model_validator(mode="after")
    def _category(self) -> Any:
        expected = REFERENCE_TASKS[self.task]
        if self.category is None:
            object.__setattr__(self, "category", expected)
        elif self.category != expected:
            raise ValueError(f"category {self.category!r} does not match task {self.task!r} (expected {expected!r})")
        return self

    @property
    def prompting_mode(self) -> str:
        """How the item's task was asked: ``independent`` (one task per prompt) unless the kind says otherwise."""
        return "independent"

    @property
    def mix_meta(self) -> MixMeta | None:
        """How the kit mixed the item's audio (``mix``); None when it did not."""
        return self.mix
