"""Answer style: accuracy by answer length with Wilson intervals, and confident vs hedged wrong answers."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from scipy.stats import fisher_exact
from statsmodels.stats.proportion import proportion_confint

from airbench_nb.analysis.answers import (
    NO_TEXT,
    bin_labels,
    confidence,
    confidence_frame,
    hedge_pattern,
    is_hedged,
    length_accuracy,
)
from airbench_nb.analysis.data import FOUNDATION_COLUMNS


def make_frame(rows: list[tuple[str, str | None, bool | None, bool]]) -> pd.DataFrame:
    """Rows of (model, response, correct, failed)."""
    records = [
        {
            "model": model,
            "uid": f"u{i}",
            "response": response,
            "words": None if response is None else len(response.split()),
            "correct": correct,
            "failed": failed,
        }
        for i, (model, response, correct, failed) in enumerate(rows)
    ]
    frame = pd.DataFrame(records).reindex(columns=list(FOUNDATION_COLUMNS))
    frame["words"] = frame["words"].astype("Int64")
    frame["correct"] = frame["correct"].astype("boolean")
    frame["failed"] = frame["failed"].astype(bool)
    return frame


def words(n: int) -> str:
    return " ".join(["word"] * n)


def test_bin_labels() -> None:
    assert bin_labels((0, 1, 3, 10, 30, math.inf)) == ["1", "2-3", "4-10", "11-30", ">30"]
    assert bin_labels((0, 5, 6)) == ["1-5", "6"]


def test_length_accuracy_counts_and_wilson_intervals() -> None:
    rows = (
        [("m", "B", True, False)] * 6  # 1 word: 6 right, 2 wrong
        + [("m", "C", False, False)] * 2
        + [("m", "It is B", True, False)] * 3  # 3 words: 3 right
        + [("m", words(20), False, False)] * 4  # 11-30: 4 wrong
        + [("m", words(40), True, False), ("m", words(40), False, False)]  # >30: 1 of 2
        + [("m", None, False, True), ("m", "", False, True)]  # no text: strict failures, wrong
        + [("m", "I cannot tell.", None, True)]  # official failure: dropped
    )
    table = length_accuracy(make_frame(rows))
    assert table.attrs["ci"].startswith("Wilson")
    assert list(table["bin"]) == ["1", "2-3", "4-10", "11-30", ">30", NO_TEXT]
    by = table.set_index("bin")
    assert list(by["n"]) == [8, 3, 0, 4, 2, 2]
    assert list(by["correct"]) == [6, 3, 0, 0, 1, 0]
    assert by.loc["1", "accuracy"] == pytest.approx(0.75)
    assert math.isnan(by.loc["4-10", "accuracy"]) and math.isnan(by.loc["4-10", "ci_low"])
    low, high = proportion_confint(6, 8, alpha=0.05, method="wilson")
    assert (by.loc["1", "ci_low"], by.loc["1", "ci_high"]) == pytest.approx((low, high))
    # Wilson for 0 of 4 starts at 0 and is not degenerate
    assert by.loc["11-30", "ci_low"] == pytest.approx(0.0, abs=1e-12) and by.loc["11-30", "ci_high"] > 0.4
    assert table["bin"].cat.ordered
    # the interval holds the estimate even where statsmodels' float noise would not (9 of 9: upper 0.999...)
    nine = length_accuracy(make_frame([("m", "B", True, False)] * 9)).set_index("bin").loc["1"]
    assert nine["ci_high"] == 1.0 and nine["ci_low"] == pytest.approx(proportion_confint(9, 9, method="wilson")[0])
    filled = table.dropna(subset=["accuracy"])
    assert ((filled["ci_low"] <= filled["accuracy"]) & (filled["accuracy"] <= filled["ci_high"])).all()

    custom = length_accuracy(make_frame(rows), bins=(0, 2, 10))
    assert list(custom["bin"]) == ["1-2", "3-10", NO_TEXT, "outside bins"]
    assert list(custom["n"]) == [8, 3, 2, 6]
    with pytest.raises(ValueError, match="increasing"):
        length_accuracy(make_frame(rows), bins=(3, 1))
    assert length_accuracy(make_frame([])).empty


def test_confident_wrong_answers_and_hedged_right_answers() -> None:
    rows = (
        [("m", "The answer is B.", False, False)] * 6  # wrong, confident
        + [("m", "B, but I am not sure.", False, False)] * 2  # wrong, hedged
        + [("m", "A", True, False)] * 9  # right, confident
        + [("m", "Probably A, hard to tell.", True, False)]  # right, hedged
        + [("m", "I cannot tell.", False, True)] * 5  # failures: neither wrong nor right answers
    )
    result = confidence(make_frame(rows))["m"]
    assert (result.wrong_n, result.wrong_confident, result.wrong_hedged) == (8, 6, 2)
    assert result.confident_wrong_rate == pytest.approx(0.75)
    assert (result.right_n, result.right_hedged) == (10, 1)
    assert result.right_hedged_rate == pytest.approx(0.1)
    reference = fisher_exact([[2, 6], [1, 9]])
    assert result.p_value == pytest.approx(float(reference.pvalue))
    assert result.odds_ratio == pytest.approx(3.0)
    assert result.test.startswith("Fisher")
    low, high = result.confident_wrong_ci  # type: ignore[misc]
    assert low < 0.75 < high
    payload = result.as_dict()
    assert json.loads(json.dumps(payload)) == payload
    for key in ("wrong_n", "wrong_confident", "wrong_hedged", "confident_wrong_rate", "right_n", "right_hedged_rate"):
        assert key in payload

    plot = confidence_frame({"m": result})
    assert list(plot["answers"]) == ["wrong", "right"]
    assert list(plot["hedged_rate"]) == pytest.approx([0.25, 0.1])


def test_hedge_lexicon_is_the_extractors_and_can_be_widened() -> None:
    assert is_hedged("I'm not sure, maybe C")
    assert is_hedged("None of the above.")
    assert not is_hedged("It is probably C")
    assert not is_hedged(None)
    wide = hedge_pattern([r"\bprobably\b"])
    assert is_hedged("It is probably C", wide) and is_hedged("not sure", wide)
    rows = [("m", "It is probably C", False, False), ("m", "C", False, False)]
    assert confidence(make_frame(rows))["m"].wrong_hedged == 0
    assert confidence(make_frame(rows), extra_hedges=[r"\bprobably\b"])["m"].wrong_hedged == 1


def test_nothing_to_analyse() -> None:
    assert confidence(make_frame([])) == {}
    assert confidence_frame({}).empty
    silent = confidence(make_frame([("m", None, False, True)]))["m"]
    assert silent.reason and silent.wrong_n == 0 and silent.confident_wrong_rate is None and silent.p_value is None
    only_wrong = confidence(make_frame([("m", "B", False, False)]))["m"]
    assert only_wrong.p_value is None and "undefined" in (only_wrong.note or "")
    assert json.dumps(only_wrong.as_dict())
