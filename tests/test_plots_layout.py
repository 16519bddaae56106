"""Figures laid out to be read: the paired differences in a grid (a row per pair, a column per benchmark, a shared
unit per column), the controls' audio-needed share with whole model names, and a measured zero drawn as such."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from airbench_nb import plots

MODELS = ["baseline:dsp (Chat, judged by proxy)", "baseline:first", "baseline:oracle", "baseline:random", "m:e"]


def _comparisons(models: list[str], kinds: tuple[str, ...] = ("foundation", "chat")) -> pd.DataFrame:
    rows = []
    for (a, b), kind in itertools.product(itertools.combinations(models, 2), kinds):
        unit = 0.01 if kind == "foundation" else 1.0
        for level, name in [("average", "Average"), ("category", "speech"), ("category", "sound")]:
            rows.append(
                {
                    "model_a": a,
                    "model_b": b,
                    "benchmark": kind,
                    "level": level,
                    "name": name,
                    "n": 260 if kind == "foundation" else 96,
                    "diff": 5 * unit,
                    "ci_low": 2 * unit,
                    "ci_high": 8 * unit,
                    "verdict": "A better",
                    "size": "ok",
                }
            )
    return pd.DataFrame(rows)


def test_paired_differences_are_a_grid_of_pairs_by_benchmark_sharing_a_unit_per_column():
    frame = _comparisons(MODELS)
    fig = plots.compare_forest(frame)
    assert len(fig.axes) == 10 * 2  # 10 pairs x Foundation and Chat
    width, height = fig.get_size_inches()
    assert height < 2 * width * 2  # not one column of 20 panels
    foundation = [ax for ax in fig.axes if "· Foundation" in ax.get_title()]
    chat = [ax for ax in fig.axes if "· Chat" in ax.get_title()]
    assert len(foundation) == len(chat) == 10
    assert all("percentage points" in ax.get_xlabel() for ax in foundation)
    assert all("judge score" in ax.get_xlabel() for ax in chat)
    assert len({ax.get_xlim() for ax in foundation}) == 1 and len({ax.get_xlim() for ax in chat}) == 1
    assert foundation[0].get_xlim() != chat[0].get_xlim()
    assert all(label.get_visible() for ax in fig.axes for label in ax.get_xticklabels())  # a scale under each
    plt.close(fig)
    # a pair judged on Foundation only leaves its Chat panel out
    partial = pd.concat([_comparisons(MODELS[:2]), _comparisons(MODELS[2:4], ("foundation",))])
    fig = plots.compare_forest(partial)
    assert len(fig.axes) == 3 and sum("· Chat" in ax.get_title() for ax in fig.axes) == 1
    plt.close(fig)


def test_the_audio_needed_share_names_each_model_on_its_own_line():
    rows = []
    for k, model in enumerate(MODELS):
        for control in ("silence", "noise"):
            rows.append({"model": model, "measure": control, "value": -0.2, "ci_low": -0.3, "ci_high": -0.1, "n": 40})
        rows.append({"model": model, "measure": "audio needed", "value": 0.1 * k, "ci_low": 0, "ci_high": 0.5, "n": 40})
    fig = plots.controls_chart(pd.DataFrame(rows))
    left, right = fig.axes
    names = [label.get_text() for label in right.get_yticklabels()]
    assert names == MODELS  # whole (at most 40 characters), first at the top, horizontal
    assert right.get_xlabel() == "items that needed the audio (%)" and right.get_xlim() == (0, 100)
    assert all(label.get_rotation() == 0 for label in right.get_yticklabels())
    fig.canvas.draw()
    boxes = [label.get_window_extent() for label in right.get_yticklabels()]
    assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
    plt.close(fig)


@pytest.mark.parametrize("accuracy", [0.0, 0.5])
def test_a_measured_zero_is_drawn_and_a_panel_shows_only_the_models_in_it(accuracy):
    rows = [
        {"model": m, "panel": "error rate", "measure": "WER", "value": 1.0, "ci_low": 1.0, "ci_high": 1.0, "n": 12}
        for m in MODELS
    ]
    rows.append(
        {"model": "m:e", "panel": "accuracy", "measure": "spoken-answer accuracy", "value": accuracy, "n": 4}
        | {"ci_low": accuracy, "ci_high": accuracy}
    )
    fig = plots.metric_panels(
        pd.DataFrame(rows),
        panel="panel",
        group="measure",
        value="value",
        scale=100.0,
        ylabels={},
        title="t",
        xlabel="measure",
        ylim=(0, 105),
    )
    errors, accuracy_ax = fig.axes
    assert len(errors.patches) == 5 and len(accuracy_ax.patches) == 1  # one bar: the model with an accuracy
    bar = accuracy_ax.patches[0]
    assert bar.get_width() == pytest.approx(0.8) and bar.get_height() == pytest.approx(100 * accuracy)
    zero_marks = [t.get_text() for t in accuracy_ax.texts]
    assert zero_marks == (["0"] if accuracy == 0.0 else [])
    assert len(accuracy_ax.collections) >= (2 if accuracy == 0.0 else 1)  # whiskers, and the zero's line
    legend = errors.get_legend() or accuracy_ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == MODELS  # every model, whatever its panel
    assert np.diff([ax.get_position().width for ax in fig.axes])[0] < 0  # the one-bar panel is the narrower
    plt.close(fig)


def test_a_perturbation_not_run_for_a_metric_is_a_panel_that_says_so_without_a_scale():
    rows = []
    for metric, curve, unit in (("accuracy", "codec:mp3", "kbit/s"), ("accuracy", "paraphrase", "rewrite no."),
                                ("wer", "codec:mp3", "kbit/s")):  # fmt: skip
        for parameter in (1.0, 2.0):
            rows.append(
                {"model": "m:a", "task": "(all)", "metric": metric, "curve": curve, "parameter": parameter}
                | {"unit": unit, "measured": parameter, "n": 8, "clean": 0.5, "perturbed": 0.4}
                | {"difference": -0.1, "ci_low": -0.2, "ci_high": 0.0}
            )
    fig = plots.perturbation_curves(pd.DataFrame(rows))
    assert len(fig.axes) == 4  # accuracy and WER rows x codec:mp3 and paraphrase columns
    empty = fig.axes[3]  # the WER row's paraphrase panel
    assert [t.get_text() for t in empty.texts] == ["not run"] and empty.get_title() == "paraphrase"
    assert list(empty.get_xticks()) == [] and list(empty.get_yticks()) == []
    assert all(len(ax.get_xticks()) for ax in fig.axes[:3])
    plt.close(fig)
