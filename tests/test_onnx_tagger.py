"""``onnx:`` audio taggers: the declared log-mel front ends and the backend on a tiny quantised ONNX model.

The tiny model is built here with onnx's helper API in the layout of YAMNet's quantised export (uint8 input
``[N, 1, 96, 64]`` with ``audio_scale``/``audio_zero_point``, DequantizeLinear, a mean over time and a MatMul, then
QuantizeLinear with ``class_scores_*`` to a uint8 output); the expected answers are recomputed in numpy from the same
weights. No real weights are read.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import librosa
import numpy as np
import onnx
import pytest
import soundfile as sf
from onnx import TensorProto, helper, numpy_helper

from airbench_nb.manifests import write_manifest
from airbench_nb.models import SpecError, load_model
from airbench_nb.models.audio_frontends import EFFICIENTAT, PANNS, YAMNET, front_end, kaldi_mel_filters
from airbench_nb.models.base import GenerationParams, Prompt
from airbench_nb.models.label_mapping import read_label_mapping
from airbench_nb.models.onnx_tagger import AUDIOSET_MAPPING, SSEU_MAPPING
from airbench_nb.records import EventsItem, Response, SceneItem, SoundSourceItem, TranscriptionItem
from airbench_nb.runner.infer import infer
from airbench_nb.runner.outputs import read_existing
from airbench_nb.unify import unify

RATE = 16000
LABELS = ["Speech", "Siren", "Church bell", "Bark", "Dog", "Ocean", "Waves, surf", "Chatter", "Knock", "Applause"]
"""The tiny model's labels: AudioSet names that the bundled tiered and SSEU tables map."""
IN_SCALE, IN_ZP = 0.05, 140
OUT_SCALE, OUT_ZP = 0.05, 128


def _tone(freq: float, seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _weights() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return rng.normal(0, 0.05, (64, len(LABELS))).astype(np.float32), rng.normal(0, 0.5, len(LABELS)).astype(np.float32)


def _build(folder: Path, *, batch: int | str = "N", labels: list[str] = LABELS) -> Path:
    """A tiny uint8-in, uint8-out tagger in ``folder`` (``model.onnx`` and ``class_map.csv``)."""
    w, b = _weights()
    graph = helper.make_graph(
        [
            helper.make_node("DequantizeLinear", ["audio", "audio_scale", "audio_zero_point"], ["x"]),
            helper.make_node("ReduceMean", ["x"], ["pooled"], axes=[1, 2], keepdims=0),
            helper.make_node("MatMul", ["pooled", "w"], ["mm"]),
            helper.make_node("Add", ["mm", "b"], ["logits"]),
            helper.make_node(
                "QuantizeLinear", ["logits", "class_scores_scale", "class_scores_zero_point"], ["class_scores"]
            ),
        ],
        "tiny_tagger",
        [helper.make_tensor_value_info("audio", TensorProto.UINT8, [batch, 1, 96, 64])],
        [helper.make_tensor_value_info("class_scores", TensorProto.UINT8, [batch, len(LABELS)])],
        [
            numpy_helper.from_array(np.array(IN_SCALE, np.float32), "audio_scale"),
            numpy_helper.from_array(np.array(IN_ZP, np.uint8), "audio_zero_point"),
            numpy_helper.from_array(np.array(OUT_SCALE, np.float32), "class_scores_scale"),
            numpy_helper.from_array(np.array(OUT_ZP, np.uint8), "class_scores_zero_point"),
            numpy_helper.from_array(w, "w"),
            numpy_helper.from_array(b, "b"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / "model.onnx"))
    with (folder / "class_map.csv").open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["index", "mid", "display_name"])
        out.writerows([i, f"/m/{i:04d}", name] for i, name in enumerate(labels))
    return folder


def _expected_scores(clip: np.ndarray) -> np.ndarray:
    """The tiny model recomputed in numpy: quantise, dequantise, mean, matmul, quantise, dequantise, sigmoid, mean."""
    w, b = _weights()
    patches = YAMNET.patches(clip)
    q = np.clip(np.round(patches / IN_SCALE) + IN_ZP, 0, 255)
    x = (q - IN_ZP) * IN_SCALE
    logits = x.mean(axis=1) @ w + b
    out = np.clip(np.round(logits / OUT_SCALE) + OUT_ZP, 0, 255)
    probs = 1.0 / (1.0 + np.exp(-((out - OUT_ZP) * OUT_SCALE)))
    return probs.mean(axis=0)


def _best(scores: np.ndarray, table_path: Path, classes: list[str]) -> list[tuple[str, float]]:
    """Each mapped class's best source score, best first (hand computation from the CSV rows)."""
    by_label = dict(zip(LABELS, scores.tolist(), strict=True))
    out: dict[str, float] = {}
    with table_path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["task_class"] in classes and row["source_label"] in by_label:
                value = by_label[row["source_label"]]
                out[row["task_class"]] = max(value, out.get(row["task_class"], value))
    order = sorted(out.items(), key=lambda kv: (-kv[1], classes.index(kv[0])))
    return order


def _prompt(item, audio: np.ndarray, rate: int = RATE) -> Prompt:
    return Prompt(item=item, text="", audio=audio, audio_path=Path("x.wav"), sample_rate=rate)


COMMON = {"dataset": "synthetic", "audio": "audio/x.wav", "question": "", "clip_id": "x"}
SCENES = ["street traffic", "park", "restaurant", "beach", "office"]
EVENTS = ["dog bark", "siren", "church bell", "door knock", "applause", "car horn"]


@pytest.fixture(scope="module")
def clips() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    noise = (0.05 * rng.standard_normal(3 * RATE)).astype(np.float32)
    return [_tone(440.0, 2.3), noise, _tone(1500.0, 0.4)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("onnx") / "tiny")


# --- front ends -------------------------------------------------------------------------------------------------


def test_yamnet_front_end_equals_librosa_reference() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(int(2.2 * RATE)) / RATE
    clip = (0.2 * np.sin(2 * np.pi * 700 * t * (1 + 0.3 * t)) + 0.02 * rng.standard_normal(t.size)).astype(np.float32)
    spec = np.abs(
        librosa.stft(clip.astype(np.float64), n_fft=512, hop_length=160, win_length=400, window="hann", center=True,
                     pad_mode="reflect")
    )  # fmt: skip
    mel = librosa.filters.mel(sr=RATE, n_fft=512, n_mels=64, fmin=125, fmax=7500, htk=True, norm=None) @ spec
    reference = np.log(mel + 0.001).T
    ours = YAMNET.log_mel(clip)
    assert ours.shape == reference.shape == (1 + clip.size // 160, 64)
    np.testing.assert_allclose(ours, reference, atol=2e-5)
    patches = YAMNET.patches(clip)
    count = 1 + (reference.shape[0] - 96) // 48
    assert patches.shape == (count, 96, 64)
    for k in range(count):
        np.testing.assert_allclose(patches[k], reference[48 * k : 48 * k + 96], atol=2e-5)


def test_short_clip_is_zero_padded_to_one_patch() -> None:
    clip = _tone(1000.0, 0.3)
    patches = YAMNET.patches(clip)
    assert patches.shape == (1, 96, 64)
    padded = np.concatenate([clip, np.zeros(YAMNET.min_samples() - clip.size, np.float32)])
    np.testing.assert_array_equal(patches[0], YAMNET.log_mel(padded))
    with pytest.raises(ValueError, match="empty clip"):
        YAMNET.patches(np.zeros(0, np.float32))


def test_panns_style_front_end_equals_librosa_power_to_db() -> None:
    clip = np.random.default_rng(2).standard_normal(32000).astype(np.float32) * 0.1
    mel = librosa.feature.melspectrogram(
        y=clip.astype(np.float64), sr=32000, n_fft=1024, hop_length=320, win_length=1024, window="hann", center=True,
        pad_mode="reflect", power=2.0, n_mels=64, fmin=50, fmax=14000,
    )  # fmt: skip
    reference = (10 * np.log10(np.maximum(mel, 1e-10))).T
    np.testing.assert_allclose(PANNS.patches(clip)[0], reference, atol=1e-3)


def test_efficientat_style_front_end_is_mel_first_with_kaldi_banks() -> None:
    clip = np.sin(2 * np.pi * 2000.0 * np.arange(32000) / 32000).astype(np.float32)
    out = EFFICIENTAT.patches(clip)
    assert out.shape == (1, 128, 1 + 32000 // 320)
    banks = kaldi_mel_filters(32000, 1024, 128, 0.0, 15500.0)
    assert banks.shape == (128, 513) and np.all(banks[:, -1] == 0)

    def mel(f: float) -> float:
        return 1127.0 * np.log(1.0 + f / 700.0)

    delta = (mel(15500.0) - mel(0.0)) / 129
    for m in (0, 40, 127):  # one band at a time, bin by bin, as Kaldi's get_mel_banks states it
        left, centre, right = mel(0.0) + m * delta, mel(0.0) + (m + 1) * delta, mel(0.0) + (m + 2) * delta
        for k in range(512):
            v = mel(k * 32000 / 1024)
            want = (v - left) / (centre - left) if left < v <= centre else (right - v) / (right - centre)
            assert banks[m, k] == pytest.approx(want if left < v < right else 0.0, abs=1e-9)
    assert np.argmax(out[0].mean(axis=1)) == np.argmax(banks[:, round(2000 * 1024 / 32000)])  # the tone's band
    assert front_end("efficientat") is EFFICIENTAT
    with pytest.raises(ValueError, match="unknown front end 'vggish'; use one of yamnet, panns, efficientat"):
        front_end("vggish")


# --- the backend ------------------------------------------------------------------------------------------------


def test_answers_equal_numpy_recomputation_for_sound_source_scene_and_events(tiny: Path, clips) -> None:
    model = load_model(f"onnx:{tiny}", threshold=0.9)
    choices = ["wail siren", "church bell", "dog barking", "door knock", "a kazoo"]
    source = SoundSourceItem(
        uid="s1", dataset="tiered", audio="a.wav", question="Which?", choices=choices, answer=0,
        classes=["wail", "church_bell", "dog", "knock", "kazoo"], categories=["siren", "bell", "canine", "door", "x"],
    )  # fmt: skip
    scene = SceneItem(uid="c1", task="sseu_scene", classes=SCENES, label="park", **COMMON)
    events = EventsItem(uid="e1", task="sseu_events", classes=EVENTS, labels=["siren"], **COMMON)
    prompts = [_prompt(source, clips[0]), _prompt(scene, clips[1]), _prompt(events, clips[2])]
    out = model.generate(prompts, GenerationParams())
    assert [g.error for g in out] == [None, None, None]

    want = _best(_expected_scores(clips[0]), AUDIOSET_MAPPING, choices)
    assert [(r.label, round(r.score, 5)) for r in out[0].ranking] == [(c, round(s, 5)) for c, s in want]
    assert out[0].text == want[0][0] and "a kazoo" not in [r.label for r in out[0].ranking]

    want = _best(_expected_scores(clips[1]), SSEU_MAPPING, SCENES)
    assert out[1].text == want[0][0]
    assert [r.label for r in out[1].ranking] == [c for c, _ in want]

    padded = np.concatenate([clips[2], np.zeros(YAMNET.min_samples() - clips[2].size, np.float32)])
    want = _best(_expected_scores(padded), SSEU_MAPPING, EVENTS)
    np.testing.assert_allclose([r.score for r in out[2].ranking], [s for _, s in want], atol=1e-5)
    listed = [c for c, s in want if s >= 0.9]
    assert 0 < len(listed) < len(want)  # the threshold splits the ranking
    assert json.loads(out[2].text) == {"events": listed}
    assert unify(out[2].text, "events").events == listed  # the events parser reads the answer back as listed

    settings = model.settings
    assert settings["quantised_input"] and settings["quantised_output"] and settings["batched"]
    assert settings["frontend"]["name"] == "yamnet" and settings["threshold"] == 0.9
    table = read_label_mapping(AUDIOSET_MAPPING)
    assert settings["mapping_rows_dropped"] == sum(r.source_label not in LABELS for r in table.rows) > 0
    assert settings["unmapped_source_labels"] == sum(label not in table.source_labels for label in LABELS)
    model.close()


def test_fixed_batch_model_runs_patch_by_patch_with_the_same_scores(tiny: Path, tmp_path: Path, clips) -> None:
    fixed = _build(tmp_path / "fixed", batch=1)
    batched, single = load_model(f"onnx:{tiny}", batch_size=2), load_model(f"onnx:{fixed / 'model.onnx'}", threads=1)
    assert batched.batched and not single.batched
    np.testing.assert_allclose(single.label_scores(clips[0]), batched.label_scores(clips[0]), atol=1e-6)
    np.testing.assert_allclose(single.label_scores(clips[0]), _expected_scores(clips[0]), atol=1e-5)


def test_items_it_cannot_answer_fail_alone_and_other_kinds_are_not_served(tiny: Path, clips) -> None:
    model = load_model(f"onnx:{tiny}")
    assert model.kinds == frozenset({"sound_source", "scene", "events"})
    assert load_model(f"onnx:{tiny}", kinds="scene").kinds == frozenset({"scene"})
    unmapped = SceneItem(uid="c2", task="sseu_scene", classes=["kitchen", "attic"], label="attic", **COMMON)
    scene = SceneItem(uid="c3", task="sseu_scene", classes=SCENES, label="park", **COMMON)
    speech = TranscriptionItem(uid="t1", task="sseu_transcription", reference="hi", **COMMON)
    out = model.generate(
        [_prompt(unmapped, clips[0]), _prompt(scene, clips[0] * np.nan), _prompt(scene, clips[0][::2], 8000),
         _prompt(speech, clips[0])],
        GenerationParams(),
    )  # fmt: skip
    assert "none of the item's choices ('kitchen', 'attic')" in out[0].error
    assert out[1].error == "audio of c3 contains NaN or infinite samples"
    assert out[2].error is None and out[2].text in SCENES  # resampled from 8 kHz
    assert out[3].error.endswith("t1 (transcription) has none")
    assert all("\n" not in (g.error or "") for g in out)


def test_bad_specs_and_options_are_refused_in_one_line(tiny: Path, tmp_path: Path) -> None:
    def refused(spec: str, message: str, **options) -> None:
        with pytest.raises(SpecError, match=message) as info:
            load_model(spec, **options)
        assert "\n" not in str(info.value)

    refused(f"onnx:{tmp_path / 'nowhere'}", "no such file or folder")
    (tmp_path / "empty").mkdir()
    refused(f"onnx:{tmp_path / 'empty'}", "the folder holds no .onnx file")
    refused(f"onnx:{tiny / 'class_map.csv'}", "not an .onnx file")
    no_map = _build(tmp_path / "nomap")
    (no_map / "class_map.csv").unlink()
    refused(f"onnx:{no_map}", "class map .*class_map.csv: no such file")
    refused(f"onnx:{tiny}", "unknown front end 'mfcc'; use one of yamnet, panns, efficientat", frontend="mfcc")
    refused(f"onnx:{tiny}", "does not take front end panns's patches", frontend="panns")
    table = tmp_path / "table.csv"
    table.write_text("source_label,task_class,match\nSiren,siren,exact\nTheremin,siren,approximate\n")
    refused(f"onnx:{tiny}", "names 1 label\\(s\\) the model does not have \\('Theremin'\\)", mapping=str(table))
    refused(f"onnx:{tiny}", "names 1 label", sseu_mapping=str(table))
    refused(f"onnx:{tiny}", "class map .*missing.csv: no such file", class_map=str(tmp_path / "missing.csv"))
    short = _build(tmp_path / "short", labels=LABELS[:-1])
    refused(f"onnx:{short}", "expected \\[N, 9\\] \\(one score per class map row\\)")
    refused(f"onnx:{tiny}", "threshold=1.5", threshold=1.5)
    refused(f"onnx:{tiny}", "outputs='softmax'", outputs="softmax")
    refused(f"onnx:{tiny}", "match='fuzzy'", match="fuzzy")
    no_init = _build(tmp_path / "noinit")
    model = onnx.load(str(no_init / "model.onnx"))
    for tensor in model.graph.initializer:
        if tensor.name == "audio_scale":
            tensor.name = "input_scale"
    model.graph.node[0].input[1] = "input_scale"
    onnx.save(model, str(no_init / "model.onnx"))
    refused(f"onnx:{no_init}", "quantised model without the initializer\\(s\\) audio_scale")


def test_bundled_yamnet_without_weights_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRBENCH_WEIGHTS", str(tmp_path))
    with pytest.raises(SpecError, match="onnx:yamnet-bundled: weights not fetched") as info:
        load_model("onnx:yamnet-bundled")
    assert "\n" not in str(info.value) and "weights fetch" in str(info.value)


def test_bundled_sseu_table_covers_the_kit_and_sseu_bench_classes() -> None:
    from airbench_nb.importing.corpora.sseu import EVENT_CLASSES as REAL_EVENTS
    from airbench_nb.importing.corpora.sseu import SCENE_CLASSES as REAL_SCENES
    from airbench_nb.synth.scenes import EVENT_CLASSES, SCENES

    table = read_label_mapping(SSEU_MAPPING)
    unmapped = [c for c in [*SCENES, *EVENT_CLASSES, *REAL_SCENES, *REAL_EVENTS] if not table.sources_of(c)]
    assert unmapped == ["coffee machine", "announcement", "shopping cart"]  # no AudioSet label names them (docs)


def test_infer_answers_tagger_kinds_and_leaves_transcription_not_applicable(tiny: Path, tmp_path: Path, clips) -> None:
    """The tiny tagger through ``infer``: rankings and settings are written, other kinds are ``n/a``."""
    (tmp_path / "audio").mkdir()
    source = SoundSourceItem(
        uid="s", dataset="tiered", audio="audio/s.wav", question="Which?", choices=["wail siren", "church bell"],
        answer=0, classes=["wail", "church_bell"], categories=["siren", "bell"],
    )  # fmt: skip
    common = {**COMMON, "audio": "audio/x.wav"}
    items = [
        source,
        SceneItem(uid="c", task="sseu_scene", classes=SCENES, label="park", **common),
        EventsItem(uid="e", task="sseu_events", classes=EVENTS, labels=["siren"], **common),
        TranscriptionItem(uid="t", task="sseu_transcription", reference="hello there", **common),
    ]
    sf.write(tmp_path / "audio" / "s.wav", clips[0], RATE)
    sf.write(tmp_path / "audio" / "x.wav", clips[1], RATE)
    manifest = write_manifest(tmp_path / "items.jsonl", items)
    summary = infer(f"onnx:{tiny}", manifest, tmp_path / "out.jsonl", progress=False, model_options={"threshold": 0.9})
    assert (summary.answered, summary.errors, summary.not_applicable) == (3, 0, {"transcription": 1})
    by_uid = {r.uid: r for r in read_existing(tmp_path / "out.jsonl", Response)}
    assert set(by_uid) == {"s", "c", "e"}
    assert by_uid["s"].text == by_uid["s"].ranking[0].label and len(by_uid["s"].ranking) == 2
    assert by_uid["c"].text in SCENES and unify(by_uid["e"].text, "events").events is not None
    assert by_uid["e"].generation["backend"]["threshold"] == 0.9
