"""The shared cache of built data: keys, hits and misses, links, parallel builds, incomplete entries."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

import pytest

from airbench_nb.builders import RECIPE_DIR
from airbench_nb.builders.cache import (
    KEY_FILE,
    build_key,
    build_or_reuse,
    cache_root,
    cached_build,
    key_digest,
    link_data,
)

TASKS = ["Speaker_Gender_Recognition"]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_cache_root_order(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRBENCH_CACHE", str(tmp_path / "env"))
    assert cache_root(tmp_path / "given") == tmp_path / "given"
    assert cache_root() == tmp_path / "env"
    monkeypatch.delenv("AIRBENCH_CACHE")
    assert cache_root() == Path.home() / ".cache" / "airbench-nb"


def test_key_changes_with_what_the_output_depends_on(tmp_path):
    base = build_key("tiny", 0, tasks=TASKS)
    assert key_digest(base) == key_digest(build_key("tiny", 0, tasks=list(reversed(TASKS))))
    assert key_digest(build_key("tiny", 1, tasks=TASKS)) != key_digest(base)
    assert key_digest(build_key("mini", 0, tasks=TASKS)) != key_digest(base)
    assert key_digest(build_key("tiny", 0)) != key_digest(base)
    assert key_digest(build_key("tiny", 0, tasks=TASKS, options={"snr_grid": [0]})) != key_digest(base)
    assert build_key("tiny", 0, tasks=TASKS, options={"snr_grid": None}) == base  # None: the preset's own value
    recipes = tmp_path / "recipes"
    shutil.copytree(RECIPE_DIR, recipes)
    assert build_key("tiny", 0, tasks=TASKS, recipe_dir=recipes) == base  # content, not path
    speech = json.loads((recipes / "speech.json").read_text())
    speech["_edited_by_test"] = True
    (recipes / "speech.json").write_text(json.dumps(speech))
    assert build_key("tiny", 0, tasks=TASKS, recipe_dir=recipes)["recipes_sha256"] != base["recipes_sha256"]
    assert len(base["code_sha256"]) == 64 and base["espeak"]


def test_miss_then_hit_gives_the_same_dataset(tmp_path):
    first = cached_build("tiny", 0, tasks=TASKS, cache_dir=tmp_path, progress=False)
    assert not first.hit and (first.path / KEY_FILE).is_file() and first.path.parent == tmp_path / "data"
    files = _files(first.path)
    again = cached_build("tiny", 0, tasks=TASKS, cache_dir=tmp_path, progress=False)
    assert again.hit and again.path == first.path and _files(again.path) == files
    assert [i.uid for i in again.report.foundation] == [i.uid for i in first.report.foundation]
    assert [i.uid for i in again.report.graded] == [i.uid for i in first.report.graded]
    assert [i.uid for i in again.report.rotated] == [i.uid for i in first.report.rotated]
    assert again.report.counts() == first.report.counts()
    other = cached_build("tiny", 1, tasks=TASKS, cache_dir=tmp_path, progress=False)
    assert not other.hit and other.path != first.path
    assert not list((tmp_path / "data").glob("*.partial-*"))


def test_incomplete_entry_is_rebuilt(tmp_path):
    first = cached_build("tiny", 0, tasks=TASKS, cache_dir=tmp_path, progress=False)
    (first.path / KEY_FILE).unlink()  # as if a build had been killed after the rename (cannot happen) or tampered
    (first.path / "foundation.jsonl").write_text("garbage\n")
    again = cached_build("tiny", 0, tasks=TASKS, cache_dir=tmp_path, progress=False)
    assert not again.hit and (again.path / KEY_FILE).is_file()
    assert len(again.report.foundation) == len(first.report.foundation)


def test_a_failed_build_leaves_nothing(tmp_path):
    with pytest.raises(ValueError, match="cannot build"):
        cached_build("tiny", 0, tasks=["No_Such_Task"], cache_dir=tmp_path, progress=False)
    assert not [p for p in (tmp_path / "data").iterdir() if p.is_dir()]


def _build_in_child(cache: str, queue) -> None:
    got = cached_build("tiny", 0, tasks=TASKS, cache_dir=cache, progress=False)
    queue.put((str(got.path), got.hit))


def test_parallel_runs_build_once(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    children = [ctx.Process(target=_build_in_child, args=(str(tmp_path), queue)) for _ in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=120)
    results = [queue.get(timeout=5) for _ in children]
    assert len({path for path, _ in results}) == 1
    assert sorted(hit for _, hit in results) == [False, True]  # one built it, the other waited and reused it


def test_link_data_and_build_or_reuse(tmp_path):
    report, how = build_or_reuse("tiny", 0, tmp_path / "run" / "data", tasks=TASKS, cache_dir=tmp_path / "c")
    link = tmp_path / "run" / "data"
    assert link.is_symlink() and "into the cache" in how and report.out == link
    assert (link / "foundation.jsonl").is_file()
    _, how = build_or_reuse("tiny", 0, link, tasks=TASKS, cache_dir=tmp_path / "c")
    assert "reused" in how and link.is_symlink()
    real = tmp_path / "old" / "data"
    real.mkdir(parents=True)
    (real / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="real folder"):
        link_data(link.resolve(), real)
    _, how = build_or_reuse("tiny", 0, real, tasks=TASKS, cache_dir=tmp_path / "c")
    assert "real folder" in how and not real.is_symlink() and (real / "keep.txt").read_text() == "mine"
    assert (real / "foundation.jsonl").is_file()
    _, how = build_or_reuse("tiny", 0, tmp_path / "off", tasks=TASKS, use_cache=False)
    assert "cache is off" in how and not (tmp_path / "off").is_symlink()
