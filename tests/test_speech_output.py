"""Models that answer with audio, and the back-transcription judge (issue 20: speech output).

``tts:espeak-ng`` through the runner and ``asr:faster-whisper:tiny.en-bundled`` (real espeak-ng, real Whisper); the
spoken answers on disk (hash, resume); the judge's counted failures (missing, changed, silent, too short, text only);
``openai:`` models asked for audio through the fixture server over real HTTP.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.judge import load_judge
from airbench_nb.judge.asr import NO_AUDIO, read_spoken_answer
from airbench_nb.judge.base import Task
from airbench_nb.judge.run import judge_responses
from airbench_nb.manifests import read_records
from airbench_nb.models import GeneratedAudio, Generation, GenerationParams, Prompt, SpecError, load_model
from airbench_nb.models.tts import NON_ANSWER
from airbench_nb.records import Response, SpeechGenerationItem, TranscriptionItem, Verdict
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import response_audio_file, run_model
from airbench_nb.runner.response_audio import AUDIO_CHANGED
from tests.openai_server import OpenAITestServer

ASR = "asr:faster-whisper:tiny.en-bundled"
TEXTS = (
    "Please call Stella and ask her to bring these things.",
    "Seven people waited at the station for the morning train.",
    "The weather will be cold and windy tomorrow afternoon.",
    "Turn left at the second light and park near the bank.",
)
BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_tts_backtranscription.py"


def _folder(root: Path) -> RunFolder:
    """A run folder whose data folder holds one short tone (the clip of every item here)."""
    folder = RunFolder(root)
    (folder.data_dir / "audio").mkdir(parents=True)
    tone = 0.1 * np.sin(2 * np.pi * 440 * np.arange(8000) / 16000)
    sf.write(folder.data_dir / "audio" / "cue.wav", tone.astype(np.float32), 16000)
    return folder


def _tts(uid: str, text: str, language: str = "en") -> SpeechGenerationItem:
    return SpeechGenerationItem(
        uid=uid, dataset="mine", audio="audio/cue.wav", question="", task="tts", text=text, language=language
    )


QUESTION = SpeechGenerationItem(
    uid="q0", dataset="mine", audio="audio/cue.wav", question="", task="spoken_answer", answers=["Paris"]
)
TRANSCRIPTION = TranscriptionItem(
    uid="x0", dataset="mine", audio="audio/cue.wav", question="", task="sseu_transcription", reference="a tone"
)


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_tts_backtranscription", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_tts_backtranscription"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("bench_tts_backtranscription", None)


@pytest.fixture(scope="module")
def espeak():
    model = load_model("tts:espeak-ng")
    yield model
    model.close()


@pytest.fixture(scope="module")
def spoken(tmp_path_factory: pytest.TempPathFactory, espeak) -> tuple[RunFolder, list, Path]:
    """``tts:espeak-ng`` answers two tts items, a spoken question and a transcription item (not applicable)."""
    folder = _folder(tmp_path_factory.mktemp("spoken"))
    items = [_tts("t0", TEXTS[0]), _tts("t1", TEXTS[1]), QUESTION, TRANSCRIPTION]
    out = folder.responses_file(espeak.spec, "speech_generation")
    summary = run_model(espeak, items, folder.data_dir, out, progress=False, run_folder=folder)
    assert (summary.answered, summary.errors, summary.not_applicable) == (3, 0, {"transcription": 1})
    return folder, items, out


# ------------------------------------------------------------------------------------------- tts:espeak-ng


def test_tts_espeak_through_the_pipeline_is_heard_back_under_30_percent_wer(bench, tmp_path):
    result = bench.measure(TEXTS, tmp_path)
    assert result.n == len(TEXTS) and result.failures == {}
    assert result.corpus_wer is not None and result.corpus_wer < 0.30, result
    assert result.per_utterance_wer is not None and result.per_utterance_wer < 0.30, result


def test_the_benchmark_reads_texts_wherever_the_json_holds_them(bench, tmp_path):
    path = tmp_path / "texts.json"
    path.write_text(json.dumps({"tts": [{"text": "One."}, {"text": "Two."}, {"text": "One."}], "no": ["Three."]}))
    assert bench.read_texts(path) == ["One.", "Two."]
    path.write_text(json.dumps(["Three.", "Four."]))
    assert bench.read_texts(path) == ["Three.", "Four."]
    path.write_text(json.dumps({"spoken_answer": [{"answers": ["Paris"]}]}))
    with pytest.raises(SystemExit, match="no text to speak"):
        bench.read_texts(path)
    with pytest.raises(SystemExit, match="no such file"):
        bench.read_texts(tmp_path / "absent.json")


def test_spoken_answers_are_files_beside_the_responses_recorded_by_hash(spoken):
    folder, items, out = spoken
    responses = {r.uid: r for r in read_records(out, Response)}
    assert set(responses) == {"t0", "t1", "q0"}  # the transcription item is not applicable: no response
    for response in responses.values():
        audio = response.audio
        assert audio is not None and audio.sample_rate == 16000 and audio.path == f"audio/{response.uid}.wav"
        path = response_audio_file(folder, response)
        assert path == folder.response_audio_file("tts:espeak-ng", response.uid).resolve()
        assert hashlib.sha256(path.read_bytes()).hexdigest() == audio.sha256
        info = sf.info(str(path))
        assert (info.samplerate, info.subtype) == (16000, "PCM_16")
        assert abs(info.duration - audio.duration_s) < 1e-3 and audio.duration_s > 1.0
    assert responses["t0"].text == TEXTS[0]
    assert responses["q0"].text == NON_ANSWER  # never the accepted answer read from the item
    assert "Paris" not in out.read_text() and max(len(line) for line in out.read_text().splitlines()) < 2000
    assert responses["t0"].generation["backend"]["voice"] == "en-us"


def test_a_resume_answers_again_what_lost_its_audio_file(tmp_path, espeak):
    folder = _folder(tmp_path)
    items = [_tts("t0", TEXTS[0]), _tts("t1", TEXTS[1]), _tts("t2", TEXTS[2])]
    out = folder.responses_file(espeak.spec, "speech_generation")
    run_model(espeak, items, folder.data_dir, out, progress=False, run_folder=folder)
    folder.response_audio_file(espeak.spec, "t0").unlink()
    changed = folder.response_audio_file(espeak.spec, "t1")
    changed.write_bytes(changed.read_bytes()[:-100])
    again = run_model(espeak, items, folder.data_dir, out, progress=False, run_folder=folder)
    assert (again.audio_lost, again.answered, again.skipped_existing) == (2, 2, 1)
    assert all(f.is_file() for f in (folder.response_audio_file(espeak.spec, u) for u in ("t0", "t1", "t2")))
    # without a run folder the spoken answer has nowhere to go: the item's error, counted
    elsewhere = run_model(espeak, items[:1], folder.data_dir, tmp_path / "loose.jsonl", progress=False)
    assert elsewhere.errors == 1 and elsewhere.error_kinds == {"audio output": 1}


def test_infer_finds_the_run_folder_its_output_lies_in(tmp_path):
    from airbench_nb.manifests import write_manifest
    from airbench_nb.runner import infer, responses_run_folder

    folder = _folder(tmp_path / "run")
    manifest = folder.manifest("speech_generation")
    write_manifest(manifest, [_tts("t0", TEXTS[0])])
    out = folder.responses_file("tts:espeak-ng", "speech_generation")
    assert responses_run_folder(out).response_audio_file("tts:espeak-ng", "t0") == folder.response_audio_file(
        "tts:espeak-ng", "t0"
    )
    assert infer("tts:espeak-ng", manifest, out, progress=False).answered == 1
    assert folder.response_audio_file("tts:espeak-ng", "t0").is_file()
    loose = infer("tts:espeak-ng", manifest, tmp_path / "elsewhere" / "answers.jsonl", progress=False)
    assert loose.error_kinds == {"audio output": 1}  # not where a run folder keeps this model's responses


def test_tts_speaks_other_languages_with_their_voice_and_refuses_bad_specs(espeak):
    voiced = load_model("tts:espeak-ng:en-us+f3")
    assert voiced.voice_for("de") == "de+f3" and voiced.voice_for("en") == "en-us+f3"
    german = _tts("de0", "Guten Morgen, wie geht es dir?", language="de")
    prompt = Prompt(item=german, text="", audio=np.zeros(160, np.float32), audio_path=Path("cue.wav"))
    (generation,) = espeak.generate([prompt], GenerationParams())
    assert generation.error is None and generation.audio is not None and generation.audio.duration_s > 1.0
    unknown = _tts("xx0", "Hello.", language="xx")
    (failed,) = espeak.generate(
        [Prompt(item=unknown, text="", audio=prompt.audio, audio_path=prompt.audio_path)], GenerationParams()
    )
    assert failed.audio is None and "no voice for language 'xx'" in (failed.error or "")
    for spec, message in (
        ("tts:festival", "unknown TTS engine 'festival'"),
        ("tts:espeak-ng:en us", "not an espeak-ng voice name"),
        ("tts:espeak-ng:zz-top", "has no voice 'zz-top'"),
        ("tts:espeak-ng:en-us+nobody", "has no variant 'nobody'"),
    ):
        with pytest.raises(SpecError, match=message):
            load_model(spec)


# ------------------------------------------------------------------------------------------- the asr judge


class _Planted:
    """A model under test that answers each uid with the audio planted for it (None: a text answer)."""

    spec = "planted:speaker"
    batch_size = 8
    kinds = frozenset({"speech_generation"})

    def __init__(self, audio: dict[str, GeneratedAudio | None]) -> None:
        self.audio = audio

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        return [Generation(text="said", audio=self.audio[p.uid]) for p in prompts]

    def close(self) -> None:
        pass


def test_the_asr_judge_transcribes_and_counts_every_kind_of_bad_output(spoken, tmp_path):
    folder, _, _ = spoken
    speech = GeneratedAudio.from_wav(folder.response_audio_file("tts:espeak-ng", "t0").read_bytes())
    rate = 16000
    quiet = 10 ** (-70 / 20) * np.sin(2 * np.pi * 440 * np.arange(rate) / rate)
    planted = {
        "ok": speech,
        "silent": GeneratedAudio(np.zeros(rate, np.float32), rate),
        "quiet": GeneratedAudio(quiet, rate),
        "short": GeneratedAudio(speech.samples[: rate // 10], rate),
        "empty": GeneratedAudio(np.zeros(0, np.float32), rate),
        "missing": speech,
        "changed": speech,
        "text": None,
    }
    items = [_tts(uid, TEXTS[0]) for uid in planted]
    model = _Planted(planted)
    run_folder = RunFolder(tmp_path)
    out = run_folder.responses_file(model.spec, "speech_generation")
    run_model(model, items, folder.data_dir, out, progress=False, run_folder=run_folder)
    run_folder.response_audio_file(model.spec, "missing").unlink()
    changed = run_folder.response_audio_file(model.spec, "changed")
    changed.write_bytes(changed.read_bytes()[:-2] + b"\x01\x00")
    responses = read_records(out, Response)
    verdicts_file = run_folder.verdicts_file(model.spec, "speech_generation", ASR)
    with pytest.raises(ValueError, match="give run_folder"):
        judge_responses(ASR, items, responses, verdicts_file, progress=False)
    summary = judge_responses(ASR, items, responses, verdicts_file, progress=False, run_folder=run_folder)
    verdicts = {v.uid: v for v in read_records(verdicts_file, Verdict)}
    assert (summary.written, summary.asked, summary.errors, summary.parse_failures) == (8, 1, 0, 7)
    assert all(v.order == "single" and v.judge == ASR for v in verdicts.values())
    assert verdicts["ok"].parse_error is None and "bring these things" in (verdicts["ok"].raw or "").lower()
    assert verdicts["silent"].parse_error == "silent output (peak -inf dBFS)"
    quiet_peak = re.fullmatch(r"silent output \(peak (-\d+\.\d) dBFS\)", verdicts["quiet"].parse_error or "")
    assert quiet_peak is not None and float(quiet_peak[1]) == pytest.approx(-70, abs=1)  # 16-bit steps at -70 dBFS
    assert verdicts["short"].parse_error == "too short (0.100 s; under 0.2 s)"
    assert verdicts["empty"].parse_error == "empty output (0 samples)"
    assert (verdicts["missing"].parse_error or "").startswith("audio missing: ")
    assert verdicts["changed"].parse_error == AUDIO_CHANGED
    assert verdicts["text"].parse_error == NO_AUDIO
    # resumable: only the verdicts on files gone are tried again (still gone: the same failures, no ASR call)
    again = judge_responses(ASR, items, responses, verdicts_file, progress=False, run_folder=run_folder)
    assert (again.skipped_existing, again.retried, again.written, again.asked) == (6, 2, 2, 0)
    # a resumed model run writes the lost files again (and new audio for "silent": its verdict is stale)
    model.audio["silent"] = speech
    run_folder.response_audio_file(model.spec, "silent").unlink()
    resumed = run_model(model, items, folder.data_dir, out, progress=False, run_folder=run_folder)
    assert resumed.audio_lost == 3  # missing, changed, and silent (deleted): written again
    healed = judge_responses(
        ASR, items, read_records(out, Response), verdicts_file, progress=False, run_folder=run_folder
    )
    assert (healed.stale, healed.retried, healed.asked) == (1, 2, 3)  # silent: new audio; missing, changed: retried
    latest = {v.uid: v for v in read_records(verdicts_file, Verdict)}
    assert all("bring these things" in (latest[u].raw or "").lower() for u in ("silent", "missing", "changed"))


def test_an_asr_spec_must_name_a_model():
    from airbench_nb.judge import JudgeSpecError

    with pytest.raises(JudgeSpecError, match="ASR model spec is not understood"):
        load_judge("asr:whisper")
    assert load_judge(ASR).kinds == frozenset({"speech_generation"})


# ------------------------------------------------------------------------------------------- openai audio output


def test_openai_models_asked_for_audio_over_http(tmp_path):
    folder = _folder(tmp_path)
    items = [_tts("t0", TEXTS[0]), TRANSCRIPTION]
    with OpenAITestServer() as server:
        spec = f"openai:omni@{server.base_url}"
        model = load_model(spec, audio_output=True, audio_voice="alloy")
        out = folder.responses_file(spec, "speech_generation")
        summary = run_model(model, items, folder.data_dir, out, progress=False, run_folder=folder)
        bodies = list(server.seen.bodies)
    assert (summary.answered, summary.errors) == (2, 0)
    speaking = [b for b in bodies if b.get("modalities") == ["text", "audio"]]
    assert len(bodies) == 2 and len(speaking) == 1  # only the speech item asks for audio
    assert speaking[0]["audio"] == {"voice": "alloy", "format": "wav"}
    responses = {r.uid: r for r in read_records(out, Response)}
    spoken_answer = responses["t0"]
    assert spoken_answer.text == TEXTS[0] and spoken_answer.audio is not None  # the transcript, and the wav
    assert spoken_answer.audio.sample_rate == 22050 and spoken_answer.audio.duration_s > 1.0
    assert responses["x0"].audio is None and responses["x0"].text.startswith("omni heard")
    task = Task(_tts("t0", TEXTS[0]), spoken_answer, run_folder=folder)
    spoken_back = read_spoken_answer(task)
    assert not isinstance(spoken_back, str) and spoken_back.samples.size == pytest.approx(
        spoken_answer.audio.duration_s * 16000, abs=2
    )


@pytest.mark.parametrize(("reply", "expected"), [("omit", "no audio in the reply"), ("silence", "silent output")])
def test_openai_replies_without_audio_or_with_silence_are_counted(tmp_path, reply, expected):
    folder = _folder(tmp_path)
    item = _tts("t0", TEXTS[0])
    with OpenAITestServer(audio_reply=reply) as server:
        spec = f"openai:omni@{server.base_url}"
        out = folder.responses_file(spec, "speech_generation")
        summary = run_model(
            load_model(spec, audio_output=True), [item], folder.data_dir, out, progress=False, run_folder=folder
        )
    (response,) = read_records(out, Response)
    if reply == "omit":
        assert summary.errors == 1 and expected in (response.error or "") and response.audio is None
    else:
        assert summary.answered == 1 and response.audio is not None
        verdict = load_judge(ASR).decide(Task(item, response, run_folder=folder))
        assert verdict is not None and (verdict.parse_error or "").startswith(expected)


def test_generated_audio_refuses_what_is_not_mono_finite_audio():
    with pytest.raises(ValueError, match="mono"):
        GeneratedAudio(np.zeros((2, 10), np.float32), 16000)
    with pytest.raises(ValueError, match="NaN"):
        GeneratedAudio(np.array([np.nan], np.float32), 16000)
    with pytest.raises(ValueError, match="sample rate"):
        GeneratedAudio(np.zeros(10, np.float32), 0)
    with pytest.raises(ValueError, match="not a readable audio file"):
        GeneratedAudio.from_wav(base64.b64decode("bm90IGEgd2F2"))
