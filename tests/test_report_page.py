"""The run's landing page: what was run, the main table, the warnings that matter, the figures, the links."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from airbench_nb.analysis.report import analyze_run
from airbench_nb.cli import app
from airbench_nb.records import NotebookStatus, RunInfo
from airbench_nb.report_page import write_report_page
from airbench_nb.run_folder import RunFolder
from airbench_nb.scoring import score_run_folder
from tests.planted_run import write_planted_run


def _run_json(folder: Path, statuses: dict[str, str]) -> None:
    now = datetime.now(UTC)
    notebooks = [
        NotebookStatus(
            name=name,
            status=status,  # type: ignore[arg-type]
            output=f"{name}.ipynb" if status != "skipped" else None,
            duration_s=1.5 if status != "skipped" else None,
            error="ValueError: boom" if status == "failed" else None,
        )
        for name, status in statuses.items()
    ]
    info = RunInfo(run_id=folder.name, started=now, ended=now, status="ok", notebooks=notebooks, git_commit="abc123")
    if "failed" in statuses.values():
        info = info.model_copy(update={"status": "failed"})
    (folder / "run.json").write_text(info.model_dump_json(indent=1))
    for nb in notebooks:
        if nb.output:
            (folder / nb.output).write_text("{}")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = write_planted_run(tmp_path_factory.mktemp("page") / "run-1", per_task=20, chat_per_task=4, snr_items=10)
    _, results = score_run_folder(RunFolder(run), reps=100)
    RunFolder(run).write_scores(results)
    analyze_run(run, reps=100)
    _run_json(run, {"03_run_model": "ok", "04_judge": "ok", "05_analyze": "ok"})
    return run


def test_the_page_shows_the_run_its_table_warnings_figures_and_links(finished: Path):
    index, readme = write_report_page(finished)
    html = index.read_text()
    assert "<title>airbench-nb run run-1</title>" in html and 'class="status ok"' in html
    assert "planted:skilled" in html and "Foundation average" in html
    assert "[" in html and "strict" in html and "official" in html  # cells carry their intervals
    # the planted judge adds +1 to the answer it reads first: the page says so; the fair judge is not named
    assert "judge planted-judge favours the answer it reads first" in html
    assert "judge fair-judge favours" not in html
    assert "planted:letter-a favours option A" in html
    figures = sorted((finished / "analysis" / "figures").glob("*.png"))
    assert figures and all(f'src="analysis/figures/{p.name}"' in html for p in figures)
    assert '<a href="05_analyze.ipynb">' in html and '<a href="analysis/leaderboard.md">' in html
    assert "<script" not in html
    text = readme.read_text()
    assert text.startswith("# airbench-nb run `run-1`: ok") and "(analysis/figures/" in text


def test_a_failed_run_still_gets_a_page(tmp_path: Path):
    folder = tmp_path / "broken"
    folder.mkdir()
    _run_json(folder, {"01_build_data": "ok", "03_run_model": "failed", "04_judge": "skipped"})
    index, _ = write_report_page(folder)
    html = index.read_text()
    assert 'class="status failed"' in html and "notebook 03_run_model failed: ValueError: boom" in html
    assert "No scores" in html and "No figures" in html


def test_cli_report_and_a_folder_without_run_json(finished: Path, tmp_path: Path):
    runner = CliRunner()
    ok = runner.invoke(app, ["report", str(finished)])
    assert ok.exit_code == 0 and "index.html" in ok.output
    missing = runner.invoke(app, ["report", str(tmp_path)])
    assert missing.exit_code == 2 and "run.json" in missing.output


def test_what_was_run_names_every_kind_of_copy_the_items_read_include(finished: Path, tmp_path: Path):
    import json
    import re
    import shutil

    run = tmp_path / "run-copies"
    shutil.copytree(finished, run)
    card = RunFolder(run).dataset_card
    counts = {"graded_items": 10, "rotated_items": 0, "control_items": 25, "perturbed_items": 40}
    card.write_text(json.dumps({"source": "build:tiny", "counts": counts}))
    html = write_report_page(run)[0].read_text()
    data = re.search(r"<th>data</th><td>(.*?)</td>", html).group(1)
    assert data == "source build:tiny, 10 SNR-graded copies, 25 control copies, 40 perturbed copies"
    read = re.search(r"<th>items read</th><td>(.*?)</td>", html).group(1)
    assert "(SNR-graded copies, control copies and perturbed copies included)" in read and "rotated" not in read
    card.write_text(json.dumps({"source": "build:tiny", "counts": {}}))  # no copies: none said to be included
    html = write_report_page(run)[0].read_text()
    assert re.search(r"<th>items read</th><td>\d+ with usable audio, 0 unusable</td>", html)
    card.unlink()  # no data card: the page cannot count the copies, and says they are read all the same
    html = write_report_page(run)[0].read_text()
    read = re.search(r"<th>items read</th><td>(.*?)</td>", html).group(1)
    assert "(any SNR-graded, rotated, control, perturbed or paraphrased copies included)" in read
