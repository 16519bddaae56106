"""The back-transcription judge (``asr:<model spec>``): it listens to spoken answers and writes down what it hears.

A model that answers aloud (``tts:espeak-ng``, an ``openai:`` model asked for audio) leaves a wav file beside its
responses (:attr:`~airbench_nb.records.Response.audio`). This judge applies to ``speech_generation`` items: for each
response it finds the file in the run folder, checks it, and transcribes it with an ASR model loaded by
:func:`airbench_nb.models.load_model` (``asr:faster-whisper:tiny.en-bundled`` offline; ``asr:faster-whisper:large-v3``
or ``asr:hf:<Whisper checkpoint>`` on a GPU), in the item's ``language``. The verdict's ``raw`` is the transcript (the
speech-output metrics score it against the text asked for, or look for an accepted answer in it); nothing is scored
here.

A response that cannot be transcribed gets a verdict whose ``parse_error`` says why, without calling the ASR model
(each a counted failure; a missing, unreadable or changed file is judged again on rerun, once a resumed model run has
written it again: :data:`~airbench_nb.judge.base.AUDIO_GONE`; the others are properties of the answer itself):

- ``no audio output``: a text-only response (a model that cannot speak);
- ``too large (<n> bytes; over <bound> bytes)``: a file over
  :data:`~airbench_nb.runner.response_audio.MAX_SPOKEN_BYTES`, refused from its size before it is read;
- ``audio missing: <path>``; ``audio unreadable: <reason>``; :data:`~airbench_nb.runner.response_audio.AUDIO_CHANGED`
  (the file's SHA-256 is not the one recorded);
- ``audio corrupt: truncated: ...``: a WAV holding fewer frames than its header promises;
  ``too long (<s> s; over 600 s)``: over :data:`~airbench_nb.runner.response_audio.MAX_SPOKEN_S` by its header,
  before its samples are decoded;
- ``empty output (0 samples)``; ``audio corrupt: <n> NaN or infinite samples (first at <s> s)``;
  ``too short (<s> s; under 0.2 s)`` (:data:`MIN_DURATION_S`);
- ``silent output (peak -X dBFS)``: a peak under :data:`SILENCE_DBFS`.

Language. The answer is transcribed in its item's ``language`` (a multilingual Whisper is told it). An ASR model that
cannot take that language (an English-only Whisper and a German answer: it would write German speech down as English
words, a transcript that measures nothing) is asked for nothing: the verdict's ``parse_error`` is
``language not transcribed: <the model's reason>`` (:data:`LANGUAGE_REFUSED`), a counted failure, the same on rerun
until another ``asr:`` model is given. A backend says so through its ``language_problem(language)`` (the
``faster-whisper:`` backend: English-only checkpoints refuse every language but English; multilingual ones a language
Whisper does not know); a backend without that method is given every language.

An ASR call that fails is a verdict whose ``parse_error`` begins with ``judge call failed`` (retried on rerun, as an
LLM judge's). Verdicts are resumable as every judge's; a response written again (new audio: a new SHA-256 in its
:meth:`~airbench_nb.records.Response.content_hash`) makes its verdict stale.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from airbench_nb.judge.base import JUDGE_CALL_FAILED, BaseJudge, JudgeSpecError, Task
from airbench_nb.records import Verdict

logger = logging.getLogger(__name__)

SAMPLE_RATE = 16000
"""Rate the spoken answers are resampled to before transcription (Whisper's), in Hz."""
MIN_DURATION_S = 0.2
"""Spoken answers shorter than this (seconds) are failures, not transcribed."""
SILENCE_DBFS = -60.0
"""Spoken answers whose peak is under this level (dB relative to full scale) are silent: failures."""
NO_AUDIO = "no audio output"
"""The failure of a response without a spoken answer."""
AUDIO_CORRUPT = "audio corrupt"
"""How the reason begins for a spoken answer that is damaged as written (truncated, NaN or infinite samples)."""
LANGUAGE_REFUSED = "language not transcribed"
"""How the reason begins for a spoken answer in a language the ASR model cannot transcribe (then the model's reason)."""
ASR_MAX_NEW_TOKENS = 256
"""Length bound of a transcript (per 30 s window)."""


@dataclass(frozen=True)
class SpokenAnswer:
    """A spoken answer read from its file, checked, at :data:`SAMPLE_RATE`."""

    samples: np.ndarray
    """Mono float32 samples at :data:`SAMPLE_RATE`."""
    path: Path
    """The file."""
    duration_s: float
    """Length in seconds."""
    peak_dbfs: float
    """Peak level in dB relative to full scale (``-inf`` for all-zero samples)."""


def spoken_size_problem(path: Path) -> str | None:
    """``too large (<n> bytes; over <bound> bytes)`` for a file over :data:`MAX_SPOKEN_BYTES`, else None.

    Only ``stat``-s the file: a file that is not there is :func:`~airbench_nb.runner.response_audio.audio_problem`'s
    to report.
    """
    from airbench_nb.runner.response_audio import MAX_SPOKEN_BYTES

    try:
        size = path.stat().st_size
    except (OSError, ValueError):
        return None
    return f"too large ({size} bytes; over {MAX_SPOKEN_BYTES} bytes)" if size > MAX_SPOKEN_BYTES else None


def spoken_header_problem(path: Path) -> str | None:
    """What a spoken answer's header says is wrong with it, read before its samples are, or None.

    ``audio corrupt: truncated: ...`` for a WAV holding fewer frames than its header promises (libsndfile would
    read the part held as if it were the whole answer); ``too long (<s> s; over <bound> s)`` for an answer over
    :data:`~airbench_nb.runner.response_audio.MAX_SPOKEN_S`; ``audio unreadable: ...`` when the header does not parse.
    """
    import soundfile as sf

    from airbench_nb.audio import wav_header_frames
    from airbench_nb.runner.response_audio import MAX_SPOKEN_S

    try:
        info = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError, OSError) as exc:
        return f"audio unreadable: {exc}"
    rate = info.samplerate
    header = wav_header_frames(path) if info.format in ("WAV", "WAVEX") else None
    if header is not None and header[0] > header[1]:
        (promised, held) = header
        return (
            f"{AUDIO_CORRUPT}: truncated: the WAV header promises {promised} frames ({promised / rate:.1f} s), "
            f"the file holds {held} ({held / rate:.1f} s)"
        )
    duration = info.frames / rate if rate > 0 else 0.0
    return f"too long ({duration:.1f} s; over {MAX_SPOKEN_S:g} s)" if duration > MAX_SPOKEN_S else None


def read_spoken_answer(task: Task) -> SpokenAnswer | str:
    """The response's spoken answer, checked, or why it cannot be transcribed (the verdict's ``parse_error``).

    See the module docstring for the reasons, in the order they are checked. The file's size and header are
    checked before its bytes are hashed or its samples decoded: a huge file costs a ``stat``.
    """
    import soundfile as sf

    from airbench_nb.runner.response_audio import audio_problem, response_audio_file

    response = task.response
    if response.audio is None:
        return NO_AUDIO
    if task.run_folder is None:
        return "audio missing: no run folder was given to find it in"
    try:
        path = response_audio_file(task.run_folder, response)
    except ValueError as exc:
        return f"audio unreadable: {exc}"
    problem = spoken_size_problem(path) or audio_problem(task.run_folder, response) or spoken_header_problem(path)
    if problem is not None:
        return problem
    try:
        samples, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, OSError) as exc:
        return f"audio unreadable: {exc}"
    if samples.shape[0] == 0:
        return "empty output (0 samples)"
    bad = ~np.isfinite(samples)
    if bad.any():
        first = int(np.argmax(bad.any(axis=1)))
        return f"{AUDIO_CORRUPT}: {int(bad.sum())} NaN or infinite samples (first at {first / rate:.3f} s)"
    mono = samples.mean(axis=1)
    duration = mono.size / rate
    if duration < MIN_DURATION_S:
        return f"too short ({duration:.3f} s; under {MIN_DURATION_S:g} s)"
    peak = float(np.max(np.abs(mono)))
    peak_dbfs = 20.0 * np.log10(peak) if peak > 0 else float("-inf")
    if peak_dbfs < SILENCE_DBFS:
        return f"silent output (peak {peak_dbfs:.1f} dBFS)"
    if rate != SAMPLE_RATE:
        import soxr

        mono = soxr.resample(mono, rate, SAMPLE_RATE, quality="HQ").astype(np.float32)
    return SpokenAnswer(mono.astype(np.float32, copy=False), path, duration, peak_dbfs)


class ASRJudge(BaseJudge):
    """Transcribes spoken answers with an ASR model (see the module docstring).

    Args:
        spec: ``asr:<model spec>``.
        batch_size: Clips per ASR call.
        device: Device of the ASR model (``cpu``, ``cuda``; None: the backend's choice).
    """

    name: ClassVar[str] = "asr"
    takes_argument: ClassVar[bool] = True
    usage_text: ClassVar[str] = "asr:<model spec>"
    kinds: ClassVar[frozenset[str]] = frozenset({"speech_generation"})
    deterministic: ClassVar[bool] = True
    needs_audio: ClassVar[bool] = True

    def __init__(self, spec: str, *, batch_size: int = 8, device: str | None = None) -> None:
        """Keep the spec; the ASR model is loaded at the first transcription."""
        super().__init__(spec)
        self.model_spec = spec.partition(":")[2]
        """The ASR model's spec (``faster-whisper:tiny.en-bundled``)."""
        self.batch_size = int(batch_size)
        self.device = device
        self._model: Any = None
        self._calls = 0
        self._refusals: set[str] = set()

    @classmethod
    def check_spec(cls, argument: str) -> None:
        """Refuse an argument that is not a model spec (``asr:faster-whisper:...``, ``asr:hf:...``).

        Raises:
            JudgeSpecError: In one line.
        """
        from airbench_nb.models import SpecError, parse_spec

        try:
            parse_spec(argument)
        except SpecError as exc:
            raise JudgeSpecError(f"asr:{argument}: the ASR model spec is not understood: {exc}") from None

    def decide(self, task: Task) -> Verdict | None:
        """A failure verdict for a response that cannot be transcribed (see :func:`read_spoken_answer`), else None."""
        spoken = read_spoken_answer(task)
        return task.verdict(self.spec, parse_error=spoken) if isinstance(spoken, str) else None

    def _asr(self) -> Any:
        if self._model is None:
            from airbench_nb.models import load_model

            self._model = load_model(self.model_spec, batch_size=self.batch_size, device=self.device)
        return self._model

    def ask(self, tasks: Sequence[Task], *, batch_file: Path) -> list[Verdict]:
        """Transcribe each task's spoken answer, in the item's language; one verdict per task, in order."""
        from airbench_nb.models import GenerationParams, Prompt

        verdicts: list[Verdict | None] = [None] * len(tasks)
        prompts, where = [], []
        model = self._asr()
        for index, task in enumerate(tasks):
            spoken = read_spoken_answer(task)
            if isinstance(spoken, str):  # changed between decide and ask
                verdicts[index] = task.verdict(self.spec, parse_error=spoken)
                continue
            refused = self._language_refused(model, task)
            if refused is not None:
                verdicts[index] = task.verdict(self.spec, parse_error=refused)
                continue
            prompts.append(Prompt(item=task.item, text="", audio=spoken.samples, audio_path=spoken.path))
            where.append(index)
        params = GenerationParams(max_new_tokens=ASR_MAX_NEW_TOKENS)
        for start in range(0, len(prompts), self.batch_size):
            chunk = prompts[start : start + self.batch_size]
            try:
                generations = model.generate(chunk, params)
            except Exception as exc:  # noqa: BLE001 - the chunk fails, counted per task and retried on rerun
                logger.error("%s: %d transcriptions failed: %s: %s", self.spec, len(chunk), type(exc).__name__, exc)
                generations = [None] * len(chunk)
            self._calls += len(chunk)
            for offset, generation in enumerate(generations):
                task = tasks[where[start + offset]]
                if generation is None or generation.error is not None or generation.text is None:
                    reason = "the ASR model raised" if generation is None else generation.error or "no transcript"
                    verdict = task.verdict(self.spec, parse_error=f"{JUDGE_CALL_FAILED}: {reason}")
                else:
                    verdict = task.verdict(self.spec, raw=generation.text, output_tokens=generation.output_tokens)
                verdicts[where[start + offset]] = verdict
        return [v for v in verdicts if v is not None]

    def _language_refused(self, model: Any, task: Task) -> str | None:
        """``language not transcribed: <reason>`` when the model cannot take the item's language, else None."""
        problem = getattr(model, "language_problem", None)
        if not callable(problem):
            return None
        reason = problem(getattr(task.item, "language", None) or "en")
        if reason is None:
            return None
        if reason not in self._refusals:
            self._refusals.add(reason)
            logger.warning("%s: spoken answers not transcribed: %s", self.spec, reason)
        return f"{LANGUAGE_REFUSED}: {reason}"

    def estimate(self, tasks: Sequence[Task]) -> str:
        """The number of clips to transcribe, locally."""
        return f"{len(tasks)} spoken answers to transcribe with {self.model_spec}; runs locally, nothing to pay"

    def usage(self) -> dict[str, Any]:
        """Clips transcribed (no API)."""
        return {"transcriptions": self._calls}
