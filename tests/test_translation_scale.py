"""Translation scores at scale give exactly the numbers of sacrebleu's own bootstrap (issue 35).

The kit once scored every corpus with ``sacrebleu.metrics.*.corpus_score(n_bootstrap=reps)`` under
``SACREBLEU_SEED`` (and extracted the sentence statistics again for the cluster bootstrap); it now extracts them once
and draws sacrebleu's replicates a chunk at a time (:func:`sacrebleu_replicates`). The old path is kept here, as it
was, and compared value for value (``==``, not approximately) on planted corpora.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import replace

import numpy as np
import pytest
from sacrebleu.metrics import BLEU
from sacrebleu.metrics.base import Metric
from sacrebleu.significance import _bootstrap_resample

from airbench_nb.records import Response, TranslationItem
from airbench_nb.scoring import translation
from airbench_nb.scoring.translation import (
    _chrf,
    clustered_corpus_interval,
    reference_streams,
    sacrebleu_replicates,
    sacrebleu_replicates_of,
    score_translations,
    sentence_statistics,
    translation_outcome,
    translation_summary,
)

WORDS = "the cat dog sat on mat a big small house train late again rain today we meet at nine my brother lives".split()


def _old_corpus_score(metric, hypotheses, references, reps, seed, clusters=None):
    """The kit's corpus score before issue 35: sacrebleu's corpus_score with its own bootstrap, then the clusters."""
    streams = reference_streams(references)
    before = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        score = metric.corpus_score(list(hypotheses), streams, n_bootstrap=max(reps, 1))
    finally:
        if before is None:
            os.environ.pop("SACREBLEU_SEED", None)
        else:
            os.environ["SACREBLEU_SEED"] = before
    signature = str(metric.get_signature())
    ci = None
    if reps > 1:
        shown = json.loads(score.format(width=10, signature=signature, is_json=True))
        if "confidence_mean" in shown:
            mean, half = shown["confidence_mean"], shown["confidence_var"]
            ci = (max(0.0, float(mean - half)), min(100.0, float(mean + half)))
        else:
            ci = (0.0, 0.0)
    grouping = None
    if ci is not None and clusters is not None and len(set(clusters)) < len(hypotheses):
        low, high, grouping = clustered_corpus_interval(metric, hypotheses, streams, reps, seed, clusters)
        if low is not None and high is not None:
            ci = (max(0.0, min(ci[0], low)), min(100.0, max(ci[1], high)))
    return float(score.score), ci, signature, grouping


def _planted(sentences: int, seed: int) -> tuple[list[TranslationItem], list[Response]]:
    """Sentences spoken in de/fr/es (one cluster each), one to three references, 5% failed and 3% empty answers."""
    rng = random.Random(seed)
    items, responses = [], []
    for s in range(sentences):
        words = rng.choices(WORDS, k=rng.randint(3, 14))
        refs = [" ".join(words).capitalize() + "."]
        refs += [" ".join(rng.sample(words, len(words))) + "." for _ in range(rng.randint(0, 2))]
        for source in ("de", "fr", "es"):
            uid = f"s{s:04d}-{source}"
            items.append(
                TranslationItem(
                    uid=uid,
                    task="speech_translation",
                    dataset="planted",
                    audio=f"audio/{uid}.wav",
                    question="Translate.",
                    source_language=source,
                    target_language="en",
                    references=refs,
                    meta={"sentence_id": f"s{s}"},
                )
            )
            kept = [w if rng.random() < 0.7 else rng.choice(WORDS) for w in words if rng.random() < 0.9]
            roll = rng.random()
            text = None if roll < 0.05 else "" if roll < 0.08 else " ".join(kept).capitalize() + "."
            responses.append(Response(uid=uid, model="m", text=text, error="failed" if text is None else None))
    return items, responses


@pytest.mark.parametrize(("n", "seed", "reps"), [(1, 0, 50), (7, 3, 200), (250, 12345, 1000), (1001, 9, 37)])
def test_replicates_are_sacrebleus_own(n, seed, reps):
    rng = random.Random(n)
    hyps = [" ".join(rng.choices(WORDS, k=rng.randint(0, 12))) for _ in range(n)]
    refs = [[" ".join(rng.choices(WORDS, k=rng.randint(1, 12)))] for _ in range(n)]
    for metric in (BLEU(), _chrf()):
        stats = sentence_statistics(metric, hyps, refs)
        os.environ["SACREBLEU_SEED"] = str(seed)
        try:
            _, theirs = _bootstrap_resample(stats.tolist(), metric, reps)
        finally:
            os.environ.pop("SACREBLEU_SEED")
        ours = sacrebleu_replicates(metric, stats, reps, seed)
        assert [s.score for s in ours] == [s.score for s in theirs]
        assert [str(s) for s in ours] == [str(s) for s in theirs]


def test_bleu_and_chrf_replicates_of_one_draw_are_each_sacrebleus_own(monkeypatch):
    rng = random.Random(5)
    hyps = [" ".join(rng.choices(WORDS, k=rng.randint(0, 12))) for _ in range(300)]
    refs = [[" ".join(rng.choices(WORDS, k=rng.randint(1, 12)))] for _ in range(300)]
    metrics = (BLEU(), _chrf())
    stats = [sentence_statistics(metric, hyps, refs) for metric in metrics]
    both = sacrebleu_replicates_of(list(zip(metrics, stats, strict=True)), 150, 6)
    for metric, mine, drawn in zip(metrics, stats, both, strict=True):
        os.environ["SACREBLEU_SEED"] = "6"
        try:
            _, theirs = _bootstrap_resample(mine.tolist(), metric, 150)
        finally:
            os.environ.pop("SACREBLEU_SEED")
        assert [s.score for s in drawn] == [s.score for s in theirs]
    monkeypatch.setattr(translation, "FLOAT32_EXACT", 10)  # sacrebleu's float32 sums, each metric's own
    assert [[s.score for s in d] for d in sacrebleu_replicates_of(list(zip(metrics, stats, strict=True)), 150, 6)] == [
        [s.score for s in d] for d in both
    ]
    with pytest.raises(ValueError, match="one corpus"):
        sacrebleu_replicates_of([(metrics[0], stats[0]), (metrics[1], stats[1][:10])], 10, 6)


def test_replicates_past_float32_precision_are_summed_as_sacrebleu_sums(monkeypatch):
    rng = random.Random(1)
    hyps = [" ".join(rng.choices(WORDS, k=rng.randint(0, 12))) for _ in range(300)]
    refs = [[" ".join(rng.choices(WORDS, k=rng.randint(1, 12)))] for _ in range(300)]
    metric = _chrf()
    stats = sentence_statistics(metric, hyps, refs)
    os.environ["SACREBLEU_SEED"] = "4"
    try:
        _, theirs = _bootstrap_resample(stats.tolist(), metric, 100)
    finally:
        os.environ.pop("SACREBLEU_SEED")
    monkeypatch.setattr(translation, "FLOAT32_EXACT", 10)  # every chunk takes sacrebleu's float32 path
    assert [s.score for s in sacrebleu_replicates(metric, stats, 100, 4)] == [s.score for s in theirs]


@pytest.mark.parametrize("reps", [0, 1, 500])
def test_summaries_equal_the_old_path_value_for_value(reps):
    items, responses = _planted(400, seed=reps)
    outcomes = [translation_outcome(i, r) for i, r in zip(items, responses, strict=True)]
    for clustered in (True, False):
        group = outcomes if clustered else [replace(o, cluster="") for o in outcomes]
        summary = score_translations(group, reps=reps, seed=11)
        corpora = {"all": group} | {p: [o for o in group if o.pair == p] for p in ("de-en", "es-en", "fr-en")}
        for name, corpus in corpora.items():
            hyps, refs = [o.hypothesis for o in corpus], [o.references for o in corpus]
            keys = [o.cluster or o.uid for o in corpus]
            for metric, field in ((BLEU(tokenize="13a"), "bleu"), (_chrf(), "chrf")):
                value, ci, signature, grouping = _old_corpus_score(metric, hyps, refs, reps, 11, keys)
                if name == "all":
                    got = (getattr(summary, field), getattr(summary, f"{field}_ci"))
                    got += (summary.signature if field == "bleu" else summary.chrf_signature,)
                    got += (getattr(summary, f"{field}_clustering"),)
                else:
                    score = getattr(summary.by_pair[name], field)
                    got = (score.value, score.ci, score.signature, score.clustering)
                assert got == (value, ci, signature, grouping), (name, field)
        assert summary.by_pair["de-en"].bleu.signature.startswith("nrefs:var|")


def test_the_same_outcomes_are_scored_once(monkeypatch):
    items, responses = _planted(30, seed=2)
    first = translation_summary(items, responses, reps=100, seed=0)
    calls = []
    monkeypatch.setattr(translation, "_score_translations", lambda *a: calls.append(a))
    again = translation_summary(items, responses, reps=100, seed=0)
    assert again == first and again is not first and not calls
    other = translation_summary(items, responses, reps=100, seed=1)  # another seed: computed
    assert other is None and len(calls) == 1
    edited = [r.model_copy(update={"text": "x"}) if k == 0 else r for k, r in enumerate(responses)]
    translation_summary(items, edited, reps=100, seed=0)  # one answer changed: computed
    assert len(calls) == 2


def test_statistics_rows_follow_the_outcomes():
    items, responses = _planted(20, seed=5)
    outcomes = [translation_outcome(i, r) for i, r in zip(items, responses, strict=True)]
    by_pair = {p: [o for o in outcomes if o.pair == p] for p in ("de-en", "es-en", "fr-en")}
    stats = {p: translation._pair_statistics(group, "13a") for p, group in by_pair.items()}
    bleu, chrf = translation._in_order(outcomes, stats)
    assert np.array_equal(
        bleu, sentence_statistics(BLEU(), [o.hypothesis for o in outcomes], [o.references for o in outcomes])
    )
    assert np.array_equal(
        chrf, sentence_statistics(_chrf(), [o.hypothesis for o in outcomes], [o.references for o in outcomes])
    )


def test_statistics_shared_by_models_equal_each_models_own(monkeypatch):
    items, responses = _planted(60, seed=8)
    other = [r.model_copy(update={"text": (r.text or "")[::-1] or None}) for r in responses]
    models = [{r.uid: r for r in rs} for rs in (responses, other)]
    alone = [translation_summary(items, rs, reps=300, seed=2) for rs in (responses, other)]
    translation._SUMMARIES.clear()
    with translation.shared_statistics(items, models):
        assert translation._SHARED_PENDING and not translation._SHARED_ROWS  # extracted when first needed
        monkeypatch.setattr(Metric, "_extract_corpus_statistics", lambda *a: pytest.fail("extracted again"))
        together = [translation_summary(items, rs, reps=300, seed=2) for rs in (responses, other)]
        assert translation._SHARED_ROWS and not translation._SHARED_PENDING
    assert together == alone and not translation._SHARED_ROWS
