"""Making a perturbed copy of a clip in memory, family by family, with what was measured on it.

The definitions (the tests check each by measuring the output):

Codec
    The clip (clipped to [-1, 1]) is encoded by libsndfile 1.2.2 through soundfile: MP3 as MPEG-2 Layer III at
    constant bitrate (16, 22.05 or 24 kHz), Opus in Ogg (8, 12, 16, 24 or 48 kHz). libsndfile sets the bitrate
    from a compression level in [0, 1], linearly: MP3 ``160 - 152 * level`` kbit/s (LAME then takes the nearest
    legal rate), Opus ``256 - 250 * level`` kbit/s; the level is computed from the target. The file is decoded
    back to float at the clip's rate, its delay behind the input (cross-correlation, up to
    :data:`MAX_CODEC_DELAY_S`) is removed and it is cut or zero-padded to the input's length.
Reverberation
    A synthetic room impulse response: seeded white Gaussian noise under an exponential envelope that falls
    60 dB in RT60 seconds (``exp(-3 ln(10) t / RT60)``), :data:`RIR_LENGTH_RT60` x RT60 long, peak 1. The clip is
    convolved with it and cut to its own length (the tail past the clip's end is dropped), then scaled back to
    its input loudness; if that would put a sample beyond :data:`PEAK_LIMIT`, the output is scaled down and the
    level change is reported.
Speed
    Resampling as a tape played faster: the factor as a fraction (denominator up to 1000) drives a polyphase
    resampler (``scipy.signal.resample_poly``), so duration and pitch change together (1.1: 10% shorter).
Pitch
    ``librosa.effects.pitch_shift`` by ``12 log2(ratio)`` semitones (phase-vocoder time stretch plus resampling;
    2048-sample frames, or the largest power of two that fits a shorter clip): the duration is kept.
Clipping
    Hard clipping at ``parameter x peak``; the level is not restored.
Loudness
    One gain to the target (BS.1770 integrated loudness; a clip too short or quiet to gate is set in dBFS RMS and
    its unit says so); samples the gain would put beyond full scale are clipped there and their share is
    reported (so the true peak stays about 0 dBFS, and a 0 LUFS target on a peaky clip measures below target).

Only reverberation draws random numbers, from ``numpy.random.default_rng(seed)``: the same clip, spec and seed
give the same output, sample for sample.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from airbench_nb.audio import AudioError, check_samples, loudness
from airbench_nb.perturb.measure import (
    CodecMeasured,
    LoudnessMeasured,
    Measured,
    PitchMeasured,
    ReverbMeasured,
    SpeedMeasured,
    file_bitrate,
    measure_clipping,
    measure_loudness,
    pitch_ratio,
    schroeder_rt60,
)
from airbench_nb.perturb.spec import Perturbation, PerturbError

logger = logging.getLogger(__name__)

MP3_RATES = (16000, 22050, 24000)
"""Sample rates MP3 is written at (MPEG-2 Layer III, whose bitrates run 8-160 kbit/s)."""
OPUS_RATES = (8000, 12000, 16000, 24000, 48000)
"""Sample rates Opus accepts."""
CODEC_SUFFIXES = {"mp3": ".mp3", "opus": ".opus"}
"""File suffix of each codec's encoded file."""
MAX_CODEC_DELAY_S = 0.25
"""Largest decoder delay searched for and removed."""
RIR_LENGTH_RT60 = 1.5
"""RIR length in RT60s: the envelope has fallen 90 dB by its end."""
PEAK_LIMIT = 0.99
"""Peak a reverberated output is kept under (as the mixer does)."""


@dataclass(frozen=True)
class PerturbedAudio:
    """A perturbed clip and what was measured on it."""

    samples: np.ndarray
    """The perturbed mono signal (float32), at ``rate``."""
    rate: int
    """Sample rate in Hz (the input's)."""
    spec: Perturbation
    """What was asked for."""
    seed: int
    """Seed of the random draws (the RIR's noise)."""
    measured: Measured
    """What was measured on the encoded file, the RIR or the output."""
    rir: np.ndarray | None = None
    """The room impulse response, for reverberation."""
    encoded: Path | None = None
    """The encoded file, for a codec asked to keep it (else it was a temporary file, now deleted)."""


def _rate(rate: int, spec: Perturbation) -> int:
    if isinstance(rate, bool) or not isinstance(rate, int | np.integer) or rate <= 0:
        raise PerturbError(f"{spec.text}: sample rate must be a positive integer, got {rate!r}")
    rate = int(rate)
    allowed = {"mp3": MP3_RATES, "opus": OPUS_RATES}.get(spec.codec or "")
    if allowed is not None and rate not in allowed:
        raise PerturbError(
            f"{spec.text}: {spec.codec} cannot be written at {rate} Hz; rates: {', '.join(map(str, allowed))}"
        )
    return rate


def codec_level(spec: Perturbation) -> float:
    """The compression level libsndfile is given for a codec spec's target bitrate (module docstring)."""
    if spec.codec == "mp3":
        return (160.0 - spec.parameter) / 152.0
    return (256.0 - spec.parameter) / 250.0


def decoder_delay(reference: np.ndarray, decoded: np.ndarray, max_lag: int) -> int:
    """Lag (samples, ``-max_lag..max_lag``) at which ``decoded`` best matches ``reference`` (cross-correlation)."""
    n = max(reference.size, decoded.size) + max_lag
    size = 1 << (2 * n - 1).bit_length()
    corr = np.fft.irfft(np.fft.rfft(decoded, size) * np.conj(np.fft.rfft(reference, size)), size)
    lags = np.concatenate([np.arange(0, max_lag + 1), np.arange(-max_lag, 0)])
    values = np.concatenate([corr[: max_lag + 1], corr[-max_lag:]])
    return int(lags[int(np.argmax(values))])


def _codec(x: np.ndarray, rate: int, spec: Perturbation, encoded_path: Path | None) -> tuple[np.ndarray, CodecMeasured]:
    import soundfile as sf

    assert spec.codec is not None
    over = int(np.count_nonzero(np.abs(x) > 1.0))
    if over:
        logger.warning("%s: %d samples beyond full scale clipped before encoding", spec.text, over)
    clipped = np.clip(x, -1.0, 1.0).astype(np.float32)
    options: dict[str, object] = {"compression_level": codec_level(spec)}
    if spec.codec == "mp3":
        options.update(format="MP3", subtype="MPEG_LAYER_III", bitrate_mode="CONSTANT")
    else:
        options.update(format="OGG", subtype="OPUS")
    with tempfile.TemporaryDirectory(prefix="airbench-codec-") as tmp:
        path = encoded_path or Path(tmp) / f"clip{CODEC_SUFFIXES[spec.codec]}"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            sf.write(str(path), clipped, rate, **options)
            decoded, decoded_rate = sf.read(str(path), dtype="float64", always_2d=True)
        except (OSError, RuntimeError) as exc:  # libsndfile's errors are RuntimeErrors
            raise PerturbError(f"{spec.text}: cannot encode or decode {path} ({type(exc).__name__}: {exc})") from None
        measured = file_bitrate(path)
    if decoded_rate != rate:
        raise PerturbError(f"{spec.text}: decoded at {decoded_rate} Hz, encoded at {rate} Hz")
    y = decoded.mean(axis=1)
    lag = decoder_delay(clipped.astype(np.float64), y, round(MAX_CODEC_DELAY_S * rate))
    y = y[lag:] if lag >= 0 else np.concatenate([np.zeros(-lag), y])
    y = np.pad(y, (0, max(0, x.size - y.size)))[: x.size]
    return y.astype(np.float32), dataclasses.replace(measured, offset_samples=lag)


def synthetic_rir(rt60_s: float, rate: int, seed: int) -> np.ndarray:
    """Exponentially decaying Gaussian noise (module docstring), peak 1, float64."""
    rng = np.random.default_rng(seed)
    length = max(2, math.ceil(RIR_LENGTH_RT60 * rt60_s * rate))
    t = np.arange(length) / rate
    rir = rng.standard_normal(length) * np.exp(-3.0 * math.log(10.0) * t / rt60_s)
    return rir / np.max(np.abs(rir))


def _reverb(x: np.ndarray, rate: int, spec: Perturbation, seed: int) -> tuple[np.ndarray, np.ndarray, ReverbMeasured]:
    from scipy.signal import fftconvolve

    rir = synthetic_rir(spec.parameter, rate, seed)
    y = fftconvolve(x, rir)[: x.size]
    before = loudness(x, rate, name=f"{spec.text} input")
    after = loudness(y, rate, before.unit, name=f"{spec.text} output")
    y = y * 10.0 ** ((before.value - after.value) / 20.0)
    peak = float(np.max(np.abs(y)))
    scale = PEAK_LIMIT / peak if peak > PEAK_LIMIT else 1.0
    if scale < 1.0:
        logger.info("%s: output would peak at %.3f; scaled by %.4f", spec.text, peak, scale)
    y = y * scale
    rt60, method = schroeder_rt60(rir, rate)
    measured = ReverbMeasured(rt60, method, rir.size / rate, 20.0 * math.log10(scale))
    return y.astype(np.float32), rir, measured


def _speed(x: np.ndarray, rate: int, spec: Perturbation) -> tuple[np.ndarray, SpeedMeasured]:
    from scipy.signal import resample_poly

    frac = Fraction(spec.parameter).limit_denominator(1000)
    y = resample_poly(x, frac.denominator, frac.numerator)
    if y.size == 0:
        raise PerturbError(f"{spec.text}: the clip of {x.size} samples leaves no sample at this speed")
    return y.astype(np.float32), SpeedMeasured(x.size / y.size, x.size / rate, y.size / rate)


def _pitch(x: np.ndarray, rate: int, spec: Perturbation) -> tuple[np.ndarray, PitchMeasured]:
    import librosa

    n_fft = 2048 if x.size >= 2048 else max(16, 1 << (x.size.bit_length() - 1))  # short clips: a frame that fits
    steps = 12.0 * math.log2(spec.parameter)
    y = librosa.effects.pitch_shift(x.astype(np.float32), sr=rate, n_steps=steps, n_fft=n_fft)
    ratio = pitch_ratio(x, y, rate)
    return y.astype(np.float32), PitchMeasured(ratio, 12.0 * math.log2(ratio), y.size / x.size)


def _loudness(x: np.ndarray, rate: int, spec: Perturbation) -> tuple[np.ndarray, LoudnessMeasured]:
    before = loudness(x, rate, name=f"{spec.text} input")
    y = x.astype(np.float64) * 10.0 ** ((spec.parameter - before.value) / 20.0)
    over = np.abs(y) > 1.0
    share = float(np.mean(over))
    if share:
        logger.info("%s: %.2f%% of samples clipped at full scale to reach the target", spec.text, 100 * share)
    y = np.clip(y, -1.0, 1.0)
    return y.astype(np.float32), measure_loudness(y, rate, share)


def apply(
    samples: np.ndarray,
    rate: int,
    spec: Perturbation,
    seed: int = 0,
    *,
    encoded_path: str | Path | None = None,
) -> PerturbedAudio:
    """Perturb a mono clip as ``spec`` says (module docstring) and measure the result.

    Args:
        samples: The clip (1-D float, full scale 1.0).
        rate: Its sample rate in Hz (the output's too).
        spec: The perturbation.
        seed: Seed of the random draws (only reverberation draws).
        encoded_path: For a codec, where to keep the encoded file (else a temporary file, deleted).

    Returns:
        The :class:`PerturbedAudio`, float32 at ``rate``.

    Raises:
        AudioError: For a clip that is not 1-D, is empty, holds NaN/inf or is all silent.
        PerturbError: For a sample rate the codec cannot write, or an encoder failure.
    """
    rate = _rate(rate, spec)
    x = check_samples(samples, f"{spec.text} input").astype(np.float64)
    rir: np.ndarray | None = None
    measured: Measured
    encoded = Path(encoded_path) if encoded_path is not None and spec.family == "codec" else None
    if spec.family == "codec":
        y, measured = _codec(x, rate, spec, encoded)
    elif spec.family == "reverb":
        y, rir, measured = _reverb(x, rate, spec, seed)
    elif spec.family == "speed":
        y, measured = _speed(x, rate, spec)
    elif spec.family == "pitch":
        y, measured = _pitch(x, rate, spec)
    elif spec.family == "clipping":
        threshold = spec.parameter * float(np.max(np.abs(x)))
        y = np.clip(x, -threshold, threshold).astype(np.float32)
        measured = measure_clipping(y, x, threshold)
    elif spec.family == "loudness":
        y, measured = _loudness(x, rate, spec)
    else:  # pragma: no cover - Perturbation refuses unknown families
        raise PerturbError(f"perturbation family {spec.family!r} is unknown")
    if not np.all(np.isfinite(y)):
        raise AudioError(f"{spec.text}: the perturbed audio holds NaN or infinite samples")
    return PerturbedAudio(y, rate, spec, int(seed), measured, rir, encoded)
