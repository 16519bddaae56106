"""Faults between the kit and OpenAI-compatible servers, against a real local server (issue 10).

Auth and permission errors and a server that refuses every connection stop a run at once with one clear line;
keys go only where named; URLs with credentials are refused; echoed keys are redacted; a corrupt cache is moved
aside; nonsense parameters are refused; a body trickled past the timeout fails the attempt.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from airbench_nb.api_client import (
    OPENAI_ENDPOINT,
    APIClient,
    ChatRequest,
    EndpointError,
    FatalAPIError,
    InvalidParameterError,
    MissingAPIKeyError,
    ResponseCache,
    is_local_url,
)
from airbench_nb.cli import app
from airbench_nb.judge.run import JudgeSpecError, judge_responses, parse_judge_spec
from airbench_nb.manifests import read_records, write_manifest
from airbench_nb.models import GenerationParams, load_model
from airbench_nb.models.openai_api import OpenAIAudioLM
from airbench_nb.records import ChatItem, FoundationItem, Response
from tests.openai_server import Fault, OpenAITestServer, unused_base_url

REPO = Path(__file__).resolve().parent.parent
KEY = "sk-fault-test-SECRET-5a5a5a5a5a5a"
SR = 16000


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "FAULT_KEY"):
        monkeypatch.delenv(name, raising=False)


def chat(text: str, **params) -> ChatRequest:
    return ChatRequest("judge-mini", [{"role": "user", "content": text}], params)


def fast(base_url: str, **kwargs) -> APIClient:
    options = {"timeout_s": 5.0, "backoff_initial_s": 0.05, "backoff_max_s": 0.2, "concurrency": 4}
    return APIClient(base_url=base_url, **{**options, **kwargs})


def one_line(text: str) -> bool:
    return "\n" not in text.strip() and len(text) < 400


# ------------------------------------------------------------------------------------------- item 1: fatal errors


@pytest.mark.parametrize(("mode", "status"), [("401", "401 Unauthorized"), ("403", "403 Forbidden")])
def test_auth_errors_stop_at_once_naming_endpoint_and_variable(monkeypatch, mode, status):
    monkeypatch.setenv("FAULT_KEY", KEY)
    with OpenAITestServer(mode=mode, latency_s=0.05) as server:
        client = fast(server.base_url, api_key_env="FAULT_KEY", max_retries=5)
        t0 = time.perf_counter()
        with pytest.raises(FatalAPIError) as caught:
            client.run_sync([chat(f"question {i}") for i in range(40)])
        elapsed = time.perf_counter() - t0
    message = str(caught.value)
    assert message.startswith(f"{status} from {server.base_url}: ") and "FAULT_KEY" in message, message
    assert one_line(message) and KEY not in message
    assert caught.value.endpoint == server.base_url and caught.value.status == int(mode)
    # Not retried, and the other requests were cancelled: at most one wave of `concurrency` requests went out.
    assert server.seen.chat_requests <= 4 and client.usage.retries == 0
    assert (
        elapsed < 10.0
    )  # a hang, not a speed: the counts above show that it stopped at once (2 s flaked on 2 busy cores)


def test_batch_api_calls_stop_on_401_too(tmp_path):
    with OpenAITestServer(mode="401") as server:
        client = fast(server.base_url, max_retries=3)
        path = tmp_path / "batch.jsonl"
        assert client.write_batch_file([chat("q")], path) == 1
        with pytest.raises(FatalAPIError, match=r"^401 Unauthorized from http://127\.0\.0\.1:\d+/v1: ") as caught:
            client.submit_batch(path)
    assert client.usage.retries == 0 and one_line(str(caught.value))


def test_401_when_no_key_was_sent_says_how_to_name_one():
    with OpenAITestServer(mode="401") as server:
        with pytest.raises(FatalAPIError, match=r"no key was sent.*--api-key-env"):
            fast(server.base_url).run_sync([chat("q")])
        assert server.seen.authorization == {"Bearer EMPTY"}


def test_missing_key_is_fatal_too():
    assert issubclass(MissingAPIKeyError, FatalAPIError)


def test_a_port_where_nothing_listens_is_fatal_after_three_refusals():
    url = unused_base_url()
    client = fast(url, max_retries=5, concurrency=2)
    t0 = time.perf_counter()
    with pytest.raises(FatalAPIError) as caught:
        client.run_sync([chat(f"q{i}") for i in range(20)])
    message = str(caught.value)
    assert message.startswith(f"cannot connect to {url}: ") and "3 connection attempts" in message, message
    assert one_line(message) and caught.value.endpoint == url
    # 20 requests x 6 attempts were allowed: the third refusal decides (a fourth may have been on its way).
    assert 3 <= client.usage.requests_sent <= 4
    assert time.perf_counter() - t0 < 3.0


def test_a_server_that_closes_every_connection_is_fatal():
    with OpenAITestServer(mode="refused") as server:
        client = fast(server.base_url, max_retries=5, concurrency=8)
        with pytest.raises(FatalAPIError, match="cannot connect to"):
            client.run_sync([chat(f"q{i}") for i in range(20)])
        # the first wave of 8, plus the few retries that tasks refused before the third refusal may already have sent
        # (a loaded machine: 9 or 10 seen); far from the 20 items x 6 attempts a run that did not stop would make
        assert 3 <= server.seen.connections_closed <= 16


def test_a_refusal_after_successes_is_retried():
    """A server that answered once and then refuses for a moment (a restart) is waited for, not given up on."""
    with OpenAITestServer() as server:
        client = fast(server.base_url, max_retries=6, backoff_initial_s=0.1, backoff_max_s=0.3)
        [first] = client.run_sync([chat("before the restart")])
        assert first.ok
        server.mode = "refused"
        threading.Timer(0.4, lambda: setattr(server, "mode", None)).start()
        results = client.run_sync([chat(f"during the restart {i}") for i in range(5)])
    assert all(r.ok for r in results), [r.error for r in results]
    assert server.seen.connections_closed >= 3 and client.usage.retries >= 3


def test_a_wrong_model_name_is_fatal_like_a_401():
    with OpenAITestServer(models={"served-model"}, latency_s=0.05) as server:
        client = fast(server.base_url, max_retries=5)
        t0 = time.perf_counter()
        with pytest.raises(FatalAPIError) as caught:
            client.run_sync([chat(f"question {i}") for i in range(40)])  # model "judge-mini": not served
        elapsed = time.perf_counter() - t0
    message = str(caught.value)
    assert message.startswith(f"404 Not Found from {server.base_url}: ") and "'judge-mini'" in message, message
    assert "check the model name" in message and one_line(message)
    assert caught.value.status == 404 and caught.value.endpoint == server.base_url
    # Not retried, not one error per item: at most one wave of `concurrency` (4) requests went out.
    assert server.seen.chat_requests <= 4 and client.usage.retries == 0 and client.usage.failures == 0
    assert (
        elapsed < 10.0
    )  # a hang, not a speed: the counts above show that it stopped at once (2 s flaked on 2 busy cores)


def test_a_stray_404_after_the_model_answered_is_one_error():
    with OpenAITestServer() as server:
        server.plan = {"stray": [Fault("404")]}
        client = fast(server.base_url, max_retries=5, concurrency=1)
        results = client.run_sync([chat("first"), chat("stray"), chat("last")])
    assert results[0].ok and results[2].ok
    assert results[1].error is not None and "404" in results[1].error and results[1].attempts == 1
    assert server.seen.attempts["stray"] == 1  # a 404 is never retried


def test_a_404_naming_no_model_stays_one_error_per_request():
    client = fast(unused_base_url())  # only for the classification: nothing is sent
    import httpx
    import openai

    request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    response = httpx.Response(404, request=request, json={"error": {"message": "no route /v1/nowhere"}})
    route = openai.NotFoundError("no route", response=response, body={"message": "no route /v1/nowhere"})
    assert client.fatal_error(route, "judge-mini") is None
    said = {"message": "The model `judge-mini` does not exist.", "type": "NotFoundError", "code": 404}  # vLLM
    model = openai.NotFoundError("not found", response=response, body=said)
    assert isinstance(client.fatal_error(model, "judge-mini"), FatalAPIError)


# ------------------------------------------------------------------------------------------- item 7: deadlines


def test_a_body_trickled_past_the_timeout_fails_the_attempt_and_is_retried():
    with OpenAITestServer() as server:
        server.plan = {"slow": [Fault("trickle", delay_s=3.0)]}
        client = fast(server.base_url, timeout_s=0.5, max_retries=2)
        t0 = time.perf_counter()
        [slow, quick] = client.run_sync([chat("slow answer"), chat("quick answer")])
        elapsed = time.perf_counter() - t0
    assert slow.ok and slow.attempts == 2 and quick.ok and quick.attempts == 1
    assert elapsed < 2.5  # the trickle takes 3 s: the first attempt was cut at its 0.5 s deadline


def test_a_server_that_always_trickles_ends_in_an_error_after_the_retries():
    with OpenAITestServer(mode="trickle", trickle_s=5.0) as server:
        client = fast(server.base_url, timeout_s=0.4, max_retries=1)
        t0 = time.perf_counter()
        [result] = client.run_sync([chat("never complete")])
        elapsed = time.perf_counter() - t0
    assert result.error is not None and "0.4 s" in result.error and result.attempts == 2, result.error
    assert server.seen.chat_requests == 2 and elapsed < 2.5


# ------------------------------------------------------------------------------------------- item 4: keys and URLs


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.9.9.9/v1", True),
        ("http://localhost:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://gpu-box.local:8000/v1", True),
        ("http://10.1.2.3/v1", True),
        ("http://172.16.0.1/v1", True),
        ("http://172.31.255.255/v1", True),
        ("http://192.168.1.20:8000/v1", True),
        ("http://0.0.0.0:8000/v1", True),
        ("http://172.32.0.1/v1", False),
        ("http://192.0.2.1/v1", False),
        ("http://8.8.8.8/v1", False),
        ("https://api.openai.com/v1", False),
        ("https://example.com/v1", False),
        ("https://localhost.example.com/v1", False),
        (None, False),
    ],
)
def test_local_urls(url, local):
    assert is_local_url(url) is local


def test_a_local_server_gets_no_key_unless_one_is_named(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with OpenAITestServer() as server:
        assert fast(server.base_url).run_sync([chat("a")])[0].ok
        assert server.seen.authorization == {"Bearer EMPTY"}
        server.reset()
        assert fast(server.base_url, api_key_env="OPENAI_API_KEY").run_sync([chat("b")])[0].ok
        assert server.seen.authorization == {f"Bearer {KEY}"}


def test_openai_key_goes_only_to_openai_or_its_base_url(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    openai = APIClient()
    assert openai.endpoint == OPENAI_ENDPOINT and openai.key_variable == "OPENAI_API_KEY"
    other = APIClient(base_url="https://llm.example.com/v1")
    assert other.endpoint == "https://llm.example.com/v1" and other.key_variable is None  # not named: not sent
    named = APIClient(base_url="https://llm.example.com/v1", api_key_env="FAULT_KEY")
    assert named.key_variable == "FAULT_KEY"
    with pytest.raises(MissingAPIKeyError, match="FAULT_KEY"):
        named.run_sync([chat("x")])  # named but unset: refused before anything is sent
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example.com/v1/")
    gateway = APIClient()
    assert gateway.endpoint == "https://gateway.example.com/v1" and gateway.key_variable == "OPENAI_API_KEY"


def test_openai_base_url_is_used_and_exposed_and_a_local_one_gets_no_key(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with OpenAITestServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        model = load_model("openai:tiny-audio", cache_path=str(tmp_path / "c.sqlite"))
        assert model.endpoint == server.base_url and model.model == "tiny-audio"
        prompt_audio = np.zeros(SR // 4, dtype=np.float32)
        [gen] = model.generate([_prompt("u0", prompt_audio)], GenerationParams())
        model.close()
    assert gen.error is None and gen.text.startswith("tiny-audio heard 0.250s")
    assert server.seen.authorization == {"Bearer EMPTY"}  # local: OPENAI_API_KEY stays home


@pytest.mark.parametrize(
    ("spec", "hint"),
    [
        ("openai:http://127.0.0.1:8000/v1", "openai:MODEL@URL"),
        ("openai:https://api.example.com/v1", "openai:MODEL@URL"),
        ("openai:localhost:8000/v1", "openai:MODEL@URL"),
        ("openai:m@https://alice:hunter2@llm.example.com/v1", "credentials"),
        ("openai:m@https://sk-abcdef@llm.example.com/v1", "credentials"),
        ("openai:m@https://llm.example.com/v1?api_key=hunter2", "credentials"),
        ("openai:m@ftp://llm.example.com/v1", "http"),
        ("openai:m@http:///v1", "host"),
    ],
)
def test_bad_openai_specs_are_refused_without_echoing_secrets(spec, hint):
    for build in (lambda: load_model(spec), lambda: parse_judge_spec(spec)):
        with pytest.raises(ValueError) as caught:
            build()
        message = str(caught.value)
        assert hint in message and one_line(message), message
        assert "hunter2" not in message and "sk-abcdef" not in message
    with pytest.raises(JudgeSpecError):
        parse_judge_spec(spec)


def test_userinfo_in_openai_base_url_is_refused(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "https://bob:hunter2@gateway.example.com/v1")
    with pytest.raises(EndpointError, match="OPENAI_BASE_URL") as caught:
        APIClient()
    assert "hunter2" not in str(caught.value)


def test_a_key_in_place_of_a_variable_name_is_refused_without_echoing_it():
    with pytest.raises(EndpointError, match="NAME of an environment variable") as caught:
        APIClient(base_url="http://127.0.0.1:9/v1", api_key_env=KEY)
    assert KEY not in str(caught.value)


def test_an_echoed_key_is_redacted_in_results_responses_verdicts_and_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FAULT_KEY", KEY)
    cache = tmp_path / "c.sqlite"
    with OpenAITestServer(mode="echo-key") as server:
        [result] = fast(server.base_url, api_key_env="FAULT_KEY", cache_path=cache).run_sync([chat("echo")])
        assert server.seen.authorization == {f"Bearer {KEY}"}
        assert result.ok and KEY not in result.text and "you sent the key ***" in result.text
        [again] = fast(server.base_url, api_key_env="FAULT_KEY", cache_path=cache).run_sync([chat("echo")])
        assert again.cached and again.text == result.text

        model = OpenAIAudioLM(f"tiny-audio@{server.base_url}", api_key_env="FAULT_KEY")
        [gen] = model.generate([_prompt("u1", np.zeros(SR // 2, dtype=np.float32))], GenerationParams())
        assert gen.error is None and KEY not in gen.text and "***" in gen.text

        chat_item = ChatItem(
            uid="c0", dataset="d", audio="a.wav", question="What?", task="sound_QA", reference="R", meta_info="M"
        )
        out = tmp_path / "verdicts.jsonl"
        judge_responses(
            f"openai:judge-mini@{server.base_url}",
            [chat_item],
            [Response(uid="c0", model="m", text="an answer")],
            out,
            api_key_env="FAULT_KEY",
            progress=False,
        )
    raw = out.read_bytes()
    assert KEY.encode() not in raw and b"***" in raw
    for path in tmp_path.glob("c.sqlite*"):
        assert KEY.encode() not in path.read_bytes()


def test_cli_api_key_env_on_judge(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("FAULT_KEY", "named-key-123")
    manifest, responses = _chat_run(tmp_path)
    runner = CliRunner()
    with OpenAITestServer() as server:
        base = ["judge", "--judge", f"openai:judge-mini@{server.base_url}", "--manifest", str(manifest)]
        base += ["--responses", str(responses)]
        result = runner.invoke(app, [*base, "--out", str(tmp_path / "v1.jsonl")])
        assert result.exit_code == 0, result.output
        assert server.seen.authorization == {"Bearer EMPTY"}  # local server, no key named: none sent
        server.reset()
        result = runner.invoke(app, [*base, "--out", str(tmp_path / "v2.jsonl"), "--api-key-env", "FAULT_KEY"])
        assert result.exit_code == 0, result.output
        assert server.seen.authorization == {"Bearer named-key-123"}
        result = runner.invoke(app, [*base, "--out", str(tmp_path / "v3.jsonl"), "--api-key-env", KEY])
    assert result.exit_code == 2 and "NAME of an environment variable" in result.output
    assert KEY not in result.output


# ------------------------------------------------------------------------------------------- item 5: cache, params


def _filled_cache(tmp_path: Path, server: OpenAITestServer, n: int = 200) -> Path:
    cache = tmp_path / "judge.sqlite"
    client = fast(server.base_url, cache_path=cache)
    assert all(r.ok for r in client.run_sync([chat(f"question {i} " + "x" * 200) for i in range(n)]))
    client.close()
    with sqlite3.connect(cache) as db:  # fold the WAL into the main file, as a finished run leaves it
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return cache


def _damage(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    page = 4096
    for start in range(page, len(raw), page):  # every page after the header page: btree headers overwritten
        raw[start : start + 16] = b"\xff" * 16
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage", ["not a database", "damaged pages"])
def test_a_corrupt_cache_is_moved_aside_and_rebuilt(tmp_path, caplog, damage):
    caplog.set_level(logging.WARNING)
    with OpenAITestServer() as server:
        if damage == "not a database":
            cache = tmp_path / "judge.sqlite"
            cache.write_bytes(b"this is not an SQLite file\n" * 500)
        else:
            cache = _filled_cache(tmp_path, server)
            _damage(cache)
        before = cache.read_bytes()
        server.reset()
        client = fast(server.base_url, cache_path=cache)
        results = client.run_sync([chat("after the damage"), chat("question 1 " + "x" * 200)])
        client.close()
        assert all(r.ok and not r.cached for r in results)
        again = fast(server.base_url, cache_path=cache).run_sync([chat("after the damage")])
        assert again[0].cached  # the rebuilt cache works
    [aside] = [p for p in tmp_path.glob("judge.sqlite.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]
    assert aside.read_bytes() == before  # kept for inspection, untouched
    assert "corrupt" in caplog.text and str(aside) in caplog.text
    assert len(ResponseCache(cache)) == 2


def test_a_judge_run_survives_a_corrupt_cache(tmp_path):
    cache = tmp_path / "judge.sqlite"
    cache.write_bytes(b"\x00garbage" * 1000)
    chat_item = ChatItem(
        uid="c0", dataset="d", audio="a.wav", question="What?", task="sound_QA", reference="R", meta_info="M"
    )
    with OpenAITestServer() as server:
        summary = judge_responses(
            f"openai:judge-mini@{server.base_url}",
            [chat_item],
            [Response(uid="c0", model="m", text="an answer")],
            tmp_path / "v.jsonl",
            cache=cache,
            progress=False,
        )
    assert summary.written == 2 and server.seen.chat_requests == 2 * 2  # two orders, verbatim and fenced prompts
    assert [p.name for p in tmp_path.glob("judge.sqlite.corrupt-*")][0].startswith("judge.sqlite.corrupt-")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (GenerationParams(temperature=math.nan), "temperature"),
        (GenerationParams(temperature=math.inf), "temperature"),
        (GenerationParams(temperature=-0.5), "temperature"),
        (GenerationParams(temperature=0.7, top_p=0.0), "top_p"),
        (GenerationParams(temperature=0.7, top_p=1.5), "top_p"),
        (GenerationParams(temperature=0.7, top_p=math.nan), "top_p"),
        (GenerationParams(max_new_tokens=0), "max_new_tokens"),
        (GenerationParams(max_new_tokens=-3), "max_new_tokens"),
    ],
)
def test_nonsense_generation_parameters_are_refused_before_sending(params, field):
    with OpenAITestServer() as server:
        model = OpenAIAudioLM(f"tiny-audio@{server.base_url}")
        with pytest.raises(InvalidParameterError, match=field) as caught:
            model.generate([_prompt("u", np.zeros(SR // 4, dtype=np.float32))], params)
        assert server.seen.chat_requests == 0
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, FatalAPIError)
    assert one_line(str(caught.value))


@pytest.mark.parametrize(
    "params",
    [
        {"temperature": math.nan},
        {"temperature": -1},
        {"temperature": "hot"},
        {"top_p": 2.0},
        {"max_tokens": 0},
        {"max_tokens": 1.5},
        {"seed": 1.5},
        {"n": 0},
        {"presence_penalty": 3.0},
        {"logit_bias": {"50256": math.inf}},
    ],
)
def test_nonsense_request_parameters_are_refused(params):
    with pytest.raises(InvalidParameterError, match=next(iter(params))):
        chat("x", **params)


@pytest.mark.parametrize(
    "kwargs",
    [{"timeout_s": math.nan}, {"timeout_s": 0}, {"timeout_s": -1}, {"backoff_initial_s": math.inf}],
)
def test_nonsense_client_settings_are_refused(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        APIClient(base_url="http://127.0.0.1:9/v1", **kwargs)


# ------------------------------------------------------------------------------------------- end to end


def _prompt(uid: str, audio: np.ndarray):
    from airbench_nb.models import Prompt

    item = FoundationItem(
        uid=uid,
        dataset="synthetic",
        audio=f"{uid}.wav",
        task="Speaker_Gender_Recognition",
        question="Who speaks?",
        choices=["male", "female"],
        answer=0,
    )
    return Prompt(item=item, text=f"question {uid}", audio=audio, audio_path=Path(f"{uid}.wav"))


def _foundation_manifest(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    items = []
    for i in range(n):
        seconds = 0.2 + 0.05 * i
        t = np.arange(int(SR * seconds)) / SR
        sf.write(folder / f"a{i}.wav", (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), SR)
        items.append(
            FoundationItem(
                uid=f"f{i}",
                dataset="synthetic",
                audio=f"a{i}.wav",
                task="Speaker_Gender_Recognition",
                question=f"Who speaks in clip {i}?",
                choices=["male", "female"],
                answer=i % 2,
            )
        )
    return write_manifest(folder / "foundation.jsonl", items)


def _chat_run(tmp_path: Path) -> tuple[Path, Path]:
    item = ChatItem(
        uid="c0", dataset="d", audio="a.wav", question="What?", task="sound_QA", reference="R", meta_info="M"
    )
    manifest = write_manifest(tmp_path / "chat.jsonl", [item])
    responses = tmp_path / "responses.jsonl"
    responses.write_text(Response(uid="c0", model="m", text="an answer").model_dump_json() + "\n")
    return manifest, responses


def _infer(spec: str, manifest: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "airbench_nb.cli", "infer", "--model", spec, "--manifest", str(manifest)]
    command += ["--out", str(out), "--batch-size", "4", "--concurrency", "2", *extra]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


def test_infer_stops_on_401_with_one_line_then_a_healthy_server_answers_every_item_once(tmp_path):
    manifest = _foundation_manifest(tmp_path / "data", 12)
    out = tmp_path / "responses.jsonl"
    with OpenAITestServer(mode="401") as server:
        spec = f"openai:tiny-audio@{server.base_url}"
        failed = _infer(spec, manifest, out)
        assert failed.returncode != 0, failed.stdout + failed.stderr
        assert "Traceback" not in failed.stderr, failed.stderr
        lines = [line for line in failed.stderr.splitlines() if "401 Unauthorized" in line]
        assert len(lines) == 1 and server.base_url in lines[0] and "--api-key-env" in lines[0], failed.stderr
        assert server.seen.chat_requests <= 2  # one wave at concurrency 2, then stop
        assert not out.exists() or all(r.error is None for r in read_records(out, Response))

        server.mode = None
        server.reset()
        healed = _infer(spec, manifest, out)
    assert healed.returncode == 0, healed.stdout + healed.stderr
    records = read_records(out, Response)
    assert sorted(r.uid for r in records) == sorted(f"f{i}" for i in range(12))  # every item, none twice
    assert all(r.error is None and r.text.startswith("tiny-audio heard") for r in records)
    assert server.seen.chat_requests == 12


def test_infer_with_a_wrong_model_name_exits_3_with_one_line_and_writes_no_errors(tmp_path):
    manifest = _foundation_manifest(tmp_path / "data", 12)
    out = tmp_path / "responses.jsonl"
    with OpenAITestServer(models={"tiny-audio"}) as server:
        failed = _infer(f"openai:tiny-audi@{server.base_url}", manifest, out)
        assert failed.returncode == 3, failed.stdout + failed.stderr
        assert "Traceback" not in failed.stderr, failed.stderr
        lines = [line for line in failed.stderr.splitlines() if "404 Not Found" in line]
        assert len(lines) == 1 and "'tiny-audi'" in lines[0] and server.base_url in lines[0], failed.stderr
        assert server.seen.chat_requests <= 2  # one wave at concurrency 2, then stop
        assert not out.exists() or not read_records(out, Response)  # not one error record per item
        healed = _infer(f"openai:tiny-audio@{server.base_url}", manifest, out)
    assert healed.returncode == 0, healed.stdout + healed.stderr
    assert sorted(r.uid for r in read_records(out, Response)) == sorted(f"f{i}" for i in range(12))


def test_cli_infer_sends_only_the_named_key_and_redacts_its_echo(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-not-for-local-servers")
    monkeypatch.setenv("FAULT_KEY", KEY)
    manifest = _foundation_manifest(tmp_path / "data", 3)
    with OpenAITestServer(mode="echo-key") as server:
        spec = f"openai:tiny-audio@{server.base_url}"
        plain = _infer(spec, manifest, tmp_path / "plain.jsonl")
        assert plain.returncode == 0, plain.stderr
        assert server.seen.authorization == {"Bearer EMPTY"}  # local: OPENAI_API_KEY is not sent unless named
        server.reset()
        named = _infer(spec, manifest, tmp_path / "named.jsonl", "--api-key-env", "FAULT_KEY")
        assert named.returncode == 0, named.stderr
        assert server.seen.authorization == {f"Bearer {KEY}"}
    raw = (tmp_path / "named.jsonl").read_text()
    assert KEY not in raw and raw.count("you sent the key ***") == 3


def test_infer_refuses_a_nan_temperature_before_sending(tmp_path):
    manifest = _foundation_manifest(tmp_path / "data", 3)
    with OpenAITestServer() as server:
        result = _infer(f"openai:tiny-audio@{server.base_url}", manifest, tmp_path / "r.jsonl", "--temperature", "nan")
        assert server.seen.chat_requests == 0
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "--temperature" in last and "nan" in last
