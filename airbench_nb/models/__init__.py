"""Model backends and the registry that builds them from spec strings.

Specs: ``hf:<path or hub id>`` (transformers), ``openai:<model>[@<base_url>]`` (any OpenAI-compatible server:
OpenAI audio models, vLLM, Ollama, llama.cpp) and ``baseline:random|first|dsp|oracle``.
"""

from __future__ import annotations

import logging
from typing import Any

from airbench_nb.models.base import AudioLM, Generation, GenerationParams, Prompt
from airbench_nb.models.specs import SpecError, check_hf_path, parse_spec

logger = logging.getLogger(__name__)

__all__ = [
    "AudioLM",
    "Generation",
    "GenerationParams",
    "Prompt",
    "SpecError",
    "check_hf_path",
    "load_model",
    "parse_spec",
]


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
    if kind == "hf":
        check_hf_path(rest)  # before importing torch and transformers (seconds)
        from airbench_nb.models.hf import HFAudioLM as factory
    elif kind == "openai":
        from airbench_nb.models.openai_api import OpenAIAudioLM as factory
    else:
        from airbench_nb.models.baselines import make_baseline as factory
    accepted = inspect.signature(factory).parameters
    kwargs = {k: v for k, v in options.items() if k in accepted and v is not None}
    ignored = sorted(set(options) - set(kwargs))
    if ignored:
        logger.debug("%s: ignoring options %s", spec, ", ".join(ignored))
    return factory(rest, **kwargs)
