"""The audio-reliance controls wired into the pipeline: built through the kit's API, run, judged and analysed.

One module fixture (a few seconds): the tiny preset's gender and speaker-number items with every control of their
first 2 items (``controls_items_per_task=2``), answered by the oracle, DSP and text-prior baselines and judged by
the rule judge in a run folder.
"""

from __future__ import annotations

from collections import Counter

import pytest

from airbench_nb.analysis.report import RunAnalysis
from airbench_nb.analysis_report import ControlsRow
from airbench_nb.benchmarks import benchmark_of_kind
from airbench_nb.builders import PARTS, build
from airbench_nb.builders.controls import CONTROL_KEY, CONTROL_OF_KEY, CONTROLS
from airbench_nb.judge.run import judge_run_folder
from airbench_nb.manifests import read_manifest
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import infer_run_folder

TASKS = ["Speaker_Gender_Recognition", "Speaker_Number_Verification"]


MODELS = ["baseline:oracle", "baseline:dsp", "baseline:text-prior"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The tiny preset's two speech tasks with every control of their first 2 items, in a run folder's data."""
    folder = RunFolder(tmp_path_factory.mktemp("wired") / "run")
    out = folder.data_dir
    options = {"controls_items_per_task": 2, "sseu_utterances": 2}
    tasks = [*TASKS, "sseu_transcription", "sseu_events", "speech_translation"]
    report = build("tiny", seed=0, out=out, tasks=tasks, progress=False, options=options)
    return out, report


@pytest.fixture(scope="module")
def analysis(built):
    """The run answered by the oracle, DSP and text-prior baselines and judged by the rule judge, analysed."""
    out, _ = built
    folder = RunFolder(out.parent)
    infer_run_folder(folder, MODELS, kinds=["foundation", "chat", "transcription", "events", "translation"])
    judge_run_folder(folder, ["rule"], kinds=["foundation"])
    return RunAnalysis(folder.path, reps=200)


def test_off_by_default_and_a_run_without_controls_writes_no_controls_key(tmp_path):
    assert "controls" in PARTS and "controls" in benchmark_of_kind("foundation").parts
    folder = RunFolder(tmp_path / "run")
    report = build("tiny", seed=0, out=folder.data_dir, tasks=TASKS[:1], progress=False)
    assert report.parts["controls"].items == {"foundation": [], "chat": []}
    assert not [i for i in report.foundation_written if CONTROL_OF_KEY in i.meta]
    infer_run_folder(folder, ["baseline:oracle"], kinds=["foundation"])
    judge_run_folder(folder, ["rule"], kinds=["foundation"])
    analysis = RunAnalysis(folder.path, reps=20)
    assert analysis.controls().reason.startswith("no audio-reliance controls")
    data = analysis.write(tmp_path / "out").as_data()
    assert "controls" not in data and "controls_detail" not in data and "controls" not in data["reasons"]


def test_a_build_with_controls_writes_them_last(built):
    out, report = built
    controls = report.parts["controls"].items["foundation"]
    originals = [i.uid for i in report.foundation]
    # no_audio and description: Foundation items carry no description, so 4 controls of each of the 4 items
    assert Counter(i.meta[CONTROL_KEY] for i in controls) == {c: 4 for c in CONTROLS if c != "description"}
    assert {i.meta[CONTROL_OF_KEY] for i in controls} == set(originals)
    uids = [i.uid for i in read_manifest(out / "foundation.jsonl")]
    assert uids[-len(controls) :] == [i.uid for i in controls]  # after the clean, graded and rotated items
    # and 2 transcripts, 2 event lists and 2 translations without a description
    assert report.parts["controls"].card["controls_not_eligible"] == 4 + 2 + 2 + 2


def test_the_frames_keep_the_controls_apart(built, analysis):
    _, report = built
    controls = {i.uid for i in report.parts["controls"].items["foundation"]}
    assert not set(analysis.foundation["uid"]) & controls  # out of position bias, classification, answers, ...
    assert not set(analysis.plain["uid"]) & controls
    everything = analysis.run.foundation_frame("strict", controls=True)
    assert set(everything["uid"]) & controls == controls
    no_audio = {u for u in controls if u.endswith("@ctl-no_audio")}
    assert len(no_audio) == 4  # dsp is not asked them (no row, never a failure); the others answer every control
    assert len(everything) == len(analysis.foundation) + len(MODELS) * len(controls) - len(no_audio)
    assert not set(everything[everything["model"] == "baseline:dsp"]["uid"]) & no_audio
    position = analysis.position_bias().data
    assert {m: p.n for m, p in position.items()} == {m: len(report.foundation) for m in MODELS}  # the originals


def test_the_controls_section_says_who_listens(built, analysis):
    section = analysis.controls()
    labels = ("transcripts, WER", "translations, BLEU", "events, mAP")
    assert section.reason is None and set(section.data) == {*MODELS, *(f"{m} ({x})" for m in MODELS for x in labels)}
    pooled: dict[str, ControlsRow] = {m: rows[-1] for m, rows in section.data.items() if m in MODELS}
    assert all(row.task is None for row in pooled.values())  # each model's tasks, then all of them
    prior, dsp, oracle = pooled["baseline:text-prior"], pooled["baseline:dsp"], pooled["baseline:oracle"]
    assert prior.audio_needed.value == 0 and prior.audio_needed.ci == [0, 0]
    assert all(c.difference.value == 0 for c in prior.controls)  # the same answer under every control
    assert dsp.audio_needed.value > 0 and dsp.audio_needed.ci[0] > 0 and dsp.needed_under == ["silence", "mismatched"]
    assert [c.control for c in dsp.controls] == ["silence", "noise", "mismatched"]  # dsp is not asked no_audio
    assert list(dsp.not_answered) == ["no_audio"] and "cannot be prompted without audio" in dsp.not_answered["no_audio"]
    assert oracle.score.value == 1 and oracle.audio_needed.value == 0
    assert all(c.score == 1 and c.difference.value == 0 for c in oracle.controls)
    assert [c.control for c in oracle.controls] == ["silence", "noise", "mismatched", "no_audio"]
    assert oracle.corrected.value is None and "prior is 1" in oracle.corrected_why
    assert not section.frame.empty and "audio needed" in section.frame.columns
    figure = section.figure
    left, right = figure.axes
    assert [t.get_text() for t in left.get_xticklabels()] == list(CONTROLS[:4])  # every control run, in order
    assert "n = " in left.get_title() and "points" in left.get_ylabel() and "%" in right.get_xlabel()
    figure.savefig(analysis.folder.path / "controls-figure.png", dpi=80)


def test_sseu_transcripts_are_controlled_and_scored_by_wer(built, analysis):
    _, report = built
    made = report.parts["controls"].items["transcription"]
    # 2 clean utterances: silence, noise and mismatched of each; no_audio too (a marker); no description
    assert Counter(i.meta[CONTROL_KEY] for i in made) == {"silence": 2, "noise": 2, "mismatched": 2, "no_audio": 2}
    assert all(i.snr_db is None and i.task == "sseu_transcription" for i in made)
    data = analysis.controls().data
    oracle, dsp = data["baseline:oracle (transcripts, WER)"], data["baseline:dsp (transcripts, WER)"]
    (row,) = oracle  # one task
    assert row.metric == "wer" and row.task == "sseu_transcription" and row.n == 2 and row.score.value == 0
    assert [c.control for c in row.controls] == ["silence", "noise", "mismatched", "no_audio"]
    assert all(c.difference.value == 0 for c in row.controls)  # the oracle reads its reference
    assert row.audio_needed is None and row.text_prior is None and "WER" in row.corrected_why
    assert list(dsp[0].not_answered) == ["no_audio"] and dsp[0].score.value == 1  # it cannot tell: all deletions
    from airbench_nb.analysis.sseu import outcomes_by_model

    read = outcomes_by_model(analysis.run.items.values(), analysis.run.responses)  # what the SSEU tables read
    assert read and not {o.uid for rows in read.values() for o in rows} & {i.uid for i in made}
    assert all(r.metric == "accuracy" for m, rows in data.items() if "(" not in m for r in rows)


def test_translations_and_event_lists_are_controlled_and_scored_by_bleu_and_map(built, analysis):
    _, report = built
    translated, events = report.parts["controls"].items["translation"], report.parts["controls"].items["events"]
    assert Counter(i.meta[CONTROL_KEY] for i in translated) == {c: 2 for c in CONTROLS if c != "description"}
    assert Counter(i.meta[CONTROL_KEY] for i in events) == {c: 2 for c in CONTROLS if c != "description"}
    assert {i.meta[CONTROL_OF_KEY] for i in translated} == {i.uid for i in report.ugbench.translation[:2]}
    data = analysis.controls().data
    bleu = data["baseline:oracle (translations, BLEU)"]
    # one row per language pair, then both pairs together (one tokenizer)
    assert [r.task for r in bleu] == ["speech_translation (de-en)", "speech_translation (fr-en)", None]
    pooled = bleu[-1]
    assert pooled.metric == "bleu" and pooled.n == 2 and pooled.score.value == pytest.approx(1.0)
    assert [c.control for c in pooled.controls] == ["silence", "noise", "mismatched", "no_audio"]
    assert all(c.difference.value == pytest.approx(0.0) for c in pooled.controls)  # the oracle reads its reference
    assert pooled.audio_needed is None and "BLEU" in pooled.corrected_why
    (events_row,) = data["baseline:oracle (events, mAP)"]
    assert events_row.metric == "map" and events_row.task == "sseu_events" and events_row.score.value == 1
    assert all(c.difference.value == 0 for c in events_row.controls)
    assert list(data["baseline:dsp (events, mAP)"][0].not_answered) == ["no_audio"]
    prior = data["baseline:text-prior (translations, BLEU)"][-1]
    assert all(c.difference.value == 0 and c.difference.ci == [0, 0] for c in prior.controls)  # text only
    from airbench_nb.analysis.ugtasks import ug_tasks

    tables = ug_tasks(list(analysis.run.items.values()), analysis.run.responses, {}, reps=0)  # UG-Bench's tables
    assert tables.translation["baseline:oracle"].n == len(report.ugbench.translation) == 2  # the originals only


def test_analysis_json_and_the_landing_page_show_the_controls_after_the_main_table(analysis):
    import re
    from datetime import UTC, datetime

    from airbench_nb.records import RunInfo
    from airbench_nb.report_page import write_report_page

    folder = analysis.folder
    now = datetime.now(UTC)
    info = RunInfo(run_id="wired", started=now, ended=now, status="ok", notebooks=[], git_commit="abc123")
    (folder.path / "run.json").write_text(info.model_dump_json(indent=1))
    written = analysis.write()
    assert written.controls is not None and written.controls_detail.needed_under == ["silence", "mismatched"]
    assert any(f.endswith("score-change-under-controls.png") for f in written.files.figures)
    index, _ = write_report_page(folder.path)
    html = index.read_text()
    headings = re.findall(r"<h2>([^<]+)</h2>", html)
    assert headings.index("Controls") == headings.index("Main table") + 1
    section = html.split("<h2>Controls</h2>")[1].split("<h2>")[0]
    assert "<td>baseline:text-prior</td>" in section and "audio needed" in section
    assert "<td>100.0 [100.0, 100.0]</td>" in section  # dsp's audio-needed share, over its two tasks
    dsp_row = section.split("<td>baseline:dsp</td>")[1].split("</tr>")[0]
    assert dsp_row.count("<td>n/a</td>") == 1  # its no_audio cell, explained under the table
    assert "<b>n/a</b> (baseline:dsp): no_audio: n/a: not asked, the model cannot be prompted without audio" in section


def test_airbench_nb_build_turns_them_on_with_its_generic_option(tmp_path):
    from typer.testing import CliRunner

    from airbench_nb.cli import app

    args = ["build", "--preset", "tiny", "--out", str(tmp_path), "--task", TASKS[0]]
    args += ["--option", "controls_items_per_task=2", "--option", "controls=silence,mismatched"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "and 4 audio-reliance controls (silence, mismatched) of 2 items (0 not eligible)" in result.output
    made = [i for i in read_manifest(tmp_path / "foundation.jsonl") if CONTROL_OF_KEY in i.meta]
    assert sorted(i.meta[CONTROL_KEY] for i in made) == ["mismatched", "mismatched", "silence", "silence"]
