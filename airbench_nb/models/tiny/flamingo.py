"""Tiny Audio Flamingo 3: Whisper-style encoder, Qwen2 decoder, the real ``AudioFlamingo3Processor``."""

from __future__ import annotations

import logging
from pathlib import Path

from airbench_nb.models.tiny.common import (
    TINY_AUDIO_CONFIG,
    TINY_TEXT_CONFIG,
    _feature_extractor,
    _save_generation_config,
    build_tiny_qwen_tokenizer,
)

logger = logging.getLogger(__name__)

AF3_SOUND_TOKEN = "<sound>"
"""Audio placeholder of Audio Flamingo 3; the processor repeats it once per encoder frame after pooling."""

AF3_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}"
    "{% for content in message['content'] %}{% if content['type'] == 'audio' %}<sound>{% endif %}{% endfor %}"
    "{% for content in message['content'] %}{% if content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}"
    "{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""The chat template of ``nvidia/audio-flamingo-3-hf`` as rendered in transformers' tests: ChatML with a default
system turn, every ``<sound>`` of a turn before its text (``<|im_start|>user\\n<sound>What is it?<|im_end|>``)."""


def build_tiny_audioflamingo3(path: str | Path, seed: int = 0) -> Path:
    """Build a random Audio Flamingo 3 (about 120k parameters) with its processor and save it under ``path``.

    Args:
        path: Folder to write (created if needed).
        seed: Seed of the random weights.

    Returns:
        The folder, loadable with ``hf:<folder>`` and with ``AutoProcessor``.
    """
    import torch
    from transformers import AudioFlamingo3Config, AudioFlamingo3ForConditionalGeneration, AudioFlamingo3Processor

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_qwen_tokenizer({"audio_token": AF3_SOUND_TOKEN}, AF3_CHAT_TEMPLATE)
    processor = AudioFlamingo3Processor(
        feature_extractor=_feature_extractor(), tokenizer=tokenizer, chat_template=AF3_CHAT_TEMPLATE
    )
    audio = TINY_AUDIO_CONFIG
    config = AudioFlamingo3Config(
        audio_config={
            "model_type": "audioflamingo3_encoder",
            "num_mel_bins": audio["num_mel_bins"],
            "num_hidden_layers": audio["encoder_layers"],
            "num_attention_heads": audio["encoder_attention_heads"],
            "intermediate_size": audio["encoder_ffn_dim"],
            "hidden_size": audio["d_model"],
            "max_source_positions": audio["max_source_positions"],
        },
        text_config={
            "model_type": "qwen2",
            "vocab_size": len(tokenizer),
            "tie_word_embeddings": True,
            **TINY_TEXT_CONFIG,
        },
        audio_token_id=tokenizer.convert_tokens_to_ids(AF3_SOUND_TOKEN),
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = AudioFlamingo3ForConditionalGeneration(config).eval()
    _save_generation_config(model, tokenizer)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    logger.info("tiny Audio Flamingo 3 (%d parameters) saved in %s", sum(p.numel() for p in model.parameters()), out)
    return out
