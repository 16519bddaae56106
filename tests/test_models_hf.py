"""The transformers backend on tiny random models built offline: Qwen2-Audio and Qwen2.5-Omni (thinker)."""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from airbench_nb.models import AudioLM, GenerationParams, Prompt, load_model
from airbench_nb.models.hf import (
    ADAPTERS,
    UNSUPPORTED,
    AudioOnlyProcessor,
    FamilyAdapter,
    HFAudioLM,
    Qwen2AudioAdapter,
    UnsupportedFamily,
    adapter_for,
    register_adapter,
    resolve_device,
    resolve_dtype,
)
from airbench_nb.records import FoundationItem

SECONDS = (0.5, 3.0, 1.2, 2.0, 0.8, 2.5)
"""Audio lengths of the test prompts: unsorted, all different, more of them than one batch of 4."""

GREEDY = GenerationParams(max_new_tokens=10)

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def make_prompt(i: int, seconds: float, sample_rate: int = 16000) -> Prompt:
    item = FoundationItem(
        uid=f"item-{i}",
        dataset="synthetic",
        audio=f"audio/{i}.wav",
        question="What is the gender of the speaker?",
        task="Speaker_Gender_Recognition",
        choices=["male", "female"],
        answer=i % 2,
    )
    rng = np.random.default_rng(i)
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    audio = 0.3 * np.sin(2 * np.pi * (120 + 40 * i) * t) + 0.05 * rng.standard_normal(t.size)
    text = f"Choose A or B.\n{item.question} (item {i})\nA. male\nB. female"
    return Prompt(
        item=item, text=text, audio=audio.astype(np.float32), audio_path=Path(item.audio), sample_rate=sample_rate
    )


@pytest.fixture(scope="module", autouse=True)
def one_cpu_thread():
    """Run the tiny models on one thread: on a shared 2-core machine, two OpenMP threads contend and run ~10x slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tiny_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from airbench_nb.models.tiny import build_tiny_qwen2_5_omni, build_tiny_qwen2_audio

    root = tmp_path_factory.mktemp("tiny-models")
    return {
        "qwen2_audio": build_tiny_qwen2_audio(root / "qwen2-audio"),
        "qwen2_5_omni": build_tiny_qwen2_5_omni(root / "qwen2.5-omni"),
    }


@pytest.fixture(scope="module")
def qwen(tiny_paths) -> HFAudioLM:
    lm = load_model(f"hf:{tiny_paths['qwen2_audio']}", batch_size=4, device="cpu", concurrency=3)
    yield lm
    lm.close()


@pytest.fixture(scope="module")
def prompts() -> list[Prompt]:
    return [make_prompt(i, s) for i, s in enumerate(SECONDS)]


@pytest.fixture(scope="module")
def one_by_one(qwen, prompts):
    return [qwen.generate([p], GREEDY)[0] for p in prompts]


def test_load_model_builds_hf_backend_offline(qwen, tiny_paths):
    assert isinstance(qwen, AudioLM) and isinstance(qwen, HFAudioLM)
    assert qwen.spec == f"hf:{tiny_paths['qwen2_audio']}"
    assert qwen.batch_size == 4
    assert qwen.family == "qwen2_audio" and qwen.model_type == "qwen2_audio"
    assert qwen.device.type == "cpu" and qwen.dtype == torch.float32
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # set by conftest; a local folder is read with local_files_only
    assert qwen.processor.tokenizer.padding_side == "left"


def test_batched_greedy_equals_one_by_one(qwen, prompts, one_by_one):
    batched = qwen.generate(prompts, GREEDY)  # 6 prompts, batch 4: two chunks, sorted by length
    assert [g.text for g in batched] == [g.text for g in one_by_one]
    assert [g.output_tokens for g in batched] == [g.output_tokens for g in one_by_one]
    assert [g.input_tokens for g in batched] == [g.input_tokens for g in one_by_one]
    assert all(g.error is None and g.text is not None for g in batched)
    assert len({g.text for g in batched}) > 1, "a degenerate model would make the comparison vacuous"


def test_output_order_matches_input_order(qwen, prompts, one_by_one):
    reordered = [prompts[i] for i in (3, 0, 5, 1)]
    out = qwen.generate(reordered, GREEDY)
    assert [g.text for g in out] == [one_by_one[i].text for i in (3, 0, 5, 1)]


def test_token_counts_follow_audio_length(one_by_one):
    # Longer audio -> more <|AUDIO|> placeholders; input tokens exclude the left padding.
    by_length = [g.input_tokens for _, g in sorted(zip(SECONDS, one_by_one, strict=True))]
    assert by_length == sorted(by_length) and len(set(by_length)) == len(by_length)
    assert all(0 < g.output_tokens <= GREEDY.max_new_tokens for g in one_by_one)


def test_max_new_tokens_respected(qwen, prompts, one_by_one):
    short = qwen.generate(prompts[:3], GenerationParams(max_new_tokens=3))
    assert all(g.output_tokens <= 3 for g in short)
    assert any(len(s.text) < len(g.text) for s, g in zip(short, one_by_one, strict=False))


def test_sampling_uses_seed(qwen, prompts):
    params = GenerationParams(max_new_tokens=8, temperature=1.0, top_p=0.9, seed=7)
    first = qwen.generate(prompts[:3], params)
    again = qwen.generate(prompts[:3], params)
    assert [g.text for g in first] == [g.text for g in again]
    assert all(g.error is None for g in first)


def test_bad_audio_fails_alone(qwen, prompts, one_by_one):
    empty = make_prompt(99, 0.0)
    stereo = make_prompt(98, 1.0)
    stereo.audio = np.stack([stereo.audio, stereo.audio])
    out = qwen.generate([prompts[0], empty, prompts[1], stereo], GREEDY)
    assert [g.text for g in (out[0], out[2])] == [one_by_one[0].text, one_by_one[1].text]
    assert out[1].text is None and "empty" in out[1].error
    assert out[3].text is None and "mono" in out[3].error


def test_other_sample_rates_are_resampled(qwen):
    at_8k, at_16k = qwen.generate([make_prompt(5, 1.0, sample_rate=8000), make_prompt(5, 1.0)], GREEDY)
    assert at_8k.error is None and at_8k.text is not None
    assert at_8k.input_tokens == at_16k.input_tokens  # same duration, same number of audio placeholders


def test_cuda_oom_halves_the_batch(qwen, prompts, one_by_one, monkeypatch, caplog):
    lm = qwen
    monkeypatch.setattr(lm, "_batch_cap", None)  # restored after the test, with generate
    real_generate = lm._generator.generate
    sizes: list[int] = []

    def generate(**kwargs):
        sizes.append(kwargs["input_ids"].shape[0])
        if sizes[-1] > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return real_generate(**kwargs)

    monkeypatch.setattr(lm._generator, "generate", generate)
    with caplog.at_level(logging.WARNING, logger="airbench_nb.models.hf"):
        out = lm.generate(prompts, GREEDY)
    assert sizes == [4, 2, 2, 2]
    assert lm.effective_batch_size == 2 and lm.batch_size == 4
    assert [g.text for g in out] == [g.text for g in one_by_one]
    assert "out of memory" in caplog.text


def test_cuda_oom_on_one_item_is_that_items_error(qwen, prompts, one_by_one, monkeypatch):
    lm = qwen
    monkeypatch.setattr(lm, "_batch_cap", None)
    real_generate = lm._generator.generate
    longest = max(g.input_tokens for g in one_by_one[:4])

    def generate(**kwargs):
        ids = kwargs["input_ids"]
        if ids.shape[0] > 1 or ids.shape[1] == longest:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return real_generate(**kwargs)

    monkeypatch.setattr(lm._generator, "generate", generate)
    out = lm.generate(prompts[:4], GREEDY)  # 4 fail together, then 2, then the longest alone
    worst = SECONDS.index(max(SECONDS[:4]))
    assert out[worst].text is None and "out of memory" in out[worst].error
    others = [i for i in range(4) if i != worst]
    assert [out[i].text for i in others] == [one_by_one[i].text for i in others]
    assert lm.effective_batch_size == 1


def test_second_family_qwen2_5_omni(tiny_paths):
    lm = load_model(f"hf:{tiny_paths['qwen2_5_omni']}", batch_size=3)
    assert lm.family == "qwen2_5_omni" and lm.model_type == "qwen2_5_omni"
    assert isinstance(lm.processor, AudioOnlyProcessor)  # no torchvision here: tokenizer + feature extractor
    assert type(lm._generator).__name__ == "Qwen2_5OmniThinkerForConditionalGeneration"
    few = [make_prompt(i, s) for i, s in enumerate((2.0, 0.6, 1.4))]
    params = GenerationParams(max_new_tokens=6)
    batched = lm.generate(few, params)
    singles = [lm.generate([p], params)[0] for p in few]
    assert [g.text for g in batched] == [g.text for g in singles]
    assert all(g.error is None and g.output_tokens and g.input_tokens for g in batched)
    lm.close()


def test_conversation_puts_audio_first(qwen, prompts):
    prompt = prompts[0]
    messages = qwen.adapter.conversation(prompt)
    assert [m["role"] for m in messages] == ["user"]
    assert [part["type"] for part in messages[0]["content"]] == ["audio", "text"]
    rendered = qwen.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert rendered.index("<|AUDIO|>") < rendered.index(prompt.text) < rendered.rindex("<|im_start|>assistant")
    with_system = qwen.adapter.conversation(replace(prompt, system="Be brief."))
    assert with_system[0] == {"role": "system", "content": "Be brief."}


def test_adapter_registry():
    assert isinstance(adapter_for("qwen2_audio"), Qwen2AudioAdapter)
    assert adapter_for("qwen2_5_omni_thinker").name == "qwen2_5_omni"
    assert {cls.name for cls in ADAPTERS.values()} == {
        "qwen2_audio",
        "qwen2_5_omni",
        "audioflamingo3",
        "voxtral",
        "whisper",
    }
    assert adapter_for("whisper").kinds == frozenset({"transcription"}) and adapter_for("qwen2_audio").kinds is None
    assert not set(UNSUPPORTED) & set(ADAPTERS)  # a family is either served (and tested) or explained
    with pytest.raises(UnsupportedFamily, match="model type 'some_future_audio_lm' is not supported; supported: aud"):
        adapter_for("some_future_audio_lm")
    with pytest.raises(UnsupportedFamily, match="granite_speech.*torchaudio"):
        adapter_for("granite_speech")
    with pytest.raises(UnsupportedFamily, match="model family 'nope'"):
        adapter_for("qwen2_audio", family="nope")

    @register_adapter
    class MyAdapter(FamilyAdapter):
        name = "my_family"
        model_types = ("my_model_type",)

    try:
        assert isinstance(adapter_for("my_model_type"), MyAdapter)
        assert isinstance(adapter_for("qwen2_audio", family="my_family"), MyAdapter)
    finally:
        ADAPTERS.pop("my_family")
        ADAPTERS.pop("my_model_type")


def test_dtype_defaults():
    cpu = torch.device("cpu")
    assert resolve_dtype(None, cpu) == torch.float32
    assert resolve_dtype(None, cpu, torch.bfloat16) == torch.float32  # the checkpoint's dtype matters on CUDA only
    assert resolve_dtype("bf16", cpu) == torch.bfloat16
    with pytest.raises(ValueError, match="unknown dtype"):
        resolve_dtype("int3", cpu)


def test_dtype_on_cuda_follows_the_checkpoint(monkeypatch):
    cuda = torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_dtype(None, cuda, torch.float16) == torch.float16
    assert resolve_dtype("auto", cuda, torch.bfloat16) == torch.bfloat16
    assert resolve_dtype(None, cuda, None) == torch.bfloat16  # names none: bf16
    assert resolve_dtype(None, cuda, torch.float32) == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve_dtype(None, cuda, torch.bfloat16) == torch.float16


def test_device_resolution(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device(None) == (torch.device("cpu"), None)
    assert resolve_device("auto") == (torch.device("cpu"), "auto")
    assert resolve_device("cpu") == (torch.device("cpu"), None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device(None) == (torch.device("cuda"), None)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    assert resolve_device(None) == (torch.device("cuda:0"), "auto")  # several GPUs: spread with accelerate
    assert resolve_device("cuda:1") == (torch.device("cuda:1"), None)


@pytest.mark.gpu
@needs_cuda
def test_hf_backend_on_cuda(tiny_paths, prompts):
    lm = load_model(f"hf:{tiny_paths['qwen2_audio']}", batch_size=4)
    assert lm.device.type == "cuda" and lm.dtype in (torch.bfloat16, torch.float16)
    assert next(lm.model.parameters()).device.type == "cuda"
    out = lm.generate(prompts, GREEDY)
    assert all(g.error is None and g.text is not None and g.output_tokens for g in out)
    reordered = lm.generate(prompts[::-1], GREEDY)
    assert [g.input_tokens for g in reordered] == [g.input_tokens for g in out][::-1]
    lm.close()
    assert not hasattr(lm, "model")


def test_a_prompt_without_audio_goes_as_text_alone_in_its_own_batch(qwen, prompts, one_by_one):
    """An audio-reliance control asked without audio (``no_audio``): no audio part, no audio features, batched apart
    from the prompts with audio (which answer as they do alone); a family that cannot is not asked it."""
    from airbench_nb.models import not_applicable_reason

    silent = replace(prompts[1], without_audio=True)
    assert qwen.text_alone and qwen.adapter.conversation(silent)[0]["content"] == [
        {"type": "text", "text": silent.text}
    ]
    encoded = qwen.adapter.encode(qwen.processor, [silent])
    assert "input_features" not in encoded  # the processor extracted nothing: the model hears nothing
    mixed = qwen.generate([prompts[0], silent, prompts[2]], GREEDY)
    assert all(g.error is None for g in mixed)
    assert [mixed[0].text, mixed[2].text] == [one_by_one[0].text, one_by_one[2].text]
    alone = qwen.generate([silent], GREEDY)[0]
    assert mixed[1].text == alone.text and alone.input_tokens < one_by_one[1].input_tokens  # no audio tokens
    marks = {"control_of": "item-1", "control": "no_audio", "control_without_audio": True}
    control = prompts[1].item.model_copy(update={"uid": "item-1@ctl-no_audio", "meta": marks})
    assert not_applicable_reason(qwen, control) is None

    class Transcriber:
        spec, kinds, text_alone = "hf:whisper", None, False

    assert not_applicable_reason(Transcriber(), control) == "hf:whisper cannot be prompted without audio"
    assert not_applicable_reason(Transcriber(), prompts[1].item) is None
