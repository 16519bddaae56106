"""The interface every judge implements, and the judging job it is given.

A judge turns :class:`Task` objects (an item, a model's response, an order and a turn) into
:class:`~airbench_nb.records.Verdict` records. The resumable loop (:mod:`airbench_nb.judge.run`) decides which tasks
are pending, writes a verdict without asking the judge when the response holds no answer, and asks the judge for the
others in two steps:

1. :meth:`Judge.decide` — a verdict reached without the judge's costly part (the rule's reading of a Foundation
   answer), or None when the judge must be asked; an LLM judge sets :attr:`Task.messages` then;
2. :meth:`Judge.ask` — the verdicts of the tasks ``decide`` left open, a chunk at a time, in order.

A judge declares the item kinds it applies to (:attr:`Judge.kinds`); the loop skips items of other kinds, and
:func:`~airbench_nb.judge.run.judge_run_folder` skips whole files. Judges are made from spec strings by the registry
(:func:`airbench_nb.judge.load_judge`), as models are (:func:`airbench_nb.models.load_model`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from airbench_nb.manifests import AnyItem
from airbench_nb.records import Response, Verdict
from airbench_nb.run_folder import RunFolder

logger = logging.getLogger(__name__)

Order = Literal["single", "reference_first", "hypothesis_first"]
"""Which answer a judge saw first: ``single`` for Foundation, one of :data:`CHAT_ORDERS` for Chat."""
CHAT_ORDERS: tuple[Order, Order] = ("reference_first", "hypothesis_first")
"""The two orders every Chat response is judged in."""
ItemKind = Literal["foundation", "chat"]
"""The kinds of item a judge may apply to (:attr:`~airbench_nb.records.FoundationItem.kind`, ...)."""
JUDGE_CALL_FAILED = "judge call failed"
"""How the ``parse_error`` of a verdict whose judge call failed begins: such verdicts are retried on rerun."""
AUDIO_GONE: tuple[str, ...] = ("audio missing", "audio unreadable", "audio changed since it was written")
"""How the ``parse_error`` of a verdict begins when a spoken answer's file was missing, unreadable or changed when it
was judged: a state of the files, not of the answer, so such verdicts are retried on rerun (a resumed model run
writes the file again)."""


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
    fenced_messages: list[dict[str, Any]] | None = None
    """LLM judges: the fenced twin of :attr:`messages` (:func:`~airbench_nb.prompts.fenced_chat_judge_messages`), asked
    too; its reading becomes the verdict's :attr:`~airbench_nb.records.Verdict.fenced`."""
    turn: int | None = None
    """Multi-turn Chat: index of the turn judged (0 for the first); None for one-turn items and Foundation."""
    repeat: int | None = None
    """Which judgement of the task this is (:attr:`~airbench_nb.records.Verdict.repeat`): None for the first, 1 ..
    R-1 for the repeats of ``--judge-repeats R``; an LLM judge's request is cached per repeat."""
    run_folder: RunFolder | None = None
    """The run folder the response's spoken answer is found in (:attr:`~airbench_nb.records.Response.audio`), for
    judges that listen (:attr:`BaseJudge.needs_audio`); None otherwise."""

    @property
    def question(self) -> str:
        """The question of the turn judged (the item's question for a one-turn item)."""
        return self.item.turn_question(self.turn)

    @property
    def reference(self) -> str:
        """The reference answer of the turn judged (Chat).

        Raises:
            TypeError: For an item whose kind is judged without a reference answer.
        """
        reference = self.item.turn_reference(self.turn)
        if reference is None:
            raise TypeError(f"a {self.item.kind} item is judged without a reference answer")
        return reference

    @property
    def answer(self) -> str | None:
        """The model's answer to the turn judged; None when it gave none (an error, or a turn after a failed one)."""
        return self.response.turn_answer(self.turn)

    def verdict(self, judge: str, **fields: Any) -> Verdict:
        """A verdict on this task by ``judge`` (a spec), recording the response's content hash and the turn.

        Args:
            judge: The judge's spec.
            **fields: Other :class:`~airbench_nb.records.Verdict` fields (``raw``, ``choice``, ``parse_error``, ...).
        """
        fields.setdefault("response_hash", self.response.content_hash())
        if self.turn is not None:
            fields["turn"] = self.turn
        if self.repeat is not None:
            fields["repeat"] = self.repeat
        return Verdict(uid=self.item.uid, model=self.response.model, judge=judge, order=self.order, **fields)


@runtime_checkable
class Judge(Protocol):
    """A judge: turns tasks into verdicts (see the module docstring for the two steps).

    A failed judge call for one task is a verdict whose ``parse_error`` begins with :data:`JUDGE_CALL_FAILED` (it is
    retried on rerun); an exception stops the loop (the verdicts of earlier chunks are kept).
    """

    spec: str
    """The spec string the judge was made from; every verdict it writes carries it."""
    kinds: ClassVar[frozenset[str]]
    """The item kinds it applies to (``foundation``, ``chat``)."""

    def decide(self, task: Task) -> Verdict | None:
        """A verdict reached without asking the judge, or None when :meth:`ask` must be called for ``task``."""
        ...

    def ask(self, tasks: Sequence[Task], *, batch_file: Path) -> list[Verdict]:
        """One verdict per task, in order (``batch_file``: where a batch request file may be written)."""
        ...

    def estimate(self, tasks: Sequence[Task]) -> str:
        """What a dry run prints for the tasks :meth:`decide` left open (calls, tokens, cost)."""
        ...

    def usage(self) -> dict[str, Any]:
        """API usage so far (requests, cache hits, tokens, cost); empty for judges that call no API."""
        ...


class BaseJudge:
    """What judges share: the spec, the registry's description of it, and defaults for the optional steps.

    A subclass sets :attr:`name` (the spec, or its prefix before ``:``), :attr:`usage_text` (how the spec is written,
    for error messages), :attr:`kinds`, and implements :meth:`ask` (and :meth:`decide` when part of its work is
    local); a judge whose spec takes an argument (``hf:<path>``) sets :attr:`takes_argument`. Register it with
    :func:`airbench_nb.judge.register_judge`.
    """

    name: ClassVar[str] = ""
    """The spec (``rule``) or, for judges whose spec takes an argument, its prefix (``openai`` of ``openai:...``)."""
    takes_argument: ClassVar[bool] = False
    """Whether the spec is ``<name>:<argument>`` (True) or the name alone."""
    usage_text: ClassVar[str] = ""
    """How the spec is written (``openai:<model>[@<base_url>]``): listed when a spec is not understood."""
    kinds: ClassVar[frozenset[str]] = frozenset()
    """The item kinds the judge applies to."""
    needs_audio: ClassVar[bool] = False
    """Whether the judge reads the responses' spoken answers (then the loop must be given the run folder)."""
    scores_only: ClassVar[bool] = False
    """Whether its verdicts' ``raw`` explains the scores instead of being a judge's reply (the ``proxy``): the
    official protocol keeps its scores as given, and tables label it as what it is."""
    llm: ClassVar[bool] = False
    """Whether it asks a language model (``openai:``, ``hf:``): where such a judge decides a tier of the tiered
    benchmark, it decides before the offline rules."""
    decides_tiers: ClassVar[frozenset[str]] = frozenset()
    """The tiers of the tiered sound-source benchmark whose answers its verdicts decide (``rule``: A; ``sources``:
    D; an LLM judge: both)."""
    names_sources: ClassVar[bool] = False
    """Whether its tier D verdicts store the classes and categories it read in each answer (``hits.named``: the
    ``sources`` rule); for another judge's verdicts, tier D's precision reads the names with the rule again."""
    labels_reasoning: ClassVar[bool] = False
    """Whether its verdicts label the reasoning strategy of answers (``strategy:``) instead of judging them."""
    deterministic: ClassVar[bool] = False
    """Whether asking it again gives the same verdict (the rule, the proxy, greedy local models, the offline
    transcriber): the loop judges each task once whatever ``repeats`` asks, and the judge-panel analysis reports its
    repeat variance as 0 (deterministic). False for judges behind an API (``openai:``), which vary between calls
    even at temperature 0."""

    def __init__(self, spec: str) -> None:
        """Keep the spec (checked by the registry)."""
        self.spec = spec

    @classmethod
    def check_spec(cls, argument: str) -> None:
        """Refuse a spec argument this judge cannot use (default: any non-empty argument is accepted).

        Raises:
            JudgeSpecError: In one line that repeats no secret.
        """

    @classmethod
    def applies_to(cls, kind: str) -> bool:
        """Whether the judge judges items of ``kind``."""
        return kind in cls.kinds

    def decide(self, task: Task) -> Verdict | None:
        """Default: every task needs :meth:`ask`."""
        return None

    def ask(self, tasks: Sequence[Task], *, batch_file: Path) -> list[Verdict]:
        """One verdict per task, in order."""
        raise NotImplementedError

    def estimate(self, tasks: Sequence[Task]) -> str:
        """Judges that run locally: the number of judge-model calls (tasks with messages), nothing to pay."""
        calls = sum((task.messages is not None) + (task.fenced_messages is not None) for task in tasks)
        return f"{calls} judge calls; {self.spec} runs locally, nothing to pay"

    def usage(self) -> dict[str, Any]:
        """No API usage by default."""
        return {}
