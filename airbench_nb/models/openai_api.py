"""``openai:<model>[@<base_url>]``: a model under test behind any OpenAI-compatible chat endpoint.

Each prompt becomes one chat-completion request whose user message carries the audio as a base64 16-bit PCM
wav in an ``input_audio`` part, followed by the prompt text. A multi-clip prompt sends every clip as its own
``input_audio`` part, in order, before the text; a later turn of a multi-turn item sends the conversation so far
(the first user message with the audio, then the model's own answers as assistant messages between the user turns).
This is how the kit reaches OpenAI audio models and models served by vLLM (``vllm serve
Qwen/Qwen2-Audio-7B-Instruct`` speaks this API; several clips per prompt need ``--limit-mm-per-prompt``), Ollama or
llama.cpp; requests go through :class:`airbench_nb.api_client.APIClient` (bounded concurrency, retries, optional
SQLite cache).

Endpoints and keys follow :mod:`airbench_nb.api_client.endpoints`: ``openai:<model>`` goes to OpenAI's endpoint
(or ``OPENAI_BASE_URL`` when set) with ``OPENAI_API_KEY``; an ``@<base_url>`` gets no key unless its variable is
named (``api_key_env``, ``--api-key-env NAME``), except ``api.openai.com``; a local one never gets
``OPENAI_API_KEY`` unnamed. A URL as the model part, or a URL holding credentials, is refused. The endpoint used is
:attr:`OpenAIAudioLM.endpoint`. A 401/403, a missing key, an endpoint that refuses every connection and nonsense
generation parameters raise :class:`~airbench_nb.api_client.FatalAPIError` out of :meth:`OpenAIAudioLM.generate`
(the run must stop); other failures are per-item errors.

Replicas: ``openai:<model>@<url1>,<url2>,...`` spreads the requests over several servers of one model (one vLLM
per machine) through a :class:`~airbench_nb.api_client.ReplicaPool`: least outstanding requests first, failover
to another replica, replicas marked down and tried again later, an error per item only when none is left
(:mod:`airbench_nb.api_client.replicas` states the rules). ``concurrency`` is then the total in flight over all
replicas, and :meth:`OpenAIAudioLM.replica_stats` the per-replica counts the runner writes into its summary. One
URL (or none) works exactly as without replicas.

Spoken answers: with ``audio_output=True`` (``load_model(spec, audio_output=True, audio_voice="alloy")``, or
``model_options`` of :func:`~airbench_nb.runner.infer`) a ``speech_generation`` item is asked with
``modalities=["text", "audio"]`` and ``audio={"voice": <audio_voice>, "format": "wav"}``, as OpenAI's audio models
(``gpt-4o-audio-preview``) and vLLM-served omni models take it. The reply's ``message.audio.data`` (base64 wav)
becomes the generation's audio (written beside the responses by the runner) and its ``transcript`` the text; a reply
without audio is that item's error (:data:`NO_AUDIO_REPLY`). Items of other kinds are asked for text as always.

Option probabilities: with ``logprobs=True`` (``--model-option logprobs=true``, or ``model_options``) a single-choice
item asked for a letter is sent with ``logprobs: true, top_logprobs: <top_logprobs>`` (default
:data:`TOP_LOGPROBS`, the API's most), and the ``top_logprobs`` of the reply's first token become the generation's
:attr:`~airbench_nb.models.base.Generation.option_probs` (:func:`airbench_nb.models.option_probs.from_top_logprobs`:
the letters' spellings summed, a letter outside the top N counted 0), for calibration. Off by default: the request
(and its cache key) then stays what it was, and a server that refuses ``logprobs`` is not asked. A reply without
logprobs leaves the probabilities out; the answer is kept.

Example:
    >>> from airbench_nb.models import load_model
    >>> model = load_model("openai:Qwen/Qwen2-Audio-7B-Instruct@http://127.0.0.1:8000/v1")  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import dataclasses
import io
import logging
import math
from pathlib import Path

import numpy as np
import soundfile as sf

from airbench_nb.api_client import (
    APIClient,
    Base64Text,
    ChatRequest,
    ChatResult,
    InvalidParameterError,
    PriceTable,
    ReplicaPool,
    ReplicaStats,
    parse_openai_replicas,
    parse_openai_spec,
)
from airbench_nb.audio import TARGET_SR
from airbench_nb.models.base import GeneratedAudio, Generation, GenerationParams, Prompt, chat_messages
from airbench_nb.models.option_probs import from_top_logprobs, option_letters

logger = logging.getLogger(__name__)

SPEAKING_KINDS = frozenset({"speech_generation"})
"""Item kinds asked for a spoken answer when the model is made with ``audio_output=True``."""
DEFAULT_VOICE = "alloy"
"""The voice asked for when none is given (one of OpenAI's; vLLM omni servers take their own names)."""
TOP_LOGPROBS = 20
"""Alternatives asked for per token with ``logprobs=True`` (OpenAI's most)."""
DEFAULT_BATCH_SIZE = 32
"""Prompts per batch when none is given and ``concurrency`` is lower."""
NO_AUDIO_REPLY = "no audio in the reply"
"""The error of an item asked for a spoken answer whose reply holds none."""


def wav_base64(audio: np.ndarray, sample_rate: int) -> Base64Text:
    """Encode mono float samples as a base64 16-bit PCM wav (samples are clipped to [-1, 1]).

    Raises:
        ValueError: For audio that is not 1-D, is empty, or holds NaN/inf.
    """
    samples = np.asarray(audio, dtype=np.float32)
    if samples.ndim != 1:
        raise ValueError(f"audio must be mono (1-D), got shape {samples.shape}")
    if samples.size == 0:
        raise ValueError("audio is empty")
    if not np.all(np.isfinite(samples)):
        raise ValueError("audio holds NaN or infinite samples")
    buffer = io.BytesIO()
    sf.write(buffer, np.clip(samples, -1.0, 1.0), int(sample_rate), format="WAV", subtype="PCM_16")
    return Base64Text.encode_bytes(buffer.getvalue())


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_generation_params(params: GenerationParams) -> None:
    """Refuse decoding parameters that make no sense, before anything is sent.

    Raises:
        InvalidParameterError: NaN, infinite or negative ``temperature``; ``top_p`` outside (0, 1];
            ``max_new_tokens`` below 1 or not whole; a ``seed`` that is not whole. The message names the field.
    """
    problems = []
    if not _number(params.temperature) or params.temperature < 0:
        problems.append(f"temperature={params.temperature!r} (a finite number >= 0; 0 for greedy decoding)")
    if not _number(params.top_p) or not 0 < params.top_p <= 1:
        problems.append(f"top_p={params.top_p!r} (a number in (0, 1])")
    max_new = params.max_new_tokens
    if max_new is not None and (isinstance(max_new, bool) or not isinstance(max_new, int) or max_new < 1):
        problems.append(f"max_new_tokens={max_new!r} (a whole number >= 1, or None for the bound of the item's kind)")
    if params.seed is not None and (isinstance(params.seed, bool) or not isinstance(params.seed, int)):
        problems.append(f"seed={params.seed!r} (a whole number)")
    if problems:
        raise InvalidParameterError("generation parameters make no sense: " + "; ".join(problems))


def generation_params(params: GenerationParams) -> dict[str, object]:
    """The request body fields for decoding parameters (names that both OpenAI and vLLM accept).

    Raises:
        InvalidParameterError: For nonsense values (see :func:`check_generation_params`).
    """
    check_generation_params(params)
    if params.max_new_tokens is None:
        raise InvalidParameterError("max_new_tokens is None: resolve it for the item first (GenerationParams.for_item)")
    body: dict[str, object] = {
        "temperature": float(params.temperature),
        "max_tokens": int(params.max_new_tokens),
    }
    if not params.greedy:
        body["top_p"] = float(params.top_p)
    if params.seed is not None:
        body["seed"] = int(params.seed)
    return body


class OpenAIAudioLM:
    """A model behind an OpenAI-compatible chat endpoint (see the module docstring).

    Args:
        rest: ``<model>`` or ``<model>@<base_url>`` (the spec after ``openai:``); the model name may itself hold
            ``/`` (``Qwen/Qwen2-Audio-7B-Instruct``); the base URL ends in ``/v1``. Without ``@<base_url>``:
            ``OPENAI_BASE_URL`` when set, else OpenAI's endpoint. ``<model>@<url1>,<url2>,...``: replicas.
        concurrency: Most requests in flight at once (over all replicas together).
        batch_size: Prompts per :meth:`generate` call from the runner (they are sent concurrently); None: the larger
            of :data:`DEFAULT_BATCH_SIZE` and ``concurrency``. Above concurrency 1 the runner asks the next batch
            while one is in flight (:attr:`overlaps_batches`), so requests in flight are bounded by ``concurrency``,
            not by the batch; a batch holds its clips' wav bytes and base64 text (about 2.3 MB per 30 s clip) until
            it is written.
        cache_path: SQLite cache of answers (a rerun sends no request); None for none.
        timeout_s: Deadline of one attempt in seconds, whole answer included (audio requests to a busy server
            can be slow).
        api_key_env: Environment variable holding the key, sent to the endpoint whatever it is; None for the
            default rules (``OPENAI_API_KEY`` to OpenAI or ``OPENAI_BASE_URL`` unless local; no key elsewhere).
        max_retries: Retries after the first attempt.
        prices: Optional price table for cost accounting (see :class:`airbench_nb.api_client.PriceTable`).
        down_after: With replicas: failed attempts in a row that mark a replica down.
        cool_off_s: With replicas: seconds a replica marked down gets no requests before it is tried again.
        audio_output: Ask ``speech_generation`` items for a spoken answer (see the module docstring).
        audio_voice: The voice asked for with ``audio_output``.
        logprobs: Ask single-choice items for the first token's ``top_logprobs`` (option probabilities, see the module
            docstring).
        top_logprobs: Alternatives per token asked for with ``logprobs`` (1 to 20).

    Raises:
        airbench_nb.api_client.EndpointError: A URL as the model part, a bad base URL or one with credentials,
            a replica list with an empty or repeated entry, or a key variable name that is not a name (a
            ``ValueError``; the message never repeats secrets).
    """

    def __init__(
        self,
        rest: str,
        *,
        concurrency: int = 8,
        batch_size: int | None = None,
        cache_path: str | Path | None = None,
        timeout_s: float = 120.0,
        api_key_env: str | None = None,
        max_retries: int = 5,
        prices: PriceTable | None = None,
        down_after: int = 3,
        cool_off_s: float = 30.0,
        audio_output: bool = False,
        audio_voice: str = DEFAULT_VOICE,
        logprobs: bool = False,
        top_logprobs: int = TOP_LOGPROBS,
    ) -> None:
        if not 1 <= int(top_logprobs) <= TOP_LOGPROBS:
            raise ValueError(f"top_logprobs must be 1 to {TOP_LOGPROBS}, got {top_logprobs}")
        self.logprobs = bool(logprobs)
        """Whether single-choice items are asked for the first token's ``top_logprobs``."""
        self.top_logprobs = int(top_logprobs)
        """Alternatives asked for per token."""
        model, base_urls = parse_openai_replicas(rest)
        self.audio_output = bool(audio_output)
        """Whether ``speech_generation`` items are asked for a spoken answer."""
        self.audio_voice = str(audio_voice)
        """The voice asked for."""
        self.spec = f"openai:{rest}"
        self.batch_size = int(batch_size) if batch_size is not None else max(DEFAULT_BATCH_SIZE, int(concurrency))
        self.kinds: frozenset[str] | None = None
        """Every item kind: a chat model answers them all through the prompt sets."""
        self.text_alone = True
        """A chat API takes a message without audio: the ``no_audio`` and ``description`` controls are asked."""
        self.samples_vary = True
        """Sampled answers change with the temperature and the ``seed`` sent (``infer --samples K``)."""
        self.wav_passthrough = TARGET_SR
        """A clip that is already a 16-bit PCM mono wav at this rate is sent as the file's bytes (the runner reads
        it into :attr:`~airbench_nb.models.base.Prompt.wavs`), with no decoding or encoding again."""
        self.base_urls = base_urls
        """Every base URL of the spec (empty without ``@``; several for replicas)."""
        self.client: APIClient | ReplicaPool
        self.overlaps_batches = len(base_urls) <= 1 and int(concurrency) > 1
        """Whether the runner may ask the next batch while one is in flight (:meth:`generate` from two threads at
        once): the requests of both share the client's ``concurrency`` slots (one endpoint; not with replicas). Not
        at concurrency 1: one request in flight has no batch end to bridge, and preparing the next batch beside it
        only contends for the GIL (measured slower against an instant server, docs/scaling.md)."""
        self.first_batch_size = min(self.batch_size, max(1, int(concurrency))) if self.overlaps_batches else None
        """Prompts in the runner's first batch when batches overlap: as many as can be in flight, so that the first
        requests go out once that many clips are read, not a whole batch (the rest are read while they are asked)."""
        if len(base_urls) <= 1:
            self.model, self.base_url = parse_openai_spec(rest)
            self.client = APIClient(
                base_url=self.base_url,
                api_key_env=api_key_env,
                concurrency=concurrency,
                timeout_s=timeout_s,
                max_retries=max_retries,
                cache_path=cache_path,
                prices=prices,
            )
        else:
            self.model, self.base_url = model, None
            self.client = ReplicaPool(
                base_urls,
                api_key_env=api_key_env,
                concurrency=concurrency,
                timeout_s=timeout_s,
                max_retries=max_retries,
                cache_path=cache_path,
                prices=prices,
                down_after=down_after,
                cool_off_s=cool_off_s,
            )

    def __repr__(self) -> str:
        return f"OpenAIAudioLM({self.spec!r}, concurrency={self.client.concurrency}, batch_size={self.batch_size})"

    @property
    def endpoint(self) -> str:
        """Where requests go (``@<base_url>``, ``OPENAI_BASE_URL``, or OpenAI's); replicas: URLs, comma-joined."""
        return self.client.endpoint

    def replica_stats(self) -> list[ReplicaStats]:
        """Per-replica counts (sent, succeeded, failed, retried elsewhere, marked down); [] for one endpoint."""
        return self.client.replica_stats() if isinstance(self.client, ReplicaPool) else []

    def request(self, prompt: Prompt, params: GenerationParams) -> ChatRequest:
        """The chat request for one prompt (:func:`~airbench_nb.models.base.chat_messages`).

        Optional system message, then every clip (one ``input_audio`` part each, in order; none for a control asked
        without audio) and the text in one user message; for a later turn, the model's earlier answers as assistant
        messages and the later turns' texts as user messages.

        Raises:
            InvalidParameterError: For nonsense decoding parameters (see :func:`check_generation_params`).
            ValueError: When a clip cannot be encoded (see :func:`wav_base64`), naming it when there are several.
        """
        parts = []
        clips = prompt.sent_audios  # none for a control asked without audio
        for number, audio in enumerate(clips, start=1):
            wav = prompt.wav(number - 1)
            try:
                data = Base64Text.encode_bytes(wav) if wav is not None else wav_base64(audio, prompt.sample_rate)
            except ValueError as exc:
                if len(clips) == 1:
                    raise
                raise ValueError(f"clip {number} of {len(clips)}: {exc}") from None
            parts.append({"type": "input_audio", "input_audio": {"data": data, "format": "wav"}})
        messages = chat_messages(prompt, parts, assistant=lambda text: text)
        body = generation_params(params.for_item(prompt.item))
        if self.speaks(prompt):
            body["modalities"] = ["text", "audio"]
            body["audio"] = {"voice": self.audio_voice, "format": "wav"}
        elif self.logprobs and option_letters(prompt.item, prompt.turn):
            body["logprobs"] = True
            body["top_logprobs"] = self.top_logprobs
        return ChatRequest(model=self.model, messages=messages, params=body)

    def speaks(self, prompt: Prompt) -> bool:
        """Whether the prompt is asked for a spoken answer (``audio_output`` and a ``speech_generation`` item)."""
        return self.audio_output and getattr(prompt.item, "kind", None) in SPEAKING_KINDS

    @property
    def settings(self) -> dict[str, object] | None:
        """What the runner records with each response (``generation["backend"]``); None unless asked for more.

        More is audio (``audio_output``, ``audio_voice``) or logprobs (``logprobs``, ``top_logprobs``).
        """
        if not self.audio_output and not self.logprobs:
            return None
        out: dict[str, object] = {"name": "openai"}
        if self.audio_output:
            out.update(audio_output=True, audio_voice=self.audio_voice)
        if self.logprobs:
            out.update(logprobs=True, top_logprobs=self.top_logprobs)
        return out

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        """Answer prompts concurrently; a prompt that fails (bad audio, HTTP error) gets its own error.

        Raises:
            airbench_nb.api_client.FatalAPIError: The run must stop: 401/403, an endpoint that refuses every
                connection, no key for the endpoint (``MissingAPIKeyError``), or nonsense decoding parameters
                (``InvalidParameterError``, checked before anything is sent).
        """
        check_generation_params(params)
        out: list[Generation | None] = [None] * len(prompts)
        requests: list[ChatRequest] = []
        where: list[int] = []
        for index, prompt in enumerate(prompts):
            try:
                request = self.request(prompt, params)
                # hashed and encoded here, beside the requests in flight, rather than on the client's event loop
                request.key()
                request.make_body()
                requests.append(request)
                where.append(index)
            except InvalidParameterError:
                raise
            except ValueError as exc:
                out[index] = Generation(error=f"{self.spec}: {prompt.uid}: cannot send the audio: {exc}")
        results: list[ChatResult] = self.client.run_sync(requests) if requests else []
        for index, result in zip(where, results, strict=True):
            generation = Generation(
                text=result.text,
                error=None if result.ok else result.error or "no text in the answer",
                input_tokens=result.input_tokens,
                output_tokens=result.output_tokens,
            )
            letters = option_letters(prompts[index].item, prompts[index].turn) if self.logprobs else None
            if result.ok and self.speaks(prompts[index]):
                generation = self._spoken(prompts[index], result)
            elif result.ok and letters and result.first_token_logprobs:
                probs = from_top_logprobs(result.first_token_logprobs, letters, self.top_logprobs)
                generation = dataclasses.replace(generation, option_probs=probs)
            out[index] = generation
        return [g if g is not None else Generation(error="internal: no result") for g in out]

    def _spoken(self, prompt: Prompt, result: ChatResult) -> Generation:
        """The generation of a reply to a request for a spoken answer: its audio and transcript, or the error."""
        if result.audio_data is None:
            return Generation(error=f"{self.spec}: {prompt.uid}: {NO_AUDIO_REPLY}")
        try:
            audio = GeneratedAudio.from_wav(base64.b64decode(result.audio_data, validate=True))
        except ValueError as exc:  # binascii.Error is a ValueError
            return Generation(error=f"{self.spec}: {prompt.uid}: audio in the reply unreadable: {exc}")
        text = result.audio_transcript if result.audio_transcript is not None else result.text
        return Generation(text=text, audio=audio, input_tokens=result.input_tokens, output_tokens=result.output_tokens)

    def warm_up(self) -> None:
        """Make the client's HTTP client in the background (see :func:`~airbench_nb.models.base.warm_up`).

        With one endpoint only: replicas' clients are made on their first request, as before.
        """
        if isinstance(self.client, APIClient):
            self.client.warm()

    def close(self) -> None:
        """Close the cache, and the client's HTTP session and event loop (kept across batches until then)."""
        self.client.close()
