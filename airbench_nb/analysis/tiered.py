"""Analyses of the tiered sound-source benchmark: per-tier tables, confident language, and reasoning.

- :func:`tier_tables`: one table per tier (never one mixed leaderboard) from
  :mod:`airbench_nb.scoring.tiered` results: macro P/R/F1/FNR at both granularities, the coarse-to-fine F1 drop
  and top-k recall.
- :func:`confident_share`: per system, the share of wrong answers stated with confident language, and of right
  answers, with Wilson 95% intervals. An answer is *hedged* when it matches a hedge of
  :data:`CONFIDENCE_LEXICON`, *confident* otherwise (a plain assertion is confident; boosters are counted apart).
- :func:`length_association`: response length (words) against accuracy: the point-biserial correlation
  (:func:`scipy.stats.pointbiserialr`, Fisher-z interval), the logistic slope per 100 words raw and with fixed
  effects for the class (statsmodels GLM, binomial family, Wald intervals).
- :func:`strategy_association`: the primary reasoning strategy against accuracy, **raw** (Pearson's chi-square
  test of independence of strategy x correct, :func:`scipy.stats.chi2_contingency`) and **controlled for class
  difficulty** (likelihood-ratio test of the strategy terms in a logistic regression with class fixed effects,
  statsmodels GLM); per strategy (one against the rest), the crude odds ratio (statsmodels ``Table2x2``) beside the
  Mantel-Haenszel odds ratio pooled within classes and its Cochran-Mantel-Haenszel test (statsmodels
  ``StratifiedTable``). Strata (classes) whose answers are all right or all wrong carry no within-class information
  (as in conditional logistic regression) and are left out of the controlled analyses; their number is reported.

The strategy labels come from a :class:`StrategyClassifier`. The offline default, :class:`KeywordStrategyClassifier`,
is a keyword **proxy** of the LLM labelling the benchmark used (its cues are :data:`STRATEGY_CUES`, versioned by
:data:`STRATEGY_CUES_VERSION`); an LLM classifier implementing the same protocol replaces it.
"""

from __future__ import annotations

import logging
import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd
from scipy.stats import chi2, chi2_contingency, pointbiserialr

from airbench_nb.analysis.stats import WILSON, plain, wilson
from airbench_nb.analysis_report import ConfidentLanguage
from airbench_nb.prompts import REASONING_STRATEGIES
from airbench_nb.scoring.tiered import TIERS, SystemMetrics

logger = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------------- tier tables

TIER_COLUMNS: tuple[str, ...] = (
    "system",
    "coarse_precision",
    "coarse_recall",
    "coarse_f1",
    "coarse_fnr",
    "fine_precision",
    "fine_recall",
    "fine_f1",
    "fine_fnr",
    "f1_drop",
    "top1",
    "top3",
    "top5",
    "fine_named_share",
    "n",
    "unanswered",
)
"""Columns of each table of :func:`tier_tables` (metrics as fractions; NaN where n/a). ``fine_named_share``: tier
D's mean share of the classes an answer names (1.0: every answer names every class, which recall alone rewards)."""


def tier_tables(results: Iterable[SystemMetrics]) -> dict[str, pd.DataFrame]:
    """One table per tier, systems sorted by fine macro F1 (Tier D by fine macro recall), best first.

    Args:
        results: Scored systems of any tiers.

    Returns:
        ``{tier: frame}`` for every tier of :data:`~airbench_nb.scoring.tiered.TIERS` (an empty frame for a tier
        without systems) with :data:`TIER_COLUMNS`.
    """
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in TIERS}
    for r in results:
        rows[r.tier].append(
            {
                "system": r.system,
                **{
                    f"{g}_{m}": getattr(getattr(r, g), f"macro_{m}")
                    for g in ("coarse", "fine")
                    for m in ("precision", "recall", "f1", "fnr")
                },
                "f1_drop": r.f1_drop,
                **{f"top{k}": r.fine.top_k.get(k) for k in (1, 3, 5)},
                "fine_named_share": r.fine.named_share,
                "n": r.fine.n,
                "unanswered": r.fine.unanswered,
            }
        )
    out = {}
    for tier, found in rows.items():
        frame = pd.DataFrame(found, columns=list(TIER_COLUMNS))
        for column in TIER_COLUMNS[1:-2]:
            frame[column] = frame[column].astype(float)
        key = "fine_recall" if tier == "D" else "fine_f1"
        out[tier] = frame.sort_values([key, "system"], ascending=[False, True], ignore_index=True)
    return out


# ---------------------------------------------------------------------------------------- confident language


@dataclass(frozen=True)
class ConfidenceLexicon:
    """Expressions that mark an answer as hedged or boosted, matched as whole words, case-insensitive.

    Modelled on Hyland's metadiscourse categories of hedges and boosters (K. Hyland, *Hedging in Scientific
    Research Articles*, 1998; *Metadiscourse*, 2005), narrowed to what an answer about a sound says of its own
    certainty. "Sounds like" is not a hedge here: it is how one names a sound ("it sounds like a siren").
    """

    version: str
    """Version of the lexicon; results carry it."""
    hedges: tuple[str, ...]
    """Expressions of uncertainty: an answer with one of them is hedged, otherwise it is confident."""
    boosters: tuple[str, ...]
    """Expressions of certainty, counted apart (a confident answer needs none)."""

    def pattern(self, kind: str) -> re.Pattern[str]:
        """The compiled pattern of ``kind`` (``hedges`` or ``boosters``): each phrase as whole words."""
        phrases = getattr(self, kind)
        parts = [r"\s+".join(re.escape(w) for w in p.split()) for p in phrases]
        return re.compile(r"(?<![\w'])(?:" + "|".join(parts) + r")(?![\w'])", re.IGNORECASE)


CONFIDENCE_LEXICON = ConfidenceLexicon(
    version="1",
    hedges=(
        "may",
        "might",
        "could be",
        "could indicate",
        "could suggest",
        "possibly",
        "possible",
        "perhaps",
        "maybe",
        "probably",
        "probable",
        "likely",
        "unlikely",
        "presumably",
        "seems",
        "seem",
        "seemingly",
        "appears to",
        "appear to",
        "suggests",
        "suggesting",
        "i think",
        "i believe",
        "i guess",
        "my best guess",
        "not sure",
        "unsure",
        "not certain",
        "uncertain",
        "unclear",
        "not clear",
        "ambiguous",
        "hard to tell",
        "difficult to tell",
        "hard to say",
        "difficult to determine",
        "cannot be certain",
        "can't be certain",
        "cannot determine",
        "can't determine",
        "cannot tell",
        "can't tell",
    ),
    boosters=(
        "clearly",
        "clear",
        "certainly",
        "definitely",
        "undoubtedly",
        "without doubt",
        "no doubt",
        "obviously",
        "unmistakable",
        "unmistakably",
        "distinctly",
        "must be",
        "confident",
        "sure",
        "certain",
        "precisely",
        "exactly",
    ),
)
"""The confident-language lexicon of the tiered analysis (version 1); :func:`lexicon_frame` lists it."""


def lexicon_frame(lexicon: ConfidenceLexicon = CONFIDENCE_LEXICON) -> pd.DataFrame:
    """The lexicon as a frame (``kind``, ``expression``) for the docs and notebooks to print."""
    rows = [("hedge", p) for p in lexicon.hedges] + [("booster", p) for p in lexicon.boosters]
    return pd.DataFrame(rows, columns=["kind", "expression"])


def confidence_label(text: str | None, lexicon: ConfidenceLexicon = CONFIDENCE_LEXICON) -> str | None:
    """``hedged`` (a hedge matches), ``boosted`` (a booster and no hedge), ``plain``; None for no text.

    A hedge wins over a booster ("I am not sure" is hedged although "sure" is a booster). Curly apostrophes are
    read as straight ones.
    """
    if text is None or (isinstance(text, float) and math.isnan(text)) or not str(text).strip():
        return None
    text = str(text).replace("\u2019", "'")
    if lexicon.pattern("hedges").search(text):
        return "hedged"
    if lexicon.pattern("boosters").search(text):
        return "boosted"
    return "plain"


@dataclass(frozen=True)
class ConfidentShare:
    """How confidently one system states its wrong and its right answers."""

    system: str
    """The system."""
    wrong_n: int
    """Wrong answers with text."""
    wrong_confident: int
    """Wrong answers with no hedge."""
    wrong_share: float | None
    """``wrong_confident / wrong_n`` (None without wrong answers)."""
    wrong_ci: tuple[float, float] | None
    """Wilson 95% interval of ``wrong_share``."""
    right_n: int
    """Right answers with text."""
    right_confident: int
    """Right answers with no hedge."""
    right_share: float | None
    """``right_confident / right_n`` (None without right answers)."""
    right_ci: tuple[float, float] | None
    """Wilson 95% interval of ``right_share``."""
    wrong_boosted: int
    """Wrong answers with a booster and no hedge."""
    no_text: int
    """Answers without text (left out)."""
    lexicon_version: str
    """Version of the lexicon used."""
    ci: str = WILSON
    """How the intervals are computed."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict (a serializer: :meth:`payload` is the typed form)."""
        out = asdict(self)
        out["wrong_ci"] = list(self.wrong_ci) if self.wrong_ci else None
        out["right_ci"] = list(self.right_ci) if self.right_ci else None
        return out

    def payload(self) -> ConfidentLanguage:
        """The share as ``analysis.json`` holds it (``tiered.confident[system]``)."""
        return ConfidentLanguage.from_data(self.to_json())


REASONING_COLUMNS: tuple[str, ...] = ("system", "gold", "correct", "response")
"""Columns an answer frame must have: the system, the gold fine class, whether it is right, the answer text."""


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what}: the answer frame lacks column(s) {', '.join(missing)} (has {list(frame.columns)})")


def confident_share(frame: pd.DataFrame, lexicon: ConfidenceLexicon = CONFIDENCE_LEXICON) -> dict[str, ConfidentShare]:
    """Share of wrong (and right) answers stated confidently, per system, with Wilson intervals.

    Args:
        frame: Answers with columns ``system``, ``correct`` (bool) and ``response`` (text); answers without text
            are left out and counted.
        lexicon: The lexicon.

    Returns:
        ``{system: ConfidentShare}``, sorted by system.

    Raises:
        ValueError: If a column is missing.
    """
    _require(frame, ("system", "correct", "response"), "confident_share")
    out = {}
    for system, rows in frame.groupby("system", sort=True):
        labels = rows["response"].map(lambda t: confidence_label(t, lexicon))
        has_text = labels.notna()
        correct = rows["correct"].astype(bool)
        confident = labels.isin(["plain", "boosted"])
        wrong, right = has_text & ~correct, has_text & correct
        wn, wc, rn, rc = (
            int(wrong.sum()),
            int((wrong & confident).sum()),
            int(right.sum()),
            int((right & confident).sum()),
        )
        out[str(system)] = ConfidentShare(
            system=str(system),
            wrong_n=wn,
            wrong_confident=wc,
            wrong_share=wc / wn if wn else None,
            wrong_ci=wilson(wc, wn) if wn else None,
            right_n=rn,
            right_confident=rc,
            right_share=rc / rn if rn else None,
            right_ci=wilson(rc, rn) if rn else None,
            wrong_boosted=int((wrong & labels.eq("boosted")).sum()),
            no_text=int((~has_text).sum()),
            lexicon_version=lexicon.version,
        )
    return out


def confident_frame(results: Mapping[str, ConfidentShare]) -> pd.DataFrame:
    """A tidy frame for a figure: ``system, answers (wrong|right), n, confident, share, ci_low, ci_high``."""
    rows = []
    for r in results.values():
        for answers, n, k, share, ci in (
            ("wrong", r.wrong_n, r.wrong_confident, r.wrong_share, r.wrong_ci),
            ("right", r.right_n, r.right_confident, r.right_share, r.right_ci),
        ):
            low, high = ci or (math.nan, math.nan)
            rows.append(
                {
                    "system": r.system,
                    "answers": answers,
                    "n": n,
                    "confident": k,
                    "share": share,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
    out = pd.DataFrame(rows, columns=["system", "answers", "n", "confident", "share", "ci_low", "ci_high"])
    for column in ("share", "ci_low", "ci_high"):
        out[column] = out[column].astype(float)
    return out


# ------------------------------------------------------------------------------------------ strategy labels

STRATEGIES: tuple[str, ...] = REASONING_STRATEGIES
"""The primary reasoning strategies of the benchmark (:data:`airbench_nb.prompts.REASONING_STRATEGIES`)."""

STRATEGY_CUES_VERSION = "kw-1"
"""Version of :data:`STRATEGY_CUES` and of the keyword classifier's rules; labels carry it."""

STRATEGY_CUES: dict[str, tuple[str, ...]] = {
    "elimination": (
        r"\brul(?:e|ed|ing) out\b",
        r"\beliminat\w*",
        r"\bexclud\w*",
        r"\brather than\b",
        r"\binstead of\b",
        r"\bunlike\b",
        r"\b(?:can ?not|can't|couldn't|could not) be\b",
        r"\b(?:is|are|was) not (?:a|an|the)\b",
        r"\bother (?:options|choices|candidates)\b",
        r"\bdoes(?: not|n't) (?:fit|match)\b",
    ),
    "detailed acoustic analysis": (
        r"\bfrequenc\w*",
        r"\bpitch\w*",
        r"\bhz\b|\bkhz\b",
        r"\bharmonic\w*",
        r"\bpartials?\b",
        r"\btimbre\b",
        r"\bspectr\w*",
        r"\brhythm\w*",
        r"\btempo\b",
        r"\bmodulat\w*",
        r"\bamplitude\b",
        r"\bonsets?\b",
        r"\bdecay\w*",
        r"\battack\b",
        r"\breverb\w*|\bresonan\w*",
        r"\boscillat\w*",
        r"\benvelope\b",
        r"\bperiodic\w*",
        r"\b(?:rising|falling|sweep\w*|alternat\w*)\b",
        r"\b(?:repetition|repeating|repetitive|per second|rate)\b",
    ),
    "holistic pattern match": (
        r"\bsounds? like\b",
        r"\bcharacteristic of\b",
        r"\btypical(?:ly)? (?:of|for)\b",
        r"\breminiscent\b",
        r"\bresembl\w*",
        r"\bconsistent with\b",
        r"\bsignature\b",
        r"\bfamiliar\b",
        r"\brecogni[sz]able\b",
        r"\bclassic\b",
        r"\bdistinctive\b",
    ),
}
"""Cue regexes per strategy (case-insensitive) of the keyword proxy, version :data:`STRATEGY_CUES_VERSION`."""

ACOUSTIC_MIN_CUES = 2
"""Distinct acoustic cues an answer needs before its strategy can be detailed acoustic analysis."""

NO_JUSTIFICATION_WORDS = 4
"""An answer of at most this many words (after the final-answer line is removed) has no justification."""

_FINAL_RE = re.compile(r"(?:final )?(?:answer|choice|option)\s*(?:is|:)?\s*\(?[A-Z]\)?[.!]?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class StrategyLabel:
    """The primary reasoning strategy of one answer."""

    strategy: str
    """One of :data:`STRATEGIES`."""
    cues: dict[str, int]
    """Distinct cues matched per strategy (empty for a label not made from cues)."""
    reason: str
    """How the label was reached."""
    classifier: str
    """The classifier's name and version."""


@runtime_checkable
class StrategyClassifier(Protocol):
    """Labels the primary reasoning strategy of an answer (the keyword proxy offline, an LLM later)."""

    name: str
    """Name and version, carried by every label."""
    proxy: bool
    """Whether the labels are a proxy of the LLM labelling (report them as such)."""

    def classify(self, text: str | None) -> StrategyLabel:
        """The strategy of one answer."""
        ...


class KeywordStrategyClassifier:
    """Offline keyword proxy: counts the distinct cues of :data:`STRATEGY_CUES` in an answer.

    Rules, in order: an answer of at most :data:`NO_JUSTIFICATION_WORDS` words once a trailing "Answer: X" is
    removed is *no justification*; else the strategy with the most distinct cues wins, acoustic analysis counting
    only from :data:`ACOUSTIC_MIN_CUES` cues, ties broken in the order elimination, detailed acoustic analysis,
    holistic pattern match; an answer with no cue is *direct assertion*. A proxy, labelled as such.
    """

    name = f"keyword-proxy/{STRATEGY_CUES_VERSION}"
    proxy = True

    def __init__(self, cues: Mapping[str, Sequence[str]] = STRATEGY_CUES) -> None:
        """Compile the cues.

        Args:
            cues: Cue regexes per strategy (keys among :data:`STRATEGIES`).

        Raises:
            ValueError: On a key that is no strategy.
        """
        unknown = [k for k in cues if k not in STRATEGIES]
        if unknown:
            raise ValueError(f"cues for unknown strategies {unknown}; strategies: {', '.join(STRATEGIES)}")
        self._cues = {k: [re.compile(p, re.IGNORECASE) for p in v] for k, v in cues.items()}

    def classify(self, text: str | None) -> StrategyLabel:
        """The strategy of one answer (see the class docstring for the rules)."""
        body = "" if text is None or (isinstance(text, float) and math.isnan(text)) else str(text).strip()
        body = _FINAL_RE.sub("", body).strip()
        if len(body.split()) <= NO_JUSTIFICATION_WORDS:
            return StrategyLabel("no justification", {}, f"{len(body.split())} word(s) besides the answer", self.name)
        cues = {k: sum(1 for p in pats if p.search(body)) for k, pats in self._cues.items()}
        counted = dict(cues)
        if counted.get("detailed acoustic analysis", 0) < ACOUSTIC_MIN_CUES:
            counted["detailed acoustic analysis"] = 0
        best = max(counted.values(), default=0)
        if best == 0:
            return StrategyLabel("direct assertion", cues, "no strategy cue", self.name)
        order = ("elimination", "detailed acoustic analysis", "holistic pattern match")
        strategy = next(s for s in order if counted.get(s, 0) == best)
        return StrategyLabel(strategy, cues, f"most distinct cues ({best})", self.name)


# ---------------------------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class AssociationTest:
    """A statistical test: its name, statistic, degrees of freedom and p-value."""

    test: str
    """What was tested, and how."""
    statistic: float | None
    """The test statistic (None when the test is undefined)."""
    df: int | None
    """Degrees of freedom."""
    p_value: float | None
    """The p-value (None when undefined)."""
    n: int
    """Answers the test used."""
    note: str | None = None
    """Why the test is undefined, or what was left out."""

    def describe(self) -> str:
        """``chi2(4) = 41.2, p = 2e-09`` (or the note when undefined)."""
        if self.statistic is None or self.p_value is None:
            return f"n/a ({self.note})"
        return f"chi2({self.df}) = {self.statistic:.3g}, p = {self.p_value:.2g}"


@dataclass(frozen=True)
class StrategyRow:
    """One strategy against the rest: accuracy, crude and within-class odds ratios of being right."""

    strategy: str
    """The strategy."""
    n: int
    """Answers with this strategy."""
    correct: int
    """Right answers among them."""
    accuracy: float
    """``correct / n``."""
    accuracy_ci: tuple[float, float]
    """Wilson 95% interval of ``accuracy``."""
    crude_or: float | None
    """Odds ratio of being right, this strategy vs the rest, all answers pooled (statsmodels ``Table2x2``)."""
    crude_ci: tuple[float, float] | None
    """Its 95% interval."""
    mh_or: float | None
    """Mantel-Haenszel odds ratio pooled within classes (statsmodels ``StratifiedTable``)."""
    mh_ci: tuple[float, float] | None
    """Its 95% interval."""
    cmh_p: float | None
    """P-value of the Cochran-Mantel-Haenszel test of a common odds ratio of 1 across classes."""


@dataclass(frozen=True)
class StrategyAssociation:
    """Strategy against accuracy, raw and controlled for class difficulty."""

    raw: AssociationTest
    """Chi-square test of independence of strategy and correctness, all answers pooled."""
    controlled: AssociationTest
    """Likelihood-ratio test of the strategy terms in a logistic regression with class fixed effects."""
    per_strategy: list[StrategyRow]
    """Each strategy against the rest."""
    counts: dict[str, int]
    """Answers per strategy."""
    strata: list[str]
    """The columns that define a stratum (the class, optionally with the system)."""
    strata_used: int
    """Strata with both right and wrong answers (the controlled analyses use these)."""
    strata_dropped: int
    """Strata whose answers are all right or all wrong (no within-stratum information)."""
    classifier: str
    """The strategy classifier's name and version (or ``given`` when the frame carried the labels)."""
    proxy: bool
    """Whether the labels come from a proxy classifier."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        out = asdict(self)
        for row in out["per_strategy"]:
            for key in ("accuracy_ci", "crude_ci", "mh_ci"):
                row[key] = [plain(v) for v in row[key]] if row[key] else None
            for key in ("crude_or", "mh_or", "cmh_p"):
                row[key] = plain(row[key])
        return out

    def frame(self) -> pd.DataFrame:
        """Tidy odds ratios for the side-by-side figure.

        Returns:
            Columns ``strategy, view (raw | within class), odds_ratio, ci_low, ci_high, n, accuracy``.
        """
        rows = []
        for r in self.per_strategy:
            for view, odds, ci in (("raw", r.crude_or, r.crude_ci), ("within class", r.mh_or, r.mh_ci)):
                low, high = ci or (math.nan, math.nan)
                rows.append(
                    {
                        "strategy": r.strategy,
                        "view": view,
                        "odds_ratio": math.nan if odds is None else odds,
                        "ci_low": low,
                        "ci_high": high,
                        "n": r.n,
                        "accuracy": r.accuracy,
                    }
                )
        out = pd.DataFrame(rows, columns=["strategy", "view", "odds_ratio", "ci_low", "ci_high", "n", "accuracy"])
        for column in ("odds_ratio", "ci_low", "ci_high"):
            out[column] = out[column].astype(float)
        return out


@dataclass(frozen=True)
class LengthAssociation:
    """Response length (words) against accuracy."""

    n: int
    """Answers analysed."""
    mean_words_right: float | None
    """Mean length of right answers."""
    mean_words_wrong: float | None
    """Mean length of wrong answers."""
    point_biserial_r: float | None
    """Point-biserial correlation of correctness with length (scipy ``pointbiserialr``)."""
    r_ci: tuple[float, float] | None
    """Fisher-z 95% interval of ``point_biserial_r``."""
    r_p: float | None
    """P-value of ``point_biserial_r``."""
    raw_slope: float | None
    """Logistic slope (log-odds of being right) per 100 words, no controls."""
    raw_ci: tuple[float, float] | None
    """Wald 95% interval of ``raw_slope``."""
    raw_p: float | None
    """Wald p-value of ``raw_slope``."""
    controlled_slope: float | None
    """Logistic slope per 100 words with class fixed effects."""
    controlled_ci: tuple[float, float] | None
    """Wald 95% interval of ``controlled_slope``."""
    controlled_p: float | None
    """Wald p-value of ``controlled_slope``."""
    strata_used: int
    """Strata with both right and wrong answers (the controlled slope uses these)."""
    note: str | None = None
    """Why a statistic is undefined, or None."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, tuple | list):
                out[key] = [plain(v) for v in value]
            elif isinstance(value, float):
                out[key] = plain(value)
        return out


def words(text: Any) -> int:
    """Whitespace-separated words of an answer (0 for no text)."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return 0
    return len(str(text).split())


def _strata_key(frame: pd.DataFrame, strata: Sequence[str]) -> pd.Series:
    return frame[list(strata)].astype(str).agg(" | ".join, axis=1)


def _informative(frame: pd.DataFrame, key: pd.Series) -> pd.Series:
    """Rows of strata that have both right and wrong answers."""
    share = frame["correct"].astype(float).groupby(key).transform("mean")
    return (share > 0) & (share < 1)


def _glm(formula: str, data: pd.DataFrame) -> Any:
    import statsmodels.api as sm
    import statsmodels.formula.api as smf
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning, SingularMatrixWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerfectSeparationWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", SingularMatrixWarning)  # df_model is the rank: the LR df stays right
        warnings.simplefilter("ignore", RuntimeWarning)
        return smf.glm(formula, data=data, family=sm.families.Binomial()).fit()


def _slope(fit: Any, name: str) -> tuple[float | None, tuple[float, float] | None, float | None]:
    value = plain(fit.params[name])
    low, high = (plain(v) for v in fit.conf_int().loc[name])
    ci = (low, high) if low is not None and high is not None else None
    return value, ci, plain(fit.pvalues[name])


def _prepare(frame: pd.DataFrame, strata: Sequence[str], what: str) -> pd.DataFrame:
    _require(frame, ("correct", *strata), what)
    data = frame[frame["correct"].notna()].copy()
    data["correct"] = data["correct"].astype(bool).astype(int)
    data["_stratum"] = _strata_key(data, strata) if len(data) else pd.Series(dtype=str)
    return data


def length_association(
    frame: pd.DataFrame, strata: Sequence[str] = ("gold",), text_column: str = "response"
) -> LengthAssociation:
    """Response length against accuracy, raw and with fixed effects for the strata (the class by default).

    Args:
        frame: Answers with ``correct``, the strata columns and ``text_column`` (or a ``words`` column).
        strata: Columns whose combination is a stratum (``("gold",)``; add ``"system"`` to pool systems).
        text_column: The answer text.

    Returns:
        The association; undefined statistics are None with a ``note``.

    Raises:
        ValueError: If a column is missing.
    """
    if "words" not in frame.columns:
        _require(frame, (text_column,), "length_association")
    data = _prepare(frame, strata, "length_association")
    data["words"] = data["words"] if "words" in data.columns else data[text_column].map(words)
    data["w100"] = data["words"].astype(float) / 100.0
    right, wrong = data[data["correct"] == 1]["words"], data[data["correct"] == 0]["words"]
    base = {
        "n": len(data),
        "mean_words_right": plain(right.mean()) if len(right) else None,
        "mean_words_wrong": plain(wrong.mean()) if len(wrong) else None,
    }
    if len(right) == 0 or len(wrong) == 0 or data["words"].nunique() < 2 or len(data) < 4:
        return LengthAssociation(
            **base,
            point_biserial_r=None,
            r_ci=None,
            r_p=None,
            raw_slope=None,
            raw_ci=None,
            raw_p=None,
            controlled_slope=None,
            controlled_ci=None,
            controlled_p=None,
            strata_used=0,
            note="undefined: needs right and wrong answers of at least two lengths",
        )
    r, p = pointbiserialr(data["correct"], data["words"])
    z, se = math.atanh(max(min(r, 0.999999), -0.999999)), 1.0 / math.sqrt(len(data) - 3)
    raw = _slope(_glm("correct ~ w100", data), "w100")
    keep = _informative(data, data["_stratum"])
    inner = data[keep]
    note = None
    if inner["_stratum"].nunique() >= 1 and inner["words"].nunique() >= 2:
        formula = "correct ~ w100 + C(_stratum)" if inner["_stratum"].nunique() > 1 else "correct ~ w100"
        controlled = _slope(_glm(formula, inner), "w100")
    else:
        controlled, note = (None, None, None), "controlled slope undefined: no stratum has both right and wrong answers"
    return LengthAssociation(
        **base,
        point_biserial_r=plain(r),
        r_ci=(math.tanh(z - 1.959964 * se), math.tanh(z + 1.959964 * se)),
        r_p=plain(p),
        raw_slope=raw[0],
        raw_ci=raw[1],
        raw_p=raw[2],
        controlled_slope=controlled[0],
        controlled_ci=controlled[1],
        controlled_p=controlled[2],
        strata_used=int(inner["_stratum"].nunique()),
        note=note,
    )


def label_strategies(frame: pd.DataFrame, classifier: StrategyClassifier | None = None) -> pd.Series:
    """The strategy of every answer of ``frame`` (column ``response``) by ``classifier`` (keyword proxy default)."""
    _require(frame, ("response",), "label_strategies")
    classifier = classifier or KeywordStrategyClassifier()
    return frame["response"].map(lambda t: classifier.classify(t).strategy).rename("strategy")


def _table_or(table: np.ndarray) -> tuple[float | None, tuple[float, float] | None]:
    from statsmodels.stats.contingency_tables import Table2x2

    if (table.sum(axis=0) == 0).any() or (table.sum(axis=1) == 0).any():
        return None, None
    t = Table2x2(table, shift_zeros=True)
    low, high = t.oddsratio_confint()
    return plain(t.oddsratio), (float(low), float(high))


def _strategy_row(data: pd.DataFrame, strategy: str, informative: pd.Series) -> StrategyRow:
    from statsmodels.stats.contingency_tables import StratifiedTable

    mine = data["strategy"] == strategy
    n, k = int(mine.sum()), int(data.loc[mine, "correct"].sum())
    low, high = wilson(k, n)

    def table(rows: pd.DataFrame) -> np.ndarray:
        m = rows["strategy"] == strategy
        c = rows["correct"] == 1
        return np.array([[(m & c).sum(), (m & ~c).sum()], [(~m & c).sum(), (~m & ~c).sum()]], dtype=float)

    crude_or, crude_ci = _table_or(table(data))
    tables = [t for _, rows in data[informative].groupby("_stratum") if (t := table(rows))[0].sum() and t[1].sum()]
    mh_or = mh_ci = cmh_p = None
    if tables:
        st = StratifiedTable(tables)
        with np.errstate(divide="ignore", invalid="ignore"):
            mh_or = plain(st.oddsratio_pooled)
            ci = st.oddsratio_pooled_confint()
            cmh_p = plain(st.test_null_odds(correction=False).pvalue)
        mh_ci = (float(ci[0]), float(ci[1])) if all(math.isfinite(v) for v in ci) else None
    return StrategyRow(strategy, n, k, k / n, (low, high), crude_or, crude_ci, mh_or, mh_ci, cmh_p)


def strategy_association(
    frame: pd.DataFrame,
    classifier: StrategyClassifier | None = None,
    strata: Sequence[str] = ("gold",),
) -> StrategyAssociation:
    """Strategy against accuracy: raw (chi-square) and controlled for class difficulty (logistic LR test, CMH).

    Args:
        frame: Answers with ``correct``, the strata columns, and ``strategy`` (labels given) or ``response`` (labelled
            by ``classifier``).
        classifier: Labels the answers when ``frame`` has no ``strategy`` column (keyword proxy by default).
        strata: Columns whose combination is a stratum (``("gold",)``: the class; add ``"system"`` when systems
            differ in difficulty per class).

    Returns:
        The association.

    Raises:
        ValueError: If a column is missing or the frame has no answer.
    """
    data = _prepare(frame, strata, "strategy_association")
    if data.empty:
        raise ValueError("strategy_association: no scored answer (every `correct` is missing)")
    if "strategy" in data.columns:
        name, proxy = "given", False
    else:
        classifier = classifier or KeywordStrategyClassifier()
        data["strategy"] = label_strategies(data, classifier)
        name, proxy = classifier.name, classifier.proxy
    data["strategy"] = data["strategy"].astype(str)
    counts = {s: int(v) for s, v in data["strategy"].value_counts().sort_index().items()}
    contingency = pd.crosstab(data["strategy"], data["correct"]).reindex(columns=[0, 1], fill_value=0)
    if len(contingency) < 2 or (contingency.sum(axis=0) == 0).any():
        raw = AssociationTest(
            "Pearson chi-square test of independence, strategy x correct (scipy chi2_contingency)",
            None,
            None,
            None,
            len(data),
            note="undefined: needs two strategies and both right and wrong answers",
        )
    else:
        result = chi2_contingency(contingency.to_numpy(), correction=False)
        raw = AssociationTest(
            "Pearson chi-square test of independence, strategy x correct (scipy chi2_contingency)",
            plain(result.statistic),
            int(result.dof),
            plain(result.pvalue),
            len(data),
        )
    informative = _informative(data, data["_stratum"])
    inner = data[informative]
    test = "likelihood-ratio test of strategy in a logistic regression with class fixed effects (statsmodels GLM)"
    dropped = int(data["_stratum"].nunique() - inner["_stratum"].nunique())
    note = f"{dropped} stratum(s) with all answers right or all wrong left out" if dropped else None
    if inner["strategy"].nunique() < 2:
        controlled = AssociationTest(
            test, None, None, None, len(inner), note="undefined: fewer than two strategies within informative strata"
        )
    else:
        fe = " + C(_stratum)" if inner["_stratum"].nunique() > 1 else ""
        full = _glm(f"correct ~ C(strategy){fe}", inner)
        reduced = _glm(f"correct ~ 1{fe}", inner)
        stat = max(float(reduced.deviance - full.deviance), 0.0)
        dof = int(round(full.df_model - reduced.df_model))
        controlled = AssociationTest(test, plain(stat), dof, plain(chi2.sf(stat, dof)), len(inner), note=note)
    rows = [_strategy_row(data, s, informative) for s in _order(counts)]
    return StrategyAssociation(
        raw=raw,
        controlled=controlled,
        per_strategy=rows,
        counts=counts,
        strata=list(strata),
        strata_used=int(inner["_stratum"].nunique()),
        strata_dropped=dropped,
        classifier=name,
        proxy=proxy,
    )


def _order(counts: Mapping[str, int]) -> list[str]:
    known = [s for s in STRATEGIES if s in counts]
    return known + sorted(s for s in counts if s not in STRATEGIES)


def reasoning_json(
    length: LengthAssociation | None, association: StrategyAssociation | None, reason: str | None = None
) -> dict[str, Any]:
    """``{length, strategies, association: {raw, controlled}}`` as issue 21 asks; absent parts empty with a reason.

    Args:
        length: The length association, or None.
        association: The strategy association, or None.
        reason: Why a part is absent (default: no answers with reasoning).
    """
    why = reason or "no answers with reasoning in this run"
    out: dict[str, Any] = {"length": length.to_json() if length else {"reason": why}}
    if association is None:
        out["strategies"] = {"reason": why}
        out["association"] = {"raw": {}, "controlled": {}, "reason": why}
        return out
    data = association.to_json()
    out["strategies"] = {
        "counts": data["counts"],
        "classifier": data["classifier"],
        "proxy": data["proxy"],
        "per_strategy": data["per_strategy"],
    }
    out["association"] = {
        "raw": {**data["raw"], "text": association.raw.describe()},
        "controlled": {
            **data["controlled"],
            "text": association.controlled.describe(),
            "strata": data["strata"],
            "strata_used": data["strata_used"],
            "strata_dropped": data["strata_dropped"],
        },
    }
    return out


__all__ = [
    "CONFIDENCE_LEXICON",
    "STRATEGIES",
    "STRATEGY_CUES",
    "STRATEGY_CUES_VERSION",
    "ConfidenceLexicon",
    "ConfidentShare",
    "KeywordStrategyClassifier",
    "LengthAssociation",
    "StrategyAssociation",
    "StrategyClassifier",
    "StrategyLabel",
    "StrategyRow",
    "AssociationTest",
    "confidence_label",
    "confident_frame",
    "confident_share",
    "label_strategies",
    "length_association",
    "lexicon_frame",
    "reasoning_json",
    "strategy_association",
    "tier_tables",
    "words",
]
