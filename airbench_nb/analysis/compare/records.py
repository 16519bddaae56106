"""Records of a comparison: the model sources, how their items matched, and the comparison itself.

See :mod:`airbench_nb.analysis.compare`.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from airbench_nb.analysis.compare.common import CONFIDENCE, FRAME_COLUMNS, TESTS
from airbench_nb.analysis_report import ComparisonPayload, ItemOverlap

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelSource:
    """One model of one run folder, as compared."""

    label: str
    """Name in the table: the model spec, or ``<run folder name>::<spec>`` when models come from several runs."""
    run_dir: str
    """The run folder."""
    model: str
    """The model spec inside the run."""


@dataclass
class ItemMatch:
    """Which items of one benchmark a pair of models is compared on, and which were left out."""

    model_a: str
    """Label of model A."""
    model_b: str
    """Label of model B."""
    benchmark: str
    """``foundation`` or ``chat``."""
    compared: int
    """Items compared (same uid and content, scored on both sides)."""
    only_a: int = 0
    """Items only A's run has (or only A's run has usable audio for)."""
    only_b: int = 0
    """Items only B's run has."""
    differ: int = 0
    """Items with the same uid and different content (audio hash, question, choices, answer, reference, task)."""
    unscored: int = 0
    """Shared items one side has no score for (official failures, Chat items with no scored order)."""
    differ_fields: dict[str, int] = field(default_factory=dict)
    """How often each field differed among the ``differ`` items."""
    examples: dict[str, list[str]] = field(default_factory=dict)
    """Up to :data:`MAX_EXAMPLES` uids of each kind left out: ``only_a``, ``only_b``, ``differ``, ``unscored``."""
    categories: list[str] = field(default_factory=list)
    """Categories the compared items cover (an Average over fewer than all is partial)."""
    reason: str | None = None
    """Why the pair has no row on this benchmark, or None."""

    def as_dict(self) -> dict[str, Any]:
        """The match as a JSON-ready dict (a serializer: :meth:`payload` is the typed form)."""
        return asdict(self)

    def payload(self) -> ItemOverlap:
        """The match as ``analysis.json`` holds it (``comparison.items[i]``)."""
        return ItemOverlap.from_data(self.as_dict())


@dataclass
class Comparison:
    """Every pairwise comparison of a set of models, Holm-corrected together."""

    protocol: str
    """``strict`` or ``official``: how answers and judge replies are read."""
    chat_judge: str | None
    """The judge whose Chat scores are compared; None when no model has Chat scores."""
    seed: int
    """Seed of the bootstraps."""
    reps: int
    """Bootstrap replicates."""
    alpha: float
    """Level of the verdicts after Holm correction."""
    models: list[ModelSource]
    """The models compared, in the order given."""
    rows: list[dict[str, Any]]
    """One dict per (pair, benchmark, level, name) with the keys of :data:`FRAME_COLUMNS`."""
    items: list[ItemMatch]
    """Per pair and benchmark: items compared and left out."""

    def comparison_frame(self) -> pd.DataFrame:
        """The table as a DataFrame with :data:`FRAME_COLUMNS` (NaN where a value is undefined)."""
        frame = pd.DataFrame(self.rows, columns=list(FRAME_COLUMNS))
        for column in ("a", "b", "diff", "ci_low", "ci_high", "p_value", "p_holm"):
            frame[column] = frame[column].astype(float)
        frame["n"] = frame["n"].astype(int)
        return frame

    def payload(self) -> ComparisonPayload:
        """The comparison as ``analysis.json`` holds it (``comparison``): :meth:`as_dict`, typed."""
        return ComparisonPayload.from_data(self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (a serializer): settings, models, the table (``comparisons``), items per pair, the tests used."""
        return {
            "protocol": self.protocol,
            "chat_judge": self.chat_judge,
            "seed": self.seed,
            "reps": self.reps,
            "alpha": self.alpha,
            "confidence": CONFIDENCE,
            "bootstrap": "paired percentile bootstrap: items resampled within tasks, the same items for both models",
            "correction": f"Holm (statsmodels multipletests, method='holm') over the {self.tests_run} p-values of "
            "the table",
            "models": [asdict(m) for m in self.models],
            "comparisons": [{k: row[k] for k in FRAME_COLUMNS} for row in self.rows],
            "items": [m.as_dict() for m in self.items],
            "tests": dict(TESTS),
        }

    @property
    def tests_run(self) -> int:
        """Number of p-values the Holm correction was taken over."""
        return sum(row["p_value"] is not None for row in self.rows)
