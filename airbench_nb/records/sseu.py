"""SSEU-Bench's item kinds (schema 3): transcription, scene, events, and all three in one prompt (joint)."""

from __future__ import annotations

import logging
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from airbench_nb.records.checks import LanguageTag, _not_blank
from airbench_nb.records.item import ReferenceItemBase

logger = logging.getLogger(__name__)


def _check_classes(value: list[str], field: str) -> list[str]:
    if any(not c.strip() for c in value):
        raise ValueError(f"{field} may not hold empty class names")
    folded = [c.strip().casefold() for c in value]
    repeated = sorted({c for c in folded if folded.count(c) > 1})
    if repeated:
        raise ValueError(f"{field} names a class twice: {', '.join(repeated)}")
    return value


class TranscriptionItem(ReferenceItemBase):
    """Transcribe the speech of a clip; scored by word error rate against the reference transcript."""

    METRICS: ClassVar[tuple[str, ...]] = ("wer",)
    """The metrics that score this kind of item (names in :data:`airbench_nb.scoring.metrics.METRICS`)."""

    kind: Literal["transcription"] = "transcription"
    """Record kind, so that a manifest line says what it holds."""
    reference: str
    """The reference transcript (what was said, as written; both sides are normalised before scoring)."""
    language: LanguageTag = "en"
    """Language of the speech (ISO 639-1); languages written without spaces are scored by character error rate."""

    @field_validator("reference")
    @classmethod
    def _reference_given(cls, value: str) -> str:
        return _not_blank(value, "reference")

    def gold_parts(self) -> dict[str, dict[str, Any]]:
        """The gold of each part of an answer this item asks for (``transcript``: reference and language)."""
        return {"transcript": {"reference": self.reference, "language": self.language}}


class SceneItem(ReferenceItemBase):
    """Name the acoustic scene of a clip; scored by balanced accuracy (mACC) over the class list."""

    METRICS: ClassVar[tuple[str, ...]] = ("scene_macc",)
    """The metrics that score this kind of item."""

    kind: Literal["scene"] = "scene"
    """Record kind, so that a manifest line says what it holds."""
    classes: Annotated[list[str], Field(min_length=2)]
    """The scene classes (at least two, distinct); a free-text answer is mapped onto them."""
    label: str
    """The gold scene, one of ``classes``."""

    @field_validator("classes")
    @classmethod
    def _classes_distinct(cls, value: list[str]) -> list[str]:
        return _check_classes(value, "classes")

    @model_validator(mode="after")
    def _label_known(self) -> SceneItem:
        if self.label not in self.classes:
            raise ValueError(f"label {self.label!r} is not one of classes {self.classes!r}")
        return self

    def gold_parts(self) -> dict[str, dict[str, Any]]:
        """The gold of each part of an answer this item asks for (``scene``: the gold class and the class list)."""
        return {"scene": {"gold": self.label, "classes": tuple(self.classes)}}


class EventsItem(ReferenceItemBase):
    """List the sound events of a clip; scored by mean average precision (mAP) over the class list."""

    METRICS: ClassVar[tuple[str, ...]] = ("event_map",)
    """The metrics that score this kind of item."""

    kind: Literal["events"] = "events"
    """Record kind, so that a manifest line says what it holds."""
    classes: Annotated[list[str], Field(min_length=2)]
    """The event classes (at least two, distinct); each predicted event is mapped onto them."""
    labels: list[str]
    """The gold events, each one of ``classes`` (none repeated; empty when the clip carries none)."""

    @field_validator("classes")
    @classmethod
    def _classes_distinct(cls, value: list[str]) -> list[str]:
        return _check_classes(value, "classes")

    @model_validator(mode="after")
    def _labels_known(self) -> EventsItem:
        unknown = [label for label in self.labels if label not in self.classes]
        if unknown:
            raise ValueError(f"labels {unknown!r} are not among classes {self.classes!r}")
        if len(set(self.labels)) != len(self.labels):
            raise ValueError(f"labels repeat an event: {self.labels!r}")
        return self

    def gold_parts(self) -> dict[str, dict[str, Any]]:
        """The gold of each part of an answer this item asks for (``events``: the gold classes and the class list)."""
        return {"events": {"gold": tuple(self.labels), "classes": tuple(self.classes)}}


class JointItem(ReferenceItemBase):
    """All three SSEU tasks of a clip in one prompt.

    Its transcript, scene and events are scored by the three metrics, like the independent items of the same clip.
    """

    METRICS: ClassVar[tuple[str, ...]] = ("wer", "scene_macc", "event_map")
    """The metrics that score this kind of item (each reads its part of the answer)."""

    kind: Literal["joint"] = "joint"
    """Record kind, so that a manifest line says what it holds."""
    prompting: Literal["joint", "sseu-cot"] = "joint"
    """How the three tasks are asked: SSEU-Bench's single prompt (``joint``) or its five-step chain of thought
    (``sseu-cot``); see :data:`PROMPTINGS`."""
    reference: str
    """The reference transcript."""
    language: LanguageTag = "en"
    """Language of the speech (ISO 639-1)."""
    scene_classes: Annotated[list[str], Field(min_length=2)]
    """The scene classes."""
    scene_label: str
    """The gold scene, one of ``scene_classes``."""
    event_classes: Annotated[list[str], Field(min_length=2)]
    """The event classes."""
    event_labels: list[str]
    """The gold events, each one of ``event_classes``."""

    @field_validator("scene_classes", "event_classes")
    @classmethod
    def _classes_distinct(cls, value: list[str]) -> list[str]:
        return _check_classes(value, "classes")

    @field_validator("reference")
    @classmethod
    def _reference_given(cls, value: str) -> str:
        return _not_blank(value, "reference")

    @model_validator(mode="after")
    def _gold_known(self) -> JointItem:
        if self.scene_label not in self.scene_classes:
            raise ValueError(f"scene_label {self.scene_label!r} is not one of scene_classes {self.scene_classes!r}")
        unknown = [label for label in self.event_labels if label not in self.event_classes]
        if unknown:
            raise ValueError(f"event_labels {unknown!r} are not among event_classes {self.event_classes!r}")
        if len(set(self.event_labels)) != len(self.event_labels):
            raise ValueError(f"event_labels repeat an event: {self.event_labels!r}")
        return self

    @property
    def prompting_mode(self) -> str:
        """How the three tasks were asked: the item's ``prompting``."""
        return self.prompting

    def gold_parts(self) -> dict[str, dict[str, Any]]:
        """The gold of each part of an answer this item asks for: ``transcript``, ``scene`` and ``events``."""
        return {
            "transcript": {"reference": self.reference, "language": self.language},
            "scene": {"gold": self.scene_label, "classes": tuple(self.scene_classes)},
            "events": {"gold": tuple(self.event_labels), "classes": tuple(self.event_classes)},
        }
