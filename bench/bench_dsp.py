"""The ``dsp`` baseline on a build: its time and answers against the pitch tracking it had before (librosa's pyin).

Every Foundation item of the build that the DSP baseline measures (pitch, velocity, gender, number of speakers,
counting questions, the multi-clip tasks) is answered twice: by the baseline as it is (pYIN decoded by
:mod:`airbench_nb.models.pyin`, each clip measured once) and by the reference, ``librosa.pyin`` called for every
measurement as before. It prints both times, their ratio and every item whose answer differs. The one difference
expected is an item the reference could not measure (``ValueError: no voiced frames``, an error retried on every
resume), which the baseline now answers ``I cannot tell.``; any other difference exits 1.

    .venv/bin/python bench/bench_dsp.py                 # builds (or reuses) the mini build in the cache
    .venv/bin/python bench/bench_dsp.py --data data/mini --per-task 5
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from airbench_nb.audio import load_audio
from airbench_nb.manifests import read_manifest
from airbench_nb.models import baselines
from airbench_nb.models.base import Prompt
from airbench_nb.records import FoundationItem

EXPLAINED = "cannot tell (was an error: no voiced frames)"


def _reference_median_f0(samples: np.ndarray, sr: int, fmin: float, fmax: float) -> float:
    """The measurement as it was: ``librosa.pyin`` on every call, ``ValueError`` when nothing is voiced."""
    import librosa

    f0, _, _ = librosa.pyin(samples, fmin=fmin, fmax=fmax, sr=sr, frame_length=2048)
    voiced = f0[~np.isnan(f0)]
    if voiced.size == 0:
        raise ValueError("no voiced frames")
    return float(np.median(voiced))


def _answer(prompt: Prompt) -> str:
    try:
        return baselines.dsp_answer(prompt)
    except ValueError as exc:
        return f"error: {exc}"


def _measured(item: FoundationItem) -> bool:
    return item.task in baselines.DSP_TASKS or item.task in baselines.MULTI_CLIP_DSP_TASKS or item.task == "Sound_AQA"


def main() -> int:
    """Run both, print the comparison; exit 1 on an unexplained difference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="A build (foundation.jsonl); default: the mini build, cached")
    parser.add_argument("--per-task", type=int, default=0, help="Only the first N items of each task (0: all)")
    args = parser.parse_args()
    if args.data is None:
        from airbench_nb.builders.cache import build_or_reuse

        args.data = Path("/tmp/airbench-bench-dsp")
        _, how = build_or_reuse("mini", 0, args.data)
        print(how)
    items = [i for i in read_manifest(args.data / "foundation.jsonl") if isinstance(i, FoundationItem) and _measured(i)]
    if args.per_task:
        seen: Counter[str] = Counter()
        items = [i for i in items if (seen.update([i.task]) or seen[i.task]) <= args.per_task]
    prompts = []
    for item in items:
        audios = [load_audio(args.data / clip) for clip in item.clips]
        prompts.append(Prompt.of(item, "", audios, [args.data / clip for clip in item.clips]))
    print(f"{len(prompts)} items the DSP baseline measures in {args.data}: {dict(Counter(i.task for i in items))}")

    baselines.dsp_answer(prompts[0])  # compile the decoder (numba) before timing
    baselines._F0_CACHE.clear()
    t0 = time.perf_counter()
    now = [_answer(p) for p in prompts]
    fast = time.perf_counter() - t0

    measure = baselines._median_f0
    baselines._median_f0 = _reference_median_f0
    try:
        t0 = time.perf_counter()
        before = [_answer(p) for p in prompts]
        reference = time.perf_counter() - t0
    finally:
        baselines._median_f0 = measure

    unexplained = 0
    for item, old, new in zip(items, before, now, strict=True):
        if old != new:
            why = EXPLAINED if old == "error: no voiced frames" and new == baselines.CANNOT_TELL else "UNEXPLAINED"
            unexplained += why == "UNEXPLAINED"
            print(f"  {item.uid}: {old!r} -> {new!r}  [{why}]")
    same = sum(a == b for a, b in zip(before, now, strict=True))
    print(f"identical answers: {same} of {len(items)}; unexplained differences: {unexplained}")
    print(f"reference (librosa.pyin each call): {reference:.1f} s; now: {fast:.1f} s; {reference / fast:.1f}x faster")
    print("(wall-clock seconds on this machine as it is: other processes share its cores)")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
