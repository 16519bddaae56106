"""Tiered sound-source benchmark: metrics equal hand computations, the confound analysis finds what was planted."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from airbench_nb.analysis import tiered as analysis
from airbench_nb.scoring import tiered
from airbench_nb.scoring.tiered import NO_ANSWER, score_closed_set, score_open_vocabulary

ROOT = Path(__file__).resolve().parents[1]

H = {"police": "siren", "ambulance": "siren", "fire": "siren", "church": "bell", "door": "bell", "dog": "animal"}
"""Six fine classes in three categories."""

GOLD = ["police", "police", "ambulance", "fire", "church", "church", "door", "dog"]
PRED = ["police", "ambulance", "ambulance", None, "church", "door", "church", "police"]

H2 = {"police": "siren", "ambulance": "siren", "church": "bell", "dog": "animal"}
"""Four fine classes in three categories (every class has an item in the top-k example)."""


@pytest.fixture(scope="module")
def closed() -> tiered.SystemMetrics:
    return score_closed_set(H, GOLD, PRED, system="lalm", tier="A")


# ------------------------------------------------------------------------------------------- macro metrics


def test_fine_macro_metrics_equal_hand_computation(closed: tiered.SystemMetrics) -> None:
    # per class (P, R, F1): police (1/2, 1/2, 1/2), ambulance (1/2, 1, 2/3), fire (0, 0, 0: unanswered, never
    # predicted), church (1/2, 1/2, 1/2), door (0, 0, 0), dog (0, 0, 0: absent from the predictions, still counted)
    fine = closed.fine
    assert fine.labels == list(H)
    assert fine.macro_precision == pytest.approx(1.5 / 6)
    assert fine.macro_recall == pytest.approx(2 / 6)
    assert fine.macro_f1 == pytest.approx((0.5 + 2 / 3 + 0.5) / 6)
    assert fine.macro_fnr == pytest.approx(1 - 2 / 6)
    assert fine.per_class["dog"].recall == 0 and fine.per_class["dog"].support == 1
    assert fine.per_class["ambulance"].f1 == pytest.approx(2 / 3)
    assert fine.n == 8 and fine.unanswered == 1


def test_coarse_metrics_follow_from_the_fine_predictions(closed: tiered.SystemMetrics) -> None:
    # gold coarse: siren x4, bell x3, animal; predicted coarse: siren siren siren (no answer) bell bell bell siren
    # siren (P 3/4, R 3/4), bell (1, 1), animal (0, 0)
    coarse = closed.coarse
    assert coarse.labels == ["siren", "bell", "animal"]
    assert coarse.macro_precision == pytest.approx(1.75 / 3)
    assert coarse.macro_recall == pytest.approx(1.75 / 3)
    assert coarse.macro_f1 == pytest.approx(1.75 / 3)
    assert coarse.macro_fnr == pytest.approx(1 - 1.75 / 3)
    assert coarse.per_class["siren"].precision == pytest.approx(0.75)
    assert closed.f1_drop == pytest.approx(1.75 / 3 - 5 / 18)


def test_a_class_absent_from_predictions_counts_in_the_macro_average(closed: tiered.SystemMetrics) -> None:
    from sklearn.metrics import f1_score

    y_pred = [p or NO_ANSWER for p in PRED]
    only_present = f1_score(GOLD, y_pred, average="macro", zero_division=0)  # labels seen in gold or predictions
    assert closed.fine.macro_f1 == pytest.approx(
        f1_score(GOLD, y_pred, labels=list(H), average="macro", zero_division=0)
    )
    assert closed.fine.macro_f1 != pytest.approx(only_present)  # the no-answer label would have counted as a class


def test_a_class_without_items_is_listed_and_counts_as_zero() -> None:
    result = score_closed_set({**H, "cat": "animal"}, GOLD, PRED, system="s")
    assert result.fine.classes_without_items == ["cat"]
    assert result.fine.macro_recall == pytest.approx(2 / 7)


def test_an_unknown_prediction_is_unanswered_and_counted() -> None:
    result = score_closed_set(H, ["police", "dog"], ["police", "none"], system="s")
    assert result.fine.unanswered == 1 and result.fine.outside_label_set == 1
    assert result.coarse.confusion_frame(normalise=False).loc["animal", NO_ANSWER] == 1


def test_confusion_rows_sum_to_one_with_a_no_answer_column(closed: tiered.SystemMetrics) -> None:
    for metrics in (closed.fine, closed.coarse):
        frame = metrics.confusion_frame()
        assert list(frame.columns)[-1] == NO_ANSWER
        assert np.allclose(frame.sum(axis=1), 1.0)
    assert closed.fine.confusion_frame().loc["fire", NO_ANSWER] == 1.0
    assert closed.fine.confusion_frame().loc["police", "ambulance"] == 0.5
    assert closed.coarse.confusion_frame(normalise=False).loc["animal", "siren"] == 1


def test_bad_input_is_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="gold label 'cat' of item 1"):
        score_closed_set(H, ["dog", "cat"], ["dog", "dog"])
    with pytest.raises(ValueError, match="2 predictions for 3 gold"):
        score_closed_set(H, ["dog"] * 3, ["dog"] * 2)
    with pytest.raises(ValueError, match="tier must be one of"):
        score_closed_set(H, ["dog"], ["dog"], tier="E")
    with pytest.raises(ValueError, match="non-empty string"):
        tiered.Hierarchy({"dog": ""})


# ------------------------------------------------------------------------------------------------- top-k

RANKED_GOLD = ["police", "police", "ambulance", "church", "dog"]
RANKED = [
    ["ambulance", "church", "police", "dog"],
    ["police", "ambulance", "church", "dog"],
    ["police", "church", "dog", "ambulance"],
    ["police", "ambulance", "dog", "church"],  # categories in order: siren, animal, bell -> bell is 3rd
    ["dog", "police", "ambulance", "church"],
]


def test_top_k_recall_equals_hand_computation() -> None:
    result = score_closed_set(H2, RANKED_GOLD, [None] * 5, system="clap", tier="C", ranked=RANKED)
    # fine, per class (police, ambulance, church, dog): top-1 (1/2, 0, 0, 1), top-3 (1, 0, 0, 1), top-5 all 1
    assert result.fine.top_k == pytest.approx({1: 1.5 / 4, 3: 0.5, 5: 1.0})
    # coarse, deduplicated categories in order: (siren, bell, animal) x3, (siren, animal, bell), (animal, siren, bell)
    # per category (siren, bell, animal): top-1 (1, 0, 1), top-3 (1, 1, 1)
    assert result.coarse.top_k == pytest.approx({1: 2 / 3, 3: 1.0, 5: 1.0})
    # top-1 recall is the macro recall of the first-ranked class
    assert result.fine.macro_recall == pytest.approx(result.fine.top_k[1])
    assert result.coarse.macro_recall == pytest.approx(result.coarse.top_k[1])


def test_json_has_the_shape_issue_21_asks(closed: tiered.SystemMetrics) -> None:
    ranked = score_closed_set(H2, RANKED_GOLD, [None] * 5, system="clap", tier="C", ranked=RANKED)
    out = json.loads(json.dumps(tiered.tiers_json([closed, ranked])))
    assert set(out["tiers"]) == {"A", "B", "C", "D"}
    assert out["reasons"] == {"B": "no system of tier B in this run", "D": "no system of tier D in this run"}
    lalm = out["tiers"]["A"]["lalm"]
    for g in ("coarse", "fine"):
        assert {"macro_precision", "macro_recall", "macro_f1", "macro_fnr", "n"} <= set(lalm[g])
    assert lalm["top_k"] == {} and "top_k_reason" in lalm
    assert set(out["tiers"]["C"]["clap"]["top_k"]) == {"1", "3", "5"}


# ------------------------------------------------------------------------------------------------- tier D


def test_tier_d_has_recall_and_fnr_only() -> None:
    gold = ["police", "police", "ambulance", "church", "dog"]
    result = score_open_vocabulary(H2, gold, [True, True, True, False, False], [True, False, False, False, True])
    assert result.tier == "D"
    # fine: police 1/2, ambulance 0, church 0, dog 1; coarse (a subclass hit implies the category): 1, 0, 1
    assert result.fine.macro_recall == pytest.approx(1.5 / 4)
    assert result.fine.macro_fnr == pytest.approx(2.5 / 4)
    assert result.coarse.macro_recall == pytest.approx(2 / 3)
    for g in (result.coarse, result.fine):
        assert g.macro_precision is None and g.macro_f1 is None and g.reason == tiered.TIER_D_REASON
        assert g.confusion_frame().empty
        assert g.to_json()["macro_f1"] is None and g.to_json()["reason"].startswith("n/a")
    assert result.f1_drop is None


def test_tier_tables_are_per_tier_and_sorted() -> None:
    a1 = score_closed_set(H, GOLD, PRED, system="weak", tier="A")
    a2 = score_closed_set(H, GOLD, GOLD, system="oracle", tier="A")
    d = score_open_vocabulary(H2, ["dog"], [True], [True], system="open")
    tables = analysis.tier_tables([a1, a2, d])
    assert list(tables["A"]["system"]) == ["oracle", "weak"]
    assert tables["B"].empty and list(tables["B"].columns) == list(analysis.TIER_COLUMNS)
    assert (
        math.isnan(tables["D"].loc[0, "fine_f1"]) and tables["D"].loc[0, "fine_recall"] == 0.25
    )  # 3 classes without items count 0


# ------------------------------------------------------------------------------------------ confident language

SENTENCES = [
    ("The sound is a police siren.", "plain"),
    ("This is clearly a church bell ringing.", "boosted"),
    ("It is definitely an ambulance.", "boosted"),
    ("It sounds like a dog barking.", "plain"),
    ("It might be a fire truck siren.", "hedged"),
    ("This could be an ambulance, but I'm not sure.", "hedged"),
    ("I’m not sure: the audio is ambiguous.", "hedged"),
    ("Probably a doorbell.", "hedged"),
    ("The pitch seems to alternate between two tones.", "hedged"),
    ("I think the answer is B.", "hedged"),
    ("The mayor's car alarm.", "plain"),  # "may" inside a word is no hedge
    ("", None),
]


@pytest.mark.parametrize(("text", "label"), SENTENCES)
def test_lexicon_labels_confident_and_hedged_sentences(text: str, label: str | None) -> None:
    assert analysis.confidence_label(text) == label


def test_confident_share_counts_wrong_and_right_answers_with_wilson_intervals() -> None:
    frame = pd.DataFrame(
        {
            "system": ["m"] * 6,
            "correct": [False, False, False, False, True, True],
            "response": ["It is a siren.", "Clearly a bell.", "Maybe a dog.", None, "A dog.", "Perhaps a bell."],
        }
    )
    share = analysis.confident_share(frame)["m"]
    assert (share.wrong_n, share.wrong_confident, share.wrong_boosted, share.no_text) == (3, 2, 1, 1)
    assert share.wrong_share == pytest.approx(2 / 3) and share.right_share == pytest.approx(1 / 2)
    assert share.wrong_ci[0] < 2 / 3 < share.wrong_ci[1]
    assert share.wrong_ci == pytest.approx((0.2077, 0.9385), abs=1e-3)  # Wilson interval of 2/3


def test_docs_print_the_whole_lexicon() -> None:
    page = (ROOT / "docs" / "tiered.md").read_text(encoding="utf-8")
    table = analysis.lexicon_frame()
    missing = [e for e in table["expression"] if f"`{e}`" not in page]
    assert not missing, f"docs/tiered.md lacks lexicon expressions {missing}"
    assert f"version {analysis.CONFIDENCE_LEXICON.version}" in page


# ------------------------------------------------------------------------------------------- strategy labels

STRATEGY_SENTENCES = [
    ("B", "no justification"),
    ("Answer: C", "no justification"),
    ("The sound is a police car siren. Answer: A", "direct assertion"),
    (
        "The pitch sweeps up and down with a slow modulation of about 0.3 Hz, typical of a wail siren. Answer: A",
        "detailed acoustic analysis",
    ),
    ("It sounds like a classic church bell, very familiar. Answer: D", "holistic pattern match"),
    ("It is not a dog and I can rule out the engine, so by elimination it is a knock. Answer: F", "elimination"),
]


@pytest.mark.parametrize(("text", "strategy"), STRATEGY_SENTENCES)
def test_keyword_proxy_labels_strategies(text: str, strategy: str) -> None:
    classifier = analysis.KeywordStrategyClassifier()
    assert isinstance(classifier, analysis.StrategyClassifier)
    label = classifier.classify(text)
    assert label.strategy == strategy
    assert label.classifier.endswith(analysis.STRATEGY_CUES_VERSION) and classifier.proxy


# ---------------------------------------------------------------------------------------------- the confound

STRATS = analysis.STRATEGIES[:4]


def planted(effect: float, seed: int = 7, per_class: int = 160) -> pd.DataFrame:
    """Answers over 12 classes of accuracy 0.15-0.95; hard classes mostly reason acoustically, easy ones assert.

    The strategy is chosen by class difficulty; correctness is Bernoulli of the class accuracy, its log-odds raised
    by ``effect`` for detailed acoustic analysis (0: no real effect, a pure confound).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for c, p in enumerate(np.linspace(0.15, 0.95, 12)):
        # hard classes: acoustic/elimination; easy classes: holistic/direct assertion
        weights = np.array([1 - p, 1 - p, p, p]) + 0.05
        strategies = rng.choice(STRATS, size=per_class, p=weights / weights.sum())
        logit = np.log(p / (1 - p)) + effect * (strategies == "detailed acoustic analysis")
        correct = rng.random(per_class) < 1 / (1 + np.exp(-logit))
        length = rng.poisson(40 + 120 * (1 - p), size=per_class)  # longer answers on hard classes
        rows += [
            {"gold": f"class{c}", "strategy": s, "correct": bool(k), "words": int(w), "system": "m"}
            for s, k, w in zip(strategies, correct, length, strict=True)
        ]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def confounded() -> analysis.StrategyAssociation:
    return analysis.strategy_association(planted(effect=0.0))


def test_planted_confound_is_significant_raw_and_not_within_class(confounded: analysis.StrategyAssociation) -> None:
    assert confounded.raw.p_value < 0.01
    assert confounded.controlled.p_value > 0.05
    assert confounded.controlled.df == 3 and confounded.strata_used == 12
    acoustic = next(r for r in confounded.per_strategy if r.strategy == "detailed acoustic analysis")
    assert acoustic.crude_ci[1] < 1.0  # looks harmful when pooled
    assert acoustic.mh_ci[0] < 1.0 < acoustic.mh_ci[1]  # not within classes


def test_planted_real_effect_stays_significant_when_controlled() -> None:
    result = analysis.strategy_association(planted(effect=1.2))
    assert result.controlled.p_value < 0.01
    acoustic = next(r for r in result.per_strategy if r.strategy == "detailed acoustic analysis")
    assert acoustic.mh_ci[0] > 1.0 and acoustic.cmh_p < 0.01


def test_length_confound_is_significant_raw_and_not_within_class() -> None:
    result = analysis.length_association(planted(effect=0.0))
    assert result.point_biserial_r < 0 and result.r_p < 0.01 and result.raw_p < 0.01
    assert result.r_ci[0] < result.point_biserial_r < result.r_ci[1]
    assert result.controlled_p > 0.05
    assert result.controlled_ci[0] < 0 < result.controlled_ci[1]


def test_strategy_association_labels_with_the_proxy_and_serialises() -> None:
    texts = dict(STRATEGY_SENTENCES)
    frame = pd.DataFrame(
        {
            "gold": ["a", "a", "a", "b", "b", "b"] * 4,
            "correct": [True, False, True, False, True, False] * 4,
            "response": [t for t, _ in STRATEGY_SENTENCES] * 4,
        }
    )
    result = analysis.strategy_association(frame)
    assert result.proxy and result.classifier.startswith("keyword-proxy")
    assert sum(result.counts.values()) == 24 and set(result.counts) <= set(texts.values())
    out = json.loads(json.dumps(analysis.reasoning_json(analysis.length_association(frame), result)))
    assert re.match(r"chi2\(\d+\) = ", out["association"]["raw"]["text"])
    assert set(out) == {"length", "strategies", "association"}
    empty = analysis.reasoning_json(None, None)
    assert empty["association"]["raw"] == {} and empty["strategies"]["reason"]


# ------------------------------------------------------------------------------------------------- figures


def test_figures_render(closed: tiered.SystemMetrics, confounded: analysis.StrategyAssociation) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from airbench_nb import plots_tiered
    from airbench_nb.plots import png_bytes

    d = score_open_vocabulary(H, ["dog"], [True], [True], system="open")
    figures = [
        plots_tiered.confusion_pair(closed.coarse.confusion_frame(), closed.fine.confusion_frame(), "lalm", 8),
        plots_tiered.tier_f1_bars(analysis.tier_tables([closed, d])),
        plots_tiered.strategy_odds(confounded.frame(), confounded.raw.describe(), confounded.controlled.describe()),
        plots_tiered.confident_bars(
            analysis.confident_frame(
                analysis.confident_share(
                    pd.DataFrame({"system": ["m", "m"], "correct": [True, False], "response": ["A dog.", "Maybe."]})
                )
            )
        ),
    ]
    for fig in figures:
        assert fig is not None and fig.axes[0].get_title() and fig.axes[0].get_xlabel()
        assert png_bytes(fig).startswith(b"\x89PNG")
        plt.close(fig)
    assert plots_tiered.confusion_pair(d.coarse.confusion_frame(), d.fine.confusion_frame(), "open", 1) is None
