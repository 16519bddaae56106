"""Aggregation: per task, category and average differences with paired bootstrap intervals and tests.

See :mod:`airbench_nb.analysis.compare`.
"""

from __future__ import annotations

import logging
import math
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from airbench_nb.analysis.compare.common import (
    CHAT_CATEGORIES,
    CONFIDENCE,
    FOUNDATION_CATEGORIES,
    KIT_CHAT_CATEGORIES,
    KIT_FOUNDATION_CATEGORIES,
    MAX_EXAMPLES,
    MCNEMAR,
    MCNEMAR_POOLED,
    NO_DIFFERENCE,
    WILCOXON,
    WILCOXON_POOLED,
)
from airbench_nb.analysis.compare.frames import _fingerprint, _RunFrames
from airbench_nb.analysis.compare.paired_tests import mcnemar_exact, wilcoxon_signed_rank
from airbench_nb.analysis.compare.records import ItemMatch
from airbench_nb.analysis.stats import plain
from airbench_nb.records import ALL_CHAT_TASKS, ALL_FOUNDATION_TASKS, ChatItem, FoundationItem

logger = logging.getLogger(__name__)


def _task_order(task: str, table: Mapping[str, str]) -> tuple[int, str]:
    names = list(table)
    return (names.index(task), task) if task in table else (len(names), task)


def _mean(arrays: Sequence[np.ndarray]) -> np.ndarray:
    return np.mean(np.vstack(arrays), axis=0)


def _levels(
    benchmark: str, tasks: Sequence[str], sums: Mapping[str, np.ndarray], counts: Mapping[str, int]
) -> list[tuple[str, str, np.ndarray, list[str]]]:
    """``(level, name, values, member tasks)`` of every task, category and the Average, the kit's way.

    ``sums[task]`` holds the sum of one model's item values (row 0: all items; rows 1..: bootstrap replicates).
    """
    table = ALL_FOUNDATION_TASKS if benchmark == "foundation" else ALL_CHAT_TASKS
    official = FOUNDATION_CATEGORIES if benchmark == "foundation" else CHAT_CATEGORIES
    categories = (*official, *(KIT_FOUNDATION_CATEGORIES if benchmark == "foundation" else KIT_CHAT_CATEGORIES))
    task_values = {t: sums[t] / counts[t] for t in tasks}
    out: list[tuple[str, str, np.ndarray, list[str]]] = []
    category_values: list[np.ndarray] = []
    known: list[str] = []
    category_rows: list[tuple[str, str, np.ndarray, list[str]]] = []
    for category in categories:
        members = [t for t in tasks if table.get(t) == category]
        if not members:
            continue
        if benchmark == "foundation" or category == "mixed":
            values = _mean([task_values[t] for t in members])  # unweighted mean of task values
        else:
            values = sum(sums[t] for t in members) / sum(counts[t] for t in members)  # Chat: items pooled
        if category in official:  # the kit's categories get rows of their own, outside the Average
            known.extend(members)
            category_values.append(values)
        category_rows.append(("category", category, values, members))
    if category_values:
        out.append(("average", "average", _mean(category_values), known))
    out.extend(category_rows)
    out.extend(("task", t, task_values[t], [t]) for t in tasks)
    return out


def _interval(replicates: np.ndarray) -> tuple[float | None, float | None]:
    kept = replicates[~np.isnan(replicates)]
    if not kept.size:
        return None, None
    tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
    low, high = np.percentile(kept, [tail, 100.0 - tail])
    return float(low), float(high)


def _paired_sums(
    benchmark: str,
    tasks: Sequence[str],
    arrays: Mapping[str, tuple[np.ndarray, np.ndarray]],
    seed: int,
    reps: int,
    keys: Mapping[str, Sequence[str]] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Each task's sums of both models' item values (row 0: all items; rows 1..: paired bootstrap replicates).

    Each replicate draws one set of items (or, with ``keys``, whole clusters within the task:
    :func:`airbench_nb.scoring.resample.weight_rows`) and sums both models over it, so that the differences are
    paired. Without keys the draws are the item bootstrap's as before.
    """
    from airbench_nb.scoring.resample import cluster_codes, key_rng, weight_rows

    sums_a: dict[str, np.ndarray] = {}
    sums_b: dict[str, np.ndarray] = {}
    for task in tasks:
        a, b = arrays[task]
        sums_a[task], sums_b[task] = np.empty(reps + 1), np.empty(reps + 1)
        sums_a[task][0], sums_b[task][0] = a.sum(), b.sum()
        if not reps:
            continue
        if keys is None:
            rng = np.random.default_rng([seed, zlib.crc32(f"{benchmark}/{task}".encode())])
            idx = rng.integers(0, len(a), size=(reps, len(a)))
            sums_a[task][1:], sums_b[task][1:] = a[idx].sum(axis=1), b[idx].sum(axis=1)
            continue
        codes = cluster_codes(keys[task], len(a))
        weights = np.concatenate(list(weight_rows(len(a), reps, key_rng(seed, f"{benchmark}/{task}/clusters"), codes)))
        sums_a[task][1:], sums_b[task][1:] = weights @ a, weights @ b
    return sums_a, sums_b


def _pair_rows(
    benchmark: str,
    label_a: str,
    label_b: str,
    values_a: Mapping[str, float],
    values_b: Mapping[str, float],
    task_of: Mapping[str, str],
    seed: int,
    reps: int,
    clusters: Mapping[str, str] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of one pair on one benchmark over the uids of ``values_a`` (all scored on both sides).

    Each row also gets the power of its paired comparison (:func:`airbench_nb.analysis.power.paired_power` of the
    per-item differences its test reads, clustered by ``clusters`` per uid): ``mde``, ``design_effect`` and
    ``items_needed`` (paired items to detect a gap the size of this ``diff``).
    """
    from airbench_nb.analysis.power import items_needed, paired_power
    from airbench_nb.scoring.resample import union

    table = ALL_FOUNDATION_TASKS if benchmark == "foundation" else ALL_CHAT_TASKS
    by_task: dict[str, list[str]] = {}
    for uid in sorted(values_a):
        by_task.setdefault(task_of[uid], []).append(uid)
    tasks = sorted(by_task, key=lambda t: _task_order(t, table))
    counts: dict[str, int] = {}
    arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for task in tasks:
        uids = by_task[task]
        arrays[task] = (
            np.array([values_a[u] for u in uids], dtype=float),
            np.array([values_b[u] for u in uids], dtype=float),
        )
        counts[task] = len(uids)
    sums_a, sums_b = _paired_sums(benchmark, tasks, arrays, seed, reps)
    keys_of = {t: [clusters[u] for u in by_task[t]] for t in tasks} if clusters else {}
    shared = [t for t in tasks if keys_of and len(set(keys_of[t])) < counts[t]]
    clustered = _paired_sums(benchmark, tasks, arrays, seed, reps, keys_of) if shared and reps else None
    uncategorised = [t for t in tasks if t not in table]
    if uncategorised:
        logger.warning("%s tasks outside the official list, left out of categories: %s", benchmark, uncategorised)
    rows: list[dict[str, Any]] = []
    levels_a = _levels(benchmark, tasks, sums_a, counts)
    levels_b = _levels(benchmark, tasks, sums_b, counts)
    clustered_diffs = [None] * len(levels_a)
    if clustered is not None:
        clustered_a = _levels(benchmark, tasks, clustered[0], counts)
        clustered_b = _levels(benchmark, tasks, clustered[1], counts)
        clustered_diffs = [
            ca[2] - cb[2] if any(t in shared for t in ca[3]) else None
            for ca, cb in zip(clustered_a, clustered_b, strict=True)
        ]
    for (level, name, va, members), (_, _, vb, _), cdiff in zip(levels_a, levels_b, clustered_diffs, strict=True):
        a = np.concatenate([arrays[t][0] for t in members])
        b = np.concatenate([arrays[t][1] for t in members])
        keys = [clusters[u] for t in members for u in by_task[t]] if clusters else None
        power = paired_power(a - b, keys)
        diff = va - vb
        low, high = _interval(diff[1:])
        if cdiff is not None:  # items share clusters: the same clusters drawn for both models, never narrower
            low, high = union(_interval(cdiff[1:]), (low, high))
        if benchmark == "foundation":
            test = MCNEMAR if level == "task" else MCNEMAR_POOLED
            p_value = mcnemar_exact(a > 0.5, b > 0.5)
        else:
            test = WILCOXON if level == "task" else WILCOXON_POOLED
            p_value = wilcoxon_signed_rank(a - b)
        rows.append(
            {
                "model_a": label_a,
                "model_b": label_b,
                "benchmark": benchmark,
                "level": level,
                "name": name,
                "n": int(a.size),
                "a": plain(va[0]),
                "b": plain(vb[0]),
                "diff": plain(diff[0]),
                "ci_low": low,
                "ci_high": high,
                "test": test,
                "p_value": plain(p_value),
                "p_holm": None,
                "verdict": NO_DIFFERENCE,
                "mde": plain(power.mde) if power.mde is not None else None,
                "design_effect": plain(power.design_effect),
                "clusters": power.clusters if power.clusters < a.size else None,
                "items_needed": items_needed(power, float(diff[0])) if not np.isnan(diff[0]) else None,
                "size": None,
                "direction": float(np.mean(a - b)),
            }
        )
    categories = [name for level, name, _, _ in levels_a if level == "category"]
    return rows, categories


def _match(
    benchmark: str,
    label_a: str,
    label_b: str,
    frames_a: _RunFrames,
    frames_b: _RunFrames,
    scores_a: Mapping[str, float],
    scores_b: Mapping[str, float],
) -> tuple[ItemMatch, dict[str, float], dict[str, float]]:
    """Match the kept items of one benchmark; return the match and the scores of the items compared."""
    kind = FoundationItem if benchmark == "foundation" else ChatItem
    items_a = {u: i for u, i in frames_a.items.items() if isinstance(i, kind)}
    items_b = {u: i for u, i in frames_b.items.items() if isinstance(i, kind)}
    only_a = sorted(set(items_a) - set(items_b))
    only_b = sorted(set(items_b) - set(items_a))
    differ: list[str] = []
    fields: Counter[str] = Counter()
    same: list[str] = []
    for uid in sorted(set(items_a) & set(items_b)):
        if items_a[uid] is items_b[uid]:
            same.append(uid)
            continue
        fa, fb = _fingerprint(items_a[uid]), _fingerprint(items_b[uid])
        changed = [k for k in fa if fa[k] != fb.get(k)]
        if changed:
            differ.append(uid)
            fields.update(changed)
        else:
            same.append(uid)
    unscored = [u for u in same if math.isnan(scores_a.get(u, math.nan)) or math.isnan(scores_b.get(u, math.nan))]
    dropped = set(unscored)
    compared = [u for u in same if u not in dropped]
    match = ItemMatch(
        model_a=label_a,
        model_b=label_b,
        benchmark=benchmark,
        compared=len(compared),
        only_a=len(only_a),
        only_b=len(only_b),
        differ=len(differ),
        unscored=len(unscored),
        differ_fields=dict(fields.most_common()),
        examples={
            "only_a": only_a[:MAX_EXAMPLES],
            "only_b": only_b[:MAX_EXAMPLES],
            "differ": differ[:MAX_EXAMPLES],
            "unscored": unscored[:MAX_EXAMPLES],
        },
    )
    if differ or only_a or only_b:
        logger.warning(
            "%s vs %s (%s): %d items differ (%s), %d only in A, %d only in B: left out",
            label_a,
            label_b,
            benchmark,
            len(differ),
            ", ".join(fields),
            len(only_a),
            len(only_b),
        )
    return match, {u: scores_a[u] for u in compared}, {u: scores_b[u] for u in compared}


def _pick_judge(judges_by_model: Iterable[set[str]], chat_judge: str | None) -> str | None:
    """The Chat judge compared: ``chat_judge``, or the one that scored most models (an LLM judge before proxy)."""
    counts: Counter[str] = Counter()
    for judges in judges_by_model:
        counts.update(judges)
    if chat_judge is not None:
        if counts and chat_judge not in counts:
            raise ValueError(
                f"Chat judge {chat_judge!r} scored none of the models; judges: {', '.join(sorted(counts))}"
            )
        return chat_judge
    if not counts:
        return None
    from airbench_nb.judge.registry import scores_only

    return sorted(counts, key=lambda j: (-counts[j], scores_only(j), j))[0]
