"""Position bias on MMAU, MMAR and MMSU: a small run whose answers are known, analysed and shown on the page.

Every benchmark's items have their gold spread evenly over the positions (MMAU, MMSU: 4 options, gold at each
position twice; MMAR: 3 options, each position thrice), with rotated copies of every item beside them (which must not
count). ``baseline:first`` always picks the first option, so it must be flagged; ``baseline:oracle`` picks the gold,
so its chosen positions are the gold ones; ``baseline:random``'s counts are checked against a count by hand from its
answers; ``planted:vague`` names no option at all, so nothing is answered and the test is undefined.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.analysis.choice_qa import ChoiceQAAnalysis
from airbench_nb.analysis.choice_qa_bias import choice_qa_bias_frame, position_label, position_unit
from airbench_nb.analysis.data import RunData, load_run
from airbench_nb.analysis.report import analyze_run
from airbench_nb.judge.run import judge_run_folder
from airbench_nb.manifests import read_records, write_manifest, write_records
from airbench_nb.records import LETTERS, Response, RunInfo, Verdict, mmar_item, mmau_item, mmsu_item
from airbench_nb.report_page import write_report_page
from airbench_nb.rotation import rotate_items
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import infer_run_folder

KINDS = ("mmau", "mmar", "mmsu")

MODELS = ("baseline:oracle", "baseline:first", "baseline:random")

VAGUE = "planted:vague"
"""A model whose every MMSU answer names no option (written by hand, judged by the rule judge: no verdict decides)."""

MMAU_OPTIONS = ["a dog", "a cat", "a cow", "a bird"]
MMAR_OPTIONS = ["Forest", "City", "Desert"]
MMSU_OPTIONS = ["a question", "a statement", "a command", "an exclamation"]

N_ITEMS = {"mmau": 8, "mmar": 9, "mmsu": 8}
"""Original items per benchmark."""


def _items(kind: str, audio: str) -> list:
    if kind == "mmau":
        return [
            mmau_item(
                {
                    "id": f"mmau-{k}",
                    "question": "What animal is heard?",
                    "choices": MMAU_OPTIONS,
                    "answer": MMAU_OPTIONS[k % 4],
                    "task": "sound",
                    "category": "Information Extraction",
                    "sub-category": "Acoustic Source Inference",
                    "difficulty": "easy",
                },
                audio,
            )
            for k in range(N_ITEMS["mmau"])
        ]
    if kind == "mmar":
        return [
            mmar_item(
                {
                    "id": f"mmar-{k}",
                    "question": "Where was this recorded?",
                    "choices": MMAR_OPTIONS,
                    "answer": MMAR_OPTIONS[k % 3],
                    "modality": "sound",
                    "category": "Perception Layer",
                    "sub-category": "Scene",
                    "language": None,
                },
                audio,
            )
            for k in range(N_ITEMS["mmar"])
        ]
    return [
        mmsu_item(
            {
                "id": f"mmsu-{k}",
                "question": "What is the speaker doing?",
                "choice_a": MMSU_OPTIONS[0],
                "choice_b": MMSU_OPTIONS[1],
                "choice_c": MMSU_OPTIONS[2],
                "choice_d": MMSU_OPTIONS[3],
                "answer_gt": MMSU_OPTIONS[k % 4],
                "task_name": "intonation_perception",
                "category": "perception",
                "sub-category": "phonology",
            },
            audio,
        )
        for k in range(N_ITEMS["mmsu"])
    ]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunFolder:
    folder = RunFolder(tmp_path_factory.mktemp("cq-bias") / "run")
    folder.data_dir.mkdir(parents=True)
    tone = 0.1 * np.sin(2 * np.pi * 440 * np.arange(8000) / 16000)
    rel = "audio/tone.wav"
    (folder.data_dir / rel).parent.mkdir(parents=True)
    sf.write(folder.data_dir / rel, tone, 16000)
    for kind in KINDS:
        originals = _items(kind, rel)
        write_manifest(folder.manifest(kind), [*originals, *rotate_items(originals)])
    infer_run_folder(folder, list(MODELS), kinds=list(KINDS))
    originals = _items("mmsu", rel)
    vague = [Response(uid=i.uid, model=VAGUE, text="I cannot tell from the audio.") for i in originals]
    write_records(folder.responses_file(VAGUE, "mmsu"), vague)
    judge_run_folder(folder, ["rule"], kinds=list(KINDS))
    now = datetime.now(UTC)
    info = RunInfo(run_id="run", started=now, ended=now, status="ok", notebooks=[], git_commit="abc123")
    (folder.path / "run.json").write_text(info.model_dump_json(indent=1))
    return folder


@pytest.fixture(scope="module")
def sections(run: RunFolder) -> dict[str, ChoiceQAAnalysis]:
    report = analyze_run(run.path, reps=20)
    return {kind: report.extra_section(kind, ChoiceQAAnalysis) for kind in KINDS}


def test_the_text_kinds_are_biased_by_position_and_mmsu_by_letter(sections: dict[str, ChoiceQAAnalysis]):
    assert [position_unit(k) for k in KINDS] == ["position", "position", "letter"]
    assert [sections[k].position_unit for k in KINDS] == ["position", "position", "letter"]
    assert position_label("C", "position") == "position 3" and position_label("C", "letter") == "C"


def test_the_first_option_picker_is_flagged_on_every_benchmark(sections: dict[str, ChoiceQAAnalysis]):
    for kind in KINDS:
        first = sections[kind].position_bias["baseline:first"]
        n = N_ITEMS[kind]
        assert (first.n, first.n_items) == (n, n), kind  # originals only: the rotated copies are not counted
        assert first.chosen["A"] == n and sum(first.chosen.values()) == n, kind
        assert first.p_value is not None and first.p_value < 0.01, kind
        assert first.letters_tested == list(LETTERS[: 3 if kind == "mmar" else 4]), kind
    # by hand: 8 items, gold 2 at each of 4 positions, all 8 chosen first: chi2 = (8-2)^2/2 + 3 * 2^2/2 = 24
    assert sections["mmau"].position_bias["baseline:first"].chi2 == pytest.approx(24.0)
    assert sections["mmau"].position_bias["baseline:first"].dof == 3
    # 9 items, gold 3 at each of 3 positions: (9-3)^2/3 + 2 * 3^2/3 = 18
    assert sections["mmar"].position_bias["baseline:first"].chi2 == pytest.approx(18.0)
    accuracy = sections["mmsu"].position_bias["baseline:first"].accuracy_by_gold
    assert accuracy == {"A": 1.0, "B": 0.0, "C": 0.0, "D": 0.0}


def test_the_oracle_is_not_flagged(sections: dict[str, ChoiceQAAnalysis]):
    for kind in KINDS:
        oracle = sections[kind].position_bias["baseline:oracle"]
        assert oracle.n == N_ITEMS[kind] and oracle.chosen == oracle.gold, kind
        assert oracle.chi2 == pytest.approx(0.0) and oracle.p_value is not None and oracle.p_value > 0.5, kind
        assert set(oracle.accuracy_by_gold.values()) - {None} == {1.0}, kind  # None: never gold (MMAR's D)
        assert sum(oracle.wrong_choice.values()) == 0, kind
    assert sections["mmau"].position_bias["baseline:oracle"].gold == {"A": 2, "B": 2, "C": 2, "D": 2}
    assert sections["mmar"].position_bias["baseline:oracle"].gold == {"A": 3, "B": 3, "C": 3, "D": 0}


def test_the_random_model_counts_equal_a_count_by_hand(run: RunFolder, sections: dict[str, ChoiceQAAnalysis]):
    for kind in KINDS:
        items = {i.uid: i for i in _items(kind, "a.wav")}
        chosen: Counter[str] = Counter()
        right: Counter[str] = Counter()
        for response in read_records(run.responses_file("baseline:random", kind), Response):
            item = items.get(response.uid)
            if item is None:
                continue  # a rotated copy
            text = (response.text or "").strip()
            pick = item.choices.index(text) if kind != "mmsu" else LETTERS.index(text)
            chosen[LETTERS[pick]] += 1
            right[LETTERS[item.answer]] += pick == item.answer
        gold = Counter(LETTERS[i.answer] for i in items.values())
        bias = sections[kind].position_bias["baseline:random"]
        assert sum(chosen.values()) == bias.n == N_ITEMS[kind], kind
        assert {k: v for k, v in bias.chosen.items() if v} == dict(chosen), kind
        assert {k: v for k, v in bias.gold.items() if v} == dict(gold), kind
        assert {k: v for k, v in bias.accuracy_by_gold.items() if v is not None} == {
            k: right[k] / gold[k] for k in gold
        }, kind


def test_a_model_that_names_no_option_has_no_test(run: RunFolder, sections: dict[str, ChoiceQAAnalysis]):
    vague = sections["mmsu"].position_bias[VAGUE]
    assert (vague.n, vague.n_items, vague.p_value) == (0, N_ITEMS["mmsu"], None) and vague.reason is not None
    assert set(vague.accuracy_by_gold.values()) == {0.0}  # strict: an item that names no option is wrong
    assert VAGUE not in sections["mmau"].position_bias  # it answered no MMAU item
    frame = choice_qa_bias_frame(load_run(run.path), "mmsu")
    rows = frame[frame["model"] == VAGUE]
    assert len(rows) == N_ITEMS["mmsu"] and rows["failed"].all() and rows["chosen_letter"].isna().all()
    assert set(frame["uid"]) == {i.uid for i in _items("mmsu", "a.wav")}  # the originals, not the rotated copies


def test_the_page_shows_the_table_naming_positions_or_letters(run: RunFolder, sections: dict[str, ChoiceQAAnalysis]):
    html = write_report_page(run.path)[0].read_text(encoding="utf-8")
    assert html.count("Position bias over the original items (strict)") == 3
    mmau = html[html.index("<h2>MMAU</h2>") : html.index("<h2>MMAR</h2>")]
    mmsu = html[html.index("<h2>MMSU</h2>") :]
    assert "favour an option's\nposition?" in mmau and "not letters" in mmau
    assert "favour an option's\nletter?" in mmsu and "not letters" not in mmsu
    assert "<td>position 1</td>" in mmau and "<td>8 of 8</td>" in mmau
    p = sections["mmau"].position_bias["baseline:first"].p_value
    assert p is not None and f"<td>{p:.2g}</td>" in mmau and "<td>100.0</td>" in mmau and "<td>25.0</td>" in mmau
    assert "<td>A</td>" in mmsu and "<td>0 of 8</td>" in mmsu


def test_a_repeated_option_is_chosen_as_the_first_of_its_text_and_copies_are_left_out(tmp_path):
    row = {
        "id": "dup",
        "question": "How many?",
        "choices": ["four", "nine", "fourteen", "fourteen"],
        "answer": "fourteen",
        "task": "speech",
    }
    item = mmau_item(row, "a.wav")
    copy = rotate_items([item])[1]
    responses = {u: Response(uid=u, model="m", text="fourteen") for u in (item.uid, copy.uid)}
    verdicts = [Verdict(uid=u, model="m", judge="rule", choice=3, correct=True) for u in (item.uid, copy.uid)]
    run = RunData(tmp_path, {item.uid: item, copy.uid: copy}, {"m": responses}, {"m": verdicts})
    frame = choice_qa_bias_frame(run, "mmau")
    assert list(frame["uid"]) == [item.uid] and item.answer == 2
    assert (frame.loc[0, "chosen"], frame.loc[0, "chosen_letter"], frame.loc[0, "gold_letter"]) == (2, "C", "C")


def test_notebook_05_gets_the_position_bias_and_circular_tables(run: RunFolder, sections: dict[str, ChoiceQAAnalysis]):
    """The section notebook 05 shows carries both further tables, one row per model, numbers as in analysis.json."""
    from airbench_nb.analysis.choice_qa import choice_qa_section
    from airbench_nb.analysis.report import RunAnalysis

    for kind in KINDS:
        section = choice_qa_section(RunAnalysis(run.path, reps=20), kind)
        (bias,) = [frame for title, frame in section.extra_frames.items() if "position bias" in title]
        (rotated,) = [frame for title, frame in section.extra_frames.items() if "circular evaluation" in title]
        expected = sections[kind]
        assert set(bias["model"]) == set(expected.position_bias) and set(rotated["model"]) == set(expected.circular)
        for row in bias.itertuples():
            assert row.answered == expected.position_bias[row.model].n
            p = expected.position_bias[row.model].p_value
            assert row.p_value == p if p is not None else np.isnan(row.p_value)
        for row in rotated.itertuples():
            assert row.circular_accuracy == expected.circular[row.model].circular_accuracy
