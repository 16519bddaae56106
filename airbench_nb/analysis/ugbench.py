"""UG-Bench's ranking over every task the kit knows: a sub-rank per capability, then a weighted total on 0-100.

UG-Bench (Interspeech 2026) places its tasks in four capabilities with weights: speech perception 0.4, audio
perception 0.3, speech generation 0.2, spoken language understanding 0.1. Which task of the kit belongs where, where
its score lives in a run's score table and whether higher or lower is better is data, not code: the capability map
``data_manifests/ugbench_capabilities.json`` (:func:`load_capability_map`). The rules, in order:

1. **Tasks.** A task of the map enters the ranking when at least one model has a score for it; the others are left
   out and listed (:attr:`UgBenchRanking.left_out`). The kit's own tasks (``kit_own`` in the map: multi-clip,
   multi-turn) are left out unless ``include_kit_tasks`` is set, so that the ranking rests on tasks UG-Bench has.
2. **Ranks per task.** The models are ranked with :func:`scipy.stats.rankdata` on the score (negated when higher is
   better), 1 = best. Ties share the mean of their ranks (``ties="average"``, the kit's choice; ``min``, ``max`` and
   ``dense`` are the other methods of ``rankdata``).
3. **A model without a score for a task** (a text-only model on speech generation, an answer file that failed
   throughout) is, by default (``missing="last"``), ranked after every model that has one, tied with the others
   that lack it: it cannot do the task, so it does no better than any model that can, and no model gains a place by
   skipping a task. Where a metric keeps failed units in its value (speech output: a text answer is every word
   deleted, WER 1), the map marks the task ``failed_means_missing``: a model that failed every unit counts as
   without a score (:attr:`UgBenchRanking.unable`). With ``missing="skip"`` a model without a score is left out
   of that task's ranking instead; a model with no task of a capability then has no sub-rank there, its total is
   renormalised over the capabilities it has and it is flagged ``partial``.
4. **Sub-rank.** A capability's sub-rank is the mean of the model's ranks over the capability's tasks.
5. **Total.** Each sub-rank ``r`` is put on 0-100 by the number of models ``N``: ``(N + 1 - r) / N * 100``
   (``scale="ugbench"``: rank 1 scores 100, rank N scores 100 / N), and the total is the weighted mean of the four
   (weights renormalised over the capabilities that have a task). UG-Bench's summary says only "scaled to 0-100
   by the number of models" (the full text was not at hand); this form is the one its published totals fit
   (78.18, 62.73 and 57.27 are 860/11, 690/11 and 630/11 with its 11 LALMs). ``scale="minmax"`` gives
   ``(N - r) / (N - 1) * 100`` instead (rank N scores 0).
6. **Order.** Models are listed by total, best first; equal totals share a position (competition ranking) and are
   listed by name.

Where UG-Bench's description is silent (ties, models that cannot perform a task, the exact scaling), the choices
above are the kit's, each a parameter of :func:`ugbench_ranking`, and stated in ``docs/analysis.md``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from airbench_nb.analysis.ranking import validate_weights
from airbench_nb.analysis.stats import plain
from airbench_nb.analysis.tables import judge_label, split_key
from airbench_nb.analysis_report import Capability, UgBenchDetail, UgBenchPayload, UgRankingRow
from airbench_nb.score_table import ScoreEntry, ScoreSection, ScoreTable

logger = logging.getLogger(__name__)

CAPABILITIES: tuple[str, ...] = (
    "speech_perception",
    "audio_perception",
    "speech_generation",
    "spoken_language_understanding",
)
"""UG-Bench's capabilities, in report order."""

UG_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "speech_perception": 0.4,
        "audio_perception": 0.3,
        "speech_generation": 0.2,
        "spoken_language_understanding": 0.1,
    }
)
"""UG-Bench's weights of the capabilities in the total."""

CAPABILITY_MAP_FILE = Path(__file__).resolve().parents[2] / "data_manifests" / "ugbench_capabilities.json"
"""The capability map shipped with the kit."""

LEVELS: tuple[str, ...] = ("task", "category", "subset", "average")
"""Levels of a score-table section a map entry may name (``average`` takes the section's Average)."""

SOURCES: tuple[str, ...] = ("score_table", "extra")
"""Where a task's scores come from: the run's score table, or scores passed in (``extra``: the MOS)."""

DIGITS = 9
"""Decimals kept of scaled sub-ranks, weights and totals (drops floating-point noise such as 59.99999999999999)."""

Missing = Literal["last", "skip"]
Ties = Literal["average", "min", "max", "dense"]
Scale = Literal["ugbench", "minmax"]

MISSING_RULES: Mapping[str, str] = MappingProxyType(
    {
        "last": "a model without a score for a task is ranked after every model with one, tied with the others "
        "without one",
        "skip": "a model without a score for a task is left out of that task's ranking; its sub-rank is the mean "
        "over the tasks it has, its total renormalised over the capabilities it has (partial)",
    }
)
"""How a model without a score for a task is ranked, by ``missing``."""

SCALES: Mapping[str, str] = MappingProxyType(
    {"ugbench": "(N + 1 - sub_rank) / N * 100", "minmax": "(N - sub_rank) / (N - 1) * 100"}
)
"""How a sub-rank is put on 0-100 (N = models ranked), by ``scale``."""


@dataclass(frozen=True)
class TaskSpec:
    """One task of the capability map."""

    id: str
    """The task's name in the ranking (unique in the map)."""
    capability: str
    """The capability it belongs to (one of :data:`CAPABILITIES`)."""
    metric: str
    """The metric its score is (for tables: ``accuracy``, ``WER``, ``BLEU``, ...)."""
    higher_is_better: bool
    """The metric's direction: True when a higher score is better (accuracy), False when lower is (WER)."""
    source: str = "score_table"
    """``score_table`` (read from the run's scores) or ``extra`` (passed in, e.g. MOS)."""
    section: str | None = None
    """Score-table section holding the score (``foundation``, ``chat``, ``transcription``, ...); None for extra."""
    level: str | None = None
    """Level of the section (:data:`LEVELS`); None for extra."""
    name: str | None = None
    """Name of the entry at that level (a task, a category, a prompting mode; ``average``); None for extra."""
    kit_own: bool = False
    """True for the kit's own tasks (not AIR-Bench's, SSEU-Bench's or UG-Bench's): ranked only on request."""
    failed_means_missing: bool = False
    """True where the metric keeps failed units inside ``n`` with a value (speech output: a text answer is every
    word deleted, WER 1): an entry whose every unit failed then means the model cannot do the task, and it is
    ranked as a model without a score (:data:`MISSING_RULES`)."""
    note: str | None = None
    """Why the task sits where it does, where that is not obvious."""


@dataclass(frozen=True)
class CapabilityMap:
    """Every task the kit knows, placed in one of UG-Bench's capabilities."""

    tasks: tuple[TaskSpec, ...]
    """The tasks, in map order."""
    version: int = 1
    """Version of the map's format."""
    source: str = ""
    """The file the map was read from (empty when built in code)."""

    def task(self, task_id: str) -> TaskSpec:
        """The task named ``task_id``.

        Raises:
            KeyError: When the map has no such task.
        """
        for spec in self.tasks:
            if spec.id == task_id:
                return spec
        raise KeyError(f"task {task_id!r} is not in the capability map {self.source or '(in code)'}")

    def of(self, capability: str) -> list[TaskSpec]:
        """The tasks of one capability, in map order."""
        return [spec for spec in self.tasks if spec.capability == capability]

    def frame(self) -> pd.DataFrame:
        """One row per task: ``id, capability, metric, higher_is_better, source, section, level, name, kit_own``."""
        columns = ["id", "capability", "metric", "higher_is_better", "source", "section", "level", "name", "kit_own"]
        return pd.DataFrame([{c: getattr(s, c) for c in columns} for s in self.tasks], columns=columns)


def _map_error(path: str, where: str, problem: str) -> ValueError:
    return ValueError(f"{path}: {where}: {problem}")


def _task_spec(raw: Any, index: int, path: str) -> TaskSpec:
    """One entry of the map's ``tasks`` checked, with an error naming the file, the entry and the field."""
    where = f"tasks[{index}]" + (f" ({raw.get('id')!r})" if isinstance(raw, Mapping) and raw.get("id") else "")
    if not isinstance(raw, Mapping):
        raise _map_error(path, where, f"an entry must be an object, got {type(raw).__name__}")
    known = {f for f in TaskSpec.__dataclass_fields__}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise _map_error(path, where, f"unknown fields {unknown}; known: {', '.join(sorted(known))}")
    for name in ("id", "capability", "metric"):
        if not isinstance(raw.get(name), str) or not raw[name].strip():
            raise _map_error(path, where, f"field {name!r} must be a non-empty string, got {raw.get(name)!r}")
    if raw["capability"] not in CAPABILITIES:
        raise _map_error(path, where, f"capability {raw['capability']!r} is not one of {', '.join(CAPABILITIES)}")
    if not isinstance(raw.get("higher_is_better"), bool):
        raise _map_error(
            path, where, f"field 'higher_is_better' must be true or false, got {raw.get('higher_is_better')!r}"
        )
    source = raw.get("source", "score_table")
    if source not in SOURCES:
        raise _map_error(path, where, f"source {source!r} is not one of {', '.join(SOURCES)}")
    if source == "score_table":
        for name in ("section", "level", "name"):
            if not isinstance(raw.get(name), str) or not raw[name].strip():
                raise _map_error(path, where, f"field {name!r} must name where the score is, got {raw.get(name)!r}")
        if raw["level"] not in LEVELS:
            raise _map_error(path, where, f"level {raw['level']!r} is not one of {', '.join(LEVELS)}")
    for flag in ("kit_own", "failed_means_missing"):
        if not isinstance(raw.get(flag, False), bool):
            raise _map_error(path, where, f"field {flag!r} must be true or false, got {raw.get(flag)!r}")
    return TaskSpec(**dict(raw))


def parse_capability_map(data: Any, path: str = "(capability map)") -> CapabilityMap:
    """A capability map from its JSON form (``{"version", "tasks": [...]}``), every entry checked.

    Args:
        data: The parsed JSON.
        path: Where it came from, for error messages.

    Returns:
        The :class:`CapabilityMap`.

    Raises:
        ValueError: On a malformed map: the message names the file, the entry and the field.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("tasks"), list):
        raise _map_error(path, "top level", "must be an object with a list 'tasks'")
    tasks = tuple(_task_spec(raw, index, path) for index, raw in enumerate(data["tasks"]))
    seen: set[str] = set()
    for index, spec in enumerate(tasks):
        if spec.id in seen:
            raise _map_error(path, f"tasks[{index}]", f"task id {spec.id!r} appears twice")
        seen.add(spec.id)
    return CapabilityMap(tasks=tasks, version=int(data.get("version", 1)), source=path)


def load_capability_map(path: str | Path | None = None) -> CapabilityMap:
    """Read a capability map (default: the kit's, :data:`CAPABILITY_MAP_FILE`).

    Args:
        path: A JSON file in the map's format; None for the kit's.

    Returns:
        The :class:`CapabilityMap`.

    Raises:
        ValueError: On a file that is not JSON or a malformed map (file, entry and field named).
        FileNotFoundError: When the file does not exist.
    """
    file = Path(path) if path is not None else CAPABILITY_MAP_FILE
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{file}: line {err.lineno}: not valid JSON ({err.msg})") from None
    return parse_capability_map(data, str(file))


# ----------------------------------------------------------------------------------------------- scores per task


def _entry(section: ScoreSection, level: str, name: str) -> ScoreEntry | None:
    if level == "average":
        return section.average
    entries = {"task": section.tasks, "category": section.categories, "subset": section.subsets or {}}[level]
    return entries.get(name)


def _section(table: Any, name: str) -> ScoreSection | None:
    if name in ("foundation", "chat"):
        return getattr(table, name)
    return (table.metric_sections or {}).get(name)


def task_scores(
    table: ScoreTable,
    protocol: str = "strict",
    chat_judge: str | None = None,
    capability_map: CapabilityMap | None = None,
) -> pd.DataFrame:
    """Per-model scores of every task of the map that is read from the score table.

    Args:
        table: A run's scores (``summary.json``; :meth:`RunFolder.read_scores` or ``score_run_folder``).
        protocol: ``official`` or ``strict``.
        chat_judge: The Chat judge whose scores to use (a spec; ``proxy`` matches the proxy's label); None when each
            model has one.
        capability_map: The map (default :func:`load_capability_map`).

    Returns:
        One row per model (index ``model``), one column per task id of the map with a score-table source, NaN where
        the model has no score (no such section, entry or value; for a task marked ``failed_means_missing``, also
        an entry whose every unit failed).

    Raises:
        ValueError: On an unknown protocol, or several Chat judges for one model and ``chat_judge`` None.
    """
    return _read_scores(table, protocol, chat_judge, capability_map or load_capability_map())[0]


def _read_scores(
    table: ScoreTable, protocol: str, chat_judge: str | None, cmap: CapabilityMap
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """:func:`task_scores`' frame, and ``{task: [models]}`` failing every unit of a ``failed_means_missing`` task."""
    if protocol not in ("official", "strict"):
        raise ValueError(f"unknown protocol {protocol!r}: use 'official' or 'strict'")
    specs = [s for s in cmap.tasks if s.source == "score_table"]
    rows: dict[str, dict[str, float]] = {}
    judges: dict[str, list[str]] = {}
    unable: dict[str, list[str]] = {}
    for key, scores in table.items():
        model, judge = split_key(key, scores)
        # another Chat judge's row is skipped; a model judged by no Chat judge (``-``: an ASR or TTS model) is kept
        if chat_judge is not None and judge != "-" and judge_label(judge) != judge_label(chat_judge):
            continue
        judges.setdefault(model, []).append(judge)
        protocol_scores = getattr(scores, protocol)
        row: dict[str, float] = {}
        for spec in specs:
            section = _section(protocol_scores, str(spec.section)) if protocol_scores is not None else None
            entry = _entry(section, str(spec.level), str(spec.name)) if section is not None else None
            value = plain(entry.value) if entry is not None and entry.value is not None else None
            if value is not None and spec.failed_means_missing and entry is not None and entry.failures >= entry.n:
                unable.setdefault(spec.id, []).append(model)
                value = None
            row[spec.id] = np.nan if value is None else value
        rows[model] = row
    doubled = {m: j for m, j in judges.items() if len(j) > 1}
    if doubled:
        listed = "; ".join(f"{m}: {', '.join(j)}" for m, j in doubled.items())
        raise ValueError(f"several Chat judges for one model ({listed}): pass chat_judge= to choose one")
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=[s.id for s in specs], dtype=float)
    for task, models in unable.items():
        logger.info("%s: every unit failed for %s: ranked as without a score", task, ", ".join(models))
    return frame.rename_axis("model"), unable


def _extra_frame(extra: Any, cmap: CapabilityMap) -> pd.DataFrame:
    """Extra scores (``{task: {model: value}}`` or a models x tasks frame) as a float frame, tasks checked."""
    if extra is None:
        return pd.DataFrame(dtype=float)
    frame = extra.copy() if isinstance(extra, pd.DataFrame) else pd.DataFrame(dict(extra))
    for task in frame.columns:
        try:
            spec = cmap.task(str(task))
        except KeyError as err:
            raise ValueError(f"extra scores: {err.args[0]}") from None
        if spec.source != "extra":
            raise ValueError(f"extra scores: task {task!r} is read from the score table, not passed in")
    return frame


def _numeric(frame: pd.DataFrame, what: str) -> pd.DataFrame:
    """``frame`` as floats; a value that is not a number or is infinite is an error naming model and task."""
    out = pd.DataFrame(index=[str(i) for i in frame.index], dtype=float)
    for column in frame.columns:
        raw = pd.Series(frame[column].to_numpy(), index=out.index, dtype=object)
        numbers = pd.to_numeric(raw, errors="coerce").astype(float)
        bad = raw[(numbers.isna() & raw.notna()) | np.isinf(numbers)]
        if not bad.empty:
            model, value = next(iter(bad.items()))
            problem = "is not finite" if isinstance(value, (int, float)) else "is not a number"
            raise ValueError(f"{what}: model {model!r}, task {str(column)!r}: score {value!r} {problem}")
        out[str(column)] = numbers
    return out


# ------------------------------------------------------------------------------------------------------ ranking


@dataclass(frozen=True)
class CapabilityRanks:
    """One capability: the tasks it is ranked over and every model's rank on each."""

    capability: str
    """The capability."""
    weight: float
    """Its weight as given (before renormalisation)."""
    tasks: tuple[str, ...]
    """Task ids ranked, in map order."""
    ranks: dict[str, dict[str, float]]
    """``{model: {task: rank}}`` (1 = best); a task is absent where the model was not ranked on it (``skip``)."""
    scores: dict[str, dict[str, float]]
    """``{model: {task: score}}``: the raw scores ranked (absent where the model has none)."""

    def payload(self) -> Capability:
        """Its tasks and ranks: ``analysis.json``'s ``ugbench.capabilities.<capability>``."""
        return Capability(tasks=list(self.tasks), ranks={m: dict(r) for m, r in self.ranks.items()})


@dataclass(frozen=True)
class UgBenchModel:
    """One model's place in the ranking."""

    model: str
    """Model name."""
    position: int
    """Place in the ranking (1 = best; equal totals share a place)."""
    sub_ranks: dict[str, float | None]
    """Sub-rank per capability ranked (mean of the model's task ranks); None where it has no ranked task."""
    scaled: dict[str, float | None]
    """Each sub-rank on 0-100 (:data:`SCALES`); None where the sub-rank is."""
    score: float | None
    """Weighted total on 0-100; None when the model has no sub-rank of positive weight."""
    partial: bool
    """True when a capability of positive weight has no sub-rank (``missing="skip"`` only)."""

    def row(self) -> UgRankingRow:
        """``{model, sub_ranks, score}``: an entry of ``analysis.json``'s ``ugbench.ranking``."""
        return UgRankingRow(model=self.model, sub_ranks=dict(self.sub_ranks), score=self.score)


@dataclass(frozen=True)
class UgBenchRanking:
    """UG-Bench's ranking of a run's models: per capability the task ranks, per model sub-ranks and the total."""

    capabilities: dict[str, CapabilityRanks]
    """Per capability (of :data:`CAPABILITIES`), its tasks and ranks; a capability without tasks has none."""
    models: tuple[UgBenchModel, ...]
    """The models, best total first."""
    weights: dict[str, float]
    """The validated weights as given."""
    effective_weights: dict[str, float]
    """The weights renormalised over the capabilities that have a task (what a complete model's total uses)."""
    n_models: int
    """N: the number of models ranked (the scale's denominator)."""
    missing: str
    """How a model without a score for a task is ranked (:data:`MISSING_RULES`)."""
    ties: str
    """How ties share ranks (the ``method`` of :func:`scipy.stats.rankdata`)."""
    scale: str
    """How a sub-rank is put on 0-100 (:data:`SCALES`)."""
    left_out: dict[str, str] = field(default_factory=dict)
    """Tasks of the map not ranked, with why (no model has a score; the kit's own task)."""
    unable: dict[str, list[str]] = field(default_factory=dict)
    """``{task: [models]}`` whose every unit of a ``failed_means_missing`` task failed (a text-only model asked to
    speak): ranked as without a score."""
    notes: tuple[str, ...] = ()
    """Anything else the reader should know (capabilities without tasks, ...)."""
    reason: str | None = None
    """Why the ranking is empty; None when it is not."""

    def payload(self) -> UgBenchPayload:
        """The capabilities (tasks and ranks) and the ranking (sub-ranks and total): ``analysis.json``'s ``ugbench``."""
        return UgBenchPayload(
            capabilities={c: ranks.payload() for c, ranks in self.capabilities.items()},
            ranking=[m.row() for m in self.models],
        )

    def as_dict(self) -> dict[str, Any]:
        """``{capabilities: {<capability>: {tasks, ranks}}, ranking: [{model, sub_ranks, score}]}`` (a serializer)."""
        return self.payload().model_dump()

    def detail(self, protocol: str | None = None, chat_judge: str | None = None) -> UgBenchDetail:
        """How the ranking was made: ``analysis.json``'s ``ugbench_detail``.

        Weights, N, the rules in words, tasks left out, models unable, notes, and the protocol and Chat judge of the
        scores ranked.
        """
        return UgBenchDetail(
            weights=dict(self.weights),
            effective_weights=dict(self.effective_weights),
            n_models=self.n_models,
            missing=f"{self.missing}: {MISSING_RULES[self.missing]}",
            ties=f"scipy.stats.rankdata(method={self.ties!r})",
            scale=f"{self.scale}: {SCALES[self.scale]}",
            left_out=dict(self.left_out),
            unable={task: list(models) for task, models in self.unable.items()},
            notes=list(self.notes),
            reason=self.reason,
            protocol=protocol,
            chat_judge=chat_judge,
        )

    def capability_frame(self) -> pd.DataFrame:
        """The capability table, long: one row per (capability, task, model).

        Columns ``capability, weight, task, model, score, rank``; ``score`` is NaN where the model has none.
        """
        columns = ["capability", "weight", "task", "model", "score", "rank"]
        rows = [
            {
                "capability": capability,
                "weight": ranks.weight,
                "task": task,
                "model": entry.model,
                "score": ranks.scores.get(entry.model, {}).get(task, np.nan),
                "rank": ranks.ranks.get(entry.model, {}).get(task, np.nan),
            }
            for capability, ranks in self.capabilities.items()
            for task in ranks.tasks
            for entry in self.models
        ]
        return pd.DataFrame(rows, columns=columns)

    def ranking_frame(self) -> pd.DataFrame:
        """The ranking, long: one row per (model, capability ranked).

        Columns ``position, model, capability, weight`` (renormalised), ``sub_rank``, ``scaled`` (0-100),
        ``contribution`` (its part of the total: weight x scaled / the weights present), ``score`` (the total) and
        ``partial``.
        """
        columns = [
            "position",
            "model",
            "capability",
            "weight",
            "sub_rank",
            "scaled",
            "contribution",
            "score",
            "partial",
        ]
        rows = []
        for entry in self.models:
            present = sum(self.effective_weights[c] for c, v in entry.scaled.items() if v is not None)
            for capability, scaled in entry.scaled.items():
                weight = self.effective_weights[capability]
                rows.append(
                    {
                        "position": entry.position,
                        "model": entry.model,
                        "capability": capability,
                        "weight": weight,
                        "sub_rank": entry.sub_ranks[capability],
                        "scaled": scaled,
                        "contribution": None if scaled is None or not present else weight * scaled / present,
                        "score": entry.score,
                        "partial": entry.partial,
                    }
                )
        return pd.DataFrame(rows, columns=columns)


def _checked_options(missing: str, ties: str, scale: str) -> None:
    if missing not in MISSING_RULES:
        raise ValueError(f"missing={missing!r}: use one of {', '.join(MISSING_RULES)}")
    if ties not in ("average", "min", "max", "dense"):
        raise ValueError(f"ties={ties!r}: use one of average, min, max, dense (scipy.stats.rankdata methods)")
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r}: use one of {', '.join(SCALES)}")


def _task_ranks(values: pd.Series, higher_is_better: bool, missing: str, ties: str) -> pd.Series:
    """Ranks of one task's scores (1 = best); NaN scores last (``last``) or unranked (``skip``)."""
    badness = -values if higher_is_better else values
    if missing == "skip":
        present = badness.dropna()
        return pd.Series(stats.rankdata(present.to_numpy(), method=ties), index=present.index, dtype=float)
    return pd.Series(stats.rankdata(badness.fillna(np.inf).to_numpy(), method=ties), index=values.index, dtype=float)


def _scaled(sub_rank: float | None, n: int, scale: str) -> float | None:
    if sub_rank is None:
        return None
    if scale == "ugbench":
        return round((n + 1 - sub_rank) / n * 100.0, DIGITS)
    return 100.0 if n == 1 else round((n - sub_rank) / (n - 1) * 100.0, DIGITS)


def ugbench_ranking(
    scores: pd.DataFrame | ScoreTable,
    weights: Mapping[str, float] = UG_WEIGHTS,
    capability_map: CapabilityMap | None = None,
    *,
    extra: pd.DataFrame | Mapping[str, Mapping[str, float]] | None = None,
    protocol: str = "strict",
    chat_judge: str | None = None,
    missing: Missing = "last",
    ties: Ties = "average",
    scale: Scale = "ugbench",
    include_kit_tasks: bool = False,
) -> UgBenchRanking:
    """Rank models by UG-Bench's rules over every task of the capability map (see the module docstring).

    Args:
        scores: A run's :class:`~airbench_nb.score_table.ScoreTable` (read with ``protocol`` and ``chat_judge``), or
            a frame of per-model task scores (index: model, columns: task ids of the map; NaN: no score), as
            :func:`task_scores` returns.
        weights: ``{capability: weight}`` (capabilities left out weigh 0); renormalised over the capabilities
            that have a task.
        capability_map: The map (default :func:`load_capability_map`).
        extra: Scores passed in for the map's ``extra`` tasks, ``{task: {model: value}}`` or a models x tasks
            frame (the MOS of the listening test as ``{"tts_mos": {model: mos}}``).
        protocol: Protocol read from a score table.
        chat_judge: Chat judge read from a score table (None when each model has one).
        missing: How a model without a score for a task is ranked (:data:`MISSING_RULES`).
        ties: How tied scores share ranks (``average``, ``min``, ``max``, ``dense``).
        scale: How a sub-rank is put on 0-100 (:data:`SCALES`).
        include_kit_tasks: Rank the kit's own tasks (``kit_own`` in the map) too.

    Returns:
        The :class:`UgBenchRanking`; empty with a ``reason`` when no task has a score.

    Raises:
        ValueError: On bad weights or options, a task column the map does not have, an extra task read from the
            score table, a score that is not a finite number, or a model named twice.
    """
    clean = validate_weights(weights, CAPABILITIES)
    _checked_options(missing, ties, scale)
    cmap = capability_map or load_capability_map()
    unable: dict[str, list[str]] = {}
    if isinstance(scores, ScoreTable):
        frame, unable = _read_scores(scores, protocol, chat_judge, cmap)
    else:
        frame = scores if scores is not None else pd.DataFrame(dtype=float)
        if "model" in frame.columns:
            frame = frame.set_index("model")
    if frame.index.has_duplicates:
        raise ValueError(f"models named twice in scores: {sorted(set(frame.index[frame.index.duplicated()]))}")
    unknown = [str(c) for c in frame.columns if str(c) not in {s.id for s in cmap.tasks}]
    if unknown:
        raise ValueError(f"scores name tasks the capability map {cmap.source or ''} does not have: {unknown}")
    table = _numeric(frame, "scores")
    extras = _numeric(_extra_frame(extra, cmap), "extra scores")
    if not extras.empty:
        table = table.combine_first(extras) if not table.empty else extras
    models = sorted(str(m) for m in table.index)
    table = table.reindex(index=models)
    left_out: dict[str, str] = {}
    ranked: list[TaskSpec] = []
    for spec in cmap.tasks:
        if spec.kit_own and not include_kit_tasks:
            left_out[spec.id] = "the kit's own task (include_kit_tasks=True ranks it)"
        elif spec.id not in table.columns or table[spec.id].isna().all():
            left_out[spec.id] = "no model has a score"
        else:
            ranked.append(spec)
    n = len(models)
    capabilities: dict[str, CapabilityRanks] = {}
    sub_ranks: dict[str, dict[str, float | None]] = {m: {} for m in models}
    for capability in CAPABILITIES:
        specs = [s for s in ranked if s.capability == capability]
        if not specs:
            continue
        ranks = {s.id: _task_ranks(table[s.id], s.higher_is_better, missing, ties) for s in specs}
        per_model = {m: {t: float(r[m]) for t, r in ranks.items() if m in r.index} for m in models}
        capabilities[capability] = CapabilityRanks(
            capability=capability,
            weight=clean[capability],
            tasks=tuple(s.id for s in specs),
            ranks=per_model,
            scores={
                m: {s.id: float(table.at[m, s.id]) for s in specs if not pd.isna(table.at[m, s.id])} for m in models
            },
        )
        for model in models:
            values = list(per_model[model].values())
            sub_ranks[model][capability] = plain(np.mean(values)) if values else None
    notes = tuple(f"no task of {c} has a score: left out of the total" for c in CAPABILITIES if c not in capabilities)
    common: dict[str, Any] = {"weights": clean, "n_models": n, "missing": missing, "ties": ties, "scale": scale}
    common["unable"] = {task: sorted(models) for task, models in unable.items()}
    if not capabilities:
        reason = "no model has a score for any task of the capability map" if n else "no model scores to rank"
        return UgBenchRanking(
            capabilities={}, models=(), effective_weights={}, left_out=left_out, notes=notes, reason=reason, **common
        )
    present_weight = sum(clean[c] for c in capabilities)
    effective = {c: round(clean[c] / present_weight, DIGITS) if present_weight else 0.0 for c in capabilities}
    if present_weight == 0:
        notes = (*notes, "every capability with a task weighs 0: no totals")
    ranked_models = _ranked_models(sub_ranks, effective, n, scale)
    logger.info(
        "UG-Bench ranking of %d models over %d tasks (%d left out): best %s",
        n,
        len(ranked),
        len(left_out),
        ranked_models[0].model if ranked_models else "-",
    )
    return UgBenchRanking(
        capabilities=capabilities,
        models=ranked_models,
        effective_weights=effective,
        left_out=left_out,
        notes=notes,
        **common,
    )


def _ranked_models(
    sub_ranks: Mapping[str, Mapping[str, float | None]], effective: Mapping[str, float], n: int, scale: str
) -> tuple[UgBenchModel, ...]:
    """Every model's scaled sub-ranks and total, best total first (equal totals share a position)."""
    entries = []
    for model, ranks in sub_ranks.items():
        scaled = {c: _scaled(ranks[c], n, scale) for c in effective}
        weighted = [c for c, v in scaled.items() if v is not None and effective[c] > 0]
        total_weight = sum(effective[c] for c in weighted)
        score = sum(effective[c] * float(scaled[c]) for c in weighted) / total_weight if total_weight else None
        partial = any(scaled[c] is None and effective[c] > 0 for c in effective)
        entries.append(
            UgBenchModel(
                model=model,
                position=0,
                sub_ranks={c: ranks[c] for c in effective},
                scaled=scaled,
                score=None if score is None else round(score, DIGITS),
                partial=partial,
            )
        )
    badness = np.array([-e.score if e.score is not None else np.inf for e in entries])
    positions = stats.rankdata(badness, method="min").astype(int) if entries else np.array([], int)
    placed = [replace(e, position=int(p)) for e, p in zip(entries, positions, strict=True)]
    return tuple(sorted(placed, key=lambda e: (e.position, e.model)))
