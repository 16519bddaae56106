"""Model backends and the registry that builds them from spec strings.

Specs: ``hf:<path or hub id>`` (transformers), ``openai:<model>[@<base_url>]`` (any OpenAI-compatible server:
OpenAI audio models, vLLM, Ollama, llama.cpp), ``faster-whisper:<folder, size, tiny.en-bundled or base-bundled>``
(Whisper through CTranslate2: a transcriber; a multilingual one also identifies languages and translates into
English), ``tts:espeak-ng[:voice]`` (offline text-to-speech: it answers speech-generation items
with audio) and ``baseline:random|first|dsp|oracle``. A model declares the item kinds it serves
(``kinds``; None for every kind, as LALMs do): a specialist such as an ASR model gets only its kinds' items, the others
are counted as not applicable (:func:`serves`). A new kind of spec is a
:class:`Backend` passed to :func:`register_backend` (see ``docs/extending.md``).
"""

from __future__ import annotations

import logging
from typing import Any

from airbench_nb.models.base import (
    AudioLM,
    GeneratedAudio,
    Generation,
    GenerationParams,
    Prompt,
    not_applicable_reason,
    served_kinds,
    serves,
)
from airbench_nb.models.specs import (
    BACKENDS,
    Backend,
    SpecError,
    backend_for,
    check_hf_path,
    parse_spec,
    register_backend,
)

logger = logging.getLogger(__name__)

__all__ = [
    "AudioLM",
    "GeneratedAudio",
    "Generation",
    "GenerationParams",
    "Prompt",
    "BACKENDS",
    "Backend",
    "SpecError",
    "check_hf_path",
    "load_model",
    "parse_spec",
    "register_backend",
    "not_applicable_reason",
    "served_kinds",
    "serves",
]


def model_option_names(spec: str) -> list[str]:
    """The options the backend of a spec takes, beyond its spec argument (``classifier:``: ``mapping``, ``kinds``...).

    Raises:
        SpecError: For an unknown spec.
    """
    import inspect

    kind, _ = parse_spec(spec)
    factory = backend_for(kind).build_factory()
    return [name for name in list(inspect.signature(factory).parameters)[1:] if name not in ("args", "kwargs")]


def load_model(spec: str, **options: Any) -> AudioLM:
    """Build the backend a spec names.

    Args:
        spec: ``hf:...``, ``openai:...`` or ``baseline:...``.
        **options: Backend options (``batch_size``, ``concurrency``, ``device``, ``seed``, ...); options a
            backend does not take are ignored with a debug message.

    Returns:
        An :class:`AudioLM`.

    Raises:
        SpecError: For an unknown spec, or an ``hf:`` path that is not a checkpoint folder.
    """
    import inspect

    kind, rest = parse_spec(spec)
    backend = backend_for(kind)
    if backend.check is not None:
        backend.check(rest)  # before importing the backend (hf: torch and transformers take seconds)
    factory = backend.build_factory()
    accepted = inspect.signature(factory).parameters
    kwargs = {k: v for k, v in options.items() if k in accepted and v is not None}
    ignored = sorted(set(options) - set(kwargs))
    if ignored:
        logger.debug("%s: ignoring options %s", spec, ", ".join(ignored))
    return factory(rest, **kwargs)
