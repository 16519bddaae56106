"""Measurements the tests make on audio, independent of the code that made it."""

from __future__ import annotations

import librosa
import numpy as np
from scipy.signal import butter, sosfilt

SR = 16000


def frame_rms(x: np.ndarray, frame: int = 160, hop: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """RMS of 10 ms frames every 2.5 ms, and the frame centres in seconds."""
    n = 1 + (x.size - frame) // hop
    idx = np.arange(frame)[None, :] + hop * np.arange(n)[:, None]
    rms = np.sqrt(np.mean(np.asarray(x, dtype=np.float64)[idx] ** 2, axis=1))
    return rms, (np.arange(n) * hop + frame / 2) / SR


def energy_onsets(x: np.ndarray, rise_db: float = 7.0, fall_db: float = 3.0, min_gap_s: float = 0.03) -> list[float]:
    """Event onsets from the energy envelope: frame RMS rising ``rise_db`` above the background (median frame
    RMS); an event ends once the RMS stays below ``fall_db`` above the background for ``min_gap_s``.

    The signal is first high-passed at 100 Hz: brown noise keeps most of its power at 20-100 Hz, whose slow
    beats make 10 ms frame RMS swing by several dB and trip the threshold early.
    """
    x = sosfilt(butter(2, 100.0, "highpass", fs=SR, output="sos"), np.asarray(x, dtype=np.float64))
    rms, centres = frame_rms(x)
    background = np.median(rms)
    on, off = background * 10 ** (rise_db / 20), background * 10 ** (fall_db / 20)
    onsets: list[float] = []
    active, quiet = False, 0
    for t, r in zip(centres, rms, strict=True):
        if not active and r > on:
            onsets.append(float(t))
            active, quiet = True, 0
        elif active:
            quiet = quiet + 1 if r < off else 0
            if quiet * 40 / SR >= min_gap_s:
                active = False
    return onsets


def detected_onsets(x: np.ndarray) -> np.ndarray:
    """Onsets (s) by spectral flux with 32 ms windows and 8 ms hops; 0.1 s of silence first so a note at 0 counts."""
    pad = int(0.1 * SR)
    y = np.concatenate([np.zeros(pad, dtype=np.float32), x])
    env = librosa.onset.onset_strength(y=y, sr=SR, hop_length=128, n_fft=512)
    return librosa.onset.onset_detect(onset_envelope=env, sr=SR, hop_length=128, units="time", wait=8) - pad / SR
