"""Calibration on a run's landing page, registered as ``Calibration``.

One row per model with option probabilities (``analysis.json``'s ``calibration``,
:mod:`airbench_nb.analysis.calibration`), over all its single-choice tasks: accuracy, mean confidence, ECE, Brier
and AURC with their 95% intervals; then, as a separate table, the tiered benchmark's confident/hedged wording, the
text-only proxy (:mod:`airbench_nb.analysis.calibration_proxy`), named as such. A run whose models gave no option
probabilities and that has no tiered answers has no ``calibration`` in its ``analysis.json``: the section is left out.
"""

from __future__ import annotations

import logging

from airbench_nb.analysis.calibration import CalibrationPayload, CalibrationRow
from airbench_nb.analysis.calibration_proxy import PROXY_LABEL
from airbench_nb.analysis_report import AnalysisReport
from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.pages.cells import DASH, interval_cell

logger = logging.getLogger(__name__)

TEMPLATE = """\
{% if table %}<p class="meta">Does a model's confidence mean what it says? Where a model gives the option letters'
probabilities at its answer's first token (<code>hf:</code> models; <code>openai:</code> models run with
<code>--model-option logprobs=true</code>), the <b>confidence</b> of an answer is the probability of the option the
rule extractor read in it. <b>ECE</b>: expected calibration error over {{ bins }} equal-width bins weighted by their
counts (0 is calibrated); <b>Brier</b>: multi-class Brier score; <b>AURC</b>: area under the risk-coverage curve
(answers kept most confident first; lower is better); <b>argmax</b>: share of answers that chose their most
probable option; <b>letter mass</b>: the letters' probability before renormalising. Percent, with 95% bootstrap
intervals (recordings resampled where questions share one). Per task in <code>analysis/analysis.json</code>
(<code>calibration</code>), figures <code>calibration-reliability-diagrams.png</code> and
<code>calibration-risk-coverage.png</code>.</p>
<div class="wide">{{ table | safe }}</div>{% endif %}
{% if proxy %}<p class="meta"><b>{{ proxy_label }}</b>: tier A answers of the tiered benchmark labelled confident or
hedged by their wording (a strategy judge's label, else the kit's hedge lexicon). Accuracy of each group and the
difference (confident − hedged), percent with 95% bootstrap intervals. Two wording classes are not a probability: no
ECE is computed from them.</p>
<div class="wide">{{ proxy | safe }}</div>{% endif %}"""
"""Jinja2 template of the section (the tables inserted as trusted HTML)."""


def _payload(analysis: AnalysisReport | None) -> CalibrationPayload | None:
    if analysis is None:
        return None
    try:
        return analysis.extra_section("calibration", CalibrationPayload)
    except KeyError:
        return None


def _headline(rows: list[CalibrationRow]) -> CalibrationRow:
    """The pooled row when there is one, else the first task's."""
    return next((r for r in rows if r.task is None), rows[0])


def calibration_table_html(payload: CalibrationPayload) -> str:
    """One row per model with probabilities, as HTML ("" without any)."""
    import pandas as pd

    records = []
    for model, rows in payload.models.items():
        if not rows:
            continue
        r = _headline(rows)
        records.append(
            {
                "model": model,
                "tasks": len([x for x in rows if x.task is not None]),
                "n": r.n,
                "accuracy": interval_cell(r.accuracy, r.accuracy_ci, 100.0),
                "confidence": interval_cell(r.confidence, r.confidence_ci, 100.0),
                "ECE": interval_cell(r.ece, r.ece_ci, 100.0),
                "Brier": interval_cell(r.brier, r.brier_ci, 100.0),
                "AURC": interval_cell(r.aurc, r.aurc_ci, 100.0),
                "argmax": f"{100 * r.argmax_agreement:.1f}",
                "letter mass": f"{100 * r.mean_mass:.1f}",
            }
        )
    if not records:
        return ""
    return pd.DataFrame(records).to_html(index=False, border=0, escape=True, na_rep=DASH)


def proxy_table_html(payload: CalibrationPayload) -> str:
    """The proxy's table as HTML ("" without rows)."""
    import pandas as pd

    if not payload.proxy:
        return ""
    records = [
        {
            "system": r.system,
            "n": r.n,
            "hedged": interval_cell(r.hedged_share, r.hedged_share_ci, 100.0),
            "accuracy confident": interval_cell(r.accuracy_confident, r.accuracy_confident_ci, 100.0),
            "accuracy hedged": interval_cell(r.accuracy_hedged, r.accuracy_hedged_ci, 100.0),
            "confident − hedged": interval_cell(r.difference, r.difference_ci, 100.0),
            "labels": r.labels,
        }
        for r in payload.proxy
    ]
    return pd.DataFrame(records).to_html(index=False, border=0, escape=True, na_rep=DASH)


def render_calibration(inputs: PageInputs) -> str | None:
    """The section's HTML, or None (left out) when the run's ``analysis.json`` has no ``calibration``."""
    payload = _payload(inputs.analysis)
    if payload is None:
        return None
    table, proxy = calibration_table_html(payload), proxy_table_html(payload)
    if not table and not proxy:
        return None
    return render_template(TEMPLATE, table=table, proxy=proxy, bins=payload.bins, proxy_label=PROXY_LABEL)


CALIBRATION_SECTION = register_page_section(PageSection(title="Calibration", render=render_calibration))
"""The calibration section, registered."""
