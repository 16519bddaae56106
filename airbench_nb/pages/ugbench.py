"""UG-Bench's section of a run's landing page: its open-ended task families per model and its capability ranking."""

from __future__ import annotations

import logging
from typing import Any

from airbench_nb.analysis_report import AnalysisReport, UgBenchDetail
from airbench_nb.pages.base import PageInputs, PageSection, register_page_section, render_template
from airbench_nb.pages.cells import interval_cell
from airbench_nb.run_folder import RunFolder

logger = logging.getLogger(__name__)

TEMPLATE = """\
{% if ug_tasks_table %}<p class="meta">Speech translation: corpus BLEU and chrF (sacrebleu, 0-100, signature in
<code>analysis.json</code>) with 95% bootstrap intervals. Captioning: CIDEr-D (aac-metrics, 0-10, over the whole set)
and the cosine similarity of offline sentence embeddings to the references (not FENSE). Spoken answers: the
ASR judge's back-transcription WER and CER against the text asked for (corpus, %, lower is better; failures such as
no audio count as all words deleted), the share of spoken questions answered right (<b>listed several</b>: answers
naming more than one question's accepted answer, scored wrong), and the listeners' MOS (1-5) when the run has a
listening test. A dash: the model answered none of those items.</p>
<div class="wide">{{ ug_tasks_table | safe }}</div>{% endif %}
{% if ug_ranking_table %}<p class="meta">UG-Bench's ranking over every task the run scored: per capability the
mean of the model's task ranks (1 = best), then the weighted total on 0-100 (weights {{ ug_weights }}).
Rule for a missing score: {{ ug_rule }}.</p>
<div class="wide">{{ ug_ranking_table | safe }}</div>{% endif %}"""
"""Jinja2 template of the section (the tables inserted as trusted HTML; the task table escapes its own cells)."""


def ug_tasks_html(analysis: AnalysisReport | None, folder: RunFolder) -> str:
    """UG-Bench's open-ended task families per model from ``analysis.json`` (with links to spoken answers)."""
    if analysis is None:
        return ""
    translation = analysis.translation or {}
    captioning = analysis.captioning or {}
    speech = analysis.speech_output or {}
    if not (translation or captioning or speech):
        return ""
    import html

    import pandas as pd

    detail = analysis.speech_output_detail
    listening = detail.mos if detail is not None else None
    mos = {s.model: s for s in listening.systems} if listening is not None else {}
    enumerated = any(o.spoken_answer is not None and o.spoken_answer.enumerations for o in speech.values())
    rows = []
    for model in dict.fromkeys([*translation, *captioning, *speech]):
        t, c, o = translation.get(model), captioning.get(model), speech.get(model)
        metrics = c.metrics if c is not None else {}
        spoken = o.spoken_answer if o is not None else None
        cider, similarity = metrics.get("cider_d"), metrics.get("similarity")
        system = mos.get(model)
        audio = sorted(folder.response_audio_file(model, "x").parent.glob("*.wav"))[:3]
        links = " ".join(
            f'<a href="{html.escape(p.relative_to(folder.path).as_posix())}">{html.escape(p.name)}</a>' for p in audio
        )
        rows.append(
            {
                "model": html.escape(model),
                "BLEU": interval_cell(t.bleu, t.bleu_ci) if t is not None else "–",
                "chrF": interval_cell(t.chrf, t.chrf_ci) if t is not None else "–",
                "CIDEr-D": interval_cell(cider.value if cider is not None else None, None, digits=3),
                "emb. sim.": interval_cell(similarity.value if similarity is not None else None, None, digits=3),
                "TTS WER %": interval_cell(o.wer, o.wer_ci, 100.0) if o is not None and o.n else "–",
                "CER %": interval_cell(o.cer, o.cer_ci, 100.0) if o is not None and o.n else "–",
                "spoken answers right %": interval_cell(spoken.accuracy, spoken.ci, 100.0)
                if spoken is not None and spoken.n
                else "–",
                **({"listed several": spoken.enumerations if spoken is not None else 0} if enumerated else {}),
                "MOS": interval_cell(system.mos, [system.ci_low, system.ci_high], digits=2)
                if system is not None and system.mos is not None
                else "–",
                "failures": sum(x.failures for x in (t, c, o) if x is not None),
                "spoken answers": links or "–",
            }
        )
    return pd.DataFrame(rows).to_html(index=False, border=0, escape=False, na_rep="–")


def ug_ranking_html(analysis: AnalysisReport | None) -> str:
    """UG-Bench's capability ranking from ``analysis.json``, or "" when the run has none."""
    ranking = analysis.ugbench.ranking if analysis is not None and analysis.ugbench is not None else []
    if not ranking:
        return ""
    import pandas as pd

    rows = []
    for position, row in enumerate(ranking, 1):
        entry: dict[str, Any] = {"#": position, "model": row.model}
        for capability, sub_rank in row.sub_ranks.items():
            entry[f"{capability.replace('_', ' ')} (sub-rank)"] = "–" if sub_rank is None else f"{sub_rank:.2f}"
        entry["score (0-100)"] = "–" if row.score is None else f"{row.score:.2f}"
        rows.append(entry)
    return pd.DataFrame(rows).to_html(index=False, border=0, escape=True, na_rep="–")


def render_ugbench(inputs: PageInputs) -> str | None:
    """The section's HTML, or None when the run has neither UG-Bench's task families nor its ranking."""
    tasks = ug_tasks_html(inputs.analysis, inputs.folder)
    ranking = ug_ranking_html(inputs.analysis)
    if not (tasks or ranking):
        return None
    detail = (inputs.analysis.ugbench_detail if inputs.analysis is not None else None) or UgBenchDetail()
    return render_template(
        TEMPLATE,
        ug_tasks_table=tasks,
        ug_ranking_table=ranking,
        ug_weights=", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in detail.weights.items()),
        ug_rule=detail.missing or "",
    )


UGBENCH_SECTION = register_page_section(PageSection(title="UG-Bench", render=render_ugbench))
"""UG-Bench's section, registered."""
