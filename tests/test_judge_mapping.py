"""Mapping a substitute judge onto a reference judge's scale (issue 34, part 5): planted relations recovered."""

from __future__ import annotations

import numpy as np
import pytest

from airbench_nb.analysis.judge_mapping import (
    GRID,
    JudgeScores,
    MappingError,
    fit_with_band,
    judge_scores,
    map_judges,
    map_run_judges,
)
from airbench_nb.records import ChatItem, Response, Verdict
from airbench_nb.scoring import strict_chat


def _scores(judge: str, values: dict) -> JudgeScores:
    return JudgeScores(judge, values, {u: f"audio:{u[1]}" for u in values})


def test_a_planted_monotone_nonlinear_relation_lies_in_the_isotonic_band():
    rng = np.random.default_rng(0)
    substitute = rng.uniform(1, 10, 400)

    def truth(x):
        return 1.0 + 9.0 / (1.0 + np.exp(-(x - 5.5)))  # a logistic: compressed ends, steep middle

    reference = truth(substitute) + rng.normal(0, 0.3, substitute.size)
    fitted = fit_with_band(substitute, reference, "isotonic", reps=300, seed=1)
    inside = (GRID >= 2.0) & (GRID <= 9.0)  # away from the ends, where a step fit is pinned by few points
    low, high = fitted.band
    covered = (low[inside] <= truth(GRID[inside])) & (truth(GRID[inside]) <= high[inside])
    assert covered.mean() >= 0.9
    assert np.abs(fitted.mapping(GRID[inside]) - truth(GRID[inside])).max() < 0.6
    assert np.all(np.diff(fitted.mapping(GRID)) >= 0)  # monotone
    assert fitted.mapping(np.array([0.0]))[0] == fitted.mapping(np.array([substitute.min()]))[0]  # clipped below
    # the linear fit cannot follow the curve: at the ends it is far off
    linear = fit_with_band(substitute, reference, "linear", reps=0)
    assert abs(linear.mapping(np.array([1.0]))[0] - truth(1.0)) > 0.5


def test_the_linear_fit_is_exact_on_planted_linear_data():
    x = np.linspace(2, 9, 50)
    fitted = fit_with_band(x, 0.5 + 0.8 * x, "linear", reps=200, seed=0)
    assert fitted.mapping.slope == pytest.approx(0.8, abs=1e-9) and fitted.mapping.intercept == pytest.approx(0.5)
    assert fitted.slope_ci[0] == pytest.approx(0.8) and fitted.slope_ci[1] == pytest.approx(0.8)
    iso = fit_with_band(x, 0.5 + 0.8 * x, "isotonic", reps=0)
    assert np.allclose(iso.mapping(x), 0.5 + 0.8 * x)


def test_mapped_scores_are_flagged_and_name_both_judges():
    rng = np.random.default_rng(3)
    units = [("m1" if k % 2 else "m2", f"u{k}", None) for k in range(60)]
    sub = {u: float(rng.uniform(3, 9)) for u in units}
    ref = {u: 2.0 * sub[u] - 6.0 for u in units[:40]}  # the reference judged two thirds of them
    result, _ = map_judges(
        _scores("openai:gpt-4-0125-preview", ref), _scores("proxy", sub), protocol="strict", reps=100
    )
    assert result.shared == 40 and len(result.answers) == 60
    assert all(a.mapped for a in result.answers) and all(m.mapped for m in result.models)
    assert {(m.model, m.method) for m in result.models} == {
        (x, y) for x in ("m1", "m2") for y in ("isotonic", "linear")
    }
    for m in result.models:
        assert "mapped onto openai:gpt-4-0125-preview's scale" in m.label and "not judged by" in m.label
        assert m.ci is not None and m.ci[0] <= m.mapped_score <= m.ci[1]
    linear = next(c for c in result.curves if c.method == "linear")
    assert linear.slope == pytest.approx(2.0) and linear.intercept == pytest.approx(-6.0)
    answer = next(a for a in result.answers if a.uid == "u50")
    assert answer.reference_score is None and answer.linear == pytest.approx(
        2.0 * sub[("m2", "u50", None)] - 6.0, abs=1e-3
    )


def test_too_few_shared_answers_are_refused():
    units = [("m", f"u{k}", None) for k in range(5)]
    with pytest.raises(MappingError, match="5 answers in common"):
        map_judges(
            _scores("a", {u: 1.0 + k for k, u in enumerate(units)}),
            _scores("b", {u: 2.0 for u in units}),
            protocol="strict",
            reps=0,
        )


def _chat(uid: str) -> ChatItem:
    return ChatItem(
        uid=uid, dataset="d", audio=f"{uid}.wav", question="q", task="sound_QA", reference="r", meta_info="m"
    )


def test_judge_scores_pair_both_orders_of_the_first_judgement():
    items = {u: _chat(u) for u in ("a", "b")}
    responses = {"m": {u: Response(uid=u, model="m", text="x") for u in items}}

    def v(uid, order, score, repeat=None, judge="j"):
        return Verdict(
            uid=uid, model="m", judge=judge, order=order, score_reference=8, score_hypothesis=score, repeat=repeat
        )

    verdicts = {
        "m": [
            v("a", "reference_first", 4),
            v("a", "hypothesis_first", 6),
            v("a", "reference_first", 1, 1),
            v("b", "reference_first", 5),
        ]
    }
    scores = judge_scores("j", items, responses, verdicts, strict_chat)
    assert scores.scores == {("m", "a", None): 5.0}  # b lacks an order; the repeat is not read


def test_map_run_judges_writes_json_csv_and_figure(tmp_path):
    from tests.planted_run import write_planted_run

    run = write_planted_run(tmp_path / "run", per_task=2, chat_per_task=10, snr_items=1, rotated_per_task=0)
    result, files = map_run_judges(run, "fair-judge", "planted-judge", reps=50)
    assert result.shared == 3 * 8 * 10 and all(path.is_file() for path in files.values())
    linear = next(c for c in result.curves if c.method == "linear")
    assert 0.0 < linear.slope < 1.5  # the two planted judges draw their own noise around the same quality
    with pytest.raises(MappingError, match="no Chat score"):
        map_run_judges(run, "fair-judge", "openai:nobody", reps=0)
    # the landing page names every mapped score as mapped
    from types import SimpleNamespace

    from airbench_nb.pages.judge_mapping import render_judge_mapping
    from airbench_nb.run_folder import RunFolder

    html = render_judge_mapping(SimpleNamespace(folder=RunFolder(run)))
    assert html is not None and "MAPPED (isotonic)" in html and "MAPPED (linear)" in html
    assert "Mapped, not judged by" in html and "not comparable with the published table" in html
    assert "planted:skilled" in html and files["figure"].name in html
    files["json"].unlink()
    assert render_judge_mapping(SimpleNamespace(folder=RunFolder(run))) is None


def test_the_judge_map_command_prints_mapped_scores_and_refuses_an_absent_judge(tmp_path):
    import json

    from typer.testing import CliRunner

    from airbench_nb.cli import app
    from tests.planted_run import write_planted_run

    run = write_planted_run(tmp_path / "run", per_task=2, chat_per_task=4, snr_items=1, rotated_per_task=0)
    args = ["judge-map", str(run), "--reference", "fair-judge", "--substitute", "planted-judge", "--reps", "20"]
    shown = CliRunner().invoke(app, args)
    assert shown.exit_code == 0, shown.output
    assert (
        "MAPPED scores: planted-judge onto fair-judge's scale" in shown.output and "not its judgement" in shown.output
    )
    as_json = CliRunner().invoke(app, [*args, "--json"])
    assert json.loads(as_json.output)["shared"] == 3 * 8 * 4
    absent = CliRunner().invoke(app, ["judge-map", str(run), "--reference", "fair-judge", "--substitute", "nobody"])
    assert absent.exit_code == 2 and "no Chat score" in absent.output
