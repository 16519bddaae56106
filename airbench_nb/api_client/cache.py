"""The SQLite cache of chat-completion response bodies."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airbench_nb.api_client.errors import CacheError

logger = logging.getLogger(__name__)

_CORRUPTION_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
"""SQLite error codes of a damaged file or one that is not a database."""


def is_corruption(exc: sqlite3.DatabaseError) -> bool:
    """Whether an SQLite error says the file is damaged or not a database (not: locked, unwritable, missing)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code in _CORRUPTION_CODES
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text


class ResponseCache:
    """A SQLite cache of chat-completion response bodies keyed by :meth:`ChatRequest.key`.

    WAL mode, one connection shared by threads under a lock; several processes may share the file. Stores the
    model name, the response body and the time, never headers or keys. A file that is not a database, or a damaged
    one (``PRAGMA quick_check`` on opening), is moved aside to ``<path>.corrupt-<UTC time>`` with a warning and an
    empty cache is started: its answers are asked again, nothing crashes.

    Args:
        path: The SQLite file (parent folders are created).
        namespace: Mixed into every stored key (the client passes its endpoint URL), so that two servers that
            serve different checkpoints under the same model name never share answers through one cache file.
    """

    def __init__(self, path: str | Path, namespace: str = "") -> None:
        self.path = Path(path)
        self.namespace = namespace
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                raise CacheError(f"{self.path}: cannot open the cache: {type(exc).__name__}: {exc}") from None
            aside = self._move_aside()
            logger.warning(
                "%s: the cache is corrupt (%s); moved it aside to %s and started an empty one (its answers will be "
                "asked again)",
                self.path,
                exc,
                aside,
            )
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        """Connect, set WAL mode, create the table and check the file (a damaged one raises DatabaseError)."""
        db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                "response TEXT NOT NULL, created TEXT NOT NULL)"
            )
            db.commit()
            verdict = db.execute("PRAGMA quick_check(1)").fetchone()
            if verdict is None or verdict[0] != "ok":
                raise sqlite3.DatabaseError(f"database disk image is malformed (quick_check: {verdict})")
        except BaseException:
            db.close()
            raise
        return db

    def _move_aside(self) -> Path:
        """Rename the file (and its ``-wal``/``-shm`` companions) to ``<path>.corrupt-<UTC time>``; return it."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        number = 1
        while aside.exists():
            number += 1
            aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{number}")
        os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            companion = self.path.with_name(self.path.name + suffix)
            if companion.exists():
                os.replace(companion, aside.with_name(aside.name + suffix))
        return aside

    def _stored(self, key: str) -> str:
        if not self.namespace:
            return key
        return hashlib.sha256(f"{self.namespace}\0{key}".encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response body for ``key``, or None."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored bodies of those ``keys`` that are cached."""
        stored = {self._stored(k): k for k in dict.fromkeys(keys)}
        wanted = list(stored)
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            try:
                for start in range(0, len(wanted), 500):
                    chunk = wanted[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    sql = f"SELECT key, response FROM responses WHERE key IN ({marks})"
                    for key, response in self._db.execute(sql, chunk):
                        try:
                            found[stored[key]] = json.loads(response)
                        except ValueError:
                            logger.warning("%s: entry %s… is not JSON; asking again", self.path, key[:12])
            except sqlite3.DatabaseError as exc:
                if not is_corruption(exc):
                    raise
                logger.warning(
                    "%s: the cache got damaged while in use (%s); the rest of this run asks the server; delete or "
                    "move the file aside before the next run",
                    self.path,
                    exc,
                )
        return found

    def put(self, key: str, model: str, response: Mapping[str, Any], redact: Sequence[str] = ()) -> None:
        """Store a response body (any string of ``redact`` found in it is replaced by ``***`` first)."""
        text = json.dumps(response, ensure_ascii=False)
        for secret in redact:
            if secret:
                text = text.replace(secret, "***")
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, model, response, created) VALUES (?, ?, ?, ?)",
                (self._stored(key), model, text, datetime.now(UTC).isoformat()),
            )
            self._db.commit()

    def __contains__(self, key: object) -> bool:
        with self._lock:
            found = self._db.execute("SELECT 1 FROM responses WHERE key = ?", (self._stored(str(key)),)).fetchone()
            return found is not None

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
