"""Tables: a long DataFrame of scores, and a summary of every model of a run folder."""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

from airbench_nb.records import ChatItem, FoundationItem, Response, Verdict
from airbench_nb.run_folder import KINDS, RunFolder
from airbench_nb.run_records import RunRecords
from airbench_nb.score_table import RunScores, ScoreInputs, ScoreTable
from airbench_nb.scoring.aggregate import DEFAULT_REPS
from airbench_nb.scoring.outcomes import RULE_JUDGE, Protocol
from airbench_nb.scoring.run import finish_steps, score_run_steps

logger = logging.getLogger(__name__)


def scores_frame(result: RunScores | dict[str, Any]) -> Any:
    """Flatten a :func:`score_run` / :func:`score_official_files` result into a long pandas DataFrame.

    Args:
        result: The :class:`~airbench_nb.score_table.RunScores` (or its JSON form).

    Returns:
        A ``pandas.DataFrame`` with one row per score and the columns of :data:`FRAME_COLUMNS`: ``benchmark``
        (foundation/chat), ``level`` (subset/task/category/average), ``name``, ``protocol``, ``value``, ``n``,
        ``failures``, ``ci_low``, ``ci_high``, ``correct`` (Foundation), ``reference`` and ``relative`` (Chat).
        Multi-turn Chat tasks add level ``turn`` rows named ``"<task> turn <k>"`` (k from 1). The kit's categories
        (``multi-clip``, ``multi-turn``) are ``category`` rows like the others; the ``average`` row leaves them out.
    """
    scores = result if isinstance(result, RunScores) else RunScores.model_validate(result)
    return scores.frame()


def score_run_folder(
    folder: RunFolder,
    *,
    kinds: Sequence[str] = KINDS,
    protocol: Protocol = "both",
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    embedder: str | None = None,
    records: RunRecords | None = None,
) -> tuple[Any, ScoreTable]:
    """Score every model of a run folder (notebook 03/04 layout), once per Chat judge present.

    Args:
        folder: The run folder (its manifests, responses and verdicts).
        kinds: The manifest kinds to score (those present are read).
        protocol: ``official``, ``strict`` or ``both``.
        seed: Bootstrap seed.
        reps: Bootstrap replicates.
        embedder: Embedding backend of the scene and event metrics (:func:`airbench_nb.embeddings.load_embedder`);
            None: the default offline model.
        records: The run's records already read (:class:`~airbench_nb.run_records.RunRecords` of ``folder``); None:
            read here. Each model folder's responses to ``kinds`` and all its verdicts are scored; which record
            counts is decided by :func:`~airbench_nb.scoring.score_run` (:mod:`airbench_nb.run_records`' rules).

    Returns:
        ``(summary, table)``: a DataFrame with one row per (model, Chat judge, protocol) and the averages and
        category scores with their n, failures and CI (``foundation_partial`` / ``chat_partial`` say whether an
        Average covers fewer categories than the benchmark has; ``*_n`` and ``*_failed`` are the Average's, so
        the kit's categories, in columns of their own such as ``foundation_multi-clip``, do not change them); and
        the :class:`~airbench_nb.score_table.ScoreTable` of every :func:`score_run` result, keyed by
        ``"<model> | chat judge <judge>"`` (:meth:`RunFolder.write_scores` writes both).

    Raises:
        FileNotFoundError: When the folder holds none of the manifests.
    """
    manifests = folder.manifests(kinds)
    records = records if records is not None else RunRecords(folder)
    items = [i for path in manifests.values() for i in records.manifest_items(path)]
    runs: list[tuple[list[Response], list[Verdict]]] = []
    for model_dir in records.model_dirs():
        responses = records.responses(model_dir, list(manifests))
        if not responses:
            continue
        runs.append((responses, records.verdicts(model_dir)))
    return score_models(items, runs, protocol=protocol, seed=seed, reps=reps, embedder=embedder)


SCORING_SOURCES: tuple[str, ...] = ("scoring", "score_table.py", "records/clusters.py", "judge/chat_parse.py")
"""The sources (package-relative files and folders of ``.py`` files) whose code decides a score table."""


@functools.lru_cache(maxsize=1)
def scoring_code() -> str:
    """SHA-256 over the scoring sources' paths and bytes (:data:`SCORING_SOURCES`), computed once per process."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for name in SCORING_SOURCES:
        path = root / name
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(file.relative_to(root).as_posix().encode("utf-8") + b"\0")
            digest.update(file.read_bytes())
    return digest.hexdigest()


def score_inputs(
    records: RunRecords,
    *,
    kinds: Sequence[str] = KINDS,
    protocol: Protocol = "both",
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    embedder: str | None = None,
) -> ScoreInputs:
    """What :func:`score_run_folder` computes a run's table from, with these options (``summary.inputs.json``).

    Args:
        records: The run's records (their files are fingerprinted).
        kinds: The manifest kinds scored.
        protocol: ``official``, ``strict`` or ``both``.
        seed: Bootstrap seed.
        reps: Bootstrap replicates.
        embedder: Embedding backend of the scene and event metrics; None: the default offline model.
    """
    return ScoreInputs(
        records=records.fingerprint(kinds),
        kinds=list(kinds),
        protocol=protocol,
        seed=seed,
        reps=reps,
        embedder=embedder or None,
        code=scoring_code(),
    )


def write_run_scores(
    folder: RunFolder,
    *,
    kinds: Sequence[str] = KINDS,
    protocol: Protocol = "both",
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    embedder: str | None = None,
) -> tuple[Any, ScoreTable]:
    """Score a run folder once and write its table with what it was computed from (notebook 04).

    :meth:`RunFolder.write_scores <airbench_nb.run_folder.RunFolder.write_scores>` writes ``summary.json``, the two
    CSV files and ``summary.inputs.json`` (:func:`score_inputs`, taken before the records are read): notebook 05 and
    ``airbench-nb analyze`` read this table while the run's records and these options are unchanged, instead of
    scoring the run again.

    Args:
        folder: The run folder.
        kinds: The manifest kinds to score.
        protocol: ``official``, ``strict`` or ``both``.
        seed: Bootstrap seed.
        reps: Bootstrap replicates.
        embedder: Embedding backend of the scene and event metrics; None: the default offline model.

    Returns:
        ``(summary, table)`` as :func:`score_run_folder` returns them.
    """
    records = RunRecords(folder)
    inputs = score_inputs(records, kinds=kinds, protocol=protocol, seed=seed, reps=reps, embedder=embedder)
    summary, table = score_run_folder(
        folder, kinds=kinds, protocol=protocol, seed=seed, reps=reps, embedder=embedder, records=records
    )
    folder.write_scores(table, inputs)
    return summary, table


def score_models(
    items: Sequence[FoundationItem | ChatItem],
    runs: Sequence[tuple[Sequence[Response], Sequence[Verdict]]],
    *,
    protocol: Protocol = "both",
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    embedder: str | None = None,
) -> tuple[Any, ScoreTable]:
    """Score several models' records already in memory, once per Chat judge present (see :func:`score_run_folder`).

    Args:
        items: The benchmark items.
        runs: ``(responses, verdicts)`` per model; the responses of one entry come from one model.
        protocol: ``official``, ``strict`` or ``both``.
        seed: Bootstrap seed.
        reps: Bootstrap replicates.
        embedder: Embedding backend of the scene and event metrics; None: the default offline model.

    Returns:
        ``(summary, results)`` as :func:`score_run_folder` returns them.
    """
    from airbench_nb.run_records import latest_responses
    from airbench_nb.scoring.ahead import waits_on
    from airbench_nb.scoring.translation import shared_statistics

    results: dict[str, RunScores] = {}
    # the translations' references are prepared once for every model (that part of the statistics is theirs alone)
    latest = [latest_responses(responses)[0] for responses, _ in runs if responses] if len(runs) > 1 else []
    with shared_statistics(items if latest else [], latest):
        steps: dict[str, Generator[None, None, RunScores]] = {}
        for responses, verdicts in runs:
            if not responses:
                continue
            chat_judges = sorted({v.judge for v in verdicts if v.order != "single"}) or [None]
            shared: dict[str, Any] = {}  # the reference metrics' sections: no judge reads them, computed once per model
            for chat_judge in chat_judges:
                judges = (
                    None
                    if chat_judge is None
                    else [chat_judge, RULE_JUDGE, *sorted({v.judge for v in verdicts} - {chat_judge, RULE_JUDGE})]
                )
                key = f"{responses[0].model} | chat judge {chat_judge or '-'}"
                steps[key] = score_run_steps(
                    items,
                    responses,
                    verdicts,
                    protocol=protocol,
                    seed=seed,
                    reps=reps,
                    judges=judges,
                    metric_options={"embedder": embedder} if embedder else None,
                    shared_sections=shared,
                    defer=waits_on,
                )
                # every model's sections up to those a worker is still computing (scoring.ahead): those come last
                next(steps[key])  # every generator yields once
        for key, model_steps in steps.items():
            results[key] = finish_steps(model_steps)
    table = ScoreTable(results)
    return table.summary_frame(), table
