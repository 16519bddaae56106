"""The paper's tables: the main leaderboard, per-task scores and format following, for display and on disk.

The inputs are :func:`airbench_nb.scoring.score_run_folder`'s outputs: its summary frame and its results dict
keyed ``"<model> | chat judge <judge>"`` (each ``{protocol: table}``), and for format following the strict
Foundation frame of :mod:`airbench_nb.analysis.data`.

- :func:`main_table`: AIR-Bench's main table, one row per (model, Chat judge), Foundation speech / sound / music /
  average and Chat speech / sound / music / mixed / average for the official and the strict protocol side by side.
  A cell reads ``"value [ci_low, ci_high]"``: Foundation accuracy in percent with one decimal, Chat scores (1-10)
  with two. An average taken over fewer categories than the benchmark has is marked :data:`PARTIAL_MARK`. The kit's
  own categories (``multi-clip``, ``multi-turn``) get columns after the count when a run has them, outside the
  Average.
- :func:`task_table`: per-task accuracy / score per model for one protocol.
- :func:`format_following`: how Foundation answers were read (the paper's format-following table): by the rule,
  by an LLM judge, by nobody although there was a response, or there was no response (or an error).
- :func:`tables_long`: every number behind those tables (value, CI, n, failures), one row each.
- :func:`write_tables`: ``leaderboard.md`` and ``tables.csv``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from airbench_nb.analysis.stats import plain, wilson
from airbench_nb.judge.registry import scores_only
from airbench_nb.markup import md_code, md_text
from airbench_nb.run_folder import LEADERBOARD, TABLES_CSV
from airbench_nb.scoring import (
    CHAT_CATEGORIES,
    FOUNDATION_CATEGORIES,
    KIT_CHAT_CATEGORIES,
    KIT_FOUNDATION_CATEGORIES,
    PROTOCOLS,
    PROXY_LABEL,
    PROXY_SHORT,
    RULE_JUDGE,
)
from airbench_nb.scoring.provenance import provenance_text

if TYPE_CHECKING:
    from airbench_nb.score_table import ProtocolScores, RunScores, ScoreEntry, ScoreSection

logger = logging.getLogger(__name__)

PARTIAL_MARK = "†"
"""Appended to an average taken over fewer categories than the benchmark has."""
MISSING = "–"
"""Cell text where there is no score."""
KEY_SEPARATOR = " | chat judge "
"""Separator of model and Chat judge in ``score_run_folder``'s result keys."""
BENCHMARK_LABELS: Mapping[str, str] = {"foundation": "Foundation", "chat": "Chat"}
"""Display names of the two benchmarks."""
COLUMNS: Mapping[str, tuple[str, ...]] = {
    "foundation": (*FOUNDATION_CATEGORIES, "average"),
    "chat": (*CHAT_CATEGORIES, "average"),
}
"""Main-table columns of each benchmark (the kit's categories follow, see :data:`KIT_COLUMNS`)."""
KIT_COLUMNS: Mapping[str, tuple[str, ...]] = {"foundation": KIT_FOUNDATION_CATEGORIES, "chat": KIT_CHAT_CATEGORIES}
"""Main-table columns of the kit's own categories, after the Average and the count (shown only when a result has
them): not AIR-Bench's, so outside the Average."""
COUNT_COLUMN = "n (failed)"
"""Main-table column with the average's n and the section's failures."""

LONG_COLUMNS: tuple[str, ...] = (
    "table",
    "model",
    "chat_judge",
    "protocol",
    "benchmark",
    "level",
    "name",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "failures",
    "partial",
)
"""Columns of :func:`tables_long` and ``tables.csv``."""

FORMAT_CLASSES: tuple[str, ...] = ("rule", "llm_judge", "unresolved", "no_response")
"""Format-following classes: read by the rule, read by an LLM judge, read by nobody, no response or an error."""
FORMAT_LABELS: Mapping[str, str] = {
    "rule": "rule",
    "llm_judge": "LLM judge",
    "unresolved": "unresolved",
    "no_response": "no response / error",
}
"""Display names of :data:`FORMAT_CLASSES`."""

PROTOCOL_LINES: tuple[str, ...] = (
    "**official** reproduces the AIR-Bench scripts: Foundation answers are read from their first or "
    "second-to-last character and unreadable ones, like unparsed Chat judge replies, are dropped from n.",
    "**strict** reads answers with the kit's judges: an unreadable, missing or error answer counts wrong "
    "(Foundation); an unscored Chat judgment is left out of the mean and counted as a failure.",
)
"""The two protocols in two lines, for the leaderboard."""


def judge_label(spec: str | None) -> str:
    """How a Chat judge is named in tables: the proxy's short label, ``-`` for none, else the spec."""
    if not spec or spec == "-":
        return "-"
    if scores_only(spec):
        return PROXY_SHORT
    return spec


def _protocols(result: RunScores) -> list[ProtocolScores]:
    """The protocols a model's scores hold, official first."""
    return [table for table in (result.official, result.strict) if table is not None]


def split_key(key: str, result: RunScores) -> tuple[str, str]:
    """``(model, chat judge spec)`` of a ``score_run_folder`` result key (``-`` when no Chat judge)."""
    if KEY_SEPARATOR in key:
        model, judge = key.rsplit(KEY_SEPARATOR, 1)
        return model, judge or "-"
    tables = _protocols(result)
    model = next((str(t.model) for t in tables if t.model), key)
    judges = next((t.judges.chat for t in tables if t.judges is not None), None)
    return model, (judges[0] if judges else "-")


def _partial(section: ScoreSection, benchmark: str) -> bool:
    """Whether a section's average is partial: as scoring says, else fewer categories with a value than expected."""
    if section.average.partial is not None:
        return section.average.partial
    expected = FOUNDATION_CATEGORIES if benchmark == "foundation" else CHAT_CATEGORIES
    present = [c for c in expected if c in section.categories and section.categories[c].value is not None]
    return len(present) < len(expected)


def format_value(value: float | None, benchmark: str) -> str:
    """One number as a table shows it: Foundation accuracy in % with one decimal, Chat scores with two."""
    if value is None:
        return MISSING
    return f"{value * 100:.1f}" if benchmark == "foundation" else f"{value:.2f}"


def format_cell(entry: ScoreEntry | None, benchmark: str, partial: bool = False) -> str:
    """``"value [ci_low, ci_high]"`` (without the interval when there is none), :data:`PARTIAL_MARK` when partial.

    Args:
        entry: A score (``value``, ``ci_low``, ``ci_high``, ...) or None.
        benchmark: ``foundation`` (accuracy, shown in %) or ``chat`` (scores 1-10).
        partial: Whether to mark the cell as a partial average.

    Returns:
        The cell text; :data:`MISSING` without a value.
    """
    if entry is None or entry.value is None:
        return MISSING
    text = format_value(entry.value, benchmark)
    low, high = entry.ci_low, entry.ci_high
    if low is not None and high is not None:
        text += f" [{format_value(low, benchmark)}, {format_value(high, benchmark)}]"
    return f"{text} {PARTIAL_MARK}" if partial else text


def _has_airbench(result: RunScores) -> bool:
    """Whether a model's scores hold a Foundation or Chat section under some protocol."""
    return any(table.foundation is not None or table.chat is not None for table in _protocols(result))


def _section(result: RunScores, protocol: str, bench: str) -> ScoreSection | None:
    """A model's Foundation or Chat section under ``protocol``, or None."""
    table = getattr(result, protocol)
    return getattr(table, bench) if table is not None else None


def _rows(results: Mapping[str, RunScores], summary: pd.DataFrame | None) -> list[tuple[str, str, str]]:
    """``(key, model, chat judge label)`` per result, in the summary's order when a summary is given.

    A model without Foundation or Chat scores (an ASR model answers SSEU-Bench's items only) has no row: the SSEU
    table shows it.
    """
    rows = [(key, *split_key(key, result)) for key, result in results.items() if _has_airbench(result)]
    labelled = [(key, model, judge_label(judge)) for key, model, judge in rows]
    if summary is None or summary.empty or not {"model", "chat_judge"} <= set(summary.columns):
        return labelled
    order = list(dict.fromkeys(zip(summary["model"].astype(str), summary["chat_judge"].astype(str), strict=True)))
    return sorted(
        (r for r in labelled if (r[1], r[2]) in order),
        key=lambda r: order.index((r[1], r[2])),
    )


def _kit_present(results: Mapping[str, RunScores], bench: str) -> list[str]:
    """The kit's categories of ``bench`` that some result has a section entry for, in report order."""
    found = {
        name
        for result in results.values()
        for table in _protocols(result)
        if (section := getattr(table, bench)) is not None
        for name in section.categories
    }
    return [c for c in KIT_COLUMNS[bench] if c in found]


def main_table(results: Mapping[str, RunScores], summary: pd.DataFrame | None = None) -> pd.DataFrame:
    """AIR-Bench's main table, official and strict side by side, cells formatted for reading.

    Args:
        results: ``score_run_folder``'s results (``{"<model> | chat judge <judge>": {protocol: table}}``).
        summary: ``score_run_folder``'s summary frame; when given, rows follow its order and only its
            (model, chat judge) pairs are shown.

    Returns:
        Index ``(model, chat_judge)``; columns ``(protocol, benchmark, name)`` for the protocols the results
        hold (official first), benchmark ``Foundation`` or ``Chat``, name a category, ``average`` or
        :data:`COUNT_COLUMN` (the Average's n and failures), then the kit's categories present. Empty (with
        ``attrs["reason"]``) when there are no results.
    """
    present = [p for p in PROTOCOLS if any(getattr(r, p) is not None for r in results.values())] or list(PROTOCOLS)
    kit = {bench: _kit_present(results, bench) for bench in ("foundation", "chat")}
    columns = [
        (protocol, BENCHMARK_LABELS[bench], name)
        for protocol in present
        for bench in ("foundation", "chat")
        for name in (*COLUMNS[bench], COUNT_COLUMN, *kit[bench])
    ]
    index_names = ["model", "chat_judge"]
    records: list[list[str]] = []
    index: list[tuple[str, str]] = []
    for key, model, judge in _rows(results, summary):
        cells: list[str] = []
        for protocol in present:
            for bench in ("foundation", "chat"):
                section = _section(results[key], protocol, bench)
                categories = section.categories if section is not None else {}
                for name in COLUMNS[bench]:
                    if name == "average":
                        average = section.average if section is not None else None
                        cells.append(format_cell(average, bench, section is not None and _partial(section, bench)))
                    else:
                        cells.append(format_cell(categories.get(name), bench))
                # the Average's units and failures: no kit task
                cells.append(
                    f"{section.average.n} ({section.average.failures} failed)" if section is not None else MISSING
                )
                cells.extend(format_cell(categories.get(name), bench) for name in kit[bench])
        records.append(cells)
        index.append((model, judge))
    frame = pd.DataFrame(
        records,
        index=pd.MultiIndex.from_tuples(index, names=index_names) if index else None,
        columns=pd.MultiIndex.from_tuples(columns, names=["protocol", "benchmark", "name"]),
    )
    if frame.empty:
        frame.attrs["reason"] = "no scored models"
    return frame


def _entry_row(
    table: str, model: str, judge: str, protocol: str, bench: str, level: str, name: str, entry: ScoreEntry
) -> dict[str, Any]:
    return {
        "table": table,
        "model": model,
        "chat_judge": judge,
        "protocol": protocol,
        "benchmark": bench,
        "level": level,
        "name": name,
        "value": plain(entry.value),
        "ci_low": plain(entry.ci_low),
        "ci_high": plain(entry.ci_high),
        "n": entry.n,
        "failures": entry.failures,
        "partial": None,
    }


def tables_long(
    results: Mapping[str, RunScores],
    formats: pd.DataFrame | None = None,
    summary: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Every number behind the tables, one row each (the content of ``tables.csv``).

    Args:
        results: ``score_run_folder``'s results.
        formats: :func:`format_following`'s output, to include (optional).
        summary: ``score_run_folder``'s summary (orders and filters rows as in :func:`main_table`).

    Returns:
        Columns :data:`LONG_COLUMNS`. ``table`` is ``main`` (levels ``category`` and ``average``), ``task``
        (level ``task``) or ``format_following`` (level ``share``: ``value`` is the share of answers in class
        ``name``, ``n`` the answers, ``failures`` the answers in that class, with a Wilson 95% interval). Values
        are raw: accuracies in 0-1, Chat scores in 1-10.
    """
    rows: list[dict[str, Any]] = []
    for key, model, judge in _rows(results, summary):
        for protocol in PROTOCOLS:
            for bench in ("foundation", "chat"):
                section = _section(results[key], protocol, bench)
                if section is None:
                    continue
                for name, entry in section.categories.items():
                    rows.append(_entry_row("main", model, judge, protocol, bench, "category", name, entry))
                average = _entry_row("main", model, judge, protocol, bench, "average", "average", section.average)
                average["partial"] = _partial(section, bench)
                rows.append(average)
                for name, entry in section.tasks.items():
                    rows.append(_entry_row("task", model, judge, protocol, bench, "task", name, entry))
    if formats is not None:
        for record in formats.to_dict("records"):
            for name in FORMAT_CLASSES:
                count, n = int(record[f"{name}_count"]), int(record["n"])
                low, high = wilson(count, n) if n else (None, None)
                rows.append(
                    {
                        "table": "format_following",
                        "model": record["model"],
                        "chat_judge": "-",
                        "protocol": "strict",
                        "benchmark": "foundation",
                        "level": "share",
                        "name": name,
                        "value": plain(record[name]),
                        "ci_low": plain(low),
                        "ci_high": plain(high),
                        "n": n,
                        "failures": count,
                        "partial": None,
                    }
                )
    frame = pd.DataFrame(rows, columns=list(LONG_COLUMNS))
    for column in ("n", "failures"):
        frame[column] = frame[column].astype("Int64")
    return frame


def task_table(results: Mapping[str, RunScores], protocol: str) -> pd.DataFrame:
    """Per-task accuracy (Foundation, %) and score (Chat, 1-10) per model, for one protocol.

    Args:
        results: ``score_run_folder``'s results.
        protocol: ``official`` or ``strict``.

    Returns:
        Index ``(benchmark, category, task)``; a column ``n`` (the task's units: items, or (item, order) pairs
        for Chat, the most over models) then one column per model (``"model (chat judge)"`` when a model has
        several Chat judges). Cells read ``"value [ci_low, ci_high]"``, plus ``"(k failed)"`` when some failed.
        Empty (with ``attrs["reason"]``) when there is nothing for that protocol.

    Raises:
        ValueError: On an unknown protocol.
    """
    from airbench_nb.records import ALL_CHAT_TASKS as CHAT_TASKS
    from airbench_nb.records import ALL_FOUNDATION_TASKS as FOUNDATION_TASKS

    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}: use 'official' or 'strict'")
    rows = _rows(results, None)
    models = [m for _, m, _ in rows]
    labels = {key: (m if models.count(m) == 1 else f"{m} ({j})") for key, m, j in rows}
    cells: dict[tuple[str, str, str], dict[str, str]] = {}
    units: dict[tuple[str, str, str], int] = {}
    for key, _, _ in rows:
        for bench, known in (("foundation", FOUNDATION_TASKS), ("chat", CHAT_TASKS)):
            section = _section(results[key], protocol, bench)
            for task, entry in (section.tasks if section is not None else {}).items():
                index = (BENCHMARK_LABELS[bench], known.get(task, "other"), task)
                text = format_cell(entry, bench)
                if entry.failures:
                    text += f" ({entry.failures} failed)"
                cells.setdefault(index, {})[labels[key]] = text
                counted = entry.n if (bench == "foundation" and protocol == "strict") else entry.n + entry.failures
                units[index] = max(units.get(index, 0), int(counted))
    if not cells:
        frame = pd.DataFrame(columns=["n", *labels.values()])
        frame.attrs["reason"] = f"no task scores under the {protocol} protocol"
        return frame
    bench_order = list(BENCHMARK_LABELS.values())
    categories = [*FOUNDATION_CATEGORIES, "mixed", *KIT_FOUNDATION_CATEGORIES, *KIT_CHAT_CATEGORIES, "other"]

    def order(index: tuple[str, str, str]) -> tuple[int, int, int, str]:
        bench, category, task = index
        known = FOUNDATION_TASKS if bench == "Foundation" else CHAT_TASKS
        position = list(known).index(task) if task in known else len(known)
        return bench_order.index(bench), categories.index(category), position, task

    ordered = sorted(cells, key=order)
    frame = pd.DataFrame(
        [{"n": units[i], **{label: cells[i].get(label, MISSING) for label in labels.values()}} for i in ordered],
        index=pd.MultiIndex.from_tuples(ordered, names=["benchmark", "category", "task"]),
    )
    return frame


def format_following(foundation_frame_strict: pd.DataFrame) -> pd.DataFrame:
    """How each model's Foundation answers were read: by the rule, an LLM judge, nobody, or there was no answer.

    Args:
        foundation_frame_strict: :meth:`airbench_nb.analysis.data.RunData.foundation_frame` under ``strict``.

    Returns:
        One row per model: ``n`` (Foundation items), the shares ``rule`` (the rule read the choice),
        ``llm_judge`` (another judge did), ``unresolved`` (a response nobody could read), ``no_response`` (no
        response, an empty one or an error), which sum to 1, and the counts ``<class>_count``. Empty (with
        ``attrs["reason"]``) for an empty frame.

    Raises:
        ValueError: When given the official frame (its ``judge`` is ``official``, not the judge that read).
    """
    columns = ["model", "n", *FORMAT_CLASSES, *(f"{c}_count" for c in FORMAT_CLASSES)]
    frame = foundation_frame_strict
    if frame.empty:
        out = pd.DataFrame(columns=columns)
        out.attrs["reason"] = "no Foundation answers"
        return out
    if (frame["judge"] == "official").any():
        raise ValueError("format_following reads the strict Foundation frame (foundation_frame('strict'))")
    judge = frame["judge"]
    response = frame["response"]
    empty = response.isna() | (response.fillna("").astype(str).str.strip() == "")
    failed = frame["failed"].astype(bool)
    classes = pd.Series("unresolved", index=frame.index)
    classes[~failed & (judge == RULE_JUDGE)] = "rule"
    classes[~failed & judge.notna() & (judge != RULE_JUDGE)] = "llm_judge"
    classes[failed & empty] = "no_response"
    rows: list[dict[str, Any]] = []
    for model, group in classes.groupby(frame["model"], sort=True):
        counts = group.value_counts()
        n = len(group)
        row: dict[str, Any] = {"model": str(model), "n": n}
        for name in FORMAT_CLASSES:
            row[name] = int(counts.get(name, 0)) / n
            row[f"{name}_count"] = int(counts.get(name, 0))
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def markdown_table(frame: pd.DataFrame) -> str:
    """A DataFrame as a GitHub markdown table (index levels first when named), every cell escaped (:func:`md_text`).

    Args:
        frame: The table; MultiIndex columns are joined with spaces.

    Returns:
        The markdown text, one line per row, ending with a newline.
    """
    data = frame.reset_index() if any(name is not None for name in frame.index.names) else frame
    headers = [" ".join(str(p) for p in c if str(p)) if isinstance(c, tuple) else str(c) for c in data.columns]

    def cell(value: Any) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return MISSING
        return md_text(value)

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for values in data.itertuples(index=False):
        lines.append("| " + " | ".join(cell(v) for v in values) + " |")
    return "\n".join(lines) + "\n"


def _main_markdown(main: pd.DataFrame) -> pd.DataFrame:
    """The main table with the protocol as a row level (official and strict rows adjacent), for markdown."""
    rows: list[dict[str, Any]] = []
    for (model, judge), values in main.iterrows():
        for protocol in dict.fromkeys(main.columns.get_level_values("protocol")):
            row: dict[str, Any] = {"Model": model, "Chat judge": judge, "Protocol": protocol}
            for (bench, name), text in values[protocol].items():
                row[f"{bench} {name}"] = text
            rows.append(row)
    return pd.DataFrame(rows)


def _format_markdown(formats: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame({"Model": formats["model"], "n": formats["n"]})
    for name in FORMAT_CLASSES:
        out[FORMAT_LABELS[name]] = [
            f"{share * 100:.1f}% ({count})"
            for share, count in zip(formats[name], formats[f"{name}_count"], strict=True)
        ]
    return out


def _unusable(results: Mapping[str, RunScores]) -> dict[str, int]:
    """Items left out as unusable (audio missing, empty or corrupt), the most any result reports, per kind."""
    out: dict[str, int] = {}
    for result in results.values():
        for table in result.protocols():
            if table.unusable_items is None:
                continue
            counts = table.unusable_items.model_dump(exclude_unset=True)
            for kind, count in counts.items():
                if isinstance(count, int):
                    out[kind] = max(out.get(kind, 0), count)
    return out


def write_tables(
    out_dir: str | Path,
    results: Mapping[str, RunScores],
    summary: pd.DataFrame | None = None,
    foundation_frame_strict: pd.DataFrame | None = None,
    title: str = "AIR-Bench leaderboard",
    protocols: Sequence[str] = PROTOCOLS,
) -> dict[str, Path]:
    """Write ``leaderboard.md`` (the tables in markdown) and ``tables.csv`` (every number, long).

    Args:
        out_dir: Folder to write into (created if missing).
        results: ``score_run_folder``'s results.
        summary: ``score_run_folder``'s summary frame (row order and filter, see :func:`main_table`).
        foundation_frame_strict: The strict Foundation frame, for the format-following table (left out if None).
        title: Title of the markdown page.
        protocols: Protocols whose per-task tables are written.

    Returns:
        ``{"markdown": path, "csv": path}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    formats = format_following(foundation_frame_strict) if foundation_frame_strict is not None else None
    main = main_table(results, summary)
    parts = [f"# {title}\n", "\n".join(f"- {line}" for line in PROTOCOL_LINES) + "\n"]
    parts.append(
        "Foundation: accuracy in % with its 95% bootstrap interval; Chat: the judge's mean score (1-10) with its "
        f"95% bootstrap interval. {PARTIAL_MARK} marks an average over fewer categories than the benchmark has. "
        "n counts the units scored (Foundation items; Chat (item, order) judgments): official n leaves failures "
        "out, strict Foundation n counts them wrong; failed units are counted beside it.\n"
    )
    parts.append("## Main table\n")
    if main.empty:
        parts.append(f"_{main.attrs.get('reason', 'nothing to show')}._\n")
    else:
        parts.append(markdown_table(_main_markdown(main)))
    notes: list[str] = []
    judges = set(main.index.get_level_values("chat_judge")) if not main.empty else set()
    if PROXY_SHORT in judges:
        notes.append(
            f"Chat judge `{PROXY_SHORT}`: {PROXY_LABEL}. Its scores are a similarity proxy, not comparable with "
            "an LLM judge's."
        )
    provenance = provenance_text(sorted(str(j) for j in judges), quote=md_code)
    if provenance:
        notes.append(provenance)
    unusable = {k: v for k, v in _unusable(results).items() if v}
    if unusable:
        counts = ", ".join(f"{kind} {count}" for kind, count in unusable.items())
        notes.append(f"Items left out of both protocols because their audio is missing, empty or corrupt: {counts}.")
    if notes:
        parts.append("\n".join(f"- {note}" for note in notes) + "\n")
    for protocol in protocols:
        tasks = task_table(results, protocol)
        parts.append(f"## Per-task scores ({protocol})\n")
        parts.append(markdown_table(tasks) if not tasks.empty else f"_{tasks.attrs.get('reason')}._\n")
    if formats is not None:
        parts.append("## Format following (strict)\n")
        parts.append(
            "How each model's Foundation answers were read: by the rule, by an LLM judge, by nobody although "
            "there was a response, or there was no response (or an error). Share of n, with the count.\n"
        )
        parts.append(markdown_table(_format_markdown(formats)) if not formats.empty else "_no Foundation answers._\n")
    markdown = out / LEADERBOARD
    markdown.write_text("\n".join(parts), encoding="utf-8")
    csv = out / TABLES_CSV
    tables_long(results, formats, summary).to_csv(csv, index=False)
    logger.info("wrote %s and %s", markdown, csv)
    return {"markdown": markdown, "csv": csv}


long_scores = tables_long
"""Another name of :func:`tables_long` (an earlier name of it)."""
