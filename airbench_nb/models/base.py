"""The interface every model backend implements, and what flows through it.

The prompt protocol. A :class:`Prompt` carries every clip of its item, in the order the question names them
(:attr:`Prompt.audios`; :attr:`Prompt.audio` is the first, for code that takes one), and, for a later turn of a
multi-turn item, the conversation so far (:attr:`Prompt.history`: each earlier turn's text and the model's own
answer to it). A backend sends the clips as audio parts, in order, at the start of the first user message, then that
turn's text; then each earlier answer as an assistant message and each later turn's text as a user message
(:func:`chat_messages`). A backend that cannot take several clips answers such a prompt with an error of its own
(``"<family> takes one clip per prompt; this item has 2"``), never an exception.

Decoding (:class:`GenerationParams`) is greedy by default. When no length bound is given, each item gets the bound of
its kind (:func:`default_max_new_tokens`): a Foundation answer is a letter, a Chat answer a few sentences, a
chain-of-thought answer a paragraph.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from airbench_nb.records import ChatItem, FoundationItem, OptionProbs, RankedLabel, prompt_without_audio

logger = logging.getLogger(__name__)

DEFAULT_MAX_NEW_TOKENS: dict[str, int] = {
    "foundation": 64,
    "chat": 512,
    "cot": 512,
    "transcription": 256,
    "scene": 64,
    "events": 128,
    "joint": 384,
    "sseu-cot": 1024,
    "translation": 256,
    "caption": 96,
    "speech_generation": 512,
    "sound_source": 64,
    "sound_source_open": 128,
}
"""Length bound used when none is given: ``foundation`` (the answer is a letter, perhaps with its option's text or a
short sentence), ``chat`` (one answer of a few sentences, per turn), ``cot`` (any item under the chain-of-thought
prompt set, whose answer reasons before it concludes); for reference-scored items, by kind (``transcription``: a
transcript of up to about 30 s of speech; ``scene``; ``events``; ``joint``: the three labelled lines), and
``sseu-cot`` for a joint item asked in five steps; ``translation``, ``caption`` (one sentence) and
``speech_generation`` (a spoken answer's text, for models that write one beside the audio); ``sound_source`` (a letter,
as Foundation) and ``sound_source_open`` (a list of the sounds heard). An explicit
``max_new_tokens`` overrides them all."""


def default_max_new_tokens(item: FoundationItem | ChatItem, prompt_set: str | None = None) -> int:
    """The length bound of an item when none is given (see :data:`DEFAULT_MAX_NEW_TOKENS`).

    Args:
        item: The item.
        prompt_set: Name of the prompt set (``cot`` asks for reasoning first: the longer bound).
    """
    kind = getattr(item, "kind", "chat")
    if getattr(item, "prompting_mode", None) == "sseu-cot":  # a reference item asked in SSEU's chain of thought
        return DEFAULT_MAX_NEW_TOKENS["sseu-cot"]
    if prompt_set == "cot":
        return max(DEFAULT_MAX_NEW_TOKENS["cot"], DEFAULT_MAX_NEW_TOKENS.get(kind, 0))
    return DEFAULT_MAX_NEW_TOKENS.get(kind, DEFAULT_MAX_NEW_TOKENS["chat"])


@dataclass(frozen=True)
class GenerationParams:
    """Decoding parameters shared by all backends."""

    max_new_tokens: int | None = None
    """Upper bound on generated tokens (per turn); None: the bound of each item's kind
    (:func:`default_max_new_tokens`)."""
    temperature: float = 0.0
    """0 means greedy decoding (the default: deterministic answers)."""
    top_p: float = 1.0
    """Nucleus sampling mass (used only when ``temperature > 0``)."""
    seed: int | None = None
    """Sampling seed, where the backend supports one."""

    @property
    def greedy(self) -> bool:
        """Whether decoding is greedy."""
        return self.temperature <= 0.0

    def for_item(self, item: FoundationItem | ChatItem, prompt_set: str | None = None) -> GenerationParams:
        """These parameters with the length bound filled in for ``item`` when none is set."""
        if self.max_new_tokens is not None:
            return self
        return replace(self, max_new_tokens=default_max_new_tokens(item, prompt_set))

    def as_record(self) -> dict[str, Any]:
        """What :attr:`~airbench_nb.records.Response.generation` records: every setting, and whether it was greedy."""
        return {
            "greedy": self.greedy,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
        }


@dataclass
class Prompt:
    """One item (one turn of it, for a multi-turn item) as a backend sees it."""

    item: FoundationItem | ChatItem
    """The item (baselines read its choices; the oracle its answer)."""
    text: str
    """The user text of this turn (instruction, question, options; for a multi-clip item, the line naming the
    clips first)."""
    audio: np.ndarray
    """Mono float32 samples at ``sample_rate``: the first clip (the only one of a one-clip item)."""
    audio_path: Path
    """The first clip's file, for backends that send files."""
    sample_rate: int = 16000
    """Sample rate of every clip in Hz."""
    system: str | None = None
    """Optional system text."""
    extra_audios: list[np.ndarray] = field(default_factory=list)
    """The clips after the first, in order (empty for a one-clip item); :attr:`audios` lists them all."""
    extra_audio_paths: list[Path] = field(default_factory=list)
    """The files of :attr:`extra_audios`, in order."""
    history: list[tuple[str, str]] = field(default_factory=list)
    """Multi-turn: each earlier turn as ``(user text as sent, the model's own answer)``, in order; empty for the
    first turn (and for a one-turn item)."""
    without_audio: bool = False
    """True for an audio-reliance control asked without audio (``no_audio``, ``description``): the backend sends no
    clip (:attr:`sent_audios` is empty). Only a backend that can prompt text alone (:func:`text_alone`) is given
    one; :attr:`audio` still holds the control's silence, for code that reads it regardless."""
    wavs: list[bytes | None] = field(default_factory=list)
    """For a backend that sends wav files as they are (:func:`wav_passthrough`): per clip in order, the file's bytes
    when it is already a 16-bit PCM mono wav at :attr:`sample_rate` (that clip's samples are then left empty: it is
    not decoded), None for a clip decoded as usual; empty for other backends."""

    @classmethod
    def of(
        cls,
        item: FoundationItem | ChatItem,
        text: str,
        audios: list[np.ndarray],
        paths: list[Path],
        **kwargs: Any,
    ) -> Prompt:
        """A prompt from every clip of an item in order (``audios[0]`` becomes :attr:`audio`)."""
        if not audios or len(audios) != len(paths):
            raise ValueError(f"{item.uid}: {len(audios)} clips for {len(paths)} paths; one or more of each expected")
        return cls(
            item=item,
            text=text,
            audio=audios[0],
            audio_path=paths[0],
            extra_audios=list(audios[1:]),
            extra_audio_paths=list(paths[1:]),
            **kwargs,
        )

    @property
    def uid(self) -> str:
        """The item's uid."""
        return self.item.uid

    @property
    def audios(self) -> list[np.ndarray]:
        """Every clip in order: :attr:`audio`, then :attr:`extra_audios`."""
        return [self.audio, *self.extra_audios]

    @property
    def sent_audios(self) -> list[np.ndarray]:
        """The clips a backend sends: every clip, or none for a prompt asked without audio."""
        return [] if self.without_audio else self.audios

    @property
    def audio_paths(self) -> list[Path]:
        """Every clip's file in order."""
        return [self.audio_path, *self.extra_audio_paths]

    @property
    def turn(self) -> int:
        """Index of the turn this prompt asks (0 for the first)."""
        return len(self.history)

    @property
    def turn_texts(self) -> list[str]:
        """The user text of every turn so far, this one last."""
        return [text for text, _ in self.history] + [self.text]

    def wav(self, index: int) -> bytes | None:
        """The wav file's bytes of clip ``index`` (0 for the first) when it is sent as it is, else None."""
        return self.wavs[index] if index < len(self.wavs) else None

    def with_audios(self, audios: list[np.ndarray], sample_rate: int | None = None) -> Prompt:
        """A copy holding other samples for every clip (e.g. resampled), in the same order (no wav bytes kept)."""
        if len(audios) != len(self.audios):
            raise ValueError(f"{self.uid}: {len(audios)} clips given for {len(self.audios)}")
        return replace(
            self,
            audio=audios[0],
            extra_audios=list(audios[1:]),
            sample_rate=self.sample_rate if sample_rate is None else sample_rate,
            wavs=[],
        )


def chat_messages(
    prompt: Prompt,
    audio_parts: list[dict[str, Any]],
    *,
    text_part: Callable[[str], Any] = lambda text: {"type": "text", "text": text},
    assistant: Callable[[str], Any] = lambda text: [{"type": "text", "text": text}],
) -> list[dict[str, Any]]:
    """The chat messages of a prompt, in the order of the protocol (see the module docstring).

    System text; the first user turn (every audio part in order, then its text); then, for each earlier turn, the
    model's answer and the next turn's text.

    Args:
        prompt: The prompt.
        audio_parts: One content part per clip sent (:attr:`Prompt.sent_audios`, none for a prompt asked without
            audio), in order (each backend's own form of an audio part).
        text_part: How a text content part is written.
        assistant: How an assistant message's content is written.

    Returns:
        The messages, ready for a chat template or a chat-completions request.
    """
    if len(audio_parts) != len(prompt.sent_audios):
        raise ValueError(f"{prompt.uid}: {len(audio_parts)} audio parts for {len(prompt.sent_audios)} clips sent")
    messages: list[dict[str, Any]] = []
    if prompt.system:
        messages.append({"role": "system", "content": prompt.system})
    texts = prompt.turn_texts
    messages.append({"role": "user", "content": [*audio_parts, text_part(texts[0])]})
    for (_, answer), text in zip(prompt.history, texts[1:], strict=True):
        messages.append({"role": "assistant", "content": assistant(answer)})
        messages.append({"role": "user", "content": [text_part(text)]})
    return messages


@dataclass(frozen=True)
class GeneratedAudio:
    """A spoken answer as a backend made it: mono float32 samples and their rate (the runner writes the file)."""

    samples: np.ndarray
    """Mono float32 samples in [-1, 1] (the runner clips what lies outside when it writes 16-bit PCM)."""
    sample_rate: int
    """Sample rate in Hz."""

    def __post_init__(self) -> None:
        samples = np.asarray(self.samples, dtype=np.float32)
        if samples.ndim != 1:
            raise ValueError(f"generated audio must be mono (1-D), got shape {samples.shape}")
        if not np.all(np.isfinite(samples)):
            raise ValueError("generated audio holds NaN or infinite samples")
        if isinstance(self.sample_rate, bool) or int(self.sample_rate) != self.sample_rate or self.sample_rate <= 0:
            raise ValueError(f"generated audio needs a positive whole sample rate, got {self.sample_rate!r}")
        object.__setattr__(self, "samples", samples)
        object.__setattr__(self, "sample_rate", int(self.sample_rate))

    @classmethod
    def from_wav(cls, data: bytes) -> GeneratedAudio:
        """Decode an encoded audio file (wav, flac, ogg: what libsndfile reads); several channels are averaged.

        Raises:
            ValueError: When the bytes are not a readable audio file (naming libsndfile's reason).
        """
        import io

        import soundfile as sf

        try:
            samples, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
        except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
            raise ValueError(f"not a readable audio file ({len(data)} bytes): {exc}") from None
        return cls(samples.mean(axis=1), int(rate))

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return self.samples.size / self.sample_rate


@dataclass
class Generation:
    """A backend's output for one prompt: text (and, for a model that speaks, audio), or an error for this item."""

    text: str | None = None
    """Generated text (for a spoken answer: what the model says it said, when it says); None on failure."""
    audio: GeneratedAudio | None = None
    """The spoken answer of a model that answers with audio (:attr:`~airbench_nb.records.Response.audio` once
    written); None for a text answer."""
    error: str | None = None
    """Why this item failed; None on success."""
    input_tokens: int | None = None
    """Prompt tokens, when known."""
    output_tokens: int | None = None
    """Generated tokens, when known."""
    ranking: list[RankedLabel] = field(default_factory=list)
    """A ranked-list model's task classes, best first (tiers B and C; ``text`` is the first), written into
    :attr:`~airbench_nb.records.Response.ranking`; empty for text answers."""
    option_probs: OptionProbs | None = None
    """A single-choice item's option-letter probabilities at the answer's first position, written into
    :attr:`~airbench_nb.records.Response.option_probs`; None when the backend gives none."""


@runtime_checkable
class AudioLM(Protocol):
    """A model under test: turns a batch of prompts into one :class:`Generation` each, in order.

    A failure that concerns one item is returned as ``Generation(error=...)`` for that item; an exception means
    the whole batch failed (the runner records it for every item of the batch and goes on). Prompts may carry
    several clips and a conversation so far (see the module docstring); ``params.max_new_tokens`` may be None, which
    means each prompt's :func:`default_max_new_tokens`.
    """

    spec: str
    """The spec string the model was made from (``hf:...``, ``openai:...``, ``baseline:...``)."""
    batch_size: int
    """How many prompts the backend takes per call."""
    kinds: frozenset[str] | None
    """The item kinds the model serves (``foundation``, ``chat``, ``transcription``, ...); None: every kind, through
    the prompt sets (an LALM). A specialist names its own (an ASR model: ``{"transcription"}``); the runner sends it
    no other item, and counts those as not applicable (never an error, never scored). A backend without the attribute
    serves every kind (:func:`serves`). A backend may also have ``settings``, a dict of its own decoding settings
    (beam size, device, compute type...), which the runner records in each response's ``generation["backend"]``,
    and ``applies(item) -> str | None``, which refuses single items of a kind it serves (a multilingual Whisper
    answers the Spoken_Language_Identification items of ``foundation``, not the others): the reason when it does
    not answer the item, None when it does (:func:`not_applicable_reason`), ``text_alone``, true when it can be
    prompted without audio (:func:`text_alone`; the audio-reliance controls ``no_audio`` and ``description``), and
    ``samples_vary``, false for a deterministic backend whose answer no temperature or seed changes
    (:func:`samples_vary`: ``infer --samples K`` asks it once)."""

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        """Answer a batch of prompts."""
        ...

    def close(self) -> None:
        """Release resources (GPU memory, HTTP sessions)."""
        ...


def served_kinds(model: object) -> frozenset[str] | None:
    """The item kinds a model serves (its ``kinds``; None, every kind, when it has none)."""
    kinds = getattr(model, "kinds", None)
    return None if kinds is None else frozenset(kinds)


def serves(model: object, kind: str) -> bool:
    """Whether a model answers items of ``kind`` (see :attr:`AudioLM.kinds`)."""
    kinds = served_kinds(model)
    return kinds is None or kind in kinds


def reads_audio(model: object) -> bool:
    """Whether a backend reads the samples of its prompts' clips (its ``reads_audio`` attribute; True when it has none).

    A baseline that answers from the item alone (``oracle``, ``random``, ``first``, ``text-prior``) does not: the
    runner then gives it empty arrays in place of the decoded clips (the files are still probed, so an unusable clip
    is still a data defect), which saves decoding every clip once per such model.
    """
    return bool(getattr(model, "reads_audio", True))


def wav_passthrough(model: object) -> int | None:
    """The sample rate at which a backend takes 16-bit PCM mono wav files as they are (its ``wav_passthrough``).

    None (a backend that does not say) for every backend that needs samples. An API backend sending wav (``openai:``)
    says 16000: the runner then reads a clip that is already such a file as bytes into :attr:`Prompt.wavs`, with no
    decoding, resampling or encoding again (:func:`~airbench_nb.audio.pcm16_wav_bytes`); any other clip is decoded.
    """
    rate = getattr(model, "wav_passthrough", None)
    return int(rate) if isinstance(rate, int) and not isinstance(rate, bool) and rate > 0 else None


def warm_up(model: object) -> None:
    """Let a backend start, in the background, what its first answer needs (its ``warm_up()``, when it has one).

    The runner calls it before it checks the audio, so that this setup overlaps the check instead of delaying the
    first request: an ``openai:`` model makes its HTTP client there (a TLS context, about 40 ms). A backend without
    ``warm_up`` needs nothing of the kind. It returns at once and raises nothing: a failure (a missing key) is the
    first request's to report.
    """
    warm = getattr(model, "warm_up", None)
    if callable(warm):
        warm()


def overlaps_batches(model: object) -> bool:
    """Whether the runner may ask a backend's next batch while one is in flight (its ``overlaps_batches``).

    False (a backend that does not say) for every backend that computes its answers itself: one batch at a time. An
    API backend whose client bounds the requests in flight over every call (``openai:`` with one endpoint) says True:
    the runner then reads the next batch's clips and sends its requests while the last answers of a batch come back,
    so that the requests in flight stay near ``concurrency`` instead of draining at every batch's end.
    """
    return getattr(model, "overlaps_batches", False) is True


def first_batch_size(model: object, batch_size: int) -> int:
    """How many items the runner puts in a backend's first batch (its ``first_batch_size``; ``batch_size`` without).

    Only a backend whose batches overlap (:func:`overlaps_batches`) says fewer: its first requests then go out as soon
    as that many clips are read, the next batch being read while they are asked.
    """
    value = getattr(model, "first_batch_size", None)
    return max(1, min(int(value), batch_size)) if isinstance(value, int) and overlaps_batches(model) else batch_size


def samples_vary(model: object) -> bool:
    """Whether a backend's answers change with the temperature and seed (its ``samples_vary``; True when it has none).

    A transformers or API model samples (True); a baseline, a classifier, CLAP or a TTS system answers the same
    whatever the temperature (False): ``infer --samples K`` stores one sample of such a backend, not K copies, and the
    stability analysis reports it as deterministic (:mod:`airbench_nb.runner.samples`,
    :mod:`airbench_nb.analysis.stability`). A backend that does not say is sampled K times: its consistency is then
    measured, never assumed.
    """
    return bool(getattr(model, "samples_vary", True))


WITHOUT_AUDIO_REASON = "cannot be prompted without audio"
"""Why a backend that cannot prompt text alone does not answer a ``no_audio`` or ``description`` control (after its
spec)."""


def text_alone(model: object) -> bool:
    """Whether a backend can be prompted with text alone (its ``text_alone`` attribute; False when it has none).

    An LALM behind a chat API or a transformers family whose processor takes a prompt without audio can; a model
    that reads only the audio (a transcriber, a tagger, the ``dsp`` baseline) cannot, and is ``n/a`` on the controls
    asked without audio (:func:`not_applicable_reason`).
    """
    return bool(getattr(model, "text_alone", False))


def not_applicable_reason(model: object, item: Any) -> str | None:
    """Why a model does not answer an item, or None when it does.

    Its kind first (:func:`serves`: ``"<spec> does not serve <kind> items"``), then, for a control asked without
    audio, whether the backend can prompt text alone (:func:`text_alone`: ``"<spec> cannot be prompted without
    audio"``), then the backend's own ``applies(item)`` when it has one (a specialist that serves a kind for some
    items only: its reason, or None). A backend without ``applies`` answers every item of the kinds it serves.

    Args:
        model: The backend.
        item: The item (its ``kind``; ``applies`` may read any field).
    """
    kind = getattr(item, "kind", "chat")
    spec = getattr(model, "spec", type(model).__name__)
    if not serves(model, kind):
        return f"{spec} does not serve {kind} items"
    if prompt_without_audio(item) and not text_alone(model):
        return f"{spec} {WITHOUT_AUDIO_REASON}"
    applies = getattr(model, "applies", None)
    if not callable(applies):
        return None
    reason = applies(item)
    return None if reason is None else str(reason)
