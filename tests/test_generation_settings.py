"""Generation settings as the paper's protocol wants them (issue 13, part 5): greedy by default, a length bound per kind
of item unless one is given, the settings and the prompt set recorded in every response, and the prompt of every
response rebuilt from its record and its item (text and hash) exactly as the model got it.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from airbench_nb.manifests import read_records, write_manifest
from airbench_nb.models import GenerationParams, Prompt, load_model
from airbench_nb.models.base import DEFAULT_MAX_NEW_TOKENS, Generation, default_max_new_tokens
from airbench_nb.prompts import PromptSet, item_prompt_hash, item_prompts
from airbench_nb.records import FoundationItem, Response
from airbench_nb.runner import run_model
from tests.test_models_multi import make_items

GREEDY_64 = {"greedy": True, "max_new_tokens": 64, "temperature": 0.0, "top_p": 1.0, "seed": None}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("settings-data")
    return root, make_items(root)


class Recorder:
    """A backend that answers ``answer <turn>`` and records every prompt and the parameters it was called with."""

    spec = "test:recorder"
    batch_size = 3

    def __init__(self) -> None:
        self.calls: list[tuple[list[Prompt], GenerationParams]] = []

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        self.calls.append((list(prompts), params))
        return [Generation(text=f"answer {p.turn + 1} to {p.uid}") for p in prompts]

    def close(self) -> None:
        pass

    def seen(self, uid: str) -> list[tuple[Prompt, GenerationParams]]:
        return [(p, params) for prompts, params in self.calls for p in prompts if p.uid == uid]


def test_defaults_by_kind():
    assert DEFAULT_MAX_NEW_TOKENS == {
        "foundation": 64,
        "chat": 512,
        "cot": 512,
        "transcription": 256,
        "scene": 64,
        "events": 128,
        "joint": 384,
        "sseu-cot": 1024,
        "translation": 256,
        "caption": 96,
        "speech_generation": 512,
        "sound_source": 64,
        "sound_source_open": 128,
    }
    params = GenerationParams()
    assert params.greedy and params.max_new_tokens is None and params.temperature == 0.0


def test_runner_records_greedy_and_the_bound_of_each_kind(data, tmp_path):
    root, items = data
    chosen = [items[u] for u in ("pitch", "single", "followup")]
    recorder = Recorder()
    run_model(recorder, chosen, root, tmp_path / "r.jsonl", progress=False)
    got = {r.uid: r for r in read_records(tmp_path / "r.jsonl", Response)}
    assert got["pitch"].generation == got["single"].generation == GREEDY_64
    assert got["followup"].generation == {**GREEDY_64, "max_new_tokens": 512}
    assert {r.prompt_set for r in got.values()} == {"airbench"}
    # one backend call per length bound: the Foundation items together, each Chat turn apart
    bounds = sorted(params.max_new_tokens for _, params in recorder.calls)
    assert bounds == [64, 512, 512, 512]
    assert all(params.max_new_tokens == 512 for _, params in recorder.seen("followup"))


def test_explicit_settings_override_every_kind(data, tmp_path):
    root, items = data
    chosen = [items[u] for u in ("pitch", "followup")]
    params = GenerationParams(max_new_tokens=7, temperature=0.5, top_p=0.9, seed=3)
    recorder = Recorder()
    run_model(recorder, chosen, root, tmp_path / "r.jsonl", params=params, progress=False)
    expected = {"greedy": False, "max_new_tokens": 7, "temperature": 0.5, "top_p": 0.9, "seed": 3}
    assert [r.generation for r in read_records(tmp_path / "r.jsonl", Response)] == [expected, expected]
    assert {p for _, p in recorder.calls} == {params}


def test_cot_prompts_get_room_to_reason(data, tmp_path):
    root, items = data
    run_model(Recorder(), [items["single"]], root, tmp_path / "r.jsonl", prompts=PromptSet.named("cot"), progress=False)
    [response] = read_records(tmp_path / "r.jsonl", Response)
    assert response.prompt_set == "cot" and response.generation["max_new_tokens"] == 512
    assert default_max_new_tokens(items["single"], "cot") == 512 == default_max_new_tokens(items["followup"])


@pytest.mark.parametrize("prompt_set", ["airbench", "official", "cot", "file"])
def test_prompt_is_rebuilt_from_the_record_and_the_item(prompt_set, data, tmp_path):
    """From a response record and its item alone: every turn's text the model got, and the recorded prompt hash."""
    root, items = data
    if prompt_set == "file":
        template = tmp_path / "mine.json"
        template.write_text(
            json.dumps({"multi_clip_intro": "{count} clips follow ({clips}).", "chat_template": "Q: {question}"})
        )
        prompt_set = str(template)
    recorder = Recorder()
    out = tmp_path / "r.jsonl"
    run_model(recorder, list(items.values()), root, out, prompts=PromptSet.named(prompt_set), progress=False)
    responses = read_records(out, Response)
    assert len(responses) == len(items)
    for record in responses:
        item = items[record.uid]
        rebuilt = PromptSet.named(record.prompt_set)  # the record names the set (a file by its path)
        texts = item_prompts(item, rebuilt)
        assert item_prompt_hash(item, rebuilt) == record.prompt_hash
        seen = recorder.seen(record.uid)
        assert [p.turn_texts for p, _ in seen] == [texts[: k + 1] for k in range(len(texts))]
        assert [p.history for p, _ in seen] == [
            list(zip(texts[:k], record.turns[:k], strict=True)) for k in range(len(texts))
        ]
        names = {f.name for f in fields(GenerationParams)}
        assert {params for _, params in seen} == {GenerationParams(**{k: record.generation[k] for k in names})}
        assert [p.audio_paths for p, _ in seen][0] == [root / c for c in item.clips]
        if item.multi_clip:
            assert texts[0].splitlines()[0].startswith("2 clips follow" if prompt_set.endswith(".json") else "You are")


def test_infer_command_defaults_and_override(data, tmp_path):
    from typer.testing import CliRunner

    from airbench_nb.cli import app

    root, items = data
    manifest = write_manifest(root / "mixed.jsonl", [items["pitch"], items["followup"]])
    runner = CliRunner()
    out = tmp_path / "default.jsonl"
    done = runner.invoke(app, ["infer", "--model", "baseline:oracle", "--manifest", str(manifest), "--out", str(out)])
    assert done.exit_code == 0, done.output
    bounds = {r.uid: r.generation["max_new_tokens"] for r in read_records(out, Response)}
    assert bounds == {"pitch": 64, "followup": 512}
    out = tmp_path / "five.jsonl"
    args = ["infer", "--model", "baseline:oracle", "--manifest", str(manifest), "--out", str(out)]
    done = runner.invoke(app, [*args, "--max-new-tokens", "5", "--prompt-set", "cot"])
    assert done.exit_code == 0, done.output
    assert [(r.generation["max_new_tokens"], r.prompt_set) for r in read_records(out, Response)] == [(5, "cot")] * 2
    refused = runner.invoke(app, [*args, "--max-new-tokens", "0"])
    assert refused.exit_code == 2


def test_openai_request_carries_the_bound_of_the_items_kind(data, tmp_path):
    from airbench_nb.models.openai_api import OpenAIAudioLM
    from tests.test_models_multi import AUDIO

    _, items = data
    model = OpenAIAudioLM("tiny-audio@http://127.0.0.1:9/v1")  # nothing is sent: request() only builds the body
    foundation = Prompt.of(items["single"], "q", [AUDIO["single.wav"]], [Path("s")])
    chat = Prompt.of(items["followup"], "q", [AUDIO["scene.wav"]], [Path("c")])
    assert model.request(foundation, GenerationParams()).params == {"temperature": 0.0, "max_tokens": 64}
    assert model.request(chat, GenerationParams()).params["max_tokens"] == 512
    assert model.request(chat, GenerationParams(max_new_tokens=9)).params["max_tokens"] == 9
    model.close()


def test_hf_resolves_the_bound_per_prompt(data, tmp_path):
    """A direct call with no bound: one generate call per kind, each with its own bound (and greedy)."""
    from airbench_nb.models.tiny import build_tiny_qwen2_audio
    from tests.test_models_multi import AUDIO

    _, items = data
    lm = load_model(f"hf:{build_tiny_qwen2_audio(tmp_path / 'qwen')}", batch_size=4, device="cpu")
    calls: list[tuple[list[str], dict]] = []

    def fake_chunk(prompts, params):
        calls.append(([p.uid for p in prompts], lm._generation_kwargs(params)))
        return [Generation(text="x", input_tokens=1, output_tokens=1) for _ in prompts]

    lm._generate_chunk = fake_chunk
    try:
        prompts = [
            Prompt.of(items["single"], "q", [AUDIO["single.wav"]], [Path("s")]),
            Prompt.of(items["followup"], "q", [AUDIO["scene.wav"]], [Path("c")]),
            Prompt.of(items["pitch"], "q", [AUDIO["low.wav"], AUDIO["high.wav"]], [Path("a"), Path("b")]),
        ]
        out = lm.generate(prompts, GenerationParams())
    finally:
        lm.close()
    assert [g.text for g in out] == ["x", "x", "x"]
    bounds = {tuple(sorted(uids)): kwargs["max_new_tokens"] for uids, kwargs in calls}
    assert bounds == {("pitch", "single"): 64, ("followup",): 512}
    assert all(kwargs["do_sample"] is False and kwargs["temperature"] is None for _, kwargs in calls)


def test_foundation_item_bound_is_short_enough_for_a_letter():
    item = FoundationItem(
        uid="x",
        dataset="synthetic",
        audio="a.wav",
        question="q",
        task="Speaker_Gender_Recognition",
        choices=["male", "female"],
        answer=0,
    )
    assert GenerationParams().for_item(item).max_new_tokens == 64
    assert GenerationParams(max_new_tokens=3).for_item(item).max_new_tokens == 3
