"""Hostile model outputs (issue 29): server replies, spoken-answer files and their checks before transcription.

Each probe gives the runner or the ``asr:`` judge what a broken or hostile model gives it (a reply holding a lone
surrogate, item ids that collide once made file names, a spoken answer of hours, NaN samples, a truncated wav) and
checks that it becomes that item's counted failure with the reason, while the other items go on. Real files, the real
``infer`` CLI, real HTTP to the loopback server of ``tests/openai_server.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.manifests import read_records, write_manifest
from airbench_nb.models import GeneratedAudio, Generation, GenerationParams, Prompt
from airbench_nb.records import Response, SpeechGenerationItem
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import response_audio_file, run_model
from airbench_nb.runner.response_audio import audio_problem
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
        assert "1 item" in result.output or "errors" in result.output, result.output
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
