"""AIR-Bench's section of a run's landing page: the main table in both protocols, registered as ``Main table``."""

from __future__ import annotations

import logging

from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.score_table import PROXY_SHORT, ScoreTable

logger = logging.getLogger(__name__)

TEMPLATE = """\
<p class="meta">Foundation: accuracy in % with its 95% bootstrap interval; Chat: the judge's mean score (1-10) with its
95% interval. <b>official</b> reproduces the official scripts (unreadable answers dropped);
<b>strict</b> counts them wrong. † marks an Average over fewer categories than the benchmark has. The
<b>multi-clip</b> and <b>multi-turn</b> columns, when present, are the kit's own tasks (several clips, follow-up
questions): no Average includes them.</p>
{% if main_table %}<div class="wide">{{ main_table | safe }}</div>
{% if provenance %}<p class="meta">{{ provenance }}</p>{% endif %}
{% else %}<p>No scores (the judging stage did not finish).</p>{% endif %}"""
"""Jinja2 template of the section (the main table inserted as trusted HTML)."""


def main_table_html(scores: ScoreTable | None) -> str:
    """The main table (models x categories, both protocols) as HTML, or "" when the run has no scores.

    The proxy judge is named ``proxy`` in its cells; :func:`chat_provenance`'s line under the table says what it is.
    """
    if not scores:
        return ""
    from airbench_nb.analysis.tables import _main_markdown, main_table

    frame = main_table(scores)
    if frame.empty:
        return ""
    flat = _main_markdown(frame)
    # the proxy's long label wraps its cell over five lines on every row: the line under the table says what it is
    flat["Chat judge"] = flat["Chat judge"].map(lambda judge: "proxy" if judge == PROXY_SHORT else judge)
    return flat.to_html(index=False, border=0, escape=True, na_rep="–")


def render_main_table(inputs: PageInputs) -> str | None:
    """The section's HTML, or None to leave it out.

    Shown while the run has no scores (it says so); left out when its scores hold no AIR-Bench item (a run of other
    benchmarks only).
    """
    table = main_table_html(inputs.scores)
    if not table and inputs.scores:
        return None
    return render_template(TEMPLATE, main_table=table, provenance=chat_provenance(inputs.scores))


def chat_provenance(scores: ScoreTable | None) -> str:
    """The sentence under the main table naming its Chat judges and whether they are AIR-Bench's (or "")."""
    from airbench_nb.scoring.provenance import provenance_text

    return provenance_text([str(row.get("chat_judge") or "") for row in scores.summary_rows()]) if scores else ""


MAIN_TABLE = register_page_section(PageSection(title="Main table", render=render_main_table))
"""AIR-Bench's main table, registered."""
