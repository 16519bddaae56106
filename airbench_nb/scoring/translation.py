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
  stored with every score. The replicates are sacrebleu's, drawn as sacrebleu draws them
  (:func:`sacrebleu_replicates`: the same generator, the same indices, the same float32 sums) but summed as counts
  times sentence statistics a chunk of replicates at a time, so that memory stays linear in the items (sacrebleu
  holds replicates x items x statistics floats at once).
- **Once per model.** Every sentence's statistics are extracted once per metric (per language pair; the overall
  corpus reuses them) and a summary is kept for its outcomes (:func:`score_translations`), so that the BLEU and
  chrF sections of the score table and the analysis's ``translation`` share one computation.
- **Clusters.** When items of one score share a sentence (the directions of one spoken sentence pooled over the
  pairs: :func:`airbench_nb.records.cluster_of`), a second percentile bootstrap draws whole sentences
  (:mod:`airbench_nb.scoring.resample`) over sacrebleu's sentence statistics, summed per replicate and turned into
  a corpus score by sacrebleu itself; the interval is the union of both (never narrower than sacrebleu's), and the
  entry names the sentences and the design effect (variance of the clustered replicates over that of the same
  bootstrap drawing items).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib.util
import json
import logging
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
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


@dataclass(frozen=True, slots=True)
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
    return outcome_of(unanswered(item), response)


def unanswered(item: TranslationItem) -> TranslationOutcome:
    """What an item's outcome takes from the item alone (as if no response had come).

    :func:`outcome_of` adds the answer. A worker reading many models' answers keeps these instead of the items.
    """
    from airbench_nb.records import cluster_of

    return TranslationOutcome(
        uid=item.uid,
        pair=f"{language_code(item.source_language)}-{language_code(item.target_language)}",
        target_language=item.target_language,
        hypothesis="",
        references=tuple(item.references),
        answered=False,
        failure="no response",
        cluster=cluster_of(item),
    )


def outcome_of(unanswered: TranslationOutcome, response: Response | None) -> TranslationOutcome:
    """The outcome of an item (:func:`unanswered`) given the model's response (None: none)."""
    answer = answer_text(response)
    return TranslationOutcome(
        uid=unanswered.uid,
        pair=unanswered.pair,
        target_language=unanswered.target_language,
        hypothesis=answer.text,
        references=unanswered.references,
        answered=response is not None,
        failure=answer.failure,
        cluster=unanswered.cluster,
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
    stats = sentence_statistics(metric, hypotheses, references)
    return score_from_statistics(metric, stats, _num_refs(references), reps, seed, clusters)


def sentence_statistics(
    metric: Any, hypotheses: Sequence[str], references: Sequence[Sequence[str]], key: str | None = None
) -> Any:
    """The sacrebleu sentence statistics of each item (``_extract_corpus_statistics``), an int64 (items, k) array.

    Args:
        metric: A ``sacrebleu.metrics.BLEU`` or ``CHRF``.
        hypotheses: One answer per item (``""`` for failures).
        references: The references of each item (one or more).
        key: The metric's :func:`_metric_key`: when given, rows extracted ahead for several models
            (:func:`shared_statistics`) are read instead of extracted again.
    """
    import numpy as np

    hypotheses, streams = list(hypotheses), reference_streams(references)
    metric._check_corpus_score_args(hypotheses, streams)
    if key is not None and _SHARED_PENDING:
        _SHARED_PENDING.pop()()
    kept = _SHARED_ROWS.get(key) if key is not None else None
    if kept:
        found = [kept.get((h, tuple(r))) for h, r in zip(hypotheses, references, strict=True)]
        if all(row is not None for row in found):
            return np.array(found, dtype=np.int64).reshape(len(found), -1)
    rows = metric._extract_corpus_statistics(hypotheses, streams)
    return np.array(rows, dtype=np.int64).reshape(len(rows), -1)


_SHARED_ROWS: dict[str, dict[tuple[str, tuple[str, ...]], tuple[int, ...]]] = {}
"""Sentence statistics by metric key and ``(hypothesis, references)``, while :func:`shared_statistics` is open."""

_SHARED_PENDING: list[Callable[[], None]] = []
"""The extraction :func:`shared_statistics` defers until :func:`sentence_statistics` first needs it."""

SHARED_CHUNK = 1000
"""Items whose references are prepared at once by :func:`shared_statistics` (chrF's n-grams of 1,000 references)."""


def _metric_key(name: str, tokenize: str | None = None) -> str:
    """The key of a metric's sentence statistics: ``bleu:<tokenizer>`` or ``chrf``."""
    return f"{name}:{tokenize}" if tokenize else name


@contextlib.contextmanager
def shared_statistics(items: Sequence[Any], responses: Sequence[Mapping[str, Response]]) -> Iterator[None]:
    """Extract the sentence statistics of several models' translations together, for the duration.

    The references' part of sacrebleu's statistics (tokenized n-grams, character n-grams) is the larger part of
    the work and the same for every model: here it is prepared once per chunk of :data:`SHARED_CHUNK` items and
    every model's answer is scored against it, exactly as ``_extract_corpus_statistics`` scores it (the statistics
    of a sentence depend on it alone; a large run's chunks are spread over worker processes by
    :func:`~airbench_nb.scoring.parallel.parallel_map`). They are extracted when :func:`sentence_statistics` first
    asks for them while the context is open (never, when every corpus scored is found in :func:`score_translations`'
    cache) and dropped when it closes. Items of a pair without a tokenizer here are left to the scoring (which says
    why).

    Args:
        items: The run's items (translation items are read; others ignored).
        responses: Each model's latest response by uid.
    """

    def rows() -> list[SharedRow]:
        translations = [i for i in items if isinstance(i, TranslationItem)]
        hypotheses = [[answer_text(by_uid.get(i.uid)).text for by_uid in responses] for i in translations]
        return [(i.target_language, i.references, h) for i, h in zip(translations, hypotheses, strict=True)]

    with shared_rows(rows):
        yield


@contextlib.contextmanager
def shared_rows(rows: Callable[[], Sequence[SharedRow]]) -> Iterator[None]:
    """:func:`shared_statistics` of the rows ``rows()`` returns (:func:`extract_shared`), called when first needed.

    The statistics are extracted when a corpus is first scored from statistics (:func:`sentence_statistics`), never
    when every summary is found already (:func:`score_translations`' cache, which the worker of
    :mod:`airbench_nb.scoring.ahead` fills), and dropped when the context closes.
    """
    _SHARED_PENDING[:] = [lambda: extract_shared(rows())]
    try:
        yield
    finally:
        _SHARED_ROWS.clear()
        _SHARED_PENDING.clear()


SharedRow = tuple[str, Sequence[str], Sequence[str]]
"""One item of :func:`extract_shared`: ``(target language, references, each model's hypothesis)``."""


def extract_shared(rows: Sequence[SharedRow]) -> None:
    """Extract the sentence statistics of several models' translations into :func:`shared_statistics`' store.

    Args:
        rows: One per item: its target language, its references and each model's hypothesis (``""`` for a failure,
            as :func:`translation_outcome` has it). Items of a pair without a tokenizer here are left out.
    """
    from airbench_nb.scoring.parallel import parallel_map

    groups: dict[str, list[SharedRow]] = defaultdict(list)
    for row in rows:
        try:
            groups[tokenizer_for(row[0])].append(row)
        except MissingTokenizerError:
            continue
    tasks: list[tuple[str, str, list[list[str]], list[list[str]]]] = []
    for tokenize, group in groups.items():
        group.sort(key=lambda row: tuple(row[1]))  # items with the same references in one chunk: prepared once
        for name in ("bleu", "chrf"):
            for start in range(0, len(group), SHARED_CHUNK):
                chunk = group[start : start + SHARED_CHUNK]
                models = len(chunk[0][2])
                hypotheses = [[row[2][m] for row in chunk] for m in range(models)]
                tasks.append((name, tokenize, [list(row[1]) for row in chunk], hypotheses))
    # each chunk's statistics depend on its texts alone: large runs spread the chunks over worker processes
    done = parallel_map(chunk_statistics, tasks, items=sum(len(row[2]) for row in rows))
    for (name, tokenize, references, hypotheses), found in zip(tasks, done, strict=True):
        stored = _SHARED_ROWS.setdefault(_metric_key(name, tokenize if name == "bleu" else None), {})
        for model_hypotheses, model_rows in zip(hypotheses, found, strict=True):
            for hypothesis, refs, row in zip(model_hypotheses, references, model_rows, strict=True):
                stored.setdefault((hypothesis, tuple(refs)), row)


def chunk_statistics(task: tuple[str, str, list[list[str]], list[list[str]]]) -> list[list[tuple[int, ...]]]:
    """One chunk's sentence statistics for every model, as ``_extract_corpus_statistics`` computes them.

    The references' part (tokenized and character n-grams) is prepared once for the chunk, once for items with the
    same references, and each model's answer is scored against it; an answer given again for the same references is
    scored once.

    Args:
        task: ``(metric, tokenizer, references per item, each model's hypotheses per item)``; the metric is ``bleu``
            (with the tokenizer) or ``chrf``.

    Returns:
        Each model's statistics per item.
    """
    from sacrebleu.metrics import BLEU

    name, tokenize, references, hypotheses = task
    metric = BLEU(tokenize=tokenize) if name == "bleu" else _chrf()
    # items with the same references (the directions of one sentence into one language) share their preparation,
    # which sacrebleu only reads
    index: dict[tuple[str, ...], int] = {}
    ref_of = [index.setdefault(tuple(refs), len(index)) for refs in references]
    prepared = metric._cache_references(reference_streams([list(refs) for refs in index]))
    seen: dict[tuple[str, int], tuple[int, ...]] = {}
    out: list[list[tuple[int, ...]]] = []
    for model_hypotheses in hypotheses:
        rows: list[tuple[int, ...]] = []
        for hypothesis, at in zip(model_hypotheses, ref_of, strict=True):
            row = seen.get((hypothesis, at))
            if row is None:
                segment = metric._preprocess_segment(hypothesis)
                row = seen[(hypothesis, at)] = tuple(metric._compute_segment_statistics(segment, prepared[at]))
            rows.append(row)
        out.append(rows)
    return out


def _num_refs(references: Sequence[Sequence[str]]) -> int:
    """The ``num_refs`` sacrebleu gives a corpus: references per item, or -1 when it varies (``nrefs:var``)."""
    counts = {len(refs) for refs in references}
    return counts.pop() if len(counts) == 1 else -1


def score_from_statistics(
    metric: Any,
    stats: Any,
    num_refs: int,
    reps: int,
    seed: int,
    clusters: Sequence[str] | None = None,
    replicates: list[Any] | None = None,
) -> CorpusScore:
    """:func:`corpus_score` from the items' sentence statistics (:func:`sentence_statistics`), extracted once.

    The value is sacrebleu's (``_aggregate_and_compute``: the score of the summed statistics), the interval
    sacrebleu's bootstrap (:func:`sacrebleu_replicates`, the same numbers as ``corpus_score(n_bootstrap=reps)``),
    the signature the one sacrebleu gives after scoring that corpus.

    Args:
        metric: A fresh ``sacrebleu.metrics.BLEU`` or ``CHRF`` (its signature records this corpus).
        stats: The items' statistics, (items, k) integers.
        num_refs: References per item (-1: variable), as sacrebleu's reference cache sets it.
        reps: Bootstrap replicates (0 or 1: no interval).
        seed: Seed of sacrebleu's bootstrap.
        clusters: Each item's cluster key (see :func:`corpus_score`).
        replicates: The bootstrap's replicates when already drawn (:func:`sacrebleu_replicates_of`); None: drawn here.
    """
    metric.num_refs = num_refs
    score = metric._compute_score_from_stats([int(x) for x in stats.sum(axis=0)])  # sum_of_lists: Python ints
    if reps > 1:
        metric.n_bootstrap = reps
        metric.seed = str(seed).lower()
        score.estimate_ci(sacrebleu_replicates(metric, stats, reps, seed) if replicates is None else replicates)
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
    if ci is not None and clusters is not None and len(set(clusters)) < len(stats):
        low, high, grouping = _clustered_from_statistics(metric, stats, reps, seed, clusters)
        if low is not None and high is not None:  # the union, clipped to 0-100 as sacrebleu's interval is
            ci = (max(0.0, min(ci[0], low)), min(100.0, max(ci[1], high)))
    return CorpusScore(value=float(score.score), ci=ci, signature=signature, clustering=grouping)


FLOAT32_EXACT = 2**24
"""Integers below this are exact in float32, and so is every partial sum of counts that stays below it."""


def sacrebleu_replicates(metric: Any, stats: Any, reps: int, seed: int) -> list[Any]:
    """The bootstrap replicates of sacrebleu (``sacrebleu.significance._bootstrap_resample``), in bounded memory.

    sacrebleu draws ``default_rng(seed).choice(n, size=(reps, n))``, gathers the float32 statistics of every
    replicate at once (reps x n x k floats: 11 GB for 1,000 replicates of 150,000 chrF sentences) and scores each
    replicate's float32 sum. Here the same indices are drawn a chunk of rows at a time (``integers(0, n)``, which
    gives ``choice``'s numbers in the same order, row after row), turned into counts, and multiplied by the
    statistics in float64: sums of integer counts, exact, hence equal to sacrebleu's float32 sums whenever every
    sum stays below :data:`FLOAT32_EXACT` (every partial sum is then exact too, in any order). A chunk with a
    larger sum is summed the way sacrebleu sums it. Each replicate is scored by the metric from a float32 array,
    as in sacrebleu, so that the scores are the same floats.

    Returns:
        The replicates' sacrebleu ``Score`` objects, in sacrebleu's order.
    """
    return sacrebleu_replicates_of([(metric, stats)], reps, seed)[0]


def sacrebleu_replicates_of(scored: Sequence[tuple[Any, Any]], reps: int, seed: int) -> list[list[Any]]:
    """:func:`sacrebleu_replicates` of several metrics' statistics of the same items, from one draw.

    sacrebleu draws the same indices for every metric of the same items, seed and replicates (BLEU and chrF of one
    corpus): they are drawn and counted once here, and each metric's statistics summed with them.

    Args:
        scored: ``(metric, statistics)`` per metric, the statistics' rows the same items in the same order.
        reps: Replicates.
        seed: sacrebleu's seed.

    Returns:
        Each metric's replicates, as :func:`sacrebleu_replicates` returns them.
    """
    import numpy as np

    from airbench_nb.scoring.resample import BOOTSTRAP_CHUNK

    n = scored[0][1].shape[0]
    if any(stats.shape[0] != n for _, stats in scored):
        raise ValueError(f"statistics of {sorted({stats.shape[0] for _, stats in scored})} items: one corpus asked")
    rng = np.random.default_rng(int(seed))
    wide = [stats.astype(np.float64) for _, stats in scored]
    narrow: list[Any] = [None] * len(scored)
    step = max(1, BOOTSTRAP_CHUNK // max(n, 1))
    out: list[list[Any]] = [[] for _ in scored]
    for start in range(0, reps, step):
        rows = min(step, reps - start)
        idx = rng.integers(0, n, size=(rows, n))
        flat = idx + np.arange(0, rows * n, n)[:, None]
        counts = np.bincount(flat.ravel(), minlength=rows * n).reshape(rows, n).astype(np.float64)
        for k, (metric, stats) in enumerate(scored):
            sums = counts @ wide[k]
            if sums.size and sums.max() >= FLOAT32_EXACT:  # float32 rounds: sum as sacrebleu does
                narrow[k] = stats.astype(np.float32) if narrow[k] is None else narrow[k]
                totals = [narrow[k][row].sum(0) for row in idx]
            else:
                totals = list(sums.astype(np.float32))
            out[k].extend(metric._compute_score_from_stats(total) for total in totals)
    return out


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

    stats = np.array(metric._extract_corpus_statistics(list(hypotheses), [list(s) for s in streams]), dtype=np.int64)
    return _clustered_from_statistics(metric, stats, reps, seed, keys)


def _clustered_from_statistics(
    metric: Any, stats: Any, reps: int, seed: int, keys: Any
) -> tuple[float | None, float | None, Any]:
    """:func:`clustered_corpus_interval` from statistics already extracted."""
    import numpy as np

    from airbench_nb.scoring.resample import clustered_interval, key_rng, resampled_sums

    wide = stats.astype(float)
    n = wide.shape[0]

    def draw(codes: Any) -> Any:
        out = []
        for sums in resampled_sums(wide, reps, key_rng(seed, f"{type(metric).__name__}/clusters"), codes):
            for row in np.rint(sums).astype(int):
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


def _scores(
    outcomes: Sequence[TranslationOutcome], tokenize: str, reps: int, seed: int, stats: tuple[Any, Any]
) -> PairScores:
    """BLEU and chrF of a group of outcomes from their sentence statistics ``(bleu, chrf)``, rows in their order."""
    from sacrebleu.metrics import BLEU

    num_refs = _num_refs([o.references for o in outcomes])
    keys = [o.cluster or o.uid for o in outcomes]
    bleu, chrf = BLEU(tokenize=tokenize), _chrf()
    bleu.num_refs = chrf.num_refs = num_refs
    # sacrebleu draws the same replicates for both metrics of one corpus: drawn once
    drawn = sacrebleu_replicates_of([(bleu, stats[0]), (chrf, stats[1])], reps, seed) if reps > 1 else [None, None]
    return PairScores(
        bleu=score_from_statistics(bleu, stats[0], num_refs, reps, seed, keys, drawn[0]),
        chrf=score_from_statistics(chrf, stats[1], num_refs, reps, seed, keys, drawn[1]),
        n=len(outcomes),
        failures=sum(o.failure is not None for o in outcomes),
        tokenize=tokenize,
    )


def _pair_statistics(outcomes: Sequence[TranslationOutcome], tokenize: str) -> tuple[Any, Any]:
    """The BLEU (``tokenize``) and chrF sentence statistics of a group of outcomes, extracted once."""
    from sacrebleu.metrics import BLEU

    hypotheses = [o.hypothesis for o in outcomes]
    references = [o.references for o in outcomes]
    return (
        sentence_statistics(BLEU(tokenize=tokenize), hypotheses, references, _metric_key("bleu", tokenize)),
        sentence_statistics(_chrf(), hypotheses, references, _metric_key("chrf")),
    )


def _unscored(outcomes: Sequence[TranslationOutcome], why: str) -> PairScores:
    missing = CorpusScore(value=None, ci=None, signature=None, error=why)
    return PairScores(bleu=missing, chrf=missing, n=len(outcomes), failures=len(outcomes), tokenize=None)


def _weighted(pairs: Sequence[PairScores], metric: str) -> CorpusScore:
    scored = [(getattr(p, metric).value, p.n) for p in pairs if getattr(p, metric).value is not None]
    total = sum(n for _, n in scored)
    value = sum(v * n for v, n in scored) / total if total else None
    return CorpusScore(value=value, ci=None, signature=None)


SUMMARIES_KEPT = 16
"""Summaries :func:`score_translations` keeps (by a digest of their outcomes): the score table's BLEU and chrF
sections and the analysis's ``translation`` of a few models score the same outcomes once."""

_SUMMARIES: OrderedDict[str, TranslationSummary] = OrderedDict()


def digest_outcomes(outcomes: Sequence[TranslationOutcome], reps: int, seed: int) -> str:
    """A digest of everything a summary depends on: every outcome's fields, the replicates and the seed."""
    digest = hashlib.sha256(f"{reps}|{seed}|{len(outcomes)}".encode())
    fields = [
        (o.uid, o.pair, o.target_language, o.hypothesis, o.references, o.answered, o.failure, o.cluster)
        for o in outcomes
    ]
    digest.update(json.dumps(fields, ensure_ascii=False).encode("utf-8"))  # one JSON array: unambiguous
    return digest.hexdigest()


def score_translations(outcomes: Sequence[TranslationOutcome], reps: int = 1000, seed: int = 0) -> TranslationSummary:
    """BLEU and chrF per language pair and over all items (see the module docstring).

    The same outcomes scored again (the BLEU and chrF sections, then the analysis) return a copy of the summary
    kept from the first time (:data:`SUMMARIES_KEPT` are kept), or computed ahead for the same outcomes by
    :mod:`airbench_nb.scoring.ahead`'s worker (:func:`keep_summaries`).

    Args:
        outcomes: One outcome per item (:func:`translation_outcome`).
        reps: sacrebleu's ``n_bootstrap`` (0: no intervals).
        seed: Seed of sacrebleu's bootstrap.
    """
    from airbench_nb.scoring import pending

    key = digest_outcomes(outcomes, reps, seed)
    if key not in _SUMMARIES and pending.waiting("translations"):
        found = pending.take("translations")  # computed ahead (scoring.ahead): only the very same outcomes match
        if found:
            keep_summaries(found)
    if key in _SUMMARIES:
        _SUMMARIES.move_to_end(key)
        return copy.deepcopy(_SUMMARIES[key])
    summary = _score_translations(outcomes, reps, seed)
    _SUMMARIES[key] = copy.deepcopy(summary)
    while len(_SUMMARIES) > SUMMARIES_KEPT:
        _SUMMARIES.popitem(last=False)
    return summary


def keep_summaries(summaries: Mapping[str, TranslationSummary]) -> None:
    """Add summaries computed elsewhere to :func:`score_translations`' cache, by their outcomes' digest.

    A summary is found only by outcomes whose digest is its own: the same fields of every outcome, in the same order,
    with the same replicates and seed.
    """
    for key, summary in summaries.items():
        _SUMMARIES[key] = copy.deepcopy(summary)
        _SUMMARIES.move_to_end(key)
    while len(_SUMMARIES) > SUMMARIES_KEPT:
        _SUMMARIES.popitem(last=False)


def _in_order(outcomes: Sequence[TranslationOutcome], statistics: Mapping[str, tuple[Any, Any]]) -> tuple[Any, Any]:
    """The pairs' statistics rearranged into the order of ``outcomes`` (the overall corpus)."""
    import numpy as np

    seen: Counter[str] = Counter()
    offsets, start = {}, 0
    for pair in statistics:
        offsets[pair] = start
        start += len(statistics[pair][0])
    rows = []
    for o in outcomes:
        rows.append(offsets[o.pair] + seen[o.pair])
        seen[o.pair] += 1
    order = np.array(rows, dtype=np.int64)
    return (
        np.concatenate([statistics[p][0] for p in statistics])[order],
        np.concatenate([statistics[p][1] for p in statistics])[order],
    )


def _score_translations(outcomes: Sequence[TranslationOutcome], reps: int, seed: int) -> TranslationSummary:
    """:func:`score_translations`, computed."""
    by_pair: dict[str, list[TranslationOutcome]] = defaultdict(list)
    for outcome in outcomes:
        by_pair[outcome.pair].append(outcome)
    pairs: dict[str, PairScores] = {}
    tokenizers: dict[str, str] = {}
    statistics: dict[str, tuple[Any, Any]] = {}
    for pair in sorted(by_pair):
        try:
            tokenizers[pair] = tokenizer_for(by_pair[pair][0].target_language)
        except MissingTokenizerError as exc:
            logger.error("translation %s not scored: %s", pair, exc)
            pairs[pair] = _unscored(by_pair[pair], str(exc))
            continue
        statistics[pair] = _pair_statistics(by_pair[pair], tokenizers[pair])
        pairs[pair] = _scores(by_pair[pair], tokenizers[pair], reps, seed, statistics[pair])
    reasons = Counter(o.failure for o in outcomes if o.failure is not None)
    for pair, scores in pairs.items():
        if scores.bleu.error is not None:
            reasons[f"{pair} not scored: {scores.bleu.error}"] += scores.n
    usable = [o for o in outcomes if o.pair in tokenizers]
    if len(set(tokenizers.values())) == 1 and len(usable) == len(outcomes):
        overall = _scores(usable, next(iter(tokenizers.values())), reps, seed, _in_order(outcomes, statistics))
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
    ahead_part: ClassVar[str | None] = "translations"

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
    "shared_statistics",
    "tokenizer_for",
    "translation_outcome",
    "translation_summary",
]
