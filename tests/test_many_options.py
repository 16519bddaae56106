"""Closed-set items of up to 26 options (the tiered benchmark's Tier A gives 23): records, extraction, official and
strict scoring, rotation, position bias, prompts, baselines and annotation, with AIR-Bench's A-D unchanged."""

from __future__ import annotations

import json
import string
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from scipy.stats import chisquare

from airbench_nb.analysis.circular import circular
from airbench_nb.analysis.data import FOUNDATION_COLUMNS
from airbench_nb.analysis.position_bias import frame_letters, letter_confusion, position_bias, position_bias_frame
from airbench_nb.annotate import AnnotationSession, key_action
from airbench_nb.judge.extract import extract_choice, official_extract, official_letters, reading_letters
from airbench_nb.judge.llm import parse_judge_letter
from airbench_nb.judge.rule import rule_verdict
from airbench_nb.models.base import GenerationParams, Prompt
from airbench_nb.models.baselines import Baseline
from airbench_nb.official import official_result_row
from airbench_nb.prompts import PromptSet, foundation_prompt
from airbench_nb.records import LETTERS, MAX_CHOICES, AnnotationPair, FoundationItem, Response
from airbench_nb.rotation import MANY_OPTIONS_ROTATIONS, rotate_items, rotation_offsets
from airbench_nb.scoring import official_foundation_correct, score_official_files, strict_foundation

TASK = "Acoustic_Scene_Classification"
FINE = [
    "police siren",
    "ambulance siren",
    "fire truck siren",
    "church bell",
    "bicycle bell",
    "doorbell",
    "smoke alarm",
    "alarm clock",
    "truck reversing beeper",
    "car engine idling",
    "motorcycle engine",
    "lawn mower",
    "dripping tap",
    "pouring water",
    "flowing stream",
    "door knock",
    "footsteps on gravel",
    "footsteps on wood",
    "dog barking",
    "cat meowing",
    "rooster crowing",
    "thunder",
    "applause",
]
"""23 fine classes, as the tiered benchmark's Tier A offers (lettered A-W)."""
SIX_MORE = ["helicopter", "train horn", "typing", "crowd", "wind", "rain"]


def item(n: int = 23, answer: int = 10, uid: str = "t0") -> FoundationItem:
    choices = (FINE + SIX_MORE)[:n]
    return FoundationItem(
        uid=uid,
        dataset="tiered",
        audio=f"{uid}.wav",
        question="What made this sound?",
        task=TASK,
        choices=choices,
        answer=answer,
    )


# ------------------------------------------------------------------------------------------------ records


def test_items_of_2_to_26_options_validate_and_27_do_not():
    assert LETTERS == string.ascii_uppercase and MAX_CHOICES == 26
    for n in (2, 4, 5, 23, 26):
        it = item(n, answer=n - 1)
        assert it.answer_letter == LETTERS[n - 1]
    with pytest.raises(ValidationError, match="at most 26"):
        FoundationItem(
            uid="x", dataset="d", audio="x.wav", question="q", task=TASK, choices=[f"c{i}" for i in range(27)], answer=0
        )
    with pytest.raises(ValidationError, match="not an index"):
        item(23, answer=23)


def test_an_old_four_option_record_reads_unchanged():
    old = {
        "uid": "f1",
        "dataset": "d",
        "audio": "a.wav",
        "question": "Which?",
        "task": TASK,
        "choices": ["a car horn", "a dog barking", "rain", "a bell"],
        "answer": 1,
        "schema_version": 1,
    }
    read = FoundationItem.model_validate(old)
    assert read.choices == old["choices"] and read.answer_letter == "B"
    assert FoundationItem.model_validate_json(read.model_dump_json()) == read


# ------------------------------------------------------------------------------------------------ extraction

CHAIN = (
    "The clip opens with a steady tone that rises and falls. A siren would sweep; I hear no sweep, so options A "
    "and B seem unlikely. It could be C or D, but the partials ring like metal.\n"
)
"""A chain of thought that names several options and uses the words "A" and "I" before its final answer."""


@pytest.mark.parametrize("letter", list(LETTERS))
@pytest.mark.parametrize(
    "ending", ["So the answer is ({k}).", "Answer: {k}", "**{k}**", "Final answer: **{k}**", "The answer is {k}."]
)
def test_every_letter_is_read_at_the_end_of_a_chain_of_thought(letter, ending):
    choices = (FINE + SIX_MORE)[:26]
    result = extract_choice(CHAIN + ending.format(k=letter), choices)
    assert result.letter == letter, result.reason
    assert "final" in result.reason


def test_final_answer_on_the_same_line_as_the_reasoning():
    result = extract_choice("It rises and falls slowly, a wail; so the answer is (K).", FINE)
    assert result.letter == "K"
    assert extract_choice("Answer: K. fire truck siren", FINE).letter is None  # K is 'motorcycle engine'
    assert extract_choice("Answer: K. motorcycle engine", FINE).letter == "K"


@pytest.mark.parametrize(
    "prose",
    [
        "I think it is a siren of some kind.",
        "A dog could be barking, I am not sure.",
        "I hear a bell, a knock and a car.",
        "The answer is a siren.",
        "answer: i think it is a bell",
        "I would say a bell.",
    ],
)
def test_the_words_a_and_i_in_prose_are_not_letters(prose):
    result = extract_choice(prose, FINE)
    assert result.letter not in ("A", "I"), result.reason


def test_a_capital_a_or_i_stated_as_the_answer_is_read():
    assert extract_choice("I listened twice.\nThe answer is I.", FINE).letter == "I"
    assert extract_choice("I listened twice.\nAnswer: A", FINE).letter == "A"
    assert extract_choice("I", FINE).letter == "I"
    assert extract_choice("Answer: I think it is K", FINE).letter == "K"


@pytest.mark.parametrize("answer", ["X", "Answer: X", "So the answer is (Y).", "Reasoning here.\n**Z**"])
def test_a_letter_beyond_the_items_options_is_refused(answer):
    result = extract_choice(answer, FINE)  # 23 options: A-W
    assert result.choice is None
    assert "not an option" in result.reason
    assert extract_choice("So the answer is (E).", FINE[:4]).choice is None  # 4 options: E is refused too


def test_unsure_chains_abstain():
    assert extract_choice(CHAIN + "It is C or D.", FINE).choice is None  # several options, no final answer
    assert extract_choice("Answer: K, or maybe L", FINE).choice is None
    assert extract_choice("Options C and K are close; I cannot tell.", FINE).choice is None


def test_letters_read_in_prose_stay_a_to_d_for_small_items():
    assert reading_letters(2) == reading_letters(4) == "ABCD"
    assert reading_letters(23) == LETTERS[:23]
    # "It is E major" on a four-option item: E is no letter there, the option text decides (as before)
    keys = ["C major", "D minor", "E major", "F major"]
    assert extract_choice("It is E major.", keys).letter == "C"


def test_the_llm_judge_reply_reads_letters_past_d_for_many_options():
    assert parse_judge_letter("K", 23) == (10, None)
    assert parse_judge_letter("K", 4)[1].startswith("judge named option K")
    assert parse_judge_letter("I think it is K", 23)[0] is None  # the pronoun is not option I
    assert parse_judge_letter("I", 23) == (8, None)


# ------------------------------------------------------------------------------------------------ official, strict


def test_official_rule_generalised_and_a_to_d_kept():
    assert official_letters(2) == official_letters(4) == "ABCD"
    assert official_letters(23) == LETTERS[:23]
    four = FINE[:4]
    assert official_extract("E", four).letter is None and official_extract("C", FINE[:2]).letter == "C"
    # the scripts' flaw, generalised: "The ..." reads T on an item that has a T
    assert official_extract("The answer is K", FINE).letter == "T"
    assert official_extract("The answer is K", four).letter is None
    assert official_extract("xK.", FINE).letter == "K"  # second-to-last character
    assert official_extract("xX.", FINE).letter is None  # X is not one of A-W


def test_strict_and_official_scoring_of_a_23_option_item():
    it = item(23, answer=10)
    cases = {  # strict: right, wrong, or None for an abstention (which strict scoring counts wrong)
        "Reasoning.\nSo the answer is (K).": True,
        "K": True,
        "Answer: L": False,
        "I cannot tell.": None,
        "zzz": None,
    }
    for text, strict_expected in cases.items():
        verdict = rule_verdict(it, Response(uid=it.uid, model="m", text=text))
        correct, _reason = strict_foundation(Response(uid=it.uid, model="m", text=text), verdict)
        assert correct == strict_expected, text
    assert official_foundation_correct("K", 23, 10)[0] is True
    assert official_foundation_correct("Answer: L", 23, 10)[0] is False  # A read, counts wrong
    assert official_foundation_correct("Reasoning.\nSo the answer is (K).", 23, 10)[0] is False  # R read
    assert official_foundation_correct("zzz", 23, 10)[0] is None  # dropped
    assert official_foundation_correct("I cannot tell.", 23, 10)[0] is False  # I is a letter of A-W: wrong


def test_official_result_files_of_23_options_score_under_both_protocols(tmp_path: Path):
    responses = ["K", "So the answer is (K).", "Answer: C", "W", "zzz", "Reasoning.\n**K**"]
    path = tmp_path / "foundation.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for i, text in enumerate(responses):
            row = official_result_row(item(23, answer=10, uid=f"t{i}"), text)
            assert row["choice_w"] == FINE[22] and "choice_x" not in row
            handle.write(json.dumps(row) + "\n")
    scores = score_official_files(path, reps=0)
    strict = scores.strict.foundation.subsets[f"{TASK}_tiered"]
    official = scores.official.foundation.subsets[f"{TASK}_tiered"]
    # strict: K, K, C, W, abstain, K -> 3 right of 6 (the abstention counts wrong)
    assert (strict.n, strict.correct) == (6, 3)
    # official: K right; S ("So ..."), A ("Answer: C"), W and R ("Reasoning.**K**") wrong; "zzz" dropped
    assert (official.n, official.correct) == (5, 1)
    assert scores.official.foundation.invalid == 0


def test_a_gap_in_many_choices_is_refused_by_strict(tmp_path: Path):
    row = official_result_row(item(23, answer=1), "B")
    del row["choice_e"]
    path = tmp_path / "gap.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    scores = score_official_files(path, reps=0)
    assert scores.strict.foundation.invalid == 1
    assert "choice_w is given without choice_e" in scores.strict.foundation.errors[0]


# ------------------------------------------------------------------------------------------------ rotation


def test_rotation_of_a_23_option_item_is_bounded_and_keeps_the_gold_text():
    it = item(23, answer=10)
    assert rotation_offsets(23) == [0, 5, 11, 17]
    assert len(rotation_offsets(23)) == MANY_OPTIONS_ROTATIONS
    copies = rotate_items([it])
    assert [c.meta["rotation"] for c in copies] == [0, 5, 11, 17]
    for copy in copies:
        assert copy.choices[copy.answer] == "motorcycle engine"
        assert sorted(copy.choices) == sorted(it.choices)
    assert [c.answer for c in copies] == [10, 15, 21, 4]  # the gold visits the whole list
    every = rotate_items([it], rotations=23)
    assert sorted(c.answer for c in every) == list(range(23))
    assert [c.meta["rotation"] for c in rotate_items([it], rotations=2)] == [0, 11]
    # up to four options: unchanged (every rotation, or the first few)
    assert rotation_offsets(4) == [0, 1, 2, 3] and rotation_offsets(4, 2) == [0, 1] and rotation_offsets(2) == [0, 1]
    with pytest.raises(ValueError, match="at least 1"):
        rotation_offsets(23, 0)


def test_circular_evaluation_of_rotated_23_option_items():
    copies = rotate_items([item(23, answer=10, uid="a"), item(23, answer=3, uid="b")])
    rows = []
    for copy in copies:
        knows = copy.meta["rotation_of"] == "a"  # answers "a" right every time, always says A on "b"
        chosen = copy.answer if knows else 0
        rows.append(
            {
                "model": "m",
                "uid": copy.uid,
                "rotation_of": copy.meta["rotation_of"],
                "rotation": copy.meta["rotation"],
                "correct": chosen == copy.answer,
                "chosen_text": copy.choices[chosen],
            }
        )
    frame = pd.DataFrame(rows).reindex(columns=list(FOUNDATION_COLUMNS))
    frame["correct"] = frame["correct"].astype("boolean")
    result = circular(frame)["m"]
    assert result.items == 2 and result.rotations == 8
    assert result.circular_accuracy == 0.5
    assert result.consistent_rate == 0.5  # "b" got four different option texts


# ------------------------------------------------------------------------------------------------ position bias


def bias_frame(rows: list[tuple[int, int, int | None]], model: str = "m") -> pd.DataFrame:
    """Rows of (n_choices, gold, chosen) for one model; chosen None is a failure."""
    records = []
    for i, (n, gold, chosen) in enumerate(rows):
        failed = chosen is None
        records.append(
            {
                "model": model,
                "uid": f"u{i}",
                "task": TASK,
                "category": "sound",
                "n_choices": n,
                "gold": gold,
                "gold_letter": LETTERS[gold],
                "chosen": chosen,
                "chosen_letter": None if failed else LETTERS[chosen],
                "correct": False if failed else chosen == gold,
                "failed": failed,
            }
        )
    frame = pd.DataFrame(records).reindex(columns=list(FOUNDATION_COLUMNS))
    frame["chosen"] = frame["chosen"].astype("Int64")
    frame["correct"] = frame["correct"].astype("boolean")
    return frame


def planted(seed: int, n: int = 690, prefer: dict[int, float] | None = None, sizes: tuple[int, ...] = (23,)):
    """A guesser on balanced items of ``sizes`` options that says a planted letter with the given probabilities."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        size = sizes[i % len(sizes)]
        gold = (i // len(sizes)) % size
        chosen = None
        for letter, p in (prefer or {}).items():
            if letter < size and rng.random() < p:
                chosen = letter
                break
        rows.append((size, gold, int(rng.integers(size)) if chosen is None else chosen))
    return bias_frame(rows)


@pytest.mark.parametrize("null", ["gold", "uniform"])
def test_planted_bias_on_23_options_is_detected(null):
    result = position_bias(planted(seed=1, prefer={6: 0.15}), null=null)["m"]  # G, 15% on top of chance
    assert list(result.chosen) == list(LETTERS[:23])
    assert result.dof == 22
    assert result.p_value is not None and result.p_value < 0.01
    assert max(result.chosen, key=result.chosen.get) == "G"


@pytest.mark.parametrize("null", ["gold", "uniform"])
def test_uniform_answers_on_23_options_are_not_flagged(null):
    p_values = [position_bias(planted(seed=seed), null=null)["m"].p_value for seed in range(20)]
    assert all(p is not None for p in p_values)
    assert sum(p < 0.05 for p in p_values) <= 3, p_values  # nominal 1 of 20


def test_items_of_different_sizes_pool_under_the_uniform_null():
    # a uniform guesser on 2-option and 23-option items alike: A and B are chosen far more often than C-W
    frames = [planted(seed=seed, n=920, sizes=(2, 23)) for seed in range(20)]
    p_values = [position_bias(frame, null="uniform")["m"].p_value for frame in frames]
    assert sum(p < 0.05 for p in p_values) <= 3, p_values  # nominal 1 of 20
    result = position_bias(frames[0], null="uniform")["m"]
    # expected A = 460/2 + 460/23 = 250, C = 460/23 = 20: the hand computation
    assert result.expected["A"] == pytest.approx(460 / 2 + 460 / 23)
    assert result.expected["C"] == pytest.approx(460 / 23)
    # a test that ignored the items' own sizes (uniform over A-W for every item) would call it biased
    observed = [result.chosen[k] for k in LETTERS[:23]]
    assert chisquare(observed).pvalue < 1e-10


def test_letters_reported_follow_the_frame():
    four = bias_frame([(4, 0, 0), (4, 1, 2)])
    assert frame_letters(four) == "ABCD"
    assert list(position_bias(four)["m"].chosen) == list("ABCD")
    many = bias_frame([(4, 0, 0), (23, 22, 5)])
    assert frame_letters(many) == LETTERS[:23]
    assert len(position_bias_frame(position_bias(many))) == 23
    confusion = letter_confusion(many)
    assert list(confusion.columns) == list(LETTERS[:23]) and confusion.loc[("m", "W"), "F"] == 1
    with pytest.raises(ValueError, match="unknown null"):
        position_bias(many, null="flat")


# ------------------------------------------------------------------------------------------------ prompts, baselines


def test_prompt_lists_every_option_letter():
    text = foundation_prompt(item(23))
    assert "\nW. applause" in text and "\nX." not in text
    assert "you may only choose one of A, B, C" in text and ", V, W." in text
    cot = foundation_prompt(item(23), PromptSet.named("cot"))
    assert "'Answer: X' where X is one of A, B" in cot
    official = foundation_prompt(item(23), PromptSet.named("official"))
    assert "A or B or C or D." not in official and "\nW. applause" in official
    four = foundation_prompt(item(4, answer=0))
    assert "from options A, B, C, and D" in four and "you may only choose A or B or C or D." in four


@pytest.mark.parametrize("name", ["oracle", "random", "first"])
def test_baselines_answer_23_options(name):
    items = [item(23, answer=i % 23, uid=f"b{i}") for i in range(46)]
    prompts = [Prompt(item=it, text="", audio=np.zeros(160, np.float32), audio_path=Path("x.wav")) for it in items]
    answers = [g.text for g in Baseline(name, seed=3).generate(prompts, GenerationParams())]
    read = [extract_choice(a, it.choices).choice for a, it in zip(answers, items, strict=True)]
    assert all(r is not None for r in read)
    accuracy = float(np.mean([r == it.answer for r, it in zip(read, items, strict=True)]))
    if name == "oracle":
        assert accuracy == 1.0
    elif name == "first":
        assert set(answers) == {"A"}
    else:
        assert len(set(answers)) > 10 and max(LETTERS.index(a) for a in answers) > 3  # letters past D
        assert accuracy < 0.3


# ------------------------------------------------------------------------------------------------ annotation


def pair(n: int, pair_id: str) -> AnnotationPair:
    return AnnotationPair(
        pair_id=pair_id,
        kind="foundation",
        uid=pair_id,
        model="m",
        task=TASK,
        category="sound",
        stratum="sound",
        question="What made this sound?",
        audio="x.wav",
        data_root=".",
        choices=(FINE + SIX_MORE)[:n],
        response="So the answer is (K).",
    )


def test_label_k_accepted_for_23_options_and_refused_for_4(tmp_path: Path):
    many, four = pair(23, "m|many"), pair(4, "m|four")
    assert key_action(many, "k") == ("label", {"choice": 10})
    assert key_action(four, "k") is None
    session = AnnotationSession([many, four], tmp_path / "labels.jsonl", "alice")
    written = session.label(choice=10)
    assert written.pair_id == "m|many" and written.choice == 10
    assert session.current.pair_id == "m|four"
    with pytest.raises(ValueError, match="not one of the pair's 4 options"):
        session.label(choice=10)


def test_keys_that_are_options_of_a_large_pair():
    many, four = pair(23, "m|many"), pair(4, "m|four")
    assert key_action(many, "n") == ("label", {"choice": 13})  # N is an option here
    assert key_action(many, "u") == ("label", {"choice": 20})
    assert key_action(many, "x") == ("label", {"unclear": True})  # X is past W: still unclear
    assert key_action(pair(26, "m|26"), "x") == ("label", {"choice": 23})
    assert key_action(many, "ArrowRight") == ("skip", {}) and key_action(many, "Backspace") == ("undo", {})
    assert key_action(many, "0") == ("label", {"unclear": True})
    assert key_action(four, "n") == ("skip", {}) and key_action(four, "u") == ("undo", {})


def test_agreement_reads_label_k_on_23_options_and_refuses_it_on_4():
    from airbench_nb.analysis.agreement.labels import resolve_labels
    from airbench_nb.manifests import ManifestError
    from airbench_nb.records import Label

    many, four = pair(23, "m|many"), pair(4, "m|four")
    frame = resolve_labels([Label(pair_id="m|many", annotator="alice", choice=10)], [many, four])
    assert frame["label"].tolist() == ["K"]
    with pytest.raises(ManifestError, match="not an index into the pair's 4 options"):
        resolve_labels([Label(pair_id="m|four", annotator="alice", choice=10)], [many, four])


def test_the_tool_shows_23_option_buttons_and_takes_the_keys(tmp_path: Path):
    from airbench_nb.annotate import AnnotationTool

    many, four = pair(23, "m|many"), pair(4, "m|four")
    tool = AnnotationTool([many, four], labels_path=tmp_path / "l.jsonl", annotator="alice", show_audio=False)
    shown = [b.description for b in tool.controls["options"] if b.layout.display != "none"]
    assert shown == list(LETTERS[:23])
    assert tool.press("n") == "label"  # N is option 14 here, not "skip"
    assert tool.session.label_of("m|many").choice == 13
    shown = [b.description for b in tool.controls["options"] if b.layout.display != "none"]
    assert shown == list("ABCD")
    assert tool.press("k") is None  # past the four options: nothing happens
    assert tool.press("Backspace") == "undo"
    assert tool.session.current.pair_id == "m|many"


def test_official_rows_of_23_options_round_trip_through_the_import(tmp_path: Path):
    from airbench_nb.official import _foundation_item, _RowError

    row = official_result_row(item(23, answer=10), "K")
    row.pop("response")
    row.update(uniq_id=7, path="t0.wav")
    read = _foundation_item(tmp_path, row)
    assert read.choices == FINE and read.answer == 10
    del row["choice_e"]
    with pytest.raises(_RowError, match="choice_w is given but choice_e is absent"):
        _foundation_item(tmp_path, row)
