"""The resumable judge loop: which verdicts are pending, judging them a chunk at a time, the summary.

The judges themselves are :class:`~airbench_nb.judge.base.Judge` objects built from spec strings by the registry
(:func:`~airbench_nb.judge.load_judge`):

- ``rule`` — Foundation only: :func:`~airbench_nb.judge.extract.extract_choice`; it abstains when unsure
  (:mod:`airbench_nb.judge.rule`).
- ``proxy`` — Chat only, offline: see :mod:`airbench_nb.judge.proxy` (labelled a proxy everywhere).
- ``openai:<model>[@<base_url>]`` — an LLM judge through :class:`~airbench_nb.api_client.APIClient` (cached,
  retried, concurrent, costed; Batch API on request). Foundation: the rule first, the LLM for the rule's
  abstentions (``foundation_mode="abstentions"``, default) or for every item (``"all"``). Chat: AIR-Bench's
  prompt in both orders (reference first, then hypothesis first), at temperature 0 (:mod:`airbench_nb.judge.llm`).
- ``hf:<path>`` — a local transformers chat model with the same prompts (an open judge on a GPU).

The judge prompts live in :mod:`airbench_nb.prompts`; their builders are importable from here too.

Verdicts are appended to a JSONL file and flushed per chunk; the output is checked, locked and repaired as the
model runs' are (:mod:`airbench_nb.runner`). Responses are read latest-wins per (uid, model): a retried answer
supersedes its error. Every verdict records the :meth:`~airbench_nb.records.Response.content_hash` of the response
it judged. A rerun skips a (uid, model, judge, order, turn, repeat) whose latest verdict judged the model's latest
response and did not fail; it judges again (appending) when the response changed since (a re-inferred answer: the old
verdict is stale), when the judge call failed (failures heal on rerun), or when a spoken answer's file was missing,
unreadable or changed when it was judged (:data:`~airbench_nb.judge.base.AUDIO_GONE`). Before a judge's verdict is
written, the injection screen (:func:`~airbench_nb.judge.screen.screen_answer`) is run over the answer it judged and
recorded on it (``Verdict.screen``), whatever the judge; the summary counts the flagged verdicts. Abstentions and
unparseable replies are outcomes, not failures: they are kept. A response that is an error gets a verdict with
``parse_error`` saying so, without a judge call. A fatal API error stops the loop at once (see
:func:`~airbench_nb.runner.is_fatal_api_error`).

Items about several clips (the kit's ``multi-clip`` Foundation tasks) are judged as any Foundation item: the judges
read the answer against the options ("the first clip", "the second clip") and never the audio. Multi-turn Chat
items (``ChatItem.turns``) are judged turn by turn: one verdict per (turn, order), with ``Verdict.turn`` set (see
:func:`chat_turn_question` for what the judge sees of earlier turns). The answer to turn ``k`` is
``Response.turns[k]``; a turn the model did not answer (a later turn failed, and ``Response.error`` names it) gets a
``no response`` verdict without a judge call, and the turns before it are judged. A one-turn item is judged exactly
as before: two verdicts with ``turn`` None.

Repeats (``repeats=R``, ``airbench-nb judge --judge-repeats R``): each (uid, model, order, turn) is judged ``R`` times,
the first judgement with ``Verdict.repeat`` None (as always: files and caches written before repeats existed keep
their meaning), the others with ``repeat`` 1 .. R-1; each repeat is pending on its own (a rerun asks only the missing
ones, a rerun with a larger ``R`` only the new ones) and an LLM judge's repeat is cached under its own key
(``ChatRequest.repeat``). A deterministic judge (:attr:`~airbench_nb.judge.base.BaseJudge.deterministic`: the rule,
the proxy, ``hf:``) is judged once whatever ``R``: asking again would copy its verdict (the summary says so, and the
judge-panel analysis gives it repeat variance 0). Scores read the first judgement only; the repeats feed
:mod:`airbench_nb.analysis.judge_panel`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from airbench_nb.judge.base import AUDIO_GONE, CHAT_ORDERS, JUDGE_CALL_FAILED, Judge, JudgeSpecError, Order, Task
from airbench_nb.judge.llm import JUDGE_MAX_TOKENS, parse_judge_letter
from airbench_nb.judge.registry import judge_applies, judge_class, load_judge, parse_judge_spec
from airbench_nb.judge.rule import rule_verdict
from airbench_nb.judge.screen import screen_answer
from airbench_nb.manifests import AnyItem
from airbench_nb.prompts import (
    CHAT_EARLIER_QUESTIONS_TEMPLATE,
    chat_judge_messages,
    chat_turn_question,
    foundation_judge_messages,
)
from airbench_nb.records import Response, Verdict
from airbench_nb.run_folder import KINDS, RunFolder
from airbench_nb.runner import (
    JsonlAppender,
    check_output_file,
    model_slug,
    output_lock,
    read_existing,
    repair_jsonl,
)

logger = logging.getLogger(__name__)

__all__ = [  # the names judges, prompts and tests import from here (they live in the modules named above)
    "CHAT_EARLIER_QUESTIONS_TEMPLATE",
    "CHAT_ORDERS",
    "JUDGE_CALL_FAILED",
    "JUDGE_MAX_TOKENS",
    "JudgeSpecError",
    "JudgeSummaries",
    "JudgeSummary",
    "Order",
    "Task",
    "chat_judge_messages",
    "chat_turn_question",
    "foundation_judge_messages",
    "judge_responses",
    "judge_run_folder",
    "judge_slug",
    "judges_failing_every_call",
    "parse_judge_letter",
    "parse_judge_spec",
    "rule_verdict",
]


@dataclass
class JudgeSummary:
    """What one judge run did."""

    judge: str
    """Judge spec."""
    tasks: int = 0
    """Verdicts needed (responses × orders, × turns for multi-turn Chat items, × repeats) for the given items."""
    skipped_existing: int = 0
    """Verdicts already in the output that judged the latest response and did not fail (resumed)."""
    written: int = 0
    """Verdicts written in this run."""
    asked: int = 0
    """Of ``written``: verdicts that needed the judge itself (an LLM call, the proxy), not the rule alone."""
    errors: int = 0
    """Of ``asked``: verdicts whose judge call failed (after the client's retries): what makes ``judge`` exit 1."""
    parse_failures: int = 0
    """Verdicts without a reading (abstentions, unparseable replies, failed calls, error responses)."""
    failure_kinds: dict[str, int] = field(default_factory=dict)
    """Parse failures by kind."""
    retried: int = 0
    """Verdicts judged again because the latest one's judge call had failed (a failure healing)."""
    stale: int = 0
    """Verdicts judged again because the response changed since (re-inferred): the old verdict no longer counts."""
    duplicates: int = 0
    """Responses given that a later response of the same (uid, model) superseded (latest wins)."""
    duplicate_verdicts: int = 0
    """Verdict records already in the output superseded by a later one of the same (uid, model, judge, order,
    turn, repeat)."""
    flagged: int = 0
    """Of ``written``: verdicts whose answer the injection screen flagged (:mod:`airbench_nb.judge.screen`)."""
    repaired_lines: int = 0
    """Lines taken out of the output before resuming (see :func:`~airbench_nb.runner.repair_jsonl`)."""
    usage: dict[str, Any] = field(default_factory=dict)
    """API usage (requests sent, cache hits, retries, tokens, cost) for LLM judges."""
    seconds: float = 0.0
    """Wall-clock time."""
    dry_run: str | None = None
    """The estimate printed instead of judging, for dry runs."""
    repeats: int = 1
    """Judgements asked per (response, order, turn): the ``repeats`` given, or 1 for a deterministic judge."""
    deterministic: bool = False
    """Whether the judge is deterministic (:attr:`~airbench_nb.judge.base.BaseJudge.deterministic`): repeats were not
    asked of it."""

    @property
    def failed_every_item(self) -> bool:
        """True when the judge was asked and every call failed."""
        return self.errors > 0 and self.errors == self.asked

    def failure_text(self) -> str:
        """One line on the judge calls that failed (empty when none did)."""
        if not self.errors:
            return ""
        return f"judge {self.judge}: {self.errors} of {self.asked} judge calls failed"

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for tables."""
        return {
            k: getattr(self, k)
            for k in (
                "judge",
                "tasks",
                "skipped_existing",
                "written",
                "asked",
                "errors",
                "parse_failures",
                "failure_kinds",
                "retried",
                "stale",
                "duplicates",
                "duplicate_verdicts",
                "flagged",
                "repaired_lines",
                "usage",
                "seconds",
                "dry_run",
                "repeats",
                "deterministic",
            )
        }


def judge_responses(
    judge: str | Judge,
    items: Sequence[AnyItem],
    responses: Sequence[Response],
    out: str | Path,
    *,
    concurrency: int = 8,
    cache: str | Path | None = None,
    prices: Any = None,
    dry_run: bool = False,
    batch_api: bool = False,
    foundation_mode: Literal["abstentions", "all"] = "abstentions",
    chunk_size: int = 256,
    timeout_s: float = 60.0,
    api_key_env: str | None = None,
    batch_poll_s: float = 30.0,
    progress: bool = True,
    run_folder: RunFolder | None = None,
    repeats: int = 1,
) -> JudgeSummary:
    """Judge responses into ``out`` (resumable): one verdict per Foundation response, two per Chat turn.

    Items of other kinds (a spoken answer judged by ``asr:...``) get one verdict per response (order ``single``).

    Args:
        judge: Judge spec (built with :func:`~airbench_nb.judge.load_judge` and the options below once the pending
            verdicts are known), or a :class:`~airbench_nb.judge.base.Judge` already built (the options below that
            configure a judge are then its own business).
        items: The manifest's items (responses to other uids, and items of kinds the judge does not apply to, are
            ignored).
        responses: Responses to judge (any number of models).
        out: Verdicts JSONL.
        concurrency: Requests in flight (LLM judges).
        cache: SQLite cache of judge calls (LLM judges); a rerun with it makes no request.
        prices: Price table for costs (see :class:`~airbench_nb.api_client.PriceTable`).
        dry_run: Print and return the number of calls, estimated tokens and cost; judge nothing.
        batch_api: Send the LLM calls through the OpenAI Batch API (half price, asynchronous).
        foundation_mode: ``abstentions`` (the rule first, the LLM when it abstains) or ``all``.
        chunk_size: Verdicts written per flush.
        timeout_s: Per-request timeout.
        api_key_env: Environment variable holding the judge's key, sent to its endpoint whatever it is; None for
            the default rules (``OPENAI_API_KEY`` to OpenAI or ``OPENAI_BASE_URL`` unless local; no key elsewhere).
        batch_poll_s: Seconds between Batch API status checks.
        progress: Show a progress bar.
        run_folder: The run folder the responses' spoken answers are in; needed by judges that listen
            (``asr:...``, :attr:`~airbench_nb.judge.base.BaseJudge.needs_audio`).
        repeats: Judgements per (response, order, turn) (see the module docstring); a deterministic judge is judged
            once whatever it says.

    Returns:
        A :class:`JudgeSummary`.

    Raises:
        JudgeSpecError: For a spec that names no judge.
        ValueError: For a judge that listens and no ``run_folder``, or ``repeats`` below 1 (nothing is written).
        OutputError: When ``out`` is not a verdicts file or another process is writing it; nothing is written.
        ManifestError: When a line of ``out`` is JSON but not a valid verdict (naming file, line and field).
        Exception: A fatal API error (see :func:`~airbench_nb.runner.is_fatal_api_error`), after keeping what was
            judged.
    """
    spec = parse_judge_spec(judge) if isinstance(judge, str) else judge.spec
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a whole number >= 1 (judgements per task), got {repeats!r}")
    if run_folder is None and getattr(judge_class(spec) if isinstance(judge, str) else judge, "needs_audio", False):
        raise ValueError(f"judge {spec} listens to spoken answers: give run_folder, the run folder they are in")
    out = Path(out)
    check_output_file(out, Verdict)
    with contextlib.nullcontext() if dry_run else output_lock(out):
        repaired = 0 if dry_run else repair_jsonl(out)
        existing = _read_verdicts(out, dry_run)
        t0 = time.perf_counter()
        kinds = judge_class(spec).kinds if isinstance(judge, str) else judge.kinds
        deterministic = bool(getattr(judge_class(spec) if isinstance(judge, str) else judge, "deterministic", False))
        if deterministic and repeats > 1:
            logger.info(
                "judge %s is deterministic: judged once per task, not %d times (repeats would copy it)", spec, repeats
            )
        rounds = 1 if deterministic else repeats
        summary, tasks = _pending(spec, kinds, items, responses, existing, run_folder, rounds)
        summary.repeats, summary.deterministic = rounds, deterministic
        summary.repaired_lines = repaired
        if isinstance(judge, str):
            judge = load_judge(
                spec,
                concurrency=concurrency,
                cache=cache,
                prices=prices,
                batch_api=batch_api,
                foundation_mode=foundation_mode,
                timeout_s=timeout_s,
                api_key_env=api_key_env,
                batch_poll_s=batch_poll_s,
            )
        if dry_run:
            summary.dry_run = judge.estimate([t for t in tasks if _decide(judge, t) is None])
            summary.seconds = round(time.perf_counter() - t0, 3)
            return summary
        return _judge(judge, tasks, out, summary, t0, chunk_size=chunk_size, progress=progress)


def _read_verdicts(out: Path, dry_run: bool) -> list[Verdict]:
    """The verdicts already in ``out``; a dry run writes nothing, so it reads around lines a repair would move."""
    if not dry_run:
        return read_existing(out, Verdict)
    from airbench_nb.manifests import read_records

    return read_records(out, Verdict, strict=False) if out.is_file() else []


def _pending(
    spec: str,
    kinds: frozenset[str],
    items: Sequence[AnyItem],
    responses: Sequence[Response],
    existing: Sequence[Verdict],
    run_folder: RunFolder | None = None,
    repeats: int = 1,
) -> tuple[JudgeSummary, list[Task]]:
    """The summary so far (tasks, skipped, stale, retried, duplicates) and the tasks to judge, in response order.

    Args:
        spec: The judge's spec (the verdicts of other judges in ``existing`` are not its own).
        kinds: The item kinds the judge applies to (items of other kinds are not judged).
        items: The items.
        responses: The responses (latest wins per (uid, model)).
        existing: The verdicts already written.
        run_folder: Where spoken answers are found (set on every task).
        repeats: Judgements per (response, order, turn): repeat None, then 1 .. ``repeats`` - 1.
    """
    by_uid = {i.uid: i for i in items}
    latest_verdicts = {(v.uid, v.model, v.judge, v.order, v.turn, v.repeat): v for v in existing}
    latest_responses = {(r.uid, r.model): r for r in responses}
    summary = JudgeSummary(
        judge=spec,
        duplicates=len(responses) - len(latest_responses),
        duplicate_verdicts=len(existing) - len(latest_verdicts),
    )
    tasks: list[Task] = []
    for response in latest_responses.values():
        item = by_uid.get(response.uid)
        if item is None or item.kind not in kinds:
            continue
        orders = cast("tuple[Order, ...]", item.JUDGE_ORDERS)  # the kind declares them among Verdict.order's values
        judged = response.content_hash()
        for turn in item.judged_turns:
            for order in orders:
                for repeat in [None, *range(1, repeats)]:
                    summary.tasks += 1
                    previous = latest_verdicts.get((item.uid, response.model, spec, order, turn, repeat))
                    if previous is None:
                        pass
                    elif previous.response_hash is not None and previous.response_hash != judged:
                        summary.stale += 1
                    elif _call_failed(previous) or (previous.parse_error or "").startswith(AUDIO_GONE):
                        summary.retried += 1
                    else:
                        summary.skipped_existing += 1
                        continue
                    tasks.append(Task(item, response, order, turn=turn, repeat=repeat, run_folder=run_folder))
    if summary.stale or summary.retried:
        logger.info(
            "judge %s: %d verdict(s) of a changed response judged again, %d failed call(s) retried",
            spec,
            summary.stale,
            summary.retried,
        )
    return summary, tasks


def _call_failed(verdict: Verdict) -> bool:
    """Whether the judge call of the verdict, or of its fenced prompt, failed (it is retried on rerun)."""
    fenced = verdict.fenced.parse_error if verdict.fenced is not None else None
    return any((error or "").startswith(JUDGE_CALL_FAILED) for error in (verdict.parse_error, fenced))


def _decide(judge: Judge, task: Task) -> Verdict | None:
    """A verdict without asking the judge (no answer to judge, or the judge's local step), else None."""
    if task.answer is None:
        return task.verdict(judge.spec, parse_error=task.response.turn_failure(task.turn))
    return judge.decide(task)


def _judge(
    judge: Judge, tasks: Sequence[Task], out: Path, summary: JudgeSummary, t0: float, *, chunk_size: int, progress: bool
) -> JudgeSummary:
    """Judge ``tasks`` a chunk at a time into ``out`` (held locked by the caller), counting into ``summary``."""
    from tqdm.auto import tqdm

    kinds: Counter[str] = Counter()
    try:
        with (
            JsonlAppender(out) as sink,
            tqdm(total=len(tasks), desc=f"judge {judge.spec}", disable=not progress) as bar,
        ):
            for start in range(0, len(tasks), chunk_size):
                chunk = tasks[start : start + chunk_size]
                verdicts: dict[int, Verdict] = {}
                ask: list[int] = []
                for index, task in enumerate(chunk):
                    local = _decide(judge, task)
                    if local is not None:
                        verdicts[index] = local
                    else:
                        ask.append(index)
                if ask:
                    batch_file = RunFolder.batch_requests_file(out, start // chunk_size)
                    # A fatal API error (rejected key, server refusing connections) propagates from here: the
                    # verdicts of earlier chunks are on disk, nothing more is sent.
                    asked = judge.ask([chunk[i] for i in ask], batch_file=batch_file)
                    for index, verdict in zip(ask, asked, strict=True):
                        verdicts[index] = verdict
                ordered = []
                for index in range(len(chunk)):
                    verdict = verdicts[index]
                    task = chunk[index]
                    judged = task.response.content_hash()
                    if verdict.response_hash != judged:  # judges that build their own verdicts (the proxy)
                        verdict = verdict.model_copy(update={"response_hash": judged})
                    if verdict.repeat != task.repeat:  # verdicts built without the task (the rule's, first)
                        verdict = verdict.model_copy(update={"repeat": task.repeat})
                    if task.answer is not None:  # every judge's verdict records the screen (it changes no score)
                        verdict = verdict.model_copy(update={"screen": screen_answer(task.answer)})
                    ordered.append(verdict)
                sink.write(ordered)
                summary.asked += len(ask)
                for verdict in ordered:
                    summary.written += 1
                    summary.flagged += bool(verdict.screen is not None and verdict.screen.flagged)
                    if _call_failed(verdict) and not (verdict.parse_error or "").startswith(JUDGE_CALL_FAILED):
                        summary.errors += 1  # the fenced prompt's call failed: retried on rerun
                    if verdict.parse_error is not None:
                        summary.parse_failures += 1
                        kinds[verdict.parse_error.split(":", 1)[0]] += 1
                        if verdict.parse_error.startswith(JUDGE_CALL_FAILED):
                            summary.errors += 1
                bar.update(len(chunk))
    finally:
        summary.failure_kinds = dict(kinds)
        summary.usage = judge.usage()
        summary.seconds = round(time.perf_counter() - t0, 3)
    if summary.errors:
        logger.warning("%s", summary.failure_text())
    if summary.flagged:
        logger.warning(
            "judge %s: %d of %d verdicts judged an answer the injection screen flagged (it addresses the judge or "
            "demands a score; see Verdict.screen)",
            judge.spec,
            summary.flagged,
            summary.written,
        )
    return summary


def judges_failing_every_call(rows: Iterable[JudgeSummary | Mapping[str, Any]]) -> list[str]:
    """The judges that were asked and failed on every call, over all the (model, kind) runs of a folder.

    Notebook 04 raises with these, so that ``airbench-nb run`` marks the run ``failed`` rather than ``ok``.

    Args:
        rows: :class:`JudgeSummary` objects or their dict forms (:func:`judge_run_folder` rows).

    Returns:
        One line per such judge: ``"<spec>: <n> of <n> judge calls failed"``.
    """
    asked: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for summary in rows:
        row = summary.as_dict() if isinstance(summary, JudgeSummary) else summary
        asked[row["judge"]] += row.get("asked", 0)
        errors[row["judge"]] += row.get("errors", 0)
    return [f"{j}: {errors[j]} of {asked[j]} judge calls failed" for j in asked if errors[j] and errors[j] == asked[j]]


def judge_slug(spec: str) -> str:
    """A file-name-safe form of a judge spec (``openai:gpt-4o@http://...`` -> ``openai_gpt-4o_http_...``)."""
    return model_slug(spec)


@dataclass
class JudgeSummaries:
    """The summaries of a folder's judge runs: one per (model folder, kind, judge), with their tables."""

    runs: list[tuple[str, str, JudgeSummary, Path]] = field(default_factory=list)
    """``(model folder, kind, summary, verdicts file)`` per judge run, in the order they ran."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Judges not run, each with why: an ``asr:`` judge on a bundled real model whose weights are not fetched
    (:func:`~airbench_nb.weights.skipped_bundled`); the line names the judge that stood in for it, if any
    (:func:`~airbench_nb.weights.judge_fallbacks`: Whisper tiny.en for Whisper base)."""

    def skipped_texts(self) -> list[str]:
        """One line per skipped judge, saying how to get it."""
        return list(self.skipped.values())

    def __iter__(self) -> Iterator[JudgeSummary]:
        return (summary for _, _, summary, _ in self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    def rows(self) -> list[dict[str, Any]]:
        """One row per judge run: ``model_dir``, ``kind``, :meth:`JudgeSummary.as_dict`, ``verdicts`` (path)."""
        return [
            {"model_dir": model_dir, "kind": kind, **summary.as_dict(), "verdicts": str(out)}
            for model_dir, kind, summary, out in self.runs
        ]

    def frame(self) -> Any:
        """:meth:`rows` as a ``pandas.DataFrame``."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def usage_frame(self) -> Any:
        """Tokens, calls and cost per judge run (LLM judges; empty columns for local ones)."""
        import pandas as pd

        return pd.DataFrame(
            [
                {"judge": summary.judge, "model": model_dir, "kind": kind, **(summary.usage or {})}
                for model_dir, kind, summary, _ in self.runs
            ]
        )

    def failures_frame(self) -> Any:
        """Failed verdicts by kind of failure, per judge run that had any."""
        import pandas as pd

        return pd.DataFrame(
            [
                {"judge": summary.judge, "model": model_dir, "kind": kind, **summary.failure_kinds}
                for model_dir, kind, summary, _ in self.runs
                if summary.failure_kinds
            ]
        ).fillna(0)

    def failing_every_call(self) -> list[str]:
        """The judges that were asked and failed on every call (see :func:`judges_failing_every_call`)."""
        return judges_failing_every_call(self)


def judge_run_folder(
    folder: RunFolder,
    judges: Sequence[str],
    kinds: Sequence[str] = KINDS,
    **options: Any,
) -> JudgeSummaries:
    """Judge every model's responses in a run folder with each judge (resumable).

    Verdicts go to ``folder.verdicts_file(model, kind, judge)`` (one file per judge, so judges never shadow each
    other when resuming). Judges that do not apply to a kind (``rule`` on Chat, ``proxy`` on Foundation: see
    :attr:`~airbench_nb.judge.base.Judge.kinds`) are skipped. The twin of
    :func:`~airbench_nb.runner.infer_run_folder`.

    Args:
        folder: The run folder (its manifests and responses; verdicts are written into it).
        judges: Judge specs.
        kinds: Manifest kinds to judge (those present; none present is an error).
        **options: Passed to :func:`judge_responses` (``concurrency``, ``cache``, ``dry_run``, ...).

    Returns:
        A :class:`JudgeSummaries`, one summary per (model, kind, judge); an ``asr:`` judge on a bundled model whose
        weights are not fetched is skipped (:attr:`JudgeSummaries.skipped`), never an error.

    Raises:
        JudgeSpecError: For a judge spec that names no judge (at its first use, as before).
        FileNotFoundError: When the data folder holds none of the manifests.
    """
    from airbench_nb.manifests import read_manifest, read_records
    from airbench_nb.weights import judge_fallbacks, skipped_bundled

    skipped = skipped_bundled(judges)
    standing_in = judge_fallbacks(judges)
    for spec, stand_in in standing_in.items():
        skipped[spec] += f"; {stand_in} transcribes instead"
    summaries = JudgeSummaries(skipped=skipped)
    for line in summaries.skipped_texts():
        logger.warning("%s", line)
    chosen = [standing_in.get(j, j) for j in judges if j not in skipped or j in standing_in]
    judges = list(dict.fromkeys(chosen))
    items_by_kind = {kind: read_manifest(manifest) for kind, manifest in folder.manifests(kinds).items()}
    for model_dir in folder.model_dirs():
        for kind, items in items_by_kind.items():
            responses_path = folder.responses_file(model_dir.name, kind)
            if not responses_path.is_file():
                continue
            responses = read_records(responses_path, Response)
            for spec in judges:
                if not judge_applies(spec, kind):
                    continue
                out = folder.verdicts_file(model_dir.name, kind, spec)
                summary = judge_responses(spec, items, responses, out, progress=False, run_folder=folder, **options)
                summaries.runs.append((model_dir.name, kind, summary, out))
    return summaries
