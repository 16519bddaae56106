"""Spoken answers on disk: written beside a model's responses as 16-bit wav, recorded by hash, checked on reading.

A model that answers with audio (:attr:`~airbench_nb.models.base.Generation.audio`) gets its answer written to
:meth:`~airbench_nb.run_folder.RunFolder.response_audio_file` (``<model's responses folder>/audio/<uid>.wav``; a uid
that is not a safe file name gets its slug and a hash, so that no two items share a file: ``a/1`` and ``a_1`` never
overwrite each other's answer), durably (a temporary file, fsynced, then renamed), before its response record is
appended; the record holds a :class:`~airbench_nb.records.ResponseAudio` (the path relative to the model's
responses folder, the SHA-256 of the file's bytes, the rate and the duration), never the samples.
:func:`audio_problem` says what is wrong with a recorded answer's file (missing, changed since): a resumed run answers
such an item again, and the ASR judge reports it as the verdict's failure.
"""

from __future__ import annotations

import hashlib
import io
import logging
from pathlib import Path

import numpy as np

from airbench_nb.audio import sha256_file
from airbench_nb.models.base import GeneratedAudio
from airbench_nb.records import Response, ResponseAudio
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner.outputs import replace_durably

logger = logging.getLogger(__name__)

AUDIO_MISSING = "audio missing"
"""How the reason begins when a recorded answer's file is not there."""
AUDIO_CHANGED = "audio changed since it was written (sha256)"
"""The reason when a recorded answer's file no longer has the bytes it was written with."""
MAX_SPOKEN_S = 600.0
"""Longest spoken answer kept or transcribed, in seconds (10 minutes): a longer one is that item's failure."""
WAV_HEADER_BYTES = 44
"""Bytes of the header of the wav files written here."""
MAX_SPOKEN_BYTES = 256 * 1024 * 1024
"""Largest spoken-answer file read, in bytes (256 MiB: 10 minutes of 16-bit stereo at 96 kHz is 230 MB); a larger
file is refused from its size, before a byte of it is read."""


def wav_bytes(audio: GeneratedAudio) -> bytes:
    """The audio as a 16-bit PCM wav file's bytes (samples clipped to [-1, 1])."""
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, np.clip(audio.samples, -1.0, 1.0), audio.sample_rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def spoken_bound_problem(audio: GeneratedAudio) -> str | None:
    """Why a spoken answer is over the bounds, or None: such an answer is not kept.

    Returns:
        ``too long (<s> s; over 600 s)`` (:data:`MAX_SPOKEN_S`), ``too large (<n> bytes; over <bound> bytes)`` (its
        16-bit wav over :data:`MAX_SPOKEN_BYTES`), or None.
    """
    if audio.duration_s > MAX_SPOKEN_S:
        return f"too long ({audio.duration_s:.1f} s; over {MAX_SPOKEN_S:g} s)"
    size = WAV_HEADER_BYTES + 2 * audio.samples.size
    return f"too large ({size} bytes; over {MAX_SPOKEN_BYTES} bytes)" if size > MAX_SPOKEN_BYTES else None


def write_response_audio(folder: RunFolder, model: str, uid: str, audio: GeneratedAudio) -> ResponseAudio:
    """Write a spoken answer where the run folder keeps it, durably, and return its record.

    Args:
        folder: The run folder (its responses folder may be pointed elsewhere).
        model: The model's spec.
        uid: The item's uid.
        audio: The samples.

    Returns:
        The :class:`~airbench_nb.records.ResponseAudio` for :attr:`~airbench_nb.records.Response.audio`.

    Raises:
        OSError: When the file cannot be written.
        ValueError: For an answer over the bounds (:func:`spoken_bound_problem`); nothing is written.
    """
    problem = spoken_bound_problem(audio)
    if problem is not None:
        raise ValueError(problem)
    path = folder.response_audio_file(model, uid)
    data = wav_bytes(audio)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_durably(path, data)
    base = folder.response_audio_path(model, ".")
    return ResponseAudio(
        path=path.resolve().relative_to(base).as_posix(),
        sha256=hashlib.sha256(data).hexdigest(),
        sample_rate=audio.sample_rate,
        duration_s=round(audio.duration_s, 6),
    )


def response_audio_file(folder: RunFolder, response: Response) -> Path:
    """The file a response's audio record names.

    Raises:
        ValueError: When the response has no audio, or its path leaves the model's responses folder.
    """
    if response.audio is None:
        raise ValueError(f"{response.uid}: the response holds no audio")
    return folder.response_audio_path(response.model, response.audio.path)


def audio_problem(folder: RunFolder, response: Response) -> str | None:
    """What is wrong with a response's audio file, or None when it is there with the bytes recorded.

    Returns:
        ``"audio missing: <path>"``, :data:`AUDIO_CHANGED`, ``"audio unreadable: <reason>"`` (a path leaving the
        model's folder, a file that cannot be read), or None (also for a response without audio).
    """
    if response.audio is None:
        return None
    try:
        path = response_audio_file(folder, response)
        if not path.is_file():
            return f"{AUDIO_MISSING}: {path}"
        digest = sha256_file(path)  # in blocks: a large file is never held in memory
    except (OSError, ValueError) as exc:
        return f"audio unreadable: {exc}"
    return None if digest == response.audio.sha256 else AUDIO_CHANGED
