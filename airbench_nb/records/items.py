"""The item kinds: their registry, the parser of any item, and the unions of the kit's own kinds for type hints.

:data:`ITEM_CLASSES` and :data:`ITEM_KINDS` are the registry, :func:`item_adapter` the parser, :data:`Item` and
:data:`AnyItem` the unions.

An item kind is a record class (a subclass of :class:`~airbench_nb.records.item.ItemBase`) whose ``kind`` field is a
``Literal`` with a default: the name of its manifest (``<kind>.jsonl``). The kit's fourteen kinds register here, in
pipeline order; a benchmark's own kind registers when its benchmark does
(:func:`airbench_nb.benchmarks.register_benchmark` calls :func:`register_item_kind` for each of its ``item_kinds``),
and from then on every reader of manifests parses it: :func:`airbench_nb.manifests.read_manifest` validates each
line with :func:`item_adapter`, and :data:`ITEM_KINDS` (the default of every "which manifests" parameter) lists it.
"""

from __future__ import annotations

import logging
import typing
from collections.abc import Iterator, Sequence
from functools import reduce
from typing import Annotated, Any, overload

from pydantic import Field, TypeAdapter

from airbench_nb.records.airbench import ChatItem, FoundationItem
from airbench_nb.records.choice_qa import MMARItem, MMAUItem, MMSUItem
from airbench_nb.records.item import ItemBase
from airbench_nb.records.sseu import EventsItem, JointItem, SceneItem, TranscriptionItem
from airbench_nb.records.tiered import OpenSourceItem, SoundSourceItem
from airbench_nb.records.ugbench import CaptionItem, SpeechGenerationItem, TranslationItem
from airbench_nb.registries import lookup

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
    | OpenSourceItem
    | MMAUItem
    | MMARItem
    | MMSUItem,
    Field(discriminator="kind"),
]
"""Any of the kit's own item kinds; the ``kind`` field tells them apart (a type hint: parse with
:func:`item_adapter`, which knows the registered kinds too)."""

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
    | MMAUItem
    | MMARItem
    | MMSUItem
)
"""Any of the kit's own items (the plain union of :data:`Item`, for type hints and ``isinstance``)."""

ITEM_CLASSES: dict[str, type[ItemBase]] = {}
"""Registered item kinds: the record class of each manifest kind, in pipeline order (registration order)."""

_adapters: dict[tuple[type[ItemBase], ...], TypeAdapter[Any]] = {}


def kind_name(cls: type[ItemBase]) -> str:
    """The manifest kind of an item class: the default of its ``kind`` field (``foundation``, ``scene``, ...).

    Raises:
        TypeError: For a class that is not an :class:`ItemBase`, whose ``kind`` is not a one-value ``Literal`` with
            that value as its default (what the parser tells the kinds apart by), or that has no ``meta`` field.
    """
    if not (isinstance(cls, type) and issubclass(cls, ItemBase)):
        raise TypeError(f"{cls!r} is not an item kind: item kinds subclass airbench_nb.records.ItemBase")
    info = cls.model_fields.get("kind")
    default = info.default if info is not None else None
    if not isinstance(default, str) or typing.get_args(info.annotation if info else None) != (default,):
        raise TypeError(
            f"{cls.__name__} is not an item kind: its 'kind' field must be Literal[{default or 'name'!r}] with that "
            "default"
        )
    if "meta" not in cls.model_fields:
        raise TypeError(
            f"{cls.__name__} is not an item kind: it needs a 'meta' field (dict[str, Any], default empty: ground truth "
            "and provenance; scoring and analysis read the graded-copy and rotation marks there)"
        )
    return default


def register_item_kind(cls: type[ItemBase]) -> type[ItemBase]:
    """Register an item kind (replacing the class of that kind, in its place), and return the class.

    Raises:
        TypeError: For a class that is not an item kind (see :func:`kind_name`).
    """
    kind = kind_name(cls)
    if ITEM_CLASSES.get(kind) is not cls:
        ITEM_CLASSES[kind] = cls
        logger.debug("item kind %r registered: %s", kind, cls.__name__)
    return cls


def item_class(kind: str) -> type[ItemBase]:
    """The registered record class of a manifest kind.

    Raises:
        KeyError: For a kind nothing is registered under (the message lists the known ones).
    """
    return lookup(ITEM_CLASSES, kind, "item kind")


def item_adapter() -> TypeAdapter[Any]:
    """The parser of one item of any registered kind (a ``kind``-discriminated union, rebuilt when kinds change)."""
    classes = tuple(ITEM_CLASSES.values())
    adapter = _adapters.get(classes)
    if adapter is None:
        union: Any = reduce(lambda a, b: a | b, classes)
        adapter = TypeAdapter(Annotated[union, Field(discriminator="kind")] if len(classes) > 1 else union)
        _adapters.clear()
        _adapters[classes] = adapter
    return adapter


class ItemKinds(Sequence[str]):
    """The names of the registered item kinds, in pipeline order: a live view of :data:`ITEM_CLASSES`.

    A kind registered later is in it; it compares equal to a tuple of the same names.
    """

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return tuple(ITEM_CLASSES)[index]

    def __len__(self) -> int:
        return len(ITEM_CLASSES)

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(ITEM_CLASSES))

    def __contains__(self, value: object) -> bool:
        return value in ITEM_CLASSES

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


ITEM_KINDS: Sequence[str] = ItemKinds()
"""Every registered item kind (manifest ``<kind>.jsonl``), in pipeline order: the kit's fourteen, then any a
benchmark registered (a live view: read it when needed, do not copy it at import)."""

for _cls in typing.get_args(AnyItem):
    register_item_kind(_cls)
