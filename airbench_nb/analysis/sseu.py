"""SSEU-Bench's analyses: the table of models x prompting modes, curves against SNR, and paired mode differences.

Inputs are the items scored against references (transcription, scene, events and joint items) and each model's
latest responses; every answer is read by :func:`airbench_nb.scoring.reference.read_part`, exactly as the score
tables read it, and scored by the same functions (:mod:`airbench_nb.scoring.wer`, :mod:`airbench_nb.scoring.tagging`).

- **The SSEU table** (:attr:`SseuAnalysis.table`): per model and mode (``independent``, ``joint``, ``sseu-cot``),
  corpus WER (a fraction, lower is better), scene mACC and event mAP (higher is better), each with its 95% bootstrap
  interval, over the mixed clips (the clean copies are a reference point of the curves, not part of the table: the
  joint items exist only for mixed clips). ``n`` counts clips; ``failures`` the parts that could not be read.
- **SNR curves** (:attr:`SseuAnalysis.curves`): the same three numbers per SNR step, per model, task and mode; the
  clean copies have ``snr_db`` None (transcription only).
- **Mode differences** (:attr:`SseuAnalysis.differences`): ``joint - independent`` and ``sseu-cot - joint`` per task,
  on the clips both modes answered, with a paired bootstrap interval (the same resampled clips for both modes; see
  :func:`paired_difference`). A task is *sacrificed* under joint prompting when its difference is worse (WER up,
  mACC or mAP down) and the interval excludes 0; :attr:`ModeComparison.sacrificed` names the worst one by relative
  change, None when no task is significantly worse.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from airbench_nb.analysis_report import CurvePoint, SseuCleanup, SseuDetail, SseuScores
from airbench_nb.records import Response, is_control, is_perturbed
from airbench_nb.scoring.aggregate import DEFAULT_REPS
from airbench_nb.scoring.reference import MODES, ReferenceOutcome, read_part, utterance_key

logger = logging.getLogger(__name__)

TASKS: dict[str, str] = {"transcription": "transcript", "scene": "scene", "events": "events"}
"""SSEU's three tasks and the answer part each reads."""

METRIC_OF_TASK: dict[str, str] = {"transcription": "wer", "scene": "macc", "events": "map"}
"""The headline metric of each task (WER lower is better; mACC and mAP higher)."""

LOWER_IS_BETTER: frozenset[str] = frozenset({"wer"})
"""Metrics for which a rise is a loss."""

COMPARISONS: tuple[tuple[str, str], ...] = (("joint", "independent"), ("sseu-cot", "joint"))
"""Mode differences reported, ``(mode, baseline)``: joint prompting's cost, then the chain of thought's effect."""

PARTS_OF_KIND: dict[str, tuple[str, ...]] = {
    "transcription": ("transcript",),
    "scene": ("scene",),
    "events": ("events",),
    "joint": ("transcript", "scene", "events"),
}
"""The answer parts each item kind is scored on."""


@dataclass
class TaskScores:
    """One task's per-item primitives for one model and mode, aligned by clip: what every statistic is made of."""

    task: str
    """``transcription``, ``scene`` or ``events``."""
    clips: list[str | None]
    """Each item's clip id."""
    snr: list[float | None]
    """Each item's SNR (None: clean)."""
    failures: int
    """Items whose part could not be read (kept in the statistic)."""
    errors: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Transcription: S+D+I per item."""
    words: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Transcription: reference words per item."""
    gold: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    """Scenes: gold class index per item."""
    correct: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """Scenes: whether the embedding-mapped class is the gold one."""
    truth: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    """Events: gold 0/1 per item and class."""
    scores: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    """Events: the sigmoid class scores per item and class."""
    utterances: list[Any] = field(default_factory=list)
    """Transcription: each item's :class:`~airbench_nb.scoring.wer.UtteranceErrors` (the error profile)."""
    exact: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """Scenes: whether the answer names the gold class exactly (normalised), the embedding-free view."""
    named: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    """Events: 0/1 per item and class, the classes the answer names exactly (the embedding-free view)."""

    def exact_view(self) -> float | None:
        """The embedding-free view of the items: exact-label accuracy (scenes) or exact-label micro F1 (events)."""
        if not self.n or self.task == "transcription":
            return None
        if self.task == "scene":
            return float(np.mean(self.exact))
        from sklearn.metrics import f1_score

        return float(f1_score(self.truth.astype(int), self.named.astype(int), average="micro", zero_division=0))

    def wer_profile(self) -> dict[str, Any] | None:
        """Transcription: per-utterance mean and median WER, S/D/I, the share of empty outputs, hallucinations."""
        if self.task != "transcription" or not self.utterances:
            return None
        from airbench_nb.scoring.wer import corpus_wer

        s = corpus_wer(self.utterances, reps=0)
        keys = ("mean_wer", "median_wer", "substitutions", "deletions", "insertions", "ref_words", "empty_share")
        return {**{k: getattr(s, k) for k in keys}, "hallucination_rate": s.hallucination_rate}

    def statistic(self, weights: np.ndarray) -> np.ndarray:
        """The task's headline metric per row of item weights (rows, n): WER, mACC or mAP."""
        from airbench_nb.scoring.tagging import weighted_average_precision, weighted_balanced_accuracy

        if self.task == "transcription":  # both sums in one pass over the weights (whole numbers: exact)
            return _ratio(weights @ np.column_stack([self.errors, self.words]))
        if self.task == "scene":
            return weighted_balanced_accuracy(self.gold, self.correct, weights)
        columns = [j for j in range(self.truth.shape[1]) if self.truth[:, j].any()]
        if not columns:
            return np.full(weights.shape[0], np.nan)
        aps = np.stack([weighted_average_precision(self.truth[:, j], self.scores[:, j], weights) for j in columns], 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(aps, axis=1)

    def subset(self, keep: Sequence[int]) -> TaskScores:
        """The primitives of the items at ``keep``."""
        idx = np.asarray(keep, dtype=int)
        return TaskScores(
            task=self.task,
            clips=[self.clips[i] for i in idx],
            snr=[self.snr[i] for i in idx],
            failures=0,
            errors=self.errors[idx] if self.errors.size else self.errors,
            words=self.words[idx] if self.words.size else self.words,
            gold=self.gold[idx] if self.gold.size else self.gold,
            correct=self.correct[idx] if self.correct.size else self.correct,
            truth=self.truth[idx] if self.truth.size else self.truth,
            scores=self.scores[idx] if self.scores.size else self.scores,
            utterances=[self.utterances[i] for i in idx] if self.utterances else [],
            exact=self.exact[idx] if self.exact.size else self.exact,
            named=self.named[idx] if self.named.size else self.named,
        )

    @property
    def n(self) -> int:
        """Items."""
        return len(self.clips)

    @property
    def clusters(self) -> list[str]:
        """Each item's cluster: its utterance, or the item itself without a clip id.

        The utterance is the clip id before ``@``, as :func:`airbench_nb.records.cluster_of` keys SSEU-Bench's items.
        """
        return [f"utterance:{c.split('@', 1)[0]}" if c else f"item:{i}" for i, c in enumerate(self.clips)]


def _weights(n: int, reps: int, seed: int, key: str) -> np.ndarray:
    """Bootstrap weights (reps, n): how often each unit is drawn in each replicate (:func:`.resample.weight_rows`)."""
    from airbench_nb.scoring.resample import key_rng, weight_rows

    return np.concatenate(list(weight_rows(n, reps, key_rng(seed, key)))) if n and reps else np.zeros((reps, n))


def _interval(replicates: np.ndarray) -> tuple[float | None, float | None]:
    from airbench_nb.scoring.wer import percentile_interval

    return percentile_interval(replicates)


def _value(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def estimate(scores: TaskScores, reps: int, seed: int, key: str) -> tuple[float | None, float | None, float | None]:
    """The headline metric over the items and its 95% percentile bootstrap interval (:func:`clustered_estimate`)."""
    value, low, high, _ = clustered_estimate(scores, reps, seed, key)
    return value, low, high


def clustered_estimate(
    scores: TaskScores, reps: int, seed: int, key: str
) -> tuple[float | None, float | None, float | None, Any]:
    """The headline metric, its 95% percentile bootstrap interval and how its items were clustered.

    Items are resampled; when several are mixes of one utterance (:attr:`TaskScores.clusters`), whole utterances
    are resampled too and the interval is the union of both (never narrower:
    :mod:`airbench_nb.scoring.resample`), with the design effect. The clustering is None without replicates.
    """
    if not scores.n:
        return None, None, None, None
    point = _value(float(scores.statistic(np.ones((1, scores.n)))[0]))
    if not reps:
        return point, None, None, None
    units = _replicates(scores, reps, seed, key, None)
    return (point, *_with_clusters(scores, units, reps, seed, key))


def _replicates(scores: TaskScores, reps: int, seed: int, key: str, codes: np.ndarray | None) -> np.ndarray:
    """The statistic's bootstrap replicates, a chunk of weight rows at a time (:func:`.resample.weight_rows`).

    Each replicate reads its own row of weights only, so the replicates are those of the whole (reps, n) matrix,
    which is never held: memory follows the chunk, not ``reps`` x items.
    """
    from airbench_nb.scoring.resample import key_rng, resampled_sums, weight_rows

    rng = key_rng(seed, key)
    if scores.task == "transcription" and codes is not None:  # WER: two sums, drawn per utterance (the same draws)
        chunks = [
            _ratio(sums) for sums in resampled_sums(np.column_stack([scores.errors, scores.words]), reps, rng, codes)
        ]
    else:
        chunks = [scores.statistic(rows) for rows in weight_rows(scores.n, reps, rng, codes)]
    return np.concatenate(chunks) if chunks else np.zeros(0)


def _ratio(sums: np.ndarray) -> np.ndarray:
    """Errors over words per row of ``(errors, words)`` sums (NaN where no word), as :meth:`TaskScores.statistic`."""
    top, bottom = sums.T
    out = np.full(sums.shape[0], np.nan)
    np.divide(top, bottom, out=out, where=bottom > 0)
    return out


def _with_clusters(
    scores: TaskScores, units: np.ndarray, reps: int, seed: int, key: str
) -> tuple[float | None, float | None, Any]:
    """``(low, high, clustering)``: the interval widened by the utterance bootstrap when items share utterances."""
    from airbench_nb.scoring.resample import clustered_interval

    def draw(codes: np.ndarray | None) -> np.ndarray:
        return _replicates(scores, reps, seed, key, codes)

    return clustered_interval(draw, scores.clusters, scores.n, reps, units=units)


def task_scores(task: str, outcomes: Sequence[ReferenceOutcome], embedder: Any) -> TaskScores:
    """Score one task's outcomes (one model, one mode) into per-item primitives.

    Failures stay in: an unread transcript is all deletions, an unread scene maps to no class, unread events score 0.
    Transcripts whose reference normalises to nothing are left out (the score tables count them).
    """
    from airbench_nb.scoring.tagging import score_events, score_scenes
    from airbench_nb.scoring.wer import SkippedUtterance, many_utterance_errors

    failures = sum(o.failure is not None for o in outcomes)
    if task == "transcription":
        kept, utterances = [], []
        found = many_utterance_errors([utterance_key(o) for o in outcomes])
        for o, u in zip(outcomes, found, strict=True):
            if isinstance(u, SkippedUtterance):
                continue
            kept.append(o)
            utterances.append(u)
        return TaskScores(
            task,
            [o.clip_id for o in kept],
            [o.snr_db for o in kept],
            failures,
            errors=np.array([u.errors for u in utterances], float),
            words=np.array([u.ref_words for u in utterances], float),
            utterances=utterances,
        )
    classes = outcomes[0].classes if outcomes else ()
    same = [o for o in outcomes if o.classes == classes]
    if len(same) < len(outcomes):
        logger.warning("%s: %d items with another class list left out", task, len(outcomes) - len(same))
    clips, snr = [o.clip_id for o in same], [o.snr_db for o in same]
    if task == "scene":
        answers = [o.answer if isinstance(o.answer, str) else None for o in same]
        result = score_scenes(answers, [str(o.gold) for o in same], classes, embedder, reps=0)
        gold = np.array([list(classes).index(str(o.gold)) for o in same], int)
        exact = np.array([e == str(o.gold) for e, o in zip(result.exact, same, strict=True)], bool)
        return TaskScores(task, clips, snr, failures, gold=gold, correct=np.array(result.correct, bool), exact=exact)
    answers_e = [list(o.answer) if isinstance(o.answer, tuple) else None for o in same]
    golds = [list(o.gold or ()) for o in same]
    ranked = [dict(o.class_scores) if o.class_scores else None for o in same]
    result_e = score_events(answers_e, golds, classes, embedder, reps=0, class_scores=ranked)
    from airbench_nb.scoring.tagging import label_key

    truth = np.zeros((len(same), len(classes)))
    named = np.zeros((len(same), len(classes)))
    keys = {label_key(c): j for j, c in enumerate(classes)}
    for i, gold_set in enumerate(golds):
        truth[i, [list(classes).index(g) for g in gold_set]] = 1.0
        for event in answers_e[i] or []:
            if (j := keys.get(label_key(event))) is not None:
                named[i, j] = 1.0
    return TaskScores(task, clips, snr, failures, truth=truth, scores=np.asarray(result_e.scores, float), named=named)


@dataclass(frozen=True)
class Difference:
    """One task's ``mode - baseline`` difference on the clips both answered, with a paired bootstrap interval."""

    task: str
    """``transcription``, ``scene`` or ``events``."""
    metric: str
    """``wer``, ``macc`` or ``map``."""
    mode: str
    """The mode compared."""
    baseline: str
    """The mode it is compared with."""
    n_clips: int
    """Clips both modes answered (the paired units)."""
    value: float | None
    """Metric under ``mode`` minus metric under ``baseline``."""
    ci_low: float | None
    """Lower end of the 95% paired bootstrap interval."""
    ci_high: float | None
    """Upper end of the 95% paired bootstrap interval."""
    mode_value: float | None
    """The metric under ``mode`` on the paired clips."""
    baseline_value: float | None
    """The metric under ``baseline`` on the paired clips."""
    worse: bool
    """Whether ``mode`` is significantly worse (WER up, mACC or mAP down; the interval excludes 0)."""
    better: bool
    """Whether ``mode`` is significantly better."""
    relative: float | None
    """The loss relative to the baseline's value (positive: worse under ``mode``); None when undefined."""


@dataclass(frozen=True)
class ModeComparison:
    """Every task's difference between two modes for one model, and which task it sacrifices."""

    mode: str
    """The mode compared (``joint``, ``sseu-cot``)."""
    baseline: str
    """The baseline mode (``independent``, ``joint``)."""
    differences: dict[str, Difference]
    """By task."""
    sacrificed: str | None
    """The significantly worse task with the largest relative loss; None when no task is significantly worse."""


def paired_difference(
    a: TaskScores, b: TaskScores, mode: str, baseline: str, reps: int, seed: int, key: str
) -> Difference | None:
    """``statistic(a) - statistic(b)`` on the clips present in both, resampling clips (the same draws for both).

    Returns None when no clip is in both.
    """
    index_a = {c: i for i, c in enumerate(a.clips) if c is not None}
    index_b = {c: i for i, c in enumerate(b.clips) if c is not None}
    shared = sorted(set(index_a) & set(index_b))
    if not shared:
        return None
    pa, pb = a.subset([index_a[c] for c in shared]), b.subset([index_b[c] for c in shared])
    ones = np.ones((1, len(shared)))
    va, vb = float(pa.statistic(ones)[0]), float(pb.statistic(ones)[0])
    low = high = None
    if reps:  # the same draws for both modes: clips, then utterances (the interval the union of both)
        from airbench_nb.scoring.resample import clustering, union, weight_rows
        from airbench_nb.scoring.wer import _key_rng

        w = _weights(len(shared), reps, seed, key)
        low, high = _interval(pa.statistic(w) - pb.statistic(w))
        codes, count, _ = clustering(pa.clusters, len(shared))
        if count < len(shared):
            w = np.concatenate(list(weight_rows(len(shared), reps, _key_rng(seed, key), codes)))
            low, high = union(_interval(pa.statistic(w) - pb.statistic(w)), (low, high))
    metric = METRIC_OF_TASK[a.task]
    sign = 1.0 if metric in LOWER_IS_BETTER else -1.0  # a positive signed difference is a loss
    value = _value(va - vb)
    worse = better = False
    if low is not None and high is not None:
        lo, hi = sorted((sign * low, sign * high))
        worse, better = lo > 0, hi < 0
    relative = sign * (va - vb) / abs(vb) if value is not None and vb and not math.isnan(vb) else None
    return Difference(
        task=a.task,
        metric=metric,
        mode=mode,
        baseline=baseline,
        n_clips=len(shared),
        value=value,
        ci_low=low,
        ci_high=high,
        mode_value=_value(va),
        baseline_value=_value(vb),
        worse=worse,
        better=better,
        relative=relative,
    )


@dataclass
class SseuAnalysis:
    """SSEU-Bench's analyses of a run (see the module docstring)."""

    table: dict[str, dict[str, dict[str, Any]]]
    """``table[model][mode] = {wer, wer_ci, macc, macc_ci, map, map_ci, n, failures, failures_by_task}``, with
    ``wer_detail`` (per-utterance mean and median, S/D/I, ``ref_words``, ``empty_share``, ``hallucination_rate``),
    ``macc_exact`` (exact-label accuracy) and ``map_exact`` (exact-label micro F1), the embedding-free views, and, when
    clips share utterances, ``clusters`` (the utterances the intervals resampled too) and ``design_effects`` per
    metric (:func:`clustered_estimate`)."""
    curves: dict[str, dict[str, list[dict[str, Any]]]]
    """``curves[model][task] = [{mode, snr_db, n, value, ci_low, ci_high}]`` (WER as a fraction)."""
    comparisons: dict[str, list[ModeComparison]]
    """Per model, the mode comparisons of :data:`COMPARISONS` that both modes answered."""
    embedder: str
    """The embedding backend that mapped scenes and events onto classes."""
    reps: int
    """Bootstrap replicates."""
    seed: int
    """Bootstrap seed."""
    cleanup: dict[str, SseuCleanup] = field(default_factory=dict)
    """Per model, what the output parser did (:func:`cleanup_counts`): ``answers`` read, ``removed`` (answers per
    clean-up: think blocks, preambles, quotes, ...) and ``failures`` (parts it could not read, by part and reason)."""

    def scores(self) -> dict[str, dict[str, SseuScores]]:
        """:attr:`table`, typed: ``analysis.json``'s ``sseu[model][mode]`` (the keys a row has are the fields set)."""
        return {m: {mode: SseuScores.from_data(row) for mode, row in modes.items()} for m, modes in self.table.items()}

    def curve_points(self) -> dict[str, dict[str, list[CurvePoint]]]:
        """:attr:`curves`, typed: ``analysis.json``'s ``snr_curves[model][task]``."""
        return {
            m: {task: [CurvePoint.from_data(p) for p in points] for task, points in tasks.items()}
            for m, tasks in self.curves.items()
        }

    def detail(self, scope: str | None = None) -> SseuDetail:
        """The paired mode differences, the cleanup and the settings: ``analysis.json``'s ``sseu_detail``.

        Args:
            scope: What the table covers, in words (written as ``scope``).
        """
        return SseuDetail.from_data(
            {
                "differences": self.as_dict()["differences"],
                "cleanup": self.cleanup,  # as given (the fields set), like analysis.json
                "embedder": self.embedder,
                "reps": self.reps,
                "seed": self.seed,
                "scope": scope,
            }
        )

    def as_dict(self) -> dict[str, Any]:
        """The JSON form, a serializer (``differences[model] = [comparison...]``)."""
        return {
            "table": self.table,
            "curves": self.curves,
            "differences": {m: [asdict(c) for c in cs] for m, cs in self.comparisons.items()},
            "cleanup": {model: counts.model_dump() for model, counts in self.cleanup.items()},
            "embedder": self.embedder,
            "reps": self.reps,
            "seed": self.seed,
        }

    def cleanup_frame(self) -> Any:
        """What the output parser removed and could not read, one row per (model, what, count)."""
        import pandas as pd

        rows = []
        for model, counts in self.cleanup.items():
            rows.append({"model": model, "what": "answers read", "count": counts.answers})
            rows += [{"model": model, "what": f"removed: {k}", "count": n} for k, n in counts.removed.items()]
            rows += [
                {"model": model, "what": f"failed {part}: {why}", "count": n}
                for part, reasons in counts.failures.items()
                for why, n in reasons.items()
            ]
        return pd.DataFrame(rows, columns=["model", "what", "count"])

    def table_frame(self) -> Any:
        """The SSEU table as rows: model, mode, WER, mACC and mAP (percent, each with its interval), n, failures."""
        import pandas as pd

        rows = []
        for model, modes in self.table.items():
            for mode, row in modes.items():

                def pct(key: str, row: Mapping[str, Any] = row) -> str:
                    value, ci = row.get(key), row.get(f"{key}_ci") or (None, None)
                    if value is None:
                        return "-"
                    if ci[0] is None:
                        return f"{value * 100:.1f}"
                    return f"{value * 100:.1f} [{ci[0] * 100:.1f}, {ci[1] * 100:.1f}]"

                rows.append(
                    {
                        "model": model,
                        "mode": mode,
                        "WER % (lower better)": pct("wer"),
                        "mACC %": pct("macc"),
                        "mAP %": pct("map"),
                        "mAP floor %": "-" if row.get("map_floor") is None else f"{row['map_floor'] * 100:.1f}",
                        "clips": row["n"],
                        "failures": row["failures"],
                    }
                )
        return pd.DataFrame(rows)

    def curves_frame(self) -> Any:
        """The SNR curves as one long frame: model, task, metric, mode, snr_db, n, value, ci_low, ci_high."""
        import pandas as pd

        rows = [
            {"model": model, "task": task, "metric": METRIC_OF_TASK[task], **point}
            for model, tasks in self.curves.items()
            for task, points in tasks.items()
            for point in points
        ]
        return pd.DataFrame(
            rows, columns=["model", "task", "metric", "mode", "snr_db", "n", "value", "ci_low", "ci_high"]
        )

    def differences_frame(self) -> Any:
        """Every mode difference as rows (model, comparison, task, metric, difference with its CI, sacrificed)."""
        import pandas as pd

        rows = []
        for model, comparisons in self.comparisons.items():
            for comparison in comparisons:
                for d in comparison.differences.values():
                    rows.append(
                        {
                            "model": model,
                            "comparison": f"{d.mode} - {d.baseline}",
                            "task": d.task,
                            "metric": d.metric,
                            "clips": d.n_clips,
                            "difference": d.value,
                            "ci_low": d.ci_low,
                            "ci_high": d.ci_high,
                            "worse": d.worse,
                            "better": d.better,
                            "sacrificed": comparison.sacrificed == d.task,
                        }
                    )
        return pd.DataFrame(rows)


def outcomes_by_model(
    items: Iterable[Any], responses: Mapping[str, Mapping[str, Response]], *, perturbations: bool = False
) -> dict[str, list[ReferenceOutcome]]:
    """Every part of every reference-scored item, read from each model's latest responses.

    Args:
        items: Items of any kind (only the reference-scored ones are read).
        responses: ``{model: {uid: latest response}}``.
        perturbations: Keep the perturbed copies (``meta.perturbation_of``,
            :mod:`airbench_nb.builders.perturbations`); left out by default, as the score tables leave them out. The
            audio-reliance controls (``meta.control_of``) are always left out (the controls section reads them).
    """
    reference = [  # the SSEU kinds (UG-Bench kinds: analysis.ugtasks)
        i for i in items if i.kind in PARTS_OF_KIND and (perturbations or not is_perturbed(i)) and not is_control(i)
    ]
    return {
        model: [read_part(item, by_uid.get(item.uid), part) for item in reference for part in PARTS_OF_KIND[item.kind]]
        for model, by_uid in responses.items()
    }


def sseu_analysis(
    outcomes: Mapping[str, Sequence[ReferenceOutcome]],
    *,
    embedder: str | None = None,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
) -> SseuAnalysis:
    """The SSEU table, SNR curves and mode differences of each model's outcomes (see the module docstring).

    A model's mode counts only when the model answered at least one item of it (a model that does not serve a kind
    has no row there). Within an answered mode, items it failed are failures kept in the statistics.
    """
    from airbench_nb.embeddings import DEFAULT_EMBEDDER, load_embedder

    backend = load_embedder(embedder)
    table: dict[str, dict[str, dict[str, Any]]] = {}
    curves: dict[str, dict[str, list[dict[str, Any]]]] = {}
    comparisons: dict[str, list[ModeComparison]] = {}
    cleanup: dict[str, dict[str, Any]] = {}
    for model, model_outcomes in outcomes.items():
        cleanup[model] = cleanup_counts(model_outcomes)
        groups: dict[tuple[str, str], list[ReferenceOutcome]] = defaultdict(list)
        for o in model_outcomes:
            groups[(o.mode, o.part)].append(o)
        answered_modes = {o.mode for o in model_outcomes if o.answered}
        primitives: dict[tuple[str, str], TaskScores] = {}
        for task, part in TASKS.items():
            for mode in MODES:
                group = groups.get((mode, part))
                if mode in answered_modes and group and any(o.answered for o in group):
                    primitives[(mode, task)] = task_scores(task, group, backend)
        table[model] = _table_rows(primitives, reps, seed, model)
        curves[model] = _curves(primitives, reps, seed, model)
        comparisons[model] = _comparisons(primitives, reps, seed, model)
    return SseuAnalysis(table, curves, comparisons, embedder or DEFAULT_EMBEDDER, reps, seed, cleanup)


def cleanup_counts(outcomes: Sequence[ReferenceOutcome]) -> SseuCleanup:
    """What the output parser did over one model's answers: answers read, clean-ups applied, parts not read.

    A clean-up counts once per answer (a joint answer's three parts share it); its tag is the kind of clean-up
    (``preamble: The transcript is:`` counts as ``preamble``). Failures count per part, by reason; answers that do not
    exist (a kind the model was not asked) are not counted.
    """
    answers: dict[str, tuple[str, ...]] = {}
    failures: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for o in outcomes:
        if not o.answered:
            continue
        answers[o.uid] = o.removed
        if o.failure is not None:
            failures[o.part][o.failure] += 1
    removed: dict[str, int] = defaultdict(int)
    for tags in answers.values():
        for tag in dict.fromkeys(t.split(":", 1)[0] for t in tags):
            removed[tag] += 1
    return SseuCleanup(
        answers=len(answers),
        removed=dict(sorted(removed.items(), key=lambda kv: -kv[1])),
        failures={part: dict(reasons) for part, reasons in failures.items()},
    )


def _mixed(scores: TaskScores) -> TaskScores:
    return scores.subset([i for i, s in enumerate(scores.snr) if s is not None])


def _table_rows(primitives: Mapping[tuple[str, str], TaskScores], reps: int, seed: int, model: str) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        present = {task: primitives[(mode, task)] for task in TASKS if (mode, task) in primitives}
        if not present:
            continue
        row: dict[str, Any] = {}
        clips: set[str | None] = set()
        failures: dict[str, int] = {}
        for task, scores in present.items():
            mixed = _mixed(scores)
            metric = METRIC_OF_TASK[task]
            value, low, high, grouping = clustered_estimate(mixed, reps, seed, f"sseu/{model}/{mode}/{task}")
            row[metric], row[f"{metric}_ci"] = value, [low, high]
            if grouping is not None and grouping.clustered:
                row["clusters"] = max(row.get("clusters") or 0, grouping.clusters)
                row.setdefault("design_effects", {})[metric] = grouping.design_effect
            if task == "transcription":
                row["wer_detail"] = mixed.wer_profile()
            else:
                row[f"{metric}_exact"] = mixed.exact_view()  # macc_exact: exact-label accuracy; map_exact: micro F1
            if task == "events":  # the mAP an all-empty answer set gets on these clips (tagging.map_floor)
                from airbench_nb.scoring.tagging import map_floor

                row["map_floor"] = map_floor(mixed.truth) if mixed.n else None
            clips.update(c if c is not None else f"item{i}" for i, c in enumerate(mixed.clips))
            failures[task] = scores.failures
        for metric in ("wer", "macc", "map"):
            row.setdefault(metric, None)
            row.setdefault(f"{metric}_ci", [None, None])
        row.setdefault("map_floor", None)
        row["n"] = len(clips)
        row["failures"] = sum(failures.values())
        row["failures_by_task"] = failures
        rows[mode] = row
    return rows


def _curves(
    primitives: Mapping[tuple[str, str], TaskScores], reps: int, seed: int, model: str
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for (mode, task), scores in primitives.items():
        levels = sorted({s for s in scores.snr if s is not None}) + ([None] if None in scores.snr else [])
        for snr in levels:
            sub = scores.subset([i for i, s in enumerate(scores.snr) if s == snr])
            value, low, high = estimate(sub, reps, seed, f"snr/{model}/{mode}/{task}/{snr}")
            point = {"mode": mode, "snr_db": snr, "n": sub.n, "value": value, "ci_low": low, "ci_high": high}
            out.setdefault(task, []).append(point)
    return out


def _comparisons(
    primitives: Mapping[tuple[str, str], TaskScores], reps: int, seed: int, model: str
) -> list[ModeComparison]:
    out = []
    for mode, baseline in COMPARISONS:
        differences = {}
        for task in TASKS:
            a, b = primitives.get((mode, task)), primitives.get((baseline, task))
            if a is None or b is None:
                continue
            d = paired_difference(
                _mixed(a), _mixed(b), mode, baseline, reps, seed, f"paired/{model}/{mode}/{baseline}/{task}"
            )
            if d is not None:
                differences[task] = d
        if not differences:
            continue
        losses = [d for d in differences.values() if d.worse]
        sacrificed = max(losses, key=lambda d: d.relative if d.relative is not None else 0.0).task if losses else None
        out.append(ModeComparison(mode, baseline, differences, sacrificed))
    return out


__all__ = [
    "COMPARISONS",
    "Difference",
    "ModeComparison",
    "SseuAnalysis",
    "TaskScores",
    "cleanup_counts",
    "estimate",
    "outcomes_by_model",
    "paired_difference",
    "sseu_analysis",
    "task_scores",
]
