"""The perturbation curves on a run's landing page, registered as ``Perturbations``.

One row per model and metric (``analysis.json``'s ``perturbations``, :mod:`airbench_nb.analysis.perturbations`),
over all its tasks of the metric: the metric on the original audio, then, per point of each curve (a codec at a
bitrate, a reverberation time, ...), the change under it with its paired 95% interval. A run without perturbed
copies has no ``perturbations`` in its ``analysis.json``: the section is left out.
"""

from __future__ import annotations

import logging

from airbench_nb.analysis.perturbations import PerturbationsPayload, PerturbPointRow
from airbench_nb.analysis_report import AnalysisReport
from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.pages.cells import DASH, interval_cell

logger = logging.getLogger(__name__)

TEMPLATE = """\
<p class="meta">Does the score survive the audio being coded, reverberated, sped up, pitched, clipped or made louder
or quieter, or the question being reworded (<b>paraphrase k</b>: the k-th other phrasing of its task)? Each cell is
the change of the metric on the same items, perturbed − original, in points with its paired 95% bootstrap interval
({{ protocol }} protocol for accuracy; corpus WER for transcripts, where a rise is a loss; corpus BLEU for
translations, over the language pairs that share a tokenizer; mAP for event lists). <b>original</b>: the
metric on the original audio of those items; <b>n</b>: items per point. The figure
<code>figures/score-change-under-perturbations.png</code> draws the curves; per task in
<code>analysis/analysis.json</code> (<code>perturbations</code>) and notebook 05.</p>
<div class="wide">{{ table | safe }}</div>"""
"""Jinja2 template of the section (the table inserted as trusted HTML)."""


def _headline(rows: list[PerturbPointRow]) -> dict[str, list[PerturbPointRow]]:
    """Per metric, the pooled rows when there are some, else the rows of the metric's only task."""
    out: dict[str, list[PerturbPointRow]] = {}
    for metric in dict.fromkeys(r.metric for r in rows):
        own = [r for r in rows if r.metric == metric]
        pooled = [r for r in own if r.task is None]
        out[metric] = pooled or [r for r in own if r.task == own[0].task]
    return out


def _payload(analysis: AnalysisReport | None) -> PerturbationsPayload | None:
    if analysis is None:
        return None
    try:
        return analysis.extra_section("perturbations", PerturbationsPayload)
    except KeyError:
        return None


def perturbations_table_html(analysis: AnalysisReport | None) -> str:
    """The table as HTML, one row per model and metric, or "" when the run's ``analysis.json`` has no such section."""
    import pandas as pd

    payload = _payload(analysis)
    if payload is None or not payload.models:
        return ""
    records = []
    for model, rows in payload.models.items():
        for metric, points in _headline(rows).items():
            tasks = sorted({r.task for r in rows if r.metric == metric and r.task is not None})
            record = {"model": model, "metric": metric, "tasks": len(tasks), "n": max(p.n for p in points)}
            record["original"] = interval_cell(points[0].clean, None, 100.0)
            for p in sorted(points, key=lambda p: (p.curve, p.parameter)):
                unit = "" if p.curve == "paraphrase" else f" {p.unit}"  # "paraphrase 2": the second rewrite
                label = f"{p.curve} {p.parameter:g}{unit}"
                record[label] = interval_cell(p.difference, p.ci, 100.0)
            records.append(record)
    frame = pd.DataFrame(records)
    return frame.fillna(DASH).to_html(index=False, border=0, escape=True, na_rep=DASH)


def render_perturbations(inputs: PageInputs) -> str | None:
    """The section's HTML, or None (left out) when the run's ``analysis.json`` has no perturbation curves."""
    table = perturbations_table_html(inputs.analysis)
    payload = _payload(inputs.analysis)
    if not table or payload is None:
        return None
    return render_template(TEMPLATE, table=table, protocol=payload.protocol)


PERTURBATIONS_SECTION = register_page_section(PageSection(title="Perturbations", render=render_perturbations))
"""The perturbations section, registered."""
