"""Metrics behind one protocol: registry, the kinds that name them, and a new metric plugged in without branches."""

from __future__ import annotations

import pytest

from airbench_nb.records import ChatItem, FoundationItem, Response
from airbench_nb.scoring import metrics, score_run
from airbench_nb.scoring.aggregate import ValueOutcome, mean_section
from airbench_nb.scoring.metrics import ChoiceAccuracy, JudgeScore, Metric, metric_for, metrics_of, register_metric


def test_airbench_kinds_name_their_metrics():
    assert FoundationItem.METRICS == ("choice_accuracy",) and ChatItem.METRICS == ("judge_score",)
    assert isinstance(metric_for("choice_accuracy"), ChoiceAccuracy)
    assert isinstance(metric_for("judge_score"), JudgeScore)
    assert all(isinstance(m, Metric) for m in metrics.METRICS.values())
    chat = ChatItem(uid="c", task="speech_QA", dataset="d", audio="c.wav", question="?", reference="r", meta_info="m")
    found = FoundationItem(
        uid="f",
        task="Speaker_Gender_Recognition",
        dataset="d",
        audio="f.wav",
        question="?",
        choices=["a", "b"],
        answer=0,
    )
    assert [m.name for m in metrics_of([found, chat, found])] == ["choice_accuracy", "judge_score"]


def test_unknown_and_malformed_metrics_are_refused():
    registered = (
        "bleu, caption_similarity, choice_accuracy, chrf, cider_d, event_map, judge_score, mmar_accuracy, "
        "mmau_accuracy, mmsu_accuracy, scene_macc, speech_output, spoken_answer, tier_closed_set, "
        "tier_open_vocabulary, wer"
    )
    with pytest.raises(KeyError, match=f"no metric 'meteor'; registered: {registered}"):
        metric_for("meteor")
    with pytest.raises(TypeError, match="is not a Metric"):
        register_metric(object())  # type: ignore[arg-type]


def test_mean_section_known_answer():
    outcomes = [ValueOutcome("a", f"a{k}", v, "ok") for k, v in enumerate([1.0, 2.0, 3.0])]
    outcomes += [ValueOutcome("b", "b0", 10.0, "ok"), ValueOutcome("b", "b1", None, "no answer")]
    section = mean_section(outcomes, "m", reps=500, seed=0).as_dict()
    assert section["tasks"]["a"]["value"] == 2.0 and section["tasks"]["a"]["n"] == 3
    assert section["tasks"]["b"] == {"value": 10.0, "n": 1, "failures": 1, "ci_low": 10.0, "ci_high": 10.0}
    assert section["average"]["value"] == 4.0 and section["average"]["n"] == 4 and section["failed"] == 1
    assert 1.0 <= section["tasks"]["a"]["ci_low"] < 2.0 < section["tasks"]["a"]["ci_high"] <= 3.0
    assert section["failure_reasons"] == {"no answer": 1}
    assert mean_section(outcomes, "m", reps=500, seed=0).as_dict() == section  # same seed, same numbers


class _Chars:
    name = "answer_chars"
    section = "answer_chars"

    def select(self, verdicts, uids, judges):
        return {}

    def judges_used(self, chosen):
        return []

    def outcomes(self, item, response, chosen, protocol):
        text = response.text if response is not None else None
        return [ValueOutcome(item.task, item.uid, None if text is None else float(len(text)), "chars")]

    def aggregate(self, outcomes, protocol, reps, seed):
        return mean_section(outcomes, self.name, reps, seed)


def test_a_registered_metric_scores_the_items_that_name_it(monkeypatch):
    monkeypatch.setattr(metrics, "METRICS", dict(metrics.METRICS))
    monkeypatch.setattr(FoundationItem, "METRICS", ("choice_accuracy", "answer_chars"))
    register_metric(_Chars())
    items = [
        FoundationItem(
            uid=f"f{k}",
            task="Speaker_Gender_Recognition",
            dataset="d",
            audio=f"f{k}.wav",
            question="?",
            choices=["male", "female"],
            answer=0,
        )
        for k in range(3)
    ]
    responses = [Response(uid=f"f{k}", model="m", text=t) for k, t in enumerate(["A", "B.", "(A) male"])]
    scores = score_run(items, responses, protocol="both", reps=0)
    for table in (scores.official, scores.strict):
        chars = table.metric_sections["answer_chars"]
        assert chars.average.value == pytest.approx((1 + 2 + 8) / 3) and chars.average.n == 3
        assert table.foundation is not None  # the kind's first metric still fills its section
    # official reads the first or second-to-last character: "(A) male" is a failure, dropped from n
    official = scores.official.foundation.average
    assert (official.value, official.n, official.failures) == (0.5, 2, 1)
    frame = scores.frame()
    assert set(frame["benchmark"]) == {"foundation", "answer_chars"}
    again = type(scores).model_validate_json(scores.model_dump_json(exclude_unset=True, by_alias=True))
    assert again.strict.metric_sections["answer_chars"].average.value == chars.average.value
