"""Grids of runs: the YAML schema, its expansion and run ids, its errors, and `airbench-nb run --grid --jobs`."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest
from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.grid import (
    GridError,
    GridInfo,
    GridRun,
    _run_error,
    check_grid,
    parse_grid,
    process_alive,
    process_start,
    read_grid,
    resume_grid,
    run_grid,
    run_slug,
    settle_grid,
)
from airbench_nb.grid_page import write_grid_page
from airbench_nb.pipeline import check_run_id
from airbench_nb.records import NotebookStatus, RunInfo

ORACLE, RANDOM = ["baseline:oracle"], ["baseline:random"]


def _write(tmp_path: Path, text: str, name: str = "grid.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- the two forms ---------------------------------------------------------------------------------------------------


def test_product_form_expands_every_combination_last_key_fastest(tmp_path):
    path = _write(
        tmp_path,
        "name: demo\nnotebooks: [01_build_data, 03_run_model]\nfixed: {judges: [rule]}\n"
        "preset: [tiny]\nseed: [0, 1]\nmodels: [[baseline:oracle], [baseline:random]]\n",
    )
    grid = read_grid(path)
    assert grid.form == "product" and grid.name == "demo" and grid.notebooks == ["01_build_data", "03_run_model"]
    assert [(s["seed"], s["models"]) for s in grid.sets] == [(0, ORACLE), (0, RANDOM), (1, ORACLE), (1, RANDOM)]
    assert all(s["preset"] == "tiny" and s["judges"] == ["rule"] for s in grid.sets)
    assert grid.varying == ["seed", "models"]  # preset has one value: it is common, not varying
    assert grid.fixed == {"judges": ["rule"], "preset": "tiny"}
    assert grid.run_ids() == [
        "01-seed0-models-baseline_oracle",
        "02-seed0-models-baseline_random",
        "03-seed1-models-baseline_oracle",
        "04-seed1-models-baseline_random",
    ]


def test_runs_form_and_a_bare_list(tmp_path):
    path = _write(
        tmp_path,
        "fixed: {preset: tiny}\nruns:\n  - {seed: 0, models: [baseline:oracle]}\n  - {seed: 1}\n"
        "  - {seed: 1, snr_grid: [0, 5]}\n",
    )
    grid = read_grid(path)
    assert grid.form == "runs" and len(grid.sets) == 3
    assert grid.sets[1] == {"preset": "tiny", "seed": 1}
    assert grid.varying == ["seed", "models", "snr_grid"]  # a key some runs lack varies too
    assert grid.run_ids() == ["01-seed0-models-baseline_oracle", "02-seed1", "03-seed1-snr_grid-0_5"]
    bare = parse_grid([{"seed": 0}, {"seed": 1}], "bare.yaml")
    assert bare.form == "runs" and bare.run_ids() == ["01-seed0", "02-seed1"]


def test_command_line_parameters_join_every_run_and_cannot_fix_a_varied_one(tmp_path):
    grid = parse_grid({"fixed": {"preset": "mini"}, "seed": [0, 1]}, "g.yaml", extra={"preset": "tiny"})
    assert all(s["preset"] == "tiny" for s in grid.sets)
    with pytest.raises(GridError, match=r"^g\.yaml: key 'seed': the grid varies seed"):
        parse_grid({"seed": [0, 1]}, "g.yaml", extra={"seed": 3})


def test_run_ids_are_valid_unique_and_readable_for_awkward_values():
    values = [
        "hf:/models/Qwen2-Audio-7B-Instruct",
        "openai:gpt-4o-audio-preview?x=1&y=2",
        "../../etc/passwd",
        "",
        "é" * 10,
        "x" * 300,
        True,
        None,
        -5,
        0.5,
        {"speech": 0.4, "sound": 0.6},
        [[3, -3], [0, 0]],
        [],
    ]
    grid = parse_grid({"official_root": values, "seed": [0, 1]}, "g.yaml")
    ids = grid.run_ids()
    assert len(ids) == len(set(ids)) == 2 * len(values)
    for run_id in ids:
        assert check_run_id(run_id) == run_id and len(run_id) <= 128 and ".." not in run_id.split("-")[1]
    assert ids[::2] == [
        "01-official_root-hf_models_Qwen2-Audio-7B-Instruct-seed0",
        "03-official_root-openai_gpt-4o-audio-preview_x_1_y_2-seed0",
        "05-official_root-etc_passwd-seed0",
        "07-official_root-empty-seed0",
        "09-official_root-x-seed0",
        "11-official_root-" + "x" * 40 + "-seed0",
        "13-official_root-true-seed0",
        "15-official_root-none-seed0",
        "17-official_root-5-seed0",
        "19-official_root0.5-seed0",
        "21-official_root-speech-0.4_sound-0.6-seed0",
        "23-official_root-3_-3_0_0-seed0",
        "25-official_root-empty-seed0",
    ]
    assert run_slug(7, {"snr_db": -5}, ["snr_db"]) == "07-snr_db-5"
    assert run_slug(1, {"seed": 0}, []) == "01"
    many = parse_grid({"seed": list(range(120))}, "g.yaml").run_ids()
    assert many[0] == "001-seed0" and many[-1] == "120-seed119"


# --- errors: one line naming the file and the key ------------------------------------------------------------------

BAD = [
    ("seed: [0, 1]\nsed: [2]\n", "key 'sed': declared by none of"),
    ("seed: 0\n", "key 'seed': give a list of values"),
    ("models: [baseline:oracle, baseline:random]\nseed: 3\n", "key 'seed': give a list of values"),
    ("", "empty grid"),
    ("name: nothing\nfixed: {seed: 0}\n", "empty grid"),
    ("runs: []\n", "key 'runs': empty grid"),
    ("seed: []\n", "key 'seed': empty list"),
    ("seed: [0, 1\n", "not valid YAML: line 2"),
    ("seed: [0]\nseed: [1]\n", "not valid YAML: line 2, column 1: key 'seed' given twice"),
    ("- 1\n- 2\n", "key 'runs[1]': a parameter set is a mapping"),
    ("42\n", "a grid is a mapping"),
    ("runs: [{seed: 0}]\nseed: [1]\n", "key 'seed': give either runs: or parameter lists"),
    ("fixed: {seed: 0}\nseed: [1, 2]\n", "key 'seed': also under fixed:"),
    ("fixed: {seed: 0}\nruns: [{seed: 1}]\n", "key 'runs[1].seed': seed is also under fixed:"),
    ("runs: [{seed: 0}, {seed: 1}, {seed: 0}]\n", "key 'runs[3]': same parameters as runs[1]"),
    ("seed: [0, 0]\n", "key 'seed': value 0 listed twice"),
    ("fixed: [seed]\nseed: [0]\n", "key 'fixed': give a mapping"),
    ("notebooks: [01_build_data, 99_nope]\nseed: [0]\n", "key 'notebooks': no notebook '99_nope'"),
    ("notebooks: 3\nseed: [0]\n", "key 'notebooks': give a list of notebook stems"),
    ("seed: [" + "9" * 5000 + "]\n", "not a usable grid: Exceeds the limit (4300 digits)"),
    ("base: &b {seed: 1}\nruns:\n  - <<: *b\n    limit: 2\n", "line 3, column 5: merge keys (<<:) are not read"),
    (
        "a: &a [1, 2]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n",
        "more than 16 aliases",
    ),
    ("embedder: [3]\n", "key 'embedder': parameter embedder=3 must be a string (quote it)"),
    ("notebooks: ['../../../tmp/x/evil']\nseed: [0]\n", "key 'notebooks': notebook '../../../tmp/x/evil' is not"),
    ("official_root: [2024-01-01]\n", "key 'official_root': datetime.date(2024, 1, 1) is a YAML date"),
    ("official_root: ['sk-abc123def456']\n", "key 'official_root': the value of parameter 'official_root' looks"),
    ("seed: [0]\n3: [1]\n", "key 3: top-level keys must be parameter names"),
    ("seed: [0, 1]\nlimit: " + str(list(range(600))) + "\n", "1200 runs, more than 999"),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m.split(":")[0][:30] for _, m in BAD])
def test_bad_grid_files_are_refused_with_one_line_naming_the_file_and_key(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(GridError) as caught:
        check_grid(read_grid(path))
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and "\n" not in text
    assert message in text, text


def test_missing_or_folder_grid_file(tmp_path):
    with pytest.raises(GridError, match="no such grid file"):
        read_grid(tmp_path / "nope.yaml")
    with pytest.raises(GridError, match="is a folder"):
        read_grid(tmp_path)


def test_the_example_grid_is_valid():
    grid = read_grid(Path(__file__).resolve().parent.parent / "grids" / "example.yaml")
    assert check_grid(grid) == grid.notebooks and len(grid.sets) == 4


# --- running: a toy notebook, so that the grid machinery is checked in seconds -------------------------------------


def _one_notebook(folder: Path, stem: str, body: str) -> Path:
    """A one-notebook pipeline in ``folder``: parameters ``x`` (a number) and ``run_dir``, then ``body``."""
    folder.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell('x = 0  # a number\nrun_dir = ""  # the run folder')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, str(folder / f"{stem}.ipynb"))
    return folder


def _toy_notebooks(folder: Path) -> Path:
    """A one-notebook pipeline: ``x`` is a parameter; ``x == 3`` fails; the run writes its score table."""
    return _one_notebook(
        folder,
        "toy",
        "from airbench_nb.run_folder import RunFolder\n"
        "from airbench_nb.score_table import ScoreTable\n"
        "assert x != 3, 'planted failure'\n"
        "average = {'value': x / 10, 'n': 10, 'failures': 0, 'ci_low': x / 20, 'ci_high': x / 10, 'partial': False}\n"
        "strict = {'protocol': 'strict', 'model': 'toy', 'foundation': {'average': average}, 'chat': None}\n"
        "RunFolder(run_dir).write_scores(ScoreTable.model_validate({'toy | chat judge -': {'strict': strict}}))\n",
    )


@pytest.mark.slow
def test_a_failing_run_leaves_the_others_and_is_recorded_with_its_exception(tmp_path):
    notebooks = _toy_notebooks(tmp_path / "notebooks")
    grid = parse_grid({"notebooks": ["toy"], "x": [1, 2, 3]}, tmp_path / "toy.yaml")
    seen = []
    info = run_grid(
        grid,
        grid_id="toy",
        reports_dir=tmp_path / "reports",
        jobs=2,
        html=False,
        notebook_dir=notebooks,
        cache_dir=tmp_path / "cache",
        on_run_end=lambda entry, _: seen.append(entry.run_id),
    )
    folder = tmp_path / "reports" / "toy"
    assert sorted(seen) == ["01-x1", "02-x2", "03-x3"]
    assert [r.status for r in info.runs] == ["ok", "ok", "failed"] and info.status == "failed" and info.failed == 1
    assert info.runs[2].error == "toy: AssertionError: planted failure"
    saved = json.loads((folder / "grid.json").read_text())
    assert saved["status"] == "failed" and [r["status"] for r in saved["runs"]] == ["ok", "ok", "failed"]
    assert saved["cache_dir"] == str((tmp_path / "cache").resolve()) and saved["varying"] == ["x"]
    assert all(r["duration_s"] > 0 for r in saved["runs"]) and (folder / "logs" / "03-x3.log").is_file()
    assert not (folder / "grid.yaml").exists()  # parsed from a mapping: no file to keep
    page = (folder / "index.html").read_text()
    assert '<a href="01-x1/index.html">01-x1</a>' in page and "toy: AssertionError: planted failure" in page
    assert "20.0<br><small>[10.0, 20.0]</small>" in page  # run 2: 0.2 with its interval, in %
    assert "<script" not in page
    readme = (folder / "README.md").read_text()
    assert "| 2 | [02-x2](02-x2/index.html) | 2 | ok |" in readme and "planted failure" in readme
    with pytest.raises(GridError, match="already holds a grid"):
        run_grid(grid, grid_id="toy", reports_dir=tmp_path / "reports", notebook_dir=notebooks)


def _counting_notebooks(folder: Path) -> Path:
    """A one-notebook pipeline that appends ``x`` to ``executions.txt`` of its run folder each time it runs."""
    return _one_notebook(
        folder,
        "count",
        "from pathlib import Path\nwith Path(run_dir, 'executions.txt').open('a') as f:\n    f.write(f'{x}\\n')\n",
    )


@pytest.mark.slow
def test_resume_a_grid_keeps_finished_runs_and_reruns_failed_and_pending_ones(tmp_path, monkeypatch):
    notebooks = _counting_notebooks(tmp_path / "notebooks")
    monkeypatch.setenv("AIRBENCH_NOTEBOOKS", str(notebooks))
    reports = tmp_path / "reports"
    folder = reports / "g"
    # The state a grid of x = 1, 2, 3 leaves when run 1 finished, run 3 failed and the grid was stopped before run
    # 2 started (written here: running it would take three notebook runs).
    now = datetime.now(UTC)
    runs = []
    for index, status in ((1, "ok"), (2, "pending"), (3, "failed")):
        run_id = f"0{index}-x{index}"
        runs.append(
            GridRun(
                index=index,
                run_id=run_id,
                parameters={"x": index},
                varying={"x": index},
                status=status,
                log=f"logs/{run_id}.log",
                **({"started": now, "ended": now, "duration_s": 1.0} if index != 2 else {}),
            )
        )
        if status == "pending":
            continue
        (folder / run_id).mkdir(parents=True)
        (folder / run_id / "executions.txt").write_text(f"{index}\n")
        notebook = NotebookStatus(
            name="count", status=status, error="AssertionError: planted failure" if index == 3 else None
        )
        record = RunInfo(
            run_id=run_id, started=now, ended=now, status=status, parameters={"x": index}, notebooks=[notebook]
        )
        (folder / run_id / "run.json").write_text(record.model_dump_json())
    (folder / "logs").mkdir()
    (folder / "logs" / "03-x3.log").write_text("AssertionError: planted failure\n")
    saved = GridInfo(
        grid_id="g",
        source="count.yaml",
        started=now,
        status="failed",
        notebooks=["count"],
        varying=["x"],
        cache_dir=str((tmp_path / "cache").resolve()),
        runs=runs,
    ).model_dump(mode="json")
    (folder / "grid.json").write_text(json.dumps(saved))

    options = ["--reports", str(reports), "--no-html"]
    refused = CliRunner().invoke(app, ["run", "--resume", "g", "-p", "x=5", *options])
    assert refused.exit_code == 2 and "resumes a grid with the parameters" in refused.output
    code, output, _ = _run_cli(["run", "--resume", "g", "--jobs", "2", *options])
    assert code == 0, output
    assert "resuming 2 of 3 runs (1 finished kept)" in output
    info = json.loads((folder / "grid.json").read_text())
    assert info["status"] == "ok" and [r["status"] for r in info["runs"]] == ["ok", "ok", "ok"]
    assert info["runs"][0] == saved["runs"][0]  # kept as it was: not re-executed
    assert info["jobs"] == 2 and info["cache_dir"] == str((tmp_path / "cache").resolve())
    executions = {run: (folder / run / "executions.txt").read_text().split() for run in ("01-x1", "02-x2", "03-x3")}
    assert executions == {"01-x1": ["1"], "02-x2": ["2"], "03-x3": ["3", "3"]}  # run 3 resumed in its folder
    assert json.loads((folder / "03-x3" / "run.json").read_text())["resumed"] == 1
    assert (folder / "logs" / "03-x3.log").read_text().startswith("AssertionError: planted failure\n")  # appended
    assert "01-x1" in output and "grid g: ok, 0 of 3 runs failed" in re.sub(r"\s+", " ", output)
    again, output, _ = _run_cli(["run", "--resume", "g", *options])  # nothing left to do: nothing reruns
    assert again == 0 and "resuming 0 of 3 runs (3 finished kept)" in output
    assert (folder / "03-x3" / "executions.txt").read_text().split() == ["3", "3"]


def test_grid_parameters_are_checked_like_a_run_s(tmp_path):
    grid = parse_grid({"notebooks": ["03_run_model"], "limit": [-1, 2]}, tmp_path / "g.yaml")
    with pytest.raises(GridError, match=r"g\.yaml: key 'limit': parameter limit=-1 must be 0 or more"):
        check_grid(grid)


def test_a_run_that_dies_is_failed_with_its_last_log_line(tmp_path):
    log = _write(tmp_path, "INFO starting\nerror: cannot make the run folder\n", "run.log")
    status, error = _run_error(tmp_path / "missing" / "run.json", 2, log)
    assert status == "failed" and error.startswith("the run's process ended (exit code 2) before writing run.json")
    assert error.endswith("error: cannot make the run folder")
    (tmp_path / "run.json").write_text(json.dumps({"status": "running", "notebooks": []}))
    assert "killed by a signal) before it finished" in _run_error(tmp_path / "run.json", -9, log)[1]


def test_the_page_of_a_grid_without_runs_done(tmp_path):
    grid = {"grid_id": "g", "status": "running", "varying": ["seed"], "runs": [{"index": 1, "run_id": "01-seed0"}]}
    (tmp_path / "grid.json").write_text(json.dumps(grid))
    index, readme = write_grid_page(tmp_path)
    assert "01-seed0" in index.read_text() and "pending" in readme.read_text()


# --- the command line ----------------------------------------------------------------------------------------------


def test_cli_refusals_are_one_line_and_exit_2(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["run", "--grid", str(tmp_path / "nope.yaml"), "--reports", str(tmp_path)])
    assert missing.exit_code == 2 and "no such grid file" in missing.output
    bad = _write(tmp_path, "seed: [0]\nsed: [1]\n")
    result = runner.invoke(app, ["run", "--grid", str(bad), "--reports", str(tmp_path / "r")])
    assert result.exit_code == 2 and "key 'sed'" in result.output and not (tmp_path / "r").exists()
    alone = runner.invoke(app, ["run", "--jobs", "2", "--reports", str(tmp_path)])
    assert alone.exit_code == 2 and "--grid" in alone.output


def _run_cli(args: list[str]) -> tuple[int, str, float]:
    t0 = time.perf_counter()
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output, time.perf_counter() - t0


@pytest.mark.slow
def test_acceptance_a_2x2_grid_with_jobs_2_then_one_planted_failure(tmp_path, monkeypatch):
    """The issue's acceptance test, on the tiny preset with three notebooks and a shared tmp cache; the grid with the
    planted failure answers and judges the data grid 1 built (notebooks 03 and 04: its failure is at notebook 03)."""
    monkeypatch.delenv("AIRBENCH_JUDGE", raising=False)
    # show_items/show 0: no listening widgets, which take seconds each; AIR-Bench's two kinds (the grid is what is
    # tested here; SSEU-Bench's kinds go through the pipeline in test_pipeline_e2e)
    common = (
        "notebooks: [01_build_data, 03_run_model, 04_judge]\n"
        "fixed: {judges: [rule], preset: tiny, show_items: 0, show: 0, kinds: [foundation, chat]}\n"
    )
    reports, cache = tmp_path / "reports", tmp_path / "cache"
    options = ["--reports", str(reports), "--cache-dir", str(cache), "--no-html", "--jobs", "2"]

    good = _write(tmp_path, common + "seed: [0, 1]\nmodels: [[baseline:oracle], [baseline:random]]\n", "good.yaml")
    code, output, seconds = _run_cli(["run", "--grid", str(good), "--run-id", "g1", *options])
    print(f"grid 1: {seconds:.0f} s")
    assert code == 0, output
    folder = reports / "g1"
    runs = sorted(p.name for p in folder.iterdir() if (p / "run.json").is_file())
    assert runs == [
        "01-seed0-models-baseline_oracle",
        "02-seed0-models-baseline_random",
        "03-seed1-models-baseline_oracle",
        "04-seed1-models-baseline_random",
    ]
    for run in runs:
        record = json.loads((folder / run / "run.json").read_text())
        assert record["status"] == "ok" and (folder / run / "scores_summary.csv").is_file()
    page = (folder / "index.html").read_text()
    assert all(f'<a href="{run}/index.html">' in page for run in runs)
    assert "baseline:oracle" in page and "100.0" in page and 'class="status ok"' in page
    assert f"grid page: {folder / 'index.html'}" in re.sub(r"\s*\n\s*", "", output)
    assert (folder / "grid.yaml").read_text() == good.read_text()  # the file as it was run
    assert any((cache / "data").iterdir())  # the runs' data was built into the shared cache

    data = (folder / runs[0] / "data").resolve()  # built by grid 1 into the shared cache
    planted = _write(
        tmp_path,
        "notebooks: [03_run_model, 04_judge]\n"
        f"fixed: {{judges: [rule], show: 0, kinds: [foundation, chat], manifest_dir: '{data}'}}\n"
        "runs:\n  - {seed: 0, models: [baseline:oracle]}\n  - {seed: 0, models: [baseline:random]}\n"
        "  - {seed: 1, models: [baseline:does-not-exist]}\n  - {seed: 1, models: [baseline:random]}\n",
        "planted.yaml",
    )
    code, output, seconds = _run_cli(["run", "--grid", str(planted), "--run-id", "g2", *options])
    print(f"grid 2: {seconds:.0f} s")
    assert code == 1, output
    saved = json.loads((reports / "g2" / "grid.json").read_text())
    statuses = {r["run_id"]: r["status"] for r in saved["runs"]}
    assert statuses == {
        "01-seed0-models-baseline_oracle": "ok",
        "02-seed0-models-baseline_random": "ok",
        "03-seed1-models-baseline_does-not-exist": "failed",
        "04-seed1-models-baseline_random": "ok",
    }
    for run_id, status in statuses.items():
        assert json.loads((reports / "g2" / run_id / "run.json").read_text())["status"] == status
    failed = saved["runs"][2]["error"]
    assert failed == (
        "03_run_model: ValueError: unknown baseline 'does-not-exist'; "
        "choose one of random, first, oracle, dsp, text-prior"
    )
    page = (reports / "g2" / "index.html").read_text()
    assert "unknown baseline" in page and 'class="status failed"' in page
    assert "03-seed1-models-baseline_does-not-exist" in output and "1 of 4 runs failed" in output


# --- killed grids and reused run ids (issue 22, item 7): real processes ---------------------------------------------


def _sleeping_notebooks(folder: Path) -> Path:
    """A one-notebook pipeline whose run 1 sleeps the first time (long enough to be killed), then runs through."""
    return _one_notebook(
        folder,
        "nap",
        "import os, time\nfrom pathlib import Path\nmark = Path(run_dir, 'started')\n"
        "first = not mark.exists()\nmark.write_text(str(os.getpid()))\n"
        "if x == 1 and first:\n    time.sleep(120)\n",
    )


def _start_grid(tmp_path: Path, notebooks: Path) -> tuple[subprocess.Popen[bytes], Path]:
    grid = _write(tmp_path, "notebooks: [nap]\nx: [1, 2]\n")
    env = {**os.environ, "AIRBENCH_NOTEBOOKS": str(notebooks), "AIRBENCH_CACHE": str(tmp_path / "cache")}
    args = ["run", "--grid", str(grid), "--run-id", "g", "--reports", str(tmp_path / "r"), "--no-html"]
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "airbench_nb.cli", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    mark = tmp_path / "r" / "g" / "01-x1" / "started"
    deadline = time.monotonic() + 60
    while not mark.is_file():  # run 1's kernel is asleep in its notebook
        assert process.poll() is None and time.monotonic() < deadline, process.stdout.read().decode()
        time.sleep(0.2)
    return process, tmp_path / "r" / "g"


def _gone(pid: int, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not process_alive(pid, None):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.slow
def test_a_grid_killed_by_sigkill_is_settled_when_read_and_resumed_to_the_end(tmp_path, monkeypatch):
    notebooks = _sleeping_notebooks(tmp_path / "notebooks")
    monkeypatch.setenv("AIRBENCH_NOTEBOOKS", str(notebooks))
    process, folder = _start_grid(tmp_path, notebooks)
    saved = json.loads((folder / "grid.json").read_text())
    assert saved["status"] == "running" and saved["pid"] == process.pid
    worker = saved["runs"][0]["pid"]
    kernel = int((folder / "01-x1" / "started").read_text())
    process.kill()
    process.wait()
    assert _gone(worker) and _gone(kernel)  # no orphan goes on: the run is stopped with its grid
    assert json.loads((folder / "grid.json").read_text())["status"] == "running"  # nobody has read it yet
    assert CliRunner().invoke(app, ["report", str(folder)]).exit_code == 0  # reading the grid settles it
    settled = json.loads((folder / "grid.json").read_text())
    assert settled["status"] == "failed" and f"pid {process.pid}) is gone" in settled["error"]
    assert settled["runs"][0]["status"] == "failed"
    assert "Stopped before its end" in (folder / "index.html").read_text()
    refused = CliRunner().invoke(
        app, ["run", "--grid", str(tmp_path / "grid.yaml"), "--run-id", "g", "--reports", str(tmp_path / "r")]
    )
    assert refused.exit_code == 2 and "give --resume g" in refused.output
    env = {**os.environ, "AIRBENCH_NOTEBOOKS": str(notebooks)}
    done = subprocess.run(  # noqa: S603
        [
            sys.executable,
            "-m",
            "airbench_nb.cli",
            "run",
            "--resume",
            "g",
            "--reports",
            str(tmp_path / "r"),
            "--no-html",
            "--jobs",
            "2",  # its two runs at once (the grid ran them one at a time)
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    final = json.loads((folder / "grid.json").read_text())
    assert final["status"] == "ok" and final["error"] is None and [r["status"] for r in final["runs"]] == ["ok", "ok"]


@pytest.mark.slow
def test_sigterm_stops_a_grid_s_runs_and_records_why(tmp_path):
    process, folder = _start_grid(tmp_path, _sleeping_notebooks(tmp_path / "notebooks"))
    worker = json.loads((folder / "grid.json").read_text())["runs"][0]["pid"]
    kernel = int((folder / "01-x1" / "started").read_text())
    process.terminate()
    output = process.communicate(timeout=60)[0].decode()
    assert process.returncode == 143 and "stopped by SIGTERM" in output, output
    assert _gone(worker) and _gone(kernel)
    saved = json.loads((folder / "grid.json").read_text())
    assert saved["status"] == "failed" and saved["error"] == "stopped by SIGTERM"
    assert saved["runs"][0]["status"] == "failed"
    assert "SIGTERM" in saved["runs"][0]["error"] and saved["runs"][1]["status"] == "pending"
    run = json.loads((folder / "01-x1" / "run.json").read_text())
    assert run["status"] == "failed" and "interrupted (SIGTERM)" in run["notebooks"][0]["error"]


def test_an_existing_run_id_is_refused_without_resume(tmp_path, monkeypatch):
    notebooks = _counting_notebooks(tmp_path / "notebooks")
    monkeypatch.setenv("AIRBENCH_NOTEBOOKS", str(notebooks))
    options = ["--notebooks", "count", "--reports", str(tmp_path), "--no-html"]
    first = CliRunner().invoke(app, ["run", "--run-id", "r", "-p", "x=1", *options])
    assert first.exit_code == 0, first.output
    before = (tmp_path / "r" / "run.json").read_bytes()
    again = CliRunner().invoke(app, ["run", "--run-id", "r", "-p", "x=2", *options])
    assert again.exit_code == 2 and "holds a run already" in again.output and "--resume r" in again.output
    assert (tmp_path / "r" / "run.json").read_bytes() == before  # nothing overwritten
    assert (tmp_path / "r" / "executions.txt").read_text() == "1\n"


def test_settling_a_grid_record_checks_pid_start_time_and_host(tmp_path, monkeypatch):
    """Fast: what a reader concludes from a grid.json that says running, without running a grid."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])  # noqa: S603
    dead.wait()
    now = datetime.now(UTC)
    run = GridRun(index=1, run_id="01-x1", status="running", pid=dead.pid, log="logs/01-x1.log")
    record = GridInfo(grid_id="g", source="g.yaml", started=now, runs=[run], pid=dead.pid, host=socket.gethostname())
    folder = tmp_path / "g"
    folder.mkdir()

    def state(**changes) -> GridInfo:
        (folder / "grid.json").write_text(record.model_copy(update=changes).model_dump_json())
        return settle_grid(folder)

    alive = state(pid=os.getpid(), pid_start=process_start(os.getpid()))
    assert alive.status == "running"  # its process runs: nothing settled, and a resume is refused
    with pytest.raises(GridError, match=f"still running \\(pid {os.getpid()}\\)"):
        resume_grid("g", reports_dir=tmp_path)
    reused = state(pid=os.getpid(), pid_start=1)  # the pid now belongs to another process
    assert reused.status == "failed" and reused.runs[0].status == "failed" and "is gone" in reused.runs[0].error
    elsewhere = state(host="another-host")
    assert elsewhere.status == "running"  # its pids mean nothing on this machine
    gone = state()
    assert gone.status == "failed" and f"(pid {dead.pid}) is gone" in gone.error
    assert json.loads((folder / "grid.json").read_text())["status"] == "failed"  # written back
