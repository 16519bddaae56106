"""Tier C: ``clap:<path>``, zero-shot CLAP over prompt templates.

:class:`ClapZeroShot` loads ``ClapModel`` and ``ClapProcessor`` from a folder (or a hub id such as
``laion/clap-htsat-unfused``, fetched unless ``HF_HUB_OFFLINE=1``) and ranks each item's choices by audio-text
similarity, as CLAP zero-shot classification does:

1. each choice becomes texts through the prompt templates (``"this is a sound of {label}"``, ...); the file may give
   a class a text of its own to put in place of ``{label}`` (``"wail siren": "a wailing siren"``);
2. each text is embedded (the model's text projection, L2-normalised), the embeddings of one class are averaged over
   the templates and normalised again (prompt ensembling); a class's embedding is computed once per model;
3. the clip is resampled to the processor's rate (48 kHz for the LAION checkpoints) and embedded (audio projection,
   normalised); a clip longer than the processor's window is cut where the processor cuts it, with numpy's random
   generator seeded by the ``seed`` option for the call, so the same clip gets the same score every run;
4. each choice's score is the cosine of the two embeddings times the model's audio logit scale (``exp(logit_scale_a)``,
   what ``ClapModel`` puts in ``logits_per_audio``); the answer text is the best choice, and the ranking of all
   choices goes to :attr:`~airbench_nb.models.base.Generation.ranking`.

The templates come from ``data_manifests/tiered/clap_prompts.json`` (the ``prompts`` option names another file):
``{"templates": [...], "label_texts": {...}}``; every template holds ``{label}``. Float32 throughout (on CPU and GPU).
Kinds: ``sound_source`` by default; the ``kinds`` option names others.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from airbench_nb.models.base import Generation, GenerationParams, Prompt
from airbench_nb.models.ranking import (
    TIERED_DATA,
    checkpoint_source,
    clip_at,
    first_line,
    kinds_option,
    offline,
    prompt_choices,
    ranked,
    torch_device,
)
from airbench_nb.models.specs import SpecError

logger = logging.getLogger(__name__)

CLAP_PROMPTS = TIERED_DATA / "clap_prompts.json"
"""The bundled prompt templates (used when the ``prompts`` option names no other file)."""

LABEL_FIELD = "{label}"
"""Where a template takes the class's text."""


class PromptFileError(ValueError):
    """A prompt-template file that cannot be used (the message names the file and what is wrong)."""


@dataclass(frozen=True)
class ClapPrompts:
    """CLAP's prompt templates and the texts some classes are given (:func:`read_clap_prompts`)."""

    templates: tuple[str, ...]
    """Templates, each holding ``{label}``; a class's text embedding is the mean over them."""
    label_texts: dict[str, str] = field(default_factory=dict)
    """A text per class (keys case-folded) to put in place of ``{label}``; a class not listed is put as it is."""
    path: Path | None = None
    """The file they were read from (None when built in code)."""

    def texts(self, label: str) -> list[str]:
        """The texts of one class, one per template."""
        text = self.label_texts.get(" ".join(label.split()).casefold(), label)
        return [template.replace(LABEL_FIELD, text) for template in self.templates]


def read_clap_prompts(path: str | Path) -> ClapPrompts:
    """Read a prompt-template file (``{"templates": [...], "label_texts": {...}}``; ``label_texts`` optional).

    Raises:
        PromptFileError: In one line naming the file: missing, not JSON, no templates, a template without
            ``{label}``, a class text that is not a string.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise PromptFileError(f"CLAP prompts {path}: no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptFileError(f"CLAP prompts {path}: cannot be read ({type(exc).__name__})") from None
    except json.JSONDecodeError as exc:
        raise PromptFileError(f"CLAP prompts {path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    templates = data.get("templates") if isinstance(data, dict) else None
    if not isinstance(templates, list) or not templates or not all(isinstance(t, str) for t in templates):
        raise PromptFileError(f"CLAP prompts {path}: 'templates' must be a non-empty list of strings")
    for number, template in enumerate(templates, start=1):
        if LABEL_FIELD not in template:
            raise PromptFileError(f"CLAP prompts {path}: template {number} ({template!r}) has no {LABEL_FIELD}")
    label_texts = data.get("label_texts", {})
    if not isinstance(label_texts, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in label_texts.items()
    ):
        raise PromptFileError(f"CLAP prompts {path}: 'label_texts' must map class names to non-empty texts")
    texts = {" ".join(k.split()).casefold(): v for k, v in label_texts.items()}
    return ClapPrompts(tuple(templates), texts, path)


def _normalised(x: Any) -> Any:
    return x / x.norm(p=2, dim=-1, keepdim=True).clamp_min(1e-12)


def _pooled(output: Any) -> Any:
    """The embeddings from ``get_*_features`` (a tensor, or an output whose ``pooler_output`` holds them)."""
    return getattr(output, "pooler_output", output)


class ClapZeroShot:
    """A CLAP model ranking each item's choices, behind the :class:`~airbench_nb.models.base.AudioLM` protocol.

    Args:
        rest: The spec after ``clap:``: a checkpoint folder or a hub id.
        batch_size: Clips per audio forward pass.
        prompts: The prompt-template file; None: the bundled ``clap_prompts.json``.
        kinds: Item kinds served (comma-separated or a list); None: ``sound_source``.
        device: ``cpu``, ``cuda`` or ``auto`` (None: ``cuda`` when torch sees a GPU).
        seed: Seeds the processor's crop of clips longer than its window.

    Raises:
        SpecError: In one line naming the spec: a checkpoint that cannot be loaded, a missing or bad prompt file, a
            bad option.
    """

    kinds: frozenset[str] | None = frozenset({"sound_source"})
    """Item kinds served: the tiered benchmark's closed-set items (the ``kinds`` option changes it per model)."""

    samples_vary: bool = False
    """Deterministic: a ranking by audio-text similarity, the same under every temperature and seed.
    ``infer --samples K`` stores one sample."""

    def __init__(
        self,
        rest: str,
        *,
        batch_size: int = 16,
        prompts: str | Path | None = None,
        kinds: str | list[str] | None = None,
        device: str | None = None,
        seed: int = 0,
    ) -> None:
        self.spec = f"clap:{rest}"
        if batch_size < 1:
            raise SpecError(f"{self.spec}: batch_size must be at least 1, got {batch_size}")
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.kinds = kinds_option(self.spec, kinds)
        try:
            self.prompts = read_clap_prompts(CLAP_PROMPTS if prompts is None else prompts)
        except PromptFileError as exc:
            raise SpecError(f"{self.spec}: {exc}") from None
        source = checkpoint_source(self.spec, rest)

        import torch
        from transformers import ClapModel, ClapProcessor

        self.device = torch_device(device)
        try:
            self.processor = ClapProcessor.from_pretrained(source.name, local_files_only=source.local)
            self.model = ClapModel.from_pretrained(source.name, local_files_only=source.local, dtype=torch.float32)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            where = "" if source.local or not offline() else " (HF_HUB_OFFLINE is set: only the local cache is read)"
            raise SpecError(f"{self.spec}: cannot load a CLAP model{where}: {first_line(exc)}") from None
        self.model.to(self.device).eval()
        self.rate = int(self.processor.feature_extractor.sampling_rate)
        self._classes: dict[str, Any] = {}
        logger.info(
            "%s: %d templates from %s, %d Hz, %s",
            self.spec,
            len(self.prompts.templates),
            self.prompts.path,
            self.rate,
            self.device,
        )

    @property
    def logit_scale(self) -> float:
        """The factor on the audio-text cosine: ``exp(logit_scale_a)``."""
        return float(self.model.logit_scale_a.detach().exp().cpu())

    @property
    def settings(self) -> dict[str, Any]:
        """The backend's settings, recorded with each response (``generation["backend"]``)."""
        return {
            "name": "clap",
            "model": self.spec.partition(":")[2],
            "device": self.device,
            "prompts": str(self.prompts.path),
            "templates": len(self.prompts.templates),
            "logit_scale": round(self.logit_scale, 6),
            "sample_rate": self.rate,
            "seed": self.seed,
        }

    def class_embeddings(self, labels: list[str]) -> Any:
        """Each class's text embedding (templates averaged, normalised), rows in the order given; cached per class."""
        import torch

        missing = [label for label in dict.fromkeys(labels) if label not in self._classes]
        if missing:
            texts = [text for label in missing for text in self.prompts.texts(label)]
            tokens = self.processor.tokenizer(texts, padding=True, return_tensors="pt").to(self.device)
            with torch.inference_mode():
                embedded = _normalised(_pooled(self.model.get_text_features(**tokens)).float())
            per = len(self.prompts.templates)
            for k, label in enumerate(missing):
                self._classes[label] = _normalised(embedded[k * per : (k + 1) * per].mean(dim=0))
        return torch.stack([self._classes[label] for label in labels])

    def audio_embeddings(self, clips: list[np.ndarray]) -> Any:
        """Each clip's audio embedding (normalised), in one forward pass.

        Args:
            clips: Mono float32 clips at the processor's rate (:attr:`rate`).
        """
        import torch

        state = np.random.get_state()
        np.random.seed(self.seed)  # the processor crops long clips with numpy's global generator
        try:
            features = self.processor.feature_extractor(clips, sampling_rate=self.rate, return_tensors="pt")
        finally:
            np.random.set_state(state)
        features = {k: v.to(self.device) for k, v in features.items() if k in ("input_features", "is_longer")}
        with torch.inference_mode():
            return _normalised(_pooled(self.model.get_audio_features(**features)).float())

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        """Rank each prompt's choices by logit-scaled audio-text cosine (the prompt text is not read).

        Returns:
            One :class:`Generation` per prompt: the best choice as text and the ranking of all choices; an item that
            is not closed-set, has several clips or bad audio gets ``error`` set alone.
        """
        del params  # CLAP does not decode
        results: list[Generation | None] = [None] * len(prompts)
        ready: list[tuple[int, np.ndarray, list[str]]] = []
        for i, prompt in enumerate(prompts):
            choices = prompt_choices(self.spec, prompt)
            if isinstance(choices, str):
                results[i] = Generation(error=choices)
                continue
            clip = clip_at(self.spec, prompt, self.rate)
            if isinstance(clip, str):
                results[i] = Generation(error=clip)
                continue
            ready.append((i, clip, choices))
        scale = self.logit_scale
        for start in range(0, len(ready), self.batch_size):
            chunk = ready[start : start + self.batch_size]
            try:
                audio = self.audio_embeddings([clip for _, clip, _ in chunk])
                for row, (i, _, choices) in enumerate(chunk):
                    scores = (self.class_embeddings(choices) @ audio[row]).cpu().numpy() * scale
                    ranking = ranked(choices, scores.tolist())
                    results[i] = Generation(text=ranking[0].label, ranking=ranking)
            except (RuntimeError, ValueError) as exc:
                logger.warning("%s: a batch of %d failed: %s", self.spec, len(chunk), first_line(exc))
                for i, _, _ in chunk:
                    results[i] = Generation(error=f"{type(exc).__name__}: {first_line(exc)}")
        return [r if r is not None else Generation(error="not answered") for r in results]

    def close(self) -> None:
        """Free the model (and the GPU memory it held)."""
        if hasattr(self, "model"):
            del self.model
            self._classes.clear()
            if self.device.startswith("cuda"):
                import torch

                torch.cuda.empty_cache()
