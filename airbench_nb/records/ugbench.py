"""UG-Bench's open-ended item kinds (schema 4): translation, captioning and speech generation."""

from __future__ import annotations

import logging
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from airbench_nb.records.checks import LanguageTag
from airbench_nb.records.item import ReferenceItemBase

logger = logging.getLogger(__name__)


def _check_texts(value: list[str], field: str) -> list[str]:
    for v in value:
        if not isinstance(v, str) or not v.strip():
            raise ValueError(f"{field} may not hold empty texts")
    return value


class TranslationItem(ReferenceItemBase):
    """Translate the speech of a clip into another language; scored by corpus BLEU and chrF (sacrebleu)."""

    METRICS: ClassVar[tuple[str, ...]] = ("bleu", "chrf")
    """The metrics that score this kind of item."""

    kind: Literal["translation"] = "translation"
    """Record kind, so that a manifest line says what it holds."""
    source_language: LanguageTag
    """Language of the speech (ISO 639-1, e.g. ``de``)."""
    target_language: LanguageTag
    """Language the answer must be in (ISO 639-1, e.g. ``en``); it chooses sacrebleu's tokenizer."""
    source_text: str | None = None
    """What was said, in the source language (provenance; not shown to the model)."""
    references: Annotated[list[str], Field(min_length=1)]
    """Reference translations (one or more, as written: BLEU and chrF are computed on cased, untokenized text)."""

    @field_validator("references")
    @classmethod
    def _references_given(cls, value: list[str]) -> list[str]:
        return _check_texts(value, "references")

    @model_validator(mode="after")
    def _languages_differ(self) -> TranslationItem:
        if self.source_language == self.target_language:
            raise ValueError(f"source_language and target_language are both {self.source_language!r}")
        return self


class CaptionItem(ReferenceItemBase):
    """Describe a clip (a sound scene or a piece of music) in one sentence; scored by captioning metrics."""

    METRICS: ClassVar[tuple[str, ...]] = ("cider_d", "caption_similarity")
    """The metrics that score this kind of item."""

    kind: Literal["caption"] = "caption"
    """Record kind, so that a manifest line says what it holds."""
    references: Annotated[list[str], Field(min_length=1)]
    """Reference captions (3-5 as in Clotho and AudioCaps; every item of a set should have the same number)."""

    @field_validator("references")
    @classmethod
    def _references_given(cls, value: list[str]) -> list[str]:
        return _check_texts(value, "references")


class SpeechGenerationItem(ReferenceItemBase):
    """Answer aloud: speak a text (``tts``) or answer a spoken question by speaking (``spoken_answer``).

    The response is audio (:attr:`Response.audio`), transcribed back by an ASR judge (``asr:<model>``) and scored
    against :attr:`text` (WER and CER) or :attr:`answers` (whether an accepted answer is heard); its naturalness is
    rated by listeners (the MOS listening test).
    """

    METRICS: ClassVar[tuple[str, ...]] = ("speech_output", "spoken_answer")
    """The metrics that score this kind of item."""

    kind: Literal["speech_generation"] = "speech_generation"
    """Record kind, so that a manifest line says what it holds."""
    text: str | None = None
    """``tts``: the text to speak, the reference of the back-transcription; None for ``spoken_answer``."""
    answers: list[str] = Field(default_factory=list)
    """``spoken_answer``: the accepted answers (any one heard in the back-transcription is right); empty for
    ``tts``."""
    language: LanguageTag = "en"
    """Language the answer must be spoken in (ISO 639-1)."""

    @field_validator("answers")
    @classmethod
    def _answers_given(cls, value: list[str]) -> list[str]:
        return _check_texts(value, "answers")

    @model_validator(mode="after")
    def _target_given(self) -> SpeechGenerationItem:
        if self.task == "tts" and not (self.text or "").strip():
            raise ValueError("a tts item needs the text to speak (text)")
        if self.task == "spoken_answer" and not self.answers:
            raise ValueError("a spoken_answer item needs its accepted answers (answers)")
        if self.task not in {"tts", "spoken_answer"}:
            raise ValueError(f"task {self.task!r} is not a speech generation task (tts, spoken_answer)")
        return self

    @property
    def text_to_speak(self) -> str | None:
        """``tts``: the text to speak (``text``); None for ``spoken_answer``, which asks a question."""
        return self.text if self.task == "tts" and self.text else None
