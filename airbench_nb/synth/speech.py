"""Speech from espeak-ng, resampled to 16 kHz mono float32.

espeak-ng voices are ``<language>+<variant>``: variants ``m1``..``m7`` are male, ``f1``..``f5`` female. At
default pitch, male variants have a median F0 of about 89-111 Hz and female ones 173-221 Hz in every language
tried (en-us, de, fr, es, it, ru, hi), so gender is measurable from the audio.
"""

from __future__ import annotations

import functools
import logging
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

SR = 16000
"""Output sample rate in Hz."""
LANGUAGES: dict[str, str] = {
    "en-us": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "ru": "Russian",
    "hi": "Hindi",
}
"""espeak-ng languages the kit uses, with their English names."""
MALE_VARIANTS = tuple(f"m{i}" for i in range(1, 8))
"""Male voice variants."""
FEMALE_VARIANTS = tuple(f"f{i}" for i in range(1, 6))
"""Female voice variants."""


class SpeechSynthesisError(RuntimeError):
    """espeak-ng is missing or failed."""


@functools.lru_cache(maxsize=1)
def espeak_binary() -> str:
    """Path of the espeak-ng executable.

    Raises:
        SpeechSynthesisError: With install instructions when espeak-ng is not on PATH.
    """
    path = shutil.which("espeak-ng")
    if path is None:
        raise SpeechSynthesisError(
            "espeak-ng is not installed: speech synthesis needs it. Install it with "
            "'apt-get install -y espeak-ng' (Debian/Ubuntu), 'brew install espeak-ng' or "
            "'conda install -c conda-forge espeak-ng', or run 'make setup' as root."
        )
    return path


def voice_gender(variant: str) -> str:
    """``male`` or ``female`` for an espeak-ng variant name (``m3``, ``f2``, ...)."""
    if variant in MALE_VARIANTS:
        return "male"
    if variant in FEMALE_VARIANTS:
        return "female"
    raise ValueError(f"unknown voice variant {variant!r}; use one of {', '.join(MALE_VARIANTS + FEMALE_VARIANTS)}")


def speak(text: str, language: str = "en-us", variant: str = "m3", rate: int = 160, pitch: int = 50) -> np.ndarray:
    """Synthesize ``text`` with espeak-ng.

    Args:
        text: What to say (plain text; espeak-ng's SSML is not enabled).
        language: espeak-ng language code (see :data:`LANGUAGES`).
        variant: Voice variant (``m1``..``m7``, ``f1``..``f5``).
        rate: Speaking rate in words per minute (espeak-ng ``-s``, 80-450).
        pitch: Pitch adjustment 0-99 (espeak-ng ``-p``; 50 is the voice's default).

    Returns:
        Mono float32 samples at 16 kHz with leading and trailing silence kept as espeak-ng makes it.

    Raises:
        SpeechSynthesisError: When espeak-ng is missing, rejects the voice, or produces no audio.
        ValueError: For empty text, an unknown variant, or out-of-range rate/pitch.
    """
    import librosa
    import soundfile as sf

    if not text.strip():
        raise ValueError("cannot synthesize empty text")
    # espeak-ng silently falls back to its default voice for an unknown variant, which would mislabel gender.
    voice_gender(variant)
    if not 80 <= rate <= 450:
        raise ValueError(f"rate must be 80-450 words per minute, got {rate}")
    if not 0 <= pitch <= 99:
        raise ValueError(f"pitch must be 0-99, got {pitch}")
    voice = f"{language}+{variant}"
    with tempfile.TemporaryDirectory(prefix="airbench-tts-") as tmp:
        out = Path(tmp) / "speech.wav"
        cmd = [espeak_binary(), "-v", voice, "-s", str(rate), "-p", str(pitch), "-w", str(out), "--", text]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired as exc:
            raise SpeechSynthesisError(f"espeak-ng timed out on voice {voice!r}") from exc
        if proc.returncode != 0 or not out.is_file() or out.stat().st_size <= 44:
            raise SpeechSynthesisError(
                f"espeak-ng failed for voice {voice!r} (exit {proc.returncode}): {proc.stderr.strip() or 'no audio'}"
            )
        samples, sr = sf.read(str(out), dtype="float32", always_2d=True)
    samples = samples.mean(axis=1)
    if sr != SR:
        samples = librosa.resample(samples, orig_sr=sr, target_sr=SR)
    if samples.size == 0 or not np.any(samples):
        raise SpeechSynthesisError(f"espeak-ng produced silence for voice {voice!r} and text {text!r}")
    return samples.astype(np.float32)
