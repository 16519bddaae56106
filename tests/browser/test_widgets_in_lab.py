"""The kit's widgets in a real JupyterLab and a real browser: the annotation tool of notebook 06 (mouse, keyboard,
the label file on disk, resume after a reload) and the listening widgets and item browser.

Each test saves screenshots under its pytest temporary folder (the paths are printed; ``pytest -s`` shows them).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import nbformat
import papermill
import pytest

from airbench_nb.annotate import draw_sample, read_label_file, write_sample
from tests.browser.lab import Lab, write_tiny_run

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK_06 = REPO / "notebooks" / "06_annotate.ipynb"


def _shot(page: Any, locator: Any, path: Path) -> Path:
    """Save a screenshot of one element (scrolled into view, painted) and say where."""
    locator.scroll_into_view_if_needed()
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    locator.screenshot(path=str(path))
    print(f"screenshot: {path}")
    return path


def _cells(page: Any) -> int:
    return page.locator(".jp-Notebook .jp-Cell").count()


def _wait_for_file(path: Path, records: int, timeout: float = 20.0) -> list:
    deadline = time.monotonic() + timeout
    while True:
        found = read_label_file(path)
        if len(found) >= records or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_annotation_tool_labels_with_mouse_and_keyboard_and_resumes(lab: Lab, page: Any, tmp_path: Path):
    run = write_tiny_run(lab.root / "run")
    sample = lab.root / "sample.jsonl"
    pairs = draw_sample(run, 2, kind="foundation", seed=1).pairs + draw_sample(run, 1, kind="chat", seed=1).pairs
    write_sample(sample, pairs)
    assert [p.kind for p in pairs] == ["foundation", "foundation", "chat"]
    papermill.execute_notebook(
        str(NOTEBOOK_06), str(lab.root / "06_annotate.ipynb"), parameters={"sample": str(sample)}, prepare_only=True
    )
    started = time.monotonic()
    lab.open(page, "06_annotate.ipynb")
    lab.run_all(page)
    tool = page.locator(".airbench-annotate")
    card = page.locator(".airbench-annotate-card")
    heading = card.locator("h4").first

    # the annotator types an id and presses Enter: the first pair appears with its audio
    box = tool.get_by_placeholder("your id, e.g. alice")
    box.fill("alice")
    box.press("Enter")
    heading.filter(has_text="pair 1 of 3").wait_for()
    assert pairs[0].question in card.inner_text()
    audio = card.locator("audio").first
    audio.wait_for(state="attached")
    assert page.evaluate(
        """async (el) => {
            if (el.readyState < 1) await new Promise(r => el.addEventListener('loadedmetadata', r, {once: true}));
            return el.duration;
        }""",
        audio.element_handle(),
    ) == pytest.approx(1.2, abs=0.05)
    assert _image_width(page, card.locator("img").first) > 100  # the waveform and spectrogram
    assert _image_contrast(page, card.locator("img").first) > 20  # drawn, not blank
    _shot(page, tool, tmp_path / "annotate-pair-1.png")

    # pair 1 with the mouse: the answer picks B
    card.get_by_role("button", name="B", exact=True).click()
    heading.filter(has_text="pair 2 of 3").wait_for()

    # pair 2 with the keyboard (pointer over the card): C; JupyterLab's own "c"/"a" shortcuts must not fire
    cells = _cells(page)
    card.hover()
    page.keyboard.press("c")
    heading.filter(has_text="pair 3 of 3").wait_for()
    assert _cells(page) == cells

    # pair 3 (Chat) with both: a score picked with the mouse, then "2" on the keyboard
    assert "Answer 1" in card.inner_text() and "Answer 2" in card.inner_text()
    card.locator("select").first.select_option(label="7")
    card.hover()
    assert _image_width(page, card.locator("img").first) > 100
    # drawn in a key handler right after the click's figure, maybe on another kernel thread: not blank
    assert _image_contrast(page, card.locator("img").first) > 20
    _shot(page, tool, tmp_path / "annotate-pair-3-chat.png")  # hovered: the frame is blue
    page.keyboard.press("2")
    card.locator(".airbench-annotate-done").wait_for()
    _shot(page, tool, tmp_path / "annotate-done.png")

    labels_path = sample.with_name("sample.alice.labels.jsonl")
    records = _wait_for_file(labels_path, 3)
    assert [r.pair_id for r in records] == [p.pair_id for p in pairs]
    assert all(r.action == "label" and r.annotator == "alice" for r in records)
    assert (records[0].choice, records[1].choice) == (1, 2)
    assert (records[2].preference, records[2].score_1, records[2].score_2) == ("2", 7.0, None)
    assert all(r.seconds is not None and r.seconds >= 0 for r in records)

    # close the browser tab's state: restart the kernel, reload the page, run again: the tool resumes at "done"
    lab.restart_kernel("06_annotate.ipynb")
    page.reload()
    lab.wait_for_notebook(page, "06_annotate.ipynb")
    lab.run_all(page)
    box = tool.get_by_placeholder("your id, e.g. alice")
    box.fill("alice")
    box.press("Enter")
    card.locator(".airbench-annotate-done").wait_for()
    assert "3 / 3 labelled" in card.inner_text()
    assert len(read_label_file(labels_path)) == 3
    lab.wait_idle(page)
    assert not lab.errors(page)
    _shot(page, tool, tmp_path / "annotate-resumed.png")
    page.screenshot(path=str(tmp_path / "annotate-page.png"))
    print(f"annotation test: {time.monotonic() - started:.1f} s in the browser")


LISTEN_CELLS = [
    "from airbench_nb.listen import browse, listen\nfrom airbench_nb.manifests import read_manifest",
    "items = read_manifest('run/data/foundation.jsonl') + read_manifest('run/data/chat.jsonl')\n"
    "view = listen(items[2], root='run/data')",
    "browser = browse(items, root='run/data')",
]


def _audio_duration(page: Any, audio: Any) -> float:
    return page.evaluate(
        """async (el) => {
            if (el.readyState < 1) await new Promise(r => el.addEventListener('loadedmetadata', r, {once: true}));
            return el.duration;
        }""",
        audio.element_handle(),
    )


def _audio_src(page: Any, audio: Any) -> str:
    """The data the player plays (IPython's Audio puts it in a <source> child)."""
    return page.evaluate("(el) => el.currentSrc || el.querySelector('source')?.src || el.src", audio.element_handle())


def _image_contrast(page: Any, image: Any) -> float:
    """Standard deviation of the image's grey levels (0-255): about 0 for a blank figure, 70-110 for ours."""
    return page.evaluate(
        """async (el) => {
            if (!el.complete) await new Promise(r => el.addEventListener('load', r, {once: true}));
            const canvas = document.createElement('canvas');
            canvas.width = el.naturalWidth; canvas.height = el.naturalHeight;
            const context = canvas.getContext('2d');
            context.drawImage(el, 0, 0);
            const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
            let sum = 0, squares = 0, n = 0;
            for (let i = 0; i < data.length; i += 4) {
                const grey = (data[i] + data[i + 1] + data[i + 2]) / 3;
                sum += grey; squares += grey * grey; n += 1;
            }
            const mean = sum / n;
            return Math.sqrt(squares / n - mean * mean);
        }""",
        image.element_handle(),
    )


def _image_width(page: Any, image: Any) -> int:
    return page.evaluate(
        """async (el) => {
            if (!el.complete) await new Promise(r => el.addEventListener('load', r, {once: true}));
            await el.decode();  // decoded and ready to paint (a screenshot then shows it)
            return el.naturalWidth;
        }""",
        image.element_handle(),
    )


def test_listening_widgets_and_item_browser(lab: Lab, page: Any, tmp_path: Path):
    if not (lab.root / "run").is_dir():
        write_tiny_run(lab.root / "run")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in LISTEN_CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, str(lab.root / "listen.ipynb"))
    started = time.monotonic()
    lab.open(page, "listen.ipynb")
    lab.run_all(page)
    cells = page.locator(".jp-Notebook .jp-CodeCell")

    # listen() on a mixed Chat item: the mix, then component A, each with a player and a spectrogram
    listen_out = cells.nth(1).locator(".jp-Cell-outputWrapper")
    mix_audio = listen_out.locator("audio").first
    mix_audio.wait_for(state="attached")
    # the noise starts 0.3 s after the 1.2 s tone and lasts 1.5 s: the mix lasts 1.8 s
    assert _audio_duration(page, mix_audio) == pytest.approx(1.8, abs=0.02)
    assert _image_width(page, listen_out.locator("img").first) > 100
    assert _image_contrast(page, listen_out.locator("img").first) > 20
    assert "speech_and_sound_QA" in listen_out.inner_text() and "louder" in listen_out.inner_text()
    mix_src = _audio_src(page, mix_audio)
    listen_out.get_by_role("button", name="A", exact=True).click()
    listen_out.get_by_text("A (1.80 s)").wait_for()  # component A, placed on the mix's time line
    component = listen_out.locator("audio").first
    assert _audio_duration(page, component) == pytest.approx(1.8, abs=0.02)
    assert _audio_src(page, component) != mix_src
    assert _image_width(page, listen_out.locator("img").first) > 100
    _shot(page, listen_out, tmp_path / "listen.png")

    # browse(): the first item, then "next" (the item slider, moved with the keyboard) shows the second
    browser_out = cells.nth(2).locator(".jp-Cell-outputWrapper")
    label = browser_out.locator(".widget-label").filter(has_text=" / 3: ")
    label.filter(has_text="1 / 3: pitch-1").wait_for()
    first_audio = browser_out.locator("audio").first
    assert _audio_duration(page, first_audio) == pytest.approx(1.2, abs=0.05)
    assert _image_width(page, browser_out.locator("img").first) > 100
    first_src = _audio_src(page, first_audio)
    handle = browser_out.locator(".noUi-handle").first
    handle.focus()
    page.keyboard.press("ArrowRight")
    label.filter(has_text="2 / 3: pitch-2").wait_for()
    # the label moves first and the item's panel is redrawn after it: wait for the panel (a loaded machine showed
    # the label of item 2 over item 1's question and choices), then read it
    browser_out.get_by_text("Which note is played?").wait_for()
    assert "Which note is played?" in browser_out.inner_text() and "A. A5" in browser_out.inner_text()
    second_audio = browser_out.locator("audio").first
    assert _audio_duration(page, second_audio) == pytest.approx(1.0, abs=0.05)
    assert _audio_src(page, second_audio) != first_src
    assert _image_width(page, browser_out.locator("img").first) > 100
    assert _image_contrast(page, browser_out.locator("img").first) > 20
    lab.wait_idle(page)
    assert not lab.errors(page)
    _shot(page, browser_out, tmp_path / "browse.png")
    print(f"listening test: {time.monotonic() - started:.1f} s in the browser")
