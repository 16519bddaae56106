"""Hostile model outputs (issue 29): server replies, spoken-answer files and their checks before transcription.

Each probe gives the runner or the ``asr:`` judge what a broken or hostile model gives it (a reply holding a lone
surrogate, item ids that collide once made file names, a spoken answer of hours, NaN samples, a truncated wav) and
checks that it becomes that item's counted failure with the reason, while the other items go on. Real files, the real
``infer`` CLI, real HTTP to the loopback server of ``tests/openai_server.py``.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.judge.run import judge_responses
from airbench_nb.manifests import read_records, write_manifest, write_records
from airbench_nb.models import GeneratedAudio, Generation, GenerationParams, Prompt
from airbench_nb.records import Response, SpeechGenerationItem, Verdict
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import response_audio_file, run_model
from airbench_nb.runner.response_audio import MAX_SPOKEN_BYTES, MAX_SPOKEN_S, audio_problem
from tests.openai_server import OpenAITestServer
from tests.test_hostile import SR, _item, _wav

runner = CliRunner()
LONE = "\ud800"  # an unpaired surrogate: valid in a JSON string (\ud800), not encodable as UTF-8


class LoneSurrogateServer(OpenAITestServer):
    """Answers prompts containing ``SURROGATE`` with text that holds an unpaired surrogate (``"A \\ud800"``)."""

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = super().answer(body)
        message = reply["choices"][0]["message"]
        if "SURROGATE" in (message.get("content") or ""):
            message["content"] = f"A {LONE} B"
        return reply


# ------------------------------------------------------------------------------------------- row 1: lone surrogates


def test_a_reply_holding_a_lone_surrogate_fails_its_item_and_the_others_are_written(tmp_path, monkeypatch):
    _wav(tmp_path / "a.wav")
    items = [_item("u1", question="Which one? SURROGATE"), _item("u2", question="Q2?"), _item("u3", question="Q3?")]
    manifest = tmp_path / "foundation.jsonl"
    write_manifest(manifest, items)
    out = tmp_path / "responses.jsonl"
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    with LoneSurrogateServer() as server:
        args = ["infer", "--model", f"openai:m@{server.base_url}", "--manifest", str(manifest), "--out", str(out)]
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (result.output, result.exception)  # some items failed: rerun to retry
        assert "1 of 3 items ended in error (backend: 1)" in result.stderr, result.stderr  # counted and shown
        responses = {r.uid: r for r in read_records(out, Response)}
        assert set(responses) == {"u1", "u2", "u3"}
        assert responses["u2"].error is None and responses["u3"].error is None
        assert responses["u2"].text and "heard" in responses["u2"].text
        failed = responses["u1"]
        assert failed.text is None and failed.error is not None
        assert "surrogate" in failed.error and "U+D800" in failed.error, failed.error
        out.read_bytes().decode("utf-8")  # the file stays valid UTF-8
        # a rerun retries u1 only (it fails the same way, counted again) and keeps the answers written
        again = runner.invoke(app, args)
        assert again.exit_code == 1, again.output
        latest = {r.uid: r for r in read_records(out, Response)}
        assert latest["u2"] == responses["u2"] and latest["u1"].error == failed.error
        with server.lock:
            asked = server.seen.chat_requests
    assert asked == 4  # three, then u1 again


# ------------------------------------------------------------------------------------------- row 2: file names


class _Speaker:
    """A model under test that answers each uid aloud with the tone planted for it (the runner writes the wav)."""

    spec = "planted:speaker"
    batch_size = 8
    kinds = frozenset({"speech_generation"})

    def __init__(self, audio: dict[str, GeneratedAudio]) -> None:
        self.audio = audio

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        return [Generation(text="said", audio=self.audio[p.uid]) for p in prompts]

    def close(self) -> None:
        pass


def _tone(hz: float, seconds: float = 0.5, rate: int = SR) -> GeneratedAudio:
    return GeneratedAudio((0.3 * np.sin(2 * np.pi * hz * np.arange(int(seconds * rate)) / rate)).astype("f4"), rate)


def _spoken_item(uid: str) -> SpeechGenerationItem:
    return SpeechGenerationItem(uid=uid, dataset="mine", audio="cue.wav", question="", task="tts", text="Hello there.")


def _speaking_folder(root: Path) -> RunFolder:
    folder = RunFolder(root)
    _wav(folder.data_dir / "cue.wav", seconds=0.5)
    return folder


def test_item_ids_that_make_the_same_file_name_get_their_own_spoken_answer_files(tmp_path):
    uids = ["a/1", "a_1", "a 1", "_a_1", "a" * 300, "a" * 299 + "b", "plain-uid_2.x"]
    model = _Speaker({uid: _tone(200 + 50 * n) for n, uid in enumerate(uids)})
    folder = _speaking_folder(tmp_path)
    out = folder.responses_file(model.spec, "speech_generation")
    items = [_spoken_item(uid) for uid in uids]
    first = run_model(model, items, folder.data_dir, out, progress=False, run_folder=folder)
    assert (first.answered, first.errors) == (len(uids), 0), first.error_kinds
    responses = {r.uid: r for r in read_records(out, Response)}
    files = {uid: response_audio_file(folder, responses[uid]) for uid in uids}
    assert len(set(files.values())) == len(uids), files  # one file per item
    assert all(audio_problem(folder, r) is None for r in responses.values())  # each file holds its own answer
    assert all(len(p.name) <= 255 for p in files.values())
    assert responses["plain-uid_2.x"].audio.path == "audio/plain-uid_2.x.wav"  # a safe id keeps its name
    assert responses["a_1"].audio.path == "audio/a_1.wav"
    # a rerun finds every answer where it was written: nothing is answered again, nothing overwritten
    before = {uid: p.read_bytes() for uid, p in files.items()}
    again = run_model(model, items, folder.data_dir, out, progress=False, run_folder=folder)
    assert (again.skipped_existing, again.audio_lost, again.answered) == (len(uids), 0, 0)
    assert {uid: p.read_bytes() for uid, p in files.items()} == before
    assert sorted(p.name for p in (folder.responses_dir / "planted_speaker" / "audio").iterdir()) == sorted(
        p.name for p in files.values()
    )


# ------------------------------------------------------------------------------------------- rows 3-4: spoken answers

ASR = "asr:faster-whisper:tiny.en-bundled"


def _answered(root: Path, uids: list[str]) -> tuple[RunFolder, list[SpeechGenerationItem], Path]:
    """A run folder where the planted speaker answered every uid with a half-second tone (real files, records)."""
    folder = _speaking_folder(root)
    items = [_spoken_item(uid) for uid in uids]
    model = _Speaker({uid: _tone(300) for uid in uids})
    out = folder.responses_file(model.spec, "speech_generation")
    run_model(model, items, folder.data_dir, out, progress=False, run_folder=folder)
    return folder, items, out


def _replace_answer(folder: RunFolder, out: Path, uid: str, data: bytes | None = None) -> Path:
    """Give ``uid``'s spoken answer other bytes and record them as the answer (its SHA-256 in the record), as a model
    that wrote them would; None leaves the file as the caller made it (its record then names another hash)."""
    responses = read_records(out, Response)
    path = folder.response_audio_file("planted:speaker", uid)
    if data is not None:
        path.write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        responses = [
            r.model_copy(update={"audio": r.audio.model_copy(update={"sha256": digest})}) if r.uid == uid else r
            for r in responses
        ]
        write_records(out, responses)
    return path


def _wav_bytes(samples: np.ndarray, rate: int, subtype: str = "PCM_16") -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, samples, rate, format="WAV", subtype=subtype)
    return buffer.getvalue()


def _pcm_header(data_bytes: int, rate: int = SR) -> bytes:
    """The 44 bytes of a 16-bit mono PCM wav header whose data chunk says it holds ``data_bytes`` bytes."""
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    return (
        b"RIFF"
        + struct.pack("<I", 36 + data_bytes)
        + b"WAVE"
        + b"fmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + (struct.pack("<I", data_bytes))
    )


def _claiming(samples: np.ndarray, frames: int) -> bytes:
    """A 16-bit mono wav holding ``samples`` whose header promises ``frames`` frames."""
    return _pcm_header(frames * 2) + (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


def _judged(folder: RunFolder, items: list, out: Path) -> dict[str, Verdict]:
    verdicts_file = folder.verdicts_file("planted:speaker", "speech_generation", ASR)
    summary = judge_responses(ASR, items, read_records(out, Response), verdicts_file, progress=False, run_folder=folder)
    assert summary.asked == 0 and summary.parse_failures == summary.written == len(items)  # counted, none transcribed
    return {v.uid: v for v in read_records(verdicts_file, Verdict)}


def test_a_spoken_answer_over_the_length_bound_is_refused_from_its_header(tmp_path):
    folder, items, out = _answered(tmp_path, ["long", "quiet"])
    rate = 2000  # 601 s of tone in 2.4 MB: over the bound in duration, small on disk
    tone = 0.3 * np.sin(2 * np.pi * 300 * np.arange(int((MAX_SPOKEN_S + 1) * rate)) / rate)
    _replace_answer(folder, out, "long", _wav_bytes(tone.astype("f4"), rate))
    _replace_answer(folder, out, "quiet", _wav_bytes(np.zeros(SR, "f4"), SR))
    verdicts = _judged(folder, items, out)
    assert verdicts["long"].parse_error == f"too long ({MAX_SPOKEN_S + 1:.1f} s; over {MAX_SPOKEN_S:g} s)"
    assert (verdicts["quiet"].parse_error or "").startswith("silent output")  # the other item is judged as before


def test_a_huge_sparse_spoken_answer_is_refused_by_its_size_before_it_is_read(tmp_path):
    folder, items, out = _answered(tmp_path, ["huge"])
    path = _replace_answer(folder, out, "huge")
    size = 0xF0000000  # 4 GB of samples (35 hours) in a sparse file: nothing allocated on disk or in memory
    with path.open("wb") as handle:
        handle.write(_pcm_header(size))
        handle.truncate(44 + size)
    responses = read_records(out, Response)  # its record keeps the earlier hash: the file must not be read to tell
    # judged in a child process whose heap is capped at 1 GiB: reading the file (4 GB) would fail there, not here
    script = (
        "import json, resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_DATA, (1 << 30, 1 << 30))\n"
        "from airbench_nb.judge.asr import read_spoken_answer\n"
        "from airbench_nb.judge.base import Task\n"
        "from airbench_nb.records import Response, SpeechGenerationItem\n"
        "from airbench_nb.run_folder import RunFolder\n"
        "item = SpeechGenerationItem.model_validate_json(sys.argv[1])\n"
        "response = Response.model_validate_json(sys.argv[2])\n"
        "spoken = read_spoken_answer(Task(item, response, run_folder=RunFolder(sys.argv[3])))\n"
        "print(json.dumps(spoken if isinstance(spoken, str) else 'decoded'))\n"
    )
    args = [items[0].model_dump_json(), responses[0].model_dump_json(), str(folder.path)]
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    reason = json.loads(done.stdout.strip().splitlines()[-1])
    assert reason == f"too large ({44 + size} bytes; over {MAX_SPOKEN_BYTES} bytes)", reason


def test_a_model_speaking_past_the_bound_fails_that_item_and_the_others_are_written(tmp_path):
    rate = 2000
    model = _Speaker(
        {"long": GeneratedAudio(np.full(int((MAX_SPOKEN_S + 1) * rate), 0.1, "f4"), rate), "ok": _tone(300)}
    )
    folder = _speaking_folder(tmp_path)
    out = folder.responses_file(model.spec, "speech_generation")
    summary = run_model(
        model, [_spoken_item("long"), _spoken_item("ok")], folder.data_dir, out, progress=False, run_folder=folder
    )
    assert (summary.answered, summary.errors, summary.error_kinds) == (1, 1, {"audio output": 1})
    responses = {r.uid: r for r in read_records(out, Response)}
    assert responses["long"].audio is None and not folder.response_audio_file(model.spec, "long").exists()
    assert responses["long"].error == f"audio output: too long ({MAX_SPOKEN_S + 1:.1f} s; over {MAX_SPOKEN_S:g} s)"
    assert responses["ok"].audio is not None


def test_nan_and_truncated_spoken_answers_are_called_corrupt_with_their_reason(tmp_path):
    folder, items, out = _answered(tmp_path, ["nan", "inf", "truncated", "ok_but_quiet"])
    tone = (0.3 * np.sin(2 * np.pi * 300 * np.arange(SR) / SR)).astype("f4")
    holed = tone.copy()
    holed[8000:8010] = np.nan
    _replace_answer(folder, out, "nan", _wav_bytes(holed, SR, "FLOAT"))
    _replace_answer(folder, out, "inf", _wav_bytes(np.where(tone > 0.29, np.inf, tone).astype("f4"), SR, "FLOAT"))
    # a 1 s wav whose header promises 10 hours
    _replace_answer(folder, out, "truncated", _claiming(tone, 10 * 3600 * SR))
    _replace_answer(folder, out, "ok_but_quiet", _wav_bytes(np.zeros(SR, "f4"), SR))
    verdicts = _judged(folder, items, out)
    assert verdicts["nan"].parse_error == "audio corrupt: 10 NaN or infinite samples (first at 0.500 s)"
    assert (verdicts["inf"].parse_error or "").startswith("audio corrupt: ")
    assert "NaN or infinite" in verdicts["inf"].parse_error
    assert verdicts["truncated"].parse_error == (
        f"audio corrupt: truncated: the WAV header promises {10 * 3600 * SR} frames (36000.0 s), "
        f"the file holds {SR} (1.0 s)"
    )
    assert (verdicts["ok_but_quiet"].parse_error or "").startswith("silent output")
    # properties of the answer, not of the files: not judged again on rerun
    again = judge_responses(
        ASR,
        items,
        read_records(out, Response),
        folder.verdicts_file("planted:speaker", "speech_generation", ASR),
        progress=False,
        run_folder=folder,
    )
    assert (again.skipped_existing, again.written) == (4, 0)
