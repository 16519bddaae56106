"""Declared log-mel front ends for ``onnx:`` audio taggers, in numpy: the features a tagger's graph expects as input.

An ONNX export of an audio tagger usually starts after the feature extraction: it takes log-mel patches, not a
waveform. The front end must then be the one the model was trained with, parameter for parameter. Each
:class:`LogMelFrontEnd` states its parameters; :data:`FRONT_ENDS` holds the named ones:

- ``yamnet``: YAMNet's features as the PyTorch port that the Qualcomm AI Hub export was made from computes them
  (torchaudio's ``MelSpectrogram``; the same parameters as Google's YAMNet ``params.py``): 16 kHz mono; STFT with
  ``n_fft`` 512, a periodic Hann window of 400 samples centred in the 512 and zero-padded to it, hop 160, frames
  centred on their sample (the signal reflect-padded by 256 at both ends); the magnitude (not the power); 64 mel
  bands from 125 to 7500 Hz on the HTK mel scale, triangles without area normalisation
  (``librosa.filters.mel(htk=True, norm=None)``); ``log(mel + 0.001)``; patches of 96 frames (0.96 s) every 48
  frames (0.48 s). The offset 0.001 is YAMNet's ``LOG_OFFSET``, and the quantised export's input range starts at
  -6.90 = log(0.001) (its ``audio_scale`` times ``-audio_zero_point``); 1e-6 was checked too on the real model
  (docs/models.md).
- ``panns``: PANNs-style (Kong et al. 2020, CNN14 and kin; torchlibrosa's ``Spectrogram`` + ``LogmelFilterBank``):
  32 kHz; ``n_fft`` 1024, periodic Hann of 1024, hop 320, centred (reflect); power; 64 Slaney-normalised mel bands
  (librosa's default scale) from 50 to 14000 Hz; ``10 log10(max(mel, 1e-10))``; the whole clip as one input
  (``[1, frames, 64]``).
- ``efficientat``: EfficientAT-style (Schmid et al. 2023, ``AugmentMelSTFT`` at inference): 32 kHz; pre-emphasis
  ``y[n] = x[n] - 0.97 x[n-1]``; ``n_fft`` 1024, a symmetric Hann window of 800 centred in the 1024, hop 320, centred
  (reflect); power; 128 Kaldi-style mel bands (HTK scale, triangles in the mel domain) from 0 to 15500 Hz;
  ``(log(mel + 1e-5) + 4.5) / 5``; the whole clip as one input, mel bands first (``[1, 128, frames]``).

"-style" means: the parameters of the published recipe, computed here, not checked against those models' weights
(none installs offline); YAMNet's is checked against the real model (docs/models.md).

A clip shorter than one patch is padded with zeros at its end to the length that gives exactly one patch
(:meth:`LogMelFrontEnd.min_samples`: 15,200 samples, 0.95 s, for ``yamnet``), so a short clip has one patch.
Frames after the last whole patch are not read (at most ``patch_hop - 1`` frames: 0.47 s for ``yamnet``), as
YAMNet's own framing does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np

logger = logging.getLogger(__name__)

MelScale = Literal["htk", "slaney", "kaldi"]
LogKind = Literal["log", "db"]


@dataclass(frozen=True)
class LogMelFrontEnd:
    """A log-mel front end: STFT, mel filter bank, log, and the cut into the model's input patches."""

    name: str
    """The name in :data:`FRONT_ENDS` (the ``frontend`` option of ``onnx:``)."""
    sample_rate: int
    """Sample rate the clip is resampled to (Hz)."""
    n_fft: int
    """FFT length (samples)."""
    win_length: int
    """Window length (samples), centred in ``n_fft`` and zero-padded to it."""
    hop_length: int
    """Hop between frames (samples)."""
    periodic_window: bool
    """Whether the Hann window is periodic (the DFT-even window of ``scipy.signal.get_window``) or symmetric."""
    power: float
    """Exponent of the STFT magnitude: 1 (magnitude) or 2 (power)."""
    n_mels: int
    """Mel bands."""
    fmin: float
    """Lowest frequency of the filter bank (Hz)."""
    fmax: float
    """Highest frequency of the filter bank (Hz)."""
    mel_scale: MelScale
    """``htk`` (HTK scale, triangles in Hz, no normalisation), ``slaney`` (librosa's default: Slaney scale, each
    triangle's area normalised) or ``kaldi`` (HTK scale, triangles in the mel domain, no Nyquist bin weight)."""
    log: LogKind
    """``log``: natural log of ``mel + log_offset``; ``db``: ``10 log10(max(mel, log_offset))``."""
    log_offset: float
    """The offset (``log``) or floor (``db``) of the log."""
    preemphasis: float = 0.0
    """Pre-emphasis coefficient (``y[n] = x[n] - c x[n-1]``; 0: none)."""
    scale: tuple[float, float] = (0.0, 1.0)
    """``(shift, divisor)``: the log-mel becomes ``(x + shift) / divisor`` (EfficientAT's ``(x + 4.5) / 5``)."""
    patch_frames: int | None = None
    """Frames per patch; None: the whole clip is one input."""
    patch_hop: int | None = None
    """Frames between patch starts (with ``patch_frames``)."""
    mel_first: bool = False
    """Whether the model takes ``[mels, frames]`` (EfficientAT) instead of ``[frames, mels]``."""
    about: str = field(default="", compare=False)
    """One line on where the parameters come from."""

    def __post_init__(self) -> None:
        if self.win_length > self.n_fft:
            raise ValueError(f"front end {self.name}: win_length {self.win_length} > n_fft {self.n_fft}")
        if (self.patch_frames is None) != (self.patch_hop is None):
            raise ValueError(f"front end {self.name}: give patch_frames and patch_hop together")

    @cached_property
    def window(self) -> np.ndarray:
        """The Hann window of ``win_length`` centred in ``n_fft`` zeros (float64)."""
        n = self.win_length
        denominator = n if self.periodic_window else n - 1
        hann = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / max(denominator, 1))
        left = (self.n_fft - n) // 2
        out = np.zeros(self.n_fft)
        out[left : left + n] = hann
        return out

    @cached_property
    def mel_filters(self) -> np.ndarray:
        """The filter bank, ``[n_mels, n_fft // 2 + 1]`` (float64)."""
        if self.mel_scale == "kaldi":
            return kaldi_mel_filters(self.sample_rate, self.n_fft, self.n_mels, self.fmin, self.fmax)
        import librosa

        return librosa.filters.mel(
            sr=self.sample_rate,
            n_fft=self.n_fft,
            n_mels=self.n_mels,
            fmin=self.fmin,
            fmax=self.fmax,
            htk=self.mel_scale == "htk",
            norm="slaney" if self.mel_scale == "slaney" else None,
            dtype=np.float64,
        )

    def min_samples(self) -> int:
        """The shortest clip that gives one whole patch (a shorter one is zero-padded to it); 1 without patches."""
        if self.patch_frames is None:
            return 1
        return (self.patch_frames - 1) * self.hop_length

    def spectrogram(self, audio: np.ndarray) -> np.ndarray:
        """``|STFT|^power`` of a mono clip at :attr:`sample_rate`: ``[frames, n_fft // 2 + 1]`` (float64).

        Frames are centred: the clip is reflect-padded by ``n_fft // 2`` at both ends (zero-padded when it is too
        short to reflect); frame ``t`` covers samples ``t * hop - n_fft / 2`` to ``t * hop + n_fft / 2``.
        """
        x = np.asarray(audio, dtype=np.float64)
        if self.preemphasis:
            x = np.concatenate([x[:1], x[1:] - self.preemphasis * x[:-1]])
        pad = self.n_fft // 2
        x = np.pad(x, pad, mode="reflect" if x.size > pad else "constant")
        frames = 1 + (x.size - self.n_fft) // self.hop_length
        strided = np.lib.stride_tricks.sliding_window_view(x, self.n_fft)[:: self.hop_length][:frames]
        spectrum = np.abs(np.fft.rfft(strided * self.window, axis=-1))
        return spectrum**self.power if self.power != 1 else spectrum

    def log_mel(self, audio: np.ndarray) -> np.ndarray:
        """The log-mel spectrogram of a mono clip at :attr:`sample_rate`: ``[frames, n_mels]`` (float32)."""
        mel = self.spectrogram(audio) @ self.mel_filters.T
        if self.log == "log":
            out = np.log(mel + self.log_offset)
        else:
            out = 10.0 * np.log10(np.maximum(mel, self.log_offset))
        shift, divisor = self.scale
        if (shift, divisor) != (0.0, 1.0):
            out = (out + shift) / divisor
        return out.astype(np.float32)

    def patches(self, audio: np.ndarray) -> np.ndarray:
        """The model inputs of a clip, float32: ``[patches, frames, n_mels]``.

        ``[patches, n_mels, frames]`` when :attr:`mel_first`; one patch (the whole clip) without patching.

        Raises:
            ValueError: For an empty clip.
        """
        x = np.asarray(audio, dtype=np.float32)
        if x.size == 0:
            raise ValueError("empty clip")
        if x.size < self.min_samples():
            x = np.pad(x, (0, self.min_samples() - x.size))
        features = self.log_mel(x)
        if self.patch_frames is None or self.patch_hop is None:
            out = features[None]
        else:
            count = 1 + (features.shape[0] - self.patch_frames) // self.patch_hop
            starts = np.arange(count) * self.patch_hop
            out = np.stack([features[s : s + self.patch_frames] for s in starts])
        return np.ascontiguousarray(out.transpose(0, 2, 1)) if self.mel_first else out

    def describe(self) -> dict[str, object]:
        """The parameters as a plain dict (recorded in the backend's settings)."""
        return {
            "name": self.name,
            "sample_rate": self.sample_rate,
            "n_fft": self.n_fft,
            "win_length": self.win_length,
            "hop_length": self.hop_length,
            "window": "hann (periodic)" if self.periodic_window else "hann (symmetric)",
            "power": self.power,
            "n_mels": self.n_mels,
            "fmin": self.fmin,
            "fmax": self.fmax,
            "mel_scale": self.mel_scale,
            "log": self.log,
            "log_offset": self.log_offset,
            "preemphasis": self.preemphasis,
            "scale": list(self.scale),
            "patch_frames": self.patch_frames,
            "patch_hop": self.patch_hop,
            "mel_first": self.mel_first,
        }


def kaldi_mel_filters(sample_rate: int, n_fft: int, n_mels: int, fmin: float, fmax: float) -> np.ndarray:
    """Kaldi's mel filter bank (``torchaudio.compliance.kaldi.get_mel_banks`` without VTLN), ``[n_mels, n_fft//2+1]``.

    Mel is ``1127 ln(1 + f / 700)``; band ``m``'s triangle rises from the ``m``-th to the ``m+1``-th of ``n_mels + 2``
    points evenly spaced in mel between ``fmin`` and ``fmax`` and falls to the ``m+2``-th, linear in mel; the bins
    are ``k * sample_rate / n_fft`` for ``k < n_fft / 2`` and the Nyquist bin gets no weight.
    """

    def mel(f: np.ndarray | float) -> np.ndarray:
        return 1127.0 * np.log1p(np.asarray(f, dtype=np.float64) / 700.0)

    points = np.linspace(mel(fmin), mel(fmax), n_mels + 2)
    bins = mel(np.arange(n_fft // 2) * sample_rate / n_fft)
    left, centre, right = points[:-2, None], points[1:-1, None], points[2:, None]
    up = (bins[None, :] - left) / (centre - left)
    down = (right - bins[None, :]) / (right - centre)
    weights = np.maximum(0.0, np.minimum(up, down))
    return np.pad(weights, ((0, 0), (0, 1)))


YAMNET = LogMelFrontEnd(
    name="yamnet",
    sample_rate=16000,
    n_fft=512,
    win_length=400,
    hop_length=160,
    periodic_window=True,
    power=1.0,
    n_mels=64,
    fmin=125.0,
    fmax=7500.0,
    mel_scale="htk",
    log="log",
    log_offset=0.001,
    patch_frames=96,
    patch_hop=48,
    about="YAMNet (Google, tensorflow/models research/audioset/yamnet params.py) via torch_audioset's torchaudio port",
)
"""YAMNet's front end (module docstring)."""

PANNS = LogMelFrontEnd(
    name="panns",
    sample_rate=32000,
    n_fft=1024,
    win_length=1024,
    hop_length=320,
    periodic_window=True,
    power=2.0,
    n_mels=64,
    fmin=50.0,
    fmax=14000.0,
    mel_scale="slaney",
    log="db",
    log_offset=1e-10,
    about="PANNs-style (Kong et al. 2020, torchlibrosa Spectrogram + LogmelFilterBank; ref 1, amin 1e-10, no top_db)",
)
"""A PANNs-style front end (module docstring)."""

EFFICIENTAT = LogMelFrontEnd(
    name="efficientat",
    sample_rate=32000,
    n_fft=1024,
    win_length=800,
    hop_length=320,
    periodic_window=False,
    power=2.0,
    n_mels=128,
    fmin=0.0,
    fmax=15500.0,
    mel_scale="kaldi",
    log="log",
    log_offset=1e-5,
    preemphasis=0.97,
    scale=(4.5, 5.0),
    mel_first=True,
    about="EfficientAT-style (Schmid et al. 2023, AugmentMelSTFT at inference, no augmentation)",
)
"""An EfficientAT-style front end (module docstring)."""

FRONT_ENDS: dict[str, LogMelFrontEnd] = {f.name: f for f in (YAMNET, PANNS, EFFICIENTAT)}
"""The named front ends (the ``frontend`` option of ``onnx:``)."""


def front_end(name: str) -> LogMelFrontEnd:
    """The front end of a name.

    Raises:
        ValueError: In one line naming the known front ends, for an unknown name.
    """
    try:
        return FRONT_ENDS[name]
    except KeyError:
        raise ValueError(f"unknown front end {name!r}; use one of {', '.join(FRONT_ENDS)}") from None
