"""Throughput of the transformers backend: one prompt at a time against batches, on the real architecture.

``--config qwen2-audio-7b --random-weights`` builds Qwen2-Audio-7B-Instruct's architecture from its config written
below (no download), with random weights, and runs it through ``HFAudioLM`` (chat template, audio placeholders,
batching, left padding, ``generate``). Every prompt generates exactly ``--new-tokens`` tokens (end of sequence
suppressed until then), greedily, so modes compare like for like. It prints samples/s and generated tokens/s one
by one and batched, the ratio to one by one, and the batch-1 decode rate as a share of the memory-bandwidth limit
(one decode step reads every decoder weight once: limit = HBM bandwidth / decoder weight bytes).

On CUDA the real size runs in bfloat16 at batches 8, 16, 32, 64 (an H200 by default: ``--bandwidth-tbs 4.8``). On
CPU a scaled-down config runs in float32 at batches 4 and 8 (the output says so). ``--layers`` cuts the decoder and
the encoder to that many layers (the GPU test runs 2). ``--model PATH`` times a real checkpoint instead.

    .venv/bin/python bench/bench_infer.py --config qwen2-audio-7b --random-weights --device cuda
    .venv/bin/python bench/bench_infer.py --config qwen2-audio-7b --random-weights --device cpu
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from airbench_nb.models.base import GenerationParams, Prompt  # noqa: E402
from airbench_nb.models.hf import HFAudioLM  # noqa: E402
from airbench_nb.records import FoundationItem  # noqa: E402

QWEN2_AUDIO_7B: dict[str, Any] = {
    "audio_config": {
        "model_type": "qwen2_audio_encoder",
        "d_model": 1280,
        "encoder_layers": 32,
        "encoder_attention_heads": 20,
        "encoder_ffn_dim": 5120,
        "num_mel_bins": 128,
        "max_source_positions": 1500,
    },
    "text_config": {
        "model_type": "qwen2",
        "vocab_size": 156032,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
    },
    "audio_token_index": 151646,
}
"""Qwen2-Audio-7B-Instruct's config.json (Whisper-large-v3-size encoder, Qwen-7B decoder): about 8.4B parameters."""

CPU_SCALE: dict[str, dict[str, int]] = {
    "audio_config": {"d_model": 128, "encoder_layers": 2, "encoder_attention_heads": 2, "encoder_ffn_dim": 512},
    "text_config": {
        "vocab_size": 32000,
        "hidden_size": 256,
        "intermediate_size": 688,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
    },
}
"""What the CPU run changes: the same architecture at 1/16 of the width with 2 layers (about 19M parameters)."""

CONFIGS = {"qwen2-audio-7b": QWEN2_AUDIO_7B}
"""Architectures ``--config`` builds."""


@dataclass
class Row:
    """One timed mode."""

    mode: str
    batch: int
    seconds: float
    samples: int
    tokens: int

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.seconds

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds


def build_random(name: str, device: torch.device, *, scaled: bool, layers: int | None) -> HFAudioLM:
    """The architecture of ``name`` with random weights (bf16 on CUDA, fp32 on CPU) behind ``HFAudioLM``."""
    import copy

    from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration, Qwen2AudioProcessor

    from airbench_nb.models.tiny.common import _feature_extractor, build_tiny_qwen_tokenizer
    from airbench_nb.models.tiny.qwen import QWEN2_AUDIO_CHAT_TEMPLATE, QWEN2_AUDIO_TOKENS

    values = copy.deepcopy(CONFIGS[name])
    if scaled:
        for part, changes in CPU_SCALE.items():
            values[part].update(changes)
    if layers:
        values["audio_config"]["encoder_layers"] = layers
        values["text_config"]["num_hidden_layers"] = layers
    tokenizer = build_tiny_qwen_tokenizer(QWEN2_AUDIO_TOKENS, QWEN2_AUDIO_CHAT_TEMPLATE)
    # The tiny tokenizer's audio token takes the real id's place: the model sees the id the processor writes.
    config = Qwen2AudioConfig(
        **{**values, "audio_token_index": tokenizer.convert_tokens_to_ids(QWEN2_AUDIO_TOKENS["audio_token"])}
    )
    processor = Qwen2AudioProcessor(
        feature_extractor=_feature_extractor(), tokenizer=tokenizer, chat_template=QWEN2_AUDIO_CHAT_TEMPLATE
    )
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2AudioForConditionalGeneration._from_config(config, dtype=dtype)
    return HFAudioLM.from_model(model, processor, family="qwen2_audio", spec=f"random:{name}", batch_size=1)


def prompts(n: int, min_s: float, max_s: float, seed: int = 0) -> list[Prompt]:
    """``n`` AIR-Bench-like prompts with noise audio of ``min_s``-``max_s`` seconds (so batches pad)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        item = FoundationItem(
            uid=f"bench-{i}",
            dataset="synthetic",
            audio=f"bench/{i}.wav",
            question="What is the gender of the speaker?",
            task="Speaker_Gender_Recognition",
            choices=["male", "female"],
            answer=i % 2,
        )
        audio = (0.1 * rng.standard_normal(int(rng.uniform(min_s, max_s) * 16000))).astype(np.float32)
        text = f"Choose the most suitable answer, A or B.\n{item.question}\nA. male\nB. female"
        out.append(Prompt(item=item, text=text, audio=audio, audio_path=Path(item.audio)))
    return out


def _sync(lm: HFAudioLM) -> None:
    if lm.device.type == "cuda":
        torch.cuda.synchronize(lm.device)


def timed(lm: HFAudioLM, batch: list[Prompt], params: GenerationParams, size: int, repeats: int) -> Row:
    """Best of ``repeats`` passes over ``batch``: one ``generate`` call per prompt for size 1, else chunks."""
    lm.batch_size = size
    best, tokens = float("inf"), 0
    for _ in range(repeats):
        _sync(lm)
        t0 = time.perf_counter()
        if size == 1:
            out = [lm.generate([p], params)[0] for p in batch]
        else:
            out = lm.generate(batch, params)
        _sync(lm)
        elapsed = time.perf_counter() - t0
        failed = [g.error for g in out if g.error]
        if failed:
            raise RuntimeError(f"batch {size}: {len(failed)} prompts failed, first: {failed[0]}")
        if elapsed < best:
            best, tokens = elapsed, sum(g.output_tokens or 0 for g in out)
    return Row("one-by-one" if size == 1 else f"batched {size}", size, best, len(batch), tokens)


def decode_rate(lm: HFAudioLM, batch: list[Prompt], new_tokens: int, repeats: int) -> float:
    """Batch-1 decode tokens/s: (N - 1) tokens over the time N tokens take beyond 1 token (prefill cancels)."""
    lm.batch_size = 1
    times = {}
    for n in (1, new_tokens):
        params = fixed_length(lm, n)
        times[n] = timed(lm, batch, params, 1, repeats).seconds / len(batch)
    return (new_tokens - 1) / max(times[new_tokens] - times[1], 1e-9)


def fixed_length(lm: HFAudioLM, n: int) -> GenerationParams:
    """Greedy parameters that generate exactly ``n`` tokens (end of sequence suppressed before that)."""
    lm._generator.generation_config.min_new_tokens = n
    return GenerationParams(max_new_tokens=n)


def decoder_bytes(lm: HFAudioLM) -> int:
    """Bytes of the weights one decode step reads: the language model with its output head (not the audio encoder)."""
    model = lm.model
    decoder = getattr(model, "language_model", None) or model.model.language_model
    head = model.get_output_embeddings()
    params = {id(p): p for p in [*decoder.parameters(), *head.parameters()]}
    return sum(p.numel() * p.element_size() for p in params.values())


def table(rows: list[Row]) -> str:
    """The results: mode, batch, samples/s, generated tokens/s, ratio to one by one."""
    base = rows[0]
    lines = [f"{'mode':<14}{'batch':>6}{'samples/s':>12}{'tokens/s':>12}{'vs one-by-one':>16}"]
    for r in rows:
        ratio = r.samples_per_s / base.samples_per_s
        lines.append(f"{r.mode:<14}{r.batch:>6}{r.samples_per_s:>12.2f}{r.tokens_per_s:>12.1f}{ratio:>15.2f}x")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> str:
    """Build, time and report; returns the printed text."""
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda but no CUDA device is visible")
    scaled = device.type != "cuda"
    batches = args.batches or ([8, 16, 32, 64] if device.type == "cuda" else [4, 8])
    n_prompts = args.prompts or max(batches)
    if args.model:
        lm = HFAudioLM(args.model, device=str(device), batch_size=1)
        what = f"{args.model} ({lm.family})"
    else:
        if not args.random_weights:
            raise SystemExit("error: give --random-weights (nothing is downloaded) or --model PATH")
        lm = build_random(args.config, device, scaled=scaled, layers=args.layers)
        what = f"{args.config} architecture, random weights"
        if scaled:
            what += " (SCALED DOWN for CPU: 2 layers, 1/16 width; numbers are not the real model's)"
        elif args.layers:
            what += f" (cut to {args.layers} layers)"
    if device.type == "cpu" and args.threads:
        torch.set_num_threads(args.threads)
    batch = prompts(n_prompts, args.min_seconds, args.max_seconds)
    params = fixed_length(lm, args.new_tokens)
    lm.batch_size = max(batches)
    lm.generate(batch[: lm.batch_size], params)  # warm up: kernels, allocator, lazy imports
    n_params = sum(p.numel() for p in lm.model.parameters())
    dtype = str(lm.dtype).removeprefix("torch.")
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    out = [
        f"{what}",
        f"{n_params / 1e9:.3f}B parameters, {dtype}, {where}",
        f"{n_prompts} prompts, audio {args.min_seconds:g}-{args.max_seconds:g} s, exactly {args.new_tokens} new "
        f"tokens each, greedy, best of {args.repeats}",
    ]
    rows = [timed(lm, batch, params, 1, args.repeats)]
    rows += [timed(lm, batch, params, b, args.repeats) for b in batches]
    out.append(table(rows))
    rate = decode_rate(lm, batch[: min(8, n_prompts)], args.new_tokens, args.repeats)
    weights = decoder_bytes(lm)
    limit = args.bandwidth_tbs * 1e12 / weights
    out.append(
        f"batch-1 decode: {rate:.1f} tokens/s; bandwidth limit {limit:.1f} tokens/s "
        f"({weights / 1e9:.2f} GB of decoder weights at {args.bandwidth_tbs:g} TB/s): {100 * rate / limit:.1f}% of it"
    )
    if device.type == "cpu":
        out.append(f"(--bandwidth-tbs {args.bandwidth_tbs:g} is an HBM figure; on CPU give the RAM bandwidth)")
    lm.close()
    return "\n".join(out)


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="qwen2-audio-7b", help="architecture to build")
    p.add_argument("--random-weights", action="store_true", help="random weights (required with --config)")
    p.add_argument("--model", help="a real checkpoint folder to time instead")
    p.add_argument("--device", help="cuda or cpu (default: cuda when available)")
    p.add_argument("--layers", type=int, help="cut encoder and decoder to this many layers")
    p.add_argument("--bandwidth-tbs", type=float, default=4.8, help="memory bandwidth in TB/s (H200: 4.8)")
    p.add_argument("--prompts", type=int, help="prompts per pass (default: the largest batch)")
    p.add_argument("--new-tokens", type=int, default=32, help="tokens generated per prompt")
    p.add_argument("--min-seconds", type=float, default=1.0, help="shortest audio")
    p.add_argument("--max-seconds", type=float, default=5.0, help="longest audio")
    p.add_argument("--batches", type=int, nargs="+", help="batch sizes (default: 8 16 32 64 on CUDA, 4 8 on CPU)")
    p.add_argument("--repeats", type=int, default=2, help="timing passes (the best is kept)")
    p.add_argument("--threads", type=int, help="CPU threads for torch")
    return p


def main(argv: list[str] | None = None) -> None:
    print(run(parser().parse_args(argv)))


if __name__ == "__main__":
    main()
