r"""Paired comparison of models on the items they share: differences with bootstrap CIs, paired tests, Holm.

Models come from one run folder or from several (runs made at different times compare): a source is a run folder
(every model in it) or ``RUN_DIR::MODEL_SPEC`` (one model of a run). For every pair of models (in the order given:
``model_a`` is the earlier one) and each benchmark the pair can be compared on:

- **Items.** An item is compared when both sides have it with the same uid *and* the same content: audio hash
  (``audio_sha256``; None matches only None), task, question, and the choices and answer (Foundation) or the
  reference answer (Chat). Items with the same uid and different content (``differ``, with the fields that differ)
  and items that only one side has (``only_a``, ``only_b``) are counted, up to :data:`MAX_EXAMPLES` uids listed,
  and left out. As in the score tables, SNR-graded copies (``meta.clean_uid``), rotated copies whose original is in
  the run (``meta.rotation_of``) and items whose audio is missing, empty or corrupt are not compared (an item
  unusable on one side only is counted as present on the other side only). An item a side has no score for
  (an official-protocol failure, which that protocol drops; a Chat item no order of which was scored) is counted
  in ``unscored`` and left out: a paired test needs both.
- **Foundation** values are accuracies in 0-1, aggregated as the kit does (:mod:`airbench_nb.scoring`): a task is
  the accuracy over its items, a category the unweighted mean of its tasks, the Average the mean of the
  categories present. **Chat** values are judge scores (1-10) of one judge (``chat_judge``): per item, the model's
  score averaged over the orders that were scored; a task is the mean over its items, speech / sound / music the
  mean over the category's items pooled, Mixed the mean of its two task values, the Average the mean of the
  categories present. The kit's own categories (``multi-clip``, ``multi-turn``) are compared in rows of their own
  and left out of the Average; a multi-turn conversation's value is the mean over its turns of each turn's score.
- **Difference** ``diff = a - b`` at every task, category and the Average, with a paired percentile bootstrap 95%
  CI: items are resampled with replacement within each task, the *same* resampled items for both models, and the
  whole aggregate is recomputed per replicate. Each task draws from its own generator seeded by
  ``(seed, crc32("<benchmark>/<task>"))``.
- **Paired test.** Foundation: McNemar's exact test (statsmodels ``mcnemar(exact=True)``: a two-sided binomial
  test on the discordant pairs) of the items of the task; for a category or the Average, of the *pooled* items of
  that level (it tests the pooled accuracy, not the unweighted mean of the tasks the ``diff`` shows; the test
  column says so). Chat: the Wilcoxon signed-rank test (scipy, zero differences dropped) of the per-item
  differences of the task, or of the pooled items of the category or Average. With no discordant pair or no
  nonzero difference the p-value is 1.
- **Correction.** Holm (statsmodels ``multipletests(method="holm")``) over every p-value of the table (all pairs,
  benchmarks and levels). ``verdict`` is ``"A better"`` (``diff`` > 0) or ``"B better"`` (``diff`` < 0) when the
  Holm-corrected p-value is below ``alpha`` (0.05), else ``"no detectable difference"``; a category or Average
  whose ``diff`` (mean of task values) and pooled items (what the test read) point different ways gets no verdict.
"""

from __future__ import annotations

import logging
import math
import warnings
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from airbench_nb.analysis.data import RunData, load_run
from airbench_nb.analysis.stats import plain
from airbench_nb.records import ALL_CHAT_TASKS, ALL_FOUNDATION_TASKS, ChatItem, FoundationItem

logger = logging.getLogger(__name__)

SEPARATOR = "::"
"""Separates a run folder from a model spec in a source (``RUN_DIR::MODEL_SPEC``)."""

ALPHA = 0.05
"""Family-wise error rate of the Holm-corrected verdicts."""

CONFIDENCE = 0.95
"""Coverage of the paired bootstrap intervals."""

DEFAULT_REPS = 2000
"""Bootstrap replicates per comparison."""

MAX_EXAMPLES = 20
"""Uids listed per kind of left-out item (only in A, only in B, differing, unscored)."""

A_BETTER = "A better"
"""Verdict: model A is better, Holm-corrected p below alpha."""

B_BETTER = "B better"
"""Verdict: model B is better, Holm-corrected p below alpha."""

NO_DIFFERENCE = "no detectable difference"
"""Verdict: the Holm-corrected p-value is not below alpha (or there is no p-value)."""

BENCHMARKS: tuple[str, ...] = ("foundation", "chat")
"""Benchmarks compared, in report order."""

LEVELS: tuple[str, ...] = ("average", "category", "task")
"""Levels of the comparison table, in report order."""

FOUNDATION_CATEGORIES: tuple[str, ...] = ("speech", "sound", "music")
"""Foundation categories, in report order."""

CHAT_CATEGORIES: tuple[str, ...] = ("speech", "sound", "music", "mixed")
"""Chat categories, in report order (Mixed is the mean of its two tasks)."""

KIT_FOUNDATION_CATEGORIES: tuple[str, ...] = ("multi-clip",)
"""The kit's own Foundation categories: compared in rows of their own, outside the Average."""

KIT_CHAT_CATEGORIES: tuple[str, ...] = ("multi-turn",)
"""The kit's own Chat categories: compared in rows of their own, outside the Average."""

MCNEMAR = "McNemar exact"
"""Test of a Foundation task (statsmodels mcnemar, exact=True)."""

MCNEMAR_POOLED = "McNemar exact, pooled items"
"""Test of a Foundation category or Average: McNemar on the level's items pooled."""

WILCOXON = "Wilcoxon signed-rank"
"""Test of a Chat task (scipy.stats.wilcoxon of the per-item differences)."""

WILCOXON_POOLED = "Wilcoxon signed-rank, pooled items"
"""Test of a Chat category or Average: Wilcoxon on the level's per-item differences pooled."""

TESTS: Mapping[str, str] = {
    MCNEMAR: "statsmodels.stats.contingency_tables.mcnemar(exact=True) on the task's items: two-sided binomial "
    "test of the discordant pairs (A right and B wrong vs A wrong and B right)",
    MCNEMAR_POOLED: "the same on the pooled items of the category or of the Average (tests the pooled accuracy, "
    "not the unweighted mean of tasks that diff shows)",
    WILCOXON: "scipy.stats.wilcoxon of the per-item differences of the task (an item's score is the mean over its "
    "scored orders); zero differences dropped",
    WILCOXON_POOLED: "the same on the pooled per-item differences of the category or of the Average",
}
"""What each name in the ``test`` column means."""

FRAME_COLUMNS: tuple[str, ...] = (
    "model_a",
    "model_b",
    "benchmark",
    "level",
    "name",
    "n",
    "a",
    "b",
    "diff",
    "ci_low",
    "ci_high",
    "test",
    "p_value",
    "p_holm",
    "verdict",
)
"""Columns of :meth:`Comparison.comparison_frame` (and keys of every row of ``as_dict()["comparisons"]``)."""

FIGURE_STEM = "model-differences-with-95-ci"
"""File stem of the forest plot when a report saves it."""


# ---------------------------------------------------------------------------------------------------------- tests


def mcnemar_exact(a_correct: Sequence[bool] | np.ndarray, b_correct: Sequence[bool] | np.ndarray) -> float:
    """McNemar's exact test of paired right/wrong outcomes (statsmodels ``mcnemar(exact=True)``).

    Args:
        a_correct: Model A right (True) or wrong per item.
        b_correct: Model B on the same items, in the same order.

    Returns:
        The two-sided p-value: a binomial test of the discordant pairs at 0.5; 1.0 with no discordant pair.
    """
    a = np.asarray(a_correct, dtype=bool)
    b = np.asarray(b_correct, dtype=bool)
    table = [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
    if table[0][1] + table[1][0] == 0:
        return 1.0
    return float(mcnemar(table, exact=True).pvalue)


def wilcoxon_signed_rank(differences: Sequence[float] | np.ndarray) -> float:
    """Wilcoxon signed-rank test of paired differences (scipy, two-sided, zero differences dropped).

    As R's ``wilcox.test``: the exact null distribution for up to 50 nonzero differences without ties, else the
    normal approximation with the tie correction. (scipy's default falls back to a permutation test when there are
    ties, which takes seconds per test and adds nothing at the sizes where ties occur: judge scores are integers.)

    Args:
        differences: Per-item ``a - b``.

    Returns:
        The p-value; 1.0 when no difference is nonzero.
    """
    d = np.asarray(differences, dtype=float)
    d = d[~np.isnan(d)]
    if not np.any(d != 0):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a single nonzero difference: normal approximation warns
        nonzero = np.abs(d[d != 0])
        exact = nonzero.size <= 50 and np.unique(nonzero).size == nonzero.size
        method = "exact" if exact else "approx"
        return float(stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided", method=method).pvalue)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-corrected p-values (statsmodels ``multipletests(method="holm")``); None stays None and is not counted.

    Args:
        p_values: Raw p-values, None where a row has no test.

    Returns:
        Corrected p-values in the same order.
    """
    present = [k for k, p in enumerate(p_values) if p is not None and not math.isnan(p)]
    out: list[float | None] = [None] * len(p_values)
    if present:
        _, corrected, _, _ = multipletests([p_values[k] for k in present], alpha=ALPHA, method="holm")
        for k, p in zip(present, corrected, strict=True):
            out[k] = float(p)
    return out


def verdict(diff: float | None, p_holm: float | None, alpha: float = ALPHA, direction: float | None = None) -> str:
    """``"A better"``, ``"B better"`` or ``"no detectable difference"`` from the difference and corrected p.

    Args:
        diff: ``a - b`` as the table shows it.
        p_holm: The Holm-corrected p-value (None: no test).
        alpha: Level.
        direction: Mean per-item difference of the items the test pooled; when its sign disagrees with ``diff``
            (a category whose unweighted mean of tasks and pooled items point different ways) there is no verdict.

    Returns:
        One of :data:`A_BETTER`, :data:`B_BETTER`, :data:`NO_DIFFERENCE`.
    """
    if diff is None or p_holm is None or not p_holm < alpha or diff == 0:
        return NO_DIFFERENCE
    if direction is not None and direction * diff <= 0:
        return NO_DIFFERENCE
    return A_BETTER if diff > 0 else B_BETTER


# -------------------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class ModelSource:
    """One model of one run folder, as compared."""

    label: str
    """Name in the table: the model spec, or ``<run folder name>::<spec>`` when models come from several runs."""
    run_dir: str
    """The run folder."""
    model: str
    """The model spec inside the run."""


@dataclass
class ItemMatch:
    """Which items of one benchmark a pair of models is compared on, and which were left out."""

    model_a: str
    """Label of model A."""
    model_b: str
    """Label of model B."""
    benchmark: str
    """``foundation`` or ``chat``."""
    compared: int
    """Items compared (same uid and content, scored on both sides)."""
    only_a: int = 0
    """Items only A's run has (or only A's run has usable audio for)."""
    only_b: int = 0
    """Items only B's run has."""
    differ: int = 0
    """Items with the same uid and different content (audio hash, question, choices, answer, reference, task)."""
    unscored: int = 0
    """Shared items one side has no score for (official failures, Chat items with no scored order)."""
    differ_fields: dict[str, int] = field(default_factory=dict)
    """How often each field differed among the ``differ`` items."""
    examples: dict[str, list[str]] = field(default_factory=dict)
    """Up to :data:`MAX_EXAMPLES` uids of each kind left out: ``only_a``, ``only_b``, ``differ``, ``unscored``."""
    categories: list[str] = field(default_factory=list)
    """Categories the compared items cover (an Average over fewer than all is partial)."""
    reason: str | None = None
    """Why the pair has no row on this benchmark, or None."""

    def as_dict(self) -> dict[str, Any]:
        """The match as a JSON-ready dict."""
        return asdict(self)


@dataclass
class Comparison:
    """Every pairwise comparison of a set of models, Holm-corrected together."""

    protocol: str
    """``strict`` or ``official``: how answers and judge replies are read."""
    chat_judge: str | None
    """The judge whose Chat scores are compared; None when no model has Chat scores."""
    seed: int
    """Seed of the bootstraps."""
    reps: int
    """Bootstrap replicates."""
    alpha: float
    """Level of the verdicts after Holm correction."""
    models: list[ModelSource]
    """The models compared, in the order given."""
    rows: list[dict[str, Any]]
    """One dict per (pair, benchmark, level, name) with the keys of :data:`FRAME_COLUMNS`."""
    items: list[ItemMatch]
    """Per pair and benchmark: items compared and left out."""

    def comparison_frame(self) -> pd.DataFrame:
        """The table as a DataFrame with :data:`FRAME_COLUMNS` (NaN where a value is undefined)."""
        frame = pd.DataFrame(self.rows, columns=list(FRAME_COLUMNS))
        for column in ("a", "b", "diff", "ci_low", "ci_high", "p_value", "p_holm"):
            frame[column] = frame[column].astype(float)
        frame["n"] = frame["n"].astype(int)
        return frame

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: settings, models, the table (``comparisons``), items per pair and the tests used."""
        return {
            "protocol": self.protocol,
            "chat_judge": self.chat_judge,
            "seed": self.seed,
            "reps": self.reps,
            "alpha": self.alpha,
            "confidence": CONFIDENCE,
            "bootstrap": "paired percentile bootstrap: items resampled within tasks, the same items for both models",
            "correction": f"Holm (statsmodels multipletests, method='holm') over the {self.tests_run} p-values of "
            "the table",
            "models": [asdict(m) for m in self.models],
            "comparisons": [{k: row[k] for k in FRAME_COLUMNS} for row in self.rows],
            "items": [m.as_dict() for m in self.items],
            "tests": dict(TESTS),
        }

    @property
    def tests_run(self) -> int:
        """Number of p-values the Holm correction was taken over."""
        return sum(row["p_value"] is not None for row in self.rows)


# ------------------------------------------------------------------------------------------------------ per model


def parse_source(text: str | Path) -> tuple[Path, str | None]:
    """Split ``RUN_DIR::MODEL_SPEC`` into the folder and the spec (None for a bare run folder)."""
    raw = str(text)
    folder, sep, spec = raw.partition(SEPARATOR)
    if sep and not spec:
        raise ValueError(f"{raw!r}: nothing after {SEPARATOR!r}; write RUN_DIR{SEPARATOR}MODEL_SPEC")
    return Path(folder), (spec if sep else None)


def _kept_items(run: RunData) -> dict[str, FoundationItem | ChatItem]:
    """Usable items of ``run`` that the score tables count (no SNR-graded copies, no rotations of present items)."""
    uids = {i.uid for i in run.all_items} or set(run.items)
    return {
        uid: item
        for uid, item in run.items.items()
        if "clean_uid" not in item.meta and item.meta.get("rotation_of") not in uids
    }


def _fingerprint(item: FoundationItem | ChatItem) -> dict[str, Any]:
    """The fields that must agree for an item of two runs to be the same item."""
    out: dict[str, Any] = {"task": item.task, "question": item.question, "audio_sha256": item.audio_sha256}
    if item.multi_clip:  # every clip must be the same (one-clip items keep the fields they always had)
        out["clips_sha256"] = item.clips_sha256
    if isinstance(item, FoundationItem):
        out["choices"] = list(item.choices)
        out["answer"] = item.answer
    else:
        out["reference"] = item.reference
        if item.multi_turn:
            out["turns"] = item.conversation
    return out


class _RunFrames:
    """One run's items and per-item frames, computed once however many of its models are compared."""

    def __init__(
        self,
        run: RunData,
        protocol: str,
        foundation: pd.DataFrame | None = None,
        chat: pd.DataFrame | None = None,
    ) -> None:
        self.run = run
        self.protocol = protocol
        self.items = _kept_items(run)
        self._foundation = foundation
        self._chat = chat

    @property
    def foundation(self) -> pd.DataFrame:
        if self._foundation is None:
            self._foundation = self.run.foundation_frame(self.protocol)
        return self._foundation

    @property
    def chat(self) -> pd.DataFrame:
        if self._chat is None:
            self._chat = self.run.chat_frame(self.protocol)
        return self._chat

    def foundation_scores(self, model: str) -> dict[str, float]:
        """``{uid: 1.0 right, 0.0 wrong, NaN unscored}`` over the kept Foundation items (empty: no answers)."""
        frame = self.foundation
        rows = frame[(frame["model"] == model) & frame["uid"].isin(self.items)]
        values = rows["correct"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
        return dict(zip(rows["uid"], values, strict=True))

    def chat_judges(self, model: str) -> set[str]:
        """Judges with at least one scored Chat unit of ``model``."""
        frame = self.chat
        rows = frame[(frame["model"] == model) & ~frame["failed"]]
        return set(rows["judge"])

    def chat_scores(self, model: str, judge: str) -> dict[str, float]:
        """``{uid: mean of the scored orders' model scores, NaN none scored}`` over the kept Chat items.

        A multi-turn conversation's value is the mean over its scored turns of each turn's mean over its scored
        orders (the conversation score of :mod:`airbench_nb.scoring`).
        """
        frame = self.chat
        rows = frame[(frame["model"] == model) & (frame["judge"] == judge) & frame["uid"].isin(self.items)]
        if rows.empty:
            return {}
        if "turn" in rows.columns and (rows["turn"].fillna(0) > 0).any():
            by_turn = rows.assign(turn=rows["turn"].fillna(0)).groupby(["uid", "turn"], sort=False)["score_model"]
            means = by_turn.mean().groupby(level="uid", sort=False).mean()  # NaN turns skipped
        else:
            means = rows.groupby("uid", sort=False)["score_model"].mean()  # NaN orders skipped; all NaN -> NaN
        return {str(u): float(v) for u, v in means.items()}


# ----------------------------------------------------------------------------------------------------- aggregation


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


def _pair_rows(
    benchmark: str,
    label_a: str,
    label_b: str,
    values_a: Mapping[str, float],
    values_b: Mapping[str, float],
    task_of: Mapping[str, str],
    seed: int,
    reps: int,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of one pair on one benchmark over the uids of ``values_a`` (all scored on both sides)."""
    table = ALL_FOUNDATION_TASKS if benchmark == "foundation" else ALL_CHAT_TASKS
    by_task: dict[str, list[str]] = {}
    for uid in sorted(values_a):
        by_task.setdefault(task_of[uid], []).append(uid)
    tasks = sorted(by_task, key=lambda t: _task_order(t, table))
    sums_a: dict[str, np.ndarray] = {}
    sums_b: dict[str, np.ndarray] = {}
    counts: dict[str, int] = {}
    arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for task in tasks:
        uids = by_task[task]
        a = np.array([values_a[u] for u in uids], dtype=float)
        b = np.array([values_b[u] for u in uids], dtype=float)
        arrays[task] = (a, b)
        counts[task] = len(uids)
        sums_a[task] = np.empty(reps + 1)
        sums_b[task] = np.empty(reps + 1)
        sums_a[task][0], sums_b[task][0] = a.sum(), b.sum()
        if reps:
            rng = np.random.default_rng([seed, zlib.crc32(f"{benchmark}/{task}".encode())])
            idx = rng.integers(0, len(uids), size=(reps, len(uids)))
            sums_a[task][1:] = a[idx].sum(axis=1)
            sums_b[task][1:] = b[idx].sum(axis=1)
    uncategorised = [t for t in tasks if t not in table]
    if uncategorised:
        logger.warning("%s tasks outside the official list, left out of categories: %s", benchmark, uncategorised)
    rows: list[dict[str, Any]] = []
    levels_a = _levels(benchmark, tasks, sums_a, counts)
    levels_b = _levels(benchmark, tasks, sums_b, counts)
    for (level, name, va, members), (_, _, vb, _) in zip(levels_a, levels_b, strict=True):
        a = np.concatenate([arrays[t][0] for t in members])
        b = np.concatenate([arrays[t][1] for t in members])
        diff = va - vb
        low, high = _interval(diff[1:])
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
    return sorted(counts, key=lambda j: (-counts[j], j == "proxy", j))[0]


# ------------------------------------------------------------------------------------------------------------ api


def compare_models(
    entries: Sequence[tuple[ModelSource, _RunFrames]],
    *,
    protocol: str = "strict",
    chat_judge: str | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    alpha: float = ALPHA,
) -> Comparison:
    """Compare every pair of the given models (see the module docstring); the engine of :func:`compare_runs`."""
    judges = _pick_judge((frames.chat_judges(s.model) for s, frames in entries), chat_judge)
    foundation = {s.label: frames.foundation_scores(s.model) for s, frames in entries}
    chat = {s.label: frames.chat_scores(s.model, judges) if judges else {} for s, frames in entries}
    rows: list[dict[str, Any]] = []
    matches: list[ItemMatch] = []
    for k, (source_a, frames_a) in enumerate(entries):
        for source_b, frames_b in entries[k + 1 :]:
            a, b = source_a.label, source_b.label
            for benchmark, scores in (("foundation", foundation), ("chat", chat)):
                if not scores[a] and not scores[b]:
                    continue
                match, values_a, values_b = _match(benchmark, a, b, frames_a, frames_b, scores[a], scores[b])
                missing = [label for label in (a, b) if not scores[label]]
                if missing:
                    what = "answers" if benchmark == "foundation" else f"scores by judge {judges}"
                    match.reason = f"{' and '.join(missing)}: no {benchmark.capitalize()} {what}"
                elif not values_a:
                    match.reason = "no item shared and scored on both sides"
                else:
                    task_of = {u: (frames_a.items[u].task) for u in values_a}
                    pair_rows, match.categories = _pair_rows(benchmark, a, b, values_a, values_b, task_of, seed, reps)
                    rows.extend(pair_rows)
                matches.append(match)
    corrected = holm([row["p_value"] for row in rows])
    for row, p in zip(rows, corrected, strict=True):
        row["p_holm"] = p
        row["verdict"] = verdict(row["diff"], p, alpha, direction=row.pop("direction", None))
    logger.info("compared %d models: %d rows, %d tests", len(entries), len(rows), len(corrected))
    return Comparison(
        protocol=protocol,
        chat_judge=judges,
        seed=seed,
        reps=reps,
        alpha=alpha,
        models=[s for s, _ in entries],
        rows=rows,
        items=matches,
    )


def _labels(chosen: Sequence[tuple[Path, str]]) -> list[str]:
    """Model specs when one run folder is compared, else ``<folder name>::<spec>`` (full paths if still ambiguous)."""
    if len({folder for folder, _ in chosen}) == 1:
        return [spec for _, spec in chosen]
    labels = [f"{folder.name}{SEPARATOR}{spec}" for folder, spec in chosen]
    if len(set(labels)) < len(labels):
        labels = [f"{folder}{SEPARATOR}{spec}" for folder, spec in chosen]
    return labels


def compare_runs(
    sources: Sequence[str | Path],
    protocol: str = "strict",
    chat_judge: str | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    alpha: float = ALPHA,
    loader: Callable[[Path], RunData] = load_run,
) -> Comparison:
    """Compare models of one or several run folders, every pair on the items they share.

    Args:
        sources: Run folders (every model in them) or ``RUN_DIR::MODEL_SPEC`` (one model of a run); a model named
            twice is compared once.
        protocol: ``strict`` or ``official``: how answers and judge replies are read.
        chat_judge: The judge whose Chat scores are compared (default: the one that scored most of the models, an
            LLM judge before ``proxy``).
        seed: Seed of the paired bootstraps.
        reps: Bootstrap replicates (0: no intervals).
        alpha: Level of the verdicts after Holm correction.
        loader: Reads a run folder (default :func:`~airbench_nb.analysis.data.load_run`).

    Returns:
        The :class:`Comparison`.

    Raises:
        FileNotFoundError: A run folder that does not exist or holds no manifest.
        ValueError: An unknown protocol, a model spec that is not in its run, a Chat judge that scored no model, or
            fewer than two models in all.
    """
    if protocol not in ("strict", "official"):
        raise ValueError(f"unknown protocol {protocol!r}: use 'strict' or 'official'")
    if reps < 0:
        raise ValueError(f"reps must be >= 0, got {reps}")
    runs: dict[Path, RunData] = {}
    chosen: list[tuple[Path, str]] = []
    for source in sources:
        folder, spec = parse_source(source)
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder}: no such run folder")
        key = folder.resolve()
        if key not in runs:
            runs[key] = loader(folder)
        run = runs[key]
        if spec is not None and spec not in run.models:
            known = ", ".join(run.models) or "none"
            raise ValueError(f"model {spec!r} is not in run {folder} (models there: {known})")
        for model in [spec] if spec is not None else run.models:
            if (key, model) not in {(k.resolve(), m) for k, m in chosen}:
                chosen.append((folder, model))
    if len(chosen) < 2:
        raise ValueError(f"need at least two models to compare, got {len(chosen)} from {', '.join(map(str, sources))}")
    frames = {key: _RunFrames(run, protocol) for key, run in runs.items()}
    entries = [
        (ModelSource(label=label, run_dir=str(folder), model=model), frames[folder.resolve()])
        for label, (folder, model) in zip(_labels(chosen), chosen, strict=True)
    ]
    return compare_models(entries, protocol=protocol, chat_judge=chat_judge, seed=seed, reps=reps, alpha=alpha)


def compare_run_data(
    run: RunData,
    *,
    protocol: str = "strict",
    chat_judge: str | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    alpha: float = ALPHA,
    foundation: pd.DataFrame | None = None,
    chat: pd.DataFrame | None = None,
) -> Comparison:
    """Compare every model of an already loaded run (frames already computed under ``protocol`` may be passed).

    Args:
        run: The run's records.
        protocol: ``strict`` or ``official``.
        chat_judge: The Chat judge compared (default as in :func:`compare_runs`).
        seed: Bootstrap seed.
        reps: Bootstrap replicates.
        alpha: Level of the verdicts after Holm correction.
        foundation: ``run.foundation_frame(protocol)``, if already computed.
        chat: ``run.chat_frame(protocol)``, if already computed.

    Returns:
        The :class:`Comparison` (no rows with fewer than two models).
    """
    frames = _RunFrames(run, protocol, foundation=foundation, chat=chat)
    entries = [(ModelSource(label=m, run_dir=str(run.folder), model=m), frames) for m in run.models]
    return compare_models(entries, protocol=protocol, chat_judge=chat_judge, seed=seed, reps=reps, alpha=alpha)


def comparison_section(
    run: RunData,
    *,
    protocol: str = "strict",
    chat_judge: str | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    foundation: pd.DataFrame | None = None,
    chat: pd.DataFrame | None = None,
) -> Any:
    """The comparison of every model of a run as a notebook-05 :class:`~airbench_nb.analysis.report.Section`.

    Args:
        run: The run's records (``RunAnalysis.run``).
        protocol: ``strict`` or ``official``.
        chat_judge: The Chat judge compared (default as in :func:`compare_runs`).
        seed: Bootstrap seed.
        reps: Bootstrap replicates.
        foundation: ``run.foundation_frame(protocol)``, if already computed.
        chat: ``run.chat_frame(protocol)``, if already computed.

    Returns:
        ``Section("comparison", ...)``: data = :meth:`Comparison.as_dict`, frame = the table, the forest plot
        (saved as :data:`FIGURE_STEM`), or the reason there is nothing to compare.
    """
    from airbench_nb import plots
    from airbench_nb.analysis.report import Section

    if len(run.models) < 2:
        return Section("comparison", {}, reason=f"fewer than two models in the run ({len(run.models)})")
    result = compare_run_data(
        run, protocol=protocol, chat_judge=chat_judge, seed=seed, reps=reps, foundation=foundation, chat=chat
    )
    frame = result.comparison_frame()
    if frame.empty:
        why = "; ".join(sorted({m.reason for m in result.items if m.reason})) or "no items shared and scored"
        return Section("comparison", result.as_dict(), reason=why)
    return Section(
        "comparison",
        result.as_dict(),
        frame=frame,
        figure=plots.compare_forest(frame),
        figure_key=FIGURE_STEM,
    )
