"""Specialist ASR models: the bundled Whisper tiny.en through faster-whisper on synthesized speech, the kinds a model
serves (the rest counted as not applicable), Whisper checkpoints through ``hf:``, the baselines on reference-scored
items, and the ``faster-whisper:`` spec errors.

``pytest -k asr`` selects this file. The bundled model is loaded once for the module (about a second).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from airbench_nb.manifests import read_records, write_manifest
from airbench_nb.models import GenerationParams, Prompt, SpecError, load_model, parse_spec, serves
from airbench_nb.models.baselines import CANNOT_TELL, oracle_answer
from airbench_nb.models.specs import BUNDLED_WHISPER, check_ct2_whisper
from airbench_nb.records import EventsItem, FoundationItem, JointItem, Response, SceneItem, TranscriptionItem
from airbench_nb.runner import NOT_APPLICABLE, RunSummaries, run_model

SENTENCES = (
    ("The quick brown fox jumps over the lazy dog.", "m3"),
    ("Please call Stella and ask her to bring these things with her from the store.", "f2"),
    ("Seven people waited at the station for the morning train.", "m1"),
)
"""Clean sentences and their espeak-ng voices (Whisper tiny.en: about 15% WER on such speech after normalising)."""

SCENES = ["park", "street", "cafe"]
EVENTS = ["dog bark", "car horn", "bird song", "footsteps"]
SPEC = f"faster-whisper:{BUNDLED_WHISPER}"


def _wav(root: Path, name: str, audio: np.ndarray) -> str:
    (root / "audio").mkdir(parents=True, exist_ok=True)
    sf.write(root / "audio" / name, audio, 16000)
    return f"audio/{name}"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """A mixed manifest's items: one Foundation item, a transcription item per sentence, two scene items."""
    from airbench_nb.synth.speech import speak

    root = tmp_path_factory.mktemp("asr-data")
    items: list = []
    for i, (sentence, voice) in enumerate(SENTENCES):
        path = _wav(root, f"s{i}.wav", speak(sentence, variant=voice))
        items.append(
            TranscriptionItem(
                uid=f"asr-t{i}",
                dataset="synthetic",
                audio=path,
                question="",
                task="sseu_transcription",
                reference=sentence,
                clip_id=f"clip{i}",
            )
        )
    for i in range(2):
        items.append(
            SceneItem(
                uid=f"asr-s{i}",
                dataset="synthetic",
                audio=f"audio/s{i}.wav",
                question="",
                task="sseu_scene",
                classes=SCENES,
                label=SCENES[i],
                clip_id=f"clip{i}",
            )
        )
    items.insert(
        1,
        FoundationItem(
            uid="asr-f0",
            dataset="synthetic",
            audio="audio/s0.wav",
            question="What is the gender of the speaker?",
            task="Speaker_Gender_Recognition",
            choices=["male", "female"],
            answer=0,
        ),
    )
    return root, items


@pytest.fixture(scope="module")
def whisper():
    """The bundled Whisper tiny.en, batched, loaded once for the module."""
    model = load_model(SPEC, batch_size=4, cpu_threads=2)
    yield model
    model.close()


def _normalised_wer(references: list[str], hypotheses: list[str]) -> float:
    import jiwer
    from whisper_normalizer.english import EnglishTextNormalizer

    normalise = EnglishTextNormalizer()
    return jiwer.process_words([normalise(r) for r in references], [normalise(h) for h in hypotheses]).wer


def test_asr_bundled_whisper_through_the_runner(whisper, data, tmp_path):
    root, items = data
    out = tmp_path / "responses.jsonl"
    summary = run_model(whisper, items, root, out, progress=False)
    assert (summary.total, summary.answered, summary.errors) == (6, 3, 0)
    assert summary.not_applicable == {"foundation": 1, "scene": 2} and summary.served == {"transcription": 3}
    responses = {r.uid: r for r in read_records(out, Response)}
    assert sorted(responses) == ["asr-t0", "asr-t1", "asr-t2"]  # nothing written for the other kinds
    references = [i.reference for i in items if isinstance(i, TranscriptionItem)]
    hypotheses = [responses[f"asr-t{i}"].text or "" for i in range(3)]
    wer = _normalised_wer(references, hypotheses)
    print(f"Whisper tiny.en (bundled) on {len(references)} clean espeak-ng sentences: normalised WER {wer:.3f}")
    print("\n".join(f"  {r!r} -> {h!r}" for r, h in zip(references, hypotheses, strict=True)))
    assert wer < 0.35
    generation = responses["asr-t0"].generation
    assert generation["greedy"] is True and generation["max_new_tokens"] == 256  # the transcription bound
    backend = generation["backend"]
    assert backend["name"] == "faster-whisper" and backend["beam_size"] == 1 and backend["batched"] is True
    assert backend["condition_on_previous_text"] is False and backend["vad_filter"] is False
    assert backend["compute_type"] == "int8" and backend["device"] == "cpu" and backend["multilingual"] is False

    again = run_model(whisper, items, root, out, progress=False)  # resumed: nothing asked again, n/a counted again
    assert (again.skipped_existing, again.answered, again.not_applicable_total) == (3, 0, 3)


def test_asr_batched_pipeline_equals_one_by_one(whisper, data):
    root, items = data
    prompts = []
    for item in items:
        if isinstance(item, TranscriptionItem):
            audio, _ = sf.read(root / item.audio, dtype="float32")
            prompts.append(Prompt(item=item, text="", audio=audio, audio_path=root / item.audio))
    short = prompts[0].item.model_copy(update={"uid": "asr-short"})
    prompts.append(Prompt(item=short, text="", audio=prompts[0].audio[:8000], audio_path=Path("short.wav")))
    single = load_model(SPEC, batch_size=1, cpu_threads=2)
    try:
        assert single.settings["batched"] is False
        one_by_one = single.generate(prompts, GenerationParams())
    finally:
        single.close()
    batched = whisper.generate(prompts, GenerationParams())
    assert all(g.error is None for g in batched + one_by_one)
    assert [g.text for g in batched] == [g.text for g in one_by_one]
    assert [g.output_tokens for g in batched] == [g.output_tokens for g in one_by_one]
    assert batched[-1].text and batched[-1].text != batched[0].text  # half a second: a window of its own


def test_asr_unusable_audio_is_that_items_error(whisper, data):
    _, items = data
    item = items[0]
    bad = [
        Prompt(item=item, text="", audio=np.array([], dtype=np.float32), audio_path=Path("a.wav")),
        Prompt(item=item, text="", audio=np.full(1600, np.nan, dtype=np.float32), audio_path=Path("b.wav")),
        Prompt(item=item, text="", audio=np.zeros(16000, np.float32), audio_path=Path("c.wav")),
    ]
    out = whisper.generate(bad, GenerationParams())
    assert "is empty" in out[0].error and "NaN" in out[1].error
    assert out[2].error is None and out[2].text == ""  # silence: Whisper's no-speech rule drops the window


def test_asr_kinds_shown_as_not_applicable(whisper, data, tmp_path):
    root, items = data
    runs = RunSummaries()
    runs.runs.append(("mixed", run_model(whisper, items, root, tmp_path / "w.jsonl", progress=False)))
    runs.runs.append(("mixed", run_model(load_model("baseline:oracle"), items, root, tmp_path / "o.jsonl")))
    coverage = runs.coverage_rows()
    assert coverage == [
        {"model": SPEC, "foundation": NOT_APPLICABLE, "transcription": 3, "scene": NOT_APPLICABLE},
        {"model": "baseline:oracle", "foundation": 1, "transcription": 3, "scene": 2},
    ]
    frame = runs.frame()
    assert frame["not_applicable"].tolist() == [3, 0] and frame["errors"].tolist() == [0, 0]
    assert runs.coverage_frame().loc[0, "scene"] == "n/a"
    (line,) = runs.not_applicable_texts()
    assert line.startswith(f"{SPEC}: 3 of 6 items not applicable (foundation: 1, scene: 2)")
    assert serves(whisper, "transcription") and not serves(whisper, "joint")
    assert all(load_model(f"baseline:{name}").kinds is None for name in ("oracle", "random", "first", "dsp"))

    only_other_kinds = [i for i in items if not isinstance(i, TranscriptionItem)]
    nothing = run_model(whisper, only_other_kinds, root, tmp_path / "none.jsonl", progress=False)
    assert nothing.not_applicable_total == 3 and not nothing.failed_every_item and nothing.failure_text() == ""
    assert not (tmp_path / "none.jsonl").exists()  # no output for a manifest with nothing the model serves


def test_asr_cli_prints_not_applicable(data, tmp_path):
    from airbench_nb.cli import app

    root, items = data
    manifest = root / "others.jsonl"
    write_manifest(manifest, [i for i in items if not isinstance(i, TranscriptionItem)])
    done = CliRunner().invoke(
        app, ["infer", "--model", SPEC, "--manifest", str(manifest), "--out", str(tmp_path / "r.jsonl")]
    )
    assert done.exit_code == 0, done.output
    assert "3 of 3 items not applicable (foundation: 1, scene: 2)" in " ".join(done.output.split())


# ------------------------------------------------------------------------------------------------ baselines


def _reference_items() -> list:
    common = {"dataset": "synthetic", "audio": "audio/x.wav", "question": "", "clip_id": "x"}
    joint = {
        "task": "sseu_joint",
        "reference": "Hello there.",
        "scene_classes": SCENES,
        "scene_label": "street",
        "event_classes": EVENTS,
        "event_labels": ["car horn", "footsteps"],
    }
    return [
        TranscriptionItem(uid="o-t", task="sseu_transcription", reference="Hello there.", **common),
        SceneItem(uid="o-s", task="sseu_scene", classes=SCENES, label="cafe", **common),
        EventsItem(uid="o-e", task="sseu_events", classes=EVENTS, labels=["dog bark", "bird song"], **common),
        EventsItem(uid="o-e0", task="sseu_events", classes=EVENTS, labels=[], **common),
        JointItem(uid="o-j", **joint, **common),
        JointItem(uid="o-c", prompting="sseu-cot", **joint, **common),
    ]


def _labelled(text: str) -> dict[str, str]:
    return dict(re.findall(r"^(Transcript|Scene|Events): (.*)$", text, re.M))


def test_asr_oracle_answers_every_kind_in_the_prompted_form():
    t, s, e, e0, j, c = _reference_items()
    assert oracle_answer(t) == "Hello there."
    assert oracle_answer(s) == "cafe"
    assert oracle_answer(e) == "dog bark, bird song" and oracle_answer(e0) == "none"
    assert oracle_answer(j) == "Transcript: Hello there.\nScene: street\nEvents: car horn, footsteps"
    cot = oracle_answer(c)
    assert cot.splitlines()[0] == "Final answer:" and cot.split("\n", 1)[1] == oracle_answer(j)
    parts = _labelled(cot)
    assert parts == {"Transcript": c.reference, "Scene": c.scene_label, "Events": ", ".join(c.event_labels)}

    prompts = [Prompt(item=i, text="", audio=np.zeros(160, np.float32), audio_path=Path("x.wav")) for i in (t, s, j)]
    answers = load_model("baseline:oracle").generate(prompts, GenerationParams())
    assert [a.text for a in answers] == [oracle_answer(i) for i in (t, s, j)]


def test_asr_other_baselines_on_reference_items():
    items = _reference_items()
    prompts = [Prompt(item=i, text="", audio=np.zeros(160, np.float32), audio_path=Path("x.wav")) for i in items]
    first = [g.text for g in load_model("baseline:first").generate(prompts, GenerationParams())]
    assert first[:4] == [CANNOT_TELL, SCENES[0], EVENTS[0], EVENTS[0]]
    assert _labelled(first[4]) == {"Transcript": CANNOT_TELL, "Scene": SCENES[0], "Events": EVENTS[0]}
    assert first[5].startswith("Final answer:\n")
    assert all(g.text == CANNOT_TELL for g in load_model("baseline:dsp").generate(prompts, GenerationParams()))
    picks = []
    for seed in range(12):
        answers = [g.text for g in load_model("baseline:random", seed=seed).generate(prompts, GenerationParams())]
        assert answers == [
            g.text for g in load_model("baseline:random", seed=seed).generate(prompts, GenerationParams())
        ]
        assert answers[0] == CANNOT_TELL and answers[1] in SCENES
        events = answers[2].split(", ")
        assert answers[2] == "none" or set(events) <= set(EVENTS)
        picks.append(answers[1])
    assert len(set(picks)) > 1  # the scene is drawn, not fixed


# ------------------------------------------------------------------------------------------------ specs


def test_asr_spec_errors_name_the_folder(tmp_path):
    assert parse_spec(SPEC) == ("faster-whisper", BUNDLED_WHISPER)
    check_ct2_whisper("large-v3")  # a size: fetched by faster-whisper (or read from the cache offline)
    check_ct2_whisper("Systran/faster-whisper-small")  # a hub id
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    with pytest.raises(SpecError) as no_model:
        load_model(f"faster-whisper:{empty}")
    message = str(no_model.value)
    assert "\n" not in message and str(empty) in message and "not a CTranslate2 Whisper model (no model.bin" in message
    checkpoint = tmp_path / "hf-whisper"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text('{"model_type": "whisper"}')
    with pytest.raises(SpecError, match=f"use hf:{re.escape(str(checkpoint))}"):
        load_model(f"faster-whisper:{checkpoint}")
    (tmp_path / "model.bin").write_bytes(b"x")
    with pytest.raises(SpecError, match="is a file"):
        load_model(f"faster-whisper:{tmp_path / 'model.bin'}")
    with pytest.raises(SpecError, match="no such folder"):
        load_model(f"faster-whisper:{tmp_path / 'missing'}")
    with pytest.raises(SpecError, match="not a model size"):
        load_model("faster-whisper:huge-v9")
    with pytest.raises(SpecError, match="not understood"):
        parse_spec("faster-whisper:")


def test_asr_corrupt_model_folder_is_one_line(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.bin").write_bytes(b"not a model")
    (broken / "config.json").write_text("{}")
    with pytest.raises(SpecError) as exc:
        load_model(f"faster-whisper:{broken}", cpu_threads=1)
    assert "\n" not in str(exc.value) and f"faster-whisper:{broken}: cannot load the model" in str(exc.value)


# ------------------------------------------------------------------------------------------------ hf: Whisper


@pytest.fixture(scope="module")
def tiny_whisper(tmp_path_factory: pytest.TempPathFactory):
    """A tiny random multilingual Whisper checkpoint, built offline, loaded through ``hf:``."""
    import torch

    from airbench_nb.models.tiny import build_tiny_whisper

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model = load_model(f"hf:{build_tiny_whisper(tmp_path_factory.mktemp('tiny-whisper'))}", batch_size=3, device="cpu")
    yield model
    model.close()
    torch.set_num_threads(threads)


def _tone_prompt(i: int, seconds: float, language: str) -> Prompt:
    item = TranscriptionItem(
        uid=f"hfw-{i}",
        dataset="synthetic",
        audio=f"audio/{i}.wav",
        question="",
        task="sseu_transcription",
        reference="hello",
        language=language,
    )
    t = np.arange(int(seconds * 16000)) / 16000
    audio = (0.3 * np.sin(2 * np.pi * (150 + 90 * i) * t)).astype(np.float32)
    return Prompt(item=item, text="Transcribe.", audio=audio, audio_path=Path(item.audio))


def test_asr_hf_whisper_batched_equals_one_by_one(tiny_whisper):
    assert tiny_whisper.family == "whisper" and tiny_whisper.kinds == frozenset({"transcription"})
    prompts = [_tone_prompt(0, 0.7, "en"), _tone_prompt(1, 2.3, "fr"), _tone_prompt(2, 1.1, "de")]
    params = GenerationParams(max_new_tokens=6)
    batched = tiny_whisper.generate(prompts, params)
    singles = [tiny_whisper.generate([p], params)[0] for p in prompts]
    assert all(g.error is None and g.text for g in batched), [g.error for g in batched]
    assert [g.text for g in batched] == [g.text for g in singles]
    assert [g.output_tokens for g in batched] == [g.output_tokens for g in singles]
    assert all(0 < g.output_tokens <= 6 and g.input_tokens is None for g in batched)
    # the language token is forced from the item: the same clip in another language decodes differently here
    french = _tone_prompt(0, 0.7, "fr")
    assert tiny_whisper.generate([french], params)[0].text != batched[0].text


def test_asr_hf_whisper_refuses_long_clips_and_unknown_languages_alone(tiny_whisper):
    params = GenerationParams(max_new_tokens=4)
    long, klingon, fine = _tone_prompt(0, 31.0, "en"), _tone_prompt(1, 1.0, "tlh"), _tone_prompt(2, 1.0, "en")
    out = tiny_whisper.generate([long, klingon, fine], params)
    assert "longer than 30 s" in out[0].error and "faster-whisper" in out[0].error
    assert out[1].error is not None and out[2].error is None and out[2].text
