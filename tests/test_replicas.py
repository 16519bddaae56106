"""``openai:<model>@<url1>,<url2>,...``: requests spread over replicas, failover, cool-off, per-replica counts.

Three local fixture servers (``tests/openai_server.py``) stand for three vLLM machines. Nothing here sleeps to
wait for something: held requests and :meth:`OpenAITestServer.wait_for` say when the servers are where a test
wants them, and cool-offs run on a clock the test turns.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from airbench_nb.api_client import APIClient, EndpointError, FatalAPIError, ReplicaPool, parse_openai_replicas
from airbench_nb.cli import app
from airbench_nb.manifests import read_records, write_manifest
from airbench_nb.models import GenerationParams, load_model
from airbench_nb.models.openai_api import OpenAIAudioLM
from airbench_nb.records import FoundationItem, Response
from airbench_nb.runner import REPLICA_COUNTS, infer, run_model
from tests.openai_server import Fault, OpenAITestServer, unused_base_url
from tests.test_models_openai import make_prompt

SR = 16000


@pytest.fixture
def three():
    """Three healthy replicas (a few ms per answer)."""
    with OpenAITestServer(latency_s=0.002) as a, OpenAITestServer(latency_s=0.002) as b:
        with OpenAITestServer(latency_s=0.002) as c:
            yield [a, b, c]


@pytest.fixture
def manifest(tmp_path: Path) -> tuple[Path, list[FoundationItem]]:
    """60 Foundation items with short wavs, written as a manifest whose folder is its data root."""
    (tmp_path / "audio").mkdir()
    items = []
    for i in range(60):
        seconds = 0.05 + 0.005 * (i % 7)
        t = np.arange(int(seconds * SR)) / SR
        sf.write(tmp_path / "audio" / f"u{i:02d}.wav", (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), SR)
        items.append(
            FoundationItem(
                uid=f"u{i:02d}",
                dataset="synthetic",
                audio=f"audio/u{i:02d}.wav",
                task="Speaker_Gender_Recognition",
                question=f"Question {i}: who speaks?",
                choices=["male", "female"],
                answer=i % 2,
            )
        )
    return write_manifest(tmp_path / "foundation.jsonl", items), items


def spec_of(urls: list[str]) -> str:
    return "openai:tiny-audio@" + ",".join(urls)


def check_counts(rows: list[dict]) -> None:
    """Every replica's attempts either succeeded or failed (nothing is in flight after a run)."""
    for row in rows:
        assert row["sent"] == row["succeeded"] + row["failed"], row


# ----------------------------------------------------------------------------------------------- specs


def test_a_list_of_urls_is_checked_entry_by_entry():
    model, urls = parse_openai_replicas("Qwen/Qwen2-Audio-7B-Instruct@http://h1:8000/v1, http://h2:8000/v1/")
    assert model == "Qwen/Qwen2-Audio-7B-Instruct" and urls == ["http://h1:8000/v1", "http://h2:8000/v1"]
    assert parse_openai_replicas("gpt-4o-audio-preview") == ("gpt-4o-audio-preview", [])
    assert parse_openai_replicas("m@http://h1:8000/v1/") == ("m", ["http://h1:8000/v1"])  # as parse_openai_spec

    refused = {
        "m@http://h1/v1,,http://h2/v1": "entry 2 of 3 is empty",
        "m@http://h1/v1,http://h2/v1,": "entry 3 of 3 is empty",
        "m@http://h1:8000/v1,http://H1:8000/v1/": "entry 2 ('http://H1:8000/v1') repeats entry 1",
        "m@http://h1/v1,http://h1:80/v1": "repeats entry 1",
        "m@http://h1/v1,https://bob:hunter2@h2/v1": "entry 2 of 2: base URL 'https://***@h2/v1' holds credentials",
        "m@http://h1/v1,http://h2/v1?api_key=hunter2": "entry 2 of 2: base URL 'http://h2/v1?api_key=***' holds",
        "m@http://h1/v1,h2:8000/v1": "entry 2 of 2: base URL 'h2:8000/v1' must start with http://",
        "@http://h1/v1,http://h2/v1": "no model name",
    }
    for rest, expected in refused.items():
        with pytest.raises(EndpointError) as caught:
            load_model(f"openai:{rest}")
        message = str(caught.value)
        assert expected in message and "\n" not in message and "hunter2" not in message, message


def test_one_url_is_the_client_of_before(three):
    a = three[0]
    model = load_model(f"openai:tiny-audio@{a.base_url}", concurrency=2)
    assert type(model.client) is APIClient and model.base_url == a.base_url and model.replica_stats() == []
    [gen] = model.generate([make_prompt("x", 0.2, "hello")], GenerationParams())
    assert gen.text == "tiny-audio heard 0.200s: hello"


# ----------------------------------------------------------------------------------------------- dispatch


def test_least_outstanding_dispatch_spreads_evenly(three, manifest, tmp_path):
    """With every replica holding its requests, 6 in flight are 2 per replica; released, the load stays even."""
    path, items = manifest
    for server in three:
        server.hold_after = 0  # hold everything until released
    model = load_model(spec_of([s.base_url for s in three]), concurrency=6, batch_size=60)
    outcome: dict = {}
    runner = threading.Thread(
        target=lambda: outcome.update(summary=run_model(model, items, tmp_path, tmp_path / "r.jsonl", progress=False))
    )
    runner.start()
    try:
        for server in three:
            server.wait_for(lambda seen: seen.held >= 2)
        assert [s.seen.in_flight for s in three] == [2, 2, 2]  # 6 slots: least outstanding, ties round robin
    finally:
        for server in three:
            server.release()
        runner.join(timeout=60)
    summary = outcome["summary"]
    assert summary.answered == 60 and summary.errors == 0
    rows = summary.as_dict()["replicas"]
    check_counts(rows)
    sent = [row["sent"] for row in rows]
    assert sum(sent) == 60 and [row["failed"] for row in rows] == [0, 0, 0]
    assert max(sent) - min(sent) <= 12, sent  # equal replicas get about a third each (20)
    assert [s.seen.chat_requests for s in three] == sent


def test_round_robin_among_equal_loads():
    pool = ReplicaPool([unused_base_url() for _ in range(3)])
    picks = [pool._pick(set()).index for _ in range(7)]
    assert picks == [0, 1, 2, 0, 1, 2, 0]  # nothing outstanding: ties go round robin
    pool.replicas[0].outstanding, pool.replicas[1].outstanding, pool.replicas[2].outstanding = 3, 1, 2
    assert pool._pick(set()).index == 1 and pool._pick({1}).index == 2


# ----------------------------------------------------------------------------------------------- failover


def test_a_replica_killed_mid_run_loses_nothing(three, manifest, tmp_path):
    """Replica b answers 5 requests, then holds the next ones and dies with them in flight: they go elsewhere."""
    path, items = manifest
    a, b, c = three
    b.hold_after = 5

    def kill_b() -> None:
        # Once a request is held and the 5 answered ones have been written out (nothing else in flight): the
        # client has its 5 answers, and whatever b holds dies with it.
        b.wait_for(lambda seen: seen.held >= 1 and seen.in_flight == seen.held)
        b.kill()

    killer = threading.Thread(target=kill_b)
    killer.start()
    out = tmp_path / "responses.jsonl"
    summary = infer(
        spec_of([a.base_url, b.base_url, c.base_url]), path, out, concurrency=6, batch_size=20, progress=False
    )
    killer.join(timeout=10)
    assert b.killed and b.seen.dropped >= 1

    responses = read_records(out, Response)
    assert sorted(r.uid for r in responses) == sorted(i.uid for i in items)  # one each: none lost, none twice
    assert all(r.error is None and r.text.startswith("tiny-audio heard") for r in responses)
    assert (summary.answered, summary.errors, summary.failed) == (60, 0, 0)

    rows = summary.as_dict()["replicas"]
    assert [row["url"] for row in rows] == [a.base_url, b.base_url, c.base_url]
    check_counts(rows)
    row_a, row_b, row_c = rows
    assert row_b["succeeded"] == 5 and row_b["failed"] >= b.seen.dropped
    assert row_b["retried_elsewhere"] >= b.seen.dropped and row_b["marked_down"] == 1 and row_b["down"]
    assert row_a["failed"] == row_c["failed"] == 0 and row_a["retried_elsewhere"] == row_c["retried_elsewhere"] == 0
    assert sum(row["succeeded"] for row in rows) == 60
    assert sum(row["retried_elsewhere"] for row in rows) == sum(row["failed"] for row in rows)

    # The requests b held when it died were answered by a or c, once each; no prompt was answered twice.
    dropped = [text for text in b.seen.attempts if b.seen.answered[text] == 0]
    assert len(dropped) == b.seen.dropped
    answered = a.seen.answered + b.seen.answered + c.seen.answered
    assert all(a.seen.answered[t] + c.seen.answered[t] == 1 for t in dropped)
    assert len(answered) == 60 and set(answered.values()) == {1}
    assert "retried_elsewhere" in summary.replica_text() and b.base_url in summary.replica_text()


def test_5xx_is_retried_on_its_replica_then_elsewhere_and_400_nowhere(three):
    a, b, _ = three
    a.plan = {"flaky": [Fault("503"), Fault("503")], "bad": [Fault("400")]}
    b.plan = {"bad": [Fault("400")]}
    pool = ReplicaPool([a.base_url, b.base_url], concurrency=1, max_retries=1, backoff_initial_s=0.001)
    flaky = make_request("flaky one")
    bad = make_request("bad one")
    [first] = pool.run_sync([flaky])  # round robin starts at a: 503, 503 (its one retry), then b
    assert first.ok and first.attempts == 3
    assert (a.seen.attempts["flaky one"], b.seen.attempts["flaky one"]) == (2, 1)
    [second] = pool.run_sync([bad])  # a 400 would be refused anywhere: not sent elsewhere
    assert not second.ok and "400" in second.error
    assert a.seen.attempts["bad one"] + b.seen.attempts["bad one"] == 1
    stats = {s.url: s for s in pool.replica_stats()}
    assert stats[a.base_url].retried_elsewhere == 1 and stats[b.base_url].retried_elsewhere == 0
    assert stats[a.base_url].marked_down == 0  # two failures in a row are below down_after (3)
    check_counts([s.as_dict() for s in stats.values()])


def test_an_attempt_past_its_deadline_goes_elsewhere_at_once(three):
    a, b, _ = three
    a.plan = {"slow": [Fault("delay", delay_s=3.0)]}  # a hangs on this one; the pool's deadline is 0.3 s
    pool = ReplicaPool([a.base_url, b.base_url], concurrency=1, timeout_s=0.3, max_retries=5)
    [result] = pool.run_sync([make_request("slow one")])
    assert result.ok and result.attempts == 2 and result.latency_s < 2.0  # no retry on a: straight to b
    assert (a.seen.attempts["slow one"], b.seen.answered["slow one"]) == (1, 1)
    stats_a, stats_b = pool.replica_stats()
    assert (stats_a.failed, stats_a.retried_elsewhere, stats_b.succeeded) == (1, 1, 1) and not stats_a.down


def make_request(text: str):
    return OpenAIAudioLM(f"tiny-audio@{unused_base_url()}").request(make_prompt("r", 0.1, text), GenerationParams())


def test_a_replica_is_marked_down_then_tried_again_after_its_cool_off():
    clock = [0.0]  # cool-offs on a clock the test turns; one request at a time, so the counts are exact
    with OpenAITestServer() as good, OpenAITestServer(mode="refused") as sick:
        pool = ReplicaPool(
            [sick.base_url, good.base_url], concurrency=1, down_after=3, cool_off_s=30, clock=lambda: clock[0]
        )
        results = pool.run_sync([make_request(f"first {i}") for i in range(12)])
        assert all(r.ok for r in results)
        sick_stats, good_stats = pool.replica_stats()
        assert sick_stats.marked_down == 1 and sick_stats.down and sick_stats.succeeded == 0
        assert sick_stats.failed == sick_stats.sent == 3 and sick_stats.retried_elsewhere == 3
        assert good_stats.succeeded == 12

        sick.mode = None  # it recovers, but is in its cool-off: nothing is sent to it
        clock[0] = 29.0
        pool.run_sync([make_request(f"second {i}") for i in range(4)])
        assert pool.replica_stats()[0].sent == 3 and sick.seen.chat_requests == 0

        clock[0] = 31.0  # cool-off over: one request tries it, it answers, it is back
        results = pool.run_sync([make_request(f"third {i}") for i in range(12)])
        assert all(r.ok for r in results)
        sick_stats, _ = pool.replica_stats()
        assert not sick_stats.down and sick_stats.succeeded >= 1 and sick.seen.chat_requests == sick_stats.succeeded


def test_a_replica_failing_again_after_its_cool_off_is_down_again():
    clock = [0.0]  # as above
    with OpenAITestServer() as good, OpenAITestServer(mode="refused") as sick:
        pool = ReplicaPool([sick.base_url, good.base_url], concurrency=1, clock=lambda: clock[0])
        pool.run_sync([make_request(f"first {i}") for i in range(8)])
        clock[0] = 31.0
        results = pool.run_sync([make_request(f"second {i}") for i in range(8)])
        assert all(r.ok for r in results)
        sick_stats = pool.replica_stats()[0]
        assert sick_stats.marked_down == 2 and sick_stats.down and sick_stats.sent == 4  # 3, then one probe


# ----------------------------------------------------------------------------------------------- all down


def test_all_replicas_down_is_an_error_per_item_naming_every_url(manifest, tmp_path):
    path, items = manifest
    urls = [unused_base_url() for _ in range(3)]
    spec = spec_of(urls)
    out = tmp_path / "r.jsonl"
    result = CliRunner().invoke(
        app, ["infer", "--model", spec, "--manifest", str(path), "--out", str(out), "--concurrency", "4"]
    )
    assert result.exit_code == 1, result.output  # items ended in error, as for any failed items (not 3: fatal)
    assert "60 of 60 items ended in error" in result.output and "Traceback" not in result.output
    responses = read_records(out, Response)
    assert sorted(r.uid for r in responses) == sorted(i.uid for i in items)
    errors = Counter(r.error.split(":", 2)[1].strip() if r.error else None for r in responses)
    assert None not in errors, errors
    for response in responses:
        assert response.error.startswith("backend: all 3 replicas are down: ") or response.error.startswith(
            "backend: no replica left to try"
        ), response.error
        assert all(url in response.error for url in urls), response.error


def test_all_down_summary_counts(manifest, tmp_path):
    path, items = manifest
    urls = [unused_base_url() for _ in range(3)]
    model = load_model(spec_of(urls), concurrency=3, batch_size=30)
    summary = run_model(model, items, tmp_path, tmp_path / "r.jsonl", progress=False)
    assert (summary.answered, summary.failed) == (0, 60) and summary.failed_every_item
    rows = summary.as_dict()["replicas"]
    check_counts(rows)
    assert all(row["succeeded"] == 0 and row["marked_down"] == 1 and row["down"] for row in rows)
    assert set(REPLICA_COUNTS) <= set(rows[0])
    # Each replica was tried until it was down: far fewer attempts than items, never one per item per replica.
    assert sum(row["sent"] for row in rows) < 60


def test_a_401_from_one_replica_stops_the_run(three):
    a, b, _ = three
    with OpenAITestServer(mode="401") as locked:
        pool = ReplicaPool([a.base_url, locked.base_url], concurrency=2)
        with pytest.raises(FatalAPIError, match="401 Unauthorized from"):
            pool.run_sync([make_request(f"q {i}") for i in range(6)])


def test_a_model_no_replica_serves_stops_the_run():
    with OpenAITestServer(models={"another-model"}) as a, OpenAITestServer(models={"another-model"}) as b:
        pool = ReplicaPool([a.base_url, b.base_url], concurrency=2)
        with pytest.raises(FatalAPIError, match="404 Not Found from .*check the model name"):
            pool.run_sync([make_request(f"q {i}") for i in range(20)])
        assert a.seen.chat_requests + b.seen.chat_requests <= 3  # stopped after the first wave, not 20 errors


def test_the_cache_serves_the_pool(three, tmp_path):
    urls = [s.base_url for s in three]
    cache = tmp_path / "answers.sqlite"
    first = ReplicaPool(urls, cache_path=cache).run_sync([make_request(f"c {i}") for i in range(6)])
    again_pool = ReplicaPool(urls, cache_path=cache)
    again = again_pool.run_sync([make_request(f"c {i}") for i in range(6)])
    assert [r.text for r in again] == [r.text for r in first] and all(r.cached for r in again)
    assert sum(s.seen.chat_requests for s in three) == 6 and again_pool.usage.cache_hits == 6
