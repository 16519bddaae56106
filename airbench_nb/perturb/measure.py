"""Measuring a perturbation on what was made (the encoded file, the room impulse response, the output audio).

Every family's record has a ``value``: the measured counterpart of the requested parameter, in the parameter's
unit (bitrate, RT60, speed factor, pitch ratio, peak ratio, loudness), so that a curve can be drawn over the
measured values as well as the requested ones. The definitions:

Codec bitrate
    ``size_bytes * 8 / duration_s / 1000`` of the encoded file (container and headers included, so a short clip
    reads a little above the target), with ``soundfile.info``'s format and subtype and the decoded duration; and
    the audio bitrate, the same without the container: for Ogg, the page headers and the first two packets (the
    Opus identification and comment headers); for MP3, ID3v2/ID3v1 tags and a first frame holding a Xing/Info
    (LAME) tag. The duration is the decoded file's, so on a clip under about a second the encoder's delay and
    padding frames weigh and the bitrate reads high (an MP3 of 0.1 s at 48 kbit/s reads about 86).
RT60
    Schroeder backward integration of the squared RIR (energy decay curve, in dB), a least-squares line fitted
    between -5 and -35 dB (T30) and extrapolated to -60 dB; T20 (-5 to -25 dB) when the curve does not reach
    -35 dB.
Speed
    Input duration over output duration (1.1: the output is 10% shorter).
Pitch
    The shift that best aligns the two clips' mean magnitude spectra on a log-frequency axis (1-cent steps,
    60 Hz to 90% of Nyquist, parabolic refinement), as a frequency ratio; exact for a harmonic tone, a
    spectral-envelope estimate for other sounds.
Clipping
    The share of output samples at the clipping threshold (within :data:`CLIP_TOLERANCE`) and the output's peak over
    the input's.
Loudness
    ITU-R BS.1770 integrated loudness (pyloudnorm, via :func:`airbench_nb.audio.loudness`; dBFS RMS for clips too
    short to gate, and the unit says so), the true peak (4x oversampled) in dBFS, and the share of samples that
    were clipped at full scale to keep the peak at 0 dBFS.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from airbench_nb.audio import LoudnessUnit, loudness

PITCH_FMIN_HZ = 60.0
"""Lowest frequency the pitch measurement compares."""
PITCH_MAX_SHIFT_CENTS = 1200
"""Largest pitch shift the measurement searches (one octave either way)."""
CLIP_TOLERANCE = 2.0 / 32768.0
"""How far under the clipping threshold a sample still counts as clipped: two 16-bit steps, for the rounding of a
16-bit write and libsndfile's scaling (floats written times 32767, read back over 32768)."""


@dataclass(frozen=True)
class CodecMeasured:
    """A codec perturbation as measured on the encoded file."""

    bitrate_kbps: float
    """File size in bits over the decoded duration, in kbit/s."""
    audio_bitrate_kbps: float
    """The same without the container's bytes (module docstring): the codec's own rate."""
    format: str
    """Container format as ``soundfile.info`` reads it (``MP3``, ``OGG``)."""
    subtype: str
    """Codec as ``soundfile.info`` reads it (``MPEG_LAYER_III``, ``OPUS``)."""
    encoded_bytes: int
    """Size of the encoded file."""
    duration_s: float
    """Duration of the decoded file, as its header gives it."""
    offset_samples: int
    """Delay of the decoded audio behind the input (cross-correlation), removed before the output was cut to the
    input's length: 0 when the decoder trimmed the encoder's delay itself."""

    @property
    def value(self) -> float:
        """The measured audio bitrate (kbit/s)."""
        return self.audio_bitrate_kbps


@dataclass(frozen=True)
class ReverbMeasured:
    """A reverberation perturbation as measured on its RIR and output."""

    rt60_s: float
    """RT60 estimated from the RIR by Schroeder backward integration."""
    method: Literal["T30", "T20"]
    """Which part of the decay curve the line was fitted to."""
    rir_length_s: float
    """Length of the RIR."""
    level_change_db: float
    """Output loudness minus input loudness (0 unless the output had to be scaled down to keep its peak)."""

    @property
    def value(self) -> float:
        """The measured RT60 (s)."""
        return self.rt60_s


@dataclass(frozen=True)
class SpeedMeasured:
    """A speed perturbation as measured on the durations."""

    factor: float
    """Input duration over output duration."""
    input_duration_s: float
    """Duration of the input."""
    output_duration_s: float
    """Duration of the output."""

    @property
    def value(self) -> float:
        """The measured speed factor."""
        return self.factor


@dataclass(frozen=True)
class PitchMeasured:
    """A pitch perturbation as measured on the spectra."""

    ratio: float
    """Frequency ratio of output over input (log-frequency spectral alignment)."""
    semitones: float
    """The same shift in semitones, ``12 log2(ratio)``."""
    duration_ratio: float
    """Output duration over input duration (1: duration kept)."""

    @property
    def value(self) -> float:
        """The measured frequency ratio."""
        return self.ratio


@dataclass(frozen=True)
class ClippingMeasured:
    """A clipping perturbation as measured on the output."""

    clipped_share: float
    """Share of output samples at the threshold (within :data:`CLIP_TOLERANCE`)."""
    threshold: float
    """The clipping level (absolute, full scale 1.0)."""
    peak_ratio: float
    """Output peak over input peak."""

    @property
    def value(self) -> float:
        """The measured peak ratio (the requested fraction of peak)."""
        return self.peak_ratio


@dataclass(frozen=True)
class LoudnessMeasured:
    """A loudness perturbation as measured on the output."""

    loudness: float
    """Integrated loudness of the output."""
    unit: LoudnessUnit
    """``LUFS``, or ``dBFS`` (RMS) for a clip too short or quiet to gate."""
    true_peak_dbfs: float
    """True peak (4x oversampled) of the output, in dBFS."""
    clipped_share: float
    """Share of samples clipped at full scale because the target pushed them beyond it."""

    @property
    def value(self) -> float:
        """The measured loudness."""
        return self.loudness


Measured = CodecMeasured | ReverbMeasured | SpeedMeasured | PitchMeasured | ClippingMeasured | LoudnessMeasured
"""What was measured on a perturbation, one record type per family."""


def measured_dict(measured: Measured) -> dict[str, Any]:
    """A measured record as a JSON-ready dict (its fields plus ``value``), for an item's ``meta.measured``."""
    out = dataclasses.asdict(measured)
    out["value"] = measured.value
    return out


MP3_BITRATES_KBPS = {
    1: (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    2: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
"""Layer III bitrates by header index: MPEG-1, and MPEG-2/2.5."""
MP3_RATES_HZ = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}
"""Sample rates by header index, per MPEG version bits (3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5)."""


def _ogg_container_bytes(data: bytes) -> int:
    """Bytes of an Ogg file that are not audio: page headers and the first two packets (Opus/Vorbis headers)."""
    overhead, pos, packet, packets = 0, 0, 0, 0
    while pos + 27 <= len(data) and data[pos : pos + 4] == b"OggS":
        count = data[pos + 26]
        lacing = data[pos + 27 : pos + 27 + count]
        overhead += 27 + count
        for value in lacing:
            packet += value
            if value < 255:
                if packets < 2:
                    overhead += packet
                packets += 1
                packet = 0
        pos += 27 + count + sum(lacing)
    return overhead


def _mp3_container_bytes(data: bytes) -> int:
    """Bytes of an MP3 file that are not audio frames: ID3 tags, and a first frame holding a Xing/Info tag."""
    overhead, pos = 0, 0
    if data[:3] == b"ID3" and len(data) >= 10:
        size = (data[6] << 21) | (data[7] << 14) | (data[8] << 7) | data[9]
        pos = 10 + size + (10 if data[5] & 0x10 else 0)
        overhead += pos
    if len(data) >= 128 and data[-128:-125] == b"TAG":
        overhead += 128
    header = data[pos : pos + 4]
    if len(header) == 4 and header[0] == 0xFF and header[1] & 0xE0 == 0xE0:
        version = (header[1] >> 3) & 3
        rates = MP3_RATES_HZ.get(version)
        bitrate_index, rate_index = header[2] >> 4, (header[2] >> 2) & 3
        if rates is not None and 0 < bitrate_index < 15 and rate_index < 3:
            bitrate = MP3_BITRATES_KBPS[1 if version == 3 else 2][bitrate_index] * 1000
            length = (144 if version == 3 else 72) * bitrate // rates[rate_index] + ((header[2] >> 1) & 1)
            if b"Xing" in data[pos : pos + 64] or b"Info" in data[pos : pos + 64]:
                overhead += length
    return overhead


def file_bitrate(path: str | Path) -> CodecMeasured:
    """Measure an encoded file: size over duration, format and subtype (``offset_samples`` set to 0)."""
    import soundfile as sf

    path = Path(path)
    info = sf.info(str(path))
    data = path.read_bytes()
    container = _ogg_container_bytes(data) if data[:4] == b"OggS" else _mp3_container_bytes(data)
    duration = float(info.frames) / float(info.samplerate)
    return CodecMeasured(
        len(data) * 8.0 / duration / 1000.0,
        (len(data) - container) * 8.0 / duration / 1000.0,
        info.format,
        info.subtype,
        len(data),
        duration,
        0,
    )


def schroeder_rt60(rir: np.ndarray, rate: int) -> tuple[float, Literal["T30", "T20"]]:
    """RT60 of a room impulse response by Schroeder backward integration (module docstring).

    Raises:
        ValueError: For an all-zero RIR, or one whose decay curve does not reach -25 dB.
    """
    energy = np.square(np.asarray(rir, dtype=np.float64))
    edc = np.cumsum(energy[::-1])[::-1]
    if edc[0] <= 0.0:
        raise ValueError("RIR is all zero: no decay to measure")
    with np.errstate(divide="ignore"):
        edc_db = 10.0 * np.log10(edc / edc[0])
    method: Literal["T30", "T20"] = "T30" if edc_db[-1] <= -35.0 else "T20"
    low = -35.0 if method == "T30" else -25.0
    if edc_db[-1] > low:
        raise ValueError(f"RIR decays only {edc_db[-1]:.1f} dB: too short to measure RT60")
    start = int(np.argmax(edc_db <= -5.0))
    stop = int(np.argmax(edc_db <= low))
    t = np.arange(start, stop + 1) / rate
    slope, _ = np.polyfit(t, edc_db[start : stop + 1], 1)
    return float(-60.0 / slope), method


def _mean_spectrum(x: np.ndarray, n_fft: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.size < n_fft:
        x = np.pad(x, (0, n_fft - x.size))
    hop = n_fft // 4
    count = 1 + (x.size - n_fft) // hop
    frames = np.lib.stride_tricks.sliding_window_view(x, n_fft)[::hop][:count]
    return np.mean(np.abs(np.fft.rfft(frames * np.hanning(n_fft), axis=1)), axis=0)


def pitch_ratio(reference: np.ndarray, shifted: np.ndarray, rate: int, n_fft: int = 8192) -> float:
    """Frequency ratio of ``shifted`` over ``reference`` by log-frequency spectral alignment (module docstring)."""
    fmax = 0.9 * rate / 2.0
    cents = np.arange(0.0, 1200.0 * math.log2(fmax / PITCH_FMIN_HZ))
    grid = PITCH_FMIN_HZ * 2.0 ** (cents / 1200.0)
    freqs = np.fft.rfftfreq(n_fft, 1.0 / rate)
    a = np.interp(grid, freqs, _mean_spectrum(reference, n_fft))
    b = np.interp(grid, freqs, _mean_spectrum(shifted, n_fft))
    a, b = a - a.mean(), b - b.mean()
    n = a.size
    corr = np.fft.irfft(np.fft.rfft(b, 2 * n) * np.conj(np.fft.rfft(a, 2 * n)), 2 * n)
    lags = np.concatenate([np.arange(0, PITCH_MAX_SHIFT_CENTS + 1), np.arange(-PITCH_MAX_SHIFT_CENTS, 0)])
    values = np.concatenate([corr[: PITCH_MAX_SHIFT_CENTS + 1], corr[-PITCH_MAX_SHIFT_CENTS:]])
    best = int(np.argmax(values))
    shift = float(lags[best])
    left, right = values[best - 1], values[(best + 1) % values.size]
    denom = left - 2.0 * values[best] + right
    if denom < 0.0:
        shift += 0.5 * (left - right) / denom
    return float(2.0 ** (shift / 1200.0))


def true_peak_dbfs(samples: np.ndarray) -> float:
    """True peak (4x oversampled, polyphase) in dBFS; -inf for silence."""
    from scipy.signal import resample_poly

    peak = float(np.max(np.abs(resample_poly(np.asarray(samples, dtype=np.float64), 4, 1))))
    return 20.0 * math.log10(peak) if peak > 0.0 else -math.inf


def measure_clipping(output: np.ndarray, original: np.ndarray, threshold: float) -> ClippingMeasured:
    """Share of output samples at ``threshold`` (within :data:`CLIP_TOLERANCE`) and the peak ratio."""
    out = np.abs(np.asarray(output, dtype=np.float64))
    share = float(np.mean(out >= threshold - CLIP_TOLERANCE))
    return ClippingMeasured(share, threshold, float(out.max() / np.max(np.abs(original))))


def measure_loudness(output: np.ndarray, rate: int, clipped_share: float) -> LoudnessMeasured:
    """Integrated loudness and true peak of an output; ``clipped_share`` is passed through."""
    level = loudness(output, rate, name="perturbed audio")
    return LoudnessMeasured(level.value, level.unit, true_peak_dbfs(output), clipped_share)
