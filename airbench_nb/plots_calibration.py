"""Figures of the calibration analysis (seaborn on matplotlib): reliability diagrams and risk-coverage curves.

Each function takes results of :mod:`airbench_nb.analysis.calibration` (one per model: its pooled result, or its
only task's), returns a ``matplotlib.figure.Figure`` (None when there is nothing to draw) and never shows it;
:func:`airbench_nb.plots.save` writes it under the stem of :data:`FIGURE_NAMES`. Every figure is titled, its axes
labelled, and n (answers) named in each panel.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from airbench_nb.plots import _short, _sns

if TYPE_CHECKING:
    from airbench_nb.analysis.calibration import CalibrationResult

logger = logging.getLogger(__name__)

FIGURE_NAMES: dict[str, str] = {
    "calibration": "calibration-reliability-diagrams",
    "risk_coverage": "calibration-risk-coverage",
}
"""Caption-ready file stems of the calibration figures."""

MAX_PANELS = 6
"""Most models drawn (one panel each); the others are in ``analysis.json``."""


def reliability_diagrams(results: Sequence[CalibrationResult]) -> Any:
    """Per model, accuracy against mean confidence in each bin, bar widths the bins, counts on the bars.

    The diagonal is perfect calibration; bars below it are overconfidence. The panel's title gives the model, n,
    the ECE with its 95% interval and the tasks it covers.
    """
    shown = [r for r in results if r.n][:MAX_PANELS]
    if not shown:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(shown), figsize=(3.6 * len(shown), 3.8), squeeze=False, sharey=True)
    colour = sns.color_palette("deep")[0]
    for ax, r in zip(axes[0], shown, strict=True):
        filled = [b for b in r.bins if b.n]
        centres = np.array([(b.low + b.high) / 2 for b in filled])
        widths = np.array([b.high - b.low for b in filled]) * 0.9
        accuracy = np.array([b.accuracy for b in filled], dtype=float)
        ax.bar(centres, accuracy, width=widths, color=colour, alpha=0.8, edgecolor="white", label="accuracy")
        ax.plot(
            [b.confidence for b in filled], accuracy, "o", color="0.2", markersize=3, label="mean confidence in bin"
        )
        for x, y, b in zip(centres, accuracy, filled, strict=True):
            ax.text(x, min(y + 0.02, 0.97), f"{b.n}", ha="center", va="bottom", fontsize=6.5, color="0.25")
        ax.plot([0, 1], [0, 1], "--", color="0.5", linewidth=1, label="perfect calibration")
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="confidence")
        scope = "all tasks" if r.task is None else _short(r.task, 24)
        low, high = r.ece.low, r.ece.high
        ece = f"ECE {r.ece.value:.3f}" + (f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else "")
        ax.set_title(f"{_short(r.model, 30)}\n{scope}, n = {r.n} answers\n{ece}", fontsize=8)
    axes[0][0].set_ylabel("accuracy in bin")
    axes[0][0].legend(fontsize=6.5, loc="upper left")
    n = sum(r.n for r in shown)
    fig.suptitle(
        f"Reliability diagrams: accuracy vs confidence, 10 equal-width bins (counts on bars), n = {n} answers",
        fontsize=9,
    )
    fig.supxlabel("confidence: the probability of the option the answer chose", fontsize=8)
    fig.tight_layout()
    return fig


def risk_coverage_curves(results: Sequence[CalibrationResult]) -> Any:
    """Selective risk against coverage per model (answers taken most confident first), AURC in the legend.

    One point per distinct confidence (equal confidences are kept or dropped together), joined by lines.
    """
    shown = [r for r in results if r.n][:MAX_PANELS]
    if not shown:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    palette = sns.color_palette("deep", len(shown))
    for colour, r in zip(palette, shown, strict=True):
        coverage, risk = r.curve
        label = f"{_short(r.model, 30)} (n = {r.n}, AURC {r.aurc.value:.3f})"
        ax.plot(coverage, risk, color=colour, marker="." if len(coverage) < 40 else None, label=label)
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="coverage (share of answers kept, most confident first)")
    ax.set_ylabel("selective risk (error rate of the answers kept)")
    ax.legend(fontsize=6.5, loc="upper left")
    n = sum(r.n for r in shown)
    ax.set_title(f"Risk-coverage curves: lower is better; n = {n} answers", fontsize=9)
    fig.tight_layout()
    return fig


__all__ = ["FIGURE_NAMES", "reliability_diagrams", "risk_coverage_curves"]
