"""WER and CER: normalisation, S/D/I against jiwer, failures, skipped references, corpus WER and its bootstrap."""

from __future__ import annotations

import random
import zlib

import jiwer
import numpy as np
import pytest
from whisper_normalizer.english import EnglishTextNormalizer

from airbench_nb.scoring.aggregate import CONFIDENCE
from airbench_nb.scoring.wer import (
    REFERENCE_EMPTY,
    SkippedUtterance,
    UtteranceErrors,
    bootstrap_ratio,
    corpus_wer,
    normalize,
    score_utterances,
    utterance_errors,
    whisper_normalize,
)


def _scored(reference: str, hypothesis: str | None, language: str = "en") -> UtteranceErrors:
    out = utterance_errors(reference, hypothesis, language, uid="u")
    assert isinstance(out, UtteranceErrors), out
    return out


@pytest.mark.parametrize(
    ("reference", "hypothesis", "counts"),
    [
        ("the cat sat on the mat", "the cat sat on the mat", (6, 0, 0, 0)),
        ("the cat sat on the mat", "the dog sat on mat", (4, 1, 1, 0)),
        ("the cat sat", "well the cat sat down there", (3, 0, 0, 3)),
        ("a b c d", "x b y d z", (2, 2, 0, 1)),
    ],
)
def test_counts_equal_jiwer_and_the_hand_count(reference, hypothesis, counts):
    out = _scored(reference, hypothesis)
    expected = jiwer.process_words(normalize(reference), normalize(hypothesis))
    assert (out.hits, out.substitutions, out.deletions, out.insertions) == counts
    assert (out.hits, out.substitutions, out.deletions, out.insertions) == (
        expected.hits,
        expected.substitutions,
        expected.deletions,
        expected.insertions,
    )
    assert out.wer == pytest.approx(expected.wer)
    assert out.ref_words == len(reference.split())


def test_numbers_are_canonicalised_by_the_english_normaliser():
    out = _scored("He bought twenty five apples for ten dollars.", "he bought 25 apples for $10")
    assert out.reference == out.hypothesis == "he bought 25 apples for $10"
    assert out.wer == 0.0


def test_case_punctuation_contractions_and_spelling_do_not_count():
    reference = "Hello, World! It's the COLOUR of Mr. Smith's car."
    out = _scored(reference, "hello world it is the color of mister smith's car")
    assert out.wer == 0.0
    assert out.reference == "hello world it is the color of mister smith is car"


@pytest.mark.parametrize("hypothesis", ["", "   ", "...", None])
def test_an_empty_or_failed_hypothesis_is_all_deletions(hypothesis):
    out = _scored("The cat sat down.", hypothesis)
    assert (out.hits, out.substitutions, out.deletions, out.insertions) == (0, 0, 4, 0)
    assert out.wer == 1.0 and out.empty_hypothesis
    assert out.failed is (hypothesis is None)


@pytest.mark.parametrize("reference", ["", "  ", "...", "?!", "(laughs)", "[noise]", "um hmm"])
def test_a_reference_that_normalises_to_nothing_is_skipped_with_its_reason(reference):
    out = utterance_errors(reference, "something was said", "en", uid="r1")
    assert out == SkippedUtterance(uid="r1", reference=reference, reason=REFERENCE_EMPTY)


def test_chinese_is_scored_by_characters_and_equals_jiwer_cer():
    reference, hypothesis = "今天天气很好，我们去公园。", "今天天汽很好我们去了公园"
    out = _scored(reference, hypothesis, "zh")
    assert out.unit == "char"
    assert out.reference == "今 天 天 气 很 好 我 们 去 公 园"
    ref_chars = "".join(whisper_normalize(reference, "zh").split())
    hyp_chars = "".join(whisper_normalize(hypothesis, "zh").split())
    assert out.wer == pytest.approx(jiwer.cer(ref_chars, hyp_chars))
    assert (out.substitutions, out.deletions, out.insertions) == (1, 0, 1)
    assert _scored("東京へ行きます", "東京に行きます", "ja-JP").wer == pytest.approx(1 / 7)


def test_other_languages_use_the_basic_normaliser():
    out = _scored("Bonjour, le Monde!", "bonjour le monde", "fr")
    assert out.unit == "word" and out.wer == 0.0
    assert normalize("Twenty five", "fr") == "twenty five"  # numbers are canonicalised for English only


def test_hallucination_rule():
    looping = _scored("hello there", "hello there hello there hello there")
    assert looping.insertions == 4 and looping.wer == 2.0 and looping.hallucination
    mostly_inserted = _scored("a b c d", "a b c d e f g")
    assert mostly_inserted.wer == 0.75 and mostly_inserted.insertions == 3 and mostly_inserted.hallucination
    plain = _scored("a b c d", "a b x d e")
    assert plain.insertions == 1 and not plain.hallucination


def test_corpus_wer_equals_jiwer_on_lists_and_counts_everything():
    references = ["the cat sat on the mat", "red green blue", "a b c d", "...", "hello world"]
    hypotheses = ["the cat sat on mat", None, "a x c d e", "anything", "hello world hello world hello world"]
    utterances = score_utterances(references, hypotheses, "en", uids=[f"u{i}" for i in range(5)])
    summary = corpus_wer(utterances, reps=200, seed=3)
    scored = [u for u in utterances if isinstance(u, UtteranceErrors)]
    expected = jiwer.process_words([u.reference for u in scored], [u.hypothesis or "" for u in scored])
    assert summary.wer == pytest.approx(expected.wer)
    assert (summary.substitutions, summary.deletions, summary.insertions, summary.hits) == (
        expected.substitutions,
        expected.deletions,
        expected.insertions,
        expected.hits,
    )
    assert summary.n == 4 and summary.skipped == 1 and summary.skipped_reasons == {REFERENCE_EMPTY: 1}
    assert summary.ref_words == 6 + 3 + 4 + 2
    assert summary.empty == 1 and summary.failed == 1 and summary.empty_share == 0.25
    assert summary.hallucinations == 1 and summary.hallucination_rate == 0.25
    wers = [1 / 6, 1.0, 2 / 4, 2.0]
    assert summary.mean_wer == pytest.approx(np.mean(wers))
    assert summary.median_wer == pytest.approx(np.median(wers))
    assert summary.ci_low <= summary.wer <= summary.ci_high
    assert summary.as_dict()["unit"] == "word"


def test_corpus_of_nothing_scored():
    summary = corpus_wer([SkippedUtterance("u", "", REFERENCE_EMPTY)], reps=50)
    assert summary.wer is None and summary.n == 0 and summary.skipped == 1 and summary.ci_low is None


def test_bootstrap_equals_a_plain_loop_with_the_same_draws():
    rng = np.random.default_rng(0)
    errors = rng.integers(0, 5, size=37).astype(float)
    words = rng.integers(1, 12, size=37).astype(float)
    fast = bootstrap_ratio(errors, words, reps=300, seed=11, key="wer")
    draws = np.random.default_rng([11, zlib.crc32(b"wer")])
    slow = []
    for _ in range(300):  # the chunks draw (rows, n) at once: row by row the stream is the same
        idx = draws.integers(0, 37, size=(1, 37))[0]
        slow.append(errors[idx].sum() / words[idx].sum())
    np.testing.assert_allclose(fast, slow)
    assert not np.array_equal(fast, bootstrap_ratio(errors, words, reps=300, seed=12, key="wer"))
    np.testing.assert_array_equal(fast, bootstrap_ratio(errors, words, reps=300, seed=11, key="wer"))
    utterances = score_utterances(["a b c"] * 5 + ["d e"] * 5, ["a b"] * 5 + ["d e"] * 5)
    summary = corpus_wer(utterances, reps=300, seed=1)
    replicates = bootstrap_ratio(np.array([1.0] * 5 + [0.0] * 5), np.array([3.0] * 5 + [2.0] * 5), 300, 1, "wer")
    tail = (1 - CONFIDENCE) / 2 * 100
    assert (summary.ci_low, summary.ci_high) == tuple(np.percentile(replicates, [tail, 100 - tail]))
    assert summary.wer == pytest.approx(5 / 25)


def test_the_fast_english_normaliser_equals_the_library():
    library = EnglishTextNormalizer()
    words = (
        "please call stella don't won't can't it's they'd I'll we've 25 1,000 3.5 $4.20 10% twenty five one hundred "
        "and a half oh double seven point five minus mr dr st colour honour (laughs) [noise] um uh hmm café naïve "
        "first second twenty-first dollars cents percent per cent the of and to a in, is. you? that! it"
    ).split()
    rng = random.Random(5)
    texts = [" ".join(rng.choices(words, k=rng.randint(1, 14))) for _ in range(3000)]
    texts += ["and a half apples", "x and a half y", "  spaced \t out ", "don 't stop", "ÆSOP’s fables — “quoted”"]
    assert [whisper_normalize(t) for t in texts] == [library(t) for t in texts]


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="one entry per utterance"):
        score_utterances(["a", "b"], ["a"])
