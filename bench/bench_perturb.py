"""Time and measured value of every perturbation of the default grid on a 10 s clip (a harmonic tone and noise
bursts), applied and written as the builder would (:func:`airbench_nb.perturb.write_perturbed`).

The first pitch shift includes librosa's one-off warm-up (its lazy imports and compiled kernels); it is timed
separately.

    .venv/bin/python bench/bench_perturb.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from airbench_nb.perturb import DEFAULT_GRID, Perturbation, apply, write_perturbed

SR = 16000


def _clips(seconds: float) -> dict[str, np.ndarray]:
    t = np.arange(round(seconds * SR)) / SR
    tone = sum(0.2 / k * np.sin(2 * np.pi * 220.0 * k * t) for k in range(1, 9))
    rng = np.random.default_rng(7)
    bursts = 0.1 * rng.standard_normal(t.size) * (np.sin(2 * np.pi * 2 * t) > 0)
    return {"tone": np.asarray(tone, dtype=np.float32), "bursts": bursts.astype(np.float32)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="clip length in seconds")
    args = parser.parse_args()
    clips = _clips(args.seconds)
    start = time.perf_counter()
    apply(clips["tone"][:SR], SR, Perturbation("pitch", 1.1))
    print(f"librosa warm-up (first pitch shift of 1 s): {time.perf_counter() - start:.2f} s")
    print(f"{'perturbation':16s} {'clip':7s} {'ms':>7s}  measured value")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in DEFAULT_GRID:
            for name, clip in clips.items():
                start = time.perf_counter()
                record = write_perturbed(clip, SR, spec, Path(tmp) / f"{name}-{spec.tag}.wav", seed=1)
                ms = 1000 * (time.perf_counter() - start)
                print(f"{spec.text:16s} {name:7s} {ms:7.1f}  {record.measured.value:.4g} ({spec.unit})")


if __name__ == "__main__":
    main()
