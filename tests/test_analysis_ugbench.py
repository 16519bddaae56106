"""UG-Bench's ranking over every task: hand-computed ranks, sub-ranks and totals; the capability map; bad input."""

from __future__ import annotations

import json
import math

import matplotlib
import pandas as pd
import pytest

from airbench_nb import plots
from airbench_nb.analysis.report import RunAnalysis
from airbench_nb.analysis.ugbench import (
    CAPABILITIES,
    UG_WEIGHTS,
    load_capability_map,
    parse_capability_map,
    task_scores,
    ugbench_ranking,
)
from airbench_nb.records import CHAT_TASKS, FOUNDATION_TASKS, KIT_FOUNDATION_TASKS, REFERENCE_TASKS
from airbench_nb.score_table import ScoreTable
from tests.planted_run import FOUNDATION_TASKS as PLANTED_TASKS
from tests.planted_run import write_planted_run

matplotlib.use("Agg")

# Planted per-task scores of four models. Speech perception: Speech_Grounding (accuracy; B and C tie) and
# sseu_transcription (WER: lower is better). Audio perception: Sound_AQA (B and D tie). Speech generation: tts (WER;
# A and B cannot speak: no score). Spoken language understanding: intent (B and C tie).
PLANTED = pd.DataFrame(
    {
        "Speech_Grounding": {"A": 0.9, "B": 0.8, "C": 0.8, "D": 0.5},
        "sseu_transcription": {"A": 0.20, "B": 0.10, "C": 0.30, "D": 0.40},
        "Sound_AQA": {"A": 0.5, "B": 0.7, "C": 0.6, "D": 0.7},
        "tts": {"C": 0.15, "D": 0.25},
        "Speaker_Intent_Classification": {"A": 0.6, "B": 0.4, "C": 0.4, "D": 0.2},
    }
)

# By hand, N = 4, ties share the mean of their ranks, A and B share the last two places of tts:
#   Speech_Grounding A 1, B 2.5, C 2.5, D 4 | sseu_transcription B 1, A 2, C 3, D 4
#   Sound_AQA B 1.5, D 1.5, C 3, A 4 | tts C 1, D 2, A 3.5, B 3.5 | intent A 1, B 2.5, C 2.5, D 4
HAND_SUB_RANKS = {
    "A": {
        "speech_perception": 1.5,
        "audio_perception": 4.0,
        "speech_generation": 3.5,
        "spoken_language_understanding": 1.0,
    },
    "B": {
        "speech_perception": 1.75,
        "audio_perception": 1.5,
        "speech_generation": 3.5,
        "spoken_language_understanding": 2.5,
    },
    "C": {
        "speech_perception": 2.75,
        "audio_perception": 3.0,
        "speech_generation": 1.0,
        "spoken_language_understanding": 2.5,
    },
    "D": {
        "speech_perception": 4.0,
        "audio_perception": 1.5,
        "speech_generation": 2.0,
        "spoken_language_understanding": 4.0,
    },
}
# Scaled (N + 1 - r) / N * 100, then 0.4 / 0.3 / 0.2 / 0.1:
#   A 0.4*87.5 + 0.3*25 + 0.2*37.5 + 0.1*100 = 60; B 0.4*81.25 + 0.3*87.5 + 0.2*37.5 + 0.1*62.5 = 72.5
#   C 0.4*56.25 + 0.3*50 + 0.2*100 + 0.1*62.5 = 63.75; D 0.4*25 + 0.3*87.5 + 0.2*75 + 0.1*25 = 53.75
HAND_TOTALS = {"B": 72.5, "C": 63.75, "A": 60.0, "D": 53.75}


@pytest.fixture(scope="module")
def result():
    return ugbench_ranking(PLANTED)


def test_ranking_equals_the_hand_computation(result):
    assert [m.model for m in result.models] == ["B", "C", "A", "D"]
    assert [m.position for m in result.models] == [1, 2, 3, 4]
    for entry in result.models:
        assert entry.sub_ranks == pytest.approx(HAND_SUB_RANKS[entry.model])
        assert entry.score == pytest.approx(HAND_TOTALS[entry.model])
        assert not entry.partial
    assert result.n_models == 4
    ranks = result.capabilities["speech_generation"].ranks
    assert {m: r["tts"] for m, r in ranks.items()} == {"A": 3.5, "B": 3.5, "C": 1.0, "D": 2.0}
    assert result.capabilities["speech_perception"].ranks["B"] == {"Speech_Grounding": 2.5, "sseu_transcription": 1.0}


def test_as_dict_has_exactly_the_analysis_json_shape(result):
    data = json.loads(json.dumps(result.as_dict()))
    assert set(data) == {"capabilities", "ranking"}
    assert list(data["capabilities"]) == list(CAPABILITIES)
    for block in data["capabilities"].values():
        assert set(block) == {"tasks", "ranks"}
    assert data["capabilities"]["speech_perception"]["tasks"] == ["Speech_Grounding", "sseu_transcription"]
    assert data["capabilities"]["audio_perception"]["ranks"]["A"] == {"Sound_AQA": 4.0}
    assert all(set(entry) == {"model", "sub_ranks", "score"} for entry in data["ranking"])
    assert data["ranking"][0] == {"model": "B", "sub_ranks": HAND_SUB_RANKS["B"], "score": 72.5}


def test_tasks_no_model_has_are_left_out_and_listed(result):
    assert result.left_out["speech_translation"] == "no model has a score"
    assert result.left_out["kit_pitch_compare"].startswith("the kit's own task")
    ranked = {t for c in result.capabilities.values() for t in c.tasks}
    assert ranked == set(PLANTED.columns)
    assert not ranked & set(result.left_out)


def test_skip_ranks_only_models_with_a_score_and_flags_partial_totals():
    skipped = ugbench_ranking(PLANTED, missing="skip")
    by_model = {m.model: m for m in skipped.models}
    assert by_model["A"].sub_ranks["speech_generation"] is None
    assert skipped.capabilities["speech_generation"].ranks["A"] == {}
    assert by_model["A"].partial and by_model["B"].partial and not by_model["C"].partial
    # A and B: renormalised over speech perception, audio perception and SLU (weights 0.8 in all)
    assert by_model["A"].score == pytest.approx((0.4 * 87.5 + 0.3 * 25 + 0.1 * 100) / 0.8)
    assert by_model["B"].score == pytest.approx((0.4 * 81.25 + 0.3 * 87.5 + 0.1 * 62.5) / 0.8)
    assert by_model["C"].score == pytest.approx(63.75)
    assert [m.model for m in skipped.models] == ["B", "A", "C", "D"]


def test_minmax_scale_and_other_tie_methods():
    minmax = {m.model: m.score for m in ugbench_ranking(PLANTED, scale="minmax").models}
    # A: (N - r) / (N - 1): 0.4*(2.5/3) + 0.3*0 + 0.2*(0.5/3) + 0.1*1, x 100
    assert minmax["A"] == pytest.approx(100 * (0.4 * 2.5 / 3 + 0.2 * 0.5 / 3 + 0.1))
    low = ugbench_ranking(PLANTED, ties="min")
    assert low.capabilities["speech_generation"].ranks["A"] == {"tts": 3.0}
    assert low.capabilities["speech_perception"].ranks["C"]["Speech_Grounding"] == 2.0


def test_extra_scores_and_equal_totals_share_a_position():
    # MOS of three systems; E speaks but has no other score, so it is last wherever it has none (N = 5).
    mixed = ugbench_ranking(PLANTED, extra={"tts_mos": {"C": 3.0, "D": 4.0, "E": 2.0}})
    by_model = {m.model: m for m in mixed.models}
    assert mixed.n_models == 5
    assert mixed.capabilities["speech_generation"].tasks == ("tts", "tts_mos")
    # tts: C 1, D 2, A B E 4; MOS: D 1, C 2, E 3, A B 4.5 -> A 4.25, C 1.5, D 1.5, E 3.5
    assert by_model["A"].sub_ranks["speech_generation"] == pytest.approx(4.25)
    assert by_model["E"].sub_ranks["speech_generation"] == pytest.approx(3.5)
    # A: 0.4*90 + 0.3*40 + 0.2*35 + 0.1*100 = 65; D: 0.4*40 + 0.3*90 + 0.2*90 + 0.1*40 = 65
    assert by_model["A"].score == pytest.approx(65.0)
    assert by_model["D"].score == pytest.approx(65.0)
    assert (by_model["A"].position, by_model["D"].position, by_model["E"].position) == (3, 3, 5)
    assert [m.model for m in mixed.models] == ["B", "C", "A", "D", "E"]


def test_frames(result):
    table = result.capability_frame()
    assert len(table) == 5 * 4
    row = table[(table["task"] == "tts") & (table["model"] == "A")].iloc[0]
    assert math.isnan(row["score"]) and row["rank"] == 3.5
    frame = result.ranking_frame()
    assert len(frame) == 4 * 4
    sums = frame.groupby("model")["contribution"].sum()
    assert sums.to_dict() == pytest.approx(HAND_TOTALS)


def test_a_capability_without_tasks_is_left_out_and_the_weights_renormalised():
    ears = ugbench_ranking(PLANTED.drop(columns=["tts"]))
    assert "speech_generation" not in ears.capabilities
    assert ears.effective_weights == pytest.approx(
        {"speech_perception": 0.5, "audio_perception": 0.375, "spoken_language_understanding": 0.125}
    )
    assert any("speech_generation" in note for note in ears.notes)
    assert {m.model: m.score for m in ears.models}["A"] == pytest.approx(0.5 * 87.5 + 0.375 * 25 + 0.125 * 100)


def test_no_scores_gives_an_empty_ranking_with_a_reason():
    empty = ugbench_ranking(pd.DataFrame())
    assert empty.models == () and empty.reason == "no model scores to rank"
    assert empty.as_dict() == {"capabilities": {}, "ranking": []}


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"speech": 0.4}, "unknown capabilities in weights: \\['speech'\\]"),
        ({"speech_perception": -0.1}, "weight of 'speech_perception' must be a finite number >= 0"),
        ({"audio_perception": float("nan")}, "weight of 'audio_perception' must be a finite number >= 0"),
        ({"speech_generation": "heavy"}, "weight of 'speech_generation' must be a number, got 'heavy'"),
        ({c: 0 for c in CAPABILITIES}, "weights are all zero"),
        ([0.4, 0.3, 0.2, 0.1], "weights must be a mapping"),
    ],
)
def test_bad_weights_give_clear_errors(weights, message):
    with pytest.raises(ValueError, match=message):
        ugbench_ranking(PLANTED, weights)


def test_weights_left_out_weigh_zero_and_are_renormalised():
    speech_only = ugbench_ranking(PLANTED, {"speech_perception": 2.0})
    assert speech_only.effective_weights["speech_perception"] == 1.0
    assert {m.model: m.score for m in speech_only.models}["A"] == pytest.approx(87.5)
    assert dict(UG_WEIGHTS) == ugbench_ranking(PLANTED).weights


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"missing": "worst"}, "missing='worst': use one of last, skip"),
        ({"ties": "first"}, "ties='first'"),
        ({"scale": "percent"}, "scale='percent': use one of ugbench, minmax"),
        ({"extra": {"tts": {"A": 0.1}}}, "task 'tts' is read from the score table"),
        ({"extra": {"MOS": {"A": 3.0}}}, "task 'MOS' is not in the capability map"),
    ],
)
def test_bad_options_give_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ugbench_ranking(PLANTED, **kwargs)


def test_bad_scores_name_the_model_and_task():
    with pytest.raises(ValueError, match="model 'B', task 'Sound_AQA': score 'n/a' is not a number"):
        ugbench_ranking(PLANTED.astype(object).assign(Sound_AQA=[0.1, "n/a", 0.2, 0.3]))
    with pytest.raises(ValueError, match="model 'A', task 'tts': score inf is not finite"):
        ugbench_ranking(PLANTED.assign(tts=[math.inf, None, 0.1, 0.2]))
    with pytest.raises(ValueError, match="does not have: \\['Speech_Recognition'\\]"):
        ugbench_ranking(PLANTED.assign(Speech_Recognition=0.5))


def _entry(value: float) -> dict:
    return {"value": value, "n": 10, "failures": 0}


def _protocol(protocol: str, model: str, grounding: float, chat_speech: float, wer: float | None) -> dict:
    tables = {
        "protocol": protocol,
        "model": model,
        "foundation": {"tasks": {"Speech_Grounding": _entry(grounding)}, "average": _entry(grounding)},
        "chat": {"categories": {"speech": _entry(chat_speech)}, "average": _entry(chat_speech)},
    }
    if wer is not None:
        tables["metric_sections"] = {
            "transcription": {"tasks": {"independent": _entry(wer), "joint": _entry(0.9)}, "average": _entry(0.5)}
        }
    return tables


@pytest.fixture(scope="module")
def score_table() -> ScoreTable:
    return ScoreTable.model_validate(
        {
            "hf:a | chat judge proxy": {"strict": _protocol("strict", "hf:a", 0.9, 6.0, 0.2)},
            "hf:b | chat judge proxy": {
                "strict": _protocol("strict", "hf:b", 0.6, 7.0, None),
                "official": _protocol("official", "hf:b", 0.7, 7.5, None),
            },
            "hf:b | chat judge openai:gpt-4o": {"strict": _protocol("strict", "hf:b", 0.6, 5.0, None)},
        }
    )


def test_task_scores_read_the_score_table_where_the_map_says(score_table):
    frame = task_scores(score_table, "strict", chat_judge="proxy")
    assert frame.loc["hf:a", "Speech_Grounding"] == 0.9
    assert frame.loc["hf:b", "chat_speech"] == 7.0
    assert frame.loc["hf:a", "sseu_transcription"] == 0.2  # the independent mode, not the pooled average
    assert math.isnan(frame.loc["hf:b", "sseu_transcription"])
    assert math.isnan(frame.loc["hf:a", "Sound_AQA"])
    official = task_scores(score_table, "official", chat_judge="proxy")
    assert official.loc["hf:b", "Speech_Grounding"] == 0.7
    assert official.loc["hf:a"].isna().all()
    with pytest.raises(ValueError, match="several Chat judges for one model \\(hf:b: proxy, openai:gpt-4o\\)"):
        task_scores(score_table, "strict")
    with pytest.raises(ValueError, match="unknown protocol 'lenient'"):
        task_scores(score_table, "lenient")


def test_ranking_from_a_score_table(score_table):
    ranked = ugbench_ranking(score_table, chat_judge="openai:gpt-4o")
    assert [m.model for m in ranked.models] == ["hf:b"]
    both = ugbench_ranking(score_table, chat_judge="proxy")
    # Speech_Grounding a 1 b 2; sseu_transcription a 1 b 2 (no score); chat speech (SLU) b 1 a 2; N = 2
    assert {m.model: m.sub_ranks for m in both.models}["hf:a"] == {
        "speech_perception": 1.0,
        "spoken_language_understanding": 2.0,
    }
    # only speech perception (0.4) and SLU (0.1) have tasks: weights 0.8 / 0.2; scaled (3 - r) / 2 * 100
    assert {m.model: m.score for m in both.models} == pytest.approx({"hf:a": 0.8 * 100 + 0.2 * 50, "hf:b": 60.0})


def test_the_shipped_map_covers_every_task_the_kit_knows():
    cmap = load_capability_map()
    ids = {spec.id for spec in cmap.tasks}
    foundation = {s.name for s in cmap.tasks if s.section == "foundation"}
    assert foundation == set(FOUNDATION_TASKS) | set(KIT_FOUNDATION_TASKS)
    chat = {s.name for s in cmap.tasks if s.section == "chat"}
    assert chat == set(CHAT_TASKS.values()) | {"multi-turn"}
    # sseu_joint is not a task of its own: its parts are scored in the transcription, scene and events sections
    assert set(REFERENCE_TASKS) - {"sseu_joint"} <= ids
    assert {s.capability for s in cmap.tasks} == set(CAPABILITIES)
    assert cmap.task("Speaker_Intent_Classification").capability == "spoken_language_understanding"
    assert {s.id for s in cmap.tasks if not s.higher_is_better} == {"sseu_transcription", "tts"}
    assert cmap.task("tts_mos").source == "extra"
    for spec in cmap.tasks:
        if spec.section == "foundation":
            expected = {"speech": "speech_perception"}.get(FOUNDATION_TASKS.get(spec.id, ""), "audio_perception")
            if spec.capability != "spoken_language_understanding" and spec.id != "kit_same_speaker":
                assert spec.capability == expected, spec.id


MOS_ENTRY = {"id": "x", "capability": "speech_generation", "metric": "MOS", "higher_is_better": True, "source": "extra"}


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ([{"id": "x", "capability": "hearing", "metric": "acc", "higher_is_better": True}], "tasks\\[0\\] \\('x'\\)"),
        (
            [{"id": "x", "capability": "audio_perception", "metric": "acc", "higher_is_better": "yes"}],
            "field 'higher_is_better' must be true or false",
        ),
        (
            [{"id": "x", "capability": "audio_perception", "metric": "acc", "higher_is_better": True}],
            "field 'section' must name where the score is",
        ),
        (
            [
                {
                    "id": "x",
                    "capability": "audio_perception",
                    "metric": "acc",
                    "higher_is_better": True,
                    "section": "foundation",
                    "level": "tasks",
                    "name": "x",
                }
            ],
            "level 'tasks' is not one of",
        ),
        (
            [{"id": "x", "capability": "audio_perception", "metric": "a", "higher_is_better": True, "src": "extra"}],
            "unknown fields \\['src'\\]",
        ),
        (
            [MOS_ENTRY, MOS_ENTRY],
            "tasks\\[1\\]: task id 'x' appears twice",
        ),
    ],
)
def test_a_malformed_map_names_the_file_entry_and_field(tmp_path, tasks, message):
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"version": 1, "tasks": tasks}), encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}: .*{message}"):
        load_capability_map(path)


def test_a_map_that_is_not_json_names_the_line(tmp_path):
    path = tmp_path / "map.json"
    path.write_text('{"tasks": [\n  {"id": }\n]}', encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}: line 2: not valid JSON"):
        load_capability_map(path)
    with pytest.raises(ValueError, match="must be an object with a list 'tasks'"):
        parse_capability_map({"tasks": {}})


def test_kit_tasks_are_ranked_on_request():
    kit = PLANTED.assign(kit_pitch_compare=[0.1, 0.2, 0.3, 0.4])
    assert "kit_pitch_compare" in ugbench_ranking(kit).left_out
    included = ugbench_ranking(kit, include_kit_tasks=True)
    assert "kit_pitch_compare" in included.capabilities["audio_perception"].tasks


def test_chart(result):
    fig = plots.ugbench_chart(result.ranking_frame(), n_tasks=5)
    ax = fig.axes[0]
    assert ax.get_title() == "UG-Bench ranking over every task (n = 4 models, 5 tasks)"
    assert ax.get_xlabel().startswith("weighted total on 0-100")
    assert ax.get_ylabel() == "model (position)"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1. B", "2. C", "3. A", "4. D"]
    assert len(ax.get_legend().get_texts()) == 4
    matplotlib.pyplot.close(fig)
    assert plots.ugbench_chart(ugbench_ranking(pd.DataFrame()).ranking_frame()) is None


def test_a_planted_run_end_to_end(tmp_path):
    folder = write_planted_run(tmp_path / "run", per_task=20, chat_per_task=2, snr_items=0, rotated_per_task=0)
    _, results = RunAnalysis(folder, reps=0).scores()
    with pytest.raises(ValueError, match="several Chat judges"):
        ugbench_ranking(results)
    ranked = ugbench_ranking(results, chat_judge="fair-judge")
    tasks = {t for c in ranked.capabilities.values() for t in c.tasks}
    assert tasks == set(PLANTED_TASKS) | {"chat_speech", "chat_sound", "chat_music", "chat_mixed"}
    assert "speech_generation" not in ranked.capabilities  # nobody was asked to speak
    best = ranked.models[0]
    # the skilled model (80% right, the best Chat answers) is first on every task: every sub-rank 1, total 100
    assert best.model == "planted:skilled" and best.score == 100.0
    assert set(best.sub_ranks.values()) == {1.0}
    assert {m.model for m in ranked.models} == {"planted:skilled", "planted:letter-a", "planted:uniform"}


def test_a_model_that_failed_every_spoken_answer_cannot_speak():
    # speech_output keeps failures inside n with a value (a text answer: every word deleted, WER 1.0)
    def spoken(wer: float, failures: int) -> dict:
        return {
            "strict": {
                "protocol": "strict",
                "foundation": {"tasks": {"Speech_Grounding": _entry(0.5)}, "average": _entry(0.5)},
                "metric_sections": {
                    "speech_output": {
                        "tasks": {"tts": {"value": wer, "n": 10, "failures": failures}},
                        "average": {"value": wer, "n": 10, "failures": failures},
                    }
                },
            }
        }

    table = ScoreTable.model_validate(
        {
            "text-only | chat judge -": spoken(1.0, 10),
            "babbler | chat judge -": spoken(1.4, 2),
            "speaker | chat judge -": spoken(0.1, 0),
        }
    )
    frame = task_scores(table)
    assert math.isnan(frame.loc["text-only", "tts"]) and frame.loc["babbler", "tts"] == 1.4
    ranked = ugbench_ranking(table)
    assert ranked.unable == {"tts": ["text-only"]}
    assert ranked.detail().unable == {"tts": ["text-only"]}
    # the one that cannot speak is last on tts, behind the one that speaks badly
    assert ranked.capabilities["speech_generation"].ranks == {
        "babbler": {"tts": 2.0},
        "speaker": {"tts": 1.0},
        "text-only": {"tts": 3.0},
    }
    skipped = ugbench_ranking(table, missing="skip")
    assert skipped.capabilities["speech_generation"].ranks["text-only"] == {}


def test_a_model_no_chat_judge_scored_is_kept_when_a_chat_judge_is_chosen():
    """An ASR or TTS model has no Chat row (judge ``-``): choosing the Chat judge of the others must not drop it."""
    asr = {
        "protocol": "strict",
        "model": "faster-whisper:x",
        "metric_sections": {"transcription": {"tasks": {"independent": _entry(0.1)}, "average": _entry(0.1)}},
    }
    table = ScoreTable.model_validate(
        {
            "hf:a | chat judge proxy": {"strict": _protocol("strict", "hf:a", 0.9, 6.0, 0.2)},
            "faster-whisper:x": {"strict": asr},
        }
    )
    frame = task_scores(table, "strict", chat_judge="proxy")
    assert frame.loc["faster-whisper:x", "sseu_transcription"] == 0.1
    ranked = ugbench_ranking(table, chat_judge="proxy")
    assert {m.model for m in ranked.models} == {"hf:a", "faster-whisper:x"}
