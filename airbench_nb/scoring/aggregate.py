"""Bootstrap and aggregation: subsets, tasks, categories and the Average, each with n, failures and a CI."""

from __future__ import annotations

import copy
import logging
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from airbench_nb.records import (
    ALL_CHAT_TASKS,
    ALL_FOUNDATION_TASKS,
    FOUNDATION_TASKS,
    KIT_CHAT_TASKS,
    KIT_FOUNDATION_TASKS,
)
from airbench_nb.score_table import ScoreSection
from airbench_nb.scoring.outcomes import CHAT_ORDERS, PROTOCOLS, ChatOutcome, FoundationOutcome
from airbench_nb.scoring.resample import CONFIDENCE as CONFIDENCE  # coverage of the intervals (re-exported)
from airbench_nb.scoring.resample import cluster_codes

logger = logging.getLogger(__name__)

DEFAULT_REPS = 1000
"""Bootstrap replicates per confidence interval."""

FOUNDATION_CATEGORIES: tuple[str, ...] = ("speech", "sound", "music")
"""Foundation categories, in report order."""

CHAT_CATEGORIES: tuple[str, ...] = ("speech", "sound", "music", "mixed")
"""Chat categories, in report order."""

KIT_FOUNDATION_CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(KIT_FOUNDATION_TASKS.values()))
"""The kit's own Foundation categories (``multi-clip``): shown in their own rows, left out of the Average."""

KIT_CHAT_CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(KIT_CHAT_TASKS.values()))
"""The kit's own Chat categories (``multi-turn``): shown in their own rows, left out of the Average."""

KIT_WHY = (
    "the kit's own tasks (kit_ prefix: multi-clip Foundation, multi-turn Chat) are not AIR-Bench's: they get their "
    "own category rows and are left out of the Average, which stays comparable with the leaderboard"
)
"""Why kit categories are outside the Averages (``kit["why"]`` of a section that has kit tasks)."""

MIXED_TASKS: tuple[str, ...] = ("speech_and_sound_QA", "speech_and_music_QA")
"""Chat tasks whose task means are averaged (unweighted) into the Mixed category."""


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


def _resampled(values: np.ndarray, reps: int, seed: int, key: str, codes: np.ndarray | None = None) -> np.ndarray:
    """Column sums of ``values`` (units x k): row 0 over all units, rows 1.. over bootstrap resamples.

    With ``codes`` (each unit's cluster) whole clusters are drawn (:func:`airbench_nb.scoring.resample.weight_rows`).
    """
    n, k = values.shape
    out = np.zeros((reps + 1, k))
    out[0] = values.sum(axis=0)
    if reps and n and codes is not None:
        from airbench_nb.scoring.resample import resampled_sums

        rng = np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])
        start = 1
        for sums in resampled_sums(values, reps, rng, codes):
            out[start : start + len(sums)] = sums
            start += len(sums)
        return out
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
    """Aggregate Foundation outcomes of one protocol into subsets, tasks, categories and the Average.

    Items that share a cluster (:attr:`FoundationOutcome.cluster`: the questions about one recording) are not
    independent: the aggregate is then bootstrapped a second time drawing whole clusters within each subset, and
    every interval is the union of both (:mod:`airbench_nb.scoring.resample`; never narrower), the entries of a
    level whose units share clusters getting ``clusters`` and ``cluster_unit``. Point values are the same.
    """
    # what the section reads of the outcomes: the protocol only counts when an item failed (official leaves it out)
    failed = any(o.correct is None for o in outcomes)
    read = tuple((o.task, o.dataset, o.correct, o.cluster, o.reason if o.correct is None else "") for o in outcomes)
    kept_key = (read, protocol if failed else "", reps, seed)
    kept = _FOUNDATION_KEPT.get(kept_key)
    if kept is not None:  # the other protocol's section of the very same answers (no item failed)
        return copy.deepcopy(kept)
    section = _foundation_values(outcomes, protocol, reps, seed, clustered=False)
    keys = [o.cluster or f"unit:{k}" for k, o in enumerate(outcomes)]
    if reps and len(set(keys)) < len(keys):
        _widen(section, _foundation_values(outcomes, protocol, reps, seed, clustered=True))
    _strip(section)
    if len(_FOUNDATION_KEPT) >= FOUNDATION_KEPT:
        del _FOUNDATION_KEPT[next(iter(_FOUNDATION_KEPT))]
    _FOUNDATION_KEPT[kept_key] = copy.deepcopy(section)
    return section


FOUNDATION_KEPT = 1
"""Foundation sections :func:`_foundation_section` keeps (the oldest goes first): a model's official section,
which its strict one then finds (each key holds a tuple per item: 12 MB at 47,000 items)."""

_FOUNDATION_KEPT: dict[tuple[Any, ...], dict[str, Any]] = {}
"""Foundation sections by everything they are computed from: each outcome's task, dataset, right answer, cluster
and failure reason, the protocol when an item failed, the replicates and the seed. A model's two protocols score
the same answers the same way when no item failed: the strict section is then the official one, computed once."""


def _strip(section: dict[str, Any]) -> None:
    """Drop the private keys (``_var``) the passes leave on their entries."""
    for key in [k for k in section if k.startswith("_")]:
        del section[key]
    for value in section.values():
        if isinstance(value, dict):
            _strip(value)


def _spread(entry: dict[str, Any], values: np.ndarray) -> dict[str, Any]:
    """Record on an entry the variance of its bootstrap replicates (``_var``, for the design effect)."""
    replicates = values[1:][~np.isnan(values[1:])]
    entry["_var"] = float(np.var(replicates, ddof=1)) if replicates.size > 1 else None
    return entry


def _widen(section: dict[str, Any], clustered: dict[str, Any]) -> None:
    """Union every interval of ``section`` with ``clustered``'s and name the clusters of the clustered levels."""
    from airbench_nb.records.clusters import CLUSTER_UNITS
    from airbench_nb.scoring.resample import union

    if "ci_low" in section and "ci_low" in clustered:
        low, high = union((clustered["ci_low"], clustered["ci_high"]), (section["ci_low"], section["ci_high"]))
        section["ci_low"], section["ci_high"] = low, high
        count, units = clustered.get("_clusters"), clustered.get("_units")
        if count is not None and units is not None and count < units:
            section["clusters"], section["cluster_unit"] = count, CLUSTER_UNITS["audio"]
            var_c, var_u = clustered.get("_var"), section.get("_var")
            section["design_effect"] = var_c / var_u if var_c is not None and var_u else None
    for key, value in section.items():
        if isinstance(value, dict) and isinstance(clustered.get(key), dict):
            _widen(value, clustered[key])


def _count(entry: dict[str, Any], keys: Sequence[str]) -> None:
    """Record on a clustered pass's entry how many clusters and units its interval drew from."""
    entry.update(_clusters=len(set(keys)), _units=len(keys))


def _foundation_values(
    outcomes: Sequence[FoundationOutcome], protocol: str, reps: int, seed: int, clustered: bool
) -> dict[str, Any]:
    """The Foundation section (see :func:`_foundation_section`).

    With ``clustered`` each subset draws whole clusters, and every entry carries its ``_clusters`` and ``_units``
    (what :func:`_widen` reads).
    """
    size = reps + 1
    by_subset: dict[str, list[FoundationOutcome]] = defaultdict(list)
    for outcome in outcomes:
        by_subset[outcome.subset].append(outcome)
    order = sorted(by_subset, key=lambda s: (*_task_order(by_subset[s][0].task, FOUNDATION_TASKS), s))

    sums: dict[str, np.ndarray] = {}
    stats: dict[str, tuple[int, int, int]] = {}  # n, failures, correct
    subsets: dict[str, Any] = {}
    cluster_keys: dict[str, list[str]] = {}  # each subset's units' cluster keys
    for subset in order:
        group = by_subset[subset]
        right = np.array([1.0 if o.correct else 0.0 for o in group])
        if protocol == "official":
            counted = np.array([0.0 if o.correct is None else 1.0 for o in group])
        else:
            counted = np.ones(len(group))
        keys = [o.cluster or f"unit:{subset}:{k}" for k, o in enumerate(group)]
        codes = cluster_codes(keys, len(group)) if clustered else None
        sums[subset] = _resampled(np.column_stack([right, counted]), reps, seed, f"foundation/{subset}", codes)
        failures = sum(o.correct is None for o in group)
        stats[subset] = (int(counted.sum()), failures, int(right.sum()))
        ratio = _ratio(sums[subset][:, 0], sums[subset][:, 1])
        subsets[subset] = _spread(_accuracy(_score(ratio, *stats[subset])), ratio)
        cluster_keys[subset] = keys
        if clustered:
            subsets[subset].update(_clusters=len(set(keys)), _units=len(keys))

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
        tasks[task] = _spread(_accuracy(_score(task_values[task], *task_stats[task])), task_values[task])
        if clustered:
            _count(tasks[task], [k for m in members for k in cluster_keys[m]])

    categories: dict[str, Any] = {}
    category_values: list[np.ndarray] = []
    for category in (*FOUNDATION_CATEGORIES, *KIT_FOUNDATION_CATEGORIES):
        members = [t for t in tasks_order if ALL_FOUNDATION_TASKS.get(t) == category]
        if not members:
            continue
        values = _nanmean([task_values[t] for t in members], size)
        if category in FOUNDATION_CATEGORIES:  # the kit's categories stay out of the official-shaped Average
            category_values.append(values)
        categories[category] = _spread(_accuracy(_score(values, *_sum_stats(task_stats[t] for t in members))), values)
        if clustered:
            _count(categories[category], [k for m in order if task_of[m] in members for k in cluster_keys[m]])
    known = [t for t in tasks_order if t in FOUNDATION_TASKS]
    average_values = _nanmean(category_values, size)
    average = _spread(_accuracy(_score(average_values, *_sum_stats(task_stats[t] for t in known))), average_values)
    if clustered:
        _count(average, [k for m in order if task_of[m] in known for k in cluster_keys[m]])
    _with_partial(average, categories, FOUNDATION_CATEGORIES)
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
    kit = [t for t in tasks_order if t in KIT_FOUNDATION_TASKS]
    if kit:
        section["kit"] = _kit_counts(kit, task_stats, "items")
    uncategorised = [t for t in tasks_order if t not in ALL_FOUNDATION_TASKS]
    if uncategorised:
        logger.warning("Foundation tasks outside the official list, left out of categories: %s", uncategorised)
        section["uncategorised_tasks"] = uncategorised
    return section


def _kit_counts(tasks: Sequence[str], stats: dict[str, tuple[int, int, int]], unit: str) -> dict[str, Any]:
    """What a section holds outside its Average: the kit's tasks, their n and failures, and why."""
    n, failures, _ = _sum_stats(stats[t] for t in tasks)
    return {"tasks": list(tasks), "n": n, "failures": failures, "unit": unit, "why": KIT_WHY}


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


def _chat_entry(
    model: np.ndarray, reference: np.ndarray, n: int, failures: int, orders: Sequence[str]
) -> dict[str, Any]:
    out = _score(model, n, failures).as_dict()
    out["reference"] = _score(reference, n, failures).as_dict()
    out["relative"] = _score(_ratio(model, reference), n, failures).as_dict()
    out["orders_scored"] = list(orders)
    return out


def _with_partial(average: dict[str, Any], categories: dict[str, Any], expected: Sequence[str]) -> dict[str, Any]:
    """Mark an Average taken over fewer categories than ``expected`` (those without a value do not count)."""
    present = [c for c in expected if c in categories and categories[c]["value"] is not None]
    average["partial"] = len(present) < len(expected)
    average["categories_present"] = present
    return average


_CHAT_COLUMNS = 3 * len(CHAT_ORDERS) + 1
"""Columns of a Chat unit row: (model sum, reference sum, scored) for each order, then failed units."""


class _ChatSums:
    """Per-order sums of a group of Chat tasks over the point estimate (row 0) and the bootstrap replicates."""

    def __init__(self, sums: np.ndarray) -> None:
        self.sums = sums

    def _columns(self, offset: int) -> list[np.ndarray]:
        return [self.sums[:, 3 * k + offset] for k in range(len(CHAT_ORDERS))]

    def per_order(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Model and reference means of each order (NaN where an order scored nothing)."""
        scored = self._columns(2)
        model = [_ratio(m, s) for m, s in zip(self._columns(0), scored, strict=True)]
        reference = [_ratio(r, s) for r, s in zip(self._columns(1), scored, strict=True)]
        return model, reference

    def values(self, protocol: str) -> tuple[np.ndarray, np.ndarray]:
        """Model and reference means: per order then averaged (official), or pooled over both orders (strict)."""
        size = self.sums.shape[0]
        if protocol == "official":
            model, reference = self.per_order()
            return _nanmean(model, size), _nanmean(reference, size)
        scored = sum(self._columns(2))
        return _ratio(sum(self._columns(0)), scored), _ratio(sum(self._columns(1)), scored)

    @property
    def n(self) -> int:
        """Scored (item, order) units in the point estimate."""
        return int(sum(c[0] for c in self._columns(2)))

    @property
    def failures(self) -> int:
        """Failed (item, order) units in the point estimate."""
        return int(self.sums[0, -1])

    @property
    def orders(self) -> list[str]:
        """Orders with at least one scored unit in the point estimate."""
        return [o for o, c in zip(CHAT_ORDERS, self._columns(2), strict=True) if c[0] > 0]


def _chat_section(outcomes: Sequence[ChatOutcome], protocol: str, reps: int, seed: int) -> dict[str, Any]:
    """Aggregate Chat outcomes of one protocol into tasks, categories and the Average (:func:`_chat_values`).

    Items that share a cluster (:attr:`ChatOutcome.cluster`: the questions about one recording) are bootstrapped a
    second time drawing whole clusters within each task, and every interval is the union of both, as the Foundation
    table's (:func:`_foundation_section`). Point values are the same.
    """
    section = _chat_values(outcomes, protocol, reps, seed, clustered=False)
    clusters: dict[str, str] = {}
    for o in outcomes:
        clusters.setdefault(o.unit, o.cluster or f"unit:{o.unit}")
    if reps and len(set(clusters.values())) < len(clusters):
        _widen(section, _chat_values(outcomes, protocol, reps, seed, clustered=True))
    _strip(section)
    return section


def _chat_values(
    outcomes: Sequence[ChatOutcome], protocol: str, reps: int, seed: int, clustered: bool
) -> dict[str, Any]:
    """Aggregate Chat outcomes of one protocol into tasks, categories and the Average.

    ``official``: every task group (a task, a category) is the mean of its per-order means, as if the official
    script ran on each order's judge file apart and the two results were averaged. ``strict``: the mean over
    the group's scored (item, order) units of both orders pooled. Mixed is the mean of its task values and the
    Average the mean of the official category values, in both protocols (the kit's ``multi-turn`` category has its
    own row and stays out of the Average, its n and its failures).

    Multi-turn items (outcomes with a ``turn``): every (turn, order) is a unit of its task, and the turns of one
    conversation are resampled together; the task's value is the mean over its scored (turn, order) units (per order
    first, then the orders averaged, under ``official``). ``turns`` holds one entry per (task, turn): the same
    rule over that turn's units alone.
    """
    size = reps + 1
    by_task: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
    by_turn: dict[tuple[str, int], dict[str, np.ndarray]] = defaultdict(dict)
    for outcome in outcomes:
        targets = [by_task[outcome.task]]
        if outcome.turn is not None:
            targets.append(by_turn[(outcome.task, outcome.turn)])
        for units in targets:
            row = units.setdefault(outcome.unit, np.zeros(_CHAT_COLUMNS))
            if outcome.model is None or outcome.reference is None:
                row[-1] += 1
            else:
                k = 3 * CHAT_ORDERS.index(outcome.order)
                row[k : k + 3] += (outcome.model, outcome.reference, 1.0)
    order = sorted(by_task, key=lambda t: _task_order(t, ALL_CHAT_TASKS))
    cluster_of_unit: dict[str, str] = {}
    for outcome in outcomes:
        cluster_of_unit.setdefault(outcome.unit, outcome.cluster or f"unit:{outcome.unit}")

    def codes(units: Iterable[str]) -> np.ndarray | None:
        keys = [cluster_of_unit[u] for u in units]
        return cluster_codes(keys, len(keys)) if clustered else None

    def counted(entry: dict[str, Any], units: Iterable[str], values: np.ndarray) -> dict[str, Any]:
        _spread(entry, values)
        if clustered:
            _count(entry, [cluster_of_unit[u] for u in units])
        return entry

    sums: dict[str, _ChatSums] = {}
    task_values: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    tasks: dict[str, Any] = {}
    for task in order:
        values = np.vstack(list(by_task[task].values()))
        sums[task] = _ChatSums(_resampled(values, reps, seed, f"chat/{task}", codes(by_task[task])))
        task_values[task] = sums[task].values(protocol)
        tasks[task] = _chat_entry(*task_values[task], sums[task].n, sums[task].failures, sums[task].orders)
        counted(tasks[task], by_task[task], task_values[task][0])

    turns: dict[str, Any] = {}
    for task, turn in sorted(by_turn, key=lambda k: (order.index(k[0]), k[1])):
        stratum = f"chat/{task}/turn {turn + 1}"
        units = by_turn[(task, turn)]
        turn_sums = _ChatSums(_resampled(np.vstack(list(units.values())), reps, seed, stratum, codes(units)))
        turn_values = turn_sums.values(protocol)
        entry = _chat_entry(*turn_values, turn_sums.n, turn_sums.failures, turn_sums.orders)
        entry.update(task=task, turn=turn, conversations=len(units))
        turns[f"{task} turn {turn + 1}"] = counted(entry, units, turn_values[0])

    categories: dict[str, Any] = {}
    model_values: list[np.ndarray] = []
    reference_values: list[np.ndarray] = []
    for category in (*CHAT_CATEGORIES, *KIT_CHAT_CATEGORIES):
        members = [t for t in order if ALL_CHAT_TASKS.get(t) == category]
        if not members:
            continue
        pooled = _ChatSums(sum(sums[t].sums for t in members))
        if category == "mixed":
            model = _nanmean([task_values[t][0] for t in members], size)
            reference = _nanmean([task_values[t][1] for t in members], size)
        else:
            model, reference = pooled.values(protocol)
        if category in CHAT_CATEGORIES:  # the kit's categories stay out of the official-shaped Average
            model_values.append(model)
            reference_values.append(reference)
        categories[category] = _chat_entry(model, reference, pooled.n, pooled.failures, pooled.orders)
        counted(categories[category], [u for t in members for u in by_task[t]], model)
    zero = np.zeros((size, _CHAT_COLUMNS))
    official = _ChatSums(sum((sums[t].sums for t in order if t not in KIT_CHAT_TASKS), zero))
    everything = _ChatSums(sum((sums[t].sums for t in order), zero))
    average = _chat_entry(
        _nanmean(model_values, size),
        _nanmean(reference_values, size),
        official.n,
        official.failures,
        official.orders,
    )
    counted(average, [u for t in order if t not in KIT_CHAT_TASKS for u in by_task[t]], _nanmean(model_values, size))
    section: dict[str, Any] = {
        "tasks": tasks,
        "categories": categories,
        "average": _with_partial(average, categories, CHAT_CATEGORIES),
        "items": sum(len(by_task[t]) for t in order),
        "orders": sorted({o.order for o in outcomes}, key=CHAT_ORDERS.index),
        "orders_scored": everything.orders,
        "single_order": len(everything.orders) == 1,
        "failed": everything.failures,
        "failure_reasons": dict(Counter(o.reason for o in outcomes if o.model is None).most_common()),
    }
    if turns:
        section["turns"] = turns
    kit = [t for t in order if t in KIT_CHAT_TASKS]
    if kit:
        stats = {t: (sums[t].n, sums[t].failures, 0) for t in kit}
        section["kit"] = _kit_counts(kit, stats, "(item, turn, order) judgments")
    return section


def _protocols(protocol: str) -> tuple[str, ...]:
    if protocol == "both":
        return PROTOCOLS
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}: use 'official', 'strict' or 'both'")
    return (protocol,)


def _log_summary(name: str, table: dict[str, Any]) -> None:
    """Log the Foundation and Chat averages of a protocol's table being built (sections typed or still dicts)."""
    for kind in ("foundation", "chat"):
        section = table.get(kind)
        if not isinstance(section, ScoreSection) and not section:
            continue
        typed = section if isinstance(section, ScoreSection) else ScoreSection.model_validate(section)
        logger.info("%s %s: average %s, %d failed", name, kind, typed.average.value, typed.failed)


@dataclass(frozen=True)
class ValueOutcome:
    """One unit's value under a metric that averages a number per unit (a word count, a per-item WER, ...)."""

    task: str
    """Task name (the stratum of the bootstrap)."""
    unit: str
    """Unit key (an item uid): the resampling unit."""
    value: float | None
    """The unit's value; None for a failure."""
    reason: str
    """Where the value came from, or why there is none."""


def mean_section(outcomes: Sequence[ValueOutcome], metric: str, reps: int, seed: int) -> ScoreSection:
    """A section of per-task means and their pooled mean, each with n, failures and a percentile bootstrap 95% CI.

    The building block of metrics that average one number per unit: units are resampled with replacement within
    their task (each task from its own generator, seeded by ``(seed, crc32(metric/task))``, as every score of the
    kit); a task's value is the mean of its units' values; the Average is the mean over every scored unit of every
    task (pooled). Failed units (``value`` None) are left out of the means and counted in ``failures``.

    Args:
        outcomes: One outcome per unit.
        metric: The metric's name (part of the resampling key).
        reps: Bootstrap replicates (0: no intervals).
        seed: Bootstrap seed.

    Returns:
        A :class:`~airbench_nb.score_table.ScoreSection` with ``tasks``, ``average``, ``items``, ``failed`` and
        ``failure_reasons``.
    """
    by_task: dict[str, list[ValueOutcome]] = defaultdict(list)
    for outcome in outcomes:
        by_task[outcome.task].append(outcome)
    tasks: dict[str, Any] = {}
    total = np.zeros((reps + 1, 2))
    for task in sorted(by_task):
        group = by_task[task]
        values = np.array([[o.value if o.value is not None else 0.0, o.value is not None] for o in group], float)
        sums = _resampled(values, reps, seed, f"{metric}/{task}")
        total += sums
        failures = sum(o.value is None for o in group)
        tasks[task] = _score(_ratio(sums[:, 0], sums[:, 1]), int(values[:, 1].sum()), failures).as_dict()
    failed = sum(o.value is None for o in outcomes)
    average = _score(_ratio(total[:, 0], total[:, 1]), len(outcomes) - failed, failed).as_dict()
    return ScoreSection.model_validate(
        {
            "tasks": tasks,
            "categories": {},
            "average": average,
            "items": len(outcomes),
            "failed": failed,
            "failure_reasons": dict(Counter(o.reason for o in outcomes if o.value is None).most_common()),
        }
    )
