"""Every registered family adapter runs: a tiny random model of the family, built offline with the family's real
processor, answers a batch of prompts with audio through ``HFAudioLM`` (real ``generate``), batched equal to one by
one (greedy). Also the loading options (device map, attention kernel) and the one-line loading errors.

``pytest -k adapters`` selects this file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from airbench_nb.models import GenerationParams, Prompt, SpecError, load_model
from airbench_nb.models.hf import ADAPTERS, UNSUPPORTED, HFAudioLM
from airbench_nb.models.tiny import BUILDERS
from airbench_nb.records import FoundationItem

FAMILIES = sorted({cls.name for cls in ADAPTERS.values()})
"""Every family the registry serves: each must have a tiny builder and pass the batch test."""

NEEDS: dict[str, str] = {"voxtral": "mistral_common"}
"""Optional package each family's processor needs (installed by ``pip install -e '.[voxtral]'``, as CI does)."""

GREEDY = GenerationParams(max_new_tokens=6)


def _prompt(i: int, seconds: float) -> Prompt:
    item = FoundationItem(
        uid=f"adapters-{i}",
        dataset="synthetic",
        audio=f"audio/{i}.wav",
        question="What is the gender of the speaker?",
        task="Speaker_Gender_Recognition",
        choices=["male", "female"],
        answer=0,
    )
    rng = np.random.default_rng(i)
    t = np.arange(int(seconds * 16000)) / 16000
    audio = (0.3 * np.sin(2 * np.pi * (150 + 60 * i) * t) + 0.05 * rng.standard_normal(t.size)).astype(np.float32)
    text = f"Choose A or B.\n{item.question} (item {i})\nA. male\nB. female"
    return Prompt(item=item, text=text, audio=audio, audio_path=Path(item.audio))


@pytest.fixture(scope="module", autouse=True)
def one_cpu_thread():
    """Tiny models run fastest on one thread on a shared 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny-adapters")


def _built(family: str, root: Path) -> Path:
    if family in NEEDS:
        pytest.importorskip(NEEDS[family], reason=f"{family} needs {NEEDS[family]}: pip install -e '.[{family}]'")
    folder = root / family
    return folder if (folder / "config.json").exists() else BUILDERS[family](folder)


def test_adapters_every_family_has_a_tiny_builder():
    assert FAMILIES == ["audioflamingo3", "qwen2_5_omni", "qwen2_audio", "voxtral", "whisper"]
    assert set(FAMILIES) <= set(BUILDERS)
    assert not set(UNSUPPORTED) & set(ADAPTERS)


@pytest.mark.parametrize("family", FAMILIES)
def test_adapters_batch_equals_one_by_one(family, tiny_root):
    lm = load_model(f"hf:{_built(family, tiny_root)}", batch_size=2, device="cpu")
    try:
        assert isinstance(lm, HFAudioLM) and lm.family == family
        prompts = [_prompt(0, 0.7), _prompt(1, 2.3)]
        batched = lm.generate(prompts, GREEDY)
        singles = [lm.generate([p], GREEDY)[0] for p in prompts]
        assert all(g.error is None and g.text is not None for g in batched), [g.error for g in batched]
        assert [g.text for g in batched] == [g.text for g in singles]
        assert [g.output_tokens for g in batched] == [g.output_tokens for g in singles]
        assert [g.input_tokens for g in batched] == [g.input_tokens for g in singles]
        assert all(0 < g.output_tokens <= GREEDY.max_new_tokens for g in batched)
    finally:
        lm.close()


def test_adapters_device_map_auto_and_attention(tiny_root):
    pytest.importorskip("accelerate", reason="device 'auto' needs accelerate: pip install -e '.[gpu]'")
    path = _built("qwen2_audio", tiny_root)
    prompts = [_prompt(0, 0.7), _prompt(1, 2.3)]
    plain = load_model(f"hf:{path}", batch_size=2, device="cpu")
    mapped = load_model(f"hf:{path}", batch_size=2, device="auto", attn="eager")
    try:
        assert mapped.device_map == "auto" and plain.device_map is None
        assert mapped.model.config._attn_implementation == "eager"
        assert plain.model.config._attn_implementation == "sdpa"  # transformers' default where supported
        expected = [g.text for g in plain.generate(prompts, GREEDY)]
        assert [g.text for g in mapped.generate(prompts, GREEDY)] == expected
    finally:
        plain.close()
        mapped.close()


def test_adapters_errors_are_one_line(tmp_path, tiny_root, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SpecError) as hub:
        HFAudioLM("nobody-here/Qwen2-Audio-7B-Instruct-x")
    message = str(hub.value)
    assert "\n" not in message and "'nobody-here/Qwen2-Audio-7B-Instruct-x'" in message
    assert "HF_HUB_OFFLINE" in message and "hf download" in message and "folder" in message

    (tmp_path / "not-a-checkpoint").mkdir()
    with pytest.raises(SpecError, match="no config.json"):
        HFAudioLM(str(tmp_path / "not-a-checkpoint"))

    granite = tmp_path / "granite"
    granite.mkdir()
    (granite / "config.json").write_text('{"model_type": "granite_speech"}')
    with pytest.raises(SpecError) as unsupported:
        HFAudioLM(str(granite))
    assert "\n" not in str(unsupported.value)
    assert "'granite_speech' is not supported (its feature extractor needs torchaudio" in str(unsupported.value)
    assert "supported: audioflamingo3, qwen2_5_omni, qwen2_audio, voxtral, whisper" in str(unsupported.value)

    path = _built("qwen2_audio", tiny_root)
    with pytest.raises(SpecError, match="unknown attention 'fast'"):
        HFAudioLM(str(path), device="cpu", attn="fast")
    with pytest.raises(SpecError, match="unknown dtype 'int3'"):
        HFAudioLM(str(path), device="cpu", dtype="int3")


def test_adapters_cli_offline_hub_id_is_one_line(tmp_path):
    manifest = tmp_path / "foundation.jsonl"
    manifest.write_text("")
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "300"}
    done = subprocess.run(
        [sys.executable, "-m", "airbench_nb.cli", "infer", "--model", "hf:Qwen/Qwen2-Audio-7B-Instruct-nope"]
        + ["--manifest", str(manifest), "--out", str(tmp_path / "r.jsonl"), "--device", "cpu"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "Qwen/Qwen2-Audio-7B-Instruct-nope" in lines[0] and "HF_HUB_OFFLINE" in lines[0]
