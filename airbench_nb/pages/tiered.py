"""The tiered sound-source benchmark's section of a run's landing page: one table of macro metrics per tier."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from airbench_nb.analysis_report import AnalysisReport, Granularity
from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.pages.cells import interval_cell

logger = logging.getLogger(__name__)

TEMPLATE = """\
<p class="meta">"What made that sound?" at two granularities ({{ tiered_classes }}). One table per tier, never
one ranking: systems that received the task differently are not compared. Macro precision, recall, F1 and FNR in %
over every class (a class never predicted counts as 0); <b>drop</b>: coarse minus fine F1; top-k: the gold class
among a ranked system's first k. Tier D is judged hit or miss per item ({{ tiered_open_judge }}): recall and FNR;
its precision and <b>named</b> (the share of the classes an answer names, 100: every answer names every class, which
recall alone would reward) come from the names the offline rule reads in each answer. <b>unusable</b>: items whose
audio is missing, empty or corrupt, left out of the metrics. A dash: not defined for the tier.</p>
{% for tier in tiered_tables %}<h3>Tier {{ tier.tier }}: {{ tier.title }}</h3>
<div class="wide">{{ tier.html | safe }}</div>
{% endfor %}"""
"""Jinja2 template of the section (each tier's table inserted as trusted HTML)."""

TIER_TITLES: dict[str, str] = {
    "A": "LALMs choosing one lettered class",
    "B": "audio classifiers, labels mapped to the classes",
    "C": "zero-shot CLAP over text prompts",
    "D": "open-vocabulary answers, judged",
}
"""What each tier of the tiered sound-source benchmark is, as the page titles it."""


@dataclass(frozen=True)
class TierTable:
    """One tier's table on the page."""

    tier: str
    """The tier's letter (``A`` to ``D``)."""
    title: str
    """What the tier is (:data:`TIER_TITLES`)."""
    html: str
    """Its systems' metrics as an HTML table."""


def _macro(block: Granularity) -> dict[str, float | None]:
    """Macro P, R, F1 and FNR of one granularity, by column label."""
    return {"P": block.macro_precision, "R": block.macro_recall, "F1": block.macro_f1, "FNR": block.macro_fnr}


def tiered_tables(analysis: AnalysisReport | None) -> list[TierTable]:
    """One HTML table per tier with systems, from ``analysis.json``'s ``tiered`` (empty when the run has none)."""
    import pandas as pd

    tiered = analysis.tiered if analysis is not None else None
    if tiered is None:
        return []
    unusable = tiered.unusable
    out = []
    for tier, systems in tiered.tiers.items():
        if not systems:
            continue
        rows = []
        for system, r in systems.items():
            rows.append(
                {
                    "system": system,
                    **{
                        f"{g} {m}": interval_cell(value, None, 100.0)
                        for g, block in (("coarse", r.coarse), ("fine", r.fine))
                        for m, value in _macro(block).items()
                    },
                    "drop": interval_cell(r.f1_drop, None, 100.0),
                    **(
                        {f"top-{k}": interval_cell(r.top_k.get(k), None, 100.0) for k in ("1", "3", "5")}
                        if tier in ("B", "C")
                        else {}
                    ),
                    **({"named": interval_cell(r.fine.named_share, None, 100.0)} if tier == "D" else {}),
                    "n": r.fine.n,
                    **({"unusable": unusable.get(f"{system} · {tier}", 0)} if any(unusable.values()) else {}),
                }
            )
        key = "fine R" if tier == "D" else "fine F1"
        frame = pd.DataFrame(rows)
        order = frame[key].map(lambda v: -1.0 if v == "–" else float(v))
        frame = frame.assign(_o=order).sort_values(["_o", "system"], ascending=[False, True]).drop(columns="_o")
        html = frame.to_html(index=False, border=0, escape=True, na_rep="–")
        out.append(TierTable(tier=tier, title=TIER_TITLES.get(tier, tier), html=html))
    return out


def tiered_classes(analysis: AnalysisReport | None) -> str:
    """How many categories and classes the run's hierarchy has, for the section's note."""
    hierarchy = analysis.tiered.hierarchy if analysis is not None and analysis.tiered is not None else {}
    return f"{len(set(hierarchy.values()))} categories, {len(hierarchy)} classes" if hierarchy else "the run's classes"


def tiered_open_judge(analysis: AnalysisReport | None) -> str:
    """Who judged tier D's open answers, for the section's note."""
    by_system = analysis.tiered.judges if analysis is not None and analysis.tiered is not None else {}
    judges = sorted({j for key, js in by_system.items() if key.endswith("· D") for j in js})
    names = ", ".join(
        "the offline rule on the hierarchy's names (a proxy of the LLM judge)" if j == "sources" else j for j in judges
    )
    return f"by {names}" if names else "by a judge"


def render_tiered(inputs: PageInputs) -> str | None:
    """The section's HTML, or None when no tier of the run has a system."""
    tables = tiered_tables(inputs.analysis)
    if not tables:
        return None
    return render_template(
        TEMPLATE,
        tiered_tables=tables,
        tiered_classes=tiered_classes(inputs.analysis),
        tiered_open_judge=tiered_open_judge(inputs.analysis),
    )


TIERED_SECTION = register_page_section(PageSection(title="Tiered sound sources", render=render_tiered))
"""The tiered benchmark's section, registered."""
