"""UG-Bench style rankings, checked against ranks and weighted totals computed by hand."""

import json

import numpy as np
import pandas as pd
import pytest

from airbench_nb.analysis.ranking import (
    DEFAULT_WEIGHTS,
    capability_scores,
    parse_weights,
    ranking,
    ranking_frame,
    validate_weights,
)
from airbench_nb.scoring import PROXY_SHORT


def hand_scores():
    """speech: A .8, B .6, C .6, D .4; sound: A .5, B .7, C .5, D missing; music: C .9, others .3;
    chat: A 7.3, B 5.5, C 1, D 10."""
    return pd.DataFrame(
        {
            "model": ["A", "B", "C", "D"],
            "speech": [0.8, 0.6, 0.6, 0.4],
            "sound": [0.5, 0.7, 0.5, np.nan],
            "music": [0.3, 0.3, 0.9, 0.3],
            "chat": [7.3, 5.5, 1.0, 10.0],
        }
    )


def test_ranks_with_ties_and_totals_by_hand():
    result = ranking(hand_scores())
    by_model = {m.model: m for m in result.models}
    assert by_model["A"].ranks == {"speech": 1.0, "sound": 2.5, "music": 3.0, "chat": 2.0}
    assert by_model["B"].ranks == {"speech": 2.5, "sound": 1.0, "music": 3.0, "chat": 3.0}
    assert by_model["C"].ranks == {"speech": 2.5, "sound": 2.5, "music": 1.0, "chat": 4.0}
    assert by_model["D"].ranks == {"speech": 4.0, "music": 3.0, "chat": 1.0}  # no sound: no rank there
    assert by_model["A"].mean_rank == pytest.approx((1 + 2.5 + 3 + 2) / 4)
    assert by_model["D"].mean_rank == pytest.approx((4 + 3 + 1) / 3)
    # totals on 0-100: accuracy x 100, chat (score - 1) / 9 x 100
    assert by_model["A"].score == pytest.approx(0.4 * 80 + 0.3 * 50 + 0.2 * 30 + 0.1 * 70)  # 60
    assert by_model["B"].score == pytest.approx(0.4 * 60 + 0.3 * 70 + 0.2 * 30 + 0.1 * 50)  # 56
    assert by_model["C"].score == pytest.approx(0.4 * 60 + 0.3 * 50 + 0.2 * 90 + 0.1 * 0)  # 57
    # D lacks sound: weights renormalised over speech, music, chat
    assert by_model["D"].score == pytest.approx((0.4 * 40 + 0.2 * 30 + 0.1 * 100) / 0.7)
    assert [m.partial for m in result.models] == [False, False, False, True]
    assert [m.model for m in result.models] == ["A", "C", "B", "D"]


def test_weights_renormalised_and_scale_free():
    scores = pd.DataFrame({"speech": [0.8, 0.5], "chat": [7.3, np.nan]}, index=["A", "B"])
    result = ranking(scores, {"speech": 1, "chat": 1})
    by_model = {m.model: m for m in result.models}
    assert by_model["A"].score == pytest.approx((80 + 70) / 2)
    assert by_model["B"].score == pytest.approx(50.0) and by_model["B"].partial
    doubled = ranking(scores, {"speech": 2, "chat": 2})
    assert [m.score for m in doubled.models] == pytest.approx([m.score for m in result.models])
    # a capability of weight 0 missing does not make a model partial
    assert not ranking(scores, {"speech": 1}).models[1].partial


def test_bad_weights_refused_with_clear_message():
    with pytest.raises(ValueError, match="unknown capabilities.*speach"):
        ranking(hand_scores(), {"speach": 1.0})
    with pytest.raises(ValueError, match="'sound' must be a finite number >= 0"):
        ranking(hand_scores(), {"speech": 0.5, "sound": -0.1})
    with pytest.raises(ValueError, match="all zero"):
        validate_weights({"speech": 0, "chat": 0})
    with pytest.raises(ValueError, match="must be a number"):
        validate_weights({"speech": "lots"})


def test_out_of_range_scores_refused():
    with pytest.raises(ValueError, match="speech scores must lie in"):
        ranking(pd.DataFrame({"model": ["A"], "speech": [45.0]}))  # a percentage, not a fraction
    with pytest.raises(ValueError, match="chat scores"):
        ranking(pd.DataFrame({"model": ["A"], "chat": [0.0]}))


def test_parse_weights():
    assert parse_weights("speech=0.4,sound=0.3,music=0.2,chat=0.1") == dict(DEFAULT_WEIGHTS)
    assert parse_weights(" speech = 1 , chat=1 ") == {"speech": 1.0, "sound": 0.0, "music": 0.0, "chat": 1.0}
    for bad, message in [
        ("", "no weights"),
        ("speech0.4", "write capability=weight"),
        ("speech=", "write capability=weight"),
        ("speech=abc", "not a number"),
        ("speech=0.4,speech=0.1", "given twice"),
        ("speach=0.4", "unknown capabilities"),
        ("speech=-1", ">= 0"),
        ("speech=0,chat=0", "all zero"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_weights(bad)


def test_empty_and_as_dict():
    empty = ranking(pd.DataFrame(columns=["model", "speech"]))
    assert empty.models == () and empty.reason
    assert ranking_frame(empty).empty
    payload = json.loads(json.dumps(ranking(hand_scores()).as_dict(), allow_nan=False))
    assert payload["weights"] == dict(DEFAULT_WEIGHTS)
    first = payload["ranking"][0]
    assert set(first) >= {"model", "ranks", "mean_rank", "score", "partial"}
    assert first["model"] == "A" and type(first["score"]) is float
    frame = ranking_frame(ranking(hand_scores()))
    assert len(frame) == 4 * 5
    d_sound = frame[(frame.model == "D") & (frame.capability == "sound")].iloc[0]
    assert pd.isna(d_sound["rank"]) and pd.isna(d_sound["value"])


def summary():
    rows = []
    for model, judge, protocol, speech, chat in [
        ("m1", PROXY_SHORT, "strict", 0.5, 3.0),
        ("m1", PROXY_SHORT, "official", 0.6, 3.0),
        ("m1", "openai:gpt-4o", "strict", 0.5, 6.0),
        ("m2", PROXY_SHORT, "strict", 0.7, 2.0),
        ("m2", "openai:gpt-4o", "strict", 0.7, 8.0),
    ]:
        rows.append(
            {
                "model": model,
                "chat_judge": judge,
                "protocol": protocol,
                "foundation_speech": speech,
                "foundation_sound": 0.25,
                "foundation_music": None,
                "chat_average": chat,
            }
        )
    return pd.DataFrame(rows)


def test_capability_scores_from_summary():
    scores = capability_scores(summary(), "strict", chat_judge="proxy")
    assert list(scores.index) == ["m1", "m2"] and list(scores.columns) == ["speech", "sound", "music", "chat"]
    assert scores.loc["m1", "chat"] == 3.0 and scores.loc["m2", "speech"] == 0.7
    assert scores["music"].isna().all()
    llm = capability_scores(summary(), "strict", chat_judge="openai:gpt-4o")
    assert llm.loc["m2", "chat"] == 8.0
    assert ranking(llm).models[0].model == "m2"
    with pytest.raises(ValueError, match="several Chat judges"):
        capability_scores(summary(), "strict")
    assert capability_scores(summary(), "official").loc["m1", "speech"] == 0.6
    assert capability_scores(summary().iloc[0:0], "strict").empty
    with pytest.raises(ValueError, match="unknown protocol"):
        capability_scores(summary(), "lenient")
