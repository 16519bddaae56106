"""SNR-graded items: the SNR, the background and the fall of the DSP baseline are measured on the audio."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import librosa
import numpy as np
import pytest
import soundfile as sf
from scipy.stats import fisher_exact
from typer.testing import CliRunner

from airbench_nb.builders import build, load_recipes
from airbench_nb.builders.snr import parse_snr_grid
from airbench_nb.judge.extract import extract_choice
from airbench_nb.manifests import read_manifest, read_records
from airbench_nb.mix import MixError, remix
from airbench_nb.models import load_model
from airbench_nb.records import MixMeta, Response
from airbench_nb.runner import run_model

SR = 16000
LSB = 1 / 32768  # one step of the 16-bit wav files
SNR_TASKS = {
    "Speaker_Gender_Recognition",
    "Spoken_Language_Identification",
    "Speaker_Number_Verification",
    "Speaker_Intent_Classification",
    "Speech_Entity_Reconition",
    "Speech_Grounding",
}
GRID = [-10.0, 0.0, 10.0]
PER_TASK = 12


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny preset as it is: every task, one item per speech task graded at -5 and +5 dB."""
    out = tmp_path_factory.mktemp("tiny-snr")
    report = build("tiny", seed=0, out=out, progress=False)
    return out, report


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Gender and speaker-number items (12 each) graded at -10, 0 and +10 dB, from a preset of the test's own."""
    root = tmp_path_factory.mktemp("snr-grid")
    recipes = root / "recipes"
    shutil.copytree(load_recipes().folder, recipes)
    presets = json.loads((recipes / "presets.json").read_text())
    presets["snrtest"] = {"foundation_per_task": PER_TASK, "chat_per_task": 0}  # no snr keys: the argument gives them
    (recipes / "presets.json").write_text(json.dumps(presets))
    report = build(
        "snrtest",
        seed=0,
        out=root / "data",
        tasks=["Speaker_Gender_Recognition", "Speaker_Number_Verification"],
        recipe_dir=recipes,
        progress=False,
        snr_grid=GRID,
    )
    return root / "data", report


def _load(out: Path, rel: str) -> np.ndarray:
    x, sr = sf.read(out / rel, dtype="float64")
    assert sr == SR and x.ndim == 1
    return x


def _manifest(out: Path):
    items = read_manifest(out / "foundation.jsonl")
    return items, {i.uid: i for i in items}


def _measured_snr(clean: np.ndarray, mixture: np.ndarray, background: np.ndarray) -> tuple[float, float]:
    """SNR of the speech over the background in the mixture, the mixer's way (energy ratio), and the fit's residual.

    The mixture is fitted as ``g_a * clean + g_b * background`` by least squares: the gains absorb the loudness
    normalisation, the SNR gains and any clipping-protection scale. Fitting the clean clip alone and calling the
    rest background is biased by the correlation of speech with the background (about 1 dB at -10 dB over music on
    2-3 s clips), too much for a 0.5 dB check; with both regressors the fit is exact up to 16-bit rounding, which
    the residual shows.
    """
    design = np.stack([clean, background], axis=1)
    (g_a, g_b), *_ = np.linalg.lstsq(design, mixture, rcond=None)
    residual = mixture - design @ np.array([g_a, g_b])
    speech, noise = g_a * clean, mixture - g_a * clean
    return 10 * np.log10(np.sum(speech**2) / np.sum(noise**2)), float(np.max(np.abs(residual)))


@pytest.mark.parametrize("which", ["tiny", "graded"])
def test_snr_measured_on_the_audio_is_the_requested_one(which, request):
    out, report = request.getfixturevalue(which)
    items, by_uid = _manifest(out)
    graded = [i for i in items if "clean_uid" in i.meta]
    assert graded and report.failures == []
    errors = []
    for item in graded:
        clean = _load(out, by_uid[item.meta["clean_uid"]].audio)
        mixture = _load(out, item.audio)
        background = _load(out, item.meta["mix"]["source_b"])
        assert mixture.size == clean.size == background.size, item.uid  # the background covers the whole clip
        snr, residual = _measured_snr(clean, mixture, background)
        assert residual <= 3 * LSB, (item.uid, residual)  # nothing but the speech and the background in the mix
        assert abs(snr - item.meta["snr_db"]) <= 0.5, (item.uid, snr)
        errors.append(abs(snr - item.meta["snr_db"]))
    assert max(errors) < 0.05  # measured: under 0.001 dB (16-bit rounding only)


def test_background_kind_matches_its_spectrum(graded):
    """Noise has a flat spectrum, the melody a line spectrum: spectral flatness tells them apart by 4 decades."""
    out, report = graded
    kinds: dict[str, set[str]] = defaultdict(set)
    for item in report.graded:
        background = _load(out, item.meta["mix"]["source_b"]).astype(np.float32)
        flatness = float(np.median(librosa.feature.spectral_flatness(y=background, n_fft=2048)))
        measured = "noise" if flatness > 1e-4 else "music"  # measured: noise >= 1e-2, music <= 2e-6
        assert measured == item.meta["background"], (item.uid, flatness)
        kinds[f"{item.task}/{item.choices[item.answer]}"].add(measured)
    # both kinds over each class of gender: the kind is not tied to the class (both cycle in item order)
    assert kinds["Speaker_Gender_Recognition/male"] == kinds["Speaker_Gender_Recognition/female"] == {"noise", "music"}


@pytest.mark.parametrize("which", ["tiny", "graded"])
def test_graded_items_keep_question_choices_and_answer(which, request):
    out, report = request.getfixturevalue(which)
    items, by_uid = _manifest(out)
    assert len(by_uid) == len(items)  # uids unique
    items = [i for i in items if "rotation_of" not in i.meta]  # rotated copies come last (circular evaluation)
    first_graded = next(k for k, i in enumerate(items) if "clean_uid" in i.meta)
    assert all("clean_uid" in i.meta for i in items[first_graded:])  # graded items follow the clean ones
    graded = items[first_graded:]
    grid = report.snr_grid
    for item in graded:
        clean = by_uid[item.meta["clean_uid"]]
        assert "clean_uid" not in clean.meta and clean in report.foundation
        assert item.uid == f"{clean.uid}@snr{item.meta['snr_db']:+03.0f}"
        assert re.fullmatch(r"[A-Za-z_]+-\d{3}@snr[+-]\d{2}", item.uid), item.uid
        assert item.audio == f"audio/foundation/{item.task}/snr/{item.uid}.wav"
        same = ("task", "dataset", "question", "choices", "answer", "category")
        assert {k: getattr(item, k) for k in same} == {k: getattr(clean, k) for k in same}
        assert {k: item.meta[k] for k in clean.meta} == clean.meta
        assert item.meta["background"] in ("noise", "music") and item.meta["snr_db"] in grid
        assert isinstance(item.meta["snr_db"], float) and abs(item.meta["snr_db_measured"] - item.meta["snr_db"]) < 0.01
        assert MixMeta(**item.meta["mix"]).snr_db_requested == item.meta["snr_db"]
    per_clean = Counter(i.meta["clean_uid"] for i in graded)
    assert set(per_clean.values()) == {len(grid)}
    by_task = Counter(by_uid[u].task for u in per_clean)
    if which == "tiny":
        assert grid == [-5.0, 5.0] and by_task == dict.fromkeys(SNR_TASKS, 1)
    else:
        assert by_task == {"Speaker_Gender_Recognition": PER_TASK, "Speaker_Number_Verification": PER_TASK}
    counts = json.loads((out / "dataset.json").read_text())["counts"]
    assert counts["graded_items"] == len(graded) and counts["graded_failures"] == 0
    assert counts["graded_by_snr"] == {f"{s:g}": len(per_clean) for s in grid}


def test_remix_from_meta_gives_the_graded_audio(tiny):
    out, report = tiny
    for item in report.graded[:4]:
        rebuilt = remix(MixMeta(**item.meta["mix"]), root=out)
        assert np.max(np.abs(rebuilt.mix - _load(out, item.audio))) <= LSB, item.uid


def test_dsp_baseline_falls_with_snr(graded):
    """The DSP baseline answers every clean gender and speaker-number item and far fewer at -10 dB.

    Measured (seed 0, 12 items per task): gender 12/12 clean, 7/12 at -10 dB, 8/12 at 0 dB, 12/12 at +10 dB
    (pyin reads the melody's pitch or the noise's rumble instead of the voice); speaker number 12/12 clean and
    3/12 at every SNR (its pause detector, 35 dB under the loudest frame, finds no pause once any background
    fills them, so it hears one long turn). Pooled: 24/24 clean against 10/24 at -10 dB.
    """
    out, report = graded
    items = [*report.foundation, *report.graded]
    run_model(load_model("baseline:dsp"), items, out, out / "dsp.jsonl", progress=False)
    texts = {r.uid: r.text for r in read_records(out / "dsp.jsonl", Response)}
    right: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for item in items:
        level = f"{item.meta['snr_db']:+g}" if "clean_uid" in item.meta else "clean"
        right[item.task, level].append(extract_choice(texts[item.uid], item.choices).choice == item.answer)
    accuracy = {key: sum(v) / len(v) for key, v in right.items()}
    print({f"{task} {level}": round(a, 3) for (task, level), a in sorted(accuracy.items())})
    tasks = ("Speaker_Gender_Recognition", "Speaker_Number_Verification")
    for task in tasks:
        assert accuracy[task, "clean"] >= 0.9, accuracy
        assert accuracy[task, "-10"] <= accuracy[task, "clean"] - 0.25, accuracy  # measured: -0.42 and -0.75
    assert accuracy["Speaker_Gender_Recognition", "+10"] > accuracy["Speaker_Gender_Recognition", "-10"], accuracy
    clean = [ok for task in tasks for ok in right[task, "clean"]]
    noisy = [ok for task in tasks for ok in right[task, "-10"]]
    _, p = fisher_exact([[sum(clean), len(clean) - sum(clean)], [sum(noisy), len(noisy) - sum(noisy)]], "greater")
    print(f"pooled: {sum(clean)}/{len(clean)} clean, {sum(noisy)}/{len(noisy)} at -10 dB, one-sided Fisher p={p:.1e}")
    assert p < 0.001, (p, accuracy)


def test_grid_arguments_override_the_preset(tmp_path):
    gender = ["Speaker_Gender_Recognition", "Music_Midi_Pitch_Analysis"]
    none = build("tiny", out=tmp_path / "none", tasks=gender, progress=False, snr_grid=[], circular_items_per_task=0)
    assert none.graded == [] and none.counts()["graded_items"] == 0
    two = build(
        "tiny",
        out=tmp_path / "two",
        tasks=gender,
        progress=False,
        snr_grid=[0],
        snr_items_per_task=2,
        circular_items_per_task=0,
    )
    assert sorted(i.uid for i in two.graded) == [
        "Speaker_Gender_Recognition-000@snr+00",
        "Speaker_Gender_Recognition-001@snr+00",
    ]
    # graded items change nothing of the clean ones: the clean part of the manifest is the same bytes
    clean_lines = (tmp_path / "none/foundation.jsonl").read_text().splitlines()
    assert (tmp_path / "two/foundation.jsonl").read_text().splitlines()[: len(clean_lines)] == clean_lines
    assert parse_snr_grid("-10, -5,0,5,10") == [-10.0, -5.0, 0.0, 5.0, 10.0] and parse_snr_grid("none") == []
    bad_grids = [("-5,loud", "'loud' is not a number"), ([2.4, 2.0], "both give the uid label")]
    bad_grids.append(("nan", "not a finite number"))
    for bad, message in bad_grids:
        with pytest.raises(ValueError, match=message):
            parse_snr_grid(bad)
    with pytest.raises(ValueError, match="snr_items_per_task must be >= 0"):
        build("tiny", out=tmp_path / "bad", tasks=gender, progress=False, snr_items_per_task=-1)
    with pytest.raises(ValueError, match="circular_items_per_task must be a whole number >= 0"):
        build("tiny", out=tmp_path / "bad", tasks=gender, progress=False, circular_items_per_task=-1)


def test_cli_snr_options(tmp_path):
    from airbench_nb.cli import app

    runner = CliRunner()
    args = ["build", "--preset", "tiny", "--task", "Speaker_Gender_Recognition", "--snr-items-per-task", "2"]
    args += ["--circular-items-per-task", "0"]
    built = runner.invoke(app, [*args, "--snr-grid=-10,10", "--out", str(tmp_path / "a")])
    assert built.exit_code == 0, built.output
    assert "and 4 SNR-graded Foundation items at -10, +10 dB (0 failures)" in built.output
    uids = [i.uid for i in read_manifest(tmp_path / "a/foundation.jsonl")]
    assert uids[2:] == [f"Speaker_Gender_Recognition-00{k}@snr{s}" for k in (0, 1) for s in ("-10", "+10")]
    off = runner.invoke(app, [*args, "--snr-grid", "", "--out", str(tmp_path / "b")])
    assert off.exit_code == 0 and "SNR-graded" not in off.output
    bad = runner.invoke(app, [*args, "--snr-grid=-10,loud", "--out", str(tmp_path / "c")])
    assert bad.exit_code == 2 and "'loud' is not a number" in bad.output


def test_a_failing_mix_is_counted_not_fatal(tmp_path, monkeypatch):
    import airbench_nb.builders.snr as snr

    original = snr.mix

    def flaky(a, b, **kwargs):
        if kwargs["snr_db"] < 0:
            raise MixError("mixer exploded")
        return original(a, b, **kwargs)

    monkeypatch.setattr(snr, "mix", flaky)
    report = build(
        "tiny", out=tmp_path, tasks=["Speaker_Gender_Recognition"], progress=False, circular_items_per_task=0
    )
    assert [i.uid for i in report.graded] == ["Speaker_Gender_Recognition-000@snr+05"]
    assert report.failures == [
        {
            "task": "Speaker_Gender_Recognition",
            "index": 0,
            "uid": "Speaker_Gender_Recognition-000@snr-05",
            "snr_db": -5.0,
            "error": "MixError: mixer exploded",
        }
    ]
    counts = json.loads((tmp_path / "dataset.json").read_text())["counts"]
    assert counts["failures"] == counts["graded_failures"] == 1 and counts["graded_items"] == 1
    assert len(read_manifest(tmp_path / "foundation.jsonl")) == 3
