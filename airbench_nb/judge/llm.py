"""LLM judges: an OpenAI-compatible endpoint (``openai:<model>[@<base_url>]``) or a local chat model (``hf:<path>``).

Both send the prompts of :mod:`airbench_nb.prompts` at temperature 0 with :data:`JUDGE_MAX_TOKENS`, each task
twice: the verbatim prompt (its reading is the verdict's, which ``official`` scores) and its fenced twin (the answer
and the reference between delimiters, said to be data: :attr:`~airbench_nb.records.Verdict.fenced`, which ``strict``
scores), so that an answer that instructs the judge is scored both ways. Foundation: the
rule first (:func:`~airbench_nb.judge.rule.rule_verdict`), the LLM for the rule's abstentions
(``foundation_mode="abstentions"``, default) or for every item (``"all"``); the reply is a letter or ``none``
(:func:`parse_judge_letter`). Chat: AIR-Bench's prompt in the order of the task, the reply two scores
(:func:`~airbench_nb.judge.chat_parse.parse_scores_strict`). The tiered benchmark: closed-set items (``sound_source``)
as Foundation; open-vocabulary items (``sound_source_open``, tier D) are asked once, with the answer fenced
(:func:`~airbench_nb.prompts.source_judge_messages`), the reply two lines ``category: yes|no`` and ``subclass: yes|no``
(:func:`~airbench_nb.prompts.parse_source_reply`) read into :attr:`~airbench_nb.records.Verdict.hits`. MMAU, MMAR
and MMSU items (``mmau``, ``mmar``, ``mmsu``) as Foundation. How each kind is asked and its reply read are
registered per item kind (:func:`ask_about`, :func:`reply_verdict`).

``openai:`` judges go through :class:`~airbench_nb.api_client.APIClient` (cached, retried, concurrent, costed;
Batch API on request). The request of a task is ``ChatRequest(model, messages, {"temperature": 0.0, "max_tokens":
JUDGE_MAX_TOKENS})``: its SQLite cache key follows from it, so a rerun over an old cache sends nothing. A repeat of
a task (``judge --judge-repeats R``) is the same request keyed with its repeat index (``ChatRequest.repeat``): each
repeat is asked once and cached on its own, the first keeps the key it always had.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import singledispatch
from pathlib import Path
from typing import Any, ClassVar, Literal

from airbench_nb.judge.base import JUDGE_CALL_FAILED, BaseJudge, JudgeSpecError, Task
from airbench_nb.judge.rule import rule_verdict
from airbench_nb.prompts import (
    FOUNDATION_JUDGE_PATTERN,
    chat_judge_messages,
    fenced_chat_judge_messages,
    fenced_foundation_judge_messages,
    foundation_judge_messages,
    parse_source_reply,
    prompt_hash,
    source_judge_messages,
)
from airbench_nb.records import (
    LETTERS,
    ChatItem,
    FencedReading,
    OpenSourceItem,
    SingleChoiceItem,
    SourceHits,
    Verdict,
)

logger = logging.getLogger(__name__)

JUDGE_MAX_TOKENS = 64
"""Reply length bound of LLM judges (a letter, or two scores)."""

Reply = tuple[str | None, str | None, tuple[Any, Any], bool]
"""One judge call's outcome: reply text, error, (input tokens, output tokens), whether it came from the cache."""


def parse_judge_letter(reply: str | None, n_choices: int) -> tuple[int | None, str | None]:
    """Read a Foundation judge's reply: ``(choice, None)``, ``(None, None)`` for 'none', or ``(None, reason)``."""
    match = re.match(FOUNDATION_JUDGE_PATTERN, (reply or "").strip(), re.IGNORECASE)
    if not match:
        return None, f"judge reply not understood: {(reply or '')[:80]!r}"
    token = match.group(1).upper()
    if token == "NONE":
        return None, None
    index = LETTERS.index(token)
    if index >= n_choices:
        return None, f"judge named option {token}, which the item does not have"
    return index, None


def llm_verdict(task: Task, judge: str, reply: Reply) -> Verdict:
    """The verdict of one LLM judge call on ``task`` (a failed call, an unread reply, a choice or two scores).

    Args:
        task: The task (its :attr:`~airbench_nb.judge.base.Task.messages` were sent).
        judge: The judge's spec.
        reply: What the call returned (see :data:`Reply`).
    """
    text, error, tokens, cached = reply
    common = {
        "raw": text,
        "prompt_hash": prompt_hash(repr(task.messages)),
        "input_tokens": tokens[0],
        "output_tokens": tokens[1],
        "cached": cached,
    }
    if error is not None or text is None:
        return task.verdict(judge, parse_error=f"{JUDGE_CALL_FAILED}: {error}", **common)
    return reply_verdict(task.item, task, judge, text, common)


@singledispatch
def reply_verdict(item: object, task: Task, judge: str, text: str, common: dict[str, Any]) -> Verdict:
    """The verdict an LLM judge's reply ``text`` about ``item`` reads as, by the item's kind.

    Each kind an LLM judge reads registers its reading (``@reply_verdict.register(SomeItem)``): a letter or
    ``none`` for a single-choice item, two scores for Chat, the category and subclass hits for the open-vocabulary
    question. ``common`` holds the fields every verdict of the call carries (raw reply, prompt hash, tokens, cached).

    Raises:
        TypeError: For an item whose kind registered no reading (no LLM judge reads it).
    """
    raise TypeError(f"an LLM judge reads no reply about a {type(item).__name__}")


@reply_verdict.register(OpenSourceItem)
def _hits_reply(item: OpenSourceItem, task: Task, judge: str, text: str, common: dict[str, Any]) -> Verdict:
    read = parse_source_reply(text)
    if isinstance(read, str):
        return task.verdict(judge, parse_error=read, **common)
    hits = SourceHits(category=read[0], subclass=read[1])
    return task.verdict(judge, correct=hits.subclass, hits=hits, **common)


@reply_verdict.register(SingleChoiceItem)
def _letter_reply(item: SingleChoiceItem, task: Task, judge: str, text: str, common: dict[str, Any]) -> Verdict:
    choice, reason = parse_judge_letter(text, len(item.choices))
    if choice is None:
        return task.verdict(judge, choice=None, correct=None if reason else False, parse_error=reason, **common)
    choice = item.answer_option(choice)  # options of one text (MMAU, MMAR) are one answer, the first of them
    return task.verdict(judge, choice=choice, correct=item.chose_gold(choice), **common)


@reply_verdict.register(ChatItem)
def _scores_reply(item: ChatItem, task: Task, judge: str, text: str, common: dict[str, Any]) -> Verdict:
    from airbench_nb.judge.chat_parse import parse_scores_strict

    parsed = parse_scores_strict(text)
    if isinstance(parsed, str):
        return task.verdict(judge, parse_error=parsed, **common)
    first, second = parsed
    reference, hypothesis = (first, second) if task.order == "reference_first" else (second, first)
    return task.verdict(judge, score_reference=reference, score_hypothesis=hypothesis, **common)


def with_fenced(verdict: Verdict, reading: Verdict) -> Verdict:
    """``verdict`` (the verbatim prompt's) carrying ``reading`` (the fenced prompt's) as its ``fenced`` field."""
    fields = ("raw", "choice", "correct", "score_reference", "score_hypothesis", "parse_error", "prompt_hash")
    fenced = FencedReading(**{name: getattr(reading, name) for name in fields})
    return verdict.model_copy(update={"fenced": fenced})


class LLMJudge(BaseJudge):
    """What the LLM judges share: the rule first for Foundation, the prompts, reading the replies.

    A subclass implements :meth:`complete` (send the tasks' messages, one :data:`Reply` each, in order).

    Args:
        spec: The judge spec.
        foundation_mode: ``abstentions`` (the rule first, the LLM when it abstains) or ``all``.
    """

    kinds: ClassVar[frozenset[str]] = frozenset(
        {"foundation", "chat", "sound_source", "sound_source_open", "mmau", "mmar", "mmsu"}
    )
    llm: ClassVar[bool] = True
    """It asks a language model."""
    decides_tiers: ClassVar[frozenset[str]] = frozenset({"A", "D"})
    """It reads tier A choices and tier D hits, before the offline rules."""
    takes_argument: ClassVar[bool] = True

    def __init__(self, spec: str, foundation_mode: Literal["abstentions", "all"] = "abstentions") -> None:
        """Keep the spec and the Foundation mode."""
        super().__init__(spec)
        self.foundation_mode = foundation_mode

    def decide(self, task: Task) -> Verdict | None:
        """Foundation: the rule's verdict unless the LLM must read the answer; otherwise set the task's messages."""
        answer = task.answer
        assert answer is not None  # the loop judges tasks without an answer itself
        return ask_about(task.item, self, task, answer)

    def complete(self, tasks: Sequence[Task], *, batch_file: Path) -> list[Reply]:
        """Send each task's messages; one reply per task, in order."""
        raise NotImplementedError

    def ask(self, tasks: Sequence[Task], *, batch_file: Path) -> list[Verdict]:
        """One verdict per task from the judge model's replies.

        Raises:
            Exception: A fatal API error (see :func:`~airbench_nb.runner.is_fatal_api_error`) propagates.
        """
        fenced = [replace(task, messages=task.fenced_messages) for task in tasks if task.fenced_messages is not None]
        replies = self.complete([*tasks, *fenced], batch_file=batch_file)
        head, tail = replies[: len(tasks)], replies[len(tasks) :]
        verdicts = [llm_verdict(task, self.spec, reply) for task, reply in zip(tasks, head, strict=True)]
        readings = iter([llm_verdict(task, self.spec, reply) for task, reply in zip(fenced, tail, strict=True)])
        return [
            with_fenced(verdict, next(readings)) if task.fenced_messages is not None else verdict
            for task, verdict in zip(tasks, verdicts, strict=True)
        ]


@singledispatch
def ask_about(item: object, judge: LLMJudge, task: Task, answer: str) -> Verdict | None:
    """Set ``task``'s messages for an LLM judge, by the item's kind; or decide it without asking (the rule first).

    Each kind an LLM judge reads registers how it is asked (``@ask_about.register(SomeItem)``): a single-choice item
    by the rule first (the LLM only for its abstentions, unless ``foundation_mode`` is ``all``) and the Foundation
    judge prompt and its fenced twin; Chat by AIR-Bench's prompt in the task's order and its fenced twin; the
    open-vocabulary question by one prompt with the answer fenced as data.

    Returns:
        The verdict when the judge decides without asking; None when the task's messages are set.

    Raises:
        TypeError: For an item whose kind registered no way of asking (no LLM judge reads it).
    """
    raise TypeError(f"an LLM judge asks nothing about a {type(item).__name__}")


@ask_about.register(OpenSourceItem)
def _ask_sources(item: OpenSourceItem, judge: LLMJudge, task: Task, answer: str) -> Verdict | None:
    task.messages = source_judge_messages(item, answer)  # tier D: one prompt, the answer already fenced as data
    return None


@ask_about.register(SingleChoiceItem)
def _ask_letter(item: SingleChoiceItem, judge: LLMJudge, task: Task, answer: str) -> Verdict | None:
    ruled = rule_verdict(item, task.response, judge=judge.spec)
    if judge.foundation_mode == "abstentions" and ruled.choice is not None:
        return ruled
    task.messages = foundation_judge_messages(item, answer)
    task.fenced_messages = fenced_foundation_judge_messages(item, answer)
    return None


@ask_about.register(ChatItem)
def _ask_scores(item: ChatItem, judge: LLMJudge, task: Task, answer: str) -> Verdict | None:
    task.messages = chat_judge_messages(item, answer, task.order, task.turn)
    task.fenced_messages = fenced_chat_judge_messages(item, answer, task.order, task.turn)
    return None


class OpenAIJudge(LLMJudge):
    """An LLM judge on an OpenAI-compatible endpoint through the shared API client.

    Args:
        spec: ``openai:<model>[@<base_url>]``.
        foundation_mode: See :class:`LLMJudge`.
        concurrency: Requests in flight.
        cache: SQLite cache of judge calls; a rerun with it makes no request.
        prices: Price table for costs (see :class:`~airbench_nb.api_client.PriceTable`).
        timeout_s: Per-request timeout.
        api_key_env: Environment variable holding the judge's key (None: the client's default rules).
        batch_api: Send the calls through the OpenAI Batch API (half price, asynchronous).
        batch_poll_s: Seconds between Batch API status checks.
    """

    name: ClassVar[str] = "openai"
    usage_text: ClassVar[str] = "openai:<model>[@<base_url>]"

    def __init__(
        self,
        spec: str,
        foundation_mode: Literal["abstentions", "all"] = "abstentions",
        *,
        concurrency: int = 8,
        cache: str | Path | None = None,
        prices: Any = None,
        timeout_s: float = 60.0,
        api_key_env: str | None = None,
        batch_api: bool = False,
        batch_poll_s: float = 30.0,
    ) -> None:
        """Build the API client (no request is sent)."""
        from airbench_nb.api_client import APIClient, parse_openai_spec

        super().__init__(spec, foundation_mode)
        self.model, base_url = parse_openai_spec(spec.partition(":")[2])
        self.client = APIClient(
            base_url=base_url,
            api_key_env=api_key_env,
            concurrency=concurrency,
            timeout_s=timeout_s,
            cache_path=cache,
            prices=prices,
        )
        self.endpoint: str | None = self.client.endpoint
        """The endpoint (the spec's ``@<base_url>``, ``OPENAI_BASE_URL`` or OpenAI's)."""
        self.batch_api = batch_api
        self.batch_poll_s = batch_poll_s

    @classmethod
    def check_spec(cls, argument: str) -> None:
        """Check the spec as a model's is (:func:`~airbench_nb.api_client.parse_openai_spec`), never echoing a secret.

        Raises:
            JudgeSpecError: For a URL as the model part, a base URL that is not http(s) or holds credentials.
        """
        from airbench_nb.api_client import EndpointError, parse_openai_spec

        try:
            parse_openai_spec(argument)
        except EndpointError as exc:
            raise JudgeSpecError(f"judge {exc}") from None

    def requests(self, tasks: Sequence[Task]) -> list[Any]:
        """The chat requests of the tasks (their messages at temperature 0, :data:`JUDGE_MAX_TOKENS`).

        A repeat (:attr:`~airbench_nb.judge.base.Task.repeat`) is the same request cached under its own key, so that
        asking again reaches the server rather than the first reply in the cache.
        """
        from airbench_nb.api_client import ChatRequest

        return [
            ChatRequest(
                self.model, t.messages or [], {"temperature": 0.0, "max_tokens": JUDGE_MAX_TOKENS}, repeat=t.repeat
            )
            for t in tasks
        ]

    def estimate(self, tasks: Sequence[Task]) -> str:
        """The client's estimate of calls, tokens and cost for the tasks' requests, both prompts."""
        fenced = [replace(t, messages=t.fenced_messages) for t in tasks if t.fenced_messages is not None]
        return str(self.client.estimate(self.requests([*tasks, *fenced])))

    def complete(self, tasks: Sequence[Task], *, batch_file: Path) -> list[Reply]:
        """Send the requests (concurrently, or as one Batch API job written to ``batch_file``)."""
        requests = self.requests(tasks)
        if self.batch_api:
            self.client.write_batch_file(requests, batch_file)
            batch_id = self.client.submit_batch(batch_file)
            self.client.poll_batch(batch_id, interval_s=self.batch_poll_s)
            results = self.client.collect_batch(batch_id, requests)
        else:
            results = self.client.run_sync(requests, progress=False)
        return [(r.text, r.error, (r.input_tokens, r.output_tokens), r.cached) for r in results]

    def usage(self) -> dict[str, Any]:
        """The client's usage (requests sent, cache hits, retries, tokens, cost)."""
        return self.client.usage.as_dict()


class HFJudge(LLMJudge):
    """An LLM judge on a local transformers chat model (:class:`~airbench_nb.judge.hf_judge.HFChatJudge`).

    Args:
        spec: ``hf:<path>``.
        foundation_mode: See :class:`LLMJudge`.
    """

    name: ClassVar[str] = "hf"
    usage_text: ClassVar[str] = "hf:<path>"
    deterministic: ClassVar[bool] = True
    """Greedy decoding: asked again, it replies the same."""

    def __init__(self, spec: str, foundation_mode: Literal["abstentions", "all"] = "abstentions") -> None:
        """Load the model."""
        from airbench_nb.judge.hf_judge import HFChatJudge

        super().__init__(spec, foundation_mode)
        self.model = spec.partition(":")[2]
        self.local = HFChatJudge(self.model)

    def complete(self, tasks: Sequence[Task], *, batch_file: Path) -> list[Reply]:
        """Greedy replies of the local model (no tokens counted, never cached)."""
        replies = self.local.generate([t.messages or [] for t in tasks], max_new_tokens=JUDGE_MAX_TOKENS)
        return [(text, err, (None, None), False) for text, err in replies]
