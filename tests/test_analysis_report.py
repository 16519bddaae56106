"""A whole run folder analysed: planted effects come out of `RunAnalysis`, `airbench-nb analyze` and notebook 05."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import papermill
import pytest
from PIL import Image
from typer.testing import CliRunner

from airbench_nb.analysis.report import SECTIONS, RunAnalysis, analyze_run
from airbench_nb.cli import app
from airbench_nb.nbresults import read_results
from airbench_nb.pipeline import PIPELINE
from tests.planted_run import write_planted_labels, write_planted_run

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "05_analyze.ipynb"


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = write_planted_run(tmp_path_factory.mktemp("planted") / "run")
    write_planted_labels(run)
    return run


def _annotation(run: Path) -> tuple[Path, list[Path]]:
    folder = run / "annotation"
    return folder / "sample.jsonl", [folder / "labels.h1.jsonl", folder / "labels.h2.jsonl"]


@pytest.fixture(scope="module")
def analysis(planted: Path) -> dict:
    sample, labels = _annotation(planted)
    return analyze_run(planted, reps=200, sample=sample, labels=labels).as_data()


def test_analysis_json_has_every_section_with_the_documented_keys(planted: Path, analysis: dict):
    saved = json.loads((planted / "analysis" / "analysis.json").read_text())
    assert saved["models"] == analysis["models"] == ["planted:letter-a", "planted:skilled", "planted:uniform"]
    # every section but the optional ones (controls), which a run without their items leaves out entirely
    assert {name for name, section in SECTIONS.items() if not section.optional} <= set(saved)
    assert "controls" not in saved and "controls" not in saved["reasons"]
    # the planted run has none of the kit's tasks and no SSEU-Bench, UG-Bench, MMAU, MMAR or MMSU item, and its
    # verdicts were written without the injection screen
    assert set(saved["reasons"]) == {
        "injection",
        "multi_clip",
        "multi_turn",
        "sseu",
        "snr_curves",
        "translation",
        "captioning",
        "speech_output",
        "tiered",
        "mmau",
        "mmar",
        "mmsu",
    }
    tiered = saved["tiered"]  # present and empty with a reason, as every absent part
    assert set(tiered) >= {"tiers", "reasons", "reasoning"} and not any(tiered["tiers"].values())
    assert tiered["reasoning"]["association"]["reason"] and tiered["reasons"]["D"]
    bias = saved["position_bias"]["planted:letter-a"]
    assert {"n", "chosen", "gold", "chi2", "p_value", "accuracy_by_gold"} <= set(bias)
    order = saved["order_bias"]["planted-judge"]["planted:skilled"]
    assert {"n_pairs", "mean_diff", "ci_low", "ci_high", "wilcoxon_p", "flip_rate"} <= set(order)
    assert {"items", "accuracy", "consistent_rate", "circular_accuracy"} <= set(saved["circular"]["planted:skilled"])
    metrics = saved["classification"]["planted:skilled"]["Speaker_Gender_Recognition"]
    assert {"macro_precision", "macro_recall", "macro_f1", "macro_fnr", "labels", "confusion"} <= set(metrics)
    point = saved["snr"]["planted:skilled"][0]
    assert {"snr_db", "n", "accuracy", "ci_low", "ci_high"} <= set(point)
    assert {"model", "ranks", "score"} <= set(saved["ranking"][0])
    assert {"model_a", "model_b", "diff", "ci_low", "ci_high", "p_holm", "verdict"} <= set(
        saved["comparison"]["comparisons"][0]
    )
    assert {"n", "agreement", "ci_low", "ci_high"} <= set(saved["agreement"]["judges"]["rule"]["foundation"])


def test_planted_effects_are_found(analysis: dict):
    bias = analysis["position_bias"]
    assert bias["planted:letter-a"]["p_value"] < 0.01
    assert bias["planted:uniform"]["p_value"] > 0.01 and bias["planted:skilled"]["p_value"] > 0.01
    for model in analysis["models"]:
        planted_judge = analysis["order_bias"]["planted-judge"][model]
        assert planted_judge["mean_diff"] == pytest.approx(1.0) and planted_judge["ci_low"] > 0
        fair = analysis["order_bias"]["fair-judge"][model]
        assert fair["ci_low"] <= 0 <= fair["ci_high"]
    circular = analysis["circular"]
    assert circular["planted:skilled"]["circular_accuracy"] < circular["planted:skilled"]["accuracy"]
    assert circular["planted:skilled"]["items"] == 40
    trend = analysis["snr_detail"]["trends"]
    assert trend["planted:skilled"]["slope"] > 0 and trend["planted:skilled"]["p_value"] < 0.01
    assert trend["planted:uniform"]["p_value"] > 0.01
    assert analysis["ranking"][0]["model"] == "planted:skilled"
    rows = analysis["comparison"]["comparisons"]
    average = next(
        r
        for r in rows
        if {r["model_a"], r["model_b"]} == {"planted:skilled", "planted:uniform"}
        and r["benchmark"] == "foundation"
        and r["level"] == "average"
    )
    assert average["p_holm"] < 0.01 and "better" in average["verdict"]
    # the rule judge reads the stated letter: h2 agrees on all 10 pairs, h1 on 9 (19 of 20 votes)
    assert analysis["agreement"]["judges"]["rule"]["foundation"]["agreement"] == pytest.approx(0.95)


def test_the_main_table_leaves_copies_out_and_the_files_are_written(planted: Path, analysis: dict):
    folder = planted / "analysis"
    leaderboard = (folder / "leaderboard.md").read_text()
    assert "planted:skilled" in leaderboard and "strict" in leaderboard
    assert (folder / "tables.csv").stat().st_size > 0
    figures = sorted((folder / "figures").glob("*.png"))
    assert len(figures) >= 6 and [f"figures/{p.name}" for p in figures] == sorted(analysis["files"]["figures"])
    for path in figures:
        with Image.open(path) as image:
            assert image.size[0] > 300 and image.size[1] > 200
    scores = analysis["tables"]["scores"]
    strict_avg = [
        s for s in scores if s["protocol"] == "strict" and s["benchmark"] == "foundation" and s["level"] == "average"
    ]
    assert strict_avg and all(s["n"] == 300 for s in strict_avg)  # the clean items: no graded or rotated copies


def test_empty_sections_are_present_with_a_reason(tmp_path: Path):
    run = write_planted_run(tmp_path / "run", per_task=6, chat_per_task=2, snr_items=0, rotated_per_task=0)
    result = RunAnalysis(run, reps=0, judges=["fair-judge"]).write().as_data()
    assert result["circular"] == {} and "rotate" in result["reasons"]["circular"]
    assert result["snr"] == {} and "snr-grid" in result["reasons"]["snr"]
    assert result["agreement"] == {} and "sample-annotation" in result["reasons"]["agreement"]
    assert list(result["order_bias"]) == ["fair-judge"]


def test_official_protocol_reads_letters_with_the_official_rule(planted: Path):
    official = RunAnalysis(planted, protocol="official", reps=0)
    section = official.position_bias()
    assert section.data["planted:letter-a"].p_value < 0.01
    assert set(official.foundation["judge"].dropna()) == {"official"}


def test_cli_analyze_and_its_errors(planted: Path, tmp_path: Path):
    runner = CliRunner()
    out = tmp_path / "out"
    result = runner.invoke(app, ["analyze", str(planted), "--out", str(out), "--json", "--weights", "speech=1,chat=1"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed["weights"] == {"speech": 1.0, "sound": 0.0, "music": 0.0, "chat": 1.0}
    assert (out / "analysis.json").is_file()
    assert runner.invoke(app, ["analyze", str(tmp_path / "missing")]).exit_code == 2
    assert runner.invoke(app, ["analyze", str(planted), "--protocol", "lenient"]).exit_code == 2
    bad = runner.invoke(app, ["analyze", str(planted), "--weights", "speech=-1"])
    assert bad.exit_code == 2 and "weight" in bad.output.lower()


def test_cli_rotate_writes_every_rotation(planted: Path, tmp_path: Path):
    from airbench_nb.manifests import read_manifest

    source = tmp_path / "plain.jsonl"
    items = [i for i in read_manifest(planted / "data" / "foundation.jsonl") if "@" not in i.uid][:5]
    from airbench_nb.manifests import write_manifest

    write_manifest(source, items)
    out = tmp_path / "rotated" / "foundation.jsonl"
    result = CliRunner().invoke(app, ["rotate", str(source), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    rotated = read_manifest(out)
    assert len(rotated) == sum(len(i.choices) for i in items) == json.loads(result.output)["written"]
    for item in rotated:
        original = next(i for i in items if i.uid == item.meta["rotation_of"])
        assert item.choices[item.answer] == original.choices[original.answer]
    assert CliRunner().invoke(app, ["rotate", str(out), "--out", str(tmp_path / "again.jsonl")]).exit_code == 2


def test_notebook_05_runs_under_papermill(planted: Path, tmp_path: Path):
    out = tmp_path / "05_analyze.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out),
        kernel_name="python3",
        cwd=str(tmp_path),
        progress_bar=False,
        parameters={
            "run_dir": str(planted),
            "reps": 100,
            "judges": ["planted-judge", "fair-judge"],
            "sample": str(_annotation(planted)[0]),
            "labels": [str(p) for p in _annotation(planted)[1]],
        },
    )
    results = read_results(out)["analyze"]
    assert results["models"] == ["planted:letter-a", "planted:skilled", "planted:uniform"]
    assert len(results["figures"]) >= 8 and set(results["empty_sections"]) == {
        "multi_clip",
        "multi_turn",
        "sseu",
        "snr_curves",
        "translation",
        "captioning",
        "speech_output",
        "tiered",
        "injection",
        "mmau",
        "mmar",
        "mmsu",
    }
    assert results["injection"] == {}  # the planted verdicts were written without the screen
    assert results["position_bias_p"]["planted:letter-a"] < 0.01
    executed = nbformat.read(str(out), as_version=4)
    errors = [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert sum("image/png" in o.get("data", {}) for c in executed.cells for o in c.get("outputs", [])) >= 6


def test_notebook_05_is_registered_and_committed_clean():
    assert PIPELINE.index("05_analyze") == PIPELINE.index("04_judge") + 1
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
    params = papermill.inspect_notebook(str(NOTEBOOK))
    assert {"run_dir", "protocol", "models", "judges", "weights"} <= set(params)
    assert all(p["help"] for p in params.values())


def test_cli_agreement_finds_the_runs_sample(planted: Path):
    _, labels = _annotation(planted)
    runner = CliRunner()
    found = runner.invoke(app, ["agreement", str(planted), "--reps", "50", "--json", "--labels", *map(str, labels)])
    assert found.exit_code == 0, found.output
    assert json.loads(found.output)["judges"]["rule"]["foundation"]["agreement"] == pytest.approx(0.95)
    empty = planted.parent / "no-sample"
    (empty / "annotation").mkdir(parents=True)
    missing = runner.invoke(app, ["agreement", str(empty), "--labels", str(labels[0])])
    assert missing.exit_code == 2 and "--sample" in missing.output


def test_the_rule_judge_in_judges_is_left_out(planted: Path):
    """04 and 05 share a run's `judges` parameter; `rule` (Foundation only) is no Chat judge to analyse."""
    from airbench_nb.analysis.report import RunAnalysis

    everything = RunAnalysis(planted, reps=50)
    chat_judges = everything.judges
    assert "rule" not in chat_judges and chat_judges
    shared = RunAnalysis(planted, reps=50, judges=["rule", *chat_judges])
    assert shared.judges == chat_judges and len(shared.chat) == len(everything.chat)
