"""``tts:espeak-ng[:voice]``: a real offline text-to-speech system as a model under test (it answers with audio).

:class:`EspeakTTS` runs the ``espeak-ng`` program (formant synthesis: robotic, but real speech that an ASR model
transcribes) and serves ``speech_generation`` items only (:attr:`EspeakTTS.kinds`); the runner counts the items of
other kinds as not applicable, as it does for a transcriber. What it says:

- a ``tts`` item: the item's :attr:`~airbench_nb.records.SpeechGenerationItem.text`, in the item's ``language``;
- a ``spoken_answer`` item: :data:`NON_ANSWER`, always. A TTS system hears nothing and cannot answer a spoken
  question; it says so honestly, and never reads the accepted answers from the item (that would be the oracle).

The voice. The spec's voice (default :data:`DEFAULT_VOICE`) is an espeak-ng voice, with an optional variant after
``+`` (``en-us+f3``: a female variant; ``+m1``..``+m7`` male, ``+f1``..``+f5`` female). An item in another language
is spoken with that language's voice and the same variant (``de+f3`` for a German item); a language espeak-ng has
no voice for is an error for that item alone. The generation's text is what was spoken.

espeak-ng writes 22.05 kHz: the samples are resampled to :data:`SAMPLE_RATE` (16 kHz) with soxr's high quality, which
is what ``librosa.resample(res_type="soxr_hq")`` calls (called directly: importing librosa's resampling pulls in
scipy.signal, seconds per process), before the runner writes them as 16-bit wav beside the responses.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from functools import cached_property
from typing import Any

import numpy as np

from airbench_nb.models.base import GeneratedAudio, Generation, GenerationParams, Prompt
from airbench_nb.models.specs import TTS_ENGINE as ENGINE
from airbench_nb.models.specs import SpecError, check_tts_spec

logger = logging.getLogger(__name__)

DEFAULT_VOICE = "en-us"
"""The voice when the spec names none."""
NON_ANSWER = "I cannot answer questions."
"""What a TTS system says to a spoken question: an honest non-answer (it is scored as wrong, never as silence)."""
NON_ANSWER_VOICE = "en-us"
"""The voice language of :data:`NON_ANSWER` (it is English whatever the item's language)."""
SAMPLE_RATE = 16000
"""Rate of the audio handed to the runner, in Hz."""
TIMEOUT_S = 60.0
"""Seconds one espeak-ng call may take."""


def _voices(args: list[str]) -> list[tuple[str, str]]:
    """``(language, file)`` of each line of ``espeak-ng --voices[=...]``."""
    out = subprocess.run([ENGINE, *args], capture_output=True, text=True, timeout=TIMEOUT_S, check=True).stdout
    rows = []
    for line in out.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 5:
            rows.append((fields[1], fields[4]))
    return rows


class EspeakTTS:
    """espeak-ng behind the :class:`~airbench_nb.models.base.AudioLM` protocol (see the module docstring).

    Args:
        rest: The spec after ``tts:``: ``espeak-ng`` or ``espeak-ng:<voice>``.
        batch_size: Prompts per call from the runner (each is one espeak-ng process).
        speed: Words per minute (espeak-ng's ``-s``; its default is 175).

    Raises:
        SpecError: For a spec that is not ``espeak-ng[:voice]``, when espeak-ng is not installed, or for a voice or
            variant it does not know.
    """

    kinds: frozenset[str] | None = frozenset({"speech_generation"})
    """Item kinds served: a TTS system answers speech-generation items only (the others are not applicable)."""

    samples_vary: bool = False
    """Deterministic: espeak-ng speaks the same text the same way under every temperature and seed.
    ``infer --samples K`` stores one sample."""

    def __init__(self, rest: str, *, batch_size: int = 8, speed: int = 175) -> None:
        check_tts_spec(rest)
        self.spec = f"tts:{rest}"
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.speed = int(speed)
        if shutil.which(ENGINE) is None:
            raise SpecError(f"{self.spec}: the {ENGINE} program is not installed (apt-get install {ENGINE})")
        voice = rest.partition(":")[2] or DEFAULT_VOICE
        language, _, variant = voice.partition("+")
        self.language = language or DEFAULT_VOICE
        """The voice's language (``en-us``)."""
        self.variant = variant
        """The voice variant (``f3``), empty for the language's own voice."""
        if self.language not in self.languages:
            raise SpecError(f"{self.spec}: {ENGINE} has no voice {self.language!r} (see espeak-ng --voices)")
        if self.variant and self.variant not in self._variants:
            raise SpecError(f"{self.spec}: {ENGINE} has no variant {self.variant!r} (see espeak-ng --voices=variant)")

    @cached_property
    def languages(self) -> frozenset[str]:
        """The languages espeak-ng has a voice for (``en-us``, ``de``, ...)."""
        return frozenset(language for language, _ in _voices(["--voices"]))

    @cached_property
    def _variants(self) -> frozenset[str]:
        return frozenset(file.rpartition("/")[2] for _, file in _voices(["--voices=variant"]))

    @cached_property
    def version(self) -> str:
        """espeak-ng's version line."""
        out = subprocess.run([ENGINE, "--version"], capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        return out.stdout.split("  Data at")[0].strip()

    @property
    def settings(self) -> dict[str, Any]:
        """What the runner records with each response (``generation["backend"]``)."""
        return {
            "name": ENGINE,
            "version": self.version,
            "voice": self.language + (f"+{self.variant}" if self.variant else ""),
            "speed_wpm": self.speed,
            "sample_rate": SAMPLE_RATE,
            "non_answer": NON_ANSWER,
        }

    def voice_for(self, language: str) -> str:
        """The espeak-ng voice that speaks ``language`` (ISO 639-1) with this model's variant.

        Raises:
            ValueError: When espeak-ng has no voice for the language.
        """
        base = self.language
        if language != base.split("-")[0] and language != base:
            candidates = [language] if language in self.languages else []
            candidates += sorted(name for name in self.languages if name.startswith(f"{language}-"))
            if not candidates:
                raise ValueError(f"{ENGINE} has no voice for language {language!r}")
            base = candidates[0]
        return base + (f"+{self.variant}" if self.variant else "")

    def speak(self, text: str, voice: str) -> GeneratedAudio:
        """``text`` spoken by espeak-ng with ``voice``, resampled to :data:`SAMPLE_RATE`.

        Raises:
            RuntimeError: When espeak-ng fails or writes no audio (its message in one line).
        """
        import soxr

        command = [ENGINE, "-v", voice, "-s", str(self.speed), "--stdout"]
        done = subprocess.run(command, input=text.encode("utf-8"), capture_output=True, timeout=TIMEOUT_S, check=False)
        if done.returncode != 0 or not done.stdout:
            reason = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no audio written"])[0]
            raise RuntimeError(f"{ENGINE} -v {voice} failed (exit {done.returncode}): {reason}")
        spoken = GeneratedAudio.from_wav(done.stdout)
        if spoken.sample_rate == SAMPLE_RATE:
            return spoken
        samples = soxr.resample(spoken.samples, spoken.sample_rate, SAMPLE_RATE, quality="HQ")
        return GeneratedAudio(np.asarray(samples, dtype=np.float32), SAMPLE_RATE)

    def _one(self, prompt: Prompt) -> Generation:
        item = prompt.item
        if getattr(item, "kind", None) != "speech_generation":
            return Generation(error=f"{self.spec} speaks speech_generation items only, not {item.kind!r}")
        if getattr(item, "task", None) == "tts":
            text, language = str(getattr(item, "text", "") or ""), str(getattr(item, "language", "en"))
        else:  # spoken_answer: it cannot hear the question, and it never reads the accepted answers
            text, language = NON_ANSWER, NON_ANSWER_VOICE
        try:
            audio = self.speak(text, self.voice_for(language))
        except (ValueError, RuntimeError, subprocess.TimeoutExpired) as exc:
            return Generation(error=f"{self.spec}: {prompt.uid}: {exc}")
        return Generation(text=text, audio=audio)

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        """Speak each prompt's item (the prompt text and clip are not read); decoding parameters do not apply."""
        return [self._one(prompt) for prompt in prompts]

    def close(self) -> None:
        """Nothing to release (one process per utterance)."""
