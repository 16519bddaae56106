"""Metrics that reward gaming or failure, and one rule for missing audio (issue 29).

- Missing audio is a data defect on every kind: the tiered benchmark leaves such items out of its denominators and
  counts them as unusable, as Foundation does (the oracle keeps recall 1.0 over the usable clips).
- A spoken answer that lists every candidate answer is not right: it is counted as an enumeration.
- Tier D's recall gets its precision and the share of classes named per answer beside it: an answer naming all 25
  classes has recall 1.0 and precision 1/25.
- The events table states the mAP an all-empty answer set gets on the same items (the floor), beside the mAP.

Every expected number is computed by hand in the test.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from airbench_nb.analysis.sseu import outcomes_by_model, sseu_analysis
from airbench_nb.analysis.tiered_run import tiered_run
from airbench_nb.analysis.ugtasks import UgTasks
from airbench_nb.builders.tiered import source_items
from airbench_nb.judge.run import judge_run_folder
from airbench_nb.manifests import write_manifest
from airbench_nb.records import (
    TIERED_KINDS,
    EventsItem,
    Response,
    RunInfo,
    SoundSourceItem,
    SpeechGenerationItem,
    Verdict,
)
from airbench_nb.report_page import write_report_page
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import infer_run_folder
from airbench_nb.scoring import score_run
from airbench_nb.scoring.speech_output import speech_output_summary
from airbench_nb.scoring.tagging import class_text, score_events
from airbench_nb.scoring.tiered import TIER_D_NAMED_REASON, score_open_vocabulary
from airbench_nb.synth.sources import hierarchy
from tests.test_hostile import _wav

# ------------------------------------------------------------------------------------ missing audio: one rule


def _tiered_run_folder(root: Path, clips_per_class: int) -> tuple[RunFolder, list[SoundSourceItem]]:
    """A run folder with ``clips_per_class`` short noise clips of every fine class, asked closed and open."""
    folder = RunFolder(root / "run")
    tree = hierarchy()
    closed, opened = [], []
    for k, fine in enumerate(c.name for c in tree.classes for _ in range(clips_per_class)):
        audio = f"audio/clip{k:03d}.wav"
        _wav(folder.data_dir / audio, seconds=0.1, seed=k)
        item, twin = source_items(tree, fine, uid=f"clip{k:03d}", audio=audio, audio_sha256=None, meta={}, dataset="t")
        closed.append(item)
        opened.append(twin)
    write_manifest(folder.manifest("sound_source"), closed)
    write_manifest(folder.manifest("sound_source_open"), opened)
    return folder, closed


def _page(folder: RunFolder, analysis: dict) -> str:
    """The landing page of a run folder whose analysis.json is ``analysis`` (a finished run, no notebooks)."""
    now = datetime.now(UTC)
    folder.write_info(RunInfo(run_id="run", started=now, ended=now, status="ok", notebooks=[]))
    folder.analysis_json.parent.mkdir(parents=True, exist_ok=True)
    header = {"run_dir": ".", "protocol": "strict", "created": now.isoformat(), "models": [], "judges": []}
    header |= {"weights": {}, "items": 0, "unusable_items": 0, "reasons": {}}
    folder.analysis_json.write_text(json.dumps(header | analysis), encoding="utf-8")
    index, _ = write_report_page(folder.path)
    return index.read_text(encoding="utf-8")


def test_tiered_items_with_missing_audio_are_unusable_not_wrong(tmp_path: Path) -> None:
    folder, closed = _tiered_run_folder(tmp_path, clips_per_class=2)
    assert len(closed) == 50
    # every class keeps one clip: the second clip of each class is deleted (the open twin shares the file)
    seen: set[str] = set()
    deleted = 0
    for item in closed:
        if item.fine in seen:
            (folder.data_dir / item.audio).unlink()
            deleted += 1
        seen.add(item.fine)
    assert deleted == 25
    infer_run_folder(folder, ["baseline:oracle"], kinds=TIERED_KINDS)
    judge_run_folder(folder, ["rule", "sources"], kinds=TIERED_KINDS)
    result = tiered_run(folder)
    data = result.to_json()
    for tier in ("A", "D"):
        oracle = data["tiers"][tier]["baseline:oracle"]
        for granularity in ("coarse", "fine"):
            assert oracle[granularity]["macro_recall"] == 1.0, (tier, granularity, oracle[granularity])
            assert oracle[granularity]["n"] == 25
            assert oracle[granularity]["unanswered"] == 0
        system = f"baseline:oracle · {tier}"
        assert data["unusable"][system] == 25
        assert data["failures"][system] == 0
    assert "missing" in data["unusable_why"]
    page = _page(folder, {"tiered": data})
    assert "<th>unusable</th>" in page and "<td>25</td>" in page


# ------------------------------------------------------------------------------- tier D: precision beside recall


def test_tier_d_precision_and_share_named_equal_a_hand_computation() -> None:
    tree = {"dog": "animal", "cat": "animal", "car": "engine"}
    result = score_open_vocabulary(
        tree,
        ["dog", "cat", "car"],
        [True, True, False],
        [True, True, False],
        named=[["dog", "cat", "car"], ["cat"], ["animal"]],
    )
    fine, coarse = result.fine, result.coarse
    # dog: named once, by its own item; cat: named twice, once by its own; car: named once, by a dog
    assert fine.per_class["dog"].precision == 1.0 and fine.per_class["cat"].precision == 0.5
    assert fine.per_class["car"].precision == 0.0
    assert fine.macro_precision == pytest.approx(0.5) and fine.macro_recall == pytest.approx(2 / 3)
    assert fine.named_share == pytest.approx((3 / 3 + 1 / 3 + 0 / 3) / 3)
    # animal named by all three answers (two animals); engine by the dog's answer only
    assert coarse.per_class["animal"].precision == pytest.approx(2 / 3) and coarse.per_class["engine"].precision == 0
    assert coarse.macro_precision == pytest.approx(1 / 3) and coarse.macro_recall == pytest.approx(0.5)
    assert coarse.named_share == pytest.approx((2 / 2 + 1 / 2 + 1 / 2) / 3)
    assert fine.macro_f1 is None and fine.reason == TIER_D_NAMED_REASON
    data = result.to_json()
    assert data["fine"]["named_share"] == pytest.approx(4 / 9) and data["fine"]["macro_precision"] == 0.5


def test_an_open_answer_naming_every_class_has_recall_1_and_precision_1_over_25(tmp_path: Path) -> None:
    folder, closed = _tiered_run_folder(tmp_path, clips_per_class=1)
    tree = hierarchy()
    every = ", ".join(c.shown for c in tree.classes)
    path = folder.responses_file("m:everything", "sound_source_open")
    path.parent.mkdir(parents=True)
    answers = [Response(uid=f"{i.uid}-open", model="m:everything", text=every) for i in closed]
    path.write_text("".join(r.model_dump_json() + "\n" for r in answers), encoding="utf-8")
    judge_run_folder(folder, ["sources"], kinds=["sound_source_open"])
    data = tiered_run(folder).to_json()
    system = data["tiers"]["D"]["m:everything"]
    categories = len(set(tree.coarse_of(c.name) for c in tree.classes))
    assert len(closed) == 25 and categories == 8
    assert system["fine"]["macro_recall"] == 1.0 and system["coarse"]["macro_recall"] == 1.0
    assert system["fine"]["named_share"] == 1.0 and system["coarse"]["named_share"] == 1.0
    # every class is named by all 25 answers, one of them its own: 1/25; a category of k classes: k/25, mean 1/8
    assert system["fine"]["macro_precision"] == pytest.approx(1 / 25)
    assert system["coarse"]["macro_precision"] == pytest.approx(1 / 8)
    page = _page(folder, {"tiered": data})
    tier_d = page[page.index("Tier D:") :]
    assert "<th>named</th>" in tier_d and "<td>100.0</td>" in tier_d and "<td>4.0</td>" in tier_d


# ------------------------------------------------------------------------------------------ events: the mAP floor

EVENT_CLASSES = ["dog bark", "car horn", "bird song", "church bell", "phone ring"]


def _events_items(clips: int) -> list[EventsItem]:
    """Clip k carries classes k and k+2 (mod 5)."""
    return [
        EventsItem(
            uid=f"clip{k}-e",
            dataset="synthetic",
            audio=f"audio/clip{k}.wav",
            clip_id=f"clip{k}",
            snr_db=0.0,
            question="Events?",
            task="sseu_events",
            classes=EVENT_CLASSES,
            labels=[EVENT_CLASSES[k % 5], EVENT_CLASSES[(k + 2) % 5]],
        )
        for k in range(clips)
    ]


class OneHot:
    """An embedder that gives each class its own axis and any other text the first class's (no model)."""

    spec = "one-hot"

    def embed(self, texts: list[str]) -> np.ndarray:
        axes = [class_text(c) for c in EVENT_CLASSES]
        return np.stack([np.eye(len(axes))[axes.index(t) if t in axes else 0] for t in texts])


def test_empty_event_answers_score_the_stated_floor_and_one_clip_floors_at_1(tmp_path: Path) -> None:
    # 4 clips: classes 0, 2, 3 on two clips each, 1 and 4 on one: every score tied, AP = share of positives
    floor = (2 / 4 + 1 / 4 + 2 / 4 + 2 / 4 + 1 / 4) / 5
    assert floor == pytest.approx(0.4)
    items = _events_items(4)
    empty = score_events([[] for _ in items], [i.labels for i in items], EVENT_CLASSES, OneHot(), reps=0)
    assert empty.map == pytest.approx(floor) and empty.map_floor == pytest.approx(floor)
    one = score_events([["x"]], [items[0].labels], EVENT_CLASSES, OneHot(), reps=0)
    assert one.map == 1.0 and one.map_floor == 1.0  # any answer on one clip: the floor says so
    # the SSEU table carries the floor beside the mAP; the page shows it
    by_uid = {i.uid: Response(uid=i.uid, model="m", text="none") for i in items}
    row = sseu_analysis(outcomes_by_model(items, {"m": by_uid}), reps=0).table["m"]["independent"]
    assert row["map"] == pytest.approx(floor) and row["map_floor"] == pytest.approx(floor)
    analysis = sseu_analysis(outcomes_by_model(items, {"m": by_uid}), reps=0)
    assert "mAP floor %" in analysis.table_frame().columns
    page = _page(RunFolder(tmp_path / "run"), {"sseu": analysis.table})
    assert "<th>event mAP floor %</th>" in page and "<td>40.0</td>" in page


# --------------------------------------------------------------------------- spoken answers: listing every candidate

ASR = "asr:faster-whisper:tiny.en-bundled"
QUESTIONS = [  # (uid, question, accepted answers, what the model said, right?)
    ("france", "What is the capital of France?", ["Paris"], "The capital of France is Paris.", True),
    ("week", "How many days are there in a week?", ["seven", "7"], "Paris, seven, blue, twenty four and two.", False),
    ("sky", "What color is the sky on a clear day?", ["blue"], "It is blue.", True),
    ("day", "How many hours are there in a day?", ["twenty four", "24"], "There are twenty four hours.", True),
    ("dog", "How many legs does a dog have?", ["four", "4"], "Four.", True),
    ("sum", "What is two plus three?", ["five", "5"], "Two plus three is five.", True),
    ("eyes", "How many eyes do people have?", ["two", "2"], "Two.", True),
]


def _spoken(said: dict[str, str]) -> tuple[list[SpeechGenerationItem], list[Response], list[Verdict]]:
    items = [
        SpeechGenerationItem(
            uid=uid,
            dataset="t",
            audio=f"audio/{uid}.wav",
            question="",
            task="spoken_answer",
            answers=answers,
            meta={"spoken_question": question},
        )
        for uid, question, answers, _, _ in QUESTIONS
    ]
    responses = [Response(uid=uid, model="m", text=None) for uid in said]
    verdicts = [Verdict(uid=uid, model="m", judge=ASR, raw=text) for uid, text in said.items()]
    return items, responses, verdicts


def test_a_spoken_answer_naming_several_candidates_is_wrong_and_counted(tmp_path: Path) -> None:
    items, responses, verdicts = _spoken({uid: text for uid, _, _, text, _ in QUESTIONS})
    summary = speech_output_summary(items, responses, verdicts, reps=0)
    # "twenty four" is one candidate (not "four"), "two" and "three" in "two plus three is five" are the question's
    right = sum(ok for *_, ok in QUESTIONS)
    assert right == 6
    assert summary.spoken_answer_accuracy == pytest.approx(right / len(QUESTIONS))
    assert summary.spoken_answer_enumerations == 1
    # every answer listing every candidate: none right, all counted
    everything = ", ".join(answers[0] for _, _, answers, _, _ in QUESTIONS)
    items, responses, verdicts = _spoken({uid: everything for uid, *_ in QUESTIONS})
    summary = speech_output_summary(items, responses, verdicts, reps=0)
    assert summary.spoken_answer_accuracy == 0.0 and summary.spoken_answer_enumerations == len(QUESTIONS)
    speech = UgTasks(speech_output={"m": summary}).speech_output_dict()
    assert speech["m"]["spoken_answer"]["enumerations"] == len(QUESTIONS)
    page = _page(RunFolder(tmp_path / "run"), {"speech_output": speech})
    assert "<th>listed several</th>" in page and f"<td>{len(QUESTIONS)}</td>" in page
    section = score_run(items, responses, verdicts, reps=0).strict.metric_sections["spoken_answer"]
    assert section.average.value == 0.0
