"""Model backends and the registry that builds them from spec strings.

Specs: ``hf:<path or hub id>`` (transformers), ``openai:<model>[@<base_url>]`` (any OpenAI-compatible server:
OpenAI audio models, vLLM, Ollama, llama.cpp) and ``baseline:random|first|dsp|oracle``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from airbench_nb.models.base import AudioLM, Generation, GenerationParams, Prompt

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


class SpecError(ValueError):
    """A model spec string that names no known backend."""


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``kind:rest`` and check the kind.

    Raises:
        SpecError: For a spec without a known ``hf:``, ``openai:`` or ``baseline:`` prefix.
    """
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in {"hf", "openai", "baseline"} or not rest:
        raise SpecError(
            f"model spec {spec!r} not understood; use hf:<path or hub id>, openai:<model>[@<base_url>] "
            "or baseline:random|first|dsp|oracle"
        )
    return kind, rest


def check_hf_path(path: str) -> None:
    """Refuse an ``hf:`` path that names something on disk that is not a checkpoint folder.

    A path that exists, or that is written as one (``/...``, ``./...``, ``../...``, ``~...``), must be a folder
    holding ``config.json``; anything else is taken for a hub id and left to transformers.

    Raises:
        SpecError: In one line, for a file, a missing folder, or a folder without ``config.json``.
    """
    local = Path(path).expanduser()
    try:
        exists, is_file = local.exists(), local.is_file()
        has_config = (local / "config.json").is_file()
    except (OSError, ValueError) as exc:  # a name too long, an embedded NUL
        raise SpecError(f"hf:{path}: not a usable path ({type(exc).__name__})") from None
    if not exists and not path.startswith(("/", "./", "../", "~", ".\\", "..\\")):
        return
    if is_file:
        raise SpecError(f"hf:{path}: is a file; give the checkpoint's folder (the one holding config.json)")
    if not exists:
        raise SpecError(f"hf:{path}: no such folder")
    if not has_config:
        raise SpecError(f"hf:{path}: not a transformers checkpoint (no config.json in the folder)")


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
