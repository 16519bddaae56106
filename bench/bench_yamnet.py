"""YAMNet (``onnx:yamnet-bundled``, the quantised ONNX export) on this machine: items per second and real-time factor.

Synthesizes ``--clips`` tiered sound-source clips (the kit's synthesizers, 2-5 s each, cycled over the fine
classes) and answers them as ``sound_source`` items with ``onnx:yamnet-bundled`` on ``--threads`` onnxruntime
threads. It prints the load time, the seconds spent, items per second, the real-time factor (seconds spent over
seconds of audio; under 1 is faster than real time) and the share of that time the numpy front end took. Needs the
bundled weights (``airbench-nb weights fetch yamnet``); without them it prints one line and exits 0.

    .venv/bin/python bench/bench_yamnet.py                 # 100 clips, 1 thread
    .venv/bin/python bench/bench_yamnet.py --clips 200 --threads 4
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from airbench_nb.models import GenerationParams, Prompt, SpecError, load_model
from airbench_nb.records import SoundSourceItem


def _prompts(count: int) -> tuple[list[Prompt], float]:
    from airbench_nb.synth.sources import fine_classes, render

    names = fine_classes()
    prompts, seconds = [], 0.0
    for i in range(count):
        fine = names[i % len(names)]
        clip = render(fine, seed=i)
        choices = [n.replace("_", " ") for n in names]
        item = SoundSourceItem(
            uid=f"bench-{i}",
            dataset="synthetic",
            audio=f"audio/{i}.wav",
            question="Which?",
            choices=choices,
            answer=names.index(fine),
            classes=list(names),
            categories=[f"c-{n}" for n in names],
        )
        prompts.append(Prompt(item=item, text="", audio=clip.samples, audio_path=Path(item.audio), sample_rate=clip.sr))
        seconds += clip.samples.size / clip.sr
    return prompts, seconds


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (module docstring); 0 when done or skipped."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=100, help="clips to tag (default 100)")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads (default 1)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    try:
        model = load_model("onnx:yamnet-bundled", threads=args.threads)
    except SpecError as exc:
        print(f"skipped: {exc}")
        return 0
    loaded = time.perf_counter() - t0
    prompts, audio_s = _prompts(args.clips)
    try:
        t0 = time.perf_counter()
        for prompt in prompts:
            model.frontend.patches(prompt.audio)
        frontend_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        answers = model.generate(prompts, GenerationParams())
        spent = time.perf_counter() - t0
    finally:
        model.close()
    errors = sum(1 for a in answers if a.error)
    print(f"onnx:yamnet-bundled, {args.threads} thread(s): loaded in {loaded:.2f} s")
    print(f"{len(prompts)} clips, {audio_s:.1f} s of audio, {errors} errors")
    print(f"  {spent:.2f} s: {len(prompts) / spent:.1f} items/s, real-time factor {spent / audio_s:.4f}")
    print(f"  front end alone {frontend_s:.2f} s ({frontend_s / spent:.0%} of the time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
