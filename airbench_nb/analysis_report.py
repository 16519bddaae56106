"""The typed contract of ``analysis.json``: :class:`AnalysisReport`, one payload model per section.

Notebook 05 (``RunAnalysis.write``) writes it and the landing page, the grid page and notebook 05's last cell read it,
all through :meth:`airbench_nb.run_folder.RunFolder.write_analysis` and
:meth:`~airbench_nb.run_folder.RunFolder.read_analysis`: readers use attributes, never string keys.

Every model forbids unknown fields, so a file that drifts from the contract fails on reading with the section and the
field named (``tables.scores.3.value``). A section is optional (a run analysed for some sections only writes those)
and a section with nothing to show is written as ``{}`` with its reason in :attr:`AnalysisReport.reasons`: its model
takes defaults. :meth:`AnalysisReport.to_json` writes back exactly the keys that were given, in the order of the
fields, so that ``analysis.json`` reads and writes byte for byte (the committed example depends on it).

Numbers a run computes as floats may come out as whole numbers (``1`` after a sum); :data:`Number` keeps them as
written rather than turning them into ``1.0``.

This module is ground level: it imports pydantic only, so that ``run_folder`` and both pages can read it.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Self, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, JsonValue

logger = logging.getLogger(__name__)

P = TypeVar("P", bound=BaseModel)

Number = int | float
"""A JSON number, kept as written (an int stays an int, so that a file round-trips byte for byte)."""

Interval = list[Number | None] | None
"""A ``[low, high]`` confidence interval (a bound None when undefined), or None when it could not be computed."""


class Payload(BaseModel):
    """Base of every model of ``analysis.json``: unknown fields are refused, JSON names may hold dashes."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @classmethod
    def from_data(cls, data: Any) -> Self:
        """Validate JSON-ready data (numbers as JSON writes them back; the keys given are the fields set)."""
        return cls.model_validate_json(json.dumps(data, default=_json_default))


# ------------------------------------------------------------------------------------------------------------- tables


class ScoreRow(Payload):
    """One score of the main table (a category or the average) under one protocol."""

    table: str
    """Table of ``tables.csv`` the row belongs to (``main``)."""
    model: str
    """Model spec."""
    chat_judge: str
    """Chat judge that scored the Chat rows (``-`` for Foundation)."""
    protocol: str
    """``official`` or ``strict``."""
    benchmark: str
    """``foundation`` or ``chat``."""
    level: str
    """``category`` or ``average``."""
    name: str
    """Category name, or ``average``."""
    value: Number | None
    """The score (Foundation: accuracy as a fraction; Chat: the judge's 1-10 scale)."""
    ci_low: Number | None
    """Lower bound of the 95% bootstrap interval."""
    ci_high: Number | None
    """Upper bound of the 95% bootstrap interval."""
    n: int
    """Items scored."""
    failures: int
    """Items that could not be scored."""
    partial: bool | None
    """For an average: whether a category is missing from it; None for a category."""


class TablesPayload(Payload):
    """``tables``: the AIR-Bench main table, both protocols."""

    scores: list[ScoreRow] = []
    """Rows of the main table."""


class FormatFollowing(Payload):
    """``format_following[model]``: who resolved the model's Foundation answers, as shares and counts."""

    n: int
    """Foundation answers read."""
    rule: Number | None
    """Share resolved by the rule."""
    llm_judge: Number | None
    """Share resolved by an LLM judge."""
    unresolved: Number | None
    """Share nobody resolved."""
    no_response: Number | None
    """Share with no response."""
    rule_count: int
    """Answers resolved by the rule."""
    llm_judge_count: int
    """Answers resolved by an LLM judge."""
    unresolved_count: int
    """Answers nobody resolved."""
    no_response_count: int
    """Items without a response."""


# ------------------------------------------------------------------------------------------------------ position bias


class PositionBias(Payload):
    """``position_bias[model]``: chosen against gold letters, with a chi-square test of the chosen letters."""

    model: str
    """Model spec."""
    n: int
    """Answers read as a letter."""
    n_items: int
    """Items answered."""
    chosen: dict[str, int]
    """Times each letter was chosen."""
    gold: dict[str, int]
    """Times each letter was the gold one."""
    expected: dict[str, Number | None]
    """Expected count per letter under the null (choices follow the letters offered); None for a letter not tested
    (no answer read, or a letter outside the test)."""
    chi2: Number | None
    """Chi-square statistic."""
    dof: int | None
    """Degrees of freedom."""
    p_value: Number | None
    """P value of the test, None when it could not be run."""
    accuracy_by_gold: dict[str, Number | None]
    """Accuracy per gold letter."""
    wrong_choice: dict[str, int]
    """Wrong answers per chosen letter."""
    test: str
    """The test run."""
    note: str | None
    """A caveat, or None."""
    reason: str | None
    """Why there is no test, or None."""
    letters_tested: list[str]
    """Letters the test covered."""
    null: str
    """The null hypothesis, in words."""


# ---------------------------------------------------------------------------------------------------------- circular


class Circular(Payload):
    """``circular[model]``: MMBench CircularEval over rotated copies."""

    model: str
    """Model spec."""
    items: int
    """Original items with rotations."""
    incomplete: int
    """Items missing a rotation's answer."""
    rotations: int
    """Rotated copies answered."""
    accuracy: Number | None
    """Plain accuracy over every copy."""
    consistent_rate: Number | None
    """Share of items answered the same option in every rotation."""
    circular_accuracy: Number | None
    """Share of items right in every rotation."""
    circular_accuracy_ci: Interval
    """Interval of the circular accuracy."""
    ci: str
    """How the interval was computed."""
    reason: str | None
    """Why there is no result, or None."""


# ---------------------------------------------------------------------------------------------------------- controls


class ControlEstimate(Payload):
    """A value of the controls' analysis with its bootstrap 95% interval."""

    value: Number | None
    """The value (None when it cannot be computed)."""
    ci: Interval
    """``[low, high]``: 2.5th and 97.5th percentiles of the bootstrap replicates (bounds None without replicates)."""
    n: int
    """Items it is computed over."""


class ControlScoreRow(Payload):
    """``controls[model][i].controls[j]``: the score under one control against the score with the audio."""

    control: str
    """The control (``silence``, ``noise``, ``mismatched``, ``no_audio``, ``description``)."""
    n: int
    """Items answered both with the audio and under the control."""
    with_audio: Number
    """Score with the audio over these items."""
    score: Number
    """Score under the control over these items."""
    difference: ControlEstimate
    """Control minus audio, with its paired bootstrap interval."""


class ControlsRow(Payload):
    """``controls[model][i]``: what the audio-reliance controls say of a model on one task, or on all its tasks."""

    task: str | None
    """The task; None for all the model's tasks together (after its tasks)."""
    n: int
    """Original items answered with the audio."""
    score: ControlEstimate
    """Score with the audio."""
    controls: list[ControlScoreRow]
    """Each control run."""
    audio_needed: ControlEstimate | None
    """Share of the items right with the audio and wrong under every control of ``needed_under``; None when none of
    them was run."""
    audio_needed_of_right: Number | None
    """The same items as a share of those right with the audio."""
    needed_under: list[str]
    """The controls the audio-needed share used."""
    text_prior: ControlEstimate | None
    """Best score under the controls that tell nothing of the audio (silence, mismatched, no_audio)."""
    text_prior_control: str | None
    """The control that gave it."""
    corrected: ControlEstimate | None
    """``(score - prior) / (1 - prior)``; None without a text prior."""
    corrected_why: str | None
    """Why the corrected score has no value, or how many replicates were left out; None otherwise."""
    not_answered: dict[str, str] = {}
    """Controls the run holds for these items that the model answered none of, with why (``n/a``: a backend that
    cannot be prompted without audio is not asked ``no_audio`` and ``description``)."""
    metric: str = "accuracy"
    """What ``score`` is: ``accuracy`` (Foundation items), ``judge score / 10`` (Chat, rows named ``<model> (Chat,
    judged by <judge>)``) or ``wer`` (transcripts, rows named ``<model> (transcripts, WER)``: a rise is a loss)."""


class ControlsDetail(Payload):
    """``controls_detail``: how the controls were analysed."""

    protocol: str
    """How the answers were read (``strict``: a failure is wrong; ``official``: it is left out)."""
    reps: int
    """Bootstrap replicates."""
    seed: int
    """Bootstrap seed."""
    needed_under: list[str]
    """Controls an item must be wrong under to count as needing the audio (those of them run)."""
    prior_controls: list[str]
    """Controls the text-prior score is the best of."""
    corrected: str
    """The corrected score's formula."""
    scope: str
    """Which items are analysed."""


# -------------------------------------------------------------------------------------------------------- order bias


class OrderBias(Payload):
    """``order_bias[judge][model]``: a model's Chat score shown first minus shown second, paired by item."""

    judge: str
    """Chat judge."""
    model: str
    """Model spec."""
    n_pairs: int
    """Items judged in both orders."""
    unpaired: int
    """Items judged in one order only."""
    mean_diff: Number | None
    """Mean of first-minus-second."""
    ci_low: Number | None
    """Lower bound of its interval."""
    ci_high: Number | None
    """Upper bound of its interval."""
    ci_method: str
    """How the interval was computed."""
    wilcoxon_p: Number | None
    """P value of the Wilcoxon signed-rank test."""
    test: str
    """The test run."""
    flips: int
    """Pairs whose preferred answer changed with the order."""
    ties: int
    """Tied pairs."""
    flip_rate: Number | None
    """Share of flips."""
    tie_rate: Number | None
    """Share of ties."""
    length_pairs: int
    """Pairs whose answers differ in length."""
    longer_wins: int
    """Of those, the pairs the longer answer won."""
    prefers_longer: Number | None
    """Share the longer answer won."""
    length_p: Number | None
    """P value of the length-preference test."""
    length_test: str
    """The length-preference test."""
    note: str | None
    """A caveat, or None."""


# ---------------------------------------------------------------------------------------------------- classification


class ClassScores(Payload):
    """Precision, recall, F1 and false-negative rate of one class."""

    precision: Number | None
    """Precision."""
    recall: Number | None
    """Recall."""
    f1: Number | None
    """F1."""
    fnr: Number | None
    """False-negative rate."""
    support: int
    """Gold items of the class."""


class Confusion(Payload):
    """One frequent confusion: a gold class answered as another."""

    gold: str
    """Gold class."""
    predicted: str
    """Class answered."""
    count: int
    """Times it happened."""
    share: Number
    """Share of the gold class's items."""


class Classification(Payload):
    """``classification[model][task]``: macro metrics of one closed-label task, with its confusion matrix."""

    model: str
    """Model spec."""
    task: str
    """Task name."""
    n: int
    """Items read."""
    macro_precision: Number | None
    """Macro precision."""
    macro_recall: Number | None
    """Macro recall."""
    macro_f1: Number | None
    """Macro F1."""
    macro_fnr: Number | None
    """Macro false-negative rate."""
    unanswered: int
    """Items without a readable answer."""
    labels: list[str]
    """Row labels of the confusion matrix."""
    gold_labels: list[str]
    """Classes present as gold."""
    columns: list[str]
    """Column labels of the confusion matrix."""
    confusion: list[list[int]]
    """The confusion matrix (rows: gold, columns: answered)."""
    per_class: dict[str, ClassScores]
    """Scores per class."""
    top_confusions: list[Confusion]
    """The most frequent confusions."""
    reason: str | None
    """Why the task was not analysed, or None."""


# ------------------------------------------------------------------------------------------------------------ answers


class LengthBin(Payload):
    """``answers.length[i]``: accuracy of one model's answers of one length bin."""

    model: str
    """Model spec."""
    bin: str
    """Length bin."""
    n: int
    """Answers in the bin."""
    correct: int
    """Right answers."""
    accuracy: Number | None
    """Accuracy."""
    ci_low: Number | None
    """Lower bound of its interval."""
    ci_high: Number | None
    """Upper bound of its interval."""


class AnswerConfidence(Payload):
    """``answers.confidence[model]``: confident language in wrong answers against hedging in right ones."""

    model: str
    """Model spec."""
    wrong_n: int
    """Wrong answers."""
    wrong_confident: int
    """Wrong answers worded confidently."""
    wrong_hedged: int
    """Wrong answers that hedge."""
    confident_wrong_rate: Number | None
    """Share of wrong answers worded confidently."""
    confident_wrong_ci: Interval
    """Its interval."""
    right_n: int
    """Right answers."""
    right_hedged: int
    """Right answers that hedge."""
    right_hedged_rate: Number | None
    """Share of right answers that hedge."""
    odds_ratio: Number | None
    """Odds ratio of the test."""
    p_value: Number | None
    """P value of the test."""
    test: str
    """The test run."""
    ci: str
    """How the interval was computed."""
    note: str | None
    """A caveat, or None."""
    reason: str | None
    """Why there is no result, or None."""


class AnswersPayload(Payload):
    """``answers``: answer style (length and confident language) against correctness."""

    length: list[LengthBin] = []
    """Accuracy per model and length bin."""
    confidence: dict[str, AnswerConfidence] = {}
    """Confident language per model."""


# ---------------------------------------------------------------------------------------------------------------- snr


class SnrPoint(Payload):
    """One point of an SNR curve."""

    snr_db: Number | None
    """SNR in dB; None for the clean originals."""
    clean: bool
    """Whether the point is the clean originals."""
    n: int
    """Items."""
    correct: int
    """Right answers."""
    dropped: int
    """Items left out (no answer read)."""
    accuracy: Number | None
    """Accuracy."""
    ci_low: Number | None
    """Lower bound of its interval."""
    ci_high: Number | None
    """Upper bound of its interval."""


class SnrTrend(Payload):
    """``snr_detail.trends[model]``: the slope of accuracy against SNR."""

    model: str
    """Model spec."""
    test: str | None
    """The test run, None when there was none."""
    n: int
    """Items."""
    levels: int
    """SNR levels."""
    slope: Number | None
    """Accuracy change per dB."""
    slope_ci_low: Number | None
    """Lower bound of the slope's interval."""
    slope_ci_high: Number | None
    """Upper bound of the slope's interval."""
    rho: Number | None
    """Rank correlation, when the test is one."""
    p_value: Number | None
    """P value."""
    note: str | None
    """A caveat, or None."""


class SnrDetail(Payload):
    """``snr_detail``: the SNR curves per task and background, and the trend tests."""

    by_task: dict[str, dict[str, list[SnrPoint]]] = {}
    """Curves per model and task."""
    by_background: dict[str, dict[str, list[SnrPoint]]] = {}
    """Curves per model and background."""
    trends: dict[str, SnrTrend] = {}
    """Trend test per model."""
    ci_method: str | None = None
    """How the intervals were computed."""
    reason: str | None = None
    """Why there is nothing, or None."""


# ------------------------------------------------------------------------------------------------------------ ranking


class RankingRow(Payload):
    """``ranking[i]``: one model's ranks and weighted total over the AIR-Bench categories."""

    model: str
    """Model spec."""
    ranks: dict[str, Number | None]
    """Rank per category."""
    scores: dict[str, Number | None]
    """Score per category."""
    mean_rank: Number | None
    """Weighted mean rank."""
    score: Number | None
    """Weighted total."""
    partial: bool
    """Whether a category is missing."""


class RankingDetail(Payload):
    """``ranking_detail``: how the ranking was made."""

    weights: dict[str, Number] = {}
    """Weight per category."""
    chat_scale: str | None = None
    """How Chat scores enter the ranking."""
    rank_method: str | None = None
    """How ties are ranked."""
    reason: str | None = None
    """Why there is no ranking, or None."""
    notes: list[str] = []
    """Caveats."""
    chat_judge: str | None = None
    """Judge whose Chat scores are ranked."""
    protocol: str | None = None
    """Protocol the ranking was read with."""


# --------------------------------------------------------------------------------------------------------- comparison


class ComparedModel(Payload):
    """One model of the comparison."""

    label: str
    """Its label."""
    run_dir: str
    """Its run folder."""
    model: str
    """Model spec."""


class PairDifference(Payload):
    """``comparison.comparisons[i]``: model A minus model B on one task, category or average."""

    model_a: str
    """First model."""
    model_b: str
    """Second model."""
    benchmark: str
    """``foundation`` or ``chat``."""
    level: str
    """``task``, ``category`` or ``average``."""
    name: str
    """Task or category name."""
    n: int
    """Items both answered."""
    a: Number | None
    """Score of A."""
    b: Number | None
    """Score of B."""
    diff: Number | None
    """A minus B."""
    ci_low: Number | None
    """Lower bound of the difference's interval."""
    ci_high: Number | None
    """Upper bound of the difference's interval."""
    test: str | None
    """The paired test."""
    p_value: Number | None
    """P value."""
    p_holm: Number | None
    """Holm-corrected P value."""
    verdict: str
    """The comparison in words."""
    mde: Number | None = None
    """Minimal detectable difference of the paired test's items at alpha 0.05 and 80% power
    (:mod:`airbench_nb.analysis.power`); None with fewer than 2 items or no spread."""
    design_effect: Number | None = None
    """Cluster-robust over naive variance of the mean difference (1: no item shares a cluster)."""
    clusters: int | None = None
    """Clusters the items form when some share one (the interval then also resampled whole clusters within each task,
    the same for both models, and is the union of both intervals); None when every item is its own."""
    items_needed: int | None = None
    """Paired items needed to detect a gap the size of ``diff`` at the same level and power."""
    size: str | None = None
    """``not distinguishable at this size`` when the test found nothing and ``|diff|`` is below the MDE."""


class ItemOverlap(Payload):
    """``comparison.items[i]``: which items two models share, and where their records differ."""

    model_a: str
    """First model."""
    model_b: str
    """Second model."""
    benchmark: str
    """``foundation`` or ``chat``."""
    compared: int
    """Items both answered."""
    only_a: int
    """Items only A answered."""
    only_b: int
    """Items only B answered."""
    differ: int
    """Shared items whose records differ."""
    unscored: int
    """Shared items left unscored."""
    differ_fields: dict[str, int]
    """Differing items per field."""
    examples: dict[str, list[JsonValue]]
    """A few item ids per kind of difference."""
    categories: list[str]
    """Categories compared."""
    reason: str | None
    """Why the pair was not compared, or None."""


class ComparisonPayload(Payload):
    """``comparison``: every pair of models on the items they share."""

    protocol: str | None = None
    """Protocol of the comparison."""
    chat_judge: str | None = None
    """Judge of the Chat scores compared."""
    seed: int | None = None
    """Seed of the bootstrap."""
    reps: int | None = None
    """Bootstrap replicates."""
    alpha: Number | None = None
    """Significance level."""
    confidence: Number | None = None
    """Confidence of the intervals."""
    bootstrap: str | None = None
    """How the bootstrap resamples."""
    correction: str | None = None
    """Multiple-comparison correction."""
    models: list[ComparedModel] = []
    """The models compared."""
    comparisons: list[PairDifference] = []
    """The differences, pair by pair."""
    items: list[ItemOverlap] = []
    """The item overlap of each pair."""
    tests: dict[str, str] = {}
    """The tests used, each in words."""


# --------------------------------------------------------------------------------------------------------- agreement


class AgreementPayload(Payload):
    """``agreement``: judge-human and inter-annotator agreement (:func:`airbench_nb.analysis.agreement.agreement`).

    The statistics below the judge and the annotators (agreement, kappa, alpha, per category) are kept as JSON:
    :mod:`airbench_nb.analysis.agreement` documents them, and no page reads them.
    """

    run_dir: str | None = None
    """The run folder of the sample."""
    sample: str | None = None
    """The annotation sample."""
    label_files: list[str] = []
    """The label files read, one per annotator."""
    seed: int | None = None
    """Seed of the bootstrap."""
    reps: int | None = None
    """Bootstrap replicates."""
    headline: str | None = None
    """The result in one sentence."""
    counts: dict[str, JsonValue] = {}
    """Pairs, labels, skips and undos counted."""
    annotators: list[str] = []
    """The annotators."""
    judges: dict[str, dict[str, dict[str, JsonValue]]] = {}
    """Agreement of each judge with the humans, per judge and benchmark."""
    inter_annotator: dict[str, dict[str, JsonValue]] = {}
    """Agreement between annotators, per benchmark."""
    reasons: dict[str, str] = {}
    """Why a part is missing."""


# --------------------------------------------------------------------------------------------------- multi-clip, turn


class ClipGroup(Payload):
    """Accuracy of one model on single-clip or on multi-clip items."""

    n: int
    """Items."""
    correct: int
    """Right answers."""
    failed: int
    """Items without a readable answer."""
    accuracy: Number | None
    """Accuracy."""
    ci_low: Number | None
    """Lower bound of its interval."""
    ci_high: Number | None
    """Upper bound of its interval."""


class ClipTest(Payload):
    """The test of single-clip against multi-clip accuracy of one model."""

    odds_ratio: Number | None
    """Odds ratio."""
    p_value: Number | None
    """P value."""
    difference: Number | None
    """Multi-clip minus single-clip accuracy."""
    test: str
    """The test run."""
    interval: str
    """How the intervals were computed."""


class MultiClip(Payload):
    """``multi_clip[model]``: single-clip against multi-clip accuracy, with the test."""

    single_clip: ClipGroup | None = Field(default=None, alias="single-clip")
    """The single-clip items."""
    multi_clip: ClipGroup | None = Field(default=None, alias="multi-clip")
    """The multi-clip items."""
    odds_ratio: Number | None = None
    """Odds ratio."""
    p_value: Number | None = None
    """P value."""
    difference: Number | None = None
    """Multi-clip minus single-clip accuracy."""
    test: str = ""
    """The test run."""
    interval: str = ""
    """How the intervals were computed."""


class MultiClipDetail(Payload):
    """``multi_clip_detail``: the protocol and the tests alone."""

    protocol: str | None = None
    """Protocol the answers were read with."""
    tests: dict[str, ClipTest] = {}
    """The test per model."""


class TurnScore(Payload):
    """``multi_turn.turns[i]``: a model's Chat score at one turn of the multi-turn conversations."""

    model: str
    """Model spec."""
    chat_judge: str
    """Chat judge."""
    protocol: str
    """Protocol."""
    task: str
    """Task."""
    turn: int
    """Turn (1-based)."""
    value: Number | None
    """Mean score."""
    ci_low: Number | None
    """Lower bound of its interval."""
    ci_high: Number | None
    """Upper bound of its interval."""
    n: int
    """Turns scored."""
    failures: int
    """Turns not scored."""
    conversations: int
    """Conversations."""


class FollowupDrop(Payload):
    """``multi_turn.followup_drop[judge][model]``: follow-up turns against the first turn."""

    conversations: int
    """Conversations."""
    turn_1: Number | None
    """Mean score of the first turns."""
    followups: Number | None
    """Mean score of the follow-up turns."""
    mean_diff: Number | None
    """Follow-ups minus first turns, paired by conversation."""
    p_value: Number | None
    """P value."""
    test: str
    """The test run."""


class MultiTurnPayload(Payload):
    """``multi_turn``: per-turn Chat scores and the follow-up test."""

    turns: list[TurnScore] = []
    """Score per model, judge, task and turn."""
    followup_drop: dict[str, dict[str, FollowupDrop]] = {}
    """Follow-up test per judge and model."""


class ProtocolDetail(Payload):
    """A ``<section>_detail`` that only names the protocol."""

    protocol: str | None = None
    """Protocol the answers were read with."""


# -------------------------------------------------------------------------------------------------------------- sseu


class WerDetail(Payload):
    """Details of a corpus WER."""

    mean_wer: Number | None
    """Mean of the per-utterance WERs."""
    median_wer: Number | None
    """Median of the per-utterance WERs."""
    substitutions: int
    """Substituted words."""
    deletions: int
    """Deleted words."""
    insertions: int
    """Inserted words."""
    ref_words: int
    """Reference words."""
    empty_share: Number | None
    """Share of empty transcripts."""
    hallucination_rate: Number | None
    """Share of transcripts of silence or noise that hold words."""


class SseuScores(Payload):
    """``sseu[model][mode]``: SSEU-Bench's scores of one model in one prompting mode."""

    wer: Number | None = None
    """Corpus WER of the transcription."""
    wer_ci: Interval = None
    """Its interval."""
    wer_detail: WerDetail | None = None
    """Its details."""
    macc: Number | None = None
    """Scene mean accuracy."""
    macc_ci: Interval = None
    """Its interval."""
    macc_exact: Number | None = None
    """Scene mean accuracy counting exact label matches only."""
    map: Number | None = None
    """Event mean average precision."""
    map_ci: Interval = None
    """Its interval."""
    map_exact: Number | None = None
    """Event mAP counting exact label matches only."""
    map_floor: Number | None = None
    """The mAP of an answer that names no event."""
    n: int = 0
    """Clips."""
    failures: int = 0
    """Answers that could not be read."""
    failures_by_task: dict[str, int] = {}
    """Failures per task."""
    clusters: int | None = None
    """Utterances the intervals resampled when clips share one (each utterance's mixes at every SNR: the interval is
    the union of the clip and the utterance bootstrap's); None when every clip is its own utterance."""
    design_effects: dict[str, Number | None] = {}
    """Per metric (``wer``, ``macc``, ``map``), the variance of the utterance bootstrap over that of the clip
    bootstrap; empty without clusters."""


class SseuDifference(Payload):
    """A paired difference of one task between two prompting modes."""

    task: str
    """Task."""
    metric: str
    """Metric (``wer``, ``macc``, ``map``)."""
    mode: str
    """Prompting mode."""
    baseline: str
    """Mode it is compared with."""
    n_clips: int
    """Clips both modes answered."""
    value: Number | None
    """Mode minus baseline."""
    ci_low: Number | None
    """Lower bound of its interval."""
    ci_high: Number | None
    """Upper bound of its interval."""
    mode_value: Number | None
    """The mode's value."""
    baseline_value: Number | None
    """The baseline's value."""
    worse: bool
    """Whether the mode is significantly worse."""
    better: bool
    """Whether the mode is significantly better."""
    relative: Number | None
    """Difference relative to the baseline."""


class SseuModeDifference(Payload):
    """One prompting mode against another, every task."""

    mode: str
    """Prompting mode."""
    baseline: str
    """Mode it is compared with."""
    differences: dict[str, SseuDifference]
    """The difference per task."""
    sacrificed: str | None
    """The task given up for another, in words, or None."""


class SseuCleanup(Payload):
    """How one model's answers were cleaned and what could not be read."""

    answers: int
    """Answers read."""
    removed: dict[str, int]
    """Text removed per kind."""
    failures: dict[str, dict[str, int]]
    """Failures per task and reason."""


class SseuDetail(Payload):
    """``sseu_detail``: paired mode differences, answer cleanup and settings."""

    differences: dict[str, list[SseuModeDifference]] = {}
    """Mode differences per model."""
    cleanup: dict[str, SseuCleanup] = {}
    """Answer cleanup per model."""
    embedder: str | None = None
    """Embedding backend that mapped answers onto classes."""
    reps: int | None = None
    """Bootstrap replicates."""
    seed: int | None = None
    """Seed of the bootstrap."""
    scope: str | None = None
    """What was scored, in words."""


class CurvePoint(Payload):
    """One point of an SSEU-Bench SNR curve."""

    mode: str
    """Prompting mode."""
    snr_db: Number | None
    """SNR in dB; None for clean clips."""
    n: int
    """Clips."""
    value: Number | None
    """WER, mACC or mAP."""
    ci_low: Number | None
    """Lower bound of its interval."""
    ci_high: Number | None
    """Upper bound of its interval."""


# ---------------------------------------------------------------------------------------------------------- UG-Bench


class PairScores(Payload):
    """Translation scores of one language pair."""

    bleu: Number | None
    """Corpus BLEU."""
    bleu_ci: Interval
    """Its interval."""
    chrf: Number | None
    """Corpus chrF."""
    chrf_ci: Interval
    """Its interval."""
    n: int
    """Items."""
    failures: int
    """Items without an answer."""
    tokenize: str
    """sacrebleu tokenizer used."""


class Translation(Payload):
    """``translation[model]``: speech-to-text translation with sacrebleu's signatures."""

    bleu: Number | None
    """Corpus BLEU over every pair."""
    bleu_ci: Interval
    """Its interval."""
    chrf: Number | None
    """Corpus chrF over every pair."""
    chrf_ci: Interval
    """Its interval."""
    signature: str
    """sacrebleu's BLEU signature."""
    chrf_signature: str
    """sacrebleu's chrF signature."""
    n: int
    """Items."""
    failures: int
    """Items without an answer."""
    failure_reasons: dict[str, int]
    """Failures per reason."""
    by_pair: dict[str, PairScores]
    """Scores per language pair."""


class TaskValue(Payload):
    """A captioning metric on one task."""

    value: Number | None
    """The metric."""
    n: int
    """Items."""
    failures: int
    """Items not scored."""
    ci_low: Number | None = None
    """Lower bound of its interval, when computed."""
    ci_high: Number | None = None
    """Upper bound of its interval, when computed."""


class CaptionMetric(Payload):
    """One captioning metric of one model."""

    label: str
    """Its display name."""
    value: Number | None
    """Its value over every item."""
    error: str | None
    """Why it could not be computed, or None."""
    by_task: dict[str, TaskValue]
    """Its value per task (and ``average``)."""


class Captioning(Payload):
    """``captioning[model]``: audio and music captioning metrics."""

    n: int
    """Items."""
    failures: int
    """Items without an answer."""
    failure_reasons: dict[str, int]
    """Failures per reason."""
    embedder: str | None
    """Embedding backend of the similarity."""
    metrics: dict[str, CaptionMetric]
    """Metrics by key (``cider_d``, ``similarity``, ...)."""


class SpokenAnswer(Payload):
    """Accuracy of spoken answers, transcribed back."""

    accuracy: Number | None
    """Accuracy."""
    ci: Interval
    """Its interval."""
    n: int
    """Items."""
    failures: int
    """Items without audio."""
    failure_reasons: dict[str, int]
    """Failures per reason."""
    enumerations: int
    """Answers that listed several options."""


class SpeechOutput(Payload):
    """``speech_output[model]``: back-transcription WER and CER of spoken answers."""

    wer: Number | None
    """Corpus WER."""
    wer_ci: Interval
    """Its interval."""
    cer: Number | None
    """Corpus CER."""
    cer_ci: Interval
    """Its interval."""
    per_utterance_wer: Number | None
    """Mean per-utterance WER."""
    n: int
    """Utterances."""
    failures: int
    """Items without audio."""
    failure_reasons: dict[str, int]
    """Failures per reason."""
    judge: str | None
    """ASR judge that transcribed."""
    spoken_answer: SpokenAnswer | None = None
    """Accuracy of spoken answers, when the run has such items."""


class MosSystem(Payload):
    """One system of the listening test (:class:`airbench_nb.analysis.mos.SystemMos`)."""

    system_id: str
    """Blinded system id of the playlist."""
    model: str
    """Model spec."""
    mos: Number | None
    """Mean opinion score."""
    ci_low: Number | None
    """Lower bound of its interval."""
    ci_high: Number | None
    """Upper bound of its interval."""
    std: Number | None
    """Standard deviation of the ratings."""
    n: int
    """Ratings."""
    listeners: int
    """Listeners who rated it."""
    items: int
    """Items rated."""
    unrated: int
    """Items nobody rated."""
    empty_resamples: int
    """Bootstrap resamples without a rating."""


class MosResult(Payload):
    """The listening test's MOS (:meth:`airbench_nb.analysis.mos.MosResult.to_dict`)."""

    systems: list[MosSystem] = []
    """MOS per system."""
    listeners: list[dict[str, JsonValue]] = []
    """Consistency of each listener."""
    agreement: dict[str, JsonValue] | None = None
    """Agreement between listeners (Krippendorff's alpha)."""
    correlation: dict[str, JsonValue] | None = None
    """Correlation of MOS with the back-transcription WER, or None."""
    missing_files: list[str] = []
    """Stimuli whose audio was missing."""
    reps: int | None = None
    """Bootstrap replicates."""
    seed: int | None = None
    """Seed of the bootstrap."""
    ci_method: str | None = None
    """How the intervals were computed."""


class SpeechOutputDetail(Payload):
    """``speech_output_detail``: the run's listening test."""

    mos: MosResult | None = None
    """MOS per system."""


class Capability(Payload):
    """One UG-Bench capability: its tasks and each model's rank on them."""

    tasks: list[str]
    """Tasks of the capability."""
    ranks: dict[str, dict[str, Number | None]]
    """Rank per model and task."""


class UgRankingRow(Payload):
    """``ugbench.ranking[i]``: one model's mean rank per capability and its weighted total."""

    model: str
    """Model spec."""
    sub_ranks: dict[str, Number | None]
    """Mean task rank per capability."""
    score: Number | None
    """Weighted total, 0-100."""


class UgBenchPayload(Payload):
    """``ugbench``: UG-Bench's four-capability ranking."""

    capabilities: dict[str, Capability] = {}
    """The capabilities with tasks."""
    ranking: list[UgRankingRow] = []
    """The ranking, best first."""


class UgBenchDetail(Payload):
    """``ugbench_detail``: the rules of the ranking."""

    weights: dict[str, Number] = {}
    """Weight per capability, as given."""
    effective_weights: dict[str, Number] = {}
    """Weight per capability, renormalised over those with tasks."""
    n_models: int | None = None
    """Models ranked."""
    missing: str | None = None
    """How a missing task score is handled."""
    ties: str | None = None
    """How ties are ranked."""
    scale: str | None = None
    """How ranks become the 0-100 score."""
    left_out: dict[str, str] = {}
    """Tasks left out, with why."""
    unable: dict[str, list[str]] = {}
    """Models unable to do a task, per task."""
    notes: list[str] = []
    """Caveats."""
    reason: str | None = None
    """Why there is no ranking, or None."""
    protocol: str | None = None
    """Protocol of the task scores."""
    chat_judge: str | None = None
    """Judge of the Chat scores."""


# ------------------------------------------------------------------------------------------------------------ tiered


class Granularity(Payload):
    """Macro scores of one system at one granularity (coarse or fine classes)."""

    macro_precision: Number | None
    """Macro precision."""
    macro_recall: Number | None
    """Macro recall."""
    macro_f1: Number | None
    """Macro F1."""
    macro_fnr: Number | None
    """Macro false-negative rate."""
    n: int
    """Items."""
    unanswered: int
    """Items without a readable answer."""
    top_k: dict[str, Number | None]
    """Top-k recall per k."""
    reason: str | None = None
    """Why a score is missing (tier D), or None."""
    named_share: Number | None = None
    """Share of answers naming a class (tier D)."""


class TierSystem(Payload):
    """``tiered.tiers[tier][system]``: one system's scores in its tier."""

    tier: str
    """Its tier (A, B, C, D)."""
    coarse: Granularity
    """Scores over the coarse classes."""
    fine: Granularity
    """Scores over the fine classes."""
    top_k: dict[str, Number | None]
    """Top-k recall of the fine classes per k."""
    f1_drop: Number | None
    """Coarse minus fine macro F1."""
    top_k_reason: str | None = None
    """Why there is no top-k recall, or None."""


class ConfidentLanguage(Payload):
    """``tiered.confident[system]``: confident wording in wrong and right answers."""

    system: str
    """System."""
    wrong_n: int
    """Wrong answers."""
    wrong_confident: int
    """Wrong answers worded confidently."""
    wrong_share: Number | None
    """Their share."""
    wrong_ci: Interval
    """Its interval."""
    right_n: int
    """Right answers."""
    right_confident: int
    """Right answers worded confidently."""
    right_share: Number | None
    """Their share."""
    right_ci: Interval
    """Its interval."""
    wrong_boosted: int
    """Wrong answers with boosters."""
    no_text: int
    """Answers without text."""
    lexicon_version: str
    """Version of the lexicon."""
    ci: str
    """How the intervals were computed."""


class TieredPayload(Payload):
    """``tiered``: the tiered sound-source benchmark, one table per tier (never one mixed ranking)."""

    tiers: dict[str, dict[str, TierSystem]] = {}
    """Systems per tier."""
    reasons: dict[str, str] = {}
    """Why a tier has no system."""
    hierarchy: dict[str, str] = {}
    """Coarse class of each fine class."""
    judges: dict[str, list[str]] = {}
    """Judges that decided, per ``system · tier``."""
    failures: dict[str, int] = {}
    """Failures per ``system · tier``."""
    unusable: dict[str, int] = {}
    """Unusable items per ``system · tier``."""
    unusable_why: str | None = None
    """What makes an item unusable."""
    confident: dict[str, ConfidentLanguage] = {}
    """Confident language per system."""
    confident_labelled: dict[str, JsonValue] = {}
    """Confident language against labelled answers, when labels exist."""
    reasoning: dict[str, JsonValue] | None = None
    """Reasoning length and strategies against correctness (``length``, ``strategies``, ``association``)."""
    reason: str | None = None
    """Why the run has no tiered result, or None."""


# --------------------------------------------------------------------------------------------------------- injection


class PromptScores(Payload):
    """Mean model score of flagged answers under the verbatim judge prompt and the fenced one."""

    verbatim: Number | None
    """Under the verbatim prompt (what ``official`` scores)."""
    fenced: Number | None
    """Under the fenced prompt (what ``strict`` scores); None for a judge without one."""


class InjectionByJudge(Payload):
    """Flagged answers of one model under one judge."""

    flagged: int
    """Answers flagged."""
    n: int
    """Answers screened."""
    share: Number | None
    """Share flagged."""
    foundation: PromptScores | None
    """Foundation accuracy of the flagged answers, or None when the judge judged none."""
    chat: PromptScores | None
    """Chat score (1-10) of the flagged answers, or None when the judge judged none."""


class InjectionFlag(Payload):
    """One pattern the screen found in an answer."""

    pattern: str
    """Pattern name."""
    span: str
    """The text it matched."""


class InjectionExample(Payload):
    """One flagged answer."""

    uid: str
    """Item id."""
    turn: int | None
    """Turn of a multi-turn item, or None."""
    flags: list[InjectionFlag]
    """What the screen found."""
    scores: dict[str, PromptScores | None]
    """Its scores per judge."""


class Injection(Payload):
    """``injection[model]``: answers the injection screen flagged."""

    flagged: int
    """Answers flagged."""
    n: int
    """Answers screened."""
    share: Number | None
    """Share flagged."""
    patterns: dict[str, int]
    """Flags per pattern."""
    by_judge: dict[str, InjectionByJudge]
    """Counts per judge."""
    examples: list[InjectionExample]
    """A few flagged answers."""


# ------------------------------------------------------------------------------------------------------------ report


class ReportFiles(Payload):
    """``files``: what ``RunAnalysis.write`` wrote, relative to the analysis folder."""

    figures: list[str] = []
    """Figures (``figures/<name>.png``)."""
    markdown: str | None = None
    """The leaderboard."""
    csv: str | None = None
    """The long table."""
    analysis: str | None = None
    """``analysis.json`` itself."""


class AnalysisReport(Payload):
    """``analysis.json``: every analysis of a run folder (notebook 05, ``airbench-nb analyze``).

    The kit's own sections are typed fields, refused when they drift. A section a user adds (a
    :class:`~airbench_nb.analysis.section.Section` of their own, given to ``RunAnalysis.write(sections=...)``: see
    ``docs/extending.md``) is kept as the JSON it is, after the kit's, and read with :meth:`extra_section`.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    run_dir: str
    """The run folder analysed, as given."""
    protocol: str
    """``strict`` or ``official``: how answers were read in every section but the main table."""
    created: str
    """When the file was written (ISO 8601, UTC)."""
    models: list[str]
    """Models analysed."""
    judges: list[str]
    """Chat judges analysed."""
    weights: dict[str, Number]
    """Ranking weights per category."""
    items: int
    """Items with usable audio."""
    unusable_items: int
    """Items whose audio could not be used."""
    reasons: dict[str, str]
    """Why a section is empty, by section."""
    tables: TablesPayload | None = None
    """The main table."""
    format_following: dict[str, FormatFollowing] | None = None
    """Who resolves each Foundation answer, per model."""
    position_bias: dict[str, PositionBias] | None = None
    """Chosen against gold letters, per model."""
    circular: dict[str, Circular] | None = None
    """CircularEval, per model."""
    controls: dict[str, list[ControlsRow]] | None = None
    """Audio-reliance controls, per model: each task, then all its tasks; absent when the run has no controls."""
    controls_detail: ControlsDetail | None = None
    """How the controls were analysed."""
    order_bias: dict[str, dict[str, OrderBias]] | None = None
    """Judge order bias, per judge and model."""
    classification: dict[str, dict[str, Classification]] | None = None
    """Closed-label metrics, per model and task."""
    answers: AnswersPayload | None = None
    """Answer style against correctness."""
    snr: dict[str, list[SnrPoint]] | None = None
    """Accuracy against SNR, per model."""
    snr_detail: SnrDetail | None = None
    """SNR curves per task and background, and the trend tests."""
    ranking: list[RankingRow] | None = None
    """The weighted ranking over the AIR-Bench categories."""
    ranking_detail: RankingDetail | None = None
    """How the ranking was made."""
    comparison: ComparisonPayload | None = None
    """Every pair of models compared."""
    agreement: AgreementPayload | None = None
    """Judge-human and inter-annotator agreement on an annotated sample."""
    multi_clip: dict[str, MultiClip] | None = None
    """Single-clip against multi-clip accuracy, per model."""
    multi_clip_detail: MultiClipDetail | None = None
    """The protocol and the tests."""
    multi_turn: MultiTurnPayload | None = None
    """Per-turn Chat scores and the follow-up test."""
    multi_turn_detail: ProtocolDetail | None = None
    """The protocol."""
    sseu: dict[str, dict[str, SseuScores]] | None = None
    """SSEU-Bench per model and prompting mode."""
    sseu_detail: SseuDetail | None = None
    """Paired mode differences, cleanup and settings."""
    snr_curves: dict[str, dict[str, list[CurvePoint]]] | None = None
    """SSEU-Bench's curves against SNR, per model and task."""
    translation: dict[str, Translation] | None = None
    """Speech translation, per model."""
    captioning: dict[str, Captioning] | None = None
    """Captioning, per model."""
    speech_output: dict[str, SpeechOutput] | None = None
    """Spoken answers, per model."""
    speech_output_detail: SpeechOutputDetail | None = None
    """The listening test."""
    ugbench: UgBenchPayload | None = None
    """UG-Bench's ranking."""
    ugbench_detail: UgBenchDetail | None = None
    """The rules of UG-Bench's ranking."""
    tiered: TieredPayload | None = None
    """The tiered sound-source benchmark."""
    injection: dict[str, Injection] | None = None
    """Answers the injection screen flagged, per model."""
    files: ReportFiles | None = None
    """The files written."""

    @overload
    def extra_section(self, name: str) -> Any: ...
    @overload
    def extra_section(self, name: str, payload: type[P]) -> P: ...
    def extra_section(self, name: str, payload: type[P] | None = None) -> Any:
        """A section that is not one of the kit's (a benchmark's or a user's own analysis).

        Args:
            name: The section's name.
            payload: The model of its data (a registered section's
                :attr:`~airbench_nb.analysis.registry.AnalysisSection.payload`); None: its JSON data as it is.

        Raises:
            KeyError: When the report holds no such section (the message lists the ones it holds).
            ValueError: When its data does not match ``payload``.
        """
        extra = self.model_extra or {}
        if name not in extra:
            raise KeyError(f"analysis.json has no added section {name!r}; added: {', '.join(extra) or 'none'}")
        return extra[name] if payload is None else payload.model_validate(extra[name])

    @classmethod
    def from_json(cls, text: str) -> AnalysisReport:
        """Read ``analysis.json``'s text.

        Raises:
            ValueError: The text is not JSON, or a section does not match its model (the message names the section
                and the field, e.g. ``tables.scores.3.value``).
        """
        return cls.model_validate_json(text)

    def as_data(self) -> dict[str, Any]:
        """The report as plain JSON data: the keys that were given, in field order (a serializer)."""
        return self.model_dump(mode="python", by_alias=True, exclude_unset=True)

    def to_json(self) -> str:
        """The text of ``analysis.json`` (one-space indent, NaN kept as JSON's ``NaN``, a final newline)."""
        return json.dumps(self.as_data(), indent=1) + "\n"


def _json_default(value: Any) -> Any:
    """What ``json`` writes for what it does not know: a payload as its fields, numpy scalars as numbers, else text."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="python", by_alias=True, exclude_unset=True)
    if hasattr(value, "item"):
        return value.item()
    return str(value)
