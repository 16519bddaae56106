"""Figures of the tiered sound-source benchmark (seaborn on matplotlib), one idea per figure.

Every function takes a tidy frame from :mod:`airbench_nb.analysis.tiered` (or a confusion frame of
:class:`airbench_nb.scoring.tiered.GranularityMetrics`), returns a ``matplotlib.figure.Figure`` (None when there
is nothing to draw) and never shows it; :func:`airbench_nb.plots.save` writes it under a name of
:data:`FIGURE_NAMES`. Every title says what the figure is drawn from (n).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from airbench_nb.plots import _short, _sns

logger = logging.getLogger(__name__)

FIGURE_NAMES: dict[str, str] = {
    "tiered_confusion": "tiered-confusion-coarse-and-fine",
    "tiered_f1": "tiered-macro-f1-coarse-vs-fine-per-tier",
    "tiered_confident": "tiered-confident-share-of-wrong-and-right-answers",
    "tiered_strategy": "tiered-strategy-odds-raw-vs-within-class",
}
"""Caption-ready file stems of the tiered figures (pass the key's value to :func:`airbench_nb.plots.save`)."""


def _share_heatmap(ax: Any, grid: pd.DataFrame, annotate: bool) -> None:
    """Row shares (0-1) as a Blues heatmap in percent; NaN rows (no gold item) stay blank."""
    values = grid.to_numpy(dtype=float)
    ax.pcolormesh(np.ma.masked_invalid(values), cmap="Blues", vmin=0.0, vmax=1.0)
    ax.set(xlim=(0, values.shape[1]), ylim=(0, values.shape[0]))
    ax.invert_yaxis()
    ax.set_xticks(np.arange(values.shape[1]) + 0.5, [_short(str(c), 18) for c in grid.columns])
    ax.set_yticks(np.arange(values.shape[0]) + 0.5, [_short(str(i), 18) for i in grid.index])
    ax.grid(False)
    ax.tick_params(axis="x", labelrotation=60, labelsize=7)
    ax.tick_params(axis="y", labelsize=7)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    if not annotate:
        return
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if math.isfinite(values[i, j]) and values[i, j] > 0:
                colour = "white" if values[i, j] > 0.55 else "0.15"
                ax.text(
                    j + 0.5, i + 0.5, f"{100 * values[i, j]:.0f}", ha="center", va="center", fontsize=6.5, color=colour
                )


def confusion_pair(coarse: pd.DataFrame, fine: pd.DataFrame, system: str, n: int) -> Any:
    """Row-normalised confusion matrices of one system, coarse categories and fine classes side by side.

    Args:
        coarse: Row shares, rows the gold categories, columns the predicted ones then "(no answer)".
        fine: The same for the fine classes.
        system: The system (for the title).
        n: Items the matrices are drawn from.

    Returns:
        The figure, or None when both frames are empty (Tier D has no confusion matrix).
    """
    if coarse.empty and fine.empty:
        return None
    _sns()
    import matplotlib.pyplot as plt

    width = 4.5 + 0.32 * (coarse.shape[1] + fine.shape[1])
    fig, axes = plt.subplots(
        1,
        2,
        figsize=(width, 0.3 * max(fine.shape[0], 10) + 2.5),
        gridspec_kw={"width_ratios": [coarse.shape[1] + 3, fine.shape[1] + 3]},
    )
    for ax, grid, name in ((axes[0], coarse, "coarse categories"), (axes[1], fine, "fine classes")):
        _share_heatmap(ax, grid, annotate=grid.size <= 600)
        ax.set_title(f"{name} ({grid.shape[0]})", fontsize=9)
        ax.set_xlabel("predicted label")
        ax.set_ylabel("gold label")
    fig.suptitle(f"Confusion of {_short(system, 40)}: % of each gold label's items (n = {n} items)", fontsize=10)
    fig.tight_layout()
    return fig


def tier_f1_bars(tables: Mapping[str, pd.DataFrame]) -> Any:
    """Macro F1 at both granularities per system, one panel per tier (Tier D: macro recall, F1 being n/a).

    Args:
        tables: :func:`airbench_nb.analysis.tiered.tier_tables`.

    Returns:
        The figure, or None when no tier has a system.
    """
    tiers = [t for t, frame in tables.items() if not frame.empty]
    if not tiers:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tiers), figsize=(3.4 * len(tiers) + 1.0, 3.8), squeeze=False, sharey=True)
    for ax, tier in zip(axes.flat, tiers, strict=True):
        frame = tables[tier]
        metric = "recall" if tier == "D" else "f1"
        long = frame.melt(
            id_vars=["system", "n"], value_vars=[f"coarse_{metric}", f"fine_{metric}"], var_name="granularity"
        )
        long["granularity"] = long["granularity"].str.replace(f"_{metric}", "", regex=False)
        long["value"] = 100 * long["value"]
        long["system"] = long["system"].map(lambda s: _short(s, 18))
        sns.barplot(
            data=long,
            x="system",
            y="value",
            hue="granularity",
            hue_order=["coarse", "fine"],
            ax=ax,
            palette="colorblind",
        )
        ax.set_title(
            f"Tier {tier}: macro {metric.upper() if metric == 'f1' else metric} (n = {int(frame['n'].max())} items)",
            fontsize=9,
        )
        ax.set_xlabel("system")
        ax.set_ylabel("macro score (%)")
        ax.set_ylim(0, 100)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
        ax.legend(fontsize=7, title=None)
    fig.suptitle("Tiered benchmark: coarse vs fine, each tier on its own (never one ranking)", fontsize=10)
    fig.tight_layout()
    return fig


def confident_bars(frame: pd.DataFrame) -> Any:
    """Share of wrong and of right answers stated confidently, per system, with Wilson 95% intervals.

    Args:
        frame: :func:`airbench_nb.analysis.tiered.confident_frame`.

    Returns:
        The figure, or None when empty.
    """
    if frame.empty or frame["n"].sum() == 0:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    systems = list(dict.fromkeys(frame["system"]))
    fig, ax = plt.subplots(figsize=(1.3 * len(systems) + 3.0, 3.6))
    palette = dict(zip(["wrong", "right"], sns.color_palette("colorblind", 2), strict=True))
    width = 0.38
    for k, answers in enumerate(["wrong", "right"]):
        sub = frame[frame["answers"] == answers].set_index("system").reindex(systems)
        x = np.arange(len(systems)) + (k - 0.5) * width
        share = 100 * sub["share"].to_numpy(dtype=float)
        below = np.nan_to_num(share - 100 * sub["ci_low"].to_numpy(dtype=float))
        above = np.nan_to_num(100 * sub["ci_high"].to_numpy(dtype=float) - share)
        ax.bar(x, share, width=width, color=palette[answers], label=f"{answers} answers")
        ax.errorbar(x, share, yerr=np.vstack([below, above]), fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
        for xi, ni in zip(x, sub["n"].to_numpy(), strict=True):
            ax.text(
                xi,
                2,
                f"n={int(ni) if not pd.isna(ni) else 0}",
                ha="center",
                va="bottom",
                fontsize=6.5,
                rotation=90,
                color="white",
            )
    ax.set_xticks(np.arange(len(systems)), [_short(s, 20) for s in systems], rotation=20, fontsize=7)
    ax.set_ylim(0, 105)
    ax.set_xlabel("system")
    ax.set_ylabel("stated confidently (%)")
    ax.set_title(f"Answers stated with confident language (no hedge), n = {int(frame['n'].sum())} answers", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside: bars reach 100% anywhere
    fig.tight_layout()
    return fig


def strategy_odds(frame: pd.DataFrame, raw: str, controlled: str, proxy: bool = True) -> Any:
    """Odds of a right answer per strategy (vs the rest): raw beside within class, on one log axis.

    Args:
        frame: :meth:`airbench_nb.analysis.tiered.StrategyAssociation.frame`.
        raw: The raw test, described (e.g. ``chi2(4) = 41.2, p = 2e-09``).
        controlled: The controlled test, described.
        proxy: Whether the strategy labels come from a proxy classifier (said in the title).

    Returns:
        The figure, or None when empty.
    """
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    strategies = list(dict.fromkeys(frame["strategy"]))
    colours = dict(zip(strategies, sns.color_palette("colorblind", len(strategies)), strict=True))
    finite = frame[["odds_ratio", "ci_low", "ci_high"]].replace([np.inf, -np.inf], np.nan).stack()
    finite = finite[finite > 0]
    low = max(min(float(finite.min()) if len(finite) else 0.5, 0.5) / 1.5, 1e-3)
    high = min(max(float(finite.max()) if len(finite) else 2.0, 2.0) * 1.5, 1e3)
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 0.45 * len(strategies) + 2.2), sharey=True, sharex=True)
    for ax, view, test in ((axes[0], "raw", raw), (axes[1], "within class", controlled)):
        sub = frame[frame["view"] == view].set_index("strategy").reindex(strategies)
        y = np.arange(len(strategies))
        for yi, s in zip(y, strategies, strict=True):
            row = sub.loc[s]
            if not math.isfinite(row["odds_ratio"]):
                ax.text(1.0, yi, "n/a", ha="center", va="center", fontsize=7)
                continue
            lo = row["ci_low"] if math.isfinite(row["ci_low"]) else low
            hi = row["ci_high"] if math.isfinite(row["ci_high"]) else high
            ax.plot([max(lo, low), min(hi, high)], [yi, yi], color="black", lw=1)
            ax.plot(row["odds_ratio"], yi, "o", color=colours[s], ms=7)
        ax.axvline(1.0, color="0.4", ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlim(low, high)
        ticks = [t for t in (0.01, 0.03, 0.1, 0.25, 0.5, 1, 2, 4, 10, 30, 100) if low <= t <= high]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_yticks(y, [f"{s} (n={int(sub.loc[s, 'n'])})" for s in strategies], fontsize=8)
        ax.set_xlabel("odds ratio of a right answer vs other strategies (95% CI, log)", fontsize=8)
        title = "raw: all answers pooled" if view == "raw" else "within class: Mantel-Haenszel over classes"
        ax.set_title(f"{title}\n{test}", fontsize=9)
    axes[0].invert_yaxis()  # shared: once for both panels
    n = int(frame[frame["view"] == "raw"]["n"].sum())
    label = "keyword proxy labels" if proxy else "strategy labels"
    fig.suptitle(
        f"Reasoning strategy and accuracy, raw vs controlled for class difficulty ({label}; n = {n} answers)",
        fontsize=10,
    )
    fig.tight_layout()
    return fig
