"""No script runs from a report: HTML payloads in specs, questions, answers and judge replies stay text (issue 22).

A planted run whose model spec, judge spec, questions, choices, answers and judge replies carry HTML and script
payloads goes through ``run_pipeline``: notebook 03 answers its items with the oracle (whose answers repeat the
payload in the gold choice), 04 judges them, 05 analyses the planted hostile model and judge, 06 draws and shows an
annotation sample (each notebook's HTML export, ``analysis/leaderboard.md``, the landing page ``index.html`` and
``README.md``); a grid page is written for a grid whose parameters, run ids and errors carry them too. Every HTML file
is opened in chromium, and none may run the payload; the Markdown files hold the payloads escaped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.judge.run import rule_verdict
from airbench_nb.manifests import read_manifest, read_records, write_manifest, write_records
from airbench_nb.pipeline import run_pipeline
from airbench_nb.records import Response, Verdict
from airbench_nb.run_folder import RunFolder
from tests.planted_run import write_planted_run

pytestmark = pytest.mark.browser

MARK = "window.__xss = (window.__xss || 0) + 1"
"""What every payload runs if it is executed."""
IMG = f'<img src=x onerror="{MARK}">'
SCRIPT = f"<script>{MARK}</script>"
LINK = "[click](javascript:alert(1))"
HOSTILE_MODEL = f"openai:{IMG}@http://127.0.0.1:9/v1"
HOSTILE_JUDGE = f"judge{SCRIPT}"


def _hostile_run(folder: Path) -> Path:
    """A small planted run whose third model, second Chat judge, questions, answers and replies carry payloads."""
    write_planted_run(folder, per_task=2, chat_per_task=1, snr_items=0, rotated_per_task=0)
    run = RunFolder(folder)
    items = {}
    for kind in ("foundation", "chat"):
        loaded = read_manifest(run.manifest(kind))
        changed = [i.model_copy(update={"question": f"{i.question} {IMG} {LINK}"}) for i in loaded]
        if kind == "chat":  # the reference answer carries one too: the oracle repeats it in its answers
            changed = [i.model_copy(update={"reference": f"{i.reference} {SCRIPT}"}) for i in changed]
        if kind == "foundation":  # the gold option carries one too (shown with the item)
            changed = [
                i.model_copy(
                    update={"choices": [f"{c} {SCRIPT}" if k == i.answer else c for k, c in enumerate(i.choices)]}
                )
                for i in changed
            ]
        write_manifest(run.manifest(kind), changed)
        items.update({i.uid: i for i in changed})
    for item in items.values():  # every clip readable: the oracle answers every item, and 03 shows the answers
        for clip in [item.audio, *item.audios]:
            wav = run.data_dir / clip
            if not wav.is_file():
                wav.parent.mkdir(parents=True, exist_ok=True)
                sf.write(wav, 0.1 * np.sin(2 * np.pi * 440 * np.arange(8000) / 16000), 16000)
    old = run.responses_file("planted:uniform", "foundation").parent
    answers = {
        kind: [
            Response(uid=r.uid, model=HOSTILE_MODEL, text=f"{r.text} {SCRIPT}" if kind == "chat" else r.text)
            for r in read_records(old / f"{kind}.jsonl", Response)
        ]
        for kind in ("foundation", "chat")
    }
    for kind, records in answers.items():
        write_records(run.responses_file(HOSTILE_MODEL, kind), records)
    write_records(
        run.verdicts_file(HOSTILE_MODEL, "foundation", "rule"),
        [rule_verdict(items[r.uid], r) for r in answers["foundation"]],
    )
    for judge in ("planted-judge", "fair-judge"):
        verdicts = read_records(run.verdicts_file("planted:uniform", "chat", judge), Verdict)
        name = HOSTILE_JUDGE if judge == "fair-judge" else judge
        hostile = [
            v.model_copy(update={"model": HOSTILE_MODEL, "judge": name, "raw": f"{v.raw} {IMG}"}) for v in verdicts
        ]
        write_records(run.verdicts_file(HOSTILE_MODEL, "chat", name), hostile)
    for path in [old, run.verdicts_file("planted:uniform", "chat", "x").parent]:
        for file in path.glob("*.jsonl"):
            file.unlink()
        path.rmdir()
    return folder


def test_payloads_in_every_supplied_string_never_run_in_any_page_a_run_writes(page, tmp_path):
    planted = _hostile_run(tmp_path / "planted")
    data = RunFolder(planted)
    reports = tmp_path / "reports"
    info = run_pipeline(  # notebook 05 over the planted hostile model, judge and replies
        {
            "manifest_dir": str(data.data_dir),
            "responses_dir": str(data.responses_dir),
            "verdicts_dir": str(data.verdicts_dir),
            "reps": 50,
        },
        notebooks=["05_analyze"],
        run_id="hostile",
        reports_dir=reports,
    )
    assert info.status == "ok", [(n.name, n.error) for n in info.notebooks]
    answered = run_pipeline(  # 03, 04 and 06 over the hostile questions and options, answered by the oracle
        {
            "manifest_dir": str(data.data_dir),
            "models": ["baseline:oracle"],
            "kinds": ["foundation", "chat"],
            "judges": ["rule"],
            "show": 3,
            "sample_size": 6,
        },
        notebooks=["03_run_model", "04_judge", "06_annotate"],
        run_id="answered",
        reports_dir=reports,
    )
    assert answered.status == "ok", [(n.name, n.error) for n in answered.notebooks]
    run = RunFolder(tmp_path / "reports" / "hostile")
    analysis = json.loads(run.analysis_json.read_text())
    assert HOSTILE_MODEL in analysis["models"]  # the payloads were in the run analysed

    _hostile_grid_page(tmp_path / "grid")
    for markdown in (run.leaderboard, run.readme, tmp_path / "grid" / "README.md"):
        text = re.sub(r"(`+)(.+?)\1", "", markdown.read_text())  # a code span shows its text as it is, never as HTML
        assert "<img" not in text and "<script" not in text and not re.search(r"(?<!\\)\]\(javascript", text), markdown
    assert "&lt;img src=x onerror=" in run.leaderboard.read_text()  # the spec is there, escaped

    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    oracle = read_records(RunFolder(reports / "answered").responses_file("baseline:oracle", "chat"), Response)
    assert oracle and all("<script>" in (r.text or "") for r in oracle)  # the answers shown in 03 carry the payload
    pages = [*sorted(reports.rglob("*.html")), tmp_path / "grid" / "index.html"]
    expected = {f"{n}.html" for n in ("03_run_model", "04_judge", "05_analyze", "06_annotate")} | {"index.html"}
    assert {p.name for p in pages} >= expected
    for html in pages:
        page.goto(html.as_uri())
        page.wait_for_load_state("load")
        page.wait_for_timeout(200)
        assert page.evaluate("window.__xss === undefined"), f"a payload ran in {html.name}"
        assert page.evaluate('document.querySelectorAll(\'img[src="x"], a[href^="javascript"]\').length') == 0
    page.goto((run.path / "05_analyze.html").as_uri())
    assert "onerror=" in page.locator("body").inner_text()  # shown as text
    assert not dialogs


def _hostile_grid_page(folder: Path) -> Path:
    """The page of a grid whose name, parameters, run ids, errors and logs carry the payloads."""
    from airbench_nb.grid import GridInfo, GridRun
    from airbench_nb.grid_page import write_grid_page

    folder.mkdir(parents=True)
    runs = [
        GridRun(
            index=1,
            run_id=f"01-models-{IMG}",
            parameters={"models": [HOSTILE_MODEL], "seed": 0},
            varying={"models": [HOSTILE_MODEL]},
            status="failed",
            error=f"03_run_model: ValueError: unknown model {SCRIPT} {LINK}",
            log=f"log {IMG}",
        ),
        GridRun(index=2, run_id="02-ok", parameters={"seed": 1}, varying={"seed": 1}, status="pending"),
    ]
    grid = GridInfo(
        grid_id="g",
        name=f"grid {SCRIPT}",
        source=f"grid{IMG}.yaml",
        started="2026-12-02T00:00:00Z",
        status="failed",
        notebooks=["03_run_model"],
        fixed={"judges": [HOSTILE_JUDGE]},
        varying=["models", "seed"],
        runs=runs,
    )
    (folder / "grid.json").write_text(grid.model_dump_json(), encoding="utf-8")
    index, _ = write_grid_page(folder)
    return index
