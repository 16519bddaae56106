"""Record files read the fast way (pydantic from the JSON text) give what the checking reader gives, errors included.

The suite runs with ``AIRBENCH_NB_VERIFY_FAST_READ=1`` (``conftest.py``): every record file any test reads is read
both ways and compared. Here: lines chosen to sit on the edge between the two readers, and the shared field sets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import airbench_nb.manifests as manifests
from airbench_nb.manifests import ManifestError, read_manifest, read_records
from airbench_nb.records import FoundationItem, Response, TranslationItem, Verdict, share_fields_set

HUGE = "9" * 5000


def _response(**overrides) -> dict:
    line = Response(uid="u1", model="m", text="Hello there.", created="2026-01-02T03:04:05Z").model_dump(mode="json")
    line.update(overrides)
    return line


EDGE_LINES: list[str] = [
    json.dumps(_response()),
    json.dumps(_response(uid="u2")) + "\r",  # a CRLF file
    '{"uid": "u3", "model": "m", "text": "first", "text": "last"}',  # duplicate key: the last wins in both
    '{"uid": "u4", "model": "m", "latency_s": NaN}',  # NaN: json.loads reads it, pydantic's parser does not
    '{"uid": "u5", "model": "m", "latency_s": 1e400}',  # inf, read the same by both
    '{"uid": "u6", "model": "m", "text": "\\ud800"}',  # an escaped lone surrogate: the checking reader's error
    '{"uid": "u7", "model": "m", "input_tokens": ' + HUGE + "}",  # too long an integer
    '{"uid": "u8", "model": "m", "generation": ' + "[" * 80 + "]" * 80 + "}",  # nested too deep
    '{"uid": "u9", "model": "m", "input_tokens": 1.0}',  # not a strict integer
    '{"uid": "u10", "model": "m", "surplus": 1}',  # extra field
    '{"uid": "u11"}',  # missing model
    "[1, 2]",
    '"text"',
    "{not json",
    '\ufeff{"uid": "u12", "model": "m"}',  # a byte order mark
    '{"uid": "u13", "model": "m", "schema_version": 99}',
    '{"uid": "u14", "model": "m", "text": "caf\\u00e9 \\ud83c\\udfb5"}',  # an escaped surrogate pair (one character)
    '{"uid": "u15", "model": "m"}',  # most fields left to their defaults
]


def _read(path: Path, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list[str]]:
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(manifests, "_parse_line_fast", lambda *args: None)
        patch.setattr(manifests, "VERIFY_FAST_READ", False)
        records, errors = manifests._parse_lines(
            path, Response.model_validate, key=None, parse_json=Response.model_validate_json
        )
    return records, [str(e) for e in errors]


def test_edge_lines_read_the_same_both_ways(tmp_path, monkeypatch):
    path = tmp_path / "responses.jsonl"
    path.write_bytes("\n".join(EDGE_LINES).encode("utf-8", errors="surrogatepass") + b"\n\xff\xfe\n")
    fast, fast_errors = _read(path, True, monkeypatch)
    slow, slow_errors = _read(path, False, monkeypatch)
    assert [r.uid for r in fast] == ["u1", "u2", "u3", "u4", "u5", "u14", "u15"]
    # repr, since NaN is not equal to itself; ``created`` defaults to the time of reading where a line has none
    assert repr([r.model_dump(exclude={"created"}) for r in fast]) == repr(
        [r.model_dump(exclude={"created"}) for r in slow]
    )
    assert fast[0].created == slow[0].created == fast[0].created.replace(year=2026, month=1, day=2)
    assert [r.model_fields_set for r in fast] == [r.model_fields_set for r in slow]
    assert fast[2].text == "last" and fast[4].latency_s == float("inf") and fast[5].text == "café \U0001f3b5"
    assert fast_errors == slow_errors
    assert len(fast_errors) == 12 and all(str(path) in e for e in fast_errors)
    assert fast[3].latency_s != fast[3].latency_s  # NaN, as json.loads reads it (the checking reader's answer)


def test_lines_of_a_clean_file_read_the_same_both_ways(tmp_path, monkeypatch):
    """A file of UTF-8 without an escaped surrogate is checked once (:func:`_file_cannot_hold_a_problem`): its
    lines too deep or too long still go to the checking reader, and every line reads as the checking reader reads it."""
    path = tmp_path / "responses.jsonl"
    lines = [line for line in EDGE_LINES if '"u6"' not in line and '"u14"' not in line]  # no escaped surrogate
    path.write_bytes("\n".join(lines).encode("utf-8") + b"\n")
    assert manifests._file_cannot_hold_a_problem(path.read_bytes())
    fast, fast_errors = _read(path, True, monkeypatch)
    slow, slow_errors = _read(path, False, monkeypatch)
    assert [r.uid for r in fast] == ["u1", "u2", "u3", "u4", "u5", "u15"]
    assert repr([r.model_dump(exclude={"created"}) for r in fast]) == repr(
        [r.model_dump(exclude={"created"}) for r in slow]
    )
    assert [r.model_fields_set for r in fast] == [r.model_fields_set for r in slow]
    assert fast_errors == slow_errors and len(fast_errors) == 10
    assert any("u7" in e for e in fast_errors) and any("u8" in e for e in fast_errors)  # too long, too deep
    assert not manifests._file_cannot_hold_a_problem(b'{"text": "\\ud800"}\n')
    assert not manifests._file_cannot_hold_a_problem(b"\xff\n")


def test_the_fast_reader_is_tried_and_the_checking_one_verifies_it(tmp_path, monkeypatch):
    path = tmp_path / "responses.jsonl"
    path.write_text(json.dumps(_response()) + "\n", encoding="utf-8")
    calls = []
    original = manifests._parse_line_fast
    monkeypatch.setattr(manifests, "_parse_line_fast", lambda line, *rest: calls.append(line) or original(line, *rest))
    assert read_records(path, Response)[0].text == "Hello there."
    assert len(calls) == 1
    # a fast reader that read something else is caught when verifying (the suite runs with it on)
    monkeypatch.setattr(manifests, "VERIFY_FAST_READ", True)
    monkeypatch.setattr(
        manifests, "_parse_line_fast", lambda *args: Response(uid="u1", model="m", text="wrong", created=0)
    )
    with pytest.raises(AssertionError, match="the fast reader read"):
        read_records(path, Response)


def test_a_bad_item_line_names_line_uid_and_field_on_the_fast_path_too(tmp_path):
    good = FoundationItem(
        uid="a", audio="a.wav", question="Q?", choices=["x", "y"], answer=0, task="Sound_AQA", dataset="d"
    )
    bad = good.model_dump(mode="json") | {"uid": "b", "answer": "1"}
    path = tmp_path / "foundation.jsonl"
    path.write_text(good.model_dump_json() + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        read_manifest(path)
    assert caught.value.line == 2 and caught.value.uid == "b" and caught.value.field == "answer"
    items, errors = read_manifest(path, strict=False)
    assert [i.uid for i in items] == ["a"] and len(errors) == 1


def test_records_of_one_class_share_one_full_field_set(tmp_path):
    lines = [json.dumps(_response(uid=f"u{i}")) for i in range(3)] + ['{"uid": "short", "model": "m"}']
    path = tmp_path / "responses.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    records = read_records(path, Response)
    given = set(json.loads(lines[0]))  # the fields a written response line gives
    assert records[0].model_fields_set is records[1].model_fields_set is records[2].model_fields_set
    assert records[0].model_fields_set == given and "option_probs" not in given
    assert records[3].model_fields_set == {"uid", "model"}  # other fields given: another set
    # assigning a field that was not given copies the set first: the other records' sets stay as they were
    records[0].option_probs = None
    copy = records[1].model_copy(update={"sample": 1})
    records[3].text = "set now"
    assert records[0].model_fields_set == given | {"option_probs"}
    assert records[1].model_fields_set == given and records[2].model_fields_set == given
    assert copy.model_fields_set == given | {"sample"}
    assert records[3].model_fields_set == {"uid", "model", "text"}
    assert records[2].model_dump(exclude_unset=True).keys() == given
    assert read_records(path, Response)[3].model_fields_set == {"uid", "model"}
    records[1].text = "changed"  # a field given already: no copy needed, none made
    assert records[1].model_fields_set is records[2].model_fields_set


def test_nested_records_share_their_sets_too():
    verdict = Verdict.model_validate_json(
        json.dumps(
            Verdict(
                uid="u", model="m", judge="j", fenced={"raw": "r"}, screen={"version": "1", "flags": []}
            ).model_dump(mode="json")
        )
    )
    other = Verdict.model_validate_json(verdict.model_dump_json())
    share_fields_set(verdict)
    share_fields_set(other)
    assert verdict.model_fields_set is other.model_fields_set
    assert verdict.fenced.model_fields_set is other.fenced.model_fields_set
    item = TranslationItem.model_validate_json(
        TranslationItem(
            uid="t",
            audio="a.wav",
            source_language="de",
            target_language="en",
            references=["Hi."],
            dataset="d",
            question="Translate.",
            task="speech_translation",
        ).model_dump_json()
    )
    share_fields_set(item)
    again = TranslationItem.model_validate_json(item.model_dump_json())
    share_fields_set(again)
    assert item.model_fields_set is again.model_fields_set


def test_a_manifest_read_as_parts_keeps_only_the_parts(tmp_path):
    from airbench_nb.manifests import read_manifest_as

    items = [
        FoundationItem(
            uid=u, audio=f"{u}.wav", question="Q?", choices=["x", "y"], answer=0, task="Sound_AQA", dataset="d"
        )
        for u in ("a", "b", "c")
    ]
    path = tmp_path / "foundation.jsonl"
    path.write_text("".join(i.model_dump_json() + "\n" for i in items), encoding="utf-8")
    assert read_manifest_as(path, lambda i: i.uid.upper() if i.uid != "b" else None) == ["A", "C"]
    bad = items[0].model_dump(mode="json") | {"uid": "d", "answer": "1"}
    path.write_text(path.read_text() + json.dumps(bad) + "\n" + items[0].model_dump_json() + "\n", encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        read_manifest_as(path, lambda i: i.uid)
    assert caught.value.line == 4 and caught.value.uid == "d" and caught.value.field == "answer"


def test_records_read_share_one_empty_list_and_dict_that_refuse_to_change(tmp_path):
    from airbench_nb.records.base import EMPTY_DICT, EMPTY_LIST

    path = tmp_path / "responses.jsonl"
    path.write_text(
        "\n".join(json.dumps(_response(uid=f"u{i}")) for i in range(2)) + '\n{"uid": "r", "model": "m", "ranking": '
        '[{"label": "dog", "score": 0.9}]}\n',
        encoding="utf-8",
    )
    first, second, ranked = read_records(path, Response)
    assert first.turns is second.turns is EMPTY_LIST and first.generation is EMPTY_DICT
    assert first.turns == [] and first.generation == {} and ranked.ranking[0].label == "dog"
    assert first.model_dump()["turns"] == [] and json.loads(first.model_dump_json())["generation"] == {}
    with pytest.raises(TypeError, match="assign a new list"):
        first.turns.append("x")
    with pytest.raises(TypeError, match="assign a new dict"):
        first.generation["temperature"] = 0.0
    assert second.turns == []  # nothing changed
    copy = first.model_copy(deep=True)
    copy.turns.append("x")  # a copy's lists are its own
    assert type(copy.turns) is list and first.turns == []
    first.turns = ["now"]  # assigning is how a record read from a file changes
    assert first.turns == ["now"] and second.turns == []
