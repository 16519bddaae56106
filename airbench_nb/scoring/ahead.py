"""The text-heavy scores of a large run computed ahead, in a worker process, while the analysis reads the run.

Two parts of a large run's analysis are pure text work that needs nothing but the run's files: the word alignments
of the transcripts (:func:`~airbench_nb.scoring.wer.utterance_errors`) and sacrebleu's statistics, corpus scores and
bootstraps of the translations (:func:`~airbench_nb.scoring.translation.score_translations`). On a machine with two
cores or more, :func:`start_ahead` hands them to one worker process (a fresh interpreter, joblib's loky, like
:mod:`airbench_nb.scoring.parallel`'s) the moment the analysis starts: the worker reads the transcription, joint
and translation manifests and the models' responses to them, and computes every model's utterance errors and
translation summaries while this process reads the whole run and computes the sections that need neither.

Nothing computed ahead is taken on trust. Both results are keyed by their inputs, exactly as the caches they fill
are keyed: an utterance's errors by ``(reference, hypothesis, language, uid)``, a translation summary by the digest
of every outcome it scores, the replicates and the seed. When this process needs one (:func:`settle`), it waits for
the worker, adds its results to those caches and looks again: what it asks for is found only when its own inputs
are the worker's, to the character; anything else (items left out as unusable, a response appended since the
worker read the file) is computed here, as it would be without a worker. A worker that fails is logged and
ignored. So every number is the same with or without it (``tests/test_scoring_ahead.py``).

``AIRBENCH_NB_WORKERS=1`` turns it off (as it keeps :mod:`~airbench_nb.scoring.parallel`'s workers off); it is on
by default when the machine has two cores or more and the run at least :data:`AHEAD_MIN` transcripts and
translations (counted as manifest lines). The worker holds only the texts it scores (about 0.3 GB at 150,000 items,
docs/scaling.md) and ends when its results are taken or :func:`stop_ahead` is called.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airbench_nb.run_folder import RunFolder
from airbench_nb.scoring.parallel import WORKERS_ENV

logger = logging.getLogger(__name__)

AHEAD_MIN = 5_000
"""Transcription, joint and translation items (manifest lines) below which nothing is computed ahead."""

TRANSCRIPT_KINDS: tuple[str, ...] = ("transcription", "joint")
"""Item kinds whose transcripts are aligned ahead (:class:`~airbench_nb.scoring.reference.WordErrorRate`'s)."""

TRANSLATION_KINDS: tuple[str, ...] = ("translation",)
"""Item kinds whose translations are scored ahead."""


@dataclass
class _Job:
    """One worker process and the futures of its two tasks."""

    executor: Any
    """The loky executor (one worker)."""
    futures: dict[str, Future[Any]] = field(default_factory=dict)
    """The pending tasks by part (``transcripts``, ``translations``)."""
    started: float = field(default_factory=time.perf_counter)
    """When the job was started (``perf_counter``)."""


_JOB: _Job | None = None


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _lines(path: Path) -> int:
    """Lines of a file (0 when it does not exist)."""
    try:
        with path.open("rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except OSError:
        return 0


def enabled() -> bool:
    """Whether work may be computed ahead here: two cores or more, and :data:`WORKERS_ENV` is not ``1``."""
    value = os.environ.get(WORKERS_ENV, "").strip()
    return value != "1" and _cores() >= 2


def start_ahead(folder: RunFolder, *, reps: int, seed: int) -> bool:
    """Start the worker on a run folder's transcripts and translations, when the run is large enough.

    Args:
        folder: The run folder (its manifests and responses are read by the worker).
        reps: Bootstrap replicates of the translation scores (those the analysis will ask for).
        seed: Their seed.

    Returns:
        Whether a worker was started (any earlier one is stopped first).
    """
    global _JOB
    stop_ahead()
    if not enabled():
        return False
    transcripts = [folder.manifest(k) for k in TRANSCRIPT_KINDS if folder.manifest(k).is_file()]
    translations = [folder.manifest(k) for k in TRANSLATION_KINDS if folder.manifest(k).is_file()]
    if sum(_lines(p) for p in [*transcripts, *translations]) < AHEAD_MIN:
        return False
    from joblib.externals.loky import ProcessPoolExecutor

    executor = ProcessPoolExecutor(max_workers=1, env={WORKERS_ENV: "1"})
    job = _Job(executor)
    where = (str(folder.path), str(folder.data_dir), str(folder.responses_dir), str(folder.verdicts_dir))
    if transcripts:
        job.futures["transcripts"] = executor.submit(transcript_errors, where, TRANSCRIPT_KINDS)
    if translations:
        job.futures["translations"] = executor.submit(translation_summaries, where, TRANSLATION_KINDS, reps, seed)
    _JOB = job
    logger.info(
        "transcripts and translations of %s scored ahead in a worker process (%s=1: not)", folder.path, WORKERS_ENV
    )
    return True


def stop_ahead() -> None:
    """End the worker, if one is running (its pending results are dropped)."""
    global _JOB
    job, _JOB = _JOB, None
    if job is not None:
        for future in job.futures.values():
            future.cancel()
        job.executor.shutdown(wait=False, kill_workers=True)


def pending(part: str) -> bool:
    """Whether the worker has a result for ``part`` (``transcripts`` or ``translations``) not taken yet."""
    return _JOB is not None and part in _JOB.futures


def settle(part: str) -> bool:
    """Wait for the worker's ``part`` (``transcripts`` or ``translations``) and add it to the caches it fills.

    Returns:
        Whether results were added (False: nothing pending, or the worker failed: logged, then computed here).
    """
    global _JOB
    job = _JOB
    if job is None or part not in job.futures:
        return False
    future = job.futures.pop(part)
    waited = time.perf_counter()
    try:
        found = future.result()
    except Exception as error:  # noqa: BLE001 - a failed worker costs time, never a result: computed here instead
        logger.warning(
            "the %s computed ahead failed (%s: %s): computed here instead", part, type(error).__name__, error
        )
        found = None
    if not job.futures:
        job.executor.shutdown(wait=False)
        _JOB = None
    if found is None:
        return False
    if part == "transcripts":
        from airbench_nb.scoring.wer import keep_utterances

        keep_utterances(found)
    else:
        from airbench_nb.scoring.translation import keep_summaries

        keep_summaries(found)
    now = time.perf_counter()
    logger.info(
        "%d %s computed ahead taken after %.1f s (waited %.1f s)",
        len(found),
        "utterances" if part == "transcripts" else "translation summaries",
        now - job.started,
        now - waited,
    )
    return True


# --- the worker's side ------------------------------------------------------------------------------------------


def _records(where: Sequence[str], kinds: Sequence[str]) -> tuple[list[Any], dict[str, Mapping[str, Any]]]:
    """The items of ``kinds`` and each model's latest responses to them, read as the analysis reads them."""
    from airbench_nb.run_records import RunRecords

    path, data, responses, verdicts = where
    folder = RunFolder(Path(path), data=data, responses=responses, verdicts=verdicts)
    records = RunRecords(folder)
    manifests = [folder.manifest(kind) for kind in kinds if folder.manifest(kind).is_file()]
    items = [item for manifest in manifests for item in records.manifest_items(manifest)]
    latest = {model: found.by_uid for model, found in records.latest_by_model(kinds).items()}
    return items, latest


def transcript_errors(where: Sequence[str], kinds: Sequence[str]) -> dict[Any, Any]:
    """Every model's utterance errors of the transcripts of ``kinds`` (the worker's task).

    Args:
        where: The run folder and its data, responses and verdicts folders (:class:`RunFolder`'s).
        kinds: The item kinds read.

    Returns:
        ``{utterance key: UtteranceErrors or SkippedUtterance}``
        (:func:`~airbench_nb.scoring.wer.many_utterance_errors`).
    """
    from airbench_nb.scoring.reference import WordErrorRate, utterance_key
    from airbench_nb.scoring.wer import many_utterance_errors

    items, latest = _records(where, kinds)
    metric = WordErrorRate()
    served = [i for i in items if metric.serves(i)]
    keys = [
        utterance_key(o)
        for by_uid in latest.values()
        for item in served
        for o in metric.outcomes(item, by_uid.get(item.uid), {}, "strict")
    ]
    del items, latest
    keys = list(dict.fromkeys(keys))
    return dict(zip(keys, many_utterance_errors(keys), strict=True))


def translation_summaries(where: Sequence[str], kinds: Sequence[str], reps: int, seed: int) -> dict[str, Any]:
    """Every model's translation summary over all translation items of ``kinds`` (the worker's task).

    Args:
        where: The run folder and its data, responses and verdicts folders (:class:`RunFolder`'s).
        kinds: The item kinds read.
        reps: Bootstrap replicates.
        seed: Their seed.

    Returns:
        ``{digest: TranslationSummary}`` (:func:`~airbench_nb.scoring.translation.score_translations`'s cache).
    """
    from airbench_nb.records import TranslationItem
    from airbench_nb.scoring.translation import (
        digest_outcomes,
        score_translations,
        shared_statistics,
        translation_outcome,
    )

    items, latest = _records(where, kinds)
    translations = [i for i in items if isinstance(i, TranslationItem)]
    found: dict[str, Any] = {}
    with shared_statistics(translations, list(latest.values())):
        for by_uid in latest.values():
            outcomes = [translation_outcome(i, by_uid.get(i.uid)) for i in translations]
            found[digest_outcomes(outcomes, reps, seed)] = score_translations(outcomes, reps=reps, seed=seed)
    return found
