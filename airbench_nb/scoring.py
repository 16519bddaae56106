"""Scoring: the ``official`` and ``strict`` protocols side by side, each score with n, failures and a 95% CI.

Two protocols read the same run:

- ``official`` reproduces the AIR-Bench scripts. Foundation: the response is stripped and its newlines deleted
  (as ``score_foundation.py`` does), then :func:`~airbench_nb.judge.extract.official_extract` reads its first or
  second-to-last character; judge verdicts are not used. A response with no letter there, an empty one, or an
  error is a *failure* and is dropped from the denominator (which inflates accuracy); a letter beyond the item's
  options counts wrong. Chat: the judge's raw reply goes through
  :func:`~airbench_nb.judge.chat_parse.parse_scores_official`; failures are dropped. The offline ``proxy``
  judge (:data:`SCORES_ONLY_JUDGES`) and any verdict without a raw reply keep their scores: their ``raw`` is an
  explanation, not a judge reply, so there is nothing for the official parser to read.
- ``strict`` (the default) fixes the known flaws. Foundation: the verdict's ``correct`` decides (rule or LLM
  judge); a missing response, an error response, a missing verdict or an abstention is a failure and counts
  *wrong*. Chat: the verdict's parsed scores; an unscored (item, order) cannot be guessed, so it is left out of
  the mean but counted in ``failures`` and reported.

Aggregation is the same in both protocols (the official one). Foundation: accuracy per subset
``f"{task}_{dataset}"`` and per task (the task's items pooled over its datasets); a category is the unweighted
mean of its tasks; the Average is the mean of the category means present. Chat: the model's score is its
``score_hypothesis``; a category (speech, sound, music) is the mean over its items and both orders; Mixed is the
mean of the task means of ``speech_and_sound_QA`` and ``speech_and_music_QA``; the Average is the mean of the
four categories present. The reference's mean score and the relative score (model / reference) come with every
Chat score.

Every :class:`Score` carries ``n`` (the number of units its value is computed over: items for Foundation,
(item, order) pairs for Chat), ``failures`` (units that failed: dropped from ``n`` in ``official`` and in strict
Chat, inside ``n`` as wrong answers in strict Foundation) and a percentile bootstrap 95% confidence interval:
items are resampled with replacement within each stratum (a Foundation subset, a Chat task) and the whole
aggregate (subset -> task -> category -> Average) is recomputed per replicate. Each stratum draws from its own
generator seeded by ``(seed, crc32(stratum))``, so both protocols share the same resamples and adding a task
leaves the other tasks' intervals unchanged. Same inputs, same seed: same numbers.

Which verdict decides a strict Foundation item: verdicts of the scored model are grouped by judge; for each item
the judges are tried in priority order (``judges``, default ``rule`` first, then the other judge specs present in
sorted order) and the first verdict that decided (``correct`` not None) wins; when every judge abstained the item
is a failure. Several verdicts of one judge for one item: the last one (verdict files are append-only). Chat uses
one judge: the first of ``judges`` that has Chat verdicts, or the only Chat judge present.

Official-format files (:func:`score_official_files`): one bad line never stops the scoring. A line that cannot be
placed in a task (invalid JSON, not an object, missing ``task_name`` or ``dataset_name``, Foundation choices or
``answer_gt`` missing or not matching) is *invalid*: it is counted in ``invalid`` and described in ``errors``
(file, line, field). A placeable line whose ``response`` or ``gpt-score`` is missing or not a string is a failure
of that item in both protocols. Pass ``raise_on_error=True`` to raise the first problem instead.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from airbench_nb.judge.chat_parse import parse_scores_official, parse_scores_strict
from airbench_nb.judge.extract import LETTERS, extract_choice, official_extract
from airbench_nb.manifests import ManifestError
from airbench_nb.official import normalise_choice
from airbench_nb.records import CHAT_TASKS, FOUNDATION_TASKS, AudioStatus, ChatItem, FoundationItem, Response, Verdict

logger = logging.getLogger(__name__)

PROTOCOLS: tuple[str, ...] = ("official", "strict")
"""The two scoring protocols, in the order they are reported."""

DEFAULT_PROTOCOL = "strict"
"""Protocol used when none is named."""

DEFAULT_REPS = 1000
"""Bootstrap replicates per confidence interval."""

CONFIDENCE = 0.95
"""Coverage of the percentile bootstrap intervals."""

RULE_JUDGE = "rule"
"""Spec of the rule-based Foundation judge, tried first by default."""

FOUNDATION_CATEGORIES: tuple[str, ...] = ("speech", "sound", "music")
"""Foundation categories, in report order."""

CHAT_CATEGORIES: tuple[str, ...] = ("speech", "sound", "music", "mixed")
"""Chat categories, in report order."""

MIXED_TASKS: tuple[str, ...] = ("speech_and_sound_QA", "speech_and_music_QA")
"""Chat tasks whose task means are averaged (unweighted) into the Mixed category."""

CHAT_ORDERS: tuple[str, ...] = ("reference_first", "hypothesis_first")
"""The two orders a Chat judge sees the answers in."""

FOUNDATION_FILE_FIELDS: tuple[str, ...] = ("task_name", "dataset_name", "choice_a", "choice_b", "answer_gt")
"""Fields an official Foundation result line needs to be placed and scored (``response`` is checked apart)."""

SCORES_ONLY_JUDGES: tuple[str, ...] = ("proxy",)
"""Judge specs (or ``spec:`` prefixes) whose ``raw`` explains the scores instead of being a judge reply."""

CHAT_SCORE_FIELD = "gpt-score"
"""Field of an official Chat judge list that holds the judge's raw reply."""

Protocol = Literal["official", "strict", "both"]


@dataclass(frozen=True)
class Score:
    """One score with its sample size, failures and bootstrap confidence interval."""

    value: float | None
    """The score (accuracy in 0-1 for Foundation, mean 1-10 score for Chat); None when nothing was scored."""
    n: int
    """Units the value is computed over: items (Foundation) or (item, order) pairs (Chat)."""
    failures: int
    """Units that failed (no answer, no letter, unparsed verdict, ...): dropped from ``n`` in the official
    protocol and in strict Chat, counted wrong inside ``n`` in strict Foundation."""
    ci_low: float | None = None
    """Lower end of the 95% percentile bootstrap interval; None without replicates."""
    ci_high: float | None = None
    """Upper end of the 95% percentile bootstrap interval; None without replicates."""
    correct: int | None = None
    """Foundation: number of correct answers; None for Chat."""

    def as_dict(self) -> dict[str, Any]:
        """The score as a JSON-serialisable dict (``correct`` only when set)."""
        out = asdict(self)
        if out["correct"] is None:
            del out["correct"]
        return out


@dataclass(frozen=True)
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

    @property
    def subset(self) -> str:
        """The official subset name ``f"{task}_{dataset}"``."""
        return f"{self.task}_{self.dataset}"


@dataclass(frozen=True)
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


# --------------------------------------------------------------------------------------------------------------
# per-item outcomes


def _failure_text(response: Response | None) -> str | None:
    if response is None:
        return "no response"
    if response.error is not None:
        return f"response error: {response.error}"
    if response.text is None:
        return "response has no text"
    return None


def official_foundation_correct(text: str | None, n_choices: int, answer: int) -> tuple[bool | None, str]:
    """Score one Foundation answer the way the official ``score_foundation.py`` does.

    The response is stripped and its newlines deleted; ``"None"`` and the empty string are failures; then the
    first character, else the second-to-last, must be a letter A-D (:func:`official_extract`). A letter past the
    item's options is read and counts wrong.

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


def _strict_foundation(response: Response | None, verdict: Verdict | None) -> tuple[bool | None, str]:
    failed = _failure_text(response)
    if failed is not None:
        return None, failed
    if verdict is None:
        return None, "no verdict"
    if verdict.correct is None:
        why = verdict.parse_error or verdict.raw or "no reason given"
        return None, f"judge {verdict.judge} abstained: {why}"
    return bool(verdict.correct), f"judge {verdict.judge}"


def _official_chat(response: Response | None, verdict: Verdict | None) -> tuple[float | None, float | None, str]:
    failed = _failure_text(response)
    if failed is not None:
        return None, None, failed
    if verdict is None:
        return None, None, "no verdict"
    scores_only = any(verdict.judge == j or verdict.judge.startswith(f"{j}:") for j in SCORES_ONLY_JUDGES)
    if verdict.raw is None or scores_only:
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


def _strict_chat(response: Response | None, verdict: Verdict | None) -> tuple[float | None, float | None, str]:
    failed = _failure_text(response)
    if failed is not None:
        return None, None, failed
    if verdict is None:
        return None, None, "no verdict"
    if verdict.score_hypothesis is None or verdict.score_reference is None:
        return None, None, f"judge {verdict.judge}: {verdict.parse_error or 'unscored'}"
    return verdict.score_hypothesis, verdict.score_reference, f"judge {verdict.judge}"


# --------------------------------------------------------------------------------------------------------------
# bootstrap and aggregation


def _resampled(values: np.ndarray, reps: int, seed: int, key: str) -> np.ndarray:
    """Column sums of ``values`` (units x k): row 0 over all units, rows 1.. over bootstrap resamples."""
    n, k = values.shape
    out = np.zeros((reps + 1, k))
    out[0] = values.sum(axis=0)
    if reps and n:
        rng = np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])
        idx = rng.integers(0, n, size=(reps, n))
        for j in range(k):
            out[1:, j] = values[:, j][idx].sum(axis=1)
    return out


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.full(num.shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _nanmean(arrays: Sequence[np.ndarray], size: int) -> np.ndarray:
    """Element-wise mean of the arrays, ignoring NaN; NaN where every array is NaN (or there are none)."""
    if not arrays:
        return np.full(size, np.nan)
    stack = np.vstack(arrays)
    ok = ~np.isnan(stack)
    total = np.where(ok, stack, 0.0).sum(axis=0)
    return _ratio(total, ok.sum(axis=0).astype(float))


def _score(values: np.ndarray, n: int, failures: int, correct: int | None = None) -> Score:
    point = values[0]
    replicates = values[1:][~np.isnan(values[1:])]
    low = high = None
    if replicates.size:
        tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
        low, high = (float(x) for x in np.percentile(replicates, [tail, 100.0 - tail]))
    value = None if np.isnan(point) else float(point)
    return Score(value=value, n=int(n), failures=int(failures), ci_low=low, ci_high=high, correct=correct)


def _task_order(task: str, table: dict[str, str]) -> tuple[int, str]:
    names = list(table)
    return (names.index(task), task) if task in table else (len(names), task)


def _foundation_section(outcomes: Sequence[FoundationOutcome], protocol: str, reps: int, seed: int) -> dict[str, Any]:
    """Aggregate Foundation outcomes of one protocol into subsets, tasks, categories and the Average."""
    size = reps + 1
    by_subset: dict[str, list[FoundationOutcome]] = defaultdict(list)
    for outcome in outcomes:
        by_subset[outcome.subset].append(outcome)
    order = sorted(by_subset, key=lambda s: (*_task_order(by_subset[s][0].task, FOUNDATION_TASKS), s))

    sums: dict[str, np.ndarray] = {}
    stats: dict[str, tuple[int, int, int]] = {}  # n, failures, correct
    subsets: dict[str, Any] = {}
    for subset in order:
        group = by_subset[subset]
        right = np.array([1.0 if o.correct else 0.0 for o in group])
        if protocol == "official":
            counted = np.array([0.0 if o.correct is None else 1.0 for o in group])
        else:
            counted = np.ones(len(group))
        sums[subset] = _resampled(np.column_stack([right, counted]), reps, seed, f"foundation/{subset}")
        failures = sum(o.correct is None for o in group)
        stats[subset] = (int(counted.sum()), failures, int(right.sum()))
        subsets[subset] = _accuracy(_score(_ratio(sums[subset][:, 0], sums[subset][:, 1]), *stats[subset]))

    task_of = {s: by_subset[s][0].task for s in order}
    tasks_order = list(dict.fromkeys(task_of[s] for s in order))
    task_values: dict[str, np.ndarray] = {}
    task_stats: dict[str, tuple[int, int, int]] = {}
    tasks: dict[str, Any] = {}
    for task in tasks_order:
        members = [s for s in order if task_of[s] == task]
        total = sum(sums[s] for s in members)
        task_values[task] = _ratio(total[:, 0], total[:, 1])
        task_stats[task] = _sum_stats(stats[s] for s in members)
        tasks[task] = _accuracy(_score(task_values[task], *task_stats[task]))

    categories: dict[str, Any] = {}
    category_values: list[np.ndarray] = []
    for category in FOUNDATION_CATEGORIES:
        members = [t for t in tasks_order if FOUNDATION_TASKS.get(t) == category]
        if not members:
            continue
        values = _nanmean([task_values[t] for t in members], size)
        category_values.append(values)
        categories[category] = _accuracy(_score(values, *_sum_stats(task_stats[t] for t in members)))
    known = [t for t in tasks_order if t in FOUNDATION_TASKS]
    average = _accuracy(_score(_nanmean(category_values, size), *_sum_stats(task_stats[t] for t in known)))
    failures = sum(stats[s][1] for s in order)
    section: dict[str, Any] = {
        "subsets": subsets,
        "tasks": tasks,
        "categories": categories,
        "average": average,
        "items": len(outcomes),
        "failed": failures,
        "failure_reasons": dict(Counter(o.reason for o in outcomes if o.correct is None).most_common()),
    }
    uncategorised = [t for t in tasks_order if t not in FOUNDATION_TASKS]
    if uncategorised:
        logger.warning("Foundation tasks outside the official list, left out of categories: %s", uncategorised)
        section["uncategorised_tasks"] = uncategorised
    return section


def _sum_stats(stats: Iterable[tuple[int, int, int]]) -> tuple[int, int, int]:
    """Element-wise sum of ``(n, failures, correct)`` triples."""
    n = failures = correct = 0
    for a, b, c in stats:
        n, failures, correct = n + a, failures + b, correct + c
    return n, failures, correct


def _accuracy(score: Score) -> dict[str, Any]:
    """A Foundation score as a dict, with ``accuracy`` (the official script's name) beside ``value``."""
    out = score.as_dict()
    out["accuracy"] = score.value
    return out


def _chat_entry(model: np.ndarray, reference: np.ndarray, n: int, failures: int) -> dict[str, Any]:
    out = _score(model, n, failures).as_dict()
    out["reference"] = _score(reference, n, failures).as_dict()
    out["relative"] = _score(_ratio(model, reference), n, failures).as_dict()
    return out


def _chat_section(outcomes: Sequence[ChatOutcome], reps: int, seed: int) -> dict[str, Any]:
    """Aggregate Chat outcomes of one protocol into tasks, categories and the Average."""
    size = reps + 1
    by_task: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
    for outcome in outcomes:
        units = by_task[outcome.task]
        row = units.setdefault(outcome.unit, np.zeros(4))  # model sum, reference sum, scored, failed
        if outcome.model is None or outcome.reference is None:
            row[3] += 1
        else:
            row += (outcome.model, outcome.reference, 1.0, 0.0)
    order = sorted(by_task, key=lambda t: _task_order(t, CHAT_TASKS))

    sums: dict[str, np.ndarray] = {}
    tasks: dict[str, Any] = {}
    for task in order:
        values = np.vstack(list(by_task[task].values()))
        sums[task] = _resampled(values, reps, seed, f"chat/{task}")
        total = sums[task][0]
        tasks[task] = _chat_entry(
            _ratio(sums[task][:, 0], sums[task][:, 2]), _ratio(sums[task][:, 1], sums[task][:, 2]), total[2], total[3]
        )

    categories: dict[str, Any] = {}
    model_values: list[np.ndarray] = []
    reference_values: list[np.ndarray] = []
    for category in CHAT_CATEGORIES:
        members = [t for t in order if CHAT_TASKS.get(t) == category]
        if not members:
            continue
        if category == "mixed":
            model = _nanmean([_ratio(sums[t][:, 0], sums[t][:, 2]) for t in members], size)
            reference = _nanmean([_ratio(sums[t][:, 1], sums[t][:, 2]) for t in members], size)
        else:
            pooled = sum(sums[t] for t in members)
            model, reference = _ratio(pooled[:, 0], pooled[:, 2]), _ratio(pooled[:, 1], pooled[:, 2])
        model_values.append(model)
        reference_values.append(reference)
        n = sum(sums[t][0, 2] for t in members)
        categories[category] = _chat_entry(model, reference, n, sum(sums[t][0, 3] for t in members))
    n_all = sum(sums[t][0, 2] for t in order)
    failed = int(sum(sums[t][0, 3] for t in order))
    average = _chat_entry(_nanmean(model_values, size), _nanmean(reference_values, size), n_all, failed)
    return {
        "tasks": tasks,
        "categories": categories,
        "average": average,
        "items": sum(len(by_task[t]) for t in order),
        "orders": sorted({o.order for o in outcomes}, key=CHAT_ORDERS.index),
        "failed": failed,
        "failure_reasons": dict(Counter(o.reason for o in outcomes if o.model is None).most_common()),
    }


def _protocols(protocol: str) -> tuple[str, ...]:
    if protocol == "both":
        return PROTOCOLS
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}: use 'official', 'strict' or 'both'")
    return (protocol,)


# --------------------------------------------------------------------------------------------------------------
# scoring a kit run


def _pick_model(responses: Sequence[Response], model: str | None) -> str | None:
    if model is not None:
        return model
    models = sorted({r.model for r in responses})
    if len(models) > 1:
        raise ValueError(f"responses of several models ({', '.join(models)}): pass model= to choose one")
    return models[0] if models else None


def _foundation_verdicts(
    verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None
) -> dict[str, Verdict]:
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
        decided = [v for v in candidates if v.correct is not None]
        if decided:
            chosen[uid] = decided[0]
        elif candidates:
            chosen[uid] = candidates[0]
    return chosen


def _chat_verdicts(
    verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None
) -> dict[tuple[str, str], Verdict]:
    relevant = [v for v in verdicts if v.uid in uids and v.order in CHAT_ORDERS]
    present = sorted({v.judge for v in relevant})
    if not present:
        return {}
    if judges is None:
        if len(present) > 1:
            raise ValueError(f"Chat verdicts of several judges ({', '.join(present)}): pass judges= to choose one")
        judge = present[0]
    else:
        usable = [j for j in judges if j in present]
        if not usable:
            logger.warning("no Chat verdicts by %s (present: %s)", list(judges), present)
            return {}
        judge = usable[0]
    return {(v.uid, v.order): v for v in relevant if v.judge == judge}


PROXY_SHORT = "proxy (embedding similarity, not an LLM)"
"""Short form of :data:`PROXY_LABEL` for table columns."""
PROXY_LABEL = "proxy (sentence-embedding similarity mapped to 1-10, not an LLM judgment)"
"""How Chat scores from the ``proxy`` judge are labelled in every table."""


def score_run(
    items: Sequence[FoundationItem | ChatItem],
    responses: Sequence[Response],
    verdicts: Sequence[Verdict] = (),
    protocol: Protocol = DEFAULT_PROTOCOL,
    model: str | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    judges: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Score one model's run under the official and/or strict protocol.

    Args:
        items: The benchmark items (Foundation and/or Chat); uids must be unique.
        responses: Model responses; the last response per uid wins (a resumed run may append a retry).
        verdicts: Judge verdicts (Foundation: ``single``; Chat: both orders).
        protocol: ``official``, ``strict`` or ``both``.
        model: Model spec to score; None when the responses come from a single model.
        seed: Seed of the bootstrap.
        reps: Bootstrap replicates (0: no confidence intervals).
        judges: Judge specs in priority order (see the module docstring); None for the default.

    Returns:
        ``{protocol: {"protocol", "model", "seed", "reps", "foundation", "chat"}}`` for each protocol asked for;
        a section is None when the model answered no item of that kind. JSON-serialisable.

    Raises:
        ValueError: On an unknown protocol, duplicate item uids, or several models or Chat judges to choose from.
    """
    wanted = _protocols(protocol)
    if reps < 0:
        raise ValueError(f"reps must be >= 0, got {reps}")
    seen: set[str] = set()
    for item in items:
        if item.uid in seen:
            raise ValueError(f"duplicate item uid {item.uid!r}")
        seen.add(item.uid)
    model = _pick_model(responses, model)
    by_uid = {r.uid: r for r in responses if r.model == model}
    own = [v for v in verdicts if v.model == model]
    # Items whose audio is missing, empty or corrupt cannot be answered by any model: they are a defect of the data,
    # not a failure of the model. Both protocols leave them out (the official inference script skips them too) and
    # every table reports how many there were.
    usable = [i for i in items if i.audio_status in (None, AudioStatus.ok)]
    unusable = Counter(i.kind for i in items if i.audio_status not in (None, AudioStatus.ok))
    foundation = [i for i in usable if isinstance(i, FoundationItem)]
    chat = [i for i in usable if isinstance(i, ChatItem)]
    answered_foundation = any(i.uid in by_uid for i in foundation)
    answered_chat = any(i.uid in by_uid for i in chat)
    f_verdicts = _foundation_verdicts(own, {i.uid for i in foundation}, judges)
    c_verdicts = _chat_verdicts(own, {i.uid for i in chat}, judges) if answered_chat else {}

    result: dict[str, Any] = {}
    for name in wanted:
        table: dict[str, Any] = {"protocol": name, "model": model, "seed": seed, "reps": reps}
        table["unusable_items"] = {
            "foundation": unusable.get("foundation", 0),
            "chat": unusable.get("chat", 0),
            "why": "audio missing, empty or corrupt: left out of both protocols and counted here",
        }
        chat_judges = sorted({v.judge for v in c_verdicts.values()})
        table["judges"] = {
            "foundation": sorted({v.judge for v in f_verdicts.values()}),
            "chat": chat_judges,
            "chat_label": ", ".join(PROXY_LABEL if j in SCORES_ONLY_JUDGES else j for j in chat_judges) or None,
        }
        table["foundation"] = None
        if answered_foundation:
            outcomes = []
            for item in foundation:
                response = by_uid.get(item.uid)
                failed = _failure_text(response)
                if name == "strict":
                    correct, reason = _strict_foundation(response, f_verdicts.get(item.uid))
                elif failed is not None or response is None:
                    correct, reason = None, failed or "no response"
                else:
                    correct, reason = official_foundation_correct(response.text, len(item.choices), item.answer)
                outcomes.append(FoundationOutcome(item.task, item.dataset, correct, reason))
            table["foundation"] = _foundation_section(outcomes, name, reps, seed)
        table["chat"] = None
        if answered_chat:
            chat_outcomes = []
            parse = _official_chat if name == "official" else _strict_chat
            for item in chat:
                for order in CHAT_ORDERS:
                    m, r, reason = parse(by_uid.get(item.uid), c_verdicts.get((item.uid, order)))
                    chat_outcomes.append(ChatOutcome(item.task, item.uid, order, m, r, reason))
            table["chat"] = _chat_section(chat_outcomes, reps, seed)
        result[name] = table
        _log_summary(name, table)
    return result


def _log_summary(name: str, table: dict[str, Any]) -> None:
    for kind in ("foundation", "chat"):
        section = table.get(kind)
        if section:
            logger.info(
                "%s %s: average %s, %d failed", name, kind, section["average"]["value"], section.get("failed", 0)
            )


# --------------------------------------------------------------------------------------------------------------
# official-format files


def _read_entries(path: Path) -> Iterator[tuple[int, Any, str | None]]:
    """``(line or entry number, object, error)`` for a JSONL file or a JSON list (entries numbered from 1)."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ManifestError(str(path), exc.lineno, f"invalid JSON list: {exc.msg} (column {exc.colno})") from None
        for index, obj in enumerate(data, start=1):
            yield index, obj, None
        return
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line), None
        except json.JSONDecodeError as exc:
            yield lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})"


class _Problems:
    """Invalid lines of the official files: counted and described, or raised at once."""

    def __init__(self, raise_on_error: bool) -> None:
        self.raise_on_error = raise_on_error
        self.errors: list[ManifestError] = []

    def add(self, path: Path, line: int, message: str, field: str | None = None) -> None:
        error = ManifestError(str(path), line, message, field=field)
        if self.raise_on_error:
            raise error
        logger.warning("skipping invalid line: %s", error)
        self.errors.append(error)


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return str(value)


def _gold_index(answer: str, choices: list[str]) -> int | None:
    """Index of the choice equal to ``answer``, or None.

    The official rule first (the first exact match, a to d), else a unique match after folding case and
    whitespace and dropping a final period.
    """
    for index, choice in enumerate(choices):
        if choice == answer:
            return index
    loose = [i for i, c in enumerate(choices) if normalise_choice(c) == normalise_choice(answer)]
    return loose[0] if len(loose) == 1 else None


def _foundation_file(path: Path, problems: _Problems) -> dict[str, list[FoundationOutcome]]:
    outcomes: dict[str, list[FoundationOutcome]] = {"official": [], "strict": []}
    for line, row, error in _read_entries(path):
        if error is not None:
            problems.add(path, line, error)
            continue
        if not isinstance(row, dict):
            problems.add(path, line, f"expected a JSON object, got {type(row).__name__}")
            continue
        missing = [f for f in FOUNDATION_FILE_FIELDS if _as_text(row.get(f)) is None]
        if missing:
            problems.add(path, line, f"missing or not text: {', '.join(missing)}", field=missing[0])
            continue
        task, dataset = str(row["task_name"]), str(row["dataset_name"])
        choices = [str(row["choice_a"]), str(row["choice_b"])]
        extra = [_as_text(row.get("choice_c")), _as_text(row.get("choice_d"))]
        if extra[0] is None and extra[1] is not None:
            problems.add(path, line, "choice_d is given without choice_c", field="choice_c")
            continue
        choices.extend(c for c in extra if c is not None)
        gold = _gold_index(str(row["answer_gt"]), choices)
        if gold is None:
            problems.add(path, line, f"answer_gt {row['answer_gt']!r} matches none of {choices!r}", field="answer_gt")
            continue
        response = row.get("response")
        if not isinstance(response, str):
            why = "no 'response' field" if "response" not in row else f"response is {type(response).__name__}"
            outcomes["official"].append(FoundationOutcome(task, dataset, None, why))
            outcomes["strict"].append(FoundationOutcome(task, dataset, None, why))
            continue
        correct, reason = official_foundation_correct(response, len(choices), gold)
        outcomes["official"].append(FoundationOutcome(task, dataset, correct, reason))
        extraction = extract_choice(response, choices)
        strict = None if extraction.choice is None else extraction.choice == gold
        outcomes["strict"].append(FoundationOutcome(task, dataset, strict, extraction.reason))
    return outcomes


def _chat_file(path: Path, order: str, problems: _Problems) -> dict[str, list[ChatOutcome]]:
    """Outcomes of one Chat judge list; ``order`` says whether score 1 is the reference or the model."""
    outcomes: dict[str, list[ChatOutcome]] = {"official": [], "strict": []}
    for line, row, error in _read_entries(path):
        if error is not None:
            problems.add(path, line, error)
            continue
        if not isinstance(row, dict):
            problems.add(path, line, f"expected a JSON object, got {type(row).__name__}")
            continue
        task = row.get("task_name")
        if task not in CHAT_TASKS:
            message = "missing 'task_name'" if task is None else f"unknown Chat task {task!r}"
            problems.add(path, line, message, field="task_name")
            continue
        uniq = _as_text(row.get("uniq_id"))
        unit = f"{task}/{row.get('dataset_name')}/{uniq}" if uniq is not None else f"{path}:{line}"
        reply = row.get(CHAT_SCORE_FIELD)
        if not isinstance(reply, str):
            why = f"no {CHAT_SCORE_FIELD!r} field" if CHAT_SCORE_FIELD not in row else "judge reply is not text"
            for name in PROTOCOLS:
                outcomes[name].append(ChatOutcome(task, unit, order, None, None, why))
            continue
        official = parse_scores_official(reply)
        if official is None:
            reason = "official: reply is not two integers separated by one space"
            outcomes["official"].append(ChatOutcome(task, unit, order, None, None, reason))
        else:
            outcomes["official"].append(ChatOutcome(task, unit, order, *_by_order(official, order), "official parser"))
        strict = parse_scores_strict(reply)
        if isinstance(strict, str):
            outcomes["strict"].append(ChatOutcome(task, unit, order, None, None, strict))
        else:
            outcomes["strict"].append(ChatOutcome(task, unit, order, *_by_order(strict, order), "strict parser"))
    return outcomes


def _by_order(scores: tuple[float, float], order: str) -> tuple[float, float]:
    """``(model, reference)`` from ``(score 1, score 2)``."""
    first, second = float(scores[0]), float(scores[1])
    return (first, second) if order == "hypothesis_first" else (second, first)


def score_official_files(
    foundation: str | Path | None = None,
    chat: str | Path | None = None,
    chat_swapped: str | Path | None = None,
    seed: int = 0,
    *,
    reps: int = DEFAULT_REPS,
    raise_on_error: bool = False,
) -> dict[str, Any]:
    """Re-score result files in the official AIR-Bench formats with both protocols.

    Args:
        foundation: Foundation results JSONL: the official meta fields (``choice_a``.. ``choice_d``, ``answer_gt``
            as the text of the right choice, ``task_name``, ``dataset_name``, ...) plus ``response``.
        chat: Chat judge list (JSON list or JSONL) with ``task_name`` and ``gpt-score``, the reference shown
            first: score 1 is the reference's, score 2 the model's.
        chat_swapped: The same with the order swapped: score 1 is the model's.
        seed: Seed of the bootstrap.
        reps: Bootstrap replicates.
        raise_on_error: Raise the first invalid line instead of counting it.

    Returns:
        ``{"official": table, "strict": table}``; each table has ``foundation`` (``subsets``, ``tasks``,
        ``categories``, ``average``, ``failed``, ``invalid``, ``errors``) and ``chat`` (``tasks``, ``categories``,
        ``average``, ``failed``, ``invalid``, ``errors``), a section being None when its files were not given.
        The official protocol uses :func:`official_extract` and :func:`parse_scores_official`, the strict one
        :func:`extract_choice` and :func:`parse_scores_strict`.

    Raises:
        FileNotFoundError: If a named file does not exist.
        ManifestError: On a Chat file that starts as a JSON list but is not valid JSON, or on any invalid line
            with ``raise_on_error``.
    """
    if foundation is None and chat is None and chat_swapped is None:
        raise ValueError("nothing to score: give a Foundation results file and/or Chat judge files")
    for given in (foundation, chat, chat_swapped):
        if given is not None and not Path(given).is_file():
            raise FileNotFoundError(f"{given}: no such file")
    result: dict[str, Any] = {name: {"protocol": name, "seed": seed, "reps": reps} for name in PROTOCOLS}

    f_problems = _Problems(raise_on_error)
    f_outcomes = _foundation_file(Path(foundation), f_problems) if foundation is not None else None
    c_problems = _Problems(raise_on_error)
    c_outcomes: dict[str, list[ChatOutcome]] = {name: [] for name in PROTOCOLS}
    for path, order in ((chat, "reference_first"), (chat_swapped, "hypothesis_first")):
        if path is not None:
            for name, outcomes in _chat_file(Path(path), order, c_problems).items():
                c_outcomes[name].extend(outcomes)
    if (chat is None) != (chat_swapped is None):
        logger.warning("only one Chat order given: the Chat scores cover that order alone")

    for name in PROTOCOLS:
        table = result[name]
        table["foundation"] = None
        if f_outcomes is not None:
            section = _foundation_section(f_outcomes[name], name, reps, seed)
            section.update(invalid=len(f_problems.errors), errors=[str(e) for e in f_problems.errors])
            section["source"] = str(foundation)
            table["foundation"] = section
        table["chat"] = None
        if chat is not None or chat_swapped is not None:
            section = _chat_section(c_outcomes[name], reps, seed)
            section.update(invalid=len(c_problems.errors), errors=[str(e) for e in c_problems.errors])
            section["source"] = [str(p) for p in (chat, chat_swapped) if p is not None]
            table["chat"] = section
        _log_summary(name, table)
    return result


# --------------------------------------------------------------------------------------------------------------
# tables

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
            levels = [("subset", "subsets"), ("task", "tasks"), ("category", "categories")]
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
        category scores with their n, failures and CI; and the full :func:`score_run` results keyed by
        ``"<model> | chat judge <judge>"``.
    """
    import pandas as pd

    from airbench_nb.manifests import read_manifest, read_records

    items = [i for path in manifests.values() for i in read_manifest(path)]
    rows: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
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
                    row[f"{bench}_failed"] = section.get("failed")
                    for category, entry in (section.get("categories") or {}).items():
                        row[f"{bench}_{category}"] = entry.get("value") if entry else None
                rows.append(row)
    return pd.DataFrame(rows), results
