"""Paired model comparison: planted differences found, equal models not, tests and Holm checked by hand."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from airbench_nb.analysis.compare import (
    A_BETTER,
    B_BETTER,
    FRAME_COLUMNS,
    MCNEMAR,
    MCNEMAR_POOLED,
    NO_DIFFERENCE,
    WILCOXON,
    WILCOXON_POOLED,
    compare_runs,
    comparison_section,
    holm,
    mcnemar_exact,
    parse_source,
    verdict,
    wilcoxon_signed_rank,
)
from airbench_nb.analysis.data import load_run
from airbench_nb.cli import app
from airbench_nb.judge.run import rule_verdict
from airbench_nb.manifests import read_manifest, write_manifest, write_records
from airbench_nb.records import CHAT_TASKS as OFFICIAL_CHAT_TASKS
from airbench_nb.records import FOUNDATION_TASKS, AudioStatus, ChatItem, FoundationItem, Response, Verdict
from airbench_nb.runner import model_slug
from tests.planted_run import write_planted_run

# 5 tasks x 100 items: speech 2 tasks, sound 2, music 1 (categories of unequal size, so means and pools differ)
TASKS = (
    "Speaker_Gender_Recognition",
    "Spoken_Language_Identification",
    "Sound_AQA",
    "Audio_Grounding",
    "Music_Genre_Recognition",
)
CATEGORY = {task: FOUNDATION_TASKS[task] for task in TASKS}
PER_TASK = 100
CHAT_TASKS = tuple(OFFICIAL_CHAT_TASKS)
CHAT_PER_TASK = 10
JUDGE = "openai:judge"
LETTERS = "ABCD"


def foundation_items() -> list[FoundationItem]:
    return [
        FoundationItem(
            uid=f"{task}-{k:03d}",
            task=task,
            dataset="planted",
            audio=f"audio/{task}-{k:03d}.wav",
            question=f"Which {task}?",
            choices=["alpha", "bravo", "charlie", "delta"],
            answer=k % 4,
            audio_sha256=f"sha-{task}-{k:03d}",
        )
        for task in TASKS
        for k in range(PER_TASK)
    ]


def chat_items() -> list[ChatItem]:
    return [
        ChatItem(
            uid=f"{task}-{k:02d}",
            task=task,
            dataset="planted",
            audio=f"audio/{task}-{k:02d}.wav",
            question="What do you hear?",
            reference="A reference answer.",
            meta_info="a clip",
            audio_sha256=f"sha-{task}-{k:02d}",
        )
        for task in CHAT_TASKS
        for k in range(CHAT_PER_TASK)
    ]


def write_run(
    folder: Path,
    right: dict[str, dict[str, bool | None]],
    chat: dict[str, dict[str, tuple[float, float]]] | None = None,
    items: list[FoundationItem] | None = None,
) -> Path:
    """A run folder: ``right[model][uid]`` True/False (None: an answer without a letter), Chat scores per order."""
    foundation = items if items is not None else foundation_items()
    write_manifest(folder / "data" / "foundation.jsonl", foundation)
    chats = chat_items() if chat else []
    if chats:
        write_manifest(folder / "data" / "chat.jsonl", chats)
    for model, by_uid in right.items():
        slug = model_slug(model)
        responses = []
        for item in foundation:
            outcome = by_uid[item.uid]
            if outcome is None:
                text = "I cannot tell."
            else:
                letter = item.answer if outcome else (item.answer + 1) % len(item.choices)
                text = f"The answer is {LETTERS[letter]}."
            responses.append(Response(uid=item.uid, model=model, text=text))
        write_records(folder / "responses" / slug / "foundation.jsonl", responses)
        by_id = {r.uid: r for r in responses}
        write_records(
            folder / "verdicts" / slug / "foundation.rule.jsonl", [rule_verdict(i, by_id[i.uid]) for i in foundation]
        )
        if chat and model in chat:
            write_records(
                folder / "responses" / slug / "chat.jsonl",
                [Response(uid=i.uid, model=model, text="an answer") for i in chats],
            )
            verdicts = []
            for item in chats:
                for order, score in zip(("reference_first", "hypothesis_first"), chat[model][item.uid], strict=True):
                    first, second = (8.0, score) if order == "reference_first" else (score, 8.0)
                    verdicts.append(
                        Verdict(
                            uid=item.uid,
                            model=model,
                            judge=JUDGE,
                            order=order,
                            raw=f"{first:g} {second:g}",
                            score_hypothesis=score,
                            score_reference=8.0,
                        )
                    )
            write_records(folder / "verdicts" / slug / f"chat.{model_slug(JUDGE)}.jsonl", verdicts)
    return folder


def paired_outcomes(
    both: int, a_only: int, b_only: int, neither: int, rng: np.random.Generator
) -> tuple[dict[str, bool], dict[str, bool]]:
    """A and B right/wrong per item: in every task the given counts of (both, A only, B only, neither), shuffled."""
    a: dict[str, bool] = {}
    b: dict[str, bool] = {}
    cells = [(True, True)] * both + [(True, False)] * a_only + [(False, True)] * b_only + [(False, False)] * neither
    assert len(cells) == PER_TASK
    for task in TASKS:
        order = rng.permutation(PER_TASK)
        for k in range(PER_TASK):
            a[f"{task}-{k:03d}"], b[f"{task}-{k:03d}"] = cells[order[k]]
    return a, b


def by_key(frame, benchmark: str, level: str, name: str) -> dict:
    rows = frame[(frame["benchmark"] == benchmark) & (frame["level"] == level) & (frame["name"] == name)]
    assert len(rows) == 1, (benchmark, level, name)
    return rows.iloc[0].to_dict()


def kit_scores(run_dir: Path, model: str, judges: list[str] | None = None) -> dict:
    """The kit's strict score table of one model of a run folder (scoring.score_run)."""
    from airbench_nb.scoring import score_run

    run = load_run(run_dir)
    responses = list(run.responses[model].values())
    result = score_run(run.all_items, responses, run.verdicts[model], model=model, reps=0, judges=judges)
    return result.strict


@pytest.fixture(scope="module")
def better_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A right on 70% and B on 60% of 500 items, paired: per task 54 both, 16 A only, 6 B only, 24 neither."""
    a, b = paired_outcomes(54, 16, 6, 24, np.random.default_rng(1))
    return write_run(tmp_path_factory.mktemp("better") / "run", {"m:a": a, "m:b": b})


# ------------------------------------------------------------------------------------------------ the statistics


def test_mcnemar_exact_is_the_binomial_on_discordant_pairs_by_hand():
    # table [[both right 10, A only 2], [B only 8, neither 5]]: discordant 2 vs 8 of 10
    a = [True] * 10 + [True] * 2 + [False] * 8 + [False] * 5
    b = [True] * 10 + [False] * 2 + [True] * 8 + [False] * 5
    by_hand = 2 * sum(math.comb(10, k) for k in range(3)) / 2**10  # 2 * (1 + 10 + 45) / 1024
    assert by_hand == pytest.approx(0.109375)
    assert mcnemar_exact(a, b) == pytest.approx(by_hand)
    assert mcnemar_exact(b, a) == pytest.approx(by_hand)  # symmetric
    assert mcnemar_exact([True, False, True], [True, False, True]) == 1.0  # no discordant pair


def test_holm_by_hand():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005, None]) == pytest.approx([0.03, 0.06, 0.06, 0.02, None])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([]) == [] and holm([None]) == [None]


def test_wilcoxon_and_verdict_rules():
    d = np.array([1.0, 2.0, 0.0, 1.5, -0.5, 3.0, 2.5, 1.0, 0.5, 2.0])
    assert wilcoxon_signed_rank(d) == pytest.approx(stats.wilcoxon(d, method="approx").pvalue)  # ties: normal
    no_ties = np.array([1.0, 2.0, -0.5, 1.5, 3.0, 2.5, 0.25, 4.0])
    assert wilcoxon_signed_rank(no_ties) == pytest.approx(stats.wilcoxon(no_ties, method="exact").pvalue)
    # exact by hand: the negative difference has rank 2, so W- = 2; sign patterns with W- <= 2 are {}, {1}, {2}
    assert wilcoxon_signed_rank(no_ties) == pytest.approx(2 * 3 / 2**8)
    assert wilcoxon_signed_rank(np.zeros(6)) == 1.0
    assert verdict(0.1, 0.001) == A_BETTER and verdict(-0.1, 0.001) == B_BETTER
    assert verdict(0.1, 0.05) == NO_DIFFERENCE and verdict(0.1, None) == NO_DIFFERENCE
    assert verdict(0.1, 0.001, direction=-0.02) == NO_DIFFERENCE  # mean of tasks and pooled items disagree
    assert parse_source("runs/r1::hf:Qwen/Qwen2-Audio") == (Path("runs/r1"), "hf:Qwen/Qwen2-Audio")
    assert parse_source("runs/r1") == (Path("runs/r1"), None)
    with pytest.raises(ValueError, match="nothing after"):
        parse_source("runs/r1::")


# ------------------------------------------------------------------------------------------------ planted models


def test_ten_points_better_is_found_with_mcnemar_and_a_paired_ci(better_run: Path):
    result = compare_runs([f"{better_run}::m:a", f"{better_run}::m:b"], reps=2000)
    frame = result.comparison_frame()
    assert list(frame.columns) == list(FRAME_COLUMNS)
    average = by_key(frame, "foundation", "average", "average")
    assert average["n"] == 500
    assert average["a"] == pytest.approx(0.70) and average["b"] == pytest.approx(0.60)
    assert average["diff"] == pytest.approx(0.10)
    assert average["test"] == MCNEMAR_POOLED
    # pooled McNemar = two-sided binomial of 30 B-only in 110 discordant pairs
    assert average["p_value"] == pytest.approx(stats.binomtest(30, 110, 0.5).pvalue)
    assert average["p_value"] < 0.01 and average["p_holm"] < 0.01
    assert average["verdict"] == A_BETTER
    assert 0.0 < average["ci_low"] < 0.10 < average["ci_high"] < 0.2
    speech = by_key(frame, "foundation", "category", "speech")
    assert speech["n"] == 200 and speech["diff"] == pytest.approx(0.10) and speech["verdict"] == A_BETTER
    task = by_key(frame, "foundation", "task", "Sound_AQA")
    assert task["test"] == MCNEMAR and task["n"] == 100
    assert task["p_value"] == pytest.approx(stats.binomtest(6, 22, 0.5).pvalue)  # 16 A only vs 6 B only
    # the other way round: B better
    swapped = compare_runs([f"{better_run}::m:b", f"{better_run}::m:a"], reps=200).comparison_frame()
    row = by_key(swapped, "foundation", "average", "average")
    assert row["diff"] == pytest.approx(-0.10) and row["verdict"] == B_BETTER
    assert row["p_value"] == pytest.approx(average["p_value"])
    # power: the pooled items' paired differences (110 discordant of 500: sd 0.459), MDE 2.80 x sd / sqrt(500)
    d = np.array([1.0] * 80 + [-1.0] * 30 + [0.0] * 390)
    assert average["mde"] == pytest.approx(2.80 * d.std(ddof=1) / np.sqrt(500), rel=0.02)
    assert average["design_effect"] == 1.0 and pd.isna(average["size"])  # found: nothing to say about its size
    assert average["items_needed"] == pytest.approx((2.80 * d.std(ddof=1) / 0.10) ** 2, rel=0.05)


def test_holm_in_the_table_matches_a_hand_computation(better_run: Path):
    rows = compare_runs([better_run], reps=0).rows
    p = [r["p_value"] for r in rows]
    m = len(p)
    ranked = sorted(range(m), key=lambda k: p[k])
    by_hand = [0.0] * m
    running = 0.0
    for rank, k in enumerate(ranked):
        running = max(running, min(1.0, (m - rank) * p[k]))
        by_hand[k] = running
    assert [r["p_holm"] for r in rows] == pytest.approx(by_hand)
    assert all(r["ci_low"] is None for r in rows)  # reps=0: no intervals


def test_equal_models_with_independent_errors_show_no_difference(tmp_path: Path):
    rng = np.random.default_rng(7)
    uids = [i.uid for i in foundation_items()]
    a = {u: bool(rng.random() < 0.65) for u in uids}
    b = {u: bool(rng.random() < 0.65) for u in uids}
    run = write_run(tmp_path / "run", {"m:a": a, "m:b": b})
    frame = compare_runs([run], reps=1000).comparison_frame()
    average = by_key(frame, "foundation", "average", "average")
    assert average["p_value"] > 0.05 and average["ci_low"] < 0 < average["ci_high"]
    assert set(frame["verdict"]) == {NO_DIFFERENCE}
    small = frame[(frame["diff"].abs() < frame["mde"])]
    assert len(small) and set(small["size"]) == {"not distinguishable at this size"}
    assert frame[frame["diff"].abs() >= frame["mde"]]["size"].isna().all()


def test_identical_models_have_a_zero_interval_and_p_one(better_run: Path, tmp_path: Path):
    a, _ = paired_outcomes(54, 16, 6, 24, np.random.default_rng(1))
    run = write_run(tmp_path / "run", {"m:a": a, "m:same": dict(a)})
    frame = compare_runs([run], reps=300).comparison_frame()
    assert (frame["diff"] == 0).all() and (frame["ci_low"] == 0).all() and (frame["ci_high"] == 0).all()
    assert (frame["p_value"] == 1.0).all() and set(frame["verdict"]) == {NO_DIFFERENCE}


def test_category_and_average_follow_the_kit_aggregation(tmp_path: Path):
    # task accuracies differ, so the unweighted mean of tasks differs from the pooled accuracy
    rng = np.random.default_rng(3)
    accuracy = dict(zip(TASKS, (0.9, 0.5, 0.8, 0.4, 0.7), strict=True))
    a = {i.uid: bool(rng.random() < accuracy[i.task]) for i in foundation_items()}
    b = {i.uid: bool(rng.random() < 0.6) for i in foundation_items()}
    run = write_run(tmp_path / "run", {"m:a": a, "m:b": b})
    frame = compare_runs([run], reps=200).comparison_frame()
    task_acc = {t: np.mean([a[f"{t}-{k:03d}"] for k in range(PER_TASK)]) for t in TASKS}
    cats = {c: np.mean([task_acc[t] for t in TASKS if CATEGORY[t] == c]) for c in ("speech", "sound", "music")}
    for category, value in cats.items():
        assert by_key(frame, "foundation", "category", category)["a"] == pytest.approx(value)
    assert by_key(frame, "foundation", "average", "average")["a"] == pytest.approx(np.mean(list(cats.values())))
    # the same numbers as the kit's score tables
    table = kit_scores(run, "m:a").foundation
    assert by_key(frame, "foundation", "average", "average")["a"] == pytest.approx(table.average.value)
    for category in cats:
        assert by_key(frame, "foundation", "category", category)["a"] == pytest.approx(table.categories[category].value)


def test_chat_wilcoxon_on_planted_score_differences(tmp_path: Path):
    rng = np.random.default_rng(11)
    uids = [i.uid for i in chat_items()]
    base = {u: float(rng.integers(3, 7)) for u in uids}
    gain = {u: float(rng.choice([-1, 0, 1, 1, 2, 2, 3])) for u in uids}
    # hypothesis-first gets +1 (an order bonus): the per-item score is the mean of the two orders
    chat = {
        "m:a": {u: (base[u] + gain[u], base[u] + gain[u] + 1) for u in uids},
        "m:b": {u: (base[u], base[u] + 1) for u in uids},
        "m:c": {u: (base[u], base[u] + 1) for u in uids},
    }
    right = {m: {i.uid: True for i in foundation_items()} for m in chat}
    run = write_run(tmp_path / "run", right, chat=chat)
    result = compare_runs([run], reps=500)
    assert result.chat_judge == JUDGE
    frame = result.comparison_frame()
    ab = frame[(frame["model_a"] == "m:a") & (frame["model_b"] == "m:b")]
    d = np.array([gain[u] for u in uids])
    average = by_key(ab, "chat", "average", "average")
    assert average["test"] == WILCOXON_POOLED and average["n"] == len(uids)
    assert average["p_value"] == pytest.approx(stats.wilcoxon(d, method="approx").pvalue)  # integer scores: ties
    assert average["verdict"] == A_BETTER and average["ci_low"] > 0
    task = by_key(ab, "chat", "task", "music_QA")
    music = np.array([gain[f"music_QA-{k:02d}"] for k in range(CHAT_PER_TASK)])
    assert task["test"] == WILCOXON and task["p_value"] == pytest.approx(wilcoxon_signed_rank(music))
    # aggregation by hand: speech/sound/music pool their items, Mixed = mean of its two tasks, Average = mean
    score = {u: base[u] + gain[u] + 0.5 for u in uids}

    def mean_of(tasks: tuple[str, ...]) -> float:
        return float(np.mean([score[u] for u in uids if u.rsplit("-", 1)[0] in tasks]))

    cats = {
        "speech": mean_of(("speech_QA", "speech_dialogue_QA")),
        "sound": mean_of(("sound_QA", "sound_generation_QA")),
        "music": mean_of(("music_QA", "music_generation_analysis_QA")),
        "mixed": (mean_of(("speech_and_sound_QA",)) + mean_of(("speech_and_music_QA",))) / 2,
    }
    for category, value in cats.items():
        assert by_key(ab, "chat", "category", category)["a"] == pytest.approx(value)
    assert average["a"] == pytest.approx(np.mean(list(cats.values())))
    # equal Chat scores: every difference zero, p = 1, no verdict
    bc = frame[(frame["model_a"] == "m:b") & (frame["model_b"] == "m:c") & (frame["benchmark"] == "chat")]
    assert (bc["p_value"] == 1.0).all() and set(bc["verdict"]) == {NO_DIFFERENCE}


def test_items_that_differ_between_runs_are_reported_and_left_out(better_run: Path, tmp_path: Path):
    other = tmp_path / "later"
    shutil.copytree(better_run, other)
    items = read_manifest(other / "data" / "foundation.jsonl")
    changed_hash = [i.uid for i in items[:7]]
    changed_question = [i.uid for i in items[100:103]]
    corrupt = [i.uid for i in items[200:202]]
    dropped = [i.uid for i in items[300:302]]
    edited = []
    for item in items:
        if item.uid in dropped:
            continue
        if item.uid in changed_hash:
            item = item.model_copy(update={"audio_sha256": "another-hash"})
        elif item.uid in changed_question:
            item = item.model_copy(update={"question": "Which one, really?"})
        elif item.uid in corrupt:
            item = item.model_copy(update={"audio_status": AudioStatus.corrupt})
        edited.append(item)
    write_manifest(other / "data" / "foundation.jsonl", edited)
    result = compare_runs([f"{better_run}::m:a", f"{other}::m:a"], reps=200)
    labels = [m.label for m in result.models]
    assert labels == ["run::m:a", "later::m:a"]
    (match,) = result.items
    assert match.differ == 10 and match.differ_fields == {"audio_sha256": 7, "question": 3}
    assert sorted(match.examples["differ"]) == sorted(changed_hash + changed_question)
    assert match.only_a == 4 and sorted(match.examples["only_a"]) == sorted(corrupt + dropped)
    assert match.only_b == 0 and match.compared == 500 - 14
    frame = result.comparison_frame()
    average = by_key(frame, "foundation", "average", "average")
    assert average["n"] == 486 and average["diff"] == 0 and average["verdict"] == NO_DIFFERENCE
    data = result.as_dict()
    json.dumps(data, allow_nan=False)
    assert data["items"][0]["differ"] == 10


def test_none_hash_matches_only_none(better_run: Path, tmp_path: Path):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        shutil.copytree(better_run, folder)
    items = read_manifest(first / "data" / "foundation.jsonl")
    both_none = {items[0].uid, items[1].uid}
    one_none = items[2].uid
    write_manifest(
        first / "data" / "foundation.jsonl",
        [i.model_copy(update={"audio_sha256": None}) if i.uid in both_none | {one_none} else i for i in items],
    )
    write_manifest(
        second / "data" / "foundation.jsonl",
        [i.model_copy(update={"audio_sha256": None}) if i.uid in both_none else i for i in items],
    )
    (match,) = compare_runs([f"{first}::m:b", f"{second}::m:b"], reps=0).items
    assert match.differ == 1 and match.examples["differ"] == [one_none] and match.compared == 499


def test_copies_and_unusable_items_are_left_out_and_values_match_the_score_tables(tmp_path: Path):
    run = write_planted_run(tmp_path / "planted", per_task=20, chat_per_task=4, snr_items=10, rotated_per_task=4)
    result = compare_runs([f"{run}::planted:skilled", f"{run}::planted:uniform"], chat_judge="fair-judge", reps=100)
    frame = result.comparison_frame()
    average = by_key(frame, "foundation", "average", "average")
    assert average["n"] == 5 * 20  # clean items only: no SNR-graded copies, no rotations
    for label, column in (("planted:skilled", "a"), ("planted:uniform", "b")):
        scores = kit_scores(run, label, judges=["rule", "fair-judge"])
        assert average[column] == pytest.approx(scores.foundation.average.value)
        chat = scores.chat
        # fair-judge scores both orders of every item: the per-item mean equals scoring's pooled mean
        assert by_key(frame, "chat", "average", "average")[column] == pytest.approx(chat.average.value)
    assert result.chat_judge == "fair-judge"


def test_official_protocol_leaves_out_failures_as_unscored(tmp_path: Path):
    a, b = paired_outcomes(54, 16, 6, 24, np.random.default_rng(2))
    unreadable = [f"Sound_AQA-{k:03d}" for k in range(5)]
    b_failing: dict[str, bool | None] = {**b, **dict.fromkeys(unreadable)}
    run = write_run(tmp_path / "run", {"m:a": a, "m:b": b_failing})
    official = compare_runs([run], protocol="official", reps=0)
    (match,) = official.items
    assert match.unscored == 5 and sorted(match.examples["unscored"]) == unreadable and match.compared == 495
    strict = compare_runs([run], protocol="strict", reps=0)
    assert strict.items[0].unscored == 0 and strict.items[0].compared == 500  # strict counts them wrong


def test_errors_name_the_problem(better_run: Path, tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no such run folder"):
        compare_runs([tmp_path / "missing", better_run])
    with pytest.raises(ValueError, match="not in run"):
        compare_runs([f"{better_run}::m:zzz", better_run])
    with pytest.raises(ValueError, match="at least two models"):
        compare_runs([f"{better_run}::m:a", f"{better_run}::m:a"])
    with pytest.raises(ValueError, match="protocol"):
        compare_runs([better_run], protocol="lenient")


def test_same_seed_same_numbers_and_plain_json(better_run: Path):
    first = compare_runs([better_run], seed=5, reps=300).as_dict()
    second = compare_runs([better_run], seed=5, reps=300).as_dict()
    assert first == second
    text = json.dumps(first, allow_nan=False)
    row = json.loads(text)["comparisons"][0]
    assert set(row) == set(FRAME_COLUMNS) and isinstance(row["p_value"], float)
    assert "Holm" in first["correction"] and MCNEMAR_POOLED in first["tests"]


# ------------------------------------------------------------------------------------------------ figure, section, cli


def test_forest_plot_and_section(better_run: Path, tmp_path: Path):
    import matplotlib.pyplot as plt

    from airbench_nb import plots

    frame = compare_runs([better_run], reps=200).comparison_frame()
    fig = plots.compare_forest(frame)
    (ax,) = fig.axes
    assert "n = 500 items" in ax.get_title() and "percentage points" in ax.get_xlabel()
    assert fig._suptitle is not None and "95%" in fig._suptitle.get_text()
    assert len(ax.get_yticklabels()) == 1 + 3 + 5  # Average, 3 categories, 5 tasks
    plt.close(fig)
    assert plots.compare_forest(frame.iloc[0:0]) is None
    section = comparison_section(load_run(better_run), reps=100)
    assert section.name == "comparison" and section.reason is None and not section.frame.empty
    assert section.figure is not None and section.data.comparisons
    plt.close("all")
    single = write_run(tmp_path / "single", {"m:a": {i.uid: True for i in foundation_items()}})
    assert "fewer than two models" in comparison_section(load_run(single)).reason


def test_cli_compare_json_and_exit_codes(better_run: Path, tmp_path: Path):
    runner = CliRunner()
    result = runner.invoke(app, ["compare", f"{better_run}::m:a", f"{better_run}::m:b", "--reps", "200", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    average = next(r for r in data["comparisons"] if r["level"] == "average")
    assert average["verdict"] == A_BETTER and data["protocol"] == "strict"
    shown = runner.invoke(app, ["compare", str(better_run), "--reps", "100"])
    assert shown.exit_code == 0 and A_BETTER in shown.output and "500 items compared" in shown.output
    assert runner.invoke(app, ["compare", str(tmp_path / "missing"), str(better_run)]).exit_code == 2
    unknown = runner.invoke(app, ["compare", f"{better_run}::m:nope", str(better_run)])
    assert unknown.exit_code == 2 and "m:nope" in unknown.output
    assert runner.invoke(app, ["compare", str(better_run), "--protocol", "lenient"]).exit_code == 2


def test_clustered_items_widen_the_paired_interval_and_both_models_draw_the_same_clusters():
    from airbench_nb.analysis.compare.aggregate import _pair_rows

    # 60 recordings x 5 questions; on each recording A and B either agree or one of them gets all 5 right
    rng = np.random.default_rng(3)
    kinds = rng.choice(3, size=60, p=[0.3, 0.2, 0.5])  # 0: A right, 1: B right, 2: the same answers
    values_a, values_b, clusters = {}, {}, {}
    for r, kind in enumerate(kinds):
        same = float(rng.integers(0, 2))
        for q in range(5):
            uid = f"r{r:02d}q{q}"
            values_a[uid] = 1.0 if kind == 0 else (0.0 if kind == 1 else same)
            values_b[uid] = 1.0 if kind == 1 else (0.0 if kind == 0 else same)
            clusters[uid] = f"rec{r}"
    task_of = dict.fromkeys(values_a, "Sound_AQA")
    plain_rows, _ = _pair_rows("foundation", "a", "b", values_a, values_b, task_of, 0, 4000)
    rows, _ = _pair_rows("foundation", "a", "b", values_a, values_b, task_of, 0, 4000, clusters)
    naive = next(r for r in plain_rows if r["level"] == "task")
    clustered = next(r for r in rows if r["level"] == "task")
    assert clustered["diff"] == naive["diff"] and clustered["a"] == naive["a"]  # point values unchanged
    assert naive["clusters"] is None and clustered["clusters"] == 60
    width = clustered["ci_high"] - clustered["ci_low"]
    naive_width = naive["ci_high"] - naive["ci_low"]
    # 5 perfectly agreeing questions per recording: design effect 5, the interval about sqrt(5) times as wide
    assert clustered["design_effect"] == pytest.approx(5.0, rel=0.03)  # (with its G / (G - 1) correction)
    assert width / naive_width == pytest.approx(np.sqrt(5.0), rel=0.15)
    # paired: identical models drawn over the same clusters differ by exactly 0 in every replicate
    same_rows, _ = _pair_rows("foundation", "a", "a2", values_a, dict(values_a), task_of, 0, 500, clusters)
    same = next(r for r in same_rows if r["level"] == "task")
    assert same["ci_low"] == same["ci_high"] == 0.0
