import json
import os

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.audio import probe_audio, sha256_file
from airbench_nb.manifests import (
    DatasetCard,
    ManifestError,
    check_audio,
    data_root,
    read_manifest,
    read_records,
    resolve_audio,
    write_dataset_card,
    write_manifest,
)
from airbench_nb.records import AudioStatus, ChatItem, FoundationItem, Response


def _item(uid="u1", audio="clip.wav", **kw):
    return FoundationItem(
        uid=uid,
        dataset="synthetic",
        audio=audio,
        question="Q?",
        task="Music_AQA",
        choices=["one", "two", "three", "four"],
        answer=2,
        **kw,
    )


def _chat(uid="c1", audio="clip.wav"):
    return ChatItem(
        uid=uid,
        dataset="synthetic",
        audio=audio,
        question="What?",
        task="sound_QA",
        reference="A beep.",
        meta_info="A 1 kHz beep.",
    )


def test_roundtrip_mixed_kinds_is_byte_identical(tmp_path):
    items = [_item("a"), _chat("b"), _item("c", meta={"pitch": 69})]
    path = write_manifest(tmp_path / "m.jsonl", items)
    back = read_manifest(path)
    assert back == items
    assert [type(i) for i in back] == [FoundationItem, ChatItem, FoundationItem]
    first = path.read_bytes()
    write_manifest(path, back)
    assert path.read_bytes() == first


def test_write_refuses_duplicate_uids(tmp_path):
    with pytest.raises(ValueError, match="duplicate uid 'a'"):
        write_manifest(tmp_path / "m.jsonl", [_item("a"), _item("a")])


def _lines(tmp_path, lines):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_error_names_file_line_uid_and_field(tmp_path):
    good = json.loads(_item("ok").model_dump_json())
    bad = {**good, "uid": "broken", "answer": 7}
    path = _lines(tmp_path, [json.dumps(good), json.dumps(bad)])
    with pytest.raises(ManifestError) as err:
        read_manifest(path)
    text = str(err.value)
    assert f"{path}:2" in text and "item 'broken'" in text and "not an index" in text
    assert err.value.line == 2 and err.value.uid == "broken"

    missing = {k: v for k, v in good.items() if k != "question"} | {"uid": "noq"}
    path = _lines(tmp_path, [json.dumps(missing)])
    with pytest.raises(ManifestError) as err:
        read_manifest(path)
    assert err.value.field == "question" and "item 'noq'" in str(err.value) and ":1:" in str(err.value)


def test_invalid_json_and_non_object_lines(tmp_path):
    path = _lines(tmp_path, ['{"uid": "x",', "[1, 2]"])
    items, errors = read_manifest(path, strict=False)
    assert items == []
    assert [e.line for e in errors] == [1, 2]
    assert "invalid JSON" in str(errors[0]) and "expected a JSON object" in str(errors[1])


def test_duplicate_uid_is_an_error_naming_both_lines(tmp_path):
    line = _item("dup").model_dump_json()
    path = _lines(tmp_path, [line, _item("other").model_dump_json(), line])
    with pytest.raises(ManifestError, match=r"bad.jsonl:3: item 'dup': field 'uid': duplicate uid \(first on line 1\)"):
        read_manifest(path)
    items, errors = read_manifest(path, strict=False)
    assert [i.uid for i in items] == ["dup", "other"] and len(errors) == 1


def test_lenient_read_keeps_good_items(tmp_path):
    path = _lines(tmp_path, [_item("a").model_dump_json(), "not json", "", _item("b").model_dump_json()])
    items, errors = read_manifest(path, strict=False)
    assert [i.uid for i in items] == ["a", "b"] and len(errors) == 1 and errors[0].line == 2


def test_unknown_kind_and_escaping_path_rejected(tmp_path):
    good = json.loads(_item("a").model_dump_json())
    path = _lines(
        tmp_path, [json.dumps({**good, "kind": "video"}), json.dumps({**good, "uid": "b", "audio": "../x.wav"})]
    )
    _, errors = read_manifest(path, strict=False)
    assert len(errors) == 2
    assert "kind" in str(errors[0])
    assert errors[1].field == "audio" and "'..'" in errors[1].message


def test_missing_manifest_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such manifest"):
        read_manifest(tmp_path / "nope.jsonl")


def test_read_records_of_other_types(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(Response(uid="a", model="baseline:first", text="A").model_dump_json() + "\n{bad\n")
    with pytest.raises(ManifestError, match="r.jsonl:2"):
        read_records(path, Response)
    assert [r.uid for r in read_records(path, Response, strict=False)] == ["a"]


def test_resolve_audio_rejects_symlink_escape(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "secret.wav"
    outside.write_bytes(b"x")
    os.symlink(outside, root / "link.wav")
    with pytest.raises(ValueError, match="outside the data root"):
        resolve_audio(root, "link.wav")
    with pytest.raises(ValueError, match="absolute"):
        resolve_audio(root, str(outside))
    assert resolve_audio(root, "sub/a.wav") == (root / "sub/a.wav").resolve()


def test_the_audio_resolver_gives_resolve_audios_paths_and_refuses_every_escape(tmp_path):
    from airbench_nb.manifests import AudioResolver

    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.wav").write_bytes(b"x")
    secret = tmp_path / "private"
    secret.mkdir()
    (secret / "s.wav").write_bytes(b"x")
    os.symlink(secret / "s.wav", root / "link.wav")  # a clip linked out of the root
    os.symlink(secret, root / "away")  # a folder linked out of the root
    os.symlink(root / "sub", root / "alias")  # a folder linked inside it
    os.symlink(root / "sub" / "a.wav", root / "sub" / "same.wav")  # a clip linked inside it
    resolve = AudioResolver(root)
    for relative in ["sub/a.wav", "alias/a.wav", "sub/same.wav", "absent.wav", "sub/deeper/b.wav", "./sub/a.wav"]:
        assert resolve(relative) == resolve_audio(root, relative), relative
        assert resolve(relative) == resolve(relative)  # the folder is remembered: the same answer again
    for relative in ["link.wav", "away/s.wav", "away/absent.wav"]:
        with pytest.raises(ValueError, match="outside the data root"):
            resolve(relative)
        with pytest.raises(ValueError, match="outside the data root"):
            resolve(relative)  # the folder's verdict is remembered too
    with pytest.raises(ValueError, match=r"'\.\.'"):
        resolve("sub/../../private/s.wav")


def test_data_root_from_dataset_card(tmp_path):
    folder = tmp_path / "m"
    (folder / "audio").mkdir(parents=True)
    assert data_root(folder / "x.jsonl") == folder.resolve()
    write_dataset_card(folder, DatasetCard(data_root="audio"))
    assert data_root(folder / "x.jsonl") == (folder / "audio").resolve()
    # out of the folder: only to a data root of the kit's (a release root, a self-rooted manifest folder) ...
    release, built = tmp_path / "release", tmp_path / "built"
    (release / "Chat").mkdir(parents=True)
    (release / "Chat" / "Chat_meta.json").write_text("[]")
    write_dataset_card(folder, DatasetCard(data_root=str(release)))
    assert data_root(folder / "x.jsonl") == release.resolve()
    write_dataset_card(built, DatasetCard(data_root="."))
    write_dataset_card(folder, DatasetCard(data_root="../built"))
    assert data_root(folder / "x.jsonl") == built.resolve()
    # ... or to the folder the user names
    write_dataset_card(folder, DatasetCard(data_root="../audio"))
    with pytest.raises(ManifestError, match="--data-root") as err:
        data_root(folder / "x.jsonl")
    assert err.value.field == "data_root" and err.value.file.endswith("dataset.json")
    (tmp_path / "audio").mkdir()
    assert data_root(folder / "x.jsonl", root=tmp_path / "audio") == (tmp_path / "audio").resolve()


def test_audio_status_never_crashes(tmp_path, rng):
    sf.write(tmp_path / "ok.wav", 0.1 * rng.standard_normal(1600), 16000)
    sf.write(tmp_path / "zero.wav", np.zeros(0), 16000)
    (tmp_path / "empty.wav").write_bytes(b"")
    (tmp_path / "corrupt.flac").write_bytes(b"fLaC" + bytes(range(256)) * 4)
    items = [
        _item("ok", "ok.wav"),
        _item("zero", "zero.wav"),
        _item("empty", "empty.wav"),
        _item("corrupt", "corrupt.flac"),
        _item("missing", "missing.mp3"),
    ]
    checked = {i.uid: i for i in check_audio(items, tmp_path, workers=2)}
    assert {k: v.audio_status for k, v in checked.items()} == {
        "ok": AudioStatus.ok,
        "zero": AudioStatus.empty,
        "empty": AudioStatus.empty,
        "corrupt": AudioStatus.corrupt,
        "missing": AudioStatus.missing,
    }
    assert checked["ok"].audio_sha256 == sha256_file(tmp_path / "ok.wav")
    assert checked["missing"].audio_sha256 is None and checked["empty"].audio_sha256 is None
    # notes name the file by its manifest path, never the machine's absolute path
    assert all(str(tmp_path) not in n for i in checked.values() for n in i.notes)
    assert any("corrupt.flac" in n for n in checked["corrupt"].notes)
    # checking twice does not pile up notes
    again = check_audio(list(checked.values()), tmp_path)
    assert [len(i.notes) for i in again] == [len(i.notes) for i in checked.values()]


def test_probe_reads_mp3_and_flac(tmp_path, rng):
    x = (0.2 * rng.standard_normal(8000)).astype("float32")
    sf.write(tmp_path / "a.mp3", x, 16000, format="MP3")
    sf.write(tmp_path / "a.flac", x, 16000, format="FLAC")
    for name in ("a.mp3", "a.flac"):
        probe = probe_audio(tmp_path / name)
        assert probe.status == AudioStatus.ok and probe.duration_s == pytest.approx(0.5, abs=0.1)
