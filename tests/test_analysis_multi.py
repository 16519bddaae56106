"""Single- vs multi-clip accuracy and per-turn Chat scores (issue 14), on a planted run with the kit's own tasks."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import papermill
import pytest
from PIL import Image

from airbench_nb.analysis.report import RunAnalysis
from airbench_nb.nbresults import read_results
from airbench_nb.report_page import FIGURE_CAPTIONS
from tests.planted_run import CLIPS_MODEL, CLIPS_MULTI, CLIPS_SINGLE, KIT_TURNS, write_planted_run

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "05_analyze.ipynb"


@pytest.fixture(scope="module")
def kit_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_planted_run(tmp_path_factory.mktemp("kit") / "run", kit=True)


@pytest.fixture(scope="module")
def written(kit_run: Path) -> dict:
    return RunAnalysis(kit_run, reps=200).write().as_data()


def test_single_vs_multi_clip_accuracy_covers_the_planted_truth(written: dict, kit_run: Path):
    clips = written["multi_clip"][CLIPS_MODEL]
    single, multi = clips["single-clip"], clips["multi-clip"]
    assert single["n"] == 300 and multi["n"] == 4 * 30  # plain items only: no graded or rotated copies
    assert single["ci_low"] <= CLIPS_SINGLE <= single["ci_high"]
    assert multi["ci_low"] <= CLIPS_MULTI <= multi["ci_high"]
    assert single["ci_high"] - single["ci_low"] < multi["ci_high"] - multi["ci_low"]  # fewer items, wider
    assert clips["p_value"] < 1e-6 and clips["difference"] > 0.25 and "Fisher" in clips["test"]
    assert written["multi_clip_detail"]["protocol"] == "strict"
    figure = kit_run / "analysis" / "figures" / "accuracy-single-vs-multi-clip.png"
    assert figure.is_file() and Image.open(figure).size[0] > 300
    assert figure.stem in FIGURE_CAPTIONS and "chat-score-by-turn" in FIGURE_CAPTIONS


def test_turn_scores_fall_on_follow_ups(written: dict, kit_run: Path):
    turns = [r for r in written["multi_turn"]["turns"] if r["model"] == "planted:skilled"]
    assert {r["chat_judge"] for r in turns} == {"planted-judge", "fair-judge"}
    fair = sorted((r for r in turns if r["chat_judge"] == "fair-judge"), key=lambda r: r["turn"])
    assert [r["turn"] for r in fair] == list(range(1, KIT_TURNS + 1))
    assert fair[0]["value"] > fair[1]["value"] > fair[2]["value"]  # planted: 1.5 lower per turn
    assert all(r["conversations"] == 10 and r["n"] == 20 for r in fair)
    drop = written["multi_turn"]["followup_drop"]["fair-judge"]["planted:skilled"]
    assert drop["conversations"] == 10 and drop["mean_diff"] < -1 and drop["p_value"] < 0.05
    assert (kit_run / "analysis" / "figures" / "chat-score-by-turn.png").is_file()


def test_kit_categories_have_their_own_columns_and_leave_the_averages_alone(written: dict, kit_run: Path):
    scores = written["tables"]["scores"]
    names = {(s["benchmark"], s["name"]) for s in scores if s["level"] == "category"}
    assert {("foundation", "multi-clip"), ("chat", "multi-turn")} <= names
    averages = [s for s in scores if s["level"] == "average" and s["benchmark"] == "foundation"]
    assert all(s["n"] == 300 for s in averages)  # 300 clean official items; the 120 multi-clip ones are apart
    leaderboard = (kit_run / "analysis" / "leaderboard.md").read_text()
    assert "Foundation multi-clip" in leaderboard and "Chat multi-turn" in leaderboard
    plain = RunAnalysis(write_planted_run(kit_run.parent / "plain"), reps=200).tables().data["scores"]
    by_key = {(s["model"], s["chat_judge"], s["protocol"], s["benchmark"]): s for s in plain if s["level"] == "average"}
    for s in scores:
        key = (s["model"], s["chat_judge"], s["protocol"], s["benchmark"])
        if s["level"] == "average" and key in by_key:
            assert {k: s[k] for k in ("value", "ci_low", "ci_high", "n", "failures")} == {
                k: by_key[key][k] for k in ("value", "ci_low", "ci_high", "n", "failures")
            }
    # order bias pairs each turn apart: the planted +1 bonus is still found exactly
    assert written["order_bias"]["planted-judge"]["planted:skilled"]["mean_diff"] == pytest.approx(1.0)


def test_notebook_05_end_to_end_with_kit_items(kit_run: Path, tmp_path: Path):
    out = tmp_path / "05_analyze.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out),
        kernel_name="python3",
        cwd=str(tmp_path),
        progress_bar=False,
        parameters={"run_dir": str(kit_run), "reps": 100, "judges": ["planted-judge", "fair-judge"]},
    )
    results = read_results(out)["analyze"]
    assert "multi_clip" not in results["empty_sections"] and "multi_turn" not in results["empty_sections"]
    assert results["multi_clip"][CLIPS_MODEL]["multi-clip"] == pytest.approx(CLIPS_MULTI, abs=0.1)
    assert results["followup_drop"]["fair-judge"]["planted:skilled"] < 0
    assert any("accuracy-single-vs-multi-clip" in f for f in results["figures"])
    executed = nbformat.read(str(out), as_version=4)
    assert not [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    saved = json.loads((kit_run / "analysis" / "analysis.json").read_text())
    assert saved["multi_clip"] and saved["multi_turn"]["turns"]
