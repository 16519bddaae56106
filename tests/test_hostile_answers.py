"""Hostile answers (issue 29): one answer never costs a run, and reading an answer is bounded.

A model's free-text answer is whatever the model (or a hostile endpoint) sent: JSON nested thousands deep, hundreds of
kilobytes of repeated tags, labels or braces, a list of 100,000 events, zero-width characters inside words. Each
probe here gives the kit such an answer through the real command line (``score``, ``analyze``) or the real output
parser and checks what the kit must do: the answer becomes that item's counted failure or is read truncated with a
counted reason, the other items are scored, and the work stays bounded (each test runs under a small timeout; the
reading before this pass took minutes to hours on these sizes).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.manifests import write_manifest, write_records
from airbench_nb.records import EventsItem, Response, TranscriptionItem
from airbench_nb.unify import MAX_ANSWER_CHARS, MAX_EVENTS, UNREADABLE_DEEP, UNREADABLE_MANY, unify, unify_counts
from tests.openai_server import OpenAITestServer

runner = CliRunner()
MODEL = "m"
SENTENCE = "the quick brown fox jumps over the lazy dog"
EVENT_CLASSES = ["dog bark", "car horn", "bird song", "church bell", "phone ring"]

DEEP_ANSWERS = {
    "1,000 open brackets": '{"text": ' + "[" * 1_000,
    "json 10,000 deep": '{"text": ' + "[" * 10_000 + "]" * 10_000 + "}",
    "objects 10,000 deep": '{"text": ' + '{"a": ' * 10_000 + "1" + "}" * 10_000 + "}",
}


def _items(kind: type, prefix: str, n: int, **fields) -> list:
    """``n`` items of a reference kind, uids ``<prefix>0``, ``<prefix>1``, ... (no audio is read by scoring)."""
    return [kind(uid=f"{prefix}{k}", dataset="synthetic", audio=f"audio/{prefix}{k}.wav", **fields) for k in range(n)]


def _transcription_items(n: int) -> list[TranscriptionItem]:
    return _items(TranscriptionItem, "t", n, question="Transcribe.", task="sseu_transcription", reference=SENTENCE)


def _write(folder: Path, items: list, texts: list[str], kind: str = "transcription") -> tuple[Path, Path]:
    """Write ``data/<kind>.jsonl`` and ``responses/m/<kind>.jsonl`` of a run folder; return the two files."""
    manifest = write_manifest(folder / "data" / f"{kind}.jsonl", items)
    (folder / "data" / "dataset.json").write_text(json.dumps({"data_root": ".", "source": "test"}))
    answers = [Response(uid=item.uid, model=MODEL, text=text) for item, text in zip(items, texts, strict=True)]
    responses = write_records(folder / "responses" / MODEL / f"{kind}.jsonl", answers)
    return Path(manifest), Path(responses)


def _score(manifest: Path, responses: Path, *options: str) -> dict:
    args = ["score", "--manifest", str(manifest), "--responses", str(responses), "--protocol", "strict", "--json"]
    result = runner.invoke(app, [*args, *options])
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)["strict"]["metric_sections"]


# --- high: JSON nested too deep for the parser ------------------------------------------------------------------


@pytest.mark.parametrize("answer", list(DEEP_ANSWERS.values()), ids=list(DEEP_ANSWERS))
def test_score_counts_an_answer_nested_too_deep_as_that_items_failure(tmp_path, answer):
    manifest, responses = _write(tmp_path, _transcription_items(2), [answer, SENTENCE])
    section = _score(manifest, responses)["transcription"]
    assert section["failure_reasons"] == {UNREADABLE_DEEP: 1}
    assert section["items"] == 2 and section["failed"] == 1
    assert section["average"]["value"] == pytest.approx(0.5)  # the deep answer all deletions, the other exact


def test_analyze_reads_a_run_with_an_answer_nested_too_deep(tmp_path):
    answers = [DEEP_ANSWERS["1,000 open brackets"], SENTENCE]
    _write(tmp_path / "run", _transcription_items(2), answers)
    result = runner.invoke(app, ["analyze", str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    cleanup = json.loads(result.stdout)["sseu_detail"]["cleanup"][MODEL]
    assert cleanup["failures"] == {"transcript": {UNREADABLE_DEEP: 1}}


def test_a_deep_answer_fails_every_part_it_is_asked():
    read = unify(DEEP_ANSWERS["json 10,000 deep"], "joint")
    assert read.failures == dict.fromkeys(("transcript", "scene", "events"), UNREADABLE_DEEP)
    assert read.transcript is None and read.events is None


# --- medium: reading is bounded ---------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_an_unclosed_think_repeated_is_read_in_linear_time():
    read = unify("<think>" * 25_000, "transcription")  # 175 KB
    assert read.failures == {"transcript": "empty answer"}
    assert "think-unclosed" in read.removed and f"truncated: over {MAX_ANSWER_CHARS} characters" in read.removed


@pytest.mark.timeout(60)
def test_many_think_blocks_keep_their_meaning_when_read_linearly():
    text = "<think>a</think>x " * 2_000 + "</think>answer <thinking>tail"
    read = unify(text, "transcription")
    assert read.transcript == "answer"
    assert read.removed[:3] == ("think", "think-prefilled", "think-unclosed")


@pytest.mark.timeout(60)
def test_twenty_thousand_inline_labels_are_read_in_linear_time():
    text = "Transcript: hi. " + "Scene: park. " * 20_000  # 260 KB on one line
    read = unify(text, "joint")
    assert read.transcript == "hi." and (read.scene or "").startswith("park.")  # the last label, cut by the cap
    assert read.failures == {"events": "no events section"}
    assert f"truncated: over {MAX_ANSWER_CHARS} characters" in read.removed


@pytest.mark.timeout(60)
def test_sections_separated_by_many_blank_lines_are_read_in_linear_time():
    text = "Transcript:" + "\n" * 45_000 + "hi\nScene:\n- park\n\n" + "\n" * 45_000 + "- square"
    read = unify(text, "joint")
    assert (read.transcript, read.scene) == ("hi", "- park - square")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("{" * 1_000_000, None),  # no brace starts an object: the answer is text
        ('{"' * 500_000, UNREADABLE_MANY),
        ('{"a": ' * 170_000, UNREADABLE_DEEP),
        ('{"a": 1, ' * 110_000, UNREADABLE_MANY),
    ],
    ids=["braces", "brace-quote", "open objects", "broken objects"],
)
def test_a_megabyte_of_braces_is_read_in_bounded_time(answer, reason):
    read = unify(answer, "transcription")
    assert read.removed[0] == f"truncated: over {MAX_ANSWER_CHARS} characters"
    if reason is None:
        assert read.transcript == answer[:MAX_ANSWER_CHARS] and not read.failures
    else:
        assert read.failures == {"transcript": reason} and read.transcript is None


SPACES = " " * 90_000  # under the cap: each pattern below backtracked over every split of this run (hours)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("answer", "kind", "part", "value"),
    [
        ("```" + SPACES + "x", "transcription", "transcript", "``` x"),
        ("Transcript" + SPACES + "x\nScene: park", "joint", "scene", "park"),
        ("**Transcript**" + SPACES[:45_000] + "** " * 10_000 + "x", "joint", "transcript", None),
        ("1." + SPACES + "Transcript x", "joint", "transcript", None),
        ("dog" + SPACES + "cat", "events", "events", ["dog cat"]),
        ("- dog" + SPACES + "x", "events", "events", ["dog x"]),
        ("Transcript: hi\n" + SPACES + "x", "joint", "transcript", "hi x"),
        ("final answer" + SPACES + "x", "transcription", "transcript", "final answer x"),
        ("Transcript: a." + SPACES + "x", "joint", "transcript", "a. x"),
        ("```" + SPACES + "x" + '{"transcript": "hi"}', "transcription", "transcript", "hi"),
    ],
    ids=["fence", "label", "bold label", "numbered label", "events", "bullet", "break", "final", "inline", "json"],
)
def test_runs_of_spaces_between_tokens_are_read_in_linear_time(answer, kind, part, value):
    read = unify(answer, kind)
    assert read.part(part) == value
    assert (part in read.failures) == (value is None)
    assert not any(tag.startswith("truncated") for tag in read.removed)


def test_a_long_answer_is_read_truncated_and_the_truncation_is_counted():
    long = "Transcript: " + "word " * 30_000
    short = f"Transcript: {SENTENCE}"
    reads = [unify(long, "transcription"), unify(short, "transcription")]
    assert len(reads[0].transcript or "") <= MAX_ANSWER_CHARS
    assert unify_counts(reads).removals["truncated"] == 1
    assert "truncated" not in "".join(reads[1].removed)


@pytest.mark.timeout(60)
def test_an_answer_listing_100000_events_keeps_the_cap_and_fills_the_cache_with_no_more(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRBENCH_CACHE", str(tmp_path / "cache"))
    fields = {"question": "Events?", "task": "sseu_events", "classes": EVENT_CLASSES, "labels": ["dog bark"]}
    items = _items(EventsItem, "e", 2, **fields)
    flood = ", ".join(f"sound number {k}" for k in range(100_000))  # 1.9 MB
    read = unify(flood, "events")
    assert read.events is not None and len(read.events) == MAX_EVENTS
    assert read.events[:2] == ["sound number 0", "sound number 1"]
    assert f"events capped: the first {MAX_EVENTS} kept" in read.removed

    manifest, responses = _write(tmp_path / "run", items, [flood, "dog bark"], kind="events")
    with OpenAITestServer() as server:  # real HTTP to a loopback endpoint: it records every text embedded
        section = _score(manifest, responses, "--embedder", f"openai:emb@{server.base_url}")["events"]
        embedded = list(server.seen.embedding_inputs)
    assert section["items"] == 2 and section["failed"] == 0
    assert len(embedded) == len(set(embedded)) <= MAX_EVENTS + len(EVENT_CLASSES)
    assert "sound number 99" in embedded and "sound number 100" not in embedded
    caches = list((tmp_path / "cache" / "embeddings").glob("*.sqlite"))
    assert len(caches) == 1
    with sqlite3.connect(caches[0]) as db:
        tables = [row[0] for row in db.execute("select name from sqlite_master where type = 'table'")]
        rows = max(db.execute(f"select count(*) from {table}").fetchone()[0] for table in tables)  # noqa: S608
    assert rows <= MAX_EVENTS + len(EVENT_CLASSES) + 1


def test_events_at_the_cap_are_not_flagged():
    read = unify(", ".join(f"sound {k}" for k in range(MAX_EVENTS)) + ", sound 0", "events")
    assert read.events is not None and len(read.events) == MAX_EVENTS
    assert not any(tag.startswith("events capped") for tag in read.removed)
    assert "duplicates" in read.removed


# --- low: zero-width characters are not word errors -------------------------------------------------------------


@pytest.mark.parametrize("mark", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"])
@pytest.mark.parametrize("language", ["en", "de", "zh"])
def test_zero_width_characters_inside_words_are_no_wer_errors(mark, language):
    from airbench_nb.scoring.wer import utterance_errors

    on_hypothesis = utterance_errors("hello world", f"hel{mark}lo world", language, uid="u")
    on_reference = utterance_errors(f"{mark}hello wor{mark}ld", "hello world", language, uid="u")
    for scored in (on_hypothesis, on_reference):
        assert scored.errors == 0 and scored.wer == 0.0, scored
