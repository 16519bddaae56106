"""Decoding stability on a run's landing page, registered as ``Stability``.

One row per model over all its choice items (``analysis.json``'s ``stability``, :mod:`airbench_nb.analysis.stability`):
greedy, expected and majority-vote accuracy, consistency and the per-item variance, each with its 95% cluster bootstrap
interval. A run without sampled answers (``infer --samples K``) has no ``stability`` in its ``analysis.json``: the
section is left out.
"""

from __future__ import annotations

import logging

from airbench_nb.analysis.stability import MEASURES, StabilityPayload
from airbench_nb.analysis_report import AnalysisReport
from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.pages.cells import DASH, interval_cell

logger = logging.getLogger(__name__)

TEMPLATE = """\
<p class="meta">Does the answer survive sampling? Each model answered every choice item once greedily (the main
answer; "main answer not greedy" where it was kept from a run at a temperature above 0) and K times at the
temperature shown (<code>airbench-nb infer --samples K</code>, sample k seeded from the run's seed and k).
<b>Samples are scored by the rule extractor</b>: {{ scoring }}. <b>greedy</b>: accuracy of the main answer;
<b>expected</b>: the mean over items of the share of right samples; <b>majority</b>: accuracy of each item's most
frequent sampled answer ({{ tie_rule }}); <b>consistent</b>: the share of items whose K samples all read as the same
answer; <b>variance</b>: the mean over items of p(1 − p), p the item's share of right samples (from 0 to 0.25, not
in %). Cells in %, with the 95% bootstrap interval resampling the items' clusters (the union with the item-level
interval where items share a recording; {{ reps }} replicates). A <b>deterministic</b> backend answers the same
whatever the temperature and was asked once: its consistency is 1 and its variance 0 by construction, not measured.
<b>n</b>: items with a main answer and every sample{{ left_out }}. Per task in <code>analysis/analysis.json</code>
(<code>stability</code>) and notebook 05.</p>
<div class="wide">{{ table | safe }}</div>"""
"""Jinja2 template of the section (the table inserted as trusted HTML)."""

COLUMNS: dict[str, str] = {
    "greedy": "greedy",
    "expected": "expected",
    "majority": "majority",
    "consistency": "consistent",
    "variance": "variance",
}
"""The page's column of each figure (:data:`~airbench_nb.analysis.stability.MEASURES`)."""


def _payload(analysis: AnalysisReport | None) -> StabilityPayload | None:
    if analysis is None:
        return None
    try:
        return analysis.extra_section("stability", StabilityPayload)
    except KeyError:
        return None


def stability_table_html(analysis: AnalysisReport | None) -> str:
    """The table as HTML, one row per model (all its tasks pooled), or "" when ``analysis.json`` has no such section."""
    import pandas as pd

    payload = _payload(analysis)
    if payload is None or not payload.models:
        return ""
    records = []
    for model, rows in payload.models.items():
        pooled = next((r for r in rows if r.task is None), None)
        if pooled is None:
            continue
        if pooled.deterministic:
            sampling = "deterministic (asked once)"
        else:
            sampling = "T not recorded" if pooled.temperature is None else f"T = {pooled.temperature:g}"
        if not pooled.main_greedy:
            sampling += "; main answer not greedy"
        record: dict[str, object] = {
            "model": model,
            "tasks": sum(r.task is not None for r in rows),
            "n": pooled.n,
            "clusters": pooled.clusters,
            "K": pooled.samples,
            "sampling": sampling,
        }
        for measure in MEASURES:
            est = getattr(pooled, measure)
            scale, digits = (1.0, 3) if measure == "variance" else (100.0, 1)
            record[COLUMNS[measure]] = interval_cell(est.value, est.ci, scale, digits)
        records.append(record)
    frame = pd.DataFrame(records)
    return frame.fillna(DASH).to_html(index=False, border=0, escape=True, na_rep=DASH)


def render_stability(inputs: PageInputs) -> str | None:
    """The section's HTML, or None (left out) when the run's ``analysis.json`` has no stability section."""
    table = stability_table_html(inputs.analysis)
    payload = _payload(inputs.analysis)
    if not table or payload is None:
        return None
    left = sum(sum(reasons.values()) for reasons in payload.left_out.values())
    left_out = f"; {left} items with samples left out (a sample missing or failed, or no main answer)" if left else ""
    return render_template(
        TEMPLATE,
        table=table,
        scoring=payload.scoring,
        tie_rule=payload.tie_rule,
        reps=payload.reps,
        left_out=left_out,
    )


STABILITY_SECTION = register_page_section(PageSection(title="Stability", render=render_stability))
"""The stability section, registered."""
