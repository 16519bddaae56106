"""Hugging Face datasets read offline: every source layout the Hub and ``datasets`` write, rows streamed with where
they came from, audio cells decoded from bytes or paths, and every unreadable source or cell named."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import soundfile as sf

from airbench_nb.hf_data import AudioCellError, SourceError, decode_audio, iter_rows, resolve_source

FEATURES = {
    "id": {"dtype": "string", "_type": "Value"},
    "audio": {"sampling_rate": 16000, "_type": "Audio"},
    "transcription": {"dtype": "string", "_type": "Value"},
}
"""The features ``datasets`` writes for an audio dataset (the schema metadata of its parquet)."""


def _wav(hz: float, sr: int = 16000, seconds: float = 0.25) -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, 0.5 * np.sin(2 * np.pi * hz * np.arange(int(sr * seconds)) / sr), sr, format="WAV")
    return buffer.getvalue()


def _table(ids: list[str], audio: list[dict | None] | None = None) -> pa.Table:
    cells = (
        audio if audio is not None else [{"bytes": _wav(220 * (k + 1)), "path": f"{i}.wav"} for k, i in enumerate(ids)]
    )
    table = pa.table(
        {
            "id": ids,
            "audio": pa.array(cells, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            "transcription": [f"text of {i}" for i in ids],
        }
    )
    return table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": FEATURES}})})


def _parquet(path: Path, ids: list[str], **kwargs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(_table(ids, **kwargs), path, row_group_size=2)
    return path


@pytest.mark.parametrize(
    "layout",
    [
        ("data/test-00000-of-00002.parquet", "data/test-00001-of-00002.parquet", "data/train-00000-of-00001.parquet"),
        ("de_en/test/0000.parquet", "de_en/test/0001.parquet", "de_en/train/0000.parquet"),
        (
            "de_en/test-00000-of-00002.parquet",
            "de_en/test-00001-of-00002.parquet",
            "de_en/train-00000-of-00001.parquet",
        ),
        (  # older push_to_hub uploads hash each shard (Zahra99/IEMOCAP_Audio: data/session1-...-04e11ca668d90573)
            "data/test-00000-of-00002-04e11ca668d90573.parquet",
            "data/test-00001-of-00002-f6132100b374cb18.parquet",
            "data/train-00000-of-00001-6e102fcb5c1126b4.parquet",
        ),
    ],
    ids=["data-split-shards", "config-split-folders", "config-split-shards", "hashed-split-shards"],
)
def test_every_hub_naming_scheme_gives_the_split_in_row_order(tmp_path, layout):
    first, second, other = layout
    _parquet(tmp_path / first, ["a", "b", "c"])
    _parquet(tmp_path / second, ["d", "e"])
    _parquet(tmp_path / other, ["x"])
    source = resolve_source(tmp_path, split="test")
    assert source.format == "parquet" and source.split == "test" and source.num_rows() == 5
    assert source.config == ("de_en" if layout[0].startswith("de_en") else None)
    rows = list(iter_rows(source, ["id"], batch_rows=1))
    assert [r.values["id"] for r in rows] == ["a", "b", "c", "d", "e"]
    assert [(r.file.name, r.row) for r in rows][2:4] == [(Path(first).name, 2), (Path(second).name, 0)]
    assert source.audio_columns == ["audio"] and source.features["audio"]["_type"] == "Audio"
    with pytest.raises(SourceError, match=r"several splits \(test, train\): name one"):
        resolve_source(tmp_path)
    with pytest.raises(SourceError, match=r"no split 'validation'; splits: test, train"):
        resolve_source(tmp_path, split="validation")


def test_a_folder_of_several_configs_needs_one_named(tmp_path):
    _parquet(tmp_path / "Foundation" / "test-00000-of-00001.parquet", ["f1"])
    _parquet(tmp_path / "Chat" / "test-00000-of-00001.parquet", ["c1", "c2"])
    with pytest.raises(SourceError, match=r"several configs \(Chat, Foundation\): name one"):
        resolve_source(tmp_path)
    chat = resolve_source(tmp_path, config="Chat")
    assert [r.values["id"] for r in iter_rows(chat)] == ["c1", "c2"]
    with pytest.raises(SourceError, match="no config 'Music'; configs: Chat, Foundation"):
        resolve_source(tmp_path, config="Music")


def test_a_hub_cache_folder_is_read_through_refs_main(tmp_path):
    cache = tmp_path / "hub" / "datasets--google--fleurs"
    revision = "0123456789abcdef0123456789abcdef01234567"
    _parquet(cache / "snapshots" / revision / "data" / "test-00000-of-00001.parquet", ["s1", "s2"])
    _parquet(cache / "snapshots" / ("f" * 40) / "data" / "test-00000-of-00001.parquet", ["old"])
    (cache / "refs").mkdir()
    (cache / "refs" / "main").write_text(revision)
    source = resolve_source(cache)
    assert source.revision == revision and source.root == cache / "snapshots" / revision
    assert [r.values["id"] for r in iter_rows(source)] == ["s1", "s2"]
    (cache / "refs" / "main").write_text("9" * 40)
    with pytest.raises(SourceError, match="refs/main names '9999.*', which has no snapshot folder"):
        resolve_source(cache)
    (cache / "refs" / "main").unlink()
    with pytest.raises(SourceError, match="without refs/main"):
        resolve_source(cache)


def _save_to_disk(folder: Path, ids: list[str]) -> None:
    """A folder as ``Dataset.save_to_disk`` writes it: Arrow stream files, state.json, dataset_info.json."""
    folder.mkdir(parents=True)
    table = _table(ids)
    names = []
    for k, part in enumerate((table.slice(0, 2), table.slice(2))):
        name = f"data-{k:05d}-of-00002.arrow"
        with pa.OSFile(str(folder / name), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(part, max_chunksize=1)
        names.append({"filename": name})
    (folder / "state.json").write_text(json.dumps({"_data_files": names, "_split": "test"}))
    (folder / "dataset_info.json").write_text(json.dumps({"features": FEATURES}))


def test_a_save_to_disk_folder_and_a_dataset_dict_are_streamed(tmp_path):
    _save_to_disk(tmp_path / "one", ["a", "b", "c"])
    source = resolve_source(tmp_path / "one")
    assert source.format == "arrow" and source.num_rows() == 3 and source.audio_columns == ["audio"]
    assert [(r.values["id"], r.file.name, r.row) for r in iter_rows(source, ["id"])] == [
        ("a", "data-00000-of-00002.arrow", 0),
        ("b", "data-00000-of-00002.arrow", 1),
        ("c", "data-00001-of-00002.arrow", 0),
    ]
    whole = tmp_path / "dict"
    _save_to_disk(whole / "test", ["t"])
    _save_to_disk(whole / "train", ["u", "v"])
    (whole / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    assert [r.values["id"] for r in iter_rows(resolve_source(whole, split="train"))] == ["u", "v"]
    with pytest.raises(SourceError, match="a DatasetDict with splits train, test; name one"):
        resolve_source(whole)
    (tmp_path / "one" / "state.json").write_text(json.dumps({"_data_files": [{"filename": "../elsewhere.arrow"}]}))
    with pytest.raises(SourceError, match="state.json names data files that are not in the folder"):
        resolve_source(tmp_path / "one")


def test_audio_cells_decode_from_bytes_or_a_path_under_the_source(tmp_path):
    sf.write(tmp_path / "clip.wav", np.zeros(800) + 0.1, 8000)
    cells = [
        {"bytes": _wav(440, sr=22050), "path": "ignored.wav"},
        {"bytes": None, "path": "clip.wav"},
        {"bytes": None, "path": "../outside.wav"},
        {"bytes": None, "path": "missing.wav"},
        {"bytes": b"not audio at all", "path": None},
        None,
    ]
    source = resolve_source(_parquet(tmp_path / "test.parquet", [f"r{k}" for k in range(6)], audio=cells))
    rows = list(iter_rows(source))
    samples, sr = decode_audio(rows[0], "audio", source.root)
    assert sr == 22050 and samples.dtype == np.float32 and len(samples) == 22050 // 4
    assert abs(float(np.abs(samples).max()) - 0.5) < 0.01
    samples, sr = decode_audio(rows[1], "audio", source.root)
    assert sr == 8000 and len(samples) == 800
    expected = [
        r"test.parquet: row 2: column 'audio': audio path '../outside.wav' is outside",
        r"test.parquet: row 3: column 'audio': audio path 'missing.wav' not found",
        r"test.parquet: row 4: column 'audio': audio cannot be decoded",
        r"test.parquet: row 5: column 'audio': no audio",
    ]
    for row, message in zip(rows[2:], expected, strict=True):
        with pytest.raises(AudioCellError, match=message):
            decode_audio(row, "audio", source.root)


def test_sources_that_are_not_datasets_are_refused_by_name(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        resolve_source(tmp_path / "nothing")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(SourceError, match="notes.txt: not a parquet file"):
        resolve_source(tmp_path / "notes.txt")
    with pytest.raises(SourceError, match="no parquet file, state.json or hub cache in it"):
        resolve_source(tmp_path)
    source = resolve_source(_parquet(tmp_path / "test.parquet", ["a"]))
    with pytest.raises(SourceError, match=r"no column\(s\) \['label'\]; columns: id, audio, transcription"):
        list(iter_rows(source, ["label"]))


def test_without_the_schema_metadata_audio_columns_are_the_bytes_path_structs(tmp_path):
    path = tmp_path / "plain.parquet"
    pq.write_table(_table(["a"]).replace_schema_metadata(None), path)
    source = resolve_source(path)
    assert source.features == {} and source.audio_columns == ["audio"]
