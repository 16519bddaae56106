"""Hostile model outputs (issue 29): server replies, spoken-answer files and their checks before transcription.

Each probe gives the runner or the ``asr:`` judge what a broken or hostile model gives it (a reply holding a lone
surrogate, item ids that collide once made file names, a spoken answer of hours, NaN samples, a truncated wav) and
checks that it becomes that item's counted failure with the reason, while the other items go on. Real files, the real
``infer`` CLI, real HTTP to the loopback server of ``tests/openai_server.py``.
"""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.manifests import read_records, write_manifest
from airbench_nb.records import Response
from tests.openai_server import OpenAITestServer
from tests.test_hostile import _item, _wav

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
