"""Grids on Ray (`airbench-nb run --grid G.yaml --executor ray`): a local Ray cluster of two CPUs, a toy notebook.

One cluster serves the module (it takes seconds to start). The runs are real: each is a Ray task running
``python -m airbench_nb.grid``, whose notebook executes in a kernel. The killed worker is killed for real: the
notebook of run 1 kills the Ray worker that runs it (its kernel's grandparent) the first time, and Ray runs the task
again, which resumes the run in place.
"""

from __future__ import annotations

import _thread
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.grid import GridError, parse_grid, read_grid, run_grid
from airbench_nb.grid_ray import Executor, parse_executor

# --- what needs no cluster -----------------------------------------------------------------------------------------


def test_executor_spellings():
    assert parse_executor("local") == Executor("local")
    assert parse_executor("ray") == Executor("ray")
    assert parse_executor("ray:auto") == Executor("ray", "auto")
    assert parse_executor("ray:10.0.0.1:6379") == Executor("ray", "10.0.0.1:6379")
    assert parse_executor("ray://head:10001") == Executor("ray", "ray://head:10001")
    assert [str(parse_executor(s)) for s in ("local", "ray", "ray:auto", "ray://head:10001")] == [
        "local",
        "ray",
        "ray:auto",
        "ray://head:10001",
    ]
    for bad in ("", "dask", "ray:", "ray://", "ray:/x"):
        with pytest.raises(ValueError, match="give local, ray"):
            parse_executor(bad)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("resources: 2\nseed: [0]\n", "key 'resources': give what each run holds"),
        ("resources: {gpus: 1}\nseed: [0]\n", "key 'resources.gpus': not a resource; give num_cpus or num_gpus"),
        ("resources: {num_gpus: -1}\nseed: [0]\n", "key 'resources.num_gpus': give a number of 0 or more"),
        ("resources: {num_cpus: true}\nseed: [0]\n", "key 'resources.num_cpus': give a number of 0 or more"),
        ("retries: -1\nseed: [0]\n", "key 'retries': give how many times"),
        ("retries: 1.5\nseed: [0]\n", "key 'retries': give how many times"),
    ],
)
def test_bad_ray_keys_are_refused_naming_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "g.yaml"
    path.write_text(text)
    with pytest.raises(GridError, match=re.escape(f"{path}: {message}")):
        read_grid(path)


def test_ray_keys_are_read_and_are_not_parameters(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("resources: {num_cpus: 0.5, num_gpus: 1}\nretries: 0\nseed: [0, 1]\n")
    grid = read_grid(path)
    assert grid.resources == {"num_cpus": 0.5, "num_gpus": 1} and grid.retries == 0
    assert grid.sets == [{"seed": 0}, {"seed": 1}]


def test_cli_refuses_a_bad_executor_and_ray_missing(tmp_path, monkeypatch):
    grid = tmp_path / "g.yaml"
    grid.write_text("notebooks: [01_build_data]\nseed: [0, 1]\n")
    runner = CliRunner()
    options = ["--reports", str(tmp_path / "r"), "--no-html"]
    bad = runner.invoke(app, ["run", "--grid", str(grid), "--executor", "dask", *options])
    assert bad.exit_code == 2 and "executor 'dask': give local, ray" in bad.output
    alone = runner.invoke(app, ["run", "--executor", "ray", *options])
    assert alone.exit_code == 2 and "give --grid GRID.yaml too" in alone.output
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as where it is not installed
    missing = runner.invoke(app, ["run", "--grid", str(grid), "--executor", "ray", *options])
    assert missing.exit_code == 2 and "pip install 'airbench-nb[ray]'" in missing.output
    assert not (tmp_path / "r").exists()  # refused before anything was made


def test_a_cluster_that_does_not_answer_is_refused_at_once(tmp_path):
    ray = pytest.importorskip("ray")
    if ray.is_initialized():  # connected already: the grid would use that connection
        pytest.skip("Ray is initialised in this process")
    grid = tmp_path / "g.yaml"
    grid.write_text("notebooks: [01_build_data]\nseed: [0, 1]\n")
    args = ["run", "--grid", str(grid), "--reports", str(tmp_path / "r"), "--executor", "ray:127.0.0.1:1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "cannot join the Ray cluster 127.0.0.1:1: nothing answers at 127.0.0.1:1" in result.output
    assert not (tmp_path / "r").exists()


# --- a grid on a local Ray cluster ---------------------------------------------------------------------------------

NOTEBOOK = """\
import os, signal, time
from pathlib import Path
run = Path(run_dir)
with (run / 'executions.txt').open('a') as f:
    f.write(f'{x}\\n')
(run / 'gpus.txt').write_text(os.environ.get('CUDA_VISIBLE_DEVICES', 'unset'))
if x == 4 or x == 1 and not (run / 'killed').exists():  # kill this run's Ray worker (x 1: once, x 4: every time)
    (run / 'killed').write_text('')
    worker = int(Path(f'/proc/{os.getppid()}/stat').read_text().rsplit(')', 1)[1].split()[1])
    os.kill(worker, signal.SIGKILL)
    time.sleep(60)  # the run's process is stopped with its worker, and this kernel with it
if x == 5:  # a long run, stopped by the test
    (run / 'kernel.pid').write_text(str(os.getpid()))
    time.sleep(60)
assert not (run.parent / f'fail-{x}').exists(), 'planted failure'
"""


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of two CPUs for the module (no dashboard, no usage stats, no network).

    Started with SIGINT ignored, which its processes inherit, as a cluster started from a background job is: a
    cancelled task must still be able to stop its run gracefully.
    """
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ray.init(
            address="local",
            num_cpus=2,
            num_gpus=1,  # Ray's own count: no GPU is needed, Ray assigns it and sets CUDA_VISIBLE_DEVICES
            include_dashboard=False,
            logging_level=logging.WARNING,
            log_to_driver=False,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    yield ray
    ray.shutdown()


@pytest.fixture
def notebooks(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell('x = 0  # a number\nrun_dir = ""  # the run folder')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(NOTEBOOK)]
    nbformat.write(nb, str(folder / "nap.ipynb"))
    monkeypatch.setenv("AIRBENCH_NOTEBOOKS", str(folder))  # passed on to the runs' processes by the grid
    monkeypatch.setenv("AIRBENCH_CACHE", str(tmp_path / "cache"))
    return folder


def _executions(folder: Path, run_id: str) -> list[str]:
    return (folder / run_id / "executions.txt").read_text().split()


@pytest.mark.slow
def test_a_grid_on_ray_retries_a_killed_worker_records_a_failure_and_resumes(ray_cluster, notebooks, tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text("notebooks: [nap]\nresources: {num_cpus: 1, num_gpus: 0.5}\nretries: 2\nx: [1, 2, 3]\n")
    reports = tmp_path / "reports"
    folder = reports / "g"
    folder.mkdir(parents=True)
    (folder / "fail-3").write_text("")  # run 3 fails by its own error: recorded failed, not retried

    result = CliRunner().invoke(
        app, ["run", "--grid", str(grid), "--run-id", "g", "--reports", str(reports), "--no-html", "--executor", "ray"]
    )
    assert result.exit_code == 1, result.output
    output = re.sub(r"\s+", " ", result.output)
    assert "3 runs on ray, as the cluster's resources allow, each holding 1 CPU and 0.5 GPU" in output
    saved = json.loads((folder / "grid.json").read_text())
    assert saved["executor"] == "ray" and saved["resources"] == {"num_cpus": 1, "num_gpus": 0.5}
    assert saved["retries"] == 2
    assert saved["status"] == "failed" and saved["jobs"] == 3
    runs = {r["run_id"]: r for r in saved["runs"]}
    assert {k: r["status"] for k, r in runs.items()} == {"01-x1": "ok", "02-x2": "ok", "03-x3": "failed"}
    assert {k: r["attempts"] for k, r in runs.items()} == {"01-x1": 2, "02-x2": 1, "03-x3": 1}
    assert runs["03-x3"]["error"] == "nap: AssertionError: planted failure"
    assert all(r["host"] and r["duration_s"] > 0 and r["pid"] is None for r in runs.values())
    assert "01-x1: ok" in output and "2 attempts" in output

    # the killed attempt was resumed in place: the notebook ran twice, into one run folder, and both are logged
    assert _executions(folder, "01-x1") == ["1", "1"]
    assert json.loads((folder / "01-x1" / "run.json").read_text())["resumed"] == 1
    log = (folder / "logs" / "01-x1.log").read_text()
    assert "--- attempt 1 on" in log and "--- attempt 2 on" in log
    ledger = [json.loads(line) for line in (folder / "logs" / "01-x1.attempts").read_text().splitlines()]
    assert [a["attempt"] for a in ledger] == [1, 2] and ledger[0]["worker_pid"] != ledger[1]["worker_pid"]
    page = (folder / "index.html").read_text()
    assert '<a href="01-x1/index.html">01-x1</a>' in page and "planted failure" in page
    assert "ray: each run a Ray task holding 1 CPU and 0.5 GPU, run again up to 2 times" in page
    # the GPU Ray gave the task is the one the run's kernel sees (the cluster has one: two runs share it)
    assert {(folder / r / "gpus.txt").read_text() for r in runs} == {"0"}
    assert 'class="status ok">ok</span> <small>2 attempts</small>' in page
    assert "| ok (2 attempts) |" in (folder / "README.md").read_text()

    # resume: the grid's own executor (Ray) by default; finished runs kept, the failed one rerun in place
    (folder / "fail-3").unlink()
    again = CliRunner().invoke(app, ["run", "--resume", "g", "--reports", str(reports), "--no-html"])
    assert again.exit_code == 0, again.output
    assert "resuming 1 of 3 runs (2 finished kept) on ray" in re.sub(r"\s+", " ", again.output)
    final = json.loads((folder / "grid.json").read_text())
    assert final["status"] == "ok" and [r["status"] for r in final["runs"]] == ["ok", "ok", "ok"]
    assert final["runs"][0] == saved["runs"][0] and final["runs"][2]["attempts"] == 1
    assert _executions(folder, "01-x1") == ["1", "1"] and _executions(folder, "03-x3") == ["3", "3"]
    assert (folder / "logs" / "03-x3.log").read_text().count("--- attempt 1 on") == 2  # appended to


@pytest.mark.slow
def test_a_run_whose_worker_dies_every_time_fails_after_its_retries(ray_cluster, notebooks, tmp_path):
    grid = parse_grid({"notebooks": ["nap"], "retries": 1, "x": [4]}, tmp_path / "g.yaml")
    info = run_grid(grid, grid_id="g", reports_dir=tmp_path / "reports", html=False, executor="ray")
    entry = info.runs[0]
    assert info.status == "failed" and entry.status == "failed" and entry.attempts == 2  # 1 + 1 retry, no more
    assert entry.error == "not finished: its Ray worker died, and again on every retry (WorkerCrashedError)"
    assert _executions(tmp_path / "reports" / "g", entry.run_id) == ["4", "4"]
    assert ray_cluster.is_initialized()  # the test's connection is left as it was


@pytest.mark.slow
def test_an_interrupted_ray_grid_cancels_its_runs_which_record_the_stop(ray_cluster, notebooks, tmp_path):
    grid = parse_grid({"notebooks": ["nap"], "x": [5, 6]}, tmp_path / "g.yaml")
    folder = tmp_path / "reports" / "g"
    kernel = folder / "01-x5" / "kernel.pid"

    def ctrl_c() -> None:  # Ctrl-C, once run 1's notebook runs (run 2 waits for a CPU: jobs 1)
        # a loaded machine (the suite's workers on 2 cores) can take over a minute to start the run's kernel
        deadline = time.monotonic() + 300
        while not kernel.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        if kernel.is_file():  # else the grid failed another way: the test says so, no stray Ctrl-C
            _thread.interrupt_main()

    # interrupt_main raises KeyboardInterrupt only through Python's own SIGINT handler: install it for the test (a
    # handler left by an earlier test in this process would make the Ctrl-C do nothing)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=ctrl_c, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            info = run_grid(grid, grid_id="g", reports_dir=tmp_path / "reports", jobs=1, html=False, executor="ray")
            pytest.fail(
                f"the grid ended uninterrupted ({info.status}; run 1's kernel.pid written: {kernel.is_file()}, "
                f"SIGINT handler then: {previous!r})"
            )
    finally:
        signal.signal(signal.SIGINT, previous)
    saved = json.loads((folder / "grid.json").read_text())
    assert saved["status"] == "failed" and saved["error"] == "stopped by SIGINT"
    assert [r["status"] for r in saved["runs"]] == ["failed", "pending"]
    assert saved["runs"][0]["error"] == "interrupted: the grid was stopped (SIGINT) while it ran"
    assert saved["runs"][1]["error"] == "not started: the grid was stopped (SIGINT)"
    run = json.loads((folder / "01-x5" / "run.json").read_text())  # the run stopped gracefully, not killed
    assert run["status"] == "failed" and "interrupted (SIGTERM)" in run["notebooks"][0]["error"]
    assert _gone(int(kernel.read_text()))


def _gone(pid: int, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False
