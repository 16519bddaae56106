"""Decoding stability: how far a model's choice answers change when it samples (``infer --samples K``).

For each model, each task and all its tasks pooled (``task`` None), over the choice items (AIR-Bench's Foundation
items and the choice-QA benchmarks' MMAU, MMAR and MMSU items; neither SNR-graded, rotated, control nor perturbed
copies) that have a main answer and all K sampled answers (:mod:`airbench_nb.runner.samples`):

- **greedy accuracy**: the share of items whose main answer (``<kind>.jsonl``, decoded greedily with ``--samples``)
  is right;
- **expected accuracy**: the mean over items of ``p_i``, the share of item i's K samples that are right (the accuracy
  one sampled run has on average);
- **majority-vote accuracy**: the share of items whose most frequent sampled answer is right; a tie goes to the
  answer sampled first among the tied ones (the lowest sample index), an abstention counting as one answer that is
  never right;
- **consistency**: the share of items whose K samples all read as the same option (all abstaining counts as the same
  answer);
- **per-item variance**: the mean over items of ``p_i (1 - p_i)``, the variance of one sample's right-or-wrong on the
  item (0 when the item is always or never answered right).

Scoring. Every answer, main or sampled, is read by the kit's rule extractor
(:func:`~airbench_nb.judge.extract.extract_choice`, the strict protocol's reading) against the gold option; an
abstention (nothing read) counts as wrong. No judge is asked.

Intervals. Every figure is a mean over items of one value per item, and its 95% interval a percentile bootstrap
resampling the items' clusters (:func:`~airbench_nb.records.cluster_of`: the questions about one recording are drawn
together), the union of the clustered and the item-level interval where items share clusters
(:func:`~airbench_nb.scoring.wer.clustered_ratio_interval`, :mod:`airbench_nb.scoring.resample`); the design effect
is that of expected accuracy. The K samples of an item are its own measurement, not resampled.

Deterministic backends (baselines, classifiers, CLAP, TTS: :func:`~airbench_nb.models.base.samples_vary` false) are
asked once whatever K; their rows say ``deterministic`` with K = 1: consistency 1 and variance 0 by construction,
not measured.

Items left out are counted per model: an item with a sample missing or ending in error (rerun ``infer`` to heal it),
or without a usable main answer.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from airbench_nb.analysis.registry import register_analysis_section
from airbench_nb.analysis.section import Section
from airbench_nb.analysis_report import Interval, Number, Payload
from airbench_nb.records import CONTROL_OF_KEY, PERTURBATION_OF_KEY, Response, cluster_of

if TYPE_CHECKING:
    from airbench_nb.analysis.report import RunAnalysis
    from airbench_nb.run_folder import RunFolder

logger = logging.getLogger(__name__)

CHOICE_KINDS: tuple[str, ...] = ("foundation", "mmau", "mmar", "mmsu")
"""The manifest kinds whose items the stability analysis reads (single-choice items scored by a letter)."""
DERIVED_KEYS: tuple[str, ...] = ("clean_uid", "rotation_of", CONTROL_OF_KEY, PERTURBATION_OF_KEY)
"""Item ``meta`` keys of derived copies (SNR-graded, rotated, control, perturbed), left out."""
MEASURES: tuple[str, ...] = ("greedy", "expected", "majority", "consistency", "variance")
"""The five figures of a row, in table order."""
MEASURE_LABELS: dict[str, str] = {
    "greedy": "greedy accuracy",
    "expected": "expected accuracy",
    "majority": "majority-vote accuracy",
    "consistency": "consistency",
    "variance": "per-item variance",
}
"""How each figure is named in tables and on the page."""
SCORING = (
    "every answer (main and sampled) read by the rule extractor (extract_choice, strict protocol) against the gold "
    "option; an abstention counts as wrong"
)
"""How answers are scored, as the page and ``analysis.json`` say it."""
TIE_RULE = "a tie goes to the tied answer sampled first (lowest sample index); an abstention is never right"
"""How a majority vote's tie is broken."""
FIGURE_KEY = "stability"
"""Key of :data:`airbench_nb.plots.FIGURE_NAMES` the figure is saved under
(``figures/greedy-expected-majority-accuracy.png``)."""


# ------------------------------------------------------------------------------------------------------------- items


@dataclass(frozen=True)
class ItemSamples:
    """One item's main answer and K sampled answers, each read as an option index (None: abstained)."""

    uid: str
    """The item's uid."""
    task: str
    """Its task."""
    cluster: str
    """Its cluster key (:func:`~airbench_nb.records.cluster_of`)."""
    gold: int
    """Index of the right option."""
    greedy: int | None
    """The option the main answer chose, or None."""
    samples: tuple[int | None, ...]
    """The option each sample chose, by sample index (None: abstained)."""

    @property
    def greedy_correct(self) -> float:
        """1 when the main answer is right, else 0."""
        return float(self.greedy is not None and self.greedy == self.gold)

    @property
    def p(self) -> float:
        """The share of samples that are right."""
        return sum(a is not None and a == self.gold for a in self.samples) / len(self.samples)

    @property
    def majority(self) -> int | None:
        """The most frequent sampled answer (see :func:`majority_answer`)."""
        return majority_answer(self.samples)

    @property
    def majority_correct(self) -> float:
        """1 when the majority answer is right, else 0."""
        vote = self.majority
        return float(vote is not None and vote == self.gold)

    @property
    def consistent(self) -> float:
        """1 when every sample read as the same answer (abstentions alike), else 0."""
        return float(len(set(self.samples)) == 1)

    @property
    def variance(self) -> float:
        """``p (1 - p)``: the variance of one sample's right-or-wrong."""
        return self.p * (1.0 - self.p)

    def values(self) -> dict[str, float]:
        """The item's value of each of :data:`MEASURES`."""
        return {
            "greedy": self.greedy_correct,
            "expected": self.p,
            "majority": self.majority_correct,
            "consistency": self.consistent,
            "variance": self.variance,
        }


def majority_answer(answers: Sequence[int | None]) -> int | None:
    """The most frequent answer; a tie goes to the tied answer that occurs first (see :data:`TIE_RULE`).

    Raises:
        ValueError: For no answers.
    """
    if not answers:
        raise ValueError("a majority vote needs at least one answer")
    counts = Counter(answers)
    top = max(counts.values())
    return next(a for a in answers if counts[a] == top)


# ------------------------------------------------------------------------------------------------------ the payload


class StabilityEstimate(Payload):
    """One figure: its value (a fraction) and its 95% interval."""

    value: Number
    """The mean over items."""
    ci: Interval = None
    """Its 95% cluster bootstrap interval ``[low, high]`` (the union with the item-level one where items share
    clusters)."""


class StabilityRow(Payload):
    """One model on one task (or all its tasks pooled)."""

    task: str | None
    """The task; None for all the model's tasks pooled."""
    n: int
    """Items with a main answer and every sample."""
    clusters: int
    """Clusters those items form."""
    cluster_unit: str
    """What a cluster is, in words."""
    design_effect: Number | None = None
    """Variance of the clustered bootstrap of expected accuracy over the item-level one; None when no item shares a
    cluster."""
    samples: int
    """K: the samples per item."""
    deterministic: bool
    """True for a deterministic backend, sampled once: consistency 1 and variance 0 by construction."""
    main_greedy: bool = True
    """Whether every main answer was decoded greedily; False: ``greedy`` is the accuracy of main answers decoded at a
    temperature above 0 (kept from a run before ``--samples``)."""
    temperature: Number | None = None
    """The samples' temperature."""
    greedy: StabilityEstimate
    """Greedy accuracy (the main answer)."""
    expected: StabilityEstimate
    """Expected accuracy: the mean over items of the share of right samples."""
    majority: StabilityEstimate
    """Majority-vote accuracy."""
    consistency: StabilityEstimate
    """The share of items whose samples all read as the same answer."""
    variance: StabilityEstimate
    """The mean over items of ``p (1 - p)``."""


class StabilityPayload(Payload):
    """The ``stability`` section of ``analysis.json``."""

    models: dict[str, list[StabilityRow]]
    """Per model, a row per task, then the pooled row (task None)."""
    left_out: dict[str, dict[str, int]]
    """Per model, the items with samples left out, by reason."""
    reps: int
    """Bootstrap replicates."""
    seed: int
    """Bootstrap seed."""
    scoring: str = SCORING
    """How answers were scored."""
    tie_rule: str = TIE_RULE
    """How a majority vote's tie is broken."""


# ------------------------------------------------------------------------------------------------------- computing


def estimate(values: np.ndarray, clusters: Sequence[str], reps: int, seed: int, key: str) -> tuple[Any, ...]:
    """The mean of per-item values with its cluster bootstrap interval: ``(StabilityEstimate, Clustering)``."""
    from airbench_nb.scoring.wer import clustered_ratio_interval

    values = np.asarray(values, dtype=float)
    low, high, clustering = clustered_ratio_interval(values, np.ones_like(values), reps, seed, key, list(clusters))
    ci = None if low is None or high is None else [float(low), float(high)]
    return StabilityEstimate(value=float(values.mean()), ci=ci), clustering


def stability_row(
    items: Sequence[ItemSamples],
    *,
    task: str | None,
    deterministic: bool,
    temperature: float | None,
    reps: int,
    seed: int,
    key: str,
    main_greedy: bool = True,
) -> StabilityRow:
    """The row of a set of items (one model, one task or all).

    Args:
        items: The items, each with the same number of samples.
        task: The task, None for all pooled.
        deterministic: Whether the backend is deterministic.
        main_greedy: Whether every main answer was decoded greedily.
        temperature: The samples' temperature.
        reps: Bootstrap replicates.
        seed: Bootstrap seed.
        key: What the bootstrap resamples (with ``seed``, seeds its generator).

    Raises:
        ValueError: For no items, or items with different numbers of samples.
    """
    if not items:
        raise ValueError(f"{key}: no items")
    ks = {len(i.samples) for i in items}
    if len(ks) != 1:
        raise ValueError(f"{key}: items have {sorted(ks)} samples; one K per row")
    clusters = [i.cluster for i in items]
    table = pd.DataFrame([i.values() for i in items])
    found: dict[str, StabilityEstimate] = {}
    design = None
    unit = ""
    count = 0
    for measure in MEASURES:
        # the same draws for every figure (one key): the five intervals of a row come from the same resamples
        found[measure], clustering = estimate(table[measure].to_numpy(), clusters, reps, seed, key)
        if measure == "expected":
            design, unit, count = clustering.design_effect, clustering.unit, clustering.clusters
    return StabilityRow(
        task=task,
        n=len(items),
        clusters=count,
        cluster_unit=unit,
        design_effect=design,
        samples=ks.pop(),
        deterministic=deterministic,
        main_greedy=main_greedy,
        temperature=temperature,
        **found,
    )


@dataclass
class ModelSamples:
    """One model's items with samples, how it sampled, and what was left out."""

    model: str
    """Model spec."""
    items: list[ItemSamples]
    """Items with a main answer and every sample."""
    deterministic: bool
    """Whether the backend is deterministic (sampled once)."""
    temperature: float | None
    """The samples' temperature (the first record's)."""
    left_out: dict[str, int]
    """Items with samples left out, by reason."""
    main_greedy: bool = True
    """Whether every main answer used was decoded greedily (False: answered at a temperature above 0 before the samples
    were asked; the ``greedy`` figure is then the main answer's accuracy, labelled so)."""


def _extract(text: str | None, choices: list[str]) -> int | None:
    from airbench_nb.judge.extract import extract_choice

    return extract_choice(text, choices).choice


def model_samples(
    model: str, items: Mapping[str, Any], main: Sequence[Response], sampled: Sequence[Response]
) -> ModelSamples:
    """Pair one model's main answers and samples with their items (latest record per uid and sample wins).

    Args:
        model: The model spec (records of other models are ignored).
        items: The choice items by uid (derived copies already left out).
        main: Its main responses (records without a sample index).
        sampled: Its sampled responses.
    """
    main_by_uid = {r.uid: r for r in main if r.model == model and r.sample is None}
    by_item: dict[str, dict[int, Response]] = {}
    for r in sampled:
        if r.model == model and r.sample is not None and r.uid in items:
            by_item.setdefault(r.uid, {})[r.sample] = r
    records = [r for per in by_item.values() for r in per.values()]
    deterministic = any(r.generation.get("sampling", {}).get("samples_vary") is False for r in records)
    temperature = next((float(r.generation["temperature"]) for r in records if "temperature" in r.generation), None)
    left: Counter[str] = Counter()
    complete: dict[str, tuple[int, Response]] = {}  # uid -> (samples asked, main answer)
    for uid, per in by_item.items():
        asked = _asked(per, deterministic)
        if any(per.get(s) is None or per[s].error is not None for s in range(asked)):
            left["a sample missing or failed"] += 1
            continue
        first = main_by_uid.get(uid)
        if first is None or first.error is not None:
            left["no usable main answer"] += 1
            continue
        complete[uid] = (asked, first)
    # items sampled different numbers of times (a later run with a larger K on one manifest): the first K samples of
    # each, K the fewest any complete item has, so that every row has one K
    k = min((asked for asked, _ in complete.values()), default=0)
    found = [
        ItemSamples(
            uid=uid,
            task=items[uid].task,
            cluster=cluster_of(items[uid]),
            gold=int(items[uid].answer),
            greedy=_extract(first.text, list(items[uid].choices)),
            samples=tuple(_extract(by_item[uid][s].text, list(items[uid].choices)) for s in range(k)),
        )
        for uid, (_, first) in complete.items()
    ]
    greedy = all(complete[i.uid][1].generation.get("greedy", True) is not False for i in found)
    return ModelSamples(model, found, deterministic, temperature, dict(left), greedy)


def _asked(per: Mapping[int, Response], deterministic: bool) -> int:
    """How many samples an item was asked.

    1 for a deterministic backend, else the K its records name (the largest, after a rerun with a larger K), else one
    more than its largest index.
    """
    if deterministic:
        return 1
    named = [r.generation.get("sampling", {}).get("samples") for r in per.values()]
    counts = [n for n in named if isinstance(n, int) and not isinstance(n, bool) and n > 0]
    return max(counts) if counts else 1 + max(per)


def stability_results(
    runs: Sequence[ModelSamples], *, reps: int = 1000, seed: int = 0
) -> dict[str, list[StabilityRow]]:
    """Per model, a row per task (in first-seen order) and the pooled row; models without items are left out."""
    out: dict[str, list[StabilityRow]] = {}
    for run in runs:
        if not run.items:
            continue
        tasks = list(dict.fromkeys(i.task for i in run.items))
        common = {
            "deterministic": run.deterministic,
            "main_greedy": run.main_greedy,
            "temperature": run.temperature,
            "reps": reps,
            "seed": seed,
        }
        rows = [
            stability_row(
                [i for i in run.items if i.task == task], task=task, key=f"stability:{run.model}:{task}", **common
            )
            for task in tasks
        ]
        rows.append(stability_row(run.items, task=None, key=f"stability:{run.model}:(all)", **common))
        out[run.model] = rows
    return out


def read_model_samples(folder: RunFolder, models: Sequence[str] | None = None) -> list[ModelSamples]:
    """Every model's samples in a run folder (``responses/<model>/<kind>.samples.jsonl`` of the choice kinds).

    Args:
        folder: The run folder.
        models: Keep these model specs (None: all).

    Raises:
        airbench_nb.manifests.ManifestError: On an invalid manifest or record line (file, line and field named).
    """
    from airbench_nb.manifests import read_manifest, read_records
    from airbench_nb.runner.samples import samples_file

    items: dict[str, Any] = {}
    for kind in CHOICE_KINDS:
        path = folder.manifest(kind)
        if path.is_file():
            for item in read_manifest(path):
                meta = getattr(item, "meta", None) or {}
                if not any(meta.get(k) not in (None, "") for k in DERIVED_KEYS):
                    items[item.uid] = item
    main: dict[str, list[Response]] = {}
    sampled: dict[str, list[Response]] = {}
    for model_dir in folder.model_dirs():
        for kind in CHOICE_KINDS:
            first = folder.responses_file(model_dir.name, kind)
            more = samples_file(first)
            if not more.is_file():
                continue
            for r in read_records(more, Response):
                sampled.setdefault(r.model, []).append(r)
            if Path(first).is_file():
                for r in read_records(first, Response):
                    main.setdefault(r.model, []).append(r)
    chosen = [m for m in sampled if models is None or m in models]
    return [model_samples(m, items, main.get(m, []), sampled[m]) for m in chosen]


# ---------------------------------------------------------------------------------------------------- presenting


def sampling_text(row: StabilityRow) -> str:
    """How a row's samples were drawn, in words, and whether its main answers were greedy."""
    if row.deterministic:
        text = "deterministic (sampled once)"
    else:
        text = "temperature not recorded" if row.temperature is None else f"temperature {row.temperature:g}"
    return text if row.main_greedy else f"{text}; main answer not greedy"


def stability_frame(results: Mapping[str, Sequence[StabilityRow]]) -> pd.DataFrame:
    """One row per model and task (``(all)`` pooled): n, K, whether deterministic, each figure with its interval."""
    rows = []
    for model, entries in results.items():
        for r in entries:
            row: dict[str, Any] = {
                "model": model,
                "task": r.task if r.task is not None else "(all)",
                "n": r.n,
                "clusters": r.clusters,
                "K": r.samples,
                "sampling": sampling_text(r),
            }
            for measure in MEASURES:
                estimate_ = getattr(r, measure)
                row[measure] = estimate_.value
                row[f"{measure}_low"], row[f"{measure}_high"] = (estimate_.ci or [None, None])[:2]
            rows.append(row)
    return pd.DataFrame(rows)


def stability_figure(results: Mapping[str, Sequence[StabilityRow]]) -> Any:
    """Greedy, expected and majority-vote accuracy of each model (all tasks pooled), with 95% intervals.

    Returns:
        The figure, or None when there is nothing to draw.
    """
    pooled = {m: next(r for r in rows if r.task is None) for m, rows in results.items() if rows}
    if not pooled:
        return None
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.9)
    kinds = ("greedy", "expected", "majority")
    palette = sns.color_palette("colorblind", len(kinds))
    fig, ax = plt.subplots(figsize=(2.2 * len(pooled) + 3.0, 4.0))
    width = 0.8 / len(kinds)
    for j, measure in enumerate(kinds):
        xs, ys, lows, highs = [], [], [], []
        for i, row in enumerate(pooled.values()):
            est = getattr(row, measure)
            low, high = (est.ci or [est.value, est.value])[:2]
            xs.append(i + (j - 1) * width)
            ys.append(est.value * 100)
            lows.append(max(0.0, est.value * 100 - (low if low is not None else est.value) * 100))
            highs.append(max(0.0, (high if high is not None else est.value) * 100 - est.value * 100))
        ax.bar(xs, ys, width=width, color=palette[j], label=MEASURE_LABELS[measure])
        ax.errorbar(xs, ys, yerr=[lows, highs], fmt="none", ecolor="black", capsize=2, linewidth=0.8)
    labels = [
        f"{m if len(m) <= 28 else m[:27] + '…'}\nn={r.n}, K={r.samples}"
        + (" (det.)" if r.deterministic else "")
        + ("" if r.main_greedy else "\nmain not greedy")
        for m, r in pooled.items()
    ]
    ax.set_xticks(range(len(pooled)), labels)
    ax.set_ylim(0, 100)
    ax.set_ylabel("accuracy (%)")
    ax.set_xlabel("model (n items, K samples per item)")
    sizes = sorted({r.n for r in pooled.values()})
    n_text = f"n = {sizes[0]}" if len(sizes) == 1 else f"n = {sizes[0]}-{sizes[-1]}"
    ax.set_title(
        f"Greedy vs sampled accuracy ({n_text} choice items per model)\n"
        "rule-extracted answers, 95% cluster bootstrap CI"
    )
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=len(kinds), fontsize="small", frameon=False)
    fig.tight_layout()
    return fig


def stability_section(analysis: RunAnalysis) -> Section:
    """The ``stability`` section of a run: every model's samples (:func:`stability_results`).

    Computed with the run's ``reps`` and ``seed``; empty with the reason (and so left out of ``analysis.json``) when
    no model has samples of a choice item. A model whose samples are all left out (a sample failed on every item)
    has no rows, and its count in ``left_out`` says why, with a warning in the log.
    """
    runs = read_model_samples(analysis.folder, analysis.run.models)
    results = stability_results(runs, reps=analysis.reps, seed=analysis.seed)
    left_out = {run.model: run.left_out for run in runs if run.model in results or run.left_out}
    for model, reasons in left_out.items():
        if reasons:
            counts = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
            logger.warning("stability: %s: items with samples left out (%s); rerun infer to heal", model, counts)
    if not left_out:
        return Section(
            "stability",
            {},
            reason="no sampled answers of choice items in the run: ask them with `airbench-nb infer --samples K "
            "--temperature 1.0` (docs/stability.md)",
        )
    payload = StabilityPayload(models=results, left_out=left_out, reps=analysis.reps, seed=analysis.seed)
    return Section(
        "stability",
        payload.model_dump(mode="json"),
        frame=stability_frame(results),
        figure=stability_figure(results),
        figure_key=FIGURE_KEY,
    )


register_analysis_section("stability", stability_section, StabilityPayload, optional=True)
