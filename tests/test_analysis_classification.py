"""Per-class metrics: macro scores match scikit-learn and hand counts; unanswered items and open tasks are handled."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from sklearn.metrics import f1_score

from airbench_nb.analysis.classification import (
    NO_ANSWER,
    classification,
    classification_frame,
    confusion_frame,
    task_label_sets,
)
from airbench_nb.analysis.data import FOUNDATION_COLUMNS

LETTERS = "ABCD"
LANGUAGES = ("English", "French", "German", "Hindi")


def make_frame(rows: list[tuple[str, str, str, tuple[str, ...], str, str | None]]) -> pd.DataFrame:
    """Rows of (model, uid, task, choices, gold text, chosen text or None for no answer)."""
    records = []
    for model, uid, task, choices, gold_text, chosen_text in rows:
        gold = choices.index(gold_text)
        chosen = None if chosen_text is None else choices.index(chosen_text)
        records.append(
            {
                "model": model,
                "uid": uid,
                "task": task,
                "n_choices": len(choices),
                "choices": choices,
                "gold": gold,
                "gold_letter": LETTERS[gold],
                "chosen": chosen,
                "chosen_letter": None if chosen is None else LETTERS[chosen],
                "chosen_text": chosen_text,
                "correct": chosen == gold,
                "failed": chosen is None,
            }
        )
    frame = pd.DataFrame(records).reindex(columns=list(FOUNDATION_COLUMNS))
    frame["chosen"] = frame["chosen"].astype("Int64")
    frame["rotation"] = frame["rotation"].astype("Int64")
    frame["correct"] = frame["correct"].astype("boolean")
    return frame


# gold -> predicted: English 3 right + 1 French; French 2 right + 1 German; German 1 right, 1 unanswered, 1 English
PAIRS = [
    ("English", "English"),
    ("English", "English"),
    ("English", "English"),
    ("English", "French"),
    ("French", "French"),
    ("French", "French"),
    ("French", "German"),
    ("German", "German"),
    ("German", None),
    ("German", "English"),
]


def language_rows(model: str = "m") -> list[tuple[str, str, str, tuple[str, ...], str, str | None]]:
    return [(model, f"lang-{i}", "Spoken_Language_Identification", LANGUAGES, g, p) for i, (g, p) in enumerate(PAIRS)]


def test_macro_scores_match_hand_counts_and_sklearn() -> None:
    result = classification(make_frame(language_rows()))["m"]["Spoken_Language_Identification"]
    # per class (P, R): English (3/4, 3/4), French (2/3, 2/3), German (1/2, 1/3)
    assert result.macro_precision == pytest.approx((3 / 4 + 2 / 3 + 1 / 2) / 3)
    assert result.macro_recall == pytest.approx((3 / 4 + 2 / 3 + 1 / 3) / 3)
    assert result.macro_f1 == pytest.approx((0.75 + 2 / 3 + 0.4) / 3)
    y_true = [g for g, _ in PAIRS]
    y_pred = [p or NO_ANSWER for _, p in PAIRS]
    assert result.macro_f1 == pytest.approx(
        f1_score(y_true, y_pred, labels=["English", "French", "German"], average="macro", zero_division=0)
    )
    assert result.macro_fnr == pytest.approx((1 / 4 + 1 / 3 + 2 / 3) / 3)
    assert result.per_class["German"] == pytest.approx(
        {"precision": 0.5, "recall": 1 / 3, "f1": 0.4, "fnr": 2 / 3, "support": 3}
    )
    assert result.n == 10 and result.unanswered == 1
    # Hindi is an option but never gold nor chosen: not a label
    assert result.labels == result.gold_labels == ["English", "French", "German"]
    assert result.columns == ["English", "French", "German", NO_ANSWER]
    assert result.confusion == [[3, 1, 0, 0], [0, 2, 1, 0], [1, 0, 1, 1]]
    assert result.top_confusions == [
        {"gold": "French", "predicted": "German", "count": 1, "share": pytest.approx(1 / 3)},
        {"gold": "German", "predicted": "English", "count": 1, "share": pytest.approx(1 / 3)},
        {"gold": "English", "predicted": "French", "count": 1, "share": pytest.approx(1 / 4)},
    ]
    payload = result.as_dict()
    assert json.loads(json.dumps(payload)) == payload
    for key in ("macro_precision", "macro_recall", "macro_f1", "macro_fnr", "labels", "confusion", "top_confusions"):
        assert key in payload

    heat = confusion_frame(result)
    assert heat.loc["German", NO_ANSWER] == 1 and heat.loc["English", "French"] == 1


def test_never_gold_prediction_gets_its_own_column_and_counts_against_recall() -> None:
    rows = language_rows()
    rows[0] = ("m", "lang-0", "Spoken_Language_Identification", LANGUAGES, "English", "Hindi")
    result = classification(make_frame(rows))["m"]["Spoken_Language_Identification"]
    assert result.gold_labels == ["English", "French", "German"]
    assert result.labels == ["English", "French", "German", "Hindi"]
    assert result.columns == ["English", "French", "German", "Hindi", NO_ANSWER]
    assert result.confusion[0] == [2, 1, 0, 1, 0]
    assert result.confusion[3] == [0, 0, 0, 0, 0]  # Hindi is never gold: a row of zeros keeps the matrix square
    assert set(result.per_class) == {"English", "French", "German"}
    assert result.per_class["English"]["recall"] == pytest.approx(2 / 4)
    assert result.per_class["English"]["precision"] == pytest.approx(2 / 3)  # Hindi is no false positive of a label
    assert {"gold": "English", "predicted": "Hindi", "count": 1, "share": 0.25} in result.top_confusions


def test_open_label_task_is_skipped_with_its_reason() -> None:
    grounding = [
        ("m", f"sg-{i}", "Speech_Grounding", (f"[{i}.0, {i}.5]", f"[{i}.6, {i}.9]"), f"[{i}.0, {i}.5]", None)
        for i in range(6)
    ]
    gender = [
        ("m", f"g-{i}", "Speaker_Gender_Recognition", ("male", "female"), ("male", "female")[i % 2], "male")
        for i in range(4)
    ]
    frame = make_frame(grounding + gender)
    decisions = task_label_sets(frame)
    assert decisions["Speaker_Gender_Recognition"] is None
    assert "never recur" in (decisions["Speech_Grounding"] or "")
    results = classification(frame)["m"]
    skipped = results["Speech_Grounding"]
    assert skipped.reason and skipped.macro_f1 is None and skipped.n == 6 and skipped.confusion == []
    assert json.dumps(skipped.as_dict())
    gender_result = results["Speaker_Gender_Recognition"]
    # always "male": male P 1/2 R 1, female P 0 R 0 -> macro F1 (2/3 + 0) / 2
    assert gender_result.macro_f1 == pytest.approx(1 / 3)
    assert gender_result.macro_fnr == pytest.approx(0.5)

    table = classification_frame(classification(frame))
    assert list(table["task"]) == ["Speaker_Gender_Recognition"]
    assert list(table.columns[:7]) == [
        "model",
        "task",
        "macro_precision",
        "macro_recall",
        "macro_f1",
        "macro_fnr",
        "n",
    ]
    assert len(classification_frame(classification(frame), skipped=True)) == 2

    few = make_frame(gender[:3])  # female is gold once only
    assert "too few items (3)" in (task_label_sets(few)["Speaker_Gender_Recognition"] or "")
    one_label = make_frame([r for r in gender if r[4] == "male"])
    assert "only 1" in (task_label_sets(one_label)["Speaker_Gender_Recognition"] or "")
    assert "more than 2" in (
        task_label_sets(make_frame(language_rows()), max_labels=2)["Spoken_Language_Identification"] or ""
    )


def test_rotated_copies_count_once_and_empty_frames() -> None:
    frame = make_frame(language_rows())
    copy = frame.assign(uid=frame["uid"] + "@r1", rotation=1, rotation_of=frame["uid"])
    both = pd.concat([frame.assign(rotation=0, rotation_of=frame["uid"]), copy], ignore_index=True)
    both["rotation"] = both["rotation"].astype("Int64")
    assert classification(both)["m"]["Spoken_Language_Identification"].n == 10

    empty = pd.DataFrame(columns=list(FOUNDATION_COLUMNS))
    assert classification(empty) == {}
    assert task_label_sets(empty) == {}
    assert classification_frame({}).empty
