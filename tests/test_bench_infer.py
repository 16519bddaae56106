"""bench/bench_infer.py: the scaled CPU config runs and prints its table; on CUDA a 2-layer real-width run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_infer.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_infer", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_infer"] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("bench_infer", None)


def _check_report(text: str, batches: list[int]) -> None:
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("mode"))
    assert header.split() == ["mode", "batch", "samples/s", "tokens/s", "vs", "one-by-one"]
    rows = [line for line in lines if line.startswith(("one-by-one", "batched"))]
    assert [row.split()[-4] for row in rows] == [str(b) for b in [1, *batches]]
    assert rows[0].endswith("1.00x")
    assert all(float(row.split()[-3]) > 0 and float(row.split()[-2]) > 0 for row in rows)
    assert any(line.startswith("batch-1 decode:") and "% of it" in line for line in lines)


def test_bench_infer_cpu_scaled_config(bench):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        args = bench.parser().parse_args(
            ["--random-weights", "--device", "cpu", "--prompts", "4", "--batches", "2", "4"]
            + ["--new-tokens", "3", "--repeats", "1", "--max-seconds", "2"]
        )
        text = bench.run(args)
    finally:
        torch.set_num_threads(threads)
    assert "SCALED DOWN for CPU" in text and "float32" in text
    _check_report(text, [2, 4])


def test_bench_infer_config_is_qwen2_audio_7b(bench):
    text, audio = bench.QWEN2_AUDIO_7B["text_config"], bench.QWEN2_AUDIO_7B["audio_config"]
    assert (text["hidden_size"], text["num_hidden_layers"], text["intermediate_size"]) == (4096, 32, 11008)
    assert (text["vocab_size"], audio["d_model"], audio["encoder_layers"]) == (156032, 1280, 32)


@pytest.mark.gpu
def test_bench_infer_gpu_two_layers(bench):
    args = bench.parser().parse_args(
        ["--random-weights", "--device", "cuda", "--layers", "2", "--prompts", "8", "--batches", "4", "8"]
        + ["--new-tokens", "8", "--repeats", "1"]
    )
    text = bench.run(args)
    assert "bfloat16" in text and "cut to 2 layers" in text
    _check_report(text, [4, 8])
