"""MMAU, MMAR and MMSU: items from release rows (quirks included), refusals, and a small run scored end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.analysis.choice_qa import ChoiceQAAnalysis
from airbench_nb.analysis.report import analyze_run
from airbench_nb.benchmarks import benchmark_of_kind
from airbench_nb.judge.rule import rule_verdict
from airbench_nb.judge.run import judge_responses, judge_run_folder
from airbench_nb.manifests import read_manifest, read_records, write_manifest
from airbench_nb.prompts import PromptSet, item_prompts, kind_prompts
from airbench_nb.records import (
    MMARItem,
    MMAUItem,
    MMSUItem,
    Response,
    RunInfo,
    Verdict,
    item_adapter,
    mmar_item,
    mmau_item,
    mmsu_item,
)
from airbench_nb.report_page import write_report_page
from airbench_nb.rotation import rotate_items
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import infer_run_folder
from airbench_nb.scoring import write_run_scores
from tests.openai_server import JudgeServer

# Rows in the releases' exact shapes. The 8-option MMAU row is test-mini's own (options and all, a stray prompt
# pasted into option B included); its category is a list in 13 rows of test-mini.
MMAU_ROW = {
    "id": "7a1dcecc-d303-4759-940b-5d02d2a8c77e",
    "audio_id": "./test-mini-audios/7a1dcecc-d303-4759-940b-5d02d2a8c77e.wav",
    "question": "According to the audio, what type of location can be inferred?",
    "choices": [
        "Lake",
        "AirBased on the given audio, what is the most likely setting?",
        "A cooking competition",
        "A motorsport racing event",
        "A live concert",
        "A political rallyport",
        "Forest",
        "Desert",
    ],
    "answer": "A motorsport racing event",
    "dataset": "AudioSet",
    "task": "sound",
    "split": "test-mini",
    "category": ["Reasoning"],
    "sub-category": "Eco-Acoustic Knowledge",
    "difficulty": "medium",
}
MMAR_ROW = {
    "id": "qx8hrhBZJ98_00-01-32_00-02-02",
    "audio_path": "./audio/qx8hrhBZJ98_00-01-32_00-02-02.wav",
    "question": "What type of natural environment might this music originate from",
    "choices": ["Mountain Canyon", "Dense Forest", "Open Grassland", "City Streets"],
    "answer": "Open Grassland",
    "modality": "mix-sound-music",
    "category": "Cultural Layer",
    "sub-category": "Professional Knowledge and Reasoning",
    "language": None,
    "source": "youtube",
    "url": "https://www.youtube.com/watch?v=qx8hrhBZJ98",
    "timestamp": "00:01:32,00:02:02",
    "thinking": "Throat singing carries over open land.",
    "cue": ["Throat Singing"],
    "rubric": [{"name": "Cue", "scoring_point": "1 point", "note": "", "choices": [0, 1]}],
}
MMSU_ROW = {
    "id": "mmsu_0001",
    "audio_path": "./audio/mmsu_0001.wav",
    "question": "Is the speaker asking a question or making a statement?",
    "choice_a": "a question",
    "choice_b": "a statement",
    "answer_gt": "a statement",
    "task_name": "intonation_perception",
    "category": "perception",
    "sub-category": "phonology",
    "sub-sub-category": "prosody",
    "linguistics_sub_discipline": "phonology",
}


# ------------------------------------------------------------------------------------------------------------
# rows into items


def test_an_mmau_row_keeps_its_list_category_and_its_eight_options():
    item = mmau_item(MMAU_ROW, "audio/mmau/7a1dcecc.wav")
    assert isinstance(item, MMAUItem) and item.kind == "mmau"
    assert len(item.choices) == 8 and item.answer == 3 and item.answer_letter == "D"
    assert item.category == ["Reasoning"] and item.category_label == "Reasoning"
    assert (item.task, item.sub_category, item.difficulty, item.split) == (
        "sound",
        "Eco-Acoustic Knowledge",
        "medium",
        "test-mini",
    )
    assert item.source_id == MMAU_ROW["id"] and item.uid == MMAU_ROW["id"] and item.dataset == "AudioSet"
    assert item.meta["audio_id"] == MMAU_ROW["audio_id"]
    again = item_adapter().validate_json(item.model_dump_json())  # a manifest line reads back as the same item
    assert again == item and benchmark_of_kind("mmau").title == "MMAU (test-mini)"


def test_the_hugging_face_copy_of_mmau_gives_its_options_as_a_json_string():
    row = {**MMAU_ROW, "choices": json.dumps(MMAU_ROW["choices"]), "category": "Information Extraction"}
    del row["audio_id"]
    item = mmau_item(row, "audio/x.wav", uid="mmau-0")
    assert (
        item.choices == MMAU_ROW["choices"] and item.uid == "mmau-0" and item.category_label == "Information Extraction"
    )


def test_the_hugging_face_copy_writes_list_categories_and_options_as_strings():
    # lmms-lab/mmau's columns are strings: a list category arrives written as one, options as JSON or a literal
    for written in ('["Reasoning"]', "['Reasoning']"):
        item = mmau_item({**MMAU_ROW, "category": written, "choices": str(MMAU_ROW["choices"])}, "a.wav")
        assert item.category == ["Reasoning"] and item.category_label == "Reasoning" and len(item.choices) == 8
    renamed = {k: v for k, v in MMAR_ROW.items() if k != "sub-category"} | {"subcategory": "Imagination"}
    assert mmar_item(renamed, "a.wav").sub_category == "Imagination"


def test_an_mmar_row_with_a_null_language_and_a_mixed_modality():
    item = mmar_item(MMAR_ROW, "audio/mmar/qx8.wav")
    assert isinstance(item, MMARItem)
    assert (item.task, item.modality, item.category, item.language, item.answer) == (
        "mix-sound-music",
        "mix-sound-music",
        "Cultural Layer",
        None,
        2,
    )
    assert item.meta["thinking"].startswith("Throat") and item.meta["rubric"][0]["name"] == "Cue"
    assert mmar_item({**MMAR_ROW, "language": "zh|en"}, "a.wav").language == "zh|en"


def test_an_mmsu_row_with_two_options_and_a_padded_gold():
    item = mmsu_item({**MMSU_ROW, "answer_gt": "a statement "}, "audio/mmsu/0001.wav")
    assert isinstance(item, MMSUItem) and item.choices == ["a question", "a statement"] and item.answer == 1
    assert item.answer_text == "a statement "  # kept as released: the official rule compares it as it is
    assert (item.task, item.category, item.sub_category, item.sub_sub_category) == (
        "intonation_perception",
        "perception",
        "phonology",
        "prosody",
    )
    assert item.subset_label == "perception / phonology"
    assert mmsu_item({**MMSU_ROW, "choice_c": "", "choice_d": None}, "a.wav").choices == ["a question", "a statement"]
    four = {**MMSU_ROW, "choice_c": "a command", "choice_d": "an exclamation", "answer_gt": "an exclamation"}
    assert mmsu_item(four, "a.wav").answer_letter == "D"


@pytest.mark.parametrize(
    ("reader", "row", "message"),
    [
        (mmau_item, {**MMAU_ROW, "answer": "A train station"}, r"MMAU row '7a1dcecc.*field 'answer' 'A train station'"),
        (mmau_item, {**MMAU_ROW, "choices": "[not json"}, "field 'choices' is a string but not a list written as JSON"),
        (mmau_item, {**MMAU_ROW, "choices": "__import__('os')"}, "field 'choices' is a string but not a list"),
        (mmau_item, {**MMAU_ROW, "category": 3}, "field 'category' must be a string or a list of strings"),
        (mmau_item, {**MMAU_ROW, "task": "speeches"}, r"MMAU row .*task"),
        (mmar_item, {**MMAR_ROW, "choices": ["Open Grassland", "open grassland ", ""], "answer": "x"}, "'x' is not"),
        (mmar_item, {**MMAR_ROW, "modality": "sound-music"}, "modality 'sound-music' is not one of MMAR's"),
        (mmsu_item, {**MMSU_ROW, "answer_gt": "a command"}, r"MMSU row 'mmsu_0001': field 'answer_gt'"),
        (mmsu_item, {**MMSU_ROW, "choice_d": "a command"}, "'choice_d' is given but 'choice_c' is not"),
        (mmsu_item, {**MMSU_ROW, "choice_c": "A question "}, r"MMSU row 'mmsu_0001': field 'choices' repeats"),
        (mmsu_item, {k: v for k, v in MMSU_ROW.items() if k != "question"}, "field 'question' must be"),
    ],
)
def test_a_row_that_would_need_a_guess_is_refused_naming_the_row_and_field(reader, row, message):
    with pytest.raises(ValueError, match=message):
        reader(row, "a.wav")


# ------------------------------------------------------------------------------------------------------------
# prompts and the rule judge


def test_mmau_and_mmar_ask_for_an_option_text_and_mmsu_for_a_letter():
    mmau = mmau_item(MMAU_ROW, "a.wav")
    text = kind_prompts(mmau, PromptSet())[0]
    assert "- A motorsport racing event" in text and "text of the correct option" in text and "D." not in text
    letters = item_prompts(mmsu_item(MMSU_ROW, "a.wav"), PromptSet())[0]
    assert "A. a question" in letters and "B. a statement" in letters


def test_a_fresh_process_asks_and_answers_the_text_kinds_without_importing_the_benchmarks():
    code = (
        "import sys, json\n"
        "from airbench_nb.records import mmau_item\n"
        "from airbench_nb.prompts import PromptSet, kind_prompts\n"
        "from airbench_nb.models.baselines import oracle_answer\n"
        "item = mmau_item(json.loads(sys.argv[1]), 'a.wav')\n"
        "print(json.dumps([kind_prompts(item, PromptSet())[0], oracle_answer(item), 'airbench_nb.benchmarks' in "
        "sys.modules]))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(MMAU_ROW)], capture_output=True, text=True, env=env, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    prompt, oracle, imported = json.loads(done.stdout)
    assert "- A motorsport racing event" in prompt and oracle == "A motorsport racing event" and not imported


def test_the_rule_judge_reads_an_option_text_before_a_letter_for_the_text_kinds():
    row = {**MMAR_ROW, "choices": ["C major", "G major", "D major", "A minor"], "answer": "C major"}
    item = mmar_item(row, "a.wav")
    verdict = rule_verdict(item, Response(uid=item.uid, model="m", text="C major."))
    assert (verdict.choice, verdict.correct) == (0, True)  # not the letter C
    assert rule_verdict(item, Response(uid=item.uid, model="m", text="The answer is D major")).choice == 2
    assert rule_verdict(item, Response(uid=item.uid, model="m", text="C major, not G major")).choice is None
    dogs = mmar_item({**MMAR_ROW, "choices": ["a dog", "a dog barking", "a cat"], "answer": "a dog barking"}, "a.wav")
    assert rule_verdict(dogs, Response(uid=dogs.uid, model="m", text="I hear a dog barking.")).correct is True
    mmsu = mmsu_item(MMSU_ROW, "a.wav")
    assert rule_verdict(mmsu, Response(uid=mmsu.uid, model="m", text="B")).correct is True


def test_an_llm_judge_reads_what_the_rule_cannot(tmp_path: Path):
    row = {**MMAR_ROW, "choices": ["a dog barking", "a car horn", "rain falling", "a bell ringing"]}
    items = [mmar_item({**row, "id": f"r{k}", "answer": gold}, "a.wav") for k, gold in enumerate(row["choices"][2:])]
    texts = ["rain falling", "It's the bell, ringing."]  # the rule reads the first; the second goes to the LLM
    responses = [Response(uid=i.uid, model="m", text=t) for i, t in zip(items, texts, strict=True)]
    with JudgeServer() as server:
        judge_responses(f"openai:judge-mini@{server.base_url}", items, responses, tmp_path / "v.jsonl", progress=False)
    verdicts = {v.uid: v for v in read_records(tmp_path / "v.jsonl", Verdict)}
    assert verdicts["r0"].raw.startswith("rule:") and verdicts["r0"].correct is True
    assert verdicts["r1"].choice == 3 and verdicts["r1"].correct is True and not verdicts["r1"].raw.startswith("rule:")


# ------------------------------------------------------------------------------------------------------------
# a small run, end to end


def _rows() -> dict[str, list[dict]]:
    mmau = []
    for k, (choices, gold, task, difficulty) in enumerate(
        [
            (["a dog", "a cat", "a cow", "a bird"], "a dog", "sound", "easy"),
            (["violin", "piano", "drums", "flute"], "piano", "music", "hard"),
            (["two", "three"], "two", "speech", "medium"),
            (["rain", "wind", "sea", "fire", "snow"], "fire", "sound", "medium"),
        ]
    ):
        mmau.append(
            {
                **MMAU_ROW,
                "id": f"mmau-{k}",
                "choices": choices,
                "answer": gold,
                "task": task,
                "difficulty": difficulty,
                "category": ["Reasoning"] if k == 0 else "Information Extraction",
                "sub-category": "Counting" if k % 2 else "Acoustic Source Inference",
            }
        )
    mmar = [
        {**MMAR_ROW, "id": f"mmar-{k}", "choices": choices, "answer": gold, "modality": modality}
        for k, (choices, gold, modality) in enumerate(
            [
                (["yes", "no"], "yes", "speech"),
                (["Forest", "City", "Desert"], "City", "mix-sound-speech"),
                (["one", "two", "three", "four", "five", "six"], "six", "sound"),
            ]
        )
    ]
    mmsu = [
        {**MMSU_ROW, "id": f"mmsu-{k}", "choice_c": "a command", "choice_d": "an exclamation", "answer_gt": gold}
        for k, gold in enumerate(["a question", "a statement", "a question", "an exclamation", "a question"])
    ]
    return {"mmau": mmau, "mmar": mmar, "mmsu": mmsu}


REPO = Path(__file__).resolve().parents[1]

READERS = {"mmau": mmau_item, "mmar": mmar_item, "mmsu": mmsu_item}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunFolder:
    folder = RunFolder(tmp_path_factory.mktemp("mcq") / "run")
    folder.data_dir.mkdir(parents=True)
    tone = 0.1 * np.sin(2 * np.pi * 440 * np.arange(8000) / 16000)
    for kind, rows in _rows().items():
        items = []
        for row in rows:
            rel = f"audio/{kind}/{row['id']}.wav"
            (folder.data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            sf.write(folder.data_dir / rel, tone, 16000)
            items.append(READERS[kind](row, rel))
        write_manifest(folder.manifest(kind), items)
    kinds = list(READERS)
    answered = infer_run_folder(folder, ["baseline:oracle", "baseline:first", "baseline:random"], kinds=kinds)
    assert all(s.answered == s.total for s in answered)
    judge_run_folder(folder, ["rule"], kinds=kinds)
    now = datetime.now(UTC)
    info = RunInfo(run_id="run", started=now, ended=now, status="ok", notebooks=[], git_commit="abc123")
    (folder.path / "run.json").write_text(info.model_dump_json(indent=1))
    return folder


def _sections(run: RunFolder) -> dict[str, dict]:
    _, table = write_run_scores(run, kinds=list(READERS), reps=100)
    out: dict[str, dict] = {}
    for scores in table.values():
        for protocol in scores.protocols():
            for name, section in (protocol.metric_sections or {}).items():
                out.setdefault(protocol.model, {})[(protocol.protocol, name)] = section
    return out


def test_the_oracle_scores_everything_and_first_matches_a_hand_count(run: RunFolder):
    sections = _sections(run)
    for protocol in ("official", "strict"):
        for name, n in (("mmau", 4), ("mmar", 3), ("mmsu", 5)):
            oracle = sections["baseline:oracle"][(protocol, name)]
            assert (oracle.average.value, oracle.average.n, oracle.failed) == (1.0, n, 0), (protocol, name)
    first = sections["baseline:first"]
    # MMAU: option A is gold in items 0 and 2; MMAR: in item 0; MMSU: option A ("a question") in items 0, 2 and 4
    for protocol in ("official", "strict"):
        assert first[(protocol, "mmau")].average.correct == 2 and first[(protocol, "mmau")].average.n == 4
        assert first[(protocol, "mmar")].average.correct == 1 and first[(protocol, "mmar")].average.n == 3
        assert first[(protocol, "mmsu")].average.correct == 3 and first[(protocol, "mmsu")].average.n == 5
    mmau = first[("strict", "mmau")]
    assert {k: (e.correct, e.n) for k, e in mmau.tasks.items()} == {"sound": (1, 2), "music": (0, 1), "speech": (1, 1)}
    assert {k: (e.correct, e.n) for k, e in mmau.categories.items()} == {
        "Reasoning": (1, 1),
        "Information Extraction": (1, 3),
    }
    assert set(mmau.measures) == {"difficulty easy", "difficulty hard", "difficulty medium"}
    assert mmau.measures["difficulty easy"].correct == 1 and mmau.average.ci_low is not None
    assert set(first[("strict", "mmsu")].subsets) == {"perception / phonology"}


def test_the_manifests_read_back_and_the_analysis_and_page_show_the_three_benchmarks(run: RunFolder):
    assert [i.answer for i in read_manifest(run.manifest("mmsu"))] == [0, 1, 0, 3, 0]
    report = analyze_run(run.path, reps=100)
    for name, title in (("mmau", "MMAU (test-mini)"), ("mmar", "MMAR"), ("mmsu", "MMSU")):
        data = report.extra_section(name, ChoiceQAAnalysis)
        assert data.title == title and set(data.models) == {"baseline:oracle", "baseline:first", "baseline:random"}
        oracle = data.models["baseline:oracle"]
        assert oracle.official is not None and oracle.strict is not None
        assert oracle.official.overall.value == oracle.strict.overall.value == 1.0
        assert oracle.official_minus_strict == 0.0
    mmau = report.extra_section("mmau", ChoiceQAAnalysis).models["baseline:first"].strict
    assert mmau is not None and mmau.difficulties["easy"].value == 1.0 and "Counting" in mmau.sub_categories
    index, _ = write_report_page(run.path)
    html = index.read_text(encoding="utf-8")
    for title in ("MMAU", "MMAR", "MMSU"):
        assert f"<h2>{title}</h2>" in html
    assert html.index("<h2>MMAU</h2>") < html.index("<h2>MMAR</h2>") < html.index("<h2>MMSU</h2>")
    assert "word match" in html and "Per task, category, sub-category and difficulty" in html


# ------------------------------------------------------------------------------------------------------------
# circular evaluation


def test_rotated_copies_are_left_out_of_the_scores_and_read_by_circular_evaluation(tmp_path: Path):
    folder = RunFolder(tmp_path / "rotated")
    folder.data_dir.mkdir(parents=True)
    tone = 0.1 * np.sin(2 * np.pi * 440 * np.arange(8000) / 16000)
    for kind, rows in _rows().items():
        originals = []
        for row in rows:
            rel = f"audio/{kind}/{row['id']}.wav"
            (folder.data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            sf.write(folder.data_dir / rel, tone, 16000)
            originals.append(READERS[kind](row, rel))
        copies = rotate_items(originals)
        assert all(c.answer_text == c.choices[c.answer] for c in copies)  # the gold text travels with the rotation
        write_manifest(folder.manifest(kind), [*originals, *copies])
    kinds = list(READERS)
    infer_run_folder(folder, ["baseline:oracle", "baseline:first"], kinds=kinds)
    judge_run_folder(folder, ["rule"], kinds=kinds)
    _, table = write_run_scores(folder, kinds=kinds, reps=0)
    for scores in table.values():
        assert scores.strict is not None and scores.strict.metric_sections["mmau"].average.n == 4  # originals only
    report = analyze_run(folder.path, reps=50)
    mmau = report.extra_section("mmau", ChoiceQAAnalysis).circular
    oracle, first = mmau["baseline:oracle"], mmau["baseline:first"]
    assert (oracle.items, oracle.circular_accuracy, oracle.consistent_rate) == (4, 1.0, 1.0)
    assert oracle.rotations == 4 + 4 + 2 + 4  # 4, 4, 2 and 5 options: every rotation up to four, four beyond
    assert first.circular_accuracy == 0.0 and first.consistent_rate == 0.0  # always option A: never the same text
    mmsu = report.extra_section("mmsu", ChoiceQAAnalysis).circular
    assert mmsu["baseline:oracle"].circular_accuracy == 1.0 and mmsu["baseline:first"].circular_accuracy == 0.0
    now = datetime.now(UTC)
    info = RunInfo(run_id="rotated", started=now, ended=now, status="ok", notebooks=[], git_commit="abc123")
    (folder.path / "run.json").write_text(info.model_dump_json(indent=1))
    html = write_report_page(folder.path)[0].read_text(encoding="utf-8")
    assert html.count("Circular evaluation over the run's rotated copies") == 3
