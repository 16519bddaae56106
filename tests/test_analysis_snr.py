"""Accuracy against SNR, on frames with planted accuracies per SNR and hand counts."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from airbench_nb.analysis.data import FOUNDATION_COLUMNS
from airbench_nb.analysis.snr import FRAME_COLUMNS, LOGIT_TEST, SPEARMAN_TEST, snr_curves, snr_frame

SNRS = (10.0, 5.0, 0.0, -5.0, -10.0)
PLANTED = {10.0: 0.9, 5.0: 0.75, 0.0: 0.6, -5.0: 0.45, -10.0: 0.3}
N = 100


def row(model, uid, correct, snr_db=math.nan, clean_uid=None, background=None, task="Sound_AQA"):
    return {
        "model": model,
        "uid": uid,
        "task": task,
        "dataset": "d",
        "category": "sound",
        "n_choices": 4,
        "choices": ("a", "b", "c", "d"),
        "gold": 0,
        "gold_letter": "A",
        "chosen": None,
        "chosen_letter": None,
        "chosen_text": None,
        "correct": correct,
        "failed": correct is None,
        "reason": "hand",
        "judge": "rule",
        "response": "A",
        "words": 1,
        "snr_db": snr_db,
        "clean_uid": clean_uid,
        "background": background,
        "rotation_of": None,
        "rotation": None,
    }


def frame(rows):
    out = pd.DataFrame(rows, columns=list(FOUNDATION_COLUMNS))
    out["correct"] = out["correct"].astype("boolean")
    out["snr_db"] = out["snr_db"].astype(float)
    return out


def graded_rows(model, accuracy_at, clean_accuracy=0.95, n=N):
    """``n`` clean originals c0..c{n-1}; one copy of each per SNR; the first ``round(acc * n)`` copies are right.

    Even originals are Sound_AQA with noise, odd ones Audio_Grounding with music.
    """
    rows = []
    for i in range(n):
        task = "Sound_AQA" if i % 2 == 0 else "Audio_Grounding"
        rows.append(row(model, f"c{i}", i < round(clean_accuracy * n), task=task))
        for snr in SNRS:
            background = "noise" if i % 2 == 0 else "music"
            right = i < round(accuracy_at(snr) * n)
            rows.append(row(model, f"c{i}@{snr:g}", right, snr, f"c{i}", background, task))
    return rows


def test_planted_accuracies_wilson_cis_and_rising_trend():
    rows = graded_rows("m", PLANTED.__getitem__)
    rows.append(row("m", "other", True))  # neither graded nor an original: not in any curve
    curves = snr_curves(frame(rows))
    points = curves.curves["m"]
    assert [p.snr_db for p in points] == [-10.0, -5.0, 0.0, 5.0, 10.0, None]
    assert points[-1].clean and points[-1].n == N and points[-1].accuracy == pytest.approx(0.95)
    for point in points[:-1]:
        assert point.n == N
        assert point.accuracy == pytest.approx(PLANTED[point.snr_db])
        low, high = proportion_confint(point.correct, N, alpha=0.05, method="wilson")
        assert (point.ci_low, point.ci_high) == pytest.approx((low, high))
        # and the Wilson formula by hand
        p, z = point.accuracy, 1.959963984540054
        centre = (p + z * z / (2 * N)) / (1 + z * z / N)
        half = z / (1 + z * z / N) * math.sqrt(p * (1 - p) / N + z * z / (4 * N * N))
        assert (point.ci_low, point.ci_high) == pytest.approx((centre - half, centre + half))
    trend = curves.trends["m"]
    assert trend.test == LOGIT_TEST
    assert trend.slope > 0 and trend.p_value < 0.01
    assert trend.slope_ci_low > 0
    assert trend.n == 5 * N and trend.levels == 5


def test_by_task_and_background_have_their_own_clean_points():
    curves = snr_curves(frame(graded_rows("m", PLANTED.__getitem__)))
    assert set(curves.by_task["m"]) == {"Sound_AQA", "Audio_Grounding"}
    assert set(curves.by_background["m"]) == {"noise", "music"}
    noise = curves.by_background["m"]["noise"]
    # even i: copies right for i < 90 at +10 dB -> 45 of 50; originals right for i < 95 -> 48 of 50
    assert noise[-1].clean and (noise[-1].n, noise[-1].correct) == (50, 48)
    assert [(p.snr_db, p.correct) for p in noise if p.snr_db == 10.0] == [(10.0, 45)]


def test_flat_model_has_no_trend_and_separation_falls_back_to_spearman():
    rows = graded_rows("flat", lambda snr: 0.5) + graded_rows("cliff", lambda snr: 1.0 if snr >= 0 else 0.0)
    curves = snr_curves(frame(rows))
    flat = curves.trends["flat"]
    assert flat.test == LOGIT_TEST and flat.slope == pytest.approx(0.0, abs=1e-6) and flat.p_value > 0.5
    cliff = curves.trends["cliff"]
    assert cliff.test == SPEARMAN_TEST and cliff.slope is None
    assert cliff.rho > 0.8 and cliff.p_value < 0.01 and "separation" in cliff.note


def test_official_failures_dropped_and_counted():
    rows = [row("m", f"u{i}", [True, False, None][i % 3], 0.0) for i in range(9)]
    rows += [row("m", f"v{i}", True, 5.0) for i in range(3)]
    curves = snr_curves(frame(rows))
    zero = curves.curves["m"][0]
    assert (zero.snr_db, zero.n, zero.correct, zero.dropped, zero.accuracy) == (0.0, 6, 3, 3, 0.5)
    assert all(not p.clean for p in curves.curves["m"])  # no clean_uid: no clean point
    assert curves.by_background["m"] == {}


def test_no_graded_rows_gives_reason():
    curves = snr_curves(frame([row("m", "a", True), row("m", "b", False)]))
    assert curves.curves == {} and curves.reason
    assert snr_frame(curves).empty
    assert snr_curves(frame([])).reason


def test_too_few_levels_or_constant_answers_give_note_not_error():
    one_level = snr_curves(frame([row("m", f"u{i}", i % 2 == 0, 0.0) for i in range(6)]))
    assert one_level.trends["m"].test is None and "fewer than two" in one_level.trends["m"].note
    all_right = snr_curves(frame([row("m", f"u{i}", True, float(i)) for i in range(6)]))
    assert all_right.trends["m"].test is None and "right" in all_right.trends["m"].note


def test_as_dict_json_and_long_frame():
    curves = snr_curves(frame(graded_rows("m", PLANTED.__getitem__, n=20)))
    payload = json.loads(json.dumps(curves.as_dict(), allow_nan=False))
    clean = payload["curves"]["m"][-1]
    assert clean["snr_db"] is None and clean["clean"] is True
    assert type(payload["curves"]["m"][0]["accuracy"]) is float
    assert set(payload) >= {"curves", "by_task", "by_background", "trends"}
    long = snr_frame(curves)
    assert tuple(long.columns) == FRAME_COLUMNS
    assert set(long["level"]) == {"model", "task", "background"}
    model_rows = long[long["level"] == "model"]
    assert len(model_rows) == 6 and model_rows["clean"].sum() == 1
    assert np.isnan(model_rows[model_rows["clean"]]["snr_db"].iloc[0])


def test_all_right_and_all_wrong_intervals_contain_the_estimate():
    rows = [row("m", f"r{i}", True, 10.0) for i in range(9)] + [row("m", f"w{i}", False, -10.0) for i in range(9)]
    low, high = snr_curves(frame(rows)).curves["m"]
    assert (low.accuracy, low.ci_low) == (0.0, 0.0) and low.ci_high == pytest.approx(0.2991, abs=1e-4)
    assert (high.accuracy, high.ci_high) == (1.0, 1.0) and high.ci_low == pytest.approx(0.7009, abs=1e-4)
