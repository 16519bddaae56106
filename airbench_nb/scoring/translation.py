"""Speech translation scored by corpus BLEU and chrF with sacrebleu (UG-Bench's translation task).

The rules, stated once:

- **Text.** The answer as the model wrote it (cased, untokenized, stripped of surrounding whitespace), against the
  item's reference translations as written: sacrebleu tokenizes both sides itself. A missing response, an error or
  an empty answer stays in the corpus as ``""`` (it lowers the score; counted in ``failures`` with its reason).
- **Tokenizer** (BLEU; chrF works on characters): ``13a``, sacrebleu's default, for every target language but
  Chinese (``zh``) and Japanese (``ja-mecab``, which needs ``pip install "sacrebleu[ja]"``: without it the pair is
  not scored and says so in one line, :class:`MissingTokenizerError`).
- **References.** One or more per item; items with fewer references than others leave the missing ones ``None``,
  the way sacrebleu takes a variable number of references (its signature then says ``nrefs:var``).
- **Scores.** sacrebleu's corpus functions (``sacrebleu.metrics.BLEU`` and ``CHRF``, chrF with its defaults:
  character 6-grams, beta 2, no word n-grams), on 0-100 as sacrebleu reports them: per language pair (``de-en``,
  ...) and over all items (one corpus; when the pairs need different tokenizers, the item-weighted mean of the
  pairs' scores, without an interval).
- **Interval.** sacrebleu's own bootstrap resampling (``n_bootstrap`` = the kit's replicates, seeded through
  sacrebleu's ``SACREBLEU_SEED`` with the kit's seed): the bootstrap mean plus and minus half the width of its 95%
  range, as sacrebleu prints it (``μ = x ± y``), clipped to 0-100. Its signature (with ``bs`` and ``rs``) is
  stored with every score.
- **Clusters.** When items of one score share a sentence (the directions of one spoken sentence pooled over the
  pairs: :func:`airbench_nb.records.cluster_of`), a second percentile bootstrap draws whole sentences
  (:mod:`airbench_nb.scoring.resample`) over sacrebleu's sentence statistics, summed per replicate and turned into
  a corpus score by sacrebleu itself; the interval is the union of both (never narrower than sacrebleu's), and the
  entry names the sentences and the design effect (variance of the clustered replicates over that of the same
  bootstrap drawing items).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from airbench_nb.records import Response, TranslationItem, Verdict
from airbench_nb.score_table import ScoreEntry, ScoreSection
from airbench_nb.scoring.text_answers import NoJudge, answer_text
from airbench_nb.scoring.wer import language_code

logger = logging.getLogger(__name__)

TOKENIZERS: dict[str, str] = {"zh": "zh", "ja": "ja-mecab"}
"""sacrebleu's BLEU tokenizer by target language; every other language gets :data:`DEFAULT_TOKENIZER`."""

DEFAULT_TOKENIZER = "13a"
"""sacrebleu's default tokenizer (mteval-v13a), for targets not in :data:`TOKENIZERS`."""

JA_MECAB_MODULES: tuple[str, ...] = ("MeCab", "ipadic")
"""What sacrebleu's ``ja-mecab`` tokenizer imports."""

SEED_VARIABLE = "SACREBLEU_SEED"
"""The environment variable sacrebleu seeds its bootstrap from."""


class MissingTokenizerError(RuntimeError):
    """A target language needs a sacrebleu tokenizer whose library is not installed (the message says what to do)."""


def tokenizer_for(language: str) -> str:
    """The sacrebleu BLEU tokenizer for a target language (``13a``; ``zh``; ``ja-mecab`` when installed).

    Raises:
        MissingTokenizerError: Japanese without MeCab (one line naming the package to install).
    """
    name = TOKENIZERS.get(language_code(language), DEFAULT_TOKENIZER)
    if name == "ja-mecab" and any(importlib.util.find_spec(m) is None for m in JA_MECAB_MODULES):
        raise MissingTokenizerError(
            f"target language {language!r} needs sacrebleu's ja-mecab tokenizer: pip install 'sacrebleu[ja]' "
            "(mecab-python3 and ipadic)"
        )
    return name


@dataclass(frozen=True)
class TranslationOutcome:
    """One item's translation, ready to score."""

    uid: str
    """The item's uid."""
    pair: str
    """``<source>-<target>`` language codes (the task of the section's entries)."""
    target_language: str
    """The target language (chooses the tokenizer)."""
    hypothesis: str
    """The answer as written, stripped; ``""`` for a failure."""
    references: tuple[str, ...]
    """The reference translations."""
    answered: bool
    """Whether the model has a response for the item."""
    failure: str | None
    """Why there is no answer; None when there is one."""
    cluster: str = ""
    """The item's cluster key (its sentence: :func:`airbench_nb.records.cluster_of`); empty: the item on its own."""


def translation_outcome(item: TranslationItem, response: Response | None) -> TranslationOutcome:
    """The outcome of one item (see the module docstring for how failures are kept)."""
    from airbench_nb.records import cluster_of

    answer = answer_text(response)
    return TranslationOutcome(
        uid=item.uid,
        pair=f"{language_code(item.source_language)}-{language_code(item.target_language)}",
        target_language=item.target_language,
        hypothesis=answer.text,
        references=tuple(item.references),
        answered=response is not None,
        failure=answer.failure,
        cluster=cluster_of(item),
    )


@dataclass(frozen=True)
class CorpusScore:
    """One sacrebleu corpus score with its bootstrap interval and signature."""

    value: float | None
    """The score on 0-100; None when it could not be computed (see ``error``)."""
    ci: tuple[float, float] | None
    """sacrebleu's 95% bootstrap interval (mean ± half width); None without replicates."""
    signature: str | None
    """sacrebleu's signature of the score (how to reproduce it)."""
    error: str | None = None
    """Why there is no value (a missing tokenizer); None when there is one."""
    clustering: Any = None
    """How the interval's items were clustered (:class:`~airbench_nb.scoring.resample.Clustering`) when some share a
    sentence (the interval is then the union with the clustered bootstrap's); None otherwise."""


@dataclass(frozen=True)
class PairScores:
    """BLEU and chrF of one language pair (or of all items)."""

    bleu: CorpusScore
    """Corpus BLEU."""
    chrf: CorpusScore
    """Corpus chrF."""
    n: int
    """Items scored (failures included, as ``""``)."""
    failures: int
    """Items without an answer."""
    tokenize: str | None
    """The BLEU tokenizer (None when the pairs of an average used different ones)."""


@dataclass(frozen=True)
class TranslationSummary:
    """One model's translation scores: over all items and per language pair."""

    bleu: float | None
    """Corpus BLEU over all items (0-100)."""
    bleu_ci: tuple[float, float] | None
    """Its 95% interval (sacrebleu's bootstrap); None without replicates or for a mean over tokenizers."""
    chrf: float | None
    """Corpus chrF over all items (0-100)."""
    chrf_ci: tuple[float, float] | None
    """Its 95% interval."""
    signature: str | None
    """sacrebleu's BLEU signature of the overall score; None for a mean over tokenizers."""
    chrf_signature: str | None
    """sacrebleu's chrF signature of the overall score."""
    n: int
    """Items scored."""
    failures: int
    """Items without an answer (scored as ``""``)."""
    failure_reasons: dict[str, int]
    """Failures by reason, most common first."""
    by_pair: dict[str, PairScores] = field(default_factory=dict)
    """Scores per ``<source>-<target>`` pair."""
    bleu_clustering: Any = None
    """How the overall BLEU interval's items were clustered when some share a sentence (see ``CorpusScore``)."""
    chrf_clustering: Any = None
    """The same for the overall chrF interval."""


@contextlib.contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    """Seed sacrebleu's bootstrap with ``seed`` for the duration (its only seed is an environment variable)."""
    before = os.environ.get(SEED_VARIABLE)
    os.environ[SEED_VARIABLE] = str(seed)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SEED_VARIABLE, None)
        else:
            os.environ[SEED_VARIABLE] = before


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """The sacrebleu reference streams from per-item references: stream ``j`` holds each item's ``j``-th, or None."""
    width = max((len(refs) for refs in references), default=0)
    return [[refs[j] if j < len(refs) else None for refs in references] for j in range(width)]


def corpus_score(
    metric: Any,
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    reps: int,
    seed: int,
    clusters: Sequence[str] | None = None,
) -> CorpusScore:
    """A sacrebleu metric's corpus score, its bootstrap interval (``reps`` > 1) and its signature.

    Args:
        metric: A ``sacrebleu.metrics.BLEU`` or ``CHRF``.
        hypotheses: One answer per item (``""`` for failures).
        references: The references of each item (one or more).
        reps: Bootstrap replicates (``n_bootstrap``; 0 or 1: no interval).
        seed: Seed of sacrebleu's bootstrap.
        clusters: Each item's cluster key; where items share one, the interval is widened by the cluster bootstrap
            (:func:`clustered_corpus_interval`).
    """
    streams = reference_streams(references)
    with _sacrebleu_seed(seed):
        score = metric.corpus_score(list(hypotheses), streams, n_bootstrap=max(reps, 1))
    signature = str(metric.get_signature())
    ci = None
    if reps > 1:
        shown = json.loads(score.format(width=10, signature=signature, is_json=True))
        if "confidence_mean" in shown:  # sacrebleu shows it when the bootstrap mean is above 0
            mean, half = shown["confidence_mean"], shown["confidence_var"]
            ci = (max(0.0, float(mean - half)), min(100.0, float(mean + half)))
        else:  # every replicate scored 0
            ci = (0.0, 0.0)
    grouping = None
    if ci is not None and clusters is not None and len(set(clusters)) < len(hypotheses):
        low, high, grouping = clustered_corpus_interval(metric, hypotheses, streams, reps, seed, clusters)
        if low is not None and high is not None:  # the union, clipped to 0-100 as sacrebleu's interval is
            ci = (max(0.0, min(ci[0], low)), min(100.0, max(ci[1], high)))
    return CorpusScore(value=float(score.score), ci=ci, signature=signature, clustering=grouping)


def clustered_corpus_interval(
    metric: Any, hypotheses: Sequence[str], streams: Sequence[Sequence[str | None]], reps: int, seed: int, keys: Any
) -> tuple[float | None, float | None, Any]:
    """The percentile interval of a corpus score drawing whole clusters, and the clustering with its design effect.

    Each item's sacrebleu sentence statistics (``_extract_corpus_statistics``: lengths and n-gram counts for BLEU,
    character and word n-gram counts for chrF) are summed with each replicate's weights
    (:func:`airbench_nb.scoring.resample.weight_rows`) and scored by the metric itself
    (``_compute_score_from_stats``), so that every replicate is a corpus score, never a mean of sentence scores.

    Returns:
        ``(low, high, clustering)`` on 0-100 (:func:`airbench_nb.scoring.resample.clustered_interval`).
    """
    import numpy as np

    from airbench_nb.scoring.resample import clustered_interval, key_rng, weight_rows

    stats = np.array(metric._extract_corpus_statistics(list(hypotheses), [list(s) for s in streams]), dtype=float)
    n = stats.shape[0]

    def draw(codes: Any) -> Any:
        rows = weight_rows(n, reps, key_rng(seed, f"{type(metric).__name__}/clusters"), codes)
        out = []
        for weights in rows:
            for row in np.rint(weights @ stats).astype(int):
                out.append(float(metric._compute_score_from_stats(row.tolist()).score))
        return np.array(out)

    return clustered_interval(draw, list(keys), n, reps)


def _chrf() -> Any:
    """A sacrebleu ``CHRF`` whose scores are always Python floats.

    sacrebleu 2.6 returns a NumPy float32 from its bootstrap statistics but a Python float when no n-gram of an
    order is present (a replicate that drew only empty answers); ``statistics.mean`` then refuses the mix
    (``TypeError: don't know how to coerce float and float32``). The value is the same; only its type changes.
    """
    from sacrebleu.metrics import CHRF

    class _FloatChrf(CHRF):  # type: ignore[misc] - sacrebleu is untyped
        def _compute_f_score(self, statistics: list[int]) -> float:
            return float(super()._compute_f_score(statistics))

    return _FloatChrf()


def _scores(outcomes: Sequence[TranslationOutcome], tokenize: str, reps: int, seed: int) -> PairScores:
    from sacrebleu.metrics import BLEU

    hypotheses = [o.hypothesis for o in outcomes]
    references = [o.references for o in outcomes]
    keys = [o.cluster or o.uid for o in outcomes]
    return PairScores(
        bleu=corpus_score(BLEU(tokenize=tokenize), hypotheses, references, reps, seed, keys),
        chrf=corpus_score(_chrf(), hypotheses, references, reps, seed, keys),
        n=len(outcomes),
        failures=sum(o.failure is not None for o in outcomes),
        tokenize=tokenize,
    )


def _unscored(outcomes: Sequence[TranslationOutcome], why: str) -> PairScores:
    missing = CorpusScore(value=None, ci=None, signature=None, error=why)
    return PairScores(bleu=missing, chrf=missing, n=len(outcomes), failures=len(outcomes), tokenize=None)


def _weighted(pairs: Sequence[PairScores], metric: str) -> CorpusScore:
    scored = [(getattr(p, metric).value, p.n) for p in pairs if getattr(p, metric).value is not None]
    total = sum(n for _, n in scored)
    value = sum(v * n for v, n in scored) / total if total else None
    return CorpusScore(value=value, ci=None, signature=None)


def score_translations(outcomes: Sequence[TranslationOutcome], reps: int = 1000, seed: int = 0) -> TranslationSummary:
    """BLEU and chrF per language pair and over all items (see the module docstring).

    Args:
        outcomes: One outcome per item (:func:`translation_outcome`).
        reps: sacrebleu's ``n_bootstrap`` (0: no intervals).
        seed: Seed of sacrebleu's bootstrap.
    """
    by_pair: dict[str, list[TranslationOutcome]] = defaultdict(list)
    for outcome in outcomes:
        by_pair[outcome.pair].append(outcome)
    pairs: dict[str, PairScores] = {}
    tokenizers: dict[str, str] = {}
    for pair in sorted(by_pair):
        try:
            tokenizers[pair] = tokenizer_for(by_pair[pair][0].target_language)
        except MissingTokenizerError as exc:
            logger.error("translation %s not scored: %s", pair, exc)
            pairs[pair] = _unscored(by_pair[pair], str(exc))
            continue
        pairs[pair] = _scores(by_pair[pair], tokenizers[pair], reps, seed)
    reasons = Counter(o.failure for o in outcomes if o.failure is not None)
    for pair, scores in pairs.items():
        if scores.bleu.error is not None:
            reasons[f"{pair} not scored: {scores.bleu.error}"] += scores.n
    usable = [o for o in outcomes if o.pair in tokenizers]
    if len(set(tokenizers.values())) == 1 and len(usable) == len(outcomes):
        overall = _scores(usable, next(iter(tokenizers.values())), reps, seed)
        bleu, chrf = overall.bleu, overall.chrf
    else:  # pairs tokenized differently (or one not scored): the item-weighted mean of the pairs, no interval
        bleu, chrf = _weighted(list(pairs.values()), "bleu"), _weighted(list(pairs.values()), "chrf")
    return TranslationSummary(
        bleu=bleu.value,
        bleu_ci=bleu.ci,
        chrf=chrf.value,
        chrf_ci=chrf.ci,
        signature=bleu.signature,
        chrf_signature=chrf.signature,
        n=len(outcomes),
        failures=sum(o.failure is not None for o in outcomes),
        failure_reasons=dict(reasons.most_common()),
        by_pair=pairs,
        bleu_clustering=bleu.clustering,
        chrf_clustering=chrf.clustering,
    )


def translation_summary(
    items: Sequence[TranslationItem], responses: Sequence[Response], reps: int = 1000, seed: int = 0
) -> TranslationSummary:
    """One model's translation scores (for the analysis): every translation item, the latest response per uid.

    Args:
        items: The items (other kinds are ignored).
        responses: One model's responses, in file order (a later one for a uid replaces an earlier one).
        reps: sacrebleu's ``n_bootstrap`` (0: no intervals).
        seed: Seed of sacrebleu's bootstrap.
    """
    latest = {r.uid: r for r in responses}
    outcomes = [translation_outcome(i, latest.get(i.uid)) for i in items if isinstance(i, TranslationItem)]
    return score_translations(outcomes, reps=reps, seed=seed)


def _entry(score: CorpusScore, n: int, failures: int) -> ScoreEntry:
    low, high = score.ci if score.ci is not None else (None, None)
    entry = ScoreEntry(value=score.value, n=n, failures=failures, ci_low=low, ci_high=high)
    if score.clustering is not None and score.clustering.clustered:
        entry.clusters = score.clustering.clusters
        entry.cluster_unit = score.clustering.unit
        entry.design_effect = score.clustering.design_effect
    return entry


class _SacreMetric(NoJudge):
    """A sacrebleu corpus metric through the metric protocol: tasks per language pair, the average over all items."""

    name: ClassVar[str] = ""
    section: ClassVar[str] = ""
    score_field: ClassVar[str] = ""

    def serves(self, item: Any) -> bool:
        """Whether the metric scores this item (a translation item)."""
        return isinstance(item, TranslationItem)

    def outcomes(
        self, item: TranslationItem, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str
    ) -> list[TranslationOutcome]:
        """The item's translation (the same under both protocols: UG-Bench has no official script to reproduce)."""
        return [translation_outcome(item, response)]

    def aggregate(self, outcomes: Sequence[TranslationOutcome], protocol: str, reps: int, seed: int) -> ScoreSection:
        """One entry per language pair and the average; the sacrebleu signature in ``source``."""
        summary = score_translations(outcomes, reps=reps, seed=seed)
        tasks = {
            pair: _entry(getattr(scores, self.score_field), scores.n, scores.failures)
            for pair, scores in summary.by_pair.items()
        }
        overall = CorpusScore(
            value=getattr(summary, self.score_field),
            ci=getattr(summary, f"{self.score_field}_ci"),
            signature=None,
            clustering=getattr(summary, f"{self.score_field}_clustering"),
        )
        signature = summary.signature if self.score_field == "bleu" else summary.chrf_signature
        pair_signatures = [getattr(s, self.score_field).signature for s in summary.by_pair.values()]
        return ScoreSection(
            tasks=tasks,
            categories={},
            average=_entry(overall, summary.n, summary.failures),
            n_items=summary.n,
            failed=summary.failures,
            failure_reasons=summary.failure_reasons,
            source=signature or [s for s in dict.fromkeys(pair_signatures) if s is not None],
        )


class Bleu(_SacreMetric):
    """Corpus BLEU of translations (sacrebleu, 0-100)."""

    name: ClassVar[str] = "bleu"
    section: ClassVar[str] = "translation"
    score_field: ClassVar[str] = "bleu"


class Chrf(_SacreMetric):
    """Corpus chrF of translations (sacrebleu, 0-100)."""

    name: ClassVar[str] = "chrf"
    section: ClassVar[str] = "translation_chrf"
    score_field: ClassVar[str] = "chrf"


__all__ = [
    "Bleu",
    "Chrf",
    "CorpusScore",
    "MissingTokenizerError",
    "PairScores",
    "TranslationOutcome",
    "TranslationSummary",
    "corpus_score",
    "reference_streams",
    "score_translations",
    "tokenizer_for",
    "translation_outcome",
    "translation_summary",
]
