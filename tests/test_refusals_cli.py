"""Commands that did nothing say so, and nonsense options are refused (issue 29, rows 2 and 5).

Each case runs the real command through typer's CliRunner on real files: bad input or nothing to do gives exit 2 and
one line "error: ..." naming the file, kind or model at fault; a missing key or an endpoint that is down, exit 3 and
one line, as the judges do; never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airbench_nb.builders.tiered import DATASET, source_items
from airbench_nb.cli import app
from airbench_nb.cli.app import MAX_LISTENERS, MAX_REPS
from airbench_nb.manifests import read_manifest, write_manifest, write_records
from airbench_nb.records import Response, SceneItem
from airbench_nb.synth.sources import hierarchy
from tests.openai_server import unused_base_url
from tests.test_hostile import _item
from tests.test_reference_scoring import _clip_items
from tests.test_refusals import RUNNER, _refused


def _tiered(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A data folder with one clip's closed-set and open-vocabulary manifests, and responses to both."""
    closed, opened = source_items(
        hierarchy(), "truck_air_horn", uid="x", audio="x.wav", audio_sha256=None, meta={}, dataset=DATASET
    )
    data = tmp_path / "data"
    write_manifest(data / "sound_source.jsonl", [closed])
    write_manifest(data / "sound_source_open.jsonl", [opened])
    (data / "dataset.json").write_text(json.dumps({"data_root": ".", "source": "test"}))
    responses = tmp_path / "r.jsonl"
    write_records(
        responses,
        [
            Response(uid="x", model="baseline:first", text="A"),
            Response(uid="x-open", model="baseline:first", text="a horn"),
        ],
    )
    return data / "sound_source.jsonl", data / "sound_source_open.jsonl", responses


def _foundation(tmp_path: Path) -> Path:
    path = tmp_path / "f" / "foundation.jsonl"
    write_manifest(path, [_item(f"u{k}", f"audio/u{k}.wav") for k in range(3)])
    (path.parent / "dataset.json").write_text(json.dumps({"data_root": ".", "source": "test"}))
    return path


# --- score: nothing it can score --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("which", "tier"), [(0, "A"), (1, "D")])
def test_score_scores_the_tiered_kinds_per_tier(tmp_path, which, tier):
    """Issue 30: the tiered kinds are scored through their metrics (once refused here); no verdict: unanswered."""
    manifest = _tiered(tmp_path)[which]
    args = ["score", "--manifest", str(manifest), "--responses", str(tmp_path / "r.jsonl"), "--json"]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    section = json.loads(result.output)["strict"]["metric_sections"][f"tier_{tier}"]
    assert section["average"] == {
        "value": 0.0,
        "n": 1,
        "failures": 1,
        "correct": 0,
        "accuracy": 0.0,
        "ci_low": 0.0,  # one item, wrong: every resample is 0
        "ci_high": 0.0,
    }


def test_score_refuses_an_empty_manifest(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    _, _, responses = _tiered(tmp_path)
    _refused(["score", "--manifest", str(empty), "--responses", str(responses)], str(empty), "holds no item")


@pytest.mark.parametrize("held", [[], [Response(uid="zz", model="baseline:first", text="A")]])
def test_score_refuses_responses_that_answer_no_item(tmp_path, held):
    manifest = _foundation(tmp_path)
    responses = tmp_path / "r.jsonl"
    write_records(responses, held) if held else responses.write_text("")
    args = ["score", "--manifest", str(manifest), "--responses", str(responses)]
    _refused(args, str(responses), "none of the 3 items", str(manifest))


def test_score_refuses_a_model_that_answers_no_item_of_the_manifest(tmp_path):
    manifest = _foundation(tmp_path)
    responses = tmp_path / "r.jsonl"
    write_records(
        responses,
        [Response(uid="u0", model="baseline:first", text="A"), Response(uid="zz", model="baseline:random", text="B")],
    )
    args = ["score", "--manifest", str(manifest), "--responses", str(responses)]
    _refused([*args, "--model", "baseline:random"], "of baseline:random", "none of the 3 items")
    _refused([*args, "--model", "baseline:nope"], "'baseline:nope'", "baseline:first, baseline:random")
    done = RUNNER.invoke(app, [*args, "--model", "baseline:first"])
    assert done.exit_code == 0, done.output


# --- rotate: nothing it rotates -----------------------------------------------------------------------------------


def test_rotate_refuses_tiered_closed_set_items_naming_the_kind_and_why(tmp_path):
    closed, _, _ = _tiered(tmp_path)
    out = tmp_path / "rot" / "foundation.jsonl"
    text = _refused(["rotate", str(closed), "--out", str(out)], str(closed), "sound_source", "tiered analysis")
    assert "validation error" not in text and "extra_forbidden" not in text
    assert not out.parent.exists()


def test_rotate_refuses_a_manifest_without_foundation_items(tmp_path):
    _, opened, _ = _tiered(tmp_path)
    out = tmp_path / "rot" / "foundation.jsonl"
    _refused(["rotate", str(opened), "--out", str(out)], str(opened), "no Foundation item", "1 sound_source_open")
    assert not out.parent.exists()


def test_rotate_skips_and_counts_tiered_items_beside_foundation_ones(tmp_path):
    closed, _, _ = _tiered(tmp_path)
    items = [_item("u0", "x.wav", choices=["a", "b"]), *read_manifest(closed)]
    mixed = tmp_path / "data" / "mixed.jsonl"
    write_manifest(mixed, items)
    out = tmp_path / "rot" / "foundation.jsonl"
    result = RUNNER.invoke(app, ["rotate", str(mixed), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 rotated copies of 1 Foundation items" in result.output and "1 sound_source" in result.output


# --- judge: nothing the judge reads -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("judge", "which", "reads"),
    [("sources", 0, "sound_source_open"), ("rule", 1, "foundation"), ("proxy", 2, "chat")],
)
def test_judge_refuses_kinds_it_does_not_read(tmp_path, judge, which, reads):
    closed, opened, responses = _tiered(tmp_path)
    manifest = [closed, opened, _foundation(tmp_path)][which]
    with responses.open("a") as handle:  # and an answer to the first Foundation item
        handle.write(Response(uid="u0", model="baseline:first", text="A").model_dump_json() + "\n")
    out = tmp_path / "v.jsonl"
    args = ["judge", "--judge", judge, "--manifest", str(manifest), "--responses", str(responses), "--out", str(out)]
    kind = manifest.stem
    _refused(args, f"judge {judge} reads", reads, f"the responses answer 1 {kind} item of {manifest}")
    _refused([*args, "--dry-run"], f"judge {judge} reads", reads)
    assert not out.exists()


# --- mos: no rating -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def unrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder with spoken answers and a listening playlist that nobody rated yet."""
    from airbench_nb.annotate.listening_playlist import draw_playlist
    from tests.browser.lab import write_spoken_run

    run = write_spoken_run(tmp_path_factory.mktemp("unrated") / "run")
    draw_playlist(run, listeners=2, clips_per_system=2, repeats=0, seed=0, write=True)
    return run


def test_mos_refuses_a_playlist_without_ratings(unrated):
    _refused(["mos", str(unrated), "--reps", "20"], str(unrated), "no rating yet", "2 listeners", "notebook 06")


# --- option bounds ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "option", "value", "most"),
    [
        (["mos", "{run}"], "--reps", 200_000_000, MAX_REPS),
        (["agreement", "{run}", "--labels", "{run}/x.jsonl"], "--reps", MAX_REPS + 1, MAX_REPS),
        (["compare", "{run}", "{run}"], "--reps", 200_000_000, MAX_REPS),
        (["sample-listening", "{run}"], "--listeners", 3_000_000, MAX_LISTENERS),
    ],
)
def test_huge_counts_are_refused_naming_the_bound(tmp_path, command, option, value, most):
    args = [part.replace("{run}", str(tmp_path)) for part in command]
    _refused([*args, option, str(value)], option, f"at most {most:,}", str(value))
    at_bound = RUNNER.invoke(app, [*args, option, str(most)])
    assert f"at most {most:,}" not in at_bound.output  # the bound itself is allowed (what fails next is the run)


@pytest.mark.parametrize("value", ["inf", "-0.1", "nan", "-inf"])
def test_mos_wer_must_be_finite_and_not_negative(tmp_path, value):
    _refused(["mos", str(tmp_path), "--wer", f"baseline:x={value}"], "--wer", "finite", "baseline:x")


# --- score --embedder: as the judges do -----------------------------------------------------------------------------


def _scene(tmp_path: Path) -> list[str]:
    items = [i for k in range(2) for i in _clip_items(k) if isinstance(i, SceneItem)]
    write_manifest(tmp_path / "scene.jsonl", items)
    texts = [f"a place that is new to the cache, {tmp_path.name} {k}" for k in range(2)]
    write_records(
        tmp_path / "r.jsonl", [Response(uid=i.uid, model="m", text=t) for i, t in zip(items, texts, strict=True)]
    )
    return ["score", "--manifest", str(tmp_path / "scene.jsonl"), "--responses", str(tmp_path / "r.jsonl")]


def test_score_with_an_openai_embedder_and_no_key_stops_with_exit_3(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    _refused([*_scene(tmp_path), "--embedder", "openai:text-embedding-3-large"], "OPENAI_API_KEY", code=3)


def test_score_with_an_openai_embedder_whose_endpoint_is_down_stops_with_exit_3(tmp_path):
    url = unused_base_url()
    _refused([*_scene(tmp_path), "--embedder", f"openai:emb@{url}"], "cannot connect", url, code=3)


def test_score_with_an_unknown_sentence_transformers_embedder_is_refused(tmp_path):
    _refused([*_scene(tmp_path), "--embedder", "st:no-such-model-xyz"], "st:no-such-model-xyz", "cannot load")
