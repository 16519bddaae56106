"""Typed records of the kit: benchmark items, mix metadata, model responses, verdicts and runs.

Every record is a pydantic v2 model with a docstring per field and a ``schema_version``. Records are
written one per line to JSONL manifests (see :mod:`airbench_nb.manifests`).

Task names and categories follow the official AIR-Bench release, misspellings included
(``Speaker_Emotion_Recontion``, ``Music_Instruments_Classfication``, ...).
"""

from __future__ import annotations

import logging
import numbers
import re
import unicodedata
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import PurePosixPath, PureWindowsPath
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 4
"""Version of the record shapes below. Bump it when a field changes meaning or type.

2: items may carry several clips (``audios``) and Chat items several turns (``turns``); responses carry the
answer to each turn and the generation settings; verdicts the turn they judged.
3: open-ended items scored against references (:class:`TranscriptionItem`, :class:`SceneItem`,
:class:`EventsItem`, :class:`JointItem`). Every version-1 and version-2 line still reads, with the same meaning
(``tests/test_schema_v1.py``).
4: UG-Bench's open-ended kinds (:class:`TranslationItem`, :class:`CaptionItem`, :class:`SpeechGenerationItem`) and
spoken answers (:attr:`Response.audio`). Older lines read unchanged. The tiered sound-source kinds
(:class:`SoundSourceItem`, :class:`OpenSourceItem`) and :attr:`Verdict.hits` came later as additions within
version 4 (new kinds and an optional field: every older line reads unchanged). A line of a newer version than this
is refused (file, line and field named): its meaning is not known to this kit."""

FOUNDATION_TASKS: dict[str, str] = {
    # speech (9)
    "Speech_Grounding": "speech",
    "Spoken_Language_Identification": "speech",
    "Speaker_Gender_Recognition": "speech",
    "Speaker_Emotion_Recontion": "speech",
    "Speaker_Age_Prediction": "speech",
    "Speech_Entity_Reconition": "speech",
    "Speaker_Intent_Classification": "speech",
    "Speaker_Number_Verification": "speech",
    "Synthesized_Voice_Detection": "speech",
    # sound (4)
    "Audio_Grounding": "sound",
    "vocal_sound_classification": "sound",
    "Acoustic_Scene_Classification": "sound",
    "Sound_AQA": "sound",
    # music (6)
    "Music_Instruments_Classfication": "music",
    "Music_Genre_Recognition": "music",
    "Music_Midi_Pitch_Analysis": "music",
    "Music_Midi_Velocity_Analysis": "music",
    "Music_AQA": "music",
    "Music_Mood_Recognition": "music",
}
"""The 19 Foundation task names of the official release, spelled as there, mapped to their category."""

CHAT_TASKS: dict[str, str] = {
    "speech_QA": "speech",
    "speech_dialogue_QA": "speech",
    "sound_QA": "sound",
    "sound_generation_QA": "sound",
    "music_QA": "music",
    "music_generation_analysis_QA": "music",
    "speech_and_sound_QA": "mixed",
    "speech_and_music_QA": "mixed",
}
"""The 8 Chat task names of the official release mapped to their category."""

KIT_FOUNDATION_TASKS: dict[str, str] = {
    "kit_pitch_compare": "multi-clip",
    "kit_same_speaker": "multi-clip",
    "kit_more_events": "multi-clip",
    "kit_louder_clip": "multi-clip",
}
"""The kit's own Foundation tasks, outside the official list (``kit_`` prefix): questions about several clips.

Their category, ``multi-clip``, is not one of AIR-Bench's: tables show it apart and official-shaped averages leave
it out."""

KIT_CHAT_TASKS: dict[str, str] = {"kit_followup_QA": "multi-turn"}
"""The kit's own Chat tasks: follow-up questions about one mix (category ``multi-turn``, outside the averages)."""

ALL_FOUNDATION_TASKS: dict[str, str] = {**FOUNDATION_TASKS, **KIT_FOUNDATION_TASKS}
"""Every Foundation task an item may name: the official ones and the kit's own."""
ALL_CHAT_TASKS: dict[str, str] = {**CHAT_TASKS, **KIT_CHAT_TASKS}
"""Every Chat task an item may name: the official ones and the kit's own."""

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""Option letters, in option order: an item with ``n`` options uses ``LETTERS[:n]`` (AIR-Bench's items have two to
four, A-D; the kit's closed-set items up to :data:`MAX_CHOICES`, A-Z)."""

MAX_CHOICES = len(LETTERS)
"""Most options a single-choice item may have (26, one per capital letter)."""

AIRBENCH_LETTERS = LETTERS[:4]
"""The letters AIR-Bench's official scripts know (A-D): an item of up to four options is read with exactly these."""

REFERENCE_TASKS: dict[str, str] = {
    "sseu_transcription": "speech",
    "sseu_scene": "sound",
    "sseu_events": "sound",
    "sseu_joint": "joint",
    "speech_translation": "speech",
    "audio_captioning": "sound",
    "music_captioning": "music",
    "tts": "speech_generation",
    "spoken_answer": "speech_generation",
}
"""Tasks of the items scored against references, mapped to their category. SSEU-Bench (Yin & Choi,
ICASSP 2026) asks three tasks about one clip of speech over a real-world background: ASR, acoustic scene
classification and audio event tagging, one per prompt ("independent") or all three in one ("joint") (schema 3).
UG-Bench adds speech-to-text translation, audio and music captioning, and speech generation: text to speech
(``tts``) and questions answered aloud (``spoken_answer``) (schema 4)."""

REFERENCE_KINDS: tuple[str, ...] = (
    "transcription",
    "scene",
    "events",
    "joint",
    "translation",
    "caption",
    "speech_generation",
)
"""Item kinds scored against references, in pipeline order."""

TIERED_KINDS: tuple[str, ...] = ("sound_source", "sound_source_open")
"""The tiered sound-source benchmark's item kinds (Abdoli et al.): the closed set of lettered classes
(:class:`SoundSourceItem`: tier A LALMs, tier B classifiers, tier C CLAP) and the open-vocabulary question about the
same clips (:class:`OpenSourceItem`: tier D)."""

ITEM_KINDS: tuple[str, ...] = ("foundation", "chat", *REFERENCE_KINDS, *TIERED_KINDS)
"""Every item kind (manifest ``<kind>.jsonl``), in pipeline order."""

SOUND_SOURCE_TASK = "sound_source"
"""The task of every :class:`SoundSourceItem` (category ``sound``)."""
OPEN_SOURCE_TASK = "sound_source_open"
"""The task of every :class:`OpenSourceItem` (category ``sound``)."""

PROMPTINGS: tuple[str, ...] = ("independent", "joint", "sseu-cot")
"""How a clip's tasks are asked: one task per prompt (``independent``: transcription, scene and events items), all
three in SSEU-Bench's single prompt (``joint``), or in its five-step chain-of-thought prompt (``sseu-cot``)."""

FoundationCategory = Literal["speech", "sound", "music", "multi-clip"]
ChatCategory = Literal["speech", "sound", "music", "mixed", "multi-turn"]


class UnknownTaskError(ValueError):
    """A task name that is not one of the official AIR-Bench task names."""


def _unknown_task(task: str, valid: dict[str, str], benchmark: str) -> UnknownTaskError:
    names = ", ".join(sorted(valid, key=str.lower))
    return UnknownTaskError(f"unknown {benchmark} task {task!r}; valid task names are: {names}")


def foundation_category(task: str) -> str:
    """Return the category (speech, sound, music, or multi-clip for the kit's own tasks) of a Foundation task.

    Args:
        task: An official Foundation task name, e.g. ``"Speaker_Gender_Recognition"``, or one of
            :data:`KIT_FOUNDATION_TASKS`.

    Returns:
        The category name.

    Raises:
        UnknownTaskError: If ``task`` is neither; the message lists the valid names.
    """
    try:
        return ALL_FOUNDATION_TASKS[task]
    except KeyError:
        raise _unknown_task(task, ALL_FOUNDATION_TASKS, "Foundation") from None


def chat_category(task: str) -> str:
    """Return the category (speech, sound, music, mixed, or multi-turn for the kit's own tasks) of a Chat task.

    Args:
        task: An official Chat task name, e.g. ``"speech_and_music_QA"``, or one of :data:`KIT_CHAT_TASKS`.

    Returns:
        The category name.

    Raises:
        UnknownTaskError: If ``task`` is neither; the message lists the valid names.
    """
    try:
        return ALL_CHAT_TASKS[task]
    except KeyError:
        raise _unknown_task(task, ALL_CHAT_TASKS, "Chat") from None


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


def _strict_int(value: Any) -> Any:
    """Refuse what pydantic's lax mode would turn into an int: booleans, strings and floats."""
    if isinstance(value, bool | str | bytes | float):
        raise ValueError(f"expected an integer, got {type(value).__name__} {value!r}")
    if isinstance(value, numbers.Integral):  # numpy integers from the builders
        return int(value)
    return value


StrictInteger = Annotated[int, BeforeValidator(_strict_int)]
"""An int field that refuses ``true``, ``"1"`` and ``1.0`` (pydantic's lax mode would accept them)."""


def _strict_bool(value: Any) -> Any:
    """Refuse what pydantic's lax mode would turn into a bool: ``"yes"``, ``"true"``, ``1``, ``0``, ``"off"``."""
    if isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ in {"bool", "bool_"}:  # numpy's bool from scoring
        return bool(value)
    raise ValueError(f"expected true or false, got {type(value).__name__} {value!r}")


StrictBoolean = Annotated[bool, BeforeValidator(_strict_bool)]
"""A bool field that accepts only ``true`` and ``false`` (pydantic's lax mode would take ``"yes"``, ``1``, ``"on"``)."""

LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")
"""What a language field holds: an ISO 639 code, optionally with BCP 47 subtags (``en``, ``en-us``, ``en_GB``,
``zh-Hans-CN``, ``yue``); no path, no space, no character outside ASCII letters and digits."""


def check_language(value: str) -> str:
    """Validate a language field (:data:`LANGUAGE_TAG`).

    Raises:
        ValueError: Naming the value and what a language tag looks like.
    """
    if not LANGUAGE_TAG.fullmatch(value):
        raise ValueError(
            f"language {value!r} is not a language tag: an ISO 639 code, optionally with subtags (en, en-us, de, zh)"
        )
    return value


LanguageTag = Annotated[str, AfterValidator(check_language)]
"""A language field: an ISO 639 code with optional subtags (:func:`check_language`)."""

BIDI_CONTROLS: frozenset[str] = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Unicode's direction marks, embeddings, overrides and isolates: text holding them can show as something else
(reversed, reordered) on a page, so names that reach pages may not hold them."""


def check_no_bidi(value: str, what: str) -> str:
    """Refuse a text holding a direction-control character (:data:`BIDI_CONTROLS`).

    Args:
        value: The text.
        what: What the text is, for the message (``class name``, ``choices``, ...).

    Raises:
        ValueError: Naming the character, its code point and position.
    """
    for index, char in enumerate(value):
        if char in BIDI_CONTROLS:
            name = unicodedata.name(char, "unnamed")
            raise ValueError(
                f"{what} {value!r} holds the direction-control character U+{ord(char):04X} ({name}) at position "
                f"{index}; names may hold no direction controls"
            )
    return value


def _not_blank(value: str, field: str) -> str:
    """Refuse an empty or all-whitespace text where one is required."""
    if not value.strip():
        raise ValueError(f"{field} is empty; give the text")
    return value


Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""A duration in seconds: finite and 0 or more."""

_UID_FORBIDDEN = {
    "Cc": "control character",
    "Cf": "format (zero-width) character",
    "Cs": "surrogate",
    "Zl": "line separator",
    "Zp": "paragraph separator",
}


def check_uid(value: str) -> str:
    """Validate an item uid: NFC-normalised, without control, format (zero-width) or separator characters.

    Two uids that look the same must be the same string, or an answer would not find its item.

    Args:
        value: The uid as written.

    Returns:
        The uid in Unicode normal form C.

    Raises:
        ValueError: Naming the offending character and its position.
    """
    value = unicodedata.normalize("NFC", value)
    for index, char in enumerate(value):
        kind = _UID_FORBIDDEN.get(unicodedata.category(char))
        if kind is not None:
            name = unicodedata.name(char, "unnamed")
            raise ValueError(
                f"uid {value!r} holds a {kind} U+{ord(char):04X} ({name}) at position {index}; "
                "uids may hold no control, zero-width or separator characters"
            )
    return value


def check_relative_audio_path(value: str) -> str:
    """Validate an audio path stored in a record: relative, POSIX, inside the data root.

    Args:
        value: The path as written in the manifest.

    Returns:
        The path, normalised to forward slashes without ``./`` parts.

    Raises:
        ValueError: If the path is empty, absolute (POSIX or Windows style), contains ``..`` or a control character.
    """
    if not value or not value.strip():
        raise ValueError("audio path is empty")
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise ValueError(f"audio path {value!r} holds a control character")
    if "\\" in value:
        raise ValueError(f"audio path {value!r} uses backslashes; write it with forward slashes")
    if value.startswith("/") or PureWindowsPath(value).is_absolute() or PureWindowsPath(value).drive:
        raise ValueError(f"audio path {value!r} is absolute; paths must be relative to the data root")
    parts = PurePosixPath(value).parts
    if ".." in parts:
        raise ValueError(f"audio path {value!r} contains '..'; paths may not leave the data root")
    return str(PurePosixPath(*[p for p in parts if p != "."]))


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


class MixMeta(Record):
    """How a two-source mix was made, and what was measured on it (see :mod:`airbench_nb.mix`).

    Source A is usually speech, source B music or a sound. Times are in seconds on the mix's timeline, and
    offsets are relative to A's start. Each source is first normalised to ``reference_loudness``, then given its
    gain; the whole mix is then multiplied by ``scale`` (clipping protection), which leaves the relative levels
    unchanged. SNR is the energy ratio of the two scaled components over the samples where both clips play.
    """

    source_a: str
    """Path of source A as the caller gave it (relative to the data root when the mix belongs to a manifest)."""
    source_b: str
    """Path of source B, as given."""
    sha256_a: str | None = None
    """SHA-256 of source A's file, when it came from a file."""
    sha256_b: str | None = None
    """SHA-256 of source B's file, when it came from a file."""
    sample_rate: StrictInteger = 16000
    """Sample rate of the mix in Hz."""
    reference_loudness: float = -23.0
    """Common loudness reference each source is normalised to before its gain (in ``loudness_unit``)."""
    gain_a_db: float
    """Gain applied to A in dB, relative to the common loudness reference (the clipping ``scale`` comes on top)."""
    gain_b_db: float
    """Gain applied to B in dB, relative to the common loudness reference (the clipping ``scale`` comes on top)."""
    snr_db_requested: float | None = None
    """SNR of A over B that was asked for (SSEU-Bench style), or None when gains were given directly."""
    snr_db_measured: float | None = None
    """SNR of A over B in dB: ``10 log10(sum a**2 / sum b**2)`` over the overlap, on the two scaled components.

    None when one component is all zero over the overlap (the ratio is then 0 or infinite).
    """
    loudness_a: float | None = None
    """Loudness of scaled A over its own extent (LUFS, or dBFS RMS for clips too short for gating; see
    ``loudness_unit``)."""
    loudness_b: float | None = None
    """Loudness of scaled B over its own extent (same unit as ``loudness_a``)."""
    loudness_unit: Literal["LUFS", "dBFS"] = "LUFS"
    """Unit of the loudness fields: ``LUFS`` (ITU-R BS.1770) or ``dBFS`` (RMS fallback, used for both sources
    when either is too short or too quiet for gating)."""
    offset_s: float = 0.0
    """Start of B minus start of A in seconds, a whole number of samples (negative: B starts first)."""
    duration_a_s: float
    """Duration of A in seconds."""
    duration_b_s: float
    """Duration of B in seconds."""
    duration_s: float
    """Duration of the mix in seconds: from the first clip's start to the last clip's end."""
    overlap_s: float | None = None
    """Seconds during which both clips play (the region the SNR is measured on)."""
    onset_a_s: float | None = None
    """Audible onset of A on the mix's timeline: first 10 ms frame within 35 dB of A's loudest frame."""
    onset_b_s: float | None = None
    """Audible onset of B on the mix's timeline (same rule as ``onset_a_s``)."""
    louder: Literal["A", "B", "equal"]
    """Which scaled source is louder (``loudness_a`` vs ``loudness_b``); ``equal`` within ``louder_tolerance_db``."""
    louder_tolerance_db: float = 1.0
    """Loudness difference in dB at or under which ``louder`` is ``equal``."""
    ahead: Literal["meanwhile", "before", "after"]
    """When A starts relative to B, by audible onsets: ``before`` (A first), ``after`` (B first) or ``meanwhile``
    (onsets within ``meanwhile_tolerance_s``)."""
    meanwhile_tolerance_s: float = 0.1
    """Largest onset difference in seconds for which ``ahead`` is ``meanwhile``."""
    scale: float = 1.0
    """Factor applied to the whole mix to avoid clipping (1.0 when none was needed)."""
    peak_limit: float | None = 0.99
    """Peak the mix and each of its components were kept under by ``scale`` (None: no clipping protection was
    asked for)."""


class _ItemBase(Record):
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


class FoundationItem(_ItemBase):
    """A Foundation single-choice question about one audio clip."""

    METRICS: ClassVar[tuple[str, ...]] = ("choice_accuracy",)
    """The metrics that score this kind of item (names in :data:`airbench_nb.scoring.metrics.METRICS`)."""

    kind: Literal["foundation"] = "foundation"
    """Record kind, so that a manifest line says what it holds."""
    task: str
    """Official Foundation task name (e.g. ``Speaker_Gender_Recognition``), or one of the kit's own
    (:data:`KIT_FOUNDATION_TASKS`)."""
    category: FoundationCategory | None = None
    """speech, sound, music (or multi-clip for the kit's tasks); derived from ``task`` when omitted and checked
    against it when given."""
    choices: Annotated[list[str], Field(min_length=2, max_length=MAX_CHOICES)]
    """The 2 to 26 answer options, in the order shown to the model (A, B, C, ...; AIR-Bench's items have 2 to 4)."""
    answer: StrictInteger
    """Index into ``choices`` of the correct option (0 for A)."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Ground truth and provenance of the item (transcript, pitch, event times, ...)."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        foundation_category(value)
        return value

    @field_validator("choices")
    @classmethod
    def _choices_distinct(cls, value: list[str]) -> list[str]:
        if any(not c.strip() for c in value):
            raise ValueError("choices may not be empty strings")
        if len({c.strip().casefold() for c in value}) != len(value):
            raise ValueError(f"choices must be distinct, got {value!r}")
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

    @property
    def answer_letter(self) -> str:
        """The letter (A-Z, within the item's options) of the correct choice."""
        return LETTERS[self.answer]


def _check_hierarchy_lists(classes: list[str], categories: list[str], size: int, what: str) -> None:
    if len(classes) != size:
        raise ValueError(f"classes has {len(classes)} entries for {size} {what}")
    if len(categories) != size:
        raise ValueError(f"categories has {len(categories)} entries for {size} {what}")
    if any(not c.strip() for c in [*classes, *categories]):
        raise ValueError("classes and categories may not hold empty names")
    for name in [*classes, *categories]:
        check_no_bidi(name, "class or category name")
    if len(set(classes)) != len(classes):
        repeated = sorted({c for c in classes if classes.count(c) > 1})
        raise ValueError(f"classes names a fine class twice: {', '.join(repeated)}")
    clash = sorted(set(classes) & set(categories))
    if clash:
        raise ValueError(f"a name is both a fine class and a category: {', '.join(clash)}")


class SoundSourceItem(FoundationItem):
    """A closed-set "what made that sound?" question of the tiered sound-source benchmark.

    One lettered option per fine class (up to 26). ``classes`` and ``categories`` give each option's fine class and
    coarse category, so an item carries its hierarchy: every metric is computed at both granularities, a fine
    prediction implying its category (:mod:`airbench_nb.scoring.tiered`). LALMs choose a letter (tier A), read by
    the rule judge like a Foundation answer; classifiers (tier B) and CLAP (tier C) rank the options. Scored apart
    from AIR-Bench's Foundation tasks (never in their averages): :mod:`airbench_nb.analysis.tiered_run`.
    """

    METRICS: ClassVar[tuple[str, ...]] = ("tier_closed_set",)
    """Its tier's scores in the score table (``tier_A|B|C``: :mod:`airbench_nb.scoring.tier_metrics`)."""

    kind: Literal["sound_source"] = "sound_source"  # type: ignore[assignment]
    """Record kind, so that a manifest line says what it holds."""
    task: Literal["sound_source"] = SOUND_SOURCE_TASK
    """Always ``sound_source``."""
    category: Literal["sound"] | None = None  # type: ignore[assignment]
    """Always ``sound``."""
    classes: list[str]
    """The fine class (hierarchy name, e.g. ``wail``) of each option, in option order."""
    categories: list[str]
    """The coarse category (e.g. ``siren``) of each option, in option order."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        return value

    @model_validator(mode="after")
    def _consistent(self) -> SoundSourceItem:
        object.__setattr__(self, "category", "sound")
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"answer {self.answer} is not an index into {len(self.choices)} choices")
        _check_hierarchy_lists(self.classes, self.categories, len(self.choices), "choices")
        for choice in self.choices:
            check_no_bidi(choice, "option")
        return self

    @property
    def fine(self) -> str:
        """The gold fine class."""
        return self.classes[self.answer]

    @property
    def coarse(self) -> str:
        """The gold coarse category."""
        return self.categories[self.answer]

    def hierarchy(self) -> dict[str, str]:
        """Fine class -> coarse category over the item's options."""
        return dict(zip(self.classes, self.categories, strict=True))


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


class ChatItem(_ItemBase):
    """A Chat open question about one audio clip (or several turns), with reference answers and a description."""

    METRICS: ClassVar[tuple[str, ...]] = ("judge_score",)
    """The metrics that score this kind of item (names in :data:`airbench_nb.scoring.metrics.METRICS`)."""

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


def _check_classes(value: list[str], field: str) -> list[str]:
    if any(not c.strip() for c in value):
        raise ValueError(f"{field} may not hold empty class names")
    folded = [c.strip().casefold() for c in value]
    repeated = sorted({c for c in folded if folded.count(c) > 1})
    if repeated:
        raise ValueError(f"{field} names a class twice: {', '.join(repeated)}")
    return value


class _ReferenceItem(_ItemBase):
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


class TranscriptionItem(_ReferenceItem):
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


class SceneItem(_ReferenceItem):
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


class EventsItem(_ReferenceItem):
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


class JointItem(_ReferenceItem):
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


def _check_texts(value: list[str], field: str) -> list[str]:
    if any(not isinstance(v, str) or not v.strip() for v in value):
        raise ValueError(f"{field} may not hold empty texts")
    return value


class TranslationItem(_ReferenceItem):
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


class CaptionItem(_ReferenceItem):
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


class SpeechGenerationItem(_ReferenceItem):
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


class OpenSourceItem(_ItemBase):
    """The tiered benchmark's open-vocabulary question (tier D), asked without candidates.

    The question is the benchmark's "Enumerate the sound occurrences in the audio clip.". A judge reads the free
    answer for a hit on the gold coarse category and on its fine class (:attr:`Verdict.hits`): the offline rule judge
    ``sources`` by the hierarchy's synonyms (longest match first), an LLM judge by asking. Recall and FNR only:
    without a predicted class there is no precision.
    """

    METRICS: ClassVar[tuple[str, ...]] = ("tier_open_vocabulary",)
    """Tier D's scores in the score table (``tier_D``: :mod:`airbench_nb.scoring.tier_metrics`)."""

    kind: Literal["sound_source_open"] = "sound_source_open"
    """Record kind, so that a manifest line says what it holds."""
    task: Literal["sound_source_open"] = OPEN_SOURCE_TASK
    """Always ``sound_source_open``."""
    category: Literal["sound"] = "sound"
    """Always ``sound``."""
    classes: list[str]
    """Every fine class of the hierarchy (hierarchy names)."""
    categories: list[str]
    """The coarse category of each of ``classes``, in its order."""
    label: str
    """The gold fine class, one of ``classes``."""
    names: dict[str, list[str]] = Field(default_factory=dict)
    """Words that name a fine class or a category (the hierarchy's synonyms), by class or category name; a name
    always names itself (underscores read as spaces)."""
    clip_id: str | None = None
    """Identifier of the clip, shared with the closed-set item about the same audio; None when it stands alone."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Ground truth and provenance (the synthesizer's drawn parameters, the seed)."""

    @model_validator(mode="after")
    def _consistent(self) -> OpenSourceItem:
        _check_hierarchy_lists(self.classes, self.categories, len(self.classes), "classes")
        if self.label not in self.classes:
            raise ValueError(f"label {self.label!r} is not one of classes")
        unknown = sorted(set(self.names) - set(self.classes) - set(self.categories))
        if unknown:
            raise ValueError(f"names has entries for unknown classes or categories: {', '.join(unknown)}")
        for words in self.names.values():
            for word in words:
                check_no_bidi(word, "name")
        return self

    @property
    def fine(self) -> str:
        """The gold fine class."""
        return self.label

    @property
    def coarse(self) -> str:
        """The gold coarse category."""
        return self.categories[self.classes.index(self.label)]

    def hierarchy(self) -> dict[str, str]:
        """Fine class -> coarse category."""
        return dict(zip(self.classes, self.categories, strict=True))


ReferenceItem = (
    TranscriptionItem | SceneItem | EventsItem | JointItem | TranslationItem | CaptionItem | SpeechGenerationItem
)
"""Any item scored against a reference."""

Item = Annotated[
    FoundationItem
    | ChatItem
    | TranscriptionItem
    | SceneItem
    | EventsItem
    | JointItem
    | TranslationItem
    | CaptionItem
    | SpeechGenerationItem
    | SoundSourceItem
    | OpenSourceItem,
    Field(discriminator="kind"),
]
"""Any item kind; the ``kind`` field tells them apart."""

AnyItem = (
    FoundationItem
    | ChatItem
    | TranscriptionItem
    | SceneItem
    | EventsItem
    | JointItem
    | TranslationItem
    | CaptionItem
    | SpeechGenerationItem
    | SoundSourceItem
    | OpenSourceItem
)
"""Any item (the plain union of :data:`Item`, for type hints and ``isinstance``)."""


def _now() -> datetime:
    return datetime.now(UTC)


class ResponseAudio(Record):
    """A spoken answer: an audio file written beside the responses file, never inline in the JSONL."""

    path: str
    """Path of the file relative to the folder of the responses file (``audio/<uid>.wav``), forward slashes."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the file's bytes, as written; a file whose bytes differ is not this answer."""
    sample_rate: StrictInteger = Field(gt=0)
    """Sample rate in Hz."""
    duration_s: float = Field(ge=0)
    """Duration in seconds."""

    @field_validator("path")
    @classmethod
    def _path_relative(cls, value: str) -> str:
        return check_relative_audio_path(value)


class RankedLabel(BaseModel):
    """One task class in a ranked-list model's answer, with the score it was ranked by (tiers B and C)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    label: str = Field(min_length=1)
    """The task class, spelled as the item's choice it stands for."""
    score: float = Field(allow_inf_nan=False)
    """The model's score of the class: a probability for a classifier (the best of its mapped source labels), a
    logit-scaled audio-text cosine for CLAP. Comparable within one response only."""


def check_ranking(ranking: list[RankedLabel]) -> list[RankedLabel]:
    """A ranking as :attr:`Response.ranking` takes it: each class once, best first.

    Raises:
        ValueError: For a class named twice or scores that rise (naming them).
    """
    labels = [r.label for r in ranking]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ValueError(f"ranking names {', '.join(map(repr, twice))} more than once")
    for rank, (a, b) in enumerate(zip(ranking, ranking[1:], strict=False), start=1):
        if a.score < b.score:
            raise ValueError(
                f"ranking is not best first: {b.label!r} ({b.score:g}) ranked after {a.label!r} ({a.score:g}) "
                f"at rank {rank + 1}"
            )
    return ranking


class Response(Record):
    """A model's answer to one item (or the error that prevented one)."""

    uid: str
    """Uid of the item answered."""

    @field_validator("uid")
    @classmethod
    def _uid_clean(cls, value: str) -> str:
        return check_uid(value)

    model: str
    """Model spec that produced the answer (e.g. ``hf:Qwen/Qwen2-Audio-7B-Instruct``)."""
    text: str | None = None
    """The answer text; None when the item failed."""
    error: str | None = None
    """Why no answer was produced (bad audio, model error, ...); None on success."""
    prompt_hash: str | None = None
    """SHA-256 of the exact prompt sent, so that two runs can be compared item by item."""
    latency_s: float | None = None
    """Wall-clock seconds spent on this item (its share of the batch for batched backends)."""
    input_tokens: StrictInteger | None = None
    """Prompt tokens, when the backend reports them."""
    output_tokens: StrictInteger | None = None
    """Generated tokens, when the backend reports them."""
    turns: list[str] = Field(default_factory=list)
    """Multi-turn Chat: the answer to each turn, in order (``text`` is the first); empty for one-turn items. When a
    later turn fails, the answers so far are kept here and ``error`` says which turn failed."""
    generation: dict[str, Any] = Field(default_factory=dict)
    """The decoding settings the answer was made with (``max_new_tokens``, ``temperature``, ``top_p``, ``seed``,
    greedy when temperature is 0); empty in files written before the field existed."""
    prompt_set: str | None = None
    """Name (or template file) of the prompt set the prompt was made from, so that it can be rebuilt from this
    record and the item (:func:`airbench_nb.prompts.item_prompt`); None in older files."""
    audio: ResponseAudio | None = None
    """The spoken answer, for models that answer with audio (``text`` then holds what the model said it said, when
    it says); None for text-only answers."""
    ranking: list[RankedLabel] = Field(default_factory=list)
    """A ranked-list model's task classes, best first (tiers B and C: a classifier through its label mapping, CLAP
    over the item's choices); ``text`` is the first. Empty for text answers, and in files written before the field
    existed."""
    created: datetime = Field(default_factory=_now)
    """When the response was recorded (UTC)."""

    @field_validator("ranking")
    @classmethod
    def _ranking_sorted(cls, value: list[RankedLabel]) -> list[RankedLabel]:
        return check_ranking(value)

    def content_hash(self) -> str:
        """SHA-256 of what a judge judges: uid, model, prompt hash, text, error, turns, audio hash, ranking.

        Each turn's answer, the audio's hash and the ranking count only when there are some.

        Not the time, latency or settings. A verdict records it (:attr:`Verdict.response_hash`), so a re-inferred
        answer is re-judged and a verdict of an older answer never scores a newer one; the same answer given again
        keeps its verdict. A one-turn response hashes exactly as in schema version 1, so that older verdicts keep
        matching.
        """
        import hashlib
        import json

        fields: list[Any] = [self.uid, self.model, self.prompt_hash, self.text, self.error]
        if self.turns:
            fields.append(list(self.turns))
        if self.audio is not None:
            fields.append({"audio_sha256": self.audio.sha256})
        if self.ranking:
            fields.append({"ranking": [[r.label, r.score] for r in self.ranking]})
        return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode("utf-8")).hexdigest()

    def turn_answer(self, turn: int | None) -> str | None:
        """The answer to ``turn`` (None: the one-turn answer), or None when there is none.

        A one-turn response (or turn 0 of a response without ``turns``) is ``text``, None when the response is an
        error. Turn ``k`` of a multi-turn response is ``turns[k]``, which is kept even when a later turn failed.
        """
        if turn is None or (turn == 0 and not self.turns):
            return None if self.error is not None else self.text
        if turn < len(self.turns):
            return self.turns[turn]
        return None

    def turn_failure(self, turn: int | None) -> str:
        """Why this response has no answer to ``turn`` (the reason of a judge's ``no response`` verdict)."""
        if turn is None:
            return f"no response: {self.error}"
        why = self.error or "the response holds no answer to it"
        return f"no response: turn {turn + 1} not answered ({why})"


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


class NotebookStatus(Record):
    """What happened to one notebook of a pipeline run."""

    name: str
    """Notebook stem, e.g. ``00_tutorial``."""
    status: Literal["ok", "failed", "skipped"]
    """``ok`` when it executed to the end, ``failed`` when a cell raised, ``skipped`` when not run."""
    output: str | None = None
    """Path of the executed notebook, relative to the run folder."""
    html: str | None = None
    """Path of its HTML export, relative to the run folder."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """Parameters injected into this notebook."""
    started: datetime | None = None
    """Start time (UTC)."""
    ended: datetime | None = None
    """End time (UTC)."""
    duration_s: float | None = None
    """Execution time in seconds."""
    error: str | None = None
    """The exception that stopped the notebook, or why it was skipped."""
    inputs_hash: str | None = None
    """SHA-256 over :attr:`input_hashes`, taken when the notebook last executed to the end; a resumed run whose
    hash for this notebook is the same keeps its executed notebook instead of executing it again. None when it
    failed, was skipped, or in a ``run.json`` written before resumes were incremental (it then executes again)."""
    input_hashes: dict[str, str] = Field(default_factory=dict)
    """SHA-256 of each thing the notebook's execution depends on, by name: ``notebook`` (its source),
    ``parameters`` (those injected), ``versions`` (Python, the kit, its dependencies), ``environment`` (the
    variables that change what it does), ``upstream`` (for a notebook outside the pipeline: the hashes of those
    before it), ``file:<path>`` for each run-folder file it reads or writes (one that is absent has no entry) and
    ``param:<name>:<path>`` for each file a path parameter names (``missing`` when absent)."""
    reused: StrictBoolean = False
    """True when a resumed run kept this notebook's earlier execution (its inputs hash unchanged): the executed
    notebook, its HTML and the times above are those of that execution."""


class RunInfo(Record):
    """The ``run.json`` of a pipeline run: what ran, with what, and how it ended."""

    run_id: str
    """Name of the run folder under ``reports/``."""
    started: datetime
    """Start of the run (UTC)."""
    ended: datetime | None = None
    """End of the run (UTC); None while running."""
    status: Literal["running", "ok", "failed"] = "running"
    """``ok`` when every notebook ran, ``failed`` when one failed."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """Parameters given to the run (never secrets)."""
    versions: dict[str, str] = Field(default_factory=dict)
    """Versions of Python, the kit and its main dependencies."""
    git_commit: str | None = None
    """Commit of the kit's repository, with ``-dirty`` when it had uncommitted changes; None outside git."""
    platform: str | None = None
    """Operating system and machine."""
    notebooks: list[NotebookStatus] = Field(default_factory=list)
    """One entry per notebook of the pipeline, in order."""
    resumed: int = 0
    """How many times the run was resumed (``airbench-nb run --resume``): notebooks re-executed in place, reusing
    the responses, verdicts and cache entries already there."""
    cache_dir: str | None = None
    """Shared cache folder given to the notebooks (built data, judge calls); None: their default."""


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
