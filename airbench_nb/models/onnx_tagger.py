"""Tier B: ``onnx:<model.onnx or folder>``, a local ONNX audio tagger with its class map and a declared front end.

:class:`OnnxTagger` runs an AudioSet-style tagger exported to ONNX (YAMNet first: ``onnx:yamnet-bundled``, the
weights :mod:`airbench_nb.weights` fetches from the package registries) in onnxruntime on the CPU. Like
``classifier:`` (:mod:`airbench_nb.models.classifier`) the model never sees the item's candidates: it scores its own
labels and mapping tables (:mod:`airbench_nb.models.label_mapping`) turn those scores into the item's classes. Per clip:

1. the clip is resampled to the front end's rate and cut into log-mel patches by the declared front end
   (:mod:`airbench_nb.models.audio_frontends`; the ``frontend`` option, ``yamnet`` by default);
2. a quantised input (uint8 or int8) is quantised from the graph's initializers ``<input>_scale`` and
   ``<input>_zero_point`` (``audio_scale``, ``audio_zero_point`` for YAMNet): ``clip(round(x / scale) + zp)`` to the
   type's range; a quantised output is dequantised with ``<output>_scale`` and ``<output>_zero_point``:
   ``(q - zp) * scale``. A float input or output is used as it is;
3. the patches go through the model: all at once, ``batch_size`` patches per call, when the input's batch dimension
   is dynamic; one at a time when it is fixed (YAMNet's export takes ``[1, 1, 96, 64]``);
4. each label's score is the sigmoid of the model's output (``outputs="logits"``, the default: YAMNet's export ends
   in its classifier's Gemm, before the sigmoid) or the output itself (``outputs="probabilities"``), averaged over the
   clip's patches.

Answers, by item kind (``kinds`` option; default ``sound_source``, ``scene`` and ``events``; other kinds are not
served, so the runner records them ``n/a``):

- ``sound_source`` (and any other closed-set kind named in ``kinds``): the item's choices ranked through the
  ``mapping`` table (default: the folder's ``label_mapping.csv``, else the bundled AudioSet table
  ``data_manifests/tiered/audioset_mapping.csv``); the text is the best choice, the ranking goes to
  :attr:`~airbench_nb.models.base.Generation.ranking`;
- ``scene``: the item's classes ranked through the ``sseu_mapping`` table (default: the bundled
  ``data_manifests/sseu/audioset_mapping.csv``, AudioSet labels to the kit's synthetic SSEU classes and SSEU-Bench's
  real ones); the text is the best mapped class;
- ``events``: the same ranking; the text lists, as JSON ``{"events": [...]}`` (which the output parser
  :func:`airbench_nb.unify.unify` reads as a list; plain text would split "cutlery and dishes" at "and"), every mapped
  class whose score is at least ``threshold`` (default :data:`EVENTS_THRESHOLD`), best first; none passing gives
  ``{"events": []}`` (the model heard none of the classes). The whole ranking is in ``ranking``.

An item none of whose classes the table maps is an error for that item, never a guess; classes without rows are
left out of its ranking. ``match="exact"`` keeps only the tables' exact rows (the SSEU table's scene rows are all
approximate: scenes are then unmapped).

Tables and the model's labels: a table given by an option that names a label the model lacks stops the load in one
line (a typo, or a table for another model). A bundled table (written for AudioSet's 527 labels) may name labels a
521-label model such as YAMNet lacks: those rows are dropped and counted in :attr:`OnnxTagger.settings`
(``mapping_rows_dropped``, ``sseu_mapping_rows_dropped``; for YAMNet both are 0: every row names one of its labels).

The class map is a CSV with the header ``index,mid,display_name`` (YAMNet's ``yamnet_class_map.csv``): row ``i``
names output ``i``; the ``class_map`` option, else ``class_map.csv`` beside the model.
"""

from __future__ import annotations

import csv
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from airbench_nb.models.audio_frontends import LogMelFrontEnd, front_end
from airbench_nb.models.base import Generation, GenerationParams, Prompt
from airbench_nb.models.label_mapping import LabelMapping, MappingError, read_label_mapping
from airbench_nb.models.ranking import TIERED_DATA, clip_at, first_line, kinds_option, prompt_choices
from airbench_nb.models.specs import BUNDLED_YAMNET, SpecError, onnx_model_file

logger = logging.getLogger(__name__)

SSEU_DATA = TIERED_DATA.parent / "sseu"
"""The SSEU data files: ``audioset_mapping.csv`` (AudioSet labels to SSEU-Bench's scene and event classes)."""
AUDIOSET_MAPPING = TIERED_DATA / "audioset_mapping.csv"
"""The bundled table from AudioSet labels to the tiered benchmark's classes."""
SSEU_MAPPING = SSEU_DATA / "audioset_mapping.csv"
"""The bundled table from AudioSet labels to the SSEU scene and event classes (synthetic and SSEU-Bench's)."""
CLASS_MAP_FILE = "class_map.csv"
"""The class map's name beside the model (when the ``class_map`` option does not name one)."""
MAPPING_FILE = "label_mapping.csv"
"""A sound-source table beside the model under this name is that model's own (used before the bundled one)."""
DEFAULT_KINDS: frozenset[str] = frozenset({"sound_source", "scene", "events"})
"""The item kinds served by default."""
EVENTS_THRESHOLD = 0.1
"""Default score (a patch-averaged sigmoid) an event class must reach to be listed in an events answer."""
CLASS_MAP_COLUMNS: tuple[str, ...] = ("index", "mid", "display_name")
"""The class map's header."""

Outputs = Literal["logits", "probabilities"]
_QUANTISED = {"tensor(uint8)": np.uint8, "tensor(int8)": np.int8}


@dataclass(frozen=True)
class Quantisation:
    """Scale and zero point of a quantised graph input or output (read from its initializers)."""

    scale: float
    """The step of one integer unit."""
    zero_point: int
    """The integer that stands for 0.0."""
    dtype: type[np.integer]
    """``np.uint8`` or ``np.int8``."""

    def quantise(self, x: np.ndarray) -> np.ndarray:
        """``clip(round(x / scale) + zero_point)`` to the type's range, as that type."""
        info = np.iinfo(self.dtype)
        q = np.round(x / self.scale) + self.zero_point
        return np.clip(q, info.min, info.max).astype(self.dtype)

    def dequantise(self, q: np.ndarray) -> np.ndarray:
        """``(q - zero_point) * scale`` as float32."""
        return ((q.astype(np.float32) - self.zero_point) * self.scale).astype(np.float32)


def onnxruntime_errors() -> tuple[type[BaseException], ...]:
    """The exception types onnxruntime raises (its own, which derive from ``Exception`` only), with the builtins."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    names = ("Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException")
    names += ("InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail")
    found = [getattr(state, name) for name in names if isinstance(getattr(state, name, None), type)]
    return (RuntimeError, ValueError, OSError, *found)


def read_class_map(path: Path) -> list[str]:
    """The display names of a class map CSV, in index order.

    Raises:
        ValueError: In one line naming the file (and the line): missing, no ``index,mid,display_name`` header, an
            index out of order, an empty name.
    """
    if not path.is_file():
        raise ValueError(f"class map {path}: no such file (give class_map=<csv with {','.join(CLASS_MAP_COLUMNS)}>)")
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        header = [h.strip() for h in reader.fieldnames or []]
        if header[:3] != list(CLASS_MAP_COLUMNS):
            raise ValueError(f"class map {path}: the header is {','.join(header)!r}, not {','.join(CLASS_MAP_COLUMNS)}")
        names: list[str] = []
        for line, row in enumerate(reader, start=2):
            index, name = (row.get("index") or "").strip(), (row.get("display_name") or "").strip()
            if index != str(len(names)):
                raise ValueError(f"class map {path}: line {line}: index {index!r}, expected {len(names)}")
            if not name:
                raise ValueError(f"class map {path}: line {line}: display_name is empty")
            names.append(name)
    if not names:
        raise ValueError(f"class map {path}: no rows")
    return names


def read_initializers(model_path: Path, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The values of the named initializers of an ONNX model (external data read only for those).

    Raises:
        ImportError: Without the ``onnx`` package.
    """
    import onnx
    from onnx import numpy_helper
    from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data

    model = onnx.load(str(model_path), load_external_data=False)
    out: dict[str, np.ndarray] = {}
    for tensor in model.graph.initializer:
        if tensor.name in names:
            if uses_external_data(tensor):
                load_external_data_for_tensor(tensor, str(model_path.parent))
            out[tensor.name] = numpy_helper.to_array(tensor)
    return out


class OnnxTagger:
    """An ONNX audio tagger, its class map, front end and mapping tables behind the AudioLM protocol.

    Args:
        rest: The spec after ``onnx:``: a ``.onnx`` file, a folder holding ``model.onnx`` (or one ``.onnx``), or
            ``yamnet-bundled``.
        batch_size: Patches per forward pass when the model's batch dimension is dynamic.
        class_map: The class map CSV; None: ``class_map.csv`` beside the model.
        frontend: A front end of :data:`~airbench_nb.models.audio_frontends.FRONT_ENDS`.
        mapping: The sound-source table; None: the folder's ``label_mapping.csv``, else the bundled AudioSet one.
        sseu_mapping: The scene and events table; None: the bundled SSEU one.
        match: ``all`` rows, or ``exact`` ones only.
        outputs: ``logits`` (a sigmoid is applied) or ``probabilities``.
        threshold: Score an event class must reach to be listed in an events answer.
        kinds: Item kinds served (comma-separated or a list); None: ``sound_source``, ``scene``, ``events``.
        threads: onnxruntime's intra-op threads (0: its default, all cores).

    Raises:
        SpecError: In one line naming the spec: missing weights or files, a bad class map, front end or option, a
            table naming labels the model lacks, a model whose input does not fit the front end, missing
            quantisation initializers.
    """

    def __init__(
        self,
        rest: str,
        *,
        batch_size: int = 64,
        class_map: str | Path | None = None,
        frontend: str = "yamnet",
        mapping: str | Path | None = None,
        sseu_mapping: str | Path | None = None,
        match: str = "all",
        outputs: str = "logits",
        threshold: float = EVENTS_THRESHOLD,
        kinds: str | list[str] | None = None,
        threads: int = 0,
    ) -> None:
        self.spec = f"onnx:{rest}"
        self.samples_vary = False
        """Deterministic: a ranking by tag probability, the same under every temperature and seed; ``infer
        --samples K`` stores one sample."""
        if batch_size < 1:
            raise SpecError(f"{self.spec}: batch_size must be at least 1, got {batch_size}")
        if match not in ("all", "exact"):
            raise SpecError(f"{self.spec}: match={match!r}: use all or exact")
        if outputs not in ("logits", "probabilities"):
            raise SpecError(f"{self.spec}: outputs={outputs!r}: use logits or probabilities")
        if not (isinstance(threshold, int | float) and math.isfinite(threshold) and 0.0 <= threshold <= 1.0):
            raise SpecError(f"{self.spec}: threshold={threshold!r}: give a score between 0 and 1")
        if threads < 0:
            raise SpecError(f"{self.spec}: threads must be 0 (onnxruntime's default) or more, got {threads}")
        self.batch_size = int(batch_size)
        self.outputs: Outputs = outputs  # type: ignore[assignment]
        self.threshold = float(threshold)
        self.threads = int(threads)
        self.match = match
        self.kinds = DEFAULT_KINDS if kinds is None else kinds_option(self.spec, kinds)
        try:
            self.frontend: LogMelFrontEnd = front_end(frontend)
        except ValueError as exc:
            raise SpecError(f"{self.spec}: {exc}") from None
        self.model_path = self._model_file(rest)
        folder = self.model_path.parent
        try:
            self.labels = read_class_map(Path(class_map).expanduser() if class_map else folder / CLASS_MAP_FILE)
        except ValueError as exc:
            raise SpecError(f"{self.spec}: {exc}") from None
        own = folder / MAPPING_FILE
        self.mapping, self.mapping_dropped = self._table(
            mapping, own if own.is_file() and mapping is None else AUDIOSET_MAPPING
        )
        self.sseu_mapping, self.sseu_mapping_dropped = self._table(sseu_mapping, SSEU_MAPPING)
        self._load_session()
        logger.info(
            "%s: %d labels, front end %s, %s input, %s output, %s; sound_source table %s (%d rows dropped), "
            "SSEU table %s (%d rows dropped)",
            self.spec,
            len(self.labels),
            self.frontend.name,
            "quantised" if self.input_quant else "float",
            "quantised" if self.output_quant else "float",
            "batched" if self.batched else "patch by patch",
            self.mapping.name,
            self.mapping_dropped,
            self.sseu_mapping.name,
            self.sseu_mapping_dropped,
        )

    # --- loading ---------------------------------------------------------------------------------------------

    def _model_file(self, rest: str) -> Path:
        if rest == BUNDLED_YAMNET:
            from airbench_nb.weights import WeightsMissing, bundled_path

            try:
                return bundled_path("yamnet") / "model.onnx"
            except WeightsMissing as exc:
                raise SpecError(str(exc)) from None
        return onnx_model_file(rest)

    def _table(self, given: str | Path | None, default: Path) -> tuple[LabelMapping, int]:
        """A mapping table checked against the model's labels, and how many of its rows were dropped."""
        path = Path(given).expanduser() if given is not None else default
        try:
            table = read_label_mapping(path)
            if self.match == "exact":
                table = table.only("exact")
        except MappingError as exc:
            raise SpecError(f"{self.spec}: {exc}") from None
        unknown = table.unknown_sources(self.labels)
        if not unknown:
            return table, 0
        if given is not None:
            shown = ", ".join(repr(u) for u in unknown[:3]) + (", ..." if len(unknown) > 3 else "")
            raise SpecError(
                f"{self.spec}: the mapping {path} names {len(unknown)} label(s) the model does not have ({shown}); "
                "fix the table or give one for this model's labels"
            )
        missing = set(unknown)
        rows = tuple(row for row in table.rows if row.source_label not in missing)
        logger.info(
            "%s: %s: %d row(s) name labels the model lacks, dropped", self.spec, path, len(table.rows) - len(rows)
        )
        if not rows:
            raise SpecError(f"{self.spec}: the mapping {path} names none of the model's labels")
        return LabelMapping(rows, path), len(table.rows) - len(rows)

    def _load_session(self) -> None:
        try:
            import onnxruntime as ort
        except ImportError:
            raise SpecError(f"{self.spec}: needs onnxruntime (pip install onnxruntime)") from None
        self._errors = onnxruntime_errors()
        options = ort.SessionOptions()
        if self.threads:
            options.intra_op_num_threads = self.threads
        try:
            self.session = ort.InferenceSession(str(self.model_path), options, providers=["CPUExecutionProvider"])
        except self._errors as exc:
            raise SpecError(f"{self.spec}: cannot load {self.model_path}: {first_line(exc)}") from None
        inputs, outputs = self.session.get_inputs(), self.session.get_outputs()
        if len(inputs) != 1 or len(outputs) < 1:
            raise SpecError(f"{self.spec}: expected one input and an output, the model has {len(inputs)} input(s)")
        self.input, self.output = inputs[0], outputs[0]
        self.batched = not isinstance(self.input.shape[0], int)
        self._check_shape()
        names = [f"{self.input.name}_scale", f"{self.input.name}_zero_point"]
        names += [f"{self.output.name}_scale", f"{self.output.name}_zero_point"]
        wanted = [n for n, io in zip(names, [self.input] * 2 + [self.output] * 2, strict=True) if io.type in _QUANTISED]
        values: dict[str, np.ndarray] = {}
        if wanted:
            try:
                values = read_initializers(self.model_path, wanted)
            except ImportError:
                raise SpecError(f"{self.spec}: a quantised model needs the onnx package (pip install onnx)") from None
            lacking = [n for n in wanted if n not in values]
            if lacking:
                raise SpecError(f"{self.spec}: quantised model without the initializer(s) {', '.join(lacking)}")
        self.input_quant = self._quantisation(self.input, values)
        self.output_quant = self._quantisation(self.output, values)

    @staticmethod
    def _quantisation(arg: Any, values: dict[str, np.ndarray]) -> Quantisation | None:
        if arg.type not in _QUANTISED:
            return None
        scale = values[f"{arg.name}_scale"]
        zero = values[f"{arg.name}_zero_point"]
        return Quantisation(
            float(np.asarray(scale).reshape(-1)[0]), int(np.asarray(zero).reshape(-1)[0]), _QUANTISED[arg.type]
        )

    def _check_shape(self) -> None:
        """Refuse a model whose input cannot take the front end's patches, or whose output is not [N, labels]."""
        shape = list(self.input.shape)
        if len(shape) not in (3, 4):
            raise SpecError(f"{self.spec}: the model's input {self.input.name} has shape {shape}; expected 3 or 4 dims")
        fe = self.frontend
        frames = fe.patch_frames
        want = [fe.n_mels, frames] if fe.mel_first else [frames, fe.n_mels]
        got = shape[-2:]
        for have, need in zip(got, want, strict=True):
            if isinstance(have, int) and (need is None or have != need):
                raise SpecError(
                    f"{self.spec}: the model's input {self.input.name} {shape} does not take front end {fe.name}'s "
                    f"patches ({'x'.join(str(w or 'frames') for w in want)})"
                )
        if len(shape) == 4 and isinstance(shape[1], int) and shape[1] != 1:
            raise SpecError(f"{self.spec}: the model's input {self.input.name} {shape} has {shape[1]} channels, not 1")
        out = list(self.output.shape)
        if len(out) != 2 or (isinstance(out[1], int) and out[1] != len(self.labels)):
            raise SpecError(
                f"{self.spec}: the model's output {self.output.name} has shape {out}; expected [N, {len(self.labels)}] "
                "(one score per class map row)"
            )

    # --- scoring ---------------------------------------------------------------------------------------------

    @property
    def settings(self) -> dict[str, Any]:
        """The backend's settings, recorded with each response (``generation["backend"]``)."""
        return {
            "name": "onnx",
            "model": self.spec.partition(":")[2],
            "model_file": str(self.model_path),
            "frontend": self.frontend.describe(),
            "outputs": self.outputs,
            "quantised_input": self.input_quant is not None,
            "quantised_output": self.output_quant is not None,
            "batched": self.batched,
            "threads": self.threads,
            "threshold": self.threshold,
            "match": self.match,
            "source_labels": len(self.labels),
            "mapping": self.mapping.name,
            "mapping_rows": len(self.mapping.rows),
            "mapping_rows_dropped": self.mapping_dropped,
            "unmapped_source_labels": len(self.mapping.unmapped(self.labels)),
            "sseu_mapping": self.sseu_mapping.name,
            "sseu_mapping_rows": len(self.sseu_mapping.rows),
            "sseu_mapping_rows_dropped": self.sseu_mapping_dropped,
            "sseu_unmapped_source_labels": len(self.sseu_mapping.unmapped(self.labels)),
        }

    def _forward(self, patches: np.ndarray) -> np.ndarray:
        """The model's per-patch scores of its labels: ``[patches, labels]`` (sigmoid applied to logits)."""
        x = patches[:, None] if len(self.input.shape) == 4 else patches
        if self.input_quant is not None:
            x = self.input_quant.quantise(x)
        step = self.batch_size if self.batched else 1
        rows = []
        for start in range(0, x.shape[0], step):
            out = self.session.run([self.output.name], {self.input.name: x[start : start + step]})[0]
            rows.append(self.output_quant.dequantise(out) if self.output_quant is not None else out.astype(np.float32))
        scores = np.concatenate(rows, axis=0)
        if self.outputs == "logits":
            scores = 0.5 * (1.0 + np.tanh(0.5 * scores))  # the sigmoid, without overflow at logits near -100
        return scores

    def label_scores(self, clip: np.ndarray) -> np.ndarray:
        """A clip's score of every label (:attr:`labels`), averaged over its patches.

        Args:
            clip: Mono float32 samples at the front end's rate.
        """
        return self._forward(self.frontend.patches(clip)).mean(axis=0)

    def _scores_by_label(self, row: np.ndarray) -> dict[str, float]:
        out: dict[str, float] = {}
        for label, value in zip(self.labels, row.tolist(), strict=True):
            out[label] = max(value, out.get(label, value))
        return out

    def _classes(self, prompt: Prompt) -> tuple[list[str], LabelMapping] | str:
        """The classes to rank for a prompt and the table that maps them, or why the item cannot be answered."""
        kind = prompt.item.kind
        if kind in ("scene", "events"):
            classes = getattr(prompt.item, "classes", None)
            if not classes:
                return f"{self.spec}: {prompt.uid} ({kind}) has no class list"
            return list(classes), self.sseu_mapping
        choices = prompt_choices(self.spec, prompt)
        return choices if isinstance(choices, str) else (choices, self.mapping)

    def _answer(self, kind: str, scores: dict[str, float], classes: list[str], table: LabelMapping) -> Generation:
        try:
            ranking = table.rank(scores, classes)
        except MappingError as exc:
            return Generation(error=f"{self.spec}: {exc}")
        if kind == "events":
            listed = [r.label for r in ranking if r.score >= self.threshold]
            return Generation(text=json.dumps({"events": listed}, ensure_ascii=False), ranking=ranking)
        return Generation(text=ranking[0].label, ranking=ranking)

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        """Answer each prompt from the model's label scores (the prompt text and decoding parameters are not read).

        Returns:
            One :class:`Generation` per prompt (module docstring); an item without classes, with several clips, bad
            audio or no mapped class gets ``error`` set alone.
        """
        del params  # a tagger does not decode
        results: list[Generation] = []
        for prompt in prompts:
            target = self._classes(prompt)
            if isinstance(target, str):
                results.append(Generation(error=target))
                continue
            classes, table = target
            if not any(table.sources_of(c) for c in classes):
                try:
                    table.rank({}, classes)
                except MappingError as exc:
                    results.append(Generation(error=f"{self.spec}: {exc}"))
                    continue
            clip = clip_at(self.spec, prompt, self.frontend.sample_rate)
            if isinstance(clip, str):
                results.append(Generation(error=clip))
                continue
            try:
                row = self.label_scores(clip)
            except self._errors as exc:
                logger.warning("%s: %s failed: %s", self.spec, prompt.uid, first_line(exc))
                results.append(Generation(error=f"{type(exc).__name__}: {first_line(exc)}"))
                continue
            results.append(self._answer(prompt.item.kind, self._scores_by_label(row), classes, table))
        return results

    def close(self) -> None:
        """Free the session."""
        if hasattr(self, "session"):
            del self.session
