"""Hostile imports of user data and records (issue 29): each probe refused in one line, or counted as a rejected row.

``import-sources`` never overwrites a folder it did not write, refuses an import that imported nothing, names the
file and line of a CSV or hierarchy it cannot read (a huge field, deep nesting, bytes that are not UTF-8), refuses
direction-control characters in a hierarchy's names, and checks each clip's size, duration and silence before it
copies it. Records refuse a ``schema_version`` newer than the kit's, empty references, languages that are no language
tag, and NaN or negative ``seconds`` in labels and ratings.
"""

from __future__ import annotations

import csv
import json
import struct
from pathlib import Path

import pytest
from pydantic import ValidationError

from airbench_nb.cli import app
from airbench_nb.manifests import (
    DatasetCard,
    ManifestError,
    read_dataset_card,
    read_manifest,
    read_records,
    write_dataset_card,
)
from airbench_nb.records import (
    SCHEMA_VERSION,
    ChatItem,
    JointItem,
    Label,
    OpenSourceItem,
    Rating,
    SoundSourceItem,
    SpeechGenerationItem,
    TranscriptionItem,
    TranslationItem,
)
from tests.test_hostile import _item, _refused, _wav, runner

HIERARCHY = {
    "categories": [{"name": "vehicle"}, {"name": "bell"}],
    "classes": [{"name": "car_horn", "coarse": "vehicle"}, {"name": "church_bell", "coarse": "bell"}],
}
"""A user's hierarchy: two categories, one fine class each."""


def _source(tmp_path: Path, rows: str = "a.wav,car_horn\nb.wav,church_bell\n") -> tuple[Path, Path]:
    """A CSV of clips (two noise clips, a.wav and b.wav) and a hierarchy file, in ``tmp_path``."""
    _wav(tmp_path / "a.wav", seed=1)
    _wav(tmp_path / "b.wav", seed=2)
    (tmp_path / "clips.csv").write_text("audio,label\n" + rows, encoding="utf-8")
    (tmp_path / "hierarchy.json").write_text(json.dumps(HIERARCHY), encoding="utf-8")
    return tmp_path / "clips.csv", tmp_path / "hierarchy.json"


def _import(source: Path, hierarchy: Path, out: Path):
    return runner.invoke(app, ["import-sources", str(source), "--hierarchy", str(hierarchy), "--out", str(out)])


# --- row: import-sources --out into an existing data folder ------------------------------------------------------


def test_import_sources_never_overwrites_a_folder_it_did_not_write(tmp_path: Path) -> None:
    source, hierarchy = _source(tmp_path)
    built = tmp_path / "built"
    built.mkdir()
    (built / "sound_source.jsonl").write_text("".join(f'{{"line": {k}}}\n' for k in range(50)), encoding="utf-8")
    write_dataset_card(built, DatasetCard(data_root=".", source="build:tiered", counts={"sound_source": 50}))
    before = {p.name: p.read_bytes() for p in built.iterdir()}
    line = _refused(_import(source, hierarchy, built), str(built / "sound_source.jsonl"), "build:tiered")
    assert "empty" in line
    assert {p.name: p.read_bytes() for p in built.iterdir()} == before  # nothing lost, nothing added
    stray = tmp_path / "stray"  # a folder holding anything else, without a card
    stray.mkdir()
    (stray / "notes.txt").write_text("mine")
    _refused(_import(source, hierarchy, stray), str(stray), "not empty")
    assert [p.name for p in stray.iterdir()] == ["notes.txt"]


def test_import_sources_writes_an_empty_folder_and_reimports_its_own_source(tmp_path: Path) -> None:
    source, hierarchy = _source(tmp_path)
    out = tmp_path / "out"
    out.mkdir()  # existing but empty: fine
    assert _import(source, hierarchy, out).exit_code == 0
    again = _import(source, hierarchy, out)  # the same source again: it rewrites its own import
    assert again.exit_code == 0, again.output
    assert len(read_manifest(out / "sound_source.jsonl")) == 2
    other_csv = tmp_path / "other.csv"
    other_csv.write_text("audio,label\na.wav,car_horn\n", encoding="utf-8")
    _refused(_import(other_csv, hierarchy, out), str(out / "sound_source.jsonl"), f"import-sources:{source}")
    assert len(read_manifest(out / "sound_source.jsonl")) == 2


# --- row: every row rejected ---------------------------------------------------------------------------------


def test_import_sources_with_every_row_rejected_exits_2_with_the_count_and_first_reasons(tmp_path: Path) -> None:
    source, hierarchy = _source(tmp_path, "a.wav,fire_truck\nmissing.wav,car_horn\nb.wav,zebra\n")
    out = tmp_path / "out"
    line = _refused(
        _import(source, hierarchy, out), "all 3 clips", "rejected", "clips.csv:2", "'fire_truck' is no class"
    )
    assert "clips.csv:3" in line and "missing" in line
    assert not out.exists() or not any(out.iterdir())  # nothing written


# --- row: tracebacks on a huge CSV field, deep hierarchy, non-UTF-8 files ----------------------------------------


def test_a_csv_field_over_the_csv_limit_is_refused_with_file_and_line(tmp_path: Path) -> None:
    source, hierarchy = _source(tmp_path)
    huge = "x" * (csv.field_size_limit() + 10)
    source.write_text(f"audio,label\na.wav,car_horn\n{huge}.wav,car_horn\n", encoding="utf-8")
    _refused(_import(source, hierarchy, tmp_path / "out"), f"{source}:3:", "characters")


def test_a_hierarchy_nested_100000_deep_is_refused_with_file_and_line(tmp_path: Path) -> None:
    source, hierarchy = _source(tmp_path)
    hierarchy.write_text('{\n"about": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    _refused(_import(source, hierarchy, tmp_path / "out"), f"{hierarchy}:2:", "nested deeper")


def test_non_utf8_csv_and_hierarchy_are_refused_with_file_and_line(tmp_path: Path) -> None:
    source, hierarchy = _source(tmp_path)
    source.write_bytes("audio,label\na.wav,car_horn\nb.wav,église\n".encode("latin-1"))
    _refused(_import(source, hierarchy, tmp_path / "out"), f"{source}:3:", "UTF-8")
    source.write_text("audio,label\na.wav,car_horn\n", encoding="utf-8")
    described = {**HIERARCHY, "categories": [{"name": "vehicle"}, {"name": "bell", "description": "cloche d'église"}]}
    text = json.dumps(described, indent=1, ensure_ascii=False)
    hierarchy.write_bytes(text.encode("latin-1"))
    line_no = next(k for k, x in enumerate(text.splitlines(), start=1) if "glise" in x)
    _refused(_import(source, hierarchy, tmp_path / "out"), f"{hierarchy}:{line_no}:", "UTF-8")


def test_a_csv_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    source, hierarchy = _source(tmp_path)
    source.write_bytes(b"\xef\xbb\xbf" + b"audio,label\na.wav,car_horn\n")  # as Excel saves "CSV UTF-8"
    assert _import(source, hierarchy, tmp_path / "out").exit_code == 0


# --- row: accepted silently ----------------------------------------------------------------------------------


def test_a_schema_version_newer_than_the_kit_is_refused_naming_file_line_and_field(tmp_path: Path) -> None:
    line = _item().model_dump(mode="json")
    path = tmp_path / "foundation.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps({**line, "uid": "u2", "schema_version": 99}) + "\n")
    with pytest.raises(ManifestError) as err:
        read_manifest(path)
    assert err.value.line == 2 and err.value.field == "schema_version"
    assert "99" in str(err.value) and f"{SCHEMA_VERSION}" in str(err.value) and str(path) in str(err.value)
    validated = runner.invoke(app, ["validate", str(path)])  # validate lists every problem it finds, one per line
    assert validated.exit_code == 2 and "Traceback" not in validated.output
    assert any(f"{path}:2" in x and "schema_version" in x and "99" in x for x in validated.stderr.splitlines())
    for bad in (0, -1):
        with pytest.raises(ValidationError, match="schema_version"):
            Rating.model_validate({"entry_id": "e", "listener": "L1", "score": 3, "schema_version": bad})
    assert _item(schema_version=1).schema_version == 1  # every older version still reads


@pytest.mark.parametrize("empty", ["", "   ", "\n\t"])
def test_an_empty_reference_is_refused(empty: str) -> None:
    base = dict(uid="t1", dataset="d", audio="a.wav", question="Transcribe.")
    with pytest.raises(ValidationError, match="reference"):
        TranscriptionItem(**base, task="sseu_transcription", reference=empty)
    with pytest.raises(ValidationError, match="reference"):
        ChatItem(**base, task="speech_QA", reference=empty, meta_info="a man speaks")
    with pytest.raises(ValidationError, match="reference"):
        ChatItem(
            **base,
            task="speech_QA",
            reference="fine",
            meta_info="m",
            turns=[{"question": "Transcribe.", "reference": "fine"}, {"question": "And?", "reference": empty}],
        )
    joint = dict(scene_classes=["park", "street"], scene_label="park", event_classes=["dog", "car"], event_labels=[])
    with pytest.raises(ValidationError, match="reference"):
        JointItem(**base, task="sseu_joint", reference=empty, **joint)
    assert TranscriptionItem(**base, task="sseu_transcription", reference="(laughs)").reference == "(laughs)"


@pytest.mark.parametrize("language", ["../../etc", "en\u202e", "\u202eأنا", "", "e", "english language", "en/../x"])
def test_a_language_that_is_no_language_tag_is_refused(language: str) -> None:
    base = dict(uid="t1", dataset="d", audio="a.wav", question="Transcribe.", reference="hello")
    with pytest.raises(ValidationError, match="language"):
        TranscriptionItem(**base, task="sseu_transcription", language=language)
    with pytest.raises(ValidationError, match="language"):
        SpeechGenerationItem(
            uid="s1", dataset="d", audio="a.wav", question="Say it.", task="tts", text="hi", language=language
        )
    with pytest.raises(ValidationError, match="language"):
        TranslationItem(
            uid="x1", dataset="d", audio="a.wav", question="Translate.", task="speech_translation",
            source_language=language, target_language="en", references=["hello"],
        )  # fmt: skip


@pytest.mark.parametrize("language", ["en", "en-us", "en-US", "en_GB", "de", "zh", "yue", "zh-Hans-CN", "xx"])
def test_the_language_tags_the_kit_uses_still_read(language: str) -> None:
    base = dict(uid="t1", dataset="d", audio="a.wav", question="Transcribe.", reference="hello")
    assert TranscriptionItem(**base, task="sseu_transcription", language=language).language == language


@pytest.mark.parametrize("mark", ["\u202e", "\u202a", "\u2066", "\u2069", "\u200f", "\u200e"])
def test_direction_controls_in_hierarchy_names_are_refused(tmp_path: Path, mark: str) -> None:
    source, hierarchy = _source(tmp_path)
    for where, patch in (
        ("classes[1]", {"classes": [HIERARCHY["classes"][0], {"name": f"church{mark}_bell", "coarse": "bell"}]}),
        ("categories[0]", {"categories": [{"name": f"veh{mark}icle"}, {"name": "bell"}]}),
        ("classes[0]", {"classes": [{**HIERARCHY["classes"][0], "label": f"horn{mark}"}, HIERARCHY["classes"][1]]}),
    ):
        hierarchy.write_text(json.dumps({**HIERARCHY, **patch}), encoding="utf-8")
        _refused(_import(source, hierarchy, tmp_path / "out"), str(hierarchy), where, f"U+{ord(mark):04X}")
    closed = dict(uid="s", dataset="d", audio="a.wav", question="Which?", answer=0, choices=["horn", "bell"])
    with pytest.raises(ValidationError, match=f"U\\+{ord(mark):04X}"):
        SoundSourceItem(**closed, classes=["car_horn", f"bell{mark}"], categories=["vehicle", "bell"])
    with pytest.raises(ValidationError, match=f"U\\+{ord(mark):04X}"):
        SoundSourceItem(**{**closed, "choices": ["horn", f"{mark}bell"]}, classes=["a", "b"], categories=["c", "d"])
    with pytest.raises(ValidationError, match=f"U\\+{ord(mark):04X}"):
        OpenSourceItem(
            uid="o", dataset="d", audio="a.wav", question="Enumerate.", classes=["a", "b"],
            categories=[f"c{mark}", "d"], label="a",
        )  # fmt: skip


@pytest.mark.parametrize("seconds", [float("nan"), float("inf"), -1.0])
def test_nan_or_negative_seconds_in_ratings_and_labels_are_refused(tmp_path: Path, seconds: float) -> None:
    with pytest.raises(ValidationError, match="seconds"):
        Rating(entry_id="e", listener="L1", score=3, seconds=seconds)
    with pytest.raises(ValidationError, match="seconds"):
        Label(pair_id="p", annotator="a", choice=0, seconds=seconds)
    good = Rating(entry_id="e", listener="L1", score=3, seconds=2.5).model_dump(mode="json")
    path = tmp_path / "ratings.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "seconds": seconds}) + "\n")  # NaN as JSON NaN
    with pytest.raises(ManifestError) as err:
        read_records(path, Rating)
    assert err.value.line == 2 and err.value.field == "seconds"
    assert Rating(entry_id="e", listener="L1", score=3, seconds=0).seconds == 0


def _sparse_wav(path: Path, data_bytes: int, sr: int = 16000) -> Path:
    """A 16-bit mono WAV whose header and size say ``data_bytes`` of samples, all zero, as a sparse file."""
    header = b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, sr, sr * 2, 2, 16)
    header += b"data" + struct.pack("<I", data_bytes)
    with path.open("wb") as handle:
        handle.write(header)
        handle.truncate(len(header) + data_bytes)  # holes: nothing allocated on disk
    return path


def test_import_checks_each_clips_size_duration_and_silence_before_copying(tmp_path: Path) -> None:
    source, hierarchy = _source(
        tmp_path, "a.wav,car_horn\nhuge.wav,car_horn\nquiet.wav,church_bell\nlong.wav,car_horn\n"
    )
    _sparse_wav(tmp_path / "huge.wav", 2_000_000_000)  # a 2 GB silent "car horn"
    _wav(tmp_path / "quiet.wav", seconds=1.0, amp=0.0)  # every sample zero
    _sparse_wav(tmp_path / "long.wav", 2 * 8000 * 3600, sr=8000)  # an hour of 8 kHz: 57 MB, over the duration bound
    out = tmp_path / "out"
    done = _import(source, hierarchy, out)
    assert done.exit_code == 0, done.output
    card = read_dataset_card(out)
    assert card is not None and card.counts["rejected"] == 3
    reasons = {r["where"].rsplit(":", 1)[1]: r["error"] for r in card.counts["rejected_detail"]}
    assert set(reasons) == {"3", "4", "5"}
    assert "2000000044 bytes" in reasons["3"] and "silent" in reasons["4"] and "3600" in reasons["5"]
    assert [i.meta["source_file"] for i in read_manifest(out / "sound_source.jsonl")] == [str(tmp_path / "a.wav")]
    assert sum(f.stat().st_size for f in out.rglob("*.wav")) < 1_000_000  # neither big clip was copied


def test_class_folders_with_file_names_that_are_not_utf8_are_counted_rejections(tmp_path: Path) -> None:
    import os
    import shutil

    (tmp_path / "hierarchy.json").write_text(json.dumps(HIERARCHY), encoding="utf-8")
    _wav(tmp_path / "src" / "car_horn" / "a.wav", seed=1)
    (tmp_path / "src" / "church_bell").mkdir()  # soundfile cannot write such names: copy them
    shutil.copyfile(_wav(tmp_path / "b.wav", seed=2), tmp_path / "src" / "church_bell" / os.fsdecode(b"\xe9t\xe9.wav"))
    (tmp_path / "src" / os.fsdecode(b"\xff_horn")).mkdir()
    shutil.copyfile(_wav(tmp_path / "c.wav", seed=3), tmp_path / "src" / os.fsdecode(b"\xff_horn") / "c.wav")
    out = tmp_path / "out"
    done = _import(tmp_path / "src", tmp_path / "hierarchy.json", out)
    assert done.exit_code == 0, done.output
    card = read_dataset_card(out)
    assert card is not None and card.counts["rejected"] == 2 and len(read_manifest(out / "sound_source.jsonl")) == 1
    errors = sorted(r["error"] for r in card.counts["rejected_detail"])
    assert "\\udcff_horn' is no class" in errors[0] and "not valid UTF-8" in errors[1]
