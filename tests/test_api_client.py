"""The OpenAI-compatible client against a real local server: faults, retries, cache, costs, dry runs, batches."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from airbench_nb.api_client import (
    AUDIO_TOKENS_PER_SECOND,
    APIClient,
    ChatRequest,
    FatalAPIError,
    MissingAPIKeyError,
    ModelPrice,
    PriceTable,
)
from airbench_nb.models.openai_api import wav_base64
from tests.openai_server import Fault, OpenAITestServer

FAKE_KEY = "sk-test-DO-NOT-LEAK-0123456789abcdef"


@pytest.fixture
def server():
    with OpenAITestServer() as srv:
        yield srv


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    return FAKE_KEY


def chat(text: str, model: str = "judge-mini", **params) -> ChatRequest:
    return ChatRequest(model, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}], params)


def fast_client(server: OpenAITestServer, **kwargs) -> APIClient:
    options = {"timeout_s": 5.0, "backoff_initial_s": 0.05, "backoff_max_s": 0.2, "concurrency": 8}
    return APIClient(base_url=server.base_url, **{**options, **kwargs})


def test_faults_every_item_ends_once_with_text_or_error(server, fake_key, tmp_path):
    server.plan = {
        "item-01": [Fault("429", retry_after="1")],
        "item-02": [Fault("500"), Fault("503", retry_after_ms="200")],
        "item-03": [Fault("delay", delay_s=1.5)],
        "item-04": [Fault("not_json")],
        "item-05": [Fault("no_choices")],
        "item-06": [Fault("empty")],
        "item-07": [Fault("400")],
        "item-08": [Fault("500")] * 10,
    }
    texts = [f"item-{i:02d}" for i in range(1, 13)]
    # A 0.5 s timeout: the delayed item times out once; a normal answer takes a few ms even on a busy machine.
    client = fast_client(server, max_retries=2, timeout_s=0.5, cache_path=tmp_path / "cache.sqlite")
    t0 = time.perf_counter()
    results = client.run_sync([chat(t) for t in texts])
    elapsed = time.perf_counter() - t0

    assert len(results) == len(texts)
    assert len({r.key for r in results}) == len(texts)  # none twice, order kept
    for text, result in zip(texts, results, strict=True):
        assert (result.text is None) != (result.error is None), (text, result)
        if text not in {"item-07", "item-08"}:
            assert result.ok and result.text == f"judge-mini heard no audio: {text}", (text, result)
    assert "400" in results[6].error and results[6].attempts == 1 and server.seen.attempts["item-07"] == 1
    assert "500" in results[7].error and "after 3 attempts" in results[7].error
    assert server.seen.attempts["item-08"] == 3
    # Retry-After: 1 was honoured (the item waited at least that long), and retry-after-ms too.
    assert results[0].latency_s >= 1.0 and results[0].attempts == 2 and elapsed >= 1.0
    assert results[1].latency_s >= 0.2 and results[1].attempts == 3
    assert results[2].attempts == 2  # timed out once, then answered
    # Each answered item was answered once by the server (the timed-out one may also have a late, unread answer).
    for text in texts:
        if text not in {"item-03", "item-07", "item-08"}:
            assert server.seen.answered[text] == 1, text
    expected_retries = 1 + 2 + 1 + 1 + 1 + 1 + 0 + 2
    usage = client.usage
    assert usage.retries == expected_retries
    assert usage.requests_sent == server.seen.chat_requests == len(texts) + expected_retries
    assert usage.calls == len(texts) and usage.failures == 2 and usage.cache_hits == 0
    assert usage.input_tokens > 0 and usage.output_tokens > 0

    # Rerun: answers come from the cache; only the two failures are asked again (and fail the same way).
    server.reset()
    again = fast_client(server, max_retries=2, cache_path=tmp_path / "cache.sqlite")
    reruns = again.run_sync([chat(t) for t in texts])
    assert server.seen.chat_requests == 1 + 3
    assert [r.text for r in reruns] == [r.text for r in results]
    assert all(r.cached for i, r in enumerate(reruns) if i not in (6, 7))
    assert again.usage.cache_hits == len(texts) - 2


def test_cached_rerun_sends_zero_requests_and_no_key_leaks(server, fake_key, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    cache = tmp_path / "judge.sqlite"
    requests = [chat(f"question {i}", temperature=0.0, max_tokens=16) for i in range(6)]
    first = fast_client(server, cache_path=cache, api_key_env="OPENAI_API_KEY")  # named: a local server gets it
    results = first.run_sync(requests)
    assert all(r.ok for r in results)
    assert server.seen.authorization == {f"Bearer {FAKE_KEY}"}  # the key really went to the server
    server.plan = {"echo-key": [Fault("401")]}
    with pytest.raises(FatalAPIError) as caught:  # a 401 stops the run, not retried
        first.run_sync([chat("echo-key")])
    message = str(caught.value)
    assert message.startswith("401 Unauthorized") and server.seen.attempts["echo-key"] == 1
    assert FAKE_KEY not in message and "***" in message  # the server quoted the key; the error does not

    server.reset()
    second = fast_client(server, cache_path=cache)
    cached = second.run_sync(requests)
    assert server.seen.chat_requests == 0
    assert [(r.text, r.input_tokens, r.output_tokens) for r in cached] == [
        (r.text, r.input_tokens, r.output_tokens) for r in results
    ]
    assert all(r.cached and r.cost_usd == 0.0 and r.attempts == 0 for r in cached)
    assert second.usage.cache_hits == len(requests) and second.usage.requests_sent == 0
    first.close()
    second.close()

    for path in tmp_path.glob("judge.sqlite*"):
        assert FAKE_KEY.encode() not in path.read_bytes(), path
    assert FAKE_KEY not in caplog.text
    assert FAKE_KEY not in repr(first) + str(first.usage.as_dict())


def test_identical_requests_are_sent_once(server):
    client = fast_client(server)
    results = client.run_sync([chat("same"), chat("other"), chat("same")])
    assert [r.text for r in results] == ["judge-mini heard no audio: " + t for t in ("same", "other", "same")]
    assert server.seen.attempts["same"] == 1 and results[0] is not results[2]


def test_client_errors_are_not_retried(server):
    client = APIClient(base_url=server.base_url.replace("/v1", "/nowhere"), backoff_initial_s=0.05)
    [result] = client.run_sync([chat("lost")])
    assert result.error is not None and "404" in result.error and result.attempts == 1
    assert client.usage.retries == 0 and client.usage.failures == 1


def test_remote_endpoint_without_key_is_an_explicit_error(monkeypatch):
    monkeypatch.delenv("MY_JUDGE_KEY", raising=False)
    # The key is checked before any connection is opened: nothing is sent to this (documentation-only) address.
    client = APIClient(base_url="http://192.0.2.1:9/v1", api_key_env="MY_JUDGE_KEY", max_retries=0, timeout_s=0.5)
    with pytest.raises(MissingAPIKeyError, match="MY_JUDGE_KEY"):
        client.run_sync([chat("x")])


def test_local_server_needs_no_key(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    [result] = fast_client(server).run_sync([chat("hello")])
    assert result.ok and server.seen.authorization == {"Bearer EMPTY"}


def test_request_key_is_canonical():
    a = ChatRequest("m", [{"role": "user", "content": "hi"}], {"temperature": 0.0, "max_tokens": 8})
    b = ChatRequest("m", [{"content": "hi", "role": "user"}], {"max_tokens": 8, "temperature": 0.0, "seed": None})
    assert a.key() == b.key() and len(a.key()) == 64
    assert a.key() != ChatRequest("m", a.messages, {"temperature": 0.5, "max_tokens": 8}).key()
    assert a.key() != ChatRequest("m2", a.messages, a.params).key()
    # Long strings (base64 audio) enter the key as their sha256: a change at the very end still changes the key.
    audio = wav_base64(np.zeros(16000 * 30, dtype=np.float32), 16000)

    def with_audio(data: str) -> ChatRequest:
        return ChatRequest("m", [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": data}}]}])

    assert with_audio(audio).key() == with_audio(audio).key()
    assert with_audio(audio).key() != with_audio(audio[:-4] + "AAAB").key()


def test_price_table():
    table = PriceTable(
        {"gpt-4o": (2.5, 10.0), "gpt-4o-mini": ModelPrice(0.15, 0.6), "local": {"input": 0, "output": 0}}
    )
    assert table.cost("gpt-4o", 1_000_000, 100_000) == pytest.approx(3.5)
    assert table.cost("gpt-4o-2024-08-06", 1_000_000, 0) == pytest.approx(2.5)  # longest prefix
    assert table.cost("gpt-4o-mini-2024-07-18", 1_000_000, 0) == pytest.approx(0.15)
    assert table.cost("gpt-4o", 1_000_000, 100_000, batch=True) == pytest.approx(1.75)
    assert table.cost("local", 10, 10) == 0.0
    assert table.cost("claude", 10, 10) is None  # unknown is None, not free
    assert table.cost("gpt-4o", None, 10) is None


def test_costs_are_accounted(server):
    prices = {"judge-mini": (1.0, 2.0)}
    client = fast_client(server, prices=prices)
    results = client.run_sync([chat("a b c"), chat("d", model="unpriced-model")])
    priced, unpriced = results
    assert priced.cost_usd == pytest.approx((priced.input_tokens * 1.0 + priced.output_tokens * 2.0) / 1e6)
    assert unpriced.ok and unpriced.cost_usd is None
    assert client.usage.cost_usd == pytest.approx(priced.cost_usd) and client.usage.unpriced_calls == 1


def test_dry_run_estimate_counts_and_sends_nothing(server, tmp_path, capsys):
    cache = tmp_path / "c.sqlite"
    seconds = 2.0
    audio = wav_base64(np.zeros(int(16000 * seconds), dtype=np.float32), 16000)
    with_audio = ChatRequest(
        "judge-mini",
        [
            {
                "role": "user",
                "content": [
                    {"type": "input_audio", "input_audio": {"data": audio, "format": "wav"}},
                    {"type": "text", "text": "x" * 400},
                ],
            }
        ],
        {"max_tokens": 10},
    )
    texts = [chat("y" * 80, max_tokens=20), chat("z" * 80, max_tokens=20)]
    client = fast_client(server, cache_path=cache, prices={"judge-mini": (1.0, 2.0)})
    client.run_sync(texts[:1])  # one already answered: free in the estimate
    server.reset()

    est = client.dry_run([with_audio, *texts, texts[1]])
    assert server.seen.chat_requests == 0
    assert (est.requests, est.distinct, est.cached, est.to_send) == (4, 3, 1, 2)
    assert est.audio_seconds == pytest.approx(seconds)
    audio_tokens = seconds * AUDIO_TOKENS_PER_SECOND
    expected_in = round(400 / 4 + 4 + audio_tokens) + round(len("Be brief.") / 4 + 80 / 4 + 2 * 4)
    assert est.input_tokens == expected_in
    assert est.output_tokens == 10 + 20
    assert est.cost_usd == pytest.approx((expected_in * 1.0 + 30 * 2.0) / 1e6)
    assert est.unpriced == 0
    assert "2 calls to send" in capsys.readouterr().out
    half = client.estimate([with_audio, *texts], batch=True)
    assert half.cost_usd == pytest.approx(est.cost_usd / 2)
    assert APIClient(base_url=server.base_url).estimate(texts).cost_usd is None  # no price table: unknown


def test_run_sync_inside_a_running_event_loop(server):
    client = fast_client(server)

    async def notebook_cell():  # Jupyter runs cells inside a running loop
        return client.run_sync([chat("from a notebook")])

    [result] = asyncio.run(notebook_cell())
    assert result.ok and result.text.endswith("from a notebook")
    [again] = client.run_sync([chat("and from a script")])  # a fresh loop each time: no closed-loop errors
    assert again.ok


def test_batch_api_round_trip(server, fake_key, tmp_path):
    server.plan = {"bad batch line": [Fault("400")]}
    cache = tmp_path / "batch.sqlite"
    client = fast_client(server, cache_path=cache, prices={"judge-mini": (1.0, 2.0)})
    requests = [chat(f"batch question {i}", max_tokens=8) for i in range(4)] + [chat("bad batch line")]
    [already] = client.run_sync(requests[:1])
    server.reset()

    path = tmp_path / "batch.jsonl"
    assert client.write_batch_file([*requests, requests[2]], path) == 4  # cached and repeated ones left out
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["custom_id"] for line in lines] == [r.key() for r in requests[1:]]
    assert all(line["method"] == "POST" and line["url"] == "/v1/chat/completions" for line in lines)
    assert lines[0]["body"] == {"model": "judge-mini", "messages": requests[1].messages, "max_tokens": 8}

    batch_id = client.submit_batch(path)
    status = client.poll_batch(batch_id, interval_s=0.05, timeout_s=10)
    assert status["status"] == "completed" and server.seen.batch_retrievals >= 2  # polled while in progress
    results = client.collect_batch(batch_id, requests)
    assert server.seen.chat_requests == 0  # all answers came through the batch files
    assert results[0].cached and results[0].text == already.text
    for request, result in zip(requests[1:4], results[1:4], strict=True):
        assert result.ok and result.text == f"judge-mini heard no audio: {request.messages[-1]['content']}"
        assert result.cost_usd == pytest.approx((result.input_tokens + 2 * result.output_tokens) / 1e6 / 2)
    assert results[4].error is not None and "HTTP 400" in results[4].error and batch_id in results[4].error

    # The batch answers are in the cache: a normal run sends only the failed one again.
    rerun = fast_client(server, cache_path=cache).run_sync(requests)
    assert [r.cached for r in rerun] == [True] * 4 + [False]
    assert server.seen.chat_requests == 1


def test_poll_batch_times_out_explicitly(tmp_path):
    slow = OpenAITestServer(batch_polls_before_done=1000)
    with slow:
        client = fast_client(slow)
        path = tmp_path / "b.jsonl"
        client.write_batch_file([chat("q")], path)
        batch_id = client.submit_batch(path)
        with pytest.raises(TimeoutError, match=batch_id):
            client.poll_batch(batch_id, interval_s=0.05, timeout_s=0.2)
        [result] = client.collect_batch(batch_id, [chat("q")])
        assert result.error is not None and "no result" in result.error


def test_retry_after_header_forms():
    from email.utils import format_datetime
    from types import SimpleNamespace

    from airbench_nb.api_client import retry_after_s

    def exc(**headers):
        return SimpleNamespace(response=SimpleNamespace(headers=headers))

    assert retry_after_s(exc(**{"retry-after-ms": "250"})) == pytest.approx(0.25)
    assert retry_after_s(exc(**{"retry-after": "3"})) == 3.0
    soon = datetime.now(UTC) + timedelta(seconds=30)
    assert 25 < retry_after_s(exc(**{"retry-after": format_datetime(soon, usegmt=True)})) <= 30
    assert retry_after_s(exc(**{"retry-after": "soon"})) is None
    assert retry_after_s(ValueError("no response")) is None


def test_one_cache_file_never_shares_answers_between_endpoints(server, tmp_path):
    """Two servers serving the same model name (e.g. two vLLM checkpoints) get their own cache entries."""
    cache = tmp_path / "shared.sqlite"
    with OpenAITestServer() as other:
        first = fast_client(server, cache_path=cache).run_sync([chat("same question")])
        second = fast_client(other, cache_path=cache).run_sync([chat("same question")])
        assert not first[0].cached and not second[0].cached
        assert server.seen.chat_requests == 1 and other.seen.chat_requests == 1
        again = fast_client(other, cache_path=cache).run_sync([chat("same question")])
        assert again[0].cached and other.seen.chat_requests == 1


def test_batch_and_replicas_use_only_the_client_s_public_core():
    """``batch.py`` and ``replicas.py`` drive requests through :class:`APIClient`'s documented methods, never its
    private members (``client._something``), so that the client can change inside without breaking them."""
    import inspect
    import re

    import airbench_nb.api_client.batch as batch
    import airbench_nb.api_client.replicas as replicas

    for module in (batch, replicas):
        source = inspect.getsource(module)
        private = sorted(set(re.findall(r"(?:client|APIClient|front)\._[a-z]\w*", source)))
        assert private == [], f"{module.__name__} uses private members of the client: {private}"
        assert not re.search(r"import[^\n]*\b_[a-z]\w*", source), f"{module.__name__} imports a private name"
    core = ("send", "fatal_error", "call", "sync_client", "async_client", "result_from_body", "from_cache", "store")
    for name in (*core, "account", "scrub", "reset_stop"):
        member = getattr(APIClient, name)
        assert inspect.getdoc(member), f"APIClient.{name} has no docstring"
    assert isinstance(APIClient.redactions, property) and APIClient.redactions.__doc__
