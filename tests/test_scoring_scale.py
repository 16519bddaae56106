"""Scoring at scale: a model's reference sections are computed once across its Chat judges (issue 35)."""

from __future__ import annotations

from airbench_nb.records import Response, TranscriptionItem, TranslationItem, Verdict
from airbench_nb.scoring import score_run
from airbench_nb.scoring.reference import WordErrorRate
from airbench_nb.scoring.tables import score_models

JUDGES = ("judge-a", "judge-b")


def _run():
    from airbench_nb.records import ChatItem

    common = {"dataset": "planted", "question": "q"}
    chat = [
        ChatItem(
            uid=f"c{k}",
            task="speech_QA",
            audio=f"audio/c{k}.wav",
            reference="A reference.",
            meta_info="a clip",
            **common,
        )
        for k in range(6)
    ]
    said = ["the cat sat on the mat", "a dog barks at the moon", "rain falls on the old roof"]
    speech = [
        TranscriptionItem(
            uid=f"t{k}",
            task="sseu_transcription",
            audio=f"audio/t{k}.wav",
            reference=said[k % 3],
            clip_id=f"u{k // 2}",
            **common,
        )
        for k in range(12)
    ]
    spoken = [
        TranslationItem(
            uid=f"x{k}",
            task="speech_translation",
            audio=f"audio/x{k}.wav",
            source_language=("de", "fr")[k % 2],
            target_language="en",
            references=[said[k % 3]],
            meta={"sentence_id": f"s{k // 2}"},
            **common,
        )
        for k in range(12)
    ]
    items = [*chat, *speech, *spoken]
    runs = []
    for m, model in enumerate(("m:one", "m:two")):
        responses = [Response(uid=i.uid, model=model, text="some words here") for i in chat]
        responses += [Response(uid=i.uid, model=model, text=" ".join(i.reference.split()[m:])) for i in speech]
        responses += [Response(uid=i.uid, model=model, text=" ".join(i.references[0].split()[: 4 + m])) for i in spoken]
        verdicts = [
            Verdict(
                uid=i.uid,
                model=model,
                judge=judge,
                order=order,
                raw="7 8",
                score_hypothesis=7.0 - m + j,
                score_reference=8.0,
            )
            for j, judge in enumerate(JUDGES)
            for i in chat
            for order in ("reference_first", "hypothesis_first")
        ]
        runs.append((responses, verdicts))
    return items, runs


def test_reference_sections_are_shared_across_judges_and_equal_the_unshared(monkeypatch):
    items, runs = _run()
    calls = []
    original = WordErrorRate.aggregate
    monkeypatch.setattr(WordErrorRate, "aggregate", lambda self, *a: calls.append(1) or original(self, *a))
    _, table = score_models(items, runs, protocol="both", seed=3, reps=200)
    assert len(table) == 4 and len(calls) == 2  # two models x two judges; WER computed once per model
    for (responses, verdicts), model in zip(runs, ("m:one", "m:two"), strict=True):
        for judge in JUDGES:
            judges = [judge, "rule", *sorted(set(JUDGES) - {judge})]
            alone = score_run(items, responses, verdicts, protocol="both", seed=3, reps=200, judges=judges)
            shared = table[f"{model} | chat judge {judge}"]
            assert shared.model_dump() == alone.model_dump()
