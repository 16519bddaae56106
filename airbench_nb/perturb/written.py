"""Writing a perturbed copy of a clip and measuring it on what was written.

:func:`write_perturbed` writes the perturbed clip as a 16-bit wav and measures it again from the files on disk:

* codec: the encoded file is kept beside the wav (``<stem>.mp3`` / ``<stem>.opus``) and measured from it;
* reverberation: the RIR is written beside it (``<stem>.rir.wav``, 16-bit) and its RT60 is measured from that file;
* speed, pitch, clipping, loudness: measured on the wav as read back.

:func:`perturb_file` does the same for an audio file (loaded as mono at 16 kHz, as every clip of the kit). A
builder turns the record into a derived item with :meth:`PerturbationRecord.meta` (the keys of
:data:`~airbench_nb.perturb.spec.PERTURBATION_META_KEYS`) and :func:`~airbench_nb.perturb.spec.perturbed_uid`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from airbench_nb.audio import TARGET_SR, check_samples, load_audio, loudness, sha256_file, write_wav
from airbench_nb.perturb.apply import CODEC_SUFFIXES, apply
from airbench_nb.perturb.measure import (
    LoudnessMeasured,
    Measured,
    PitchMeasured,
    ReverbMeasured,
    SpeedMeasured,
    measure_clipping,
    measure_loudness,
    measured_dict,
    pitch_ratio,
    schroeder_rt60,
)
from airbench_nb.perturb.spec import PERTURBATION_META_KEYS, Perturbation, PerturbError

logger = logging.getLogger(__name__)

RIR_SUFFIX = ".rir.wav"
"""Suffix of a reverberated clip's RIR file, after the wav's stem."""


@dataclass(frozen=True)
class PerturbationRecord:
    """A perturbed copy written to disk and what was measured on the written files."""

    spec: Perturbation
    """What was asked for."""
    seed: int
    """Seed of the random draws."""
    path: str
    """The written wav."""
    sha256: str
    """SHA-256 of the wav."""
    measured: Measured
    """Measured on the written files (module docstring)."""
    artifacts: tuple[str, ...] = ()
    """Other files written beside the wav: the encoded file of a codec, the RIR of a reverberation."""

    def meta(self, clean_uid: str) -> dict[str, Any]:
        """The keys a perturbed item adds to its clean item's meta (:data:`PERTURBATION_META_KEYS`)."""
        measured = measured_dict(self.measured)
        measured["seed"] = self.seed
        measured["artifacts"] = list(self.artifacts)
        values = (clean_uid, self.spec.name, self.spec.parameter, measured)
        return dict(zip(PERTURBATION_META_KEYS, values, strict=True))

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict."""
        out = dataclasses.asdict(self)
        out["spec"] = self.spec.text
        out["measured"] = measured_dict(self.measured)
        out["artifacts"] = list(self.artifacts)
        return out


def _read(path: Path, rate: int) -> np.ndarray:
    import soundfile as sf

    data, file_rate = sf.read(str(path), dtype="float64", always_2d=True)
    if file_rate != rate:
        raise PerturbError(f"{path}: written at {file_rate} Hz, expected {rate} Hz")
    return data[:, 0]


def write_perturbed(
    samples: np.ndarray, rate: int, spec: Perturbation, path: str | Path, seed: int = 0
) -> PerturbationRecord:
    """Perturb a clip, write it as a 16-bit wav at ``path`` and measure it on the written files.

    Args:
        samples: The clean clip (mono float, full scale 1.0).
        rate: Its sample rate in Hz.
        spec: The perturbation.
        path: The wav to write (folders are created); artifacts go beside it.
        seed: Seed of the random draws (the RIR).

    Returns:
        The :class:`PerturbationRecord`.

    Raises:
        AudioError: For an unusable clip or an unwritable path.
        PerturbError: For a sample rate the codec cannot write, or an encoder failure.
    """
    path = Path(path)
    if path.suffix.lower() != ".wav":
        raise PerturbError(f"{path}: a perturbed copy is written as a .wav file")
    x = check_samples(samples, f"{spec.text} input ({path})").astype(np.float64)
    artifacts: list[str] = []
    encoded = None
    if spec.family == "codec":
        assert spec.codec is not None
        encoded = path.with_name(path.stem + CODEC_SUFFIXES[spec.codec])
        artifacts.append(str(encoded))
    result = apply(x, rate, spec, seed, encoded_path=encoded)
    write_wav(path, result.samples, result.rate)
    written = _read(path, result.rate)
    measured: Measured
    if spec.family == "codec":
        measured = result.measured  # measured on the kept encoded file
    elif spec.family == "reverb":
        assert result.rir is not None and isinstance(result.measured, ReverbMeasured)
        rir_path = path.with_name(path.stem + RIR_SUFFIX)
        write_wav(rir_path, result.rir, result.rate)
        artifacts.append(str(rir_path))
        rt60, method = schroeder_rt60(_read(rir_path, result.rate), result.rate)
        before = loudness(x, rate, name=f"{spec.text} input")
        after = loudness(written, rate, before.unit, name=str(path))
        measured = ReverbMeasured(rt60, method, result.measured.rir_length_s, after.value - before.value)
    elif spec.family == "speed":
        measured = SpeedMeasured(x.size / written.size, x.size / rate, written.size / rate)
    elif spec.family == "pitch":
        ratio = pitch_ratio(x, written, rate)
        measured = PitchMeasured(ratio, 12.0 * math.log2(ratio), written.size / x.size)
    elif spec.family == "clipping":
        measured = measure_clipping(written, x, spec.parameter * float(np.max(np.abs(x))))
    else:
        assert isinstance(result.measured, LoudnessMeasured)
        measured = measure_loudness(written, rate, result.measured.clipped_share)
    logger.debug("%s: wrote %s, measured %s", spec.text, path, measured)
    return PerturbationRecord(spec, int(seed), str(path), sha256_file(path), measured, tuple(artifacts))


def perturb_file(
    source: str | Path, target: str | Path, spec: Perturbation, seed: int = 0, *, rate: int = TARGET_SR
) -> PerturbationRecord:
    """Load an audio file as mono at ``rate`` Hz and write its perturbed copy with :func:`write_perturbed`.

    Raises:
        AudioError: If the source is missing, undecodable, empty, silent or holds NaN/inf samples.
        PerturbError: As :func:`write_perturbed`.
    """
    return write_perturbed(load_audio(source, sr=rate), rate, spec, target, seed)
