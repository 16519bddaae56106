"""SSEU-Bench's section of a run's landing page: WER, scene mACC and event mAP per model and prompting mode."""

from __future__ import annotations

import logging

from airbench_nb.analysis_report import AnalysisReport
from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.pages.cells import interval_cell

logger = logging.getLogger(__name__)

TEMPLATE = """\
<p class="meta">Transcription (corpus WER in %, lower is better), acoustic scene (mACC: balanced accuracy of the
answers mapped onto the class names by {{ sseu_embedder }} embeddings) and sound events (mAP), each in % with its 95%
bootstrap interval, over the mixed clips. <b>event mAP floor</b>: the mAP an answer naming no event gets on the
same clips (each class's share of clips), which a model must pass to do better than saying nothing.
<b>independent</b> asks each task alone, <b>joint</b> all three in one prompt, <b>sseu-cot</b> in SSEU-Bench's five
steps. A dash: the model does not serve that task (a transcriber has no scene) or was not asked. <b>failures</b>:
answer parts that could not be read (kept in the scores). Each utterance is mixed at several SNRs, so that its
clips are not independent: the intervals resample whole <b>utterances</b> too and are the union of both bootstraps
(never narrower than the clips'); the <b>design effect</b> is how much the utterance bootstrap's variance exceeds the
clips' (below 1: too few utterances, or utterances that balance each other, to estimate it). <b>(few)</b>: fewer
than 10 utterances, whose bootstrap is rough: with 3, a metric can swing from 0 to 100 between resamples.</p>
<div class="wide">{{ sseu_table | safe }}</div>"""
"""Jinja2 template of the section (the table inserted as trusted HTML)."""


FEW_CLUSTERS = 10
"""Below this many utterances the page marks the count as few: a cluster bootstrap over them is rough."""


def _effect(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.1f}" if value < 100 else ">100"


def _effects(effects: dict[str, float | None]) -> str:
    """The design effects of the three metrics, ``2.1 / 1.0 / 3.4`` (a dash for one not computed, >100 past it)."""
    if not effects:
        return "–"
    return " / ".join(_effect(effects.get(m)) for m in ("wer", "macc", "map"))


def _utterances(clusters: int | None) -> str:
    if clusters is None:
        return "–"
    return f"{clusters} (few)" if clusters < FEW_CLUSTERS else str(clusters)


def sseu_table_html(analysis: AnalysisReport | None) -> str:
    """SSEU-Bench's table (models x prompting modes) from ``analysis.json``, or "" when the run has none."""
    table = (analysis.sseu if analysis is not None else None) or {}
    if not table:
        return ""
    import pandas as pd

    rows = [
        {
            "model": model,
            "mode": mode,
            "WER %": interval_cell(row.wer, row.wer_ci, 100.0),
            "scene mACC %": interval_cell(row.macc, row.macc_ci, 100.0),
            "event mAP %": interval_cell(row.map, row.map_ci, 100.0),
            "event mAP floor %": interval_cell(row.map_floor, None, 100.0),
            "clips": row.n,
            "utterances": _utterances(row.clusters),
            "design effect (WER / mACC / mAP)": _effects(row.design_effects),
            "failures": row.failures,
        }
        for model, modes in table.items()
        for mode, row in modes.items()
    ]
    return pd.DataFrame(rows).to_html(index=False, border=0, escape=True, na_rep="–")


def sseu_embedder(analysis: AnalysisReport | None) -> str:
    """The embedding backend SSEU-Bench's answers were mapped with (``text`` when the run has no SSEU-Bench)."""
    detail = analysis.sseu_detail if analysis is not None else None
    return detail.embedder if detail is not None and detail.embedder is not None else "text"


def render_sseu(inputs: PageInputs) -> str | None:
    """The section's HTML, or None when the run has no SSEU-Bench scores."""
    table = sseu_table_html(inputs.analysis)
    if not table:
        return None
    return render_template(TEMPLATE, sseu_table=table, sseu_embedder=sseu_embedder(inputs.analysis))


SSEU_SECTION = register_page_section(PageSection(title="SSEU-Bench", render=render_sseu))
"""SSEU-Bench's section, registered."""
