"""Tiny Voxtral: a Tekken (tiktoken-style) tokenizer written offline, read by mistral-common, and the real processor.

Voxtral's processor takes its tokenizer from ``mistral-common`` (the ``[voxtral]`` extra), which reads
``tekken.json``: byte-level BPE ranks, special tokens, and an ``audio`` section (16 kHz, 12.5 audio tokens per
second, 128 mel bins). The file written here has the byte alphabet plus the merges learnt from the tiny corpus, and
the special tokens at the ranks the Voxtral processor and model expect (``[AUDIO]`` is token 24).
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

from airbench_nb.models.tiny.common import (
    TINY_AUDIO_CONFIG,
    TINY_BPE_VOCAB_SIZE,
    TINY_CORPUS,
    TINY_N_MELS,
    TINY_TEXT_CONFIG,
    _feature_extractor,
    _train_bpe,
)

logger = logging.getLogger(__name__)

VOXTRAL_AUDIO_TOKEN_ID = 24
"""Id of ``[AUDIO]``: fixed in ``VoxtralProcessor`` and in the real checkpoints' ``tekken.json``."""

TEKKEN_SPECIAL_TOKENS: dict[int, str] = {
    **dict(
        enumerate(
            (
                "<unk>",
                "<s>",
                "</s>",
                "[INST]",
                "[/INST]",
                "[AVAILABLE_TOOLS]",
                "[/AVAILABLE_TOOLS]",
                "[TOOL_RESULTS]",
                "[/TOOL_RESULTS]",
                "[TOOL_CALLS]",
                "[IMG]",
                "<pad>",
                "[IMG_BREAK]",
                "[IMG_END]",
                "[PREFIX]",
                "[MIDDLE]",
                "[SUFFIX]",
                "[SYSTEM_PROMPT]",
                "[/SYSTEM_PROMPT]",
                "[TOOL_CONTENT]",
            )
        )
    ),
    VOXTRAL_AUDIO_TOKEN_ID: "[AUDIO]",
    VOXTRAL_AUDIO_TOKEN_ID + 1: "[BEGIN_AUDIO]",
    VOXTRAL_AUDIO_TOKEN_ID + 2: "[TRANSCRIBE]",
}
"""Special tokens by rank (mistral-common's order); the other ranks below :data:`TEKKEN_NUM_SPECIAL` are fillers."""

TEKKEN_NUM_SPECIAL = 32
"""Special-token ranks of the tiny Tekken tokenizer (the real one reserves 1000)."""

BOS_ID, EOS_ID, PAD_ID = 1, 2, 11
"""Ids of ``<s>``, ``</s>`` and ``<pad>``."""


def _byte_decoder() -> dict[str, int]:
    """The inverse of GPT-2's byte-to-printable-character map (what byte-level BPE vocabularies are written in)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def tiny_tekken(corpus: tuple[str, ...] = TINY_CORPUS, vocab_size: int = TINY_BPE_VOCAB_SIZE) -> dict[str, Any]:
    """The content of a ``tekken.json``: 256 byte tokens, then the merges learnt on ``corpus``, in rank order."""
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    _, merges = _train_bpe(corpus, vocab_size)
    decode = _byte_decoder()
    tokens = [bytes([b]) for b in range(256)]
    seen = set(tokens)
    for left, right in merges:
        token = bytes(decode[c] for c in left + right)
        if token not in seen:
            seen.add(token)
            tokens.append(token)
    return {
        "config": {
            "pattern": PRETOKENIZE_REGEX,
            "num_vocab_tokens": len(tokens),
            "default_vocab_size": len(tokens) + TEKKEN_NUM_SPECIAL,
            "default_num_special_tokens": TEKKEN_NUM_SPECIAL,
            "version": "v7",
        },
        "vocab": [
            {"rank": i, "token_bytes": base64.b64encode(t).decode("ascii"), "token_str": t.decode("utf-8", "replace")}
            for i, t in enumerate(tokens)
        ],
        "special_tokens": [
            {"rank": i, "token_str": TEKKEN_SPECIAL_TOKENS.get(i, f"<SPECIAL_{i}>"), "is_control": True}
            for i in range(TEKKEN_NUM_SPECIAL)
        ],
        "audio": {
            "sampling_rate": 16000,
            "frame_rate": 12.5,
            "chunk_length_s": 30.0,
            "audio_encoding_config": {"num_mel_bins": TINY_N_MELS, "hop_length": 160, "window_size": 400},
        },
    }


def build_tiny_voxtral(path: str | Path, seed: int = 0) -> Path:
    """Build a random Voxtral (about 135k parameters) with its processor and save it under ``path``.

    Needs ``mistral-common`` (``pip install -e .[voxtral]``).

    Args:
        path: Folder to write (created if needed).
        seed: Seed of the random weights.

    Returns:
        The folder, loadable with ``hf:<folder>`` and with ``AutoProcessor``.
    """
    import torch
    from transformers import VoxtralConfig, VoxtralForConditionalGeneration, VoxtralProcessor
    from transformers.tokenization_mistral_common import MistralCommonBackend

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tekken = tiny_tekken()
    (out / "tekken.json").write_text(json.dumps(tekken), encoding="utf-8")
    tokenizer = MistralCommonBackend.from_pretrained(str(out), local_files_only=True)
    processor = VoxtralProcessor(feature_extractor=_feature_extractor(), tokenizer=tokenizer)
    audio = TINY_AUDIO_CONFIG
    head_dim = TINY_TEXT_CONFIG["hidden_size"] // TINY_TEXT_CONFIG["num_attention_heads"]
    config = VoxtralConfig(
        audio_config={
            "num_mel_bins": audio["num_mel_bins"],
            "num_hidden_layers": audio["encoder_layers"],
            "num_attention_heads": audio["encoder_attention_heads"],
            "hidden_size": audio["d_model"],
            # The projector stacks 4 encoder frames: 1500 frames per 30 s window -> 375 tokens (12.5 per second).
            "intermediate_size": 4 * audio["d_model"],
            "max_source_positions": audio["max_source_positions"],
        },
        text_config={
            "model_type": "llama",
            "vocab_size": tekken["config"]["default_vocab_size"],
            "tie_word_embeddings": True,
            "head_dim": head_dim,
            **TINY_TEXT_CONFIG,
        },
        audio_token_id=VOXTRAL_AUDIO_TOKEN_ID,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = VoxtralForConditionalGeneration(config).eval()
    generation = model.generation_config
    generation.bos_token_id, generation.eos_token_id, generation.pad_token_id = BOS_ID, EOS_ID, PAD_ID
    generation.do_sample = False
    model.save_pretrained(out)
    processor.save_pretrained(out)
    logger.info("tiny Voxtral (%d parameters) saved in %s", sum(p.numel() for p in model.parameters()), out)
    return out
