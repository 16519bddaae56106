"""Fast reruns: the shared data cache, ``run --resume`` and what a changed parameter invalidates.

An LLM judge served by the tests' local judge server (``tests.test_judge.JudgeServer``) is added through
``AIRBENCH_JUDGE``, so that the number of judge requests a rerun sends can be counted.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.nbresults import read_results
from airbench_nb.pipeline import PipelineError, run_pipeline
from tests.test_judge import JudgeServer

NOTEBOOKS = ["01_build_data", "03_run_model", "04_judge"]
PARAMS = {
    "preset": "tiny",
    "tasks": ["Speaker_Gender_Recognition", "speech_QA"],
    "models": ["baseline:oracle", "baseline:first"],
    "show_items": 1,
    "show": 0,  # no answers played in notebook 03 (seconds of spectrograms per run)
    "kinds": ["foundation", "chat"],  # AIR-Bench's two kinds: what a rerun invalidates, not every kind's metrics
}


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    """Bytes of every response and verdict file of a run (locks aside)."""
    return {
        str(p.relative_to(run_dir)): p.read_bytes()
        for sub in ("responses", "verdicts")
        for p in sorted((run_dir / sub).rglob("*.jsonl"))
    }


class CountingJudge(JudgeServer):
    """The judge server, counting chat requests per judge model name."""

    def __init__(self) -> None:
        super().__init__()
        self.by_model: Counter[str] = Counter()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.by_model[body.get("model", "")] += 1
        return super().answer(body)


def _requests(server: CountingJudge) -> int:
    with server.lock:
        return server.seen.chat_requests


def _ok(info) -> None:
    assert info.status == "ok", [(n.name, n.error) for n in info.notebooks if n.status != "ok"]


@pytest.fixture
def judge_env(monkeypatch):
    with CountingJudge() as server:
        monkeypatch.setenv("AIRBENCH_JUDGE", f"openai:judge@{server.base_url}")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
        yield server


def test_resume_reuses_everything_and_invalidates_only_what_changed(tmp_path, judge_env):
    server, cache = judge_env, tmp_path / "cache"
    run = dict(notebooks=NOTEBOOKS, reports_dir=tmp_path / "reports", html=False, cache_dir=cache)
    first = run_pipeline(PARAMS, run_id="r", **run)
    _ok(first)
    run_dir = tmp_path / "reports" / "r"
    asked = _requests(server)
    assert asked > 0, "the LLM judge was not asked anything: the test would prove nothing"
    assert (run_dir / "data").is_symlink() and (run_dir / "data").resolve().parent == (cache / "data").resolve()
    assert "into the cache" in read_results(run_dir / "01_build_data.ipynb")["build_data"]["how"]  # a miss
    before = _snapshot(run_dir)

    # 1. Resume unchanged, with the judge cache gone: every response and verdict is reused, no judge request.
    judge_cache = cache / "judge_cache.sqlite"
    judge_cache.rename(tmp_path / "aside.sqlite")
    resumed = run_pipeline({}, run_id="r", resume=True, **run)
    _ok(resumed)
    (tmp_path / "aside.sqlite").replace(judge_cache)  # back, for step 4
    assert _requests(server) == asked
    assert _snapshot(run_dir) == before
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["resumed"] == 1 and saved["parameters"] == PARAMS and saved["cache_dir"] == str(cache.resolve())
    assert [n["name"] for n in saved["notebooks"]] == NOTEBOOKS
    assert [n["reused"] for n in saved["notebooks"]] == [True, True, True]  # nothing changed: nothing executed
    assert read_results(run_dir / "01_build_data.ipynb")["build_data"]["data_dir"].endswith("data")

    # 2. A new model: only its responses are made and only its answers judged; the others' files are untouched.
    more = run_pipeline({"models": [*PARAMS["models"], "baseline:random"]}, run_id="r", resume=True, **run)
    _ok(more)
    assert [n.reused for n in more.notebooks] == [True, False, False]  # 04 reads the new responses
    after = _snapshot(run_dir)
    assert {k: v for k, v in after.items() if k in before} == before
    assert {k.split("/")[1] for k in set(after) - set(before)} == {"baseline_random"}
    new_verdicts = [k for k in set(after) - set(before) if k.startswith("verdicts/")]
    assert any("judge" in k for k in new_verdicts), new_verdicts  # judged by the LLM judge too (its answers to
    asked = _requests(server)  # Chat are the same non-answers as baseline:first's, so the judge cache may serve them)

    # 3. A new judge: only its verdicts are made; every existing file is unchanged and the first judge is not asked.
    by_model = Counter(server.by_model)
    second = f"openai:second@{server.base_url}"
    judged = run_pipeline({"judges": ["rule", "proxy", second]}, run_id="r", resume=True, **run)
    _ok(judged)
    assert [n.reused for n in judged.notebooks] == [True, True, False]
    final = _snapshot(run_dir)
    assert {k: v for k, v in final.items() if k in after} == after
    assert set(final) - set(after) and all("second" in k for k in set(final) - set(after))
    assert server.by_model["judge"] == by_model["judge"] and server.by_model["second"] > 0
    asked = _requests(server)

    # 4. A new run with the same data and cache: the dataset is reused, and the judge cache answers every call.
    fresh = run_pipeline(PARAMS, run_id="again", **run)
    _ok(fresh)
    assert "reused the cached" in read_results(tmp_path / "reports/again/01_build_data.ipynb")["build_data"]["how"]
    assert (tmp_path / "reports/again/data").resolve() == (run_dir / "data").resolve()
    assert _requests(server) == asked


def test_resume_refuses_what_it_cannot_resume(tmp_path):
    with pytest.raises(PipelineError, match="needs the id"):
        run_pipeline({}, resume=True, reports_dir=tmp_path)
    with pytest.raises(PipelineError, match="no .*run.json"):
        run_pipeline({}, run_id="nothing", resume=True, reports_dir=tmp_path)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.json").write_text("{not json")
    with pytest.raises(PipelineError, match="not a readable run.json"):
        run_pipeline({}, run_id="broken", resume=True, reports_dir=tmp_path)
    result = CliRunner().invoke(app, ["run", "--resume", "a", "--run-id", "b", "--reports", str(tmp_path)])
    assert result.exit_code == 2 and "not both" in result.output
    result = CliRunner().invoke(app, ["run", "--resume", "nothing", "--reports", str(tmp_path)])
    assert result.exit_code == 2 and "cannot resume 'nothing'" in result.output


def test_resume_executes_a_changed_notebook_and_what_reads_its_files_only(tmp_path):
    """Notebooks kept or executed by a resume, by what changed: nothing, a parameter of 05, a deleted output."""
    params = {**PARAMS, "models": ["baseline:oracle"], "reps": 10}
    run = dict(
        notebooks=["01_build_data", "03_run_model", "05_analyze"],
        run_id="r",
        reports_dir=tmp_path / "reports",
        html=False,  # the session's data cache (conftest.py): the tiny build is shared with other tests
    )
    _ok(run_pipeline(params, **run))
    run_dir = tmp_path / "reports" / "r"
    files = {n["name"]: n["input_hashes"] for n in json.loads((run_dir / "run.json").read_text())["notebooks"]}
    assert "file:data/foundation.jsonl" in files["03_run_model"]
    assert "file:responses/baseline_oracle/foundation.jsonl" in files["05_analyze"]

    same = run_pipeline({}, resume=True, **run)
    _ok(same)
    assert [n.reused for n in same.notebooks] == [True, True, True]
    fewer = run_pipeline({"reps": 20}, resume=True, **run)  # a parameter only notebook 05 declares
    _ok(fewer)
    assert [n.reused for n in fewer.notebooks] == [True, True, False]
    assert read_results(run_dir / "05_analyze.ipynb")
    (run_dir / "responses" / "baseline_oracle" / "chat.jsonl").unlink()  # 03 writes it, 05 reads it
    healed = run_pipeline({}, resume=True, **run)
    _ok(healed)
    assert [n.reused for n in healed.notebooks] == [True, False, False]
    assert (run_dir / "responses" / "baseline_oracle" / "chat.jsonl").is_file()
