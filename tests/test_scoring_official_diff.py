"""The ``official`` protocol against the official AIR-Bench scripts' behaviour, on random and awkward inputs.

The reference functions below restate, independently and step by step, what ``score_foundation.py`` and
``cal_score.py`` (OFA-Sys/AIR-Bench) compute. Where a script would crash (a subset whose every answer failed, a
category with no parsed reply in one order: a division by zero), the reference gives None / uses the other order,
as the kit does; everywhere else the numbers must be equal. Files are written the way the official inference
script writes them: ``json.dumps(..., ensure_ascii=False)``, so raw U+2028, U+2029 and U+0085 reach the readers.
"""

import json
import random
from types import SimpleNamespace

import pytest

from airbench_nb.api_client import APIClient, ChatRequest
from airbench_nb.scoring import score_official_files

SEPARATORS = ("\u2028", "\u2029", "\u0085")
"""Characters ``str.splitlines`` breaks on that JSON leaves raw inside strings."""

LETTER_FIELDS = ("choice_a", "choice_b", "choice_c", "choice_d")

F_TASKS = {
    "Speaker_Gender_Recognition": 2,
    "Speaker_Emotion_Recontion": 4,
    "vocal_sound_classification": 4,
    "Music_Genre_Recognition": 4,
}

C_CATEGORY = {
    "speech_QA": "speech",
    "speech_dialogue_QA": "speech",
    "sound_QA": "sound",
    "sound_generation_QA": "sound",
    "music_QA": "music",
    "music_generation_analysis_QA": "music",
    "speech_and_sound_QA": "speech_and_sound",
    "speech_and_music_QA": "speech_and_music",
}


# ------------------------------------------------------------------------------------------------------------
# reference behaviour of the official scripts


def _read_lines_like_the_scripts(path):
    """The scripts iterate the open file: lines end at "\\n" only."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(text) for text in handle if text.strip()]


def reference_foundation(path):
    """Per subset ``task_dataset``: (counted, correct), and the number of failures, as score_foundation.py."""
    counted, correct, failures = {}, {}, 0
    for row in _read_lines_like_the_scripts(path):
        subset = f"{row['task_name']}_{row['dataset_name']}"
        counted.setdefault(subset, 0)
        correct.setdefault(subset, 0)
        answer = row["response"].strip().replace("\n", "")
        if answer == "None" or answer == "":
            failures += 1
            continue
        if answer[0] in "ABCD":
            letter = answer[0]
        elif len(answer) > 1 and answer[-2] in "ABCD":
            letter = answer[-2]
        else:
            failures += 1
            continue
        if row["answer_gt"] == row["choice_a"]:
            gold = "A"
        elif row["answer_gt"] == row["choice_b"]:
            gold = "B"
        elif row["answer_gt"] == row.get("choice_c"):
            gold = "C"
        else:
            assert row["answer_gt"] == row.get("choice_d"), "the script would exit here"
            gold = "D"
        counted[subset] += 1
        correct[subset] += letter == gold
    return counted, correct, failures


def _reference_reply(reply):
    """``(score 1, score 2)`` or None, as cal_score.py reads one ``gpt-score``."""
    parts = reply.strip().replace("\n", "").split(" ")
    if len(parts) != 2:
        return None
    try:
        first, second = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    if first > 10 or second > 10:  # exit(1) inside a bare try: counted as a failure, the run goes on
        return None
    return first, second


def reference_chat_file(rows, model_is_first):
    """Per category: (model mean, reference mean) over the file's parsed rows, as cal_score.py prints them."""
    sums, category = {}, None
    for row in rows:
        # the category is set by exact task names: another name (another case) leaves the previous row's
        category = C_CATEGORY.get(row["task_name"], category)
        scores = _reference_reply(row["gpt-score"])
        if scores is None:
            continue
        model, reference = scores if model_is_first else scores[::-1]
        total = sums.setdefault(category, [0, 0, 0])
        total[0] += model
        total[1] += reference
        total[2] += 1
    return {category: (m / n, r / n) for category, (m, r, n) in sums.items()}


def reference_chat(ref_first_rows, swapped_rows):
    """The paper's table from the two script runs: each category averaged over the orders, Mixed, Average."""
    first = reference_chat_file(ref_first_rows, model_is_first=False)
    second = reference_chat_file(swapped_rows, model_is_first=True)
    table = {}
    for category in ("speech", "sound", "music", "speech_and_sound", "speech_and_music"):
        runs = [run[category] for run in (first, second) if category in run]
        if runs:
            table[category] = tuple(sum(values) / len(runs) for values in zip(*runs, strict=True))
    mixed = [table[c] for c in ("speech_and_sound", "speech_and_music") if c in table]
    if mixed:
        table["mixed"] = tuple(sum(values) / len(mixed) for values in zip(*mixed, strict=True))
    present = [table[c] for c in ("speech", "sound", "music", "mixed") if c in table]
    table["average"] = tuple(sum(values) / len(present) for values in zip(*present, strict=True))
    return table


# ------------------------------------------------------------------------------------------------------------
# random inputs, awkward on purpose

ANSWERS = (
    "A",
    "B",
    "C",
    "D",
    "E",
    "a",
    "AB",
    "A.",
    "B)",
    "(C)",
    " D ",
    "\nB",
    "B\n",
    "The answer is C.",
    "Answer: B",
    "I think it is (A).",
    "None",
    " None ",
    "",
    "   ",
    "\n\n",
    "C\u2028",
    "\u2029B",
    "\u0085A",
    "A\u00a0",
    "no idea",
    "x",
    "xD.",
)

NUMBERS = ("1", "5", "7", "8", "10", "11", "0", "-1", "7.5", "08", "+8", "1_0", "８", "", "x", "8\n", " 9")

GLUES = (" ", " ", " ", "  ", "\n", ", ", "\t", "\u2028", "/")

PADS = ("", "", "", " ", "\n", "\u2028", "\u2029", "\u0085", "\u00a0")


def _random_foundation(rng, rows):
    lines = []
    for uniq in range(rows):
        task = rng.choice(sorted(F_TASKS))
        choices = [f"{task[:3]}-{k}" for k in range(F_TASKS[task])]
        row = {"path": f"{uniq}.wav", "question": f"q{rng.choice(SEPARATORS)}?", "answer_gt": rng.choice(choices)}
        for field, choice in zip(LETTER_FIELDS, [*choices, None, None], strict=False):
            row[field] = choice  # the inference script writes choice_c/choice_d as null for binary items
        row.update(task_name=task, dataset_name=rng.choice(["d1", "d2"]), uniq_id=uniq)
        row["response"] = rng.choice(PADS) + rng.choice(ANSWERS) + rng.choice(PADS)
        edge = rng.random()
        if edge < 0.05 and len(choices) == 4 and row["answer_gt"] != choices[2]:  # choice_d without choice_c
            row["choice_c"] = None
        elif edge < 0.1:  # an answer_gt matching no choice, with an answer the scripts count a failure first
            row["answer_gt"], row["response"] = "not a choice", rng.choice(["", " None ", "\n"])
        lines.append(json.dumps(row, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def _random_reply(rng):
    return rng.choice(PADS) + rng.choice(NUMBERS) + rng.choice(GLUES) + rng.choice(NUMBERS) + rng.choice(PADS)


def _random_chat(rng, rows):
    ref_first, swapped = [], []
    for uniq in range(rows):
        task = rng.choice(sorted(C_CATEGORY))
        name = task.upper() if uniq and rng.random() < 0.08 else task  # another case, after a known name
        for rows_of_order in (ref_first, swapped):
            rows_of_order.append(
                {
                    "task_name": name,
                    "dataset_name": "d",
                    "uniq_id": uniq,
                    "Audio-LLM-response": f"an{rng.choice(SEPARATORS)}answer",
                    "gpt-score": _random_reply(rng)
                    if rng.random() < 0.6
                    else f"{rng.randint(1, 10)} {rng.randint(1, 10)}",
                }
            )
    return ref_first, swapped


# ------------------------------------------------------------------------------------------------------------
# the comparisons


@pytest.mark.parametrize("seed", range(12))
def test_official_foundation_equals_the_script(tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "Foundation_result_modelx.jsonl"
    path.write_text(_random_foundation(rng, 80), encoding="utf-8")
    counted, correct, failures = reference_foundation(path)

    section = score_official_files(path, reps=0).official.foundation
    assert section.invalid == 0, section.errors
    assert section.failed == failures
    assert set(section.subsets) == set(counted)
    for subset, entry in section.subsets.items():
        assert (entry.n, entry.correct) == (counted[subset], correct[subset]), subset
        if counted[subset]:
            assert entry.accuracy == pytest.approx(correct[subset] / counted[subset]), subset
        else:  # every answer failed: the script divides by zero, the kit has no value
            assert entry.accuracy is None, subset


@pytest.mark.parametrize("seed", range(12))
def test_official_chat_equals_the_script_run_per_order_then_averaged(tmp_path, seed):
    rng = random.Random(seed)
    ref_first, swapped = _random_chat(rng, 60)
    chat, chat_swapped = tmp_path / "chat_score.json", tmp_path / "chat_score_cir.jsonl"
    chat.write_text(json.dumps(ref_first, ensure_ascii=False), encoding="utf-8")  # cal_score.py reads a JSON list
    chat_swapped.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in swapped), encoding="utf-8")
    expected = reference_chat(ref_first, swapped)

    section = score_official_files(chat=chat, chat_swapped=chat_swapped, reps=0).official.chat
    assert section.invalid == 0, section.errors
    got = {"average": section.average, **section.categories, **section.tasks}
    names = {"speech_and_sound": "speech_and_sound_QA", "speech_and_music": "speech_and_music_QA"}
    for category, (model, reference) in expected.items():
        entry = got[names.get(category, category)]
        assert entry.value == pytest.approx(model), category
        assert entry.reference.value == pytest.approx(reference), category
    valued = {c for c, e in section.categories.items() if e.value is not None}
    assert valued == {c for c in expected if c in ("speech", "sound", "music", "mixed")}
    parsed = sum(_reference_reply(r["gpt-score"]) is not None for r in [*ref_first, *swapped])
    assert (section.average.n, section.failed) == (parsed, len(ref_first) + len(swapped) - parsed)


def test_the_random_inputs_reach_the_cases_that_matter(tmp_path):
    """The comparisons above are only worth something if the inputs hit the awkward paths."""
    rng = random.Random(0)
    ref_first, swapped = _random_chat(rng, 60)
    pooled = {}
    for rows, model_first in ((ref_first, False), (swapped, True)):
        category = None
        for row in rows:
            category = C_CATEGORY.get(row["task_name"], category)
            scores = _reference_reply(row["gpt-score"])
            if scores is not None:
                pooled.setdefault(category, []).append(scores[0] if model_first else scores[1])
    expected = reference_chat(ref_first, swapped)
    differs = [c for c, v in pooled.items() if sum(v) / len(v) != pytest.approx(expected[c][0])]
    assert differs, "no category where pooling and the per-order mean differ"
    assert any(_reference_reply(r) is None for r in ("11 9", "8  9", "8\u20289"))
    assert _reference_reply("1_0 ８") == (10, 8)  # int() reads these; so must the kit

    path = tmp_path / "f.jsonl"
    path.write_text(_random_foundation(random.Random(0), 80), encoding="utf-8")
    raw = path.read_text(encoding="utf-8")
    assert all(s in raw for s in SEPARATORS)
    assert len(raw.splitlines()) > len(raw.rstrip("\n").split("\n"))
    rows = [json.loads(line) for line in raw.split("\n") if line.strip()]
    assert any(r["choice_c"] is None and r["choice_d"] is not None for r in rows)  # the edge classes are reached
    assert any(r["answer_gt"] == "not a choice" for r in rows)
    assert any(r["task_name"] not in C_CATEGORY for r in ref_first)


# ------------------------------------------------------------------------------------------------------------
# JSON Lines: "\n" only


def _foundation_rows(mark):
    rows = [
        ("Speaker_Gender_Recognition", ["male", "female"], "female", "B"),
        ("Speaker_Gender_Recognition", ["male", "female"], "male", "The answer is A."),
        ("Speaker_Emotion_Recontion", ["happy", "sad", "angry", "neutral"], "sad", "I am not sure"),
        ("Music_Genre_Recognition", ["jazz", "rock", "pop", "blues"], "pop", "C"),
    ]
    lines = []
    for uniq, (task, choices, gold, response) in enumerate(rows):
        row = {"path": f"{uniq}.wav", "question": f"what{mark}is it?", "answer_gt": gold}
        row.update({field: choice for field, choice in zip(LETTER_FIELDS, choices, strict=False)})
        row.update(task_name=task, dataset_name="d", uniq_id=uniq, response=f"{response}{mark}")
        lines.append(json.dumps(row, ensure_ascii=False))
    lines.insert(3, "{not json")  # line 4
    return "\n".join(lines) + "\n"


def _chat_rows(mark):
    rows = [("speech_QA", "8 6"), ("sound_QA", "9 5"), ("speech_and_music_QA", "8\n7"), ("music_QA", "7 7")]
    lines = [
        json.dumps(
            {"task_name": task, "uniq_id": k, "Audio-LLM-response": f"one{mark}two", "gpt-score": f"{reply}{mark}"},
            ensure_ascii=False,
        )
        for k, (task, reply) in enumerate(rows)
    ]
    lines.insert(2, "[1, 2")  # line 3
    return "\n".join(lines) + "\n"


def _comparable(result):
    result = result.as_dict()
    for table in result.values():
        for section in (table["foundation"], table["chat"]):
            if section is not None:
                section.pop("source")
                section["errors"] = [e.rsplit(":", 2)[-2:] for e in section["errors"]]  # line and message
    return result


@pytest.mark.parametrize("mark", SEPARATORS)
def test_line_separators_inside_rows_change_nothing(tmp_path, mark):
    plain, marked = tmp_path / "plain", tmp_path / "marked"
    for folder, text in ((plain, ""), (marked, mark)):
        folder.mkdir()
        (folder / "foundation.jsonl").write_text(_foundation_rows(text), encoding="utf-8")
        (folder / "chat.jsonl").write_text(_chat_rows(text), encoding="utf-8")
    assert len((marked / "chat.jsonl").read_text(encoding="utf-8").splitlines()) > 5  # splitlines would cut rows

    def score(folder):
        return score_official_files(folder / "foundation.jsonl", folder / "chat.jsonl", reps=50, seed=3)

    expected, got = score(plain), score(marked)
    for name in ("official", "strict"):
        # one invalid line each, at its own line number: no row was cut in two
        scores = getattr(got, name)
        assert scores.foundation.invalid == 1 and scores.chat.invalid == 1
        assert scores.foundation.errors[0].startswith(f"{marked / 'foundation.jsonl'}:4: invalid JSON")
        assert scores.chat.errors[0].startswith(f"{marked / 'chat.jsonl'}:3: invalid JSON")
    assert got.official.foundation.subsets["Speaker_Gender_Recognition_d"].correct == 2
    assert got.official.chat.categories["sound"].value == 5
    assert _comparable(got) == _comparable(expected)


class _FakeBatchClient:
    """Just enough of ``openai.OpenAI`` for :meth:`APIClient.collect_batch`: one output file, given as text."""

    def __init__(self, content):
        self.batches = SimpleNamespace(
            retrieve=lambda batch_id: SimpleNamespace(output_file_id="file-out", error_file_id=None, status="completed")
        )
        self.files = SimpleNamespace(content=lambda file_id: SimpleNamespace(text=content))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_batch_results_with_line_separators_in_answers(monkeypatch):
    requests = [ChatRequest("judge-mini", [{"role": "user", "content": f"q{k}"}], {}) for k in range(3)]
    answers = [f"8 7{mark}Assistant 2 is better." for mark in SEPARATORS]
    rows = [
        {
            "custom_id": request.key(),
            "response": {
                "status_code": 200,
                "body": {
                    "choices": [{"message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5},
                },
            },
        }
        for request, answer in zip(requests, answers, strict=True)
    ]
    content = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    client = APIClient(base_url="http://127.0.0.1:9/v1")
    monkeypatch.setattr(client, "sync_client", lambda: _FakeBatchClient(content))
    results = client.collect_batch("batch-1", requests)
    assert [r.error for r in results] == [None, None, None]
    assert [r.text for r in results] == answers


def test_the_three_edge_classes_official_counts_strict_refuses_and_the_difference_is_reported(tmp_path):
    """choice_d without choice_c, an answer_gt matching no choice with an empty answer, a task name in another case."""
    base = {"path": "x.wav", "question": "q", "task_name": "Speaker_Emotion_Recontion", "dataset_name": "d"}
    rows = [
        {**base, "uniq_id": 1, "choice_a": "x", "choice_b": "y", "choice_d": "z", "answer_gt": "z", "response": "D"},
        {**base, "uniq_id": 2, "choice_a": "x", "choice_b": "y", "choice_d": "z", "answer_gt": "z", "response": "C"},
        {**base, "uniq_id": 3, "choice_a": "x", "choice_b": "y", "answer_gt": "w", "response": ""},
        {**base, "uniq_id": 4, "choice_a": "x", "choice_b": "y", "answer_gt": "x", "response": "A"},
        {**base, "uniq_id": 5, "choice_a": "x", "choice_b": "y", "answer_gt": "w", "response": "A"},  # scripts stop
    ]
    foundation = tmp_path / "f.jsonl"
    foundation.write_text("".join(json.dumps(r) + "\n" for r in rows[:4]), encoding="utf-8")
    counted, correct, failures = reference_foundation(foundation)
    foundation.write_text(foundation.read_text() + json.dumps(rows[4]) + "\n", encoding="utf-8")
    chat_rows = [
        {"task_name": "speech_QA", "dataset_name": "d", "uniq_id": 1, "gpt-score": "8 4"},
        {"task_name": "sound_QA", "dataset_name": "d", "uniq_id": 2, "gpt-score": "8 6"},
        {"task_name": "Speech_QA", "dataset_name": "d", "uniq_id": 3, "gpt-score": "8 2"},  # counted in sound
    ]
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(chat_rows), encoding="utf-8")
    expected = reference_chat_file(chat_rows, model_is_first=False)
    result = score_official_files(foundation, chat=chat, reps=0)

    official, strict = result.official.foundation, result.strict.foundation
    subset = official.subsets["Speaker_Emotion_Recontion_d"]
    assert (
        (subset.n, subset.correct, official.failed)
        == (3, 2, failures)
        == (counted["Speaker_Emotion_Recontion_d"], correct["Speaker_Emotion_Recontion_d"], 1)
    )
    assert official.invalid == 1 and "matches none" in official.errors[0]  # row 5: the scripts would stop
    assert strict.invalid == 4 and strict.n_items == 1  # rows 1-3 refused by strict only, and row 5
    assert official.strict_only["count"] == strict.strict_only["count"] == 3
    assert any("choice_d is given without choice_c" in e for e in strict.errors)
    chat_official, chat_strict = result.official.chat, result.strict.chat
    assert chat_official.categories["speech"].value == expected["speech"][0] == 4.0  # not 3.0
    assert chat_official.categories["sound"].value == expected["sound"][0] == 4.0  # (6 + 2) / 2
    assert chat_official.invalid == 0 and chat_strict.invalid == 1 and chat_strict.strict_only["count"] == 1
    assert "another case than 'speech_QA'" in chat_strict.errors[0]
