"""AIR-Bench's audio-reliance controls on a run's landing page, registered as ``Controls``.

One row per model over all its tasks (``analysis.json``'s ``controls``, :mod:`airbench_nb.analysis.controls`): the
score with the audio, each control's difference from it, the audio-needed share, the text prior and the corrected
score. A run without controls has no ``controls`` in its ``analysis.json``: the section is left out.
"""

from __future__ import annotations

import logging

from airbench_nb.analysis_report import AnalysisReport, ControlsRow
from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.pages.cells import DASH, interval_cell

logger = logging.getLogger(__name__)

TEMPLATE = """\
<p class="meta">Does the model listen? Each Foundation item asked again with its audio taken away or replaced
(silence, noise of the same loudness, another item's audio, no audio), over all of a model's tasks, in % with 95%
bootstrap intervals ({{ protocol }} protocol). <b>control − audio</b>: the paired difference (points);
<b>audio needed</b>: items right with the audio and wrong under {{ needed_under }}; <b>text prior</b>: the best score
under the controls that tell nothing of the audio; <b>corrected</b>: (score − prior) / (1 − prior), a dash when the
prior is 100. Per task in <code>analysis/analysis.json</code> (<code>controls</code>) and notebook 05.</p>
<div class="wide">{{ table | safe }}</div>"""
"""Jinja2 template of the section (the table inserted as trusted HTML)."""


def _overall(rows: list[ControlsRow]) -> ControlsRow | None:
    """A model's row over all its tasks (its only task's when it has one), or None."""
    pooled = [r for r in rows if r.task is None]
    if pooled:
        return pooled[0]
    return rows[0] if len(rows) == 1 else None


def controls_table_html(analysis: AnalysisReport | None) -> str:
    """The controls table as HTML, one row per model, or "" when the run's ``analysis.json`` has no controls."""
    import pandas as pd

    controls = analysis.controls if analysis is not None else None
    if not controls:
        return ""
    records = []
    for model, rows in controls.items():
        row = _overall(rows)
        if row is None:
            continue
        record = {"model": model, "tasks": len([r for r in rows if r.task is not None]), "n": row.n}
        record["with audio"] = interval_cell(row.score.value, row.score.ci, 100.0)
        for c in row.controls:
            record[f"{c.control} − audio"] = interval_cell(c.difference.value, c.difference.ci, 100.0)
        for label, estimate in (
            ("audio needed", row.audio_needed),
            ("text prior", row.text_prior),
            ("corrected", row.corrected),
        ):
            record[label] = DASH if estimate is None else interval_cell(estimate.value, estimate.ci, 100.0)
        records.append(record)
    if not records:
        return ""
    return pd.DataFrame(records).fillna(DASH).to_html(index=False, border=0, escape=True, na_rep=DASH)


def render_controls(inputs: PageInputs) -> str | None:
    """The section's HTML, or None (left out) when the run's ``analysis.json`` has no controls."""
    table = controls_table_html(inputs.analysis)
    if not table or inputs.analysis is None:
        return None
    detail = inputs.analysis.controls_detail
    return render_template(
        TEMPLATE,
        table=table,
        protocol=detail.protocol if detail is not None else inputs.analysis.protocol,
        needed_under=" and ".join(detail.needed_under) if detail is not None else "silence and mismatched",
    )


CONTROLS_SECTION = register_page_section(PageSection(title="Controls", render=render_controls))
"""AIR-Bench's controls section, registered."""
