"""The judge panel on a run's landing page, registered as ``Judge panel``.

Shown when some model's Chat answers were judged by two judges or more, or more than once by one (``analysis.json``'s
``judge_panel``, :mod:`airbench_nb.analysis.judge_panel`): per model the variance of a judged score split into the
answers, the judges, their disagreement about answers and repeats, each judge's mean, the panel's mean and median; then
the answers the judges disagree on most. A run judged once by one judge has no ``judge_panel``: the section is left
out.
"""

from __future__ import annotations

import logging

from airbench_nb.analysis.judge_panel import JudgePanelPayload
from airbench_nb.analysis_report import AnalysisReport
from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.pages.cells import DASH, interval_cell

logger = logging.getLogger(__name__)

TEMPLATE = """\
<p class="meta">How much of a judged Chat score (1-10, the mean of both orders; {{ protocol }} reading) is the answer,
and how much the judge? Per model, the variance in score points squared with its share and 95% cluster-bootstrap
interval: <b>item</b> the answers' own spread, <b>judge</b> the spread of these judges' leniencies, <b>item x
judge</b> the judges' disagreement about answers, <b>repeat</b> what changes when the same judge is asked again
({{ method }}). Then each judge's mean score and the panel's mean and median, with 95% intervals; <b>n</b>: answers
every judge scored. Details and the formulas: <code>analysis/analysis.json</code> (<code>judge_panel</code>),
docs/judge-panels.md.</p>
<div class="wide">{{ table | safe }}</div>
{% if disagreements %}<p class="meta">The {{ count }} answers the judges disagree on most (highest minus lowest
judge's score): candidates for annotation (notebook 06).</p>
<div class="wide">{{ disagreements | safe }}</div>{% endif %}"""
"""Jinja2 template of the section (the tables inserted as trusted HTML)."""


def _payload(analysis: AnalysisReport | None) -> JudgePanelPayload | None:
    if analysis is None:
        return None
    try:
        return analysis.extra_section("judge_panel", JudgePanelPayload)
    except KeyError:
        return None


def judge_panel_tables_html(payload: JudgePanelPayload) -> tuple[str, str]:
    """The panel table (one row per model) and the disagreements table, as HTML."""
    import pandas as pd

    records = []
    for model, entry in payload.models.items():
        record: dict[str, object] = {
            "model": model,
            "judges": len(entry.judges),
            "repeats": entry.repeats,
            "n": entry.answers,
        }
        for c in entry.components:
            if c.variance is None:
                record[c.name.replace("_x_", " x ")] = DASH
                continue
            share = f" ({100 * c.share:.0f}%)" if c.share is not None else ""
            mark = " (set to 0)" if c.truncated else ""
            record[c.name.replace("_x_", " x ")] = interval_cell(c.variance, c.ci, digits=3) + share + mark
        for judge, score in entry.judge_scores.items():
            det = " (deterministic)" if judge in entry.deterministic else ""
            record[f"judge {judge}{det}"] = interval_cell(score.value, score.ci, digits=2)
        record["panel mean"] = interval_cell(entry.panel_mean.value, entry.panel_mean.ci, digits=2)
        record["panel median"] = interval_cell(entry.panel_median.value, entry.panel_median.ci, digits=2)
        records.append(record)
    table = pd.DataFrame(records).fillna(DASH).to_html(index=False, border=0, escape=True, na_rep=DASH)
    rows = [
        {"model": d.model, "item": d.uid, "turn": DASH if d.turn is None else d.turn, "task": d.task}
        | {"spread": f"{d.spread:.2f}"}
        | {judge: f"{score:.2f}" for judge, score in d.scores.items()}
        for d in payload.disagreements
    ]
    disagreements = (
        pd.DataFrame(rows).fillna(DASH).to_html(index=False, border=0, escape=True, na_rep=DASH) if rows else ""
    )
    return table, disagreements


def render_judge_panel(inputs: PageInputs) -> str | None:
    """The section's HTML, or None (left out) when the run's ``analysis.json`` has no judge panel."""
    payload = _payload(inputs.analysis)
    if payload is None or not payload.models:
        return None
    table, disagreements = judge_panel_tables_html(payload)
    return render_template(
        TEMPLATE,
        table=table,
        disagreements=disagreements,
        count=len(payload.disagreements),
        protocol=payload.protocol,
        method=payload.method,
    )


JUDGE_PANEL_SECTION = register_page_section(PageSection(title="Judge panel", render=render_judge_panel))
"""The judge-panel section, registered."""
