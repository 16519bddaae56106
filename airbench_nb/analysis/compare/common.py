"""Constants of model comparisons: levels, verdicts, test names, frame columns.

See :mod:`airbench_nb.analysis.compare`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

logger = logging.getLogger(__name__)

SEPARATOR = "::"
"""Separates a run folder from a model spec in a source (``RUN_DIR::MODEL_SPEC``)."""

ALPHA = 0.05
"""Family-wise error rate of the Holm-corrected verdicts."""

CONFIDENCE = 0.95
"""Coverage of the paired bootstrap intervals."""

DEFAULT_REPS = 2000
"""Bootstrap replicates per comparison."""

MAX_EXAMPLES = 20
"""Uids listed per kind of left-out item (only in A, only in B, differing, unscored)."""

A_BETTER = "A better"
"""Verdict: model A is better, Holm-corrected p below alpha."""

B_BETTER = "B better"
"""Verdict: model B is better, Holm-corrected p below alpha."""

NO_DIFFERENCE = "no detectable difference"
"""Verdict: the Holm-corrected p-value is not below alpha (or there is no p-value)."""

BENCHMARKS: tuple[str, ...] = ("foundation", "chat")
"""Benchmarks compared, in report order."""

LEVELS: tuple[str, ...] = ("average", "category", "task")
"""Levels of the comparison table, in report order."""

FOUNDATION_CATEGORIES: tuple[str, ...] = ("speech", "sound", "music")
"""Foundation categories, in report order."""

CHAT_CATEGORIES: tuple[str, ...] = ("speech", "sound", "music", "mixed")
"""Chat categories, in report order (Mixed is the mean of its two tasks)."""

KIT_FOUNDATION_CATEGORIES: tuple[str, ...] = ("multi-clip",)
"""The kit's own Foundation categories: compared in rows of their own, outside the Average."""

KIT_CHAT_CATEGORIES: tuple[str, ...] = ("multi-turn",)
"""The kit's own Chat categories: compared in rows of their own, outside the Average."""

MCNEMAR = "McNemar exact"
"""Test of a Foundation task (statsmodels mcnemar, exact=True)."""

MCNEMAR_POOLED = "McNemar exact, pooled items"
"""Test of a Foundation category or Average: McNemar on the level's items pooled."""

WILCOXON = "Wilcoxon signed-rank"
"""Test of a Chat task (scipy.stats.wilcoxon of the per-item differences)."""

WILCOXON_POOLED = "Wilcoxon signed-rank, pooled items"
"""Test of a Chat category or Average: Wilcoxon on the level's per-item differences pooled."""

TESTS: Mapping[str, str] = {
    MCNEMAR: "statsmodels.stats.contingency_tables.mcnemar(exact=True) on the task's items: two-sided binomial "
    "test of the discordant pairs (A right and B wrong vs A wrong and B right)",
    MCNEMAR_POOLED: "the same on the pooled items of the category or of the Average (tests the pooled accuracy, "
    "not the unweighted mean of tasks that diff shows)",
    WILCOXON: "scipy.stats.wilcoxon of the per-item differences of the task (an item's score is the mean over its "
    "scored orders); zero differences dropped",
    WILCOXON_POOLED: "the same on the pooled per-item differences of the category or of the Average",
}
"""What each name in the ``test`` column means."""

FRAME_COLUMNS: tuple[str, ...] = (
    "model_a",
    "model_b",
    "benchmark",
    "level",
    "name",
    "n",
    "a",
    "b",
    "diff",
    "ci_low",
    "ci_high",
    "test",
    "p_value",
    "p_holm",
    "verdict",
    "mde",
    "design_effect",
    "clusters",
    "items_needed",
    "size",
)
"""Columns of :meth:`Comparison.comparison_frame` (and keys of every row of ``as_dict()["comparisons"]``)."""

FIGURE_STEM = "model-differences-with-95-ci"
"""File stem of the forest plot when a report saves it."""
