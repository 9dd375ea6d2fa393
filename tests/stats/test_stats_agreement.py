"""Agreement statistics against independent formulas.

Pins: Krippendorff's alpha silently computed at the interval level (the package default) for
nominal or ordinal labels, and kappa reported without the raw agreement and bias it depends on.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalharness.stats import agreement_table, cohen_kappa, fleiss, krippendorff_alpha


def _weighted_kappa_by_hand(table, power):
    t = np.asarray(table, dtype=float)
    n = t.sum()
    i, j = np.indices(t.shape)
    w = np.abs(i - j) ** power
    expected = np.outer(t.sum(1), t.sum(0)) / n
    return 1 - (w * t).sum() / (w * expected).sum()


@pytest.mark.parametrize("weights, power", [("linear", 1), ("quadratic", 2)])
def test_weighted_kappa(weights, power):
    table = [[10, 3, 1, 0], [2, 12, 3, 1], [0, 2, 9, 2], [0, 1, 2, 6]]
    k = cohen_kappa(table, weights=weights)
    assert k.kappa == pytest.approx(_weighted_kappa_by_hand(table, power), abs=1e-10)
    assert k.ci_low < k.kappa < k.ci_high and k.weights == weights


def test_kappa_interval_level_and_undefined_case():
    k90 = cohen_kappa([[178, 96], [163, 563]], level=0.90)
    assert k90.ci_high - k90.ci_low == pytest.approx(2 * 1.644854 * k90.se, rel=1e-6)
    one_category = cohen_kappa([[10, 0], [0, 0]])
    assert math.isnan(one_category.kappa) and "undefined" in one_category.note


def _alpha_nominal_by_hand(data):
    """Krippendorff (2004) coincidence-matrix alpha, nominal metric, raters x items with NaN missing."""
    values = np.unique(data[np.isfinite(data)])
    o = np.zeros((values.size, values.size))
    for item in data.T:
        labels = item[np.isfinite(item)]
        m = labels.size
        if m < 2:
            continue
        for a in range(m):
            for b in range(m):
                if a != b:
                    o[np.searchsorted(values, labels[a]), np.searchsorted(values, labels[b])] += 1 / (m - 1)
    n_c = o.sum(1)
    n = n_c.sum()
    d_o = (o.sum() - np.trace(o)) / n
    d_e = (n**2 - (n_c**2).sum()) / (n * (n - 1))
    return 1 - d_o / d_e


def test_krippendorff_nominal_and_level_is_passed():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 40)
    data = np.array([np.where(rng.random(40) < 0.7, truth, rng.integers(0, 4, 40)) for _ in range(3)], dtype=float)
    data[0, :4] = np.nan
    data[2, 10:12] = np.nan
    res = krippendorff_alpha(data, level="nominal", n_boot=300, seed=1)
    assert res["alpha"] == pytest.approx(_alpha_nominal_by_hand(data), abs=1e-10)
    assert res["ci_low"] <= res["alpha"] <= res["ci_high"]
    assert krippendorff_alpha(data, level="nominal", n_boot=300, seed=1) == res
    ordinal = krippendorff_alpha(data, level="ordinal", n_boot=50)["alpha"]
    interval = krippendorff_alpha(data, level="interval", n_boot=50)["alpha"]
    assert ordinal != pytest.approx(res["alpha"]) and ordinal != pytest.approx(interval)
    with pytest.raises(ValueError, match="nominal"):
        krippendorff_alpha(data, level="categorical")


def test_fleiss_from_raw_ratings_equals_counts():
    ratings = np.array([[0, 0, 1], [1, 1, 1], [2, 2, 0], [0, 1, 2], [2, 2, 2]])
    counts = np.array([[(row == c).sum() for c in range(3)] for row in ratings])
    assert fleiss(ratings, ratings=True) == pytest.approx(fleiss(counts))


def test_agreement_table_and_bias():
    pipeline = ["flag", "flag", "ok", "ok", "flag", "ok", "flag"]
    human = ["flag", "ok", "ok", "ok", "flag", "flag", "ok"]
    table = agreement_table(pipeline, human, categories=["flag", "ok"])
    assert table.tolist() == [[2, 2], [1, 2]]
    k = cohen_kappa(table)
    assert k.raw_agreement == pytest.approx(4 / 7) and k.precision == pytest.approx(0.5)
    assert k.recall == pytest.approx(2 / 3) and k.p_bias == pytest.approx(1.0)


def test_below_the_minimum_n_there_is_no_kappa_nor_interval_only_too_few_labels():
    from evalharness.stats.agreement import MIN_AGREEMENT_N

    two = cohen_kappa([[1, 0], [0, 1]], min_n=MIN_AGREEMENT_N)  # was reported as 1.00 [1.00, 1.00]
    assert two.too_few and "too few labels" in two.note
    assert all(math.isnan(x) for x in (two.kappa, two.se, two.ci_low, two.ci_high))
    assert two.raw_agreement == 1.0 and two.n == 2  # the counts stay
    unguarded = cohen_kappa([[1, 0], [0, 1]])
    assert unguarded.kappa == 1.0 and unguarded.ci_low == unguarded.ci_high == 1.0  # what the rule prevents
    enough = cohen_kappa([[12, 4], [3, 11]], min_n=MIN_AGREEMENT_N)  # n = 30, the minimum itself
    assert not enough.too_few and enough.ci_low < enough.kappa < enough.ci_high
    alpha = krippendorff_alpha(np.array([[1, 0, 1], [1, 0, 0]], float), level="nominal", min_n=MIN_AGREEMENT_N)
    assert alpha["too_few"] and math.isnan(alpha["alpha"]) and alpha["n_items"] == 3


def test_the_minimum_n_is_where_a_moderate_kappas_interval_narrows_to_the_documented_width():
    """MIN_AGREEMENT_N is the smallest n at which kappa 0.5 (balanced classes) has a 95% half-width <= 0.31."""
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

    from evalharness.stats.agreement import MAX_HALF_WIDTH, MIN_AGREEMENT_N, kappa_half_width

    assert kappa_half_width(MIN_AGREEMENT_N) <= MAX_HALF_WIDTH < kappa_half_width(MIN_AGREEMENT_N - 1)
    # the helper is statsmodels' large-sample SE: at n = 32 the table [[12, 4], [4, 12]] has kappa 0.5
    assert kappa_half_width(32) == pytest.approx(1.959964 * sm_kappa(np.array([[12, 4], [4, 12]])).std_kappa)
    assert sm_kappa(np.array([[12, 4], [4, 12]])).kappa == pytest.approx(0.5)
