"""What flows through the client: requests, results, prices, usage totals and estimates."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pybase64

from airbench_nb.api_client.errors import InvalidParameterError

logger = logging.getLogger(__name__)

_HASH_STRINGS_LONGER_THAN = 4096
"""Strings longer than this (base64 audio) are replaced by their own sha256 before the request key is hashed."""
_KEY_VERSION = 1
"""Version of the request-key recipe (a change makes old cache entries unreachable, never wrong)."""


class Base64Text(str):
    """Base64 text the kit encoded itself (only ``A-Z a-z 0-9 + / =``): a request body holds it as it is.

    JSON needs no escape in such text, so :meth:`ChatRequest.body_bytes` copies it into the body instead of running
    the JSON encoder over it (about 4 ms per 30 s clip). It is a ``str`` in every other way: keys, caches and batch
    files treat it as the text it is.

    Text made by :meth:`encode_bytes` also holds its ASCII bytes until a body is made of it (:meth:`as_ascii`,
    :meth:`release`): the request key hashes them and the body copies them in, with no ``encode`` of the text
    between (each copy of a clip's text is a fresh allocation of hundreds of kilobytes, page faults included).
    """

    @classmethod
    def encode_bytes(cls, raw: bytes) -> Base64Text:
        """The base64 text of ``raw`` (standard alphabet, padded: what :func:`base64.b64encode` gives).

        Encoded with pybase64 (SIMD): a 5 s clip takes about 0.01 ms against 0.35 ms with the standard library,
        time that every request otherwise spends holding the GIL beside the client's event loop.
        """
        data = pybase64.b64encode(raw)
        text = cls(data, "ascii")
        text.__dict__["_ascii"] = data
        return text

    def as_ascii(self) -> bytes:
        """The text's ASCII bytes: those :meth:`encode_bytes` kept, else encoded now."""
        held = self.__dict__.get("_ascii")
        return held if held is not None else self.encode("ascii")

    def release(self) -> None:
        """Forget the ASCII bytes kept by :meth:`encode_bytes` (once the body holding them is made)."""
        self.__dict__.pop("_ascii", None)


def _body_bytes(body: Mapping[str, Any]) -> bytes:
    """``body`` as compact UTF-8 JSON, each :class:`Base64Text` in it copied in as it is (see there)."""
    spliced: list[Base64Text] = []
    token = uuid.uuid4().hex

    def swap(value: Any) -> Any:
        if isinstance(value, Base64Text):
            spliced.append(value)
            return f"airbench-base64-{token}-{len(spliced) - 1}"
        if isinstance(value, Mapping):
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [swap(v) for v in value]
        return value

    text = json.dumps(swap(body), ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    if not spliced:
        return text
    parts: list[bytes] = []
    for index, data in enumerate(spliced):
        head, _, text = text.partition(f'"airbench-base64-{token}-{index}"'.encode())
        parts += [head, b'"', data.as_ascii(), b'"']
    parts.append(text)
    out = b"".join(parts)
    for data in spliced:
        data.release()
    return out


def _canonical(value: Any) -> Any:
    """``value`` with long strings (base64 audio) replaced by their sha256, for fast hashing of big requests."""
    if isinstance(value, str):
        if len(value) > _HASH_STRINGS_LONGER_THAN:
            raw = value.as_ascii() if isinstance(value, Base64Text) else value.encode()  # the same bytes: ASCII
            return "sha256:" + hashlib.sha256(raw).hexdigest()
        return value
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _non_finite(value: Any, path: str) -> str | None:
    """The path of the first NaN or infinite number in ``value`` (JSON cannot carry them), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return path
    if isinstance(value, Mapping):
        return next((p for k, v in value.items() if (p := _non_finite(v, f"{path}[{k!r}]"))), None)
    if isinstance(value, list | tuple):
        return next((p for i, v in enumerate(value) if (p := _non_finite(v, f"{path}[{i}]"))), None)
    return None


_PARAM_RULES: dict[str, tuple[Any, str]] = {
    "temperature": (lambda v: _is_number(v) and 0 <= v, "a finite number >= 0"),
    "top_p": (lambda v: _is_number(v) and 0 < v <= 1, "a number in (0, 1]"),
    "max_tokens": (lambda v: _is_int(v) and v >= 1, "a whole number >= 1"),
    "max_completion_tokens": (lambda v: _is_int(v) and v >= 1, "a whole number >= 1"),
    "n": (lambda v: _is_int(v) and v >= 1, "a whole number >= 1"),
    "seed": (_is_int, "a whole number"),
    "top_logprobs": (lambda v: _is_int(v) and 0 <= v <= 20, "a whole number in [0, 20]"),
    "presence_penalty": (lambda v: _is_number(v) and -2 <= v <= 2, "a number in [-2, 2]"),
    "frequency_penalty": (lambda v: _is_number(v) and -2 <= v <= 2, "a number in [-2, 2]"),
}
"""Checks of the body fields whose nonsense values are refused: field -> (test, what it must be)."""


def check_params(params: Mapping[str, Any]) -> None:
    """Refuse nonsense body fields: NaN or infinity anywhere, and out-of-range values of :data:`_PARAM_RULES`.

    Raises:
        InvalidParameterError: Naming the field, its value and what it must be.
    """
    for name, value in params.items():
        bad = _non_finite(value, name)
        if bad is not None:
            raise InvalidParameterError(f"request parameter {bad} is NaN or infinite: JSON cannot carry it")
        rule = _PARAM_RULES.get(name)
        if rule is not None and not rule[0](value):
            raise InvalidParameterError(f"request parameter {name}={value!r} makes no sense: it must be {rule[1]}")


@dataclass
class ChatRequest:
    """One chat-completion request: what is sent, and what the cache is keyed by."""

    model: str
    """Model name as the server knows it (``gpt-4o``, ``Qwen/Qwen2-Audio-7B-Instruct``)."""
    messages: list[dict[str, Any]]
    """OpenAI chat messages (content may be a string or a list of ``text``/``input_audio`` parts)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Other body fields (``temperature``, ``top_p``, ``max_tokens``, ``seed``, ...); None values are dropped."""
    repeat: int | None = None
    """Which repeat of the same request this is (a judge asked ``R`` times: 1 .. R-1); None for the first. It is not
    sent: it enters the cache key (only when set, so that the keys of first requests, and every cache written before
    repeats existed, are unchanged), so that a cached reply is never reused as another repeat."""
    _key: str | None = field(default=None, init=False, repr=False, compare=False)
    """Memoised :meth:`key`."""
    _body: bytes | None = field(default=None, init=False, repr=False, compare=False)
    """The body made ahead by :meth:`make_body` until :meth:`body_bytes` hands it out."""

    def __post_init__(self) -> None:
        """Drop None parameters and refuse nonsense ones (see :func:`check_params`)."""
        self.params = {k: v for k, v in self.params.items() if v is not None}
        check_params(self.params)

    def key(self) -> str:
        """The sha256 (hex) of the canonical JSON of (model, messages, params): the cache key and batch custom_id.

        :attr:`repeat` enters the JSON only when set.

        Strings longer than 4096 characters (base64 audio) enter as their own sha256, so that a big request is
        hashed once, not copied into a big JSON string first.
        """
        if self._key is None:
            payload = {"v": _KEY_VERSION, "model": self.model, "messages": self.messages, "params": self.params}
            if self.repeat is not None:
                payload["repeat"] = self.repeat
            text = json.dumps(_canonical(payload), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            self._key = hashlib.sha256(text.encode()).hexdigest()
        return self._key

    def body(self) -> dict[str, Any]:
        """The JSON body sent to ``/v1/chat/completions``."""
        return {"model": self.model, "messages": self.messages, **self.params}

    def body_bytes(self) -> bytes:
        """:meth:`body` as the compact UTF-8 JSON sent, :class:`Base64Text` audio copied in as it is.

        The body :meth:`make_body` made ahead is handed out once (then forgotten: a request in a batch does not keep
        two copies of its audio once sent); otherwise it is made now.

        Raises:
            ValueError: For a body JSON cannot hold (NaN or infinite numbers).
        """
        made, self._body = self._body, None
        return made if made is not None else _body_bytes(self.body())

    def make_body(self) -> None:
        """Make :meth:`body_bytes`'s body now (in a batch's thread, so that the client's event loop only posts it).

        Raises:
            ValueError: For a body JSON cannot hold (NaN or infinite numbers).
        """
        self._body = _body_bytes(self.body())


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
    audio_data: str | None = None
    """The spoken answer of a request that asked for audio (``modalities=["text", "audio"]``): the message's
    ``audio.data``, base64 of the encoded file as the server sent it; None when the reply holds none."""
    audio_transcript: str | None = None
    """The message's ``audio.transcript`` (what the model says it said), when the reply holds audio."""
    first_token_logprobs: list[tuple[str, float]] | None = None
    """A request that asked for ``logprobs``: the ``top_logprobs`` of the answer's first token, ``(token, logprob)``
    best first; None when not asked for or the reply holds none."""

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

    def add(self, result: ChatResult) -> None:
        """Count a non-cached result: a call, a failure, its tokens and its cost (or an unpriced success)."""
        self.calls += 1
        if result.error is not None:
            self.failures += 1
        if result.input_tokens is not None:
            self.input_tokens += result.input_tokens
        if result.output_tokens is not None:
            self.output_tokens += result.output_tokens
        if result.cost_usd is not None:
            self.cost_usd += result.cost_usd
        elif result.error is None:
            self.unpriced_calls += 1

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
