"""BLEU and mAP under perturbations and controls, on planted answers with a known effect.

The points must be the kit's own corpus scores (sacrebleu's corpus BLEU, SSEU-Bench's mAP) of the same items, the
paired intervals must find a planted loss and leave an unchanged model at exactly 0.
"""

from __future__ import annotations

import pytest
from sacrebleu.metrics import BLEU

from airbench_nb.analysis.controls import reference_controls_results, reference_label
from airbench_nb.analysis.perturbations import (
    CURVE_METRICS,
    bleu_outcomes,
    map_outcomes,
    perturbation_results,
)
from airbench_nb.records import EventsItem, Response, TranslationItem

SENTENCES = [
    "the quick brown fox jumps over the lazy dog near the river bank",
    "our neighbours have a big dog that barks at night",
    "she bought fresh bread and cheese at the market this morning",
    "the train to the city leaves from platform four every hour",
    "please close the window before you leave the room tonight",
    "he reads the newspaper on the bus every day after work",
]


def _translation(k: int, pair: str, meta: dict | None = None, suffix: str = "") -> TranslationItem:
    source, target = pair.split("-")
    return TranslationItem(
        uid=f"st-{pair}-{k}{suffix}",
        dataset="synthetic",
        audio=f"audio/{k}.wav",
        question="Translate the speech.",
        task="speech_translation",
        source_language=source,
        target_language=target,
        references=[SENTENCES[k % len(SENTENCES)] + f" number {k}"],
        meta=meta or {},
    )


def _copy(item: TranslationItem, tag: str, curve: str, parameter: float) -> TranslationItem:
    meta = {"perturbation_of": item.uid, "perturbation": curve, "parameter": parameter, "measured": {"value": 23.5}}
    return item.model_copy(update={"uid": f"{item.uid}@p-{tag}", "meta": meta})


def _damaged(text: str, every: int) -> str:
    """The text with every ``every``-th word dropped (a planted translation error)."""
    return " ".join(w for i, w in enumerate(text.split()) if i % every != every - 1)


def _responses(model: str, answers: dict[str, str]) -> dict[str, Response]:
    return {uid: Response(uid=uid, model=model, text=text) for uid, text in answers.items()}


def test_bleu_points_are_sacrebleu_s_corpus_bleu_of_the_same_items_and_find_a_planted_loss():
    originals = [_translation(k, "de-en" if k % 2 else "fr-en") for k in range(40)]
    copies = [_copy(i, "mp3-24k", "codec:mp3", 24.0) for i in originals]
    clean = {i.uid: _damaged(i.references[0], 7) for i in originals}
    coded = {c.uid: _damaged(i.references[0], 3) for i, c in zip(originals, copies, strict=True)}
    outcomes = bleu_outcomes([*originals, *copies], {"m": _responses("m", {**clean, **coded})})
    assert {o.task for o in outcomes} == {"speech_translation (de-en)", "speech_translation (fr-en)"}
    assert {o.group for o in outcomes} == {"13a"} and all(len(o.stats) == 10 for o in outcomes)
    points = perturbation_results(outcomes, reps=500, seed=0)
    assert [p.task for p in points] == ["speech_translation (de-en)", "speech_translation (fr-en)", None]
    pooled = points[-1]
    refs = [[i.references[0] for i in originals]]
    expected_clean = BLEU().corpus_score([clean[i.uid] for i in originals], refs).score / 100
    expected_coded = BLEU().corpus_score([coded[c.uid] for c in copies], refs).score / 100
    assert pooled.n == 40 and pooled.metric == "bleu" and pooled.measured == pytest.approx(23.5)
    assert pooled.clean == pytest.approx(expected_clean, abs=1e-12)
    assert pooled.perturbed == pytest.approx(expected_coded, abs=1e-12)
    assert pooled.difference.value < -0.1 and pooled.difference.excludes(0.0)
    de = [i for i in originals if i.source_language == "de"]
    assert points[0].clean == pytest.approx(
        BLEU().corpus_score([clean[i.uid] for i in de], [[i.references[0] for i in de]]).score / 100, abs=1e-12
    )


def test_bleu_of_an_unchanged_model_stays_put_and_pairs_of_two_tokenizers_do_not_pool():
    originals = [_translation(k, "de-en" if k % 2 else "en-zh") for k in range(12)]
    copies = [_copy(i, "reverb-0.6s", "reverb", 0.6) for i in originals]
    answers = {i.uid: _damaged(i.references[0], 4) for i in originals}
    answers.update({c.uid: answers[i.uid] for i, c in zip(originals, copies, strict=True)})
    outcomes = bleu_outcomes([*originals, *copies], {"m": _responses("m", answers)})
    assert {o.group for o in outcomes} == {"13a", "zh"}
    points = perturbation_results(outcomes, reps=200, seed=0)
    assert [p.task for p in points] == ["speech_translation (de-en)", "speech_translation (en-zh)"]  # no pooled
    assert all(p.difference.value == 0 and (p.difference.low, p.difference.high) == (0, 0) for p in points)


def test_a_missing_response_is_not_answered_and_a_failed_one_is_an_empty_translation():
    originals = [_translation(k, "de-en") for k in range(3)]
    copies = [_copy(i, "mp3-24k", "codec:mp3", 24.0) for i in originals]
    responses = _responses("m", {i.uid: i.references[0] for i in originals})
    responses[copies[0].uid] = Response(uid=copies[0].uid, model="m", text=None, error="timeout")
    outcomes = bleu_outcomes([*originals, *copies], {"m": responses})
    by_uid = {(o.uid, o.curve): o for o in outcomes}
    assert by_uid[(originals[0].uid, "codec:mp3")].stats[0] == 0  # "" has no words
    assert by_uid[(originals[1].uid, "codec:mp3")].stats is None  # no response: left out of the pairs
    (point,) = perturbation_results(outcomes, reps=50)
    assert point.n == 1 and point.perturbed == 0 and point.clean == pytest.approx(1.0)


CLASSES = ["dog bark", "siren", "rain", "door knock"]


def _events(k: int, labels: list[str], meta: dict | None = None, suffix: str = "") -> EventsItem:
    return EventsItem(
        uid=f"ev-{k}{suffix}",
        dataset="synthetic",
        audio=f"audio/ev{k}.wav",
        question="Which sound events?",
        task="sseu_events",
        classes=CLASSES,
        labels=labels,
        meta=meta or {},
    )


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    from airbench_nb.embeddings import load_embedder

    return load_embedder(None, cache_dir=tmp_path_factory.mktemp("embeddings"))


def test_map_points_are_the_kit_s_map_of_the_same_items_and_find_a_planted_loss(embedder):
    from airbench_nb.scoring.tagging import score_events

    golds = [[CLASSES[k % 4]] + ([CLASSES[(k + 1) % 4]] if k % 3 == 0 else []) for k in range(36)]
    originals = [_events(k, g) for k, g in enumerate(golds)]
    copies = [
        _events(k, g, {"perturbation_of": f"ev-{k}", "perturbation": "reverb", "parameter": 1.0}, "@p-reverb-1s")
        for k, g in enumerate(golds)
    ]
    heard = {i.uid: ", ".join(i.labels) for i in originals}  # the gold events, named
    muddled = {c.uid: (CLASSES[(k + 2) % 4] if k % 2 else ", ".join(c.labels)) for k, c in enumerate(copies)}
    outcomes = map_outcomes([*originals, *copies], {"m": _responses("m", {**heard, **muddled})}, embedder)
    assert {o.metric for o in outcomes} == {"map"} and all(len(o.stats) == 2 * len(CLASSES) for o in outcomes)
    (point,) = perturbation_results(outcomes, reps=400, seed=0)
    expected = score_events([g for g in golds], golds, CLASSES, embedder, reps=0)
    wrong = [[CLASSES[(k + 2) % 4]] if k % 2 else g for k, g in enumerate(golds)]
    expected_muddled = score_events(wrong, golds, CLASSES, embedder, reps=0)
    assert point.n == 36 and point.clean == pytest.approx(expected.map, abs=1e-12)
    assert point.perturbed == pytest.approx(expected_muddled.map, abs=1e-12)
    assert point.difference.value < -0.2 and point.difference.excludes(0.0)
    assert CURVE_METRICS["map"].higher_is_better and not CURVE_METRICS["wer"].higher_is_better


def test_reference_controls_a_listener_loses_its_bleu_under_silence_and_a_text_prior_does_not():
    originals = [_translation(k, "de-en") for k in range(30)]
    silence = [
        item.model_copy(
            update={"uid": f"{item.uid}@ctl-silence", "meta": {"control_of": item.uid, "control": "silence"}}
        )
        for item in originals
    ]
    listener = {i.uid: i.references[0] for i in originals} | {s.uid: "I hear nothing." for s in silence}
    prior = {i.uid: "a dog in the city" for i in [*originals, *silence]}
    responses = {"listener": _responses("listener", listener), "prior": _responses("prior", prior)}
    results = {r.model: r for r in reference_controls_results([*originals, *silence], responses, reps=300)}
    heard = results[reference_label("listener", "bleu")]
    assert heard.metric == "bleu" and heard.task == "speech_translation (de-en)" and heard.n == 30
    assert heard.score.value == pytest.approx(1.0) and heard.audio_needed is None and "BLEU" in heard.corrected_why
    (under,) = heard.controls
    assert under.control == "silence" and under.n == 30 and under.difference.value == pytest.approx(-1.0)
    assert under.difference.excludes(0.0)
    (unmoved,) = results[reference_label("prior", "bleu")].controls
    assert unmoved.difference.value == 0 and (unmoved.difference.low, unmoved.difference.high) == (0, 0)
