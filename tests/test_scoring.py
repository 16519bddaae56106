"""Scoring under both protocols, on small runs whose scores are computed by hand."""

import json

import numpy as np
import pytest

from airbench_nb.judge.chat_parse import parse_scores_strict
from airbench_nb.judge.extract import extract_choice
from airbench_nb.manifests import ManifestError
from airbench_nb.records import ChatItem, FoundationItem, Response, Verdict
from airbench_nb.run_folder import RunFolder
from airbench_nb.scoring import FRAME_COLUMNS, score_official_files, score_run, scores_frame

MODEL = "baseline:test"
GENDER = ["male", "female"]
EMOTION = ["happy", "sad", "angry", "neutral"]
SOUND = ["cough", "laughter", "sneeze", "sigh"]
GENRE = ["jazz", "rock", "pop", "blues"]


def _foundation(uid, task, dataset, choices, answer):
    return FoundationItem(
        uid=uid, task=task, dataset=dataset, audio=f"{uid}.wav", question="?", choices=choices, answer=answer
    )


def _rule_verdict(item, response, judge="rule"):
    extraction = extract_choice(response.text, item.choices)
    correct = None if extraction.choice is None else extraction.choice == item.answer
    return Verdict(
        uid=item.uid, model=MODEL, judge=judge, raw=extraction.reason, choice=extraction.choice, correct=correct
    )


def foundation_run():
    """Four tasks with known counts.

    Speaker_Gender_Recognition: dataset d1 2/2 right, d2 1/2 right -> task 3/4 = 0.75 (both protocols).
    Speaker_Emotion_Recontion: 2 right, 2 wrong, 1 unreadable -> official 2/4 = 0.5, strict 2/5 = 0.4.
    vocal_sound_classification: 1 right, 1 wrong -> 0.5.
    Music_Genre_Recognition: 2/2 -> 1.0.
    """
    rows = [
        ("g1", "Speaker_Gender_Recognition", "d1", GENDER, 0, "A"),
        ("g2", "Speaker_Gender_Recognition", "d1", GENDER, 1, "B"),
        ("g3", "Speaker_Gender_Recognition", "d2", GENDER, 0, "A"),
        ("g4", "Speaker_Gender_Recognition", "d2", GENDER, 0, "B"),
        ("e1", "Speaker_Emotion_Recontion", "e", EMOTION, 0, "A"),
        ("e2", "Speaker_Emotion_Recontion", "e", EMOTION, 1, "B"),
        ("e3", "Speaker_Emotion_Recontion", "e", EMOTION, 2, "D"),
        ("e4", "Speaker_Emotion_Recontion", "e", EMOTION, 3, "A"),
        ("e5", "Speaker_Emotion_Recontion", "e", EMOTION, 3, "I cannot tell from this clip."),
        ("v1", "vocal_sound_classification", "v", SOUND, 2, "C"),
        ("v2", "vocal_sound_classification", "v", SOUND, 2, "B"),
        ("m1", "Music_Genre_Recognition", "m", GENRE, 1, "B"),
        ("m2", "Music_Genre_Recognition", "m", GENRE, 3, "D"),
    ]
    items, responses, verdicts = [], [], []
    for uid, task, dataset, choices, answer, text in rows:
        item = _foundation(uid, task, dataset, choices, answer)
        response = Response(uid=uid, model=MODEL, text=text)
        items.append(item)
        responses.append(response)
        verdicts.append(_rule_verdict(item, response))
    return items, responses, verdicts


def test_foundation_hand_computed_both_protocols():
    items, responses, verdicts = foundation_run()
    result = score_run(items, responses, verdicts, protocol="both", reps=200)
    official, strict = result.official.foundation, result.strict.foundation

    assert official.subsets["Speaker_Gender_Recognition_d1"].accuracy == 1.0
    assert official.subsets["Speaker_Gender_Recognition_d2"].accuracy == 0.5
    for table in (official, strict):
        assert table.tasks["Speaker_Gender_Recognition"].accuracy == 0.75
        assert table.tasks["Speaker_Gender_Recognition"].n == 4
        assert table.tasks["vocal_sound_classification"].value == 0.5
        assert table.categories["music"].value == 1.0

    ser_official = official.tasks["Speaker_Emotion_Recontion"]
    ser_strict = strict.tasks["Speaker_Emotion_Recontion"]
    assert (ser_official.value, ser_official.n, ser_official.failures, ser_official.correct) == (
        0.5,
        4,
        1,
        2,
    )
    assert (ser_strict.value, ser_strict.n, ser_strict.failures, ser_strict.correct) == (0.4, 5, 1, 2)

    assert official.categories["speech"].value == pytest.approx((0.75 + 0.5) / 2)
    assert strict.categories["speech"].value == pytest.approx((0.75 + 0.4) / 2)
    assert official.average.value == pytest.approx((0.625 + 0.5 + 1.0) / 3)
    assert strict.average.value == pytest.approx((0.575 + 0.5 + 1.0) / 3)
    assert official.failed == strict.failed == 1
    # the inflation: dropping the unreadable answer raises the official score
    assert official.average.value > strict.average.value


def test_category_is_unweighted_mean_of_tasks_not_pooled():
    items, responses, verdicts = foundation_run()
    strict = score_run(items, responses, verdicts, reps=0).strict.foundation
    pooled = (3 + 2) / (4 + 5)
    assert strict.categories["speech"].value != pytest.approx(pooled)
    assert strict.categories["speech"].n == 9
    assert strict.categories["speech"].ci_low is None  # no replicates asked for


def test_default_protocol_is_strict():
    items, responses, verdicts = foundation_run()
    assert score_run(items, responses, verdicts, reps=0).model_fields_set == {"strict"}
    assert score_run(items, responses, verdicts, protocol="official", reps=0).model_fields_set == {"official"}
    with pytest.raises(ValueError, match="unknown protocol"):
        score_run(items, responses, verdicts, protocol="lenient")


def test_error_response_and_missing_verdict_and_letter_past_options():
    item_err = _foundation("x1", "Speaker_Gender_Recognition", "d", GENDER, 0)
    item_c = _foundation("x2", "Speaker_Gender_Recognition", "d", GENDER, 0)
    item_nov = _foundation("x3", "Speaker_Gender_Recognition", "d", GENDER, 0)
    item_ok = _foundation("x4", "Speaker_Gender_Recognition", "d", GENDER, 0)
    item_none = _foundation("x5", "Speaker_Gender_Recognition", "d", GENDER, 0)  # never answered
    responses = [
        Response(uid="x1", model=MODEL, error="audio file is empty"),
        Response(uid="x2", model=MODEL, text="C"),
        Response(uid="x3", model=MODEL, text="A"),
        Response(uid="x4", model=MODEL, text="A"),
    ]
    verdicts = [_rule_verdict(item_c, responses[1]), _rule_verdict(item_ok, responses[3])]
    items = [item_err, item_c, item_nov, item_ok, item_none]
    result = score_run(items, responses, verdicts, protocol="both", reps=0)
    official = result.official.foundation.tasks["Speaker_Gender_Recognition"]
    strict = result.strict.foundation.tasks["Speaker_Gender_Recognition"]
    # official: x1 and x5 dropped; "C" read as a letter the item lacks -> wrong; x3, x4 right
    assert (official.n, official.correct, official.failures) == (3, 2, 2)
    # strict: error, "C" (not an option), no verdict, no response -> 4 failures, all wrong
    assert (strict.n, strict.correct, strict.failures) == (5, 1, 4)
    reasons = result.strict.foundation.failure_reasons
    assert reasons["no verdict"] == 1 and reasons["no response"] == 1
    assert any(r.startswith("response error") for r in reasons)


def test_llm_verdict_used_when_the_rule_abstains():
    items, responses, verdicts = foundation_run()
    e5 = next(i for i in items if i.uid == "e5")
    llm = Verdict(uid="e5", model=MODEL, judge="openai:gpt-4o", raw="yes", choice=3, correct=True)
    default = score_run(items, responses, [*verdicts, llm], reps=0).strict.foundation
    assert default.tasks["Speaker_Emotion_Recontion"].value == pytest.approx(3 / 5)
    assert default.failed == 0
    rule_only = score_run(items, responses, [*verdicts, llm], reps=0, judges=["rule"]).strict.foundation
    assert rule_only.tasks["Speaker_Emotion_Recontion"].value == pytest.approx(2 / 5)
    assert e5.answer == 3


def test_several_models_need_a_choice():
    items, responses, verdicts = foundation_run()
    other = [r.model_copy(update={"model": "baseline:other", "text": "A"}) for r in responses]
    with pytest.raises(ValueError, match="several models"):
        score_run(items, [*responses, *other], verdicts)
    mine = score_run(items, [*responses, *other], verdicts, model=MODEL, reps=0)
    assert mine.strict.foundation.average.value == pytest.approx((0.575 + 0.5 + 1.0) / 3)


CHAT_REPLIES = {
    # uid: (task, reference-first reply, hypothesis-first reply); the model is Assistant 2, then Assistant 1
    "s1": ("speech_QA", "8 6", "7 9"),
    "s2": ("speech_QA", "9 5", "4 8"),
    "s3": ("speech_dialogue_QA", "7 7", "6 8"),
    "a1": ("sound_QA", "8\n7", "5 9"),  # the official parser fails on the first
    "u1": ("music_QA", "6 4", "7.5 8"),  # the official parser fails on the second
    "x1": ("speech_and_sound_QA", "8 6", "6 8"),
    "x2": ("speech_and_music_QA", "9 3", "2 9"),
    "x3": ("speech_and_music_QA", "8 8", "8 8"),
}


def chat_run():
    items, responses, verdicts = [], [], []
    for uid, (task, ref_first, hyp_first) in CHAT_REPLIES.items():
        items.append(
            ChatItem(uid=uid, task=task, dataset="d", audio=f"{uid}.wav", question="?", reference="r", meta_info="m")
        )
        responses.append(Response(uid=uid, model=MODEL, text="an answer"))
        for order, raw in (("reference_first", ref_first), ("hypothesis_first", hyp_first)):
            first, second = parse_scores_strict(raw)
            model, reference = (second, first) if order == "reference_first" else (first, second)
            verdicts.append(
                Verdict(
                    uid=uid,
                    model=MODEL,
                    judge="openai:judge",
                    order=order,
                    raw=raw,
                    score_hypothesis=model,
                    score_reference=reference,
                )
            )
    return items, responses, verdicts


def test_chat_hand_computed_both_orders_both_protocols():
    items, responses, verdicts = chat_run()
    result = score_run(items, responses, verdicts, protocol="both", reps=200)
    official, strict = result.official.chat, result.strict.chat
    speech_model, speech_reference = (6 + 7 + 5 + 4 + 7 + 6) / 6, (8 + 9 + 9 + 8 + 7 + 8) / 6
    for table in (official, strict):
        speech = table.categories["speech"]
        assert speech.value == pytest.approx(speech_model)
        assert speech.reference.value == pytest.approx(speech_reference)
        assert speech.relative.value == pytest.approx(speech_model / speech_reference)
        assert speech.n == 6 and speech.failures == 0
        # Mixed: mean of the two task means (6 and 5.25), not the pooled mean (5.5)
        assert table.tasks["speech_and_music_QA"].value == pytest.approx(5.25)
        assert table.categories["mixed"].value == pytest.approx((6 + 5.25) / 2)
    assert official.categories["sound"].value == 5 and official.categories["sound"].failures == 1
    assert official.categories["music"].value == 4 and official.categories["music"].n == 1
    assert strict.categories["sound"].value == pytest.approx(6.0)
    assert strict.categories["music"].value == pytest.approx(5.75)
    assert official.average.value == pytest.approx((speech_model + 5 + 4 + 5.625) / 4)
    assert strict.average.value == pytest.approx((speech_model + 6 + 5.75 + 5.625) / 4)
    assert official.failed == 2 and strict.failed == 0
    assert official.n_items == 8 and official.orders == ["reference_first", "hypothesis_first"]


def test_chat_strict_failures_are_excluded_and_counted():
    items, responses, verdicts = chat_run()
    broken = [
        v.model_copy(update={"score_hypothesis": None, "score_reference": None, "parse_error": "found 3 numbers"})
        if (v.uid, v.order) == ("s1", "hypothesis_first")
        else v
        for v in verdicts
    ]
    broken = [v for v in broken if (v.uid, v.order) != ("s2", "reference_first")]  # a missing verdict
    strict = score_run(items, responses, broken, reps=0).strict.chat
    speech = strict.categories["speech"]
    assert speech.n == 4 and speech.failures == 2
    assert speech.value == pytest.approx((6 + 4 + 7 + 6) / 4)
    assert strict.failure_reasons == {"judge openai:judge: found 3 numbers": 1, "no verdict": 1}


def test_several_chat_judges_need_a_choice():
    items, responses, verdicts = chat_run()
    proxy = [v.model_copy(update={"judge": "proxy", "score_hypothesis": 1.0}) for v in verdicts]
    with pytest.raises(ValueError, match="several judges"):
        score_run(items, responses, [*verdicts, *proxy])
    chosen = score_run(items, responses, [*verdicts, *proxy], judges=["proxy"], reps=0).strict.chat
    assert chosen.average.value == 1.0


def test_official_protocol_keeps_proxy_scores():
    """The proxy's raw is an explanation, not a reply: the official protocol uses its scores as given."""
    items, responses, verdicts = chat_run()
    proxy = [
        v.model_copy(update={"judge": "proxy", "raw": "proxy: cos(answer, reference)=0.5", "score_hypothesis": 4.0})
        for v in verdicts
    ]
    result = score_run(items, responses, proxy, protocol="both", reps=0)
    for name in ("official", "strict"):
        assert getattr(result, name).chat.average.value == 4.0
        assert getattr(result, name).chat.failed == 0


def _all_scores(table):
    for kind in ("foundation", "chat"):
        section = getattr(table, kind)
        if section is None:
            continue
        for key in ("subsets", "tasks", "categories"):
            yield from (getattr(section, key) or {}).values()
        yield section.average


def test_confidence_intervals_contain_the_point_and_are_deterministic():
    items, responses, verdicts = foundation_run()
    c_items, c_responses, c_verdicts = chat_run()
    args = ([*items, *c_items], [*responses, *c_responses], [*verdicts, *c_verdicts])
    first = score_run(*args, protocol="both", seed=7, reps=300)
    again = score_run(*args, protocol="both", seed=7, reps=300)
    other = score_run(*args, protocol="both", seed=8, reps=300)
    assert json.dumps(first.as_dict(), sort_keys=True) == json.dumps(again.as_dict(), sort_keys=True)
    assert json.dumps(first.as_dict(), sort_keys=True) != json.dumps(other.as_dict(), sort_keys=True)
    for table in first.protocols():
        for score in _all_scores(table):
            assert score.ci_low <= score.value + 1e-12 <= score.ci_high + 2e-12, score


def test_confidence_interval_narrows_with_more_items():
    def run(n):
        items = [_foundation(f"i{k}", "Speaker_Gender_Recognition", "d", GENDER, 0) for k in range(n)]
        responses = [Response(uid=i.uid, model=MODEL, text="A" if k % 5 < 3 else "B") for k, i in enumerate(items)]
        verdicts = [_rule_verdict(i, r) for i, r in zip(items, responses, strict=True)]
        score = score_run(items, responses, verdicts, reps=500).strict.foundation.average
        assert score.value == pytest.approx(0.6)
        return score.ci_high - score.ci_low

    small, large = run(20), run(500)
    assert 0 < large < small / 2


def test_scores_frame_is_long_and_complete():
    items, responses, verdicts = foundation_run()
    c_items, c_responses, c_verdicts = chat_run()
    result = score_run(
        [*items, *c_items], [*responses, *c_responses], [*verdicts, *c_verdicts], protocol="both", reps=50
    )
    frame = scores_frame(result)
    assert list(frame.columns) == list(FRAME_COLUMNS)
    assert set(frame["protocol"]) == {"official", "strict"}
    assert set(frame["level"]) == {"subset", "task", "category", "average"}
    # per protocol: 5 subsets + 4 tasks + 3 categories + 1 average (Foundation), 6 tasks + 4 categories + 1 (Chat)
    assert len(frame) == 2 * ((5 + 4 + 3 + 1) + (6 + 4 + 1))
    row = frame.query("benchmark == 'chat' and level == 'category' and name == 'speech' and protocol == 'strict'")
    assert row["reference"].iloc[0] == pytest.approx(49 / 6)
    assert np.isnan(frame.query("benchmark == 'foundation'")["reference"].astype(float)).all()


# ------------------------------------------------------------------------------------------------------------
# official-format files


def _official_row(uniq, task, dataset, choices, answer_gt, **extra):
    row = {"path": f"{uniq}.wav", "question": "?", "answer_gt": answer_gt, "task_name": task}
    row.update({f"choice_{letter}": c for letter, c in zip("abcd", choices, strict=False)})
    row.update(dataset_name=dataset, uniq_id=uniq, **extra)
    return row


@pytest.fixture
def official_files(tmp_path):
    lines = [
        # a binary item without choice_c/d: "Answer: B" is read as A by the official script (first character)
        json.dumps(_official_row(1, "Speaker_Gender_Recognition", "vox", GENDER, "female", response="Answer: B")),
        json.dumps(_official_row(2, "Speaker_Gender_Recognition", "vox", GENDER, "male", response="A")),
        json.dumps(_official_row(3, "Speaker_Emotion_Recontion", "iemo", EMOTION, "sad", response="B")),
        json.dumps(_official_row(4, "Speaker_Emotion_Recontion", "iemo", EMOTION, "angry", response="It is C.")),
        json.dumps(_official_row(5, "Speaker_Emotion_Recontion", "iemo", EMOTION, "happy", response="I don't know")),
        json.dumps(_official_row(6, "Music_AQA", "clotho", GENRE, "pop", response="None")),
        json.dumps(_official_row(7, "Music_AQA", "clotho", GENRE, "pop", response="C")),
        json.dumps(_official_row(8, "Music_AQA", "clotho", GENRE, "pop")),  # no response field
        "{not json",
        json.dumps({k: v for k, v in _official_row(9, "Music_AQA", "c", GENRE, "pop").items() if k != "answer_gt"}),
        json.dumps(_official_row(10, "Music_AQA", "clotho", GENRE, "techno", response="A")),
    ]
    foundation = tmp_path / "Foundation_result_modelx.jsonl"
    foundation.write_text("\n".join(lines) + "\n", encoding="utf-8")

    ref_first = [
        {"task_name": "speech_QA", "dataset_name": "d", "uniq_id": 1, "gpt-score": "8 6"},
        {"task_name": "speech_QA", "dataset_name": "d", "uniq_id": 2, "gpt-score": "8\n7"},
        {"task_name": "sound_QA", "dataset_name": "d", "uniq_id": 3, "gpt-score": "9 5"},
        {"task_name": "speech_and_sound_QA", "dataset_name": "d", "uniq_id": 4, "gpt-score": "7 7"},
        {"task_name": "speech_and_music_QA", "dataset_name": "d", "uniq_id": 5, "gpt-score": "6 2"},
        {"task_name": "not_a_task", "gpt-score": "8 8"},
    ]
    swapped = [
        {"task_name": "speech_QA", "dataset_name": "d", "uniq_id": 1, "gpt-score": "7 9"},
        {"task_name": "speech_QA", "dataset_name": "d", "uniq_id": 2, "gpt-score": "7.5 8"},
        {"task_name": "sound_QA", "dataset_name": "d", "uniq_id": 3, "gpt-score": "Assistant 1: 4\nAssistant 2: 9"},
        {"task_name": "speech_and_sound_QA", "dataset_name": "d", "uniq_id": 4, "gpt-score": "5 8"},
        {"task_name": "speech_and_music_QA", "dataset_name": "d", "uniq_id": 5, "gpt-score": "4 8"},
    ]
    chat = tmp_path / "chat_score.json"
    chat.write_text(json.dumps(ref_first, indent=1), encoding="utf-8")
    chat_swapped = tmp_path / "chat_score_cir.jsonl"
    chat_swapped.write_text("".join(json.dumps(r) + "\n" for r in swapped), encoding="utf-8")
    return foundation, chat, chat_swapped


def test_score_official_files_foundation(official_files):
    foundation, chat, chat_swapped = official_files
    result = score_official_files(foundation, chat, chat_swapped, seed=0)
    json.dumps(result.as_dict())  # serialisable
    official, strict = result.official.foundation, result.strict.foundation

    gender_o = official.subsets["Speaker_Gender_Recognition_vox"]
    gender_s = strict.subsets["Speaker_Gender_Recognition_vox"]
    assert (gender_o.n, gender_o.correct, gender_o.accuracy) == (2, 1, 0.5)  # "Answer: B" misread as A
    assert (gender_s.n, gender_s.correct, gender_s.accuracy) == (2, 2, 1.0)

    emotion_o = official.subsets["Speaker_Emotion_Recontion_iemo"]
    emotion_s = strict.subsets["Speaker_Emotion_Recontion_iemo"]
    assert (emotion_o.n, emotion_o.correct, emotion_o.failures) == (2, 2, 1)  # "I don't know" dropped
    assert (emotion_s.n, emotion_s.correct, emotion_s.failures) == (3, 2, 1)  # ... counted wrong

    aqa_o = official.subsets["Music_AQA_clotho"]
    aqa_s = strict.subsets["Music_AQA_clotho"]
    assert (aqa_o.n, aqa_o.correct, aqa_o.failures) == (1, 1, 2)  # "None" and no response dropped
    assert (aqa_s.n, aqa_s.correct, aqa_s.failures) == (3, 1, 2)

    assert official.failed == 3 and strict.failed == 3
    assert official.categories["speech"].value == pytest.approx((0.5 + 1.0) / 2)
    assert strict.categories["speech"].value == pytest.approx((1.0 + 2 / 3) / 2)
    assert official.average.value == pytest.approx((0.75 + 1.0) / 2)
    assert strict.average.value == pytest.approx(((1.0 + 2 / 3) / 2 + 1 / 3) / 2)

    # bad lines: counted and located, the rest scored
    assert official.invalid == 3
    errors = "\n".join(official.errors)
    assert f"{foundation}:9: invalid JSON" in errors
    assert f"{foundation}:10: field 'answer_gt'" in errors
    assert f"{foundation}:11: field 'answer_gt'" in errors and "techno" in errors


def test_score_official_files_chat(official_files):
    foundation, chat, chat_swapped = official_files
    result = score_official_files(chat=chat, chat_swapped=chat_swapped, reps=100)
    assert result.official.foundation is None
    official, strict = result.official.chat, result.strict.chat
    # speech: model scores 6 and 7 (item 1), 7 and 7.5 (item 2, both unreadable for the official parser)
    assert official.categories["speech"].value == pytest.approx(6.5)
    assert official.categories["speech"].failures == 2
    assert strict.categories["speech"].value == pytest.approx((6 + 7 + 7 + 7.5) / 4)
    # sound: 5 (reference first), 4 in the labelled swapped reply (official parser fails on it)
    assert official.categories["sound"].value == 5
    assert strict.categories["sound"].value == pytest.approx(4.5)
    assert strict.categories["sound"].reference.value == pytest.approx(9)
    # mixed: mean of speech_and_sound (7, 5 -> 6) and speech_and_music (2, 4 -> 3)
    for table in (official, strict):
        assert table.categories["mixed"].value == pytest.approx(4.5)
        assert "music" not in table.categories
        assert table.invalid == 1 and "unknown Chat task 'not_a_task'" in table.errors[0]
    assert official.average.value == pytest.approx((6.5 + 5 + 4.5) / 3)
    assert strict.average.value == pytest.approx((6.875 + 4.5 + 4.5) / 3)
    assert official.failed == 3 and strict.failed == 0


def test_score_official_files_can_raise_on_the_first_bad_line(official_files):
    foundation, _, _ = official_files
    with pytest.raises(ManifestError, match=r":9: invalid JSON"):
        score_official_files(foundation, raise_on_error=True)
    with pytest.raises(ValueError, match="nothing to score"):
        score_official_files()
    with pytest.raises(FileNotFoundError):
        score_official_files(foundation.with_name("missing.jsonl"))


# ------------------------------------------------------------------------------------------------------------
# official Chat: per order, then the mean of the two orders


def _chat_verdicts(replies):
    """Items, responses and verdicts from ``{uid: (task, {order: raw reply or None for no verdict})}``."""
    items, responses, verdicts = [], [], []
    for uid, (task, by_order) in replies.items():
        items.append(
            ChatItem(uid=uid, task=task, dataset="d", audio=f"{uid}.wav", question="?", reference="r", meta_info="m")
        )
        responses.append(Response(uid=uid, model=MODEL, text="an answer"))
        for order, raw in by_order.items():
            parsed = parse_scores_strict(raw)
            first, second = parsed if isinstance(parsed, tuple) else (None, None)
            model, reference = (second, first) if order == "reference_first" else (first, second)
            verdicts.append(
                Verdict(
                    uid=uid,
                    model=MODEL,
                    judge="openai:judge",
                    order=order,
                    raw=raw,
                    score_hypothesis=model,
                    score_reference=reference,
                    parse_error=None if model is not None else parsed,
                )
            )
    return items, responses, verdicts


def test_official_chat_averages_the_two_orders_strict_pools_them():
    # speech_QA, model's scores. reference_first (model = score 2): 8, 6, 4 -> mean 6 (3 parsed).
    # hypothesis_first (model = score 1): 2, then "8\n7" fails the official parser (strict reads 8), then no
    # verdict -> official mean 2 (1 parsed).
    replies = {
        "q1": ("speech_QA", {"reference_first": "9 8", "hypothesis_first": "2 9"}),
        "q2": ("speech_QA", {"reference_first": "9 6", "hypothesis_first": "8\n7"}),
        "q3": ("speech_QA", {"reference_first": "9 4"}),
    }
    items, responses, verdicts = _chat_verdicts(replies)
    result = score_run(items, responses, verdicts, protocol="both", reps=0)
    official, strict = result.official.chat, result.strict.chat
    for level in (official.tasks["speech_QA"], official.categories["speech"]):
        assert level.value == pytest.approx((6 + 2) / 2)  # (mean over order 1 + mean over order 2) / 2 = 4
        assert level.value != pytest.approx((8 + 6 + 4 + 2) / 4)  # not the pooled mean, 5
        assert level.reference.value == pytest.approx((9 + 9) / 2)
        assert level.relative.value == pytest.approx(4 / 9)
        assert (level.n, level.failures) == (4, 2)  # (item, order) units
        assert level.orders_scored == ["reference_first", "hypothesis_first"]
    # strict pools the five scored units of both orders: 8, 6, 4, 2, 8
    assert strict.categories["speech"].value == pytest.approx((8 + 6 + 4 + 2 + 8) / 5)
    assert (strict.categories["speech"].n, strict.categories["speech"].failures) == (5, 1)
    assert official.average.value == pytest.approx(4.0)
    assert official.single_order is False and official.orders_scored == ["reference_first", "hypothesis_first"]


def test_official_chat_category_pools_its_tasks_within_an_order():
    # The official script sums a category's rows of both tasks in one file: per order, speech pools speech_QA and
    # speech_dialogue_QA. reference_first: 8, 6 (speech_QA), 2 (dialogue) -> 16/3; hypothesis_first: 5 (dialogue).
    replies = {
        "q1": ("speech_QA", {"reference_first": "9 8"}),
        "q2": ("speech_QA", {"reference_first": "9 6"}),
        "d1": ("speech_dialogue_QA", {"reference_first": "9 2", "hypothesis_first": "5 9"}),
    }
    items, responses, verdicts = _chat_verdicts(replies)
    official = score_run(items, responses, verdicts, protocol="official", reps=0).official.chat
    assert official.categories["speech"].value == pytest.approx((16 / 3 + 5) / 2)
    assert official.tasks["speech_QA"].value == pytest.approx(7.0)  # one order only
    assert official.tasks["speech_QA"].orders_scored == ["reference_first"]
    assert official.tasks["speech_dialogue_QA"].value == pytest.approx((2 + 5) / 2)


def test_official_chat_one_order_alone_is_flagged():
    replies = {
        "q1": ("speech_QA", {"reference_first": "9 8"}),
        "q2": ("speech_QA", {"reference_first": "9 6"}),
    }
    items, responses, verdicts = _chat_verdicts(replies)
    official = score_run(items, responses, verdicts, protocol="official", reps=0).official.chat
    assert official.categories["speech"].value == pytest.approx(7.0)
    assert official.single_order is True and official.orders_scored == ["reference_first"]
    assert official.categories["speech"].failures == 2  # the two missing hypothesis_first verdicts


def test_official_chat_interval_resamples_the_per_order_aggregate():
    items, responses, verdicts = _chat_verdicts(
        {
            f"q{k}": ("speech_QA", {"reference_first": f"9 {1 + k % 9}", "hypothesis_first": f"{1 + k % 3} 9"})
            for k in range(30)
        }
    )
    drop = {(f"q{k}", "hypothesis_first") for k in range(0, 30, 2)}  # order 2 keeps 15 of 30 replies
    verdicts = [v for v in verdicts if (v.uid, v.order) not in drop]
    result = score_run(items, responses, verdicts, protocol="both", reps=400, seed=1)
    official, strict = result.official.chat.average, result.strict.chat.average
    model_1 = sum(1 + k % 9 for k in range(30)) / 30
    model_2 = sum(1 + k % 3 for k in range(1, 30, 2)) / 15
    assert official.value == pytest.approx((model_1 + model_2) / 2)
    assert strict.value == pytest.approx((model_1 * 30 + model_2 * 15) / 45)
    assert official.ci_low < official.value < official.ci_high
    # the intervals are centred on their own aggregate, not on the other protocol's
    assert abs((official.ci_low + official.ci_high) / 2 - official.value) < 0.5
    assert official.ci_high != strict.ci_high


def test_score_official_files_chat_orders_with_different_parsed_counts(tmp_path):
    ref_first = [
        {"task_name": "sound_QA", "uniq_id": 1, "gpt-score": "9 8"},
        {"task_name": "sound_QA", "uniq_id": 2, "gpt-score": "9 6"},
        {"task_name": "sound_QA", "uniq_id": 3, "gpt-score": "9 4"},
    ]
    swapped = [
        {"task_name": "sound_QA", "uniq_id": 1, "gpt-score": "2 9"},
        {"task_name": "sound_QA", "uniq_id": 2, "gpt-score": "11 9"},  # above 10: a failure, the run goes on
        {"task_name": "sound_QA", "uniq_id": 3, "gpt-score": "8  9"},  # two spaces: a failure
    ]
    chat, chat_swapped = tmp_path / "chat_score.json", tmp_path / "chat_score_cir.json"
    chat.write_text(json.dumps(ref_first), encoding="utf-8")
    chat_swapped.write_text(json.dumps(swapped), encoding="utf-8")
    result = score_official_files(chat=chat, chat_swapped=chat_swapped, reps=0)
    official = result.official.chat
    assert official.categories["sound"].value == pytest.approx((6 + 2) / 2)
    assert official.categories["sound"].n == 4 and official.failed == 2
    assert result.strict.chat.categories["sound"].value == pytest.approx((8 + 6 + 4 + 2 + 8) / 5)
    only_one = score_official_files(chat=chat, reps=0).official.chat
    assert only_one.single_order is True and only_one.categories["sound"].value == pytest.approx(6.0)


# ------------------------------------------------------------------------------------------------------------
# partial averages


def test_partial_averages_say_which_categories_they_cover():
    items, responses, verdicts = foundation_run()  # speech, sound and music tasks
    c_items, c_responses, c_verdicts = chat_run()  # all four Chat categories
    full = score_run([*items, *c_items], [*responses, *c_responses], [*verdicts, *c_verdicts], reps=0).strict
    assert full.foundation.average.partial is False
    assert full.foundation.average.categories_present == ["speech", "sound", "music"]
    assert full.chat.average.partial is False
    assert full.chat.average.categories_present == ["speech", "sound", "music", "mixed"]

    no_music = [i for i in [*items, *c_items] if i.category not in ("music", "mixed")]
    part = score_run(no_music, [*responses, *c_responses], [*verdicts, *c_verdicts], reps=0).strict
    assert part.foundation.average.partial is True
    assert part.foundation.average.categories_present == ["speech", "sound"]
    assert part.foundation.average.value == pytest.approx(((0.75 + 0.4) / 2 + 0.5) / 2)
    assert part.chat.average.partial is True
    assert part.chat.average.categories_present == ["speech", "sound"]


def test_a_category_without_a_value_makes_the_average_partial():
    # sound's only item fails the official parser in both orders: the category has n = 0 and no value
    items, responses, verdicts = _chat_verdicts(
        {
            "q1": ("speech_QA", {"reference_first": "9 8", "hypothesis_first": "8 9"}),
            "a1": ("sound_QA", {"reference_first": "9\n8", "hypothesis_first": "7.5 9"}),
        }
    )
    official = score_run(items, responses, verdicts, protocol="official", reps=0).official.chat
    assert official.categories["sound"].value is None
    assert official.average.categories_present == ["speech"] and official.average.partial is True
    assert official.average.value == pytest.approx(8.0)


def test_run_folder_summary_marks_partial_averages(tmp_path):
    from airbench_nb.manifests import write_manifest, write_records
    from airbench_nb.scoring import score_run_folder

    items, responses, verdicts = foundation_run()
    speech_only = [i for i in items if i.category == "speech"]
    write_manifest(tmp_path / "foundation.jsonl", speech_only)
    write_records(tmp_path / "responses" / "m" / "foundation.jsonl", responses)
    write_records(tmp_path / "verdicts" / "m" / "foundation.rule.jsonl", verdicts)
    summary, _ = score_run_folder(RunFolder(tmp_path, data=tmp_path), reps=0)
    assert list(summary.protocol) == ["official", "strict"]
    assert summary["foundation_partial"].tolist() == [True, True]
    assert "chat_partial" not in summary.columns  # no Chat section at all

    write_manifest(tmp_path / "foundation.jsonl", items)
    summary, _ = score_run_folder(RunFolder(tmp_path, data=tmp_path), reps=0)
    assert summary["foundation_partial"].tolist() == [False, False]


# ------------------------------------------------------------------------------------------------------------
# noise-graded copies


def test_noise_graded_and_rotated_copies_stay_out_of_the_tables():
    items, responses, verdicts = foundation_run()
    g1 = next(i for i in items if i.uid == "g1")
    graded = [
        g1.model_copy(update={"uid": f"g1-snr{snr}", "meta": {"clean_uid": "g1", "snr_db": snr}}) for snr in (-5, 0)
    ]
    rotated = g1.model_copy(update={"uid": "g1-rot1", "meta": {"rotation_of": "g1"}})
    wrong = [Response(uid=i.uid, model=MODEL, text="B") for i in graded]  # g1's answer is A: both wrong
    right = Response(uid="g1-rot1", model=MODEL, text="A")
    extra_verdicts = [_rule_verdict(i, r) for i, r in zip([*graded, rotated], [*wrong, right], strict=True)]
    result = score_run(
        [*items, *graded, rotated], [*responses, *wrong, right], [*verdicts, *extra_verdicts], protocol="both", reps=0
    )
    for name in ("official", "strict"):
        table = getattr(result, name)
        assert table.graded_items.foundation == 2 and table.graded_items.chat == 0
        assert "clean_uid" in table.graded_items.why
        # neither the graded copies nor the rotated copy of g1 (its original is scored) count: d1 has g1 and g2
        assert table.rotated_items.foundation == 1 and "rotation_of" in table.rotated_items.why
        subset = table.foundation.subsets["Speaker_Gender_Recognition_d1"]
        assert (subset.n, subset.correct) == (2, 2)
        assert table.foundation.n_items == len(items)
    # a manifest of rotations alone (as `airbench-nb rotate` writes) is scored as it is
    alone = score_run([rotated], [right], [extra_verdicts[-1]], protocol="strict", reps=0).strict
    assert alone.rotated_items.foundation == 0 and alone.foundation.n_items == 1


def test_a_foundation_section_of_the_same_answers_is_computed_once_and_the_same(monkeypatch):
    """With no failed item the strict section is the official one (computed once and kept); a failure makes them
    differ, and each is computed."""
    import airbench_nb.scoring.aggregate as aggregate

    calls = []
    original = aggregate._foundation_values
    monkeypatch.setattr(aggregate, "_foundation_values", lambda *a, **k: calls.append(a[1]) or original(*a, **k))
    aggregate._FOUNDATION_KEPT.clear()
    items = [_foundation(f"i{k}", "Speaker_Gender_Recognition", "d", GENDER, 0) for k in range(40)]
    responses = [Response(uid=i.uid, model=MODEL, text="A" if k % 5 < 3 else "B") for k, i in enumerate(items)]
    verdicts = [_rule_verdict(i, r) for i, r in zip(items, responses, strict=True)]
    both = score_run(items, responses, verdicts, protocol="both", reps=200)
    assert calls == ["official"]  # one computation: every item has its own clip, no clustered pass
    assert both.official.foundation.model_dump() == both.strict.foundation.model_dump()
    aggregate._FOUNDATION_KEPT.clear()
    alone = score_run(items, responses, verdicts, protocol="strict", reps=200)
    assert alone.strict.foundation.model_dump() == both.strict.foundation.model_dump()
    calls.clear()
    failed = [*responses[:-1], Response(uid=items[-1].uid, model=MODEL, text=None, error="timeout")]
    split = score_run(items, failed, verdicts[:-1], protocol="both", reps=200)
    assert calls == ["official", "strict"]
    assert split.official.foundation.average.n == 39 and split.strict.foundation.average.n == 40
