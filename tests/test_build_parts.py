"""Builder parts: build() loops over the registered parts; a part and a benchmark registered at test time are built
without editing a core module, and the registry refuses what it cannot run."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import numpy as np
import pytest
from pydantic import Field

from airbench_nb.audio import sha256_file, write_wav
from airbench_nb.benchmarks import BENCHMARKS, Benchmark, benchmark_of_kind, register_benchmark
from airbench_nb.builders import (
    BUILTIN_PARTS,
    CHAT_MAKERS,
    FOUNDATION_MAKERS,
    PARTS,
    SSEU_TASKS,
    UGBENCH_TASKS,
    BuildContext,
    BuilderPart,
    PartResult,
    build,
    load_recipes,
    register_part,
)
from airbench_nb.builders.parts import whole_number
from airbench_nb.manifests import read_manifest
from airbench_nb.records import ITEM_CLASSES, ItemBase


class BeepItem(ItemBase):
    """A one-question item about a beep (the test's own item kind)."""

    kind: Literal["beep"] = "beep"
    """The manifest kind."""
    task: str
    """Task name."""
    dataset: str = "beeps"
    """Where the item comes from."""
    answer: str
    """The gold answer (the beep's pitch in Hz)."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Provenance (every item kind has one)."""


class BeepPart:
    """A small builder part: ``beep_items`` sine beeps, asked for their pitch."""

    name = "beep"
    tasks: tuple[str, ...] = ("beep_pitch",)
    options: tuple[str, ...] = ("beep_items",)
    requires: tuple[str, ...] = ()
    manifests: tuple[str, ...] = ()

    def resolve(self, preset: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        return {"beep_items": whole_number("beep_items", given.get("beep_items", preset.get("beep_items", 0)))}

    def build(self, context: BuildContext) -> PartResult:
        n = context.options["beep_items"] if "beep_pitch" in context.tasks else 0
        items = []
        for k in range(n):
            hz = 220 * (k + 1)
            rel = f"audio/beep/beep-{k:03d}.wav"
            write_wav(context.out / rel, np.sin(2 * np.pi * hz * np.arange(1600) / 16000).astype(np.float32), 16000)
            items.append(
                BeepItem(
                    uid=f"beep-{k:03d}",
                    task="beep_pitch",
                    audio=rel,
                    audio_sha256=sha256_file(context.out / rel),
                    question="What is the pitch of the beep in Hz?",
                    answer=str(hz),
                )
            )
        failures = [{"task": "beep_pitch", "index": n, "error": "the last beep is always missing"}] if n else []
        return PartResult(items={"beep": items}, failures=failures, card=dict(context.options))


@pytest.fixture
def registries() -> Iterator[None]:
    """The part and benchmark registries as they were, after the test."""
    parts, benchmarks, kinds = dict(PARTS), dict(BENCHMARKS), dict(ITEM_CLASSES)
    yield
    PARTS.clear()
    PARTS.update(parts)
    BENCHMARKS.clear()
    BENCHMARKS.update(benchmarks)
    ITEM_CLASSES.clear()
    ITEM_CLASSES.update(kinds)


@pytest.fixture
def recipes_with_beeps(tmp_path):
    """The kit's recipes with a ``beeps`` preset: nothing but 3 beeps."""
    folder = tmp_path / "recipes"
    shutil.copytree(load_recipes().folder, folder)
    presets = json.loads((folder / "presets.json").read_text())
    presets["beeps"] = {"foundation_per_task": 0, "chat_per_task": 0, "beep_items": 3}
    (folder / "presets.json").write_text(json.dumps(presets))
    return folder


def test_the_builtin_parts_in_build_order():
    assert [p.name for p in BUILTIN_PARTS] == list(PARTS)[: len(BUILTIN_PARTS)]
    assert list(PARTS)[:6] == ["airbench", "snr", "circular", "sseu", "ugbench", "tiered"]
    assert all(isinstance(p, BuilderPart) for p in PARTS.values())
    buildable = [task for part in BUILTIN_PARTS for task in part.tasks]
    assert buildable == [*FOUNDATION_MAKERS, *CHAT_MAKERS, *SSEU_TASKS.values(), *UGBENCH_TASKS, "sound_source"]


def test_a_registered_part_and_benchmark_are_built_without_editing_core_modules(
    registries, recipes_with_beeps, tmp_path
):
    register_part(BeepPart())
    register_benchmark(Benchmark("beepbench", "Beep-Bench", (BeepItem,), ("beep",), (), (), (), (), doc=""))
    assert benchmark_of_kind("beep").name == "beepbench"
    out = tmp_path / "data"
    report = build("beeps", out=out, recipe_dir=recipes_with_beeps, progress=False)
    lines = [json.loads(line) for line in (out / "beep.jsonl").read_text().splitlines()]
    assert [line["answer"] for line in lines] == ["220", "440", "660"]
    # the kind registered with its benchmark: its manifest reads back as the test's own records
    assert [(type(i), i.answer) for i in read_manifest(out / "beep.jsonl")] == [
        (BeepItem, "220"),
        (BeepItem, "440"),
        (BeepItem, "660"),
    ]
    assert all((out / line["audio"]).is_file() for line in lines)
    assert [i.uid for i in report.parts["beep"].items["beep"]] == ["beep-000", "beep-001", "beep-002"]
    assert report.failures == [{"task": "beep_pitch", "index": 3, "error": "the last beep is always missing"}]
    card = json.loads((out / "dataset.json").read_text())["counts"]
    assert card["beep_items"] == 3 and card["failures"] == 1 and card["failures_detail"] == report.failures
    # AIR-Bench's manifests are written even empty; the other benchmarks' are not written at all
    assert (out / "foundation.jsonl").read_text() == "" and (out / "chat.jsonl").read_text() == ""
    assert sorted(p.name for p in out.glob("*.jsonl")) == ["beep.jsonl", "chat.jsonl", "foundation.jsonl"]
    # the option given to build() wins over the preset; selecting another task builds no beep (and removes them)
    again = build("beeps", out=out, recipe_dir=recipes_with_beeps, progress=False, options={"beep_items": 1})
    assert len(again.parts["beep"].items["beep"]) == 1
    build("beeps", out=out, recipe_dir=recipes_with_beeps, progress=False, tasks=["Speech_Grounding"])
    assert not (out / "beep.jsonl").exists()


def test_options_and_registrations_are_refused_before_anything_is_built(registries, recipes_with_beeps, tmp_path):
    out = tmp_path / "never"
    with pytest.raises(ValueError, match="no builder part reads option.* beep_items"):
        build("beeps", out=out, recipe_dir=recipes_with_beeps, progress=False, options={"beep_items": 1})
    register_part(BeepPart())
    with pytest.raises(ValueError, match="beep_items must be a whole number >= 0, got -1"):
        build("beeps", out=out, recipe_dir=recipes_with_beeps, progress=False, options={"beep_items": -1})
    with pytest.raises(ValueError, match="tiered_clips_per_class must be a whole number >= 0"):
        build("beeps", out=out, recipe_dir=recipes_with_beeps, progress=False, tiered_clips_per_class=-2)
    with pytest.raises(ValueError, match="cannot build task.*buildable: Speech_Grounding.*beep_pitch"):
        build("beeps", out=out, recipe_dir=recipes_with_beeps, progress=False, tasks=["beep_loudness"])
    assert not out.exists()

    class Orphan(BeepPart):
        name = "orphan"
        tasks = ()
        requires = ("nowhere",)

    class Thief(BeepPart):
        name = "thief"
        tasks = ("Speech_Grounding",)

    with pytest.raises(ValueError, match=r"'orphan' requires \['nowhere'\]"):
        register_part(Orphan())
    with pytest.raises(ValueError, match=r"task\(s\) \['Speech_Grounding'\] already built by 'airbench'"):
        register_part(Thief())
    with pytest.raises(TypeError, match="is not a BuilderPart"):
        register_part(object())  # type: ignore[arg-type]
    assert "orphan" not in PARTS and "thief" not in PARTS
