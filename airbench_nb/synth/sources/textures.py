"""Noisy and pulsed sources: engines (by firing rate) and water (by sparseness and resonance glide).

Every function takes a seeded generator and a sample rate and returns ``(samples, draw)`` (see
:mod:`airbench_nb.synth.sources.tonal`).
"""

from __future__ import annotations

import numpy as np
from scipy.signal import butter, sosfilt

from airbench_nb.synth.sources.common import Draw, damped_partials, n_samples, place, resonant_noise


def _engine(
    rng: np.random.Generator,
    sr: int,
    rate: float,
    duration: float,
    resonance_hz: float,
    clatter: float,
    noise: float,
) -> np.ndarray:
    """An idling engine: one exhaust pulse per firing.

    Each pulse is a damped resonance (down 20 dB after a quarter period), with 2% period jitter and +-20% pulse
    level; ``clatter`` scales 2-6 kHz noise ticks at each firing (diesel knock) and ``noise`` a share of steady
    mechanical noise.
    """
    n = n_samples(duration, sr)
    out = np.zeros(n)
    period = 1.0 / rate
    length = n_samples(min(0.25, 3 * period), sr)
    t60 = 0.75 * period  # -60 dB over three quarters of a period: about a quarter period to -20 dB
    tick_band = butter(2, [2000.0, min(6000.0, 0.45 * sr)], "bandpass", fs=sr, output="sos")
    tick_len = n_samples(0.006, sr)
    t = float(rng.uniform(0.0, period))
    while t < duration:
        pulse = damped_partials(length, sr, [resonance_hz, 2.1 * resonance_hz], [1.0, 0.4], [t60, 0.6 * t60])
        pulse[: n_samples(0.002, sr)] += rng.uniform(-0.5, 0.5, n_samples(0.002, sr))
        place(out, pulse, t, sr, gain=float(rng.uniform(0.8, 1.2)))
        if clatter:
            place(out, sosfilt(tick_band, rng.standard_normal(tick_len)), t + 0.003, sr, gain=clatter)
        t += period * float(rng.uniform(0.98, 1.02))
    out /= np.max(np.abs(out))
    return out + noise * rng.standard_normal(n) * np.sqrt(np.mean(out**2))


def motorcycle(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Motorcycle at idle: 8-13.5 exhaust pulses a second (a single or parallel twin at 1000-1600 rpm)."""
    rate = float(rng.uniform(8.0, 13.5))
    resonance = float(rng.uniform(120, 220))
    duration = float(rng.uniform(2.5, 4.0))
    return _engine(rng, sr, rate, duration, resonance, 0.0, 0.15), {"firing_hz": rate, "resonance_hz": resonance}


def truck(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Diesel truck at idle: 18.5-25 firings a second (six cylinders at 370-500 rpm), low exhaust, knock."""
    rate = float(rng.uniform(18.5, 25.0))
    resonance = float(rng.uniform(60, 110))
    duration = float(rng.uniform(2.5, 4.0))
    return _engine(rng, sr, rate, duration, resonance, 0.3, 0.15), {"firing_hz": rate, "resonance_hz": resonance}


def car(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Car at idle: 32-46 firings a second (four cylinders at 960-1380 rpm), a smooth exhaust."""
    rate = float(rng.uniform(32.0, 46.0))
    resonance = float(rng.uniform(150, 280))
    duration = float(rng.uniform(2.5, 4.0))
    return _engine(rng, sr, rate, duration, resonance, 0.0, 0.2), {"firing_hz": rate, "resonance_hz": resonance}


def drip(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Dripping water: 1.2-3.5 drops a second at irregular times.

    Each drop is a click and a bubble ringing at 0.7-2.2 kHz whose pitch rises 20-60% as it decays (20-40 ms).
    """
    rate = float(rng.uniform(1.2, 3.5))
    duration = float(rng.uniform(2.5, 4.0))
    n = n_samples(duration, sr)
    out = np.zeros(n)
    t, drops = float(rng.uniform(0.05, 0.4)), 0
    while t < duration - 0.1:
        m = n_samples(0.08, sr)
        u = np.arange(m) / sr
        f0 = float(rng.uniform(700, 2200))
        freq = f0 * (1 + float(rng.uniform(0.2, 0.6)) * np.minimum(u / 0.04, 1.0))
        bubble = np.sin(2 * np.pi * np.cumsum(freq) / sr) * np.exp(-u / float(rng.uniform(0.007, 0.013)))
        bubble[: n_samples(0.001, sr)] += rng.uniform(-0.3, 0.3, n_samples(0.001, sr))
        place(out, bubble, t, sr, gain=float(rng.uniform(0.6, 1.0)))
        drops += 1
        t += max(0.15, float(rng.exponential(1.0 / rate)))
    return out, {"drop_rate_hz": rate, "drops": drops}


def _bubbling(rng: np.random.Generator, n: int, sr: int, depth: float) -> np.ndarray:
    """A slowly varying gain (random, 4-12 Hz) of relative depth ``depth``: the gurgle of moving water."""
    knots = rng.uniform(1 - depth, 1 + depth, int(n / sr * 10) + 2)
    return np.interp(np.arange(n) / sr * 10, np.arange(knots.size), knots)


def pour(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Water poured into a vessel: continuous splashing whose resonance rises as the vessel fills.

    The resonance (the air column left above the water) starts at 250-500 Hz and rises 0.2-0.45 octaves a second.
    """
    glide = float(rng.uniform(0.2, 0.45))
    start_hz = float(rng.uniform(250, 500))
    duration = float(rng.uniform(3.0, 4.5))
    n = n_samples(duration, sr)
    centre = start_hz * 2 ** (glide * np.arange(n) / sr)
    x = resonant_noise(n, sr, rng, centre, width_oct=0.12, floor=0.04) * _bubbling(rng, n, sr, 0.3)
    return x, {"glide_oct_per_s": glide, "start_hz": start_hz}


def stream(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """A stream or running tap: steady broadband flow noise with a fixed broad resonance at 400-1200 Hz."""
    centre = float(rng.uniform(400, 1200))
    duration = float(rng.uniform(3.0, 4.5))
    n = n_samples(duration, sr)
    x = resonant_noise(n, sr, rng, centre, width_oct=0.35, floor=0.08) * _bubbling(rng, n, sr, 0.2)
    return x, {"centre_hz": centre}
