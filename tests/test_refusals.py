"""Commands that did nothing now say so (issue 22, item 8): a clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.manifests import write_manifest, write_records
from airbench_nb.records import Label, Response
from tests.test_analysis_agreement import _run, flabel
from tests.test_hostile import _item

RUNNER = CliRunner()


def _refused(args: list[str], *needles: str, code: int = 2) -> str:
    result = RUNNER.invoke(app, args)
    text = " ".join(result.output.split())
    assert result.exit_code == code, text
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), text
    assert "Traceback" not in text
    for needle in needles:
        assert needle in text, text
    return text


def _manifest(tmp_path: Path) -> Path:
    items = [_item(f"u{k}", f"audio/u{k}.wav", answer=k % 2) for k in range(3)]
    path = tmp_path / "data" / "foundation.jsonl"
    write_manifest(path, items)
    (tmp_path / "data" / "dataset.json").write_text(json.dumps({"data_root": ".", "source": "test"}))
    return path


@pytest.mark.parametrize("name", ["m.txt", "m"])
def test_mix_out_without_a_wav_name_is_refused(tmp_path, name):
    t = np.arange(16000) / 16000
    for source, hz in (("a.wav", 440), ("b.wav", 660)):
        sf.write(tmp_path / source, 0.3 * np.sin(2 * np.pi * hz * t), 16000)
    args = ["mix", str(tmp_path / "a.wav"), str(tmp_path / "b.wav"), "--snr-db", "0", "--out", str(tmp_path / name)]
    _refused(args, "give a name ending in .wav")
    assert not (tmp_path / name).exists()


def test_score_official_with_every_row_invalid(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_name": "x"}\n{"bad": 1}\n')
    _refused(["score-official", "--foundation", str(bad)], "no row could be scored (2 invalid lines", str(bad))


def test_score_for_a_model_the_file_does_not_hold(tmp_path):
    manifest = _manifest(tmp_path)
    responses = tmp_path / "r.jsonl"
    write_records(responses, [Response(uid="u0", model="baseline:first", text="A")])
    args = ["score", "--manifest", str(manifest), "--responses", str(responses), "--protocol", "official"]
    _refused([*args, "--model", "baseline:nope"], "no response of that model", "baseline:first")
    assert RUNNER.invoke(app, [*args, "--model", "baseline:first"]).exit_code == 0


def test_judge_with_no_response_to_the_manifest(tmp_path):
    manifest = _manifest(tmp_path)
    responses = tmp_path / "r.jsonl"
    write_records(responses, [Response(uid="other", model="baseline:first", text="A")])
    out = tmp_path / "v.jsonl"
    args = ["judge", "--judge", "rule", "--manifest", str(manifest), "--responses", str(responses), "--out", str(out)]
    _refused(args, "answer none of the 3 items", "right manifest")
    assert not out.exists()


def test_validate_with_every_audio_missing(tmp_path):
    _refused(["validate", str(_manifest(tmp_path))], "every one of its 3 audio files is missing", "--data-root")


@pytest.mark.parametrize(
    "args",
    [
        ["infer", "--model", "baseline:first", "--batch-size", "-5"],
        ["infer", "--model", "baseline:random", "--temperature", "nan"],
        ["infer", "--model", "baseline:random", "--temperature", "inf"],
        ["infer", "--model", "baseline:random", "--temperature", "-1"],
    ],
)
def test_nonsense_generation_options_are_refused(tmp_path, args):
    manifest = _manifest(tmp_path)
    out = tmp_path / "r.jsonl"
    _refused([*args, "--manifest", str(manifest), "--out", str(out)])
    assert not out.exists()


def test_import_official_with_negative_workers(tmp_path):
    _refused(
        ["import-official", str(tmp_path), "--out", str(tmp_path / "o"), "--workers", "-3"],
        "--workers",
        "greater than or equal to 1",
    )
    assert not (tmp_path / "o").exists()


# --- agreement: only label files the annotation tool would write ---------------------------------------------------


def _agreement(tmp_path: Path, *files: Path) -> list[str]:
    run, sample, _ = _run(tmp_path)
    return ["agreement", str(run), "--sample", str(sample), "--reps", "20", "--labels", *map(str, files)]


def _write_labels(path: Path, labels: list[Label], tail: str = "") -> Path:
    path.write_text("".join(label.model_dump_json() + "\n" for label in labels) + tail)
    return path


def test_agreement_refuses_an_empty_label_file(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    _refused(_agreement(tmp_path, empty), "holds no label", str(empty))


def test_agreement_refuses_a_file_given_twice(tmp_path):
    _, _, files = _run(tmp_path / "x")
    _refused(_agreement(tmp_path, files[0], files[1], files[0]), "given twice")


def test_agreement_refuses_a_copy_under_another_annotator_s_name(tmp_path):
    _, _, files = _run(tmp_path / "x")
    copy = tmp_path / "carol.jsonl"
    copy.write_text(files[0].read_text().replace('"alice"', '"carol"'))
    _refused(_agreement(tmp_path, files[0], copy), "a copy, not a second annotator", "alice")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"annotator": "<img src=x onerror=alert(1)>"}, "annotator"),
        ({"annotator": "ann\x1bx"}, "annotator"),
        ({"score_1": float("nan")}, "score_1"),
        ({"score_2": float("inf")}, "score_2"),
        ({"seconds": -3.0}, "seconds"),
    ],
)
def test_agreement_refuses_lines_the_tool_never_writes(tmp_path, change, field):
    line = json.dumps({**json.loads(flabel("dan", "F1", "A").model_dump_json()), **change})  # NaN, Infinity as is
    path = tmp_path / "dan.jsonl"
    path.write_text(line + "\n")
    _refused(_agreement(tmp_path, path), f"field '{field}'")


def test_agreement_refuses_another_annotator_s_lines_inside_a_file(tmp_path):
    path = _write_labels(tmp_path / "dan.jsonl", [flabel("dan", "F1", "A"), flabel("eve", "F2", "B")])
    _refused(_agreement(tmp_path, path), f"{path}:2", "annotator 'eve' in the file of 'dan'")


def test_agreement_repairs_a_final_line_cut_by_a_crash(tmp_path):
    _, _, files = _run(tmp_path / "x")
    cut = _write_labels(tmp_path / "dan.jsonl", [flabel("dan", "F1", "A")], tail='{"pair_id": "planted:m|F2", "ann')
    result = RUNNER.invoke(app, [*_agreement(tmp_path, files[0], cut), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["annotators"] == ["alice", "dan"]
