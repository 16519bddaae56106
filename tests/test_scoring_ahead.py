"""Transcripts and translations scored ahead in a worker: taken only where they are this process's own, so that
every number of an analysis is the same with or without the worker."""

from __future__ import annotations

import json
import logging
import sys
from concurrent.futures import Future
from pathlib import Path

import pytest

import airbench_nb.scoring.ahead as ahead
import airbench_nb.scoring.parallel as parallel
from airbench_nb.run_folder import RunFolder
from airbench_nb.scoring import translation, wer
from tests.test_scoring_parallel import _bench_scale  # bench/bench_scale.py, loaded as a module


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    """A run of 614 items x 3 models (Foundation, Chat, transcripts, translations), written once."""
    run = tmp_path_factory.mktemp("ahead") / "run"
    _bench_scale().write_run(run, 0.01)
    return run


def _clear_caches() -> None:
    wer._KEPT.clear()
    translation._SUMMARIES.clear()


def _analysis(run: Path, out: Path, monkeypatch, workers: str) -> dict:
    from airbench_nb.analysis.report import analyze_run

    _clear_caches()
    monkeypatch.setenv(parallel.WORKERS_ENV, workers)
    try:
        analyze_run(run, out=out, reps=200)
    finally:
        ahead.stop_ahead()
        parallel.shutdown_pool()
    report = json.loads((out / "analysis.json").read_text())
    report.pop("created")
    return report


def test_an_analysis_is_the_same_with_the_worker_and_takes_its_results(small_run, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(ahead, "AHEAD_MIN", 1)
    here = _analysis(small_run, tmp_path / "here", monkeypatch, "1")
    with caplog.at_level(logging.INFO, logger="airbench_nb.scoring.ahead"):
        spread = _analysis(small_run, tmp_path / "ahead", monkeypatch, "2")
    taken = [r.getMessage() for r in caplog.records if "computed ahead taken" in r.getMessage()]
    assert any("utterances computed ahead" in m for m in taken), taken  # 184 transcripts x 3 models
    assert any("3 translation summaries computed ahead" in m for m in taken), taken
    assert here == spread
    assert here["translation"] and here["sseu"]
    assert (tmp_path / "here" / "tables.csv").read_bytes() == (tmp_path / "ahead" / "tables.csv").read_bytes()


def test_what_is_not_the_analysis_own_is_computed_here(small_run, tmp_path, monkeypatch):
    """An item left out as unusable changes the outcomes scored: the worker's summaries (over every item) are not
    this process's, so they are computed here, and the numbers are those of an analysis without the worker."""
    run = tmp_path / "run"
    import shutil

    shutil.copytree(small_run, run)
    manifest = RunFolder(run).manifest("translation")
    lines = manifest.read_text().splitlines()
    first = json.loads(lines[0])
    first["audio_status"] = "missing"
    manifest.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    monkeypatch.setattr(ahead, "AHEAD_MIN", 1)
    here = _analysis(run, tmp_path / "here", monkeypatch, "1")
    spread = _analysis(run, tmp_path / "ahead", monkeypatch, "2")
    assert here == spread
    assert here["unusable_items"] == 1


def test_only_the_very_same_outcomes_find_a_summary_kept(monkeypatch):
    from airbench_nb.records import Response, TranslationItem
    from airbench_nb.scoring.translation import digest_outcomes, keep_summaries, translation_outcome

    items = [
        TranslationItem(
            uid=f"x{k}",
            audio=f"audio/x{k}.wav",
            dataset="d",
            question="Translate.",
            task="speech_translation",
            source_language="de",
            target_language="en",
            references=[f"The cat number {k} sat on the mat."],
        )
        for k in range(30)
    ]
    outcomes = [
        translation_outcome(i, Response(uid=i.uid, model="m", text=f"the cat {k} sat")) for k, i in enumerate(items)
    ]
    _clear_caches()
    real = translation.score_translations(outcomes, reps=100, seed=1)
    planted = translation.score_translations(outcomes[:-1], reps=100, seed=1)
    _clear_caches()
    keep_summaries({digest_outcomes(outcomes, 100, 1): planted})  # a summary under another corpus's digest
    assert translation.score_translations(outcomes, reps=100, seed=1) == planted  # found by its digest alone
    changed = [*outcomes[:-1], translation_outcome(items[-1], Response(uid="x29", model="m", text="the dog"))]
    assert translation.score_translations(changed, reps=100, seed=1) != planted  # one text differs: computed
    assert translation.score_translations(outcomes, reps=200, seed=1) != planted  # other replicates: computed
    assert real != planted


def test_a_failed_worker_costs_time_never_a_result(caplog):
    failed: Future = Future()
    failed.set_exception(RuntimeError("worker died"))

    ahead._offer(ahead._Job(None, {"transcripts": failed}))
    keys = [("hello world", "hello word", "en", "u1")]
    _clear_caches()
    try:
        with caplog.at_level(logging.WARNING, logger="airbench_nb.scoring.ahead"):
            found = wer.many_utterance_errors(keys)
    finally:
        ahead.stop_ahead()
    assert "the transcripts computed ahead failed (RuntimeError: worker died): computed here" in caplog.text
    assert found == [wer.utterance_errors(*keys[0])] and not ahead.pending("transcripts")


def test_a_worker_that_dies_costs_time_never_a_result(small_run, monkeypatch, caplog):
    """The worker is a plain child process: killed (out of memory, a signal), its parts fail and are computed here."""
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    monkeypatch.setattr(ahead, "AHEAD_MIN", 100)
    _clear_caches()
    assert ahead.start_ahead(RunFolder(small_run), reps=10, seed=0)
    ahead._JOB.process.kill()
    keys = [("hello world", "hello word", "en", "u1")]
    try:
        with caplog.at_level(logging.WARNING, logger="airbench_nb.scoring.ahead"):
            found = wer.many_utterance_errors(keys)
    finally:
        ahead.stop_ahead()
    assert "the worker ended (exit -9) before sending its transcripts" in caplog.text
    assert found == [wer.utterance_errors(*keys[0])]


def test_the_worker_runs_only_when_asked_for_and_the_run_is_large(small_run, monkeypatch):
    folder = RunFolder(small_run)
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    assert not ahead.start_ahead(folder, reps=10, seed=0)  # 368 lines: below AHEAD_MIN
    monkeypatch.setattr(ahead, "AHEAD_MIN", 100)
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    assert not ahead.start_ahead(folder, reps=10, seed=0)  # off: one worker asked for
    monkeypatch.delenv(parallel.WORKERS_ENV)
    monkeypatch.setattr(parallel, "cores", lambda: 1)
    assert not ahead.start_ahead(folder, reps=10, seed=0)  # unset, one core: off
    monkeypatch.setattr(parallel, "cores", lambda: 2)
    assert ahead.enabled()  # unset, two cores: on
    ahead.stop_ahead()
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    try:
        assert ahead.start_ahead(folder, reps=10, seed=0)
        assert ahead.pending("transcripts") and ahead.pending("translations")
        first = ahead._JOB
        assert ahead.start_ahead(RunFolder(small_run), reps=10, seed=0) and ahead._JOB is first  # the same work: kept
        assert ahead.start_ahead(folder, reps=20, seed=0) and ahead._JOB is not first  # other replicates: restarted
        assert first.process.wait(timeout=30) is not None  # the first worker was stopped
    finally:
        ahead.stop_ahead()
    assert not ahead.pending("transcripts")


def test_an_analysis_closed_ends_its_worker_and_no_other(small_run, tmp_path, monkeypatch):
    """A notebook builds RunAnalysis itself: leaving its ``with`` (or close()) ends the worker it started and drops
    the answer parts kept; closing an analysis whose worker gave way to another run's leaves that one at work;
    write() ends it too."""
    import shutil

    from airbench_nb.analysis.report import RunAnalysis
    from airbench_nb.scoring import reference

    monkeypatch.setattr(ahead, "AHEAD_MIN", 1)
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    other = tmp_path / "other"
    shutil.copytree(small_run, other)
    try:
        with RunAnalysis(small_run, reps=20) as analysis:
            job = ahead._JOB
            assert analysis.ahead and job is not None and ahead.pending("translations")
            analysis.sseu()  # reads answer parts, kept for the next section
            assert reference._PARTS
        assert ahead._JOB is None and not ahead.pending("translations") and not ahead.pending("transcripts")
        assert job.process.wait(timeout=30) is not None and not reference._PARTS
        first = RunAnalysis(small_run, reps=20)
        second = RunAnalysis(other, reps=20)  # one worker at a time: the other run's replaces the first's
        job = ahead._JOB
        assert first.ahead and second.ahead and job is not None and job.spec["where"][0] == str(other)
        first.close()
        assert ahead._JOB is job and ahead.pending("translations")
        second.write(tmp_path / "out")
        assert ahead._JOB is None and not second.ahead and (tmp_path / "out" / "analysis.json").is_file()
    finally:
        ahead.stop_ahead()
        parallel.shutdown_pool()


def test_the_worker_imports_no_dataframe_library():
    """The scoring package imports its names on first use: the worker's modules leave pandas, scipy and
    scikit-learn out (about 0.15 GB and 2 s a worker)."""
    import subprocess

    code = (
        "import sys, airbench_nb.scoring.ahead, airbench_nb.scoring.translation, airbench_nb.scoring.reference, "
        "airbench_nb.scoring.wer, airbench_nb.manifests, airbench_nb.run_records; "
        "print(sorted(m for m in ('pandas', 'scipy', 'sklearn', 'matplotlib') if m in sys.modules))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


def test_the_scoring_package_exports_its_names_on_first_use():
    import airbench_nb.scoring as scoring
    from airbench_nb.scoring import score_models
    from airbench_nb.scoring.tables import score_models as defined

    assert score_models is defined and scoring.DEFAULT_REPS == 1000
    assert set(scoring.__all__) <= set(dir(scoring))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        scoring.no_such_name  # noqa: B018


def test_sections_a_worker_is_computing_are_scored_after_every_other_model_section(small_run, monkeypatch):
    """While the worker's translations are pending, every model's Foundation, Chat and WER sections are scored
    before the first translation section (which takes the worker's part); the scores are those scored at once."""
    from airbench_nb.scoring import pending
    from airbench_nb.scoring.metrics import ChoiceAccuracy
    from airbench_nb.scoring.tables import score_run_folder

    def scores() -> dict:
        _clear_caches()
        _, table = score_run_folder(RunFolder(small_run), reps=50)
        return {key: result.as_dict() for key, result in table.items()}

    at_once = scores()
    events: list[str] = []
    original = ChoiceAccuracy.aggregate

    def counted(self, outcomes, protocol, reps, seed):
        events.append("foundation")
        return original(self, outcomes, protocol, reps, seed)

    def taken() -> None:
        events.append("translations taken")
        return None  # as a failed worker: the caller computes them itself

    monkeypatch.setattr(ChoiceAccuracy, "aggregate", counted)
    pending.offer("translations", taken)
    try:
        later = scores()
    finally:
        pending.withdraw()
    assert events == ["foundation"] * 6 + ["translations taken"]  # 3 models x 2 protocols, then the worker's part
    assert later == at_once
    assert all(result["official"]["metric_sections"]["translation"] for result in later.values())


def test_sections_reading_scores_are_computed_last_and_shown_in_report_order(small_run, monkeypatch):
    """Sections that read the score table (``late``: the kit's tables, a benchmark's choice-QA sections) are computed
    after every other section, the benchmarks' included; the report keeps its order."""
    import dataclasses

    from airbench_nb.analysis import registry
    from airbench_nb.analysis.report import LATE_SECTIONS, RunAnalysis
    from airbench_nb.analysis.section import Section

    computed: list[str] = []

    def noted(section):
        def compute(analysis):
            computed.append(section.name)
            return section.compute(analysis)

        return dataclasses.replace(section, compute=compute)

    def added(name: str):
        return lambda analysis: Section(name=name, data={"n": 1})

    sections = {name: noted(section) for name, section in registry.SECTIONS.items()}
    monkeypatch.setattr(registry, "SECTIONS", sections)
    import airbench_nb.analysis.report as report

    monkeypatch.setattr(report, "SECTIONS", sections)
    registry.register_analysis_section("early_added", added("early_added"))
    registry.register_analysis_section("late_added", added("late_added"), late=True)
    sections["early_added"] = noted(sections["early_added"])
    sections["late_added"] = noted(sections["late_added"])
    shown = [s.name for s in RunAnalysis(small_run, reps=20).sections()]
    assert computed.index("early_added") < computed.index("tables") < computed.index("late_added")
    late = {name for name, s in sections.items() if s.late}
    assert late >= set(LATE_SECTIONS) | {"late_added"}
    assert all(name not in late for name in computed[: len(computed) - len(late)])
    kit = [name for name, s in sections.items() if s.kit]
    assert shown[: len(kit)] == kit and shown[-2:] == ["early_added", "late_added"]
