"""Order bias of Chat judges, on frames with planted effects and hand-counted flips, ties and length preferences."""

import json

import numpy as np
import pandas as pd
import pytest

from airbench_nb.analysis.data import CHAT_COLUMNS
from airbench_nb.analysis.order_bias import PAIR_COLUMNS, order_bias, order_bias_frame, order_pairs


def chat_rows(judge, model, scores, words=None):
    """Rows of a chat frame: ``scores[uid] = {order: (score_model, score_reference)}``; words: (response, reference)."""
    rows = []
    for uid, by_order in scores.items():
        response_words, reference_words = (words or {}).get(uid, (10, 10))
        for order, (model_score, reference_score) in by_order.items():
            failed = model_score is None
            rows.append(
                {
                    "model": model,
                    "judge": judge,
                    "uid": uid,
                    "task": "speech_QA",
                    "category": "speech",
                    "order": order,
                    "score_model": np.nan if failed else float(model_score),
                    "score_reference": np.nan if failed else float(reference_score),
                    "failed": failed,
                    "reason": "hand",
                    "response_words": response_words,
                    "reference_words": reference_words,
                }
            )
    return rows


def frame(rows):
    out = pd.DataFrame(rows, columns=list(CHAT_COLUMNS))
    out["response_words"] = out["response_words"].astype("Int64")
    out["reference_words"] = out["reference_words"].astype("Int64")
    return out


def planted(judge, bias, n=80, seed=7):
    """Order-independent true scores plus noise; the answer shown first gets ``bias`` on top."""
    rng = np.random.default_rng(seed)
    true_model = rng.uniform(3, 7, n)
    true_reference = rng.uniform(5, 8, n)
    scores = {}
    for i in range(n):
        noise = rng.normal(0, 0.7, 4)
        scores[f"u{i:03d}"] = {
            # hypothesis_first: the model's answer is read first
            "hypothesis_first": (true_model[i] + bias + noise[0], true_reference[i] + noise[1]),
            # reference_first: the reference is read first
            "reference_first": (true_model[i] + noise[2], true_reference[i] + bias + noise[3]),
        }
    return chat_rows(judge, "m", scores)


def test_planted_first_position_bias_found_and_unbiased_judge_clean():
    results = order_bias(frame(planted("biased", 1.0) + planted("fair", 0.0)), seed=0, reps=2000)
    biased, fair = results["biased"]["m"], results["fair"]["m"]
    assert biased.n_pairs == fair.n_pairs == 80
    assert biased.mean_diff == pytest.approx(1.0, abs=0.25)
    assert biased.ci_low > 0 and biased.ci_high > biased.mean_diff > biased.ci_low
    assert biased.wilcoxon_p < 0.01
    assert biased.test == "Wilcoxon signed-rank"
    assert fair.ci_low < 0 < fair.ci_high
    assert fair.wilcoxon_p > 0.05
    assert results.reason is None


def test_bootstrap_is_seeded():
    data = frame(planted("j", 0.5, n=30))
    a, b = order_bias(data, seed=3, reps=500)["j"]["m"], order_bias(data, seed=3, reps=500)["j"]["m"]
    c = order_bias(data, seed=4, reps=500)["j"]["m"]
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)


def test_flips_ties_and_unpaired_hand_case():
    # (score_model, score_reference) per order
    scores = {
        "a": {"hypothesis_first": (8, 5), "reference_first": (4, 6)},  # model then reference: flip
        "b": {"hypothesis_first": (7, 5), "reference_first": (7, 6)},  # model both: no flip
        "c": {"hypothesis_first": (5, 5), "reference_first": (7, 6)},  # tie in one order
        "d": {"hypothesis_first": (3, 6), "reference_first": (6, 3)},  # reference then model: flip
        "e": {"hypothesis_first": (2, 9), "reference_first": (3, 9)},  # reference both: no flip
        "f": {"hypothesis_first": (6, 2), "reference_first": (None, None)},  # unscored order: unpaired
    }
    result = order_bias(frame(chat_rows("j", "m", scores)), reps=200)["j"]["m"]
    assert result.n_pairs == 5 and result.unpaired == 1
    assert result.ties == 1 and result.tie_rate == pytest.approx(1 / 5)
    assert result.flips == 2 and result.flip_rate == pytest.approx(2 / 4)
    # differences shown first - shown second: 4, 0, -2, -3, -1
    assert result.mean_diff == pytest.approx(-0.4)


def test_length_preference_hand_case():
    scores = {
        "a": {"hypothesis_first": (8, 5), "reference_first": (7, 5)},  # model longer, wins twice
        "b": {"hypothesis_first": (4, 6), "reference_first": (6, 6)},  # model longer, loses once; one tie left out
        "c": {"hypothesis_first": (3, 8), "reference_first": (3, 7)},  # reference longer, wins twice
        "d": {"hypothesis_first": (9, 2), "reference_first": (9, 3)},  # equal lengths: left out
    }
    words = {"a": (40, 10), "b": (30, 10), "c": (5, 20), "d": (10, 10)}
    result = order_bias(frame(chat_rows("j", "m", scores, words)), reps=200)["j"]["m"]
    assert result.length_pairs == 5
    assert result.longer_wins == 4
    assert result.prefers_longer == pytest.approx(4 / 5)
    assert result.length_p == pytest.approx(0.375)  # two-sided exact binomial, 4 of 5 at 0.5


def test_all_zero_differences_give_p_one_with_note():
    scores = {f"u{i}": {"hypothesis_first": (6, 5), "reference_first": (6, 4)} for i in range(6)}
    result = order_bias(frame(chat_rows("j", "m", scores)), reps=200)["j"]["m"]
    assert result.mean_diff == 0.0
    assert result.wilcoxon_p == 1.0
    assert (result.ci_low, result.ci_high) == (0.0, 0.0)
    assert "zero" in result.note


def test_empty_and_unpaired_only_give_reason_not_error():
    empty = order_bias(frame([]))
    assert empty == {} and empty.reason
    assert order_bias_frame(empty).empty
    only_one_order = {"a": {"hypothesis_first": (6, 5)}}
    results = order_bias(frame(chat_rows("j", "m", only_one_order)))
    result = results["j"]["m"]
    assert result.n_pairs == 0 and result.unpaired == 1 and result.mean_diff is None
    assert results.reason


def test_as_dict_json_and_frames():
    results = order_bias(frame(planted("j", 1.0, n=20)), reps=200)
    payload = json.loads(json.dumps(results.as_dict(), allow_nan=False))
    entry = payload["by_judge"]["j"]["m"]
    for key in (
        "n_pairs",
        "mean_diff",
        "ci_low",
        "ci_high",
        "wilcoxon_p",
        "test",
        "flip_rate",
        "tie_rate",
        "flips",
        "length_pairs",
        "prefers_longer",
    ):
        assert key in entry
    assert type(entry["mean_diff"]) is float and type(entry["n_pairs"]) is int
    table = order_bias_frame(results)
    assert list(table[["judge", "model", "n_pairs"]].iloc[0]) == ["j", "m", 20]
    pairs = order_pairs(frame(planted("j", 1.0, n=20)))
    assert tuple(pairs.columns) == PAIR_COLUMNS and len(pairs) == 20
    assert (pairs["shown_first"] - pairs["shown_second"]).mean() == pytest.approx(results["j"]["m"].mean_diff)
