"""Measurements of the defining properties of the tiered sound sources, made on the audio alone.

Each function takes mono samples and their sample rate and returns one number; none of them knows how the clip
was made. :data:`PROPERTY_MEASURES` maps each property named in ``data_manifests/tiered/hierarchy.json`` to its
measurer, and :func:`measure` measures one by name. The methods:

- ``pitch_modulation_hz``: the log frequency of the strongest spectral peak in 32 ms frames (every 10 ms) is a
  pitch contour; the rate is the frequency of the sinusoid (with an offset) that best fits it by least squares,
  searched on a 0.01 Hz grid over 0.1-8 Hz, then on a 0.001 Hz grid around the best. A square
  contour (two alternating tones) fits at its fundamental.
- ``lowest_partial_hz``: the lowest peak within 20 dB of the strongest in the mean power spectrum of the 256 ms
  frames within 20 dB of the loudest (peaks closer than 8 Hz to a stronger one are merged).
- ``dominant_hz``: the median, over frames within 20 dB of the loudest, of the frequency of the strongest
  spectral peak in 64 ms frames.
- ``firing_rate_hz``: the amplitude envelope (rectified, low-passed at 120 Hz, sampled at 1 kHz) is
  autocorrelated; the rate is one over the shortest lag (1/60-1/5 s) whose peak reaches 80% of the highest.
- ``quiet_fraction``: the share of 20 ms frames whose RMS is more than 25 dB below the loudest frame's.
- ``glide_oct_per_s``: the frequency of the peak of the smoothed spectrum (1/12-octave Gaussian on a
  log-frequency grid, 100-6000 Hz) in 96 ms blocks; the glide is the Theil-Sen slope of its log2 over time.
- ``impact_rate_hz``: onsets are frames whose level rises 10 dB within 20 ms to within 30 dB of the loudest
  (at least 70 ms apart); the rate is one over the median inter-onset interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import numpy as np
from scipy.signal import butter, find_peaks, sosfiltfilt
from scipy.stats import theilslopes

logger = logging.getLogger(__name__)

SR = 16000
"""Default sample rate in Hz."""


def _checked(x: np.ndarray, sr: int, min_s: float = 0.2) -> np.ndarray:
    """``x`` as float64 mono, refusing what cannot be measured."""
    y = np.asarray(x, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"audio must be mono (one dimension), got shape {y.shape}")
    if not isinstance(sr, int | np.integer) or sr < 8000:
        raise ValueError(f"sr must be an integer sample rate of at least 8000 Hz, got {sr!r}")
    if y.size < min_s * sr:
        raise ValueError(f"audio is {y.size / sr:.3f} s long; at least {min_s} s is needed to measure it")
    if not np.all(np.isfinite(y)):
        raise ValueError("audio holds NaN or infinite samples")
    if not np.any(y):
        raise ValueError("audio is silent: nothing to measure")
    return y


def _frames(x: np.ndarray, frame: int, hop: int) -> np.ndarray:
    """Frames of ``frame`` samples every ``hop`` samples, as rows (the tail that does not fill a frame is dropped)."""
    n = 1 + (x.size - frame) // hop
    idx = np.arange(frame)[None, :] + hop * np.arange(n)[:, None]
    return x[idx]


def _peak_bins(mag: np.ndarray) -> np.ndarray:
    """Fractional bin of the strongest peak of each row of ``mag``, refined by a parabola through log magnitudes."""
    k = np.clip(np.argmax(mag, axis=1), 1, mag.shape[1] - 2)
    rows = np.arange(mag.shape[0])
    a, b, c = (np.log(mag[rows, k + d] + 1e-12) for d in (-1, 0, 1))
    denom = a - 2 * b + c
    offset = np.where(np.abs(denom) > 1e-12, 0.5 * (a - c) / np.where(denom == 0, 1, denom), 0.0)
    return k + np.clip(offset, -0.5, 0.5)


def _frame_peaks(
    x: np.ndarray, sr: int, frame_s: float, hop_s: float, floor_db: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(times_s, peak_hz)`` of the strongest peak above 50 Hz in frames within ``floor_db`` of the loudest."""
    frame, hop = int(round(frame_s * sr)), int(round(hop_s * sr))
    frames = _frames(x, frame, hop)
    rms = np.sqrt(np.mean(frames**2, axis=1))
    keep = rms >= rms.max() * 10 ** (-floor_db / 20)
    mag = np.abs(np.fft.rfft(frames[keep] * np.hanning(frame), axis=1))
    low = int(np.ceil(50 * frame / sr))
    mag[:, :low] = 0.0
    times = (np.flatnonzero(keep) * hop + frame / 2) / sr
    return times, _peak_bins(mag) * sr / frame


def pitch_modulation_hz(x: np.ndarray, sr: int = SR) -> float:
    """Cycles per second of the pitch contour (sirens: how fast the pitch sweeps or alternates).

    Args:
        x: Mono samples.
        sr: Sample rate in Hz.

    Returns:
        The rate in Hz (0.1-8) of the sinusoid that best fits the log2 frequency of the strongest spectral peak.
    """
    y = _checked(x, sr, min_s=1.0)
    t, hz = _frame_peaks(y, sr, 0.032, 0.010, floor_db=20.0)
    contour = np.log2(hz)
    contour = contour - contour.mean()
    coarse = np.arange(0.1, 8.0, 0.01)
    best = float(coarse[int(np.argmax(_explained(coarse, t, contour)))])
    fine = np.arange(max(0.1, best - 0.02), best + 0.02, 0.001)
    return float(fine[int(np.argmax(_explained(fine, t, contour)))])


def _explained(grid: np.ndarray, t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Variance of the centred ``y`` explained by a least-squares sinusoid (with offset) at each grid frequency."""
    arg = 2 * np.pi * grid[:, None] * t[None, :]
    c, s = np.cos(arg), np.sin(arg)
    c -= c.mean(axis=1, keepdims=True)
    s -= s.mean(axis=1, keepdims=True)
    cc, ss, cs = (c * c).sum(1) + 1e-9, (s * s).sum(1) + 1e-9, (c * s).sum(1)
    cy, sy = c @ y, s @ y
    det = cc * ss - cs**2
    a = (ss * cy - cs * sy) / det
    b = (cc * sy - cs * cy) / det
    return a * cy + b * sy


def _sounding_spectrum_db(x: np.ndarray, sr: int) -> tuple[np.ndarray, float]:
    """Mean power spectrum (dB) of the 256 ms frames within 20 dB of the loudest, and its bin width in Hz.

    Frames are Hann-windowed, every 64 ms. Leaving out the quiet frames keeps the background's low-frequency
    noise from passing for a partial of a short sound.
    """
    frame = int(round(0.256 * sr))
    y = np.pad(x, (0, max(0, frame - x.size)))
    frames = _frames(y, frame, frame // 4)
    rms = np.sqrt(np.mean(frames**2, axis=1))
    keep = frames[rms >= rms.max() * 0.1]
    power = np.mean(np.abs(np.fft.rfft(keep * np.hanning(frame), axis=1)) ** 2, axis=0)
    return 10 * np.log10(power + power.max() * 1e-12), sr / frame


def _strong_peaks(db: np.ndarray, hz_per_bin: float, within_db: float, min_hz: float) -> np.ndarray:
    """Bins of the spectral peaks at or above ``min_hz`` within ``within_db`` of the strongest of them.

    A peak closer than 8 Hz to a stronger one is dropped. Peaks are local maxima of the whole spectrum, so the
    edge of a low-frequency lobe cut at ``min_hz`` is never taken for one.
    """
    peaks, _ = find_peaks(db, distance=max(1, int(8.0 / hz_per_bin)))
    peaks = peaks[peaks * hz_per_bin >= min_hz]
    if peaks.size == 0:
        return peaks
    return peaks[db[peaks] >= db[peaks].max() - within_db]


def lowest_partial_hz(x: np.ndarray, sr: int = SR, within_db: float = 20.0, min_hz: float = 40.0) -> float:
    """Frequency of the lowest strong partial of the sounding frames (bells, horns: the size of the sounding body).

    Args:
        x: Mono samples.
        sr: Sample rate in Hz.
        within_db: A peak counts when it is at most this many dB below the strongest peak.
        min_hz: Peaks below this frequency are ignored.

    Returns:
        The frequency in Hz, refined by a parabola through the log magnitudes around the peak.
    """
    y = _checked(x, sr)
    db, hz_per_bin = _sounding_spectrum_db(y, sr)
    peaks = _strong_peaks(db, hz_per_bin, within_db, min_hz)
    if peaks.size == 0:
        raise ValueError("no spectral peak found above min_hz")
    k = int(peaks[0])
    a, b, c = db[k - 1], db[k], db[k + 1]
    denom = a - 2 * b + c
    offset = 0.5 * (a - c) / denom if denom != 0 else 0.0
    return float((k + np.clip(offset, -0.5, 0.5)) * hz_per_bin)


def partials_hz(x: np.ndarray, sr: int = SR, within_db: float = 30.0, min_hz: float = 40.0) -> np.ndarray:
    """Frequencies (ascending) of every peak of the sounding frames' spectrum within ``within_db`` of the strongest.

    Args:
        x: Mono samples.
        sr: Sample rate in Hz.
        within_db: A peak counts when it is at most this many dB below the strongest peak.
        min_hz: Peaks below this frequency are ignored.
    """
    y = _checked(x, sr)
    db, hz_per_bin = _sounding_spectrum_db(y, sr)
    return _strong_peaks(db, hz_per_bin, within_db, min_hz) * hz_per_bin


def dominant_hz(x: np.ndarray, sr: int = SR) -> float:
    """Median frequency of the strongest spectral peak over the sounding frames (beepers, animal calls).

    Args:
        x: Mono samples.
        sr: Sample rate in Hz.

    Returns:
        The frequency in Hz.
    """
    y = _checked(x, sr)
    _, hz = _frame_peaks(y, sr, 0.064, 0.016, floor_db=20.0)
    return float(np.median(hz))


def amplitude_envelope(x: np.ndarray, sr: int = SR, cutoff_hz: float = 120.0, rate_hz: int = 1000) -> np.ndarray:
    """The rectified signal low-passed at ``cutoff_hz`` (zero phase) and sampled at ``rate_hz``."""
    y = _checked(x, sr)
    env = sosfiltfilt(butter(4, cutoff_hz, "lowpass", fs=sr, output="sos"), np.abs(y))
    t = np.arange(0, y.size / sr, 1.0 / rate_hz)
    return np.interp(t, np.arange(y.size) / sr, env)


def firing_rate_hz(x: np.ndarray, sr: int = SR, min_hz: float = 5.0, max_hz: float = 60.0) -> float:
    """Pulses per second of the amplitude envelope (engines: the exhaust's firing rate).

    Args:
        x: Mono samples.
        sr: Sample rate in Hz.
        min_hz: Slowest rate searched.
        max_hz: Fastest rate searched.

    Returns:
        One over the shortest autocorrelation lag whose peak reaches 80% of the highest peak in the range.
    """
    env = amplitude_envelope(x, sr)
    env = env - env.mean()
    n = env.size
    spec = np.fft.rfft(env, n=2 * n)
    acf = np.fft.irfft(np.abs(spec) ** 2)[:n]
    acf = acf / (n - np.arange(n)) / (acf[0] / n)  # unbiased, 1 at lag 0
    lo, hi = int(np.floor(1000 / max_hz)), int(np.ceil(1000 / min_hz))
    if hi + 2 >= n:
        raise ValueError(f"clip too short to measure rates down to {min_hz} Hz")
    peaks, _ = find_peaks(acf[: hi + 2])
    peaks = peaks[(peaks >= lo) & (peaks <= hi)]
    if peaks.size == 0:
        raise ValueError("no periodicity found in the amplitude envelope")
    best = acf[peaks].max()
    if not np.isfinite(best) or best <= 0:  # a flat envelope (acf NaN) or no positive correlation in the range
        raise ValueError("no periodicity found in the amplitude envelope")
    k = int(peaks[np.flatnonzero(acf[peaks] >= 0.8 * best)[0]])
    a, b, c = acf[k - 1], acf[k], acf[k + 1]
    denom = a - 2 * b + c
    lag = k + (0.5 * (a - c) / denom if denom != 0 else 0.0)
    return float(1000.0 / lag)


def quiet_fraction(x: np.ndarray, sr: int = SR, below_db: float = 25.0) -> float:
    """Share of 20 ms frames more than ``below_db`` dB below the loudest frame (sparse against continuous).

    Args:
        x: Mono samples.
        sr: Sample rate in Hz.
        below_db: How far below the loudest frame's RMS a frame must be to count as quiet.
    """
    y = _checked(x, sr)
    frame = int(round(0.020 * sr))
    rms = np.sqrt(np.mean(_frames(y, frame, frame) ** 2, axis=1))
    return float(np.mean(rms < rms.max() * 10 ** (-below_db / 20)))


def glide_oct_per_s(x: np.ndarray, sr: int = SR) -> float:
    """Octaves per second by which the main resonance of a noisy sound moves (water: a vessel filling).

    Args:
        x: Mono samples.
        sr: Sample rate in Hz.

    Returns:
        The Theil-Sen slope, in octaves per second, of the log2 frequency of the smoothed spectrum's peak.
    """
    y = _checked(x, sr, min_s=1.0)
    frame = int(round(0.032 * sr))
    power = np.abs(np.fft.rfft(_frames(y, frame, frame) * np.hanning(frame), axis=1)) ** 2
    blocks = power[: power.shape[0] // 3 * 3].reshape(-1, 3, power.shape[1]).mean(axis=1)
    freqs = np.fft.rfftfreq(frame, 1 / sr)
    grid = np.log2(100.0) + np.arange(0, np.log2(min(6000.0, 0.45 * sr) / 100.0), 1 / 48)
    logp = np.log(np.array([np.interp(2**grid, freqs, b) for b in blocks]) + 1e-20)
    kernel = np.exp(-0.5 * (np.arange(-12, 13) / 4.0) ** 2)
    smooth = np.array([np.convolve(row, kernel / kernel.sum(), mode="same") for row in logp])
    level = blocks.sum(axis=1)
    keep = level >= level.max() * 10 ** (-20 / 10)
    peak = grid[np.argmax(smooth, axis=1)][keep]
    times = ((np.arange(blocks.shape[0]) * 3 + 1.5) * frame / sr)[keep]
    if peak.size < 3:
        raise ValueError("fewer than 3 sounding blocks: cannot fit a glide")
    return float(theilslopes(peak, times)[0])


def impact_onsets(x: np.ndarray, sr: int = SR, rise_db: float = 10.0, within_db: float = 30.0) -> np.ndarray:
    """Onset times (s) of impacts, from the level of 10 ms frames every 2.5 ms.

    An onset is a frame ``rise_db`` above the lowest of the 8 frames before it (20 ms) and within ``within_db``
    of the loudest frame; onsets closer than 70 ms to the previous one are dropped.
    """
    y = _checked(x, sr)
    y = sosfiltfilt(butter(2, 40.0, "highpass", fs=sr, output="sos"), y)
    frame, hop = int(round(0.010 * sr)), int(round(0.0025 * sr))
    level = 20 * np.log10(np.sqrt(np.mean(_frames(y, frame, hop) ** 2, axis=1)) + 1e-12)
    back = 8
    padded = np.concatenate([np.full(back, level[0]), level])
    recent_min = np.min(np.stack([padded[i : i + level.size] for i in range(back)]), axis=0)
    hit = (level - recent_min >= rise_db) & (level >= level.max() - within_db)
    onsets: list[float] = []
    for i in np.flatnonzero(hit):
        t = (i * hop + frame / 2) / sr
        if not onsets or t - onsets[-1] >= 0.070:
            onsets.append(t)
    return np.asarray(onsets)


def impact_rate_hz(x: np.ndarray, sr: int = SR) -> float:
    """Impacts per second: one over the median interval between impact onsets (knocks, steps, ticks).

    Args:
        x: Mono samples.
        sr: Sample rate in Hz.

    Raises:
        ValueError: When fewer than two onsets are found.
    """
    onsets = impact_onsets(x, sr)
    if onsets.size < 2:
        raise ValueError(f"found {onsets.size} impact onset(s); at least 2 are needed for a rate")
    return float(1.0 / np.median(np.diff(onsets)))


PROPERTY_MEASURES: dict[str, Callable[[np.ndarray, int], float]] = {
    "pitch_modulation_hz": pitch_modulation_hz,
    "lowest_partial_hz": lowest_partial_hz,
    "dominant_hz": dominant_hz,
    "firing_rate_hz": firing_rate_hz,
    "quiet_fraction": quiet_fraction,
    "glide_oct_per_s": glide_oct_per_s,
    "impact_rate_hz": impact_rate_hz,
}
"""Measurer of each defining property (the names used in the hierarchy file)."""


def measure(x: np.ndarray, prop: str, sr: int = SR) -> float:
    """Measure one defining property of a clip by name.

    Args:
        x: Mono samples.
        prop: A key of :data:`PROPERTY_MEASURES`.
        sr: Sample rate in Hz.

    Raises:
        ValueError: For an unknown property, or audio that cannot be measured.
    """
    if prop not in PROPERTY_MEASURES:
        raise ValueError(f"unknown property {prop!r}; choose one of {', '.join(PROPERTY_MEASURES)}")
    return PROPERTY_MEASURES[prop](x, sr)


def measure_many(x: np.ndarray, props: Iterable[str], sr: int = SR) -> dict[str, float]:
    """Measure several properties of a clip (a category's), with NaN for one that the clip does not allow.

    A sparse clip (a few drips) has no resonance to follow, so its glide cannot be measured; such a property
    is NaN (and the reason is logged) rather than an error, so that the class it does not define can still be
    told apart (:meth:`~airbench_nb.synth.sources.hierarchy.Hierarchy.nearest_fine` gives a class whose own
    property is NaN no match).

    Args:
        x: Mono samples.
        props: Keys of :data:`PROPERTY_MEASURES`.
        sr: Sample rate in Hz.

    Raises:
        ValueError: For an unknown property.
    """
    out: dict[str, float] = {}
    for prop in props:
        if prop not in PROPERTY_MEASURES:
            raise ValueError(f"unknown property {prop!r}; choose one of {', '.join(PROPERTY_MEASURES)}")
        try:
            out[prop] = PROPERTY_MEASURES[prop](x, sr)
        except ValueError as exc:
            logger.debug("%s not measurable: %s", prop, exc)
            out[prop] = float("nan")
    return out
