"""Mixes per second for 10 s clip pairs, against the floor of a bare numpy add of the same arrays.

The mixer measures loudness (ITU-R BS.1770 via pyloudnorm) four times per mix (both sources to normalise them,
both scaled components for Louder), finds onsets, protects against clipping and measures the SNR; this prints
what that costs over simply adding two placed arrays.

    .venv/bin/python bench/bench_mix.py [--pairs 20] [--seconds 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from airbench_nb.audio import TARGET_SR, loudness
from airbench_nb.mix import mix


def _pairs(n: int, seconds: float, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray, float]]:
    rng = np.random.default_rng(seed)
    size = int(seconds * TARGET_SR)
    t = np.arange(size) / TARGET_SR
    pairs = []
    for _ in range(n):
        f0 = rng.uniform(90, 250)
        speech_like = sum(np.sin(2 * np.pi * f0 * h * t) / h for h in range(1, 6)) * (0.6 + 0.4 * np.sin(8 * t))
        noise = rng.standard_normal(size)
        pairs.append(((0.2 * speech_like).astype(np.float32), (0.05 * noise).astype(np.float32), rng.uniform(-1, 1)))
    return pairs


def _bare_add(a: np.ndarray, b: np.ndarray, offset_s: float) -> np.ndarray:
    shift = round(offset_s * TARGET_SR)
    start_a, start_b = max(0, -shift), max(0, shift)
    out = np.zeros(max(start_a + a.size, start_b + b.size), dtype=np.float32)
    out[start_a : start_a + a.size] += a
    out[start_b : start_b + b.size] += b
    return out


def _rate(fn, pairs, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for a, b, offset in pairs:
            fn(a, b, offset)
        best = min(best, time.perf_counter() - t0)
    return len(pairs) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20, help="clip pairs per timing run")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each clip")
    parser.add_argument("--repeats", type=int, default=3, help="timing runs (the best is kept)")
    args = parser.parse_args()
    pairs = _pairs(args.pairs, args.seconds)
    mix(*pairs[0][:2], snr_db=0.0)  # warm up imports and caches

    floor = _rate(_bare_add, pairs, args.repeats)
    snr = _rate(lambda a, b, o: mix(a, b, snr_db=0.0, offset_s=o), pairs, args.repeats)
    gains = _rate(lambda a, b, o: mix(a, b, gain_a_db=3.0, gain_b_db=-3.0, offset_s=o), pairs, args.repeats)
    meter = _rate(lambda a, b, o: loudness(a), pairs, args.repeats)

    print(f"{args.pairs} pairs of {args.seconds:g} s clips at {TARGET_SR} Hz (best of {args.repeats} runs)")
    print(f"{'what':<38}{'per second':>12}{'ms each':>10}{'x floor':>10}")
    for name, rate in (
        ("bare numpy add (floor)", floor),
        ("mix, snr_db=0", snr),
        ("mix, gains +3/-3 dB", gains),
        ("one BS.1770 loudness (pyloudnorm)", meter),
    ):
        print(f"{name:<38}{rate:>12.1f}{1000 / rate:>10.3f}{floor / rate:>10.1f}")
    print(f"loudness measurement share of a mix: {4 / meter / (1 / snr):.0%} (4 measurements per mix)")


if __name__ == "__main__":
    main()
