"""Circular evaluation: rotations keep the gold text, manifests round-trip with their audio, rates match hand counts."""

from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd
import pytest

from airbench_nb.analysis.circular import circular, circular_frame, rotate_item, rotate_items, rotate_manifest
from airbench_nb.analysis.data import FOUNDATION_COLUMNS
from airbench_nb.manifests import data_root, read_manifest, resolve_audio, write_manifest
from airbench_nb.records import ChatItem, FoundationItem

LETTERS = "ABCD"


def item(uid: str, choices: list[str], answer: int, audio: str = "audio/x.wav") -> FoundationItem:
    return FoundationItem(
        uid=uid,
        dataset="synthetic",
        audio=audio,
        question="Which instrument plays?",
        task="Music_Instruments_Classfication",
        choices=choices,
        answer=answer,
        meta={"instrument": choices[answer]},
    )


def test_rotation_moves_the_index_and_keeps_the_gold_text() -> None:
    original = item("m-1", ["bell", "organ", "flute", "harp"], answer=1)
    rotated = rotate_items([original])
    assert [r.uid for r in rotated] == ["m-1@r0", "m-1@r1", "m-1@r2", "m-1@r3"]
    # rotation k moves option i to position (i + k) % 4
    assert rotated[0].choices == ["bell", "organ", "flute", "harp"]
    assert rotated[1].choices == ["harp", "bell", "organ", "flute"]
    assert rotated[2].choices == ["flute", "harp", "bell", "organ"]
    assert [r.answer for r in rotated] == [1, 2, 3, 0]
    assert all(r.choices[r.answer] == "organ" for r in rotated)
    assert all(r.meta == {"instrument": "organ", "rotation_of": "m-1", "rotation": k} for k, r in enumerate(rotated))
    assert original.meta == {"instrument": "organ"}  # not mutated
    assert all(r.audio == original.audio and r.question == original.question for r in rotated)

    binary = item("m-2", ["sad", "happy"], answer=0)
    assert [(r.choices, r.answer) for r in rotate_items([binary])] == [(["sad", "happy"], 0), (["happy", "sad"], 1)]
    assert len(rotate_items([original, binary], rotations=3)) == 3 + 2
    assert rotate_item(original, 5).uid == "m-1@r1"


def test_already_rotated_items_and_bad_arguments_are_refused() -> None:
    once = rotate_items([item("m-1", ["bell", "organ"], 0)])
    with pytest.raises(ValueError, match="m-1@r0"):
        rotate_items(once)
    with pytest.raises(ValueError, match="at least 1"):
        rotate_items([item("m-1", ["bell", "organ"], 0)], rotations=0)
    chat = ChatItem(uid="c-1", dataset="s", audio="a.wav", question="q", task="music_QA", reference="r", meta_info="m")
    with pytest.raises(TypeError, match="c-1"):
        rotate_items([chat])  # type: ignore[list-item]


def test_manifest_round_trip_keeps_audio_resolvable(tmp_path) -> None:
    source = tmp_path / "run" / "data"
    (source / "audio").mkdir(parents=True)
    (source / "audio" / "x.wav").write_bytes(b"RIFF")
    chat = ChatItem(
        uid="c-1", dataset="s", audio="audio/x.wav", question="q", task="music_QA", reference="r", meta_info="m"
    )
    items = [item("m-1", ["bell", "organ", "flute", "harp"], 2), item("m-2", ["sad", "happy"], 1), chat]
    write_manifest(source / "foundation.jsonl", items)

    out = tmp_path / "elsewhere" / "circular" / "foundation.jsonl"
    counts = rotate_manifest(source / "foundation.jsonl", out)
    assert counts["foundation"] == 2 and counts["written"] == 6 and counts["skipped_chat"] == 1
    assert counts["by_n_choices"] == {"2": 1, "4": 1}
    assert json.dumps(counts)

    back = read_manifest(out)
    assert [i.uid for i in back] == ["m-1@r0", "m-1@r1", "m-1@r2", "m-1@r3", "m-2@r0", "m-2@r1"]
    assert all(isinstance(i, FoundationItem) and i.choices[i.answer] in ("flute", "happy") for i in back)
    root = data_root(out)
    assert root == source.resolve()
    assert all(resolve_audio(root, i.audio).is_file() for i in back)

    # a second manifest into the same folder keeps the card; the source itself is never overwritten
    rotate_manifest(source / "foundation.jsonl", out.parent / "again.jsonl", rotations=1)
    assert len(read_manifest(out.parent / "again.jsonl")) == 2
    with pytest.raises(ValueError, match="overwrite"):
        rotate_manifest(source / "foundation.jsonl", source / "foundation.jsonl")
    # a folder whose dataset.json points elsewhere is refused
    other = tmp_path / "other"
    other.mkdir()
    (other / "dataset.json").write_text(json.dumps({"data_root": "/nowhere"}))
    with pytest.raises(ValueError, match="data_root"):
        rotate_manifest(source / "foundation.jsonl", other / "foundation.jsonl")
    # rotating a rotated manifest is refused by uid
    with pytest.raises(ValueError, match="m-1@r0"):
        rotate_manifest(out, tmp_path / "twice" / "foundation.jsonl")


Policy = Callable[[FoundationItem], int | None]


def run_frame(items: list[FoundationItem], policies: dict[str, Policy]) -> pd.DataFrame:
    rows = []
    for model, policy in policies.items():
        for it in items:
            chosen = policy(it)
            failed = chosen is None
            rows.append(
                {
                    "model": model,
                    "uid": it.uid,
                    "task": it.task,
                    "n_choices": len(it.choices),
                    "choices": tuple(it.choices),
                    "gold": it.answer,
                    "gold_letter": LETTERS[it.answer],
                    "chosen": chosen,
                    "chosen_letter": None if failed else LETTERS[chosen],
                    "chosen_text": None if failed else it.choices[chosen],
                    "correct": False if failed else chosen == it.answer,
                    "failed": failed,
                    "rotation_of": it.meta["rotation_of"],
                    "rotation": it.meta["rotation"],
                }
            )
    frame = pd.DataFrame(rows).reindex(columns=list(FOUNDATION_COLUMNS))
    for column in ("chosen", "rotation"):
        frame[column] = frame[column].astype("Int64")
    frame["correct"] = frame["correct"].astype("boolean")
    return frame


def test_rates_by_hand_on_three_items_by_four_rotations() -> None:
    originals = [
        item("i1", ["bell", "organ", "flute", "harp"], 0),
        item("i2", ["bell", "organ", "flute", "harp"], 1),
        item("i3", ["drum", "piano", "violin", "cello"], 3),
    ]
    rotated = rotate_items(originals)
    assert len(rotated) == 12

    def always_a(it: FoundationItem) -> int:
        return 0

    def right(it: FoundationItem) -> int:
        return it.answer

    def right_but_rotation_2(it: FoundationItem) -> int:
        return (it.answer + 1) % 4 if it.meta["rotation"] == 2 else it.answer

    def same_wrong_text(it: FoundationItem) -> int:
        wrong = [c for c in it.choices if c != it.choices[it.answer]]
        return it.choices.index(sorted(wrong)[0])

    def fails_once(it: FoundationItem) -> int | None:
        return None if it.uid == "i3@r1" else it.answer

    frame = run_frame(
        rotated,
        {"a": always_a, "right": right, "three_of_four": right_but_rotation_2, "stubborn": same_wrong_text},
    )
    frame = pd.concat([frame, run_frame(rotated, {"flaky": fails_once})], ignore_index=True)
    results = circular(frame)

    a = results["a"]
    # gold is at A in exactly one rotation of each item; A holds a different text in each rotation
    assert (a.items, a.incomplete, a.rotations) == (3, 0, 12)
    assert a.accuracy == pytest.approx(3 / 12)
    assert a.consistent_rate == 0.0 and a.circular_accuracy == 0.0
    assert (results["right"].accuracy, results["right"].consistent_rate, results["right"].circular_accuracy) == (
        1.0,
        1.0,
        1.0,
    )
    three = results["three_of_four"]
    assert three.accuracy == pytest.approx(0.75)
    assert three.circular_accuracy == 0.0 and three.consistent_rate == 0.0
    stubborn = results["stubborn"]
    assert (stubborn.accuracy, stubborn.consistent_rate, stubborn.circular_accuracy) == (0.0, 1.0, 0.0)
    # strict: a failure is a wrong, inconsistent answer (correct False)
    flaky = results["flaky"]
    assert (flaky.items, flaky.incomplete, flaky.rotations) == (3, 0, 12)
    assert flaky.accuracy == pytest.approx(11 / 12)
    assert flaky.circular_accuracy == pytest.approx(2 / 3) and flaky.consistent_rate == pytest.approx(2 / 3)
    # official: the failure is dropped (correct NA), so its item is incomplete and left out
    official = run_frame(rotated, {"flaky": fails_once})
    official.loc[official["failed"], "correct"] = pd.NA
    dropped = circular(official)["flaky"]
    assert (dropped.items, dropped.incomplete, dropped.rotations) == (2, 1, 8)
    assert dropped.circular_accuracy == 1.0 and dropped.accuracy == 1.0

    low, high = results["right"].circular_accuracy_ci  # type: ignore[misc]
    assert 0.0 < low < 1.0 and high == 1.0
    payload = a.as_dict()
    assert json.loads(json.dumps(payload)) == payload
    for key in ("items", "accuracy", "consistent_rate", "circular_accuracy", "incomplete"):
        assert key in payload

    plot = circular_frame(results)
    assert list(plot.columns) == [
        "model",
        "items",
        "incomplete",
        "rotations",
        "accuracy",
        "consistent_rate",
        "circular_accuracy",
        "ci_low",
        "ci_high",
    ]
    assert len(plot) == 5
    three_row = plot.set_index("model").loc["three_of_four"]
    assert (three_row["accuracy"], three_row["circular_accuracy"], three_row["items"]) == (0.75, 0.0, 3)


def test_nothing_to_analyse() -> None:
    empty = pd.DataFrame(columns=list(FOUNDATION_COLUMNS))
    assert circular(empty) == {}
    assert circular_frame({}).empty
    rotated = rotate_items([item("i1", ["bell", "organ"], 0)])
    never = run_frame(rotated, {"m": lambda it: None})
    strict = circular(never)["m"]  # strict: every answer failed, so wrong
    assert (strict.items, strict.accuracy, strict.circular_accuracy, strict.consistent_rate) == (1, 0.0, 0.0, 0.0)
    never["correct"] = pd.NA  # official: every answer dropped
    silent = circular(never)["m"]
    assert silent.items == 0 and silent.incomplete == 1 and silent.accuracy is None and silent.reason
    assert json.dumps(silent.as_dict())
    plain = run_frame(rotated, {"m": lambda it: 0}).assign(rotation_of=None)
    assert circular(plain) == {}
