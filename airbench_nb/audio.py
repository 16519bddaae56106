"""Audio files: checking, hashing, loading to mono float32 at 16 kHz.

The kit reads wav, flac and mp3 with soundfile (libsndfile) and falls back to librosa (audioread) for what
soundfile cannot open. Nothing here crashes on a bad file when asked for a status: :func:`probe_audio`
returns ``missing``, ``empty`` or ``corrupt`` with the reason.
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from airbench_nb.records import AudioStatus

logger = logging.getLogger(__name__)

TARGET_SR = 16000
"""Sample rate, in Hz, that every clip is converted to."""

AUDIO_EXTENSIONS = (".wav", ".flac", ".mp3")
"""File extensions of the official release."""


class AudioError(ValueError):
    """An audio file that cannot be used, with the path and the reason in the message."""


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    """Return the hex SHA-256 of a file's bytes.

    Args:
        path: File to hash.
        chunk_size: Bytes read at a time.

    Returns:
        The 64-character hex digest.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk_size):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class AudioProbe:
    """The result of checking one audio file."""

    status: AudioStatus
    """What was found."""
    sha256: str | None
    """Hash of the file's bytes when it exists and is not empty."""
    detail: str | None = None
    """Why the status is not ``ok``."""
    duration_s: float | None = None
    """Duration in seconds, when readable."""


def _frames_soundfile(path: Path) -> tuple[int, int]:
    import soundfile as sf

    info = sf.info(str(path))
    if info.frames > 0:
        # Decode the first block: a header can be valid over a truncated or garbled body.
        with sf.SoundFile(str(path)) as handle:
            handle.read(frames=min(info.frames, 4096), dtype="float32")
    return info.frames, info.samplerate


def _frames_librosa(path: Path) -> tuple[int, int]:
    import librosa

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples, sr = librosa.load(str(path), sr=None, mono=True, duration=1.0)
    duration = librosa.get_duration(path=str(path))
    if len(samples) == 0:
        return 0, int(sr)
    return int(round(duration * sr)), int(sr)


def probe_audio(path: str | Path) -> AudioProbe:
    """Check that an audio file exists and decodes, and hash it. Never raises for a bad file.

    Args:
        path: The file to check.

    Returns:
        An :class:`AudioProbe`: ``missing`` (no such file), ``empty`` (zero bytes or zero samples),
        ``corrupt`` (neither soundfile nor librosa decodes it) or ``ok``.
    """
    path = Path(path)
    if not path.is_file():
        return AudioProbe(AudioStatus.missing, None, f"no file at {path}")
    if path.stat().st_size == 0:
        return AudioProbe(AudioStatus.empty, None, f"{path} has zero bytes")
    digest = sha256_file(path)
    errors = []
    for reader in (_frames_soundfile, _frames_librosa):
        try:
            frames, sr = reader(path)
        except Exception as exc:  # noqa: BLE001 - any decoder failure means "corrupt", reported below
            errors.append(f"{reader.__name__.removeprefix('_frames_')}: {type(exc).__name__}: {exc}")
            continue
        if frames <= 0:
            return AudioProbe(AudioStatus.empty, digest, f"{path} decodes to zero samples")
        return AudioProbe(AudioStatus.ok, digest, None, frames / sr)
    detail = f"{path} cannot be decoded ({'; '.join(errors)})"
    logger.debug(detail)
    return AudioProbe(AudioStatus.corrupt, digest, detail)


def load_audio(path: str | Path, sr: int = TARGET_SR) -> np.ndarray:
    """Load an audio file as mono float32 at ``sr`` Hz (downmixed and resampled when needed).

    Args:
        path: A wav, flac or mp3 file (anything soundfile or librosa reads).
        sr: Target sample rate in Hz.

    Returns:
        A 1-D float32 array.

    Raises:
        AudioError: If the file is missing, empty, undecodable, or holds NaN/inf samples.
    """
    import librosa
    import soundfile as sf

    path = Path(path)
    if not path.is_file():
        raise AudioError(f"{path}: no such audio file")
    if path.stat().st_size == 0:
        raise AudioError(f"{path}: audio file is empty (0 bytes)")
    try:
        data, file_sr = sf.read(str(path), dtype="float32", always_2d=True)
        data = data.mean(axis=1)
    except Exception as sf_exc:  # noqa: BLE001 - fall back to librosa, then report both
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                data, file_sr = librosa.load(str(path), sr=None, mono=True)
        except Exception as lr_exc:  # noqa: BLE001
            raise AudioError(f"{path}: cannot decode audio (soundfile: {sf_exc}; librosa: {lr_exc})") from lr_exc
    if data.size == 0:
        raise AudioError(f"{path}: audio has zero samples")
    if not np.all(np.isfinite(data)):
        raise AudioError(f"{path}: audio contains NaN or infinite samples")
    if file_sr != sr:
        data = librosa.resample(data, orig_sr=file_sr, target_sr=sr)
    return np.ascontiguousarray(data, dtype=np.float32)


def write_wav(path: str | Path, samples: np.ndarray, sr: int = TARGET_SR) -> Path:
    """Write mono samples as a 16-bit PCM wav file, creating parent folders.

    Args:
        path: Destination file.
        samples: 1-D float array in [-1, 1].
        sr: Sample rate in Hz.

    Returns:
        The path written.

    Raises:
        AudioError: If the samples are not 1-D or hold NaN/inf.
    """
    import soundfile as sf

    samples = np.asarray(samples)
    if samples.ndim != 1:
        raise AudioError(f"{path}: expected mono (1-D) samples, got shape {samples.shape}")
    if not np.all(np.isfinite(samples)):
        raise AudioError(f"{path}: refusing to write NaN or infinite samples")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), np.clip(samples, -1.0, 1.0), sr, subtype="PCM_16")
    return path
