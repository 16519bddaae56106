"""The perturbation builder part: perturbed copies of AIR-Bench, SSEU-Bench and UG-Bench items, kept out of the scores.

One module fixture (a few seconds): the tiny preset's gender task, SSEU-Bench's transcription and events (2
utterances) and UG-Bench's speech translation (2 items) with ``codec:mp3:24`` and ``reverb:0.6`` copies of the first
2 items of each task, answered by the oracle baseline in a run folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import soundfile as sf

from airbench_nb.analysis.data import load_run
from airbench_nb.analysis.sseu import outcomes_by_model
from airbench_nb.audio import sha256_file
from airbench_nb.benchmarks import benchmark_of_kind
from airbench_nb.builders import BUILTIN_PARTS, PARTS, build
from airbench_nb.builders.perturbations import CLIPS_KEY, PerturbPart, build_perturbations
from airbench_nb.manifests import read_manifest
from airbench_nb.perturb import PERTURBATION_META_KEYS, PerturbError, parse_perturbations, perturbed_uid
from airbench_nb.records import LETTERS, PERTURBATION_OF_KEY, Response, is_perturbed
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import infer_run_folder
from airbench_nb.scoring.run import score_run

TASK = "Speaker_Gender_Recognition"
TASKS = [TASK, "sseu_transcription", "sseu_events", "speech_translation"]
PERTURBATIONS = "codec:mp3:24,reverb:0.6"
OPTIONS = {"perturbations": PERTURBATIONS, "perturb_items_per_task": 2, "sseu_utterances": 2}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The tiny preset's gender task and SSEU transcription with both perturbations of their first 2 items."""
    folder = RunFolder(tmp_path_factory.mktemp("perturb") / "run")
    report = build("tiny", seed=0, out=folder.data_dir, tasks=TASKS, progress=False, options=OPTIONS)
    return folder, report


def _copies(report, kind: str) -> list:
    return report.parts["perturb"].items.get(kind, [])


def test_registered_last_owned_by_airbench_and_off_by_default(tmp_path):
    names = [p.name for p in BUILTIN_PARTS]
    assert names[-2:] == ["controls", "perturb"] and isinstance(PARTS["perturb"], PerturbPart)
    assert "perturb" in benchmark_of_kind("foundation").parts
    report = build("tiny", seed=0, out=tmp_path, tasks=[TASK], progress=False)
    assert report.parts["perturb"].items == {} and report.parts["perturb"].failures == []
    assert not [i for i in read_manifest(tmp_path / "foundation.jsonl") if is_perturbed(i)]
    assert not (tmp_path / "audio" / "perturb").exists()
    part = PerturbPart()
    assert part.resolve({}, {}) == {"perturbations": [], "perturb_items_per_task": 0, "paraphrases": 0}
    assert part.resolve({}, {"perturbations": "reverb:0.6", "perturb_items_per_task": None}) == {
        "perturbations": ["reverb:0.6"],
        "perturb_items_per_task": None,
        "paraphrases": 0,
    }
    with pytest.raises(ValueError, match="perturb_items_per_task must be a whole number"):
        part.resolve({}, {"perturb_items_per_task": -1})
    with pytest.raises(PerturbError, match="outside"):
        part.resolve({}, {"perturbations": "reverb:9"})


def test_uids_meta_and_order(built):
    folder, report = built
    specs = parse_perturbations(PERTURBATIONS)
    foundation, transcription = _copies(report, "foundation"), _copies(report, "transcription")
    originals = [i for i in report.foundation if i.task == TASK][:2]
    clean = [i for i in report.sseu.transcription if i.snr_db is None][:2]
    assert len(clean) == 2 and all(i.snr_db is None for i in clean)
    assert [i.uid for i in foundation] == [perturbed_uid(o.uid, s) for o in originals for s in specs]
    assert [i.uid for i in transcription] == [perturbed_uid(o.uid, s) for o in clean for s in specs]
    for copy, (original, spec) in zip(
        [*foundation, *transcription], [(o, s) for o in [*originals, *clean] for s in specs], strict=True
    ):
        assert set(PERTURBATION_META_KEYS) <= set(copy.meta) and copy.meta[PERTURBATION_OF_KEY] == original.uid
        assert copy.meta["perturbation"] == spec.name and copy.meta["parameter"] == spec.parameter
        assert {k: v for k, v in copy.meta.items() if k not in PERTURBATION_META_KEYS} == original.meta
        assert copy.question == original.question and copy.task == original.task and copy.kind == original.kind
        assert copy.audio.startswith(f"audio/perturb/{spec.tag}/{original.task}/") and copy.audio_status == "ok"
        assert copy.notes[-1] == f"{original.uid} with its audio perturbed: {spec.text}"
        assert getattr(copy, "mix", None) is None
    assert all(i.clip_id.endswith("@p-mp3-24k") or i.clip_id.endswith("@p-reverb-0.6s") for i in transcription)
    assert [i.answer for i in foundation] == [o.answer for o in originals for _ in specs]
    # the copies are last in their manifests, after the clean, graded and rotated items
    uids = [i.uid for i in read_manifest(folder.data_dir / "foundation.jsonl")]
    assert uids[-len(foundation) :] == [i.uid for i in foundation] and len(uids) > len(foundation)
    uids = [i.uid for i in read_manifest(folder.data_dir / "transcription.jsonl")]
    assert uids[-len(transcription) :] == [i.uid for i in transcription]
    for kind, originals in (("events", report.sseu.events[:2]), ("translation", report.ugbench.translation[:2])):
        copies = _copies(report, kind)
        assert len(originals) == 2 and [i.uid for i in copies] == [
            perturbed_uid(o.uid, s) for o in originals for s in specs
        ]
        sources = [o.uid for o in originals for _ in specs]
        assert [c.meta[PERTURBATION_OF_KEY] for c in copies] == sources
        uids = [i.uid for i in read_manifest(folder.data_dir / f"{kind}.jsonl")]
        assert uids[-len(copies) :] == [i.uid for i in copies]
    translated = _copies(report, "translation")
    assert [c.references for c in translated] == [o.references for o in report.ugbench.translation[:2] for _ in specs]
    assert [c.labels for c in _copies(report, "events")] == [o.labels for o in report.sseu.events[:2] for _ in specs]
    card = report.parts["perturb"].card
    assert (card["perturbed_items"], card["perturbed_originals"]) == (16, 8) and report.failures == []


def test_measured_on_the_written_files(built):
    folder, report = built
    out = folder.data_dir
    for copy in [*_copies(report, "foundation"), *_copies(report, "transcription")]:
        assert sha256_file(out / copy.audio) == copy.audio_sha256
        assert sf.info(str(out / copy.audio)).samplerate == 16000
        measured = copy.meta["measured"]
        assert isinstance(measured["seed"], int) and all(not Path(a).is_absolute() for a in measured["artifacts"])
        if copy.meta["perturbation"] == "codec:mp3":
            encoded = out / measured["artifacts"][0]
            assert encoded.suffix == ".mp3" and encoded.stat().st_size == measured["encoded_bytes"]
            from_file = encoded.stat().st_size * 8 / measured["duration_s"] / 1000
            assert measured["bitrate_kbps"] == pytest.approx(from_file, rel=1e-6)
            assert measured["value"] == pytest.approx(24, rel=0.2)
        else:
            assert measured["artifacts"][0].endswith(".rir.wav") and (out / measured["artifacts"][0]).is_file()
            assert measured["rt60_s"] == pytest.approx(0.6, rel=0.2)


def test_a_failing_clip_is_counted_and_derived_items_are_skipped(built, tmp_path):
    folder, report = built
    first, second = [i for i in report.foundation if i.task == TASK][:2]
    broken = first.model_copy(update={"uid": "broken-1", "audio": "audio/nowhere.wav"})
    made = build_perturbations([broken, second], folder.data_dir, seed=0, perturbations="reverb:0.6")
    assert [i.uid for i in made.items] == [perturbed_uid(second.uid, parse_perturbations("reverb:0.6")[0])]
    assert [(f.uid, f.task) for f in made.failures] == [("broken-1@p-reverb-0.6s", TASK)]
    assert "nowhere.wav" in made.failures[0].error
    derived = [*report.graded, *report.rotated, *_copies(report, "foundation")]
    assert derived and build_perturbations(derived, folder.data_dir, seed=0, perturbations="reverb:0.6").items == []
    # a multi-clip item: every clip perturbed (<uid>.<k>.wav), the first clip's record and every clip's
    pair = second.model_validate(
        {**second.model_dump(), "uid": "pair-1", "audios": [first.audio, second.audio], "audio": first.audio}
    )
    (copy,) = build_perturbations([pair], folder.data_dir, seed=0, perturbations="reverb:0.6").items
    assert [Path(c).name for c in copy.audios] == ["pair-1@p-reverb-0.6s.0.wav", "pair-1@p-reverb-0.6s.1.wav"]
    assert len(copy.meta[CLIPS_KEY]) == 2 and copy.meta["measured"] == copy.meta[CLIPS_KEY][0]
    assert copy.audios_sha256 == [sha256_file(folder.data_dir / c) for c in copy.audios]


def test_a_failing_clip_in_a_build_is_a_counted_failure(tmp_path, monkeypatch):
    import airbench_nb.builders.perturbations as module

    real = module.perturb_file

    def flaky(source, target, spec, seed):  # noqa: ANN001, ANN202
        if "-000@" in Path(target).name:
            raise PerturbError(f"{spec.text}: cannot encode {source}")
        return real(source, target, spec, seed)

    monkeypatch.setattr(module, "perturb_file", flaky)
    options = {"perturbations": "reverb:0.6", "perturb_items_per_task": 2}
    report = build("tiny", seed=0, out=tmp_path, tasks=[TASK], progress=False, options=options)
    failures = [f for f in report.failures if f["uid"].endswith("@p-reverb-0.6s")]
    assert [(f["task"], f["index"]) for f in failures] == [(TASK, -1)] and "PerturbError" in failures[0]["error"]
    assert len(report.parts["perturb"].items["foundation"]) == 1


def test_copies_are_out_of_the_scores_unless_asked(built):
    folder, report = built
    foundation = [*report.foundation_written, *_copies(report, "foundation")]
    copies = {i.uid for i in _copies(report, "foundation")}
    responses = [Response(uid=i.uid, model="m", text=LETTERS[i.answer]) for i in foundation]
    table = score_run(foundation, responses, protocol="official", reps=0).official
    assert table.foundation.n_items == len(report.foundation)  # the clean items only
    infer_run_folder(folder, ["baseline:oracle"], kinds=["foundation", "transcription"])
    run = load_run(folder.path)
    plain = run.foundation_frame("official")
    assert not set(plain["uid"]) & copies and plain["perturbation"].isna().all() and plain["parameter"].isna().all()
    everything = run.foundation_frame("official", perturbations=True)
    rows = everything[everything["uid"].isin(copies)]
    assert set(rows["uid"]) == copies and set(rows["perturbation"]) == {"codec:mp3", "reverb"}
    assert sorted(set(rows["parameter"])) == [0.6, 24.0]
    sseu_copies = {i.uid for i in _copies(report, "transcription")}
    outcomes = outcomes_by_model(run.items.values(), run.responses)
    assert outcomes and not {o.uid for rows in outcomes.values() for o in rows} & sseu_copies
    kept = outcomes_by_model(run.items.values(), run.responses, perturbations=True)
    assert {o.uid for rows in kept.values() for o in rows} >= sseu_copies


def test_airbench_nb_build_turns_them_on_with_its_generic_option(tmp_path):
    from typer.testing import CliRunner

    from airbench_nb.cli import app

    args = ["build", "--preset", "tiny", "--out", str(tmp_path), "--task", TASK]
    args += ["--option", f"perturbations={PERTURBATIONS}", "--option", "perturb_items_per_task=2"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "and 4 perturbed copies (codec:mp3:24, reverb:0.6) of 2 items (0 failed)" in result.output
    made = [i for i in read_manifest(tmp_path / "foundation.jsonl") if is_perturbed(i)]
    assert sorted(i.meta["perturbation"] for i in made) == ["codec:mp3", "codec:mp3", "reverb", "reverb"]
    bad = CliRunner().invoke(app, [*args[:7], "--option", "perturbations=reverb:9"])
    assert bad.exit_code != 0 and "outside" in bad.output


@pytest.fixture(scope="module")
def analysed(built):
    """The built run answered by the oracle, DSP and text-prior baselines, judged by the rule judge, analysed."""
    from airbench_nb.analysis.report import RunAnalysis
    from airbench_nb.judge.run import judge_run_folder

    folder, _ = built
    infer_run_folder(
        folder,
        ["baseline:oracle", "baseline:dsp", "baseline:text-prior"],
        kinds=["foundation", "transcription", "events", "translation"],
    )
    judge_run_folder(folder, ["rule"], kinds=["foundation"])
    return RunAnalysis(folder.path, reps=200)


def test_the_perturbations_section_pairs_each_copy_with_its_original(built, analysed):
    from airbench_nb.analysis.perturbations import PerturbationsPayload, perturbations_section

    section = perturbations_section(analysed)
    assert section.reason is None and section.figure is not None
    payload = PerturbationsPayload.model_validate(section.data)
    oracle = payload.models["baseline:oracle"]
    assert {(r.metric, r.curve, r.parameter) for r in oracle} == {
        (metric, curve, parameter)
        for metric in ("accuracy", "wer", "bleu", "map")
        for curve, parameter in (("codec:mp3", 24.0), ("reverb", 0.6))
    }
    for row in oracle:  # right on every item, original or perturbed: nothing moves
        assert row.n == (1 if row.metric == "bleu" and row.task else 2) and row.difference == 0 and row.ci == [0, 0]
        assert row.clean == pytest.approx(row.perturbed) == (0 if row.metric == "wer" else 1)
    bleu_tasks = {r.task for r in oracle if r.metric == "bleu"}
    assert bleu_tasks == {"speech_translation (de-en)", "speech_translation (fr-en)", None}  # per pair, then pooled
    codec = next(r for r in oracle if r.curve == "codec:mp3" and r.metric == "wer")
    assert codec.unit == "kbit/s" and 19 < codec.measured < 29  # the bitrate read from the written files
    prior = payload.models["baseline:text-prior"]
    assert {r.metric for r in prior} == {"accuracy", "wer", "bleu", "map"}
    assert all(r.difference == 0 for r in prior)  # it answers from the text only
    assert {r.curve for r in payload.models["baseline:dsp"] if r.metric == "accuracy"} == {"codec:mp3", "reverb"}
    assert payload.protocol == analysed.protocol and payload.reps == 200


def test_analysis_json_the_figure_and_the_page_show_the_curves(built, analysed):
    import re
    from datetime import UTC, datetime

    from airbench_nb.records import RunInfo
    from airbench_nb.report_page import write_report_page

    folder, _ = built
    now = datetime.now(UTC)
    info = RunInfo(run_id="perturbed", started=now, ended=now, status="ok", notebooks=[], git_commit="abc123")
    (folder.path / "run.json").write_text(info.model_dump_json(indent=1))
    written = analysed.write()
    assert "perturbations" in (written.model_extra or {})
    assert any(f.endswith("score-change-under-perturbations.png") for f in written.files.figures)
    added = {s.name: s for s in analysed.added_sections()}
    assert added["perturbations"].reason is None and added["mmau"].reason  # not optional: shown with its reason
    index, _ = write_report_page(folder.path)
    html = index.read_text()
    headings = re.findall(r"<h2>([^<]+)</h2>", html)
    assert "Perturbations" in headings and headings.index("Perturbations") > headings.index("Main table")
    section = html.split("<h2>Perturbations</h2>")[1].split("<h2>")[0]
    assert "<th>codec:mp3 24 kbit/s</th>" in section and "<th>reverb 0.6 s RT60</th>" in section
    assert "<td>baseline:oracle</td>" in section and "<td>0.0 [0.0, 0.0]</td>" in section
