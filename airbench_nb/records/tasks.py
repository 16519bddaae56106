"""Task names and their categories, option letters, and the names of the kit's reference and tiered item kinds.

Task names and categories follow the official AIR-Bench release, misspellings included
(``Speaker_Emotion_Recontion``, ``Music_Instruments_Classfication``, ...).
"""

from __future__ import annotations

import logging
from typing import Literal

logger = logging.getLogger(__name__)

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
