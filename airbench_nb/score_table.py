"""Typed score results, from one score to a run's ``summary.json``.

:class:`ScoreEntry` -> :class:`ScoreSection` -> :class:`ProtocolScores` -> :class:`RunScores` -> :class:`ScoreTable`.

The shapes are the ones the scoring module has always written (see :mod:`airbench_nb.scoring` for the rules that
fill them); what changed is that they are pydantic models, read and written in one place
(:class:`~airbench_nb.run_folder.RunFolder`), flattened by their own ``frame()`` methods, and never re-parsed from a
CSV. A field that a protocol or a benchmark does not produce is left unset and is absent from the JSON, exactly as
before (``model_dump(exclude_unset=True)``).

Readers use the types: attributes (``scores.strict.foundation.average.value``), ``getattr`` for a protocol or a
section named by a variable, and ``model_fields_set`` to ask whether a field is in the JSON. Only :class:`ScoreTable`
reads like a mapping, of its keys ``"<model> | chat judge <j>"``.

This module is ground level: it imports pydantic and pandas only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, RootModel

MAX_REPS = 100_000
"""Most bootstrap resamples a command option (``--reps``) or a run parameter (``reps``) takes: far past where a 95%
interval stops moving (a few thousand), and short of where the resample matrices would fill memory (200 million
resamples: many GB)."""

BENCHMARKS: tuple[str, ...] = ("foundation", "chat")
"""Sections of a protocol's scores, in report order."""

LEVELS: tuple[tuple[str, str], ...] = (
    ("subset", "subsets"),
    ("task", "tasks"),
    ("turn", "turns"),
    ("category", "categories"),
    ("measure", "measures"),
)
"""``(level, field)`` of the named entries of a section, in the order :meth:`ProtocolScores.frame` lists them."""

FRAME_COLUMNS: tuple[str, ...] = (
    "benchmark",
    "level",
    "name",
    "protocol",
    "value",
    "n",
    "failures",
    "ci_low",
    "ci_high",
    "correct",
    "reference",
    "relative",
)
"""Columns of the long score frame (``scores.csv`` adds ``run`` after them)."""


class _ScoreModel(BaseModel):
    """A record of the score results: fields read as attributes, written as the JSON of the fields that are set."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: the fields that are set, nested models as dicts."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)


class ScoreEntry(_ScoreModel):
    """One score: its value, the units it rests on, its failures and its 95% bootstrap interval."""

    value: float | None
    """The score: accuracy in 0-1 (Foundation), mean 1-10 judge score (Chat); None when nothing was scored."""
    n: int
    """Units the value is computed over: items (Foundation) or (item, order) pairs (Chat)."""
    failures: int
    """Units that failed: dropped from ``n`` (official; strict Chat) or counted wrong inside it (strict Foundation)."""
    ci_low: float | None = None
    """Lower end of the 95% percentile bootstrap interval; None without replicates."""
    ci_high: float | None = None
    """Upper end of the 95% percentile bootstrap interval; None without replicates."""
    correct: int | None = None
    """Foundation: the number of correct answers."""
    accuracy: float | None = None
    """Foundation: the value again, under the official script's name."""
    reference: ScoreEntry | None = None
    """Chat: the judge's mean score of the reference answer over the same units."""
    relative: ScoreEntry | None = None
    """Chat: model score / reference score."""
    orders_scored: list[str] | None = None
    """Chat: the answer orders the value rests on."""
    partial: bool | None = None
    """Averages: True when fewer categories than the benchmark has have a value."""
    categories_present: list[str] | None = None
    """Averages: the categories the Average is taken over."""
    task: str | None = None
    """Per-turn entries: the multi-turn task."""
    turn: int | None = None
    """Per-turn entries: the turn, from 0."""
    conversations: int | None = None
    """Per-turn entries: conversations that reached the turn."""
    clusters: int | None = None
    """Clusters the interval resampled when the units are clustered (the mixes of one utterance, ...); unset when
    every unit is its own (:mod:`airbench_nb.scoring.resample`)."""
    cluster_unit: str | None = None
    """What a cluster is, in words; unset without clusters."""
    design_effect: float | None = None
    """Variance of the clustered bootstrap over that of the unit bootstrap; unset without clusters."""

    @property
    def ci(self) -> tuple[float | None, float | None]:
        """``(ci_low, ci_high)``."""
        return self.ci_low, self.ci_high


class KitCounts(_ScoreModel):
    """What a section holds outside its Average: the kit's own tasks (multi-clip, multi-turn)."""

    tasks: list[str]
    """The kit's tasks of the section."""
    n: int
    """Their units."""
    failures: int
    """Their failed units."""
    unit: str
    """What a unit is."""
    why: str
    """Why they are outside the Average."""


class ScoreSection(_ScoreModel):
    """The scores of one benchmark (Foundation or Chat) under one protocol."""

    subsets: dict[str, ScoreEntry] | None = None
    """Foundation: accuracy per ``<task>_<dataset>`` subset."""
    tasks: dict[str, ScoreEntry] = {}
    """Per task."""
    categories: dict[str, ScoreEntry] = {}
    """Per category (the kit's categories after the official ones)."""
    average: ScoreEntry
    """The benchmark's Average over its official categories."""
    n_items: int = Field(0, alias="items")
    """Outcomes aggregated (Foundation items; Chat units); ``items`` in the JSON."""
    orders: list[str] | None = None
    """Chat: the answer orders present."""
    orders_scored: list[str] | None = None
    """Chat: the orders with at least one scored unit."""
    single_order: bool | None = None
    """Chat: True when every score rests on one order alone."""
    failed: int = 0
    """Failed units of the whole section (the kit's included)."""
    failure_reasons: dict[str, int] = {}
    """Why units failed, with counts, most common first."""
    turns: dict[str, ScoreEntry] | None = None
    """Chat: per (task, turn) of multi-turn tasks, named ``"<task> turn <k>"``."""
    kit: KitCounts | None = None
    """The kit's tasks of the section, outside the Average."""
    uncategorised_tasks: list[str] | None = None
    """Foundation tasks outside the official list (no category)."""
    invalid: int | None = None
    """Official result files: lines that could not be placed in a task."""
    errors: list[str] | None = None
    """Official result files: what was wrong with each invalid line (file, line, field)."""
    kit_rows: dict[str, Any] | None = None
    """Official result files: the kit's rows left out (``count``, per task, ``why``)."""
    strict_only: dict[str, Any] | None = None
    """Official result files: rows the official protocol counts, as the scripts do, and the strict protocol refuses
    as invalid (``count``, ``why``); the same in both protocols' sections."""
    injection: dict[str, Any] | None = None
    """What the injection screen flagged among the section's answers, per judge: ``{judge: {flagged, n, share,
    patterns}}`` (:func:`airbench_nb.scoring.outcomes.injection_counts`); the screen never changes a score. None
    when no verdict was screened."""
    source: str | list[str] | None = None
    """Official result files: the file(s) scored; reference-scored sections: what the scores rest on besides the
    answers (``embeddings: <spec>`` for scenes and events)."""
    measures: dict[str, ScoreEntry] | None = None
    """The tiered benchmark's sections: ``"<granularity> <measure>"`` (accuracy, macro P/R/F1/FNR, top-k recall) of
    one tier (:mod:`airbench_nb.scoring.tier_metrics`)."""
    tier: str | None = None
    """The tiered benchmark's sections: the tier (``A`` ... ``D``) the scores belong to."""
    reason: str | None = None
    """The tiered benchmark's sections: why a measure is n/a in the tier (tier D's F1)."""

    def entries(self) -> Iterator[tuple[str, str, ScoreEntry]]:
        """``(level, name, entry)`` of every score of the section, the Average last."""
        for level, field in LEVELS:
            for name, entry in (getattr(self, field) or {}).items():
                yield level, name, entry
        yield "average", "average", self.average


class ItemCounts(_ScoreModel):
    """Items left out of the tables, per kind, and why."""

    foundation: int = 0
    """Foundation items left out."""
    chat: int | None = None
    """Chat items left out."""
    reference: int | None = None
    """Items scored against references (transcription, scene, events, joint) left out."""
    why: str = ""
    """Why they are left out."""


class ScoreJudges(_ScoreModel):
    """The judges whose verdicts the scores rest on."""

    foundation: list[str] = []
    """Judges that decided Foundation items (strict)."""
    chat: list[str] = []
    """The Chat judge."""
    chat_label: str | None = None
    """How the Chat judge is labelled in tables (the proxy says it is a proxy)."""


class ProtocolScores(_ScoreModel):
    """One model's scores under one protocol (``official`` or ``strict``)."""

    protocol: str
    """``official`` or ``strict``."""
    model: str | None = None
    """The model scored (None for official result files)."""
    seed: int = 0
    """Bootstrap seed."""
    reps: int = 0
    """Bootstrap replicates."""
    unusable_items: ItemCounts | None = None
    """Items whose audio is missing, empty or corrupt: left out of both protocols."""
    graded_items: ItemCounts | None = None
    """Noise-graded copies (``meta.clean_uid``): analysed as SNR curves."""
    rotated_items: ItemCounts | None = None
    """Circular-evaluation copies of items scored here."""
    duplicates: dict[str, Any] | None = None
    """Superseded response and verdict records and stale verdicts, with why."""
    judges: ScoreJudges | None = None
    """The judges the scores rest on."""
    foundation: ScoreSection | None = None
    """Foundation scores; None when the model answered no Foundation item."""
    chat: ScoreSection | None = None
    """Chat scores; None when the model answered no Chat item."""
    metric_sections: dict[str, ScoreSection | None] | None = None
    """Sections of the other registered metrics (:mod:`airbench_nb.scoring.metrics`), by section name; None for a
    metric whose items the model did not answer. Absent when only AIR-Bench's two metrics ran."""

    def sections(self) -> Iterator[tuple[str, ScoreSection]]:
        """``(benchmark, section)`` of the sections present: Foundation, Chat, then the other metrics' sections."""
        for benchmark in BENCHMARKS:
            section = getattr(self, benchmark)
            if section is not None:
                yield benchmark, section
        for name, section in (self.metric_sections or {}).items():
            if section is not None:
                yield name, section

    def rows(self) -> list[dict[str, Any]]:
        """One row per score (columns :data:`FRAME_COLUMNS`)."""
        rows = []
        for benchmark, section in self.sections():
            for level, name, entry in section.entries():
                rows.append(
                    {
                        "benchmark": benchmark,
                        "level": level,
                        "name": name,
                        "protocol": self.protocol,
                        "value": entry.value,
                        "n": entry.n,
                        "failures": entry.failures,
                        "ci_low": entry.ci_low,
                        "ci_high": entry.ci_high,
                        "correct": entry.correct,
                        "reference": entry.reference.value if entry.reference is not None else None,
                        "relative": entry.relative.value if entry.relative is not None else None,
                    }
                )
        return rows


class RunScores(_ScoreModel):
    """One model's scores (for one Chat judge) under each protocol asked for: what ``score_run`` returns."""

    official: ProtocolScores | None = None
    """The official protocol's scores (when asked for)."""
    strict: ProtocolScores | None = None
    """The strict protocol's scores (when asked for)."""

    def protocols(self) -> list[ProtocolScores]:
        """The protocols present, official first."""
        return [table for table in (self.official, self.strict) if table is not None]

    def rows(self) -> list[dict[str, Any]]:
        """One row per score and protocol (columns :data:`FRAME_COLUMNS`)."""
        return [row for table in self.protocols() for row in table.rows()]

    def frame(self) -> Any:
        """The long ``pandas.DataFrame`` of every score (columns :data:`FRAME_COLUMNS`)."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=list(FRAME_COLUMNS))


PROXY_SHORT = "proxy (embedding similarity, not an LLM)"
"""How the proxy judge is named in the summary's ``chat_judge`` column and other table columns."""


def _labelled(table: ProtocolScores, judge: str) -> bool:
    """Whether scoring labelled the Chat judge as other than its spec (a scores-only judge: the proxy).

    Scoring asks the judge registry (:attr:`~airbench_nb.judge.base.BaseJudge.scores_only`), which this ground-level
    module cannot import; its label is in the scores.
    """
    return table.judges is not None and table.judges.chat_label not in (None, judge)


class ScoreTable(RootModel[dict[str, RunScores]]):
    """Every score of a run folder (``summary.json``): one :class:`RunScores` per ``"<model> | chat judge <j>"``."""

    root: dict[str, RunScores] = {}

    def __getitem__(self, key: str) -> RunScores:
        return self.root[key]

    def __contains__(self, key: object) -> bool:
        return key in self.root

    def __len__(self) -> int:
        return len(self.root)

    def __iter__(self) -> Iterator[str]:  # type: ignore[override] - a mapping's iteration: its keys
        return iter(self.root)

    def get(self, key: str, default: Any = None) -> Any:
        """The scores of a key, else ``default`` (as ``dict.get``)."""
        return self.root.get(key, default)

    def __bool__(self) -> bool:
        return bool(self.root)

    def items(self) -> list[tuple[str, RunScores]]:
        """``(key, scores)`` in the order they were scored."""
        return list(self.root.items())

    def keys(self) -> list[str]:
        """The keys ``"<model> | chat judge <judge>"``."""
        return list(self.root)

    def values(self) -> list[RunScores]:
        """The scores, in key order."""
        return list(self.root.values())

    def frame(self) -> Any:
        """The long frame of every score of every model (``scores.csv``): :data:`FRAME_COLUMNS` then ``run``."""
        import pandas as pd

        frames = [scores.frame().assign(run=key) for key, scores in self.root.items()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def summary_rows(self) -> list[dict[str, Any]]:
        """One row per (model, Chat judge, protocol): the Averages and category values (``scores_summary.csv``).

        ``*_n`` and ``*_failed`` are the Average's; ``*_ci`` the Average's interval as a ``(low, high)`` pair;
        ``*_partial`` whether the Average covers fewer categories than the benchmark has.
        """
        rows = []
        for key, scores in self.root.items():
            model, _, judge = key.partition(" | chat judge ")
            for table in scores.protocols():
                row: dict[str, Any] = {
                    "model": table.model or model,
                    "chat_judge": PROXY_SHORT if _labelled(table, judge) else judge or "-",
                    "protocol": table.protocol,
                    "unusable_items": (
                        table.unusable_items.foundation
                        + (table.unusable_items.chat or 0)
                        + (table.unusable_items.reference or 0)
                    )
                    if table.unusable_items is not None
                    else 0,
                }
                for benchmark, section in table.sections():
                    average = section.average
                    row[f"{benchmark}_average"] = average.value
                    row[f"{benchmark}_ci"] = (average.ci_low, average.ci_high)
                    row[f"{benchmark}_n"] = average.n
                    row[f"{benchmark}_partial"] = average.partial
                    row[f"{benchmark}_failed"] = average.failures
                    for category, entry in section.categories.items():
                        row[f"{benchmark}_{category}"] = entry.value if entry is not None else None
                rows.append(row)
        return rows

    def summary_frame(self) -> Any:
        """:meth:`summary_rows` as a ``pandas.DataFrame``."""
        import pandas as pd

        return pd.DataFrame(self.summary_rows())

    def to_json(self) -> str:
        """The JSON of ``summary.json`` (indent 1, fields a protocol does not produce left out)."""
        return json.dumps(self.model_dump(mode="json", exclude_unset=True, by_alias=True), indent=1, default=str)


class ScoreInputs(BaseModel):
    """What a score table was computed from (``summary.inputs.json`` beside ``summary.json``).

    A stage that needs the run's scores reads the table written by notebook 04 when its inputs are these, and
    computes it again only when they differ (the records changed since, another seed or number of replicates, a kit
    whose scoring code differs) or when the table or this record is missing.
    """

    model_config = ConfigDict(frozen=True)

    records: str
    """SHA-256 of the manifests, responses and verdicts read (``RunRecords.fingerprint``)."""
    kinds: list[str]
    """Manifest kinds scored."""
    protocol: str
    """``official``, ``strict`` or ``both``."""
    seed: int
    """Bootstrap seed."""
    reps: int
    """Bootstrap replicates."""
    embedder: str | None = None
    """Embedding backend of the scene and event metrics; None: the default offline model."""
    code: str = ""
    """SHA-256 of the scoring code's sources (:func:`airbench_nb.scoring.tables.scoring_code`), so that a table
    computed by an older kit (other intervals, other rules) is computed again; empty in files written before it."""


# A score table reads like the mapping of its keys to each model's scores: code that takes a Mapping takes it.
Mapping.register(ScoreTable)
