"""The landing page of a grid folder: ``index.html`` (and ``README.md``) comparing the grid's runs.

One row per run: its varying parameters, status, duration and main scores per model — Foundation accuracy and the
Chat judge's mean score, each with its 95% interval, under the strict protocol first and the official one below —
and, when notebook 05 ran, its weighted total. Each row links to the run's own page; a failed run shows its error.
Everything is read from ``grid.json`` and the files each run wrote (its score table and analysis, read
through :class:`~airbench_nb.run_folder.RunFolder`), so the page can be rewritten at any time: the grid
rewrites it as each run ends.
Rendered with Jinja2 like :mod:`airbench_nb.report_page`: styled inline with the pages' shared CSS
(:data:`airbench_nb.pages.PAGE_CSS`), no JavaScript.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from airbench_nb.grid_ray import DEFAULT_RESOURCES, DEFAULT_RETRIES
from airbench_nb.markup import md_code, md_link, md_text
from airbench_nb.pages import PAGE_CSS
from airbench_nb.report_page import read_json
from airbench_nb.run_folder import GRID_COPY, GRID_JSON, INDEX_HTML, README_MD, RunFolder

logger = logging.getLogger(__name__)

INDEX = INDEX_HTML
"""File name of the grid page inside the grid folder."""

README = README_MD
"""File name of its markdown twin."""

PROTOCOLS: tuple[str, ...] = ("strict", "official")
"""Protocols shown, in order (the first one carries status, duration and errors)."""

NO_JUDGE = "-"
"""``chat_judge`` of a score summary row when no Chat judge scored."""

GRID_CSS = """\
body { max-width: 1400px; }
.pending { background: #8c959f; }
td.num small { color: #57606a; } tr.error td { color: #cf222e; background: #fff5f5; font-size: 0.95em; }
"""
"""The grid page's own CSS, after :data:`~airbench_nb.pages.style.PAGE_CSS`: its width, the pending badge, the
intervals under the scores and the rows of failed runs' errors."""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>airbench-nb grid {{ grid_id }}</title>
<style>
{{ css | safe }}</style>
</head>
<body>
<h1>airbench-nb grid <code>{{ grid_id }}</code> <span class="status {{ status }}">{{ status }}</span></h1>
<p class="meta">{% if name %}{{ name }} · {% endif %}{{ counts }} · started {{ started }} · ended {{ ended }}</p>
{% if error %}<p class="error">Stopped before its end: {{ error }}.
Finish it with <code>airbench-nb run --resume {{ grid_id }}</code>.</p>{% endif %}

<h2>What was run</h2>
<table>
{% for key, value in what %}<tr><th>{{ key }}</th><td>{{ value }}</td></tr>
{% endfor %}</table>

{% for table in tables %}
<h2>{{ table.title }}</h2>
<p class="meta">{{ table.note }}</p>
<table>
<tr>{% for head in table.head %}<th rowspan="{{ 2 if table.models else 1 }}">{{ head }}</th>{% endfor %}
{% for model in table.models %}<th colspan="{{ table.sub | length }}">{{ model }}</th>{% endfor %}</tr>
{% if table.models %}<tr>{% for model in table.models %}{% for sub in table.sub %}<th>{{ sub }}</th>{% endfor %}
{% endfor %}</tr>{% endif %}
{% for row in table.rows %}<tr>
<td class="num">{{ row.index }}</td>
<td>{% if row.link %}<a href="{{ row.link }}">{{ row.run_id }}</a>{% else %}{{ row.run_id }}{% endif %}</td>
{% for value in row.params %}<td>{{ value }}</td>{% endfor %}
{% if table.with_status %}<td><span class="status {{ row.status }}">{{ row.status }}</span>
{%- if row.tries %} <small>{{ row.tries }}</small>{% endif %}</td>
<td class="num">{{ row.seconds }}</td>{% endif %}
{% for cell in row.cells %}<td class="num">{{ cell.value }}
{%- if cell.ci %}<br><small>{{ cell.ci }}</small>{% endif %}</td>
{% endfor %}</tr>
{% if table.with_status and row.error %}<tr class="error"><td></td>
<td colspan="{{ table.width - 1 }}">{{ row.error }}</td></tr>{% endif %}
{% endfor %}</table>
{% endfor %}

<h2>Files</h2>
<ul>{% for path in files %}<li><a href="{{ path }}">{{ path }}</a></li>{% endfor %}</ul>
</body>
</html>
"""
"""Jinja2 template of the grid's ``index.html`` (autoescaped)."""


def _grid_json(path: Path) -> Any:
    return read_json(path, "the grid page")


def run_scores(run_dir: Path) -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
    """The main scores of one run folder, by protocol and ``(model, chat judge)``.

    Returns:
        ``{protocol: {(model, chat_judge): {"foundation": (mean, low, high, partial), "chat": (...)}}}`` from the
        run's score table (``summary.json``; Foundation as a fraction, Chat on the judge's 1-10 scale); empty
        without one.
    """
    table = RunFolder(run_dir).read_scores()
    out: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    if table is None:
        return out
    for row in table.summary_rows():
        key = (row.get("model") or "?", row.get("chat_judge") or NO_JUDGE)
        entry: dict[str, Any] = {}
        for bench in ("foundation", "chat"):
            low, high = row.get(f"{bench}_ci") or (None, None)
            entry[bench] = (row.get(f"{bench}_average"), low, high, bool(row.get(f"{bench}_partial")))
        out.setdefault(row.get("protocol") or "?", {})[key] = entry
    return out


def run_totals(run_dir: Path) -> tuple[dict[str, float], str | None]:
    """Notebook 05's weighted total per model (``analysis.json``'s ranking) and the protocol it was read with.

    Empty, with no protocol, when the run has no analysis or it cannot be read (logged by
    :meth:`~airbench_nb.run_folder.RunFolder.read_analysis`).
    """
    analysis = RunFolder(run_dir).read_analysis()
    if analysis is None:
        return {}, None
    totals = {r.model: r.score for r in analysis.ranking or [] if r.model and r.score is not None}
    detail = analysis.ranking_detail
    return totals, (detail.protocol if detail is not None else None) or analysis.protocol


def _time(value: Any) -> str:
    """``2026-12-01 13:10:31 UTC`` from an ISO time of ``grid.json`` (the text itself when it is not one)."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(value)).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        return str(value)


def _short(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(v, str | int | float) for v in value):
        text = ", ".join(str(v) for v in value)  # models, judges, tasks: as a reader writes them
    else:
        text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _amount(value: Any) -> str:
    """A number as a reader writes it (``1``, ``0.5``); anything else as :func:`_short` shows it."""
    return f"{value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else _short(value)


def _cell(score: tuple | None, bench: str) -> dict[str, str]:
    if score is None or score[0] is None:
        return {"value": "–", "ci": ""}
    mean, low, high, partial = score
    scale, digits = (100.0, 1) if bench == "foundation" else (1.0, 2)
    mark = "†" if partial else ""
    ci = f"[{low * scale:.{digits}f}, {high * scale:.{digits}f}]" if low is not None and high is not None else ""
    return {"value": f"{mean * scale:.{digits}f}{mark}", "ci": ci}


def _context(grid_dir: Path, grid: dict[str, Any]) -> dict[str, Any]:
    runs = [r for r in grid.get("runs") or [] if isinstance(r, dict)]
    varying = list(grid.get("varying") or [])
    scores = {r.get("run_id"): run_scores(grid_dir / str(r.get("run_id"))) for r in runs}
    totals = {r.get("run_id"): run_totals(grid_dir / str(r.get("run_id"))) for r in runs}
    keys = sorted({key for by_protocol in scores.values() for table in by_protocol.values() for key in table})
    judges = sorted({judge for _, judge in keys if judge != NO_JUDGE})
    several_judges = len(judges) > 1
    labels = [f"{model} · {judge}" if several_judges else model for model, judge in keys]
    total_protocols = {protocol for _, protocol in totals.values() if protocol}
    any_total = any(t for t, _ in totals.values())

    base_rows = []
    for r in runs:
        run_id = str(r.get("run_id"))
        folder = grid_dir / run_id
        link = f"{run_id}/" if folder.is_dir() else ""
        if RunFolder(folder).index_html.is_file():
            link = f"{run_id}/{INDEX_HTML}"
        seconds = r.get("duration_s")
        attempts = r.get("attempts")
        base_rows.append(
            {
                "index": r.get("index", ""),
                "run_id": run_id,
                "link": link,
                "params": [_short((r.get("varying") or {}).get(k, "–")) for k in varying],
                "status": r.get("status", "pending"),
                "seconds": f"{seconds:.0f}" if isinstance(seconds, int | float) else "",
                "error": r.get("error") if r.get("status") == "failed" else "",
                "tries": f"{attempts} attempts" if isinstance(attempts, int) and attempts > 1 else "",
            }
        )

    tables = []
    for n, protocol in enumerate(PROTOCOLS):
        first = n == 0
        sub = ["Foundation %", "Chat"] + (["total"] if first and any_total else [])
        rows = []
        for base, r in zip(base_rows, runs, strict=True):
            by_key = scores[r.get("run_id")].get(protocol, {})
            run_totals_, _ = totals[r.get("run_id")]
            cells = []
            for model, judge in keys:
                entry = by_key.get((model, judge)) or {}
                cells.append(_cell(entry.get("foundation"), "foundation"))
                cells.append(_cell(entry.get("chat"), "chat"))
                if "total" in sub:
                    total = run_totals_.get(model)
                    cells.append({"value": f"{total:.1f}" if total is not None else "–", "ci": ""})
            rows.append({**base, "cells": cells})
        head = ["#", "run", *varying] + (["status", "seconds"] if first else [])
        notes = {
            "strict": "Strict protocol: unreadable answers count wrong. Foundation: accuracy in % with its 95% "
            "bootstrap interval; Chat: the judge's mean score (1-10) with its 95% interval. † marks an Average over "
            "fewer categories than the benchmark has; – means no score (the run did not get that far).",
            "official": "Official protocol: the official scripts' rules (unreadable answers dropped from the "
            "denominator). Same cells as above.",
        }
        note = notes[protocol]
        if first and any_total:
            note += (
                " total: notebook 05's weighted total over categories (UG-Bench style, 0-100), read with the "
                f"{', '.join(sorted(total_protocols)) or '?'} protocol."
            )
        if judges:
            note += f" Chat judged by {', '.join(judges)}."
        tables.append(
            {
                "title": f"Runs ({protocol} protocol)" if first else f"The {protocol} protocol",
                "note": note,
                "head": head,
                "models": labels,
                "sub": sub,
                "rows": rows,
                "with_status": first,
                "width": len(head) + len(labels) * len(sub),
            }
        )
    if not keys:  # no scores at all: one table of runs, no empty protocol table
        tables = tables[:1]

    failed = sum(r.get("status") == "failed" for r in runs)
    done = sum(r.get("status") in ("ok", "failed") for r in runs)
    counts = f"{len(runs)} runs, {done} done, {failed} failed"
    fixed = grid.get("fixed") or {}
    what = [
        ("grid file", grid.get("source", "?")),
        ("notebooks", ", ".join(grid.get("notebooks") or []) or "the pipeline"),
        ("varying", ", ".join(varying) or "nothing (one run)"),
        ("fixed", ", ".join(f"{k}={_short(v)}" for k, v in fixed.items()) or "the notebooks' defaults"),
        ("jobs", str(grid.get("jobs", 1))),
        ("cache folder", grid.get("cache_dir") or "each notebook's default"),
    ]
    executor = str(grid.get("executor") or "local")
    if executor != "local":
        resources = grid.get("resources")
        held = {**DEFAULT_RESOURCES, **(resources if isinstance(resources, dict) else {})}
        cpus, gpus = (_amount(held.get(k)) for k in ("num_cpus", "num_gpus"))
        retries = grid.get("retries")
        retries = DEFAULT_RETRIES if retries is None else retries
        what.append(
            (
                "executor",
                f"{executor}: each run a Ray task holding {cpus} CPU and {gpus} GPU, run again up to "
                f"{_amount(retries)} times when its worker dies",
            )
        )
    files = [name for name in (GRID_JSON, GRID_COPY) if (grid_dir / name).is_file()] + [
        str(r.get("log")) for r in runs if r.get("log") and (grid_dir / str(r.get("log"))).is_file()
    ]
    return {
        "css": PAGE_CSS + GRID_CSS,
        "grid_id": grid.get("grid_id", grid_dir.name),
        "name": grid.get("name") or "",
        "status": grid.get("status", "running"),
        "started": _time(grid.get("started", "?")),
        "ended": _time(grid["ended"]) if grid.get("ended") else "not finished",
        "error": grid.get("error") or "",
        "counts": counts,
        "what": what,
        "tables": tables,
        "files": files,
        "keys": keys,
        "labels": labels,
        "base_rows": base_rows,
        "varying": varying,
    }


def write_grid_page(grid_dir: str | Path) -> tuple[Path, Path]:
    """Write ``index.html`` and ``README.md`` into a grid folder from its ``grid.json`` and its runs' files.

    Returns:
        The paths of ``index.html`` and ``README.md``.

    Raises:
        FileNotFoundError: When the folder has no readable ``grid.json``.
    """
    import jinja2

    grid_dir = Path(grid_dir)
    grid = _grid_json(grid_dir / GRID_JSON)
    if not isinstance(grid, dict):
        raise FileNotFoundError(f"{grid_dir}: no readable grid.json (is this a grid folder?)")
    context = _context(grid_dir, grid)
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    index = grid_dir / INDEX
    index.write_text(environment.from_string(TEMPLATE).render(**context), encoding="utf-8")
    readme = grid_dir / README
    readme.write_text(_markdown(context), encoding="utf-8")
    return index, readme


def _md(text: Any) -> str:
    return md_text(text)


def _markdown(context: dict[str, Any]) -> str:
    lines = [
        f"# airbench-nb grid {md_code(context['grid_id'])}: {md_text(context['status'])}",
        "",
        f"{_md(context['name']) + ': ' if context['name'] else ''}{_md(context['counts'])}; started "
        f"{_md(context['started'])}, ended {_md(context['ended'])}. The full page, with intervals and the official "
        "protocol, is [index.html](index.html).",
        *(
            ["", f"Stopped before its end: {_md(context['error'])}. Finish it with `airbench-nb run --resume`."]
            if context["error"]
            else []
        ),
        "",
        *[f"- **{_md(key)}**: {_md(value)}" for key, value in context["what"]],
        "",
        "## Runs (strict protocol)",
        "",
    ]
    table = context["tables"][0]
    score_heads = [f"{label} {sub}" for label in context["labels"] for sub in table["sub"]]
    head = ["#", "run", *context["varying"], "status", "seconds", *score_heads]
    lines += ["| " + " | ".join(_md(h) for h in head) + " |", "|" + "---|" * len(head)]
    for row in table["rows"]:
        run = f"[{_md(row['run_id'])}]({md_link(row['link'])})" if row["link"] else _md(row["run_id"])
        status = f"{row['status']} ({row['tries']})" if row["tries"] else row["status"]
        cells = [_md(c) for c in (row["index"], *row["params"], status, row["seconds"])]
        cells += [_md(c["value"]) for c in row["cells"]]
        lines.append("| " + " | ".join([cells[0], run, *cells[1:]]) + " |")
    errors = [row for row in table["rows"] if row["error"]]
    if errors:
        lines += ["", "## Failed runs", ""]
        lines += [f"- {md_code(row['run_id'])}: {_md(row['error'])}" for row in errors]
    lines += ["", "## Files", "", *[f"- [{_md(p)}]({md_link(p)})" for p in context["files"]], ""]
    return "\n".join(lines)
