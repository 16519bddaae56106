"""Names, label sets, measure captions and frame columns shared by the agreement modules."""

from __future__ import annotations

KINDS: tuple[str, str] = ("foundation", "chat")
"""Pair kinds, in report order."""

UNCLEAR = "unclear"
"""Foundation label of an answer that picks no option, or not clearly one (and of a judge that abstained)."""
MODEL, REFERENCE, TIE = "model", "reference", "tie"
"""Chat labels: which answer is better, in model/reference terms."""
CHAT_LABELS: tuple[str, ...] = (MODEL, REFERENCE, TIE)
"""Chat label set, in display order."""
EXCLUDED: dict[str, str] = {"foundation": UNCLEAR, "chat": TIE}
"""Per kind, the class the secondary measure leaves out."""
SUFFIX: dict[str, str] = {"foundation": "_clear", "chat": "_no_ties"}
"""Per kind, the key suffix of the secondary measure (``agreement_clear``, ``agreement_no_ties``)."""

STRICT_JUDGE = "protocol:strict"
"""Pseudo-judge: the strict protocol's deciding Foundation verdict (reported with more than one Foundation judge)."""
OFFICIAL_JUDGE = "protocol:official"
"""Pseudo-judge: the official first/second-to-last character rule."""
HUMANS = "human vs human"
"""Row name of the pairwise human agreement in :func:`agreement_frame`."""

HEADLINE = (
    "agreement: judge vs each annotator's label, one vote per (pair, annotator), every vote counted (MT-Bench); "
    "majority: judge vs the majority label, one unit per pair"
)
"""Which judge-human measure is the headline, in words."""
BOOTSTRAP = "percentile bootstrap over pairs, 95% (scipy.stats.bootstrap)"
"""How intervals over resampled pairs are computed."""
COHEN = "Cohen's kappa (sklearn.metrics.cohen_kappa_score)"
"""Statistic of two annotators (and of judge vs human)."""
FLEISS = "Fleiss' kappa (statsmodels.stats.inter_rater.fleiss_kappa)"
"""Statistic of three or more annotators."""
KRIPPENDORFF = "Krippendorff's alpha, nominal (krippendorff.alpha)"
"""Statistic that allows missing labels."""
PAIRWISE = "pairwise percent agreement of annotators (MT-Bench human-human agreement)"
"""The human-human share comparable to judge-human agreement."""
CONFIDENCE = 0.95
"""Coverage of every interval."""
REPS = 1000
"""Default bootstrap resamples."""

LABEL_COLUMNS: tuple[str, ...] = (
    "pair_id",
    "annotator",
    "kind",
    "uid",
    "model",
    "task",
    "category",
    "label",
    "shown",
)
"""Columns of :func:`resolve_labels` (``shown``: the raw Chat preference in shown order, or the option index)."""
DECISION_COLUMNS: tuple[str, ...] = ("judge", "pair_id", "kind", "category", "decision", "detail")
"""Columns of :func:`judge_decisions`."""
VOTE_COLUMNS: tuple[str, ...] = (
    "judge",
    "kind",
    "pair_id",
    "category",
    "annotator",
    "judge_label",
    "human_label",
    "agree",
)
"""Columns of :func:`votes`."""
DISAGREEMENT_COLUMNS: tuple[str, ...] = (
    "judge",
    "kind",
    "pair_id",
    "uid",
    "model",
    "task",
    "category",
    "judge_decision",
    "judge_detail",
    "human_labels",
    "majority",
    "humans_agreeing",
    "question",
    "answer",
    "audio",
)
"""Columns of :func:`disagreements`."""
FRAME_COLUMNS: tuple[str, ...] = ("judge", "kind", "measure", "label", "n", "agreement", "ci_low", "ci_high")
"""Columns of :func:`agreement_frame` (figure-ready)."""
CATEGORY_COLUMNS: tuple[str, ...] = (
    "judge",
    "kind",
    "category",
    "n",
    "agreement",
    "ci_low",
    "ci_high",
    "n_secondary",
    "agreement_secondary",
)
"""Columns of :func:`category_frame` (``*_secondary``: without ties for Chat, without unclear for Foundation)."""
