"""UG-Bench style rankings: a rank per capability, the mean rank, and a weighted total on 0-100.

The capabilities are AIR-Bench's Foundation categories (``speech``, ``sound``, ``music``: accuracies in 0-1) and
``chat`` (the Chat average score, 1-10). For each capability the models that have a score are ranked with
:func:`scipy.stats.rankdata` on the negated score (1 = best; tied models share the mean of their ranks); a model
without a score there gets no rank there. ``mean_rank`` is the mean of a model's ranks.

The weighted total puts every capability on 0-100 before weighting: an accuracy is multiplied by 100, and a Chat
score is mapped linearly from its scale 1-10 onto 0-100 as ``(score - 1) / 9 * 100``. That map, not
``score * 10``, is used because 1 is the lowest score a judge can give: ``score * 10`` would hand every model at
least 10 points for merely answering, while the accuracies start at 0; with ``(score - 1) / 9`` the worst and best
possible Chat scores meet the ends of the accuracy scale. The weights (UG-Bench's 0.4 / 0.3 / 0.2 / 0.1 by default)
are renormalised over the capabilities the model has; a model missing a capability of positive weight is flagged
``partial``, since its total is not comparable term by term with a complete one.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from airbench_nb.analysis.stats import plain
from airbench_nb.analysis_report import RankingDetail, RankingRow

logger = logging.getLogger(__name__)

CAPABILITIES: tuple[str, ...] = ("speech", "sound", "music", "chat")
"""Capabilities ranked, in report order."""

DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType({"speech": 0.4, "sound": 0.3, "music": 0.2, "chat": 0.1})
"""UG-Bench's weights of the capabilities in the total."""

RANGES: Mapping[str, tuple[float, float]] = MappingProxyType(
    {"speech": (0.0, 1.0), "sound": (0.0, 1.0), "music": (0.0, 1.0), "chat": (1.0, 10.0)}
)
"""Valid range of each capability's score; the total maps each range linearly onto 0-100."""

SUMMARY_COLUMNS: Mapping[str, str] = MappingProxyType(
    {"speech": "foundation_speech", "sound": "foundation_sound", "music": "foundation_music", "chat": "chat_average"}
)
"""Column of the ``score_run_folder`` summary frame that holds each capability."""

RANK_METHOD = "scipy.stats.rankdata(-score, method='average')"
"""How ranks are computed (ties share the mean rank)."""


def validate_weights(weights: Mapping[str, float], capabilities: Sequence[str] = CAPABILITIES) -> dict[str, float]:
    """Check capability weights and return them as a plain dict (capabilities left out weigh 0).

    Args:
        weights: ``{capability: weight}``.
        capabilities: The capabilities a weight may name (default :data:`CAPABILITIES`; UG-Bench's ranking over
            every task passes its own, :data:`airbench_nb.analysis.ugbench.CAPABILITIES`).

    Returns:
        ``{capability: weight}`` for every capability of ``capabilities``, in that order.

    Raises:
        ValueError: On weights that are not a mapping, an unknown capability, a negative or non-finite weight, or
            weights that are all zero.
    """
    if not isinstance(weights, Mapping):
        raise ValueError(f"weights must be a mapping {{capability: weight}}, got {type(weights).__name__}")
    unknown = sorted(set(weights) - set(capabilities), key=str)
    if unknown:
        raise ValueError(f"unknown capabilities in weights: {unknown}; known: {', '.join(capabilities)}")
    out: dict[str, float] = {}
    for capability in capabilities:
        raw = weights.get(capability, 0.0)
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"weight of {capability!r} must be a number, got {raw!r}") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"weight of {capability!r} must be a finite number >= 0, got {raw!r}")
        out[capability] = value
    if not any(out.values()):
        raise ValueError("weights are all zero: give at least one capability a positive weight")
    return out


def parse_weights(text: str, capabilities: Sequence[str] = CAPABILITIES) -> dict[str, float]:
    """Parse ``"speech=0.4,sound=0.3,music=0.2,chat=0.1"`` into validated weights.

    Args:
        text: Comma-separated ``capability=weight`` pairs; capabilities left out weigh 0.
        capabilities: The capabilities a weight may name (as :func:`validate_weights`).

    Returns:
        The weights, as :func:`validate_weights` returns them.

    Raises:
        ValueError: On empty text, a pair without ``=``, a weight that is not a number, a capability named twice,
            or anything :func:`validate_weights` refuses.
    """
    pairs = [p.strip() for p in text.split(",") if p.strip()]
    if not pairs:
        example = ",".join(f"{c}=1" for c in capabilities)
        raise ValueError(f"no weights in {text!r}: write capability=weight pairs, e.g. '{example}'")
    weights: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise ValueError(f"bad weight {pair!r} in {text!r}: write capability=weight, e.g. {capabilities[0]}=0.4")
        if name in weights:
            raise ValueError(f"capability {name!r} given twice in {text!r}")
        try:
            weights[name] = float(value)
        except ValueError:
            raise ValueError(f"weight of {name!r} is not a number: {value!r}") from None
    return validate_weights(weights, capabilities)


def scaled(capability: str, score: float) -> float:
    """A capability score on 0-100: accuracy x 100, Chat ``(score - 1) / 9 x 100``."""
    low, high = RANGES[capability]
    return (score - low) / (high - low) * 100.0


@dataclass(frozen=True)
class Ranking:
    """Models sorted by weighted total (best first), with the weights used."""

    models: tuple[RankingRow, ...]
    """Ranked models, best total first (no total last; ties by mean rank, then name)."""
    weights: dict[str, float]
    """The validated weights (before renormalisation per model)."""
    chat_scale: str = "(score - 1) / 9 * 100"
    """How Chat scores are put on 0-100."""
    rank_method: str = RANK_METHOD
    """How ranks per capability are computed."""
    reason: str | None = None
    """Why the ranking is empty; None when it is not."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """Anything the reader should know (capabilities no model has, ...)."""

    def rows(self) -> list[RankingRow]:
        """The ranked models, best first: what ``analysis.json`` holds under ``ranking``."""
        return list(self.models)

    def detail(self, chat_judge: str | None = None, protocol: str | None = None) -> RankingDetail:
        """How the ranking was made (with the Chat judge and protocol it was read with): ``ranking_detail``."""
        return RankingDetail(
            weights=dict(self.weights),
            chat_scale=self.chat_scale,
            rank_method=self.rank_method,
            reason=self.reason,
            notes=list(self.notes),
            chat_judge=chat_judge,
            protocol=protocol,
        )

    def as_dict(self) -> dict[str, Any]:
        """``{"ranking": [model dicts], "weights", "chat_scale", "rank_method", "reason", "notes"}`` (a serializer)."""
        return {
            "ranking": [m.model_dump() for m in self.models],
            "weights": dict(self.weights),
            "chat_scale": self.chat_scale,
            "rank_method": self.rank_method,
            "reason": self.reason,
            "notes": list(self.notes),
        }


def _score_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Models x capabilities as floats (NaN for missing), the model name as index; ranges checked."""
    table = scores.set_index("model") if "model" in scores.columns else scores
    table = table.reindex(columns=list(CAPABILITIES)).apply(pd.to_numeric, errors="coerce").astype(float)
    table.index = [str(i) for i in table.index]
    if table.index.has_duplicates:
        raise ValueError(f"models named twice in scores: {sorted(set(table.index[table.index.duplicated()]))}")
    for capability, (low, high) in RANGES.items():
        values = table[capability].dropna()
        bad = values[(values < low) | (values > high)]
        if not bad.empty:
            raise ValueError(
                f"{capability} scores must lie in [{low:g}, {high:g}] "
                f"(accuracies as fractions, Chat on 1-10); out of range: {bad.to_dict()}"
            )
    return table


def ranking(scores: pd.DataFrame, weights: Mapping[str, float] = DEFAULT_WEIGHTS) -> Ranking:
    """Rank models per capability and by a weighted total (see the module docstring).

    Args:
        scores: One row per model (a ``model`` column, else the index names the model) and a column per
            capability of :data:`CAPABILITIES` (missing columns or NaN: the model lacks that capability).
        weights: ``{capability: weight}``; renormalised per model over the capabilities it has.

    Returns:
        The :class:`Ranking`; empty with a ``reason`` when no model has a score.

    Raises:
        ValueError: On bad weights, a model named twice, or a score outside its range.
    """
    clean = validate_weights(weights)
    if scores is None or scores.empty:
        return Ranking(models=(), weights=clean, reason="no model scores to rank")
    table = _score_table(scores)
    notes = tuple(f"no model has a {c} score" for c in CAPABILITIES if table[c].isna().all() and clean[c] > 0)
    ranks = pd.DataFrame(index=table.index, columns=list(CAPABILITIES), dtype=float)
    for capability in CAPABILITIES:
        present = table[capability].dropna()
        if not present.empty:
            ranks.loc[present.index, capability] = stats.rankdata(-present.to_numpy(), method="average")
    ranked: list[RankingRow] = []
    for model in table.index:
        have = [c for c in CAPABILITIES if not math.isnan(table.at[model, c])]
        weighted = [c for c in have if clean[c] > 0]
        total_weight = sum(clean[c] for c in weighted)
        score = sum(clean[c] * scaled(c, table.at[model, c]) for c in weighted) / total_weight if total_weight else None
        model_ranks = {c: float(ranks.at[model, c]) for c in have}
        ranked.append(
            RankingRow(
                model=model,
                ranks=model_ranks,
                scores={c: float(table.at[model, c]) for c in have},
                mean_rank=plain(np.mean(list(model_ranks.values()))) if model_ranks else None,
                score=plain(score),
                partial=any(clean[c] > 0 for c in CAPABILITIES if c not in have),
            )
        )
    ranked.sort(
        key=lambda r: (
            r.score is None,
            -(r.score or 0.0),
            math.inf if r.mean_rank is None else r.mean_rank,
            r.model,
        )
    )
    if all(r.score is None for r in ranked):
        return Ranking(
            models=tuple(ranked), weights=clean, reason="no model has a score of positive weight", notes=notes
        )
    logger.info("ranking of %d models: best %s (%.1f)", len(ranked), ranked[0].model, ranked[0].score)
    return Ranking(models=tuple(ranked), weights=clean, notes=notes)


def ranking_frame(result: Ranking) -> pd.DataFrame:
    """A tidy frame: one row per (model, capability) and one ``total`` row per model.

    Args:
        result: The output of :func:`ranking`.

    Returns:
        Columns ``position`` (place in the ranking, 1 = best), ``model``, ``capability`` (a capability or
        ``total``), ``value`` (raw score; the total for ``total``), ``scaled`` (0-100), ``rank`` (the rank per
        capability; the mean rank for ``total``), ``weight`` (before renormalisation; None for ``total``) and
        ``partial``.
    """
    columns = ["position", "model", "capability", "value", "scaled", "rank", "weight", "partial"]
    rows: list[dict[str, Any]] = []
    for position, entry in enumerate(result.models, start=1):
        for capability in CAPABILITIES:
            value = entry.scores.get(capability)
            rows.append(
                {
                    "position": position,
                    "model": entry.model,
                    "capability": capability,
                    "value": value,
                    "scaled": None if value is None else scaled(capability, value),
                    "rank": entry.ranks.get(capability),
                    "weight": result.weights[capability],
                    "partial": entry.partial,
                }
            )
        rows.append(
            {
                "position": position,
                "model": entry.model,
                "capability": "total",
                "value": entry.score,
                "scaled": entry.score,
                "rank": entry.mean_rank,
                "weight": None,
                "partial": entry.partial,
            }
        )
    return pd.DataFrame(rows, columns=columns)


def capability_scores(summary_frame: pd.DataFrame, protocol: str, chat_judge: str | None = None) -> pd.DataFrame:
    """The ``scores`` frame for :func:`ranking` from a ``score_run_folder`` summary frame.

    Args:
        summary_frame: The summary of :func:`airbench_nb.scoring.score_run_folder` (one row per model, Chat
            judge and protocol; columns ``model``, ``chat_judge``, ``protocol``, ``foundation_speech``, ...,
            ``chat_average``).
        protocol: ``official`` or ``strict``.
        chat_judge: The Chat judge whose scores to use, as the summary names it or as a spec (``proxy`` matches
            the proxy's label); None when each model has one Chat judge.

    Returns:
        One row per model (index ``model``), columns :data:`CAPABILITIES` (NaN where the summary has no score).
        Empty when the summary has no row of that protocol (and judge).

    Raises:
        ValueError: On an unknown protocol, or several Chat judges for one model and ``chat_judge`` None.
    """
    if protocol not in ("official", "strict"):
        raise ValueError(f"unknown protocol {protocol!r}: use 'official' or 'strict'")
    empty = pd.DataFrame(columns=list(CAPABILITIES), dtype=float).rename_axis("model")
    if summary_frame is None or summary_frame.empty:
        return empty
    rows = summary_frame[summary_frame["protocol"] == protocol]
    if chat_judge is not None:
        from airbench_nb.judge.registry import scores_only
        from airbench_nb.scoring import PROXY_SHORT

        names = {chat_judge, PROXY_SHORT} if scores_only(chat_judge) else {chat_judge}
        rows = rows[rows["chat_judge"].isin(names)]
    doubled = rows["model"][rows["model"].duplicated()].unique().tolist()
    if doubled:
        judges = sorted(rows["chat_judge"].astype(str).unique())
        raise ValueError(f"several Chat judges for {doubled} ({'; '.join(judges)}): pass chat_judge= to choose one")
    out = pd.DataFrame({"model": rows["model"].astype(str)})
    for capability, column in SUMMARY_COLUMNS.items():
        out[capability] = pd.to_numeric(rows[column], errors="coerce") if column in rows else np.nan
    return out.set_index("model").astype(float) if not out.empty else empty
