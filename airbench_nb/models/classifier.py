"""Tier B: ``classifier:<path>``, a transformers audio-classification checkpoint and a label-mapping table.

:class:`AudioClassifier` loads ``AutoFeatureExtractor`` and ``AutoModelForAudioClassification`` from a folder (or a hub
id, fetched unless ``HF_HUB_OFFLINE=1``), e.g. an AST fine-tuned on AudioSet. The model never sees the item's
candidates: it scores its own labels, and a label-mapping table (:mod:`airbench_nb.models.label_mapping`) turns those
scores into a ranking of the item's choices. Per clip:

1. the clip is resampled to the feature extractor's rate and the model's logits computed (float32; batches of
   ``batch_size`` clips);
2. each label's score is the sigmoid of its logit for a multi-label model, the softmax over labels otherwise, as the
   config's ``problem_type`` says (``multi_label_classification`` or ``single_label_classification``); a config
   without one is read as multi-label when it has AudioSet's 527 labels, single-label otherwise; the ``scores``
   option overrides. Both are monotone, so the ranking is the same either way, only the scores differ;
3. a task class's score is the best score among its source labels; the model's labels without a mapping are dropped
   (counted once per model in :attr:`AudioClassifier.settings`: ``unmapped_source_labels``); the table's classes that
   are not among the item's choices are ignored for that item;
4. the answer text is the best of the item's mapped choices (spelled as the item spells it, so the choice-text
   scoring reads it), and the ranking of every mapped choice goes to
   :attr:`~airbench_nb.models.base.Generation.ranking`. An item none of whose choices the table maps is an error for
   that item, never a guess.

Which table: the ``mapping`` option (a CSV or JSON file); else ``label_mapping.csv`` (or ``.json``) in the checkpoint
folder; else the bundled AudioSet starter table ``data_manifests/tiered/audioset_mapping.csv``. The option
``match="exact"`` keeps only the rows marked exact. A table that names a source label the model does not have stops the
load in one line (a typo, or a table written for another model's labels).

Kinds: ``sound_source`` items (the tiered benchmark's closed-set items) by default; the ``kinds`` option names others
(``kinds="foundation"`` ranks AIR-Bench sound questions' choices, which a table must map).
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any, Literal

import numpy as np

from airbench_nb.models.base import Generation, GenerationParams, Prompt
from airbench_nb.models.label_mapping import LabelMapping, MappingError, read_label_mapping
from airbench_nb.models.ranking import (
    TIERED_DATA,
    CheckpointSource,
    checkpoint_source,
    clip_at,
    first_line,
    kinds_option,
    offline,
    prompt_choices,
    torch_device,
)
from airbench_nb.models.specs import SpecError

logger = logging.getLogger(__name__)

AUDIOSET_MAPPING = TIERED_DATA / "audioset_mapping.csv"
"""The bundled starter table from AudioSet labels to the tiered benchmark's classes (used when no other is found)."""

MAPPING_FILE_NAMES: tuple[str, ...] = ("label_mapping.csv", "label_mapping.json")
"""A table in the checkpoint folder under one of these names is that model's own (used before the bundled one)."""

AUDIOSET_LABEL_COUNT = 527
"""The number of AudioSet labels: a config without ``problem_type`` and with this many labels is multi-label."""

ScoreFunction = Literal["sigmoid", "softmax"]


def score_function(config: Any, scores: str = "auto") -> ScoreFunction:
    """Sigmoid (multi-label) or softmax (single-label) for a model config, or the one ``scores`` names.

    Raises:
        ValueError: For a ``scores`` other than ``auto``, ``sigmoid`` or ``softmax``.
    """
    if scores in ("sigmoid", "softmax"):
        return scores  # type: ignore[return-value]
    if scores != "auto":
        raise ValueError(f"scores={scores!r}: use auto, sigmoid or softmax")
    problem = getattr(config, "problem_type", None)
    if problem == "multi_label_classification":
        return "sigmoid"
    if problem == "single_label_classification":
        return "softmax"
    return "sigmoid" if int(getattr(config, "num_labels", 0)) == AUDIOSET_LABEL_COUNT else "softmax"


def mapping_path(source: CheckpointSource, mapping: str | Path | None) -> Path:
    """The table a classifier uses (see the module docstring: option, checkpoint folder, bundled AudioSet table)."""
    if mapping is not None:
        return Path(mapping).expanduser()
    if source.local:
        for name in MAPPING_FILE_NAMES:
            if (Path(source.name) / name).is_file():
                return Path(source.name) / name
    return AUDIOSET_MAPPING


class AudioClassifier:
    """An audio classifier and its label mapping behind the :class:`~airbench_nb.models.base.AudioLM` protocol.

    Args:
        rest: The spec after ``classifier:``: a checkpoint folder or a hub id.
        batch_size: Clips per forward pass.
        mapping: The label-mapping table (CSV or JSON); None: the folder's ``label_mapping.csv``, else the bundled
            AudioSet table.
        match: ``all`` rows, or ``exact`` ones only.
        scores: ``auto`` (from the config), ``sigmoid`` or ``softmax``.
        kinds: Item kinds served (comma-separated or a list); None: ``sound_source``.
        device: ``cpu``, ``cuda`` or ``auto`` (None: ``cuda`` when torch sees a GPU).

    Raises:
        SpecError: In one line naming the spec: a checkpoint that cannot be loaded, a missing or bad mapping, a
            mapping naming labels the model does not have, a bad option.
    """

    kinds: frozenset[str] | None = frozenset({"sound_source"})
    """Item kinds served: the tiered benchmark's closed-set items (the ``kinds`` option changes it per model)."""

    samples_vary: bool = False
    """Deterministic: a ranking by class probability, the same under every temperature and seed.
    ``infer --samples K`` stores one sample."""

    def __init__(
        self,
        rest: str,
        *,
        batch_size: int = 16,
        mapping: str | Path | None = None,
        match: str = "all",
        scores: str = "auto",
        kinds: str | list[str] | None = None,
        device: str | None = None,
    ) -> None:
        self.spec = f"classifier:{rest}"
        if batch_size < 1:
            raise SpecError(f"{self.spec}: batch_size must be at least 1, got {batch_size}")
        if match not in ("all", "exact"):
            raise SpecError(f"{self.spec}: match={match!r}: use all or exact")
        self.batch_size = int(batch_size)
        self.kinds = kinds_option(self.spec, kinds)
        source = checkpoint_source(self.spec, rest)
        path = mapping_path(source, mapping)
        try:
            table = read_label_mapping(path)
            self.mapping: LabelMapping = table.only("exact") if match == "exact" else table
        except MappingError as exc:
            raise SpecError(f"{self.spec}: {exc}") from None

        import torch
        from transformers import AutoFeatureExtractor, AutoModelForAudioClassification

        self.device = torch_device(device)
        try:
            self.extractor = AutoFeatureExtractor.from_pretrained(source.name, local_files_only=source.local)
            self.model = AutoModelForAudioClassification.from_pretrained(
                source.name, local_files_only=source.local, dtype=torch.float32
            )
        except (OSError, ValueError, KeyError) as exc:
            where = "" if source.local or not offline() else " (HF_HUB_OFFLINE is set: only the local cache is read)"
            raise SpecError(f"{self.spec}: cannot load an audio classifier{where}: {first_line(exc)}") from None
        self.model.to(self.device).eval()
        config = self.model.config
        try:
            self.score = score_function(config, scores)
        except ValueError as exc:
            raise SpecError(f"{self.spec}: {exc}") from None
        self.labels: list[str] = [str(config.id2label[i]) for i in range(int(config.num_labels))]
        unknown = self.mapping.unknown_sources(self.labels)
        if unknown:
            shown = ", ".join(repr(u) for u in unknown[:3]) + (", ..." if len(unknown) > 3 else "")
            raise SpecError(
                f"{self.spec}: the mapping {path} names {len(unknown)} label(s) the model does not have ({shown}); "
                "fix the table or give one for this model's labels (mapping=...)"
            )
        self.unmapped = self.mapping.unmapped(self.labels)
        self.rate = int(self.extractor.sampling_rate)
        call = inspect.signature(self.extractor.__call__).parameters
        self._extract: dict[str, Any] = {"padding": "longest"} if "padding" in call else {}
        if "return_attention_mask" in call:
            self._extract["return_attention_mask"] = True
        self._forward = set(inspect.signature(self.model.forward).parameters)
        logger.info(
            "%s: %d labels (%s), %d mapped to %d task classes by %s, %d unmapped; %s",
            self.spec,
            len(self.labels),
            self.score,
            len(self.labels) - len(self.unmapped),
            len(self.mapping.classes),
            path,
            len(self.unmapped),
            self.device,
        )

    @property
    def settings(self) -> dict[str, Any]:
        """The backend's settings, recorded with each response (``generation["backend"]``)."""
        return {
            "name": "classifier",
            "model": self.spec.partition(":")[2],
            "device": self.device,
            "scores": self.score,
            "mapping": self.mapping.name,
            "mapping_rows": len(self.mapping.rows),
            "task_classes": len(self.mapping.classes),
            "source_labels": len(self.labels),
            "unmapped_source_labels": len(self.unmapped),
            "sample_rate": self.rate,
        }

    def label_scores(self, clips: list[np.ndarray]) -> np.ndarray:
        """Each clip's score of every model label (rows: clips; columns: :attr:`labels`), in one forward pass.

        Args:
            clips: Mono float32 clips at the extractor's rate (:attr:`rate`).
        """
        import torch

        inputs = self.extractor(clips, sampling_rate=self.rate, return_tensors="pt", **self._extract)
        inputs = {k: v.to(self.device) for k, v in inputs.items() if k in self._forward}
        with torch.inference_mode():
            logits = self.model(**inputs).logits.float()
        probs = torch.sigmoid(logits) if self.score == "sigmoid" else torch.softmax(logits, dim=-1)
        return probs.cpu().numpy()

    def _scores_by_label(self, row: np.ndarray) -> dict[str, float]:
        out: dict[str, float] = {}
        for label, value in zip(self.labels, row.tolist(), strict=True):
            out[label] = max(value, out.get(label, value))  # a label named twice keeps its best score
        return out

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        """Rank each prompt's mapped choices (the prompt text and decoding parameters are not read).

        Returns:
            One :class:`Generation` per prompt: the best mapped choice as text and the ranking; an item that is not
            closed-set, has several clips, bad audio, or no mapped choice gets ``error`` set alone.
        """
        del params  # a classifier does not decode
        results: list[Generation | None] = [None] * len(prompts)
        ready: list[tuple[int, np.ndarray, list[str]]] = []
        for i, prompt in enumerate(prompts):
            choices = prompt_choices(self.spec, prompt)
            if isinstance(choices, str):
                results[i] = Generation(error=choices)
                continue
            if not any(self.mapping.sources_of(c) for c in choices):
                results[i] = Generation(error=f"{self.spec}: {self._no_mapped_choice(choices)}")
                continue
            clip = clip_at(self.spec, prompt, self.rate)
            if isinstance(clip, str):
                results[i] = Generation(error=clip)
                continue
            ready.append((i, clip, choices))
        for start in range(0, len(ready), self.batch_size):
            chunk = ready[start : start + self.batch_size]
            try:
                rows = self.label_scores([clip for _, clip, _ in chunk])
            except (RuntimeError, ValueError) as exc:
                logger.warning("%s: a batch of %d failed: %s", self.spec, len(chunk), first_line(exc))
                for i, _, _ in chunk:
                    results[i] = Generation(error=f"{type(exc).__name__}: {first_line(exc)}")
                continue
            for (i, _, choices), row in zip(chunk, rows, strict=True):
                ranking = self.mapping.rank(self._scores_by_label(row), choices)
                results[i] = Generation(text=ranking[0].label, ranking=ranking)
        return [r if r is not None else Generation(error="not answered") for r in results]

    def _no_mapped_choice(self, choices: list[str]) -> str:
        try:
            self.mapping.rank({}, choices)
        except MappingError as exc:
            return str(exc)
        return "no mapped choice"  # pragma: no cover - rank raises for an empty score table

    def close(self) -> None:
        """Free the model (and the GPU memory it held)."""
        if hasattr(self, "model"):
            del self.model
            if self.device.startswith("cuda"):
                import torch

                torch.cuda.empty_cache()
