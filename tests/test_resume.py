"""Resume, retries, outputs and exit codes of the item loops (runner, judge loop, scoring, analysis frames).

Failures heal on rerun, the latest record wins everywhere, a verdict of an older answer never scores a newer one,
outputs never destroy data, and ``infer``/``judge`` exit 0 only when every item was answered or judged.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.analysis.data import load_run
from airbench_nb.judge.run import judge_responses
from airbench_nb.manifests import read_records, write_manifest
from airbench_nb.models import load_model
from airbench_nb.models.base import Generation
from airbench_nb.records import AudioStatus, ChatItem, FoundationItem, Response, Verdict
from airbench_nb.runner import OutputError, OutputLockedError, output_lock, repair_jsonl, run_model
from airbench_nb.scoring import score_run
from tests.openai_server import Fault, OpenAITestServer

REPO = Path(__file__).resolve().parent.parent
SR = 16000


def _wav(path: Path, seconds: float = 0.3) -> None:
    t = np.arange(int(SR * seconds)) / SR
    sf.write(path, (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), SR)


def _items(n: int = 4, *, missing: bool = True) -> list[FoundationItem]:
    items = [
        FoundationItem(
            uid=f"f{i}",
            dataset="d",
            audio=f"a{i}.wav",
            question="Who speaks?",
            task="Speaker_Gender_Recognition",
            choices=["male", "female"],
            answer=i % 2,
        )
        for i in range(n)
    ]
    if missing:  # a data defect known to the manifest: an error response once, never retried, never a failure
        items.append(
            FoundationItem(
                uid="gone",
                dataset="d",
                audio="gone.wav",
                question="Who speaks?",
                task="Speaker_Gender_Recognition",
                choices=["male", "female"],
                answer=0,
                audio_status=AudioStatus.missing,
            )
        )
    return items


@pytest.fixture
def data(tmp_path):
    """A manifest of 4 readable items and one whose audio the manifest marks missing."""
    folder = tmp_path / "data"
    folder.mkdir()
    items = _items()
    for item in items[:4]:
        _wav(folder / item.audio)
    manifest = write_manifest(folder / "foundation.jsonl", items)
    return folder, manifest, items


class Scripted:
    """A model whose answers are scripted per uid: a string answers, an exception text makes that item fail."""

    batch_size = 2

    def __init__(self, answers: dict[str, str], spec: str = "test:scripted", fail: set[str] = frozenset()):
        self.spec = spec
        self.answers = answers
        self.fail = set(fail)
        self.asked: list[str] = []

    def generate(self, prompts, params):
        self.asked += [p.uid for p in prompts]
        return [
            Generation(error="server said no") if p.uid in self.fail else Generation(text=self.answers.get(p.uid, "A"))
            for p in prompts
        ]

    def close(self):
        pass


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "airbench_nb.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=180
    )


# ------------------------------------------------------------------------------------------------ failures heal


def test_failed_items_are_retried_and_the_latest_response_wins(data):
    folder, _, items = data
    out = folder / "r.jsonl"
    first = Scripted({}, fail={"f1", "f2"})
    summary = run_model(first, items, folder, out, progress=False)
    assert (summary.answered, summary.errors, summary.unusable, summary.failed) == (2, 3, 1, 2)
    assert summary.failure_text() == "test:scripted: 2 of 5 items ended in error (backend: 2)"
    assert summary.failed_every_item is False

    second = Scripted({"f1": "B", "f2": "B"})
    healed = run_model(second, items, folder, out, progress=False)
    assert sorted(second.asked) == ["f1", "f2"]  # only the failures; the missing audio is not retried
    assert (healed.retried, healed.skipped_existing, healed.answered, healed.failed) == (2, 3, 2, 0)
    latest = {r.uid: r for r in read_records(out, Response)}
    assert latest["f1"].text == latest["f2"].text == "B" and latest["f1"].error is None

    third = Scripted({})
    again = run_model(third, items, folder, out, progress=False)
    assert third.asked == [] and again.duplicates == 2 and again.skipped_existing == 5  # the superseded errors

    # scoring reads the latest response of each uid and says how many it resolved
    judge_responses("rule", items, read_records(out, Response), folder / "v.jsonl", progress=False)
    verdicts = read_records(folder / "v.jsonl", Verdict)
    table = score_run(items, read_records(out, Response), verdicts, protocol="strict", reps=0).strict
    assert table.duplicates["responses"] == 2
    assert table.foundation.tasks["Speaker_Gender_Recognition"].n == 4
    assert table.foundation.tasks["Speaker_Gender_Recognition"].failures == 0


def test_a_changed_prompt_is_answered_again_and_wins(data):
    folder, _, items = data
    out = folder / "r.jsonl"
    run_model(Scripted({}), items, folder, out, progress=False)
    model = Scripted({"f0": "B"})
    summary = run_model(model, items, folder, out, system="Answer briefly.", progress=False)
    assert summary.changed_prompt == 5 and summary.skipped_existing == 0 and len(model.asked) == 4
    again = run_model(Scripted({}), items, folder, out, system="Answer briefly.", progress=False)
    assert again.skipped_existing == 5 and again.duplicates == 5


def test_a_model_that_fails_every_item_says_so(data):
    folder, _, items = data
    summary = run_model(Scripted({}, fail={"f0", "f1", "f2", "f3"}), items, folder, folder / "r.jsonl", progress=False)
    assert summary.failed_every_item and summary.failed == 4 and summary.unusable == 1
    healthy = folder / "healthy.jsonl"
    run_model(Scripted({}, fail={"f0"}), items, folder, healthy, progress=False)
    resumed = run_model(Scripted({}, fail={"f0"}), items, folder, healthy, progress=False)  # f0 fails again
    assert resumed.failed == 1 and resumed.answered == 0 and resumed.skipped_existing > 0
    assert not resumed.failed_every_item  # the other answers were kept from the first run


# ------------------------------------------------------------------------------------------------ fatal API errors


class _KeyMissing:
    spec = "test:remote"
    batch_size = 1

    def __init__(self):
        self.calls = 0

    def generate(self, prompts, params):
        from airbench_nb.api_client import MissingAPIKeyError

        self.calls += 1
        if self.calls == 2:
            raise MissingAPIKeyError("no key in OPENAI_API_KEY for https://api.example.invalid/v1")
        return [Generation(text="A") for _ in prompts]

    def close(self):
        pass


def test_a_fatal_api_error_stops_the_loop_at_once_and_keeps_what_was_answered(data):
    from airbench_nb.api_client import MissingAPIKeyError

    folder, _, items = data
    out = folder / "r.jsonl"
    model = _KeyMissing()
    with pytest.raises(MissingAPIKeyError):
        run_model(model, items, folder, out, progress=False)
    assert model.calls == 2  # no third call: the loop stopped
    written = read_records(out, Response)
    assert all(r.error is None or r.uid == "gone" for r in written)  # no per-item flood of the fatal error
    assert sum(r.error is None for r in written) == 1


def test_cli_infer_and_judge_stop_on_a_missing_key_with_one_line_and_exit_3(data):
    folder, manifest, items = data
    spec = "openai:m@https://api.example.invalid/v1"
    ran = _cli("infer", "--model", spec, "--manifest", str(manifest), "--out", str(folder / "r.jsonl"))
    assert ran.returncode == 3, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr and ran.stderr.count("error:") == 1 and "stopped:" in ran.stderr
    responses = folder / "responses.jsonl"
    responses.write_text("".join(Response(uid=i.uid, model="m", text="maybe").model_dump_json() + "\n" for i in items))
    judged = _cli(
        "judge", "--judge", spec, "--manifest", str(manifest), "--responses", str(responses),
        "--out", str(folder / "v.jsonl"), "--all",
    )  # fmt: skip
    assert judged.returncode == 3, judged.stdout + judged.stderr
    assert "Traceback" not in judged.stderr and judged.stderr.count("error:") == 1
    verdicts = read_records(folder / "v.jsonl", Verdict) if (folder / "v.jsonl").is_file() else []
    assert not any((v.parse_error or "").startswith("judge call failed") for v in verdicts)


@pytest.fixture(autouse=True)
def _no_openai_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_judge_loop_stops_at_once_on_a_401(tmp_path):
    api_client = pytest.importorskip("airbench_nb.api_client")
    fatal = getattr(api_client, "FatalAPIError", None)
    if fatal is None:
        pytest.skip("airbench_nb.api_client.FatalAPIError is not there yet")
    foundation = _items(6, missing=False)
    responses = [Response(uid=i.uid, model="m", text="it could be anyone") for i in foundation]
    with OpenAITestServer(mode="401") as server, pytest.raises(fatal):
        judge_responses(
            f"openai:judge@{server.base_url}",
            foundation,
            responses,
            tmp_path / "v.jsonl",
            concurrency=1,
            chunk_size=2,
            progress=False,
        )
    assert server.seen.chat_requests <= 2


# ------------------------------------------------------------------------------------------------ CLI exit codes


def test_cli_infer_counts_audio_unreadable_now_as_a_defect_then_heals(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    items = _items(3)
    for item in items[:3]:
        _wav(folder / item.audio)
    (folder / "a1.wav").write_bytes(b"RIFF not really a wav")  # unreadable, but the manifest does not know it
    manifest = write_manifest(folder / "foundation.jsonl", items)
    out = tmp_path / "r.jsonl"
    # the audio is checked as it is at run time (issue 22, item 4): a defect of the data, not a failure (exit 0)
    first = _cli("infer", "--model", "baseline:oracle", "--manifest", str(manifest), "--out", str(out))
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Traceback" not in first.stderr and "data defects" in first.stdout
    assert {r.uid: r for r in read_records(out, Response)}["f1"].error.startswith("audio corrupt: a1.wav")
    _wav(folder / "a1.wav")
    healed = _cli("infer", "--model", "baseline:oracle", "--manifest", str(manifest), "--out", str(out))
    assert healed.returncode == 0, healed.stdout + healed.stderr
    latest = {r.uid: r for r in read_records(out, Response)}
    assert latest["f1"].text == "B" and latest["gone"].error.startswith("audio missing")
    assert len(read_records(out, Response)) == 5  # the error, then its retry; nothing else twice


class JudgeServer(OpenAITestServer):
    """Replies '8 7' to every Chat judge prompt."""

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = super().answer(body)
        reply["choices"][0]["message"]["content"] = "8 7"
        return reply


def _chat(tmp_path: Path) -> tuple[Path, list[ChatItem]]:
    items = [
        ChatItem(
            uid=f"c{i}",
            dataset="d",
            audio="a.wav",
            question=f"Describe clip {i}.",
            task="sound_QA",
            reference=f"REF{i} a dog barks",
            meta_info="A dog barks.",
        )
        for i in range(3)
    ]
    return write_manifest(tmp_path / "chat.jsonl", items), items


def test_cli_judge_exits_1_on_failed_calls_then_retries_only_those(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRBENCH_TEST_JUDGE_KEY", "local-test-key")
    manifest, items = _chat(tmp_path)
    responses = tmp_path / "responses.jsonl"
    responses.write_text("".join(Response(uid=i.uid, model="m", text="a dog").model_dump_json() + "\n" for i in items))
    out = tmp_path / "v.jsonl"
    with JudgeServer() as server:
        server.plan["REF1 a dog"] = [Fault("400")]  # the first attempt of each prompt of c1 (both orders) fails
        args = ["judge", "--judge", f"openai:judge@{server.base_url}", "--manifest", str(manifest)]
        args += ["--responses", str(responses), "--out", str(out), "--api-key-env", "AIRBENCH_TEST_JUDGE_KEY"]
        failed = _cli(*args)
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert "2 of 6 judge calls failed" in failed.stderr and "Traceback" not in failed.stderr
        sent = server.seen.chat_requests
        healed = _cli(*args)
        assert healed.returncode == 0, healed.stdout + healed.stderr
        # only the two failed tasks were sent again (each with the verbatim and the fenced prompt, both of which
        # failed: the marker is in both)
        assert server.seen.chat_requests == sent + 2 * 2
    verdicts = read_records(out, Verdict)
    assert len(verdicts) == 8
    latest = {(v.uid, v.order): v for v in verdicts}
    assert len(latest) == 6 and all(v.parse_error is None and v.score_hypothesis for v in latest.values())


# ------------------------------------------------------------------------------------------------ stale verdicts


def test_a_reinferred_answer_is_rejudged_and_the_stale_verdict_never_scores_it(data):
    folder, _, items = data
    out, verdicts_path = folder / "r.jsonl", folder / "v.jsonl"
    run_model(Scripted({"f0": "B", "f1": "B", "f3": "B"}), items, folder, out, progress=False)  # f0 wrong (gold A)
    first = judge_responses("rule", items, read_records(out, Response), verdicts_path, progress=False)
    assert first.written == 5 and first.stale == 0
    same = judge_responses("rule", items, read_records(out, Response), verdicts_path, progress=False)
    assert same.written == 0 and same.skipped_existing == 5

    # f0 answered again, rightly this time (as a rerun after a retry appends it)
    retry = Response(uid="f0", model="test:scripted", text="A", prompt_hash=read_records(out, Response)[0].prompt_hash)
    with open(out, "a") as handle:
        handle.write(retry.model_dump_json() + "\n")
    responses = read_records(out, Response)
    verdicts = read_records(verdicts_path, Verdict)
    # before re-judging: the old verdict of f0 is stale, so f0 counts as unjudged (a failure), not as wrong
    table = score_run(items, responses, verdicts, protocol="strict", reps=0).strict
    assert table.duplicates == {
        "responses": 1,
        "verdicts": 0,
        "stale_verdicts": 1,
        "why": table.duplicates["why"],
    }
    assert table.foundation.tasks["Speaker_Gender_Recognition"].failures == 1
    frame = load_run(folder.parent, manifest_dir=folder, responses_dir=_layout(folder, out, verdicts_path),
                     verdicts_dir=folder.parent / "verdicts").foundation_frame()  # fmt: skip
    row = frame.set_index("uid").loc["f0"]
    assert bool(row["failed"]) and row["reason"] == "no verdict"

    rejudged = judge_responses("rule", items, responses, verdicts_path, progress=False)
    assert (rejudged.stale, rejudged.written, rejudged.skipped_existing, rejudged.duplicates) == (1, 1, 4, 1)
    verdicts = read_records(verdicts_path, Verdict)
    table = score_run(items, responses, verdicts, protocol="strict", reps=0).strict
    assert table.duplicates["verdicts"] == 1 and table.duplicates["stale_verdicts"] == 0
    assert table.foundation.tasks["Speaker_Gender_Recognition"].accuracy == 1.0
    frame = load_run(folder.parent, manifest_dir=folder, responses_dir=_layout(folder, out, verdicts_path),
                     verdicts_dir=folder.parent / "verdicts").foundation_frame()  # fmt: skip
    assert frame.set_index("uid").loc["f0", "correct"]


def _layout(folder: Path, responses: Path, verdicts: Path) -> Path:
    """Copy a responses and a verdicts file into the run-folder layout load_run reads; returns responses/."""
    answers = folder.parent / "responses" / "test_scripted"
    judged = folder.parent / "verdicts" / "test_scripted"
    answers.mkdir(parents=True, exist_ok=True)
    judged.mkdir(parents=True, exist_ok=True)
    (answers / "foundation.jsonl").write_bytes(responses.read_bytes())
    (judged / "foundation.rule.jsonl").write_bytes(verdicts.read_bytes())
    return folder.parent / "responses"


def test_verdicts_without_a_response_hash_still_count(data):
    folder, _, items = data
    responses = [Response(uid=i.uid, model="m", text="A") for i in items[:4]]
    old = [
        Verdict(uid=i.uid, model="m", judge="rule", choice=0, correct=i.answer == 0, raw="rule: letter")
        for i in items[:4]
    ]
    table = score_run(items, responses, old, protocol="strict", reps=0).strict
    assert table.foundation.tasks["Speaker_Gender_Recognition"].accuracy == 0.5
    assert table.duplicates["stale_verdicts"] == 0
    # the judge loop keeps them too (nothing to re-judge)
    path = folder / "v.jsonl"
    path.write_text("".join(v.model_dump_json() + "\n" for v in old))
    assert judge_responses("rule", items, responses, path, progress=False).skipped_existing == 4


def test_chat_frame_ignores_stale_verdicts(tmp_path):
    manifest, items = _chat(tmp_path)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "chat.jsonl").write_bytes(manifest.read_bytes())
    old = Response(uid="c0", model="m", text="first answer")
    new = Response(uid="c0", model="m", text="second answer")
    (tmp_path / "responses" / "m").mkdir(parents=True)
    (tmp_path / "responses" / "m" / "chat.jsonl").write_text(
        old.model_dump_json() + "\n" + new.model_dump_json() + "\n"
    )
    verdicts = [
        Verdict(uid="c0", model="m", judge="proxy", order=o, score_reference=9, score_hypothesis=3,
                response_hash=old.content_hash())
        for o in ("reference_first", "hypothesis_first")
    ]  # fmt: skip
    (tmp_path / "verdicts" / "m").mkdir(parents=True)
    (tmp_path / "verdicts" / "m" / "chat.proxy.jsonl").write_text("".join(v.model_dump_json() + "\n" for v in verdicts))
    run = load_run(tmp_path)
    assert run.duplicate_responses == 1 and run.resolved_counts() == {"m": {"verdicts": 0, "stale_verdicts": 2}}
    frame = run.chat_frame()
    assert frame.empty or frame["score_model"].isna().all()


# ------------------------------------------------------------------------------------------------ outputs


def test_repair_moves_unreadable_lines_aside_and_drops_only_a_cut_final_line(tmp_path, caplog):
    out = tmp_path / "r.jsonl"
    a, b = (Response(uid=u, model="m", text="A").model_dump_json() for u in "ab")
    out.write_text(f"{a}\nnot json at all\n[1, 2]\n{b}\n" + '{"schema_version": 1, "uid": "c')
    assert repair_jsonl(out) == 3
    assert out.read_text() == f"{a}\n{b}\n"
    assert (tmp_path / "r.jsonl.rejected").read_text() == "not json at all\n[1, 2]\n"
    assert "line 2, 3" in caplog.text and "r.jsonl.rejected" in caplog.text
    out.write_text(f"{a}\n{b}")  # a complete final line without its newline is kept
    assert repair_jsonl(out) == 0 or out.read_text() == f"{a}\n{b}\n"
    assert out.read_text() == f"{a}\n{b}\n"


@pytest.mark.parametrize(
    "content",
    ["my notes\nline two\n", '{"kind": "foundation", "uid": "x"}\n', "", "RIFF\x00\x01binary"],
)
def test_infer_refuses_an_out_that_is_not_a_responses_file(data, tmp_path, content):
    folder, manifest, _ = data
    out = tmp_path / "precious.txt"
    out.write_text(content)
    ran = _cli("infer", "--model", "baseline:oracle", "--manifest", str(manifest), "--out", str(out))
    if not content:  # an empty file holds nothing to destroy: it becomes the responses file
        assert ran.returncode == 0, ran.stderr
        return
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "left untouched" in ran.stderr and "Traceback" not in ran.stderr
    assert out.read_text() == content and not (tmp_path / "precious.txt.rejected").exists()


def test_outputs_may_not_be_inputs(data, tmp_path):
    folder, manifest, items = data
    before = manifest.read_bytes()
    ran = _cli("infer", "--model", "baseline:oracle", "--manifest", str(manifest), "--out", str(manifest))
    assert ran.returncode == 2 and "is also the --manifest input" in ran.stderr
    out = tmp_path / "r.jsonl"
    for official in (out, manifest):
        ran = _cli(
            "infer", "--model", "baseline:oracle", "--manifest", str(manifest), "--out", str(out),
            "--official-out", str(official),
        )  # fmt: skip
        assert ran.returncode == 2 and "--official-out" in ran.stderr, ran.stderr
    assert not out.exists()
    assert _cli("infer", "--model", "baseline:oracle", "--manifest", str(manifest), "--out", str(out)).returncode == 0
    responses = out.read_bytes()
    ran = _cli("judge", "--judge", "rule", "--manifest", str(manifest), "--responses", str(out), "--out", str(out))
    assert ran.returncode == 2 and "is also the --responses input" in ran.stderr
    ran = _cli("judge", "--judge", "rule", "--manifest", str(manifest), "--responses", str(out), "--out", str(manifest))
    assert ran.returncode == 2 and "is also the --manifest input" in ran.stderr
    assert manifest.read_bytes() == before and out.read_bytes() == responses
    # mix: the output may not be a source, nor an existing file that is not a wav
    a, b = folder / "a0.wav", folder / "a1.wav"
    source = a.read_bytes()
    ran = _cli("mix", str(a), str(b), "--out", str(a), "--snr-db", "0")
    assert ran.returncode == 2 and "is also the source A input" in ran.stderr and a.read_bytes() == source
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    ran = _cli("mix", str(a), str(b), "--out", str(notes), "--snr-db", "0")
    assert ran.returncode == 2 and "written as a wav file" in ran.stderr and notes.read_text() == "keep me"


def test_infer_refuses_another_models_file(data):
    folder, manifest, _ = data
    out = folder / "r.jsonl"
    assert _cli("infer", "--model", "baseline:first", "--manifest", str(manifest), "--out", str(out)).returncode == 0
    before = out.read_bytes()
    ran = _cli("infer", "--model", "baseline:oracle", "--manifest", str(manifest), "--out", str(out))
    assert ran.returncode == 2 and "holds responses of 'baseline:first'" in ran.stderr
    assert out.read_bytes() == before


HOLD = textwrap.dedent(
    """
    import sys, time
    from airbench_nb.runner import output_lock
    with output_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(60)
    """
)


def test_a_second_writer_of_the_same_output_is_refused(data, tmp_path):
    folder, manifest, items = data
    out = tmp_path / "r.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        ran = _cli("infer", "--model", "baseline:oracle", "--manifest", str(manifest), "--out", str(out))
        assert ran.returncode == 2, ran.stdout + ran.stderr
        assert f"pid {holder.pid}" in ran.stderr and "being written" in ran.stderr
        assert not out.exists()
        with pytest.raises(OutputLockedError):
            judge_responses("rule", items, [], out, progress=False)
    finally:
        holder.kill()
        holder.wait()
    run_model(load_model("baseline:oracle"), items, folder, out, progress=False)  # free again once it is gone
    assert len(read_records(out, Response)) == 5


def test_the_lock_is_reentrant_within_a_process_and_released(tmp_path):
    out = tmp_path / "r.jsonl"
    with output_lock(out), output_lock(out):
        pass
    with open(tmp_path / "r.jsonl.lock") as handle:  # released: another open file description can take it
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_output_errors_are_value_errors_so_the_cli_exits_2():
    assert issubclass(OutputLockedError, OutputError) and issubclass(OutputError, ValueError)


def test_stage_failure_helpers_name_what_failed_on_every_item():
    from airbench_nb.judge.run import judges_failing_every_call
    from airbench_nb.runner import models_failing_every_item

    runs = [
        {"model": "dead", "answered": 0, "failed": 2, "error_kinds": {"backend": 2, "audio missing": 1}},
        {"model": "dead", "answered": 0, "failed": 1, "error_kinds": {"audio unreadable": 1}},
        {"model": "half", "answered": 3, "failed": 3, "error_kinds": {"backend": 3}},
        {"model": "fine", "answered": 0, "failed": 0, "error_kinds": {}},  # resumed: nothing left to do
        # resumed: the one item that failed before failed again, the other 259 answers are kept from before
        {"model": "kept", "answered": 0, "skipped_existing": 259, "failed": 1, "error_kinds": {"backend": 1}},
    ]
    assert models_failing_every_item(runs) == ["dead: 3 items ended in error (backend: 2, audio unreadable: 1)"]
    rows = [
        {"judge": "openai:j", "asked": 4, "errors": 4},
        {"judge": "openai:j", "asked": 2, "errors": 2},
        {"judge": "openai:k", "asked": 4, "errors": 1},
        {"judge": "rule", "asked": 0, "errors": 0},
    ]
    assert judges_failing_every_call(rows) == ["openai:j: 6 of 6 judge calls failed"]
