"""MMAU's and MMAR's options as released: repeated options (27 rows of MMAU test-mini) and empty ones (4 rows of
MMAR) are kept, noted and read coherently by the prompts, the rule and LLM judges, the baselines, rotation and both
protocols; MMSU and Foundation still refuse them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from airbench_nb.analysis.choice_qa import chosen_text
from airbench_nb.judge.base import Task
from airbench_nb.judge.llm import reply_verdict
from airbench_nb.judge.rule import exact_option, rule_verdict
from airbench_nb.models.base import GenerationParams, Prompt
from airbench_nb.models.baselines import Baseline
from airbench_nb.prompts import PromptSet, kind_prompts
from airbench_nb.records import (
    FoundationItem,
    MMAUItem,
    MMSUItem,
    Response,
    mmar_item,
    mmau_item,
    mmsu_item,
    option_notes,
)
from airbench_nb.rotation import rotate_items
from airbench_nb.scoring import score_run

MODEL = "m"

REPEATED = {
    "id": "mmau-rep",
    "question": "How many times does the bell ring?",
    "choices": ["four", "nine", "fourteen", "fourteen"],  # as in test-mini
    "answer": "fourteen",
    "task": "sound",
    "category": "Reasoning",
    "sub-category": "Counting",
    "difficulty": "hard",
}
EMPTY = {
    "id": "mmar-empty",
    "question": "Where was this recorded?",
    "choices": ["Mountain Canyon", "", "Open Grassland", "City Streets"],
    "answer": "Open Grassland",
    "modality": "sound",
    "category": "Semantic Layer",
    "sub-category": "Imagination",
    "language": None,
}


def test_repeated_and_empty_options_are_kept_in_release_order_and_noted():
    item = mmau_item(REPEATED, "a.wav")
    assert item.choices == REPEATED["choices"] and item.answer == 2 and item.answer_text == "fourteen"
    assert item.notes == ["options 3 and 4 repeat 'fourteen' as released"]
    empty = mmar_item(EMPTY, "a.wav")
    assert empty.choices == EMPTY["choices"] and empty.answer == 2
    assert empty.notes == ["option 2 is empty as released"]
    cased = mmau_item({**REPEATED, "choices": ["Fourteen", "nine", "fourteen "], "answer": "fourteen"}, "a.wav")
    assert cased.answer == 2  # the gold is the first option of the gold's text as written, stripped
    assert cased.notes == ["options 1 and 3 repeat 'Fourteen' as released (written 'Fourteen', 'fourteen': case aside)"]
    assert option_notes(["a", " ", "b", "a", "a"]) == [
        "options 1, 4 and 5 repeat 'a' as released",
        "option 2 is empty as released (only spaces: ' ')",
    ]
    assert MMAUItem.model_validate(item.model_dump()).notes == item.notes  # read back: noted once


def test_the_gold_is_still_the_first_option_of_its_text_and_must_be_one():
    with pytest.raises(ValueError, match="field 'answer' 'twelve' is not among the options"):
        mmau_item({**REPEATED, "answer": "twelve"}, "a.wav")
    with pytest.raises(ValueError, match="field 'answer' must be a non-empty string"):
        mmar_item({**EMPTY, "answer": ""}, "a.wav")
    data = mmau_item(REPEATED, "a.wav").model_dump()
    with pytest.raises(ValidationError, match="not the first option of the gold's text 'fourteen'"):
        MMAUItem.model_validate({**data, "answer": 3})


def test_mmsu_and_foundation_still_refuse_repeated_options():
    row = {"id": "s", "question": "?", "choice_a": "yes", "choice_b": "Yes", "answer_gt": "yes", "task_name": "t"}
    with pytest.raises(ValueError, match=r"MMSU row 's': field 'choices' repeats an option"):
        mmsu_item(row, "a.wav")
    common = {"uid": "u", "dataset": "d", "audio": "a.wav", "question": "?", "task": "t", "answer_text": "yes"}
    with pytest.raises(ValidationError, match="choices must be distinct"):
        MMSUItem(**common, choices=["yes", "yes"], answer=0)
    with pytest.raises(ValidationError, match="choices may not be empty strings"):
        MMSUItem(**common, choices=["yes", ""], answer=0)
    foundation = {"uid": "f", "dataset": "d", "audio": "a.wav", "question": "?", "task": "Speaker_Gender_Recognition"}
    with pytest.raises(ValidationError, match="choices must be distinct"):
        FoundationItem(**foundation, choices=["male", "Male "], answer=0)
    with pytest.raises(ValidationError, match="choices may not be empty strings"):
        FoundationItem(**foundation, choices=["male", ""], answer=0)


def test_the_prompt_lists_the_options_as_released():
    text = kind_prompts(mmau_item(REPEATED, "a.wav"), PromptSet())[0]
    assert "Options:\n- four\n- nine\n- fourteen\n- fourteen\nAnswer with the text" in text
    text = kind_prompts(mmar_item(EMPTY, "a.wav"), PromptSet())[0]
    assert "Options:\n- Mountain Canyon\n- \n- Open Grassland\n- City Streets\n" in text


def _verdict(item, text):
    return rule_verdict(item, Response(uid=item.uid, model=MODEL, text=text))


def test_the_rule_judge_reads_options_of_one_text_as_one_answer_and_never_names_an_empty_option():
    item = mmau_item(REPEATED, "a.wav")
    for text in ("fourteen", "Fourteen.", "The answer is fourteen", "D", "C", "Answer: D. fourteen"):
        verdict = _verdict(item, text)
        assert (verdict.choice, verdict.correct) == (2, True), text
    assert (_verdict(item, "nine").choice, _verdict(item, "nine").correct) == (1, False)
    assert exact_option("fourteen", item.choices) == 2
    assert exact_option("four", item.choices) == 0  # "four" is not inside "fourteen": whole words
    cased = mmau_item({**REPEATED, "choices": ["Fourteen", "nine", "fourteen"], "answer": "fourteen"}, "a.wav")
    verdict = _verdict(cased, "fourteen")
    assert verdict.choice == 0 and verdict.correct is True  # one answer, the first of its text, the gold's
    empty = mmar_item(EMPTY, "a.wav")
    assert exact_option("", empty.choices) is None and exact_option('""', empty.choices) is None
    assert exact_option("Open Grassland", empty.choices) == 2
    assert exact_option("It sounds like open grassland to me", empty.choices) == 2
    assert _verdict(empty, "B").correct is False  # a letter may choose the empty option: it is not the gold
    assert _verdict(empty, "").choice is None


def test_an_llm_judges_letter_reads_options_of_one_text_as_one_answer():
    item = mmau_item(REPEATED, "a.wav")
    task = Task(item, Response(uid=item.uid, model=MODEL, text="the last one"))
    verdict = reply_verdict(item, task, "openai:judge", "D", {})
    assert (verdict.choice, verdict.correct) == (2, True)
    verdict = reply_verdict(item, task, "openai:judge", "A", {})
    assert (verdict.choice, verdict.correct) == (0, False)


def _answers(baseline: str, items):
    model = Baseline(baseline)
    prompts = [
        Prompt(
            item=item,
            text=kind_prompts(item, PromptSet())[0],
            audio=np.zeros(160, dtype=np.float32),
            audio_path=Path(item.audio),
        )
        for item in items
    ]
    generations = model.generate(prompts, GenerationParams())
    return [Response(uid=i.uid, model=model.spec, text=g.text) for i, g in zip(items, generations, strict=True)]


def test_the_baselines_on_repeated_and_empty_options_under_both_protocols():
    items = [
        mmau_item(REPEATED, "a.wav"),
        mmau_item({**REPEATED, "id": "gold-first", "choices": ["fourteen", "nine", "Fourteen"]}, "b.wav"),
    ]
    oracle = _answers("oracle", items)
    assert [r.text for r in oracle] == ["fourteen", "fourteen"]
    first = _answers("first", items)
    assert [r.text for r in first] == ["four", "fourteen"]
    for responses, right in ((oracle, 2), (first, 1)):
        verdicts = [rule_verdict(i, r) for i, r in zip(items, responses, strict=True)]
        scores = score_run(items, responses, verdicts, protocol="both", reps=0)
        for protocol in (scores.official, scores.strict):
            section = protocol.metric_sections["mmau"]
            assert (section.average.correct, section.average.n, section.failed) == (right, 2, 0)


def test_rotated_copies_of_repeated_options_keep_the_gold_and_the_oracle_is_right_in_every_one():
    item = mmau_item(REPEATED, "a.wav")
    copies = rotate_items([item])
    assert [(c.choices, c.answer) for c in copies] == [
        (["four", "nine", "fourteen", "fourteen"], 2),
        (["fourteen", "four", "nine", "fourteen"], 0),
        (["fourteen", "fourteen", "four", "nine"], 0),
        (["nine", "fourteen", "fourteen", "four"], 1),
    ]
    assert all(c.notes == item.notes for c in copies)  # the release's order, as the original says
    for copy in copies:
        verdict = _verdict(copy, copy.choices[copy.answer])
        assert verdict.correct is True and verdict.choice == copy.answer
        last = "ABCD"[max(k for k, c in enumerate(copy.choices) if c == "fourteen")]
        assert _verdict(copy, last).correct is True  # the later "fourteen" is the same answer
    empty = rotate_items([mmar_item(EMPTY, "a.wav")])
    assert [c.choices[c.answer] for c in empty] == ["Open Grassland"] * 4


def test_circular_evaluation_compares_options_of_one_text_as_one_answer():
    item = mmau_item({**REPEATED, "choices": ["Fourteen", "nine", "fourteen"], "answer": "fourteen"}, "a.wav")
    picked = set()
    for copy in rotate_items([item]):
        verdict = _verdict(copy, "fourteen")  # the same answer in every rotation, whichever spelling comes first
        assert verdict.correct is True
        picked.add(chosen_text(copy, verdict.choice))
    assert picked == {"fourteen"}  # consistent across the rotations
    assert chosen_text(item, None) is None and chosen_text(item, 7) is None
    row = {"id": "s", "question": "?", "choice_a": "Yes", "choice_b": "no", "answer_gt": "Yes", "task_name": "t"}
    mmsu = mmsu_item(row, "a.wav")
    assert chosen_text(mmsu, 0) == "Yes"  # a letter-answered kind's option text as it is
