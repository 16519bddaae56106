"""The SQLite cache of chat-completion response bodies."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


class ResponseCache:
    """A SQLite cache of chat-completion response bodies keyed by :meth:`ChatRequest.key`.

    WAL mode, one connection shared by threads under a lock; several processes may share the file. Stores the
    model name, the response body and the time, never headers or keys.

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
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                "response TEXT NOT NULL, created TEXT NOT NULL)"
            )
            self._db.commit()

    def _stored(self, key: str) -> str:
        if not self.namespace:
            return key
        return hashlib.sha256(f"{self.namespace}\0{key}".encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response body for ``key``, or None."""
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?", (self._stored(key),)).fetchone()
        return None if row is None else json.loads(row[0])

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored bodies of those ``keys`` that are cached."""
        stored = {self._stored(k): k for k in dict.fromkeys(keys)}
        wanted = list(stored)
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT key, response FROM responses WHERE key IN ({marks})"
                for key, response in self._db.execute(sql, chunk):
                    found[stored[key]] = json.loads(response)
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
