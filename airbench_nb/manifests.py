r"""JSONL manifests: read, write, validate, and check their audio.

A manifest is a JSONL file, one record a line (:class:`~airbench_nb.records.FoundationItem` or
:class:`~airbench_nb.records.ChatItem`, told apart by ``kind``). Audio paths are relative to the manifest's
*data root*: the folder named by ``data_root`` in a ``dataset.json`` beside the manifest, else the manifest's own
folder. Errors name the file, the line, the item uid and the field.

Every file here is input that may be careless or hostile. Lines are split on ``\n`` and decoded one by one, so
bytes that are not UTF-8, an integer longer than Python converts (``sys.get_int_max_str_digits``), nesting deeper
than :data:`MAX_JSON_DEPTH` or JSON too deep for the parser make *that line* invalid, with its file, line and field
named; they never stop the reading of the others.

Where audio may be read from (:func:`data_root`): a ``dataset.json`` is input too, so its ``data_root`` is used only
when it resolves (links followed) inside the manifest's folder, or to a folder that is itself a data root of the
kit's: the root of an AIR-Bench release (it holds ``Foundation/Foundation_meta.json`` or ``Chat/Chat_meta.json``;
``import-official`` points there) or a manifest folder that holds its own audio (its ``dataset.json`` says
``data_root: "."``; ``rotate`` points there). Anything else (``/``, a home folder, ``../../..``) is refused unless
the user names the root explicitly (``--data-root``, or ``root=`` here).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import singledispatch
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel, Field, ValidationError

from airbench_nb.audio import probe_audio_many
from airbench_nb.records import (
    ITEM_KINDS,
    LETTERS,
    AnyItem,
    AudioStatus,
    CaptionItem,
    ChatItem,
    EventsItem,
    JointItem,
    OpenSourceItem,
    Record,
    SceneItem,
    SingleChoiceItem,
    SpeechGenerationItem,
    TranscriptionItem,
    TranslationItem,
    item_adapter,
    share_fields_set,
)

logger = logging.getLogger(__name__)

DATASET_CARD = "dataset.json"
"""Name of the sidecar file that records a manifest folder's data root and provenance."""
MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in one record (no record of the kit needs more than a few)."""
RELEASE_MARKERS = ("Foundation/Foundation_meta.json", "Chat/Chat_meta.json")
"""Files that mark the root of an AIR-Bench release, a folder a ``dataset.json`` may point its data root at."""

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


@dataclass
class ManifestError(ValueError):
    """A problem with one line of a manifest, located precisely."""

    file: str
    """The manifest file."""
    line: int | None
    """1-based line number, or None for a file-level problem."""
    message: str
    """What is wrong."""
    uid: str | None = None
    """Uid of the item on that line, when it could be read."""
    field: str | None = None
    """Dotted name of the offending field, when one is to blame."""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        parts = [where]
        if self.uid is not None:
            parts.append(f"item {self.uid!r}")
        if self.field is not None:
            parts.append(f"field {self.field!r}")
        return ": ".join(parts) + f": {self.message}"


class ImportRecord(Record):
    """How an ``airbench-nb import`` made a data folder: the recipe, its version, its sources and options."""

    recipe: str
    """The recipe's name (``mmau``, ``fleurs``, ``sseu``, ...)."""
    version: int
    """The recipe's version: a new version may map the same rows to other items."""
    sources: dict[str, list[str]] = Field(default_factory=dict)
    """The sources read, by the recipe's name for them, as resolved absolute paths."""
    options: dict[str, Any] = Field(default_factory=dict)
    """The recipe's options as used (defaults included)."""
    spec_file: str | None = None
    """The recipe file a user gave (``--recipe-file``); None for the kit's own recipes."""


class DatasetCard(Record):
    """The ``dataset.json`` beside a manifest: where its audio lives and where it came from."""

    data_root: str = "."
    """Folder that audio paths are relative to: absolute, or relative to the card's folder."""
    source: str = "unknown"
    """How the manifests were made: ``official-import``, ``build:<preset>``, ..."""
    created: datetime = Field(default_factory=lambda: datetime.now(UTC))
    """When the manifests were written (UTC)."""
    counts: dict[str, Any] = Field(default_factory=dict)
    """Summary counts written by the tool that made the manifests."""
    recipe: ImportRecord | None = None
    """The import recipe that made the manifests (``airbench-nb import``); None for anything else."""


def _validation_errors(exc: ValidationError, file: str, line: int, uid: str | None) -> list[ManifestError]:
    errors = []
    kind_tags = frozenset(ITEM_KINDS)  # the tags pydantic puts in an error's location for the kind (not a field)
    for err in exc.errors():
        loc = [str(p) for p in err["loc"] if p not in kind_tags]
        field = ".".join(loc) or None
        errors.append(ManifestError(file, line, err["msg"], uid=uid, field=field))
    return errors


class _LongInt(str):
    """An integer literal with more digits than Python converts to an int (kept as its text, then refused)."""


def _parse_int(text: str) -> int | _LongInt:
    try:
        return int(text)
    except ValueError:  # more digits than sys.get_int_max_str_digits()
        return _LongInt(text)


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def json_problem(obj: Any) -> tuple[str | None, str] | None:
    """The first value of a parsed JSON document that the kit cannot use, as ``(field, reason)``, or None.

    It finds integers longer than Python converts (see :func:`loads_json`), strings or keys holding bytes that
    were not UTF-8 or lone surrogates (they cannot be written back as UTF-8), and nesting deeper than
    :data:`MAX_JSON_DEPTH`. ``field`` is dotted (``meta.notes.2``); None for the document itself.
    """
    stack: list[tuple[str | None, Any, int]] = [(None, obj, 0)]
    while stack:
        where, value, depth = stack.pop()
        if isinstance(value, _LongInt):
            digits, limit = len(value.lstrip("-")), sys.get_int_max_str_digits()
            return where, f"integer of {digits} digits is longer than the {limit} digits Python converts"
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return where, "text holds bytes that are not valid UTF-8 (or a lone surrogate)"
            continue
        if isinstance(value, dict | list):
            if depth >= MAX_JSON_DEPTH:  # named by its keys down to the first list index: "meta.d", not "meta.d.0.0..."
                names = list(itertools.takewhile(lambda p: not p.isdigit(), (where or "").split(".")))
                return ".".join(names) or where, f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
            pairs = value.items() if isinstance(value, dict) else enumerate(value)
            children = []
            for key, child in pairs:
                name = str(key)
                if isinstance(key, str) and _SURROGATE.search(key):
                    return where, f"key {key!r} holds bytes that are not valid UTF-8 (or a lone surrogate)"
                children.append((name if where is None else f"{where}.{name}", child, depth + 1))
            stack.extend(reversed(children))
    return None


def clean_json(obj: Any, depth: int = 0) -> Any:
    """A copy of a parsed document that can be written back as UTF-8 JSON, to show a rejected row as found.

    Too-long integers become ``"<integer of N digits>"``, bytes that were not UTF-8 and lone surrogates become
    U+FFFD, and anything nested deeper than :data:`MAX_JSON_DEPTH` becomes ``"<nested too deeply>"``.
    """
    if isinstance(obj, _LongInt):
        return f"<integer of {len(obj.lstrip('-'))} digits>"
    if isinstance(obj, str):
        return _SURROGATE.sub("\ufffd", obj)
    if isinstance(obj, dict | list) and depth >= MAX_JSON_DEPTH:
        return "<nested too deeply>"
    if isinstance(obj, dict):
        return {clean_json(str(k)): clean_json(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clean_json(v, depth + 1) for v in obj]
    return obj


def read_utf8(path: str | Path, max_bytes: int, what: str) -> str:
    """A user's text file (a CSV, a hierarchy) as UTF-8 text, a byte order mark dropped.

    Args:
        path: The file.
        max_bytes: The largest size read (checked before reading).
        what: What the file is, for the message (``a CSV of clips``).

    Raises:
        ValueError: Naming the file when it is over ``max_bytes``, and the line when it is not UTF-8.
        OSError: When it cannot be read.
    """
    path = Path(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(f"{path}: {size} bytes; {what} is at most {max_bytes} bytes")
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(f"{path}:{line}: byte {raw[exc.start]:#04x} is not UTF-8 (save the file as UTF-8)") from None


_JSON_STRUCTURE = re.compile(r'[\[\]{}"\\]')
"""The characters that open or close an array, an object or a string, and the escape character."""


def json_too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> tuple[int, int] | None:
    """Where a JSON text first nests deeper than ``limit`` arrays and objects, without parsing it (no recursion).

    A linear scan of the brackets outside strings, for a parser that would stop with a ``RecursionError``.

    Args:
        text: The JSON text (valid or not).
        limit: The deepest nesting allowed.

    Returns:
        ``(line, column)`` (1-based) of the first bracket too deep, or None when the text nests no deeper.
    """
    depth, in_string, skip_to = 0, False, -1
    for match in _JSON_STRUCTURE.finditer(text):
        at, char = match.start(), match.group()
        if at < skip_to:
            continue
        if in_string:
            if char == "\\":
                skip_to = at + 2
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, at) + 1
                return line, at - (text.rfind("\n", 0, at) + 1) + 1
        elif char in "]}":
            depth -= 1
    return None


def loads_json(text: str) -> Any:
    """``json.loads``, except that an integer longer than Python converts is kept as text for :func:`json_problem`.

    Raises:
        json.JSONDecodeError: On invalid JSON.
        RecursionError: On JSON nested too deeply for the parser.
    """
    return json.loads(text, parse_int=_parse_int)


def parse_json_bytes(raw: bytes) -> tuple[Any, str | None, str | None]:
    """Decode and parse one JSON document (a line, or a whole file) without ever raising.

    Bytes that are not UTF-8 are decoded with ``surrogateescape``, so the document still parses and the field that
    holds them can be named.

    Args:
        raw: The bytes.

    Returns:
        ``(object, field, problem)``: ``problem`` is None when the document is usable; otherwise it says what is
        wrong (invalid JSON with its line and column, too deep, too long an integer, not UTF-8) and ``field`` names
        where, when a field is to blame. ``object`` is None when the document could not be parsed at all.
    """
    try:
        text = raw.decode("utf-8")
        bad_byte = None
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="surrogateescape")
        bad_byte = exc.start
    try:
        obj = loads_json(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}" if "\n" in text.rstrip() else f"column {exc.colno}"
        extra = f"; byte {bad_byte} is not valid UTF-8" if bad_byte is not None else ""
        return None, None, f"invalid JSON: {exc.msg} ({where}){extra}"
    except RecursionError:
        return None, None, "JSON nested too deeply to parse"
    if bad_byte is None and _cannot_hold_a_problem(text):
        return obj, None, None
    found = json_problem(obj)
    if found is not None:
        return obj, found[0], found[1]
    return obj, None, None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _cannot_hold_a_problem(text: str) -> bool:
    r"""Whether valid UTF-8 JSON text is sure to pass :func:`json_problem`, without walking what it parses to.

    True when it has no escaped surrogate (``\ud800``: decoded UTF-8 holds no raw one), fewer brackets than
    :data:`MAX_JSON_DEPTH` (so it cannot nest that deep), and no run of digits as long as Python's integer limit.
    """
    if _SURROGATE_ESCAPE.search(text) or text.count("[") + text.count("{") >= MAX_JSON_DEPTH:
        return False
    limit = sys.get_int_max_str_digits()
    return limit == 0 or len(text) <= limit or re.search(rf"\d{{{limit + 1},}}", text) is None


def _text_uid(obj: Any) -> str | None:
    uid = obj.get("uid") if isinstance(obj, dict) else None
    return uid if isinstance(uid, str) and not _SURROGATE.search(uid) else None


def _parse_line(path: Path, lineno: int, line: bytes, parse: Any) -> tuple[Any, list[ManifestError]]:
    """One line's record through the checking reader: ``(record, [])``, or ``(None, errors)`` naming the line."""
    obj, field, problem = parse_json_bytes(line)
    if problem is not None:
        return None, [ManifestError(str(path), lineno, problem, uid=_text_uid(obj), field=field)]
    if not isinstance(obj, dict):
        return None, [ManifestError(str(path), lineno, f"expected a JSON object, got {type(obj).__name__}")]
    try:
        return parse(obj), []
    except ValidationError as exc:
        return None, _validation_errors(exc, str(path), lineno, _text_uid(obj))


def _parse_line_fast(line: bytes, parse_json: Any, checked: bool = False) -> Any:
    """One line's record validated straight from its JSON text, or None for the checking reader to read it.

    pydantic parses and validates the text in one pass (and shares equal short strings between records). It is tried
    only on text that :func:`parse_json_bytes` would parse without a problem (UTF-8, no escaped surrogate, no nesting
    too deep, no integer too long); anything it refuses (invalid JSON, NaN, a record that fails validation) is read
    again by :func:`_parse_line`, whose messages name the line, uid and field. What it accepts is what the checking
    reader accepts: the same last-wins duplicate keys and the same validators (``tests/test_manifest_fast_read.py``).

    ``checked``: the line is part of a file known to be UTF-8 without an escaped surrogate
    (:func:`_file_cannot_hold_a_problem`); only its length and brackets are looked at here.
    """
    if checked:
        limit = sys.get_int_max_str_digits()
        if (limit and len(line) > limit) or line.count(b"[") + line.count(b"{") >= MAX_JSON_DEPTH:
            return _parse_line_fast(line, parse_json)
        text: str | bytes = line  # pydantic reads the bytes as it would their text
    else:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if not _cannot_hold_a_problem(text):
            return None
    try:
        return parse_json(text)
    except ValidationError:
        return None


def _file_cannot_hold_a_problem(raw: bytes) -> bool:
    """Whether every line of a file is UTF-8 without an escaped surrogate, checked once for the whole file.

    Those are what :func:`_cannot_hold_a_problem` asks first of each line.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return _SURROGATE_ESCAPE.search(text) is None


VERIFY_FAST_READ = os.environ.get("AIRBENCH_NB_VERIFY_FAST_READ") == "1"
"""Read every line the fast way also the checking way and fail on a difference (the test suite sets
``AIRBENCH_NB_VERIFY_FAST_READ=1``, so that every record file its tests read checks the two readers agree)."""


def _verify_fast_read(path: Path, lineno: int, line: bytes, parse: Any, record: BaseModel) -> None:
    checked, problems = _parse_line(path, lineno, line, parse)
    fields = type(record).model_fields
    # a field the line leaves to a default factory (``created``: the time of reading) differs by construction
    made = {name for name, info in fields.items() if info.default_factory is not None} - record.model_fields_set

    def values(r: BaseModel) -> str:  # repr: a NaN is not equal to itself
        return repr({k: v for k, v in r.__dict__.items() if k not in made})

    if (
        problems
        or type(checked) is not type(record)
        or values(checked) != values(record)
        or checked.model_fields_set != record.model_fields_set
    ):
        raise AssertionError(f"{path}:{lineno}: the fast reader read {record!r}, the checking one {checked!r}")


def _parse_lines(
    path: Path, parse: Any, key: str | None, parse_json: Any = None, keep: Callable[[Any], Any] | None = None
) -> tuple[list[Any], list[ManifestError]]:
    r"""Every non-blank line's record (lines split on ``\n`` only, as JSON Lines are) and the errors of the rest.

    Args:
        path: The file.
        parse: Validates a parsed JSON object (the checking reader, :func:`_parse_line`).
        key: A field that must be unique (``uid``), or None.
        parse_json: Validates a line's JSON text at once (:func:`_parse_line_fast`); None: every line is checked.
        keep: Keeps ``keep(record)`` instead of each record, as soon as it is read (None: the record left out);
            None: the records.
    """
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such manifest file")
    items: list[Any] = []
    errors: list[ManifestError] = []
    seen: dict[str, int] = {}
    raw = path.read_bytes()
    checked = parse_json is not None and _file_cannot_hold_a_problem(raw)
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        record = None if parse_json is None else _parse_line_fast(line, parse_json, checked)
        if record is not None and VERIFY_FAST_READ:
            _verify_fast_read(path, lineno, line, parse, record)
        if record is None:
            record, problems = _parse_line(path, lineno, line, parse)
            if problems:
                errors.extend(problems)
                continue
        share_fields_set(record)
        if key is not None:
            value = getattr(record, key)
            if value in seen:
                errors.append(
                    ManifestError(
                        str(path), lineno, f"duplicate uid (first on line {seen[value]})", uid=value, field=key
                    )
                )
                continue
            seen[value] = lineno
        if keep is None:
            items.append(record)
        elif (part := keep(record)) is not None:
            items.append(part)
    return items, errors


@overload
def read_manifest(path: str | Path, *, strict: Literal[True] = True) -> list[AnyItem]: ...


@overload
def read_manifest(path: str | Path, *, strict: Literal[False]) -> tuple[list[AnyItem], list[ManifestError]]: ...


def read_manifest(
    path: str | Path, *, strict: bool = True
) -> list[AnyItem] | tuple[list[AnyItem], list[ManifestError]]:
    """Read a JSONL manifest of Foundation and/or Chat items.

    Args:
        path: The manifest file.
        strict: When True (default) the first bad line raises; when False, bad lines are skipped and returned
            as errors next to the good items.

    Returns:
        The items in file order; with ``strict=False``, ``(items, errors)``.

    Raises:
        ManifestError: On invalid JSON, a record that fails validation, or a duplicate uid (strict mode). The
            message names file, line, uid and field.
        FileNotFoundError: If the manifest does not exist.
    """
    adapter = item_adapter()
    items, errors = _parse_lines(Path(path), adapter.validate_python, key="uid", parse_json=adapter.validate_json)
    if strict:
        if errors:
            raise errors[0]
        return items
    return items, errors


def read_manifest_as(path: str | Path, keep: Callable[[AnyItem], T | None]) -> list[T]:
    """Read a manifest as :func:`read_manifest` does (strictly), keeping ``keep(item)`` of each item instead.

    A reader that needs a part of many items holds only those parts: each item is let go as soon as it is read
    (the ahead worker's 49,000 translation items: 0.1 GB as items).

    Args:
        path: The manifest file.
        keep: What to keep of an item; None leaves it out.

    Raises:
        ManifestError: As :func:`read_manifest` in strict mode.
        FileNotFoundError: If the manifest does not exist.
    """
    adapter = item_adapter()
    parts, errors = _parse_lines(
        Path(path), adapter.validate_python, key="uid", parse_json=adapter.validate_json, keep=keep
    )
    if errors:
        raise errors[0]
    return parts


def read_records(path: str | Path, model: type[M], *, strict: bool = True) -> list[M]:
    """Read a JSONL file of one record type (responses, verdicts, ...).

    Args:
        path: The JSONL file.
        model: The pydantic model of each line.
        strict: Raise on the first bad line (True) or skip bad lines with a logged warning (False).

    Returns:
        The records in file order.

    Raises:
        ManifestError: On a bad line in strict mode.
    """
    records, errors = _parse_lines(Path(path), model.model_validate, key=None, parse_json=model.model_validate_json)
    if errors and strict:
        raise errors[0]
    for err in errors:
        logger.warning("skipping bad line: %s", err)
    return records


def _atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dumps_record(record: BaseModel) -> str:
    """Serialise a record to one deterministic JSON line (no trailing newline)."""
    return json.dumps(record.model_dump(mode="json"), ensure_ascii=False, sort_keys=False)


def write_records(path: str | Path, records: Iterable[BaseModel]) -> Path:
    """Write records to a JSONL file atomically (a crash never leaves half a file).

    Args:
        path: Destination file; parent folders are created.
        records: Records to write, one per line, in order.

    Returns:
        The path written.
    """
    path = Path(path)
    _atomic_write_text(path, "".join(dumps_record(r) + "\n" for r in records))
    return path


def write_manifest(path: str | Path, items: Sequence[AnyItem]) -> Path:
    """Write items to a JSONL manifest atomically, refusing duplicate uids.

    Args:
        path: Destination file.
        items: Foundation and/or Chat items.

    Returns:
        The path written.

    Raises:
        ValueError: If two items share a uid.
    """
    seen: set[str] = set()
    for item in items:
        if item.uid in seen:
            raise ValueError(f"{path}: duplicate uid {item.uid!r}")
        seen.add(item.uid)
    return write_records(path, items)


def write_dataset_card(folder: str | Path, card: DatasetCard) -> Path:
    """Write ``dataset.json`` into a manifest folder."""
    path = Path(folder) / DATASET_CARD
    _atomic_write_text(path, card.model_dump_json(indent=2) + "\n")
    return path


def read_dataset_card(folder: str | Path) -> DatasetCard | None:
    """Read ``dataset.json`` from a manifest folder, or None when there is none.

    Raises:
        ManifestError: Naming the file (and the line or field) when it is not valid JSON, not UTF-8, not an object,
            or not a valid card (unknown field, wrong type).
    """
    path = Path(folder) / DATASET_CARD
    if not path.is_file():
        return None
    obj, field, problem = parse_json_bytes(path.read_bytes())
    if problem is not None:
        raise ManifestError(str(path), None, f"invalid dataset card: {problem}", field=field)
    if not isinstance(obj, dict):
        raise ManifestError(str(path), None, f"invalid dataset card: expected a JSON object, got {type(obj).__name__}")
    try:
        return DatasetCard.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or None
        raise ManifestError(str(path), None, f"invalid dataset card: {err['msg']}", field=where) from None


def is_data_root(folder: str | Path) -> bool:
    """Whether a folder is a data root of the kit's, which any ``dataset.json`` may point at.

    That is the root of an AIR-Bench release (it holds one of :data:`RELEASE_MARKERS`) or a manifest folder that
    holds its own audio (its valid ``dataset.json`` has a ``data_root`` that resolves to the folder itself).
    """
    folder = Path(folder)
    if any((folder / marker).is_file() for marker in RELEASE_MARKERS):
        return True
    try:
        card = read_dataset_card(folder)
        return card is not None and (folder / card.data_root).resolve() == folder.resolve()
    except (ManifestError, OSError, ValueError):
        return False


def mark_data_root(folder: str | Path, source: str) -> Path | None:
    """Make a folder a data root of the kit's (:func:`is_data_root`), so that other manifests may point at it.

    Writes a ``dataset.json`` with ``data_root: "."`` when the folder has none (``rotate`` does this for a source
    manifest without a card, whose folder holds its audio).

    Args:
        folder: The folder that holds the audio.
        source: What to record as the card's ``source``.

    Returns:
        The card written, or None when the folder already was a data root.

    Raises:
        ValueError: If the folder has a ``dataset.json`` pointing elsewhere (rewriting it would break its manifests).
    """
    folder = Path(folder)
    if is_data_root(folder):
        return None
    if (folder / DATASET_CARD).exists():
        raise ValueError(f"{folder / DATASET_CARD} points its data root elsewhere; pass --data-root {folder} instead")
    logger.info("%s: writing a dataset.json (data_root '.') so that manifests elsewhere may use its audio", folder)
    return write_dataset_card(folder, DatasetCard(data_root=".", source=source))


_ROOT_OVERRIDES: dict[Path, Path] = {}
_ROOT_OVERRIDES_LOCK = threading.Lock()


def explicit_root(root: str | Path) -> Path:
    """A data root the user named (``--data-root``): resolved, and required to be an existing folder.

    Raises:
        FileNotFoundError: If it is not a folder.
    """
    path = Path(root).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"data root {root}: no such folder")
    return path.resolve()


@contextmanager
def data_root_override(manifest: str | Path, root: str | Path | None) -> Iterator[None]:
    """Within the block, :func:`data_root` of ``manifest`` is ``root`` (the user's ``--data-root``).

    For callers that cannot pass ``root=`` down (the CLI's ``infer`` goes through :func:`airbench_nb.runner.infer`).
    ``root=None`` changes nothing.

    Raises:
        FileNotFoundError: If ``root`` is not a folder.
    """
    if root is None:
        yield
        return
    key, value = Path(manifest).resolve(), explicit_root(root)
    with _ROOT_OVERRIDES_LOCK:
        previous = _ROOT_OVERRIDES.get(key)
        _ROOT_OVERRIDES[key] = value
    try:
        yield
    finally:
        with _ROOT_OVERRIDES_LOCK:
            if previous is None:
                _ROOT_OVERRIDES.pop(key, None)
            else:
                _ROOT_OVERRIDES[key] = previous


def data_root(manifest: str | Path, root: str | Path | None = None) -> Path:
    """Return the folder that a manifest's audio paths are relative to.

    In order: ``root`` when given (the user's ``--data-root``: trusted as named); else ``data_root`` of the
    ``dataset.json`` beside the manifest (relative to that folder unless absolute), if it resolves inside the
    manifest's folder or to a data root of the kit's (:func:`is_data_root`); else the manifest's own folder.

    Args:
        manifest: The manifest file.
        root: A data root named by the user, used instead of the card's.

    Returns:
        The data root, resolved.

    Raises:
        ManifestError: When ``dataset.json`` is invalid, or its ``data_root`` leads anywhere else (``..`` out of the
            folder, an absolute path, a link): the message names the file and field and says how to override it.
        FileNotFoundError: When ``root`` is given and is not a folder.
    """
    if root is not None:
        return explicit_root(root)
    folder = Path(manifest).resolve().parent
    with _ROOT_OVERRIDES_LOCK:
        override = _ROOT_OVERRIDES.get(Path(manifest).resolve())
    if override is not None:
        return override
    card = read_dataset_card(folder)
    if card is None:
        return folder
    card_path = str(folder / DATASET_CARD)
    try:
        target = (folder / card.data_root).resolve()
    except (OSError, ValueError) as exc:  # an embedded NUL, a link loop
        raise ManifestError(card_path, None, f"not a usable path: {exc}", field="data_root") from None
    if target.is_relative_to(folder):
        return target
    if is_data_root(target):
        logger.debug("%s: data root %s (a release root or a self-rooted manifest folder)", card_path, target)
        return target
    raise ManifestError(
        card_path,
        None,
        f"{card.data_root!r} resolves to {target}, outside the manifest's folder {folder} and not a data "
        "root of the kit's (an AIR-Bench release root, or a manifest folder whose dataset.json says "
        f'data_root "."); if you trust that folder, pass --data-root {target}',
        field="data_root",
    )


def manifest_files(folder: str | Path, kinds: Sequence[str] = ITEM_KINDS) -> dict[str, Path]:
    """The manifests ``<kind>.jsonl`` present in a folder, by kind; a missing folder or none of them is an error.

    Notebooks call it on their ``manifest_dir`` parameter, so that a wrong folder fails the run instead of
    answering nothing.

    Args:
        folder: The manifest folder.
        kinds: Manifest kinds to look for (default every kind of :data:`~airbench_nb.records.ITEM_KINDS`).

    Returns:
        ``{kind: path}`` for those present, in the order of ``kinds``.

    Raises:
        FileNotFoundError: If ``folder`` is not a folder, or holds none of the manifests asked for.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"manifest folder {folder}: no such folder")
    found = {kind: folder / f"{kind}.jsonl" for kind in kinds if (folder / f"{kind}.jsonl").is_file()}
    if not found:
        wanted = ", ".join(f"{kind}.jsonl" for kind in kinds) or "(no kind asked for)"
        raise FileNotFoundError(f"manifest folder {folder} holds none of {wanted}")
    return found


def resolve_audio(root: str | Path, relative: str) -> Path:
    """Join a record's audio path to its data root, refusing anything that lands outside the root.

    Args:
        root: The data root.
        relative: The record's relative audio path.

    Returns:
        The absolute path of the audio file (which may not exist).

    Raises:
        ValueError: If the path is absolute, contains ``..``, or resolves (through symlinks) outside ``root``.
    """
    from airbench_nb.records import check_relative_audio_path

    relative = check_relative_audio_path(relative)
    root = Path(root).resolve()
    full = (root / relative).resolve()
    if not full.is_relative_to(root):
        raise ValueError(f"audio path {relative!r} resolves to {full}, outside the data root {root}")
    return full


class AudioResolver:
    """:func:`resolve_audio` for many clips of one data root: the root and each folder are resolved once.

    A clip that is itself a symbolic link is still followed (and refused when it lands outside the root); a folder
    is resolved the first time one of its clips is asked for, so one resolver serves one run or one check.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self._folders: dict[str, tuple[Path, bool]] = {}

    def __call__(self, relative: str) -> Path:
        """The absolute path of a clip (see :func:`resolve_audio`).

        Raises:
            ValueError: If the path is absolute, contains ``..``, or resolves outside the root.
        """
        from airbench_nb.records import check_relative_audio_path

        relative = check_relative_audio_path(relative)
        head, _, name = relative.rpartition("/")
        found = self._folders.get(head)
        if found is None:
            folder = (self.root / head).resolve() if head else self.root
            found = self._folders[head] = (folder, folder.is_relative_to(self.root))
        folder, inside = found
        full = folder / name
        try:
            link = os.path.islink(full)
        except (OSError, ValueError):  # a name too long for the file system: resolved as resolve_audio does
            link = True
        if link:
            full = full.resolve()
        elif inside:  # a plain name (no ``/``, no ``..``) in a folder inside the root: inside too
            return full
        if not full.is_relative_to(self.root):
            raise ValueError(f"audio path {relative!r} resolves to {full}, outside the data root {self.root}")
        return full


DATA_DEFECT_TEXT = re.compile(r"audio (?:missing|empty|corrupt): ")
"""How an item's note, and a model's error response, name a defect of its audio (``audio missing: a1.wav``)."""


def check_audio(items: Sequence[AnyItem], root: str | Path, workers: int = 4) -> list[AnyItem]:
    """Probe every item's audio file and record its status and SHA-256. Never raises for a bad file.

    The audio is checked as it is now (:func:`~airbench_nb.audio.probe_audio_many`: a file unchanged since it was
    probed, in this process or an earlier one, by path, size, modification and change times, inode and device, is not
    read again): the runner and scoring call this at run time, so a clip deleted, emptied or swapped after the manifest
    was written is seen.

    Args:
        items: Items to check.
        root: Their data root.
        workers: Threads used for hashing and decoding.

    Returns:
        New items with ``audio_status`` and ``audio_sha256`` filled in (and a note explaining a bad status). An
        item with several clips has each probed: ``audios_sha256`` gets every hash, ``audio_status`` the first bad
        status met (``ok`` when all are), and each bad clip its own note.
    """
    paths: dict[str, Path | ValueError] = {}
    resolve = AudioResolver(root)
    for item in items:
        for relative in item.clips:
            if relative not in paths:
                try:
                    paths[relative] = resolve(relative)
                except ValueError as exc:
                    paths[relative] = exc
    usable = [(relative, path) for relative, path in paths.items() if isinstance(path, Path)]
    probes = dict(zip((r for r, _ in usable), probe_audio_many([p for _, p in usable], workers=workers), strict=True))

    def probe(relative: str, notes: list[str]) -> tuple[AudioStatus, str | None]:
        path = paths[relative]
        if isinstance(path, ValueError):
            notes.append(f"audio missing: {path}")
            return AudioStatus.missing, None
        found = probes[relative]
        if found.detail:
            # Name the file by its manifest path: absolute paths differ between machines.
            notes.append(f"audio {found.status.value}: {found.detail.replace(str(path), relative)}")
        return found.status, found.sha256

    def one(item: AnyItem) -> AnyItem:
        # Drop the status note of an earlier check (only that one: other notes may also mention audio).
        notes = [n for n in item.notes if not DATA_DEFECT_TEXT.match(n)]
        found = [probe(relative, notes) for relative in item.clips]
        status = next((st for st, _ in found if st != AudioStatus.ok), AudioStatus.ok)
        update: dict[str, Any] = {"audio_status": status, "audio_sha256": found[0][1], "notes": notes}
        if item.audios:
            update["audios_sha256"] = [digest for _, digest in found]
        if all(getattr(item, name) == value for name, value in update.items()):
            return item  # as the manifest says already (the usual case): no copy
        return item.model_copy(update=update)

    return [one(item) for item in items]


@singledispatch
def gold_columns(item: object) -> tuple[str, str]:
    """The ``choices`` and ``answer`` columns of :func:`items_frame` for one item, as its kind shows its gold.

    Each item kind registers its own (``@gold_columns.register(SomeItem)``): the lettered options and the gold letter
    of a single-choice item, the classes and the gold label(s) of a scene or events item, the reference of a Chat or
    transcription item, the references of a translation or caption item, the text or accepted answers of a speech
    generation item, the gold category and class of the open-vocabulary question, the three golds of a joint item.

    Raises:
        TypeError: For an object whose kind registered no columns.
    """
    raise TypeError(f"no gold columns for a {type(item).__name__}: register them with gold_columns.register")


@gold_columns.register(SingleChoiceItem)
def _single_choice_gold(item: SingleChoiceItem) -> tuple[str, str]:
    return " | ".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(item.choices)), item.answer_letter


@gold_columns.register(ChatItem)
@gold_columns.register(TranscriptionItem)
def _reference_gold(item: ChatItem | TranscriptionItem) -> tuple[str, str]:
    return "", item.reference


@gold_columns.register(SceneItem)
def _scene_gold(item: SceneItem) -> tuple[str, str]:
    return " | ".join(item.classes), item.label


@gold_columns.register(EventsItem)
def _events_gold(item: EventsItem) -> tuple[str, str]:
    return " | ".join(item.classes), ", ".join(item.labels)


@gold_columns.register(JointItem)
def _joint_gold(item: JointItem) -> tuple[str, str]:
    return "", f"{item.reference} | {item.scene_label} | {', '.join(item.event_labels)}"


@gold_columns.register(TranslationItem)
@gold_columns.register(CaptionItem)
def _references_gold(item: TranslationItem | CaptionItem) -> tuple[str, str]:
    return "", " | ".join(item.references)


@gold_columns.register(SpeechGenerationItem)
def _speech_generation_gold(item: SpeechGenerationItem) -> tuple[str, str]:
    return "", item.text if item.text is not None else " | ".join(item.answers)


@gold_columns.register(OpenSourceItem)
def _open_source_gold(item: OpenSourceItem) -> tuple[str, str]:
    return "", f"{item.coarse} / {item.fine}"


def items_frame(items: Sequence[AnyItem]) -> Any:
    """A pandas DataFrame with one row per item, for display: uid, task, category, question, answer, audio.

    Args:
        items: Items of any kind (each kind's ``choices`` and ``answer`` columns: :func:`gold_columns`).

    Returns:
        A ``pandas.DataFrame``.
    """
    import pandas as pd

    rows = []
    for item in items:
        row: dict[str, Any] = {
            "uid": item.uid,
            "kind": item.kind,
            "task": item.task,
            "category": item.category,
            "question": item.question,
        }
        row["choices"], row["answer"] = gold_columns(item)
        row["audio"] = item.audio
        row["audio_status"] = item.audio_status.value if item.audio_status else None
        rows.append(row)
    return pd.DataFrame(rows)
