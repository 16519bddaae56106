"""Struck sources: bells (by their lowest partial) and repeated impacts (by their rate).

Every function takes a seeded generator and a sample rate and returns ``(samples, draw)`` (see
:mod:`airbench_nb.synth.sources.tonal`).
"""

from __future__ import annotations

import numpy as np
from scipy.signal import butter, sosfilt

from airbench_nb.synth.sounds import click, knock
from airbench_nb.synth.sources.common import Draw, damped_partials, n_samples, place

CHURCH_BELL_PARTIALS: tuple[tuple[float, float, float], ...] = (
    (0.5, 0.6, 6.0),  # hum
    (1.0, 0.8, 4.5),  # prime (strike note)
    (1.2, 0.7, 3.5),  # tierce: a minor third above the prime
    (1.5, 0.35, 3.0),  # quint
    (2.0, 1.0, 2.5),  # nominal
    (2.5, 0.3, 1.5),
    (3.0, 0.2, 1.2),
)
"""``(ratio to the prime, amplitude, T60 in s)`` of a tuned church bell's partials (the minor-third bell)."""
HAND_BELL_PARTIALS: tuple[tuple[float, float, float], ...] = ((1.0, 1.0, 2.5), (3.0, 0.6, 1.5), (5.1, 0.2, 0.8))
"""``(ratio to the fundamental, amplitude, T60 in s)`` of a tuned hand bell (fundamental and twelfth)."""
BICYCLE_BELL_PARTIALS: tuple[tuple[float, float, float], ...] = ((1.0, 1.0, 0.8), (1.59, 0.6, 0.6), (2.14, 0.4, 0.5))
"""``(ratio to the lowest, amplitude, T60 in s)`` of a bicycle bell's dome (inharmonic plate modes)."""


def _bell(sr: int, base: float, partials: tuple[tuple[float, float, float], ...], length_s: float) -> np.ndarray:
    ratios, amps, t60 = zip(*partials, strict=True)
    return damped_partials(n_samples(length_s, sr), sr, [base * r for r in ratios], amps, t60)


def church_bell(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Church bell: one or two tolls of a minor-third bell whose hum (lowest partial) is at 140-250 Hz."""
    hum = float(rng.uniform(140, 250))
    duration = float(rng.uniform(4.0, 5.0))
    out = np.zeros(n_samples(duration, sr))
    strike = _bell(sr, 2 * hum, CHURCH_BELL_PARTIALS, duration)
    first = float(rng.uniform(0.05, 0.3))
    place(out, strike, first, sr)
    tolls = 1
    second = first + float(rng.uniform(2.0, 2.5))
    if second < duration - 1.0:
        place(out, strike, second, sr, gain=float(rng.uniform(0.8, 1.0)))
        tolls = 2
    return out, {"hum_hz": hum, "tolls": tolls, "duration_s": duration}


def hand_bell(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Hand bell: 2-4 strikes, 0.5-0.9 s apart, of a tuned bell at 520-1050 Hz (with its twelfth)."""
    f0 = float(rng.uniform(520, 1050))
    strikes = int(rng.integers(2, 5))
    gap = float(rng.uniform(0.5, 0.9))
    start = float(rng.uniform(0.05, 0.3))
    duration = float(max(2.5, start + strikes * gap + 1.0))
    out = np.zeros(n_samples(duration, sr))
    strike = _bell(sr, f0, HAND_BELL_PARTIALS, 2.5)
    for i in range(strikes):
        place(out, strike, start + i * gap, sr, gain=float(rng.uniform(0.7, 1.0)))
    return out, {"f0_hz": f0, "strikes": strikes, "gap_s": gap}


def bicycle_bell(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Bicycle bell: 1-2 trills of 5-8 strikes (10-14 a second) on a small dome, lowest mode at 2.0-3.3 kHz."""
    f0 = float(rng.uniform(2000, 3300))
    rate = float(rng.uniform(10, 14))
    trills = int(rng.integers(1, 3))
    duration = float(rng.uniform(2.0, 3.5))
    out = np.zeros(n_samples(duration, sr))
    strike = _bell(sr, f0, BICYCLE_BELL_PARTIALS, 0.8)
    t = float(rng.uniform(0.05, 0.2))
    for _ in range(trills):
        for _ in range(int(rng.integers(5, 9))):
            place(out, strike, t, sr, gain=float(rng.uniform(0.6, 1.0)))
            t += 1.0 / rate
        t += float(rng.uniform(0.4, 0.7))
    return out, {"f0_hz": f0, "strike_hz": rate, "trills": trills}


def door_knock(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Knocking on a door: 1-2 bursts of 3-4 knocks, 4.2-7.5 knocks a second, on a wooden panel at 150-260 Hz."""
    rate = float(rng.uniform(4.2, 7.5))
    panel = float(rng.uniform(150, 260))
    bursts = int(rng.integers(1, 3))
    duration = float(rng.uniform(2.0, 3.5))
    out = np.zeros(n_samples(duration, sr))
    t = float(rng.uniform(0.1, 0.4))
    for _ in range(bursts):
        for _ in range(int(rng.integers(3, 5))):
            hit = knock(float(rng.uniform(0.12, 0.16)), panel * float(rng.uniform(0.98, 1.02)), rng=rng, sr=sr)
            place(out, hit.astype(np.float64), t, sr, gain=float(rng.uniform(0.7, 1.0)))
            t += (1.0 / rate) * float(rng.uniform(0.97, 1.03))
        t += float(rng.uniform(0.5, 0.9))
    return out, {"knock_hz": rate, "panel_hz": panel, "bursts": bursts}


def footsteps(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Footsteps: walking at 1.5-2.2 steps a second, each a low heel thud (70-120 Hz) then a softer toe scuff."""
    rate = float(rng.uniform(1.5, 2.2))
    duration = float(rng.uniform(3.0, 5.0))
    n = n_samples(duration, sr)
    out = np.zeros(n)
    thud_hz = float(rng.uniform(70, 120))
    scuff_band = butter(2, [600.0, 3000.0], "bandpass", fs=sr, output="sos")
    m = n_samples(0.12, sr)
    decay = np.exp(-np.arange(m) / (0.02 * sr))
    t = float(rng.uniform(0.05, 0.3))
    step = 0
    while t < duration - 0.15:
        heel = damped_partials(m, sr, [thud_hz, 2.7 * thud_hz], [1.0, 0.4], [0.08, 0.05])
        heel += 0.6 * sosfilt(scuff_band, rng.standard_normal(m)) * decay
        level = float(rng.uniform(0.8, 1.0)) * (1.0 if step % 2 == 0 else 0.8)
        place(out, heel, t, sr, gain=level)
        toe = 0.4 * sosfilt(scuff_band, rng.standard_normal(m)) * decay
        place(out, toe, t + float(rng.uniform(0.02, 0.035)), sr, gain=level)
        t += (1.0 / rate) * float(rng.uniform(0.97, 1.03))
        step += 1
    return out, {"step_hz": rate, "thud_hz": thud_hz, "steps": step}


def clock_tick(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """A ticking clock: a sharp click (tick and tock differ in brightness, 2-4 kHz) 0.95-1.05 times a second."""
    rate = float(rng.uniform(0.95, 1.05))
    duration = float(rng.uniform(3.5, 5.0))
    out = np.zeros(n_samples(duration, sr))
    tick_hz = float(rng.uniform(2500, 4000))
    t, i = float(rng.uniform(0.05, 0.5)), 0
    while t < duration - 0.05:
        hz = tick_hz if i % 2 == 0 else 0.7 * tick_hz
        place(out, click(0.012, hz, sr=sr).astype(np.float64), t, sr, gain=1.0 if i % 2 == 0 else 0.8)
        t += 1.0 / rate
        i += 1
    return out, {"tick_hz": rate, "click_hz": tick_hz, "ticks": i}
