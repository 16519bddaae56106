"""Typed records of the kit: benchmark items, mix metadata, model responses, verdicts and runs.

Every record is a pydantic v2 model with a docstring per field and a ``schema_version``. Records are
written one per line to JSONL manifests (see :mod:`airbench_nb.manifests`).

Task names and categories follow the official AIR-Bench release, misspellings included
(``Speaker_Emotion_Recontion``, ``Music_Instruments_Classfication``, ...).

The package holds one module per kind of record; every public name is re-exported here, so
``from airbench_nb.records import X`` reads any of them:

- :mod:`~airbench_nb.records.base`: :data:`SCHEMA_VERSION`, :class:`Record` (the base of every record),
  :class:`AudioStatus`.
- :mod:`~airbench_nb.records.checks`: the field checks (strict integers and booleans, language tags, uids, audio
  paths, direction controls).
- :mod:`~airbench_nb.records.tasks`: task names and categories, option letters, the names of the item kinds.
- :mod:`~airbench_nb.records.mix`: :class:`MixMeta`.
- :mod:`~airbench_nb.records.controls`: the ``meta`` keys marking an audio-reliance control (and a perturbed copy,
  :func:`is_perturbed`), and what prompts read from them (:func:`prompt_without_audio`, :func:`with_description`).
- :mod:`~airbench_nb.records.clusters`: which items are not independent (:func:`cluster_of`: an item's cluster,
  the unit a bootstrap resamples).
- :mod:`~airbench_nb.records.item`: the bases of the item kinds (:class:`ItemBase`, :class:`SingleChoiceItem`,
  :class:`ReferenceItemBase`).
- one module per benchmark's item kinds: :mod:`~airbench_nb.records.airbench` (Foundation, Chat),
  :mod:`~airbench_nb.records.sseu` (transcription, scene, events, joint), :mod:`~airbench_nb.records.ugbench`
  (translation, caption, speech generation), :mod:`~airbench_nb.records.tiered` (the sound-source closed set and
  open question), :mod:`~airbench_nb.records.choice_qa` (MMAU, MMAR, MMSU; their release rows read by
  :mod:`~airbench_nb.records.choice_qa_rows`); :mod:`~airbench_nb.records.items`: their unions (:data:`Item`,
  :data:`AnyItem`, :data:`ReferenceItem`).
- :mod:`~airbench_nb.records.responses` (:class:`Response`), :mod:`~airbench_nb.records.verdicts`
  (:class:`Verdict`), :mod:`~airbench_nb.records.runs` (:class:`RunInfo`, :class:`NotebookStatus`),
  :mod:`~airbench_nb.records.annotation` (:class:`AnnotationPair`, :class:`Label`),
  :mod:`~airbench_nb.records.listening` (:class:`ListeningEntry`, :class:`Rating`).
"""

from __future__ import annotations

from airbench_nb.records.airbench import (
    ChatItem,
    ChatTurn,
    FoundationItem,
)
from airbench_nb.records.annotation import (
    AnnotationPair,
    Label,
)
from airbench_nb.records.base import (
    EMPTY_DICT,
    EMPTY_LIST,
    SCHEMA_VERSION,
    AudioStatus,
    Record,
    SharedEmptyDict,
    SharedEmptyList,
    share_fields_set,
)
from airbench_nb.records.checks import (
    BIDI_CONTROLS,
    LANGUAGE_TAG,
    LanguageTag,
    Seconds,
    StrictBoolean,
    StrictInteger,
    check_language,
    check_no_bidi,
    check_relative_audio_path,
    check_uid,
)
from airbench_nb.records.choice_qa import (
    MMAR_CATEGORIES,
    MMAR_MODALITIES,
    MMAU_DIFFICULTIES,
    MMAU_TASKS,
    MMSU_LETTERS,
    MMARItem,
    MMAUItem,
    MMSUItem,
    OfficialRule,
    option_notes,
)
from airbench_nb.records.choice_qa_rows import (
    MMAR_FIELDS,
    MMAU_FIELDS,
    MMSU_CHOICE_FIELDS,
    MMSU_FIELDS,
    gold_index,
    mmar_item,
    mmau_item,
    mmsu_item,
)
from airbench_nb.records.clusters import (
    CLUSTER_META_KEY,
    CLUSTER_UNITS,
    UTTERANCE_KINDS,
    cluster_of,
    cluster_unit,
)
from airbench_nb.records.controls import (
    CONTROL_KEY,
    CONTROL_OF_KEY,
    CONTROL_TEXT_KEY,
    CONTROLS,
    DESCRIPTION_LEAD,
    PERTURBATION_OF_KEY,
    WITHOUT_AUDIO_KEY,
    control_question,
    control_text,
    control_uid,
    is_control,
    is_perturbed,
    prompt_without_audio,
    with_description,
)
from airbench_nb.records.item import (
    ItemBase,
    ReferenceItemBase,
    SingleChoiceItem,
    option_key,
)
from airbench_nb.records.items import (
    ITEM_CLASSES,
    ITEM_KINDS,
    AnyItem,
    Item,
    ItemKinds,
    ReferenceItem,
    item_adapter,
    item_class,
    kind_name,
    register_item_kind,
)
from airbench_nb.records.listening import (
    ACR_LABELS,
    ListeningEntry,
    Rating,
)
from airbench_nb.records.mix import (
    MixMeta,
)
from airbench_nb.records.responses import (
    OptionProbs,
    RankedLabel,
    Response,
    ResponseAudio,
    check_ranking,
)
from airbench_nb.records.runs import (
    NotebookStatus,
    RunInfo,
)
from airbench_nb.records.sseu import (
    EventsItem,
    JointItem,
    SceneItem,
    TranscriptionItem,
)
from airbench_nb.records.tasks import (
    AIRBENCH_LETTERS,
    ALL_CHAT_TASKS,
    ALL_FOUNDATION_TASKS,
    CHAT_TASKS,
    FOUNDATION_TASKS,
    KIT_CHAT_TASKS,
    KIT_FOUNDATION_TASKS,
    LETTERS,
    MAX_CHOICES,
    OPEN_SOURCE_TASK,
    PROMPTINGS,
    REFERENCE_KINDS,
    REFERENCE_TASKS,
    SOUND_SOURCE_TASK,
    TIERED_KINDS,
    ChatCategory,
    FoundationCategory,
    UnknownTaskError,
    chat_category,
    foundation_category,
)
from airbench_nb.records.tiered import (
    OpenSourceItem,
    SoundSourceItem,
)
from airbench_nb.records.ugbench import (
    CaptionItem,
    SpeechGenerationItem,
    TranslationItem,
)
from airbench_nb.records.verdicts import (
    AnswerScreen,
    FencedReading,
    ReasoningLabel,
    ScreenFlag,
    SourceHits,
    Verdict,
)

__all__ = [
    "CONTROLS",
    "CONTROL_OF_KEY",
    "CONTROL_KEY",
    "CONTROL_TEXT_KEY",
    "WITHOUT_AUDIO_KEY",
    "DESCRIPTION_LEAD",
    "PERTURBATION_OF_KEY",
    "control_uid",
    "is_control",
    "CLUSTER_META_KEY",
    "CLUSTER_UNITS",
    "UTTERANCE_KINDS",
    "cluster_of",
    "cluster_unit",
    "is_perturbed",
    "prompt_without_audio",
    "control_text",
    "control_question",
    "with_description",
    "SCHEMA_VERSION",
    "AudioStatus",
    "EMPTY_DICT",
    "EMPTY_LIST",
    "Record",
    "SharedEmptyDict",
    "SharedEmptyList",
    "share_fields_set",
    "StrictInteger",
    "StrictBoolean",
    "LANGUAGE_TAG",
    "check_language",
    "LanguageTag",
    "BIDI_CONTROLS",
    "check_no_bidi",
    "Seconds",
    "check_uid",
    "check_relative_audio_path",
    "FOUNDATION_TASKS",
    "CHAT_TASKS",
    "KIT_FOUNDATION_TASKS",
    "KIT_CHAT_TASKS",
    "ALL_FOUNDATION_TASKS",
    "ALL_CHAT_TASKS",
    "LETTERS",
    "MAX_CHOICES",
    "AIRBENCH_LETTERS",
    "REFERENCE_TASKS",
    "REFERENCE_KINDS",
    "TIERED_KINDS",
    "ITEM_KINDS",
    "SOUND_SOURCE_TASK",
    "OPEN_SOURCE_TASK",
    "PROMPTINGS",
    "FoundationCategory",
    "ChatCategory",
    "UnknownTaskError",
    "foundation_category",
    "chat_category",
    "MixMeta",
    "ItemBase",
    "SingleChoiceItem",
    "option_key",
    "ReferenceItemBase",
    "FoundationItem",
    "ChatTurn",
    "ChatItem",
    "TranscriptionItem",
    "SceneItem",
    "EventsItem",
    "JointItem",
    "TranslationItem",
    "CaptionItem",
    "SpeechGenerationItem",
    "SoundSourceItem",
    "OpenSourceItem",
    "MMAUItem",
    "MMARItem",
    "MMSUItem",
    "MMAU_TASKS",
    "MMAU_DIFFICULTIES",
    "MMAR_MODALITIES",
    "MMAR_CATEGORIES",
    "MMSU_LETTERS",
    "OfficialRule",
    "MMAU_FIELDS",
    "MMAR_FIELDS",
    "MMSU_FIELDS",
    "MMSU_CHOICE_FIELDS",
    "gold_index",
    "option_notes",
    "mmau_item",
    "mmar_item",
    "mmsu_item",
    "ReferenceItem",
    "Item",
    "AnyItem",
    "ITEM_CLASSES",
    "ItemKinds",
    "kind_name",
    "register_item_kind",
    "item_class",
    "item_adapter",
    "ResponseAudio",
    "OptionProbs",
    "RankedLabel",
    "check_ranking",
    "Response",
    "ScreenFlag",
    "AnswerScreen",
    "FencedReading",
    "SourceHits",
    "ReasoningLabel",
    "Verdict",
    "NotebookStatus",
    "RunInfo",
    "AnnotationPair",
    "Label",
    "ACR_LABELS",
    "ListeningEntry",
    "Rating",
]
