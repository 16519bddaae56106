"""The one OpenAI-compatible client of the kit, shared by ``openai:`` models and ``openai:`` judges.

It sends chat-completion requests to OpenAI or to any OpenAI-compatible server (vLLM, Ollama, llama.cpp) through
the official ``openai`` package, and adds what an evaluation needs on top:

- **bounded concurrency**: an :class:`asyncio.Semaphore` caps the requests in flight (``concurrency``); a request
  waiting out a backoff does not hold a slot;
- **retries** (tenacity): exponential backoff with jitter on 429, 408/409, 5xx, timeouts, connection errors and
  malformed bodies (not JSON, no ``choices``, empty), honouring ``Retry-After`` and ``retry-after-ms``; never on
  400/401/403/404/422, which would fail again. The ``openai`` package's own retries are off (``max_retries=0``);
- **a SQLite cache** keyed by the sha256 of (model, messages, parameters): a rerun sends no request, and a fully
  cached rerun needs no API key. Only answers with text are stored (the response body, never headers or keys);
  failures are not, so a rerun retries them;
- **accounting**: requests, retries, cache hits, failures, tokens and cost from a :class:`PriceTable`;
- **dry runs**: :meth:`APIClient.estimate` counts calls, estimated tokens and cost before anything is spent;
- **the Batch API** (half price on OpenAI): write the requests file, submit, poll, collect into the cache.

Every request ends as one :class:`ChatResult` with ``text`` or an explicit ``error``; one bad request never stops
the others. Identical requests within one call are sent once.

API keys come from the environment only (``OPENAI_API_KEY`` or the variable named by ``api_key_env``); a local
server (127.0.0.1, localhost) needs none (the placeholder ``EMPTY`` is sent). A key never appears in the cache,
in logs or in error strings (error strings are scrubbed of it).

Example:
    >>> client = APIClient(base_url="http://127.0.0.1:8000/v1", cache_path="cache/judge.sqlite")  # doctest: +SKIP
    >>> results = client.run_sync([ChatRequest("gpt-4o", [{"role": "user", "content": "Hi"}])])  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import dataclasses
import email.utils
import hashlib
import io
import json
import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlparse

import tenacity

if TYPE_CHECKING:
    import openai

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4.0
"""Characters per token assumed by :meth:`APIClient.estimate` for text (the usual English rule of thumb)."""
AUDIO_TOKENS_PER_SECOND = 25.0
"""Input tokens per second of audio assumed by :meth:`APIClient.estimate`: Qwen2-Audio's encoder emits 25 frames
per second (Whisper's 50 Hz, pooled by 2). OpenAI audio models bill audio tokens separately (about 10 per second,
at a higher price): pass ``audio_tokens_per_second`` and a price table to suit the endpoint."""
MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens added per message by chat templates, in estimates."""
DEFAULT_MAX_OUTPUT_TOKENS = 256
"""Output tokens assumed per call in estimates when a request sets no ``max_tokens``."""
NO_KEY_PLACEHOLDER = "EMPTY"
"""Key sent to a local server when the key variable is unset (vLLM's convention for "no auth")."""
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})
"""Hosts that need no API key."""
RETRY_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses below 500 that are retried (every 5xx is retried too)."""
BATCH_ENDPOINT = "/v1/chat/completions"
"""The Batch API endpoint used for chat requests."""
BATCH_TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
"""Batch statuses after which nothing changes."""
BATCH_MAX_LINES = 50_000
"""OpenAI's limit on requests per batch file (a warning is logged above it)."""
BATCH_MAX_BYTES = 200 * 1024 * 1024
"""OpenAI's limit on the size of a batch file (a warning is logged above it)."""
_HASH_STRINGS_LONGER_THAN = 4096
"""Strings longer than this (base64 audio) are replaced by their own sha256 before the request key is hashed."""
_KEY_VERSION = 1
"""Version of the request-key recipe (a change makes old cache entries unreachable, never wrong)."""

T = TypeVar("T")


# ------------------------------------------------------------------------------------------------ errors


class APIClientError(RuntimeError):
    """A problem with the client's configuration or with a batch as a whole (not one request)."""


class MissingAPIKeyError(APIClientError):
    """No key in the environment for a remote endpoint (the message names the variable, never a value)."""


class MalformedResponseError(Exception):
    """A 200 answer whose body is not a chat completion (not JSON, no ``choices``, empty): retried."""


# ------------------------------------------------------------------------------------------------ records


def _canonical(value: Any) -> Any:
    """``value`` with long strings (base64 audio) replaced by their sha256, for fast hashing of big requests."""
    if isinstance(value, str):
        if len(value) > _HASH_STRINGS_LONGER_THAN:
            return "sha256:" + hashlib.sha256(value.encode()).hexdigest()
        return value
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


@dataclass
class ChatRequest:
    """One chat-completion request: what is sent, and what the cache is keyed by."""

    model: str
    """Model name as the server knows it (``gpt-4o``, ``Qwen/Qwen2-Audio-7B-Instruct``)."""
    messages: list[dict[str, Any]]
    """OpenAI chat messages (content may be a string or a list of ``text``/``input_audio`` parts)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Other body fields (``temperature``, ``top_p``, ``max_tokens``, ``seed``, ...); None values are dropped."""
    _key: str | None = field(default=None, init=False, repr=False, compare=False)
    """Memoised :meth:`key`."""

    def __post_init__(self) -> None:
        self.params = {k: v for k, v in self.params.items() if v is not None}

    def key(self) -> str:
        """The sha256 (hex) of the canonical JSON of (model, messages, params): the cache key and batch custom_id.

        Strings longer than 4096 characters (base64 audio) enter as their own sha256, so that a big request is
        hashed once, not copied into a big JSON string first.
        """
        if self._key is None:
            payload = {"v": _KEY_VERSION, "model": self.model, "messages": self.messages, "params": self.params}
            text = json.dumps(_canonical(payload), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            self._key = hashlib.sha256(text.encode()).hexdigest()
        return self._key

    def body(self) -> dict[str, Any]:
        """The JSON body sent to ``/v1/chat/completions``."""
        return {"model": self.model, "messages": self.messages, **self.params}


@dataclass
class ChatResult:
    """The outcome of one :class:`ChatRequest`: the answer text, or an explicit error."""

    text: str | None = None
    """The assistant message's content; None on failure."""
    error: str | None = None
    """Why there is no text (the last error after retries, scrubbed of keys); None on success."""
    input_tokens: int | None = None
    """Prompt tokens reported by the server (also for cache hits: what the original call used)."""
    output_tokens: int | None = None
    """Completion tokens reported by the server."""
    cached: bool = False
    """Whether the answer came from the cache (no request was sent; it cost nothing)."""
    latency_s: float | None = None
    """Seconds from the first attempt to the answer, retries and backoff included (0 for cache hits)."""
    cost_usd: float | None = None
    """What this call cost: 0 for cache hits, None when the price table lacks the model or no tokens came back."""
    finish_reason: str | None = None
    """The server's ``finish_reason`` (``stop``, ``length``, ...)."""
    attempts: int = 0
    """HTTP attempts made for this request (0 for cache hits and batch results)."""
    key: str = ""
    """The request's :meth:`ChatRequest.key`."""

    @property
    def ok(self) -> bool:
        """Whether the request produced text."""
        return self.error is None and self.text is not None


@dataclass(frozen=True)
class ModelPrice:
    """Prices of one model in USD per million tokens."""

    input_per_1m: float
    """USD per 1M prompt tokens."""
    output_per_1m: float
    """USD per 1M completion tokens."""


class PriceTable:
    """USD per million input and output tokens per model (a parameter: prices change, the kit ships none).

    A model is looked up by exact name, then by the longest table entry its name starts with (so ``gpt-4o``
    prices ``gpt-4o-2024-08-06``, while ``gpt-4o-mini`` needs its own entry to be priced apart). A model not in
    the table costs ``None`` (unknown), never 0.

    Args:
        prices: Model name to :class:`ModelPrice`, ``(input, output)`` or ``{"input": ..., "output": ...}``.
        batch_discount: Price factor for Batch API results (OpenAI: 0.5).
    """

    def __init__(
        self,
        prices: Mapping[str, ModelPrice | Sequence[float] | Mapping[str, float]],
        batch_discount: float = 0.5,
    ) -> None:
        self.prices: dict[str, ModelPrice] = {}
        for model, price in prices.items():
            if isinstance(price, ModelPrice):
                self.prices[model] = price
            elif isinstance(price, Mapping):
                self.prices[model] = ModelPrice(float(price["input"]), float(price["output"]))
            else:
                inp, out = price
                self.prices[model] = ModelPrice(float(inp), float(out))
        self.batch_discount = float(batch_discount)

    def price(self, model: str) -> ModelPrice | None:
        """The price entry for ``model``, or None when unknown."""
        if model in self.prices:
            return self.prices[model]
        prefixes = [name for name in self.prices if model.startswith(name)]
        return self.prices[max(prefixes, key=len)] if prefixes else None

    def cost(
        self, model: str, input_tokens: float | None, output_tokens: float | None, batch: bool = False
    ) -> float | None:
        """USD for one call, or None when the model is unknown or the token counts are missing."""
        price = self.price(model)
        if price is None or input_tokens is None or output_tokens is None:
            return None
        usd = (input_tokens * price.input_per_1m + output_tokens * price.output_per_1m) / 1e6
        return usd * (self.batch_discount if batch else 1.0)


@dataclass
class Usage:
    """Running totals of one :class:`APIClient` (over all its runs)."""

    calls: int = 0
    """Distinct requests that needed the server (not answered from the cache)."""
    requests_sent: int = 0
    """HTTP attempts made for chat completions (calls plus retries)."""
    retries: int = 0
    """Attempts after a failed one."""
    cache_hits: int = 0
    """Distinct requests answered from the cache."""
    failures: int = 0
    """Distinct requests that ended with an error."""
    input_tokens: int = 0
    """Prompt tokens of the calls made (cache hits excluded)."""
    output_tokens: int = 0
    """Completion tokens of the calls made (cache hits excluded)."""
    cost_usd: float = 0.0
    """Cost of the priced calls made."""
    unpriced_calls: int = 0
    """Calls that got an answer but could not be priced (model not in the table, or no usage reported)."""

    def as_dict(self) -> dict[str, Any]:
        """The totals as a plain dict (for logs and reports)."""
        return dataclasses.asdict(self)


@dataclass
class Estimate:
    """What a run would send and cost, computed without sending anything (a dry run)."""

    requests: int
    """Requests given (duplicates included)."""
    distinct: int
    """Distinct requests (identical ones are sent once)."""
    cached: int
    """Distinct requests already in the cache (free)."""
    to_send: int
    """Distinct requests that would be sent."""
    input_tokens: int
    """Estimated prompt tokens of the requests to send (text at ``CHARS_PER_TOKEN``, audio per second)."""
    output_tokens: int
    """Upper bound on completion tokens (each request's ``max_tokens``, or the default)."""
    audio_seconds: float
    """Seconds of audio in the requests to send."""
    cost_usd: float | None
    """Estimated cost of the priced requests (output at its upper bound); None without a price table."""
    unpriced: int
    """Requests to send whose model is not in the price table."""
    batch: bool = False
    """Whether the Batch API discount was applied."""

    def __str__(self) -> str:
        cost = "no price table" if self.cost_usd is None else f"≤ ${self.cost_usd:,.4f}"
        if self.unpriced:
            cost += f" (+{self.unpriced} calls of unpriced models)"
        return (
            f"{self.to_send} calls to send ({self.requests} requests, {self.distinct} distinct, {self.cached} cached); "
            f"~{self.input_tokens:,} input tokens (incl. {self.audio_seconds:.1f} s of audio), "
            f"≤ {self.output_tokens:,} output tokens; cost {cost}{' at batch price' if self.batch else ''}"
        )


# ------------------------------------------------------------------------------------------------ cache


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


# ------------------------------------------------------------------------------------------------ helpers


def is_local_url(base_url: str | None) -> bool:
    """Whether ``base_url`` points at this machine (such servers need no key)."""
    if not base_url:
        return False
    return (urlparse(base_url).hostname or "").lower() in LOCAL_HOSTS


def parse_completion(text: str) -> dict[str, Any]:
    """Check that a 200 body is a chat completion and return it decoded.

    Raises:
        MalformedResponseError: Empty body, not JSON, an ``error`` object, or no usable ``choices[0].message``.
    """
    if not text.strip():
        raise MalformedResponseError("malformed response: empty body")
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise MalformedResponseError(f"malformed response: not JSON ({text[:80]!r})") from exc
    return check_completion(body)


def check_completion(body: Any) -> dict[str, Any]:
    """Check that a decoded body is a chat completion (see :func:`parse_completion`) and return it."""
    if not isinstance(body, dict):
        raise MalformedResponseError(f"malformed response: a JSON {type(body).__name__}, not an object")
    if "error" in body and "choices" not in body:
        raise MalformedResponseError(f"malformed response: error object in a 200 answer: {str(body['error'])[:200]}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedResponseError("malformed response: no choices")
    first = choices[0]
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        raise MalformedResponseError("malformed response: choices[0] has no message")
    content = first["message"].get("content")
    if content is not None and not isinstance(content, str):
        raise MalformedResponseError(f"malformed response: content is a {type(content).__name__}")
    return body


def _retry_after_s(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms`` or ``Retry-After``: seconds or an HTTP date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed attempt is worth repeating: 429, 408, 409, 5xx, timeouts, connection errors, bad bodies."""
    import openai

    if isinstance(exc, MalformedResponseError | openai.APIConnectionError | openai.APIResponseValidationError):
        return True  # APITimeoutError is an APIConnectionError
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return False


def _describe(exc: BaseException) -> str:
    """A short error kind for logs (no message: messages may quote the request)."""
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status is not None else "")


def audio_seconds_of(messages: Sequence[Mapping[str, Any]]) -> float:
    """Total seconds of the ``input_audio`` parts of some messages (from the wav header; size-based fallback)."""
    import soundfile as sf

    total = 0.0
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if not isinstance(part, Mapping) or part.get("type") != "input_audio":
                continue
            data = (part.get("input_audio") or {}).get("data", "")
            try:
                info = sf.info(io.BytesIO(base64.b64decode(data)))
                total += info.frames / info.samplerate
            except Exception:  # noqa: BLE001 - an estimate: assume 16 kHz 16-bit mono from the size
                total += len(data) * 3 / 4 / 32000
    return total


def _text_chars(messages: Sequence[Mapping[str, Any]]) -> int:
    chars = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return chars


# ------------------------------------------------------------------------------------------------ client


class APIClient:
    """Async OpenAI-compatible chat client with bounded concurrency, retries, a cache, accounting and batches.

    Args:
        base_url: Server URL ending in ``/v1`` (e.g. ``http://127.0.0.1:8000/v1`` for vLLM); None for OpenAI.
        api_key_env: Environment variable holding the key (never the key itself). Unset is fine for a local
            server (``EMPTY`` is sent); for a remote one, sending fails with :class:`MissingAPIKeyError`.
        concurrency: Most requests in flight at once.
        timeout_s: Per-attempt timeout (connect, read, write) in seconds.
        max_retries: Retries after the first attempt (so ``max_retries + 1`` attempts at most).
        cache_path: SQLite cache file; None for no cache.
        prices: Price table for costs; None leaves costs unknown.
        backoff_initial_s: First backoff wait; it doubles per retry (plus up to as much again of jitter).
        backoff_max_s: Cap on one backoff wait.
        max_retry_after_s: Cap on a wait the server asks for with ``Retry-After``.
        audio_tokens_per_second: Audio rate assumed by :meth:`estimate`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        timeout_s: float = 60.0,
        max_retries: int = 5,
        cache_path: str | Path | None = None,
        prices: PriceTable | Mapping[str, Any] | None = None,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        max_retry_after_s: float = 120.0,
        audio_tokens_per_second: float = AUDIO_TOKENS_PER_SECOND,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
        self.base_url = base_url.rstrip("/") if base_url else None
        self.api_key_env = api_key_env
        self.concurrency = int(concurrency)
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        # Keys are namespaced by endpoint: one model name served by two servers must not share cached answers.
        namespace = self.base_url or "https://api.openai.com/v1"
        self.cache = ResponseCache(cache_path, namespace=namespace) if cache_path is not None else None
        self.prices = prices if isinstance(prices, PriceTable) or prices is None else PriceTable(prices)
        self.backoff_initial_s = float(backoff_initial_s)
        self.backoff_max_s = float(backoff_max_s)
        self.max_retry_after_s = float(max_retry_after_s)
        self.audio_tokens_per_second = float(audio_tokens_per_second)
        self.usage = Usage()
        self._usage_lock = threading.Lock()
        self._secret: str | None = None
        self._warned_shared_key = is_local_url(self.base_url)
        self._backoff = tenacity.wait_exponential_jitter(
            multiplier=self.backoff_initial_s, max=self.backoff_max_s, jitter=self.backoff_initial_s
        )

    def __repr__(self) -> str:
        return (
            f"APIClient(base_url={self.base_url!r}, api_key_env={self.api_key_env!r}, concurrency={self.concurrency}, "
            f"cache={str(self.cache.path) if self.cache is not None else None!r})"
        )

    # ------------------------------------------------------------------------------------------- keys

    def _api_key(self) -> str:
        """The key from the environment, the placeholder for a local server, or :class:`MissingAPIKeyError`."""
        value = os.environ.get(self.api_key_env, "").strip()
        if value:
            self._secret = value
            host = urlparse(self.base_url).hostname if self.base_url else "api.openai.com"
            if self.api_key_env == "OPENAI_API_KEY" and host != "api.openai.com" and not self._warned_shared_key:
                self._warned_shared_key = True
                logger.warning(
                    "sending the key of OPENAI_API_KEY to %s, which is not OpenAI; give this endpoint its own "
                    "variable with api_key_env=... (or unset it for a server without auth)",
                    host,
                )
            return value
        if is_local_url(self.base_url):
            return NO_KEY_PLACEHOLDER
        raise MissingAPIKeyError(
            f"no API key: set the environment variable {self.api_key_env} (or pass api_key_env= naming another) "
            f"for {self.base_url or 'the OpenAI API'}"
        )

    def _scrub(self, text: str) -> str:
        """``text`` with the key (if one was read) replaced by ``***``."""
        if self._secret and self._secret in text:
            return text.replace(self._secret, "***")
        return text

    def _client_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"api_key": self._api_key(), "max_retries": 0, "timeout": self.timeout_s}
        if self.base_url:
            kwargs["base_url"] = self.base_url
        return kwargs

    # ------------------------------------------------------------------------------------------- retry policy

    def _wait(self, state: tenacity.RetryCallState) -> float:
        """Backoff before the next attempt: the server's Retry-After (plus a little jitter), else exponential."""
        exc = state.outcome.exception() if state.outcome is not None else None
        asked = _retry_after_s(exc) if exc is not None else None
        if asked is not None:
            asked = min(asked, self.max_retry_after_s)
            return asked + random.uniform(0.0, min(1.0, 0.1 * asked + 0.01))
        return float(self._backoff(state))

    def _before_sleep(self, state: tenacity.RetryCallState, what: str) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        with self._usage_lock:
            self.usage.retries += 1
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        logger.info(
            "%s: %s on attempt %d/%d; retrying in %.2f s",
            what,
            _describe(exc) if exc is not None else "failure",
            state.attempt_number,
            self.max_retries + 1,
            wait,
        )

    def _retrying_kwargs(self, what: str) -> dict[str, Any]:
        return {
            "stop": tenacity.stop_after_attempt(self.max_retries + 1),
            "wait": self._wait,
            "retry": tenacity.retry_if_exception(is_retryable),
            "before_sleep": lambda state: self._before_sleep(state, what),
            "reraise": True,
        }

    # ------------------------------------------------------------------------------------------- results

    def _result_from_body(
        self,
        request: ChatRequest,
        body: Mapping[str, Any],
        *,
        cached: bool,
        latency_s: float | None,
        attempts: int = 0,
        batch: bool = False,
    ) -> ChatResult:
        choice = body["choices"][0]
        message = choice.get("message") or {}
        content = message.get("content")
        usage = body.get("usage") or {}
        input_tokens = usage.get("prompt_tokens")
        output_tokens = usage.get("completion_tokens")
        if cached:
            cost: float | None = 0.0
        else:
            cost = self.prices.cost(request.model, input_tokens, output_tokens, batch) if self.prices else None
        error = None
        if content is None:
            refusal = message.get("refusal")
            error = f"no content in the answer (finish_reason={choice.get('finish_reason')!r}" + (
                f", refusal={self._scrub(str(refusal))[:200]!r})" if refusal else ")"
            )
        return ChatResult(
            text=content,
            error=error,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached=cached,
            latency_s=latency_s,
            cost_usd=cost,
            finish_reason=choice.get("finish_reason"),
            attempts=attempts,
            key=request.key(),
        )

    def _account(self, result: ChatResult) -> None:
        """Add a non-cached result to the usage totals."""
        with self._usage_lock:
            u = self.usage
            u.calls += 1
            if result.error is not None:
                u.failures += 1
            if result.input_tokens is not None:
                u.input_tokens += result.input_tokens
            if result.output_tokens is not None:
                u.output_tokens += result.output_tokens
            if result.cost_usd is not None:
                u.cost_usd += result.cost_usd
            elif result.error is None:
                u.unpriced_calls += 1

    def _store(self, request: ChatRequest, body: Mapping[str, Any], result: ChatResult) -> None:
        if self.cache is not None and result.ok:
            try:
                self.cache.put(request.key(), request.model, body, redact=[self._secret] if self._secret else [])
            except sqlite3.Error as exc:  # the answer is still returned; only the cache misses it
                logger.warning("could not cache %s…: %s: %s", request.key()[:12], type(exc).__name__, exc)

    def _from_cache(self, requests: Mapping[str, ChatRequest]) -> dict[str, ChatResult]:
        if self.cache is None or not requests:
            return {}
        found = self.cache.get_many(requests)
        out = {}
        for key, body in found.items():
            try:
                out[key] = self._result_from_body(requests[key], check_completion(body), cached=True, latency_s=0.0)
            except MalformedResponseError:
                logger.warning("cache entry %s… is not a completion; asking again", key[:12])
        with self._usage_lock:
            self.usage.cache_hits += len(out)
        return out

    @staticmethod
    def _distinct(requests: Sequence[ChatRequest]) -> dict[str, ChatRequest]:
        distinct: dict[str, ChatRequest] = {}
        for request in requests:
            distinct.setdefault(request.key(), request)
        return distinct

    @staticmethod
    def _in_order(requests: Sequence[ChatRequest], by_key: Mapping[str, ChatResult]) -> list[ChatResult]:
        """One result per request, in order; a repeated request gets its own copy of the shared result."""
        out, seen = [], set()
        for request in requests:
            result = by_key[request.key()]
            out.append(result if result.key not in seen else dataclasses.replace(result))
            seen.add(result.key)
        return out

    # ------------------------------------------------------------------------------------------- run

    async def _send(self, client: openai.AsyncOpenAI, sem: asyncio.Semaphore, request: ChatRequest) -> dict:
        known = _create_params(client)
        kwargs = {k: v for k, v in request.params.items() if k in known}
        extra = {k: v for k, v in request.params.items() if k not in known}
        async with sem:
            with self._usage_lock:
                self.usage.requests_sent += 1
            raw = await client.chat.completions.with_raw_response.create(
                model=request.model, messages=request.messages, extra_body=extra or None, **kwargs
            )
            return parse_completion(raw.http_response.text)

    async def _one(self, client: openai.AsyncOpenAI, sem: asyncio.Semaphore, request: ChatRequest) -> ChatResult:
        """One request through the retry policy; always a result, never an exception."""
        t0 = time.perf_counter()
        attempts = 0
        what = f"{request.model} request {request.key()[:12]}…"
        try:
            async for attempt in tenacity.AsyncRetrying(**self._retrying_kwargs(what)):
                with attempt:
                    attempts += 1
                    body = await self._send(client, sem, request)
        except Exception as exc:  # noqa: BLE001 - one bad request never stops the others; its error is returned
            error = f"{type(exc).__name__}: {self._scrub(str(exc))}"
            if attempts > 1:
                error += f" (after {attempts} attempts)"
            logger.warning("%s failed: %s after %d attempt(s)", what, _describe(exc), attempts)
            result = ChatResult(error=error, latency_s=time.perf_counter() - t0, attempts=attempts, key=request.key())
            self._account(result)
            return result
        result = self._result_from_body(
            request, body, cached=False, latency_s=time.perf_counter() - t0, attempts=attempts
        )
        self._store(request, body, result)
        self._account(result)
        return result

    async def run(self, requests: Sequence[ChatRequest], progress: bool = False) -> list[ChatResult]:
        """Answer requests: cache first, then the server with bounded concurrency and retries.

        Args:
            requests: The requests; identical ones (same key) are sent once.
            progress: Show a tqdm progress bar over the requests sent.

        Returns:
            One :class:`ChatResult` per request, in order: text, or an explicit error.

        Raises:
            MissingAPIKeyError: Requests need sending to a remote server and its key variable is unset.
        """
        import openai
        from tqdm.auto import tqdm

        requests = list(requests)
        distinct = self._distinct(requests)
        by_key = self._from_cache(distinct)
        todo = [r for k, r in distinct.items() if k not in by_key]
        if todo:
            sem = asyncio.Semaphore(self.concurrency)
            client = openai.AsyncOpenAI(**self._client_kwargs())
            try:
                with tqdm(total=len(todo), desc="api", disable=not progress, leave=False) as bar:

                    async def tracked(request: ChatRequest) -> ChatResult:
                        result = await self._one(client, sem, request)
                        bar.update(1)
                        return result

                    for result in await asyncio.gather(*(tracked(r) for r in todo)):
                        by_key[result.key] = result
            finally:
                await client.close()
        logger.debug(
            "run: %d requests, %d distinct, %d sent; usage %s",
            len(requests),
            len(distinct),
            len(todo),
            self.usage.as_dict(),
        )
        return self._in_order(requests, by_key)

    def run_sync(self, requests: Sequence[ChatRequest], progress: bool = False) -> list[ChatResult]:
        """:meth:`run` from synchronous code, in a plain script as in Jupyter.

        Where an event loop is already running in this thread (a notebook), the run happens on a fresh loop in a
        worker thread, and this call blocks until it is done.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(requests, progress=progress))
        with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="airbench-api") as pool:
            return pool.submit(lambda: asyncio.run(self.run(requests, progress=progress))).result()

    # ------------------------------------------------------------------------------------------- dry run

    def estimate(
        self,
        requests: Sequence[ChatRequest],
        default_max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        batch: bool = False,
    ) -> Estimate:
        """Count calls, estimated tokens and cost of a run without sending anything.

        Input tokens are estimated as text characters / ``CHARS_PER_TOKEN`` plus ``MESSAGE_OVERHEAD_TOKENS`` per
        message plus audio seconds × ``audio_tokens_per_second``; output tokens are bounded by each request's
        ``max_tokens`` (or ``max_completion_tokens``, else ``default_max_output_tokens``). Cached requests are
        counted apart and cost nothing.
        """
        requests = list(requests)
        distinct = self._distinct(requests)
        cached = set(self.cache.get_many(distinct)) if self.cache is not None else set()
        todo = [r for k, r in distinct.items() if k not in cached]
        input_tokens = output_tokens = unpriced = 0
        audio_total = 0.0
        cost: float | None = 0.0 if self.prices is not None else None
        for request in todo:
            seconds = audio_seconds_of(request.messages)
            audio_total += seconds
            n_in = round(
                _text_chars(request.messages) / CHARS_PER_TOKEN
                + MESSAGE_OVERHEAD_TOKENS * len(request.messages)
                + seconds * self.audio_tokens_per_second
            )
            n_out = int(
                request.params.get("max_tokens")
                or request.params.get("max_completion_tokens")
                or default_max_output_tokens
            )
            input_tokens += n_in
            output_tokens += n_out
            if self.prices is not None:
                usd = self.prices.cost(request.model, n_in, n_out, batch)
                if usd is None:
                    unpriced += 1
                else:
                    cost = (cost or 0.0) + usd
        return Estimate(
            requests=len(requests),
            distinct=len(distinct),
            cached=len(distinct) - len(todo),
            to_send=len(todo),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            audio_seconds=audio_total,
            cost_usd=cost,
            unpriced=unpriced,
            batch=batch,
        )

    def dry_run(
        self, requests: Sequence[ChatRequest], batch: bool = False, echo: Callable[[str], Any] = print
    ) -> Estimate:
        """Print (``echo``) and return the :meth:`estimate` of a run; sends nothing (for ``--dry-run``)."""
        est = self.estimate(requests, batch=batch)
        echo(f"dry run against {self.base_url or 'the OpenAI API'}: {est}")
        return est

    # ------------------------------------------------------------------------------------------- batch API

    def _sync_call(self, what: str, fn: Callable[[], T]) -> T:
        """A management call (files, batches) through the same retry policy."""
        for attempt in tenacity.Retrying(**self._retrying_kwargs(what)):
            with attempt:
                return fn()
        raise AssertionError("unreachable")  # pragma: no cover - reraise=True raises

    def _sync_client(self) -> openai.OpenAI:
        import openai

        return openai.OpenAI(**self._client_kwargs())

    def write_batch_file(self, requests: Sequence[ChatRequest], path: str | Path) -> int:
        """Write the Batch API input file: one JSONL line per distinct request not already cached.

        Each line is ``{"custom_id": <request key>, "method": "POST", "url": "/v1/chat/completions", "body": ...}``.

        Returns:
            The number of lines written (0: everything is cached, nothing to submit).
        """
        distinct = self._distinct(requests)
        cached = set(self.cache.get_many(distinct)) if self.cache is not None else set()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = 0
        with path.open("w", encoding="utf-8") as handle:
            for key, request in distinct.items():
                if key in cached:
                    continue
                line = {"custom_id": key, "method": "POST", "url": BATCH_ENDPOINT, "body": request.body()}
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
                lines += 1
        size = path.stat().st_size
        if lines > BATCH_MAX_LINES or size > BATCH_MAX_BYTES:
            logger.warning(
                "%s: %d requests, %d bytes exceed OpenAI's batch limits (%d, %d): split the run",
                path,
                lines,
                size,
                BATCH_MAX_LINES,
                BATCH_MAX_BYTES,
            )
        logger.info("wrote %d batch requests (%d cached left out) to %s", lines, len(cached), path)
        return lines

    def submit_batch(self, path: str | Path, metadata: Mapping[str, str] | None = None) -> str:
        """Upload a batch file (purpose ``batch``) and create a batch (24 h window); returns the batch id."""
        path = Path(path)
        with self._sync_client() as client:
            uploaded = self._sync_call(
                f"upload {path.name}",
                lambda: client.files.create(file=(path.name, path.read_bytes()), purpose="batch"),
            )
            extra: dict[str, Any] = {"metadata": dict(metadata)} if metadata else {}
            batch = self._sync_call(
                "create batch",
                lambda: client.batches.create(
                    input_file_id=uploaded.id, endpoint=BATCH_ENDPOINT, completion_window="24h", **extra
                ),
            )
        logger.info("submitted batch %s (file %s, %s)", batch.id, uploaded.id, path.name)
        return batch.id

    def poll_batch(self, batch_id: str, interval_s: float = 30.0, timeout_s: float = 24 * 3600.0) -> dict[str, Any]:
        """Wait until a batch is completed, failed, expired or cancelled; returns the batch object as a dict.

        Raises:
            TimeoutError: The batch is still running after ``timeout_s`` (it goes on server-side; poll again).
        """
        deadline = time.monotonic() + timeout_s
        last = None
        with self._sync_client() as client:
            while True:
                batch = self._sync_call(f"retrieve batch {batch_id}", lambda: client.batches.retrieve(batch_id))
                if batch.status != last:
                    logger.info(
                        "batch %s: %s %s",
                        batch_id,
                        batch.status,
                        batch.request_counts.model_dump() if batch.request_counts else "",
                    )
                    last = batch.status
                if batch.status in BATCH_TERMINAL:
                    return batch.model_dump()
                if time.monotonic() + interval_s > deadline:
                    raise TimeoutError(f"batch {batch_id} still {batch.status} after {timeout_s:g} s; poll it again")
                time.sleep(interval_s)

    def collect_batch(self, batch_id: str, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """Read a finished batch's output and error files into one result per request (in order), and cache them.

        Requests answered before (cached) come from the cache; a request with no line in either file gets an
        explicit error naming the batch and its status. Costs use the table's batch discount.
        """
        requests = list(requests)
        distinct = self._distinct(requests)
        lines: dict[str, dict[str, Any]] = {}
        with self._sync_client() as client:
            batch = self._sync_call(f"retrieve batch {batch_id}", lambda: client.batches.retrieve(batch_id))
            for file_id in (batch.output_file_id, batch.error_file_id):
                if not file_id:
                    continue
                content = self._sync_call(f"download {file_id}", lambda fid=file_id: client.files.content(fid).text)
                for number, text in enumerate(content.split("\n"), 1):  # not splitlines(): U+2028 may sit in a row
                    if not text.strip():
                        continue
                    try:
                        row = json.loads(text)
                        lines[row["custom_id"]] = row
                    except (ValueError, KeyError, TypeError):
                        logger.warning("batch %s file %s line %d is not a batch result", batch_id, file_id, number)
        by_key = self._from_cache({k: r for k, r in distinct.items() if k not in lines})
        for key, request in distinct.items():
            if key in by_key:
                continue
            row = lines.get(key)
            if row is None:
                result = ChatResult(error=f"batch {batch_id} ({batch.status}): no result for this request", key=key)
                self._account(result)
                by_key[key] = result
                continue
            by_key[key] = self._batch_result(batch_id, request, row)
        return self._in_order(requests, by_key)

    def _batch_result(self, batch_id: str, request: ChatRequest, row: Mapping[str, Any]) -> ChatResult:
        key = request.key()
        response = row.get("response") or {}
        status = response.get("status_code")
        body = response.get("body")
        error = None
        if row.get("error"):
            err = row["error"]
            error = f"batch {batch_id}: {err.get('code')}: {err.get('message')}" if isinstance(err, dict) else str(err)
        elif status != 200:
            message = body.get("error", {}).get("message") if isinstance(body, dict) else body
            error = f"batch {batch_id}: HTTP {status}: {message}"
        else:
            try:
                body = check_completion(body)
            except MalformedResponseError as exc:
                error = f"batch {batch_id}: {exc}"
        if error is not None:
            result = ChatResult(error=self._scrub(error), key=key)
        else:
            result = self._result_from_body(request, body, cached=False, latency_s=None, batch=True)
            self._store(request, body, result)
        self._account(result)
        return result

    def run_batch(
        self,
        requests: Sequence[ChatRequest],
        path: str | Path,
        interval_s: float = 30.0,
        timeout_s: float = 24 * 3600.0,
    ) -> list[ChatResult]:
        """Write, submit, poll and collect in one call (nothing is submitted when everything is cached)."""
        if self.write_batch_file(requests, path) == 0:
            return self._in_order(list(requests), self._from_cache(self._distinct(requests)))
        batch_id = self.submit_batch(path)
        self.poll_batch(batch_id, interval_s=interval_s, timeout_s=timeout_s)
        return self.collect_batch(batch_id, requests)

    def close(self) -> None:
        """Close the cache."""
        if self.cache is not None:
            self.cache.close()


_CREATE_PARAMS: frozenset[str] | None = None


def _create_params(client: openai.AsyncOpenAI) -> frozenset[str]:
    """Body fields ``chat.completions.create`` takes as keyword arguments (the rest go in ``extra_body``)."""
    global _CREATE_PARAMS
    if _CREATE_PARAMS is None:
        import inspect

        skip = {"self", "model", "messages", "extra_headers", "extra_query", "extra_body", "timeout", "stream"}
        names = inspect.signature(client.chat.completions.create).parameters
        _CREATE_PARAMS = frozenset(name for name in names if name not in skip)
    return _CREATE_PARAMS
