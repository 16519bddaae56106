"""Bootstrap helpers, Cohen's and Fleiss' kappa, Krippendorff's alpha, judge-human and inter-annotator measures.

The measures are stated in the :mod:`airbench_nb.analysis.agreement` docstring.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, fleiss_kappa

from airbench_nb.analysis.agreement.constants import (
    BOOTSTRAP,
    CHAT_LABELS,
    COHEN,
    CONFIDENCE,
    EXCLUDED,
    FLEISS,
    KINDS,
    KRIPPENDORFF,
    PAIRWISE,
    REPS,
    SUFFIX,
    UNCLEAR,
)
from airbench_nb.analysis.agreement.judges import majority_label, votes
from airbench_nb.analysis.stats import WILSON, plain, wilson
from airbench_nb.records import LETTERS


def _bootstrap(units: int, statistic: Callable[[np.ndarray], float], seed: int, reps: int) -> tuple[Any, Any, int]:
    """Percentile 95% interval of ``statistic(indices)`` over resampled units; ``(None, None, 0)`` under 2 units.

    Resamples where the statistic is undefined (NaN) are left out; their number is the third value.
    """
    if units < 2:
        return None, None, 0
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.bootstrap(
            (np.arange(units),),
            statistic,
            vectorized=False,
            n_resamples=reps,
            confidence_level=CONFIDENCE,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    values = np.asarray(result.bootstrap_distribution, dtype=float)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None, None, int(values.size)
    alpha = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(finite, [alpha, 100 - alpha])
    return plain(low), plain(high), int(values.size - finite.size)


def _share(agree: np.ndarray, total: np.ndarray, seed: int, reps: int, prefix: str = "") -> dict[str, Any]:
    """A share of per-unit counts: ``sum(agree) / sum(total)`` with Wilson (one per unit) or a cluster bootstrap."""
    keep = total > 0
    agree, total = agree[keep], total[keep]
    n, hits = int(total.sum()), int(agree.sum())
    out: dict[str, Any] = {f"n{prefix}": n, f"agree{prefix}": hits}
    if n == 0:
        none = {f"{key}{prefix}": None for key in ("agreement", "ci_low", "ci_high", "ci_method")}
        return {**out, **none}
    if len(total) == n:
        low, high = wilson(hits, n)
        method = WILSON
    else:
        low, high, _ = _bootstrap(len(total), lambda i: agree[i].sum() / total[i].sum(), seed, reps)
        method = BOOTSTRAP
    return {
        **out,
        f"agreement{prefix}": hits / n,
        f"ci_low{prefix}": plain(low),
        f"ci_high{prefix}": plain(high),
        f"ci_method{prefix}": method,
    }


def _vote_share(frame: pd.DataFrame, seed: int, reps: int, prefix: str = "") -> dict[str, Any]:
    """Share of agreeing votes; units are pairs."""
    if frame.empty:
        return _share(np.zeros(0), np.zeros(0), seed, reps, prefix)
    grouped = frame.groupby("pair_id", sort=True)["agree"].agg(["sum", "count"])
    return _share(grouped["sum"].to_numpy(float), grouped["count"].to_numpy(float), seed, reps, prefix)


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Cohen's kappa of two label sequences (sklearn); None when undefined (one label throughout) or empty."""
    if len(first) == 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(list(first), list(second))
    return plain(value)


def _judge_measures(
    judged: pd.DataFrame, labelled: pd.DataFrame, kind: str, seed: int, reps: int, detailed: bool
) -> dict[str, Any]:
    """One judge on one kind (or one category): headline, secondary measure, kappa, majority, categories."""
    excluded, suffix = EXCLUDED[kind], SUFFIX[kind]
    out = _vote_share(judged, seed, reps)
    out["pairs"] = int(judged["pair_id"].nunique())
    clear = judged[(judged["judge_label"] != excluded) & (judged["human_label"] != excluded)]
    out.update(_vote_share(clear, seed, reps, suffix))
    out[f"judge_{excluded}"] = int((judged["judge_label"] == excluded).sum())
    out[f"human_{excluded}"] = int((judged["human_label"] == excluded).sum())
    out["missing"] = int(labelled["pair_id"].nunique() - out["pairs"])
    if not detailed:
        return out
    out["kappa"] = cohen_kappa(judged["judge_label"].tolist(), judged["human_label"].tolist())
    out["kappa_method"] = COHEN
    # majority: one unit per pair
    per_pair = judged.groupby("pair_id", sort=True).agg(
        judge_label=("judge_label", "first"), humans=("human_label", list)
    )
    majority = per_pair["humans"].map(majority_label)
    has = majority.notna()
    agree = (per_pair["judge_label"] == majority) & has
    both = has & (per_pair["judge_label"] != excluded) & (majority != excluded)
    block = _share(agree[has].to_numpy(float), np.ones(int(has.sum())), seed, reps)
    block.update(_share(agree[both].to_numpy(float), np.ones(int(both.sum())), seed, reps, suffix))
    block["no_majority"] = int((~has).sum())
    out["majority"] = block
    out["by_category"] = {
        str(category): _judge_measures(
            group, labelled[labelled["category"] == category], kind, seed, reps, detailed=False
        )
        for category, group in judged.groupby("category", sort=True)
    }
    return out


def judge_human(
    decisions: pd.DataFrame, labels: pd.DataFrame, seed: int = 0, reps: int = REPS
) -> dict[str, dict[str, dict[str, Any]]]:
    """Judge-human agreement per judge and kind (and category), as the module docstring says.

    Args:
        decisions: :func:`judge_decisions`.
        labels: :func:`resolve_labels`.
        seed: Bootstrap seed.
        reps: Bootstrap resamples.

    Returns:
        ``{judge: {kind: block}}`` for each kind the judge decided a labelled pair of. A block holds ``n`` (votes),
        ``agree``, ``pairs``, ``agreement``, ``ci_low``, ``ci_high``, ``ci_method``; the secondary measure with the
        kind's suffix (Chat ``n_no_ties``, ``agreement_no_ties``, ``ci_low_no_ties``, ``ci_high_no_ties``;
        Foundation ``..._clear``); ``judge_tie``/``human_tie`` (Chat) or ``judge_unclear``/``human_unclear``
        (Foundation) vote counts; ``missing`` (labelled pairs the judge did not decide); ``kappa`` (Cohen, judge vs
        human over the votes); ``majority`` (``n``, ``agreement``, ``ci_low``, ``ci_high``, the secondary measure,
        ``no_majority``); ``by_category`` (``{category: block}`` without kappa, majority and categories).
    """
    table = votes(decisions, labels)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (judge, kind), judged in table.groupby(["judge", "kind"], sort=True):
        labelled = labels[labels["kind"] == kind]
        out.setdefault(str(judge), {})[str(kind)] = _judge_measures(
            judged, labelled, str(kind), seed, reps, detailed=True
        )
    return out


def reliability_matrix(labels: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Labels of one kind as a pairs x annotators table (None where an annotator did not label a pair).

    Args:
        labels: :func:`resolve_labels`.
        kind: ``foundation`` or ``chat``.

    Returns:
        Index ``pair_id``, one column per annotator (sorted), object values.
    """
    rows = labels[labels["kind"] == kind]
    if rows.empty:
        return pd.DataFrame()
    matrix = rows.pivot(index="pair_id", columns="annotator", values="label").sort_index(axis=1)
    return matrix.astype(object).where(matrix.notna(), None)


def _codes(kind: str, values: Iterable[str]) -> list[str]:
    """The category set of a kind in display order (letters then unclear; model, reference, tie)."""
    order = [*LETTERS, UNCLEAR] if kind == "foundation" else list(CHAT_LABELS)
    present = set(values)
    return [c for c in order if c in present] + sorted(present - set(order))


def _pairwise(matrix: pd.DataFrame, excluded: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: agreeing annotator pairs and annotator pairs (leaving out labels equal to ``excluded``)."""
    agree, total = [], []
    for row in matrix.itertuples(index=False):
        given = [v for v in row if v is not None and v != excluded]
        counts = Counter(given)
        agree.append(sum(c * (c - 1) // 2 for c in counts.values()))
        total.append(len(given) * (len(given) - 1) // 2)
    return np.asarray(agree, float), np.asarray(total, float)


def _kappa_of(codes: np.ndarray, n_categories: int, two: bool) -> float:
    """Cohen's kappa (two columns) or Fleiss' kappa of integer codes; NaN when undefined.

    Cohen's is statsmodels' ``cohens_kappa`` on the contingency table: the same number as sklearn's (a test checks),
    15 times faster, which the bootstrap needs.
    """
    if two:
        table = np.bincount(codes[:, 0] * n_categories + codes[:, 1], minlength=n_categories**2)
        return float(cohens_kappa(table.reshape(n_categories, n_categories), return_results=False))
    counts, _ = aggregate_raters(codes, n_cat=n_categories)
    return float(fleiss_kappa(counts, method="fleiss"))


def _alpha_of(data: np.ndarray, n_categories: int) -> float:
    """Krippendorff's nominal alpha of a raters x units array (NaN missing); NaN when undefined."""
    try:
        return float(
            krippendorff.alpha(
                reliability_data=data, level_of_measurement="nominal", value_domain=list(range(n_categories))
            )
        )
    except ValueError:
        return math.nan


def _inter_measures(matrix: pd.DataFrame, kind: str, seed: int, reps: int) -> dict[str, Any]:
    """Inter-annotator statistics of one kind (or category) from its reliability matrix."""
    if not matrix.empty:
        matrix = matrix.loc[:, matrix.notna().any()]  # annotators with a label here
    annotators = [str(a) for a in matrix.columns]
    given = matrix.notna().sum(axis=1) if not matrix.empty else pd.Series(dtype=int)
    out: dict[str, Any] = {
        "annotators": annotators,
        "n_annotators": len(annotators),
        "pairs_labelled": int((given >= 1).sum()),
        "statistic": None,
        "cohen_kappa": None,
        "fleiss_kappa": None,
        "n": 0,
        "ci_low": None,
        "ci_high": None,
        "ci_method": BOOTSTRAP,
        "krippendorff_alpha": None,
        "n_alpha": 0,
        "alpha_ci_low": None,
        "alpha_ci_high": None,
        "alpha_method": KRIPPENDORFF,
        "complete": bool(len(annotators) and (given == len(annotators)).all()),
        "note": None,
        "reason": None,
    }
    if len(annotators) < 2:
        out["reason"] = f"{len(annotators)} annotator(s): inter-annotator agreement needs two"
        return out
    notes = []
    categories = _codes(kind, (v for v in matrix.to_numpy().ravel() if v is not None))
    index = {c: k for k, c in enumerate(categories)}
    complete = matrix[given == len(annotators)]
    two = len(annotators) == 2
    out["statistic"] = COHEN if two else FLEISS
    out["n"] = len(complete)
    if len(complete):
        codes = complete.map(index.get).to_numpy(int)
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            value = (
                cohen_kappa(complete.iloc[:, 0].tolist(), complete.iloc[:, 1].tolist())
                if two
                else plain(_kappa_of(codes, len(categories), two=False))
            )
        out["cohen_kappa" if two else "fleiss_kappa"] = value
        low, high, undefined = _bootstrap(len(codes), lambda i: _kappa_of(codes[i], len(categories), two), seed, reps)
        out["ci_low"], out["ci_high"] = low, high
        if value is None:
            notes.append("kappa undefined: one label throughout")
        if undefined:
            notes.append(f"kappa undefined in {undefined} of {reps} resamples (left out of its interval)")
    else:
        notes.append("no pair labelled by every annotator: no kappa")
    if not out["complete"]:
        notes.append(f"labels missing: kappa on the {len(complete)} pairs every annotator labelled; alpha on all")
    multi = matrix[given >= 2]
    out["n_alpha"] = len(multi)
    if len(multi):
        data = multi.map(lambda v: math.nan if v is None else float(index[v])).to_numpy(float).T
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out["krippendorff_alpha"] = plain(_alpha_of(data, len(categories)))
        low, high, undefined = _bootstrap(data.shape[1], lambda i: _alpha_of(data[:, i], len(categories)), seed, reps)
        out["alpha_ci_low"], out["alpha_ci_high"] = low, high
        if undefined:
            notes.append(f"alpha undefined in {undefined} of {reps} resamples (left out of its interval)")
    agree, total = _pairwise(multi, None)
    pairwise = _share(agree, total, seed, reps)
    out["pairwise_method"] = PAIRWISE
    out["n_comparisons"] = pairwise["n"]
    out["pairwise_agreement"] = pairwise["agreement"]
    out["pairwise_ci_low"], out["pairwise_ci_high"] = pairwise["ci_low"], pairwise["ci_high"]
    suffix = SUFFIX[kind]
    agree, total = _pairwise(multi, EXCLUDED[kind])
    secondary = _share(agree, total, seed, reps)
    out[f"n_comparisons{suffix}"] = secondary["n"]
    out[f"pairwise_agreement{suffix}"] = secondary["agreement"]
    out[f"pairwise_ci_low{suffix}"], out[f"pairwise_ci_high{suffix}"] = secondary["ci_low"], secondary["ci_high"]
    out["note"] = "; ".join(notes) or None
    return out


def inter_annotator(
    labels: pd.DataFrame, seed: int = 0, reps: int = REPS, categories: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Inter-annotator agreement per kind (and category), as the module docstring says.

    Args:
        labels: :func:`resolve_labels`.
        seed: Bootstrap seed.
        reps: Bootstrap resamples.
        categories: ``{pair_id: category}`` (default: read from ``labels``).

    Returns:
        ``{kind: block}`` for the kinds with labels. A block: ``annotators``, ``n_annotators``, ``pairs_labelled``;
        ``statistic`` (:data:`COHEN` or :data:`FLEISS`), ``cohen_kappa`` or ``fleiss_kappa`` (the other None),
        ``n`` (pairs every annotator labelled), ``ci_low``, ``ci_high``, ``ci_method``; ``krippendorff_alpha``,
        ``n_alpha`` (pairs with two or more labels), ``alpha_ci_low``, ``alpha_ci_high``; ``pairwise_agreement``,
        ``n_comparisons``, ``pairwise_ci_low``, ``pairwise_ci_high`` and the same with the kind's suffix
        (``_no_ties`` / ``_clear``); ``complete``, ``note``, ``reason`` (set when there is nothing to compute) and
        ``by_category`` (``{category: block}``).
    """
    if categories is None:
        categories = dict(zip(labels["pair_id"], labels["category"], strict=True))
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        matrix = reliability_matrix(labels, kind)
        if matrix.empty:
            continue
        block = _inter_measures(matrix, kind, seed, reps)
        category = matrix.index.map(lambda p: categories.get(p, "other"))
        block["by_category"] = {
            str(c): _inter_measures(matrix[category == c], kind, seed, reps) for c in sorted(set(category))
        }
        out[kind] = block
    return out
