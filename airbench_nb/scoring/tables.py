"""Tables: a long DataFrame of scores, and a summary of every model of a run folder."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airbench_nb.records import ChatItem, FoundationItem, Response, Verdict
from airbench_nb.scoring.aggregate import DEFAULT_REPS
from airbench_nb.scoring.outcomes import RULE_JUDGE, SCORES_ONLY_JUDGES, Protocol
from airbench_nb.scoring.run import PROXY_SHORT, score_run

logger = logging.getLogger(__name__)

FRAME_COLUMNS: tuple[str, ...] = (
    "benchmark",
    "level",
    "name",
    "protocol",
    "value",
    "n",
    "failures",
    "ci_low",
    "ci_high",
    "correct",
    "reference",
    "relative",
)
"""Columns of :func:`scores_frame`."""


def scores_frame(result: dict[str, Any]) -> Any:
    """Flatten a :func:`score_run` / :func:`score_official_files` result into a long pandas DataFrame.

    Args:
        result: The result dict (``{protocol: table}``).

    Returns:
        A ``pandas.DataFrame`` with one row per score and the columns of :data:`FRAME_COLUMNS`: ``benchmark``
        (foundation/chat), ``level`` (subset/task/category/average), ``name``, ``protocol``, ``value``, ``n``,
        ``failures``, ``ci_low``, ``ci_high``, ``correct`` (Foundation), ``reference`` and ``relative`` (Chat).
        Multi-turn Chat tasks add level ``turn`` rows named ``"<task> turn <k>"`` (k from 1). The kit's categories
        (``multi-clip``, ``multi-turn``) are ``category`` rows like the others; the ``average`` row leaves them out.
    """
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for protocol, table in result.items():
        if not isinstance(table, dict):
            continue
        for benchmark in ("foundation", "chat"):
            section = table.get(benchmark)
            if not section:
                continue
            levels = [("subset", "subsets"), ("task", "tasks"), ("turn", "turns"), ("category", "categories")]
            entries = [(level, name, entry) for level, key in levels for name, entry in section.get(key, {}).items()]
            entries.append(("average", "average", section["average"]))
            for level, name, entry in entries:
                rows.append(
                    {
                        "benchmark": benchmark,
                        "level": level,
                        "name": name,
                        "protocol": protocol,
                        "value": entry["value"],
                        "n": entry["n"],
                        "failures": entry["failures"],
                        "ci_low": entry["ci_low"],
                        "ci_high": entry["ci_high"],
                        "correct": entry.get("correct"),
                        "reference": entry["reference"]["value"] if "reference" in entry else None,
                        "relative": entry["relative"]["value"] if "relative" in entry else None,
                    }
                )
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))


def score_run_folder(
    manifests: dict[str, Path],
    responses_dir: str | Path,
    verdicts_dir: str | Path,
    *,
    protocol: Protocol = "both",
    seed: int = 0,
    reps: int = DEFAULT_REPS,
) -> tuple[Any, dict[str, dict[str, Any]]]:
    """Score every model of a run folder (notebook 03/04 layout), once per Chat judge present.

    Args:
        manifests: ``{"foundation": path, "chat": path}`` (either may be absent).
        responses_dir: ``<model>/<kind>.jsonl`` responses.
        verdicts_dir: ``<model>/<kind>.<judge>.jsonl`` verdicts.
        protocol: ``official``, ``strict`` or ``both``.
        seed: Bootstrap seed.
        reps: Bootstrap replicates.

    Returns:
        ``(summary, results)``: a DataFrame with one row per (model, Chat judge, protocol) and the averages and
        category scores with their n, failures and CI (``foundation_partial`` / ``chat_partial`` say whether an
        Average covers fewer categories than the benchmark has; ``*_n`` and ``*_failed`` are the Average's, so
        the kit's categories, in columns of their own such as ``foundation_multi-clip``, do not change them); and
        the full :func:`score_run` results keyed by
        ``"<model> | chat judge <judge>"``.
    """
    from airbench_nb.manifests import read_manifest, read_records

    items = [i for path in manifests.values() for i in read_manifest(path)]
    runs: list[tuple[list[Response], list[Verdict]]] = []
    for model_dir in sorted(p for p in Path(responses_dir).iterdir() if p.is_dir()):
        paths = [model_dir / f"{kind}.jsonl" for kind in manifests]
        responses = [r for path in paths if path.is_file() for r in read_records(path, Response)]
        if not responses:
            continue
        verdicts = [
            v
            for path in sorted((Path(verdicts_dir) / model_dir.name).glob("*.jsonl"))
            for v in read_records(path, Verdict)
        ]
        runs.append((responses, verdicts))
    return score_models(items, runs, protocol=protocol, seed=seed, reps=reps)


def score_models(
    items: Sequence[FoundationItem | ChatItem],
    runs: Sequence[tuple[Sequence[Response], Sequence[Verdict]]],
    *,
    protocol: Protocol = "both",
    seed: int = 0,
    reps: int = DEFAULT_REPS,
) -> tuple[Any, dict[str, dict[str, Any]]]:
    """Score several models' records already in memory, once per Chat judge present (see :func:`score_run_folder`).

    Args:
        items: The benchmark items.
        runs: ``(responses, verdicts)`` per model; the responses of one entry come from one model.
        protocol: ``official``, ``strict`` or ``both``.
        seed: Bootstrap seed.
        reps: Bootstrap replicates.

    Returns:
        ``(summary, results)`` as :func:`score_run_folder` returns them.
    """
    import pandas as pd

    rows: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
    for responses, verdicts in runs:
        if not responses:
            continue
        chat_judges = sorted({v.judge for v in verdicts if v.order != "single"}) or [None]
        for chat_judge in chat_judges:
            judges = (
                None
                if chat_judge is None
                else [chat_judge, RULE_JUDGE, *sorted({v.judge for v in verdicts} - {chat_judge, RULE_JUDGE})]
            )
            result = score_run(items, responses, verdicts, protocol=protocol, seed=seed, reps=reps, judges=judges)
            key = f"{responses[0].model} | chat judge {chat_judge or '-'}"
            results[key] = result
            for name, table in result.items():
                row: dict[str, Any] = {
                    "model": responses[0].model,
                    "chat_judge": (PROXY_SHORT if chat_judge in SCORES_ONLY_JUDGES else chat_judge or "-"),
                    "protocol": name,
                    "unusable_items": sum(v for k, v in table["unusable_items"].items() if k != "why"),
                }
                for bench in ("foundation", "chat"):
                    section = table.get(bench)
                    if not section:
                        continue
                    average = section.get("average") or {}
                    row[f"{bench}_average"] = average.get("value")
                    row[f"{bench}_ci"] = (average.get("ci_low"), average.get("ci_high"))
                    row[f"{bench}_n"] = average.get("n")
                    row[f"{bench}_partial"] = average.get("partial")
                    # the failures of the units the Average rests on (the kit's tasks have their own columns)
                    row[f"{bench}_failed"] = average.get("failures", section.get("failed"))
                    for category, entry in (section.get("categories") or {}).items():
                        row[f"{bench}_{category}"] = entry.get("value") if entry else None
                rows.append(row)
    return pd.DataFrame(rows), results
