"""``airbench-nb import sseu``: SSEU-Bench's items from miniature VCTK, DESED and MAESTRO-Real in their release layouts.

One module-scoped import serves the checks: counts, references, scenes and events equal to the sources' rows, every
rejection with its file, field and reason, each mix's SNR measured on the written files, resume, and the folder
scored through the kit (``baseline:oracle``: WER 0, mACC 1).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from airbench_nb.builders import load_recipes, sseu_recipe
from airbench_nb.importing import ImportRequest, recipe_for, run_import
from airbench_nb.importing.corpora.sseu import EVENT_CLASSES, LABEL_MAP, MARGIN_S, SCENE_CLASSES, SNR_GRID_DB
from airbench_nb.manifests import read_manifest
from airbench_nb.mix import remix
from airbench_nb.records import EventsItem, JointItem, SceneItem, TranscriptionItem
from tests.minis_sseu_import import VCTK_SECONDS, VCTK_TEXTS, SseuMinis, write_minis

KINDS = ("transcription", "scene", "events", "joint")
IMPORTED = ("p225_001", "p225_002", "p280_001")
"""The utterances with text, audio and a background long enough."""
RATE = 44100


def _request(minis: SseuMinis, out: Path, **options: str) -> ImportRequest:
    return ImportRequest(
        recipe=recipe_for("sseu"),
        out=out,
        named={"vctk": [minis.vctk], "desed": [minis.desed], "maestro": [minis.maestro]},
        options=dict(options),
    )


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    root = tmp_path_factory.mktemp("sseu-import")
    minis = write_minis(root / "src")
    out = root / "out"
    result = run_import(_request(minis, out))
    items = {kind: read_manifest(out / f"{kind}.jsonl") for kind in KINDS}
    return minis, out, result, items


def _load(path: Path) -> np.ndarray:
    x, sr = sf.read(path, dtype="float64")
    assert sr == RATE and x.ndim == 1
    return x


def test_defaults_follow_the_synthetic_build():
    recipe = sseu_recipe(load_recipes())
    assert SNR_GRID_DB == recipe.snr_grid_db and MARGIN_S == recipe.pad_s
    assert len(EVENT_CLASSES) == 27 and set(LABEL_MAP.values()) == set(EVENT_CLASSES)
    assert SCENE_CLASSES[-1] == "home" and len(SCENE_CLASSES) == 6


def test_counts_references_scenes_and_events_equal_the_rows(imported):
    minis, out, result, items = imported
    assert result.items == {"transcription": 24, "scene": 21, "events": 21, "joint": 42}
    assert result.rows == 8  # every VCTK utterance read: 3 imported, 5 rejected
    card = json.loads((out / "dataset.json").read_text(encoding="utf-8"))
    assert card["source"] == "import:sseu" and card["counts"]["rows"] == 8
    assert card["recipe"]["options"]["event_classes"] == list(EVENT_CLASSES)
    assert card["recipe"]["options"]["snr_grid_db"] == list(SNR_GRID_DB)
    questions = sseu_recipe(load_recipes()).questions
    by_clip = defaultdict(list)
    for kind_items in items.values():
        for item in kind_items:
            by_clip[item.clip_id].append(item)
    assert len(by_clip) == 3 * 8
    scenes_seen = set()
    for cid, clip_items in by_clip.items():
        utterance = cid.split("@")[0]
        assert utterance in IMPORTED
        assert all(i.reference == VCTK_TEXTS[utterance] for i in clip_items if hasattr(i, "reference"))
        assert all(i.dataset == "sseu-bench" and i.meta["utterance"] == utterance for i in clip_items)
        assert len({i.audio for i in clip_items}) == 1 and len({i.snr_db for i in clip_items}) == 1
        if cid.endswith("@clean"):
            (item,) = clip_items
            assert isinstance(item, TranscriptionItem) and item.mix is None and item.snr_db is None
            clean = _load(out / item.audio)
            assert clean.size == round((VCTK_SECONDS[utterance] + 2 * MARGIN_S) * RATE)
            continue
        assert sorted((i.kind, getattr(i, "prompting", "")) for i in clip_items) == [
            ("events", ""),
            ("joint", "joint"),
            ("joint", "sseu-cot"),
            ("scene", ""),
            ("transcription", ""),
        ]
        for item in clip_items:
            assert item.question == questions["sseu-cot" if getattr(item, "prompting", "") == "sseu-cot" else item.kind]
        scene = next(i for i in clip_items if isinstance(i, SceneItem))
        events = next(i for i in clip_items if isinstance(i, EventsItem))
        source = scene.meta["background_source"]
        corpus_root = minis.desed if source["corpus"] == "desed" else minis.maestro
        assert (corpus_root / source["file"]).is_file()
        # the scene: the MAESTRO folder (underscores as spaces) or home for DESED
        assert scene.label == minis.scenes[source["file"]].replace("_", " ") and scene.classes == list(SCENE_CLASSES)
        scenes_seen.add(scene.label)
        # the events: labels overlapping the segment (MAESTRO: confidence >= 0.5), mapped to the classes
        start, end = source["start_s"], source["end_s"]
        assert 0 <= start and end <= (2.5 if source["corpus"] == "desed" else 3.0)
        assert end - start == pytest.approx((VCTK_SECONDS[utterance] + 2 * MARGIN_S), abs=1 / RATE)
        expected = {
            LABEL_MAP[label]
            for label, onset, offset, confidence in minis.events[source["file"]]
            if confidence >= 0.5 and min(offset, end) > max(onset, start)
        }
        assert set(events.labels) == expected and len(events.labels) == len(expected)
        assert events.classes == list(EVENT_CLASSES)
        for joint in (i for i in clip_items if isinstance(i, JointItem)):
            assert (joint.scene_label, joint.event_labels) == (scene.label, events.labels)
        background = _load(out / scene.meta["background"])
        assert background.size == round((end - start) * RATE)
    # three utterances over three scenes: each scene once (balanced draws)
    assert scenes_seen == {"cafe restaurant", "city center", "home"}


def test_every_rejection_is_counted_with_file_field_and_reason(imported):
    _, out, result, _ = imported
    got = {(r.where, r.field) for r in result.rejected}
    assert got == {
        ("metadata/validation/validation.tsv:5", "event_label"),
        ("metadata/validation/validation.tsv:6", "audio"),
        ("development_annotation/soft_labels_grocery_store/grocery_store_01.txt", "audio"),
        ("txt/p226/p226_002.txt", "audio"),
        ("wav48_silence_trimmed/p226/p226_003_mic1.flac", "audio"),
        ("wav48_silence_trimmed/p226/p226_001_mic1.flac", "background"),
        ("wav48_silence_trimmed/p315/p315_001_mic1.flac", "transcript"),
        ("wav48_silence_trimmed/p315/p315_002_mic1.flac", "transcript"),
    }
    reasons = {r.where: r.reason for r in result.rejected}
    assert "'Toaster' is not among the event classes" in reasons["metadata/validation/validation.tsv:5"]
    assert "speaker p315 has no txt/p315/ folder" in reasons["wav48_silence_trimmed/p315/p315_001_mic1.flac"]
    assert "cannot be decoded" in reasons["wav48_silence_trimmed/p226/p226_003_mic1.flac"]
    assert "no background recording is as long" in reasons["wav48_silence_trimmed/p226/p226_001_mic1.flac"]
    lines = (out / "rejected.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 8
    card = json.loads((out / "dataset.json").read_text(encoding="utf-8"))
    assert card["counts"]["rejected_by_field"] == {"audio": 4, "transcript": 2, "event_label": 1, "background": 1}
    assert not (out / "audio/sseu/p226_001").exists()  # rejected before anything was written


def test_snr_measured_on_the_written_files(imported):
    """The mix decomposed by least squares onto the clean file and the background file: the energy ratio of the two
    fitted components is within 0.5 dB of the SNR asked for (nothing of the mixer's arithmetic reused)."""
    _, out, _, items = imported
    for item in items["scene"]:
        x = _load(out / item.audio)
        speech = _load(out / item.meta["clean"])
        background = _load(out / item.meta["background"])
        basis = np.stack([speech, background], axis=1)
        (ga, gb), *_ = np.linalg.lstsq(basis, x, rcond=None)
        residual = x - basis @ np.array([ga, gb])
        assert np.sqrt(np.mean(residual**2)) < 1e-3 * np.sqrt(np.mean(x**2)) + 1e-4
        snr = 10 * np.log10(np.sum((ga * speech) ** 2) / np.sum((gb * background) ** 2))
        assert abs(snr - item.snr_db) <= 0.5, (item.clip_id, snr)
        assert item.mix.sample_rate == RATE and item.mix.source_a == item.meta["clean"]
    tr = next(i for i in items["transcription"] if i.mix is not None)
    again = remix(tr.mix, root=out)
    assert np.max(np.abs(again.mix - _load(out / tr.audio))) < 2 / 32768


def test_resume_reuses_the_audio_without_mixing_again(imported, tmp_path, monkeypatch):
    import airbench_nb.importing.corpora.sseu as module

    minis, out, _, items = imported
    copy = tmp_path / "out"
    import shutil

    shutil.copytree(out, copy)
    monkeypatch.setattr(module, "mix", lambda *a, **k: pytest.fail("mixed again on resume"))
    again = run_import(_request(minis, copy))
    assert again.audio_written == 0 and again.audio_reused == 3 * (2 + 7)
    assert again.items == {"transcription": 24, "scene": 21, "events": 21, "joint": 42}
    for kind in KINDS:
        assert (copy / f"{kind}.jsonl").read_bytes() == (out / f"{kind}.jsonl").read_bytes()
    monkeypatch.undo()
    # another seed draws other segments: they are written anew, never taken from the earlier run
    other = run_import(_request(minis, copy, seed="5"))
    assert other.audio_written > 0


def test_cli_other_mic_other_grid_and_subset(tmp_path):
    """mic2 where it is there, mic1 for p280 (which has none); one SNR; a subset drawn by the seed; no background."""
    from airbench_nb.cli import app

    minis = write_minis(tmp_path / "src")
    args = ["import", "sseu", "--vctk", str(minis.vctk), "--maestro", str(minis.maestro), "--out", str(tmp_path / "o")]
    args += ["--option", "mic=mic2", "--option", "snr_grid_db=0", "--option", "utterances=0", "--json"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    payload = json.loads(done.output[done.output.index("{") :])
    assert payload["items"] == {"transcription": 6, "scene": 3, "events": 3, "joint": 6}
    clean = {i.meta["utterance"]: i.meta for i in read_manifest(tmp_path / "o/transcription.jsonl") if i.mix is None}
    assert {u: m["mic"] for u, m in clean.items()} == {"p225_001": "mic2", "p225_002": "mic2", "p280_001": "mic1"}
    scenes = {i.label for i in read_manifest(tmp_path / "o/scene.jsonl")}
    assert scenes <= {"cafe restaurant", "city center"}  # no DESED given: no home

    def subset(folder: str, seed: int) -> tuple[list[str], int]:
        result = run_import(
            ImportRequest(
                recipe=recipe_for("sseu"),
                out=tmp_path / folder,
                named={"vctk": [minis.vctk], "desed": [minis.desed]},
                options={"utterances": "2", "snr_grid_db": "0,10", "seed": str(seed)},
            )
        )
        scene = read_manifest(tmp_path / folder / "scene.jsonl")
        assert {i.label for i in scene} == {"home"} and {i.snr_db for i in scene} == {0.0, 10.0}
        assert result.rows == 3 + 2  # the three rejected before drawing (no text, no audio), and the two drawn
        return sorted({i.meta["utterance"] for i in scene}), result.rejected_by_field().get("background", 0)

    # 5 utterances have text and audio; the seed draws 2 of them (p226_001 is longer than every DESED clip)
    assert subset("s6", 6) == subset("s6-again", 6) == (["p225_001"], 1)
    assert subset("s5", 5) == (["p225_001", "p225_002"], 0)
    one_snr = run_import(
        ImportRequest(
            recipe=recipe_for("sseu"),
            out=tmp_path / "one",
            named={"vctk": [minis.vctk], "maestro": [minis.maestro]},
            options={"utterances": "0", "snrs_per_utterance": "1"},
        )
    )
    assert one_snr.items == {"transcription": 6, "scene": 3, "events": 3, "joint": 6}  # clean and one SNR each
    assert {i.snr_db for i in read_manifest(tmp_path / "one/scene.jsonl")} <= set(SNR_GRID_DB)
    with pytest.raises(ValueError, match="needs a background source"):
        run_import(ImportRequest(recipe=recipe_for("sseu"), out=tmp_path / "n", named={"vctk": [minis.vctk]}))


def test_the_imported_folder_scores_through_the_kit(imported, tmp_path):
    """``baseline:oracle`` answers every item through the runner; the metrics give WER 0, mACC 1 and mAP 1."""
    from airbench_nb.manifests import read_records
    from airbench_nb.models import load_model
    from airbench_nb.records import Response
    from airbench_nb.runner import run_model
    from airbench_nb.scoring import score_run

    _, out, _, items = imported
    every = [i for kind in KINDS for i in items[kind]]
    summary = run_model(load_model("baseline:oracle"), every, out, tmp_path / "r.jsonl", progress=False)
    assert summary.failed_every_item is False
    responses = read_records(tmp_path / "r.jsonl", Response)
    assert len(responses) == len(every) == 108
    sections = score_run(every, responses, protocol="strict", reps=0).strict.metric_sections
    for name, best in (("transcription", 0.0), ("scene", 1.0), ("events", 1.0)):
        section = sections[name]
        assert set(section.tasks) == {"independent", "joint", "sseu-cot"}, name
        for mode, entry in section.tasks.items():
            assert entry.value == pytest.approx(best), (name, mode)
            assert entry.failures == 0


def test_readers_pick_the_best_copy_and_refuse_bad_rows(tmp_path):
    """DESED: of two copies of a clip, the one of the higher rate; MAESTRO: a row that is not four fields, or a
    confidence that is not a number, leaves its recording out; a label outside the classes below the threshold is
    not an event, so it rejects nothing."""
    from airbench_nb.importing.corpora.sseu import settings_of
    from airbench_nb.importing.corpora.sseu_sources import read_desed, read_maestro
    from tests.minis_sseu_import import noise

    minis = write_minis(tmp_path)
    name = "Y0dog_speech_30.000_40.000.wav"
    full = minis.desed / "audio" / "validation" / "validation"
    full.mkdir()
    sf.write(full / name, noise(2.5, 44100, seed=7), 44100)
    settings = settings_of({option.name: option.default for option in recipe_for("sseu").options})
    rejected = []

    def reject(where, field_name, reason, *, uid=None):
        rejected.append((where, field_name))

    found = {bg.rel: bg for bg in read_desed(minis.desed, "home", settings.label_of, reject)}
    assert found[f"audio/validation/validation/{name}"].rate == 44100
    assert [e.event for e in found[f"audio/validation/validation/{name}"].events] == ["dog", "speech"]
    assert found["audio/validation/validation_16k/Y1quiet_10.000_20.000.wav"].events == ()
    city = minis.maestro / "development_annotation/soft_labels_city_center/city_center_01.txt"
    city.write_text(city.read_text() + "2.0\t3.0\ttoaster\t0.1\n", encoding="utf-8")  # below 0.5: not an event
    cafe = minis.maestro / "development_annotation/soft_labels_cafe_restaurant/cafe_restaurant_01.txt"
    cafe.write_text(cafe.read_text() + "2.0\t3.0\tcar\n", encoding="utf-8")
    rejected.clear()
    kept = read_maestro(minis.maestro, settings.scene_of, settings.label_of, 0.5, reject)
    assert [bg.scene for bg in kept] == ["city center"]
    assert [(e.event, e.confidence) for e in kept[0].events] == [("birds singing", 1.0), ("car", 0.55)]
    assert ("development_annotation/soft_labels_cafe_restaurant/cafe_restaurant_01.txt:5", "row") in rejected
    with pytest.raises(ValueError, match="option mic"):
        settings_of({**{o.name: o.default for o in recipe_for("sseu").options}, "mic": "mic3"})
