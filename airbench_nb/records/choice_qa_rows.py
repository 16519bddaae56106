"""Rows of the MMAU, MMAR and MMSU releases made into items: pure functions, one row in, one item out.

:func:`mmau_item`, :func:`mmar_item` and :func:`mmsu_item` read one row as the release writes it (a JSON object of
``mmau-test-mini.json``, a line of ``MMAR-meta.jsonl``, a row of MMSU's files, or the same rows from the Hugging Face
copies, whose options may be a JSON string) and return the item, with ``audio`` the path (relative to the data root)
where the importer puts the row's clip. They write nothing and guess nothing: the gold answer must be the text of
an option once both are stripped (the first such option is the gold), and a field of the wrong shape is refused.
MMAU's and MMAR's options are taken as released, since their official scripts score every row: an option repeated
(27 rows of MMAU test-mini) or empty (4 rows of MMAR) stays in place and the item notes it
(:func:`~airbench_nb.records.choice_qa.option_notes`). MMSU's options, read as letters, must be distinct and
non-empty (stripped, case folded: what :class:`~airbench_nb.records.item.SingleChoiceItem` accepts). Every refusal is
a :class:`ValueError` that names the release, the row's ``id`` and the field; the importer adds the file and line.

Fields the item has no place for (MMAR's ``thinking``, ``cue``, ``rubric``, ``url``, ...) are kept in its ``meta``,
under their release names.
"""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from airbench_nb.records.choice_qa import MMARItem, MMAUItem, MMSUItem

logger = logging.getLogger(__name__)

MMAU_FIELDS: tuple[str, ...] = (
    "id",
    "audio_id",
    "question",
    "choices",
    "answer",
    "dataset",
    "task",
    "split",
    "category",
    "sub-category",
    "subcategory",
    "difficulty",
)
"""The fields of an ``mmau-test-mini.json`` row that become item fields (the others go to ``meta``)."""

MMAR_FIELDS: tuple[str, ...] = (
    "id",
    "audio_path",
    "question",
    "choices",
    "answer",
    "modality",
    "category",
    "sub-category",
    "subcategory",
    "language",
)
"""The fields of an ``MMAR-meta.jsonl`` row that become item fields (the others go to ``meta``)."""

MMSU_CHOICE_FIELDS: tuple[str, ...] = ("choice_a", "choice_b", "choice_c", "choice_d")
"""MMSU's option fields, in letter order (``choice_c`` and ``choice_d`` may be absent or null)."""

MMSU_FIELDS: tuple[str, ...] = (
    "id",
    "audio_path",
    "question",
    *MMSU_CHOICE_FIELDS,
    "answer_gt",
    "task_name",
    "category",
    "sub-category",
    "subcategory",
    "sub-sub-category",
    "linguistics_sub_discipline",
)
"""The fields of an MMSU row that become item fields (the others go to ``meta``)."""


def _where(bench: str, row: Mapping[str, Any]) -> str:
    return f"{bench} row {row.get('id')!r}"


def _text(row: Mapping[str, Any], field: str, bench: str, *, optional: bool = False) -> str | None:
    """A string field of the row, refused (naming it) when absent, null or not a non-empty string."""
    value = row.get(field)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        got = "absent" if field not in row else f"{type(value).__name__} {value!r}"
        raise ValueError(f"{_where(bench, row)}: field {field!r} must be a non-empty string, got {got}")
    return value


def _blank(value: Any) -> bool:
    """Whether a field is absent in all but name: None, or a string of spaces only."""
    return value is None or (isinstance(value, str) and not value.strip())


def _required(row: Mapping[str, Any], field: str, bench: str) -> str:
    """A string field the row must have (:func:`_text` without ``optional``)."""
    value = _text(row, field, bench)
    if value is None:  # pragma: no cover - _text refuses a missing field unless optional
        raise ValueError(f"{_where(bench, row)}: field {field!r} is missing")
    return value


def _listed(text: str) -> Any:
    """A list written as a string: JSON (``["a", "b"]``) or a Python literal (``['a', 'b']``); the text otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)  # literals only: never runs code
    except (ValueError, SyntaxError):
        return text


def _choices(row: Mapping[str, Any], bench: str) -> list[str]:
    """The ``choices`` field: a list of strings, or one written as a string (the Hugging Face copies)."""
    value = row.get("choices")
    if isinstance(value, str):
        value = _listed(value)
        if isinstance(value, str):
            raise ValueError(f"{_where(bench, row)}: field 'choices' is a string but not a list written as JSON")
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise ValueError(f"{_where(bench, row)}: field 'choices' must be a list of strings, got {value!r}")
    return value


def _category(row: Mapping[str, Any], bench: str) -> str | list[str] | None:
    """MMAU's ``category``: a string, a list of strings, or such a list written as a string.

    The Hugging Face copy's string column holds test-mini's 13 list categories that way.
    """
    value = row.get("category")
    if isinstance(value, str) and value.strip().startswith("["):
        value = _listed(value.strip())
    if value is not None and not (
        isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    ):
        raise ValueError(f"{_where(bench, row)}: field 'category' must be a string or a list of strings, got {value!r}")
    return value


def _sub_category(row: Mapping[str, Any], bench: str) -> str | None:
    """The ``sub-category`` field (``subcategory`` in some Hugging Face copies), None when absent."""
    field = "sub-category" if "sub-category" in row or "subcategory" not in row else "subcategory"
    return _text(row, field, bench, optional=True)


def gold_index(choices: Sequence[str], gold: str, *, where: str, field: str, as_released: bool = False) -> int:
    """The index of the first option whose text is the gold answer (exact once both are stripped).

    Args:
        choices: The options as released.
        gold: The gold answer as released.
        where: What the row is, for the messages (``"MMAU row 'abc'"``).
        field: The name of the gold answer's field (``answer``, ``answer_gt``).
        as_released: Accept repeated and empty options (MMAU, MMAR, whose official scripts score such rows); the
            gold is then the first option of its text.

    Raises:
        ValueError: When the gold is none of the options, or, unless ``as_released``, when an option is empty or the
            options repeat one (stripped, case folded).
    """
    if not as_released:
        empty = [k for k, c in enumerate(choices) if not c.strip()]
        if empty:
            raise ValueError(f"{where}: field 'choices' holds an empty option at index {empty[0]}: {list(choices)!r}")
        folded = [c.strip().casefold() for c in choices]
        repeated = sorted({c.strip() for c, f in zip(choices, folded, strict=True) if folded.count(f) > 1})
        if repeated:
            raise ValueError(
                f"{where}: field 'choices' repeats an option ({', '.join(map(repr, repeated))}): {choices!r}"
            )
    matches = [k for k, c in enumerate(choices) if c.strip() == gold.strip()]
    if not matches:
        raise ValueError(f"{where}: field {field!r} {gold!r} is not among the options {choices!r}")
    return matches[0]


def _extra(row: Mapping[str, Any], known: Sequence[str]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in known}


def _build(cls: type[Any], bench: str, row: Mapping[str, Any], **fields: Any) -> Any:
    try:
        return cls(**fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'item'}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise ValueError(f"{_where(bench, row)}: {problems}") from exc


def _uid(row: Mapping[str, Any], bench: str, uid: str | None) -> tuple[str, str]:
    raw = row.get("id")
    if not isinstance(raw, str | int) or isinstance(raw, bool) or not str(raw).strip():
        raise ValueError(f"{bench} row: field 'id' must be a non-empty string or integer, got {raw!r}")
    return (uid if uid is not None else str(raw)), str(raw)


def mmau_item(row: Mapping[str, Any], audio: str, *, uid: str | None = None) -> MMAUItem:
    """One MMAU row (``mmau-test-mini.json``, or the Hugging Face copy whose ``choices`` is a JSON string).

    Args:
        row: The row as released: ``id``, ``question``, ``choices``, ``answer`` (the text of the right option),
            ``dataset``, ``task``, ``split``, ``category`` (a string or a list), ``sub-category``, ``difficulty``;
            ``audio_id`` and any other field go to ``meta``.
        audio: Where the row's clip lies, relative to the data root (what the importer writes).
        uid: The item's uid; the row's ``id`` when None.

    Returns:
        The item, ``source_id`` the row's ``id``; options repeated or empty are kept as released and noted in its
        ``notes``.

    Raises:
        ValueError: A field absent or of the wrong shape, or the gold not among the options (the message names the
            row's ``id`` and the field).
    """
    bench = "MMAU"
    uid, source_id = _uid(row, bench, uid)
    where = _where(bench, row)
    choices = _choices(row, bench)
    answer_text = _required(row, "answer", bench)
    answer = gold_index(choices, answer_text, where=where, field="answer", as_released=True)
    category = _category(row, bench)
    meta = _extra(row, MMAU_FIELDS)
    if "audio_id" in row:
        meta["audio_id"] = row["audio_id"]
    return _build(
        MMAUItem,
        bench,
        row,
        uid=uid,
        source_id=source_id,
        dataset=_text(row, "dataset", bench, optional=True) or "MMAU",
        audio=audio,
        question=_required(row, "question", bench),
        choices=choices,
        answer=answer,
        answer_text=answer_text,
        task=_required(row, "task", bench),
        category=category,
        sub_category=_sub_category(row, bench),
        difficulty=_text(row, "difficulty", bench, optional=True),
        split=_text(row, "split", bench, optional=True) or "test-mini",
        meta=meta,
    )


def mmar_item(row: Mapping[str, Any], audio: str, *, uid: str | None = None) -> MMARItem:
    """One MMAR row (a line of ``MMAR-meta.jsonl``).

    Args:
        row: The row as released: ``id``, ``question``, ``choices`` (2 to 6), ``answer`` (text), ``modality``,
            ``category``, ``sub-category``, ``language`` (may be null); ``audio_path``, ``thinking``, ``cue``,
            ``rubric``, ``source``, ``url``, ``timestamp`` go to ``meta``.
        audio: Where the row's clip lies, relative to the data root.
        uid: The item's uid; the row's ``id`` when None.

    Raises:
        ValueError: As :func:`mmau_item`.
    """
    bench = "MMAR"
    uid, source_id = _uid(row, bench, uid)
    choices = _choices(row, bench)
    answer_text = _required(row, "answer", bench)
    answer = gold_index(choices, answer_text, where=_where(bench, row), field="answer", as_released=True)
    meta = _extra(row, MMAR_FIELDS)
    if "audio_path" in row:
        meta["audio_path"] = row["audio_path"]
    return _build(
        MMARItem,
        bench,
        row,
        uid=uid,
        source_id=source_id,
        dataset="MMAR",
        audio=audio,
        question=_required(row, "question", bench),
        choices=choices,
        answer=answer,
        answer_text=answer_text,
        task=_required(row, "modality", bench),
        category=_required(row, "category", bench),
        sub_category=_sub_category(row, bench),
        language=_text(row, "language", bench, optional=True),
        meta=meta,
    )


def mmsu_item(row: Mapping[str, Any], audio: str, *, uid: str | None = None) -> MMSUItem:
    """One MMSU row: options in ``choice_a`` to ``choice_d`` (the last two may be absent, null or empty: no option).

    Args:
        row: The row as released: ``id``, ``question``, ``choice_a`` .. ``choice_d``, ``answer_gt`` (text),
            ``task_name``, ``category``, ``sub-category``, and where present ``sub-sub-category`` and
            ``linguistics_sub_discipline``; ``audio_path`` and any other field go to ``meta``.
        audio: Where the row's clip lies, relative to the data root.
        uid: The item's uid; the row's ``id`` when None.

    Raises:
        ValueError: As :func:`mmau_item`; also options repeated (stripped, case folded: a letter would name either)
            and an option present after an absent one (``choice_d`` without ``choice_c``).
    """
    bench = "MMSU"
    uid, source_id = _uid(row, bench, uid)
    where = _where(bench, row)
    given = [
        None if k >= 2 and _blank(row.get(f)) else _text(row, f, bench, optional=k >= 2)
        for k, f in enumerate(MMSU_CHOICE_FIELDS)
    ]
    present = [c for c in given if c is not None]
    if given[: len(present)] != present:
        raise ValueError(f"{where}: field 'choice_d' is given but 'choice_c' is not")
    answer_text = _required(row, "answer_gt", bench)
    answer = gold_index(present, answer_text, where=where, field="answer_gt")
    meta = _extra(row, MMSU_FIELDS)
    if "audio_path" in row:
        meta["audio_path"] = row["audio_path"]
    return _build(
        MMSUItem,
        bench,
        row,
        uid=uid,
        source_id=source_id,
        dataset="MMSU",
        audio=audio,
        question=_required(row, "question", bench),
        choices=present,
        answer=answer,
        answer_text=answer_text,
        task=_required(row, "task_name", bench),
        category=_text(row, "category", bench, optional=True),
        sub_category=_sub_category(row, bench),
        sub_sub_category=_text(row, "sub-sub-category", bench, optional=True),
        linguistics_sub_discipline=_text(row, "linguistics_sub_discipline", bench, optional=True),
        meta=meta,
    )


__all__ = [
    "MMAR_FIELDS",
    "MMAU_FIELDS",
    "MMSU_CHOICE_FIELDS",
    "MMSU_FIELDS",
    "gold_index",
    "mmar_item",
    "mmau_item",
    "mmsu_item",
]
