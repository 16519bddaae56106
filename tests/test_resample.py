"""Cluster-aware bootstrap intervals on planted data with a known intra-class correlation."""

from __future__ import annotations

import numpy as np
import pytest

from airbench_nb.records import TranscriptionItem, TranslationItem, cluster_of, cluster_unit
from airbench_nb.scoring.resample import cluster_codes, design_effect, union, weight_rows
from airbench_nb.scoring.wer import bootstrap_ratio, clustered_ratio_interval, percentile_interval


def _planted(clusters: int, size: int, icc: float, seed: int) -> tuple[np.ndarray, list[str]]:
    """``clusters`` x ``size`` values ``u_c + e`` with var(u) = icc, var(e) = 1 - icc (true mean 0)."""
    rng = np.random.default_rng(seed)
    u = rng.normal(0.0, np.sqrt(icc), clusters)
    values = np.repeat(u, size) + rng.normal(0.0, np.sqrt(1.0 - icc), clusters * size)
    return values, [f"c{c}" for c in np.repeat(np.arange(clusters), size)]


def test_singleton_clusters_draw_exactly_the_unit_bootstrap():
    n = 37
    plain = np.concatenate(list(weight_rows(n, 500, np.random.default_rng(3))))
    singletons = np.concatenate(
        list(weight_rows(n, 500, np.random.default_rng(3), cluster_codes([str(i) for i in range(n)], n)))
    )
    assert np.array_equal(plain, singletons) and plain.shape == (500, n) and set(plain.sum(axis=1)) == {n}
    values = np.random.default_rng(0).random(n)
    a = bootstrap_ratio(values, np.ones(n), 300, 1, "k")
    b = bootstrap_ratio(values, np.ones(n), 300, 1, "k", clusters=[f"u{i}" for i in range(n)])
    assert np.allclose(a, b, rtol=0, atol=1e-12)
    low, high, grouping = clustered_ratio_interval(values, np.ones(n), 300, 1, "k", [f"u{i}" for i in range(n)])
    assert (low, high) == percentile_interval(a) and not grouping.clustered and grouping.design_effect is None


def test_whole_clusters_are_drawn_together():
    keys = ["a", "a", "b", "c", "c", "c"]
    codes = cluster_codes(keys, 6)
    assert list(codes) == [0, 0, 1, 2, 2, 2]  # in the order clusters first appear
    for row in np.concatenate(list(weight_rows(6, 200, np.random.default_rng(0), codes))):
        assert row[0] == row[1] and row[3] == row[4] == row[5]
        assert row[0] + row[2] + row[3] == 3  # three clusters drawn per replicate
    with pytest.raises(ValueError, match="2 cluster keys for 3 units"):
        cluster_codes(["a", "b"], 3)


@pytest.mark.parametrize(("size", "icc"), [(5, 0.3), (10, 0.1), (4, 0.6)])
def test_the_clustered_interval_widens_by_the_analytic_design_effect(size, icc):
    values, keys = _planted(1500, size, icc, seed=size)
    n = values.size
    clustered = bootstrap_ratio(values, np.ones(n), 2000, 0, "mean", clusters=keys)
    units = bootstrap_ratio(values, np.ones(n), 2000, 0, "mean")
    kish = 1.0 + (size - 1) * icc
    assert design_effect(clustered, units) == pytest.approx(kish, rel=0.15)
    width = np.subtract(*percentile_interval(clustered)[::-1]) / np.subtract(*percentile_interval(units)[::-1])
    assert width == pytest.approx(np.sqrt(kish), rel=0.15)
    low, high, grouping = clustered_ratio_interval(values, np.ones(n), 2000, 0, "mean", keys)
    assert grouping.clustered and grouping.clusters == 1500 and grouping.units == n
    assert grouping.design_effect == pytest.approx(kish, rel=0.15)
    assert (low, high) == union(percentile_interval(clustered), percentile_interval(units))


def test_the_unit_bootstrap_under_covers_clustered_data_and_the_cluster_bootstrap_does_not():
    covered = {"units": 0, "clusters": 0}
    sims = 300
    for seed in range(sims):
        values, keys = _planted(20, 10, 0.5, seed=1000 + seed)  # design effect 5.5
        n = values.size
        for name, clusters in (("units", None), ("clusters", keys)):
            low, high = percentile_interval(bootstrap_ratio(values, np.ones(n), 400, seed, "m", clusters=clusters))
            covered[name] += low <= 0.0 <= high
    units, clusters = covered["units"] / sims, covered["clusters"] / sims
    assert units < 0.7  # nominal 95%: items resampled as if independent
    assert clusters > 0.85 and clusters - units > 0.25


def test_design_effect_is_undefined_without_variance():
    assert design_effect(np.zeros(10), np.zeros(10)) is None
    assert design_effect(np.array([1.0]), np.array([1.0, 2.0])) is None
    assert union((0.2, 0.4), (0.25, 0.5)) == (0.2, 0.5) and union((None, None), (0.1, 0.2)) == (0.1, 0.2)


def test_cluster_keys_by_kind():
    base = dict(dataset="synthetic", question="q", audio="audio/x.wav")
    at_0 = TranscriptionItem(
        uid="sseu-002@snr+0-transcription", task="sseu_transcription", reference="r", clip_id="sseu-002@snr+0", **base
    )
    clean = at_0.model_copy(update={"uid": "c", "clip_id": "sseu-002@clean", "audio": "audio/y.wav"})
    assert cluster_of(at_0) == cluster_of(clean) == "utterance:sseu-002"
    given = at_0.model_copy(update={"meta": {"cluster": "speaker-7"}})
    assert cluster_of(given) == "given:speaker-7"
    de = TranslationItem(
        uid="de",
        task="speech_translation",
        source_language="de",
        target_language="en",
        references=["r"],
        meta={"sentence_id": "t31"},
        **base,
    )
    fr = de.model_copy(update={"uid": "fr", "source_language": "fr", "audio": "audio/z.wav"})
    assert cluster_of(de) == cluster_of(fr) == "sentence:t31"
    assert cluster_of(de.model_copy(update={"meta": {}})) == "audio:audio/x.wav"
    assert "utterance" in cluster_unit(["utterance:a"]) and cluster_unit([]) == "item"


SENTENCES = ["the cat sat on the mat today", "a dog barks at the moon", "rain falls on the old roof"]


def _transcripts(utterances: int, dropped) -> tuple[list[TranscriptionItem], dict[str, object]]:
    """``utterances`` utterances each mixed at -5, 0 and +5 dB; the answer drops ``dropped(u, snr)`` final words."""
    from airbench_nb.records import Response

    items, responses = [], {}
    for u in range(utterances):
        text = SENTENCES[u % len(SENTENCES)]
        for snr in (-5.0, 0.0, 5.0):
            uid = f"sseu-{u:03d}@snr{snr:+g}-transcription"
            clip = f"sseu-{u:03d}@snr{snr:+g}"
            items.append(
                TranscriptionItem(
                    uid=uid,
                    dataset="synthetic",
                    question="q",
                    audio=f"audio/{uid}.wav",
                    task="sseu_transcription",
                    reference=text,
                    clip_id=clip,
                    snr_db=snr,
                )
            )
            words = text.split()
            responses[uid] = Response(uid=uid, model="m", text=" ".join(words[: len(words) - dropped(u, snr)]))
    return items, responses


def test_sseu_wer_entries_resample_utterances_and_keep_their_point_value():
    from airbench_nb.scoring.reference import WordErrorRate, read_part
    from airbench_nb.scoring.wer import corpus_wer, utterance_errors

    items, responses = _transcripts(6, lambda u, snr: {-5.0: 3, 0.0: 2, 5.0: 0}[snr] + u % 2)
    outcomes = [read_part(i, responses[i.uid], "transcript") for i in items]
    entry = WordErrorRate().score(outcomes, reps=500, seed=0, key="wer")
    plain = corpus_wer([utterance_errors(o.reference, o.answer, o.language, o.uid) for o in outcomes], reps=500)
    assert entry.value == pytest.approx(plain.wer) and entry.n == 18
    assert entry.clusters == 6 and "utterance" in entry.cluster_unit and entry.design_effect is not None
    assert entry.ci_low <= plain.ci_low and entry.ci_high >= plain.ci_high  # never narrower than the utterances'
    assert {"clusters", "cluster_unit", "design_effect"} <= set(entry.as_dict())


def test_sseu_table_resamples_utterances_and_the_page_says_so():
    from airbench_nb.analysis.sseu import outcomes_by_model, sseu_analysis
    from airbench_nb.analysis_report import SseuScores
    from airbench_nb.pages.sseu import _effects

    # 9 utterances; every third goes badly at every SNR: whole utterances, not clips, differ
    items, responses = _transcripts(9, lambda u, snr: (4 if u % 3 == 0 else 0) + (snr < 0))
    result = sseu_analysis(outcomes_by_model(items, {"m": responses}), reps=500, seed=0)
    row = SseuScores.model_validate(result.table["m"]["independent"])
    assert row.n == 27 and row.clusters == 9 and row.design_effects["wer"] > 1.5
    assert _effects(row.design_effects).startswith(f"{row.design_effects['wer']:.1f} / –")


def test_foundation_questions_about_one_recording_are_resampled_together():
    from airbench_nb.judge.run import rule_verdict
    from airbench_nb.records import FoundationItem, Response
    from airbench_nb.scoring.run import score_run

    def items(shared: bool) -> list[FoundationItem]:
        # 40 recordings, 4 questions each; a model right on every question of half the recordings
        return [
            FoundationItem(
                uid=f"q-{r}-{k}",
                dataset="synthetic",
                task="Speaker_Gender_Recognition",
                question="Who speaks?",
                choices=["a man", "a woman"],
                answer=0,
                audio=f"audio/rec-{r}.wav" if shared else f"audio/{r}-{k}.wav",
            )
            for r in range(40)
            for k in range(4)
        ]

    def scored(shared: bool):
        listed = items(shared)
        responses = [Response(uid=i.uid, model="m", text="A" if int(i.uid.split("-")[1]) % 2 else "B") for i in listed]
        verdicts = [rule_verdict(i, r) for i, r in zip(listed, responses, strict=True)]
        return score_run(listed, responses, verdicts, protocol="strict", reps=2000).strict.foundation

    clustered, alone = scored(True), scored(False)
    task, single = clustered.tasks["Speaker_Gender_Recognition"], alone.tasks["Speaker_Gender_Recognition"]
    assert task.value == single.value == 0.5 and task.n == single.n == 160
    assert task.clusters == 40 and "recording" in task.cluster_unit and single.clusters is None
    # the recording is the unit: the interval is about twice as wide (design effect 4, all questions agree)
    ratio = (task.ci_high - task.ci_low) / (single.ci_high - single.ci_low)
    assert ratio == pytest.approx(2.0, rel=0.2)
    assert task.design_effect == pytest.approx(4.0, rel=0.2) and single.design_effect is None
    assert clustered.average.clusters == 40 and clustered.average.value == alone.average.value
    assert clustered.average.design_effect == pytest.approx(4.0, rel=0.2)
    assert "_var" not in clustered.model_dump_json() and "_var" not in alone.model_dump_json()


def test_chat_questions_about_one_recording_are_resampled_together():
    from airbench_nb.records import ChatItem, Response, Verdict
    from airbench_nb.scoring.run import score_run

    def scored(shared: bool):
        # 40 recordings, 4 questions each; the judge gives the model 8 on every question of half the recordings, 2 on
        # the other half (the reference always 10): the questions about one recording agree
        items, responses, verdicts = [], [], []
        for r in range(40):
            for k in range(4):
                uid = f"c-{r}-{k}"
                items.append(
                    ChatItem(
                        uid=uid,
                        task="speech_QA",
                        meta_info="a clip",
                        dataset="synthetic",
                        audio=f"audio/rec-{r}.wav" if shared else f"audio/{r}-{k}.wav",
                        question="What is said?",
                        reference="Something.",
                    )
                )
                responses.append(Response(uid=uid, model="m", text="An answer."))
                score = 8 if r % 2 else 2
                for order, (first, second) in (("reference_first", (10, score)), ("hypothesis_first", (score, 10))):
                    verdicts.append(
                        Verdict(
                            uid=uid,
                            model="m",
                            judge="openai:judge",
                            order=order,
                            raw=f"{first} {second}",
                            score_hypothesis=float(score),
                            score_reference=10.0,
                        )
                    )
        return score_run(items, responses, verdicts, protocol="strict", reps=2000).strict.chat

    clustered, alone = scored(True), scored(False)
    task, single = clustered.tasks["speech_QA"], alone.tasks["speech_QA"]
    assert task.value == single.value == 5.0
    assert task.clusters == 40 and "recording" in task.cluster_unit and single.clusters is None
    assert task.design_effect == pytest.approx(4.0, rel=0.2) and single.design_effect is None
    ratio = (task.ci_high - task.ci_low) / (single.ci_high - single.ci_low)
    assert ratio == pytest.approx(2.0, rel=0.2)
    # the relative score's interval is widened too; the Average names the clusters
    assert task.relative.ci_high - task.relative.ci_low > 1.5 * (single.relative.ci_high - single.relative.ci_low)
    assert clustered.average.clusters == 40 and clustered.average.value == alone.average.value


def test_an_interval_entry_draws_clusters_where_units_share_one_and_is_unchanged_where_none_do():
    from airbench_nb.scoring.text_answers import interval_entry
    from airbench_nb.scoring.wer import bootstrap_ratio, percentile_interval

    rng = np.random.default_rng(4)
    per_clip = rng.random(40)
    values = np.repeat(per_clip, 4)  # 4 captions of one clip score alike
    keys = [f"audio:clip{k // 4}" for k in range(160)]
    alone = interval_entry(values, [1.0] * 160, 0, 2000, 0, "k")
    assert (alone.ci_low, alone.ci_high) == percentile_interval(bootstrap_ratio(values, np.ones(160), 2000, 0, "k"))
    assert (
        alone.clusters is None
        and interval_entry(values, [1.0] * 160, 0, 2000, 0, "k", [str(k) for k in range(160)]) == alone
    )
    grouped = interval_entry(values, [1.0] * 160, 0, 2000, 0, "k", keys)
    assert grouped.value == alone.value and grouped.clusters == 40 and "recording" in grouped.cluster_unit
    assert grouped.design_effect == pytest.approx(4.0, rel=0.2)
    assert (grouped.ci_high - grouped.ci_low) / (alone.ci_high - alone.ci_low) == pytest.approx(2.0, rel=0.2)


def test_sums_over_clusters_are_the_sums_over_their_units():
    """resampled_sums draws clusters and sums per cluster where the values are whole numbers: the same replicates,
    number for number, as the units' weights times the values; other values go through the units' weights."""
    from airbench_nb.scoring.resample import cluster_codes, key_rng, resampled_sums, weight_rows, whole_numbers

    rng = np.random.default_rng(11)
    for n, reps in ((1, 7), (9, 40), (5000, 300)):
        codes = cluster_codes([f"c{k}" for k in rng.integers(0, max(1, n // 3), n)], n)  # clusters in any order
        counts = rng.integers(0, 40, (n, 4)).astype(float)
        scores = rng.random((n, 2))
        assert whole_numbers(counts) and not whole_numbers(scores)
        for values in (counts, scores):
            units = np.concatenate([w @ values for w in weight_rows(n, reps, key_rng(3, "x"), codes)])
            clusters = np.concatenate(list(resampled_sums(values, reps, key_rng(3, "x"), codes)))
            assert np.array_equal(units, clusters)
    assert not whole_numbers(np.array([1.0, np.nan])) and not whole_numbers(np.array([2.0**60]))
