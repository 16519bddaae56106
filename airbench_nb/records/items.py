"""The unions of the item kinds: any item (:data:`Item`, told apart by ``kind``) and any reference-scored one."""

from __future__ import annotations

import logging
from typing import Annotated

from pydantic import Field

from airbench_nb.records.airbench import ChatItem, FoundationItem
from airbench_nb.records.sseu import EventsItem, JointItem, SceneItem, TranscriptionItem
from airbench_nb.records.tiered import OpenSourceItem, SoundSourceItem
from airbench_nb.records.ugbench import CaptionItem, SpeechGenerationItem, TranslationItem

logger = logging.getLogger(__name__)

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
