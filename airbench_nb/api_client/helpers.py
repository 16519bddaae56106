"""Helpers of the client: completion checks, the retry predicate, Retry-After, audio durations."""

from __future__ import annotations

import base64
import dataclasses
import email.utils
import io
import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from airbench_nb.api_client.errors import AttemptTimeoutError, MalformedResponseError
from airbench_nb.api_client.records import ChatRequest, ChatResult

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses below 500 that are retried (every 5xx is retried too)."""


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


def first_token_logprobs(choice: Mapping[str, Any]) -> list[tuple[str, float]] | None:
    """The ``top_logprobs`` of a completion choice's first content token, ``[(token, logprob), ...]`` best first.

    None when the choice holds no ``logprobs.content`` (not asked for, or a server that ignores the request);
    entries that are not a token string with a finite number are skipped.
    """
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], Mapping):
        return None
    top = content[0].get("top_logprobs")
    if not isinstance(top, list):
        return None
    out: list[tuple[str, float]] = []
    for entry in top:
        if isinstance(entry, Mapping) and isinstance(entry.get("token"), str):
            value = entry.get("logprob")
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                out.append((entry["token"], float(value)))
    return sorted(out, key=lambda pair: -pair[1])


def retry_after_s(exc: BaseException) -> float | None:
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
    """Whether a failed attempt is worth repeating: 429, 408, 409, 5xx, timeouts, connection errors, bad bodies.

    Never for a :class:`~airbench_nb.api_client.errors.FatalAPIError` (401/403, refused connections): it stops
    the run instead.
    """
    import openai

    retried = (
        MalformedResponseError | AttemptTimeoutError | openai.APIConnectionError | openai.APIResponseValidationError
    )
    if isinstance(exc, retried):
        return True  # APITimeoutError is an APIConnectionError
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return False


def describe_error(exc: BaseException) -> str:
    """A short error kind for logs (no message: messages may quote the request)."""
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status is not None else "")


def distinct_requests(requests: Sequence[ChatRequest]) -> dict[str, ChatRequest]:
    """The requests by key (:meth:`ChatRequest.key`), each key once, in order of first appearance."""
    distinct: dict[str, ChatRequest] = {}
    for request in requests:
        distinct.setdefault(request.key(), request)
    return distinct


def results_in_order(requests: Sequence[ChatRequest], by_key: Mapping[str, ChatResult]) -> list[ChatResult]:
    """One result per request, in order; a repeated request gets its own copy of the shared result."""
    out, seen = [], set()
    for request in requests:
        result = by_key[request.key()]
        out.append(result if result.key not in seen else dataclasses.replace(result))
        seen.add(result.key)
    return out


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


async def gather_all(
    todo: Sequence[Any], one: Callable[[Any], Awaitable[Any]], *, progress: bool, desc: str = "api"
) -> list[Any]:
    """Run ``one`` on every request at once with a tqdm bar.

    On any exception (a fatal API error, a cancel) the others are cancelled and awaited, and it is raised.

    Args:
        todo: The requests.
        one: The coroutine function answering one request (it bounds its own concurrency).
        progress: Show the bar.
        desc: The bar's label.

    Returns:
        The results in the order of ``todo``.
    """
    import asyncio

    from tqdm.auto import tqdm

    with tqdm(total=len(todo), desc=desc, disable=not progress, leave=False) as bar:

        async def tracked(request: Any) -> Any:
            result = await one(request)
            bar.update(1)
            return result

        tasks = [asyncio.ensure_future(tracked(r)) for r in todo]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException as exc:  # a fatal error (or a cancel): the others need not go on
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            logger.debug("run stopped: %s: %s", type(exc).__name__, exc)
            raise
