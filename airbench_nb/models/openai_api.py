"""``openai:<model>[@<base_url>]``: a model under test behind any OpenAI-compatible chat endpoint.

Each prompt becomes one chat-completion request whose user message carries the audio as a base64 16-bit PCM
wav in an ``input_audio`` part, followed by the prompt text. This is how the kit reaches OpenAI audio models and
models served by vLLM (``vllm serve Qwen/Qwen2-Audio-7B-Instruct`` speaks this API), Ollama or llama.cpp; requests
go through :class:`airbench_nb.api_client.APIClient` (bounded concurrency, retries, optional SQLite cache).

The API key comes from the environment only (``OPENAI_API_KEY``, or the variable named by ``api_key_env``); a
server on 127.0.0.1/localhost needs none.

Example:
    >>> from airbench_nb.models import load_model
    >>> model = load_model("openai:Qwen/Qwen2-Audio-7B-Instruct@http://127.0.0.1:8000/v1")  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import io
import logging
from pathlib import Path

import numpy as np
import soundfile as sf

from airbench_nb.api_client import APIClient, ChatRequest, ChatResult, PriceTable
from airbench_nb.models.base import Generation, GenerationParams, Prompt

logger = logging.getLogger(__name__)


def wav_base64(audio: np.ndarray, sample_rate: int) -> str:
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
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def generation_params(params: GenerationParams) -> dict[str, object]:
    """The request body fields for decoding parameters (names that both OpenAI and vLLM accept)."""
    body: dict[str, object] = {
        "temperature": float(max(params.temperature, 0.0)),
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
            ``/`` (``Qwen/Qwen2-Audio-7B-Instruct``); the base URL ends in ``/v1``.
        concurrency: Most requests in flight at once.
        batch_size: Prompts per :meth:`generate` call from the runner (they are sent concurrently).
        cache_path: SQLite cache of answers (a rerun sends no request); None for none.
        timeout_s: Per-attempt timeout in seconds (audio requests to a busy server can be slow).
        api_key_env: Environment variable holding the key.
        max_retries: Retries after the first attempt.
        prices: Optional price table for cost accounting (see :class:`airbench_nb.api_client.PriceTable`).
    """

    def __init__(
        self,
        rest: str,
        *,
        concurrency: int = 8,
        batch_size: int = 32,
        cache_path: str | Path | None = None,
        timeout_s: float = 120.0,
        api_key_env: str = "OPENAI_API_KEY",
        max_retries: int = 5,
        prices: PriceTable | None = None,
    ) -> None:
        model, _, base_url = rest.partition("@")
        if not model.strip():
            raise ValueError(f"openai:{rest}: no model name; use openai:<model>[@<base_url>]")
        if base_url and not base_url.startswith(("http://", "https://")):
            raise ValueError(f"openai:{rest}: base URL {base_url!r} must start with http:// or https://")
        self.model = model.strip()
        self.base_url = base_url or None
        self.spec = f"openai:{rest}"
        self.batch_size = int(batch_size)
        self.client = APIClient(
            base_url=self.base_url,
            api_key_env=api_key_env,
            concurrency=concurrency,
            timeout_s=timeout_s,
            max_retries=max_retries,
            cache_path=cache_path,
            prices=prices,
        )

    def __repr__(self) -> str:
        return f"OpenAIAudioLM({self.spec!r}, concurrency={self.client.concurrency}, batch_size={self.batch_size})"

    def request(self, prompt: Prompt, params: GenerationParams) -> ChatRequest:
        """The chat request for one prompt: optional system message, then audio and text in one user message.

        Raises:
            ValueError: When the prompt's audio cannot be encoded (see :func:`wav_base64`).
        """
        messages: list[dict] = []
        if prompt.system:
            messages.append({"role": "system", "content": prompt.system})
        audio = {"data": wav_base64(prompt.audio, prompt.sample_rate), "format": "wav"}
        messages.append(
            {
                "role": "user",
                "content": [{"type": "input_audio", "input_audio": audio}, {"type": "text", "text": prompt.text}],
            }
        )
        return ChatRequest(model=self.model, messages=messages, params=generation_params(params))

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        """Answer prompts concurrently; a prompt that fails (bad audio, HTTP error) gets its own error.

        Raises:
            airbench_nb.api_client.MissingAPIKeyError: Remote endpoint and no key in the environment.
        """
        out: list[Generation | None] = [None] * len(prompts)
        requests: list[ChatRequest] = []
        where: list[int] = []
        for index, prompt in enumerate(prompts):
            try:
                requests.append(self.request(prompt, params))
                where.append(index)
            except ValueError as exc:
                out[index] = Generation(error=f"{self.spec}: {prompt.uid}: cannot send the audio: {exc}")
        results: list[ChatResult] = self.client.run_sync(requests) if requests else []
        for index, result in zip(where, results, strict=True):
            out[index] = Generation(
                text=result.text,
                error=None if result.ok else result.error or "no text in the answer",
                input_tokens=result.input_tokens,
                output_tokens=result.output_tokens,
            )
        return [g if g is not None else Generation(error="internal: no result") for g in out]

    def close(self) -> None:
        """Close the cache (each request batch opens and closes its own HTTP session)."""
        self.client.close()
