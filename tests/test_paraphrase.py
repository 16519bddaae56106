"""Paraphrased questions: rewrites of a question from its task's phrasings, paired by the perturbation curves."""

from __future__ import annotations

import pytest

from airbench_nb.analysis.perturbations import UNITS, outcome_from_item, perturbation_results
from airbench_nb.builders import build, load_recipes
from airbench_nb.builders.paraphrase import (
    CURVE,
    paraphrase_items,
    paraphrase_uid,
    phrasing_of,
    rewrites,
    task_phrasings,
)
from airbench_nb.records import PERTURBATION_OF_KEY, FoundationItem

PHRASINGS = [
    "When is '{word}' said?",
    "Where does '{word}' fall, and is '{word}' clear?",
    "Find '{word}'.",
    "Find '{word}'.",
]


def test_a_question_is_matched_to_its_phrasing_and_rewritten_in_the_next_ones():
    assert phrasing_of("Find 'rain'.", PHRASINGS) == (2, {"word": "rain"})
    assert phrasing_of("Where does 'a b' fall, and is 'a b' clear?", PHRASINGS) == (1, {"word": "a b"})
    assert phrasing_of("Where does 'a' fall, and is 'b' clear?", PHRASINGS) is None  # a repeated slot: same text
    # cyclic after its own phrasing (2): 3 reads the same and is skipped, then 0 and 1
    assert rewrites("Find 'rain'.", PHRASINGS, 2) == [
        (0, "When is 'rain' said?"),
        (1, "Where does 'rain' fall, and is 'rain' clear?"),
    ]
    assert rewrites("Find 'rain'.", PHRASINGS, 9) == rewrites("Find 'rain'.", PHRASINGS, 2)  # no more than exist
    with pytest.raises(ValueError, match="matches none"):
        rewrites("Something else?", PHRASINGS, 1)
    assert paraphrase_uid("Speech_Grounding-001", 2) == "Speech_Grounding-001@para-2"
    assert task_phrasings("Sound_AQA", {"Sound_AQA_count": ["a"], "Sound_AQA_order": ["b"], "Sound": ["c"]}) == [
        ["a"],
        ["b"],
    ]


def test_items_without_a_matching_phrasing_are_not_eligible():
    base = dict(dataset="synthetic", audio="a.wav", choices=["a", "b"], answer=0)
    odd = FoundationItem(uid="g-1", task="Speaker_Gender_Recognition", question="Edited question?", **base)
    none = FoundationItem(uid="m-1", task="Music_Genre_Recognition", question="Genre?", **base)
    made = paraphrase_items([odd, none], {"Speaker_Gender_Recognition": ["Is it {x}?"]}, 2)
    assert made.items == []
    assert made.not_eligible == [
        ("g-1", "its question matches none of its task's phrasings"),
        ("m-1", "task Music_Genre_Recognition has no phrasings in the recipes"),
    ]


def test_the_perturb_part_writes_rewrites_of_every_task_that_pair_with_their_originals(tmp_path):
    report = build(
        "tiny", seed=0, out=tmp_path, progress=False, options={"paraphrases": 2, "perturb_items_per_task": 1}
    )
    part = report.parts["perturb"]
    copies = part.items["foundation"]
    derived = ("clean_uid", "rotation_of", "control_of", PERTURBATION_OF_KEY)
    originals = {i.uid: i for i in report.foundation if not any(k in i.meta for k in derived)}
    recipes = load_recipes()
    table = {**recipes.phrasings, **recipes.multi["phrasings"]}
    tasks = {i.task for i in report.foundation}
    assert part.card["paraphrased_items"] == len(copies) == 2 * len(tasks) and part.card["paraphrase_not_eligible"] == 0
    for copy in copies:
        original = originals[copy.meta[PERTURBATION_OF_KEY]]
        k = int(copy.meta["parameter"])
        assert copy.uid == paraphrase_uid(original.uid, k) and copy.meta["perturbation"] == CURVE
        assert (copy.task, copy.choices, copy.answer, copy.audio, copy.clips) == (
            original.task,
            original.choices,
            original.answer,
            original.audio,
            original.clips,
        )
        assert copy.question != original.question and copy.meta["measured"]["question"] == copy.question
        index, fills = next(f for p in task_phrasings(copy.task, table) if (f := phrasing_of(copy.question, p)))
        own = next(f for p in task_phrasings(copy.task, table) if (f := phrasing_of(original.question, p)))
        assert index == copy.meta["measured"]["phrasing"] and fills == own[1]  # the same slots, reworded
    # the perturbation curves pair each rewrite with its original: an oracle does not move
    outcomes = [outcome_from_item(i, "oracle", "accuracy", (1.0, 1.0)) for i in [*originals.values(), *copies]]
    points = perturbation_results([o for o in outcomes if o is not None], reps=50)
    pooled = [p for p in points if p.task is None]
    assert [(p.curve, p.parameter, p.n) for p in pooled] == [(CURVE, 1.0, len(tasks)), (CURVE, 2.0, len(tasks))]
    assert all(p.difference.value == 0 and p.measured is None for p in pooled) and UNITS[CURVE] == "rewrite no."
