"""``infer`` at size (issue 35): a run killed by SIGKILL resumes with nothing lost, duplicated or asked twice; audio
probes kept across processes; wav clips sent as their own bytes; one HTTP client kept across batches.

Real HTTP to the loopback server of ``tests/openai_server.py``; the runs killed and resumed are real ``airbench-nb
infer`` processes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from airbench_nb import audio
from airbench_nb.api_client import APIClient, Base64Text, ChatRequest, MissingAPIKeyError
from airbench_nb.manifests import check_audio, read_records, write_manifest
from airbench_nb.models import load_model
from airbench_nb.models.base import GenerationParams, Prompt
from airbench_nb.records import AudioStatus, FoundationItem, Response
from airbench_nb.runner import run_model
from tests.openai_server import OpenAITestServer

REPO = Path(__file__).resolve().parent.parent
SR = 16000


def _item(i: int, audio_name: str | None = None) -> FoundationItem:
    return FoundationItem(
        uid=f"u{i}",
        dataset="synthetic",
        audio=audio_name or f"c{i}.wav",
        task="Speaker_Gender_Recognition",
        question=f"Who speaks in clip {i}?",
        choices=["male", "female"],
        answer=i % 2,
    )


def _clips(folder: Path, n: int, seconds: float = 0.1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    for i in range(n):
        sf.write(folder / f"c{i}.wav", (0.1 * rng.standard_normal(int(SR * seconds))).astype(np.float32), SR)
    return write_manifest(folder / "foundation.jsonl", [_item(i) for i in range(n)])


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _uids(path: Path) -> Counter[str]:
    return Counter(r.uid for r in read_records(path, Response))


def test_an_infer_killed_by_sigkill_half_way_resumes_with_nothing_lost_duplicated_or_asked_twice(tmp_path):
    n = 400
    manifest = _clips(tmp_path / "data", n)
    out = tmp_path / "responses.jsonl"
    env = {**os.environ, "AIRBENCH_CACHE": str(tmp_path / "cache")}
    with OpenAITestServer(latency_s=0.01) as server:
        command = [sys.executable, "-m", "airbench_nb.cli", "infer", "--model", f"openai:tiny-audio@{server.base_url}"]
        command += ["--manifest", str(manifest), "--out", str(out), "--batch-size", "8", "--concurrency", "4"]
        first = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while _lines(out) < n // 2 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        assert first.returncode == -signal.SIGKILL, "the first run ended before it was killed"
        kept = _uids(out)  # a line cut by the kill is not a record: the resumed run drops it and asks again
        assert 0 < len(kept) < n and max(kept.values()) == 1
        server.wait_quiet()  # the killed run's last requests are handled (their threads still count them)
        kept_prompts = {p for p in server.seen.answered if any(f"clip {u[1:]}?" in p for u in kept)}

        server.reset()
        second = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr[-3000:]
        asked = set(server.seen.attempts)
        resumed_requests = server.seen.chat_requests

    final = _uids(out)
    assert set(final) == {f"u{i}" for i in range(n)}  # nothing lost
    assert max(final.values()) == 1  # nothing duplicated
    assert resumed_requests == n - len(kept)  # only the items without a response were asked
    assert not asked & kept_prompts  # no answered item asked again
    assert all(r.error is None for r in read_records(out, Response))


def test_audio_probes_are_kept_across_processes_and_a_changed_clip_is_probed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRBENCH_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "data"
    _clips(folder, 6)
    items = [_item(i) for i in range(6)] + [_item(6, "missing.wav")]
    first = check_audio(items, folder)
    assert (tmp_path / "cache" / audio.PROBE_STORE).is_file()

    calls: list[Path] = []
    real = audio.probe_audio

    def counted(path: Any) -> audio.AudioProbe:
        calls.append(Path(path))
        return real(path)

    monkeypatch.setattr(audio, "probe_audio", counted)
    audio.forget_probes()  # as a new process: nothing remembered in memory
    again = check_audio(items, folder)
    assert [i.audio_sha256 for i in again] == [i.audio_sha256 for i in first]
    assert [i.audio_status for i in again] == [AudioStatus.ok] * 6 + [AudioStatus.missing]
    assert calls == [folder / "missing.wav"]  # only the file that cannot be stat-ed

    sf.write(folder / "c2.wav", np.zeros(SR // 10, dtype=np.float32) + 0.25, SR)  # swapped since it was probed
    (folder / "c4.wav").write_bytes(b"RIFF garbage")  # damaged since
    calls.clear()
    audio.forget_probes()
    changed = check_audio(items, folder)
    assert sorted(p.name for p in calls) == ["c2.wav", "c4.wav", "missing.wav"]
    assert changed[2].audio_sha256 != first[2].audio_sha256 and changed[2].audio_status is AudioStatus.ok
    assert changed[4].audio_status is AudioStatus.corrupt
    assert [i.audio_sha256 for i in changed[:2]] == [i.audio_sha256 for i in first[:2]]


def test_a_cache_folder_that_cannot_be_used_only_costs_probing_again(tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("AIRBENCH_CACHE", str(blocked))
    folder = tmp_path / "data"
    _clips(folder, 2)
    audio.forget_probes()
    assert [i.audio_status for i in check_audio([_item(0), _item(1)], folder)] == [AudioStatus.ok] * 2


class RecordingServer(OpenAITestServer):
    """Keeps the base64 audio of every request it answers, by prompt text."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.audio_data: dict[str, list[str]] = {}

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        user = body["messages"][-1]["content"]
        text = " ".join(p["text"] for p in user if p.get("type") == "text")
        self.audio_data[text] = [p["input_audio"]["data"] for p in user if p.get("type") == "input_audio"]
        return super().answer(body)


def _with_list_chunk(path: Path) -> bytes:
    """Rewrite a 16-bit wav with a ``LIST`` chunk before its data (a re-encoding would not keep it)."""
    raw = path.read_bytes()
    fmt_end = 12 + 8 + struct.unpack_from("<I", raw, 16)[0]
    info = b"INFOISFT" + struct.pack("<I", 6) + b"bench\x00"
    chunk = b"LIST" + struct.pack("<I", len(info)) + info
    body = raw[12:fmt_end] + chunk + raw[fmt_end:]
    out = b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body
    path.write_bytes(out)
    return out


def test_a_wav_already_as_sent_goes_as_its_own_bytes_and_any_other_clip_is_decoded(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRBENCH_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "data"
    folder.mkdir()
    t = np.arange(SR // 2) / SR
    tone = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    sf.write(folder / "pcm16.wav", tone, SR, subtype="PCM_16")
    as_is = _with_list_chunk(folder / "pcm16.wav")
    sf.write(folder / "float.wav", tone, SR, subtype="FLOAT")  # 32-bit float: encoded as 16-bit PCM
    sf.write(folder / "rate.wav", tone[::2], SR // 2, subtype="PCM_16")  # 8 kHz: resampled to 16 kHz
    sf.write(folder / "stereo.wav", np.stack([tone, tone], axis=1), SR, subtype="PCM_16")  # downmixed
    names = ["pcm16.wav", "float.wav", "rate.wav", "stereo.wav"]
    items = [_item(i, name) for i, name in enumerate(names)]
    with RecordingServer() as server:
        model = load_model(f"openai:tiny-audio@{server.base_url}", concurrency=2)
        summary = run_model(model, items, folder, tmp_path / "r.jsonl", progress=False)
        model.close()
        assert summary.answered == 4, summary.as_dict()
        sent = {next(f"clip {i}?" for i in range(4) if f"clip {i}?" in k): v for k, v in server.audio_data.items()}
        seconds = dict(server.seen.audio_seconds)
    assert base64.b64decode(sent["clip 0?"][0]) == as_is  # the file's own bytes, LIST chunk included
    for clip in ("clip 1?", "clip 2?", "clip 3?"):
        info = sf.info(io.BytesIO(base64.b64decode(sent[clip][0])))
        assert (info.samplerate, info.channels, info.subtype) == (SR, 1, "PCM_16")
    assert [round(v[0], 3) for v in seconds.values()] == [0.5] * 4  # every clip whole


def test_pcm16_wav_bytes_refuses_what_is_not_already_as_sent(tmp_path):
    t = np.zeros(1600, dtype=np.float32)
    sf.write(tmp_path / "ok.wav", t, SR, subtype="PCM_16")
    assert audio.pcm16_wav_bytes(tmp_path / "ok.wav") == (tmp_path / "ok.wav").read_bytes()
    assert audio.pcm16_wav_bytes(tmp_path / "ok.wav", sr=8000) is None
    raw = (tmp_path / "ok.wav").read_bytes()
    (tmp_path / "cut.wav").write_bytes(raw[:-100])  # the header promises more frames than the file holds
    assert audio.pcm16_wav_bytes(tmp_path / "cut.wav") is None
    sf.write(tmp_path / "x.flac", t, SR)
    assert audio.pcm16_wav_bytes(tmp_path / "x.flac") is None
    assert audio.pcm16_wav_bytes(tmp_path / "absent.wav") is None


def test_run_sync_keeps_one_http_client_across_calls_and_a_new_key_gets_a_new_one(monkeypatch):
    monkeypatch.setenv("SIZE_KEY", "key-one")
    with OpenAITestServer() as server:
        client = APIClient(base_url=server.base_url, api_key_env="SIZE_KEY", concurrency=2)
        ask = [ChatRequest("m", [{"role": "user", "content": f"q{i}"}]) for i in range(3)]
        assert all(r.ok for r in client.run_sync(ask[:2]))
        assert client._loop is not None
        session = client._loop.session
        assert all(r.ok for r in client.run_sync(ask[2:]))
        assert client._loop.session is session  # kept: no new client, TLS context or connections per batch
        monkeypatch.setenv("SIZE_KEY", "key-two")
        assert client.run_sync([ChatRequest("m", [{"role": "user", "content": "q9"}])])[0].ok
        assert client._loop.session is not session
        assert server.seen.authorization == {"Bearer key-one", "Bearer key-two"}
        thread = client._loop._thread
        assert thread.is_alive() and thread.name == "airbench-api"
        client.close()
        assert client._loop is None and not thread.is_alive()  # close() stops the loop and its thread
        assert client.run_sync([ChatRequest("m", [{"role": "user", "content": "after close"}])])[0].ok  # again
        client.close()


def test_the_next_batch_is_asked_while_one_is_in_flight_and_in_flight_stays_within_concurrency(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRBENCH_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "data"
    _clips(folder, 12)
    items = [_item(i) for i in range(12)]
    out = tmp_path / "r.jsonl"
    with OpenAITestServer(hold_after=3) as server:
        model = load_model(f"openai:tiny-audio@{server.base_url}", concurrency=6, batch_size=4)
        assert model.overlaps_batches
        done: list[Any] = []
        worker = threading.Thread(target=lambda: done.append(run_model(model, items, folder, out, progress=False)))
        worker.start()
        # The first batch's 4th request is held: its batch cannot end, yet the second batch's 4 requests arrive.
        server.wait_for(lambda seen: seen.held >= 5, timeout_s=30)
        assert not out.exists() or _lines(out) == 0  # nothing written before the first batch ends
        server.release()
        worker.join(timeout=60)
        model.close()
        assert server.seen.max_in_flight <= 6
    [summary] = done
    assert summary.answered == 12 and summary.errors == 0
    assert sorted(_uids(out)) == sorted(f"u{i}" for i in range(12)) and max(_uids(out).values()) == 1


def test_the_first_batch_is_as_large_as_the_concurrency_so_the_first_requests_go_out_early(tmp_path, monkeypatch):
    from airbench_nb.models.base import first_batch_size

    monkeypatch.setenv("AIRBENCH_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "data"
    _clips(folder, 20)
    items = [_item(i) for i in range(20)]
    with OpenAITestServer() as server:
        model = load_model(f"openai:tiny-audio@{server.base_url}", concurrency=3, batch_size=8)
        sizes: list[int] = []
        real = model.generate
        monkeypatch.setattr(model, "generate", lambda prompts, kw: sizes.append(len(prompts)) or real(prompts, kw))
        summary = run_model(model, items, folder, tmp_path / "r.jsonl", progress=False)
        model.close()
    assert summary.answered == 20 and sorted(sizes) == [1, 3, 8, 8] and sizes[0] == 3
    assert _lines(tmp_path / "r.jsonl") == 20
    # Backends whose batches do not overlap (models computing their own answers, replicas) keep whole batches.
    assert first_batch_size(load_model("baseline:oracle"), 8) == 8
    with_replicas = load_model("openai:m@http://127.0.0.1:9/v1,http://127.0.0.1:10/v1", concurrency=2, batch_size=8)
    assert not with_replicas.overlaps_batches and first_batch_size(with_replicas, 8) == 8


def _forty_clips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[FoundationItem]]:
    """Forty clips in ``tmp_path/data`` and their items, with the cache in ``tmp_path``."""
    monkeypatch.setenv("AIRBENCH_CACHE", str(tmp_path / "cache"))
    _clips(tmp_path / "data", 40)
    return tmp_path / "data", [_item(i) for i in range(40)]


def test_a_fatal_error_while_two_batches_are_asked_stops_both_and_sends_no_more(tmp_path, monkeypatch):
    folder, items = _forty_clips(tmp_path, monkeypatch)
    with OpenAITestServer(mode="401") as server:
        model = load_model(f"openai:tiny-audio@{server.base_url}", concurrency=2, batch_size=4)
        try:
            run_model(model, items, folder, tmp_path / "r.jsonl", progress=False)
        except Exception as exc:  # noqa: BLE001 - the fatal error is checked by name below
            assert type(exc).__name__ == "FatalAPIError" and "401" in str(exc)
        else:
            raise AssertionError("a 401 did not stop the run")
        finally:
            model.close()
        assert server.seen.chat_requests <= 2  # one wave at concurrency 2 over both batches, then nothing


def test_a_batch_handed_in_before_a_fatal_error_is_stopped_by_it_whenever_its_thread_reaches_the_client(
    tmp_path, monkeypatch
):
    """The batch asked beside the failing one reaches the client only after the 401 came back (a slow thread, a
    loaded machine): it was handed in before the stop, so it sends nothing; a later run starts afresh."""
    folder, items = _forty_clips(tmp_path, monkeypatch)
    with OpenAITestServer(mode="401") as server:
        model = load_model(f"openai:tiny-audio@{server.base_url}", concurrency=2, batch_size=4)
        first_ended = threading.Event()
        calls: list[int] = []
        real = model.generate

        def generate(prompts, params):
            calls.append(len(prompts))
            if len(calls) == 1:
                try:
                    return real(prompts, params)
                finally:
                    first_ended.set()
            assert first_ended.wait(30)  # the second batch's thread comes late, after the first batch's 401
            return real(prompts, params)

        monkeypatch.setattr(model, "generate", generate)
        try:
            with pytest.raises(Exception) as raised:  # noqa: PT011 - checked by name below
                run_model(model, items, folder, tmp_path / "r.jsonl", progress=False)
            assert type(raised.value).__name__ == "FatalAPIError" and "401" in str(raised.value)
            sent = server.seen.chat_requests
            assert len(calls) == 2 and 1 <= sent <= 2  # the first batch's requests only (one may see the stop)
            # A run handed in after the stop (the key fixed, the run asked again) starts afresh and is sent.
            monkeypatch.setattr(model, "generate", real)
            with pytest.raises(Exception, match="401"):
                run_model(model, items[:1], folder, tmp_path / "again.jsonl", progress=False)
            assert server.seen.chat_requests == sent + 1
        finally:
            model.close()


def test_base64_text_is_the_standard_librarys_encoding_at_every_length():
    rng = np.random.default_rng(0)
    for n in [*range(9), 57, 58, 59, 4095, 4096, 160_044, 960_045]:
        raw = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        text = Base64Text.encode_bytes(raw)
        assert isinstance(text, Base64Text) and text == base64.b64encode(raw).decode("ascii"), n

    # The ASCII bytes kept until a body is made give the same key and body as the text encoded again.
    def request(data: str) -> ChatRequest:
        return ChatRequest("m", [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": data}}]}])

    kept = request(text)
    assert text.as_ascii() is text.__dict__["_ascii"]
    key, body = kept.key(), kept.body_bytes()
    assert "_ascii" not in text.__dict__ and text.as_ascii() == text.encode("ascii")  # released with the body
    again, plain = request(text), request(str(text))
    assert type(str(text)) is str and again.key() == key == plain.key() and again.body_bytes() == body
    assert plain.body_bytes() == body


def test_a_body_with_base64_audio_is_the_json_of_the_request_with_the_audio_copied_in():
    audio = Base64Text.encode_bytes(bytes(range(256)) * 40)
    request = ChatRequest(
        "m",
        [
            {"role": "system", "content": 'quote " backslash \\ tab \t é 😀 \u0000'},
            {
                "role": "user",
                "content": [
                    {"type": "input_audio", "input_audio": {"data": audio, "format": "wav"}},
                    {"type": "input_audio", "input_audio": {"data": audio[:100], "format": "wav"}},  # a plain str
                    {"type": "text", "text": "airbench-base64-0 look-alike"},
                ],
            },
        ],
        {"temperature": 0.5, "max_tokens": 8},
    )
    raw = request.body_bytes()
    assert json.loads(raw) == request.body()
    assert raw.count(audio.encode()) == 1 and b"airbench-base64-" not in raw.replace(b"airbench-base64-0 look", b"")
    request.make_body()  # made ahead (in a batch's thread): handed out once, then made again when asked again
    assert request._body == raw and request.body_bytes() == raw and request._body is None
    assert request.body_bytes() == raw


def test_run_sync_in_a_forked_child_starts_a_loop_of_its_own():
    with OpenAITestServer() as server:
        client = APIClient(base_url=server.base_url, concurrency=2)
        assert client.run_sync([ChatRequest("m", [{"role": "user", "content": "parent"}])])[0].ok
        pid = os.fork()
        if pid == 0:  # the child: the parent's loop thread did not come along
            signal.alarm(30)  # a child waiting on that loop for ever is killed, and the test fails
            ok = False
            with contextlib.suppress(BaseException):
                ok = client.run_sync([ChatRequest("m", [{"role": "user", "content": "child"}])])[0].ok
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert client.run_sync([ChatRequest("m", [{"role": "user", "content": "parent again"}])])[0].ok
        client.close()


def _outcomes(path: Path) -> dict[str, tuple[str | None, str | None, str | None]]:
    return {r.uid: (r.text, r.error, r.prompt_hash) for r in read_records(path, Response)}


def _same_run(summary: Any) -> dict[str, Any]:
    return {k: v for k, v in summary.as_dict().items() if k not in ("seconds", "items_per_s")}


@pytest.mark.parametrize("concurrency", [1, 2])
def test_each_clip_is_checked_once_before_it_is_asked_and_a_corrupt_clip_mid_run_is_never_sent(
    tmp_path, monkeypatch, concurrency
):
    """A clip cut short in the middle of a run is counted unusable, named and never sent; every clip is checked once
    per run (a resumed run too), before its item is asked; batches asked while others are in flight (concurrency 2)
    give the summaries and responses of batches asked one at a time (concurrency 1: nothing to overlap)."""
    import airbench_nb.runner.models as runner_models

    monkeypatch.setenv("AIRBENCH_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "data"
    n = 40
    _clips(folder, n)
    (folder / "c17.wav").write_bytes((folder / "c17.wav").read_bytes()[:44] + b"\x00\x01" * 7)  # cut short
    items = [_item(i) for i in range(n)]
    events: list[tuple[str, list[str]]] = []
    real_check = runner_models.check_audio

    def check(batch: Any, root: Any, **options: Any) -> Any:
        events.append(("check", [item.uid for item in batch]))
        return real_check(batch, root, **options)

    monkeypatch.setattr(runner_models, "check_audio", check)
    with OpenAITestServer() as server:
        model = load_model(f"openai:tiny-audio@{server.base_url}", concurrency=concurrency, batch_size=8)
        assert model.overlaps_batches == (concurrency > 1)
        real_generate = model.generate

        def generate(prompts: Any, params: Any) -> Any:
            events.append(("ask", [p.uid for p in prompts]))
            return real_generate(prompts, params)

        model.generate = generate
        out = tmp_path / "r.jsonl"
        first = run_model(model, items, folder, out, progress=False, limit=20)  # u17 among them
        first_events = list(events)
        events.clear()
        resumed = run_model(model, items, folder, out, progress=False)
        resumed_events = list(events)
        # The reference: the same runs one batch at a time.
        model.overlaps_batches = False
        audio.forget_probes()
        reference = tmp_path / "reference.jsonl"
        expected = [
            run_model(model, items, folder, reference, progress=False, limit=20),
            run_model(model, items, folder, reference, progress=False),
        ]
        model.close()
        sent = list(server.seen.attempts.elements())

    for run_events, checked in ((first_events, 20), (resumed_events, n)):
        checks = [uid for kind, uids in run_events if kind == "check" for uid in uids]
        asks = [uid for kind, uids in run_events if kind == "ask" for uid in uids]
        assert sorted(checks) == sorted(f"u{i}" for i in range(checked))  # each clip checked once
        assert "u17" not in asks
        for uid in asks:  # checked before it was asked
            check_at = next(i for i, (kind, uids) in enumerate(run_events) if kind == "check" and uid in uids)
            assert check_at < next(i for i, (kind, uids) in enumerate(run_events) if kind == "ask" and uid in uids)
    assert sorted(uid for kind, uids in resumed_events if kind == "ask" for uid in uids) == sorted(
        f"u{i}" for i in range(20, n)
    )
    assert first.unusable == 1 and first.answered == 19 and first.error_kinds == {"audio corrupt": 1}
    assert resumed.skipped_existing == 20 and resumed.answered == 20 and resumed.errors == 0
    assert [_same_run(first), _same_run(resumed)] == [_same_run(s) for s in expected]
    assert _outcomes(out) == _outcomes(reference)
    assert _outcomes(out)["u17"][1] == "audio corrupt: c17.wav"
    assert not any("clip 17?" in prompt for prompt in sent)  # never sent
    assert len(sent) == 2 * (n - 1)  # every other item once per output file, nothing else


def test_an_openai_models_http_client_is_made_while_the_audio_is_checked_and_the_first_run_uses_it(
    tmp_path, monkeypatch
):
    """The client (its TLS context: about 40 ms) is made in the background while the runner checks the audio, not
    before the first request; closing the model closes it, however soon."""
    import airbench_nb.runner.models as runner_models

    monkeypatch.setenv("AIRBENCH_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "data"
    _clips(folder, 3)
    seen: list[Any] = []
    real_check = runner_models.check_audio

    def check(items: Any, root: Any, **options: Any) -> Any:
        held = model.client._loop
        held.run(asyncio.sleep(0))  # handed to the loop after the warm-up: it has run
        seen.append((held.session, server.seen.chat_requests))
        return real_check(items, root, **options)

    monkeypatch.setattr(runner_models, "check_audio", check)
    with OpenAITestServer() as server:
        model = load_model(f"openai:tiny-audio@{server.base_url}", concurrency=1)
        assert model.client._loop is None  # nothing started by making the model
        summary = run_model(model, [_item(i) for i in range(3)], folder, tmp_path / "r.jsonl", progress=False)
        held = model.client._loop
        [(session, requests)] = seen
        assert session is not None and requests == 0  # made while the audio was checked, nothing sent yet
        assert summary.answered == 3 and held.session is session  # the first run used it
        model.close()
        assert held.session is None and session.is_closed() and not held.usable()

        soon = load_model(f"openai:tiny-audio@{server.base_url}")
        soon.warm_up()
        early = soon.client._loop
        soon.close()  # at once: the client the warm-up made, if it was made, is closed with the loop
        assert early.session is None and not early.usable()


def test_a_missing_key_is_not_an_error_when_the_model_warms_up_but_when_it_is_asked(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = load_model("openai:gpt-4o-audio-preview")  # OpenAI's endpoint: a key is needed
    model.warm_up()
    model.client._loop.run(asyncio.sleep(0))
    assert model.client._loop.session is None  # the warm-up made nothing and raised nothing
    prompt = Prompt.of(_item(0), "Who speaks?", [np.zeros(SR // 10, dtype=np.float32)], [Path("c0.wav")])
    try:
        model.generate([prompt], GenerationParams())
    except MissingAPIKeyError as exc:
        assert "OPENAI_API_KEY" in str(exc)
    else:
        raise AssertionError("no error for a missing key")
    finally:
        model.close()
