"""Audio files and signals: checking, hashing, loading to mono float32 at 16 kHz, loudness, writing.

The kit reads wav, flac and mp3 with soundfile (libsndfile) and falls back to librosa (audioread) for what
soundfile cannot open. Nothing here crashes on a bad file when asked for a status: :func:`probe_audio`
returns ``missing``, ``empty`` or ``corrupt`` with the reason.

:func:`probe_audio` decodes the head and the tail of a file, compares a WAV header's promised length with the bytes
the file holds (libsndfile silently shortens a truncated WAV), and decodes float files whole to find NaN or infinite
samples: a truncated file, or one with NaN samples, is ``corrupt``. A plain integer-PCM wav whose data chunk is whole
(what the kit's builders write) is read once and checked from its bytes: any byte pattern is a valid integer sample,
so no decoder needs opening (about a third of the time per 5 s clip). :func:`probe_audio_cached` remembers each
result by the file's path, size, modification and change times (in nanoseconds), inode and device, so that checking
the audio as it is at every run (the runner, scoring) costs a ``stat`` per file once a file has been probed in the
process; :func:`probe_audio_many` also keeps them in the kit's cache folder, so that a run resumed in a new process
does not hash and decode every clip again.

Loudness (:func:`loudness`) is the integrated loudness of ITU-R BS.1770-4 in LUFS, measured with pyloudnorm
(K-weighting, 400 ms blocks with 75% overlap, absolute gate at -70 LUFS, relative gate at -10 LU). A clip
shorter than one 400 ms gating block, or one whose every block falls under the absolute gate, has no
BS.1770 loudness: it is measured as RMS level in dBFS instead (``20 log10(rms)``, full scale 1.0 = 0 dBFS), and
the unit says so. The two scales are close for broadband sounds (a full-scale 1 kHz sine is -3.01 dBFS RMS and
-3.01 LUFS) but not interchangeable: compare values only when their units agree.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import struct
import threading
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from airbench_nb.records import AudioStatus

logger = logging.getLogger(__name__)

TARGET_SR = 16000
"""Sample rate, in Hz, that every clip is converted to."""

AUDIO_EXTENSIONS = (".wav", ".flac", ".mp3")
"""File extensions of the official release."""


LUFS_BLOCK_S = 0.4
"""Length of a BS.1770 gating block in seconds: shorter clips are measured in dBFS RMS."""

LoudnessUnit = Literal["LUFS", "dBFS"]
"""Unit of a loudness value: ``LUFS`` (ITU-R BS.1770 integrated loudness) or ``dBFS`` (RMS level)."""


class AudioError(ValueError):
    """An audio file or signal that cannot be used, with the path (or name) and the reason in the message."""


class SilentAudioError(AudioError):
    """A clip whose samples are all zero: it has no level to measure or normalise."""


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


class _AudioDefect(Exception):
    """A file that opens but is damaged (truncated, NaN samples): ``corrupt`` whatever another decoder says."""


PROBE_BLOCK = 4096
"""Frames decoded at the head and at the tail of a file by :func:`probe_audio`."""


def wav_header_frames(path: str | Path) -> tuple[int, int] | None:
    """``(frames promised by the header, frames the file holds)`` of a RIFF/RIFX WAVE file, else None.

    Reads the chunk headers only. None also when the header gives no usable length (a streamed WAV's data size of
    0 or 0xFFFFFFFF) or cannot be parsed (libsndfile then decides).
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(12)
            if len(head) < 12 or head[:4] not in (b"RIFF", b"RIFX") or head[8:12] != b"WAVE":
                return None
            order = "<" if head[:4] == b"RIFF" else ">"
            size = Path(path).stat().st_size
            block_align = 0
            while True:
                chunk = handle.read(8)
                if len(chunk) < 8:
                    return None
                name, length = chunk[:4], struct.unpack(f"{order}I", chunk[4:])[0]
                if name == b"fmt ":
                    fmt = handle.read(min(length, 16))
                    if len(fmt) < 14:
                        return None
                    block_align = struct.unpack(f"{order}H", fmt[12:14])[0]
                    handle.seek(length - len(fmt) + (length & 1), 1)
                elif name == b"data":
                    if block_align <= 0 or length in (0, 0xFFFFFFFF):
                        return None
                    return length // block_align, max(0, size - handle.tell()) // block_align
                else:
                    handle.seek(length + (length & 1), 1)
    except (OSError, struct.error):
        return None


def _riff_pcm_layout(data: bytes) -> tuple[int, int, int, int] | None:
    """``(channels, rate, bits, frames)`` of the bytes of a plain integer-PCM RIFF WAVE file, else None.

    Plain: little-endian ``RIFF``/``WAVE``; a ``fmt `` chunk of format tag 1 (PCM, not the extensible tag) with 8,
    16, 24 or 32 bits per sample, at least one channel, a positive rate and a block alignment of channels times bytes
    per sample; then a ``data`` chunk of a whole number of frames, at least one, all held by the bytes (other chunks,
    such as ``LIST``, may come before or after). Any such file decodes whole: every byte pattern is a valid integer
    sample. None for anything else (another format, a streamed or truncated data chunk, a damaged header).
    """
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    at, layout = 12, None
    while at + 8 <= len(data):
        name, length = data[at : at + 4], struct.unpack_from("<I", data, at + 4)[0]
        body = at + 8
        if name == b"fmt ":
            if length < 16 or body + 16 > len(data) or layout is not None:
                return None
            tag, channels, rate, _, align, bits = struct.unpack_from("<HHIIHH", data, body)
            if tag != 1 or channels < 1 or rate < 1 or bits not in (8, 16, 24, 32) or align != channels * bits // 8:
                return None
            layout = (channels, rate, bits, align)
        elif name == b"data":
            if layout is None or not 0 < length <= len(data) - body or length % layout[3]:
                return None
            return layout[0], layout[1], layout[2], length // layout[3]
        at = body + length + (length & 1)
    return None


def pcm16_wav_bytes(path: str | Path, sr: int = TARGET_SR) -> bytes | None:
    """The bytes of a file that is already what :func:`load_audio` would make of it, sent as a wav: else None.

    That is a little-endian RIFF WAVE file of 16-bit integer PCM, one channel, at ``sr`` Hz, whose data chunk holds
    every frame its header promises and at least one (other chunks, such as ``LIST``, may come before it). A backend
    sending wav files sends these bytes as they are, with no decoding, resampling or encoding again; for any other
    file (another format, rate, width or channel count, a damaged header) it decodes as usual.

    Never raises: a file that cannot be read is None too (decoding it then raises the error that names it).
    """
    try:
        data = Path(path).read_bytes()
    except (OSError, ValueError):
        return None
    layout = _riff_pcm_layout(data)
    return data if layout is not None and layout[:3] == (1, int(sr), 16) else None


def _frames_soundfile(path: Path) -> tuple[int, int]:
    import soundfile as sf

    info = sf.info(str(path))
    header = wav_header_frames(path) if info.format in ("WAV", "WAVEX") else None
    if header is not None and header[0] > header[1]:
        raise _AudioDefect(f"truncated: the WAV header promises {header[0]} frames, the file holds {header[1]}")
    if info.frames <= 0:
        return info.frames, info.samplerate
    float_data = info.subtype in ("FLOAT", "DOUBLE")
    with sf.SoundFile(str(path)) as handle:
        # Decode the head and the tail: a header can be valid over a truncated or garbled body.
        blocks = [(0, min(info.frames, PROBE_BLOCK))]
        if info.frames > PROBE_BLOCK:
            blocks.append((info.frames - PROBE_BLOCK, PROBE_BLOCK))
        if float_data:  # only float files can hold NaN or infinite samples: read them whole
            blocks = [(0, info.frames)]
        for start, count in blocks:
            try:
                handle.seek(start)
                data = handle.read(frames=count, dtype="float32", always_2d=True)
            except Exception as exc:  # noqa: BLE001 - libsndfile's errors are RuntimeErrors of several kinds
                raise _AudioDefect(
                    f"truncated or damaged: frames {start}-{start + count} of {info.frames} do not "
                    f"decode ({type(exc).__name__}: {exc})"
                ) from None
            if data.shape[0] < count:
                raise _AudioDefect(
                    f"truncated: {info.frames} frames promised, frames from {start + data.shape[0]} on are missing"
                )
            bad = ~np.isfinite(data)
            if bad.any():
                first = start + int(np.argmax(bad.any(axis=1)))
                raise _AudioDefect(f"{int(bad.sum())} NaN or infinite samples (first at frame {first})")
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

    A file up to :data:`FAST_PROBE_BYTES` is read once: hashed, and when it is a plain integer-PCM RIFF WAVE file with
    a whole data chunk (:func:`_riff_pcm_layout`) it is ``ok`` with no decoder opened; any other file goes through
    libsndfile, then librosa.

    Args:
        path: The file to check.

    Returns:
        An :class:`AudioProbe`: ``missing`` (no such file), ``empty`` (zero bytes or zero samples),
        ``corrupt`` (neither soundfile nor librosa decodes it, or it is truncated, or it holds NaN or infinite
        samples) or ``ok``.
    """
    path = Path(path)
    try:
        if not path.is_file():
            return AudioProbe(AudioStatus.missing, None, f"no file at {path}")
        size = path.stat().st_size
    except (OSError, ValueError) as exc:  # a name too long, an embedded NUL
        return AudioProbe(AudioStatus.missing, None, f"no usable file at {path} ({type(exc).__name__}: {exc})")
    if size == 0:
        return AudioProbe(AudioStatus.empty, None, f"{path} has zero bytes")
    if size <= FAST_PROBE_BYTES:
        # One read: hash the bytes, and a plain integer-PCM wav (what the kit's builders write) needs no decoder.
        try:
            data = path.read_bytes()
        except OSError as exc:
            return AudioProbe(AudioStatus.corrupt, None, f"{path} cannot be read ({type(exc).__name__}: {exc})")
        digest = hashlib.sha256(data).hexdigest()
        layout = _riff_pcm_layout(data)
        del data
        if layout is not None:
            found = AudioProbe(AudioStatus.ok, digest, None, layout[3] / layout[1])
            if VERIFY_FAST_PROBE:
                _verify_fast_probe(path, found)
            return found
    else:
        try:
            digest = sha256_file(path)
        except OSError as exc:
            return AudioProbe(AudioStatus.corrupt, None, f"{path} cannot be read ({type(exc).__name__}: {exc})")
    return _probe_decoding(path, digest)


FAST_PROBE_BYTES = 64 << 20
"""Files up to this size are read once by :func:`probe_audio` (hashed, and a plain PCM wav checked from its bytes)."""

VERIFY_FAST_PROBE = os.environ.get("AIRBENCH_NB_VERIFY_FAST_READ") == "1"
"""Check every probe of a plain PCM wav against the decoders' (the test suite sets ``AIRBENCH_NB_VERIFY_FAST_READ=1``,
so that every clip its tests probe checks the two ways agree)."""


def _verify_fast_probe(path: Path, found: AudioProbe) -> None:
    checked = _probe_decoding(path, found.sha256 or "")
    if checked != found:
        raise AssertionError(f"{path}: the plain wav check found {found!r}, the decoders {checked!r}")


def _probe_decoding(path: Path, digest: str) -> AudioProbe:
    """:func:`probe_audio`'s verdict from the decoders on a file that exists, is not empty and hashes to ``digest``."""
    errors = []
    for reader in (_frames_soundfile, _frames_librosa):
        try:
            frames, sr = reader(path)
        except _AudioDefect as exc:
            return AudioProbe(AudioStatus.corrupt, digest, f"{path} is damaged: {exc}")
        except Exception as exc:  # noqa: BLE001 - any decoder failure means "corrupt", reported below
            errors.append(f"{reader.__name__.removeprefix('_frames_')}: {type(exc).__name__}: {exc}")
            continue
        if frames <= 0:
            return AudioProbe(AudioStatus.empty, digest, f"{path} decodes to zero samples")
        return AudioProbe(AudioStatus.ok, digest, None, frames / sr)
    detail = f"{path} cannot be decoded ({'; '.join(errors)})"
    logger.debug(detail)
    return AudioProbe(AudioStatus.corrupt, digest, detail)


ProbeKey = tuple[str, int, int, int, int, int]
"""What a probe is remembered by: the file's path, size, modification and change times (ns), inode and device."""

_PROBED: dict[ProbeKey, AudioProbe] = {}
_PROBED_LOCK = threading.Lock()
PROBE_CACHE_SIZE = 200_000
"""Most probe results :func:`probe_audio_cached` keeps in memory (the oldest are forgotten first)."""
PROBE_STORE = "audio_probes.sqlite"
"""File of the probes kept across processes, in the kit's cache folder (:func:`airbench_nb.cache.cache_root`)."""


def _probe_key(path: Path) -> ProbeKey | None:
    """The key a probe of ``path`` is remembered by; None when the file cannot be ``stat``-ed (it is missing)."""
    try:
        info = path.stat()
    except (OSError, ValueError):
        return None
    return (str(path), info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev)


def _remember(key: ProbeKey, found: AudioProbe) -> None:
    with _PROBED_LOCK:
        if len(_PROBED) >= PROBE_CACHE_SIZE:
            del _PROBED[next(iter(_PROBED))]
        _PROBED[key] = found


def forget_probes() -> None:
    """Forget the probes remembered in this process (the kept ones in the cache folder stay; benchmarks)."""
    with _PROBED_LOCK:
        _PROBED.clear()


def probe_audio_cached(path: str | Path) -> AudioProbe:
    """:func:`probe_audio`, remembered by the file's path, size, modification and change times (ns), inode and device.

    A file replaced, rewritten, touched or chmod-ed since it was probed is probed again (the change time cannot be set
    back by a user, unlike the modification time); a file that cannot be ``stat``-ed is
    probed every time (that is cheap: it is missing). Never raises for a bad file.
    """
    path = Path(path)
    key = _probe_key(path)
    if key is None:
        return probe_audio(path)
    with _PROBED_LOCK:
        found = _PROBED.get(key)
    if found is None:
        found = probe_audio(path)
        _remember(key, found)
    return found


def probe_audio_many(paths: Sequence[Path], workers: int = 4, keep: bool = True) -> list[AudioProbe]:
    """:func:`probe_audio_cached` of many files, in threads, also remembered across processes.

    With ``keep``, probes are kept in :data:`PROBE_STORE` in the kit's cache folder, by the same key as in memory: a
    run resumed in a new process (or a second command on the same data) reads the probes of unchanged files from there
    instead of hashing and decoding every clip again. A cache folder that cannot be used is only logged: every file
    is then probed. Never raises for a bad file.

    Returns:
        One probe per path, in order.
    """
    keys = [_probe_key(Path(p)) for p in paths]
    out: list[AudioProbe | None] = [None] * len(paths)
    with _PROBED_LOCK:
        for index, key in enumerate(keys):
            if key is not None:
                out[index] = _PROBED.get(key)
    wanted = {key for key, found in zip(keys, out, strict=True) if key is not None and found is None}
    store = _ProbeStore.open() if keep and wanted else None
    kept = store.get_many(wanted) if store is not None else {}
    for key, found in kept.items():
        _remember(key, found)
    todo = [i for i, found in enumerate(out) if found is None and (keys[i] is None or keys[i] not in kept)]

    def probe(indices: list[int]) -> list[AudioProbe]:
        return [probe_audio(Path(paths[index])) for index in indices]

    # One slice of the files per thread (a task per file costs more than a plain wav's probe): reading and hashing
    # release the GIL, so threads up to the number of cores run side by side; more only wait for it.
    threads = max(1, min(workers, os.cpu_count() or 1, len(todo)))
    fresh: dict[int, AudioProbe] = {}
    if threads == 1:
        fresh.update(zip(todo, probe(todo), strict=True))
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            slices = [todo[start::threads] for start in range(threads)]
            for indices, found in zip(slices, pool.map(probe, slices), strict=True):
                fresh.update(zip(indices, found, strict=True))
    new: dict[ProbeKey, AudioProbe] = {}
    for index, key in enumerate(keys):
        if out[index] is not None:
            continue
        found = kept[key] if key is not None and key in kept else fresh[index]
        out[index] = found
        if key is not None and index in fresh:
            _remember(key, found)
            new[key] = found
    if store is not None:
        store.put_many(new)
        store.close()
    return [found for found in out if found is not None]


class _ProbeStore:
    """The probes kept across processes: a SQLite table in the kit's cache folder (see :func:`probe_audio_many`)."""

    CHUNK = 500
    """Keys looked up per query."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    @classmethod
    def open(cls) -> _ProbeStore | None:
        """The store, or None (logged) when the cache folder cannot hold it."""
        from airbench_nb.cache import cache_root

        path = cache_root() / PROBE_STORE
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=30.0)
            with contextlib.suppress(sqlite3.Error):
                db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS probes_v1 (path TEXT, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, "
                "ino INTEGER, dev INTEGER, status TEXT, sha256 TEXT, detail TEXT, duration_s REAL, "
                "PRIMARY KEY (path, size, mtime_ns, ctime_ns, ino, dev))"
            )
            return cls(db)
        except (OSError, sqlite3.Error) as exc:
            logger.info("audio probes not kept in %s (%s: %s): every clip is probed", path, type(exc).__name__, exc)
            return None

    def get_many(self, keys: set[ProbeKey]) -> dict[ProbeKey, AudioProbe]:
        """The kept probes of these keys (absent keys are absent); {} when the store cannot be read."""
        found: dict[ProbeKey, AudioProbe] = {}
        by_path: dict[str, list[ProbeKey]] = {}
        for key in keys:
            by_path.setdefault(key[0], []).append(key)
        names = list(by_path)
        try:
            for start in range(0, len(names), self.CHUNK):
                chunk = names[start : start + self.CHUNK]
                rows = self.db.execute(
                    f"SELECT * FROM probes_v1 WHERE path IN ({','.join('?' * len(chunk))})",  # noqa: S608 - placeholders
                    chunk,
                ).fetchall()
                for path, size, mtime, ctime, ino, dev, status, sha256, detail, duration in rows:
                    key = (path, size, mtime, ctime, ino, dev)
                    if key in keys:
                        found[key] = AudioProbe(AudioStatus(status), sha256, detail, duration)
        except (sqlite3.Error, ValueError) as exc:
            logger.info("audio probes kept could not be read (%s: %s): probing again", type(exc).__name__, exc)
            return {}
        return found

    def put_many(self, probes: dict[ProbeKey, AudioProbe]) -> None:
        """Keep these probes (a failure is only logged)."""
        if not probes:
            return
        rows = [(*key, p.status.value, p.sha256, p.detail, p.duration_s) for key, p in probes.items()]
        try:
            with self.db:
                self.db.executemany("INSERT OR REPLACE INTO probes_v1 VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        except sqlite3.Error as exc:
            logger.info("audio probes could not be kept (%s: %s)", type(exc).__name__, exc)

    def close(self) -> None:
        """Close the connection."""
        self.db.close()


def load_audio(path: str | Path, sr: int = TARGET_SR) -> np.ndarray:
    """Load an audio file as mono float32 at ``sr`` Hz (downmixed and resampled when needed).

    Args:
        path: A wav, flac or mp3 file (anything soundfile or librosa reads).
        sr: Target sample rate in Hz.

    Returns:
        A 1-D float32 array.

    Raises:
        AudioError: If the file is missing, empty, undecodable, truncated (a WAV shorter than its header says), or
            holds NaN/inf samples.
    """
    import librosa
    import soundfile as sf

    path = Path(path)
    if not path.is_file():
        raise AudioError(f"{path}: no such audio file")
    if path.stat().st_size == 0:
        raise AudioError(f"{path}: audio file is empty (0 bytes)")
    header = wav_header_frames(path)
    if header is not None and header[0] > header[1]:
        raise AudioError(f"{path}: truncated: the WAV header promises {header[0]} frames, the file holds {header[1]}")
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
        data = librosa.resample(np.asarray(data, dtype=np.float32), orig_sr=int(file_sr), target_sr=sr)
    return np.ascontiguousarray(data, dtype=np.float32)


def write_wav(path: str | Path, samples: np.ndarray, sr: int = TARGET_SR) -> Path:
    """Write mono samples as a 16-bit PCM wav file, creating parent folders.

    Args:
        path: Destination file.
        samples: 1-D float array in [-1, 1]; samples beyond full scale are clipped (with a warning).
        sr: Sample rate in Hz.

    Returns:
        The path written.

    Raises:
        AudioError: If the samples are not 1-D or hold NaN/inf, or the file cannot be written (``path`` is a folder,
            or under a file).
    """
    import soundfile as sf

    samples = np.asarray(samples)
    if samples.ndim != 1:
        raise AudioError(f"{path}: expected mono (1-D) samples, got shape {samples.shape}")
    if not np.all(np.isfinite(samples)):
        raise AudioError(f"{path}: refusing to write NaN or infinite samples")
    path = Path(path)
    if path.is_dir():
        raise AudioError(f"{path}: is a folder; give the wav file's name")
    over = int(np.count_nonzero(np.abs(samples) > 1.0))
    if over:
        logger.warning("%s: %d samples beyond full scale were clipped to [-1, 1]", path, over)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sf.write(str(path), np.clip(samples, -1.0, 1.0), sr, subtype="PCM_16")
    except (OSError, RuntimeError) as exc:  # a parent that is a file, no permission (libsndfile: RuntimeError)
        raise AudioError(f"{path}: cannot write the wav file ({type(exc).__name__}: {exc})") from None
    return path


def check_samples(samples: np.ndarray, name: str = "audio", *, allow_silent: bool = False) -> np.ndarray:
    """Check that a signal is usable: mono (1-D), not empty, finite and (unless allowed) not all zero.

    Args:
        samples: The signal.
        name: What to call it in error messages (a path, ``source A``, ...).
        allow_silent: Accept an all-zero signal.

    Returns:
        The samples as a float array (float32 input stays float32; integers become float32).

    Raises:
        AudioError: For a 2-D (e.g. stereo) or empty signal, or NaN/inf samples.
        SilentAudioError: For an all-zero signal, unless ``allow_silent``.
    """
    samples = np.asarray(samples)
    if samples.ndim != 1:
        hint = " (stereo? downmix it, e.g. with load_audio or samples.mean(axis=1))" if samples.ndim == 2 else ""
        raise AudioError(f"{name}: expected mono 1-D samples, got an array of shape {samples.shape}{hint}")
    if samples.size == 0:
        raise AudioError(f"{name}: audio has zero samples")
    if not np.issubdtype(samples.dtype, np.floating):
        samples = samples.astype(np.float32)
    bad = ~np.isfinite(samples)
    if bad.any():
        first = int(np.argmax(bad))
        raise AudioError(f"{name}: {int(bad.sum())} NaN or infinite samples (first at index {first})")
    if not allow_silent and not np.any(samples):
        raise SilentAudioError(f"{name}: audio is all silent (every sample is zero)")
    return samples


def rms_dbfs(samples: np.ndarray) -> float:
    """RMS level in dBFS: ``20 log10(sqrt(mean(x**2)))`` with full scale 1.0 = 0 dBFS.

    Args:
        samples: A mono signal.

    Returns:
        The level in dB (``-inf`` for an all-zero signal).
    """
    x = np.asarray(samples, dtype=np.float64)
    power = float(np.mean(np.square(x))) if x.size else 0.0
    return 10.0 * np.log10(power) if power > 0 else float("-inf")


@dataclass(frozen=True)
class Loudness:
    """A loudness value and its unit."""

    value: float
    """The loudness (LUFS or dBFS, see ``unit``)."""
    unit: LoudnessUnit
    """``LUFS`` (ITU-R BS.1770 integrated) or ``dBFS`` (RMS fallback)."""


def lufs(samples: np.ndarray, sr: int = TARGET_SR) -> float:
    """ITU-R BS.1770-4 integrated loudness in LUFS, measured with pyloudnorm.

    Args:
        samples: A mono signal at least :data:`LUFS_BLOCK_S` long.
        sr: Its sample rate in Hz.

    Returns:
        The loudness in LUFS; ``-inf`` when every 400 ms block is under the -70 LUFS absolute gate.

    Raises:
        AudioError: If the clip is shorter than one gating block.
    """
    import pyloudnorm

    x = np.asarray(samples, dtype=np.float64)
    if x.size < int(np.ceil(LUFS_BLOCK_S * sr)):
        raise AudioError(
            f"clip of {x.size / sr:.3f} s is shorter than one {LUFS_BLOCK_S * 1000:.0f} ms BS.1770 gating block"
        )
    return float(pyloudnorm.Meter(sr, block_size=LUFS_BLOCK_S).integrated_loudness(x))


def lufs_applicable(samples: np.ndarray, sr: int = TARGET_SR) -> bool:
    """Whether a clip is long enough for BS.1770 gating (at least one 400 ms block)."""
    return np.asarray(samples).shape[0] >= int(np.ceil(LUFS_BLOCK_S * sr))


def loudness(
    samples: np.ndarray,
    sr: int = TARGET_SR,
    unit: Literal["auto", "LUFS", "dBFS"] = "auto",
    name: str = "audio",
) -> Loudness:
    """Loudness of a mono clip: LUFS (ITU-R BS.1770-4) when it can be gated, else RMS dBFS.

    With ``unit="auto"``, a clip shorter than one 400 ms gating block, or whose blocks all fall under the
    -70 LUFS absolute gate, is measured in dBFS RMS (see the module docstring); the result's ``unit`` says which.

    Args:
        samples: A mono signal.
        sr: Its sample rate in Hz.
        unit: ``auto``, or force ``LUFS`` or ``dBFS``.
        name: What to call the clip in error messages.

    Returns:
        A :class:`Loudness`.

    Raises:
        AudioError: For a stereo, empty or non-finite clip, or ``unit="LUFS"`` on a clip that cannot be gated.
        SilentAudioError: For an all-zero clip.
    """
    samples = check_samples(samples, name)
    if unit == "dBFS":
        return Loudness(rms_dbfs(samples), "dBFS")
    if unit not in ("auto", "LUFS"):
        raise ValueError(f"unit must be 'auto', 'LUFS' or 'dBFS', got {unit!r}")
    if lufs_applicable(samples, sr):
        value = lufs(samples, sr)
        if np.isfinite(value):
            return Loudness(value, "LUFS")
        if unit == "LUFS":
            raise AudioError(f"{name}: every 400 ms block is under the -70 LUFS absolute gate; no LUFS value")
    elif unit == "LUFS":
        raise AudioError(f"{name}: {samples.size / sr:.3f} s is too short for LUFS (needs {LUFS_BLOCK_S} s)")
    logger.debug("%s: measured in dBFS RMS (too short or too quiet for BS.1770 gating)", name)
    return Loudness(rms_dbfs(samples), "dBFS")


def audible_onset(
    samples: np.ndarray, sr: int = TARGET_SR, threshold_db: float = -35.0, frame_s: float = 0.01
) -> float:
    """Time of the first frame whose RMS is within ``threshold_db`` of the clip's loudest frame.

    Args:
        samples: A mono signal.
        sr: Its sample rate in Hz.
        threshold_db: Level relative to the loudest frame that counts as audible (negative dB).
        frame_s: Frame length in seconds (non-overlapping frames).

    Returns:
        Onset in seconds from the start of ``samples`` (a multiple of the frame length).

    Raises:
        AudioError: For a stereo, empty or non-finite clip.
        SilentAudioError: For an all-zero clip.
    """
    samples = check_samples(samples)
    frame = max(1, int(round(frame_s * sr)))
    n_frames = int(np.ceil(samples.size / frame))
    padded = np.zeros(n_frames * frame, dtype=np.float64)
    padded[: samples.size] = samples
    power = np.mean(np.square(padded.reshape(n_frames, frame)), axis=1)
    first = int(np.argmax(power >= power.max() * 10.0 ** (threshold_db / 10.0)))
    return first * frame / sr
