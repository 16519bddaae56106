"""Tiny Qwen2-Audio, Qwen2.5-Omni (thinker) and a tiny Qwen2 text chat model (for ``hf:`` judges)."""

from __future__ import annotations

import logging
from pathlib import Path

from airbench_nb.models.tiny.common import (
    TINY_AUDIO_CONFIG,
    TINY_TEXT_CONFIG,
    _feature_extractor,
    _quiet_transformers,
    _save_generation_config,
    build_tiny_qwen_tokenizer,
)

logger = logging.getLogger(__name__)

QWEN2_AUDIO_TOKENS: dict[str, str] = {
    "audio_token": "<|AUDIO|>",
    "audio_bos_token": "<|audio_bos|>",
    "audio_eos_token": "<|audio_eos|>",
}
"""Named audio tokens the Qwen2-Audio processor reads from the tokenizer."""

QWEN2_5_OMNI_TOKENS: dict[str, str] = {
    **QWEN2_AUDIO_TOKENS,
    "image_token": "<|IMAGE|>",
    "video_token": "<|VIDEO|>",
    "vision_bos_token": "<|vision_bos|>",
    "vision_eos_token": "<|vision_eos|>",
}
"""Named multimodal tokens the Qwen2.5-Omni processor reads from the tokenizer."""

QWEN2_AUDIO_CHAT_TEMPLATE = (
    "{% set audio_count = namespace(value=0) %}"
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}"
    "{% for content in message['content'] %}"
    "{% if 'audio' in content or 'audio_url' in content %}"
    "{% set audio_count.value = audio_count.value + 1 %}"
    "Audio {{ audio_count.value }}: <|audio_bos|><|AUDIO|><|audio_eos|>\n"
    "{% elif 'text' in content %}{{ content['text'] }}"
    "{% endif %}"
    "{% endfor %}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""The chat template of Qwen2-Audio-7B-Instruct: a default system turn, ``Audio N:`` before each audio part."""

QWEN2_5_OMNI_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'audio' or 'audio' in content or 'audio_url' in content %}"
    "<|audio_bos|><|AUDIO|><|audio_eos|>"
    "{% elif content['type'] == 'image' or 'image' in content %}<|vision_bos|><|IMAGE|><|vision_eos|>"
    "{% elif content['type'] == 'video' or 'video' in content %}<|vision_bos|><|VIDEO|><|vision_eos|>"
    "{% elif 'text' in content %}{{ content['text'] }}"
    "{% endif %}"
    "{% endfor %}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""A Qwen2.5-Omni style chat template: ChatML, placeholders wrapped in bos/eos tokens, no ``Audio N:`` label."""


OMNI_TALKER_TOKEN_FIELDS: tuple[str, ...] = (
    "tts_text_start_token_id",
    "tts_text_end_token_id",
    "tts_text_pad_token_id",
    "vision_start_token_id",
    "vision_end_token_id",
    "audio_start_token_id",
    "audio_end_token_id",
)
"""Token ids of the Qwen2.5-Omni talker config that must lie inside the talker's vocabulary."""


def build_tiny_qwen2_audio(path: str | Path, seed: int = 0) -> Path:
    """Build a random Qwen2-Audio (about 120k parameters) with its processor and save it under ``path``.

    Args:
        path: Folder to write (created if needed).
        seed: Seed of the random weights.

    Returns:
        The folder, loadable with ``hf:<folder>`` and with ``AutoProcessor``/``Qwen2AudioForConditionalGeneration``.
    """
    import torch
    from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration, Qwen2AudioProcessor

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_qwen_tokenizer(QWEN2_AUDIO_TOKENS, QWEN2_AUDIO_CHAT_TEMPLATE)
    processor = Qwen2AudioProcessor(
        feature_extractor=_feature_extractor(), tokenizer=tokenizer, chat_template=QWEN2_AUDIO_CHAT_TEMPLATE
    )
    config = Qwen2AudioConfig(
        audio_config={"model_type": "qwen2_audio_encoder", **TINY_AUDIO_CONFIG},
        text_config={
            "model_type": "qwen2",
            "vocab_size": len(tokenizer),
            "tie_word_embeddings": True,
            **TINY_TEXT_CONFIG,
        },
        audio_token_index=tokenizer.convert_tokens_to_ids(QWEN2_AUDIO_TOKENS["audio_token"]),
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = Qwen2AudioForConditionalGeneration(config).eval()
    _save_generation_config(model, tokenizer)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    logger.info("tiny Qwen2-Audio (%d parameters) saved in %s", sum(p.numel() for p in model.parameters()), out)
    return out


def build_tiny_qwen2_5_omni(path: str | Path, seed: int = 0) -> Path:
    """Build a random Qwen2.5-Omni (thinker only, about 95k parameters) and save it under ``path``.

    The folder has the layout of a real Qwen2.5-Omni checkpoint (``model_type`` ``qwen2_5_omni``, weights under
    ``thinker.``, a speaker file) with ``enable_audio_output`` off, so no talker or vocoder is built. The processor is
    saved as its parts, tokenizer and Whisper feature extractor: the full ``Qwen2_5OmniProcessor`` cannot be built
    without torchvision (its video processor needs it), and AIR-Bench needs audio only.

    Args:
        path: Folder to write (created if needed).
        seed: Seed of the random weights.

    Returns:
        The folder, loadable with ``hf:<folder>``.
    """
    import torch
    from transformers import Qwen2_5OmniConfig, Qwen2_5OmniForConditionalGeneration

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_qwen_tokenizer(QWEN2_5_OMNI_TOKENS, QWEN2_5_OMNI_CHAT_TEMPLATE)
    ids = {name: tokenizer.convert_tokens_to_ids(token) for name, token in QWEN2_5_OMNI_TOKENS.items()}
    special_ids = {
        "audio_token_index": ids["audio_token"],
        "image_token_index": ids["image_token"],
        "video_token_index": ids["video_token"],
        "audio_start_token_id": ids["audio_bos_token"],
        "audio_end_token_id": ids["audio_eos_token"],
        "vision_start_token_id": ids["vision_bos_token"],
        "vision_end_token_id": ids["vision_eos_token"],
    }
    head_dim = TINY_TEXT_CONFIG["hidden_size"] // TINY_TEXT_CONFIG["num_attention_heads"]
    thinker = {
        "audio_config": {**TINY_AUDIO_CONFIG, "n_window": 100, "output_dim": TINY_TEXT_CONFIG["hidden_size"]},
        "vision_config": {
            "depth": 1,
            "hidden_size": 16,
            "intermediate_size": 16,
            "num_heads": 2,
            "out_hidden_size": TINY_TEXT_CONFIG["hidden_size"],
            "fullatt_block_indexes": [0],
            "spatial_merge_size": 1,
        },
        "text_config": {
            "vocab_size": len(tokenizer),
            "tie_word_embeddings": False,
            # Multimodal RoPE: temporal, height and width sections of the head's rotary half.
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 1, 1]},
            **TINY_TEXT_CONFIG,
        },
        "user_token_id": tokenizer.encode("user", add_special_tokens=False)[
            0
        ],  # unused by the model; kept for fidelity
        **special_ids,
    }
    assert sum(thinker["text_config"]["rope_parameters"]["mrope_section"]) == head_dim // 2
    # The talker is never built (no audio output), but its config is saved and validated on load: keep its token ids
    # inside its vocabulary. transformers' default talker config does not, and warns whenever it is instantiated
    # (building and saving a config instantiate it): hence the quiet blocks.
    talker = dict(zip(OMNI_TALKER_TOKEN_FIELDS, range(len(OMNI_TALKER_TOKEN_FIELDS)), strict=True))
    with _quiet_transformers():
        config = Qwen2_5OmniConfig(thinker_config=thinker, talker_config=talker, enable_audio_output=False)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = Qwen2_5OmniForConditionalGeneration(config).eval()
    _save_generation_config(model, tokenizer)
    _save_generation_config(model.thinker, tokenizer)
    with _quiet_transformers():
        model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    _feature_extractor().save_pretrained(out)
    torch.save({}, out / "spk_dict.pt")  # loaded by from_pretrained; speakers only matter for audio output
    logger.info("tiny Qwen2.5-Omni (%d parameters) saved in %s", sum(p.numel() for p in model.parameters()), out)
    return out


CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML template of the tiny text chat model (text-only content)."""


def build_tiny_chat_lm(path: str | Path, seed: int = 0) -> Path:
    """Build a random Qwen2 text chat model (a few thousand parameters) for offline tests of ``hf:`` judges.

    Args:
        path: Folder to write (created if needed).
        seed: Seed of the random weights.

    Returns:
        The folder, loadable with ``AutoTokenizer``/``AutoModelForCausalLM`` (its replies are random text).
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_qwen_tokenizer({}, CHATML_TEMPLATE)
    config = Qwen2Config(vocab_size=len(tokenizer), tie_word_embeddings=True, **TINY_TEXT_CONFIG)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config).eval()
    _save_generation_config(model, tokenizer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
