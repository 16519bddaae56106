"""Tiny random CLAP: ``ClapModel`` (HTSAT audio tower, RoBERTa text tower) with a ``ClapProcessor`` built offline."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from airbench_nb.models.tiny.common import TINY_BPE_VOCAB_SIZE, _quiet_transformers, _train_bpe

logger = logging.getLogger(__name__)

TINY_CLAP_CORPUS: tuple[str, ...] = (
    "this is a sound of a wailing siren. a sound of a yelping siren. the sound of a hi-lo siren.",
    "a recording of a church bell, a handbell, an alarm beeper, an engine, a drip, a pour and a stream.",
    "the sound of a knock on a door. footsteps on a wooden floor. water dripping from a tap.",
)
"""Sentences the tiny CLAP tokenizer's merges are learnt from (prompt templates and sound classes)."""

ROBERTA_SPECIALS: tuple[str, ...] = ("<s>", "<pad>", "</s>", "<unk>")
"""RoBERTa's special tokens, at ids 0-3 as in the real CLAP tokenizer (``<mask>`` comes last)."""

TINY_CLAP_RATE = 16000
"""Sample rate of the tiny CLAP's feature extractor (the LAION checkpoints use 48 kHz)."""

TINY_CLAP_WINDOW_S = 2
"""Seconds of audio the tiny CLAP reads (longer clips are cropped, shorter ones repeated; the real ones read 10)."""


def build_tiny_clap_tokenizer() -> Any:
    """A RoBERTa tokenizer (byte-level BPE trained offline on :data:`TINY_CLAP_CORPUS`), as CLAP's text tower uses."""
    from transformers import RobertaTokenizer

    learnt, merges = _train_bpe(TINY_CLAP_CORPUS, TINY_BPE_VOCAB_SIZE)
    vocab = {token: i for i, token in enumerate(ROBERTA_SPECIALS)}
    for token in sorted(learnt, key=learnt.__getitem__):
        vocab.setdefault(token, len(vocab))
    vocab.setdefault("<mask>", len(vocab))
    return RobertaTokenizer(vocab=vocab, merges=merges)


def build_tiny_clap(path: str | Path, seed: int = 0) -> Path:
    """Build a random CLAP (about 55k parameters) with its processor and save it under ``path``.

    The audio tower is HTSAT with two Swin stages on a 64 x 64 spectrogram image (16 mel bins, 2 s at 16 kHz with a
    10 ms hop); the text tower a 2-layer RoBERTa; both project to 16 dimensions.

    Args:
        path: Folder to write (created if needed).
        seed: Seed of the random weights.

    Returns:
        The folder, loadable with ``clap:<folder>`` and with ``ClapModel`` / ``ClapProcessor``.
    """
    import torch
    from transformers import ClapConfig, ClapFeatureExtractor, ClapModel, ClapProcessor

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_clap_tokenizer()
    mel_bins = 16
    extractor = ClapFeatureExtractor(
        feature_size=mel_bins,
        sampling_rate=TINY_CLAP_RATE,
        hop_length=160,
        max_length_s=TINY_CLAP_WINDOW_S,
        fft_window_size=400,
        frequency_max=TINY_CLAP_RATE // 2,
        truncation="rand_trunc",
        padding="repeatpad",
    )
    processor = ClapProcessor(feature_extractor=extractor, tokenizer=tokenizer)
    audio_config = {
        "spec_size": 64,
        "num_mel_bins": mel_bins,
        "window_size": 4,
        "patch_size": 4,
        "patch_stride": (4, 4),
        "depths": [1, 1],
        "num_attention_heads": [2, 2],
        "patch_embeds_hidden_size": 16,
        "hidden_size": 32,
        "projection_dim": 16,
        "enable_fusion": False,
    }
    text_config = {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 130,
        "projection_dim": 16,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    config = ClapConfig(text_config=text_config, audio_config=audio_config, projection_dim=16)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = ClapModel(config).eval()
    with _quiet_transformers():
        model.save_pretrained(out)
        processor.save_pretrained(out)
    logger.info("tiny CLAP (%d parameters) saved in %s", sum(p.numel() for p in model.parameters()), out)
    return out
