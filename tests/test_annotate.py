"""Annotation: the stratified sample, the label-file state machine (resume, undo, skip, a killed process), the tool
driven without a browser, the CLI, and notebook 06 under papermill with and without labels."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import nbformat
import papermill
import pytest
from typer.testing import CliRunner

from airbench_nb.annotate import (
    AnnotationSession,
    AnnotationTool,
    LabelFileError,
    allocate,
    draw_sample,
    how_to_start,
    key_action,
    label_file,
    labels_summary,
    pair_html,
    read_label_file,
    read_sample,
    sample_annotation,
    sample_frame,
    write_sample,
)
from airbench_nb.cli import app
from airbench_nb.manifests import read_manifest, read_records, write_manifest, write_records
from airbench_nb.nbresults import read_results
from airbench_nb.pipeline import PIPELINE, run_pipeline
from airbench_nb.records import AnnotationPair, AudioStatus, Label, Response
from airbench_nb.runner import model_slug
from tests.planted_run import write_planted_run

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "notebooks" / "06_annotate.ipynb"
STATED = re.compile(r"([ABCD])\.?\s*$")


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    return write_planted_run(
        tmp_path_factory.mktemp("annotate") / "run", per_task=8, chat_per_task=3, snr_items=3, rotated_per_task=2
    )


@pytest.fixture
def run_copy(planted: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(planted, tmp_path / "run"))


def _stated(pair: AnnotationPair) -> int:
    return "ABCD".index(STATED.search(pair.response or "").group(1))


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# ------------------------------------------------------------------------------------------------------ sampling


def test_allocate_spreads_equally_and_hands_on_what_small_strata_cannot_take():
    assert allocate({"a": 10, "b": 10, "c": 10}, 9) == {"a": 3, "b": 3, "c": 3}
    assert allocate({"a": 1, "b": 10, "c": 10}, 9) == {"a": 1, "b": 4, "c": 4}
    assert allocate({"a": 2, "b": 3}, 50) == {"a": 2, "b": 3}
    ten = allocate({"a": 10, "b": 10, "c": 10}, 10, seed=3)
    assert sorted(ten.values()) == [3, 3, 4] and sum(ten.values()) == 10
    assert allocate({"a": 10, "b": 10, "c": 10}, 10, seed=3) == ten


def test_sample_is_reproducible_by_seed_and_blind_to_file_order(planted: Path, run_copy: Path):
    first = draw_sample(planted, 12, seed=7)
    again = draw_sample(planted, 12, seed=7)
    assert [p.model_dump() for p in first.pairs] == [p.model_dump() for p in again.pairs]
    other = draw_sample(planted, 12, seed=8)
    assert {p.pair_id for p in other.pairs} != {p.pair_id for p in first.pairs}
    # the order of the records in the run's files does not matter
    for path in (run_copy / "responses").rglob("*.jsonl"):
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(reversed(lines)))
    shuffled = draw_sample(run_copy, 12, seed=7)
    assert [(p.pair_id, p.stratum) for p in shuffled.pairs] == [(p.pair_id, p.stratum) for p in first.pairs]


def test_sample_is_stratified_by_category_and_by_task(planted: Path):
    by_category = draw_sample(planted, 10, stratify="category", seed=1)
    counts = Counter(p.stratum for p in by_category.pairs)
    assert set(counts) == {"speech", "sound", "music"} and sum(counts.values()) == 10
    assert max(counts.values()) - min(counts.values()) <= 1
    assert all(p.stratum == p.category for p in by_category.pairs)
    assert {s: c["sampled"] for s, c in by_category.strata.items()} == dict(counts)
    by_task = draw_sample(planted, 10, stratify="task", seed=1)
    assert Counter(p.stratum for p in by_task.pairs) == Counter({t: 2 for t in {p.task for p in by_task.pairs}})
    assert len({p.task for p in by_task.pairs}) == 5
    # the strata are interleaved in the order shown, not in blocks
    strata = [p.stratum for p in by_task.pairs]
    assert strata != sorted(strata)


def test_sample_leaves_out_copies_bad_audio_and_missing_or_failed_answers(run_copy: Path):
    manifest = run_copy / "data" / "foundation.jsonl"
    items = read_manifest(manifest)
    clean = [i for i in items if "@" not in i.uid]
    broken = clean[0].uid
    items = [i.model_copy(update={"audio_status": AudioStatus.missing}) if i.uid == broken else i for i in items]
    write_manifest(manifest, items)
    slug = model_slug("planted:uniform")
    answers = run_copy / "responses" / slug / "foundation.jsonl"
    latest = read_records(answers, Response)
    latest += [
        Response(uid=clean[1].uid, model="planted:uniform", text=None, error="timeout"),
        Response(uid=clean[2].uid, model="planted:uniform", text="   "),
    ]
    write_records(answers, latest)
    report = draw_sample(run_copy, 1000, seed=0)
    graded = sum(1 for i in items if i.meta.get("clean_uid"))
    rotated = sum(1 for i in items if i.meta.get("rotation_of"))
    assert report.excluded == {
        "audio_not_ok": 1,
        "graded_copies": graded,
        "rotated_copies": rotated,
        "perturbed_copies": 0,
        "multi_clip_or_multi_turn": 0,
        "no_response": 0,
        "error_or_empty_response": 2,
    }
    assert report.population == len(report.pairs) == (len(clean) - 1) * 3 - 2
    uids = {p.uid for p in report.pairs}
    assert broken not in uids and not any("@" in u for u in uids)
    assert f"planted:uniform|{clean[1].uid}" not in {p.pair_id for p in report.pairs}


def test_chat_pairs_are_blind_with_the_order_recorded(planted: Path):
    report = draw_sample(planted, 16, kind="chat", stratify="task", seed=3)
    items = {i.uid: i for i in read_manifest(planted / "data" / "chat.jsonl")}
    responses = {
        model: {r.uid: r.text for r in read_records(planted / "responses" / model_slug(model) / "chat.jsonl", Response)}
        for model in {p.model for p in report.pairs}
    }
    orders = Counter(p.model_answer for p in report.pairs)
    assert set(orders) == {1, 2} and abs(orders[1] - orders[2]) <= 1
    for pair in report.pairs:
        assert pair.kind == "chat" and pair.response is None and pair.choices == []
        assert pair.answers[pair.model_answer - 1] == responses[pair.model][pair.uid]
        assert pair.answers[2 - pair.model_answer] == items[pair.uid].reference
        assert set(pair.judge_verdicts) == {"planted-judge", "fair-judge"}
        assert set(pair.judge_verdicts["fair-judge"]) == {"reference_first", "hypothesis_first"}
        assert not pair.show_judge
        shown = pair_html(pair, 1, len(report.pairs))
        for answer in pair.answers:
            shown = shown.replace(answer, "")
        assert pair.model not in shown and "planted-judge" not in shown and "reference" not in shown.lower()
    again = draw_sample(planted, 16, kind="chat", stratify="task", seed=3)
    assert [p.model_answer for p in again.pairs] == [p.model_answer for p in report.pairs]
    assert "model" not in sample_frame(report.pairs).columns
    judged = draw_sample(planted, 4, kind="chat", seed=3, show_judge=True)
    assert all("fair-judge" in pair_html(p, 1, 4) for p in judged.pairs)


def test_sample_file_round_trip_and_refusals(planted: Path, tmp_path: Path):
    out = tmp_path / "s.jsonl"
    report = sample_annotation(planted, out, 6, seed=2)
    assert report.path == out and [p.pair_id for p in read_sample(out)] == [p.pair_id for p in report.pairs]
    sample_annotation(planted, out, 6, seed=2)  # the same sample again: allowed, unchanged
    with pytest.raises(FileExistsError, match="different sample"):
        sample_annotation(planted, out, 6, seed=3)
    with pytest.raises(ValueError, match="duplicate"):
        write_sample(tmp_path / "d.jsonl", [report.pairs[0], report.pairs[0]])
    bad = tmp_path / "bad.jsonl"
    line = json.loads(out.read_text().splitlines()[0])
    bad.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:2.*duplicate pair_id"):
        read_sample(bad)
    with pytest.raises(ValueError, match="kind"):
        draw_sample(planted, 5, kind="both")
    with pytest.raises(ValueError, match="n must be"):
        draw_sample(planted, 0)


def test_cli_sample_annotation(planted: Path, tmp_path: Path):
    runner = CliRunner()
    out = tmp_path / "sample.jsonl"
    args = ["sample-annotation", str(planted), "--n", "9", "--out", str(out)]
    result = runner.invoke(app, [*args, "--kind", "chat", "--stratify", "task", "--seed", "4", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed["sampled"] == 9 and printed["kind"] == "chat" and printed["stratify"] == "task"
    assert len(read_sample(out)) == 9
    again = runner.invoke(app, [*args, "--kind", "chat", "--stratify", "task", "--seed", "5"])
    assert again.exit_code == 2 and "different sample" in again.output
    judged = tmp_path / "judged.jsonl"
    shown = runner.invoke(app, ["sample-annotation", str(planted), "--n", "3", "--out", str(judged), "--show-judge"])
    assert shown.exit_code == 0 and "pairs per category" in shown.output
    assert all(p.show_judge and p.kind == "foundation" for p in read_sample(judged))
    assert runner.invoke(app, [*args, "--kind", "both"]).exit_code == 2
    assert runner.invoke(app, [*args, "--stratify", "model"]).exit_code == 2
    assert (
        runner.invoke(app, ["sample-annotation", str(tmp_path / "nope"), "--n", "3", "--out", str(out)]).exit_code == 2
    )
    assert runner.invoke(app, ["sample-annotation", str(planted), "--n", "0", "--out", str(out)]).exit_code == 2


# ------------------------------------------------------------------------------------------- the state machine


@pytest.fixture(scope="module")
def pairs(planted: Path) -> list[AnnotationPair]:
    return draw_sample(planted, 5, seed=11).pairs


def test_session_labels_resumes_and_is_done(pairs, tmp_path: Path):
    path = tmp_path / "labels.jsonl"
    clock = FakeClock()
    session = AnnotationSession(pairs, path, "alice", clock=clock)
    assert session.index == 0 and session.progress == (0, 5) and not path.exists()
    clock.now += 4.5
    first = session.label(choice=_stated(pairs[0]), comment="  clear  ")
    assert first.seconds == 4.5 and first.comment == "clear" and session.index == 1
    session.label(unclear=True)
    assert session.progress == (2, 5)
    resumed = AnnotationSession(pairs, path, "alice")
    assert resumed.index == 2 and resumed.labels == session.labels
    for _ in range(3):
        resumed.label(choice=0)
    assert resumed.done and resumed.current is None and resumed.progress == (5, 5)
    with pytest.raises(RuntimeError, match="every pair is labelled"):
        resumed.label(choice=0)
    assert AnnotationSession(pairs, path, "alice").done
    records = read_label_file(path)
    assert len(records) == 5 and [r.pair_id for r in records] == [p.pair_id for p in pairs]
    assert records[1].unclear and records[1].choice is None


def test_session_skip_comes_back_after_the_others(pairs, tmp_path: Path):
    path = tmp_path / "labels.jsonl"
    session = AnnotationSession(pairs, path, "bob")
    session.skip(comment="noisy")
    assert session.index == 1 and session.skipped == {pairs[0].pair_id}
    session.label(choice=0)
    # reopening resumes at the first pair neither labelled nor skipped
    session = AnnotationSession(pairs, path, "bob")
    assert session.index == 2
    for _ in range(3):
        session.label(choice=1)
    assert session.index == 0  # only the skipped pair is left
    session.skip()
    assert session.index == 0  # skipping the last one shows it again
    session.label(unclear=True)
    assert session.done and session.skipped == set()
    summary = labels_summary(path, pairs)
    assert summary["labelled"] == 5 and summary["skipped"] == 0 and summary["actions"] == 7


def test_session_undo_retracts_the_latest_label_and_replays(pairs, tmp_path: Path):
    path = tmp_path / "labels.jsonl"
    session = AnnotationSession(pairs, path, "carol")
    assert session.undo() is None and not path.exists()
    session.label(choice=0)
    session.label(choice=1)
    undone = session.undo()
    assert undone.action == "undo" and undone.pair_id == pairs[1].pair_id
    assert session.index == 1 and session.label_of(pairs[1].pair_id) is None
    assert session.label_of(pairs[0].pair_id).choice == 0
    session.undo()
    assert session.index == 0 and session.progress == (0, 5)
    session.label(unclear=True)
    session.label(choice=1)
    session.label(choice=0)
    # relabel a pair after undoing twice: the latest label not undone wins
    session.undo()
    session.label(choice=1)
    replayed = AnnotationSession(pairs, path, "carol")
    assert replayed.labels == session.labels and replayed.index == session.index == 3
    assert {pid: (lab.choice, lab.unclear) for pid, lab in replayed.labels.items()} == {
        pairs[0].pair_id: (None, True),
        pairs[1].pair_id: (1, False),
        pairs[2].pair_id: (1, False),
    }
    actions = [r.action for r in read_label_file(path)]
    assert actions == ["label", "label", "undo", "undo", "label", "label", "label", "undo", "label"]


def test_session_agrees_with_the_agreement_module_reading(pairs, tmp_path: Path):
    agreement = pytest.importorskip("airbench_nb.analysis.agreement", reason="the agreement module is not installed")
    path = tmp_path / "labels.jsonl"
    session = AnnotationSession(pairs, path, "dan")
    session.label(choice=0)
    session.skip()
    session.label(choice=1)
    session.undo()
    session.label(unclear=True)
    session.undo()
    session.undo()
    session.label(choice=0)
    actions, sources = agreement.read_labels([path])
    frame = agreement.resolve_labels(actions, pairs, sources)
    theirs = {row.pair_id: row.label for row in frame.itertuples()}
    ours = {pid: "unclear" if lab.unclear else "ABCD"[lab.choice] for pid, lab in session.labels.items()}
    assert theirs == ours and len(ours) == 1


def test_session_refuses_labels_that_do_not_fit(pairs, planted: Path, tmp_path: Path):
    path = tmp_path / "labels.jsonl"
    session = AnnotationSession(pairs, path, "erin")
    for bad in (
        {},
        {"choice": 0, "unclear": True},
        {"choice": len(pairs[0].choices)},
        {"preference": "1"},
        {"choice": 0, "score_1": 5},
    ):
        with pytest.raises(ValueError):
            session.label(**bad)
    assert not path.exists()
    chat = draw_sample(planted, 2, kind="chat", seed=0).pairs
    chat_session = AnnotationSession(chat, tmp_path / "chat.jsonl", "erin")
    for bad in ({"choice": 0}, {"unclear": True}, {"preference": "3"}, {"preference": "1", "score_2": 11}):
        with pytest.raises(ValueError):
            chat_session.label(**bad)
    written = chat_session.label(preference="tie", score_1=7, score_2=7)
    assert written.preference == "tie" and written.score_1 == 7.0
    with pytest.raises(ValueError, match="annotator id"):
        AnnotationSession(pairs, tmp_path / "x.jsonl", "../evil")
    with pytest.raises(ValueError, match="no pairs"):
        AnnotationSession([], tmp_path / "x.jsonl", "erin")


def test_label_file_of_another_annotator_or_sample_is_refused(pairs, tmp_path: Path):
    path = tmp_path / "labels.jsonl"
    AnnotationSession(pairs, path, "frank").label(choice=0)
    with pytest.raises(LabelFileError, match="labels of 'frank'"):
        AnnotationSession(pairs, path, "grace")
    with pytest.raises(LabelFileError, match="not in the sample"):
        AnnotationSession(pairs[1:], path, "frank")
    assert label_file(tmp_path / "s.jsonl", "grace") == tmp_path / "s.grace.labels.jsonl"


def test_a_final_line_cut_short_is_dropped_and_the_file_repaired(pairs, tmp_path: Path):
    path = tmp_path / "labels.jsonl"
    session = AnnotationSession(pairs, path, "heidi")
    session.label(choice=0)
    session.label(choice=1)
    with open(path, "a") as handle:
        handle.write('{"schema_version": 1, "pair_id": "pla')  # a crash in the middle of a write
    assert len(read_label_file(path)) == 2 and not path.read_text().endswith("\n")
    resumed = AnnotationSession(pairs, path, "heidi")
    assert resumed.index == 2 and path.read_text().endswith("\n")
    resumed.label(choice=0)
    assert [r.pair_id for r in read_label_file(path)] == [p.pair_id for p in pairs[:3]]
    path.write_text(path.read_text() + "not json\n")
    with pytest.raises(ValueError, match=r"labels.jsonl:4"):
        read_label_file(path)


def test_two_sessions_on_one_file_replay_each_other(pairs, tmp_path: Path):
    path = tmp_path / "labels.jsonl"
    tab_1 = AnnotationSession(pairs, path, "ivan")
    tab_2 = AnnotationSession(pairs, path, "ivan")
    tab_1.label(choice=0)
    tab_2.label(choice=1)  # tab 2 sees tab 1's label first, then labels the next pair
    assert [r.pair_id for r in read_label_file(path)] == [pairs[0].pair_id, pairs[1].pair_id]
    assert tab_2.progress == (2, 5) and tab_2.index == 2


CHILD = """
import sys, time
from airbench_nb.annotate import AnnotationSession, read_sample
pairs = read_sample(sys.argv[1])
session = AnnotationSession(pairs, sys.argv[2], "kim")
pause = float(sys.argv[3])
while not session.done:
    written = session.label(choice=session.index % 2)
    print(written.pair_id, flush=True)
    time.sleep(pause)
print("DONE", flush=True)
"""


@pytest.mark.parametrize("pause", [0.05, 0.0])
def test_a_killed_labelling_process_loses_and_duplicates_nothing(planted: Path, tmp_path: Path, pause: float):
    """Killed between labels (with a pause) or anywhere, even mid-write (without): resumed with nothing lost."""
    sample = tmp_path / "sample.jsonl"
    pairs = sample_annotation(planted, sample, 40 if pause else 120, seed=5).pairs
    labels = tmp_path / "kim.labels.jsonl"
    acknowledged: list[str] = []
    for _round in range(2):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(sample), str(labels), str(pause)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        wanted = len(acknowledged) + 6
        while len(acknowledged) < wanted:
            line = child.stdout.readline().strip()
            assert line and line != "DONE", "the child finished before it was killed"
            acknowledged.append(line)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
        assert child.returncode == -signal.SIGKILL
        records = read_label_file(labels)
        written = [r.pair_id for r in records]
        assert written[: len(acknowledged)] == acknowledged  # every acknowledged label is on disk, in order
        assert len(written) == len(set(written))  # none twice
        resumed = AnnotationSession(pairs, labels, "kim")
        assert resumed.progress == (len(written), len(pairs))
        assert resumed.index == len(written)  # the first unlabelled pair
        acknowledged = written
    while not resumed.done:
        resumed.label(choice=resumed.index % 2)
    final = read_label_file(labels)
    assert [r.pair_id for r in final] == [p.pair_id for p in pairs]
    assert [r.choice for r in final] == [k % 2 for k in range(len(pairs))]


# ------------------------------------------------------------------------------------------------- keys and tool


def test_keys_map_to_actions(pairs, planted: Path):
    foundation = pairs[0].model_copy(update={"choices": ["x", "y"]})
    assert key_action(foundation, "a") == ("label", {"choice": 0})
    assert key_action(foundation, "B") == ("label", {"choice": 1})
    assert key_action(foundation, "c") is None  # past the options
    assert key_action(foundation, "x") == ("label", {"unclear": True})
    assert key_action(foundation, "1") is None
    assert key_action(foundation, "n") == ("skip", {})
    assert key_action(foundation, "U") == ("undo", {})
    chat = draw_sample(planted, 1, kind="chat").pairs[0]
    assert key_action(chat, "1") == ("label", {"preference": "1"})
    assert key_action(chat, "T") == ("label", {"preference": "tie"})
    assert key_action(chat, "a") is None
    assert key_action(None, "a") is None and key_action(None, "u") == ("undo", {})


def test_tool_driven_by_keys_and_buttons(planted: Path, tmp_path: Path):
    sample = tmp_path / "mixed.jsonl"
    foundation = draw_sample(planted, 2, seed=1).pairs
    chat = draw_sample(planted, 1, kind="chat", seed=1).pairs
    write_sample(sample, foundation + chat)
    pairs = read_sample(sample)
    tool = AnnotationTool(pairs, sample=sample, show_audio=False)
    assert tool.session is None and tool.press("a") is None and "annotator id" in tool.status
    tool.controls["annotator"].value = "../x"
    tool.controls["start"].click()
    assert tool.session is None and "not usable" in tool.status
    tool.controls["annotator"].value = "lee"
    tool.controls["start"].click()
    c = tool.controls
    assert tool.session.path == tmp_path / "mixed.lee.labels.jsonl" and c["annotator"].disabled
    assert "pair 1 of 3" in c["pair"].value and tool.chat_row.layout.display == "none"
    c["comment"].value = "first one"
    c["options"][1].click()  # the mouse: B
    assert c["progress"].value == 1 and c["comment"].value == "" and "labelled B" in tool.status
    assert tool.press("Control") is None and tool.press("z") is None
    tool._on_key({"key": "a", "ctrlKey": True})  # a shortcut with Ctrl is not ours
    tool._on_key({"key": "a", "repeat": True})  # nor a key held down
    assert c["progress"].value == 1
    assert tool.press("x") == "label"  # the keyboard: none / unclear
    assert "pair 3 of 3" in c["pair"].value and tool.foundation_row.layout.display == "none"
    assert "Answer 1" in c["pair"].value and "Answer 2" in c["pair"].value
    c["score_1"].value, c["score_2"].value = 8, 3
    tool.press("1")
    assert "done" in c["count"].value and c["skip"].disabled and c["score_1"].value is None
    assert "airbench-annotate-done" in c["pair"].value
    tool.press("u")
    assert "pair 3 of 3" in c["pair"].value and c["progress"].value == 2
    c["tie"].click()
    labels = tool.session.labels
    assert [(lab.choice, lab.unclear, lab.preference) for lab in labels.values()] == [
        (1, False, None),
        (None, True, None),
        (None, False, "tie"),
    ]
    records = read_label_file(tool.session.path)
    assert [r.action for r in records] == ["label", "label", "label", "undo", "label"]
    assert records[0].comment == "first one" and (records[2].score_1, records[2].score_2) == (8.0, 3.0)
    # reopening shows the tool done
    reopened = AnnotationTool(pairs, sample=sample, annotator="lee", show_audio=False)
    assert reopened.session.done and "done" in reopened.controls["count"].value


def test_tool_takes_one_action_at_a_time_from_two_threads(planted: Path, tmp_path: Path):
    """JupyterLab may deliver a click and a key press to two kernel threads: every press labels its own pair."""
    pairs = draw_sample(planted, 40, seed=4).pairs
    tool = AnnotationTool(pairs, labels_path=tmp_path / "l.jsonl", annotator="nia", show_audio=False)
    barrier = threading.Barrier(4)

    def press_many() -> None:
        barrier.wait()
        for _ in range(10):
            tool.press("a")

    threads = [threading.Thread(target=press_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    records = read_label_file(tool.session.path)
    assert sorted(r.pair_id for r in records) == sorted(p.pair_id for p in pairs)
    assert tool.session.done and tool.controls["progress"].value == 40


def test_how_to_start_names_the_sample_and_found_label_files(planted: Path, tmp_path: Path):
    sample = tmp_path / "s.jsonl"
    pairs = sample_annotation(planted, sample, 3).pairs
    AnnotationSession(pairs, label_file(sample, "zoe"), "zoe").label(choice=0)
    text = how_to_start(sample)
    assert str(sample) in text and "s.zoe.labels.jsonl" in text and "annotator" in text
    assert "sample-annotation RUN" in how_to_start(None)


# ------------------------------------------------------------------------------------------------- notebook 06


def _two_annotators(sample: Path) -> list[str]:
    """h1 labels the option each answer states; h2 too, except the first pair (the next option)."""
    pairs = read_sample(sample)
    files = []
    for who in ("h1", "h2"):
        session = AnnotationSession(pairs, label_file(sample, who), who)
        while not session.done:
            pair = session.current
            stated = _stated(pair)
            if who == "h2" and session.index == 0:
                stated = (stated + 1) % len(pair.choices)
            session.label(choice=stated)
        files.append(str(session.path))
    return files


def _errors(notebook: Path) -> list:
    executed = nbformat.read(str(notebook), as_version=4)
    return [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]


def test_notebook_06_headless_without_labels_draws_a_sample_and_says_how_to_start(run_copy: Path, tmp_path: Path):
    out = tmp_path / "06.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out),
        kernel_name="python3",
        cwd=str(tmp_path),
        progress_bar=False,
        parameters={"run_dir": str(run_copy), "sample_size": 9, "sample_kind": "chat"},
    )
    results = read_results(out)["annotate"]
    sample = run_copy / "annotation" / "sample-chat.jsonl"
    assert results["sample"] == str(sample) and results["pairs"] == 9 and results["kinds"] == ["chat"]
    assert not results["tool_shown"] and results["agreement"] == {} and results["label_files"] == []
    assert len(read_sample(sample)) == 9 and not _errors(out)
    text = json.dumps([c.get("outputs", []) for c in nbformat.read(str(out), as_version=4).cells])
    assert "No label files given" in text and "annotator" in text


def test_notebook_06_headless_with_labels_computes_agreement(run_copy: Path, tmp_path: Path):
    sample = tmp_path / "sample.jsonl"
    sample_annotation(run_copy, sample, 10, seed=2)
    files = _two_annotators(sample)
    out = tmp_path / "06.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out),
        kernel_name="python3",
        cwd=str(tmp_path),
        progress_bar=False,
        parameters={"run_dir": str(run_copy), "sample": str(sample), "labels": files, "reps": 200},
    )
    results = read_results(out)["annotate"]
    assert results["pairs"] == 10 and results["annotators"] == ["h1", "h2"] and not _errors(out)
    assert [s["labelled"] for s in results["labels"]] == [10, 10]
    rule = results["agreement"]["rule"]["foundation"]
    assert rule["n"] == 20 and rule["agreement"] == pytest.approx(19 / 20)
    executed = nbformat.read(str(out), as_version=4)
    assert any("image/png" in o.get("data", {}) for c in executed.cells for o in c.get("outputs", []))


def test_notebook_06_is_registered_and_a_pipeline_run_without_labels_passes(planted: Path, tmp_path: Path):
    assert PIPELINE.index("06_annotate") == PIPELINE.index("05_analyze") + 1
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
    params = papermill.inspect_notebook(str(NOTEBOOK))
    assert {"run_dir", "sample", "annotator", "labels"} <= set(params) and all(p["help"] for p in params.values())
    reports = tmp_path / "reports"
    shutil.copytree(planted, reports / "r1")
    info = run_pipeline({"sample_size": 6}, notebooks=["06_annotate"], run_id="r1", reports_dir=reports, html=False)
    assert info.status == "ok", info.notebooks[0].error
    results = read_results(reports / "r1" / "06_annotate.ipynb")["annotate"]
    assert results["pairs"] == 6 and (reports / "r1" / "annotation" / "sample-foundation.jsonl").is_file()
    # a run folder without answers (only the notebooks before 03) does not fail the run either
    bare = reports / "r2"
    (bare / "data").mkdir(parents=True)
    shutil.copy(planted / "data" / "foundation.jsonl", bare / "data")
    info = run_pipeline({}, notebooks=["06_annotate"], run_id="r2", reports_dir=reports, html=False)
    assert info.status == "ok", info.notebooks[0].error
    assert read_results(bare / "06_annotate.ipynb")["annotate"]["pairs"] == 0


def test_labels_summary_counts_a_label_file(pairs, tmp_path: Path):
    path = tmp_path / "l.jsonl"
    session = AnnotationSession(pairs, path, "max")
    session.label(choice=0)
    session.skip()
    session.label(unclear=True)
    summary = labels_summary(path, pairs)
    assert summary == {
        "file": str(path),
        "annotator": ["max"],
        "actions": 3,
        "labelled": 2,
        "unlabelled": 3,
        "skipped": 1,
        "by_label": {"A": 1, "none / unclear": 1},
    }
    assert labels_summary(session, pairs) == summary
    assert isinstance(read_label_file(path)[0], Label)
