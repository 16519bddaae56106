"""Position bias: planted letter preferences are found, uniform guessing is not, counts match hand counts."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chisquare

from airbench_nb.analysis.data import FOUNDATION_COLUMNS
from airbench_nb.analysis.position_bias import (
    NO_LETTER,
    PSEUDO_COUNT,
    letter_confusion,
    position_bias,
    position_bias_frame,
)

LETTERS = "ABCD"


def make_frame(rows: list[tuple[str, str, int, int | None]], protocol: str = "strict") -> pd.DataFrame:
    """Rows of (model, uid, gold, chosen) on 4-choice items; chosen None is a failure."""
    records = []
    for model, uid, gold, chosen in rows:
        failed = chosen is None
        correct = (False if protocol == "strict" else None) if failed else chosen == gold
        records.append(
            {
                "model": model,
                "uid": uid,
                "task": "Speaker_Intent_Classification",
                "category": "speech",
                "n_choices": 4,
                "choices": ("w", "x", "y", "z"),
                "gold": gold,
                "gold_letter": LETTERS[gold],
                "chosen": chosen,
                "chosen_letter": None if failed else LETTERS[chosen],
                "chosen_text": None if failed else "wxyz"[chosen],
                "correct": correct,
                "failed": failed,
                "words": 1,
            }
        )
    frame = pd.DataFrame(records).reindex(columns=list(FOUNDATION_COLUMNS))
    frame["chosen"] = frame["chosen"].astype("Int64")
    frame["correct"] = frame["correct"].astype("boolean")
    return frame


def balanced_gold(n: int) -> list[int]:
    return [i % 4 for i in range(n)]


def simulated(seed: int, n: int = 200, prefer_a: float = 0.0) -> pd.DataFrame:
    """A model that says A with probability ``prefer_a``, else a uniform letter, on balanced 4-choice items."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, gold in enumerate(balanced_gold(n)):
        chosen = 0 if rng.random() < prefer_a else int(rng.integers(4))
        rows.append(("m", f"u{i}", gold, chosen))
    return make_frame(rows)


def test_planted_preference_for_a_is_flagged() -> None:
    result = position_bias(simulated(seed=7, prefer_a=0.6))["m"]
    assert result.n == 200
    assert result.chosen["A"] > 120
    assert result.dof == 3
    assert result.p_value is not None and result.p_value < 0.01
    assert result.test.startswith("chi-square goodness of fit")


def test_uniform_guessing_is_not_flagged_and_false_positive_rate_is_nominal() -> None:
    one = position_bias(simulated(seed=3))["m"]
    assert one.p_value is not None and one.p_value > 0.05
    p_values = [position_bias(simulated(seed=seed))["m"].p_value for seed in range(100)]
    assert all(p is not None for p in p_values)
    rejections = sum(p < 0.05 for p in p_values)  # type: ignore[operator]
    assert rejections <= 10, rejections  # nominal 5 of 100
    assert sum(p < 0.05 for p in p_values[:20]) <= 3  # type: ignore[operator]


def test_hand_counts_on_six_items() -> None:
    # gold A B C D A B; chosen A A C (failed) B A
    frame = make_frame(
        [("m", "1", 0, 0), ("m", "2", 1, 0), ("m", "3", 2, 2), ("m", "4", 3, None), ("m", "5", 0, 1), ("m", "6", 1, 0)]
    )
    result = position_bias(frame)["m"]
    assert result.n == 5 and result.n_items == 6
    assert result.chosen == {"A": 3, "B": 1, "C": 1, "D": 0}
    assert result.gold == {"A": 2, "B": 2, "C": 1, "D": 0}
    assert result.accuracy_by_gold == {"A": 0.5, "B": 0.0, "C": 1.0, "D": 0.0}
    assert result.wrong_choice == {"A": 2, "B": 1, "C": 0, "D": 0}
    # D is neither chosen nor gold among answered items: tested letters A, B, C with expected 2, 2, 1
    assert result.letters_tested == ("A", "B", "C")
    assert result.expected == {"A": 2.0, "B": 2.0, "C": 1.0, "D": None}
    assert result.chi2 == pytest.approx(1.0)
    assert result.dof == 2
    assert result.p_value == pytest.approx(math.exp(-0.5))  # chi2(2) survival function
    assert "rough" in (result.note or "")
    payload = result.as_dict()
    assert json.loads(json.dumps(payload)) == payload
    for key in ("n", "chosen", "gold", "chi2", "dof", "p_value", "test", "accuracy_by_gold", "wrong_choice"):
        assert key in payload

    # official protocol: the failure is dropped, so gold D has no accuracy
    official = position_bias(
        make_frame(
            [
                ("m", "1", 0, 0),
                ("m", "2", 1, 0),
                ("m", "3", 2, 2),
                ("m", "4", 3, None),
                ("m", "5", 0, 1),
                ("m", "6", 1, 0),
            ],
            protocol="official",
        )
    )["m"]
    assert official.accuracy_by_gold["D"] is None
    assert official.chi2 == pytest.approx(1.0)


def test_never_gold_letter_counts_as_evidence() -> None:
    # gold only A/B (20 each); the model answers right 30 times and says C (never gold) 10 times
    rows = []
    for i in range(40):
        gold = i % 2
        rows.append(("m", f"u{i}", gold, 2 if i < 10 else gold))
    result = position_bias(make_frame(rows))["m"]
    assert result.letters_tested == ("A", "B", "C")
    # gold counts over the (all 40) answered items: A 20, B 20, C 0; chosen A 15, B 15, C 10
    weights = [20 + PSEUDO_COUNT, 20 + PSEUDO_COUNT, PSEUDO_COUNT]
    expected = [40 * w / sum(weights) for w in weights]
    reference = chisquare([15, 15, 10], f_exp=expected)
    assert result.expected["C"] == pytest.approx(expected[2])
    assert result.chi2 == pytest.approx(float(reference.statistic))
    assert result.p_value is not None and result.p_value < 1e-6
    assert "never gold" in (result.note or "")
    assert result.as_dict()["chi2"] is not None


def test_undefined_test_and_empty_inputs() -> None:
    only_a = position_bias(make_frame([("m", f"u{i}", 0, 0) for i in range(5)]))["m"]
    assert only_a.p_value is None and only_a.chi2 is None and only_a.dof is None
    assert "undefined" in (only_a.note or "")
    assert json.dumps(only_a.as_dict())

    silent = position_bias(make_frame([("m", "u1", 0, None), ("m", "u2", 1, None)]))["m"]
    assert silent.n == 0 and silent.p_value is None and silent.reason
    assert silent.accuracy_by_gold["A"] == 0.0

    empty = make_frame([])
    assert position_bias(empty) == {}
    assert position_bias_frame({}).empty
    assert letter_confusion(empty).empty


def test_frames_for_plots() -> None:
    frame = make_frame(
        [("m", "1", 0, 0), ("m", "2", 1, 0), ("m", "3", 2, 2), ("m", "4", 3, None), ("n", "1", 0, 3), ("n", "2", 1, 1)]
    )
    long = position_bias_frame(position_bias(frame))
    assert list(long.columns) == ["model", "letter", "chosen", "gold", "expected", "accuracy_by_gold"]
    assert len(long) == 8
    assert long.set_index(["model", "letter"]).loc[("m", "A"), "chosen"] == 2

    confusion = letter_confusion(frame)
    assert list(confusion.columns) == list(LETTERS)
    assert confusion.loc[("m", "B"), "A"] == 1
    assert confusion.loc[("n", "A"), "D"] == 1
    assert confusion.loc[("m", "D")].sum() == 0
    assert int(confusion.to_numpy().sum()) == 5
    with_none = letter_confusion(frame, include_unanswered=True)
    assert with_none.loc[("m", "D"), NO_LETTER] == 1
    assert int(with_none.to_numpy().sum()) == 6
    tidy = letter_confusion(frame, long=True)
    assert list(tidy.columns) == ["model", "gold_letter", "chosen_letter", "count"]
    assert len(tidy) == 2 * 4 * 4 and int(tidy["count"].sum()) == 5
    assert tidy.set_index(["model", "gold_letter", "chosen_letter"]).loc[("n", "A", "D"), "count"] == 1
    assert letter_confusion(make_frame([]), long=True).empty
