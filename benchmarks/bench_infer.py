"""Samples per second of the transformers backend: one prompt at a time against batches of 8 and 16.

By default a tiny random Qwen2-Audio is built offline in a temporary folder and run on CPU; ``--model PATH`` also
runs a real checkpoint on CUDA when there is one. Prompts have random noise audio of 1-5 s (so batches pad), and
every run generates the same number of new tokens greedily.

    .venv/bin/python benchmarks/bench_infer.py [--prompts 32] [--new-tokens 32] [--model PATH]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from airbench_nb.models.base import GenerationParams, Prompt  # noqa: E402
from airbench_nb.models.hf import HFAudioLM  # noqa: E402
from airbench_nb.records import FoundationItem  # noqa: E402


def _prompts(n: int, min_s: float, max_s: float, seed: int = 0) -> list[Prompt]:
    rng = np.random.default_rng(seed)
    prompts = []
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
        seconds = rng.uniform(min_s, max_s)
        audio = (0.1 * rng.standard_normal(int(seconds * 16000))).astype(np.float32)
        text = f"Choose the most suitable answer, A or B.\n{item.question}\nA. male\nB. female"
        prompts.append(Prompt(item=item, text=text, audio=audio, audio_path=Path(item.audio)))
    return prompts


def _rate(lm: HFAudioLM, prompts: list[Prompt], params: GenerationParams, batch: int, repeats: int) -> float:
    """Best samples per second over ``repeats`` passes; batch 1 means one ``generate`` call per prompt."""
    lm.batch_size = batch
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        if batch == 1:
            for prompt in prompts:
                lm.generate([prompt], params)
        else:
            lm.generate(prompts, params)
        if lm.device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return len(prompts) / best


def bench(path: str, device: str, args: argparse.Namespace, label: str) -> None:
    lm = HFAudioLM(path, device=device)
    prompts = _prompts(args.prompts, args.min_seconds, args.max_seconds)
    params = GenerationParams(max_new_tokens=args.new_tokens)
    lm.batch_size = max(args.batches)
    lm.generate(prompts[: lm.batch_size], params)  # warm up (kernels, caches, lazy imports)
    n_params = sum(p.numel() for p in lm.model.parameters())
    dtype = str(lm.dtype).removeprefix("torch.")
    threads = f", {torch.get_num_threads()} CPU threads" if lm.device.type == "cpu" else ""
    print(f"\n{label}: {lm.family}, {n_params / 1e6:.2f}M parameters, {lm.device}, {dtype}{threads}")
    print(
        f"{args.prompts} prompts, audio {args.min_seconds:g}-{args.max_seconds:g} s, {args.new_tokens} new tokens, "
        f"greedy, best of {args.repeats}"
    )
    single = _rate(lm, prompts, params, 1, args.repeats)
    print(f"{'mode':<14}{'samples/s':>12}{'vs one-by-one':>16}")
    print(f"{'one-by-one':<14}{single:>12.2f}{1.0:>15.2f}x")
    for batch in args.batches:
        rate = _rate(lm, prompts, params, batch, args.repeats)
        print(f"{f'batched {batch}':<14}{rate:>12.2f}{rate / single:>15.2f}x")
    lm.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a real checkpoint (folder or hub id) to run on CUDA when there is one")
    parser.add_argument("--prompts", type=int, default=32, help="prompts per timing pass")
    parser.add_argument("--new-tokens", type=int, default=32, help="new tokens generated per prompt")
    parser.add_argument("--min-seconds", type=float, default=1.0, help="shortest audio")
    parser.add_argument("--max-seconds", type=float, default=5.0, help="longest audio")
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 16], help="batch sizes to time")
    parser.add_argument("--repeats", type=int, default=2, help="timing passes (the best is kept)")
    parser.add_argument("--threads", type=int, help="CPU threads for torch (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from airbench_nb.models.tiny import build_tiny_qwen2_audio

    with tempfile.TemporaryDirectory() as tmp:
        tiny = build_tiny_qwen2_audio(Path(tmp) / "tiny-qwen2-audio")
        bench(str(tiny), "cpu", args, "tiny random Qwen2-Audio")
    if args.model:
        if torch.cuda.is_available():
            bench(args.model, "cuda", args, args.model)
        else:
            print(f"\n{args.model}: skipped, no CUDA device here")


if __name__ == "__main__":
    main()
