"""Boundaries and details that used to survive the whole suite as mutants, each against scipy/statsmodels.

Pins: cluster-t with C instead of C - 1 degrees of freedom; the [0, 1] clipping of t and cluster-t
intervals removed; the Monte Carlo sign-flip p-value without its +1 (a p of 0); the small-n Wilson
threshold (SMALL_N = 300) moved by one; the Boschloo boundary (400 tasks in all) flipped.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalharness.stats import compare, score, signflip_pvalue
from evalharness.stats.paired import BOSCHLOO_MAX_N
from evalharness.stats.summary import SMALL_N


def _cluster_fit(s: np.ndarray, groups) -> sm.regression.linear_model.RegressionResultsWrapper:
    return sm.OLS(s, np.ones(s.size)).fit(cov_type="cluster", cov_kwds={"groups": pd.factorize(np.asarray(groups))[0]},
                                          use_t=True)


def test_cluster_t_matches_statsmodels_with_c_minus_1_df(make_trials):
    counts = [3, 1, 2, 0, 3, 2, 1, 1, 3, 0, 2, 2, 1, 3, 0, 2, 1, 2, 3, 1]
    repo = None  # conftest: repo-{i % 5}, five clusters
    df = make_trials(counts, 3, repo=repo)
    s = score(df, cluster="repo")
    means = np.asarray(counts) / 3
    fit = _cluster_fit(means, [f"repo-{i % 5}" for i in range(len(counts))])
    lo, hi = fit.conf_int(alpha=0.05)[0]
    assert s.interval == "cluster-t" and s.n_clusters == 5 and s.df == 4
    assert s.se == pytest.approx(float(fit.bse[0]), rel=1e-10)
    assert 0 < lo and hi < 1  # not clipped: the degrees of freedom decide the bounds
    assert (s.ci_low, s.ci_high) == pytest.approx((lo, hi), rel=1e-10)
    wrong = stats.t.interval(0.95, 5, loc=means.mean(), scale=fit.bse[0])
    assert s.ci_low != pytest.approx(wrong[0], rel=1e-6)


def test_cluster_t_clipped_to_0_1(make_trials):
    counts = [0] * 9 + [3]
    df = make_trials(counts, 3)
    fit = _cluster_fit(np.asarray(counts) / 3, [f"repo-{i % 5}" for i in range(10)])
    lo, hi = fit.conf_int(alpha=0.05)[0]
    s = score(df, cluster="repo")
    assert lo < 0 and (s.ci_low, s.ci_high) == pytest.approx((0.0, hi), rel=1e-10)
    high = score(make_trials([3] * 9 + [0], 3), cluster="repo")
    assert high.ci_high == 1.0 and high.ci_low == pytest.approx(1 - hi, rel=1e-10)


def test_t_interval_clipped_to_0_1(make_trials):
    low = [0, 0, 0, 0, 1]  # three seeds: the t interval, not Wilson
    lo, hi = stats.ttest_1samp(np.asarray(low) / 3, 0).confidence_interval(0.95)
    s = score(make_trials(low, 3))
    assert s.interval == "t" and lo < 0 and (s.ci_low, s.ci_high) == pytest.approx((0.0, hi), rel=1e-12)
    high = score(make_trials([3, 3, 3, 3, 2], 3))
    assert high.interval == "t" and (high.ci_low, high.ci_high) == pytest.approx((1 - hi, 1.0), rel=1e-12)


def test_monte_carlo_signflip_pvalue_has_plus_one():
    d = np.random.default_rng(3).uniform(0.5, 1.0, 40)  # 40 positive non-lattice values: Monte Carlo
    p, how = signflip_pvalue(d, n_resamples=999, seed=1)
    assert how.startswith("monte carlo")
    assert p == pytest.approx(1 / 1000)  # no sign vector reaches |T| of all +, Phipson & Smyth 2010
    ref = stats.permutation_test((d[:12],), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
    assert ref == pytest.approx(2 / 2**12)


@pytest.mark.parametrize("n, interval", [(299, "wilson"), (300, "t")])
def test_small_n_threshold_for_wilson(make_trials, n, interval):
    assert SMALL_N == 300
    counts = (np.arange(n) % 3 == 0).astype(int)
    s = score(make_trials(counts, 1))
    x = int(counts.sum())
    if interval == "wilson":
        ref = proportion_confint(x, n, alpha=0.05, method="wilson")
    else:
        ref = stats.ttest_1samp(counts.astype(float), 0).confidence_interval(0.95)
    assert s.interval == interval and (s.ci_low, s.ci_high) == pytest.approx(tuple(ref), rel=1e-10)


@pytest.mark.parametrize("n, interval", [(299, "bonett-price"), (300, "t")])
def test_small_n_threshold_for_paired_interval(make_trials, n, interval):
    a = (np.arange(n) % 3 == 0).astype(int)
    b = (np.arange(n) % 4 == 0).astype(int)
    c = compare(make_trials(a, 1, model="a"), make_trials(b, 1, model="b"))
    assert c.interval == interval
    if interval == "t":
        ref = stats.ttest_rel(a.astype(float), b.astype(float)).confidence_interval(0.95)
        assert (c.ci_low, c.ci_high) == pytest.approx(tuple(ref), rel=1e-10)


def _disjoint(make_trials, n_a: int, n_b: int):
    """A runs tasks 0..n_a-1, B runs n_b tasks from n_a // 2 on: the task sets differ, so unpaired tests run."""
    a = make_trials((np.arange(n_a) % 2 == 0).astype(int), 1, model="a")
    b = make_trials((np.arange(n_b) % 3 == 0).astype(int), 1, model="b")
    shift = n_a // 2
    b["task_id"] = [f"task-{int(t.split('-')[1]) + shift:03d}" for t in b["task_id"]]
    return a, b


@pytest.mark.parametrize("n_b, method", [(200, "boschloo exact"), (201, "fisher exact")])
def test_boschloo_boundary(make_trials, n_b, method):
    """200 + 200 = 400 tasks in all (BOSCHLOO_MAX_N): Boschloo; 401: Fisher."""
    assert BOSCHLOO_MAX_N == 400
    a, b = _disjoint(make_trials, 200, n_b)
    c = compare(a, b)
    xa, xb = int(a["resolved"].sum()), int(b["resolved"].sum())
    table = [[xa, 200 - xa], [xb, n_b - xb]]
    ref = stats.boschloo_exact(table).pvalue if method == "boschloo exact" else stats.fisher_exact(table)[1]
    assert c.unpaired_method == method and c.p_unpaired == pytest.approx(ref, rel=1e-10)


def test_the_paired_interval_holds_its_estimate_when_every_pair_is_discordant_one_way():
    """Oracle against null on 8 tasks: D = +1 observed; the equal-tailed bound alone would stop at 0.996."""
    from evalharness.stats.intervals import paired_jeffreys_interval

    lo, hi = paired_jeffreys_interval(8, 0, 8)
    assert hi == 1.0 and 0.3 < lo < 0.6
    lo, hi = paired_jeffreys_interval(0, 8, 8)
    assert lo == -1.0 and -0.6 < hi < -0.3
    lo, hi = paired_jeffreys_interval(7, 0, 8)  # not at the edge: both bounds from the posterior
    assert lo < 7 / 8 < hi < 1.0
