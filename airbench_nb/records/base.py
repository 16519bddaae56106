"""The base of every record: the schema version, :class:`Record`, and what an audio check found."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, field_validator

from airbench_nb.records.checks import StrictInteger

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 4
"""Version of the record shapes of :mod:`airbench_nb.records`. Bump it when a field changes meaning or type.

2: items may carry several clips (``audios``) and Chat items several turns (``turns``); responses carry the
answer to each turn and the generation settings; verdicts the turn they judged.
3: open-ended items scored against references (:class:`TranscriptionItem`, :class:`SceneItem`,
:class:`EventsItem`, :class:`JointItem`). Every version-1 and version-2 line still reads, with the same meaning
(``tests/test_schema_v1.py``).
4: UG-Bench's open-ended kinds (:class:`TranslationItem`, :class:`CaptionItem`, :class:`SpeechGenerationItem`) and
spoken answers (:attr:`Response.audio`). Older lines read unchanged. The tiered sound-source kinds
(:class:`SoundSourceItem`, :class:`OpenSourceItem`), :attr:`Verdict.hits` and :attr:`Response.option_probs` came
later as additions within version 4 (new kinds and optional fields: every older line reads unchanged). A line of a
newer version than this is refused (file, line and field named): its meaning is not known to this kit."""


class AudioStatus(StrEnum):
    """What the kit found when it checked an item's audio file."""

    ok = "ok"
    """Readable, with at least one sample."""
    missing = "missing"
    """No file at the item's path."""
    empty = "empty"
    """The file has zero bytes, or a valid header and zero samples."""
    corrupt = "corrupt"
    """The file exists but neither soundfile nor librosa can decode it, or it is truncated (fewer frames than its
    header promises) or holds NaN or infinite samples."""


class Record(BaseModel):
    """Base of every record: strict about unknown fields, versioned."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)

    schema_version: StrictInteger = SCHEMA_VERSION
    """Version of the record shape this line was written with (see ``SCHEMA_VERSION``)."""

    @field_validator("schema_version")
    @classmethod
    def _version_known(cls, value: int) -> int:
        if value > SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {value} is newer than this kit reads (versions 1 to {SCHEMA_VERSION}): "
                "a newer airbench-nb wrote it; upgrade airbench-nb to read it"
            )
        if value < 1:
            raise ValueError(f"schema_version {value} is not a version (this kit reads 1 to {SCHEMA_VERSION})")
        return value


def _now() -> datetime:
    return datetime.now(UTC)
