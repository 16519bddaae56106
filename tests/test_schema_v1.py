"""Files written by schema version 1 still read, validate and score identically (see tests/fixtures/schema_v1)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from airbench_nb.manifests import read_manifest, read_records
from airbench_nb.records import Response, Verdict
from airbench_nb.run_folder import RunFolder
from airbench_nb.scoring.tables import score_run_folder

V1 = Path(__file__).resolve().parent / "fixtures" / "schema_v1"


def test_every_v1_line_reads_and_keeps_its_meaning():
    foundation = read_manifest(V1 / "manifests" / "foundation.jsonl")
    chat = read_manifest(V1 / "manifests" / "chat.jsonl")
    assert foundation and chat
    for path, items in ((V1 / "manifests" / "foundation.jsonl", foundation), (V1 / "manifests" / "chat.jsonl", chat)):
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert {line["schema_version"] for line in lines} == {1}
        for line, item in zip(lines, items, strict=True):
            assert item.uid == line["uid"] and item.audio == line["audio"] and item.question == line["question"]
            assert item.clips == [line["audio"]]  # one clip, as every v1 item
            if item.kind == "chat":
                assert item.reference == line["reference"] and item.conversation == [(item.question, item.reference)]
    for path in sorted((V1 / "responses").rglob("*.jsonl")):
        assert read_records(path, Response)
    for path in sorted((V1 / "verdicts").rglob("*.jsonl")):
        verdicts = read_records(path, Verdict)
        assert verdicts and all(v.turn is None for v in verdicts)


def test_v1_files_validate_with_the_cli():
    from typer.testing import CliRunner

    from airbench_nb.cli import app

    for name in ("foundation.jsonl", "chat.jsonl"):
        result = CliRunner().invoke(app, ["validate", str(V1 / "manifests" / name), "--no-audio"])
        assert result.exit_code == 0, result.output


def test_v1_run_scores_identically():
    summary, _ = score_run_folder(RunFolder(V1, data=V1 / "manifests"), reps=200)
    expected = pd.read_json(V1 / "expected_scores.json", orient="records")
    got = summary[expected.columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, atol=1e-9)


def test_v2_fields_are_checked():
    import pytest
    from pydantic import ValidationError

    from airbench_nb.records import ChatItem, FoundationItem, Response

    base = dict(uid="m1", dataset="synthetic", question="Which clip is higher?", choices=["first", "second"], answer=0)
    item = FoundationItem(task="kit_pitch_compare", audios=["a/1.wav", "a/2.wav"], **base)
    assert item.audio == "a/1.wav" and item.clips == ["a/1.wav", "a/2.wav"] and item.category == "multi-clip"
    assert item.multi_clip and item.clips_sha256 == [None, None]
    for bad, match in [
        ({"audio": "a/3.wav", "audios": ["a/1.wav", "a/2.wav"]}, "must be the first"),
        ({"audios": ["a/1.wav"]}, "2 or more"),
        ({"audios": ["a/1.wav", "../x.wav"]}, r"\.\."),
        ({"audios": ["a/1.wav", "a/2.wav"], "audios_sha256": ["x"]}, "1 entries for 2 clips"),
        ({"audio": "a/1.wav", "audios_sha256": ["x", "y"]}, "without audios"),
    ]:
        with pytest.raises(ValidationError, match=match):
            FoundationItem(task="kit_pitch_compare", **base, **bad)
    turns = [{"question": "What plays?", "reference": "A piano."}, {"question": "How fast?", "reference": "Slowly."}]
    chat = ChatItem(uid="t1", dataset="synthetic", audio="a/m.wav", task="kit_followup_QA", meta_info="x", turns=turns)
    assert chat.question == "What plays?" and chat.conversation[1] == ("How fast?", "Slowly.") and chat.multi_turn
    assert chat.category == "multi-turn"
    with pytest.raises(ValidationError, match="first of turns"):
        ChatItem(**{**chat.model_dump(), "question": "Other?"})
    one = Response(uid="u", model="m", text="A")
    assert one.content_hash() == Response(uid="u", model="m", text="A", generation={"temperature": 0}).content_hash()
    assert one.content_hash() != Response(uid="u", model="m", text="A", turns=["A", "B"]).content_hash()


def test_turn_objects_and_official_export_of_kit_items(tmp_path):
    import json as _json

    from airbench_nb.official import write_official_results
    from airbench_nb.records import ChatItem, ChatTurn, FoundationItem

    turns = [ChatTurn(question="What plays?", reference="A piano."), ChatTurn(question="How?", reference="Softly.")]
    chat = ChatItem(uid="t1", dataset="synthetic", audio="m.wav", task="kit_followup_QA", meta_info="x", turns=turns)
    assert chat.question == "What plays?" and chat.reference == "A piano."
    pair = FoundationItem(
        uid="p1",
        dataset="synthetic",
        audios=["a.wav", "b.wav"],
        task="kit_louder_clip",
        question="Which clip is louder?",
        choices=["the first clip", "the second clip"],
        answer=0,
    )
    one = FoundationItem(
        uid="o1",
        dataset="synthetic",
        audio="c.wav",
        task="Speaker_Gender_Recognition",
        question="Who?",
        choices=["male", "female"],
        answer=0,
    )
    out = write_official_results([one, pair, chat], {"o1": "A", "p1": "A", "t1": "piano"}, tmp_path / "r.jsonl")
    rows = [_json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task_name"] for r in rows] == ["Speaker_Gender_Recognition"]  # the kit's own tasks are left out
