import json
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.manifests import data_root, read_manifest, read_records, resolve_audio
from airbench_nb.official import OfficialImportError, Rejected, import_official, match_answer
from airbench_nb.records import AudioStatus

runner = CliRunner()


def test_counts_add_up_to_meta_rows(imported):
    root, out, report, expected = imported
    f_rows = len(json.loads((root / "Foundation/Foundation_meta.json").read_text()))
    c_rows = len(json.loads((root / "Chat/Chat_meta.json").read_text()))
    assert (
        (report.foundation.rows, report.chat.rows) == (f_rows, c_rows) == (expected.foundation_rows, expected.chat_rows)
    )
    for part in report.parts:
        assert len(part.items) + len(part.rejected) == part.rows
    assert len(report.foundation.items) == expected.foundation_imported
    assert len(report.chat.items) == expected.chat_imported
    counts = report.counts()
    statuses = {
        s: counts["Foundation"]["audio_status"][s] + counts["Chat"]["audio_status"][s] for s in expected.audio_status
    }
    assert statuses == expected.audio_status
    table = report.foundation.task_table()
    assert sum(r["rows"] for r in table) == f_rows
    assert sum(r["imported"] for r in table) == sum(r[s.value] for r in table for s in AudioStatus)


def test_manifests_written_and_valid(imported):
    root, out, report, _ = imported
    foundation = read_manifest(out / "foundation.jsonl")
    chat = read_manifest(out / "chat.jsonl")
    assert foundation == report.foundation.items and chat == report.chat.items
    assert data_root(out / "foundation.jsonl") == root
    rejected = read_records(out / "rejected.jsonl", Rejected)
    assert len(rejected) == len(report.foundation.rejected) + len(report.chat.rejected)
    card = json.loads((out / "dataset.json").read_text())
    assert card["source"] == "official-import" and card["counts"]["Foundation"]["rows"] == 12


def test_items_keep_official_ids_and_answers(imported):
    root, _, report, _ = imported
    items = {i.source_id: i for i in report.foundation.items}
    pitch = items["101"]
    assert pitch.uid == "foundation-101" and pitch.task == "Music_Midi_Pitch_Analysis" and pitch.dataset == "nsynth"
    assert pitch.choices == ["67", "68", "69", "70"] and pitch.answer == 2 and pitch.category == "music"
    assert pitch.audio == "Foundation/Music_Midi_Pitch_Analysis_nsynth/pitch_69.wav"
    assert resolve_audio(root, pitch.audio).is_file()


def test_binary_items_have_two_choices(imported):
    _, _, report, _ = imported
    items = {i.source_id: i for i in report.foundation.items}
    assert items["102"].choices == ["male", "female"] and items["102"].answer == 0
    assert items["110"].choices == ["yes", "no"]  # choice_c "" and choice_d null


def test_audio_grounding_flac_rule_and_formats(imported):
    _, _, report, _ = imported
    items = {i.source_id: i for i in report.foundation.items}
    grounding = items["104"]
    assert grounding.audio.endswith("beep_at_1s.flac") and grounding.audio_status == AudioStatus.ok
    assert any("flac" in n for n in grounding.notes)
    assert items["103"].audio.endswith(".mp3") and items["103"].audio_status == AudioStatus.ok
    assert (items["105"].audio_status, items["106"].audio_status, items["107"].audio_status) == (
        AudioStatus.empty,
        AudioStatus.corrupt,
        AudioStatus.missing,
    )
    assert items["105"].audio_sha256 is None and items["106"].audio_sha256 is not None


def test_rejections_name_field_and_reason(imported):
    _, _, report, _ = imported
    rejected = {r.uniq_id: r for r in [*report.foundation.rejected, *report.chat.rejected]}
    assert rejected["108"].field == "answer_gt" and "joyful" in rejected["108"].reason
    assert rejected["109"].field == "question" and "missing field" in rejected["109"].reason
    assert rejected["111"].field == "task_name" and "Speaker_Emotion_Recontion" in rejected["111"].reason
    assert rejected["203"].field == "meta_info" and rejected["203"].benchmark == "Chat"
    assert all(r.row is not None and r.index >= 0 for r in rejected.values())


def test_loose_answer_match_is_noted(imported):
    _, _, report, _ = imported
    organ = next(i for i in report.foundation.items if i.source_id == "112")
    assert organ.choices[organ.answer] == "organ" and any("normalising" in n for n in organ.notes)
    dialogue = next(i for i in report.chat.items if i.source_id == "202")
    assert dialogue.category == "mixed" and json.loads(dialogue.meta_info)[0]["speaker"] == "voice"


def test_match_answer_ambiguity():
    assert match_answer("b", ["a", "b"]) == (1, None)
    with pytest.raises(Exception, match="ambiguous"):
        match_answer("x", ["X.", "x "])


def _write_meta(root, rows, chat=None):
    (root / "Foundation").mkdir(parents=True, exist_ok=True)
    (root / "Foundation/Foundation_meta.json").write_text(json.dumps(rows))
    if chat is not None:
        (root / "Chat").mkdir(parents=True, exist_ok=True)
        (root / "Chat/Chat_meta.json").write_text(json.dumps(chat))


def test_malformed_rows_each_rejected(tmp_path):
    base = {
        "path": "a.wav",
        "question": "q",
        "choice_a": "x",
        "choice_b": "y",
        "answer_gt": "x",
        "task_name": "Music_AQA",
        "dataset_name": "d",
        "uniq_id": 1,
    }
    rows = [
        "not an object",
        {**base, "uniq_id": None},
        {**base, "uniq_id": 2, "choice_b": ["list"]},
        {**base, "uniq_id": 3, "choice_d": "z"},  # gap: d without c
        {**base, "uniq_id": 4, "path": "../../etc/passwd"},
        {**base, "uniq_id": 5, "choice_b": "X"},  # duplicate choices
        {**base, "uniq_id": 6},
        {**base, "uniq_id": 6},  # duplicate uniq_id
        {**base, "uniq_id": 7, "choice_a": 3, "choice_b": 4, "answer_gt": 4},  # numbers read as text
    ]
    _write_meta(tmp_path, rows)
    report = import_official(tmp_path, tmp_path / "out")
    fields = [r.field for r in report.foundation.rejected]
    assert fields == [None, "uniq_id", "choice_b", "choice_c", "path", "choices", "uniq_id"]
    assert [i.source_id for i in report.foundation.items] == ["6", "7"]
    assert report.foundation.items[1].choices == ["3", "4"] and report.foundation.items[1].answer == 1
    assert all(i.audio_status == AudioStatus.missing for i in report.foundation.items)
    assert not report.chat.present


def test_file_level_errors(tmp_path):
    with pytest.raises(OfficialImportError, match="neither"):
        import_official(tmp_path, tmp_path / "out")
    (tmp_path / "Foundation").mkdir()
    (tmp_path / "Foundation/Foundation_meta.json").write_text("{not json")
    with pytest.raises(OfficialImportError, match="not valid JSON"):
        import_official(tmp_path, tmp_path / "out")
    (tmp_path / "Foundation/Foundation_meta.json").write_text('{"a": 1}')
    with pytest.raises(OfficialImportError, match="expected a JSON list"):
        import_official(tmp_path, tmp_path / "out")
    # one unreadable file does not stop the other
    (tmp_path / "Chat").mkdir()
    (tmp_path / "Chat/Chat_meta.json").write_text("[]")
    report = import_official(tmp_path, tmp_path / "out")
    assert report.foundation.file_error and report.chat.rows == 0
    assert (tmp_path / "out/chat.jsonl").read_text() == "" and not (tmp_path / "out/foundation.jsonl").exists()


def test_cli_import_prints_table_and_exits_zero(official_release, tmp_path):
    root, expected = official_release
    result = runner.invoke(app, ["import-official", str(root), "--out", str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    assert "Foundation: 12 rows, 9 imported, 3 rejected" in result.output
    assert "Speaker_Gender_Recognition" in result.output and "corrupt" in result.output
    assert "answer not among choices" in result.output
    as_json = runner.invoke(app, ["import-official", str(root), "--out", str(tmp_path / "m2"), "--json"])
    counts = json.loads(as_json.output)
    assert counts["Foundation"]["imported"] + counts["Foundation"]["rejected"] == expected.foundation_rows
    assert counts["Chat"]["rejected"] == 1


def test_cli_import_without_meta_exits_nonzero(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "airbench_nb.cli", "import-official", str(tmp_path), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "neither Foundation/Foundation_meta.json nor Chat/Chat_meta.json" in result.stderr


def test_cli_validate(imported, tmp_path):
    root, out, _, _ = imported
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    ok = runner.invoke(app, ["validate", str(copy / "foundation.jsonl")])
    assert ok.exit_code == 0, ok.output
    assert "9 valid items, 0 invalid lines, 0 changed" in ok.output and "corrupt=1" in ok.output
    lines = (copy / "foundation.jsonl").read_text(encoding="utf-8").rstrip("\n").split("\n")  # JSON Lines: "\n" only
    first = json.loads(lines[0])
    first["audio_sha256"] = "0" * 64
    (copy / "foundation.jsonl").write_text("\n".join([json.dumps(first), *lines[1:], "{oops"]) + "\n")
    bad = runner.invoke(app, ["validate", str(copy / "foundation.jsonl")])
    assert bad.exit_code == 1
    assert "changed" in bad.output and "foundation-101" in bad.output and "invalid JSON" in bad.output


def test_other_extension_is_used_and_noted(tmp_path):
    import numpy as np
    import soundfile as sf

    (tmp_path / "Foundation/Music_AQA_d").mkdir(parents=True)
    sf.write(tmp_path / "Foundation/Music_AQA_d/a.flac", np.full(1600, 0.1), 16000)
    row = {
        "path": "a.wav",
        "question": "q",
        "choice_a": "x",
        "choice_b": "y",
        "answer_gt": "x",
        "task_name": "Music_AQA",
        "dataset_name": "d",
        "uniq_id": 1,
    }
    _write_meta(tmp_path, [row])
    item = import_official(tmp_path, tmp_path / "out").foundation.items[0]
    assert item.audio.endswith("a.flac") and item.audio_status == AudioStatus.ok
    assert any("a.wav not found; using a.flac" in n for n in item.notes)  # the status check keeps this note
