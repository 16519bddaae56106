"""The client: bounded concurrency, retries, cache lookups, accounting, dry runs; batches through :mod:`.batch`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import random
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import tenacity

from airbench_nb.api_client.batch import BatchAPI
from airbench_nb.api_client.cache import ResponseCache
from airbench_nb.api_client.endpoints import BASE_URL_ENV, DEFAULT_KEY_ENV, NO_KEY_PLACEHOLDER, resolve_endpoint
from airbench_nb.api_client.errors import (
    AttemptTimeoutError,
    FatalAPIError,
    InvalidParameterError,
    MalformedResponseError,
    MissingAPIKeyError,
)
from airbench_nb.api_client.helpers import (
    _text_chars,
    audio_seconds_of,
    check_completion,
    describe_error,
    distinct_requests,
    first_token_logprobs,
    gather_all,
    is_retryable,
    parse_completion,
    results_in_order,
    retry_after_s,
)
from airbench_nb.api_client.records import ChatRequest, ChatResult, Estimate, PriceTable, Usage
from airbench_nb.hand_in import hand_in_number, next_number

if TYPE_CHECKING:
    import openai

logger = logging.getLogger(__name__)

T = TypeVar("T")

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
MAX_REFUSALS = 3
"""Connection failures, before the endpoint ever answered, after which a run stops (:class:`FatalAPIError`)."""
MODEL_NOT_FOUND = re.compile(
    r"model\b.*\b(not found|does not exist|doesn't exist|not exist|unknown|not available|no such)"
    r"|\b(unknown|no such|invalid) model\b",
    re.IGNORECASE,
)
"""A 404 message that says the model is not served (OpenAI, vLLM, Ollama, llama.cpp wordings); a 404 whose error
``code`` is ``model_not_found`` (OpenAI) says so too."""
CHAT_PATH = "/chat/completions"
"""Where chat requests are posted, under the base URL."""


def check_setting(
    name: str, value: Any, *, whole: bool = False, minimum: float | None = None, positive: bool = False
) -> None:
    """Refuse a client setting that makes no sense (not a number, NaN, infinite, below its minimum).

    Used by :class:`APIClient` and :class:`~airbench_nb.api_client.ReplicaPool` for their settings.

    Raises:
        InvalidParameterError: Naming the setting and its value.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParameterError(f"{name}={value!r} must be a number")
    if whole and not isinstance(value, int):
        raise InvalidParameterError(f"{name}={value!r} must be a whole number")
    if not math.isfinite(value):
        raise InvalidParameterError(f"{name}={value!r} must be a finite number")
    if positive and value <= 0:
        raise InvalidParameterError(f"{name}={value!r} must be more than 0")
    if minimum is not None and value < minimum:
        raise InvalidParameterError(f"{name}={value!r} must be {minimum:g} or more")


class APIClient:
    """Async OpenAI-compatible chat client with bounded concurrency, retries, a cache, accounting and batches.

    Args:
        base_url: Server URL ending in ``/v1`` (e.g. ``http://127.0.0.1:8000/v1`` for vLLM); None for the default
            endpoint: ``OPENAI_BASE_URL`` when set, else OpenAI's. URLs with credentials are refused.
        api_key_env: Environment variable holding the key (its name, never the key itself); its value is sent to
            the endpoint whatever it is; unset, it is a :class:`MissingAPIKeyError` for a remote endpoint (a local
            one gets no key, with a warning). None: ``OPENAI_API_KEY``
            for the default endpoint or ``api.openai.com``, unless local; no key anywhere else (see
            :mod:`airbench_nb.api_client.endpoints`).
        concurrency: Most requests in flight at once.
        timeout_s: Deadline of one attempt in seconds: connecting, sending, and the whole answer, body included
            (a server trickling its body past it fails the attempt, which is then retried as usual).
        max_retries: Retries after the first attempt (so ``max_retries + 1`` attempts at most).
        cache_path: SQLite cache file; None for no cache. A corrupt one is moved aside and rebuilt.
        prices: Price table for costs; None leaves costs unknown.
        backoff_initial_s: First backoff wait; it doubles per retry (plus up to as much again of jitter).
        backoff_max_s: Cap on one backoff wait.
        max_retry_after_s: Cap on a wait the server asks for with ``Retry-After``.
        audio_tokens_per_second: Audio rate assumed by :meth:`estimate`.
        max_refusals: Connection failures, with no answer ever received from the endpoint, after which the run
            stops with a :class:`FatalAPIError` (once the endpoint has answered, connection errors are retried).

    Raises:
        EndpointError: A base URL or key variable name that cannot be used.
        InvalidParameterError: A setting that makes no sense (NaN, negative, zero timeout, ...).

    Besides :meth:`run` and the Batch API, the client has a small public core for code that drives requests its
    own way (:class:`~airbench_nb.api_client.BatchAPI`, :class:`~airbench_nb.api_client.ReplicaPool`):
    :meth:`send` (one attempt), :meth:`fatal_error` (classify a failure), :meth:`call` (a synchronous call through
    the retry policy), :meth:`sync_client` and :meth:`async_client` (``openai`` clients on this endpoint with this
    key), :meth:`result_from_body`, :meth:`from_cache`, :meth:`store` and :meth:`account` (results, cache and
    usage), :meth:`scrub` and :attr:`redactions` (keeping the key out of what is kept), and :meth:`reset_stop`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key_env: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 60.0,
        max_retries: int = 5,
        cache_path: str | Path | None = None,
        prices: PriceTable | Mapping[str, Any] | None = None,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        max_retry_after_s: float = 120.0,
        audio_tokens_per_second: float = AUDIO_TOKENS_PER_SECOND,
        max_refusals: int = MAX_REFUSALS,
    ) -> None:
        check_setting("concurrency", concurrency, whole=True, minimum=1)
        check_setting("max_retries", max_retries, whole=True, minimum=0)
        check_setting("max_refusals", max_refusals, whole=True, minimum=1)
        check_setting("timeout_s", timeout_s, positive=True)
        for name, value in (
            ("backoff_initial_s", backoff_initial_s),
            ("backoff_max_s", backoff_max_s),
            ("max_retry_after_s", max_retry_after_s),
            ("audio_tokens_per_second", audio_tokens_per_second),
        ):
            check_setting(name, value, minimum=0)
        self.base_url = base_url.rstrip("/") if base_url else None
        self.target = resolve_endpoint(self.base_url, api_key_env)
        self.endpoint = self.target.url
        self.api_key_env = api_key_env
        self.concurrency = int(concurrency)
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.max_refusals = int(max_refusals)
        # Keys are namespaced by endpoint: one model name served by two servers must not share cached answers.
        self.cache = ResponseCache(cache_path, namespace=self.endpoint) if cache_path is not None else None
        self.prices = prices if isinstance(prices, PriceTable) or prices is None else PriceTable(prices)
        self.backoff_initial_s = float(backoff_initial_s)
        self.backoff_max_s = float(backoff_max_s)
        self.max_retry_after_s = float(max_retry_after_s)
        self.audio_tokens_per_second = float(audio_tokens_per_second)
        self.usage = Usage()
        self._usage_lock = threading.Lock()
        self._secret: str | None = None
        self._warned_unsent_key = False
        self._answered = False
        self._served: set[str] = set()  # models this endpoint has answered with a completion
        self._refusals = 0
        self._stopped: FatalAPIError | None = None
        self._stop_covers = 0  # the hand-in number of the current stop: runs handed in later start afresh
        self._backoff = tenacity.wait_exponential_jitter(
            multiplier=self.backoff_initial_s, max=self.backoff_max_s, jitter=self.backoff_initial_s
        )
        self._loop: _LoopThread | None = None  # run_sync's event loop and HTTP client, started on first use

    def __repr__(self) -> str:
        return (
            f"APIClient(endpoint={self.endpoint!r}, key_variable={self.key_variable!r}, "
            f"concurrency={self.concurrency}, cache={str(self.cache.path) if self.cache is not None else None!r})"
        )

    # ------------------------------------------------------------------------------------------- keys

    @property
    def key_variable(self) -> str | None:
        """The environment variable whose value is sent as the key; None when no key is sent (``EMPTY``)."""
        return self.target.key_variable

    def _api_key(self) -> str:
        """The key to send (see :mod:`.endpoints`): a variable's value, or the placeholder where no key goes.

        Raises:
            MissingAPIKeyError: The key's variable is unset or empty and the endpoint is not local (the message
                names it, never a value). A local endpoint then gets no key, with a warning.
        """
        variable = self.target.key_variable
        if variable is None:
            if os.environ.get(DEFAULT_KEY_ENV, "").strip() and not self.target.local and not self._warned_unsent_key:
                self._warned_unsent_key = True
                logger.warning(
                    "not sending %s to %s: it goes only to OpenAI's endpoint or %s; if this server needs a key, "
                    "name its variable with --api-key-env NAME (api_key_env=)",
                    DEFAULT_KEY_ENV,
                    self.target.host,
                    BASE_URL_ENV,
                )
            return NO_KEY_PLACEHOLDER
        value = os.environ.get(variable, "").strip()
        if value:
            self._secret = value
            return value
        if self.target.local:
            if not self._warned_unsent_key:
                self._warned_unsent_key = True
                logger.warning("%s is unset: sending no key to the local server %s", variable, self.endpoint)
            return NO_KEY_PLACEHOLDER
        how = "named by --api-key-env" if self.target.key_named else "or name another with --api-key-env NAME"
        raise MissingAPIKeyError(
            f"no API key for {self.endpoint}: set the environment variable {variable} ({how})", endpoint=self.endpoint
        )

    def scrub(self, text: str) -> str:
        """``text`` with the key (if one was read) replaced by ``***``: for every error string or answer kept."""
        if self._secret and self._secret in text:
            return text.replace(self._secret, "***")
        return text

    @property
    def redactions(self) -> list[str]:
        """Values to redact from what is stored (the cache): the key read for this endpoint, if one was read."""
        return [self._secret] if self._secret else []

    def _client_kwargs(self) -> dict[str, Any]:
        return {"api_key": self._api_key(), "base_url": self.endpoint, "max_retries": 0, "timeout": self.timeout_s}

    def sync_client(self) -> openai.OpenAI:
        """A synchronous ``openai.OpenAI`` on this endpoint with this key (the Batch API's management calls).

        Raises:
            MissingAPIKeyError: The key's variable is unset for an endpoint that needs one.
        """
        import openai

        return openai.OpenAI(**self._client_kwargs())

    def async_client(self) -> openai.AsyncOpenAI:
        """An ``openai.AsyncOpenAI`` on this endpoint with this key, its own retries off (for :meth:`send`).

        Raises:
            MissingAPIKeyError: The key's variable is unset for an endpoint that needs one.
        """
        import openai

        return openai.AsyncOpenAI(**self._client_kwargs())

    # ------------------------------------------------------------------------------------------- fatal errors

    def _server_said(self, exc: BaseException) -> str:
        """The server's error message of a status error, on one line, scrubbed of the key, at most 160 chars."""
        body = getattr(exc, "body", None)
        message: Any = None
        if isinstance(body, Mapping):
            inner = body.get("error")
            message = body.get("message") or (inner.get("message") if isinstance(inner, Mapping) else inner)
        text = " ".join(self.scrub(str(message or "")).split())
        return text[:157] + "..." if len(text) > 160 else text

    def _fatal_status(self, exc: BaseException, model: str | None) -> FatalAPIError | None:
        """The :class:`FatalAPIError` for a 401 or 403 answer, or a 404 for an unknown model; None otherwise."""
        status = getattr(exc, "status_code", None)
        if status == 404:
            return self._fatal_not_found(exc, model)
        if status not in (401, 403):
            return None
        variable = self.key_variable
        if status == 401:
            head = "401 Unauthorized"
            if variable is None:
                cause = "no key was sent; name the variable holding its key with --api-key-env NAME (api_key_env=)"
            else:
                cause = f"check {variable}"
        else:
            head = "403 Forbidden"
            what = f"model {model!r}" if model else "this request"
            cause = (
                f"the key in {variable} may not use {what}" if variable else f"no key was sent, and {what} needs one"
            )
        said = self._server_said(exc)
        message = f"{head} from {self.endpoint}: {cause}" + (f" (server: {said})" if said else "")
        return FatalAPIError(message, endpoint=self.endpoint, status=status)

    def _fatal_not_found(self, exc: BaseException, model: str | None) -> FatalAPIError | None:
        """The :class:`FatalAPIError` for a 404 that says ``model`` is not served, before it ever answered.

        The rule: a 404 is fatal when the server says the *model* is unknown (error code ``model_not_found``, or a
        message such as "The model `x` does not exist" or "model 'x' not found") and this endpoint has not yet
        answered a request for that model with a completion. That is a wrong model name (or an endpoint serving
        another model): every request would get the same 404, so the run stops instead of writing one error per
        item. A 404 for a model that has answered before (a stray 404 from a proxy or a server reloading) and a
        404 that does not name the model (a wrong path) stay one error for that request.
        """
        if model is None or model in self._served:
            return None
        body = getattr(exc, "body", None)
        code = body.get("code") if isinstance(body, Mapping) else None
        said = self._server_said(exc)
        if code != "model_not_found" and not MODEL_NOT_FOUND.search(said):
            return None
        message = (
            f"404 Not Found from {self.endpoint}: it does not serve model {model!r}; check the model name "
            "(openai:MODEL@URL; the server lists its models at /v1/models)" + (f" (server: {said})" if said else "")
        )
        return FatalAPIError(message, endpoint=self.endpoint, status=404)

    def fatal_error(self, exc: BaseException, model: str | None = None) -> FatalAPIError | None:
        """Classify a failed attempt: the :class:`FatalAPIError` it amounts to, or None (then retried or recorded).

        A fatal error is also recorded as this client's stop: requests not yet sent are not sent (see
        :meth:`send`) until :meth:`reset_stop`.

        401/403 are fatal, and so is a 404 saying the model is unknown before that model ever answered (see
        :meth:`_fatal_not_found`). A connection error (refused, closed without an answer; not a timeout) is fatal once
        ``max_refusals`` of them happened before the endpoint ever answered. Any answer, even an error status or a
        malformed body, shows the endpoint is there: later connection errors are retried as usual.
        """
        fatal = self._classify(exc, model)
        if fatal is not None and self._stopped is None:
            self._stopped = fatal  # requests waiting for a slot are not sent (see _send)
            self._stop_covers = next_number()  # ... nor those of the runs handed in before now (see run)
        return fatal

    def _classify(self, exc: BaseException, model: str | None) -> FatalAPIError | None:
        """:meth:`fatal_error` without recording the stop."""
        import openai

        if isinstance(exc, FatalAPIError):
            return exc
        if isinstance(exc, openai.APIStatusError):
            self._answered = True
            return self._fatal_status(exc, model)
        if isinstance(exc, openai.APITimeoutError | AttemptTimeoutError):
            return None
        if isinstance(exc, openai.APIConnectionError):
            with self._usage_lock:
                if self._answered:
                    return None
                self._refusals += 1
                refusals = self._refusals
            if refusals < self.max_refusals:
                return None
            cause = exc.__cause__ or exc
            return FatalAPIError(
                f"cannot connect to {self.endpoint}: {refusals} connection attempts failed and the endpoint never "
                f"answered ({type(cause).__name__}: {self.scrub(str(cause))[:120]}); is the server running and the "
                "URL right?",
                endpoint=self.endpoint,
            )
        if isinstance(exc, MalformedResponseError | openai.APIResponseValidationError):
            self._answered = True
        return None

    def reset_stop(self) -> None:
        """Forget a fatal stop, and the refusals counted if the endpoint never answered (a new run, after a fix)."""
        self._stopped = None
        if not self._answered:
            self._refusals = 0

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """A synchronous call (the Batch API's files and batches) through the retry policy and the fatal errors.

        Args:
            what: What the call does, for the retry log lines.
            fn: The call, e.g. ``lambda: client.batches.retrieve(batch_id)`` on a :meth:`sync_client`.

        Returns:
            What ``fn`` returned.

        Raises:
            FatalAPIError: 401/403, or an endpoint that refused every connection (see :meth:`fatal_error`).
            Exception: What the last attempt raised, when it is not worth retrying or the retries are spent.
        """

        def guarded() -> T:
            try:
                result = fn()
            except Exception as exc:
                fatal = self.fatal_error(exc)
                if fatal is not None:
                    raise fatal from None
                raise
            self._answered = True
            return result

        for attempt in tenacity.Retrying(**self._retrying_kwargs(what)):
            with attempt:
                return guarded()
        raise AssertionError("unreachable")  # pragma: no cover - reraise=True raises

    # ------------------------------------------------------------------------------------------- retry policy

    def _wait(self, state: tenacity.RetryCallState) -> float:
        """Backoff before the next attempt: the server's Retry-After (plus a little jitter), else exponential."""
        exc = state.outcome.exception() if state.outcome is not None else None
        asked = retry_after_s(exc) if exc is not None else None
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
            describe_error(exc) if exc is not None else "failure",
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

    def result_from_body(
        self,
        request: ChatRequest,
        body: Mapping[str, Any],
        *,
        cached: bool,
        latency_s: float | None,
        attempts: int = 0,
        batch: bool = False,
    ) -> ChatResult:
        """The :class:`ChatResult` of a completion body (checked): text scrubbed of the key, tokens, cost.

        Args:
            request: The request answered.
            body: The completion (see :func:`~airbench_nb.api_client.helpers.check_completion`).
            cached: Whether it came from the cache (then it costs nothing).
            latency_s: Seconds the request took; None when unknown (a batch).
            attempts: Attempts made.
            batch: Whether it was answered through the Batch API (priced at the batch rate).
        """
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
        if isinstance(content, str):
            content = self.scrub(content)  # a server that echoes the key never gets it into responses or verdicts
        audio = message.get("audio") if isinstance(message.get("audio"), Mapping) else {}
        audio_data = audio.get("data") if isinstance(audio.get("data"), str) and audio.get("data") else None
        transcript = self.scrub(audio["transcript"]) if isinstance(audio.get("transcript"), str) else None
        if content is None and audio_data is not None:  # a spoken answer: the text is its transcript
            content = transcript or ""
        error = None
        if content is None:
            refusal = message.get("refusal")
            error = f"no content in the answer (finish_reason={choice.get('finish_reason')!r}" + (
                f", refusal={self.scrub(str(refusal))[:200]!r})" if refusal else ")"
            )
        return ChatResult(
            first_token_logprobs=first_token_logprobs(choice),
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
            audio_data=audio_data,
            audio_transcript=transcript,
        )

    def account(self, result: ChatResult) -> None:
        """Add a non-cached result to the usage totals (thread-safe)."""
        with self._usage_lock:
            self.usage.add(result)

    def store(self, request: ChatRequest, body: Mapping[str, Any], result: ChatResult) -> None:
        """Put an answered request's body in the cache (key redacted); a failure to cache is only logged."""
        if self.cache is not None and result.ok:
            try:
                self.cache.put(request.key(), request.model, body, redact=self.redactions)
            except sqlite3.Error as exc:  # the answer is still returned; only the cache misses it
                logger.warning("could not cache %s…: %s: %s", request.key()[:12], type(exc).__name__, exc)

    def from_cache(self, requests: Mapping[str, ChatRequest]) -> dict[str, ChatResult]:
        """The cached results of some requests (by key), counted as cache hits; the others are absent."""
        if self.cache is None or not requests:
            return {}
        found = self.cache.get_many(requests)
        out = {}
        for key, body in found.items():
            try:
                out[key] = self.result_from_body(requests[key], check_completion(body), cached=True, latency_s=0.0)
            except MalformedResponseError:
                logger.warning("cache entry %s… is not a completion; asking again", key[:12])
        with self._usage_lock:
            self.usage.cache_hits += len(out)
        return out

    # ------------------------------------------------------------------------------------------- run

    async def send(
        self,
        session: openai.AsyncOpenAI,
        request: ChatRequest,
        slot: contextlib.AbstractAsyncContextManager[Any] | None = None,
    ) -> dict[str, Any]:
        """One attempt at a request: the completion body, or an exception (a fatal one as :class:`FatalAPIError`).

        Args:
            session: An :meth:`async_client` of this client.
            request: The request.
            slot: Held while the request is in flight (the client's semaphore in :meth:`run`); None: no bound.

        Returns:
            The checked completion body.

        Raises:
            FatalAPIError: This attempt or an earlier one hit a fatal error (see :meth:`fatal_error`).
            AttemptTimeoutError: No complete answer within ``timeout_s``.
            Exception: What the attempt raised otherwise (``openai`` errors, :class:`MalformedResponseError`).
        """
        # The body as it is sent: the SDK's ``chat.completions.create`` would walk every message part (the audio's
        # base64 text included) through its typed transform, about a millisecond per audio request, then run the
        # JSON encoder over it; posting the body's bytes with the same client's HTTP client (:class:`_DirectPost`)
        # keeps its headers, key, timeouts and error classes without either, nor the SDK's per-request options and
        # hooks (an SDK without what that needs is posted to through its ``post``; one whose ``post`` takes no
        # ``content`` is given the body to encode).
        direct = _DirectPost.of(session)
        payload: dict[str, Any] = (
            {"content": request.body_bytes()}
            if direct is not None or _posts_content(session)
            else {"body": request.body()}
        )
        async with slot if slot is not None else contextlib.nullcontext():
            if self._stopped is not None:  # another request hit a fatal error: send nothing more
                raise self._stopped
            with self._usage_lock:
                self.usage.requests_sent += 1
            try:
                # A deadline for the whole attempt: httpx's timeouts are per read, so a server trickling its body
                # a byte at a time would otherwise hold the attempt for as long as it likes.
                async with asyncio.timeout(self.timeout_s):
                    if direct is not None:
                        text = await direct.post(payload["content"])
                    else:
                        text = await session.post(CHAT_PATH, cast_to=str, **payload)
            except TimeoutError:
                raise AttemptTimeoutError(
                    f"no complete answer within {self.timeout_s:g} s (the deadline of one attempt, body included)"
                ) from None
            except Exception as exc:
                fatal = self.fatal_error(exc, request.model)
                if fatal is not None:
                    raise fatal from None
                raise
            self._answered = True
            body = parse_completion(text)
            self._served.add(request.model)
            return body

    async def _one(self, client: openai.AsyncOpenAI, sem: asyncio.Semaphore, request: ChatRequest) -> ChatResult:
        """One request through the retry policy: a result, or a :class:`FatalAPIError` that stops the run."""
        t0 = time.perf_counter()
        attempts = 0
        what = f"{request.model} request {request.key()[:12]}…"
        try:
            async for attempt in tenacity.AsyncRetrying(**self._retrying_kwargs(what)):
                with attempt:
                    attempts += 1
                    body = await self.send(client, request, sem)
        except FatalAPIError:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad request never stops the others; its error is returned
            error = f"{type(exc).__name__}: {self.scrub(str(exc))}"
            if attempts > 1:
                error += f" (after {attempts} attempts)"
            logger.warning("%s failed: %s after %d attempt(s)", what, describe_error(exc), attempts)
            result = ChatResult(error=error, latency_s=time.perf_counter() - t0, attempts=attempts, key=request.key())
            self.account(result)
            return result
        result = self.result_from_body(
            request, body, cached=False, latency_s=time.perf_counter() - t0, attempts=attempts
        )
        self.store(request, body, result)
        self.account(result)
        return result

    async def run(
        self, requests: Sequence[ChatRequest], progress: bool = False, ticket: int | None = None
    ) -> list[ChatResult]:
        """Answer requests: cache first, then the server with bounded concurrency and retries.

        Runs handed to :meth:`run_sync` at once (a runner asking the next batch while one is in flight) share its
        ``concurrency`` slots: requests in flight stay bounded by it over all of them. A fatal error in one stops
        the runs handed in before it; a run handed in after it starts afresh (a new run, after a fix). A run is
        handed in when :meth:`run_sync` is called, or at the moment carried by the context it runs in (every batch
        of one runner's run carries the moment the run started: :func:`airbench_nb.hand_in.handed_in_at`).

        Args:
            requests: The requests; identical ones (same key) are sent once.
            progress: Show a tqdm progress bar over the requests sent.
            ticket: The run's hand-in number (:func:`~airbench_nb.hand_in.hand_in_number`, taken by :meth:`run_sync`
                when it is called; None: taken now).

        Returns:
            One :class:`ChatResult` per request, in order: text, or an explicit error.

        Raises:
            FatalAPIError: The endpoint answered 401 or 403, or 404 for a model it never served (a wrong model
                name), or refused every connection, or the key's variable is unset (:class:`MissingAPIKeyError`).
                The requests still in flight are cancelled; the answers received before are in the cache (when
                there is one).
        """
        requests = list(requests)
        distinct = distinct_requests(requests)
        by_key = self.from_cache(distinct)
        todo = [r for k, r in distinct.items() if k not in by_key]
        if (ticket if ticket is not None else hand_in_number()) > self._stop_covers:
            self.reset_stop()
        if todo:
            client, kept = self._session_for_this_loop()
            held = self._loop
            if kept and held is not None:  # run_sync's loop: one set of slots for every run on it
                if held.slots is None:
                    held.slots = asyncio.Semaphore(self.concurrency)
                sem = held.slots
            else:
                sem = asyncio.Semaphore(self.concurrency)
            try:
                for result in await gather_all(todo, lambda r: self._one(client, sem, r), progress=progress):
                    by_key[result.key] = result
            finally:
                if not kept:
                    await client.close()
        logger.debug(
            "run: %d requests, %d distinct, %d sent; usage %s",
            len(requests),
            len(distinct),
            len(todo),
            self.usage.as_dict(),
        )
        return results_in_order(requests, by_key)

    def _session_for_this_loop(self) -> tuple[openai.AsyncOpenAI, bool]:
        """The HTTP client for a run on the running loop, and whether it is kept after the run.

        On the loop of :meth:`run_sync` one client (its connection pool, its TLS context) serves every run, made
        again only when the key read from the environment changes; a run on another loop (``await run(...)``
        from the caller's own loop) gets a client of its own, closed when the run ends.

        Raises:
            MissingAPIKeyError: The key's variable is unset for an endpoint that needs one.
        """
        held = self._loop
        if held is None or asyncio.get_running_loop() is not held.loop:
            return self.async_client(), False
        return self._kept_session(held), True

    def _kept_session(self, held: _LoopThread) -> openai.AsyncOpenAI:
        """The HTTP client kept on ``held`` (called on its loop), made when there is none or the key changed.

        Raises:
            MissingAPIKeyError: The key's variable is unset for an endpoint that needs one.
        """
        kwargs = self._client_kwargs()
        if held.session is None or held.session_key != kwargs["api_key"]:
            import openai

            stale, held.session = held.session, openai.AsyncOpenAI(**kwargs)
            held.session_key = kwargs["api_key"]
            if stale is not None:
                held.loop.create_task(stale.close())
        return held.session

    def run_sync(self, requests: Sequence[ChatRequest], progress: bool = False) -> list[ChatResult]:
        """:meth:`run` from synchronous code, in a plain script as in Jupyter.

        Every call runs on one event loop of this client's own, in a worker thread started on the first call (so
        it works alike where the caller's thread already runs a loop, as in a notebook), with one HTTP client and
        its pool of open connections kept from call to call; :meth:`close` stops both. Several threads may call it
        at once: their runs share the ``concurrency`` slots (see :meth:`run`).
        """
        return self._loop_thread().run(self.run(requests, progress=progress, ticket=hand_in_number()))

    def warm(self) -> None:
        """Start :meth:`run_sync`'s event loop and make its HTTP client there, in the background; return at once.

        Making the client loads a TLS context (about 40 ms); a backend calls this when it is made, so that this
        happens while the runner reads the manifest and checks the audio rather than before the first request. A
        client that cannot be made now (no key in the environment) is not an error here: the first run raises it.
        """
        held = self._loop_thread()

        async def make() -> None:
            with contextlib.suppress(Exception):
                self._kept_session(held)

        asyncio.run_coroutine_threadsafe(make(), held.loop)

    def _loop_thread(self) -> _LoopThread:
        """The event loop of :meth:`run_sync`, started on first use (again in a forked child)."""
        with self._usage_lock:
            if self._loop is not None and not self._loop.usable():  # a forked child: its thread did not come along
                self._loop = None
            if self._loop is None:
                self._loop = _LoopThread()
                # A client dropped without close() still stops its thread (and its connections) when collected.
                weakref.finalize(self, self._loop.stop)
            return self._loop

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
        distinct = distinct_requests(requests)
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
        echo(f"dry run against {self.endpoint}: {est}")
        return est

    # ------------------------------------------------------------------------------------------- batch API

    @property
    def batch(self) -> BatchAPI:
        """The Batch API through this client's endpoint, key, retry policy, cache and usage totals."""
        return BatchAPI(self)

    def write_batch_file(self, requests: Sequence[ChatRequest], path: str | Path) -> int:
        """See :meth:`BatchAPI.write_batch_file`."""
        return self.batch.write_batch_file(requests, path)

    def submit_batch(self, path: str | Path, metadata: Mapping[str, str] | None = None) -> str:
        """See :meth:`BatchAPI.submit_batch`."""
        return self.batch.submit_batch(path, metadata)

    def poll_batch(self, batch_id: str, interval_s: float = 30.0, timeout_s: float = 24 * 3600.0) -> dict[str, Any]:
        """See :meth:`BatchAPI.poll_batch`."""
        return self.batch.poll_batch(batch_id, interval_s=interval_s, timeout_s=timeout_s)

    def collect_batch(self, batch_id: str, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """See :meth:`BatchAPI.collect_batch`."""
        return self.batch.collect_batch(batch_id, requests)

    def run_batch(
        self,
        requests: Sequence[ChatRequest],
        path: str | Path,
        interval_s: float = 30.0,
        timeout_s: float = 24 * 3600.0,
    ) -> list[ChatResult]:
        """See :meth:`BatchAPI.run_batch`."""
        return self.batch.run_batch(requests, path, interval_s=interval_s, timeout_s=timeout_s)

    def close(self) -> None:
        """Close the cache, and the HTTP client and event loop of :meth:`run_sync` (made again if used later)."""
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.stop()
        if self.cache is not None:
            self.cache.close()


class _LoopThread:
    """An event loop running in a daemon thread of its own, to which synchronous code hands coroutines.

    It also keeps the HTTP client made on it (:meth:`APIClient._session_for_this_loop`), closed by :meth:`stop`.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.session: openai.AsyncOpenAI | None = None
        """The HTTP client kept on this loop."""
        self.session_key: str | None = None
        """The key it sends."""
        self.slots: asyncio.Semaphore | None = None
        """The client's ``concurrency`` slots, shared by the runs on this loop."""
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self.loop.run_forever, name="airbench-api", daemon=True)
        self._thread.start()

    def usable(self) -> bool:
        """Whether the loop runs, in this process (a child forked after it started has no such thread)."""
        return self._pid == os.getpid() and self._thread.is_alive() and not self.loop.is_closed()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result; an interrupt of the caller cancels it.

        Raises:
            RuntimeError: Called from the loop's own thread (it would wait on itself).
        """
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("run_sync called from its own event loop: await run() there instead")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def stop(self) -> None:
        """Close the kept HTTP client, then stop the loop and its thread (idempotent)."""
        if not self.usable():
            return
        if threading.current_thread() is self._thread:  # collected on the loop itself: only stop it
            self.loop.stop()
            return

        async def close_session() -> None:  # on the loop, after what was handed to it before (a warm-up's client)
            session, self.session = self.session, None
            if session is not None:
                await session.close()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close_session(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


_POSTS_CONTENT: bool | None = None


def _posts_content(session: openai.AsyncOpenAI) -> bool:
    """Whether the SDK client's ``post`` takes the body's bytes (``content=``; recent ``openai`` versions)."""
    global _POSTS_CONTENT
    if _POSTS_CONTENT is None:
        import inspect

        _POSTS_CONTENT = "content" in inspect.signature(session.post).parameters
    return _POSTS_CONTENT


class _DirectPost:
    """Chat bodies posted with the SDK client's own HTTP client, past the SDK's per-request machinery.

    The SDK's ``post`` builds options, copies them twice, merges headers, makes an idempotency key and runs its auth
    and response hooks for every request: about a millisecond per request, most of what one request at a time
    costs over a bare HTTP client. This posts the same bytes with the same ``httpx`` client (its connection pool,
    limits and redirects) and timeout, the headers the SDK would send (its default headers and its ``Authorization``,
    read once), and raises what the SDK's ``post`` raises: ``APITimeoutError`` for a timeout, ``APIConnectionError``
    for any other failure to get an answer, and the SDK's own status error (``RateLimitError``,
    ``AuthenticationError``, ...) for a non-2xx answer, made by the SDK from the response.

    Never logged or shown: its headers hold the key (its ``repr`` names the URL only).
    """

    __slots__ = ("_headers", "_http", "_status_error", "_timeout", "url")

    def __init__(
        self, http: Any, url: str, headers: dict[str, str], timeout: Any, status_error: Callable[[Any], Exception]
    ) -> None:
        self._http = http
        self.url = url
        self._headers = headers
        self._timeout = timeout
        self._status_error = status_error

    def __repr__(self) -> str:
        return f"_DirectPost(url={self.url!r})"

    @classmethod
    def of(cls, session: openai.AsyncOpenAI) -> _DirectPost | None:
        """The direct poster of an SDK client (made once per client), or None where the SDK lacks what it uses.

        It uses the client's ``httpx`` client (``_client``) and status-error construction
        (``_make_status_error_from_response``), both in every ``openai`` release since 1.0 but not public; an SDK
        without them, or with an auth of its own (a provider or workload identity: ``custom_auth``), is posted to
        through its ``post`` as before.
        """
        try:
            return _DIRECT[session]
        except KeyError:
            pass
        http = getattr(session, "_client", None)
        status_error = getattr(session, "_make_status_error_from_response", None)
        direct = None
        if (
            callable(getattr(http, "build_request", None))
            and callable(getattr(http, "send", None))
            and callable(status_error)
            and getattr(session, "custom_auth", None) is None
        ):
            headers = {k: v for k, v in dict(session.default_headers).items() if isinstance(v, str)}
            headers.update(session.auth_headers)
            url = str(session.base_url).rstrip("/") + CHAT_PATH
            direct = cls(http, url, headers, session.timeout, status_error)
        _DIRECT[session] = direct
        return direct

    async def post(self, content: bytes) -> str:
        """Post a chat body's bytes; the answer's text.

        Raises:
            openai.APITimeoutError: A timeout of the HTTP client (connect, write, read, pool).
            openai.APIConnectionError: Any other failure to get an answer (refused, reset, closed).
            openai.APIStatusError: A non-2xx answer, as the SDK's class for its status (body read).
        """
        import openai

        request = self._http.build_request(
            "POST", self.url, content=content, headers=self._headers, timeout=self._timeout
        )
        try:
            response = await self._http.send(request)
        except Exception as exc:
            if any(kind.__name__ == "TimeoutException" for kind in type(exc).__mro__):  # httpx's or httpx2's
                raise openai.APITimeoutError(request=request) from exc
            raise openai.APIConnectionError(request=request) from exc
        if not response.is_success:
            await response.aread()
            raise self._status_error(response) from None
        return str(response.text)


_DIRECT: weakref.WeakKeyDictionary[Any, _DirectPost | None] = weakref.WeakKeyDictionary()
"""The direct poster of each SDK client (None: posted through its ``post``)."""
