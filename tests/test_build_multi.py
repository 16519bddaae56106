"""The kit's own tasks about two clips and several turns (issue 14): ground truth checked by measuring the audio."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from pathlib import Path

import librosa
import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from typer.testing import CliRunner

from airbench_nb.builders import CHAT_MAKERS, FOUNDATION_MAKERS, RecipeError, build, load_recipes
from airbench_nb.builders.snr import build_graded
from airbench_nb.cli import app
from airbench_nb.manifests import check_audio, read_manifest
from airbench_nb.records import KIT_CHAT_TASKS, KIT_FOUNDATION_TASKS, AudioStatus
from tests.measure import energy_onsets, frame_rms

SR = 16000
KIT_TASKS = [*KIT_FOUNDATION_TASKS, *KIT_CHAT_TASKS]
PER_TASK = 6
"""Foundation items per task in the fixture's preset (3 of each gold clip, 3 same and 3 different speakers)."""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The kit's tasks built with a preset of 6 Foundation and 4 Chat items per task, one rotation per task."""
    root = tmp_path_factory.mktemp("multi")
    recipes = root / "recipes"
    shutil.copytree(load_recipes().folder, recipes)
    presets = json.loads((recipes / "presets.json").read_text())
    presets["multi"] = {"foundation_per_task": PER_TASK, "chat_per_task": 4, "circular_items_per_task": 1}
    (recipes / "presets.json").write_text(json.dumps(presets))
    out = root / "data"
    report = build("multi", seed=0, out=out, tasks=KIT_TASKS, recipe_dir=recipes, progress=False)
    assert report.failures == []
    return out, report


def _load(out: Path, rel: str) -> np.ndarray:
    x, sr = sf.read(out / rel, dtype="float32")
    assert sr == SR and x.ndim == 1
    return x


def _clips(out: Path, item) -> list[np.ndarray]:
    assert len(item.audios) == 2 and item.audio == item.audios[0]
    return [_load(out, rel) for rel in item.audios]


def _items(report, task):
    items = [i for i in report.foundation if i.task == task]
    assert len(items) == PER_TASK, task
    return items


def _gold_clip(item) -> int:
    """Index of the clip the gold choice names (choices name the clips in order)."""
    return ["the first clip", "the second clip"].index(item.choices[item.answer])


def _median_f0(x: np.ndarray, fmin: float, fmax: float) -> float:
    f0, _, _ = librosa.pyin(x, fmin=fmin, fmax=fmax, sr=SR, frame_length=2048)
    return float(np.nanmedian(f0))


def test_items_clips_and_manifests(built):
    out, report = built
    assert Counter(i.task for i in report.foundation) == dict.fromkeys(KIT_FOUNDATION_TASKS, PER_TASK)
    assert Counter(i.task for i in report.chat) == {"kit_followup_QA": 4}
    assert {i.category for i in report.foundation} == {"multi-clip"}
    assert {i.category for i in report.chat} == {"multi-turn"}
    foundation = read_manifest(out / "foundation.jsonl")
    assert foundation == report.foundation_written and read_manifest(out / "chat.jsonl") == report.chat
    for item in report.foundation:
        stem = f"audio/foundation/{item.task}/{item.uid}"
        assert item.audios == [f"{stem}-1.wav", f"{stem}-2.wav"] and item.multi_clip
        assert item.audio_sha256 == item.audios_sha256[0] and len(set(item.audios_sha256)) == 2
        assert len(item.choices) == 2 and item.meta
    checked = check_audio([*report.foundation, *report.chat], out)
    for before, after in zip([*report.foundation, *report.chat], checked, strict=True):
        assert after.audio_status == AudioStatus.ok, after.notes
        assert after.clips_sha256 == before.clips_sha256 and None not in after.clips_sha256
    card = json.loads((out / "dataset.json").read_text())
    assert card["counts"]["foundation_categories"] == {"multi-clip": 4 * PER_TASK}
    assert card["counts"]["chat_categories"] == {"multi-turn": 4}


def test_gold_letters_and_values_balanced(built):
    _, report = built
    for task in KIT_FOUNDATION_TASKS:
        letters = Counter(i.answer_letter for i in _items(report, task))
        assert letters == {"A": PER_TASK // 2, "B": PER_TASK // 2}, (task, letters)
    same = Counter(i.meta["same_speaker"] for i in _items(report, "kit_same_speaker"))
    assert same == {True: PER_TASK // 2, False: PER_TASK // 2}
    for task in ("kit_pitch_compare", "kit_more_events", "kit_louder_clip"):  # clips always named in order
        assert all(i.choices == ["the first clip", "the second clip"] for i in _items(report, task))
    contents = Counter(i.meta["content"] for i in _items(report, "kit_louder_clip"))
    assert contents == {"speech": 2, "music": 2, "sound": 2}
    turns = Counter(len(i.turns) for i in report.chat)
    assert turns == {2: 2, 3: 2}


def test_pitch_compare_gold_clip_is_higher(built):
    out, report = built
    for item in _items(report, "kit_pitch_compare"):
        midis = [float(librosa.hz_to_midi(_median_f0(x, 60, 1200))) for x in _clips(out, item)]
        assert [round(m) for m in midis] == item.meta["midis"], (item.uid, midis)
        gold = _gold_clip(item)
        assert midis[gold] >= midis[1 - gold] + 1.5, (item.uid, midis)


def _voice_f0(x: np.ndarray) -> float:
    """Median yin F0 over frames within 20 dB of the loudest (pyin finds no voicing in the lowest voice, m1 at
    pitch 20, about 70 Hz)."""
    f0 = librosa.yin(x, fmin=40, fmax=500, sr=SR, frame_length=2048, hop_length=512)
    rms = librosa.feature.rms(y=x, frame_length=2048, hop_length=512)[0]
    return float(np.median(f0[rms > 0.1 * rms.max()]))


def test_same_speaker_by_median_f0(built):
    out, report = built
    for item in _items(report, "kit_same_speaker"):
        f0 = [_voice_f0(x) for x in _clips(out, item)]
        ratio = max(f0) / min(f0)
        same = item.choices[item.answer] == "the same speaker"
        assert same == item.meta["same_speaker"]
        assert item.meta["transcripts"][0] != item.meta["transcripts"][1]
        if same:
            assert ratio < 1.3 and item.meta["voices"][0] == item.meta["voices"][1], (item.uid, f0)
        else:
            assert ratio > 1.5, (item.uid, f0)


def test_more_events_counted_by_onsets(built):
    out, report = built
    for item in _items(report, "kit_more_events"):
        clips = _clips(out, item)
        counts = [len(energy_onsets(x)) for x in clips]
        assert counts == item.meta["counts"], (item.uid, counts)
        gold = _gold_clip(item)
        assert counts[gold] >= counts[1 - gold] + 2
        assert clips[0].size == clips[1].size  # the length of a clip never tells its count


def test_louder_clip_by_bs1770(built):
    out, report = built
    meter = pyloudnorm.Meter(SR)
    for item in _items(report, "kit_louder_clip"):
        lufs = [meter.integrated_loudness(x) for x in _clips(out, item)]
        gold = _gold_clip(item)
        assert lufs[gold] - lufs[1 - gold] >= 6.0 - 0.05, (item.uid, lufs)
        assert lufs == pytest.approx(item.meta["loudness_lufs"], abs=0.05)


def _onset(x: np.ndarray) -> float:
    """First 10 ms frame within 40 dB of the loudest one."""
    rms, centres = frame_rms(x)
    return float(centres[np.argmax(rms > rms.max() * 10 ** (-40 / 20))])


def test_followup_turns_follow_the_mix(built):
    out, report = built
    meter = pyloudnorm.Meter(SR)
    for item in report.chat:
        assert item.multi_turn and 2 <= len(item.turns) <= 3
        assert (item.turns[0].question, item.turns[0].reference) == (item.question, item.reference)
        assert item.mix is not None and item.meta["transcript"] in item.reference
        a = _load(out, item.meta["stems"]["a"])
        b = _load(out, item.meta["stems"]["b"])
        mixed = _load(out, item.audio)
        # the stems are the mix's components (16-bit rounding); a stem sample past full scale is written clipped
        # (chat.py's mixed path: a loud knock can scale past 1 in its stem while the mix is scaled down)
        kept = (np.abs(a) < 0.999) & (np.abs(b) < 0.999)
        assert kept.mean() > 0.99 and np.max(np.abs(mixed - (a + b))[kept]) < 3 / 32768
        la, lb = meter.integrated_loudness(a), meter.integrated_loudness(b)
        louder = "equal" if abs(la - lb) <= 1.0 else ("A" if la > lb else "B")
        assert louder == item.mix.louder, (item.uid, la, lb)
        onset_a, onset_b = _onset(a), _onset(b)
        ahead = "meanwhile" if abs(onset_a - onset_b) <= 0.1 else ("before" if onset_a < onset_b else "after")
        assert ahead == item.mix.ahead, (item.uid, onset_a, onset_b)
        other = item.meta["mixed_with"]
        kinds = item.meta["turn_kinds"]
        assert kinds[0] == "transcript" and len(set(kinds)) == len(kinds) == len(item.turns)
        expected = {
            "background": item.meta["other"],
            "louder": {
                "A": f"The speech is louder than the {other}.",
                "B": f"The {other} is louder than the speech.",
                "equal": "equally loud",
            }[louder],
            "ahead": {
                "before": f"The speech starts first; the {other} starts after it.",
                "after": f"The {other} starts first; the speech starts after it.",
                "meanwhile": "start at the same time",
            }[ahead],
        }
        for kind, turn in zip(kinds[1:], item.turns[1:], strict=True):
            assert expected[kind] in turn.reference, (item.uid, kind, turn)
            assert expected[kind] in item.meta_info  # the judge reads what the reference says
        assert item.meta["other"] in item.meta_info and item.meta["transcript"] in item.meta_info


def test_rotations_and_no_graded_copies(built):
    out, report = built
    assert len(report.rotated) == 2 * len(KIT_FOUNDATION_TASKS)  # one item per task, two rotations each
    for copy in report.rotated:
        original = next(i for i in report.foundation if i.uid == copy.meta["rotation_of"])
        assert copy.audios == original.audios and copy.audios_sha256 == original.audios_sha256
        assert copy.choices[copy.answer] == original.choices[original.answer]
    # snr.json grades official speech tasks only: the kit's items are never graded, even when offered
    graded, failures = build_graded(
        report.foundation, out, seed=0, recipes=load_recipes(), snr_grid=[0.0], items_per_task=None
    )
    assert graded == [] and failures == []


def test_tiny_same_seed_same_bytes_and_fast(tmp_path):
    start = time.perf_counter()
    a = build("tiny", seed=3, out=tmp_path / "a", tasks=KIT_TASKS, progress=False)
    seconds = time.perf_counter() - start
    build("tiny", seed=3, out=tmp_path / "b", tasks=KIT_TASKS, progress=False)
    build("tiny", seed=4, out=tmp_path / "c", tasks=KIT_TASKS, progress=False)
    for name in ("foundation.jsonl", "chat.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "c" / name).read_bytes()
    for item in a.foundation:
        for rel in item.audios:
            assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()
    assert Counter(i.task for i in a.foundation) == dict.fromkeys(KIT_FOUNDATION_TASKS, 2)
    assert Counter(i.task for i in a.chat) == {"kit_followup_QA": 2}
    assert seconds < 15, f"tiny build of the kit's tasks took {seconds:.1f} s"


def test_registered_in_presets_and_cli(tmp_path):
    assert set(KIT_FOUNDATION_TASKS) <= set(FOUNDATION_MAKERS) and set(KIT_CHAT_TASKS) <= set(CHAT_MAKERS)
    presets = load_recipes().presets
    assert presets["tiny"]["foundation_per_task"] == 2 and presets["mini"]["foundation_per_task"] == 20
    assert presets["mini"]["chat_per_task"] == 12
    result = CliRunner().invoke(
        app,
        ["build", "--preset", "tiny", "--out", str(tmp_path), "--task", "kit_louder_clip", "--task", "kit_followup_QA"],
    )
    assert result.exit_code == 0, result.output
    assert {i.task for i in read_manifest(tmp_path / "foundation.jsonl")} == {"kit_louder_clip"}
    assert {i.task for i in read_manifest(tmp_path / "chat.jsonl")} == {"kit_followup_QA"}


def test_multi_recipe_checked(tmp_path):
    recipes = load_recipes()
    for task in KIT_FOUNDATION_TASKS:
        assert len(set(recipes.multi["phrasings"][task])) >= 5, task
    for kind in ("transcript", "background", "louder", "ahead"):
        assert len(set(recipes.multi["kit_followup_QA"][kind]["questions"])) >= 5, kind
    shutil.copytree(recipes.folder, tmp_path / "r")
    multi = json.loads((tmp_path / "r/multi.json").read_text())
    multi["phrasings"]["kit_louder_clip"] = ["Which clip is louder?"]
    (tmp_path / "r/multi.json").write_text(json.dumps(multi))
    with pytest.raises(RecipeError, match=r"multi.json: task 'kit_louder_clip' needs at least 5 phrasings"):
        load_recipes(tmp_path / "r")
    (tmp_path / "r/multi.json").unlink()
    with pytest.raises(RecipeError, match="multi.json: recipe file missing"):
        load_recipes(tmp_path / "r")
