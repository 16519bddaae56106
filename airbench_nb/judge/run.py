"""Judging responses into verdicts: the judges and the resumable judge loop.

Judge specs:

- ``rule`` — Foundation only: :func:`~airbench_nb.judge.extract.extract_choice`; it abstains when unsure.
- ``proxy`` — Chat only, offline: see :mod:`airbench_nb.judge.proxy` (labelled a proxy everywhere).
- ``openai:<model>[@<base_url>]`` — an LLM judge through :class:`~airbench_nb.api_client.APIClient` (cached,
  retried, concurrent, costed; Batch API on request). Foundation: the rule first, the LLM for the rule's
  abstentions (``foundation_mode="abstentions"``, default) or for every item (``"all"``). Chat: AIR-Bench's
  prompt in both orders (reference first, then hypothesis first), at temperature 0.
- ``hf:<path>`` — a local transformers chat model with the same prompts (an open judge on a GPU).

Verdicts are appended to a JSONL file and flushed per chunk; the output is checked, locked and repaired as the
model runs' are (:mod:`airbench_nb.runner`). Responses are read latest-wins per (uid, model): a retried answer
supersedes its error. Every verdict records the :meth:`~airbench_nb.records.Response.content_hash` of the response
it judged. A rerun skips a (uid, model, judge, order, turn) whose latest verdict judged the model's latest response
and did not fail; it judges again (appending) when the response changed since (a re-inferred answer: the old verdict
is stale) or when the judge call failed (failures heal on rerun). Abstentions and unparseable replies are
outcomes, not failures: they are kept. A response that is an error gets a verdict with ``parse_error`` saying so,
without a judge call. A fatal API error stops the loop at once (see :func:`~airbench_nb.runner.is_fatal_api_error`).

Items about several clips (the kit's ``multi-clip`` Foundation tasks) are judged as any Foundation item: the judges
read the answer against the options ("the first clip", "the second clip") and never the audio. Multi-turn Chat
items (``ChatItem.turns``) are judged turn by turn: one verdict per (turn, order), with ``Verdict.turn`` set (see
:func:`chat_turn_question` for what the judge sees of earlier turns). The answer to turn ``k`` is
``Response.turns[k]``; a turn the model did not answer (a later turn failed, and ``Response.error`` names it) gets a
``no response`` verdict without a judge call, and the turns before it are judged. A one-turn item is judged exactly
as before: two verdicts with ``turn`` None.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from airbench_nb.judge.extract import extract_choice
from airbench_nb.manifests import AnyItem
from airbench_nb.prompts import (
    CHAT_JUDGE_TEMPLATE,
    FOUNDATION_JUDGE_PATTERN,
    FOUNDATION_JUDGE_TEMPLATE,
    prompt_hash,
)
from airbench_nb.records import ChatItem, FoundationItem, Response, Verdict
from airbench_nb.runner import (
    JsonlAppender,
    check_output_file,
    model_slug,
    output_lock,
    read_existing,
    repair_jsonl,
)

logger = logging.getLogger(__name__)

Order = Literal["single", "reference_first", "hypothesis_first"]
CHAT_ORDERS: tuple[Order, Order] = ("reference_first", "hypothesis_first")
"""The two orders every Chat response is judged in."""
JUDGE_MAX_TOKENS = 64
"""Reply length bound of LLM judges (a letter, or two scores)."""
JUDGE_CALL_FAILED = "judge call failed"
"""How the ``parse_error`` of a verdict whose judge call failed begins: such verdicts are retried on rerun."""


class JudgeSpecError(ValueError):
    """A judge spec that names no known judge."""


@dataclass
class Task:
    """One judging job: an item, the response, the order (Chat), and the judge prompt when an LLM is asked."""

    item: AnyItem
    """The item."""
    response: Response
    """The response judged."""
    order: Order = "single"
    """Chat order."""
    messages: list[dict[str, Any]] | None = None
    """Judge messages (LLM judges)."""
    turn: int | None = None
    """Multi-turn Chat: index of the turn judged (0 for the first); None for one-turn items and Foundation."""

    @property
    def question(self) -> str:
        """The question of the turn judged (the item's question for a one-turn item)."""
        if self.turn is None or not isinstance(self.item, ChatItem):
            return self.item.question
        return self.item.conversation[self.turn][0]

    @property
    def reference(self) -> str:
        """The reference answer of the turn judged (Chat)."""
        assert isinstance(self.item, ChatItem)
        return self.item.reference if self.turn is None else self.item.conversation[self.turn][1]

    @property
    def answer(self) -> str | None:
        """The model's answer to the turn judged; None when it gave none (an error, or a turn after a failed one)."""
        return turn_answer(self.response, self.turn)


def turn_answer(response: Response, turn: int | None) -> str | None:
    """The answer of ``response`` to ``turn`` (None: the one-turn answer), or None when there is none.

    A one-turn response (or turn 0 of a response without ``turns``) is ``text``, None when the response is an error.
    Turn ``k`` of a multi-turn response is ``turns[k]``, which is kept even when a later turn failed.
    """
    if turn is None or (turn == 0 and not response.turns):
        return None if response.error is not None else response.text
    if turn < len(response.turns):
        return response.turns[turn]
    return None


def turn_failure(response: Response, turn: int | None) -> str:
    """Why ``response`` has no answer to ``turn`` (the ``no response`` verdict's reason)."""
    if turn is None:
        return f"no response: {response.error}"
    why = response.error or "the response holds no answer to it"
    return f"no response: turn {turn + 1} not answered ({why})"


def _options(item: FoundationItem) -> str:
    return "\n".join(f"{letter}. {choice}" for letter, choice in zip("ABCD", item.choices, strict=False))


def foundation_judge_messages(item: FoundationItem, answer: str) -> list[dict[str, Any]]:
    """Messages asking an LLM which option ``answer`` chose."""
    letters_or = " or ".join("ABCD"[: len(item.choices)])
    text = FOUNDATION_JUDGE_TEMPLATE.format(
        question=item.question, options=_options(item), answer=answer, letters_or=letters_or
    )
    return [{"role": "user", "content": text}]


CHAT_EARLIER_QUESTIONS_TEMPLATE = (
    "Earlier questions of this conversation (already answered; rate only the answers to the follow-up):\n"
    "{earlier}\nFollow-up question: {question}"
)
"""What the ``[Question]`` slot of AIR-Bench's Chat judge prompt holds for turn 2 and later of a multi-turn item:
the earlier questions, numbered, then the turn's question (see :func:`chat_turn_question`)."""


def chat_turn_question(item: ChatItem, turn: int | None) -> str:
    """The text put in the ``[Question]`` slot of the Chat judge prompt for one turn.

    Turn 0 (and a one-turn item) is the question itself, so the prompt is byte for byte AIR-Bench's. A later turn
    carries the earlier *questions* before its own (:data:`CHAT_EARLIER_QUESTIONS_TEMPLATE`), and no earlier answer:

    - the questions, because a follow-up often means nothing alone ("And the second one?", "Is it fast?"); both
      assistants were asked them, so they do not favour either;
    - not the model's earlier answers, because each is judged in its own turn: shown again, an earlier mistake
      would weigh on the follow-up twice (or a wrong premise the follow-up repeats would look consistent), and the
      judge would see a history the reference answer never had;
    - not the earlier reference answers, which would hand the judge an answer key it has in the audio description
      already, and make the follow-up's rating depend on how the reference phrased earlier turns.

    The judge still rates two answers to one question with AIR-Bench's wording, so a turn's scores read like a
    one-turn item's.
    """
    if turn is None or turn == 0:
        return item.question
    conversation = item.conversation
    earlier = "\n".join(f"{k + 1}. {question}" for k, (question, _) in enumerate(conversation[:turn]))
    return CHAT_EARLIER_QUESTIONS_TEMPLATE.format(earlier=earlier, question=conversation[turn][0])


def chat_judge_messages(item: ChatItem, answer: str, order: Order, turn: int | None = None) -> list[dict[str, Any]]:
    """Messages of AIR-Bench's Chat judge with the reference first or the hypothesis first.

    Args:
        item: The Chat item.
        answer: The model's answer (to ``turn``).
        order: ``reference_first`` or ``hypothesis_first``.
        turn: Multi-turn items: the turn judged (its question and reference; see :func:`chat_turn_question`);
            None for a one-turn item.
    """
    reference = item.reference if turn is None else item.conversation[turn][1]
    first, second = (reference, answer) if order == "reference_first" else (answer, reference)
    text = CHAT_JUDGE_TEMPLATE.format(
        meta_info=item.meta_info, question=chat_turn_question(item, turn), answer_1=first, answer_2=second
    )
    return [{"role": "user", "content": text}]


def parse_judge_letter(reply: str | None, n_choices: int) -> tuple[int | None, str | None]:
    """Read a Foundation judge's reply: ``(choice, None)``, ``(None, None)`` for 'none', or ``(None, reason)``."""
    match = re.match(FOUNDATION_JUDGE_PATTERN, (reply or "").strip(), re.IGNORECASE)
    if not match:
        return None, f"judge reply not understood: {(reply or '')[:80]!r}"
    token = match.group(1).upper()
    if token == "NONE":
        return None, None
    index = "ABCD".index(token)
    if index >= n_choices:
        return None, f"judge named option {token}, which the item does not have"
    return index, None


def _verdict(task: Task, judge: str, **fields: Any) -> Verdict:
    fields.setdefault("response_hash", task.response.content_hash())
    if task.turn is not None:
        fields["turn"] = task.turn
    return Verdict(uid=task.item.uid, model=task.response.model, judge=judge, order=task.order, **fields)


def rule_verdict(item: FoundationItem, response: Response, judge: str = "rule") -> Verdict:
    """The rule judge's verdict on one Foundation response."""
    task = Task(item, response)
    if response.error is not None or response.text is None:
        return _verdict(task, judge, parse_error=f"no response: {response.error}")
    extraction = extract_choice(response.text, item.choices)
    return _verdict(
        task,
        judge,
        raw=f"rule: {extraction.reason}",
        choice=extraction.choice,
        correct=None if extraction.choice is None else extraction.choice == item.answer,
        parse_error=None if extraction.choice is not None else f"rule abstained: {extraction.reason}",
        prompt_hash=prompt_hash(response.text or ""),
    )


def _llm_verdict(
    task: Task, judge: str, text: str | None, error: str | None, tokens: tuple[Any, Any], cached: bool
) -> Verdict:
    common = {
        "raw": text,
        "prompt_hash": prompt_hash(repr(task.messages)),
        "input_tokens": tokens[0],
        "output_tokens": tokens[1],
        "cached": cached,
    }
    if error is not None or text is None:
        return _verdict(task, judge, parse_error=f"{JUDGE_CALL_FAILED}: {error}", **common)
    item = task.item
    if isinstance(item, FoundationItem):
        choice, reason = parse_judge_letter(text, len(item.choices))
        if choice is None:
            return _verdict(task, judge, choice=None, correct=None if reason else False, parse_error=reason, **common)
        return _verdict(task, judge, choice=choice, correct=choice == item.answer, **common)
    from airbench_nb.judge.chat_parse import parse_scores_strict

    parsed = parse_scores_strict(text)
    if isinstance(parsed, str):
        return _verdict(task, judge, parse_error=parsed, **common)
    first, second = parsed
    reference, hypothesis = (first, second) if task.order == "reference_first" else (second, first)
    return _verdict(task, judge, score_reference=reference, score_hypothesis=hypothesis, **common)


@dataclass
class JudgeSummary:
    """What one judge run did."""

    judge: str
    """Judge spec."""
    tasks: int = 0
    """Verdicts needed (responses × orders, × turns for multi-turn Chat items) for the given items."""
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
    turn)."""
    repaired_lines: int = 0
    """Lines taken out of the output before resuming (see :func:`~airbench_nb.runner.repair_jsonl`)."""
    usage: dict[str, Any] = field(default_factory=dict)
    """API usage (requests sent, cache hits, retries, tokens, cost) for LLM judges."""
    seconds: float = 0.0
    """Wall-clock time."""
    dry_run: str | None = None
    """The estimate printed instead of judging, for dry runs."""

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
                "repaired_lines",
                "usage",
                "seconds",
                "dry_run",
            )
        }


class _LLM:
    """An LLM judge backend: the shared API client (``openai:``) or a local transformers model (``hf:``)."""

    def __init__(
        self,
        spec: str,
        *,
        concurrency: int,
        cache: str | Path | None,
        prices: Any,
        timeout_s: float,
        api_key_env: str | None,
    ) -> None:
        self.spec = spec
        self.batch_poll_s = 30.0
        kind, _, rest = spec.partition(":")
        self.kind = kind
        self.endpoint: str | None = None
        """The endpoint of an ``openai:`` judge (its ``@<base_url>``, ``OPENAI_BASE_URL`` or OpenAI's)."""
        if kind == "openai":
            from airbench_nb.api_client import APIClient, parse_openai_spec

            self.model, base_url = parse_openai_spec(rest)
            self.client = APIClient(
                base_url=base_url,
                api_key_env=api_key_env,
                concurrency=concurrency,
                timeout_s=timeout_s,
                cache_path=cache,
                prices=prices,
            )
            self.endpoint = self.client.endpoint
        else:
            from airbench_nb.judge.hf_judge import HFChatJudge

            self.model = rest
            self.local = HFChatJudge(rest)

    def requests(self, tasks: Sequence[Task]) -> list[Any]:
        from airbench_nb.api_client import ChatRequest

        return [
            ChatRequest(self.model, t.messages or [], {"temperature": 0.0, "max_tokens": JUDGE_MAX_TOKENS})
            for t in tasks
        ]

    def ask(
        self, tasks: Sequence[Task], batch_api: bool = False, batch_file: Path | None = None
    ) -> list[tuple[str | None, str | None, tuple, bool]]:
        if self.kind == "hf":
            replies = self.local.generate([t.messages or [] for t in tasks], max_new_tokens=JUDGE_MAX_TOKENS)
            return [(text, err, (None, None), False) for text, err in replies]
        requests = self.requests(tasks)
        if batch_api:
            path = batch_file or Path("judge.batch-requests.jsonl")
            self.client.write_batch_file(requests, path)
            batch_id = self.client.submit_batch(path)
            self.client.poll_batch(batch_id, interval_s=self.batch_poll_s)
            results = self.client.collect_batch(batch_id, requests)
        else:
            results = self.client.run_sync(requests, progress=False)
        return [(r.text, r.error, (r.input_tokens, r.output_tokens), r.cached) for r in results]

    def usage(self) -> dict[str, Any]:
        return self.client.usage.as_dict() if self.kind == "openai" else {}


def parse_judge_spec(spec: str) -> str:
    """Check a judge spec: ``rule``, ``proxy``, ``openai:<model>[@<url>]`` or ``hf:<path>``.

    An ``openai:`` spec is checked as a model's is (:func:`airbench_nb.api_client.parse_openai_spec`): a URL as the
    model part (hint ``openai:MODEL@URL``), a base URL that is not http(s) or holds credentials are refused, and
    the message never repeats a secret.

    Raises:
        JudgeSpecError: For a spec that names no judge, or an ``openai:`` spec that cannot be used.
    """
    if spec.startswith("openai:") and spec.split(":", 1)[1]:
        from airbench_nb.api_client import EndpointError, parse_openai_spec

        try:
            parse_openai_spec(spec.split(":", 1)[1])
        except EndpointError as exc:
            raise JudgeSpecError(f"judge {exc}") from None
        return spec
    if spec in ("rule", "proxy") or (spec.startswith("hf:") and spec.split(":", 1)[1]):
        return spec
    from airbench_nb.api_client import redact_url

    raise JudgeSpecError(
        f"judge spec {redact_url(spec)!r} not understood; use rule, proxy, openai:<model>[@<base_url>] or hf:<path>"
    )


def judge_responses(
    judge: str,
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
) -> JudgeSummary:
    """Judge responses into ``out`` (resumable): one verdict per Foundation response, two per Chat turn.

    Args:
        judge: Judge spec.
        items: The manifest's items (responses to other uids are ignored).
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

    Returns:
        A :class:`JudgeSummary`.

    Raises:
        OutputError: When ``out`` is not a verdicts file or another process is writing it; nothing is written.
        ManifestError: When a line of ``out`` is JSON but not a valid verdict (naming file, line and field).
        Exception: A fatal API error (see :func:`~airbench_nb.runner.is_fatal_api_error`), after keeping what was
            judged.
    """
    import contextlib

    judge = parse_judge_spec(judge)
    out = Path(out)
    check_output_file(out, Verdict)
    with contextlib.nullcontext() if dry_run else output_lock(out):
        repaired = 0 if dry_run else repair_jsonl(out)
        existing = _read_verdicts(out, dry_run)
        return _judge(
            judge,
            items,
            responses,
            out,
            existing,
            repaired,
            concurrency=concurrency,
            cache=cache,
            prices=prices,
            dry_run=dry_run,
            batch_api=batch_api,
            foundation_mode=foundation_mode,
            chunk_size=chunk_size,
            timeout_s=timeout_s,
            api_key_env=api_key_env,
            batch_poll_s=batch_poll_s,
            progress=progress,
        )


def _read_verdicts(out: Path, dry_run: bool) -> list[Verdict]:
    """The verdicts already in ``out``; a dry run writes nothing, so it reads around lines a repair would move."""
    if not dry_run:
        return read_existing(out, Verdict)
    from airbench_nb.manifests import read_records

    return read_records(out, Verdict, strict=False) if out.is_file() else []


def _judge(
    judge: str,
    items: Sequence[AnyItem],
    responses: Sequence[Response],
    out: Path,
    existing: Sequence[Verdict],
    repaired: int,
    *,
    concurrency: int,
    cache: str | Path | None,
    prices: Any,
    dry_run: bool,
    batch_api: bool,
    foundation_mode: Literal["abstentions", "all"],
    chunk_size: int,
    timeout_s: float,
    api_key_env: str | None,
    batch_poll_s: float,
    progress: bool,
) -> JudgeSummary:
    """The body of :func:`judge_responses`, run while holding the output's lock."""
    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    by_uid = {i.uid: i for i in items}
    latest_verdicts = {(v.uid, v.model, v.judge, v.order, v.turn): v for v in existing}
    latest_responses = {(r.uid, r.model): r for r in responses}
    summary = JudgeSummary(
        judge=judge,
        duplicates=len(responses) - len(latest_responses),
        duplicate_verdicts=len(existing) - len(latest_verdicts),
        repaired_lines=repaired,
    )
    tasks: list[Task] = []
    for response in latest_responses.values():
        item = by_uid.get(response.uid)
        if item is None:
            continue
        orders: tuple[Order, ...] = ("single",) if isinstance(item, FoundationItem) else CHAT_ORDERS
        if judge == "rule" and isinstance(item, ChatItem):
            continue
        if judge == "proxy" and isinstance(item, FoundationItem):
            continue
        judged = response.content_hash()
        turns: Sequence[int | None] = (
            range(len(item.turns)) if isinstance(item, ChatItem) and item.multi_turn else (None,)
        )
        for turn in turns:
            for order in orders:
                summary.tasks += 1
                previous = latest_verdicts.get((item.uid, response.model, judge, order, turn))
                if previous is None:
                    pass
                elif previous.response_hash is not None and previous.response_hash != judged:
                    summary.stale += 1
                elif (previous.parse_error or "").startswith(JUDGE_CALL_FAILED):
                    summary.retried += 1
                else:
                    summary.skipped_existing += 1
                    continue
                tasks.append(Task(item, response, order, turn=turn))
    if summary.stale or summary.retried:
        logger.info(
            "judge %s: %d verdict(s) of a changed response judged again, %d failed call(s) retried",
            judge,
            summary.stale,
            summary.retried,
        )
    llm = None
    if judge.startswith(("openai:", "hf:")):
        llm = _LLM(
            judge, concurrency=concurrency, cache=cache, prices=prices, timeout_s=timeout_s, api_key_env=api_key_env
        )
        llm.batch_poll_s = batch_poll_s
    kinds: Counter[str] = Counter()

    def decide_locally(task: Task) -> Verdict | None:
        """A verdict without an LLM call, or None when the LLM must be asked (and its messages set)."""
        item, response = task.item, task.response
        answer = task.answer
        if answer is None:
            return _verdict(task, judge, parse_error=turn_failure(response, task.turn))
        if isinstance(item, FoundationItem):
            ruled = rule_verdict(item, response, judge=judge)
            if llm is None or (foundation_mode == "abstentions" and ruled.choice is not None):
                return ruled
            task.messages = foundation_judge_messages(item, answer)
            return None
        if judge == "proxy":
            return None
        task.messages = chat_judge_messages(item, answer, task.order, task.turn)
        return None

    if dry_run:
        pending = [t for t in tasks if decide_locally(t) is None and t.messages is not None]
        if llm is None or llm.kind != "openai":
            summary.dry_run = f"{len(pending)} judge calls; {judge} runs locally, nothing to pay"
        else:
            summary.dry_run = str(llm.client.estimate(llm.requests(pending)))
        summary.seconds = round(time.perf_counter() - t0, 3)
        return summary

    proxy = None
    try:
        with JsonlAppender(out) as sink, tqdm(total=len(tasks), desc=f"judge {judge}", disable=not progress) as bar:
            for start in range(0, len(tasks), chunk_size):
                chunk = tasks[start : start + chunk_size]
                verdicts: dict[int, Verdict] = {}
                ask: list[int] = []
                for index, task in enumerate(chunk):
                    local = decide_locally(task)
                    if local is not None:
                        verdicts[index] = local
                    else:
                        ask.append(index)
                if ask and judge == "proxy":
                    from airbench_nb.judge.proxy import ProxyJudge

                    proxy = proxy or ProxyJudge()
                    for index, verdict in zip(ask, proxy.judge([chunk[i] for i in ask]), strict=True):
                        verdicts[index] = verdict
                elif ask and llm is not None:
                    batch_file = out.with_name(f"{out.stem}.batch-requests-{start // chunk_size:04d}.jsonl")
                    # A fatal API error (rejected key, server refusing connections) propagates from here: the
                    # verdicts of earlier chunks are on disk, nothing more is sent.
                    replies = llm.ask([chunk[i] for i in ask], batch_api=batch_api, batch_file=batch_file)
                    for index, (text, error, tokens, cached) in zip(ask, replies, strict=True):
                        verdicts[index] = _llm_verdict(chunk[index], judge, text, error, tokens, cached)
                ordered = []
                for index in range(len(chunk)):
                    verdict = verdicts[index]
                    judged = chunk[index].response.content_hash()
                    if verdict.response_hash != judged:  # judges that build their own verdicts (the proxy)
                        verdict = verdict.model_copy(update={"response_hash": judged})
                    ordered.append(verdict)
                sink.write(ordered)
                summary.asked += len(ask)
                for verdict in ordered:
                    summary.written += 1
                    if verdict.parse_error is not None:
                        summary.parse_failures += 1
                        kinds[verdict.parse_error.split(":", 1)[0]] += 1
                        if verdict.parse_error.startswith(JUDGE_CALL_FAILED):
                            summary.errors += 1
                bar.update(len(chunk))
    finally:
        summary.failure_kinds = dict(kinds)
        summary.usage = llm.usage() if llm is not None else {}
        summary.seconds = round(time.perf_counter() - t0, 3)
    if summary.errors:
        logger.warning("%s", summary.failure_text())
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


def judge_run_folder(
    responses_dir: str | Path,
    manifests: dict[str, Path],
    judges: Sequence[str],
    verdicts_dir: str | Path,
    **options: Any,
) -> list[dict[str, Any]]:
    """Judge every model's responses under ``responses_dir/<model>/<kind>.jsonl`` with each judge.

    Verdicts go to ``verdicts_dir/<model>/<kind>.<judge>.jsonl`` (one file per judge, so judges never shadow each
    other when resuming). Judges that do not apply to a kind (``rule`` on Chat, ``proxy`` on Foundation) are
    skipped.

    Args:
        responses_dir: Folder of per-model response folders (notebook 03's output).
        manifests: ``{"foundation": path, "chat": path}`` (either may be absent).
        judges: Judge specs.
        verdicts_dir: Output folder.
        **options: Passed to :func:`judge_responses` (``concurrency``, ``cache``, ``dry_run``, ...).

    Returns:
        One summary dict per (model, kind, judge), with ``model_dir``, ``kind`` and ``verdicts`` (path) added.
    """
    from airbench_nb.manifests import read_manifest, read_records

    rows = []
    items_by_kind = {kind: read_manifest(manifest) for kind, manifest in manifests.items()}
    for model_dir in sorted(p for p in Path(responses_dir).iterdir() if p.is_dir()):
        for kind, items in items_by_kind.items():
            responses_path = model_dir / f"{kind}.jsonl"
            if not responses_path.is_file():
                continue
            responses = read_records(responses_path, Response)
            for spec in judges:
                if (spec == "rule" and kind == "chat") or (spec == "proxy" and kind == "foundation"):
                    continue
                out = Path(verdicts_dir) / model_dir.name / f"{kind}.{judge_slug(spec)}.jsonl"
                summary = judge_responses(spec, items, responses, out, progress=False, **options)
                rows.append({"model_dir": model_dir.name, "kind": kind, **summary.as_dict(), "verdicts": str(out)})
    return rows
