"""A real LLM judge over the paid API (marked `api`: runs only with OPENAI_API_KEY and AIRBENCH_RUN_API_TESTS=1)."""

import os

import pytest

from airbench_nb.judge.run import judge_responses
from airbench_nb.manifests import read_records
from airbench_nb.records import ChatItem, FoundationItem, Response, Verdict


@pytest.mark.api
def test_real_judge_reads_a_clear_answer_and_scores_both_orders(tmp_path):
    model = os.environ.get("AIRBENCH_API_JUDGE_MODEL", "gpt-4o-mini")
    foundation = FoundationItem(
        uid="f",
        dataset="d",
        audio="a.wav",
        question="What is heard?",
        task="Sound_AQA",
        choices=["a dog barking", "a car horn", "rain", "a bell"],
        answer=1,
    )
    chat = ChatItem(
        uid="c",
        dataset="d",
        audio="a.wav",
        question="What is heard?",
        task="sound_QA",
        reference="A car horn honks twice.",
        meta_info="A car horn honks twice in a quiet street.",
    )
    responses = [
        Response(uid="f", model="m", text="It is clearly the honking of a car's horn."),
        Response(uid="c", model="m", text="Someone honks a car horn two times."),
    ]
    summary = judge_responses(
        f"openai:{model}",
        [foundation, chat],
        responses,
        tmp_path / "v.jsonl",
        foundation_mode="all",
        cache=tmp_path / "cache.sqlite",
        progress=False,
    )
    verdicts = {(v.uid, v.order): v for v in read_records(tmp_path / "v.jsonl", Verdict)}
    assert verdicts[("f", "single")].choice == 1
    for order in ("reference_first", "hypothesis_first"):
        assert verdicts[("c", order)].score_hypothesis is not None, verdicts[("c", order)].raw
    assert summary.usage["requests_sent"] == 3
