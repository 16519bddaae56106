"""MMAU, MMAR and MMSU in ``analysis.json``: each model's official and strict accuracy, with their breakdowns.

One section per benchmark (``mmau``, ``mmar``, ``mmsu``), registered with its payload model
(:class:`ChoiceQAAnalysis`): per model, the official protocol's accuracy (the release's own script,
:mod:`airbench_nb.scoring.choice_qa`) beside the strict one, their difference, and per protocol the accuracy per
task (MMAR: modality), category, sub-category and (MMAU) difficulty, each with n, failures and its 95% bootstrap
interval. The numbers are the run's score table's (:meth:`~airbench_nb.analysis.report.RunAnalysis.scores`), not
recomputed here. A run on rotated copies (``airbench-nb rotate``) adds circular evaluation under the strict protocol
(:func:`circular_results`, MMBench's CircularEval as :mod:`airbench_nb.analysis.circular` computes it for
Foundation): the official rules of MMAU and MMAR name no option, so only the verdicts say which option was chosen.
Position bias over the original items, also strict, is :mod:`airbench_nb.analysis.choice_qa_bias`'s.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pandas as pd
from pydantic import BaseModel, Field

from airbench_nb.analysis.choice_qa_bias import PositionUnit, choice_qa_position_bias, position_unit
from airbench_nb.analysis.circular import circular
from airbench_nb.analysis.registry import register_analysis_section
from airbench_nb.analysis.section import Section
from airbench_nb.analysis_report import Circular, PositionBias
from airbench_nb.records import SingleChoiceItem, option_key
from airbench_nb.score_table import ProtocolScores, ScoreEntry, ScoreSection, ScoreTable
from airbench_nb.scoring.choice_qa import CHOICE_QA_METRICS, DIFFICULTY_PREFIX
from airbench_nb.scoring.outcomes import foundation_verdicts, strict_foundation, strict_reading

if TYPE_CHECKING:
    from airbench_nb.analysis.report import RunAnalysis

logger = logging.getLogger(__name__)

TITLES: dict[str, str] = {"mmau": "MMAU (test-mini)", "mmar": "MMAR", "mmsu": "MMSU"}
"""The benchmarks' titles, by section name."""

OFFICIAL_RULES: dict[str, str] = {
    "mmau": "evaluation.py's word match of the answer against the options (nothing dropped)",
    "mmar": "code/evaluation.py's word match of the answer against the options (nothing dropped)",
    "mmsu": (
        "mmsu_evaluation.py's letter rule: first or second-to-last character A-D, other answers dropped, a blank "
        "answer scored with the letter read last"
    ),
}
"""What each benchmark's official protocol is, in a line (:mod:`airbench_nb.scoring.choice_qa` has the rules)."""


class ChoiceQABreakdown(BaseModel):
    """One model's scores on one benchmark under one protocol."""

    overall: ScoreEntry
    """Accuracy over every item (the script's "Total Accuracy")."""
    tasks: dict[str, ScoreEntry] = Field(default_factory=dict)
    """Per task (MMAU: speech, sound, music; MMAR: modality; MMSU: task name)."""
    categories: dict[str, ScoreEntry] = Field(default_factory=dict)
    """Per category (MMAU: Reasoning, Information Extraction; MMAR: layer; MMSU: first level)."""
    sub_categories: dict[str, ScoreEntry] = Field(default_factory=dict)
    """Per sub-category (MMSU: ``<category> / <sub-category>``)."""
    difficulties: dict[str, ScoreEntry] = Field(default_factory=dict)
    """Per difficulty (MMAU only)."""
    items: int
    """Items scored (failures included)."""
    failed: int
    """Items that failed (official: dropped; strict: counted wrong)."""
    failure_reasons: dict[str, int] = Field(default_factory=dict)
    """Why they failed, with counts."""


class ChoiceQAModel(BaseModel):
    """One model's official and strict scores on one benchmark."""

    official: ChoiceQABreakdown | None = None
    """Under the release's own script's rule."""
    strict: ChoiceQABreakdown | None = None
    """Under the kit's strict protocol (the deciding verdict; failures wrong)."""
    official_minus_strict: float | None = None
    """Official overall accuracy minus strict (what the official rule adds or takes away); None when one is missing."""


class ChoiceQAAnalysis(BaseModel):
    """A benchmark's section of ``analysis.json``."""

    benchmark: str
    """The benchmark (``mmau``, ``mmar``, ``mmsu``)."""
    title: str
    """Its title."""
    official_rule: str
    """What its official protocol is, in a line."""
    models: dict[str, ChoiceQAModel] = Field(default_factory=dict)
    """Per model spec."""
    circular: dict[str, Circular] = Field(default_factory=dict)
    """Per model: circular evaluation over the run's rotated copies, strict protocol (empty without copies)."""
    position_bias: dict[str, PositionBias] = Field(default_factory=dict)
    """Per model: chosen against gold option over the original items, strict protocol, with a chi-square test
    (:mod:`airbench_nb.analysis.choice_qa_bias`); options keyed ``A``, ``B``, ... by their place in the list."""
    position_unit: PositionUnit = "letter"
    """How the kind's options are told apart: ``letter`` (MMSU) or ``position`` (MMAU, MMAR: asked for an option's
    text, shown unlettered, so a bias is one for a place in the list)."""


def breakdown(section: ScoreSection) -> ChoiceQABreakdown:
    """A metric section of the score table as the analysis shows it."""
    measures = section.measures or {}
    return ChoiceQABreakdown(
        overall=section.average,
        tasks=dict(section.tasks),
        categories=dict(section.categories),
        sub_categories=dict(section.subsets or {}),
        difficulties={
            name.removeprefix(DIFFICULTY_PREFIX): entry
            for name, entry in measures.items()
            if name.startswith(DIFFICULTY_PREFIX)
        },
        items=section.n_items,
        failed=section.failed,
        failure_reasons=dict(section.failure_reasons),
    )


def _of(table: ProtocolScores | None, name: str) -> ChoiceQABreakdown | None:
    section = (table.metric_sections or {}).get(name) if table is not None else None
    return breakdown(section) if section is not None else None


def choice_qa_analysis(results: ScoreTable, name: str) -> ChoiceQAAnalysis:
    """One benchmark's section from a run's score table (each model once: the scores do not depend on a Chat judge).

    Args:
        results: The run's score table (both protocols).
        name: The benchmark's section (``mmau``, ``mmar``, ``mmsu``).
    """
    out = ChoiceQAAnalysis(benchmark=name, title=TITLES[name], official_rule=OFFICIAL_RULES[name])
    for run in results.values():
        tables = run.protocols()
        model = tables[0].model if tables else None
        if model is None or model in out.models:
            continue
        official, strict = _of(run.official, name), _of(run.strict, name)
        if official is None and strict is None:
            continue
        gap = None
        if official is not None and strict is not None:
            if official.overall.value is not None and strict.overall.value is not None:
                gap = official.overall.value - strict.overall.value
        out.models[model] = ChoiceQAModel(official=official, strict=strict, official_minus_strict=gap)
    return out


def choice_qa_frame(analysis: ChoiceQAAnalysis) -> pd.DataFrame:
    """One row per (model, protocol, level, name): value, n, failures and the CI."""
    rows = []
    for model, scores in analysis.models.items():
        for protocol, block in (("official", scores.official), ("strict", scores.strict)):
            if block is None:
                continue
            levels = {
                "overall": {"overall": block.overall},
                "task": block.tasks,
                "category": block.categories,
                "sub-category": block.sub_categories,
                "difficulty": block.difficulties,
            }
            for level, entries in levels.items():
                for label, entry in entries.items():
                    rows.append(
                        {
                            "model": model,
                            "protocol": protocol,
                            "level": level,
                            "name": label,
                            "value": entry.value,
                            "n": entry.n,
                            "failures": entry.failures,
                            "ci_low": entry.ci_low,
                            "ci_high": entry.ci_high,
                        }
                    )
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))


def chosen_text(item: SingleChoiceItem, pick: int | None) -> str | None:
    """The answer a copy's chosen option stands for, compared across rotations for consistency.

    The option's text; for MMAU and MMAR, whose options may repeat (``"Fourteen"`` and ``"fourteen"``), its
    :func:`~airbench_nb.records.option_key`, so that options of one text are one answer whichever of them a rotation
    put first. None when no option was chosen (or the index is none of the item's).

    Args:
        item: The rotated copy.
        pick: Index of the option the deciding verdict chose, or None.
    """
    if pick is None or not 0 <= pick < len(item.choices):
        return None
    text = item.choices[pick]
    return option_key(text) if item.ANSWERED_BY_TEXT else text


def circular_results(analysis: RunAnalysis, kind: str) -> dict[str, Circular]:
    """Circular evaluation of a kind's rotated copies per model, under the strict protocol.

    Each copy (``meta.rotation_of``) is scored by its deciding verdict (:func:`strict_foundation`); a failure is wrong
    and names no option, so it makes its item inconsistent. The rates are those of
    :func:`airbench_nb.analysis.circular.circular`; the verdicts decide as in scoring (the ``rule`` judge first).

    Args:
        analysis: The run's analysis.
        kind: The item kind (``mmau``, ``mmar``, ``mmsu``).

    Returns:
        ``{model: Circular}`` for the models that answered a copy; empty when the run holds none.
    """
    run = analysis.run
    copies = [i for i in run.items.values() if i.kind == kind and (i.meta or {}).get("rotation_of") is not None]
    uids = {i.uid for i in copies}
    rows = []
    for model in run.models:
        by_uid = run.responses.get(model, {})
        if not uids & set(by_uid):
            continue
        chosen = foundation_verdicts(run.current_verdicts(model), uids, None)
        for item in copies:
            verdict = chosen.get(item.uid)
            correct, _ = strict_foundation(by_uid.get(item.uid), verdict)
            read = strict_reading(verdict) if correct is not None else None
            pick = read.choice if read is not None else None
            rows.append(
                {
                    "model": model,
                    "rotation_of": item.meta["rotation_of"],
                    "rotation": item.meta.get("rotation"),
                    "correct": bool(correct),
                    "chosen_text": chosen_text(item, pick),
                }
            )
    if not rows:
        return {}
    return {model: result.payload() for model, result in circular(pd.DataFrame(rows)).items()}


def choice_qa_section(analysis: RunAnalysis, name: str) -> Section:
    """The section of one benchmark for a run (empty, with the reason, when no model answered its items)."""
    _, results = analysis.scores()
    data = choice_qa_analysis(results, name)
    data.circular = circular_results(analysis, name)
    data.position_bias = choice_qa_position_bias(analysis.run, name)
    data.position_unit = position_unit(name)
    if not data.models and not data.circular:
        return Section(name, {}, reason=f"no {TITLES[name]} item was answered")
    title = TITLES[name]
    unit = data.position_unit
    bias = f"{title}: position bias (chi-square of the chosen {unit}s against the gold shares; strict, original items)"
    rotations = f"{title}: circular evaluation (strict; an item counts when every rotation is right)"
    return Section(
        name,
        data.model_dump(mode="json"),
        frame=choice_qa_frame(data),
        extra_frames={bias: position_bias_table(data), rotations: circular_table(data)},
    )


def position_bias_table(data: ChoiceQAAnalysis) -> pd.DataFrame:
    """One row per model of a benchmark's position bias: answered items, chi-square, degrees of freedom, p."""
    rows = [
        {
            "model": model,
            "answered": result.n,
            "items": result.n_items,
            "chi_square": result.chi2,
            "dof": result.dof,
            "p_value": result.p_value,
            "note": result.note or result.reason or "",
        }
        for model, result in data.position_bias.items()
    ]
    return pd.DataFrame(rows, columns=["model", "answered", "items", "chi_square", "dof", "p_value", "note"])


def circular_table(data: ChoiceQAAnalysis) -> pd.DataFrame:
    """One row per model of a benchmark's circular evaluation: items, rotations, accuracy, circular accuracy."""
    rows = [
        {
            "model": model,
            "items": result.items,
            "rotations": result.rotations,
            "accuracy": result.accuracy,
            "consistent_rate": result.consistent_rate,
            "circular_accuracy": result.circular_accuracy,
            "reason": result.reason or "",
        }
        for model, result in data.circular.items()
    ]
    columns = ["model", "items", "rotations", "accuracy", "consistent_rate", "circular_accuracy", "reason"]
    return pd.DataFrame(rows, columns=columns)


def _mmau(analysis: RunAnalysis) -> Section:
    """MMAU's section."""
    return choice_qa_section(analysis, "mmau")


def _mmar(analysis: RunAnalysis) -> Section:
    """MMAR's section."""
    return choice_qa_section(analysis, "mmar")


def _mmsu(analysis: RunAnalysis) -> Section:
    """MMSU's section."""
    return choice_qa_section(analysis, "mmsu")


FRAME_COLUMNS: tuple[str, ...] = ("model", "protocol", "level", "name", "value", "n", "failures", "ci_low", "ci_high")
"""Columns of :func:`choice_qa_frame`."""

SECTION_NAMES: tuple[str, ...] = tuple(metric.section for metric in CHOICE_QA_METRICS)
"""The three sections (the metrics' section names)."""

for _name, _compute in zip(SECTION_NAMES, (_mmau, _mmar, _mmsu), strict=True):
    register_analysis_section(_name, _compute, ChoiceQAAnalysis, late=True)  # reads the score table

__all__ = [
    "FRAME_COLUMNS",
    "OFFICIAL_RULES",
    "SECTION_NAMES",
    "TITLES",
    "ChoiceQAAnalysis",
    "ChoiceQABreakdown",
    "ChoiceQAModel",
    "breakdown",
    "choice_qa_analysis",
    "choice_qa_frame",
    "choice_qa_section",
    "circular_results",
]
