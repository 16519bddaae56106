"""The entry points: compare models, runs or a loaded run, and the section of notebook 05.

See :mod:`airbench_nb.analysis.compare`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from airbench_nb.analysis.compare.aggregate import _match, _pair_rows, _pick_judge
from airbench_nb.analysis.compare.common import ALPHA, DEFAULT_REPS, FIGURE_STEM, SEPARATOR
from airbench_nb.analysis.compare.frames import _RunFrames, parse_source
from airbench_nb.analysis.compare.paired_tests import holm, verdict
from airbench_nb.analysis.compare.records import Comparison, ItemMatch, ModelSource
from airbench_nb.analysis.data import RunData, load_run
from airbench_nb.analysis.power import size_note
from airbench_nb.records import cluster_of

logger = logging.getLogger(__name__)


def compare_models(
    entries: Sequence[tuple[ModelSource, _RunFrames]],
    *,
    protocol: str = "strict",
    chat_judge: str | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    alpha: float = ALPHA,
) -> Comparison:
    """Compare every pair of the given models (see the module docstring); the engine of :func:`compare_runs`."""
    judges = _pick_judge((frames.chat_judges(s.model) for s, frames in entries), chat_judge)
    foundation = {s.label: frames.foundation_scores(s.model) for s, frames in entries}
    chat = {s.label: frames.chat_scores(s.model, judges) if judges else {} for s, frames in entries}
    rows: list[dict[str, Any]] = []
    matches: list[ItemMatch] = []
    for k, (source_a, frames_a) in enumerate(entries):
        for source_b, frames_b in entries[k + 1 :]:
            a, b = source_a.label, source_b.label
            for benchmark, scores in (("foundation", foundation), ("chat", chat)):
                if not scores[a] and not scores[b]:
                    continue
                match, values_a, values_b = _match(benchmark, a, b, frames_a, frames_b, scores[a], scores[b])
                missing = [label for label in (a, b) if not scores[label]]
                if missing:
                    what = "answers" if benchmark == "foundation" else f"scores by judge {judges}"
                    match.reason = f"{' and '.join(missing)}: no {benchmark.capitalize()} {what}"
                elif not values_a:
                    match.reason = "no item shared and scored on both sides"
                else:
                    task_of = {u: (frames_a.items[u].task) for u in values_a}
                    clusters = {u: cluster_of(frames_a.items[u]) for u in values_a}
                    pair_rows, match.categories = _pair_rows(
                        benchmark, a, b, values_a, values_b, task_of, seed, reps, clusters
                    )
                    rows.extend(pair_rows)
                matches.append(match)
    corrected = holm([row["p_value"] for row in rows])
    for row, p in zip(rows, corrected, strict=True):
        row["p_holm"] = p
        row["verdict"] = verdict(row["diff"], p, alpha, direction=row.pop("direction", None))
        row["size"] = size_note(row["diff"], row["mde"], row["verdict"])
    logger.info("compared %d models: %d rows, %d tests", len(entries), len(rows), len(corrected))
    return Comparison(
        protocol=protocol,
        chat_judge=judges,
        seed=seed,
        reps=reps,
        alpha=alpha,
        models=[s for s, _ in entries],
        rows=rows,
        items=matches,
    )


def _labels(chosen: Sequence[tuple[Path, str]]) -> list[str]:
    """Model specs when one run folder is compared, else ``<folder name>::<spec>`` (full paths if still ambiguous)."""
    if len({folder for folder, _ in chosen}) == 1:
        return [spec for _, spec in chosen]
    labels = [f"{folder.name}{SEPARATOR}{spec}" for folder, spec in chosen]
    if len(set(labels)) < len(labels):
        labels = [f"{folder}{SEPARATOR}{spec}" for folder, spec in chosen]
    return labels


def compare_runs(
    sources: Sequence[str | Path],
    protocol: str = "strict",
    chat_judge: str | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    alpha: float = ALPHA,
    loader: Callable[[Path], RunData] = load_run,
) -> Comparison:
    """Compare models of one or several run folders, every pair on the items they share.

    Args:
        sources: Run folders (every model in them) or ``RUN_DIR::MODEL_SPEC`` (one model of a run); a model named
            twice is compared once.
        protocol: ``strict`` or ``official``: how answers and judge replies are read.
        chat_judge: The judge whose Chat scores are compared (default: the one that scored most of the models, an
            LLM judge before ``proxy``).
        seed: Seed of the paired bootstraps.
        reps: Bootstrap replicates (0: no intervals).
        alpha: Level of the verdicts after Holm correction.
        loader: Reads a run folder (default :func:`~airbench_nb.analysis.data.load_run`).

    Returns:
        The :class:`Comparison`.

    Raises:
        FileNotFoundError: A run folder that does not exist or holds no manifest.
        ValueError: An unknown protocol, a model spec that is not in its run, a Chat judge that scored no model, or
            fewer than two models in all.
    """
    if protocol not in ("strict", "official"):
        raise ValueError(f"unknown protocol {protocol!r}: use 'strict' or 'official'")
    if reps < 0:
        raise ValueError(f"reps must be >= 0, got {reps}")
    runs: dict[Path, RunData] = {}
    chosen: list[tuple[Path, str]] = []
    for source in sources:
        folder, spec = parse_source(source)
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder}: no such run folder")
        key = folder.resolve()
        if key not in runs:
            runs[key] = loader(folder)
        run = runs[key]
        if spec is not None and spec not in run.models:
            known = ", ".join(run.models) or "none"
            raise ValueError(f"model {spec!r} is not in run {folder} (models there: {known})")
        for model in [spec] if spec is not None else run.models:
            if (key, model) not in {(k.resolve(), m) for k, m in chosen}:
                chosen.append((folder, model))
    if len(chosen) < 2:
        raise ValueError(f"need at least two models to compare, got {len(chosen)} from {', '.join(map(str, sources))}")
    frames = {key: _RunFrames(run, protocol) for key, run in runs.items()}
    entries = [
        (ModelSource(label=label, run_dir=str(folder), model=model), frames[folder.resolve()])
        for label, (folder, model) in zip(_labels(chosen), chosen, strict=True)
    ]
    return compare_models(entries, protocol=protocol, chat_judge=chat_judge, seed=seed, reps=reps, alpha=alpha)


def compare_run_data(
    run: RunData,
    *,
    protocol: str = "strict",
    chat_judge: str | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    alpha: float = ALPHA,
    foundation: pd.DataFrame | None = None,
    chat: pd.DataFrame | None = None,
) -> Comparison:
    """Compare every model of an already loaded run (frames already computed under ``protocol`` may be passed).

    Args:
        run: The run's records.
        protocol: ``strict`` or ``official``.
        chat_judge: The Chat judge compared (default as in :func:`compare_runs`).
        seed: Bootstrap seed.
        reps: Bootstrap replicates.
        alpha: Level of the verdicts after Holm correction.
        foundation: ``run.foundation_frame(protocol)``, if already computed.
        chat: ``run.chat_frame(protocol)``, if already computed.

    Returns:
        The :class:`Comparison` (no rows with fewer than two models).
    """
    frames = _RunFrames(run, protocol, foundation=foundation, chat=chat)
    entries = [(ModelSource(label=m, run_dir=str(run.folder), model=m), frames) for m in run.models]
    return compare_models(entries, protocol=protocol, chat_judge=chat_judge, seed=seed, reps=reps, alpha=alpha)


def comparison_section(
    run: RunData,
    *,
    protocol: str = "strict",
    chat_judge: str | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    foundation: pd.DataFrame | None = None,
    chat: pd.DataFrame | None = None,
) -> Any:
    """The comparison of every model of a run as a notebook-05 :class:`~airbench_nb.analysis.report.Section`.

    Args:
        run: The run's records (``RunAnalysis.run``).
        protocol: ``strict`` or ``official``.
        chat_judge: The Chat judge compared (default as in :func:`compare_runs`).
        seed: Bootstrap seed.
        reps: Bootstrap replicates.
        foundation: ``run.foundation_frame(protocol)``, if already computed.
        chat: ``run.chat_frame(protocol)``, if already computed.

    Returns:
        ``Section("comparison", ...)``: data = :meth:`Comparison.payload`, frame = the table, the forest plot
        (saved as :data:`FIGURE_STEM`), or the reason there is nothing to compare.
    """
    from airbench_nb import plots
    from airbench_nb.analysis.section import Section

    if len(run.models) < 2:
        return Section("comparison", {}, reason=f"fewer than two models in the run ({len(run.models)})")
    result = compare_run_data(
        run, protocol=protocol, chat_judge=chat_judge, seed=seed, reps=reps, foundation=foundation, chat=chat
    )
    frame = result.comparison_frame()
    if frame.empty:
        why = "; ".join(sorted({m.reason for m in result.items if m.reason})) or "no items shared and scored"
        return Section("comparison", result.payload(), reason=why)
    return Section(
        "comparison",
        result.payload(),
        frame=frame,
        figure=plots.compare_forest(frame),
        figure_key=FIGURE_STEM,
    )
