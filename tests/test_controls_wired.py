"""The audio-reliance controls wired into the pipeline: built through the kit's API, run, judged and analysed.

One module fixture (a few seconds): the tiny preset's gender and speaker-number items with every control of their
first 2 items (``controls_items_per_task=2``), answered by the oracle, DSP and text-prior baselines and judged by
the rule judge in a run folder.
"""

from __future__ import annotations

from collections import Counter

import pytest

from airbench_nb.benchmarks import benchmark_of_kind
from airbench_nb.builders import PARTS, build
from airbench_nb.builders.controls import CONTROL_KEY, CONTROL_OF_KEY, CONTROLS
from airbench_nb.manifests import read_manifest

TASKS = ["Speaker_Gender_Recognition", "Speaker_Number_Verification"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The tiny preset's two speech tasks with every control of their first 2 items."""
    out = tmp_path_factory.mktemp("wired") / "data"
    report = build("tiny", seed=0, out=out, tasks=TASKS, progress=False, options={"controls_items_per_task": 2})
    return out, report


def test_the_controls_part_is_airbench_s_and_off_by_default(tmp_path):
    assert "controls" in PARTS and "controls" in benchmark_of_kind("foundation").parts
    report = build("tiny", seed=0, out=tmp_path, tasks=TASKS[:1], progress=False)
    assert report.parts["controls"].items == {"foundation": [], "chat": []}
    assert not [i for i in report.foundation_written if CONTROL_OF_KEY in i.meta]


def test_a_build_with_controls_writes_them_last(built):
    out, report = built
    controls = report.parts["controls"].items["foundation"]
    originals = [i.uid for i in report.foundation]
    # no_audio and description: Foundation items carry no description, so 4 controls of each of the 4 items
    assert Counter(i.meta[CONTROL_KEY] for i in controls) == {c: 4 for c in CONTROLS if c != "description"}
    assert {i.meta[CONTROL_OF_KEY] for i in controls} == set(originals)
    uids = [i.uid for i in read_manifest(out / "foundation.jsonl")]
    assert uids[-len(controls) :] == [i.uid for i in controls]  # after the clean, graded and rotated items
    assert report.parts["controls"].card["controls_not_eligible"] == 4
