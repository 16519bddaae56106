"""Tiny random Whisper: ``WhisperForConditionalGeneration`` with a BPE tokenizer and feature extractor built here."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from airbench_nb.models.tiny.common import TINY_AUDIO_CONFIG, TINY_BPE_VOCAB_SIZE, TINY_CORPUS, _train_bpe

logger = logging.getLogger(__name__)

WHISPER_LANGUAGES: tuple[str, ...] = ("en", "de", "fr", "es", "it")
"""Languages the tiny Whisper knows (a language token each): the first is English, as in the real models."""

WHISPER_SPECIALS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|startoftranscript|>",
    *(f"<|{code}|>" for code in WHISPER_LANGUAGES),
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nospeech|>",
    "<|notimestamps|>",
)
"""Whisper's special tokens in the real models' order (language tokens for :data:`WHISPER_LANGUAGES` only)."""

TINY_WHISPER_N_MELS = 80
"""Mel bins of the tiny Whisper (those of Whisper tiny to large-v2; large-v3 has 128)."""

TINY_WHISPER_INIT_STD = 0.5
"""Standard deviation of the random weights: large enough that the answers depend on the audio (at Whisper's own
0.02 a tiny random model repeats one token whatever it hears, and batching could not be told from one by one)."""

TINY_WHISPER_CORPUS: tuple[str, ...] = (
    *TINY_CORPUS,
    "The quick brown fox jumps over the lazy dog.",
    "Please call Stella and ask her to bring these things with her from the store.",
)
"""Sentences the tiny Whisper tokenizer's merges are learnt from (the shared corpus plus transcript-like text)."""


def build_tiny_whisper_tokenizer() -> Any:
    """A Whisper tokenizer (byte-level BPE trained offline) with Whisper's special tokens.

    Returns:
        A ``WhisperTokenizer``; ``<|endoftext|>`` is its BOS, EOS, padding and unknown token.
    """
    from transformers import WhisperTokenizer

    vocab, merges = _train_bpe(TINY_WHISPER_CORPUS, TINY_BPE_VOCAB_SIZE)
    for token in WHISPER_SPECIALS:
        vocab.setdefault(token, len(vocab))
    tokenizer = WhisperTokenizer(vocab=vocab, merges=merges)
    tokenizer.add_special_tokens({"additional_special_tokens": list(WHISPER_SPECIALS[1:])})
    return tokenizer


def _generation_config(model: Any, tokenizer: Any) -> None:
    """Whisper's generation settings: the language and task tokens, no timestamps, greedy."""
    config = model.generation_config
    ids = tokenizer.convert_tokens_to_ids
    eot = ids("<|endoftext|>")
    config.decoder_start_token_id = ids("<|startoftranscript|>")
    config.eos_token_id = eot
    config.pad_token_id = eot
    config.bos_token_id = eot
    config.is_multilingual = True
    config.lang_to_id = {f"<|{code}|>": ids(f"<|{code}|>") for code in WHISPER_LANGUAGES}
    config.task_to_id = {"transcribe": ids("<|transcribe|>"), "translate": ids("<|translate|>")}
    config.no_timestamps_token_id = ids("<|notimestamps|>")
    config.prev_sot_token_id = ids("<|startofprev|>")
    config.forced_decoder_ids = None
    config.suppress_tokens = []
    config.begin_suppress_tokens = [eot]
    config.max_length = 448
    config.do_sample = False
    config._from_model_config = False  # else loading rebuilds it from the model config, losing the tokens above


def build_tiny_whisper(path: str | Path, seed: int = 0) -> Path:
    """Build a random multilingual Whisper (about 100k parameters) with its processor and save it under ``path``.

    Args:
        path: Folder to write (created if needed).
        seed: Seed of the random weights.

    Returns:
        The folder, loadable with ``hf:<folder>`` and with ``WhisperProcessor``.
    """
    import torch
    from transformers import WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration, WhisperProcessor

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_whisper_tokenizer()
    extractor = WhisperFeatureExtractor(feature_size=TINY_WHISPER_N_MELS, sampling_rate=16000)
    processor = WhisperProcessor(feature_extractor=extractor, tokenizer=tokenizer)
    audio = TINY_AUDIO_CONFIG
    eot = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = WhisperConfig(
        vocab_size=len(tokenizer),
        num_mel_bins=TINY_WHISPER_N_MELS,
        d_model=audio["d_model"],
        encoder_layers=audio["encoder_layers"],
        encoder_attention_heads=audio["encoder_attention_heads"],
        encoder_ffn_dim=audio["encoder_ffn_dim"],
        decoder_layers=2,
        decoder_attention_heads=audio["encoder_attention_heads"],
        decoder_ffn_dim=audio["encoder_ffn_dim"],
        max_source_positions=audio["max_source_positions"],
        max_target_positions=448,
        decoder_start_token_id=tokenizer.convert_tokens_to_ids("<|startoftranscript|>"),
        eos_token_id=eot,
        pad_token_id=eot,
        bos_token_id=eot,
        init_std=TINY_WHISPER_INIT_STD,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = WhisperForConditionalGeneration(config).eval()
    _generation_config(model, tokenizer)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    logger.info("tiny Whisper (%d parameters) saved in %s", sum(p.numel() for p in model.parameters()), out)
    return out
