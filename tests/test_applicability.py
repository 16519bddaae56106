"""Per-item applicability: a backend's optional ``applies(item)`` beside its ``kinds``, read by
:func:`~airbench_nb.models.base.not_applicable_reason` and the runner (counted by kind, each reason logged once).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.models import Generation, GenerationParams, Prompt, not_applicable_reason
from airbench_nb.records import FoundationItem, SceneItem, TranscriptionItem
from airbench_nb.runner import run_model


class _Echo:
    """A backend answering ``kinds`` (None: every kind) with its uid, optionally refusing items through ``applies``."""

    batch_size = 4

    def __init__(self, kinds: frozenset[str] | None, refuse: dict[str, str] | None = None) -> None:
        self.spec = "fake:echo"
        self.kinds = kinds
        self.asked: list[str] = []
        if refuse is not None:
            self.applies = lambda item: refuse.get(item.task)

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        self.asked += [p.uid for p in prompts]
        return [Generation(text="A") for _ in prompts]

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    root = tmp_path_factory.mktemp("applies")
    (root / "audio").mkdir()
    sf.write(root / "audio" / "c.wav", np.full(1600, 0.1, np.float32), 16000)
    base = {"dataset": "synthetic", "audio": "audio/c.wav", "question": "Which?"}
    items = [
        FoundationItem(
            uid="lid", task="Spoken_Language_Identification", choices=["German", "French"], answer=0, **base
        ),
        FoundationItem(uid="gender", task="Speaker_Gender_Recognition", choices=["male", "female"], answer=0, **base),
        FoundationItem(uid="gender2", task="Speaker_Gender_Recognition", choices=["male", "female"], answer=1, **base),
        TranscriptionItem(uid="tr", task="sseu_transcription", reference="hi", **base),
        SceneItem(uid="sc", task="sseu_scene", classes=["park", "cafe"], label="park", **base),
    ]
    return root, items


def test_reason_by_kind_then_applies(data):
    _, items = data
    lid, gender, _, transcription, scene = items
    plain = _Echo(frozenset({"foundation", "transcription"}))
    assert not_applicable_reason(plain, lid) is None and not_applicable_reason(plain, gender) is None
    assert not_applicable_reason(plain, scene) == "fake:echo does not serve scene items"
    picky = _Echo(frozenset({"foundation", "transcription"}), {"Speaker_Gender_Recognition": "not a language task"})
    assert not_applicable_reason(picky, lid) is None and not_applicable_reason(picky, transcription) is None
    assert not_applicable_reason(picky, gender) == "not a language task"
    assert not_applicable_reason(picky, scene) == "fake:echo does not serve scene items"  # kind decides first
    assert not_applicable_reason(_Echo(None), scene) is None  # an LALM serves every kind


def test_runner_counts_refused_items_by_kind_and_logs_each_reason_once(data, tmp_path, caplog):
    root, items = data
    picky = _Echo(frozenset({"foundation", "transcription"}), {"Speaker_Gender_Recognition": "not a language task"})
    with caplog.at_level(logging.INFO, logger="airbench_nb.runner.models"):
        summary = run_model(picky, items, root, tmp_path / "p.jsonl", progress=False)
    assert sorted(picky.asked) == ["lid", "tr"]
    assert summary.served == {"foundation": 1, "transcription": 1}
    assert summary.not_applicable == {"foundation": 2, "scene": 1}
    assert summary.answered == 2 and summary.errors == 0
    reasons = [r.getMessage() for r in caplog.records if "not a language task" in r.getMessage()]
    assert reasons == ["fake:echo: 2 item(s) not applicable: not a language task"]
    again = run_model(picky, items, root, tmp_path / "p.jsonl", progress=False)  # resumed: nothing asked again
    assert again.skipped_existing == 2 and sorted(picky.asked) == ["lid", "tr"]


def test_backend_without_applies_is_unchanged(data, tmp_path, caplog):
    root, items = data
    plain = _Echo(frozenset({"foundation", "transcription"}))
    with caplog.at_level(logging.INFO, logger="airbench_nb.runner.models"):
        summary = run_model(plain, items, root, tmp_path / "q.jsonl", progress=False)
    assert sorted(plain.asked) == ["gender", "gender2", "lid", "tr"]
    assert summary.served == {"foundation": 3, "transcription": 1} and summary.not_applicable == {"scene": 1}
    assert not [r for r in caplog.records if "item(s) not applicable" in r.getMessage()]


def test_a_group_the_model_answered_nothing_of_was_not_asked():
    """asked_items: Foundation by task, translation by direction, others by kind; a group with any response stays."""
    from types import SimpleNamespace as Item

    from airbench_nb.scoring.outcomes import asked_group, asked_items

    lid = [Item(uid=f"l{k}", kind="foundation", task="Spoken_Language_Identification") for k in range(2)]
    gender = [Item(uid=f"g{k}", kind="foundation", task="Speaker_Gender_Recognition") for k in range(2)]
    de_en = Item(uid="t1", kind="translation", source_language="de", target_language="en")
    en_de = Item(uid="t2", kind="translation", source_language="en", target_language="de")
    scene = Item(uid="s1", kind="scene")
    items = [*lid, *gender, de_en, en_de, scene]
    assert asked_group(de_en) == ("translation", "de", "en") and asked_group(scene) == ("scene",)
    # one LID answer (the other failed or is missing: still asked, a failure), one X -> en translation
    assert [i.uid for i in asked_items(items, {"l0", "t1"})] == ["l0", "l1", "t1"]
    assert asked_items(items, set()) == []


def test_spoken_answers_the_asr_judge_cannot_transcribe_are_not_measured():
    """A language refusal leaves the item out of the WER (counted as not measured); one entry per language."""
    from airbench_nb.judge.asr import LANGUAGE_REFUSED
    from airbench_nb.scoring.speech_output import NOT_MEASURED, SpeechOutputWer, SpokenOutcome

    def outcome(uid: str, language: str, text: str, transcript: str | None, failure: str | None = None):
        return SpokenOutcome(uid, "tts", language, text, (), transcript, failure, "asr:x")

    refused = f"{LANGUAGE_REFUSED}: asr:x is English-only: it cannot transcribe speech in 'de'"
    outcomes = [
        outcome("e1", "en", "the cat sat down", "the cat sat down"),
        outcome("e2", "en", "a dog ran home", "a dog ran away"),
        outcome("d1", "de", "das ist ein Haus", None, refused),
    ]
    section = SpeechOutputWer().aggregate(outcomes, "strict", reps=0, seed=0)
    assert section.average.value == 1 / 8 and section.n_items == 2 and section.failed == 0
    assert section.failure_reasons == {f"{NOT_MEASURED}: {refused}": 1}
    assert list(section.tasks) == ["tts"]  # the German answer was not measured: one language scored
    heard = [*outcomes[:2], outcome("d1", "de", "das ist ein Haus", "das ist ein")]
    by_language = SpeechOutputWer().aggregate(heard, "strict", reps=0, seed=0).tasks
    assert by_language["tts (de)"].value == 1 / 4 and by_language["tts (en)"].value == 1 / 8
    assert by_language["tts"].value == 2 / 12
