"""SSEU-style items: speech over synthesized scenes at SSEU-Bench's 7 SNRs, ground truth measured on the written audio.

One module-scoped build (3 utterances, as in the mini preset, at 7 SNRs, with clean copies) serves every measurement.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.builders import SSEU_TASKS, RecipeError, build, build_sseu, clip_id, load_recipes, sseu_recipe
from airbench_nb.builders.cache import build_key, key_digest
from airbench_nb.manifests import read_manifest
from airbench_nb.mix import remix
from airbench_nb.records import EventsItem, JointItem, SceneItem, TranscriptionItem
from airbench_nb.synth.scenes import EVENT_CLASSES, SCENES, make_scene
from tests.measure import frame_rms

SR = 16000
SSEU_GRID = [-10, -6.67, -3.33, 0, 3.33, 6.67, 10]
KINDS = ("transcription", "scene", "events", "joint")


@pytest.fixture(scope="module")
def sseu(tmp_path_factory):
    """The sseu preset at the mini preset's size (3 utterances), read back from the manifests written."""
    out = tmp_path_factory.mktemp("sseu")
    report = build("sseu", seed=0, out=out, sseu_utterances=3, progress=False)
    items = {kind: read_manifest(out / f"{kind}.jsonl") for kind in KINDS}
    return out, report, items


def _load(out: Path, rel: str) -> np.ndarray:
    x, sr = sf.read(out / rel, dtype="float64")
    assert sr == SR and x.ndim == 1
    return x


def _clips(items) -> dict[str, list]:
    by_clip = defaultdict(list)
    for kind_items in items.values():
        for item in kind_items:
            by_clip[item.clip_id].append(item)
    return by_clip


def test_class_lists():
    assert len(SCENES) >= 5 and len(EVENT_CLASSES) >= 8
    for scene in SCENES.values():
        assert len(scene.events) >= 3 and set(scene.events) <= set(EVENT_CLASSES), scene.name
    assert set().union(*(s.events for s in SCENES.values())) == set(EVENT_CLASSES)  # every class occurs somewhere


def test_every_clip_has_its_items_sharing_clip_id(sseu):
    out, report, items = sseu
    assert report.failures == [] and report.foundation == [] and report.chat == []
    assert items == report.sseu.by_kind  # the manifests hold exactly what the report says, in its order
    assert not any(report.ugbench.by_kind.values())  # the sseu preset builds SSEU items only
    assert {k: len(v) for k, v in items.items()} == {"transcription": 24, "scene": 21, "events": 21, "joint": 42}
    by_clip = _clips(items)
    assert len(by_clip) == 3 * 8
    for cid, clip_items in by_clip.items():
        utterance = cid.split("@")[0]
        kinds = sorted((i.kind, getattr(i, "prompting", "")) for i in clip_items)
        assert len({i.audio for i in clip_items}) == 1 and len({i.snr_db for i in clip_items}) == 1
        assert all(i.meta["utterance"] == utterance and i.dataset == "synthetic" for i in clip_items)
        assert all({"voice", "sentence_id", "gender", "rate_wpm"} <= set(i.meta) for i in clip_items)
        assert not any({"clean_uid", "rotation_of"} & set(i.meta) for i in clip_items)  # scored as they are
        if cid.endswith("@clean"):  # the clean copy: a transcription item only (no background: no scene, no events)
            (item,) = clip_items
            assert isinstance(item, TranscriptionItem) and item.snr_db is None and item.mix is None
            assert item.audio == item.meta["clean"] and item.meta["mixed"] is False
            continue
        assert kinds == [
            ("events", ""),
            ("joint", "joint"),
            ("joint", "sseu-cot"),
            ("scene", ""),
            ("transcription", ""),
        ]
        tr, scene, events = (
            next(i for i in clip_items if isinstance(i, t)) for t in (TranscriptionItem, SceneItem, EventsItem)
        )
        joints = [i for i in clip_items if isinstance(i, JointItem)]
        assert cid == clip_id(utterance, tr.snr_db) and tr.mix is not None
        assert {i.task for i in clip_items} == set(SSEU_TASKS.values())
        gold_events = list(dict.fromkeys(e["event"] for e in tr.meta["events"]))
        assert scene.label == tr.meta["scene"] and events.labels == gold_events and gold_events
        assert scene.classes == list(SCENES) and events.classes == list(EVENT_CLASSES)
        for joint in joints:
            assert joint.reference == tr.reference == tr.meta["text"]
            assert (joint.scene_label, joint.event_labels) == (scene.label, events.labels)
            assert joint.mix == tr.mix and joint.question
        assert len({i.question for i in clip_items}) == 5  # each kind and prompting asks in its own words
    snrs = sorted({i.snr_db for i in items["scene"]})
    assert snrs == sorted(SSEU_GRID)
    # voices of both genders and sentences of different lengths
    clean = [i for i in items["transcription"] if i.snr_db is None]
    assert {i.meta["gender"] for i in clean} == {"male", "female"}
    assert len({len(i.reference.split()) for i in clean}) == 3
    durations = [sf.info(out / i.audio).duration for i in clean]
    assert all(2.0 <= d <= 4.5 for d in durations), durations


def test_snr_measured_on_the_written_files(sseu):
    """Speech against the WHOLE background (bed and events), within 0.5 dB at every SNR of the grid.

    The mix file is decomposed by least squares onto the clean-speech file and the background file, and the SNR is
    the energy ratio of the two fitted components: nothing of the builder's arithmetic is reused.
    """
    out, _, items = sseu
    measured = {}
    for item in items["scene"]:
        x = _load(out, item.audio)
        speech = _load(out, item.meta["clean"])
        background = _load(out, item.meta["background"])
        basis = np.stack([speech, background], axis=1)
        (ga, gb), *_ = np.linalg.lstsq(basis, x, rcond=None)
        residual = x - basis @ np.array([ga, gb])
        assert np.sqrt(np.mean(residual**2)) < 1e-3 * np.sqrt(np.mean(x**2)) + 1e-4  # the mix is these two sources
        snr = 10 * np.log10(np.sum((ga * speech) ** 2) / np.sum((gb * background) ** 2))
        measured[item.clip_id] = snr
        assert abs(snr - item.snr_db) <= 0.5, (item.clip_id, snr)
        assert abs(item.mix.snr_db_measured - item.snr_db) <= 0.05
    print({k: round(v, 3) for k, v in measured.items()})


def _active_regions(x: np.ndarray, floor_db: float = -50.0) -> list[tuple[float, float]]:
    """Regions where the 10 ms frame RMS is within ``floor_db`` of the loudest frame (an energy detector)."""
    rms, centres = frame_rms(x)
    active = rms > rms.max() * 10 ** (floor_db / 20)
    regions, start = [], None
    for t, on in zip(centres, active, strict=True):
        if on and start is None:
            start = t
        if not on and start is not None:
            regions.append((start, t))
            start = None
    if start is not None:
        regions.append((start, centres[-1]))
    return regions


def test_event_onsets_inside_their_labelled_intervals(sseu):
    """On the isolated event track, an energy detector's every active region lies inside one labelled interval;
    each label's first region starts within 30 ms of its onset (events made of strokes, such as footsteps, have
    several regions); the track is silent outside the labels. The bed (background file minus event track) is
    steady: no event is left in it."""
    out, _, items = sseu
    seen = set()
    for item in items["events"]:
        stem = item.meta["events_stem"]
        if stem in seen:
            continue
        seen.add(stem)
        events = item.meta["events"]
        track = _load(out, stem)
        regions = _active_regions(track)
        owners = []
        for start, end in regions:
            owner = [k for k, e in enumerate(events) if e["onset_s"] - 0.01 <= start and end <= e["offset_s"] + 0.01]
            assert len(owner) == 1, (stem, start, end, events)
            owners.append(owner[0])
        for k, label in enumerate(events):
            first = [start for (start, _), owner in zip(regions, owners, strict=True) if owner == k]
            assert first and abs(first[0] - label["onset_s"]) <= 0.03, (stem, first, label)
        inside = np.zeros(track.size, dtype=bool)
        for label in events:
            inside[int(round(label["onset_s"] * SR)) : int(round(label["offset_s"] * SR))] = True
        assert np.all(track[~inside] == 0.0)
        bed = _load(out, item.meta["background"]) - track
        rms, _ = frame_rms(bed)
        assert rms.max() < 4 * np.median(rms)  # a steady bed: no event left in it (events rise 3-9 dB RMS)


def test_clean_copy_is_the_speech_of_every_mix_and_remix_reproduces_it(sseu):
    out, _, items = sseu
    for item in items["transcription"]:
        if item.mix is None:
            continue
        assert item.mix.source_a == item.meta["clean"] and item.mix.source_b == item.meta["background"]
        again = remix(item.mix, root=out)
        written = _load(out, item.audio)
        assert np.max(np.abs(again.mix - written)) < 2 / 32768
        assert hashlib.sha256((out / item.audio).read_bytes()).hexdigest() == item.audio_sha256


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    recipes = load_recipes()

    def digests(folder: Path, seed: int) -> dict[str, str]:
        made = build_sseu(folder, seed=seed, recipes=recipes, utterances=2, snr_grid_db=[0, 10])
        assert made.failures == [] and len(made.items) == 2 * (1 + 2 * 5)
        return {
            str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*.wav"))
        }

    a, b, c = digests(tmp_path / "a", 3), digests(tmp_path / "b", 3), digests(tmp_path / "c", 4)
    assert a == b
    assert a.keys() == c.keys() and a != c
    clean = [k for k in a if k.endswith("clean.wav")]
    assert all(a[k] == c[k] for k in clean)  # the seed changes the scenes, not the sentences or voices
    x = make_scene("office", 2.5, np.random.default_rng(9))
    y = make_scene("office", 2.5, np.random.default_rng(9))
    assert np.array_equal(x.background, y.background) and x.events == y.events


def test_task_filter_and_override(tmp_path):
    report = build("sseu", out=tmp_path, tasks=["sseu_transcription"], sseu_utterances=1, progress=False)
    assert [i.clip_id for i in report.sseu.transcription] == ["sseu-000@clean"] + [
        f"sseu-000@snr{s:+g}" for s in SSEU_GRID
    ]
    assert not (tmp_path / "scene.jsonl").exists() and report.counts()["sseu"]["items"]["transcription"] == 8
    assert report.sseu.scene == [] and report.foundation == [] and report.graded == []


def test_sseu_preset_scales_it():
    """``--preset sseu`` builds SSEU items only: every sentence of the recipe, so every scene several times."""
    recipes = load_recipes()
    big = recipes.presets["sseu"]
    assert big["sseu_utterances"] >= 5 * len(SCENES) and big["foundation_per_task"] == big["chat_per_task"] == 0
    assert big["sseu_utterances"] == len(sseu_recipe(recipes).sentences)
    assert sseu_recipe(recipes).snr_grid_db == tuple(SSEU_GRID) and "sseu_snr_grid_db" not in big


def test_tiny_and_mini_hold_small_sseu_sets(tmp_path):
    """The tiny preset's SSEU set is minimal (one utterance, clean and at 0 dB), the mini one small (3 utterances)."""
    presets = load_recipes().presets
    assert presets["tiny"]["sseu_utterances"] == 1 and presets["tiny"]["sseu_snr_grid_db"] == [0]
    assert presets["mini"]["sseu_utterances"] == 3 and "sseu_snr_grid_db" not in presets["mini"]
    report = build("tiny", out=tmp_path, tasks=["sseu_transcription"], progress=False)
    assert [i.clip_id for i in report.sseu.transcription] == ["sseu-000@clean", "sseu-000@snr+0"]


def test_cache_key_follows_the_sseu_recipe(tmp_path):
    base = build_key("tiny", 0)
    shutil.copytree(load_recipes().folder, tmp_path / "r")
    cfg = json.loads((tmp_path / "r/sseu.json").read_text())
    cfg["event_level_db"] = [4.0, 10.0]
    (tmp_path / "r/sseu.json").write_text(json.dumps(cfg))
    assert key_digest(build_key("tiny", 0, recipe_dir=tmp_path / "r")) != key_digest(base)
    assert key_digest(build_key("tiny", 0, options={"sseu_utterances": 2})) != key_digest(base)


def test_bad_recipe_and_failing_mix_are_counted(tmp_path, monkeypatch):
    import airbench_nb.builders.sseu as sseu_module

    shutil.copytree(load_recipes().folder, tmp_path / "r")
    cfg = json.loads((tmp_path / "r/sseu.json").read_text())
    (tmp_path / "r/sseu.json").write_text(json.dumps({**cfg, "voices": ["en-us+x9"]}))
    with pytest.raises(RecipeError, match=r"sseu.json: unknown voice variant 'x9'"):
        sseu_recipe(load_recipes(tmp_path / "r"))
    with pytest.raises(ValueError, match="sseu_utterances must be a whole number"):
        build("tiny", out=tmp_path / "o", sseu_utterances=-1, progress=False)
    original = sseu_module.mix

    def flaky(a, b, *, snr_db, offset_s):
        if snr_db == 10:
            raise RuntimeError("mixer exploded")
        return original(a, b, snr_db=snr_db, offset_s=offset_s)

    monkeypatch.setattr(sseu_module, "mix", flaky)
    made = build_sseu(tmp_path / "o", seed=0, recipes=load_recipes(), utterances=1, snr_grid_db=[0, 10])
    assert made.failures == [
        {"task": "sseu", "index": 0, "uid": "sseu-000@snr+10", "snr_db": 10.0, "error": "RuntimeError: mixer exploded"}
    ]
    assert [i.clip_id for i in made.transcription] == ["sseu-000@clean", "sseu-000@snr+0"]
    assert len(made.joint) == 2
