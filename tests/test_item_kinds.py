"""Item kinds own their behaviour: prompts, oracle answers, baseline guesses and cache reloads, registered per kind."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import typing
from pathlib import Path
from typing import Literal

import numpy as np
import pytest

import airbench_nb.records as records
from airbench_nb.builders.sseu import SseuBuild
from airbench_nb.builders.tiered import TieredBuild
from airbench_nb.builders.ugbench import UgbenchBuild
from airbench_nb.manifests import gold_columns, items_frame
from airbench_nb.models.base import GenerationParams, Prompt
from airbench_nb.models.baselines import CANNOT_TELL, Baseline, baseline_guess, oracle_answer
from airbench_nb.prompts import PromptSet, item_prompt_hash, item_prompts, kind_prompts, multi_clip_intro
from airbench_nb.records import (
    ChatItem,
    FoundationItem,
    ItemBase,
    SceneItem,
    SingleChoiceItem,
    SoundSourceItem,
    TranscriptionItem,
    TranslationItem,
)

KINDS: tuple[type, ...] = typing.get_args(typing.get_args(records.Item)[0])
"""Every concrete item kind (the members of the ``kind``-discriminated union)."""


def test_every_kind_of_the_union_is_listed_and_named():
    assert len(KINDS) == len(records.ITEM_KINDS)
    assert {cls.model_fields["kind"].default for cls in KINDS} == set(records.ITEM_KINDS)


@pytest.mark.parametrize("cls", KINDS, ids=lambda cls: cls.__name__)
def test_every_kind_registers_a_prompt_an_oracle_answer_a_guess_and_its_gold_columns(cls):
    for registry in (kind_prompts, oracle_answer, baseline_guess, gold_columns):
        assert registry.dispatch(cls) is not registry.dispatch(object), f"{cls.__name__}: nothing in {registry}"


def test_the_tiered_closed_set_is_a_single_choice_item_not_a_foundation_item():
    assert issubclass(SoundSourceItem, SingleChoiceItem) and issubclass(FoundationItem, SingleChoiceItem)
    assert not issubclass(SoundSourceItem, FoundationItem)
    assert set(FoundationItem.model_fields) == set(SoundSourceItem.model_fields) - {"classes", "categories"}


def test_every_public_name_of_the_record_modules_is_read_from_the_package():
    for info in pkgutil.iter_modules(records.__path__):
        module = importlib.import_module(f"airbench_nb.records.{info.name}")
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        defined = [node.name for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)]
        defined += [
            t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)
        ]
        defined += [
            node.target.id
            for node in tree.body
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        ]
        for name in defined:
            if not name.startswith("_") and name != "logger":
                assert getattr(records, name, None) is getattr(module, name), (
                    f"airbench_nb.records.{name} ({info.name})"
                )
                assert name in records.__all__, name


class HumItem(ItemBase):
    """A kind the kit does not know: hum the note named (registered by this test only)."""

    kind: Literal["hum"] = "hum"
    """Record kind."""
    task: str = "hum"
    """Task name."""
    category: str = "music"
    """Category."""
    note: str
    """The note to hum, which is also the gold answer."""


@kind_prompts.register(HumItem)
def _hum_prompts(item: HumItem, prompts: PromptSet) -> list[str]:
    return [f"Which note is hummed? {item.question}"]


@oracle_answer.register(HumItem)
def _hum_oracle(item: HumItem, turn: int = 0) -> str:
    return item.note


@baseline_guess.register(HumItem)
def _hum_guess(item: HumItem, baseline: Baseline, prompt: Prompt) -> str:
    return "C" if baseline.name == "first" else CANNOT_TELL


def _prompt(item, text: str = "x") -> Prompt:
    clips = item.clips
    return Prompt.of(item, text, [np.zeros(1600, dtype=np.float32)] * len(clips), [Path(c) for c in clips])


def test_a_kind_registered_outside_the_core_is_prompted_answered_and_guessed():
    item = HumItem(uid="h1", dataset="test", audio="a.wav", question="Listen.", note="A4")
    assert item_prompts(item) == ["Which note is hummed? Listen."]
    assert len(item_prompt_hash(item)) == 64
    two = item.model_copy(update={"audios": ["a.wav", "b.wav"]})
    assert item_prompts(two)[0] == multi_clip_intro(2) + "\nWhich note is hummed? Listen."
    params = GenerationParams()
    assert Baseline("oracle").generate([_prompt(item)], params)[0].text == "A4"
    assert Baseline("first").generate([_prompt(item)], params)[0].text == "C"
    assert Baseline("random").generate([_prompt(item)], params)[0].text == CANNOT_TELL


class DroneItem(ItemBase):
    """A kind that registered nothing."""

    kind: Literal["drone"] = "drone"
    """Record kind."""


def test_a_kind_that_registered_nothing_is_refused_by_name():
    item = DroneItem(uid="d1", dataset="test", audio="a.wav", question="?")
    with pytest.raises(TypeError, match="no prompt for a DroneItem"):
        item_prompts(item)
    with pytest.raises(TypeError, match="no oracle answer for a DroneItem"):
        oracle_answer(item)
    (generation,) = Baseline("random").generate([_prompt(item)], GenerationParams())
    assert generation.text is None and "no baseline guess for a DroneItem" in (generation.error or "")


def test_single_choice_items_share_one_registration():
    base = {"dataset": "synthetic", "audio": "a.wav", "question": "What made it?", "choices": ["wail", "bark"]}
    closed = SoundSourceItem(uid="s", answer=1, classes=["wail", "bark"], categories=["siren", "dog"], **base)
    foundation = FoundationItem(uid="f", task="Sound_AQA", answer=1, **base)
    assert item_prompts(closed) == item_prompts(foundation)
    assert oracle_answer(closed) == oracle_answer(foundation) == "B"


def test_each_build_part_reloads_what_it_keeps_in_the_cache():
    base = {"dataset": "synthetic", "audio": "a.wav", "question": "q"}
    sseu = SseuBuild(
        transcription=[TranscriptionItem(uid="t", task="sseu_transcription", reference="hi", **base)],
        scene=[SceneItem(uid="s", task="sseu_scene", classes=["a", "b"], label="a", **base)],
        failures=[{"task": "sseu", "index": 3, "uid": "x", "snr_db": 0.0, "error": "boom"}],
        snr_grid_db=[0.0, 5.0],
        utterances=2,
    )
    ugbench = UgbenchBuild(
        translation=[
            TranslationItem(
                uid="tr",
                task="speech_translation",
                source_language="de",
                target_language="en",
                references=["Hi"],
                **base,
            )
        ],
        failures=[{"task": "tts", "index": 0, "uid": "y", "error": "no voice"}],
        requested={"speech_translation": 1, "tts": 1},
    )
    closed = SoundSourceItem(uid="c", choices=["x", "y"], answer=0, classes=["x", "y"], categories=["k", "m"], **base)
    tiered = TieredBuild(
        sound_source=[closed], failures=[{"task": "sound_source", "index": 1, "uid": "z", "error": "e"}]
    )
    items = {**sseu.by_kind, **ugbench.by_kind, **tiered.by_kind, "chat": [], "foundation": []}
    stored = {
        "failures": [*sseu.failures, *ugbench.failures, *tiered.failures, {"task": "Sound_AQA", "index": 0}],
        **sseu.cache_fields(),
        **ugbench.cache_fields(),
        **tiered.cache_fields(),
    }
    assert SseuBuild.reloaded(items, stored) == sseu
    assert UgbenchBuild.reloaded(items, stored) == ugbench
    assert TieredBuild.reloaded(items, stored) == tiered
    assert SseuBuild.reloaded({}, {}) == SseuBuild()


def test_no_kind_ladder_is_left_in_prompts_baselines_and_the_build_cache():
    """The per-kind behaviour lives in registrations: these modules test no item class one after another."""
    package = Path(records.__file__).resolve().parents[1]
    for name in ("prompts.py", "models/baselines.py", "builders/cache.py"):
        source = (package / name).read_text(encoding="utf-8")
        tests = [line for line in source.splitlines() if "isinstance(" in line and "Item" in line]
        assert len(tests) <= 1, f"{name}: {tests}"  # the kinds register their behaviour (baseline_guess, kind_prompts)
        assert "if kind ==" not in source, name


def test_chat_items_are_not_single_choice():
    chat = ChatItem(uid="c", task="sound_QA", reference="r", meta_info="m", dataset="d", audio="a.wav", question="q")
    assert not isinstance(chat, SingleChoiceItem)
    assert item_prompts(chat) == ["q"]


def test_the_items_table_shows_the_gold_of_the_ug_bench_kinds():
    """items_frame read the reference of every kind it did not name (a translation item raised AttributeError)."""
    base = {"dataset": "synthetic", "audio": "a.wav", "question": "q"}
    translation = TranslationItem(
        uid="tr",
        task="speech_translation",
        source_language="de",
        target_language="en",
        references=["Hi", "Hey"],
        **base,
    )
    frame = items_frame([translation])
    assert frame[["choices", "answer"]].values.tolist() == [["", "Hi | Hey"]]


TYPE_TESTS_ALLOWED: dict[str, str] = {
    "scoring/translation.py": "the BLEU/chrF metric's own kind (serves, and the outcomes it pools)",
    "scoring/captioning.py": "the captioning metrics' own kind (serves, and the outcomes they pool)",
    "scoring/speech_output.py": "the speech-output metrics' own kind and task (serves, and their outcomes)",
}
"""Modules outside records/ that may still test an item's class, and why."""


def test_item_kinds_are_tested_by_class_only_where_a_kind_registers_itself():
    """Outside the records, behaviour comes from what the kinds declare (issue 30), not from type tests."""
    package = Path(records.__file__).resolve().parents[1]
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.startswith("records/") or relative in TYPE_TESTS_ALLOWED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if "isinstance(" in line and "Item)" in line:
                found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def _chat(**fields: object) -> ChatItem:
    base = {"uid": "c", "task": "sound_QA", "reference": "r", "meta_info": "m", "dataset": "d", "audio": "a.wav"}
    return ChatItem(**{**base, "question": "q", **fields})


def test_the_kinds_declare_how_they_are_judged():
    from airbench_nb.judge.base import CHAT_ORDERS

    assert ChatItem.JUDGE_ORDERS == CHAT_ORDERS
    assert FoundationItem.JUDGE_ORDERS == SoundSourceItem.JUDGE_ORDERS == TranslationItem.JUDGE_ORDERS == ("single",)
    one = _chat()
    assert one.judged_turns == (None,) and not one.multi_turn
    assert (one.turn_question(None), one.turn_reference(None)) == ("q", "r")
    turns = [{"question": "q1", "reference": "r1"}, {"question": "q2", "reference": "r2"}]
    several = ChatItem(uid="t", task="kit_followup_QA", meta_info="m", dataset="d", audio="a.wav", turns=turns)
    assert several.judged_turns == (0, 1) and several.multi_turn
    assert (several.turn_question(1), several.turn_reference(1)) == ("q2", "r2")
    base = {"dataset": "d", "audio": "a.wav", "question": "q"}
    single = FoundationItem(uid="f", task="Speaker_Gender_Recognition", choices=["a", "b"], answer=0, **base)
    assert single.judged_turns == (None,) and not single.multi_turn
    assert (single.turn_question(3), single.turn_reference(None)) == ("q", None)


def test_the_kinds_declare_their_category_prompting_rotation_and_spoken_text():
    from airbench_nb.records import CHAT_TASKS, FOUNDATION_TASKS, JointItem, SpeechGenerationItem

    base = {"dataset": "d", "audio": "a.wav", "question": "q"}
    for task, category in FOUNDATION_TASKS.items():
        item = FoundationItem(uid="f", task=task, choices=["a", "b"], answer=0, **base)
        assert item.category_label == category
    for task, category in CHAT_TASKS.items():
        assert _chat(task=task).category_label == category
    assert FoundationItem.ROTATED and not SoundSourceItem.ROTATED and not ChatItem.ROTATED
    assert records.MMAUItem.ROTATED and records.MMARItem.ROTATED and records.MMSUItem.ROTATED
    scene = SceneItem(uid="s", task="sseu_scene", classes=["a", "b"], label="a", **base)
    assert scene.prompting_mode == "independent" and scene.mix_meta is None and scene.text_to_speak is None
    joint = JointItem(
        uid="j",
        task="sseu_joint",
        reference="r",
        scene_classes=["a", "b"],
        scene_label="a",
        event_classes=["x", "y"],
        event_labels=[],
        prompting="sseu-cot",
        **base,
    )
    assert joint.prompting_mode == "sseu-cot"
    tts = SpeechGenerationItem(uid="t", task="tts", text="Say this.", **base)
    spoken = SpeechGenerationItem(uid="a", task="spoken_answer", answers=["yes"], **base)
    assert (tts.text_to_speak, spoken.text_to_speak) == ("Say this.", None)
