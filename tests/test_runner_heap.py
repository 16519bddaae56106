"""The slack kept at the top of the C heap (``runner.heap``): freed request buffers stay for the next batch.

Each check runs in a fresh interpreter: the setting is process-wide and made once per process.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")

_BATCHES = """
import json, os, sys
from airbench_nb.runner.heap import keep_heap_slack
kept = keep_heap_slack() if sys.argv[1] == "slack" else None
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
freed = []
for _ in range(3):  # three batches of 100 buffers of 200 kB, the size of a 5 s clip's base64
    blocks = [b"\\x01" * 200_000 for _ in range(100)]
    before = rss()
    del blocks
    freed.append(before - rss())
print(json.dumps({"kept": kept, "again": keep_heap_slack(), "freed": freed}))
"""


def _run(mode: str, env: dict[str, str] | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _BATCHES, mode], capture_output=True, text=True, check=True, env=env, timeout=120
    )
    return json.loads(out.stdout)


def test_with_slack_freed_buffers_stay_in_the_process_for_the_next_batch():
    kept = _run("slack")
    assert kept["kept"] is True and kept["again"] is True  # once per process, the same answer after
    assert all(freed < 1_000_000 for freed in kept["freed"])  # 20 MB freed, none given back: reused next batch
    plain = _run("none")
    assert all(freed > 10_000_000 for freed in plain["freed"])  # without: given back, fresh pages every batch


def test_a_malloc_top_pad_the_user_set_is_left_as_it_is():
    import os

    env = {**os.environ, "MALLOC_TOP_PAD_": "131072"}
    assert _run("slack", env)["kept"] is False


def test_run_model_keeps_the_slack(tmp_path, monkeypatch):
    from airbench_nb.runner import models as runner_models

    calls: list[int] = []
    monkeypatch.setattr(runner_models, "keep_heap_slack", lambda: calls.append(1) or True)
    from airbench_nb.models import load_model

    runner_models.run_model(load_model("baseline:oracle"), [], tmp_path, tmp_path / "r.jsonl", progress=False)
    assert calls == [1]
