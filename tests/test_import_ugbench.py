"""Import recipes of UG-Bench's corpora and of AIR-Bench, each run on a miniature copy in the corpus's real schema.

Every recipe's items are checked against the rows it read (counts, references, gold answers), every bad row is a
counted rejection with its file, row, field and reason, and a second run into the same folder reuses the audio it
wrote. The last test scores imported folders through the kit (``baseline:oracle``, the rule judge, ``score_run``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from airbench_nb.importing import ImportRequest, recipe_for, run_import
from airbench_nb.importing.corpora.ugbench import FLEURS_LANGUAGES, MELD_EMOTIONS, seeded_rng
from airbench_nb.importing.writer import ImportResult
from airbench_nb.manifests import read_dataset_card, read_manifest
from airbench_nb.prompts import reference_prompt
from airbench_nb.scoring.wer import CHARACTER_LANGUAGES
from tests import minis_ug_import as minis


def _run(name: str, sources: list[Path], out: Path, **kwargs) -> ImportResult:
    return run_import(ImportRequest(recipe=recipe_for(name), out=out, positional=sources, **kwargs))


def _items(out: Path, kind: str) -> list:
    return read_manifest(out / f"{kind}.jsonl")


def _rejections(result: ImportResult) -> list[tuple[str, str]]:
    return [(r.field, r.reason) for r in result.rejected]


def _resumed(name: str, sources: list[Path], out: Path, first: ImportResult, **kwargs) -> None:
    """A second run into the same folder reuses every clip and writes the same manifests."""
    manifests = {p.name: p.read_text(encoding="utf-8") for p in out.glob("*.jsonl") if p.name != "import-audio.jsonl"}
    again = _run(name, sources, out, **kwargs)
    assert again.audio_written == 0 and again.audio_reused == first.imported == again.imported
    assert {p: (out / p).read_text(encoding="utf-8") for p in manifests} == manifests
    assert read_dataset_card(out).counts["audio_reused"] == first.imported


def test_librispeech_transcripts_as_given_and_an_empty_one_rejected(tmp_path: Path) -> None:
    source, out = minis.librispeech(tmp_path), tmp_path / "out"
    result = _run("librispeech", [source], out)
    items = _items(out, "transcription")
    good = minis.LIBRISPEECH_ROWS[:2]
    assert [i.reference for i in items] == [r["text"] for r in good]
    assert [i.uid for i in items] == [f"librispeech-{r['id']}" for r in good]
    assert {i.task for i in items} == {"sseu_transcription"} and {i.language for i in items} == {"en"}
    assert all(i.question == reference_prompt(i) and i.audio_status.value == "ok" for i in items)
    assert items[0].meta["speaker_id"] == 1089
    assert result.rows == 3 and result.imported == 2
    assert [r.field for r in result.rejected] == ["reference"] and "row 2" in result.rejected[0].where
    _resumed("librispeech", [source], out, result)


def test_a_repeated_uid_is_rejected_while_the_first_rows_audio_is_being_written(tmp_path: Path) -> None:
    """Audio is written by worker threads a few rows ahead: a uid is taken when its row is checked, not when kept."""
    rows = [dict(minis.LIBRISPEECH_ROWS[0]), dict(minis.LIBRISPEECH_ROWS[1], id=minis.LIBRISPEECH_ROWS[0]["id"])]
    source = minis.librispeech(tmp_path, rows)
    result = _run("librispeech", [source], tmp_path / "out", workers=4)
    assert result.imported == 1 and [(r.field, r.uid) for r in result.rejected] == [
        ("uid", "librispeech-" + rows[0]["id"])
    ]
    assert [i.reference for i in _items(tmp_path / "out", "transcription")] == [rows[0]["text"]]


def test_fleurs_languages_from_lang_id_and_an_unknown_one_rejected(tmp_path: Path) -> None:
    source, out = minis.fleurs(tmp_path), tmp_path / "out"
    result = _run("fleurs", [source], out)
    items = _items(out, "transcription")
    assert [i.reference for i in items] == [r["raw"] for r in minis.FLEURS_ROWS[:3]]
    assert [i.language for i in items] == ["en", "zh", "ja"]
    assert {"zh", "ja"} <= CHARACTER_LANGUAGES  # scored by CER
    assert [i.uid for i in items] == ["fleurs-1001-10000", "fleurs-1002-10001", "fleurs-1003-10002"]
    assert result.rows == 4 and result.imported == 3
    assert len(result.rejected) == 1
    field, reason = _rejections(result)[0]
    assert field == "lang_id" and "xx_yy" in reason and "row 3" in result.rejected[0].where
    assert len(FLEURS_LANGUAGES) == 102 and FLEURS_LANGUAGES["cmn_hans_cn"] == "zh"


def test_covost2_languages_from_the_config_in_the_path(tmp_path: Path) -> None:
    source, out = minis.covost2(tmp_path), tmp_path / "out"
    result = _run("covost2", [source], out)
    items = _items(out, "translation")
    good = minis.COVOST_ROWS[:2]
    assert [i.references for i in items] == [[r["translation"]] for r in good]
    assert [i.source_text for i in items] == [r["sentence"] for r in good]
    assert {(i.source_language, i.target_language) for i in items} == {("de", "en")}
    assert all(i.question == reference_prompt(i) and "German" in i.question for i in items)
    assert _rejections(result) == [("references", result.rejected[0].reason)] and result.rows == 3
    flat = tmp_path / "flat.parquet"  # no config in the path: --config gives it, else the import is refused
    flat.write_bytes(source.read_bytes())
    assert _run("covost2", [flat], tmp_path / "out2", config="de_en").imported == 2
    with pytest.raises(ValueError, match="no CoVoST 2 config"):
        _run("covost2", [flat], tmp_path / "out3")


def test_clotho_iso_8859_1_captions_and_a_missing_clip(tmp_path: Path) -> None:
    source, out = minis.clotho(tmp_path), tmp_path / "out"
    result = _run("clotho", [source], out)
    items = _items(out, "caption")
    assert [i.references for i in items] == [r["captions"] for r in minis.CLOTHO_ROWS[:2]]
    assert "People chat in a café." in items[1].references
    assert [i.uid for i in items] == ["clotho-evaluation-Santa Motor", "clotho-evaluation-cafe ambience"]
    assert {i.task for i in items} == {"audio_captioning"} and all(i.question == reference_prompt(i) for i in items)
    assert result.rows == 3 and [r.field for r in result.rejected] == ["audio"]
    assert "lost.wav" in result.rejected[0].reason
    _resumed("clotho", [source], out, result)


def test_audiocaps_rows_of_a_clip_make_one_item(tmp_path: Path) -> None:
    csv, audio = minis.audiocaps(tmp_path)
    out = tmp_path / "out"
    result = _run("audiocaps", [csv], out, named={"audio": [audio]})
    items = {i.uid: i for i in _items(out, "caption")}
    expected: dict[str, list[str]] = {}
    for _, youtube, start, caption in minis.AUDIOCAPS_ROWS:
        expected.setdefault(f"audiocaps-{youtube}_{start}", []).append(caption)
    assert list(items) == ["audiocaps-7fmOlUlwoNg_20", "audiocaps-ZYWCwfCkBp4_50"]
    assert {uid: i.references for uid, i in items.items()} == {uid: expected[uid] for uid in items}
    assert items["audiocaps-7fmOlUlwoNg_20"].meta["audiocap_ids"] == ["103549", "103550", "103552"]
    assert result.rows == 6 and result.imported == 2
    assert [(r.field, r.uid) for r in result.rejected] == [("audio", "audiocaps-nOclipHere_30")]
    _resumed("audiocaps", [csv], out, result, named={"audio": [audio]})


def test_iemocap_classlabel_names_as_words_and_a_label_out_of_the_classes(tmp_path: Path) -> None:
    source, out = minis.iemocap(tmp_path), tmp_path / "out"
    result = _run("iemocap", [source], out)
    items = _items(out, "foundation")
    assert all(i.choices == ["angry", "happy", "neutral", "sad"] for i in items)
    assert [i.answer for i in items] == [label for _, label in minis.IEMOCAP_ROWS[:3]]
    assert [i.meta["label"] for i in items] == ["neu", "ang", "sad"]
    assert {i.task for i in items} == {"Speaker_Emotion_Recontion"} and items[0].uid == "iemocap-Ses01F_impro01_F000"
    assert result.rows == 4 and [r.field for r in result.rejected] == ["label"]
    assert "index 7" in result.rejected[0].reason
    _resumed("iemocap", [source], out, result)


def test_meld_gold_among_its_seven_emotions(tmp_path: Path) -> None:
    csv, audio = minis.meld(tmp_path)
    out = tmp_path / "out"
    result = _run("meld", [csv], out, named={"audio": [audio]})
    items = _items(out, "foundation")
    kept = [r for r in minis.MELD_ROWS if r[0] in (1, 2, 3)]
    assert [i.uid for i in items] == [f"meld-dia{r[5]}_utt{r[6]}" for r in kept]
    assert all(i.choices == list(MELD_EMOTIONS) for i in items)
    assert [i.choices[i.answer] for i in items] == [r[3] for r in kept]
    assert items[0].meta["Utterance"] == "Oh my God!"
    assert result.rows == 5 and [r.field for r in result.rejected] == ["Emotion", "audio"]
    assert "'bored'" in result.rejected[0].reason and "dia2_utt0" in result.rejected[1].reason


@pytest.mark.parametrize("per", ["recording", "utterance"])
def test_slurp_gold_and_three_seeded_distractors(tmp_path: Path, per: str) -> None:
    jsonl, audio = minis.slurp(tmp_path)
    out = tmp_path / "out"
    result = _run("slurp", [jsonl], out, named={"audio": [audio]}, options={"per": per})
    items = _items(out, "foundation")
    intents = {r["intent"] for r in minis.SLURP_ROWS}
    gold = {f"slurp-{r['slurp_id']}": r["intent"] for r in minis.SLURP_ROWS}
    expected = 5 if per == "recording" else 4
    assert len(items) == expected and result.rows == 5
    for item in items:
        base = item.uid if per == "utterance" else "-".join(item.uid.split("-")[:2])
        assert item.choices[item.answer] == gold[base] and len(set(item.choices)) == 4
        assert set(item.choices) <= intents and item.task == "Speaker_Intent_Classification"
        rng = seeded_rng(item.uid)  # the draw is the uid's: the same on every run
        others = sorted(intents - {gold[base]})
        drawn = [others[i] for i in rng.choice(len(others), size=3, replace=False)]
        assert set(item.choices) == {gold[base], *drawn}
    if per == "recording":
        assert [i.uid for i in items[:2]] == ["slurp-13804-a-1-headset", "slurp-13804-a-1"]
    assert [(r.field, r.uid) for r in result.rejected] == [
        ("audio", "slurp-13808-missing" if per == "recording" else "slurp-13808")
    ]


def test_seed_tts_texts_and_prompt_wavs(tmp_path: Path) -> None:
    source, out = minis.seed_tts(tmp_path), tmp_path / "out"
    result = _run("seed-tts", [source], out)
    items = _items(out, "speech_generation")
    good = minis.SEED_TTS_LINES[:2]
    assert [i.text for i in items] == [line[3] for line in good]
    assert [i.meta["prompt_text"] for i in items] == [line[1] for line in good]
    assert {i.task for i in items} == {"tts"} and {i.language for i in items} == {"en"}
    assert all(i.question == reference_prompt(i) for i in items)
    assert result.rows == 3 and [r.field for r in result.rejected] == ["audio"] and ":3" in result.rejected[0].where
    _resumed("seed-tts", [source], out, result)


def test_airbench_hub_foundation_and_chat_matched_as_the_official_import(tmp_path: Path) -> None:
    source, out = minis.airbench_hub(tmp_path), tmp_path / "out"
    result = _run("airbench-hub", [source], out)
    foundation, chat = _items(out, "foundation"), _items(out, "chat")
    assert [i.uid for i in foundation] == ["foundation-101", "foundation-102"]
    assert [i.choices[i.answer] for i in foundation] == ["happy", "Female"]
    assert foundation[0].choices == ["sad", "happy", "angry", "neutral"] and foundation[1].choices == ["Male", "Female"]
    assert foundation[1].notes and "normalising" in foundation[1].notes[0]
    assert [(i.uid, i.reference, i.meta_info) for i in chat] == [
        (f"chat-{r['uniq_id']}", r["answer_gt"], r["meta_info"]) for r in minis.AIRBENCH_CHAT
    ]
    assert result.rows == 5 and result.items == {"foundation": 2, "chat": 2}
    assert [(r.field, r.uid) for r in result.rejected] == [("answer_gt", "foundation-103")]
    only_chat = _run("airbench-hub", [source], tmp_path / "chat", config="Chat")
    assert only_chat.items == {"chat": 2}
    cache = tmp_path / "hub" / "datasets--lmms-lab--AIR_bench"  # the hub cache, read through refs/main
    (cache / "refs").mkdir(parents=True)
    (cache / "refs" / "main").write_text("0123abcd", encoding="utf-8")
    minis.airbench_hub(cache / "snapshots").rename(cache / "snapshots" / "0123abcd")
    cached = _run("airbench-hub", [cache], tmp_path / "cached")
    assert cached.items == {"foundation": 2, "chat": 2} and len(cached.rejected) == 1
    _resumed("airbench-hub", [source], out, result)


def test_airbench_release_through_import_official(tmp_path: Path) -> None:
    source, out = minis.airbench_release(tmp_path), tmp_path / "out"
    result = _run("airbench", [source], out)
    foundation, chat = _items(out, "foundation"), _items(out, "chat")
    assert [(i.uid, i.choices[i.answer]) for i in foundation] == [
        ("foundation-101", "happy"),
        ("foundation-102", "Female"),
    ]
    assert [i.uid for i in chat] == ["chat-201"] and chat[0].reference == minis.AIRBENCH_CHAT[0]["answer_gt"]
    assert all(i.audio.startswith("audio/airbench/") for i in [*foundation, *chat])
    assert result.rows == 5 and result.items == {"foundation": 2, "chat": 1}
    assert [(r.field, r.uid) for r in result.rejected] == [("answer_gt", "foundation-103"), ("audio", "chat-202")]
    assert read_dataset_card(out).counts["rejected_by_field"] == {"answer_gt": 1, "audio": 1}
    _resumed("airbench", [source], out, result)


def test_imported_folders_score_through_the_kit_with_the_oracle(tmp_path: Path) -> None:
    from airbench_nb.judge.run import judge_run_folder
    from airbench_nb.run_folder import RunFolder
    from airbench_nb.runner import infer_run_folder
    from airbench_nb.scoring import score_run_folder

    imports = {
        "clotho": ([minis.clotho(tmp_path)], "caption"),
        "covost2": ([minis.covost2(tmp_path)], "translation"),
        "iemocap": ([minis.iemocap(tmp_path)], "foundation"),
    }
    scores = {}
    for name, (sources, kind) in imports.items():
        data = tmp_path / f"data-{name}"
        _run(name, sources, data)
        folder = RunFolder(tmp_path / f"run-{name}", data=data)
        infer_run_folder(folder, ["baseline:oracle"], kinds=[kind])
        judge_run_folder(folder, ["rule"], kinds=[kind])
        _, table = score_run_folder(folder, kinds=[kind], reps=0)
        (key,) = [k for k in table if k.startswith("baseline:oracle")]
        scores[name] = table[key].official
    foundation = scores["iemocap"].foundation
    assert foundation.tasks["Speaker_Emotion_Recontion"].accuracy == 1.0
    assert foundation.tasks["Speaker_Emotion_Recontion"].n == 3 and foundation.failed == 0
    bleu = scores["covost2"].metric_sections["translation"]
    assert bleu.tasks["de-en"].n == 2 and bleu.tasks["de-en"].value == pytest.approx(100.0)  # its own reference
    cider = scores["clotho"].metric_sections["captioning"]
    assert cider.tasks["audio_captioning"].n == 2 and cider.failed == 0 and cider.tasks["audio_captioning"].value > 0
