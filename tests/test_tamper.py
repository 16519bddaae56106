"""Tampered or unreadable data (issue 22, items 3 and 4): what the kit reuses is what it checked.

Audio is judged as it is when a run infers or scores, not as a manifest says it was; a cached dataset is verified
before it is reused; an answer to audio that changed under it is stale on resume.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.judge.run import judge_responses
from airbench_nb.manifests import read_manifest, read_records, write_manifest
from airbench_nb.models import load_model
from airbench_nb.records import FoundationItem, Response, Verdict
from airbench_nb.runner import run_model
from airbench_nb.scoring import score_run
from airbench_nb.scoring.tables import score_run_folder
from tests.test_resume import _items as resume_items

SR = 16000


def _wav(path: Path, freq: float = 220.0, subtype: str | None = None) -> None:
    t = np.arange(int(SR * 0.3)) / SR
    sf.write(path, (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), SR, subtype=subtype)


def _items(n: int) -> list[FoundationItem]:
    return resume_items(n, missing=False)


def _oracle_run(folder: Path, items: list[FoundationItem]) -> tuple[list[Response], list[Verdict]]:
    out, verdicts = folder / "r.jsonl", folder / "v.jsonl"
    run_model(load_model("baseline:oracle"), items, folder, out, progress=False)
    responses = read_records(out, Response)
    judge_responses("rule", items, responses, verdicts, progress=False)
    return responses, read_records(verdicts, Verdict)


# ------------------------------------------------------------------------------------- item 4: unusable audio


def test_missing_empty_and_nan_clips_without_audio_status_are_unusable_not_failures(tmp_path, caplog):
    items = _items(6)
    for item in items:
        _wav(tmp_path / item.audio, subtype="FLOAT")
    (tmp_path / "a3.wav").unlink()  # missing
    (tmp_path / "a4.wav").write_bytes(b"")  # empty
    nan = np.full(SR // 10, np.nan, dtype=np.float32)
    sf.write(tmp_path / "a5.wav", nan, SR, subtype="FLOAT")  # NaN samples
    write_manifest(tmp_path / "foundation.jsonl", items)
    assert all(i.audio_status is None for i in read_manifest(tmp_path / "foundation.jsonl"))

    responses, verdicts = _oracle_run(tmp_path, items)
    table = score_run(items, responses, verdicts, protocol="both", reps=0, root=tmp_path)
    for protocol in ("strict", "official"):
        scores = getattr(table, protocol)
        assert scores.foundation.average.value == 1.0, protocol
        assert scores.foundation.average.failures == 0
        assert scores.unusable_items.foundation == 3
    assert "3 item(s) whose audio is unusable now" in caplog.text
    # the runner saw the same: three data defects, not failures of the model
    assert sorted(r.error.split(":")[0] for r in responses if r.error) == [
        "audio corrupt",
        "audio empty",
        "audio missing",
    ]
    # without the data root, the runner's defect responses say the same
    blind = score_run(items, responses, verdicts, reps=0).strict
    assert blind.unusable_items.foundation == 3 and blind.foundation.average.value == 1.0


def test_a_stale_ok_status_is_overridden_by_the_audio_as_it_is(tmp_path):
    """The manifest was checked (status ok), then a clip went missing before inference: the run folder's scores
    (notebook 05's path, no data root given) leave it out, because the runner recorded the defect."""
    from airbench_nb.manifests import check_audio
    from airbench_nb.run_folder import RunFolder

    data = tmp_path / "run" / "data"
    data.mkdir(parents=True)
    items = _items(3)
    for item in items:
        _wav(data / item.audio)
    items = check_audio(items, data)
    write_manifest(data / "foundation.jsonl", items)
    (data / "a1.wav").unlink()
    folder = RunFolder(tmp_path / "run")
    responses = folder.responses_file("baseline:oracle", "foundation")
    responses.parent.mkdir(parents=True)
    summary = run_model(load_model("baseline:oracle"), items, data, responses, progress=False)
    assert (summary.unusable, summary.failed) == (1, 0)
    verdicts = folder.verdicts_file("baseline:oracle", "foundation", "rule")
    verdicts.parent.mkdir(parents=True)
    judge_responses("rule", items, read_records(responses, Response), verdicts, progress=False)
    _, table = score_run_folder(folder, reps=0)
    ((_, result),) = table.items()
    assert result.strict.unusable_items.foundation == 1
    assert result.strict.foundation.average.n == 2
    assert result.strict.foundation.average.value == 1.0


# ------------------------------------------------------------------------------- item 3: resume vs audio hash


def test_resume_answers_again_an_item_whose_audio_was_swapped(tmp_path, caplog):
    from airbench_nb.manifests import check_audio

    items = _items(3)
    for item in items:
        _wav(tmp_path / item.audio)
    items = check_audio(items, tmp_path)
    out = tmp_path / "r.jsonl"
    model = load_model("baseline:oracle")
    first = run_model(model, items, tmp_path, out, progress=False)
    assert first.answered == 3
    again = run_model(model, items, tmp_path, out, progress=False)
    assert again.skipped_existing == 3 and again.audio_changed == 0

    _wav(tmp_path / "a1.wav", freq=880.0)  # swapped under the manifest (same name, other sound)
    resumed = run_model(model, items, tmp_path, out, progress=False)
    assert (resumed.audio_changed, resumed.answered, resumed.skipped_existing, resumed.changed_prompt) == (1, 1, 2, 0)
    assert "audio changed since the manifest was written" in caplog.text
    latest = {r.uid: r for r in read_records(out, Response)}
    assert latest["f1"].prompt_hash != next(r for r in read_records(out, Response) if r.uid == "f1").prompt_hash
    # answered against the audio as it is now: a further rerun keeps it
    assert run_model(model, items, tmp_path, out, progress=False).skipped_existing == 3


def test_resume_keeps_answers_when_the_manifest_records_no_audio_hash(tmp_path):
    items = _items(2)
    for item in items:
        _wav(tmp_path / item.audio)
    out = tmp_path / "r.jsonl"
    model = load_model("baseline:oracle")
    # answers made before the runner hashed the audio: prompt hash made with the manifest's (absent) hash
    from airbench_nb.prompts import item_prompt_hash

    legacy = [Response(uid=i.uid, model=model.spec, text="A", prompt_hash=item_prompt_hash(i)) for i in items]
    out.write_text("".join(r.model_dump_json() + "\n" for r in legacy))
    summary = run_model(model, items, tmp_path, out, progress=False)
    assert (summary.skipped_existing, summary.audio_changed, summary.changed_prompt) == (2, 0, 0)


# ------------------------------------------------------------------------------- item 3: the data cache


CACHE_TASKS = ["Speaker_Gender_Recognition"]


@pytest.fixture
def cache(tmp_path):
    """A freshly built tiny dataset in a cache folder, and a copy of its files as written."""
    from airbench_nb.builders.cache import cached_build

    built = cached_build("tiny", 0, tasks=CACHE_TASKS, cache_dir=tmp_path / "cache", progress=False)
    assert not built.hit
    files = {p.relative_to(built.path).as_posix(): p.read_bytes() for p in built.path.rglob("*") if p.is_file()}
    return tmp_path / "cache", built.path, files


def _again(cache_dir: Path, **kwargs):
    from airbench_nb.builders.cache import cached_build

    return cached_build("tiny", 0, tasks=CACHE_TASKS, cache_dir=cache_dir, progress=False, **kwargs)


def _audio(entry: Path) -> Path:
    return sorted((entry / "audio").rglob("*.wav"))[0]


def _same_files(entry: Path, files: dict[str, bytes]) -> bool:
    return all((entry / name).read_bytes() == data for name, data in files.items() if not name.endswith(".json"))


def test_a_clean_hit_says_what_it_verified(cache, tmp_path):
    from airbench_nb.builders.cache import build_or_reuse

    cache_dir, entry, _ = cache
    _, how = build_or_reuse("tiny", 0, tmp_path / "run" / "data", tasks=CACHE_TASKS, cache_dir=cache_dir,
                            progress=False)  # fmt: skip
    assert how.startswith(f"reused the cached dataset {entry} (verified ") and "by SHA-256" in how


def test_a_swapped_audio_file_makes_the_entry_rebuilt(cache, caplog):
    cache_dir, entry, files = cache
    victim = _audio(entry)
    data, sr = sf.read(victim)
    sf.write(victim, data[::-1], sr)  # same length, same size, other sound
    again = _again(cache_dir)
    assert not again.hit and _same_files(entry, files)
    assert f"{victim.relative_to(entry).as_posix()}: SHA-256 differs" in caplog.text and "rebuilding it" in caplog.text


def test_an_edited_manifest_makes_the_entry_rebuilt(cache, caplog):
    cache_dir, entry, files = cache
    manifest = entry / "foundation.jsonl"
    text = manifest.read_text()
    flipped = re.sub(r'"answer": ?([01])', lambda m: m.group(0)[:-1] + str(1 - int(m.group(1))), text)
    assert flipped != text and len(flipped) == len(text)  # gold answers flipped, same size
    manifest.write_text(flipped)
    rows = [json.loads(line) for line in flipped.splitlines()]
    again = _again(cache_dir)
    assert not again.hit and _same_files(entry, files)
    assert [i.answer for i in again.report.foundation] != [r["answer"] for r in rows]
    assert "foundation.jsonl: SHA-256 differs" in caplog.text


def test_a_swap_that_keeps_size_and_time_needs_the_full_check(cache, monkeypatch):
    cache_dir, entry, files = cache
    victim = _audio(entry)
    before = victim.stat()
    data, sr = sf.read(victim)
    sf.write(victim, data[::-1], sr)
    os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert victim.stat().st_size == before.st_size
    assert _again(cache_dir).hit  # the default check compares sizes and times only (documented)
    monkeypatch.setenv("AIRBENCH_VERIFY_CACHE", "full")
    again = _again(cache_dir)
    assert not again.hit and _same_files(entry, files)
    monkeypatch.setenv("AIRBENCH_VERIFY_CACHE", "everything")
    with pytest.raises(ValueError, match="AIRBENCH_VERIFY_CACHE='everything'"):
        _again(cache_dir)


def test_a_copied_entry_with_new_times_is_still_a_hit(cache):
    cache_dir, entry, _ = cache
    for path in entry.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(1, 1))
    assert _again(cache_dir).hit


def test_an_entry_replaced_by_a_link_to_a_foreign_folder_is_refused(cache, tmp_path):
    from airbench_nb.builders.cache import CacheEntryError

    cache_dir, entry, _ = cache
    foreign = tmp_path / "foreign"
    shutil.copytree(entry, foreign)
    (foreign / "mine.txt").write_text("not yours to delete")
    shutil.rmtree(entry)
    entry.symlink_to(foreign, target_is_directory=True)
    with pytest.raises(CacheEntryError, match="is a link to .*foreign.*refused") as refused:
        _again(cache_dir)
    assert "\n" not in str(refused.value)
    assert entry.is_symlink() and (foreign / "mine.txt").read_text() == "not yours to delete"


def test_a_file_in_the_entry_replaced_by_a_link_is_refused(cache, tmp_path):
    from airbench_nb.builders.cache import CacheEntryError

    cache_dir, entry, _ = cache
    outside = tmp_path / "outside.jsonl"
    shutil.copy(entry / "foundation.jsonl", outside)
    (entry / "foundation.jsonl").unlink()
    (entry / "foundation.jsonl").symlink_to(outside)
    with pytest.raises(CacheEntryError, match="foundation.jsonl is a link"):
        _again(cache_dir)
    assert outside.is_file()
