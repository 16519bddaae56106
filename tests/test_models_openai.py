"""The ``openai:`` backend against a local OpenAI-compatible server that checks the audio really arrives."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from airbench_nb.api_client import ChatRequest
from airbench_nb.models import AudioLM, GenerationParams, Prompt, SpecError, load_model
from airbench_nb.models.openai_api import OpenAIAudioLM, wav_base64
from airbench_nb.records import FoundationItem
from tests.openai_server import Fault, OpenAITestServer

SR = 16000


@pytest.fixture
def server():
    with OpenAITestServer(latency_s=0.05) as srv:
        yield srv


def make_prompt(uid: str, seconds: float, text: str, system: str | None = None) -> Prompt:
    t = np.arange(int(round(seconds * SR))) / SR
    audio = (0.3 * np.sin(2 * np.pi * 220.0 * t)).astype(np.float32)
    item = FoundationItem(
        uid=uid,
        dataset="synthetic",
        audio=f"{uid}.wav",
        task="Speaker_Gender_Recognition",
        question="Who speaks?",
        choices=["male", "female"],
        answer=0,
    )
    return Prompt(item=item, text=text, audio=audio, audio_path=Path(f"{uid}.wav"), system=system)


def test_generate_sends_the_audio_in_order_with_bounded_concurrency(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = load_model(f"openai:tiny-audio@{server.base_url}", concurrency=3, batch_size=16, device="cpu")
    assert isinstance(model, AudioLM) and isinstance(model, OpenAIAudioLM)
    assert model.spec == f"openai:tiny-audio@{server.base_url}" and model.batch_size == 16
    durations = [0.25, 1.5, 0.5, 2.0, 0.75, 1.0, 0.3, 1.25]
    prompts = [
        make_prompt(f"u{i}", d, f"question {i}: who speaks?", system="Answer briefly.") for i, d in enumerate(durations)
    ]
    params = GenerationParams(max_new_tokens=32, temperature=0.0, seed=7)
    generations = model.generate(prompts, params)

    assert len(generations) == len(prompts)
    for prompt, seconds, gen in zip(prompts, durations, generations, strict=True):
        assert gen.error is None, gen.error
        assert gen.text == f"tiny-audio heard {seconds:.3f}s: {prompt.text}"  # order kept, audio decoded
        assert server.seen.audio_seconds[prompt.text] == [pytest.approx(seconds, abs=1 / SR)]
        assert gen.input_tokens and gen.output_tokens
    assert 2 <= server.seen.max_in_flight <= 3
    assert server.seen.authorization == {"Bearer EMPTY"}  # local server, no key needed

    body = server.seen.bodies[0]
    assert body["model"] == "tiny-audio"
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.0, 32, 7) and "top_p" not in body
    system, user = body["messages"]
    assert system == {"role": "system", "content": "Answer briefly."}
    audio_part, text_part = user["content"]
    assert audio_part["type"] == "input_audio" and audio_part["input_audio"]["format"] == "wav"
    assert text_part["type"] == "text" and text_part["text"].startswith("question ")
    model.close()


def test_one_bad_item_does_not_stop_the_others(server):
    server.plan = {"reject me": [Fault("400")]}
    model = OpenAIAudioLM(f"tiny-audio@{server.base_url}", concurrency=4, timeout_s=2)
    prompts = [
        make_prompt("ok1", 0.5, "fine one"),
        make_prompt("empty", 0.0, "no samples"),
        make_prompt("bad", 0.5, "reject me please"),
        make_prompt("ok2", 0.4, "fine two"),
    ]
    generations = model.generate(prompts, GenerationParams(temperature=0.7, top_p=0.9))
    assert [g.error is None for g in generations] == [True, False, False, True]
    assert "audio is empty" in generations[1].error and generations[1].text is None
    assert "400" in generations[2].error
    assert generations[3].text == "tiny-audio heard 0.400s: fine two"
    assert server.seen.attempts["no samples"] == 0 and server.seen.attempts["reject me please"] == 1
    assert server.seen.bodies[0]["top_p"] == 0.9


def test_server_rejects_a_request_without_real_audio(server):
    """The server really checks the audio: garbage is a 400 (not retried), so passing tests mean the audio arrived."""
    model = OpenAIAudioLM(f"tiny-audio@{server.base_url}")
    good = model.request(make_prompt("g", 0.5, "good audio"), GenerationParams())
    bad = ChatRequest(
        "tiny-audio",
        [
            {
                "role": "user",
                "content": [
                    {"type": "input_audio", "input_audio": {"data": "bm90IGEgd2F2", "format": "wav"}},
                    {"type": "text", "text": "garbage audio"},
                ],
            }
        ],
    )
    ok, rejected = model.client.run_sync([good, bad])
    assert ok.ok and rejected.error is not None and "not a readable wav" in rejected.error
    assert server.seen.attempts["garbage audio"] == 1


def test_key_from_a_named_variable_and_cache(server, monkeypatch, tmp_path):
    monkeypatch.setenv("VLLM_KEY", "token-abc-123")
    cache = tmp_path / "answers.sqlite"
    spec = f"openai:tiny-audio@{server.base_url}"
    prompts = [make_prompt(f"k{i}", 0.2 + 0.1 * i, f"cached question {i}") for i in range(3)]
    first = load_model(spec, api_key_env="VLLM_KEY", cache_path=str(cache)).generate(prompts, GenerationParams())
    assert server.seen.authorization == {"Bearer token-abc-123"}
    server.reset()
    again = load_model(spec, api_key_env="VLLM_KEY", cache_path=str(cache)).generate(prompts, GenerationParams())
    assert server.seen.chat_requests == 0 and [g.text for g in again] == [g.text for g in first]
    assert b"token-abc-123" not in b"".join(p.read_bytes() for p in tmp_path.glob("answers.sqlite*"))


def test_generate_inside_a_running_event_loop(server):
    model = load_model(f"openai:tiny-audio@{server.base_url}")

    async def notebook_cell():
        return model.generate([make_prompt("nb", 0.5, "from jupyter")], GenerationParams())

    [gen] = asyncio.run(notebook_cell())
    assert gen.text == "tiny-audio heard 0.500s: from jupyter"


def test_bad_specs():
    with pytest.raises(SpecError):
        load_model("openai:")
    with pytest.raises(ValueError, match="http"):
        load_model("openai:tiny@127.0.0.1:8000/v1")
    model = load_model("openai:gpt-4o-audio-preview")
    assert model.base_url is None and model.model == "gpt-4o-audio-preview"  # OpenAI itself; nothing sent here


def test_wav_base64_round_trip():
    import base64
    import io

    import soundfile as sf

    audio = np.linspace(-1.5, 1.5, 8000, dtype=np.float32)
    decoded, sr = sf.read(io.BytesIO(base64.b64decode(wav_base64(audio, 8000))), dtype="float32")
    assert sr == 8000 and decoded.shape == (8000,) and np.abs(decoded).max() <= 1.0
    for bad in (np.zeros((2, 100), np.float32), np.array([np.nan], np.float32)):
        with pytest.raises(ValueError):
            wav_base64(bad, SR)
