"""The score table is computed once per run: notebook 04 writes it with what it was computed from, 05 reads it.

:func:`~airbench_nb.scoring.write_run_scores` writes ``summary.json`` and ``summary.inputs.json``;
:meth:`RunAnalysis.scores <airbench_nb.analysis.report.RunAnalysis.scores>` reads that table while the run's records
and options are unchanged, and computes it (the same numbers) when it is absent or no longer current.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from airbench_nb.analysis.report import RunAnalysis
from airbench_nb.manifests import read_records, write_records
from airbench_nb.records import Response
from airbench_nb.run_folder import RunFolder
from airbench_nb.run_records import RunRecords
from airbench_nb.score_table import ScoreTable
from airbench_nb.scoring import score_inputs, write_run_scores
from tests.planted_run import write_planted_run

REPS = 50


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunFolder, ScoreTable]:
    """A planted run, scored as notebook 04 scores it."""
    folder = RunFolder(write_planted_run(tmp_path_factory.mktemp("scored") / "run", per_task=6, snr_items=4))
    _, table = write_run_scores(folder, reps=REPS)
    return folder, table


@pytest.fixture
def copy(scored, tmp_path: Path) -> RunFolder:
    folder, _ = scored
    shutil.copytree(folder.path, tmp_path / "run")
    return RunFolder(tmp_path / "run")


def _no_scoring(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the run was scored again")

    monkeypatch.setattr("airbench_nb.scoring.score_models", refuse)


def test_notebook_04_writes_the_table_with_its_inputs(scored) -> None:
    folder, table = scored
    inputs = folder.read_score_inputs()
    assert inputs is not None and inputs == score_inputs(RunRecords(folder), reps=REPS)
    assert inputs.protocol == "both" and inputs.seed == 0 and inputs.embedder is None
    assert folder.read_scores(inputs) == table == folder.read_scores()
    assert folder.read_scores(score_inputs(RunRecords(folder), reps=REPS + 1)) is None  # other options: not current


def test_the_analysis_reads_the_current_table_instead_of_scoring_again(scored, monkeypatch) -> None:
    folder, table = scored
    computed = RunAnalysis(folder.path, reps=REPS, seed=1).scores()[1]  # another seed: not 04's table, computed
    _no_scoring(monkeypatch)
    summary, read = RunAnalysis(folder.path, reps=REPS).scores()
    assert read.to_json() == table.to_json()
    assert summary.equals(table.summary_frame())
    assert set(read) == set(computed)  # the same runs as the analysis computes
    one = RunAnalysis(folder.path, reps=REPS, models=["planted:skilled"]).scores()[1]  # limited to the models analysed
    mine = [k for k in table if k.startswith("planted:skilled |")]
    assert list(one) == mine and all(one[k] == table[k] for k in mine)


def test_the_table_computed_here_has_the_numbers_of_notebook_04s(copy: RunFolder) -> None:
    table = copy.read_scores()
    copy.score_inputs_json.unlink()  # a folder notebook 04 never scored with its inputs: computed here
    assert RunAnalysis(copy.path, reps=REPS).scores()[1].to_json() == table.to_json()


def test_a_changed_record_makes_the_table_stale(copy: RunFolder, monkeypatch) -> None:
    before = copy.read_scores()
    path = copy.responses_file("planted:skilled", "foundation")
    answers = read_records(path, Response)
    write_records(path, [*answers, answers[0].model_copy(update={"text": "Z"})])  # a rerun since notebook 04
    analysis = RunAnalysis(copy.path, reps=REPS)
    assert copy.read_scores(score_inputs(analysis.records, reps=REPS)) is None
    after = analysis.scores()[1]  # computed again
    assert after.to_json() != before.to_json()
    _no_scoring(monkeypatch)
    write_run_scores(copy, reps=REPS)  # notebook 04 again: current
    assert RunAnalysis(copy.path, reps=REPS).scores()[1] == copy.read_scores()


def test_writing_a_table_without_inputs_forgets_the_old_ones(copy: RunFolder) -> None:
    table = copy.read_scores()
    assert copy.score_inputs_json.is_file()
    copy.write_scores(table)
    assert not copy.score_inputs_json.is_file() and copy.read_score_inputs() is None
    assert copy.read_scores(score_inputs(RunRecords(copy), reps=REPS)) is None


def test_a_table_from_another_kits_scoring_code_is_computed_again(copy: RunFolder) -> None:
    from airbench_nb.scoring.tables import scoring_code

    inputs = copy.read_score_inputs()
    assert inputs is not None and inputs.code == scoring_code() and len(inputs.code) == 64
    assert copy.read_scores(inputs) is not None
    # a table written by an older kit (no code recorded, or another one) is not current
    older = inputs.model_dump()
    older.pop("code")
    copy.score_inputs_json.write_text(json.dumps(older), encoding="utf-8")
    assert copy.read_scores(score_inputs(RunRecords(copy), reps=REPS)) is None
