"""No script runs from a report: HTML payloads in specs, questions, answers and judge replies stay text (issue 22).

A planted run whose model spec, judge spec, questions, answers and judge replies carry HTML and script payloads is
analysed by notebook 05 through ``run_pipeline`` (executed notebook, its HTML export, ``analysis/leaderboard.md``,
the landing page ``index.html`` and ``README.md``); every HTML file the run wrote is opened in chromium, and none may
run the payload; the Markdown files hold the payloads escaped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
        write_manifest(run.manifest(kind), changed)
        items.update({i.uid: i for i in changed})
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
    info = run_pipeline(
        {
            "manifest_dir": str(data.data_dir),
            "responses_dir": str(data.responses_dir),
            "verdicts_dir": str(data.verdicts_dir),
            "reps": 50,
        },
        notebooks=["05_analyze"],
        run_id="hostile",
        reports_dir=tmp_path / "reports",
    )
    assert info.status == "ok", info.notebooks
    run = RunFolder(tmp_path / "reports" / "hostile")
    analysis = json.loads(run.analysis_json.read_text())
    assert HOSTILE_MODEL in analysis["models"]  # the payloads were in the run analysed

    for markdown in (run.leaderboard, run.readme):
        text = markdown.read_text()
        assert "<img" not in text and "<script" not in text and "](javascript" not in text, markdown
    assert "&lt;img src=x onerror=" in run.leaderboard.read_text()  # the spec is there, escaped

    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    pages = sorted(run.path.rglob("*.html"))
    assert {p.name for p in pages} >= {"05_analyze.html", "index.html"}
    for html in pages:
        page.goto(html.as_uri())
        page.wait_for_load_state("load")
        page.wait_for_timeout(200)
        assert page.evaluate("window.__xss === undefined"), f"a payload ran in {html.name}"
        assert page.evaluate('document.querySelectorAll(\'img[src="x"], a[href^="javascript"]\').length') == 0
    page.goto((run.path / "05_analyze.html").as_uri())
    assert "onerror=" in page.locator("body").inner_text()  # shown as text
    assert not dialogs
