"""Coloured noise: white, pink, brown (red) and blue, by spectral shaping of seeded white noise."""

from __future__ import annotations

import logging

import numpy as np

logger = logging.getLogger(__name__)

NOISE_EXPONENTS: dict[str, float] = {"white": 0.0, "pink": -1.0, "brown": -2.0, "blue": 1.0}
"""Power-spectrum exponent of each colour: power ∝ f**exponent."""


def coloured_noise(color: str, n_samples: int, rng: np.random.Generator, rms: float = 0.1) -> np.ndarray:
    """Noise whose power spectrum follows ``f**exponent`` for the named colour, scaled to a given RMS.

    Args:
        color: ``white``, ``pink``, ``brown`` or ``blue``.
        n_samples: Length in samples.
        rng: Seeded generator (same seed, same noise).
        rms: RMS level of the result (linear, full scale = 1).

    Returns:
        A float32 array of ``n_samples`` samples.

    Raises:
        ValueError: For an unknown colour or a negative length.
    """
    if color not in NOISE_EXPONENTS:
        raise ValueError(f"unknown noise colour {color!r}; choose one of {', '.join(NOISE_EXPONENTS)}")
    if n_samples < 0:
        raise ValueError(f"n_samples must be >= 0, got {n_samples}")
    if n_samples == 0:
        return np.zeros(0, dtype=np.float32)
    spectrum = np.fft.rfft(rng.standard_normal(n_samples))
    freqs = np.fft.rfftfreq(n_samples)
    freqs[0] = freqs[1] if freqs.size > 1 else 1.0
    spectrum *= freqs ** (NOISE_EXPONENTS[color] / 2.0)
    spectrum[0] = 0.0
    noise = np.fft.irfft(spectrum, n=n_samples)
    level = np.sqrt(np.mean(noise**2))
    if level > 0:
        noise *= rms / level
    return noise.astype(np.float32)
