"""Import of the official AIR-Bench release into the kit's manifests.

The release is laid out as::

    ROOT/Foundation/Foundation_meta.json     list of {path, question, choice_a, choice_b, [choice_c], [choice_d],
                                             answer_gt, task_name, dataset_name, uniq_id}

(The release has at most ``choice_d``; the kit's closed-set items of up to 26 options carry ``choice_e`` ..
``choice_z`` in the same form, read and written the same way, with no gap allowed.)
    ROOT/Foundation/{task_name}_{dataset_name}/{path}
    ROOT/Chat/Chat_meta.json                 list of {path, question, answer_gt, meta_info, task_name,
                                             dataset_name, uniq_id}
    ROOT/Chat/{task_name}_{dataset_name}/{path}

``answer_gt`` of Foundation is the *text* of the correct choice; it becomes an index. For ``Audio_Grounding`` the
file on disk ends in ``.flac`` whatever ``path`` says. Every row is handled on its own: a bad row is rejected with
its reason (written to ``rejected.jsonl``) and the import goes on; bad audio is imported with its status.

The meta files are input like any other: bytes that are not UTF-8, integers longer than Python converts and nesting
deeper than :data:`~airbench_nb.manifests.MAX_JSON_DEPTH` reject the row that holds them (naming the field), and a
``dataset_name`` or ``path`` that would lead out of the release (``..``, an absolute path, a separator, a control
character) rejects its row too.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import singledispatch
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from pydantic import ValidationError

from airbench_nb.audio import AUDIO_EXTENSIONS
from airbench_nb.manifests import (
    MAX_JSON_DEPTH,
    DatasetCard,
    check_audio,
    clean_json,
    json_problem,
    loads_json,
    write_dataset_card,
    write_manifest,
    write_records,
)
from airbench_nb.records import (
    CHAT_TASKS,
    FOUNDATION_TASKS,
    KIT_CHAT_TASKS,
    KIT_FOUNDATION_TASKS,
    LETTERS,
    PERTURBATION_OF_KEY,
    AudioStatus,
    ChatItem,
    FoundationItem,
    ItemBase,
    Record,
    SingleChoiceItem,
    check_relative_audio_path,
)

logger = logging.getLogger(__name__)

FOUNDATION_META = "Foundation/Foundation_meta.json"
"""Location of the Foundation meta file inside the release root."""
CHAT_META = "Chat/Chat_meta.json"
"""Location of the Chat meta file inside the release root."""
FOUNDATION_REQUIRED = ("path", "question", "choice_a", "choice_b", "answer_gt", "task_name", "dataset_name", "uniq_id")
"""Fields every official Foundation row must have."""
CHAT_REQUIRED = ("path", "question", "answer_gt", "meta_info", "task_name", "dataset_name", "uniq_id")
"""Fields every official Chat row must have."""
OFFICIAL_FIELDS = {
    "uid": "uniq_id",
    "source_id": "uniq_id",
    "audio": "path",
    "task": "task_name",
    "dataset": "dataset_name",
    "reference": "answer_gt",
    "answer": "answer_gt",
}
"""The official field each item field comes from, to name the official field when an item fails validation."""
FLAC_TASKS = frozenset({"Audio_Grounding"})
"""Tasks whose audio files end in ``.flac`` on disk whatever ``path`` says."""


class Rejected(Record):
    """An official row that could not become an item, with the reason."""

    benchmark: str
    """``Foundation`` or ``Chat``."""
    file: str
    """The meta file, relative to the release root."""
    index: int
    """0-based position of the row in the meta file's JSON list."""
    uniq_id: str | None = None
    """The row's ``uniq_id``, when it had one."""
    task: str | None = None
    """The row's ``task_name``, when it had a string one."""
    field: str | None = None
    """The official field at fault."""
    reason: str
    """What is wrong with the row."""
    row: Any = None
    """The row as found, for inspection."""


class OfficialImportError(RuntimeError):
    """The release root holds no readable meta file at all."""


@dataclass
class BenchmarkImport:
    """What importing one meta file did."""

    benchmark: str
    """``Foundation`` or ``Chat``."""
    meta_file: str
    """Meta file path relative to the root."""
    present: bool = False
    """Whether the meta file exists."""
    file_error: str | None = None
    """Why the whole file could not be read (invalid JSON, not a list), else None."""
    rows: int = 0
    """Rows in the meta file."""
    items: list[FoundationItem | ChatItem] = field(default_factory=list)
    """Items imported."""
    rejected: list[Rejected] = field(default_factory=list)
    """Rows rejected, with reasons."""

    def task_table(self) -> list[dict[str, Any]]:
        """One row per task: rows, imported, rejected and imported items per audio status."""
        tasks: dict[str, Counter[str]] = {}
        for item in self.items:
            counter = tasks.setdefault(item.task, Counter())
            counter["rows"] += 1
            counter["imported"] += 1
            counter[item.audio_status.value if item.audio_status else "unchecked"] += 1
            if len(getattr(item, "choices", ())) == 2:
                counter["binary"] += 1
        for rej in self.rejected:
            counter = tasks.setdefault(rej.task or "(unknown)", Counter())
            counter["rows"] += 1
            counter["rejected"] += 1
        columns = ["rows", "imported", "rejected", *[s.value for s in AudioStatus]]
        if self.benchmark == "Foundation":
            columns.append("binary")
        return [{"task": task, **{c: tasks[task][c] for c in columns}} for task in sorted(tasks, key=str.lower)]


@dataclass
class ImportReport:
    """The outcome of :func:`import_official`."""

    root: Path
    """The release root that was read."""
    out: Path
    """The folder the manifests were written to."""
    foundation: BenchmarkImport
    """Foundation part."""
    chat: BenchmarkImport
    """Chat part."""

    @property
    def parts(self) -> list[BenchmarkImport]:
        """Both parts, Foundation first."""
        return [self.foundation, self.chat]

    def counts(self) -> dict[str, Any]:
        """Summary counts, as written to ``dataset.json``."""
        out: dict[str, Any] = {}
        for part in self.parts:
            statuses = Counter(i.audio_status.value for i in part.items if i.audio_status)
            out[part.benchmark] = {
                "present": part.present,
                "file_error": part.file_error,
                "rows": part.rows,
                "imported": len(part.items),
                "rejected": len(part.rejected),
                "audio_status": {s.value: statuses.get(s.value, 0) for s in AudioStatus},
                "reasons": dict(Counter(_reason_kind(r.reason) for r in part.rejected)),
            }
        return out


def _reason_kind(reason: str) -> str:
    return reason.split(":", 1)[0]


class _RowError(Exception):
    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


def _text(row: dict[str, Any], name: str, notes: list[str], *, allow_empty: bool = False) -> str:
    value = row.get(name)
    if value is None:
        raise _RowError(name, f"missing field: {name!r} is absent or null")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _RowError(name, f"bad type: {name!r} should be a string, got {type(value).__name__}")
    if not isinstance(value, str):
        notes.append(f"{name} was a number ({value!r}) and was read as text")
        value = str(value)
    if not allow_empty and not value.strip():
        raise _RowError(name, f"empty field: {name!r} is an empty string")
    return value


def _has_control(value: str) -> bool:
    return any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in value)


def _folder_name(row: dict[str, Any], name: str, notes: list[str]) -> str:
    """A field that becomes part of a folder name (``dataset_name``): it may not lead out of the release."""
    value = _text(row, name, notes)
    if value.strip() in (".", "..") or "/" in value or "\\" in value or PureWindowsPath(value).drive:
        raise _RowError(
            name,
            f"unsafe name: {name!r} is {value!r}; it is part of a folder name and may hold no "
            "path separator, drive or '..'",
        )
    if _has_control(value):
        raise _RowError(name, f"unsafe name: {name!r} holds a control or zero-width character: {value!r}")
    return value


def _uniq_id(row: dict[str, Any]) -> str:
    value = row.get("uniq_id")
    if value is None:
        raise _RowError("uniq_id", "missing field: 'uniq_id' is absent or null")
    if isinstance(value, bool) or not isinstance(value, int | str) or (isinstance(value, str) and not value.strip()):
        raise _RowError("uniq_id", f"bad type: 'uniq_id' should be an integer, got {value!r}")
    return str(value).strip()


def normalise_choice(text: str) -> str:
    """A choice's text with whitespace collapsed, a final period dropped and case folded (for loose matching)."""
    return re.sub(r"\s+", " ", text).strip().rstrip(".").casefold()


def match_answer(answer_gt: str, choices: list[str]) -> tuple[int, str | None]:
    """Find the index of the choice whose text is ``answer_gt``.

    An exact match wins; otherwise a match after folding case, collapsing whitespace and dropping a final
    period (with a note saying so).

    Args:
        answer_gt: The official answer text.
        choices: The choices in order.

    Returns:
        ``(index, note)`` where ``note`` is None for an exact match.

    Raises:
        _RowError: When no choice, or more than one, matches.
    """
    exact = [i for i, c in enumerate(choices) if c == answer_gt]
    if len(exact) == 1:
        return exact[0], None
    loose = [i for i, c in enumerate(choices) if normalise_choice(c) == normalise_choice(answer_gt)]
    if len(loose) == 1:
        return loose[0], f"answer_gt {answer_gt!r} matched choice {choices[loose[0]]!r} after normalising case/space"
    if not loose:
        raise _RowError("answer_gt", f"answer not among choices: {answer_gt!r} matches none of {choices!r}")
    raise _RowError("answer_gt", f"ambiguous answer: {answer_gt!r} matches several of {choices!r}")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the file system: no such file
        return False


def _audio_path(root: Path, benchmark: str, task: str, dataset: str, path: str, notes: list[str]) -> str:
    try:
        check_relative_audio_path(path)
    except ValueError as exc:
        raise _RowError("path", f"bad path: {exc}") from None
    if _has_control(path):
        raise _RowError("path", f"bad path: {path!r} holds a control or zero-width character")
    rel = PurePosixPath(benchmark, f"{task}_{dataset}", path)
    if task in FLAC_TASKS and rel.suffix.lower() != ".flac":
        if not rel.suffix and not rel.name.strip("."):
            raise _RowError("path", f"bad path: {path!r} names no file")
        rel = rel.with_suffix(".flac")
        notes.append(f"{task}: audio read from {rel.name} (the release stores this task as flac)")
    if not _is_file(root / rel) and rel.name.strip("."):
        for ext in AUDIO_EXTENSIONS:
            alt = rel.with_suffix(ext)
            if alt != rel and _is_file(root / alt):
                notes.append(f"audio {rel.name} not found; using {alt.name} (same name, other extension)")
                rel = alt
                break
    try:
        return check_relative_audio_path(str(rel))
    except ValueError as exc:
        raise _RowError("path", f"bad path: {exc}") from None


def _common(
    row: dict[str, Any], required: Sequence[str], tasks: dict[str, str], benchmark: str, notes: list[str]
) -> tuple[str, str, str]:
    """``(uniq_id, task, dataset)`` of a row whose required fields are present and whose task is official."""
    uniq = _uniq_id(row)
    for name in required:
        if name not in row:
            raise _RowError(name, f"missing field: {name!r} is absent")
    task = _text(row, "task_name", notes)
    if task not in tasks:
        valid = ", ".join(sorted(tasks, key=str.lower))
        raise _RowError("task_name", f"unknown task: {task!r} is not a {benchmark} task; valid task names are: {valid}")
    return uniq, task, _folder_name(row, "dataset_name", notes)


def _foundation_item(root: Path, row: dict[str, Any]) -> FoundationItem:
    notes: list[str] = []
    uniq, task, dataset = _common(row, FOUNDATION_REQUIRED, FOUNDATION_TASKS, "Foundation", notes)
    choices = [_text(row, "choice_a", notes), _text(row, "choice_b", notes)]
    names = [f"choice_{letter}" for letter in LETTERS[2:].lower()]  # the release has c and d; kit data up to z
    present = {}
    for name in names:
        value = row.get(name)
        present[name] = value is not None and not (isinstance(value, str) and not value.strip())
    last = max((i for i, name in enumerate(names) if present[name]), default=-1)
    for name in names[: last + 1]:
        if not present[name]:
            raise _RowError(name, f"gap in choices: {names[last]} is given but {name} is absent or empty")
        choices.append(_text(row, name, notes))
    answer_gt = _text(row, "answer_gt", notes)
    answer, note = match_answer(answer_gt, choices)
    if note:
        notes.append(note)
    audio = _audio_path(root, "Foundation", task, dataset, _text(row, "path", notes), notes)
    return FoundationItem(
        uid=f"foundation-{uniq}",
        source_id=uniq,
        task=task,
        dataset=dataset,
        audio=audio,
        question=_text(row, "question", notes),
        choices=choices,
        answer=answer,
        meta={"answer_gt": answer_gt, "path": row["path"]},
        notes=notes,
    )


def _chat_item(root: Path, row: dict[str, Any]) -> ChatItem:
    notes: list[str] = []
    uniq, task, dataset = _common(row, CHAT_REQUIRED, CHAT_TASKS, "Chat", notes)
    meta_info = row.get("meta_info")
    if isinstance(meta_info, list | dict):
        notes.append("meta_info was structured JSON and was serialised to text")
        meta_info = json.dumps(meta_info, ensure_ascii=False)
        row = {**row, "meta_info": meta_info}
    audio = _audio_path(root, "Chat", task, dataset, _text(row, "path", notes), notes)
    return ChatItem(
        uid=f"chat-{uniq}",
        source_id=uniq,
        task=task,
        dataset=dataset,
        audio=audio,
        question=_text(row, "question", notes),
        reference=_text(row, "answer_gt", notes),
        meta_info=_text(row, "meta_info", notes),
        meta={"path": row["path"]},
        notes=notes,
    )


def _import_part(root: Path, benchmark: str, meta_file: str, make: Any) -> BenchmarkImport:
    part = BenchmarkImport(benchmark=benchmark, meta_file=meta_file)
    path = root / meta_file
    if not path.is_file():
        logger.info("%s: no %s", root, meta_file)
        return part
    part.present = True
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Parse anyway: the rows whose fields hold the bad bytes are rejected one by one, naming the field.
        logger.warning("%s: byte %d is not valid UTF-8; the rows holding such bytes are rejected", path, exc.start)
        text = raw.decode("utf-8", errors="surrogateescape")
    try:
        rows = loads_json(text)
    except json.JSONDecodeError as exc:
        part.file_error = f"{path}:{exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})"
        return part
    except RecursionError:
        part.file_error = f"{path}: JSON nested too deeply to parse (rows nest at most {MAX_JSON_DEPTH} levels)"
        return part
    if not isinstance(rows, list):
        part.file_error = f"{path}: expected a JSON list of rows, got {type(rows).__name__}"
        return part
    part.rows = len(rows)
    seen: dict[str, int] = {}
    for index, row in enumerate(rows):
        task = row.get("task_name") if isinstance(row, dict) and isinstance(row.get("task_name"), str) else None
        task = clean_json(task)
        uniq = None
        try:
            if not isinstance(row, dict):
                raise _RowError(None, f"bad row: expected a JSON object, got {type(row).__name__}")
            problem = json_problem(row)
            if problem is not None:
                raise _RowError(problem[0], f"bad value: {problem[1]}")
            uniq = _uniq_id(row)
            if uniq in seen:
                raise _RowError("uniq_id", f"duplicate uniq_id: {uniq} already used by row {seen[uniq]}")
            item = make(root, row)
        except _RowError as exc:
            part.rejected.append(
                Rejected(
                    benchmark=benchmark,
                    file=meta_file,
                    index=index,
                    uniq_id=uniq,
                    task=task,
                    field=exc.field,
                    reason=exc.reason,
                    row=clean_json(row),
                )
            )
            continue
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = [str(p) for p in err["loc"]]
            if loc:
                loc[0] = OFFICIAL_FIELDS.get(loc[0], loc[0])
            where = ".".join(loc) or None
            part.rejected.append(
                Rejected(
                    benchmark=benchmark,
                    file=meta_file,
                    index=index,
                    uniq_id=uniq,
                    task=task,
                    field=where,
                    reason=f"invalid item: {err['msg']}",
                    row=clean_json(row),
                )
            )
            continue
        seen[uniq] = index
        part.items.append(item)
    return part


def import_official(root: str | Path, out: str | Path, *, workers: int = 4) -> ImportReport:
    """Import an official AIR-Bench release into ``out/foundation.jsonl`` and ``out/chat.jsonl``.

    Also writes ``out/rejected.jsonl`` (one :class:`Rejected` per row that could not be imported) and
    ``out/dataset.json`` (data root = ``root``, counts). Audio is checked and hashed; bad audio is kept with its
    status (``missing``, ``empty``, ``corrupt``) so that runs can count it.

    Args:
        root: The release root (holding ``Foundation/`` and/or ``Chat/``).
        out: Folder for the manifests.
        workers: Threads for audio checking.

    Returns:
        The :class:`ImportReport`; rows = imported + rejected for each meta file that could be read.

    Raises:
        OfficialImportError: If ``root`` holds neither meta file, or neither could be read.
    """
    root = Path(root).resolve()
    out = Path(out)
    if not root.is_dir():
        raise OfficialImportError(f"{root}: no such folder")
    foundation = _import_part(root, "Foundation", FOUNDATION_META, _foundation_item)
    chat = _import_part(root, "Chat", CHAT_META, _chat_item)
    if not foundation.present and not chat.present:
        raise OfficialImportError(
            f"{root} holds neither {FOUNDATION_META} nor {CHAT_META}: is this the root of an AIR-Bench release?"
        )
    if all(p.file_error or not p.present for p in (foundation, chat)):
        errors = "; ".join(p.file_error for p in (foundation, chat) if p.file_error)
        raise OfficialImportError(f"no meta file under {root} could be read: {errors}")
    for part in (foundation, chat):
        part.items = check_audio(part.items, root, workers=workers)
    report = ImportReport(root=root, out=out, foundation=foundation, chat=chat)
    out.mkdir(parents=True, exist_ok=True)
    if foundation.present and not foundation.file_error:
        write_manifest(out / "foundation.jsonl", foundation.items)
    if chat.present and not chat.file_error:
        write_manifest(out / "chat.jsonl", chat.items)
    write_records(out / "rejected.jsonl", [*foundation.rejected, *chat.rejected])
    write_dataset_card(out, DatasetCard(data_root=str(root), source="official-import", counts=report.counts()))
    return report


@singledispatch
def _add_official_answer(item: ItemBase, row: dict[str, Any]) -> None:
    """Add the item's gold to an official result ``row`` in the official fields of its kind.

    Raises:
        TypeError: For a kind without an official result format (only AIR-Bench's kinds have one).
    """
    raise TypeError(f"a {type(item).__name__} has no official result format")


@_add_official_answer.register
def _single_choice_answer(item: SingleChoiceItem, row: dict[str, Any]) -> None:
    for letter, choice in zip(LETTERS.lower(), item.choices, strict=False):
        row[f"choice_{letter}"] = choice
    row["answer_gt"] = item.choices[item.answer]


@_add_official_answer.register
def _chat_answer(item: ChatItem, row: dict[str, Any]) -> None:
    row["answer_gt"] = item.reference
    row["meta_info"] = item.meta_info


def official_result_row(item: SingleChoiceItem | ChatItem, response_text: str | None) -> dict[str, Any]:
    """One line of the official result format: the item's official meta fields plus ``response``.

    Imported items get their original fields back (``path`` as in the meta file, ``uniq_id`` as an integer when it
    was one); built items get the equivalent fields (``path`` relative to the data root). A failed response is
    written as an empty string, which the official scripts count as unparseable.
    """
    path = item.meta.get("path", item.audio)
    uniq: Any = item.source_id if item.source_id is not None else item.uid
    if isinstance(uniq, str) and uniq.isdigit():
        uniq = int(uniq)
    row: dict[str, Any] = {"path": path, "question": item.question}
    _add_official_answer(item, row)
    row.update(task_name=item.task, dataset_name=item.dataset, uniq_id=uniq, response=response_text or "")
    return row


def write_official_results(
    items: list[FoundationItem | ChatItem], responses: dict[str, str | None], path: str | Path
) -> Path:
    """Write the official result JSONL (meta fields + ``response``) for the items that have a response.

    Copies made for the kit's own analyses are left out, as the kit's score tables leave them out: SNR-graded copies
    (``meta.clean_uid``) and circular-evaluation copies (``meta.rotation_of``) whose original is among ``items``.
    The official scripts would otherwise count one question several times. The kit's own tasks (several clips or
    turns, :data:`~airbench_nb.records.KIT_FOUNDATION_TASKS` and ``KIT_CHAT_TASKS``) are left out too: the official
    format has one clip and one answer per row, and the official scripts know only the official task names.

    Args:
        items: Items in manifest order.
        responses: Response text by uid (None for a failed response).
        path: Destination file.

    Returns:
        The path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    uids = {item.uid for item in items}
    with open(path, "w", encoding="utf-8") as handle:
        for item in items:
            derived = (
                "clean_uid" in item.meta or item.meta.get("rotation_of") in uids or PERTURBATION_OF_KEY in item.meta
            )
            kit = item.task in KIT_FOUNDATION_TASKS or item.task in KIT_CHAT_TASKS
            if item.uid in responses and not derived and not kit:
                handle.write(json.dumps(official_result_row(item, responses[item.uid]), ensure_ascii=False) + "\n")
    return path
