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

The package, one module per concern: :mod:`.errors`, :mod:`.records` (requests, results, prices, usage),
:mod:`.cache` (SQLite), :mod:`.helpers` (local URLs, completion checks, retry predicate), :mod:`.client`
(:class:`APIClient`) and :mod:`.batch` (:class:`BatchAPI`). Import from here: every public name is re-exported.
"""

from __future__ import annotations

from airbench_nb.api_client.batch import (
    BATCH_ENDPOINT,
    BATCH_MAX_BYTES,
    BATCH_MAX_LINES,
    BATCH_TERMINAL,
    BatchAPI,
)
from airbench_nb.api_client.cache import ResponseCache
from airbench_nb.api_client.client import (
    AUDIO_TOKENS_PER_SECOND,
    CHARS_PER_TOKEN,
    DEFAULT_MAX_OUTPUT_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    APIClient,
)
from airbench_nb.api_client.errors import APIClientError, MalformedResponseError, MissingAPIKeyError
from airbench_nb.api_client.helpers import (
    LOCAL_HOSTS,
    NO_KEY_PLACEHOLDER,
    RETRY_STATUSES,
    _retry_after_s,
    audio_seconds_of,
    check_completion,
    is_local_url,
    is_retryable,
    parse_completion,
)
from airbench_nb.api_client.records import ChatRequest, ChatResult, Estimate, ModelPrice, PriceTable, Usage

__all__ = [
    "AUDIO_TOKENS_PER_SECOND",
    "BATCH_ENDPOINT",
    "BATCH_MAX_BYTES",
    "BATCH_MAX_LINES",
    "BATCH_TERMINAL",
    "CHARS_PER_TOKEN",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "LOCAL_HOSTS",
    "MESSAGE_OVERHEAD_TOKENS",
    "NO_KEY_PLACEHOLDER",
    "RETRY_STATUSES",
    "APIClient",
    "APIClientError",
    "BatchAPI",
    "ChatRequest",
    "ChatResult",
    "Estimate",
    "MalformedResponseError",
    "MissingAPIKeyError",
    "ModelPrice",
    "PriceTable",
    "ResponseCache",
    "Usage",
    "_retry_after_s",
    "audio_seconds_of",
    "check_completion",
    "is_local_url",
    "is_retryable",
    "parse_completion",
]
