"""Tiny random audio-language models, built and saved entirely offline.

Each builder writes a folder that ``hf:<folder>`` loads like a real checkpoint: ``config.json``, weights, generation
config, a tokenizer (a byte-level BPE trained here on :data:`TINY_CORPUS` with the family's special tokens and chat
template) and the audio feature extractor. The weights are random, so the answers are gibberish, but every code path
of the transformers backend runs: chat template, audio placeholder expansion, batching with left padding, generation
and decoding. Tests use them; users can use them for an offline smoke test of a run::

    python -m airbench_nb.models.tiny qwen2_audio models/tiny-qwen2-audio
    airbench-nb run --model hf:models/tiny-qwen2-audio ...

Families:

- ``qwen2_audio`` (:func:`build_tiny_qwen2_audio`): ``Qwen2AudioForConditionalGeneration`` with the Qwen2-Audio
  processor, about 120k parameters.
- ``qwen2_5_omni`` (:func:`build_tiny_qwen2_5_omni`): ``Qwen2_5OmniForConditionalGeneration`` with its audio output
  switched off (thinker only, as used for text answers), about 95k parameters. It is saved as tokenizer + feature
  extractor (no image or video processor: those need torchvision, and AIR-Bench sends audio only).
- ``audioflamingo3`` (:func:`build_tiny_audioflamingo3`): ``AudioFlamingo3ForConditionalGeneration`` with the real
  ``AudioFlamingo3Processor`` (``<sound>`` placeholder), about 120k parameters.
- ``voxtral`` (:func:`build_tiny_voxtral`): ``VoxtralForConditionalGeneration`` with the real ``VoxtralProcessor``
  and a Tekken tokenizer read by mistral-common (the ``[voxtral]`` extra), about 135k parameters.
- ``whisper`` (:func:`build_tiny_whisper`): a multilingual ``WhisperForConditionalGeneration`` with a Whisper
  tokenizer (BPE trained here, Whisper's special and language tokens) and ``WhisperFeatureExtractor`` (80 mel bins),
  about 125k parameters; its weights are drawn wider than Whisper's own so that its answers depend on the audio.
- ``chat_lm`` (:func:`build_tiny_chat_lm`): a Qwen2 text chat model, for offline tests of ``hf:`` judges.
- ``audio_classifier`` (:func:`build_tiny_audio_classifier`): an ``ASTForAudioClassification`` with a made-up label
  set and its own ``label_mapping.csv``, for ``classifier:<folder>`` (tier B), about 30k parameters.
- ``clap`` (:func:`build_tiny_clap`): a ``ClapModel`` (HTSAT and RoBERTa towers) with a ``ClapProcessor`` whose
  tokenizer is trained here, for ``clap:<folder>`` (tier C), about 55k parameters.

Modules: ``common`` (corpus, sizes, tokenizer training), ``qwen``, ``flamingo``, ``voxtral``, ``whisper``,
``audio_classifier``, ``clap``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from airbench_nb.models.tiny.audio_classifier import build_tiny_audio_classifier
from airbench_nb.models.tiny.clap import build_tiny_clap
from airbench_nb.models.tiny.common import (
    TINY_AUDIO_CONFIG,
    TINY_BPE_VOCAB_SIZE,
    TINY_CORPUS,
    TINY_N_MELS,
    TINY_TEXT_CONFIG,
    build_tiny_qwen_tokenizer,
)
from airbench_nb.models.tiny.flamingo import AF3_CHAT_TEMPLATE, build_tiny_audioflamingo3
from airbench_nb.models.tiny.qwen import (
    CHATML_TEMPLATE,
    QWEN2_5_OMNI_CHAT_TEMPLATE,
    QWEN2_AUDIO_CHAT_TEMPLATE,
    build_tiny_chat_lm,
    build_tiny_qwen2_5_omni,
    build_tiny_qwen2_audio,
)
from airbench_nb.models.tiny.voxtral import build_tiny_voxtral, tiny_tekken
from airbench_nb.models.tiny.whisper import build_tiny_whisper, build_tiny_whisper_tokenizer

__all__ = [
    "AF3_CHAT_TEMPLATE",
    "BUILDERS",
    "CHATML_TEMPLATE",
    "QWEN2_5_OMNI_CHAT_TEMPLATE",
    "QWEN2_AUDIO_CHAT_TEMPLATE",
    "TINY_AUDIO_CONFIG",
    "TINY_BPE_VOCAB_SIZE",
    "TINY_CORPUS",
    "TINY_N_MELS",
    "TINY_TEXT_CONFIG",
    "build_tiny_audio_classifier",
    "build_tiny_audioflamingo3",
    "build_tiny_chat_lm",
    "build_tiny_clap",
    "build_tiny_qwen2_5_omni",
    "build_tiny_qwen2_audio",
    "build_tiny_qwen_tokenizer",
    "build_tiny_voxtral",
    "build_tiny_whisper",
    "build_tiny_whisper_tokenizer",
    "main",
    "tiny_tekken",
]
BUILDERS: dict[str, Callable[..., Path]] = {
    "qwen2_audio": build_tiny_qwen2_audio,
    "qwen2_5_omni": build_tiny_qwen2_5_omni,
    "audioflamingo3": build_tiny_audioflamingo3,
    "voxtral": build_tiny_voxtral,
    "whisper": build_tiny_whisper,
    "chat_lm": build_tiny_chat_lm,
    "audio_classifier": build_tiny_audio_classifier,
    "clap": build_tiny_clap,
}
"""Family name to builder, for the command line."""


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``python -m airbench_nb.models.tiny FAMILY FOLDER [--seed N]``."""
    parser = argparse.ArgumentParser(description="Build a tiny random audio-language model (or classifier) offline.")
    parser.add_argument("family", choices=sorted(BUILDERS))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(BUILDERS[args.family](args.folder, seed=args.seed))
