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
from airbench_nb.records import CONTROLS

logger = logging.getLogger(__name__)

NOT_ANSWERED = "n/a"
"""A control cell of a model that answered none of the control's items (the reason is in a note under the table)."""

TEMPLATE = """\
<p class="meta">Does the model listen? Each Foundation (and Chat, per judge: score / 10) item asked again with its
audio taken away or replaced (silence, noise of the same loudness, another item's audio, no audio, a description in
words), over all of a model's tasks, in % with 95% bootstrap intervals (<b>n</b>: items with the audio;
<b>controlled</b>: those asked under a control) ({{ protocol }} protocol). <b>control − audio</b>: the paired
difference (points); <b>audio needed</b>: items right with the audio and wrong under {{ needed_under }}; <b>text
prior</b>: the best score under the controls that tell nothing of the audio; <b>corrected</b>: (score − prior) / (1
− prior), a dash when the prior is 100. Per task in <code>analysis/analysis.json</code> (<code>controls</code>) and
notebook 05. Rows named <i>(transcripts, WER)</i>: the corpus WER of SSEU-Bench's clean transcripts, where a rise
under a control is a loss; <i>(translations, BLEU)</i>: UG-Bench's corpus BLEU over the language pairs;
<i>(events, mAP)</i>: SSEU-Bench's event tagging (these have no audio-needed share, text prior or corrected
score).</p>
<div class="wide">{{ table | safe }}</div>
{% for model, why in not_answered %}<p class="meta"><b>n/a</b> ({{ model }}): {{ why }}</p>
{% endfor %}"""
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
        record["controlled"] = max((c.n for c in row.controls), default=0)
        record["with audio"] = interval_cell(row.score.value, row.score.ci, 100.0)
        differences = {c.control: interval_cell(c.difference.value, c.difference.ci, 100.0) for c in row.controls}
        differences.update({name: NOT_ANSWERED for name in row.not_answered})
        for name in CONTROLS:  # one column per control, in the same order for every model
            if name in differences:
                record[f"{name} − audio"] = differences[name]
        for label, estimate in (
            ("audio needed", row.audio_needed),
            ("text prior", row.text_prior),
            ("corrected", row.corrected),
        ):
            record[label] = DASH if estimate is None else interval_cell(estimate.value, estimate.ci, 100.0)
        records.append(record)
    if not records:
        return ""
    frame = pd.DataFrame(records)
    columns = ["model", "tasks", "n", "controlled", "with audio"]
    columns += [f"{c} − audio" for c in CONTROLS if f"{c} − audio" in frame.columns]
    columns += [c for c in frame.columns if c not in columns]
    return frame[columns].fillna(DASH).to_html(index=False, border=0, escape=True, na_rep=DASH)


def not_answered_notes(analysis: AnalysisReport | None) -> list[tuple[str, str]]:
    """Per model, the controls it has no answer under and why (one line each), for the notes under the table."""
    notes = []
    for model, rows in ((analysis.controls or {}) if analysis is not None else {}).items():
        row = _overall(rows)
        if row is not None and row.not_answered:
            notes.append((model, "; ".join(f"{name}: {why}" for name, why in row.not_answered.items())))
    return notes


def render_controls(inputs: PageInputs) -> str | None:
    """The section's HTML, or None (left out) when the run's ``analysis.json`` has no controls."""
    table = controls_table_html(inputs.analysis)
    if not table or inputs.analysis is None:
        return None
    detail = inputs.analysis.controls_detail
    return render_template(
        TEMPLATE,
        table=table,
        not_answered=not_answered_notes(inputs.analysis),
        protocol=detail.protocol if detail is not None else inputs.analysis.protocol,
        needed_under=" and ".join(detail.needed_under) if detail is not None else "silence and mismatched",
    )


CONTROLS_SECTION = register_page_section(PageSection(title="Controls", render=render_controls))
"""AIR-Bench's controls section, registered."""
