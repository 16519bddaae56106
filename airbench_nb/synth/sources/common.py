"""Building blocks of the tiered sound sources: tones with harmonics, gates, damped modes, resonant noise."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.signal import istft, stft

from airbench_nb.synth.noise import coloured_noise

MAX_PARTIAL_FRACTION = 0.45
"""Partials above this fraction of the sample rate are left out (they would sit too close to Nyquist)."""
RAMP_S = 0.005
"""Raised-cosine fade, in seconds, at both ends of every clip and of every gated tone segment."""
PEAK_RANGE = (0.3, 0.8)
"""Range of the clip's peak amplitude (linear, full scale = 1), drawn per seed: the level varies, never clips."""
BACKGROUND_DB_RANGE = (40.0, 50.0)
"""Range, in dB below the clip's peak, of the RMS of the pink background noise added to every clip."""

Draw = dict[str, float]
"""The physical parameters one clip was drawn with (name → value; seconds, Hz, counts)."""


def n_samples(duration_s: float, sr: int) -> int:
    """Samples in ``duration_s`` seconds at ``sr`` Hz."""
    return int(round(duration_s * sr))


def harmonic_tone(freq_hz: np.ndarray, sr: int, amps: Sequence[float] = (1.0,)) -> np.ndarray:
    """A tone following the instantaneous frequency ``freq_hz`` (one value per sample).

    Harmonic ``k`` (from 1) has amplitude ``amps[k - 1]``; harmonics above :data:`MAX_PARTIAL_FRACTION` of ``sr``
    are left out.
    """
    phase = 2 * np.pi * np.cumsum(freq_hz) / sr
    top = float(np.max(freq_hz))
    out = np.zeros(freq_hz.size)
    for k, amp in enumerate(amps, start=1):
        if amp and k * top < MAX_PARTIAL_FRACTION * sr:
            out += amp * np.sin(k * phase)
    return out


def gate(n: int, sr: int, segments: Sequence[tuple[float, float]], ramp_s: float = RAMP_S) -> np.ndarray:
    """An on/off envelope of ``n`` samples: 1 inside each ``(start_s, stop_s)`` segment, raised-cosine ramps."""
    env = np.zeros(n)
    r = max(1, int(round(ramp_s * sr)))
    fade = 0.5 - 0.5 * np.cos(np.pi * np.arange(r) / r)
    for start_s, stop_s in segments:
        a, b = max(0, int(round(start_s * sr))), min(n, int(round(stop_s * sr)))
        if b - a < 2 * r:
            continue
        seg = np.ones(b - a)
        seg[:r] = fade
        seg[-r:] = fade[::-1]
        env[a:b] = np.maximum(env[a:b], seg)
    return env


def damped_partials(
    n: int, sr: int, freqs_hz: Sequence[float], amps: Sequence[float], t60_s: Sequence[float]
) -> np.ndarray:
    """A struck body: sinusoids at ``freqs_hz`` starting at ``amps`` and decaying by 60 dB in ``t60_s`` seconds."""
    t = np.arange(n) / sr
    out = np.zeros(n)
    for f, a, t60 in zip(freqs_hz, amps, t60_s, strict=True):
        if f < MAX_PARTIAL_FRACTION * sr:
            out += a * np.exp(-np.log(1000.0) * t / t60) * np.sin(2 * np.pi * f * t)
    return out


def place(out: np.ndarray, sound: np.ndarray, start_s: float, sr: int, gain: float = 1.0) -> None:
    """Add ``sound`` times ``gain`` into ``out`` from ``start_s`` seconds on (cut at the end of ``out``)."""
    a = int(round(start_s * sr))
    if a >= out.size:
        return
    m = min(sound.size, out.size - a)
    out[a : a + m] += gain * sound[:m]


def resonant_noise(
    n: int,
    sr: int,
    rng: np.random.Generator,
    centre_hz: np.ndarray | float,
    width_oct: float,
    floor: float = 0.05,
) -> np.ndarray:
    """White noise shaped by a resonance.

    The gain is a Gaussian bump ``width_oct`` octaves wide (standard deviation) on a ``floor``, centred on
    ``centre_hz`` (a constant, or one value per sample for a moving resonance); nothing below 40 Hz is kept.
    """
    nper = 512
    f, t, spec = stft(rng.standard_normal(n), fs=sr, nperseg=nper)
    fc = np.interp(t, np.arange(n) / sr, np.broadcast_to(np.asarray(centre_hz, dtype=np.float64), (n,)))
    logf = np.log2(np.maximum(f, 1.0))[:, None]
    gain = floor + np.exp(-0.5 * ((logf - np.log2(fc)[None, :]) / width_oct) ** 2)
    gain[f < 40.0] = 0.0
    _, y = istft(spec * gain, fs=sr, nperseg=nper)
    return y[:n] if y.size >= n else np.pad(y, (0, n - y.size))


def finish(x: np.ndarray, rng: np.random.Generator, sr: int) -> tuple[np.ndarray, Draw]:
    """The clip as delivered: pink background noise 40-50 dB below its peak, 5 ms fades, a peak of 0.3-0.8.

    Returns:
        ``(samples, draw)``: float32 samples, and the drawn ``peak`` and ``background_db``.
    """
    peak = float(rng.uniform(*PEAK_RANGE))
    background_db = float(rng.uniform(*BACKGROUND_DB_RANGE))
    y = x / np.max(np.abs(x))
    y = y + coloured_noise("pink", y.size, rng, rms=10 ** (-background_db / 20), sr=sr)
    r = int(round(RAMP_S * sr))
    fade = 0.5 - 0.5 * np.cos(np.pi * np.arange(r) / r)
    y[:r] *= fade
    y[-r:] *= fade[::-1]
    y *= peak / np.max(np.abs(y))
    return y.astype(np.float32), {"peak": peak, "background_db": background_db}
