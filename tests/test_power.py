"""The minimal detectable difference and the items a gap needs, against closed forms and a simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm, ttest_1samp

from airbench_nb.analysis.power import NOT_DISTINGUISHABLE, items_needed, paired_power, size_note

Z = norm.ppf(0.975) + norm.ppf(0.8)  # 2.80: the normal approximation's multiplier


def test_the_mde_of_independent_pairs_is_the_closed_form():
    rng = np.random.default_rng(0)
    d = rng.normal(0.02, 0.3, 400)
    result = paired_power(d)
    closed = Z * d.std(ddof=1) / math.sqrt(d.size)
    assert result.mde == pytest.approx(closed, rel=0.05) and result.design_effect == 1.0 and result.clusters == 400
    assert result.standard_error == pytest.approx(d.std(ddof=1) / 20)


def test_accuracy_pairs_are_differences_of_ones_and_zeros():
    a = np.array([1] * 70 + [0] * 30, float)
    b = np.array([1] * 60 + [0] * 40, float)
    np.random.default_rng(1).shuffle(b)
    result = paired_power(a - b)
    closed = Z * np.std(a - b, ddof=1) / 10
    assert result.mde == pytest.approx(closed, rel=0.05)


def test_clustered_pairs_widen_the_mde_by_the_design_effect():
    rng = np.random.default_rng(2)
    clusters, size, icc = 600, 5, 0.4
    d = np.repeat(rng.normal(0, math.sqrt(icc), clusters), size) + rng.normal(0, math.sqrt(1 - icc), clusters * size)
    keys = [f"c{k}" for k in np.repeat(np.arange(clusters), size)]
    result = paired_power(d, keys)
    assert result.clusters == clusters and result.design_effect == pytest.approx(1 + (size - 1) * icc, rel=0.2)
    closed = Z * d.std(ddof=1) * math.sqrt(result.design_effect / d.size)
    assert result.mde == pytest.approx(closed, rel=0.05)
    assert result.mde > 1.4 * paired_power(d).mde


def test_items_needed_is_the_closed_form_and_the_mde_has_80_percent_power():
    result = paired_power(np.random.default_rng(3).normal(0, 0.5, 300))
    gap = 0.05
    closed = (Z * result.sd / gap) ** 2
    assert items_needed(result, gap) == pytest.approx(closed, rel=0.05)
    assert items_needed(result, 0.0) is None
    # a true difference equal to the MDE is found by the paired t-test in about 80% of runs of this size
    rng = np.random.default_rng(4)
    found = sum(ttest_1samp(rng.normal(result.mde, result.sd, 300), 0.0).pvalue < 0.05 for _ in range(1000))
    assert found / 1000 == pytest.approx(0.8, abs=0.04)


def test_small_or_flat_comparisons_and_the_size_note():
    assert paired_power([0.5]).mde is None and paired_power([1.0, 1.0, 1.0]).mde is None
    with pytest.raises(ValueError, match="alpha and power"):
        paired_power([0.1, 0.2], alpha=1.5)
    assert size_note(0.01, 0.05, "no detectable difference") == NOT_DISTINGUISHABLE
    assert size_note(0.08, 0.05, "no detectable difference") is None
    assert size_note(0.01, 0.05, "A better") is None and size_note(0.01, None, "no detectable difference") is None


def test_a_gap_many_spreads_wide_needs_only_the_few_items_that_reach_the_power():
    from statsmodels.stats.power import TTestPower

    result = paired_power(np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]))  # sd 0.35; the solver finds no root
    for gap in (5.0, 100.0):
        n = items_needed(result, gap)
        assert n is not None and n >= 2
        assert TTestPower().power(effect_size=gap / result.sd, nobs=n, alpha=0.05) >= 0.8
        assert n == 2 or TTestPower().power(effect_size=gap / result.sd, nobs=n - 1, alpha=0.05) < 0.8
