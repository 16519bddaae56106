"""Hostile and careless input: every probe of issue 10 (items 4-6), with real files, subprocesses and papermill runs.

Each probe says what a careless or hostile user gives the kit and what the kit must do: a clear error naming the file,
line and field (exit 2 on the command line, one line on stderr, never a traceback), or a rejected row or line while
the rest goes on.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pydantic import ValidationError
from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.manifests import (
    DatasetCard,
    ManifestError,
    check_audio,
    data_root,
    read_manifest,
    read_records,
    write_dataset_card,
    write_manifest,
)
from airbench_nb.records import AudioStatus, FoundationItem, Response, Verdict

runner = CliRunner()
SR = 16000
HUGE = "9" * 5000  # more digits than Python converts (sys.get_int_max_str_digits() is 4300)
DEEP = "[" * 100_000 + "]" * 100_000  # too deep for the json parser itself (RecursionError)


def _refused(result, *needles: str) -> str:
    """Assert a command refused its input: exit 2, one line on stderr, no traceback; return that line."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _wav(path: Path, seconds: float = 1.0, amp: float = 0.3, seed: int = 0, subtype: str = "PCM_16") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    x = amp * np.random.default_rng(seed).uniform(-1, 1, int(seconds * SR))
    sf.write(str(path), x.astype(np.float32), SR, subtype=subtype)
    return path


def _item(uid: str = "u1", audio: str = "a.wav", **kw) -> FoundationItem:
    fields = dict(uid=uid, dataset="synthetic", audio=audio, question="Q?", task="Music_AQA", choices=["x", "y"])
    return FoundationItem(**{**fields, "answer": 0, **kw})


def _line(**overrides) -> dict:
    base = _item().model_dump(mode="json")
    base.update(overrides)
    return base


# --- item 4: the secret check of `run` ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "sk-abc123",  # short keys
        "key=sk-proj-ab12cd",
        "sk-ant-api03-xyz9",
        "sk-test-abcdefghijklmnopqrstuvwx",  # no digit, but long
        "ghp_" + "a1B2c3D4e5" * 3 + "abcdef",  # GitHub classic token
        "gho_abcdefgh1234",
        "github_pat_11ABCDEFG0123456789_abcdefXYZ",  # fine-grained token
        "https://alice:hunter2@example.com/v1",  # a password in a URL
        "http://:pw@10.0.0.1:8000",
        ["baseline:random", "openai:gpt-4o@https://u:p@proxy.local/v1"],  # inside a list value
        "AKIAABCDEFGHIJKLMNOP",
    ],
)
def test_secret_values_are_refused_without_echo(value):
    from airbench_nb.pipeline import PipelineError, check_no_secrets

    with pytest.raises(PipelineError, match="environment") as err:
        check_no_secrets({"models": value})
    for secret in ("abc123", "hunter2", "a1B2c3D4e5", "ABCDEFG0123", ":pw@", "u:p@"):
        if secret in str(value):
            assert secret not in str(err.value)


@pytest.mark.parametrize(
    "value",
    [
        "task-sk-level",
        "task-sk-level42",  # glued to a word: not a key
        "sk-learn",  # no digit: a word, not a key
        "risk-assessment-2024",
        "desk-lamp-123456",
        "https://example.com:8080/path@v2",  # no password: '@' after the path
        "ssh://git@github.com/org/repo.git",  # a user without a password
        "Speaker_Gender_Recognition",
        "hf:/models/Qwen2-Audio-7B-Instruct",
    ],
)
def test_secret_lookalikes_stay_allowed(value):
    from airbench_nb.pipeline import check_no_secrets

    check_no_secrets({"x": value})


def test_cli_run_refuses_a_short_key_before_running(tmp_path):
    result = runner.invoke(app, ["run", "-p", "models=sk-abc123", "--reports", str(tmp_path / "r")])
    line = _refused(result, "models")
    assert "abc123" not in result.output and "abc123" not in line
    assert not (tmp_path / "r").exists()


# --- item 5: run ids, reports folders, -p values --------------------------------------------------------------------


@pytest.mark.parametrize("run_id", ["../x", "../../etc", "/tmp/evil", "a/b", "a\\b", "..", ".", ".hidden", "x" * 200])
def test_run_ids_are_confined_to_the_reports_folder(tmp_path, run_id):
    from airbench_nb.pipeline import PipelineError, run_pipeline

    reports = tmp_path / "reports"
    with pytest.raises(PipelineError, match="plain folder name"):
        run_pipeline({}, notebooks=["00_tutorial"], run_id=run_id, reports_dir=reports)
    assert not reports.exists() and not (tmp_path / "x").exists()
    _refused(runner.invoke(app, ["run", "--run-id", run_id, "--reports", str(reports)]), "run id")
    assert not reports.exists()


def test_run_reports_under_a_file_and_bad_params_exit_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    _refused(runner.invoke(app, ["run", "--reports", str(blocker)]), "--reports", "is a file")
    _refused(runner.invoke(app, ["run", "--reports", str(blocker / "sub")]), "--reports", "is a file")
    _refused(runner.invoke(app, ["run", "-p", "no-equals-sign"]), "NAME=VALUE")
    _refused(runner.invoke(app, ["run", "-p", f"seed={HUGE}"]), "-p seed")
    _refused(runner.invoke(app, ["run", "-p", "seed=" + "[" * 5000]), "-p seed")


@pytest.mark.parametrize(
    ("notebook", "error"),
    [
        ("03_run_model", "no such folder"),
        ("04_judge", "no such folder"),
        ("05_analyze", "no manifest (foundation.jsonl"),
    ],
)
def test_missing_manifest_dir_fails_the_notebook_and_the_run(tmp_path, notebook, error):
    from airbench_nb.pipeline import run_pipeline

    missing = tmp_path / "nowhere"
    info = run_pipeline(
        {"manifest_dir": str(missing)}, notebooks=[notebook], run_id="r", reports_dir=tmp_path, html=False
    )
    assert info.status == "failed"
    assert info.notebooks[0].status == "failed" and error in info.notebooks[0].error
    assert str(missing) in info.notebooks[0].error
    saved = json.loads((tmp_path / "r" / "run.json").read_text())
    assert saved["status"] == "failed"


def test_manifest_files_names_what_is_missing(tmp_path):
    from airbench_nb.manifests import manifest_files

    with pytest.raises(FileNotFoundError, match="no such folder"):
        manifest_files(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="holds none of foundation.jsonl, chat.jsonl"):
        manifest_files(tmp_path)
    write_manifest(tmp_path / "chat.jsonl", [])
    assert manifest_files(tmp_path) == {"chat": tmp_path / "chat.jsonl"}
    with pytest.raises(FileNotFoundError, match="foundation.jsonl"):
        manifest_files(tmp_path, ["foundation"])


# --- item 5: import-official ----------------------------------------------------------------------------------------


def _row(uniq: int, **overrides) -> dict:
    row = {
        "path": f"clip{uniq}.wav",
        "question": "Which?",
        "choice_a": "x",
        "choice_b": "y",
        "answer_gt": "x",
        "task_name": "Music_AQA",
        "dataset_name": "d",
        "uniq_id": uniq,
    }
    row.update(overrides)
    return row


def _release(root: Path, rows_json: bytes) -> Path:
    (root / "Foundation").mkdir(parents=True, exist_ok=True)
    (root / "Foundation" / "Foundation_meta.json").write_bytes(rows_json)
    for n in range(1, 4):
        _wav(root / "Foundation" / "Music_AQA_d" / f"clip{n}.wav", 0.5, seed=n)
    return root


def test_import_rejects_names_that_leave_the_root(tmp_path):
    from airbench_nb.official import import_official

    bad = [
        ("dataset_name", "../../etc"),
        ("dataset_name", "/abs"),
        ("dataset_name", "a/b"),
        ("dataset_name", "a\\b"),
        ("dataset_name", ".."),
        ("dataset_name", "C:evil"),
        ("dataset_name", "d\x00x"),
        ("dataset_name", "d\u200bx"),
        ("task_name", "../Music_AQA"),
        ("task_name", "/Music_AQA"),
        ("path", "../../secret.wav"),
        ("path", "/etc/passwd"),
        ("path", "a\x00.wav"),
    ]
    rows = [_row(1), *[_row(10 + i, **{field: value}) for i, (field, value) in enumerate(bad)], _row(2)]
    rows.append(_row(3, path="a" * 5000 + ".wav"))  # a name too long for the file system: imported, audio missing
    root = _release(tmp_path / "rel", json.dumps(rows).encode())
    report = import_official(root, tmp_path / "out")
    assert [i.source_id for i in report.foundation.items] == ["1", "2", "3"]
    assert [i.audio_status for i in report.foundation.items] == [AudioStatus.ok, AudioStatus.ok, AudioStatus.missing]
    assert [(r.field, r.row[r.field]) for r in report.foundation.rejected] == bad
    assert all(r.reason for r in report.foundation.rejected)
    saved = [json.loads(line) for line in (tmp_path / "out" / "rejected.jsonl").read_text("utf-8").splitlines()]
    assert [r["field"] for r in saved] == [field for field, _ in bad]
    assert not any((tmp_path / p).exists() for p in ("etc", "abs", "secret.wav"))


def test_import_rejects_rows_with_long_ints_deep_nesting_and_bad_bytes(tmp_path):

    good = json.dumps(_row(1)).encode()
    long_int = json.dumps(_row(2)).replace('"uniq_id": 2', f'"uniq_id": {HUGE}').encode()
    deep = json.dumps(_row(3, meta_info=None, extra="X")).replace('"X"', "[" * 80 + "]" * 80).encode()
    bad_bytes = (
        json.dumps(_row(4, question="caf\u00e9?"), ensure_ascii=False).encode().replace("\u00e9".encode(), b"\xe9")
    )
    long_choice = json.dumps(_row(5)).replace('"choice_b": "y"', f'"choice_b": {HUGE}').encode()
    meta = b"[" + b",\n".join([good, long_int, deep, bad_bytes, long_choice, json.dumps(_row(3)).encode()]) + b"]"
    root = _release(tmp_path / "rel", meta)
    result = runner.invoke(app, ["import-official", str(root), "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    counts = json.loads(result.stdout)["Foundation"]
    assert (counts["rows"], counts["imported"], counts["rejected"]) == (6, 2, 4)
    rejected = [json.loads(x) for x in (tmp_path / "out" / "rejected.jsonl").read_text("utf-8").splitlines()]
    assert [(r["index"], r["field"]) for r in rejected] == [
        (1, "uniq_id"),
        (2, "extra"),
        (3, "question"),
        (4, "choice_b"),
    ]
    assert "digits" in rejected[0]["reason"] and "nested deeper" in rejected[1]["reason"]
    assert "not valid UTF-8" in rejected[2]["reason"] and rejected[2]["row"]["question"] == "caf\ufffd?"
    assert rejected[0]["row"]["uniq_id"] == "<integer of 5000 digits>"
    assert {i["uid"] for i in map(json.loads, (tmp_path / "out" / "foundation.jsonl").open())} == {
        "foundation-1",
        "foundation-3",
    }


@pytest.mark.parametrize(
    ("content", "needle"),
    [(DEEP.encode(), "nested too deeply"), (b"[{]", "not valid JSON"), (b'{"rows": []}', "expected a JSON list")],
)
def test_import_of_an_unusable_meta_file_exits_2_naming_it(tmp_path, content, needle):
    (tmp_path / "rel" / "Foundation").mkdir(parents=True)
    (tmp_path / "rel" / "Foundation" / "Foundation_meta.json").write_bytes(content)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "airbench_nb.cli",
            "import-official",
            str(tmp_path / "rel"),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and needle in proc.stderr and "Foundation_meta.json" in proc.stderr


# --- item 5: manifests, record files, dataset.json -----------------------------------------------------------------


def _hostile_lines() -> list[tuple[bytes, int, str | None, str]]:
    """(line bytes, line number, field, words of the message) for a manifest with one good line first."""
    good = json.dumps(_line(uid="ok")).encode()
    return [
        (good, 1, None, ""),
        (json.dumps(_line(uid="i1")).replace('"answer": 0', f'"answer": {HUGE}').encode(), 2, "answer", "digits"),
        (json.dumps(_line(uid="i2", meta={"n": 1})).replace('"n": 1', f'"n": {HUGE}').encode(), 3, "meta.n", "digits"),
        (
            json.dumps(_line(uid="i3", meta={"d": "X"})).replace('"X"', "[" * 70 + "]" * 70).encode(),
            4,
            "meta.d",
            "deeper",
        ),
        (DEEP.encode(), 5, None, "nested too deeply"),
        (
            json.dumps(_line(uid="i5", question="é?"), ensure_ascii=False).encode().replace("é".encode(), b"\xff"),
            6,
            "question",
            "UTF-8",
        ),
        (b"\xfe\xff{not json", 7, None, "invalid JSON"),
        (json.dumps(_line(uid="i7", answer=True)).encode(), 8, "answer", "integer"),
        (json.dumps(_line(uid="i8", answer="1")).encode(), 9, "answer", "integer"),
        (json.dumps(_line(uid="i9\u200b")).encode(), 10, "uid", "zero-width"),
        (json.dumps(_line(uid="last")).encode(), 11, None, ""),
    ]


def test_manifest_lines_with_hostile_json_are_errors_naming_line_and_field(tmp_path):
    path = tmp_path / "m.jsonl"
    lines = _hostile_lines()
    path.write_bytes(b"\n".join(raw for raw, *_ in lines) + b"\n")
    items, errors = read_manifest(path, strict=False)
    assert [i.uid for i in items] == ["ok", "last"]
    expected = [(n, field) for _, n, field, words in lines if words]
    assert [(e.line, e.field) for e in errors] == expected
    for err, (_, _, _, words) in zip(errors, [x for x in lines if x[3]], strict=True):
        assert words in err.message and err.file == str(path)
        assert f"{path}:{err.line}" in str(err)
    with pytest.raises(ManifestError, match=r"m\.jsonl:2: item 'i1': field 'answer'"):
        read_manifest(path)


def test_cli_validate_lists_each_bad_line_and_never_crashes(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"\n".join(raw for raw, *_ in _hostile_lines()) + b"\n")
    _wav(tmp_path / "a.wav")
    proc = subprocess.run(
        [sys.executable, "-m", "airbench_nb.cli", "validate", str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "2 valid items, 9 invalid lines" in proc.stdout
    assert f"{path}:6: item 'i5': field 'question'" in proc.stderr and f"{path}:5: " in proc.stderr


def test_record_files_with_hostile_lines(tmp_path):
    path = tmp_path / "responses.jsonl"
    ok = Response(uid="u1", model="baseline:first", text="A").model_dump_json()
    lines = [
        ok,
        ok.replace('"uid":"u1"', '"uid":"u2"').replace('"input_tokens":null', f'"input_tokens":{HUGE}'),
        ok.replace('"uid":"u1"', '"uid":"u3"').replace('"input_tokens":null', '"input_tokens":"12"'),
        ok.replace('"uid":"u1"', '"uid":"u4\\u0007"'),
    ]
    path.write_bytes("\n".join(lines).encode() + b"\n\xc3(\n")
    with pytest.raises(ManifestError) as err:
        read_records(path, Response)
    assert err.value.line == 2 and err.value.field == "input_tokens"
    assert [r.uid for r in read_records(path, Response, strict=False)] == ["u1"]
    manifest = tmp_path / "m.jsonl"
    write_manifest(manifest, [_item("u1")])
    _refused(runner.invoke(app, ["score", "--manifest", str(manifest), "--responses", str(path)]), f"{path}:2")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b'{"data_root": ', "invalid JSON"),
        (b'{"data_root": 5}', "data_root"),
        (b'{"data_root": ".", "counts": "many"}', "counts"),
        (b'{"data_root": ".", "owner": "me"}', "owner"),
        (b'["."]', "expected a JSON object"),
        (b'{"data_root": "\xff"}', "UTF-8"),
        (b'{"data_root": ".", "counts": {"n": ' + HUGE.encode() + b"}}", "digits"),
        (DEEP.encode(), "too deeply"),
    ],
)
def test_a_broken_dataset_card_is_one_clear_error_naming_the_file(tmp_path, content, words):
    write_manifest(tmp_path / "m.jsonl", [_item()])
    _wav(tmp_path / "a.wav")
    (tmp_path / "dataset.json").write_bytes(content)
    with pytest.raises(ManifestError) as err:
        data_root(tmp_path / "m.jsonl")
    assert err.value.file.endswith("dataset.json")
    _refused(runner.invoke(app, ["validate", str(tmp_path / "m.jsonl")]), "dataset.json", words)


# --- item 5: mix values, --out paths, prompt templates, hf: paths, score-official, --limit ------------------------


@pytest.fixture
def two_clips(tmp_path) -> tuple[Path, Path]:
    return _wav(tmp_path / "a.wav", 1.0, seed=1), _wav(tmp_path / "b.wav", 1.0, seed=2)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--snr-db", "1e308"], "snr_db must lie within"),
        (["--snr-db", "-1e308"], "snr_db must lie within"),
        (["--snr-db", "inf"], "finite"),
        (["--snr-db", "nan"], "finite"),
        (["--gain-a-db", "1e6", "--gain-b-db", "0"], "gain_a_db must lie within"),
        (["--gain-a-db", "0", "--gain-b-db", "-1e6"], "gain_b_db must lie within"),
        (["--gain-a-db", "1e308", "--gain-b-db", "-1e308"], "gain_a_db must lie within"),
        (["--snr-db", "0", "--offset-s", "1e308"], "no overlap"),
        (["--snr-db", "0", "--offset-s", "-1e308"], "no overlap"),
        (["--snr-db", "0", "--offset-s", "5"], "no overlap"),
        (["--snr-db", "0", "--offset-s", "-1.0"], "no overlap"),
        (["--snr-db", "0", "--reference-lufs", "1e308"], "reference_loudness"),
        (["--snr-db", "0", "--reference-lufs", "-1e308"], "reference_loudness"),
    ],
)
def test_mix_refuses_overflowing_values(tmp_path, two_clips, options, words):
    a, b = two_clips
    result = runner.invoke(app, ["mix", str(a), str(b), "--out", str(tmp_path / "m.wav"), *options])
    _refused(result, words)
    assert not (tmp_path / "m.wav").exists()


def test_mix_still_accepts_large_but_sane_values(tmp_path, two_clips):
    from airbench_nb.mix import mix_files

    a, b = two_clips
    for kwargs in ({"snr_db": 100.0}, {"snr_db": -100.0}, {"gain_a_db": 100.0, "gain_b_db": -100.0}):
        meta = mix_files(a, b, **kwargs).meta
        assert np.isfinite(meta.scale) and meta.scale > 0
    assert mix_files(a, b, snr_db=60.0).meta.snr_db_measured == pytest.approx(60.0, abs=0.01)


def test_a_clip_far_below_the_reference_is_warned_about(tmp_path, caplog):
    from airbench_nb.mix import mix

    loud = 0.3 * np.random.default_rng(0).uniform(-1, 1, SR)
    quiet = 1e-5 * np.random.default_rng(1).uniform(-1, 1, SR)  # about -105 dBFS: 82 dB below -23 LUFS
    with caplog.at_level(logging.WARNING, logger="airbench_nb.mix"):
        mix(loud, loud * 0.5, snr_db=0.0)
    assert not caplog.records
    with caplog.at_level(logging.WARNING, logger="airbench_nb.mix"):
        mix(loud, quiet, snr_db=0.0)
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert "source B" in message and "below the loudness reference" in message


def _out_commands(tmp_path: Path, out: Path) -> dict[str, list[str]]:
    """Each command with an output option, its inputs valid, writing to ``out``."""
    _wav(tmp_path / "a.wav", seed=1)
    _wav(tmp_path / "b.wav", seed=2)
    manifest = tmp_path / "m.jsonl"
    write_manifest(manifest, [_item("u1")])
    responses = tmp_path / "r.jsonl"
    responses.write_text(Response(uid="u1", model="baseline:first", text="A").model_dump_json() + "\n")
    (tmp_path / "rel" / "Chat").mkdir(parents=True, exist_ok=True)
    (tmp_path / "rel" / "Chat" / "Chat_meta.json").write_text("[]")
    (tmp_path / "run").mkdir(exist_ok=True)
    m, r, a, b = str(manifest), str(responses), str(tmp_path / "a.wav"), str(tmp_path / "b.wav")
    o = str(out)
    return {
        "mix": ["mix", a, b, "--snr-db", "0", "--out", o],
        "infer": ["infer", "--model", "baseline:first", "--manifest", m, "--out", o],
        "infer --official-out": ["infer", "--model", "baseline:first", "--manifest", m, "--out", str(tmp_path / "x")]
        + ["--official-out", o],
        "judge": ["judge", "--judge", "rule", "--manifest", m, "--responses", r, "--out", o],
        "judge --cache": ["judge", "--judge", "rule", "--manifest", m, "--responses", r, "--out", str(tmp_path / "v")]
        + ["--cache", o],
        "rotate": ["rotate", m, "--out", o],
        "import-official": ["import-official", str(tmp_path / "rel"), "--out", o],
        "build": ["build", "--preset", "tiny", "--task", "Music_Midi_Pitch_Analysis", "--out", o],
        "analyze": ["analyze", str(tmp_path / "run"), "--out", o],
        "run --reports": ["run", "--notebooks", "00_tutorial", "--reports", o],
    }


FILE_OUTPUTS = ("mix", "infer", "infer --official-out", "judge", "judge --cache", "rotate")
FOLDER_OUTPUTS = ("import-official", "build", "analyze", "run --reports")


@pytest.mark.parametrize("command", FILE_OUTPUTS + FOLDER_OUTPUTS)
def test_out_under_a_file_is_refused_by_every_command(tmp_path, command):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    args = _out_commands(tmp_path, blocker / "deeper" / "out")[command]
    _refused(runner.invoke(app, args), "is a file")
    assert blocker.read_text() == "not a folder"


@pytest.mark.parametrize("command", FILE_OUTPUTS)
def test_out_that_is_a_folder_is_refused_for_files(tmp_path, command):
    folder = tmp_path / "a_folder"
    folder.mkdir()
    args = _out_commands(tmp_path, folder)[command]
    _refused(runner.invoke(app, args), "is a folder")
    assert not any(folder.iterdir())


@pytest.mark.parametrize("command", FOLDER_OUTPUTS)
def test_out_that_is_a_file_is_refused_for_folders(tmp_path, command):
    target = tmp_path / "a_file"
    target.write_text("keep me")
    args = _out_commands(tmp_path, target)[command]
    _refused(runner.invoke(app, args), "is a file")
    assert target.read_text() == "keep me"


def test_limit_below_zero_is_refused(tmp_path):
    args = _out_commands(tmp_path, tmp_path / "r2.jsonl")["infer"]
    _refused(runner.invoke(app, [*args, "--limit", "-1"]), "--limit", "-1")
    assert not (tmp_path / "r2.jsonl").exists()
    assert runner.invoke(app, [*args, "--limit", "0"]).exit_code == 0


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ({"chat_template": "{question} {answer}"}, "unknown field {answer}"),
        ({"chat_template": "{question.__class__}"}, "unknown field {question.__class__}"),
        ({"foundation_template": "{instruction}\n{question}\n{options[0]}"}, "unknown field {options[0]}"),
        ({"foundation_instruction": "Pick {0}"}, "unknown field {0}"),
        ({"foundation_instruction": "Pick {}"}, "unknown field {}"),
        ({"chat_template": "{question"}, "not a valid format string"),
        ({"chat_template": "question}"}, "not a valid format string"),
        ({"chat_template": "{question!r}"}, "no conversion or format spec"),
        ({"chat_template": 5}, "must be a string"),
        ({"system": "hi"}, "unknown key(s) system"),
        (["{question}"], "JSON object"),
    ],
)
def test_bad_prompt_templates_fail_before_the_model_loads(tmp_path, content, words):
    template = tmp_path / "prompts.json"
    template.write_text(json.dumps(content))
    # A checkpoint folder whose config is garbage: loading it would fail with another message.
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text("{garbage")
    args = _out_commands(tmp_path, tmp_path / "out.jsonl")["infer"]
    args[args.index("baseline:first")] = f"hf:{tmp_path / 'ckpt'}"
    line = _refused(runner.invoke(app, [*args, "--prompt-set", str(template)]), "prompts.json", words)
    assert "config" not in line


def test_a_prompt_template_file_that_is_not_utf8_is_refused(tmp_path):
    template = tmp_path / "prompts.json"
    template.write_bytes(b'{"chat_template": "\xff{question}"}')
    args = _out_commands(tmp_path, tmp_path / "out.jsonl")["infer"]
    _refused(runner.invoke(app, [*args, "--prompt-set", str(template)]), "prompts.json", "UTF-8")


def test_hf_paths_that_are_not_checkpoints_are_one_line_errors(tmp_path):
    (tmp_path / "empty_folder").mkdir()
    (tmp_path / "weights.bin").write_bytes(b"\0" * 16)
    args = _out_commands(tmp_path, tmp_path / "out.jsonl")["infer"]
    where = args.index("baseline:first")
    for spec, words in [
        (f"hf:{tmp_path / 'empty_folder'}", "no config.json"),
        (f"hf:{tmp_path / 'weights.bin'}", "is a file"),
        (f"hf:{tmp_path / 'missing'}", "no such folder"),
        ("hf:./definitely/not/here", "no such folder"),
    ]:
        args[where] = spec
        _refused(runner.invoke(app, args), spec, words)
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    "content",
    [
        json.dumps({"results": [{"task_name": "Music_AQA", "response": "A"}]}, indent=2),  # pretty-printed
        json.dumps({"results": [{"task_name": "Music_AQA", "response": "A"}]}),  # on one line
        json.dumps({"task_name": "Music_AQA", "choice_a": "x"}, indent=2),  # one row, pretty-printed
    ],
)
def test_score_official_on_a_json_object_exits_2_naming_the_file(tmp_path, content):
    path = tmp_path / "results.json"
    path.write_text(content)
    for option in ("--foundation", "--chat"):
        _refused(runner.invoke(app, ["score-official", option, str(path)]), str(path), "JSON object")


def test_score_official_counts_hostile_lines_and_scores_the_rest(tmp_path):
    from airbench_nb.scoring import score_official_files

    row = {"task_name": "Music_AQA", "dataset_name": "d", "choice_a": "x", "choice_b": "y", "answer_gt": "x"}
    lines = [
        json.dumps({**row, "response": "A"}).encode(),
        json.dumps({**row, "response": "B"}).replace('"B"', HUGE).encode(),
        json.dumps({**row, "response": "é"}, ensure_ascii=False).encode().replace("é".encode(), b"\xff"),
        DEEP.encode(),
    ]
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    table = score_official_files(foundation=path, reps=0).strict.foundation
    assert table.invalid == 3 and table.average.n == 1
    assert [e.split(": ", 1)[0] for e in table.errors] == [f"{path}:2", f"{path}:3", f"{path}:4"]
    assert "field 'response'" in table.errors[0] and "field 'response'" in table.errors[1]
    (tmp_path / "list.json").write_bytes(b"[" + DEEP.encode() + b"]")
    _refused(runner.invoke(app, ["score-official", "--chat", str(tmp_path / "list.json")]), "list.json", "deeply")


# --- item 6: records --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [True, False, "1", "0", 1.0, b"1"])
def test_int_fields_refuse_booleans_strings_and_floats(bad):
    with pytest.raises(ValidationError) as err:
        FoundationItem.model_validate(_line(answer=bad))
    assert err.value.errors()[0]["loc"] == ("answer",) and "expected an integer" in str(err.value)
    with pytest.raises(ValidationError, match="input_tokens"):
        Response.model_validate({"uid": "u", "model": "m", "input_tokens": bad})
    with pytest.raises(ValidationError, match="choice"):
        Verdict.model_validate({"uid": "u", "model": "m", "judge": "rule", "choice": bad})
    with pytest.raises(ValidationError, match="schema_version"):
        FoundationItem.model_validate(_line(schema_version=bad))


def test_int_fields_keep_ints_and_numpy_ints():
    assert FoundationItem.model_validate(_line(answer=1)).answer == 1
    item = _item(answer=np.int64(1))
    assert item.answer == 1 and type(item.answer) is int
    assert Response(uid="u", model="m", input_tokens=np.int32(7), output_tokens=None).input_tokens == 7
    assert Verdict(uid="u", model="m", judge="rule", choice=None).choice is None


def test_uids_are_nfc_normalised():
    decomposed = "cafe\u0301-1"  # e + combining acute
    assert _item(decomposed).uid == "caf\u00e9-1"
    assert Response(uid=decomposed, model="m").uid == "caf\u00e9-1"
    assert Verdict(uid=decomposed, model="m", judge="rule").uid == "caf\u00e9-1"
    assert _item("speech-1@snr-05").uid == "speech-1@snr-05" and _item("m-1@r0").uid == "m-1@r0"


@pytest.mark.parametrize(
    ("uid", "kind"),
    [
        ("a\x07b", "control character"),
        ("a\tb", "control character"),
        ("a\nb", "control character"),
        ("a\u200bb", "zero-width"),  # zero-width space
        ("a\u200db", "zero-width"),  # zero-width joiner
        ("\ufeffa", "zero-width"),  # byte order mark
        ("a\u202eb", "zero-width"),  # right-to-left override
        ("a\u2028b", "line separator"),
        ("a\x85b", "control character"),
    ],
)
def test_uids_with_control_or_zero_width_characters_are_refused(uid, kind):
    for make in (
        lambda: _item(uid),
        lambda: Response(uid=uid, model="m"),
        lambda: Verdict(uid=uid, model="m", judge="rule"),
    ):
        with pytest.raises(ValidationError) as err:
            make()
        assert err.value.errors()[0]["loc"] == ("uid",)
        assert kind in str(err.value) and f"U+{ord(next(c for c in uid if not c.isalnum())):04X}" in str(err.value)


def test_audio_paths_with_control_characters_are_refused():
    with pytest.raises(ValidationError, match="control"):
        _item(audio="a\x00.wav")
    with pytest.raises(ValidationError, match="control"):
        _item(audio="clip\n.wav")


# --- item 6: where audio may be read from -------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder outside the manifest's, holding a wav that a hostile dataset.json wants read."""
    return _wav(tmp_path / "private" / "a.wav", seed=9).parent


@pytest.mark.parametrize("root", ["../private", "{outside}", "sub/../../private", "link"])
def test_a_dataset_card_may_not_send_audio_reads_out_of_its_folder(tmp_path, outside, root):
    folder = tmp_path / "shared"
    folder.mkdir()
    write_manifest(folder / "foundation.jsonl", [_item("u1")])
    (folder / "link").symlink_to(outside)
    write_dataset_card(folder, DatasetCard(data_root=root.format(outside=outside)))
    with pytest.raises(ManifestError, match="--data-root") as err:
        data_root(folder / "foundation.jsonl")
    assert err.value.field == "data_root" and err.value.file == str(folder / "dataset.json")
    manifest = str(folder / "foundation.jsonl")
    _refused(runner.invoke(app, ["validate", manifest]), "dataset.json", "data_root", "--data-root")
    out = tmp_path / "r.jsonl"
    infer = ["infer", "--model", "baseline:oracle", "--manifest", manifest, "--out", str(out)]
    _refused(runner.invoke(app, infer), "dataset.json", "data_root")
    assert not out.exists()
    # The user who trusts the folder says so: --data-root
    ok = runner.invoke(app, ["validate", manifest, "--data-root", str(outside)])
    assert ok.exit_code == 0 and "ok=1" in ok.output, ok.output
    answered = runner.invoke(app, [*infer, "--data-root", str(outside)])
    assert answered.exit_code == 0, answered.output
    assert read_records(out, Response)[0].text == "A"
    _refused(runner.invoke(app, ["validate", manifest, "--data-root", str(tmp_path / "nope")]), "no such folder")


def test_audio_roots_the_kit_writes_still_resolve(tmp_path):
    # import-official: the card points at the release root (it holds Foundation/Foundation_meta.json)
    root = _release(tmp_path / "rel", json.dumps([_row(1)]).encode())
    result = runner.invoke(app, ["import-official", str(root), "--out", str(tmp_path / "imported")])
    assert result.exit_code == 0, result.output
    assert data_root(tmp_path / "imported" / "foundation.jsonl") == root.resolve()
    # rotate: a source folder without a card becomes a data root of its own, so the rotated card may point there
    source = tmp_path / "mine"
    _wav(source / "a.wav")
    write_manifest(source / "plain.jsonl", [_item("u1", choices=["x", "y", "z"])])
    rotated = tmp_path / "elsewhere" / "rot" / "foundation.jsonl"
    assert runner.invoke(app, ["rotate", str(source / "plain.jsonl"), "--out", str(rotated)]).exit_code == 0
    assert json.loads((source / "dataset.json").read_text())["data_root"] == "."
    assert data_root(rotated) == source.resolve()
    out = tmp_path / "answers.jsonl"
    answered = runner.invoke(
        app, ["infer", "--model", "baseline:oracle", "--manifest", str(rotated), "--out", str(out)]
    )
    assert answered.exit_code == 0, answered.output
    assert [r.error for r in read_records(out, Response)] == [None, None, None]
    # ... and rotating the imported manifest points at the release root
    again = tmp_path / "rot2" / "foundation.jsonl"
    imported = str(tmp_path / "imported" / "foundation.jsonl")
    assert runner.invoke(app, ["rotate", imported, "--out", str(again)]).exit_code == 0
    assert data_root(again) == root.resolve() and not (root / "dataset.json").exists()


# --- item 6: audio ------------------------------------------------------------------------------------------------


def test_truncated_and_nan_wavs_are_corrupt(tmp_path):
    from airbench_nb.audio import AudioError, load_audio, probe_audio

    full = _wav(tmp_path / "full.wav", 1.0)
    data = full.read_bytes()
    (tmp_path / "trunc.wav").write_bytes(data[: len(data) // 2])  # header still promises 16000 frames
    x = np.random.default_rng(0).uniform(-0.5, 0.5, SR).astype(np.float32)
    x[12345] = np.nan
    sf.write(str(tmp_path / "nan.wav"), x, SR, subtype="FLOAT")
    x[12345] = np.inf
    sf.write(str(tmp_path / "inf.wav"), x, SR, subtype="DOUBLE")
    _wav(tmp_path / "float_ok.wav", subtype="FLOAT")
    sf.write(str(tmp_path / "full.flac"), x[:12000], SR)
    flac = (tmp_path / "full.flac").read_bytes()
    (tmp_path / "trunc.flac").write_bytes(flac[: len(flac) // 2])
    names = ["full.wav", "trunc.wav", "nan.wav", "inf.wav", "float_ok.wav", "trunc.flac"]
    items = [_item(f"u{i}", audio=name) for i, name in enumerate(names)]
    checked = {i.audio: i for i in check_audio(items, tmp_path)}
    assert {k: v.audio_status for k, v in checked.items()} == {
        "full.wav": AudioStatus.ok,
        "trunc.wav": AudioStatus.corrupt,
        "nan.wav": AudioStatus.corrupt,
        "inf.wav": AudioStatus.corrupt,
        "float_ok.wav": AudioStatus.ok,
        "trunc.flac": AudioStatus.corrupt,
    }
    assert "promises 16000 frames" in probe_audio(tmp_path / "trunc.wav").detail
    assert "first at frame 12345" in probe_audio(tmp_path / "nan.wav").detail
    assert any("corrupt" in n for n in checked["trunc.wav"].notes)
    with pytest.raises(AudioError, match="truncated"):
        load_audio(tmp_path / "trunc.wav")


def test_an_unreadable_or_unnameable_file_never_crashes_the_check(tmp_path):
    from airbench_nb.audio import probe_audio

    assert probe_audio(tmp_path / ("a" * 5000 + ".wav")).status == AudioStatus.missing
    assert probe_audio(tmp_path / "a\x00.wav").status == AudioStatus.missing
    if os.geteuid() != 0:  # root reads anything
        locked = _wav(tmp_path / "locked.wav")
        locked.chmod(0)
        assert probe_audio(locked).status == AudioStatus.corrupt


# --- item 6: the run's git commit ---------------------------------------------------------------------------------


def test_git_commit_is_read_without_taking_the_index_lock(tmp_path):
    from airbench_nb.pipeline import git_commit

    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        if args[0] == "add":
            (repo / "f.txt").write_text("hi")
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)
    index = repo / ".git" / "index"
    before = index.read_bytes()
    stat = index.stat()
    os.utime(repo / "f.txt", (stat.st_mtime + 5, stat.st_mtime + 5))  # stale stat info: `git status` would refresh
    head = git_commit(repo)
    assert head is not None and len(head) == 40  # same content: not dirty
    assert index.read_bytes() == before and index.stat().st_mtime_ns == stat.st_mtime_ns
    # another process holding the index lock does not stop it either
    (repo / ".git" / "index.lock").write_text("")
    assert git_commit(repo) == head
