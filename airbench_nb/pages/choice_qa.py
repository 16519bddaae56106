"""MMAU's, MMAR's and MMSU's sections of a run's landing page: official beside strict accuracy, and the breakdowns.

Each section reads its benchmark's section of ``analysis.json`` (:mod:`airbench_nb.analysis.choice_qa`): one table
of every model's overall accuracy under the release's own rule and under the kit's strict protocol, with their
difference, then (folded) the accuracy per task, category, sub-category and difficulty under both, circular
evaluation when the run holds rotated copies, and each model's position bias (:func:`position_bias_html`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from airbench_nb.analysis.choice_qa import ChoiceQAAnalysis, ChoiceQABreakdown
from airbench_nb.analysis.choice_qa_bias import position_label
from airbench_nb.analysis_report import AnalysisReport
from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.pages.cells import DASH, interval_cell

logger = logging.getLogger(__name__)

TEMPLATE = """\
<p class="meta">Accuracy in % with its 95% bootstrap interval. <b>official</b>: {{ official_rule }}, as the
release's script scores; <b>strict</b>: the deciding judge's verdict, an answer that names no option (or none at
all) counted wrong. <b>dropped</b>: answers the official rule leaves out of its denominator; <b>failures</b>: answers
strict counts wrong for naming no option.</p>
<div class="wide">{{ summary | safe }}</div>
<details><summary>Per task, category, sub-category{{ " and difficulty" if difficulty else "" }}</summary>
<div class="wide">{{ breakdown | safe }}</div></details>
{% if circular %}<p class="meta">Circular evaluation over the run's rotated copies (strict): <b>circular</b>, the share
of items right in every rotation (Wilson 95% interval); <b>consistent</b>, answered with the same option in every
rotation; <b>incomplete</b>: items left out for a rotation without an answer.</p>
<div class="wide">{{ circular | safe }}</div>{% endif %}
{% if bias %}<p class="meta">Position bias over the original items (strict): does a model favour an option's
{{ unit }}? <b>answered</b>: items where the deciding verdict names an option; <b>chi-square</b> and <b>p</b>: the
chosen {{ unit }}s against the gold {{ unit }}s' shares (goodness of fit; a small p: the model favours some
{{ unit }}s); <b>most chosen</b>: the {{ unit }} chosen most, with its share of the choices and of the gold
answers.{% if unit == "position" %} The options are shown unlettered and answered by their text, so the bias is over
their positions in the list (position 1 is the first option), not letters.{% endif %}</p>
<div class="wide">{{ bias | safe }}</div>{% endif %}"""
"""Jinja2 template of a section (its tables inserted as trusted HTML)."""

LEVELS: tuple[tuple[str, str], ...] = (
    ("task", "tasks"),
    ("category", "categories"),
    ("sub-category", "sub_categories"),
    ("difficulty", "difficulties"),
)
"""``(label, field)`` of the breakdowns of :class:`~airbench_nb.analysis.choice_qa.ChoiceQABreakdown`, in order."""


def section_data(analysis: AnalysisReport | None, name: str) -> ChoiceQAAnalysis | None:
    """A benchmark's section of ``analysis.json``, typed; None when the run has none (or it is empty)."""
    if analysis is None or not (analysis.model_extra or {}).get(name):
        return None
    return analysis.extra_section(name, ChoiceQAAnalysis)


def _cell(block: ChoiceQABreakdown | None, level: str, label: str) -> str:
    entries = getattr(block, level, {}) if block is not None else {}
    entry = entries.get(label)
    return interval_cell(entry.value, entry.ci, 100.0) if entry is not None else DASH


def summary_html(data: ChoiceQAAnalysis) -> str:
    """The table of every model's overall official and strict accuracy."""
    import pandas as pd

    rows = []
    for model, scores in data.models.items():
        official, strict = scores.official, scores.strict
        rows.append(
            {
                "model": model,
                "official %": interval_cell(official.overall.value, official.overall.ci, 100.0) if official else DASH,
                "strict %": interval_cell(strict.overall.value, strict.overall.ci, 100.0) if strict else DASH,
                "official − strict": interval_cell(scores.official_minus_strict, None, 100.0),
                "items": strict.items if strict else (official.items if official else 0),
                "dropped": official.failed if official else DASH,
                "failures": strict.failed if strict else DASH,
            }
        )
    return pd.DataFrame(rows).to_html(index=False, border=0, escape=True, na_rep=DASH)


def breakdown_html(data: ChoiceQAAnalysis) -> str:
    """One row per (model, level, name): official and strict accuracy, and the strict n."""
    import pandas as pd

    rows = []
    for model, scores in data.models.items():
        for label, field in LEVELS:
            official_entries = getattr(scores.official, field) if scores.official is not None else {}
            strict_entries = getattr(scores.strict, field) if scores.strict is not None else {}
            for name in dict.fromkeys([*official_entries, *strict_entries]):
                rows.append(
                    {
                        "model": model,
                        "level": label,
                        "name": name,
                        "official %": _cell(scores.official, field, name),
                        "strict %": _cell(scores.strict, field, name),
                        "n": strict_entries[name].n if name in strict_entries else DASH,
                    }
                )
    return pd.DataFrame(rows).to_html(index=False, border=0, escape=True, na_rep=DASH)


def circular_html(data: ChoiceQAAnalysis) -> str:
    """The table of every model's circular evaluation, or "" when the run has no rotated copies."""
    import pandas as pd

    rows = [
        {
            "model": model,
            "circular %": interval_cell(r.circular_accuracy, r.circular_accuracy_ci, 100.0),
            "plain %": interval_cell(r.accuracy, None, 100.0),
            "consistent %": interval_cell(r.consistent_rate, None, 100.0),
            "items": r.items,
            "rotations": r.rotations,
            "incomplete": r.incomplete,
        }
        for model, r in data.circular.items()
    ]
    return pd.DataFrame(rows).to_html(index=False, border=0, escape=True, na_rep=DASH) if rows else ""


def position_bias_html(data: ChoiceQAAnalysis) -> str:
    """The table of every model's position bias (``data.position_unit`` names the options), or "" without one."""
    import pandas as pd

    rows = []
    for model, bias in data.position_bias.items():
        top = max(bias.chosen, key=lambda key: bias.chosen[key]) if bias.n and bias.chosen else None
        rows.append(
            {
                "model": model,
                "answered": f"{bias.n} of {bias.n_items}",
                "chi-square": f"{bias.chi2:.2f} ({bias.dof} dof)" if bias.chi2 is not None else DASH,
                "p": f"{bias.p_value:.2g}" if bias.p_value is not None else DASH,
                "most chosen": position_label(top, data.position_unit) if top is not None else DASH,
                "chosen %": interval_cell(bias.chosen[top] / bias.n, None, 100.0) if top is not None else DASH,
                "gold %": interval_cell(bias.gold[top] / bias.n, None, 100.0) if top is not None else DASH,
            }
        )
    return pd.DataFrame(rows).to_html(index=False, border=0, escape=True, na_rep=DASH) if rows else ""


def renderer(name: str) -> Callable[[PageInputs], str | None]:
    """The render function of one benchmark's section (``mmau``, ``mmar``, ``mmsu``)."""

    def render(inputs: PageInputs) -> str | None:
        data = section_data(inputs.analysis, name)
        if data is None or not (data.models or data.circular):
            return None
        difficulty = any(s.strict is not None and s.strict.difficulties for s in data.models.values())
        return render_template(
            TEMPLATE,
            official_rule=data.official_rule,
            summary=summary_html(data),
            breakdown=breakdown_html(data),
            difficulty=difficulty,
            circular=circular_html(data),
            bias=position_bias_html(data),
            unit=data.position_unit,
        )

    render.__doc__ = f"The {name} section's HTML, or None when the run has no {name} scores."
    return render


MMAU_SECTION = register_page_section(PageSection(title="MMAU", render=renderer("mmau")))
"""MMAU's section, registered."""
MMAR_SECTION = register_page_section(PageSection(title="MMAR", render=renderer("mmar")))
"""MMAR's section, registered."""
MMSU_SECTION = register_page_section(PageSection(title="MMSU", render=renderer("mmsu")))
"""MMSU's section, registered."""

__all__ = [
    "LEVELS",
    "MMAR_SECTION",
    "MMAU_SECTION",
    "MMSU_SECTION",
    "TEMPLATE",
    "breakdown_html",
    "circular_html",
    "position_bias_html",
    "renderer",
    "section_data",
    "summary_html",
]
