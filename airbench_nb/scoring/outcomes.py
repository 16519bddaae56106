"""Per-item outcomes: how one Foundation item or one Chat (item, order) came out under each protocol."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from airbench_nb.judge.chat_parse import parse_scores_official
from airbench_nb.judge.extract import official_extract
from airbench_nb.judge.registry import scores_only
from airbench_nb.records import CONTROL_KEY, LETTERS, ChatItem, Response, Verdict, is_control
from airbench_nb.run_records import current_verdicts, latest_responses  # noqa: F401 - the rules, re-exported

logger = logging.getLogger(__name__)

PROTOCOLS: tuple[str, ...] = ("official", "strict")
"""The two scoring protocols, in the order they are reported."""

DEFAULT_PROTOCOL = "strict"
"""Protocol used when none is named."""

RULE_JUDGE = "rule"
"""Spec of the rule-based Foundation judge, tried first by default."""

CHAT_ORDERS: tuple[str, ...] = ("reference_first", "hypothesis_first")
"""The two orders a Chat judge sees the answers in."""

Protocol = Literal["official", "strict", "both"]


@dataclass(frozen=True, slots=True)
class FoundationOutcome:
    """How one Foundation item came out under one protocol."""

    task: str
    """Task name."""
    dataset: str
    """Dataset name."""
    correct: bool | None
    """True/False when the answer was read; None for a failure."""
    reason: str
    """How the answer was read, or why it failed."""
    judge: str | None = None
    """The judge of the deciding verdict (None: no verdict)."""
    flags: tuple[str, ...] | None = None
    """The injection screen's flags on the answer (pattern names; empty: clean; None: the verdict was not screened)."""
    cluster: str = ""
    """The item's cluster (:func:`airbench_nb.records.cluster_of`: its recording); the score's interval draws whole
    clusters too when items share one. Empty: the item on its own (an official result file names no audio)."""

    @property
    def subset(self) -> str:
        """The official subset name ``f"{task}_{dataset}"``."""
        return f"{self.task}_{self.dataset}"


@dataclass(frozen=True, slots=True)
class ChatOutcome:
    """How one Chat item came out in one order under one protocol."""

    task: str
    """Task name."""
    unit: str
    """Item key: the two orders of one item share it (they are resampled together)."""
    order: str
    """``reference_first`` or ``hypothesis_first``."""
    model: float | None
    """The model's score; None for a failure."""
    reference: float | None
    """The reference answer's score; None for a failure."""
    reason: str
    """Where the scores came from, or why there are none."""
    turn: int | None = None
    """Multi-turn items: index of the turn (0 for the first); None for a one-turn item. The turns of one
    conversation share its ``unit``: they are resampled together."""
    judge: str | None = None
    """The judge of the verdict (None: no verdict)."""
    flags: tuple[str, ...] | None = None
    """The injection screen's flags on the answer (pattern names; empty: clean; None: the verdict was not screened)."""
    cluster: str = ""
    """The item's cluster (:func:`airbench_nb.records.cluster_of`: its recording); the score's interval draws whole
    clusters too when items share one. Empty: the item on its own (an official result file names no audio)."""


STALE_WHY = (
    "response records superseded by a later record of the same (model, uid) and verdict records superseded by a "
    "later one of the same (model, judge, uid, order): the latest wins; stale verdicts judged an answer that is no "
    "longer the latest one (the item was answered again since): they are not used"
)
"""Why duplicate and stale records are counted (``duplicates["why"]`` of every score table). A verdict of a
multi-turn item is keyed by its turn too; the wording is kept as it was so that reports of one-turn runs do not
change."""


def strict_reading(verdict: Verdict | None) -> Verdict | None:
    """The verdict as ``strict`` reads it: the fenced prompt's reading in place of the verbatim one.

    Unchanged for verdicts without ``Verdict.fenced`` (rule, proxy, files written before the fenced prompt).
    """
    if verdict is None or verdict.fenced is None:
        return verdict
    return verdict.model_copy(update=verdict.fenced.model_dump())


def screened(verdict: Verdict | None) -> dict[str, Any]:
    """The ``judge`` and ``flags`` of an outcome decided by ``verdict`` (no flags: the verdict carries no screen)."""
    if verdict is None or verdict.screen is None:
        return {"judge": verdict.judge if verdict is not None else None, "flags": None}
    return {"judge": verdict.judge, "flags": tuple(f.pattern for f in verdict.screen.flags)}


def injection_counts(outcomes: Iterable[FoundationOutcome | ChatOutcome]) -> dict[str, Any] | None:
    """What the injection screen flagged among the answers of a section's outcomes, per judge.

    Args:
        outcomes: The section's outcomes (those whose verdict carries a screen are counted).

    Returns:
        ``{judge: {"flagged", "n", "share", "patterns": {name: count}}}``; None when no verdict carries a screen
        (files written before the screen).
    """
    counts: dict[str, dict[str, Any]] = {}
    for outcome in outcomes:
        if outcome.flags is None or outcome.judge is None:
            continue
        row = counts.setdefault(outcome.judge, {"flagged": 0, "n": 0, "share": 0.0, "patterns": {}})
        row["n"] += 1
        row["flagged"] += bool(outcome.flags)
        for name in outcome.flags:
            row["patterns"][name] = row["patterns"].get(name, 0) + 1
    for row in counts.values():
        row["share"] = row["flagged"] / row["n"]
    return counts or None


def failure_text(response: Response | None, turn: int | None = None) -> str | None:
    """Why a response cannot be scored at all (missing, an error, no text), or None when it has text.

    Args:
        response: The model's response to one item (None when there is none).
        turn: Multi-turn Chat: the turn asked about. Its answer is ``turns[turn]``, kept when a *later* turn failed
            (``error`` then names that turn), so only a turn without an answer fails. None: the whole response.

    Returns:
        The failure reason, or None.
    """
    if response is None:
        return "no response"
    if turn is not None:
        return None if response.turn_answer(turn) is not None else response.turn_failure(turn)
    if response.error is not None:
        return f"response error: {response.error}"
    if response.text is None:
        return "response has no text"
    return None


def official_foundation_correct(text: str | None, n_choices: int, answer: int) -> tuple[bool | None, str]:
    """Score one Foundation answer the way the official ``score_foundation.py`` does.

    The response is stripped and its newlines deleted; ``"None"`` and the empty string are failures; then the
    first character, else the second-to-last, must be a letter A-D (:func:`official_extract`). A letter past the
    item's options is read and counts wrong. An item of more than four options accepts its own letters, A to its
    last, by the same rule (:func:`~airbench_nb.judge.extract.official_letters`).

    Args:
        text: The response text (None for no response).
        n_choices: Number of options of the item.
        answer: Index of the correct option.

    Returns:
        ``(correct, reason)``; ``correct`` is None for a failure, which the official protocol drops.
    """
    if text is None:
        return None, "official: no response"
    predict = text.strip().replace("\n", "")
    if not predict or predict == "None":
        return None, "official: empty response"
    extraction = official_extract(predict, list(LETTERS[:n_choices]))
    if extraction.choice is None:
        return None, extraction.reason
    reason = extraction.reason
    if extraction.choice >= n_choices:
        reason += f" (letter {LETTERS[extraction.choice]} is not an option: wrong)"
    return extraction.choice == answer, reason


def strict_foundation(response: Response | None, verdict: Verdict | None) -> tuple[bool | None, str]:
    """Score one Foundation item under the strict protocol: its deciding verdict's ``correct``.

    An LLM judge's verdict is read under its fenced prompt (:func:`strict_reading`).

    Args:
        response: The model's response (None when there is none).
        verdict: The deciding verdict (see :func:`~airbench_nb.scoring.run.foundation_verdicts`), or None.

    Returns:
        ``(correct, reason)``; ``correct`` is None for a failure (no usable response, no verdict, an abstention),
        which strict scoring counts wrong.
    """
    failed = failure_text(response)
    if failed is not None:
        return None, failed
    verdict = strict_reading(verdict)
    if verdict is None:
        return None, "no verdict"
    if verdict.correct is None:
        why = verdict.parse_error or verdict.raw or "no reason given"
        return None, f"judge {verdict.judge} abstained: {why}"
    return bool(verdict.correct), f"judge {verdict.judge}"


def official_chat(
    response: Response | None, verdict: Verdict | None, turn: int | None = None
) -> tuple[float | None, float | None, str]:
    """Read one Chat (item, order) verdict the way the official ``cal_score.py`` does.

    The judge's raw reply goes through :func:`parse_scores_official`; a scores-only judge (the proxy:
    :func:`~airbench_nb.judge.registry.scores_only`) or a verdict without a raw reply keeps its scores as given.

    Args:
        response: The model's response (None when there is none).
        verdict: The judge's verdict for this order, or None.
        turn: Multi-turn items: the turn the verdict judged (a turn the model answered is scored even when a later
            turn failed); None for a one-turn item.

    Returns:
        ``(model score, reference score, reason)``; both scores None for a failure, which is dropped.
    """
    failed = failure_text(response, turn)
    if failed is not None:
        return None, None, failed
    if verdict is None:
        return None, None, "no verdict"
    if verdict.raw is None or scores_only(verdict.judge):
        # No judge reply to parse (an offline proxy): the official parser has nothing to misread.
        if verdict.score_hypothesis is None or verdict.score_reference is None:
            return None, None, f"judge {verdict.judge}: {verdict.parse_error or 'no scores'}"
        return verdict.score_hypothesis, verdict.score_reference, f"judge {verdict.judge}: scores as given"
    parsed = parse_scores_official(verdict.raw)
    if parsed is None:
        return None, None, "official: reply is not two integers separated by one space"
    first, second = float(parsed[0]), float(parsed[1])
    if verdict.order == "hypothesis_first":
        return first, second, "official parser"
    return second, first, "official parser"


def strict_chat(
    response: Response | None, verdict: Verdict | None, turn: int | None = None
) -> tuple[float | None, float | None, str]:
    """Read one Chat (item, order) verdict under the strict protocol: the verdict's parsed scores.

    An LLM judge's verdict is read under its fenced prompt (:func:`strict_reading`).

    Args:
        response: The model's response (None when there is none).
        verdict: The judge's verdict for this order, or None.
        turn: Multi-turn items: the turn the verdict judged; None for a one-turn item.

    Returns:
        ``(model score, reference score, reason)``; both scores None for a failure, which is left out of the mean
        and counted.
    """
    failed = failure_text(response, turn)
    if failed is not None:
        return None, None, failed
    verdict = strict_reading(verdict)
    if verdict is None:
        return None, None, "no verdict"
    if verdict.score_hypothesis is None or verdict.score_reference is None:
        return None, None, f"judge {verdict.judge}: {verdict.parse_error or 'unscored'}"
    return verdict.score_hypothesis, verdict.score_reference, f"judge {verdict.judge}"


# The underscored names predate the public ones; modules such as airbench_nb.analysis.data import them.
_failure_text = failure_text
_strict_foundation = strict_foundation
_official_chat = official_chat
_strict_chat = strict_chat


def foundation_verdicts(
    verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None
) -> dict[str, Verdict]:
    """The deciding Foundation verdict of each item, as the strict protocol picks it.

    For each item the judges are tried in priority order and the first verdict that decided (``correct`` not
    None) wins; when every judge abstained, the first judge's verdict (an abstention). Several verdicts of one
    judge for one item: the last one.

    Args:
        verdicts: Verdicts of one model (any kind; only those of ``uids`` are read).
        uids: The Foundation items to pick verdicts for.
        judges: Judge specs in priority order; None: ``rule`` first, then the other judges present, sorted.

    Returns:
        ``{uid: verdict}`` for the items that have at least one verdict.
    """
    latest: dict[str, dict[str, Verdict]] = defaultdict(dict)
    for verdict in verdicts:
        if verdict.uid in uids:
            latest[verdict.uid][verdict.judge] = verdict  # the last verdict of a judge wins
    present = sorted({j for by_judge in latest.values() for j in by_judge})
    if judges is None:
        priority = [RULE_JUDGE, *[j for j in present if j != RULE_JUDGE]]
    else:
        priority = list(judges)
    chosen: dict[str, Verdict] = {}
    for uid, by_judge in latest.items():
        candidates = [by_judge[j] for j in priority if j in by_judge]
        decided = [v for v in candidates if (strict_reading(v) or v).correct is not None]
        if decided:
            chosen[uid] = decided[0]
        elif candidates:
            chosen[uid] = candidates[0]
    return chosen


INCOMPLETE_CONVERSATION = "strict: conversation left out, a turn has no score"
"""Reason of the scored units of a multi-turn conversation that strict scoring leaves out (see
:func:`chat_outcomes_of`)."""


def chat_outcomes_of(
    item: ChatItem,
    response: Response | None,
    verdicts: Mapping[tuple[str, str, int | None], Verdict],
    protocol: str,
) -> list[ChatOutcome]:
    """The outcomes of one Chat item under one protocol: one per order, or per (turn, order) for a multi-turn item.

    A multi-turn conversation is scored turn by turn (:func:`~airbench_nb.scoring.outcomes.strict_chat` /
    :func:`~airbench_nb.scoring.outcomes.official_chat` on each turn's verdict, with the turn's own answer). A turn
    the model did not answer (a later turn failed: the answers before it are kept) or whose verdicts are unscored
    is a *failed turn*:

    - ``official``: each failed (turn, order) is dropped, as the official script drops an unparsed reply; the
      conversation counts with the turns that were scored.
    - ``strict``: a conversation counts only when every turn has a score in at least one order (for a one-turn
      item, the rule strict already applies: an item with no scored order is a failure). Otherwise every unit of
      the conversation is a failure, left out of the mean and counted (reason :data:`INCOMPLETE_CONVERSATION` for
      the units that had scores): scored on its first turns alone, a model that breaks down on follow-ups would be
      rated on the easier part of the conversation only. Per-turn scores (``turns`` of the section) are computed
      from the same units, so a turn left out here is left out there too.

    Args:
        item: The Chat item.
        response: The model's latest response (None when there is none).
        verdicts: The chosen judge's verdicts by ``(uid, order, turn)``.
        protocol: ``official`` or ``strict``.

    Returns:
        The outcomes, turns in order, each turn's two orders together.
    """
    parse = official_chat if protocol == "official" else strict_chat
    if not item.multi_turn:
        out = []
        for order in CHAT_ORDERS:
            verdict = verdicts.get((item.uid, order, None))
            m, r, reason = parse(response, verdict)
            out.append(ChatOutcome(item.task, item.uid, order, m, r, reason, **screened(verdict)))
        return _clustered(item, out)
    out = []
    for turn in range(len(item.turns)):
        for order in CHAT_ORDERS:
            verdict = verdicts.get((item.uid, order, turn))
            m, r, reason = parse(response, verdict, turn)
            out.append(ChatOutcome(item.task, item.uid, order, m, r, reason, turn=turn, **screened(verdict)))
    if protocol == "strict":
        scored_turns = {o.turn for o in out if o.model is not None and o.reference is not None}
        if len(scored_turns) < len(item.turns):
            out = [
                o
                if o.model is None
                else ChatOutcome(o.task, o.unit, o.order, None, None, INCOMPLETE_CONVERSATION, o.turn, o.judge, o.flags)
                for o in out
            ]
    return _clustered(item, out)


def _clustered(item: Any, outcomes: list[ChatOutcome]) -> list[ChatOutcome]:
    """The outcomes with the item's cluster (:func:`airbench_nb.records.cluster_of`)."""
    from dataclasses import replace

    from airbench_nb.records import cluster_of

    key = cluster_of(item)
    return [replace(o, cluster=key) for o in outcomes]


def asked_group(item: Any) -> tuple[str, ...]:
    """The group of items a model is asked together or not at all: a task, a translation direction, or a kind.

    Foundation and Chat items group by task, translation items by direction, the others by kind. A specialist serves
    some items of a kind and declines the others as not applicable (``faster-whisper:`` on a multilingual checkpoint:
    Spoken_Language_Identification among the Foundation tasks, X -> en among the translation directions); the runner
    writes no response for those (:func:`~airbench_nb.models.base.not_applicable_reason`). An audio-reliance control
    makes a group of its own with its task (or kind) and control (a backend that cannot be prompted without audio is
    not asked the ``no_audio`` controls of a task it answers).
    """
    kind = getattr(item, "kind", "")
    if kind == "translation":
        group: tuple[str, ...] = (kind, str(item.source_language), str(item.target_language))
    elif kind in ("foundation", "chat"):
        group = (kind, str(item.task))
    else:
        group = (kind,)
    control = (getattr(item, "meta", None) or {}).get(CONTROL_KEY) if is_control(item) else None
    return group if control is None else (*group, "control", str(control))


def asked_items(items: Iterable[Any], answered: Iterable[str]) -> list[Any]:
    """The items of the groups (:func:`asked_group`) the model answered at least one item of.

    A group with no response at all was not asked (as a kind the model does not serve): its items are left out of
    the model's scores, never counted as failures. A group with some responses keeps every item: a missing or failed
    answer there is a failure, as always.
    """
    items = list(items)
    answered = set(answered)
    asked = {asked_group(i) for i in items if i.uid in answered}
    return [i for i in items if asked_group(i) in asked]
