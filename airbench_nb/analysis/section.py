"""One analysis of a run, as notebook 05 shows it and ``analysis.json`` stores it: :class:`Section` and :func:`show`.

Its own module so that every analysis (the report, the comparison of models, ...) can return one without importing
the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import BaseModel


@dataclass
class Section:
    """One analysis: its JSON data, a frame to display, a figure, or why there is nothing to show."""

    name: str
    """Key in ``analysis.json``."""
    data: Any
    """The result: a payload model of :mod:`airbench_nb.analysis_report`, or a dict or list of them keyed by model
    or judge, or JSON-ready data; empty when there is nothing."""
    frame: pd.DataFrame = field(default_factory=pd.DataFrame)
    """A tidy table for display."""
    figure: Any = None
    """A matplotlib figure, or None."""
    figure_key: str | None = None
    """Key of :data:`airbench_nb.plots.FIGURE_NAMES` the figure is saved under."""
    reason: str | None = None
    """Why the section is empty, or None."""
    extra_figures: dict[str, Any] = field(default_factory=dict)
    """Further figures by file stem (e.g. confusion matrices of another model)."""
    extra_data: dict[str, Any] | BaseModel = field(default_factory=dict)
    """Details written to ``analysis.json`` as ``<name>_detail`` (tests used, per-task curves, weights, ...): the
    section's ``*Detail`` payload model, or a dict."""
    extra_frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Further tables to display after :attr:`frame`, by title (a benchmark's position bias, its circular
    evaluation, ...); display only: ``analysis.json`` holds their numbers in :attr:`data`."""


SHOW_DPI = 72
"""Resolution of the figures shown in notebook 05 (and so in its HTML); the saved PNGs use :data:`plots.DPI`."""


def show(section: Section) -> None:
    """Display a section in a notebook: the reason when empty, else its frame, further frames and figures."""
    from IPython.display import Markdown, display

    from airbench_nb.markup import md_text

    if section.reason:
        display(Markdown(f"*Nothing to show: {md_text(section.reason)}*"))
        return
    if not section.frame.empty:
        display(section.frame)
    for title, frame in section.extra_frames.items():
        if not frame.empty:
            display(Markdown(f"*{md_text(title)}*"))
            display(frame)
    import matplotlib.pyplot as plt
    from IPython.display import Image

    from airbench_nb import plots

    # Each figure is drawn once, at the saved resolution (kept for analysis/figures/), and displayed shrunk to
    # SHOW_DPI, then closed: left open, the inline backend would show it a second time at the end of the cell (twice
    # the bytes in the notebook and its HTML). A shown figure is final: the file written later holds what was shown.
    for figure in [section.figure, *section.extra_figures.values()]:
        if figure is not None:
            data = plots.png_bytes(figure, keep=True)
            display(Image(data=plots.shrink_png(data, SHOW_DPI / plots.DPI), format="png"))
            plt.close(figure)
