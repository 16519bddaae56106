"""MMAU, MMAR and MMSU imported from miniature copies of their releases and Hugging Face copies (the real schemas and
quirks: MMAU's list category and 8-option item, the Hub's JSON-string choices, MMAR's null language, MMSU's empty
choice_d), every bad row rejected with file, row and field; an imported MMAU folder run through notebooks 03-05."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from airbench_nb.importing import ImportRequest, recipe_for, run_import
from airbench_nb.manifests import read_dataset_card, read_manifest
from tests.hf_minis import audio_feature, value, wav_bytes, write_parquet

MMAU_ROWS = [
    {
        "id": "mm-speech-1",
        "audio_id": "./test-mini-audios/mm-speech-1.wav",
        "question": "What is the emotion of the speaker?",
        "choices": ["happy", "sad", "angry", "neutral"],
        "answer": "sad",
        "dataset": "IEMOCAP",
        "task": "speech",
        "split": "test-mini",
        "category": "Emotion Recognition",
        "sub-category": "Emotion Flip Detection",
        "difficulty": "easy",
    },
    {
        "id": "mm-sound-2",
        "audio_id": "./test-mini-audios/mm-sound-2.wav",
        "question": "Which two sounds are heard?",
        "choices": ["dog and rain", "car and bird"],
        "answer": "car and bird",
        "dataset": "AudioSet",
        "task": "sound",
        "split": "test-mini",
        "category": ["Temporal Reasoning", "Event-Based Sound Reasoning"],  # one of the 13 list categories
        "sub-category": "Acoustic Scene Reasoning",
        "difficulty": "hard",
    },
    {
        "id": "mm-music-3",
        "audio_id": "./test-mini-audios/mm-music-3.wav",
        "question": "Which instrument plays the melody?",
        "choices": ["piano", "violin", "flute", "guitar", "cello", "trumpet", "harp", "drums"],  # 8 options
        "answer": "harp",
        "dataset": "MusicCaps",
        "task": "music",
        "split": "test-mini",
        "category": "Instrument Identification",
        "sub-category": "Melody",
        "difficulty": "medium",
    },
    {
        "id": "mm-bad-4",
        "audio_id": "./test-mini-audios/mm-bad-4.wav",
        "question": "What is heard?",
        "choices": ["a", "b"],
        "answer": "c",  # not among the choices
        "dataset": "x",
        "task": "sound",
        "split": "test-mini",
        "category": "c",
        "sub-category": "s",
        "difficulty": "easy",
    },
    {
        "id": "mm-missing-5",
        "audio_id": "./test-mini-audios/mm-missing-5.wav",  # no such file
        "question": "What is heard?",
        "choices": ["a", "b"],
        "answer": "a",
        "dataset": "x",
        "task": "sound",
        "split": "test-mini",
        "category": "c",
        "sub-category": "s",
        "difficulty": "easy",
    },
]


def _mmau_release(folder: Path) -> Path:
    (folder / "test-mini-audios").mkdir(parents=True)
    for k, row in enumerate(MMAU_ROWS):
        if "missing" not in row["id"]:
            (folder / row["audio_id"]).write_bytes(wav_bytes(200 + 60 * k, seconds=0.3))
    (folder / "mmau-test-mini.json").write_text(json.dumps(MMAU_ROWS, indent=1), encoding="utf-8")
    return folder / "mmau-test-mini.json"


def test_mmau_release_rows_become_items_and_bad_rows_are_named(tmp_path):
    source = _mmau_release(tmp_path / "MMAU")
    out = tmp_path / "mmau"
    result = run_import(ImportRequest(recipe=recipe_for("mmau"), out=out, positional=[source]))
    assert result.items == {"mmau": 3} and result.rows == 5
    assert [(r.uid, r.field) for r in result.rejected] == [("mm-bad-4", "answer"), ("mm-missing-5", "audio")]
    assert (
        result.rejected[0].where == f"{source}: row 3" and "'c' is not among the options" in result.rejected[0].reason
    )
    items = {item.uid: item for item in read_manifest(out / "mmau.jsonl")}
    for row in MMAU_ROWS[:3]:
        item = items[row["id"]]
        assert item.choices == row["choices"] and item.choices[item.answer] == row["answer"]
        assert item.question == row["question"] and item.task == row["task"]
    assert items["mm-sound-2"].category == ["Temporal Reasoning", "Event-Based Sound Reasoning"]
    assert len(items["mm-music-3"].choices) == 8 and items["mm-music-3"].answer_letter == "G"
    card = read_dataset_card(out)
    assert card.recipe.recipe == "mmau" and card.counts["rejected_by_field"] == {"answer": 1, "audio": 1}


def test_the_hub_copy_of_mmau_with_json_string_choices_gives_the_same_items(tmp_path):
    rows = MMAU_ROWS[:3]
    columns = {
        "id": [r["id"] for r in rows],
        "audio": [
            {"bytes": wav_bytes(200 + 60 * k, seconds=0.3), "path": f"{r['id']}.wav"} for k, r in enumerate(rows)
        ],
        "question": [r["question"] for r in rows],
        "choices": [json.dumps(r["choices"]) for r in rows],
        "answer": [r["answer"] for r in rows],
        "dataset": [r["dataset"] for r in rows],
        "task": [r["task"] for r in rows],
        "split": [r["split"] for r in rows],
        "category": [json.dumps(r["category"]) if isinstance(r["category"], list) else r["category"] for r in rows],
        "sub-category": [r["sub-category"] for r in rows],
        "difficulty": [r["difficulty"] for r in rows],
    }
    features = {name: value() for name in columns} | {"audio": audio_feature()}
    write_parquet(tmp_path / "hub" / "data" / "test_mini-00000-of-00001.parquet", columns, features)
    hub = run_import(ImportRequest(recipe=recipe_for("mmau"), out=tmp_path / "hub-out", positional=[tmp_path / "hub"]))
    release = run_import(
        ImportRequest(recipe=recipe_for("mmau"), out=tmp_path / "rel-out", positional=[_mmau_release(tmp_path / "M")])
    )
    assert hub.items == {"mmau": 3} and not hub.rejected and release.items == {"mmau": 3}

    def gist(folder):
        return [
            (i.uid, i.choices, i.answer, i.category, i.sub_category, i.difficulty)
            for i in read_manifest(folder / "mmau.jsonl")
        ]

    assert gist(tmp_path / "hub-out") == gist(tmp_path / "rel-out")
    item = read_manifest(tmp_path / "hub-out" / "mmau.jsonl")[0]
    assert "audio" not in item.meta  # the audio cell's bytes never reach meta


def test_mmar_and_mmsu_rows_with_their_quirks(tmp_path):
    (tmp_path / "mmar" / "audio").mkdir(parents=True)
    mmar = [
        {
            "id": "mmar-1",
            "audio_path": "./audio/mmar-1.wav",
            "question": "How many speakers?",
            "choices": ["one", "two", "three"],
            "answer": "two",
            "modality": "mix-sound-speech",
            "category": "Perception",
            "sub-category": "Counting",
            "language": None,  # MMAR's null language
        },
        {
            "id": "mmar-2",
            "audio_path": "../outside.wav",  # a path leaving the release
            "question": "Q?",
            "choices": ["a", "b"],
            "answer": "a",
            "modality": "sound",
            "category": "Signal",
            "sub-category": "x",
            "language": "en",
        },
    ]
    (tmp_path / "mmar" / "audio" / "mmar-1.wav").write_bytes(wav_bytes(300, seconds=0.3))
    (tmp_path / "outside.wav").write_bytes(wav_bytes(300, seconds=0.3))
    (tmp_path / "mmar" / "MMAR-meta.jsonl").write_text("\n".join(json.dumps(r) for r in mmar) + "\n")
    result = run_import(
        ImportRequest(
            recipe=recipe_for("mmar"), out=tmp_path / "o1", positional=[tmp_path / "mmar" / "MMAR-meta.jsonl"]
        )
    )
    assert result.items == {"mmar": 1} and [(r.uid, r.field) for r in result.rejected] == [("mmar-2", "audio")]
    (item,) = read_manifest(tmp_path / "o1" / "mmar.jsonl")
    assert item.language is None and item.task == "mix-sound-speech" and item.choices[item.answer] == "two"

    (tmp_path / "mmsu" / "wav").mkdir(parents=True)
    mmsu = [
        {
            "id": "s1",
            "audio_path": "s1.wav",
            "question": "Is the stress on the first syllable?",
            "choice_a": "yes",
            "choice_b": "no",
            "choice_c": "",
            "choice_d": None,
            "answer_gt": "no",
            "task_name": "stress_detection",
            "category": "perception",
            "sub-category": "phonology",
        },
        {
            "id": "s2",
            "audio_path": "s2.wav",
            "question": "Which word?",
            "choice_a": "cat",
            "choice_b": "cap",
            "choice_c": "cab",
            "choice_d": "can",
            "answer_gt": "cab",
            "task_name": "word_recognition",
            "category": "perception",
            "sub-category": "phonetics",
        },
    ]
    for row in mmsu:
        (tmp_path / "mmsu" / "wav" / row["audio_path"]).write_bytes(wav_bytes(250, seconds=0.3))
    (tmp_path / "mmsu" / "mmsu.jsonl").write_text("\n".join(json.dumps(r) for r in mmsu) + "\n")
    result = run_import(
        ImportRequest(
            recipe=recipe_for("mmsu"),
            out=tmp_path / "o2",
            positional=[tmp_path / "mmsu" / "mmsu.jsonl"],
            options={"audio_dir": "wav"},
        )
    )
    assert result.items == {"mmsu": 2} and not result.rejected
    first, second = read_manifest(tmp_path / "o2" / "mmsu.jsonl")
    assert first.choices == ["yes", "no"] and first.answer == 1
    assert second.choices == ["cat", "cap", "cab", "can"] and second.answer_letter == "C"


def _baseline_scores(baseline: str, items: list) -> dict[str, tuple[int, int, int]]:
    """``{protocol: (correct, n, failed)}`` of one baseline over the items, read by the rule judge."""
    import numpy as np

    from airbench_nb.judge.rule import rule_verdict
    from airbench_nb.models.base import GenerationParams, Prompt
    from airbench_nb.models.baselines import Baseline
    from airbench_nb.prompts import item_prompt
    from airbench_nb.records import Response
    from airbench_nb.scoring import score_run

    model = Baseline(baseline)
    prompts = [Prompt(i, item_prompt(i), np.zeros(160, dtype=np.float32), Path(i.audio)) for i in items]
    generations = model.generate(prompts, GenerationParams())
    responses = [Response(uid=i.uid, model=model.spec, text=g.text) for i, g in zip(items, generations, strict=True)]
    verdicts = [rule_verdict(i, r) for i, r in zip(items, responses, strict=True)]
    scores = score_run(items, responses, verdicts, protocol="both", reps=0)
    out = {}
    for protocol in (scores.official, scores.strict):
        (section,) = protocol.metric_sections.values()
        out[protocol.protocol] = (section.average.correct, section.average.n, section.failed)
    return out


def test_rows_with_repeated_or_empty_options_are_imported_as_released_and_scored(tmp_path):
    """MMAU test-mini repeats an option in 27 rows and MMAR has an empty option in 4: the official scripts score those
    rows, so they are imported as released (noted), and the oracle is right on them under both protocols."""
    mmau_rows = [
        {
            **MMAU_ROWS[0],
            "id": "mm-rep-1",
            "audio_id": "./test-mini-audios/mm-rep-1.wav",
            "question": "How many times does the bell ring?",
            "choices": ["four", "nine", "fourteen", "fourteen"],  # test-mini's own kind of row
            "answer": "fourteen",
        },
        {
            **MMAU_ROWS[0],
            "id": "mm-rep-2",
            "audio_id": "./test-mini-audios/mm-rep-2.wav",
            "choices": ["Male", "female", "male"],  # repeated once case is folded; the gold first
            "answer": "Male",
        },
    ]
    (tmp_path / "MMAU" / "test-mini-audios").mkdir(parents=True)
    for k, row in enumerate(mmau_rows):
        (tmp_path / "MMAU" / row["audio_id"]).write_bytes(wav_bytes(300 + 50 * k, seconds=0.3))
    (tmp_path / "MMAU" / "mmau-test-mini.json").write_text(json.dumps(mmau_rows), encoding="utf-8")
    result = run_import(
        ImportRequest(
            recipe=recipe_for("mmau"), out=tmp_path / "mmau", positional=[tmp_path / "MMAU" / "mmau-test-mini.json"]
        )
    )
    assert result.items == {"mmau": 2} and not result.rejected
    mmau = read_manifest(tmp_path / "mmau" / "mmau.jsonl")
    assert [(i.choices, i.answer) for i in mmau] == [(r["choices"], a) for r, a in zip(mmau_rows, [2, 0], strict=True)]
    assert mmau[0].notes == ["options 3 and 4 repeat 'fourteen' as released"]
    assert mmau[1].notes == ["options 1 and 3 repeat 'Male' as released (written 'Male', 'male': case aside)"]

    mmar_rows = [
        {
            "id": "mmar-empty-1",
            "audio_path": "./audio/mmar-empty-1.wav",
            "question": "Where was this recorded?",
            "choices": ["Mountain Canyon", "", "Open Grassland", "City Streets"],
            "answer": "Open Grassland",
            "modality": "sound",
            "category": "Semantic Layer",
            "sub-category": "Imagination",
            "language": None,
        },
        {
            "id": "mmar-empty-2",
            "audio_path": "./audio/mmar-empty-2.wav",
            "question": "Is it raining?",
            "choices": ["yes", "no", ""],
            "answer": "yes",
            "modality": "sound",
            "category": "Perception Layer",
            "sub-category": "Counting",
            "language": None,
        },
    ]
    (tmp_path / "MMAR" / "audio").mkdir(parents=True)
    for k, row in enumerate(mmar_rows):
        (tmp_path / "MMAR" / row["audio_path"]).write_bytes(wav_bytes(400 + 50 * k, seconds=0.3))
    (tmp_path / "MMAR" / "MMAR-meta.jsonl").write_text("\n".join(json.dumps(r) for r in mmar_rows) + "\n")
    result = run_import(
        ImportRequest(
            recipe=recipe_for("mmar"), out=tmp_path / "mmar", positional=[tmp_path / "MMAR" / "MMAR-meta.jsonl"]
        )
    )
    assert result.items == {"mmar": 2} and not result.rejected
    mmar = read_manifest(tmp_path / "mmar" / "mmar.jsonl")
    assert [i.choices for i in mmar] == [r["choices"] for r in mmar_rows] and [i.answer for i in mmar] == [2, 0]
    assert [i.notes for i in mmar] == [["option 2 is empty as released"], ["option 3 is empty as released"]]

    for items in (mmau, mmar):
        assert _baseline_scores("oracle", items) == {"official": (2, 2, 0), "strict": (2, 2, 0)}
        # first answers the first option's text: wrong on the first row, the gold on the second
        assert _baseline_scores("first", items) == {"official": (1, 2, 0), "strict": (1, 2, 0)}


def _import_command(name: str, root: Path) -> tuple[str, list[str]]:
    """The import command of one miniature corpus written under ``root``, and the kinds it writes."""
    if name == "mmau":
        return f"airbench-nb import mmau {_mmau_release(root / 'MMAU')} --out data/mmau", ["mmau"]
    if name == "sseu":
        from tests.minis_sseu_import import write_minis

        minis = write_minis(root / "corpora")
        command = (
            f"airbench-nb import sseu --vctk {minis.vctk} --desed {minis.desed} --maestro {minis.maestro} "
            "--out data/sseu --option utterances=3 --option snrs_per_utterance=1"
        )
        return command, ["transcription", "scene", "events", "joint"]
    raise ValueError(f"no miniature corpus {name!r}")


@pytest.mark.timeout(900)
@pytest.mark.parametrize("corpus", ["mmau", "sseu"])
def test_an_imported_folder_runs_through_notebooks_03_to_05(tmp_path, corpus):
    """As a user would: import, then ``airbench-nb run`` on the imported folder with two baselines and the rule judge;
    the oracle is perfect on every metric of the corpus's benchmark, the page shows that benchmark's section. (The
    other recipes' kinds are scored through the kit's API in their own tests: a notebook run costs about 30 s.)"""
    import_command, kinds = _import_command(corpus, tmp_path)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIRBENCH_CACHE": str(tmp_path / "cache"),
    }
    command = (
        f"{import_command} && "
        f"airbench-nb run --run-id {corpus} --no-html --notebooks 03_run_model,04_judge,05_analyze "
        f"-p manifest_dir=$PWD/data/{corpus} -p 'kinds={json.dumps(kinds)}' "
        '-p \'models=["baseline:oracle","baseline:first"]\' -p \'judges=["rule"]\' -p show=0'
    )  # show=0: notebook 03 plays no answer (seconds of spectrograms the assertions never read)
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = tmp_path / "reports" / corpus
    assert json.loads((run / "run.json").read_text(encoding="utf-8"))["status"] == "ok"
    page = (run / "index.html").read_text(encoding="utf-8")
    assert "<h2>Main table</h2>" not in page  # no AIR-Bench item
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    oracle = summary["baseline:oracle | chat judge -"]["strict"]["metric_sections"]
    if corpus == "mmau":
        assert "<h2>MMAU</h2>" in page
        assert "recipe mmau version 1: 5 rows read, 2 rejected" in page  # the import's rejections are shown
        assert "the import rejected 2 of 5 rows (1 answer, 1 audio)" in page
        notebooks = json.loads((run / "run.json").read_text(encoding="utf-8"))["notebooks"]
        executed = next(run / nb["output"] for nb in notebooks if nb["name"] == "05_analyze")
        shown = executed.read_text(encoding="utf-8")  # notebook 05 shows the benchmark's further tables
        assert "MMAU (test-mini): position bias" in shown  # (no rotated copy here: no circular table)
        for protocol in ("official", "strict"):
            section = summary["baseline:oracle | chat judge -"][protocol]["metric_sections"]["mmau"]
            assert section["average"]["value"] == 1.0 and section["average"]["n"] == 3
        first = summary["baseline:first | chat judge -"]["strict"]["metric_sections"]["mmau"]["average"]
        assert first["value"] == pytest.approx(0.0) and first["n"] == 3  # the gold is never the first option here
    else:
        assert "<h2>SSEU-Bench</h2>" in page
        assert {entry["value"] for entry in oracle["transcription"]["tasks"].values()} == {0.0}
        assert {entry["value"] for entry in oracle["scene"]["tasks"].values()} == {1.0}
        assert {entry["value"] for entry in oracle["events"]["tasks"].values()} == {1.0}


def test_questions_about_one_release_clip_share_a_cluster_and_widen_the_interval(tmp_path):
    from airbench_nb.judge.run import rule_verdict
    from airbench_nb.records import Response, cluster_of
    from airbench_nb.scoring import score_run

    # 30 release clips, 4 questions about each: every clip is written once per question, so only the release's
    # audio_id tells that the 4 questions are about one recording
    folder = tmp_path / "MMAU"
    (folder / "clips").mkdir(parents=True)
    rows = []
    for c in range(30):
        (folder / f"clips/c{c}.wav").write_bytes(wav_bytes(200 + 10 * c, seconds=0.2))
        for q in range(4):
            row = dict(MMAU_ROWS[0], id=f"c{c}-q{q}", audio_id=f"./clips/c{c}.wav")
            rows.append(row)
    (folder / "mmau.json").write_text(json.dumps(rows), encoding="utf-8")
    run_import(ImportRequest(recipe=recipe_for("mmau"), out=tmp_path / "out", positional=[folder / "mmau.json"]))
    items = read_manifest(tmp_path / "out" / "mmau.jsonl")
    assert len(items) == 120 and len({i.audio for i in items}) == 120  # one file per item
    assert items[0].meta["cluster"] == "./clips/c0.wav" and len({cluster_of(i) for i in items}) == 30
    # a model right on every question about half the clips: the clip is the unit of information
    responses = [
        Response(uid=i.uid, model="m", text=i.choices[i.answer] if int(i.uid[1:].split("-")[0]) % 2 else "none")
        for i in items
    ]
    verdicts = [rule_verdict(i, r) for i, r in zip(items, responses, strict=True)]
    section = score_run(items, responses, verdicts, protocol="strict", reps=1000).strict.metric_sections
    average = next(s for s in section.values() if s is not None).average
    assert average.value == 0.5 and average.clusters == 30 and "named by the data" in average.cluster_unit
    assert average.design_effect == pytest.approx(4.0, rel=0.25)
    assert average.ci_high - average.ci_low > 0.3  # about twice the item-level width (0.18)
