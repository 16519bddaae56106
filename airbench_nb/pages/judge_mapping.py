"""Mapped Chat scores on a run's landing page, registered as ``Mapped Chat scores``.

Shown when ``airbench-nb judge-map`` wrote a mapping into the run's ``analysis/`` folder
(:mod:`airbench_nb.analysis.judge_mapping`): per mapping, each model's Chat score by the substitute judge, its score
mapped onto the reference judge's scale by each fit (with the interval of the mapping's bootstrap) and, where the
reference judged the same answers, the reference's own score. Every mapped value is named MAPPED: it is the substitute's
judgement on the reference's scale, not the reference judge's. A run without a mapping has no such section.
"""

from __future__ import annotations

import logging

from airbench_nb.analysis.judge_mapping import JudgeMappingResult, read_mappings
from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.pages.cells import DASH, interval_cell

logger = logging.getLogger(__name__)

TEMPLATE = """\
{% for block in blocks %}<p class="meta"><b>MAPPED</b>: Chat scores of <code>{{ block.substitute }}</code> mapped onto
the scale of <code>{{ block.reference }}</code>, fitted on {{ block.shared }} answers both judged ({{ block.protocol }}
reading; isotonic and linear fits, 95% intervals from the mapping's cluster bootstrap). Mapped, not judged by
<code>{{ block.reference }}</code>{% if not block.published %}; {{ not_comparable }}{% endif %}. The fits and their
bands: <code>analysis/{{ block.figure }}</code>; docs/judge-panels.md.</p>
<div class="wide">{{ block.table | safe }}</div>
{% endfor %}"""
"""Jinja2 template of the section (the tables inserted as trusted HTML)."""


def mapping_table_html(result: JudgeMappingResult) -> str:
    """One row per model: the substitute's own score, each fit's mapped score, the reference's own score."""
    import pandas as pd

    rows: dict[str, dict[str, object]] = {}
    for m in result.models:
        row = rows.setdefault(
            m.model, {"model": m.model, "n": m.n, f"{result.substitute_judge} (own)": f"{m.substitute_score:.2f}"}
        )
        row[f"MAPPED ({m.method})"] = interval_cell(m.mapped_score, m.ci, digits=2)
        row[f"{result.reference_judge} (own, same answers)"] = (
            DASH if m.reference_score is None else f"{m.reference_score:.2f}"
        )
    return pd.DataFrame(list(rows.values())).to_html(index=False, border=0, escape=True, na_rep=DASH)


def render_judge_mapping(inputs: PageInputs) -> str | None:
    """The section's HTML, or None (left out) when the run's ``analysis/`` holds no judge mapping."""
    from airbench_nb.run_folder import file_slug
    from airbench_nb.scoring.provenance import NOT_COMPARABLE, published_judge

    mappings = read_mappings(inputs.folder.analysis_dir)
    if not mappings:
        return None
    blocks = [
        {
            "substitute": r.substitute_judge,
            "reference": r.reference_judge,
            "shared": r.shared,
            "protocol": r.protocol,
            "published": published_judge(r.reference_judge),
            "figure": f"judge-mapping.{file_slug(r.substitute_judge)}-onto-{file_slug(r.reference_judge)}.png",
            "table": mapping_table_html(r),
        }
        for r in mappings
    ]
    return render_template(TEMPLATE, blocks=blocks, not_comparable=NOT_COMPARABLE)


JUDGE_MAPPING_SECTION = register_page_section(PageSection(title="Mapped Chat scores", render=render_judge_mapping))
"""The mapped-scores section, registered."""
