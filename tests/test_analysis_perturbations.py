"""The perturbation curves' statistics on planted outcomes with a known answer, their table, payload and figure."""

from __future__ import annotations

import numpy as np
import pytest

from airbench_nb.analysis.perturbations import (
    PerturbationsPayload,
    PerturbOutcome,
    headline_points,
    outcome_from_item,
    perturbation_results,
    perturbations_frame,
    perturbations_payload,
)
from airbench_nb.records import FoundationItem

N = 200


def _accuracy(model: str, task: str, lost: int, curve: str = "reverb", parameter: float = 0.6) -> list[PerturbOutcome]:
    """N items, the first 180 right with the audio; under the perturbation the first ``lost`` of them are wrong."""
    out = []
    for i in range(N):
        right = i < 180
        out.append(PerturbOutcome(model, task, "accuracy", f"{task}-{i}", None, None, (float(right), 1.0)))
        under = right and i >= lost
        out.append(PerturbOutcome(model, task, "accuracy", f"{task}-{i}", curve, parameter, (float(under), 1.0), 0.59))
    return out


def test_a_planted_accuracy_loss_is_found_with_an_interval_around_it():
    points = perturbation_results(_accuracy("m", "t", lost=50), reps=2000, seed=0)
    (point,) = points
    assert (point.n, point.clean, point.perturbed) == (N, 0.9, 0.65)
    assert point.difference.value == pytest.approx(-0.25)
    assert point.difference.low < -0.25 < point.difference.high and point.difference.excludes(0.0)
    assert point.measured == pytest.approx(0.59) and point.curve == "reverb" and point.parameter == 0.6


def test_an_unchanged_model_has_a_zero_difference_and_a_zero_width_interval():
    (point,) = perturbation_results(_accuracy("oracle", "t", lost=0), reps=500, seed=0)
    assert point.difference.value == 0.0 and (point.difference.low, point.difference.high) == (0.0, 0.0)


def test_wer_is_a_corpus_ratio_paired_by_item():
    outcomes = []
    for i in range(40):
        words = 5.0 + i % 10  # items of different lengths: a corpus WER weights them by their words
        outcomes.append(PerturbOutcome("asr", "sseu_transcription", "wer", f"u{i}", None, None, (words * 0.1, words)))
        outcomes.append(
            PerturbOutcome("asr", "sseu_transcription", "wer", f"u{i}", "codec:mp3", 24.0, (words * 0.3, words), 24.1)
        )
    outcomes.append(PerturbOutcome("asr", "sseu_transcription", "wer", "lonely", None, None, (9.0, 10.0)))  # no copy
    (point,) = perturbation_results(outcomes, reps=1000, seed=1)
    assert point.n == 40 and point.clean == pytest.approx(0.1) and point.perturbed == pytest.approx(0.3)
    assert point.difference.value == pytest.approx(0.2) and point.difference.excludes(0.0)
    assert point.measured == pytest.approx(24.1)


def test_unanswered_pairs_are_left_out_and_tasks_are_pooled_per_metric():
    outcomes = _accuracy("m", "a", lost=20) + _accuracy("m", "b", lost=100)
    outcomes.append(PerturbOutcome("m", "a", "accuracy", "a-extra", None, None, (1.0, 1.0)))
    outcomes.append(PerturbOutcome("m", "a", "accuracy", "a-extra", "reverb", 0.6, None))  # not answered
    points = perturbation_results(outcomes, reps=300, seed=0)
    assert [(p.task, p.n) for p in points] == [("a", N), ("b", N), (None, 2 * N)]
    pooled = points[-1]
    assert pooled.difference.value == pytest.approx(-(20 + 100) / (2 * N))
    assert perturbation_results(outcomes, reps=10, pooled=False)[-1].task == "b"


def test_points_of_every_curve_come_sorted_and_bad_outcomes_are_refused():
    outcomes = _accuracy("m", "t", 10, "reverb", 1.0) + _accuracy("m", "t", 5, "reverb", 0.3)[1::2]
    outcomes += _accuracy("m", "t", 30, "codec:mp3", 24.0)[1::2]
    points = perturbation_results(outcomes, reps=50)
    assert [(p.curve, p.parameter) for p in points] == [("codec:mp3", 24.0), ("reverb", 0.3), ("reverb", 1.0)]
    assert [round(p.difference.value, 3) for p in points] == [-0.15, -0.025, -0.05]
    with pytest.raises(ValueError, match="unknown metric 'chrf'"):
        perturbation_results([PerturbOutcome("m", "t", "chrf", "u", None, None, (1.0, 1.0))])
    with pytest.raises(ValueError, match="two outcomes of m on u"):
        perturbation_results([PerturbOutcome("m", "t", "accuracy", "u", None, None, (1.0, 1.0))] * 2)
    with pytest.raises(ValueError, match="not counts"):
        perturbation_results([PerturbOutcome("m", "t", "wer", "u", None, None, (-1.0, 3.0))])
    with pytest.raises(ValueError, match="not a count and a weight"):
        perturbation_results([PerturbOutcome("m", "t", "wer", "u", None, None, (1.0, 0.0))])
    with pytest.raises(ValueError, match="reps must be >= 1"):
        perturbation_results([], reps=0)


def test_outcomes_read_the_copy_s_meta_and_skip_other_derived_items():
    base = dict(dataset="synthetic", audio="a.wav", task="Speaker_Gender_Recognition", question="q?")
    original = FoundationItem(uid="q-1", choices=["a", "b"], answer=0, **base)
    meta = {"perturbation_of": "q-1", "perturbation": "codec:opus", "parameter": 16.0, "measured": {"value": 15.2}}
    copy = FoundationItem(uid="q-1@p-opus-16k", choices=["a", "b"], answer=0, meta=meta, **base)
    graded = FoundationItem(uid="q-1@snr+05", choices=["a", "b"], answer=0, meta={"clean_uid": "q-1"}, **base)
    assert outcome_from_item(original, "m", "accuracy", (1.0, 1.0)) == PerturbOutcome(
        "m", "Speaker_Gender_Recognition", "accuracy", "q-1", None, None, (1.0, 1.0), cluster="audio:a.wav"
    )
    assert outcome_from_item(copy, "m", "accuracy", (0.0, 1.0)) == PerturbOutcome(
        "m", "Speaker_Gender_Recognition", "accuracy", "q-1", "codec:opus", 16.0, (0.0, 1.0), 15.2, "", "audio:a.wav"
    )
    assert outcome_from_item(graded, "m", "accuracy", (1.0, 1.0)) is None


def test_frame_payload_and_figure():
    import matplotlib

    matplotlib.use("Agg")
    from airbench_nb import plots

    outcomes = _accuracy("dsp", "a", 40) + _accuracy("dsp", "b", 60) + _accuracy("oracle", "a", 0)
    outcomes += _accuracy("dsp", "a", 70, "codec:mp3", 24.0)[1::2] + _accuracy("dsp", "b", 80, "codec:mp3", 24.0)[1::2]
    points = perturbation_results(outcomes, reps=200)
    frame = perturbations_frame(points)
    assert list(frame["task"]) == ["a", "a", "b", "b", "(all)", "(all)", "a"]
    headline = headline_points(frame)
    assert list(zip(headline["model"], headline["task"], strict=True)) == [
        ("dsp", "(all)"),
        ("dsp", "(all)"),
        ("oracle", "a"),
    ]
    payload = perturbations_payload(points, reps=200, seed=0, protocol="strict")
    again = PerturbationsPayload.model_validate_json(payload.model_dump_json())
    assert again.models["dsp"][0].unit == "kbit/s" and again.models["oracle"][0].ci == [0.0, 0.0]
    figure = plots.perturbation_curves(headline)
    assert figure is not None
    titles = [ax.get_title() for ax in figure.axes]
    assert titles == ["codec:mp3 (n = 400 items per point)", "reverb (n = 200-400 items per point)"]
    assert [ax.get_xlabel() for ax in figure.axes] == ["codec:mp3 (kbit/s)", "reverb (s RT60)"]
    assert "perturbed − original" in figure.axes[0].get_ylabel() and figure._suptitle is not None
    line = next(ln for ln in figure.axes[1].lines if ln.get_label() == "dsp")
    assert np.allclose(line.get_ydata(), [100 * -(40 + 60) / 400])
    assert plots.perturbation_curves(frame.iloc[0:0]) is None


def test_paraphrases_are_drawn_as_numbered_points_not_a_curve():
    import matplotlib

    matplotlib.use("Agg")
    from airbench_nb import plots

    outcomes = _accuracy("prior", "t", 20, "paraphrase", 1.0) + _accuracy("prior", "t", 40, "paraphrase", 2.0)[1::2]
    frame = perturbations_frame(perturbation_results(outcomes, reps=100))
    (ax,) = plots.perturbation_curves(frame).axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2"] and ax.get_xlabel() == "paraphrase (rewrite no.)"
    (bars,) = [c for c in ax.containers if c.get_label() == "prior"]
    points = bars.lines[0]  # the data line of the error bars: markers only, no line between the rewrites
    assert points.get_linestyle() == "None" and np.allclose(points.get_ydata(), [-10.0, -20.0])


def test_pairs_of_one_cluster_are_resampled_together_and_only_widen_the_interval():
    # 40 sentences, each in 5 items (directions, SNRs): a perturbation breaks whole sentences, not items at random
    outcomes, plain = [], []
    for k in range(200):
        sentence = k // 5
        lost = sentence % 4 == 0  # 10 of the 40 sentences lose every item
        for target, cluster in ((outcomes, f"sentence:{sentence}"), (plain, "")):
            target.append(PerturbOutcome("m", "t", "accuracy", f"u{k}", None, None, (1.0, 1.0), cluster=cluster))
            target.append(
                PerturbOutcome(
                    "m", "t", "accuracy", f"u{k}", "reverb", 0.6, (0.0 if lost else 1.0, 1.0), cluster=cluster
                )
            )
    (clustered,) = perturbation_results(outcomes, reps=2000, seed=0)
    (items,) = perturbation_results(plain, reps=2000, seed=0)
    assert clustered.difference.value == items.difference.value == pytest.approx(-0.25)  # the point stays
    assert clustered.clusters == 40 and items.clusters is None and items.design_effect is None
    assert clustered.design_effect == pytest.approx(5.0, rel=0.25)  # 1 + (5 - 1) x 1: the sentence is the unit
    width = clustered.difference.high - clustered.difference.low
    assert width > 1.8 * (items.difference.high - items.difference.low)
    assert clustered.difference.low <= items.difference.low and clustered.difference.high >= items.difference.high
