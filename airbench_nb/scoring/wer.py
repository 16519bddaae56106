"""Word error rate (and character error rate) of transcripts against references, with a bootstrap CI.

The rules, stated once:

- **Normalisation.** Both sides go through Whisper's text normaliser (the ``whisper-normalizer`` package, offline):
  ``EnglishTextNormalizer`` for English (lower case, punctuation out, contractions and titles spelled out,
  British spellings made American, and numbers canonicalised: "twenty five" and "25" both become ``25``),
  ``BasicTextNormalizer`` for every other language (lower case, punctuation and symbols out). The kit adds two
  steps: zero-width characters (:data:`ZERO_WIDTH_CHARACTERS`: a zero-width space inside a word is no error) are
  removed first, and tokens left with no letter or digit (a lone ``.`` or ``$`` that Whisper's rules keep) are
  dropped, so that a reference of only punctuation normalises to nothing.
- **Units.** Words; for languages written without spaces (:data:`CHARACTER_LANGUAGES`: Chinese, Japanese, Thai,
  Lao, Khmer, Burmese, Cantonese, Tibetan) characters (spaces removed, every character a token): the character
  error rate, reported in the same fields.
- **Counts.** jiwer's ``process_words`` aligns the two token sequences (works on jiwer 3 and 4): hits,
  substitutions (S), deletions (D), insertions (I). An empty or failed (None) hypothesis is all deletions, never
  dropped. A reference that normalises to nothing cannot be scored: it becomes a :class:`SkippedUtterance` with
  its reason, counted by :func:`corpus_wer` (never a division by zero).
- **Headline.** Corpus WER = total (S + D + I) / total reference words, with a 95% percentile bootstrap interval
  resampling utterances (:data:`~airbench_nb.scoring.aggregate.DEFAULT_REPS` replicates, a seeded generator per
  key as in :mod:`~airbench_nb.scoring.aggregate`). Also the per-utterance mean and median (seed-tts-eval's
  average of utterance WERs, which weighs short utterances more), S/D/I totals, the share of empty outputs and the
  hallucination rate.
- **Hallucination** (:data:`HALLUCINATION_RULE`): an utterance whose WER exceeds 100%, or whose insertions exceed
  half its reference words: the output says much that was not spoken (a looping decoder, an invented sentence).

Speed. Normalising is the slow part (about 0.3 ms a string with the library as is): normalised strings are kept
by (text, language) for the process (:func:`normalize` is an LRU cache), and the English normaliser runs with its
regular expressions compiled once, each of its 53 contraction rules skipped when the text it needs is absent, the
symbol removal of ASCII text done by one ``str.translate``, and the number normaliser skipped for text that holds
no number (about 0.1 ms a string). The result equals the library's to the character (a test checks it on a
corpus), and the fast path is used only when the library's ``__call__`` is the one it was checked against. One
``process_words`` call per utterance with a light transform (the strings are already normalised) is faster than
one call on lists (measured here with jiwer 4: 20,000 utterances in 1.1 s against 1.6 s, on a loaded machine).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import itertools
import logging
import re
import statistics
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from airbench_nb.scoring.aggregate import DEFAULT_REPS
from airbench_nb.scoring.resample import BOOTSTRAP_CHUNK  # the kit's chunk size (re-exported here)
from airbench_nb.scoring.resample import percentile_interval as percentile_interval  # re-exported

logger = logging.getLogger(__name__)

CHARACTER_LANGUAGES: frozenset[str] = frozenset({"zh", "ja", "th", "lo", "km", "my", "yue", "bo", "wuu", "cmn"})
"""Languages written without spaces between words (ISO 639 codes): scored by character error rate."""

HALLUCINATION_RULE = "WER > 100% or insertions > half the reference words"
"""When an utterance counts as a hallucination (see :func:`is_hallucination`)."""

HALLUCINATION_INSERTION_SHARE = 0.5
"""Insertions above this share of the reference words make an utterance a hallucination."""

NORMALIZE_CACHE_SIZE = 262_144
"""Normalised strings kept per process (the least recently used go first)."""

ZERO_WIDTH_CHARACTERS = "\u200b\u200c\u200d\u2060\ufeff"
"""Removed from both texts before normalising: zero-width space, non-joiner and joiner, word joiner, and the
zero-width no-break space (a byte-order mark); they are invisible, so never a word error."""

REFERENCE_EMPTY = "reference normalises to nothing"
"""Reason of a :class:`SkippedUtterance` whose reference has no word left after normalisation."""

_CHECKED_ENGLISH_CALL = "255d986aedfdc1dc"
"""sha256 prefix of the ``EnglishTextNormalizer.__call__`` source that :class:`_FastEnglish` reproduces."""

_WORDLESS = re.compile(r"\w", re.UNICODE)
_NO_ZERO_WIDTH = dict.fromkeys(map(ord, ZERO_WIDTH_CHARACTERS))
_PLAIN = re.compile(r"[a-z' ]+")


@functools.lru_cache(maxsize=1024)
def language_code(language: str | None) -> str:
    """The base ISO 639 code of ``language`` in lower case (``en-US`` and ``en_GB`` give ``en``; None gives ``en``)."""
    return re.split(r"[-_]", (language or "en").strip().lower(), maxsplit=1)[0] or "en"


def uses_characters(language: str | None) -> bool:
    """Whether ``language`` is scored by characters (written without spaces; :data:`CHARACTER_LANGUAGES`)."""
    return language_code(language) in CHARACTER_LANGUAGES


class _FastEnglish:
    r"""Whisper's English normaliser with compiled patterns and a guard before its contraction rules.

    Equal to ``EnglishTextNormalizer()(s)`` for every ``s``: each step is the library's, in its order; a contraction
    rule is skipped only when the literal text it needs (its pattern without ``\b``) is not in the string, and then
    its ``re.sub`` would have changed nothing; on ASCII text the symbol removal is one ``str.translate`` with the
    same table (ASCII has no diacritics to drop); and the number normaliser is skipped for text with no digit, no
    number word (``and`` apart, which it passes through when no number is near) and no "and a half", which it
    returns with its whitespace collapsed.
    """

    def __init__(self) -> None:
        from whisper_normalizer.basic import remove_symbols_and_diacritics
        from whisper_normalizer.english import EnglishTextNormalizer

        self.library = EnglishTextNormalizer()
        self.remove_symbols = remove_symbols_and_diacritics
        self.brackets = re.compile(r"[<\[][^>\]]*[>\]]")
        self.parentheses = re.compile(r"\(([^)]+?)\)")
        self.ignore = re.compile(self.library.ignore_patterns)
        self.apostrophe = re.compile(r"\s+'")
        self.replacers = [(_literal_of(p), re.compile(p), r) for p, r in self.library.replacers.items()]
        self.digit_commas = re.compile(r"(\d),(\d)")
        self.periods = re.compile(r"\.([^0-9]|$)")
        self.symbol_prefix = re.compile(r"[.$¢€£]([^0-9])")
        self.percent = re.compile(r"([^0-9])%")
        self.spaces = re.compile(r"\s+")
        numbers = self.library.standardize_numbers
        self.digit = re.compile(r"[0-9]")
        self.half = re.compile(r"\band\s+a\s+half\b")
        self.number_words = frozenset(numbers.words) - {"and"}
        # remove_symbols_and_diacritics on ASCII text: marks, symbols and punctuation (but the kept ones) to spaces
        keep = ".%$¢€£"
        self.ascii_symbols = {
            code: " " for code in range(128) if chr(code) not in keep and unicodedata.category(chr(code))[0] in "MSP"
        }

    def __call__(self, s: str) -> str:
        """``s`` normalised as ``EnglishTextNormalizer()(s)`` does."""
        lib = self.library
        s = s.lower()
        s = self.brackets.sub("", s)
        s = self.parentheses.sub("", s)
        s = self.ignore.sub("", s)
        s = self.apostrophe.sub("'", s)
        for literal, pattern, replacement in self.replacers:
            if literal is None or literal in s:
                s = pattern.sub(replacement, s)
        s = self.digit_commas.sub(r"\1\2", s)
        s = self.periods.sub(r" \1", s)
        s = s.translate(self.ascii_symbols) if s.isascii() else self.remove_symbols(s, keep=".%$¢€£")
        words = s.split()
        if self.digit.search(s) is None and self.half.search(s) is None and self.number_words.isdisjoint(words):
            s = " ".join(words)  # what standardize_numbers returns for text with no number in it
        else:
            s = lib.standardize_numbers(s)
        s = lib.standardize_spellings(s)
        s = self.symbol_prefix.sub(r" \1", s)
        s = self.percent.sub(r"\1 ", s)
        return self.spaces.sub(" ", s)


def _literal_of(pattern: str) -> str | None:
    r"""The text every match of ``pattern`` contains: the pattern without ``\b`` when the rest is plain, else None."""
    text = pattern.replace(r"\b", "")
    return text if _PLAIN.fullmatch(text) else None


@functools.lru_cache(maxsize=1)
def _english() -> Callable[[str], str]:
    """The English normaliser: :class:`_FastEnglish` when the library's code is the one it reproduces."""
    from whisper_normalizer.english import EnglishTextNormalizer

    try:
        source = inspect.getsource(EnglishTextNormalizer.__call__)
    except (OSError, TypeError):
        source = ""
    if hashlib.sha256(source.encode()).hexdigest()[:16] == _CHECKED_ENGLISH_CALL:
        return _FastEnglish()
    logger.info("whisper-normalizer's English normaliser changed: using it as is (slower, same rules)")
    return EnglishTextNormalizer()


@functools.lru_cache(maxsize=1)
def _basic() -> Callable[[str], str]:
    from whisper_normalizer.basic import BasicTextNormalizer

    return BasicTextNormalizer()


def whisper_normalize(text: str, language: str | None = "en") -> str:
    """``text`` through Whisper's normaliser for ``language`` as the library returns it (no caching, no kit step)."""
    normaliser = _english() if language_code(language) == "en" else _basic()
    return normaliser(text)


@functools.lru_cache(maxsize=NORMALIZE_CACHE_SIZE)
def normalize(text: str, language: str | None = "en") -> str:
    """``text`` normalised for scoring: zero-width characters out, Whisper's normaliser, then wordless tokens out.

    For languages written without spaces (:func:`uses_characters`) the result has one character per token
    (``"你好世界"`` gives ``"你 好 世 界"``). Kept by (text, language) for the process.
    """
    visible = text.translate(_NO_ZERO_WIDTH)
    tokens = [t for t in whisper_normalize(visible, language).split() if _WORDLESS.search(t)]
    if uses_characters(language):
        return " ".join(ch for ch in "".join(tokens))
    return " ".join(tokens)


@dataclass(frozen=True, slots=True)
class UtteranceErrors:
    """The errors of one transcript against its reference (words, or characters for :data:`CHARACTER_LANGUAGES`)."""

    uid: str
    """The item's uid."""
    language: str
    """The language code the item was scored in."""
    unit: Literal["word", "char"]
    """What a token is: a word, or a character (languages written without spaces)."""
    reference: str
    """The reference after normalisation (tokens separated by single spaces)."""
    hypothesis: str
    """The hypothesis after normalisation ("" for an empty or failed one)."""
    ref_words: int
    """Tokens in the normalised reference (the denominator; always at least 1)."""
    hits: int
    """Reference tokens matched."""
    substitutions: int
    """Reference tokens replaced by another token."""
    deletions: int
    """Reference tokens missing from the hypothesis (all of them for an empty or failed one)."""
    insertions: int
    """Hypothesis tokens with no reference token."""
    wer: float
    """(substitutions + deletions + insertions) / ref_words: the utterance's WER (CER for characters); can pass 1."""
    empty_hypothesis: bool
    """Whether the hypothesis was empty after normalisation, or missing (the model failed)."""
    failed: bool
    """Whether there was no hypothesis at all (None: the model or the parser failed); counted as all deletions."""
    hallucination: bool
    """Whether the utterance is a hallucination by :data:`HALLUCINATION_RULE`."""

    @property
    def errors(self) -> int:
        """Substitutions + deletions + insertions."""
        return self.substitutions + self.deletions + self.insertions


@dataclass(frozen=True, slots=True)
class SkippedUtterance:
    """An utterance that cannot be scored (its reference normalises to nothing); counted, never scored."""

    uid: str
    """The item's uid."""
    reference: str
    """The reference as given (before normalisation)."""
    reason: str
    """Why it was skipped (:data:`REFERENCE_EMPTY`)."""


def is_hallucination(ref_words: int, insertions: int, wer: float) -> bool:
    """Whether an utterance is a hallucination: WER above 1, or insertions above half the reference tokens."""
    return wer > 1.0 or insertions > HALLUCINATION_INSERTION_SHARE * ref_words


def _counts(reference: str, hypothesis: str) -> tuple[int, int, int, int]:
    """(hits, substitutions, deletions, insertions) of two normalised strings, as ``jiwer.process_words`` counts them.

    jiwer's own steps for one pair, without its alignment objects: words split on spaces (empty ones dropped, as
    ``ReduceToListOfListOfWords``), numbered in first-seen order over the reference then the hypothesis, aligned by
    ``rapidfuzz.distance.Levenshtein.opcodes`` and counted per opcode.
    """
    if not hypothesis:
        return 0, 0, len(reference.split()), 0
    from rapidfuzz.distance import Levenshtein

    ids: dict[str, int] = {}
    ref = [ids.setdefault(w, len(ids)) for w in reference.split(" ") if w]
    hyp = [ids.setdefault(w, len(ids)) for w in hypothesis.split(" ") if w]
    hits = subs = dels = ins = 0
    for tag, i1, i2, j1, j2 in Levenshtein.opcodes(ref, hyp):
        if tag == "equal":
            hits += i2 - i1
        elif tag == "replace":
            subs += i2 - i1
        elif tag == "delete":
            dels += i2 - i1
        elif tag == "insert":
            ins += j2 - j1
    return hits, subs, dels, ins


def utterance_errors(
    reference: str, hypothesis: str | None, language: str | None = "en", uid: str = ""
) -> UtteranceErrors | SkippedUtterance:
    """Score one transcript against its reference (see the module docstring for the rules).

    Args:
        reference: The reference transcript, as written.
        hypothesis: The model's transcript; None when the model or the parser failed (then all deletions).
        language: The language (ISO 639; ``en-US`` reads as ``en``); None reads as English.
        uid: The item's uid, carried into the result.

    Returns:
        The utterance's errors, or a :class:`SkippedUtterance` when the reference normalises to nothing.
    """
    code = language_code(language)
    ref = _normalized_reference(reference, code)
    if not ref:
        return SkippedUtterance(uid=uid, reference=reference, reason=REFERENCE_EMPTY)
    hyp = normalize(hypothesis, code) if hypothesis is not None else ""
    hits, subs, dels, ins = _counts(ref, hyp)
    ref_words = hits + subs + dels
    wer = (subs + dels + ins) / ref_words
    return UtteranceErrors(
        uid=uid,
        language=code,
        unit="char" if uses_characters(code) else "word",
        reference=ref,
        hypothesis=hyp,
        ref_words=ref_words,
        hits=hits,
        substitutions=subs,
        deletions=dels,
        insertions=ins,
        wer=wer,
        empty_hypothesis=not hyp,
        failed=hypothesis is None,
        hallucination=is_hallucination(ref_words, ins, wer),
    )


@functools.lru_cache(maxsize=1 << 16)
def _normalized_reference(reference: str, code: str) -> str:
    """:func:`normalize` of a reference, kept: each model's answer (and each SNR's copy) has the same reference."""
    return normalize(reference, code)


UTTERANCES_KEPT = 1 << 18
"""Utterances :func:`cached_utterance_errors` keeps (about 100 MB at most): the score table's entries, its skipped
count and the SSEU analysis score the same transcripts several times."""


UtteranceKey = tuple[str, str | None, str | None, str]
"""The arguments of :func:`utterance_errors`: ``(reference, hypothesis, language, uid)``."""
_KEPT: dict[UtteranceKey, UtteranceErrors | SkippedUtterance] = {}
_KEPT_LOCK = threading.Lock()


def _keep(key: UtteranceKey, found: UtteranceErrors | SkippedUtterance) -> None:
    with _KEPT_LOCK:
        if len(_KEPT) >= UTTERANCES_KEPT:  # the oldest go first
            for old in list(itertools.islice(_KEPT, UTTERANCES_KEPT // 4)):
                _KEPT.pop(old, None)
        _KEPT[key] = found


def keep_utterances(found: Mapping[UtteranceKey, UtteranceErrors | SkippedUtterance]) -> None:
    """Add utterances' errors computed elsewhere (:mod:`airbench_nb.scoring.ahead`'s worker) to the kept ones.

    Each is found only by its own key, the arguments of :func:`utterance_errors` it was computed from.
    """
    for key, errors in found.items():
        _keep(key, errors)


def cached_utterance_errors(
    reference: str, hypothesis: str | None, language: str | None = "en", uid: str = ""
) -> UtteranceErrors | SkippedUtterance:
    """:func:`utterance_errors`, kept for the same arguments (its results are frozen; it reads nothing else)."""
    key = (reference, hypothesis, language, uid)
    found = _KEPT.get(key)
    if found is None:
        found = utterance_errors(reference, hypothesis, language, uid)
        _keep(key, found)
    return found


def _errors_of(keys: Sequence[UtteranceKey]) -> list[UtteranceErrors | SkippedUtterance]:
    """:func:`utterance_errors` of each key (a worker's share of :func:`many_utterance_errors`)."""
    return [utterance_errors(*key) for key in keys]


def many_utterance_errors(keys: Sequence[UtteranceKey]) -> list[UtteranceErrors | SkippedUtterance]:
    """:func:`cached_utterance_errors` of each key, in order; a large list's new ones computed in worker processes.

    Each utterance's errors depend on its own texts alone, so where they are computed changes nothing
    (:func:`~airbench_nb.scoring.parallel.parallel_map`: only for at least ``PARALLEL_MIN`` new utterances; those
    computed ahead by :mod:`airbench_nb.scoring.ahead`'s worker are taken when one is missing here).
    """
    from airbench_nb.scoring import pending
    from airbench_nb.scoring.parallel import chunked, parallel_map, workers

    new = [key for key in dict.fromkeys(keys) if key not in _KEPT]
    if new and pending.waiting("transcripts"):  # computed ahead (scoring.ahead): only the very same keys match
        found = pending.take("transcripts")
        if found:
            keep_utterances(found)
            new = [key for key in new if key not in _KEPT]
    if len(new) >= 2:
        tasks = chunked(new, 4 * workers())
        for part, found in zip(tasks, parallel_map(_errors_of, tasks, items=len(new)), strict=True):
            for key, errors in zip(part, found, strict=True):
                _keep(key, errors)
    return [cached_utterance_errors(*key) for key in keys]


def score_utterances(
    references: Sequence[str],
    hypotheses: Sequence[str | None],
    languages: Sequence[str | None] | str | None = "en",
    uids: Sequence[str] | None = None,
) -> list[UtteranceErrors | SkippedUtterance]:
    """:func:`utterance_errors` of many utterances, in order (one language for all, or one each).

    Raises:
        ValueError: The sequences differ in length.
    """
    n = len(references)
    langs = [languages] * n if languages is None or isinstance(languages, str) else list(languages)
    names = list(uids) if uids is not None else [str(i) for i in range(n)]
    if not (len(hypotheses) == len(langs) == len(names) == n):
        raise ValueError(
            f"references ({n}), hypotheses ({len(hypotheses)}), languages ({len(langs)}) and uids ({len(names)}) "
            "must have one entry per utterance"
        )
    return [
        utterance_errors(r, h, lang, uid) for r, h, lang, uid in zip(references, hypotheses, langs, names, strict=True)
    ]


@dataclass(frozen=True)
class WerSummary:
    """Corpus WER (or CER) of a set of utterances with its bootstrap interval and the error profile behind it."""

    wer: float | None
    """Corpus WER: total (S + D + I) / total reference tokens, as a fraction (can pass 1); None when nothing was
    scored."""
    ci_low: float | None
    """Lower end of the 95% percentile bootstrap interval (utterances resampled); None without replicates."""
    ci_high: float | None
    """Upper end of the 95% percentile bootstrap interval; None without replicates."""
    n: int
    """Utterances scored (failed and empty hypotheses included)."""
    skipped: int
    """Utterances not scored (their reference normalises to nothing)."""
    skipped_reasons: dict[str, int]
    """Skipped utterances by reason."""
    ref_words: int
    """Total reference tokens (the denominator)."""
    hits: int
    """Total reference tokens matched."""
    substitutions: int
    """Total substitutions."""
    deletions: int
    """Total deletions (failed and empty hypotheses contribute all their reference tokens)."""
    insertions: int
    """Total insertions."""
    mean_wer: float | None
    """Mean of the utterance WERs (weighs every utterance alike, unlike the corpus WER)."""
    median_wer: float | None
    """Median of the utterance WERs."""
    empty: int
    """Utterances whose hypothesis is empty after normalisation or missing."""
    empty_share: float | None
    """``empty / n``."""
    failed: int
    """Utterances with no hypothesis at all (the model or the parser failed); part of ``empty``."""
    hallucinations: int
    """Utterances that are hallucinations by :data:`HALLUCINATION_RULE`."""
    hallucination_rate: float | None
    """``hallucinations / n``."""
    unit: str
    """``word``, ``char``, or ``mixed`` when the utterances mix both units."""
    reps: int
    """Bootstrap replicates drawn."""
    seed: int
    """Seed of the bootstrap."""
    hallucination_rule: str = field(default=HALLUCINATION_RULE)
    """The rule that made the hallucination count."""
    clusters: int | None = None
    """Clusters the interval resampled (utterances of one spoken sentence, ...); None when every utterance was its
    own (the interval resampled utterances)."""
    cluster_unit: str | None = None
    """What a cluster is (:func:`airbench_nb.records.cluster_unit`); None without clusters."""
    design_effect: float | None = None
    """Variance of the clustered bootstrap over that of the utterance bootstrap (how much the clustering widens the
    interval, squared); None without clusters."""

    def as_dict(self) -> dict[str, Any]:
        """The summary as a JSON-serialisable dict."""
        return asdict(self)


def _key_rng(seed: int, key: str) -> np.random.Generator:
    """The generator of one bootstrap: :func:`airbench_nb.scoring.resample.key_rng`."""
    from airbench_nb.scoring.resample import key_rng

    return key_rng(seed, key)


def bootstrap_ratio(
    numerators: np.ndarray,
    denominators: np.ndarray,
    reps: int,
    seed: int,
    key: str,
    clusters: Sequence[str] | None = None,
) -> np.ndarray:
    """Replicates of ``sum(numerators) / sum(denominators)`` over units resampled with replacement.

    Vectorised and chunked (:data:`BOOTSTRAP_CHUNK` draws at a time): 20,000 units x 1,000 replicates take about
    0.3 s. A replicate whose denominator is 0 is NaN.

    Args:
        numerators: One value per unit.
        denominators: One value per unit.
        reps: Replicates.
        seed: The seed.
        key: What is resampled (seeds the generator with ``seed``).
        clusters: Each unit's cluster key (:func:`airbench_nb.records.cluster_of`): whole clusters are drawn
            (:func:`airbench_nb.scoring.resample.weight_rows`); None: every unit on its own.

    Returns:
        ``reps`` ratios.
    """
    n = len(numerators)
    out = np.full(reps, np.nan)
    if not n or not reps:
        return out
    rng = _key_rng(seed, key)
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    if clusters is not None:
        from airbench_nb.scoring.resample import cluster_codes, resampled_sums, weight_rows, whole_numbers

        start = 0
        codes, both = cluster_codes(clusters, n), np.column_stack([num, den])
        if whole_numbers(both):  # errors and words: summed per cluster, exact in any order
            for sums in resampled_sums(both, reps, rng, codes):
                np.divide(sums[:, 0], sums[:, 1], out=out[start : start + len(sums)], where=sums[:, 1] > 0)
                start += len(sums)
            return out
        for w in weight_rows(n, reps, rng, codes):
            top, bottom = w @ num, w @ den
            np.divide(top, bottom, out=out[start : start + len(w)], where=bottom > 0)
            start += len(w)
        return out
    step = max(1, BOOTSTRAP_CHUNK // n)
    for start in range(0, reps, step):
        rows = min(step, reps - start)
        idx = rng.integers(0, n, size=(rows, n))
        top, bottom = num[idx].sum(axis=1), den[idx].sum(axis=1)
        np.divide(top, bottom, out=out[start : start + rows], where=bottom > 0)
    return out


def clustered_ratio_interval(
    numerators: np.ndarray, denominators: np.ndarray, reps: int, seed: int, key: str, clusters: Sequence[str] | None
) -> tuple[float | None, float | None, Any]:
    """The percentile interval of a ratio of sums resampling clusters, and the :class:`~.resample.Clustering`.

    :func:`airbench_nb.scoring.resample.clustered_interval` over :func:`bootstrap_ratio`'s replicates: the unit-level
    interval, widened to the union with the clustered one where units share clusters.
    """
    from airbench_nb.scoring.resample import clustered_interval

    def draw(codes: np.ndarray | None) -> np.ndarray:
        return bootstrap_ratio(numerators, denominators, reps, seed, key, None if codes is None else clusters)

    return clustered_interval(draw, clusters, len(numerators), reps)


def corpus_wer(
    utterances: Iterable[UtteranceErrors | SkippedUtterance],
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    clusters: Sequence[str] | None = None,
) -> WerSummary:
    """Corpus WER of scored utterances, with its bootstrap interval and error profile (skipped ones counted).

    Args:
        utterances: What :func:`utterance_errors` returned for each utterance.
        reps: Bootstrap replicates (0: no interval).
        seed: Seed of the bootstrap.
        clusters: Each utterance's cluster key, in the same order (the interval draws whole clusters:
            :func:`clustered_ratio_interval`); None: utterances on their own.

    Raises:
        ValueError: When ``clusters`` does not hold one key per utterance.
    """
    given = list(utterances)
    if clusters is not None and len(clusters) != len(given):
        raise ValueError(f"{len(clusters)} cluster keys for {len(given)} utterances")
    scored: list[UtteranceErrors] = []
    kept: list[str] = []
    reasons: Counter[str] = Counter()
    for k, utterance in enumerate(given):
        if isinstance(utterance, SkippedUtterance):
            reasons[utterance.reason] += 1
        else:
            scored.append(utterance)
            if clusters is not None:
                kept.append(clusters[k])
    n = len(scored)
    errors = np.fromiter((u.errors for u in scored), dtype=float, count=n)
    words = np.fromiter((u.ref_words for u in scored), dtype=float, count=n)
    total_words = int(words.sum())
    wer = float(errors.sum() / total_words) if total_words else None
    low, high, grouping = clustered_ratio_interval(errors, words, reps, seed, "wer", kept if clusters else None)
    units = {u.unit for u in scored}
    empty = sum(u.empty_hypothesis for u in scored)
    hallucinations = sum(u.hallucination for u in scored)
    wers = [u.wer for u in scored]
    return WerSummary(
        wer=wer,
        ci_low=low,
        ci_high=high,
        n=n,
        skipped=sum(reasons.values()),
        skipped_reasons=dict(reasons),
        ref_words=total_words,
        hits=sum(u.hits for u in scored),
        substitutions=sum(u.substitutions for u in scored),
        deletions=sum(u.deletions for u in scored),
        insertions=sum(u.insertions for u in scored),
        mean_wer=float(np.mean(wers)) if n else None,
        median_wer=float(statistics.median(wers)) if n else None,
        empty=empty,
        empty_share=empty / n if n else None,
        failed=sum(u.failed for u in scored),
        hallucinations=hallucinations,
        hallucination_rate=hallucinations / n if n else None,
        unit=units.pop() if len(units) == 1 else ("mixed" if units else "word"),
        reps=reps,
        seed=seed,
        clusters=grouping.clusters if grouping.clustered else None,
        cluster_unit=grouping.unit if grouping.clustered else None,
        design_effect=grouping.design_effect,
    )
