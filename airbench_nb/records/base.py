"""The base of every record: the schema version, :class:`Record`, and what an audio check found."""

from __future__ import annotations

import functools
import logging
import typing
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

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

    def __setattr__(self, name: str, value: Any) -> None:
        # The set of fields given may be shared with records that were given the same fields (share_fields_set):
        # pydantic adds an assigned field's name to it, so a record gets its own copy before a name is added.
        if name not in self.__pydantic_fields_set__ and name in type(self).model_fields:
            object.__setattr__(self, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        super().__setattr__(name, value)

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


_SHARED_FIELDS_SETS: dict[tuple[type[BaseModel], frozenset[str]], set[str]] = {}

_LAST_SHARED: dict[type[BaseModel], set[str]] = {}
"""The set :func:`share_fields_set` gave a class's last record (most records of a file are given the same fields)."""


class SharedEmptyList(list):  # type: ignore[type-arg] - holds nothing
    """The one empty list that records read from a file share (a response's ``turns``, an item's ``notes``).

    It is a list (equal to ``[]``, serialised as one), but refuses to change: a record read from a file is replaced
    (``model_copy(update=...)``), not changed in place. Copied or pickled, it is a new, plain ``[]``.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this empty list is shared by the records read from a file: assign a new list instead")

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __copy__(self) -> list[Any]:
        return []

    def __deepcopy__(self, memo: Any) -> list[Any]:
        return []

    def __reduce__(self) -> Any:
        return (list, ())


class SharedEmptyDict(dict):  # type: ignore[type-arg] - holds nothing
    """The one empty dict that records read from a file share (a response's ``generation``).

    See :class:`SharedEmptyList`.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this empty dict is shared by the records read from a file: assign a new dict instead")

    __setitem__ = __delitem__ = __ior__ = update = pop = popitem = clear = setdefault = _refuse

    def __copy__(self) -> dict[Any, Any]:
        return {}

    def __deepcopy__(self, memo: Any) -> dict[Any, Any]:
        return {}

    def __reduce__(self) -> Any:
        return (dict, ())


EMPTY_LIST = SharedEmptyList()
"""The empty list :func:`share_fields_set` gives every record read with one (0.06 KB a field a record otherwise)."""
EMPTY_DICT = SharedEmptyDict()
"""The empty dict :func:`share_fields_set` gives every record read with one."""


@functools.cache
def _sharing(cls: type[BaseModel]) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
    """How a record of ``cls`` shares: whether it is a :class:`Record`, which fields can hold models, lists or dicts.

    A field can hold a model when its annotation names a pydantic model (in a list, an optional, a union): read from
    JSON, the others hold strings, numbers, lists and dicts.
    """
    fields = cls.model_fields.items()
    return (
        issubclass(cls, Record),
        tuple(n for n, f in fields if _names(f.annotation, lambda a: isinstance(a, type) and issubclass(a, BaseModel))),
        tuple(n for n, f in fields if _names(f.annotation, lambda a: a in (list, dict))),
    )


def _names(annotation: Any, wanted: Any) -> bool:
    """Whether ``annotation`` is, or holds (as an argument, or its origin), a type ``wanted`` picks."""
    if wanted(annotation) or wanted(typing.get_origin(annotation)):
        return True
    return any(_names(arg, wanted) for arg in typing.get_args(annotation))


def share_fields_set(record: BaseModel) -> None:
    """Let records given the same fields hold one ``model_fields_set`` between them (their nested models too).

    Every empty list or dict field is made the one :data:`EMPTY_LIST` or :data:`EMPTY_DICT` (three empty containers
    are 0.18 KB of a response).

    pydantic keeps in each record the set of the fields it was given: a response line of 15 fields holds its own
    15-name set (728 bytes, more than the record's values; 2 KB for a 22-field item), and a run's 450,000 records
    hold as many equal sets. The readers of record files share one set per class and content. pydantic adds a
    field's name to the set when the field is assigned: a :class:`Record` copies its set before that (its
    ``__setattr__``); another model shares only a set holding every one of its fields (adding a name to it changes
    nothing). ``model_copy`` copies the set before changing the copy.
    """
    cls = type(record)
    given = record.__pydantic_fields_set__
    shares, nested, containers = _sharing(cls)
    if shares or len(given) == len(cls.model_fields):
        last = _LAST_SHARED.get(cls)
        if last is None or (last is not given and last != given):  # another class's record, or other fields given
            key = (cls, frozenset(given))
            last = _SHARED_FIELDS_SETS.get(key)
            if last is None:
                last = _SHARED_FIELDS_SETS[key] = set(given)
            _LAST_SHARED[cls] = last
        if last is not given:
            object.__setattr__(record, "__pydantic_fields_set__", last)
    values = record.__dict__
    for name in containers:  # an empty list or dict: the shared one, which refuses to change
        value = values.get(name)
        if type(value) is list and not value:
            values[name] = EMPTY_LIST
        elif type(value) is dict and not value:
            values[name] = EMPTY_DICT
    for name in nested:
        value = values.get(name)
        if isinstance(value, BaseModel):
            share_fields_set(value)
        elif type(value) is list and value:
            for item in value:
                if isinstance(item, BaseModel):
                    share_fields_set(item)
