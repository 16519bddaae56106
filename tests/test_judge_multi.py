"""Judging multi-clip Foundation items and multi-turn Chat items (issue 14): turn by turn, both orders, resumable."""

from __future__ import annotations

import pytest

from airbench_nb.judge.run import (
    CHAT_EARLIER_QUESTIONS_TEMPLATE,
    chat_judge_messages,
    chat_turn_question,
    judge_responses,
)
from airbench_nb.manifests import read_records
from airbench_nb.prompts import CHAT_JUDGE_TEMPLATE
from airbench_nb.records import ChatItem, ChatTurn, FoundationItem, Response, Verdict
from tests.test_judge import JudgeServer

TURNS = [
    ChatTurn(question="What animal do you hear?", reference="REF a dog"),
    ChatTurn(question="How many times does it bark?", reference="REF twice"),
    ChatTurn(question="And what is falling behind it?", reference="REF rain"),
]


def multi_items() -> list[FoundationItem | ChatItem]:
    """A one-turn Chat item, a three-turn one, a multi-clip Foundation item and a one-clip one."""
    return [
        ChatItem(
            uid="c0",
            dataset="d",
            audio="a.wav",
            question="Describe it.",
            task="sound_QA",
            reference="REF a dog barks twice",
            meta_info="A dog barks twice over rain.",
        ),
        ChatItem(
            uid="m0",
            dataset="d",
            audio="mix.wav",
            task="kit_followup_QA",
            turns=[t.model_dump() for t in TURNS],  # ChatTurn objects do not fill question/reference
            meta_info="A dog barks twice over rain.",
        ),
        FoundationItem(
            uid="k0",
            dataset="synthetic",
            audios=["p1.wav", "p2.wav"],
            question="Which clip has the higher pitch?",
            task="kit_pitch_compare",
            choices=["the first clip", "the second clip"],
            answer=1,
        ),
        FoundationItem(
            uid="f0",
            dataset="d",
            audio="a.wav",
            question="What is it?",
            task="Sound_AQA",
            choices=["a dog barking", "a car horn"],
            answer=0,
        ),
    ]


def multi_responses() -> list[Response]:
    """Model ``full`` answers every turn (the second like the reference); ``broke`` fails on the third turn."""
    out = []
    for model in ("full", "broke"):
        out.append(Response(uid="c0", model=model, text=f"A dog ({model})."))  # distinct prompts: no cache hit
        out.append(Response(uid="k0", model=model, text="The second clip has the higher pitch."))
        out.append(Response(uid="f0", model=model, text="A"))
    out.append(Response(uid="m0", model="full", text="a cat", turns=["a cat", "REF twice, I think", "snow"]))
    broke = Response(uid="m0", model="broke", text="a dog", turns=["a dog", "REF two times"], error="turn 3: timeout")
    out.append(broke)
    return out


@pytest.fixture
def server():
    with JudgeServer() as srv:
        yield srv


def test_turn_question_keeps_turn_one_as_airbench_and_adds_earlier_questions():
    item = multi_items()[1]
    assert chat_turn_question(item, 0) == item.question == TURNS[0].question
    later = chat_turn_question(item, 2)
    assert later == CHAT_EARLIER_QUESTIONS_TEMPLATE.format(
        earlier=f"1. {TURNS[0].question}\n2. {TURNS[1].question}", question=TURNS[2].question
    )
    text = chat_judge_messages(item, "rain", "reference_first", turn=2)[0]["content"]
    assert "REF rain" in text and "REF twice" not in text and "REF a dog" not in text  # earlier references hidden
    # a one-turn item's prompt is AIR-Bench's, unchanged
    one = multi_items()[0]
    assert chat_judge_messages(one, "x", "hypothesis_first")[0]["content"] == CHAT_JUDGE_TEMPLATE.format(
        meta_info=one.meta_info, question=one.question, answer_1="x", answer_2=one.reference
    )


def test_llm_judge_judges_each_turn_in_both_orders_then_resumes(server, tmp_path):
    items, responses = multi_items(), multi_responses()
    spec = f"openai:judge-mini@{server.base_url}"
    out = tmp_path / "v.jsonl"
    summary = judge_responses(spec, items, responses, out, cache=tmp_path / "c.sqlite", progress=False)
    # full: 2 (c0) + 3 turns x 2 orders; broke: 2 + 2 answered turns x 2 (its third turn gets no call);
    # Foundation: the rule reads both answers, no call; each task is asked with the verbatim and the fenced prompt
    assert server.seen.chat_requests == 2 * ((2 + 3 * 2) + (2 + 2 * 2))
    verdicts = read_records(out, Verdict)
    keys = [(v.model, v.uid, v.order, v.turn) for v in verdicts]
    assert len(keys) == len(set(keys)) == summary.tasks == 2 * (1 + 1 + 2 + 3 * 2)
    by = {(v.model, v.uid, v.order, v.turn): v for v in verdicts}
    for model in ("full", "broke"):
        for order in ("reference_first", "hypothesis_first"):
            assert by[(model, "c0", order, None)].score_hypothesis == 4  # one-turn: turn None, as before
            assert by[(model, "m0", order, 0)].score_reference == 9
            assert by[(model, "m0", order, 1)].score_hypothesis == 9  # the answer to turn 2 is the reference's
        assert by[(model, "k0", "single", None)].correct is True  # multi-clip: read as usual
    assert by[("full", "m0", "hypothesis_first", 2)].score_hypothesis == 4
    failed = by[("broke", "m0", "reference_first", 2)]
    assert failed.parse_error.startswith("no response: turn 3") and "timeout" in failed.parse_error
    # the turn-2 prompt carries the earlier question, not the earlier answers
    prompts = [b["messages"][-1]["content"] for b in server.seen.bodies]
    turn3 = [p for p in prompts if "Follow-up question: And what is falling" in p]
    assert len(turn3) == 2 * 2 and all("1. What animal" in p and "a cat" not in p for p in turn3)

    # a rerun judges nothing again; a re-answered conversation is judged again, every turn
    sent = server.seen.chat_requests
    again = judge_responses(spec, items, responses, out, cache=tmp_path / "c2.sqlite", progress=False)
    assert again.written == 0 and again.skipped_existing == again.tasks and server.seen.chat_requests == sent
    fixed = Response(uid="m0", model="broke", text="a dog", turns=["a dog", "REF two times", "REF rain, I believe"])
    third = judge_responses(spec, items, [*responses, fixed], out, cache=tmp_path / "c.sqlite", progress=False)
    assert third.stale == 3 * 2 and third.written == 6 and third.asked == 6
    assert server.seen.chat_requests == sent + 2 * 2  # turns 1 and 2 are unchanged: their judge calls come from a cache
    latest = {}
    for v in read_records(out, Verdict):
        latest[(v.model, v.uid, v.order, v.turn)] = v
    assert latest[("broke", "m0", "reference_first", 2)].score_hypothesis == 9
    assert latest[("broke", "m0", "reference_first", 2)].response_hash == fixed.content_hash()


def test_rule_judge_reads_multi_clip_answers(tmp_path):
    items, responses = multi_items(), multi_responses()
    judge_responses("rule", items, responses, tmp_path / "v.jsonl", progress=False)
    verdicts = {(v.model, v.uid): v for v in read_records(tmp_path / "v.jsonl", Verdict)}
    assert {uid for _, uid in verdicts} == {"k0", "f0"}
    assert verdicts[("full", "k0")].choice == 1 and verdicts[("full", "k0")].turn is None


def test_proxy_judges_each_turn(tmp_path):
    items, responses = multi_items(), multi_responses()
    summary = judge_responses("proxy", items, responses, tmp_path / "v.jsonl", progress=False)
    verdicts = read_records(tmp_path / "v.jsonl", Verdict)
    by = {(v.model, v.uid, v.order, v.turn): v for v in verdicts}
    assert summary.tasks == len(verdicts) == 2 * (2 + 3 * 2)
    assert {k[3] for k in by if k[1] == "m0"} == {0, 1, 2} and by[("full", "c0", "reference_first", None)]
    # turn 2's answer repeats its reference: scored higher than the wrong answers of turns 1 and 3
    full = {t: by[("full", "m0", "reference_first", t)].score_hypothesis for t in range(3)}
    assert full[1] > full[0] and full[1] > full[2]
    assert by[("broke", "m0", "hypothesis_first", 2)].score_hypothesis is None
    assert by[("broke", "m0", "hypothesis_first", 2)].parse_error.startswith("no response: turn 3")
    rerun = judge_responses("proxy", items, responses, tmp_path / "v.jsonl", progress=False)
    assert rerun.written == 0 and rerun.skipped_existing == summary.tasks


def test_response_turn_answer_and_failure():
    full, broke = (r for r in multi_responses() if r.uid == "m0")
    assert [full.turn_answer(k) for k in range(3)] == full.turns and full.turn_answer(3) is None
    assert broke.turn_answer(1) == broke.turns[1] and broke.turn_answer(2) is None
    assert broke.turn_failure(2) == f"no response: turn 3 not answered ({broke.error})"
    one = Response(uid="c0", model="m", text="A dog.")
    assert one.turn_answer(None) == one.turn_answer(0) == "A dog."
    failed = Response(uid="c0", model="m", error="timeout")
    assert failed.turn_answer(None) is None and failed.turn_failure(None) == "no response: timeout"
    assert Response(uid="c0", model="m", turns=["x"]).turn_failure(1).endswith("(the response holds no answer to it)")
