"""Judge repeats (issue 34, part 4): R judgements per (item, order), each pending and cached on its own."""

from __future__ import annotations

import pytest

from airbench_nb.api_client import ChatRequest
from airbench_nb.api_client.cache import ResponseCache
from airbench_nb.judge.run import judge_responses
from airbench_nb.manifests import read_records
from airbench_nb.records import Response, Verdict
from airbench_nb.run_records import current_verdicts
from airbench_nb.scoring import score_run
from tests.openai_server import JudgeServer
from tests.test_judge import _items, _responses


@pytest.fixture
def server():
    with JudgeServer() as srv:
        yield srv


def test_three_repeats_per_item_and_order_each_cached_on_its_own(server, tmp_path):
    _, chat = _items()
    responses = [r for r in _responses([], chat) if r.uid.startswith("c")]
    spec = f"openai:gpt-4-0125-preview@{server.base_url}"
    cache = tmp_path / "judge.sqlite"
    out = tmp_path / "v.jsonl"
    summary = judge_responses(spec, chat, responses, out, cache=cache, progress=False, repeats=3)
    verdicts = read_records(out, Verdict)
    keys = [(v.uid, v.order, v.repeat) for v in verdicts]
    assert len(keys) == len(set(keys)) == 4 * 2 * 3
    assert {v.repeat for v in verdicts} == {None, 1, 2}
    assert summary.repeats == 3 and not summary.deterministic and summary.written == 24
    # every repeat reached the server (nothing reused from the cache): 24 tasks, verbatim and fenced prompts each
    assert server.seen.chat_requests == 2 * 24
    assert not any(v.cached for v in verdicts)
    assert max(server.seen.attempts.values()) == 3  # each prompt asked once per repeat
    assert len(ResponseCache(cache)) == 2 * 24  # one cache entry per (prompt, repeat)
    # a rerun asks nothing; the same cache into a new file sends nothing either
    again = judge_responses(spec, chat, responses, out, cache=cache, progress=False, repeats=3)
    assert again.written == 0 and again.skipped_existing == 24 and server.seen.chat_requests == 48
    fresh = judge_responses(spec, chat, responses, tmp_path / "v2.jsonl", cache=cache, progress=False, repeats=3)
    assert fresh.written == 24 and server.seen.chat_requests == 48 and fresh.usage["cache_hits"] == 48
    # asking for more repeats asks only the new one
    more = judge_responses(spec, chat, responses, out, cache=cache, progress=False, repeats=4)
    assert more.written == 8 and more.skipped_existing == 24 and server.seen.chat_requests == 48 + 16
    assert {v.repeat for v in read_records(out, Verdict)} == {None, 1, 2, 3}


def test_a_run_without_repeats_keeps_its_cache_keys(server, tmp_path):
    _, chat = _items()
    responses = [r for r in _responses([], chat) if r.uid.startswith("c")]
    spec = f"openai:judge-mini@{server.base_url}"
    cache = tmp_path / "judge.sqlite"
    judge_responses(spec, chat, responses, tmp_path / "a.jsonl", cache=cache, progress=False)
    sent = server.seen.chat_requests
    # the first judgement of a repeated run hits the cache of the run without repeats; only repeat 1 is asked
    judge_responses(spec, chat, responses, tmp_path / "b.jsonl", cache=cache, progress=False, repeats=2)
    assert server.seen.chat_requests == 2 * sent
    request = ChatRequest("m", [{"role": "user", "content": "x"}], {"temperature": 0.0})
    first = ChatRequest("m", [{"role": "user", "content": "x"}], {"temperature": 0.0}, repeat=None)
    again = ChatRequest("m", [{"role": "user", "content": "x"}], {"temperature": 0.0}, repeat=1)
    assert request.key() == first.key() != again.key()
    assert again.body() == request.body()  # the repeat is not sent


def test_a_deterministic_judge_is_judged_once_whatever_the_repeats(tmp_path):
    foundation, _ = _items()
    responses = [r for r in _responses(foundation, []) if r.uid.startswith("f")]
    out = tmp_path / "rule.jsonl"
    summary = judge_responses("rule", foundation, responses, out, progress=False, repeats=3)
    verdicts = read_records(out, Verdict)
    assert summary.deterministic and summary.repeats == 1
    assert len(verdicts) == len(foundation) and {v.repeat for v in verdicts} == {None}
    again = judge_responses("rule", foundation, responses, out, progress=False, repeats=3)
    assert again.written == 0 and again.tasks == len(foundation)


def test_repeats_below_one_are_refused(tmp_path):
    foundation, _ = _items()
    with pytest.raises(ValueError, match="repeats must be a whole number >= 1"):
        judge_responses("rule", foundation, [], tmp_path / "v.jsonl", progress=False, repeats=0)
    assert not (tmp_path / "v.jsonl").exists()
    with pytest.raises(ValueError, match="repeat must be None"):
        Verdict(uid="a", model="m", judge="j", repeat=0)


def test_scores_read_the_first_judgement_only(tmp_path):
    _, chat = _items()
    responses = [Response(uid=i.uid, model="m", text="an answer") for i in chat]

    def verdict(uid, order, score, repeat=None):
        return Verdict(
            uid=uid, model="m", judge="j", order=order, score_reference=8, score_hypothesis=score, repeat=repeat
        )

    first = [verdict(i.uid, o, 6) for i in chat for o in ("reference_first", "hypothesis_first")]
    repeats = [verdict(i.uid, o, 2, r) for i in chat for o in ("reference_first", "hypothesis_first") for r in (1, 2)]
    alone = score_run(chat, responses, first, reps=50).as_dict()
    with_repeats = score_run(chat, responses, [*first, *repeats], reps=50).as_dict()
    assert alone == with_repeats
    kept, counts = current_verdicts([*first, *repeats], {r.uid: r for r in responses})
    assert len(kept) == len(first) and counts["verdicts"] == 0
    every, _ = current_verdicts([*first, *repeats], {r.uid: r for r in responses}, repeats=True)
    assert len(every) == len(first) + len(repeats)
