"""Statistics spread over worker processes are the statistics computed in this process, number for number."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

import airbench_nb.scoring.parallel as parallel
from airbench_nb.records import Response, TranslationItem
from airbench_nb.scoring import translation, wer

REPO = Path(__file__).resolve().parent.parent


def _bench_scale():
    spec = importlib.util.spec_from_file_location("bench_scale", REPO / "bench" / "bench_scale.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_scale"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def spread(monkeypatch):
    """Every call large enough for the pool, with two workers."""
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 1)
    yield
    parallel.shutdown_pool()


def _translations(n: int) -> tuple[list[TranslationItem], list[dict[str, Response]]]:
    items = [
        TranslationItem(
            uid=f"t{i}",
            audio=f"audio/t{i}.wav",
            dataset="d",
            question="Translate.",
            task="speech_translation",
            source_language="de",
            target_language=("en", "zh", "fr")[i % 3],
            references=[f"The cat number {i} sat on the mat.", "A cat sat."][: 1 + i % 2],
        )
        for i in range(n)
    ]
    answers = [
        {
            i.uid: Response(uid=i.uid, model=m, text=f"the {m} cat {k} sat {'on' if k % 2 else ''} a mat")
            for k, i in enumerate(items)
        }
        for m in ("a", "b")
    ]
    return items, answers


def _rows(items, answers) -> dict:
    with translation.shared_statistics(items, answers):
        translation._SHARED_PENDING.pop()()  # extracted now (else when a corpus is first scored)
        return {key: dict(rows) for key, rows in translation._SHARED_ROWS.items()}


def test_sentence_statistics_are_the_same_in_workers(spread, monkeypatch):
    items, answers = _translations(2500)  # three chunks per metric and tokenizer group
    assert not parallel.pool_started()
    spread_rows = _rows(items, answers)
    assert parallel.pool_started()
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    here = _rows(items, answers)
    assert spread_rows == here
    assert {key: len(rows) for key, rows in here.items()} == {"bleu:13a": 2 * 1667, "bleu:zh": 2 * 833, "chrf": 5000}


def test_utterance_errors_are_the_same_in_workers(spread):
    keys = [(f"hello world number {i}", f"hello word numbr {i}" if i % 5 else None, "en", f"u{i}") for i in range(600)]
    wer._KEPT.clear()
    spread_found = wer.many_utterance_errors(keys)
    assert parallel.pool_started()
    wer._KEPT.clear()
    here = [wer.utterance_errors(*key) for key in keys]
    assert spread_found == here
    assert wer.many_utterance_errors(keys) == here  # kept: read back, not computed again


def test_a_worker_error_is_raised_here_and_a_bad_setting_is_named(spread, monkeypatch):
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute"):  # a reference that is None
        parallel.parallel_map(wer._errors_of, [[(None, "x", "en", "u")], [(None, "y", "en", "v")]], items=2)
    monkeypatch.setenv(parallel.WORKERS_ENV, "two")
    with pytest.raises(ValueError, match="AIRBENCH_NB_WORKERS='two'"):
        parallel.workers()
    monkeypatch.setenv(parallel.WORKERS_ENV, "auto")
    assert 1 <= parallel.workers() <= parallel.MAX_WORKERS
    monkeypatch.delenv(parallel.WORKERS_ENV)
    assert parallel.workers() == 1  # unset: everything in this process


def test_small_work_stays_in_this_process(monkeypatch):
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    parallel.shutdown_pool()
    assert parallel.parallel_map(len, ["ab", "c"], items=parallel.PARALLEL_MIN - 1) == [2, 1]
    assert not parallel.pool_started()
    assert parallel.chunked(list(range(10)), 4) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


def test_a_whole_analysis_is_the_same_spread_or_not(tmp_path, monkeypatch):
    from airbench_nb.analysis.report import analyze_run

    bench = _bench_scale()
    run = tmp_path / "run"
    bench.write_run(run, 0.02)  # 1,226 items x 3 models: translations, transcripts, Foundation and Chat
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    analyze_run(run, out=tmp_path / "here", reps=200)
    wer._KEPT.clear()
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 1)
    try:
        analyze_run(run, out=tmp_path / "spread", reps=200)
        assert parallel.pool_started()
    finally:
        parallel.shutdown_pool()
    here = json.loads((tmp_path / "here" / "analysis.json").read_text())
    spread = json.loads((tmp_path / "spread" / "analysis.json").read_text())
    for report in (here, spread):
        report.pop("created")
    assert here == spread
    assert here["translation"] and here["sseu"]
    assert (tmp_path / "here" / "tables.csv").read_bytes() == (tmp_path / "spread" / "tables.csv").read_bytes()


def test_a_script_without_a_main_guard_is_not_run_again_by_the_workers(tmp_path):
    import subprocess

    script = tmp_path / "unguarded.py"
    script.write_text(
        "import os, sys\n"
        "print('top level', file=sys.stderr)\n"
        "os.environ['AIRBENCH_NB_WORKERS'] = '2'\n"
        "import airbench_nb.scoring.parallel as parallel\n"
        "parallel.PARALLEL_MIN = 1\n"
        "from airbench_nb.scoring.wer import many_utterance_errors\n"
        "found = many_utterance_errors([(f'a b {i}', 'a c', 'en', str(i)) for i in range(50)])\n"
        "print(len(found), parallel.pool_started())\n",
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["50", "True"]
    assert done.stderr.count("top level") == 1
