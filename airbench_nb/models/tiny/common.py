"""What the tiny models share: the BPE corpus and sizes, the tokenizer trainer, the feature extractor, quiet saving."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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
