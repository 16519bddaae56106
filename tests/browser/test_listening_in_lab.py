"""The MOS listening tool of notebook 06 in a real JupyterLab and a real browser: the clip plays, three clips are
rated with the mouse and the keyboard, the ratings file is on disk, and after a reload the tool resumes.

Screenshots go under the test's pytest temporary folder (the paths are printed; ``pytest -s`` shows them).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import papermill
import pytest

from airbench_nb.annotate import read_action_file
from airbench_nb.annotate.listening_playlist import draw_playlist
from airbench_nb.records import Rating
from airbench_nb.run_folder import RunFolder
from tests.browser.lab import Lab, write_spoken_run
from tests.browser.test_widgets_in_lab import NOTEBOOK_06, _audio_duration, _cells, _shot

pytestmark = pytest.mark.browser


def _wait_for_ratings(path: Path, records: int, timeout: float = 20.0) -> list[Rating]:
    deadline = time.monotonic() + timeout
    while True:
        found = read_action_file(path, Rating)
        if len(found) >= records or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _start(tool: Any, listener: str) -> None:
    box = tool.get_by_placeholder("your slot, e.g. L1")
    box.fill(listener)
    box.press("Enter")


def test_listening_tool_rates_with_mouse_and_keys_and_resumes(lab: Lab, page: Any, tmp_path: Path):
    run = write_spoken_run(lab.root / "spoken")
    report = draw_playlist(run, listeners=2, clips_per_system=2, repeats=0, seed=4, write=True)
    entries = [e for e in report.entries if e.listener == "L2"]
    assert len(entries) == 4
    papermill.execute_notebook(
        str(NOTEBOOK_06), str(lab.root / "06_listen.ipynb"), parameters={"run_dir": str(run)}, prepare_only=True
    )
    started = time.monotonic()
    lab.open(page, "06_listen.ipynb")
    lab.run_all(page)
    tool = page.locator(".airbench-listening")
    card = page.locator(".airbench-listening-card")
    heading = card.locator("h4").first

    # the listener types their slot: clip 1 appears with its player and the text it was asked to say
    _start(tool, "L2")
    heading.filter(has_text="clip 1 of 4").wait_for()
    assert entries[0].prompt in card.inner_text()
    assert entries[0].model not in tool.inner_text() and entries[0].system_id not in tool.inner_text()  # blind
    audio = card.locator("audio").first
    audio.wait_for(state="attached")
    assert _audio_duration(page, audio) == pytest.approx(entries[0].duration_s, abs=0.05)
    _shot(page, tool, tmp_path / "listening-clip-1.png")

    # clip 1 with the mouse: "4 Good"
    card.get_by_role("button", name="4 Good").click()
    heading.filter(has_text="clip 2 of 4").wait_for()
    assert entries[1].prompt in card.inner_text()
    assert _audio_duration(page, card.locator("audio").first) == pytest.approx(entries[1].duration_s, abs=0.05)

    # clips 2 and 3 with the keyboard (pointer over the card); JupyterLab's own shortcuts must not fire
    cells = _cells(page)
    card.hover()
    page.keyboard.press("2")
    heading.filter(has_text="clip 3 of 4").wait_for()
    card.hover()
    page.keyboard.press("5")
    heading.filter(has_text="clip 4 of 4").wait_for()
    assert _cells(page) == cells
    _shot(page, tool, tmp_path / "listening-clip-4.png")

    path = RunFolder(run).listening_ratings("L2")
    ratings = _wait_for_ratings(path, 3)
    assert [r.entry_id for r in ratings] == [e.entry_id for e in entries[:3]]
    assert [r.score for r in ratings] == [4, 2, 5] and all(r.listener == "L2" for r in ratings)

    # a new kernel and a reloaded page: the tool resumes at clip 4, three rated
    lab.restart_kernel("06_listen.ipynb")
    page.reload()
    lab.wait_for_notebook(page, "06_listen.ipynb")
    lab.run_all(page)
    _start(tool, "L2")
    heading.filter(has_text="clip 4 of 4").wait_for()
    assert "3 / 4 rated" in card.inner_text() and "resumed: 3 of 4 rated" in card.inner_text()
    card.hover()
    page.keyboard.press("1")
    card.locator(".airbench-annotate-done").wait_for()
    assert [r.score for r in _wait_for_ratings(path, 4)] == [4, 2, 5, 1]
    lab.wait_idle(page)
    assert not lab.errors(page)
    _shot(page, tool, tmp_path / "listening-done.png")
    print(f"listening test: {time.monotonic() - started:.1f} s in the browser")
