"""Judges: rule, proxy, and an LLM judge through the shared client against a local OpenAI-compatible server."""

from __future__ import annotations

import re
from typing import Any

import pytest

from airbench_nb.judge.run import (
    JudgeSpecError,
    chat_judge_messages,
    judge_responses,
    parse_judge_letter,
    parse_judge_spec,
)
from airbench_nb.manifests import read_manifest, read_records
from airbench_nb.records import ChatItem, FoundationItem, Response, Verdict
from tests.openai_server import Fault, OpenAITestServer


class JudgeServer(OpenAITestServer):
    """Answers like a judge: a letter for Foundation prompts, two scores for Chat prompts.

    Foundation: the option whose text the [Answer] contains, else 'none'. Chat: 9 for an answer that starts with
    'REF', 4 otherwise, in the order the answers appear; answers containing 'UNPARSEABLE' get a reply without
    scores, and 'LABELLED' gets the 'Assistant 1: x / Assistant 2: y' shape.
    """

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = super().answer(body)
        text = body["messages"][-1]["content"]
        if "[Options]" in text:
            options = re.findall(r"^([A-D])\. (.+)$", text.split("[Options]")[1].split("[Answer]")[0], re.M)
            answer = text.split("[Answer]\n")[1].split("\n\n")[0].lower()
            words = {
                letter: [w for w in option.lower().split() if w not in ("a", "an", "the")] for letter, option in options
            }
            hits = [letter for letter, ws in words.items() if all(w in answer for w in ws)]
            content = hits[0] if len(hits) == 1 else "none"
        else:
            answers = re.findall(r"\[The Start of Assistant \ds Answer\]\n(.*?)\n\[The End", text, re.S)
            scores = [9 if a.startswith("REF") else 4 for a in answers]
            if any("UNPARSEABLE" in a for a in answers):
                content = "Both answers are fine."
            elif any("LABELLED" in a for a in answers):
                content = f"Assistant 1: {scores[0]}\nAssistant 2: {scores[1]}"
            else:
                content = f"{scores[0]} {scores[1]}"
        reply["choices"][0]["message"]["content"] = content
        return reply


@pytest.fixture
def server():
    with JudgeServer() as srv:
        yield srv


def _items():
    foundation = [
        FoundationItem(
            uid=f"f{i}",
            dataset="d",
            audio="a.wav",
            question="What is it?",
            task="Sound_AQA",
            choices=["a dog barking", "a car horn", "rain falling", "a bell ringing"],
            answer=i % 4,
        )
        for i in range(6)
    ]
    chat = [
        ChatItem(
            uid=f"c{i}",
            dataset="d",
            audio="a.wav",
            question="Describe it.",
            task="sound_QA",
            reference="REF a dog barks twice",
            meta_info="A dog barks twice over rain.",
        )
        for i in range(4)
    ]
    return foundation, chat


def _responses(foundation, chat, model="m"):
    texts = {
        "f0": "A",  # rule reads it
        "f1": "I hear something like a car horn honking, I believe",  # rule reads the option text
        "f2": "It sounds wet, like rain falling outside, or maybe a dog barking?",  # several: rule abstains
        "f3": "It's the bell, ringing.",  # rule: no option text as such -> LLM
        "f4": "I cannot tell.",  # rule abstains; LLM says none
    }
    out = [Response(uid=i.uid, model=model, text=texts[i.uid]) for i in foundation if i.uid in texts]
    out.append(Response(uid="f5", model=model, error="audio missing: a.wav"))
    chat_texts = {"c0": "A dog barking, twice.", "c1": "LABELLED: a dog", "c2": "UNPARSEABLE", "c3": "REF copy"}
    out += [Response(uid=i.uid, model=model, text=chat_texts[i.uid]) for i in chat]
    return out


def test_judge_specs():
    assert parse_judge_spec("rule") == "rule" and parse_judge_spec("openai:gpt-4o@http://x/v1")
    for bad in ("gpt4", "openai:", "llm"):
        with pytest.raises(JudgeSpecError):
            parse_judge_spec(bad)


def test_parse_judge_letter():
    assert parse_judge_letter("B", 4) == (1, None)
    assert parse_judge_letter("(c).", 4) == (2, None)
    assert parse_judge_letter("Option D", 4) == (3, None)
    assert parse_judge_letter("none", 4) == (None, None)
    assert parse_judge_letter("D", 2)[1].startswith("judge named option D")
    assert parse_judge_letter("I think so", 4)[0] is None


def test_rule_judge_counts_abstentions_and_errors(tmp_path):
    foundation, chat = _items()
    summary = judge_responses(
        "rule", [*foundation, *chat], _responses(foundation, chat), tmp_path / "v.jsonl", progress=False
    )
    verdicts = {v.uid: v for v in read_records(tmp_path / "v.jsonl", Verdict)}
    assert set(verdicts) == {f"f{i}" for i in range(6)}  # the rule judge does not score Chat
    assert verdicts["f0"].choice == 0 and verdicts["f0"].correct is True
    assert verdicts["f1"].choice == 1 and verdicts["f1"].correct is True
    assert verdicts["f2"].choice is None and "rule abstained" in verdicts["f2"].parse_error
    assert verdicts["f5"].parse_error.startswith("no response: audio missing")
    assert summary.parse_failures == 4 and summary.written == 6


def test_llm_judge_asks_only_for_abstentions_then_caches(server, tmp_path):
    foundation, chat = _items()
    responses = _responses(foundation, chat)
    cache = tmp_path / "judge.sqlite"
    spec = f"openai:judge-mini@{server.base_url}"
    summary = judge_responses(spec, [*foundation, *chat], responses, tmp_path / "v.jsonl", cache=cache, progress=False)
    verdicts = read_records(tmp_path / "v.jsonl", Verdict)
    keys = [(v.uid, v.order) for v in verdicts]
    assert len(keys) == len(set(keys)) == 6 + 2 * 4
    by = {(v.uid, v.order): v for v in verdicts}
    # Foundation: rule for f0/f1, LLM for f2 (several options -> 'none'), f3 (bell -> D) and f4 ('none')
    assert by[("f3", "single")].choice == 3 and by[("f3", "single")].correct is True
    assert by[("f4", "single")].choice is None and by[("f4", "single")].correct is False
    assert by[("f0", "single")].raw.startswith("rule:")
    # Chat in both orders: the reference is recognised in either position
    for order in ("reference_first", "hypothesis_first"):
        assert (by[("c0", order)].score_reference, by[("c0", order)].score_hypothesis) == (9, 4)
        assert (by[("c1", order)].score_reference, by[("c1", order)].score_hypothesis) == (9, 4)  # labelled shape
        assert by[("c3", order)].score_hypothesis == 9
        assert by[("c2", order)].score_hypothesis is None and by[("c2", order)].parse_error
    sent = server.seen.chat_requests
    assert sent == 3 + 2 * 4
    assert summary.usage["requests_sent"] == sent and summary.parse_failures >= 3
    # a rerun into a new file with the same cache sends nothing; into the same file it skips everything
    again = judge_responses(spec, [*foundation, *chat], responses, tmp_path / "v2.jsonl", cache=cache, progress=False)
    assert server.seen.chat_requests == sent and again.usage["cache_hits"] == 3 + 2 * 4

    def reading(v):
        return v.uid, v.order, v.choice, v.correct, v.score_reference, v.score_hypothesis, v.parse_error

    second = read_records(tmp_path / "v2.jsonl", Verdict)
    assert [reading(v) for v in second] == [reading(v) for v in verdicts]
    assert all(v.cached for v in second if not (v.raw or "").startswith("rule:") and v.raw is not None)
    resumed = judge_responses(spec, [*foundation, *chat], responses, tmp_path / "v.jsonl", cache=cache, progress=False)
    assert resumed.written == 0 and resumed.skipped_existing == 14


def test_judge_call_failure_is_an_explicit_verdict(server, tmp_path):
    foundation, chat = _items()
    server.plan["REF a dog barks twice"] = [Fault("400")] * 10
    summary = judge_responses(
        f"openai:judge-mini@{server.base_url}", chat, _responses(foundation, chat), tmp_path / "v.jsonl", progress=False
    )
    verdicts = read_records(tmp_path / "v.jsonl", Verdict)
    assert len(verdicts) == 8 and all(v.parse_error.startswith("judge call failed") for v in verdicts)
    assert summary.failure_kinds == {"judge call failed": 8}


def test_dry_run_sends_and_writes_nothing(server, tmp_path):
    foundation, chat = _items()
    summary = judge_responses(
        f"openai:judge-mini@{server.base_url}",
        [*foundation, *chat],
        _responses(foundation, chat),
        tmp_path / "v.jsonl",
        dry_run=True,
        progress=False,
    )
    assert "11" in summary.dry_run and server.seen.chat_requests == 0
    assert not (tmp_path / "v.jsonl").exists() or not (tmp_path / "v.jsonl").read_text()


def test_batch_api_judging(server, tmp_path):
    foundation, chat = _items()
    judge_responses(
        f"openai:judge-mini@{server.base_url}",
        chat,
        _responses(foundation, chat),
        tmp_path / "v.jsonl",
        cache=tmp_path / "c.sqlite",
        batch_api=True,
        batch_poll_s=0.05,
        progress=False,
    )
    verdicts = {(v.uid, v.order): v for v in read_records(tmp_path / "v.jsonl", Verdict)}
    assert verdicts[("c0", "hypothesis_first")].score_hypothesis == 4 and server.seen.chat_requests == 0
    assert list(tmp_path.glob("v.batch-requests-*.jsonl"))  # the requests file sits next to the verdicts


def test_chat_judge_prompt_orders():
    _, chat = _items()
    first = chat_judge_messages(chat[0], "HYP", "reference_first")[0]["content"]
    second = chat_judge_messages(chat[0], "HYP", "hypothesis_first")[0]["content"]
    assert first.index("REF a dog") < first.index("HYP") and second.index("HYP") < second.index("REF a dog")
    assert "[Detailed Audio Description]\nA dog barks twice over rain.\n[Question]" in first
    assert "helpfulness, relevance, accuracy, and comprehensiveness" in first


def test_oracle_scores_full_marks_once_judged(imported, tmp_path):
    """baseline:oracle through the runner, the rule judge and the proxy: 100% of answered Foundation items."""
    from airbench_nb.models import load_model
    from airbench_nb.runner import run_model

    root, out, _, _ = imported
    items = [*read_manifest(out / "foundation.jsonl"), *read_manifest(out / "chat.jsonl")]
    run_model(load_model("baseline:oracle"), items, root, tmp_path / "r.jsonl", progress=False)
    responses = read_records(tmp_path / "r.jsonl", Response)
    judge_responses("rule", items, responses, tmp_path / "v.jsonl", progress=False)
    judge_responses("proxy", items, responses, tmp_path / "v.jsonl", progress=False)
    verdicts = read_records(tmp_path / "v.jsonl", Verdict)
    answered = [v for v in verdicts if v.order == "single" and v.parse_error is None]
    assert len(answered) == 6 and all(v.correct for v in answered)
    proxy = [v for v in verdicts if v.judge == "proxy"]
    assert len(proxy) == 2 * 3 and all(v.score_hypothesis == v.score_reference for v in proxy)
    assert all("proxy" in v.raw for v in proxy)
    # the items with missing, empty or corrupt audio are data defects: left out of both protocols and counted
    from airbench_nb.scoring import score_run

    result = score_run(items, responses, verdicts, protocol="both", reps=0)
    for protocol in ("official", "strict"):
        assert result[protocol]["foundation"]["average"]["value"] == 1.0
        assert result[protocol]["unusable_items"]["foundation"] == 3
    assert result["strict"]["judges"]["chat_label"].startswith("proxy (sentence-embedding")


def test_proxy_prefers_the_right_answer(tmp_path):
    _, chat = _items()
    item = chat[0]
    responses = [
        Response(uid=item.uid, model="good", text="A dog is barking two times."),
        Response(uid=item.uid, model="bad", text="The stock market fell sharply today."),
    ]
    judge_responses("proxy", [item], responses, tmp_path / "v.jsonl", progress=False)
    scores = {v.model: v.score_hypothesis for v in read_records(tmp_path / "v.jsonl", Verdict)}
    assert scores["good"] > scores["bad"] and 1 <= scores["bad"] <= 10 and scores["good"] <= 10


def test_local_transformers_judge(tmp_path):
    """hf:<path> judges with a local chat model (a tiny random one here: its replies are noise, counted as such)."""
    from airbench_nb.models.tiny import build_tiny_chat_lm

    path = build_tiny_chat_lm(tmp_path / "judge-lm")
    foundation, chat = _items()
    responses = _responses(foundation, chat)
    summary = judge_responses(f"hf:{path}", [*foundation, *chat], responses, tmp_path / "v.jsonl", progress=False)
    verdicts = read_records(tmp_path / "v.jsonl", Verdict)
    assert len(verdicts) == 6 + 2 * 4 and summary.written == 14
    asked = [v for v in verdicts if v.raw is not None and not v.raw.startswith("rule:")]
    assert len(asked) == 3 + 2 * 4  # the LLM saw the rule's abstentions and every Chat order
    for v in asked:  # random weights: either a reading or an explicit parse error, never a silent guess
        read = v.choice is not None or v.score_hypothesis is not None or v.correct is False
        assert read != (v.parse_error is not None), v
