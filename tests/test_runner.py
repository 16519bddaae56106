"""The resumable runner and the offline baselines."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import Counter

import pytest

from airbench_nb.manifests import read_manifest, read_records
from airbench_nb.models import SpecError, load_model, parse_spec
from airbench_nb.models.base import Generation
from airbench_nb.models.baselines import CANNOT_TELL
from airbench_nb.official import write_official_results
from airbench_nb.prompts import PromptSet, foundation_prompt
from airbench_nb.records import FoundationItem, Response
from airbench_nb.runner import OutputError, repair_jsonl, run_model


def _foundation(imported):
    root, out, report, _ = imported
    return root, read_manifest(out / "foundation.jsonl")


def test_oracle_answers_gold_and_bad_audio_becomes_error(imported, tmp_path):
    root, items = _foundation(imported)
    summary = run_model(load_model("baseline:oracle"), items, root, tmp_path / "r.jsonl", progress=False)
    responses = {r.uid: r for r in read_records(tmp_path / "r.jsonl", Response)}
    assert set(responses) == {i.uid for i in items}
    errors = {uid: r.error for uid, r in responses.items() if r.error}
    assert sorted(e.split(":")[0] for e in errors.values()) == ["audio corrupt", "audio empty", "audio missing"]
    for item in items:
        r = responses[item.uid]
        assert r.model == "baseline:oracle" and r.prompt_hash and len(r.prompt_hash) == 64
        if r.error is None:
            assert r.text == item.answer_letter and r.latency_s is not None
    assert (summary.answered, summary.errors, summary.skipped_existing) == (6, 3, 0)
    assert summary.error_kinds == {"audio missing": 1, "audio empty": 1, "audio corrupt": 1}


def test_rerun_skips_finished_and_never_duplicates(imported, tmp_path):
    root, items = _foundation(imported)
    out = tmp_path / "r.jsonl"
    first = run_model(load_model("baseline:first"), items, root, out, limit=4, progress=False)
    assert first.total == 4
    second = run_model(load_model("baseline:first"), items, root, out, progress=False)
    assert second.skipped_existing == 4 and second.answered + second.errors == len(items) - 4
    third = run_model(load_model("baseline:first"), items, root, out, progress=False)
    assert third.answered == third.errors == 0 and third.skipped_existing == len(items)
    uids = [r.uid for r in read_records(out, Response)]
    assert sorted(uids) == sorted(i.uid for i in items) and len(uids) == len(set(uids))


def test_random_baseline_is_seeded_and_order_free(imported, tmp_path):
    root, items = _foundation(imported)
    a = run_model(load_model("baseline:random", seed=3), items, root, tmp_path / "a.jsonl", progress=False)
    run_model(load_model("baseline:random", seed=3), items[::-1], root, tmp_path / "b.jsonl", progress=False)
    run_model(load_model("baseline:random", seed=4), items, root, tmp_path / "c.jsonl", progress=False)
    text = {name: {r.uid: r.text for r in read_records(tmp_path / f"{name}.jsonl", Response)} for name in "abc"}
    assert text["a"] == text["b"] and a.answered == 6
    assert all(t in (None, "A", "B", "C", "D") for t in text["a"].values())


class _Exploding:
    spec = "test:exploding"
    batch_size = 2

    def __init__(self):
        self.calls = 0

    def generate(self, prompts, params):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("device fell over")
        return [
            Generation(text="B", input_tokens=5, output_tokens=1) if i % 2 else Generation(error="refused")
            for i, _ in enumerate(prompts)
        ]

    def close(self):
        pass


def test_backend_failures_are_per_batch_and_per_item(imported, tmp_path):
    root, items = _foundation(imported)
    good = [i for i in items if i.audio_status.value == "ok"]
    summary = run_model(_Exploding(), good, root, tmp_path / "r.jsonl", progress=False)
    responses = read_records(tmp_path / "r.jsonl", Response)
    assert len(responses) == len(good)
    kinds = Counter(
        (r.error or "ok").split(":")[0] + ("" if r.error is None else ":" + r.error.split(":")[1]) for r in responses
    )
    assert kinds["backend: RuntimeError"] == 2  # the first batch of two
    assert summary.errors + summary.answered == len(good) and summary.answered >= 1
    assert any(r.text == "B" and r.input_tokens == 5 for r in responses)


def test_repair_drops_a_cut_line(tmp_path):
    out = tmp_path / "r.jsonl"
    ok = Response(uid="a", model="m", text="A").model_dump_json()
    out.write_text(ok + "\n" + ok.replace('"a"', '"b"')[:25])
    assert repair_jsonl(out) == 1
    assert out.read_text() == ok + "\n"
    assert repair_jsonl(out) == 0


SLOW_RUN = textwrap.dedent(
    """
    import sys, time
    from airbench_nb.manifests import read_manifest, data_root
    from airbench_nb.models.base import Generation
    from airbench_nb.runner import run_model

    class Slow:
        spec = "test:slow"
        batch_size = 1
        def generate(self, prompts, params):
            time.sleep(0.4)
            return [Generation(text="A") for _ in prompts]
        def close(self):
            pass

    manifest = sys.argv[1]
    run_model(Slow(), read_manifest(manifest), data_root(manifest), sys.argv[2], progress=False)
    """
)


class _Fast:
    """The killed run's model, resumed: same spec, records which items it is asked for."""

    spec = "test:slow"
    batch_size = 4

    def __init__(self):
        self.asked: list[str] = []

    def generate(self, prompts, params):
        self.asked += [p.uid for p in prompts]
        return [Generation(text="B") for _ in prompts]

    def close(self):
        pass


def test_killed_run_resumes_with_one_response_per_uid(imported, tmp_path):
    root, out_dir, _, _ = imported
    manifest = out_dir / "foundation.jsonl"
    results = tmp_path / "r.jsonl"
    script = tmp_path / "slow.py"
    script.write_text(SLOW_RUN)
    proc = subprocess.Popen([sys.executable, str(script), str(manifest), str(results)])
    deadline = time.time() + 60
    while time.time() < deadline:
        if results.is_file() and results.read_text().count("\n") >= 5:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    before = results.read_text().count("\n")
    assert 5 <= before < 9, "the run was to be killed part-way"
    written = results.read_bytes()
    with open(results, "a") as handle:  # what a kill in the middle of a write leaves
        handle.write('{"schema_version": 1, "uid": "foundation-1')
    cut = results.read_bytes()
    # another model is refused (never skipped, never mixed in), and the file is left as it was
    with pytest.raises(OutputError, match="holds responses of 'test:slow'"):
        run_model(load_model("baseline:oracle"), read_manifest(manifest), root, results, progress=False)
    assert results.read_bytes() == cut
    model = _Fast()
    summary = run_model(model, read_manifest(manifest), root, results, progress=False)
    assert summary.repaired_lines == 1 and summary.skipped_existing == before and summary.duplicates == 0
    assert results.read_bytes().startswith(written)  # only appended after the cut line was dropped
    responses = read_records(results, Response)
    uids = [r.uid for r in responses]
    assert len(uids) == len(set(uids)) == 9
    done_before = {r.uid for r in read_records_bytes(written)}
    assert not set(model.asked) & done_before and set(uids) == done_before | {r.uid for r in responses[before:]}


def read_records_bytes(raw: bytes) -> list[Response]:
    return [Response.model_validate_json(line) for line in raw.splitlines() if line.strip()]


def test_dsp_baseline_measures_what_it_can(tmp_path):
    from airbench_nb.builders import build

    report = build(
        "tiny",
        out=tmp_path / "d",
        progress=False,
        tasks=[
            "Music_Midi_Pitch_Analysis",
            "Speaker_Gender_Recognition",
            "Speaker_Number_Verification",
            "Music_Midi_Velocity_Analysis",
            "Sound_AQA",
            "Spoken_Language_Identification",
        ],
    )
    run_model(load_model("baseline:dsp"), report.foundation, tmp_path / "d", tmp_path / "r.jsonl", progress=False)
    responses = {r.uid: r for r in read_records(tmp_path / "r.jsonl", Response)}
    for item in report.foundation:
        text = responses[item.uid].text
        if item.task == "Spoken_Language_Identification":
            assert text == CANNOT_TELL
        elif item.task == "Sound_AQA" and item.meta["subtask"] == "order":
            assert text == CANNOT_TELL
        else:
            assert text == item.answer_letter, (item.uid, text, item.choices, item.answer)


def test_prompts_follow_airbench_and_only_existing_options():
    item = FoundationItem(
        uid="u",
        dataset="d",
        audio="a.wav",
        question="Is it male?",
        task="Speaker_Gender_Recognition",
        choices=["male", "female"],
        answer=0,
    )
    text = foundation_prompt(item)
    assert text == (
        "Choose the most suitable answer from options A and B to respond the question in next line, "
        "you may only choose A or B.\nIs it male?\nA. male\nB. female"
    )
    four = item.model_copy(update={"choices": ["a", "b", "c", "d"]})
    assert "options A, B, C, and D" in foundation_prompt(four) and "D. d" in foundation_prompt(four)
    assert "Answer: X" in foundation_prompt(item, PromptSet.named("cot"))
    official = foundation_prompt(item, PromptSet.named("official"))
    assert official == (
        "Choose the most suitable answer from options A, B, C, and D to respond the question in next "
        "line, you may only choose A or B or C or D.\nIs it male?\nA. male\nB. female\nC. None\nD. None"
    )


def test_prompt_template_file(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"chat_template": "Q: {question}"}))
    assert PromptSet.named(str(path)).name == "mine"
    path.write_text(json.dumps({"colour": "x"}))
    with pytest.raises(ValueError, match="unknown key"):
        PromptSet.named(str(path))
    with pytest.raises(ValueError, match="unknown prompt set"):
        PromptSet.named("nope")


def test_spec_errors():
    assert parse_spec("openai:gpt-4o-audio-preview@http://127.0.0.1:8000/v1") == (
        "openai",
        "gpt-4o-audio-preview@http://127.0.0.1:8000/v1",
    )
    for bad in ("qwen", "hf:", "torch:x", "baseline:"):
        with pytest.raises(SpecError, match="not understood"):
            parse_spec(bad)
    with pytest.raises(ValueError, match="unknown baseline"):
        load_model("baseline:smart")


def test_official_result_format(imported, tmp_path):
    root, out, report, _ = imported
    items = [*read_manifest(out / "foundation.jsonl"), *read_manifest(out / "chat.jsonl")]
    path = write_official_results(items, {i.uid: "A" for i in items[:3]} | {items[-1].uid: None}, tmp_path / "o.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 4
    first = rows[0]
    assert first == {
        "path": "pitch_69.wav",
        "question": "What is the MIDI pitch of the note?",
        "choice_a": "67",
        "choice_b": "68",
        "choice_c": "69",
        "choice_d": "70",
        "answer_gt": "69",
        "task_name": "Music_Midi_Pitch_Analysis",
        "dataset_name": "nsynth",
        "uniq_id": 101,
        "response": "A",
    }
    assert "choice_c" not in rows[1]  # binary item
    assert rows[-1]["meta_info"] and rows[-1]["response"] == "" and rows[-1]["path"] == "beeps.mp3"
