"""The text-heavy scores of a large run computed ahead, in a worker process, while the analysis reads the run.

Two parts of a large run's analysis are pure text work that needs nothing but the run's files: the word alignments
of the transcripts (:func:`~airbench_nb.scoring.wer.utterance_errors`) and sacrebleu's statistics, corpus scores and
bootstraps of the translations (:func:`~airbench_nb.scoring.translation.score_translations`). On a machine with two
cores or more, :func:`start_ahead` hands them to one worker process (a fresh interpreter: ``python -c`` of
:func:`worker_main`, which sends each part back through a pipe as soon as it is done) the moment the analysis
starts: the worker reads the transcription, joint
and translation manifests and the models' responses to them, and computes every model's utterance errors and
translation summaries while this process reads the whole run and computes the sections that need neither.

Nothing computed ahead is taken on trust. Both results are keyed by their inputs, exactly as the caches they fill
are keyed: an utterance's errors by ``(reference, hypothesis, language, uid)``, a translation summary by the digest
of every outcome it scores, the replicates and the seed. When a cache first misses, it takes the worker's part
(:mod:`airbench_nb.scoring.pending`: waiting for it), adds it to what it keeps and looks again: what it asks for is
found only when its own inputs are the worker's, to the character; anything else (items left out as unusable, a
response appended since the worker read the file) is computed here, as it would be without a worker. A worker that
fails is logged and ignored. So every number is the same with or without it (``tests/test_scoring_ahead.py``).

It runs on a machine of two cores or more (the analysis itself runs on one) when the run has at least
:data:`AHEAD_MIN` transcripts and translations (counted as manifest lines); ``AIRBENCH_NB_WORKERS=1`` turns it off
(and ``2`` or more, or ``auto``, on). The worker is a second Python holding the texts it scores (about 0.3 GB at
150,000 items, its two parts one after the other in fresh interpreters); the sections that read its parts are
computed last (:attr:`~airbench_nb.analysis.registry.AnalysisSection.late`, :func:`waits_on`). A 150,000-item
analysis on 2 cores: 105 s and 1.64 GB without it, 57-59 s and 1.85 GB in all with it (docs/scaling.md). It ends when
its results are taken or :func:`stop_ahead` is called.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airbench_nb.run_folder import RunFolder
from airbench_nb.scoring import pending as offered
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
    """One worker process and the futures of its two parts."""

    process: subprocess.Popen[bytes] | None
    """The worker (None: parts offered without a process, as the tests offer them)."""
    futures: dict[str, Future[Any]] = field(default_factory=dict)
    """The pending parts by name (``transcripts``, ``translations``), resolved by :func:`_receive`."""
    started: float = field(default_factory=time.perf_counter)
    """When the job was started (``perf_counter``)."""
    spec: dict[str, Any] = field(default_factory=dict)
    """What the worker was asked (:func:`_spawn`'s spec): a later :func:`start_ahead` asking the same keeps it."""


_JOB: _Job | None = None


def _lines(path: Path) -> int:
    """Lines of a file (0 when it does not exist)."""
    try:
        with path.open("rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except OSError:
        return 0


def enabled() -> bool:
    """Whether work may be computed ahead here: on a machine of two cores or more, unless told otherwise.

    :data:`WORKERS_ENV` set decides (``1``: never; ``2`` or more, or ``auto`` on two cores or more: yes); unset, the
    worker runs where there are two cores or more (the analysis itself runs on one).
    """
    from airbench_nb.scoring import parallel

    if os.environ.get(WORKERS_ENV, "").strip():
        return parallel.workers() >= 2
    return parallel.cores() >= 2


def start_ahead(folder: RunFolder, *, reps: int, seed: int) -> bool:
    """Start the worker on a run folder's transcripts and translations, when the run is large enough.

    Args:
        folder: The run folder (its manifests and responses are read by the worker).
        reps: Bootstrap replicates of the translation scores (those the analysis will ask for).
        seed: Their seed.

    Returns:
        Whether a worker is at work for this run: one already started for the same run, replicates and seed is kept
        (the command line starts it before importing the analysis); any other is stopped first.
    """
    if not enabled():
        stop_ahead()
        return False
    transcripts = [folder.manifest(k) for k in TRANSCRIPT_KINDS if folder.manifest(k).is_file()]
    translations = [folder.manifest(k) for k in TRANSLATION_KINDS if folder.manifest(k).is_file()]
    where = _where(folder)
    parts = [part for part, paths in (("transcripts", transcripts), ("translations", translations)) if paths]
    spec = {"where": where, "parts": parts, "reps": reps, "seed": seed}
    if _JOB is not None and _JOB.spec == spec and all(offered.waiting(part) for part in parts):
        return True  # the same work, under way
    stop_ahead()
    if sum(_lines(p) for p in [*transcripts, *translations]) < AHEAD_MIN:
        return False
    job = _spawn(spec)
    _offer(job)
    logger.info(
        "transcripts and translations of %s scored ahead by a worker process (%s=1: not)", folder.path, WORKERS_ENV
    )
    return True


def _where(folder: RunFolder) -> list[str]:
    """The folders the worker reads a run from (its spec's ``where``)."""
    return [str(folder.path), str(folder.data_dir), str(folder.responses_dir), str(folder.verdicts_dir)]


def _offer(job: _Job) -> None:
    """Make ``job`` the running one and offer its parts to the caches (:mod:`airbench_nb.scoring.pending`)."""
    global _JOB
    _JOB = job
    for part in job.futures:
        offered.offer(part, functools.partial(_collect, job, part))


def _collect(job: _Job, part: str) -> Any:
    """Wait for the worker's ``part``; None when it failed (logged: the taker computes it itself)."""
    global _JOB
    future = job.futures.pop(part, None)
    if future is None:
        return None
    waited = time.perf_counter()
    try:
        found = future.result()
    except Exception as error:  # noqa: BLE001 - a failed worker costs time, never a result: computed here instead
        logger.warning(
            "the %s computed ahead failed (%s: %s): computed here instead", part, type(error).__name__, error
        )
        found = None
    if not job.futures and _JOB is job:
        _JOB = None  # the worker ends by itself once it has sent its last part
    if found is not None:
        now = time.perf_counter()
        logger.info(
            "%d %s computed ahead taken after %.1f s (waited %.1f s)",
            len(found),
            "utterances" if part == "transcripts" else "translation summaries",
            now - job.started,
            now - waited,
        )
    return found


def stop_ahead(folder: RunFolder | None = None) -> None:
    """End the worker, if one is running (what it has not handed over yet is dropped).

    Args:
        folder: Only a worker started for this run folder (None: any).
    """
    global _JOB
    if folder is not None and (_JOB is None or _JOB.spec["where"] != _where(folder)):
        return
    job, _JOB = _JOB, None
    if job is not None:
        offered.withdraw(tuple(job.futures))
        job.futures.clear()
        if job.process is not None and job.process.poll() is None:
            job.process.kill()  # its reader thread reaps it


def pending(part: str) -> bool:
    """Whether the worker's ``part`` (``transcripts`` or ``translations``) is offered and not taken yet."""
    return offered.waiting(part)


def waits_on(metric: Any) -> bool:
    """Whether ``metric``'s scores are still being computed ahead: its ``ahead_part`` is offered and not taken.

    :func:`~airbench_nb.scoring.tables.score_models` computes such a metric's sections after every other model's
    sections (:func:`~airbench_nb.scoring.run.score_run_steps`), so that the worker has the time to finish.
    """
    part = getattr(metric, "ahead_part", None)
    return part is not None and pending(part)


def settle(part: str) -> bool:
    """Take the worker's ``part`` now (waiting for it) and add it to the cache it fills.

    The caches take it themselves when they first miss (:func:`~airbench_nb.scoring.wer.many_utterance_errors`,
    :func:`~airbench_nb.scoring.translation.score_translations`).

    Returns:
        Whether results were added (False: nothing offered, or the worker failed: logged).
    """
    found = offered.take(part)
    if found is None:
        return False
    if part == "transcripts":
        from airbench_nb.scoring.wer import keep_utterances

        keep_utterances(found)
    else:
        from airbench_nb.scoring.translation import keep_summaries

        keep_summaries(found)
    return True


def _spawn(spec: dict[str, Any]) -> _Job:
    """Start :func:`worker_main` on ``spec`` in a fresh interpreter, its parts coming back through a pipe.

    A plain child process (no executor): nothing else is started beside it (an executor's resource trackers are two
    more interpreters, 0.05 GB), and it can be killed. A daemon thread reads the parts as they arrive, so that the
    worker never waits on a full pipe.
    """
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [*_WORKER_COMMAND, json.dumps({**spec, "fd": write_end})],
            pass_fds=(write_end,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env={**os.environ, WORKERS_ENV: "1"},
        )
    finally:
        os.close(write_end)
    job = _Job(process, {part: Future() for part in spec["parts"]}, spec=spec)
    threading.Thread(target=_receive, args=(job, read_end), name="airbench-ahead", daemon=True).start()
    return job


def _receive(job: _Job, read_end: int) -> None:
    """Resolve each part's future from the worker's pipe: a line ``<part> <ok|error> <bytes>``, then the pickle."""
    futures = dict(job.futures)
    with os.fdopen(read_end, "rb") as pipe:
        while True:
            header = pipe.readline().split()
            if len(header) != 3 or header[0].decode() not in futures:
                break
            part, status, size = header[0].decode(), header[1].decode(), int(header[2])
            payload = pipe.read(size)
            if len(payload) != size:
                break
            future = futures.pop(part)
            try:
                if status == "ok":
                    future.set_result(pickle.loads(payload))
                else:
                    future.set_exception(RuntimeError(pickle.loads(payload)))
            except Exception as error:  # noqa: BLE001 - an unreadable part is a failed part
                future.set_exception(error)
    code = job.process.wait() if job.process is not None else None
    for part, future in futures.items():
        future.set_exception(RuntimeError(f"the worker ended (exit {code}) before sending its {part}"))


_WORKER_COMMAND = [sys.executable, "-c", "from airbench_nb.scoring.ahead import worker_main; worker_main()"]
"""How the worker is started (its spec as the last argument)."""


def worker_main(argv: Sequence[str] | None = None) -> None:
    """The worker process: compute each part asked for and send it down the pipe as soon as it is done.

    After a part is sent, the process starts afresh for the next one (``exec`` of the same command, the pipe kept):
    what one part read is given back to the system, so that the worker's memory is that of its larger part, not the
    sum of both (0.42 GB -> about 0.3 GB at 150,000 items).

    Args:
        argv: ``[spec]``, the JSON of :func:`_spawn`: the run folder's paths (``where``), the ``parts``, the
            translations' ``reps`` and ``seed``, and the pipe's file descriptor (``fd``); None: ``sys.argv[1:]``.
    """
    spec = json.loads((sys.argv[1:] if argv is None else argv)[0])
    where = spec["where"]
    part, *rest = spec["parts"]
    pipe = os.fdopen(spec["fd"], "wb", closefd=False)
    try:
        if part == "transcripts":
            found: Any = transcript_errors(where, TRANSCRIPT_KINDS)
        else:
            found = translation_summaries(where, TRANSLATION_KINDS, spec["reps"], spec["seed"])
        status, payload = "ok", pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:  # noqa: BLE001 - sent back: the analysis computes that part itself
        status, payload = "error", pickle.dumps(f"{type(error).__name__}: {error}")
    pipe.write(f"{part} {status} {len(payload)}\n".encode() + payload)
    pipe.flush()
    if rest:  # the next part in a fresh interpreter (the same process and pipe)
        os.set_inheritable(spec["fd"], True)
        os.execv(sys.executable, [*_WORKER_COMMAND, json.dumps({**spec, "parts": rest})])
    os.close(spec["fd"])


# --- the worker's side ------------------------------------------------------------------------------------------


def _items(folder: RunFolder, kinds: Sequence[str]) -> list[Any]:
    """The items of ``kinds``' manifests, in the order the analysis reads them."""
    from airbench_nb.manifests import read_manifest

    return [item for kind in kinds if folder.manifest(kind).is_file() for item in read_manifest(folder.manifest(kind))]


def _each_model(folder: RunFolder, kinds: Sequence[str]) -> Iterator[Mapping[str, Any]]:
    """Each model's latest responses to ``kinds`` by uid, one model folder's file read at a time (then let go).

    A model spec whose responses are spread over several folders yields one partial set per folder: what is computed
    from it is never asked for (its keys or digest are not the analysis's), so it costs time, never a number.
    """
    from airbench_nb.manifests import read_records
    from airbench_nb.records import Response
    from airbench_nb.run_records import latest_responses

    for model_dir in folder.model_dirs():
        paths = [folder.responses_file(model_dir.name, kind) for kind in kinds]
        grouped: dict[str, list[Any]] = {}
        for path in paths:
            if path.is_file():
                for response in read_records(path, Response):
                    grouped.setdefault(response.model, []).append(response)
        for responses in grouped.values():
            yield latest_responses(responses)[0]


def _folder(where: Sequence[str]) -> RunFolder:
    path, data, responses, verdicts = where
    return RunFolder(Path(path), data=data, responses=responses, verdicts=verdicts)


def transcript_errors(where: Sequence[str], kinds: Sequence[str]) -> dict[Any, Any]:
    """Every model's utterance errors of the transcripts of ``kinds`` (the worker's task).

    Args:
        where: The run folder and its data, responses and verdicts folders (:class:`RunFolder`'s).
        kinds: The item kinds read.

    Returns:
        ``{utterance key: UtteranceErrors or SkippedUtterance}``
        (:func:`~airbench_nb.scoring.wer.utterance_errors`).
    """
    from airbench_nb.scoring.reference import WordErrorRate, forget_parts, utterance_key
    from airbench_nb.scoring.wer import utterance_errors

    folder = _folder(where)
    metric = WordErrorRate()
    served = [i for i in _items(folder, kinds) if metric.serves(i)]
    keys: dict[Any, None] = {}
    for by_uid in _each_model(folder, kinds):
        for item in served:
            for outcome in metric.outcomes(item, by_uid.get(item.uid), {}, "strict"):
                keys[utterance_key(outcome)] = None
        forget_parts()  # read_part keeps what it read (for the analysis): here each model's records are let go
    del served
    return {key: utterance_errors(*key) for key in keys}  # not kept here: the worker's memory goes to the next task


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
    from airbench_nb.manifests import read_manifest_as
    from airbench_nb.scoring.translation import (
        Bleu,
        digest_outcomes,
        outcome_of,
        score_translations,
        shared_rows,
        unanswered,
    )

    folder = _folder(where)
    # what the outcomes take from the items, kept instead of the items (0.1 GB at 49,000 items), item by item
    metric = Bleu()  # the translation metrics' items
    paths = [folder.manifest(kind) for kind in kinds if folder.manifest(kind).is_file()]
    items = [p for path in paths for p in read_manifest_as(path, lambda i: unanswered(i) if metric.serves(i) else None)]
    outcomes = [[outcome_of(i, by_uid.get(i.uid)) for i in items] for by_uid in _each_model(folder, kinds)]
    del items
    found: dict[str, Any] = {}
    if not outcomes:
        return found
    rows = [(o[0].target_language, o[0].references, [m.hypothesis for m in o]) for o in zip(*outcomes, strict=True)]
    with shared_rows(lambda: rows):
        for mine in outcomes:
            found[digest_outcomes(mine, reps, seed)] = score_translations(mine, reps=reps, seed=seed)
    return found
