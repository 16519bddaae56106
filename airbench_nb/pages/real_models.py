"""The landing page's Real models section: every real model's numbers in one table, apart from the baselines.

A real model is one whose spec is not a baseline (:func:`~airbench_nb.models.specs.is_baseline`): pretrained weights
(Whisper, YAMNet, an LALM) or a real system (espeak-ng). For each, the rows are its scores under the strict protocol at
task level (each Foundation task, each SSEU-Bench prompting mode, each UG-Bench language pair or task, ...) wherever it
answered at least one item, with the 95% interval, n and failures, and its tiers of the tiered sound-source
benchmark (fine and coarse macro F1, top-1/3/5 recall). Items a model does not serve are not rows (they are ``n/a``,
never scored). The benchmarks' own sections show the same numbers beside the baselines'; this table is where a reader
finds what the real models did without reading every section.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from airbench_nb.analysis_report import AnalysisReport
from airbench_nb.models.specs import is_baseline
from airbench_nb.pages.cells import DASH, interval_cell
from airbench_nb.score_table import ScoreTable

logger = logging.getLogger(__name__)

PROTOCOL = "strict"
"""The protocol of the scores shown (failures count: the number a reader can set beside a published one is given in
the benchmarks' sections under both protocols)."""


@dataclass(frozen=True)
class MetricLabel:
    """How one score section's values read."""

    metric: str
    """What the value is (``accuracy``, ``WER``, ``BLEU``...)."""
    scale: float
    """Factor shown (100 for fractions shown in %)."""
    unit: str
    """The unit after the value (``%`` or empty)."""


METRICS: dict[str, MetricLabel] = {
    "foundation": MetricLabel("accuracy", 100.0, "%"),
    "chat": MetricLabel("judge score (1-10)", 1.0, ""),
    "transcription": MetricLabel("WER", 100.0, "%"),
    "scene": MetricLabel("scene mACC", 100.0, "%"),
    "events": MetricLabel("event mAP", 100.0, "%"),
    "translation": MetricLabel("BLEU", 1.0, ""),
    "translation_chrf": MetricLabel("chrF", 1.0, ""),
    "captioning": MetricLabel("CIDEr-D", 1.0, ""),
    "captioning_similarity": MetricLabel("embedding similarity", 1.0, ""),
    "speech_output": MetricLabel("back-transcription WER", 100.0, "%"),
    "spoken_answer": MetricLabel("spoken answers right", 100.0, "%"),
}
"""Metric, scale and unit of each score section (others are shown as they are, under their section's name)."""


@dataclass(frozen=True)
class RealModelRow:
    """One row of the Real models table."""

    model: str
    """The model spec."""
    benchmark: str
    """The score section (``foundation``, ``transcription``...) or ``tiered tier B``."""
    task: str
    """The task, prompting mode, language pair or granularity."""
    metric: str
    """What the value is, with its unit."""
    value: str
    """The value and its 95% interval, scaled for reading."""
    n: int | None
    """Items scored."""
    failures: int | None
    """Items that failed (kept in the strict score)."""


def _score_rows(scores: ScoreTable | None, models: list[str]) -> list[RealModelRow]:
    rows: list[RealModelRow] = []
    if scores is None:
        return rows
    seen: set[tuple[str, str, str]] = set()
    for run in scores.values():
        for table in run.protocols():
            if table.protocol != PROTOCOL or table.model not in models:
                continue
            for benchmark, section in table.sections():
                label = METRICS.get(benchmark, MetricLabel(benchmark, 1.0, ""))
                for level, name, entry in section.entries():
                    if level != "task" or not entry.n or entry.value is None:
                        continue
                    key = (table.model, benchmark, name)
                    if key in seen:  # the same score under another Chat judge's run
                        continue
                    seen.add(key)
                    unit = f" {label.unit}" if label.unit else ""
                    if section.source and section.source.startswith("back-transcription: "):  # which ASR judge heard it
                        unit += f", heard by {section.source.removeprefix('back-transcription: ')}"
                    rows.append(
                        RealModelRow(
                            model=table.model,
                            benchmark=benchmark,
                            task=name,
                            metric=f"{label.metric}{unit}",
                            value=interval_cell(entry.value, entry.ci, label.scale, 1 if label.scale > 1 else 2),
                            n=entry.n,
                            failures=entry.failures,
                        )
                    )
    return rows


def _tier_rows(analysis: AnalysisReport | None, models: list[str]) -> list[RealModelRow]:
    tiered = analysis.tiered if analysis is not None else None
    rows: list[RealModelRow] = []
    if tiered is None:
        return rows
    for tier, systems in tiered.tiers.items():
        for system, scores in systems.items():
            if system not in models:
                continue
            for name, granularity in (("fine classes", scores.fine), ("coarse classes", scores.coarse)):
                recall = ", ".join(
                    f"top-{k} {DASH if v is None else f'{v * 100:.1f}'}" for k, v in sorted(granularity.top_k.items())
                )
                value = DASH if granularity.macro_f1 is None else f"{granularity.macro_f1 * 100:.1f}"
                rows.append(
                    RealModelRow(
                        model=system,
                        benchmark=f"tiered tier {tier}",
                        task=name,
                        metric="macro F1 %" + (f" ({recall} %)" if recall else ""),
                        value=value,
                        n=granularity.n,
                        failures=granularity.unanswered,
                    )
                )
    return rows


def real_model_rows(scores: ScoreTable | None, analysis: AnalysisReport | None) -> list[RealModelRow]:
    """The rows of every real model of the run, models in the run's order, scores then tiers."""
    models = [m for m in (analysis.models if analysis is not None else []) if not is_baseline(m)]
    rows = _score_rows(scores, models) + _tier_rows(analysis, models)
    order = {m: i for i, m in enumerate(models)}
    return sorted(rows, key=lambda row: order.get(row.model, len(order)))


def real_models_html(scores: ScoreTable | None, analysis: AnalysisReport | None) -> str:
    """The section's table as HTML (escaped), or "" when the run has no real model with a score."""
    rows = real_model_rows(scores, analysis)
    if not rows:
        return ""
    import pandas as pd

    frame = pd.DataFrame([row.__dict__ for row in rows])
    frame.columns = ["model", "benchmark", "task", "metric", "value [95% CI]", "n", "failures"]
    return frame.to_html(index=False, border=0, escape=True, na_rep=DASH)


def real_models_markdown(scores: ScoreTable | None, analysis: AnalysisReport | None) -> str:
    """The same rows as a Markdown list (every text escaped by the caller's ``md_text``), or ""."""
    from airbench_nb.markup import md_text

    rows = real_model_rows(scores, analysis)
    return "\n".join(
        f"- {md_text(r.model)}: {md_text(r.benchmark)} {md_text(r.task)}: {md_text(r.metric)} {md_text(r.value)} "
        f"(n = {r.n}, {r.failures} failed)"
        for r in rows
    )
