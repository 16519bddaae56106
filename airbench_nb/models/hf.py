"""The transformers backend: ``hf:<path or hub id>``.

:class:`HFAudioLM` loads a processor and a model, and answers prompts in batches: the prompts of a call are sorted by
audio length (longest first, so that an out-of-memory error shows at once and the batches pad little), cut into
chunks of ``batch_size``, left-padded and decoded greedily by default. A CUDA out-of-memory error halves the chunk
and retries, down to one item; an item that fails alone gets an error of its own and the others go on.

What differs between model families (the model class, how the processor is loaded, how a prompt becomes the
conversation the chat template renders, extra ``generate`` arguments) lives in a :class:`FamilyAdapter`, chosen from
the checkpoint's ``config.model_type``. A new family is one adapter class passed to :func:`register_adapter`; the
runner does not change. Families (each tested with a tiny random model built offline, :mod:`airbench_nb.models.tiny`,
answering a batch through the real processor and ``generate``):

Several clips are several audio parts of the first user message, in order; a multi-turn prompt is alternating
user and assistant messages (the model's own earlier answers), the protocol of :mod:`airbench_nb.models.base`.
A family whose processor takes one clip per prompt (:attr:`FamilyAdapter.max_clips`) answers a multi-clip prompt
with an error of its own.

- ``qwen2_audio``: Qwen2-Audio through its chat template, audio part first (``Audio 1:``, ``Audio 2:``, ...).
- ``qwen2_5_omni``: the thinker of Qwen2.5-Omni, text answers only. Without torchvision the full
  ``Qwen2_5OmniProcessor`` cannot be built; the adapter then composes the tokenizer and the feature extractor
  itself, the same token expansion for audio-only prompts.
- ``audioflamingo3``: Audio Flamingo 3 (``<sound>`` placeholder), audio padded to whole 30 s windows; one clip per
  prompt (its processor pairs each text with one audio).
- ``voxtral``: Voxtral through mistral-common's tokenizer (the ``[voxtral]`` extra), each clip sent as base64 WAV.
- ``whisper``: Whisper checkpoints (``WhisperForConditionalGeneration``), a transcriber: it serves ``transcription``
  items only (:attr:`FamilyAdapter.kinds`; the runner counts other kinds as not applicable), forced to transcribe
  in the item's language when the checkpoint is multilingual, up to 30 s per clip.

Any other model type is refused with one line naming the supported families; :data:`UNSUPPORTED` says why the
families the design names but this kit cannot run here (Granite Speech, Gemma 3n, Phi-4-multimodal) are left out.

Loading: ``device`` (``cpu``, ``cuda``, ``cuda:1``, or ``auto`` to spread a checkpoint larger than one GPU over all
of them with accelerate's ``device_map="auto"``, also the default when several GPUs are visible), ``dtype`` (the
checkpoint's own on CUDA, bfloat16 when it names none or the GPU lacks it; float32 on CPU), ``attn`` (transformers'
``attn_implementation``: ``sdpa``, ``flash_attention_2``, ``eager``; by default transformers picks SDPA where the
model supports it).

Option probabilities: for a single-choice item asked for a letter, the call also asks ``generate`` for the raw
logits of each step (``output_logits=True, return_dict_in_generate=True``) and records the option letters'
probabilities at the first generated position (:mod:`airbench_nb.models.option_probs`;
:attr:`Generation.option_probs <airbench_nb.models.base.Generation.option_probs>`), for calibration. The decoded
answer is the same as without them.

Loading from a local folder reads nothing from the network (``HF_HUB_OFFLINE=1`` is honoured throughout).
"""

from __future__ import annotations

import base64
import gc
import io
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from airbench_nb.models.base import Generation, GenerationParams, Prompt, chat_messages
from airbench_nb.models.option_probs import from_logits, letter_token_ids, option_letters

logger = logging.getLogger(__name__)

SAMPLE_RATE = 16000
"""Sample rate (Hz) the audio encoders of all supported families take; other rates are resampled."""

DTYPES: dict[str, torch.dtype] = {
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
    "half": torch.float16,
    "fp32": torch.float32,
    "float32": torch.float32,
    "float": torch.float32,
}
"""Names accepted for ``dtype``; None or ``auto`` means bfloat16 on CUDA and float32 on CPU."""

ITEM_ERRORS: tuple[type[Exception], ...] = (RuntimeError, ValueError, TypeError, IndexError, KeyError)
"""Errors that, raised while answering a chunk, are pinned on its items one by one instead of failing the call."""


def _left_pad(processor: Any) -> None:
    """Make the processor's tokenizer pad on the left (decoder-only generation needs it)."""
    tokenizer = getattr(processor, "tokenizer", processor)
    tokenizer.padding_side = "left"


def _is_local(path: str) -> bool:
    return Path(path).expanduser().is_dir()


class FamilyAdapter:
    """How one family of models is loaded, prompted and called.

    The default implementation is the generic transformers path: ``AutoProcessor``, ``AutoModelForMultimodalLM``,
    and the processor's chat template with an audio content part first. Subclasses override what their family does
    differently and are made known with :func:`register_adapter`.
    """

    name: ClassVar[str] = "base"
    """Family name (what ``family=`` takes); subclasses set their own."""
    model_types: ClassVar[tuple[str, ...]] = ()
    """``config.model_type`` values this adapter serves."""
    max_clips: ClassVar[int | None] = None
    """Most clips one prompt may carry (None: any number); a prompt with more gets an error of its own."""
    text_alone: ClassVar[bool] = True
    """Whether a prompt may go without audio (the ``no_audio`` and ``description`` controls): the family's processor
    renders and tokenizes a conversation with no audio part."""
    kinds: ClassVar[frozenset[str] | None] = None
    """Item kinds the family's models serve (None: every kind, through the prompt sets, as a chat LALM does); a
    specialist family (a transcriber) names its kinds, and the runner counts the other items as not applicable."""

    def load_processor(self, path: str, *, trust_remote_code: bool = False) -> Any:
        """Load the processor (tokenizer + audio feature extractor), padding on the left."""
        from transformers import AutoProcessor

        processor = AutoProcessor.from_pretrained(
            path, trust_remote_code=trust_remote_code, local_files_only=_is_local(path)
        )
        _left_pad(processor)
        return processor

    def model_class(self, config: Any) -> Any:
        """The transformers class to load the checkpoint with."""
        from transformers import AutoModelForMultimodalLM

        return AutoModelForMultimodalLM

    def load_model(
        self, path: str, config: Any, *, dtype: torch.dtype, trust_remote_code: bool = False, **load: Any
    ) -> Any:
        """Load the model in ``dtype``; ``load`` holds ``device_map`` and ``attn_implementation`` when set."""
        cls = self.model_class(config)
        return cls.from_pretrained(
            path, dtype=dtype, trust_remote_code=trust_remote_code, local_files_only=_is_local(path), **load
        )

    def generator(self, model: Any) -> Any:
        """The module whose ``generate`` answers (the model itself, or a text sub-model)."""
        return model

    def tokenizer(self, processor: Any) -> Any:
        """The tokenizer that decodes answers."""
        return getattr(processor, "tokenizer", processor)

    def audio_part(self, audio: np.ndarray) -> dict[str, Any]:
        """The content part of one clip."""
        return {"type": "audio", "audio": audio}

    def conversation(self, prompt: Prompt) -> list[dict[str, Any]]:
        """The chat messages of one prompt (:func:`~airbench_nb.models.base.chat_messages`).

        Optional system turn; the first user turn with every clip's audio part in order, then its text; then the
        model's earlier answers as assistant turns, each followed by the next user turn.
        """
        return chat_messages(prompt, [self.audio_part(a) for a in prompt.sent_audios])

    def encode(self, processor: Any, prompts: Sequence[Prompt]) -> Mapping[str, Any]:
        """Tensors for ``generate`` for a batch of prompts (left-padded), through the processor's chat template."""
        return processor.apply_chat_template(
            [self.conversation(p) for p in prompts],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            return_tensors="pt",
            processor_kwargs={"padding": True, "sampling_rate": SAMPLE_RATE},
        )

    def generate_kwargs(self) -> dict[str, Any]:
        """Extra keyword arguments for ``generate``."""
        return {}

    def prepare(self, generator: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        """The ``generate`` arguments of a chunk from its encoded inputs (the inputs themselves, by default)."""
        return inputs

    def new_tokens(self, sequences: torch.Tensor, inputs: Mapping[str, Any]) -> list[list[int]]:
        """The generated tokens of each row (a decoder-only model's output begins with its prompt)."""
        return sequences[:, inputs["input_ids"].shape[1] :].tolist()

    def input_token_counts(self, inputs: Mapping[str, Any], count: int) -> list[int | None]:
        """Prompt tokens of each of the ``count`` rows (padding left out)."""
        mask = inputs.get("attention_mask")
        if mask is not None:
            return [int(n) for n in mask.sum(dim=1).tolist()]
        return [int(inputs["input_ids"].shape[1])] * count


ADAPTERS: dict[str, type[FamilyAdapter]] = {}
"""Family name and every model type it serves, to its adapter class."""


def register_adapter(cls: type[FamilyAdapter]) -> type[FamilyAdapter]:
    """Make an adapter known under its family name and its model types (usable as a class decorator)."""
    for key in (cls.name, *cls.model_types):
        ADAPTERS[key] = cls
    return cls


UNSUPPORTED: dict[str, str] = {
    "granite_speech": "its feature extractor needs torchaudio, which does not load with the pinned torch build",
    "gemma3n": "its model builds a timm vision tower; timm needs torchvision, and torchvision from PyPI does not load "
    "with the pinned CPU torch build",
    "phi4_multimodal": "its processor's image processor needs torchvision, which does not load with the pinned CPU "
    "torch build",
}
"""Model types the design names that no adapter serves yet, and why (each would be one adapter and one tiny test)."""


class UnsupportedFamily(ValueError):
    """A model type or family name no registered adapter serves."""


def adapter_for(model_type: str | None, family: str | None = None) -> FamilyAdapter:
    """The adapter for an explicit family name, else for the checkpoint's model type.

    Raises:
        UnsupportedFamily: In one line, for a family or model type no registered adapter serves, naming the known
            families (and, for a family the kit knows of, why it is not supported yet).
    """
    key = family if family is not None else model_type
    if key in ADAPTERS:
        return ADAPTERS[key]()
    known = ", ".join(sorted({cls.name for cls in ADAPTERS.values()}))
    what = f"model family {family!r}" if family is not None else f"model type {model_type!r}"
    why = f" ({UNSUPPORTED[key]})" if key in UNSUPPORTED else ""
    raise UnsupportedFamily(
        f"{what} is not supported{why}; supported: {known} (a new family is one adapter passed to register_adapter)"
    )


@register_adapter
class AudioFlamingo3Adapter(FamilyAdapter):
    """Audio Flamingo 3 (``nvidia/audio-flamingo-3-hf``): the processor's chat template renders ``<sound>``."""

    name = "audioflamingo3"
    model_types = ("audioflamingo3",)
    max_clips = 1  # AudioFlamingo3Processor pairs texts and audios 1:1 ("Got 1 text but 2 audios")
    text_alone = False  # nor 0 audios for 1 text

    def model_class(self, config: Any) -> Any:
        """``AudioFlamingo3ForConditionalGeneration``."""
        from transformers import AudioFlamingo3ForConditionalGeneration

        return AudioFlamingo3ForConditionalGeneration

    def encode(self, processor: Any, prompts: Sequence[Prompt]) -> Mapping[str, Any]:
        """The chat template; text padded to the longest prompt, audio to whole 30 s windows (as the encoder needs)."""
        return processor.apply_chat_template(
            [self.conversation(p) for p in prompts],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            return_tensors="pt",
            processor_kwargs={
                "text_kwargs": {"padding": True},
                "audio_kwargs": {"padding": "max_length", "sampling_rate": SAMPLE_RATE},
            },
        )


@register_adapter
class Qwen2AudioAdapter(FamilyAdapter):
    """Qwen2-Audio (7B and 7B-Instruct): chat template, ``Audio 1: <|audio_bos|><|AUDIO|><|audio_eos|>`` first.

    Several clips are several audio parts of the first user message: the template numbers them (``Audio 1:``,
    ``Audio 2:``) and the processor expands each placeholder by its own clip's length.
    """

    name = "qwen2_audio"
    model_types = ("qwen2_audio",)

    def model_class(self, config: Any) -> Any:
        """``Qwen2AudioForConditionalGeneration``."""
        from transformers import Qwen2AudioForConditionalGeneration

        return Qwen2AudioForConditionalGeneration


class AudioOnlyProcessor:
    """Tokenizer + Whisper feature extractor doing what a Qwen-style processor does for audio-only prompts.

    Each audio is padded to the extractor's window (30 s), and its placeholder token is repeated once per audio
    frame the encoder outputs (the conv stack halves the mel frames, the pooling halves them again).
    """

    def __init__(self, tokenizer: Any, feature_extractor: Any, chat_template: str | None = None):
        self.tokenizer = tokenizer
        self.feature_extractor = feature_extractor
        self.chat_template = chat_template or tokenizer.chat_template
        self.audio_token: str = getattr(tokenizer, "audio_token", None) or "<|AUDIO|>"
        if self.chat_template is None:
            raise ValueError("the tokenizer has no chat template and no chat_template.json was found")

    @classmethod
    def from_pretrained(cls, path: str, *, trust_remote_code: bool = False) -> AudioOnlyProcessor:
        """Load the tokenizer and feature extractor of a checkpoint (and ``chat_template.json`` when present)."""
        import json

        from transformers import AutoFeatureExtractor, AutoTokenizer
        from transformers.utils import cached_file

        local = _is_local(path)
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code, local_files_only=local)
        extractor = AutoFeatureExtractor.from_pretrained(
            path, trust_remote_code=trust_remote_code, local_files_only=local
        )
        template = None
        if tokenizer.chat_template is None:
            found = cached_file(path, "chat_template.json", _raise_exceptions_for_missing_entries=False)
            if found:
                template = json.loads(Path(found).read_text(encoding="utf-8")).get("chat_template")
        return cls(tokenizer, extractor, template)

    @staticmethod
    def audio_token_counts(frames: torch.Tensor) -> list[int]:
        """Encoder output length for each number of mel frames (conv stride 2, then pooling by 2)."""
        after_conv = (frames - 1) // 2 + 1
        return ((after_conv - 2) // 2 + 1).tolist()

    def __call__(self, conversations: Sequence[list[dict[str, Any]]], audios: Sequence[np.ndarray]) -> dict[str, Any]:
        """Render, expand the audio placeholders, tokenize (left-padded) and extract features."""
        texts = [
            self.tokenizer.apply_chat_template(
                c, chat_template=self.chat_template, add_generation_prompt=True, tokenize=False
            )
            for c in conversations
        ]
        features = self.feature_extractor(
            list(audios),
            sampling_rate=SAMPLE_RATE,
            padding="max_length",
            return_attention_mask=True,
            return_tensors="pt",
        )
        feature_mask = features.pop("attention_mask")
        counts = iter(self.audio_token_counts(feature_mask.sum(-1)))
        expanded = []
        for text in texts:
            pieces = text.split(self.audio_token)
            out = pieces[0]
            for piece in pieces[1:]:
                out += self.audio_token * next(counts) + piece
            expanded.append(out)
        encoded = self.tokenizer(expanded, padding=True, return_tensors="pt", add_special_tokens=False)
        return {**encoded, "input_features": features["input_features"], "feature_attention_mask": feature_mask}


@register_adapter
class Qwen25OmniAdapter(FamilyAdapter):
    """Qwen2.5-Omni (3B, 7B): the thinker answers in text; no talker, no speech output.

    A full checkpoint (``qwen2_5_omni``) is loaded with audio output off and its thinker generates; a thinker-only
    checkpoint (``qwen2_5_omni_thinker``) is loaded as such. The official processor is used when it loads; without
    torchvision it cannot, and :class:`AudioOnlyProcessor` takes its place.
    """

    name = "qwen2_5_omni"
    model_types = ("qwen2_5_omni", "qwen2_5_omni_thinker")

    def load_processor(self, path: str, *, trust_remote_code: bool = False) -> Any:
        """The official processor, or the audio-only one when that cannot be built here."""
        try:
            processor = super().load_processor(path, trust_remote_code=trust_remote_code)
        except (ImportError, ValueError, OSError, AttributeError, TypeError) as exc:
            reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            logger.info("%s: no full Qwen2.5-Omni processor (%s); using tokenizer + feature extractor", path, reason)
            processor = AudioOnlyProcessor.from_pretrained(path, trust_remote_code=trust_remote_code)
        _left_pad(processor)
        return processor

    def model_class(self, config: Any) -> Any:
        """The full model, or the thinker alone for a thinker-only checkpoint."""
        from transformers import Qwen2_5OmniForConditionalGeneration, Qwen2_5OmniThinkerForConditionalGeneration

        if config.model_type == "qwen2_5_omni_thinker":
            return Qwen2_5OmniThinkerForConditionalGeneration
        return Qwen2_5OmniForConditionalGeneration

    def load_model(
        self, path: str, config: Any, *, dtype: torch.dtype, trust_remote_code: bool = False, **load: Any
    ) -> Any:
        """Load with the talker and vocoder off (``enable_audio_output=False``) for a full checkpoint."""
        if config.model_type != "qwen2_5_omni_thinker":
            load["enable_audio_output"] = False
        return super().load_model(path, config, dtype=dtype, trust_remote_code=trust_remote_code, **load)

    def generator(self, model: Any) -> Any:
        """The thinker."""
        return getattr(model, "thinker", model)

    def encode(self, processor: Any, prompts: Sequence[Prompt]) -> Mapping[str, Any]:
        """Through the official processor, or the audio-only one."""
        if isinstance(processor, AudioOnlyProcessor):  # the clips in the order their placeholders appear
            return processor([self.conversation(p) for p in prompts], [a for p in prompts for a in p.sent_audios])
        return super().encode(processor, prompts)


@register_adapter
class VoxtralAdapter(FamilyAdapter):
    """Voxtral: Mistral's tokenizer renders the conversation; audio goes in as base64 WAV (the array, not the file).

    Its tokenizer needs ``mistral-common`` (``pip install -e '.[voxtral]'``).
    """

    name = "voxtral"
    model_types = ("voxtral",)

    def load_processor(self, path: str, *, trust_remote_code: bool = False) -> Any:
        """The Voxtral processor; one line naming the extra when mistral-common is missing."""
        from transformers.utils import is_mistral_common_available

        if not is_mistral_common_available():
            raise ImportError("Voxtral's tokenizer needs mistral-common: pip install -e '.[voxtral]'")
        return super().load_processor(path, trust_remote_code=trust_remote_code)

    def audio_part(self, audio: np.ndarray) -> dict[str, Any]:
        """A base64 WAV of the clip (mistral-common takes several in one message, and earlier turns)."""
        import soundfile as sf

        buffer = io.BytesIO()
        sf.write(buffer, audio, SAMPLE_RATE, format="WAV", subtype="FLOAT")
        return {"type": "audio", "base64": base64.b64encode(buffer.getvalue()).decode("ascii")}

    def encode(self, processor: Any, prompts: Sequence[Prompt]) -> Mapping[str, Any]:
        """Voxtral's processor tokenizes, pads and extracts features in ``apply_chat_template``."""
        return processor.apply_chat_template([self.conversation(p) for p in prompts])


WHISPER_WINDOW_S = 30.0
"""Audio Whisper's encoder takes at once (seconds); the ``whisper`` family transcribes clips up to this long."""


@register_adapter
class WhisperAdapter(FamilyAdapter):
    """Whisper checkpoints (``WhisperForConditionalGeneration``): a transcriber, serving ``transcription`` items only.

    The prompt's text is not read: the feature extractor turns each clip into log-mel ``input_features`` (padded to
    the 30 s window, with the attention mask), and ``generate`` transcribes. A multilingual checkpoint is forced to the
    ``transcribe`` task in the item's ``language`` (English when the item names none); an English-only one
    (``*.en``) takes neither. One clip per prompt, up to :data:`WHISPER_WINDOW_S` seconds (a longer clip gets an
    error of its own: use ``faster-whisper:<folder>``, which transcribes long audio window by window).
    """

    name = "whisper"
    model_types = ("whisper",)
    max_clips = 1
    kinds = frozenset({"transcription"})
    text_alone = False  # a transcriber reads only the audio

    def load_processor(self, path: str, *, trust_remote_code: bool = False) -> Any:
        """``WhisperProcessor`` (feature extractor and tokenizer)."""
        from transformers import WhisperProcessor

        return WhisperProcessor.from_pretrained(path, local_files_only=_is_local(path))

    def model_class(self, config: Any) -> Any:
        """``WhisperForConditionalGeneration``."""
        from transformers import WhisperForConditionalGeneration

        return WhisperForConditionalGeneration

    def encode(self, processor: Any, prompts: Sequence[Prompt]) -> Mapping[str, Any]:
        """Log-mel features of each clip padded to the window, its attention mask, and the language of each item."""
        too_long = [p.uid for p in prompts if p.audio.size > WHISPER_WINDOW_S * SAMPLE_RATE]
        if too_long:
            raise ValueError(
                f"{', '.join(too_long)}: longer than {WHISPER_WINDOW_S:g} s; hf: Whisper transcribes one window, "
                "faster-whisper:<folder> transcribes long audio"
            )
        features = processor.feature_extractor(
            [p.audio for p in prompts],
            sampling_rate=SAMPLE_RATE,
            padding="max_length",
            return_attention_mask=True,
            return_tensors="pt",
        )
        return {
            "input_features": features["input_features"],
            "attention_mask": features["attention_mask"],
            "languages": [getattr(p.item, "language", None) or "en" for p in prompts],
        }

    def prepare(self, generator: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        """The ``transcribe`` task in each item's language for a multilingual checkpoint; nothing for ``*.en``."""
        languages = inputs.pop("languages")
        config = generator.generation_config
        if getattr(config, "is_multilingual", False):
            inputs.update(task="transcribe", language=languages)
        prompt_ids = {config.decoder_start_token_id, getattr(config, "no_timestamps_token_id", None)}
        prompt_ids |= set((getattr(config, "lang_to_id", None) or {}).values())
        prompt_ids |= set((getattr(config, "task_to_id", None) or {}).values())
        self._prompt_ids = frozenset(i for i in prompt_ids if i is not None)
        return inputs

    def new_tokens(self, sequences: torch.Tensor, inputs: Mapping[str, Any]) -> list[list[int]]:
        """The transcript's tokens: the decoder prompt (start, language, task tokens) dropped where returned."""
        rows = []
        for row in sequences.tolist():
            start = 0
            while start < len(row) and row[start] in self._prompt_ids:
                start += 1
            rows.append(row[start:])
        return rows

    def input_token_counts(self, inputs: Mapping[str, Any], count: int) -> list[int | None]:
        """None: an encoder-decoder transcriber reads audio frames, not prompt tokens."""
        return [None] * count

    _prompt_ids: frozenset[int] = frozenset()
    """Tokens of the decoder prompt, set by :meth:`prepare` from the checkpoint's generation config."""


ATTN_IMPLEMENTATIONS: tuple[str, ...] = ("sdpa", "flash_attention_2", "flash_attention_3", "flex_attention", "eager")
"""Values ``attn`` takes (transformers' ``attn_implementation``); None lets transformers choose (SDPA where it can)."""


def resolve_device(device: str | None) -> tuple[torch.device, str | None]:
    """Where to run: ``(device for the inputs, device_map or None)``.

    ``auto`` spreads the model over every visible GPU with accelerate (``device_map="auto"``; on a machine without a
    GPU that is the CPU). None: the one GPU when there is one, ``auto`` when there are several, else the CPU.
    """
    if device is None:
        if not torch.cuda.is_available():
            return torch.device("cpu"), None
        device = "auto" if torch.cuda.device_count() > 1 else "cuda"
    if device == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu"), "auto"
    return torch.device(device), None


def checkpoint_dtype(config: Any) -> torch.dtype | None:
    """The dtype a checkpoint's config names (top level, else its text config), or None."""
    for cfg in (config, getattr(config, "text_config", None), getattr(config, "thinker_config", None)):
        value = getattr(cfg, "dtype", None) or getattr(cfg, "torch_dtype", None) if cfg is not None else None
        if isinstance(value, str):
            value = getattr(torch, value, None)
        if isinstance(value, torch.dtype):
            return value
    return None


def resolve_dtype(
    dtype: str | torch.dtype | None, device: torch.device, checkpoint: torch.dtype | None = None
) -> torch.dtype:
    """The weights' dtype: as given, else the checkpoint's own on CUDA and float32 on CPU.

    On CUDA a checkpoint that names no dtype, or float32, runs in bfloat16 (float16 where the GPU has no bf16).

    Raises:
        ValueError: For an unknown dtype name.
    """
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype in (None, "auto"):
        if device.type != "cuda":
            return torch.float32
        bf16 = torch.cuda.is_bf16_supported()
        if checkpoint == torch.float16 or (checkpoint == torch.bfloat16 and not bf16):
            return torch.float16
        return torch.bfloat16 if bf16 else torch.float16
    try:
        return DTYPES[dtype.lower()]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)} or auto") from None


def _load_options(device_map: str | None, attn: str | None) -> dict[str, Any]:
    """``from_pretrained`` keyword arguments for ``device_map`` and ``attn``; one-line errors when unavailable.

    Raises:
        ValueError: For an unknown ``attn``, flash attention without flash-attn installed, or a device map without
            accelerate.
    """
    from transformers.utils import is_accelerate_available, is_flash_attn_2_available

    options: dict[str, Any] = {}
    if device_map is not None:
        if not is_accelerate_available():
            raise ValueError("device 'auto' (device_map) needs accelerate: pip install -e '.[gpu]'")
        options["device_map"] = device_map
    if attn not in (None, "auto"):
        if attn not in ATTN_IMPLEMENTATIONS:
            raise ValueError(f"unknown attention {attn!r}; use one of {', '.join(ATTN_IMPLEMENTATIONS)} or auto")
        if attn == "flash_attention_2" and not is_flash_attn_2_available():
            raise ValueError("attention flash_attention_2 needs the flash-attn package and a CUDA GPU; use sdpa")
        options["attn_implementation"] = attn
    return options


def _config_error(spec: str, path: str, exc: BaseException) -> str:
    """One line saying why a checkpoint's config could not be read, and what to do."""
    import os

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if not _is_local(path):
        if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}:
            return (
                f"{spec}: {path!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set; download it "
                f"once with network (hf download {path}) or give the checkpoint's folder"
            )
        return (
            f"{spec}: cannot fetch {path!r} from the Hugging Face hub ({first[:160]}); check the id and the network, "
            "or give the checkpoint's folder"
        )
    return f"{spec}: cannot read the checkpoint's config ({first[:200]})"


def _audio_problem(prompt: Prompt, max_clips: int | None = None, family: str = "") -> str | None:
    """Why a prompt's audio cannot be sent (naming the clip of a multi-clip prompt), or None."""
    clips = prompt.sent_audios
    if max_clips is not None and len(clips) > max_clips:
        takes = "one clip" if max_clips == 1 else f"at most {max_clips} clips"
        return f"{family} takes {takes} per prompt; this item has {len(clips)}"
    for number, audio in enumerate(clips, start=1):
        what = f"audio of {prompt.uid}" if len(clips) == 1 else f"clip {number} of {prompt.uid}"
        if not isinstance(audio, np.ndarray):
            return f"{what} is a {type(audio).__name__}, not a numpy array"
        if audio.ndim != 1:
            return f"{what} has shape {audio.shape}; mono (one dimension) expected"
        if audio.size == 0:
            return f"{what} is empty"
        if not np.all(np.isfinite(audio)):
            return f"{what} contains NaN or infinite samples"
    return None


def _prepared(prompt: Prompt) -> Prompt:
    """The prompt with every clip in float32 at :data:`SAMPLE_RATE`."""
    clips = [audio.astype(np.float32, copy=False) for audio in prompt.audios]
    if prompt.sample_rate != SAMPLE_RATE:
        import soxr  # what librosa.resample (and so airbench_nb.audio) uses, without librosa's slow import

        clips = [
            soxr.resample(audio, prompt.sample_rate, SAMPLE_RATE, quality="HQ").astype(np.float32, copy=False)
            for audio in clips
        ]
    return prompt.with_audios(clips, SAMPLE_RATE)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class HFAudioLM:
    """A transformers audio-language model behind the :class:`~airbench_nb.models.base.AudioLM` protocol.

    Args:
        path: Local folder or hub id of the checkpoint (a hub id downloads unless ``HF_HUB_OFFLINE=1``).
        batch_size: Prompts per ``generate`` call (lowered for the rest of the model's life after an out-of-memory
            error).
        device: ``cuda``, ``cuda:1``, ``cpu``, or ``auto`` (spread over all GPUs with accelerate's
            ``device_map="auto"``, for checkpoints larger than one GPU); None: the GPU when there is one, ``auto`` when
            there are several, else the CPU.
        dtype: ``bf16``, ``fp16``, ``fp32`` (or torch names); None or ``auto``: the checkpoint's own on CUDA
            (bfloat16 when it names none), float32 on CPU.
        family: Adapter to use (``qwen2_audio``, ``qwen2_5_omni``, ...); None: chosen from ``config.model_type``.
        trust_remote_code: Allow the checkpoint's own Python code (needed by some hub models).
        attn: Attention kernel (``sdpa``, ``flash_attention_2``, ``eager``...); None or ``auto``: transformers'
            choice (SDPA where the model supports it).
        option_probs: Record the option letters' probabilities of single-choice items (see the module docstring).
            ``generate`` then keeps every step's logits until the batch ends (rows x steps x vocabulary floats):
            turn it off (``--model-option option_probs=false``) for long reasoning answers on a small GPU.

    Raises:
        SpecError: In one line naming the checkpoint and what to do: a hub id that cannot be fetched (offline or
            unknown), a path that is not a checkpoint, a model type no adapter serves, a processor whose package is
            missing, an unknown dtype or attention, a device map without accelerate.
    """

    def __init__(
        self,
        path: str,
        *,
        batch_size: int = 8,
        device: str | None = None,
        dtype: str | None = None,
        family: str | None = None,
        trust_remote_code: bool = False,
        attn: str | None = None,
        option_probs: bool = True,
    ):
        from transformers import AutoConfig

        from airbench_nb.models.specs import SpecError, check_hf_path

        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        check_hf_path(path)
        self.spec = f"hf:{path}"
        self.samples_vary = True
        """Sampled answers change with the temperature and the seed (``torch.manual_seed`` before each call)."""
        self.path = str(Path(path).expanduser()) if _is_local(path) else path
        path = self.path
        self.batch_size = batch_size
        self._batch_cap: int | None = None
        self.option_probs = bool(option_probs)
        try:
            config = AutoConfig.from_pretrained(
                path, trust_remote_code=trust_remote_code, local_files_only=_is_local(path)
            )
        except (OSError, ValueError) as exc:  # not on the hub, not in the cache offline, an unreadable config
            raise SpecError(_config_error(self.spec, path, exc)) from None
        self.model_type: str = config.model_type
        try:
            self.adapter = adapter_for(self.model_type, family)
            self.device, self.device_map = resolve_device(device)
            self.dtype = resolve_dtype(dtype, self.device, checkpoint_dtype(config))
            load = _load_options(self.device_map, attn)
        except (UnsupportedFamily, ValueError, RuntimeError) as exc:  # RuntimeError: a bad device string
            raise SpecError(f"{self.spec}: {exc}") from None
        self.attn = attn
        self.family = self.adapter.name
        try:
            self.processor = self.adapter.load_processor(path, trust_remote_code=trust_remote_code)
        except ImportError as exc:
            raise SpecError(f"{self.spec}: {str(exc).strip().splitlines()[0]}") from None
        model = self.adapter.load_model(path, config, dtype=self.dtype, trust_remote_code=trust_remote_code, **load)
        self.model = (model if self.device_map else model.to(self.device)).eval()
        self._finish_setup()

    @classmethod
    def from_model(
        cls, model: Any, processor: Any, *, family: str, spec: str = "hf:<in memory>", batch_size: int = 8
    ) -> HFAudioLM:
        """Wrap a model and processor built in memory (benchmarks of random-weight architectures; nothing is read).

        The model stays where it is and in its dtype; inputs go to the device of its input embeddings.
        """
        self = cls.__new__(cls)
        self.spec, self.path, self.batch_size, self._batch_cap = spec, spec.removeprefix("hf:"), batch_size, None
        self.adapter = adapter_for(None, family)
        self.family, self.model_type, self.attn = self.adapter.name, model.config.model_type, None
        self.processor, self.model, self.device_map = processor, model.eval(), None
        self.option_probs = True
        self.device = model.get_input_embeddings().weight.device
        self.dtype = next(model.parameters()).dtype
        self._finish_setup()
        return self

    def _finish_setup(self) -> None:
        if self.device_map:  # inputs go where the embeddings are
            self.device = self.model.get_input_embeddings().weight.device
        self._generator = self.adapter.generator(self.model)
        self._tokenizer = self.adapter.tokenizer(self.processor)
        self._eos_ids = self._stop_ids()
        self._letter_ids: dict[str, list[int]] | None = None  # the option letters' token ids, read when first needed
        logger.info(
            "%s: %s (%s) on %s in %s, attention %s, %.1fM parameters",
            self.spec,
            type(self.model).__name__,
            self.family,
            f"device_map {self.device_map}" if self.device_map else self.device,
            str(self.dtype).removeprefix("torch."),
            getattr(self.model.config, "_attn_implementation", None),
            sum(p.numel() for p in self.model.parameters()) / 1e6,
        )

    @property
    def kinds(self) -> frozenset[str] | None:
        """Item kinds this model serves: its family's (:attr:`FamilyAdapter.kinds`; None: every kind)."""
        return self.adapter.kinds

    @property
    def text_alone(self) -> bool:
        """Whether a prompt may go without audio (the family's :attr:`FamilyAdapter.text_alone`).

        Not through the audio-only processor a Qwen2.5-Omni checkpoint falls back on (it extracts every prompt's
        features).
        """
        return self.adapter.text_alone and not isinstance(self.processor, AudioOnlyProcessor)

    @property
    def effective_batch_size(self) -> int:
        """The chunk size in use: ``batch_size``, or less after an out-of-memory error."""
        return min(self.batch_size, self._batch_cap or self.batch_size)

    def _stop_ids(self) -> set[int]:
        ids: set[int] = set()
        configured = getattr(self._generator.generation_config, "eos_token_id", None)
        if isinstance(configured, int):
            ids.add(configured)
        elif configured:
            ids.update(int(i) for i in configured)
        if self._tokenizer.eos_token_id is not None:
            ids.add(int(self._tokenizer.eos_token_id))
        return ids

    def _generation_kwargs(self, params: GenerationParams) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"max_new_tokens": params.max_new_tokens, "do_sample": not params.greedy}
        if params.greedy:
            # Sampling settings a checkpoint ships (temperature, top_p, top_k) do not apply to greedy decoding.
            kwargs.update(temperature=None, top_p=None, top_k=None)
        else:
            kwargs.update(temperature=params.temperature, top_p=params.top_p)
        if self._generator.generation_config.pad_token_id is None:
            pad = self._tokenizer.pad_token_id
            kwargs["pad_token_id"] = pad if pad is not None else min(self._eos_ids, default=0)
        kwargs.update(self.adapter.generate_kwargs())
        return kwargs

    def _to_device(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        moved: dict[str, Any] = {}
        for key, value in inputs.items():
            if isinstance(value, torch.Tensor):
                value = value.to(self.device, dtype=self.dtype if value.is_floating_point() else None)
            moved[key] = value
        return moved

    def _generate_chunk(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Generation]:
        """One ``generate`` call for prompts of similar length; raises on any failure."""
        inputs = self._to_device(self.adapter.encode(self.processor, prompts))
        input_tokens = self.adapter.input_token_counts(inputs, len(prompts))
        if not params.greedy and params.seed is not None:
            torch.manual_seed(params.seed)
        inputs = self.adapter.prepare(self._generator, inputs)
        letters = [option_letters(p.item, p.turn) if self.option_probs else None for p in prompts]
        kwargs = self._generation_kwargs(params)
        if any(letters):  # choice items: the first step's raw logits give the option probabilities
            kwargs.update(output_logits=True, return_dict_in_generate=True)
        with torch.inference_mode():
            output = self._generator.generate(**inputs, **kwargs)
        sequences = output if isinstance(output, torch.Tensor) else output.sequences
        first = self._first_logprobs(output) if any(letters) else None
        generations = []
        rows = self.adapter.new_tokens(sequences, inputs)
        for index, (row, n_in) in enumerate(zip(rows, input_tokens, strict=True)):
            stop = next((i for i, token in enumerate(row) if token in self._eos_ids), None)
            kept = row if stop is None else row[: stop + 1]
            text = self._tokenizer.decode(kept, skip_special_tokens=True).strip()
            option = letters[index]
            probs = from_logits(first[index], option, self._letter_ids or {}) if first is not None and option else None
            generations.append(Generation(text=text, input_tokens=n_in, output_tokens=len(kept), option_probs=probs))
        return generations

    def _first_logprobs(self, output: Any) -> torch.Tensor | None:
        """Log-probabilities (rows, vocabulary) of the first generated step, or None when ``generate`` gave none.

        A failure here costs the option probabilities only (logged), never the answers.
        """
        logits = getattr(output, "logits", None)
        if not logits:
            return None
        try:
            if self._letter_ids is None:
                self._letter_ids = letter_token_ids(self._tokenizer)
            return torch.log_softmax(logits[0].float(), dim=-1).cpu()
        except (RuntimeError, ValueError, TypeError, IndexError) as exc:
            logger.warning("%s: no option probabilities for this batch: %s", self.spec, _describe(exc))
            return None

    def _generate_one(self, prompt: Prompt, params: GenerationParams) -> Generation:
        """One prompt alone; any failure becomes this item's error."""
        try:
            return self._generate_chunk([prompt], params)[0]
        except torch.cuda.OutOfMemoryError as exc:
            self._empty_cache()
            return Generation(error=f"CUDA out of memory even for this item alone: {exc}")
        except ITEM_ERRORS as exc:
            logger.warning("%s: %s failed: %s", self.spec, prompt.uid, _describe(exc))
            return Generation(error=_describe(exc))

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        """Answer prompts in batches sorted by audio length; results come back in the order given.

        Args:
            prompts: The prompts (any number; they are chunked by ``batch_size``).
            params: Decoding parameters: greedy when ``temperature`` is 0, else sampling with ``top_p``.

        Returns:
            One :class:`Generation` per prompt, in order; a prompt whose audio is unusable, or that fails even alone
            (out of memory included), gets ``error`` set and the others are answered.
        """
        results: list[Generation | None] = [None] * len(prompts)
        ready: dict[int, Prompt] = {}
        for i, prompt in enumerate(prompts):
            problem = _audio_problem(prompt, self.adapter.max_clips, self.family)
            if problem is None:
                ready[i] = _prepared(prompt)
            else:
                results[i] = Generation(error=problem)
        # One generate call per length bound (None in params: each prompt's kind decides), and prompts without audio
        # (controls) apart from those with: a processor is given audio for every prompt of a call or for none.
        groups: dict[tuple[GenerationParams, bool], list[int]] = {}
        for i, prompt in ready.items():
            groups.setdefault((params.for_item(prompt.item), prompt.without_audio), []).append(i)
        for (group_params, _), indices in groups.items():
            self._generate_group(ready, indices, group_params, results)
        return [r if r is not None else Generation(error="not answered") for r in results]

    def _generate_group(
        self,
        ready: dict[int, Prompt],
        indices: list[int],
        params: GenerationParams,
        results: list[Generation | None],
    ) -> None:
        """Answer ``ready[i]`` for ``i`` in ``indices`` into ``results``, in chunks (see :meth:`generate`)."""
        # Longest first: the largest batch meets the out-of-memory check at once, and similar lengths pad little.
        order = sorted(indices, key=lambda i: sum(a.size for a in ready[i].audios), reverse=True)
        start = 0
        while start < len(order):
            chunk = order[start : start + self.effective_batch_size]
            try:
                generations = self._generate_chunk([ready[i] for i in chunk], params)
            except torch.cuda.OutOfMemoryError as exc:
                self._empty_cache()
                if len(chunk) > 1:
                    self._batch_cap = max(1, len(chunk) // 2)
                    logger.warning(
                        "%s: CUDA out of memory with %d prompts; retrying with %d",
                        self.spec,
                        len(chunk),
                        self._batch_cap,
                    )
                    continue
                generations = [Generation(error=f"CUDA out of memory even for this item alone: {exc}")]
            except ITEM_ERRORS as exc:
                if len(chunk) == 1:
                    logger.warning("%s: %s failed: %s", self.spec, ready[chunk[0]].uid, _describe(exc))
                    generations = [Generation(error=_describe(exc))]
                else:
                    logger.warning("%s: a batch of %d failed (%s); answering one by one", self.spec, len(chunk), exc)
                    generations = [self._generate_one(ready[i], params) for i in chunk]
            for i, generation in zip(chunk, generations, strict=True):
                results[i] = generation
            start += len(chunk)

    def _empty_cache(self) -> None:
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def close(self) -> None:
        """Free the model and processor (and the CUDA cache); the object cannot answer afterwards."""
        for name in ("_generator", "model", "processor", "_tokenizer"):
            if hasattr(self, name):
                delattr(self, name)
        self._empty_cache()
