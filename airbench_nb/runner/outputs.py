"""Outputs of the item loop that never destroy data: refusals, locks, repair of a cut file, appending records.

See :mod:`airbench_nb.runner` for the rules.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from airbench_nb.manifests import dumps_record

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)

RECORD_START = b'{"schema_version":'
"""How every record line the kit writes begins (:func:`~airbench_nb.manifests.dumps_record`)."""
FIRST_LINE_LIMIT = 4 * 1024 * 1024
"""Bytes read to find an existing output's first line; a longer first line is not one the kit wrote."""


class OutputError(ValueError):
    """An output the kit refuses to write; nothing was written.

    A file of another kind, one of the command's inputs, or a file holding another model's responses.
    """


class OutputLockedError(OutputError):
    """Another process is writing the same output (it holds ``<out>.lock``). Nothing was written."""


def is_fatal_api_error(exc: BaseException) -> bool:
    """Whether ``exc`` must stop a run at once: ``FatalAPIError`` or ``MissingAPIKeyError`` of the API client.

    The classes are looked up by name on :mod:`airbench_nb.api_client` when that module is loaded (an exception of
    a module never imported cannot be one of its classes), so a run without API models never imports the client.
    """
    kinds = tuple(
        kind
        for module in (sys.modules.get("airbench_nb.api_client"), sys.modules.get("airbench_nb.api_client.errors"))
        if module is not None
        for kind in (getattr(module, "FatalAPIError", None), getattr(module, "MissingAPIKeyError", None))
        if isinstance(kind, type)
    )
    return bool(kinds) and isinstance(exc, kinds)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name the same file (through links, ``..`` and relative parts)."""
    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def refuse_input_as_output(out: str | Path, inputs: Mapping[str, str | Path | None], option: str = "--out") -> None:
    """Refuse an output path that is one of the command's inputs.

    Args:
        out: The output path.
        inputs: ``{option or role: path}`` of the command's inputs (None values are skipped).
        option: How the output is named to the user.

    Raises:
        OutputError: Naming both options.
    """
    for name, path in inputs.items():
        if path is not None and same_file(out, path):
            raise OutputError(f"{option} {out} is also the {name} input; refusing to write over an input")


def _first_line(path: Path) -> tuple[int, bytes]:
    with open(path, "rb") as handle:
        head = handle.read(FIRST_LINE_LIMIT)
    lineno = 0
    start = 0
    while start < len(head):
        end = head.find(b"\n", start)
        lineno += 1
        line = head[start:] if end < 0 else head[start : end + 1]
        if line.strip():
            return lineno, line
        if end < 0:
            break
        start = end + 1
    return 0, b""


def check_output_file(path: str | Path, model: type[BaseModel], option: str = "--out") -> None:
    """Refuse an existing file that is not the kit's output of this kind; read only, the file is left untouched.

    The file may be absent or empty, or its first line must be a ``model`` record (a first line cut short by a
    crash is accepted when it starts as the kit's records do: :func:`repair_jsonl` drops it).

    Args:
        path: The output path.
        model: The record type the output holds (:class:`~airbench_nb.records.Response`, ``Verdict``).
        option: How the output is named to the user.

    Raises:
        OutputError: For a folder, or a file whose first line is not a ``model`` record (naming file and line).
    """
    path = Path(path)
    kind = model.__name__
    if path.is_dir():
        raise OutputError(f"{option} {path} is a folder, not a file of {kind} records")
    if not path.is_file():
        return
    lineno, line = _first_line(path)
    if not line:
        return
    refuse = f"{option} {path} is not a file of {kind} records the kit wrote, so it is left untouched"
    if not line.endswith(b"\n") and len(line) >= FIRST_LINE_LIMIT:
        raise OutputError(f"{refuse} (line {lineno} is longer than {FIRST_LINE_LIMIT} bytes); choose another {option}")
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        if not line.endswith(b"\n") and line.lstrip().startswith(RECORD_START):
            return  # the kit's first record, cut by a crash: repair_jsonl drops it
        raise OutputError(f"{refuse} (line {lineno} is not JSON); choose another {option}") from None
    try:
        model.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(record)"
        raise OutputError(f"{refuse} (line {lineno}, field {where!r}: {err['msg']}); choose another {option}") from None


_HELD_LOCKS: dict[Path, int] = {}
"""Outputs this process holds the lock of, with a reentrancy count (``infer`` locks before loading the model)."""


@contextmanager
def output_lock(path: str | Path) -> Iterator[None]:
    """Hold the advisory lock of an output (``fcntl.flock`` on ``<path>.lock``) while writing it.

    A second process asking for the same output's lock is refused at once. The lock file stays in place (removing
    it would let two processes lock two different files); it holds the pid of the last holder. Reentrant within a
    process. Where ``fcntl`` does not exist (Windows) nothing is locked.

    Raises:
        OutputLockedError: When another process holds the lock.
    """
    path = Path(path)
    key = path.resolve()
    if key in _HELD_LOCKS:
        _HELD_LOCKS[key] += 1
        try:
            yield
        finally:
            _HELD_LOCKS[key] -= 1
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        yield
        return
    lock_path = path.with_name(path.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise OutputLockedError(
                f"{path} is being written by {holder} (it holds {lock_path.name}); wait for it to finish or choose "
                "another output"
            ) from None
        handle.truncate(0)
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        _HELD_LOCKS[key] = 1
        try:
            yield
        finally:
            del _HELD_LOCKS[key]
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _is_json_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False


def repair_jsonl(path: str | Path) -> int:
    """Make an interrupted results file safe to append to, losing nothing that could be read.

    A final line cut short by a crash (no newline after it, not a JSON object) is dropped; a complete final line
    without its newline gets one. Any other line that is not a JSON object is moved to ``<path>.rejected``
    (appended, and made durable before the file is rewritten) with a warning naming its line. Call it while
    holding :func:`output_lock`.

    Args:
        path: A JSONL results file (absent is fine).

    Returns:
        How many lines were taken out (dropped or moved).
    """
    path = Path(path)
    if not path.is_file():
        return 0
    raw = path.read_bytes()
    if not raw:
        return 0
    lines = raw.split(b"\n")
    cut = b""
    if raw.endswith(b"\n"):
        lines = lines[:-1]
    elif not _is_json_object(lines[-1]):
        cut = lines.pop()
    keep: list[bytes] = []
    rejected: list[tuple[int, bytes]] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip() or _is_json_object(line):
            keep.append(line)
        else:
            rejected.append((lineno, line))
    if not cut and not rejected and raw.endswith(b"\n"):
        return 0
    if rejected:
        side = path.with_name(path.name + ".rejected")
        with open(side, "ab") as handle:
            handle.write(b"".join(line + b"\n" for _, line in rejected))
            handle.flush()
            os.fsync(handle.fileno())
        shown = ", ".join(str(n) for n, _ in rejected[:10]) + (", ..." if len(rejected) > 10 else "")
        logger.warning(
            "%s: moved %d unreadable line(s) (line %s) to %s; the other records are kept",
            path,
            len(rejected),
            shown,
            side,
        )
    if cut:
        logger.warning("%s: dropped a final line cut short by an interrupted run (%d bytes)", path, len(cut))
    replace_durably(path, b"".join(line + b"\n" for line in keep), ".repair")
    return len(rejected) + (1 if cut else 0)


def replace_durably(path: Path, data: bytes, suffix: str = ".part") -> None:
    """Write ``data`` as ``path`` all at once: into ``<path><suffix>``, fsynced, then renamed over ``path``.

    A crash leaves either the old file or the new one, never a part of it.
    """
    tmp = path.with_name(path.name + suffix)
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _loose_values(path: Path, name: str) -> dict[str, int]:
    """``{value: first line}`` of field ``name`` over the JSON-object lines of ``path`` (others are skipped)."""
    found: dict[str, int] = {}
    if not path.is_file():
        return found
    with open(path, "rb") as handle:
        for lineno, line in enumerate(handle, start=1):
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(obj, dict) and isinstance(obj.get(name), str):
                found.setdefault(obj[name], lineno)
    return found


def read_existing(path: str | Path, model: type[R]) -> list[R]:
    """The records of an output file, in file order (none when it is absent).

    Raises:
        ManifestError: If a line is JSON but not a valid record (naming file, line and field).
    """
    from airbench_nb.manifests import read_records

    path = Path(path)
    return read_records(path, model) if path.is_file() else []


class JsonlAppender:
    """Appends records to a JSONL file, flushing and fsyncing after each batch."""

    def __init__(self, path: str | Path) -> None:
        """Open ``path`` for appending (creating folders)."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, records: Iterable[BaseModel]) -> None:
        """Append records and make them durable."""
        for record in records:
            self._handle.write(dumps_record(record) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file."""
        self._handle.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
