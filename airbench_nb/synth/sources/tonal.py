"""Tonal sources: sirens (by pitch modulation), alarms and beepers, horns and animal calls (by pitch).

Every function takes a seeded generator and a sample rate and returns ``(samples, draw)``: float64 samples at
any level (:func:`~airbench_nb.synth.sources.common.finish` sets the level and adds the background) and the
physical parameters drawn for this clip.
"""

from __future__ import annotations

import numpy as np

from airbench_nb.synth.sources.common import Draw, gate, harmonic_tone, n_samples

SIREN_AMPS = (1.0, 0.0, 0.3, 0.0, 0.12)
"""Harmonic amplitudes of an electronic siren (odd harmonics: a square-ish horn-loudspeaker tone)."""


def _swept(rng: np.random.Generator, sr: int, rate: float, duration: float, low: float, high: float) -> np.ndarray:
    """A tone whose log frequency sweeps sinusoidally between ``low`` and ``high`` ``rate`` times a second."""
    t = np.arange(n_samples(duration, sr)) / sr
    phase0 = rng.uniform(0, 2 * np.pi)
    freq = low * (high / low) ** (0.5 - 0.5 * np.cos(2 * np.pi * rate * t + phase0))
    return harmonic_tone(freq, sr, SIREN_AMPS)


def _alternating(
    rng: np.random.Generator, sr: int, rate: float, duration: float, low: float, high: float
) -> np.ndarray:
    """Two tones alternating ``rate`` full cycles (low then high) a second, with 15 ms glides between them."""
    t = np.arange(n_samples(duration, sr)) / sr
    phase = (t * rate + rng.uniform(0, 1)) % 1.0
    square = (phase < 0.5).astype(np.float64)
    k = max(1, int(round(0.015 * sr)))
    smooth = np.convolve(np.pad(square, (k, k), mode="edge"), np.ones(k) / k, mode="same")[k:-k]
    freq = low * (high / low) ** smooth
    return harmonic_tone(freq, sr, SIREN_AMPS)


def wail(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Wail siren: a slow sinusoidal sweep, 0.24-0.40 cycles a second, about 600 Hz up to 1.2-1.6 kHz."""
    rate = float(rng.uniform(0.24, 0.40))
    duration = float(min(5.0, max(4.0, 1.2 / rate)))
    low = float(rng.uniform(550, 700))
    high = low * float(rng.uniform(1.9, 2.3))
    return _swept(rng, sr, rate, duration, low, high), {
        "sweep_hz": rate,
        "duration_s": duration,
        "low_hz": low,
        "high_hz": high,
    }


def yelp(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Yelp siren: the same sweep, fast: 3.2-5.0 cycles a second."""
    rate = float(rng.uniform(3.2, 5.0))
    duration = float(rng.uniform(2.5, 4.0))
    low = float(rng.uniform(600, 750))
    high = low * float(rng.uniform(1.9, 2.2))
    return _swept(rng, sr, rate, duration, low, high), {
        "sweep_hz": rate,
        "duration_s": duration,
        "low_hz": low,
        "high_hz": high,
    }


def hi_lo(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Hi-lo siren: two tones about a major third apart, alternating 1.1-1.8 full cycles a second."""
    rate = float(rng.uniform(1.1, 1.8))
    duration = float(rng.uniform(2.5, 4.0))
    low = float(rng.uniform(650, 800))
    high = low * float(rng.uniform(1.2, 1.35))
    return _alternating(rng, sr, rate, duration, low, high), {
        "cycle_hz": rate,
        "duration_s": duration,
        "low_hz": low,
        "high_hz": high,
    }


def two_tone(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Two-tone ("pin-pon") siren: two tones a perfect fourth apart, 0.55-0.75 full cycles a second."""
    rate = float(rng.uniform(0.55, 0.75))
    duration = float(rng.uniform(max(3.5, 2.2 / rate), 5.0))
    low = float(rng.uniform(360, 480))
    return _alternating(rng, sr, rate, duration, low, low * 4 / 3), {
        "cycle_hz": rate,
        "duration_s": duration,
        "low_hz": low,
        "high_hz": low * 4 / 3,
    }


def _beeps(
    sr: int, duration: float, freq: float, segments: list[tuple[float, float]], amps: tuple[float, ...]
) -> np.ndarray:
    n = n_samples(duration, sr)
    return harmonic_tone(np.full(n, freq), sr, amps) * gate(n, sr, segments)


def reversing_beeper(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Reversing beeper: a 1.0-1.3 kHz square-ish tone, on half of every 0.9-1.15 s."""
    freq = float(rng.uniform(1000, 1300))
    period = float(rng.uniform(0.9, 1.15))
    duration = float(rng.uniform(3.0, 5.0))
    start = float(rng.uniform(0.0, 0.4))
    segments = [(s, s + period / 2) for s in np.arange(start, duration, period)]
    return _beeps(sr, duration, freq, segments, (1.0, 0.0, 0.25)), {
        "freq_hz": freq,
        "period_s": period,
        "duration_s": duration,
    }


def microwave_beep(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Microwave or kitchen-timer beeps: groups of 3-4 short beeps (0.12-0.25 s) at 1.8-2.4 kHz."""
    freq = float(rng.uniform(1800, 2400))
    beep = float(rng.uniform(0.12, 0.25))
    count = int(rng.integers(3, 5))
    duration = float(rng.uniform(2.5, 4.0))
    group = 2 * beep * count
    starts = [float(rng.uniform(0.05, 0.3))]
    if starts[0] + 2 * group + 0.6 < duration:
        starts.append(starts[0] + group + float(rng.uniform(0.5, 0.8)))
    segments = [(g + 2 * beep * i, g + 2 * beep * i + beep) for g in starts for i in range(count)]
    return _beeps(sr, duration, freq, segments, (1.0, 0.1)), {
        "freq_hz": freq,
        "beep_s": beep,
        "beeps": count,
        "duration_s": duration,
    }


def smoke_alarm(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Smoke alarm: a piezo tone at 2.95-3.35 kHz in the T3 pattern (three 0.5 s beeps 0.5 s apart, 1.5 s off)."""
    freq = float(rng.uniform(2950, 3350))
    unit = float(rng.uniform(0.45, 0.55))
    duration = float(rng.uniform(4.0, 5.0))
    t, segments = float(rng.uniform(0.0, 0.3)), []
    while t < duration:
        segments += [(t + 2 * unit * i, t + 2 * unit * i + unit) for i in range(3)]
        t += 6 * unit + 3 * unit
    return _beeps(sr, duration, freq, segments, (1.0,)), {"freq_hz": freq, "unit_s": unit, "duration_s": duration}


def _blasts(
    sr: int, duration: float, freqs: list[float], amps: tuple[float, ...], segments: list[tuple[float, float]]
) -> np.ndarray:
    n = n_samples(duration, sr)
    tone = sum(harmonic_tone(np.full(n, f), sr, amps) for f in freqs)
    return tone * gate(n, sr, segments, ramp_s=0.03)


def ship_horn(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Ship's horn: one long blast (2-3.5 s) of a reedy tone at 65-120 Hz."""
    freq = float(rng.uniform(65, 120))
    blast = float(rng.uniform(2.0, 3.5))
    duration = float(rng.uniform(blast + 0.5, 5.0))
    start = float(rng.uniform(0.05, duration - blast - 0.1))
    amps = tuple(1.0 / k for k in range(1, 25))
    return _blasts(sr, duration, [freq], amps, [(start, start + blast)]), {"freq_hz": freq, "blast_s": blast}


def truck_air_horn(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Truck air horn: a major chord of three trumpets, the lowest at 170-280 Hz, in 1-2 blasts of 0.8-1.5 s."""
    low = float(rng.uniform(170, 280))
    blasts = int(rng.integers(1, 3))
    length = float(rng.uniform(0.8, 1.5))
    gap = float(rng.uniform(0.3, 0.6))
    start = float(rng.uniform(0.05, 0.3))
    segments = [(start + i * (length + gap), start + i * (length + gap) + length) for i in range(blasts)]
    duration = float(max(2.0, segments[-1][1] + rng.uniform(0.3, 0.8)))
    amps = tuple(1.0 / k**1.5 for k in range(1, 10))
    return _blasts(sr, duration, [low, low * 1.26, low * 1.5], amps, segments), {"low_hz": low, "blasts": blasts}


def car_horn(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Car horn: two buzzy tones a major third apart, the lower at 360-540 Hz, in 1-3 honks of 0.25-0.8 s."""
    low = float(rng.uniform(360, 540))
    honks = int(rng.integers(1, 4))
    start, segments = float(rng.uniform(0.05, 0.3)), []
    for _ in range(honks):
        length = float(rng.uniform(0.25, 0.8))
        segments.append((start, start + length))
        start += length + float(rng.uniform(0.15, 0.4))
    duration = float(max(2.0, start + 0.3))
    amps = tuple(1.0 / k for k in range(1, 16))
    return _blasts(sr, duration, [low, low * 1.26], amps, segments), {"low_hz": low, "honks": honks}


def cow_moo(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Cow's moo: a 1.2-2.5 s harmonic call at 100-170 Hz that rises and falls a little, with breath noise."""
    f0 = float(rng.uniform(100, 170))
    call = float(rng.uniform(1.2, 2.5))
    duration = float(rng.uniform(max(2.5, call + 0.4), 4.0))
    start = float(rng.uniform(0.1, duration - call - 0.1))
    n = n_samples(duration, sr)
    t = np.arange(n) / sr
    u = np.clip((t - start) / call, 0, 1)
    freq = f0 * (1 + 0.12 * np.sin(np.pi * u) - 0.05 * u)
    tone = harmonic_tone(freq, sr, tuple(1.0 / k**1.3 for k in range(1, 30)))
    tone += 0.05 * rng.standard_normal(n)
    return tone * gate(n, sr, [(start, start + call)], ramp_s=0.12), {"f0_hz": f0, "call_s": call}


def dog_bark(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Dog's barks: 2-4 short (0.1-0.2 s) harmonic bursts at 350-650 Hz whose pitch falls, with a noisy edge."""
    f0 = float(rng.uniform(350, 650))
    barks = int(rng.integers(2, 5))
    start, segments = float(rng.uniform(0.05, 0.3)), []
    for _ in range(barks):
        length = float(rng.uniform(0.1, 0.2))
        segments.append((start, start + length))
        start += length + float(rng.uniform(0.25, 0.5))
    duration = float(max(2.0, start + 0.2))
    n = n_samples(duration, sr)
    t = np.arange(n) / sr
    freq = np.full(n, f0)
    for a, b in segments:
        inside = (t >= a) & (t < b)
        freq[inside] = f0 * (1.15 - 0.3 * (t[inside] - a) / (b - a))
    tone = harmonic_tone(freq, sr, tuple(1.0 / k for k in range(1, 12))) + 0.15 * rng.standard_normal(n)
    return tone * gate(n, sr, segments, ramp_s=0.01), {"f0_hz": f0, "barks": barks}


def bird_chirp(rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """Bird's chirps: 6-12 whistled sweeps of 40-90 ms, centred at 3.2-5.0 kHz, in one or two phrases."""
    centre = float(rng.uniform(3200, 5000))
    chirps = int(rng.integers(6, 13))
    duration = float(rng.uniform(2.0, 3.5))
    n = n_samples(duration, sr)
    out = np.zeros(n)
    t0 = float(rng.uniform(0.05, 0.3))
    for i in range(chirps):
        length = float(rng.uniform(0.04, 0.09))
        if t0 + length >= duration - 0.05:
            break
        m = n_samples(length, sr)
        u = np.arange(m) / m
        direction = 1 if rng.uniform() < 0.5 else -1
        freq = centre * (1 + direction * 0.15 * (u - 0.5) * 2) * float(rng.uniform(0.97, 1.03))
        a = n_samples(t0, sr)
        out[a : a + m] += harmonic_tone(freq, sr, (1.0,)) * np.sin(np.pi * u) ** 2
        t0 += length + float(rng.uniform(0.05, 0.15)) + (0.5 if i == chirps // 2 else 0.0)
    return out, {"centre_hz": centre, "chirps": chirps}
