"""Coloured noise: white, pink, brown (red) and blue, by spectral shaping of seeded white noise.

The noise is band-limited to the audible band: components below :data:`LOW_CUT_HZ` are removed before the
level is set. Without that, the ``f**-2`` spectrum of brown noise puts 97-99.5% of its power below 20 Hz (and
pink noise 38-45%, growing with the clip length, since the lowest FFT bin is ``1 / duration`` Hz), so its RMS
and any SNR computed from it would describe inaudible rumble rather than the noise a listener hears.
"""

from __future__ import annotations

import logging

import numpy as np

logger = logging.getLogger(__name__)

NOISE_EXPONENTS: dict[str, float] = {"white": 0.0, "pink": -1.0, "brown": -2.0, "blue": 1.0}
"""Power-spectrum exponent of each colour: power ∝ f**exponent."""
LOW_CUT_HZ = 20.0
"""Frequency in Hz below which the noise has no energy (the bottom of the audible band)."""
SR = 16000
"""Default sample rate in Hz."""


def coloured_noise(
    color: str,
    n_samples: int,
    rng: np.random.Generator,
    rms: float = 0.1,
    sr: int = SR,
    low_cut_hz: float = LOW_CUT_HZ,
) -> np.ndarray:
    """Noise whose power spectrum follows ``f**exponent`` for the named colour, scaled to a given RMS.

    Args:
        color: ``white``, ``pink``, ``brown`` or ``blue``.
        n_samples: Length in samples.
        rng: Seeded generator (same seed, same noise).
        rms: RMS level of the result (linear, full scale = 1), all of it above ``low_cut_hz``.
        sr: Sample rate in Hz (only used to place ``low_cut_hz``).
        low_cut_hz: Components below this frequency in Hz are removed (0 keeps everything above DC).

    Returns:
        A float32 array of ``n_samples`` samples.

    Raises:
        ValueError: For an unknown colour, a negative length or a cut-off outside ``[0, sr / 2)``.
    """
    if color not in NOISE_EXPONENTS:
        raise ValueError(f"unknown noise colour {color!r}; choose one of {', '.join(NOISE_EXPONENTS)}")
    if n_samples < 0:
        raise ValueError(f"n_samples must be >= 0, got {n_samples}")
    if not 0 <= low_cut_hz < sr / 2:
        raise ValueError(f"low_cut_hz must be in [0, {sr / 2:g}) Hz, got {low_cut_hz!r}")
    if n_samples == 0:
        return np.zeros(0, dtype=np.float32)
    spectrum = np.fft.rfft(rng.standard_normal(n_samples))
    freqs = np.fft.rfftfreq(n_samples, d=1.0 / sr)
    keep = (freqs > 0) & (freqs >= low_cut_hz)
    spectrum[~keep] = 0.0
    spectrum[keep] *= freqs[keep] ** (NOISE_EXPONENTS[color] / 2.0)
    noise = np.fft.irfft(spectrum, n=n_samples)
    level = np.sqrt(np.mean(noise**2))
    if level > 0:
        noise *= rms / level
    return noise.astype(np.float32)
