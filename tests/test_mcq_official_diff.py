"""The ``official`` protocol of MMAU, MMAR and MMSU against their evaluation scripts' behaviour, on random answers.

The reference functions below restate, step by step and in this file's own words, what ``evaluation.py``
(Sakshi113/MMAU), ``code/evaluation.py`` (ddlBoJack/MMAR) and ``mmsu_evaluation.py`` (dingdongwang/MMSU_Bench)
compute from a result file: the rows the model answered, each with the release's fields and the model's output. The
kit scores the same rows as items, responses and ``score_run``'s official protocol. Where a script would crash (an
MMSU row with an empty answer before any letter was read: ``NameError``), the reference counts the row wrong, as the
kit does; everywhere else the counts must be equal. A row the model has no answer for is not in the result file
(the kit's missing response); an MMSU row whose ``response`` is null is skipped by the script's ``except`` (the
kit's error response). MMAU's and MMAR's random rows include options as their releases have them now and then: an
option repeated (as written, or in another case) and the empty option; the scripts score those rows, and so must the
kit.
"""

from __future__ import annotations

import random
import re

import pytest

from airbench_nb.records import Response, mmar_item, mmau_item, mmsu_item
from airbench_nb.scoring import score_run

MODEL = "m"

WORDS = (
    "man",
    "woman",
    "a",
    "the",
    "dog",
    "dog_barking",
    "B",
    "C",
    "major",
    "minor",
    "G#",
    "3",
    "three",
    "twenty-one",
    "Café",
    "rain",
    "falling",
    "none",
    "of",
    "above",
)
"""Words the random options are made of: shared words, letters, numbers, underscores, accents, punctuation."""


# ------------------------------------------------------------------------------------------------------------
# reference behaviour of the scripts


def reference_words(text):
    """The scripts' tokens: lower-case the text, keep every distinct run of word characters between boundaries."""
    return set(re.findall(r"\b\w+\b", text.lower()))


def reference_match(answer, prediction, choices):
    """MMAU's and MMAR's string match, condition by condition."""
    prediction_words = reference_words(prediction)
    answer_words = reference_words(answer)
    if len(prediction_words) == 0:
        return False
    wrong_words = set()
    for choice in choices:
        choice_words = reference_words(choice)
        if choice_words == answer_words:
            continue
        for word in choice_words:
            if word not in answer_words:
                wrong_words.add(word)
    every_answer_word_said = all(word in prediction_words for word in answer_words)
    no_wrong_word_said = all(word not in wrong_words for word in prediction_words)
    return every_answer_word_said and no_wrong_word_said


def _tally(counts, total, keys, right):
    """One row counted, as the scripts count it: under each of its groups and in the total."""
    for key in keys:
        counts.setdefault(key, [0, 0])
        counts[key][0] += int(right)
        counts[key][1] += 1
    total[0] += int(right)
    total[1] += 1


def reference_word_match_script(rows, output_key, levels):
    """Counts of MMAU's / MMAR's evaluation.py: {(level, name): [correct, total]} and the total."""
    counts = {}
    total = [0, 0]
    for row in rows:
        if output_key not in row:
            continue
        right = reference_match(row["answer"], row[output_key], row["choices"])
        keys = [(level, row[field]) for level, field in levels]
        if row.get("sub-category") is not None:
            keys.append(("subset", row["sub-category"]))
        _tally(counts, total, keys, right)
    return counts, total


def reference_mmsu_script(rows):
    """Counts of mmsu_evaluation.py: {(level, name): [correct, total]} and the total, its leftover letter included."""
    counts = {}
    total = [0, 0]
    model_predict = None  # the script's variable; None: not yet assigned (the script would raise NameError)
    for row in rows:
        category = row.get("category", "")
        sub = row.get("sub-category", "")
        response = row.get("response", "")
        if not isinstance(response, str):
            continue  # response.strip() raises: "Error prediction!"
        predict = response.strip().replace("\n", "")
        if predict != "None" and predict:
            if predict[0] in ("A", "B", "C", "D"):
                model_predict = predict[0]
            elif len(predict) > 1 and predict[-2] in ("A", "B", "C", "D"):
                model_predict = predict[-2]
            else:
                continue  # "Wrong format response"
        options = {
            "A": row.get("choice_a", ""),
            "B": row.get("choice_b", ""),
            "C": row.get("choice_c", ""),
            "D": row.get("choice_d", ""),
        }
        right = model_predict is not None and options[model_predict] == row.get("answer_gt", "")
        _tally(counts, total, [("category", category), ("subset", f"{category} / {sub}")], right)
    return counts, total


# ------------------------------------------------------------------------------------------------------------
# random rows and answers


def _option(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))


def _options(rng, n):
    out = []
    while len(out) < n:
        option = _option(rng)
        if option.strip().casefold() not in {o.strip().casefold() for o in out}:
            out.append(option)
    return out


def _options_as_released(rng, n):
    """Distinct options, now and then with one repeated (as written or in upper case) or one empty, as in the
    releases (MMAU test-mini repeats an option in 27 rows, MMAR has an empty option in 4)."""
    out = _options(rng, n)
    odd = rng.random()
    if odd < 0.2:
        repeated = rng.choice(out)
        out[rng.randrange(n)] = rng.choice([repeated, repeated, repeated.upper()])
    elif odd < 0.35:
        out[rng.randrange(n)] = ""
    if not any(o.strip() for o in out):
        out[0] = _option(rng)
    return out


def _gold(rng, choices):
    """A gold answer: the text of a non-empty option (the releases' gold is never empty)."""
    return rng.choice([c for c in choices if c.strip()])


def _padded(rng, text):
    """The text, now and then with spaces around it (the official rules compare some texts as released)."""
    return rng.choice(["", " "]) + text + rng.choice(["", "", " "])


def _prediction(rng, choices, gold, letters):
    """An awkward answer: option text, a letter, several options, partial words, case, padding, nothing."""
    other = rng.choice(choices)
    pick = rng.randrange(16)
    if pick == 0:
        return gold
    if pick == 1:
        return gold.upper()
    if pick == 2:
        return other
    if pick == 3:
        return rng.choice(letters)
    if pick == 4:
        return f"({rng.choice(letters)}) {other}"
    if pick == 5:
        return f"The answer is {gold}."
    if pick == 6:
        return f"{gold} or {other}"
    if pick == 7:
        return gold.split()[0] if gold.split() else gold
    if pick == 8:
        return ""
    if pick == 9:
        return "   \n "
    if pick == 10:
        return "None"
    if pick == 11:
        return f"Answer: {rng.choice(letters)}."
    if pick == 12:
        return f"I think it is {other}, not {gold}"
    if pick == 13:
        return _option(rng)
    if pick == 14:
        return f"{rng.choice(letters)}\n{other}"
    return "!?"


def _mmau_rows(rng, n):
    rows = []
    for k in range(n):
        choices = _options_as_released(rng, rng.choice([2, 4, 5, 8]))
        rows.append(
            {
                "id": f"q{k}",
                "audio_id": f"./test-mini-audios/q{k}.wav",
                "question": "What is heard?",
                "choices": choices,
                "answer": _gold(rng, choices),
                "dataset": "d",
                "task": rng.choice(["speech", "sound", "music"]),
                "split": "test-mini",
                "category": rng.choice(["Reasoning", "Information Extraction", ["Reasoning"]]),
                "sub-category": rng.choice(["Counting", "Temporal Reasoning", "Instrumentation"]),
                "difficulty": rng.choice(["easy", "medium", "hard"]),
            }
        )
    return rows


def _mmar_rows(rng, n):
    modalities = ["sound", "music", "speech", "mix-sound-music", "mix-sound-speech", "mix-music-speech"]
    rows = []
    for k in range(n):
        choices = _options_as_released(rng, rng.randint(2, 6))
        rows.append(
            {
                "id": f"r{k}",
                "audio_path": f"./audio/r{k}.wav",
                "question": "Why?",
                "choices": choices,
                "answer": _gold(rng, choices),
                "modality": rng.choice(modalities),
                "category": rng.choice(["Signal Layer", "Perception Layer", "Semantic Layer", "Cultural Layer"]),
                "sub-category": rng.choice(["Counting and Statistics", "Imagination"]),
                "language": rng.choice(["en", None, "zh|en"]),
                "thinking": "...",
            }
        )
    return rows


def _mmsu_rows(rng, n):
    rows = []
    for k in range(n):
        count = rng.choice([2, 3, 4, 4, 4])
        choices = [_padded(rng, c) for c in _options(rng, count)]
        gold = rng.choice(choices)
        row = {
            "id": f"s{k}",
            "audio_path": f"./audio/s{k}.wav",
            "question": "Which?",
            "answer_gt": _padded(rng, gold.strip()) if rng.random() < 0.2 else gold,
            "task_name": rng.choice(["emotion_recognition", "stress_detection"]),
            "category": rng.choice(["perception", "reasoning"]),
            "sub-category": rng.choice(["semantics", "phonology", "paralinguistics"]),
        }
        for field, choice in zip(("choice_a", "choice_b", "choice_c", "choice_d"), choices, strict=False):
            row[field] = choice
        rows.append(row)
    return rows


def _official(items, responses):
    return score_run(items, responses, protocol="official", reps=0).official


def _counts_of(section, level_fields):
    got = {}
    for level, field in level_fields:
        for name, entry in (getattr(section, field) or {}).items():
            got[(level, name)] = [entry.correct, entry.n]
    return got


# ------------------------------------------------------------------------------------------------------------
# the comparisons


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mmau_official_is_evaluation_py(seed):
    rng = random.Random(seed)
    rows = _mmau_rows(rng, 150)
    items, responses, result_rows = [], [], []
    for k, row in enumerate(rows):
        item = mmau_item(row, f"audio/q{k}.wav")
        items.append(item)
        if rng.random() < 0.08:
            result_rows.append(dict(row))  # no answer: the script skips the row without model_output
            continue
        text = _prediction(rng, row["choices"], row["answer"], "ABCDEFGH"[: len(row["choices"])])
        responses.append(Response(uid=item.uid, model=MODEL, text=text))
        result_rows.append({**row, "model_output": text})
    counts, total = reference_word_match_script(
        result_rows, "model_output", [("task", "task"), ("difficulty", "difficulty")]
    )
    section = _official(items, responses).metric_sections["mmau"]
    assert [section.average.correct, section.average.n] == total
    got = _counts_of(section, [("task", "tasks"), ("subset", "subsets")])
    got.update({("difficulty", k.removeprefix("difficulty ")): [e.correct, e.n] for k, e in section.measures.items()})
    assert got == counts
    assert section.failed == len(items) - len(responses)
    assert section.n_items == len(rows)  # every row scored, those with repeated or empty options too
    assert any("repeat" in " ".join(i.notes) for i in items) and any("empty" in " ".join(i.notes) for i in items)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_mmar_official_is_its_evaluation_py(seed):
    rng = random.Random(seed)
    rows = _mmar_rows(rng, 150)
    items, responses, result_rows = [], [], []
    for k, row in enumerate(rows):
        item = mmar_item(row, f"audio/r{k}.wav")
        items.append(item)
        text = _prediction(rng, row["choices"], row["answer"], "ABCDEF"[: len(row["choices"])])
        if rng.random() < 0.05:
            responses.append(Response(uid=item.uid, model=MODEL, error="backend: timeout"))
            result_rows.append(dict(row))  # no answer_prediction key: skipped
            continue
        responses.append(Response(uid=item.uid, model=MODEL, text=text))
        result_rows.append({**row, "answer_prediction": text})
    counts, total = reference_word_match_script(
        result_rows, "answer_prediction", [("task", "modality"), ("category", "category")]
    )
    section = _official(items, responses).metric_sections["mmar"]
    assert [section.average.correct, section.average.n] == total
    assert _counts_of(section, [("task", "tasks"), ("category", "categories"), ("subset", "subsets")]) == counts
    assert section.n_items == len(rows)
    assert any("repeat" in " ".join(i.notes) for i in items) and any("empty" in " ".join(i.notes) for i in items)


def test_the_word_match_on_repeated_and_empty_options_is_the_scripts():
    from airbench_nb.scoring.choice_qa import official_word_match

    cases = [
        ("fourteen", ["four", "nine", "fourteen", "fourteen"]),
        ("fourteen", ["four", "nine", "Fourteen", "fourteen"]),
        ("Open Grassland", ["Mountain Canyon", "", "Open Grassland", "City Streets"]),
        ("a", ["", "a", ""]),
    ]
    answers = ["fourteen", "Fourteen", "four", "", "Open Grassland", "open grassland, not city streets", "a", "b"]
    for gold, choices in cases:
        for answer in answers:
            assert official_word_match(gold, answer, choices) == reference_match(gold, answer, choices)
    assert official_word_match("fourteen", "fourteen", ["four", "nine", "fourteen", "fourteen"])
    assert official_word_match("Open Grassland", "Open Grassland", ["Mountain Canyon", "", "Open Grassland"])


@pytest.mark.parametrize("seed", [6, 7, 8, 9])
def test_mmsu_official_is_mmsu_evaluation_py(seed):
    rng = random.Random(seed)
    rows = _mmsu_rows(rng, 150)
    items, responses, result_rows = [], [], []
    for k, row in enumerate(rows):
        item = mmsu_item(row, f"audio/s{k}.wav")
        items.append(item)
        chance = rng.random()
        if chance < 0.05:
            continue  # no answer: the row is not in the result file
        if chance < 0.1:
            responses.append(Response(uid=item.uid, model=MODEL, error="backend: timeout"))
            result_rows.append({**row, "response": None})  # null: the script's except skips it
            continue
        choices = [c for c in (row.get(f) for f in ("choice_a", "choice_b", "choice_c", "choice_d")) if c]
        text = _prediction(rng, choices, row["answer_gt"], "ABCD")
        responses.append(Response(uid=item.uid, model=MODEL, text=text))
        result_rows.append({**row, "response": text})
    counts, total = reference_mmsu_script(result_rows)
    section = _official(items, responses).metric_sections["mmsu"]
    assert [section.average.correct, section.average.n] == total
    assert _counts_of(section, [("category", "categories"), ("subset", "subsets")]) == counts


def test_mmsu_blank_answers_take_the_letter_read_last_and_the_first_one_counts_wrong():
    rows = [
        {"id": f"s{k}", "question": "?", "choice_a": "yes", "choice_b": "no", "answer_gt": gold, "task_name": "t"}
        for k, gold in enumerate(["yes", "no", "no", "yes", "no"])
    ]
    items = [mmsu_item(row, f"a/{k}.wav") for k, row in enumerate(rows)]
    texts = ["", "B", "None", "The answer: x", "\n"]  # blank, B, blank (B: right), skipped, blank (B: right)
    responses = [Response(uid=i.uid, model=MODEL, text=t) for i, t in zip(items, texts, strict=True)]
    section = _official(items, responses).metric_sections["mmsu"]
    assert [section.average.correct, section.average.n, section.failed] == [3, 4, 1]
    assert [o for o in section.failure_reasons] == ["official: no letter A-D first or second-to-last"]
    assert reference_mmsu_script([{**r, "response": t} for r, t in zip(rows, texts, strict=True)])[1] == [3, 4]


def test_the_word_match_keeps_its_flaws():
    from airbench_nb.scoring.choice_qa import official_word_match

    choices = ["C major", "G major", "D major", "A minor"]
    assert official_word_match("C major", "c MAJOR!", choices)
    assert not official_word_match("C major", "C", choices)  # the letter C is the word c, but major is missing
    assert not official_word_match("C major", "C major, not G major", choices)  # g is a wrong option's word
    assert official_word_match("C major", "the C major chord", choices)  # "the" is nobody's word
    same = ["['a_b', 'c_d']", "['c_d', 'a_b']", "['e_f', 'a_b']"]
    assert official_word_match(same[0], same[1], same)  # two options of the same words are one to the rule
    assert not official_word_match("C major", "", choices) and not official_word_match("C major", "!?", choices)
