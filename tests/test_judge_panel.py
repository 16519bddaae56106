"""The judge-panel breakdown (issue 34, part 4): planted panels decomposed into their planted variances."""

from __future__ import annotations

import numpy as np
import pytest

from airbench_nb.analysis.judge_panel import (
    PanelScores,
    decompose,
    disagreements,
    model_panel,
    panel_means,
    panel_scores,
)
from airbench_nb.records import ChatItem, Response, Verdict
from airbench_nb.scoring import strict_chat

ITEM, IXJ, REPEAT = 1.0, 0.25, 0.5
"""Planted variances of the answers' quality, of the judges' views of an answer, of a judge asked again."""
OFFSETS = np.array([-0.6, -0.1, 0.3, 0.8])
"""Planted judge leniencies (a fixed panel: their variance, ddof 1, is the planted judge component)."""


def _planted(units: int, repeats: int, seed: int, offsets: np.ndarray = OFFSETS) -> np.ndarray:
    rng = np.random.default_rng(seed)
    judges = offsets.size
    a = rng.normal(0.0, np.sqrt(ITEM), (units, 1, 1))
    ab = rng.normal(0.0, np.sqrt(IXJ), (units, judges, 1))
    e = rng.normal(0.0, np.sqrt(REPEAT), (units, judges, repeats))
    return 6.0 + a + offsets[None, :, None] + ab + e


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_planted_panel_is_decomposed_within_20_percent(seed):
    components = {c.name: c for c in decompose(_planted(400, 3, seed), reps=300, seed=seed)}
    planted = {"item": ITEM, "judge": float(np.var(OFFSETS, ddof=1)), "item_x_judge": IXJ, "repeat": REPEAT}
    for name, value in planted.items():
        assert components[name].variance == pytest.approx(value, rel=0.2), name
        assert not components[name].truncated and components[name].low < components[name].high


def test_over_many_planted_panels_the_estimates_centre_on_the_truth_and_the_intervals_cover():
    planted = {"item": ITEM, "judge": float(np.var(OFFSETS, ddof=1)), "item_x_judge": IXJ, "repeat": REPEAT}
    ratios, covered = [], []
    for seed in range(200):
        components = {c.name: c for c in decompose(_planted(400, 3, 100 + seed), reps=200, seed=seed)}
        ratios.append([components[n].variance / planted[n] for n in planted])
        covered.append([components[n].low <= planted[n] <= components[n].high for n in planted])
    ratios_array, coverage = np.asarray(ratios), np.mean(covered, axis=0)
    assert np.abs(ratios_array.mean(axis=0) - 1.0).max() < 0.03  # unbiased (method of moments)
    assert (np.abs(ratios_array - 1.0) <= 0.2).mean(axis=0).min() >= 0.95
    assert all(0.88 <= c <= 0.99 for c in coverage), coverage  # nominal 95%


def test_without_repeat_noise_or_judge_offsets_those_components_vanish():
    rng = np.random.default_rng(5)
    a = rng.normal(0.0, 1.0, (300, 1, 1))
    ab = rng.normal(0.0, 0.5, (300, 3, 1))
    y = np.repeat(a + ab, 2, axis=2)  # every repeat equal: a deterministic panel, no leniencies
    components = {c.name: c for c in decompose(y, reps=0)}
    assert components["repeat"].variance == 0.0 and components["judge"].variance < 0.01
    assert components["item_x_judge"].variance == pytest.approx(0.25, rel=0.2)


def test_one_judgement_per_judge_pools_item_x_judge_with_repeat_noise():
    y = _planted(400, 1, seed=3)
    components = {c.name: c for c in decompose(y, reps=0)}
    assert components["repeat"].variance is None
    assert components["item_x_judge"].variance == pytest.approx(IXJ + REPEAT, rel=0.2)
    assert "together" in components["item_x_judge"].note
    assert components["item"].variance == pytest.approx(ITEM, rel=0.2)


def test_one_judge_with_repeats_splits_answers_from_repeats():
    y = _planted(400, 3, seed=4, offsets=np.array([0.0]))
    components = {c.name: c for c in decompose(y, reps=0)}
    assert components["judge"].variance is None and components["item_x_judge"].variance is None
    assert components["item"].variance == pytest.approx(ITEM + IXJ, rel=0.2)  # the judge's view is the answer's
    assert components["repeat"].variance == pytest.approx(REPEAT, rel=0.2)


def test_a_negative_estimate_is_set_to_zero_and_said_so():
    y = np.zeros((4, 2, 2))
    y[:, :, 0], y[:, :, 1] = 1.0, 3.0  # all variance between repeats: the other mean squares below MS_rep
    components = {c.name: c for c in decompose(y, reps=0)}
    assert components["repeat"].variance == pytest.approx(2.0)
    assert components["item_x_judge"].variance == 0.0 and components["item_x_judge"].truncated


def test_nothing_to_split_is_refused():
    with pytest.raises(ValueError, match="nothing to split"):
        decompose(np.ones((5, 1, 1)))
    with pytest.raises(ValueError, match="complete"):
        decompose(np.full((5, 2, 2), np.nan))


def _panel(y: np.ndarray) -> PanelScores:
    units = y.shape[0]
    return PanelScores(
        "m",
        [f"j{k}" for k in range(y.shape[1])],
        y,
        [(f"u{i}", None) for i in range(units)],
        ["sound_QA"] * units,
        [f"audio:{i}" for i in range(units)],
        [],
    )


def test_panel_mean_median_and_the_answers_judges_disagree_on():
    y = _planted(200, 2, seed=6)
    y[7, 0, :] = 1.0  # judge 0 hates answer 7
    y[7, 1:, :] = 9.0
    panel = _panel(y)
    per_judge, summary = panel_means(panel, reps=300, seed=0)
    cell = y.mean(axis=2)
    assert summary["mean"].value == pytest.approx(cell.mean())
    assert summary["median"].value == pytest.approx(np.median(cell, axis=1).mean())
    assert summary["mean"].low < summary["mean"].value < summary["mean"].high
    for k, judge in enumerate(panel.judges):
        assert per_judge[judge].value == pytest.approx(cell[:, k].mean())
    top = disagreements(panel, top=3)
    assert top[0].uid == "u7" and top[0].spread == pytest.approx(8.0) and len(top) == 3
    assert top[0].spread >= top[1].spread >= top[2].spread
    entry = model_panel(panel, reps=100, seed=0)
    assert entry.answers == 200 and entry.repeats == 2 and [c.name for c in entry.components][0] == "item"
    assert sum(c.share for c in entry.components) == pytest.approx(1.0, abs=1e-3)


def _chat(uid: str) -> ChatItem:
    return ChatItem(
        uid=uid, dataset="d", audio=f"{uid}.wav", question="q", task="sound_QA", reference="r", meta_info="m"
    )


def test_panel_scores_from_verdicts_with_a_deterministic_judge_and_a_gap():
    items = {u: _chat(u) for u in ("a", "b", "c")}
    responses = {u: Response(uid=u, model="m", text="an answer") for u in items}

    def v(uid, judge, order, score, repeat=None):
        return Verdict(
            uid=uid, model="m", judge=judge, order=order, score_reference=8, score_hypothesis=score, repeat=repeat
        )

    verdicts = []
    for uid, base in (("a", 4), ("b", 6), ("c", 8)):
        for order in ("reference_first", "hypothesis_first"):
            verdicts.append(v(uid, "proxy", order, base))  # deterministic: judged once
            for repeat in (None, 1, 2):
                if uid == "c" and repeat == 2 and order == "hypothesis_first":
                    continue  # one order of one repeat missing: answer c is dropped
                verdicts.append(v(uid, "openai:x", order, base + (repeat or 0), repeat))
    panel = panel_scores("m", items, responses, verdicts, strict_chat, deterministic=["proxy"])
    assert panel is not None and panel.judges == ["openai:x", "proxy"] and panel.deterministic == ["proxy"]
    assert panel.scores.shape == (2, 2, 3) and panel.dropped == 1
    assert panel.scores[0, 1].tolist() == [4.0, 4.0, 4.0]  # the proxy's one judgement stands for each repeat
    assert panel.scores[0, 0].tolist() == [4.0, 5.0, 6.0]
    only_one = [x for x in verdicts if x.judge == "proxy"]
    assert panel_scores("m", items, responses, only_one, strict_chat, deterministic=["proxy"]) is None


def test_a_run_judged_by_two_judges_gets_the_section_and_one_judged_once_does_not(tmp_path):
    from airbench_nb.analysis.judge_panel import JudgePanelPayload, judge_panel_section
    from airbench_nb.analysis.report import RunAnalysis
    from tests.planted_run import write_planted_run

    run = write_planted_run(tmp_path / "run", per_task=2, chat_per_task=30, snr_items=1, rotated_per_task=0)
    section = judge_panel_section(RunAnalysis(run, reps=100))
    payload = JudgePanelPayload.model_validate(section.data)
    entry = payload.models["planted:skilled"]
    assert entry.judges == ["fair-judge", "planted-judge"] and entry.repeats == 1 and entry.answers == 8 * 30
    components = {c.name: c for c in entry.components}
    assert components["repeat"].variance is None and "together" in components["item_x_judge"].note
    # the planted judge adds 1 point to the answer it reads first: +0.5 on the mean of the two orders
    gap = entry.judge_scores["planted-judge"].value - entry.judge_scores["fair-judge"].value
    assert gap == pytest.approx(0.5, abs=0.25)
    assert payload.disagreements and payload.disagreements[0].spread >= payload.disagreements[-1].spread
    # written to analysis.json and shown on the landing page
    from types import SimpleNamespace

    from airbench_nb.pages.judge_panel import render_judge_panel

    report = RunAnalysis(run, reps=100).write(sections=[section])
    html = render_judge_panel(SimpleNamespace(analysis=report))
    assert html is not None and "panel median" in html and "planted:skilled" in html and "item x judge" in html
    assert "disagree on most" in html and payload.disagreements[0].uid in html
    # the answers judges disagree on most, drawn for annotation
    from typer.testing import CliRunner

    from airbench_nb.analysis.judge_panel import disagreement_pairs
    from airbench_nb.annotate import draw_sample
    from airbench_nb.cli import app

    pairs = disagreement_pairs(run)
    assert pairs[0] == f"{payload.disagreements[0].model}|{payload.disagreements[0].uid}"
    drawn = draw_sample(run, 5, kind="chat", only=set(pairs))
    assert len(drawn.pairs) == 5 and {p.pair_id for p in drawn.pairs} <= set(pairs)
    args = ["sample-annotation", str(run), "--n", "3", "--out", str(tmp_path / "s.jsonl"), "--disagreements"]
    assert CliRunner().invoke(app, args).exit_code == 2  # Chat answers only: --kind chat
    shown = CliRunner().invoke(app, [*args, "--kind", "chat"])
    assert shown.exit_code == 0, shown.output
    assert judge_panel_section(RunAnalysis(run, reps=20, judges=["fair-judge"])).reason  # analyze --judge: one
    # one judge, one judgement: nothing to show, and the optional section leaves no key in analysis.json
    for path in (run / "verdicts").rglob("chat.planted-judge.jsonl"):
        path.unlink()
    analysis = RunAnalysis(run, reps=50)
    assert judge_panel_section(analysis).reason
    report = analysis.write(sections=[judge_panel_section(analysis)])
    saved = report.model_dump()
    assert "judge_panel" not in saved.get("reasons", {}) and "judge_panel" not in (report.model_extra or {})
    assert render_judge_panel(SimpleNamespace(analysis=report)) is None
    with pytest.raises(FileNotFoundError, match="no judge panel"):
        disagreement_pairs(run)


def test_a_bootstrap_draw_equals_the_breakdown_of_the_answers_drawn():
    """The replicates weight answers by their counts: the same as decomposing the resampled array itself."""
    from airbench_nb.analysis.judge_panel import _moments, _stats

    y = _planted(30, 2, seed=9)
    counts = np.random.default_rng(1).multinomial(30, np.full(30, 1 / 30))
    weighted = _moments(_stats(y), counts[None, :].astype(float), 4, 2)[0]
    drawn = np.repeat(y, counts, axis=0)
    direct = _moments(_stats(drawn), np.ones((1, drawn.shape[0])), 4, 2)[0]
    assert np.allclose(weighted, direct)
