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

Errors that no retry can get past stop the run with one :class:`FatalAPIError` (one line naming the endpoint and
the cause, never the key), and the requests in flight are cancelled: 401/403, a 404 saying the model is unknown
(error code ``model_not_found`` or a message such as "The model `x` does not exist") before that model ever
answered on this endpoint (a wrong model name; a stray 404 later, or one naming no model, stays one error), a
missing key (:class:`MissingAPIKeyError`), an endpoint that refused ``MAX_REFUSALS`` (3) connections before it
ever answered, and nonsense parameters (:class:`InvalidParameterError`, also a ``ValueError``). Callers stop their
item loops on it instead of writing one error per item. Each attempt has a deadline (``timeout_s``) for the whole
answer, body included. A corrupt cache file is moved aside (``<cache>.corrupt-<time>``) and rebuilt.

API keys come from the environment only and go only where named (:mod:`.endpoints` states the rules):
``openai:MODEL`` goes to OpenAI's endpoint, or ``OPENAI_BASE_URL`` when set, with ``OPENAI_API_KEY``; a local
endpoint gets no key unless its variable is named (``api_key_env``, ``--api-key-env NAME``), nor does any other
``@URL`` (the placeholder ``EMPTY`` is sent). URLs holding credentials are refused. A key never appears in the
cache, in logs, in error strings or in answer texts (a server that echoes it back gets ``***`` in its place).

Example:
    >>> client = APIClient(base_url="http://127.0.0.1:8000/v1", cache_path="cache/judge.sqlite")  # doctest: +SKIP
    >>> results = client.run_sync([ChatRequest("gpt-4o", [{"role": "user", "content": "Hi"}])])  # doctest: +SKIP

The package, one module per concern: :mod:`.errors`, :mod:`.records` (requests, results, prices, usage),
:mod:`.cache` (SQLite), :mod:`.endpoints` (URLs and keys), :mod:`.helpers` (completion checks, retry predicate),
:mod:`.client` (:class:`APIClient`), :mod:`.batch` (:class:`BatchAPI`) and :mod:`.replicas` (:class:`ReplicaPool`:
several replicas of one model, least-outstanding dispatch and failover). Import from here: every public name is
re-exported.
"""

from __future__ import annotations

from airbench_nb.api_client.batch import (
    BATCH_ENDPOINT,
    BATCH_MAX_BYTES,
    BATCH_MAX_LINES,
    BATCH_TERMINAL,
    BatchAPI,
)
from airbench_nb.api_client.cache import ResponseCache, is_corruption
from airbench_nb.api_client.client import (
    AUDIO_TOKENS_PER_SECOND,
    CHARS_PER_TOKEN,
    DEFAULT_MAX_OUTPUT_TOKENS,
    MAX_REFUSALS,
    MESSAGE_OVERHEAD_TOKENS,
    APIClient,
)
from airbench_nb.api_client.endpoints import (
    BASE_URL_ENV,
    DEFAULT_KEY_ENV,
    LOCAL_NETWORKS,
    NO_KEY_PLACEHOLDER,
    OPENAI_ENDPOINT,
    Endpoint,
    check_base_url,
    check_key_env,
    is_local_url,
    parse_openai_replicas,
    parse_openai_spec,
    redact_url,
    resolve_endpoint,
)
from airbench_nb.api_client.errors import (
    APIClientError,
    AttemptTimeoutError,
    CacheError,
    EndpointError,
    FatalAPIError,
    InvalidParameterError,
    MalformedResponseError,
    MissingAPIKeyError,
)
from airbench_nb.api_client.helpers import (
    RETRY_STATUSES,
    audio_seconds_of,
    check_completion,
    describe_error,
    distinct_requests,
    is_retryable,
    parse_completion,
    results_in_order,
    retry_after_s,
)
from airbench_nb.api_client.records import (
    Base64Text,
    ChatRequest,
    ChatResult,
    Estimate,
    ModelPrice,
    PriceTable,
    Usage,
    check_params,
)
from airbench_nb.api_client.replicas import COOL_OFF_S, DOWN_AFTER, ReplicaPool, ReplicaStats

__all__ = [
    "AUDIO_TOKENS_PER_SECOND",
    "BASE_URL_ENV",
    "BATCH_ENDPOINT",
    "BATCH_MAX_BYTES",
    "BATCH_MAX_LINES",
    "BATCH_TERMINAL",
    "CHARS_PER_TOKEN",
    "COOL_OFF_S",
    "DEFAULT_KEY_ENV",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DOWN_AFTER",
    "LOCAL_NETWORKS",
    "MAX_REFUSALS",
    "MESSAGE_OVERHEAD_TOKENS",
    "NO_KEY_PLACEHOLDER",
    "OPENAI_ENDPOINT",
    "RETRY_STATUSES",
    "APIClient",
    "APIClientError",
    "AttemptTimeoutError",
    "BatchAPI",
    "CacheError",
    "Base64Text",
    "ChatRequest",
    "ChatResult",
    "Endpoint",
    "EndpointError",
    "Estimate",
    "FatalAPIError",
    "InvalidParameterError",
    "MalformedResponseError",
    "MissingAPIKeyError",
    "ModelPrice",
    "PriceTable",
    "ReplicaPool",
    "ReplicaStats",
    "ResponseCache",
    "Usage",
    "audio_seconds_of",
    "check_base_url",
    "check_completion",
    "check_key_env",
    "describe_error",
    "distinct_requests",
    "check_params",
    "is_corruption",
    "is_local_url",
    "is_retryable",
    "parse_completion",
    "parse_openai_replicas",
    "parse_openai_spec",
    "redact_url",
    "resolve_endpoint",
    "results_in_order",
    "retry_after_s",
]
