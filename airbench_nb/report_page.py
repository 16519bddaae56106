"""The landing page of a run folder: ``index.html`` (and ``README.md`` for GitHub viewers), written after every run.

One page says what the run found: what was run (models, judges, data, protocol, versions, commit, durations from
``run.json``), the AIR-Bench main table in both protocols with CIs rounded for reading, the warnings that matter
(failed notebooks, failures, unusable items, proxy judges, partial averages, judges whose order bias is
significant, models with a significant letter preference), the figures of notebook 05, and links to every executed
notebook, its HTML and the raw files. Rendered with Jinja2 (a dependency of nbconvert), styled inline, no JavaScript.
Everything is read from the files the run wrote; a missing file leaves its part out, so a failed run still gets a
page saying how far it got.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airbench_nb.analysis_report import AnalysisReport, Granularity, UgBenchDetail
from airbench_nb.markup import md_code, md_link, md_text
from airbench_nb.records import RunInfo
from airbench_nb.run_folder import INDEX_HTML, README_MD, RunFolder
from airbench_nb.score_table import PROXY_SHORT, ScoreTable

logger = logging.getLogger(__name__)

INDEX = INDEX_HTML
"""File name of the landing page inside the run folder."""

README = README_MD
"""File name of its markdown twin (GitHub shows it when the folder is browsed)."""

ALPHA = 0.05
"""Significance level of the warnings (order bias, position bias)."""

FIGURE_CAPTIONS: dict[str, str] = {
    "category-scores-by-model-and-protocol": "Scores by category, both protocols, with 95% bootstrap CIs.",
    "chosen-vs-gold-letter-per-model": "Position bias: option letter chosen against gold letter.",
    "circular-vs-plain-accuracy": "Circular evaluation: plain vs circular accuracy over rotated options.",
    "judge-order-bias-shown-first-vs-second": "Judge order bias: the same answer scored shown first vs second.",
    "confusion-matrices-per-task": "Confusion matrices of closed-label tasks.",
    "accuracy-vs-answer-length": "Accuracy by answer length.",
    "accuracy-vs-snr": "Accuracy against SNR of speech over noise or music.",
    "capability-ranking": "Ranks per capability and weighted total (UG-Bench style).",
    "model-differences-with-95-ci": "Differences between models with paired 95% CIs (Holm-corrected tests).",
    "judge-human-agreement": "Agreement of judges with human labels.",
    "accuracy-single-vs-multi-clip": "Accuracy on single-clip vs multi-clip items (the kit's own tasks), strict.",
    "chat-score-by-turn": "Multi-turn Chat: the judge's score of each turn (does it fall on follow-ups?).",
    "sseu-wer-macc-map-vs-snr": "SSEU-Bench: WER, scene mACC and event mAP against SNR, per prompting mode.",
    "sseu-joint-and-cot-minus-baseline": "SSEU-Bench: joint minus independent and CoT minus joint, paired over clips.",
    "translation-bleu-by-language-pair": "UG-Bench speech translation: corpus BLEU per language pair (sacrebleu).",
    "captioning-metrics-by-task": "UG-Bench captioning: CIDEr-D, BLEU, ROUGE-L and embedding similarity by task.",
    "speech-output-back-transcription": "UG-Bench spoken answers: back-transcription WER/CER and answer accuracy.",
    "ugbench-capability-ranking": "UG-Bench ranking: each capability's weighted share of the 0-100 total.",
    "tiered-macro-f1-per-tier": "Tiered sound sources: macro F1 at both granularities, one panel per tier.",
    "tiered-confident-language": "Tiered sound sources: share of wrong and right answers stated confidently.",
    "tiered-strategy-raw-vs-within-class": "Tiered sound sources: reasoning strategy vs accuracy, raw and per class.",
}
"""Captions of the known figures of notebook 05, by file stem (others get their stem)."""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>airbench-nb run {{ run_id }}</title>
<style>
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; max-width: 1180px;
       margin: 2em auto; padding: 0 1em; color: #1d2125; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
.status { display: inline-block; padding: 0.1em 0.6em; border-radius: 0.8em; color: white; font-weight: 600; }
.ok { background: #1a7f37; } .failed { background: #cf222e; } .running { background: #9a6700; }
table { border-collapse: collapse; font-size: 0.86em; margin: 0.6em 0 1.2em; }
th, td { border: 1px solid #d0d7de; padding: 0.25em 0.55em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; white-space: nowrap; }
.warnings li { margin: 0.2em 0; } .warn { color: #9a6700; } .bad { color: #cf222e; }
figure { margin: 1.2em 0; } figure img { max-width: 100%; border: 1px solid #d0d7de; }
figcaption { font-size: 0.9em; color: #57606a; }
.wide { overflow-x: auto; }
.meta { color: #57606a; font-size: 0.92em; } details { margin: 0.5em 0; } code { font-size: 0.92em; }
</style>
</head>
<body>
<h1>airbench-nb run <code>{{ run_id }}</code> <span class="status {{ status }}">{{ status }}</span></h1>
<p class="meta">started {{ started }} · ended {{ ended }} · {{ duration }} · commit <code>{{ commit }}</code></p>

<h2>What was run</h2>
<table>
{% for key, value in what %}<tr><th>{{ key }}</th><td>{{ value }}</td></tr>
{% endfor %}</table>
<details><summary>Versions</summary><table>
{% for key, value in versions %}<tr><th>{{ key }}</th><td>{{ value }}</td></tr>{% endfor %}
</table></details>

<h2>Warnings</h2>
{% if warnings %}<ul class="warnings">
{% for level, text in warnings %}<li class="{{ level }}">{{ text }}</li>
{% endfor %}</ul>{% else %}<p>None.</p>{% endif %}

<h2>Main table</h2>
<p class="meta">Foundation: accuracy in % with its 95% bootstrap interval; Chat: the judge's mean score (1-10) with its
95% interval. <b>official</b> reproduces the official scripts (unreadable answers dropped);
<b>strict</b> counts them wrong. † marks an Average over fewer categories than the benchmark has. The
<b>multi-clip</b> and <b>multi-turn</b> columns, when present, are the kit's own tasks (several clips, follow-up
questions): no Average includes them.</p>
{% if main_table %}<div class="wide">{{ main_table | safe }}</div>
{% else %}<p>No scores (the judging stage did not finish).</p>{% endif %}

{% if sseu_table %}<h2>SSEU-Bench</h2>
<p class="meta">Transcription (corpus WER in %, lower is better), acoustic scene (mACC: balanced accuracy of the
answers mapped onto the class names by {{ sseu_embedder }} embeddings) and sound events (mAP), each in % with its 95%
bootstrap interval, over the mixed clips. <b>event mAP floor</b>: the mAP an answer naming no event gets on the
same clips (each class's share of clips), which a model must pass to do better than saying nothing.
<b>independent</b> asks each task alone, <b>joint</b> all three in one prompt, <b>sseu-cot</b> in SSEU-Bench's five
steps. A dash: the model does not serve that task (a transcriber has no scene) or was not asked. <b>failures</b>:
answer parts that could not be read (kept in the scores).</p>
<div class="wide">{{ sseu_table | safe }}</div>
{% endif %}
{% if ug_tasks_table or ug_ranking_table %}<h2>UG-Bench</h2>
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
<div class="wide">{{ ug_ranking_table | safe }}</div>{% endif %}
{% endif %}
{% if tiered_tables %}<h2>Tiered sound sources</h2>
<p class="meta">"What made that sound?" at two granularities ({{ tiered_classes }}). One table per tier, never
one ranking: systems that received the task differently are not compared. Macro precision, recall, F1 and FNR in %
over every class (a class never predicted counts as 0); <b>drop</b>: coarse minus fine F1; top-k: the gold class
among a ranked system's first k. Tier D is judged hit or miss per item ({{ tiered_open_judge }}): recall and FNR;
its precision and <b>named</b> (the share of the classes an answer names, 100: every answer names every class, which
recall alone would reward) come from the names the offline rule reads in each answer. <b>unusable</b>: items whose
audio is missing, empty or corrupt, left out of the metrics. A dash: not defined for the tier.</p>
{% for tier in tiered_tables %}<h3>Tier {{ tier.tier }}: {{ tier.title }}</h3>
<div class="wide">{{ tier.html | safe }}</div>
{% endfor %}{% endif %}
<h2>Figures</h2>
{% for figure in figures %}<figure>
<a href="{{ figure.path }}"><img src="{{ figure.path }}" alt="{{ figure.caption }}"></a>
<figcaption>{{ figure.caption }}</figcaption></figure>
{% else %}<p>No figures (notebook 05 did not run).</p>{% endfor %}

<h2>Notebooks</h2>
<table><tr><th>notebook</th><th>status</th><th>seconds</th><th>executed notebook</th><th>HTML</th><th>error</th></tr>
{% for nb in notebooks %}<tr><td>{{ nb.name }}</td><td>{{ nb.status }}</td><td class="num">{{ nb.seconds }}</td>
<td>{% if nb.output %}<a href="{{ nb.output }}">{{ nb.output }}</a>{% endif %}</td>
<td>{% if nb.html %}<a href="{{ nb.html }}">{{ nb.html }}</a>{% endif %}</td><td>{{ nb.error }}</td></tr>
{% endfor %}</table>

<h2>Raw files</h2>
<ul>{% for path in raw_files %}<li><a href="{{ path }}">{{ path }}</a></li>{% endfor %}</ul>
</body>
</html>
"""
"""Jinja2 template of ``index.html`` (autoescaped; the main table is inserted as trusted HTML)."""


def read_json(path: Path, page: str = "the report page") -> Any:
    """The JSON in ``path``, or None when missing or unreadable (warned: the part is left out of ``page``)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        if path.exists():
            logger.warning("%s: unreadable (%s); left out of %s", path, exc, page)
        return None


def _duration(run: RunInfo) -> str:
    total = sum(nb.duration_s or 0.0 for nb in run.notebooks)
    return f"{total:.0f} s of notebooks" if total else "not finished"


def _what(run: RunInfo, analysis: AnalysisReport | None, folder: RunFolder) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    card = read_json(folder.dataset_card) or {}
    counts = card.get("counts") or {}
    if card:
        parts = [f"source {card.get('source', '?')}"]
        for key, label in (("graded_items", "SNR-graded copies"), ("rotated_items", "rotated copies")):
            if counts.get(key):
                parts.append(f"{counts[key]} {label}")
        rows.append(("data", ", ".join(parts)))
    if analysis is not None:
        rows.append(("models", ", ".join(analysis.models) or "none"))
        rows.append(("Chat judges", ", ".join(analysis.judges) or "none"))
        rows.append(
            (
                "items read",
                f"{analysis.items} with usable audio (SNR-graded and rotated copies included), "
                f"{analysis.unusable_items} unusable",
            )
        )
        rows.append(("analyses read with", f"the {analysis.protocol} protocol (the main table shows both)"))
    parameters = run.parameters
    rows.append(("parameters", ", ".join(f"{k}={v!r}" for k, v in parameters.items()) or "the notebooks' defaults"))
    return rows


def _warnings(run: RunInfo, summary: list[dict[str, Any]], analysis: AnalysisReport | None) -> list[tuple]:
    out: list[tuple[str, str]] = []
    for nb in run.notebooks:
        if nb.status == "failed":
            out.append(("bad", f"notebook {nb.name} failed: {nb.error or 'no error recorded'}"))
    for row in summary:
        if row.get("protocol") != "strict":
            continue
        for bench in ("foundation", "chat"):
            failed = row.get(f"{bench}_failed") or 0
            if failed:
                out.append(
                    (
                        "warn",
                        f"{row['model']}: {failed} {bench} failures (strict counts them wrong; official drops them)",
                    )
                )
            if row.get(f"{bench}_partial"):
                out.append(("warn", f"{row['model']}: the {bench} Average is partial (not all categories present)"))
        for bench in ("transcription", "scene", "events"):
            failed = row.get(f"{bench}_failed") or 0
            if failed:
                out.append(("warn", f"{row['model']}: {failed} {bench} answers could not be read (kept as failures)"))
        if row.get("unusable_items"):
            out.append(("warn", f"{row['unusable_items']} items with missing, empty or corrupt audio were left out"))
    if any(row.get("chat_judge") == PROXY_SHORT for row in summary):
        out.append(("warn", f"Chat scored by the {PROXY_SHORT}: a similarity proxy, not comparable with an LLM judge"))
    order_bias = (analysis.order_bias if analysis is not None else None) or {}
    for judge, by_model in order_bias.items():
        for model, bias in by_model.items():
            p, low, high = bias.wilcoxon_p, bias.ci_low, bias.ci_high
            if p is not None and p < ALPHA and low is not None and high is not None and (low > 0 or high < 0):
                out.append(
                    (
                        "bad",
                        f"judge {judge} favours the answer it reads {'first' if low > 0 else 'second'} when scoring "
                        f"{model}: mean difference {bias.mean_diff:+.2f} [{low:+.2f}, {high:+.2f}], "
                        f"Wilcoxon p = {p:.2g}",
                    )
                )
    injection = (analysis.injection if analysis is not None else None) or {}
    for model, entry in injection.items():
        if entry.flagged:
            judged = "; ".join(
                f"{judge}: {row.chat.verbatim:.2f} with the verbatim prompt, {row.chat.fenced:.2f} fenced"
                for judge, row in entry.by_judge.items()
                if row.chat is not None and row.chat.verbatim is not None and row.chat.fenced is not None
            )
            out.append(
                (
                    "bad",
                    f"{model}: {entry.flagged} of {entry.n} answers address the judge or demand a score "
                    f"(injection screen: {', '.join(sorted(entry.patterns))})"
                    + (f"; their mean Chat score by {judged}" if judged else ""),
                )
            )
    position_bias = (analysis.position_bias if analysis is not None else None) or {}
    for model, bias in position_bias.items():
        p = bias.p_value
        if p is not None and p < ALPHA / 5:
            chosen = bias.chosen
            top = max(chosen, key=lambda letter: chosen[letter]) if chosen else "?"
            out.append(("warn", f"{model} favours option {top} (chi-square p = {p:.2g})"))
    return list(dict.fromkeys(out))


def _main_table_html(results: ScoreTable | None) -> str:
    if not results:
        return ""
    from airbench_nb.analysis.tables import _main_markdown, main_table

    frame = main_table(results)
    if frame.empty:
        return ""
    flat = _main_markdown(frame)
    return flat.to_html(index=False, border=0, escape=True, na_rep="–")


def _sseu_table_html(analysis: AnalysisReport | None) -> str:
    """SSEU-Bench's table (models x prompting modes) from ``analysis.json``, or "" when the run has none."""
    table = (analysis.sseu if analysis is not None else None) or {}
    if not table:
        return ""
    import pandas as pd

    rows = [
        {
            "model": model,
            "mode": mode,
            "WER %": _interval_cell(row.wer, row.wer_ci, 100.0),
            "scene mACC %": _interval_cell(row.macc, row.macc_ci, 100.0),
            "event mAP %": _interval_cell(row.map, row.map_ci, 100.0),
            "event mAP floor %": _interval_cell(row.map_floor, None, 100.0),
            "clips": row.n,
            "failures": row.failures,
        }
        for model, modes in table.items()
        for mode, row in modes.items()
    ]
    return pd.DataFrame(rows).to_html(index=False, border=0, escape=True, na_rep="–")


def _interval_cell(value: float | None, ci: Sequence[float | None] | None, scale: float = 1.0, digits: int = 1) -> str:
    """``value [low, high]`` scaled, or a dash when there is no value."""
    if value is None:
        return "–"
    text = f"{value * scale:.{digits}f}"
    if ci and ci[0] is not None and ci[1] is not None:
        text += f" [{ci[0] * scale:.{digits}f}, {ci[1] * scale:.{digits}f}]"
    return text


def _ug_tasks_html(analysis: AnalysisReport | None, folder: RunFolder) -> str:
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
                "BLEU": _interval_cell(t.bleu, t.bleu_ci) if t is not None else "–",
                "chrF": _interval_cell(t.chrf, t.chrf_ci) if t is not None else "–",
                "CIDEr-D": _interval_cell(cider.value if cider is not None else None, None, digits=3),
                "emb. sim.": _interval_cell(similarity.value if similarity is not None else None, None, digits=3),
                "TTS WER %": _interval_cell(o.wer, o.wer_ci, 100.0) if o is not None and o.n else "–",
                "CER %": _interval_cell(o.cer, o.cer_ci, 100.0) if o is not None and o.n else "–",
                "spoken answers right %": _interval_cell(spoken.accuracy, spoken.ci, 100.0)
                if spoken is not None and spoken.n
                else "–",
                **({"listed several": spoken.enumerations if spoken is not None else 0} if enumerated else {}),
                "MOS": _interval_cell(system.mos, [system.ci_low, system.ci_high], digits=2)
                if system is not None and system.mos is not None
                else "–",
                "failures": sum(x.failures for x in (t, c, o) if x is not None),
                "spoken answers": links or "–",
            }
        )
    return pd.DataFrame(rows).to_html(index=False, border=0, escape=False, na_rep="–")


def _ug_ranking_html(analysis: AnalysisReport | None) -> str:
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


TIER_TITLES: dict[str, str] = {
    "A": "LALMs choosing one lettered class",
    "B": "audio classifiers, labels mapped to the classes",
    "C": "zero-shot CLAP over text prompts",
    "D": "open-vocabulary answers, judged",
}
"""What each tier of the tiered sound-source benchmark is, as the page titles it."""


def _macro(block: Granularity) -> dict[str, float | None]:
    """Macro P, R, F1 and FNR of one granularity, by column label."""
    return {"P": block.macro_precision, "R": block.macro_recall, "F1": block.macro_f1, "FNR": block.macro_fnr}


def _tiered_tables(analysis: AnalysisReport | None) -> list[dict[str, str]]:
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
                        f"{g} {m}": _interval_cell(value, None, 100.0)
                        for g, block in (("coarse", r.coarse), ("fine", r.fine))
                        for m, value in _macro(block).items()
                    },
                    "drop": _interval_cell(r.f1_drop, None, 100.0),
                    **(
                        {f"top-{k}": _interval_cell(r.top_k.get(k), None, 100.0) for k in ("1", "3", "5")}
                        if tier in ("B", "C")
                        else {}
                    ),
                    **({"named": _interval_cell(r.fine.named_share, None, 100.0)} if tier == "D" else {}),
                    "n": r.fine.n,
                    **({"unusable": unusable.get(f"{system} · {tier}", 0)} if any(unusable.values()) else {}),
                }
            )
        key = "fine R" if tier == "D" else "fine F1"
        frame = pd.DataFrame(rows)
        order = frame[key].map(lambda v: -1.0 if v == "–" else float(v))
        frame = frame.assign(_o=order).sort_values(["_o", "system"], ascending=[False, True]).drop(columns="_o")
        html = frame.to_html(index=False, border=0, escape=True, na_rep="–")
        out.append({"tier": tier, "title": TIER_TITLES.get(tier, tier), "html": html})
    return out


def _tiered_classes(analysis: AnalysisReport | None) -> str:
    hierarchy = analysis.tiered.hierarchy if analysis is not None and analysis.tiered is not None else {}
    return f"{len(set(hierarchy.values()))} categories, {len(hierarchy)} classes" if hierarchy else "the run's classes"


def _tiered_open_judge(analysis: AnalysisReport | None) -> str:
    by_system = analysis.tiered.judges if analysis is not None and analysis.tiered is not None else {}
    judges = sorted({j for key, js in by_system.items() if key.endswith("· D") for j in js})
    names = ", ".join(
        "the offline rule on the hierarchy's names (a proxy of the LLM judge)" if j == "sources" else j for j in judges
    )
    return f"by {names}" if names else "by a judge"


def _sseu_embedder(analysis: AnalysisReport | None) -> str:
    """The embedding backend SSEU-Bench's answers were mapped with (``text`` when the run has no SSEU-Bench)."""
    detail = analysis.sseu_detail if analysis is not None else None
    return detail.embedder if detail is not None and detail.embedder is not None else "text"


def _figures(run: RunFolder) -> list[dict[str, str]]:
    folder = run.figures_dir
    if not folder.is_dir():
        return []
    order = list(FIGURE_CAPTIONS)
    paths = sorted(folder.glob("*.png"), key=lambda p: (order.index(p.stem) if p.stem in order else len(order), p.stem))
    return [
        {"path": p.relative_to(run.path).as_posix(), "caption": FIGURE_CAPTIONS.get(p.stem, p.stem.replace("-", " "))}
        for p in paths
    ]


def write_report_page(run_dir: str | Path) -> tuple[Path, Path]:
    """Write ``index.html`` and ``README.md`` into a run folder from the files the run wrote.

    Args:
        run_dir: The run folder (``reports/<run_id>``).

    Returns:
        The paths of ``index.html`` and ``README.md``.

    Raises:
        FileNotFoundError: When the folder has no ``run.json``.
    """
    import jinja2

    folder = RunFolder(Path(run_dir))
    run_dir = folder.path
    try:
        run = folder.read_info()
    except (OSError, ValueError):
        run = None
    if run is None:
        raise FileNotFoundError(f"{run_dir}: no readable run.json (is this a run folder?)")
    stamps = run.model_dump(mode="json", include={"started", "ended"})
    analysis = folder.read_analysis()
    ug_detail = (analysis.ugbench_detail if analysis is not None else None) or UgBenchDetail()
    results = folder.read_scores()
    summary_rows = results.summary_rows() if results is not None else []
    notebooks = [
        {
            "name": nb.name,
            "status": nb.status,
            "seconds": f"{nb.duration_s:.1f}" if nb.duration_s is not None else "",
            "output": nb.output if nb.output and (run_dir / nb.output).is_file() else None,
            "html": nb.html if nb.html and (run_dir / nb.html).is_file() else None,
            "error": (nb.error or "")[:300] if nb.status != "skipped" else nb.error or "",
        }
        for nb in run.notebooks
    ]
    context = {
        "run_id": run.run_id,
        "status": run.status,
        "started": stamps["started"],
        "ended": stamps["ended"] or "not finished",
        "duration": _duration(run),
        "commit": run.git_commit or "unknown",
        "what": _what(run, analysis, folder),
        "versions": sorted(run.versions.items()),
        "warnings": _warnings(run, summary_rows, analysis),
        "main_table": _main_table_html(results),
        "sseu_table": _sseu_table_html(analysis),
        "sseu_embedder": _sseu_embedder(analysis),
        "ug_tasks_table": _ug_tasks_html(analysis, folder),
        "ug_ranking_table": _ug_ranking_html(analysis),
        "ug_weights": ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in ug_detail.weights.items()),
        "ug_rule": ug_detail.missing or "",
        "tiered_tables": _tiered_tables(analysis),
        "tiered_classes": _tiered_classes(analysis),
        "tiered_open_judge": _tiered_open_judge(analysis),
        "figures": _figures(folder),
        "notebooks": notebooks,
        "raw_files": folder.raw_files(),
    }
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = environment.from_string(TEMPLATE)
    index = folder.index_html
    index.write_text(template.render(**context), encoding="utf-8")
    readme = folder.readme
    readme.write_text(_markdown(context, folder), encoding="utf-8")
    logger.info("report page: %s", index)
    return index, readme


def _markdown(context: dict[str, Any], folder: RunFolder) -> str:
    """The page as Markdown; every text from a run (specs, warnings, captions, names) escaped (:func:`md_text`)."""
    lines = [
        f"# airbench-nb run {md_code(context['run_id'])}: {md_text(context['status'])}",
        "",
        f"Started {md_text(context['started'])}, ended {md_text(context['ended'])} ({md_text(context['duration'])}); "
        f"commit {md_code(context['commit'])}. The full page is [index.html](index.html).",
        "",
        "## What was run",
        "",
        *[f"- **{md_text(key)}**: {md_text(value)}" for key, value in context["what"]],
        "",
        "## Warnings",
        "",
        *([f"- {md_text(text)}" for _, text in context["warnings"]] or ["None."]),
        "",
    ]
    if folder.leaderboard.is_file():
        board = folder.leaderboard.relative_to(folder.path).as_posix()
        lines += ["## Tables", "", f"See [{board}]({board}).", ""]
    if context["figures"]:
        lines += ["## Figures", ""]
        lines += [
            f"![{md_text(f['caption'])}]({md_link(f['path'])})\n\n*{md_text(f['caption'])}*\n"
            for f in context["figures"]
        ]
    lines += ["## Notebooks", ""]
    for nb in context["notebooks"]:
        links = " · ".join(f"[{md_text(name)}]({md_link(name)})" for name in (nb["output"], nb["html"]) if name)
        lines.append(f"- {md_text(nb['name'])}: {md_text(nb['status'])} ({md_text(nb['seconds'] or '-')} s) {links}")
    lines += ["", "## Raw files", "", *[f"- [{md_text(p)}]({md_link(p)})" for p in context["raw_files"]], ""]
    return "\n".join(lines)
