"""Scoring multi-clip and multi-turn items (issue 14): per turn and per conversation, kit categories apart, the
official-shaped Averages unchanged by kit items, kit rows left out of official-format files."""

from __future__ import annotations

import json

import pytest

from airbench_nb.records import (
    CHAT_TASKS,
    FOUNDATION_TASKS,
    ChatItem,
    FoundationItem,
    Response,
    Verdict,
)
from airbench_nb.scoring import score_models, score_official_files, score_run, scores_frame
from airbench_nb.scoring.outcomes import INCOMPLETE_CONVERSATION

ORDERS = ("reference_first", "hypothesis_first")
TURN_SCORES = (8.0, 6.0, 4.0)  # the planted model's score at turns 1, 2, 3: it falls on follow-ups


def conversation(uid: str, turns: int = 3) -> ChatItem:
    return ChatItem(
        uid=uid,
        dataset="kit",
        audio=f"{uid}.wav",
        task="kit_followup_QA",
        turns=[{"question": f"Question {k + 1}?", "reference": f"Reference {k + 1}."} for k in range(turns)],
        meta_info="a mix",
    )


def chat_verdict(uid: str, model: str, order: str, hyp: float | None, turn: int | None, ref: float = 9.0) -> Verdict:
    first, second = (ref, hyp) if order == "reference_first" else (hyp, ref)
    if hyp is None:
        return Verdict(uid=uid, model=model, judge="j", order=order, raw="no scores here", parse_error="x", turn=turn)
    return Verdict(
        uid=uid,
        model=model,
        judge="j",
        order=order,
        raw=f"{first:g} {second:g}",
        score_reference=ref,
        score_hypothesis=hyp,
        turn=turn,
    )


def planted_conversations(model: str = "m", broken: bool = True):
    """Four 3-turn conversations scored 8, 6, 4 by turn; the last fails its third turn when ``broken``; the
    third has one order of turn 2 unparsed (it still counts: the other order scored that turn)."""
    items = [conversation(f"conv{k}") for k in range(4)]
    responses, verdicts = [], []
    for index, item in enumerate(items):
        answers = [f"answer {k}" for k in range(3)]
        failed = broken and index == 3
        if failed:
            responses.append(Response(uid=item.uid, model=model, text=answers[0], turns=answers[:2], error="turn 3"))
        else:
            responses.append(Response(uid=item.uid, model=model, text=answers[0], turns=answers))
        for turn, score in enumerate(TURN_SCORES):
            for order in ORDERS:
                unparsed = index == 2 and turn == 1 and order == "hypothesis_first"
                value = None if (failed and turn == 2) or unparsed else score
                verdicts.append(chat_verdict(item.uid, model, order, value, turn))
    return items, responses, verdicts


def test_per_turn_and_per_conversation_scores_with_a_known_answer():
    items, responses, verdicts = planted_conversations(broken=False)
    result = score_run(items, responses, verdicts, protocol="both", reps=200)
    for protocol in ("official", "strict"):
        chat = getattr(result, protocol).chat
        turns = chat.turns
        assert list(turns) == [f"kit_followup_QA turn {k}" for k in (1, 2, 3)]
        assert [turns[name].value for name in turns] == pytest.approx(TURN_SCORES)
        assert [turns[name].turn for name in turns] == [0, 1, 2]
        assert turns["kit_followup_QA turn 2"].n == 4 * 2 - 1 and turns["kit_followup_QA turn 2"].failures == 1
        # the conversation's score is the mean of its turns: 6 for every conversation
        assert chat.tasks["kit_followup_QA"].value == pytest.approx(6.0, abs=0.1)
        assert chat.categories["multi-turn"].value == chat.tasks["kit_followup_QA"].value
        assert chat.categories["multi-turn"].reference.value == 9.0
        assert chat.n_items == 4 and chat.kit.tasks == ["kit_followup_QA"]
        # no official category: the Average has nothing to average (kit categories are not in it)
        assert chat.average.value is None and chat.average.n == 0 and chat.average.partial
        low, high = (
            chat.turns["kit_followup_QA turn 1"].ci_low,
            chat.turns["kit_followup_QA turn 1"].ci_high,
        )
        assert low == high == 8.0  # every conversation scores 8 at turn 1
    # the missing order of conv2's turn 2: official averages the per-order means, strict pools the units
    official = result.official.chat.tasks["kit_followup_QA"].value
    strict = result.strict.chat.tasks["kit_followup_QA"].value
    assert official == pytest.approx((6.0 + (8 * 4 + 6 * 3 + 4 * 4) / 11) / 2)
    assert strict == pytest.approx((6 * 24 - 6) / 23)
    frame = scores_frame(result)
    assert set(frame[frame["level"] == "turn"]["name"]) == {f"kit_followup_QA turn {k}" for k in (1, 2, 3)}


def test_a_failed_turn_official_drops_it_strict_drops_the_conversation():
    items, responses, verdicts = planted_conversations(broken=True)
    result = score_run(items, responses, verdicts, protocol="both", reps=0)
    official, strict = result.official.chat, result.strict.chat
    # official: conv3 is scored on its first two turns (8 and 6); its third turn's two units are dropped
    assert official.turns["kit_followup_QA turn 3"].n == 6
    assert official.turns["kit_followup_QA turn 3"].failures == 2
    per_order = {
        "reference_first": (3 * 18 + 14) / 11,
        "hypothesis_first": (3 * 18 + 14 - 6) / 10,
    }
    assert official.tasks["kit_followup_QA"].value == pytest.approx(sum(per_order.values()) / 2)
    assert official.tasks["kit_followup_QA"].failures == 2 + 1
    # strict: conv3 is left out whole (its 4 scored units counted as failures), so every turn rests on 3 conversations
    task = strict.tasks["kit_followup_QA"]
    assert task.n == 3 * 6 - 1 and task.failures == 6 + 1
    assert strict.turns["kit_followup_QA turn 1"].value == 8.0
    assert strict.turns["kit_followup_QA turn 1"].n == 6
    assert strict.failure_reasons[INCOMPLETE_CONVERSATION] == 4
    assert strict.turns["kit_followup_QA turn 3"].failures == 2
    # a turn the model answered before the failure is scored: its answer was kept
    assert any("turn 3 not answered" in reason for reason in official.failure_reasons)


def official_run(model: str, seed_shift: int = 0):
    """One-turn official items of every category with responses and verdicts (scores vary with the uid)."""
    items, responses, verdicts = [], [], []
    for t, (task, _category) in enumerate(FOUNDATION_TASKS.items()):
        for k in range(4):
            uid = f"{task}-{k}"
            items.append(
                FoundationItem(
                    uid=uid, dataset="d", audio="a.wav", question="q", task=task, choices=["x", "y"], answer=k % 2
                )
            )
            right = (k + t + seed_shift) % 3 != 0
            letter = "AB"[k % 2] if right else "AB"[1 - k % 2]
            responses.append(Response(uid=uid, model=model, text=letter if k != 3 or t % 5 else "hmm"))
            correct = None if k == 3 and t % 5 == 0 else right
            verdicts.append(
                Verdict(
                    uid=uid,
                    model=model,
                    judge="rule",
                    choice=None if correct is None else "AB".index(letter),
                    correct=correct,
                    raw="rule: bare letter",
                )
            )
    for t, task in enumerate(CHAT_TASKS):
        for k in range(3):
            uid = f"{task}-{k}"
            items.append(
                ChatItem(uid=uid, dataset="d", audio="a.wav", question="q", task=task, reference="r", meta_info="m")
            )
            responses.append(Response(uid=uid, model=model, text="an answer"))
            for order in ORDERS:
                score = None if (k == 2 and order == "hypothesis_first" and t % 3 == 0) else float(3 + (k + t) % 6)
                verdicts.append(chat_verdict(uid, model, order, score, None, ref=8.0))
    return items, responses, verdicts


def kit_additions(model: str):
    """Multi-clip Foundation items (half right, one failure) and multi-turn conversations (one broken)."""
    items, responses, verdicts = [], [], []
    for k in range(6):
        uid = f"clip-{k}"
        items.append(
            FoundationItem(
                uid=uid,
                dataset="synthetic",
                audios=[f"{uid}a.wav", f"{uid}b.wav"],
                question="Which?",
                task="kit_louder_clip",
                choices=["the first clip", "the second clip"],
                answer=k % 2,
            )
        )
        responses.append(Response(uid=uid, model=model, text="A" if k != 5 else "no idea"))
        correct = None if k == 5 else k % 2 == 0
        verdicts.append(
            Verdict(
                uid=uid,
                model=model,
                judge="rule",
                choice=None if correct is None else 0,
                correct=correct,
                raw="rule: text of one option",
            )
        )
    c_items, c_responses, c_verdicts = planted_conversations(model)
    return items + c_items, responses + c_responses, verdicts + c_verdicts


AVERAGE_KEYS = ("value", "ci_low", "ci_high", "n", "failures", "partial", "categories_present", "orders_scored")


def test_official_averages_unchanged_by_kit_items():
    items, responses, verdicts = official_run("m")
    k_items, k_responses, k_verdicts = kit_additions("m")
    without = score_run(items, responses, verdicts, protocol="both", reps=300, judges=["j", "rule"])
    with_kit = score_run(
        items + k_items, responses + k_responses, verdicts + k_verdicts, protocol="both", reps=300, judges=["j", "rule"]
    )
    for protocol in ("official", "strict"):
        for bench in ("foundation", "chat"):
            before, after = getattr(getattr(without, protocol), bench), getattr(getattr(with_kit, protocol), bench)
            assert {k: getattr(after.average, k) for k in AVERAGE_KEYS} == {
                k: getattr(before.average, k) for k in AVERAGE_KEYS
            }, (protocol, bench)
            assert not before.average.partial
            for category in before.categories:  # official categories and tasks unchanged too
                assert after.categories[category] == before.categories[category]
            assert "kit" not in before.model_fields_set and "kit" in after.model_fields_set
        foundation = getattr(with_kit, protocol).foundation
        assert foundation.categories["multi-clip"].value == pytest.approx(3 / 6 if protocol == "strict" else 3 / 5)
        assert "uncategorised_tasks" not in foundation.model_fields_set
        assert getattr(with_kit, protocol).chat.categories["multi-turn"].value is not None
        assert list(foundation.categories)[-1] == "multi-clip"  # after the official ones
    # the summary's averages, n and failed are the same; the kit categories get columns of their own
    summary_without, _ = score_models(items, [(responses, verdicts)], reps=300)
    summary_with, _ = score_models(items + k_items, [(responses + k_responses, verdicts + k_verdicts)], reps=300)
    shared = [c for c in summary_without.columns]
    assert summary_with[shared].to_dict("records") == summary_without[shared].to_dict("records")
    assert {"foundation_multi-clip", "chat_multi-turn"} <= set(summary_with.columns) - set(shared)
    frame = scores_frame(with_kit)
    kit_rows = frame[(frame["level"] == "category") & frame["name"].isin(["multi-clip", "multi-turn"])]
    assert len(kit_rows) == 4  # two categories x two protocols


def test_official_files_leave_kit_rows_out_counted(tmp_path):
    rows = [
        {
            "path": f"{k}.wav",
            "question": "q",
            "choice_a": "x",
            "choice_b": "y",
            "answer_gt": "x",
            "task_name": "Sound_AQA",
            "dataset_name": "d",
            "uniq_id": k,
            "response": "A" if k % 3 else "B",
        }
        for k in range(9)
    ]
    kit = [
        {
            "path": f"k{k}.wav",
            "question": "Which?",
            "choice_a": "the first clip",
            "choice_b": "the second clip",
            "answer_gt": "the first clip",
            "task_name": "kit_pitch_compare",
            "dataset_name": "synthetic",
            "uniq_id": 100 + k,
            "response": "B",
        }
        for k in range(3)
    ]
    chat = [{"task_name": "sound_QA", "dataset_name": "d", "uniq_id": k, "gpt-score": f"8 {k + 3}"} for k in range(4)]
    chat_kit = [{"task_name": "kit_followup_QA", "dataset_name": "kit", "uniq_id": 9, "gpt-score": "8 1"}]
    plain, mixed = tmp_path / "plain", tmp_path / "mixed"
    for folder, f_rows, c_rows in ((plain, rows, chat), (mixed, rows + kit, chat + chat_kit)):
        folder.mkdir()
        (folder / "f.jsonl").write_text("".join(json.dumps(r) + "\n" for r in f_rows))
        (folder / "c.json").write_text(json.dumps(c_rows))
        (folder / "s.json").write_text(
            json.dumps([{**r, "gpt-score": " ".join(r["gpt-score"].split()[::-1])} for r in c_rows])
        )
    scored = {
        folder.name: score_official_files(folder / "f.jsonl", folder / "c.json", folder / "s.json", reps=100)
        for folder in (plain, mixed)
    }
    for protocol in ("official", "strict"):
        for bench in ("foundation", "chat"):
            before = getattr(getattr(scored["plain"], protocol), bench)
            after = getattr(getattr(scored["mixed"], protocol), bench)
            assert after.average == before.average and after.tasks == before.tasks
            assert after.invalid == before.invalid == 0
            assert "kit_rows" not in before.model_fields_set
        mixed = getattr(scored["mixed"], protocol)
        assert mixed.foundation.kit_rows["count"] == 3
        assert mixed.foundation.kit_rows["kit_pitch_compare"] == 3
        assert mixed.chat.kit_rows["count"] == 2  # one row in each order's file
