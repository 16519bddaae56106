"""The text-only proxy of calibration: accuracy of confidently worded against hedged tier A answers (tiered benchmark).

A model that gives no probabilities (an API without logprobs, a model asked to reason first) still says how sure it
is in words. The tiered sound-source benchmark labels each tier A answer *confident* or *hedged*: a ``strategy:``
judge's label where one labelled the answer (:class:`~airbench_nb.records.ReasoningLabel`), else the kit's lexicon
(:func:`airbench_nb.analysis.tiered.confidence_label`: an answer with a hedge of
:data:`~airbench_nb.analysis.tiered.CONFIDENCE_LEXICON` is hedged, any other is confident). Per system this module
reports the share of answers hedged, the accuracy of the confident and of the hedged answers, and their difference
(confident - hedged), each with a 95% percentile bootstrap interval over the answers (resampled ``reps`` times,
seeded; a tiered item is one clip, so an answer is its own cluster). Baselines are left out (:data:`BASELINE_PREFIX`).

It is a **proxy**, labelled as such wherever it appears (:data:`PROXY_LABEL`): two wording classes are not a
probability; there is no ECE to compute from them, only whether hedging goes with being wrong. A model calibrated in
this weak sense is more accurate when it sounds confident (a positive difference); the benchmark's finding that
92-100% of wrong answers are stated confidently is the opposite case.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from airbench_nb.analysis.report import RunAnalysis

logger = logging.getLogger(__name__)

PROXY_LABEL = "text-only proxy (confident/hedged wording), not a probability"
"""How the proxy is named wherever it is shown."""
BASELINE_PREFIX = "baseline:"
"""Systems left out of the proxy: a baseline answers in a fixed form (a letter, an option's text), never in words of
its own, so its wording says nothing about how sure it is."""


class ProxyRow(BaseModel):
    """One system's confident/hedged answers (tier A of the tiered benchmark): a text-only proxy, not a probability."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    system: str
    """The system (a model on tier A)."""
    labels: str
    """Where the labels came from: ``strategy judge <name>``, ``lexicon <version>``, or both."""
    n: int
    """Answers with text and a verdict."""
    confident: int
    """Answers worded confidently."""
    hedged: int
    """Answers hedged."""
    hedged_share: float | None
    """``hedged / n``."""
    hedged_share_ci: list[float | None]
    """Its 95% interval."""
    accuracy_confident: float | None
    """Accuracy of the confident answers (None without any)."""
    accuracy_confident_ci: list[float | None]
    """Its 95% interval."""
    accuracy_hedged: float | None
    """Accuracy of the hedged answers (None without any)."""
    accuracy_hedged_ci: list[float | None]
    """Its 95% interval."""
    difference: float | None
    """``accuracy_confident - accuracy_hedged`` (None when either is missing)."""
    difference_ci: list[float | None]
    """Its 95% interval."""


def proxy_labels(answers: pd.DataFrame) -> pd.DataFrame:
    """Tier A answers with text and a verdict (baselines left out), labelled: ``system, correct, hedged, source``.

    Args:
        answers: :attr:`airbench_nb.analysis.tiered_run.TieredRun.answers` (``system, tier, correct, response``, and
            ``confidence, strategy_judge`` where a judge labelled the answer).
    """
    from airbench_nb.analysis.tiered import CONFIDENCE_LEXICON, confidence_label

    columns = ["system", "correct", "hedged", "source"]
    if answers.empty or not {"tier", "correct", "response", "system"} <= set(answers.columns):
        return pd.DataFrame(columns=columns)
    rows = []
    tier_a = answers[(answers["tier"] == "A") & answers["correct"].notna()]
    tier_a = tier_a[~tier_a["system"].astype(str).str.startswith(BASELINE_PREFIX)]
    for record in tier_a.to_dict("records"):
        judged = record.get("confidence")
        if isinstance(judged, str) and judged in ("confident", "hedged"):
            hedged, source = judged == "hedged", f"strategy judge {record.get('strategy_judge') or ''}".strip()
        else:
            label = confidence_label(record.get("response"))
            if label is None:
                continue
            hedged, source = label == "hedged", f"lexicon {CONFIDENCE_LEXICON.version}"
        correct = bool(record["correct"])
        rows.append({"system": record["system"], "correct": correct, "hedged": hedged, "source": source})
    return pd.DataFrame(rows, columns=columns)


def _interval(values: np.ndarray) -> list[float | None]:
    finite = values[np.isfinite(values)]
    if not finite.size:
        return [None, None]
    return [float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5))]


def proxy_row(system: str, labelled: pd.DataFrame, *, reps: int, seed: int) -> ProxyRow:
    """One system's row from its labelled answers (:func:`proxy_labels`), with bootstrap intervals."""
    from airbench_nb.scoring.resample import weight_rows

    y = labelled["correct"].to_numpy(dtype=float)
    h = labelled["hedged"].to_numpy(dtype=float)
    c = 1.0 - h
    n = len(y)

    def stats(w: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            share = (w @ h) / w.sum(axis=1)
            acc_c = (w @ (y * c)) / (w @ c)
            acc_h = (w @ (y * h)) / (w @ h)
        return np.column_stack([share, acc_c, acc_h, acc_c - acc_h])

    point = stats(np.ones((1, n)))[0]
    rng = np.random.default_rng([seed, n])
    rows = [stats(w) for w in weight_rows(n, reps, rng)]
    reps_stats = np.concatenate(rows) if rows else np.zeros((0, 4))
    values = [float(v) if math.isfinite(v) else None for v in point]
    intervals = [_interval(reps_stats[:, k]) if values[k] is not None else [None, None] for k in range(4)]
    return ProxyRow(
        system=system,
        labels=", ".join(sorted(set(labelled["source"]))),
        n=n,
        confident=int(c.sum()),
        hedged=int(h.sum()),
        hedged_share=values[0],
        hedged_share_ci=intervals[0],
        accuracy_confident=values[1],
        accuracy_confident_ci=intervals[1],
        accuracy_hedged=values[2],
        accuracy_hedged_ci=intervals[2],
        difference=values[3],
        difference_ci=intervals[3],
    )


def proxy_rows(answers: pd.DataFrame, *, reps: int, seed: int) -> list[ProxyRow]:
    """Per system (sorted), its row: the proxy over tier A answers (:func:`proxy_labels`)."""
    labelled = proxy_labels(answers)
    return [
        proxy_row(str(system), rows, reps=reps, seed=seed)
        for system, rows in labelled.groupby("system", sort=True)
        if len(rows)
    ]


def tiered_proxy(analysis: RunAnalysis, *, reps: int, seed: int) -> list[ProxyRow]:
    """The proxy of a run's tiered tier A answers; [] when the run has none."""
    result: Any = analysis.tiered_result()
    if result.empty or result.answers.empty:
        return []
    return proxy_rows(result.answers, reps=reps, seed=seed)


def proxy_frame(rows: list[ProxyRow]) -> pd.DataFrame:
    """A display table: one row per system, the proxy's name in the header."""
    return pd.DataFrame(
        [
            {
                "system": r.system,
                "n": r.n,
                "hedged share": r.hedged_share,
                "accuracy confident": r.accuracy_confident,
                "accuracy hedged": r.accuracy_hedged,
                "confident - hedged": r.difference,
                "diff low": r.difference_ci[0],
                "diff high": r.difference_ci[1],
                "labels": r.labels,
                "measure": PROXY_LABEL,
            }
            for r in rows
        ]
    )


__all__ = ["PROXY_LABEL", "ProxyRow", "proxy_frame", "proxy_labels", "proxy_row", "proxy_rows", "tiered_proxy"]
