"""Judge-human and inter-annotator agreement on an annotation sample (``airbench-nb sample-annotation``).

The rules, stated once:

**Labels.** A label file is a log of one annotator's actions (:class:`~airbench_nb.records.Label`). Actions are
replayed in the order given (files in argument order, lines in file order; label files are append-only): ``label``
pushes a decision onto the (annotator, pair) stack, ``undo`` pops the latest one (an undo with nothing to retract
is counted and ignored), ``skip`` changes nothing. The annotator's label of a pair is the top of its stack: the
latest label not undone. Foundation labels are option letters (``A``-``D``, from ``choice``) or ``unclear`` (the
answer picks no option, or not clearly one). Chat preferences are recorded in SHOWN order (``"1"``, ``"2"``,
``"tie"``) and translated with the pair's ``model_answer`` into ``model`` / ``reference`` / ``tie``.

**Judges.** Foundation: a judge's decision is the option its verdict chose (``Verdict.choice`` as a letter); a
judge that abstained (``choice`` None) decided ``unclear``, so it agrees with a human who marked the pair
"none / unclear" and disagrees with one who picked an option. Two reading rules of the kit are reported as
judges too: ``protocol:official`` (the official first/second-to-last character rule; an unreadable answer is
``unclear``; a letter past the options can never agree) and, when a run has more than one Foundation judge,
``protocol:strict`` (the strict protocol's deciding verdict: ``rule`` first, then the others). Chat: a judge's
preference comes from its two scores averaged over both orders (model vs reference: higher wins, equal is
``tie``); a pair needs a parsed score in both orders, otherwise the judge did not decide it (counted in
``missing``). Judgments are the current verdicts of the model's latest response (stale ones left out).

**Judge-human agreement.** The headline compares the judge with each annotator's label: one vote per (pair,
annotator), every vote counted, as MT-Bench computes agreement. Beside it: the same with an excluded class left
out (Chat: pairs where either side says tie, MT-Bench's "without ties"; Foundation: where either side says
unclear), Cohen's kappa of judge vs human over the votes, and the agreement with the majority label of each pair
(the unique most frequent label; pairs without one counted in ``no_majority``). Intervals: Wilson 95% when every
pair gives one vote (independent units), otherwise a percentile bootstrap that resamples pairs (votes on one pair
are not independent). Every block is repeated per category.

**Inter-annotator agreement** (per kind, since the label sets differ): Cohen's kappa for two annotators
(:func:`sklearn.metrics.cohen_kappa_score`) or Fleiss' kappa for more (:mod:`statsmodels.stats.inter_rater`),
computed on the pairs every annotator labelled; Krippendorff's alpha (nominal, the ``krippendorff`` package) on
every pair with at least two labels, so missing labels are allowed; and the pairwise percent agreement of humans
(share of agreeing annotator pairs, MT-Bench's human-human agreement: the ceiling to read judges against). Kappa
and alpha come with a 95% percentile bootstrap interval resampling pairs (:func:`scipy.stats.bootstrap`, seeded;
resamples in which the statistic is undefined, e.g. a single label, are left out and counted in ``note``), the
pairwise agreement with an interval chosen as for judges (Wilson with two annotators, else the pair bootstrap);
each with its n. Foundation categories are the option letters and ``unclear``; Chat categories ``model``,
``reference``, ``tie``. A pair bootstrap with very few pairs is narrow (every resample may give the same share).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from airbench_nb.analysis.agreement.constants import (
    BOOTSTRAP,
    CATEGORY_COLUMNS,
    CHAT_LABELS,
    COHEN,
    CONFIDENCE,
    DECISION_COLUMNS,
    DISAGREEMENT_COLUMNS,
    EXCLUDED,
    FLEISS,
    FRAME_COLUMNS,
    HEADLINE,
    HUMANS,
    KINDS,
    KRIPPENDORFF,
    LABEL_COLUMNS,
    MODEL,
    OFFICIAL_JUDGE,
    PAIRWISE,
    REFERENCE,
    REPS,
    STRICT_JUDGE,
    SUFFIX,
    TIE,
    UNCLEAR,
    VOTE_COLUMNS,
)
from airbench_nb.analysis.agreement.judges import (
    _chat_decisions,
    _foundation_decisions,
    judge_decisions,
    majority_label,
    votes,
)
from airbench_nb.analysis.agreement.labels import (
    _canonical,
    _check,
    _line_numbers,
    chat_label,
    read_labels,
    read_sample,
    resolve_labels,
)
from airbench_nb.analysis.agreement.statistics import (
    _alpha_of,
    _bootstrap,
    _codes,
    _inter_measures,
    _judge_measures,
    _kappa_of,
    _pairwise,
    _share,
    _vote_share,
    cohen_kappa,
    inter_annotator,
    judge_human,
    reliability_matrix,
)
from airbench_nb.analysis.agreement.tables import (
    MEASURES,
    _shown_label,
    agreement_frame,
    category_frame,
    disagreements,
)

__all__ = [
    "AgreementResult",
    "BOOTSTRAP",
    "CATEGORY_COLUMNS",
    "CHAT_LABELS",
    "COHEN",
    "CONFIDENCE",
    "DECISION_COLUMNS",
    "DISAGREEMENT_COLUMNS",
    "EXCLUDED",
    "FLEISS",
    "FRAME_COLUMNS",
    "HEADLINE",
    "HUMANS",
    "KINDS",
    "KRIPPENDORFF",
    "LABEL_COLUMNS",
    "MEASURES",
    "MODEL",
    "OFFICIAL_JUDGE",
    "PAIRWISE",
    "REFERENCE",
    "REPS",
    "STRICT_JUDGE",
    "SUFFIX",
    "TIE",
    "UNCLEAR",
    "VOTE_COLUMNS",
    "_alpha_of",
    "_bootstrap",
    "_canonical",
    "_chat_decisions",
    "_check",
    "_codes",
    "_foundation_decisions",
    "_inter_measures",
    "_judge_measures",
    "_kappa_of",
    "_line_numbers",
    "_pairwise",
    "_share",
    "_shown_label",
    "_vote_share",
    "agreement",
    "agreement_frame",
    "category_frame",
    "chat_label",
    "cohen_kappa",
    "disagreements",
    "inter_annotator",
    "judge_decisions",
    "judge_human",
    "majority_label",
    "read_labels",
    "read_sample",
    "reliability_matrix",
    "resolve_labels",
    "votes",
]

logger = logging.getLogger(__name__)


class AgreementResult(dict[str, Any]):
    """The JSON-serialisable result of :func:`agreement`, with display frames as attributes (not serialised)."""

    labels: pd.DataFrame
    """:func:`resolve_labels`."""
    decisions: pd.DataFrame
    """:func:`judge_decisions`."""
    votes: pd.DataFrame
    """:func:`votes`."""
    disagreements: pd.DataFrame
    """:func:`disagreements`, for a table with an audio player per row."""
    frame: pd.DataFrame
    """:func:`agreement_frame`, for :func:`airbench_nb.plots.agreement_bars`."""
    categories: pd.DataFrame
    """:func:`category_frame`."""

    def counts_line(self) -> str:
        """One line: how many pairs were labelled, by how many annotators, with how many actions; the headline."""
        counts = self["counts"]
        return (
            f"{counts['labelled_pairs']} of {counts['pairs']} pairs labelled by {len(self['annotators'])} "
            f"annotator(s) ({counts['labels']} labels, {counts['undos']} undos, {counts['skips']} skips); "
            f"{self['headline']}"
        )

    def judge_rows(self) -> list[dict[str, str | int]]:
        """The judge-human agreement table that ``airbench-nb agreement`` prints and notebook 06 shows.

        Returns:
            One row per judge and measure (Foundation also without unclear labels, Chat also without ties; the
            human-human reference last): ``judge, measure, n, agreement, 95% CI``, and for the main measure Cohen's
            ``kappa`` and the agreement with the annotators' ``majority`` (with its ``n majority``). Numbers are
            written with three decimals; a value that could not be computed is blank.
        """
        rows: list[dict[str, str | int]] = []
        for row in agreement_frame(self, secondary_foundation=True).to_dict("records"):
            block = self["judges"].get(row["judge"], {}).get(row["kind"], {})
            main = row["measure"] == "agreement"
            majority = block.get("majority", {}) if main else {}
            rows.append(
                {
                    "judge": row["judge"],
                    "measure": row["label"],
                    "n": row["n"],
                    "agreement": _number(row["agreement"]),
                    "95% CI": _interval(row["ci_low"], row["ci_high"]),
                    "kappa": _number(block.get("kappa")) if main else "",
                    "majority": _number(majority.get("agreement")),
                    "n majority": majority.get("n", ""),
                }
            )
        return rows

    def inter_annotator_rows(self) -> list[dict[str, str | int]]:
        """The inter-annotator table that ``airbench-nb agreement`` prints and notebook 06 shows.

        Returns:
            One row per kind: ``kind, annotators, statistic`` (Cohen's or Fleiss' kappa), ``kappa, 95% CI, n``
            (bootstrap over pairs), Krippendorff's ``alpha`` (nominal) with its ``alpha 95% CI`` and ``n alpha``.
        """
        return [
            {
                "kind": kind,
                "annotators": block["n_annotators"],
                "statistic": (block["statistic"] or "").split(" (")[0],
                "kappa": _number(block["cohen_kappa"] if block["cohen_kappa"] is not None else block["fleiss_kappa"]),
                "95% CI": _interval(block["ci_low"], block["ci_high"]),
                "n": block["n"],
                "alpha": _number(block["krippendorff_alpha"]),
                "alpha 95% CI": _interval(block["alpha_ci_low"], block["alpha_ci_high"]),
                "n alpha": block["n_alpha"],
            }
            for kind, block in self["inter_annotator"].items()
        ]

    def category_rows(self) -> list[dict[str, str | int]]:
        """The per-category judge-human table that ``airbench-nb agreement`` prints and notebook 06 shows.

        Returns:
            One row per judge, kind and category (:attr:`categories`): ``judge, kind, category, n, agreement, 95%
            CI``.
        """
        return [
            {
                "judge": row["judge"],
                "kind": row["kind"],
                "category": row["category"],
                "n": row["n"],
                "agreement": _number(row["agreement"]),
                "95% CI": _interval(row["ci_low"], row["ci_high"]),
            }
            for row in self.categories.to_dict("records")
        ]


def _number(value: Any) -> str:
    """A statistic with three decimals; blank when it is missing or NaN."""
    return "" if value is None or value != value else f"{value:.3f}"


def _interval(low: Any, high: Any) -> str:
    """A 95% interval as ``[low, high]``, three decimals each."""
    return f"[{_number(low)}, {_number(high)}]"


def agreement(
    run_dir: str | Path,
    sample: str | Path,
    label_files: Sequence[str | Path],
    seed: int = 0,
    *,
    judges: Sequence[str] | None = None,
    reps: int = REPS,
) -> AgreementResult:
    """Judge-human and inter-annotator agreement of an annotated sample of a run.

    Args:
        run_dir: The run folder the sample was drawn from (``data/``, ``responses/``, ``verdicts/``).
        sample: The sample JSONL (:class:`~airbench_nb.records.AnnotationPair` lines).
        label_files: Label JSONL files (:class:`~airbench_nb.records.Label` lines), replayed in this order.
        seed: Bootstrap seed.
        judges: Judge specs to report (pseudo-judges included; default all).
        reps: Bootstrap resamples.

    Returns:
        A dict (JSON-serialisable; attributes hold the frames, see :class:`AgreementResult`)::

            {"run_dir", "sample", "label_files", "seed", "reps", "headline",
             "counts": {"pairs", "foundation_pairs", "chat_pairs", "not_in_run", "labelled_pairs",
                        "actions", "labels", "skips", "undos", "undo_without_label", "resolved",
                        "by_annotator": {annotator: labelled pairs}},
             "annotators": [...],
             "judges": {judge: {"foundation": block, "chat": block}},   # see judge_human()
             "inter_annotator": {"foundation": block, "chat": block},   # see inter_annotator()
             "reasons": {key: why}}                                     # what could not be computed

    Raises:
        ManifestError: On a bad sample or label line, or a label that does not fit its pair (file, line named).
        FileNotFoundError: If a file, or the run's manifests, do not exist.
    """
    from airbench_nb.analysis.data import load_run

    pairs = read_sample(sample)
    actions, sources = read_labels(label_files)
    labels = resolve_labels(actions, pairs, sources)
    run = load_run(run_dir)
    decisions = judge_decisions(run, pairs, judges)
    not_in_run = sum(1 for p in pairs if p.uid not in run.items or p.model not in run.responses)
    reasons: dict[str, str] = {}
    if labels.empty:
        reasons["labels"] = "no pair has a label (every label undone or skipped, or no label files)"
    if decisions.empty:
        reasons["judges"] = "no judge decided a pair of the sample"
    judged = judge_human(decisions, labels, seed, reps)
    if not judged and not labels.empty and not decisions.empty:
        reasons["judges"] = "no judge decided a labelled pair"
    inter = inter_annotator(labels, seed, reps, categories={p.pair_id: p.category for p in pairs})
    for kind, block in inter.items():
        if block.get("reason"):
            reasons[f"inter_annotator.{kind}"] = block["reason"]
    annotators = sorted(labels["annotator"].unique().tolist()) if not labels.empty else []
    counts = {
        "pairs": len(pairs),
        "foundation_pairs": sum(p.kind == "foundation" for p in pairs),
        "chat_pairs": sum(p.kind == "chat" for p in pairs),
        "not_in_run": not_in_run,
        "labelled_pairs": int(labels["pair_id"].nunique()) if not labels.empty else 0,
        **labels.attrs["counts"],
        "by_annotator": {a: int(n) for a, n in labels.groupby("annotator").size().items()} if annotators else {},
    }
    result = AgreementResult(
        run_dir=str(run_dir),
        sample=str(sample),
        label_files=[str(f) for f in label_files],
        seed=seed,
        reps=reps,
        headline=HEADLINE,
        counts=counts,
        annotators=annotators,
        judges=judged,
        inter_annotator=inter,
        reasons=reasons,
    )
    result.labels = labels
    result.decisions = decisions
    result.votes = votes(decisions, labels)
    result.disagreements = disagreements(decisions, labels, pairs)
    result.frame = agreement_frame(result)
    result.categories = category_frame(result)
    logger.info(
        "agreement: %d pairs, %d labels from %d annotators, %d judges, %d disagreements",
        len(pairs),
        len(labels),
        len(annotators),
        len(judged),
        len(result.disagreements),
    )
    return result
