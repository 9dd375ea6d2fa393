"""Published or hand-checkable answers, each also recomputed independently with scipy/statsmodels.

Pins the classic eval bug of treating seeds as independent trials: on the 20-task x 4-seed toy
data the naive i.i.d. SE (0.0533) understates the task-level SE (0.0839) by 1.57x.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.inter_rater import cohens_kappa, fleiss_kappa
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evalharness.stats import (
    adjust_pvalues,
    binomial_pmf,
    cohen_kappa,
    compare,
    cusum_arl,
    cusum_reference,
    fleiss,
    pass_at_k,
    pass_hat_k,
    score,
    tasks_needed,
    wilson_interval,
)

TOY_A = np.array([4, 4, 3, 4, 2, 0, 4, 1, 3, 4, 0, 2, 4, 3, 0, 4, 1, 4, 2, 3])
TOY_B = np.array([4, 3, 2, 4, 1, 0, 3, 0, 3, 2, 0, 1, 4, 2, 0, 3, 1, 4, 1, 2])
FLEISS_TABLE = np.array([  # 10 items x 5 categories, 14 raters each (the standard worked example)
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
])


def test_wilson_40_of_50():
    lo, hi = wilson_interval(40, 50, 0.95)
    assert lo == pytest.approx(0.669629, abs=1e-6) and hi == pytest.approx(0.887562, abs=1e-6)
    # independent closed form: (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)
    z, p, n = stats.norm.ppf(0.975), 0.8, 50
    centre, half = p + z**2 / (2 * n), z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    assert lo == pytest.approx((centre - half) / (1 + z**2 / n), abs=1e-12)
    assert hi == pytest.approx((centre + half) / (1 + z**2 / n), abs=1e-12)


def test_standard_error_of_the_mean_of_0_to_9(make_trials):
    values = np.arange(10) / 10  # task means 0, 0.1, ..., 0.9: ten seeds per task
    s = score(make_trials(np.arange(10), 10))
    assert s.resolve_rate == pytest.approx(0.45)
    assert s.se * 10 == pytest.approx(0.957427, abs=1e-6)  # SE of 0..9 is 10x that of 0..0.9
    assert s.se == pytest.approx(stats.sem(values), abs=1e-12)


def test_toy_task_level_se_and_t_interval(make_trials):
    s = score(make_trials(TOY_A, 4, model="a"))
    assert s.resolve_rate == pytest.approx(0.65)
    assert s.se == pytest.approx(0.08390, abs=1e-4)
    assert s.naive_se == pytest.approx(0.05333, abs=1e-4)
    assert (s.ci_low, s.ci_high) == pytest.approx((0.4744, 0.8256), abs=1e-4)
    assert s.interval == "t" and s.n_tasks == 20 and s.n_trials == 80 and s.n_seeds_min == s.n_seeds_max == 4
    means = TOY_A / 4
    lo, hi = stats.t.interval(0.95, 19, loc=means.mean(), scale=stats.sem(means))
    assert (s.ci_low, s.ci_high) == pytest.approx((lo, hi), abs=1e-12)
    assert s.se / s.naive_se == pytest.approx(1.57, abs=0.01)


def test_toy_paired_comparison(make_trials):
    c = compare(make_trials(TOY_A, 4, model="a"), make_trials(TOY_B, 4, model="b"))
    assert c.diff == pytest.approx(0.1500, abs=1e-4)
    assert c.se == pytest.approx(0.03344, abs=1e-4)
    assert c.t == pytest.approx(4.4853, abs=1e-4)
    assert c.p_t == pytest.approx(0.000254, abs=1e-6)
    assert (c.ci_low, c.ci_high) == pytest.approx((0.0800, 0.2200), abs=1e-4)
    assert c.p_signflip == pytest.approx(0.000977, abs=1e-6)
    ref = stats.ttest_rel(TOY_A / 4, TOY_B / 4)
    assert (c.t, c.p_t) == pytest.approx((ref.statistic, ref.pvalue), rel=1e-10)
    ci = ref.confidence_interval(0.95)
    assert (c.ci_low, c.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-10)
    d = (TOY_A - TOY_B) / 4
    nonzero = d[d != 0]  # a zero difference has the same value under either sign
    perm = stats.permutation_test((nonzero,), np.sum, permutation_type="samples", n_resamples=np.inf)
    assert c.p_signflip == pytest.approx(perm.pvalue, rel=1e-9)
    assert c.p_signflip == pytest.approx(2 / 2**11, rel=1e-12)  # all 11 nonzero differences positive


def test_mcnemar_exact():
    table = [[25, 12], [4, 9]]
    c = cohen_kappa(table)  # p_bias is the exact McNemar p of the off-diagonal cells
    assert c.p_bias == pytest.approx(0.076813, abs=1e-6)
    assert mcnemar(table, exact=True).pvalue == pytest.approx(0.076813, abs=1e-6)
    assert c.p_bias == pytest.approx(stats.binomtest(12, 16, 0.5).pvalue, abs=1e-12)


def test_mcnemar_in_compare(make_trials):
    # 50 tasks, one seed: both 25, A only 12, B only 4, neither 9
    a = np.r_[np.ones(25), np.ones(12), np.zeros(4), np.zeros(9)].astype(int)
    b = np.r_[np.ones(25), np.zeros(12), np.ones(4), np.zeros(9)].astype(int)
    c = compare(make_trials(a, 1, model="a"), make_trials(b, 1, model="b"))
    assert (c.mcnemar_b, c.mcnemar_c) == (12, 4)
    assert c.p_mcnemar == pytest.approx(0.076813, abs=1e-6)
    se = math.sqrt((12 + 4) - (12 - 4) ** 2 / 50) / 50
    assert c.mcnemar_ci_low == pytest.approx(8 / 50 - stats.norm.ppf(0.975) * se, abs=1e-12)


@pytest.mark.parametrize("k, expected", [(1, 1098.84), (4, 392.44), (16, 215.84)])
def test_tasks_needed(k, expected):
    n = tasks_needed(0.05, 0.05, 0.15, 0.15, k_a=k, k_b=k, alpha=0.05, power=0.8)
    assert n == pytest.approx(expected, abs=0.01)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert n == pytest.approx(z**2 * (0.05 + 0.3 / k) / 0.05**2, rel=1e-12)


def test_binomial_cusum_reference_and_arl():
    assert cusum_reference(0.58, 0.48, 50) == pytest.approx(26.5101, abs=1e-3)
    assert cusum_arl(11, binomial_pmf(50, 0.58), 26.5) == pytest.approx(384.3, abs=0.1)
    assert cusum_arl(11, binomial_pmf(50, 0.48), 26.5) == pytest.approx(5.0, abs=0.1)


def test_benjamini_hochberg():
    p = [0.001, 0.008, 0.039, 0.041, 0.042, 0.060, 0.074, 0.205, 0.212, 0.216]
    adj = adjust_pvalues(p, "fdr_bh")
    assert list(adj <= 0.05) == [True, True] + [False] * 8
    assert adj[2] == pytest.approx(0.084, abs=1e-12)
    reject, ref, _, _ = multipletests(p, alpha=0.05, method="fdr_bh")
    assert np.allclose(adj, ref) and list(reject) == list(adj <= 0.05)
    # step-up by hand: min over j >= i of p_(j) m / j
    m = len(p)
    by_hand = np.minimum.accumulate((np.array(p) * m / np.arange(1, m + 1))[::-1])[::-1]
    assert np.allclose(adj, by_hand)


def test_cohen_kappa():
    table = np.array([[178, 96], [163, 563]])
    k = cohen_kappa(table)
    assert k.kappa == pytest.approx(0.39505, abs=1e-4)
    assert (k.ci_low, k.ci_high) == pytest.approx((0.3346, 0.4555), abs=1e-4)
    n = table.sum()
    po, pe = np.trace(table) / n, (table.sum(0) * table.sum(1)).sum() / n**2
    assert k.kappa == pytest.approx((po - pe) / (1 - pe), abs=1e-12)
    ref = cohens_kappa(table)
    assert (k.ci_low, k.ci_high) == pytest.approx((ref.kappa_low, ref.kappa_upp), abs=1e-12)
    assert k.precision == pytest.approx(178 / 274) and k.recall == pytest.approx(178 / 341)


def test_fleiss_kappa_classic_table():
    assert fleiss(FLEISS_TABLE) == pytest.approx(0.20993, abs=1e-4)
    assert fleiss_kappa(FLEISS_TABLE) == pytest.approx(fleiss(FLEISS_TABLE))
    n_raters, n_items = 14, FLEISS_TABLE.shape[0]  # Fleiss (1971) formulas by hand
    p_j = FLEISS_TABLE.sum(0) / (n_items * n_raters)
    p_i = ((FLEISS_TABLE**2).sum(1) - n_raters) / (n_raters * (n_raters - 1))
    assert fleiss(FLEISS_TABLE) == pytest.approx((p_i.mean() - (p_j**2).sum()) / (1 - (p_j**2).sum()), abs=1e-12)


def test_pass_at_k_and_pass_hat_k():
    assert pass_at_k(10, 3, 5) == pytest.approx(0.916667, abs=1e-6)
    assert pass_hat_k(10, 3, 2) == pytest.approx(0.066667, abs=1e-6)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - math.comb(7, 5) / math.comb(10, 5), abs=1e-15)
    assert pass_hat_k(10, 3, 2) == pytest.approx(math.comb(3, 2) / math.comb(10, 2), abs=1e-15)


def test_cluster_robust_se_equals_statsmodels(make_trials):
    s = score(make_trials(TOY_A, 4, model="a"), cluster="repo")
    y = TOY_A / 4
    groups = np.arange(20) % 5
    fit = sm.OLS(y, np.ones(20)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert s.se == pytest.approx(float(fit.bse[0]), rel=1e-10)
    assert s.df == 4 and s.n_clusters == 5 and s.interval == "cluster-t"


def test_clopper_pearson_equals_statsmodels(make_trials):
    s = score(make_trials([1] * 17 + [0] * 13, 1), method="clopper-pearson")
    lo, hi = proportion_confint(17, 30, alpha=0.05, method="beta")
    assert (s.ci_low, s.ci_high) == pytest.approx((lo, hi), abs=1e-12)
