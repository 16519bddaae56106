"""The offline builder: ground truth checked by measuring the audio, never by reading the builder's variables."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import librosa
import numpy as np
import pyloudnorm
import pytest
import soundfile as sf

from airbench_nb.builders import (
    CHAT_MAKERS,
    FOUNDATION_MAKERS,
    NOT_BUILT,
    RecipeError,
    build,
    load_recipes,
)
from airbench_nb.manifests import read_manifest
from airbench_nb.records import FOUNDATION_TASKS, KIT_FOUNDATION_TASKS, REFERENCE_KINDS, AudioStatus
from tests.measure import detected_onsets, energy_onsets

SR = 16000
HOP = 160  # 10 ms


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny")
    report = build("tiny", seed=0, out=out, progress=False)
    return out, report


def _load(out: Path, rel: str) -> np.ndarray:
    x, sr = sf.read(out / rel, dtype="float32")
    assert sr == SR and x.ndim == 1
    return x


def _items(report, task):
    items = [i for i in report.foundation if i.task == task]
    assert items, task
    return items


def _gold(item) -> str:
    return item.choices[item.answer]


def _interval(text: str) -> tuple[float, float]:
    start, end = (float(v) for v in re.findall(r"[\d.]+", text))
    return start, end


def _rms_db(x: np.ndarray) -> np.ndarray:
    rms = librosa.feature.rms(y=x, frame_length=400, hop_length=HOP, center=True)[0]
    return 20 * np.log10(np.maximum(rms, 1e-10))


def _segments(x: np.ndarray, min_silence_s: float, threshold_db: float = -35.0) -> list[tuple[float, float]]:
    """Active regions of a clip whose background is digital silence (speech items)."""
    db = _rms_db(x)
    active = db > db.max() + threshold_db
    segs, start, quiet = [], None, 0
    limit = int(min_silence_s * SR / HOP)
    for i, on in enumerate(active):
        if on:
            if start is None:
                start = i
            quiet = 0
        elif start is not None:
            quiet += 1
            if quiet >= limit:
                segs.append((start * HOP / SR, (i - quiet + 1) * HOP / SR))
                start, quiet = None, 0
    if start is not None:
        segs.append((start * HOP / SR, len(active) * HOP / SR))
    return segs


def _median_f0(x: np.ndarray, fmin: float = 60, fmax: float = 400) -> float:
    f0, _, _ = librosa.pyin(x, fmin=fmin, fmax=fmax, sr=SR, frame_length=1024)
    return float(np.nanmedian(f0))


def test_every_task_built_and_valid(tiny):
    out, report = tiny
    assert report.failures == []
    assert set(Counter(i.task for i in report.foundation)) == set(FOUNDATION_MAKERS)
    assert set(Counter(i.task for i in report.chat)) == set(CHAT_MAKERS)
    assert all(n == 2 for n in Counter(i.task for i in report.foundation).values())
    assert {i.category for i in report.chat} == {"speech", "sound", "music", "mixed", "multi-turn"}
    # every official task is built or said why not; the kit's own tasks (kit_ prefix) are built too
    assert set(FOUNDATION_MAKERS) | set(NOT_BUILT) == set(FOUNDATION_TASKS) | set(KIT_FOUNDATION_TASKS)
    foundation = read_manifest(out / "foundation.jsonl")
    chat = read_manifest(out / "chat.jsonl")
    # the manifest holds the clean items, then their SNR-graded copies (the tiny preset grades one item per task),
    # then the rotated copies of one item per task (circular evaluation)
    assert foundation == report.foundation_written == [*report.foundation, *report.graded, *report.rotated]
    first = [i for i in report.foundation if i.uid.endswith("-000")]
    assert len(report.rotated) == sum(len(i.choices) for i in first)
    for copy in report.rotated:
        original = next(i for i in first if i.uid == copy.meta["rotation_of"])
        assert copy.audio == original.audio and copy.choices[copy.answer] == original.choices[original.answer]
    assert chat == report.chat
    assert report.graded and all("clean_uid" in i.meta for i in report.graded)
    assert not any("clean_uid" in i.meta for i in report.foundation)
    # the tiny preset's SSEU set: one utterance, clean (a transcription item) and at 0 dB (transcription, scene,
    # events, joint and sseu-cot items), in manifests of their own
    # and its UG-Bench set: 2 translations, 1 audio and 1 music caption, 2 tts items and 1 spoken answer
    reference = {kind: read_manifest(out / f"{kind}.jsonl") for kind in REFERENCE_KINDS}
    assert reference == report.reference_items
    assert {k: len(v) for k, v in reference.items()} == {
        "transcription": 2,
        "scene": 1,
        "events": 1,
        "joint": 2,
        "translation": 2,
        "caption": 2,
        "speech_generation": 3,
    }
    sseu_kinds = ("transcription", "scene", "events", "joint")
    assert {i.clip_id for k in sseu_kinds for i in reference[k]} == {"sseu-000@clean", "sseu-000@snr+0"}
    for item in [*foundation, *chat, *(i for items in reference.values() for i in items)]:
        assert item.dataset == "synthetic" and item.audio_status == AudioStatus.ok
        assert (out / item.audio).is_file()
    card = json.loads((out / "dataset.json").read_text())
    assert card["source"] == "build:tiny" and card["counts"]["failures"] == 0 and card["data_root"] == "."
    assert card["counts"]["sseu_utterances"] == 1 and card["counts"]["sseu"]["clips_by_snr"] == {"clean": 1, "0": 1}
    assert card["counts"]["graded_items"] == len(report.graded) and card["counts"]["snr_grid"] == [-5.0, 5.0]


def test_pitch_labels_match_pyin(tiny):
    out, report = tiny
    for item in _items(report, "Music_Midi_Pitch_Analysis"):
        x = _load(out, item.audio)[: SR // 2]
        f0, _, _ = librosa.pyin(x, fmin=60, fmax=1400, sr=SR, frame_length=2048)
        assert int(round(float(librosa.hz_to_midi(np.nanmedian(f0))))) == int(_gold(item)), item.uid


def test_gender_items_fall_on_the_labelled_side(tiny):
    out, report = tiny
    seen = set()
    for item in _items(report, "Speaker_Gender_Recognition"):
        f0 = _median_f0(_load(out, item.audio))
        gold = _gold(item)
        seen.add(gold)
        assert (f0 < 140) if gold == "male" else (f0 > 160), (item.uid, gold, f0)
    assert seen == {"male", "female"}  # classes cycle: both appear even in the tiny preset


def test_grounding_word_onset_inside_gold_interval(tiny):
    out, report = tiny
    for item in _items(report, "Speech_Grounding"):
        x = _load(out, item.audio)
        word = re.search(r"'([^']+)'", item.question).group(1)
        words = item.meta["transcript"].split()
        k = [w.lower() for w in words].index(word.lower())
        segs = _segments(x, min_silence_s=0.2)
        assert len(segs) == len(words), (item.uid, len(segs), len(words))
        onset = segs[k][0]
        start, end = _interval(_gold(item))
        assert start - 0.02 <= onset <= end, (item.uid, onset, start, end)
        # and no distractor interval holds the word's onset
        for i, choice in enumerate(item.choices):
            if i != item.answer:
                s, e = _interval(choice)
                assert not (s - 0.005 <= onset <= e - 0.05), (item.uid, choice, onset)


def test_speaker_number_matches_distinct_voices(tiny):
    out, report = tiny
    for item in _items(report, "Speaker_Number_Verification"):
        x = _load(out, item.audio)
        segs = _segments(x, min_silence_s=0.35)
        f0s = sorted(_median_f0(x[int(s * SR) : int(e * SR)], fmin=60, fmax=450) for s, e in segs)
        clusters = 1 + sum(1 for a, b in zip(f0s, f0s[1:], strict=False) if b / a > 1.2)
        assert clusters == int(_gold(item)), (item.uid, f0s)


def test_audio_grounding_gold_interval_is_where_the_event_is(tiny):
    out, report = tiny
    for item in _items(report, "Audio_Grounding"):
        x = _load(out, item.audio)
        start, end = _interval(_gold(item))
        onsets = energy_onsets(x)
        assert any(abs(o - start) <= 0.03 for o in onsets), (item.uid, start, onsets)
        assert len(onsets) == len(item.meta["events"]), (item.uid, onsets)


def test_sound_event_counts_match(tiny):
    out, report = tiny
    checked = 0
    for item in _items(report, "Sound_AQA"):
        x = _load(out, item.audio)
        onsets = energy_onsets(x)
        if item.meta["subtask"] == "count":
            assert len(onsets) == int(_gold(item)), (item.uid, onsets)
            checked += 1
        else:
            assert len(onsets) == 3
    assert checked >= 1


def test_velocity_order_matches_level(tiny):
    out, report = tiny
    items = _items(report, "Music_Midi_Velocity_Analysis")
    levels = {int(_gold(i)): float(np.max(np.abs(_load(out, i.audio)))) for i in items}
    assert len(levels) == 2
    (v1, l1), (v2, l2) = sorted(levels.items())
    assert l1 < l2
    # peak level follows 40*log10(v/127) dB relative to velocity 127 (the synth's documented mapping)
    assert 20 * np.log10(l2 / l1) == pytest.approx(40 * np.log10(v2 / v1), abs=0.5)


def test_mood_chord_quality_from_chroma(tiny):
    out, report = tiny
    for item in _items(report, "Music_Mood_Recognition"):
        x = _load(out, item.audio)
        chroma = librosa.feature.chroma_stft(y=x, sr=SR, n_fft=4096).mean(axis=1)
        top = sorted(int(c) for c in np.argsort(chroma)[-3:])
        quality = None
        for root in top:
            intervals = sorted((c - root) % 12 for c in top)
            if intervals == [0, 4, 7]:
                quality = "major"
            elif intervals == [0, 3, 7]:
                quality = "minor"
        assert quality is not None, (item.uid, top)
        assert _gold(item) == {"major": "happy", "minor": "sad"}[quality], item.uid


def test_music_aqa_notes_direction_and_tempo(tiny):
    out, report = tiny
    for item in _items(report, "Music_AQA"):
        x = _load(out, item.audio)
        onsets = detected_onsets(x)
        subtask = item.meta["subtask"]
        if subtask == "count":
            assert len(onsets) == int(_gold(item)), (item.uid, onsets)
        elif subtask == "tempo":
            bpm = 60.0 / float(np.median(np.diff(onsets)))
            assert bpm == pytest.approx(float(_gold(item).split()[0]), rel=0.05)
        else:
            f0, _, _ = librosa.pyin(x, fmin=80, fmax=1200, sr=SR, frame_length=2048)
            voiced = f0[~np.isnan(f0)]
            rising = np.median(voiced[-10:]) > np.median(voiced[:10])
            assert _gold(item) == ("ascending" if rising else "descending"), item.uid


def test_mixed_items_louder_and_ahead_match_the_audio(tiny):
    out, report = tiny
    meter = pyloudnorm.Meter(SR)
    mixed = [i for i in report.chat if i.category == "mixed"]
    assert len(mixed) == 4
    for item in mixed:
        x = _load(out, item.audio)
        a = _load(out, item.meta["stems"]["a"])
        b = _load(out, item.meta["stems"]["b"])
        assert np.max(np.abs(x - (a + b))) < 3 / 32768  # the stems are the mix's components (16-bit rounding)
        la, lb = meter.integrated_loudness(a), meter.integrated_loudness(b)
        louder = "equal" if abs(la - lb) <= 1.0 else ("A" if la > lb else "B")
        assert louder == item.mix.louder, (item.uid, la, lb)
        onset_a = _segments(a, 0.2, threshold_db=-40)[0][0]
        onset_b = _segments(b, 0.2, threshold_db=-40)[0][0]
        ahead = "meanwhile" if abs(onset_a - onset_b) <= 0.1 else ("before" if onset_a < onset_b else "after")
        assert ahead == item.mix.ahead, (item.uid, onset_a, onset_b)
        word = {"A": "speech is louder", "B": "is louder than the speech", "equal": "equally loud"}[louder]
        assert word in item.meta_info


def test_no_written_wav_clips_mixes_sources_and_stems_included(tiny):
    """Every wav the build wrote stays under full scale; a mixed item's stems stay under the mixer's peak limit."""
    out, report = tiny
    wavs = sorted(out.rglob("*.wav"))
    stems = [i.meta["stems"][k] for i in report.chat if i.category == "mixed" for k in ("a", "b")]
    assert len(stems) == 8 and len(wavs) > 100
    for path in wavs:
        samples, _ = sf.read(path, dtype="int16")
        assert np.max(np.abs(samples.astype(int)), initial=0) < 32767, path.relative_to(out)  # never clipped
    for rel in stems:
        assert np.max(np.abs(_load(out, rel))) <= 0.99 + 1 / 32768, rel


def test_chat_items_have_meta_info_and_reference(tiny):
    _, report = tiny
    for item in report.chat:
        assert item.meta_info and item.reference and item.question
    dialogue = next(i for i in report.chat if i.task == "speech_dialogue_QA")
    turns = json.loads(dialogue.meta_info)
    assert len(turns) >= 2 and {"speaker", "text"} <= set(turns[0])


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    tasks = ["Speaker_Gender_Recognition", "Music_AQA", "sound_QA", "speech_and_music_QA"]
    a = build("tiny", seed=5, out=tmp_path / "a", tasks=tasks, progress=False)
    b = build("tiny", seed=5, out=tmp_path / "b", tasks=tasks, progress=False)
    c = build("tiny", seed=6, out=tmp_path / "c", tasks=tasks, progress=False)
    for name in ("foundation.jsonl", "chat.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "c" / name).read_bytes()
    assert len(a.foundation) == len(c.foundation) and b.failures == []


def test_task_filter_does_not_change_other_items(tiny, tmp_path):
    _, report = tiny
    only = build("tiny", seed=0, out=tmp_path, tasks=["Music_Midi_Pitch_Analysis"], progress=False)
    assert only.foundation == [i for i in report.foundation if i.task == "Music_Midi_Pitch_Analysis"]


def test_phrasings_and_recipes():
    recipes = load_recipes()
    for task, phrasings in recipes.phrasings.items():
        if not task.startswith("_"):
            assert len(set(phrasings)) >= 5, task
    assert set(recipes.speech["languages"]) >= {"en-us", "de", "fr", "es", "it", "ru", "hi"}


def test_bad_recipe_and_arguments(tmp_path):
    shutil.copytree(load_recipes().folder, tmp_path / "r")
    with pytest.raises(RecipeError, match="unknown preset 'huge'"):
        build("huge", out=tmp_path / "o", recipe_dir=tmp_path / "r", progress=False)
    with pytest.raises(ValueError, match="cannot build task"):
        build("tiny", out=tmp_path / "o", tasks=["Music_Genre_Recognition"], progress=False)
    (tmp_path / "r/music.json").write_text("{broken")
    with pytest.raises(RecipeError, match=r"music.json:1: invalid JSON"):
        load_recipes(tmp_path / "r")
    (tmp_path / "r/music.json").unlink()
    with pytest.raises(RecipeError, match="music.json: recipe file missing"):
        load_recipes(tmp_path / "r")


def test_one_failing_item_is_counted_not_fatal(tmp_path, monkeypatch):
    import airbench_nb.builders as b

    calls = {"n": 0}
    original = b.FOUNDATION_MAKERS["Music_Midi_Pitch_Analysis"]

    def flaky(ctx):
        calls["n"] += 1
        if ctx.index == 0:
            raise RuntimeError("synthesizer exploded")
        return original(ctx)

    monkeypatch.setitem(b.FOUNDATION_MAKERS, "Music_Midi_Pitch_Analysis", flaky)
    report = build("tiny", out=tmp_path, tasks=["Music_Midi_Pitch_Analysis"], progress=False)
    assert [i.uid for i in report.foundation] == ["Music_Midi_Pitch_Analysis-001"]
    assert report.failures == [
        {"task": "Music_Midi_Pitch_Analysis", "index": 0, "error": "RuntimeError: synthesizer exploded"}
    ]
    assert json.loads((tmp_path / "dataset.json").read_text())["counts"]["failures"] == 1


@pytest.mark.slow
def test_mini_preset_letter_balance_and_determinism_via_cli(tmp_path):
    """`airbench-nb build --preset mini` twice with one seed: identical manifests; gold letters balanced."""
    cmd = [sys.executable, "-m", "airbench_nb.cli", "build", "--preset", "mini", "--seed", "0"]
    builds = [  # the two builds at once: independent processes, each writing its own folder
        subprocess.Popen(
            [*cmd, "--out", str(tmp_path / name)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        for name in ("a", "b")
    ]
    for process in builds:
        _, stderr = process.communicate()
        assert process.returncode == 0, stderr
    for name in ("foundation.jsonl", "chat.jsonl", *(f"{kind}.jsonl" for kind in REFERENCE_KINDS)):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    # mini's SSEU set: 3 utterances, each clean (transcription only) and at 7 SNRs (4 kinds, joint twice); the clean
    # transcripts' controls (4 of the first 2) and perturbed copies (4 of all 3) come after them
    derived = ("clean_uid", "rotation_of", "control_of", "perturbation_of")
    sseu = {kind: read_manifest(tmp_path / f"a/{kind}.jsonl") for kind in ("transcription", "scene", "events", "joint")}
    assert {k: len(v) for k, v in sseu.items()} == {
        "transcription": 24 + 8 + 12,
        "scene": 21,
        "events": 21 + 8 + 16,  # and the controls of the first 2 (4 each), perturbed copies of the first 4 (4 each)
        "joint": 42,
    }
    translation = read_manifest(tmp_path / "a/translation.jsonl")
    for kind, manifest in (("events", sseu["events"]), ("translation", translation)):
        assert Counter(i.meta.get("control") for i in manifest if "control_of" in i.meta) == dict.fromkeys(
            ("silence", "noise", "mismatched", "no_audio"), 2
        ), kind
        assert Counter(i.meta.get("perturbation") for i in manifest if "perturbation_of" in i.meta) == {
            "codec:mp3": 8,
            "reverb": 8,
        }, kind
    events_of = {i.meta["perturbation_of"] for i in sseu["events"] if "perturbation_of" in i.meta}
    scenes = {i.uid: i.clip_id.split("@")[0] for i in sseu["events"]}
    assert len({scenes[u] for u in events_of}) == 3  # cleanest first: each of the 3 utterances' scenes, not one's
    transcripts = sseu["transcription"]
    assert Counter(i.meta.get("control") for i in transcripts if "control_of" in i.meta) == dict.fromkeys(
        ("silence", "noise", "mismatched", "no_audio"), 2
    )
    assert Counter(i.meta.get("perturbation") for i in transcripts if "perturbation_of" in i.meta) == {
        "codec:mp3": 6,
        "reverb": 6,
    }
    written = read_manifest(tmp_path / "a/foundation.jsonl")
    items = [i for i in written if not any(k in i.meta for k in derived)]
    # mini's "does the model listen?" set: every control of 2 items per task (no description: Foundation items have
    # none), 2 MP3 bitrates and 2 reverberation times of 4 items per task, and 2 rewrites of those 4 questions
    tasks = len(FOUNDATION_MAKERS)
    controls = Counter(i.meta["control"] for i in written if "control_of" in i.meta)
    assert controls == dict.fromkeys(("silence", "noise", "mismatched", "no_audio"), 2 * tasks)
    perturbed = Counter(i.meta["perturbation"] for i in written if "perturbation_of" in i.meta)
    assert perturbed == {"codec:mp3": 8 * tasks, "reverb": 8 * tasks, "paraphrase": 8 * tasks}
    counts = Counter(i.task for i in items)
    rotated = Counter(i.meta["rotation_of"] for i in written if "rotation_of" in i.meta)
    assert len(rotated) == 4 * len(FOUNDATION_MAKERS)  # mini: 4 items per task in every rotation
    assert all(n == 20 for n in counts.values()) and len(counts) == len(FOUNDATION_MAKERS)
    graded = Counter((i.task, i.meta["snr_db"]) for i in written if "clean_uid" in i.meta)
    assert len(graded) == 6 * 5 and set(graded.values()) == {8}  # mini: 8 items of 6 speech tasks at 5 SNRs
    four = [i.answer_letter for i in items if len(i.choices) == 4]
    for letter in "ABCD":
        assert abs(four.count(letter) / len(four) - 0.25) <= 0.05, Counter(four)
    chat = read_manifest(tmp_path / "a/chat.jsonl")
    chat_counts = Counter(i.task for i in chat if "control_of" not in i.meta)
    assert len(chat_counts) == 9 and all(10 <= n <= 20 for n in chat_counts.values())  # 8 official + kit_followup_QA
    chat_controls = Counter(i.meta["control"] for i in chat if "control_of" in i.meta)  # description: the meta_info
    assert chat_controls == dict.fromkeys(("silence", "noise", "mismatched", "no_audio", "description"), 2 * 9)
    assert json.loads((tmp_path / "a/dataset.json").read_text())["counts"]["failures"] == 0
    # mini's UG-Bench set: 4 translations per direction, 6 audio and 6 music captions, 12 tts, 4 spoken answers
    ug = Counter(
        i.task
        for kind in ("translation", "caption", "speech_generation")
        for i in read_manifest(tmp_path / f"a/{kind}.jsonl")
        if not any(k in i.meta for k in derived)
    )
    assert ug == {"speech_translation": 20, "audio_captioning": 6, "music_captioning": 6, "tts": 12, "spoken_answer": 4}


def test_llm_references_from_meta_info(tmp_path):
    """References written by an LLM through an openai: spec (a local server here), with failures counted."""
    from tests.openai_server import Fault, OpenAITestServer

    with OpenAITestServer() as server:
        server.plan["grandmother"] = [Fault("400")]  # one item's call fails: it keeps its template reference
        report = build(
            "tiny",
            out=tmp_path,
            tasks=["speech_QA"],
            progress=False,
            reference_model=f"openai:writer@{server.base_url}",
            reference_cache=tmp_path / "refs.sqlite",
        )
        sent = server.seen.chat_requests
    items = read_manifest(tmp_path / "chat.jsonl")
    assert len(items) == 2 and sent == 2
    written = [i for i in items if any("reference written by openai:writer" in n for n in i.notes)]
    kept = [i for i in items if i not in written]
    for item in written:  # the fixture server echoes the prompt: the meta-information and the question were sent
        assert item.reference.startswith("writer heard no audio:") and item.meta_info in item.reference
        assert item.question in item.reference and item.meta["template_reference"]
    assert len(written) + len(kept) == 2
    assert len(report.failures) == len(kept)
    for item in kept:
        assert "grandmother" in item.meta_info and any("template reference kept" in n for n in item.notes)
