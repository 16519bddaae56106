"""Figures of the analysis notebook (seaborn on matplotlib): one idea per figure, titled, axes labelled with units.

Every function takes a tidy frame from :mod:`airbench_nb.analysis`, returns a ``matplotlib.figure.Figure`` (or None
when there is nothing to draw) and never shows it; :func:`save` writes it as a PNG under a caption-ready name.
``n`` (the number of units a figure is drawn from) goes into every title.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

FIGURE_NAMES: dict[str, str] = {
    "categories": "category-scores-by-model-and-protocol",
    "letters": "chosen-vs-gold-letter-per-model",
    "circular": "circular-vs-plain-accuracy",
    "order_bias": "judge-order-bias-shown-first-vs-second",
    "confusion": "confusion-matrices-per-task",
    "snr": "accuracy-vs-snr",
    "ranking": "capability-ranking",
    "length": "accuracy-vs-answer-length",
    "multi_clip": "accuracy-single-vs-multi-clip",
    "multi_turn": "chat-score-by-turn",
    "sseu_snr": "sseu-wer-macc-map-vs-snr",
    "sseu_modes": "sseu-joint-and-cot-minus-baseline",
    "ugbench": "ugbench-capability-ranking",
    "translation": "translation-bleu-by-language-pair",
    "captioning": "captioning-metrics-by-task",
    "speech_output": "speech-output-back-transcription",
    "tiered": "tiered-macro-f1-per-tier",
    "perturbations": "score-change-under-perturbations",
    "controls": "score-change-under-controls",
    "stability": "greedy-expected-majority-accuracy",
}
"""Caption-ready file stems of the analysis figures (``figures/<stem>.png``)."""

DPI = 110
"""Resolution of saved figures."""


def _sns() -> Any:
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        logger.debug("matplotlib backend %s", matplotlib.get_backend())
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.9)
    return sns


def _short(model: str, width: int = 28) -> str:
    """A model spec shortened for a legend or tick label."""
    return model if len(model) <= width else model[: width - 1] + "…"


def _ci_bars(
    ax: Any,
    x: np.ndarray,
    value: pd.Series,
    low: pd.Series,
    high: pd.Series,
    scale: float,
    width: float,
    color: Any,
    label: str,
    zero_labels: bool = False,
) -> np.ndarray:
    """Bars of ``value * scale`` at ``x`` with black CI whiskers; returns the whiskers' tops (for labels).

    A bar of height 0 (a measured zero, not a missing value) is drawn as a thick line in its colour on the axis, and
    with ``zero_labels`` a "0" above it, so that a zero is never mistaken for a bar left out.
    """
    shown = value.astype(float).to_numpy() * scale
    # an interval that does not contain its value (sacrebleu's is centred on the bootstrap mean) is drawn to it
    below = np.clip(np.nan_to_num(shown - low.astype(float).to_numpy() * scale), 0.0, None)
    above = np.clip(np.nan_to_num(high.astype(float).to_numpy() * scale - shown), 0.0, None)
    ax.bar(x, shown, width=width, color=color, label=_short(label, 44))
    ax.errorbar(x, shown, yerr=np.vstack([below, above]), fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    zero = np.isfinite(shown) & (shown == 0.0)
    for xi, top in zip(np.asarray(x, dtype=float)[zero], above[zero], strict=True):
        ax.hlines(0.0, xi - width / 2, xi + width / 2, colors=[color], linewidth=3.0)
        if zero_labels:
            ax.annotate("0", (xi, top), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=8)
    return np.nan_to_num(shown) + above


_RENDERED = "_airbench_png"
"""Attribute under which :func:`png_bytes` keeps a figure's PNG (a shown figure is final: it is rendered once)."""


def png_bytes(fig: Any, *, keep: bool = False) -> bytes:
    """A figure as PNG bytes at :data:`DPI` (tight bounding box), as :func:`save` writes it.

    Args:
        fig: A matplotlib figure.
        keep: Keep the bytes on the figure, for :func:`save` to write without drawing it again (notebook 05 shows
            each figure and then saves it: drawing dominated both). Only for a figure that is final: it is not
            drawn again, so a change made afterwards would not reach the file.

    Returns:
        The PNG file's bytes.
    """
    import io

    kept = getattr(fig, _RENDERED, None)
    if kept is not None:
        return kept
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    data = buffer.getvalue()
    if keep:
        setattr(fig, _RENDERED, data)
    return data


def shrink_png(data: bytes, scale: float) -> bytes:
    """PNG bytes resized by ``scale`` (Lanczos), for showing a figure smaller than it is saved."""
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(data))
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    out = io.BytesIO()
    image.resize(size, Image.Resampling.LANCZOS).save(out, format="png")
    return out.getvalue()


def save(fig: Any, folder: str | Path, key: str) -> Path:
    """Write ``fig`` as ``folder/<FIGURE_NAMES[key]>.png`` and close it.

    Args:
        fig: A matplotlib figure (drawn at :data:`DPI`, or written from the PNG :func:`png_bytes` kept).
        folder: Output folder (created).
        key: A key of :data:`FIGURE_NAMES` (or a file stem of your own).

    Returns:
        The PNG's path.
    """
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{FIGURE_NAMES.get(key, key)}.png"
    path.write_bytes(png_bytes(fig))
    plt.close(fig)
    return path


KIT_CATEGORIES = ("multi-clip", "multi-turn")
"""Categories of the kit's own tasks, drawn after the Average (which leaves them out)."""


def category_bars(scores: pd.DataFrame) -> Any:
    """Category scores per model with 95% CI whiskers, Foundation and Chat, each protocol in its own column.

    Args:
        scores: Long frame with columns ``model, protocol, benchmark (foundation|chat), name (category or
            "average"), value, ci_low, ci_high, n``; Foundation values are accuracies in 0-1.

    Returns:
        The figure, or None when ``scores`` is empty.
    """
    if scores.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    benchmarks = [b for b in ("foundation", "chat") if (scores["benchmark"] == b).any()]
    protocols = [p for p in ("official", "strict") if (scores["protocol"] == p).any()]
    fig, axes = plt.subplots(
        len(benchmarks), len(protocols), figsize=(5.4 * len(protocols) + 2.6, 3.4 * len(benchmarks)), squeeze=False
    )
    for row, benchmark in enumerate(benchmarks):
        part = scores[scores["benchmark"] == benchmark]
        names = list(dict.fromkeys(part["name"]))
        # the kit's own categories (multi-clip, multi-turn) after the Average, which leaves them out
        kit = [n for n in names if n in KIT_CATEGORIES]
        names = [n for n in names if n not in KIT_CATEGORIES] + kit
        labels = [f"{n}\n(kit, not\naveraged)" if n in KIT_CATEGORIES else n for n in names]
        models = list(dict.fromkeys(part["model"]))
        palette = dict(zip(models, sns.color_palette("colorblind", len(models)), strict=False))
        scale = 100.0 if benchmark == "foundation" else 1.0
        for col, protocol in enumerate(protocols):
            ax = axes[row][col]
            sub = part[part["protocol"] == protocol]
            width = 0.8 / max(len(models), 1)
            for k, model in enumerate(models):
                rows = sub[sub["model"] == model].drop_duplicates("name").set_index("name").reindex(names)
                x = np.arange(len(names)) + (k - (len(models) - 1) / 2) * width
                _ci_bars(ax, x, rows["value"], rows["ci_low"], rows["ci_high"], scale, width, palette[model], model)
            ax.set_xticks(np.arange(len(names)), labels)
            if kit:  # a dotted line between the Average and the kit's categories
                ax.axvline(len(names) - len(kit) - 0.5, color="0.5", linestyle=":", linewidth=1)
            ax.set_ylabel("accuracy (%)" if benchmark == "foundation" else "judge score (1-10)")
            ax.set_ylim(0, 100 if benchmark == "foundation" else 10)
            averages = sub.loc[sub["name"] == "average", "n"]
            n_units = int(averages.max()) if not averages.empty else 0
            unit = "items" if benchmark == "foundation" else "judgments"
            ax.set_title(f"{benchmark.capitalize()} · {protocol} (n ≤ {n_units} {unit} per bar)", fontsize=10)
            ax.set_xlabel("category")
            if col == len(protocols) - 1:
                title = "model" if benchmark == "foundation" else "model · Chat judge"
                ax.legend(title=title, fontsize=8, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle("Scores by category with 95% bootstrap CIs", y=1.01)
    fig.tight_layout()
    return fig


def letter_heatmaps(confusion: pd.DataFrame) -> Any:
    """Chosen vs gold option letter, one heatmap per model (counts; a model without bias is diagonal-heavy).

    Args:
        confusion: Frame with columns ``model, gold_letter, chosen_letter, count``.

    Returns:
        The figure, or None when empty.
    """
    if confusion.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(confusion["model"]))
    cols = min(len(models), 4)
    rows = math.ceil(len(models) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 3.1 * rows), squeeze=False)
    letters = sorted(set(confusion["gold_letter"]) | set(confusion["chosen_letter"]))
    for ax, model in zip(axes.flat, models, strict=False):
        sub = confusion[confusion["model"] == model]
        grid = sub.pivot_table(index="gold_letter", columns="chosen_letter", values="count", aggfunc="sum")
        grid = grid.reindex(index=letters, columns=letters).fillna(0).astype(int)
        _count_heatmap(sns, grid, ax, square=True)
        ax.set_title(f"{_short(model, 24)} (n = {int(grid.to_numpy().sum())})", fontsize=9)
        ax.set_xlabel("chosen letter")
        ax.set_ylabel("gold letter")
    for ax in list(axes.flat)[len(models) :]:
        ax.set_visible(False)
    fig.suptitle("Position bias: option letter chosen vs gold letter (items)", y=1.02)
    fig.tight_layout()
    return fig


def circular_bars(frame: pd.DataFrame) -> Any:
    """Plain accuracy over all rotations vs circular accuracy (right in every rotation), per model.

    Args:
        frame: Columns ``model, items, accuracy, consistent_rate, circular_accuracy``.

    Returns:
        The figure, or None when empty.
    """
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    measures = {
        "accuracy": "plain (all rotations)",
        "consistent_rate": "consistent answer",
        "circular_accuracy": "circular (right in every rotation)",
    }
    long = frame.melt(id_vars=["model", "items"], value_vars=list(measures), var_name="measure", value_name="share")
    long["measure"] = long["measure"].map(measures)
    long["share"] = long["share"].astype(float) * 100
    long["model"] = long["model"].map(_short)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(frame) + 2), 3.6))
    sns.barplot(data=long, x="model", y="share", hue="measure", ax=ax, palette="colorblind")
    ax.set_ylim(0, 100)
    ax.set_ylabel("share of items (%)")
    ax.set_xlabel("model")
    ax.legend(title=None, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(f"Circular evaluation (n = {int(frame['items'].max())} items per model, every rotation answered)")
    fig.tight_layout()
    return fig


def order_scatter(pairs: pd.DataFrame) -> Any:
    """The model's Chat score when its answer is shown first vs shown second, per judge.

    Points on the diagonal are order-independent; points above it favour the first-shown answer.

    Args:
        pairs: Columns ``judge, model, uid, shown_first, shown_second``.

    Returns:
        The figure, or None when empty.
    """
    if pairs.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    judges = list(dict.fromkeys(pairs["judge"]))
    fig, axes = plt.subplots(1, len(judges), figsize=(4.4 * len(judges) + 1.5, 4.2), squeeze=False)
    rng = np.random.default_rng(0)
    for ax, judge in zip(axes[0], judges, strict=False):
        sub = pairs[pairs["judge"] == judge].copy()
        jitter = 0.2
        sub["shown_second_j"] = sub["shown_second"] + rng.uniform(-jitter, jitter, len(sub))
        sub["shown_first_j"] = sub["shown_first"] + rng.uniform(-jitter, jitter, len(sub))
        sub["model"] = sub["model"].map(_short)
        sns.scatterplot(data=sub, x="shown_second_j", y="shown_first_j", hue="model", ax=ax, s=22, alpha=0.7)
        ax.plot([1, 10], [1, 10], color="grey", linestyle="--", linewidth=1, label="no order effect")
        ax.set_xlim(0.5, 10.5)
        ax.set_ylim(0.5, 10.5)
        ax.set_aspect("equal")
        ax.set_xlabel("score when shown second (1-10)")
        ax.set_ylabel("score when shown first (1-10)")
        diff = float((sub["shown_first"] - sub["shown_second"]).mean())
        ax.set_title(
            f"judge {_short(judge, 30)}: mean first - second {diff:+.2f}\n(n = {len(sub)} answers, a turn each)",
            fontsize=10,
        )
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("Judge order bias: the same answer shown first vs second (points jittered ±0.2)", y=1.02)
    fig.tight_layout()
    return fig


def _count_heatmap(sns: Any, grid: pd.DataFrame, ax: Any, *, annotate: bool = True, square: bool = False) -> None:
    """A Blues heatmap of counts (as seaborn's) with each cell's count written on it (white on dark cells).

    Drawn with matplotlib's ``pcolormesh``: ``seaborn.heatmap`` draws the whole figure once per call (to rotate
    overlapping tick labels and pick annotation colours), which makes a figure of many panels quadratic in their
    number (11 confusion matrices took 5 s).
    """
    values = grid.to_numpy()
    top = float(values.max()) if values.size else 0.0
    ax.pcolormesh(values, cmap="Blues", vmin=0, vmax=max(top, 1.0))
    ax.set(xlim=(0, values.shape[1]), ylim=(0, values.shape[0]))
    ax.invert_yaxis()
    ax.set_xticks(np.arange(values.shape[1]) + 0.5, [str(c) for c in grid.columns])
    ax.set_yticks(np.arange(values.shape[0]) + 0.5, [str(i) for i in grid.index])
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if square:
        ax.set_aspect("equal")
    if not annotate:
        return
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            dark = top > 0 and values[i, j] / top > 0.55
            colour = "white" if dark else "0.15"
            ax.text(j + 0.5, i + 0.5, f"{int(values[i, j])}", ha="center", va="center", fontsize=8, color=colour)


def confusion_grid(confusions: Sequence[tuple[str, list[str], list[list[int]]]], model: str) -> Any:
    """Confusion matrices of one model, one panel per task (rows gold label, columns predicted label).

    Args:
        confusions: ``(task, labels, matrix)`` per task; matrix rows are gold labels in ``labels`` order, columns
            the same labels plus a last "(no answer)" column when the matrix is one wider.
        model: The model (for the title).

    Returns:
        The figure, or None when there is no task.
    """
    if not confusions:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    cols = min(len(confusions), 3)
    rows = math.ceil(len(confusions) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.0 * cols, 4.6 * rows), squeeze=False)
    for ax, (task, labels, matrix) in zip(axes.flat, confusions, strict=False):
        grid = np.asarray(matrix, dtype=int)
        columns = list(labels) + (["(no answer)"] if grid.shape[1] == len(labels) + 1 else [])
        shown = pd.DataFrame(grid, index=[_short(x, 16) for x in labels], columns=[_short(x, 16) for x in columns])
        _count_heatmap(sns, shown, ax, annotate=grid.size <= 64)
        ax.set_title(f"{task} (n = {int(grid.sum())})", fontsize=9)
        ax.set_xlabel("predicted label")
        ax.set_ylabel("gold label")
        ax.tick_params(axis="x", labelrotation=45, labelsize=7)
        ax.tick_params(axis="y", labelrotation=0, labelsize=7)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
    for ax in list(axes.flat)[len(confusions) :]:
        ax.set_visible(False)
    fig.suptitle(f"Confusion matrices of {_short(model, 40)} (items)", y=1.01)
    fig.tight_layout()
    return fig


def snr_curves(frame: pd.DataFrame) -> Any:
    """Accuracy against SNR with 95% Wilson bands per model: all graded tasks pooled, then one panel per task.

    The clean originals are a separate point at the right of each panel.

    Args:
        frame: :func:`airbench_nb.analysis.snr.snr_frame` rows of levels ``model`` (pooled) and ``task``: columns
            ``level, model, task, snr_db, accuracy, ci_low, ci_high, n, clean``.

    Returns:
        The figure, or None when empty.
    """
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    if "level" not in frame.columns:
        frame = frame.assign(level="model", task=None)
    graded_all = frame[~frame["clean"].astype(bool)]
    snrs = sorted(graded_all["snr_db"].dropna().unique())
    if not snrs:
        return None
    clean_x = snrs[-1] + max(5.0, (snrs[-1] - snrs[0]) / 4 if len(snrs) > 1 else 5.0)
    models = list(dict.fromkeys(frame["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models)), strict=False))
    tasks = sorted(frame.loc[frame["level"] == "task", "task"].dropna().unique())
    panels = [("all graded tasks", frame[frame["level"] == "model"])]
    panels += [(task, frame[(frame["level"] == "task") & (frame["task"] == task)]) for task in tasks]
    cols = min(len(panels), 4)
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols + 1.8, 3.4 * rows), squeeze=False, sharey=True)
    for ax, (title, part) in zip(axes.flat, panels, strict=False):
        graded = part[~part["clean"].astype(bool)]
        for model in models:
            sub = graded[graded["model"] == model].sort_values("snr_db")
            if sub.empty:
                continue
            color = palette[model]
            ax.plot(sub["snr_db"], sub["accuracy"] * 100, marker="o", markersize=4, color=color, label=_short(model))
            ax.fill_between(sub["snr_db"], sub["ci_low"] * 100, sub["ci_high"] * 100, color=color, alpha=0.12)
            clean = part[(part["model"] == model) & part["clean"].astype(bool)]
            if not clean.empty:
                row = clean.iloc[0]
                ax.errorbar(
                    [clean_x],
                    [row["accuracy"] * 100],
                    yerr=[[(row["accuracy"] - row["ci_low"]) * 100], [(row["ci_high"] - row["accuracy"]) * 100]],
                    fmt="s",
                    markersize=4,
                    color=color,
                    capsize=3,
                )
        ax.set_xticks([*snrs, clean_x], [f"{s:g}" for s in snrs] + ["clean"])
        ax.set_ylim(0, 100)
        n = int(graded.groupby("model")["n"].sum().max()) if not graded.empty else 0
        ax.set_title(f"{title} (n = {n} per model)", fontsize=9)
        ax.set_xlabel("SNR (dB)")
        ax.set_ylabel("accuracy (%)")
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize=8, title="model")
    fig.suptitle("Accuracy vs SNR of speech over noise or music, with 95% Wilson bands", y=1.01)
    fig.tight_layout()
    return fig


def ranking_chart(frame: pd.DataFrame) -> Any:
    """Ranks per capability (left, 1 = best) and the weighted 0-100 total (right), one row per model.

    Args:
        frame: :func:`airbench_nb.analysis.ranking.ranking_frame`'s long frame (``model, capability, scaled, rank,
            weight, partial``; capability ``total`` holds the weighted total and the mean rank).

    Returns:
        The figure, or None when empty.
    """
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    total_rows = frame[frame["capability"] == "total"].set_index("model")
    totals = total_rows["scaled"].astype(float).sort_values(ascending=False)
    mean_ranks = total_rows["rank"]
    models = list(totals.index)
    caps = [c for c in dict.fromkeys(frame["capability"]) if c != "total"]
    weights = frame[frame["capability"] != "total"].groupby("capability")["weight"].first()
    ranks = frame[frame["capability"] != "total"].pivot_table(index="model", columns="capability", values="rank")
    ranks = ranks.reindex(index=models, columns=caps)
    height = 0.5 * len(models) + 1.6
    fig, (ax_rank, ax_total) = plt.subplots(
        1, 2, figsize=(10.0, height), gridspec_kw={"width_ratios": [len(caps) + 1, 4]}, sharey=False
    )
    sns.heatmap(
        ranks,
        annot=True,
        fmt="g",
        cmap="viridis_r",
        cbar=False,
        ax=ax_rank,
        yticklabels=[_short(m) for m in models],
        xticklabels=[f"{c}\n(w {weights.get(c, float('nan')):g})" for c in caps],
    )
    ax_rank.set_xlabel("capability (weight)")
    ax_rank.set_ylabel("model")
    ax_rank.set_title("rank per capability (1 = best)", fontsize=10)
    ax_total.barh(range(len(models)), totals.to_numpy(), color=sns.color_palette("colorblind")[0])
    ax_total.set_yticks(range(len(models)), [""] * len(models))
    ax_total.invert_yaxis()
    for y, value in enumerate(totals.to_numpy()):
        mean_rank = mean_ranks.get(models[y])
        label = f"{value:.1f}" + ("" if mean_rank is None or pd.isna(mean_rank) else f"  (mean rank {mean_rank:.2f})")
        ax_total.text(value + 1.5, y, label, va="center", fontsize=8)
    ax_total.set_xlim(0, 135)
    ax_total.set_xticks(range(0, 101, 20))
    ax_total.set_xlabel("weighted total (0-100)")
    ax_total.set_title("weighted total", fontsize=10)
    fig.suptitle(f"Ranking by capability, UG-Bench style (n = {len(models)} models)", y=1.02)
    fig.tight_layout()
    return fig


def length_accuracy(frame: pd.DataFrame) -> Any:
    """Accuracy by answer length (words), per model, with 95% Wilson intervals.

    Args:
        frame: Columns ``model, bin, n, accuracy, ci_low, ci_high`` (bins in display order).

    Returns:
        The figure, or None when empty.
    """
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    bins = list(dict.fromkeys(frame["bin"]))
    models = list(dict.fromkeys(frame["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models)), strict=False))
    fig, ax = plt.subplots(figsize=(7.2, 3.8))
    width = 0.8 / max(len(models), 1)
    for k, model in enumerate(models):
        sub = frame[frame["model"] == model].set_index("bin").reindex(bins)
        x = np.arange(len(bins)) + (k - (len(models) - 1) / 2) * width
        tops = _ci_bars(ax, x, sub["accuracy"], sub["ci_low"], sub["ci_high"], 100.0, width, palette[model], model)
        for xi, ni, top in zip(x, sub["n"].to_numpy(), tops, strict=True):
            if not pd.isna(ni) and ni > 0:
                ax.text(xi, top + 2, f"n={int(ni)}", ha="center", va="bottom", fontsize=6.5, rotation=90)
    ax.set_xticks(np.arange(len(bins)), bins)
    ax.set_ylim(0, 125)
    ax.set_yticks(range(0, 101, 20))
    ax.set_xlabel("answer length (words)")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(f"Accuracy by answer length (n = {int(frame.groupby('model')['n'].sum().max())} answers per model)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def compare_forest(frame: pd.DataFrame, tasks: bool | None = None) -> Any:
    """Forest plot of paired differences A − B with 95% bootstrap CIs: a row of panels per pair, a column per benchmark.

    The panels of a column share their x axis (one unit, one scale: a difference reads the same in every pair); a
    pair without a benchmark leaves that panel out.

    Args:
        frame: :meth:`airbench_nb.analysis.compare.Comparison.comparison_frame` (``model_a, model_b, benchmark,
            level, name, n, diff, ci_low, ci_high, verdict``, and ``size``: a difference below the minimal
            detectable one is drawn hollow); Foundation differences are accuracies in 0-1, drawn in percentage
            points, Chat differences in judge-score points.
        tasks: Draw task rows too (default: only when there are at most 4 panels; categories and the Average always).

    Returns:
        The figure, or None when empty.
    """
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    panels = list(dict.fromkeys(zip(frame["model_a"], frame["model_b"], frame["benchmark"], strict=True)))
    pairs = list(dict.fromkeys((a, b) for a, b, _ in panels))
    kinds = list(dict.fromkeys(k for _, _, k in panels))
    show_tasks = len(panels) <= 4 if tasks is None else tasks
    shown = frame if show_tasks else frame[frame["level"] != "task"]
    colours = dict(
        zip(("A better", "no detectable difference", "B better"), sns.color_palette("colorblind", 3), strict=True)
    )
    colours["no detectable difference"] = (0.55, 0.55, 0.55)
    markers = {"average": "D", "category": "s", "task": "o"}
    counts = shown.groupby(["model_a", "model_b", "benchmark"], sort=False).size()
    heights = [max([int(counts.get((a, b, k), 0)) for k in kinds] + [1]) for a, b in pairs]
    fig, axes = plt.subplots(
        len(pairs),
        len(kinds),
        figsize=(6.2 * len(kinds) + 0.4, 0.24 * sum(heights) + 1.0 * len(pairs) + 0.9),
        gridspec_kw={"height_ratios": heights},
        sharex="col",
        squeeze=False,
    )
    for row_axes, (model_a, model_b) in zip(axes, pairs, strict=True):
        for ax, benchmark in zip(row_axes, kinds, strict=True):
            if (model_a, model_b, benchmark) not in counts.index:
                fig.delaxes(ax)
                continue
            part = shown[
                (shown["model_a"] == model_a) & (shown["model_b"] == model_b) & (shown["benchmark"] == benchmark)
            ]
            scale = 100.0 if benchmark == "foundation" else 1.0
            y = np.arange(len(part))[::-1]
            for yi, row in zip(y, part.itertuples(index=False), strict=True):
                colour = colours.get(row.verdict, colours["no detectable difference"])
                if not pd.isna(row.ci_low) and not pd.isna(row.ci_high):
                    ax.hlines(yi, row.ci_low * scale, row.ci_high * scale, color=colour, linewidth=1.4)
                small = getattr(row, "size", None) == "not distinguishable at this size"  # below the MDE: hollow
                ax.plot(
                    row.diff * scale,
                    yi,
                    marker=markers.get(row.level, "o"),
                    color=colour,
                    markersize=5.5,
                    fillstyle="none" if small else "full",
                )
            labels = [
                {"task": name, "category": f"{name} (category)"}.get(level, "Average")
                for level, name in zip(part["level"], part["name"], strict=True)
            ]
            ax.set_yticks(y, labels, fontsize=7.5)
            ax.tick_params(labelbottom=True)  # every panel keeps its scale, shared within the column
            ax.axvline(0.0, color="black", linestyle="--", linewidth=0.8)
            ax.set_ylim(-0.7, len(part) - 0.3)
            unit = "accuracy, percentage points" if benchmark == "foundation" else "judge score, points on 1-10"
            ax.set_xlabel(f"difference A − B ({unit})", fontsize=8.5)
            averages = part.loc[part["level"] == "average", "n"]
            n_items = int(averages.iloc[0]) if not averages.empty else int(part["n"].max())
            pair = f"A = {_short(model_a, 30)}  vs  B = {_short(model_b, 30)}"
            ax.set_title(f"{pair} · {benchmark.capitalize()} (n = {n_items} items)", fontsize=8.5)
    handles = [Line2D([], [], color=c, marker="o", linestyle="-", label=v) for v, c in colours.items()]
    if "size" in shown.columns and (shown["size"] == "not distinguishable at this size").any():
        grey = colours["no detectable difference"]
        label = "hollow: below the MDE\n(not distinguishable\nat this size)"
        handles.append(Line2D([], [], color=grey, marker="o", fillstyle="none", linestyle="", label=label))
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 0.98), fontsize=8, title="Holm, α = 0.05")
    which = "tasks, categories and Average" if show_tasks else "categories and Average"
    fig.suptitle(f"Paired differences with 95% bootstrap CIs ({which}; {len(pairs)} pairs of models)", y=1.0)
    fig.tight_layout()
    return fig


def agreement_bars(frame: pd.DataFrame, last: Sequence[str] = ()) -> Any:
    """Judge-human agreement per judge and kind with 95% CI whiskers, the human-human agreement beside the judges.

    One panel per kind (Foundation, Chat); in each, one group of bars per judge (``human vs human`` last), one bar
    per measure (Chat: ties a class, and without ties), ``n`` (votes) above each bar.

    Args:
        frame: :func:`airbench_nb.analysis.agreement.agreement_frame`: columns ``judge, kind, label, n, agreement,
            ci_low, ci_high``.
        last: Judge labels drawn after the others (``airbench_nb.analysis.agreement.HUMANS``: the human-human
            agreement beside the judges).

    Returns:
        The figure, or None when empty.
    """
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    kinds = [k for k in ("foundation", "chat") if k in set(frame["kind"])]
    measures = list(dict.fromkeys(frame["label"]))
    palette = dict(zip(measures, sns.color_palette("colorblind", len(measures)), strict=False))
    groups = {k: frame[frame["kind"] == k] for k in kinds}
    judges = {k: sorted(set(g["judge"]), key=lambda j: (j in last, j)) for k, g in groups.items()}
    widths = [max(2.0, 1.1 * len(judges[k])) for k in kinds]
    fig, axes = plt.subplots(
        1, len(kinds), figsize=(sum(widths) + 2.5, 4.0), squeeze=False, gridspec_kw={"width_ratios": widths}
    )
    for ax, kind in zip(axes[0], kinds, strict=True):
        sub_measures = list(dict.fromkeys(groups[kind]["label"]))
        width = 0.8 / len(sub_measures)
        for k, measure in enumerate(sub_measures):
            sub = groups[kind][groups[kind]["label"] == measure].set_index("judge").reindex(judges[kind])
            value = sub["agreement"].astype(float)
            low = np.fmin(sub["ci_low"].astype(float), value)  # a bootstrap interval may sit beside its estimate
            high = np.fmax(sub["ci_high"].astype(float), value)
            x = np.arange(len(judges[kind])) + (k - (len(sub_measures) - 1) / 2) * width
            tops = _ci_bars(ax, x, value, low, high, 100.0, width, palette[measure], measure)
            for xi, ni, top in zip(x, sub["n"].to_numpy(), tops, strict=True):
                if not pd.isna(ni) and ni > 0:
                    ax.text(xi, top + 2, f"n={int(ni)}", ha="center", va="bottom", fontsize=6.5, rotation=90)
        ax.set_xticks(np.arange(len(judges[kind])), [_short(j) for j in judges[kind]], rotation=20, ha="right")
        ax.set_ylim(0, 125)
        ax.set_yticks(range(0, 101, 20))
        ax.set_xlabel("judge")
        ax.set_title(f"{kind.capitalize()} (n = {int(groups[kind]['n'].max())} votes)")
    axes[0][0].set_ylabel("agreement with human labels (%)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[m]) for m in measures]
    fig.legend(handles, measures, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize=8)
    counts = ", ".join(f"{kind} {int(groups[kind]['n'].max())}" for kind in kinds)
    fig.suptitle(
        f"Judge-human agreement with 95% CIs; human vs human = pairwise agreement of annotators (n = votes: {counts})"
    )
    fig.tight_layout()
    return fig


def clip_accuracy_bars(frame: pd.DataFrame) -> Any:
    """Accuracy on single-clip vs multi-clip Foundation items per model (strict), with 95% Wilson intervals.

    Args:
        frame: :func:`airbench_nb.analysis.multi.clip_accuracy`'s frame (``model, clips, n, accuracy, ci_low,
            ci_high``).

    Returns:
        The figure, or None when empty.
    """
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(frame["model"]))
    kinds = list(dict.fromkeys(frame["clips"]))
    palette = dict(zip(kinds, sns.color_palette("colorblind", len(kinds)), strict=False))
    fig, ax = plt.subplots(figsize=(max(5.5, 1.5 * len(models) + 2.5), 3.8))
    width = 0.8 / max(len(kinds), 1)
    for k, kind in enumerate(kinds):
        sub = frame[frame["clips"] == kind].set_index("model").reindex(models)
        x = np.arange(len(models)) + (k - (len(kinds) - 1) / 2) * width
        tops = _ci_bars(ax, x, sub["accuracy"], sub["ci_low"], sub["ci_high"], 100.0, width, palette[kind], kind)
        for xi, ni, top in zip(x, sub["n"].to_numpy(), tops, strict=True):
            if not pd.isna(ni) and ni > 0:
                ax.text(xi, top + 2, f"n={int(ni)}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(np.arange(len(models)), [_short(m) for m in models], rotation=15, ha="right")
    ax.set_ylim(0, 115)
    ax.set_yticks(range(0, 101, 20))
    ax.set_xlabel("model")
    ax.set_ylabel("accuracy (%, strict)")
    ax.set_title("Foundation accuracy on single-clip vs multi-clip items (strict, 95% Wilson CIs; n on each bar)")
    ax.legend(title="items about", fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def turn_scores_chart(frame: pd.DataFrame) -> Any:
    """Chat score by turn of the multi-turn conversations, one line per (model, judge), with 95% bootstrap CIs.

    Args:
        frame: :func:`airbench_nb.analysis.multi.turn_scores`'s frame (``model, chat_judge, turn, value, ci_low,
            ci_high, conversations``).

    Returns:
        The figure, or None when empty.
    """
    shown = frame.dropna(subset=["value"]) if not frame.empty else frame
    if shown.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    shown = shown.assign(
        line=[f"{_short(m)} · {_short(j, 20)}" for m, j in zip(shown["model"], shown["chat_judge"], strict=True)]
    )
    lines = list(dict.fromkeys(shown["line"]))
    palette = dict(zip(lines, sns.color_palette("colorblind", len(lines)), strict=False))
    turns = sorted(int(t) for t in shown["turn"].unique())
    fig, ax = plt.subplots(figsize=(7.2, 3.8))
    offsets = (np.arange(len(lines)) - (len(lines) - 1) / 2) * 0.06
    for offset, line in zip(offsets, lines, strict=True):
        sub = shown[shown["line"] == line].sort_values("turn")
        x = sub["turn"].astype(float).to_numpy() + offset
        y = sub["value"].astype(float).to_numpy()
        below = np.nan_to_num(y - sub["ci_low"].astype(float).to_numpy())
        above = np.nan_to_num(sub["ci_high"].astype(float).to_numpy() - y)
        ax.errorbar(x, y, yerr=np.vstack([below, above]), marker="o", capsize=3, color=palette[line], label=line)
    ax.set_xticks(turns, [f"turn {t}" if t == 1 else f"turn {t}\n(follow-up)" for t in turns])
    ax.set_ylim(1, 10.5)
    ax.set_xlabel("turn of the conversation")
    ax.set_ylabel("judge score of the answer (1-10)")
    n = int(shown["conversations"].max())
    ax.set_title(f"Multi-turn Chat: score by turn (n = {n} conversations, 95% bootstrap CIs)")
    ax.legend(title="model · judge", fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


SSEU_METRICS: tuple[tuple[str, str, str], ...] = (
    ("transcription", "wer", "WER (%, lower is better)"),
    ("scene", "macc", "scene mACC (%)"),
    ("events", "map", "event mAP (%)"),
)
"""SSEU-Bench's three tasks, their metric and the axis label of each panel."""


def sseu_snr_curves(frame: pd.DataFrame) -> Any:
    """SSEU-Bench's headline figure: WER, scene mACC and event mAP against SNR, per model; one row per prompting mode.

    Bands are the 95% bootstrap intervals; the clean copies (transcription only, asked alone) are a square at the
    right of the WER panel of the ``independent`` row.

    Args:
        frame: :meth:`airbench_nb.analysis.sseu.SseuAnalysis.curves_frame` (columns ``model, task, metric, mode,
            snr_db, n, value, ci_low, ci_high``; ``snr_db`` NaN for the clean copies).

    Returns:
        The figure, or None when there is no SNR step.
    """
    if frame.empty or frame["snr_db"].dropna().empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    snrs = sorted(frame["snr_db"].dropna().unique())
    clean_x = snrs[-1] + max(3.0, (snrs[-1] - snrs[0]) / 5 if len(snrs) > 1 else 3.0)
    models = list(dict.fromkeys(frame["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models)), strict=False))
    modes = [m for m in ("independent", "joint", "sseu-cot") if (frame["mode"] == m).any()]
    panels = [spec for spec in SSEU_METRICS if (frame["task"] == spec[0]).any()]
    fig, axes = plt.subplots(
        len(modes), len(panels), figsize=(4.4 * len(panels) + 2.4, 3.0 * len(modes)), squeeze=False, sharex=True
    )
    for r, mode in enumerate(modes):
        for c, (task, _metric, label) in enumerate(panels):
            ax = axes[r, c]
            part = frame[(frame["task"] == task) & (frame["mode"] == mode)]
            graded = part[part["snr_db"].notna()]
            for model, sub in graded.groupby("model", sort=False):
                sub = sub.sort_values("snr_db")
                color = palette[model]
                ax.plot(sub["snr_db"], sub["value"] * 100, marker="o", markersize=3.5, color=color, label=_short(model))
                ax.fill_between(sub["snr_db"], sub["ci_low"] * 100, sub["ci_high"] * 100, color=color, alpha=0.12)
            clean = part[part["snr_db"].isna()]
            for _, row in clean.iterrows():
                low, high = row["ci_low"], row["ci_high"]
                yerr = None if pd.isna(low) else [[(row["value"] - low) * 100], [(high - row["value"]) * 100]]
                ax.errorbar(
                    [clean_x], [row["value"] * 100], yerr=yerr, fmt="s", markersize=4, color=palette[row["model"]]
                )
            ticks = [*snrs, clean_x]
            ax.set_xticks(ticks, [f"{s:g}" for s in snrs] + ["clean"], fontsize=8)
            per_point = int(graded["n"].max()) if not graded.empty else 0
            ax.set_title(f"{task}, {mode} (n = {per_point} clips per point)", fontsize=9)
            ax.set_ylabel(label, fontsize=8.5)
            ax.set_ylim(0, 105) if task != "transcription" else ax.set_ylim(bottom=0)
            if r == len(modes) - 1:
                ax.set_xlabel("SNR of speech over background (dB)")
            if graded.empty and clean.empty:
                ax.text(0.5, 0.5, "not answered", ha="center", va="center", transform=ax.transAxes, color="grey")
    handles: list[Any] = []
    labels: list[str] = []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    fig.suptitle("SSEU-Bench: WER, scene mACC and event mAP against SNR (95% bootstrap bands)", fontsize=10)
    fig.tight_layout()
    return fig


def sseu_mode_differences(frame: pd.DataFrame) -> Any:
    """Joint minus independent, and chain of thought minus joint, per model and task, with paired 95% intervals.

    Args:
        frame: :meth:`airbench_nb.analysis.sseu.SseuAnalysis.differences_frame` (columns ``model, comparison, task,
            metric, clips, difference, ci_low, ci_high, worse, better, sacrificed``).

    Returns:
        The figure, or None when empty.
    """
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    comparisons = list(dict.fromkeys(frame["comparison"]))
    models = list(dict.fromkeys(frame["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models)), strict=False))
    tasks = [t for t, _, _ in SSEU_METRICS if (frame["task"] == t).any()]
    fig, axes = plt.subplots(
        1, len(comparisons), figsize=(4.8 * len(comparisons) + 1.6, 0.5 * len(tasks) * len(models) + 1.6), squeeze=False
    )
    for ax, comparison in zip(axes.flat, comparisons, strict=True):
        part = frame[frame["comparison"] == comparison]
        labels = []
        y = 0
        for task in tasks:
            for model in models:
                row = part[(part["task"] == task) & (part["model"] == model)]
                if row.empty:
                    continue
                r = row.iloc[0]
                value = r["difference"] * 100 if pd.notna(r["difference"]) else np.nan
                low = (r["difference"] - r["ci_low"]) * 100 if pd.notna(r["ci_low"]) else 0.0
                high = (r["ci_high"] - r["difference"]) * 100 if pd.notna(r["ci_high"]) else 0.0
                marker = "X" if r["sacrificed"] else "o"
                ax.errorbar([value], [y], xerr=[[low], [high]], fmt=marker, color=palette[model], capsize=2)
                labels.append(f"{r['metric'].upper()} · {_short(model, 22)} (n = {r['clips']})")
                y += 1
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(labels)), labels, fontsize=7.5)
        ax.invert_yaxis()
        ax.set_title(f"{comparison} (× sacrificed task)", fontsize=9)
        ax.set_xlabel("difference (percentage points; WER up or mACC/mAP down is a loss)")
    fig.suptitle("SSEU-Bench: effect of joint and chain-of-thought prompting, paired over the same clips", fontsize=10)
    fig.tight_layout()
    return fig


def ugbench_chart(frame: pd.DataFrame, n_tasks: int | None = None) -> Any:
    """UG-Bench's total per model as stacked bars: each capability's weighted part, its sub-rank written inside.

    Args:
        frame: :meth:`airbench_nb.analysis.ugbench.UgBenchRanking.ranking_frame` (``position, model, capability,
            weight, sub_rank, scaled, contribution, score, partial``; one row per model and capability).
        n_tasks: Tasks the ranking rests on, for the title (None: not shown).

    Returns:
        The figure (save it with ``save(fig, folder, "ugbench-capability-ranking")``), or None when no model has a
        total.
    """
    if frame.empty or frame["score"].isna().all():
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    totals = frame.groupby("model", sort=False)[["position", "score", "partial"]].first()
    totals = totals.sort_values(["position"], kind="stable")
    models = list(totals.index)
    capabilities = list(dict.fromkeys(frame["capability"]))
    weights = frame.groupby("capability")["weight"].first()
    colors = dict(zip(capabilities, sns.color_palette("colorblind", len(capabilities)), strict=False))
    fig, ax = plt.subplots(figsize=(10.0, 0.55 * len(models) + 1.8))
    left = np.zeros(len(models))
    for capability in capabilities:
        rows = frame[frame["capability"] == capability].set_index("model").reindex(models)
        widths = rows["contribution"].astype(float).fillna(0.0).to_numpy()
        label = f"{capability.replace('_', ' ')} (w {weights[capability]:.2g})"
        ax.barh(range(len(models)), widths, left=left, color=colors[capability], label=label, edgecolor="white")
        for y, (width, sub_rank) in enumerate(zip(widths, rows["sub_rank"], strict=True)):
            if width >= 4 and sub_rank is not None and not pd.isna(sub_rank):
                ax.text(left[y] + width / 2, y, f"{sub_rank:.3g}", ha="center", va="center", fontsize=7)
        left += widths
    for y, model in enumerate(models):
        score = totals.at[model, "score"]
        text = "no total" if score is None or pd.isna(score) else f"{score:.2f}"
        ax.text(left[y] + 1.0, y, text + (" (partial)" if totals.at[model, "partial"] else ""), va="center", fontsize=8)
    ax.set_yticks(range(len(models)), [f"{int(totals.at[m, 'position'])}. {_short(m)}" for m in models])
    ax.invert_yaxis()
    ax.set_xlim(0, 118)
    ax.set_xticks(range(0, 101, 20))
    ax.set_xlabel("weighted total on 0-100 (each part: weight x scaled sub-rank; numbers in bars: sub-rank, 1 = best)")
    ax.set_ylabel("model (position)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.6 / (len(models) + 3)), ncol=2, fontsize=8)
    tasks = "" if n_tasks is None else f", {n_tasks} tasks"
    ax.set_title(f"UG-Bench ranking over every task (n = {len(models)} models{tasks})")
    fig.tight_layout()
    return fig


def metric_panels(
    frame: pd.DataFrame,
    *,
    panel: str,
    group: str,
    value: str,
    scale: float,
    ylabels: Mapping[str, str],
    title: str,
    xlabel: str,
    ylim: tuple[float, float] | None = None,
) -> Any:
    """Grouped bars per model with 95% CI whiskers, one panel per value of ``panel`` (each with its own unit).

    Args:
        frame: Long frame with columns ``model``, ``panel``, ``group``, ``value``, ``ci_low``, ``ci_high``, ``n``.
        panel: Column whose values get a panel each (a metric, a measure).
        group: Column of the x-axis groups (a language pair, a task).
        value: Column of the bar heights.
        scale: Multiplier of the values for display (100 for fractions shown in %).
        ylabels: Y-axis label of each panel (with its unit); a panel not listed is labelled by its name.
        title: Figure title (n is added per panel).
        xlabel: X-axis label.
        ylim: Y-axis range of every panel, raised to fit higher values (None: matplotlib's).

    Returns:
        The figure, or None when ``frame`` has no value.
    """
    frame = frame[frame[value].notna()]
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys(frame[panel]))
    models = list(dict.fromkeys(frame["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models)), strict=False))
    # a panel draws the models with a value in it (no empty slots), and is as wide as its bars need
    present = {p: [m for m in models if ((frame[panel] == p) & (frame["model"] == m)).any()] for p in panels}
    widths = [max(3.2, 0.9 * frame[frame[panel] == p][group].nunique() * len(present[p]) ** 0.5 + 1.9) for p in panels]
    fig, axes = plt.subplots(
        1,
        len(panels),
        figsize=(sum(widths) + 0.6 * len(panels), 3.8),
        width_ratios=widths,
        squeeze=False,
    )
    for ax, name in zip(axes[0], panels, strict=True):
        part = frame[frame[panel] == name]
        groups = list(dict.fromkeys(part[group]))
        here = present[name]
        width = 0.8 / max(len(here), 1)
        for k, model in enumerate(here):
            rows = part[part["model"] == model].drop_duplicates(group).set_index(group).reindex(groups)
            x = np.arange(len(groups)) + (k - (len(here) - 1) / 2) * width
            low = rows["ci_low"].fillna(rows[value])
            high = rows["ci_high"].fillna(rows[value])
            _ci_bars(ax, x, rows[value], low, high, scale, width, palette[model], model, zero_labels=True)
        ax.set_xticks(np.arange(len(groups)), [str(g) for g in groups], rotation=15, ha="right")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabels.get(name, str(name)))
        if ylim is not None:  # raised to fit a value above it (a WER over 100%)
            highest = float(np.nanmax(part[[value, "ci_high"]].astype(float).to_numpy())) * scale * 1.08
            ax.set_ylim(ylim[0], max(ylim[1], highest))
        n_max = int(part["n"].max()) if part["n"].notna().any() else 0
        ax.set_title(f"{name} (n ≤ {n_max} per bar)", fontsize=10)
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[m]) for m in models]  # every model, whatever its panel
    axes[0][-1].legend(
        handles,
        [_short(m, 44) for m in models],
        title="model",
        fontsize=8,
        title_fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
    )
    fig.suptitle(title, y=1.02)
    fig.tight_layout()
    return fig


PERTURBATION_METRIC_LABELS = {
    "accuracy": "accuracy change (points)\nperturbed − original",
    "wer": "WER change (points)\nperturbed − original",
    "bleu": "BLEU change (BLEU points)\nperturbed − original",
    "map": "mAP change (points)\nperturbed − original",
}
"""Y-axis label of each metric's row in :func:`perturbation_curves`."""


def perturbation_curves(frame: pd.DataFrame) -> Any:
    """The score change under each perturbation, per model: one column per curve, one row per metric.

    Each point is ``perturbed - original`` on the same items (points), its band the paired bootstrap 95% interval; the
    dashed line at 0 is the original audio. For accuracy, BLEU and mAP below 0 is a loss, for WER above 0 is.

    Args:
        frame: :func:`airbench_nb.analysis.perturbations.headline_points` of
            :func:`~airbench_nb.analysis.perturbations.perturbations_frame` (columns ``model, task, metric, curve,
            parameter, unit, measured, n, clean, perturbed, difference, ci_low, ci_high``).

    Returns:
        The figure, or None when empty.
    """
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    curves = list(dict.fromkeys(frame.sort_values("curve", kind="stable")["curve"]))
    metrics = [m for m in PERTURBATION_METRIC_LABELS if (frame["metric"] == m).any()]
    models = list(dict.fromkeys(frame["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models)), strict=False))
    fig, axes = plt.subplots(
        len(metrics), len(curves), figsize=(3.3 * len(curves) + 2.6, 2.9 * len(metrics)), squeeze=False
    )
    for r, metric in enumerate(metrics):
        for c, curve in enumerate(curves):
            ax = axes[r, c]
            part = frame[(frame["metric"] == metric) & (frame["curve"] == curve)]
            ax.axhline(0.0, color="grey", linestyle="--", linewidth=0.9)
            categorical = curve == "paraphrase"  # rewrites are numbered, not a scale: points and bars, no line
            for model, sub in part.groupby("model", sort=False):
                sub = sub.sort_values("parameter")
                color = palette[model]
                k = models.index(model)  # a marker of its own, larger for earlier models: equal values stay visible
                if categorical:
                    values = sub["difference"].astype(float) * 100
                    low = (values - sub["ci_low"].astype(float) * 100).clip(lower=0)
                    high = (sub["ci_high"].astype(float) * 100 - values).clip(lower=0)
                    offset = (k - (len(models) - 1) / 2) * 0.06  # side by side within a rewrite
                    ax.errorbar(
                        sub["parameter"] + offset,
                        values,
                        yerr=[low, high],
                        fmt="osD^v<>"[k % 7],
                        markersize=max(3.0, 8.0 - 1.5 * k),
                        fillstyle="full" if k == 0 else "none",
                        color=color,
                        capsize=2,
                        label=_short(model),
                    )
                    ax.set_xticks(sorted({float(x) for x in sub["parameter"]}))
                    continue
                ax.plot(
                    sub["parameter"],
                    sub["difference"] * 100,
                    marker="osD^v<>"[k % 7],
                    markersize=max(3.0, 8.0 - 1.5 * k),
                    fillstyle="full" if k == 0 else "none",
                    color=color,
                    label=_short(model),
                )
                ax.fill_between(
                    sub["parameter"],
                    sub["ci_low"].astype(float) * 100,
                    sub["ci_high"].astype(float) * 100,
                    color=color,
                    alpha=0.14,
                )
            unit = str(frame[frame["curve"] == curve]["unit"].iloc[0])
            if part.empty:  # no scale to read: the panel says so, without axes of its own
                ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, color="grey")
                ax.set_xticks([])
                ax.set_yticks([])
                ax.grid(False)
                n_text = ""
            else:
                low, high = int(part["n"].min()), int(part["n"].max())
                n_text = f" (n = {low} items per point)" if low == high else f" (n = {low}-{high} items per point)"
            ax.set_title(f"{curve}{n_text}", fontsize=9)
            ax.set_xlabel(f"{curve} ({unit})", fontsize=8.5)
            if c == 0:
                ax.set_ylabel(PERTURBATION_METRIC_LABELS.get(metric, metric), fontsize=8.5)
    handles: list[Any] = []
    labels: list[str] = []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    fig.suptitle(
        "Score change under perturbations of the audio or the question: perturbed − original on the same items "
        "(paired 95% bootstrap bands or bars)",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def controls_chart(frame: pd.DataFrame) -> Any:
    """Does the model listen? Each control's score change per model, and the audio-needed share.

    Left: control − audio (points) per model and control; right: the audio-needed share (%). Bars of 95% paired
    bootstrap intervals.

    Args:
        frame: :func:`airbench_nb.analysis.controls.controls_plot_frame` (columns ``model, measure, value, ci_low,
            ci_high, n``).

    Returns:
        The figure, or None when empty.
    """
    if frame.empty:
        return None
    sns = _sns()
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(frame["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models)), strict=False))
    differences = frame[frame["measure"] != "audio needed"]
    needed = frame[frame["measure"] == "audio needed"]
    controls = list(dict.fromkeys(differences["measure"]))
    fig, (left, right) = plt.subplots(
        1,
        2,
        figsize=(min(14.0, 7.5 + 0.3 * len(controls) * len(models)), max(3.8, 1.6 + 0.3 * len(models))),
        width_ratios=[3, 1.4],
    )
    width = 0.8 / max(1, len(models))
    for k, model in enumerate(models):
        own = differences[differences["model"] == model].set_index("measure")
        xs = [i - 0.4 + width * (k + 0.5) for i, c in enumerate(controls) if c in own.index]
        rows = own.loc[[c for c in controls if c in own.index]]
        values = rows["value"].astype(float) * 100
        yerr = [
            (values - rows["ci_low"].astype(float) * 100).clip(lower=0),
            (rows["ci_high"].astype(float) * 100 - values).clip(lower=0),
        ]
        left.errorbar(xs, values, yerr=yerr, fmt="o", color=palette[model], label=_short(model, 44), capsize=2.5)
    left.axhline(0.0, color="grey", linestyle="--", linewidth=0.9)
    left.set_xticks(range(len(controls)), controls)
    left.set_xlabel("control (the audio silenced, replaced or left out)")
    left.set_ylabel("score change (points)\ncontrol − audio")
    n_low, n_high = (int(differences["n"].min()), int(differences["n"].max())) if not differences.empty else (0, 0)
    n_text = f"{n_low}" if n_low == n_high else f"{n_low}-{n_high}"
    left.set_title(f"Score under each control (n = {n_text} items per point)", fontsize=9)
    if not needed.empty:
        values = needed["value"].astype(float) * 100
        yerr = [
            (values - needed["ci_low"].astype(float) * 100).clip(lower=0),
            (needed["ci_high"].astype(float) * 100 - values).clip(lower=0),
        ]
        # one horizontal bar per model, its name beside it (whole up to 40 characters, never rotated over another)
        ys = np.arange(len(needed))[::-1]
        right.barh(ys, values, color=[palette[m] for m in needed["model"]], alpha=0.8)
        right.errorbar(values, ys, xerr=yerr, fmt="none", color="black", capsize=2.5)
        right.set_yticks(ys, [_short(m, 40) for m in needed["model"]], fontsize=7.5)
        right.set_ylim(-0.6, len(needed) - 0.4)
    right.set_xlim(0, 100)
    right.set_xlabel("items that needed the audio (%)")
    right.set_title("Audio-needed share", fontsize=9)
    fig.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    fig.suptitle("Does the model listen? Scores under the audio-reliance controls (paired 95% bootstrap)", fontsize=10)
    fig.tight_layout()
    return fig
