"""UG-Bench's metrics: BLEU/chrF (sacrebleu), captioning (aac-metrics + embedding similarity), spoken answers."""

from __future__ import annotations

from dataclasses import replace

import pytest
import sacrebleu

from airbench_nb.records import CaptionItem, Response, SpeechGenerationItem, TranslationItem, Verdict
from airbench_nb.scoring import score_run
from airbench_nb.scoring.captioning import (
    CaptionMetricUnavailable,
    caption_metrics_preflight,
    caption_outcome,
    caption_summary,
    normalize_caption,
    require_metric,
)
from airbench_nb.scoring.metrics import METRICS, optional_metrics
from airbench_nb.scoring.speech_output import heard, speech_output_summary
from airbench_nb.scoring.translation import MissingTokenizerError, tokenizer_for, translation_summary

MODEL = "baseline:test"
COMMON = {"dataset": "hand", "audio": "audio/x.wav", "question": "Q?"}

# --- translation ----------------------------------------------------------------------------------------------

TRANSLATIONS = [
    ("de", ["The cat sits on the mat.", "A cat is sitting on the mat."], "The cat sat on the mat."),
    ("de", ["It is raining today."], "It rains today."),
    ("fr", ["We will meet at nine o'clock.", "We meet at nine."], "We meet at nine o'clock."),
    ("fr", ["My brother lives in Paris."], None),  # failed: stays in as ""
    ("de", ["The train is late again.", "Once again the train is late."], "The train is late again."),
]


@pytest.fixture(scope="module")
def translation_run() -> tuple[list[TranslationItem], list[Response]]:
    items, responses = [], []
    for k, (source, refs, answer) in enumerate(TRANSLATIONS):
        uid = f"t{k}"
        items.append(
            TranslationItem(
                uid=uid,
                task="speech_translation",
                source_language=source,
                target_language="en",
                references=refs,
                **COMMON,
            )
        )
        responses.append(Response(uid=uid, model=MODEL, text=answer, error=None if answer else "model failed"))
    return items, responses


def _streams(rows: list[tuple[list[str], str]]) -> tuple[list[str], list[list[str | None]]]:
    hyps = [h for _, h in rows]
    width = max(len(r) for r, _ in rows)
    return hyps, [[r[j] if j < len(r) else None for r, _ in rows] for j in range(width)]


def test_bleu_and_chrf_equal_sacrebleu(translation_run) -> None:
    items, responses = translation_run
    summary = translation_summary(items, responses, reps=200, seed=7)
    hyps, refs = _streams([(refs, answer or "") for _, refs, answer in TRANSLATIONS])
    assert summary.bleu == pytest.approx(sacrebleu.corpus_bleu(hyps, refs, tokenize="13a").score)
    assert summary.chrf == pytest.approx(sacrebleu.corpus_chrf(hyps, refs).score)
    assert (summary.n, summary.failures, summary.failure_reasons) == (5, 1, {"response error: model failed": 1})
    de = [(refs, answer or "") for lang, refs, answer in TRANSLATIONS if lang == "de"]
    assert summary.by_pair["de-en"].bleu.value == pytest.approx(sacrebleu.corpus_bleu(*_streams(de)).score)
    assert set(summary.by_pair) == {"de-en", "fr-en"}
    for value, ci in ((summary.bleu, summary.bleu_ci), (summary.chrf, summary.chrf_ci)):
        assert ci is not None and ci[0] <= value <= ci[1]
    assert summary.signature.startswith("nrefs:var|bs:200|seed:7|") and "tok:13a" in summary.signature
    assert "nc:6" in summary.chrf_signature


def test_translation_sections_through_score_run(translation_run) -> None:
    items, responses = translation_run
    table = score_run(items, responses, protocol="strict", reps=100).strict
    bleu, chrf = table.metric_sections["translation"], table.metric_sections["translation_chrf"]
    assert set(bleu.tasks) == {"de-en", "fr-en"} and bleu.average.n == 5 and bleu.average.failures == 1
    assert "tok:13a" in bleu.source and "nc:6" in chrf.source
    assert bleu.average.ci_low <= bleu.average.value <= bleu.average.ci_high


def test_tokenizers() -> None:
    assert (tokenizer_for("en"), tokenizer_for("zh-CN")) == ("13a", "zh")
    pytest.importorskip("sacrebleu")
    try:
        import MeCab  # noqa: F401
    except ImportError:
        with pytest.raises(MissingTokenizerError, match=r"pip install 'sacrebleu\[ja\]'") as err:
            tokenizer_for("ja")
        assert "\n" not in str(err.value)
    else:
        assert tokenizer_for("ja") == "ja-mecab"


# --- captioning -----------------------------------------------------------------------------------------------

CAPTIONS = [
    ("audio_captioning", ["A dog barks in the distance.", "Dogs bark far away."], "A dog is barking far away!"),
    ("audio_captioning", ["Rain falls on a tin roof.", "Heavy rain on a roof."], "rain on a roof"),
    ("audio_captioning", ["Cars pass by on a busy street.", "Traffic noise on a road."], "cars on a street"),
    ("music_captioning", ["A slow piano melody.", "Soft piano music plays."], None),
    ("music_captioning", ["A fast drum beat with bass.", "Drums and bass play quickly."], "a drum beat"),
]


@pytest.fixture(scope="module")
def caption_run() -> tuple[list[CaptionItem], list[Response]]:
    items, responses = [], []
    for k, (task, refs, answer) in enumerate(CAPTIONS):
        items.append(CaptionItem(uid=f"c{k}", task=task, references=refs, **COMMON))
        responses.append(Response(uid=f"c{k}", model=MODEL, text=answer, error=None if answer else "no audio"))
    return items, responses


@pytest.fixture(scope="module")
def caption_scores(caption_run):
    items, responses = caption_run
    return caption_summary(items, responses, reps=200, seed=1)


def test_caption_normalisation() -> None:
    assert normalize_caption("  A dog barks,  twice! (Loudly.)") == "a dog barks twice loudly"


def test_caption_metrics_equal_aac_metrics(caption_scores) -> None:
    from aac_metrics.functional import bleu, cider_d, rouge_l

    cands = [normalize_caption(answer or "") for _, _, answer in CAPTIONS]
    refs = [[normalize_caption(r) for r in refs] for _, refs, _ in CAPTIONS]
    corpus, sents = cider_d(cands, refs)
    assert caption_scores.metrics["cider_d"].corpus == pytest.approx(float(corpus["cider_d"]))
    assert caption_scores.metrics["cider_d"].per_item == pytest.approx(sents["cider_d"].tolist())
    assert caption_scores.metrics["rouge_l"].corpus == pytest.approx(float(rouge_l(cands, refs)[0]["rouge_l"]))
    assert caption_scores.metrics["bleu_4"].corpus == pytest.approx(float(bleu(cands, refs, n=4)[0]["bleu_4"]))
    # a task's value is the mean of its items scored with the whole set's IDF (not CIDEr-D over the subset)
    audio = caption_scores.entries["cider_d"]["audio_captioning"]
    assert audio.value == pytest.approx(sum(sents["cider_d"].tolist()[:3]) / 3)
    average = caption_scores.entries["cider_d"]["average"]
    assert average.ci_low <= average.value <= average.ci_high and (average.n, average.failures) == (5, 1)


def test_embedding_similarity_by_hand(caption_run, caption_scores) -> None:
    from airbench_nb.embeddings import load_embedder

    embedder = load_embedder()
    _, refs, answer = CAPTIONS[0]
    rows = embedder.embed([answer, *refs])
    expected = float((rows[1:] @ rows[0]).mean())
    similarity = caption_scores.metrics["similarity"]
    assert similarity.label == "embedding similarity"
    assert similarity.per_item[0] == pytest.approx(expected, abs=1e-5)
    assert similarity.per_item[3] == 0.0  # the failed item


def test_caption_preflight_and_optional_metrics(caption_run) -> None:
    statuses = {s.metric: s for s in caption_metrics_preflight()}
    assert all(statuses[m].available for m in ("cider_d", "bleu_4", "rouge_l", "similarity"))
    spider = statuses["spider"]
    assert spider.label == "SPIDEr" and "\n" not in spider.reason
    if spider.available:
        pytest.skip("the SPICE jar and a Java 8-13 are installed here: SPIDEr can run")
    with pytest.raises(CaptionMetricUnavailable, match="SPIDEr was asked for but cannot run") as err:
        require_metric("spider")
    assert "\n" not in str(err.value) and "SPICE" in str(err.value)
    with pytest.raises(CaptionMetricUnavailable):
        optional_metrics({"metrics": ["spider"]})
    items, responses = caption_run
    with pytest.raises(CaptionMetricUnavailable):
        caption_summary(items, responses, metrics=("cider_d", "spider"), reps=0)
    with pytest.raises(KeyError, match="optional"):
        optional_metrics({"metrics": ["meteor"]})


def test_caption_sections_through_score_run(caption_run, caption_scores) -> None:
    items, responses = caption_run
    table = score_run(items, responses, protocol="strict", reps=200, seed=1).strict
    cider = table.metric_sections["captioning"]
    assert cider.average.value == pytest.approx(caption_scores.metrics["cider_d"].corpus)
    assert set(cider.tasks) == {"audio_captioning", "music_captioning"}
    similarity = table.metric_sections["captioning_similarity"]
    assert "not FENSE" in similarity.source and similarity.failure_reasons == {"response error: no audio": 1}
    assert caption_outcome(items[3], None).failure == "no response"


# --- speech output --------------------------------------------------------------------------------------------

ASR = "asr:faster-whisper:tiny.en-bundled"
TTS = [
    ("the cat sat on the mat", "the cat sat on a mat", None),  # 1 substitution / 6 words
    ("it is twenty five past nine", "it is 25 past nine", None),  # normalised: 0 errors / 5 words
    ("please call stella", None, "silent output"),  # failure: 3 deletions / 3 words
    ("good morning", None, "missing"),  # no verdict at all: 2 deletions / 2 words
]
SPOKEN = [
    (["paris"], "The capital is Paris.", None),
    (["25", "twenty five"], "it is 125", None),  # not on a word boundary
    (["blue"], None, "no audio output"),
]


@pytest.fixture(scope="module")
def spoken_run() -> tuple[list[SpeechGenerationItem], list[Response], list[Verdict]]:
    items, responses, verdicts = [], [], []
    for k, (text, _, _) in enumerate(TTS):
        items.append(SpeechGenerationItem(uid=f"s{k}", task="tts", text=text, **COMMON))
    for k, (answers, _, _) in enumerate(SPOKEN):
        items.append(SpeechGenerationItem(uid=f"a{k}", task="spoken_answer", answers=answers, **COMMON))
    rows = [(f"s{k}", t, w) for k, (_, t, w) in enumerate(TTS)] + [
        (f"a{k}", t, w) for k, (_, t, w) in enumerate(SPOKEN)
    ]
    for uid, transcript, why in rows:
        response = Response(uid=uid, model=MODEL, text=None)
        responses.append(response)
        if why == "missing":
            continue
        verdicts.append(
            Verdict(
                uid=uid,
                model=MODEL,
                judge=ASR,
                raw=transcript,
                parse_error=why,
                response_hash=response.content_hash(),
            )
        )
    # another ASR judge's transcript that must not count when ASR is chosen
    verdicts.append(Verdict(uid="s0", model=MODEL, judge="asr:other", raw="the cat sat on the mat"))
    return items, responses, verdicts


def test_speech_output_by_hand(spoken_run) -> None:
    items, responses, verdicts = spoken_run
    with pytest.raises(ValueError, match="several ASR judges"):
        speech_output_summary(items, responses, verdicts)
    summary = speech_output_summary(items, responses, verdicts, judges=[ASR], reps=300, seed=2)
    assert summary.judge == ASR
    assert summary.wer == pytest.approx((1 + 0 + 3 + 2) / (6 + 5 + 3 + 2))
    assert summary.per_utterance_wer == pytest.approx((1 / 6 + 0 + 1 + 1) / 4)
    # normalised characters, spaces removed: "thecatsatonthemat" (17) vs "thecatsatonamat": 2 deletions + 1
    # substitution; "itis25past9" (11: Whisper writes numbers as digits) matched; the failures all deleted
    assert summary.cer == pytest.approx((3 + 0 + 16 + 11) / (17 + 11 + 16 + 11))
    assert (summary.n, summary.failures) == (4, 2)
    assert summary.failure_reasons == {"silent output": 1, "no transcript: no verdict by the ASR judge": 1}
    assert summary.wer_ci[0] <= summary.wer <= summary.wer_ci[1]
    assert summary.spoken_answer_accuracy == pytest.approx(1 / 3)
    assert (summary.spoken_answer_n, summary.spoken_answer_failures) == (3, 1)


def test_heard_on_word_boundaries() -> None:
    assert heard(["twenty five"], "It is 25.", "en")
    assert not heard(["25"], "one hundred and twenty five", "en")
    assert not heard(["cat"], "concatenate", "en") and not heard(["cat"], None, "en")


def test_speech_sections_through_score_run(spoken_run) -> None:
    items, responses, verdicts = spoken_run
    table = score_run(items, responses, verdicts, protocol="strict", reps=100, judges=[ASR]).strict
    wer, answered = table.metric_sections["speech_output"], table.metric_sections["spoken_answer"]
    assert wer.average.value == pytest.approx(6 / 16) and set(wer.tasks) == {"tts"}
    assert answered.average.value == pytest.approx(1 / 3) and answered.average.failures == 1
    assert ASR in wer.source


def test_registry_names_match_items() -> None:
    for kind in (TranslationItem, CaptionItem, SpeechGenerationItem):
        assert all(name in METRICS for name in kind.METRICS)


def test_pairs_with_other_tokenizers_average_by_items() -> None:
    rows = [("de", "en", ["The house is small."], "The house is small."), ("en", "zh", ["我喜欢喝茶。"], "我爱喝茶。")]
    rows += [("de", "en", ["Where is the station?"], "Where is the train station?")]
    items = [
        TranslationItem(
            uid=f"m{k}",
            task="speech_translation",
            source_language=src,
            target_language=trg,
            references=refs,
            **COMMON,
        )
        for k, (src, trg, refs, _) in enumerate(rows)
    ]
    responses = [Response(uid=f"m{k}", model=MODEL, text=answer) for k, (*_, answer) in enumerate(rows)]
    summary = translation_summary(items, responses, reps=0)
    de_en = sacrebleu.corpus_bleu([rows[0][3], rows[2][3]], [[rows[0][2][0], rows[2][2][0]]]).score
    en_zh = sacrebleu.corpus_bleu([rows[1][3]], [[rows[1][2][0]]], tokenize="zh").score
    assert summary.by_pair["en-zh"].bleu.value == pytest.approx(en_zh) and summary.by_pair["en-zh"].tokenize == "zh"
    assert summary.by_pair["de-en"].bleu.value == pytest.approx(de_en)
    assert summary.bleu == pytest.approx((2 * de_en + en_zh) / 3) and summary.bleu_ci is None
    assert summary.signature is None and "tok:zh" in summary.by_pair["en-zh"].bleu.signature


def test_cider_d_of_one_item_says_why(caption_run) -> None:
    items, responses = caption_run
    summary = caption_summary(items[:1], responses[:1], metrics=("cider_d",), reps=10)
    assert summary.metrics["cider_d"].corpus is None
    (reason,) = summary.failure_reasons
    assert reason.startswith("CIDEr-D not computed: CIDEr-D metric does not support less than 2 candidates")


def test_stale_transcripts_and_tasks_apart(spoken_run) -> None:
    from airbench_nb.scoring.metrics import metric_for

    items, responses, verdicts = spoken_run
    retried = Response(uid="s1", model=MODEL, text=None, latency_s=1.0, prompt_hash="new")  # a newer answer
    summary = speech_output_summary(items, [*responses, retried], verdicts, judges=[ASR], reps=0)
    assert summary.failure_reasons["no transcript: no verdict by the ASR judge"] == 2  # s1's verdict is stale now
    tts, answer = metric_for("speech_output"), metric_for("spoken_answer")
    assert tts.serves(items[0]) and not tts.serves(items[4]) and answer.serves(items[4])
    assert answer.outcomes(items[0], responses[0], {}, "strict") == []
    empty = answer.aggregate([], "strict", 10, 0)
    assert empty.average.value is None and empty.average.n == 0 and not empty.tasks


def test_the_offline_caption_metrics_load_without_aac_metrics_init_and_equal_the_package():
    """In a fresh process the kit loads CIDEr-D, ROUGE-L and BLEU without aac-metrics' heavy ``__init__``."""
    import json
    import subprocess
    import sys

    from aac_metrics import functional as aac

    cands = ["a dog barks loudly", "rain falls on a tin roof", "a bell rings twice"]
    refs = [["a dog is barking", "the dog barks"], ["rain on a roof", "heavy rain falls"], ["a bell rings", "bells"]]
    code = (
        "import json, sys\n"
        "from airbench_nb.scoring.captioning import aac_function\n"
        f"cands, refs = {cands!r}, {refs!r}\n"
        "out = {n: float(aac_function(n)(cands, refs)[0][n]) for n in ('cider_d', 'rouge_l')}\n"
        "out['bleu_4'] = float(aac_function('bleu')(cands, refs, n=4)[0]['bleu_4'])\n"
        "out['loaded'] = 'torchmetrics' in sys.modules or 'aac_metrics.classes' in sys.modules\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    light = json.loads(done.stdout.strip().splitlines()[-1])
    assert light.pop("loaded") is False
    assert light["cider_d"] == pytest.approx(float(aac.cider_d(cands, refs)[0]["cider_d"]))
    assert light["rouge_l"] == pytest.approx(float(aac.rouge_l(cands, refs)[0]["rouge_l"]))
    assert light["bleu_4"] == pytest.approx(float(aac.bleu(cands, refs, n=4)[0]["bleu_4"]))


def test_directions_of_one_sentence_widen_the_pooled_interval() -> None:
    import numpy as np

    from airbench_nb.scoring.translation import score_translations, translation_outcome

    # 40 sentences, each spoken in 4 source languages into English; a model gets a sentence right in every
    # direction or in none, so the 4 directions of one sentence are one unit of information, not four
    rng = np.random.default_rng(5)
    words = "the a cat dog sat ran on under mat tree house river small big red blue".split()
    items, responses = [], []
    for s in range(40):
        reference = " ".join(rng.choice(words, size=8)) + "."
        right = bool(rng.random() < 0.5)
        for source in ("de", "fr", "es", "it"):
            uid = f"s{s:02d}-{source}"
            items.append(
                TranslationItem(
                    uid=uid,
                    task="speech_translation",
                    source_language=source,
                    target_language="en",
                    references=[reference],
                    meta={"sentence_id": f"sent{s}"},
                    **COMMON,
                )
            )
            responses.append(Response(uid=uid, model=MODEL, text=reference if right else "no idea at all."))
    latest = {r.uid: r for r in responses}
    outcomes = [translation_outcome(i, latest[i.uid]) for i in items]
    assert outcomes[0].cluster == "sentence:sent0"
    clustered = score_translations(outcomes, reps=1000, seed=1)
    alone = score_translations([replace(o, cluster="") for o in outcomes], reps=1000, seed=1)
    # point values unchanged and equal to sacrebleu's corpus BLEU; unclustered: sacrebleu's own interval, as before
    assert clustered.bleu == alone.bleu
    assert clustered.bleu == pytest.approx(
        sacrebleu.corpus_bleu([latest[i.uid].text for i in items], [[i.references[0] for i in items]]).score
    )
    assert alone.bleu_clustering is None and clustered.bleu_clustering.clusters == 40
    # within a pair each sentence is once: nothing to widen there
    assert clustered.by_pair["de-en"].bleu.ci == alone.by_pair["de-en"].bleu.ci
    # pooled over the 4 directions: a design effect near 4 and an interval about twice as wide, never narrower
    assert clustered.bleu_clustering.design_effect == pytest.approx(4.0, rel=0.25)
    width = clustered.bleu_ci[1] - clustered.bleu_ci[0]
    assert width / (alone.bleu_ci[1] - alone.bleu_ci[0]) == pytest.approx(2.0, rel=0.25)
    assert clustered.bleu_ci[0] <= alone.bleu_ci[0] and clustered.bleu_ci[1] >= alone.bleu_ci[1]
    assert clustered.chrf_clustering.clusters == 40 and clustered.chrf_clustering.design_effect > 2.5
    # and the score table's entry names them
    table = score_run(items, responses, protocol="strict", reps=300).strict
    average = table.metric_sections["translation"].average
    assert average.clusters == 40 and average.cluster_unit.startswith("sentence") and average.design_effect > 2.5
