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
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

TINY_CORPUS: tuple[str, ...] = (
    "Choose the most suitable answer from options A, B, C, and D to respond the question in next line, "
    "you may only choose A or B or C or D.",
    "What is the gender of the speaker? A. male B. female",
    "Which sound can be heard in the audio? A dog barks in the park while a car passes by.",
    "What instrument is playing? The piano plays a slow melody in a minor key.",
    "What emotion does the speaker convey? The speaker sounds happy, sad, angry or neutral.",
    "The answer is A. The answer is B. The answer is C. The answer is D.",
    "Listen carefully and think step by step about what you hear.",
)
"""Sentences the tiny tokenizers' BPE merges are learnt from (AIR-Bench-like prompt and answer text)."""

TINY_BPE_VOCAB_SIZE = 320
"""Target size of the learnt BPE vocabulary: the 256 byte-level symbols plus about 64 merges."""

TINY_TEXT_CONFIG: dict[str, Any] = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
}
"""Decoder size shared by the tiny models (head dimension 8)."""

TINY_AUDIO_CONFIG: dict[str, Any] = {
    "num_mel_bins": 128,
    "encoder_layers": 2,
    "encoder_attention_heads": 2,
    "encoder_ffn_dim": 64,
    "d_model": 32,
    "max_source_positions": 1500,
}
"""Whisper-style audio encoder size shared by the tiny models: 128 mel bins and 30 s windows like the real ones."""

TINY_N_MELS = TINY_AUDIO_CONFIG["num_mel_bins"]
"""Mel bins of the tiny models' feature extractors (the real Qwen2-Audio and Qwen2.5-Omni use 128)."""

PAD_TOKEN = "<|endoftext|>"
"""Padding (and end-of-text) token of the Qwen tokenizers."""

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
"""ChatML turn delimiters; ``<|im_end|>`` ends an answer (the EOS token)."""

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


def _train_bpe(corpus: Sequence[str], vocab_size: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Learn a byte-level BPE with the Qwen2 pre-tokenizer; returns its vocabulary and merges (as tuples)."""
    from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import BPE
    from tokenizers.trainers import BpeTrainer
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    tokenizer = Tokenizer(BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(list(corpus), trainer)
    model = json.loads(tokenizer.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in model["merges"]]
    return dict(model["vocab"]), merges


def build_tiny_qwen_tokenizer(named_tokens: dict[str, str], chat_template: str) -> Any:
    """A Qwen2 tokenizer (byte-level BPE) trained offline, with ChatML and the given named special tokens.

    Args:
        named_tokens: Attribute name to token (``{"audio_token": "<|AUDIO|>", ...}``); the tokenizer exposes each
            as an attribute and ``<name>_id``, as the multimodal processors expect.
        chat_template: Jinja chat template stored with the tokenizer.

    Returns:
        A ``Qwen2Tokenizer`` padding on the left, EOS ``<|im_end|>``, padding ``<|endoftext|>``.
    """
    from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

    vocab, merges = _train_bpe(TINY_CORPUS, TINY_BPE_VOCAB_SIZE)
    specials = [PAD_TOKEN, IM_START, IM_END, *named_tokens.values()]
    for token in specials:
        vocab.setdefault(token, len(vocab))
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        eos_token=IM_END,
        pad_token=PAD_TOKEN,
        extra_special_tokens={"im_start_token": IM_START, **named_tokens},
        padding_side="left",
    )
    tokenizer.chat_template = chat_template
    return tokenizer


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' warnings inside the block."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def _feature_extractor() -> Any:
    from transformers import WhisperFeatureExtractor

    return WhisperFeatureExtractor(feature_size=TINY_N_MELS, sampling_rate=16000, padding_side="right")


def _save_generation_config(model: Any, tokenizer: Any) -> None:
    """Greedy decoding, stopping at ``<|im_end|>`` or ``<|endoftext|>``, padding with ``<|endoftext|>``."""
    config = model.generation_config
    config.eos_token_id = [tokenizer.convert_tokens_to_ids(IM_END), tokenizer.convert_tokens_to_ids(PAD_TOKEN)]
    config.pad_token_id = tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    config.bos_token_id = None
    config.do_sample = False


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


BUILDERS: dict[str, Callable[..., Path]] = {
    "qwen2_audio": build_tiny_qwen2_audio,
    "qwen2_5_omni": build_tiny_qwen2_5_omni,
    "chat_lm": build_tiny_chat_lm,
}
"""Family name to builder, for the command line."""


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``python -m airbench_nb.models.tiny FAMILY FOLDER [--seed N]``."""
    parser = argparse.ArgumentParser(description="Build a tiny random audio-language model offline.")
    parser.add_argument("family", choices=sorted(BUILDERS))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(BUILDERS[args.family](args.folder, seed=args.seed))


if __name__ == "__main__":
    main()
