"""``airbench-nb import``: tables of every format mapped by declarative recipes into data folders, bad rows rejected
with file, row and field, resumed imports that decode nothing twice, and folders an import never overwrites."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from airbench_nb.audio import sha256_file
from airbench_nb.cli import app
from airbench_nb.importing import (
    RECIPES,
    ImportRefused,
    ImportRequest,
    TableRecipe,
    TableSpec,
    load_spec,
    open_table,
    run_import,
)
from airbench_nb.importing.writer import AUDIO_JOURNAL, REJECTED_FILE
from airbench_nb.manifests import read_dataset_card, read_manifest
from airbench_nb.records import FoundationItem, TranscriptionItem
from tests.hf_minis import audio_feature, class_label, value, wav_bytes, write_parquet

runner = CliRunner()

EMOTIONS = ["neutral", "happy", "sad", "angry"]

ASR = TableSpec(
    name="mini-asr",
    kind="transcription",
    dataset="mini",
    uid="id",
    audio="audio",
    question_text="Transcribe the speech.",
    fields={"reference": "text"},
    values={"task": "sseu_transcription", "language": "en"},
    meta=["speaker"],
)

EMOTION = TableSpec(
    name="mini-emotion",
    kind="foundation",
    dataset="mini-emo",
    audio="audio",
    question_text="What emotion does the speaker express?",
    choices_feature="label",
    answer="label",
    answer_format="index",
    values={"task": "Speaker_Emotion_Recontion"},
)


def _asr_parquet(path: Path) -> Path:
    rows = {
        "id": ["a1", "a2", "a3", "a4", "a5", "a6"],
        "audio": [
            {"bytes": wav_bytes(220), "path": "a1.wav"},
            {"bytes": wav_bytes(330, sr=8000, fmt="FLAC"), "path": "a2.flac"},
            {"bytes": wav_bytes(440), "path": "a3.wav"},  # empty reference
            {"bytes": b"RIFF not audio at all", "path": "a4.wav"},  # undecodable
            {"bytes": None, "path": "../../etc/passwd"},  # a path outside the source
            {"bytes": wav_bytes(550), "path": "a6.wav"},
        ],
        "text": ["hello world", "good morning", "", "never read", "never read", "HELLO AGAIN"],
        "speaker": ["s1", "s2", "s1", "s2", "s1", "s3"],
    }
    features = {"id": value(), "audio": audio_feature(), "text": value(), "speaker": value()}
    return write_parquet(path, rows, features)


def test_a_parquet_source_becomes_a_data_folder_with_every_bad_row_named(tmp_path):
    source = _asr_parquet(tmp_path / "hf" / "data" / "test-00000-of-00001.parquet")
    out = tmp_path / "out"
    result = run_import(ImportRequest(recipe=TableRecipe(ASR), out=out, positional=[tmp_path / "hf"]))
    assert result.items == {"transcription": 3} and result.rows == 6
    assert [(r.uid, r.field) for r in result.rejected] == [("a3", "reference"), ("a4", "audio"), ("a5", "audio")]
    assert "empty" in result.rejected[0].reason and "cannot be decoded" in result.rejected[1].reason
    assert "outside the source folder" in result.rejected[2].reason
    assert result.rejected[0].where == f"{source}: row 2"
    items = read_manifest(out / "transcription.jsonl")
    assert [(i.uid, i.reference, i.meta["speaker"]) for i in items] == [
        ("a1", "hello world", "s1"),
        ("a2", "good morning", "s2"),
        ("a6", "HELLO AGAIN", "s3"),
    ]
    for item in items:
        assert isinstance(item, TranscriptionItem) and item.source_id == item.uid
        assert item.audio == f"audio/mini-asr/{item.uid}.wav"
        assert sha256_file(out / item.audio) == item.audio_sha256
    samples, rate = sf.read(out / "audio/mini-asr/a2.wav")
    assert rate == 8000 and abs(len(samples) - 2000) <= 1  # a FLAC cell kept at its own rate
    card = read_dataset_card(out)
    assert card is not None and card.source == "import:mini-asr" and card.recipe is not None
    assert card.recipe.recipe == "mini-asr" and card.recipe.version == 1
    assert card.recipe.sources == {"source": [str((tmp_path / "hf").resolve())]}
    assert card.counts["transcription"] == 3 and card.counts["rejected"] == 3
    assert card.counts["rejected_by_field"] == {"audio": 2, "reference": 1}
    lines = [json.loads(line) for line in (out / REJECTED_FILE).read_text().splitlines()]
    assert [line["field"] for line in lines] == ["reference", "audio", "audio"]
    assert not list((out / "audio/mini-asr").glob("a3*"))  # a row rejected for its fields costs no audio


def test_class_labels_become_choices_and_a_resampled_clip_keeps_its_length(tmp_path):
    rows = {
        "audio": [{"bytes": wav_bytes(300 + 40 * k, sr=48000), "path": f"{k}.wav"} for k in range(5)],
        "label": [0, 3, 1, 7, 2],  # 7 is no class
    }
    write_parquet(tmp_path / "emo.parquet", rows, {"audio": audio_feature(48000), "label": class_label(EMOTIONS)})
    spec = EMOTION.model_copy(update={"sample_rate": 16000})
    result = run_import(
        ImportRequest(recipe=TableRecipe(spec), out=tmp_path / "out", positional=[tmp_path / "emo.parquet"])
    )
    assert result.items == {"foundation": 4}
    assert [(r.where.endswith("row 3"), r.field) for r in result.rejected] == [(True, "label")]
    assert "index 7 is not one of the 4 choices" in result.rejected[0].reason
    items = read_manifest(tmp_path / "out" / "foundation.jsonl")
    assert all(isinstance(i, FoundationItem) and i.choices == EMOTIONS for i in items)
    assert [i.answer for i in items] == [0, 3, 1, 2]
    assert [i.uid for i in items] == [
        "mini-emotion-000000",
        "mini-emotion-000001",
        "mini-emotion-000002",
        "mini-emotion-000004",
    ]
    samples, rate = sf.read(tmp_path / "out" / items[0].audio)
    assert rate == 16000 and abs(len(samples) - 4000) <= 2


@pytest.mark.parametrize("answer_format", ["text", "index", "letter"])
def test_choices_as_a_list_a_json_string_or_columns_and_the_gold_never_guessed(tmp_path, answer_format):
    (tmp_path / "clips").mkdir()
    for k in range(4):
        (tmp_path / "clips" / f"c{k}.wav").write_bytes(wav_bytes(200 + 100 * k))
    gold = {"text": ["a dog", "rain", "violin", "A CAT"], "index": [0, 1, 2, 9], "letter": ["A", "b", "C", "E"]}[
        answer_format
    ]
    rows = [
        {"qid": "q0", "wav": "c0", "q": "What is heard?", "choices": ["a dog", "a cat"], "gold": gold[0]},
        {
            "qid": "q1",
            "wav": "c1",
            "q": "What is heard?",
            "choices": json.dumps(["wind", "rain", "hail"]),
            "gold": gold[1],
        },
        {"qid": "q2", "wav": "c2", "q": "Which instrument?", "choices": ["piano", "guitar", "violin"], "gold": gold[2]},
        {"qid": "q3", "wav": "c3", "q": "What is heard?", "choices": ["a dog", "a cat"], "gold": gold[3]},
        {"qid": "q4", "wav": "c3", "q": "What is heard?", "choices": ["rain", "Rain"], "gold": gold[0]},
    ]
    (tmp_path / "meta.json").write_text(json.dumps(rows))
    spec = TableSpec(
        name="mini-qa",
        kind="foundation",
        dataset="mini-qa",
        uid="qid",
        audio="wav",
        audio_dir="clips",
        audio_suffix=".wav",
        question="q",
        choices="choices",
        answer="gold",
        answer_format=answer_format,
        values={"task": "Sound_AQA"},
    )
    result = run_import(
        ImportRequest(recipe=TableRecipe(spec), out=tmp_path / "out", positional=[tmp_path / "meta.json"])
    )
    items = read_manifest(tmp_path / "out" / "foundation.jsonl")
    by_uid = {i.uid: i for i in items}
    assert by_uid["q0"].answer == 0 and by_uid["q0"].choices == ["a dog", "a cat"]
    assert by_uid["q2"].answer == 2
    rejected = {r.uid: r.field for r in result.rejected}
    assert by_uid["q1"].answer == 1 and by_uid["q1"].choices == ["wind", "rain", "hail"]
    # "A CAT" is not "a cat", 9 and E are not among two choices: nothing is guessed; choices that differ in case only
    # are refused by the item kind (or, as text, the gold "a dog" is not among them)
    assert rejected == {"q3": "gold", "q4": "gold" if answer_format == "text" else "choices"}


def test_columns_of_choices_and_a_text_table_in_its_own_encoding(tmp_path):
    (tmp_path / "wav").mkdir()
    for name in ("one", "two"):
        (tmp_path / "wav" / f"{name}.wav").write_bytes(wav_bytes())
    text = "id,file,question,choice_a,choice_b,choice_c,choice_d,answer_gt\n"
    text += "x1,one.wav,Où est la musique ?,café,gare,,,gare\n"
    text += "x2,two.wav,Which?,yes,no,maybe,,maybe\n"
    (tmp_path / "meta.csv").write_bytes(text.encode("latin-1"))
    spec = TableSpec(
        name="mini-csv",
        kind="foundation",
        dataset="mini",
        uid="id",
        audio="file",
        audio_dir="wav",
        question="question",
        choices=["choice_a", "choice_b", "choice_c", "choice_d"],
        answer="answer_gt",
        values={"task": "Acoustic_Scene_Classification"},
        encoding="latin-1",
    )
    run_import(ImportRequest(recipe=TableRecipe(spec), out=tmp_path / "out", positional=[tmp_path / "meta.csv"]))
    items = read_manifest(tmp_path / "out" / "foundation.jsonl")
    assert [(i.question, i.choices, i.answer) for i in items] == [
        ("Où est la musique ?", ["café", "gare"], 1),
        ("Which?", ["yes", "no", "maybe"], 2),
    ]
    with pytest.raises(ValueError, match=r"meta\.csv: not utf-8 text .*--encoding"):
        run_import(
            ImportRequest(
                recipe=TableRecipe(spec.model_copy(update={"encoding": "utf-8", "name": "mini-csv2"})),
                out=tmp_path / "out2",
                positional=[tmp_path / "meta.csv"],
            )
        )


def test_a_second_run_resumes_without_decoding_and_rewrites_only_what_changed(tmp_path, monkeypatch):
    _asr_parquet(tmp_path / "a.parquet")
    out = tmp_path / "out"
    request = ImportRequest(recipe=TableRecipe(ASR), out=out, positional=[tmp_path / "a.parquet"])
    first = run_import(request)
    assert (first.audio_written, first.audio_reused) == (3, 0)
    before = {p.name: p.stat().st_mtime_ns for p in (out / "audio/mini-asr").iterdir()}
    (out / "audio/mini-asr/a6.wav").write_bytes(wav_bytes(999))  # changed behind the import's back
    decoded = []
    import airbench_nb.importing.mapping as mapping

    original = mapping.read_audio_bytes
    monkeypatch.setattr(mapping, "read_audio_bytes", lambda data, where: decoded.append(where) or original(data, where))
    second = run_import(request)
    assert (second.audio_written, second.audio_reused) == (1, 2)
    assert len([w for w in decoded if "row 5" in w]) == 1 and not [w for w in decoded if "row 0" in w]
    after = {p.name: p.stat().st_mtime_ns for p in (out / "audio/mini-asr").iterdir()}
    assert after["a1.wav"] == before["a1.wav"] and after["a2.wav"] == before["a2.wav"]
    items = read_manifest(out / "transcription.jsonl")
    assert all(sha256_file(out / i.audio) == i.audio_sha256 for i in items)
    assert read_dataset_card(out).counts["audio_reused"] == 2
    # a journal line cut by a crash: that file is written again, the others reused
    journal = (out / AUDIO_JOURNAL).read_text()
    (out / AUDIO_JOURNAL).write_text(journal + '{"path": "audio/mini-asr/a1.wa')
    third = run_import(request)
    assert third.audio_reused == 3


def test_an_import_never_writes_into_a_folder_it_did_not_make(tmp_path):
    _asr_parquet(tmp_path / "a.parquet")
    build = tmp_path / "build"
    build.mkdir()
    (build / "foundation.jsonl").write_text("")
    with pytest.raises(ImportRefused, match="files no import wrote"):
        run_import(ImportRequest(recipe=TableRecipe(ASR), out=build, positional=[tmp_path / "a.parquet"]))
    run_import(ImportRequest(recipe=TableRecipe(ASR), out=tmp_path / "mine", positional=[tmp_path / "a.parquet"]))
    other = TableRecipe(ASR.model_copy(update={"name": "other-asr"}))
    with pytest.raises(ImportRefused, match=r"holds data from 'import:mini-asr'"):
        run_import(ImportRequest(recipe=other, out=tmp_path / "mine", positional=[tmp_path / "a.parquet"]))
    assert (build / "foundation.jsonl").read_text() == ""


def test_an_import_whose_every_row_is_rejected_writes_no_manifest(tmp_path):
    write_parquet(
        tmp_path / "bad.parquet",
        {
            "id": ["b1", "b2"],
            "audio": [{"bytes": b"nope", "path": None}] * 2,
            "text": ["x", "y"],
            "speaker": ["s", "s"],
        },
        {"id": value(), "audio": audio_feature(), "text": value(), "speaker": value()},
    )
    with pytest.raises(
        ImportRefused, match=r"no item imported from 2 rows; all 2 rejected, first reasons: .*row 0: field 'audio'"
    ):
        run_import(ImportRequest(recipe=TableRecipe(ASR), out=tmp_path / "out", positional=[tmp_path / "bad.parquet"]))
    assert not (tmp_path / "out" / "transcription.jsonl").exists()


def test_limit_reads_the_first_rows_only(tmp_path):
    _asr_parquet(tmp_path / "a.parquet")
    result = run_import(
        ImportRequest(recipe=TableRecipe(ASR), out=tmp_path / "out", positional=[tmp_path / "a.parquet"], limit=2)
    )
    assert result.rows == 2 and result.items == {"transcription": 2}
    assert read_dataset_card(tmp_path / "out").recipe.options == {"limit": 2}


def test_a_text_table_row_is_named_by_its_line(tmp_path):
    (tmp_path / "meta.jsonl").write_text('{"id": "j1", "audio": "x.wav", "text": "t"}\n\nnot json\n')
    table = open_table(tmp_path / "meta.jsonl")
    rows = table.rows()
    assert next(rows).where == f"{tmp_path / 'meta.jsonl'}: row 1"
    with pytest.raises(ValueError, match=r"meta\.jsonl:3: not JSON"):
        next(rows)


def test_a_user_recipe_file_runs_from_the_command_line(tmp_path):
    _asr_parquet(tmp_path / "hf" / "data" / "test-00000-of-00001.parquet")
    recipe = tmp_path / "my.yaml"
    recipe.write_text(
        "name: my-asr\nkind: transcription\ndataset: mine\nuid: id\naudio: audio\n"
        "question_text: Transcribe the speech.\nfields: {reference: text}\nvalues: {task: sseu_transcription}\n"
    )
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["import", "--recipe-file", str(recipe), str(tmp_path / "hf"), "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["items"] == {"transcription": 3} and payload["rejected"] == 3
    assert read_dataset_card(out).recipe.spec_file == str(recipe.resolve())
    again = runner.invoke(app, ["import", "--recipe-file", str(recipe), str(tmp_path / "hf"), "--out", str(out)])
    assert again.exit_code == 0 and "3 already there" in again.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nkind: nonsense\ndataset: x\naudio: audio\n")
    refused = runner.invoke(
        app, ["import", "--recipe-file", str(bad), str(tmp_path / "hf"), "--out", str(tmp_path / "o")]
    )
    assert refused.exit_code == 2 and "bad.yaml: field 'kind': no item kind 'nonsense'" in refused.stderr
    with pytest.raises(ValueError, match="field 'audio': Field required"):
        (tmp_path / "x.yaml").write_text("name: x\nkind: scene\ndataset: x\n")
        load_spec(tmp_path / "x.yaml")


def test_the_command_refuses_in_one_line(tmp_path):
    _asr_parquet(tmp_path / "a.parquet")
    recipe = tmp_path / "my.yaml"
    recipe.write_text("name: my\nkind: transcription\ndataset: d\naudio: audio\nfields: {reference: text}\n")
    cases = [
        (["import", "no-such-recipe", "x", "--out", str(tmp_path / "o")], "no import recipe 'no-such-recipe'"),
        (["import", "--recipe-file", str(recipe), str(tmp_path / "a.parquet")], "--out DIR is required"),
        (
            [
                "import",
                "--recipe-file",
                str(recipe),
                str(tmp_path / "a.parquet"),
                "--out",
                str(tmp_path / "o"),
                "--vctk",
                "x",
            ],
            "takes no source --vctk",
        ),
        (
            [
                "import",
                "--recipe-file",
                str(recipe),
                str(tmp_path / "a.parquet"),
                "--out",
                str(tmp_path / "o"),
                "--option",
                "x=1",
            ],
            "has no option 'x'",
        ),
        (
            ["import", "--recipe-file", str(recipe), str(tmp_path / "none.parquet"), "--out", str(tmp_path / "o")],
            "no such file",
        ),
        (["import"], "name a recipe"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_list_shows_every_registered_recipe(tmp_path):
    result = runner.invoke(app, ["import", "--list", "--json"])
    assert result.exit_code == 0
    listed = [row["recipe"] for row in json.loads(result.stdout)]
    assert listed == list(RECIPES)


def test_spec_audio_is_mono_float_written_as_16_bit(tmp_path):
    stereo = np.stack([np.linspace(-0.5, 0.5, 800), np.zeros(800)], axis=1).astype(np.float32)
    (tmp_path / "w").mkdir()
    sf.write(tmp_path / "w" / "s.wav", stereo, 8000)
    (tmp_path / "m.jsonl").write_text('{"id": "s", "audio": "w/s.wav", "text": "stereo"}\n')
    run_import(ImportRequest(recipe=TableRecipe(ASR), out=tmp_path / "out", positional=[tmp_path / "m.jsonl"]))
    info = sf.info(tmp_path / "out/audio/mini-asr/s.wav")
    assert (info.channels, info.samplerate, info.subtype) == (1, 8000, "PCM_16")
    samples, _ = sf.read(tmp_path / "out/audio/mini-asr/s.wav")
    assert np.allclose(samples, stereo.mean(axis=1), atol=1e-4)


def test_the_wav_writer_agrees_with_libsndfile_to_the_level(tmp_path):
    """The import writes WAV bytes with numpy (soundfile's in-memory writing held the GIL): the file reads back
    with soundfile as 16-bit mono at its rate, each sample the level libsndfile writes for it (or next to it)."""
    import io

    from airbench_nb.importing.writer import wav_bytes

    rng = np.random.default_rng(3)
    samples = np.concatenate([rng.uniform(-1.2, 1.2, 5000), [1.0, -1.0, 0.0, 0.5 / 32767]]).astype(np.float32)
    ours = wav_bytes(samples, 22050)
    info = sf.info(io.BytesIO(ours))
    assert (info.samplerate, info.channels, info.subtype, info.frames) == (22050, 1, "PCM_16", samples.size)
    theirs = io.BytesIO()
    sf.write(theirs, np.clip(samples, -1, 1), 22050, subtype="PCM_16", format="WAV")
    a = sf.read(io.BytesIO(ours), dtype="int16")[0].astype(int)
    b = sf.read(io.BytesIO(theirs.getvalue()), dtype="int16")[0].astype(int)
    assert np.max(np.abs(a - b)) <= 1 and a[-4:-1].tolist() == [32767, -32768, 0]


def test_a_csv_field_holding_a_line_separator_stays_in_its_row(tmp_path):
    """Rows end at line ends only: U+2028, U+2029 and U+0085 inside a caption do not cut its row in two."""
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "a.wav").write_bytes(wav_bytes())
    (tmp_path / "m.csv").write_text(
        "id,audio,text\r\na,w/a.wav,one\u2028two\u2029three\u0085four\r\n", encoding="utf-8"
    )
    result = run_import(ImportRequest(recipe=TableRecipe(ASR), out=tmp_path / "out", positional=[tmp_path / "m.csv"]))
    assert result.rows == 1 and not result.rejected
    (item,) = read_manifest(tmp_path / "out" / "transcription.jsonl")
    assert item.reference == "one\u2028two\u2029three\u0085four"


def test_a_recipe_names_the_column_that_clusters_its_items(tmp_path):
    from airbench_nb.records import cluster_of

    _asr_parquet(tmp_path / "hf" / "data" / "test-00000-of-00001.parquet")
    spec = ASR.model_copy(update={"name": "mini-asr-clustered", "cluster": "speaker"})
    run_import(ImportRequest(recipe=TableRecipe(spec), out=tmp_path / "out", positional=[tmp_path / "hf"]))
    items = read_manifest(tmp_path / "out" / "transcription.jsonl")
    assert [i.meta["cluster"] for i in items] == ["s1", "s2", "s3"]
    assert [cluster_of(i) for i in items] == ["given:s1", "given:s2", "given:s3"]
    # without it each imported clip is its own file, so its own cluster
    run_import(ImportRequest(recipe=TableRecipe(ASR), out=tmp_path / "plain", positional=[tmp_path / "hf"]))
    plain = read_manifest(tmp_path / "plain" / "transcription.jsonl")
    assert len({cluster_of(i) for i in plain}) == 3 and all("cluster" not in i.meta for i in plain)
