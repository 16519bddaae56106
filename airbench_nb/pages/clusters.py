"""The landing page's "Clustered intervals" section: which scores' items share clusters, how many, and by how much.

Every interval of the kit resamples whole clusters where items share one (:mod:`airbench_nb.scoring.resample`) and
is the union of the clustered and the item-level intervals. The score tables name the clusters on each entry
(``clusters``, ``cluster_unit``, ``design_effect``); this section gathers them per model and score section, from the
strict protocol (the official one clusters the same items), so that a reader sees at once where an interval was
widened and what the unit was.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.score_table import ScoreEntry, ScoreTable

logger = logging.getLogger(__name__)

TEMPLATE = """\
<p class="meta">Items that are not independent (the mixes of one utterance, the directions of one sentence, the
questions about one recording) are resampled together: each interval below was bootstrapped a second time drawing
whole <b>clusters</b> and is the union of both intervals, never narrower than the items'. <b>clustered scores</b>:
the section's scores whose items share clusters, of all its scores. <b>design effect</b>: the clustered bootstrap's
variance over the item bootstrap's, at the section's Average and its range over the clustered scores (above 1: the
clusters widen the interval by its square root; below 1: too few clusters, or clusters that balance each other, to
estimate it, and the item interval is kept). With fewer than 10 clusters a bootstrap over them is rough.</p>
<div class="wide">{{ table | safe }}</div>"""
"""Jinja2 template of the section (the table inserted as trusted HTML)."""


@dataclass(frozen=True)
class ClusteredSection:
    """One model's score section whose items share clusters."""

    model: str
    """The model (the score table's key, with its Chat judge)."""
    section: str
    """The score section (``foundation``, ``chat``, ``translation``, ``tier_A``, ...)."""
    unit: str
    """What a cluster is, in words."""
    clusters: int
    """Clusters at the section's Average (else the most of any clustered score)."""
    clustered: int
    """Scores of the section whose items share clusters."""
    scores: int
    """Scores of the section."""
    average_effect: float | None
    """Design effect at the Average; None when it is not clustered or the effect is undefined."""
    low_effect: float | None
    """Smallest design effect over the clustered scores."""
    high_effect: float | None
    """Largest."""


def _effect(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.1f}" if value < 100 else ">100"


def clustered_sections(scores: ScoreTable | None) -> list[ClusteredSection]:
    """Every (model, section) of the strict protocol (else the official) with a clustered score, in table order."""
    out: list[ClusteredSection] = []
    for key, run_scores in scores.items() if scores else []:
        table = run_scores.strict or run_scores.official
        if table is None:
            continue
        for name, section in table.sections():
            entries: list[tuple[str, ScoreEntry]] = [(level, entry) for level, _, entry in section.entries()]
            entries += [("measure", e) for e in (section.measures or {}).values()]
            clustered = [(level, e) for level, e in entries if e.clusters is not None]
            if not clustered:
                continue
            average = section.average if section.average.clusters is not None else None
            effects = [e.design_effect for _, e in clustered if e.design_effect is not None]
            out.append(
                ClusteredSection(
                    model=key,
                    section=name,
                    unit=next(e.cluster_unit for _, e in clustered if e.cluster_unit) or "cluster",
                    clusters=average.clusters if average is not None else max(e.clusters or 0 for _, e in clustered),
                    clustered=len(clustered),
                    scores=len(entries),
                    average_effect=average.design_effect if average is not None else None,
                    low_effect=min(effects) if effects else None,
                    high_effect=max(effects) if effects else None,
                )
            )
    return out


def clusters_table_html(scores: ScoreTable | None) -> str:
    """The section's table, or "" when no score of the run has clustered items."""
    rows = clustered_sections(scores)
    if not rows:
        return ""
    import pandas as pd

    frame = pd.DataFrame(
        [
            {
                "model": r.model,
                "scores": r.section,
                "cluster": r.unit,
                "clusters": f"{r.clusters} (few)" if r.clusters < 10 else str(r.clusters),
                "clustered scores": f"{r.clustered} of {r.scores}",
                "design effect (Average)": _effect(r.average_effect),
                "design effect (range)": "–"
                if r.low_effect is None
                else f"{_effect(r.low_effect)} to {_effect(r.high_effect)}",
            }
            for r in rows
        ]
    )
    return frame.to_html(index=False, border=0, escape=True, na_rep="–")


def render_clusters(inputs: PageInputs) -> str | None:
    """The section's HTML, or None when no score has clustered items."""
    table = clusters_table_html(inputs.scores)
    return render_template(TEMPLATE, table=table) if table else None


CLUSTERS_SECTION = register_page_section(PageSection(title="Clustered intervals", render=render_clusters))
"""The section, registered."""
